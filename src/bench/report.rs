//! Results of a bench run: latency summaries from HdrHistogram, the JSON
//! result file, the SVG percentile plot, and fractions of the machine's
//! limits. Pure code, no I/O besides writing the files asked for.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency a histogram records, microseconds (larger values are clamped).
pub const LATENCY_US_MAX: u64 = 600_000_000;

/// A histogram of latencies in microseconds, 3 significant digits.
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("constant bounds are valid")
}

/// Records `count` samples of `value_us`, clamped into the histogram's range.
pub fn record_latency(histogram: &mut Histogram<u64>, value_us: i64, count: u64) {
    let value = (value_us.max(1) as u64).min(LATENCY_US_MAX);
    // Cannot fail: the value is clamped into range.
    let _ = histogram.record_n(value, count);
}

/// Percentiles of one latency histogram, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Samples (records for end-to-end, requests for produce).
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p99_9_us: u64,
    /// 99.99th percentile.
    pub p99_99_us: u64,
    /// Largest.
    pub max_us: u64,
}

impl LatencySummary {
    /// Summary of `histogram`, or None when it is empty.
    pub fn of(histogram: &Histogram<u64>) -> Option<Self> {
        if histogram.is_empty() {
            return None;
        }
        Some(LatencySummary {
            count: histogram.len(),
            mean_us: histogram.mean(),
            p50_us: histogram.value_at_quantile(0.50),
            p99_us: histogram.value_at_quantile(0.99),
            p99_9_us: histogram.value_at_quantile(0.999),
            p99_99_us: histogram.value_at_quantile(0.9999),
            max_us: histogram.max(),
        })
    }
}

/// Throughput of one direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Records.
    pub messages: u64,
    /// Value bytes of those records.
    pub payload_bytes: u64,
    /// Record-batch bytes on the wire.
    pub wire_bytes: u64,
    /// Requests answered (produce) or fetches made (consume).
    pub requests: u64,
    /// Records per second.
    pub messages_per_sec: f64,
    /// Value megabytes (10^6) per second.
    pub payload_mb_per_sec: f64,
    /// Wire megabytes (10^6) per second.
    pub wire_mb_per_sec: f64,
}

impl Throughput {
    /// Rates over `elapsed_secs`.
    pub fn new(
        messages: u64,
        payload_bytes: u64,
        wire_bytes: u64,
        requests: u64,
        elapsed_secs: f64,
    ) -> Self {
        let per_sec = |v: u64| {
            if elapsed_secs > 0.0 {
                v as f64 / elapsed_secs
            } else {
                0.0
            }
        };
        Throughput {
            messages,
            payload_bytes,
            wire_bytes,
            requests,
            messages_per_sec: per_sec(messages),
            payload_mb_per_sec: per_sec(payload_bytes) / 1e6,
            wire_mb_per_sec: per_sec(wire_bytes) / 1e6,
        }
    }
}

/// The configuration a result was measured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Bootstrap address.
    pub bootstrap: String,
    /// Topic.
    pub topic: String,
    /// Partitions.
    pub partitions: u32,
    /// Producer connections.
    pub producers: u32,
    /// Consumer connections.
    pub consumers: u32,
    /// Value bytes per message.
    pub message_bytes: u32,
    /// Messages per batch.
    pub messages_per_batch: u32,
    /// 0, 1 or -1.
    pub acks: i16,
    /// Batch size asked for.
    pub batch_bytes: u32,
    /// Linger.
    pub linger_ms: u64,
    /// Codec.
    pub compression: String,
    /// Key choice.
    pub key_distribution: String,
    /// Produce requests in flight per connection.
    pub max_in_flight: u32,
    /// Total produce rate asked for, payload MB/s (0: unpaced).
    pub rate_mb_per_sec: f64,
    /// Duration asked for.
    pub duration_secs: Option<u64>,
    /// Count asked for.
    pub count: Option<u64>,
    /// Where consumers started.
    pub from: String,
    /// CPUs of the bench's workers.
    pub cpus: Vec<usize>,
}

/// The fraction of a measured ceiling a result reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitFraction {
    /// What is compared, e.g. "produce wire MB/s / loopback TCP MB/s".
    pub what: String,
    /// The result.
    pub value: f64,
    /// The ceiling.
    pub limit: f64,
    /// value / limit.
    pub fraction: f64,
}

