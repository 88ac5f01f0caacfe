//! Scenario tests of the coordinator with an explicit clock. A `Harness`
//! plays the integration's part: it numbers requests, collects completions,
//! holds appends until a test acknowledges them, and advances time by
//! running `on_tick` at every deadline on the way.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use super::*;
use crate::group::consumer_protocol::{encode_subscription, EMPTY_ASSIGNMENT};
use crate::group::records::{CoordinatorRecord, GroupMetadataValue};
use crate::group::GroupConfig;

const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 30_000;
const GROUP: &str = "g";

struct Harness {
    coordinator: GroupCoordinator,
    now_ms: i64,
    next_request: u64,
    completions: BTreeMap<RequestId, Response>,
    appends: VecDeque<Append>,
    /// Every record acknowledged so far, in log order (to replay).
    log: Vec<CoordinatorRecord>,
}

struct Joiner {
    client_id: String,
    instance_id: Option<String>,
    topics: Vec<&'static str>,
    protocols: Vec<&'static str>,
    api_version: i16,
}

impl Joiner {
    fn new(client_id: &str) -> Self {
        Joiner {
            client_id: client_id.to_string(),
            instance_id: None,
            topics: vec!["orders"],
            protocols: vec!["range"],
            api_version: 9,
        }
    }

    fn request(&self, member_id: &str) -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: GROUP.to_string(),
            session_timeout_ms: SESSION_MS,
            rebalance_timeout_ms: REBALANCE_MS,
            member_id: member_id.to_string(),
            group_instance_id: self.instance_id.clone(),
            protocol_type: "consumer".to_string(),
            protocols: self
                .protocols
                .iter()
                .map(|name| JoinProtocol {
                    name: name.to_string(),
                    metadata: encode_subscription(&self.topics),
                })
                .collect(),
            client_id: self.client_id.clone(),
            client_host: "/127.0.0.1".to_string(),
            api_version: self.api_version,
        }
    }
}

impl Harness {
    fn new() -> Self {
        Self::with_config(GroupConfig::default())
    }

    fn with_config(config: GroupConfig) -> Self {
        Harness {
            coordinator: GroupCoordinator::new(config, 42, 0),
            now_ms: 0,
            next_request: 0,
            completions: BTreeMap::new(),
            appends: VecDeque::new(),
            log: Vec::new(),
        }
    }

    fn request_id(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    fn absorb(&mut self, effects: Effects) {
        for completion in effects.completions {
            let previous = self
                .completions
                .insert(completion.request_id, completion.response);
            assert!(previous.is_none(), "completed twice");
        }
        self.appends.extend(effects.appends);
    }

    fn absorb_reply<T>(
        &mut self,
        request_id: RequestId,
        outcome: Outcome<T>,
        wrap: fn(T) -> Response,
    ) {
        if let Reply::Ready(response) = outcome.reply {
            self.completions.insert(request_id, wrap(response));
        }
        self.absorb(outcome.effects);
    }

    /// Acknowledges every outstanding append as durable.
    fn ack_all(&mut self) {
        while let Some(append) = self.appends.pop_front() {
            self.log.extend(append.records.iter().cloned());
            let effects = self
                .coordinator
                .append_completed(self.now_ms, append.id, Ok(()));
            self.absorb(effects);
        }
    }

    /// Moves the clock forward, running every deadline on the way.
    fn advance(&mut self, ms: i64) {
        let target = self.now_ms + ms;
        while let Some(deadline) = self.coordinator.next_deadline() {
            if deadline > target {
                break;
            }
            self.now_ms = self.now_ms.max(deadline);
            let effects = self.coordinator.on_tick(self.now_ms);
            self.absorb(effects);
        }
        self.now_ms = target;
    }

    fn join(&mut self, joiner: &Joiner, member_id: &str) -> RequestId {
        let request_id = self.request_id();
        let outcome = self.coordinator.join_group(
            self.now_ms,
            request_id,
            joiner.request(member_id),
            &NO_TOPICS,
        );
        self.absorb_reply(request_id, outcome, Response::JoinGroup);
        request_id
    }

    /// A first join as a v4+ client does it: MEMBER_ID_REQUIRED, then again
    /// with the id. Returns the member id and the parked join.
    fn join_new(&mut self, joiner: &Joiner) -> (String, RequestId) {
        let first = self.join(joiner, "");
        let response = self.join_response(first).expect("answered");
        if joiner.instance_id.is_some() {
            // Static members skip KIP-394.
            panic!("use join for static members");
        }
        assert_eq!(response.error, Some(ErrorCode::MemberIdRequired));
        assert!(response
            .member_id
            .starts_with(&format!("{}-", joiner.client_id)));
        let member_id = response.member_id;
        let second = self.join(joiner, &member_id);
        (member_id, second)
    }

    fn join_response(&mut self, request_id: RequestId) -> Option<JoinGroupResponse> {
        match self.completions.remove(&request_id)? {
            Response::JoinGroup(r) => Some(r),
            other => panic!("expected a JoinGroup answer, got {other:?}"),
        }
    }

    fn sync_response(&mut self, request_id: RequestId) -> Option<SyncGroupResponse> {
        match self.completions.remove(&request_id)? {
            Response::SyncGroup(r) => Some(r),
            other => panic!("expected a SyncGroup answer, got {other:?}"),
        }
    }

    fn sync(
        &mut self,
        member_id: &str,
        generation_id: i32,
        assignments: &[(&str, &'static [u8])],
    ) -> RequestId {
        let request_id = self.request_id();
        let request = SyncGroupRequest {
            group_id: GROUP.to_string(),
            generation_id,
            member_id: member_id.to_string(),
            group_instance_id: None,
            protocol_type: Some("consumer".to_string()),
            protocol_name: Some("range".to_string()),
            assignments: assignments
                .iter()
                .map(|(member_id, bytes)| SyncGroupAssignment {
                    member_id: member_id.to_string(),
                    assignment: Bytes::from_static(bytes),
                })
                .collect(),
        };
        let outcome = self
            .coordinator
            .sync_group(self.now_ms, request_id, request, &NO_TOPICS);
        self.absorb_reply(request_id, outcome, Response::SyncGroup);
        request_id
    }

    fn heartbeat(
        &mut self,
        member_id: &str,
        generation_id: i32,
        instance_id: Option<&str>,
    ) -> Option<ErrorCode> {
        self.coordinator
            .heartbeat(
                self.now_ms,
                HeartbeatRequest {
                    group_id: GROUP.to_string(),
                    generation_id,
                    member_id: member_id.to_string(),
                    group_instance_id: instance_id.map(str::to_string),
                },
            )
            .error
    }

    fn commit(
        &mut self,
        member_id: &str,
        generation_id: i32,
        instance_id: Option<&str>,
        offsets: &[(&str, i32, i64)],
    ) -> RequestId {
        let request_id = self.request_id();
        let request = OffsetCommitRequest {
            group_id: GROUP.to_string(),
            generation_id,
            member_id: member_id.to_string(),
            group_instance_id: instance_id.map(str::to_string),
            retention_time_ms: -1,
            topics: offsets
                .iter()
                .map(|&(topic, partition, offset)| OffsetCommitTopic {
                    name: topic.to_string(),
                    partitions: vec![OffsetCommitPartition {
                        partition_index: partition,
                        committed_offset: offset,
                        committed_leader_epoch: 3,
                        committed_metadata: Some("meta".to_string()),
                    }],
                })
                .collect(),
            api_version: 8,
        };
        let outcome = self
            .coordinator
            .offset_commit(self.now_ms, request_id, request);
        self.absorb_reply(request_id, outcome, Response::OffsetCommit);
        request_id
    }

    /// The single error of a one-partition commit, once answered.
    fn commit_error(&mut self, request_id: RequestId) -> Option<Option<ErrorCode>> {
        match self.completions.remove(&request_id)? {
            Response::OffsetCommit(r) => Some(r.topics[0].partitions[0].error),
            other => panic!("expected an OffsetCommit answer, got {other:?}"),
        }
    }

    fn fetch(&self, topic: &str, partition: i32) -> i64 {
        let response = self.coordinator.offset_fetch(&OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: GROUP.to_string(),
                member: None,
                topics: Some(vec![OffsetFetchTopic {
                    name: topic.to_string(),
                    partition_indexes: vec![partition],
                }]),
            }],
            require_stable: false,
        });
        response.groups[0].topics[0].partitions[0].committed_offset
    }

    fn state(&self) -> (GroupState, i32) {
        self.coordinator.group_state(GROUP).expect("group exists")
    }

