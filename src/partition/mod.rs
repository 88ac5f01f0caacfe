//! One partition replica on its owning shard: the log handle, the high
//! watermark, the producer state with its open transactions and the last
//! stable offset (LSO) they hold back, the aborted-transaction index, and
//! the fetch waiters woken by appends and markers. This is the only place
//! that appends to a log. Lives on its owning shard only; a shard-local view
//! of one replica.
//!
//! Transactions on the partition side follow Kafka's `UnifiedLog` and
//! `ProducerStateManager`: a transactional batch opens its producer's
//! transaction at its first offset; a COMMIT or ABORT marker closes it. The
//! LSO is the first offset of the oldest open transaction, or the high
//! watermark when none is open; read_committed fetches stop there. An ABORT
//! marker adds an [`AbortedTxn`] to the `.txnindex` file of the segment
//! holding it, and the newest [`ABORTED_TXNS_IN_MEMORY_MAX`] entries stay in
//! memory; older ones are read from the files when a fetch reaches back to
//! them. After a crash the open transactions and the entries past the
//! producer snapshot are rebuilt from the log, and the files rewritten to
//! match it.

pub mod producer_state;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures::channel::oneshot;
use thiserror::Error;
use uuid::Uuid;

use crate::protocol::record_batch::{
    build_control_batch, BatchHeader, TxnMarkerRecord, ATTRIBUTES_OFFSET, ATTR_TIMESTAMP_TYPE,
    CRC_OFFSET,
};
use crate::storage::txn_index::{self, AbortedTxn};
use crate::storage::{
    end_offset_for_epoch, AppendInfo, CompactionConfig, CompactionRequest, CompactionStats,
    EpochEntry, Log, LogConfig, Pieces, ReadResult, RetentionLimits, RetentionOutcome, ScanReplay,
    SegmentSettings, StorageError,
};
use producer_state::{
    parse_snapshot_file_name, snapshot_file_name, AppendCheck, ProducerError, ProducerStateManager,
};

/// Suffix of a producer snapshot file while it is written.
const SNAPSHOT_TEMPORARY_SUFFIX: &str = ".snapshot.tmp";

/// Bytes read per step while rebuilding producer state from the log.
const PRODUCER_STATE_READ_BYTES: usize = 1024 * 1024;

/// Aborted transactions a partition keeps in memory (the newest; 32 bytes
/// each, so at most 32 KiB per partition). A read_committed fetch that
/// reaches back past them reads the `.txnindex` files instead.
pub const ABORTED_TXNS_IN_MEMORY_MAX: usize = 1024;

/// Aborted transactions a compaction round takes into account. Past this
/// the round is skipped (logged): cleaning without knowing which data was
/// aborted could let aborted values shadow committed ones.
pub const ABORTED_TXNS_PER_COMPACTION_MAX: usize = 1 << 20;

/// Producer state rebuilt from batches in log order after a snapshot (or
/// from nothing), with the aborted transactions whose markers it passed.
struct ProducerReplay {
    state: ProducerStateManager,
    aborted: Vec<AbortedTxn>,
}

impl ProducerReplay {
    fn new(state: ProducerStateManager) -> Self {
        ProducerReplay {
            state,
            aborted: Vec::new(),
        }
    }

    /// Applies one whole batch (`batch` holds its bytes).
    fn apply(&mut self, header: &BatchHeader, batch: &[u8]) {
        if header.producer_id < 0 {
            return;
        }
        let marker = if header.is_control() {
            txn_index::decode_txn_marker(&Bytes::copy_from_slice(batch), header)
        } else {
            None
        };
        let closed = self.state.load_from_batch(header, header.base_offset);
        if let Some(marker) = marker {
            self.state
                .load_coordinator_epoch(header.producer_id, marker.coordinator_epoch);
            if !marker.commit {
                let marker_offset = header.base_offset;
                self.aborted.push(AbortedTxn {
                    producer_id: header.producer_id,
                    first_offset: closed.unwrap_or(marker_offset),
                    last_offset: marker_offset,
                    last_stable_offset: self
                        .state
                        .first_unstable_offset()
                        .unwrap_or(marker_offset + 1),
                });
            }
        }
    }
}

/// A replay from a snapshot that recovery's scan of the active segment fed.
struct ScannedReplay {
    /// `None`: no snapshot, the replay starts at the log start.
    snapshot_offset: Option<i64>,
    replay: ProducerReplay,
    /// The scan handed on every batch from there to the log end.
    covered: bool,
}

/// A partition directory's producer snapshot files, as listed.
#[derive(Debug, Default)]
struct SnapshotFiles {
    /// The `.snapshot` files as (offset, path), in offset order.
    snapshots: Vec<(i64, PathBuf)>,
    /// Leftover temporary ones (a crash while one was written), for the
    /// caller to remove.
    temporaries: Vec<PathBuf>,
}

/// The snapshot files in `dir`; nothing is removed.
///
/// # Errors
/// The directory cannot be listed.
fn list_snapshots_blocking(dir: &Path) -> std::io::Result<SnapshotFiles> {
    let mut found = SnapshotFiles::default();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(offset) = parse_snapshot_file_name(name) {
            found.snapshots.push((offset, entry.path()));
        } else if name.ends_with(SNAPSHOT_TEMPORARY_SUFFIX) {
            found.temporaries.push(entry.path());
        }
    }
    found.snapshots.sort();
    Ok(found)
}

/// [`list_snapshots_blocking`] off the executor, for a start: a directory
/// that cannot be listed has no usable snapshot (opening the log reports
/// the error).
async fn list_snapshots(dir: PathBuf) -> SnapshotFiles {
    glommio::executor()
        .spawn_blocking(move || list_snapshots_blocking(&dir).unwrap_or_default())
        .await
}

/// The newest readable snapshot of `snapshots` (in offset order) whose
/// offset lies in `[low, high]`; unreadable ones are logged and skipped.
async fn read_newest_snapshot(
    snapshots: &[(i64, PathBuf)],
    low: i64,
    high: i64,
) -> Option<(i64, ProducerStateManager)> {
    for (offset, path) in snapshots.iter().rev() {
        if !(low..=high).contains(offset) {
            continue;
        }
        let read_path = path.clone();
        let bytes = glommio::executor()
            .spawn_blocking(move || std::fs::read(read_path))
            .await;
        match bytes.map(|b| ProducerStateManager::decode_snapshot(&b)) {
            Ok(Ok(state)) => return Some((*offset, state)),
            Ok(Err(e)) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring a bad producer state snapshot")
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read a producer state snapshot")
            }
        }
    }
    None
}

/// The newest aborted transactions of a partition, by marker offset.
#[derive(Debug, Default)]
struct AbortedTxnCache {
    entries: VecDeque<AbortedTxn>,
    /// Every aborted transaction whose marker lies at or after this offset
    /// is in `entries`.
    complete_from: i64,
}

impl AbortedTxnCache {
    /// From every entry of the log, sorted by marker offset.
    fn from_sorted(all: &[AbortedTxn]) -> Self {
        let keep_from = all.len().saturating_sub(ABORTED_TXNS_IN_MEMORY_MAX);
        let entries: VecDeque<AbortedTxn> = all[keep_from..].iter().copied().collect();
        let complete_from = if keep_from == 0 {
            i64::MIN
        } else {
            entries.front().map_or(i64::MIN, |e| e.last_offset)
        };
        AbortedTxnCache {
            entries,
            complete_from,
        }
    }

    fn push(&mut self, entry: AbortedTxn) {
        if let Some(last) = self.entries.back() {
            assert!(
                entry.last_offset > last.last_offset,
                "markers in offset order"
            );
        }
        self.entries.push_back(entry);
        if self.entries.len() > ABORTED_TXNS_IN_MEMORY_MAX {
            self.entries.pop_front();
            self.complete_from = self.entries.front().map_or(i64::MIN, |e| e.last_offset);
        }
        assert!(self.entries.len() <= ABORTED_TXNS_IN_MEMORY_MAX);
    }
}

/// One producer as DescribeProducers shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerDescription {
    /// Producer id.
    pub producer_id: i64,
    /// Current epoch.
    pub producer_epoch: i16,
    /// Last sequence written, or -1.
    pub last_sequence: i32,
    /// Timestamp of the last write.
    pub last_timestamp: i64,
    /// Epoch of the coordinator that wrote its last marker, or -1.
    pub coordinator_epoch: i32,
    /// First offset of its open transaction, or -1.
    pub current_txn_start_offset: i64,
}

/// What a consumer fetch read.
#[derive(Debug, Default)]
pub struct FetchRead {
    /// Whole batches.
    pub read: ReadResult,
    /// read_committed: the aborted transactions overlapping what was read,
    /// as (producer id, first offset); None for read_uncommitted.
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
}

