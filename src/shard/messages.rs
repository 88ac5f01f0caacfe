//! The typed messages that cross cores through the router. Everything here is
//! `Send`; payloads travel as `bytes::Bytes` (reference counted, not copied).

use bytes::Bytes;

use crate::cluster::MetadataRecord;
use crate::config::ConfigAlteration;
use crate::group;
use crate::protocol::record_batch::BatchHeader;

/// A topic-partition by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
}

/// One partition's part of a Produce, already validated (CRC, size, magic) on
/// the connection's shard.
#[derive(Debug)]
pub struct ProduceItem {
    /// Target partition.
    pub topic_partition: TopicPartition,
    /// The batch as received.
    pub batch: Bytes,
    /// Its parsed header.
    pub header: BatchHeader,
}

/// Result of one partition's produce.
#[derive(Debug, Clone, Copy)]
pub struct ProduceResult {
    /// Kafka error code (0 = none).
    pub error_code: i16,
    /// Offset of the batch's first record, or -1.
    pub base_offset: i64,
    /// LogAppendTime given to the batch, or -1 for CreateTime topics.
    pub log_append_time_ms: i64,
    /// Log start offset of the partition, or -1.
    pub log_start_offset: i64,
}

impl ProduceResult {
    /// A result that only carries an error.
    pub fn error(error_code: i16) -> Self {
        ProduceResult {
            error_code,
            base_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
        }
    }
}

/// One partition's part of a Fetch.
#[derive(Debug, Clone)]
pub struct FetchItem {
    /// Partition to read.
    pub topic_partition: TopicPartition,
    /// First offset wanted.
    pub fetch_offset: i64,
    /// Byte budget for this partition.
    pub partition_max_bytes: usize,
}

/// What one partition returned for a fetch.
#[derive(Debug, Clone, Default)]
pub struct FetchResult {
    /// Kafka error code (0 = none).
    pub error_code: i16,
    /// High watermark.
    pub high_watermark: i64,
    /// Last stable offset.
    pub last_stable_offset: i64,
    /// Log start offset.
    pub log_start_offset: i64,
    /// Whole record batches, possibly split into several pieces each:
    /// bytes, or ranges of segment files to splice.
    pub records: Vec<crate::storage::Piece>,
    /// Total bytes in `records`.
    pub bytes: usize,
    /// read_committed: the aborted transactions overlapping the records, as
    /// (producer id, first offset); None for read_uncommitted (Kafka
    /// answers null then).
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
}

/// One partition's part of ListOffsets.
#[derive(Debug, Clone)]
pub struct ListOffsetsItem {
    /// Partition.
    pub topic_partition: TopicPartition,
    /// -1 latest, -2 earliest, -3 max timestamp, -4 earliest local, -5 latest tiered, else a timestamp.
    pub timestamp: i64,
}

/// Answer for one ListOffsets partition.
#[derive(Debug, Clone, Copy)]
pub struct ListOffsetsResult {
    /// Kafka error code.
    pub error_code: i16,
    /// Timestamp found, or -1.
    pub timestamp: i64,
    /// Offset found, or -1.
    pub offset: i64,
    /// Leader epoch of the offset.
    pub leader_epoch: i32,
}

/// A topic to create, as the controller receives it.
#[derive(Debug, Clone)]
pub struct CreateTopicSpec {
    /// Name.
    pub name: String,
    /// Partition count (already defaulted).
    pub num_partitions: i32,
    /// Replication factor (already defaulted).
    pub replication_factor: i16,
    /// Config overrides.
    pub configs: Vec<(String, String)>,
}

/// Partitions to add to a topic, as the controller receives them.
#[derive(Debug, Clone)]
pub struct CreatePartitionsSpec {
    /// Topic name.
    pub name: String,
    /// The partition count wanted in all.
    pub count: i32,
    /// Broker ids of each new partition's replicas, when the request
    /// assigns them.
    pub assignments: Option<Vec<Vec<i32>>>,
}

/// An error code and its message, or success (code 0, no message).
pub type AdminOutcome = (i16, Option<String>);

/// Outcome of creating one topic.
#[derive(Debug, Clone)]
pub struct CreateTopicOutcome {
    /// Kafka error code.
    pub error_code: i16,
    /// Human-readable reason for an error.
    pub error_message: Option<String>,
    /// Topic id when created.
    pub topic_id: uuid::Uuid,
}