/// One run's result, as written to `--json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Always "ringbroker bench".
    pub tool: String,
    /// produce, consume or end-to-end.
    pub mode: String,
    /// --label.
    pub label: String,
    /// Unix time the run started, ms.
    pub started_unix_ms: i64,
    /// Seconds from the first request to the last answer.
    pub elapsed_secs: f64,
    /// The flags.
    pub config: RunConfig,
    /// Producer side.
    pub produce: Option<Throughput>,
    /// Request sent -> response received.
    pub produce_latency_us: Option<LatencySummary>,
    /// Consumer side.
    pub consume: Option<Throughput>,
    /// Record timestamp -> consumed (end-to-end mode).
    pub end_to_end_latency_us: Option<LatencySummary>,
    /// Fractions of `ringbroker bench limits` ceilings (with --limits).
    pub limit_fractions: Vec<LimitFraction>,
    /// /proc/loadavg when the run ended (the machine may be shared).
    pub load_average: String,
    /// What could not be measured and why.
    pub notes: Vec<String>,
}

/// The machine's ceilings, as written by `ringbroker bench limits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitsResult {
    /// Always "ringbroker bench limits".
    pub tool: String,
    /// Unix time of the run, ms.
    pub started_unix_ms: i64,
    /// Machine facts.
    pub machine: MachineFacts,
    /// One TCP stream over loopback, MB/s (10^6).
    pub loopback_tcp_mb_per_sec: Option<f64>,
    /// The same stream sent from `loopback_uncached_source_bytes` of memory
    /// in turn (beyond the CPU caches: what serving from memory copies).
    #[serde(default)]
    pub loopback_tcp_uncached_mb_per_sec: Option<f64>,
    /// Bytes the uncached stream's writer cycles through.
    #[serde(default)]
    pub loopback_uncached_source_bytes: usize,
    /// Bytes per O_DIRECT write.
    pub odirect_write_bytes: usize,
    /// O_DIRECT appends, one write in flight, MB/s.
    pub odirect_write_qd1_mb_per_sec: Option<f64>,
    /// O_DIRECT appends, 32 writes in flight, MB/s.
    pub odirect_write_qd32_mb_per_sec: Option<f64>,
    /// The broker's writes in flight per partition (`--write-behind`) that
    /// `odirect_write_broker_depth_mb_per_sec` was measured with.
    #[serde(default)]
    pub odirect_write_broker_depth: u32,
    /// O_DIRECT appends with the broker's writes in flight, MB/s.
    #[serde(default)]
    pub odirect_write_broker_depth_mb_per_sec: Option<f64>,
    /// O_DIRECT writes into a preallocated file, one in flight, MB/s.
    pub odirect_prealloc_qd1_mb_per_sec: Option<f64>,
    /// O_DIRECT writes into a preallocated file, 32 in flight, MB/s.
    pub odirect_prealloc_qd32_mb_per_sec: Option<f64>,
    /// fdatasync after a 4 KiB overwrite of an allocated block.
    pub fdatasync_overwrite_us: Option<LatencySummary>,
    /// fdatasync after a 4 KiB append into a new block.
    pub fdatasync_append_us: Option<LatencySummary>,
    /// Files read at once by the `*_files_*` read measurements.
    #[serde(default)]
    pub read_files: usize,
    /// O_DIRECT 1 MiB reads of one uncached file, MB/s.
    #[serde(default)]
    pub odirect_read_1file_mb_per_sec: Option<f64>,
    /// O_DIRECT 1 MiB reads of `read_files` uncached files at once, MB/s.
    #[serde(default)]
    pub odirect_read_files_mb_per_sec: Option<f64>,
    /// Page-cache reads of one file none of whose pages was cached, MB/s.
    #[serde(default)]
    pub cold_buffered_read_1file_mb_per_sec: Option<f64>,
    /// Page-cache reads of `read_files` uncached files at once, MB/s.
    #[serde(default)]
    pub cold_buffered_read_files_mb_per_sec: Option<f64>,
    /// Buffered writes (through the page cache) of `odirect_write_bytes`
    /// each, appending to a file, with an fdatasync after every MiB, MB/s:
    /// what a durable produce (acks=all) is measured against.
    #[serde(default)]
    pub buffered_sync_every_mib_mb_per_sec: Option<f64>,
    /// What could not be measured and why.
    pub notes: Vec<String>,
}