    /// Three dynamic members join, the leader assigns, everyone is Stable.
    /// Returns the member ids, leader first.
    fn stable_group_of_three(&mut self) -> Vec<String> {
        let (m1, j1) = self.join_new(&Joiner::new("c1"));
        let (m2, j2) = self.join_new(&Joiner::new("c2"));
        let (m3, j3) = self.join_new(&Joiner::new("c3"));
        self.advance(6_000);
        let leader = self.join_response(j1).expect("join answered");
        assert_eq!(leader.members.len(), 3);
        let (r2, r3) = (self.join_response(j2), self.join_response(j3));
        assert!(r2.is_some() && r3.is_some());
        let s1 = self.sync(&m1, 1, &[(&m1, b"a1"), (&m2, b"a2"), (&m3, b"a3")]);
        let s2 = self.sync(&m2, 1, &[]);
        let s3 = self.sync(&m3, 1, &[]);
        self.ack_all();
        for s in [s1, s2, s3] {
            assert_eq!(self.sync_response(s).expect("synced").error, None);
        }
        assert_eq!(self.state(), (GroupState::Stable, 1));
        vec![m1, m2, m3]
    }
}

/// Three members join a new group: each is first told MEMBER_ID_REQUIRED,
/// the join waits for the initial delay (extended once because members kept
/// arriving), the leader alone receives everyone's metadata, SyncGroup answers
/// only once the leader's assignment is durable, and each member gets its own
/// assignment.
#[test]
fn three_members_join_leader_gets_metadata_sync_distributes_assignments() {
    let mut h = Harness::new();
    let (m1, j1) = h.join_new(&Joiner::new("c1"));
    let (m2, j2) = h.join_new(&Joiner::new("c2"));
    let (m3, j3) = h.join_new(&Joiner::new("c3"));
    assert_eq!(h.state(), (GroupState::PreparingRebalance, 0));

    // The initial delay passes, but members joined during it: extended.
    h.advance(3_000);
    assert!(h.join_response(j1).is_none());
    h.advance(3_000);

    let leader = h.join_response(j1).expect("leader answered");
    assert_eq!(leader.error, None);
    assert_eq!(leader.generation_id, 1);
    assert_eq!(leader.leader, m1);
    assert_eq!(leader.protocol_name.as_deref(), Some("range"));
    assert_eq!(leader.protocol_type.as_deref(), Some("consumer"));
    let mut listed: Vec<String> = leader.members.iter().map(|m| m.member_id.clone()).collect();
    listed.sort();
    let mut expected = vec![m1.clone(), m2.clone(), m3.clone()];
    expected.sort();
    assert_eq!(listed, expected);
    assert_eq!(leader.members[0].metadata, encode_subscription(&["orders"]));
    for (join, member) in [(j2, &m2), (j3, &m3)] {
        let follower = h.join_response(join).expect("follower answered");
        assert_eq!(follower.error, None);
        assert_eq!(&follower.member_id, member);
        assert_eq!(follower.leader, m1);
        assert!(follower.members.is_empty());
    }
    assert_eq!(h.state(), (GroupState::CompletingRebalance, 1));

    // Followers sync first and wait; the leader's assignment is written.
    let s2 = h.sync(&m2, 1, &[]);
    let s3 = h.sync(&m3, 1, &[]);
    let s1 = h.sync(&m1, 1, &[(&m1, b"a1"), (&m2, b"a2"), (&m3, b"a3")]);
    assert!(h.completions.is_empty());
    assert_eq!(h.appends.len(), 1);
    match &h.appends[0].records[0] {
        CoordinatorRecord::GroupMetadata {
            value: Some(value), ..
        } => {
            assert_eq!(value.generation, 1);
            assert_eq!(value.members.len(), 3);
        }
        other => panic!("unexpected record {other:?}"),
    }
    h.ack_all();
    for (sync, bytes) in [(s1, b"a1"), (s2, b"a2"), (s3, b"a3")] {
        let response = h.sync_response(sync).expect("synced");
        assert_eq!(response.error, None);
        assert_eq!(response.assignment.as_ref(), bytes);
        assert_eq!(response.protocol_name.as_deref(), Some("range"));
    }
    assert_eq!(h.state(), (GroupState::Stable, 1));
    assert_eq!(h.heartbeat(&m2, 1, None), None);
}

/// A member that stops heartbeating is removed when its session times out;
/// the others learn of the rebalance from their heartbeats, rejoin, and the
/// group moves to the next generation without it.
#[test]
fn silent_member_is_removed_after_session_timeout_and_group_rebalances() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let (m1, m2, m3) = (&members[0], &members[1], &members[2]);

    for _ in 0..3 {
        h.advance(3_000);
        assert_eq!(h.heartbeat(m1, 1, None), None);
        assert_eq!(h.heartbeat(m2, 1, None), None);
    }
    h.advance(1_001);
    assert_eq!(h.state(), (GroupState::PreparingRebalance, 1));
    assert!(!h.coordinator.group_members(GROUP).contains(m3));
    assert_eq!(
        h.heartbeat(m1, 1, None),
        Some(ErrorCode::RebalanceInProgress)
    );
    assert_eq!(h.heartbeat(m3, 1, None), Some(ErrorCode::UnknownMemberId));

    let j1 = h.join(&Joiner::new("c1"), m1);
    assert!(h.join_response(j1).is_none(), "waits for m2");
    let j2 = h.join(&Joiner::new("c2"), m2);
    let leader = h.join_response(j1).expect("answered");
    assert_eq!(leader.generation_id, 2);
    assert_eq!(leader.members.len(), 2);
    assert_eq!(h.join_response(j2).expect("answered").generation_id, 2);
    assert_eq!(h.state(), (GroupState::CompletingRebalance, 2));
}

/// A member paused through a rebalance commits with its old generation and
/// gets ILLEGAL_GENERATION; a member that was removed gets UNKNOWN_MEMBER_ID.
/// Commits during CompletingRebalance get REBALANCE_IN_PROGRESS.
#[test]
fn commit_with_old_generation_is_illegal_generation() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let (m1, m2, m3) = (members[0].clone(), members[1].clone(), members[2].clone());

    // m3 leaves; m1 and m2 rejoin into generation 2.
    let leave = h.coordinator.leave_group(
        h.now_ms,
        LeaveGroupRequest {
            group_id: GROUP.to_string(),
            members: vec![LeaveGroupMember {
                member_id: m3.clone(),
                group_instance_id: None,
            }],
        },
    );
    assert_eq!(leave.reply.ready().expect("ready").members[0].error, None);
    h.join(&Joiner::new("c1"), &m1);
    h.join(&Joiner::new("c2"), &m2);
    assert_eq!(h.state(), (GroupState::CompletingRebalance, 2));

    let during = h.commit(&m1, 2, None, &[("orders", 0, 10)]);
    assert_eq!(
        h.commit_error(during),
        Some(Some(ErrorCode::RebalanceInProgress))
    );

    let stale = h.commit(&m2, 1, None, &[("orders", 0, 10)]);
    assert_eq!(
        h.commit_error(stale),
        Some(Some(ErrorCode::IllegalGeneration))
    );
    let removed = h.commit(&m3, 1, None, &[("orders", 0, 10)]);
    assert_eq!(
        h.commit_error(removed),
        Some(Some(ErrorCode::UnknownMemberId))
    );
    let outsider = h.commit("", -1, None, &[("orders", 0, 10)]);
    assert_eq!(
        h.commit_error(outsider),
        Some(Some(ErrorCode::UnknownMemberId))
    );
    assert!(h.appends.is_empty());
}

