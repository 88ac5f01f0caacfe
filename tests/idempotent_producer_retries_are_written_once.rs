//! Goal: an idempotent producer's retries are written once and answered with
//! their original offsets, sequence gaps and stale epochs are refused with
//! Kafka's errors, and all of it still holds after a restart (the producer
//! state is rebuilt from the snapshot and the log tail).
//!
//! Method: InitProducerId over the wire, then hand-built v2 batches with a
//! producer id, epoch and sequence sent by Produce v3; a retry is the same
//! batch sent again. Offsets are read back with a consumer to prove nothing
//! was written twice. Then the broker is killed with SIGKILL (no snapshot at
//! close) and, separately, stopped cleanly (snapshot written); after each
//! restart a retry of the last batch must still be recognised. A second
//! test deletes the producer's batch by retention before the SIGKILL: the
//! snapshots taken when the segments rolled, and by retention when it
//! moved the log start past them, still know the producer.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Record, TimestampType};

use common::wire::{encode_batch, metadata_on, plain_record, RawClient};
use common::{Broker, BrokerOptions};

const TOPIC: &str = "idempotent";
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;

fn batch(producer_id: i64, epoch: i16, first_sequence: i32, count: i32) -> Bytes {
    let records: Vec<Record> = (0..count)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i64::from(i),
            sequence: first_sequence + i,
            timestamp: common::kafka::BASE_TIMESTAMP_MS,
            key: Some(Bytes::from(format!("k{}", first_sequence + i))),
            value: Some(Bytes::from(format!("v{}", first_sequence + i))),
            headers: Default::default(),
        })
        .collect();
    encode_batch(&records)
}

fn produce(client: &mut RawClient, batch: Bytes) -> (i16, i64) {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(TOPIC.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])]);
    let response: ProduceResponse = client.request(ApiKey::Produce, 7, &request);
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

fn init_producer_id(client: &mut RawClient) -> (i64, i16) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000);
    let response: InitProducerIdResponse = client.request(ApiKey::InitProducerId, 1, &request);
    assert_eq!(response.error_code, 0, "InitProducerId: {response:?}");
    assert!(
        response.producer_id.0 >= 0,
        "InitProducerId gave {response:?}"
    );
    (response.producer_id.0, response.producer_epoch)
}

fn wait_for_topic(client: &mut RawClient) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metadata = metadata_on(client, Some(&[TOPIC]), 4);
        if metadata
            .topics
            .iter()
            .any(|t| t.error_code == 0 && t.partitions.len() == 1)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "topic never appeared: {metadata:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn high_watermark(client: &mut RawClient) -> i64 {
    // The next plain (non-idempotent) append lands at the high watermark.
    let (error, offset) = produce(client, batch(-1, -1, -1, 1));
    assert_eq!(error, 0, "plain produce");
    offset
}

#[test]
fn idempotent_producer_retries_are_written_once() {
    let mut broker = Broker::start(BrokerOptions::default().num_partitions(1));
    let mut client = RawClient::connect(&broker.bootstrap());
    wait_for_topic(&mut client);
    let (producer_id, epoch) = init_producer_id(&mut client);
    let (other_id, _) = init_producer_id(&mut client);
    assert_ne!(producer_id, other_id, "each InitProducerId gives a new id");

    // Three batches in sequence.
    let batches = [
        batch(producer_id, epoch, 0, 3),
        batch(producer_id, epoch, 3, 2),
        batch(producer_id, epoch, 5, 4),
    ];
    let mut offsets = Vec::new();
    for b in &batches {
        let (error, offset) = produce(&mut client, b.clone());
        assert_eq!(error, 0, "in-sequence batch");
        offsets.push(offset);
    }
    assert_eq!(offsets, vec![0, 3, 5]);

    // Retries of each of them get the original offset and write nothing.
    for (b, expected) in batches.iter().zip(&offsets) {
        assert_eq!(
            produce(&mut client, b.clone()),
            (0, *expected),
            "retry answered with the original offset"
        );
    }
    assert_eq!(
        high_watermark(&mut client),
        9,
        "retries must not be appended"
    );

    // A gap in the sequence is refused and not written.
    let (error, _) = produce(&mut client, batch(producer_id, epoch, 20, 1));
    assert_eq!(error, OUT_OF_ORDER_SEQUENCE_NUMBER, "sequence gap");
    // A new epoch must start at sequence 0; an older epoch is fenced.
    let (error, offset) = produce(&mut client, batch(producer_id, epoch + 1, 0, 1));
    assert_eq!((error, offset), (0, 10), "first batch of the bumped epoch");
    let (error, _) = produce(&mut client, batch(producer_id, epoch, 9, 1));
    assert_eq!(
        error, INVALID_PRODUCER_EPOCH,
        "batch of the old epoch after the bump"
    );

    // After SIGKILL (no snapshot of this run), the state comes back from the log.
    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&broker.bootstrap());
    wait_for_topic(&mut client);
    let last = batch(producer_id, epoch + 1, 0, 1);
    assert_eq!(
        produce(&mut client, last.clone()),
        (0, 10),
        "retry after kill -9 recognised"
    );
    let (error, offset) = produce(&mut client, batch(producer_id, epoch + 1, 1, 2));
    assert_eq!(
        (error, offset),
        (0, 11),
        "the sequence continues after kill -9"
    );

    // After a clean stop (snapshot written at close), the same.
    broker.terminate();
    broker.restart();
    let mut client = RawClient::connect(&broker.bootstrap());
    wait_for_topic(&mut client);
    assert_eq!(
        produce(&mut client, batch(producer_id, epoch + 1, 1, 2)),
        (0, 11),
        "retry after a clean restart"
    );
    assert_eq!(
        produce(&mut client, batch(producer_id, epoch + 1, 3, 1)).0,
        0
    );
    let (error, _) = produce(&mut client, batch(producer_id, epoch + 1, 5, 1));
    assert_eq!(
        error, OUT_OF_ORDER_SEQUENCE_NUMBER,
        "gap after a clean restart"
    );
    let hw = high_watermark(&mut client);
    assert_eq!(hw, 14, "exactly the accepted batches are in the log");
    // The snapshot file is Kafka's: <log end offset>.snapshot next to the segments.
    let dir = broker.data_dir().join(format!("{TOPIC}-0"));
    let snapshots: Vec<_> = std::fs::read_dir(&dir)
        .expect("partition dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".snapshot"))
        .collect();
    assert!(
        !snapshots.is_empty(),
        "a clean stop leaves a producer snapshot in {}",
        dir.display()
    );
}

