//! Goal: librdkafka's AdminClient can manage topics: CreateTopics with a
//! partition count and configs, the Kafka error codes for a repeat name, an
//! impossible replication factor, a zero partition count and a name given
//! twice in one request (and in DeleteTopics, names and ids given twice,
//! with both or neither, or as a name and its id), DescribeConfigs
//! listing every topic config with its default next to the override, and
//! DeleteTopics, after which Metadata no longer lists the topic.
//!
//! Method: a broker with topic auto-creation off (so a Metadata request
//! cannot bring a deleted topic back), driven by rdkafka's AdminClient and a
//! consumer client for Metadata.

mod common;

use std::time::Duration;

use rdkafka::admin::{AdminOptions, ConfigSource, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::consumer::Consumer;
use rdkafka::types::RDKafkaErrorCode;

use common::kafka::{admin_client, base_consumer, wait_for_topic};
use common::wire::{create_topic_request, metadata_on, RawClient};
use common::{open_files_limit, with_timeout, Broker, BrokerOptions};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    DescribeConfigsRequest, DescribeConfigsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const TOPIC: &str = "admin-managed";
const RETENTION_MS_OVERRIDE: &str = "123456";
const RESOURCE_TYPE_TOPIC: i8 = 2;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

/// Topic configs every Kafka broker describes, with Kafka's defaults where
/// the value does not depend on broker settings.
const STANDARD_TOPIC_CONFIGS: [(&str, Option<&str>); 7] = [
    ("cleanup.policy", Some("delete")),
    ("compression.type", Some("producer")),
    ("message.timestamp.type", Some("CreateTime")),
    ("retention.bytes", None),
    ("segment.bytes", None),
    ("max.message.bytes", None),
    ("segment.ms", None),
];

fn topic_names(bootstrap: &str) -> Vec<String> {
    base_consumer(bootstrap)
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("Metadata for all topics")
        .topics()
        .iter()
        .map(|topic| topic.name().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_client_creates_describes_and_deletes_topics() {
    let broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    let bootstrap = broker.bootstrap();
    let admin = admin_client(&bootstrap);
    let options = AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(10)))
        .operation_timeout(Some(Duration::from_secs(10)));

    with_timeout(Duration::from_secs(120), async {
        // Create with a partition count and a config override.
        let new_topic = NewTopic::new(TOPIC, 3, TopicReplication::Fixed(1))
            .set("retention.ms", RETENTION_MS_OVERRIDE);
        let results = admin
            .create_topics([&new_topic], &options)
            .await
            .expect("CreateTopics");
        assert_eq!(results, vec![Ok(TOPIC.to_string())], "first CreateTopics");
        wait_for_topic(&bootstrap, TOPIC, 3, Duration::from_secs(30));

        // The same name again.
        let results = admin
            .create_topics([&new_topic], &options)
            .await
            .expect("CreateTopics again");
        assert_eq!(
            results,
            vec![Err((
                TOPIC.to_string(),
                RDKafkaErrorCode::TopicAlreadyExists
            ))],
            "second CreateTopics of the same name"
        );

        // Three replicas on a one-node cluster.
        let replicated = NewTopic::new("admin-three-replicas", 1, TopicReplication::Fixed(3));
        let results = admin
            .create_topics([&replicated], &options)
            .await
            .expect("CreateTopics with replication factor 3");
        assert_eq!(
            results,
            vec![Err((
                "admin-three-replicas".to_string(),
                RDKafkaErrorCode::InvalidReplicationFactor
            ))],
            "replication factor 3 on one broker"
        );

        // Zero partitions.
        let empty = NewTopic::new("admin-zero-partitions", 0, TopicReplication::Fixed(1));
        let results = admin
            .create_topics([&empty], &options)
            .await
            .expect("CreateTopics with 0 partitions");
        assert_eq!(
            results,
            vec![Err((
                "admin-zero-partitions".to_string(),
                RDKafkaErrorCode::InvalidPartitions
            ))],
            "0 partitions"
        );
        let names = topic_names(&bootstrap);
        assert!(
            !names
                .iter()
                .any(|name| name.starts_with("admin-three") || name.starts_with("admin-zero")),
            "a refused topic was created anyway: {names:?}"
        );

        // DescribeConfigs: the override, and every standard config with its
        // default.
        let described = admin
            .describe_configs([&ResourceSpecifier::Topic(TOPIC)], &options)
            .await
            .expect("DescribeConfigs");
        assert_eq!(described.len(), 1, "one resource described");
        let resource = described[0]
            .as_ref()
            .unwrap_or_else(|code| panic!("DescribeConfigs {TOPIC}: {code:?}"));
        let entries = resource.entry_map();
        let retention = entries
            .get("retention.ms")
            .unwrap_or_else(|| panic!("retention.ms not described: {:?}", resource.entries));
        assert_eq!(
            retention.value.as_deref(),
            Some(RETENTION_MS_OVERRIDE),
            "retention.ms value"
        );
        assert!(
            !retention.is_default,
            "retention.ms is an override, not a default"
        );
        assert_eq!(
            retention.source,
            ConfigSource::DynamicTopic,
            "retention.ms source"
        );
        // As Kafka 4.1 with ELR on: the cluster-level value it keeps.
        let min_isr = entries
            .get("min.insync.replicas")
            .expect("min.insync.replicas");
        assert_eq!(
            (min_isr.value.as_deref(), &min_isr.source),
            (Some("1"), &ConfigSource::DynamicDefaultBroker)
        );
        for (name, kafka_default) in STANDARD_TOPIC_CONFIGS {
            let entry = entries.get(name).unwrap_or_else(|| {
                panic!(
                    "{name} is not described; got {:?}",
                    resource.entries.iter().map(|e| &e.name).collect::<Vec<_>>()
                )
            });
            assert!(entry.is_default, "{name} was not overridden: {entry:?}");
            assert!(
                entry.value.is_some(),
                "{name} must carry its default value: {entry:?}"
            );
            if let Some(kafka_default) = kafka_default {
                assert_eq!(
                    entry.value.as_deref(),
                    Some(kafka_default),
                    "{name} default"
                );
            }
        }

        // DescribeConfigs of a topic that does not exist. rdkafka drops the
        // per-resource error code (it never calls
        // rd_kafka_ConfigResource_error), so this one goes over the wire.
        let mut client = RawClient::connect(&bootstrap);
        let request = DescribeConfigsRequest::default().with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(RESOURCE_TYPE_TOPIC)
                .with_resource_name(StrBytes::from_static_str("admin-no-such-topic"))
                .with_configuration_keys(None),
        ]);
        let response: DescribeConfigsResponse =
            client.request(ApiKey::DescribeConfigs, 1, &request);
        assert_eq!(response.results.len(), 1, "one result: {response:?}");
        assert_eq!(
            response.results[0].error_code, UNKNOWN_TOPIC_OR_PARTITION,
            "DescribeConfigs v1 of a missing topic: {response:?}"
        );
        assert!(
            response.results[0].configs.is_empty(),
            "no configs for a missing topic: {response:?}"
        );

        // Give it data, so the re-created topic below can show it starts empty.
        let producer = common::kafka::future_producer(&common::kafka::producer_config(&bootstrap));
        let acked =
            common::kafka::produce_all(&producer, TOPIC, &common::kafka::test_messages(30, 3))
                .await;
        assert_eq!(acked.len(), 30);
        drop(producer);

        // Delete, then Metadata no longer lists it; deleting again fails.
        let results = admin
            .delete_topics(&[TOPIC], &options)
            .await
            .expect("DeleteTopics");
        assert_eq!(results, vec![Ok(TOPIC.to_string())], "DeleteTopics");
        common::wait_until(
            Duration::from_secs(10),
            "the deleted topic to leave Metadata",
            || !topic_names(&bootstrap).iter().any(|name| name == TOPIC),
        );
        let results = admin
            .delete_topics(&[TOPIC], &options)
            .await
            .expect("DeleteTopics again");
        assert_eq!(
            results,
            vec![Err((
                TOPIC.to_string(),
                RDKafkaErrorCode::UnknownTopicOrPartition
            ))],
            "DeleteTopics of a deleted topic"
        );

        // The name can be used again, empty.
        let results = admin
            .create_topics(
                [&NewTopic::new(TOPIC, 2, TopicReplication::Fixed(1))],
                &options,
            )
            .await
            .expect("CreateTopics after delete");
        assert_eq!(
            results,
            vec![Ok(TOPIC.to_string())],
            "re-create after delete"
        );
        wait_for_topic(&bootstrap, TOPIC, 2, Duration::from_secs(30));
        for partition in 0..2 {
            assert_eq!(
                common::kafka::watermarks(&bootstrap, TOPIC, partition),
                (0, 0),
                "re-created topic partition {partition} is empty"
            );
        }
    })
    .await;
}

