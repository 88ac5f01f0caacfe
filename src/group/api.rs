//! The coordinator's inputs and outputs: plain request and response structs
//! (one per Kafka API, version-independent: the handler copies fields from
//! and to the `kafka-protocol` types of the version it speaks), and the
//! effects every mutating call returns.
//!
//! # Pending requests
//!
//! JoinGroup and SyncGroup are answered when the rebalance gets there, and
//! OffsetCommit, TxnOffsetCommit, SyncGroup (the leader's assignment), DeleteGroups,
//! OffsetDelete and a static member's rejoin are answered only once the
//! records they wrote are durable. ConsumerGroupHeartbeat, a classic
//! member's JoinGroup to a consumer group and an OffsetFetch with
//! `require_stable` wait, as Kafka's write operations do, until every
//! append before them is durable. Heartbeat, LeaveGroup and the other reads
//! are answered at once. So each call that may wait takes
//! a caller-chosen [`RequestId`] (unique among the caller's outstanding
//! requests) and returns an [`Outcome`] whose `reply` is either
//! [`Reply::Ready`] (answer now) or [`Reply::Pending`]. A pending request is
//! answered later by a [`Completion`] carrying its id, which any later call
//! may return in its [`Effects`]: another member's join, a timer, an append
//! acknowledgement. A call never returns a completion for its own request id;
//! that answer is its `reply`. Every pending request is completed exactly
//! once, eventually: by the rebalance, by an error (the member was removed or
//! fenced, a newer request from the same member replaced it), or by
//! [`super::GroupCoordinator::unload`]. The integration keeps one oneshot per
//! pending id.
//!
//! # Appends
//!
//! Records to persist come as [`Append`]s, each with an [`AppendId`]. The
//! caller appends them to the coordinator's `__consumer_offsets` partition in
//! the order given and reports each one, in that same order, through
//! [`super::GroupCoordinator::append_completed`] once it is durable (or
//! failed). State that the records describe (committed offsets, deleted
//! groups, a leader's assignment) takes effect only then, so a response never
//! promises more than the log holds. Membership that the log does not carry
//! (who is joining, timers) changes at once, as in Kafka.
//!
//! Pure types: any core.

use bytes::Bytes;

use super::records::CoordinatorRecord;
use crate::protocol::ErrorCode;

/// A caller-chosen id of a request that may be answered later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// Id of an [`Append`], to acknowledge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AppendId(pub u64);

/// Records to append to the coordinator's partition as one batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Append {
    /// Acknowledge with this id.
    pub id: AppendId,
    /// The records, in order. Encode each with
    /// [`CoordinatorRecord::key_bytes`] and [`CoordinatorRecord::value_bytes`].
    pub records: Vec<CoordinatorRecord>,
    /// Set for TxnOffsetCommit: write the batch as a transactional batch of
    /// this producer (base sequence -1), checked against the producer's
    /// epoch on the partition; None for the coordinator's own batches.
    pub producer: Option<TxnProducer>,
}

/// The transactional producer an [`Append`] is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnProducer {
    /// `producer_id`.
    pub producer_id: i64,
    /// `producer_epoch`.
    pub producer_epoch: i16,
}

/// The answer to a request that was pending.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The id the request was given.
    pub request_id: RequestId,
    /// Its answer.
    pub response: Response,
}

/// Any answer that can be delivered as a [`Completion`].
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// JoinGroup.
    JoinGroup(JoinGroupResponse),
    /// SyncGroup.
    SyncGroup(SyncGroupResponse),
    /// OffsetCommit.
    OffsetCommit(OffsetCommitResponse),
    /// DeleteGroups.
    DeleteGroups(DeleteGroupsResponse),
    /// OffsetDelete.
    OffsetDelete(OffsetDeleteResponse),
    /// TxnOffsetCommit.
    TxnOffsetCommit(TxnOffsetCommitResponse),
    /// ConsumerGroupHeartbeat, answered once its records are durable.
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse),
    /// OffsetFetch with `require_stable`, answered once the appends before
    /// it are durable.
    OffsetFetch(OffsetFetchResponse),
}

/// What a call asks the caller to do besides answering its own request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    /// Records to append, in order.
    pub appends: Vec<Append>,
    /// Answers to other requests that were pending.
    pub completions: Vec<Completion>,
}

