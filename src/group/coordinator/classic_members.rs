//! Classic members in KIP-848 consumer groups, and the online upgrade of a
//! classic group into a consumer group, following Kafka 4.x
//! `GroupMetadataManager` (`classicGroupJoinToConsumerGroup`,
//! `classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup`,
//! `convertToConsumerGroup`) with its default
//! `group.consumer.migration.policy=bidirectional` for upgrades.
//!
//! This is how a running group moves to the new protocol one consumer at a
//! time: the first member that sends ConsumerGroupHeartbeat to a classic
//! group of consumers turns it into a consumer group whose members keep
//! their generation (as member epoch) and their partitions; the classic
//! members that remain go on with JoinGroup, SyncGroup and Heartbeat:
//! - JoinGroup is answered with the member's assignment as reconciled (no
//!   leader, no waiting for the others) once the group's appends are
//!   durable;
//! - SyncGroup returns that assignment in the consumer protocol;
//! - Heartbeat answers REBALANCE_IN_PROGRESS when the member must rejoin
//!   (the group epoch moved on, it must revoke partitions, or partitions
//!   it waits for are free);
//! - a member that does not rejoin, or sync after joining, within its
//!   rebalance timeout, or whose session times out, is removed.
//!
//! A classic member joins a consumer group with members the same way.
//!
//! When the last consumer-protocol member leaves (or is removed) and
//! classic members remain, the group becomes a classic group again and
//! rebalances (Kafka's online downgrade), so a rollback of the clients
//! ends where it started.
//!
//! A classic member that takes over the instance id of the last
//! consumer-protocol static member turns the group classic too (a
//! rebalance follows only if its subscription differs).
//!
//! JoinGroup is answered once its records, and the appends before them,
//! are durable; SyncGroup and Heartbeat, which write nothing, at once
//! (Kafka waits for the appends in flight for those too).

use super::consumer_groups::{
    assignment_record, classic_join_key, classic_sync_key, epoch_record, group_tombstones,
    member_tombstones, record, target_record, update_member,
};
use super::*;
use crate::group::assignor::Assignment;
use crate::group::consumer::{ConsumerGroup, ConsumerMember, MemberState, TopicsView};
use crate::group::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, version_of, CONSUMER_PROTOCOL_TYPE,
};
use crate::group::records::{
    ClassicMemberValue, ConsumerGroupValue, CONSUMER_GROUP_MEMBER_KEY_TYPE,
    CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE,
};

/// Partitions named by topic (a consumer-protocol subscription or
/// assignment) by topic id; topics the broker does not know are left out,
/// as Kafka's `toTopicPartitions` does.
fn to_assignment<'a>(
    partitions: impl Iterator<Item = (&'a str, &'a [i32])>,
    topics: &dyn TopicsView,
) -> Assignment {
    let mut assignment = Assignment::new();
    for (topic, set) in partitions {
        if let Some((id, _)) = topics.topic(topic) {
            assignment
                .entry(id)
                .or_default()
                .extend(set.iter().copied());
        }
    }
    assignment
}

/// `assignment` (by topic id) as the `ConsumerProtocolAssignment` a classic
/// member reads, at `version`: topics by name, sorted; deleted topics left
/// out.
fn encode_member_assignment(
    assignment: &Assignment,
    topics: &dyn TopicsView,
    version: i16,
) -> Bytes {
    let mut partitions: Vec<(String, Vec<i32>)> = assignment
        .iter()
        .filter_map(|(id, set)| Some((topics.topic_name(id)?, set.iter().copied().collect())))
        .collect();
    partitions.sort();
    encode_assignment(&partitions, version)
}

/// GROUP_ID_NOT_FOUND with Kafka's message: classic group `group_id`
/// cannot become a consumer group because of `why`.
fn cannot_upgrade(group_id: &str, why: &str) -> (ErrorCode, String) {
    (
        ErrorCode::GroupIdNotFound,
        format!("Cannot upgrade classic group {group_id} to consumer group because {why}"),
    )
}

/// Kafka's `validateConsumerGroupMember`,
/// `throwIfMemberDoesNotUseClassicProtocol` and
/// `throwIfGenerationIdUnmatched`: the consumer group and the classic
/// member a SyncGroup or Heartbeat names, at that generation.
fn classic_member_at<'a>(
    groups: &'a BTreeMap<String, Group>,
    group_id: &str,
    member_id: &str,
    instance_id: Option<&str>,
    generation_id: i32,
) -> Result<(&'a ConsumerGroup, &'a ConsumerMember), ErrorCode> {
    let consumer = groups
        .get(group_id)
        .and_then(|g| g.consumer.as_deref())
        .ok_or(ErrorCode::UnknownMemberId)?;
    let member = classic_member(consumer, member_id, instance_id)?;
    if generation_id != member.member_epoch {
        return Err(ErrorCode::IllegalGeneration);
    }
    Ok((consumer, member))
}