/// Facts about the machine a number came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MachineFacts {
    /// CPU model name.
    pub cpu_model: String,
    /// CPUs this process may use.
    pub cpus_allowed: usize,
    /// `uname -r`.
    pub kernel: String,
    /// RLIMIT_MEMLOCK soft limit, KiB (None: unlimited).
    pub memlock_kib: Option<u64>,
    /// Block device and file system of the measured directory, when known.
    pub disk: String,
    /// /proc/loadavg.
    pub load_average: String,
}

impl MachineFacts {
    /// Reads the facts from /proc and the process's limits; `dir` is where
    /// disk measurements ran.
    pub fn gather(dir: &Path) -> Self {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let memlock_kib =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_MEMLOCK)
                .ok()
                .and_then(|(soft, _)| {
                    (soft != nix::sys::resource::RLIM_INFINITY).then_some(soft / 1024)
                });
        MachineFacts {
            cpu_model,
            cpus_allowed: super::args::allowed_cpus().len(),
            kernel,
            memlock_kib,
            disk: disk_of(dir),
            load_average: load_average(),
        }
    }
}

/// /proc/loadavg, trimmed.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// "device fstype (mount point)" of the file system holding `dir`, from /proc/self/mounts.
fn disk_of(dir: &Path) -> String {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return "unknown".into();
    };
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return "unknown".into();
    };
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let device = fields.next()?;
            let mount_point = fields.next()?;
            let fs_type = fields.next()?;
            dir.starts_with(mount_point).then(|| {
                (
                    mount_point.len(),
                    format!("{device} {fs_type} ({mount_point})"),
                )
            })
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, s)| s)
        .unwrap_or_else(|| "unknown".into())
}

/// Fractions of the ceilings in `limits` that `result` reached.
pub fn limit_fractions(result: &BenchResult, limits: &LimitsResult) -> Vec<LimitFraction> {
    let mut fractions = Vec::new();
    let mut push = |what: &str, value: f64, limit: Option<f64>| {
        if let Some(limit) = limit.filter(|l| *l > 0.0) {
            fractions.push(LimitFraction {
                what: what.into(),
                value,
                limit,
                fraction: value / limit,
            });
        }
    };
    if let Some(produce) = &result.produce {
        push(
            "produce wire MB/s / loopback TCP MB/s",
            produce.wire_mb_per_sec,
            limits.loopback_tcp_mb_per_sec,
        );
        push(
            "produce wire MB/s / O_DIRECT append MB/s (32 in flight)",
            produce.wire_mb_per_sec,
            limits.odirect_write_qd32_mb_per_sec,
        );
        push(
            &format!(
                "produce wire MB/s / O_DIRECT append MB/s ({} in flight, the broker's --write-behind)",
                limits.odirect_write_broker_depth
            ),
            produce.wire_mb_per_sec,
            limits.odirect_write_broker_depth_mb_per_sec,
        );
        push(
            "produce wire MB/s / O_DIRECT preallocated write MB/s (32 in flight)",
            produce.wire_mb_per_sec,
            limits.odirect_prealloc_qd32_mb_per_sec,
        );
        if result.config.acks == -1 {
            push(
                "produce (acks=all) wire MB/s / buffered writes with an fdatasync every MiB MB/s",
                produce.wire_mb_per_sec,
                limits.buffered_sync_every_mib_mb_per_sec,
            );
        }
    }
    if let Some(consume) = &result.consume {
        push(
            "consume wire MB/s / loopback TCP MB/s",
            consume.wire_mb_per_sec,
            limits.loopback_tcp_mb_per_sec,
        );
        push(
            "consume wire MB/s / loopback TCP from memory beyond the CPU caches MB/s",
            consume.wire_mb_per_sec,
            limits.loopback_tcp_uncached_mb_per_sec,
        );
        // A consumer catching up reads what is no longer in memory: the
        // disk's read ceilings apply (not to a consumer at the tail).
        // One partition reads one file; more read several at once.
        if result.config.from == "earliest" && result.end_to_end_latency_us.is_none() {
            let (files, odirect, buffered) = if result.config.partitions <= 1 {
                (
                    "one file",
                    limits.odirect_read_1file_mb_per_sec,
                    limits.cold_buffered_read_1file_mb_per_sec,
                )
            } else {
                (
                    "several files at once",
                    limits.odirect_read_files_mb_per_sec,
                    limits.cold_buffered_read_files_mb_per_sec,
                )
            };
            push(
                &format!("catch-up wire MB/s / O_DIRECT read MB/s ({files})"),
                consume.wire_mb_per_sec,
                odirect,
            );
            push(
                &format!("catch-up wire MB/s / uncached page-cache read MB/s ({files})"),
                consume.wire_mb_per_sec,
                buffered,
            );
        }
    }
    if let (Some(latency), Some(sync)) = (&result.produce_latency_us, &limits.fdatasync_append_us) {
        if result.config.acks == -1 {
            push(
                "produce p99 us / fdatasync-after-append p99 us",
                latency.p99_us as f64,
                Some(sync.p99_us as f64),
            );
        }
    }
    fractions
}

