//! Goal: start-up recovery cuts a damaged segment back to its last valid
//! batch, serves exactly that prefix, and appends the next message right
//! after it (never after the damage, where nobody could read it).
//!
//! Method: a 1-partition topic gets one batch per message (each send awaited
//! before the next), then the broker stops cleanly. The test parses the last
//! `.log` file for batch boundaries, damages it in one of three ways (cut
//! mid-batch, garbage appended, one bit flipped inside the last batch's
//! records), removes the clean shutdown marker so recovery scans, and
//! restarts. The partition must read back as the intact prefix, the high
//! watermark must be the prefix's end, a new message must get that offset,
//! and a final read must show prefix plus new message. The cut is also tried
//! with the marker left in place: a clean marker does not make a damaged file
//! whole, and serving or appending after a torn batch would still be wrong.

mod common;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::Duration;

use common::kafka::{
    assert_read_back_matches, auto_create_topic, future_producer, future_record, produce_all,
    producer_config, read_partitions, test_message, watermarks, AckedMessage, READ_TIMEOUT,
};
use common::segment::{last_segment, parse_batches, BatchExtent};
use common::{Broker, BrokerOptions, CLEAN_SHUTDOWN_MARKER};

const TOPIC: &str = "torn";
const MESSAGES: u64 = 40;

/// A stopped broker holding `MESSAGES` messages in `MESSAGES` batches, and
/// what was acknowledged.
async fn stopped_broker_with_batches() -> (Broker, Vec<AckedMessage>) {
    let mut broker = Broker::start(BrokerOptions::default().num_partitions(1));
    let bootstrap = broker.bootstrap();
    auto_create_topic(&bootstrap, TOPIC, 1);
    let mut config = producer_config(&bootstrap);
    config.set("linger.ms", "0");
    let producer = future_producer(&config);
    let mut acked = Vec::new();
    for index in 0..MESSAGES {
        // One awaited send at a time: each message is its own batch.
        let message = test_message(index, 0);
        acked.extend(produce_all(&producer, TOPIC, std::slice::from_ref(&message)).await);
    }
    drop(producer);
    broker.terminate();
    assert!(
        broker.data_dir().join(CLEAN_SHUTDOWN_MARKER).exists(),
        "no {CLEAN_SHUTDOWN_MARKER} after a clean shutdown"
    );
    (broker, acked)
}

/// The last segment's path and its batches, checked to be intact.
fn intact_batches(broker: &Broker) -> (PathBuf, Vec<BatchExtent>) {
    let path = last_segment(broker.data_dir(), TOPIC, 0);
    let bytes = std::fs::read(&path).expect("read segment");
    let batches = parse_batches(&bytes);
    assert!(
        batches.len() >= 2,
        "want at least 2 batches, found {batches:?}"
    );
    assert!(
        batches.iter().all(|batch| batch.crc_ok),
        "a batch fails its CRC before any damage: {batches:?}"
    );
    let last = batches.last().expect("a batch");
    assert_eq!(
        last.next_offset(),
        MESSAGES as i64,
        "the last segment should end at offset {MESSAGES}"
    );
    let tail = &bytes[last.end_position() as usize..];
    assert!(
        tail.iter().all(|&byte| byte == 0),
        "{} bytes after the last batch that are not zero padding",
        tail.len()
    );
    (path, batches)
}

fn remove_clean_shutdown_marker(broker: &Broker) {
    let marker = broker.data_dir().join(CLEAN_SHUTDOWN_MARKER);
    std::fs::remove_file(&marker)
        .unwrap_or_else(|error| panic!("remove {}: {error}", marker.display()));
}