/// Requests for the controller (shard 0).
#[derive(Debug)]
pub enum ControllerRequest {
    /// Create topics (validate only when asked).
    CreateTopics {
        /// Topics.
        topics: Vec<CreateTopicSpec>,
        /// Check without creating.
        validate_only: bool,
        /// The caller's controller mutation quota, if one applies.
        quota: Option<crate::quota::sensors::MutationQuota>,
    },
    /// Delete topics by name.
    DeleteTopics {
        /// Names.
        names: Vec<String>,
        /// The caller's controller mutation quota, if one applies.
        quota: Option<crate::quota::sensors::MutationQuota>,
    },
    /// Alter topics' config overrides (validate only when asked).
    AlterTopicConfigs {
        /// Topic name and its change.
        topics: Vec<(String, ConfigAlteration)>,
        /// Check without changing.
        validate_only: bool,
    },
    /// Alter dynamic broker configs (validate only when asked).
    AlterBrokerConfigs {
        /// The node (None: the cluster-wide default) and its change, names
        /// already checked (`config::dynamic::check_names`).
        resources: Vec<(Option<i32>, ConfigAlteration)>,
        /// Check without changing.
        validate_only: bool,
    },
    /// UpdateFeatures: (feature, level, upgrade type) in request order;
    /// with `validate_only` they are checked and not applied.
    UpdateFeatures {
        /// The updates.
        updates: Vec<(String, i16, i8)>,
        /// Check without changing.
        validate_only: bool,
    },
    /// Alter group configs (validate only when asked).
    AlterGroupConfigs {
        /// The group id and its change (an empty id is refused there, as
        /// Kafka's controller refuses it).
        resources: Vec<(String, ConfigAlteration)>,
        /// Check without changing.
        validate_only: bool,
    },
    /// Alter client-metrics subscriptions (validate only when asked).
    AlterClientMetricsConfigs {
        /// The subscription name and its change (an empty name is refused
        /// there, as Kafka's controller refuses it).
        resources: Vec<(String, ConfigAlteration)>,
        /// Check without changing.
        validate_only: bool,
    },
    /// Add partitions to topics (validate only when asked).
    CreatePartitions {
        /// Topics, no name twice.
        topics: Vec<CreatePartitionsSpec>,
        /// Check without adding.
        validate_only: bool,
        /// The caller's controller mutation quota, if one applies.
        quota: Option<crate::quota::sensors::MutationQuota>,
    },
    /// Hand out a block of `count` producer ids.
    AllocateProducerIds {
        /// Ids wanted.
        count: i64,
    },
    /// Delete and set users' SCRAM credentials (AlterUserScramCredentials).
    AlterUserScramCredentials {
        /// (user, mechanism type), in request order.
        deletions: Vec<(String, i8)>,
        /// In request order.
        upsertions: Vec<ScramUpsertion>,
    },
    /// Create ACLs (CreateAcls), each already checked; one equal in every
    /// field to a stored one is not stored twice.
    CreateAcls {
        /// The ACLs.
        acls: Vec<crate::security::acl::Acl>,
    },
    /// Delete the ACLs each filter matches (DeleteAcls).
    DeleteAcls {
        /// Filters, in request order.
        filters: Vec<crate::security::acl::AclFilter>,
    },
    /// Set and remove client quotas (AlterClientQuotas).
    AlterClientQuotas {
        /// Each entity as named, with its (key, value to set or None to
        /// remove), in request order.
        entries: Vec<crate::quota::QuotaAlteration>,
        /// Check without changing.
        validate_only: bool,
    },
    /// Create a delegation token (CreateDelegationToken), its broker checks
    /// passed.
    CreateDelegationToken {
        /// Its id, fresh.
        token_id: String,
        /// Its credentials, made off the executor.
        signature: crate::security::delegation_token::Signature,
        /// Owner, `Type:name`.
        owner: String,
        /// Requester, `Type:name`.
        requester: String,
        /// Renewers, each `User:name`.
        renewers: Vec<String>,
        /// Max lifetime asked for (0 or less: the broker's).
        max_lifetime_ms: i64,
    },
    /// Renew (RenewDelegationToken) or expire (ExpireDelegationToken) the
    /// token of an HMAC.
    ChangeDelegationToken {
        /// The token's HMAC.
        hmac: Vec<u8>,
        /// The caller, `Type:name`.
        requester: String,
        /// Renew or expire period asked for.
        period_ms: i64,
        /// True to expire, false to renew.
        expire: bool,
    },
    /// Remove the expired delegation tokens (the periodic sweep), and give
    /// tokens made under another key these new credentials.
    SweepDelegationTokens {
        /// (token id, its signature under the current key).
        resigned: Vec<(String, crate::security::delegation_token::Signature)>,
    },
}

