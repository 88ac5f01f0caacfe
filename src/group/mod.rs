//! The consumer-group coordinator for Kafka's classic group protocol
//! (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and the committed-offsets
//! store (OffsetCommit, OffsetFetch, OffsetDelete), plus the admin views
//! (ListGroups, DescribeGroups, DeleteGroups) and the group side of
//! transactions: TxnOffsetCommit writes a producer's offsets as its
//! transactional batch and keeps them pending until the transaction's marker
//! in the offsets partition commits or aborts them.
//!
//! Everything here is a deterministic state machine with no I/O: each
//! [`GroupCoordinator`] owns the groups of one `__consumer_offsets` partition
//! and lives on the shard that owns that partition (shard-local state, never
//! shared across cores). It takes requests and the time as inputs and returns
//! actions: records to append to the partition ([`Append`]), responses of
//! requests that were parked ([`Completion`]), and the next timer deadline.
//! The glommio shell (handlers, routing to the coordinator's shard, the log
//! append, timers) runs those actions; the simulator can run the same code.
//!
//! Files: [`records`] holds Kafka's exact `__consumer_offsets` key and value
//! encodings, [`api`] the request, response and effect types (and how
//! pending requests and appends work), [`coordinator`] the state machine,
//! `classic` one group's membership state, `timer` the deadline queue,
//! `txn_offsets` the pending transactional offsets,
//! [`consumer_protocol`] the few bytes of the embedded consumer protocol the
//! broker reads or writes.
//!
//! Behaviour follows Kafka 4.x's `GroupMetadataManager`,
//! `OffsetMetadataManager` and `ClassicGroup` (group-coordinator module);
//! where we differ, the code says so.

pub mod api;
pub mod assignor;
pub mod consumer;
pub mod consumer_protocol;
pub mod coordinator;
pub mod records;
pub mod service;

mod classic;
mod timer;
mod txn_offsets;

pub use api::*;
pub use classic::GroupState;
pub use coordinator::GroupCoordinator;
pub use records::{
    CoordinatorRecord, GroupMetadataKey, GroupMetadataValue, MemberMetadata, OffsetCommitKey,
    OffsetCommitValue, RecordError,
};

/// Groups one coordinator (one `__consumer_offsets` partition) creates at
/// most. Kafka has no such bound; with the default 50 offsets partitions this
/// allows a million groups per node. Loading from the log may exceed it (data
/// already written is never dropped); new groups are then refused with the
/// retriable COORDINATOR_NOT_AVAILABLE until empty groups expire.
pub const GROUPS_PER_COORDINATOR_MAX: usize = 20_000;

/// Hard bound on members of one group, and on the members that were handed a
/// member id but have not joined yet (KIP-394 pending members). Kafka's
/// `group.max.size` defaults to `Integer.MAX_VALUE`; ours defaults to this
/// and may only be lowered. Beyond it a join gets GROUP_MAX_SIZE_REACHED.
pub const GROUP_MEMBERS_MAX: usize = 10_000;

const _: () = assert!(GROUP_MEMBERS_MAX >= 1);
const _: () = assert!(GROUPS_PER_COORDINATOR_MAX >= 1);

/// Settings of the group coordinator. Field names follow Kafka's broker
/// configs; [`Default`] gives Kafka 4.x's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms`.
    pub session_timeout_ms_min: i32,
    /// `group.max.session.timeout.ms`.
    pub session_timeout_ms_max: i32,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an
    /// empty group waits for more members (extended while members arrive, up
    /// to the rebalance timeout).
    pub initial_rebalance_delay_ms: i32,
    /// How long a new member's JoinGroup may stay parked before the member is
    /// dropped (Kafka's fixed `CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`).
    pub new_member_join_timeout_ms: i32,
    /// `group.max.size`, at most [`GROUP_MEMBERS_MAX`].
    pub group_members_max: usize,
    /// `offset.metadata.max.bytes` (Kafka compares Java string length, i.e.
    /// UTF-16 code units; so do we).
    pub offset_metadata_max_bytes: usize,
    /// `offsets.retention.minutes`, in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: i64,
    /// `group.consumer.session.timeout.ms`: a KIP-848 member that sends no
    /// heartbeat for this long is removed.
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`: how often KIP-848 members
    /// are told to heartbeat.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`, at most [`GROUP_MEMBERS_MAX`].
    pub consumer_group_members_max: usize,
    /// `group.consumer.migration.policy`: whether classic groups of
    /// consumers become consumer groups when a KIP-848 member joins
    /// (upgrade) and back when only classic members remain (downgrade).
    pub migration_policy: MigrationPolicy,
    /// `group.consumer.assignors`: the server assignors members may name,
    /// each one of [`assignor::ASSIGNORS`]; the first is the default.
    pub consumer_assignors: Vec<&'static str>,
}