/// A static member that restarts joins with its instance id and no member
/// id: it takes over its old place without a rebalance once the new member id
/// is durable, and the old member id is fenced.
#[test]
fn static_member_rejoin_with_new_member_id_fences_the_old_one() {
    let mut h = Harness::new();
    let mut joiner = Joiner::new("c1");
    joiner.instance_id = Some("instance-1".to_string());
    let first = h.join(&joiner, "");
    h.advance(3_000);
    let joined = h.join_response(first).expect("answered");
    assert_eq!(joined.error, None);
    let old_member_id = joined.member_id.clone();
    assert!(old_member_id.starts_with("instance-1-"));
    let sync = h.sync(&old_member_id, 1, &[(&old_member_id, b"p0")]);
    h.ack_all();
    assert_eq!(h.sync_response(sync).expect("synced").error, None);
    assert_eq!(h.state(), (GroupState::Stable, 1));

    // The restarted instance rejoins without a member id.
    let rejoin = h.join(&joiner, "");
    assert!(h.join_response(rejoin).is_none(), "waits for the record");
    assert_eq!(h.appends.len(), 1);
    h.ack_all();
    let response = h.join_response(rejoin).expect("answered");
    assert_eq!(response.error, None);
    assert_ne!(response.member_id, old_member_id);
    assert_eq!(response.generation_id, 1, "no rebalance");
    assert!(
        response.skip_assignment,
        "the static leader keeps its assignment"
    );
    assert_eq!(response.members.len(), 1);
    let new_member_id = response.member_id;
    assert_eq!(h.state(), (GroupState::Stable, 1));

    let instance = Some("instance-1");
    assert_eq!(
        h.heartbeat(&old_member_id, 1, instance),
        Some(ErrorCode::FencedInstanceId)
    );
    assert_eq!(
        h.heartbeat(&old_member_id, 1, None),
        Some(ErrorCode::UnknownMemberId)
    );
    assert_eq!(h.heartbeat(&new_member_id, 1, instance), None);
    let commit = h.commit(&old_member_id, 1, instance, &[("orders", 0, 1)]);
    assert_eq!(
        h.commit_error(commit),
        Some(Some(ErrorCode::FencedInstanceId))
    );
    // The new id keeps the old assignment.
    let sync = h.sync(&new_member_id, 1, &[]);
    assert_eq!(
        h.sync_response(sync).expect("ready").assignment.as_ref(),
        b"p0"
    );
}

/// A static member's old incarnation with a parked JoinGroup is answered
/// FENCED_INSTANCE_ID the moment a new incarnation takes over.
#[test]
fn parked_join_of_a_replaced_static_member_is_fenced() {
    let mut h = Harness::new();
    let mut static_joiner = Joiner::new("s");
    static_joiner.instance_id = Some("i".to_string());
    let first = h.join(&static_joiner, "");
    let (dynamic_id, dynamic_join) = h.join_new(&Joiner::new("d"));
    h.advance(6_000);
    let static_id = h.join_response(first).expect("answered").member_id;
    h.join_response(dynamic_join).expect("answered");
    let (_, generation) = h.state();

    // The dynamic member rejoins with new metadata: a rebalance starts, and
    // the static member's rejoin is parked.
    let mut changed = Joiner::new("d");
    changed.topics = vec!["orders", "payments"];
    h.join(&changed, &dynamic_id);
    assert_eq!(h.state(), (GroupState::PreparingRebalance, generation));
    let rejoin = h.join(&static_joiner, &static_id);
    // Everyone rejoined: the join completes at once.
    assert_eq!(h.join_response(rejoin).expect("answered").error, None);
    assert_eq!(h.state(), (GroupState::CompletingRebalance, generation + 1));

    // A new incarnation during CompletingRebalance fences the old and
    // restarts the rebalance; the old one's sync is answered with the fence.
    let old_sync = h.sync(&static_id, generation + 1, &[]);
    let new_join = h.join(&static_joiner, "");
    let fenced = h.sync_response(old_sync).expect("answered");
    assert_eq!(fenced.error, Some(ErrorCode::FencedInstanceId));
    assert!(h.join_response(new_join).is_none());
    assert_eq!(h.state().0, GroupState::PreparingRebalance);
}

/// LeaveGroup removes the member and rebalances the rest; when the last
/// member leaves the group becomes Empty and its metadata record is written.
#[test]
fn leave_triggers_rebalance_and_last_leave_empties_the_group() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let leave = |h: &mut Harness, member_id: &str| {
        let outcome = h.coordinator.leave_group(
            h.now_ms,
            LeaveGroupRequest {
                group_id: GROUP.to_string(),
                members: vec![
                    LeaveGroupMember {
                        member_id: member_id.to_string(),
                        group_instance_id: None,
                    },
                    LeaveGroupMember {
                        member_id: "nobody".to_string(),
                        group_instance_id: None,
                    },
                ],
            },
        );
        let response = outcome.reply.ready().expect("ready");
        assert_eq!(response.members[0].error, None);
        assert_eq!(response.members[1].error, Some(ErrorCode::UnknownMemberId));
        h.absorb(outcome.effects);
    };
    leave(&mut h, &members[2]);
    assert_eq!(h.state(), (GroupState::PreparingRebalance, 1));
    let j1 = h.join(&Joiner::new("c1"), &members[0]);
    let j2 = h.join(&Joiner::new("c2"), &members[1]);
    assert_eq!(h.join_response(j1).expect("answered").members.len(), 2);
    assert!(h.join_response(j2).is_some());

    leave(&mut h, &members[0]);
    // m2 is the only one left and has not rejoined: it must within the
    // rebalance timeout.
    let j2 = h.join(&Joiner::new("c2"), &members[1]);
    let response = h.join_response(j2).expect("answered");
    assert_eq!(response.leader, members[1]);
    assert_eq!(h.state(), (GroupState::CompletingRebalance, 3));
    leave(&mut h, &members[1]);
    assert_eq!(h.state(), (GroupState::Empty, 4));
    assert_eq!(h.appends.len(), 1);
    match &h.appends[0].records[0] {
        CoordinatorRecord::GroupMetadata {
            value: Some(value), ..
        } => {
            assert!(value.members.is_empty());
            assert_eq!(value.generation, 4);
            assert_eq!(value.protocol_type, "consumer");
            assert_eq!(value.protocol, None);
        }
        other => panic!("unexpected record {other:?}"),
    }
}

/// Offsets become visible once durable; partitions never committed, and
/// unknown groups, answer -1; oversized metadata is refused per partition;
/// a failed append answers with the mapped error and stores nothing.
#[test]
fn offsets_commit_and_fetch_with_minus_one_for_never_committed() {
    let mut h = Harness::new();
    assert_eq!(h.fetch("orders", 0), -1, "unknown group");
    let commit = h.commit("", -1, None, &[("orders", 0, 42), ("orders", 1, 7)]);
    assert!(h.commit_error(commit).is_none(), "waits for durability");
    assert_eq!(h.fetch("orders", 0), -1, "not durable yet");
    h.ack_all();
    assert_eq!(h.commit_error(commit), Some(None));
    assert_eq!(h.fetch("orders", 0), 42);
    assert_eq!(h.fetch("orders", 1), 7);
    assert_eq!(h.fetch("orders", 2), -1);
    assert_eq!(h.fetch("payments", 0), -1);
    assert_eq!(h.state(), (GroupState::Empty, 0), "a simple group");

    // Fetch-all lists what was committed, with leader epoch and metadata.
    let all = h.coordinator.offset_fetch(&OffsetFetchRequest {
        groups: vec![
            OffsetFetchGroup {
                group_id: GROUP.to_string(),
                member: None,
                topics: None,
            },
            OffsetFetchGroup {
                group_id: "other".to_string(),
                member: None,
                topics: None,
            },
        ],
        require_stable: false,
    });
    let partitions = &all.groups[0].topics[0].partitions;
    assert_eq!(partitions.len(), 2);
    assert_eq!(partitions[0].committed_leader_epoch, 3);
    assert_eq!(partitions[0].metadata, "meta");
    assert!(all.groups[1].topics.is_empty());

    // Metadata over offset.metadata.max.bytes.
    let request_id = h.request_id();
    let outcome = h.coordinator.offset_commit(
        h.now_ms,
        request_id,
        OffsetCommitRequest {
            group_id: GROUP.to_string(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![OffsetCommitTopic {
                name: "orders".to_string(),
                partitions: vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: 50,
                    committed_leader_epoch: -1,
                    committed_metadata: Some("x".repeat(4097)),
                }],
            }],
            api_version: 8,
        },
    );
    let response = outcome.reply.ready().expect("nothing to write");
    assert_eq!(
        response.topics[0].partitions[0].error,
        Some(ErrorCode::OffsetMetadataTooLarge)
    );

    // A failed append.
    let commit = h.commit("", -1, None, &[("orders", 0, 99)]);
    let append = h.appends.pop_front().expect("append");
    let effects =
        h.coordinator
            .append_completed(h.now_ms, append.id, Err(ErrorCode::NotLeaderOrFollower));
    h.absorb(effects);
    assert_eq!(
        h.commit_error(commit),
        Some(Some(ErrorCode::NotCoordinator))
    );
    assert_eq!(h.fetch("orders", 0), 42);

    // Unknown group with a generation: ILLEGAL_GENERATION before v9.
    let request_id = h.request_id();
    let outcome = h.coordinator.offset_commit(
        h.now_ms,
        request_id,
        OffsetCommitRequest {
            group_id: "unknown".to_string(),
            generation_id: 1,
            member_id: "m".to_string(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![OffsetCommitTopic {
                name: "orders".to_string(),
                partitions: vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: 1,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                }],
            }],
            api_version: 8,
        },
    );
    assert_eq!(
        outcome.reply.ready().expect("ready").topics[0].partitions[0].error,
        Some(ErrorCode::IllegalGeneration)
    );
}