/// Restarts, then checks that exactly the first `prefix_end` messages are
/// served, that the next produce lands at `prefix_end`, and that a fresh read
/// sees the prefix followed by the new message.
async fn assert_serves_prefix_then_appends(
    broker: &mut Broker,
    acked: &[AckedMessage],
    prefix_end: i64,
    damage: &str,
) {
    broker.restart();
    let bootstrap = broker.bootstrap();
    assert_eq!(
        watermarks(&bootstrap, TOPIC, 0),
        (0, prefix_end),
        "after {damage}: (log start, high watermark) should be the valid prefix"
    );
    let prefix: Vec<AckedMessage> = acked
        .iter()
        .filter(|acked| acked.offset < prefix_end)
        .cloned()
        .collect();
    let ends = BTreeMap::from([(0, prefix_end)]);
    let received = read_partitions(&bootstrap, TOPIC, &ends, READ_TIMEOUT);
    assert_read_back_matches(&format!("after {damage}"), &prefix, &received);

    let next = test_message(10_000, 0);
    let producer = future_producer(&producer_config(&bootstrap));
    let delivery = producer
        .send(future_record(TOPIC, &next), Duration::from_secs(10))
        .await
        .unwrap_or_else(|(error, _)| panic!("produce after {damage}: {error}"));
    assert_eq!(
        delivery.offset, prefix_end,
        "after {damage}: the next message must land right after the valid prefix"
    );
    let mut all = prefix;
    all.push(AckedMessage {
        message: next,
        offset: prefix_end,
    });
    let ends = BTreeMap::from([(0, prefix_end + 1)]);
    let received = read_partitions(&bootstrap, TOPIC, &ends, READ_TIMEOUT);
    assert_read_back_matches(
        &format!("after {damage} and one more produce"),
        &all,
        &received,
    );
}

fn cut_mid_last_batch(path: &PathBuf, batches: &[BatchExtent]) -> i64 {
    let last = batches.last().expect("a batch");
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open segment");
    file.set_len(last.position + last.total_bytes / 2)
        .expect("truncate segment");
    file.sync_all().expect("sync segment");
    last.base_offset
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_drops_a_batch_cut_in_the_middle() {
    let (mut broker, acked) = stopped_broker_with_batches().await;
    let (path, batches) = intact_batches(&broker);
    let prefix_end = cut_mid_last_batch(&path, &batches);
    remove_clean_shutdown_marker(&broker);
    assert_serves_prefix_then_appends(&mut broker, &acked, prefix_end, "a cut mid-batch").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_drops_a_batch_cut_in_the_middle_even_with_the_clean_marker() {
    let (mut broker, acked) = stopped_broker_with_batches().await;
    let (path, batches) = intact_batches(&broker);
    let prefix_end = cut_mid_last_batch(&path, &batches);
    assert_serves_prefix_then_appends(
        &mut broker,
        &acked,
        prefix_end,
        "a cut mid-batch with the clean shutdown marker present",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_drops_garbage_after_the_last_batch() {
    let (mut broker, acked) = stopped_broker_with_batches().await;
    let (path, batches) = intact_batches(&broker);
    let last = batches.last().expect("a batch");
    let mut file = OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open segment");
    // Drop any zero padding, then write what a crash mid-write could leave:
    // a plausible batch start (next base offset, a length) and then noise.
    file.set_len(last.end_position()).expect("trim padding");
    file.seek(SeekFrom::End(0)).expect("seek to end");
    let mut garbage = Vec::new();
    garbage.extend_from_slice(&last.next_offset().to_be_bytes());
    garbage.extend_from_slice(&500i32.to_be_bytes());
    garbage.extend((0..77u32).map(|i| (i.wrapping_mul(131) ^ 0x5a) as u8));
    file.write_all(&garbage).expect("append garbage");
    file.sync_all().expect("sync segment");
    drop(file);
    remove_clean_shutdown_marker(&broker);
    assert_serves_prefix_then_appends(
        &mut broker,
        &acked,
        last.next_offset(),
        "garbage appended after the last batch",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_drops_a_last_batch_whose_crc_fails() {
    let (mut broker, acked) = stopped_broker_with_batches().await;
    let (path, batches) = intact_batches(&broker);
    let last = batches.last().expect("a batch");
    assert!(
        last.total_bytes > common::segment::BATCH_HEADER_BYTES,
        "the last batch has no record bytes to damage"
    );
    let records_bytes = last.total_bytes - common::segment::BATCH_HEADER_BYTES;
    let position = last.position + common::segment::BATCH_HEADER_BYTES + records_bytes / 2;
    let mut bytes = std::fs::read(&path).expect("read segment");
    bytes[position as usize] ^= 0x10;
    std::fs::write(&path, &bytes).expect("write damaged segment");
    let damaged = parse_batches(&bytes);
    assert!(
        !damaged.last().expect("a batch").crc_ok,
        "flipping a bit should break the last batch's CRC"
    );
    remove_clean_shutdown_marker(&broker);
    assert_serves_prefix_then_appends(
        &mut broker,
        &acked,
        last.base_offset,
        "one bit flipped in the last batch",
    )
    .await;
}
