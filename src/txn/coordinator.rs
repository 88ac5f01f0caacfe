//! The transaction coordinator's decisions, without I/O: given a
//! transactional id's metadata and a request, what to write and what to
//! answer, following Kafka 4.1's `TransactionCoordinator`. The service
//! applies a decision only after its record is durable; while a write or
//! the markers of a decision are in flight the metadata is `pending`, and
//! other requests for the id get CONCURRENT_TRANSACTIONS. Pure code, used on
//! the coordinator's shard.
//!
//! Two protocols, told apart by request version as Kafka does:
//! - transactions V1 (AddPartitionsToTxn v0-3, EndTxn v0-4): the client
//!   adds partitions itself and keeps its epoch;
//! - transactions V2 (KIP-890 part 2: Produce v12+ and TxnOffsetCommit v5
//!   add their partition implicitly, EndTxn v5): every commit or abort bumps
//!   the epoch, the markers carry the bumped epoch (so a late write of the
//!   finished transaction is fenced on every partition), and EndTxn answers
//!   the producer id and epoch of the next transaction (a new producer id
//!   when the epochs are exhausted).
//!
//! The coordinator's own aborts (timeouts, fencing by a new producer) follow
//! the finalized `transaction.version` (`cluster::features`): one bump,
//! the previous epoch kept from level 2, none kept below.

use std::collections::BTreeSet;

use crate::protocol::ErrorCode;
use crate::shard::messages::TopicPartition;

use super::records::{TxnLogValue, TxnState};

/// Epochs at or above this are exhausted: the next bump takes a new
/// producer id (Kafka keeps `Short.MaxValue` for fencing).
pub const EPOCH_EXHAUSTED: i16 = i16::MAX - 1;

/// What the coordinator knows of one transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    /// Current producer id.
    pub producer_id: i64,
    /// Producer id before the last change of id (KIP-360), or -1.
    pub last_producer_id: i64,
    /// Current epoch.
    pub producer_epoch: i16,
    /// Epoch before the last bump, or -1; lets a retried InitProducerId
    /// whose answer was lost get the same answer.
    pub last_producer_epoch: i16,
    /// `transaction.timeout.ms`.
    pub timeout_ms: i32,
    /// State.
    pub state: TxnState,
    /// Partitions of the open (or finishing) transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// Start of the current transaction, or -1.
    pub start_ms: i64,
    /// Last change.
    pub last_update_ms: i64,
    /// A write or the markers of a decision are in flight.
    pub pending: bool,
    /// The producer id a V2 commit or abort whose epochs ran out hands on
    /// (set in its Prepare state), or -1.
    pub next_producer_id: i64,
    /// The transaction version of the client's last change (0 for V1, 2
    /// for V2), as Kafka records it.
    pub client_transaction_version: i16,
}

impl TxnMetadata {
    /// The record value persisted for this metadata.
    pub fn to_log_value(&self) -> TxnLogValue {
        TxnLogValue {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            timeout_ms: self.timeout_ms,
            state: self.state,
            partitions: self.partitions.clone(),
            last_update_ms: self.last_update_ms,
            start_ms: self.start_ms,
            previous_producer_id: self.last_producer_id,
            next_producer_id: self.next_producer_id,
            client_transaction_version: self.client_transaction_version,
        }
    }

    /// Metadata read back from the log.
    pub fn from_log_value(value: TxnLogValue) -> TxnMetadata {
        TxnMetadata {
            producer_id: value.producer_id,
            last_producer_id: value.previous_producer_id,
            producer_epoch: value.producer_epoch,
            last_producer_epoch: -1,
            timeout_ms: value.timeout_ms,
            state: value.state,
            partitions: value.partitions,
            start_ms: value.start_ms,
            last_update_ms: value.last_update_ms,
            pending: false,
            next_producer_id: value.next_producer_id,
            client_transaction_version: value.client_transaction_version,
        }
    }

