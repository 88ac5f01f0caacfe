//! `ringbroker bench`: a Kafka-protocol load generator in the broker's own
//! binary (produce, consume, end-to-end) and `bench limits`, the machine's
//! ceilings. The client speaks the protocol through kafka-protocol's types
//! and the project's record-batch builder, runs thread-per-core on pinned
//! glommio executors, and pre-encodes its requests so that what saturates
//! is the broker.
//!
//! Files: `args.rs` (flags, validation), `wire.rs` (frames, control-plane
//! calls), `batches.rs` (pre-encoded batches and requests), `load.rs` (the
//! producer and consumer tasks), `report.rs` (histogram summaries, JSON,
//! SVG), `limits.rs` (`bench limits`).

pub mod args;
pub mod batches;
pub mod limits;
pub mod load;
pub mod report;
pub mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use args::{BenchArgs, BenchCommand, LoadPlan, Mode};
use load::{run_load, ConnOutcome, Counters};
use report::{
    limit_fractions, load_average, read_limits, render_svg, render_text, write_json, BenchResult,
    LatencySummary, RunConfig, Series, Throughput,
};

/// Runs `ringbroker bench ...`.
///
/// # Errors
/// Bad flags, an unreachable broker, a failed connection (the message says
/// which), or files that cannot be written.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let (mode, load) = match args.command {
        BenchCommand::Limits(limits_args) => {
            let result = limits::run_limits(&limits_args)?;
            print!("{}", limits::render_limits(&result));
            if let Some(path) = &limits_args.json {
                write_json(path, &result)?;
                println!("limits written to {}", path.display());
            }
            return Ok(());
        }
        BenchCommand::Produce(a) => (Mode::Produce, a),
        BenchCommand::Consume(a) => (Mode::Consume, a),
        BenchCommand::EndToEnd(a) => (Mode::EndToEnd, a),
    };
    let plan = load.plan(mode)?;
    // Read the limits first so a bad file fails before the run, not after.
    let limits = plan.args.limits.as_deref().map(read_limits).transpose()?;
    let counters = Arc::new(Counters::default());
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let stop_progress = Arc::new(AtomicBool::new(false));
    let progress = (!plan.args.quiet).then(|| {
        let counters = counters.clone();
        let stop = stop_progress.clone();
        let goal = ProgressGoal::of(&plan);
        std::thread::spawn(move || progress_loop(goal, &counters, &stop))
    });
    let outcome = run_load(&plan, &counters);
    stop_progress.store(true, Ordering::SeqCst);
    if let Some(handle) = progress {
        let _ = handle.join();
    }
    let (outcome, elapsed) = outcome?;
    let mut result = assemble(&plan, &outcome, elapsed, started_unix_ms);
    if let Some(limits) = &limits {
        result.limit_fractions = limit_fractions(&result, limits);
    }
    print!("{}", render_text(&result));
    if let Some(path) = &plan.args.json {
        write_json(path, &result)?;
    }
    if let Some(path) = &plan.args.plot {
        let title = format!(
            "ringbroker bench {} {} ({} B messages, acks {}, {} partitions)",
            result.mode,
            result.label,
            plan.args.message_bytes,
            if plan.args.acks == -1 {
                "all".to_string()
            } else {
                plan.args.acks.to_string()
            },
            plan.args.partitions
        );
        let mut series = Vec::new();
        if !outcome.produce_latency.is_empty() {
            series.push(Series {
                name: "produce (request sent -> response)",
                histogram: &outcome.produce_latency,
            });
        }
        if !outcome.e2e_latency.is_empty() {
            series.push(Series {
                name: "end-to-end (record timestamp -> consumed)",
                histogram: &outcome.e2e_latency,
            });
        }
        std::fs::write(path, render_svg(&title, &series))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(error) = &outcome.error {
        anyhow::bail!("a connection failed: {error}");
    }
    Ok(())
}

