//! [`GroupCoordinator`]: the classic-protocol group coordinator and offsets
//! store of one `__consumer_offsets` partition, as a deterministic state
//! machine. See [`super::api`] for how parked requests and appends flow back
//! to the caller.
//!
//! The rebalance logic follows Kafka 4.x `GroupMetadataManager` (classic
//! groups) function by function, so its names reappear here:
//! `prepare_rebalance`, `complete_join`, `propagate_assignment`, ... The
//! offset logic follows `OffsetMetadataManager`. Deliberate differences:
//!
//! - Offsets, group deletions and a leader's assignment take effect when
//!   their records are acknowledged ([`GroupCoordinator::append_completed`]),
//!   not speculatively with a rollback, and every read sees only
//!   acknowledged state (Kafka reads at the last committed offset too).
//! - A group whose tombstones are being written refuses writers as Kafka's
//!   Dead group does, and still shows readers its last state.
//! - A JoinGroup or SyncGroup that a newer one from the same member replaces
//!   is answered REBALANCE_IN_PROGRESS instead of being dropped, so that no
//!   parked request is ever left unanswered.
//! - LeaveGroup is answered at once; the record it may cause (the group
//!   became Empty) is informational.
//! - For consumer groups, a member the leader gave no (or zero-byte)
//!   assignment gets a valid empty `ConsumerProtocolAssignment`.
//! - Protocol-selection ties go to the smallest protocol name.
//! - Transactional offsets: which of a COMMIT's pending offsets and a plain
//!   commit wins is decided by the order their records were applied (a
//!   counter that follows log order), not by their log offsets, which the
//!   pure coordinator does not see; the outcome is the same. A marker that
//!   arrives before the producer's TxnOffsetCommit append is acknowledged
//!   waits for it.
//!
//! Shard-local: one instance per `__consumer_offsets` partition, on the
//! shard that owns that partition.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;

use super::api::*;
use super::classic::{Group, GroupState, Member, OffsetAndMetadata, OffsetExpiration};
use super::consumer::TopicsView;
use super::consumer_protocol;
use super::records::{CoordinatorRecord, GroupMetadataKey, OffsetCommitKey};
use super::timer::{TimerAction, TimerKey, Timers};
use super::txn_offsets::PendingTxnOffsets;
use super::{GroupConfig, GROUPS_PER_COORDINATOR_MAX};
use crate::protocol::ErrorCode;

/// The group type ListGroups reports for classic groups.
const CLASSIC_GROUP_TYPE: &str = "classic";
/// The group type of KIP-848 consumer groups.
const CONSUMER_GROUP_TYPE: &str = "consumer";
/// The protocol type ListGroups reports for KIP-848 consumer groups.
const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// The groups and committed offsets of one `__consumer_offsets` partition.
#[derive(Debug)]
pub struct GroupCoordinator {
    groups: BTreeMap<String, Group>,
    /// Offsets written by TxnOffsetCommit whose transaction has not ended.
    txn_offsets: PendingTxnOffsets,
    /// Markers that arrived while a TxnOffsetCommit append of the same
    /// producer was still unacknowledged: (producer id, commit), applied
    /// once that producer has no append in flight. At most one per
    /// producer, so bounded by the appends in flight.
    deferred_markers: Vec<(i64, bool)>,
    core: Core,
}

/// Everything but the groups, so that rebalance steps can borrow one group
/// and the rest of the coordinator at once.
#[derive(Debug)]
struct Core {
    config: GroupConfig,
    /// Every group's configs, as of the call being served.
    group_configs: std::rc::Rc<crate::cluster::image::GroupConfigMap>,
    timers: Timers,
    rng: SplitMix64,
    next_append_id: u64,
    in_flight: VecDeque<InFlightAppend>,
    /// The next [`OffsetAndMetadata::log_order`]: one per offset record
    /// applied, in log order.
    next_log_order: u64,
}

/// An append handed to the caller and not yet acknowledged.
#[derive(Debug)]
struct InFlightAppend {
    id: AppendId,
    records: Vec<CoordinatorRecord>,
    /// The transactional producer of a TxnOffsetCommit's append: its offset
    /// records become pending offsets of that producer, not committed ones.
    producer: Option<TxnProducer>,
    then: AfterAppend,
    /// Requests answered once this append and those before it are
    /// acknowledged (Kafka's write operations without records of their
    /// own, and those whose records came before): answers only.
    waiters: Vec<AfterAppend>,
}

/// What to do once an append is acknowledged. Its offset records and group
/// tombstones are applied on success whatever this says.
#[derive(Debug)]
enum AfterAppend {
    /// Informational record (a group became Empty).
    Nothing,
    /// Answer an OffsetCommit.
    OffsetCommit {
        request_id: RequestId,
        response: OffsetCommitResponse,
    },
    /// The leader's assignment is durable: hand it out and become Stable.
    SyncAssignment {
        group_id: String,
        generation_id: i32,
        assignment: BTreeMap<String, Bytes>,
    },
    /// A static member's new member id is durable: answer its JoinGroup.
    StaticMemberRejoin(Box<StaticMemberRejoin>),
    /// Answer a DeleteGroups.
    DeleteGroups {
        request_id: RequestId,
        response: DeleteGroupsResponse,
    },
    /// Answer an OffsetDelete.
    OffsetDelete {
        request_id: RequestId,
        response: OffsetDeleteResponse,
    },
    /// Answer a TxnOffsetCommit.
    TxnOffsetCommit {
        request_id: RequestId,
        response: TxnOffsetCommitResponse,
    },
    /// Answer a ConsumerGroupHeartbeat whose records (this append and the
    /// ones before it) are durable.
    ConsumerGroupHeartbeat {
        request_id: RequestId,
        response: Box<ConsumerGroupHeartbeatResponse>,
    },
    /// Answer a classic member's JoinGroup to a consumer group.
    ClassicJoin {
        request_id: RequestId,
        response: Box<JoinGroupResponse>,
    },
    /// Answer an OffsetFetch with `require_stable` that read the newest
    /// state, once the appends before it are durable.
    OffsetFetch {
        request_id: RequestId,
        response: OffsetFetchResponse,
    },
}

/// What a static member's rejoin during Stable needs when its record is
/// acknowledged (to answer) or fails (to undo the new member id). The
/// JoinGroup itself stays parked on the member until then.
#[derive(Debug)]
struct StaticMemberRejoin {
    group_id: String,
    group_instance_id: String,
    old_member_id: String,
    new_member_id: String,
    old_protocols: Vec<JoinProtocol>,
    old_rebalance_timeout_ms: i32,
    old_session_timeout_ms: i32,
    leader_before: Option<String>,
    api_version: i16,
}

/// A small deterministic generator for member ids (SplitMix64); the caller
/// seeds it, from real randomness in the broker and a fixed seed in tests.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A random id as Kafka's `Uuid.randomUuid().toString()` writes it
    /// (what names KIP-848 members): 16 bytes in URL-safe base64 without
    /// padding, never starting with '-'.
    fn kafka_uuid(&mut self) -> String {
        use base64::Engine;
        loop {
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&self.next_u64().to_be_bytes());
            bytes[8..].copy_from_slice(&self.next_u64().to_be_bytes());
            let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
            if !id.starts_with('-') {
                return id;
            }
        }
    }

    /// A random (v4) UUID in Java's `UUID.toString` form.
    fn uuid(&mut self) -> String {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next_u64().to_be_bytes());
        bytes[8..].copy_from_slice(&self.next_u64().to_be_bytes());
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string()
    }
}

/// Kafka's `appendGroupMetadataErrorToResponseError`: what a client is told
/// when the coordinator's append failed.
fn append_error_to_response_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::UnknownTopicOrPartition
        | ErrorCode::NotEnoughReplicas
        | ErrorCode::RequestTimedOut => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::MessageTooLarge
        | ErrorCode::RecordListTooLarge
        | ErrorCode::InvalidFetchSize => ErrorCode::UnknownServerError,
        other => other,
    }
}

/// Errors a transactional append gets because its producer was fenced by a
/// newer epoch (the coordinator's own batches carry no sequence, so other
/// producer errors would be the broker's fault and stay warnings).
fn is_client_producer_error(error: ErrorCode) -> bool {
    matches!(
        error,
        ErrorCode::InvalidProducerEpoch | ErrorCode::ProducerFenced
    )
}