/// The human-readable summary printed at the end of a run.
pub fn render_text(result: &BenchResult) -> String {
    let mut out = String::new();
    let c = &result.config;
    let _ = writeln!(
        out,
        "ringbroker bench {} {}: topic {} partitions {} producers {} consumers {} message {} B batch {} msgs acks {} compression {} cpus {:?}, {:.2} s",
        result.mode,
        result.label,
        c.topic,
        c.partitions,
        c.producers,
        c.consumers,
        c.message_bytes,
        c.messages_per_batch,
        if c.acks == -1 { "all".to_string() } else { c.acks.to_string() },
        c.compression,
        c.cpus,
        result.elapsed_secs
    );
    let throughput = |out: &mut String, name: &str, t: &Throughput| {
        let _ = writeln!(
            out,
            "  {name:<8} {:>12} msgs  {:>12.0} msgs/s  {:>9.1} MB/s payload  {:>9.1} MB/s wire  ({} requests)",
            t.messages, t.messages_per_sec, t.payload_mb_per_sec, t.wire_mb_per_sec, t.requests
        );
    };
    let latency = |out: &mut String, name: &str, l: &LatencySummary| {
        let _ = writeln!(
            out,
            "  {name:<8} latency us: p50 {} p99 {} p99.9 {} p99.99 {} max {} (mean {:.0}, {} samples)",
            l.p50_us, l.p99_us, l.p99_9_us, l.p99_99_us, l.max_us, l.mean_us, l.count
        );
    };
    if let Some(t) = &result.produce {
        throughput(&mut out, "produce", t);
    }
    if let Some(l) = &result.produce_latency_us {
        latency(&mut out, "produce", l);
    }
    if let Some(t) = &result.consume {
        throughput(&mut out, "consume", t);
    }
    if let Some(l) = &result.end_to_end_latency_us {
        latency(&mut out, "e2e", l);
    }
    for f in &result.limit_fractions {
        let _ = writeln!(
            out,
            "  {:.3} of limit: {} ({:.1} / {:.1})",
            f.fraction, f.what, f.value, f.limit
        );
    }
    for note in &result.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    let _ = writeln!(out, "  load average at the end: {}", result.load_average);
    out
}

/// Writes `value` as pretty JSON to `path`.
///
/// # Errors
/// Serialisation or I/O errors, naming the file.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

/// Reads a limits JSON file.
///
/// # Errors
/// I/O or parse errors, naming the file.
pub fn read_limits(path: &Path) -> anyhow::Result<LimitsResult> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a `ringbroker bench limits` result",
            path.display()
        )
    })
}

/// Percentile positions plotted, as "nines": x = log10(1 / (1 - q)).
const PLOT_NINES_MAX: f64 = 5.0;
const PLOT_STEPS: usize = 250;

/// One plotted series: a name and its histogram.
pub struct Series<'a> {
    /// Legend text.
    pub name: &'a str,
    /// Latencies in microseconds.
    pub histogram: &'a Histogram<u64>,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "Nice" axis maximum and step for values up to `max`.
