//! One KIP-848 consumer group's membership: members with their
//! subscriptions and epochs, the group epoch, the target assignment the
//! server-side assignor computed, and each member's reconciliation towards
//! it (Kafka's `ConsumerGroup`, `ConsumerGroupMember` and
//! `CurrentAssignmentBuilder`).
//!
//! The rules, as in Kafka 4.x:
//! - Anything that changes what the group consumes (a member joins or
//!   leaves, a subscription changes, a subscribed topic gains partitions or
//!   appears or disappears) bumps the group epoch; the target assignment is
//!   then recomputed at that epoch.
//! - A member moves to the target epoch only once it has given up (stopped
//!   reporting as owned) the partitions the target takes away from it; until
//!   then it is in UNREVOKED_PARTITIONS at its old epoch.
//! - A partition is handed to its new owner only once its previous owner
//!   has released it (UNRELEASED_PARTITIONS meanwhile).
//!
//! Pure state: the coordinator ([`super::coordinator`]) drives it, with
//! timers and records.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use uuid::Uuid;

use super::api::JoinProtocol;
use super::assignor::{self, Assignment};
use super::records::{ClassicMemberValue, ConsumerMemberValue, CurrentAssignmentValue};

/// The member epoch a member sends to leave the group.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The member epoch a static member sends to leave temporarily (it keeps
/// its assignment until its session times out).
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// What the group knows of the cluster's topics.
pub trait TopicsView {
    /// A number that changes whenever any topic changes.
    fn version(&self) -> u64;
    /// Topic id and partition count of topic `name`.
    fn topic(&self, name: &str) -> Option<(Uuid, i32)>;
    /// Name of topic `id`.
    fn topic_name(&self, id: &Uuid) -> Option<String>;
    /// Every topic name, internal ones included (for regular expressions).
    fn names(&self) -> Vec<String>;
}

/// A fixed set of topics (name to id and partition count) at a version.
#[derive(Debug, Clone, Default)]
pub struct TopicsSnapshot(pub BTreeMap<String, (Uuid, i32)>, pub u64);

impl TopicsView for TopicsSnapshot {
    fn version(&self) -> u64 {
        self.1
    }
    fn topic(&self, name: &str) -> Option<(Uuid, i32)> {
        self.0.get(name).copied()
    }
    fn topic_name(&self, id: &Uuid) -> Option<String> {
        self.0
            .iter()
            .find(|(_, t)| t.0 == *id)
            .map(|(n, _)| n.clone())
    }
    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

/// Where a member is in reconciling towards its target assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// At the target epoch with everything it may have.
    Stable,
    /// Must revoke partitions before moving on.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions others still own.
    UnreleasedPartitions,
}

/// One member of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMember {
    /// `member_id`.
    pub member_id: String,
    /// `instance_id` (static membership).
    pub instance_id: Option<String>,
    /// `rack_id`.
    pub rack_id: Option<String>,
    /// The client id of its last heartbeat.
    pub client_id: String,
    /// Its address as Kafka prints it (`/127.0.0.1`).
    pub client_host: String,
    /// `rebalance_timeout_ms`: how long it has to revoke partitions.
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names, sorted.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regular expression (v1).
    pub subscribed_topic_regex: Option<String>,
    /// Preferred server assignor.
    pub server_assignor: Option<String>,
    /// Reconciliation state.
    pub state: MemberState,
    /// Current epoch; [`LEAVE_GROUP_STATIC_MEMBER_EPOCH`] for a static member
    /// that left temporarily.
    pub member_epoch: i32,
    /// The epoch before the current one.
    pub previous_member_epoch: i32,
    /// Partitions it owns and may consume.
    pub assigned: Assignment,
    /// Partitions it still owns but must give up.
    pub pending_revocation: Assignment,
    /// Set for a member that speaks the classic protocol (JoinGroup,
    /// SyncGroup, Heartbeat): its session timeout and its JoinGroup's
    /// protocols.
    pub classic: Option<ClassicMemberValue>,
}

impl ConsumerMember {
    /// A member that has not been reconciled yet.
    pub fn new(member_id: &str) -> Self {
        ConsumerMember {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: None,
            server_assignor: None,
            state: MemberState::Stable,
            member_epoch: 0,
            previous_member_epoch: -1,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
            classic: None,
        }
    }