fn classic_member<'a>(
    consumer: &'a ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<&'a ConsumerMember, ErrorCode> {
    let member = match instance_id {
        None => consumer.members.get(member_id),
        Some(instance_id) => {
            let owner = consumer
                .static_members
                .get(instance_id)
                .ok_or(ErrorCode::UnknownMemberId)?;
            if owner != member_id {
                return Err(ErrorCode::FencedInstanceId);
            }
            consumer.members.get(owner)
        }
    };
    member
        .filter(|m| m.classic.is_some())
        .ok_or(ErrorCode::UnknownMemberId)
}

impl GroupCoordinator {
    /// JoinGroup from a classic member to a consumer group with members
    /// (Kafka's `classicGroupJoinToConsumerGroup`): answered once the
    /// appends in flight are durable; a refusal at once.
    pub(super) fn classic_join_consumer_group(
        &mut self,
        now_ms: i64,
        request_id: RequestId,
        request: JoinGroupRequest,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) {
        match self.classic_join(now_ms, request, topics, out) {
            // As a write operation of Kafka's: answered once its records,
            // and the appends before them, are durable.
            Ok(response) if response.error.is_none() && !self.core.in_flight.is_empty() => {
                self.core.after_appends_in_flight(AfterAppend::ClassicJoin {
                    request_id,
                    response: Box::new(response),
                });
            }
            Ok(response) => complete_join(out, request_id, response),
            Err(error) => complete_join(out, request_id, JoinGroupResponse::error(error, "")),
        }
    }

    fn classic_join(
        &mut self,
        now_ms: i64,
        request: JoinGroupRequest,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) -> Result<JoinGroupResponse, ErrorCode> {
        let group_id = request.group_id.clone();
        let unknown = request.member_id.is_empty();
        let member_id = if unknown {
            self.core.rng.kafka_uuid()
        } else {
            request.member_id.clone()
        };
        let max_size = self.core.config.consumer_group_members_max;
        let consumer: &mut ConsumerGroup = self
            .groups
            .get_mut(&group_id)
            .and_then(|g| g.consumer.as_deref_mut())
            .expect("the caller found a consumer group");
        let refuse = Err;
        if !consumer.members.contains_key(&member_id) && consumer.members.len() >= max_size {
            return refuse(ErrorCode::GroupMaxSizeReached);
        }
        let names: Vec<&str> = request.protocols.iter().map(|p| p.name.as_str()).collect();
        if !consumer.supports_classic_protocols(&request.protocol_type, &names) {
            return refuse(ErrorCode::InconsistentGroupProtocol);
        }
        if unknown && request.group_instance_id.is_none() && request.api_version >= 4 {
            // KIP-394: a dynamic member first learns its id.
            return Ok(JoinGroupResponse::error(
                ErrorCode::MemberIdRequired,
                &member_id,
            ));
        }
        // The member as it was (a fresh one for a new member), and which
        // static member it replaces.
        let mut replaced = None;
        let member = match &request.group_instance_id {
            Some(instance_id) if !unknown => match consumer.static_members.get(instance_id) {
                None => return refuse(ErrorCode::UnknownMemberId),
                Some(owner) if *owner != member_id => return refuse(ErrorCode::FencedInstanceId),
                Some(owner) => consumer.members[owner].clone(),
            },
            Some(instance_id) => match consumer.static_members.get(instance_id) {
                None => ConsumerMember::new(&member_id),
                Some(old_id) => {
                    // The new id takes over the old one's partitions.
                    let mut taken_over = consumer.members[old_id].clone();
                    taken_over.member_id.clone_from(&member_id);
                    taken_over.member_epoch = 0;
                    taken_over.previous_member_epoch = 0;
                    replaced = Some(old_id.clone());
                    taken_over
                }
            },
            None => consumer
                .members
                .get(&member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerMember::new(&member_id)),
        };
        let Some(subscription) = decode_subscription(&request.protocols[0].metadata) else {
            // Kafka fails the request (an IllegalStateException).
            tracing::warn!(
                group_id,
                member_id,
                "malformed consumer protocol subscription"
            );
            return refuse(ErrorCode::UnknownServerError);
        };
        let is_new = !consumer.members.contains_key(&member_id) && replaced.is_none();
        // Taking over the last consumer-protocol member's instance id
        // leaves only classic members: the group turns classic.
        let downgrade = replaced.as_ref().is_some_and(|old_id| {
            consumer.members[old_id].classic.is_none()
                && consumer
                    .members
                    .values()
                    .all(|m| m.member_id == *old_id || m.classic.is_some())
        });
        let mut updated = member.clone();
        if let Some(instance_id) = &request.group_instance_id {
            updated.instance_id = Some(instance_id.clone());
        }
        if let Some(rack_id) = &subscription.rack_id {
            updated.rack_id = Some(rack_id.to_string());
        }
        if request.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        let mut subscribed: Vec<String> =
            subscription.topics.iter().map(|t| t.to_string()).collect();
        subscribed.sort();
        subscribed.dedup();
        updated.subscribed_topic_names = subscribed;
        updated.client_id.clone_from(&request.client_id);
        updated.client_host.clone_from(&request.client_host);
        updated.classic = Some(ClassicMemberValue {
            session_timeout_ms: request.session_timeout_ms,
            supported_protocols: request.protocols.clone(),
        });
        let owned = to_assignment(
            subscription
                .owned_partitions
                .iter()
                .map(|tp| (tp.topic.as_str(), tp.partitions.as_slice())),
            topics,
        );

        let mut records = Vec::new();
        let reconciled = update_member(
            &mut self.core,
            &group_id,
            consumer,
            (&member, updated),
            is_new,
            replaced.as_deref(),
            Some(&owned),
            topics,
            now_ms,
            &mut records,
        );
        if !records.is_empty() {
            self.core.append(records, AfterAppend::Nothing, out);
        }
        let subscription_changed =
            reconciled.subscribed_topic_names != member.subscribed_topic_names;
        // Kafka answers as to a member of the consumer group, even when
        // the group has just turned classic.
        let response = JoinGroupResponse {
            error: None,
            generation_id: reconciled.member_epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(request.protocols[0].name.clone()),
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.clone(),
            members: Vec::new(),
        };
        if downgrade
            && self.downgrade_to_classic(now_ms, &group_id, &[], subscription_changed, topics, out)
        {
            return Ok(response);
        }
        let core = &mut self.core;
        core.timers.cancel(&classic_join_key(&group_id, &member_id));
        core.schedule_consumer_session(&group_id, &reconciled, now_ms);
        core.timers.schedule(
            classic_sync_key(&group_id, &member_id),
            now_ms.saturating_add(i64::from(reconciled.rebalance_timeout_ms.max(0))),
            TimerAction::ExpireConsumerSession,
        );
        Ok(response)
    }

