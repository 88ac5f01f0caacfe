//! Goal: ListOffsets answers the earliest offset, the latest offset and the
//! first offset at or after a timestamp, before and after a restart (when
//! the time index has to come from disk); and the special timestamps answer
//! as Kafka's at each version.
//!
//! Method: 100 messages with CreateTime timestamps 1 s apart, written as 10
//! separate requests so they span 10 batches, on partition 0 of a
//! 2-partition topic; partition 1 stays empty. rdkafka's `fetch_watermarks`
//! (earliest and latest) and `offsets_for_times` (by timestamp) query them.

mod common;

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ListOffsetsRequest, ListOffsetsResponse, ProduceRequest, ProduceResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};

use common::kafka::{
    auto_create_topic, base_consumer, future_producer, produce_all, producer_config, test_message,
    watermarks, BASE_TIMESTAMP_MS,
};
use common::wire::{encode_batch, plain_record, RawClient};
use common::{with_timeout, Broker, BrokerOptions};

const TOPIC: &str = "list-offsets";
const MESSAGES: i64 = 100;
const BATCHES: i64 = 10;
const STEP_MS: i64 = 1_000;

fn timestamp_of(offset: i64) -> i64 {
    BASE_TIMESTAMP_MS + offset * STEP_MS
}

/// The offset ListOffsets gives for `timestamp_ms` on `partition`.
fn offset_for_time(bootstrap: &str, partition: i32, timestamp_ms: i64) -> Offset {
    let mut query = TopicPartitionList::new();
    query
        .add_partition_offset(TOPIC, partition, Offset::Offset(timestamp_ms))
        .expect("add partition");
    let answer = base_consumer(bootstrap)
        .offsets_for_times(query, Duration::from_secs(10))
        .unwrap_or_else(|error| panic!("ListOffsets by time {timestamp_ms}: {error}"));
    let element = answer
        .find_partition(TOPIC, partition)
        .expect("partition in the answer");
    if let Err(error) = element.error() {
        panic!("ListOffsets by time {timestamp_ms} on {partition}: {error}");
    }
    element.offset()
}