    /// The protocol a classic member was told it uses: the first it named.
    pub fn classic_protocol(&self) -> Option<&JoinProtocol> {
        self.classic.as_ref()?.supported_protocols.first()
    }

    /// Whether it reports, in `owned` (None: not reported), any partition
    /// of `partitions`. Not reporting counts as still owning them.
    fn owns_any(owned: Option<&Assignment>, partitions: &Assignment) -> bool {
        let Some(owned) = owned else { return true };
        owned.iter().any(|(topic, set)| {
            partitions
                .get(topic)
                .is_some_and(|revoking| !revoking.is_disjoint(set))
        })
    }
}

/// A consumer group's membership.
#[derive(Debug, Clone, Default)]
pub struct ConsumerGroup {
    /// The group epoch.
    pub group_epoch: i32,
    /// The epoch of the target assignment.
    pub target_epoch: i32,
    /// Members by id.
    pub members: BTreeMap<String, ConsumerMember>,
    /// Static members: instance id to member id.
    pub static_members: HashMap<String, String>,
    /// The target assignment by member id.
    pub target: BTreeMap<String, Assignment>,
    /// Which member owns each partition (assigned or pending revocation).
    owners: HashMap<(Uuid, i32), String>,
    /// Subscribed topics when the target was last computed: name to (id,
    /// partitions).
    pub subscription_metadata: BTreeMap<String, (Uuid, i32)>,
    /// [`metadata_hash`] of `subscription_metadata`, kept in the group's
    /// record so that a reloaded group knows whether topics changed.
    pub metadata_hash: i64,
    /// The topics' version `subscription_metadata` was read at.
    metadata_version: Option<u64>,
    /// Resolved regular expressions: regex to (topics version, names).
    regexes: HashMap<String, (u64, BTreeSet<String>)>,
    /// Each member's epoch as its last durable assignment record has it:
    /// the group as Kafka's reads at the last committed offset see it.
    /// `members` runs ahead of it while appends are in flight.
    pub durable_epochs: HashMap<String, i32>,
    /// Whether the group's metadata record is durable: until it is, Kafka's
    /// reads at the last committed offset do not see a consumer group.
    pub durable: bool,
    /// Members whose assignment record failed to be written: the next
    /// heartbeat writes it again (Kafka would have rolled the member back).
    pub unwritten: HashSet<String>,
}

/// Most compiled subscription regexes a shard keeps (each up to 1 MiB of
/// program and a 256 KiB matching cache).
const COMPILED_REGEXES_MAX: usize = 64;

thread_local! {
    /// This shard's compiled subscription regexes, most recently used
    /// kept: those heartbeats brought compiled off the reactor, so topic
    /// changes resolve them again without compiling.
    static COMPILED_REGEXES: std::cell::RefCell<CompiledRegexes> =
        std::cell::RefCell::new(CompiledRegexes::default());
}

/// A bounded map of compiled regexes, by source, with when each was last
/// used.
#[derive(Default)]
struct CompiledRegexes {
    entries: HashMap<String, (regex::Regex, u64)>,
    clock: u64,
}

impl CompiledRegexes {
    fn get(&mut self, source: &str) -> Option<regex::Regex> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(source).map(|(re, used)| {
            *used = clock;
            re.clone()
        })
    }

    fn insert(&mut self, source: &str, re: regex::Regex) {
        self.clock += 1;
        if !self.entries.contains_key(source) && self.entries.len() >= COMPILED_REGEXES_MAX {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(source.to_string(), (re, self.clock));
    }
}

/// Keeps a heartbeat's compiled regex (when valid) on this shard.
pub fn remember_compiled_regex(regex: &CompiledRegex) {
    if let Ok(compiled) = &regex.compiled {
        COMPILED_REGEXES.with(|c| c.borrow_mut().insert(&regex.source, compiled.clone()));
    }
}

/// `source` compiled: kept from a heartbeat, else compiled here (a group
/// read back from its records, or a regex pushed out of the bound) and
/// kept; None when it is not valid.
fn compiled_regex(source: &str) -> Option<regex::Regex> {
    if let Some(re) = COMPILED_REGEXES.with(|c| c.borrow_mut().get(source)) {
        return Some(re);
    }
    let re = compile_regex(source).ok()?;
    COMPILED_REGEXES.with(|c| c.borrow_mut().insert(source, re.clone()));
    Some(re)
}

