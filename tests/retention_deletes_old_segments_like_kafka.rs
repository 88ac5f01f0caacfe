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

    broker.kill9();
    broker.restart();
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