/// DeleteGroups refuses a group with members, deletes an empty one with its
/// offsets once the tombstones are durable, and then reports it unknown.
#[test]
fn delete_group_with_members_is_non_empty_and_empty_group_is_deleted() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let commit = h.commit(&members[0], 1, None, &[("orders", 0, 5)]);
    h.ack_all();
    assert_eq!(h.commit_error(commit), Some(None));

    let request_id = h.request_id();
    let outcome = h.coordinator.delete_groups(
        h.now_ms,
        request_id,
        &[GROUP.to_string(), "missing".to_string()],
    );
    assert_eq!(
        outcome.reply.ready().expect("ready").results,
        vec![
            (GROUP.to_string(), Some(ErrorCode::NonEmptyGroup)),
            ("missing".to_string(), Some(ErrorCode::GroupIdNotFound)),
        ]
    );

    for member in &members {
        let outcome = h.coordinator.leave_group(
            h.now_ms,
            LeaveGroupRequest {
                group_id: GROUP.to_string(),
                members: vec![LeaveGroupMember {
                    member_id: member.clone(),
                    group_instance_id: None,
                }],
            },
        );
        h.absorb(outcome.effects);
    }
    h.ack_all();
    assert_eq!(h.state().0, GroupState::Empty);

    let request_id = h.request_id();
    let outcome = h
        .coordinator
        .delete_groups(h.now_ms, request_id, &[GROUP.to_string()]);
    assert_eq!(outcome.reply, Reply::Pending);
    let records = &outcome.effects.appends[0].records;
    assert_eq!(
        records.len(),
        2,
        "one offset tombstone and the group tombstone"
    );
    assert!(matches!(
        &records[0],
        CoordinatorRecord::OffsetCommit { value: None, .. }
    ));
    assert!(matches!(
        &records[1],
        CoordinatorRecord::GroupMetadata { value: None, .. }
    ));
    h.absorb(outcome.effects);
    // While the tombstones are written, joins are told to retry.
    let join = h.join(&Joiner::new("c9"), "");
    assert_eq!(
        h.join_response(join).expect("answered").error,
        Some(ErrorCode::CoordinatorNotAvailable)
    );
    assert_eq!(h.fetch("orders", 0), 5, "readers see the committed state");
    h.ack_all();
    match h.completions.remove(&request_id) {
        Some(Response::DeleteGroups(response)) => {
            assert_eq!(response.results, vec![(GROUP.to_string(), None)]);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(h.coordinator.group_state(GROUP), None);
    assert_eq!(h.fetch("orders", 0), -1);
    let described = h.coordinator.describe_groups(&[GROUP.to_string()], 6);
    assert_eq!(described[0].group_state, "Dead");
    assert_eq!(described[0].error, Some(ErrorCode::GroupIdNotFound));
}

/// Offsets of an Empty group expire offsets.retention.minutes after the
/// group became Empty; the sweep then deletes the group too.
#[test]
fn offsets_of_an_empty_group_expire_and_the_group_is_deleted() {
    let mut h = Harness::new();
    let commit = h.commit("", -1, None, &[("orders", 0, 5)]);
    h.ack_all();
    assert_eq!(h.commit_error(commit), Some(None));
    let retention_ms = GroupConfig::default().offsets_retention_ms;

    h.advance(retention_ms - 1);
    h.ack_all();
    assert_eq!(h.fetch("orders", 0), 5, "not yet expired");
    // The next sweep (every 10 minutes) finds it expired.
    h.advance(600_000);
    assert_eq!(h.appends.len(), 1);
    let records = h.appends[0].records.clone();
    assert_eq!(records.len(), 2);
    assert!(matches!(
        &records[0],
        CoordinatorRecord::OffsetCommit { value: None, .. }
    ));
    assert!(matches!(
        &records[1],
        CoordinatorRecord::GroupMetadata { value: None, .. }
    ));
    h.ack_all();
    assert_eq!(h.fetch("orders", 0), -1);
    assert_eq!(h.coordinator.group_count(), 0);
}

/// A consumer group's offsets for topics it is subscribed to never expire
/// while it is Stable; once it is Empty they expire counting from then.
#[test]
fn consumer_group_offsets_expire_from_when_the_group_became_empty() {
    let config = GroupConfig {
        offsets_retention_ms: 100_000,
        offsets_retention_check_interval_ms: 10_000,
        ..GroupConfig::default()
    };
    let mut h = Harness::with_config(config);
    let (member, join) = h.join_new(&Joiner::new("c1"));
    h.advance(3_000);
    h.join_response(join).expect("answered");
    h.sync(&member, 1, &[(&member, b"p")]);
    h.ack_all();
    let commit = h.commit(&member, 1, None, &[("orders", 0, 1)]);
    h.ack_all();
    assert_eq!(h.commit_error(commit), Some(None));
    // Stable and subscribed: kept while the member heartbeats.
    for _ in 0..30 {
        h.advance(5_000);
        assert_eq!(h.heartbeat(&member, 1, None), None);
    }
    assert_eq!(h.fetch("orders", 0), 1);
    // The member stops; the group empties after its session timeout.
    h.advance(SESSION_MS as i64 + 1);
    h.ack_all();
    assert_eq!(h.state().0, GroupState::Empty);
    h.advance(90_000);
    h.ack_all();
    assert_eq!(h.fetch("orders", 0), 1, "retention counts from emptiness");
    h.advance(20_000);
    h.ack_all();
    assert_eq!(h.fetch("orders", 0), -1);
}

/// Rebuilding a coordinator from the records acknowledged so far brings
/// back the Stable group with its generation, members, leader, assignments
/// and offsets; the reloaded members must heartbeat again to stay.
#[test]
fn replay_from_records_reproduces_state() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let commit = h.commit(
        &members[0],
        1,
        None,
        &[("orders", 0, 11), ("payments", 2, 22)],
    );
    h.ack_all();
    assert_eq!(h.commit_error(commit), Some(None));
    // A second group that was deleted must stay deleted.
    let other = h.request_id();
    let outcome = h.coordinator.offset_commit(
        h.now_ms,
        other,
        OffsetCommitRequest {
            group_id: "gone".to_string(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![OffsetCommitTopic {
                name: "t".to_string(),
                partitions: vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: 1,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                }],
            }],
            api_version: 8,
        },
    );
    h.absorb(outcome.effects);
    h.ack_all();
    let request_id = h.request_id();
    let outcome = h
        .coordinator
        .delete_groups(h.now_ms, request_id, &["gone".to_string()]);
    h.absorb(outcome.effects);
    h.ack_all();

    let mut reloaded = GroupCoordinator::new(GroupConfig::default(), 7, h.now_ms);
    for record in &h.log {
        // Through the byte encoding, as from the log.
        let key = record.key_bytes();
        let value = record.value_bytes();
        reloaded
            .replay_bytes(h.now_ms, &key, value.as_deref())
            .expect("decodes");
    }
    let effects = reloaded.loaded(h.now_ms);
    assert!(effects.is_empty());

    assert_eq!(reloaded.group_state(GROUP), Some((GroupState::Stable, 1)));
    assert_eq!(reloaded.group_state("gone"), None);
    assert_eq!(
        reloaded.group_members(GROUP),
        h.coordinator.group_members(GROUP)
    );
    let ids = [GROUP.to_string()];
    assert_eq!(
        reloaded.describe_groups(&ids, 5),
        h.coordinator.describe_groups(&ids, 5)
    );
    let everything = OffsetFetchRequest {
        groups: vec![OffsetFetchGroup {
            group_id: GROUP.to_string(),
            member: None,
            topics: None,
        }],
        require_stable: false,
    };
    assert_eq!(
        reloaded.offset_fetch(&everything),
        h.coordinator.offset_fetch(&everything)
    );

    // The reloaded leader's sync returns its stored assignment.
    let request_id = RequestId(1);
    let outcome = reloaded.sync_group(
        h.now_ms,
        request_id,
        SyncGroupRequest {
            group_id: GROUP.to_string(),
            generation_id: 1,
            member_id: members[1].clone(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments: Vec::new(),
        },
        &NO_TOPICS,
    );
    assert_eq!(
        outcome.reply.ready().expect("ready").assignment.as_ref(),
        b"a2"
    );

    // Nobody heartbeats: after a session timeout everyone is gone.
    let effects = reloaded.on_tick(h.now_ms + SESSION_MS as i64);
    assert!(!effects.appends.is_empty());
    assert_eq!(reloaded.group_state(GROUP), Some((GroupState::Empty, 2)));
}

