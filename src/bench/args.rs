//! Flags of `ringbroker bench` and their validation. Every flag is checked
//! here once, so the load generator itself never meets a bad value.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};

/// Largest message the bench builds (Kafka's default `message.max.bytes` is 1 MiB).
pub const MESSAGE_BYTES_MAX: usize = 1_000_000;
/// Largest batch the bench builds; Kafka's default `message.max.bytes` is 1,048,588.
pub const BATCH_BYTES_MAX: usize = 1_000_000;
/// Most produce requests one connection keeps in flight.
pub const MAX_IN_FLIGHT_MAX: usize = 64;
/// Most producer or consumer connections one run opens.
pub const CLIENTS_MAX: usize = 1024;
/// Most partitions a bench topic may have.
pub const PARTITIONS_MAX: u32 = 100_000;

/// `ringbroker bench`: a Kafka-protocol load generator and the machine's limits.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// Modes of `ringbroker bench`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Produce pre-encoded batches; latency is request sent -> response.
    Produce(Box<LoadArgs>),
    /// Consume from the start (or --from latest); throughput only.
    Consume(Box<LoadArgs>),
    /// Produce and consume at once; latency is the record's produce timestamp -> consumed.
    EndToEnd(Box<LoadArgs>),
    /// Measure the machine's ceilings: loopback TCP, O_DIRECT writes, fdatasync.
    Limits(LimitsArgs),
}

/// How record keys are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyDistribution {
    /// Null keys.
    None,
    /// 8-byte keys drawn uniformly from 0..--key-count.
    Uniform,
    /// 8-byte keys counting up from 0, wrapping at --key-count.
    Sequential,
}

/// Compression of the pre-encoded batches (kafka-protocol's codecs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// Uncompressed.
    None,
    /// gzip.
    Gzip,
    /// Snappy (xerial framing, as Kafka clients send it).
    Snappy,
    /// LZ4 frame.
    Lz4,
    /// zstd.
    Zstd,
}

/// Where consumers start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StartFrom {
    /// The log start: a consumer catching up.
    Earliest,
    /// The log end: a consumer at the tail.
    Latest,
}

/// Flags shared by produce, consume and end-to-end.
#[derive(Debug, Args, Clone)]
pub struct LoadArgs {
    /// A broker's host:port; the others are found through Metadata.
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub bootstrap: String,
    /// Topic to use; created with --partitions if it does not exist.
    #[arg(long, default_value = "ringbroker-bench")]
    pub topic: String,
    /// Producer connections (produce and end-to-end).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=CLIENTS_MAX as i64))]
    pub producers: u32,
    /// Consumer connections (consume and end-to-end); at most --partitions.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=CLIENTS_MAX as i64))]
    pub consumers: u32,
    /// Partitions of the topic (it is created with this many when missing).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=PARTITIONS_MAX as i64))]
    pub partitions: u32,
    /// Bytes of each message's value.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=MESSAGE_BYTES_MAX as i64))]
    pub message_bytes: u32,
    /// How record keys are chosen.
    #[arg(long, value_enum, default_value_t = KeyDistribution::None)]
    pub key_distribution: KeyDistribution,
    /// Distinct keys for --key-distribution uniform or sequential.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub key_count: u64,
    /// Acknowledgements: 0, 1 or all (-1 is the same as all).
    #[arg(long, default_value = "1", value_parser = parse_acks, allow_hyphen_values = true)]
    pub acks: i16,
    /// Target bytes of one record batch (whole messages; at least one message).
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(1..=BATCH_BYTES_MAX as i64))]
    pub batch_bytes: u32,
    /// Batches are pre-filled, so linger never waits for messages; with a
    /// value above 0 each connection sends at most one request per linger
    /// interval (a linger-bound client, lower load); 0 sends as fast as the
    /// in-flight window allows.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub linger_ms: u64,
    /// Produce at most this many payload MB/s (10^6 bytes) in total, spread
    /// evenly over the producer connections: an open-loop load for latency
    /// at a chosen fraction of peak. Requests leave on a schedule (also
    /// while earlier answers are awaited, within `--max-in-flight`), and each
    /// latency is counted from the request's scheduled time, so a broker
    /// that falls behind shows it instead of slowing the clock. 0: as fast
    /// as the in-flight window allows.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_mb_per_sec: f64,
    /// Compression of the pre-encoded batches.
    #[arg(long, value_enum, default_value_t = CompressionArg::None)]
    pub compression: CompressionArg,
    /// Produce requests in flight per connection.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=MAX_IN_FLIGHT_MAX as i64))]
    pub max_in_flight: u32,
    /// Largest produce request: a connection puts one batch per partition in a
    /// request until it reaches this size.
    #[arg(long, default_value_t = 1_048_576, value_parser = clap::value_parser!(u32).range(1024..=64 * 1024 * 1024))]
    pub request_bytes_max: u32,
    /// Run this long (default 10 s when --count is not given).
    #[arg(long, conflicts_with = "count", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub duration_secs: Option<u64>,
    /// Stop after this many messages (produce: rounded up to whole batches;
    /// consume: once the consumers together have read this many).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Where consumers start (end-to-end always starts at the tail).
    #[arg(long, value_enum, default_value_t = StartFrom::Earliest)]
    pub from: StartFrom,
    /// Bytes a fetch may return per partition.
    #[arg(long, default_value_t = 1_048_576, value_parser = clap::value_parser!(u32).range(1024..=64 * 1024 * 1024))]
    pub fetch_partition_max_bytes: u32,
    /// How long the broker may hold a fetch that found no data.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=30_000))]
    pub fetch_max_wait_ms: u32,
    /// Number of worker threads: the first N CPUs this process may use...
    #[arg(long, conflicts_with = "cpuset")]
    pub cores: Option<usize>,
    /// ...or the CPUs to run on, one pinned glommio executor each, e.g. "1".
    /// Default: the last allowed CPU, so a broker started with --cores 1 keeps CPU 0.
    #[arg(long)]
    pub cpuset: Option<String>,
    /// Write the result as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the latency percentile distribution as an SVG plot to this file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// A `ringbroker bench limits` JSON file: print results as fractions of its ceilings.
    #[arg(long)]
    pub limits: Option<PathBuf>,
    /// A label stored in the JSON (e.g. "ringbroker 1 shard acks=1").
    #[arg(long, default_value = "")]
    pub label: String,
    /// No progress bar or per-second line.
    #[arg(long)]
    pub quiet: bool,
    /// Seed of the key generator.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// Flags of `ringbroker bench limits`.