/// An OffsetCommit-shaped answer with `error` on every requested partition.
fn fail_every_partition(topics: &[OffsetCommitTopic], error: ErrorCode) -> OffsetCommitResponse {
    OffsetCommitResponse {
        topics: topics
            .iter()
            .map(|topic| OffsetCommitTopicResponse {
                name: topic.name.clone(),
                partitions: topic
                    .partitions
                    .iter()
                    .map(|p| OffsetCommitPartitionResponse {
                        partition_index: p.partition_index,
                        error: Some(error),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn heartbeat_key(group_id: &str, member_id: &str) -> TimerKey {
    TimerKey::Heartbeat {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
    }
}

fn join_key(group_id: &str) -> TimerKey {
    TimerKey::Join {
        group_id: group_id.to_string(),
    }
}

fn sync_key(group_id: &str) -> TimerKey {
    TimerKey::Sync {
        group_id: group_id.to_string(),
    }
}

/// Turns the completions of one call into its own reply plus the rest.
fn finish<T>(
    request_id: RequestId,
    mut effects: Effects,
    unwrap: fn(Response) -> Option<T>,
) -> Outcome<T> {
    let own: Vec<usize> = effects
        .completions
        .iter()
        .enumerate()
        .filter(|(_, c)| c.request_id == request_id)
        .map(|(i, _)| i)
        .collect();
    assert!(own.len() <= 1, "request {request_id:?} answered twice");
    let reply = match own.first() {
        Some(&index) => {
            let completion = effects.completions.remove(index);
            Reply::Ready(unwrap(completion.response).expect("answer of the wrong type"))
        }
        None => Reply::Pending,
    };
    Outcome { reply, effects }
}

fn as_join(response: Response) -> Option<JoinGroupResponse> {
    match response {
        Response::JoinGroup(r) => Some(r),
        _ => None,
    }
}

fn as_sync(response: Response) -> Option<SyncGroupResponse> {
    match response {
        Response::SyncGroup(r) => Some(r),
        _ => None,
    }
}

fn complete(out: &mut Effects, request_id: RequestId, response: Response) {
    out.completions.push(Completion {
        request_id,
        response,
    });
}

fn complete_join(out: &mut Effects, request_id: RequestId, response: JoinGroupResponse) {
    complete(out, request_id, Response::JoinGroup(response));
}

fn complete_sync(out: &mut Effects, request_id: RequestId, response: SyncGroupResponse) {
    complete(out, request_id, Response::SyncGroup(response));
}

/// Keeps the first of each protocol name: duplicates would be counted twice
/// when choosing a protocol all members support.
fn dedup_protocols(protocols: Vec<JoinProtocol>) -> Vec<JoinProtocol> {
    let mut seen = BTreeSet::new();
    protocols
        .into_iter()
        .filter(|p| seen.insert(p.name.clone()))
        .collect()
}

/// Java `String.length()`: UTF-16 code units.
fn java_length(s: &str) -> usize {
    s.encode_utf16().count()
}

impl GroupCoordinator {
    /// An empty coordinator. `seed` seeds member-id generation.
    ///
    /// # Panics
    /// If `config` is invalid ([`GroupConfig::validate`]).
    pub fn new(config: GroupConfig, seed: u64, now_ms: i64) -> Self {
        config.validate();
        let mut coordinator = GroupCoordinator {
            groups: BTreeMap::new(),
            txn_offsets: PendingTxnOffsets::default(),
            deferred_markers: Vec::new(),
            core: Core {
                config,
                group_configs: std::rc::Rc::default(),
                timers: Timers::default(),
                rng: SplitMix64(seed),
                next_append_id: 0,
                in_flight: VecDeque::new(),
                next_log_order: 0,
            },
        };
        coordinator.core.schedule_offsets_retention(now_ms);
        coordinator
    }

    /// Every group's configs (`kafka-configs --entity-type groups`) as of
    /// now: the next calls use them (a consumer group's session timeout
    /// and heartbeat interval).
    pub fn set_group_configs(
        &mut self,
        configs: std::rc::Rc<crate::cluster::image::GroupConfigMap>,
    ) {
        self.core.group_configs = configs;
    }

    /// Number of groups, including those being deleted.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// A group's state and generation, if it exists (for tests and admin).
    pub fn group_state(&self, group_id: &str) -> Option<(GroupState, i32)> {
        self.groups
            .get(group_id)
            .map(|g| (g.state, g.generation_id))
    }

    /// The member ids of a group, sorted.
    pub fn group_members(&self, group_id: &str) -> Vec<String> {
        self.groups
            .get(group_id)
            .map(|g| g.members.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The earliest time [`GroupCoordinator::on_tick`] has work to do.
    pub fn next_deadline(&self) -> Option<i64> {
        self.core.timers.next_deadline()
    }

    // ------------------------------------------------------------------
    // JoinGroup

    /// JoinGroup. The reply is ready at once for errors, for KIP-394's
    /// MEMBER_ID_REQUIRED and for members rejoining a settled group with
    /// unchanged metadata; otherwise it is pending until the join phase
    /// completes (all known members rejoined, or the rebalance timeout or the
    /// initial delay passed).
    pub fn join_group(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: JoinGroupRequest,
        topics: &dyn TopicsView,
    ) -> Outcome<JoinGroupResponse> {
        let mut out = Effects::default();
        self.join_group_inner(now_ms, request_id, request, topics, &mut out);
        finish(request_id, out, as_join)
    }

    fn join_group_inner(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        mut request: JoinGroupRequest,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) {
        let reject = |out: &mut Effects, error: ErrorCode, member_id: &str| {
            complete_join(out, request_id, JoinGroupResponse::error(error, member_id));
        };
        if request.group_id.is_empty() {
            return reject(out, ErrorCode::InvalidGroupId, &request.member_id);
        }
        let config = &self.core.config;
        if request.session_timeout_ms < config.session_timeout_ms_min
            || request.session_timeout_ms > config.session_timeout_ms_max
        {
            return reject(out, ErrorCode::InvalidSessionTimeout, &request.member_id);
        }
        // JoinGroup v0 has no rebalance timeout: the session timeout is used.
        if request.rebalance_timeout_ms < 0 {
            request.rebalance_timeout_ms = request.session_timeout_ms;
        }
        request.protocols = dedup_protocols(std::mem::take(&mut request.protocols));

        let is_unknown_member = request.member_id.is_empty();
        if let Some(group) = self.groups.get_mut(&request.group_id) {
            if let Some(consumer) = &group.consumer {
                if group.deleting {
                    return reject(out, ErrorCode::CoordinatorNotAvailable, &request.member_id);
                }
                if !consumer.is_empty() {
                    // A classic member of a consumer group.
                    return self
                        .classic_join_consumer_group(now_ms, request_id, request, topics, out);
                }
                // An empty consumer group becomes a classic one again.
                tracing::info!(group_id = %request.group_id, "converting an empty consumer group to a classic group");
                group.consumer = None;
                self.core.append(
                    consumer_groups::group_tombstones(&request.group_id).to_vec(),
                    AfterAppend::Nothing,
                    out,
                );
            }
        }
        if !self.groups.contains_key(&request.group_id) {
            // Only a first join creates a group; a member id for an unknown
            // group is stale.
            if !is_unknown_member {
                return reject(out, ErrorCode::UnknownMemberId, &request.member_id);
            }
            if self.groups.len() >= GROUPS_PER_COORDINATOR_MAX {
                tracing::warn!(group_id = %request.group_id, "group limit reached; refusing a new group");
                return reject(out, ErrorCode::CoordinatorNotAvailable, "");
            }
            self.groups.insert(
                request.group_id.clone(),
                Group::new(&request.group_id, now_ms),
            );
        }
        let group = self
            .groups
            .get_mut(&request.group_id)
            .expect("group exists");
        let core = &mut self.core;

        if !core.accept_joining_member(group, &request.member_id) {
            core.remove_member(group, &request.member_id, out);
            return reject(out, ErrorCode::GroupMaxSizeReached, "");
        }
        if is_unknown_member {
            core.join_new_member(group, request, request_id, now_ms, out);
        } else {
            core.join_existing_member(group, request, request_id, now_ms, out);
        }
    }

    // ------------------------------------------------------------------
    // SyncGroup

    /// SyncGroup. Ready at once for errors and in a Stable group; pending in
    /// CompletingRebalance until the leader's assignment is durable (the
    /// leader's own sync included).
    pub fn sync_group(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: SyncGroupRequest,
        topics: &dyn TopicsView,
    ) -> Outcome<SyncGroupResponse> {
        let mut out = Effects::default();
        self.sync_group_inner(now_ms, request_id, request, topics, &mut out);
        finish(request_id, out, as_sync)
    }

    fn sync_group_inner(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: SyncGroupRequest,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) {
        let reject = |out: &mut Effects, error: ErrorCode| {
            complete_sync(out, request_id, SyncGroupResponse::error(error));
        };
        if request.group_id.is_empty() {
            return reject(out, ErrorCode::InvalidGroupId);
        }
        let Some(group) = self.groups.get_mut(&request.group_id) else {
            return reject(out, ErrorCode::UnknownMemberId);
        };
        if group.consumer.is_some() && !group.deleting {
            let response = self.classic_sync_consumer_group(now_ms, &request, topics);
            return complete_sync(out, request_id, response);
        }
        if group.is_in(GroupState::Empty) {
            return reject(out, ErrorCode::UnknownMemberId);
        }
        if group.deleting {
            return reject(out, ErrorCode::CoordinatorNotAvailable);
        }
        if let Err(error) =
            group.validate_member(&request.member_id, request.group_instance_id.as_deref())
        {
            return reject(out, error);
        }
        if request.generation_id != group.generation_id {
            return reject(out, ErrorCode::IllegalGeneration);
        }
        let inconsistent = |sent: &Option<String>, ours: &Option<String>| {
            sent.as_ref()
                .is_some_and(|sent| Some(sent) != ours.as_ref())
        };
        if inconsistent(&request.protocol_type, &group.protocol_type)
            || inconsistent(&request.protocol_name, &group.protocol_name)
        {
            return reject(out, ErrorCode::InconsistentGroupProtocol);
        }
        let core = &mut self.core;
        match group.state {
            GroupState::PreparingRebalance => reject(out, ErrorCode::RebalanceInProgress),
            GroupState::CompletingRebalance => {
                let member = group
                    .members
                    .get_mut(&request.member_id)
                    .expect("validated member");
                if let Some(replaced) = member.awaiting_sync.replace(request_id) {
                    complete_sync(
                        out,
                        replaced,
                        SyncGroupResponse::error(ErrorCode::RebalanceInProgress),
                    );
                }
                core.remove_pending_sync_member(group, &request.member_id);
                if group.is_leader(&request.member_id) {
                    core.store_leader_assignment(group, request, out);
                }
            }
            GroupState::Stable => {
                core.remove_pending_sync_member(group, &request.member_id);
                let member = &group.members[&request.member_id];
                complete_sync(
                    out,
                    request_id,
                    SyncGroupResponse {
                        error: None,
                        protocol_type: group.protocol_type.clone(),
                        protocol_name: group.protocol_name.clone(),
                        assignment: member.assignment.clone(),
                    },
                );
            }
            GroupState::Empty | GroupState::Dead => unreachable!("checked above"),
        }
    }

    // ------------------------------------------------------------------
    // Heartbeat

    /// Heartbeat: always answered at once. REBALANCE_IN_PROGRESS tells a
    /// member of a PreparingRebalance group to rejoin.
    pub fn heartbeat(&mut self, now_ms: i64, request: HeartbeatRequest) -> HeartbeatResponse {
        let error = self.heartbeat_inner(now_ms, &request).err();
        HeartbeatResponse { error }
    }

    fn heartbeat_inner(
        &mut self,
        now_ms: i64,
        request: &HeartbeatRequest,
    ) -> Result<(), ErrorCode> {
        if request.group_id.is_empty() {
            return Err(ErrorCode::InvalidGroupId);
        }
        let group = self
            .groups
            .get(&request.group_id)
            .ok_or(ErrorCode::UnknownMemberId)?;
        if group.deleting {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        if group.consumer.is_some() {
            return self.classic_heartbeat_consumer_group(now_ms, request);
        }
        group.validate_member(&request.member_id, request.group_instance_id.as_deref())?;
        if request.generation_id != group.generation_id {
            return Err(ErrorCode::IllegalGeneration);
        }
        match group.state {
            GroupState::Empty | GroupState::Dead => Err(ErrorCode::UnknownMemberId),
            GroupState::PreparingRebalance => {
                self.core
                    .reschedule_heartbeat(group, &request.member_id, now_ms);
                Err(ErrorCode::RebalanceInProgress)
            }
            // Members may heartbeat between their JoinGroup and SyncGroup.
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.core
                    .reschedule_heartbeat(group, &request.member_id, now_ms);
                Ok(())
            }
        }
    }

    // ------------------------------------------------------------------
    // LeaveGroup

    /// LeaveGroup, answered at once. Members are named by member id, or (an
    /// admin removing a static member) by group instance id with an empty
    /// member id. Each gets its own error.
    pub fn leave_group(
        &mut self,
        now_ms: i64,
        request: LeaveGroupRequest,
    ) -> Outcome<LeaveGroupResponse> {
        let mut out = Effects::default();
        let response = self.leave_group_inner(now_ms, request, &mut out);
        Outcome {
            reply: Reply::Ready(response),
            effects: out,
        }
    }

    fn leave_group_inner(
        &mut self,
        now_ms: i64,
        request: LeaveGroupRequest,
        out: &mut Effects,
    ) -> LeaveGroupResponse {
        let member_response =
            |member: &LeaveGroupMember, error: Option<ErrorCode>| LeaveGroupMemberResponse {
                member_id: member.member_id.clone(),
                group_instance_id: member.group_instance_id.clone(),
                error,
            };
        if request.group_id.is_empty() {
            return LeaveGroupResponse {
                error: Some(ErrorCode::InvalidGroupId),
                members: Vec::new(),
            };
        }
        let Some(group) = self.groups.get_mut(&request.group_id) else {
            return LeaveGroupResponse {
                error: None,
                members: request
                    .members
                    .iter()
                    .map(|m| member_response(m, Some(ErrorCode::UnknownMemberId)))
                    .collect(),
            };
        };
        if group.deleting {
            return LeaveGroupResponse {
                error: Some(ErrorCode::CoordinatorNotAvailable),
                members: Vec::new(),
            };
        }
        if group.consumer.is_some() {
            // Admin removal of consumer-group members (Kafka's
            // `classicGroupLeaveToConsumerGroup`).
            return self.leave_consumer_group(now_ms, &request, out);
        }
        let core = &mut self.core;
        let mut members = Vec::with_capacity(request.members.len());
        let mut any_left = false;
        for member in &request.members {
            let error = if member.member_id.is_empty() {
                let static_id = member
                    .group_instance_id
                    .as_deref()
                    .and_then(|instance| group.static_member_id(instance))
                    .map(str::to_string);
                match static_id {
                    Some(member_id) => {
                        core.remove_member(group, &member_id, out);
                        None
                    }
                    None => Some(ErrorCode::UnknownMemberId),
                }
            } else if group.is_pending_member(&member.member_id) {
                core.remove_member(group, &member.member_id, out);
                None
            } else {
                match group.validate_member(&member.member_id, member.group_instance_id.as_deref())
                {
                    Ok(()) => {
                        core.remove_member(group, &member.member_id, out);
                        None
                    }
                    Err(error) => Some(error),
                }
            };
            any_left |= error.is_none();
            members.push(member_response(member, error));
        }
        if any_left {
            tracing::info!(group_id = %group.group_id, "members left through LeaveGroup");
            match group.state {
                GroupState::Stable | GroupState::CompletingRebalance => {
                    core.maybe_prepare_rebalance_or_complete_join(group, now_ms, out);
                }
                GroupState::PreparingRebalance => {
                    core.maybe_complete_join_phase(group, now_ms, out)
                }
                GroupState::Empty | GroupState::Dead => {}
            }
        }
        LeaveGroupResponse {
            error: None,
            members,
        }
    }

    // ------------------------------------------------------------------
    // OffsetCommit

    /// OffsetCommit. Ready at once when nothing is written (every partition
    /// failed); otherwise pending until the offset records are durable, when
    /// the offsets become visible to OffsetFetch.
    ///
    /// The caller checks topics exist (UNKNOWN_TOPIC_OR_PARTITION) before.
    pub fn offset_commit(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: OffsetCommitRequest,
    ) -> Outcome<OffsetCommitResponse> {
        let mut out = Effects::default();
        let reply = self.offset_commit_inner(now_ms, request_id, request, &mut out);
        Outcome {
            reply,
            effects: out,
        }
    }

    fn offset_commit_inner(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: OffsetCommitRequest,
        out: &mut Effects,
    ) -> Reply<OffsetCommitResponse> {
        let fail_all = |error: ErrorCode| {
            Reply::Ready(OffsetCommitResponse {
                topics: request
                    .topics
                    .iter()
                    .map(|topic| OffsetCommitTopicResponse {
                        name: topic.name.clone(),
                        partitions: topic
                            .partitions
                            .iter()
                            .map(|p| OffsetCommitPartitionResponse {
                                partition_index: p.partition_index,
                                error: Some(error),
                            })
                            .collect(),
                    })
                    .collect(),
            })
        };
        // An empty group id commits like any other, as Kafka keeps for
        // backward compatibility (OffsetFetch, DescribeGroups and
        // DeleteGroups take it too; JoinGroup and the other membership
        // calls, TxnOffsetCommit and OffsetDelete refuse it).
        if !self.groups.contains_key(&request.group_id) {
            if request.generation_id >= 0 {
                // v9 introduced GROUP_ID_NOT_FOUND; older clients expect
                // ILLEGAL_GENERATION.
                return fail_all(if request.api_version >= 9 {
                    ErrorCode::GroupIdNotFound
                } else {
                    ErrorCode::IllegalGeneration
                });
            }
            if self.groups.len() >= GROUPS_PER_COORDINATOR_MAX {
                return fail_all(ErrorCode::CoordinatorNotAvailable);
            }
            // A "simple" group: offsets only, no protocol, no members.
            self.groups.insert(
                request.group_id.clone(),
                Group::new(&request.group_id, now_ms),
            );
        }
        let group = self.groups.get(&request.group_id).expect("group exists");
        if let Err(error) = group.validate_offset_commit(
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id,
            request.api_version,
        ) {
            return fail_all(error);
        }
        // A commit counts as a heartbeat while the member can commit.
        if matches!(
            group.state,
            GroupState::Stable | GroupState::PreparingRebalance
        ) && group.has_member(&request.member_id)
        {
            self.core
                .reschedule_heartbeat(group, &request.member_id, now_ms);
        }

        let expire_timestamp_ms = (request.retention_time_ms != -1)
            .then(|| now_ms.saturating_add(request.retention_time_ms));
        let mut records = Vec::new();
        let mut topics = Vec::with_capacity(request.topics.len());
        for topic in &request.topics {
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for partition in &topic.partitions {
                let metadata = partition.committed_metadata.clone().unwrap_or_default();
                let error = if java_length(&metadata) > self.core.config.offset_metadata_max_bytes {
                    Some(ErrorCode::OffsetMetadataTooLarge)
                } else {
                    let offset = OffsetAndMetadata {
                        offset: partition.committed_offset,
                        leader_epoch: (partition.committed_leader_epoch >= 0)
                            .then_some(partition.committed_leader_epoch),
                        metadata,
                        commit_timestamp_ms: now_ms,
                        expire_timestamp_ms,
                        // Given when the record is applied.
                        log_order: 0,
                    };
                    records.push(CoordinatorRecord::OffsetCommit {
                        key: OffsetCommitKey {
                            group: request.group_id.clone(),
                            topic: topic.name.clone(),
                            partition: partition.partition_index,
                        },
                        value: Some(offset.to_record()),
                    });
                    None
                };
                partitions.push(OffsetCommitPartitionResponse {
                    partition_index: partition.partition_index,
                    error,
                });
            }
            topics.push(OffsetCommitTopicResponse {
                name: topic.name.clone(),
                partitions,
            });
        }
        let response = OffsetCommitResponse { topics };
        if records.is_empty() {
            return Reply::Ready(response);
        }
        self.core.append(
            records,
            AfterAppend::OffsetCommit {
                request_id,
                response,
            },
            out,
        );
        Reply::Pending
    }

    // ------------------------------------------------------------------
    // TxnOffsetCommit and transaction markers

    /// TxnOffsetCommit (Kafka's `OffsetMetadataManager.commitTransactionalOffset`).
    /// Ready at once when nothing is written; otherwise the offsets go out as
    /// one [`Append`] carrying the producer ([`Append::producer`]), written as
    /// that producer's transactional batch, and the reply is pending until it
    /// is durable. Then the offsets are pending offsets of the producer:
    /// OffsetFetch does not show them (and answers UNSTABLE_OFFSET_COMMIT
    /// for their partitions under `require_stable`) until
    /// [`GroupCoordinator::on_txn_marker`] applies the transaction's end.
    ///
    /// An unknown group is created (Empty, no protocol) when the generation
    /// is negative; otherwise it is ILLEGAL_GENERATION, which Kafka answers
    /// for every TxnOffsetCommit version. The caller checks topics exist
    /// (UNKNOWN_TOPIC_OR_PARTITION) before.
    pub fn txn_offset_commit(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: TxnOffsetCommitRequest,
    ) -> Outcome<TxnOffsetCommitResponse> {
        let mut out = Effects::default();
        let reply = self.txn_offset_commit_inner(now_ms, request_id, request, &mut out);
        Outcome {
            reply,
            effects: out,
        }
    }

    fn txn_offset_commit_inner(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: TxnOffsetCommitRequest,
        out: &mut Effects,
    ) -> Reply<TxnOffsetCommitResponse> {
        let fail_all =
            |error: ErrorCode| Reply::Ready(fail_every_partition(&request.topics, error));
        if request.group_id.is_empty() {
            return fail_all(ErrorCode::InvalidGroupId);
        }
        if !self.groups.contains_key(&request.group_id) {
            if request.generation_id >= 0 {
                return fail_all(ErrorCode::IllegalGeneration);
            }
            if self.groups.len() >= GROUPS_PER_COORDINATOR_MAX {
                return fail_all(ErrorCode::CoordinatorNotAvailable);
            }
            self.groups.insert(
                request.group_id.clone(),
                Group::new(&request.group_id, now_ms),
            );
        }
        let group = self.groups.get(&request.group_id).expect("group exists");
        if let Err(error) = group.validate_txn_offset_commit(
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id,
        ) {
            return fail_all(error);
        }
        let mut records = Vec::new();
        let mut topics = Vec::with_capacity(request.topics.len());
        for topic in &request.topics {
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for partition in &topic.partitions {
                let metadata = partition.committed_metadata.clone().unwrap_or_default();
                let error = if java_length(&metadata) > self.core.config.offset_metadata_max_bytes {
                    Some(ErrorCode::OffsetMetadataTooLarge)
                } else {
                    // Transactional commits carry no retention: they expire
                    // by the broker's offsets retention.
                    let offset = OffsetAndMetadata {
                        offset: partition.committed_offset,
                        leader_epoch: (partition.committed_leader_epoch >= 0)
                            .then_some(partition.committed_leader_epoch),
                        metadata,
                        commit_timestamp_ms: now_ms,
                        expire_timestamp_ms: None,
                        log_order: 0,
                    };
                    records.push(CoordinatorRecord::OffsetCommit {
                        key: OffsetCommitKey {
                            group: request.group_id.clone(),
                            topic: topic.name.clone(),
                            partition: partition.partition_index,
                        },
                        value: Some(offset.to_record()),
                    });
                    None
                };
                partitions.push(OffsetCommitPartitionResponse {
                    partition_index: partition.partition_index,
                    error,
                });
            }
            topics.push(OffsetCommitTopicResponse {
                name: topic.name.clone(),
                partitions,
            });
        }
        let response = OffsetCommitResponse { topics };
        if records.is_empty() {
            return Reply::Ready(response);
        }
        tracing::debug!(
            group_id = %request.group_id,
            transactional_id = %request.transactional_id,
            producer_id = request.producer_id,
            producer_epoch = request.producer_epoch,
            offsets = records.len(),
            "transactional offset commit"
        );
        self.core.append_with_producer(
            records,
            Some(TxnProducer {
                producer_id: request.producer_id,
                producer_epoch: request.producer_epoch,
            }),
            AfterAppend::TxnOffsetCommit {
                request_id,
                response,
            },
            out,
        );
        Reply::Pending
    }

    /// A transaction marker of `producer_id` is durable in this offsets
    /// partition (Kafka's `replayEndTransactionMarker`): on COMMIT the
    /// producer's pending offsets become the committed offsets, each only if
    /// no offset record of its partition came later in the log; on ABORT
    /// they are dropped. A marker without pending offsets is a no-op, so
    /// applying one twice (once by load, once by the writer) is harmless.
    /// Call it for markers in log order relative to the appends that are
    /// acknowledged.
    ///
    /// A marker that arrives while a TxnOffsetCommit append of the producer
    /// is written but not yet acknowledged (the transaction coordinator
    /// aborted a timed-out transaction meanwhile) waits for that
    /// acknowledgement, so those offsets are not left pending after their
    /// transaction ended.
    pub fn on_txn_marker(&mut self, now_ms: i64, producer_id: i64, commit: bool) {
        if self.producer_has_append_in_flight(producer_id) {
            self.deferred_markers.retain(|&(id, _)| id != producer_id);
            self.deferred_markers.push((producer_id, commit));
            return;
        }
        self.apply_txn_marker(now_ms, producer_id, commit);
    }

    fn producer_has_append_in_flight(&self, producer_id: i64) -> bool {
        self.core
            .in_flight
            .iter()
            .any(|a| a.producer.is_some_and(|p| p.producer_id == producer_id))
    }

    /// Applies the deferred markers whose producer has no append in flight
    /// any more.
    fn apply_deferred_markers(&mut self, now_ms: i64) {
        if self.deferred_markers.is_empty() {
            return;
        }
        let deferred = std::mem::take(&mut self.deferred_markers);
        for (producer_id, commit) in deferred {
            if self.producer_has_append_in_flight(producer_id) {
                self.deferred_markers.push((producer_id, commit));
            } else {
                self.apply_txn_marker(now_ms, producer_id, commit);
            }
        }
    }

    fn apply_txn_marker(&mut self, now_ms: i64, producer_id: i64, commit: bool) {
        let Some(pending) = self.txn_offsets.take_producer(producer_id) else {
            return;
        };
        if !commit {
            tracing::debug!(producer_id, "aborted transactional offsets dropped");
            return;
        }
        for (group_id, partitions) in pending {
            // The group may have been deleted meanwhile only if its
            // tombstones removed these entries; a group left without a
            // group record (all offsets had expired) comes back as a simple
            // group, as a replayed offset record would bring it back.
            let group = self
                .groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::new(&group_id, now_ms));
            for ((topic, partition), offset) in partitions {
                let topic_offsets = group.offsets.entry(topic.clone()).or_default();
                match topic_offsets.get(&partition) {
                    Some(existing) if existing.log_order > offset.log_order => {
                        tracing::info!(
                            group_id = %group_id,
                            topic = %topic,
                            partition,
                            producer_id,
                            "transactional offset not materialized: a later commit of the partition wins"
                        );
                    }
                    _ => {
                        topic_offsets.insert(partition, offset);
                    }
                }
            }
        }
    }

    /// The pending transactional offset of `producer_id` for a partition of
    /// a group, if any (for tests and admin).
    pub fn pending_txn_offset(
        &self,
        producer_id: i64,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> Option<i64> {
        self.txn_offsets
            .get(producer_id, group_id, topic, partition)
            .map(|o| o.offset)
    }

    /// How many producers have pending transactional offsets here.
    pub fn pending_txn_producers(&self) -> usize {
        self.txn_offsets.producer_count()
    }

    // ------------------------------------------------------------------
    // Reads

    /// OffsetFetch as the service runs it (Kafka's `fetchOffsets`): without
    /// `require_stable` it reads the durable state, answered at once; with
    /// it, it reads the newest state and is answered once the appends in
    /// flight are durable (or with their error).
    pub fn offset_fetch_call(
        &mut self,
        request_id: RequestId,
        request: &OffsetFetchRequest,
    ) -> Outcome<OffsetFetchResponse> {
        let response = self.offset_fetch(request);
        let effects = Effects::default();
        if !request.require_stable || self.core.in_flight.is_empty() {
            return Outcome {
                reply: Reply::Ready(response),
                effects,
            };
        }
        self.core.after_appends_in_flight(AfterAppend::OffsetFetch {
            request_id,
            response,
        });
        Outcome {
            reply: Reply::Pending,
            effects,
        }
    }

    /// OffsetFetch for one or more groups. Partitions never committed (and
    /// every partition of an unknown group) answer offset -1. `topics: None`
    /// lists every committed offset of the group. With `require_stable`,
    /// a partition with pending transactional offsets answers
    /// UNSTABLE_OFFSET_COMMIT and offset -1 (Kafka's `fetchOffsets` and
    /// `fetchAllOffsets`; the latter lists only committed partitions).
    pub fn offset_fetch(&self, request: &OffsetFetchRequest) -> OffsetFetchResponse {
        let unstable = |group_id: &str, topic: &str, partition_index: i32| {
            request.require_stable
                && self
                    .txn_offsets
                    .has_partition(group_id, topic, partition_index)
        };
        let unstable_answer = |partition_index: i32| OffsetFetchPartitionResponse {
            partition_index,
            committed_offset: -1,
            committed_leader_epoch: -1,
            metadata: String::new(),
            error: Some(ErrorCode::UnstableOffsetCommit),
        };
        let never_committed = |partition_index: i32| OffsetFetchPartitionResponse {
            partition_index,
            committed_offset: -1,
            committed_leader_epoch: -1,
            metadata: String::new(),
            error: None,
        };
        let committed =
            |partition_index: i32, offset: &OffsetAndMetadata| OffsetFetchPartitionResponse {
                partition_index,
                committed_offset: offset.offset,
                committed_leader_epoch: offset.leader_epoch.unwrap_or(-1),
                metadata: offset.metadata.clone(),
                error: None,
            };
        let groups = request
            .groups
            .iter()
            .map(|wanted| {
                let group = self.groups.get(&wanted.group_id);
                // A KIP-848 member reading its group's offsets must be a
                // member at that epoch (Kafka's `validateOffsetFetch`).
                let consumer = group.and_then(|g| g.consumer.as_ref());
                if let (Some(consumer), Some((member_id, member_epoch))) =
                    (consumer, &wanted.member)
                {
                    if let Err(error) = consumer.validate_offset_fetch(
                        member_id,
                        *member_epoch,
                        !request.require_stable,
                    ) {
                        return OffsetFetchGroupResponse {
                            group_id: wanted.group_id.clone(),
                            error: Some(error),
                            topics: Vec::new(),
                        };
                    }
                }
                let topics = match &wanted.topics {
                    Some(topics) => topics
                        .iter()
                        .map(|topic| {
                            let offsets = group.and_then(|g| g.offsets.get(&topic.name));
                            OffsetFetchTopicResponse {
                                name: topic.name.clone(),
                                partitions: topic
                                    .partition_indexes
                                    .iter()
                                    .map(|&p| match offsets.and_then(|o| o.get(&p)) {
                                        _ if unstable(&wanted.group_id, &topic.name, p) => {
                                            unstable_answer(p)
                                        }
                                        Some(offset) => committed(p, offset),
                                        None => never_committed(p),
                                    })
                                    .collect(),
                            }
                        })
                        .collect(),
                    None => group
                        .map(|g| {
                            g.offsets
                                .iter()
                                .map(|(name, partitions)| OffsetFetchTopicResponse {
                                    name: name.clone(),
                                    partitions: partitions
                                        .iter()
                                        .map(|(&p, offset)| {
                                            if unstable(&wanted.group_id, name, p) {
                                                unstable_answer(p)
                                            } else {
                                                committed(p, offset)
                                            }
                                        })
                                        .collect(),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                OffsetFetchGroupResponse {
                    group_id: wanted.group_id.clone(),
                    error: None,
                    topics,
                }
            })
            .collect();
        OffsetFetchResponse { groups }
    }

    /// ListGroups, filtered by state (v4+) and type (v5+), case-insensitively.
    pub fn list_groups(&self, request: &ListGroupsRequest) -> ListGroupsResponse {
        let states: BTreeSet<String> = request
            .states_filter
            .iter()
            .map(|s| s.trim().to_lowercase())
            .collect();
        let types: BTreeSet<String> = request
            .types_filter
            .iter()
            .map(|t| t.trim().to_lowercase())
            .collect();
        let groups = self
            .groups
            .values()
            .map(|g| match &g.consumer {
                Some(consumer) => ListedGroup {
                    group_id: g.group_id.clone(),
                    protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                    group_state: consumer.state_name().to_string(),
                    group_type: CONSUMER_GROUP_TYPE.to_string(),
                },
                None => ListedGroup {
                    group_id: g.group_id.clone(),
                    protocol_type: g.protocol_type.clone().unwrap_or_default(),
                    group_state: g.state.as_str().to_string(),
                    group_type: CLASSIC_GROUP_TYPE.to_string(),
                },
            })
            .filter(|g| states.is_empty() || states.contains(&g.group_state.to_lowercase()))
            .filter(|g| types.is_empty() || types.contains(&g.group_type))
            .collect();
        ListGroupsResponse { groups }
    }

    /// DescribeGroups. Member metadata is only given while Stable. An
    /// unknown group is described as Dead, with GROUP_ID_NOT_FOUND from v6.
    pub fn describe_groups(&self, group_ids: &[String], api_version: i16) -> Vec<DescribedGroup> {
        group_ids
            .iter()
            .map(|group_id| {
                let dead = |error: Option<ErrorCode>| DescribedGroup {
                    error,
                    group_id: group_id.clone(),
                    group_state: GroupState::Dead.as_str().to_string(),
                    protocol_type: String::new(),
                    protocol_data: String::new(),
                    members: Vec::new(),
                    not_classic: false,
                };
                let Some(group) = self.groups.get(group_id) else {
                    return dead((api_version >= 6).then_some(ErrorCode::GroupIdNotFound));
                };
                if group.consumer.is_some() {
                    return DescribedGroup {
                        not_classic: true,
                        ..dead((api_version >= 6).then_some(ErrorCode::GroupIdNotFound))
                    };
                }
                let stable_protocol = group
                    .is_in(GroupState::Stable)
                    .then(|| group.protocol_name.clone().unwrap_or_default());
                DescribedGroup {
                    error: None,
                    group_id: group_id.clone(),
                    group_state: group.state.as_str().to_string(),
                    protocol_type: group.protocol_type.clone().unwrap_or_default(),
                    protocol_data: stable_protocol.clone().unwrap_or_default(),
                    members: group
                        .members
                        .values()
                        .map(|m| DescribedMember {
                            member_id: m.member_id.clone(),
                            group_instance_id: m.group_instance_id.clone(),
                            client_id: m.client_id.clone(),
                            client_host: m.client_host.clone(),
                            member_metadata: stable_protocol
                                .as_deref()
                                .map(|p| m.metadata(p))
                                .unwrap_or_default(),
                            member_assignment: m.assignment.clone(),
                        })
                        .collect(),
                    not_classic: false,
                }
            })
            .collect()
    }

    // ------------------------------------------------------------------
    // Deletion

    /// DeleteGroups. Empty groups are deleted with all their offsets (a
    /// tombstone for each offset, then for the group); the reply is pending
    /// until the tombstones are durable. Groups with members get
    /// NON_EMPTY_GROUP, unknown ones GROUP_ID_NOT_FOUND.
    pub fn delete_groups(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        group_ids: &[String],
    ) -> Outcome<DeleteGroupsResponse> {
        let mut out = Effects::default();
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(group_ids.len());
        for group_id in group_ids {
            let error = match self.groups.get_mut(group_id) {
                None => Some(ErrorCode::GroupIdNotFound),
                Some(group) if group.deleting => Some(ErrorCode::GroupIdNotFound),
                Some(group)
                    if !group.is_in(GroupState::Empty)
                        || group.consumer.as_ref().is_some_and(|c| !c.is_empty()) =>
                {
                    Some(ErrorCode::NonEmptyGroup)
                }
                Some(group) => {
                    let pending = self.txn_offsets.partitions_of_group(group_id);
                    self.core
                        .delete_group_records(group, &pending, &mut records);
                    None
                }
            };
            results.push((group_id.clone(), error));
        }
        let _ = now_ms;
        let response = DeleteGroupsResponse { results };
        if records.is_empty() {
            return Outcome {
                reply: Reply::Ready(response),
                effects: out,
            };
        }
        self.core.append(
            records,
            AfterAppend::DeleteGroups {
                request_id,
                response,
            },
            &mut out,
        );
        Outcome {
            reply: Reply::Pending,
            effects: out,
        }
    }

    /// OffsetDelete: deletes committed offsets of topics the group does not
    /// consume. Pending until the tombstones are durable when there are any.
    pub fn offset_delete(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: &OffsetDeleteRequest,
    ) -> Outcome<OffsetDeleteResponse> {
        let mut out = Effects::default();
        let _ = now_ms;
        let failed = |error: ErrorCode| Outcome {
            reply: Reply::Ready(OffsetDeleteResponse {
                error: Some(error),
                topics: Vec::new(),
            }),
            effects: Effects::default(),
        };
        if request.group_id.is_empty() {
            return failed(ErrorCode::InvalidGroupId);
        }
        let group = match self.groups.get(&request.group_id) {
            Some(group) if !group.deleting => group,
            _ => return failed(ErrorCode::GroupIdNotFound),
        };
        if !group.is_in(GroupState::Empty) && !group.uses_consumer_protocol() {
            return failed(ErrorCode::NonEmptyGroup);
        }
        let mut records = Vec::new();
        let topics = request
            .topics
            .iter()
            .map(|topic| {
                let subscribed = group.is_subscribed_to_topic(&topic.name);
                let offsets = group.offsets.get(&topic.name);
                let partitions = topic
                    .partition_indexes
                    .iter()
                    .map(|&partition| {
                        if subscribed {
                            return (partition, Some(ErrorCode::GroupSubscribedToTopic));
                        }
                        // Kafka writes the tombstone for a pending
                        // transactional offset too.
                        if offsets.is_some_and(|o| o.contains_key(&partition))
                            || self.txn_offsets.has_partition(
                                &request.group_id,
                                &topic.name,
                                partition,
                            )
                        {
                            records.push(CoordinatorRecord::OffsetCommit {
                                key: OffsetCommitKey {
                                    group: request.group_id.clone(),
                                    topic: topic.name.clone(),
                                    partition,
                                },
                                value: None,
                            });
                        }
                        (partition, None)
                    })
                    .collect();
                OffsetDeleteTopicResponse {
                    name: topic.name.clone(),
                    partitions,
                }
            })
            .collect();
        let response = OffsetDeleteResponse {
            error: None,
            topics,
        };
        if records.is_empty() {
            return Outcome {
                reply: Reply::Ready(response),
                effects: out,
            };
        }
        self.core.append(
            records,
            AfterAppend::OffsetDelete {
                request_id,
                response,
            },
            &mut out,
        );
        Outcome {
            reply: Reply::Pending,
            effects: out,
        }
    }

    // ------------------------------------------------------------------
    // Appends, time, loading

    /// Reports the outcome of the oldest unacknowledged [`Append`]: `Ok` once
    /// it is durable, `Err` with the append's error otherwise. Its offsets
    /// and group deletions take effect on `Ok`, and the requests waiting for
    /// it are answered.
    ///
    /// # Panics
    /// If `append_id` is not the oldest unacknowledged append: appends must
    /// be acknowledged in the order they were handed out.
    pub fn append_completed(
        &mut self,
        now_ms: i64,
        append_id: AppendId,
        result: Result<(), ErrorCode>,
    ) -> Effects {
        let mut out = Effects::default();
        let append = self
            .core
            .in_flight
            .pop_front()
            .expect("append acknowledged but none is in flight");
        assert_eq!(
            append.id, append_id,
            "appends must be acknowledged in order"
        );
        match result {
            Ok(()) => {
                for record in &append.records {
                    match append.producer {
                        Some(producer) => {
                            self.apply_txn_record(now_ms, producer.producer_id, record, false)
                        }
                        None => self.apply_record(now_ms, record, false),
                    }
                }
                self.after_append_succeeded(now_ms, append.then, &mut out);
                for waiter in append.waiters {
                    self.after_append_succeeded(now_ms, waiter, &mut out);
                }
            }
            Err(error) => {
                let error = append_error_to_response_error(error);
                if is_client_producer_error(error) {
                    // A stale or fenced transactional producer: the client
                    // gets the error, and one that keeps retrying must not
                    // fill the log.
                    tracing::debug!(?append_id, %error, "transactional offset commit refused");
                } else {
                    tracing::warn!(?append_id, %error, "group coordinator append failed");
                }
                for record in &append.records {
                    if let CoordinatorRecord::GroupMetadata { key, value: None } = record {
                        if let Some(group) = self.groups.get_mut(&key.group) {
                            group.deleting = false;
                        }
                    }
                    // Its next heartbeat writes the member's assignment again.
                    if let Some((group_id, member_id)) = consumer_groups::assignment_member(record)
                    {
                        if let Some(consumer) = self
                            .groups
                            .get_mut(group_id)
                            .and_then(|g| g.consumer.as_mut())
                        {
                            consumer.unwritten.insert(member_id.to_string());
                        }
                    }
                }
                self.after_append_failed(now_ms, append.then, error, &mut out);
                // A transactional append refused for its producer fails
                // alone; everything before the waiters is settled.
                for waiter in append.waiters {
                    if is_client_producer_error(error) {
                        self.after_append_succeeded(now_ms, waiter, &mut out);
                    } else {
                        self.after_append_failed(now_ms, waiter, error, &mut out);
                    }
                }
            }
        }
        if append.producer.is_some() {
            self.apply_deferred_markers(now_ms);
        }
        out
    }

    /// Runs every deadline that has passed: session timeouts (removing
    /// members and starting rebalances), the end of join phases, sync
    /// timeouts, and the periodic offsets expiry. Deadlines that a tick itself
    /// schedules at `now_ms` wait for the next tick.
    pub fn on_tick(&mut self, now_ms: i64) -> Effects {
        let mut out = Effects::default();
        let mark = self.core.timers.sequence_mark();
        while let Some((key, action)) = self.core.timers.pop_expired(now_ms, mark) {
            match (key, action) {
                (
                    TimerKey::Heartbeat {
                        group_id,
                        member_id,
                    },
                    TimerAction::ExpireHeartbeat,
                ) => {
                    self.expire_heartbeat(&group_id, &member_id, now_ms, &mut out);
                }
                (TimerKey::Join { group_id }, TimerAction::CompleteJoin) => {
                    // Join deadlines exist only while a group prepares a
                    // rebalance (complete_join and deletion cancel them).
                    if let Some(group) = self.groups.get_mut(&group_id) {
                        if group.is_in(GroupState::PreparingRebalance) {
                            self.core.complete_join(group, now_ms, &mut out);
                        }
                    }
                }
                (
                    TimerKey::Join { group_id },
                    TimerAction::InitialRebalance {
                        delay_ms,
                        remaining_ms,
                    },
                ) => {
                    let preparing = self.groups.get_mut(&group_id);
                    if let Some(group) =
                        preparing.filter(|g| g.is_in(GroupState::PreparingRebalance))
                    {
                        self.core.initial_rebalance_elapsed(
                            group,
                            delay_ms,
                            remaining_ms,
                            now_ms,
                            &mut out,
                        );
                    }
                }
                (TimerKey::Sync { group_id }, TimerAction::ExpireSync { generation_id }) => {
                    if let Some(group) = self.groups.get_mut(&group_id) {
                        self.core
                            .expire_pending_sync(group, generation_id, now_ms, &mut out);
                    }
                }
                (
                    TimerKey::ConsumerSession {
                        group_id,
                        member_id,
                    },
                    TimerAction::ExpireConsumerSession,
                ) => self.expire_consumer_member(now_ms, &group_id, &member_id, None, &mut out),
                (
                    TimerKey::ConsumerClassicJoin {
                        group_id,
                        member_id,
                    }
                    | TimerKey::ConsumerClassicSync {
                        group_id,
                        member_id,
                    },
                    TimerAction::ExpireConsumerSession,
                ) => {
                    tracing::info!(
                        group_id,
                        member_id,
                        "classic member did not rejoin or sync within its rebalance timeout"
                    );
                    self.expire_consumer_member(now_ms, &group_id, &member_id, None, &mut out)
                }
                (
                    TimerKey::ConsumerRevocation {
                        group_id,
                        member_id,
                    },
                    TimerAction::ExpireConsumerRevocation { member_epoch },
                ) => self.expire_consumer_member(
                    now_ms,
                    &group_id,
                    &member_id,
                    Some(member_epoch),
                    &mut out,
                ),
                (TimerKey::OffsetsRetention, TimerAction::OffsetsRetention) => {
                    self.expire_offsets(now_ms, &mut out);
                    self.core.schedule_offsets_retention(now_ms);
                }
                (key, action) => unreachable!("timer {key:?} with action {action:?}"),
            }
        }
        out
    }

    /// Rebuilds state from one `__consumer_offsets` record while loading the
    /// partition, before any request: offsets are set or removed, groups come
    /// back as their last GroupMetadataValue says (Stable with its members,
    /// or Empty), tombstones delete. Call [`GroupCoordinator::loaded`] after
    /// the last record.
    pub fn replay(&mut self, now_ms: i64, record: &CoordinatorRecord) {
        self.apply_record(now_ms, record, true);
    }

    /// Decodes and replays one record; records of types this broker does not
    /// handle (KIP-848, share, streams) are skipped.
    ///
    /// # Errors
    /// The record is malformed.
    pub fn replay_bytes(
        &mut self,
        now_ms: i64,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<(), super::RecordError> {
        match CoordinatorRecord::decode(key, value) {
            Ok(record) => {
                self.replay(now_ms, &record);
                Ok(())
            }
            Err(super::RecordError::UnsupportedRecordType { record_type }) => {
                tracing::debug!(
                    record_type,
                    "skipping __consumer_offsets record of another type"
                );
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Rebuilds state from one record of a transactional batch of
    /// `producer_id` while loading: offset records become the producer's
    /// pending offsets until a later marker of the producer
    /// ([`GroupCoordinator::on_txn_marker`], called in log order) commits or
    /// aborts them. Offsets of transactions still open at the end of the
    /// log stay pending.
    pub fn replay_transactional(
        &mut self,
        now_ms: i64,
        producer_id: i64,
        record: &CoordinatorRecord,
    ) {
        self.apply_txn_record(now_ms, producer_id, record, true);
    }

    /// Decodes and replays one record of a transactional batch; see
    /// [`GroupCoordinator::replay_transactional`] and
    /// [`GroupCoordinator::replay_bytes`].
    ///
    /// # Errors
    /// The record is malformed.
    pub fn replay_transactional_bytes(
        &mut self,
        now_ms: i64,
        producer_id: i64,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<(), super::RecordError> {
        match CoordinatorRecord::decode(key, value) {
            Ok(record) => {
                self.replay_transactional(now_ms, producer_id, &record);
                Ok(())
            }
            Err(super::RecordError::UnsupportedRecordType { record_type }) => {
                tracing::debug!(
                    record_type,
                    "skipping __consumer_offsets record of another type"
                );
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Finishes loading: every loaded member gets a fresh session timeout (as
    /// in Kafka, members must heartbeat again to stay), groups over the size
    /// limit rebalance, and the offsets expiry sweep is scheduled.
    pub fn loaded(&mut self, now_ms: i64) -> Effects {
        let mut out = Effects::default();
        let max = self.core.config.group_members_max;
        for group in self.groups.values_mut() {
            for member_id in group.members.keys().cloned().collect::<Vec<_>>() {
                self.core.reschedule_heartbeat(group, &member_id, now_ms);
            }
            if group.members.len() > max && group.can_rebalance() {
                self.core.prepare_rebalance(group, now_ms, &mut out);
            }
        }
        self.schedule_loaded_consumer_members(now_ms);
        self.core.schedule_offsets_retention(now_ms);
        out
    }

    /// Gives the partition up (another broker or shard takes over): every
    /// parked request is answered NOT_COORDINATOR and all state is dropped.
    /// Appends handed out before are forgotten: do not acknowledge them.
    /// The coordinator can be loaded again with [`GroupCoordinator::replay`].
    pub fn unload(&mut self) -> Effects {
        let mut out = Effects::default();
        let not_coordinator = ErrorCode::NotCoordinator;
        for group in self.groups.values_mut() {
            for member_id in group.members.keys().cloned().collect::<Vec<_>>() {
                if let Some(request_id) = group.take_awaiting_join(&member_id) {
                    complete_join(
                        &mut out,
                        request_id,
                        JoinGroupResponse::error(not_coordinator, &member_id),
                    );
                }
                if let Some(request_id) = group.take_awaiting_sync(&member_id) {
                    complete_sync(
                        &mut out,
                        request_id,
                        SyncGroupResponse::error(not_coordinator),
                    );
                }
            }
        }
        // Parked JoinGroups and SyncGroups were answered above; requests
        // that wait only for an append are answered here, without running
        // any state transition.
        while let Some(append) = self.core.in_flight.pop_front() {
            for waiter in append.waiters {
                self.after_append_failed(0, waiter, not_coordinator, &mut out);
            }
            match append.then {
                then @ (AfterAppend::OffsetCommit { .. }
                | AfterAppend::TxnOffsetCommit { .. }
                | AfterAppend::DeleteGroups { .. }
                | AfterAppend::OffsetDelete { .. }
                | AfterAppend::ConsumerGroupHeartbeat { .. }
                | AfterAppend::ClassicJoin { .. }
                | AfterAppend::OffsetFetch { .. }) => {
                    self.after_append_failed(0, then, not_coordinator, &mut out);
                }
                AfterAppend::Nothing
                | AfterAppend::SyncAssignment { .. }
                | AfterAppend::StaticMemberRejoin(_) => {}
            }
        }
        self.groups.clear();
        self.txn_offsets.clear();
        self.deferred_markers.clear();
        self.core.timers.clear();
        out
    }

    // ------------------------------------------------------------------
    // Internals

    fn expire_heartbeat(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        out: &mut Effects,
    ) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group.deleting {
            return;
        }
        if group.is_pending_member(member_id) {
            tracing::info!(group_id, member_id, "pending member expired before joining");
            group.remove(member_id);
            if group.is_in(GroupState::PreparingRebalance) && group.has_all_members_joined() {
                self.core.complete_join(group, now_ms, out);
            }
            return;
        }
        let Some(member) = group.members.get(member_id) else {
            return;
        };
        if member.has_satisfied_heartbeat() {
            return;
        }
        tracing::info!(group_id, member_id, "member session expired; removing it");
        self.core.remove_member(group, member_id, out);
        match group.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.core
                    .maybe_prepare_rebalance_or_complete_join(group, now_ms, out);
            }
            GroupState::PreparingRebalance if group.has_all_members_joined() => {
                self.core.complete_join(group, now_ms, out);
            }
            _ => {}
        }
    }

    /// Kafka's offsets cleanup (`cleanupGroupMetadata`): expired offsets get
    /// tombstones, and a group that is Empty with no offsets left is deleted.
    fn expire_offsets(&mut self, now_ms: i64, out: &mut Effects) {
        let retention_ms = self.core.config.offsets_retention_ms;
        let mut records = Vec::new();
        for group in self.groups.values_mut() {
            if group.deleting {
                continue;
            }
            let pending = &self.txn_offsets;
            let all_expired =
                Self::expired_offsets(group, pending, now_ms, retention_ms, &mut records);
            // A group with open transactions stays, as in Kafka.
            let consumer_members = group.consumer.as_ref().is_some_and(|c| !c.is_empty());
            if all_expired
                && group.is_in(GroupState::Empty)
                && !consumer_members
                && !pending.has_group(&group.group_id)
            {
                tracing::info!(group_id = %group.group_id, "deleting empty group whose offsets expired");
                if group.consumer.is_some() {
                    records.extend(consumer_groups::group_tombstones(&group.group_id));
                }
                records.push(CoordinatorRecord::GroupMetadata {
                    key: GroupMetadataKey {
                        group: group.group_id.clone(),
                    },
                    value: None,
                });
                group.deleting = true;
                self.core.cancel_group_timers(group);
            }
        }
        if !records.is_empty() {
            self.core.append(records, AfterAppend::Nothing, out);
        }
    }

    /// Adds tombstones for the group's expired offsets; true when no offset
    /// is left after them. An offset whose partition has a pending
    /// transactional offset does not expire yet (Kafka's
    /// `cleanupExpiredOffsets`).
    fn expired_offsets(
        group: &Group,
        pending: &PendingTxnOffsets,
        now_ms: i64,
        retention_ms: i64,
        records: &mut Vec<CoordinatorRecord>,
    ) -> bool {
        if group.offsets.is_empty() {
            return true;
        }
        let expiration = group.offset_expiration();
        if expiration == OffsetExpiration::Never {
            return false;
        }
        let mut all_expired = true;
        for (topic, partitions) in &group.offsets {
            if group.is_subscribed_to_topic(topic) {
                all_expired = false;
                continue;
            }
            for (&partition, offset) in partitions {
                let expired = match offset.expire_timestamp_ms {
                    Some(expire_ms) => now_ms >= expire_ms,
                    None => {
                        let base_ms = match expiration {
                            OffsetExpiration::SinceEmpty => group
                                .state_timestamp_ms
                                .unwrap_or(offset.commit_timestamp_ms),
                            _ => offset.commit_timestamp_ms,
                        };
                        now_ms.saturating_sub(base_ms) >= retention_ms
                    }
                };
                if expired && !pending.has_partition(&group.group_id, topic, partition) {
                    records.push(CoordinatorRecord::OffsetCommit {
                        key: OffsetCommitKey {
                            group: group.group_id.clone(),
                            topic: topic.clone(),
                            partition,
                        },
                        value: None,
                    });
                } else {
                    all_expired = false;
                }
            }
        }
        all_expired
    }

    /// Applies a record of a transactional batch of `producer_id`: offset
    /// records become that producer's pending offsets (the group is created
    /// as a simple group if unknown, as for a plain commit); anything else
    /// in such a batch is applied as usual (Kafka only routes offsets by
    /// producer id).
    fn apply_txn_record(
        &mut self,
        now_ms: i64,
        producer_id: i64,
        record: &CoordinatorRecord,
        loading: bool,
    ) {
        let CoordinatorRecord::OffsetCommit {
            key,
            value: Some(value),
        } = record
        else {
            self.apply_record(now_ms, record, loading);
            return;
        };
        self.groups
            .entry(key.group.clone())
            .or_insert_with(|| Group::new(&key.group, now_ms));
        let log_order = self.core.next_log_order();
        self.txn_offsets.add(
            producer_id,
            &key.group,
            &key.topic,
            key.partition,
            OffsetAndMetadata::from_record(value, log_order),
        );
    }

    /// Applies a record: at load (`loading`) every kind; on acknowledgement
    /// only offsets and group tombstones, since live membership is already
    /// ahead of the records that describe it.
    fn apply_record(&mut self, now_ms: i64, record: &CoordinatorRecord, loading: bool) {
        match record {
            CoordinatorRecord::OffsetCommit { key, value } => match value {
                Some(value) => {
                    let group = self
                        .groups
                        .entry(key.group.clone())
                        .or_insert_with(|| Group::new(&key.group, now_ms));
                    let log_order = self.core.next_log_order();
                    group.offsets.entry(key.topic.clone()).or_default().insert(
                        key.partition,
                        OffsetAndMetadata::from_record(value, log_order),
                    );
                }
                None => {
                    // A tombstone also drops every pending transactional
                    // offset of the partition (Kafka's replay does).
                    self.txn_offsets
                        .remove_partition(&key.group, &key.topic, key.partition);
                    if let Some(group) = self.groups.get_mut(&key.group) {
                        if let Some(partitions) = group.offsets.get_mut(&key.topic) {
                            partitions.remove(&key.partition);
                            if partitions.is_empty() {
                                group.offsets.remove(&key.topic);
                            }
                        }
                    }
                }
            },
            CoordinatorRecord::ConsumerGroup { key, value } => {
                // Live membership is ahead of its records: replay only.
                if loading {
                    self.replay_consumer_record(now_ms, key, value.as_ref());
                }
                if let Some(consumer) = self
                    .groups
                    .get_mut(&key.group)
                    .and_then(|g| g.consumer.as_mut())
                {
                    consumer.record_durable(key, value.as_ref());
                }
            }
            CoordinatorRecord::GroupMetadata { key, value } => match value {
                Some(value) => {
                    if loading {
                        let (offsets, consumer) = self
                            .groups
                            .remove(&key.group)
                            .map(|g| (g.offsets, g.consumer))
                            .unwrap_or_default();
                        let mut group = Group::from_record(&key.group, value);
                        group.offsets = offsets;
                        group.consumer = consumer;
                        self.groups.insert(key.group.clone(), group);
                    }
                }
                None => {
                    let Some(group) = self.groups.get_mut(&key.group) else {
                        return;
                    };
                    if !loading && !group.deleting {
                        return;
                    }
                    self.core.cancel_group_timers(group);
                    let offsets = std::mem::take(&mut group.offsets);
                    if offsets.is_empty() {
                        self.groups.remove(&key.group);
                    } else {
                        // Offsets committed after the tombstones were
                        // computed outlive the group, as they would on
                        // replay: the group comes back as a simple one.
                        let mut fresh = Group::new(&key.group, now_ms);
                        fresh.offsets = offsets;
                        self.groups.insert(key.group.clone(), fresh);
                    }
                }
            },
        }
    }

    fn after_append_succeeded(&mut self, now_ms: i64, then: AfterAppend, out: &mut Effects) {
        match then {
            AfterAppend::Nothing => {}
            AfterAppend::ConsumerGroupHeartbeat {
                request_id,
                response,
            } => complete(out, request_id, Response::ConsumerGroupHeartbeat(*response)),
            AfterAppend::ClassicJoin {
                request_id,
                response,
            } => complete_join(out, request_id, *response),
            AfterAppend::OffsetFetch {
                request_id,
                response,
            } => complete(out, request_id, Response::OffsetFetch(response)),
            AfterAppend::OffsetCommit {
                request_id,
                response,
            } => complete(out, request_id, Response::OffsetCommit(response)),
            AfterAppend::DeleteGroups {
                request_id,
                response,
            } => complete(out, request_id, Response::DeleteGroups(response)),
            AfterAppend::OffsetDelete {
                request_id,
                response,
            } => complete(out, request_id, Response::OffsetDelete(response)),
            AfterAppend::TxnOffsetCommit {
                request_id,
                response,
            } => complete(out, request_id, Response::TxnOffsetCommit(response)),
            AfterAppend::SyncAssignment {
                group_id,
                generation_id,
                assignment,
            } => {
                let Some(group) = self.groups.get_mut(&group_id) else {
                    return;
                };
                // Another rebalance may have started while the record was
                // being written; then this assignment is stale.
                if group.is_in(GroupState::CompletingRebalance)
                    && group.generation_id == generation_id
                {
                    self.core
                        .set_and_propagate_assignment(group, &assignment, now_ms, out);
                    group.transition_to(GroupState::Stable, now_ms);
                    tracing::info!(group_id = %group.group_id, generation_id, members = group.members.len(), "group is stable");
                }
            }
            AfterAppend::StaticMemberRejoin(rejoin) => {
                // A group that vanished had no members left, so the rejoined
                // member was removed and its JoinGroup answered then.
                let Some(group) = self.groups.get_mut(&rejoin.group_id) else {
                    return;
                };
                let Some(request_id) = group.take_awaiting_join(&rejoin.new_member_id) else {
                    // The member was removed meanwhile and its request answered.
                    return;
                };
                let response = if rejoin.api_version >= 9 {
                    // KIP-814: a rejoining static leader keeps its assignment
                    // and is told to skip computing a new one.
                    let is_leader = group.is_leader(&rejoin.new_member_id);
                    JoinGroupResponse {
                        error: None,
                        generation_id: group.generation_id,
                        protocol_type: group.protocol_type.clone(),
                        protocol_name: group.protocol_name.clone(),
                        leader: group.leader_id.clone().unwrap_or_default(),
                        skip_assignment: is_leader,
                        member_id: rejoin.new_member_id.clone(),
                        members: if is_leader {
                            group.join_members()
                        } else {
                            Vec::new()
                        },
                    }
                } else {
                    JoinGroupResponse {
                        error: None,
                        generation_id: group.generation_id,
                        protocol_type: group.protocol_type.clone(),
                        protocol_name: group.protocol_name.clone(),
                        leader: rejoin.leader_before.clone().unwrap_or_default(),
                        skip_assignment: false,
                        member_id: rejoin.new_member_id.clone(),
                        members: Vec::new(),
                    }
                };
                complete_join(out, request_id, response);
            }
        }
    }

    fn after_append_failed(
        &mut self,
        now_ms: i64,
        then: AfterAppend,
        error: ErrorCode,
        out: &mut Effects,
    ) {
        match then {
            AfterAppend::Nothing => {}
            // Kafka fails the heartbeat with the write's error (mapped as
            // `handleOperationException` does), without a message.
            AfterAppend::ConsumerGroupHeartbeat { request_id, .. } => complete(
                out,
                request_id,
                Response::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
                    error_message: None,
                    ..ConsumerGroupHeartbeatResponse::error(error, "")
                }),
            ),
            // Kafka answers the failed join with no member id.
            AfterAppend::ClassicJoin { request_id, .. } => {
                complete_join(out, request_id, JoinGroupResponse::error(error, ""));
            }
            AfterAppend::OffsetFetch {
                request_id,
                mut response,
            } => {
                // Kafka's `handleOffsetFetchException`: what the write path
                // maps to COORDINATOR_NOT_AVAILABLE is NOT_COORDINATOR here.
                let error = match error {
                    ErrorCode::CoordinatorNotAvailable => ErrorCode::NotCoordinator,
                    other => other,
                };
                for group in &mut response.groups {
                    group.error = Some(error);
                    group.topics.clear();
                }
                complete(out, request_id, Response::OffsetFetch(response));
            }
            AfterAppend::OffsetCommit {
                request_id,
                mut response,
            } => {
                for partition in response
                    .topics
                    .iter_mut()
                    .flat_map(|t| t.partitions.iter_mut())
                {
                    if partition.error.is_none() {
                        partition.error = Some(error);
                    }
                }
                complete(out, request_id, Response::OffsetCommit(response));
            }
            AfterAppend::TxnOffsetCommit {
                request_id,
                mut response,
            } => {
                for partition in response
                    .topics
                    .iter_mut()
                    .flat_map(|t| t.partitions.iter_mut())
                {
                    if partition.error.is_none() {
                        partition.error = Some(error);
                    }
                }
                complete(out, request_id, Response::TxnOffsetCommit(response));
            }
            AfterAppend::DeleteGroups {
                request_id,
                mut response,
            } => {
                for (_, result) in response.results.iter_mut() {
                    if result.is_none() {
                        *result = Some(error);
                    }
                }
                complete(out, request_id, Response::DeleteGroups(response));
            }
            AfterAppend::OffsetDelete { request_id, .. } => complete(
                out,
                request_id,
                Response::OffsetDelete(OffsetDeleteResponse {
                    error: Some(error),
                    topics: Vec::new(),
                }),
            ),
            AfterAppend::SyncAssignment {
                group_id,
                generation_id,
                ..
            } => {
                let Some(group) = self.groups.get_mut(&group_id) else {
                    return;
                };
                if group.is_in(GroupState::CompletingRebalance)
                    && group.generation_id == generation_id
                {
                    self.core
                        .reset_and_propagate_assignment_with_error(group, error, now_ms, out);
                    self.core
                        .maybe_prepare_rebalance_or_complete_join(group, now_ms, out);
                }
            }
            AfterAppend::StaticMemberRejoin(rejoin) => {
                let Some(group) = self.groups.get_mut(&rejoin.group_id) else {
                    return;
                };
                let still_mapped = group.static_member_id(&rejoin.group_instance_id)
                    == Some(rejoin.new_member_id.as_str());
                // If the new member was removed, fenced or answered by a
                // rebalance meanwhile, its JoinGroup was answered then.
                if still_mapped && group.has_member(&rejoin.new_member_id) {
                    let mut failed = JoinGroupResponse::error(error, "");
                    failed.generation_id = group.generation_id;
                    failed.protocol_type = group.protocol_type.clone();
                    failed.protocol_name = group.protocol_name.clone();
                    failed.leader = rejoin.leader_before.clone().unwrap_or_default();
                    if let Some(parked) = group.take_awaiting_join(&rejoin.new_member_id) {
                        complete_join(out, parked, failed);
                    }
                    {
                        // Undo: the old member id is the one the log knows.
                        group.update_member(
                            &rejoin.new_member_id,
                            rejoin.old_protocols.clone(),
                            rejoin.old_rebalance_timeout_ms,
                            rejoin.old_session_timeout_ms,
                            None,
                        );
                        let (_, fenced_sync) = group.replace_static_member(
                            &rejoin.group_instance_id,
                            &rejoin.new_member_id,
                            &rejoin.old_member_id,
                        );
                        if let Some(sync) = fenced_sync {
                            complete_sync(
                                out,
                                sync,
                                SyncGroupResponse::error(ErrorCode::FencedInstanceId),
                            );
                        }
                        self.core
                            .timers
                            .cancel(&heartbeat_key(&rejoin.group_id, &rejoin.new_member_id));
                        self.core
                            .reschedule_heartbeat(group, &rejoin.old_member_id, now_ms);
                    }
                }
            }
        }
    }
}

impl Core {
    /// What group `group_id`'s configs override.
    fn group_overrides(&self, group_id: &str) -> crate::config::group_config::GroupOverrides {
        self.group_configs
            .get(group_id)
            .map(|g| g.overrides)
            .unwrap_or_default()
    }

    /// `consumer.session.timeout.ms` of group `group_id`, else the broker's.
    fn consumer_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.group_overrides(group_id)
            .consumer_session_timeout_ms
            .unwrap_or(self.config.consumer_session_timeout_ms)
    }

    /// `consumer.heartbeat.interval.ms` of group `group_id`, else the
    /// broker's.
    fn consumer_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.group_overrides(group_id)
            .consumer_heartbeat_interval_ms
            .unwrap_or(self.config.consumer_heartbeat_interval_ms)
    }

    fn append(&mut self, records: Vec<CoordinatorRecord>, then: AfterAppend, out: &mut Effects) {
        self.append_with_producer(records, None, then, out);
    }

    /// Gives the answer `then` once every append queued so far is
    /// acknowledged (Kafka completes a write operation when the log's high
    /// watermark passes its records, and one without records when the
    /// writes before it are committed): it waits on the last append.
    ///
    /// # Panics
    /// If no append is in flight: the caller answers at once then.
    fn after_appends_in_flight(&mut self, then: AfterAppend) {
        self.in_flight
            .back_mut()
            .expect("an append is in flight")
            .waiters
            .push(then);
    }

    fn append_with_producer(
        &mut self,
        records: Vec<CoordinatorRecord>,
        producer: Option<TxnProducer>,
        then: AfterAppend,
        out: &mut Effects,
    ) {
        assert!(!records.is_empty());
        let id = AppendId(self.next_append_id);
        self.next_append_id += 1;
        out.appends.push(Append {
            id,
            records: records.clone(),
            producer,
        });
        self.in_flight.push_back(InFlightAppend {
            id,
            records,
            producer,
            then,
            waiters: Vec::new(),
        });
    }

    fn next_log_order(&mut self) -> u64 {
        let order = self.next_log_order;
        self.next_log_order += 1;
        order
    }

    fn schedule_offsets_retention(&mut self, now_ms: i64) {
        let deadline_ms = now_ms.saturating_add(self.config.offsets_retention_check_interval_ms);
        self.timers.schedule(
            TimerKey::OffsetsRetention,
            deadline_ms,
            TimerAction::OffsetsRetention,
        );
    }

    fn reschedule_heartbeat(&mut self, group: &Group, member_id: &str, now_ms: i64) {
        let timeout_ms = group.members[member_id].session_timeout_ms;
        self.schedule_heartbeat(group, member_id, timeout_ms, now_ms);
    }

    fn schedule_heartbeat(&mut self, group: &Group, member_id: &str, timeout_ms: i32, now_ms: i64) {
        self.timers.schedule(
            heartbeat_key(&group.group_id, member_id),
            now_ms.saturating_add(i64::from(timeout_ms)),
            TimerAction::ExpireHeartbeat,
        );
    }

    fn cancel_group_timers(&mut self, group: &Group) {
        self.timers.cancel(&join_key(&group.group_id));
        self.timers.cancel(&sync_key(&group.group_id));
        for member_id in group.members.keys() {
            self.timers
                .cancel(&heartbeat_key(&group.group_id, member_id));
        }
    }

    fn generate_member_id(&mut self, prefix: &str) -> String {
        format!("{prefix}-{}", self.rng.uuid())
    }

    /// Tombstones for every offset of an Empty group, for the partitions
    /// where only transactional offsets are pending (`pending_partitions`,
    /// as Kafka's `deleteAllOffsets` does: pending offsets do not keep a
    /// group from being deleted), and then the group; the group refuses
    /// writers until they are durable.
    fn delete_group_records(
        &mut self,
        group: &mut Group,
        pending_partitions: &[(String, i32)],
        records: &mut Vec<CoordinatorRecord>,
    ) {
        for (topic, partitions) in &group.offsets {
            for &partition in partitions.keys() {
                records.push(CoordinatorRecord::OffsetCommit {
                    key: OffsetCommitKey {
                        group: group.group_id.clone(),
                        topic: topic.clone(),
                        partition,
                    },
                    value: None,
                });
            }
        }
        for (topic, partition) in pending_partitions {
            let committed = group
                .offsets
                .get(topic)
                .is_some_and(|p| p.contains_key(partition));
            if !committed {
                records.push(CoordinatorRecord::OffsetCommit {
                    key: OffsetCommitKey {
                        group: group.group_id.clone(),
                        topic: topic.clone(),
                        partition: *partition,
                    },
                    value: None,
                });
            }
        }
        if group.consumer.is_some() {
            records.extend(consumer_groups::group_tombstones(&group.group_id));
        }
        records.push(CoordinatorRecord::GroupMetadata {
            key: GroupMetadataKey {
                group: group.group_id.clone(),
            },
            value: None,
        });
        group.deleting = true;
        self.cancel_group_timers(group);
    }

    /// Whether the group has room for this joiner (Kafka's
    /// `acceptJoiningMember`). During PreparingRebalance the members already
    /// rejoined are counted, so that the last to rejoin of an oversized group
    /// are the ones turned away.
    fn accept_joining_member(&self, group: &Group, member_id: &str) -> bool {
        let max = self.config.group_members_max;
        if group.deleting {
            return true;
        }
        match group.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                group
                    .members
                    .get(member_id)
                    .is_some_and(|m| m.awaiting_join.is_some())
                    || group.awaiting_join_count() < max
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                group.has_member(member_id) || group.members.len() < max
            }
        }
    }

    /// Removes a member or pending member, answering its parked requests
    /// UNKNOWN_MEMBER_ID and dropping its session timer.
    fn remove_member(&mut self, group: &mut Group, member_id: &str, out: &mut Effects) {
        self.timers
            .cancel(&heartbeat_key(&group.group_id, member_id));
        if let Some(member) = group.remove(member_id) {
            if let Some(request_id) = member.awaiting_join {
                complete_join(
                    out,
                    request_id,
                    JoinGroupResponse::error(ErrorCode::UnknownMemberId, ""),
                );
            }
            if let Some(request_id) = member.awaiting_sync {
                complete_sync(
                    out,
                    request_id,
                    SyncGroupResponse::error(ErrorCode::UnknownMemberId),
                );
            }
        }
    }

    fn join_new_member(
        &mut self,
        group: &mut Group,
        request: JoinGroupRequest,
        request_id: RequestId,
        now_ms: i64,
        out: &mut Effects,
    ) {
        if group.deleting {
            return complete_join(
                out,
                request_id,
                JoinGroupResponse::error(ErrorCode::CoordinatorNotAvailable, ""),
            );
        }
        if !group.supports_protocols(&request.protocol_type, &request.protocols) {
            return complete_join(
                out,
                request_id,
                JoinGroupResponse::error(ErrorCode::InconsistentGroupProtocol, ""),
            );
        }
        let prefix = request
            .group_instance_id
            .clone()
            .unwrap_or_else(|| request.client_id.clone());
        let new_member_id = self.generate_member_id(&prefix);
        if let Some(instance_id) = request.group_instance_id.clone() {
            match group.static_member_id(&instance_id).map(str::to_string) {
                Some(existing) => {
                    tracing::info!(group_id = %group.group_id, instance_id, old = existing, new = new_member_id, "static member rejoined with a new member id");
                    self.update_static_member_then_rebalance_or_complete_join(
                        group,
                        request,
                        &existing,
                        &new_member_id,
                        request_id,
                        now_ms,
                        out,
                    );
                }
                None => self.add_member_then_rebalance_or_complete_join(
                    group,
                    request,
                    new_member_id,
                    request_id,
                    now_ms,
                    out,
                ),
            }
        } else if request.api_version >= 4 {
            // KIP-394: hand out the member id first, so that a client whose
            // JoinGroup timed out rejoins as the same member rather than
            // leaving a ghost behind.
            if group.pending_member_count() >= self.config.group_members_max {
                return complete_join(
                    out,
                    request_id,
                    JoinGroupResponse::error(ErrorCode::GroupMaxSizeReached, ""),
                );
            }
            group.add_pending_member(&new_member_id);
            self.timers.schedule(
                heartbeat_key(&group.group_id, &new_member_id),
                now_ms.saturating_add(i64::from(request.session_timeout_ms)),
                TimerAction::ExpireHeartbeat,
            );
            complete_join(
                out,
                request_id,
                JoinGroupResponse::error(ErrorCode::MemberIdRequired, &new_member_id),
            );
        } else {
            self.add_member_then_rebalance_or_complete_join(
                group,
                request,
                new_member_id,
                request_id,
                now_ms,
                out,
            );
        }
    }

    fn join_existing_member(
        &mut self,
        group: &mut Group,
        request: JoinGroupRequest,
        request_id: RequestId,
        now_ms: i64,
        out: &mut Effects,
    ) {
        let member_id = request.member_id.clone();
        let reject = |out: &mut Effects, error: ErrorCode| {
            complete_join(out, request_id, JoinGroupResponse::error(error, &member_id));
        };
        if group.deleting {
            return reject(out, ErrorCode::CoordinatorNotAvailable);
        }
        if !group.supports_protocols(&request.protocol_type, &request.protocols) {
            return reject(out, ErrorCode::InconsistentGroupProtocol);
        }
        if group.is_pending_member(&member_id) {
            // Pending members are only ever dynamic (KIP-394 is not used for
            // static members); Kafka fails such a request as a server error.
            if request.group_instance_id.is_some() {
                return reject(out, ErrorCode::UnknownServerError);
            }
            return self.add_member_then_rebalance_or_complete_join(
                group,
                request,
                member_id.clone(),
                request_id,
                now_ms,
                out,
            );
        }
        if let Err(error) = group.validate_member(&member_id, request.group_instance_id.as_deref())
        {
            return reject(out, error);
        }
        let current_generation = |group: &Group, with_members: bool| JoinGroupResponse {
            error: None,
            generation_id: group.generation_id,
            protocol_type: group.protocol_type.clone(),
            protocol_name: group.protocol_name.clone(),
            leader: group.leader_id.clone().unwrap_or_default(),
            skip_assignment: false,
            member_id: member_id.clone(),
            members: if with_members {
                group.join_members()
            } else {
                Vec::new()
            },
        };
        let matches = group.members[&member_id].matches(&request.protocols);
        match group.state {
            GroupState::PreparingRebalance => {
                self.update_member_then_rebalance_or_complete_join(
                    group, request, request_id, now_ms, out,
                );
            }
            GroupState::CompletingRebalance => {
                if matches {
                    // The member missed its JoinGroup response: send it again.
                    let response = current_generation(group, group.is_leader(&member_id));
                    complete_join(out, request_id, response);
                } else {
                    self.update_member_then_rebalance_or_complete_join(
                        group, request, request_id, now_ms, out,
                    );
                }
            }
            GroupState::Stable => {
                // The leader's JoinGroup always rebalances: it may have seen
                // metadata changes (new partitions, a new regex match) that
                // no member's subscription shows. So does a follower whose
                // metadata changed, as cooperative members' does when their
                // owned partitions change.
                if group.is_leader(&member_id) || !matches {
                    self.update_member_then_rebalance_or_complete_join(
                        group, request, request_id, now_ms, out,
                    );
                } else {
                    let response = current_generation(group, false);
                    complete_join(out, request_id, response);
                }
            }
            GroupState::Empty | GroupState::Dead => reject(out, ErrorCode::UnknownMemberId),
        }
    }

    fn add_member_then_rebalance_or_complete_join(
        &mut self,
        group: &mut Group,
        request: JoinGroupRequest,
        member_id: String,
        request_id: RequestId,
        now_ms: i64,
        out: &mut Effects,
    ) {
        let member = Member {
            member_id: member_id.clone(),
            group_instance_id: request.group_instance_id,
            client_id: request.client_id,
            client_host: request.client_host,
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            session_timeout_ms: request.session_timeout_ms,
            protocol_type: request.protocol_type,
            protocols: request.protocols,
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: true,
        };
        if group.is_in(GroupState::PreparingRebalance) && group.previous_state == GroupState::Empty
        {
            group.new_member_added = true;
        }
        group.add(member, Some(request_id));
        // A new member cannot heartbeat while its JoinGroup is parked, and a
        // client that gave up would leave it behind: bound how long it waits.
        let timeout_ms = self.config.new_member_join_timeout_ms;
        self.schedule_heartbeat(group, &member_id, timeout_ms, now_ms);
        tracing::info!(group_id = %group.group_id, member_id, "member joined");
        self.maybe_prepare_rebalance_or_complete_join(group, now_ms, out);
    }

    fn update_member_then_rebalance_or_complete_join(
        &mut self,
        group: &mut Group,
        request: JoinGroupRequest,
        request_id: RequestId,
        now_ms: i64,
        out: &mut Effects,
    ) {
        let replaced = group.update_member(
            &request.member_id,
            request.protocols,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            Some(request_id),
        );
        if let Some(replaced) = replaced {
            complete_join(
                out,
                replaced,
                JoinGroupResponse::error(ErrorCode::RebalanceInProgress, &request.member_id),
            );
        }
        self.maybe_prepare_rebalance_or_complete_join(group, now_ms, out);
    }

    /// KIP-345: a static member rejoining with an unknown member id takes
    /// over its instance id; the old member id is fenced.
    #[allow(clippy::too_many_arguments)]
    fn update_static_member_then_rebalance_or_complete_join(
        &mut self,
        group: &mut Group,
        request: JoinGroupRequest,
        old_member_id: &str,
        new_member_id: &str,
        request_id: RequestId,
        now_ms: i64,
        out: &mut Effects,
    ) {
        let instance_id = request
            .group_instance_id
            .clone()
            .expect("static member has an instance id");
        let leader_before = group.leader_id.clone();
        let (fenced_join, fenced_sync) =
            group.replace_static_member(&instance_id, old_member_id, new_member_id);
        if let Some(fenced) = fenced_join {
            complete_join(
                out,
                fenced,
                JoinGroupResponse::error(ErrorCode::FencedInstanceId, old_member_id),
            );
        }
        if let Some(fenced) = fenced_sync {
            complete_sync(
                out,
                fenced,
                SyncGroupResponse::error(ErrorCode::FencedInstanceId),
            );
        }
        self.timers
            .cancel(&heartbeat_key(&group.group_id, old_member_id));
        self.reschedule_heartbeat(group, new_member_id, now_ms);

        let member = &group.members[new_member_id];
        let old_protocols = member.protocols.clone();
        let old_rebalance_timeout_ms = member.rebalance_timeout_ms;
        let old_session_timeout_ms = member.session_timeout_ms;
        let replaced = group.update_member(
            new_member_id,
            request.protocols,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            Some(request_id),
        );
        debug_assert!(replaced.is_none());

        match group.state {
            GroupState::Stable => {
                // Without a change of the group's protocol the member simply
                // takes its old place and assignment: persist the new member
                // id, then answer.
                if group.select_protocol() == group.protocol_name {
                    let record = CoordinatorRecord::GroupMetadata {
                        key: GroupMetadataKey {
                            group: group.group_id.clone(),
                        },
                        value: Some(group.to_record(None)),
                    };
                    self.append(
                        vec![record],
                        AfterAppend::StaticMemberRejoin(Box::new(StaticMemberRejoin {
                            group_id: group.group_id.clone(),
                            group_instance_id: instance_id,
                            old_member_id: old_member_id.to_string(),
                            new_member_id: new_member_id.to_string(),
                            old_protocols,
                            old_rebalance_timeout_ms,
                            old_session_timeout_ms,
                            leader_before,
                            api_version: request.api_version,
                        })),
                        out,
                    );
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(group, now_ms, out);
                }
            }
            // The leader may already be computing an assignment for the old
            // member id: rebalance so the new id gets one.
            GroupState::CompletingRebalance => self.prepare_rebalance(group, now_ms, out),
            GroupState::PreparingRebalance => self.maybe_complete_join_phase(group, now_ms, out),
            GroupState::Empty | GroupState::Dead => {
                unreachable!("a group with a static member is not empty")
            }
        }
    }

    fn maybe_prepare_rebalance_or_complete_join(
        &mut self,
        group: &mut Group,
        now_ms: i64,
        out: &mut Effects,
    ) {
        if group.can_rebalance() {
            self.prepare_rebalance(group, now_ms, out);
        } else {
            self.maybe_complete_join_phase(group, now_ms, out);
        }
    }

    fn prepare_rebalance(&mut self, group: &mut Group, now_ms: i64, out: &mut Effects) {
        if group.is_in(GroupState::CompletingRebalance) {
            self.reset_and_propagate_assignment_with_error(
                group,
                ErrorCode::RebalanceInProgress,
                now_ms,
                out,
            );
        }
        self.remove_sync_expiration(group);
        let is_initial_rebalance = group.is_in(GroupState::Empty);
        if is_initial_rebalance {
            // A new group: give its members time to arrive, so that a group
            // starting N consumers does not rebalance N times.
            let delay_ms = self.config.initial_rebalance_delay_ms;
            let remaining_ms = (group.rebalance_timeout_ms() - delay_ms).max(0);
            self.timers.schedule(
                join_key(&group.group_id),
                now_ms.saturating_add(i64::from(delay_ms)),
                TimerAction::InitialRebalance {
                    delay_ms,
                    remaining_ms,
                },
            );
        }
        group.transition_to(GroupState::PreparingRebalance, now_ms);
        tracing::info!(group_id = %group.group_id, generation_id = group.generation_id, "preparing to rebalance");
        if !is_initial_rebalance {
            self.maybe_complete_join_else_schedule(group, now_ms, out);
        }
    }

    fn maybe_complete_join_else_schedule(
        &mut self,
        group: &mut Group,
        now_ms: i64,
        out: &mut Effects,
    ) {
        if group.has_all_members_joined() {
            self.complete_join(group, now_ms, out);
        } else {
            self.timers.schedule(
                join_key(&group.group_id),
                now_ms.saturating_add(i64::from(group.rebalance_timeout_ms())),
                TimerAction::CompleteJoin,
            );
        }
    }

    /// Completes the join phase early when every member rejoined, except
    /// during the initial rebalance, which always waits for its delay.
    fn maybe_complete_join_phase(&mut self, group: &mut Group, now_ms: i64, out: &mut Effects) {
        if !group.is_in(GroupState::PreparingRebalance)
            || group.previous_state == GroupState::Empty
            || !group.has_all_members_joined()
        {
            return;
        }
        self.complete_join(group, now_ms, out);
    }

    fn initial_rebalance_elapsed(
        &mut self,
        group: &mut Group,
        delay_ms: i32,
        remaining_ms: i32,
        now_ms: i64,
        out: &mut Effects,
    ) {
        if group.new_member_added && remaining_ms != 0 {
            group.new_member_added = false;
            let new_delay_ms = self.config.initial_rebalance_delay_ms.min(remaining_ms);
            let new_remaining_ms = (remaining_ms - delay_ms).max(0);
            self.timers.schedule(
                join_key(&group.group_id),
                now_ms.saturating_add(i64::from(new_delay_ms)),
                TimerAction::InitialRebalance {
                    delay_ms: new_delay_ms,
                    remaining_ms: new_remaining_ms,
                },
            );
        } else {
            self.complete_join(group, now_ms, out);
        }
    }

    /// Ends the join phase: dynamic members that did not rejoin are removed,
    /// the generation advances, and every rejoined member gets its JoinGroup
    /// answer (the leader with everyone's metadata).
    fn complete_join(&mut self, group: &mut Group, now_ms: i64, out: &mut Effects) {
        self.timers.cancel(&join_key(&group.group_id));
        for member_id in group.not_yet_rejoined_members() {
            if group.members[&member_id].group_instance_id.is_none() {
                tracing::info!(group_id = %group.group_id, member_id, "member did not rejoin in time; removing it");
                self.remove_member(group, &member_id, out);
            }
        }
        if group.deleting {
            return;
        }
        if !group.maybe_elect_new_joined_leader() && !group.members.is_empty() {
            // Only static members that did not rejoin are left: wait another
            // rebalance timeout for them (their sessions may expire first).
            self.timers.schedule(
                join_key(&group.group_id),
                now_ms.saturating_add(i64::from(group.rebalance_timeout_ms())),
                TimerAction::CompleteJoin,
            );
            return;
        }
        group.init_next_generation(now_ms);
        if group.is_in(GroupState::Empty) {
            tracing::info!(group_id = %group.group_id, generation_id = group.generation_id, "group is empty");
            let record = CoordinatorRecord::GroupMetadata {
                key: GroupMetadataKey {
                    group: group.group_id.clone(),
                },
                value: Some(group.to_record(None)),
            };
            self.append(vec![record], AfterAppend::Nothing, out);
            return;
        }
        tracing::info!(group_id = %group.group_id, generation_id = group.generation_id, members = group.members.len(), "join phase complete");
        let leader_members = group.join_members();
        let member_ids: Vec<String> = group.members.keys().cloned().collect();
        for member_id in member_ids {
            let is_leader = group.is_leader(&member_id);
            let response = JoinGroupResponse {
                error: None,
                generation_id: group.generation_id,
                protocol_type: group.protocol_type.clone(),
                protocol_name: group.protocol_name.clone(),
                leader: group.leader_id.clone().unwrap_or_default(),
                skip_assignment: false,
                member_id: member_id.clone(),
                members: if is_leader {
                    leader_members.clone()
                } else {
                    Vec::new()
                },
            };
            if let Some(request_id) = group.take_awaiting_join(&member_id) {
                complete_join(out, request_id, response);
            }
            self.reschedule_heartbeat(group, &member_id, now_ms);
            if let Some(member) = group.members.get_mut(&member_id) {
                member.is_new = false;
            }
            group.add_pending_sync_member(&member_id);
        }
        self.timers.schedule(
            sync_key(&group.group_id),
            now_ms.saturating_add(i64::from(group.rebalance_timeout_ms())),
            TimerAction::ExpireSync {
                generation_id: group.generation_id,
            },
        );
    }

    fn remove_sync_expiration(&mut self, group: &mut Group) {
        group.pending_sync_members.clear();
        self.timers.cancel(&sync_key(&group.group_id));
    }

    fn remove_pending_sync_member(&mut self, group: &mut Group, member_id: &str) {
        group.pending_sync_members.remove(member_id);
        if group.pending_sync_members.is_empty() {
            self.timers.cancel(&sync_key(&group.group_id));
        }
    }

    /// Members that got their JoinGroup answer but never sent SyncGroup are
    /// removed, and the group rebalances without them.
    fn expire_pending_sync(
        &mut self,
        group: &mut Group,
        generation_id: i32,
        now_ms: i64,
        out: &mut Effects,
    ) {
        if generation_id != group.generation_id || group.deleting {
            return;
        }
        if !matches!(
            group.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) {
            return;
        }
        if group.pending_sync_members.is_empty() {
            return;
        }
        let pending: Vec<String> = group.pending_sync_members.iter().cloned().collect();
        tracing::info!(group_id = %group.group_id, ?pending, "members did not sync in time; removing them");
        for member_id in &pending {
            self.remove_member(group, member_id, out);
        }
        self.prepare_rebalance(group, now_ms, out);
    }

    /// The leader's SyncGroup: fills in members it left out, writes the
    /// group's record, and hands the assignment out once it is durable.
    fn store_leader_assignment(
        &mut self,
        group: &mut Group,
        request: SyncGroupRequest,
        out: &mut Effects,
    ) {
        let mut assignment: BTreeMap<String, Bytes> = BTreeMap::new();
        for entry in request.assignments {
            if group.has_member(&entry.member_id) {
                assignment.insert(entry.member_id, entry.assignment);
            }
        }
        let consumer = group.uses_consumer_protocol();
        for member_id in group.members.keys() {
            let slot = assignment.entry(member_id.clone()).or_default();
            if slot.is_empty() && consumer {
                *slot = consumer_protocol::empty_assignment();
            }
        }
        tracing::info!(group_id = %group.group_id, generation_id = group.generation_id, "assignment received from the leader");
        let record = CoordinatorRecord::GroupMetadata {
            key: GroupMetadataKey {
                group: group.group_id.clone(),
            },
            value: Some(group.to_record(Some(&assignment))),
        };
        self.append(
            vec![record],
            AfterAppend::SyncAssignment {
                group_id: group.group_id.clone(),
                generation_id: request.generation_id,
                assignment,
            },
            out,
        );
    }

    fn reset_and_propagate_assignment_with_error(
        &mut self,
        group: &mut Group,
        error: ErrorCode,
        now_ms: i64,
        out: &mut Effects,
    ) {
        assert!(group.is_in(GroupState::CompletingRebalance));
        for member in group.members.values_mut() {
            member.assignment = Bytes::new();
        }
        self.propagate_assignment(group, Some(error), now_ms, out);
    }

    fn set_and_propagate_assignment(
        &mut self,
        group: &mut Group,
        assignment: &BTreeMap<String, Bytes>,
        now_ms: i64,
        out: &mut Effects,
    ) {
        assert!(group.is_in(GroupState::CompletingRebalance));
        for member in group.members.values_mut() {
            member.assignment = assignment
                .get(&member.member_id)
                .cloned()
                .unwrap_or_default();
        }
        self.propagate_assignment(group, None, now_ms, out);
    }

    /// Answers every parked SyncGroup with the member's assignment (or the
    /// error) and restarts each answered member's session.
    fn propagate_assignment(
        &mut self,
        group: &mut Group,
        error: Option<ErrorCode>,
        now_ms: i64,
        out: &mut Effects,
    ) {
        let (protocol_type, protocol_name) = match error {
            None => (group.protocol_type.clone(), group.protocol_name.clone()),
            Some(_) => (None, None),
        };
        let member_ids: Vec<String> = group.members.keys().cloned().collect();
        for member_id in member_ids {
            if let Some(request_id) = group.take_awaiting_sync(&member_id) {
                let assignment = group.members[&member_id].assignment.clone();
                complete_sync(
                    out,
                    request_id,
                    SyncGroupResponse {
                        error,
                        protocol_type: protocol_type.clone(),
                        protocol_name: protocol_name.clone(),
                        assignment,
                    },
                );
                self.reschedule_heartbeat(group, &member_id, now_ms);
            }
        }
    }
}

/// No topics, for tests of classic groups, which need none.
#[cfg(test)]
const NO_TOPICS: super::consumer::TopicsSnapshot =
    super::consumer::TopicsSnapshot(BTreeMap::new(), 0);

mod classic_members;
mod consumer_groups;
#[cfg(test)]
mod tests;
