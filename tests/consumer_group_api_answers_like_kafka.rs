//! Goal: the consumer-group APIs answer a classic group's life cycle the way
//! Kafka 4.x does: ApiVersions advertises the group APIs (JoinGroup from
//! v0), a first JoinGroup v4+ gets MEMBER_ID_REQUIRED and the rejoin makes
//! the member leader of generation 1, SyncGroup hands back the leader's
//! assignment, Heartbeat succeeds, a commit with the generation is fetched
//! back (and a never-committed partition answers -1 with empty metadata), a
//! commit with a stale generation gets ILLEGAL_GENERATION and one to a
//! missing topic UNKNOWN_TOPIC_OR_PARTITION, ListGroups and DescribeGroups
//! show the stable group and its member (client id and `/127.0.0.1`), a
//! group with members cannot be deleted, LeaveGroup empties it, OffsetDelete
//! removes an offset, DeleteGroups deletes it and DescribeGroups v6 then
//! answers GROUP_ID_NOT_FOUND. A JoinGroup v0 (no member id round trip, no
//! rebalance timeout) and LeaveGroup v0 work too. An empty group id has a
//! coordinator, commits, fetches, is described and deleted as in Kafka 4.1,
//! and cannot be joined.
//!
//! Method: one broker with `--group-initial-rebalance-delay-ms 0` (so a
//! first rebalance completes at once), driven over one TCP connection with
//! hand-built `kafka-protocol` requests, as a consumer's coordinator
//! connection would be.

mod common;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedPartition;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, CreateTopicsRequest,
    CreateTopicsResponse, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

use common::wire::{api_versions, RawClient, CLIENT_ID};
use common::{Broker, BrokerOptions};

const GROUP: &str = "orders-readers";
const LEGACY_GROUP: &str = "legacy-readers";
const NEVER_USED_GROUP: &str = "never-used";
const TOPIC: &str = "orders";
const MISSING_TOPIC: &str = "no-such-topic";
const SESSION_TIMEOUT_MS: i32 = 10_000;
const REBALANCE_TIMEOUT_MS: i32 = 10_000;
const COMMITTED_OFFSET: i64 = 42;
const COMMITTED_METADATA: &str = "checkpoint-7";

fn s(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

fn code(error: ResponseError) -> i16 {
    error.code()
}

/// A `ConsumerProtocolSubscription` v0 as a consumer sends it in JoinGroup.
fn subscription(topics: &[&str]) -> Bytes {
    let mut subscription = ConsumerProtocolSubscription::default();
    subscription.topics = topics.iter().map(|t| s(t)).collect();
    let mut buf = BytesMut::new();
    buf.put_i16(0);
    subscription
        .encode(&mut buf, 0)
        .expect("encode subscription");
    buf.freeze()
}

/// A `ConsumerProtocolAssignment` v0 as a leader sends it in SyncGroup.
fn assignment(topic: &str, partitions: &[i32]) -> Bytes {
    let mut assigned = AssignedPartition::default();
    assigned.topic = TopicName(s(topic));
    assigned.partitions = partitions.to_vec();
    let mut assignment = ConsumerProtocolAssignment::default();
    assignment.assigned_partitions = vec![assigned];
    let mut buf = BytesMut::new();
    buf.put_i16(0);
    assignment.encode(&mut buf, 0).expect("encode assignment");
    buf.freeze()
}

fn join(client: &mut RawClient, group: &str, version: i16, member_id: &str) -> JoinGroupResponse {
    let mut protocol = JoinGroupRequestProtocol::default();
    protocol.name = s("range");
    protocol.metadata = subscription(&[TOPIC]);
    let mut request = JoinGroupRequest::default();
    request.group_id = GroupId(s(group));
    request.session_timeout_ms = SESSION_TIMEOUT_MS;
    if version >= 1 {
        request.rebalance_timeout_ms = REBALANCE_TIMEOUT_MS;
    }
    request.member_id = s(member_id);
    request.protocol_type = s("consumer");
    request.protocols = vec![protocol];
    client.request(ApiKey::JoinGroup, version, &request)
}

fn commit(
    client: &mut RawClient,
    generation_id: i32,
    member_id: &str,
    topics: &[(&str, i32)],
) -> OffsetCommitResponse {
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(GROUP));
    request.generation_id_or_member_epoch = generation_id;
    request.member_id = s(member_id);
    request.topics = topics
        .iter()
        .map(|&(name, partition)| {
            let mut p = OffsetCommitRequestPartition::default();
            p.partition_index = partition;
            p.committed_offset = COMMITTED_OFFSET;
            p.committed_leader_epoch = -1;
            p.committed_metadata = Some(s(COMMITTED_METADATA));
            let mut t = OffsetCommitRequestTopic::default();
            t.name = TopicName(s(name));
            t.partitions = vec![p];
            t
        })
        .collect();
    client.request(ApiKey::OffsetCommit, 8, &request)
}

