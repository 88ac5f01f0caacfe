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
//! Method: an rdkafka producer and consumer on a compacted topic with
//! 1 MiB segments; the partition's segment files on disk show when it was
//! compacted; IncrementalAlterConfigs over a raw connection and rdkafka's
//! admin client to describe.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;

use common::kafka::{
    create_topic_with_configs, described_broker_config, producer_config, read_partitions,
};
use common::wire::{incremental_alter_configs, RawClient};
use common::{wait_until, with_timeout, Broker, BrokerOptions};

const BROKER: i8 = 4;
const KEYS: usize = 20;
const RECORDS: usize = 600;

/// Bytes of the partition's segment files.
fn segment_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("listing {}: {error}", dir.display()))
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".log"))
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_stops_and_slows_at_the_cleaners_byte_rate() {
    let broker = Broker::start(
        BrokerOptions::default()
            .arg("--log-cleaner-backoff-ms", 100)
            .arg("--log-cleaner-io-max-bytes-per-second", 0),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(180), async {
        let topic = "cleaned";
        create_topic_with_configs(
            &bootstrap,
            topic,
            1,
            &[
                ("cleanup.policy", "compact"),
                ("segment.bytes", "1048576"),
                ("min.cleanable.dirty.ratio", "0.01"),
            ],
        )
        .await;
        for (name, expected) in [
            ("log.cleaner.backoff.ms", ("100", "StaticBroker")),
            ("log.cleaner.io.max.bytes.per.second", ("0.0", "StaticBroker")),
            ("log.cleaner.dedupe.buffer.size", ("134217728", "Default")),
            ("log.cleaner.io.buffer.load.factor", ("0.9", "Default")),
        ] {
            assert_eq!(
                described_broker_config(&bootstrap, 0, name).await,
                (expected.0.to_string(), expected.1.to_string()),
                "{name}"
            );
        }

        // About 6 MiB: 600 records of 10 KB over 20 keys.
        let producer: FutureProducer = producer_config(&bootstrap)
            .set("batch.size", "100000")
            .create()
            .expect("producer");
        let mut latest = BTreeMap::new();
        for index in 0..RECORDS {
            let key = format!("key-{}", index % KEYS);
            let mut value = format!("value-{index}-").into_bytes();
            value.resize(10_000, b'x');
            producer
                .send(
                    FutureRecord::to(topic).partition(0).key(&key).payload(&value),
                    Duration::from_secs(30),
                )
                .await
                .unwrap_or_else(|(error, _)| panic!("produce {index}: {error}"));
            latest.insert(key, value);
        }
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
        let read = read_partitions(
            &bootstrap,
            topic,
            &BTreeMap::from([(0, RECORDS as i64)]),
            Duration::from_secs(30),
        );
        let mut kept = BTreeMap::new();
        for message in &read[&0] {
            let key = String::from_utf8_lossy(message.key().expect("keyed")).into_owned();
            kept.insert(key, message.payload().expect("a value").to_vec());
        }
        assert_eq!(kept, latest);
        assert!(
            read[&0].len() < RECORDS,
            "{} of {RECORDS} records read back after compaction",
            read[&0].len()
        );

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
