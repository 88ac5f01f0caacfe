//! Goal: Kafka's log cleaner configs act here, from the command line and
//! at runtime (`kafka-configs --entity-type brokers`), as in Kafka:
//! `log.cleaner.io.max.bytes.per.second` of 0 stops compaction and a
//! positive one slows it to that many bytes read and written a second,
//! compaction still keeping each key's latest value (Kafka looks at its
//! rate only after 300 ms, so it lets a short burst through, and measured
//! well past its bound: 100 MB in 10.8 s at 1 MiB/s; here the bound
//! holds); `log.cleaner.backoff.ms` sets the pause between passes. Bad values get Kafka 4.1.1's messages,
//! and DescribeConfigs shows each value as Kafka prints it, with its source.
//!
//! `log.cleaner.threads` compactions run at once (shared out among the
//! shards) under the one byte bound, keeping each key's latest value
//! however small `log.cleaner.io.buffer.size` is; the threads change at
//! runtime only to within half and double the value in force, with the key
//! map more than 1 MiB a thread, in Kafka's words.
//!
//! Method: an rdkafka producer and consumer on compacted topics with
//! 1 MiB segments; the partitions' segment files on disk show when they
//! were compacted; IncrementalAlterConfigs over a raw connection and
//! rdkafka's admin client to describe.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::kafka::{
    assert_broker_configs, create_compacted_topic, described_broker_config, kept_by_key,
    produce_keyed,
};
use common::wire::{incremental_alter_configs, RawClient};
use common::{segments, wait_until, with_timeout, Broker, BrokerOptions};

const BROKER: i8 = 4;
const RECORDS: usize = 600;

/// Bytes of the partition's segment files.
fn segment_bytes(dir: &Path) -> u64 {
    segments(dir).values().sum()
}