/// Failures of partition operations.
#[derive(Debug, Error)]
pub enum PartitionError {
    /// The partition was deleted while the request was in flight.
    #[error("partition {topic}-{partition} was deleted")]
    Deleted {
        /// Topic.
        topic: String,
        /// Index.
        partition: i32,
    },
    /// The log failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// An idempotent producer's batch was refused (sequence, epoch).
    #[error(transparent)]
    Producer(#[from] ProducerError),
    /// A producer state snapshot could not be read or written.
    #[error("producer state snapshot {path}: {reason}")]
    Snapshot {
        /// File.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Per-partition settings taken from the topic's configs.
#[derive(Debug, Clone, Copy)]
pub struct PartitionSettings {
    /// `message.timestamp.type=LogAppendTime`.
    pub log_append_time: bool,
    /// `flush.messages`: once this many appended messages are not yet
    /// synced, the append that reached it waits for a sync (Kafka's default,
    /// Long.MAX_VALUE, never comes).
    pub flush_messages: u64,
    /// `flush.ms`: the shard's log flusher syncs a log with unsynced
    /// messages once this long has passed since its last sync (Kafka's
    /// default, Long.MAX_VALUE, never comes).
    pub flush_ms: u64,
}

/// One partition replica (the leader, on a single node).
pub struct Partition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub index: i32,
    /// Topic id.
    pub topic_id: Uuid,
    log: Log,
    leader_epoch: i32,
    settings: Cell<PartitionSettings>,
    waiters: RefCell<Vec<oneshot::Sender<()>>>,
    deleted: Cell<bool>,
    producers: RefCell<ProducerStateManager>,
    aborted: RefCell<AbortedTxnCache>,
    /// An aborted-transaction entry could not be written to its file: the
    /// next clean close writes no producer snapshot, so the next start
    /// rebuilds the files from the log.
    txn_index_write_failed: Cell<bool>,
    /// Held from an idempotent batch's sequence check to its offset
    /// assignment, so two batches of one producer are checked in order
    /// against the state each leaves.
    producer_append_lock: glommio::sync::Semaphore,
    /// Messages appended since `flush.messages` last asked for a sync.
    unflushed_messages: Cell<u64>,
    /// When a sync of this partition last finished, and the offset it
    /// covered (for `flush.ms`).
    last_sync: Cell<(std::time::Instant, i64)>,
    /// The active segment's base offset when the newest producer snapshot
    /// was taken or tried (at load: the loaded snapshot's offset, else the
    /// log start). A segment rolled after it makes a snapshot due.
    snapshot_segment_base: Cell<i64>,
    /// Offset of the newest producer snapshot on disk (`i64::MIN` when
    /// there is none).
    snapshot_offset: Cell<i64>,
    /// Held while a snapshot file is written (a roll's and a clean
    /// close's may overlap).
    snapshot_write_lock: glommio::sync::Semaphore,
    /// A compaction of this partition failed: the cleaner leaves it alone
    /// until the broker restarts (Kafka's uncleanable partitions).
    uncleanable: Cell<bool>,
}

/// Wall-clock milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Partition {
    /// Wraps an opened log.
    pub fn new(
        topic: String,
        index: i32,
        topic_id: Uuid,
        leader_epoch: i32,
        log: Log,
        settings: PartitionSettings,
    ) -> Rc<Self> {
        let log_end_offset = log.log_end_offset();
        // Epochs never go back: a log holding a newer one than the
        // metadata's (written under another metadata log) keeps its own.
        let newest_in_log = log
            .leader_epoch_entries()
            .last()
            .map_or(leader_epoch, |entry| entry.epoch);
        if newest_in_log > leader_epoch {
            tracing::warn!(%topic, partition = index, leader_epoch, newest_in_log, "the log holds a newer leader epoch than the metadata; appending in it");
        }
        Rc::new(Partition {
            topic,
            index,
            topic_id,
            log,
            leader_epoch: leader_epoch.max(newest_in_log),
            settings: Cell::new(settings),
            waiters: RefCell::new(Vec::new()),
            deleted: Cell::new(false),
            producers: RefCell::new(ProducerStateManager::new()),
            aborted: RefCell::new(AbortedTxnCache::default()),
            txn_index_write_failed: Cell::new(false),
            producer_append_lock: glommio::sync::Semaphore::new(1),
            unflushed_messages: Cell::new(0),
            last_sync: Cell::new((std::time::Instant::now(), log_end_offset)),
            snapshot_segment_base: Cell::new(i64::MAX),
            snapshot_offset: Cell::new(i64::MIN),
            snapshot_write_lock: glommio::sync::Semaphore::new(1),
            uncleanable: Cell::new(false),
        })
    }

    /// Applies altered topic configs to this partition and its log; later
    /// appends, rolls and flushes follow them.
    ///
    /// # Errors
    /// When a log setting is out of bounds; nothing is changed then.
    pub fn reconfigure(
        &self,
        settings: PartitionSettings,
        segment: SegmentSettings,
    ) -> Result<(), StorageError> {
        self.log.reconfigure(segment)?;
        self.settings.set(settings);
        Ok(())
    }

    /// Counts `messages` just appended; true when `flush.messages` asks the
    /// append to wait for a sync (Kafka syncs a log during the append that
    /// brings its unsynced messages to `flush.messages`).
    pub fn count_appended(&self, messages: u64) -> bool {
        let unflushed = self.unflushed_messages.get().saturating_add(messages);
        if unflushed >= self.settings.get().flush_messages {
            self.unflushed_messages.set(0);
            true
        } else {
            self.unflushed_messages.set(unflushed);
            false
        }
    }

    /// True when messages were appended since the last sync and `flush.ms`
    /// has passed since it.
    pub fn flush_due(&self, now: std::time::Instant) -> bool {
        let (synced_at, synced_offset) = self.last_sync.get();
        self.log.log_end_offset() > synced_offset
            && now.saturating_duration_since(synced_at).as_millis()
                >= u128::from(self.settings.get().flush_ms)
    }

    /// The current leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// OffsetForLeaderEpoch: the (epoch, end offset) of leader epoch
    /// `requested` in this partition's epoch cache. The current epoch
    /// counts as started at the log end when no batch carries it yet, as
    /// Kafka's leader records its epoch on becoming leader.
    pub fn end_offset_for_epoch(&self, requested: i32) -> (i32, i64) {
        let log_end_offset = self.log.log_end_offset();
        let mut entries = self.log.leader_epoch_entries();
        if entries
            .last()
            .map_or(true, |latest| latest.epoch < self.leader_epoch)
        {
            entries.push(EpochEntry {
                epoch: self.leader_epoch,
                start_offset: log_end_offset,
            });
        }
        end_offset_for_epoch(&entries, requested, log_end_offset)
    }

    /// Offset up to which consumers may read (exclusive). With one replica
    /// it is the log end offset.
    pub fn high_watermark(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// Kafka's last stable offset: the first offset of the oldest open
    /// transaction, or the high watermark when none is open; never below
    /// the log start (DeleteRecords may move it past an open transaction's
    /// first offset; Kafka's `maybeIncrementFirstUnstableOffset`).
    pub fn last_stable_offset(&self) -> i64 {
        let high_watermark = self.high_watermark();
        self.producers
            .borrow()
            .first_unstable_offset()
            .map_or(high_watermark, |first| {
                first.max(self.log_start_offset()).min(high_watermark)
            })
    }

    /// Bytes of the partition's segments (DescribeLogDirs).
    pub fn size_bytes(&self) -> u64 {
        self.log.size_bytes()
    }

    /// First offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    /// Memory to receive `len` bytes of a Produce request's records into,
    /// so the log can write them from there (`storage/direct.rs`); None
    /// when the batch will be rewritten before the append (LogAppendTime)
    /// or the log cannot take it.
    pub fn direct_slot(&self, len: usize) -> Option<crate::storage::DirectSlot> {
        if self.deleted.get() || self.settings.get().log_append_time {
            return None;
        }
        self.log.direct_slot(len)
    }

    /// Appends one validated batch: the ordered part of a produce. Returns
    /// once offsets are assigned (not once written).
    ///
    /// # Errors
    /// When the partition was deleted or the log failed.
    pub async fn append(
        &self,
        batch: Bytes,
        header: &BatchHeader,
    ) -> Result<(AppendInfo, i64), PartitionError> {
        if self.deleted.get() {
            return Err(self.deleted_error());
        }
        let idempotent = header.producer_id >= 0;
        let _permit = if idempotent {
            Some(self.producer_append_lock.acquire_permit(1).await)
        } else {
            None
        };
        if idempotent {
            // A retry of one of the producer's last batches is answered with
            // its original offsets and written nothing (KIP-98).
            if let AppendCheck::Duplicate {
                base_offset,
                last_offset,
                timestamp_ms,
            } = self.producers.borrow().check_append(header)?
            {
                let info = AppendInfo {
                    base_offset,
                    last_offset,
                    max_timestamp: timestamp_ms,
                };
                let log_append_time = if self.settings.get().log_append_time {
                    timestamp_ms
                } else {
                    -1
                };
                return Ok((info, log_append_time));
            }
        }
        let now = now_ms();
        let (batch, header, log_append_time) = if self.settings.get().log_append_time {
            let (b, h) = stamp_log_append_time(batch, header, now);
            (b, h, now)
        } else {
            (batch, *header, -1)
        };
        let info = self
            .log
            .append(batch, &header, self.leader_epoch, now)
            .await?;
        if idempotent {
            self.producers
                .borrow_mut()
                .on_append(&header, info.base_offset);
        }
        self.wake_waiters();
        Ok((info, log_append_time))
    }

    /// Appends a batch a coordinator built for a producer (TxnOffsetCommit's
    /// transactional offset records): the producer's epoch is checked, its
    /// sequence is not, and the batch opens (or extends) the producer's
    /// transaction on this partition.
    ///
    /// # Errors
    /// A stale epoch, a deleted partition or a failed log.
    pub async fn append_from_coordinator(
        &self,
        batch: Bytes,
        header: &BatchHeader,
    ) -> Result<AppendInfo, PartitionError> {
        if self.deleted.get() {
            return Err(self.deleted_error());
        }
        let _permit = self.producer_append_lock.acquire_permit(1).await;
        self.producers.borrow().check_coordinator_append(header)?;
        let info = self
            .log
            .append(batch, header, self.leader_epoch, now_ms())
            .await?;
        self.producers
            .borrow_mut()
            .on_coordinator_append(header, info.base_offset);
        self.wake_waiters();
        Ok(info)
    }

    /// Writes a COMMIT or ABORT marker (a control batch) for `producer_id`
    /// and closes its transaction on this partition. Returns the marker's
    /// offset once assigned; the caller flushes for durability.
    ///
    /// # Errors
    /// A stale producer epoch, a deleted partition or a failed log.
    pub async fn write_txn_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<i64, PartitionError> {
        if self.deleted.get() {
            return Err(self.deleted_error());
        }
        let _permit = self.producer_append_lock.acquire_permit(1).await;
        self.producers
            .borrow()
            .check_marker(producer_id, producer_epoch, coordinator_epoch)?;
        let now = now_ms();
        let marker = TxnMarkerRecord {
            commit,
            coordinator_epoch,
        };
        let batch = Bytes::from(build_control_batch(
            producer_id,
            producer_epoch,
            marker,
            now,
        ));
        let header = crate::protocol::record_batch::parse_header(&batch)
            .expect("a built control batch parses");
        let info = self
            .log
            .append(batch, &header, self.leader_epoch, now)
            .await?;
        let marker_offset = info.base_offset;
        let (closed, last_stable_offset) = {
            let mut producers = self.producers.borrow_mut();
            let closed = producers.on_marker(producer_id, producer_epoch, coordinator_epoch, now);
            (closed, producers.first_unstable_offset())
        };
        // The LSO may have moved: read_committed waiters re-read.
        self.wake_waiters();
        if !commit {
            // Kafka records an aborted transaction even when it wrote
            // nothing here (its first offset is then the marker's).
            let entry = AbortedTxn {
                producer_id,
                first_offset: closed.unwrap_or(marker_offset),
                last_offset: marker_offset,
                last_stable_offset: last_stable_offset.unwrap_or(marker_offset + 1),
            };
            self.aborted.borrow_mut().push(entry);
            self.append_txn_index_entry(entry).await;
        }
        Ok(marker_offset)
    }

    /// Appends an aborted-transaction entry to its segment's `.txnindex`
    /// file. A failure is logged and remembered: memory still answers, and
    /// the next start rebuilds the file from the log.
    async fn append_txn_index_entry(&self, entry: AbortedTxn) {
        let dir = self.log.dir().to_path_buf();
        let segment_base_offset = self.log.segment_base_offset_of(entry.last_offset);
        let written = glommio::executor()
            .spawn_blocking(move || {
                txn_index::append_txn_index_entry(&dir, segment_base_offset, &entry)
            })
            .await;
        if let Err(error) = written {
            tracing::error!(topic = %self.topic, partition = self.index, %error, "cannot write an aborted transaction to the txnindex");
            self.txn_index_write_failed.set(true);
        }
    }

    /// Opens the log of an existing partition directory and rebuilds its
    /// producer state. After an unclean shutdown the newest producer
    /// snapshot is read first and recovery's scan of the active segment
    /// replays the batches after it while it checks them, so that segment
    /// is read once (Kafka's `LogSegment.recover` feeds the producer state
    /// the same way); without a snapshot it replays the whole log when the
    /// active segment is the only one. When the scan could not cover the
    /// replay (the snapshot lies before the active segment or past the
    /// recovered log end, or there is none and several segments),
    /// [`Self::load_producer_state`] reads the log instead.
    ///
    /// # Errors
    /// Opening or reading the log failed; [`StorageError::ForeignLogDir`]
    /// when the directory is not `topic_id`'s.
    #[allow(clippy::too_many_arguments)]
    pub async fn open(
        topic: String,
        index: i32,
        topic_id: Uuid,
        leader_epoch: i32,
        dir: &Path,
        config: LogConfig,
        clean_shutdown: bool,
        settings: PartitionSettings,
    ) -> Result<Rc<Self>, PartitionError> {
        let snapshots = list_snapshots(dir.to_path_buf()).await;
        if clean_shutdown {
            // The clean close wrote a snapshot at the log end.
            let (log, _) =
                Log::open_replaying(dir, config, clean_shutdown, None, Some(topic_id)).await?;
            let partition = Partition::new(topic, index, topic_id, leader_epoch, log, settings);
            partition.load_producer_state_after(snapshots, None).await?;
            return Ok(partition);
        }
        let newest = read_newest_snapshot(&snapshots.snapshots, i64::MIN, i64::MAX).await;
        let mut scanned = ScannedReplay {
            snapshot_offset: newest.as_ref().map(|(offset, _)| *offset),
            replay: ProducerReplay::new(newest.map(|(_, state)| state).unwrap_or_default()),
            covered: false,
        };
        // Without a snapshot the replay starts at the log start: covered
        // when the active segment is the whole log.
        let from_offset = scanned.snapshot_offset.unwrap_or(i64::MIN);
        let replay = &mut scanned.replay;
        let mut visit = |header: &BatchHeader, batch: &[u8]| replay.apply(header, batch);
        let (log, replayed_from) = Log::open_replaying(
            dir,
            config,
            clean_shutdown,
            Some(ScanReplay {
                from_offset,
                visit: &mut visit,
            }),
            Some(topic_id),
        )
        .await?;
        scanned.covered = replayed_from == Some(from_offset);
        let partition = Partition::new(topic, index, topic_id, leader_epoch, log, settings);
        partition
            .load_producer_state_after(snapshots, Some(scanned))
            .await?;
        Ok(partition)
    }

    /// Rebuilds idempotent producer state after the log was opened: from
    /// the newest snapshot in `[log start, log end]`, then the batches after
    /// it; from the whole log when there is no usable snapshot. A snapshot
    /// below the log start is not used: the batches between it and the log
    /// start are gone, and with them markers that closed transactions it
    /// holds open. Retention takes a new snapshot once it moves the log
    /// start past the newest one, so producers whose batches it deleted
    /// stay known (as in Kafka since KIP-360) unless a crash comes between
    /// the deletion and that snapshot. Leftover temporary snapshot files
    /// are removed.
    ///
    /// # Errors
    /// Reading the log failed.
    pub async fn load_producer_state(&self) -> Result<(), PartitionError> {
        let snapshots = list_snapshots(self.log.dir().to_path_buf()).await;
        self.load_producer_state_after(snapshots, None).await
    }

    /// [`Self::load_producer_state`] with the snapshots listed, taking the
    /// replay recovery's scan did when it is usable. The listing's
    /// temporary files are removed only here, once the log opened: a
    /// directory found to be another topic's is left as it was.
    async fn load_producer_state_after(
        &self,
        listing: SnapshotFiles,
        scanned: Option<ScannedReplay>,
    ) -> Result<(), PartitionError> {
        let SnapshotFiles {
            snapshots,
            temporaries,
        } = listing;
        let log_start_offset = self.log.log_start_offset();
        let log_end_offset = self.log.log_end_offset();
        let usable = scanned.filter(|scanned| {
            scanned.covered
                && scanned.snapshot_offset.map_or(true, |offset| {
                    (log_start_offset..=log_end_offset).contains(&offset)
                })
        });
        let (snapshot_offset, replay) = match usable {
            Some(scanned) => (scanned.snapshot_offset, scanned.replay),
            None => {
                let newest =
                    read_newest_snapshot(&snapshots, log_start_offset, log_end_offset).await;
                let start = newest
                    .as_ref()
                    .map_or(log_start_offset, |(offset, _)| *offset);
                let snapshot_offset = newest.as_ref().map(|(offset, _)| *offset);
                let mut replay =
                    ProducerReplay::new(newest.map(|(_, state)| state).unwrap_or_default());
                self.replay_log(start, log_end_offset, &mut replay).await?;
                (snapshot_offset, replay)
            }
        };
        let replay_start = snapshot_offset.unwrap_or(log_start_offset);
        *self.producers.borrow_mut() = replay.state;
        self.snapshot_segment_base
            .set(snapshot_offset.unwrap_or(log_start_offset));
        self.snapshot_offset
            .set(snapshot_offset.unwrap_or(i64::MIN));
        self.load_txn_index(replay_start, replay.aborted).await;
        // Snapshots past the log end describe data that is gone.
        let stale: Vec<PathBuf> = snapshots
            .into_iter()
            .filter(|(o, _)| *o > log_end_offset)
            .map(|(_, p)| p)
            .chain(temporaries)
            .collect();
        if !stale.is_empty() {
            glommio::executor()
                .spawn_blocking(move || {
                    for path in stale {
                        let _ = std::fs::remove_file(path);
                    }
                })
                .await;
        }
        Ok(())
    }

    /// Reads the log's batches in `[from, log_end_offset)` into `replay`.
    async fn replay_log(
        &self,
        from: i64,
        log_end_offset: i64,
        replay: &mut ProducerReplay,
    ) -> Result<(), PartitionError> {
        let mut offset = from;
        while offset < log_end_offset {
            let read = self
                .log
                .read(offset, log_end_offset, PRODUCER_STATE_READ_BYTES, true)
                .await?;
            if read.batches.is_empty() {
                break;
            }
            let chunk = read.into_contiguous();
            let mut next = offset;
            for (position, header) in crate::protocol::record_batch::BatchIter::new(&chunk, false) {
                // The first batch may straddle a log start DeleteRecords set
                // inside it: it is applied, as Kafka's rebuild does.
                if header.last_offset() >= offset {
                    replay.apply(&header, &chunk[position..position + header.total_bytes()]);
                }
                next = next.max(header.last_offset() + 1);
            }
            if next <= offset {
                break;
            }
            offset = next;
            glommio::yield_if_needed().await;
        }
        Ok(())
    }

    /// Makes the `.txnindex` files match the log: entries whose marker lies
    /// before `replay_start` come from the files (synced before the snapshot
    /// the replay started from was written), the others from the replay;
    /// entries are regrouped by the segment holding their marker, damaged or
    /// stale files are rewritten and files of vanished segments deleted.
    /// Start-up holds every entry in memory once (32 bytes each), then keeps
    /// the newest [`ABORTED_TXNS_IN_MEMORY_MAX`].
    async fn load_txn_index(&self, replay_start: i64, replayed: Vec<AbortedTxn>) {
        let dir = self.log.dir().to_path_buf();
        let segment_bases = self.log.segment_base_offsets();
        let (entries, rewritten) = glommio::executor()
            .spawn_blocking(move || {
                let current = txn_index::read_txn_index_files(&dir);
                let mut all: Vec<AbortedTxn> = current
                    .values()
                    .flatten()
                    .filter(|entry| entry.last_offset < replay_start)
                    .copied()
                    .collect();
                all.extend(replayed);
                let wanted = txn_index::group_by_segment(&sorted_unique(all), &segment_bases);
                let rewritten = txn_index::rewrite_txn_index_files(&dir, &current, &wanted);
                let kept: Vec<AbortedTxn> = wanted.into_values().flatten().collect();
                (sorted_unique(kept), rewritten)
            })
            .await;
        match rewritten {
            Ok(0) => {}
            Ok(files) => {
                tracing::info!(topic = %self.topic, partition = self.index, files, "rewrote txnindex files from the log")
            }
            Err(error) => {
                tracing::error!(topic = %self.topic, partition = self.index, %error, "cannot rewrite txnindex files");
                self.txn_index_write_failed.set(true);
            }
        }
        *self.aborted.borrow_mut() = AbortedTxnCache::from_sorted(&entries);
    }

    /// Every aborted transaction of the log, by marker offset: from memory
    /// when it holds them all, else from the files.
    async fn aborted_transactions_all(&self) -> Vec<AbortedTxn> {
        {
            let cache = self.aborted.borrow();
            if cache.complete_from == i64::MIN {
                return cache.entries.iter().copied().collect();
            }
        }
        let dir = self.log.dir().to_path_buf();
        glommio::executor()
            .spawn_blocking(move || {
                sorted_unique(
                    txn_index::read_txn_index_files(&dir)
                        .into_values()
                        .flatten()
                        .collect(),
                )
            })
            .await
    }

    /// Kafka's `collectAbortedTransactions`: the aborted transactions that
    /// overlap `[fetch_offset, upper_bound_offset)`, as (producer id, first
    /// offset). From memory when it reaches back to `fetch_offset`; else
    /// from the `.txnindex` files of the segment holding `fetch_offset` and
    /// the ones after it, up to the first entry whose LSO reaches the upper
    /// bound (no later marker can close a transaction that started below
    /// it).
    pub async fn aborted_transactions(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Vec<(i64, i64)> {
        {
            let cache = self.aborted.borrow();
            if fetch_offset >= cache.complete_from {
                return txn_index::collect_aborted(
                    cache.entries.iter(),
                    fetch_offset,
                    upper_bound_offset,
                );
            }
        }
        let dir = self.log.dir().to_path_buf();
        let bases = self.log.segment_base_offsets();
        let floor = txn_index::segment_base_holding(&bases, fetch_offset).unwrap_or(i64::MIN);
        let candidates: Vec<i64> = bases.into_iter().filter(|base| *base >= floor).collect();
        glommio::executor()
            .spawn_blocking(move || {
                let mut found = Vec::new();
                for base in candidates {
                    let entries =
                        txn_index::read_txn_index_file(&txn_index::txn_index_path(&dir, base));
                    let complete = entries
                        .iter()
                        .any(|entry| entry.last_stable_offset >= upper_bound_offset);
                    found.extend(txn_index::collect_aborted(
                        &entries,
                        fetch_offset,
                        upper_bound_offset,
                    ));
                    if complete {
                        break;
                    }
                }
                found
            })
            .await
    }

    /// Regroups the `.txnindex` entries by the segments that hold their
    /// markers now (after compaction merged segments). Holds the producer
    /// lock so no marker appends to a file meanwhile.
    async fn reconcile_txn_index(&self) {
        let _permit = self.producer_append_lock.acquire_permit(1).await;
        let dir = self.log.dir().to_path_buf();
        let segment_bases = self.log.segment_base_offsets();
        let rewritten = glommio::executor()
            .spawn_blocking(move || {
                let current = txn_index::read_txn_index_files(&dir);
                let all = sorted_unique(current.values().flatten().copied().collect());
                let wanted = txn_index::group_by_segment(&all, &segment_bases);
                txn_index::rewrite_txn_index_files(&dir, &current, &wanted)
            })
            .await;
        if let Err(error) = rewritten {
            tracing::error!(topic = %self.topic, partition = self.index, %error, "cannot regroup txnindex files after compaction");
            self.txn_index_write_failed.set(true);
        }
    }

    /// True when the log rolled a segment since the newest producer
    /// snapshot was taken (or tried): Kafka snapshots the producer state at
    /// every roll, so a start after kill -9 replays at most about a
    /// segment's worth of log, not everything since the last clean stop.
    pub fn producer_snapshot_due(&self) -> bool {
        !self.deleted.get()
            && self.log.active_segment_base_offset() > self.snapshot_segment_base.get()
    }

    /// Takes a producer snapshot at the log end (see
    /// [`Self::producer_snapshot_due`]): the state is captured under the
    /// producer lock, so it holds exactly the batches below that offset;
    /// the log is synced up to it before the file is written, so after a
    /// crash the snapshot never lies past the recovered log end.
    ///
    /// # Errors
    /// The sync or the snapshot failed (the next roll tries again).
    pub async fn take_producer_snapshot(&self) -> Result<(), PartitionError> {
        let (offset, bytes) = self.capture_producer_state().await;
        self.snapshot_segment_base
            .set(self.log.active_segment_base_offset());
        self.flush(true).await?;
        self.persist_producer_snapshot(offset, bytes).await
    }

    /// Writes `<log end offset>.snapshot` of the producer state. Called
    /// after a clean close of the log.
    ///
    /// # Errors
    /// The snapshot could not be written.
    pub async fn write_producer_snapshot(&self) -> Result<(), PartitionError> {
        let (offset, bytes) = self.capture_producer_state().await;
        self.persist_producer_snapshot(offset, bytes).await
    }

    /// The log end offset and the snapshot bytes of the producer state
    /// there, taken under the producer lock: every batch, marker and
    /// txnindex entry below that offset is in the state, none above it.
    async fn capture_producer_state(&self) -> (i64, Vec<u8>) {
        let _permit = self.producer_append_lock.acquire_permit(1).await;
        (
            self.log.log_end_offset(),
            self.producers.borrow().encode_snapshot(),
        )
    }

    /// Writes the snapshot `bytes` of the state at `offset` (synced, then
    /// renamed into place), then removes the snapshots below it but the
    /// newest: a start uses the newest snapshot at or below the log end, and
    /// the previous one is kept in case this one is unreadable.
    async fn persist_producer_snapshot(
        &self,
        offset: i64,
        bytes: Vec<u8>,
    ) -> Result<(), PartitionError> {
        let dir = self.log.dir().to_path_buf();
        let path = dir.join(snapshot_file_name(offset));
        let _permit = self.snapshot_write_lock.acquire_permit(1).await;
        if self.deleted.get() {
            return Err(self.deleted_error());
        }
        if self.txn_index_write_failed.get() {
            // Without a new snapshot the next start replays the log from the
            // previous one and rebuilds the txnindex entries written since.
            return Err(PartitionError::Snapshot {
                path,
                reason: "a txnindex write failed; the log will be replayed instead".into(),
            });
        }
        let write_path = path.clone();
        glommio::executor()
            .spawn_blocking(move || -> std::io::Result<()> {
                // Entries before the snapshot are never rebuilt from the log.
                txn_index::sync_txn_index_files(&dir)?;
                let temporary = write_path.with_extension(&SNAPSHOT_TEMPORARY_SUFFIX[1..]);
                std::fs::write(&temporary, &bytes)?;
                std::fs::File::open(&temporary)?.sync_all()?;
                std::fs::rename(&temporary, &write_path)?;
                let mut others = list_snapshots_blocking(&dir)?.snapshots;
                others.retain(|(other, _)| *other != offset);
                // Newer ones stay too (a clean close may have written one
                // while this was syncing).
                let previous = others.iter().rposition(|(other, _)| *other < offset);
                for (index, (_, other_path)) in others.iter().enumerate() {
                    if previous.is_some_and(|previous| index < previous) {
                        let _ = std::fs::remove_file(other_path);
                    }
                }
                std::fs::File::open(&dir)?.sync_all()
            })
            .await
            .map_err(|e| PartitionError::Snapshot {
                path,
                reason: e.to_string(),
            })?;
        self.snapshot_offset
            .set(self.snapshot_offset.get().max(offset));
        Ok(())
    }

    /// Forgets producers idle longer than `producer.id.expiration.ms`.
    pub fn expire_producers(&self, now_ms: i64, producer_id_expiration_ms: i64) -> usize {
        self.producers
            .borrow_mut()
            .remove_expired(now_ms, producer_id_expiration_ms)
    }

    /// Waits until everything appended so far is written, and fdatasync'd
    /// when `sync`.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn flush(&self, sync: bool) -> Result<i64, PartitionError> {
        let covered = self.log.flush(sync).await?;
        if sync && covered >= self.last_sync.get().1 {
            self.last_sync.set((std::time::Instant::now(), covered));
        }
        Ok(covered)
    }

    /// Reads whole batches from `offset` up to the high watermark.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, PartitionError> {
        let high_watermark = self.high_watermark();
        Ok(self
            .log
            .read(offset, high_watermark, max_bytes, min_one_batch)
            .await?)
    }

    /// A consumer's read: whole batches from `offset` up to the high
    /// watermark, or for read_committed up to the last stable offset, with
    /// the aborted transactions overlapping what was read (read_committed).
    /// An offset at or past the limit reads nothing.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn fetch(
        &self,
        offset: i64,
        max_bytes: usize,
        read_committed: bool,
    ) -> Result<FetchRead, PartitionError> {
        let (pieces, aborted_transactions) = self
            .fetch_pieces(offset, max_bytes, true, read_committed, false)
            .await?;
        Ok(FetchRead {
            read: pieces.into_read_result(),
            aborted_transactions,
        })
    }