/// `(partition, error)` of every topic in an OffsetCommit answer.
fn commit_errors(response: &OffsetCommitResponse) -> Vec<(String, i32, i16)> {
    response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index, p.error_code))
        })
        .collect()
}

/// One partition of an OffsetFetch answer: `(partition, offset, metadata,
/// leader epoch, error)`.
type FetchedPartition = (i32, i64, String, i32, i16);

/// OffsetFetch v7 of partitions 0 and 1: the group error and the partitions.
fn fetch_v7(client: &mut RawClient) -> (i16, Vec<FetchedPartition>) {
    let mut topic = OffsetFetchRequestTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.partition_indexes = vec![0, 1];
    let mut request = OffsetFetchRequest::default();
    request.group_id = GroupId(s(GROUP));
    request.topics = Some(vec![topic]);
    let response: OffsetFetchResponse = client.request(ApiKey::OffsetFetch, 7, &request);
    let partitions = response
        .topics
        .iter()
        .filter(|t| t.name.as_str() == TOPIC)
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            (
                p.partition_index,
                p.committed_offset,
                p.metadata.as_deref().unwrap_or("<null>").to_string(),
                p.committed_leader_epoch,
                p.error_code,
            )
        })
        .collect();
    (response.error_code, partitions)
}

fn describe(client: &mut RawClient, version: i16, groups: &[&str]) -> DescribeGroupsResponse {
    let mut request = DescribeGroupsRequest::default();
    request.groups = groups.iter().map(|g| GroupId(s(g))).collect();
    if version >= 3 {
        request.include_authorized_operations = true;
    }
    client.request(ApiKey::DescribeGroups, version, &request)
}

fn delete_groups(client: &mut RawClient, groups: &[&str]) -> Vec<(String, i16)> {
    let mut request = DeleteGroupsRequest::default();
    request.groups_names = groups.iter().map(|g| GroupId(s(g))).collect();
    let response: DeleteGroupsResponse = client.request(ApiKey::DeleteGroups, 2, &request);
    response
        .results
        .iter()
        .map(|r| (r.group_id.to_string(), r.error_code))
        .collect()
}

fn advertises_group_apis(bootstrap: &str) {
    let versions = api_versions(bootstrap);
    for (key, min, max) in [
        (ApiKey::FindCoordinator, 0, 6),
        (ApiKey::JoinGroup, 0, 9),
        (ApiKey::SyncGroup, 0, 5),
        (ApiKey::Heartbeat, 0, 4),
        (ApiKey::LeaveGroup, 0, 5),
        (ApiKey::OffsetCommit, 2, 9),
        (ApiKey::OffsetFetch, 1, 9),
        (ApiKey::ListGroups, 0, 5),
        (ApiKey::DescribeGroups, 0, 6),
        (ApiKey::DeleteGroups, 0, 2),
        (ApiKey::OffsetDelete, 0, 0),
    ] {
        assert_eq!(
            common::wire::api_range(&versions, key),
            Some((min, max)),
            "advertised range of {key:?}"
        );
    }
}