impl Effects {
    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        self.appends.is_empty() && self.completions.is_empty()
    }
}

/// A request's own answer: now, or later as a [`Completion`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<T> {
    /// Answer now.
    Ready(T),
    /// Answered later by a [`Completion`] with the request's id.
    Pending,
}

impl<T> Reply<T> {
    /// The answer, if ready.
    pub fn ready(self) -> Option<T> {
        match self {
            Reply::Ready(value) => Some(value),
            Reply::Pending => None,
        }
    }
}

/// What a mutating call returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    /// This request's answer.
    pub reply: Reply<T>,
    /// Appends and other requests' answers.
    pub effects: Effects,
}

/// One protocol a joining member supports, with its metadata (for consumers,
/// a `ConsumerProtocolSubscription`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinProtocol {
    /// Protocol (assignor) name, e.g. `range`, `cooperative-sticky`.
    pub name: String,
    /// Opaque metadata.
    pub metadata: Bytes,
}

/// JoinGroup (key 11), any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupRequest {
    /// `group_id`.
    pub group_id: String,
    /// `session_timeout_ms`.
    pub session_timeout_ms: i32,
    /// `rebalance_timeout_ms` (v1+); -1 (v0) means the session timeout.
    pub rebalance_timeout_ms: i32,
    /// `member_id`; empty on a first join.
    pub member_id: String,
    /// `group_instance_id` (v5+): static membership (KIP-345).
    pub group_instance_id: Option<String>,
    /// `protocol_type`, e.g. `consumer`.
    pub protocol_type: String,
    /// `protocols`, in order of preference.
    pub protocols: Vec<JoinProtocol>,
    /// The request header's client id.
    pub client_id: String,
    /// The client's address as Kafka prints it (`/127.0.0.1`).
    pub client_host: String,
    /// The request's API version: v4+ get MEMBER_ID_REQUIRED on a first join
    /// (KIP-394), v9+ may get `skip_assignment`.
    pub api_version: i16,
}

/// One member's metadata in the leader's JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupMember {
    /// `member_id`.
    pub member_id: String,
    /// `group_instance_id`.
    pub group_instance_id: Option<String>,
    /// `metadata` for the chosen protocol.
    pub metadata: Bytes,
}

/// JoinGroup answer. `protocol_type` and `protocol_name` are None where
/// Kafka sends null; versions that cannot carry null send "" instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponse {
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// `generation_id`; -1 on errors.
    pub generation_id: i32,
    /// `protocol_type` (v7+).
    pub protocol_type: Option<String>,
    /// `protocol_name`.
    pub protocol_name: Option<String>,
    /// `leader`.
    pub leader: String,
    /// `skip_assignment` (v9+).
    pub skip_assignment: bool,
    /// `member_id`: the member's id (new on MEMBER_ID_REQUIRED).
    pub member_id: String,
    /// `members`: everyone's metadata for the leader, empty for followers.
    pub members: Vec<JoinGroupMember>,
}

impl JoinGroupResponse {
    /// A failed join.
    pub fn error(error: ErrorCode, member_id: &str) -> Self {
        JoinGroupResponse {
            error: Some(error),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }
}

/// One member's assignment in the leader's SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupAssignment {
    /// `member_id`.
    pub member_id: String,
    /// `assignment`.
    pub assignment: Bytes,
}

/// SyncGroup (key 14), any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupRequest {
    /// `group_id`.
    pub group_id: String,
    /// `generation_id`.
    pub generation_id: i32,
    /// `member_id`.
    pub member_id: String,
    /// `group_instance_id` (v3+).
    pub group_instance_id: Option<String>,
    /// `protocol_type` (v5+); None when not sent.
    pub protocol_type: Option<String>,
    /// `protocol_name` (v5+); None when not sent.
    pub protocol_name: Option<String>,
    /// `assignments`: only the leader sends them.
    pub assignments: Vec<SyncGroupAssignment>,
}

/// SyncGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupResponse {
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// `protocol_type` (v5+).
    pub protocol_type: Option<String>,
    /// `protocol_name` (v5+).
    pub protocol_name: Option<String>,
    /// `assignment`.
    pub assignment: Bytes,
}

