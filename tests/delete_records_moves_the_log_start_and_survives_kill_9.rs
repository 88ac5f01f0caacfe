//! Goal: DeleteRecords (`kafka-delete-records`, the admin clients'
//! `deleteRecords`) does what Kafka users rely on: the log start moves to
//! the offset asked (or the high watermark for -1), ListOffsets earliest
//! and consumers that start from the beginning begin there, the records
//! from there on read back exactly as acknowledged, the segments wholly
//! below the start leave the disk, and an answered start survives kill -9.
//! Offsets the partition cannot take and topics it must not touch get
//! Kafka 4.1.1's codes, as measured against it with the same requests.
//! The deleted segments' files stay, renamed `.deleted`, for the topic's
//! `file.delete.delay.ms` (or the broker's `log.segment.delete.delay.ms`,
//! changed at runtime), and a restart meanwhile removes them, as in Kafka.
//!
//! Method: rdkafka's AdminClient (librdkafka) for DeleteRecords, an rdkafka
//! producer with acks=all and a consumer from the beginning for the data,
//! the partition directory for the segment files; hand-built v0 and v2
//! requests for what librdkafka refuses to send (a partition named twice,
//! an unknown topic, an internal topic).

mod common;

use std::time::Duration;

use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, DeleteRecordsRequest, DeleteRecordsResponse, FetchRequest, FetchResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, ListOffsetsRequest, ListOffsetsResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::AdminOptions;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

use common::kafka::{
    admin_client, consumer_config, create_topic_with_configs, future_producer, produce_all,
    producer_config, received_as_test_message, test_messages, watermarks, AckedMessage,
};
use common::segment::segment_files;
use common::wire::incremental_alter_configs;
use common::wire::RawClient;
use common::{wait_until, with_timeout, Broker, BrokerOptions};

const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const POLICY_VIOLATION: i16 = 44;

fn options() -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(10)))
        .operation_timeout(Some(Duration::from_secs(10)))
}

/// DeleteRecords through librdkafka for partition 0 of `topic`: the low
/// watermark, or librdkafka's error code for the partition.
async fn delete_records(
    bootstrap: &str,
    topic: &str,
    offset: Offset,
) -> Result<i64, RDKafkaErrorCode> {
    let mut list = TopicPartitionList::new();
    list.add_partition_offset(topic, 0, offset)
        .expect("add partition");
    let answered = admin_client(bootstrap)
        .delete_records(&list, &options())
        .await
        .unwrap_or_else(|error| panic!("DeleteRecords on {topic}: {error}"));
    let element = answered
        .find_partition(topic, 0)
        .unwrap_or_else(|| panic!("no answer for {topic}/0: {answered:?}"));
    match element.error() {
        Err(rdkafka::error::KafkaError::OffsetFetch(code)) => Err(code),
        Err(other) => panic!("{topic}/0: {other:?}"),
        Ok(()) => match element.offset() {
            Offset::Offset(low_watermark) => Ok(low_watermark),
            other => panic!("{topic}/0: low watermark {other:?}"),
        },
    }
}

/// Everything from the beginning of partition 0 up to `end` (exclusive),
/// by a consumer whose position starts at the log start.
fn read_from_beginning(bootstrap: &str, topic: &str, end: i64) -> Vec<OwnedMessage> {
    let consumer: BaseConsumer = consumer_config(bootstrap)
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Beginning)
        .expect("assign");
    consumer.assign(&assignment).expect("assign");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut received = Vec::new();
    while received
        .last()
        .map_or(true, |m: &OwnedMessage| m.offset() + 1 < end)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{topic}: read {} messages before the deadline, up to {:?}",
            received.len(),
            received.last().map(|m| m.offset())
        );
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => received.push(message.detach()),
            Some(Err(error)) => panic!("{topic}: consume: {error}"),
            None => {}
        }
    }
    received
}

/// Asserts the messages read are exactly the acknowledged ones from
/// `start` on, in offset order.
fn assert_reads_from(topic: &str, acked: &[AckedMessage], start: i64, read: Vec<OwnedMessage>) {
    let expected: Vec<&AckedMessage> = acked.iter().filter(|a| a.offset >= start).collect();
    let offsets: Vec<i64> = read.iter().map(Message::offset).collect();
    let wanted: Vec<i64> = expected.iter().map(|a| a.offset).collect();
    assert_eq!(
        offsets, wanted,
        "{topic}: offsets read from the log start {start}"
    );
    for (message, acked) in read.iter().zip(expected) {
        let got = received_as_test_message(message)
            .unwrap_or_else(|error| panic!("{topic} offset {}: {error}", acked.offset));
        assert_eq!(got, acked.message, "{topic} offset {}", acked.offset);
    }
}

