//! Goal: topics with `cleanup.policy=delete` lose their oldest segments as
//! Kafka's do, and clients see it the Kafka way: by `retention.bytes` the
//! partition keeps at least that many bytes in whole segments and no more
//! than one segment's worth beyond; by `retention.ms` segments whose newest
//! record is older go, the active one too (rolled first); ListOffsets
//! earliest moves to the first kept offset; a consumer starting at offset 0
//! with `auto.offset.reset=earliest` is moved there and reads every kept
//! message unchanged; all of it holds after kill -9 and after a clean
//! restart.
//!
//! Method: a broker checking retention every 200 ms; topics with small
//! segments and the limits under test, written by rdkafka with acks=all;
//! the partition's `.log` files are inspected on disk; read-backs compare
//! every message with the one acknowledged at its offset.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::{Offset, TopicPartitionList};

use common::kafka::{
    consumer_config, create_topic_with_configs, future_producer, produce_all, producer_config,
    received_as_test_message, test_messages, watermarks, AckedMessage,
};
use common::segment::{parse_batches, BatchExtent};
use common::{with_timeout, Broker, BrokerOptions};

const CHECK_INTERVAL_MS: u64 = 200;

fn broker() -> Broker {
    Broker::start(
        BrokerOptions::default().arg("--log-retention-check-interval-ms", CHECK_INTERVAL_MS),
    )
}

/// The partition's segments on disk: (base offset, bytes of record
/// batches), in offset order. The bytes are the batches' own, as the
/// broker counts them for `retention.bytes`: the active segment's file
/// runs on to the end of its last 4 KiB block (direct I/O writes whole
/// blocks, zero-padded), and its length would overstate the segment by up
/// to 4 KiB.
fn segments_on_disk(dir: &Path) -> Vec<(i64, u64)> {
    let mut segments: Vec<(i64, u64)> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("listing {}: {error}", dir.display()))
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let base = name.strip_suffix(".log")?.parse::<i64>().ok()?;
            // Gone since the listing: a deletion is under way.
            let bytes = std::fs::read(entry.path()).ok()?;
            let batches_end = parse_batches(&bytes)
                .last()
                .map_or(0, BatchExtent::end_position);
            Some((base, batches_end))
        })
        .collect();
    segments.sort();
    segments
}

/// How many of the partition's segments were deleted but still have their
/// `.log` on disk, renamed `.log.deleted` for `file.delete.delay.ms`.
fn deleted_segments_on_disk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("listing {}: {error}", dir.display()))
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .ends_with(".log.deleted")
        })
        .count()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// Polls `condition` every 100 ms for up to 20 s.
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads partition 0 from offset 0 with `auto.offset.reset=earliest` up to
/// `end`, as a consumer that last ran before the retention would.
fn read_from_zero(bootstrap: &str, topic: &str, end: i64) -> Vec<OwnedMessage> {
    let consumer: BaseConsumer = consumer_config(bootstrap)
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("create BaseConsumer");
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Offset(0))
        .expect("add partition");
    consumer.assign(&assignment).expect("assign");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut received = Vec::new();
    let mut errors = Vec::new();
    while received
        .last()
        .map_or(true, |last: &OwnedMessage| last.offset() + 1 < end)
    {
        assert!(
            Instant::now() < deadline,
            "reading {topic} timed out after {} messages; errors {errors:?}",
            received.len()
        );
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => received.push(message.detach()),
            Some(Err(error)) => errors.push(error.to_string()),
            None => {}
        }
    }
    received
}