/// Goal: one CreateTopics request may create at most 10,000 partitions in
/// all, as Kafka 4's controller allows: past it every topic of the request
/// gets POLICY_VIOLATION and none is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_topics_request_for_more_than_10000_partitions_is_refused() {
    let broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    let bootstrap = broker.bootstrap();
    let admin = admin_client(&bootstrap);
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let first = NewTopic::new("admin-half-of-many", 6000, TopicReplication::Fixed(1));
    let second = NewTopic::new("admin-other-half-of-many", 4001, TopicReplication::Fixed(1));
    let results = with_timeout(
        Duration::from_secs(60),
        admin.create_topics([&first, &second], &options),
    )
    .await
    .expect("CreateTopics");
    assert_eq!(
        results,
        vec![
            Err((
                "admin-half-of-many".to_string(),
                RDKafkaErrorCode::PolicyViolation
            )),
            Err((
                "admin-other-half-of-many".to_string(),
                RDKafkaErrorCode::PolicyViolation
            )),
        ],
        "10,001 partitions in one request"
    );
    let names = topic_names(&bootstrap);
    assert!(
        !names.iter().any(|name| name.contains("half-of-many")),
        "a refused topic exists: {names:?}"
    );
}

/// Goal: a CreateTopics request naming a topic twice gets one answer for
/// it, INVALID_REQUEST "Duplicate topic name.", and creates it neither
/// time, while the other topics of the request are created, as Kafka 4.1.1
/// answered the same request. (librdkafka refuses duplicates itself, so the
/// request is sent raw.)
#[test]
fn a_topic_named_twice_in_one_create_topics_request_is_refused_once() {
    let broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    let bootstrap = broker.bootstrap();
    let mut client = RawClient::connect(&bootstrap);
    let topic = |name: &str| {
        let mut topic = CreatableTopic::default();
        topic.name = TopicName(StrBytes::from_string(name.to_string()));
        topic.num_partitions = 1;
        topic.replication_factor = 1;
        topic
    };
    let mut request = CreateTopicsRequest::default();
    request.topics = vec![
        topic("admin-twice"),
        topic("admin-once"),
        topic("admin-twice"),
    ];
    request.timeout_ms = 10_000;
    let response: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 7, &request);
    let answers: Vec<(String, i16, Option<String>)> = response
        .topics
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.error_code,
                t.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    assert_eq!(
        answers,
        vec![
            (
                "admin-twice".to_string(),
                RDKafkaErrorCode::InvalidRequest as i16,
                Some("Duplicate topic name.".to_string())
            ),
            ("admin-once".to_string(), 0, None),
        ]
    );
    let names = topic_names(&bootstrap);
    assert!(names.contains(&"admin-once".to_string()), "{names:?}");
    assert!(!names.contains(&"admin-twice".to_string()), "{names:?}");
}

