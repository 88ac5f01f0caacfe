//! Goal: a member that stops heartbeating for longer than its session
//! timeout is removed from the group, and whatever it sends afterwards with
//! its old member id and generation (OffsetCommit, Heartbeat) is refused
//! (UNKNOWN_MEMBER_ID, as Kafka answers, or ILLEGAL_GENERATION) and never
//! applied: the committed offsets stay those of the member that took over.
//! Alone in its group, an expired member leaves the group Empty. The member
//! that takes over resumes at exactly the offsets the expired member had
//! committed while it was alive.
//!
//! Method: the "paused" member is driven over a raw connection (JoinGroup
//! with a 1 s session timeout, SyncGroup assigning itself both partitions,
//! one OffsetCommit), then simply never heartbeats again, which is exactly
//! what a stopped process does. A broker that accepts 1 s session timeouts,
//! a 2-partition topic with 10 messages per partition. Phase 1: the member is
//! alone; the group must turn Empty within the session timeout plus slack,
//! and the old member's commit is refused. Phase 2: a librdkafka consumer
//! joins while the raw member is silent, must get both partitions once the
//! raw member's session expired, consume from the raw member's commits to
//! the end and commit; then the raw member's commit and heartbeat are
//! refused and the group's offsets are unchanged.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedPartition;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest,
    SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use rdkafka::consumer::Consumer;

use common::groups::{
    assigned, committed_numbers, group_broker_options, group_consumer_config, poll_all_until,
    subscribed_consumer, Consumed,
};
use common::kafka::{create_topic, future_producer, produce_all, producer_config, test_messages};
use common::wire::RawClient;
use common::Broker;

const TOPIC: &str = "ledger";
const PARTITIONS: i32 = 2;
const PER_PARTITION: i64 = 10;
const SESSION_TIMEOUT_MS: i32 = 1000;
/// Time a removal may take beyond the session timeout.
const SLACK: Duration = Duration::from_secs(5);

fn s(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

fn code(error: ResponseError) -> i16 {
    error.code()
}

fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        Some(error) => format!("{error:?} ({code})"),
        None => format!("NONE ({code})"),
    }
}

/// A member of a group driven by hand.
struct RawMember {
    client: RawClient,
    group: String,
    member_id: String,
    generation: i32,
}

fn subscription() -> Bytes {
    let mut subscription = ConsumerProtocolSubscription::default();
    subscription.topics = vec![s(TOPIC)];
    let mut buf = BytesMut::new();
    buf.put_i16(0);
    subscription
        .encode(&mut buf, 0)
        .expect("encode subscription");
    buf.freeze()
}

fn assignment(partitions: &[i32]) -> Bytes {
    let mut assigned = AssignedPartition::default();
    assigned.topic = TopicName(s(TOPIC));
    assigned.partitions = partitions.to_vec();
    let mut assignment = ConsumerProtocolAssignment::default();
    assignment.assigned_partitions = vec![assigned];
    let mut buf = BytesMut::new();
    buf.put_i16(0);
    assignment.encode(&mut buf, 0).expect("encode assignment");
    buf.freeze()
}

/// FindCoordinator until the group's coordinator is ready (the first one
/// creates `__consumer_offsets`).
fn wait_for_coordinator(client: &mut RawClient, group: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut find = FindCoordinatorRequest::default();
        find.key = s(group);
        let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 2, &find);
        if found.error_code == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "FindCoordinator for {group} still fails: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn join(client: &mut RawClient, group: &str, member_id: &str) -> JoinGroupResponse {
    let mut protocol = JoinGroupRequestProtocol::default();
    protocol.name = s("range");
    protocol.metadata = subscription();
    let mut request = JoinGroupRequest::default();
    request.group_id = GroupId(s(group));
    request.session_timeout_ms = SESSION_TIMEOUT_MS;
    request.rebalance_timeout_ms = 10_000;
    request.member_id = s(member_id);
    request.protocol_type = s("consumer");
    request.protocols = vec![protocol];
    client.request(ApiKey::JoinGroup, 5, &request)
}