/// One AlterUserScramCredentials upsertion, as the client sent it.
#[derive(Debug, Clone)]
pub struct ScramUpsertion {
    /// User.
    pub name: String,
    /// Mechanism type (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
    pub mechanism: i8,
    /// PBKDF2 iterations.
    pub iterations: i32,
    /// Salt.
    pub salt: Vec<u8>,
    /// The password salted by the client.
    pub salted_password: Vec<u8>,
}

/// Answers of the controller.
#[derive(Debug)]
pub enum ControllerReply {
    /// Per topic, in request order; the controller mutation quota's
    /// throttle time in ms.
    CreateTopics(Vec<CreateTopicOutcome>, u64),
    /// Per topic, in request order: (error code, topic id or nil); the
    /// throttle time.
    DeleteTopics(Vec<(i16, uuid::Uuid)>, u64),
    /// The first id of the block, or None when it could not be made durable.
    ProducerIds(Option<i64>),
    /// Per topic, in request order.
    AlterTopicConfigs(Vec<AdminOutcome>),
    /// Per broker resource, in request order.
    AlterBrokerConfigs(Vec<AdminOutcome>),
    /// Per group resource, in request order.
    AlterGroupConfigs(Vec<AdminOutcome>),
    /// Per client-metrics resource, in request order.
    AlterClientMetricsConfigs(Vec<AdminOutcome>),
    /// UpdateFeatures: the error of the whole request, if any.
    UpdateFeatures(Result<(), (crate::protocol::ErrorCode, String)>),
    /// Per topic, in request order; the throttle time.
    CreatePartitions(Vec<AdminOutcome>, u64),
    /// Per user: (user, error code, message).
    AlterUserScramCredentials(Vec<(String, i16, Option<String>)>),
    /// Ok when every ACL is stored, else the error of the whole request.
    CreateAcls(Result<(), (crate::protocol::ErrorCode, Option<String>)>),
    /// Per filter, the ACLs it deleted; else the error of the whole request.
    DeleteAcls(
        Result<Vec<Vec<crate::security::acl::Acl>>, (crate::protocol::ErrorCode, Option<String>)>,
    ),
    /// Per distinct entity, in the order first named: the entity and
    /// INVALID_REQUEST's message when refused; else the error of the whole
    /// request.
    AlterClientQuotas(crate::quota::QuotaAlterationResults),
    /// The token created, else the error.
    CreateDelegationToken(
        Result<crate::security::delegation_token::DelegationToken, crate::protocol::ErrorCode>,
    ),
    /// The token's new expiry timestamp, else the error.
    ChangeDelegationToken(Result<i64, crate::protocol::ErrorCode>),
    /// How many tokens were removed or given new credentials.
    SweepDelegationTokens(usize),
}

/// A request for the group coordinator of one `__consumer_offsets` partition.
#[derive(Debug)]
pub enum GroupCall {
    /// JoinGroup.
    JoinGroup(group::JoinGroupRequest),
    /// SyncGroup.
    SyncGroup(group::SyncGroupRequest),
    /// Heartbeat.
    Heartbeat(group::HeartbeatRequest),
    /// LeaveGroup.
    LeaveGroup(group::LeaveGroupRequest),
    /// OffsetCommit.
    OffsetCommit(group::OffsetCommitRequest),
    /// OffsetFetch for groups of this partition.
    OffsetFetch(group::OffsetFetchRequest),
    /// ListGroups over every coordinator of the shard (the partition is ignored).
    ListGroups(group::ListGroupsRequest),
    /// DescribeGroups for groups of this partition.
    DescribeGroups {
        /// Groups, all coordinated by this partition.
        group_ids: Vec<String>,
        /// Request version (describe output differs by version).
        api_version: i16,
    },
    /// DeleteGroups for groups of this partition.
    DeleteGroups {
        /// Groups, all coordinated by this partition.
        group_ids: Vec<String>,
    },
    /// OffsetDelete.
    OffsetDelete(group::OffsetDeleteRequest),
    /// TxnOffsetCommit: offsets of a producer's transaction, pending until
    /// its marker reaches this offsets partition.
    TxnOffsetCommit(group::TxnOffsetCommitRequest),
    /// ConsumerGroupHeartbeat (KIP-848).
    ConsumerGroupHeartbeat {
        /// The request.
        request: Box<group::ConsumerGroupHeartbeatRequest>,
        /// The caller's principal and host when an authorizer is on: the
        /// topics its regex matches are only those it may DESCRIBE.
        caller: Option<(String, String)>,
    },
    /// ConsumerGroupDescribe for groups of this partition.
    ConsumerGroupDescribe {
        /// Groups, all coordinated by this partition.
        group_ids: Vec<String>,
    },
}