    /// SyncGroup from a classic member of a consumer group (Kafka's
    /// `classicGroupSyncToConsumerGroup`): its assignment, in the consumer
    /// protocol's version of its subscription.
    pub(super) fn classic_sync_consumer_group(
        &mut self,
        now_ms: i64,
        request: &SyncGroupRequest,
        topics: &dyn TopicsView,
    ) -> SyncGroupResponse {
        self.classic_sync(now_ms, request, topics)
            .unwrap_or_else(SyncGroupResponse::error)
    }

    fn classic_sync(
        &mut self,
        now_ms: i64,
        request: &SyncGroupRequest,
        topics: &dyn TopicsView,
    ) -> Result<SyncGroupResponse, ErrorCode> {
        let group_id = &request.group_id;
        let (consumer, member) = classic_member_at(
            &self.groups,
            group_id,
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id,
        )?;
        // A member replayed from a record naming no protocol supports none.
        let Some(protocol) = member.classic_protocol() else {
            return Err(ErrorCode::InconsistentGroupProtocol);
        };
        if request
            .protocol_type
            .as_deref()
            .is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || request
                .protocol_name
                .as_ref()
                .is_some_and(|n| *n != protocol.name)
        {
            return Err(ErrorCode::InconsistentGroupProtocol);
        }
        if consumer.group_epoch > member.member_epoch
            && member.state != MemberState::UnrevokedPartitions
        {
            // A rebalance started since its JoinGroup: rejoin first.
            self.core
                .schedule_classic_join_if_absent(group_id, member, now_ms);
            return Err(ErrorCode::RebalanceInProgress);
        }
        let assignment =
            encode_member_assignment(&member.assigned, topics, version_of(&protocol.metadata));
        self.core
            .timers
            .cancel(&classic_sync_key(group_id, &member.member_id));
        self.core
            .schedule_consumer_session(group_id, member, now_ms);
        Ok(SyncGroupResponse {
            error: None,
            protocol_type: request.protocol_type.clone(),
            protocol_name: request.protocol_name.clone(),
            assignment,
        })
    }

    /// Heartbeat from a classic member of a consumer group (Kafka's
    /// `classicGroupHeartbeatToConsumerGroup`): REBALANCE_IN_PROGRESS when
    /// it must rejoin to catch up, revoke, or collect freed partitions.
    pub(super) fn classic_heartbeat_consumer_group(
        &mut self,
        now_ms: i64,
        request: &HeartbeatRequest,
    ) -> Result<(), ErrorCode> {
        let group_id = &request.group_id;
        let (consumer, member) = classic_member_at(
            &self.groups,
            group_id,
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id,
        )?;
        self.core
            .schedule_consumer_session(group_id, member, now_ms);
        let rejoin = member.member_epoch < consumer.group_epoch
            || member.state == MemberState::UnrevokedPartitions
            || (member.state == MemberState::UnreleasedPartitions
                && !consumer.waiting_on_unreleased(member));
        if rejoin {
            self.core
                .schedule_classic_join_if_absent(group_id, member, now_ms);
            return Err(ErrorCode::RebalanceInProgress);
        }
        Ok(())
    }

