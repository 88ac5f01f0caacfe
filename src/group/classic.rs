//! One classic group: its state, generation, members, the requests its
//! members have parked, and its committed offsets. The bookkeeping here
//! mirrors Kafka's `ClassicGroup` and `ClassicGroupMember`; the decisions
//! (when to rebalance, what to answer) live in [`super::coordinator`].
//!
//! Shard-local, owned by one [`super::GroupCoordinator`]. Members are kept in
//! a `BTreeMap` so that every "first member" choice (a new leader) is
//! deterministic.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;

use super::api::{JoinGroupMember, JoinProtocol, RequestId};
use super::consumer_protocol::{self, CONSUMER_PROTOCOL_TYPE};
use super::records::{GroupMetadataValue, MemberMetadata, OffsetCommitValue};
use crate::protocol::ErrorCode;

/// A classic group's state (Kafka's `ClassicGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members; offsets may remain. New members may join.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Assigned; members heartbeat.
    Stable,
    /// Removed. Only reported for unknown groups; a group being deleted keeps
    /// its last state for readers and behaves as Dead for writers.
    Dead,
}

impl GroupState {
    /// Kafka's name for the state, as ListGroups and DescribeGroups report it.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// States a group may move to this one from.
    fn valid_previous_states(self) -> &'static [GroupState] {
        match self {
            GroupState::Empty => &[GroupState::PreparingRebalance],
            GroupState::PreparingRebalance => &[
                GroupState::Stable,
                GroupState::CompletingRebalance,
                GroupState::Empty,
            ],
            GroupState::CompletingRebalance => &[GroupState::PreparingRebalance],
            GroupState::Stable => &[GroupState::CompletingRebalance],
            GroupState::Dead => &[
                GroupState::Stable,
                GroupState::PreparingRebalance,
                GroupState::CompletingRebalance,
                GroupState::Empty,
                GroupState::Dead,
            ],
        }
    }
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OffsetAndMetadata {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
    /// Only commits with an explicit retention (OffsetCommit v2-v4) have one.
    pub expire_timestamp_ms: Option<i64>,
    /// Position of the record in the offsets log, relative to the other
    /// offset records applied by this coordinator (Kafka's `recordOffset`):
    /// a transaction's COMMIT only replaces a committed offset whose record
    /// came earlier in the log. Any order-preserving number works, since
    /// records are applied in log order both when loading and when appends
    /// are acknowledged.
    pub log_order: u64,
}

impl OffsetAndMetadata {
    pub fn from_record(value: &OffsetCommitValue, log_order: u64) -> Self {
        OffsetAndMetadata {
            log_order,
            offset: value.offset,
            leader_epoch: (value.leader_epoch >= 0).then_some(value.leader_epoch),
            metadata: value.metadata.clone(),
            commit_timestamp_ms: value.commit_timestamp_ms,
            expire_timestamp_ms: (value.expire_timestamp_ms != -1)
                .then_some(value.expire_timestamp_ms),
        }
    }

    pub fn to_record(&self) -> OffsetCommitValue {
        OffsetCommitValue {
            offset: self.offset,
            leader_epoch: self.leader_epoch.unwrap_or(-1),
            metadata: self.metadata.clone(),
            commit_timestamp_ms: self.commit_timestamp_ms,
            expire_timestamp_ms: self.expire_timestamp_ms.unwrap_or(-1),
        }
    }
}

/// How a group's offsets expire (Kafka's `ClassicGroup.offsetExpirationCondition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffsetExpiration {
    /// Offsets do not expire now.
    Never,
    /// Retention counts from each offset's commit.
    SinceCommit,
    /// Retention counts from when the group became Empty (or, for groups
    /// loaded from records without that timestamp, from the commit).
    SinceEmpty,
}

/// One member of a classic group.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<JoinProtocol>,
    pub assignment: Bytes,
    /// The member's parked JoinGroup.
    pub awaiting_join: Option<RequestId>,
    /// The member's parked SyncGroup.
    pub awaiting_sync: Option<RequestId>,
    /// Joined during the current rebalance and not yet told about it; such a
    /// member may expire even while its JoinGroup is parked.
    pub is_new: bool,
}

impl Member {
    /// The member's metadata for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// Same protocols, same metadata, same order.
    pub fn matches(&self, protocols: &[JoinProtocol]) -> bool {
        self.protocols == protocols
    }

    /// The member's most preferred protocol among `candidates`.
    fn vote<'a>(&'a self, candidates: &BTreeSet<&str>) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|name| candidates.contains(name))
    }

    /// A member whose JoinGroup or SyncGroup is parked has heartbeated, unless
    /// it is new (Kafka's `hasSatisfiedHeartbeat`).
    pub fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }
}

