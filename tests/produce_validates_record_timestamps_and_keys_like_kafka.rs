//! Produce refuses records whose CreateTime timestamp lies outside the
//! topic's `message.timestamp.before.max.ms` / `message.timestamp.after.max.ms`
//! window (Kafka 4.x: unbounded before, one hour after) with
//! INVALID_TIMESTAMP, and keyless records on a compacted topic with
//! INVALID_RECORD; the whole batch is refused, and the answer names each
//! refused record (`record_errors`, Produce v8+) as Kafka's does.
//!
//! Method: requests on the wire. Every answer asserted here is what Kafka
//! 4.1.1 (KRaft, single node) answered to the same requests: run with
//! RINGBROKER_PRODUCE_REFERENCE=host:port to send them to a Kafka instead.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record};

use common::wire::{
    encode_batch_compressed, incremental_alter_configs, plain_record, produce_request, RawClient,
};
use common::{unique, Broker, BrokerOptions};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const INVALID_TIMESTAMP: i16 = 32;
const INVALID_RECORD: i16 = 87;
const HOUR_MS: i64 = 3_600_000;
/// Produce's newest version without transactions V2 (both brokers serve it).
const PRODUCE_VERSION: i16 = 11;

fn reference() -> bool {
    std::env::var_os("RINGBROKER_PRODUCE_REFERENCE").is_some()
}

fn bootstrap_or_broker() -> (String, Option<Broker>) {
    if let Ok(reference) = std::env::var("RINGBROKER_PRODUCE_REFERENCE") {
        return (reference, None);
    }
    let broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    (broker.bootstrap(), Some(broker))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

fn create_topic(client: &mut RawClient, name: &str, configs: &[(&str, &str)]) {
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(StrBytes::from_string(name.to_string()));
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    topic.configs = configs
        .iter()
        .map(|(key, value)| {
            let mut config = CreatableTopicConfig::default();
            config.name = StrBytes::from_string(key.to_string());
            config.value = Some(StrBytes::from_string(value.to_string()));
            config
        })
        .collect();
    let mut request = CreateTopicsRequest::default();
    request.topics = vec![topic];
    request.timeout_ms = 10_000;
    let response: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 5, &request);
    assert_eq!(
        response.topics[0].error_code, 0,
        "create {name}: {response:?}"
    );
}

fn set_topic_config(client: &mut RawClient, topic: &str, name: &str, value: &str) {
    let answer = incremental_alter_configs(client, 2, topic, &[(name, Some(value))]);
    assert_eq!(answer, (0, None));
}

/// Records at `timestamps` (offsets 0, 1, ...), keyed unless `keyless`.
fn records_at(timestamps: &[i64], keyless: &[usize]) -> Vec<Record> {
    timestamps
        .iter()
        .enumerate()
        .map(|(offset, timestamp)| {
            let key = (!keyless.contains(&offset)).then(|| Bytes::from(format!("k{offset}")));
            let mut record = plain_record(offset as i64, key, Bytes::from(format!("v{offset}")));
            record.timestamp = *timestamp;
            record
        })
        .collect()
}

/// What one partition's Produce answer says.
#[derive(Debug)]
struct Answer {
    error: i16,
    base_offset: i64,
    message: Option<String>,
    record_errors: Vec<(i32, Option<String>)>,
}

fn produce(
    client: &mut RawClient,
    topic: &str,
    records: &[Record],
    compression: Compression,
) -> Answer {
    let batch = encode_batch_compressed(records, compression);
    let request = produce_request(topic, batch);
    let mut response: ProduceResponse = client.request(ApiKey::Produce, PRODUCE_VERSION, &request);
    // Kafka's broker learns of a new topic a moment after CreateTopics
    // answers; ringbroker's knows at once.
    for _ in 0..100 {
        let error = response.responses[0].partition_responses[0].error_code;
        if ![UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER].contains(&error) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        response = client.request(ApiKey::Produce, PRODUCE_VERSION, &request);
    }
    let partition = &response.responses[0].partition_responses[0];
    Answer {
        error: partition.error_code,
        base_offset: partition.base_offset,
        message: partition.error_message.as_ref().map(|m| m.to_string()),
        record_errors: partition
            .record_errors
            .iter()
            .map(|e| {
                (
                    e.batch_index,
                    e.batch_index_error_message.as_ref().map(|m| m.to_string()),
                )
            })
            .collect(),
    }
}