    /// True in PrepareCommit or PrepareAbort.
    pub fn is_preparing(&self) -> bool {
        matches!(self.state, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// What to do with an InitProducerId.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitDecision {
    /// Answer now.
    Reply(Result<(i64, i16), ErrorCode>),
    /// Take a fresh producer id, then [`with_new_producer_id`].
    NeedNewProducerId,
    /// Persist this metadata (same id, epoch bumped), then answer its id
    /// and epoch.
    Write(TxnMetadata),
    /// The id has an open transaction: persist this PrepareAbort (epoch
    /// bumped, fencing the old producer), answer CONCURRENT_TRANSACTIONS and
    /// finish the abort; the client retries.
    AbortOngoing(TxnMetadata),
}

/// Kafka's `prepareInitProducerIdTransit` for an existing or new id; an
/// open transaction is aborted as the finalized `transaction_version` has
/// it.
pub fn decide_init(
    existing: Option<&TxnMetadata>,
    expected_producer_id: i64,
    expected_epoch: i16,
    (timeout_ms, now_ms): (i32, i64),
    transaction_version: i16,
) -> InitDecision {
    let Some(m) = existing else {
        return InitDecision::NeedNewProducerId;
    };
    if m.pending {
        return InitDecision::Reply(Err(ErrorCode::ConcurrentTransactions));
    }
    let expected_given = expected_producer_id >= 0;
    if expected_given {
        // KIP-360: the producer may only re-initialise the id it has, or
        // retry after a bump to a new id whose answer it never got.
        let valid = m.producer_epoch < 0
            || expected_producer_id == m.producer_id
            || (expected_producer_id == m.last_producer_id && expected_epoch >= EPOCH_EXHAUSTED);
        if !valid {
            return InitDecision::Reply(Err(ErrorCode::ProducerFenced));
        }
    }
    match m.state {
        TxnState::PrepareAbort | TxnState::PrepareCommit | TxnState::PrepareEpochFence => {
            InitDecision::Reply(Err(ErrorCode::ConcurrentTransactions))
        }
        TxnState::Ongoing => {
            InitDecision::AbortOngoing(fenced_abort(m, now_ms, transaction_version))
        }
        TxnState::Dead => InitDecision::Reply(Err(ErrorCode::ConcurrentTransactions)),
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
            if expected_given && expected_producer_id == m.producer_id {
                if expected_epoch != m.producer_epoch {
                    if expected_epoch == m.last_producer_epoch
                        && m.last_producer_epoch >= 0
                        && m.producer_epoch < i16::MAX
                    {
                        // The answer to the last bump was lost: same answer
                        // (never the last epoch, which no fence could bump).
                        return InitDecision::Reply(Ok((m.producer_id, m.producer_epoch)));
                    }
                    return InitDecision::Reply(Err(ErrorCode::ProducerFenced));
                }
            } else if expected_given && expected_producer_id == m.last_producer_id {
                // A retry after a change of producer id gets the same
                // answer; once the new id has moved on, the old one is
                // fenced (it must not take the new id over).
                let retry = m.producer_epoch == 0
                    && m.last_producer_epoch >= 0
                    && expected_epoch == m.last_producer_epoch;
                return InitDecision::Reply(if retry {
                    Ok((m.producer_id, m.producer_epoch))
                } else {
                    Err(ErrorCode::ProducerFenced)
                });
            }
            if m.producer_epoch >= EPOCH_EXHAUSTED {
                return InitDecision::NeedNewProducerId;
            }
            let mut target = m.clone();
            // Kafka's `prepareIncrementProducerEpoch`: a producer that names
            // its epoch may retry this bump (the previous epoch is kept); a
            // new producer instance (no epoch given) leaves none, so an
            // older instance's retry is fenced.
            target.last_producer_epoch = if expected_given { m.producer_epoch } else { -1 };
            target.producer_epoch = m.producer_epoch + 1;
            target.state = TxnState::Empty;
            target.partitions.clear();
            target.timeout_ms = timeout_ms;
            target.start_ms = -1;
            target.last_update_ms = now_ms;
            InitDecision::Write(target)
        }
    }
}

/// The metadata to persist when the id gets producer id `producer_id`
/// (new id, or the old one's epochs are exhausted): epoch 0, Empty. As
/// Kafka's `prepareProducerIdRotation`, the old epoch is kept only when the
/// request named one (`epoch_given`), so only that producer's retry gets
/// the new id.
pub fn with_new_producer_id(
    existing: Option<&TxnMetadata>,
    producer_id: i64,
    (timeout_ms, now_ms): (i32, i64),
    epoch_given: bool,
) -> TxnMetadata {
    TxnMetadata {
        producer_id,
        last_producer_id: existing.map_or(-1, |m| m.producer_id),
        producer_epoch: 0,
        last_producer_epoch: match existing {
            Some(m) if epoch_given => m.producer_epoch,
            _ => -1,
        },
        timeout_ms,
        state: TxnState::Empty,
        partitions: BTreeSet::new(),
        start_ms: -1,
        last_update_ms: now_ms,
        pending: false,
        next_producer_id: -1,
        client_transaction_version: existing.map_or(0, |m| m.client_transaction_version),
    }
}

/// Checks the producer of a transactional request against the metadata:
/// Kafka's INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED and
/// CONCURRENT_TRANSACTIONS order.
fn check_producer(
    existing: Option<&TxnMetadata>,
    producer_id: i64,
    producer_epoch: i16,
) -> Result<&TxnMetadata, ErrorCode> {
    let m = existing.ok_or(ErrorCode::InvalidProducerIdMapping)?;
    if m.producer_id != producer_id {
        return Err(ErrorCode::InvalidProducerIdMapping);
    }
    if m.producer_epoch != producer_epoch {
        return Err(ErrorCode::ProducerFenced);
    }
    if m.pending {
        return Err(ErrorCode::ConcurrentTransactions);
    }
    Ok(m)
}

/// AddPartitionsToTxn: Ok(None) when every partition is already in the
/// open transaction (nothing to write), Ok(Some(target)) to persist.
/// An implicit add (V2, on the client's behalf): Kafka checks a change in
/// flight first there, except that partitions already in the open
/// transaction stay writable while others are added
/// (`only_adding_in_flight`), as Kafka's partitions skip the coordinator
/// once they hold the open transaction.
///
/// # Errors
/// The error code for every partition of the request.
pub fn decide_add_partitions(
    existing: Option<&TxnMetadata>,
    producer_id: i64,
    producer_epoch: i16,
    partitions: &[TopicPartition],
    now_ms: i64,
    by: AddedBy,
) -> Result<Option<TxnMetadata>, ErrorCode> {
    if let (
        AddedBy::Implicit {
            only_adding_in_flight,
        },
        Some(m),
    ) = (by, existing)
    {
        if m.pending {
            let already_in = m.state == TxnState::Ongoing
                && m.producer_id == producer_id
                && m.producer_epoch == producer_epoch
                && partitions.iter().all(|p| m.partitions.contains(p));
            return if only_adding_in_flight && already_in {
                Ok(None)
            } else {
                Err(ErrorCode::ConcurrentTransactions)
            };
        }
    }
    let m = check_producer(existing, producer_id, producer_epoch)?;
    match m.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence => {
            return Err(ErrorCode::ConcurrentTransactions)
        }
        TxnState::Dead => return Err(ErrorCode::InvalidTxnState),
        TxnState::Ongoing if partitions.iter().all(|p| m.partitions.contains(p)) => {
            return Ok(None)
        }
        _ => {}
    }
    let mut target = m.clone();
    if target.state != TxnState::Ongoing {
        target.partitions.clear();
        target.start_ms = now_ms;
    }
    target.state = TxnState::Ongoing;
    target.partitions.extend(partitions.iter().cloned());
    target.last_update_ms = now_ms;
    target.client_transaction_version = match by {
        AddedBy::Implicit { .. } => 2,
        AddedBy::Client => 0,
    };
    Ok(Some(target))
}