fn assemble(
    plan: &LoadPlan,
    outcome: &ConnOutcome,
    elapsed: Duration,
    started_unix_ms: i64,
) -> BenchResult {
    let a = &plan.args;
    let secs = elapsed.as_secs_f64();
    let mut notes = Vec::new();
    if plan.mode.produces() && a.acks == 0 {
        notes.push("acks=0: the broker answers nothing, so produce latency is not measured and produced counts are what was sent".into());
    }
    if plan.mode == Mode::EndToEnd && a.compression != args::CompressionArg::None {
        notes.push("compressed batches carry only millisecond timestamps: end-to-end latency has 1 ms resolution".into());
    }
    if plan.mode == Mode::EndToEnd && outcome.consumed_messages < outcome.produced_messages {
        notes.push(format!(
            "consumers read {} of {} acknowledged records before the drain timeout",
            outcome.consumed_messages, outcome.produced_messages
        ));
    }
    BenchResult {
        tool: "ringbroker bench".into(),
        mode: plan.mode.name().into(),
        label: a.label.clone(),
        started_unix_ms,
        elapsed_secs: secs,
        config: RunConfig {
            bootstrap: a.bootstrap.clone(),
            topic: a.topic.clone(),
            partitions: a.partitions,
            producers: if plan.mode.produces() { a.producers } else { 0 },
            consumers: if plan.mode.consumes() { a.consumers } else { 0 },
            message_bytes: a.message_bytes,
            messages_per_batch: plan.messages_per_batch,
            acks: a.acks,
            batch_bytes: a.batch_bytes,
            linger_ms: a.linger_ms,
            compression: format!("{:?}", a.compression).to_lowercase(),
            key_distribution: format!("{:?}", a.key_distribution).to_lowercase(),
            max_in_flight: a.max_in_flight,
            rate_mb_per_sec: a.rate_mb_per_sec,
            duration_secs: plan.duration_secs,
            count: a.count,
            from: format!("{:?}", plan.from).to_lowercase(),
            cpus: plan.cpus.clone(),
        },
        produce: plan.mode.produces().then(|| {
            Throughput::new(
                outcome.produced_messages,
                outcome.produced_payload_bytes,
                outcome.produced_wire_bytes,
                outcome.produce_requests,
                secs,
            )
        }),
        produce_latency_us: LatencySummary::of(&outcome.produce_latency),
        consume: plan.mode.consumes().then(|| {
            Throughput::new(
                outcome.consumed_messages,
                outcome.consumed_messages * u64::from(a.message_bytes),
                outcome.consumed_wire_bytes,
                outcome.fetches,
                secs,
            )
        }),
        end_to_end_latency_us: LatencySummary::of(&outcome.e2e_latency),
        limit_fractions: Vec::new(),
        load_average: load_average(),
        notes,
    }
}

/// What the progress bar counts towards: the run's duration, or its
/// message count (produced messages for produce, consumed ones otherwise).
#[derive(Debug, Clone, Copy, PartialEq)]
enum ProgressGoal {
    Duration(Duration),
    Messages { count: u64, consumed: bool },
}

impl ProgressGoal {
    fn of(plan: &LoadPlan) -> Self {
        match (plan.duration_secs, plan.args.count) {
            (None, Some(count)) => ProgressGoal::Messages {
                count,
                consumed: plan.mode.consumes(),
            },
            (duration, _) => ProgressGoal::Duration(Duration::from_secs(duration.unwrap_or(10))),
        }
    }

    /// (total, done) in the bar's units: milliseconds or messages.
    fn position(self, elapsed: Duration, produced: u64, consumed: u64) -> (u64, u64) {
        match self {
            ProgressGoal::Duration(run) => {
                let total = run.as_millis() as u64;
                (total, (elapsed.as_millis() as u64).min(total))
            }
            ProgressGoal::Messages { count, consumed: c } => {
                (count, if c { consumed } else { produced }.min(count))
            }
        }
    }
}

