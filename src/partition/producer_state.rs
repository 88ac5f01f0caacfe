//! Idempotent-producer state of one partition: for every producer id that
//! wrote to the partition, its epoch, the metadata of its last five batches,
//! the first offset of its open transaction and its last timestamp. The
//! produce path asks it whether a batch is new, a retry of a batch already
//! written (answer the original offsets, write nothing) or out of order; it
//! is rebuilt at start-up from a snapshot file plus the log tail after it.
//!
//! A deterministic state machine with no I/O (STYLE §9): it takes batch
//! headers, offsets and times, and returns verdicts and bytes. The partition
//! that owns it lives on one shard, and so does this value; it holds a
//! shard-local view of one partition replica, nothing cluster-wide.
//!
//! The rules are Kafka's, from `ProducerAppendInfo`, `ProducerStateEntry`,
//! `BatchMetadata` and `ProducerStateManager` in
//! `storage/src/main/java/org/apache/kafka/storage/internals/log/`, and
//! `UnifiedLog.analyzeAndValidateProducerState` (duplicates are looked for
//! before any check):
//!
//! - A batch whose producer id, epoch, first and last sequence equal one of
//!   the last [`BATCHES_RETAINED_PER_PRODUCER`] batches of that producer is a
//!   duplicate. An older retry is not recognised and fails the sequence check
//!   with OUT_OF_ORDER_SEQUENCE_NUMBER; the broker never answers
//!   DUPLICATE_SEQUENCE_NUMBER.
//! - An epoch older than the producer's is INVALID_PRODUCER_EPOCH, for
//!   idempotent and transactional batches alike (since Kafka 2.7 the produce
//!   path no longer answers PRODUCER_FENCED).
//! - A newer epoch must start at sequence 0. Within an epoch, the first
//!   sequence must follow the last one, wrapping from `i32::MAX` to 0.
//! - A producer id with no state accepts any first sequence: since KIP-360
//!   (Kafka 2.5) the broker no longer answers UNKNOWN_PRODUCER_ID.
//! - A non-transactional batch while the producer's transaction is open is
//!   INVALID_TXN_STATE.
//!
//! Snapshot files use Kafka's format (version 1), so a Kafka log directory
//! and ours hold interchangeable files:
//!
//! ```text
//! version                  i16  (= 1)
//! crc                      u32  CRC32C of every byte after this field
//! producer_entries         i32 count, then per producer (46 bytes):
//!   producer_id            i64
//!   epoch                  i16
//!   last_sequence          i32  (-1 when the producer has no batch)
//!   last_offset            i64  (-1 when the producer has no batch)
//!   offset_delta           i32  last offset - first offset of the last batch
//!   timestamp              i64  the producer's last timestamp
//!   coordinator_epoch      i32
//!   current_txn_first_offset i64 (-1 when no transaction is open)
//! ```
//!
//! All big-endian. Only the last batch of each producer is kept in a
//! snapshot, as in Kafka; the log tail after the snapshot adds the rest.

use std::collections::{BTreeMap, VecDeque};

use thiserror::Error;

use crate::protocol::record_batch::BatchHeader;
use crate::protocol::ErrorCode;

/// Batches remembered per producer for duplicate detection: Kafka's
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`, which is also why clients
/// keep at most five requests in flight with idempotence on.
pub const BATCHES_RETAINED_PER_PRODUCER: usize = 5;

/// Default of `producer.id.expiration.ms`: one day.
pub const PRODUCER_ID_EXPIRATION_MS_DEFAULT: i64 = 86_400_000;

/// Version of the snapshot format written and read.
pub const SNAPSHOT_VERSION: i16 = 1;

/// Suffix of snapshot files (`<20-digit offset>.snapshot`).
pub const SNAPSHOT_FILE_SUFFIX: &str = ".snapshot";

/// Kafka's "no producer epoch": the epoch of a producer with no state.
const NO_PRODUCER_EPOCH: i16 = -1;
/// Kafka's "no sequence".
const NO_SEQUENCE: i32 = -1;
/// Kafka's "unknown coordinator epoch" of a new entry.
const NO_COORDINATOR_EPOCH: i32 = -1;
/// Kafka's "no timestamp".
const NO_TIMESTAMP: i64 = -1;

/// Bytes before the entries: version (2) and crc (4).
const SNAPSHOT_ENTRIES_START: usize = 6;
/// Bytes of the fixed header: version, crc and the entry count.
const SNAPSHOT_HEADER_BYTES: usize = 10;
/// Bytes of one encoded producer entry.
const SNAPSHOT_ENTRY_BYTES: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

/// Why a client batch was refused. Each maps to one Kafka error code
/// through [`ProducerError::error_code`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProducerError {
    /// The header contradicts itself for an idempotent or transactional
    /// batch (Kafka's `LogValidator.validateBatch`).
    #[error("invalid record batch from producer {producer_id}: {reason}")]
    InvalidRecord {
        /// Producer id of the batch (-1 when it has none).
        producer_id: i64,
        /// What is wrong.
        reason: &'static str,
    },
    /// The batch carries an epoch older than the one on record.
    #[error(
        "epoch of producer {producer_id} is {batch_epoch}, older than the last seen epoch \
         {current_epoch} (transactional: {transactional})"
    )]
    InvalidProducerEpoch {
        /// Producer id.
        producer_id: i64,
        /// Epoch in the batch.
        batch_epoch: i16,
        /// Epoch on record.
        current_epoch: i16,
        /// Whether the batch is transactional. Kafka answers
        /// INVALID_PRODUCER_EPOCH either way; kept for the log line.
        transactional: bool,
    },
    /// The first sequence does not follow the last one (a gap, a retry older
    /// than the retained batches, or a new epoch not starting at 0).
    #[error(
        "out of order sequence number for producer {producer_id} epoch {producer_epoch}: \
         {first_sequence} (incoming), {last_sequence} (last written)"
    )]
    OutOfOrderSequence {
        /// Producer id.
        producer_id: i64,
        /// Epoch in the batch.
        producer_epoch: i16,
        /// First sequence of the batch.
        first_sequence: i32,
        /// Last sequence on record for the epoch that counts: the current
        /// one, or -1 when the batch opens a new epoch.
        last_sequence: i32,
    },
    /// A marker from a transaction coordinator older than the one that wrote
    /// the producer's last marker here (Kafka's `checkCoordinatorEpoch`).
    #[error("marker for producer {producer_id} from coordinator epoch {marker_coordinator_epoch}, older than {current_coordinator_epoch}")]
    CoordinatorFenced {
        /// Producer id.
        producer_id: i64,
        /// Coordinator epoch of the marker.
        marker_coordinator_epoch: i32,
        /// Coordinator epoch on record.
        current_coordinator_epoch: i32,
    },
    /// A non-transactional batch from a producer whose transaction is open.
    #[error("expected a transactional write from producer {producer_id}, whose transaction started at offset {txn_first_offset}")]
    InvalidTxnState {
        /// Producer id.
        producer_id: i64,
        /// First offset of the open transaction.
        txn_first_offset: i64,
    },
}

impl ProducerError {
    /// The Kafka error code answered for this partition.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            ProducerError::InvalidRecord { .. } => ErrorCode::InvalidRecord,
            ProducerError::InvalidProducerEpoch { .. } => ErrorCode::InvalidProducerEpoch,
            ProducerError::OutOfOrderSequence { .. } => ErrorCode::OutOfOrderSequenceNumber,
            ProducerError::InvalidTxnState { .. } => ErrorCode::InvalidTxnState,
            ProducerError::CoordinatorFenced { .. } => ErrorCode::TransactionCoordinatorFenced,
        }
    }
}

/// Why a snapshot could not be read. Every variant means the file is
/// unusable: the caller deletes it and rebuilds from an older snapshot or
/// from the whole log, as Kafka does with a `CorruptSnapshotException`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    /// Fewer bytes than the header or than the entry count needs.
    #[error("producer snapshot truncated: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// A version other than 1.
    #[error("producer snapshot has unknown version {0}")]
    UnsupportedVersion(i16),
    /// The stored CRC does not match the bytes.
    #[error("producer snapshot CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// CRC in the file.
        stored: u32,
        /// CRC32C computed over the bytes after it.
        computed: u32,
    },
    /// A negative entry count.
    #[error("producer snapshot entry count {0} is negative")]
    NegativeEntryCount(i32),
    /// Bytes left over after the last entry. Kafka's reader ignores them, but
    /// no writer produces them, so they mean damage.
    #[error("producer snapshot has {extra} bytes after its {entries} entries")]
    TrailingBytes {
        /// Entry count in the file.
        entries: usize,
        /// Bytes after the last entry.
        extra: usize,
    },
    /// An entry whose offsets cannot describe a batch.
    #[error("producer snapshot entry for producer {producer_id} is invalid: {reason}")]
    InvalidEntry {
        /// Producer id of the entry.
        producer_id: i64,
        /// What is wrong.
        reason: &'static str,
    },
    /// The same producer id twice.
    #[error("producer snapshot holds producer {0} twice")]
    DuplicateProducerId(i64),
}

/// What is remembered of one written batch (Kafka's `BatchMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    /// Sequence of the batch's last record.
    pub last_sequence: i32,
    /// Offset of the batch's last record.
    pub last_offset: i64,
    /// `last_offset - first_offset`.
    pub offset_delta: i32,
    /// The batch's max timestamp as written (LogAppendTime when the topic
    /// uses it).
    pub timestamp_ms: i64,
}