impl RawMember {
    /// Joins `group` as its only member and assigns itself both partitions.
    fn join_alone(bootstrap: &str, group: &str) -> RawMember {
        let mut client = RawClient::connect(bootstrap);
        wait_for_coordinator(&mut client, group);
        // Right after __consumer_offsets is created the coordinator may
        // still be loading; clients retry these errors, so does this one.
        let retriable = [
            code(ResponseError::CoordinatorLoadInProgress),
            code(ResponseError::CoordinatorNotAvailable),
            code(ResponseError::NotCoordinator),
        ];
        let deadline = Instant::now() + Duration::from_secs(30);
        let first = loop {
            let first = join(&mut client, group, "");
            if !retriable.contains(&first.error_code) {
                break first;
            }
            assert!(
                Instant::now() < deadline,
                "JoinGroup for {group} still answers {}",
                error_name(first.error_code)
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(
            first.error_code,
            code(ResponseError::MemberIdRequired),
            "first JoinGroup v5: {first:?}"
        );
        let joined = join(&mut client, group, first.member_id.as_str());
        assert_eq!(joined.error_code, 0, "JoinGroup with member id: {joined:?}");
        assert_eq!(joined.leader, joined.member_id, "alone, so the leader");
        let member_id = joined.member_id.to_string();
        let mut mine = SyncGroupRequestAssignment::default();
        mine.member_id = s(&member_id);
        mine.assignment = assignment(&[0, 1]);
        let mut sync = SyncGroupRequest::default();
        sync.group_id = GroupId(s(group));
        sync.generation_id = joined.generation_id;
        sync.member_id = s(&member_id);
        sync.protocol_type = Some(s("consumer"));
        sync.protocol_name = Some(s("range"));
        sync.assignments = vec![mine];
        let synced: SyncGroupResponse = client.request(ApiKey::SyncGroup, 5, &sync);
        assert_eq!(synced.error_code, 0, "SyncGroup: {synced:?}");
        assert_eq!(synced.assignment, assignment(&[0, 1]));
        RawMember {
            client,
            group: group.to_string(),
            member_id,
            generation: joined.generation_id,
        }
    }

    /// OffsetCommit v8 with this member's id and generation: error per
    /// partition.
    fn commit(&mut self, offsets: &[(i32, i64)]) -> BTreeMap<i32, i16> {
        let mut topic = OffsetCommitRequestTopic::default();
        topic.name = TopicName(s(TOPIC));
        topic.partitions = offsets
            .iter()
            .map(|&(partition, offset)| {
                let mut p = OffsetCommitRequestPartition::default();
                p.partition_index = partition;
                p.committed_offset = offset;
                p.committed_leader_epoch = -1;
                p
            })
            .collect();
        let mut request = OffsetCommitRequest::default();
        request.group_id = GroupId(s(&self.group));
        request.generation_id_or_member_epoch = self.generation;
        request.member_id = s(&self.member_id);
        request.topics = vec![topic];
        let response: OffsetCommitResponse = self.client.request(ApiKey::OffsetCommit, 8, &request);
        response
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| (p.partition_index, p.error_code))
            .collect()
    }

    fn heartbeat(&mut self) -> i16 {
        let mut request = HeartbeatRequest::default();
        request.group_id = GroupId(s(&self.group));
        request.generation_id = self.generation;
        request.member_id = s(&self.member_id);
        let response: HeartbeatResponse = self.client.request(ApiKey::Heartbeat, 4, &request);
        response.error_code
    }

    /// `(state, member ids)` from DescribeGroups v5.
    fn describe(&mut self) -> (String, Vec<String>) {
        let mut request = DescribeGroupsRequest::default();
        request.groups = vec![GroupId(s(&self.group))];
        let response: DescribeGroupsResponse =
            self.client.request(ApiKey::DescribeGroups, 5, &request);
        let group = &response.groups[0];
        assert_eq!(group.error_code, 0, "DescribeGroups: {group:?}");
        (
            group.group_state.to_string(),
            group
                .members
                .iter()
                .map(|m| m.member_id.to_string())
                .collect(),
        )
    }

    /// Committed offsets of both partitions through OffsetFetch v7.
    fn fetch(&mut self) -> BTreeMap<i32, i64> {
        let mut topic = OffsetFetchRequestTopic::default();
        topic.name = TopicName(s(TOPIC));
        topic.partition_indexes = (0..PARTITIONS).collect();
        let mut request = OffsetFetchRequest::default();
        request.group_id = GroupId(s(&self.group));
        request.topics = Some(vec![topic]);
        let response: OffsetFetchResponse = self.client.request(ApiKey::OffsetFetch, 7, &request);
        assert_eq!(response.error_code, 0, "OffsetFetch: {response:?}");
        response
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| {
                assert_eq!(p.error_code, 0, "OffsetFetch partition: {p:?}");
                (p.partition_index, p.committed_offset)
            })
            .collect()
    }
}