#[derive(Debug, Args, Clone)]
pub struct LimitsArgs {
    /// Directory for the disk measurements: put it on the broker's data disk.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Seconds per bandwidth measurement.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: u64,
    /// Bytes of one O_DIRECT write (the broker's --write-buffer-bytes).
    #[arg(long, default_value_t = 128 * 1024, value_parser = parse_write_bytes)]
    pub write_bytes: usize,
    /// O_DIRECT writes in flight of the broker's own measurement (its
    /// --write-behind); 1 and 32 are measured too.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub write_behind: u32,
    /// Size a scratch file grows to before a fresh one is started.
    #[arg(long, default_value_t = 256 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024 * 1024..=16 * 1024 * 1024 * 1024))]
    pub file_bytes: u64,
    /// fdatasync samples per case.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(10..=100_000))]
    pub sync_samples: u32,
    /// Number of CPUs to use: the first N allowed...
    #[arg(long, conflicts_with = "cpuset")]
    pub cores: Option<usize>,
    /// ...or these CPUs (the loopback test puts the reader on the second one).
    #[arg(long)]
    pub cpuset: Option<String>,
    /// Write the result as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && (0.0..=1e6).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "{text:?} is not a rate in MB/s between 0 and 1000000"
        )),
    }
}

fn parse_acks(value: &str) -> Result<i16, String> {
    match value {
        "0" => Ok(0),
        "1" => Ok(1),
        "all" | "-1" => Ok(-1),
        other => Err(format!("{other:?} is not one of 0, 1, all")),
    }
}

fn parse_write_bytes(value: &str) -> Result<usize, String> {
    let bytes: usize = value
        .parse()
        .map_err(|_| format!("{value:?} is not a number"))?;
    if !(4096..=64 << 20).contains(&bytes) || bytes % 4096 != 0 {
        return Err("must be a multiple of 4096 in 4 KiB..=64 MiB".into());
    }
    Ok(bytes)
}

/// Parses a CPU list such as "0-3,6".
///
/// # Errors
/// A message naming the bad part.
pub fn parse_cpuset(list: &str) -> anyhow::Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().with_context(|| format!("bad cpu {a:?}"))?;
            let b: usize = b.trim().parse().with_context(|| format!("bad cpu {b:?}"))?;
            if b < a {
                bail!("bad cpu range {part:?}");
            }
            cpus.extend(a..=b);
        } else {
            cpus.push(part.parse().with_context(|| format!("bad cpu {part:?}"))?);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        bail!("--cpuset {list:?} names no CPU");
    }
    Ok(cpus)
}