/// Who adds partitions to a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddedBy {
    /// The client, with AddPartitionsToTxn or AddOffsetsToTxn (V1).
    Client,
    /// The broker on the client's behalf (V2: Produce v12+, TxnOffsetCommit
    /// v5). `only_adding_in_flight`: the id's change in flight, if any, only
    /// adds partitions.
    Implicit {
        /// The change in flight only adds partitions.
        only_adding_in_flight: bool,
    },
}

/// Verify (Kafka's AddPartitionsToTxn with `verifyOnly`), one answer per
/// partition, in order: Ok when the producer's transaction is open, not
/// being changed, and holds the partition. `adding` says the change in
/// flight only adds partitions (the client's AddPartitionsToTxn for
/// others): the partitions already in the transaction stay writable
/// meanwhile, as in Kafka, which does not ask the coordinator again once a
/// partition holds the open transaction.
///
/// The errors: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
/// CONCURRENT_TRANSACTIONS (another change or markers in flight, or the
/// transaction is ending), for every partition; INVALID_TXN_STATE for a
/// partition never added, or for all when no transaction is open.
pub fn decide_verify(
    existing: Option<&TxnMetadata>,
    producer_id: i64,
    producer_epoch: i16,
    partitions: &[TopicPartition],
    adding: bool,
) -> Vec<Result<(), ErrorCode>> {
    let every = |error| vec![Err(error); partitions.len()];
    let Some(m) = existing else {
        return every(ErrorCode::InvalidProducerIdMapping);
    };
    if m.producer_id != producer_id {
        return every(ErrorCode::InvalidProducerIdMapping);
    }
    if m.producer_epoch != producer_epoch {
        return every(ErrorCode::ProducerFenced);
    }
    if m.pending && !adding {
        return every(ErrorCode::ConcurrentTransactions);
    }
    match m.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence => {
            every(ErrorCode::ConcurrentTransactions)
        }
        TxnState::Ongoing => partitions
            .iter()
            .map(|p| {
                if m.partitions.contains(p) {
                    Ok(())
                } else {
                    Err(ErrorCode::InvalidTxnState)
                }
            })
            .collect(),
        _ => every(ErrorCode::InvalidTxnState),
    }
}

/// What to do with an EndTxn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndDecision {
    /// Nothing to change (a retry of an EndTxn already completed): answer
    /// the id's current producer id and epoch.
    Done(i64, i16),
    /// Persist this PrepareCommit/PrepareAbort, answer, then write the
    /// markers and complete. With `new_producer_id` (V2, epochs exhausted)
    /// a fresh producer id goes into its `next_producer_id` first.
    Prepare {
        /// The Prepare state.
        prepared: TxnMetadata,
        /// A producer id must be taken for the next transaction.
        new_producer_id: bool,
    },
}

/// The producer id and epoch an EndTxn v5 answers once `prepared` is
/// durable: those of the producer's next transaction.
pub fn next_transaction_producer(prepared: &TxnMetadata) -> (i64, i16) {
    if prepared.next_producer_id >= 0 {
        (prepared.next_producer_id, 0)
    } else {
        (prepared.producer_id, prepared.producer_epoch)
    }
}

/// EndTxn of either protocol (`v2`: EndTxn v5).
///
/// # Errors
/// The code to answer.
pub fn decide_end_txn(
    existing: Option<&TxnMetadata>,
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    now_ms: i64,
    v2: bool,
) -> Result<EndDecision, ErrorCode> {
    if v2 {
        return decide_end_v2(existing, producer_id, producer_epoch, commit, now_ms);
    }
    Ok(
        match decide_end(existing, producer_id, producer_epoch, commit, now_ms)? {
            Some(mut prepared) => {
                prepared.client_transaction_version = 0;
                EndDecision::Prepare {
                    prepared,
                    new_producer_id: false,
                }
            }
            None => {
                let m = existing.ok_or(ErrorCode::InvalidProducerIdMapping)?;
                EndDecision::Done(m.producer_id, m.producer_epoch)
            }
        },
    )
}