/// A plain batch of one record with a 100 kB value.
fn padding_batch() -> Bytes {
    encode_batch(&[plain_record(0, None, Bytes::from(vec![b'p'; 100_000]))])
}

/// (offset of the oldest `.log` file, offsets of the `.snapshot` files).
fn files_of(dir: &std::path::Path) -> (Option<i64>, Vec<i64>) {
    let mut logs = Vec::new();
    let mut snapshots = Vec::new();
    for entry in std::fs::read_dir(dir).expect("partition dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(base) = name.strip_suffix(".log") {
            logs.extend(base.parse::<i64>().ok());
        } else if let Some(offset) = name.strip_suffix(".snapshot") {
            snapshots.extend(offset.parse::<i64>().ok());
        }
    }
    (logs.into_iter().min(), snapshots)
}

/// Goal: after retention deleted every segment holding an idempotent
/// producer's batches and the broker was killed with SIGKILL, a retry of
/// the producer's last batch is still answered with its original offset and
/// not written again (Kafka keeps a producer snapshot per segment roll; a
/// replay of the remaining log alone would forget the producer and write the
/// retry twice). Method: 1 MiB segments (Kafka's least), retention.bytes
/// 1 MiB checked every 200 ms; the producer's batch at offset 0, then plain
/// 100 kB batches until segments roll and the first ones are deleted; the
/// snapshots on disk are looked at before the kill.
#[test]
fn idempotent_producer_retries_are_recognised_after_retention_and_kill_9() {
    let mut broker = Broker::start(
        BrokerOptions::default()
            .num_partitions(1)
            .arg("--log-segment-bytes", 1 << 20)
            .arg("--log-retention-bytes", 1 << 20)
            .arg("--log-retention-check-interval-ms", 200),
    );
    let mut client = RawClient::connect(&broker.bootstrap());
    wait_for_topic(&mut client);
    let (producer_id, epoch) = init_producer_id(&mut client);
    let first = batch(producer_id, epoch, 0, 3);
    assert_eq!(produce(&mut client, first.clone()), (0, 0));
    for _ in 0..30 {
        assert_eq!(produce(&mut client, padding_batch()).0, 0, "padding");
    }
    let dir = broker.data_dir().join(format!("{TOPIC}-0"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (oldest, snapshots) = files_of(&dir);
        if oldest.is_some_and(|base| base > 0) && snapshots.iter().any(|offset| *offset > 3) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no snapshot taken at a roll, or no segment deleted: oldest segment {oldest:?}, snapshots {snapshots:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let end = high_watermark(&mut client);

    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&broker.bootstrap());
    wait_for_topic(&mut client);
    assert_eq!(
        produce(&mut client, first),
        (0, 0),
        "a retry of the batch retention deleted is a duplicate after kill -9"
    );
    assert_eq!(
        produce(&mut client, batch(producer_id, epoch, 3, 1)),
        (0, end + 1),
        "the sequence continues"
    );
}