/// CPUs the calling thread may run on: the process's before any pinning,
/// a shard's own CPU on its pinned thread.
pub fn allowed_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count())
            .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// The CPUs chosen by --cores / --cpuset out of `available`; `default` when
/// neither is given.
///
/// # Errors
/// A CPU that is not allowed, or a count of 0 or above what is allowed.
pub fn choose_cpus(
    cores: Option<usize>,
    cpuset: Option<&str>,
    available: &[usize],
    default: impl FnOnce(&[usize]) -> Vec<usize>,
) -> anyhow::Result<Vec<usize>> {
    if available.is_empty() {
        bail!("this process may run on no CPU");
    }
    match (cpuset, cores) {
        (Some(list), _) => {
            let cpus = parse_cpuset(list)?;
            if let Some(bad) = cpus.iter().find(|c| !available.contains(c)) {
                bail!("--cpuset names CPU {bad}, which this process may not use (allowed: {available:?})");
            }
            Ok(cpus)
        }
        (None, Some(0)) => bail!("--cores must be at least 1"),
        (None, Some(n)) if n > available.len() => bail!(
            "--cores {n} exceeds the {} CPUs this process may use",
            available.len()
        ),
        (None, Some(n)) => Ok(available[..n].to_vec()),
        (None, None) => Ok(default(available)),
    }
}

/// Which of produce / consume a mode runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Producers only.
    Produce,
    /// Consumers only.
    Consume,
    /// Both; latency from the record's timestamp.
    EndToEnd,
}

impl Mode {
    /// The name used in output and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Produce => "produce",
            Mode::Consume => "consume",
            Mode::EndToEnd => "end-to-end",
        }
    }
    /// True when the mode runs producers.
    pub fn produces(self) -> bool {
        matches!(self, Mode::Produce | Mode::EndToEnd)
    }
    /// True when the mode runs consumers.
    pub fn consumes(self) -> bool {
        matches!(self, Mode::Consume | Mode::EndToEnd)
    }
}

/// A validated load configuration.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Mode.
    pub mode: Mode,
    /// The flags.
    pub args: LoadArgs,
    /// Messages in one batch.
    pub messages_per_batch: u32,
    /// CPUs of the workers.
    pub cpus: Vec<usize>,
    /// Run time when not counting.
    pub duration_secs: Option<u64>,
    /// Where consumers start.
    pub from: StartFrom,
}

impl LoadArgs {
    /// Checks the flags together and works out the plan.
    ///
    /// # Errors
    /// A message naming the flag that is wrong.
    pub fn plan(self, mode: Mode) -> anyhow::Result<LoadPlan> {
        self.plan_with_cpus(mode, &allowed_cpus())
    }

    /// [`LoadArgs::plan`] with the allowed CPUs given (for tests).
    ///
    /// # Errors
    /// A message naming the flag that is wrong.
    pub fn plan_with_cpus(self, mode: Mode, available: &[usize]) -> anyhow::Result<LoadPlan> {
        if self.topic.is_empty()
            || self.topic.len() > 249
            || !self
                .topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            bail!("--topic must be 1-249 characters of [a-zA-Z0-9._-]");
        }
        if self.bootstrap.rsplit_once(':').is_none() {
            bail!("--bootstrap {:?} is not host:port", self.bootstrap);
        }
        if mode.consumes() && self.consumers > self.partitions {
            bail!(
                "--consumers {} exceeds --partitions {}: each partition is read by one consumer",
                self.consumers,
                self.partitions
            );
        }
        if mode == Mode::EndToEnd && self.acks == 0 {
            bail!("end-to-end needs --acks 1 or all (acks=0 gives no way to know what was sent)");
        }
        let record_overhead = 32
            + if self.key_distribution == KeyDistribution::None {
                0
            } else {
                8
            };
        let per_message = self.message_bytes as usize + record_overhead;
        let messages_per_batch = (self.batch_bytes as usize / per_message).max(1);
        if messages_per_batch * per_message + 61 > BATCH_BYTES_MAX + 48_000 {
            bail!(
                "one message of --message-bytes {} does not fit a batch",
                self.message_bytes
            );
        }
        let cpus = choose_cpus(self.cores, self.cpuset.as_deref(), available, |all| {
            vec![*all.last().expect("not empty")]
        })?;
        let duration_secs = match (self.duration_secs, self.count) {
            (Some(d), _) => Some(d),
            (None, Some(_)) => None,
            (None, None) => Some(10),
        };
        let from = if mode == Mode::EndToEnd {
            StartFrom::Latest
        } else {
            self.from
        };
        Ok(LoadPlan {
            mode,
            messages_per_batch: messages_per_batch as u32,
            cpus,
            duration_secs,
            from,
            args: self,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(subcommand)]
        command: BenchCommand,
    }

