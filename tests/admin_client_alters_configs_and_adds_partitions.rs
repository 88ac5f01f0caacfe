//! Goal: topics can be changed after they are made, as Kafka users do with
//! `kafka-topics --alter --partitions` and `kafka-configs --alter`:
//! CreatePartitions adds partitions that take and keep messages;
//! AlterConfigs and IncrementalAlterConfigs change a topic's overrides,
//! which DescribeConfigs then shows, the running partitions follow at once
//! (a smaller `segment.bytes` rolls segments, a smaller `max.message.bytes`
//! refuses a batch) and a restart keeps. Refusals carry Kafka 4.1's codes.
//!
//! Method: rdkafka's AdminClient (librdkafka) for CreatePartitions,
//! AlterConfigs and DescribeConfigs, an rdkafka producer and consumer for
//! the data, and hand-built IncrementalAlterConfigs requests (rust-rdkafka
//! has no call for it) for each operation and error; codes as Kafka 4.1.1
//! answered the same requests.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
};
use kafka_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AdminOptions, AlterConfig, NewPartitions, ResourceSpecifier};
use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, Timestamp};
use rdkafka::producer::FutureRecord;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

use common::kafka::{
    admin_client, assert_read_back_matches, base_consumer, create_topic, end_offsets,
    future_producer, produce_all, producer_config, read_partitions, test_messages, wait_for_topic,
};
use common::wire::RawClient;
use common::{with_timeout, Broker, BrokerOptions};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;

fn options() -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(10)))
        .operation_timeout(Some(Duration::from_secs(10)))
}

/// Log segment files of one partition.
fn segment_count(data_dir: &Path, topic: &str, partition: i32) -> usize {
    std::fs::read_dir(data_dir.join(format!("{topic}-{partition}")))
        .expect("partition directory")
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log"))
        })
        .count()
}

/// The topic's overrides as DescribeConfigs v4 lists them (source 1,
/// DYNAMIC_TOPIC_CONFIG).
fn overrides(client: &mut RawClient, topic: &str) -> BTreeMap<String, String> {
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = RESOURCE_TOPIC;
    resource.resource_name = StrBytes::from_string(topic.to_string());
    resource.configuration_keys = None;
    let mut request = DescribeConfigsRequest::default();
    request.resources = vec![resource];
    let response: DescribeConfigsResponse = client.request(ApiKey::DescribeConfigs, 4, &request);
    let result = &response.results[0];
    assert_eq!(result.error_code, 0, "DescribeConfigs {topic}");
    result
        .configs
        .iter()
        .filter(|c| c.config_source == 1)
        .map(|c| {
            (
                c.name.to_string(),
                c.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
            )
        })
        .collect()
}

type Op<'a> = (&'a str, i8, Option<&'a str>);
/// A resource of an IncrementalAlterConfigs request: type, name, changes.
type Resource<'a> = (i8, &'a str, &'a [Op<'a>]);