    /// Kafka's online upgrade (`validateOnlineUpgrade`,
    /// `convertToConsumerGroup`): a consumer-protocol member joins a classic
    /// group of consumers with members. The classic members become members
    /// of a consumer group at their generation, keeping their partitions
    /// (the classic assignment is also the target), and go on as classic
    /// members; parked JoinGroup and SyncGroup requests are answered
    /// REBALANCE_IN_PROGRESS so that they rejoin.
    pub(super) fn upgrade_classic_group(
        &mut self,
        group_id: &str,
        now_ms: i64,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) -> Result<(), (ErrorCode, String)> {
        let group = self.groups.get_mut(group_id).expect("the caller found it");
        let cannot = |why: &str| Err(cannot_upgrade(group_id, why));
        let generation = group.generation_id;
        let mut consumer = ConsumerGroup::default();
        consumer.group_epoch = generation;
        consumer.target_epoch = generation;
        for member in group.members.values() {
            let protocol = group
                .protocol_name
                .clone()
                .or_else(|| member.protocols.first().map(|p| p.name.clone()))
                .unwrap_or_default();
            let subscription = decode_subscription(&member.metadata(&protocol));
            let assignment = decode_assignment(&member.assignment);
            let (Some(subscription), Some(assignment)) = (subscription, assignment) else {
                return cannot("the embedded consumer protocol is malformed.");
            };
            if assignment.user_data.as_ref().is_some_and(|d| !d.is_empty()) {
                return cannot("an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.");
            }
            let mut converted = ConsumerMember::new(&member.member_id);
            converted.member_epoch = generation;
            converted.previous_member_epoch = generation;
            converted.instance_id.clone_from(&member.group_instance_id);
            converted.rack_id = subscription.rack_id.as_ref().map(|r| r.to_string());
            converted.rebalance_timeout_ms = member.rebalance_timeout_ms;
            converted.client_id.clone_from(&member.client_id);
            converted.client_host.clone_from(&member.client_host);
            let mut subscribed: Vec<String> =
                subscription.topics.iter().map(|t| t.to_string()).collect();
            subscribed.sort();
            subscribed.dedup();
            converted.subscribed_topic_names = subscribed;
            converted.assigned = to_assignment(
                assignment
                    .assigned_partitions
                    .iter()
                    .map(|tp| (tp.topic.as_str(), tp.partitions.as_slice())),
                topics,
            );
            converted.classic = Some(ClassicMemberValue {
                session_timeout_ms: member.session_timeout_ms,
                supported_protocols: member.protocols.clone(),
            });
            consumer
                .target
                .insert(member.member_id.clone(), converted.assigned.clone());
            consumer.put_member(converted);
        }
        consumer.refresh_subscription_metadata(topics, true);
        tracing::info!(
            group_id,
            members = consumer.members.len(),
            generation,
            "converting a classic group with members to a consumer group"
        );

        // Parked requests rejoin; the classic timers stop.
        for member in group.members.values() {
            if let Some(parked) = member.awaiting_join {
                complete_join(
                    out,
                    parked,
                    JoinGroupResponse::error(ErrorCode::RebalanceInProgress, &member.member_id),
                );
            }
            if let Some(parked) = member.awaiting_sync {
                complete_sync(
                    out,
                    parked,
                    SyncGroupResponse::error(ErrorCode::RebalanceInProgress),
                );
            }
        }
        self.core.cancel_group_timers(group);
        group.clear_membership(now_ms);

        // Kafka's order: the classic group's tombstone, then
        // `createConsumerGroupRecords`.
        let mut records = vec![CoordinatorRecord::GroupMetadata {
            key: GroupMetadataKey {
                group: group_id.to_string(),
            },
            value: None,
        }];
        for member in consumer.members.values() {
            records.push(record(
                CONSUMER_GROUP_MEMBER_KEY_TYPE,
                group_id,
                Some(&member.member_id),
                Some(ConsumerGroupValue::Member(Box::new(
                    member.metadata_value(),
                ))),
            ));
        }
        records.push(epoch_record(group_id, &consumer));
        for (member_id, target) in &consumer.target {
            records.push(target_record(group_id, member_id, target));
        }
        records.push(record(
            CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE,
            group_id,
            None,
            Some(ConsumerGroupValue::TargetEpoch(consumer.target_epoch)),
        ));
        for member in consumer.members.values() {
            records.push(assignment_record(group_id, member));
            self.core
                .schedule_consumer_session(group_id, member, now_ms);
        }
        group.consumer = Some(Box::new(consumer));
        self.core.append(records, AfterAppend::Nothing, out);
        Ok(())
    }

    /// Kafka's `validateOnlineUpgrade`: whether the classic group
    /// `group_id` (of members) may become a consumer group, checked before
    /// anything else a ConsumerGroupHeartbeat join to it would refuse.
    pub(super) fn validate_online_upgrade(
        &self,
        group_id: &str,
    ) -> Result<(), (ErrorCode, String)> {
        let group = &self.groups[group_id];
        if !self.core.config.migration_policy.upgrades() {
            return Err(cannot_upgrade(group_id, "online upgrade is disabled."));
        }
        if !group.uses_consumer_protocol() {
            return Err(cannot_upgrade(
                group_id,
                "the group does not use the consumer embedded protocol.",
            ));
        }
        if group.members.len() > self.core.config.consumer_group_members_max {
            return Err(cannot_upgrade(
                group_id,
                "the group size exceeds the consumer group maximum size.",
            ));
        }
        Ok(())
    }