impl BatchMetadata {
    /// Sequence of the batch's first record, wrapping below 0 as Kafka's
    /// `DefaultRecordBatch.decrementSequence` does.
    pub fn first_sequence(&self) -> i32 {
        decrement_sequence(self.last_sequence, self.offset_delta)
    }

    /// Offset of the batch's first record.
    pub fn first_offset(&self) -> i64 {
        self.last_offset - i64::from(self.offset_delta)
    }
}

/// The state of one producer id on this partition (Kafka's
/// `ProducerStateEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    producer_epoch: i16,
    /// Oldest first; at most [`BATCHES_RETAINED_PER_PRODUCER`], all of the
    /// current epoch.
    batches: VecDeque<BatchMetadata>,
    coordinator_epoch: i32,
    last_timestamp_ms: i64,
    current_txn_first_offset: Option<i64>,
}

impl ProducerStateEntry {
    fn empty() -> Self {
        ProducerStateEntry {
            producer_epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::with_capacity(BATCHES_RETAINED_PER_PRODUCER),
            coordinator_epoch: NO_COORDINATOR_EPOCH,
            last_timestamp_ms: NO_TIMESTAMP,
            current_txn_first_offset: None,
        }
    }

    /// The producer's current epoch.
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }

    /// Epoch of the last transaction coordinator that wrote a marker for
    /// this producer (-1 when none did).
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// Timestamp of the producer's last write; expiry counts from it.
    pub fn last_timestamp_ms(&self) -> i64 {
        self.last_timestamp_ms
    }

    /// First offset of the producer's open transaction.
    pub fn current_txn_first_offset(&self) -> Option<i64> {
        self.current_txn_first_offset
    }

    /// The retained batches of the current epoch, oldest first.
    pub fn batches(&self) -> impl Iterator<Item = &BatchMetadata> {
        self.batches.iter()
    }

    /// Last sequence written in the current epoch, or -1.
    pub fn last_sequence(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_sequence)
    }

    /// Kafka's `findDuplicateBatch`: a retained batch of the same epoch with
    /// exactly the same sequence range.
    fn find_duplicate(
        &self,
        producer_epoch: i16,
        first_sequence: i32,
        last_sequence: i32,
    ) -> Option<&BatchMetadata> {
        if producer_epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_sequence() == first_sequence && b.last_sequence == last_sequence)
    }

    /// Kafka's `maybeUpdateProducerEpoch`: a new epoch forgets the batches
    /// of the old one (but not an open transaction).
    fn update_producer_epoch(&mut self, producer_epoch: i16) {
        if self.producer_epoch != producer_epoch {
            self.batches.clear();
            self.producer_epoch = producer_epoch;
        }
    }

    /// Kafka's `addBatch`.
    fn add_batch(&mut self, producer_epoch: i16, batch: BatchMetadata) {
        self.update_producer_epoch(producer_epoch);
        if self.batches.len() == BATCHES_RETAINED_PER_PRODUCER {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
        self.last_timestamp_ms = batch.timestamp_ms;
        assert!(self.batches.len() <= BATCHES_RETAINED_PER_PRODUCER);
    }

    /// Kafka's `isProducerExpired`: idle for at least the expiration time
    /// and not in a transaction.
    fn is_expired(&self, now_ms: i64, producer_id_expiration_ms: i64) -> bool {
        self.current_txn_first_offset.is_none()
            && now_ms.saturating_sub(self.last_timestamp_ms) >= producer_id_expiration_ms
    }
}

/// The verdict on a client batch, given before offsets are assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendCheck {
    /// Append it, then call [`ProducerStateManager::on_append`].
    New,
    /// A retry of a batch already written: write nothing and answer these
    /// offsets (Kafka also answers `timestamp_ms` as the log append time).
    Duplicate {
        /// First offset the original batch was given.
        base_offset: i64,
        /// Last offset the original batch was given.
        last_offset: i64,
        /// The original batch's max timestamp as written.
        timestamp_ms: i64,
    },
}

/// Producer state of one partition (Kafka's `ProducerStateManager`, without
/// the file handling): producers and their open transactions.
///
/// Producers sit in a `BTreeMap` so iteration, and with it the snapshot
/// bytes, is deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStateManager {
    producers: BTreeMap<i64, ProducerStateEntry>,
    /// Open transactions: first offset -> producer id (Kafka's
    /// `ongoingTxns`), derived from the entries' `current_txn_first_offset`
    /// so the last stable offset is the first key.
    open_txns: BTreeMap<i64, i64>,
}

impl ProducerStateManager {
    /// No producers.
    pub fn new() -> Self {
        ProducerStateManager::default()
    }

    /// Number of producer ids with state.
    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// True when no producer has state.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// The state of one producer id.
    pub fn entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// Producer ids with state and their entries, by producer id.
    pub fn entries(&self) -> impl Iterator<Item = (i64, &ProducerStateEntry)> {
        self.producers.iter().map(|(id, entry)| (*id, entry))
    }