/// A subscription regex as a heartbeat brought it, compiled (off the
/// reactor) before it reaches the coordinator: a 16 KiB pattern of
/// case-folded Unicode classes takes a fraction of a second to compile.
#[derive(Debug, Clone)]
pub struct CompiledRegex {
    /// The expression.
    pub source: String,
    /// [`compile_regex`]'s answer for it.
    pub compiled: Result<regex::Regex, String>,
}

impl CompiledRegex {
    /// Compiles `source` on a blocking thread.
    pub async fn off_reactor(source: String) -> CompiledRegex {
        glommio::executor()
            .spawn_blocking(move || {
                let compiled = compile_regex(&source);
                CompiledRegex { source, compiled }
            })
            .await
    }
}

/// Equal when the expressions are: compiling is deterministic.
impl PartialEq for CompiledRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for CompiledRegex {}

/// A 64-bit FNV-1a hash of subscribed topics (names, ids, partition
/// counts), never 0 (0 means "no hash" in the record).
pub fn metadata_hash(metadata: &BTreeMap<String, (Uuid, i32)>) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, (id, partitions)) in metadata {
        eat(name.as_bytes());
        eat(&[0]);
        eat(id.as_bytes());
        eat(&partitions.to_be_bytes());
    }
    match hash as i64 {
        0 => 1,
        h => h,
    }
}

/// Compiles a subscription regex as Kafka's RE2J `matches()` reads it (the
/// whole topic name must match); the error says why it is not valid.
pub fn compile_regex(regex: &str) -> Result<regex::Regex, String> {
    if regex.len() > REGEX_LENGTH_MAX {
        return Err(format!("longer than {REGEX_LENGTH_MAX} bytes"));
    }
    // The expression alone first: wrapped, `a)|(b` would parse.
    let build = |pattern: &str| {
        regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .dfa_size_limit(256 << 10)
            .nest_limit(100)
            .build()
            .map_err(|e| e.to_string())
    };
    build(regex)?;
    build(&format!("^(?:{regex})$"))
}

/// Longest subscription regex accepted (Kafka has no bound; no topic name
/// is longer than 249 characters).
pub const REGEX_LENGTH_MAX: usize = 16 * 1024;