/// One IncrementalAlterConfigs request; (error code, message) per resource.
fn incremental(
    client: &mut RawClient,
    version: i16,
    resources: &[Resource],
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let mut request = IncrementalAlterConfigsRequest::default();
    request.validate_only = validate_only;
    request.resources = resources
        .iter()
        .map(|(resource_type, name, ops)| {
            let mut resource = AlterConfigsResource::default();
            resource.resource_type = *resource_type;
            resource.resource_name = StrBytes::from_string(name.to_string());
            resource.configs = ops
                .iter()
                .map(|(key, op, value)| {
                    let mut config = AlterableConfig::default();
                    config.name = StrBytes::from_string(key.to_string());
                    config.config_operation = *op;
                    config.value = value.map(|v| StrBytes::from_string(v.to_string()));
                    config
                })
                .collect();
            resource
        })
        .collect();
    let response: IncrementalAlterConfigsResponse =
        client.request(ApiKey::IncrementalAlterConfigs, version, &request);
    assert_eq!(
        response.responses.len(),
        resources.len(),
        "one answer per resource"
    );
    for (answer, (resource_type, name, _)) in response.responses.iter().zip(resources) {
        assert_eq!(answer.resource_type, *resource_type, "resource type echoed");
        assert_eq!(answer.resource_name.as_str(), *name, "resource name echoed");
    }
    response
        .responses
        .iter()
        .map(|r| {
            (
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}

/// Waits until FindCoordinator answers for a group, which creates
/// `__consumer_offsets`.
fn ensure_offsets_topic(bootstrap: &str) {
    let mut client = RawClient::connect(bootstrap);
    let mut request = FindCoordinatorRequest::default();
    request.key_type = 0;
    request.coordinator_keys = vec![StrBytes::from_static_str("any-group")];
    for _ in 0..100 {
        let response: FindCoordinatorResponse =
            client.request(ApiKey::FindCoordinator, 4, &request);
        if response.coordinators[0].error_code == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no group coordinator after 10 s");
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_partitions_take_messages_and_survive_a_restart() {
    const TOPIC: &str = "grown";
    let mut broker = Broker::start(
        BrokerOptions::default()
            .cores(2)
            .auto_create_topics_enable(false),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(120), async {
        create_topic(&bootstrap, TOPIC, 1).await;
        let admin = admin_client(&bootstrap);

        let results = admin
            .create_partitions([&NewPartitions::new(TOPIC, 4)], &options())
            .await
            .expect("CreatePartitions");
        assert_eq!(results, vec![Ok(TOPIC.to_string())], "1 -> 4 partitions");
        wait_for_topic(&bootstrap, TOPIC, 4, Duration::from_secs(30));

        // Not an increase, and an unknown topic.
        for (topic, count, expected) in [
            (TOPIC, 4, RDKafkaErrorCode::InvalidPartitions),
            (TOPIC, 2, RDKafkaErrorCode::InvalidPartitions),
            ("never-made", 3, RDKafkaErrorCode::UnknownTopicOrPartition),
        ] {
            let results = admin
                .create_partitions([&NewPartitions::new(topic, count)], &options())
                .await
                .expect("CreatePartitions");
            assert_eq!(
                results,
                vec![Err((topic.to_string(), expected))],
                "{topic} to {count} partitions"
            );
        }
        // The internal topics keep their count: groups are placed on them by
        // it. (A consumer group makes __consumer_offsets exist first.)
        ensure_offsets_topic(&bootstrap);
        let results = admin
            .create_partitions([&NewPartitions::new("__consumer_offsets", 100)], &options())
            .await
            .expect("CreatePartitions of __consumer_offsets");
        assert_eq!(
            results,
            vec![Err((
                "__consumer_offsets".to_string(),
                RDKafkaErrorCode::InvalidRequest
            ))],
            "__consumer_offsets to 100 partitions"
        );

        // Every partition, the new ones included, takes messages.
        let producer = future_producer(&producer_config(&bootstrap));
        let messages = test_messages(400, 4);
        let acked = produce_all(&producer, TOPIC, &messages).await;
        drop(producer);
        let ends = end_offsets(&acked);
        assert_eq!(ends.len(), 4, "messages on every partition: {ends:?}");

        broker.restart();
        wait_for_topic(&bootstrap, TOPIC, 4, Duration::from_secs(30));
        let received = read_partitions(&bootstrap, TOPIC, &ends, Duration::from_secs(60));
        assert_read_back_matches("after a restart", &acked, &received);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altered_topic_configs_apply_at_once_and_survive_a_restart() {
    const TOPIC: &str = "altered";
    const SMALL_SEGMENT: &str = "16384";
    // Two shards: the controller (shard 0) alters, the partition may be
    // on the other.
    let mut broker = Broker::start(
        BrokerOptions::default()
            .cores(2)
            .auto_create_topics_enable(false),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(120), async {
        create_topic(&bootstrap, TOPIC, 1).await;
        let admin = admin_client(&bootstrap);
        let producer = future_producer(&producer_config(&bootstrap));

        // Before: the default 1 GiB segments hold everything in one.
        let first = produce_all(&producer, TOPIC, &test_messages(200, 1)).await;
        assert_eq!(
            segment_count(broker.data_dir(), TOPIC, 0),
            1,
            "one segment before the alter"
        );

        // AlterConfigs (librdkafka) replaces the overrides.
        let alter = AlterConfig::new(ResourceSpecifier::Topic(TOPIC))
            .set("segment.bytes", SMALL_SEGMENT)
            .set("retention.ms", "86400000");
        let results = admin
            .alter_configs([&alter], &options())
            .await
            .expect("AlterConfigs");
        assert!(results[0].is_ok(), "AlterConfigs: {results:?}");
        let mut client = RawClient::connect(&bootstrap);
        let expected = map(&[
            ("retention.ms", "86400000"),
            ("segment.bytes", SMALL_SEGMENT),
        ]);
        assert_eq!(
            overrides(&mut client, TOPIC),
            expected,
            "after AlterConfigs"
        );

        // The open partition follows: the next append finds the active
        // segment (200 messages, over 16 KiB) full and rolls it.
        let second = produce_all(&producer, TOPIC, &test_messages(200, 1)).await;
        let segments = segment_count(broker.data_dir(), TOPIC, 0);
        assert!(
            segments >= 2,
            "segment.bytes {SMALL_SEGMENT} did not roll the open log: {segments} segment(s)"
        );

        // A smaller max.message.bytes refuses a batch past it at once.
        let alter = AlterConfig::new(ResourceSpecifier::Topic(TOPIC))
            .set("segment.bytes", SMALL_SEGMENT)
            .set("max.message.bytes", "3000");
        let results = admin
            .alter_configs([&alter], &options())
            .await
            .expect("AlterConfigs");
        assert!(results[0].is_ok(), "AlterConfigs: {results:?}");
        let big = vec![b'x'; 5000];
        let refused = producer
            .send(
                FutureRecord::<[u8], [u8]>::to(TOPIC).payload(&big[..]),
                Duration::from_secs(10),
            )
            .await;
        match refused {
            Err((KafkaError::MessageProduction(code), _)) => assert_eq!(
                code,
                RDKafkaErrorCode::MessageSizeTooLarge,
                "a 5000-byte record past max.message.bytes 3000"
            ),
            other => panic!("a 5000-byte record past max.message.bytes 3000: {other:?}"),
        }

        // message.timestamp.type reaches the open partition too: the next
        // batch gets the broker's time.
        let alter = AlterConfig::new(ResourceSpecifier::Topic(TOPIC))
            .set("segment.bytes", SMALL_SEGMENT)
            .set("message.timestamp.type", "LogAppendTime");
        let results = admin
            .alter_configs([&alter], &options())
            .await
            .expect("AlterConfigs");
        assert!(results[0].is_ok(), "AlterConfigs: {results:?}");
        let stamped = producer
            .send(
                FutureRecord::<[u8], [u8]>::to(TOPIC)
                    .payload(&b"stamped"[..])
                    .timestamp(1_000),
                Duration::from_secs(10),
            )
            .await
            .expect("produce after LogAppendTime");
        let consumer = base_consumer(&bootstrap);
        let mut assignment = TopicPartitionList::new();
        assignment
            .add_partition_offset(TOPIC, 0, Offset::Offset(stamped.offset))
            .expect("assignment");
        consumer.assign(&assignment).expect("assign");
        let timestamp = match consumer.poll(Duration::from_secs(10)) {
            Some(Ok(message)) => message.timestamp(),
            Some(Err(e)) => panic!("reading the stamped message: {e}"),
            None => panic!("the stamped message did not come back"),
        };
        match timestamp {
            Timestamp::LogAppendTime(ms) => assert!(ms > 1_000, "log append time {ms}"),
            other => panic!("timestamp after message.timestamp.type=LogAppendTime: {other:?}"),
        }
        drop(consumer);
        drop(producer);

        // AlterConfigs again: what it does not list goes back to the
        // default (retention.ms went with an earlier one).
        let alter =
            AlterConfig::new(ResourceSpecifier::Topic(TOPIC)).set("segment.bytes", SMALL_SEGMENT);
        let results = admin
            .alter_configs([&alter], &options())
            .await
            .expect("AlterConfigs");
        assert!(results[0].is_ok(), "AlterConfigs: {results:?}");
        assert_eq!(
            overrides(&mut client, TOPIC),
            map(&[("segment.bytes", SMALL_SEGMENT)]),
            "AlterConfigs replaces every override"
        );

        broker.restart();
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(
            overrides(&mut client, TOPIC),
            map(&[("segment.bytes", SMALL_SEGMENT)]),
            "overrides after a restart"
        );
        let acked: Vec<_> = first.into_iter().chain(second).collect();
        let ends = end_offsets(&acked);
        let received = read_partitions(&bootstrap, TOPIC, &ends, Duration::from_secs(60));
        assert_read_back_matches("after alters and a restart", &acked, &received);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_alter_configs_operations_and_refusals_answer_like_kafka() {
    const TOPIC: &str = "incremental";
    let broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(60), async {
        create_topic(&bootstrap, TOPIC, 1).await;
    })
    .await;
    let mut client = RawClient::connect(&bootstrap);
    let ok = vec![(0, None)];
    for version in [0, 1] {
        let t: &[Resource] = &[(
            RESOURCE_TOPIC,
            TOPIC,
            &[
                ("retention.ms", SET, Some("1000")),
                ("cleanup.policy", SET, Some("compact")),
            ],
        )];
        assert_eq!(
            incremental(&mut client, version, t, false),
            ok,
            "v{version} SET"
        );
        assert_eq!(
            overrides(&mut client, TOPIC),
            map(&[("cleanup.policy", "compact"), ("retention.ms", "1000")])
        );

        // APPEND and SUBTRACT work on a LIST's elements, each once.
        for (op, value, expected) in [
            (APPEND, "delete", "compact,delete"),
            (APPEND, "delete", "compact,delete"),
            (SUBTRACT, "compact", "delete"),
            (SUBTRACT, "compact", "delete"),
            (SUBTRACT, "delete", ""),
        ] {
            let t: &[Resource] = &[(
                RESOURCE_TOPIC,
                TOPIC,
                &[("cleanup.policy", op, Some(value))],
            )];
            assert_eq!(
                incremental(&mut client, version, t, false),
                ok,
                "op {op} {value}"
            );
            assert_eq!(
                overrides(&mut client, TOPIC)
                    .get("cleanup.policy")
                    .map(String::as_str),
                Some(expected),
                "v{version} op {op} {value}"
            );
        }

        // validate_only changes nothing.
        let t: &[Resource] = &[(RESOURCE_TOPIC, TOPIC, &[("retention.ms", SET, Some("77"))])];
        assert_eq!(
            incremental(&mut client, version, t, true),
            ok,
            "validate only"
        );
        assert_eq!(
            overrides(&mut client, TOPIC)
                .get("retention.ms")
                .map(String::as_str),
            Some("1000"),
            "validate_only changed the topic"
        );

        // DELETE: the override goes; deleting what is not set, or no
        // config at all, is no error.
        let t: &[Resource] = &[(
            RESOURCE_TOPIC,
            TOPIC,
            &[
                ("retention.ms", DELETE, None),
                ("cleanup.policy", DELETE, None),
                ("segment.ms", DELETE, None),
                ("foo.bar", DELETE, None),
            ],
        )];
        assert_eq!(incremental(&mut client, version, t, false), ok, "DELETE");
        assert!(overrides(&mut client, TOPIC).is_empty(), "overrides left");

        // Refusals, one resource at a time; nothing changes.
        let refusals: [(&str, Resource, i16, &str); 12] = [
            (
                "APPEND to a non-list",
                (RESOURCE_TOPIC, TOPIC, &[("retention.ms", APPEND, Some("5"))]),
                INVALID_CONFIG,
                "Can't APPEND to key retention.ms because its type is not LIST.",
            ),
            (
                "SUBTRACT from a non-list",
                (RESOURCE_TOPIC, TOPIC, &[("retention.ms", SUBTRACT, Some("5"))]),
                INVALID_CONFIG,
                "Can't SUBTRACT to key retention.ms because its type is not LIST.",
            ),
            (
                "an unknown name",
                (RESOURCE_TOPIC, TOPIC, &[("foo.bar", SET, Some("1"))]),
                INVALID_CONFIG,
                "Unknown topic config name: foo.bar",
            ),
            (
                "a value of the wrong type",
                (RESOURCE_TOPIC, TOPIC, &[("retention.ms", SET, Some("abc"))]),
                INVALID_CONFIG,
                "Invalid value abc for configuration retention.ms: Not a number of type LONG",
            ),
            (
                "a value not in the list",
                (RESOURCE_TOPIC, TOPIC, &[("cleanup.policy", APPEND, Some("bogus"))]),
                INVALID_CONFIG,
                "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete",
            ),
            (
                "a null value to SET",
                (RESOURCE_TOPIC, TOPIC, &[("retention.ms", SET, None)]),
                INVALID_REQUEST,
                "Null value not supported for : retention.ms",
            ),
            (
                "null values to SET and APPEND",
                (
                    RESOURCE_TOPIC,
                    TOPIC,
                    &[("retention.ms", SET, None), ("segment.ms", APPEND, None)],
                ),
                INVALID_REQUEST,
                "Null value not supported for : retention.ms, segment.ms",
            ),
            (
                "a name twice",
                (
                    RESOURCE_TOPIC,
                    TOPIC,
                    &[("retention.ms", SET, Some("1")), ("retention.ms", SET, Some("2"))],
                ),
                INVALID_REQUEST,
                "Error due to duplicate config keys",
            ),
            (
                "an unknown topic",
                (RESOURCE_TOPIC, "never-made", &[("retention.ms", SET, Some("1"))]),
                UNKNOWN_TOPIC_OR_PARTITION,
                "The topic 'never-made' does not exist.",
            ),
            (
                "an empty topic name",
                (RESOURCE_TOPIC, "", &[("retention.ms", SET, Some("1"))]),
                INVALID_REQUEST,
                "Default topic resources are not allowed.",
            ),
            (
                "a static broker config",
                (RESOURCE_BROKER, "0", &[("log.dirs", SET, Some("/x"))]),
                INVALID_REQUEST,
                "Cannot update these configs dynamically: Set(log.dirs)",
            ),
            (
                "an unknown resource type",
                (99, "x", &[("a", SET, Some("1"))]),
                INVALID_REQUEST,
                "Unknown resource type 99",
            ),
        ];
        for (what, resource, code, message) in refusals {
            let answers = incremental(&mut client, version, &[resource], false);
            assert_eq!(
                answers,
                vec![(code, Some(message.to_string()))],
                "v{version} {what}"
            );
            assert!(
                overrides(&mut client, TOPIC).is_empty(),
                "{what} changed the topic"
            );
        }
        let answers = incremental(
            &mut client,
            version,
            &[(RESOURCE_TOPIC, "a/b", &[("retention.ms", SET, Some("1"))])],
            false,
        );
        assert_eq!(
            answers[0].0, INVALID_TOPIC_EXCEPTION,
            "v{version} a bad name"
        );

        // The same resource twice: both refused, neither applied.
        let t: &[Op] = &[("retention.ms", SET, Some("1"))];
        let answers = incremental(
            &mut client,
            version,
            &[(RESOURCE_TOPIC, TOPIC, t), (RESOURCE_TOPIC, TOPIC, t)],
            false,
        );
        let twice = (
            INVALID_REQUEST,
            Some("Each resource must appear at most once.".to_string()),
        );
        assert_eq!(
            answers,
            vec![twice.clone(), twice],
            "v{version} resource twice"
        );
        assert!(overrides(&mut client, TOPIC).is_empty());
    }
}