/// EndTxn v5, Kafka's `endTransaction` for transaction version 2: the
/// epoch is checked with retries in mind (a retry carries the epoch before
/// the bump, or after running out of epochs the old producer id), every
/// commit or abort bumps the epoch, and an abort with no transaction open
/// is legal (the client may have started one the coordinator never saw).
fn decide_end_v2(
    existing: Option<&TxnMetadata>,
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    now_ms: i64,
) -> Result<EndDecision, ErrorCode> {
    let m = existing.ok_or(ErrorCode::InvalidProducerIdMapping)?;
    if m.pending {
        return Err(ErrorCode::ConcurrentTransactions);
    }
    let complete = matches!(m.state, TxnState::CompleteCommit | TxnState::CompleteAbort);
    let retry_on_overflow = complete
        && m.last_producer_id == producer_id
        && producer_epoch >= EPOCH_EXHAUSTED
        && m.producer_epoch == 0;
    if m.producer_id != producer_id && !retry_on_overflow {
        return Err(ErrorCode::InvalidProducerIdMapping);
    }
    let retry_on_bump = i32::from(m.producer_epoch) == i32::from(producer_epoch) + 1;
    let current = m.producer_epoch == producer_epoch && !retry_on_overflow;
    let valid_epoch = match m.state {
        TxnState::Ongoing | TxnState::Empty | TxnState::Dead | TxnState::PrepareEpochFence => {
            current
        }
        TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
        TxnState::CompleteCommit | TxnState::CompleteAbort => {
            retry_on_bump || retry_on_overflow || current
        }
    };
    if !valid_epoch {
        return Err(ErrorCode::ProducerFenced);
    }
    let retry = !current;
    let bumped = |state: TxnState, fresh: bool| {
        let mut target = m.clone();
        target.state = state;
        target.last_producer_epoch = m.producer_epoch;
        target.producer_epoch = m.producer_epoch.saturating_add(1);
        target.client_transaction_version = 2;
        target.last_update_ms = now_ms;
        if fresh {
            target.partitions.clear();
            target.start_ms = now_ms;
        }
        EndDecision::Prepare {
            prepared: target,
            new_producer_id: m.producer_epoch >= EPOCH_EXHAUSTED,
        }
    };
    let outcome = if commit {
        TxnState::PrepareCommit
    } else {
        TxnState::PrepareAbort
    };
    match (m.state, commit, retry) {
        (TxnState::Ongoing, _, _) => Ok(bumped(outcome, false)),
        (TxnState::Empty, false, _)
        | (TxnState::CompleteCommit | TxnState::CompleteAbort, false, false) => {
            Ok(bumped(TxnState::PrepareAbort, true))
        }
        (TxnState::CompleteCommit, true, true) | (TxnState::CompleteAbort, false, true) => {
            Ok(EndDecision::Done(m.producer_id, m.producer_epoch))
        }
        (TxnState::PrepareCommit, true, _) | (TxnState::PrepareAbort, false, _) => {
            Err(ErrorCode::ConcurrentTransactions)
        }
        (TxnState::PrepareEpochFence, _, _) => Err(ErrorCode::ConcurrentTransactions),
        _ => Err(ErrorCode::InvalidTxnState),
    }
}