impl ConsumerGroup {
    /// Whether the group has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Kafka's state name: Empty, Assigning, Reconciling or Stable.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.group_epoch != self.target_epoch {
            "Assigning"
        } else if self
            .members
            .values()
            .any(|m| m.member_epoch != self.target_epoch || m.state != MemberState::Stable)
        {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// The topic names `member` subscribes to: its names, then what its
    /// regex matched (possibly both the same name).
    fn topics_of<'a>(&'a self, member: &'a ConsumerMember) -> impl Iterator<Item = &'a String> {
        let matched = member
            .subscribed_topic_regex
            .as_ref()
            .and_then(|regex| self.regexes.get(regex))
            .map(|(_, names)| names);
        member
            .subscribed_topic_names
            .iter()
            .chain(matched.into_iter().flatten())
    }

    /// Every topic name a member subscribes to (names and regex matches).
    pub fn subscribed_topic_names(&self) -> BTreeSet<String> {
        self.members
            .values()
            .flat_map(|m| self.topics_of(m))
            .cloned()
            .collect()
    }

    /// Whether a member subscribes to `topic`, by name or regex.
    pub fn subscribes_to(&self, topic: &str) -> bool {
        self.members
            .values()
            .any(|m| self.topics_of(m).any(|t| t == topic))
    }

    /// Resolves the members' regular expressions against `topics` where the
    /// topics changed since; returns whether any resolution changed.
    pub fn refresh_regexes(&mut self, topics: &dyn TopicsView) -> bool {
        let wanted: BTreeSet<&String> = self
            .members
            .values()
            .filter_map(|m| m.subscribed_topic_regex.as_ref())
            .collect();
        let before = self.regexes.len();
        self.regexes.retain(|regex, _| wanted.contains(regex));
        let mut changed = before != self.regexes.len();
        let version = topics.version();
        let mut names: Option<Vec<String>> = None;
        for regex in wanted {
            if self.regexes.get(regex).is_some_and(|(v, _)| *v == version) {
                continue;
            }
            let all = names.get_or_insert_with(|| topics.names());
            let matched: BTreeSet<String> = match compiled_regex(regex) {
                Some(re) => all.iter().filter(|n| re.is_match(n)).cloned().collect(),
                None => BTreeSet::new(),
            };
            // A first resolution is no change: the member's new regex (or
            // the reloaded group's topic hash) already accounts for it.
            let previous = self
                .regexes
                .insert(regex.clone(), (version, matched.clone()));
            if previous.is_some_and(|(_, m)| m != matched) {
                changed = true;
            }
        }
        changed
    }

    /// Re-reads the subscribed topics' ids and partition counts; returns
    /// whether they changed (by their hash, so that a group reloaded from
    /// its records, which keep only the hash, sees a change made while the
    /// broker was down). Skipped while the topics did not change.
    pub fn refresh_subscription_metadata(&mut self, topics: &dyn TopicsView, force: bool) -> bool {
        let version = topics.version();
        if !force && self.metadata_version == Some(version) {
            return false;
        }
        self.metadata_version = Some(version);
        let metadata: BTreeMap<String, (Uuid, i32)> = self
            .subscribed_topic_names()
            .into_iter()
            .filter_map(|name| topics.topic(&name).map(|t| (name, t)))
            .collect();
        let hash = metadata_hash(&metadata);
        self.subscription_metadata = metadata;
        if hash == self.metadata_hash {
            return false;
        }
        self.metadata_hash = hash;
        true
    }

    /// The assignor the group uses, of those `offered`
    /// (`group.consumer.assignors`): the one most members prefer, else the
    /// first offered. Ties go to the earlier in [`assignor::ASSIGNORS`]
    /// whatever the configured order, as Kafka's `HashMap` of votes gives
    /// them to `uniform`.
    pub fn preferred_assignor(&self, offered: &[&str]) -> String {
        let mut votes: BTreeMap<usize, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = &member.server_assignor {
                if offered.contains(&name.as_str()) {
                    if let Some(i) = assignor::ASSIGNORS.iter().position(|a| a == name) {
                        *votes.entry(i).or_default() += 1;
                    }
                }
            }
        }
        match votes.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) {
            Some((&i, _)) => assignor::ASSIGNORS[i].to_string(),
            None => offered.first().copied().unwrap_or("uniform").to_string(),
        }
    }

    /// Recomputes the target assignment at the group epoch; returns the
    /// members whose target changed.
    pub fn compute_target(&mut self, offered: &[&str]) -> Vec<String> {
        let ids_by_name = &self.subscription_metadata;
        let subscriptions: BTreeMap<String, BTreeSet<Uuid>> = self
            .members
            .values()
            .map(|m| {
                let ids = self
                    .topics_of(m)
                    .filter_map(|n| ids_by_name.get(n).map(|t| t.0))
                    .collect();
                (m.member_id.clone(), ids)
            })
            .collect();
        let partitions: BTreeMap<Uuid, i32> = ids_by_name.values().copied().collect();
        let assignor = self.preferred_assignor(offered);
        let instance_ids: BTreeMap<String, String> = self
            .members
            .values()
            .filter_map(|m| Some((m.member_id.clone(), m.instance_id.clone()?)))
            .collect();
        let target = assignor::assign(
            &assignor,
            &subscriptions,
            &partitions,
            &self.target,
            &instance_ids,
        );
        let changed = target
            .iter()
            .filter(|(member, a)| self.target.get(*member) != Some(a))
            .map(|(member, _)| member.clone())
            .collect();
        self.target = target;
        self.target_epoch = self.group_epoch;
        changed
    }

    /// The member owning a partition (assigned or pending revocation);
    /// None when it is free.
    fn owner_of(&self, topic: Uuid, partition: i32) -> Option<&String> {
        self.owners.get(&(topic, partition))
    }

    /// Stores `member`, replacing the one with its id, and keeps the
    /// partition owners in step.
    pub fn put_member(&mut self, member: ConsumerMember) {
        self.release_partitions(&member.member_id);
        for (topic, set) in member
            .assigned
            .iter()
            .chain(member.pending_revocation.iter())
        {
            for &p in set {
                self.owners.insert((*topic, p), member.member_id.clone());
            }
        }
        // An instance id the member no longer has is free again.
        let old_instance = self
            .members
            .get(&member.member_id)
            .and_then(|old| old.instance_id.clone())
            .filter(|old| member.instance_id.as_ref() != Some(old));
        if let Some(old) = old_instance {
            if self.static_members.get(&old) == Some(&member.member_id) {
                self.static_members.remove(&old);
            }
        }
        if let Some(instance_id) = &member.instance_id {
            self.static_members
                .insert(instance_id.clone(), member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    fn release_partitions(&mut self, member_id: &str) {
        if let Some(old) = self.members.get(member_id) {
            for (topic, set) in old.assigned.iter().chain(old.pending_revocation.iter()) {
                for p in set {
                    if self.owners.get(&(*topic, *p)).map(String::as_str) == Some(member_id) {
                        self.owners.remove(&(*topic, *p));
                    }
                }
            }
        }
    }

    /// Kafka's `supportsClassicProtocols`: a classic member may join with
    /// protocol type `consumer` and, in a group with classic members, one
    /// protocol (assignor) name they all support.
    pub fn supports_classic_protocols(&self, protocol_type: &str, names: &[&str]) -> bool {
        if protocol_type != super::consumer_protocol::CONSUMER_PROTOCOL_TYPE {
            return false;
        }
        let classic: Vec<&ClassicMemberValue> = self
            .members
            .values()
            .filter_map(|m| m.classic.as_ref())
            .collect();
        if self.members.is_empty() {
            return !names.is_empty();
        }
        names.iter().any(|name| {
            classic
                .iter()
                .all(|c| c.supported_protocols.iter().any(|p| &p.name == name))
        })
    }

    /// Kafka's `waitingOnUnreleasedPartition`: a member waiting for
    /// partitions of its target that another member still owns.
    pub fn waiting_on_unreleased(&self, member: &ConsumerMember) -> bool {
        if member.state != MemberState::UnreleasedPartitions {
            return false;
        }
        let Some(target) = self.target.get(&member.member_id) else {
            return false;
        };
        target.iter().any(|(topic, set)| {
            set.iter().any(|p| {
                !member.assigned.get(topic).is_some_and(|a| a.contains(p))
                    && self.owner_of(*topic, *p).is_some()
            })
        })
    }

    /// Removes a member, releasing its partitions.
    pub fn remove_member(&mut self, member_id: &str) -> Option<ConsumerMember> {
        self.release_partitions(member_id);
        let member = self.members.remove(member_id)?;
        if let Some(instance_id) = &member.instance_id {
            if self.static_members.get(instance_id).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance_id);
            }
        }
        self.target.remove(member_id);
        Some(member)
    }

    /// Kafka's `ConsumerGroup.validateOffsetCommit`: a commit without a
    /// member (epoch < 0; an admin tool or manual assignment) is accepted
    /// while the group has no members (transactional ones always); else the
    /// member must exist (UNKNOWN_MEMBER_ID), commit with OffsetCommit v9+
    /// (UNSUPPORTED_VERSION) unless it is a classic member, and at its epoch
    /// (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for TxnOffsetCommit and
    /// classic members, whose generation is their epoch). `api_version` is
    /// None for TxnOffsetCommit.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
        api_version: Option<i16>,
    ) -> Result<(), crate::protocol::ErrorCode> {
        use crate::protocol::ErrorCode;
        let transactional = api_version.is_none();
        if (member_epoch < 0 && self.members.is_empty())
            || (transactional && member_epoch == -1 && member_id.is_empty())
        {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(ErrorCode::UnknownMemberId)?;
        let classic = member.classic.is_some();
        if !classic && api_version.is_some_and(|v| v < 9) {
            return Err(ErrorCode::UnsupportedVersion);
        }
        if member_epoch != member.member_epoch {
            return Err(if transactional || classic {
                ErrorCode::IllegalGeneration
            } else {
                ErrorCode::StaleMemberEpoch
            });
        }
        Ok(())
    }

    /// Kafka's `ConsumerGroup.validateOffsetFetch`: a member fetching its
    /// offsets (OffsetFetch v9+) must exist at that epoch (STALE_MEMBER_EPOCH;
    /// ILLEGAL_GENERATION for a classic member).
    ///
    /// `durable` checks against the epochs the log holds (Kafka's read at
    /// the last committed offset, for OffsetFetch without
    /// `require_stable`), else against the newest ones.
    pub fn validate_offset_fetch(
        &self,
        member_id: &str,
        member_epoch: i32,
        durable: bool,
    ) -> Result<(), crate::protocol::ErrorCode> {
        use crate::protocol::ErrorCode;
        if durable && !self.durable {
            // Not a consumer group yet in what is durable: Kafka's read
            // there finds no group (or a classic one) and checks nothing.
            return Ok(());
        }
        let member = self.members.get(member_id);
        let epoch = if durable {
            self.durable_epochs.get(member_id).copied()
        } else {
            member.map(|m| m.member_epoch)
        };
        let epoch = epoch.ok_or(ErrorCode::UnknownMemberId)?;
        if member_epoch != epoch {
            return Err(if member.is_some_and(|m| m.classic.is_some()) {
                ErrorCode::IllegalGeneration
            } else {
                ErrorCode::StaleMemberEpoch
            });
        }
        Ok(())
    }

    /// Notes a durable record of the group: its metadata record makes the
    /// group durable, an assignment record sets its member's durable epoch,
    /// its tombstone removes it.
    pub fn record_durable(
        &mut self,
        key: &super::records::ConsumerGroupKey,
        value: Option<&super::records::ConsumerGroupValue>,
    ) {
        use super::records::{
            ConsumerGroupValue, CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE,
            CONSUMER_GROUP_METADATA_KEY_TYPE,
        };
        if key.record_type == CONSUMER_GROUP_METADATA_KEY_TYPE {
            self.durable = value.is_some();
            return;
        }
        if key.record_type != CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE {
            return;
        }
        let Some(member_id) = &key.member_id else {
            return;
        };
        match value {
            Some(ConsumerGroupValue::CurrentAssignment(assignment)) => {
                self.durable_epochs
                    .insert(member_id.clone(), assignment.member_epoch);
            }
            _ => {
                self.durable_epochs.remove(member_id);
            }
        }
    }

    /// Kafka's `CurrentAssignmentBuilder.build`: the member's next state
    /// given its target and the partitions it reports as owned (`owned`,
    /// None when not reported).
    pub fn reconcile(&self, member: &ConsumerMember, owned: Option<&Assignment>) -> ConsumerMember {
        match member.state {
            MemberState::Stable if member.member_epoch == self.target_epoch => member.clone(),
            MemberState::Stable | MemberState::UnreleasedPartitions => {
                self.next_assignment(member, member.member_epoch, owned)
            }
            MemberState::UnrevokedPartitions => {
                if ConsumerMember::owns_any(owned, &member.pending_revocation) {
                    return member.clone();
                }
                let epoch = (member.member_epoch + 1).min(self.target_epoch);
                let mut revoked = member.clone();
                revoked.pending_revocation.clear();
                // The partitions given up are free for others from now on.
                self.next_assignment(&revoked, epoch, owned)
            }
        }
    }

    /// Kafka's `computeNextAssignment`.
    fn next_assignment(
        &self,
        member: &ConsumerMember,
        member_epoch: i32,
        owned: Option<&Assignment>,
    ) -> ConsumerMember {
        let empty = BTreeSet::new();
        let target = self.target.get(&member.member_id);
        let mut topics: BTreeSet<Uuid> = member.assigned.keys().copied().collect();
        if let Some(t) = target {
            topics.extend(t.keys().copied());
        }
        let mut keep = Assignment::new();
        let mut revoke = Assignment::new();
        let mut add = Assignment::new();
        let mut unreleased = false;
        for topic in topics {
            let wanted = target.and_then(|t| t.get(&topic)).unwrap_or(&empty);
            let current = member.assigned.get(&topic).unwrap_or(&empty);
            let kept: BTreeSet<i32> = current.intersection(wanted).copied().collect();
            let revoking: BTreeSet<i32> = current.difference(&kept).copied().collect();
            let mut adding = BTreeSet::new();
            for &p in wanted.difference(&kept) {
                match self.owner_of(topic, p) {
                    Some(owner) if owner != &member.member_id => unreleased = true,
                    _ => {
                        adding.insert(p);
                    }
                }
            }
            if !kept.is_empty() {
                keep.insert(topic, kept);
            }
            if !revoking.is_empty() {
                revoke.insert(topic, revoking);
            }
            if !adding.is_empty() {
                add.insert(topic, adding);
            }
        }
        let mut next = member.clone();
        if !revoke.is_empty() && ConsumerMember::owns_any(owned, &revoke) {
            next.state = MemberState::UnrevokedPartitions;
            next.set_epoch(member_epoch);
            next.assigned = keep;
            next.pending_revocation = revoke;
            return next;
        }
        for (topic, set) in add {
            keep.entry(topic).or_default().extend(set);
        }
        next.state = if unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        };
        next.set_epoch(self.target_epoch);
        next.assigned = keep;
        next.pending_revocation.clear();
        next
    }
}