    /// First offset of the oldest open transaction (Kafka's
    /// `firstUnstableOffset`), or None when none is open.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.open_txns.keys().next().copied()
    }

    /// Open transactions, by first offset: (first offset, producer id).
    pub fn open_txns(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.open_txns
            .iter()
            .map(|(first, producer)| (*first, *producer))
    }

    /// Producer id -> offset of its last data batch's last record, for every
    /// producer with a batch (Kafka's `lastRecordsOfActiveProducers`, which
    /// the cleaner keeps).
    pub fn last_data_offsets(&self) -> std::collections::HashMap<i64, i64> {
        self.producers
            .iter()
            .filter_map(|(id, entry)| entry.batches.back().map(|b| (*id, b.last_offset)))
            .collect()
    }

    /// Records the coordinator epoch of a marker read back from the log
    /// (the header alone does not carry it).
    pub fn load_coordinator_epoch(&mut self, producer_id: i64, coordinator_epoch: i32) {
        if let Some(entry) = self.producers.get_mut(&producer_id) {
            entry.coordinator_epoch = coordinator_epoch;
        }
    }

    /// Checks a batch from a client before offsets are assigned. Batches
    /// without a producer id are [`AppendCheck::New`] unless they claim to be
    /// transactional, which we refuse as INVALID_RECORD.
    ///
    /// The partition must call this and then [`Self::on_append`] (or neither)
    /// for one batch before it checks the next batch of the same partition:
    /// the verdict is only valid against the state it was computed from.
    ///
    /// # Errors
    /// [`ProducerError`], whose [`ProducerError::error_code`] is the answer
    /// for the partition.
    pub fn check_append(&self, header: &BatchHeader) -> Result<AppendCheck, ProducerError> {
        if !has_producer_id(header) {
            if header.is_transactional() {
                return Err(invalid_record(
                    header,
                    "transactional batch without a producer id",
                ));
            }
            return Ok(AppendCheck::New);
        }
        check_append_header(header)?;
        let producer_id = header.producer_id;
        let first_sequence = header.base_sequence;
        let last_sequence = batch_last_sequence(header);
        let entry = self.producers.get(&producer_id);
        if let Some(duplicate) = entry
            .and_then(|e| e.find_duplicate(header.producer_epoch, first_sequence, last_sequence))
        {
            return Ok(AppendCheck::Duplicate {
                base_offset: duplicate.first_offset(),
                last_offset: duplicate.last_offset,
                timestamp_ms: duplicate.timestamp_ms,
            });
        }
        let Some(entry) = entry else {
            // No state: any first sequence is accepted (KIP-360). The state
            // may have expired or been deleted with the log's head; refusing
            // would leave the producer no way on.
            return Ok(AppendCheck::New);
        };
        if header.producer_epoch < entry.producer_epoch {
            return Err(ProducerError::InvalidProducerEpoch {
                producer_id,
                batch_epoch: header.producer_epoch,
                current_epoch: entry.producer_epoch,
                transactional: header.is_transactional(),
            });
        }
        let sequence_ok = if header.producer_epoch == entry.producer_epoch {
            // An entry with no batch in its epoch (bumped by a marker) has
            // last sequence -1, so the next batch must start at 0.
            entry.producer_epoch == NO_PRODUCER_EPOCH
                || in_sequence(entry.last_sequence(), first_sequence)
        } else {
            first_sequence == 0 || entry.producer_epoch == NO_PRODUCER_EPOCH
        };
        if !sequence_ok {
            let last_sequence = if header.producer_epoch == entry.producer_epoch {
                entry.last_sequence()
            } else {
                NO_SEQUENCE
            };
            return Err(ProducerError::OutOfOrderSequence {
                producer_id,
                producer_epoch: header.producer_epoch,
                first_sequence,
                last_sequence,
            });
        }
        if let (Some(txn_first_offset), false) =
            (entry.current_txn_first_offset, header.is_transactional())
        {
            return Err(ProducerError::InvalidTxnState {
                producer_id,
                txn_first_offset,
            });
        }
        Ok(AppendCheck::New)
    }

    /// Checks a batch a coordinator writes for a producer (the transactional
    /// offset commits of TxnOffsetCommit): only the epoch is checked, as
    /// Kafka skips sequence checks for appends that do not come from a
    /// client.
    ///
    /// # Errors
    /// [`ProducerError::InvalidProducerEpoch`] for an epoch older than the
    /// producer's.
    pub fn check_coordinator_append(&self, header: &BatchHeader) -> Result<(), ProducerError> {
        if let Some(entry) = self.producers.get(&header.producer_id) {
            if header.producer_epoch < entry.producer_epoch {
                return Err(ProducerError::InvalidProducerEpoch {
                    producer_id: header.producer_id,
                    batch_epoch: header.producer_epoch,
                    current_epoch: entry.producer_epoch,
                    transactional: header.is_transactional(),
                });
            }
        }
        Ok(())
    }

    /// Records a batch [`Self::check_coordinator_append`] accepted, once it
    /// has its offsets.
    pub fn on_coordinator_append(&mut self, header: &BatchHeader, base_offset: i64) {
        if has_producer_id(header) && !header.is_control() {
            self.apply_data_batch(header, base_offset);
        }
    }

    /// Checks a transaction marker for `producer_id` before it is written
    /// (Kafka's `appendEndTxnMarker` checks).
    ///
    /// # Errors
    /// [`ProducerError::InvalidProducerEpoch`] when the partition has seen a
    /// newer epoch of the producer; [`ProducerError::CoordinatorFenced`]
    /// when a newer coordinator already wrote a marker for it.
    pub fn check_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), ProducerError> {
        if let Some(entry) = self.producers.get(&producer_id) {
            if entry.coordinator_epoch > coordinator_epoch {
                return Err(ProducerError::CoordinatorFenced {
                    producer_id,
                    marker_coordinator_epoch: coordinator_epoch,
                    current_coordinator_epoch: entry.coordinator_epoch,
                });
            }
            if producer_epoch < entry.producer_epoch {
                return Err(ProducerError::InvalidProducerEpoch {
                    producer_id,
                    batch_epoch: producer_epoch,
                    current_epoch: entry.producer_epoch,
                    transactional: true,
                });
            }
        }
        Ok(())
    }

    /// Records a written transaction marker: the producer moves to the
    /// marker's epoch and coordinator epoch, and its open transaction on
    /// this partition closes. Returns the first offset of the transaction
    /// it closed, if one was open.
    pub fn on_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        timestamp_ms: i64,
    ) -> Option<i64> {
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(ProducerStateEntry::empty);
        entry.update_producer_epoch(producer_epoch);
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_timestamp_ms = timestamp_ms;
        let closed = entry.current_txn_first_offset.take();
        if let Some(first_offset) = closed {
            self.forget_open_txn(first_offset, producer_id);
        }
        closed
    }

    /// Records a client batch that [`Self::check_append`] found
    /// [`AppendCheck::New`], once it has its offsets. `header` is the header
    /// as written (its `max_timestamp` already LogAppendTime when the topic
    /// uses it); `base_offset` the offset the log gave it. Batches without a
    /// producer id are ignored.
    ///
    /// # Panics
    /// If the batch is a control batch, its offsets are negative or not above
    /// the producer's last offset, or (in debug builds) if `check_append`
    /// would not have accepted it: all caller bugs.
    pub fn on_append(&mut self, header: &BatchHeader, base_offset: i64) {
        if !has_producer_id(header) {
            return;
        }
        assert!(!header.is_control(), "markers are not client appends");
        assert!(base_offset >= 0, "base offset {base_offset} is negative");
        debug_assert_eq!(self.check_append(header), Ok(AppendCheck::New));
        if let Some(last) = self
            .producers
            .get(&header.producer_id)
            .and_then(|e| e.batches.back())
        {
            assert!(
                base_offset > last.last_offset,
                "producer {} appended at {base_offset}, not above its last offset {}",
                header.producer_id,
                last.last_offset
            );
        }
        self.apply_data_batch(header, base_offset);
    }

    /// Replays a batch read back from the log when rebuilding the state
    /// after a snapshot (or from the start of the log). No checks: the log
    /// holds what was accepted. Batches without a producer id are ignored.
    ///
    /// A control batch (transaction marker) moves the producer to the
    /// marker's epoch, takes its timestamp and closes the open transaction,
    /// as Kafka's `appendEndTxnMarker` does. The coordinator epoch is kept
    /// as it was: it sits in the marker record, which the header does not
    /// carry.
    ///
    /// Returns, for a marker, the first offset of the transaction it closed
    /// (None for data batches and markers that closed nothing).
    ///
    /// # Panics
    /// If `base_offset` is negative.
    pub fn load_from_batch(&mut self, header: &BatchHeader, base_offset: i64) -> Option<i64> {
        assert!(base_offset >= 0, "base offset {base_offset} is negative");
        if !has_producer_id(header) {
            return None;
        }
        if !header.is_control() {
            self.apply_data_batch(header, base_offset);
            return None;
        }
        if header.record_count == 0 {
            // The cleaner emptied the marker: its transaction is gone too.
            return None;
        }
        let entry = self
            .producers
            .entry(header.producer_id)
            .or_insert_with(ProducerStateEntry::empty);
        entry.update_producer_epoch(header.producer_epoch);
        entry.last_timestamp_ms = header.max_timestamp;
        let closed = entry.current_txn_first_offset.take();
        if let Some(first_offset) = closed {
            self.forget_open_txn(first_offset, header.producer_id);
        }
        closed
    }

    /// Removes an open transaction from the set, if it is this producer's.
    fn forget_open_txn(&mut self, first_offset: i64, producer_id: i64) {
        if self.open_txns.get(&first_offset) == Some(&producer_id) {
            self.open_txns.remove(&first_offset);
        }
    }

    /// Kafka's `appendDataBatch` without the checks.
    fn apply_data_batch(&mut self, header: &BatchHeader, base_offset: i64) {
        let offset_delta = header.last_offset_delta;
        assert!(offset_delta >= 0, "negative lastOffsetDelta {offset_delta}");
        let entry = self
            .producers
            .entry(header.producer_id)
            .or_insert_with(ProducerStateEntry::empty);
        entry.add_batch(
            header.producer_epoch,
            BatchMetadata {
                last_sequence: batch_last_sequence(header),
                last_offset: base_offset + i64::from(offset_delta),
                offset_delta,
                timestamp_ms: header.max_timestamp,
            },
        );
        if header.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(base_offset);
            self.open_txns.insert(base_offset, header.producer_id);
        }
    }

    /// Forgets producers idle for at least `producer_id_expiration_ms`
    /// (`producer.id.expiration.ms`) whose transaction is not open, and
    /// returns how many. Idleness counts from the producer's last batch
    /// timestamp, as in Kafka: with CreateTime that is the client's clock.
    ///
    /// # Panics
    /// If `producer_id_expiration_ms` is negative.
    pub fn remove_expired(&mut self, now_ms: i64, producer_id_expiration_ms: i64) -> usize {
        assert!(producer_id_expiration_ms >= 0);
        let before = self.producers.len();
        self.producers
            .retain(|_, entry| !entry.is_expired(now_ms, producer_id_expiration_ms));
        before - self.producers.len()
    }

    /// The state in Kafka's snapshot format, producers by id. Only each
    /// producer's last batch is written.
    ///
    /// # Panics
    /// With more than `i32::MAX` producers, which no memory holds.
    pub fn encode_snapshot(&self) -> Vec<u8> {
        let count = i32::try_from(self.producers.len()).expect("producer count fits in i32");
        let mut out =
            Vec::with_capacity(SNAPSHOT_HEADER_BYTES + self.producers.len() * SNAPSHOT_ENTRY_BYTES);
        out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes()); // the CRC, filled in below
        out.extend_from_slice(&count.to_be_bytes());
        for (producer_id, entry) in &self.producers {
            let last = entry.batches.back();
            out.extend_from_slice(&producer_id.to_be_bytes());
            out.extend_from_slice(&entry.producer_epoch.to_be_bytes());
            out.extend_from_slice(&entry.last_sequence().to_be_bytes());
            out.extend_from_slice(&last.map_or(-1i64, |b| b.last_offset).to_be_bytes());
            out.extend_from_slice(&last.map_or(0i32, |b| b.offset_delta).to_be_bytes());
            out.extend_from_slice(&entry.last_timestamp_ms.to_be_bytes());
            out.extend_from_slice(&entry.coordinator_epoch.to_be_bytes());
            out.extend_from_slice(&entry.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
        }
        assert_eq!(
            out.len(),
            SNAPSHOT_HEADER_BYTES + self.producers.len() * SNAPSHOT_ENTRY_BYTES
        );
        let crc = crc32c::crc32c(&out[SNAPSHOT_ENTRIES_START..]);
        out[2..SNAPSHOT_ENTRIES_START].copy_from_slice(&crc.to_be_bytes());
        out
    }

    /// Reads a snapshot written by [`Self::encode_snapshot`] or by Kafka.
    /// Each producer gets its one stored batch (none when its last offset is
    /// -1). Expired producers are kept: call [`Self::remove_expired`] after,
    /// as Kafka filters them on load.
    ///
    /// # Errors
    /// [`SnapshotError`] when the bytes are short, damaged or not version 1.
    pub fn decode_snapshot(bytes: &[u8]) -> Result<ProducerStateManager, SnapshotError> {
        if bytes.len() < SNAPSHOT_HEADER_BYTES {
            return Err(SnapshotError::Truncated {
                needed: SNAPSHOT_HEADER_BYTES,
                available: bytes.len(),
            });
        }
        let mut reader = SnapshotReader { bytes, position: 0 };
        let version = reader.i16();
        if version != SNAPSHOT_VERSION {
            return Err(SnapshotError::UnsupportedVersion(version));
        }
        let stored_crc = reader.u32();
        let count = reader.i32();
        let entries =
            usize::try_from(count).map_err(|_| SnapshotError::NegativeEntryCount(count))?;
        // The count is checked against the length before anything is
        // allocated for it.
        let needed = entries
            .checked_mul(SNAPSHOT_ENTRY_BYTES)
            .and_then(|b| b.checked_add(SNAPSHOT_HEADER_BYTES))
            .unwrap_or(usize::MAX);
        if bytes.len() < needed {
            return Err(SnapshotError::Truncated {
                needed,
                available: bytes.len(),
            });
        }
        if bytes.len() > needed {
            return Err(SnapshotError::TrailingBytes {
                entries,
                extra: bytes.len() - needed,
            });
        }
        let computed_crc = crc32c::crc32c(&bytes[SNAPSHOT_ENTRIES_START..]);
        if computed_crc != stored_crc {
            return Err(SnapshotError::CrcMismatch {
                stored: stored_crc,
                computed: computed_crc,
            });
        }
        let mut manager = ProducerStateManager::new();
        for _ in 0..entries {
            let (producer_id, entry) = decode_snapshot_entry(&mut reader)?;
            if let Some(first_offset) = entry.current_txn_first_offset {
                if manager
                    .open_txns
                    .insert(first_offset, producer_id)
                    .is_some()
                {
                    return Err(SnapshotError::InvalidEntry {
                        producer_id,
                        reason: "two open transactions start at the same offset",
                    });
                }
            }
            if manager.producers.insert(producer_id, entry).is_some() {
                return Err(SnapshotError::DuplicateProducerId(producer_id));
            }
        }
        assert_eq!(reader.position, bytes.len());
        Ok(manager)
    }
}