/// The group coordinator's answer.
#[derive(Debug)]
pub enum GroupReply {
    /// JoinGroup.
    JoinGroup(group::JoinGroupResponse),
    /// SyncGroup.
    SyncGroup(group::SyncGroupResponse),
    /// Heartbeat.
    Heartbeat(group::HeartbeatResponse),
    /// LeaveGroup.
    LeaveGroup(group::LeaveGroupResponse),
    /// OffsetCommit.
    OffsetCommit(group::OffsetCommitResponse),
    /// OffsetFetch.
    OffsetFetch(group::OffsetFetchResponse),
    /// ListGroups.
    ListGroups(group::ListGroupsResponse),
    /// DescribeGroups, in request order.
    DescribeGroups(Vec<group::DescribedGroup>),
    /// DeleteGroups.
    DeleteGroups(group::DeleteGroupsResponse),
    /// OffsetDelete.
    OffsetDelete(group::OffsetDeleteResponse),
    /// TxnOffsetCommit.
    TxnOffsetCommit(group::TxnOffsetCommitResponse),
    /// ConsumerGroupHeartbeat.
    ConsumerGroupHeartbeat(group::ConsumerGroupHeartbeatResponse),
    /// ConsumerGroupDescribe, in request order.
    ConsumerGroupDescribe(Vec<group::DescribedConsumerGroup>),
    /// No coordinator could answer: NOT_COORDINATOR,
    /// COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE; the
    /// handler puts it in every error field of the response.
    Unavailable(crate::protocol::ErrorCode),
}

/// One transaction's COMMIT or ABORT marker for partitions of one shard
/// (an entry of Kafka's WriteTxnMarkers).
#[derive(Debug, Clone)]
pub struct TxnMarkerWrite {
    /// Producer of the transaction.
    pub producer_id: i64,
    /// Epoch the marker is written with (the coordinator's current epoch
    /// for the producer, bumped when it fenced or timed out the producer).
    pub producer_epoch: i16,
    /// Epoch of the `__transaction_state` partition's coordinator.
    pub coordinator_epoch: i32,
    /// COMMIT (true) or ABORT (false).
    pub commit: bool,
    /// Partitions of the transaction owned by the receiving shard.
    pub partitions: Vec<TopicPartition>,
}