    /// [`Self::fetch`] for sending to a consumer: with `splice`, what lies
    /// in segment files comes back as file ranges for the connection to
    /// splice (see `storage/send.rs`); `min_one_batch` returns the first
    /// batch whatever its size. read_committed reads up to the last stable
    /// offset, always returns the first batch, and lists the aborted
    /// transactions up to an offset bound after the last batch returned
    /// (from the offset index where the batches are file ranges, as Kafka's
    /// fetch upper bound is: a few more aborted transactions than needed,
    /// never fewer).
    ///
    /// # Errors
    /// Storage failures.
    pub async fn fetch_pieces(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        read_committed: bool,
        splice: bool,
    ) -> Result<(Pieces, Option<Vec<(i64, i64)>>), PartitionError> {
        let limit = if read_committed {
            self.last_stable_offset()
        } else {
            self.high_watermark()
        };
        if offset >= limit {
            return Ok((Pieces::default(), read_committed.then(Vec::new)));
        }
        let pieces = self
            .log
            .read_pieces(
                offset,
                limit,
                max_bytes,
                min_one_batch || read_committed,
                splice,
            )
            .await?;
        let aborted = if read_committed {
            Some(match pieces.next_offset_bound() {
                Some(upper_bound_offset) => {
                    self.aborted_transactions(offset, upper_bound_offset).await
                }
                None => Vec::new(),
            })
        } else {
            None
        };
        let log_start_offset = self.log.log_start_offset();
        if read_committed && offset < log_start_offset {
            // Retention deleted segments this read returned data from, and
            // with them their aborted transactions, while it ran: the list
            // may miss some. A moment later the fetch is out of range; so
            // it is now.
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset,
                log_end_offset: self.log.log_end_offset(),
            }
            .into());
        }
        Ok((pieces, aborted))
    }

    /// The producers with state on this partition, by producer id.
    pub fn describe_producers(&self) -> Vec<ProducerDescription> {
        self.producers
            .borrow()
            .entries()
            .map(|(producer_id, entry)| ProducerDescription {
                producer_id,
                producer_epoch: entry.producer_epoch(),
                last_sequence: entry.last_sequence(),
                last_timestamp: entry.last_timestamp_ms(),
                coordinator_epoch: entry.coordinator_epoch(),
                current_txn_start_offset: entry.current_txn_first_offset().unwrap_or(-1),
            })
            .collect()
    }

    /// Open transactions on this partition: (first offset, producer id).
    pub fn open_transactions(&self) -> Vec<(i64, i64)> {
        self.producers.borrow().open_txns().collect()
    }

    /// ListOffsets by timestamp.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<(i64, i64)>, PartitionError> {
        Ok(self.log.offset_for_timestamp(timestamp).await?)
    }

    /// ListOffsets MAX_TIMESTAMP.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, PartitionError> {
        Ok(self.log.max_timestamp_offset().await?)
    }

    /// A receiver that fires on the next append or marker, or None when
    /// data at `offset` is already readable (below the high watermark, or
    /// below the last stable offset for read_committed) or the partition is
    /// deleted.
    pub fn wait_for_data(
        &self,
        offset: i64,
        read_committed: bool,
    ) -> Option<oneshot::Receiver<()>> {
        let available = if read_committed {
            self.last_stable_offset()
        } else {
            self.high_watermark()
        };
        if offset < available || self.deleted.get() {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let mut waiters = self.waiters.borrow_mut();
        waiters.retain(|w| !w.is_canceled());
        waiters.push(tx);
        Some(rx)
    }

    fn wake_waiters(&self) {
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for waiter in waiters {
            let _ = waiter.send(());
        }
    }

    /// Compacts the log's closed segments when the dirty ratio calls for it.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn compact(
        &self,
        config: &CompactionConfig,
    ) -> Result<CompactionStats, PartitionError> {
        if self.deleted.get() {
            return Err(self.deleted_error());
        }
        // Never past the LSO: an open transaction may still abort.
        let clean_below_offset = self.last_stable_offset();
        let active_producers = self.producers.borrow().last_data_offsets();
        let aborted = self.aborted_transactions_all().await;
        if aborted.len() > ABORTED_TXNS_PER_COMPACTION_MAX {
            tracing::warn!(topic = %self.topic, partition = self.index, aborted = aborted.len(), "too many aborted transactions to compact safely; skipping");
            return Ok(CompactionStats::default());
        }
        let request = CompactionRequest {
            now_ms: now_ms(),
            force: false,
            clean_below_offset,
            active_producers: Some(&active_producers),
            aborted_transactions: Some(&aborted),
        };
        let stats = self.log.compact_with(config, &request).await?;
        if stats.segments_read > 0 {
            self.reconcile_txn_index().await;
        }
        Ok(stats)
    }

    /// Deletes the log's oldest segments past `retention.ms` /
    /// `retention.bytes` (see `storage/retention.rs`), never at or past the
    /// last stable offset, and forgets the aborted transactions that went
    /// with them. It does not take the producer lock (a pass can wait for a
    /// roll's fdatasync, which appends must not): a txnindex entry written
    /// meanwhile for a deleted segment is one below the log start, which no
    /// fetch asks for and which the next load drops. When the log start
    /// moves past the newest producer snapshot, a new one is taken (a start
    /// does not use snapshots below the log start).
    ///
    /// # Errors
    /// The partition was deleted; storage failures.
    pub async fn apply_retention(
        &self,
        retention_ms: i64,
        retention_bytes: i64,
        now_ms: i64,
        file_delete_delay_ms: i64,
    ) -> Result<RetentionOutcome, PartitionError> {
        if self.deleted.get() {
            return Err(self.deleted_error());
        }
        let limits = RetentionLimits {
            retention_ms,
            retention_bytes,
            now_ms,
            upper_bound_offset: self.last_stable_offset(),
            file_delete_delay_ms,
        };
        let start_before = self.log.log_start_offset();
        let outcome = self.log.apply_retention(&limits).await?;
        if outcome.log_start_offset > start_before {
            self.follow_log_start(outcome.log_start_offset).await;
        }
        Ok(outcome)
    }

    /// After the log start moved up to `start` (retention, DeleteRecords):
    /// forgets the aborted transactions that ended below it, and takes a
    /// producer snapshot when it passed the newest (a start does not use
    /// snapshots below the log start).
    async fn follow_log_start(&self, start: i64) {
        {
            let mut aborted = self.aborted.borrow_mut();
            while aborted
                .entries
                .front()
                .is_some_and(|entry| entry.last_offset < start)
            {
                aborted.entries.pop_front();
            }
        }
        if start > self.snapshot_offset.get() {
            if let Err(error) = self.take_producer_snapshot().await {
                tracing::warn!(topic = %self.topic, partition = self.index, %error, "producer snapshot after the log start moved failed");
            }
        }
    }

    /// DeleteRecords on this partition (Kafka's `deleteRecordsOnLeader`):
    /// moves the log start up to `offset`, -1 meaning the high watermark;
    /// an offset below 0 or past the high watermark is out of range. The
    /// new start is durable when this returns; the aborted transactions
    /// that ended below it are forgotten, a producer snapshot is taken when
    /// the start passed the newest, and the segments wholly below it are
    /// deleted (Kafka leaves those to its next retention check). Returns
    /// the log start (Kafka's low watermark with one replica).
    ///
    /// # Errors
    /// The partition was deleted; storage failures;
    /// [`StorageError::OffsetOutOfRange`] for an offset it cannot take.
    pub async fn delete_records(
        &self,
        offset: i64,
        file_delete_delay_ms: i64,
    ) -> Result<i64, PartitionError> {
        if self.deleted.get() {
            return Err(self.deleted_error());
        }
        let high_watermark = self.high_watermark();
        let target = if offset == -1 { high_watermark } else { offset };
        if target < 0 || target > high_watermark {
            return Err(PartitionError::Storage(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: high_watermark,
            }));
        }
        let start_before = self.log.log_start_offset();
        let start = self.log.advance_start(target).await?;
        if start > start_before {
            self.follow_log_start(start).await;
            if let Err(error) = self
                .apply_retention(-1, -1, now_ms(), file_delete_delay_ms)
                .await
            {
                tracing::warn!(topic = %self.topic, partition = self.index, %error, "deleting segments below the log start failed; the next retention pass retries");
            }
        }
        Ok(self.log_start_offset())
    }

    /// Closes the log cleanly (shutdown).
    ///
    /// # Errors
    /// Storage failures.
    pub async fn close(&self) -> Result<(), PartitionError> {
        self.wake_waiters();
        self.log.close().await?;
        self.write_producer_snapshot().await
    }

    /// Marks the partition deleted, wakes its waiters and renames its
    /// directory for deletion ([`crate::storage::Log::delete`]), returning
    /// the new path.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn delete(&self) -> Result<PathBuf, PartitionError> {
        self.deleted.set(true);
        self.wake_waiters();
        Ok(self.log.clone().delete().await?)
    }

    /// The partition's topic was deleted.
    pub fn is_deleted(&self) -> bool {
        self.deleted.get()
    }

    /// Whether a compaction of this partition failed since it was opened
    /// (Kafka's uncleanable partitions): the cleaner skips it.
    pub fn is_uncleanable(&self) -> bool {
        self.uncleanable.get()
    }

    /// Bytes a compaction of the partition would read
    /// ([`Log::dirty_closed_bytes`]).
    pub fn dirty_closed_bytes(&self) -> u64 {
        self.log.dirty_closed_bytes()
    }

    /// Whether the partition's log failed: the cleaner skips it too, as
    /// Kafka's skips a log whose directory went offline.
    pub fn log_failed(&self) -> bool {
        self.log.is_failed()
    }

    /// Marks the partition uncleanable after `error` failed its
    /// compaction, as Kafka's cleaner marks a partition whose cleaning
    /// threw on its data, and says whether it did. Not marked: a
    /// partition that went away (deleted, closed at shutdown), a second
    /// compaction refused, a failed log (Kafka takes its directory
    /// offline instead), and an I/O error, which the next pass tries
    /// again (a full disk may have room by then).
    pub fn mark_uncleanable_after(&self, error: &PartitionError) -> bool {
        let not_the_data = matches!(
            error,
            PartitionError::Deleted { .. }
                | PartitionError::Storage(
                    StorageError::Closed { .. }
                        | StorageError::CompactionInProgress { .. }
                        | StorageError::Io { .. }
                )
        );
        let marked = !not_the_data && !self.deleted.get() && !self.log.is_failed();
        if marked {
            self.uncleanable.set(true);
        }
        marked
    }

    fn deleted_error(&self) -> PartitionError {
        PartitionError::Deleted {
            topic: self.topic.clone(),
            partition: self.index,
        }
    }
}