/// Kafka's `LogValidator.validateBatch` rules for a client batch with a
/// producer id, plus two of ours that no valid client trips: a negative
/// epoch (no InitProducerId answer carries one) and a negative
/// lastOffsetDelta.
fn check_append_header(header: &BatchHeader) -> Result<(), ProducerError> {
    if header.is_control() {
        return Err(invalid_record(
            header,
            "clients may not write control batches",
        ));
    }
    if header.record_count <= 0 {
        return Err(invalid_record(header, "record count is not positive"));
    }
    if header.last_offset_delta < 0 || header.last_offset_delta != header.record_count - 1 {
        return Err(invalid_record(
            header,
            "lastOffsetDelta does not match the record count",
        ));
    }
    if header.base_sequence < 0 {
        return Err(invalid_record(
            header,
            "negative base sequence with a producer id",
        ));
    }
    if header.producer_epoch < 0 {
        return Err(invalid_record(
            header,
            "negative producer epoch with a producer id",
        ));
    }
    Ok(())
}

/// Kafka's `RecordBatch.hasProducerId`: any negative id means none.
fn has_producer_id(header: &BatchHeader) -> bool {
    header.producer_id >= 0
}

fn invalid_record(header: &BatchHeader, reason: &'static str) -> ProducerError {
    ProducerError::InvalidRecord {
        producer_id: header.producer_id,
        reason,
    }
}

