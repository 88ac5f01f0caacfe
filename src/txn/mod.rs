//! Transactions: the transaction coordinator of each `__transaction_state`
//! partition, on the shard that owns that partition (shard-local state, like
//! the group coordinators). A transactional id is coordinated by partition
//! `abs(hash(transactional.id)) % transaction.state.log.num.partitions`,
//! Kafka's placement. The coordinator keeps each id's producer id and epoch,
//! the partitions of its open transaction and its state, persists every
//! change as a record in Kafka's schema ([`records`]) before answering, and
//! runs the two-phase commit: PREPARE in the log, COMMIT/ABORT markers to
//! every partition (through the router), COMPLETE in the log.
//!
//! [`coordinator`] holds the pure decisions (Kafka's state transitions and
//! error codes); [`service`] the I/O: loading, writing records, sending
//! markers, aborting timed-out transactions and expiring idle ids.
//! Connection shards reach a coordinator through [`service::call_txn`].

pub mod coordinator;
pub mod records;
pub mod service;

use crate::protocol::ErrorCode;
use crate::shard::messages::TopicPartition;
pub use records::TxnState;

/// Name of the internal topic holding transaction state.
pub const TXN_STATE_TOPIC: &str = "__transaction_state";

/// The `__transaction_state` partition that coordinates `transactional_id`:
/// Java's `String.hashCode`, `Utils.abs`, modulo the partition count, as for
/// groups.
pub fn txn_partition_for(transactional_id: &str, partitions: i32) -> i32 {
    crate::group::offsets_partition_for(transactional_id, partitions)
}

/// A request for the transaction coordinator of one partition.
#[derive(Debug, Clone)]
pub enum TxnCall {
    /// InitProducerId with a transactional id.
    InitProducerId {
        /// Transactional id (not empty).
        transactional_id: String,
        /// `transaction.timeout.ms` of the producer.
        timeout_ms: i32,
        /// Producer id the client has (KIP-360), or -1.
        producer_id: i64,
        /// Epoch the client has, or -1.
        producer_epoch: i16,
    },
    /// AddPartitionsToTxn (and AddOffsetsToTxn with the group's offsets
    /// partition), or transactions V2's implicit add.
    AddPartitions {
        /// Transactional id.
        transactional_id: String,
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        producer_epoch: i16,
        /// Partitions to add, all known to exist.
        partitions: Vec<TopicPartition>,
        /// Added on the client's behalf by a V2 write (Produce v12+,
        /// TxnOffsetCommit v5), which may start a transaction.
        implicit: bool,
    },
    /// EndTxn.
    EndTxn {
        /// Transactional id.
        transactional_id: String,
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        producer_epoch: i16,
        /// Commit (true) or abort.
        commit: bool,
        /// EndTxn v5 (transactions V2): the epoch is bumped.
        v2: bool,
    },
    /// Checks, without changing anything, that the producer's transaction
    /// is open and holds every one of `partitions` (KIP-890 part 1: asked
    /// before a transactional batch or TxnOffsetCommit is written, so that a
    /// fenced, finished or never-added write cannot open a transaction that
    /// no marker will ever close).
    Verify {
        /// Transactional id.
        transactional_id: String,
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        producer_epoch: i16,
        /// Partitions the write goes to.
        partitions: Vec<TopicPartition>,
    },
    /// DescribeTransactions for ids of this partition.
    Describe {
        /// Transactional ids.
        transactional_ids: Vec<String>,
    },
    /// ListTransactions over every coordinator of the shard.
    List(ListFilter),
}

/// ListTransactions filters; empty lists match everything.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// States wanted.
    pub states: Vec<TxnState>,
    /// Producer ids wanted.
    pub producer_ids: Vec<i64>,
    /// Only transactions running longer than this (v1); -1 for any.
    pub min_duration_ms: i64,
}

/// One transactional id as DescribeTransactions shows it.
#[derive(Debug, Clone)]
pub struct DescribedTxn {
    /// Transactional id.
    pub transactional_id: String,
    /// Error for this id (0 = none).
    pub error_code: i16,
    /// State.
    pub state: TxnState,
    /// Timeout.
    pub timeout_ms: i32,
    /// Start of the current transaction, or -1.
    pub start_ms: i64,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Partitions of the transaction.
    pub partitions: Vec<TopicPartition>,
}

/// One transactional id as ListTransactions shows it.
#[derive(Debug, Clone)]
pub struct ListedTxn {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// State.
    pub state: TxnState,
}

/// The coordinator's answer.
#[derive(Debug)]
pub enum TxnReply {
    /// InitProducerId: producer id and epoch, or an error.
    InitProducerId(Result<(i64, i16), ErrorCode>),
    /// AddPartitions: one error (or none) for every partition.
    AddPartitions(Result<(), ErrorCode>),
    /// EndTxn: the producer id and epoch of the producer's next
    /// transaction.
    EndTxn(Result<(i64, i16), ErrorCode>),
    /// Verify: one answer per partition, in the call's order.
    Verify(Vec<Result<(), ErrorCode>>),
    /// DescribeTransactions, in request order.
    Describe(Vec<DescribedTxn>),
    /// ListTransactions of this shard.
    List(Vec<ListedTxn>),
    /// No coordinator could answer: NOT_COORDINATOR,
    /// COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE.
    Unavailable(ErrorCode),
}

impl TxnReply {
    /// The outcome of an AddPartitions call: its answer, or the error of a
    /// coordinator that could not answer.
    ///
    /// # Errors
    /// The coordinator's code; UNKNOWN_SERVER_ERROR (logged) for an answer
    /// to another call.
    pub fn into_added(self) -> Result<(), ErrorCode> {
        match self {
            TxnReply::AddPartitions(answer) => answer,
            other => Err(other.unexpected()),
        }
    }

    /// The outcome of an EndTxn call: the producer id and epoch of the
    /// producer's next transaction, or the error.
    ///
    /// # Errors
    /// As [`TxnReply::into_added`].
    pub fn into_ended(self) -> Result<(i64, i16), ErrorCode> {
        match self {
            TxnReply::EndTxn(answer) => answer,
            other => Err(other.unexpected()),
        }
    }

    /// The error of a reply that is not the one asked for: the
    /// coordinator's when it could not answer, else UNKNOWN_SERVER_ERROR.
    fn unexpected(self) -> ErrorCode {
        match self {
            TxnReply::Unavailable(error) => error,
            other => {
                tracing::error!(?other, "transaction coordinator answered the wrong call");
                ErrorCode::UnknownServerError
            }
        }
    }
}