/// Reads "Timestamp T of message with offset O is out of range. The
/// timestamp should be within [LO, HI]" into (T, O, LO, HI).
fn out_of_range(message: &str) -> (i64, i64, i64, i64) {
    let numbers: Vec<i64> = message
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|word| !word.is_empty() && *word != "-")
        .map(|word| {
            word.parse()
                .unwrap_or_else(|_| panic!("{word} in {message}"))
        })
        .collect();
    let [timestamp, offset, low, high] = numbers[..] else {
        panic!("unexpected message {message}");
    };
    assert_eq!(
        message,
        format!(
            "Timestamp {timestamp} of message with offset {offset} is out of range. \
             The timestamp should be within [{low}, {high}]"
        )
    );
    (timestamp, offset, low, high)
}

#[test]
fn records_more_than_an_hour_ahead_are_refused_with_each_one_named() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    let topic = unique("ts-future");
    create_topic(&mut client, &topic, &[]);

    let now = now_ms();
    let timestamps = [now, now + 2 * HOUR_MS, now - 1000, now + 3 * HOUR_MS];
    for compression in [Compression::None, Compression::Lz4] {
        let sent = now_ms();
        let answer = produce(
            &mut client,
            &topic,
            &records_at(&timestamps, &[]),
            compression,
        );
        let received = now_ms();
        assert_eq!(
            answer.error, INVALID_TIMESTAMP,
            "{compression:?}: {answer:?}"
        );
        assert_eq!(answer.base_offset, -1);
        assert_eq!(
            answer.message.as_deref(),
            Some("One or more records have been rejected due to invalid timestamp")
        );
        let indexes: Vec<i32> = answer.record_errors.iter().map(|(i, _)| *i).collect();
        assert_eq!(indexes, [1, 3], "{compression:?}: {answer:?}");
        for ((index, message), expected) in answer.record_errors.iter().zip([1usize, 3]) {
            let (timestamp, offset, low, high) =
                out_of_range(message.as_deref().expect("a message for each record"));
            assert_eq!(timestamp, timestamps[expected]);
            assert_eq!(offset, i64::from(*index));
            // The window is the broker's clock when it checked: unbounded
            // before (now - Long.MAX_VALUE), one hour after.
            let broker_now = high - HOUR_MS;
            assert!(
                (sent..=received).contains(&broker_now),
                "window [{low}, {high}] not around [{sent}, {received}]"
            );
            assert_eq!(low, broker_now.wrapping_sub(i64::MAX));
        }
    }

    // Nothing of the refused batches was written: a good batch is the first.
    let answer = produce(
        &mut client,
        &topic,
        &records_at(&[now, now + HOUR_MS / 2], &[]),
        Compression::None,
    );
    assert_eq!((answer.error, answer.base_offset), (0, 0), "{answer:?}");
    assert!(answer.record_errors.is_empty());
}

#[test]
fn the_window_follows_the_topic_configs_and_log_append_time_topics_take_any_timestamp() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    let topic = unique("ts-window");
    create_topic(
        &mut client,
        &topic,
        &[("message.timestamp.before.max.ms", "60000")],
    );

    let now = now_ms();
    let answer = produce(
        &mut client,
        &topic,
        &records_at(&[now - 120_000, now - 1000], &[]),
        Compression::Gzip,
    );
    assert_eq!(answer.error, INVALID_TIMESTAMP, "{answer:?}");
    assert_eq!(answer.record_errors.len(), 1);
    let (timestamp, offset, low, high) =
        out_of_range(answer.record_errors[0].1.as_deref().unwrap());
    assert_eq!((timestamp, offset), (now - 120_000, 0));
    assert_eq!(high - low, 60_000 + HOUR_MS);

    let answer = produce(
        &mut client,
        &topic,
        &records_at(&[now - 30_000, now], &[]),
        Compression::None,
    );
    assert_eq!((answer.error, answer.base_offset), (0, 0), "{answer:?}");

    // Widening the window applies to the next batch (on Kafka's broker a
    // moment later: it applies configs as their metadata reaches it).
    set_topic_config(
        &mut client,
        &topic,
        "message.timestamp.after.max.ms",
        &(3 * HOUR_MS).to_string(),
    );
    let mut answer = produce(
        &mut client,
        &topic,
        &records_at(&[now + 2 * HOUR_MS], &[]),
        Compression::None,
    );
    while reference() && answer.error == INVALID_TIMESTAMP {
        std::thread::sleep(Duration::from_millis(100));
        answer = produce(
            &mut client,
            &topic,
            &records_at(&[now + 2 * HOUR_MS], &[]),
            Compression::None,
        );
    }
    assert_eq!((answer.error, answer.base_offset), (0, 2), "{answer:?}");

    // LogAppendTime topics stamp the broker's time and check nothing.
    let stamped = unique("ts-append");
    create_topic(
        &mut client,
        &stamped,
        &[("message.timestamp.type", "LogAppendTime")],
    );
    let answer = produce(
        &mut client,
        &stamped,
        &records_at(&[now + 5 * HOUR_MS, 0], &[]),
        Compression::None,
    );
    assert_eq!((answer.error, answer.base_offset), (0, 0), "{answer:?}");

    // No timestamp (-1) is never out of range.
    let answer = produce(
        &mut client,
        &topic,
        &records_at(&[-1], &[]),
        Compression::None,
    );
    assert_eq!((answer.error, answer.base_offset), (0, 3), "{answer:?}");
}