fn decode_snapshot_entry(
    reader: &mut SnapshotReader<'_>,
) -> Result<(i64, ProducerStateEntry), SnapshotError> {
    let producer_id = reader.i64();
    let producer_epoch = reader.i16();
    let last_sequence = reader.i32();
    let last_offset = reader.i64();
    let offset_delta = reader.i32();
    let timestamp_ms = reader.i64();
    let coordinator_epoch = reader.i32();
    let current_txn_first_offset = reader.i64();
    let mut entry = ProducerStateEntry::empty();
    entry.producer_epoch = producer_epoch;
    entry.coordinator_epoch = coordinator_epoch;
    entry.last_timestamp_ms = timestamp_ms;
    entry.current_txn_first_offset =
        (current_txn_first_offset >= 0).then_some(current_txn_first_offset);
    if last_offset >= 0 {
        if offset_delta < 0 || i64::from(offset_delta) > last_offset {
            return Err(SnapshotError::InvalidEntry {
                producer_id,
                reason: "offset delta outside 0..=last offset",
            });
        }
        entry.batches.push_back(BatchMetadata {
            last_sequence,
            last_offset,
            offset_delta,
            timestamp_ms,
        });
    }
    Ok((producer_id, entry))
}

/// Big-endian reads over a slice whose length was checked beforehand.
struct SnapshotReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl SnapshotReader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.bytes[self.position..self.position + N]);
        self.position += N;
        out
    }
    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_be_bytes(self.take())
    }
}

/// The snapshot file name for the state at `log_end_offset`:
/// `<offset, 20 digits>.snapshot`, as Kafka names it.
///
/// # Panics
/// If `log_end_offset` is negative.
pub fn snapshot_file_name(log_end_offset: i64) -> String {
    assert!(
        log_end_offset >= 0,
        "snapshot offset {log_end_offset} is negative"
    );
    format!("{log_end_offset:020}{SNAPSHOT_FILE_SUFFIX}")
}