/// Base offsets of the partition's segment files.
fn segment_bases(broker: &Broker, topic: &str) -> Vec<i64> {
    segment_files(broker.data_dir(), topic, 0)
        .iter()
        .map(|path| {
            path.file_stem()
                .and_then(|stem| stem.to_str())
                .and_then(|stem| stem.parse().ok())
                .unwrap_or_else(|| panic!("segment file name {}", path.display()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_moves_the_log_start_and_survives_kill_9() {
    let mut broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    let topic = "deleted-from";
    let acked = with_timeout(Duration::from_secs(240), async {
        // Small segments, so the deleted offsets span several of them.
        create_topic_with_configs(&bootstrap, topic, 1, &[("segment.bytes", "8192")]).await;
        let mut config = producer_config(&bootstrap);
        config.set("batch.num.messages", "10");
        let producer = future_producer(&config);
        let acked = produce_all(&producer, topic, &test_messages(400, 1)).await;
        assert_eq!(acked.last().map(|a| a.offset), Some(399));
        let bases_before = segment_bases(&broker, topic);
        assert!(bases_before.len() > 3, "segments {bases_before:?}");

        assert_eq!(
            delete_records(&bootstrap, topic, Offset::Offset(150)).await,
            Ok(150)
        );
        assert_eq!(watermarks(&bootstrap, topic, 0), (150, 400));
        assert_reads_from(
            topic,
            &acked,
            150,
            read_from_beginning(&bootstrap, topic, 400),
        );
        // Only the segments holding nothing at or past 150 are gone.
        let bases = segment_bases(&broker, topic);
        assert!(
            bases[0] <= 150 && bases.get(1).map_or(true, |&next| next > 150),
            "segments after deleting below 150: {bases:?} (before: {bases_before:?})"
        );
        assert!(bases[0] > 0, "no segment was deleted: {bases:?}");

        // Below the start: nothing changes, the start is answered.
        assert_eq!(
            delete_records(&bootstrap, topic, Offset::Offset(100)).await,
            Ok(150)
        );
        // Past the high watermark, or negative: out of range, start kept.
        assert_eq!(
            delete_records(&bootstrap, topic, Offset::Offset(401)).await,
            Err(RDKafkaErrorCode::OffsetOutOfRange)
        );
        assert_eq!(watermarks(&bootstrap, topic, 0), (150, 400));

        // Inside a batch: the start is that offset, not the batch's base.
        assert_eq!(
            delete_records(&bootstrap, topic, Offset::Offset(233)).await,
            Ok(233)
        );
        // By timestamp, the records of that batch below the start are not
        // found (Kafka searches from the log start).
        assert_eq!(list_offsets_at(&bootstrap, topic, 0), (0, 233));
        drop(producer);
        acked
    })
    .await;

    // Answered means durable: kill -9 and the start is still there.
    broker.kill9();
    broker.restart();
    with_timeout(Duration::from_secs(240), async {
        assert_eq!(watermarks(&bootstrap, topic, 0), (233, 400));
        assert_reads_from(
            topic,
            &acked,
            233,
            read_from_beginning(&bootstrap, topic, 400),
        );
        // -1: up to the high watermark; the log then goes on from there.
        assert_eq!(
            delete_records(&bootstrap, topic, Offset::End).await,
            Ok(400)
        );
        // MAX_TIMESTAMP still answers when its record lies below the start,
        // as Kafka's does.
        let (error, offset) = list_offsets_at(&bootstrap, topic, -3);
        assert!(
            error == 0 && (0..400).contains(&offset),
            "MAX_TIMESTAMP after deleting everything: error {error}, offset {offset}"
        );
        let producer = future_producer(&producer_config(&bootstrap));
        let more = produce_all(&producer, topic, &test_messages(20, 1)).await;
        assert_eq!(more.first().map(|a| a.offset), Some(400));
        assert_eq!(watermarks(&bootstrap, topic, 0), (400, 420));
        assert_reads_from(
            topic,
            &more,
            400,
            read_from_beginning(&bootstrap, topic, 420),
        );
    })
    .await;
    broker.terminate();
    broker.restart();
    assert_eq!(watermarks(&bootstrap, topic, 0), (400, 420));
}

/// ListOffsets v7 of partition 0 of `topic` for `timestamp`: (error, offset).
fn list_offsets_at(bootstrap: &str, topic: &str, timestamp: i64) -> (i16, i64) {
    let mut wanted = ListOffsetsPartition::default();
    wanted.partition_index = 0;
    wanted.timestamp = timestamp;
    wanted.current_leader_epoch = -1;
    let mut wanted_topic = ListOffsetsTopic::default();
    wanted_topic.name = TopicName(StrBytes::from_string(topic.to_string()));
    wanted_topic.partitions = vec![wanted];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = kafka_protocol::messages::BrokerId(-1);
    request.topics = vec![wanted_topic];
    let response: ListOffsetsResponse =
        RawClient::connect(bootstrap).request(ApiKey::ListOffsets, 7, &request);
    let answer = &response.topics[0].partitions[0];
    (answer.error_code, answer.offset)
}

fn raw_request(topics: &[(&str, &[(i32, i64)])]) -> DeleteRecordsRequest {
    let mut request = DeleteRecordsRequest::default();
    request.timeout_ms = 5000;
    request.topics = topics
        .iter()
        .map(|(name, partitions)| {
            let mut topic = DeleteRecordsTopic::default();
            topic.name = TopicName(StrBytes::from_string(name.to_string()));
            topic.partitions = partitions
                .iter()
                .map(|&(index, offset)| {
                    let mut partition = DeleteRecordsPartition::default();
                    partition.partition_index = index;
                    partition.offset = offset;
                    partition
                })
                .collect();
            topic
        })
        .collect();
    request
}

fn fetch_at(bootstrap: &str, topic: &str, offset: i64) -> FetchResponse {
    let mut partition = FetchPartition::default();
    partition.partition = 0;
    partition.fetch_offset = offset;
    partition.partition_max_bytes = 1 << 20;
    partition.current_leader_epoch = -1;
    partition.log_start_offset = -1;
    let mut fetch_topic = FetchTopic::default();
    fetch_topic.topic = TopicName(StrBytes::from_string(topic.to_string()));
    fetch_topic.partitions.push(partition);
    let mut request = FetchRequest::default();
    request.replica_id = kafka_protocol::messages::BrokerId(-1);
    request.max_wait_ms = 100;
    request.min_bytes = 1;
    request.max_bytes = 1 << 20;
    request.session_epoch = -1;
    request.topics.push(fetch_topic);
    RawClient::connect(bootstrap).request(ApiKey::Fetch, 12, &request)
}

/// (topic, partition, low watermark, error code) of every answer, in order.
fn answers(response: &DeleteRecordsResponse) -> Vec<(String, i32, i64, i16)> {
    response
        .topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(move |p| {
                (
                    topic.name.to_string(),
                    p.partition_index,
                    p.low_watermark,
                    p.error_code,
                )
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_refusals_answer_like_kafka() {
    let broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(240), async {
        create_topic_with_configs(&bootstrap, "dr", 1, &[]).await;
        create_topic_with_configs(
            &bootstrap,
            "dr-compact",
            1,
            &[("cleanup.policy", "compact")],
        )
        .await;
        create_topic_with_configs(
            &bootstrap,
            "dr-both",
            1,
            &[("cleanup.policy", "compact,delete")],
        )
        .await;
        let producer = future_producer(&producer_config(&bootstrap));
        for topic in ["dr", "dr-compact", "dr-both"] {
            // Keyed: compacted topics refuse records without a key.
            let messages: Vec<_> = test_messages(40, 1)
                .into_iter()
                .map(|mut m| {
                    m.key.get_or_insert_with(|| b"k".to_vec());
                    m
                })
                .collect();
            produce_all(&producer, topic, &messages).await;
        }
        drop(producer);
        // The offsets partition exists once a group coordinator was asked for.
        let mut find = FindCoordinatorRequest::default();
        find.key = StrBytes::from_static_str("dr-group");
        let found: FindCoordinatorResponse =
            RawClient::connect(&bootstrap).request(ApiKey::FindCoordinator, 3, &find);
        assert_eq!(found.error_code, 0, "FindCoordinator");

        for version in [0, 2] {
            let mut client = RawClient::connect(&bootstrap);
            let request = raw_request(&[
                // Named twice: answered once, the last offset applied.
                ("dr", &[(0, 4 + version as i64), (0, 2 + version as i64)]),
                ("dr-nope", &[(0, 1)]),
                ("dr", &[(7, 1)]),
                ("dr-compact", &[(0, 1)]),
                ("dr-both", &[(0, 1 + version as i64)]),
                ("__consumer_offsets", &[(0, 0)]),
                ("dr-both", &[(0, -2)]),
            ]);
            let response: DeleteRecordsResponse =
                client.request(ApiKey::DeleteRecords, version, &request);
            let expected: Vec<(String, i32, i64, i16)> = vec![
                ("dr".into(), 0, 2 + version as i64, 0),
                ("dr".into(), 7, -1, UNKNOWN_TOPIC_OR_PARTITION),
                ("dr-nope".into(), 0, -1, UNKNOWN_TOPIC_OR_PARTITION),
                ("dr-compact".into(), 0, -1, POLICY_VIOLATION),
                ("dr-both".into(), 0, -1, OFFSET_OUT_OF_RANGE),
                ("__consumer_offsets".into(), 0, -1, INVALID_TOPIC_EXCEPTION),
            ];
            assert_eq!(answers(&response), expected, "DeleteRecords v{version}");
        }
        // The start moved only where the answer said so.
        assert_eq!(watermarks(&bootstrap, "dr", 0), (4, 40));
        // A fetch below it is out of range, with -1 for the watermarks and
        // the log start as Kafka 4.1.1 answers; at it, records come.
        for (offset, error, log_start) in [(1, OFFSET_OUT_OF_RANGE, -1), (4, 0, 4)] {
            let response = fetch_at(&bootstrap, "dr", offset);
            let answer = &response.responses[0].partitions[0];
            assert_eq!(
                (
                    answer.error_code,
                    answer.log_start_offset,
                    answer.high_watermark
                ),
                (error, log_start, if error == 0 { 40 } else { -1 }),
                "fetch at {offset}"
            );
            assert_eq!(
                answer.records.as_ref().is_some_and(|r| !r.is_empty()),
                error == 0
            );
        }
        assert_eq!(watermarks(&bootstrap, "dr-compact", 0), (0, 40));
        assert_eq!(watermarks(&bootstrap, "dr-both", 0).0, 0);
        // librdkafka sees the same codes.
        assert_eq!(
            delete_records(&bootstrap, "dr-compact", Offset::Offset(1)).await,
            Err(RDKafkaErrorCode::PolicyViolation)
        );
        assert_eq!(
            delete_records(&bootstrap, "dr-both", Offset::Offset(3)).await,
            Ok(3)
        );
        assert_eq!(
            delete_records(&bootstrap, "dr", Offset::Offset(41)).await,
            Err(RDKafkaErrorCode::OffsetOutOfRange)
        );
    })
    .await;
}

/// ListOffsets latest: the high watermark (isolation level 0) or the last
/// stable offset (1).
fn latest(bootstrap: &str, topic: &str, isolation_level: i8) -> i64 {
    let mut wanted = ListOffsetsPartition::default();
    wanted.partition_index = 0;
    wanted.timestamp = -1;
    wanted.current_leader_epoch = -1;
    let mut wanted_topic = ListOffsetsTopic::default();
    wanted_topic.name = TopicName(StrBytes::from_string(topic.to_string()));
    wanted_topic.partitions = vec![wanted];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = kafka_protocol::messages::BrokerId(-1);
    request.isolation_level = isolation_level;
    request.topics = vec![wanted_topic];
    let response: ListOffsetsResponse =
        RawClient::connect(bootstrap).request(ApiKey::ListOffsets, 7, &request);
    let answer = &response.topics[0].partitions[0];
    assert_eq!(answer.error_code, 0, "ListOffsets read_committed");
    answer.offset
}

/// Goal: DeleteRecords past the first offset of an open transaction (Kafka
/// allows up to the high watermark) leaves the last stable offset at the
/// new log start, never below it, as Kafka's first unstable offset
/// follows the log start; the commit then makes everything stable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_past_an_open_transaction_keeps_the_stable_offset_at_the_start() {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    let topic = "dr-txn";
    with_timeout(Duration::from_secs(240), async {
        create_topic_with_configs(&bootstrap, topic, 1, &[]).await;
        let plain = future_producer(&producer_config(&bootstrap));
        produce_all(&plain, topic, &test_messages(10, 1)).await;
        drop(plain);
        let mut config = producer_config(&bootstrap);
        config
            .set("enable.idempotence", "true")
            .set("transactional.id", "dr-txn-producer");
        let producer: BaseProducer = config.create().expect("transactional producer");
        producer
            .init_transactions(Duration::from_secs(30))
            .expect("init transactions");
        producer.begin_transaction().expect("begin");
        for i in 0..5 {
            let value = format!("open-{i}");
            producer
                .send(
                    BaseRecord::<(), String>::to(topic)
                        .partition(0)
                        .payload(&value),
                )
                .expect("send");
        }
        producer.flush(Duration::from_secs(30)).expect("flush");
        assert_eq!(latest(&bootstrap, topic, 0), 15);
        assert_eq!(latest(&bootstrap, topic, 1), 10);

        assert_eq!(
            delete_records(&bootstrap, topic, Offset::Offset(12)).await,
            Ok(12)
        );
        assert_eq!(latest(&bootstrap, topic, 1), 12);

        producer
            .commit_transaction(Duration::from_secs(30))
            .expect("commit");
        // The five records and the commit marker.
        assert_eq!(latest(&bootstrap, topic, 1), 16);
        assert_eq!(watermarks(&bootstrap, topic, 0), (12, 16));
    })
    .await;
}

/// Names of partition 0's files renamed `.deleted`.
fn deleted_files(broker: &Broker, topic: &str) -> Vec<String> {
    let dir = broker.data_dir().join(format!("{topic}-0"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("listing {}: {error}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".deleted"))
        .collect();
    names.sort();
    names
}

/// A topic of small segments holding 400 records, and DeleteRecords to
/// 150 on it: the segments below go. Returns when DeleteRecords was sent.
async fn delete_below_150(
    bootstrap: &str,
    topic: &str,
    configs: &[(&str, &str)],
) -> std::time::Instant {
    let mut all = vec![("segment.bytes", "8192")];
    all.extend_from_slice(configs);
    create_topic_with_configs(bootstrap, topic, 1, &all).await;
    let mut config = producer_config(bootstrap);
    config.set("batch.num.messages", "10");
    let producer = future_producer(&config);
    produce_all(&producer, topic, &test_messages(400, 1)).await;
    let sent = std::time::Instant::now();
    assert_eq!(
        delete_records(bootstrap, topic, Offset::Offset(150)).await,
        Ok(150)
    );
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_segments_stay_for_the_file_delete_delay() {
    let mut broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    // Kafka's default minute: the files are there after the answer...
    with_timeout(Duration::from_secs(120), async {
        delete_below_150(&bootstrap, "kept-a-minute", &[]).await;
        let deleted = deleted_files(&broker, "kept-a-minute");
        assert!(
            deleted.iter().any(|name| name.ends_with(".log.deleted")),
            "no deleted segment file kept: {deleted:?}"
        );
        assert!(
            !segment_bases(&broker, "kept-a-minute").contains(&0),
            "the deleted segment is still in the log"
        );
    })
    .await;
    // ...and a restart removes them.
    broker.terminate();
    broker.restart();
    with_timeout(Duration::from_secs(120), async {
        assert_eq!(watermarks(&bootstrap, "kept-a-minute", 0), (150, 400));
        assert_eq!(
            deleted_files(&broker, "kept-a-minute"),
            Vec::<String>::new()
        );

        // The broker's value, changed at runtime, for topics without their
        // own: 0 removes the files before DeleteRecords answers.
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(
            incremental_alter_configs(
                &mut client,
                4,
                "",
                &[("log.segment.delete.delay.ms", Some("0"))]
            ),
            (0, None)
        );
        delete_below_150(&bootstrap, "removed-at-once", &[]).await;
        assert_eq!(
            deleted_files(&broker, "removed-at-once"),
            Vec::<String>::new()
        );

        // A topic's own value: the files go that long after the deletion.
        let sent = delete_below_150(
            &bootstrap,
            "kept-eight-seconds",
            &[("file.delete.delay.ms", "8000")],
        )
        .await;
        assert!(!deleted_files(&broker, "kept-eight-seconds").is_empty());
        wait_until(Duration::from_secs(60), "the deleted files to go", || {
            deleted_files(&broker, "kept-eight-seconds").is_empty()
        });
        let took = sent.elapsed();
        assert!(
            took >= Duration::from_secs(8),
            "removed {took:?} after the request"
        );
        assert_eq!(watermarks(&bootstrap, "kept-eight-seconds", 0), (150, 400));
    })
    .await;
}
