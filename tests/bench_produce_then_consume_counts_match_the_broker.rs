//! Goal: `ringbroker bench produce` and `bench consume` measure what the
//! broker really holds: the records the producer reports as acknowledged
//! are exactly the records in the log (ListOffsets high watermarks), the
//! consumer reads all of them back, and both JSON result files parse with
//! the documented fields. `bench end-to-end` reads back at the tail every
//! record it produced, and measures each one's latency from send to
//! receipt.
//!
//! Method: a one-shard broker; `bench produce` for ~2 s on a 3-partition
//! topic with acks=all (the bench creates the topic), then `bench consume`
//! from the earliest offsets with `--count` set to what was produced; then
//! `bench end-to-end` for ~2 s on a topic of its own. All run as the real
//! binary, pinned to the last allowed CPU.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::kafka::watermarks;
use common::Broker;

const TOPIC: &str = "bench-counts";
const END_TO_END_TOPIC: &str = "bench-end-to-end";
const PARTITIONS: i32 = 3;

fn run_bench(args: &[&str], timeout: Duration) -> String {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_ringbroker"))
        .arg("bench")
        .args(args)
        .output()
        .expect("run ringbroker bench");
    assert!(
        started.elapsed() < timeout,
        "bench {args:?} took {:?}",
        started.elapsed()
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "bench {args:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("JSON result written");
    serde_json::from_str(&text).expect("JSON result parses")
}

#[test]
fn bench_produce_then_consume_counts_match_the_broker() {
    let broker = Broker::start_default();
    let bootstrap = broker.bootstrap();
    let scratch = tempfile::tempdir().expect("scratch directory");
    let produce_json = scratch.path().join("produce.json");
    let consume_json = scratch.path().join("consume.json");
    let plot = scratch.path().join("produce.svg");
    let partitions = PARTITIONS.to_string();
    let stdout = run_bench(
        &[
            "produce",
            "--bootstrap",
            &bootstrap,
            "--topic",
            TOPIC,
            "--partitions",
            &partitions,
            "--acks",
            "all",
            "--message-bytes",
            "512",
            "--duration-secs",
            "2",
            "--quiet",
            "--json",
            produce_json.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(stdout.contains("msgs/s"), "summary printed: {stdout}");
    let produced = read_json(&produce_json);
    assert_eq!(produced["mode"], "produce");
    let produced_messages = produced["produce"]["messages"].as_u64().expect("count");
    assert!(produced_messages > 0, "something was produced: {produced}");
    assert!(produced["produce_latency_us"]["p99_us"].as_u64().is_some());
    assert!(produced["produce_latency_us"]["p99_99_us"]
        .as_u64()
        .is_some());
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    assert!(svg.starts_with("<svg") && svg.contains("<polyline"));

    let held: i64 = (0..PARTITIONS)
        .map(|p| {
            let (low, high) = watermarks(&bootstrap, TOPIC, p);
            assert_eq!(low, 0);
            high
        })
        .sum();
    assert_eq!(
        held as u64, produced_messages,
        "records acknowledged to the bench = records in the broker's log"
    );

    let count = produced_messages.to_string();
    run_bench(
        &[
            "consume",
            "--bootstrap",
            &bootstrap,
            "--topic",
            TOPIC,
            "--partitions",
            &partitions,
            "--consumers",
            "2",
            "--from",
            "earliest",
            "--count",
            &count,
            "--quiet",
            "--json",
            consume_json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let consumed = read_json(&consume_json);
    assert_eq!(consumed["mode"], "consume");
    assert_eq!(
        consumed["consume"]["messages"].as_u64(),
        Some(produced_messages),
        "the consumer read back every record: {consumed}"
    );
    assert!(consumed["consume"]["messages_per_sec"].as_f64().unwrap() > 0.0);

    let end_to_end_json = scratch.path().join("end-to-end.json");
    run_bench(
        &[
            "end-to-end",
            "--bootstrap",
            &bootstrap,
            "--topic",
            END_TO_END_TOPIC,
            "--partitions",
            "2",
            "--acks",
            "1",
            "--message-bytes",
            "256",
            "--duration-secs",
            "2",
            "--quiet",
            "--json",
            end_to_end_json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let end_to_end = read_json(&end_to_end_json);
    assert_eq!(end_to_end["mode"], "end-to-end");
    let sent = end_to_end["produce"]["messages"].as_u64().expect("count");
    assert!(sent > 0, "something was produced: {end_to_end}");
    assert_eq!(
        end_to_end["consume"]["messages"].as_u64(),
        Some(sent),
        "end-to-end read back every record it produced: {end_to_end}"
    );
    let held: i64 = (0..2)
        .map(|p| watermarks(&bootstrap, END_TO_END_TOPIC, p).1)
        .sum();
    assert_eq!(held as u64, sent, "records produced = records in the log");
    let latency = &end_to_end["end_to_end_latency_us"];
    assert_eq!(
        latency["count"].as_u64(),
        Some(sent),
        "one latency sample per record: {latency}"
    );
    let at = |field: &str| latency[field].as_u64().expect("a latency figure");
    assert!(
        at("p50_us") > 0
            && at("p50_us") <= at("p99_us")
            && at("p99_us") <= at("p99_99_us")
            && at("p99_99_us") <= at("max_us"),
        "latency percentiles in order: {latency}"
    );
}
