//! Goal: a partition whose compaction fails on its data (here a damaged
//! record in a closed segment) is left alone by the cleaner from then on,
//! as Kafka's cleaner marks such a partition uncleanable (measured on
//! Kafka 4.1.1 with the same damage): it is not tried again at every pass,
//! the damaged segment stays as it was, the other compacted topics are
//! still compacted, and the partition still takes and serves new records.
//! A restart tries it once more; deleting the topic forgets it. The count
//! shows as `ringbroker_log_cleaner_uncleanable_partitions` and their bytes
//! as `ringbroker_log_cleaner_uncleanable_bytes` (Kafka's
//! `uncleanable-partitions-count` and `uncleanable-bytes`).
//!
//! Method: two compacted topics of 1 MiB segments filled with the cleaner
//! held; with the broker stopped, the key length of the first record of a
//! closed segment of one of them is changed (the batch's lengths and
//! header are left whole); the broker restarts and the cleaner is let go
//! at runtime; the segment files, the broker's log and its metrics show
//! what the cleaner did.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::Message;

use common::kafka::{
    create_compacted_topic, delete_topic, kept_by_key, produce_keyed, read_partitions, watermarks,
};
use common::wire::{incremental_alter_configs, RawClient};
use common::{
    free_port, metric_sum, scrape_metrics, segments, wait_until, with_timeout, Broker,
    BrokerOptions,
};

const RECORDS: usize = 600;
const MARKED: &str = "marking the partition uncleanable";
const UNCLEANABLE: &str = "ringbroker_log_cleaner_uncleanable_partitions";
const UNCLEANABLE_BYTES: &str = "ringbroker_log_cleaner_uncleanable_bytes";

/// Lines of the broker's log that mark `topic`'s partition uncleanable.
fn marked(broker: &Broker, topic: &str) -> usize {
    broker
        .log_contents()
        .lines()
        .filter(|line| line.contains(MARKED) && line.contains(&format!("topic={topic} ")))
        .count()
}

fn release_the_cleaner(bootstrap: &str) {
    let mut client = RawClient::connect(bootstrap);
    let answer = incremental_alter_configs(
        &mut client,
        4,
        "",
        &[("log.cleaner.io.max.bytes.per.second", Some("1073741824"))],
    );
    assert_eq!(answer, (0, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_whose_compaction_fails_is_left_alone_until_a_restart() {
    let metrics_port = free_port();
    let mut broker = Broker::start(
        BrokerOptions::default()
            .compaction_held()
            .arg("--metrics-listen", format!("127.0.0.1:{metrics_port}")),
    );
    let bootstrap = broker.bootstrap();
    let uncleanable = || metric_sum(&scrape_metrics(metrics_port), UNCLEANABLE);
    with_timeout(Duration::from_secs(240), async {
        create_compacted_topic(&bootstrap, "damaged", 1, &[]).await;
        create_compacted_topic(&bootstrap, "healthy", 1, &[]).await;
        produce_keyed(&bootstrap, "damaged", 1, RECORDS).await;
        let latest = produce_keyed(&bootstrap, "healthy", 1, RECORDS).await;
        let damaged_dir = broker.data_dir().join("damaged-0");
        let healthy_dir = broker.data_dir().join("healthy-0");
        assert!(
            segments(&damaged_dir).len() >= 4,
            "{:?}",
            segments(&damaged_dir)
        );

        // The key length of the first record of the second segment (after
        // the 61 bytes of batch header, the record's length, attributes,
        // timestamp delta and offset delta), with the broker stopped: 63
        // bytes instead of 5 or 6, as in the case measured on Kafka.
        broker.terminate();
        let second = segments(&damaged_dir).into_keys().nth(1).unwrap();
        let path = damaged_dir.join(&second);
        let mut bytes = std::fs::read(&path).unwrap();
        let skip_varint =
            |at: usize| at + bytes[at..].iter().position(|b| b & 0x80 == 0).unwrap() + 1;
        let key_length_at = skip_varint(skip_varint(skip_varint(61) + 1));
        assert!(
            matches!(bytes[key_length_at], 10 | 12),
            "{}",
            bytes[key_length_at]
        );
        bytes[key_length_at] = 0x7e;
        std::fs::write(&path, &bytes).unwrap();
        let damaged_bytes = bytes.len() as u64;
        broker.restart();
        assert_eq!(uncleanable(), 0);

        release_the_cleaner(&bootstrap);
        wait_until(Duration::from_secs(90), "healthy to be compacted", || {
            segments(&healthy_dir).values().sum::<u64>() < 2_000_000
        });
        wait_until(Duration::from_secs(30), "damaged to be marked", || {
            marked(&broker, "damaged") == 1
        });
        assert_eq!(uncleanable(), 1);
        assert_eq!(kept_by_key(&bootstrap, "healthy", 1, RECORDS), latest);

        // The damaged segment is as it was (segments before it may have
        // been compacted first). Passes run every 100 ms, and the
        // partition is not tried again.
        let when_marked = segments(&damaged_dir);
        assert_eq!(when_marked.get(&second), Some(&damaged_bytes));
        // What a compaction would read: at least the damaged segment, at
        // most every closed one.
        let bytes = metric_sum(&scrape_metrics(metrics_port), UNCLEANABLE_BYTES);
        let closed: u64 = when_marked.values().rev().skip(1).sum();
        assert!(
            (damaged_bytes..=closed).contains(&bytes),
            "{bytes} uncleanable bytes, {damaged_bytes} damaged, {closed} closed"
        );
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(marked(&broker, "damaged"), 1, "{}", broker.log_contents());
        assert_eq!(segments(&damaged_dir), when_marked);
        assert_eq!(uncleanable(), 1);

        // It still takes and serves records, all of them.
        produce_keyed(&bootstrap, "damaged", 1, 5).await;
        let end = watermarks(&bootstrap, "damaged", 0).1;
        assert_eq!(end, RECORDS as i64 + 5);
        let ends: BTreeMap<i32, i64> = [(0, end)].into();
        let read = read_partitions(&bootstrap, "damaged", &ends, Duration::from_secs(30));
        let damaged_base: i64 = second.trim_end_matches(".log").parse().unwrap();
        let offsets: Vec<i64> = read[&0].iter().map(|m| m.offset()).collect();
        let uncompacted: Vec<i64> = offsets.into_iter().filter(|&o| o >= damaged_base).collect();
        assert_eq!(uncompacted, (damaged_base..end).collect::<Vec<_>>());

        // A restart tries it once more.
        broker.restart();
        wait_until(
            Duration::from_secs(30),
            "damaged to be marked again",
            || marked(&broker, "damaged") == 2,
        );
        assert_eq!(uncleanable(), 1);

        // A deleted topic is forgotten.
        delete_topic(&bootstrap, "damaged").await;
        wait_until(Duration::from_secs(10), "no uncleanable partition", || {
            uncleanable() == 0
        });
        assert_eq!(
            metric_sum(&scrape_metrics(metrics_port), UNCLEANABLE_BYTES),
            0
        );
    })
    .await;
}