/// One classic group and its offsets.
#[derive(Debug)]
pub(crate) struct Group {
    pub group_id: String,
    pub state: GroupState,
    pub previous_state: GroupState,
    pub state_timestamp_ms: Option<i64>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader_id: Option<String>,
    pub members: BTreeMap<String, Member>,
    static_members: HashMap<String, String>,
    pending_join_members: BTreeSet<String>,
    pub pending_sync_members: BTreeSet<String>,
    supported_protocols: HashMap<String, usize>,
    awaiting_join_count: usize,
    pub subscribed_topics: Option<BTreeSet<String>>,
    /// A member joined during the initial rebalance's delay: extend it.
    pub new_member_added: bool,
    /// topic -> partition -> committed offset.
    pub offsets: BTreeMap<String, BTreeMap<i32, OffsetAndMetadata>>,
    /// Tombstones for the group are being appended: writers see it as Dead,
    /// readers still see its last committed view.
    pub deleting: bool,
    /// Set for a KIP-848 consumer group: its membership lives there and the
    /// classic membership above stays empty (Kafka's group "type").
    pub consumer: Option<Box<super::consumer::ConsumerGroup>>,
}

impl Group {
    /// A new, empty group.
    pub fn new(group_id: &str, now_ms: i64) -> Self {
        Group {
            group_id: group_id.to_string(),
            state: GroupState::Empty,
            previous_state: GroupState::Dead,
            state_timestamp_ms: Some(now_ms),
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_join_members: BTreeSet::new(),
            pending_sync_members: BTreeSet::new(),
            supported_protocols: HashMap::new(),
            awaiting_join_count: 0,
            subscribed_topics: None,
            new_member_added: false,
            offsets: BTreeMap::new(),
            deleting: false,
            consumer: None,
        }
    }

    /// A group as a GroupMetadataValue record describes it: Stable with its
    /// members, or Empty (Kafka's `GroupMetadataManager.replay`).
    pub fn from_record(group_id: &str, value: &GroupMetadataValue) -> Self {
        let mut group = Group::new(group_id, 0);
        group.state = if value.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        group.state_timestamp_ms =
            (value.current_state_timestamp_ms != -1).then_some(value.current_state_timestamp_ms);
        group.protocol_name = value.protocol.clone();
        group.generation_id = value.generation;
        group.leader_id = value.leader.clone();
        for member in &value.members {
            // v0 records carry no rebalance timeout (decoded as the schema
            // default 0; Kafka's own readers use -1): use the session timeout.
            let rebalance_timeout_ms = if member.rebalance_timeout_ms <= 0 {
                member.session_timeout_ms
            } else {
                member.rebalance_timeout_ms
            };
            group.add(
                Member {
                    member_id: member.member_id.clone(),
                    group_instance_id: member.group_instance_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    rebalance_timeout_ms,
                    session_timeout_ms: member.session_timeout_ms,
                    protocol_type: value.protocol_type.clone(),
                    protocols: vec![JoinProtocol {
                        name: value.protocol.clone().unwrap_or_default(),
                        metadata: member.subscription.clone(),
                    }],
                    assignment: member.assignment.clone(),
                    awaiting_join: None,
                    awaiting_sync: None,
                    is_new: false,
                },
                None,
            );
        }
        // `add` makes the first member leader and takes the protocol type
        // from it; the record is authoritative for both.
        group.leader_id = value.leader.clone();
        group.protocol_type =
            (!value.protocol_type.is_empty()).then(|| value.protocol_type.clone());
        group.subscribed_topics = group.compute_subscribed_topics();
        group
    }