/// Goal: topics that would take this broker's partitions past what its
/// open-files limit can hold are refused with INVALID_PARTITIONS (as
/// Redpanda does), so that the broker never runs out of descriptors for
/// its logs, which would stop it and every restart after; topics within
/// the budget are created; room stays for the internal topics, so a
/// consumer group still gets its coordinator once user topics fill the
/// budget; and the broker restarts after kill -9.
///
/// Method: the broker's own limit (from /proc) sets
/// `--topic-fds-per-partition` so that the budget is about 200 partitions,
/// 100 of them kept for `__consumer_offsets` and `__transaction_state`
/// (50 each by default); user topics then fill the rest exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_past_the_open_files_budget_are_refused_with_invalid_partitions() {
    const INTERNAL_PARTITIONS: u64 = 100;
    let mut broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    let (limit, _) = open_files_limit(broker.pid(), None);
    let (fds_per_partition, budget) = common::fds_per_partition_for_budget(limit, 200);
    assert!(
        budget >= INTERNAL_PARTITIONS + 50,
        "a budget of {budget} partitions under limit {limit}"
    );
    let room = budget - INTERNAL_PARTITIONS;
    broker.restart_with_arg("--topic-fds-per-partition", fds_per_partition);
    let bootstrap = broker.bootstrap();
    let admin = admin_client(&bootstrap);
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let create = |name: &'static str, partitions: u64| {
        let admin = &admin;
        let options = &options;
        async move {
            let topic = NewTopic::new(name, partitions as i32, TopicReplication::Fixed(1));
            with_timeout(
                Duration::from_secs(60),
                admin.create_topics([&topic], options),
            )
            .await
            .expect("CreateTopics")
        }
    };

    let results = create("admin-most-of-the-budget", room - 1).await;
    assert_eq!(
        results,
        vec![Ok("admin-most-of-the-budget".to_string())],
        "{} partitions with {room} left for user topics",
        room - 1
    );
    let results = create("admin-past-the-budget", 2).await;
    assert_eq!(
        results,
        vec![Err((
            "admin-past-the-budget".to_string(),
            RDKafkaErrorCode::InvalidPartitions
        ))],
        "2 partitions more with 1 left"
    );
    let results = create("admin-last-of-the-budget", 1).await;
    assert_eq!(
        results,
        vec![Ok("admin-last-of-the-budget".to_string())],
        "the budget's last partition"
    );

    // The group coordinator's topic is created all the same.
    let mut config = common::kafka::consumer_config(&bootstrap);
    config.set("group.id", "admin-budget-group");
    let consumer: rdkafka::consumer::BaseConsumer = config.create().expect("consumer");
    let mut partitions = rdkafka::TopicPartitionList::new();
    partitions.add_partition("admin-last-of-the-budget", 0);
    consumer
        .committed_offsets(partitions, Duration::from_secs(30))
        .expect("OffsetFetch through the group coordinator");
    wait_for_topic(
        &bootstrap,
        "__consumer_offsets",
        50,
        Duration::from_secs(30),
    );

    broker.kill9();
    broker.restart();
    wait_for_topic(
        &bootstrap,
        "admin-most-of-the-budget",
        (room - 1) as i32,
        Duration::from_secs(30),
    );
    wait_for_topic(
        &bootstrap,
        "admin-last-of-the-budget",
        1,
        Duration::from_secs(30),
    );
    let names = topic_names(&bootstrap);
    assert!(
        !names.iter().any(|name| name == "admin-past-the-budget"),
        "the refused topic exists: {names:?}"
    );
}

