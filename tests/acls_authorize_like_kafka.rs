//! Goal: with `--authorizer-class-name` set, ACLs decide what a client may
//! do, as with Kafka's StandardAuthorizer: CreateAcls, DescribeAcls and
//! DeleteAcls check and answer as Kafka does; a client without the right
//! gets Kafka's error code (TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED) from
//! every API, while a resource no ACL applies to stays open under
//! `allow.everyone.if.no.acl.found`; ACLs survive kill -9.
//!
//! Method: a broker with the authorizer, no super user and
//! `--allow-everyone-if-no-acl-found true`, so the PLAINTEXT client
//! (User:ANONYMOUS) may create ACLs until one applies to the cluster. ACLs
//! for User:bob then take topic `acl-secret` and group `g-secret` away from
//! it, and later the cluster. Every answer asserted here is what Kafka
//! 4.1.1 (KRaft, StandardAuthorizer, the same settings, the ANONYMOUS
//! client on a PLAINTEXT listener) answered to the same requests: run with
//! RINGBROKER_ACL_REFERENCE=host:port to send them to a Kafka instead.
//! Kafka's messages for refused cluster operations name its request
//! object, which a client cannot use; ours name the API, so only their
//! code is compared.

mod common;

use bytes::Bytes;
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ApiKey,
    CreateAclsRequest, CreateAclsResponse, CreatePartitionsRequest, CreatePartitionsResponse,
    CreateTopicsRequest, CreateTopicsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DeleteRecordsRequest, DeleteRecordsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    DescribeAclsRequest, DescribeAclsResponse, DescribeClusterRequest, DescribeClusterResponse,
    DescribeConfigsRequest, DescribeConfigsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    DescribeLogDirsRequest, DescribeLogDirsResponse, DescribeProducersRequest,
    DescribeProducersResponse, ElectLeadersRequest, ElectLeadersResponse, FetchRequest,
    FetchResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId, InitProducerIdRequest,
    InitProducerIdResponse, JoinGroupRequest, JoinGroupResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use common::wire::{encode_batch, plain_record, RawClient};
use common::{Broker, BrokerOptions};

const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const UNKNOWN_TOPIC_ID: i16 = 100;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REQUEST: i16 = 42;
const INVALID_TOPIC_EXCEPTION: i16 = 17;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// One ACL: (resource type, name, pattern type, principal, host,
/// operation, permission), the protocol's codes.
type AclSpec<'a> = (i8, &'a str, i8, &'a str, &'a str, i8, i8);

fn create_acls(client: &mut RawClient, acls: &[AclSpec]) -> Vec<(i16, Option<String>)> {
    let mut request = CreateAclsRequest::default();
    request.creations = acls
        .iter()
        .map(|&(rt, name, pt, principal, host, op, perm)| {
            let mut c = AclCreation::default();
            c.resource_type = rt;
            c.resource_name = s(name);
            c.resource_pattern_type = pt;
            c.principal = s(principal);
            c.host = s(host);
            c.operation = op;
            c.permission_type = perm;
            c
        })
        .collect();
    let response: CreateAclsResponse = client.request(ApiKey::CreateAcls, 3, &request);
    response
        .results
        .into_iter()
        .map(|r| (r.error_code, r.error_message.map(|m| m.to_string())))
        .collect()
}

/// A filter: (resource type, name, pattern type, principal, host,
/// operation, permission).
type FilterSpec<'a> = (
    i8,
    Option<&'a str>,
    i8,
    Option<&'a str>,
    Option<&'a str>,
    i8,
    i8,
);

/// DescribeAcls: (error code, resources as (type, name, pattern, sorted
/// [(principal, host, operation, permission)]) sorted).
#[allow(clippy::type_complexity)]
fn describe_acls(
    client: &mut RawClient,
    filter: FilterSpec,
) -> (i16, Vec<(i8, String, i8, Vec<(String, String, i8, i8)>)>) {
    let (rt, name, pt, principal, host, op, perm) = filter;
    let mut request = DescribeAclsRequest::default();
    request.resource_type_filter = rt;
    request.resource_name_filter = name.map(s);
    request.pattern_type_filter = pt;
    request.principal_filter = principal.map(s);
    request.host_filter = host.map(s);
    request.operation = op;
    request.permission_type = perm;
    let response: DescribeAclsResponse = client.request(ApiKey::DescribeAcls, 3, &request);
    let mut resources: Vec<_> = response
        .resources
        .into_iter()
        .map(|r| {
            let mut acls: Vec<_> = r
                .acls
                .into_iter()
                .map(|a| {
                    (
                        a.principal.to_string(),
                        a.host.to_string(),
                        a.operation,
                        a.permission_type,
                    )
                })
                .collect();
            acls.sort();
            (
                r.resource_type,
                r.resource_name.to_string(),
                r.pattern_type,
                acls,
            )
        })
        .collect();
    resources.sort();
    (response.error_code, resources)
}