impl MemberState {
    /// The state's number in Kafka's records.
    pub fn code(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
        }
    }

    /// The state of a record's number (unknown ones as Stable).
    pub fn from_code(code: i8) -> Self {
        match code {
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Stable,
        }
    }
}

impl ConsumerMember {
    /// Its `ConsumerGroupMemberMetadataValue`.
    pub fn metadata_value(&self) -> ConsumerMemberValue {
        ConsumerMemberValue {
            instance_id: self.instance_id.clone(),
            rack_id: self.rack_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            subscribed_topic_names: self.subscribed_topic_names.clone(),
            subscribed_topic_regex: self.subscribed_topic_regex.clone(),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            server_assignor: self.server_assignor.clone(),
            classic: self.classic.clone(),
        }
    }

    /// Takes the fields of a `ConsumerGroupMemberMetadataValue`.
    pub fn set_metadata(&mut self, value: &ConsumerMemberValue) {
        self.instance_id.clone_from(&value.instance_id);
        self.rack_id.clone_from(&value.rack_id);
        self.client_id.clone_from(&value.client_id);
        self.client_host.clone_from(&value.client_host);
        self.subscribed_topic_names
            .clone_from(&value.subscribed_topic_names);
        self.subscribed_topic_regex
            .clone_from(&value.subscribed_topic_regex);
        self.rebalance_timeout_ms = value.rebalance_timeout_ms;
        self.server_assignor.clone_from(&value.server_assignor);
        self.classic.clone_from(&value.classic);
    }