/// Entries sorted by marker offset, exact duplicates removed (a crash
/// during a regrouping can leave an entry in two files).
fn sorted_unique(mut entries: Vec<AbortedTxn>) -> Vec<AbortedTxn> {
    entries.sort_by_key(|entry| (entry.last_offset, *entry));
    entries.dedup();
    entries
}

/// Rewrites a batch for a LogAppendTime topic: sets the timestamp-type bit and
/// maxTimestamp to `now`, and recomputes the CRC (both fields are covered by
/// it), as Kafka does: in place when nothing else holds the batch's buffer
/// (the produce path), else on a copy.
fn stamp_log_append_time(batch: Bytes, header: &BatchHeader, now: i64) -> (Bytes, BatchHeader) {
    let mut copy = batch
        .try_into_mut()
        .unwrap_or_else(|shared| BytesMut::from(&shared[..]));
    let attributes = header.attributes | ATTR_TIMESTAMP_TYPE;
    copy[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    copy[35..43].copy_from_slice(&now.to_be_bytes());
    let crc = crc32c::crc32c(&copy[ATTRIBUTES_OFFSET..header.total_bytes()]);
    copy[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    let mut stamped = *header;
    stamped.attributes = attributes;
    stamped.max_timestamp = now;
    stamped.crc = crc;
    (copy.freeze(), stamped)
}

#[cfg(test)]
impl Partition {
    /// Simulates kill -9: drops the partition (the caller holds the only
    /// handle) without closing its log or writing a producer snapshot.
    pub(crate) async fn crash_for_tests(self: Rc<Self>) {
        let Ok(partition) = Rc::try_unwrap(self) else {
            panic!("another handle on the partition is alive");
        };
        partition.log.crash_for_tests().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::{
        build_batch, build_producer_batch, tests::sample_batch, validate_batch, BatchProducer,
        NewRecord,
    };
    use crate::storage::{
        next_offset_after_pieces, run_on_executor, test_support::small_config, txn_index,
    };
    use std::path::Path;

    const SETTINGS: PartitionSettings = PartitionSettings {
        log_append_time: false,
        flush_messages: u64::MAX,
        flush_ms: u64::MAX,
    };

    /// Creates the partition, or opens it as a start does.
    async fn open_partition(dir: &Path, create: bool, clean: bool) -> Rc<Partition> {
        open_partition_with(dir, small_config(1 << 20), create, clean).await
    }

    async fn open_partition_with(
        dir: &Path,
        config: LogConfig,
        create: bool,
        clean: bool,
    ) -> Rc<Partition> {
        if !create {
            return Partition::open("t".into(), 0, Uuid::nil(), 0, dir, config, clean, SETTINGS)
                .await
                .expect("partition opens");
        }
        let log = Log::create(dir, config, Uuid::nil()).await;
        let partition = Partition::new(
            "t".into(),
            0,
            Uuid::nil(),
            0,
            log.expect("log creates"),
            SETTINGS,
        );
        partition.load_producer_state().await.expect("state loads");
        partition
    }

    /// Goal: a directory of another topic is refused with nothing in it
    /// changed, even a leftover temporary snapshot, which its own topic's
    /// open removes. Method: a crashed partition with a `.snapshot.tmp`
    /// opened under another topic id, then under its own.
    #[test]
    fn another_topics_directory_is_refused_untouched() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let p = open_partition(&dir, true, true).await;
            append(&p, keyed("a", "1", None)).await;
            p.log.flush(true).await.unwrap();
            p.crash_for_tests().await;
            let temporary = dir.join(format!("00000000000000000001{SNAPSHOT_TEMPORARY_SUFFIX}"));
            std::fs::write(&temporary, b"torn").unwrap();
            for clean in [true, false] {
                let refused = Partition::open(
                    "t".into(),
                    0,
                    Uuid::new_v4(),
                    0,
                    &dir,
                    small_config(1 << 20),
                    clean,
                    SETTINGS,
                )
                .await;
                assert!(
                    matches!(
                        refused,
                        Err(PartitionError::Storage(StorageError::ForeignLogDir { .. }))
                    ),
                    "{:?}",
                    refused.err()
                );
                assert!(temporary.exists());
            }
            let p = open_partition(&dir, false, false).await;
            assert_eq!(p.log.log_end_offset(), 1);
            assert!(!temporary.exists());
        });
    }

    /// Goal: a compaction that fails on the log's data marks the partition
    /// uncleanable; one that stops because the partition went away, or on
    /// an I/O error, does not. Method: each kind of error in turn.
    #[test]
    fn only_a_failed_compaction_marks_the_partition_uncleanable() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let p = open_partition(&dir, true, true).await;
            let gone = [
                p.deleted_error(),
                PartitionError::Storage(StorageError::Closed { dir: dir.clone() }),
                PartitionError::Storage(StorageError::CompactionInProgress { dir: dir.clone() }),
                PartitionError::Storage(StorageError::io(
                    "writing",
                    dir.join("00000000000000000000.log.cleaned"),
                    std::io::Error::from_raw_os_error(28),
                )),
            ];
            for error in &gone {
                assert!(!p.mark_uncleanable_after(error), "{error}");
            }
            assert!(!p.is_uncleanable());
            let damaged = PartitionError::Storage(StorageError::Corrupt {
                path: dir.join("00000000000000000000.log"),
                position: 0,
                reason: "bad CRC".to_string(),
            });
            assert!(p.mark_uncleanable_after(&damaged));
            assert!(p.is_uncleanable());
            // Already marked: an error that marks nothing says so.
            assert!(!p.mark_uncleanable_after(&p.deleted_error()));
            assert!(p.is_uncleanable());
        });
    }

    /// Goal: retention never deletes at or past the last stable offset, and
    /// a read_committed fetch that overlapped a deletion is answered out of
    /// range rather than without the aborted transactions of the deleted
    /// segments. Method: no tail cache (fetches read the files and wait);
    /// an aborted transaction at 0-1, an open one at 2, plain data after;
    /// retention of everything old, before and after the commit, with a
    /// read_committed fetch from 0 pending during the second.
    #[test]
    fn retention_stops_at_the_lso_and_overlapping_read_committed_fetches_fail() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let log = Log::create(&dir, small_config(0), Uuid::nil())
                .await
                .unwrap();
            let partition = Partition::new("t".into(), 0, Uuid::nil(), 0, log, SETTINGS);
            partition.load_producer_state().await.unwrap();
            assert_eq!(
                append(&partition, keyed("a", "aborted", Some((2, 0)))).await,
                0
            );
            assert_eq!(partition.write_txn_marker(2, 0, 0, false).await.unwrap(), 1);
            assert_eq!(
                append(&partition, keyed("b", "open", Some((3, 0)))).await,
                2
            );
            for _ in 0..30 {
                let plain = Bytes::from(sample_batch(0, 3, 1_000));
                let header = validate_batch(&plain).unwrap();
                partition.append(plain, &header).await.unwrap();
            }
            partition.log.flush(true).await.unwrap();
            let far_future = 4_000_000_000_000;
            // Segments roll by record age, so the marker (stamped now) starts
            // a segment after the first batch (stamped 1000): only that one
            // is wholly below the open transaction at 2.
            let held = partition
                .apply_retention(0, -1, far_future, 0)
                .await
                .unwrap();
            let start = partition.log_start_offset();
            assert!(start <= 2, "{held:?}");

            partition.write_txn_marker(3, 0, 0, true).await.unwrap();
            let quiet = partition.fetch(start, 1, true).await.unwrap();
            assert_eq!(quiet.aborted_transactions, Some(vec![(2, 0)]));
            let mut fetch = Box::pin(partition.fetch_pieces(start, 1, true, true, false));
            assert!(futures::poll!(fetch.as_mut()).is_pending());
            let outcome = partition
                .apply_retention(0, -1, far_future, 0)
                .await
                .unwrap();
            assert!(outcome.log_start_offset > 2, "{outcome:?}");
            assert!(matches!(
                fetch.await,
                Err(PartitionError::Storage(
                    StorageError::OffsetOutOfRange { .. }
                ))
            ));
            let after = partition
                .fetch(outcome.log_start_offset, 1, true)
                .await
                .unwrap();
            assert!(!after.read.batches.is_empty());
        });
    }

    /// Goal: once a segment rolls a producer snapshot is due, so a start
    /// after a crash replays the log from it rather than from the start;
    /// retention that moves the log start past the newest snapshot takes
    /// one, so a producer whose batches it deleted is still known after a
    /// crash: a retry of its last batch is a duplicate, answered with the
    /// original offset and not written again, as in Kafka; a snapshot below
    /// the log start is never used. Method: an idempotent batch, plain
    /// batches over several segments, the due snapshot, more batches; crash
    /// and reopen with the snapshot and then without it, counting the
    /// segment bytes the state's rebuild reads; then retention of every
    /// closed segment, a crash and the retry; then a crash with only the
    /// older snapshot left.
    #[test]
    fn producer_snapshots_taken_at_rolls_bound_the_replay_and_outlive_retention() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let idempotent = || idempotent_batch(7, 0);
            let plain = |partition: Rc<Partition>| async move {
                for _ in 0..20 {
                    let batch = Bytes::from(sample_batch(0, 3, now_ms()));
                    let header = validate_batch(&batch).unwrap();
                    partition.append(batch, &header).await.unwrap();
                }
            };
            let partition = open_partition(&dir, true, true).await;
            assert!(
                !partition.producer_snapshot_due(),
                "a new log has not rolled"
            );
            assert_eq!(append(&partition, idempotent()).await, 0);
            plain(partition.clone()).await;
            assert!(partition.producer_snapshot_due(), "the log rolled");
            partition.take_producer_snapshot().await.unwrap();
            assert!(!partition.producer_snapshot_due());
            let snapshot_offset = partition.log.log_end_offset();
            assert!(dir.join(snapshot_file_name(snapshot_offset)).exists());
            plain(partition.clone()).await;
            partition.flush(true).await.unwrap();
            let log_end_offset = partition.log.log_end_offset();
            partition.crash_for_tests().await;

            let reopen = |dir: PathBuf| async move {
                let log = Log::open(&dir, small_config(0), false).await.unwrap();
                let partition = Partition::new("t".into(), 0, Uuid::nil(), 0, log, SETTINGS);
                let before = crate::storage::segment_bytes_read();
                partition.load_producer_state().await.unwrap();
                (partition, crate::storage::segment_bytes_read() - before)
            };
            let (partition, from_snapshot) = reopen(dir.clone()).await;
            assert_eq!(partition.log.log_end_offset(), log_end_offset);
            assert_eq!(partition.describe_producers().len(), 1);
            partition.crash_for_tests().await;
            let kept = dir.join(snapshot_file_name(snapshot_offset));
            let aside = root.path().join("aside.snapshot");
            std::fs::rename(&kept, &aside).unwrap();
            let (partition, from_start) = reopen(dir.clone()).await;
            assert_eq!(partition.describe_producers().len(), 1);
            assert!(
                from_snapshot > 0 && from_snapshot * 3 < from_start * 2,
                "replay from the snapshot read {from_snapshot} bytes, from the start {from_start}"
            );
            partition.crash_for_tests().await;
            std::fs::rename(&aside, &kept).unwrap();

            // Retention moves the log start past the snapshot, so it takes
            // one at the log end.
            let (partition, _) = reopen(dir.clone()).await;
            let outcome = partition.apply_retention(-1, 0, now_ms(), 0).await.unwrap();
            assert!(outcome.log_start_offset > snapshot_offset, "{outcome:?}");
            let newest = dir.join(snapshot_file_name(log_end_offset));
            assert!(newest.exists(), "retention took a snapshot");
            partition.crash_for_tests().await;
            let (partition, _) = reopen(dir.clone()).await;
            assert!(partition.log_start_offset() > 0);
            let (info, _) = partition
                .append(idempotent().0, &idempotent().1)
                .await
                .unwrap();
            assert_eq!(info.base_offset, 0, "the retry is a duplicate of offset 0");
            assert_eq!(partition.log.log_end_offset(), log_end_offset);
            // A snapshot below the log start is never used: the markers
            // between it and the log start, which may close transactions it
            // holds open, are gone.
            partition.crash_for_tests().await;
            std::fs::remove_file(&newest).unwrap();
            assert!(dir.join(snapshot_file_name(snapshot_offset)).exists());
            let (partition, _) = reopen(dir.clone()).await;
            assert!(partition.describe_producers().is_empty());
        });
    }

    /// Goal: after a crash the scan that checks the active segment also
    /// replays the producer batches after the snapshot, so the segment is
    /// read once, and the state it builds (producers, open transactions,
    /// aborted transactions and their txnindex, the LSO) is the one a
    /// separate replay of the log builds. Method: a snapshot inside the
    /// active segment with a transaction open; after it idempotent,
    /// aborted, committed and open transactional batches among plain ones;
    /// a crash; the partition opened as a start does and, after another
    /// crash, with the log opened first and the state loaded after,
    /// counting the segment bytes each reads; then an idempotent retry.
    #[test]
    fn recovery_scan_replays_the_producer_state_so_the_active_segment_is_read_once() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let config = one_segment_config();
            let idempotent = |base_sequence| idempotent_batch(7, base_sequence);
            let plain = |partition: Rc<Partition>, count| async move {
                for _ in 0..count {
                    let batch = Bytes::from(sample_batch(0, 20, now_ms()));
                    let header = validate_batch(&batch).unwrap();
                    partition.append(batch, &header).await.unwrap();
                }
            };
            let partition = open_partition_with(&dir, config.clone(), true, true).await;
            assert_eq!(append(&partition, idempotent(0)).await, 0);
            let committed_first = append(&partition, keyed("k", "committed", Some((3, 0)))).await;
            plain(partition.clone(), 5).await;
            partition.take_producer_snapshot().await.unwrap();
            let snapshot_offset = partition.log.log_end_offset();
            plain(partition.clone(), 100).await;
            let retried = append(&partition, idempotent(1)).await;
            let aborted_first = append(&partition, keyed("k", "aborted", Some((4, 0)))).await;
            plain(partition.clone(), 100).await;
            let abort = partition.write_txn_marker(4, 0, 2, false).await.unwrap();
            partition.write_txn_marker(3, 0, 2, true).await.unwrap();
            let open_first = append(&partition, keyed("k", "open", Some((5, 0)))).await;
            plain(partition.clone(), 100).await;
            partition.flush(true).await.unwrap();
            assert_eq!(
                partition.log.segment_base_offsets(),
                vec![0],
                "the snapshot lies in the active segment"
            );
            assert!(committed_first < snapshot_offset && snapshot_offset < retried);
            let expected_aborted = vec![AbortedTxn {
                producer_id: 4,
                first_offset: aborted_first,
                last_offset: abort,
                // Producer 3's transaction is still open at the abort.
                last_stable_offset: committed_first,
            }];
            let high_watermark = partition.high_watermark();
            let producers = partition.describe_producers();
            assert_eq!(producers.len(), 4);
            partition.crash_for_tests().await;
            let segment_bytes = std::fs::metadata(dir.join("00000000000000000000.log"))
                .unwrap()
                .len();

            let before = crate::storage::segment_bytes_read();
            let partition = open_partition_with(&dir, config.clone(), false, false).await;
            let once = crate::storage::segment_bytes_read() - before;
            let state = |partition: Rc<Partition>| async move {
                let aborted = partition.aborted_transactions_all().await;
                (
                    partition.high_watermark(),
                    partition.last_stable_offset(),
                    partition.open_transactions(),
                    partition.describe_producers(),
                    aborted,
                    txn_index::read_txn_index_files(partition.log.dir()),
                )
            };
            let scanned = state(partition.clone()).await;
            assert_eq!(scanned.0, high_watermark);
            assert_eq!(scanned.1, open_first);
            assert_eq!(scanned.2, vec![(open_first, 5)]);
            assert_eq!(scanned.3, producers);
            assert_eq!(scanned.4, expected_aborted);
            partition.crash_for_tests().await;

            let before = crate::storage::segment_bytes_read();
            let log = Log::open(&dir, config.clone(), false).await.unwrap();
            let partition = Partition::new("t".into(), 0, Uuid::nil(), 0, log, SETTINGS);
            partition.load_producer_state().await.unwrap();
            let twice = crate::storage::segment_bytes_read() - before;
            assert_eq!(state(partition.clone()).await, scanned);
            assert!(
                once < segment_bytes + segment_bytes / 4 && twice > segment_bytes * 3 / 2,
                "the segment has {segment_bytes} bytes; open read {once}, recovery and a separate replay {twice}"
            );
            partition.crash_for_tests().await;

            let partition = open_partition_with(&dir, config, false, false).await;
            let (info, _) = partition
                .append(idempotent(1).0, &idempotent(1).1)
                .await
                .unwrap();
            assert_eq!(info.base_offset, retried, "the retry is a duplicate");
            assert_eq!(partition.high_watermark(), high_watermark);
        });
    }

    /// Goal: with no snapshot and a single segment (a log that never rolled
    /// nor closed cleanly) a start after a crash replays the whole log in
    /// the scan that checks it, and stops with it at the first bad batch: a
    /// batch cut from the log is not in the producer state. Method: batches
    /// of an idempotent producer and an open transaction; a crash; a
    /// further batch of another producer written after the log end with
    /// its CRC broken; the partition opened, counting the segment bytes
    /// read, and compared with a separate replay.
    #[test]
    fn recovery_scan_without_a_snapshot_replays_a_single_segment_up_to_its_first_bad_batch() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let config = LogConfig {
                preallocate_bytes: 0,
                ..one_segment_config()
            };
            let idempotent = idempotent_batch;
            let partition = open_partition_with(&dir, config.clone(), true, true).await;
            let mut data_bytes = 0u64;
            for sequence in 0..200 {
                let batch = idempotent(7, sequence);
                data_bytes += batch.0.len() as u64;
                append(&partition, batch).await;
                let plain = Bytes::from(sample_batch(0, 20, 1_000));
                data_bytes += plain.len() as u64;
                let header = validate_batch(&plain).unwrap();
                partition.append(plain, &header).await.unwrap();
            }
            let open = keyed("k", "open", Some((5, 0)));
            data_bytes += open.0.len() as u64;
            let open_first = append(&partition, open).await;
            partition.flush(true).await.unwrap();
            let log_end_offset = partition.log.log_end_offset();
            let producers = partition.describe_producers();
            assert_eq!(producers.len(), 2);
            partition.crash_for_tests().await;

            // A batch of producer 8 after the log end, its last byte flipped.
            let mut torn =
                crate::storage::test_support::stamped(&idempotent(8, 0).0, log_end_offset, 0);
            *torn.last_mut().unwrap() ^= 0xff;
            let segment = dir.join("00000000000000000000.log");
            {
                use std::os::unix::fs::FileExt;
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&segment)
                    .unwrap();
                file.write_all_at(&torn, data_bytes).unwrap();
            }
            assert!(list_snapshots_blocking(&dir).unwrap().snapshots.is_empty());

            let before = crate::storage::segment_bytes_read();
            let partition = open_partition_with(&dir, config.clone(), false, false).await;
            let once = crate::storage::segment_bytes_read() - before;
            assert_eq!(partition.log.log_end_offset(), log_end_offset);
            assert_eq!(partition.describe_producers(), producers);
            assert_eq!(partition.open_transactions(), vec![(open_first, 5)]);
            assert_eq!(partition.last_stable_offset(), open_first);
            partition.crash_for_tests().await;

            let before = crate::storage::segment_bytes_read();
            let log = Log::open(&dir, config, false).await.unwrap();
            let partition = Partition::new("t".into(), 0, Uuid::nil(), 0, log, SETTINGS);
            partition.load_producer_state().await.unwrap();
            let twice = crate::storage::segment_bytes_read() - before;
            assert_eq!(partition.describe_producers(), producers);
            assert!(
                once < data_bytes + data_bytes / 4 && twice > data_bytes * 3 / 2,
                "the log has {data_bytes} bytes; open read {once}, recovery and a separate replay {twice}"
            );
        });
    }

    /// Goal: writing a producer snapshot keeps the newest one below it (in
    /// case the new one cannot be read) and every newer one (a clean close
    /// may write one while a roll's snapshot syncs), and removes the rest.
    /// Method: snapshots written at offsets in and out of order; the
    /// directory listed after each.
    #[test]
    fn producer_snapshots_keep_the_previous_one_and_every_newer_one() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let partition = open_partition(&dir, true, true).await;
            let on_disk = || {
                let mut offsets: Vec<i64> = std::fs::read_dir(&dir)
                    .unwrap()
                    .flatten()
                    .filter_map(|entry| {
                        entry
                            .file_name()
                            .to_str()
                            .and_then(parse_snapshot_file_name)
                    })
                    .collect();
                offsets.sort();
                offsets
            };
            let empty = || ProducerStateManager::new().encode_snapshot();
            for offset in [10, 20, 30] {
                partition
                    .persist_producer_snapshot(offset, empty())
                    .await
                    .unwrap();
            }
            assert_eq!(on_disk(), vec![20, 30]);
            partition
                .persist_producer_snapshot(5, empty())
                .await
                .unwrap();
            assert_eq!(on_disk(), vec![5, 20, 30]);
            partition
                .persist_producer_snapshot(25, empty())
                .await
                .unwrap();
            assert_eq!(on_disk(), vec![20, 25, 30]);
        });
    }

    /// A batch of one keyed record; transactional from `producer` when given.
    fn keyed(key: &str, value: &str, producer: Option<(i64, i32)>) -> (Bytes, BatchHeader) {
        let record = NewRecord {
            key: Some(key.as_bytes()),
            value: Some(value.as_bytes()),
        };
        let bytes = match producer {
            Some((producer_id, base_sequence)) => build_producer_batch(
                &[record],
                1_000,
                Some(BatchProducer {
                    producer_id,
                    producer_epoch: 0,
                    base_sequence,
                    transactional: true,
                }),
            ),
            None => build_batch(&[record], 1_000),
        };
        let header = validate_batch(&bytes).expect("built batch is valid");
        (Bytes::from(bytes), header)
    }

    /// One record of an idempotent (not transactional) producer, epoch 0.
    fn idempotent_batch(producer_id: i64, base_sequence: i32) -> (Bytes, BatchHeader) {
        let record = NewRecord {
            key: Some(b"k"),
            value: Some(b"idempotent"),
        };
        let bytes = build_producer_batch(
            &[record],
            1_000,
            Some(BatchProducer {
                producer_id,
                producer_epoch: 0,
                base_sequence,
                transactional: false,
            }),
        );
        let header = validate_batch(&bytes).expect("built batch is valid");
        (Bytes::from(bytes), header)
    }

    /// Segments of 1 MiB whatever the records' timestamps (1000 and now).
    fn one_segment_config() -> LogConfig {
        LogConfig {
            segment_bytes: 1 << 20,
            segment_ms: u64::MAX / 4,
            index_interval_bytes: 4096,
            segment_index_bytes: 1 << 16,
            ..small_config(0)
        }
    }

    async fn append(partition: &Partition, batch: (Bytes, BatchHeader)) -> i64 {
        let (info, _) = partition.append(batch.0, &batch.1).await.expect("append");
        info.base_offset
    }

    /// (key, value, producer id) of every data record, in offset order.
    async fn data_records(
        partition: &Partition,
        read_committed: bool,
    ) -> Vec<(String, String, i64)> {
        let fetched = partition.fetch(0, 1 << 20, read_committed).await.unwrap();
        let mut bytes = fetched.read.into_contiguous();
        let sets = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut bytes).unwrap();
        sets.into_iter()
            .flat_map(|set| set.records)
            .filter(|record| !record.control)
            .map(|record| {
                let text =
                    |b: Option<Bytes>| String::from_utf8(b.unwrap_or_default().to_vec()).unwrap();
                (text(record.key), text(record.value), record.producer_id)
            })
            .collect()
    }

    /// Goal: read_committed fetches spliced from the segment files return
    /// the bytes DMA reads return and list every aborted transaction the
    /// DMA read lists (its bound is exact; the splice read's comes from the
    /// offset index, so it may list a few more, all starting past what the
    /// DMA read returned). Method: interleaved transactions of five
    /// producers, odd ones aborted, with plain batches between, over several
    /// segments and no tail cache; fetches at many offsets and budgets.
    #[test]
    fn read_committed_splice_reads_list_the_aborted_transactions_dma_reads_do() {
        use crate::storage::{test_support::piece_bytes, LogConfig, Piece};
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let config = LogConfig {
                segment_bytes: 256 << 10,
                index_interval_bytes: 4096,
                segment_index_bytes: 1 << 20,
                write_buffer_bytes: 64 << 10,
                write_buffer_bytes_max: 256 << 10,
                preallocate_bytes: 0,
                ..small_config(0)
            };
            let log = Log::create(&dir, config, Uuid::nil()).await.unwrap();
            let partition = Partition::new("t".into(), 0, Uuid::nil(), 0, log, SETTINGS);
            partition.load_producer_state().await.unwrap();
            let value = vec![b'v'; 1500];
            let mut sequences = [0i32; 6];
            for round in 0..60 {
                for step in 0..10 {
                    let producer_id = (step % 5 + 1) as i64;
                    let record = NewRecord {
                        key: Some(b"k"),
                        value: Some(&value),
                    };
                    let bytes = build_producer_batch(
                        &[record],
                        1_000,
                        Some(BatchProducer {
                            producer_id,
                            producer_epoch: 0,
                            base_sequence: sequences[producer_id as usize],
                            transactional: true,
                        }),
                    );
                    sequences[producer_id as usize] += 1;
                    let header = validate_batch(&bytes).unwrap();
                    partition.append(Bytes::from(bytes), &header).await.unwrap();
                    if step == 4 {
                        let plain = Bytes::from(sample_batch(0, 3, 1_000 + round));
                        let header = validate_batch(&plain).unwrap();
                        partition.append(plain, &header).await.unwrap();
                    }
                }
                for producer_id in 1..=5i64 {
                    partition
                        .write_txn_marker(producer_id, 0, 0, producer_id % 2 == 0)
                        .await
                        .unwrap();
                }
            }
            partition.log.flush(false).await.unwrap();
            assert!(partition.log.segment_base_offsets().len() > 2);
            let end = partition.last_stable_offset();
            assert_eq!(end, partition.high_watermark());
            let (mut spliced_reads, mut extra_listed) = (0, 0);
            for (i, offset) in (0..end).step_by(7).enumerate() {
                let budget = [1usize, 5_000, 20_000, 100_000, 1 << 20][i % 5];
                let (dma, dma_aborted) = partition
                    .fetch_pieces(offset, budget, false, true, false)
                    .await
                    .unwrap();
                let (spliced, spliced_aborted) = partition
                    .fetch_pieces(offset, budget, false, true, true)
                    .await
                    .unwrap();
                if spliced
                    .pieces
                    .iter()
                    .any(|piece| matches!(piece, Piece::File(_)))
                {
                    spliced_reads += 1;
                }
                assert!(
                    piece_bytes(&spliced.pieces) == piece_bytes(&dma.pieces),
                    "offset {offset} budget {budget}"
                );
                let dma_aborted = dma_aborted.unwrap();
                let spliced_aborted = spliced_aborted.unwrap();
                let dma_next = dma.next_offset_bound().unwrap();
                for entry in &dma_aborted {
                    assert!(
                        spliced_aborted.contains(entry),
                        "offset {offset} budget {budget}: {entry:?} missing"
                    );
                }
                for entry in &spliced_aborted {
                    if !dma_aborted.contains(entry) {
                        extra_listed += 1;
                        assert!(entry.1 >= dma_next, "offset {offset}: {entry:?}");
                    }
                }
            }
            assert!(spliced_reads > 50, "only {spliced_reads} spliced reads");
            // The bound from the index is a little past the exact one.
            assert!(extra_listed < spliced_reads, "{extra_listed} extra entries");
            partition.close().await.unwrap();
        });
    }

    /// Goal: the LSO stays at the first offset of the oldest open
    /// transaction and moves with markers; read_committed fetches stop there
    /// and list the aborted transaction; read_uncommitted gets everything and
    /// no list; DescribeProducers sees both producers. Method: plain data,
    /// two transactions, a COMMIT and an ABORT, checked after each step.
    #[test]
    fn last_stable_offset_follows_open_transactions_and_markers() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let partition = open_partition(&dir, true, true).await;
            let plain = Bytes::from(sample_batch(0, 3, 1_000));
            let header = validate_batch(&plain).unwrap();
            partition.append(plain, &header).await.unwrap();
            assert_eq!(partition.last_stable_offset(), 3);
            assert_eq!(append(&partition, keyed("a", "1", Some((1, 0)))).await, 3);
            assert_eq!(append(&partition, keyed("b", "2", Some((2, 0)))).await, 4);
            assert_eq!(partition.high_watermark(), 5);
            assert_eq!(partition.last_stable_offset(), 3);
            assert!(partition.wait_for_data(3, true).is_some());
            assert!(partition.wait_for_data(3, false).is_none());
            let committed = partition.fetch(0, 1 << 20, true).await.unwrap();
            assert_eq!(next_offset_after_pieces(&committed.read.batches), Some(3));
            assert_eq!(committed.aborted_transactions, Some(vec![]));
            assert!(partition
                .fetch(3, 1 << 20, true)
                .await
                .unwrap()
                .read
                .batches
                .is_empty());

            assert_eq!(partition.write_txn_marker(1, 0, 0, true).await.unwrap(), 5);
            assert_eq!(partition.last_stable_offset(), 4);
            assert_eq!(partition.write_txn_marker(2, 0, 0, false).await.unwrap(), 6);
            assert_eq!(partition.last_stable_offset(), 7);
            assert_eq!(partition.open_transactions(), vec![]);
            let committed = partition.fetch(0, 1 << 20, true).await.unwrap();
            assert_eq!(committed.aborted_transactions, Some(vec![(2, 4)]));
            assert_eq!(next_offset_after_pieces(&committed.read.batches), Some(7));
            assert_eq!(partition.aborted_transactions(5, 7).await, vec![(2, 4)]);
            assert_eq!(partition.aborted_transactions(7, 9).await, vec![]);
            let uncommitted = partition.fetch(0, 1 << 20, false).await.unwrap();
            assert_eq!(uncommitted.aborted_transactions, None);
            assert_eq!(data_records(&partition, false).await.len(), 5);

            let producers = partition.describe_producers();
            assert_eq!(producers.len(), 2);
            assert_eq!(producers[0].producer_id, 1);
            assert_eq!(producers[0].current_txn_start_offset, -1);
            assert_eq!(producers[1].last_sequence, 0);
            let files = txn_index::read_txn_index_files(&dir);
            let entries: Vec<AbortedTxn> = files.into_values().flatten().collect();
            assert_eq!(
                entries,
                vec![AbortedTxn {
                    producer_id: 2,
                    first_offset: 4,
                    last_offset: 6,
                    last_stable_offset: 7,
                }]
            );
            // A marker from an older coordinator is fenced.
            let fenced = partition
                .write_txn_marker(2, 0, -5, true)
                .await
                .unwrap_err();
            assert!(matches!(
                fenced,
                PartitionError::Producer(ProducerError::CoordinatorFenced { .. })
            ));
        });
    }

    /// Goal: the offset after the last batch is found whatever way the
    /// batches are split into pieces (the log's tail cache hands out headers
    /// and bodies separately). Method: three batches cut into pieces of
    /// every size from 1 byte up, plus an empty list and a lone fragment.
    #[test]
    fn next_offset_is_found_across_any_split_of_the_pieces() {
        let mut joined = Vec::new();
        for (base_offset, count) in [(0i64, 3), (3, 1), (9, 2)] {
            joined.extend(sample_batch(base_offset, count, 1_000));
        }
        for piece_bytes in 1..=joined.len() {
            let pieces: Vec<Bytes> = joined
                .chunks(piece_bytes)
                .map(Bytes::copy_from_slice)
                .collect();
            assert_eq!(next_offset_after_pieces(&pieces), Some(11), "{piece_bytes}");
        }
        assert_eq!(next_offset_after_pieces(&[]), None);
        assert_eq!(
            next_offset_after_pieces(&[Bytes::copy_from_slice(&joined[..20])]),
            None
        );
    }

    /// Goal: after kill -9 (no snapshot, txnindex files possibly stale),
    /// the open transaction still holds the LSO, aborted entries are
    /// rebuilt from the log and stale entries past the log end are removed;
    /// a later ABORT releases the LSO; a clean restart keeps it all. Method:
    /// transactions across several small segments, a fake entry and a
    /// deleted file, crash, reopen, check; abort; close; reopen.
    #[test]
    fn recovery_rebuilds_open_transactions_and_the_txnindex_from_the_log() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let partition = open_partition(&dir, true, true).await;
            let mut expected = Vec::new();
            for round in 0..6i64 {
                let producer_id = 10 + round;
                let first = append(&partition, keyed("k", "v", Some((producer_id, 0)))).await;
                append(&partition, keyed("k", "w", None)).await;
                let commit = round % 2 == 0;
                let marker = partition
                    .write_txn_marker(producer_id, 0, 3, commit)
                    .await
                    .unwrap();
                if !commit {
                    expected.push(AbortedTxn {
                        producer_id,
                        first_offset: first,
                        last_offset: marker,
                        last_stable_offset: marker + 1,
                    });
                }
            }
            let open_first = append(&partition, keyed("k", "open", Some((99, 0)))).await;
            append(&partition, keyed("k", "after", None)).await;
            assert_eq!(partition.last_stable_offset(), open_first);
            partition.flush(true).await.unwrap();
            assert!(
                partition.log.segment_base_offsets().len() > 2,
                "several segments"
            );
            let high_watermark = partition.high_watermark();
            partition.crash_for_tests().await;

            // Damage the index: one file gone, one stale entry past the end.
            let files = txn_index::read_txn_index_files(&dir);
            let (&first_base, _) = files.iter().next().unwrap();
            std::fs::remove_file(txn_index::txn_index_path(&dir, first_base)).unwrap();
            let stale = AbortedTxn {
                producer_id: 7,
                first_offset: 500,
                last_offset: 900,
                last_stable_offset: 901,
            };
            txn_index::append_txn_index_entry(&dir, first_base, &stale).unwrap();

            let partition = open_partition(&dir, false, false).await;
            assert_eq!(partition.high_watermark(), high_watermark);
            assert_eq!(partition.last_stable_offset(), open_first);
            assert_eq!(partition.open_transactions(), vec![(open_first, 99)]);
            let on_disk: Vec<AbortedTxn> = txn_index::read_txn_index_files(&dir)
                .into_values()
                .flatten()
                .collect();
            assert_eq!(on_disk, expected);
            assert_eq!(partition.aborted_transactions_all().await, expected);
            assert_eq!(
                partition
                    .describe_producers()
                    .iter()
                    .find(|p| p.producer_id == 11)
                    .unwrap()
                    .coordinator_epoch,
                3
            );
            assert_eq!(
                data_records(&partition, true)
                    .await
                    .iter()
                    .filter(|r| r.1 == "open")
                    .count(),
                0
            );

            let marker = partition.write_txn_marker(99, 0, 3, false).await.unwrap();
            assert_eq!(partition.last_stable_offset(), partition.high_watermark());
            expected.push(AbortedTxn {
                producer_id: 99,
                first_offset: open_first,
                last_offset: marker,
                last_stable_offset: marker + 1,
            });
            let aborted: Vec<(i64, i64)> = expected
                .iter()
                .map(|e| (e.producer_id, e.first_offset))
                .collect();
            assert_eq!(partition.aborted_transactions(0, marker + 1).await, aborted);
            partition.close().await.unwrap();
            drop(partition);

            let partition = open_partition(&dir, false, true).await;
            assert_eq!(partition.aborted_transactions_all().await, expected);
            assert_eq!(partition.last_stable_offset(), partition.high_watermark());
            partition.close().await.unwrap();
        });
    }

    /// Goal: with more aborted transactions than memory keeps, fetches that
    /// reach back past memory read the files and still find every one.
    /// Method: more empty aborted transactions than the bound, then look
    /// up from the start and from the newest.
    #[test]
    fn aborted_transactions_beyond_memory_are_read_from_the_files() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let partition = open_partition(&dir, true, true).await;
            let count = ABORTED_TXNS_IN_MEMORY_MAX + 10;
            for producer_id in 0..count as i64 {
                partition
                    .write_txn_marker(producer_id, 0, 0, false)
                    .await
                    .unwrap();
            }
            assert_eq!(
                partition.aborted.borrow().entries.len(),
                ABORTED_TXNS_IN_MEMORY_MAX
            );
            let end = partition.high_watermark();
            let all = partition.aborted_transactions(0, end).await;
            assert_eq!(all.len(), count);
            assert!(all
                .iter()
                .enumerate()
                .all(|(i, (producer_id, first))| *producer_id == i as i64 && *first == i as i64));
            assert_eq!(
                partition.aborted_transactions(end - 1, end).await,
                vec![(end - 1, end - 1)]
            );
            assert_eq!(
                partition.aborted_transactions(3, 5).await,
                vec![(3, 3), (4, 4)]
            );
            partition.close().await.unwrap();
        });
    }

    /// Goal: compaction never lets an aborted value shadow a committed one,
    /// drops aborted records, keeps markers, and never cleans at or past
    /// the LSO. Method: committed v1, aborted v2 for the same key, filler to
    /// close segments, an open transaction; compact; read back.
    #[test]
    fn compaction_drops_aborted_values_and_stops_at_the_lso() {
        run_on_executor(|| async {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("t-0");
            let partition = open_partition(&dir, true, true).await;
            append(&partition, keyed("k", "committed", None)).await;
            append(&partition, keyed("k", "aborted", Some((5, 0)))).await;
            partition.write_txn_marker(5, 0, 0, false).await.unwrap();
            for i in 0..12 {
                append(&partition, keyed(&format!("f{}", i % 3), "x", None)).await;
            }
            let open_first = append(&partition, keyed("o", "open", Some((6, 0)))).await;
            for i in 0..12 {
                append(&partition, keyed(&format!("g{}", i % 3), "y", None)).await;
            }
            partition.flush(true).await.unwrap();
            let config = CompactionConfig {
                compact: true,
                ..CompactionConfig::default()
            };
            let stats = partition.compact(&config).await.unwrap();
            assert!(stats.first_uncleanable_offset <= open_first, "{stats:?}");
            assert!(stats.segments_read > 0, "{stats:?}");
            let records = data_records(&partition, false).await;
            let values: Vec<&str> = records
                .iter()
                .filter(|r| r.0 == "k")
                .map(|r| r.1.as_str())
                .collect();
            assert_eq!(values, vec!["committed"]);
            assert!(records.iter().any(|r| r.1 == "open"));
            // The marker is still there, and so is its txnindex entry.
            assert_eq!(
                partition.aborted_transactions(0, open_first).await,
                vec![(5, 1)]
            );
            let on_disk: Vec<AbortedTxn> = txn_index::read_txn_index_files(&dir)
                .into_values()
                .flatten()
                .collect();
            assert_eq!(on_disk.len(), 1);
            partition.close().await.unwrap();
        });
    }

    #[test]
    fn log_append_time_stamp_keeps_the_batch_valid() {
        let batch = Bytes::from(sample_batch(0, 3, 10));
        let header = validate_batch(&batch).unwrap();
        // Shared (another holder keeps the original): stamped on a copy.
        let (stamped, h) = stamp_log_append_time(batch.clone(), &header, 12345);
        let reparsed = validate_batch(&stamped).unwrap();
        assert_eq!(reparsed, h);
        assert!(reparsed.is_log_append_time());
        assert_eq!(reparsed.max_timestamp, 12345);
        assert_eq!(
            validate_batch(&batch).unwrap(),
            header,
            "the original is untouched"
        );
        // Unique (the produce path): stamped in place, same result.
        let (in_place, h2) = stamp_log_append_time(batch, &header, 12345);
        assert_eq!(in_place, stamped);
        assert_eq!(h2, h);
    }
}