/// Bytes of the partition's closed segments (all but the newest, which
/// compaction leaves alone).
fn closed_segment_bytes(dir: &Path) -> u64 {
    let segments = segments(dir);
    segments.values().rev().skip(1).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_stops_and_slows_at_the_cleaners_byte_rate() {
    let broker = Broker::start(BrokerOptions::default().compaction_held());
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(180), async {
        let topic = "cleaned";
        create_compacted_topic(&bootstrap, topic, 1, &[]).await;
        assert_broker_configs(
            &bootstrap,
            &[
                ("log.cleaner.backoff.ms", "100", "StaticBroker"),
                ("log.cleaner.io.max.bytes.per.second", "0.0", "StaticBroker"),
                ("log.cleaner.dedupe.buffer.size", "134217728", "Default"),
                ("log.cleaner.io.buffer.load.factor", "0.9", "Default"),
            ],
        )
        .await;

        // About 6 MiB: 600 records of 10 KB over 20 keys.
        let latest = produce_keyed(&bootstrap, topic, 1, RECORDS).await;
        let dir = broker.data_dir().join(format!("{topic}-0"));
        let written = segment_bytes(&dir);
        assert!(written >= 6_000_000, "{written} bytes of segments for 6 MB");

        // 0 bytes a second: Kafka's cleaner stops, and so compaction here.
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(segment_bytes(&dir), written, "compacted at 0 bytes a second");

        // Bad values, in Kafka's words.
        let mut client = RawClient::connect(&bootstrap);
        for (name, value, message) in [
            ("log.cleaner.dedupe.buffer.size", "1048576", "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
            ("log.cleaner.backoff.ms", "-1", "Invalid value -1 for configuration log.cleaner.backoff.ms: Value must be at least 0"),
            ("log.cleaner.io.buffer.load.factor", "abc", "Invalid value abc for configuration log.cleaner.io.buffer.load.factor: Not a number of type DOUBLE"),
            ("log.cleaner.io.max.bytes.per.second", "", "Invalid value  for configuration log.cleaner.io.max.bytes.per.second: Not a number of type DOUBLE"),
            ("log.cleaner.enable", "false", "Cannot update these configs dynamically: Set(log.cleaner.enable)"),
        ] {
            let answer = incremental_alter_configs(&mut client, BROKER, "", &[(name, Some(value))]);
            assert_eq!(answer, (42, Some(message.to_string())), "{name}={value}");
        }

        // 2 MiB a second: reading the ~5 MiB of closed segments twice
        // (mapping the keys, then copying the latest) takes about 5 s; the
        // 200 KB kept and the active segment are under 2 MB.
        let set = Instant::now();
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "",
            &[("log.cleaner.io.max.bytes.per.second", Some("2097152"))],
        );
        assert_eq!(answer, (0, None));
        wait_until(Duration::from_secs(90), "the topic to be compacted", || {
            segment_bytes(&dir) < 2_000_000
        });
        let took = set.elapsed();
        assert!(
            took >= Duration::from_secs(3),
            "10 MB moved at 2 MiB a second in {took:?}"
        );
        assert_eq!(
            described_broker_config(&bootstrap, 0, "log.cleaner.io.max.bytes.per.second").await,
            ("2097152.0".into(), "DynamicDefaultBroker".into())
        );

        // Each key's latest value is kept.
        assert_eq!(kept_by_key(&bootstrap, topic, 1, RECORDS), latest);

        // No pause between passes: the broker still serves.
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "0",
            &[("log.cleaner.backoff.ms", Some("0"))],
        );
        assert_eq!(answer, (0, None));
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            described_broker_config(&bootstrap, 0, "log.cleaner.backoff.ms").await,
            ("0".into(), "DynamicBroker".into())
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleaner_threads_compact_at_once_under_one_byte_bound() {
    // Four compactions at once over two shards, each reading its segments
    // 4 KiB at a time (its share of no I/O buffer); compaction stopped.
    let broker = Broker::start(
        BrokerOptions::default()
            .cores(2)
            .arg("--log-cleaner-threads", 4)
            .arg("--log-cleaner-io-buffer-size", 0)
            .compaction_held(),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(240), async {
        let topic = "cleaned-at-once";
        let partitions = 4;
        create_compacted_topic(&bootstrap, topic, partitions, &[]).await;
        assert_broker_configs(
            &bootstrap,
            &[
                ("log.cleaner.threads", "4", "StaticBroker"),
                ("log.cleaner.io.buffer.size", "0", "StaticBroker"),
            ],
        )
        .await;

        // Kafka's rules for a change at runtime, in its words: within half
        // and double the value in force (4), more than 1 MiB of key map a
        // thread, values of the type and bounds.
        let mut client = RawClient::connect(&bootstrap);
        let double = "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to more than double the current value 4 for configuration Invalid dynamic configuration";
        let half = "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be reduced to less than half the current value 4 for configuration Invalid dynamic configuration";
        let memory = "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.";
        for (resource, configs, message) in [
            ("0", vec![("log.cleaner.threads", Some("9"))], Some(double)),
            ("", vec![("log.cleaner.threads", Some("1"))], Some(half)),
            ("0", vec![("log.cleaner.threads", Some("0"))], Some("/ by zero")),
            ("0", vec![("log.cleaner.threads", Some("-1"))], Some("Invalid value -1 for configuration log.cleaner.threads: Value must be at least 0")),
            ("0", vec![("log.cleaner.threads", Some("2147483648"))], Some("Invalid value 2147483648 for configuration log.cleaner.threads: Not a number of type INT")),
            ("0", vec![("log.cleaner.dedupe.buffer.size", Some("4194304"))], Some(memory)),
            ("", vec![("log.cleaner.threads", Some("8")), ("log.cleaner.dedupe.buffer.size", Some("8388608"))], Some(memory)),
            ("0", vec![("log.cleaner.io.buffer.size", Some("-1"))], Some("Invalid value -1 for configuration log.cleaner.io.buffer.size: Value must be at least 0")),
            ("0", vec![("log.cleaner.threads", Some("2"))], None),
            // Back to the command line's 4 from 2: not more than double.
            ("0", vec![("log.cleaner.threads", None)], None),
            ("0", vec![("log.cleaner.io.buffer.size", Some("1024"))], None),
            ("0", vec![("log.cleaner.io.buffer.size", Some("0"))], None),
        ] {
            let answer = incremental_alter_configs(&mut client, BROKER, resource, &configs);
            let expected = match message {
                Some(text) => (42, Some(text.to_string())),
                None => (0, None),
            };
            assert_eq!(answer, expected, "{resource:?} {configs:?}");
        }
        assert_eq!(
            described_broker_config(&bootstrap, 0, "log.cleaner.threads").await,
            ("4".into(), "StaticBroker".into())
        );
        assert_eq!(
            described_broker_config(&bootstrap, 0, "log.cleaner.io.buffer.size").await,
            ("0".into(), "DynamicBroker".into())
        );

        // About 3 MB a partition, 12 MB in all.
        let records = 300;
        let latest = produce_keyed(&bootstrap, topic, partitions, records).await;
        let dirs: Vec<_> = (0..partitions)
            .map(|p| broker.data_dir().join(format!("{topic}-{p}")))
            .collect();
        let closed: u64 = dirs.iter().map(|dir| closed_segment_bytes(dir)).sum();
        assert!(closed >= 7_000_000, "{closed} bytes of closed segments");

        // 4 MiB a second for all the compactions at once: each reads its
        // closed segments twice (mapping the keys, then copying the
        // latest), so the bound holds only if they share it (less the
        // last 300 ms interval, which is not waited for; with a bound of
        // their own they took 2.9 s here, together 4.7 s).
        let rate = 4.0 * 1_048_576.0;
        let set = Instant::now();
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "",
            &[("log.cleaner.io.max.bytes.per.second", Some("4194304"))],
        );
        assert_eq!(answer, (0, None));
        wait_until(Duration::from_secs(120), "every partition to be compacted", || {
            dirs.iter().all(|dir| segment_bytes(dir) < 1_500_000)
        });
        let took = set.elapsed();
        #[allow(clippy::cast_precision_loss)]
        let least = Duration::from_secs_f64((2 * closed) as f64 / rate - 0.4);
        assert!(
            took >= least,
            "{} bytes read twice at 4 MiB a second in {took:?}, less than {least:?}",
            closed
        );

        // Each key's latest value is kept in every partition.
        assert_eq!(kept_by_key(&bootstrap, topic, partitions, records), latest);
    })
    .await;
}