    fn parse(args: &[&str]) -> Result<BenchCommand, clap::Error> {
        let mut all = vec!["bench"];
        all.extend_from_slice(args);
        Wrapper::try_parse_from(all).map(|w| w.command)
    }

    fn load(args: &[&str]) -> LoadArgs {
        match parse(args).expect("parses") {
            BenchCommand::Produce(a) | BenchCommand::Consume(a) | BenchCommand::EndToEnd(a) => *a,
            BenchCommand::Limits(_) => panic!("not a load command"),
        }
    }

    #[test]
    fn defaults_plan_one_worker_on_the_last_cpu() {
        let plan = load(&["produce"])
            .plan_with_cpus(Mode::Produce, &[0, 1])
            .unwrap();
        assert_eq!(plan.cpus, vec![1]);
        assert_eq!(plan.duration_secs, Some(10));
        assert_eq!(plan.args.acks, 1);
        // 16 KiB batches of 1 KiB messages with ~32 bytes of record framing.
        assert_eq!(plan.messages_per_batch, 15);
    }

    #[test]
    fn bad_values_are_refused_by_the_parser() {
        assert!(parse(&["produce", "--acks", "2"]).is_err());
        assert!(parse(&["produce", "--partitions", "0"]).is_err());
        assert!(parse(&["produce", "--message-bytes", "0"]).is_err());
        assert!(parse(&["produce", "--max-in-flight", "65"]).is_err());
        assert!(parse(&["produce", "--duration-secs", "3", "--count", "5"]).is_err());
        assert!(parse(&["produce", "--compression", "brotli"]).is_err());
        assert!(parse(&["produce", "--key-distribution", "zipf"]).is_err());
        assert!(parse(&["produce", "--cores", "1", "--cpuset", "0"]).is_err());
        assert!(parse(&["limits", "--write-bytes", "1000"]).is_err());
        assert_eq!(load(&["produce", "--acks", "all"]).acks, -1);
        assert_eq!(load(&["produce", "--acks", "-1"]).acks, -1);
        assert_eq!(load(&["produce", "--acks", "0"]).acks, 0);
    }

    #[test]
    fn plans_check_flags_together() {
        let err = |args: &[&str], mode| {
            load(args)
                .plan_with_cpus(mode, &[0, 1])
                .unwrap_err()
                .to_string()
        };
        assert!(err(
            &["consume", "--consumers", "3", "--partitions", "2"],
            Mode::Consume
        )
        .contains("--consumers"));
        assert!(err(&["end-to-end", "--acks", "0"], Mode::EndToEnd).contains("acks"));
        assert!(err(&["produce", "--topic", "a b"], Mode::Produce).contains("--topic"));
        assert!(err(&["produce", "--cpuset", "5"], Mode::Produce).contains("CPU 5"));
        assert!(err(&["produce", "--cores", "3"], Mode::Produce).contains("--cores 3"));
        assert!(err(&["produce", "--bootstrap", "nohost"], Mode::Produce).contains("host:port"));
        // Producers may outnumber partitions (they share them).
        assert!(load(&["produce", "--producers", "4"])
            .plan_with_cpus(Mode::Produce, &[0, 1])
            .is_ok());
        let plan = load(&["end-to-end", "--from", "earliest", "--count", "10"])
            .plan_with_cpus(Mode::EndToEnd, &[0, 1])
            .unwrap();
        assert_eq!(plan.from, StartFrom::Latest);
        assert_eq!(plan.duration_secs, None);
        let plan = load(&[
            "produce",
            "--message-bytes",
            "1000000",
            "--batch-bytes",
            "100",
        ])
        .plan_with_cpus(Mode::Produce, &[0, 1])
        .unwrap();
        assert_eq!(plan.messages_per_batch, 1);
        let plan = load(&["produce", "--cores", "2"])
            .plan_with_cpus(Mode::Produce, &[0, 1])
            .unwrap();
        assert_eq!(plan.cpus, vec![0, 1]);
    }

    #[test]
    fn cpusets_parse() {
        assert_eq!(parse_cpuset("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpuset("2-1").is_err());
        assert!(parse_cpuset("").is_err());
    }
}