/// A follower that rejoins a Stable group with unchanged metadata gets the
/// current generation back without a rebalance (what a cooperative member
/// does after its revocation round); with changed metadata, or when the
/// leader rejoins, the group rebalances.
#[test]
fn stable_rejoin_rebalances_only_for_the_leader_or_changed_metadata() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let same = h.join(&Joiner::new("c2"), &members[1]);
    let response = h.join_response(same).expect("answered at once");
    assert_eq!(response.generation_id, 1);
    assert!(response.members.is_empty());
    assert_eq!(h.state(), (GroupState::Stable, 1));

    let mut changed = Joiner::new("c2");
    changed.protocols = vec!["cooperative-sticky", "range"];
    h.join(&changed, &members[1]);
    assert_eq!(h.state(), (GroupState::PreparingRebalance, 1));
    h.join(&Joiner::new("c1"), &members[0]);
    let last = h.join(&Joiner::new("c3"), &members[2]);
    let response = h.join_response(last).expect("answered");
    // c2 now also supports cooperative-sticky, but range is the only
    // protocol every member supports.
    assert_eq!(response.protocol_name.as_deref(), Some("range"));
    assert_eq!(h.state(), (GroupState::CompletingRebalance, 2));
    let s1 = h.sync(&members[0], 2, &[(&members[0], b"x")]);
    let s2 = h.sync(&members[1], 2, &[]);
    let s3 = h.sync(&members[2], 2, &[]);
    h.ack_all();
    assert_eq!(
        h.sync_response(s1).expect("synced").assignment.as_ref(),
        b"x"
    );
    // Members the leader left out get a valid empty consumer assignment.
    assert_eq!(
        h.sync_response(s2).expect("synced").assignment.as_ref(),
        &EMPTY_ASSIGNMENT
    );
    assert_eq!(
        h.sync_response(s3).expect("synced").assignment.as_ref(),
        &EMPTY_ASSIGNMENT
    );

    h.join(&Joiner::new("c1"), &members[0]);
    assert_eq!(
        h.state(),
        (GroupState::PreparingRebalance, 2),
        "leader rejoin rebalances"
    );
}

/// The checks on JoinGroup, SyncGroup and Heartbeat answer Kafka's errors.
#[test]
fn join_sync_and_heartbeat_errors() {
    let mut h = Harness::with_config(GroupConfig {
        group_members_max: 2,
        ..GroupConfig::default()
    });
    let mut bad = Joiner::new("c").request("");
    bad.session_timeout_ms = 1_000;
    let outcome = h.coordinator.join_group(0, RequestId(900), bad, &NO_TOPICS);
    assert_eq!(
        outcome.reply.ready().expect("ready").error,
        Some(ErrorCode::InvalidSessionTimeout)
    );
    let outcome = h.coordinator.join_group(
        0,
        RequestId(901),
        Joiner::new("c").request("stale-member"),
        &NO_TOPICS,
    );
    assert_eq!(
        outcome.reply.ready().expect("ready").error,
        Some(ErrorCode::UnknownMemberId)
    );

    // A v3 client is added directly, without MEMBER_ID_REQUIRED.
    let mut old_client = Joiner::new("old");
    old_client.api_version = 3;
    let j1 = h.join(&old_client, "");
    assert!(h.join_response(j1).is_none());
    // Another protocol type cannot join a consumer group.
    let mut connect = Joiner::new("k").request("");
    connect.protocol_type = "connect".to_string();
    let outcome = h
        .coordinator
        .join_group(h.now_ms, RequestId(902), connect, &NO_TOPICS);
    assert_eq!(
        outcome.reply.ready().expect("ready").error,
        Some(ErrorCode::InconsistentGroupProtocol)
    );
    let (m2, j2) = h.join_new(&Joiner::new("c2"));
    // The group is full.
    let third = h.join(&Joiner::new("c3"), "");
    assert_eq!(
        h.join_response(third).expect("ready").error,
        Some(ErrorCode::GroupMaxSizeReached)
    );
    h.advance(6_000);
    let r1 = h.join_response(j1).expect("answered");
    let m1 = r1.member_id.clone();
    h.join_response(j2).expect("answered");

    // SyncGroup checks.
    let wrong_generation = h.sync(&m1, 7, &[]);
    assert_eq!(
        h.sync_response(wrong_generation).expect("ready").error,
        Some(ErrorCode::IllegalGeneration)
    );
    let unknown = h.sync("nobody", 1, &[]);
    assert_eq!(
        h.sync_response(unknown).expect("ready").error,
        Some(ErrorCode::UnknownMemberId)
    );
    let request_id = h.request_id();
    let outcome = h.coordinator.sync_group(
        h.now_ms,
        request_id,
        SyncGroupRequest {
            group_id: GROUP.to_string(),
            generation_id: 1,
            member_id: m2.clone(),
            group_instance_id: None,
            protocol_type: Some("consumer".to_string()),
            protocol_name: Some("roundrobin".to_string()),
            assignments: Vec::new(),
        },
        &NO_TOPICS,
    );
    assert_eq!(
        outcome.reply.ready().expect("ready").error,
        Some(ErrorCode::InconsistentGroupProtocol)
    );
    assert_eq!(
        h.heartbeat(&m1, 0, None),
        Some(ErrorCode::IllegalGeneration)
    );
    assert_eq!(
        h.heartbeat(&m1, 1, None),
        None,
        "heartbeats allowed while awaiting sync"
    );

    // A follower that never syncs is removed after the rebalance timeout.
    let leader_sync = h.sync(&m1, 1, &[(&m1, b"a")]);
    h.ack_all();
    assert_eq!(h.sync_response(leader_sync).expect("synced").error, None);
    assert_eq!(h.state(), (GroupState::Stable, 1));
    for _ in 0..10 {
        h.advance(3_000);
        h.heartbeat(&m1, 1, None);
        h.heartbeat(&m2, 1, None);
    }
    assert!(!h.coordinator.group_members(GROUP).contains(&m2));
    assert_eq!(h.state(), (GroupState::PreparingRebalance, 1));
    let sync = h.sync(&m1, 1, &[]);
    assert_eq!(
        h.sync_response(sync).expect("ready").error,
        Some(ErrorCode::RebalanceInProgress)
    );
}

/// OffsetDelete refuses topics the group consumes and deletes the others'
/// offsets; ListGroups filters by state and type.
#[test]
fn offset_delete_respects_subscriptions_and_list_groups_filters() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let commit = h.commit(
        &members[0],
        1,
        None,
        &[("orders", 0, 3), ("old-topic", 0, 4)],
    );
    h.ack_all();
    assert_eq!(h.commit_error(commit), Some(None));

    let request_id = h.request_id();
    let outcome = h.coordinator.offset_delete(
        h.now_ms,
        request_id,
        &OffsetDeleteRequest {
            group_id: GROUP.to_string(),
            topics: vec![
                OffsetFetchTopic {
                    name: "orders".to_string(),
                    partition_indexes: vec![0],
                },
                OffsetFetchTopic {
                    name: "old-topic".to_string(),
                    partition_indexes: vec![0],
                },
            ],
        },
    );
    assert_eq!(outcome.reply, Reply::Pending);
    h.absorb(outcome.effects);
    h.ack_all();
    match h.completions.remove(&request_id) {
        Some(Response::OffsetDelete(response)) => {
            assert_eq!(response.error, None);
            assert_eq!(
                response.topics[0].partitions,
                vec![(0, Some(ErrorCode::GroupSubscribedToTopic))]
            );
            assert_eq!(response.topics[1].partitions, vec![(0, None)]);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(h.fetch("orders", 0), 3);
    assert_eq!(h.fetch("old-topic", 0), -1);

    let list = |states: &[&str], types: &[&str]| {
        h.coordinator
            .list_groups(&ListGroupsRequest {
                states_filter: states.iter().map(|s| s.to_string()).collect(),
                types_filter: types.iter().map(|s| s.to_string()).collect(),
            })
            .groups
    };
    let all = list(&[], &[]);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].group_state, "Stable");
    assert_eq!(all[0].protocol_type, "consumer");
    assert_eq!(all[0].group_type, "classic");
    assert_eq!(list(&["stable"], &[]).len(), 1);
    assert_eq!(list(&["Empty"], &[]).len(), 0);
    assert_eq!(list(&[], &["Classic"]).len(), 1);
    assert_eq!(list(&[], &["consumer"]).len(), 0);

    let described = h.coordinator.describe_groups(&[GROUP.to_string()], 5);
    assert_eq!(described[0].protocol_data, "range");
    assert_eq!(described[0].members.len(), 3);
    assert!(!described[0].members[0].member_metadata.is_empty());
}