fn bootstrap_or_broker() -> (String, Option<Broker>) {
    if let Ok(reference) = std::env::var("RINGBROKER_ACL_REFERENCE") {
        return (reference, None);
    }
    let broker = Broker::start(
        BrokerOptions::default()
            .auto_create_topics_enable(false)
            .arg(
                "--authorizer-class-name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            )
            .arg("--allow-everyone-if-no-acl-found", "true"),
    );
    (broker.bootstrap(), Some(broker))
}

fn create_topic(client: &mut RawClient, name: &str) -> i16 {
    created_topic(client, name).0
}

/// CreateTopics of one partition: the error code and the topic's id.
fn created_topic(client: &mut RawClient, name: &str) -> (i16, uuid::Uuid) {
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(s(name));
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    let mut request = CreateTopicsRequest::default();
    request.topics = vec![topic];
    request.timeout_ms = 10_000;
    let response: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 7, &request);
    (response.topics[0].error_code, response.topics[0].topic_id)
}

#[test]
fn acl_apis_check_and_answer_as_kafka() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    const U: &str = "User:probe";
    let results = create_acls(
        &mut client,
        &[
            (2, "wire-t", 3, U, "*", 3, 3),
            (4, "other-cluster", 3, U, "*", 7, 3),
            (2, "", 3, U, "*", 3, 3),
            (4, "", 3, U, "*", 3, 3),
            (9, "wire-t", 3, U, "*", 3, 3),
            (2, "wire-t", 7, U, "*", 3, 3),
            (2, "wire-t", 3, U, "*", 40, 3),
            (2, "wire-t", 3, U, "*", 3, 9),
            (2, "wire-t", 3, "nocolon", "*", 3, 3),
            // The same ACL again: accepted, stored once.
            (2, "wire-t", 3, U, "*", 3, 3),
            (2, "wire-", 4, U, "10.0.0.1", 4, 2),
        ],
    );
    let invalid = |m: &str| (INVALID_REQUEST, Some(m.to_string()));
    let cluster_name = "The only valid name for the CLUSTER resource is kafka-cluster";
    assert_eq!(
        results,
        vec![
            (0, Some(String::new())),
            invalid(cluster_name),
            invalid("Invalid empty resource name"),
            invalid(cluster_name),
            invalid("Invalid resourceType UNKNOWN"),
            invalid("Invalid patternType UNKNOWN"),
            invalid("Invalid operation UNKNOWN"),
            invalid("Invalid permissionType UNKNOWN"),
            invalid("Could not parse principal from `nocolon` (no colon is present separating the principal type from the principal name)"),
            (0, Some(String::new())),
            (0, Some(String::new())),
        ]
    );
    // Filter-only values (ANY, MATCH) in a creation fail the whole request.
    assert_eq!(
        create_acls(
            &mut client,
            &[(2, "wire-t", 3, U, "*", 3, 3), (2, "x", 3, U, "*", 1, 3)]
        ),
        vec![(-1, None), (-1, None)]
    );
    assert_eq!(
        create_acls(&mut client, &[(2, "x", 2, U, "*", 3, 3)]),
        vec![(-1, None)]
    );

    let prefixed = (
        2,
        "wire-".to_string(),
        4,
        vec![(U.to_string(), "10.0.0.1".to_string(), 4, 2)],
    );
    let literal = (
        2,
        "wire-t".to_string(),
        3,
        vec![(U.to_string(), "*".to_string(), 3, 3)],
    );
    assert_eq!(
        describe_acls(&mut client, (1, None, 1, Some(U), None, 1, 1)),
        (0, vec![prefixed.clone(), literal.clone()])
    );
    // MATCH: the ACLs that apply to the name (a prefix of it here).
    assert_eq!(
        describe_acls(&mut client, (2, Some("wire-tx"), 2, None, None, 1, 1)),
        (0, vec![prefixed.clone()])
    );
    assert_eq!(
        describe_acls(&mut client, (2, Some("wire-t"), 3, None, None, 1, 1)),
        (0, vec![literal.clone()])
    );
    // A resource type Kafka does not define matches nothing.
    assert_eq!(
        describe_acls(&mut client, (9, None, 1, None, None, 1, 1)),
        (0, vec![])
    );

    let mut request = DeleteAclsRequest::default();
    request.filters = [
        (2i8, 4i8, Some(U), 1i8),
        (9, 1, None, 1),
        (2, 1, None, 40),
        (1, 1, Some(U), 1),
    ]
    .iter()
    .map(|&(rt, pt, principal, op)| {
        let mut f = DeleteAclsFilter::default();
        f.resource_type_filter = rt;
        f.resource_name_filter = None;
        f.host_filter = None;
        f.pattern_type_filter = pt;
        f.principal_filter = principal.map(s);
        f.operation = op;
        f.permission_type = 1;
        f
    })
    .collect();
    let deleted: DeleteAclsResponse = client.request(ApiKey::DeleteAcls, 3, &request);
    // (error code, message, the deleted ACLs' (name, pattern type)).
    type Summary = (i16, Option<String>, Vec<(String, i8)>);
    let summary: Vec<Summary> = deleted
        .filter_results
        .iter()
        .map(|r| {
            let mut names: Vec<(String, i8)> = r
                .matching_acls
                .iter()
                .map(|m| {
                    assert_eq!((m.error_code, m.error_message.as_ref()), (0, None));
                    (m.resource_name.to_string(), m.pattern_type)
                })
                .collect();
            names.sort();
            (
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
                names,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (0, None, vec![("wire-".to_string(), 4)]),
            (
                INVALID_REQUEST,
                Some("Unknown patternFilter.".into()),
                vec![]
            ),
            (INVALID_REQUEST, Some("Unknown entryFilter.".into()), vec![]),
            // Listed again under a second filter that matches it.
            (
                0,
                None,
                vec![("wire-".to_string(), 4), ("wire-t".to_string(), 3)]
            ),
        ]
    );
    assert_eq!(
        describe_acls(&mut client, (1, None, 1, Some(U), None, 1, 1)),
        (0, vec![])
    );

    // An UNKNOWN (0) code closes the connection without an answer.
    let mut creation = CreateAclsRequest::default();
    let mut unknown = AclCreation::default();
    unknown.resource_type = 0;
    unknown.resource_name = s("x");
    unknown.resource_pattern_type = 3;
    unknown.principal = s(U);
    unknown.host = s("*");
    unknown.operation = 3;
    unknown.permission_type = 3;
    creation.creations = vec![unknown];
    let mut doomed = RawClient::connect(&bootstrap);
    doomed
        .write_raw(&common::wire::encode_request(
            ApiKey::CreateAcls,
            3,
            1,
            &creation,
        ))
        .unwrap();
    assert!(matches!(
        doomed.outcome_within(std::time::Duration::from_secs(10)),
        common::wire::Outcome::Closed { bytes_before_close } if bytes_before_close.is_empty()
    ));
}