#[test]
fn consumer_group_api_answers_like_kafka() {
    let broker =
        Broker::start(BrokerOptions::default().arg("--group-initial-rebalance-delay-ms", 0));
    let bootstrap = broker.bootstrap();
    advertises_group_apis(&bootstrap);
    let mut client = RawClient::connect(&bootstrap);

    // A two-partition topic to commit offsets for.
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.num_partitions = 2;
    topic.replication_factor = 1;
    let mut create = CreateTopicsRequest::default();
    create.topics = vec![topic];
    create.timeout_ms = 10_000;
    let created: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 5, &create);
    assert_eq!(created.topics[0].error_code, 0, "CreateTopics: {created:?}");

    // FindCoordinator names this broker (and creates __consumer_offsets).
    let mut find = FindCoordinatorRequest::default();
    find.key = s(GROUP);
    let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 2, &find);
    assert_eq!(found.error_code, 0, "FindCoordinator: {found:?}");
    assert_eq!(found.port, i32::from(broker.port()), "FindCoordinator port");

    // KIP-394: a first JoinGroup v4+ without a member id is handed one.
    let first = join(&mut client, GROUP, 5, "");
    assert_eq!(
        first.error_code,
        code(ResponseError::MemberIdRequired),
        "first JoinGroup: {first:?}"
    );
    let member_id = first.member_id.to_string();
    assert!(
        !member_id.is_empty(),
        "MEMBER_ID_REQUIRED without a member id"
    );
    assert!(
        member_id.starts_with(CLIENT_ID),
        "member id {member_id:?} should start with the client id, as Kafka's do"
    );
    assert_eq!(first.generation_id, -1);
    assert_eq!(first.protocol_name.as_deref(), Some(""), "v5 protocol name");

    // The rejoin with that id completes the rebalance: leader, generation 1.
    let joined = join(&mut client, GROUP, 7, &member_id);
    assert_eq!(joined.error_code, 0, "second JoinGroup: {joined:?}");
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader.as_str(), member_id, "leader");
    assert_eq!(joined.member_id.as_str(), member_id);
    assert_eq!(joined.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.members.len(), 1, "the leader sees every member");
    assert_eq!(joined.members[0].member_id.as_str(), member_id);
    assert_eq!(joined.members[0].metadata, subscription(&[TOPIC]));
    let generation = joined.generation_id;

    // SyncGroup: the leader's assignment comes back to it.
    let my_assignment = assignment(TOPIC, &[0, 1]);
    let mut leader_assignment = SyncGroupRequestAssignment::default();
    leader_assignment.member_id = s(&member_id);
    leader_assignment.assignment = my_assignment.clone();
    let mut sync = SyncGroupRequest::default();
    sync.group_id = GroupId(s(GROUP));
    sync.generation_id = generation;
    sync.member_id = s(&member_id);
    sync.protocol_type = Some(s("consumer"));
    sync.protocol_name = Some(s("range"));
    sync.assignments = vec![leader_assignment];
    let synced: SyncGroupResponse = client.request(ApiKey::SyncGroup, 5, &sync);
    assert_eq!(synced.error_code, 0, "SyncGroup: {synced:?}");
    assert_eq!(synced.assignment, my_assignment, "assignment handed back");
    assert_eq!(synced.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(synced.protocol_name.as_deref(), Some("range"));

    // SyncGroup v5 without the protocol name: Kafka refuses it up front.
    let mut bad_sync = sync.clone();
    bad_sync.protocol_name = None;
    let refused: SyncGroupResponse = client.request(ApiKey::SyncGroup, 5, &bad_sync);
    assert_eq!(
        refused.error_code,
        code(ResponseError::InconsistentGroupProtocol),
        "SyncGroup v5 with a null protocol name"
    );

    // Heartbeat with the current generation.
    let mut heartbeat = HeartbeatRequest::default();
    heartbeat.group_id = GroupId(s(GROUP));
    heartbeat.generation_id = generation;
    heartbeat.member_id = s(&member_id);
    let beat: HeartbeatResponse = client.request(ApiKey::Heartbeat, 4, &heartbeat);
    assert_eq!(beat.error_code, 0, "Heartbeat: {beat:?}");

    // Commit partition 0 with the generation; a missing topic is refused.
    let committed = commit(
        &mut client,
        generation,
        &member_id,
        &[(TOPIC, 0), (MISSING_TOPIC, 0), (TOPIC, 9)],
    );
    let unknown = code(ResponseError::UnknownTopicOrPartition);
    let mut errors = commit_errors(&committed);
    errors.sort();
    assert_eq!(
        errors,
        vec![
            (MISSING_TOPIC.to_string(), 0, unknown),
            (TOPIC.to_string(), 0, 0),
            (TOPIC.to_string(), 9, unknown),
        ],
        "OffsetCommit: {committed:?}"
    );

    // Fetch it back; partition 1 was never committed.
    let (group_error, partitions) = fetch_v7(&mut client);
    assert_eq!(group_error, 0);
    assert_eq!(
        partitions,
        vec![
            (0, COMMITTED_OFFSET, COMMITTED_METADATA.to_string(), -1, 0),
            (1, -1, String::new(), -1, 0),
        ],
        "OffsetFetch v7"
    );

    // OffsetFetch v8 for two groups at once, answered in request order.
    let mut topics = OffsetFetchRequestTopics::default();
    topics.name = TopicName(s(TOPIC));
    topics.partition_indexes = vec![0];
    let fetch_group = |group: &str| {
        let mut g = OffsetFetchRequestGroup::default();
        g.group_id = GroupId(s(group));
        g.topics = Some(vec![topics.clone()]);
        g
    };
    let mut fetch_many = OffsetFetchRequest::default();
    fetch_many.groups = vec![fetch_group(NEVER_USED_GROUP), fetch_group(GROUP)];
    let fetched: OffsetFetchResponse = client.request(ApiKey::OffsetFetch, 8, &fetch_many);
    let by_group: Vec<(String, i16, i64)> = fetched
        .groups
        .iter()
        .map(|g| {
            (
                g.group_id.to_string(),
                g.error_code,
                g.topics[0].partitions[0].committed_offset,
            )
        })
        .collect();
    assert_eq!(
        by_group,
        vec![
            (NEVER_USED_GROUP.to_string(), 0, -1),
            (GROUP.to_string(), 0, COMMITTED_OFFSET),
        ],
        "OffsetFetch v8"
    );

    // A commit from an older generation is fenced.
    let stale = commit(&mut client, generation - 1, &member_id, &[(TOPIC, 1)]);
    assert_eq!(
        commit_errors(&stale),
        vec![(TOPIC.to_string(), 1, code(ResponseError::IllegalGeneration))],
        "stale OffsetCommit"
    );

    // ListGroups shows the stable group (v4 state filter, v5 type).
    let mut list = ListGroupsRequest::default();
    list.states_filter = vec![s("stable")];
    let listed: ListGroupsResponse = client.request(ApiKey::ListGroups, 4, &list);
    assert_eq!(listed.error_code, 0);
    let names: Vec<(String, String, String)> = listed
        .groups
        .iter()
        .map(|g| {
            (
                g.group_id.to_string(),
                g.protocol_type.to_string(),
                g.group_state.to_string(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![(GROUP.to_string(), "consumer".into(), "Stable".into())],
        "ListGroups v4, Stable only"
    );
    let all: ListGroupsResponse =
        client.request(ApiKey::ListGroups, 5, &ListGroupsRequest::default());
    let ours = all
        .groups
        .iter()
        .find(|g| g.group_id.as_str() == GROUP)
        .unwrap_or_else(|| panic!("ListGroups v5 misses {GROUP}: {all:?}"));
    assert_eq!(ours.group_type.as_str(), "classic");

    // DescribeGroups: the member, its client id and host, its assignment.
    let described = describe(&mut client, 5, &[GROUP, NEVER_USED_GROUP]);
    assert_eq!(described.groups.len(), 2);
    let group = &described.groups[0];
    assert_eq!(group.error_code, 0, "DescribeGroups: {group:?}");
    assert_eq!(group.group_id.as_str(), GROUP);
    assert_eq!(group.group_state.as_str(), "Stable");
    assert_eq!(group.protocol_type.as_str(), "consumer");
    assert_eq!(group.protocol_data.as_str(), "range");
    assert_eq!(
        group.authorized_operations,
        (1 << 3) | (1 << 6) | (1 << 8),
        "READ, DELETE and DESCRIBE"
    );
    assert_eq!(group.members.len(), 1);
    let member = &group.members[0];
    assert_eq!(member.member_id.as_str(), member_id);
    assert_eq!(member.client_id.as_str(), CLIENT_ID);
    assert_eq!(member.client_host.as_str(), "/127.0.0.1");
    assert_eq!(member.member_metadata, subscription(&[TOPIC]));
    assert_eq!(member.member_assignment, my_assignment);
    let unknown_group = &described.groups[1];
    assert_eq!(unknown_group.group_id.as_str(), NEVER_USED_GROUP);
    assert_eq!(
        (unknown_group.error_code, unknown_group.group_state.as_str()),
        (0, "Dead"),
        "DescribeGroups v5 of an unknown group"
    );

    // A group with members cannot be deleted.
    assert_eq!(
        delete_groups(&mut client, &[GROUP]),
        vec![(GROUP.to_string(), code(ResponseError::NonEmptyGroup))],
        "DeleteGroups of a group with members"
    );

    // LeaveGroup v3: per-member answer.
    let mut leaving = MemberIdentity::default();
    leaving.member_id = s(&member_id);
    let mut leave = LeaveGroupRequest::default();
    leave.group_id = GroupId(s(GROUP));
    leave.members = vec![leaving];
    let left: LeaveGroupResponse = client.request(ApiKey::LeaveGroup, 3, &leave);
    assert_eq!(left.error_code, 0, "LeaveGroup: {left:?}");
    assert_eq!(left.members.len(), 1);
    assert_eq!(left.members[0].member_id.as_str(), member_id);
    assert_eq!(left.members[0].error_code, 0);
    let empty = describe(&mut client, 5, &[GROUP]);
    assert_eq!(empty.groups[0].group_state.as_str(), "Empty");
    assert!(empty.groups[0].members.is_empty());

    // OffsetDelete of the committed partition (and a missing topic).
    let delete_topic = |name: &str| {
        let mut partition = OffsetDeleteRequestPartition::default();
        partition.partition_index = 0;
        let mut topic = OffsetDeleteRequestTopic::default();
        topic.name = TopicName(s(name));
        topic.partitions = vec![partition];
        topic
    };
    let mut offset_delete = OffsetDeleteRequest::default();
    offset_delete.group_id = GroupId(s(GROUP));
    offset_delete.topics = vec![delete_topic(TOPIC), delete_topic(MISSING_TOPIC)];
    let deleted: OffsetDeleteResponse = client.request(ApiKey::OffsetDelete, 0, &offset_delete);
    assert_eq!(deleted.error_code, 0, "OffsetDelete: {deleted:?}");
    let mut outcomes: Vec<(String, i16)> = deleted
        .topics
        .iter()
        .map(|t| (t.name.to_string(), t.partitions[0].error_code))
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        vec![(MISSING_TOPIC.to_string(), unknown), (TOPIC.to_string(), 0)],
        "OffsetDelete"
    );
    let (_, after_delete) = fetch_v7(&mut client);
    assert_eq!(after_delete[0].1, -1, "offset after OffsetDelete");

    // The empty group can be deleted; DescribeGroups v6 no longer finds it.
    assert_eq!(
        delete_groups(&mut client, &[GROUP, NEVER_USED_GROUP]),
        vec![
            (GROUP.to_string(), 0),
            (
                NEVER_USED_GROUP.to_string(),
                code(ResponseError::GroupIdNotFound)
            ),
        ],
        "DeleteGroups"
    );
    let gone = describe(&mut client, 6, &[GROUP]);
    assert_eq!(
        gone.groups[0].error_code,
        code(ResponseError::GroupIdNotFound),
        "DescribeGroups v6 after DeleteGroups: {gone:?}"
    );
    assert_eq!(gone.groups[0].group_state.as_str(), "Dead");

    // JoinGroup v0 (no MEMBER_ID_REQUIRED, no rebalance timeout) and
    // LeaveGroup v0 (one member, one error).
    let legacy = join(&mut client, LEGACY_GROUP, 0, "");
    assert_eq!(legacy.error_code, 0, "JoinGroup v0: {legacy:?}");
    assert_eq!(legacy.generation_id, 1);
    assert!(!legacy.member_id.is_empty());
    assert_eq!(legacy.leader, legacy.member_id);
    assert_eq!(legacy.protocol_name.as_deref(), Some("range"));
    let mut leave_v0 = LeaveGroupRequest::default();
    leave_v0.group_id = GroupId(s(LEGACY_GROUP));
    leave_v0.member_id = legacy.member_id.clone();
    let left_v0: LeaveGroupResponse = client.request(ApiKey::LeaveGroup, 0, &leave_v0);
    assert_eq!(left_v0.error_code, 0, "LeaveGroup v0: {left_v0:?}");
    let mut leave_unknown = leave_v0.clone();
    leave_unknown.member_id = s("nobody");
    let refused_v0: LeaveGroupResponse = client.request(ApiKey::LeaveGroup, 1, &leave_unknown);
    assert_eq!(
        refused_v0.error_code,
        code(ResponseError::UnknownMemberId),
        "LeaveGroup v1 of an unknown member carries the member's error"
    );

    // An empty group id, as Kafka 4.1 keeps it for backward compatibility:
    // it has a coordinator, commits without a generation, fetches, is
    // described and deleted like any group, but cannot be joined.
    let mut find_empty = FindCoordinatorRequest::default();
    find_empty.key = s("");
    let found_empty: FindCoordinatorResponse =
        client.request(ApiKey::FindCoordinator, 1, &find_empty);
    assert_eq!(
        found_empty.error_code, 0,
        "FindCoordinator \"\": {found_empty:?}"
    );
    let mut commit_empty = OffsetCommitRequest::default();
    commit_empty.generation_id_or_member_epoch = -1;
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = 7;
    p.committed_leader_epoch = -1;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s(TOPIC));
    t.partitions = vec![p];
    commit_empty.topics = vec![t];
    let committed: OffsetCommitResponse = client.request(ApiKey::OffsetCommit, 8, &commit_empty);
    assert_eq!(commit_errors(&committed), vec![(TOPIC.to_string(), 0, 0)]);
    let mut fetch_topic = OffsetFetchRequestTopic::default();
    fetch_topic.name = TopicName(s(TOPIC));
    fetch_topic.partition_indexes = vec![0];
    let mut fetch_empty = OffsetFetchRequest::default();
    fetch_empty.topics = Some(vec![fetch_topic]);
    let fetched: OffsetFetchResponse = client.request(ApiKey::OffsetFetch, 7, &fetch_empty);
    assert_eq!(
        (
            fetched.error_code,
            fetched.topics[0].partitions[0].committed_offset
        ),
        (0, 7),
        "OffsetFetch \"\": {fetched:?}"
    );
    let described_empty = describe(&mut client, 5, &[""]);
    assert_eq!(
        (
            described_empty.groups[0].error_code,
            described_empty.groups[0].group_state.as_str()
        ),
        (0, "Empty")
    );
    assert_eq!(
        join(&mut client, "", 5, "").error_code,
        code(ResponseError::InvalidGroupId)
    );
    assert_eq!(delete_groups(&mut client, &[""]), vec![(String::new(), 0)]);
}