/// A group that waits for no one to rejoin still completes at the rebalance
/// timeout; the members that did not rejoin are removed and their parked
/// requests are never left hanging. Unloading answers every parked request.
#[test]
fn rebalance_timeout_completes_join_and_unload_answers_parked_requests() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    h.join(&Joiner::new("c1"), &members[0]);
    assert_eq!(h.state(), (GroupState::PreparingRebalance, 1));
    // m2 and m3 keep heartbeating but never rejoin.
    for _ in 0..9 {
        h.advance(3_000);
        assert_eq!(
            h.heartbeat(&members[1], 1, None),
            Some(ErrorCode::RebalanceInProgress)
        );
        h.heartbeat(&members[2], 1, None);
    }
    h.advance(3_000);
    assert_eq!(h.state(), (GroupState::CompletingRebalance, 2));
    assert_eq!(h.coordinator.group_members(GROUP), vec![members[0].clone()]);

    let parked = h.sync(&members[0], 2, &[]);
    assert!(h.sync_response(parked).is_none());
    let effects = h.coordinator.unload();
    h.absorb(effects);
    assert_eq!(
        h.sync_response(parked).expect("answered").error,
        Some(ErrorCode::NotCoordinator)
    );
    assert_eq!(h.coordinator.group_count(), 0);
    assert_eq!(h.coordinator.next_deadline(), None);
}

/// The group metadata record written for a stable group carries what Kafka
/// writes: protocol type, generation, protocol, leader and each member's
/// subscription and assignment.
#[test]
fn group_metadata_record_describes_the_generation() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();
    let value: &GroupMetadataValue = h
        .log
        .iter()
        .rev()
        .find_map(|record| match record {
            CoordinatorRecord::GroupMetadata {
                value: Some(value), ..
            } => Some(value),
            _ => None,
        })
        .expect("a group record");
    assert_eq!(value.protocol_type, "consumer");
    assert_eq!(value.generation, 1);
    assert_eq!(value.protocol.as_deref(), Some("range"));
    assert_eq!(value.leader.as_deref(), Some(members[0].as_str()));
    assert_eq!(value.members.len(), 3);
    let first = value
        .members
        .iter()
        .find(|m| m.member_id == members[0])
        .expect("leader listed");
    assert_eq!(first.client_id, "c1");
    assert_eq!(first.session_timeout_ms, SESSION_MS);
    assert_eq!(first.rebalance_timeout_ms, REBALANCE_MS);
    assert_eq!(first.assignment.as_ref(), b"a1");
    assert_eq!(first.subscription, encode_subscription(&["orders"]));
}

/// If the record of a static member's new member id fails to append, the
/// rejoin is answered with the mapped error and the old member id, which the
/// log still holds, stays valid.
#[test]
fn failed_static_rejoin_record_restores_the_old_member_id() {
    let mut h = Harness::new();
    let mut joiner = Joiner::new("c1");
    joiner.instance_id = Some("instance-1".to_string());
    let first = h.join(&joiner, "");
    h.advance(3_000);
    let old_member_id = h.join_response(first).expect("answered").member_id;
    h.sync(&old_member_id, 1, &[(&old_member_id, b"p0")]);
    h.ack_all();

    let rejoin = h.join(&joiner, "");
    let append = h.appends.pop_front().expect("record of the new member id");
    let effects =
        h.coordinator
            .append_completed(h.now_ms, append.id, Err(ErrorCode::KafkaStorageError));
    h.absorb(effects);
    let response = h.join_response(rejoin).expect("answered");
    assert_eq!(response.error, Some(ErrorCode::NotCoordinator));
    assert_eq!(response.member_id, "");
    assert_eq!(
        h.coordinator.group_members(GROUP),
        vec![old_member_id.clone()]
    );
    assert_eq!(h.heartbeat(&old_member_id, 1, Some("instance-1")), None);
    assert_eq!(h.state(), (GroupState::Stable, 1));
}

/// Loading skips records of types this broker does not handle (KIP-848
/// regex resolutions, share and streams records share the topic),
/// reads a consumer group's epoch record, and reports malformed ones.
#[test]
fn replay_skips_foreign_record_types_and_reports_malformed_ones() {
    let mut coordinator = GroupCoordinator::new(GroupConfig::default(), 1, 0);
    // ConsumerGroupRegularExpressionKey (type 16) for group "g", regex "m".
    assert!(coordinator
        .replay_bytes(0, &[0, 16, 0, 1, b'g', 0, 1, b'm'], Some(&[0, 0, 0]))
        .is_ok());
    assert_eq!(coordinator.group_count(), 0);
    // ConsumerGroupMetadataKey (type 3) for "g": epoch 7, one tagged field
    // (MetadataHash, tag 0, 8 bytes) that is skipped.
    let value = [0, 0, 0, 0, 0, 7, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 9];
    assert!(coordinator
        .replay_bytes(0, &[0, 3, 0, 1, b'g'], Some(&value))
        .is_ok());
    assert!(coordinator.is_consumer_group("g"));
    // Its tombstone makes it go away again.
    assert!(coordinator
        .replay_bytes(0, &[0, 3, 0, 1, b'g'], None)
        .is_ok());
    assert_eq!(coordinator.group_count(), 0);
    assert!(coordinator
        .replay_bytes(0, &[0, 1, 0, 1, b'g'], Some(&[0, 3]))
        .is_err());
}

/// Member ids are `client_id-UUID`, and the same seed gives the same ids, so
/// simulations replay exactly.
#[test]
fn member_ids_are_client_id_and_uuid_and_deterministic() {
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let mut h = Harness::new();
            h.join_new(&Joiner::new("client")).0
        })
        .collect();
    assert_eq!(ids[0], ids[1]);
    let uuid = ids[0].strip_prefix("client-").expect("client id prefix");
    assert_eq!(uuid.len(), 36);
    assert_eq!(uuid.as_bytes()[14], b'4', "version 4 UUID");
}

// ----------------------------------------------------------------------
// Transactional offsets (TxnOffsetCommit and markers)

const PRODUCER: i64 = 4_000;

/// One entry of the offsets log as the transactional tests keep it: a
/// record with the producer of its batch (None for plain batches), or a
/// transaction marker.
#[derive(Debug, Clone)]
enum LogEntry {
    Record(Option<i64>, CoordinatorRecord),
    Marker(i64, bool),
}

impl Harness {
    fn txn_commit_as(
        &mut self,
        producer_id: i64,
        member_id: &str,
        generation_id: i32,
        offsets: &[(&str, i32, i64)],
    ) -> RequestId {
        let request_id = self.request_id();
        let request = TxnOffsetCommitRequest {
            transactional_id: "tx".to_string(),
            group_id: GROUP.to_string(),
            producer_id,
            producer_epoch: 0,
            generation_id,
            member_id: member_id.to_string(),
            group_instance_id: None,
            topics: offsets
                .iter()
                .map(|&(topic, partition, offset)| OffsetCommitTopic {
                    name: topic.to_string(),
                    partitions: vec![OffsetCommitPartition {
                        partition_index: partition,
                        committed_offset: offset,
                        committed_leader_epoch: 2,
                        committed_metadata: Some("txn".to_string()),
                    }],
                })
                .collect(),
        };
        let outcome = self
            .coordinator
            .txn_offset_commit(self.now_ms, request_id, request);
        self.absorb_reply(request_id, outcome, Response::TxnOffsetCommit);
        request_id
    }

    fn txn_commit(&mut self, offsets: &[(&str, i32, i64)]) -> RequestId {
        self.txn_commit_as(PRODUCER, "", -1, offsets)
    }