    /// Kafka's online downgrade (`validateOnlineDowngradeWithFencedMembers`,
    /// `validateOnlineDowngradeWithReplacedMember`, `convertToClassicGroup`):
    /// when members `leaving` go (or a classic member took over the last
    /// consumer-protocol member's instance id) and only classic members
    /// remain, the group becomes a classic group again at its group epoch
    /// as generation, each member holding its target assignment, and, with
    /// `rebalance`, rebalances at once (its members rejoin through
    /// JoinGroup). Returns whether it did.
    pub(super) fn downgrade_to_classic(
        &mut self,
        now_ms: i64,
        group_id: &str,
        leaving: &[String],
        rebalance: bool,
        topics: &dyn TopicsView,
        out: &mut Effects,
    ) -> bool {
        let classic_max = self.core.config.group_members_max;
        let Some(group) = self.groups.get_mut(group_id) else {
            return false;
        };
        let Some(consumer) = group.consumer.as_deref() else {
            return false;
        };
        let mut remaining = consumer
            .members
            .values()
            .filter(|m| !leaving.contains(&m.member_id))
            .peekable();
        if remaining.peek().is_none()
            || !self.core.config.migration_policy.downgrades()
            || consumer.members.len() - leaving.len() > classic_max
            || !remaining.all(|m| m.classic.is_some())
        {
            return false;
        }
        tracing::info!(
            group_id,
            ?leaving,
            "only classic members remain: converting the consumer group to a classic group"
        );
        let consumer = group.consumer.take().expect("checked above");
        let mut records = Vec::new();
        for member_id in consumer.members.keys() {
            member_tombstones(group_id, member_id, &mut records);
            self.core.cancel_consumer_timers(group_id, member_id);
        }
        records.extend(group_tombstones(group_id));

        group.restart_stable(consumer.group_epoch, now_ms);
        for member in consumer
            .members
            .values()
            .filter(|m| !leaving.contains(&m.member_id))
        {
            let classic = member.classic.as_ref().expect("checked above");
            group.add(
                Member {
                    member_id: member.member_id.clone(),
                    group_instance_id: member.instance_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    rebalance_timeout_ms: member.rebalance_timeout_ms,
                    session_timeout_ms: classic.session_timeout_ms,
                    protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                    protocols: classic.supported_protocols.clone(),
                    assignment: Bytes::new(),
                    awaiting_join: None,
                    awaiting_sync: None,
                    is_new: false,
                },
                None,
            );
        }
        group.protocol_name = group.select_protocol();
        group.subscribed_topics = group.compute_subscribed_topics();
        let protocol = group.protocol_name.clone().unwrap_or_default();
        let empty = Assignment::new();
        for member in group.members.values_mut() {
            let target = consumer.target.get(&member.member_id).unwrap_or(&empty);
            member.assignment =
                encode_member_assignment(target, topics, version_of(&member.metadata(&protocol)));
        }
        records.push(CoordinatorRecord::GroupMetadata {
            key: GroupMetadataKey {
                group: group_id.to_string(),
            },
            value: Some(group.to_record(None)),
        });
        self.core.append(records, AfterAppend::Nothing, out);
        let member_ids: Vec<String> = group.members.keys().cloned().collect();
        for member_id in &member_ids {
            self.core.reschedule_heartbeat(group, member_id, now_ms);
        }
        if rebalance {
            self.core.prepare_rebalance(group, now_ms, out);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::consumer_groups::tests_support::*;
    use super::*;
    use crate::group::consumer_protocol::encode_subscription;
    use crate::group::records::{GroupMetadataValue, MemberMetadata};

    fn classic_join(member_id: &str, protocols: &[&str]) -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: G.into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 60_000,
            member_id: member_id.into(),
            group_instance_id: None,
            protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
            protocols: protocols
                .iter()
                .map(|name| JoinProtocol {
                    name: name.to_string(),
                    metadata: encode_subscription(&["t"]),
                })
                .collect(),
            client_id: "classic".into(),
            client_host: "/127.0.0.1".into(),
            api_version: 9,
        }
    }

    /// A classic member's JoinGroup, answered at once or, when appends are
    /// in flight, once they are all acknowledged.
    fn classic(c: &mut GroupCoordinator, request: JoinGroupRequest) -> JoinGroupResponse {
        let outcome = c.join_group(0, RequestId(1), request, &topics(4));
        if let Reply::Ready(response) = outcome.reply {
            return response;
        }
        let mut answers = Vec::new();
        while let Some(id) = c.core.in_flight.front().map(|a| a.id) {
            answers.extend(c.append_completed(0, id, Ok(())).completions);
        }
        match answers.into_iter().find(|a| a.request_id == RequestId(1)) {
            Some(Completion {
                response: Response::JoinGroup(response),
                ..
            }) => response,
            other => panic!("JoinGroup not answered once its records were durable: {other:?}"),
        }
    }