fn assert_refused(what: &str, errors: &BTreeMap<i32, i16>) {
    let refusals = [
        code(ResponseError::UnknownMemberId),
        code(ResponseError::IllegalGeneration),
    ];
    for (partition, &error) in errors {
        assert!(
            refusals.contains(&error),
            "{what}: partition {partition} answered {} instead of UNKNOWN_MEMBER_ID (Kafka's \
             answer for a removed member) or ILLEGAL_GENERATION; all: {:?}",
            error_name(error),
            errors
                .iter()
                .map(|(p, e)| (p, error_name(*e)))
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(
        errors.len(),
        PARTITIONS as usize,
        "{what}: one answer per partition"
    );
}

#[test]
fn consumer_groups_expired_member_commit_is_refused() {
    let broker = Broker::start(group_broker_options());
    let bootstrap = broker.bootstrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(create_topic(&bootstrap, TOPIC, PARTITIONS));
    let producer = future_producer(&producer_config(&bootstrap));
    runtime.block_on(produce_all(
        &producer,
        TOPIC,
        &test_messages((PER_PARTITION * PARTITIONS as i64) as u64, PARTITIONS),
    ));

    // Phase 1: alone in its group, the silent member is removed and the
    // group turns Empty; its late commit is refused.
    let mut lonely = RawMember::join_alone(&bootstrap, "lonely-readers");
    let errors = lonely.commit(&[(0, 2), (1, 2)]);
    assert_eq!(errors, [(0, 0), (1, 0)].into(), "commit while alive");
    let silent_since = Instant::now();
    let limit = Duration::from_millis(SESSION_TIMEOUT_MS as u64) + SLACK;
    loop {
        let (state, members) = lonely.describe();
        if state == "Empty" && members.is_empty() {
            break;
        }
        assert!(
            silent_since.elapsed() < limit,
            "a member silent for {:?} (session timeout {SESSION_TIMEOUT_MS} ms) is still in \
             the group: state {state}, members {members:?}",
            silent_since.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let removed_after = silent_since.elapsed();
    eprintln!("lonely member removed {removed_after:?} after its last request");
    assert!(
        removed_after >= Duration::from_millis(SESSION_TIMEOUT_MS as u64 - 100),
        "member removed after {removed_after:?}, before its {SESSION_TIMEOUT_MS} ms session \
         timeout"
    );
    let late = lonely.commit(&[(0, 5), (1, 5)]);
    assert_refused("expired member's commit to its now empty group", &late);
    assert_eq!(
        lonely.fetch(),
        [(0, 2), (1, 2)].into(),
        "offsets after the expired member's refused commit"
    );

    // Phase 2: another consumer takes over while the raw member is silent.
    const GROUP: &str = "ledger-readers";
    let mut zombie = RawMember::join_alone(&bootstrap, GROUP);
    let errors = zombie.commit(&[(0, 3), (1, 4)]);
    assert_eq!(
        errors,
        [(0, 0), (1, 0)].into(),
        "zombie's commit while alive"
    );
    let silent_since = Instant::now();

    let config = group_consumer_config(&bootstrap, GROUP);
    let successor = subscribed_consumer(&config, "successor", TOPIC);
    let mut consumed = [Consumed::default()];
    let mut poll_errors = Vec::new();
    let ends: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, PER_PARTITION)).collect();
    let ok = poll_all_until(
        &[&successor],
        TOPIC,
        &mut consumed,
        &mut poll_errors,
        Duration::from_millis(SESSION_TIMEOUT_MS as u64) + Duration::from_secs(15),
        |c, consumed| {
            assigned(c[0]).len() == PARTITIONS as usize && consumed[0].next_offsets() == ends
        },
    );
    assert!(
        ok,
        "the successor should own both partitions once the silent member's session expired, \
         and consume to the end: assigned {:?}, consumed {:?}, rebalances {:?}, errors \
         {poll_errors:?} / {:?}",
        assigned(&successor),
        consumed[0].next_offsets(),
        successor.context().events(),
        successor.context().errors()
    );
    eprintln!(
        "successor owned everything and consumed to the end {:?} after the zombie fell silent",
        silent_since.elapsed()
    );
    assert_eq!(
        consumed[0].offsets(0),
        (3..PER_PARTITION).collect::<Vec<_>>(),
        "successor resumes partition 0 at the zombie's commit"
    );
    assert_eq!(
        consumed[0].offsets(1),
        (4..PER_PARTITION).collect::<Vec<_>>(),
        "successor resumes partition 1 at the zombie's commit"
    );
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends,
        "successor's commits"
    );

    // The zombie wakes up and commits with its old member id and generation.
    let late = zombie.commit(&[(0, 7), (1, 7)]);
    assert_refused(
        "expired member's commit after another member took over",
        &late,
    );
    let beat = zombie.heartbeat();
    assert!(
        beat == code(ResponseError::UnknownMemberId)
            || beat == code(ResponseError::IllegalGeneration),
        "expired member's heartbeat answered {} instead of UNKNOWN_MEMBER_ID",
        error_name(beat)
    );
    assert_eq!(
        zombie.fetch(),
        ends,
        "committed offsets after the expired member's refused commit (raw OffsetFetch)"
    );
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends,
        "committed offsets after the expired member's refused commit (librdkafka)"
    );
    let (state, members) = zombie.describe();
    assert_eq!(state, "Stable", "group state with the successor");
    assert!(
        !members.contains(&zombie.member_id) && members.len() == 1,
        "members should be only the successor, not the expired {}: {members:?}",
        zombie.member_id
    );
    drop(successor);
}