fn metadata_codes(client: &mut RawClient, names: Option<&[&str]>) -> Vec<(String, i16, bool)> {
    let mut request = MetadataRequest::default();
    request.topics = names.map(|names| {
        names
            .iter()
            .map(|n| {
                let mut t = MetadataRequestTopic::default();
                t.name = Some(TopicName(s(n)));
                t
            })
            .collect()
    });
    request.allow_auto_topic_creation = false;
    let response: MetadataResponse = client.request(ApiKey::Metadata, 12, &request);
    let mut topics: Vec<_> = response
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map(|n| n.to_string()).unwrap_or_default(),
                t.error_code,
                t.topic_id.is_nil(),
            )
        })
        .filter(|(name, _, _)| ["acl-secret", "acl-open", "acl-missing"].contains(&name.as_str()))
        .collect();
    topics.sort();
    topics
}

#[test]
fn clients_without_the_right_get_kafkas_errors_and_acls_survive_kill_9() {
    let (bootstrap, mut broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    let (created, secret_id) = created_topic(&mut client, "acl-secret");
    assert_eq!(created, 0);
    let (created, open_id) = created_topic(&mut client, "acl-open");
    assert_eq!(created, 0);
    const BOB: &str = "User:bob";
    assert_eq!(
        create_acls(
            &mut client,
            &[
                (2, "acl-secret", 3, BOB, "*", 3, 3),
                (3, "g-secret", 3, BOB, "*", 3, 3)
            ]
        ),
        vec![(0, Some(String::new())), (0, Some(String::new()))]
    );
    if let Some(broker) = broker.as_mut() {
        // ACLs are in the metadata log: a crash keeps them.
        broker.kill9();
        broker.restart();
        client = RawClient::connect(&broker.bootstrap());
    }

    // Topics: ANONYMOUS lost acl-secret (an ACL applies to it), keeps
    // acl-open (none applies); a named topic it may not DESCRIBE is refused
    // without its id, and left out of every topic.
    assert_eq!(
        metadata_codes(
            &mut client,
            Some(&["acl-secret", "acl-open", "acl-missing"])
        ),
        vec![
            ("acl-missing".into(), UNKNOWN_TOPIC_OR_PARTITION, true),
            ("acl-open".into(), 0, false),
            ("acl-secret".into(), TOPIC_AUTHORIZATION_FAILED, true),
        ]
    );
    assert_eq!(
        metadata_codes(&mut client, None),
        vec![("acl-open".into(), 0, false)]
    );

    let mut produce = ProduceRequest::default();
    produce.acks = 1;
    produce.timeout_ms = 10_000;
    produce.topic_data = ["acl-secret", "acl-open"]
        .iter()
        .map(|name| {
            let mut partition = PartitionProduceData::default();
            partition.index = 0;
            partition.records = Some(encode_batch(&[plain_record(
                0,
                None,
                Bytes::from_static(b"v"),
            )]));
            let mut topic = TopicProduceData::default();
            topic.name = TopicName(s(name));
            topic.partition_data = vec![partition];
            topic
        })
        .collect();
    let produced: ProduceResponse = client.request(ApiKey::Produce, 9, &produce);
    let mut codes: Vec<(String, i16)> = produced
        .responses
        .iter()
        .map(|t| (t.name.to_string(), t.partition_responses[0].error_code))
        .collect();
    codes.sort();
    assert_eq!(
        codes,
        vec![
            ("acl-open".into(), 0),
            ("acl-secret".into(), TOPIC_AUTHORIZATION_FAILED)
        ]
    );
    // Produce v13 names topics by id: WRITE is asked of the topic the id
    // names; an id no topic has is UNKNOWN_TOPIC_ID, ACLs or not.
    let unknown_id = uuid::Uuid::from_u128(0xac1_0000_0000_0000_0000_0000_0000_0001);
    for (topic, id) in produce.topic_data.iter_mut().zip([secret_id, open_id]) {
        topic.name = TopicName(s(""));
        topic.topic_id = id;
    }
    let mut unknown = produce.topic_data[0].clone();
    unknown.topic_id = unknown_id;
    produce.topic_data.push(unknown);
    let produced: ProduceResponse = client.request(ApiKey::Produce, 13, &produce);
    let mut codes: Vec<(uuid::Uuid, i16)> = produced
        .responses
        .iter()
        .map(|t| (t.topic_id, t.partition_responses[0].error_code))
        .collect();
    codes.sort();
    let mut expected = vec![
        (secret_id, TOPIC_AUTHORIZATION_FAILED),
        (open_id, 0),
        (unknown_id, UNKNOWN_TOPIC_ID),
    ];
    expected.sort();
    assert_eq!(codes, expected);

    let mut fetch = FetchRequest::default();
    fetch.replica_id = kafka_protocol::messages::BrokerId(-1);
    fetch.max_wait_ms = 0;
    fetch.max_bytes = 1 << 20;
    let mut fp = FetchPartition::default();
    fp.partition = 0;
    fp.partition_max_bytes = 1 << 20;
    let mut ft = FetchTopic::default();
    ft.topic = TopicName(s("acl-secret"));
    ft.partitions = vec![fp];
    fetch.topics = vec![ft];
    let fetched: FetchResponse = client.request(ApiKey::Fetch, 12, &fetch);
    assert_eq!(
        fetched.responses[0].partitions[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );

    let mut list = ListOffsetsRequest::default();
    list.replica_id = kafka_protocol::messages::BrokerId(-1);
    let mut lp = ListOffsetsPartition::default();
    lp.partition_index = 0;
    lp.timestamp = -1;
    let mut lt = ListOffsetsTopic::default();
    lt.name = TopicName(s("acl-secret"));
    lt.partitions = vec![lp];
    list.topics = vec![lt];
    let listed: ListOffsetsResponse = client.request(ApiKey::ListOffsets, 7, &list);
    assert_eq!(
        listed.topics[0].partitions[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );

    let mut describe = DescribeConfigsRequest::default();
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = 2;
    resource.resource_name = s("acl-secret");
    describe.resources = vec![resource];
    let described: DescribeConfigsResponse = client.request(ApiKey::DescribeConfigs, 4, &describe);
    assert_eq!(
        (
            described.results[0].error_code,
            described.results[0]
                .error_message
                .as_ref()
                .map(|m| m.to_string())
        ),
        (
            TOPIC_AUTHORIZATION_FAILED,
            Some("Topic authorization failed.".into())
        )
    );

    let mut more = CreatePartitionsRequest::default();
    let mut mt = CreatePartitionsTopic::default();
    mt.name = TopicName(s("acl-secret"));
    mt.count = 2;
    more.topics = vec![mt];
    more.timeout_ms = 10_000;
    let grown: CreatePartitionsResponse = client.request(ApiKey::CreatePartitions, 3, &more);
    assert_eq!(grown.results[0].error_code, TOPIC_AUTHORIZATION_FAILED);

    let mut records = DeleteRecordsRequest::default();
    let mut rp = DeleteRecordsPartition::default();
    rp.partition_index = 0;
    rp.offset = 0;
    let mut rt = DeleteRecordsTopic::default();
    rt.name = TopicName(s("acl-secret"));
    rt.partitions = vec![rp];
    records.topics = vec![rt];
    records.timeout_ms = 10_000;
    let trimmed: DeleteRecordsResponse = client.request(ApiKey::DeleteRecords, 2, &records);
    assert_eq!(
        trimmed.topics[0].partitions[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );

    let mut epochs = OffsetForLeaderEpochRequest::default();
    epochs.replica_id = kafka_protocol::messages::BrokerId(-1);
    let mut ep = OffsetForLeaderPartition::default();
    ep.partition = 0;
    ep.current_leader_epoch = -1;
    ep.leader_epoch = 0;
    let mut et = OffsetForLeaderTopic::default();
    et.topic = TopicName(s("acl-secret"));
    et.partitions = vec![ep];
    epochs.topics = vec![et];
    // CLUSTER_ACTION (no ACL applies to the cluster yet) lets a client ask
    // of every topic, as a replica does, DESCRIBE or not.
    let ends: OffsetForLeaderEpochResponse =
        client.request(ApiKey::OffsetForLeaderEpoch, 4, &epochs);
    assert_eq!(ends.topics[0].partitions[0].error_code, 0);

    let mut producers = DescribeProducersRequest::default();
    let mut pt = TopicRequest::default();
    pt.name = TopicName(s("acl-secret"));
    pt.partition_indexes = vec![0];
    producers.topics = vec![pt];
    let described: DescribeProducersResponse =
        client.request(ApiKey::DescribeProducers, 0, &producers);
    let partition = &described.topics[0].partitions[0];
    assert_eq!(
        (
            partition.error_code,
            partition.error_message.as_ref().map(|m| m.to_string())
        ),
        (
            TOPIC_AUTHORIZATION_FAILED,
            Some("Topic authorization failed.".into())
        )
    );

    // Groups: ANONYMOUS lost g-secret.
    let mut find = FindCoordinatorRequest::default();
    find.key_type = 0;
    find.coordinator_keys = vec![s("g-secret")];
    let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 4, &find);
    assert_eq!(
        (
            found.coordinators[0].error_code,
            found.coordinators[0].node_id.0
        ),
        (GROUP_AUTHORIZATION_FAILED, -1)
    );
    let mut join = JoinGroupRequest::default();
    join.group_id = GroupId(s("g-secret"));
    join.session_timeout_ms = 10_000;
    join.rebalance_timeout_ms = 10_000;
    join.protocol_type = s("consumer");
    let joined: JoinGroupResponse = client.request(ApiKey::JoinGroup, 5, &join);
    assert_eq!(
        (joined.error_code, joined.generation_id),
        (GROUP_AUTHORIZATION_FAILED, -1)
    );
    let mut commit = OffsetCommitRequest::default();
    commit.group_id = GroupId(s("g-secret"));
    commit.generation_id_or_member_epoch = -1;
    let mut cp = OffsetCommitRequestPartition::default();
    cp.partition_index = 0;
    cp.committed_offset = 0;
    let mut ct = OffsetCommitRequestTopic::default();
    ct.name = TopicName(s("acl-open"));
    ct.partitions = vec![cp];
    commit.topics = vec![ct];
    let committed: OffsetCommitResponse = client.request(ApiKey::OffsetCommit, 8, &commit);
    assert_eq!(
        committed.topics[0].partitions[0].error_code,
        GROUP_AUTHORIZATION_FAILED
    );
    let mut fetch_offsets = OffsetFetchRequest::default();
    fetch_offsets.group_id = GroupId(s("g-secret"));
    fetch_offsets.topics = None;
    let offsets: OffsetFetchResponse = client.request(ApiKey::OffsetFetch, 7, &fetch_offsets);
    assert_eq!(offsets.error_code, GROUP_AUTHORIZATION_FAILED);
    let mut groups = DescribeGroupsRequest::default();
    groups.groups = vec![GroupId(s("g-secret"))];
    let described: DescribeGroupsResponse = client.request(ApiKey::DescribeGroups, 5, &groups);
    assert_eq!(described.groups[0].error_code, GROUP_AUTHORIZATION_FAILED);
    // Group configs: DESCRIBE_CONFIGS and ALTER_CONFIGS on the group.
    for (group, expected) in [("g-secret", GROUP_AUTHORIZATION_FAILED), ("g-open", 0)] {
        let mut resource = DescribeConfigsResource::default();
        resource.resource_type = 32;
        resource.resource_name = s(group);
        let mut request = DescribeConfigsRequest::default();
        request.resources = vec![resource];
        let answer: DescribeConfigsResponse = client.request(ApiKey::DescribeConfigs, 4, &request);
        assert_eq!(answer.results[0].error_code, expected, "describe {group}");
        assert_eq!(answer.results[0].configs.is_empty(), expected != 0);
        assert_eq!(
            common::wire::incremental_alter_configs(
                &mut client,
                32,
                group,
                &[("consumer.session.timeout.ms", Some("50000"))]
            )
            .0,
            expected,
            "alter {group}"
        );
    }

    // An internal topic takes no client's records, whatever its ACLs allow
    // (WRITE here, since none applies): only Kafka's own admin client id
    // may append there.
    let mut find = FindCoordinatorRequest::default();
    find.key_type = 0;
    find.coordinator_keys = vec![s("g-open")];
    let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 4, &find);
    assert_eq!(found.coordinators[0].error_code, 0);
    let mut internal = ProduceRequest::default();
    internal.acks = 1;
    internal.timeout_ms = 10_000;
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(encode_batch(&[plain_record(
        0,
        None,
        Bytes::from_static(b"forged"),
    )]));
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(s("__consumer_offsets"));
    topic.partition_data = vec![partition];
    internal.topic_data = vec![topic];
    let refused: ProduceResponse = client.request(ApiKey::Produce, 9, &internal);
    assert_eq!(
        refused.responses[0].partition_responses[0].error_code,
        INVALID_TOPIC_EXCEPTION
    );

    // The cluster: an ACL on it (ALTER for bob; CLUSTER_ACTION for
    // ANONYMOUS, which Kafka's own controller connection needs) takes the
    // other cluster operations away from ANONYMOUS.
    assert_eq!(
        create_acls(
            &mut client,
            &[
                (4, "kafka-cluster", 3, BOB, "*", 7, 3),
                (4, "kafka-cluster", 3, "User:ANONYMOUS", "*", 9, 3)
            ]
        ),
        vec![(0, Some(String::new())), (0, Some(String::new()))]
    );
    assert_eq!(
        create_acls(&mut client, &[(2, "acl-open", 3, BOB, "*", 3, 3)])[0].0,
        CLUSTER_AUTHORIZATION_FAILED
    );
    assert_eq!(
        describe_acls(&mut client, (1, None, 1, None, None, 1, 1)).0,
        CLUSTER_AUTHORIZATION_FAILED
    );
    let dirs: DescribeLogDirsResponse = client.request(
        ApiKey::DescribeLogDirs,
        4,
        &DescribeLogDirsRequest::default(),
    );
    assert_eq!(dirs.error_code, CLUSTER_AUTHORIZATION_FAILED);
    let quorum: kafka_protocol::messages::DescribeQuorumResponse = client.request(
        ApiKey::DescribeQuorum,
        2,
        &kafka_protocol::messages::DescribeQuorumRequest::default(),
    );
    assert_eq!(
        quorum.error_code, CLUSTER_AUTHORIZATION_FAILED,
        "DescribeQuorum needs DESCRIBE on the cluster"
    );
    let listed: kafka_protocol::messages::ListConfigResourcesResponse = client.request(
        ApiKey::ListConfigResources,
        1,
        &kafka_protocol::messages::ListConfigResourcesRequest::default(),
    );
    assert_eq!(
        (listed.error_code, listed.config_resources.len()),
        (CLUSTER_AUTHORIZATION_FAILED, 0)
    );
    let mut update = kafka_protocol::messages::UpdateFeaturesRequest::default();
    let mut feature =
        kafka_protocol::messages::update_features_request::FeatureUpdateKey::default();
    feature.feature = StrBytes::from_static_str("transaction.version");
    feature.max_version_level = 1;
    feature.upgrade_type = 2;
    update.feature_updates.push(feature);
    let updated: kafka_protocol::messages::UpdateFeaturesResponse =
        client.request(ApiKey::UpdateFeatures, 1, &update);
    assert_eq!(
        (updated.error_code, updated.results.len()),
        (CLUSTER_AUTHORIZATION_FAILED, 0),
        "UpdateFeatures needs ALTER on the cluster"
    );
    let mut voter = kafka_protocol::messages::RemoveRaftVoterRequest::default();
    voter.voter_id = 7;
    voter.voter_directory_id = uuid::Uuid::from_u128(7);
    let refused: kafka_protocol::messages::RemoveRaftVoterResponse =
        client.request(ApiKey::RemoveRaftVoter, 0, &voter);
    assert_eq!(
        refused.error_code, CLUSTER_AUTHORIZATION_FAILED,
        "RemoveRaftVoter needs ALTER on the cluster"
    );
    let mut unregister = kafka_protocol::messages::UnregisterBrokerRequest::default();
    unregister.broker_id = 5.into();
    let refused: kafka_protocol::messages::UnregisterBrokerResponse =
        client.request(ApiKey::UnregisterBroker, 0, &unregister);
    assert_eq!(
        refused.error_code, CLUSTER_AUTHORIZATION_FAILED,
        "UnregisterBroker needs ALTER on the cluster"
    );
    let mut cluster = DescribeClusterRequest::default();
    cluster.include_cluster_authorized_operations = true;
    let described: DescribeClusterResponse = client.request(ApiKey::DescribeCluster, 1, &cluster);
    assert_eq!(
        (
            described.error_code,
            described.cluster_authorized_operations
        ),
        (0, 0)
    );
    // DELETE on the cluster is gone too, and acl-secret never had it.
    let mut delete = DeleteTopicsRequest::default();
    let mut dt = DeleteTopicState::default();
    dt.name = Some(TopicName(s("acl-secret")));
    delete.topics = vec![dt];
    delete.timeout_ms = 10_000;
    let deleted: DeleteTopicsResponse = client.request(ApiKey::DeleteTopics, 6, &delete);
    assert_eq!(
        (
            deleted.responses[0].error_code,
            deleted.responses[0]
                .error_message
                .as_ref()
                .map(|m| m.to_string())
        ),
        (
            TOPIC_AUTHORIZATION_FAILED,
            Some("Topic authorization failed.".into())
        )
    );

    // ALTER on the cluster refuses the request and each partition named.
    let mut elect = ElectLeadersRequest::default();
    elect.election_type = 0;
    elect.timeout_ms = 10_000;
    let mut wanted = TopicPartitions::default();
    wanted.topic = TopicName(s("acl-open"));
    wanted.partitions = vec![0];
    elect.topic_partitions = Some(vec![wanted]);
    let elected: ElectLeadersResponse = client.request(ApiKey::ElectLeaders, 2, &elect);
    assert_eq!(
        (
            elected.error_code,
            elected.replica_election_results[0].partition_result[0].error_code
        ),
        (CLUSTER_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED)
    );
    let mut reassign = AlterPartitionReassignmentsRequest::default();
    reassign.timeout_ms = 10_000;
    let mut moved = ReassignablePartition::default();
    moved.partition_index = 0;
    moved.replicas = None;
    let mut topic = ReassignableTopic::default();
    topic.name = TopicName(s("acl-open"));
    topic.partitions = vec![moved];
    reassign.topics = vec![topic];
    let reassigned: AlterPartitionReassignmentsResponse =
        client.request(ApiKey::AlterPartitionReassignments, 0, &reassign);
    assert_eq!(
        (
            reassigned.error_code,
            reassigned.responses[0].partitions[0].error_code
        ),
        (CLUSTER_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED)
    );
    // CREATE on a topic no ACL applies to is still everyone's.
    assert_eq!(create_topic(&mut client, "acl-new"), 0);
    // Idempotence: IDEMPOTENT_WRITE on the cluster is gone, WRITE on some
    // topic (one no ACL applies to) is enough.
    let mut init = InitProducerIdRequest::default();
    init.transactional_id = None;
    init.transaction_timeout_ms = 60_000;
    init.producer_id = kafka_protocol::messages::ProducerId(-1);
    init.producer_epoch = -1;
    // Retried while the producer ids are not ready yet (14,
    // COORDINATOR_LOAD_IN_PROGRESS), as clients do.
    let mut error = 14;
    for _ in 0..50 {
        let initialized: InitProducerIdResponse = client.request(ApiKey::InitProducerId, 4, &init);
        error = initialized.error_code;
        if error != 14 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(error, 0);
}

/// KIP-848 consumer groups under ACLs, as Kafka's KafkaApis and group
/// coordinator judge them: READ on the group, DESCRIBE on every subscribed
/// topic name, and a regex matches only the topics the member may
/// DESCRIBE.
#[test]
fn consumer_group_heartbeats_are_authorized_like_kafka() {
    use kafka_protocol::messages::{
        ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
    };
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(create_topic(&mut client, "acl848-secret"), 0);
    assert_eq!(create_topic(&mut client, "acl848-open"), 0);
    const BOB: &str = "User:bob";
    assert_eq!(
        create_acls(
            &mut client,
            &[
                (2, "acl848-secret", 3, BOB, "*", 3, 3),
                (3, "g848-secret", 3, BOB, "*", 3, 3)
            ]
        ),
        vec![(0, Some(String::new())), (0, Some(String::new()))]
    );
    let mut metadata = MetadataRequest::default();
    let mut wanted = MetadataRequestTopic::default();
    wanted.name = Some(TopicName(s("acl848-open")));
    metadata.topics = Some(vec![wanted]);
    let described: MetadataResponse = client.request(ApiKey::Metadata, 12, &metadata);
    let open_id = described.topics[0].topic_id;

    // Kafka answers NOT_COORDINATOR until the offsets topic exists, which
    // FindCoordinator brings about (as clients do first).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let mut find = FindCoordinatorRequest::default();
        find.key = s("g848");
        let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 3, &find);
        if found.error_code == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no coordinator");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let join = |group: &str, member: &str| {
        let mut request = ConsumerGroupHeartbeatRequest::default();
        request.group_id = GroupId(s(group));
        request.member_id = s(member);
        request.member_epoch = 0;
        request.rebalance_timeout_ms = 30_000;
        request.topic_partitions = Some(Vec::new());
        request
    };
    let mut secret_group = join("g848-secret", "m1");
    secret_group.subscribed_topic_names = Some(vec![TopicName(s("acl848-open"))]);
    let answer: ConsumerGroupHeartbeatResponse =
        client.request(ApiKey::ConsumerGroupHeartbeat, 1, &secret_group);
    assert_eq!(answer.error_code, GROUP_AUTHORIZATION_FAILED);

    let mut secret_topic = join("g848", "m1");
    secret_topic.subscribed_topic_names = Some(vec![
        TopicName(s("acl848-open")),
        TopicName(s("acl848-secret")),
    ]);
    let answer: ConsumerGroupHeartbeatResponse =
        client.request(ApiKey::ConsumerGroupHeartbeat, 1, &secret_topic);
    assert_eq!(answer.error_code, TOPIC_AUTHORIZATION_FAILED);

    // The regex matches both topics; only the one it may see is assigned.
    // (Kafka resolves regexes in the background: keep heartbeating.)
    let mut regex = join("g848", "m2");
    regex.subscribed_topic_regex = Some(s("acl848-.*"));
    // Coordinator errors (loading, not yet the coordinator) are retried as
    // clients do.
    let heartbeat = |client: &mut RawClient, request: &ConsumerGroupHeartbeatRequest| loop {
        let answer: ConsumerGroupHeartbeatResponse =
            client.request(ApiKey::ConsumerGroupHeartbeat, 1, request);
        if ![14, 15, 16].contains(&answer.error_code) {
            return answer;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let mut answer = heartbeat(&mut client, &regex);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while answer
        .assignment
        .as_ref()
        .map_or(true, |a| a.topic_partitions.is_empty())
    {
        assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
        assert!(std::time::Instant::now() < deadline, "never assigned");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let mut beat = ConsumerGroupHeartbeatRequest::default();
        beat.group_id = GroupId(s("g848"));
        beat.member_id = s("m2");
        beat.member_epoch = answer.member_epoch;
        beat.rebalance_timeout_ms = -1;
        beat.topic_partitions = Some(Vec::new());
        answer = heartbeat(&mut client, &beat);
    }
    let assigned: Vec<_> = answer.assignment.unwrap().topic_partitions;
    assert_eq!(assigned.len(), 1);
    assert_eq!(
        (assigned[0].topic_id, assigned[0].partitions.clone()),
        (open_id, vec![0])
    );

    let mut describe = ConsumerGroupDescribeRequest::default();
    describe.group_ids = vec![GroupId(s("g848")), GroupId(s("g848-secret"))];
    let described: ConsumerGroupDescribeResponse =
        client.request(ApiKey::ConsumerGroupDescribe, 0, &describe);
    let codes: Vec<i16> = described.groups.iter().map(|g| g.error_code).collect();
    // Refused groups come first, as in Kafka.
    assert_eq!(codes, vec![GROUP_AUTHORIZATION_FAILED, 0]);
    assert_eq!(described.groups[1].members.len(), 1);
}