/// While the load runs: on a terminal, a progress bar (indicatif) towards
/// the duration or count with the last second's rates beside it; otherwise
/// (a log file, a pipe) one line of rates per second.
fn progress_loop(goal: ProgressGoal, counters: &Counters, stop: &AtomicBool) {
    use std::io::IsTerminal;
    let start = Instant::now();
    let bar = std::io::stderr().is_terminal().then(|| {
        let (total, _) = goal.position(Duration::ZERO, 0, 0);
        let bar = indicatif::ProgressBar::new(total);
        let template = "[{elapsed_precise}] {wide_bar} {percent:>3}%\n{msg}";
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar
    });
    let mut last = (Instant::now(), 0u64, 0u64, 0u64, 0u64);
    // The run's duration counts from its first message, after the set-up
    // (metadata, topic creation, connections).
    let mut first_message: Option<Instant> = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        let pm = counters.produced_messages.load(Ordering::Relaxed);
        let cm = counters.consumed_messages.load(Ordering::Relaxed);
        if first_message.is_none() && pm + cm > 0 {
            first_message = Some(Instant::now());
        }
        let running = first_message.map_or(Duration::ZERO, |at| at.elapsed());
        let (total, done) = goal.position(running, pm, cm);
        if let Some(bar) = &bar {
            bar.set_position(done);
        }
        if last.0.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let now = Instant::now();
        let pb = counters.produced_wire_bytes.load(Ordering::Relaxed);
        let cb = counters.consumed_wire_bytes.load(Ordering::Relaxed);
        let dt = (now - last.0).as_secs_f64();
        let rates = format!(
            "produced {pm} msgs ({:.0} msgs/s, {:.1} MB/s)  consumed {cm} msgs ({:.0} msgs/s, {:.1} MB/s)",
            (pm - last.1) as f64 / dt,
            (pb - last.2) as f64 / dt / 1e6,
            (cm - last.3) as f64 / dt,
            (cb - last.4) as f64 / dt / 1e6,
        );
        match &bar {
            Some(bar) => bar.set_message(rates),
            None => eprintln!(
                "[{:>5.1} s {:>3}%] {rates}",
                start.elapsed().as_secs_f64(),
                done * 100 / total.max(1)
            ),
        }
        last = (now, pm, pb, cm, cb);
    }
    if let Some(bar) = bar {
        bar.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(args: &[&str]) -> ProgressGoal {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["ringbroker", "bench"].iter().chain(args))
            .expect("bench flags");
        let crate::cli::Command::Bench(bench) = cli.command else {
            unreachable!("parsed a bench command line")
        };
        let (mode, load) = match bench.command {
            BenchCommand::Produce(a) => (Mode::Produce, a),
            BenchCommand::Consume(a) => (Mode::Consume, a),
            BenchCommand::EndToEnd(a) => (Mode::EndToEnd, a),
            BenchCommand::Limits(_) => unreachable!("a load mode"),
        };
        ProgressGoal::of(&load.plan(mode).expect("a valid plan"))
    }

    #[test]
    fn the_progress_bar_counts_towards_the_duration_or_the_messages_the_mode_counts() {
        let second = Duration::from_secs(1);
        let default = goal(&["produce"]);
        assert_eq!(default, ProgressGoal::Duration(Duration::from_secs(10)));
        assert_eq!(default.position(second * 4, 7, 9), (10_000, 4_000));
        assert_eq!(default.position(second * 11, 7, 9), (10_000, 10_000));
        let produce = goal(&["produce", "--count", "100"]);
        assert_eq!(produce.position(second, 40, 30), (100, 40));
        assert_eq!(produce.position(second, 140, 30), (100, 100));
        let consume = goal(&["consume", "--count", "100"]);
        assert_eq!(consume.position(second, 0, 30), (100, 30));
        let end_to_end = goal(&["end-to-end", "--count", "100"]);
        assert_eq!(end_to_end.position(second, 90, 30), (100, 30));
        let timed = goal(&["consume", "--duration-secs", "3"]);
        assert_eq!(timed.position(second, 0, 30), (3_000, 1_000));
    }
}