/// Kafka's `ConsumerGroupMigrationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigrationPolicy {
    /// Both ways (Kafka's default).
    #[default]
    Bidirectional,
    /// Classic to consumer group only.
    Upgrade,
    /// Consumer to classic group only.
    Downgrade,
    /// Neither.
    Disabled,
}

impl MigrationPolicy {
    /// Whether a classic group may become a consumer group.
    pub fn upgrades(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade
        )
    }

    /// Whether a consumer group may become a classic group.
    pub fn downgrades(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade
        )
    }

    /// Kafka's name of the policy.
    pub fn name(self) -> &'static str {
        match self {
            MigrationPolicy::Bidirectional => "bidirectional",
            MigrationPolicy::Upgrade => "upgrade",
            MigrationPolicy::Downgrade => "downgrade",
            MigrationPolicy::Disabled => "disabled",
        }
    }

    /// Kafka's `ConsumerGroupMigrationPolicy.parse`: a name in any case.
    pub fn parse(name: &str) -> Option<MigrationPolicy> {
        [
            MigrationPolicy::Bidirectional,
            MigrationPolicy::Upgrade,
            MigrationPolicy::Downgrade,
            MigrationPolicy::Disabled,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            session_timeout_ms_min: 6_000,
            session_timeout_ms_max: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            new_member_join_timeout_ms: 5 * 60 * 1000,
            group_members_max: GROUP_MEMBERS_MAX,
            offset_metadata_max_bytes: 4096,
            offsets_retention_ms: 10_080 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_group_members_max: GROUP_MEMBERS_MAX,
            migration_policy: MigrationPolicy::Bidirectional,
            consumer_assignors: assignor::ASSIGNORS.to_vec(),
        }
    }
}

impl GroupConfig {
    /// Panics when a setting is out of range; call once at start-up.
    ///
    /// # Panics
    /// If `group_members_max` is 0 or above [`GROUP_MEMBERS_MAX`], a timeout
    /// is negative, or the session timeout bounds are inverted.
    pub fn validate(&self) {
        assert!(self.group_members_max >= 1);
        assert!(self.group_members_max <= GROUP_MEMBERS_MAX);
        assert!(self.session_timeout_ms_min >= 0);
        assert!(self.session_timeout_ms_min <= self.session_timeout_ms_max);
        assert!(self.initial_rebalance_delay_ms >= 0);
        assert!(self.new_member_join_timeout_ms >= 0);
        assert!(self.offsets_retention_ms >= 0);
        assert!(self.offsets_retention_check_interval_ms >= 1);
        assert!(self.consumer_session_timeout_ms >= 1);
        assert!(self.consumer_heartbeat_interval_ms >= 1);
        assert!(self.consumer_group_members_max >= 1);
        assert!(self.consumer_group_members_max <= GROUP_MEMBERS_MAX);
        assert!(!self.consumer_assignors.is_empty());
    }
}

/// Java's `String.hashCode`: `h = 31 * h + c` over the UTF-16 code units,
/// wrapping at 32 bits.
pub fn java_string_hashcode(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The `__consumer_offsets` partition that holds group `group_id`, exactly as
/// Kafka places it: `Utils.abs(groupId.hashCode) % partitions`, where
/// `Utils.abs` maps `i32::MIN` to 0.
///
/// # Panics
/// If `partitions` is not positive.
pub fn offsets_partition_for(group_id: &str, partitions: i32) -> i32 {
    assert!(partitions > 0);
    let hash = java_string_hashcode(group_id);
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Placement must match Kafka's so a group's coordinator is the same
    /// partition whichever broker computes it. Expected values were printed
    /// by a JVM (`String.hashCode`, then `Utils.abs(h) % 50`), including two
    /// strings whose hash is `Integer.MIN_VALUE` and a non-BMP character that
    /// takes two UTF-16 units.
    #[test]
    fn offsets_partition_matches_java_string_hashcode() {
        let cases: &[(&str, i32, i32)] = &[
            ("", 0, 0),
            ("a", 97, 47),
            ("my-group", -1_906_497_762, 12),
            ("test-group", 627_841_412, 12),
            ("console-consumer-12345", 158_455_506, 6),
            ("grüße-😀", 347_391_577, 27),
            ("polygenelubricants", i32::MIN, 0),
            ("GydZG_", i32::MIN, 0),
        ];
        for &(group, hash, partition) in cases {
            assert_eq!(java_string_hashcode(group), hash, "{group}");
            assert_eq!(offsets_partition_for(group, 50), partition, "{group}");
        }
        assert_eq!(offsets_partition_for("my-group", 1), 0);
    }

    #[test]
    fn default_config_is_valid_and_matches_kafka() {
        let config = GroupConfig::default();
        config.validate();
        assert_eq!(config.offsets_retention_ms, 7 * 24 * 60 * 60 * 1000);
        assert_eq!(config.initial_rebalance_delay_ms, 3000);
    }
}