/// The offset in a snapshot file name, or `None` when the name is not one.
pub fn parse_snapshot_file_name(file_name: &str) -> Option<i64> {
    let digits = file_name.strip_suffix(SNAPSHOT_FILE_SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Sequence of a batch's last record (Kafka's `DefaultRecordBatch.lastSequence`):
/// -1 without a sequence, else the base sequence plus lastOffsetDelta,
/// wrapping past `i32::MAX` to 0.
fn batch_last_sequence(header: &BatchHeader) -> i32 {
    if header.base_sequence == NO_SEQUENCE {
        return NO_SEQUENCE;
    }
    increment_sequence(header.base_sequence, header.last_offset_delta)
}

/// Kafka's `DefaultRecordBatch.incrementSequence`, with Java's wrapping
/// `int` arithmetic.
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment
            .wrapping_sub(i32::MAX.wrapping_sub(sequence))
            .wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// Kafka's `DefaultRecordBatch.decrementSequence`, with Java's wrapping
/// `int` arithmetic.
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX
            .wrapping_sub(decrement.wrapping_sub(sequence))
            .wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// Kafka's `ProducerAppendInfo.inSequence`: the next sequence follows the
/// last, and 0 follows `i32::MAX`.
fn in_sequence(last_sequence: i32, next_sequence: i32) -> bool {
    i64::from(next_sequence) == i64::from(last_sequence) + 1
        || (next_sequence == 0 && last_sequence == i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::{ATTR_CONTROL, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL};

    const PRODUCER: i64 = 4000;

    /// A client batch header with `count` records.
    fn batch(producer_epoch: i16, base_sequence: i32, count: i32) -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 100,
            partition_leader_epoch: -1,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 1_000,
            max_timestamp: 1_000,
            producer_id: PRODUCER,
            producer_epoch,
            base_sequence,
            record_count: count,
        }
    }

    fn transactional(mut header: BatchHeader) -> BatchHeader {
        header.attributes |= ATTR_TRANSACTIONAL;
        header
    }

    /// Checks a batch, expects it new, and appends it at `base_offset`.
    fn append_new(state: &mut ProducerStateManager, header: &BatchHeader, base_offset: i64) {
        assert_eq!(state.check_append(header), Ok(AppendCheck::New));
        state.on_append(header, base_offset);
    }

    fn out_of_order(
        first_sequence: i32,
        last_sequence: i32,
        producer_epoch: i16,
    ) -> Result<AppendCheck, ProducerError> {
        Err(ProducerError::OutOfOrderSequence {
            producer_id: PRODUCER,
            producer_epoch,
            first_sequence,
            last_sequence,
        })
    }

    /// Goal: batches whose sequences follow each other are accepted and
    /// remembered. Method: append three batches of different sizes and read
    /// the entry back.
    #[test]
    fn in_order_batches_are_accepted_and_recorded() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(0, 0, 3), 10);
        append_new(&mut state, &batch(0, 3, 1), 13);
        append_new(&mut state, &batch(0, 4, 5), 20);
        let entry = state.entry(PRODUCER).unwrap();
        assert_eq!(entry.producer_epoch(), 0);
        assert_eq!(entry.last_sequence(), 8);
        assert_eq!(entry.last_timestamp_ms(), 1_000);
        let batches: Vec<_> = entry.batches().copied().collect();
        assert_eq!(batches.len(), 3);
        assert_eq!(batches[2].first_sequence(), 4);
        assert_eq!(batches[2].first_offset(), 20);
        assert_eq!(batches[2].last_offset, 24);
        assert_eq!(state.check_append(&batch(0, 9, 1)), Ok(AppendCheck::New));
    }

    /// Goal: a retry of any of the last five batches is a duplicate that
    /// answers the original offsets, and a retry of the sixth-oldest is not
    /// recognised: Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER for it, never
    /// DUPLICATE_SEQUENCE_NUMBER. Method: append six two-record batches and
    /// retry each.
    #[test]
    fn retries_of_the_last_five_batches_are_duplicates_and_older_ones_out_of_order() {
        let mut state = ProducerStateManager::new();
        for i in 0..6 {
            append_new(&mut state, &batch(3, i * 2, 2), 100 + i64::from(i) * 10);
        }
        for i in 1..6 {
            assert_eq!(
                state.check_append(&batch(3, i * 2, 2)),
                Ok(AppendCheck::Duplicate {
                    base_offset: 100 + i64::from(i) * 10,
                    last_offset: 101 + i64::from(i) * 10,
                    timestamp_ms: 1_000,
                }),
                "batch {i}"
            );
        }
        assert_eq!(state.check_append(&batch(3, 0, 2)), out_of_order(0, 11, 3));
        // Same first sequence but a different range is not a duplicate.
        assert_eq!(
            state.check_append(&batch(3, 10, 1)),
            out_of_order(10, 11, 3)
        );
    }

    /// Goal: a gap in the sequence is refused. Method: skip one sequence.
    #[test]
    fn sequence_gap_is_out_of_order() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(0, 0, 2), 0);
        assert_eq!(state.check_append(&batch(0, 3, 1)), out_of_order(3, 1, 0));
        assert_eq!(
            state
                .check_append(&batch(0, 3, 1))
                .unwrap_err()
                .error_code(),
            ErrorCode::OutOfOrderSequenceNumber
        );
    }

    /// Goal: a new epoch must start at sequence 0 and forgets the old
    /// epoch's batches; afterwards the old epoch is refused as stale.
    /// Method: bump the epoch with a non-zero then a zero sequence, then
    /// retry an old-epoch batch.
    #[test]
    fn epoch_bump_restarts_the_sequence_at_zero() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(0, 0, 5), 0);
        assert_eq!(state.check_append(&batch(1, 5, 1)), out_of_order(5, -1, 1));
        append_new(&mut state, &batch(1, 0, 1), 5);
        let entry = state.entry(PRODUCER).unwrap();
        assert_eq!(entry.producer_epoch(), 1);
        assert_eq!(entry.batches().count(), 1);
        assert_eq!(
            state.check_append(&batch(0, 0, 5)),
            Err(ProducerError::InvalidProducerEpoch {
                producer_id: PRODUCER,
                batch_epoch: 0,
                current_epoch: 1,
                transactional: false,
            })
        );
    }

    /// Goal: an older epoch is INVALID_PRODUCER_EPOCH for idempotent and
    /// transactional batches alike (not PRODUCER_FENCED). Method: write at
    /// epoch 5, send epoch 4 both ways.
    #[test]
    fn stale_epoch_is_invalid_producer_epoch() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(5, 0, 1), 0);
        for header in [batch(4, 1, 1), transactional(batch(4, 1, 1))] {
            let error = state.check_append(&header).unwrap_err();
            assert_eq!(error.error_code(), ErrorCode::InvalidProducerEpoch);
        }
    }

    /// Goal: a producer id with no state accepts any first sequence, as
    /// Kafka does since KIP-360, and the next batch must follow it. Method:
    /// start at sequence 42.
    #[test]
    fn unknown_producer_accepts_any_first_sequence() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(7, 42, 2), 0);
        assert_eq!(state.check_append(&batch(7, 44, 1)), Ok(AppendCheck::New));
        assert_eq!(
            state.check_append(&batch(7, 45, 1)),
            out_of_order(45, 43, 7)
        );
    }

    /// Goal: sequences wrap from i32::MAX to 0, within a batch and between
    /// batches, and duplicates are still found across the wrap. Method: a
    /// batch ending at MAX, then one spanning the wrap, then retries.
    #[test]
    fn sequence_wraps_from_i32_max_to_zero() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(0, i32::MAX - 2, 3), 0);
        assert_eq!(state.entry(PRODUCER).unwrap().last_sequence(), i32::MAX);
        assert_eq!(
            state.check_append(&batch(0, 1, 1)),
            out_of_order(1, i32::MAX, 0)
        );
        append_new(&mut state, &batch(0, 0, 1), 3);
        append_new(&mut state, &batch(0, 1, 1), 4);
        // A batch spanning the wrap: MAX-1, MAX, 0, 1.
        let mut wrapped = ProducerStateManager::new();
        append_new(&mut wrapped, &batch(0, i32::MAX - 1, 4), 50);
        assert_eq!(wrapped.entry(PRODUCER).unwrap().last_sequence(), 1);
        let metadata = *wrapped.entry(PRODUCER).unwrap().batches().next().unwrap();
        assert_eq!(metadata.first_sequence(), i32::MAX - 1);
        assert_eq!(
            wrapped.check_append(&batch(0, i32::MAX - 1, 4)),
            Ok(AppendCheck::Duplicate {
                base_offset: 50,
                last_offset: 53,
                timestamp_ms: 1_000,
            })
        );
        assert_eq!(wrapped.check_append(&batch(0, 2, 1)), Ok(AppendCheck::New));
    }

    /// Goal: headers that contradict themselves are INVALID_RECORD before any
    /// state is consulted. Method: one bad field at a time.
    #[test]
    fn inconsistent_headers_are_invalid_record() {
        let state = ProducerStateManager::new();
        let mut count_mismatch = batch(0, 0, 3);
        count_mismatch.last_offset_delta = 1;
        let mut no_records = batch(0, 0, 1);
        no_records.record_count = 0;
        let mut control = batch(0, 0, 1);
        control.attributes |= ATTR_CONTROL;
        let mut no_producer = transactional(batch(0, 0, 1));
        no_producer.producer_id = -1;
        for header in [
            count_mismatch,
            no_records,
            control,
            batch(0, -1, 1),
            batch(-1, 0, 1),
            no_producer,
        ] {
            let error = state.check_append(&header).unwrap_err();
            assert_eq!(error.error_code(), ErrorCode::InvalidRecord, "{header:?}");
        }
    }

    /// Goal: batches without a producer id pass untouched and leave no state.
    /// Method: check and append a plain batch.
    #[test]
    fn batches_without_a_producer_id_bypass_the_state() {
        let mut state = ProducerStateManager::new();
        let mut plain = batch(-1, -1, 2);
        plain.producer_id = -1;
        append_new(&mut state, &plain, 0);
        state.load_from_batch(&plain, 2);
        // Kafka reads any negative producer id as none.
        plain.producer_id = -7;
        append_new(&mut state, &plain, 4);
        assert!(state.is_empty());
    }

    /// Goal: a transactional batch opens a transaction at its first offset;
    /// a non-transactional batch from that producer is then
    /// INVALID_TXN_STATE, even after an epoch bump. Method: append one
    /// transactional batch, then try plain ones.
    #[test]
    fn plain_batch_during_an_open_transaction_is_invalid_txn_state() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &transactional(batch(0, 0, 2)), 30);
        append_new(&mut state, &transactional(batch(0, 2, 1)), 40);
        assert_eq!(
            state.entry(PRODUCER).unwrap().current_txn_first_offset(),
            Some(30)
        );
        let expected = ProducerError::InvalidTxnState {
            producer_id: PRODUCER,
            txn_first_offset: 30,
        };
        assert_eq!(expected.error_code(), ErrorCode::InvalidTxnState);
        assert_eq!(state.check_append(&batch(0, 3, 1)), Err(expected.clone()));
        assert_eq!(state.check_append(&batch(1, 0, 1)), Err(expected));
    }

    /// Goal: the first unstable offset is the oldest open transaction's
    /// first offset, follows markers on both paths (append and log replay),
    /// survives a snapshot, and a marker from an older coordinator is
    /// fenced. Method: two producers' transactions closed in turn.
    #[test]
    fn first_unstable_offset_tracks_the_oldest_open_transaction() {
        let mut state = ProducerStateManager::new();
        assert_eq!(state.first_unstable_offset(), None);
        let mut other = transactional(batch(0, 0, 1));
        other.producer_id = 17;
        append_new(&mut state, &transactional(batch(0, 0, 2)), 10);
        append_new(&mut state, &other, 12);
        append_new(&mut state, &transactional(batch(0, 2, 1)), 13);
        assert_eq!(state.first_unstable_offset(), Some(10));
        assert_eq!(
            state.open_txns().collect::<Vec<_>>(),
            vec![(10, PRODUCER), (12, 17)]
        );
        let decoded = ProducerStateManager::decode_snapshot(&state.encode_snapshot()).unwrap();
        assert_eq!(decoded.first_unstable_offset(), Some(10));
        assert_eq!(state.on_marker(PRODUCER, 0, 4, 2_000), Some(10));
        assert_eq!(state.first_unstable_offset(), Some(12));
        assert_eq!(
            state.check_marker(PRODUCER, 0, 3).unwrap_err().error_code(),
            ErrorCode::TransactionCoordinatorFenced
        );
        assert!(state.check_marker(PRODUCER, 0, 4).is_ok());
        let mut marker = other;
        marker.attributes |= ATTR_CONTROL;
        assert_eq!(state.load_from_batch(&marker, 14), Some(12));
        assert_eq!(state.first_unstable_offset(), None);
        assert_eq!(state.load_from_batch(&marker, 15), None);
    }

    /// Goal: expiry forgets producers idle for at least the expiration time,
    /// counted from their last batch timestamp, and never one with an open
    /// transaction. Method: three producers at different ages, one
    /// transactional, at the boundary.
    #[test]
    fn expiry_removes_idle_producers_but_not_open_transactions() {
        let mut state = ProducerStateManager::new();
        let at = |producer_id: i64, timestamp: i64, txn: bool| {
            let mut header = batch(0, 0, 1);
            header.producer_id = producer_id;
            header.max_timestamp = timestamp;
            if txn {
                header = transactional(header);
            }
            header
        };
        append_new(&mut state, &at(1, 1_000, false), 0);
        append_new(&mut state, &at(2, 1_001, false), 1);
        append_new(&mut state, &at(3, 0, true), 2);
        let expiration = PRODUCER_ID_EXPIRATION_MS_DEFAULT;
        assert_eq!(state.remove_expired(1_000 + expiration - 1, expiration), 0);
        assert_eq!(state.remove_expired(1_000 + expiration, expiration), 1);
        assert!(state.entry(1).is_none());
        assert!(state.entry(2).is_some());
        assert_eq!(state.remove_expired(i64::MAX, expiration), 1);
        assert_eq!(state.producer_count(), 1);
        assert!(state.entry(3).is_some());
        // Extreme clocks do not overflow.
        assert_eq!(state.remove_expired(i64::MIN, 0), 0);
    }

    /// Goal: a snapshot keeps every producer's epoch, last batch, timestamp,
    /// coordinator epoch and open transaction, and only the last batch, so
    /// a retry of it is still a duplicate after a restart. Method: encode
    /// three producers (one transactional, one emptied by a marker), decode,
    /// compare.
    #[test]
    fn snapshot_round_trip_keeps_the_last_batch_of_each_producer() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(2, 0, 3), 0);
        append_new(&mut state, &batch(2, 3, 2), 3);
        let mut other = transactional(batch(0, 0, 1));
        other.producer_id = 17;
        other.max_timestamp = 9_999;
        append_new(&mut state, &other, 5);
        let mut marked = batch(4, 0, 1);
        marked.producer_id = 99;
        state.load_from_batch(&marked, 6);
        let mut marker = marked;
        marker.attributes |= ATTR_CONTROL | ATTR_TRANSACTIONAL;
        marker.producer_epoch = 5;
        marker.max_timestamp = 2_000;
        state.load_from_batch(&marker, 7);

        let bytes = state.encode_snapshot();
        assert_eq!(bytes.len(), 10 + 3 * 46);
        let decoded = ProducerStateManager::decode_snapshot(&bytes).unwrap();
        assert_eq!(decoded.producer_count(), 3);
        let entry = decoded.entry(PRODUCER).unwrap();
        assert_eq!(entry.producer_epoch(), 2);
        assert_eq!(entry.batches().count(), 1);
        assert_eq!(
            decoded.check_append(&batch(2, 3, 2)),
            Ok(AppendCheck::Duplicate {
                base_offset: 3,
                last_offset: 4,
                timestamp_ms: 1_000,
            })
        );
        assert_eq!(decoded.check_append(&batch(2, 0, 3)), out_of_order(0, 4, 2));
        assert_eq!(decoded.check_append(&batch(2, 5, 1)), Ok(AppendCheck::New));
        let transactional_entry = decoded.entry(17).unwrap();
        assert_eq!(transactional_entry.current_txn_first_offset(), Some(5));
        assert_eq!(transactional_entry.last_timestamp_ms(), 9_999);
        let emptied = decoded.entry(99).unwrap();
        assert_eq!(emptied.producer_epoch(), 5);
        assert_eq!(emptied.batches().count(), 0);
        assert_eq!(emptied.last_timestamp_ms(), 2_000);
        assert_eq!(emptied.current_txn_first_offset(), None);
        // An epoch bumped by a marker with no batch since: sequence 0 next.
        let mut after_marker = batch(5, 1, 1);
        after_marker.producer_id = 99;
        assert!(decoded.check_append(&after_marker).is_err());
        after_marker.base_sequence = 0;
        assert_eq!(decoded.check_append(&after_marker), Ok(AppendCheck::New));
        // Encoding the decoded state gives the same bytes.
        assert_eq!(decoded.encode_snapshot(), bytes);
    }

    /// CRC32C written bit by bit, independent of the crate the code uses.
    fn crc32c_bitwise(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for byte in bytes {
            crc ^= u32::from(*byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    /// Goal: the bytes are Kafka's snapshot format exactly. Method: write
    /// the expected bytes by hand from the schema in ProducerStateManager
    /// (version i16, crc u32 over the rest, array of i32 count and 46-byte
    /// entries), with the CRC from an independent bitwise CRC32C.
    #[test]
    fn snapshot_bytes_match_kafkas_format() {
        assert_eq!(crc32c_bitwise(b"123456789"), 0xE306_9283);
        let empty = ProducerStateManager::new().encode_snapshot();
        assert_eq!(empty, [0x00, 0x01, 0x48, 0x67, 0x4B, 0xC7, 0, 0, 0, 0]);

        let mut state = ProducerStateManager::new();
        let mut header = batch(2, 10, 5);
        header.producer_id = 1;
        header.max_timestamp = 0x0102_0304_0506;
        append_new(&mut state, &header, 100);
        let mut expected: Vec<u8> = vec![
            0x00, 0x01, // version 1
            0, 0, 0, 0, // crc, below
            0x00, 0x00, 0x00, 0x01, // one entry
            0, 0, 0, 0, 0, 0, 0, 1, // producer_id 1
            0x00, 0x02, // epoch 2
            0x00, 0x00, 0x00, 0x0E, // last_sequence 14
            0, 0, 0, 0, 0, 0, 0, 104, // last_offset 104
            0x00, 0x00, 0x00, 0x04, // offset_delta 4
            0, 0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // timestamp
            0xFF, 0xFF, 0xFF, 0xFF, // coordinator_epoch -1
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // no open transaction
        ];
        let crc = crc32c_bitwise(&expected[6..]);
        expected[2..6].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(state.encode_snapshot(), expected);
        let decoded = ProducerStateManager::decode_snapshot(&expected).unwrap();
        assert_eq!(decoded, state);
    }

    /// Goal: a damaged snapshot is an error, never a panic or a partial
    /// state. Method: every truncation, every single-bit flip, a wrong
    /// version, trailing bytes, a negative count, a bad
    /// offset delta and a repeated producer id (both with valid CRCs).
    #[test]
    fn damaged_snapshots_are_rejected() {
        let mut state = ProducerStateManager::new();
        append_new(&mut state, &batch(0, 0, 2), 0);
        let mut other = batch(0, 0, 1);
        other.producer_id = 5;
        append_new(&mut state, &other, 2);
        let bytes = state.encode_snapshot();
        for length in 0..bytes.len() {
            assert!(
                ProducerStateManager::decode_snapshot(&bytes[..length]).is_err(),
                "{length}"
            );
        }
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(
                ProducerStateManager::decode_snapshot(&flipped).is_err(),
                "bit {bit}"
            );
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 0x40;
        assert!(matches!(
            ProducerStateManager::decode_snapshot(&flipped),
            Err(SnapshotError::CrcMismatch { .. })
        ));
        let mut version = bytes.clone();
        version[1] = 2;
        assert_eq!(
            ProducerStateManager::decode_snapshot(&version),
            Err(SnapshotError::UnsupportedVersion(2))
        );
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(
            ProducerStateManager::decode_snapshot(&trailing),
            Err(SnapshotError::TrailingBytes {
                entries: 2,
                extra: 1
            })
        );
        let with_crc = |mut b: Vec<u8>| {
            let crc = crc32c::crc32c(&b[6..]);
            b[2..6].copy_from_slice(&crc.to_be_bytes());
            b
        };
        let mut negative = bytes[..10].to_vec();
        negative[6..10].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            ProducerStateManager::decode_snapshot(&with_crc(negative)),
            Err(SnapshotError::NegativeEntryCount(-1))
        );
        let mut huge = bytes[..10].to_vec();
        huge[6..10].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            ProducerStateManager::decode_snapshot(&with_crc(huge)),
            Err(SnapshotError::Truncated { .. })
        ));
        // offset_delta (entry byte 22) larger than last_offset.
        let mut delta = bytes.clone();
        delta[10 + 22..10 + 26].copy_from_slice(&1_000i32.to_be_bytes());
        assert!(matches!(
            ProducerStateManager::decode_snapshot(&with_crc(delta)),
            Err(SnapshotError::InvalidEntry { .. })
        ));
        let mut repeated = bytes.clone();
        repeated.copy_within(10..56, 56);
        assert_eq!(
            ProducerStateManager::decode_snapshot(&with_crc(repeated)),
            Err(SnapshotError::DuplicateProducerId(5))
        );
    }

    /// Goal: rebuilding from the log gives the state the appends built, and
    /// a marker closes the transaction and moves the epoch. Method: apply
    /// the same batches through both paths, then a marker.
    #[test]
    fn rebuild_from_the_log_matches_the_append_path() {
        let headers = [
            (transactional(batch(0, 0, 2)), 0),
            (transactional(batch(0, 2, 3)), 2),
            (transactional(batch(0, 5, 1)), 9),
        ];
        let mut appended = ProducerStateManager::new();
        let mut loaded = ProducerStateManager::new();
        for (header, base_offset) in &headers {
            append_new(&mut appended, header, *base_offset);
            loaded.load_from_batch(header, *base_offset);
        }
        assert_eq!(appended, loaded);
        let mut marker = batch(1, -1, 1);
        marker.attributes |= ATTR_CONTROL | ATTR_TRANSACTIONAL;
        marker.max_timestamp = 5_000;
        loaded.load_from_batch(&marker, 10);
        let entry = loaded.entry(PRODUCER).unwrap();
        assert_eq!(entry.producer_epoch(), 1);
        assert_eq!(entry.current_txn_first_offset(), None);
        assert_eq!(entry.batches().count(), 0);
        assert_eq!(entry.last_timestamp_ms(), 5_000);
        assert_eq!(loaded.check_append(&batch(1, 0, 1)), Ok(AppendCheck::New));
        assert_eq!(loaded.check_append(&batch(1, 1, 1)), out_of_order(1, -1, 1));
    }

    /// Goal: the timestamp kept is the batch's max timestamp as written, so
    /// LogAppendTime topics keep the broker's time. Method: append a header
    /// stamped with LogAppendTime.
    #[test]
    fn the_timestamp_kept_is_the_written_max_timestamp() {
        let mut state = ProducerStateManager::new();
        let mut header = batch(0, 0, 1);
        header.attributes |= ATTR_TIMESTAMP_TYPE;
        header.max_timestamp = 77_000;
        append_new(&mut state, &header, 0);
        assert_eq!(state.entry(PRODUCER).unwrap().last_timestamp_ms(), 77_000);
    }

    /// Goal: snapshot files are named `<20-digit offset>.snapshot` and only
    /// such names parse. Method: name, parse, and try near misses.
    #[test]
    fn snapshot_file_names_are_twenty_digit_offsets() {
        assert_eq!(snapshot_file_name(0), "00000000000000000000.snapshot");
        assert_eq!(snapshot_file_name(1234), "00000000000000001234.snapshot");
        assert_eq!(
            parse_snapshot_file_name("00000000000000001234.snapshot"),
            Some(1234)
        );
        for name in [
            "00000000000000001234.log",
            ".snapshot",
            "-1.snapshot",
            "12a.snapshot",
            "99999999999999999999.snapshot",
        ] {
            assert_eq!(parse_snapshot_file_name(name), None, "{name}");
        }
    }

    /// Goal: the sequence helpers match Kafka's Java arithmetic at the edges.
    /// Method: spot values around i32::MAX.
    #[test]
    fn sequence_arithmetic_wraps_like_kafka() {
        assert_eq!(increment_sequence(i32::MAX, 0), i32::MAX);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(5, 5), 0);
        assert!(in_sequence(i32::MAX, 0));
        assert!(in_sequence(-1, 0));
        assert!(!in_sequence(i32::MAX, i32::MIN));
    }
}