    /// The record describing this group, with `assignment` (member id ->
    /// bytes) overriding the members' current assignments.
    pub fn to_record(&self, assignment: Option<&BTreeMap<String, Bytes>>) -> GroupMetadataValue {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            current_state_timestamp_ms: self.state_timestamp_ms.unwrap_or(-1),
            members: self
                .members
                .values()
                .map(|member| MemberMetadata {
                    member_id: member.member_id.clone(),
                    group_instance_id: member.group_instance_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    rebalance_timeout_ms: member.rebalance_timeout_ms,
                    session_timeout_ms: member.session_timeout_ms,
                    subscription: member.metadata(&protocol),
                    assignment: assignment
                        .and_then(|a| a.get(&member.member_id).cloned())
                        .unwrap_or_else(|| member.assignment.clone()),
                })
                .collect(),
        }
    }

    pub fn is_in(&self, state: GroupState) -> bool {
        self.state == state
    }

    pub fn has_member(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    /// Adds a member; `awaiting_join` is its parked JoinGroup.
    pub fn add(&mut self, mut member: Member, awaiting_join: Option<RequestId>) {
        if let Some(instance_id) = &member.group_instance_id {
            let previous = self
                .static_members
                .insert(instance_id.clone(), member.member_id.clone());
            assert!(previous.is_none(), "static member added twice");
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        assert_eq!(
            self.protocol_type.as_deref(),
            Some(member.protocol_type.as_str())
        );
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.increment_supported_protocols(&member.protocols);
        member.awaiting_join = awaiting_join;
        if member.awaiting_join.is_some() {
            self.awaiting_join_count += 1;
        }
        self.pending_join_members.remove(&member.member_id);
        let previous = self.members.insert(member.member_id.clone(), member);
        assert!(previous.is_none(), "member added twice");
    }

    /// Removes a member (or a pending member) and returns it; its parked
    /// requests are the caller's to answer. A removed leader is replaced by
    /// the first remaining member.
    pub fn remove(&mut self, member_id: &str) -> Option<Member> {
        let removed = self.members.remove(member_id);
        if let Some(member) = &removed {
            self.decrement_supported_protocols(&member.protocols);
            if member.awaiting_join.is_some() {
                self.awaiting_join_count -= 1;
            }
            if let Some(instance_id) = &member.group_instance_id {
                self.static_members.remove(instance_id);
            }
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join_members.remove(member_id);
        self.pending_sync_members.remove(member_id);
        removed
    }

    /// Makes sure the leader is a member that rejoined: keeps the leader if it
    /// did, else promotes the first member that did. False when there is no
    /// leader or nobody rejoined.
    pub fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader_id) = self.leader_id.clone() else {
            return false;
        };
        let leader_rejoined = self
            .members
            .get(&leader_id)
            .is_some_and(|m| m.awaiting_join.is_some());
        if leader_rejoined {
            return true;
        }
        match self.members.values().find(|m| m.awaiting_join.is_some()) {
            Some(member) => {
                self.leader_id = Some(member.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Gives a static member a new member id, keeping everything else, and
    /// returns the old member's parked requests (to be fenced).
    pub fn replace_static_member(
        &mut self,
        instance_id: &str,
        old_member_id: &str,
        new_member_id: &str,
    ) -> (Option<RequestId>, Option<RequestId>) {
        let mut member = self
            .members
            .remove(old_member_id)
            .expect("replacing a static member that is not in the group");
        let fenced = (member.awaiting_join.take(), member.awaiting_sync.take());
        if fenced.0.is_some() {
            self.awaiting_join_count -= 1;
        }
        member.member_id = new_member_id.to_string();
        member.is_new = false;
        self.members.insert(new_member_id.to_string(), member);
        if self.is_leader(old_member_id) {
            self.leader_id = Some(new_member_id.to_string());
        }
        self.static_members
            .insert(instance_id.to_string(), new_member_id.to_string());
        fenced
    }

    pub fn is_pending_member(&self, member_id: &str) -> bool {
        self.pending_join_members.contains(member_id)
    }

    pub fn add_pending_member(&mut self, member_id: &str) {
        assert!(!self.has_member(member_id));
        self.pending_join_members.insert(member_id.to_string());
    }

    pub fn pending_member_count(&self) -> usize {
        self.pending_join_members.len()
    }

    pub fn add_pending_sync_member(&mut self, member_id: &str) {
        assert!(self.has_member(member_id));
        self.pending_sync_members.insert(member_id.to_string());
    }

    pub fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.static_members.get(instance_id).map(String::as_str)
    }

    /// Members whose JoinGroup is not parked.
    pub fn not_yet_rejoined_members(&self) -> Vec<String> {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.member_id.clone())
            .collect()
    }

    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.awaiting_join_count && self.pending_join_members.is_empty()
    }

    pub fn awaiting_join_count(&self) -> usize {
        self.awaiting_join_count
    }

    /// The largest rebalance timeout of the members.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
            .max(0)
    }

    /// Checks that the member exists and, for a static member, that the
    /// instance id maps to this member id (KIP-345 fencing).
    pub fn validate_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if let Some(instance_id) = group_instance_id {
            match self.static_member_id(instance_id) {
                None => return Err(ErrorCode::UnknownMemberId),
                Some(existing) if existing != member_id => return Err(ErrorCode::FencedInstanceId),
                Some(_) => {}
            }
        }
        if !self.has_member(member_id) {
            return Err(ErrorCode::UnknownMemberId);
        }
        Ok(())
    }

    /// Kafka's `ClassicGroup.validateOffsetCommit` for non-transactional
    /// commits.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        api_version: i16,
    ) -> Result<(), ErrorCode> {
        if self.deleting {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        if let Some(consumer) = &self.consumer {
            return consumer.validate_offset_commit(member_id, generation_id, Some(api_version));
        }
        // Generation -1 comes from admin tools and consumers that assign
        // partitions themselves: allowed while nobody is a member.
        if generation_id < 0 && self.is_in(GroupState::Empty) {
            return Ok(());
        }
        if generation_id >= 0 || !member_id.is_empty() || group_instance_id.is_some() {
            self.validate_member(member_id, group_instance_id)?;
            if generation_id != self.generation_id {
                return Err(ErrorCode::IllegalGeneration);
            }
        } else if !self.is_in(GroupState::Empty) {
            return Err(ErrorCode::UnknownMemberId);
        }
        // The member knows the new generation from its JoinGroup response but
        // has no assignment yet: it must not commit for partitions it may lose.
        if self.is_in(GroupState::CompletingRebalance) {
            return Err(ErrorCode::RebalanceInProgress);
        }
        Ok(())
    }

    /// Kafka's `ClassicGroup.validateOffsetCommit` for transactional
    /// commits (TxnOffsetCommit): unlike plain commits, a request without
    /// member id and generation (v0-v2 cannot carry them) is accepted
    /// whatever the group's state, and CompletingRebalance is no obstacle.
    pub fn validate_txn_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), ErrorCode> {
        if self.deleting {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        if let Some(consumer) = &self.consumer {
            return consumer.validate_offset_commit(member_id, generation_id, None);
        }
        if generation_id < 0 && self.is_in(GroupState::Empty) {
            return Ok(());
        }
        if generation_id >= 0 || !member_id.is_empty() || group_instance_id.is_some() {
            self.validate_member(member_id, group_instance_id)?;
            if generation_id != self.generation_id {
                return Err(ErrorCode::IllegalGeneration);
            }
        }
        Ok(())
    }

    pub fn offset_expiration(&self) -> OffsetExpiration {
        // Consumer groups: from the commit, for topics nobody subscribes
        // to (Kafka's `ConsumerGroup.offsetExpirationCondition`).
        if self.protocol_type.is_none() || self.consumer.is_some() {
            // A group that only stores offsets (manual assignment).
            return OffsetExpiration::SinceCommit;
        }
        if self.is_in(GroupState::Empty) {
            return OffsetExpiration::SinceEmpty;
        }
        if self.uses_consumer_protocol()
            && self.subscribed_topics.is_some()
            && self.is_in(GroupState::Stable)
        {
            return OffsetExpiration::SinceCommit;
        }
        OffsetExpiration::Never
    }

    /// Whether the group consumes `topic`. When the subscriptions are unknown
    /// a consumer group is assumed to (Kafka's `isSubscribedToTopic`).
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        if let Some(consumer) = &self.consumer {
            return consumer.subscription_metadata.contains_key(topic)
                || consumer.subscribes_to(topic);
        }
        match &self.subscribed_topics {
            Some(topics) => topics.contains(topic),
            None => self.uses_consumer_protocol(),
        }
    }

    pub fn can_rebalance(&self) -> bool {
        GroupState::PreparingRebalance
            .valid_previous_states()
            .contains(&self.state)
    }

    /// Drops the classic membership, which moved into a consumer group
    /// (Kafka's online upgrade): Empty, no members, no protocol; the
    /// offsets stay.
    pub fn clear_membership(&mut self, now_ms: i64) {
        self.members.clear();
        self.static_members.clear();
        self.pending_join_members.clear();
        self.pending_sync_members.clear();
        self.supported_protocols.clear();
        self.awaiting_join_count = 0;
        self.subscribed_topics = None;
        self.new_member_added = false;
        self.leader_id = None;
        self.protocol_type = None;
        self.protocol_name = None;
        // A classic group made again later starts over, as Kafka's new
        // ClassicGroup does (and as a replay would).
        self.generation_id = 0;
        self.previous_state = self.state;
        self.state = GroupState::Empty;
        self.state_timestamp_ms = Some(now_ms);
    }

    /// Stable at `generation_id`, as a consumer group turned back into a
    /// classic group starts (Kafka's `ClassicGroup.fromConsumerGroup`); the
    /// members are added after.
    pub fn restart_stable(&mut self, generation_id: i32, now_ms: i64) {
        self.clear_membership(now_ms);
        self.generation_id = generation_id;
        self.state = GroupState::Stable;
    }

    pub fn transition_to(&mut self, state: GroupState, now_ms: i64) {
        assert!(
            state.valid_previous_states().contains(&self.state),
            "group {} cannot move from {:?} to {:?}",
            self.group_id,
            self.state,
            state
        );
        self.previous_state = self.state;
        self.state = state;
        self.state_timestamp_ms = Some(now_ms);
    }

    /// The protocol every member supports that most members prefer; ties go
    /// to the smallest name (Kafka breaks them by hash order).
    pub fn select_protocol(&self) -> Option<String> {
        let member_count = self.members.len();
        let candidates: BTreeSet<&str> = self
            .supported_protocols
            .iter()
            .filter(|(_, &count)| count == member_count)
            .map(|(name, _)| name.as_str())
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = member.vote(&candidates) {
                *votes.entry(name).or_default() += 1;
            }
        }
        let most = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|&(_, count)| count == most)
            .map(|(name, _)| name.to_string())
    }

    /// Whether a member with these protocols could join: any non-empty set
    /// into an Empty group, else the same protocol type and one protocol all
    /// members support.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[JoinProtocol]) -> bool {
        if self.is_in(GroupState::Empty) {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|p| {
                self.supported_protocols.get(&p.name).copied().unwrap_or(0) == self.members.len()
            })
    }

    /// The union of the members' subscribed topics, for consumer groups whose
    /// metadata parses; None when unknown.
    pub fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if !self.uses_consumer_protocol() {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for member in self.members.values() {
            topics.extend(consumer_protocol::subscribed_topics(
                &member.metadata(protocol),
            )?);
        }
        Some(topics)
    }

    /// Replaces a member's protocols and timeouts and sets its parked
    /// JoinGroup. Returns a previously parked JoinGroup that this one replaces.
    pub fn update_member(
        &mut self,
        member_id: &str,
        protocols: Vec<JoinProtocol>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        awaiting_join: Option<RequestId>,
    ) -> Option<RequestId> {
        let mut member = self
            .members
            .remove(member_id)
            .expect("updating an unknown member");
        self.decrement_supported_protocols(&member.protocols);
        self.increment_supported_protocols(&protocols);
        member.protocols = protocols;
        member.rebalance_timeout_ms = rebalance_timeout_ms;
        member.session_timeout_ms = session_timeout_ms;
        let replaced = match (member.awaiting_join, awaiting_join) {
            (None, Some(_)) => {
                self.awaiting_join_count += 1;
                None
            }
            (Some(_), None) => {
                self.awaiting_join_count -= 1;
                None
            }
            (Some(old), Some(new)) if old != new => Some(old),
            _ => None,
        };
        member.awaiting_join = awaiting_join;
        self.members.insert(member_id.to_string(), member);
        replaced
    }

    /// Takes the member's parked JoinGroup (to answer it).
    pub fn take_awaiting_join(&mut self, member_id: &str) -> Option<RequestId> {
        let request = self.members.get_mut(member_id)?.awaiting_join.take();
        if request.is_some() {
            self.awaiting_join_count -= 1;
        }
        request
    }

    /// Takes the member's parked SyncGroup (to answer it).
    pub fn take_awaiting_sync(&mut self, member_id: &str) -> Option<RequestId> {
        self.members.get_mut(member_id)?.awaiting_sync.take()
    }

    /// Moves to the next generation: CompletingRebalance with a protocol
    /// chosen, or Empty when nobody is left.
    pub fn init_next_generation(&mut self, now_ms: i64) {
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::Empty, now_ms);
        } else {
            self.protocol_name = self.select_protocol();
            assert!(self.protocol_name.is_some(), "members share no protocol");
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::CompletingRebalance, now_ms);
        }
        self.pending_sync_members.clear();
    }

    /// Every member's metadata for the chosen protocol (the leader's
    /// JoinGroup response).
    pub fn join_members(&self) -> Vec<JoinGroupMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .values()
            .map(|member| JoinGroupMember {
                member_id: member.member_id.clone(),
                group_instance_id: member.group_instance_id.clone(),
                metadata: member.metadata(&protocol),
            })
            .collect()
    }

    fn increment_supported_protocols(&mut self, protocols: &[JoinProtocol]) {
        for protocol in protocols {
            *self
                .supported_protocols
                .entry(protocol.name.clone())
                .or_default() += 1;
        }
    }

    fn decrement_supported_protocols(&mut self, protocols: &[JoinProtocol]) {
        for protocol in protocols {
            if let Some(count) = self.supported_protocols.get_mut(&protocol.name) {
                *count -= 1;
                if *count == 0 {
                    self.supported_protocols.remove(&protocol.name);
                }
            }
        }
    }
}