#[test]
fn keyless_records_on_a_compacted_topic_are_named_like_kafka() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    let topic = unique("ts-compacted");
    create_topic(&mut client, &topic, &[("cleanup.policy", "compact")]);
    let now = now_ms();

    let answer = produce(
        &mut client,
        &topic,
        &records_at(&[now, now, now], &[0, 2]),
        Compression::None,
    );
    let refused = |index: i32| {
        (
            index,
            Some(format!(
                "Compacted topic cannot accept message without key in topic partition {topic}-0"
            )),
        )
    };
    assert_eq!(answer.error, INVALID_RECORD, "{answer:?}");
    assert_eq!(answer.record_errors, [refused(0), refused(2)]);
    assert_eq!(
        answer.message,
        Some(format!(
            "One or more records have been rejected due to 2 record errors in total, and only \
             showing the first three errors at most: [RecordError(batchIndex=0, message='{m}'), \
             RecordError(batchIndex=2, message='{m}')]",
            m = refused(0).1.unwrap()
        ))
    );

    // A keyless record and a future one: the timestamp error decides the
    // code and the message, and both records are named.
    let answer = produce(
        &mut client,
        &topic,
        &records_at(&[now, now + 2 * HOUR_MS], &[0]),
        Compression::Zstd,
    );
    assert_eq!(answer.error, INVALID_TIMESTAMP, "{answer:?}");
    assert_eq!(
        answer.message.as_deref(),
        Some("One or more records have been rejected due to invalid timestamp")
    );
    assert_eq!(answer.record_errors.len(), 2, "{answer:?}");
    assert_eq!(answer.record_errors[0], refused(0));
    assert_eq!(
        out_of_range(answer.record_errors[1].1.as_deref().unwrap()).1,
        1
    );

    let answer = produce(
        &mut client,
        &topic,
        &records_at(&[now, now], &[]),
        Compression::None,
    );
    assert_eq!((answer.error, answer.base_offset), (0, 0), "{answer:?}");
}

/// Sets (`Some`) or deletes (`None`) a config of the cluster-default
/// broker resource; (error, message).
fn alter_cluster_default(
    client: &mut RawClient,
    name: &str,
    value: Option<&str>,
) -> (i16, Option<String>) {
    incremental_alter_configs(client, 4, "", &[(name, value)])
}

#[test]
fn the_broker_window_changes_at_runtime_for_topics_without_their_own() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    let topic = unique("ts-broker");
    create_topic(&mut client, &topic, &[]);
    let now = now_ms();
    let ahead = records_at(&[now + 2 * HOUR_MS], &[]);

    assert_eq!(
        alter_cluster_default(
            &mut client,
            "log.message.timestamp.after.max.ms",
            Some("-5")
        ),
        (
            42,
            Some(
                "Invalid value -5 for configuration log.message.timestamp.after.max.ms: \
                 Value must be at least 0"
                    .to_string()
            )
        )
    );
    let answer = produce(&mut client, &topic, &ahead, Compression::None);
    assert_eq!(answer.error, INVALID_TIMESTAMP, "{answer:?}");

    let window = (3 * HOUR_MS).to_string();
    assert_eq!(
        alter_cluster_default(
            &mut client,
            "log.message.timestamp.after.max.ms",
            Some(&window)
        ),
        (0, None)
    );
    let mut answer = produce(&mut client, &topic, &ahead, Compression::Snappy);
    while reference() && answer.error == INVALID_TIMESTAMP {
        std::thread::sleep(Duration::from_millis(100));
        answer = produce(&mut client, &topic, &ahead, Compression::Snappy);
    }
    assert_eq!((answer.error, answer.base_offset), (0, 0), "{answer:?}");

    assert_eq!(
        alter_cluster_default(&mut client, "log.message.timestamp.after.max.ms", None),
        (0, None)
    );
    let mut answer = produce(&mut client, &topic, &ahead, Compression::None);
    while reference() && answer.error == 0 {
        std::thread::sleep(Duration::from_millis(100));
        answer = produce(&mut client, &topic, &ahead, Compression::None);
    }
    assert_eq!(answer.error, INVALID_TIMESTAMP, "{answer:?}");
}