fn check_all_queries(bootstrap: &str, when: &str) {
    assert_eq!(
        watermarks(bootstrap, TOPIC, 0),
        (0, MESSAGES),
        "{when}: earliest and latest of partition 0"
    );
    assert_eq!(
        watermarks(bootstrap, TOPIC, 1),
        (0, 0),
        "{when}: earliest and latest of the empty partition 1"
    );
    let cases = [
        (
            timestamp_of(0) - 60_000,
            Offset::Offset(0),
            "before every message",
        ),
        (timestamp_of(0), Offset::Offset(0), "the first timestamp"),
        (
            timestamp_of(55),
            Offset::Offset(55),
            "an exact timestamp mid-batch",
        ),
        (
            timestamp_of(55) - 1,
            Offset::Offset(55),
            "just before a timestamp mid-batch",
        ),
        (
            timestamp_of(55) + 1,
            Offset::Offset(56),
            "just after a timestamp mid-batch",
        ),
        (
            timestamp_of(50) + 1,
            Offset::Offset(51),
            "just after a batch's first timestamp",
        ),
        (
            timestamp_of(70),
            Offset::Offset(70),
            "the first message of a batch",
        ),
        (
            timestamp_of(69),
            Offset::Offset(69),
            "the last message of a batch",
        ),
        (
            timestamp_of(MESSAGES - 1),
            Offset::Offset(MESSAGES - 1),
            "the last timestamp",
        ),
        (
            timestamp_of(MESSAGES - 1) + 1,
            Offset::End,
            "after every message",
        ),
    ];
    for (timestamp_ms, expected, what) in cases {
        assert_eq!(
            offset_for_time(bootstrap, 0, timestamp_ms),
            expected,
            "{when}: offset for time {timestamp_ms} ({what})"
        );
    }
    assert_eq!(
        offset_for_time(bootstrap, 1, timestamp_of(0)),
        Offset::End,
        "{when}: offset for time on the empty partition"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_finds_earliest_latest_and_by_timestamp() {
    let mut broker = Broker::start(BrokerOptions::default().num_partitions(2));
    let bootstrap = broker.bootstrap();
    auto_create_topic(&bootstrap, TOPIC, 2);

    with_timeout(Duration::from_secs(60), async {
        let producer = future_producer(&producer_config(&bootstrap));
        let per_batch = MESSAGES / BATCHES;
        for batch in 0..BATCHES {
            let messages: Vec<_> = (batch * per_batch..(batch + 1) * per_batch)
                .map(|offset| {
                    let mut message = test_message(offset as u64, 0);
                    message.timestamp_ms = timestamp_of(offset);
                    message
                })
                .collect();
            let acked = produce_all(&producer, TOPIC, &messages).await;
            for acked in acked {
                assert_eq!(
                    acked.message.timestamp_ms,
                    timestamp_of(acked.offset),
                    "messages must land in order for this test to mean anything"
                );
            }
        }
    })
    .await;

    check_all_queries(&bootstrap, "before restart");
    broker.terminate();
    broker.restart();
    check_all_queries(&bootstrap, "after restart");
}

/// `(error, offset, timestamp, leader epoch)` of ListOffsets `version` for
/// `timestamp` on `partition` of TOPIC.
fn list_offsets_raw(
    client: &mut RawClient,
    partition: i32,
    timestamp: i64,
    version: i16,
) -> (i16, i64, i64, i32) {
    let mut wanted = ListOffsetsPartition::default();
    wanted.partition_index = partition;
    wanted.timestamp = timestamp;
    wanted.current_leader_epoch = -1;
    let mut topic = ListOffsetsTopic::default();
    topic.name = TopicName(StrBytes::from_static_str(TOPIC));
    topic.partitions = vec![wanted];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = BrokerId(-1);
    request.topics = vec![topic];
    let response: ListOffsetsResponse = client.request(ApiKey::ListOffsets, version, &request);
    let answer = &response.topics[0].partitions[0];
    (
        answer.error_code,
        answer.offset,
        answer.timestamp,
        answer.leader_epoch,
    )
}

/// Goal: the special timestamps answer as Kafka 4.1.1 answered the same
/// requests: each is refused with UNSUPPORTED_VERSION by a version older
/// than it (MAX_TIMESTAMP -3 before v7, EARLIEST_LOCAL -4 before v8,
/// LATEST_TIERED -5 before v9), and so is a negative value Kafka does not
/// know; without tiered storage EARLIEST_LOCAL is the log start and
/// LATEST_TIERED finds nothing; MAX_TIMESTAMP on an empty partition finds
/// nothing, with leader epoch -1.
#[test]
fn special_timestamps_answer_like_kafka_at_each_version() {
    let broker = Broker::start(BrokerOptions::default().num_partitions(2));
    let bootstrap = broker.bootstrap();
    auto_create_topic(&bootstrap, TOPIC, 2);
    let mut client = RawClient::connect(&bootstrap);
    let record = |offset: i64, timestamp: i64| {
        let mut record = plain_record(offset, None, Bytes::from_static(b"v"));
        record.timestamp = timestamp;
        record
    };
    let batch = encode_batch(&[record(0, 1_000), record(1, 3_000), record(2, 2_000)]);
    let mut data = PartitionProduceData::default();
    data.index = 0;
    data.records = Some(batch);
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(StrBytes::from_static_str(TOPIC));
    topic.partition_data = vec![data];
    let mut produce = ProduceRequest::default();
    produce.acks = -1;
    produce.timeout_ms = 5_000;
    produce.topic_data = vec![topic];
    let produced: ProduceResponse = client.request(ApiKey::Produce, 9, &produce);
    assert_eq!(
        produced.responses[0].partition_responses[0].error_code, 0,
        "{produced:?}"
    );

    let unsupported = (35, -1, -1, -1);
    assert_eq!(list_offsets_raw(&mut client, 0, -3, 1), unsupported);
    assert_eq!(list_offsets_raw(&mut client, 0, -3, 7), (0, 1, 3_000, 0));
    assert_eq!(list_offsets_raw(&mut client, 0, -4, 7), unsupported);
    assert_eq!(list_offsets_raw(&mut client, 0, -4, 9), (0, 0, -1, 0));
    assert_eq!(list_offsets_raw(&mut client, 0, -5, 7), unsupported);
    assert_eq!(list_offsets_raw(&mut client, 0, -5, 9), (0, -1, -1, -1));
    assert_eq!(list_offsets_raw(&mut client, 0, -6, 9), unsupported);
    assert_eq!(list_offsets_raw(&mut client, 0, -7, 9), unsupported);
    assert_eq!(list_offsets_raw(&mut client, 1, -3, 7), (0, -1, -1, -1));
    assert_eq!(list_offsets_raw(&mut client, 0, -1, 9), (0, 3, -1, 0));
}