/// A request to a shard.
#[derive(Debug)]
pub enum ShardRequest {
    /// Append batches to partitions this shard owns.
    Produce {
        /// 0, 1 or -1.
        acks: i16,
        /// One per partition.
        items: Vec<ProduceItem>,
    },
    /// Read from partitions this shard owns, without waiting.
    Fetch {
        /// One per partition, in the request's order.
        items: Vec<FetchItem>,
        /// The response's byte budget (Fetch `max_bytes`).
        max_bytes: usize,
        /// 0 read_uncommitted, 1 read_committed.
        isolation_level: i8,
    },
    /// Resolve once any of these partitions has data at or past its offset,
    /// or after `max_wait_ms`.
    WaitForData {
        /// (partition, offset wanted).
        items: Vec<(TopicPartition, i64)>,
        /// Upper bound on the wait.
        max_wait_ms: u64,
        /// 1 (read_committed): the offsets wanted are compared with the
        /// last stable offset, so a marker moving it wakes the wait.
        isolation_level: i8,
    },
    /// Look up offsets.
    ListOffsets {
        /// One per partition.
        items: Vec<ListOffsetsItem>,
        /// 0 read_uncommitted, 1 read_committed.
        isolation_level: i8,
    },
    /// Apply metadata records to this shard's image and partitions.
    Apply(Vec<MetadataRecord>),
    /// For the controller.
    Controller(ControllerRequest),
    /// Write transaction markers to partitions this shard owns. Answered
    /// once every marker is durable (fdatasync) and, for `__consumer_offsets`
    /// partitions, once the group coordinator has applied it to the
    /// transaction's pending offsets.
    WriteTxnMarkers(Vec<TxnMarkerWrite>),
    /// For the transaction coordinator of `__transaction_state` partition
    /// `partition`.
    Txn {
        /// Transaction state partition (ignored by List).
        partition: i32,
        /// The call.
        call: crate::txn::TxnCall,
    },
    /// DescribeProducers: the producers with state on these partitions.
    DescribeProducers(Vec<TopicPartition>),
    /// DeleteRecords: move the log start of these partitions up to the
    /// offset given (-1: the high watermark).
    DeleteRecords(Vec<(TopicPartition, i64)>),
    /// DescribeLogDirs: the size of every partition this shard holds.
    PartitionSizes,
    /// OffsetForLeaderEpoch: where each partition's given leader epoch ends.
    EpochEndOffsets(Vec<(TopicPartition, i32)>),
    /// This shard's counters.
    Metrics,
    /// Record `value` on a client quota sensor this shard owns and answer
    /// the throttle time (`quota::sensors`).
    RecordQuota {
        /// The sensor.
        sensor: crate::quota::SensorId,
        /// Bytes (or other units of the quota) to record.
        value: f64,
        /// The quota that applies.
        quota: f64,
        /// Whether the value stays recorded.
        kept: crate::quota::sensors::Kept,
    },
    /// Admit a new connection on this listener (by index) from this
    /// address (owner shard only, `server::admission`): answered once a
    /// slot is free.
    AdmitConnection(usize, std::net::IpAddr),
    /// An admitted connection on this listener from this address has ended.
    ReleaseConnection(usize, std::net::IpAddr),
    /// For the group coordinator of `__consumer_offsets` partition `partition`.
    Group {
        /// Offsets partition (ignored by ListGroups).
        partition: i32,
        /// The call.
        call: GroupCall,
    },
}

/// A shard's answer.
#[derive(Debug)]
pub enum ShardReply {
    /// Per item, in order.
    Produce(Vec<ProduceResult>),
    /// Per item, in order.
    Fetch(Vec<FetchResult>),
    /// Data arrived or the wait ended.
    WaitForData,
    /// Per item, in order.
    ListOffsets(Vec<ListOffsetsResult>),
    /// Records applied.
    Applied,
    /// From the controller.
    Controller(ControllerReply),
    /// From a group coordinator.
    Group(GroupReply),
    /// From a transaction coordinator.
    Txn(crate::txn::TxnReply),
    /// Counters.
    Metrics(crate::metrics::ShardMetrics),
    /// A client quota's throttle time, in ms.
    Throttle(u64),
    /// Whether a new connection is served.
    Admission(crate::server::admission::Admission),
    /// A connection's slot was freed.
    Released,
    /// Per marker, per partition (the request's shape): Kafka error code,
    /// 0 when written. UNKNOWN_TOPIC_OR_PARTITION for a partition that no
    /// longer exists; INVALID_PRODUCER_EPOCH when the partition has seen a
    /// newer epoch of the producer.
    WriteTxnMarkers(Vec<Vec<i16>>),
    /// Per partition, in request order: its producers, or the Kafka error
    /// code (NOT_LEADER_OR_FOLLOWER when the shard does not hold it).
    DescribeProducers(Vec<Result<Vec<crate::partition::ProducerDescription>, i16>>),
    /// Per partition, in request order: the log start after the call (the
    /// low watermark), or the Kafka error code.
    DeleteRecords(Vec<Result<i64, i16>>),
    /// Every partition the shard holds with its bytes on disk.
    PartitionSizes(Vec<(TopicPartition, u64)>),
    /// Per partition, in request order: (epoch, end offset), or the Kafka
    /// error code.
    EpochEndOffsets(Vec<Result<(i32, i64), i16>>),
}