/// EndTxn v0-4: Ok(None) for a retry of an EndTxn already completed,
/// Ok(Some(prepared)) to persist PrepareCommit/PrepareAbort and then write
/// the markers.
///
/// # Errors
/// The code to answer.
fn decide_end(
    existing: Option<&TxnMetadata>,
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    now_ms: i64,
) -> Result<Option<TxnMetadata>, ErrorCode> {
    let m = check_producer(existing, producer_id, producer_epoch)?;
    match (m.state, commit) {
        (TxnState::Ongoing, _) => {
            let mut target = m.clone();
            target.state = if commit {
                TxnState::PrepareCommit
            } else {
                TxnState::PrepareAbort
            };
            target.last_update_ms = now_ms;
            Ok(Some(target))
        }
        (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(None),
        (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
            Err(ErrorCode::ConcurrentTransactions)
        }
        (TxnState::PrepareEpochFence, _) => Err(ErrorCode::ConcurrentTransactions),
        _ => Err(ErrorCode::InvalidTxnState),
    }
}

/// The metadata once every marker of `prepared` is written: Complete*, no
/// partitions.
///
/// # Panics
/// If `prepared` is not in a Prepare state (a caller bug).
pub fn completed(prepared: &TxnMetadata, now_ms: i64) -> TxnMetadata {
    let state = match prepared.state {
        TxnState::PrepareCommit => TxnState::CompleteCommit,
        TxnState::PrepareAbort => TxnState::CompleteAbort,
        other => panic!("completing a transaction in state {other:?}"),
    };
    let mut done = TxnMetadata {
        state,
        partitions: BTreeSet::new(),
        last_update_ms: now_ms,
        pending: false,
        next_producer_id: -1,
        ..prepared.clone()
    };
    if prepared.next_producer_id >= 0 {
        // A V2 end whose epochs ran out: the next transaction is the new
        // producer id's, at epoch 0.
        done.last_producer_id = prepared.producer_id;
        done.producer_id = prepared.next_producer_id;
        done.producer_epoch = 0;
    }
    done
}

/// For an open transaction past its timeout and not busy: the PrepareAbort
/// to persist, with the epoch bumped so the producer is fenced (Kafka's
/// `abortTimedOutTransactions`). None otherwise.
pub fn timed_out_abort(
    m: &TxnMetadata,
    now_ms: i64,
    transaction_version: i16,
) -> Option<TxnMetadata> {
    if m.pending || m.state != TxnState::Ongoing || m.start_ms < 0 {
        return None;
    }
    if now_ms.saturating_sub(m.start_ms) <= i64::from(m.timeout_ms) {
        return None;
    }
    Some(fenced_abort(m, now_ms, transaction_version))
}

/// Kafka's `prepareFenceProducerEpoch` then abort, following the finalized
/// `transaction_version`: the epoch is bumped once, so the producer's next
/// request is fenced and the markers carry the new epoch. From version 2
/// the previous epoch is kept (a V2 producer's EndTxn(abort) with it is
/// then a retry that learns the new epoch, and so is a KIP-360
/// InitProducerId with it); before, none is, so a retry with the old epoch
/// is fenced rather than taken for a lost answer. No new producer id on a
/// fence.
fn fenced_abort(m: &TxnMetadata, now_ms: i64, transaction_version: i16) -> TxnMetadata {
    let mut target = m.clone();
    let previous = target.producer_epoch;
    // Kafka's fence bumps up to the last epoch (its next bump takes a new
    // producer id), so an exhausted producer is fenced too.
    target.producer_epoch = target.producer_epoch.saturating_add(1);
    target.last_producer_epoch = if transaction_version >= 2 {
        previous
    } else {
        -1
    };
    target.state = TxnState::PrepareAbort;
    target.last_update_ms = now_ms;
    target.client_transaction_version = if transaction_version >= 2 { 2 } else { 0 };
    target
}

/// True when the id has been idle for `transactional.id.expiration.ms`
/// with no transaction in progress, so it may be removed.
pub fn is_expired(m: &TxnMetadata, now_ms: i64, expiration_ms: i64) -> bool {
    !m.pending
        && matches!(
            m.state,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
        && now_ms.saturating_sub(m.last_update_ms) >= expiration_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.to_string(),
            partition,
        }
    }

    fn fresh() -> TxnMetadata {
        with_new_producer_id(None, 1000, (60_000, 1), false)
    }

    #[test]
    fn a_new_id_takes_a_producer_id_and_re_init_bumps_the_epoch() {
        assert_eq!(
            decide_init(None, -1, -1, (60_000, 0), 2),
            InitDecision::NeedNewProducerId
        );
        let m = fresh();
        assert_eq!(
            (m.producer_id, m.producer_epoch, m.state),
            (1000, 0, TxnState::Empty)
        );
        let InitDecision::Write(bumped) = decide_init(Some(&m), -1, -1, (30_000, 5), 2) else {
            panic!("expected a bump");
        };
        assert_eq!((bumped.producer_id, bumped.producer_epoch), (1000, 1));
        assert_eq!(bumped.timeout_ms, 30_000);
        // A new instance (no epoch given) leaves no previous epoch: the older
        // instance's KIP-360 re-init is fenced.
        assert_eq!(
            decide_init(Some(&bumped), 1000, 0, (30_000, 6), 2),
            InitDecision::Reply(Err(ErrorCode::ProducerFenced))
        );
        // KIP-360: a producer's own bump (epoch given) may be retried, with
        // the same answer.
        let InitDecision::Write(resumed) = decide_init(Some(&bumped), 1000, 1, (30_000, 7), 2)
        else {
            panic!("expected a bump");
        };
        assert_eq!(resumed.producer_epoch, 2);
        assert_eq!(
            decide_init(Some(&resumed), 1000, 1, (30_000, 8), 2),
            InitDecision::Reply(Ok((1000, 2)))
        );
        // Someone else's producer id is fenced.
        assert_eq!(
            decide_init(Some(&bumped), 55, 0, (30_000, 6), 2),
            InitDecision::Reply(Err(ErrorCode::ProducerFenced))
        );
        let mut exhausted = bumped.clone();
        exhausted.producer_epoch = EPOCH_EXHAUSTED;
        assert_eq!(
            decide_init(Some(&exhausted), -1, -1, (30_000, 7), 2),
            InitDecision::NeedNewProducerId
        );
        // A new instance's rotation leaves no previous epoch: the old id's
        // retry is fenced.
        let taken = with_new_producer_id(Some(&exhausted), 2000, (30_000, 8), false);
        assert_eq!(
            decide_init(Some(&taken), 1000, EPOCH_EXHAUSTED, (30_000, 9), 2),
            InitDecision::Reply(Err(ErrorCode::ProducerFenced))
        );
        let renewed = with_new_producer_id(Some(&exhausted), 2000, (30_000, 8), true);
        assert_eq!(
            (renewed.producer_id, renewed.last_producer_id),
            (2000, 1000)
        );
        // The old id's retry gets the new id while it is fresh, and is
        // fenced once the new id has moved on.
        assert_eq!(
            decide_init(Some(&renewed), 1000, EPOCH_EXHAUSTED, (30_000, 9), 2),
            InitDecision::Reply(Ok((2000, 0)))
        );
        let mut moved_on = renewed.clone();
        moved_on.producer_epoch = 3;
        assert_eq!(
            decide_init(Some(&moved_on), 1000, EPOCH_EXHAUSTED, (30_000, 9), 2),
            InitDecision::Reply(Err(ErrorCode::ProducerFenced))
        );
        // A fence at the last usable epoch still fences.
        let mut open = moved_on.clone();
        open.producer_epoch = EPOCH_EXHAUSTED;
        open.state = TxnState::Ongoing;
        open.start_ms = 0;
        assert_eq!(
            timed_out_abort(&open, i64::MAX, 2).unwrap().producer_epoch,
            i16::MAX
        );
    }

    #[test]
    fn init_during_an_open_transaction_fences_and_aborts_it() {
        let m = fresh();
        let open = decide_add_partitions(Some(&m), 1000, 0, &[tp("t", 0)], 10, AddedBy::Client)
            .unwrap()
            .unwrap();
        let InitDecision::AbortOngoing(abort) = decide_init(Some(&open), -1, -1, (60_000, 20), 2)
        else {
            panic!("expected an abort");
        };
        assert_eq!(abort.state, TxnState::PrepareAbort);
        assert_eq!(abort.producer_epoch, 1);
        assert!(abort.partitions.contains(&tp("t", 0)));
        // The fenced producer's EndTxn is refused.
        assert_eq!(
            decide_end(Some(&abort), 1000, 0, true, 21),
            Err(ErrorCode::ProducerFenced)
        );
        let mut busy = abort.clone();
        busy.pending = true;
        assert_eq!(
            decide_init(Some(&busy), -1, -1, (60_000, 22), 2),
            InitDecision::Reply(Err(ErrorCode::ConcurrentTransactions))
        );
        let done = completed(&abort, 30);
        assert_eq!(done.state, TxnState::CompleteAbort);
        // The fenced producer's KIP-360 re-init with its old epoch is taken
        // for a retry (Kafka keeps the previous epoch under transaction
        // version 2): it learns the current epoch, no bump.
        assert_eq!(
            decide_init(Some(&done), 1000, 0, (60_000, 31), 2),
            InitDecision::Reply(Ok((1000, 1)))
        );
        assert_eq!(
            decide_init(Some(&done), 1000, 7, (60_000, 31), 2),
            InitDecision::Reply(Err(ErrorCode::ProducerFenced))
        );
        assert!(done.partitions.is_empty());
        let InitDecision::Write(next) = decide_init(Some(&done), -1, -1, (60_000, 31), 2) else {
            panic!("expected a bump");
        };
        assert_eq!(next.producer_epoch, 2);
    }

    #[test]
    fn below_transaction_version_2_a_fence_keeps_no_previous_epoch() {
        let m = fresh();
        let open = decide_add_partitions(Some(&m), 1000, 0, &[tp("t", 0)], 10, AddedBy::Client)
            .unwrap()
            .unwrap();
        let abort = timed_out_abort(&open, i64::MAX, 1).unwrap();
        assert_eq!((abort.producer_epoch, abort.last_producer_epoch), (1, -1));
        let done = completed(&abort, 30);
        assert_eq!(
            decide_init(Some(&done), 1000, 0, (60_000, 31), 1),
            InitDecision::Reply(Err(ErrorCode::ProducerFenced)),
            "the fenced producer's KIP-360 re-init is fenced"
        );
    }

    #[test]
    fn verify_passes_only_the_partitions_of_an_open_transaction() {
        let m = fresh();
        let partitions = [tp("t", 0)];
        // The answer for the single partition of `partitions`.
        let one = |answers: Vec<Result<(), ErrorCode>>| {
            assert_eq!(answers.len(), 1);
            answers[0]
        };
        assert_eq!(
            one(decide_verify(None, 1000, 0, &partitions, false)),
            Err(ErrorCode::InvalidProducerIdMapping)
        );
        assert_eq!(
            one(decide_verify(Some(&m), 1000, 0, &partitions, false)),
            Err(ErrorCode::InvalidTxnState),
            "no transaction is open"
        );
        let open = decide_add_partitions(Some(&m), 1000, 0, &partitions, 5, AddedBy::Client)
            .unwrap()
            .unwrap();
        assert_eq!(
            one(decide_verify(Some(&open), 1000, 0, &partitions, false)),
            Ok(())
        );
        assert_eq!(
            decide_verify(Some(&open), 1000, 0, &[tp("t", 0), tp("t", 1)], false),
            vec![Ok(()), Err(ErrorCode::InvalidTxnState)],
            "t-1 was never added"
        );
        assert_eq!(
            one(decide_verify(Some(&open), 1000, 1, &partitions, false)),
            Err(ErrorCode::ProducerFenced)
        );
        assert_eq!(
            one(decide_verify(Some(&open), 7, 0, &partitions, false)),
            Err(ErrorCode::InvalidProducerIdMapping)
        );
        let mut busy = open.clone();
        busy.pending = true;
        assert_eq!(
            one(decide_verify(Some(&busy), 1000, 0, &partitions, false)),
            Err(ErrorCode::ConcurrentTransactions)
        );
        assert_eq!(
            one(decide_verify(Some(&busy), 1000, 0, &partitions, true)),
            Ok(()),
            "partitions already added stay writable while others are added"
        );
        assert_eq!(
            one(decide_verify(Some(&busy), 1000, 0, &[tp("t", 1)], true)),
            Err(ErrorCode::InvalidTxnState),
            "a partition still being added is not in the transaction yet"
        );
        let ending = decide_end(Some(&open), 1000, 0, true, 6).unwrap().unwrap();
        assert_eq!(
            one(decide_verify(Some(&ending), 1000, 0, &partitions, false)),
            Err(ErrorCode::ConcurrentTransactions)
        );
        assert_eq!(
            one(decide_verify(
                Some(&completed(&ending, 7)),
                1000,
                0,
                &partitions,
                false
            )),
            Err(ErrorCode::InvalidTxnState),
            "a late write after the commit"
        );
    }

    #[test]
    fn add_partitions_opens_and_extends_the_transaction() {
        let m = fresh();
        assert_eq!(
            decide_add_partitions(None, 1000, 0, &[tp("t", 0)], 5, AddedBy::Client),
            Err(ErrorCode::InvalidProducerIdMapping)
        );
        assert_eq!(
            decide_add_partitions(Some(&m), 999, 0, &[tp("t", 0)], 5, AddedBy::Client),
            Err(ErrorCode::InvalidProducerIdMapping)
        );
        assert_eq!(
            decide_add_partitions(Some(&m), 1000, 3, &[tp("t", 0)], 5, AddedBy::Client),
            Err(ErrorCode::ProducerFenced)
        );
        let open = decide_add_partitions(Some(&m), 1000, 0, &[tp("t", 0)], 5, AddedBy::Client)
            .unwrap()
            .unwrap();
        assert_eq!((open.state, open.start_ms), (TxnState::Ongoing, 5));
        assert_eq!(
            decide_add_partitions(Some(&open), 1000, 0, &[tp("t", 0)], 6, AddedBy::Client),
            Ok(None)
        );
        let more = decide_add_partitions(Some(&open), 1000, 0, &[tp("u", 1)], 7, AddedBy::Client)
            .unwrap()
            .unwrap();
        assert_eq!(more.partitions.len(), 2);
        assert_eq!(more.start_ms, 5, "the start does not move");
        let prepared = decide_end(Some(&more), 1000, 0, true, 8).unwrap().unwrap();
        assert_eq!(
            decide_add_partitions(Some(&prepared), 1000, 0, &[tp("t", 0)], 9, AddedBy::Client),
            Err(ErrorCode::ConcurrentTransactions)
        );
    }

    #[test]
    fn end_txn_follows_kafkas_state_table() {
        let m = fresh();
        assert_eq!(
            decide_end(Some(&m), 1000, 0, true, 1),
            Err(ErrorCode::InvalidTxnState)
        );
        let open = decide_add_partitions(Some(&m), 1000, 0, &[tp("t", 0)], 2, AddedBy::Client)
            .unwrap()
            .unwrap();
        let prepared = decide_end(Some(&open), 1000, 0, true, 3).unwrap().unwrap();
        assert_eq!(prepared.state, TxnState::PrepareCommit);
        assert_eq!(
            decide_end(Some(&prepared), 1000, 0, true, 4),
            Err(ErrorCode::ConcurrentTransactions)
        );
        assert_eq!(
            decide_end(Some(&prepared), 1000, 0, false, 4),
            Err(ErrorCode::InvalidTxnState)
        );
        let done = completed(&prepared, 5);
        assert_eq!(decide_end(Some(&done), 1000, 0, true, 6), Ok(None));
        assert_eq!(
            decide_end(Some(&done), 1000, 0, false, 6),
            Err(ErrorCode::InvalidTxnState)
        );
    }

    #[test]
    fn timeouts_abort_with_a_bumped_epoch_and_idle_ids_expire() {
        let m = fresh();
        assert_eq!(timed_out_abort(&m, i64::MAX, 2), None);
        let open = decide_add_partitions(Some(&m), 1000, 0, &[tp("t", 0)], 100, AddedBy::Client)
            .unwrap()
            .unwrap();
        assert_eq!(timed_out_abort(&open, 100 + 60_000, 2), None);
        let abort = timed_out_abort(&open, 100 + 60_001, 2).unwrap();
        assert_eq!(
            (abort.state, abort.producer_epoch),
            (TxnState::PrepareAbort, 1)
        );
        assert!(!is_expired(&open, i64::MAX, 1));
        let done = completed(&abort, 200);
        assert!(!is_expired(&done, 299, 100));
        assert!(is_expired(&done, 300, 100));
    }

    /// Kafka's table for EndTxn v5 (`TransactionCoordinator.endTransaction`):
    /// "retry" is the epoch before the bump, "current" the id's epoch.
    #[test]
    fn end_txn_v2_bumps_the_epoch_and_knows_its_retries() {
        let end = |m: &TxnMetadata, epoch: i16, commit: bool| {
            decide_end_txn(Some(m), 1000, epoch, commit, 50, true)
        };
        let prepared = |d: Result<EndDecision, ErrorCode>| match d {
            Ok(EndDecision::Prepare { prepared, .. }) => prepared,
            other => panic!("expected a Prepare, got {other:?}"),
        };
        let empty = fresh();
        // Empty: abort (current) is an empty abort with a bump; commit is
        // INVALID_TXN_STATE; an older epoch is fenced.
        let aborted = prepared(end(&empty, 0, false));
        assert_eq!(
            (
                aborted.state,
                aborted.producer_epoch,
                aborted.last_producer_epoch
            ),
            (TxnState::PrepareAbort, 1, 0)
        );
        assert!(aborted.partitions.is_empty());
        assert_eq!(aborted.start_ms, 50);
        assert_eq!(next_transaction_producer(&aborted), (1000, 1));
        assert_eq!(end(&empty, 0, true), Err(ErrorCode::InvalidTxnState));
        let mut later = empty.clone();
        later.producer_epoch = 3;
        assert_eq!(end(&later, 2, false), Err(ErrorCode::ProducerFenced));
        // Ongoing: commit bumps; the markers carry the bumped epoch.
        let open = decide_add_partitions(
            Some(&empty),
            1000,
            0,
            &[tp("t", 0)],
            10,
            AddedBy::Implicit {
                only_adding_in_flight: false,
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(open.client_transaction_version, 2);
        let committing = prepared(end(&open, 0, true));
        assert_eq!(
            (committing.state, committing.producer_epoch),
            (TxnState::PrepareCommit, 1)
        );
        assert!(committing.partitions.contains(&tp("t", 0)));
        // While preparing: a retry (old epoch) is CONCURRENT_TRANSACTIONS,
        // the other outcome INVALID_TXN_STATE, the new epoch fenced.
        assert_eq!(
            end(&committing, 0, true),
            Err(ErrorCode::ConcurrentTransactions)
        );
        assert_eq!(end(&committing, 0, false), Err(ErrorCode::InvalidTxnState));
        assert_eq!(end(&committing, 1, true), Err(ErrorCode::ProducerFenced));
        let mut busy = committing.clone();
        busy.pending = true;
        assert_eq!(end(&busy, 0, true), Err(ErrorCode::ConcurrentTransactions));
        // CompleteCommit: the retry is answered with the new epoch; a commit
        // with the new epoch (no transaction) is INVALID_TXN_STATE; an abort
        // with it is an empty abort.
        let done = completed(&committing, 60);
        assert_eq!(end(&done, 0, true), Ok(EndDecision::Done(1000, 1)));
        assert_eq!(end(&done, 0, false), Err(ErrorCode::InvalidTxnState));
        assert_eq!(end(&done, 1, true), Err(ErrorCode::InvalidTxnState));
        assert_eq!(prepared(end(&done, 1, false)).producer_epoch, 2);
        assert_eq!(end(&done, 5, false), Err(ErrorCode::ProducerFenced));
        // V1 clients on the same id keep their epoch.
        let open = decide_add_partitions(Some(&done), 1000, 1, &[tp("t", 0)], 70, AddedBy::Client)
            .unwrap()
            .unwrap();
        assert_eq!(open.client_transaction_version, 0);
        let v1 = match decide_end_txn(Some(&open), 1000, 1, true, 80, false) {
            Ok(EndDecision::Prepare { prepared, .. }) => prepared,
            other => panic!("{other:?}"),
        };
        assert_eq!(v1.producer_epoch, 1);
    }

    #[test]
    fn end_txn_v2_hands_on_a_new_producer_id_when_epochs_run_out() {
        let mut m = fresh();
        m.producer_epoch = EPOCH_EXHAUSTED;
        let open = decide_add_partitions(
            Some(&m),
            1000,
            EPOCH_EXHAUSTED,
            &[tp("t", 0)],
            1,
            AddedBy::Implicit {
                only_adding_in_flight: false,
            },
        )
        .unwrap()
        .unwrap();
        let Ok(EndDecision::Prepare {
            mut prepared,
            new_producer_id: true,
        }) = decide_end_txn(Some(&open), 1000, EPOCH_EXHAUSTED, true, 2, true)
        else {
            panic!("expected a Prepare that needs a producer id");
        };
        // The markers go out as the old id at the last epoch.
        assert_eq!(prepared.producer_epoch, i16::MAX);
        prepared.next_producer_id = 2000;
        assert_eq!(next_transaction_producer(&prepared), (2000, 0));
        let done = completed(&prepared, 3);
        assert_eq!(
            (
                done.producer_id,
                done.producer_epoch,
                done.last_producer_id,
                done.next_producer_id
            ),
            (2000, 0, 1000, -1)
        );
        // A retry from the old id is answered with the new one.
        assert_eq!(
            decide_end_txn(Some(&done), 1000, EPOCH_EXHAUSTED, true, 4, true),
            Ok(EndDecision::Done(2000, 0))
        );
        // The record keeps the hand-over across a restart.
        let reloaded = TxnMetadata::from_log_value(prepared.to_log_value());
        assert_eq!(reloaded.next_producer_id, 2000);
        assert_eq!(completed(&reloaded, 5).producer_id, 2000);
    }

    #[test]
    fn the_implicit_add_starts_a_transaction_and_waits_for_changes_in_flight() {
        let m = fresh();
        let implicit = AddedBy::Implicit {
            only_adding_in_flight: false,
        };
        let open = decide_add_partitions(Some(&m), 1000, 0, &[tp("t", 0)], 5, implicit)
            .unwrap()
            .unwrap();
        assert_eq!((open.state, open.start_ms), (TxnState::Ongoing, 5));
        let mut busy = open.clone();
        busy.pending = true;
        // A change in flight comes first, even before the epoch check.
        assert_eq!(
            decide_add_partitions(Some(&busy), 1000, 9, &[tp("t", 0)], 6, implicit),
            Err(ErrorCode::ConcurrentTransactions)
        );
        // While other partitions are added, those already in stay writable.
        assert_eq!(
            decide_add_partitions(
                Some(&busy),
                1000,
                0,
                &[tp("t", 0)],
                6,
                AddedBy::Implicit {
                    only_adding_in_flight: true
                }
            ),
            Ok(None)
        );
        assert_eq!(
            decide_add_partitions(
                Some(&busy),
                1000,
                0,
                &[tp("t", 1)],
                6,
                AddedBy::Implicit {
                    only_adding_in_flight: true
                }
            ),
            Err(ErrorCode::ConcurrentTransactions)
        );
        assert_eq!(
            decide_add_partitions(Some(&open), 1000, 1, &[tp("t", 0)], 6, implicit),
            Err(ErrorCode::ProducerFenced)
        );
        // After a V2 commit, the next transaction starts at the new epoch.
        let Ok(EndDecision::Prepare { prepared, .. }) =
            decide_end_txn(Some(&open), 1000, 0, true, 7, true)
        else {
            panic!("expected a Prepare");
        };
        let done = completed(&prepared, 8);
        assert_eq!(
            decide_add_partitions(Some(&done), 1000, 0, &[tp("t", 0)], 9, implicit),
            Err(ErrorCode::ProducerFenced),
            "a late write of the finished transaction"
        );
        let next = decide_add_partitions(Some(&done), 1000, 1, &[tp("t", 0)], 9, implicit)
            .unwrap()
            .unwrap();
        assert_eq!(
            (next.state, next.start_ms, next.producer_epoch),
            (TxnState::Ongoing, 9, 1)
        );
    }
}