/// Goal: DeleteTopics refuses, with INVALID_REQUEST and Kafka's messages,
/// an entry with neither a name nor an id, one with both, a name or an id
/// given twice, and a name whose id another entry gives; none of those
/// topics is deleted, while the rest of the request is carried out; unknown
/// ids and names get Kafka's messages. Kafka 4.1.1 answered this request
/// with the same rows (in a shuffled order, so they are compared as a set)
/// and left the same topics. Real clients do not send duplicates, so the
/// request is raw.
#[test]
fn a_delete_topics_request_refuses_duplicates_and_malformed_entries_like_kafka() {
    let broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    let bootstrap = broker.bootstrap();
    let mut client = RawClient::connect(&bootstrap);
    let names = ["del-a", "del-b", "del-c", "del-d", "del-e"];
    for name in names {
        let created: CreateTopicsResponse =
            client.request(ApiKey::CreateTopics, 7, &create_topic_request(name, 1));
        assert_eq!(created.topics[0].error_code, 0, "{name}");
    }
    let metadata = metadata_on(&mut client, Some(&names), 12);
    let id = |name: &str| {
        metadata
            .topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.as_str() == name))
            .map(|t| t.topic_id)
            .unwrap_or_else(|| panic!("{name} has no id"))
    };
    let nil = uuid::Uuid::nil();
    let unknown_id = uuid::Uuid::from_bytes([0x22; 16]);
    let mut request = DeleteTopicsRequest::default();
    request.timeout_ms = 10_000;
    request.topics = vec![
        delete_entry(None, nil),
        delete_entry(Some("del-a"), id("del-a")),
        delete_entry(Some("del-b"), nil),
        delete_entry(Some("del-b"), nil),
        delete_entry(Some("del-missing"), nil),
        delete_entry(Some("del-missing"), nil),
        delete_entry(None, id("del-c")),
        delete_entry(None, id("del-c")),
        delete_entry(None, unknown_id),
        delete_entry(None, id("del-d")),
        delete_entry(Some("del-d"), nil),
        delete_entry(Some("del-e"), nil),
        delete_entry(Some("del-nope"), nil),
    ];
    let response: DeleteTopicsResponse = client.request(ApiKey::DeleteTopics, 6, &request);
    let mut answers = delete_rows(&response);
    answers.sort();
    let invalid = RDKafkaErrorCode::InvalidRequest as i16;
    let row = |name: Option<&str>, id, code, message: Option<&str>| {
        (
            name.map(str::to_string),
            id,
            code,
            message.map(str::to_string),
        )
    };
    let mut expected = vec![
        row(
            None,
            nil,
            invalid,
            Some("Neither topic name nor id were specified."),
        ),
        row(
            Some("del-a"),
            id("del-a"),
            invalid,
            Some("You may not specify both topic name and topic id."),
        ),
        row(Some("del-b"), nil, invalid, Some("Duplicate topic name.")),
        row(
            Some("del-missing"),
            nil,
            invalid,
            Some("Duplicate topic name."),
        ),
        row(None, id("del-c"), invalid, Some("Duplicate topic id.")),
        row(
            None,
            unknown_id,
            RDKafkaErrorCode::UnknownTopicId as i16,
            Some("This server does not host this topic ID."),
        ),
        row(
            Some("del-d"),
            id("del-d"),
            invalid,
            Some("The provided topic name maps to an ID that was already supplied."),
        ),
        row(Some("del-e"), id("del-e"), 0, None),
        row(
            Some("del-nope"),
            nil,
            UNKNOWN_TOPIC_OR_PARTITION,
            Some("This server does not host this topic-partition."),
        ),
    ];
    expected.sort();
    assert_eq!(answers, expected);
    let left = topic_names(&bootstrap);
    for name in ["del-a", "del-b", "del-c", "del-d"] {
        assert!(
            left.contains(&name.to_string()),
            "{name} was deleted: {left:?}"
        );
    }
    assert!(!left.contains(&"del-e".to_string()), "{left:?}");

    // Before v6 topics are named only; a name given twice is refused alike.
    let mut request = DeleteTopicsRequest::default();
    request.timeout_ms = 10_000;
    request.topic_names = ["del-a", "del-b", "del-a"]
        .iter()
        .map(|n| TopicName(StrBytes::from_static_str(n)))
        .collect();
    let response: DeleteTopicsResponse = client.request(ApiKey::DeleteTopics, 5, &request);
    let mut answers: Vec<(String, i16, Option<String>)> = response
        .responses
        .iter()
        .map(|r| {
            (
                r.name.as_ref().map(|n| n.to_string()).unwrap_or_default(),
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    answers.sort();
    assert_eq!(
        answers,
        vec![
            (
                "del-a".to_string(),
                invalid,
                Some("Duplicate topic name.".to_string())
            ),
            ("del-b".to_string(), 0, None),
        ]
    );
    let left = topic_names(&bootstrap);
    assert!(left.contains(&"del-a".to_string()), "{left:?}");
    assert!(!left.contains(&"del-b".to_string()), "{left:?}");
}

/// Goal: with `delete.topic.enable=false` DeleteTopics refuses every entry
/// first, echoing each as given (an entry given by id gets no name, so an
/// id cannot be turned into a name): TOPIC_DELETION_DISABLED from v3,
/// INVALID_REQUEST before, as Kafka 4.1.1 answered the same requests.
#[test]
fn delete_topics_refuses_every_entry_as_given_when_deletion_is_disabled() {
    let broker = Broker::start(
        BrokerOptions::default()
            .auto_create_topics_enable(false)
            .arg("--delete-topic-enable", "false"),
    );
    let bootstrap = broker.bootstrap();
    let mut client = RawClient::connect(&bootstrap);
    let created: CreateTopicsResponse =
        client.request(ApiKey::CreateTopics, 7, &create_topic_request("kept", 1));
    assert_eq!(created.topics[0].error_code, 0);
    let metadata = metadata_on(&mut client, Some(&["kept"]), 12);
    let kept_id = metadata.topics[0].topic_id;
    let mut request = DeleteTopicsRequest::default();
    request.timeout_ms = 10_000;
    request.topics = vec![
        delete_entry(None, kept_id),
        delete_entry(Some("kept"), uuid::Uuid::nil()),
        delete_entry(Some("never-was"), uuid::Uuid::nil()),
    ];
    let response: DeleteTopicsResponse = client.request(ApiKey::DeleteTopics, 6, &request);
    let answers = delete_rows(&response);
    let disabled = RDKafkaErrorCode::TopicDeletionDisabled as i16;
    assert_eq!(
        answers,
        vec![
            (None, kept_id, disabled, None),
            (Some("kept".to_string()), uuid::Uuid::nil(), disabled, None),
            (
                Some("never-was".to_string()),
                uuid::Uuid::nil(),
                disabled,
                None
            ),
        ]
    );
    let mut request = DeleteTopicsRequest::default();
    request.timeout_ms = 10_000;
    request.topic_names = vec![TopicName(StrBytes::from_static_str("kept"))];
    let response: DeleteTopicsResponse = client.request(ApiKey::DeleteTopics, 1, &request);
    assert_eq!(
        response.responses[0].error_code,
        RDKafkaErrorCode::InvalidRequest as i16
    );
    assert!(topic_names(&bootstrap).contains(&"kept".to_string()));
}

/// A DeleteTopics v6 entry naming `name` (if any) and `id`.
fn delete_entry(name: Option<&str>, id: uuid::Uuid) -> DeleteTopicState {
    let mut topic = DeleteTopicState::default();
    topic.name = name.map(|n| TopicName(StrBytes::from_string(n.to_string())));
    topic.topic_id = id;
    topic
}

/// A DeleteTopics answer's rows as (name, id, error code, message).
fn delete_rows(
    response: &DeleteTopicsResponse,
) -> Vec<(Option<String>, uuid::Uuid, i16, Option<String>)> {
    response
        .responses
        .iter()
        .map(|r| {
            (
                r.name.as_ref().map(|n| n.to_string()),
                r.topic_id,
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}