    /// The errors of a TxnOffsetCommit, once answered, flattened.
    fn txn_errors(&mut self, request_id: RequestId) -> Option<Vec<Option<ErrorCode>>> {
        match self.completions.remove(&request_id)? {
            Response::TxnOffsetCommit(r) => Some(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error))
                    .collect(),
            ),
            other => panic!("expected a TxnOffsetCommit answer, got {other:?}"),
        }
    }

    /// Acknowledges every outstanding append, logging it with its producer.
    fn ack_all_logged(&mut self, log: &mut Vec<LogEntry>) {
        while let Some(append) = self.appends.pop_front() {
            let producer = append.producer.map(|p| p.producer_id);
            log.extend(
                append
                    .records
                    .iter()
                    .map(|r| LogEntry::Record(producer, r.clone())),
            );
            let effects = self
                .coordinator
                .append_completed(self.now_ms, append.id, Ok(()));
            self.absorb(effects);
        }
    }

    fn marker(&mut self, log: &mut Vec<LogEntry>, producer_id: i64, commit: bool) {
        log.push(LogEntry::Marker(producer_id, commit));
        self.coordinator
            .on_txn_marker(self.now_ms, producer_id, commit);
    }

    /// (offset, error) of one partition, with or without `require_stable`.
    fn fetch_stable(
        &self,
        topic: &str,
        partition: i32,
        require_stable: bool,
    ) -> (i64, Option<ErrorCode>) {
        let response = self.coordinator.offset_fetch(&OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: GROUP.to_string(),
                member: None,
                topics: Some(vec![OffsetFetchTopic {
                    name: topic.to_string(),
                    partition_indexes: vec![partition],
                }]),
            }],
            require_stable,
        });
        let p = &response.groups[0].topics[0].partitions[0];
        (p.committed_offset, p.error)
    }
}

/// Replays `log` into a fresh coordinator, as the service's load does.
fn replay_log(log: &[LogEntry]) -> GroupCoordinator {
    let mut coordinator = GroupCoordinator::new(GroupConfig::default(), 7, 0);
    for entry in log {
        match entry {
            LogEntry::Record(None, record) => coordinator.replay(0, record),
            LogEntry::Record(Some(producer_id), record) => {
                coordinator.replay_transactional(0, *producer_id, record)
            }
            LogEntry::Marker(producer_id, commit) => {
                coordinator.on_txn_marker(0, *producer_id, *commit)
            }
        }
    }
    let _ = coordinator.loaded(0);
    coordinator
}

/// A transactional commit is durable but invisible: OffsetFetch answers the
/// last committed offset, and UNSTABLE_OFFSET_COMMIT with require_stable,
/// until the COMMIT marker makes it the committed offset. The append is one
/// batch carrying the producer.
#[test]
fn txn_offsets_are_pending_until_the_commit_marker() {
    let mut h = Harness::new();
    let mut log = Vec::new();
    let plain = h.commit("", -1, None, &[("orders", 0, 5)]);
    h.ack_all_logged(&mut log);
    assert_eq!(h.commit_error(plain), Some(None));

    let txn = h.txn_commit(&[("orders", 0, 10), ("orders", 1, 11)]);
    assert_eq!(h.appends.len(), 1);
    assert_eq!(
        h.appends[0].producer,
        Some(TxnProducer {
            producer_id: PRODUCER,
            producer_epoch: 0
        })
    );
    assert_eq!(h.appends[0].records.len(), 2);
    assert!(h.txn_errors(txn).is_none(), "answered only once durable");
    h.ack_all_logged(&mut log);
    assert_eq!(h.txn_errors(txn), Some(vec![None, None]));

    assert_eq!(h.fetch_stable("orders", 0, false), (5, None));
    assert_eq!(
        h.fetch_stable("orders", 0, true),
        (-1, Some(ErrorCode::UnstableOffsetCommit))
    );
    assert_eq!(
        h.fetch_stable("orders", 1, true),
        (-1, Some(ErrorCode::UnstableOffsetCommit))
    );
    assert_eq!(h.fetch_stable("orders", 2, true), (-1, None));
    assert_eq!(
        h.coordinator
            .pending_txn_offset(PRODUCER, GROUP, "orders", 0),
        Some(10)
    );

    h.marker(&mut log, PRODUCER, true);
    assert_eq!(h.fetch_stable("orders", 0, true), (10, None));
    assert_eq!(h.fetch_stable("orders", 1, true), (11, None));
    assert_eq!(h.coordinator.pending_txn_producers(), 0);
    // A second marker (load and writer both applying it) changes nothing.
    h.marker(&mut log, PRODUCER, true);
    assert_eq!(h.fetch_stable("orders", 0, false), (10, None));
}

/// An ABORT marker drops the producer's pending offsets and leaves other
/// producers' pending offsets alone.
#[test]
fn abort_marker_drops_only_that_producers_offsets() {
    let mut h = Harness::new();
    let mut log = Vec::new();
    h.commit("", -1, None, &[("orders", 0, 5)]);
    h.txn_commit_as(PRODUCER, "", -1, &[("orders", 0, 10)]);
    h.txn_commit_as(PRODUCER + 1, "", -1, &[("orders", 1, 21)]);
    h.ack_all_logged(&mut log);

    h.marker(&mut log, PRODUCER, false);
    assert_eq!(h.fetch_stable("orders", 0, true), (5, None));
    assert_eq!(
        h.fetch_stable("orders", 1, true),
        (-1, Some(ErrorCode::UnstableOffsetCommit))
    );
    h.marker(&mut log, PRODUCER + 1, true);
    assert_eq!(h.fetch_stable("orders", 1, true), (21, None));
    assert_eq!(h.fetch_stable("orders", 0, true), (5, None));
}

/// Kafka keeps the offset whose record is latest in the log: a plain
/// commit written after the transactional one wins over the COMMIT marker,
/// and a transactional commit written after a plain one replaces it.
#[test]
fn commit_marker_replaces_only_offsets_written_before_the_txn_record() {
    let mut h = Harness::new();
    let mut log = Vec::new();
    h.txn_commit(&[("orders", 0, 10)]);
    h.ack_all_logged(&mut log);
    h.commit("", -1, None, &[("orders", 0, 20)]);
    h.ack_all_logged(&mut log);
    assert_eq!(h.fetch_stable("orders", 0, false), (20, None));
    h.marker(&mut log, PRODUCER, true);
    assert_eq!(
        h.fetch_stable("orders", 0, false),
        (20, None),
        "later plain commit wins"
    );

    h.commit("", -1, None, &[("orders", 1, 30)]);
    h.ack_all_logged(&mut log);
    h.txn_commit(&[("orders", 1, 31)]);
    h.ack_all_logged(&mut log);
    h.marker(&mut log, PRODUCER, true);
    assert_eq!(
        h.fetch_stable("orders", 1, false),
        (31, None),
        "later txn commit wins"
    );

    // The same log replayed gives the same answers.
    let reloaded = replay_log(&log);
    let everything = OffsetFetchRequest {
        groups: vec![OffsetFetchGroup {
            group_id: GROUP.to_string(),
            member: None,
            topics: None,
        }],
        require_stable: true,
    };
    assert_eq!(
        reloaded.offset_fetch(&everything),
        h.coordinator.offset_fetch(&everything)
    );
}

/// Loading replays transactional batches as pending offsets and markers in
/// log order: committed and aborted transactions end as they did, and a
/// transaction still open at the end of the log stays pending (and is
/// committed by a marker arriving after the load).
#[test]
fn load_replays_pending_offsets_and_markers_in_log_order() {
    let mut h = Harness::new();
    let mut log = Vec::new();
    h.commit("", -1, None, &[("orders", 0, 1)]);
    h.txn_commit_as(PRODUCER, "", -1, &[("orders", 0, 10)]);
    h.txn_commit_as(PRODUCER + 1, "", -1, &[("orders", 1, 20)]);
    h.ack_all_logged(&mut log);
    h.marker(&mut log, PRODUCER + 1, false);
    h.txn_commit_as(PRODUCER + 2, "", -1, &[("orders", 2, 30)]);
    h.ack_all_logged(&mut log);
    h.marker(&mut log, PRODUCER + 2, true);
    // PRODUCER's transaction is still open.

    let mut reloaded = replay_log(&log);
    let fetch = |c: &GroupCoordinator, partition: i32, require_stable: bool| {
        let response = c.offset_fetch(&OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: GROUP.to_string(),
                member: None,
                topics: Some(vec![OffsetFetchTopic {
                    name: "orders".to_string(),
                    partition_indexes: vec![partition],
                }]),
            }],
            require_stable,
        });
        let p = &response.groups[0].topics[0].partitions[0];
        (p.committed_offset, p.error)
    };
    assert_eq!(fetch(&reloaded, 0, false), (1, None));
    assert_eq!(
        fetch(&reloaded, 0, true),
        (-1, Some(ErrorCode::UnstableOffsetCommit))
    );
    assert_eq!(fetch(&reloaded, 1, true), (-1, None), "aborted");
    assert_eq!(fetch(&reloaded, 2, true), (30, None), "committed");
    assert_eq!(reloaded.pending_txn_producers(), 1);
    assert_eq!(
        reloaded.pending_txn_offset(PRODUCER, GROUP, "orders", 0),
        Some(10)
    );

    reloaded.on_txn_marker(0, PRODUCER, true);
    assert_eq!(fetch(&reloaded, 0, true), (10, None));
}