impl SyncGroupResponse {
    /// A failed sync.
    pub fn error(error: ErrorCode) -> Self {
        SyncGroupResponse {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// Heartbeat (key 12), any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    /// `group_id`.
    pub group_id: String,
    /// `generation_id`.
    pub generation_id: i32,
    /// `member_id`.
    pub member_id: String,
    /// `group_instance_id` (v3+).
    pub group_instance_id: Option<String>,
}

/// Heartbeat answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatResponse {
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
}

/// A member leaving; v0-v2 carry exactly one, by member id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupMember {
    /// `member_id`; empty to remove a static member by instance id.
    pub member_id: String,
    /// `group_instance_id` (v3+).
    pub group_instance_id: Option<String>,
}

/// LeaveGroup (key 13), any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupRequest {
    /// `group_id`.
    pub group_id: String,
    /// `members` (v3+), or the single `member_id` of v0-v2.
    pub members: Vec<LeaveGroupMember>,
}

/// One member's outcome in a LeaveGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupMemberResponse {
    /// `member_id` as sent.
    pub member_id: String,
    /// `group_instance_id` as sent.
    pub group_instance_id: Option<String>,
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
}

/// LeaveGroup answer. For v0-v2 the top-level error is `error` or, if None,
/// the single member's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    /// Top-level `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// Per-member outcomes (v3+), in request order.
    pub members: Vec<LeaveGroupMemberResponse>,
}

/// One partition's commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitPartition {
    /// `partition_index`.
    pub partition_index: i32,
    /// `committed_offset`.
    pub committed_offset: i64,
    /// `committed_leader_epoch` (v6+), -1 when unknown.
    pub committed_leader_epoch: i32,
    /// `committed_metadata`; None is stored as "".
    pub committed_metadata: Option<String>,
}

/// One topic's commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitTopic {
    /// `name`.
    pub name: String,
    /// `partitions`.
    pub partitions: Vec<OffsetCommitPartition>,
}

/// OffsetCommit (key 8), any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    /// `group_id`.
    pub group_id: String,
    /// `generation_id_or_member_epoch`; -1 for a commit outside group
    /// management (admin tools, manual assignment).
    pub generation_id: i32,
    /// `member_id`.
    pub member_id: String,
    /// `group_instance_id` (v7+).
    pub group_instance_id: Option<String>,
    /// `retention_time_ms` (v2-v4); -1 means the broker's retention.
    pub retention_time_ms: i64,
    /// `topics`.
    pub topics: Vec<OffsetCommitTopic>,
    /// The request's API version (v9+ get GROUP_ID_NOT_FOUND for an unknown
    /// group instead of ILLEGAL_GENERATION).
    pub api_version: i16,
}

/// One partition's commit outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetCommitPartitionResponse {
    /// `partition_index`.
    pub partition_index: i32,
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
}

/// One topic's commit outcomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitTopicResponse {
    /// `name`.
    pub name: String,
    /// `partitions`, in request order.
    pub partitions: Vec<OffsetCommitPartitionResponse>,
}

/// OffsetCommit answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    /// `topics`, in request order.
    pub topics: Vec<OffsetCommitTopicResponse>,
}

/// TxnOffsetCommit (key 28), any version: offsets committed as part of a
/// producer's transaction. They stay pending (invisible to OffsetFetch)
/// until the transaction's COMMIT marker reaches the offsets partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommitRequest {
    /// `transactional_id` (logged only: the transaction coordinator owns it).
    pub transactional_id: String,
    /// `group_id`.
    pub group_id: String,
    /// `producer_id`.
    pub producer_id: i64,
    /// `producer_epoch`.
    pub producer_epoch: i16,
    /// `generation_id` (v3+); -1 before v3 and outside group management.
    pub generation_id: i32,
    /// `member_id` (v3+); "" before v3.
    pub member_id: String,
    /// `group_instance_id` (v3+).
    pub group_instance_id: Option<String>,
    /// `topics`; `committed_leader_epoch` is -1 before v2.
    pub topics: Vec<OffsetCommitTopic>,
}

/// TxnOffsetCommit answer: per-partition errors only, the same shape as
/// OffsetCommit's.
pub type TxnOffsetCommitResponse = OffsetCommitResponse;

/// Which partitions of a topic to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopic {
    /// `name`.
    pub name: String,
    /// `partition_indexes`.
    pub partition_indexes: Vec<i32>,
}

