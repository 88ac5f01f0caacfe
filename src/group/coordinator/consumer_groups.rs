//! KIP-848 consumer groups in the coordinator: ConsumerGroupHeartbeat
//! (join, heartbeat, leave), ConsumerGroupDescribe, and their session and
//! revocation timers, following Kafka 4.x `GroupMetadataManager`
//! (`consumerGroupHeartbeat`, `consumerGroupLeave`,
//! `consumerGroupFenceMember`). The membership itself is
//! [`crate::group::consumer`].
//!
//! A consumer group shares its [`Group`] entry (and so its committed
//! offsets) with the classic code; its `consumer` part is set. Differences
//! from Kafka, on purpose or not yet done:
//! - The group, its members and assignments are written to
//!   `__consumer_offsets` in Kafka's record types (3, 5, 6, 7, 8) and
//!   reloaded, so members keep their epochs and partitions across a
//!   restart; regex resolutions (type 16) are not written, they are redone.
//!   The response does not wait for those records to be durable.
//! - Classic members in consumer groups, and the conversions between
//!   classic and consumer groups with members (Kafka's online upgrade and
//!   downgrade), are in `classic_members.rs`.
//! - Regular expressions are resolved at each heartbeat after the topics
//!   changed, not by a background task.

use super::*;
use crate::config::limits::TOPIC_NAME_BYTES_MAX;
use crate::group::assignor::Assignment;
use crate::group::consumer::{
    compile_regex, remember_compiled_regex, CompiledRegex, ConsumerGroup, ConsumerMember,
    MemberState, TopicsSnapshot, TopicsView, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use crate::group::records::{
    ConsumerGroupKey, ConsumerGroupValue, CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE,
    CONSUMER_GROUP_MEMBER_KEY_TYPE, CONSUMER_GROUP_METADATA_KEY_TYPE,
    CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE, CONSUMER_GROUP_TARGET_MEMBER_KEY_TYPE,
};

type Refusal = (ErrorCode, String);

fn refuse<T>(error: ErrorCode, message: impl Into<String>) -> Result<T, Refusal> {
    Err((error, message.into()))
}

pub(super) fn session_key(group_id: &str, member_id: &str) -> TimerKey {
    TimerKey::ConsumerSession {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
    }
}

fn revocation_key(group_id: &str, member_id: &str) -> TimerKey {
    TimerKey::ConsumerRevocation {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
    }
}

pub(super) fn classic_join_key(group_id: &str, member_id: &str) -> TimerKey {
    TimerKey::ConsumerClassicJoin {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
    }
}

pub(super) fn classic_sync_key(group_id: &str, member_id: &str) -> TimerKey {
    TimerKey::ConsumerClassicSync {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
    }
}

/// A static member's new member id takes over the old one's partitions and
/// target (Kafka's `replaceMember`); `consumer` must hold the old member.
fn replace_static_member(
    core: &mut Core,
    group_id: &str,
    consumer: &mut ConsumerGroup,
    old_id: &str,
    member_id: &str,
    records: &mut Vec<CoordinatorRecord>,
) {
    member_tombstones(group_id, old_id, records);
    tracing::info!(group_id, member_id, old_member_id = %old_id, "static member rejoins, replacing its previous member id");
    let target = consumer.target.remove(old_id);
    consumer.remove_member(old_id);
    core.cancel_consumer_timers(group_id, old_id);
    if let Some(target) = target {
        records.push(target_record(group_id, member_id, &target));
        consumer.target.insert(member_id.to_string(), target);
    }
}

/// Steps 1-3 of Kafka's consumer-group heartbeat, which a classic member's
/// JoinGroup shares: stores the member as the request left it (`member`:
/// before, after; replacing static member `replaced`), moves the group epoch on when a member joined or a
/// subscription (or a subscribed topic) changed, computes the new target,
/// and reconciles the member towards it given the partitions it reports
/// as owned. Adds the records to write to `records`; returns the member as
/// reconciled (and stored).
#[allow(clippy::too_many_arguments)]
pub(super) fn update_member(
    core: &mut Core,
    group_id: &str,
    consumer: &mut ConsumerGroup,
    member: (&ConsumerMember, ConsumerMember),
    is_new: bool,
    replaced: Option<&str>,
    owned: Option<&Assignment>,
    topics: &dyn TopicsView,
    now_ms: i64,
    records: &mut Vec<CoordinatorRecord>,
) -> ConsumerMember {
    let (before, updated) = member;
    let member_id = updated.member_id.clone();
    if let Some(old_id) = replaced {
        replace_static_member(core, group_id, consumer, old_id, &member_id, records);
    } else if is_new {
        let protocol = if updated.classic.is_some() {
            "classic"
        } else {
            "consumer"
        };
        tracing::info!(
            group_id,
            member_id,
            protocol,
            "member joins the consumer group"
        );
    }
    let mut bump = consumer.group_epoch == 0
        || updated.subscribed_topic_names != before.subscribed_topic_names
        || updated.subscribed_topic_regex != before.subscribed_topic_regex
        || (is_new
            && (!updated.subscribed_topic_names.is_empty()
                || updated.subscribed_topic_regex.is_some()));
    if is_new || replaced.is_some() || updated.metadata_value() != before.metadata_value() {
        records.push(record(
            CONSUMER_GROUP_MEMBER_KEY_TYPE,
            group_id,
            Some(&member_id),
            Some(ConsumerGroupValue::Member(Box::new(
                updated.metadata_value(),
            ))),
        ));
    }
    consumer.put_member(updated);

    // 2. The subscribed topics, and the group epoch.
    bump |= consumer.refresh_regexes(topics);
    bump |= consumer.refresh_subscription_metadata(topics, bump);
    if bump {
        consumer.group_epoch += 1;
        records.push(epoch_record(group_id, consumer));
    }
    if consumer.group_epoch > consumer.target_epoch {
        for changed in consumer.compute_target(&core.config.consumer_assignors) {
            records.push(target_record(
                group_id,
                &changed,
                &consumer.target[&changed],
            ));
        }
        records.push(record(
            CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE,
            group_id,
            None,
            Some(ConsumerGroupValue::TargetEpoch(consumer.target_epoch)),
        ));
    }

    // 3. Reconcile the member towards its target.
    let current = consumer.members[&member_id].clone();
    let reconciled = consumer.reconcile(&current, owned);
    if reconciled != current {
        records.push(assignment_record(group_id, &reconciled));
        // Classic members have their join and sync timers instead.
        if reconciled.state == MemberState::UnrevokedPartitions && reconciled.classic.is_none() {
            core.schedule_consumer_revocation(group_id, &reconciled, now_ms);
        } else {
            core.timers.cancel(&revocation_key(group_id, &member_id));
        }
        consumer.put_member(reconciled.clone());
    }
    reconciled
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate(request: &ConsumerGroupHeartbeatRequest, assignors: &[&str]) -> Result<(), Refusal> {
    let invalid = |message: &str| refuse(ErrorCode::InvalidRequest, message);
    // Kafka's "empty" includes blank.
    let blank = |s: &str| s.trim().is_empty();
    if (request.api_version >= 1
        || request.member_epoch > 0
        || request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH)
        && blank(&request.member_id)
    {
        return invalid("MemberId can't be empty.");
    }
    if blank(&request.group_id) {
        return invalid("GroupId can't be empty.");
    }
    if request.instance_id.as_deref().is_some_and(blank) {
        return invalid("InstanceId can't be empty.");
    }
    if request.rack_id.as_deref().is_some_and(blank) {
        return invalid("RackId can't be empty.");
    }
    match request.member_epoch {
        0 => {
            if request.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if request
                .topic_partitions
                .as_ref()
                .map_or(true, |t| !t.is_empty())
            {
                return invalid("TopicPartitions must be empty when (re-)joining.");
            }
            if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none()
            {
                return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.");
            }
        }
        LEAVE_GROUP_STATIC_MEMBER_EPOCH if request.instance_id.is_none() => {
            return invalid("InstanceId can't be null.");
        }
        epoch if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
            return invalid("MemberEpoch is invalid.")
        }
        _ => {}
    }
    if let Some(assignor) = &request.server_assignor {
        if !assignors.contains(&assignor.as_str()) {
            return refuse(
                ErrorCode::UnsupportedAssignor,
                // Kafka lists them from a HashSet: uniform before range.
                format!(
                    "ServerAssignor {assignor} is not supported. Supported assignors: {}.",
                    crate::group::assignor::ASSIGNORS
                        .iter()
                        .filter(|a| assignors.contains(a))
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    // Ids longer than the int16 lengths of `__consumer_offsets` keys never
    // get here: the request decoder refuses strings over 0x7fff bytes.
    if let Some(names) = &request.subscribed_topic_names {
        if names.len() > SUBSCRIBED_TOPICS_MAX {
            return invalid(&format!(
                "SubscribedTopicNames has more than {SUBSCRIBED_TOPICS_MAX} topics."
            ));
        }
        if names.iter().any(|n| n.len() > TOPIC_NAME_BYTES_MAX) {
            return invalid(&format!(
                "SubscribedTopicNames has a name longer than {TOPIC_NAME_BYTES_MAX} bytes."
            ));
        }
    }
    Ok(())
}

/// Most topic names one member may subscribe to (Kafka has no bound).
pub const SUBSCRIBED_TOPICS_MAX: usize = 10_000;
/// Coordinator appends not yet acknowledged past which heartbeats are
/// refused (retriable) until the log catches up.
const APPENDS_IN_FLIGHT_MAX: usize = 10_000;

/// Kafka's regex check, done only when a member's regex changes: by the
/// request's compiled regex (compiled off the reactor), else compiled here.
fn check_regex(regex: &str, compiled: Option<&CompiledRegex>) -> Result<(), Refusal> {
    let result = match compiled.filter(|c| c.source == regex) {
        Some(c) => c.compiled.as_ref().map(|_| ()).map_err(Clone::clone),
        None => compile_regex(regex).map(|_| ()),
    };
    result.or_else(|e| {
        refuse(
            ErrorCode::InvalidRegularExpression,
            format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}."),
        )
    })
}

/// Kafka's `throwIfMemberEpochIsInvalid`: a newer epoch than known, or an
/// older one that is not the previous epoch with a subset of the current
/// assignment (a lost response), is fenced.
fn check_member_epoch(
    member: &ConsumerMember,
    received: i32,
    owned: Option<&Assignment>,
) -> Result<(), Refusal> {
    let fenced = |which: &str| {
        refuse(
            ErrorCode::FencedMemberEpoch,
            format!(
                "The consumer group member has a {which} member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            ),
        )
    };
    if received > member.member_epoch {
        return fenced("greater");
    }
    if received < member.member_epoch {
        let subset = owned.is_some_and(|owned| {
            owned.iter().all(|(topic, set)| {
                member
                    .assigned
                    .get(topic)
                    .is_some_and(|assigned| set.is_subset(assigned))
            })
        });
        if received != member.previous_member_epoch || !subset {
            return fenced("smaller");
        }
    }
    Ok(())
}

/// A consumer group's description, with topic names from `topics`.
fn describe_assignment(
    assignment: &Assignment,
    topics: &dyn TopicsView,
) -> Vec<DescribedTopicPartitions> {
    // Topics deleted since are left out, as Kafka does.
    assignment
        .iter()
        .filter(|(_, set)| !set.is_empty())
        .filter_map(|(id, set)| {
            Some(DescribedTopicPartitions {
                topic_id: *id,
                topic_name: topics.topic_name(id)?,
                partitions: set.iter().copied().collect(),
            })
        })
        .collect()
}

impl Core {
    /// A consumer-group member's session ends the group's
    /// `consumer.session.timeout.ms` (else the broker's
    /// `group.consumer.session.timeout.ms`; a classic member: its JoinGroup's
    /// session timeout) from now unless it heartbeats again.
    pub(super) fn schedule_consumer_session(
        &mut self,
        group_id: &str,
        member: &ConsumerMember,
        now_ms: i64,
    ) {
        let timeout_ms = match &member.classic {
            Some(classic) => classic.session_timeout_ms,
            None => self.consumer_session_timeout_ms(group_id),
        };
        self.schedule_consumer_session_in(group_id, &member.member_id, now_ms, timeout_ms);
    }

    /// A consumer-group member's session ends `timeout_ms` from now.
    fn schedule_consumer_session_in(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        timeout_ms: i32,
    ) {
        self.timers.schedule(
            session_key(group_id, member_id),
            now_ms.saturating_add(i64::from(timeout_ms)),
            TimerAction::ExpireConsumerSession,
        );
    }

    /// A classic member told to rejoin has its rebalance timeout to send
    /// JoinGroup (Kafka's `scheduleConsumerGroupJoinTimeoutIfAbsent`).
    pub(super) fn schedule_classic_join_if_absent(
        &mut self,
        group_id: &str,
        member: &ConsumerMember,
        now_ms: i64,
    ) {
        let key = classic_join_key(group_id, &member.member_id);
        if !self.timers.contains(&key) {
            let timeout_ms = i64::from(member.rebalance_timeout_ms.max(0));
            self.timers.schedule(
                key,
                now_ms.saturating_add(timeout_ms),
                TimerAction::ExpireConsumerSession,
            );
        }
    }

    /// A member that must revoke partitions has its rebalance timeout to
    /// do it at its current epoch.
    fn schedule_consumer_revocation(
        &mut self,
        group_id: &str,
        member: &ConsumerMember,
        now_ms: i64,
    ) {
        let timeout_ms = i64::from(member.rebalance_timeout_ms.max(0));
        self.timers.schedule(
            revocation_key(group_id, &member.member_id),
            now_ms.saturating_add(timeout_ms),
            TimerAction::ExpireConsumerRevocation {
                member_epoch: member.member_epoch,
            },
        );
    }

    pub(super) fn cancel_consumer_timers(&mut self, group_id: &str, member_id: &str) {
        self.timers.cancel(&session_key(group_id, member_id));
        self.timers.cancel(&revocation_key(group_id, member_id));
        self.timers.cancel(&classic_join_key(group_id, member_id));
        self.timers.cancel(&classic_sync_key(group_id, member_id));
    }
}

impl GroupCoordinator {
    /// ConsumerGroupHeartbeat as the service runs it. Kafka runs it as a
    /// write operation: answered once its records, and every append before
    /// them, are durable (with the write's error if that fails); a refusal
    /// is answered at once, as is a heartbeat when nothing is in flight.
    pub fn consumer_group_heartbeat_call(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: ConsumerGroupHeartbeatRequest,
        topics: &dyn TopicsView,
    ) -> Outcome<ConsumerGroupHeartbeatResponse> {
        let (response, effects) = self.consumer_group_heartbeat(now_ms, request, topics);
        if response.error.is_some() || self.core.in_flight.is_empty() {
            return Outcome {
                reply: Reply::Ready(response),
                effects,
            };
        }
        self.core
            .after_appends_in_flight(AfterAppend::ConsumerGroupHeartbeat {
                request_id,
                response: Box::new(response),
            });
        Outcome {
            reply: Reply::Pending,
            effects,
        }
    }

    /// ConsumerGroupHeartbeat, its answer computed at once. Effects carry the
    /// group-epoch records to append.
    pub fn consumer_group_heartbeat(
        &mut self,
        now_ms: i64,
        request: ConsumerGroupHeartbeatRequest,
        topics: &dyn TopicsView,
    ) -> (ConsumerGroupHeartbeatResponse, Effects) {
        let mut out = Effects::default();
        if self.core.in_flight.len() >= APPENDS_IN_FLIGHT_MAX {
            let busy = "The coordinator is writing too much; retry.";
            return (
                ConsumerGroupHeartbeatResponse::error(ErrorCode::CoordinatorNotAvailable, busy),
                out,
            );
        }
        let group_id = request.group_id.clone();
        let result = validate(&request, &self.core.config.consumer_assignors).and_then(|()| {
            if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
                || request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
            {
                self.consumer_group_leave(now_ms, &request, topics, &mut out)
            } else {
                self.consumer_group_join_or_heartbeat(now_ms, request, topics, &mut out)
            }
        });
        let response = result.unwrap_or_else(|(error, message)| {
            // A group this refused request created (or converted) goes
            // back, as Kafka's would with the request's records.
            self.forget_untouched_consumer_group(&group_id);
            ConsumerGroupHeartbeatResponse::error(error, message)
        });
        (response, out)
    }

    fn forget_untouched_consumer_group(&mut self, group_id: &str) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group
            .consumer
            .as_ref()
            .is_some_and(|c| c.group_epoch == 0 && c.is_empty())
        {
            group.consumer = None;
            if group.offsets.is_empty() && group.members.is_empty() && !group.deleting {
                self.groups.remove(group_id);
            }
        }
    }

    /// Whether group `group_id` is a consumer group.
    pub fn is_consumer_group(&self, group_id: &str) -> bool {
        self.groups
            .get(group_id)
            .is_some_and(|g| g.consumer.is_some() && !g.deleting)
    }

    fn consumer_group_join_or_heartbeat(
        &mut self,
        now_ms: i64,
        request: ConsumerGroupHeartbeatRequest,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let group_id = request.group_id.clone();
        let joining = request.member_epoch == 0;
        let mut upgrade = false;
        match self.groups.get_mut(&group_id) {
            None if !joining => {
                return refuse(
                    ErrorCode::GroupIdNotFound,
                    format!("Consumer group {group_id} not found."),
                )
            }
            None => {
                if self.groups.len() >= GROUPS_PER_COORDINATOR_MAX {
                    tracing::warn!(group_id, "group limit reached; refusing a new group");
                    return refuse(ErrorCode::CoordinatorNotAvailable, "Too many groups.");
                }
                let mut group = Group::new(&group_id, now_ms);
                group.consumer = Some(Box::default());
                self.groups.insert(group_id.clone(), group);
            }
            Some(group) if group.deleting => {
                return refuse(
                    ErrorCode::CoordinatorNotAvailable,
                    format!("Group {group_id} is being deleted."),
                )
            }
            Some(group) if group.consumer.is_some() => {}
            Some(group)
                if joining && group.is_in(GroupState::Empty) && group.members.is_empty() =>
            {
                // An empty classic group (offsets only) becomes a consumer
                // group and keeps its offsets.
                tracing::info!(
                    group_id,
                    "converting an empty classic group to a consumer group"
                );
                group.consumer = Some(Box::default());
                group.protocol_type = None;
                group.protocol_name = None;
            }
            // A classic group with members: Kafka's online upgrade.
            Some(_) if joining => upgrade = true,
            Some(_) => {
                return refuse(
                    ErrorCode::GroupIdNotFound,
                    format!("Group {group_id} is not a consumer group."),
                )
            }
        }
        if upgrade {
            // What would refuse the join is checked first: a refused join
            // leaves the group classic, as Kafka drops the conversion's
            // records with the request's.
            self.validate_online_upgrade(&group_id)?;
            let classic_members = self.groups[&group_id].members.len();
            let max_size = self.core.config.consumer_group_members_max;
            if classic_members >= max_size {
                return refuse(
                    ErrorCode::GroupMaxSizeReached,
                    format!(
                        "The consumer group has reached its maximum capacity of {max_size} members."
                    ),
                );
            }
            if let Some(regex) = request
                .subscribed_topic_regex
                .as_deref()
                .filter(|r| !r.is_empty())
            {
                check_regex(regex, request.compiled_regex.as_ref())?;
            }
            self.upgrade_classic_group(&group_id, now_ms, topics, out)?;
        }
        let max_size = self.core.config.consumer_group_members_max;
        let heartbeat_interval_ms = self.core.consumer_heartbeat_interval_ms(&group_id);
        let member_id = if request.member_id.is_empty() {
            // v0: the coordinator names a joining member.
            self.core.rng.kafka_uuid()
        } else {
            request.member_id.clone()
        };
        let group = self.groups.get_mut(&group_id).expect("group exists");
        let consumer: &mut ConsumerGroup = group.consumer.as_mut().expect("consumer group");
        if (request.member_id.is_empty() || !consumer.members.contains_key(&member_id))
            && consumer.members.len() >= max_size
        {
            return refuse(
                ErrorCode::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {max_size} members."
                ),
            );
        }
        let owned = request.topic_partitions.as_ref();

        // The member as it was (a fresh one for a join), and which static
        // member it replaces.
        let mut replaced: Option<String> = None;
        let existing_static = request
            .instance_id
            .as_ref()
            .and_then(|i| consumer.static_members.get(i))
            .cloned();
        let member: ConsumerMember = match (&request.instance_id, joining) {
            (Some(instance_id), true) => match existing_static {
                None => consumer
                    .members
                    .get(&member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerMember::new(&member_id)),
                Some(old_id) => {
                    let Some(old) = consumer.members.get(&old_id) else {
                        return refuse(
                            ErrorCode::UnknownMemberId,
                            format!("Instance id {instance_id} is unknown."),
                        );
                    };
                    // A classic member's instance id is taken over at once
                    // (a static consumer restarted on the new protocol).
                    if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH && old.classic.is_none()
                    {
                        return refuse(
                            ErrorCode::UnreleasedInstanceId,
                            format!("Static member {member_id} with instance id {instance_id} cannot join the group because the instance id is owned by {old_id} member."),
                        );
                    }
                    // The new id takes over the old one's partitions.
                    let mut taken_over = old.clone();
                    taken_over.member_id = member_id.clone();
                    taken_over.member_epoch = 0;
                    taken_over.previous_member_epoch = 0;
                    replaced = Some(old_id);
                    taken_over
                }
            },
            (Some(instance_id), false) => {
                let Some(old_id) = existing_static else {
                    return refuse(
                        ErrorCode::UnknownMemberId,
                        format!("Instance id {instance_id} is unknown."),
                    );
                };
                if old_id != member_id {
                    return refuse(
                        ErrorCode::FencedInstanceId,
                        format!("Static member {member_id} with instance id {instance_id} was fenced by member {old_id}."),
                    );
                }
                let Some(member) = consumer.members.get(&old_id).cloned() else {
                    return refuse(
                        ErrorCode::UnknownMemberId,
                        format!("Instance id {instance_id} is unknown."),
                    );
                };
                check_member_epoch(&member, request.member_epoch, owned)?;
                member
            }
            (None, true) => match consumer.members.get(&member_id) {
                // Kafka checks a known member's epoch 0 like any other: only
                // a member still at its first epoch may send it again.
                Some(existing) => {
                    check_member_epoch(existing, 0, owned)?;
                    existing.clone()
                }
                None => ConsumerMember::new(&member_id),
            },
            (None, false) => {
                let Some(member) = consumer.members.get(&member_id) else {
                    return refuse(
                        ErrorCode::UnknownMemberId,
                        format!("Member {member_id} is not a member of group {group_id}."),
                    );
                };
                check_member_epoch(member, request.member_epoch, owned)?;
                member.clone()
            }
        };
        let is_new = !consumer.members.contains_key(&member_id) && replaced.is_none();

        // 1. The member's new subscription and settings; a regex new to the
        // member is checked (Kafka: new to the group).
        if let Some(regex) = request
            .subscribed_topic_regex
            .as_deref()
            .filter(|r| !r.is_empty())
        {
            if member.subscribed_topic_regex.as_deref() != Some(regex) {
                check_regex(regex, request.compiled_regex.as_ref())?;
            }
        }
        if let Some(compiled) = &request.compiled_regex {
            remember_compiled_regex(compiled);
        }
        let mut updated = member.clone();
        // It speaks the consumer protocol now.
        updated.classic = None;
        if let Some(instance_id) = &request.instance_id {
            updated.instance_id = Some(instance_id.clone());
        }
        if let Some(rack_id) = &request.rack_id {
            updated.rack_id = Some(rack_id.clone());
        }
        if request.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        if let Some(assignor) = &request.server_assignor {
            updated.server_assignor = Some(assignor.clone());
        }
        if let Some(names) = &request.subscribed_topic_names {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            updated.subscribed_topic_names = names;
        }
        if let Some(regex) = &request.subscribed_topic_regex {
            updated.subscribed_topic_regex = (!regex.is_empty()).then(|| regex.clone());
        }
        updated.client_id.clone_from(&request.client_id);
        updated.client_host.clone_from(&request.client_host);
        let mut records = Vec::new();
        let reconciled = update_member(
            &mut self.core,
            &group_id,
            consumer,
            (&member, updated),
            is_new,
            replaced.as_deref(),
            owned,
            topics,
            now_ms,
            &mut records,
        );
        // Its assignment record failed to be written: write it again.
        if consumer.unwritten.remove(&member_id)
            && !records.iter().any(|r| is_assignment_of(r, &member_id))
        {
            records.push(assignment_record(&group_id, &reconciled));
        }
        let assignment_changed = reconciled.assigned != member.assigned;
        let member_epoch = reconciled.member_epoch;
        let full_request = request.rebalance_timeout_ms != -1
            && (request.subscribed_topic_names.is_some()
                || request.subscribed_topic_regex.is_some())
            && request.topic_partitions.is_some();
        let assignment =
            (joining || full_request || assignment_changed).then(|| reconciled.assigned.clone());
        if !records.is_empty() {
            self.core.append(records, AfterAppend::Nothing, out);
        }
        self.core
            .schedule_consumer_session(&group_id, &reconciled, now_ms);
        Ok(ConsumerGroupHeartbeatResponse {
            error: None,
            error_message: None,
            member_id: Some(member_id),
            member_epoch,
            heartbeat_interval_ms,
            assignment,
        })
    }

    /// Kafka's `consumerGroupLeave`.
    fn consumer_group_leave(
        &mut self,
        now_ms: i64,
        request: &ConsumerGroupHeartbeatRequest,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let group_id = &request.group_id;
        let Some(group) = self.groups.get_mut(group_id).filter(|g| !g.deleting) else {
            return refuse(
                ErrorCode::GroupIdNotFound,
                format!("Group {group_id} not found."),
            );
        };
        let Some(consumer) = group.consumer.as_mut() else {
            return refuse(
                ErrorCode::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            );
        };
        let member_id = match &request.instance_id {
            None => {
                if !consumer.members.contains_key(&request.member_id) {
                    return refuse(
                        ErrorCode::UnknownMemberId,
                        format!(
                            "Member {} is not a member of group {group_id}.",
                            request.member_id
                        ),
                    );
                }
                request.member_id.clone()
            }
            Some(instance_id) => {
                let Some(owner) = consumer.static_members.get(instance_id).cloned() else {
                    return refuse(
                        ErrorCode::UnknownMemberId,
                        format!("Instance id {instance_id} is unknown."),
                    );
                };
                if owner != request.member_id {
                    return refuse(
                        ErrorCode::FencedInstanceId,
                        format!("Static member {} with instance id {instance_id} was fenced by member {owner}.", request.member_id),
                    );
                }
                if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                    // It keeps its assignment until its session expires.
                    tracing::info!(group_id, member_id = %owner, instance_id, "static member temporarily left the consumer group");
                    let Some(mut member) = consumer.members.get(&owner).cloned() else {
                        return refuse(
                            ErrorCode::UnknownMemberId,
                            format!("Instance id {instance_id} is unknown."),
                        );
                    };
                    // It keeps what it owns but gives up what it was
                    // revoking (Kafka's static member leave).
                    member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
                    member.pending_revocation.clear();
                    let written = assignment_record(group_id, &member);
                    consumer.put_member(member);
                    self.core.append(vec![written], AfterAppend::Nothing, out);
                    self.core.timers.cancel(&revocation_key(group_id, &owner));
                    return Ok(leave_response(&owner, LEAVE_GROUP_STATIC_MEMBER_EPOCH));
                }
                owner
            }
        };
        tracing::info!(group_id, member_id, "member left the consumer group");
        self.fence_consumer_member(now_ms, group_id, &member_id, Some(topics), out);
        Ok(leave_response(&member_id, request.member_epoch))
    }

    /// LeaveGroup on a consumer group (the Admin's
    /// `removeMembersFromConsumerGroup`): members named by id, or by
    /// instance id when the id is empty, are removed.
    pub(super) fn leave_consumer_group(
        &mut self,
        now_ms: i64,
        request: &LeaveGroupRequest,
        out: &mut Effects,
    ) -> LeaveGroupResponse {
        let group_id = &request.group_id;
        let mut members = Vec::with_capacity(request.members.len());
        let mut leaving: Vec<String> = Vec::new();
        let consumer = self.groups.get(group_id).and_then(|g| g.consumer.as_ref());
        for member in &request.members {
            let target = consumer.and_then(|c| {
                if member.member_id.is_empty() {
                    member
                        .group_instance_id
                        .as_ref()
                        .and_then(|i| c.static_members.get(i).cloned())
                } else {
                    c.members
                        .get(&member.member_id)
                        .filter(|m| {
                            member.group_instance_id.is_none()
                                || m.instance_id == member.group_instance_id
                        })
                        .map(|m| m.member_id.clone())
                }
            });
            let error = match target {
                Some(member_id) => {
                    tracing::info!(group_id, member_id, "member removed through LeaveGroup");
                    if !leaving.contains(&member_id) {
                        leaving.push(member_id);
                    }
                    None
                }
                None => Some(ErrorCode::UnknownMemberId),
            };
            members.push(LeaveGroupMemberResponse {
                member_id: member.member_id.clone(),
                group_instance_id: member.group_instance_id.clone(),
                error,
            });
        }
        // All at once, as Kafka's `consumerGroupFenceMembers`.
        self.fence_consumer_members(now_ms, group_id, &leaving, None, out);
        LeaveGroupResponse {
            error: None,
            members,
        }
    }

    /// Removes a member (left, session expired, or did not revoke in
    /// time); see [`Self::fence_consumer_members`].
    pub(super) fn fence_consumer_member(
        &mut self,
        now_ms: i64,
        group_id: &str,
        member_id: &str,
        topics: Option<&dyn TopicsView>,
        out: &mut Effects,
    ) {
        self.fence_consumer_members(now_ms, group_id, &[member_id.to_string()], topics, out);
    }

    /// Removes members (Kafka's `consumerGroupFenceMembers`): their
    /// partitions are free, and the group epoch moves on once so the others
    /// get a new target at their next heartbeat; or, when only classic
    /// members remain, the group becomes a classic group again (Kafka's
    /// online downgrade). Without `topics` (timers, LeaveGroup: no metadata
    /// image at hand) the topics are as the group last saw them; the next
    /// heartbeat reads them again.
    pub(super) fn fence_consumer_members(
        &mut self,
        now_ms: i64,
        group_id: &str,
        member_ids: &[String],
        topics: Option<&dyn TopicsView>,
        out: &mut Effects,
    ) {
        let Some(consumer) = self
            .groups
            .get(group_id)
            .and_then(|g| g.consumer.as_deref())
        else {
            return;
        };
        let leaving: Vec<String> = member_ids
            .iter()
            .filter(|id| consumer.members.contains_key(*id))
            .cloned()
            .collect();
        if leaving.is_empty() {
            return;
        }
        let last_seen = TopicsSnapshot(consumer.subscription_metadata.clone(), u64::MAX);
        let topics = topics.unwrap_or(&last_seen);
        if self.downgrade_to_classic(now_ms, group_id, &leaving, true, topics, out) {
            return;
        }
        let consumer = self
            .groups
            .get_mut(group_id)
            .and_then(|g| g.consumer.as_mut())
            .expect("checked above");
        let mut records = Vec::new();
        for member_id in &leaving {
            consumer.remove_member(member_id);
            self.core.cancel_consumer_timers(group_id, member_id);
            member_tombstones(group_id, member_id, &mut records);
        }
        consumer.refresh_regexes(topics);
        consumer.refresh_subscription_metadata(topics, true);
        consumer.group_epoch += 1;
        records.push(epoch_record(group_id, consumer));
        self.core.append(records, AfterAppend::Nothing, out);
    }

    /// Rebuilds a consumer group from one of its records while loading.
    pub(super) fn replay_consumer_record(
        &mut self,
        now_ms: i64,
        key: &ConsumerGroupKey,
        value: Option<&ConsumerGroupValue>,
    ) {
        let group_id = &key.group;
        let member_id = key.member_id.as_deref().unwrap_or_default();
        let Some(value) = value else {
            // Tombstones.
            let Some(group) = self.groups.get_mut(group_id) else {
                return;
            };
            if key.record_type == CONSUMER_GROUP_METADATA_KEY_TYPE {
                group.consumer = None;
                if group.offsets.is_empty() && group.members.is_empty() {
                    self.groups.remove(group_id);
                }
                return;
            }
            let Some(consumer) = group.consumer.as_mut() else {
                return;
            };
            match key.record_type {
                CONSUMER_GROUP_MEMBER_KEY_TYPE => {
                    consumer.remove_member(member_id);
                }
                CONSUMER_GROUP_TARGET_MEMBER_KEY_TYPE => {
                    consumer.target.remove(member_id);
                }
                CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE => {
                    if let Some(mut member) = consumer.members.get(member_id).cloned() {
                        member.assigned.clear();
                        member.pending_revocation.clear();
                        consumer.put_member(member);
                    }
                }
                _ => {}
            }
            return;
        };
        let group = self
            .groups
            .entry(group_id.clone())
            .or_insert_with(|| Group::new(group_id, now_ms));
        let consumer = group.consumer.get_or_insert_with(Box::default);
        let member = || {
            consumer
                .members
                .get(member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerMember::new(member_id))
        };
        match value {
            ConsumerGroupValue::Metadata {
                epoch,
                metadata_hash,
            } => {
                consumer.group_epoch = *epoch;
                consumer.metadata_hash = *metadata_hash;
            }
            ConsumerGroupValue::Member(v) => {
                let mut m = member();
                m.set_metadata(v);
                consumer.put_member(m);
            }
            ConsumerGroupValue::TargetEpoch(epoch) => consumer.target_epoch = *epoch,
            ConsumerGroupValue::TargetMember(partitions) => {
                consumer
                    .target
                    .insert(member_id.to_string(), partitions.clone());
            }
            ConsumerGroupValue::CurrentAssignment(v) => {
                let mut m = member();
                m.set_assignment(v);
                consumer.put_member(m);
            }
        }
    }

    /// After loading: every consumer-group member's session starts now, and
    /// a member that was revoking has its rebalance timeout again.
    pub(super) fn schedule_loaded_consumer_members(&mut self, now_ms: i64) {
        for (group_id, group) in &self.groups {
            let Some(consumer) = &group.consumer else {
                continue;
            };
            // Every member, classic ones too, gets the group's consumer
            // session timeout, as in Kafka; a classic member's own comes
            // back with its next SyncGroup or Heartbeat.
            let timeout_ms = self.core.consumer_session_timeout_ms(group_id);
            for member in consumer.members.values() {
                self.core.schedule_consumer_session_in(
                    group_id,
                    &member.member_id,
                    now_ms,
                    timeout_ms,
                );
                if member.state == MemberState::UnrevokedPartitions && member.classic.is_none() {
                    self.core
                        .schedule_consumer_revocation(group_id, member, now_ms);
                }
            }
        }
    }

    /// A consumer-group timer fired: the member's session expired, or it
    /// did not revoke partitions within its rebalance timeout.
    pub(super) fn expire_consumer_member(
        &mut self,
        now_ms: i64,
        group_id: &str,
        member_id: &str,
        revoking_epoch: Option<i32>,
        out: &mut Effects,
    ) {
        let Some(group) = self.groups.get(group_id) else {
            return;
        };
        let Some(member) = group
            .consumer
            .as_ref()
            .and_then(|c| c.members.get(member_id))
        else {
            return;
        };
        if let Some(epoch) = revoking_epoch {
            if member.member_epoch != epoch || member.state != MemberState::UnrevokedPartitions {
                return;
            }
            tracing::info!(
                group_id,
                member_id,
                "member did not revoke its partitions within the rebalance timeout; removing it"
            );
        } else {
            tracing::info!(
                group_id,
                member_id,
                "consumer group member session expired; removing it"
            );
        }
        self.fence_consumer_member(now_ms, group_id, member_id, None, out);
    }

    /// ConsumerGroupDescribe for groups of this coordinator.
    pub fn consumer_group_describe(
        &self,
        group_ids: &[String],
        topics: &dyn TopicsView,
    ) -> Vec<DescribedConsumerGroup> {
        group_ids
            .iter()
            .map(|group_id| {
                let not_found = |message: String| DescribedConsumerGroup {
                    error: Some(ErrorCode::GroupIdNotFound),
                    error_message: Some(message),
                    group_id: group_id.clone(),
                    group_state: String::new(),
                    group_epoch: 0,
                    assignment_epoch: 0,
                    assignor_name: String::new(),
                    members: Vec::new(),
                };
                if group_id.is_empty() {
                    return DescribedConsumerGroup {
                        error: Some(ErrorCode::InvalidGroupId),
                        error_message: None,
                        ..not_found(String::new())
                    };
                }
                let group = match self.groups.get(group_id) {
                    Some(group) if !group.deleting => group,
                    _ => return not_found(format!("Group {group_id} not found.")),
                };
                let Some(consumer) = &group.consumer else {
                    return not_found(format!("Group {group_id} is not a consumer group."));
                };
                let empty = Assignment::new();
                DescribedConsumerGroup {
                    error: None,
                    error_message: None,
                    group_id: group_id.clone(),
                    group_state: consumer.state_name().to_string(),
                    group_epoch: consumer.group_epoch,
                    assignment_epoch: consumer.target_epoch,
                    assignor_name: consumer
                        .preferred_assignor(&self.core.config.consumer_assignors),
                    members: consumer
                        .members
                        .values()
                        .map(|m| DescribedConsumerMember {
                            member_id: m.member_id.clone(),
                            instance_id: m.instance_id.clone(),
                            rack_id: m.rack_id.clone(),
                            member_epoch: m.member_epoch,
                            client_id: m.client_id.clone(),
                            client_host: m.client_host.clone(),
                            subscribed_topic_names: m.subscribed_topic_names.clone(),
                            subscribed_topic_regex: m.subscribed_topic_regex.clone(),
                            assignment: describe_assignment(&m.assigned, topics),
                            target_assignment: describe_assignment(
                                consumer.target.get(&m.member_id).unwrap_or(&empty),
                                topics,
                            ),
                            classic: m.classic.is_some(),
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

fn leave_response(member_id: &str, member_epoch: i32) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse {
        error: None,
        error_message: None,
        member_id: Some(member_id.to_string()),
        member_epoch,
        heartbeat_interval_ms: 0,
        assignment: None,
    }
}

pub(super) fn record(
    record_type: i16,
    group_id: &str,
    member_id: Option<&str>,
    value: Option<ConsumerGroupValue>,
) -> CoordinatorRecord {
    CoordinatorRecord::ConsumerGroup {
        key: ConsumerGroupKey {
            record_type,
            group: group_id.to_string(),
            member_id: member_id.map(str::to_string),
        },
        value,
    }
}

pub(super) fn epoch_record(group_id: &str, consumer: &ConsumerGroup) -> CoordinatorRecord {
    record(
        CONSUMER_GROUP_METADATA_KEY_TYPE,
        group_id,
        None,
        Some(ConsumerGroupValue::Metadata {
            epoch: consumer.group_epoch,
            metadata_hash: consumer.metadata_hash,
        }),
    )
}

pub(super) fn target_record(
    group_id: &str,
    member_id: &str,
    target: &Assignment,
) -> CoordinatorRecord {
    record(
        CONSUMER_GROUP_TARGET_MEMBER_KEY_TYPE,
        group_id,
        Some(member_id),
        Some(ConsumerGroupValue::TargetMember(target.clone())),
    )
}

/// The group and member of a current assignment record (not a
/// tombstone).
pub(super) fn assignment_member(record: &CoordinatorRecord) -> Option<(&str, &str)> {
    match record {
        CoordinatorRecord::ConsumerGroup {
            key,
            value: Some(_),
        } if key.record_type == CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE => {
            Some((&key.group, key.member_id.as_deref()?))
        }
        _ => None,
    }
}

/// Whether `record` is the current assignment record of `member_id`.
fn is_assignment_of(record: &CoordinatorRecord, member_id: &str) -> bool {
    assignment_member(record).is_some_and(|(_, member)| member == member_id)
}

pub(super) fn assignment_record(group_id: &str, member: &ConsumerMember) -> CoordinatorRecord {
    record(
        CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE,
        group_id,
        Some(&member.member_id),
        Some(ConsumerGroupValue::CurrentAssignment(
            member.assignment_value(),
        )),
    )
}

/// A removed member's tombstones, in Kafka's order: current assignment,
/// target assignment, metadata.
pub(super) fn member_tombstones(
    group_id: &str,
    member_id: &str,
    records: &mut Vec<CoordinatorRecord>,
) {
    for record_type in [
        CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE,
        CONSUMER_GROUP_TARGET_MEMBER_KEY_TYPE,
        CONSUMER_GROUP_MEMBER_KEY_TYPE,
    ] {
        records.push(record(record_type, group_id, Some(member_id), None));
    }
}

/// The tombstones that end an empty consumer group: its target epoch, then
/// its metadata.
pub(super) fn group_tombstones(group_id: &str) -> [CoordinatorRecord; 2] {
    [
        record(CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE, group_id, None, None),
        record(CONSUMER_GROUP_METADATA_KEY_TYPE, group_id, None, None),
    ]
}

#[cfg(test)]
pub(super) mod tests_support {
    use super::*;

    pub const G: &str = "g";

    pub fn topics(partitions: i32) -> TopicsSnapshot {
        TopicsSnapshot(
            [(
                "t".to_string(),
                (uuid::Uuid::from_bytes([1; 16]), partitions),
            )]
            .into(),
            1,
        )
    }

    pub fn join(member_id: &str) -> ConsumerGroupHeartbeatRequest {
        ConsumerGroupHeartbeatRequest {
            group_id: G.into(),
            member_id: member_id.into(),
            member_epoch: 0,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: 300_000,
            subscribed_topic_names: Some(vec!["t".into()]),
            subscribed_topic_regex: None,
            compiled_regex: None,
            server_assignor: None,
            topic_partitions: Some(Assignment::new()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            api_version: 1,
        }
    }

    pub fn beat(member_id: &str, epoch: i32, owned: &Assignment) -> ConsumerGroupHeartbeatRequest {
        ConsumerGroupHeartbeatRequest {
            member_epoch: epoch,
            rebalance_timeout_ms: -1,
            subscribed_topic_names: None,
            topic_partitions: Some(owned.clone()),
            ..join(member_id)
        }
    }

    pub fn coordinator() -> GroupCoordinator {
        GroupCoordinator::new(GroupConfig::default(), 1, 0)
    }

    pub fn count(a: &Option<Assignment>) -> usize {
        a.as_ref()
            .map_or(0, |a| a.values().map(BTreeSet::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;

    #[test]
    fn only_the_configured_assignors_are_offered_and_the_first_is_the_default() {
        let mut c = GroupCoordinator::new(
            GroupConfig {
                consumer_assignors: vec!["range"],
                ..GroupConfig::default()
            },
            1,
            0,
        );
        let t = topics(2);
        let uniform = ConsumerGroupHeartbeatRequest {
            server_assignor: Some("uniform".into()),
            ..join("m")
        };
        let (response, _) = c.consumer_group_heartbeat(0, uniform, &t);
        assert_eq!(response.error, Some(ErrorCode::UnsupportedAssignor));
        assert_eq!(
            response.error_message.as_deref(),
            Some("ServerAssignor uniform is not supported. Supported assignors: range.")
        );
        let (response, _) = c.consumer_group_heartbeat(0, join("m"), &t);
        assert_eq!(response.error, None);
        let described = c.consumer_group_describe(&[G.into()], &t);
        assert_eq!(described[0].assignor_name, "range");

        // Configured the other way round: the first is the default, but
        // Kafka lists them, and breaks ties, uniform first.
        let mut c = GroupCoordinator::new(
            GroupConfig {
                consumer_assignors: vec!["range", "uniform"],
                ..GroupConfig::default()
            },
            1,
            0,
        );
        let sticky = ConsumerGroupHeartbeatRequest {
            server_assignor: Some("sticky".into()),
            ..join("m")
        };
        let (response, _) = c.consumer_group_heartbeat(0, sticky, &t);
        assert_eq!(
            response.error_message.as_deref(),
            Some("ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
        );
        c.consumer_group_heartbeat(0, join("m"), &t);
        let assignor = |c: &GroupCoordinator| {
            c.consumer_group_describe(&[G.into()], &t)[0]
                .assignor_name
                .clone()
        };
        assert_eq!(assignor(&c), "range");
        for (member, name) in [("u", "uniform"), ("r", "range")] {
            let request = ConsumerGroupHeartbeatRequest {
                server_assignor: Some(name.into()),
                ..join(member)
            };
            assert_eq!(c.consumer_group_heartbeat(0, request, &t).0.error, None);
        }
        assert_eq!(assignor(&c), "uniform");
    }

    #[test]
    fn invalid_requests_get_kafkas_errors_and_messages() {
        let mut c = coordinator();
        let t = topics(2);
        let cases = [
            (ConsumerGroupHeartbeatRequest { member_id: " ".into(), ..join("") }, ErrorCode::InvalidRequest, "MemberId can't be empty."),
            (ConsumerGroupHeartbeatRequest { group_id: "".into(), ..join("m") }, ErrorCode::InvalidRequest, "GroupId can't be empty."),
            (ConsumerGroupHeartbeatRequest { rebalance_timeout_ms: -1, ..join("m") }, ErrorCode::InvalidRequest, "RebalanceTimeoutMs must be provided in first request."),
            (ConsumerGroupHeartbeatRequest { topic_partitions: None, ..join("m") }, ErrorCode::InvalidRequest, "TopicPartitions must be empty when (re-)joining."),
            (ConsumerGroupHeartbeatRequest { subscribed_topic_names: None, ..join("m") }, ErrorCode::InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
            (ConsumerGroupHeartbeatRequest { member_epoch: -2, ..join("m") }, ErrorCode::InvalidRequest, "InstanceId can't be null."),
            (ConsumerGroupHeartbeatRequest { member_epoch: -3, ..join("m") }, ErrorCode::InvalidRequest, "MemberEpoch is invalid."),
            (ConsumerGroupHeartbeatRequest { server_assignor: Some("sticky".into()), ..join("m") }, ErrorCode::UnsupportedAssignor, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
            (ConsumerGroupHeartbeatRequest { subscribed_topic_regex: Some("[".into()), ..join("m") }, ErrorCode::InvalidRegularExpression, "SubscribedTopicRegex `[` is not a valid regular expression"),
            // The handler's compiled answer decides (here a refusal it
            // could not have given, so it must be the one read).
            (ConsumerGroupHeartbeatRequest { subscribed_topic_regex: Some("ok.*".into()), compiled_regex: Some(CompiledRegex { source: "ok.*".into(), compiled: Err("told".into()) }), ..join("m") }, ErrorCode::InvalidRegularExpression, "SubscribedTopicRegex `ok.*` is not a valid regular expression: told."),
            (beat("m", 3, &Assignment::new()), ErrorCode::GroupIdNotFound, "Consumer group g not found."),
        ];
        for (request, error, message) in cases {
            let (response, _) = c.consumer_group_heartbeat(0, request, &t);
            assert_eq!(response.error, Some(error), "{message}");
            let got = response.error_message.unwrap_or_default();
            assert!(got.starts_with(message), "{got} / {message}");
            assert_eq!(
                (
                    response.member_id,
                    response.member_epoch,
                    response.assignment
                ),
                (None, 0, None)
            );
        }
        // v0 lets the coordinator name a joining member.
        let (response, effects) = c.consumer_group_heartbeat(
            0,
            ConsumerGroupHeartbeatRequest {
                api_version: 0,
                ..join("")
            },
            &t,
        );
        assert_eq!(response.error, None);
        assert!(!response.member_id.unwrap().is_empty());
        assert_eq!((response.member_epoch, count(&response.assignment)), (1, 2));
        assert_eq!(effects.appends.len(), 1, "the group epoch is written");
    }

    #[test]
    fn epochs_fence_stale_members_and_commits_check_them() {
        let mut c = coordinator();
        let t = topics(2);
        let (a, _) = c.consumer_group_heartbeat(0, join("a"), &t);
        let owned = a.assignment.clone().unwrap();
        assert_eq!(
            (
                a.member_epoch,
                owned.values().map(BTreeSet::len).sum::<usize>()
            ),
            (1, 2)
        );
        let (ahead, _) = c.consumer_group_heartbeat(0, beat("a", 5, &owned), &t);
        assert_eq!(ahead.error, Some(ErrorCode::FencedMemberEpoch));
        let (unknown, _) = c.consumer_group_heartbeat(0, beat("x", 1, &owned), &t);
        assert_eq!(unknown.error, Some(ErrorCode::UnknownMemberId));
        assert_eq!(
            unknown.error_message.as_deref(),
            Some("Member x is not a member of group g.")
        );
        // A plain heartbeat at the current epoch changes nothing.
        let (same, _) = c.consumer_group_heartbeat(0, beat("a", 1, &owned), &t);
        assert_eq!(
            (same.error, same.member_epoch, same.assignment),
            (None, 1, None)
        );

        // b joins: a must revoke one partition first and stays at epoch 1.
        let (b, _) = c.consumer_group_heartbeat(0, join("b"), &t);
        assert_eq!((b.member_epoch, count(&b.assignment)), (2, 0));
        let (a2, _) = c.consumer_group_heartbeat(0, beat("a", 1, &owned), &t);
        assert_eq!((a2.member_epoch, count(&a2.assignment)), (1, 1));
        let kept = a2.assignment.unwrap();
        // Offsets: the member's epoch must match; v8 is too old for it.
        let commit = |c: &GroupCoordinator, member: &str, epoch: i32, version: i16| {
            c.groups[G].validate_offset_commit(member, None, epoch, version)
        };
        assert_eq!(commit(&c, "a", 1, 9), Ok(()));
        assert_eq!(commit(&c, "a", 2, 9), Err(ErrorCode::StaleMemberEpoch));
        assert_eq!(commit(&c, "a", 1, 8), Err(ErrorCode::UnsupportedVersion));
        assert_eq!(commit(&c, "", -1, 9), Err(ErrorCode::UnknownMemberId));
        // Having revoked, a moves to epoch 2; b gets the freed partition.
        let (a3, _) = c.consumer_group_heartbeat(0, beat("a", 1, &kept), &t);
        assert_eq!((a3.member_epoch, a3.assignment), (2, None));
        let (b2, _) = c.consumer_group_heartbeat(0, beat("b", 2, &Assignment::new()), &t);
        assert_eq!((b2.member_epoch, count(&b2.assignment)), (2, 1));
        let described = c.consumer_group_describe(&[G.into(), "none".into()], &t);
        assert_eq!(
            (described[0].group_state.as_str(), described[0].group_epoch),
            ("Stable", 2)
        );
        assert_eq!(described[0].members[0].assignment[0].topic_name, "t");
        assert_eq!(
            described[1].error_message.as_deref(),
            Some("Group none not found.")
        );
        // Leaving bumps the epoch; the group is Assigning until a heartbeat.
        let (left, _) = c.consumer_group_heartbeat(0, beat("b", -1, &Assignment::new()), &t);
        assert_eq!(
            (left.member_id.as_deref(), left.member_epoch),
            (Some("b"), -1)
        );
        assert_eq!(
            c.consumer_group_describe(&[G.into()], &t)[0].group_state,
            "Assigning"
        );
        let (a4, _) = c.consumer_group_heartbeat(0, beat("a", 2, &kept), &t);
        assert_eq!((a4.member_epoch, count(&a4.assignment)), (3, 2));
    }

    #[test]
    fn static_members_keep_their_partitions_across_a_temporary_leave() {
        let mut c = coordinator();
        let t = topics(3);
        let static_join = |id: &str| ConsumerGroupHeartbeatRequest {
            instance_id: Some("i".into()),
            ..join(id)
        };
        let (first, _) = c.consumer_group_heartbeat(0, static_join("m1"), &t);
        assert_eq!((first.member_epoch, count(&first.assignment)), (1, 3));
        let (taken, _) = c.consumer_group_heartbeat(0, static_join("m2"), &t);
        assert_eq!(taken.error, Some(ErrorCode::UnreleasedInstanceId));
        let left = ConsumerGroupHeartbeatRequest {
            instance_id: Some("i".into()),
            ..beat("m1", -2, &Assignment::new())
        };
        let (left, _) = c.consumer_group_heartbeat(0, left, &t);
        assert_eq!(left.member_epoch, -2);
        // The new instance takes over at once, without a new group epoch.
        let (back, effects) = c.consumer_group_heartbeat(0, static_join("m2"), &t);
        assert_eq!((back.member_epoch, count(&back.assignment)), (1, 3));
        let epoch_written = effects.appends.iter().flat_map(|a| &a.records).any(|r| {
            matches!(r, CoordinatorRecord::ConsumerGroup { key, .. } if key.record_type == CONSUMER_GROUP_METADATA_KEY_TYPE)
        });
        assert!(!epoch_written);
        let (old, _) = c.consumer_group_heartbeat(
            0,
            ConsumerGroupHeartbeatRequest {
                instance_id: Some("i".into()),
                ..beat("m1", 1, &Assignment::new())
            },
            &t,
        );
        assert_eq!(old.error, Some(ErrorCode::FencedInstanceId));
    }

    #[test]
    fn sessions_expire_and_classic_groups_are_told_apart() {
        let mut c = coordinator();
        let t = topics(2);
        c.consumer_group_heartbeat(0, join("a"), &t);
        assert!(c.is_consumer_group(G));
        // DescribeGroups (classic) does not describe it; v6 says why.
        let described = c.describe_groups(&[G.into()], 6);
        assert_eq!(
            (described[0].error, described[0].not_classic),
            (Some(ErrorCode::GroupIdNotFound), true)
        );
        let listed = c.list_groups(&ListGroupsRequest {
            states_filter: vec![],
            types_filter: vec!["Consumer".into()],
        });
        assert_eq!(listed.groups[0].group_state, "Stable");
        assert_eq!(
            c.delete_groups(0, RequestId(1), &[G.into()])
                .reply
                .ready()
                .unwrap()
                .results[0]
                .1,
            Some(ErrorCode::NonEmptyGroup)
        );
        // No heartbeat for the session timeout: the member is removed.
        let effects = c.on_tick(45_000);
        assert_eq!(effects.appends.len(), 1);
        let described = c.consumer_group_describe(&[G.into()], &t);
        assert_eq!(
            (
                described[0].group_state.as_str(),
                described[0].members.len()
            ),
            ("Empty", 0)
        );
        // An empty consumer group becomes a classic group on a classic join.
        let outcome = c.join_group(
            45_000,
            RequestId(2),
            JoinGroupRequest {
                group_id: G.into(),
                session_timeout_ms: 10_000,
                rebalance_timeout_ms: 10_000,
                member_id: String::new(),
                group_instance_id: None,
                protocol_type: "consumer".into(),
                protocols: vec![JoinProtocol {
                    name: "range".into(),
                    metadata: Bytes::new(),
                }],
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                api_version: 9,
            },
            &NO_TOPICS,
        );
        assert_eq!(
            outcome.reply.ready().unwrap().error,
            Some(ErrorCode::MemberIdRequired)
        );
        assert!(!c.is_consumer_group(G));
        let (refused, _) = c.consumer_group_heartbeat(45_000, beat("a", 1, &Assignment::new()), &t);
        assert_eq!(
            refused.error_message.as_deref(),
            Some("Group g is not a consumer group.")
        );
    }
}

#[cfg(test)]
mod reload_tests {
    use super::tests_support::*;
    use super::*;

    /// What the heartbeats wrote, replayed into a fresh coordinator, gives
    /// the same group: members keep their epochs and partitions, so their
    /// next heartbeat carries on without a new group epoch.
    #[test]
    fn a_reloaded_group_keeps_its_members_epochs_and_partitions() {
        let mut c = coordinator();
        let t = topics(4);
        let mut written = Vec::new();
        let mut run = |c: &mut GroupCoordinator, r| {
            let (response, effects) = c.consumer_group_heartbeat(0, r, &t);
            for append in effects.appends {
                written.extend(append.records);
            }
            response
        };
        let a = run(&mut c, join("a"));
        let owned_a = a.assignment.clone().unwrap();
        let b = run(&mut c, join("b"));
        assert_eq!(b.member_epoch, 2);
        let a2 = run(&mut c, beat("a", 1, &owned_a));
        let kept = a2.assignment.clone().unwrap();
        run(&mut c, beat("a", 1, &kept));
        let b2 = run(&mut c, beat("b", 2, &Assignment::new()));
        assert_eq!(count(&b2.assignment), 2);
        let before = c.consumer_group_describe(&[G.into()], &t);

        let mut reloaded = coordinator();
        for r in &written {
            let (key, value) = (r.key_bytes(), r.value_bytes());
            reloaded
                .replay_bytes(0, &key, value.as_deref())
                .expect("replays");
        }
        reloaded.loaded(0);
        assert_eq!(reloaded.consumer_group_describe(&[G.into()], &t), before);
        let (again, effects) =
            reloaded.consumer_group_heartbeat(1, beat("b", 2, &b2.assignment.clone().unwrap()), &t);
        assert_eq!(
            (again.error, again.member_epoch, again.assignment),
            (None, 2, None)
        );
        assert!(
            effects.appends.is_empty(),
            "nothing changed: {:?}",
            effects.appends
        );
        // Sessions restarted at load: expiring them empties the group.
        reloaded.on_tick(45_001);
        assert_eq!(
            reloaded.consumer_group_describe(&[G.into()], &t)[0].group_state,
            "Empty"
        );
    }
}

#[cfg(test)]
mod review_tests {
    use super::tests_support::*;
    use super::*;

    /// A member that changes its instance id frees the old one: joining
    /// with it later is a new member, never a lookup of a removed one.
    #[test]
    fn an_instance_id_given_up_is_free_again() {
        let mut c = coordinator();
        let t = topics(2);
        let with = |id: &str, instance: &str| ConsumerGroupHeartbeatRequest {
            instance_id: Some(instance.into()),
            ..join(id)
        };
        c.consumer_group_heartbeat(0, with("a", "i1"), &t);
        let (again, _) = c.consumer_group_heartbeat(0, with("a", "i2"), &t);
        assert_eq!(again.error, None);
        let leave = ConsumerGroupHeartbeatRequest {
            instance_id: Some("i2".into()),
            ..beat("a", -1, &Assignment::new())
        };
        assert_eq!(c.consumer_group_heartbeat(0, leave, &t).0.error, None);
        let (fresh, _) = c.consumer_group_heartbeat(0, with("b", "i1"), &t);
        assert_eq!((fresh.error, count(&fresh.assignment)), (None, 2));
    }

    /// The Admin's removeMembersFromConsumerGroup (LeaveGroup) removes
    /// consumer-group members by id or instance id.
    #[test]
    fn leave_group_removes_consumer_group_members() {
        let mut c = coordinator();
        let t = topics(2);
        c.consumer_group_heartbeat(0, join("a"), &t);
        let static_b = ConsumerGroupHeartbeatRequest {
            instance_id: Some("ib".into()),
            ..join("b")
        };
        c.consumer_group_heartbeat(0, static_b, &t);
        let outcome = c.leave_group(
            0,
            LeaveGroupRequest {
                group_id: G.into(),
                members: vec![
                    LeaveGroupMember {
                        member_id: "a".into(),
                        group_instance_id: None,
                    },
                    LeaveGroupMember {
                        member_id: String::new(),
                        group_instance_id: Some("ib".into()),
                    },
                    LeaveGroupMember {
                        member_id: "zz".into(),
                        group_instance_id: None,
                    },
                ],
            },
        );
        let response = outcome.reply.ready().expect("answered at once");
        let errors: Vec<_> = response.members.iter().map(|m| m.error).collect();
        assert_eq!(errors, vec![None, None, Some(ErrorCode::UnknownMemberId)]);
        assert_eq!(
            c.consumer_group_describe(&[G.into()], &t)[0].members.len(),
            0
        );
    }
}

/// Kafka answers a consumer group's writes once they are committed and
/// reads a plain OffsetFetch at the last committed state.
#[cfg(test)]
mod durability_tests {
    use super::tests_support::*;
    use super::*;

    /// Acknowledges every append of `effects` with `result`, in order, and
    /// returns the answers that came out.
    fn acknowledge(
        c: &mut GroupCoordinator,
        effects: Effects,
        result: Result<(), ErrorCode>,
    ) -> Vec<Completion> {
        let mut completions = Vec::new();
        for append in effects.appends {
            completions.extend(c.append_completed(0, append.id, result).completions);
        }
        completions
    }

    fn heartbeat_answer(completions: &[Completion], id: u64) -> ConsumerGroupHeartbeatResponse {
        match completions.iter().find(|c| c.request_id == RequestId(id)) {
            Some(Completion {
                response: Response::ConsumerGroupHeartbeat(r),
                ..
            }) => r.clone(),
            other => panic!("no heartbeat answer {id}: {other:?}"),
        }
    }

    fn fetch(member: &str, epoch: i32, require_stable: bool) -> OffsetFetchRequest {
        OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: G.into(),
                member: Some((member.into(), epoch)),
                topics: None,
            }],
            require_stable,
        }
    }

    fn fetch_error(outcome: &Outcome<OffsetFetchResponse>) -> Option<ErrorCode> {
        match &outcome.reply {
            Reply::Ready(r) => r.groups[0].error,
            Reply::Pending => panic!("answered later"),
        }
    }

    #[test]
    fn a_heartbeat_that_writes_is_answered_once_its_records_are_durable() {
        let mut c = coordinator();
        let t = topics(2);
        let joined = c.consumer_group_heartbeat_call(0, RequestId(1), join("a"), &t);
        assert_eq!(joined.reply, Reply::Pending);
        assert!(!joined.effects.appends.is_empty());
        let answers = acknowledge(&mut c, joined.effects, Ok(()));
        let a = heartbeat_answer(&answers, 1);
        assert_eq!(
            (a.error, a.member_epoch, count(&a.assignment)),
            (None, 1, 2)
        );
        // A heartbeat that changes nothing writes nothing: answered at once.
        let owned = a.assignment.unwrap();
        let same = c.consumer_group_heartbeat_call(0, RequestId(2), beat("a", 1, &owned), &t);
        match same.reply {
            Reply::Ready(r) => assert_eq!((r.error, r.member_epoch), (None, 1)),
            Reply::Pending => panic!("nothing to wait for"),
        }
        assert!(same.effects.appends.is_empty());
        // While another group's records are in flight, the same heartbeat
        // waits for them, as Kafka's write operation without records does.
        let other = ConsumerGroupHeartbeatRequest {
            group_id: "other".into(),
            ..join("x")
        };
        let in_flight = c.consumer_group_heartbeat_call(0, RequestId(3), other, &t);
        let waits = c.consumer_group_heartbeat_call(0, RequestId(4), beat("a", 1, &owned), &t);
        assert_eq!(waits.reply, Reply::Pending);
        assert!(waits.effects.appends.is_empty(), "it writes nothing");
        // A refusal is answered at once all the same.
        let fenced = c.consumer_group_heartbeat_call(0, RequestId(5), beat("a", 7, &owned), &t);
        assert!(
            matches!(fenced.reply, Reply::Ready(ref r) if r.error == Some(ErrorCode::FencedMemberEpoch))
        );
        let mut answers = acknowledge(&mut c, in_flight.effects, Ok(()));
        answers.extend(acknowledge(&mut c, waits.effects, Ok(())));
        let a = heartbeat_answer(&answers, 4);
        assert_eq!((a.error, a.member_epoch, a.assignment), (None, 1, None));
        assert_eq!(heartbeat_answer(&answers, 3).member_epoch, 1);
    }

    #[test]
    fn a_heartbeat_whose_write_fails_gets_the_write_error_as_kafka_maps_it() {
        let mut c = coordinator();
        let t = topics(2);
        let joined = c.consumer_group_heartbeat_call(0, RequestId(1), join("a"), &t);
        let answers = acknowledge(&mut c, joined.effects, Err(ErrorCode::KafkaStorageError));
        let a = heartbeat_answer(&answers, 1);
        assert_eq!(
            (a.error, a.member_id, a.member_epoch),
            (Some(ErrorCode::NotCoordinator), None, 0)
        );
        let joined = c.consumer_group_heartbeat_call(0, RequestId(2), join("b"), &t);
        let answers = acknowledge(&mut c, joined.effects, Err(ErrorCode::NotEnoughReplicas));
        assert_eq!(
            heartbeat_answer(&answers, 2).error,
            Some(ErrorCode::CoordinatorNotAvailable)
        );
    }

    #[test]
    fn offset_fetch_checks_the_durable_epoch_unless_it_requires_stable_offsets() {
        let mut c = coordinator();
        let t = topics(2);
        let joined = c.consumer_group_heartbeat_call(0, RequestId(1), join("a"), &t);
        // Not durable yet: Kafka's committed state has no such group, and
        // nothing is checked.
        assert_eq!(
            fetch_error(&c.offset_fetch_call(RequestId(2), &fetch("x", 9, false))),
            None
        );
        let answers = acknowledge(&mut c, joined.effects, Ok(()));
        let owned = heartbeat_answer(&answers, 1).assignment.unwrap();
        assert_eq!(
            fetch_error(&c.offset_fetch_call(RequestId(3), &fetch("a", 1, false))),
            None
        );
        // b joins; not durable yet, it is no member there.
        let b = c.consumer_group_heartbeat_call(0, RequestId(4), join("b"), &t);
        assert_eq!(
            fetch_error(&c.offset_fetch_call(RequestId(40), &fetch("b", 2, false))),
            Some(ErrorCode::UnknownMemberId)
        );
        acknowledge(&mut c, b.effects, Ok(()));
        // a's next heartbeat moves it on, its write in flight.
        let moving = c.consumer_group_heartbeat_call(0, RequestId(5), beat("a", 1, &owned), &t);
        assert_eq!(moving.reply, Reply::Pending);
        let newest = c.groups[G].consumer.as_ref().unwrap().members["a"].member_epoch;
        // A plain fetch still sees epoch 1, as Kafka's read at the last
        // committed offset does ...
        assert_eq!(
            fetch_error(&c.offset_fetch_call(RequestId(6), &fetch("a", 1, false))),
            None
        );
        assert_eq!(
            fetch_error(&c.offset_fetch_call(RequestId(7), &fetch("a", 2, false))),
            Some(ErrorCode::StaleMemberEpoch)
        );
        // ... one requiring stable offsets reads the newest state and waits
        // for the writes before it.
        let stable = c.offset_fetch_call(RequestId(8), &fetch("a", newest, true));
        assert_eq!(stable.reply, Reply::Pending);
        let answers = acknowledge(&mut c, moving.effects, Ok(()));
        let answers: Vec<_> = answers
            .into_iter()
            .chain(acknowledge(&mut c, stable.effects, Ok(())))
            .collect();
        match answers.iter().find(|a| a.request_id == RequestId(8)) {
            Some(Completion {
                response: Response::OffsetFetch(r),
                ..
            }) => assert_eq!(r.groups[0].error, None),
            other => panic!("no fetch answer: {other:?}"),
        }
        assert_eq!(heartbeat_answer(&answers, 5).member_epoch, newest);
        // Durable now.
        assert_eq!(
            fetch_error(&c.offset_fetch_call(RequestId(9), &fetch("a", newest, false))),
            None
        );
        // With nothing in flight, a stable fetch is answered at once.
        assert_eq!(
            fetch_error(&c.offset_fetch_call(RequestId(10), &fetch("a", newest, true))),
            None
        );
    }

    #[test]
    fn a_stable_offset_fetch_fails_with_the_writes_before_it() {
        let mut c = coordinator();
        let t = topics(2);
        let joined = c.consumer_group_heartbeat_call(0, RequestId(1), join("a"), &t);
        let stable = c.offset_fetch_call(RequestId(2), &fetch("a", 1, true));
        assert_eq!(stable.reply, Reply::Pending);
        let mut answers = acknowledge(&mut c, joined.effects, Err(ErrorCode::RequestTimedOut));
        answers.extend(acknowledge(
            &mut c,
            stable.effects,
            Err(ErrorCode::RequestTimedOut),
        ));
        match answers.iter().find(|a| a.request_id == RequestId(2)) {
            Some(Completion {
                response: Response::OffsetFetch(r),
                ..
            }) => assert_eq!(
                (r.groups[0].error, r.groups[0].topics.len()),
                (Some(ErrorCode::NotCoordinator), 0)
            ),
            other => panic!("no fetch answer: {other:?}"),
        }
    }

    /// Kafka rolls a member back when its write fails; here the member's
    /// assignment record is written again at its next heartbeat, so the
    /// log (and the durable epoch) catch up.
    #[test]
    fn an_assignment_whose_write_failed_is_written_again() {
        let mut c = coordinator();
        let t = topics(2);
        let a = c.consumer_group_heartbeat_call(0, RequestId(1), join("a"), &t);
        let answers = acknowledge(&mut c, a.effects, Ok(()));
        let owned = heartbeat_answer(&answers, 1).assignment.unwrap();
        let b = c.consumer_group_heartbeat_call(0, RequestId(2), join("b"), &t);
        acknowledge(&mut c, b.effects, Ok(()));
        // a is told to revoke one partition; having revoked it, it moves
        // to epoch 2, and that write fails.
        let revoking = c.consumer_group_heartbeat_call(0, RequestId(3), beat("a", 1, &owned), &t);
        let answers = acknowledge(&mut c, revoking.effects, Ok(()));
        let kept = heartbeat_answer(&answers, 3).assignment.unwrap();
        let moving = c.consumer_group_heartbeat_call(0, RequestId(30), beat("a", 1, &kept), &t);
        let answers = acknowledge(&mut c, moving.effects, Err(ErrorCode::KafkaStorageError));
        assert_eq!(
            heartbeat_answer(&answers, 30).error,
            Some(ErrorCode::NotCoordinator)
        );
        let newest = c.groups[G].consumer.as_ref().unwrap().members["a"].clone();
        assert_ne!(newest.member_epoch, 1);
        let kept = newest.assigned.clone();
        // The retry changes nothing in memory, yet writes a's assignment.
        let retry = c.consumer_group_heartbeat_call(
            0,
            RequestId(4),
            beat("a", newest.member_epoch, &kept),
            &t,
        );
        let written: Vec<_> = retry
            .effects
            .appends
            .iter()
            .flat_map(|a| a.records.iter())
            .filter(|r| is_assignment_of(r, "a"))
            .collect();
        assert_eq!(written.len(), 1, "{:?}", retry.effects.appends);
        acknowledge(&mut c, retry.effects, Ok(()));
        assert_eq!(
            fetch_error(
                &c.offset_fetch_call(RequestId(5), &fetch("a", newest.member_epoch, false))
            ),
            None
        );
        // Written once: the next heartbeat writes nothing.
        let again = c.consumer_group_heartbeat_call(
            0,
            RequestId(6),
            beat("a", newest.member_epoch, &kept),
            &t,
        );
        assert!(again.effects.appends.is_empty());
    }

    #[test]
    fn a_reloaded_group_knows_its_durable_epochs() {
        let mut c = coordinator();
        let t = topics(2);
        let joined = c.consumer_group_heartbeat_call(0, RequestId(1), join("a"), &t);
        let mut reloaded = coordinator();
        for append in &joined.effects.appends {
            for r in &append.records {
                let (key, value) = (r.key_bytes(), r.value_bytes());
                reloaded
                    .replay_bytes(0, &key, value.as_deref())
                    .expect("replays");
            }
        }
        reloaded.loaded(0);
        assert_eq!(
            fetch_error(&reloaded.offset_fetch_call(RequestId(2), &fetch("a", 1, false))),
            None
        );
    }
}