    /// Its `ConsumerGroupCurrentMemberAssignmentValue`.
    pub fn assignment_value(&self) -> CurrentAssignmentValue {
        CurrentAssignmentValue {
            member_epoch: self.member_epoch,
            previous_member_epoch: self.previous_member_epoch,
            state: self.state.code(),
            assigned: self.assigned.clone(),
            pending_revocation: self.pending_revocation.clone(),
        }
    }

    /// Takes the fields of a `ConsumerGroupCurrentMemberAssignmentValue`.
    pub fn set_assignment(&mut self, value: &CurrentAssignmentValue) {
        self.member_epoch = value.member_epoch;
        self.previous_member_epoch = value.previous_member_epoch;
        self.state = MemberState::from_code(value.state);
        self.assigned.clone_from(&value.assigned);
        self.pending_revocation
            .clone_from(&value.pending_revocation);
    }

    /// Kafka's `updateMemberEpoch`: the previous epoch is always the one
    /// before this update, even when the epoch stays.
    fn set_epoch(&mut self, epoch: i32) {
        self.previous_member_epoch = self.member_epoch;
        self.member_epoch = epoch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use TopicsSnapshot as Topics;

    fn member(id: &str, topics: &[&str]) -> ConsumerMember {
        let mut m = ConsumerMember::new(id);
        m.subscribed_topic_names = topics.iter().map(|t| t.to_string()).collect();
        m
    }

    fn count(a: &Assignment) -> usize {
        a.values().map(BTreeSet::len).sum()
    }

    /// A second member gets partitions only after the first one revoked
    /// them: the first stays at its epoch until it stops reporting them.
    #[test]
    fn partitions_move_only_after_revocation() {
        let t = Uuid::from_bytes([7; 16]);
        let topics = Topics([("t".to_string(), (t, 4))].into(), 1);
        let mut group = ConsumerGroup::default();
        group.put_member(member("a", &["t"]));
        group.group_epoch = 1;
        group.refresh_subscription_metadata(&topics, true);
        group.compute_target(assignor::ASSIGNORS);
        let a = group.reconcile(&group.members["a"], Some(&Assignment::new()));
        assert_eq!(
            (a.member_epoch, a.state, count(&a.assigned)),
            (1, MemberState::Stable, 4)
        );
        group.put_member(a.clone());

        group.put_member(member("b", &["t"]));
        group.group_epoch = 2;
        group.compute_target(assignor::ASSIGNORS);
        let b = group.reconcile(&group.members["b"], Some(&Assignment::new()));
        assert_eq!(b.member_epoch, 2);
        assert_eq!(b.state, MemberState::UnreleasedPartitions);
        assert!(b.assigned.is_empty());
        group.put_member(b);

        // a still owns all four: must revoke two, stays at epoch 1.
        let a2 = group.reconcile(&group.members["a"], Some(&a.assigned));
        assert_eq!(
            (a2.member_epoch, a2.state),
            (1, MemberState::UnrevokedPartitions)
        );
        assert_eq!((count(&a2.assigned), count(&a2.pending_revocation)), (2, 2));
        group.put_member(a2.clone());
        // Reporting them still owned changes nothing.
        assert_eq!(group.reconcile(&group.members["a"], Some(&a.assigned)), a2);
        // Once it reports only what it keeps, it moves to epoch 2.
        let a3 = group.reconcile(&group.members["a"], Some(&a2.assigned));
        assert_eq!(
            (a3.member_epoch, a3.state, count(&a3.assigned)),
            (2, MemberState::Stable, 2)
        );
        group.put_member(a3);
        let b2 = group.reconcile(&group.members["b"], Some(&Assignment::new()));
        assert_eq!(
            (b2.member_epoch, b2.state, count(&b2.assigned)),
            (2, MemberState::Stable, 2)
        );
        group.put_member(b2);
        assert_eq!(group.state_name(), "Stable");
    }

    #[test]
    fn regex_matches_whole_names_and_follows_topic_changes() {
        let mut group = ConsumerGroup::default();
        let mut m = ConsumerMember::new("a");
        m.subscribed_topic_regex = Some("orders-.*".into());
        group.put_member(m);
        let t1 = Topics(
            [
                ("orders-1".to_string(), (Uuid::from_bytes([1; 16]), 1)),
                ("xorders-2".to_string(), (Uuid::from_bytes([2; 16]), 1)),
            ]
            .into(),
            1,
        );
        // A first resolution is not a change by itself.
        assert!(!group.refresh_regexes(&t1));
        assert_eq!(
            group.subscribed_topic_names(),
            BTreeSet::from(["orders-1".to_string()])
        );
        assert!(!group.refresh_regexes(&t1));
        let mut t2 = Topics(t1.0.clone(), 2);
        t2.0.insert("orders-3".into(), (Uuid::from_bytes([3; 16]), 2));
        assert!(group.refresh_regexes(&t2));
        assert!(group.refresh_subscription_metadata(&t2, false));
        assert_eq!(group.subscription_metadata.len(), 2);
        assert!(compile_regex("(").is_err());
        assert!(compile_regex("a)|(b").is_err());
        assert!(compile_regex(&"a".repeat(REGEX_LENGTH_MAX + 1)).is_err());
    }

    /// Goal: a regex a heartbeat brought compiled is resolved from that
    /// compiled form, on later topic changes too, and the kept forms are
    /// bounded. Method: a compiled form that differs from its source
    /// (which compiling again would not give), then more regexes than the
    /// bound, after which it is compiled from its source.
    #[test]
    fn a_remembered_regex_is_resolved_without_compiling_it_again() {
        let mut group = ConsumerGroup::default();
        let mut m = ConsumerMember::new("a");
        m.subscribed_topic_regex = Some("orders-.*".into());
        group.put_member(m);
        remember_compiled_regex(&CompiledRegex {
            source: "orders-.*".into(),
            compiled: compile_regex("payments-.*"),
        });
        let mut topics = Topics(
            [
                ("orders-1".to_string(), (Uuid::from_bytes([1; 16]), 1)),
                ("payments-1".to_string(), (Uuid::from_bytes([2; 16]), 1)),
            ]
            .into(),
            1,
        );
        group.refresh_regexes(&topics);
        let only = |name: &str| BTreeSet::from([name.to_string()]);
        assert_eq!(group.subscribed_topic_names(), only("payments-1"));
        topics.0.remove("payments-1");
        topics.1 = 2;
        assert!(group.refresh_regexes(&topics));
        assert!(group.subscribed_topic_names().is_empty());
        // The kept regexes are bounded: the least recently used goes.
        for i in 0..COMPILED_REGEXES_MAX {
            let source = format!("t{i}");
            remember_compiled_regex(&CompiledRegex {
                compiled: compile_regex(&source),
                source,
            });
        }
        assert!(COMPILED_REGEXES.with(|c| c.borrow().entries.len()) == COMPILED_REGEXES_MAX);
        assert_eq!(
            compiled_regex("orders-.*").map(|re| re.is_match("orders-1")),
            Some(true)
        );
    }
}