/// `received` is exactly the acknowledged messages from `start` on, in
/// offset order.
fn assert_kept(what: &str, acked: &[AckedMessage], start: i64, received: &[OwnedMessage]) {
    let by_offset: BTreeMap<i64, &AckedMessage> =
        acked.iter().map(|acked| (acked.offset, acked)).collect();
    let offsets: Vec<i64> = received.iter().map(|message| message.offset()).collect();
    let expected: Vec<i64> = by_offset
        .range(start..)
        .map(|(offset, _)| *offset)
        .collect();
    assert_eq!(offsets, expected, "{what}: offsets read back");
    for message in received {
        let sent = &by_offset[&message.offset()].message;
        let got = received_as_test_message(message)
            .unwrap_or_else(|error| panic!("{what}: offset {}: {error}", message.offset()));
        assert_eq!(&got, sent, "{what}: message at offset {}", message.offset());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_bytes_keeps_the_newest_segments_across_kill_9() {
    const TOPIC: &str = "retention-bytes";
    const SEGMENT_BYTES: u64 = 16 * 1024;
    const RETENTION_BYTES: u64 = 64 * 1024;
    let mut broker = broker();
    let bootstrap = broker.bootstrap();
    create_topic_with_configs(
        &bootstrap,
        TOPIC,
        1,
        &[
            ("segment.bytes", "16384"),
            ("retention.bytes", "65536"),
            // The test messages carry 2023 timestamps: no time limit here.
            ("retention.ms", "-1"),
        ],
    )
    .await;
    let messages = test_messages(2000, 1);
    let acked = with_timeout(Duration::from_secs(60), async {
        // Batches of a few KiB, so that segments of 16 KiB hold several.
        let producer = future_producer(producer_config(&bootstrap).set("batch.size", "4096"));
        produce_all(&producer, TOPIC, &messages).await
    })
    .await;
    let end = acked.iter().map(|acked| acked.offset).max().unwrap() + 1;
    assert_eq!(end, 2000);
    let dir = broker.data_dir().join(format!("{TOPIC}-0"));
    let payload: usize = messages
        .iter()
        .map(|message| message.value.as_ref().map_or(0, Vec::len))
        .sum();
    assert!(
        payload as u64 > 3 * RETENTION_BYTES,
        "the test writes enough: {payload} bytes of values"
    );

    // Kafka's rule: whole segments go while what stays is at least
    // retention.bytes, so once it is done one more would go below it.
    wait_until("retention.bytes is applied", || {
        let segments = segments_on_disk(&dir);
        let total: u64 = segments.iter().map(|(_, bytes)| bytes).sum();
        total - segments[0].1 < RETENTION_BYTES
    });
    let segments = segments_on_disk(&dir);
    let total: u64 = segments.iter().map(|(_, bytes)| bytes).sum();
    assert!(
        (RETENTION_BYTES..RETENTION_BYTES + SEGMENT_BYTES + 2048).contains(&total),
        "kept {total} bytes in {segments:?}"
    );
    let start = segments[0].0;
    assert!(start > 0);
    assert_eq!(watermarks(&bootstrap, TOPIC, 0), (start, end));
    assert_kept(
        "after retention",
        &acked,
        start,
        &read_from_zero(&bootstrap, TOPIC, end),
    );
    // Their files stay for file.delete.delay.ms (Kafka's minute)...
    assert!(
        deleted_segments_on_disk(&dir) > 0,
        "no deleted segment kept"
    );

    // ...and a restart removes them.
    broker.kill9();
    broker.restart();
    assert_eq!(
        deleted_segments_on_disk(&dir),
        0,
        "deleted segments after a restart"
    );
    assert_eq!(
        watermarks(&bootstrap, TOPIC, 0),
        (start, end),
        "after kill -9"
    );
    assert_eq!(segments_on_disk(&dir)[0].0, start);
    assert_kept(
        "after kill -9",
        &acked,
        start,
        &read_from_zero(&bootstrap, TOPIC, end),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_ms_deletes_expired_data_even_in_the_active_segment() {
    const TOPIC: &str = "retention-ms";
    let mut broker = broker();
    let bootstrap = broker.bootstrap();
    // Ten minutes: the old messages below are an hour old, the new ones
    // stay well within it for the test's length.
    create_topic_with_configs(&bootstrap, TOPIC, 1, &[("retention.ms", "600000")]).await;
    let hour_ago = now_ms() - 3_600_000;
    let mut old = test_messages(200, 1);
    for (index, message) in old.iter_mut().enumerate() {
        message.timestamp_ms = hour_ago + index as i64;
    }
    let producer = future_producer(&producer_config(&bootstrap));
    let acked_old =
        with_timeout(Duration::from_secs(60), produce_all(&producer, TOPIC, &old)).await;
    assert_eq!(acked_old.last().map(|acked| acked.offset), Some(199));
    let dir = broker.data_dir().join(format!("{TOPIC}-0"));

    // All of it sits in the active segment: it is rolled and deleted.
    wait_until("the expired active segment is deleted", || {
        watermarks(&bootstrap, TOPIC, 0) == (200, 200)
    });
    assert_eq!(
        segments_on_disk(&dir),
        vec![(200, 0)],
        "one empty segment at the old end"
    );

    let mut new = test_messages(250, 1).split_off(200);
    let now = now_ms();
    for message in &mut new {
        message.timestamp_ms = now;
    }
    let acked_new =
        with_timeout(Duration::from_secs(60), produce_all(&producer, TOPIC, &new)).await;
    assert_eq!(acked_new[0].offset, 200, "appends continue at the old end");
    // Several retention checks later the young data is all still there.
    std::thread::sleep(Duration::from_millis(5 * CHECK_INTERVAL_MS));
    assert_eq!(watermarks(&bootstrap, TOPIC, 0), (200, 250));
    assert_kept(
        "young data",
        &acked_new,
        200,
        &read_from_zero(&bootstrap, TOPIC, 250),
    );

    broker.terminate();
    broker.restart();
    assert_eq!(
        watermarks(&bootstrap, TOPIC, 0),
        (200, 250),
        "after a clean restart"
    );
    assert_kept(
        "after a clean restart",
        &acked_new,
        200,
        &read_from_zero(&bootstrap, TOPIC, 250),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_topics_keep_their_segments_whatever_their_retention() {
    const TOPIC: &str = "retention-compact";
    let broker = broker();
    let bootstrap = broker.bootstrap();
    // cleanup.policy=compact alone: retention.ms and retention.bytes do
    // not apply (Kafka's rule; __consumer_offsets relies on it).
    create_topic_with_configs(
        &bootstrap,
        TOPIC,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "16384"),
            ("retention.bytes", "0"),
            ("retention.ms", "1"),
        ],
    )
    .await;
    // Compacted topics take keyed records only.
    let messages: Vec<_> = test_messages(600, 1)
        .into_iter()
        .filter(|message| message.key.is_some())
        .collect();
    let acked = with_timeout(Duration::from_secs(60), async {
        let producer = future_producer(producer_config(&bootstrap).set("batch.size", "4096"));
        produce_all(&producer, TOPIC, &messages).await
    })
    .await;
    let end = acked.len() as i64;
    let dir = broker.data_dir().join(format!("{TOPIC}-0"));
    let before = segments_on_disk(&dir);
    assert!(before.len() > 3, "several segments: {before:?}");
    std::thread::sleep(Duration::from_millis(8 * CHECK_INTERVAL_MS));
    assert_eq!(watermarks(&bootstrap, TOPIC, 0), (0, end));
    assert_eq!(segments_on_disk(&dir)[0].0, 0, "the first segment stays");
}

/// Goal: `segment.jitter.ms` (`log.roll.jitter.ms`) makes each partition
/// roll its segment up to that much sooner than `segment.ms`, a random
/// amount of its own, as Kafka's `randomSegmentJitter`; without it every
/// partition rolls at `segment.ms`. Method: two topics of 32 partitions
/// with `segment.ms` 10 s, one with `segment.jitter.ms` 9999; rdkafka
/// writes a message to each partition, then another timestamped 6 s later
/// (segment age is measured by record timestamps, as in Kafka): with the
/// jitter the partitions that drew more than 4 s roll (about 60%; all or
/// none alike has odds under 10^-7), without it none does. Kafka 4.1.1,
/// sent the same by confluent-kafka, rolled 18 of the 32.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_jitter_rolls_each_partition_at_an_age_of_its_own() {
    let broker = broker();
    let bootstrap = broker.bootstrap();
    let producer = future_producer(&producer_config(&bootstrap));
    let mut rolled = Vec::new();
    for (topic, jitter) in [("jittered", "9999"), ("unjittered", "0")] {
        create_topic_with_configs(
            &bootstrap,
            topic,
            32,
            &[("segment.ms", "10000"), ("segment.jitter.ms", jitter)],
        )
        .await;
        let start = now_ms() - 60_000;
        let mut messages = test_messages(64, 32);
        for (index, message) in messages.iter_mut().enumerate() {
            message.timestamp_ms = start + if index < 32 { 0 } else { 6_000 };
        }
        let second = messages.split_off(32);
        for round in [&messages, &second] {
            let acked = with_timeout(
                Duration::from_secs(60),
                produce_all(&producer, topic, round),
            )
            .await;
            assert_eq!(acked.len(), 32);
        }
        let partitions_rolled = (0..32)
            .filter(|partition| {
                let dir = broker.data_dir().join(format!("{topic}-{partition}"));
                segments_on_disk(&dir).len() == 2
            })
            .count();
        rolled.push(partitions_rolled);
    }
    assert!(
        rolled[0] > 0 && rolled[0] < 32,
        "{} of 32 jittered partitions rolled",
        rolled[0]
    );
    assert_eq!(rolled[1], 0, "unjittered partitions rolled");
}

/// Goal: `max.compaction.lag.ms` (KIP-354) has a compacted topic's records
/// compacted within that lag whatever its dirty ratio, as in Kafka: the
/// active segment rolls once it is older than the lag (Kafka's
/// `maxSegmentMs`), and a log whose oldest dirty segment is older than the
/// lag is compacted though `min.cleanable.dirty.ratio` would not have it.
/// Method: two compacted topics with `min.cleanable.dirty.ratio` 1 (never
/// reached); "lagged" with `max.compaction.lag.ms` 2000 and the default
/// `segment.ms` (7 days), "unlagged" with `segment.ms` 5000 and no lag.
/// rdkafka writes 20 messages over two keys timestamped 10 s ago, then one
/// timestamped now (which rolls both); reading from offset 0, "lagged"
/// comes down to each key's last message of the closed segment and the new
/// one (offsets 18, 19, 20) within a few cleaner passes (15 s apart), while
/// "unlagged", checked by the same passes, keeps all 21. Kafka 4.1.1, sent
/// the same by confluent-kafka, gave the same offsets (in 6 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_compaction_lag_compacts_whatever_the_dirty_ratio() {
    let broker = broker();
    let bootstrap = broker.bootstrap();
    let producer = future_producer(&producer_config(&bootstrap));
    let topics = [
        (
            "lagged",
            [
                ("max.compaction.lag.ms", "2000"),
                ("segment.ms", "604800000"),
            ],
        ),
        (
            "unlagged",
            [
                ("max.compaction.lag.ms", "9223372036854775807"),
                ("segment.ms", "5000"),
            ],
        ),
    ];
    let now = now_ms();
    for (topic, configs) in &topics {
        let mut all = vec![
            ("cleanup.policy", "compact"),
            ("min.cleanable.dirty.ratio", "1"),
        ];
        all.extend_from_slice(configs);
        create_topic_with_configs(&bootstrap, topic, 1, &all).await;
        let mut messages = test_messages(21, 1);
        for (index, message) in messages.iter_mut().enumerate() {
            message.key = Some(format!("key-{}", index % 2).into_bytes());
            message.value = Some(format!("value-{index}").into_bytes());
            message.timestamp_ms = if index < 20 { now - 10_000 } else { now };
        }
        let last = messages.split_off(20);
        for round in [&messages, &last] {
            with_timeout(
                Duration::from_secs(60),
                produce_all(&producer, topic, round),
            )
            .await;
        }
    }
    let offsets = |topic: &str| -> Vec<i64> {
        read_from_zero(&bootstrap, topic, 21)
            .iter()
            .map(|message| message.offset())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while offsets("lagged") != [18, 19, 20] {
        assert!(
            Instant::now() < deadline,
            "not compacted: {:?}",
            offsets("lagged")
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(offsets("unlagged"), (0..21).collect::<Vec<i64>>());
    let dir = broker.data_dir().join("unlagged-0");
    assert_eq!(
        segments_on_disk(&dir).len(),
        2,
        "unlagged rolled by segment.ms"
    );
}

/// Goal: a topic with `cleanup.policy=compact,delete` loses its expired
/// segments at the log cleaner's next pass (every 15 s,
/// `log.cleaner.backoff.ms`), not at the retention check, as in Kafka,
/// whose cleaner thread runs `deleteOldSegments` on such logs
/// (`deletableLogs`) while `LogManager.cleanupLogs` leaves them alone.
/// Kafka Streams' windowed-store changelogs rely on it. Method: a broker
/// whose first retention check is 30 s after start-up; two topics with
/// `retention.ms` 10 min, one `compact,delete`, one `delete`, each given
/// 200 keyed records an hour old by rdkafka; the first is emptied
/// (rolled, then deleted) by the first cleaner pass while the second is
/// still whole. Kafka 4.1.1 did the same: after 12 s the
/// `compact,delete` topic started at 200, the `delete` one at 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_delete_topics_lose_expired_segments_at_the_cleaner_pass() {
    let broker =
        Broker::start(BrokerOptions::default().arg("--log-retention-check-interval-ms", 3_600_000));
    let started = Instant::now();
    let bootstrap = broker.bootstrap();
    let producer = future_producer(&producer_config(&bootstrap));
    let hour_ago = now_ms() - 3_600_000;
    let mut messages: Vec<_> = test_messages(400, 1)
        .into_iter()
        .filter(|message| message.key.is_some())
        .take(200)
        .collect();
    assert_eq!(messages.len(), 200);
    for (index, message) in messages.iter_mut().enumerate() {
        message.timestamp_ms = hour_ago + index as i64;
    }
    for (topic, policy) in [("expired-cd", "compact,delete"), ("expired-d", "delete")] {
        create_topic_with_configs(
            &bootstrap,
            topic,
            1,
            &[("cleanup.policy", policy), ("retention.ms", "600000")],
        )
        .await;
        let acked = with_timeout(
            Duration::from_secs(60),
            produce_all(&producer, topic, &messages),
        )
        .await;
        assert_eq!(acked.last().map(|acked| acked.offset), Some(199));
    }
    let deadline = started + Duration::from_secs(28);
    while watermarks(&bootstrap, "expired-cd", 0) != (200, 200) {
        assert!(
            Instant::now() < deadline,
            "compact,delete not emptied before the first retention check: {:?}",
            watermarks(&bootstrap, "expired-cd", 0)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        watermarks(&bootstrap, "expired-d", 0),
        (0, 200),
        "delete waits for the retention check"
    );
    assert!(
        started.elapsed() < Duration::from_secs(29),
        "seen after the retention check may have run: {:?}",
        started.elapsed()
    );
    assert_eq!(
        segments_on_disk(&broker.data_dir().join("expired-cd-0")),
        vec![(200, 0)],
        "one empty segment at the old end"
    );
}