    fn sync(c: &mut GroupCoordinator, member_id: &str, generation_id: i32) -> SyncGroupResponse {
        let request = SyncGroupRequest {
            group_id: G.into(),
            generation_id,
            member_id: member_id.into(),
            group_instance_id: None,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.into()),
            protocol_name: Some("range".into()),
            assignments: Vec::new(),
        };
        match c.sync_group(0, RequestId(2), request, &topics(4)).reply {
            Reply::Ready(response) => response,
            Reply::Pending => panic!("answered at once"),
        }
    }

    fn heartbeat(
        c: &mut GroupCoordinator,
        member_id: &str,
        generation_id: i32,
    ) -> Option<ErrorCode> {
        c.heartbeat(
            0,
            HeartbeatRequest {
                group_id: G.into(),
                generation_id,
                member_id: member_id.into(),
                group_instance_id: None,
            },
        )
        .error
    }

    /// The partitions of topic "t" in a SyncGroup assignment.
    fn assigned(response: &SyncGroupResponse) -> Vec<i32> {
        let decoded = decode_assignment(&response.assignment).expect("a consumer assignment");
        decoded
            .assigned_partitions
            .iter()
            .flat_map(|tp| {
                assert_eq!(tp.topic.as_str(), "t");
                tp.partitions.clone()
            })
            .collect()
    }

    fn owned(partitions: &[i32]) -> Assignment {
        [(
            uuid::Uuid::from_bytes([1; 16]),
            partitions.iter().copied().collect(),
        )]
        .into()
    }

    #[test]
    fn a_classic_member_joins_syncs_and_is_told_to_rejoin_like_kafka() {
        let mut c = coordinator();
        let (response, _) = c.consumer_group_heartbeat(0, join("m"), &topics(4));
        assert_eq!((response.member_epoch, count(&response.assignment)), (1, 4));

        // Protocol type and names are checked first; then KIP-394.
        let connect = JoinGroupRequest {
            protocol_type: "connect".into(),
            ..classic_join("", &["range"])
        };
        assert_eq!(
            classic(&mut c, connect).error,
            Some(ErrorCode::InconsistentGroupProtocol)
        );
        let first = classic(&mut c, classic_join("", &["range", "roundrobin"]));
        assert_eq!(first.error, Some(ErrorCode::MemberIdRequired));
        let id = first.member_id;

        // Its share (2 of 4) is still owned by "m": it joins at the new
        // epoch with nothing yet, and is not told to rejoin while it waits.
        let joined = classic(&mut c, classic_join(&id, &["range", "roundrobin"]));
        assert_eq!(joined.error, None);
        assert_eq!(joined.generation_id, 2);
        assert_eq!(joined.protocol_type.as_deref(), Some("consumer"));
        assert_eq!(joined.protocol_name.as_deref(), Some("range"));
        assert_eq!((joined.leader.as_str(), joined.members.len()), ("", 0));
        assert!(assigned(&sync(&mut c, &id, 2)).is_empty());
        assert_eq!(
            sync(&mut c, &id, 1).error,
            Some(ErrorCode::IllegalGeneration)
        );
        assert_eq!(heartbeat(&mut c, &id, 2), None);
        assert_eq!(
            heartbeat(&mut c, &id, 1),
            Some(ErrorCode::IllegalGeneration)
        );
        assert_eq!(
            heartbeat(&mut c, "nobody", 2),
            Some(ErrorCode::UnknownMemberId)
        );

        // "m" revokes two partitions; the classic member is told to
        // rejoin and gets them.
        let (response, _) =
            c.consumer_group_heartbeat(0, beat("m", 1, &owned(&[0, 1, 2, 3])), &topics(4));
        let kept = response.assignment.expect("m must revoke");
        let kept: Vec<i32> = kept.values().flatten().copied().collect();
        assert_eq!(kept.len(), 2);
        c.consumer_group_heartbeat(
            0,
            beat("m", response.member_epoch, &owned(&kept)),
            &topics(4),
        );
        assert_eq!(
            heartbeat(&mut c, &id, 2),
            Some(ErrorCode::RebalanceInProgress)
        );
        let rejoined = classic(&mut c, classic_join(&id, &["range", "roundrobin"]));
        assert_eq!(rejoined.generation_id, 2);
        let mine = assigned(&sync(&mut c, &id, 2));
        assert_eq!(mine.len(), 2);
        assert!(mine.iter().all(|p| !kept.contains(p)));
        assert_eq!(heartbeat(&mut c, &id, 2), None);

        // Commits are checked by generation.
        let consumer = c.groups[G].consumer.as_ref().expect("a consumer group");
        assert_eq!(consumer.validate_offset_commit(&id, 2, Some(8)), Ok(()));
        assert_eq!(
            consumer.validate_offset_commit(&id, 1, Some(8)),
            Err(ErrorCode::IllegalGeneration)
        );
        assert_eq!(
            consumer.validate_offset_commit("m", 2, Some(8)),
            Err(ErrorCode::UnsupportedVersion)
        );
    }

    /// A Stable classic group at generation 5: "a" owns 0 and 1, "b" 2
    /// and 3; `instance`: "a"'s group instance id.
    fn classic_group(instance: Option<&str>) -> Group {
        let member = |id: &str, partitions: &[i32]| MemberMetadata {
            member_id: id.into(),
            group_instance_id: if id == "a" {
                instance.map(str::to_string)
            } else {
                None
            },
            client_id: "classic".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 60_000,
            session_timeout_ms: 10_000,
            subscription: encode_subscription(&["t"]),
            assignment: encode_assignment(&[("t".into(), partitions.to_vec())], 0),
        };
        Group::from_record(
            G,
            &GroupMetadataValue {
                protocol_type: "consumer".into(),
                generation: 5,
                protocol: Some("range".into()),
                leader: Some("a".into()),
                current_state_timestamp_ms: 0,
                members: vec![member("a", &[0, 1]), member("b", &[2, 3])],
            },
        )
    }

    #[test]
    fn a_static_consumer_restarted_on_the_new_protocol_takes_over_its_instance() {
        let mut c = coordinator();
        c.groups.insert(G.into(), classic_group(Some("i-a")));
        let request = ConsumerGroupHeartbeatRequest {
            instance_id: Some("i-a".into()),
            ..join("a2")
        };
        let (response, _) = c.consumer_group_heartbeat(0, request, &topics(4));
        assert_eq!(response.error, None, "{:?}", response.error_message);
        let consumer = c.groups[G].consumer.as_ref().expect("upgraded");
        assert!(!consumer.members.contains_key("a"));
        let taken_over = &consumer.members["a2"];
        assert!(taken_over.classic.is_none());
        assert_eq!(taken_over.assigned, owned(&[0, 1]));
        assert_eq!(consumer.static_members["i-a"], "a2");
    }

    #[test]
    fn a_classic_member_taking_over_the_last_new_protocol_instance_turns_the_group_classic() {
        let mut c = coordinator();
        c.groups.insert(G.into(), classic_group(None));
        let request = ConsumerGroupHeartbeatRequest {
            instance_id: Some("i-m".into()),
            ..join("m")
        };
        let (response, _) = c.consumer_group_heartbeat(0, request, &topics(4));
        assert_eq!(response.error, None);
        let epoch = c.groups[G].consumer.as_ref().expect("upgraded").group_epoch;
        let target = c.groups[G].consumer.as_ref().unwrap().target["m"].clone();

        // The static consumer is rolled back to the classic protocol.
        let rolled_back = JoinGroupRequest {
            group_instance_id: Some("i-m".into()),
            ..classic_join("", &["range"])
        };
        let joined = classic(&mut c, rolled_back);
        assert_eq!(joined.error, None);
        assert_eq!(joined.generation_id, epoch);
        let group = &c.groups[G];
        assert!(group.consumer.is_none());
        // Same subscription: no rebalance; it holds what "m" was to get.
        assert_eq!(group.state, GroupState::Stable);
        assert_eq!(group.generation_id, epoch);
        assert_eq!(group.members.len(), 3);
        let mine = decode_assignment(&group.members[&joined.member_id].assignment).unwrap();
        let partitions: Vec<i32> = mine
            .assigned_partitions
            .iter()
            .flat_map(|tp| tp.partitions.clone())
            .collect();
        assert_eq!(owned(&partitions), target);
        assert_eq!(sync(&mut c, &joined.member_id, epoch).error, None);
    }

    #[test]
    fn a_refused_upgrade_leaves_the_group_classic() {
        let mut c = GroupCoordinator::new(
            GroupConfig {
                consumer_group_members_max: 2,
                ..GroupConfig::default()
            },
            1,
            0,
        );
        c.groups.insert(G.into(), classic_group(None));
        let (response, effects) = c.consumer_group_heartbeat(0, join("m"), &topics(4));
        assert_eq!(response.error, Some(ErrorCode::GroupMaxSizeReached));
        assert!(effects.appends.is_empty());
        let group = &c.groups[G];
        assert!(group.consumer.is_none());
        assert_eq!((group.members.len(), group.generation_id), (2, 5));
    }

    fn coordinator_with(policy: crate::group::MigrationPolicy) -> GroupCoordinator {
        GroupCoordinator::new(
            GroupConfig {
                migration_policy: policy,
                ..GroupConfig::default()
            },
            1,
            0,
        )
    }

    #[test]
    fn without_online_upgrade_a_classic_group_stays_classic() {
        use crate::group::MigrationPolicy;
        for policy in [MigrationPolicy::Downgrade, MigrationPolicy::Disabled] {
            let mut c = coordinator_with(policy);
            c.groups.insert(G.into(), classic_group(None));
            let (response, effects) = c.consumer_group_heartbeat(0, join("m"), &topics(4));
            assert_eq!(
                response.error,
                Some(ErrorCode::GroupIdNotFound),
                "{policy:?}"
            );
            assert_eq!(
                response.error_message.as_deref(),
                Some(
                    "Cannot upgrade classic group g to consumer group because online upgrade is \
                     disabled."
                )
            );
            assert!(effects.appends.is_empty());
            assert!(c.groups[G].consumer.is_none());
            assert_eq!(c.groups[G].members.len(), 2);
        }
    }

    #[test]
    fn without_online_downgrade_classic_members_stay_in_the_consumer_group() {
        let mut c = coordinator_with(crate::group::MigrationPolicy::Upgrade);
        c.groups.insert(G.into(), classic_group(None));
        let (response, _) = c.consumer_group_heartbeat(0, join("m"), &topics(4));
        assert_eq!(response.error, None);
        let leave = ConsumerGroupHeartbeatRequest {
            member_epoch: -1,
            ..beat("m", response.member_epoch, &Assignment::new())
        };
        c.consumer_group_heartbeat(0, leave, &topics(4));
        let consumer = c.groups[G]
            .consumer
            .as_ref()
            .expect("still a consumer group");
        assert_eq!(consumer.members.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert!(consumer.members.values().all(|m| m.classic.is_some()));
    }

    #[test]
    fn leaving_together_downgrades_once_without_the_leavers() {
        let mut c = coordinator();
        c.groups.insert(G.into(), classic_group(None));
        c.consumer_group_heartbeat(0, join("m"), &topics(4));
        let leave = LeaveGroupRequest {
            group_id: G.into(),
            members: ["m", "a"]
                .iter()
                .map(|id| LeaveGroupMember {
                    member_id: id.to_string(),
                    group_instance_id: None,
                })
                .collect(),
        };
        let outcome = c.leave_group(0, leave);
        let Reply::Ready(response) = outcome.reply else {
            panic!("answered at once");
        };
        assert!(
            response.members.iter().all(|m| m.error.is_none()),
            "{response:?}"
        );
        let group = &c.groups[G];
        assert!(group.consumer.is_none());
        assert_eq!(group.members.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(group.state, GroupState::PreparingRebalance);
    }

    #[test]
    fn a_classic_group_is_upgraded_and_downgraded_with_its_members() {
        let mut c = coordinator();
        c.groups.insert(G.into(), classic_group(None));
        c.groups
            .get_mut(G)
            .unwrap()
            .members
            .get_mut("b")
            .unwrap()
            .awaiting_join = Some(RequestId(77));

        let (response, effects) = c.consumer_group_heartbeat(0, join("m"), &topics(4));
        assert_eq!(response.error, None);
        // The parked JoinGroup is told to rejoin; the classic group's
        // tombstone is written first.
        assert!(effects.completions.iter().any(|done| done.request_id == RequestId(77)
            && matches!(&done.response, Response::JoinGroup(r) if r.error == Some(ErrorCode::RebalanceInProgress))));
        let first = &effects.appends[0].records[0];
        assert!(
            matches!(first, CoordinatorRecord::GroupMetadata { value: None, .. }),
            "{first:?}"
        );
        let group = &c.groups[G];
        assert!(group.members.is_empty());
        let consumer = group.consumer.as_ref().expect("converted");
        assert_eq!(consumer.group_epoch, 6);
        for (id, partitions) in [("a", [0, 1]), ("b", [2, 3])] {
            let converted = &consumer.members[id];
            assert_eq!(converted.member_epoch, 5);
            assert_eq!(converted.assigned, owned(&partitions));
            assert_eq!(
                converted.classic.as_ref().map(|c| c.session_timeout_ms),
                Some(10_000)
            );
        }
        // The classic members catch up by rejoining.
        assert_eq!(
            heartbeat(&mut c, "a", 5),
            Some(ErrorCode::RebalanceInProgress)
        );

        // The new-protocol member leaves: only classic members remain, and
        // the group is classic again, rebalancing at its epoch.
        let leave = ConsumerGroupHeartbeatRequest {
            member_epoch: -1,
            ..beat("m", response.member_epoch, &Assignment::new())
        };
        let (_, effects) = c.consumer_group_heartbeat(0, leave, &topics(4));
        let group = &c.groups[G];
        assert!(group.consumer.is_none());
        assert_eq!(group.state, GroupState::PreparingRebalance);
        assert_eq!(group.generation_id, 6);
        assert_eq!(group.protocol_name.as_deref(), Some("range"));
        assert_eq!(group.members.keys().collect::<Vec<_>>(), ["a", "b"]);
        let written = &effects.appends[0].records;
        assert!(
            matches!(written.last(), Some(CoordinatorRecord::GroupMetadata { value: Some(v), .. }) if v.members.len() == 2)
        );
        assert_eq!(
            heartbeat(&mut c, "a", 6),
            Some(ErrorCode::RebalanceInProgress)
        );
    }
}