/// One group of an OffsetFetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchGroup {
    /// `group_id`.
    pub group_id: String,
    /// `member_id` and `member_epoch` (v9+) of a KIP-848 member fetching
    /// its group's offsets; None when not given (null member id).
    pub member: Option<(String, i32)>,
    /// `topics`; None fetches every committed offset of the group.
    pub topics: Option<Vec<OffsetFetchTopic>>,
}

/// OffsetFetch (key 9), any version: v0-v7 carry one group, v8+ several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    /// The groups.
    pub groups: Vec<OffsetFetchGroup>,
    /// `require_stable` (v7+, KIP-447): partitions with pending
    /// transactional offsets answer UNSTABLE_OFFSET_COMMIT (retriable)
    /// instead of the last committed offset.
    pub require_stable: bool,
}

/// One partition's committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchPartitionResponse {
    /// `partition_index`.
    pub partition_index: i32,
    /// `committed_offset`; -1 when nothing was committed.
    pub committed_offset: i64,
    /// `committed_leader_epoch`; -1 when unknown.
    pub committed_leader_epoch: i32,
    /// `metadata`.
    pub metadata: String,
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
}

/// One topic's committed offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopicResponse {
    /// `name`.
    pub name: String,
    /// `partitions`.
    pub partitions: Vec<OffsetFetchPartitionResponse>,
}

/// One group's committed offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchGroupResponse {
    /// `group_id`.
    pub group_id: String,
    /// Group-level `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// `topics`.
    pub topics: Vec<OffsetFetchTopicResponse>,
}

/// OffsetFetch answer, one entry per requested group, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    /// The groups.
    pub groups: Vec<OffsetFetchGroupResponse>,
}

/// ListGroups (key 16), any version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroupsRequest {
    /// `states_filter` (v4+), case-insensitive; empty lists every state.
    pub states_filter: Vec<String>,
    /// `types_filter` (v5+), case-insensitive; empty lists every type.
    pub types_filter: Vec<String>,
}

/// One listed group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    /// `group_id`.
    pub group_id: String,
    /// `protocol_type`, "" when none.
    pub protocol_type: String,
    /// `group_state` (v4+), e.g. `Stable`.
    pub group_state: String,
    /// `group_type` (v5+): always `classic` here.
    pub group_type: String,
}

/// ListGroups answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListGroupsResponse {
    /// `groups`, sorted by id.
    pub groups: Vec<ListedGroup>,
}

/// One member of a described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    /// `member_id`.
    pub member_id: String,
    /// `group_instance_id` (v4+).
    pub group_instance_id: Option<String>,
    /// `client_id`.
    pub client_id: String,
    /// `client_host`.
    pub client_host: String,
    /// `member_metadata`: only while the group is Stable.
    pub member_metadata: Bytes,
    /// `member_assignment`.
    pub member_assignment: Bytes,
}

/// One described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// `group_id`.
    pub group_id: String,
    /// `group_state`; `Dead` for an unknown group.
    pub group_state: String,
    /// `protocol_type`.
    pub protocol_type: String,
    /// `protocol_data`: the chosen protocol while Stable, else "".
    pub protocol_data: String,
    /// `members`.
    pub members: Vec<DescribedMember>,
    /// The group exists but is a KIP-848 consumer group: v6 says so in its
    /// error message ("Group g is not a classic group.").
    pub not_classic: bool,
}

/// DeleteGroups answer: one result per requested group, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteGroupsResponse {
    /// `(group_id, error)`; None is NONE.
    pub results: Vec<(String, Option<ErrorCode>)>,
}

/// OffsetDelete (key 47).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteRequest {
    /// `group_id`.
    pub group_id: String,
    /// `topics`.
    pub topics: Vec<OffsetFetchTopic>,
}

/// One topic's OffsetDelete outcomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteTopicResponse {
    /// `name`.
    pub name: String,
    /// `(partition_index, error)`; None is NONE.
    pub partitions: Vec<(i32, Option<ErrorCode>)>,
}

/// OffsetDelete answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    /// Top-level `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// `topics`; empty when `error` is set.
    pub topics: Vec<OffsetDeleteTopicResponse>,
}

/// The wire value of an optional error: 0 for None.
pub fn error_code(error: Option<ErrorCode>) -> i16 {
    error.map_or(0, |e| e.code())
}

