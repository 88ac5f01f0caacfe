//! Group configs (`kafka-configs --entity-type groups`, KIP-848): set with
//! IncrementalAlterConfigs or AlterConfigs on a GROUP resource, shown by
//! DescribeConfigs and ListConfigResources, kept across a kill -9, and
//! acted on: a consumer group's members get the group's heartbeat interval
//! and leave after the group's session timeout.
//!
//! Method: requests on the wire. Every answer asserted by the first test is
//! what Kafka 4.1.1 (KRaft, single node) answered to the same requests: run
//! it with RINGBROKER_GROUP_CONFIG_REFERENCE=host:port to send them to a
//! Kafka instead. The others need a broker of their own (a restart, session
//! timeouts below Kafka's 45 s minimum).

mod common;

use std::time::{Duration, Instant};

use kafka_protocol::messages::{
    alter_configs_request, describe_configs_request, describe_configs_response,
    incremental_alter_configs_request, AlterConfigsRequest, AlterConfigsResponse, ApiKey,
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, GroupId, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, ListConfigResourcesRequest, ListConfigResourcesResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use common::wire::RawClient;
use common::{unique, Broker, BrokerOptions};

const GROUP: i8 = 32;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
const UNSUPPORTED_VERSION: i16 = 35;
const DEFAULT_CONFIG: i8 = 5;
const GROUP_CONFIG: i8 = 8;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// IncrementalAlterConfigs v1 of one group: (name, value, operation).
fn alter(
    client: &mut RawClient,
    group: &str,
    changes: &[(&str, Option<&str>, i8)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let mut resource = incremental_alter_configs_request::AlterConfigsResource::default();
    resource.resource_type = GROUP;
    resource.resource_name = s(group);
    resource.configs = changes
        .iter()
        .map(|(name, value, operation)| {
            let mut config = incremental_alter_configs_request::AlterableConfig::default();
            config.name = s(name);
            config.value = value.map(s);
            config.config_operation = *operation;
            config
        })
        .collect();
    let mut request = IncrementalAlterConfigsRequest::default();
    request.resources = vec![resource];
    request.validate_only = validate_only;
    let response: IncrementalAlterConfigsResponse =
        client.request(ApiKey::IncrementalAlterConfigs, 1, &request);
    let answer = &response.responses[0];
    assert_eq!(answer.resource_type, GROUP);
    assert_eq!(answer.resource_name.as_str(), group);
    (
        answer.error_code,
        answer.error_message.as_ref().map(|m| m.to_string()),
    )
}

fn set(client: &mut RawClient, group: &str, name: &str, value: &str) {
    assert_eq!(
        alter(client, group, &[(name, Some(value), SET)], false),
        (0, None),
        "set {name}={value} on group {group}"
    );
}

/// DescribeConfigs v4 of one group, with synonyms and documentation.
fn describe(
    client: &mut RawClient,
    group: &str,
    keys: Option<&[&str]>,
) -> describe_configs_response::DescribeConfigsResult {
    let mut resource = describe_configs_request::DescribeConfigsResource::default();
    resource.resource_type = GROUP;
    resource.resource_name = s(group);
    resource.configuration_keys = keys.map(|keys| keys.iter().map(|k| s(k)).collect());
    let mut request = DescribeConfigsRequest::default();
    request.resources = vec![resource];
    request.include_synonyms = true;
    request.include_documentation = true;
    let mut response: DescribeConfigsResponse =
        client.request(ApiKey::DescribeConfigs, 4, &request);
    response.results.remove(0)
}

/// Each described config as (name, value, source, the synonyms' (value, source)).
type Described = Vec<(String, String, i8, Vec<(String, i8)>)>;

fn described(result: &describe_configs_response::DescribeConfigsResult) -> Described {
    result
        .configs
        .iter()
        .map(|c| {
            assert!(!c.read_only && !c.is_sensitive, "{}", c.name.as_str());
            assert!(c.documentation.as_ref().is_some_and(|d| !d.is_empty()));
            (
                c.name.to_string(),
                c.value.as_ref().expect("a value").to_string(),
                c.config_source,
                c.synonyms
                    .iter()
                    .map(|syn| {
                        assert_eq!(syn.name, c.name);
                        (syn.value.as_ref().expect("a value").to_string(), syn.source)
                    })
                    .collect(),
            )
        })
        .collect()
}

fn value_of(client: &mut RawClient, group: &str, name: &str) -> (String, i8) {
    let result = describe(client, group, Some(&[name]));
    assert_eq!(result.error_code, 0);
    let configs = described(&result);
    assert_eq!(configs.len(), 1);
    (configs[0].1.clone(), configs[0].2)
}

/// ListConfigResources: the error and the (name, type) pairs.
fn list(client: &mut RawClient, version: i16, types: &[i8]) -> (i16, Vec<(String, i8)>) {
    let mut request = ListConfigResourcesRequest::default();
    request.resource_types = types.to_vec();
    let response: ListConfigResourcesResponse =
        client.request(ApiKey::ListConfigResources, version, &request);
    (
        response.error_code,
        response
            .config_resources
            .iter()
            .map(|r| (r.resource_name.to_string(), r.resource_type))
            .collect(),
    )
}

/// A member joins `group` (KIP-848 protocol) subscribed to nothing that
/// exists, once the group's coordinator is ready; returns the join's answer.
fn join(client: &mut RawClient, group: &str, member: &str) -> ConsumerGroupHeartbeatResponse {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut find = FindCoordinatorRequest::default();
        find.key_type = 0;
        find.coordinator_keys = vec![s(group)];
        let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 4, &find);
        if found.coordinators[0].error_code == 0 {
            let mut request = ConsumerGroupHeartbeatRequest::default();
            request.group_id = GroupId(s(group));
            request.member_id = s(member);
            request.member_epoch = 0;
            request.rebalance_timeout_ms = 30_000;
            request.subscribed_topic_names = Some(vec![TopicName(s("no-such-topic"))]);
            request.topic_partitions = Some(Vec::new());
            let answer: ConsumerGroupHeartbeatResponse =
                client.request(ApiKey::ConsumerGroupHeartbeat, 1, &request);
            // COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
            if ![14, 15, 16].contains(&answer.error_code) {
                assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
                return answer;
            }
        }
        assert!(
            Instant::now() < deadline,
            "group {group} never got a coordinator"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The member ids ConsumerGroupDescribe lists for `group`.
fn members(client: &mut RawClient, group: &str) -> Vec<String> {
    let mut request = ConsumerGroupDescribeRequest::default();
    request.group_ids = vec![GroupId(s(group))];
    let response: ConsumerGroupDescribeResponse =
        client.request(ApiKey::ConsumerGroupDescribe, 0, &request);
    response.groups[0]
        .members
        .iter()
        .map(|m| m.member_id.to_string())
        .collect()
}

#[test]
fn group_configs_are_checked_described_and_listed_like_kafka() {
    let reference = std::env::var("RINGBROKER_GROUP_CONFIG_REFERENCE").ok();
    let broker = reference
        .is_none()
        .then(|| Broker::start(BrokerOptions::default()));
    let bootstrap = reference.unwrap_or_else(|| broker.as_ref().expect("a broker").bootstrap());
    let mut client = RawClient::connect(&bootstrap);
    let group = unique("gc");

    // Refusals carry Kafka's messages; nothing is stored.
    let refused = |client: &mut RawClient, name: &str, value: &str| {
        alter(client, &group, &[(name, Some(value), SET)], false)
    };
    for (name, value, message) in [
        ("foo", "1", "Unknown group config name: foo"),
        (
            "consumer.session.timeout.ms",
            "30000",
            "consumer.session.timeout.ms must be greater than or equal to \
             group.consumer.min.session.timeout.ms",
        ),
        (
            "consumer.session.timeout.ms",
            "90000",
            "consumer.session.timeout.ms must be less than or equal to \
             group.consumer.max.session.timeout.ms",
        ),
        (
            "consumer.heartbeat.interval.ms",
            "abc",
            "Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number \
             of type INT",
        ),
        (
            "consumer.heartbeat.interval.ms",
            "0",
            "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at \
             least 1",
        ),
        (
            "share.auto.offset.reset",
            "bogus",
            "Invalid value bogus for configuration share.auto.offset.reset: Invalid value \
             `bogus` for configuration share.auto.offset.reset. The value must be either \
             'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        ),
        (
            "share.isolation.level",
            "READ_COMMITTED",
            "Invalid value READ_COMMITTED for configuration share.isolation.level: String must \
             be one of: read_committed, read_uncommitted",
        ),
        (
            "share.record.lock.duration.ms",
            "500",
            "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be \
             at least 1000",
        ),
        (
            "streams.num.standby.replicas",
            "5",
            "streams.num.standby.replicas must be less than or equal to \
             group.streams.max.standby.replicas",
        ),
    ] {
        assert_eq!(
            refused(&mut client, name, value),
            (INVALID_CONFIG, Some(message.to_string())),
            "{name}={value}"
        );
    }
    assert_eq!(
        alter(
            &mut client,
            &group,
            &[("consumer.session.timeout.ms", Some("46000"), APPEND)],
            false
        ),
        (
            INVALID_CONFIG,
            Some(
                "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."
                    .into()
            )
        )
    );
    assert_eq!(
        alter(
            &mut client,
            "",
            &[("consumer.session.timeout.ms", Some("50000"), SET)],
            false
        ),
        (
            INVALID_REQUEST,
            Some("Default group resources are not allowed.".into())
        )
    );
    assert_eq!(
        alter(
            &mut client,
            &group,
            &[("consumer.session.timeout.ms", Some("55000"), SET)],
            true
        ),
        (0, None),
        "validate only"
    );

    // Nothing set: every config at its default, in Kafka's order.
    let defaults = describe(&mut client, &group, None);
    assert_eq!(defaults.error_code, 0);
    let expected_defaults: Described = [
        ("consumer.session.timeout.ms", "45000"),
        ("streams.heartbeat.interval.ms", "5000"),
        ("share.auto.offset.reset", "latest"),
        ("share.record.lock.duration.ms", "30000"),
        ("consumer.heartbeat.interval.ms", "5000"),
        ("share.session.timeout.ms", "45000"),
        ("share.isolation.level", "read_uncommitted"),
        ("streams.session.timeout.ms", "45000"),
        ("share.heartbeat.interval.ms", "5000"),
        ("streams.num.standby.replicas", "0"),
    ]
    .iter()
    .map(|(name, value)| {
        (
            name.to_string(),
            value.to_string(),
            DEFAULT_CONFIG,
            vec![(value.to_string(), DEFAULT_CONFIG)],
        )
    })
    .collect();
    assert_eq!(described(&defaults), expected_defaults);
    assert!(
        !list(&mut client, 1, &[GROUP])
            .1
            .contains(&(group.clone(), GROUP)),
        "a group without configs is not listed"
    );

    // Set (values trimmed and shown parsed), then described and listed.
    set(&mut client, &group, "consumer.session.timeout.ms", "50000");
    set(
        &mut client,
        &group,
        "consumer.heartbeat.interval.ms",
        " 6000 ",
    );
    set(
        &mut client,
        &group,
        "share.auto.offset.reset",
        "by_duration:P1DT2H",
    );
    assert_eq!(
        value_of(&mut client, &group, "consumer.heartbeat.interval.ms"),
        ("6000".into(), GROUP_CONFIG)
    );
    let mut set_values = expected_defaults.clone();
    for (index, value) in [(0, "50000"), (2, "by_duration:P1DT2H"), (4, "6000")] {
        set_values[index].1 = value.to_string();
        set_values[index].2 = GROUP_CONFIG;
        set_values[index].3 = vec![(value.to_string(), GROUP_CONFIG)];
    }
    assert_eq!(described(&describe(&mut client, &group, None)), set_values);
    // Unknown requested names are skipped.
    let asked = describe(
        &mut client,
        &group,
        Some(&["consumer.session.timeout.ms", "nope"]),
    );
    assert_eq!(described(&asked), set_values[..1].to_vec());
    let empty_name = describe(&mut client, "", None);
    assert_eq!(
        (
            empty_name.error_code,
            empty_name.error_message.as_ref().map(|m| m.to_string())
        ),
        (
            INVALID_REQUEST,
            Some("Group name must not be empty".to_string())
        )
    );
    let (error, listed) = list(&mut client, 1, &[GROUP]);
    assert_eq!(error, 0);
    assert!(listed.contains(&(group.clone(), GROUP)), "{listed:?}");
    assert!(listed.iter().all(|(_, t)| *t == GROUP));
    // All types, in Kafka's order: groups, broker loggers, brokers, topics.
    let (error, all) = list(&mut client, 1, &[]);
    assert_eq!(error, 0);
    let types: Vec<i8> = all.iter().map(|(_, t)| *t).collect();
    let mut ordered = types.clone();
    ordered.sort_by_key(|t| std::cmp::Reverse(*t));
    assert_eq!(types, ordered, "{all:?}");
    assert!(types.contains(&4) && types.contains(&8), "{all:?}");
    assert_eq!(
        list(&mut client, 1, &[3]),
        (UNSUPPORTED_VERSION, Vec::new())
    );
    // v0 (ListClientMetricsResources) knows only client metrics.
    assert_eq!(list(&mut client, 0, &[]), (0, Vec::new()));

    // The heartbeat interval may go up to group.consumer.max.heartbeat.interval.ms.
    assert_eq!(
        alter(
            &mut client,
            &group,
            &[("consumer.heartbeat.interval.ms", Some("15000"), SET)],
            false
        ),
        (0, None)
    );
    assert_eq!(
        value_of(&mut client, &group, "consumer.heartbeat.interval.ms").0,
        "15000"
    );

    // The members' heartbeat interval is the group's.
    let answer = join(&mut client, &group, "AAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(answer.heartbeat_interval_ms, 15_000);

    // AlterConfigs replaces the whole set.
    let mut resource = alter_configs_request::AlterConfigsResource::default();
    resource.resource_type = GROUP;
    resource.resource_name = s(&group);
    let mut config = alter_configs_request::AlterableConfig::default();
    config.name = s("consumer.heartbeat.interval.ms");
    config.value = Some(s("7000"));
    resource.configs = vec![config];
    let mut request = AlterConfigsRequest::default();
    request.resources = vec![resource];
    let response: AlterConfigsResponse = client.request(ApiKey::AlterConfigs, 2, &request);
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(
        value_of(&mut client, &group, "consumer.session.timeout.ms"),
        ("45000".into(), DEFAULT_CONFIG)
    );
    assert_eq!(
        value_of(&mut client, &group, "consumer.heartbeat.interval.ms"),
        ("7000".into(), GROUP_CONFIG)
    );

    // DELETE goes back to the default.
    assert_eq!(
        alter(
            &mut client,
            &group,
            &[("consumer.heartbeat.interval.ms", None, DELETE)],
            false
        ),
        (0, None)
    );
    assert_eq!(
        value_of(&mut client, &group, "consumer.heartbeat.interval.ms"),
        ("5000".into(), DEFAULT_CONFIG)
    );
}

#[test]
fn group_session_timeouts_and_heartbeat_intervals_apply_and_survive_kill_9() {
    let mut broker = Broker::start(
        BrokerOptions::default()
            .arg("--group-consumer-session-timeout-ms", 20_000)
            .arg("--group-consumer-heartbeat-interval-ms", 3_000)
            .arg("--group-consumer-min-session-timeout-ms", 1_000)
            .arg("--group-consumer-min-heartbeat-interval-ms", 500),
    );
    let mut client = RawClient::connect(&broker.bootstrap());
    // Broker values are the defaults a group's configs are described with.
    assert_eq!(
        value_of(&mut client, "quick", "consumer.session.timeout.ms"),
        ("20000".into(), DEFAULT_CONFIG)
    );
    // The session must outlast the heartbeat interval, the broker's 3 s
    // counting while the group sets none.
    assert_eq!(
        alter(
            &mut client,
            "quick",
            &[("consumer.session.timeout.ms", Some("2000"), SET)],
            false
        ),
        (
            INVALID_CONFIG,
            Some(
                "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
                    .into()
            )
        )
    );
    set(
        &mut client,
        "quick",
        "consumer.heartbeat.interval.ms",
        "500",
    );
    set(&mut client, "quick", "consumer.session.timeout.ms", "2000");
    assert_eq!(
        alter(
            &mut client,
            "quick",
            &[("consumer.heartbeat.interval.ms", Some("2000"), SET)],
            false
        ),
        (
            INVALID_CONFIG,
            Some(
                "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
                    .into()
            )
        )
    );

    // The configs outlive a kill -9.
    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&broker.bootstrap());
    assert_eq!(
        value_of(&mut client, "quick", "consumer.session.timeout.ms"),
        ("2000".into(), GROUP_CONFIG)
    );
    assert_eq!(
        list(&mut client, 1, &[GROUP]).1,
        vec![("quick".into(), GROUP)]
    );

    // A member of each group joins and then goes silent: the configured
    // group drops its member after 2 s, the other keeps its for 20 s.
    let quick = join(&mut client, "quick", "QQQQQQQQQQQQQQQQQQQQQQ");
    assert_eq!(quick.heartbeat_interval_ms, 500);
    let slow = join(&mut client, "slow", "SSSSSSSSSSSSSSSSSSSSSS");
    assert_eq!(slow.heartbeat_interval_ms, 3_000);
    let joined = Instant::now();
    while !members(&mut client, "quick").is_empty() {
        assert!(
            joined.elapsed() < Duration::from_secs(15),
            "the quick group's member outlived its 2 s session"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        joined.elapsed() >= Duration::from_millis(1_900),
        "the member left before its session ended"
    );
    assert_eq!(
        members(&mut client, "slow"),
        vec!["SSSSSSSSSSSSSSSSSSSSSS".to_string()],
        "the broker's 20 s session applies to the group without configs"
    );
    broker.assert_running();
}