/// TxnOffsetCommit's group checks (Kafka's transactional
/// `validateOffsetCommit`): v0-v2 requests without member and generation
/// are accepted even while the group has members; v3 requests are checked
/// for member and generation; an unknown group with a generation is
/// ILLEGAL_GENERATION; an empty group id is INVALID_GROUP_ID.
#[test]
fn txn_commit_member_and_generation_checks() {
    let mut h = Harness::new();
    let members = h.stable_group_of_three();

    let anonymous = h.txn_commit_as(PRODUCER, "", -1, &[("orders", 0, 1)]);
    h.ack_all();
    assert_eq!(h.txn_errors(anonymous), Some(vec![None]));

    let good = h.txn_commit_as(PRODUCER, &members[0], 1, &[("orders", 0, 2)]);
    h.ack_all();
    assert_eq!(h.txn_errors(good), Some(vec![None]));

    let stale = h.txn_commit_as(PRODUCER, &members[0], 0, &[("orders", 0, 3)]);
    assert_eq!(
        h.txn_errors(stale),
        Some(vec![Some(ErrorCode::IllegalGeneration)])
    );
    let stranger = h.txn_commit_as(PRODUCER, "nobody", 1, &[("orders", 0, 3)]);
    assert_eq!(
        h.txn_errors(stranger),
        Some(vec![Some(ErrorCode::UnknownMemberId)])
    );
    assert!(h.appends.is_empty(), "refused commits write nothing");

    let mut other = Harness::new();
    let unknown_group = other.txn_commit_as(PRODUCER, "m", 3, &[("orders", 0, 3)]);
    assert_eq!(
        other.txn_errors(unknown_group),
        Some(vec![Some(ErrorCode::IllegalGeneration)])
    );
    assert_eq!(other.coordinator.group_count(), 0);
    let created = other.txn_commit(&[("orders", 0, 3)]);
    assert_eq!(other.state(), (GroupState::Empty, 0), "a simple group");
    other.ack_all();
    assert_eq!(other.txn_errors(created), Some(vec![None]));

    let request_id = other.request_id();
    let outcome = other.coordinator.txn_offset_commit(
        0,
        request_id,
        TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: String::new(),
            producer_id: PRODUCER,
            producer_epoch: 0,
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            topics: vec![OffsetCommitTopic {
                name: "orders".into(),
                partitions: vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: 1,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                }],
            }],
        },
    );
    let response = outcome.reply.ready().expect("answered at once");
    assert_eq!(
        response.topics[0].partitions[0].error,
        Some(ErrorCode::InvalidGroupId)
    );
}

/// A failed append (the partition refused the producer's epoch) answers
/// that error and leaves nothing pending.
#[test]
fn refused_txn_append_answers_its_error_and_leaves_nothing_pending() {
    let mut h = Harness::new();
    let txn = h.txn_commit(&[("orders", 0, 10)]);
    let append = h.appends.pop_front().expect("one append");
    let effects =
        h.coordinator
            .append_completed(h.now_ms, append.id, Err(ErrorCode::InvalidProducerEpoch));
    h.absorb(effects);
    assert_eq!(
        h.txn_errors(txn),
        Some(vec![Some(ErrorCode::InvalidProducerEpoch)])
    );
    assert_eq!(h.coordinator.pending_txn_producers(), 0);
    assert_eq!(h.fetch_stable("orders", 0, true), (-1, None));
}

/// Deleting an Empty group writes tombstones for partitions that only
/// have pending transactional offsets too (Kafka's `deleteAllOffsets`);
/// once durable, the pending offsets are gone and a later COMMIT marker
/// brings nothing back. OffsetDelete tombstones a pending-only partition.
#[test]
fn deleting_a_group_or_its_offsets_removes_pending_txn_offsets() {
    let mut h = Harness::new();
    h.commit("", -1, None, &[("orders", 0, 5)]);
    h.txn_commit(&[("orders", 0, 10), ("orders", 1, 11)]);
    h.ack_all();

    let request_id = h.request_id();
    let outcome = h
        .coordinator
        .delete_groups(h.now_ms, request_id, &[GROUP.to_string()]);
    h.absorb_reply(request_id, outcome, Response::DeleteGroups);
    let tombstoned: Vec<(String, i32)> = h.appends[0]
        .records
        .iter()
        .filter_map(|r| match r {
            CoordinatorRecord::OffsetCommit { key, value: None } => {
                Some((key.topic.clone(), key.partition))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        tombstoned,
        vec![("orders".to_string(), 0), ("orders".to_string(), 1)]
    );
    h.ack_all();
    assert_eq!(h.coordinator.pending_txn_producers(), 0);
    h.coordinator.on_txn_marker(h.now_ms, PRODUCER, true);
    assert_eq!(h.coordinator.group_count(), 0);

    let mut h = Harness::new();
    h.txn_commit(&[("payments", 3, 10)]);
    h.ack_all();
    let request_id = h.request_id();
    let outcome = h.coordinator.offset_delete(
        h.now_ms,
        request_id,
        &OffsetDeleteRequest {
            group_id: GROUP.to_string(),
            topics: vec![OffsetFetchTopic {
                name: "payments".into(),
                partition_indexes: vec![3],
            }],
        },
    );
    assert_eq!(outcome.reply, Reply::Pending);
    h.absorb_reply(request_id, outcome, Response::OffsetDelete);
    h.ack_all();
    assert_eq!(h.coordinator.pending_txn_producers(), 0);
}

/// An offset whose partition has a pending transactional offset does not
/// expire, and a group with open transactions is not deleted by the sweep;
/// once the transaction ends, the usual expiry applies.
#[test]
fn pending_txn_offsets_hold_back_expiry_of_their_partition_and_group() {
    let mut h = Harness::new();
    h.commit("", -1, None, &[("orders", 0, 5)]);
    h.ack_all();
    h.txn_commit(&[("orders", 0, 10)]);
    h.ack_all();
    let retention_ms = GroupConfig::default().offsets_retention_ms;
    h.advance(retention_ms + 600_000);
    assert!(h.appends.is_empty(), "nothing expires while pending");
    assert_eq!(h.fetch_stable("orders", 0, false), (5, None));
    assert_eq!(h.coordinator.group_count(), 1);

    h.coordinator.on_txn_marker(h.now_ms, PRODUCER, false);
    h.advance(600_000);
    h.ack_all();
    assert_eq!(h.fetch_stable("orders", 0, false), (-1, None));
    assert_eq!(h.coordinator.group_count(), 0);
}

/// Unloading answers a TxnOffsetCommit waiting for its append with
/// NOT_COORDINATOR and forgets the pending offsets.
#[test]
fn unload_answers_waiting_txn_commits_and_forgets_pending_offsets() {
    let mut h = Harness::new();
    h.txn_commit(&[("orders", 0, 1)]);
    h.ack_all();
    let waiting = h.txn_commit(&[("orders", 1, 2)]);
    let effects = h.coordinator.unload();
    h.absorb(effects);
    h.appends.clear();
    assert_eq!(
        h.txn_errors(waiting),
        Some(vec![Some(ErrorCode::NotCoordinator)])
    );
    assert_eq!(h.coordinator.pending_txn_producers(), 0);
}

/// A marker that arrives while the producer's TxnOffsetCommit append is
/// written but not yet acknowledged (a timed-out transaction aborted
/// meanwhile) is applied once the append is acknowledged, so nothing stays
/// pending after the transaction ended; markers of other producers are not
/// held back.
#[test]
fn marker_arriving_before_the_txn_append_is_acknowledged_waits_for_it() {
    let mut h = Harness::new();
    h.txn_commit_as(PRODUCER + 1, "", -1, &[("orders", 1, 21)]);
    h.ack_all();
    let txn = h.txn_commit(&[("orders", 0, 10)]);
    h.coordinator.on_txn_marker(h.now_ms, PRODUCER, false);
    h.coordinator.on_txn_marker(h.now_ms, PRODUCER + 1, true);
    assert_eq!(
        h.fetch_stable("orders", 1, true),
        (21, None),
        "not held back"
    );
    h.ack_all();
    assert_eq!(h.txn_errors(txn), Some(vec![None]));
    assert_eq!(h.coordinator.pending_txn_producers(), 0);
    assert_eq!(h.fetch_stable("orders", 0, true), (-1, None));

    let txn = h.txn_commit(&[("orders", 0, 12)]);
    h.coordinator.on_txn_marker(h.now_ms, PRODUCER, true);
    h.ack_all();
    assert_eq!(h.txn_errors(txn), Some(vec![None]));
    assert_eq!(h.fetch_stable("orders", 0, true), (12, None));
}