fn axis_scale(max: f64) -> (f64, f64) {
    let max = max.max(1.0);
    let magnitude = 10f64.powf(max.log10().floor());
    for step_factor in [0.1, 0.2, 0.25, 0.5, 1.0, 2.0] {
        let step = magnitude * step_factor;
        let top = (max / step).ceil() * step;
        if top / step <= 10.0 {
            return (top, step);
        }
    }
    (magnitude * 10.0, magnitude)
}

/// An SVG plot of latency against percentile (HdrHistogram's percentile
/// distribution: the x axis stretches the tail, 90 % / 99 % / ... / 99.999 %).
pub fn render_svg(title: &str, series: &[Series<'_>]) -> String {
    const WIDTH: f64 = 900.0;
    const HEIGHT: f64 = 540.0;
    const LEFT: f64 = 90.0;
    const RIGHT: f64 = 30.0;
    const TOP: f64 = 50.0;
    const BOTTOM: f64 = 70.0;
    const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let max_value = series
        .iter()
        .filter(|s| !s.histogram.is_empty())
        .map(|s| s.histogram.max() as f64)
        .fold(0.0, f64::max);
    let (y_top, y_step) = axis_scale(max_value * 1.15);
    let x_of = |nines: f64| LEFT + nines / PLOT_NINES_MAX * plot_w;
    let y_of = |value: f64| TOP + plot_h - value / y_top * plot_h;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="16">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    // Grid and axis labels.
    let mut value = 0.0;
    while value <= y_top + y_step / 2.0 {
        let y = y_of(value);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            value
        );
        value += y_step;
    }
    for (nines, label) in [
        (0.0, "0%"),
        (1.0, "90%"),
        (2.0, "99%"),
        (3.0, "99.9%"),
        (4.0, "99.99%"),
        (5.0, "99.999%"),
    ] {
        let x = x_of(nines);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">percentile</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 22.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="20" y="{:.1}" text-anchor="middle" transform="rotate(-90 20 {:.1})">latency (microseconds)</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    let _ = writeln!(
        svg,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#
    );
    for (index, s) in series.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        if s.histogram.is_empty() {
            continue;
        }
        let mut points = String::new();
        for step in 0..=PLOT_STEPS {
            let nines = PLOT_NINES_MAX * step as f64 / PLOT_STEPS as f64;
            let quantile = 1.0 - 10f64.powf(-nines);
            let v = s.histogram.value_at_quantile(quantile) as f64;
            let _ = write!(points, "{:.1},{:.1} ", x_of(nines), y_of(v));
        }
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.trim_end()
        );
        let legend_y = TOP + 18.0 + 18.0 * index as f64;
        let summary = LatencySummary::of(s.histogram).expect("not empty");
        let _ = writeln!(
            svg,
            r#"<line x1="{:.1}" y1="{legend_y:.1}" x2="{:.1}" y2="{legend_y:.1}" stroke="{colour}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{} (p50 {} us, p99 {} us, max {} us)</text>"#,
            LEFT + 12.0,
            LEFT + 36.0,
            LEFT + 42.0,
            legend_y + 4.0,
            escape(s.name),
            summary.p50_us,
            summary.p99_us,
            summary.max_us
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = new_latency_histogram();
        for v in values {
            record_latency(&mut h, v as i64, 1);
        }
        h
    }

    #[test]
    fn summaries_give_hdr_percentiles() {
        let h = histogram(1..=10_000);
        let s = LatencySummary::of(&h).unwrap();
        assert_eq!(s.count, 10_000);
        // 3 significant digits: within 0.1 %.
        assert!((4995..=5005).contains(&s.p50_us), "{s:?}");
        assert!((9895..=9905).contains(&s.p99_us), "{s:?}");
        assert!((9985..=9995).contains(&s.p99_9_us), "{s:?}");
        assert!(s.max_us >= 10_000 && s.max_us <= 10_010);
        assert!((s.mean_us - 5000.5).abs() < 10.0);
        assert!(LatencySummary::of(&new_latency_histogram()).is_none());
    }

    #[test]
    fn out_of_range_samples_are_clamped_not_lost() {
        let mut h = new_latency_histogram();
        record_latency(&mut h, -5, 1);
        record_latency(&mut h, i64::MAX, 2);
        assert_eq!(h.len(), 3);
        assert_eq!(h.min(), 1);
        assert!(h.max() >= LATENCY_US_MAX);
    }

    #[test]
    fn throughput_rates() {
        let t = Throughput::new(1000, 1_000_000, 1_100_000, 10, 2.0);
        assert_eq!(t.messages_per_sec, 500.0);
        assert_eq!(t.payload_mb_per_sec, 0.5);
        assert_eq!(t.wire_mb_per_sec, 0.55);
        assert_eq!(Throughput::new(1, 1, 1, 1, 0.0).messages_per_sec, 0.0);
    }

    fn sample_result() -> BenchResult {
        let h = histogram([100, 200, 300]);
        BenchResult {
            tool: "ringbroker bench".into(),
            mode: "produce".into(),
            label: "x".into(),
            started_unix_ms: 1,
            elapsed_secs: 2.0,
            config: RunConfig {
                bootstrap: "127.0.0.1:9092".into(),
                topic: "t".into(),
                partitions: 1,
                producers: 1,
                consumers: 0,
                message_bytes: 1024,
                messages_per_batch: 15,
                acks: -1,
                batch_bytes: 16384,
                linger_ms: 0,
                compression: "none".into(),
                key_distribution: "none".into(),
                max_in_flight: 5,
                rate_mb_per_sec: 0.0,
                duration_secs: Some(2),
                count: None,
                from: "earliest".into(),
                cpus: vec![1],
            },
            produce: Some(Throughput::new(1000, 1_024_000, 1_100_000, 10, 2.0)),
            produce_latency_us: LatencySummary::of(&h),
            consume: None,
            end_to_end_latency_us: None,
            limit_fractions: Vec::new(),
            load_average: "0.1".into(),
            notes: vec![],
        }
    }

    #[test]
    fn json_has_the_documented_shape_and_round_trips() {
        let result = sample_result();
        let value = serde_json::to_value(&result).unwrap();
        for key in [
            "tool",
            "mode",
            "elapsed_secs",
            "config",
            "produce",
            "produce_latency_us",
            "consume",
            "end_to_end_latency_us",
            "limit_fractions",
            "load_average",
            "notes",
        ] {
            assert!(value.get(key).is_some(), "missing {key}");
        }
        assert_eq!(value["produce"]["messages_per_sec"], 500.0);
        assert_eq!(value["produce_latency_us"]["count"], 3);
        assert!(value["consume"].is_null());
        let back: BenchResult = serde_json::from_value(value).unwrap();
        assert_eq!(back, result);
    }

    #[test]
    fn fractions_use_the_limits_present() {
        let mut limits = LimitsResult {
            tool: "ringbroker bench limits".into(),
            started_unix_ms: 0,
            machine: MachineFacts::default(),
            loopback_tcp_mb_per_sec: Some(2.2),
            loopback_tcp_uncached_mb_per_sec: None,
            loopback_uncached_source_bytes: 0,
            odirect_write_bytes: 131072,
            odirect_write_qd1_mb_per_sec: None,
            odirect_write_qd32_mb_per_sec: Some(1.1),
            odirect_write_broker_depth: 4,
            odirect_write_broker_depth_mb_per_sec: None,
            odirect_prealloc_qd1_mb_per_sec: None,
            odirect_prealloc_qd32_mb_per_sec: None,
            fdatasync_overwrite_us: None,
            fdatasync_append_us: LatencySummary::of(&histogram([100, 150])),
            read_files: 4,
            odirect_read_1file_mb_per_sec: Some(3.0),
            odirect_read_files_mb_per_sec: Some(1.5),
            cold_buffered_read_1file_mb_per_sec: None,
            cold_buffered_read_files_mb_per_sec: None,
            buffered_sync_every_mib_mb_per_sec: None,
            notes: vec![],
        };
        let fractions = limit_fractions(&sample_result(), &limits);
        assert_eq!(fractions.len(), 3);
        assert!((fractions[0].fraction - 0.25).abs() < 1e-9);
        assert!((fractions[1].fraction - 0.5).abs() < 1e-9);
        assert!(fractions[2].what.contains("fdatasync"));
        // A durable (acks=all) produce is also compared with buffered
        // writes synced every MiB; an acks=1 one is not.
        limits.buffered_sync_every_mib_mb_per_sec = Some(0.275);
        let fractions = limit_fractions(&sample_result(), &limits);
        assert_eq!(fractions.len(), 4);
        assert!(fractions[2].what.contains("fdatasync every MiB"));
        assert!((fractions[2].fraction - 2.0).abs() < 1e-9);
        let mut acks_1 = sample_result();
        acks_1.config.acks = 1;
        assert!(limit_fractions(&acks_1, &limits)
            .iter()
            .all(|f| !f.what.contains("every MiB")));
        limits.buffered_sync_every_mib_mb_per_sec = None;
        limits.loopback_tcp_mb_per_sec = None;
        assert_eq!(limit_fractions(&sample_result(), &limits).len(), 2);
        // With the broker's own depth measured, a produce is compared with it.
        limits.odirect_write_broker_depth_mb_per_sec = Some(0.55);
        let fractions = limit_fractions(&sample_result(), &limits);
        assert_eq!(fractions.len(), 3);
        assert!(fractions[1]
            .what
            .contains("4 in flight, the broker's --write-behind"));
        assert!((fractions[1].fraction - 1.0).abs() < 1e-9);
        limits.odirect_write_broker_depth_mb_per_sec = None;
        // A consumer catching up is compared with the disk's read ceiling,
        // one at the tail (end-to-end) is not.
        let catch_up = BenchResult {
            produce: None,
            produce_latency_us: None,
            consume: Some(Throughput::new(1000, 1_000_000, 1_200_000, 10, 1.6)),
            ..sample_result()
        };
        let reads = limit_fractions(&catch_up, &limits);
        assert_eq!(reads.len(), 1, "{reads:?}");
        assert!(reads[0].what.contains("O_DIRECT read MB/s (one file)"));
        assert!((reads[0].fraction - 0.25).abs() < 1e-9);
        let mut sixteen = catch_up.clone();
        sixteen.config.partitions = 16;
        let reads = limit_fractions(&sixteen, &limits);
        assert!(reads[0].what.contains("several files"));
        assert!((reads[0].fraction - 0.5).abs() < 1e-9);
        let tail = BenchResult {
            end_to_end_latency_us: LatencySummary::of(&histogram([100, 150])),
            ..catch_up
        };
        assert!(limit_fractions(&tail, &limits).is_empty());
        // A consumer is also compared with a stream sent from memory beyond
        // the CPU caches, when that was measured.
        limits.loopback_tcp_uncached_mb_per_sec = Some(1.5);
        let against_memory = limit_fractions(&tail, &limits);
        assert_eq!(against_memory.len(), 1, "{against_memory:?}");
        assert!(against_memory[0].what.contains("beyond the CPU caches"));
        assert!((against_memory[0].fraction - 0.5).abs() < 1e-9);
        let text = render_text(&BenchResult {
            limit_fractions: fractions,
            ..sample_result()
        });
        assert!(text.contains("of limit"));
        assert!(text.contains("p99.99"));
    }

    #[test]
    fn svg_is_well_formed_with_one_line_per_series() {
        let a = histogram(1..=1000);
        let b = histogram((1..=1000).map(|v| v * 3));
        let empty = new_latency_histogram();
        let svg = render_svg(
            "produce <acks=all> & e2e",
            &[
                Series {
                    name: "produce",
                    histogram: &a,
                },
                Series {
                    name: "end-to-end",
                    histogram: &b,
                },
                Series {
                    name: "none",
                    histogram: &empty,
                },
            ],
        );
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("&lt;acks=all&gt; &amp; e2e"));
        assert!(svg.contains("99.999%"));
        // Every polyline has PLOT_STEPS + 1 points inside the plot.
        for line in svg.lines().filter(|l| l.starts_with("<polyline")) {
            let points = line
                .split("points=\"")
                .nth(1)
                .unwrap()
                .trim_end_matches("\"/>");
            assert_eq!(points.split(' ').count(), PLOT_STEPS + 1);
            for point in points.split(' ') {
                let (x, y) = point.split_once(',').unwrap();
                let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
                assert!((0.0..=900.0).contains(&x) && (0.0..=540.0).contains(&y));
            }
        }
    }

    #[test]
    fn axis_scales_are_round() {
        assert_eq!(axis_scale(950.0), (1000.0, 100.0));
        assert_eq!(axis_scale(0.0), (1.0, 0.1));
        let (top, step) = axis_scale(12_345.0);
        assert!(top >= 12_345.0 && top / step <= 10.0);
    }
}