/// ConsumerGroupHeartbeat (key 68), v0-v1: a KIP-848 member joins
/// (`member_epoch` 0), heartbeats, or leaves (-1; -2 for a static member
/// leaving for a while). Optional fields are None when the member sends
/// null: "unchanged since my last heartbeat".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupHeartbeatRequest {
    /// `group_id`.
    pub group_id: String,
    /// `member_id`: generated by the client from v1; empty on a v0 join.
    pub member_id: String,
    /// `member_epoch`.
    pub member_epoch: i32,
    /// `instance_id` (static membership).
    pub instance_id: Option<String>,
    /// `rack_id`.
    pub rack_id: Option<String>,
    /// `rebalance_timeout_ms`; -1 when unchanged.
    pub rebalance_timeout_ms: i32,
    /// `subscribed_topic_names`.
    pub subscribed_topic_names: Option<Vec<String>>,
    /// `subscribed_topic_regex` (v1).
    pub subscribed_topic_regex: Option<String>,
    /// `subscribed_topic_regex` compiled off the reactor, where it is not
    /// empty; None: compiled by the coordinator if needed.
    pub compiled_regex: Option<crate::group::consumer::CompiledRegex>,
    /// `server_assignor`.
    pub server_assignor: Option<String>,
    /// `topic_partitions`: the partitions the member owns.
    pub topic_partitions: Option<crate::group::assignor::Assignment>,
    /// The request header's client id.
    pub client_id: String,
    /// The client's address as Kafka prints it (`/127.0.0.1`).
    pub client_host: String,
    /// The request's API version.
    pub api_version: i16,
}

/// ConsumerGroupHeartbeat answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupHeartbeatResponse {
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// `error_message`.
    pub error_message: Option<String>,
    /// `member_id`.
    pub member_id: Option<String>,
    /// `member_epoch`.
    pub member_epoch: i32,
    /// `heartbeat_interval_ms`.
    pub heartbeat_interval_ms: i32,
    /// `assignment`: None when unchanged.
    pub assignment: Option<crate::group::assignor::Assignment>,
}

impl ConsumerGroupHeartbeatResponse {
    /// An error answer.
    pub fn error(error: ErrorCode, message: impl Into<String>) -> Self {
        ConsumerGroupHeartbeatResponse {
            error: Some(error),
            error_message: Some(message.into()),
            member_id: None,
            member_epoch: 0,
            heartbeat_interval_ms: 0,
            assignment: None,
        }
    }
}

/// One topic's partitions, named, in a ConsumerGroupDescribe answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedTopicPartitions {
    /// `topic_id`.
    pub topic_id: uuid::Uuid,
    /// `topic_name`.
    pub topic_name: String,
    /// `partitions`.
    pub partitions: Vec<i32>,
}

/// One member in a ConsumerGroupDescribe answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConsumerMember {
    /// `member_id`.
    pub member_id: String,
    /// `instance_id`.
    pub instance_id: Option<String>,
    /// `rack_id`.
    pub rack_id: Option<String>,
    /// `member_epoch`.
    pub member_epoch: i32,
    /// `client_id`.
    pub client_id: String,
    /// `client_host`.
    pub client_host: String,
    /// `subscribed_topic_names`.
    pub subscribed_topic_names: Vec<String>,
    /// `subscribed_topic_regex`.
    pub subscribed_topic_regex: Option<String>,
    /// `assignment`: what it owns now.
    pub assignment: Vec<DescribedTopicPartitions>,
    /// `target_assignment`.
    pub target_assignment: Vec<DescribedTopicPartitions>,
    /// A member speaking the classic protocol (`member_type` 0, v1).
    pub classic: bool,
}

/// One group in a ConsumerGroupDescribe answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConsumerGroup {
    /// `error_code`; None is NONE.
    pub error: Option<ErrorCode>,
    /// `error_message`.
    pub error_message: Option<String>,
    /// `group_id`.
    pub group_id: String,
    /// `group_state`.
    pub group_state: String,
    /// `group_epoch`.
    pub group_epoch: i32,
    /// `assignment_epoch`.
    pub assignment_epoch: i32,
    /// `assignor_name`.
    pub assignor_name: String,
    /// `members`.
    pub members: Vec<DescribedConsumerMember>,
}
