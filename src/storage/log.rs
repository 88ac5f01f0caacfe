//! `Log`: one partition replica's log, a list of segments in Kafka's on-disk
//! layout, written with direct I/O by a single writer task.
//!
//! How the pieces fit:
//!
//! - `append` never awaits I/O (except to wait for back-pressure). In call
//!   order it assigns offsets, stamps the header, rolls the segment if needed,
//!   updates the in-memory indexes, keeps the batch in the in-memory tail and
//!   queues it for the writer.
//! - The writer task (one per log) drains that queue in order into the
//!   active segment's [`SegmentAppender`]. Whenever the queue is empty and
//!   none of its writes is in flight (or somebody waits for written data) it
//!   hands the partial last block to the disk too, so every appended byte is
//!   written soon after the append without anybody asking. `flush(false)`
//!   waits for that; `flush(true)` also waits for an fdatasync, and one
//!   fdatasync covers every append written before it started (group
//!   commit). The fdatasync runs in the background: the writer keeps
//!   writing later appends meanwhile, and they wait for the next one.
//! - At a roll the writer cuts the old segment to size and goes on with the
//!   new one; the old one's fdatasync and index files finish in the
//!   background (`RollFinish`), and nothing past the old segment counts as
//!   synced before they are done.
//! - Reads take a plan under the state borrow and do their I/O without it:
//!   offsets still in the in-memory tail come from there (never evicted
//!   before they are written), older ones from the segment files. Offsets
//!   need not be contiguous: compaction (`compaction.rs`) removes records
//!   from closed segments, so a read at an offset that no longer exists
//!   returns the next batch after it, as Kafka does.
//!
//! Everything lives on the partition's shard: `Log` is `Rc` based and `!Send`.

use std::{
    cell::{Cell, RefCell},
    collections::VecDeque,
    future::Future,
    os::fd::{AsRawFd, FromRawFd},
    path::{Path, PathBuf},
    pin::Pin,
    rc::{Rc, Weak},
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use futures::channel::oneshot;
use glommio::io::DmaFile;
use tracing::{error, info, warn};
use uuid::Uuid;

use super::{
    appender::{spawn_signalled, AppenderSettings, SegmentAppender, WriterCounters},
    checkpoint::{
        encode_leader_epoch_checkpoint, encode_partition_metadata, run_blocking, sync_directory,
        truncate_epochs_from_start, write_file_atomically, write_file_synced,
        write_offset_checkpoint, EpochEntry, LEADER_EPOCH_CHECKPOINT_FILE,
        LOG_START_OFFSET_CHECKPOINT_FILE, PARTITION_METADATA_FILE,
    },
    direct::{self, DirectMem, DirectSlot, DirectSlots},
    error::StorageError,
    notify::{FifoTurns, Signal},
    reader::{
        cold_read_turn, find_record_by_timestamp, next_offset_after_pieces,
        read_file_batches_scheduled, whole_batches, FileReadPlan, ReadLimits,
    },
    recovery::{recover_log, ScanReplay},
    retention::SegmentFacts,
    segment::{
        create_segment_file, segment_file_path, Segment, INDEX_FILE_EXTENSION, LOG_FILE_EXTENSION,
        NO_TIMESTAMP, TIME_INDEX_FILE_EXTENSION,
    },
    send::{rewrite_block_bytes, walk_headers, FileRange, Piece, SendFile, Walk},
    tail_budget::{self, TailHolder},
};
use crate::protocol::record_batch::{stamp_header, BatchHeader, BATCH_HEADER_BYTES};

/// Default of [`LogConfig::write_buffer_bytes`] (`--write-buffer-bytes`).
pub const DEFAULT_WRITE_BUFFER_BYTES: usize = 128 << 10;
/// Default of [`LogConfig::write_buffer_bytes_max`]
/// (`--write-buffer-bytes-max`, when `--write-buffer-bytes` is not larger).
pub const DEFAULT_WRITE_BUFFER_BYTES_MAX: usize = 512 << 10;
/// Default of [`LogConfig::write_delay_us`] (`--write-delay-us`).
pub const DEFAULT_WRITE_DELAY_US: u64 = 200_000;
/// Largest [`LogConfig::write_delay_us`].
pub const WRITE_DELAY_US_MAX: u64 = 1_000_000;

/// What happens to appended data somebody waits for (acks=all,
/// `--acks-wait-for-write`) while the log's sync runs (`--writes-during-sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WritesDuringSync {
    /// `overlap`. Until 3 Dec 2026 it was `hold` under the shard's
    /// `syncfs` (measured on dev-2vcpu-epyc, where an O_DIRECT write issued
    /// during a `syncfs` completed with it); on dev-2vcpu-xeon-b, with 256
    /// KiB batches, overlap gave 1.15-1.59x hold's acks=all throughput at
    /// 16 partitions and up to 1.2x at 1, with a lower p99.
    Auto,
    /// Kept in the write buffer until the sync ends, then written in one
    /// write with everything appended meanwhile, and synced by the next
    /// sync. On a device whose cache flush holds back the writes issued
    /// while it runs (an O_DIRECT write issued during a `syncfs` completed
    /// with it on dev-2vcpu-epyc, 2.3 ms instead of 0.27), a write issued
    /// at once gains nothing and splits the data the next sync covers into
    /// one request's worth per sync.
    Hold,
    /// Written at once, beside the sync: the next sync covers it.
    Overlap,
}

impl WritesDuringSync {
    /// `Hold` or `Overlap`: what this setting means.
    pub fn resolve(self) -> WritesDuringSync {
        match self {
            WritesDuringSync::Auto => WritesDuringSync::Overlap,
            resolved => resolved,
        }
    }

    /// Whether data waited for is held while a sync runs (see `resolve`).
    pub fn holds(self) -> bool {
        self.resolve() == WritesDuringSync::Hold
    }
}

/// Per-log settings, named after Kafka's topic and broker configs.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// `log.segment.bytes`: roll when the active segment would grow past this.
    pub segment_bytes: u64,
    /// `log.roll.ms`: roll when the active segment is older than this.
    pub segment_ms: u64,
    /// `log.roll.jitter.ms`: each segment rolls up to a random amount below
    /// this (and below `segment_ms`) sooner.
    pub segment_jitter_ms: u64,
    /// `log.index.interval.bytes`: bytes between index entries.
    pub index_interval_bytes: u32,
    /// `log.index.size.max.bytes`: size limit of each index; roll when full.
    pub segment_index_bytes: u32,
    /// Size of the aligned DMA write buffer (also after one written before
    /// it filled).
    pub write_buffer_bytes: usize,
    /// Largest write buffer: one that fills is followed by one twice its
    /// size, up to this.
    pub write_buffer_bytes_max: usize,
    /// DMA writes in flight per log.
    pub write_behind: usize,
    /// Longest appended data nobody waits for (acks=1 and 0) stays in a
    /// write buffer that is not full before it is written (0: written as
    /// soon as no write of the log is in flight).
    pub write_delay_us: u64,
    /// Whether data waited for is written while the log's sync runs.
    pub writes_during_sync: WritesDuringSync,
    /// Largest zero-fill written ahead of the active segment's tail (0: none).
    pub preallocate_bytes: u64,
    /// `preallocate`: see [`SegmentSettings::preallocate`].
    pub preallocate: bool,
    /// In-memory tail of recent batches kept per log.
    pub cache_bytes: usize,
    /// Appended-but-unwritten bytes above which `append` waits.
    pub pending_bytes_max: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            index_interval_bytes: 4096,
            segment_index_bytes: 10 << 20,
            write_buffer_bytes: DEFAULT_WRITE_BUFFER_BYTES,
            write_buffer_bytes_max: DEFAULT_WRITE_BUFFER_BYTES_MAX,
            write_behind: 4,
            write_delay_us: DEFAULT_WRITE_DELAY_US,
            writes_during_sync: WritesDuringSync::Auto,
            preallocate_bytes: 0,
            preallocate: false,
            cache_bytes: 1 << 20,
            pending_bytes_max: 8 << 20,
        }
    }
}

/// The settings a topic's configs decide and an alter of them changes
/// while the log is open (Kafka applies them from the next append or
/// roll): the rest of [`LogConfig`] is the broker's and fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSettings {
    /// `segment.bytes`.
    pub segment_bytes: u64,
    /// `segment.ms`.
    pub segment_ms: u64,
    /// `segment.jitter.ms`.
    pub segment_jitter_ms: u64,
    /// `index.interval.bytes`.
    pub index_interval_bytes: u32,
    /// `segment.index.bytes` (segments started after a change use it).
    pub segment_index_bytes: u32,
    /// `preallocate`: a new segment's file is `segment.bytes` long (sparse,
    /// as Kafka's on Linux) from its creation until it rolls or closes
    /// (segments started after a change follow it).
    pub preallocate: bool,
}

impl SegmentSettings {
    /// Length a new segment's file starts at: `segment.bytes` with
    /// `preallocate`, else 0.
    pub fn initial_file_bytes(&self) -> u64 {
        if self.preallocate {
            self.segment_bytes
        } else {
            0
        }
    }

    /// Checks every field against its bound.
    ///
    /// # Errors
    /// [`StorageError::InvalidConfig`] naming the first bad field.
    pub fn validate(&self) -> Result<(), StorageError> {
        let invalid = |reason| Err(StorageError::InvalidConfig { reason });
        if self.segment_bytes == 0 || self.segment_bytes > i32::MAX as u64 {
            // File positions in the offset index are 32-bit, as in Kafka.
            return invalid("segment_bytes must be in 1..=i32::MAX");
        }
        if self.segment_ms == 0 {
            return invalid("segment_ms must be positive");
        }
        if (self.segment_index_bytes as usize) < 2 * super::index::TIME_INDEX_ENTRY_BYTES {
            return invalid("segment_index_bytes must hold at least two time index entries");
        }
        Ok(())
    }
}

impl LogConfig {
    /// How the active segment's appender writes.
    pub(super) fn appender_settings(&self) -> AppenderSettings {
        AppenderSettings {
            buffer_bytes: self.write_buffer_bytes,
            buffer_bytes_max: self.write_buffer_bytes_max,
            write_behind: self.write_behind,
            prealloc_max: self.preallocate_bytes,
        }
    }

    /// The topic-decided part.
    pub fn segment_settings(&self) -> SegmentSettings {
        SegmentSettings {
            segment_bytes: self.segment_bytes,
            segment_ms: self.segment_ms,
            segment_jitter_ms: self.segment_jitter_ms,
            index_interval_bytes: self.index_interval_bytes,
            segment_index_bytes: self.segment_index_bytes,
            preallocate: self.preallocate,
        }
    }

    /// Checks every field against its bound.
    ///
    /// # Errors
    /// [`StorageError::InvalidConfig`] naming the first bad field.
    pub fn validate(&self) -> Result<(), StorageError> {
        let invalid = |reason| Err(StorageError::InvalidConfig { reason });
        self.segment_settings().validate()?;
        if self.write_buffer_bytes < 4096 || self.write_buffer_bytes > 64 << 20 {
            return invalid("write_buffer_bytes must be in 4 KiB..=64 MiB");
        }
        if self.write_buffer_bytes_max < self.write_buffer_bytes
            || self.write_buffer_bytes_max > 64 << 20
        {
            return invalid("write_buffer_bytes_max must be in write_buffer_bytes..=64 MiB");
        }
        if self.write_behind == 0 || self.write_behind > 64 {
            return invalid("write_behind must be in 1..=64");
        }
        if self.write_delay_us > WRITE_DELAY_US_MAX {
            return invalid("write_delay_us must be at most 1 s");
        }
        if self.preallocate_bytes % 4096 != 0 || self.preallocate_bytes > 1 << 30 {
            return invalid("preallocate_bytes must be a multiple of 4096 up to 1 GiB");
        }
        if self.pending_bytes_max == 0 {
            return invalid("pending_bytes_max must be positive");
        }
        Ok(())
    }
}

/// Where an appended batch went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset assigned to the first record.
    pub base_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// The batch's maxTimestamp.
    pub max_timestamp: i64,
}

/// Whole batches, in offset order. One batch may be split over several
/// `Bytes` pieces (a 61-byte stamped header, then the body as received);
/// concatenated, the pieces are the stored batches.
#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    /// The pieces.
    pub batches: Vec<Bytes>,
    /// Total bytes of all pieces.
    pub bytes: usize,
}

impl ReadResult {
    /// The batches as one contiguous buffer: the single piece itself when
    /// there is one, else a copy of the pieces joined (for callers that parse
    /// batches or hand the codec one `Bytes`).
    pub fn into_contiguous(self) -> Bytes {
        if self.batches.len() == 1 {
            return self.batches.into_iter().next().expect("one piece");
        }
        let mut joined = bytes::BytesMut::with_capacity(self.bytes);
        for piece in &self.batches {
            joined.extend_from_slice(piece);
        }
        joined.freeze()
    }
}

/// What [`Log::read_pieces`] returns: whole batches in offset order, as
/// bytes and (splice reads) file ranges.
#[derive(Debug, Clone, Default)]
pub struct Pieces {
    /// The pieces.
    pub pieces: Vec<Piece>,
    /// Total bytes of all pieces.
    pub bytes: usize,
    /// After the last file range: (pieces up to and including it, an
    /// offset past its batches).
    file_bound: Option<(usize, i64)>,
}

impl Pieces {
    /// An empty [`ReadResult`] carrying the bytes used so far (the budget
    /// of the next memory or DMA read).
    fn memory_result(&self) -> ReadResult {
        ReadResult {
            batches: Vec::new(),
            bytes: self.bytes,
        }
    }

    /// An offset past the last batch returned (None: no batch): exact where
    /// the last batches are bytes; after a file range, the last offset of
    /// the first indexed batch at or after its end, or the segment's next
    /// offset when no indexed batch follows (Kafka's fetch upper bound for
    /// aborted transactions), which may be a little further; the read's
    /// offset limit when compaction replaced the segment meanwhile.
    pub fn next_offset_bound(&self) -> Option<i64> {
        let (after, file_bound) = match self.file_bound {
            Some((after, bound)) => (after, Some(bound)),
            None => (0, None),
        };
        let memory: Vec<Bytes> = self.pieces[after.min(self.pieces.len())..]
            .iter()
            .filter_map(|piece| match piece {
                Piece::Memory(bytes) => Some(bytes.clone()),
                Piece::File(_) => None,
            })
            .collect();
        next_offset_after_pieces(&memory).or(file_bound)
    }

    /// The pieces as bytes.
    ///
    /// # Panics
    /// If a piece is a file range (only splice reads return those).
    pub fn into_read_result(self) -> ReadResult {
        let batches = self
            .pieces
            .into_iter()
            .map(|piece| match piece {
                Piece::Memory(bytes) => bytes,
                Piece::File(_) => unreachable!("file ranges only come from splice reads"),
            })
            .collect();
        ReadResult {
            batches,
            bytes: self.bytes,
        }
    }

    /// Appends what a memory or DMA read added.
    fn add_memory(&mut self, result: ReadResult) {
        self.pieces
            .extend(result.batches.into_iter().map(Piece::Memory));
        self.bytes = result.bytes;
    }
}

/// Counters of one log, for metrics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// fdatasync calls on segment files.
    pub fdatasync_count: u64,
    /// Group-commit syncs served by the shard's shared `syncfs`.
    pub shard_sync_count: u64,
    /// DMA writes issued.
    pub write_count: u64,
    /// Bytes handed to DMA writes.
    pub write_bytes: u64,
    /// Zeros written ahead of the tail (pre-allocation).
    pub zero_fill_bytes: u64,
    /// Appended bytes not yet written.
    pub pending_bytes: usize,
    /// Memory held by the in-memory tail (a batch received into a slot
    /// counts its whole allocation).
    pub cached_bytes: usize,
    /// Number of segments.
    pub segment_count: usize,
}

/// A partition's log. Cheap to clone; all clones are the same log.
#[derive(Clone)]
pub struct Log {
    shared: Rc<LogShared>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Log")
            .field("dir", &self.shared.dir)
            .field("log_start_offset", &self.log_start_offset())
            .field("log_end_offset", &self.log_end_offset())
            .finish()
    }
}

struct LogShared {
    dir: PathBuf,
    config: LogConfig,
    /// `config`'s topic-decided part as it is now (see [`Log::reconfigure`]).
    segment: Cell<SegmentSettings>,
    state: RefCell<LogState>,
    writer_signal: Rc<Signal>,
    /// Notified when the writer task has exited and its writes completed.
    writer_exited: Rc<Signal>,
    counters: Rc<WriterCounters>,
    /// One [`Log::advance_start`] at a time writes the start checkpoint.
    start_turn: glommio::sync::Semaphore,
}

impl Drop for LogShared {
    fn drop(&mut self) {
        // Lets the writer task see the log is gone and exit.
        self.writer_signal.notify();
        if let Ok(state) = self.state.try_borrow() {
            tail_budget::removed(state.cached_bytes);
        }
    }
}

impl TailHolder for LogShared {
    fn give_back(&self) -> Option<(usize, bool)> {
        let mut state = self.state.try_borrow_mut().ok()?;
        let before = state.cached_bytes;
        state.evict_cache(before / 2);
        let remains = !state.cache.is_empty();
        state.tail_listed = remains;
        Some((before - state.cached_bytes, remains))
    }
}

/// A batch held in memory, stamped, in one or two pieces (see
/// [`stamp_batch`]).
#[derive(Debug)]
struct CachedBatch {
    base_offset: i64,
    last_offset: i64,
    segment_base_offset: i64,
    position: u64,
    first: Bytes,
    rest: Bytes,
    /// Memory the batch keeps alive, counted against the cache limits: its
    /// bytes, or the whole allocation it was received into (`direct.rs`
    /// rounds those up to 64 KiB).
    held_bytes: usize,
}

impl CachedBatch {
    fn total_bytes(&self) -> usize {
        self.first.len() + self.rest.len()
    }
}

/// Stamps baseOffset and partitionLeaderEpoch (fields the CRC does not
/// cover) into `batch`. When nothing else holds the batch's buffer (the
/// produce path reads each partition's records into a buffer of their own
/// and hands it over), the stamp is written in place and the batch stays one
/// piece; otherwise the header is copied and stamped, and the body follows
/// as a second piece. Returns (first piece, rest; empty when one piece).
fn stamp_batch(batch: Bytes, base_offset: i64, leader_epoch: i32) -> (Bytes, Bytes) {
    match batch.try_into_mut() {
        Ok(mut whole) => {
            stamp_header(&mut whole, base_offset, leader_epoch);
            (whole.freeze(), Bytes::new())
        }
        Err(batch) => {
            let mut header = batch[..BATCH_HEADER_BYTES].to_vec();
            stamp_header(&mut header, base_offset, leader_epoch);
            (Bytes::from(header), batch.slice(BATCH_HEADER_BYTES..))
        }
    }
}

/// Stamps a batch received into direct memory (see `direct.rs`): the
/// header is stamped as a copy, the first piece, and written into the
/// memory for the disk; the body is a view of the memory. `batch` (the
/// request's view, the only one covering the header) is dropped first.
fn stamp_direct_batch(
    batch: Bytes,
    mem: &Arc<DirectMem>,
    base_offset: i64,
    leader_epoch: i32,
) -> (Bytes, Bytes) {
    let mut header = batch[..BATCH_HEADER_BYTES].to_vec();
    stamp_header(&mut header, base_offset, leader_epoch);
    drop(batch);
    // SAFETY: the request's view was the only one over the header (the
    // produce path hands its records over), and no write of the memory has
    // been issued yet.
    unsafe { mem.write(mem.head(), &header) };
    (Bytes::from(header), mem.view(BATCH_HEADER_BYTES))
}

/// Work for the writer task, in append order.
#[derive(Debug)]
enum WriteCommand {
    /// A stamped batch in one or two pieces (see [`stamp_batch`]).
    Batch {
        first: Bytes,
        rest: Bytes,
        next_offset: i64,
        /// The memory the batch was received into, stamped, when it can be
        /// written from there (`direct.rs`).
        direct: Option<Arc<DirectMem>>,
    },
    /// Finish the active segment and start the one at `new_base_offset`.
    Roll { new_base_offset: i64 },
    /// Rewrite `leader-epoch-checkpoint` from the state.
    EpochCheckpoint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Open,
    Closing,
    Closed,
}

struct OffsetWaiter {
    target_offset: i64,
    sender: oneshot::Sender<Result<i64, StorageError>>,
}

struct LogState {
    topic_id: Option<Uuid>,
    /// Ascending base offsets; the last is the active segment. Never empty.
    segments: Vec<Segment>,
    log_end_offset: i64,
    /// Every batch below this offset is written to its file.
    written_offset: i64,
    /// Every batch below this offset is written and fdatasynced.
    synced_offset: i64,
    queue: VecDeque<WriteCommand>,
    /// Where records being received into direct memory will land.
    direct_slots: DirectSlots,
    pending_bytes: usize,
    cache: VecDeque<CachedBatch>,
    cached_bytes: usize,
    /// Listed with the shard's tail budget (see `tail_budget.rs`).
    tail_listed: bool,
    append_turns: FifoTurns,
    written_waiters: Vec<OffsetWaiter>,
    sync_waiters: Vec<OffsetWaiter>,
    close_waiters: Vec<oneshot::Sender<Result<(), StorageError>>>,
    lifecycle: Lifecycle,
    failure: Option<StorageError>,
    leader_epochs: Vec<EpochEntry>,
    /// First offset not yet cleaned by compaction (Kafka's cleaner
    /// checkpoint), from `cleaner-offset-checkpoint`; `None` before the first
    /// compaction.
    cleaner_checkpoint: Option<i64>,
    /// A compaction is running on this log.
    compaction_running: bool,
    /// `close` calls waiting for the running compaction to end.
    compaction_waiters: Vec<oneshot::Sender<()>>,
    /// Segments retention took out whose files are not deleted yet
    /// (base offset, bytes).
    pending_deletions: Vec<(i64, u64)>,
    /// The log start DeleteRecords set (`log-start-offset-checkpoint`); the
    /// log starts at the larger of it and the first segment's base offset.
    start_floor: i64,
    /// Random, drawn when the log is opened: with a segment's base offset,
    /// it gives the segment its roll jitter.
    roll_seed: u64,
}

/// A fresh seed for a log's roll jitters (from the clock if the operating
/// system gives no random bytes: jitter needs no secrecy).
fn roll_seed() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::getrandom(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        return nanos as u64;
    }
    u64::from_le_bytes(bytes)
}

/// A segment's roll jitter, Kafka's `LogConfig.randomSegmentJitter`: a
/// random amount below `segment.jitter.ms` and `segment.ms` (0 without
/// jitter), fixed for the segment (drawn from the log's seed and the
/// segment's base offset, so each log and each segment draws its own).
fn roll_jitter_ms(seed: u64, base_offset: i64, config: &SegmentSettings) -> u64 {
    let bound = config.segment_jitter_ms.min(config.segment_ms);
    if bound == 0 {
        return 0;
    }
    // SplitMix64's finalizer.
    let mut z = seed ^ (base_offset as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % bound
}

impl LogState {
    fn active_segment(&self) -> &Segment {
        match self.segments.last() {
            Some(segment) => segment,
            None => unreachable!("a log always has an active segment"),
        }
    }

    fn active_segment_mut(&mut self) -> &mut Segment {
        match self.segments.last_mut() {
            Some(segment) => segment,
            None => unreachable!("a log always has an active segment"),
        }
    }

    fn log_start_offset(&self) -> i64 {
        self.segments[0].base_offset.max(self.start_floor)
    }

    /// Errors for appends: after a failure, or once closing started.
    fn check_appendable(&self, dir: &Path) -> Result<(), StorageError> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        if self.lifecycle != Lifecycle::Open {
            return Err(StorageError::Closed {
                dir: dir.to_path_buf(),
            });
        }
        Ok(())
    }

    /// Kafka's `LogSegment.shouldRoll`, checked before an append.
    fn should_roll(
        &self,
        config: &SegmentSettings,
        header: &BatchHeader,
        last_offset: i64,
        now_ms: i64,
    ) -> bool {
        let active = self.active_segment();
        if active.is_empty() {
            return false;
        }
        let full = active.size_bytes + header.total_bytes() as u64 > config.segment_bytes;
        // Kafka measures segment age by record timestamps when the first
        // batch has one (so replayed old data does not roll on every
        // append), and by wall-clock creation time otherwise.
        let age_ms = match active.first_batch_timestamp {
            Some(first) if first >= 0 => header.max_timestamp.saturating_sub(first),
            _ => now_ms.saturating_sub(active.created_ms),
        };
        let jitter = roll_jitter_ms(self.roll_seed, active.base_offset, config);
        let old = age_ms > config.segment_ms.saturating_sub(jitter) as i64;
        let indexes_full = active.offset_index.is_full() || active.time_index.is_full();
        let offsets_overflow = last_offset - active.base_offset > i64::from(i32::MAX);
        full || old || indexes_full || offsets_overflow
    }

    /// Closes the active segment and starts an empty one at the log end;
    /// the writer finishes the closed one's files in the background.
    fn start_roll(&mut self, config: &SegmentSettings, dir: &Path, now_ms: i64) {
        let base_offset = self.log_end_offset;
        let active = self.active_segment_mut();
        active.seal_time_index();
        info!(
            dir = %dir.display(),
            old_base_offset = active.base_offset,
            old_size_bytes = active.size_bytes,
            new_base_offset = base_offset,
            "rolling segment"
        );
        self.segments.push(Segment::new(
            base_offset,
            now_ms,
            config.segment_index_bytes,
        ));
        self.queue.push_back(WriteCommand::Roll {
            new_base_offset: base_offset,
        });
    }

    /// Drops the tail's batches based below `offset` (all written: their
    /// segments are finished) after their segments were replaced or removed.
    fn drop_cached_below(&mut self, offset: i64) {
        while let Some(front) = self.cache.front() {
            if front.base_offset >= offset {
                break;
            }
            assert!(front.last_offset < self.written_offset);
            let held_bytes = front.held_bytes;
            self.cached_bytes -= held_bytes;
            tail_budget::removed(held_bytes);
            self.cache.pop_front();
        }
    }

    /// Evicts written batches from the front of the tail until it fits.
    fn evict_cache(&mut self, cache_bytes_max: usize) {
        while self.cached_bytes > cache_bytes_max {
            match self.cache.front() {
                Some(front) if front.last_offset < self.written_offset => {
                    let held_bytes = front.held_bytes;
                    self.cached_bytes -= held_bytes;
                    tail_budget::removed(held_bytes);
                    self.cache.pop_front();
                }
                _ => break,
            }
        }
    }

    /// Serves `[next_offset, ...)` from the in-memory tail into `result`.
    fn read_cache(
        &self,
        next_offset: i64,
        limits: &ReadLimits,
        result: &mut ReadResult,
        batch_count: &mut usize,
    ) {
        let start = self
            .cache
            .partition_point(|batch| batch.last_offset < next_offset);
        for batch in self.cache.range(start..) {
            let total_bytes = batch.total_bytes();
            if batch.base_offset >= limits.max_offset_exclusive {
                break;
            }
            if result.bytes + total_bytes > limits.max_bytes
                && !(limits.min_one_batch && *batch_count == 0)
            {
                break;
            }
            result.batches.push(batch.first.clone());
            if !batch.rest.is_empty() {
                result.batches.push(batch.rest.clone());
            }
            result.bytes += total_bytes;
            *batch_count += 1;
        }
    }

    /// Plans a file read of the segment holding `next_offset`, up to the
    /// first batch still in the tail (everything before it is written). When
    /// no batch of that segment's file reaches `next_offset` (compaction
    /// removed the records at the end of the segment, or all of them), says
    /// where the next batch may be instead: the next segment's base offset,
    /// or the first batch of the tail.
    /// Plans the read of `next_offset`'s segment file; with `splice` =
    /// (bytes the read may still return, offset limit), also what a splice
    /// walk needs.
    fn plan_file_read(
        &self,
        dir: &Path,
        next_offset: i64,
        splice: Option<(usize, i64)>,
    ) -> FilePlan {
        let holders = self
            .segments
            .partition_point(|segment| segment.base_offset <= next_offset);
        assert!(holders > 0, "offset {next_offset} is below the log start");
        let segment = &self.segments[holders - 1];
        let (end_position, end_offset) = match self.cache.front() {
            Some(front) if front.segment_base_offset == segment.base_offset => {
                (front.position, front.base_offset)
            }
            _ => (segment.size_bytes, segment.next_offset),
        };
        if next_offset >= end_offset {
            let skip_to = match self.segments.get(holders) {
                Some(next) if end_offset == segment.next_offset => next.base_offset,
                _ => end_offset,
            };
            assert!(
                skip_to > next_offset,
                "offset {next_offset} has no written batch in its segment and nothing after it"
            );
            return FilePlan::SkipTo(skip_to);
        }
        let file = match &segment.file {
            Some(file) => file.clone(),
            None => unreachable!("a segment with written batches has a file"),
        };
        let start_position = u64::from(segment.offset_index.lookup(next_offset).position);
        assert!(start_position < end_position);
        let send = splice.map(|(budget, max_offset_exclusive)| {
            let still_written = holders == self.segments.len() || end_position < segment.size_bytes;
            let block = rewrite_block_bytes();
            let stable_end = if still_written {
                end_position / block * block
            } else {
                end_position
            };
            // The largest indexed batch start within the budget of the
            // planned start, below the stable end, whose indexed (last)
            // offset is within the limit: every batch between the first one
            // read and it fits both.
            let jump = segment
                .offset_index
                .floor_by_position(start_position.saturating_add(budget as u64).min(stable_end))
                .filter(|entry| entry.offset <= max_offset_exclusive)
                .map(|entry| u64::from(entry.position))
                .filter(|&position| position > start_position);
            SendPlan {
                segment_base_offset: segment.base_offset,
                stable_end,
                send_file: segment.send_file.clone(),
                jump,
            }
        });
        FilePlan::Read(
            FileReadPlan {
                file,
                path: segment_file_path(dir, segment.base_offset, LOG_FILE_EXTENSION),
                start_position,
                end_position,
                end_offset,
            },
            send,
        )
    }

    /// An offset past every batch of the segment based at
    /// `segment_base_offset` that ends at or before `position` (a batch
    /// boundary of `file`): the last offset of the first indexed batch at
    /// or after `position`, else the segment's next offset. None when the
    /// segment no longer has that file (compaction replaced it meanwhile).
    fn offset_bound_at(
        &self,
        segment_base_offset: i64,
        file: &Rc<DmaFile>,
        position: u64,
    ) -> Option<i64> {
        let index = self
            .segments
            .binary_search_by_key(&segment_base_offset, |segment| segment.base_offset)
            .ok()?;
        let segment = &self.segments[index];
        if !segment
            .file
            .as_ref()
            .is_some_and(|segment_file| Rc::ptr_eq(segment_file, file))
        {
            return None;
        }
        Some(match segment.offset_index.ceil_by_position(position) {
            Some(entry) => entry.offset,
            None => segment.next_offset,
        })
    }

    fn resolve_written_waiters(&mut self) {
        let written_offset = self.written_offset;
        self.written_waiters.retain_mut(|waiter| {
            if waiter.target_offset > written_offset {
                return true;
            }
            let (replacement, _) = oneshot::channel();
            let sender = std::mem::replace(&mut waiter.sender, replacement);
            let _ = sender.send(Ok(written_offset));
            false
        });
    }

    fn resolve_sync_waiters(&mut self) {
        let synced_offset = self.synced_offset;
        self.sync_waiters.retain_mut(|waiter| {
            if waiter.target_offset > synced_offset {
                return true;
            }
            let (replacement, _) = oneshot::channel();
            let sender = std::mem::replace(&mut waiter.sender, replacement);
            let _ = sender.send(Ok(synced_offset));
            false
        });
    }
}

/// What the splice read path needs beyond a [`FileReadPlan`].
struct SendPlan {
    /// Base offset of the segment (to keep its buffered descriptor).
    segment_base_offset: i64,
    /// End of the bytes no DMA write will touch again: the planned end,
    /// except in a segment still being written, where it stops at the last
    /// whole block (the partial one is rewritten by the next write).
    stable_end: u64,
    /// The segment's buffered descriptor, once opened.
    send_file: Option<Arc<std::fs::File>>,
    /// An indexed batch start the walk may jump to once it has found the
    /// first batch (every batch before it fits the budget and the offset
    /// limit), so it reads a few headers instead of one per batch.
    jump: Option<u64>,
}

/// What a read does next in the segment files.
enum FilePlan {
    /// Read batches from a segment file (and, for splice reads, how).
    Read(FileReadPlan, Option<SendPlan>),
    /// Nothing at or after the offset in its segment's file; continue at
    /// this offset.
    SkipTo(i64),
}

/// Bytes the writer copied into the appender but has not seen written.
struct Unconfirmed {
    end_position: u64,
    next_offset: i64,
    bytes: usize,
}

enum WriterNext {
    /// Wait for the next signal, or until the instant given at the latest
    /// (when appended data waits for its write delay).
    Continue(Option<Instant>),
    Stop,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// Logs a failed splice walk, at most once a minute per shard.
fn warn_walk_failed(path: &Path, error: &StorageError) {
    thread_local! {
        static LAST: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
    }
    let now = std::time::Instant::now();
    let due = LAST.with(|last| match last.get() {
        Some(at) if now.duration_since(at) < std::time::Duration::from_secs(60) => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        warn!(path = %path.display(), %error, "splice read failed; reading by DMA instead");
    }
}

/// Chunk size of cold reads: enough for the budget plus one index interval
/// of skipped batches, within sane bounds.
fn read_chunk_bytes(config: &SegmentSettings, max_bytes: usize) -> usize {
    max_bytes
        .saturating_add(config.index_interval_bytes as usize)
        .clamp(64 << 10, 1 << 20)
}

impl Log {
    /// Creates an empty log in `dir` (created if missing): the first segment
    /// at offset 0, `partition.metadata` and an empty
    /// `leader-epoch-checkpoint`.
    ///
    /// # Errors
    /// [`StorageError::AlreadyExists`] when `dir` already holds segments,
    /// [`StorageError::InvalidConfig`], and I/O errors.
    pub async fn create(
        dir: &Path,
        config: LogConfig,
        topic_id: Uuid,
    ) -> Result<Log, StorageError> {
        config.validate()?;
        let dir_path = dir.to_path_buf();
        let holds_segments = run_blocking(move || -> Result<bool, StorageError> {
            std::fs::create_dir_all(&dir_path)
                .map_err(|error| StorageError::io("creating", &dir_path, error))?;
            let entries = std::fs::read_dir(&dir_path)
                .map_err(|error| StorageError::io("listing", &dir_path, error))?;
            for entry in entries {
                let entry = entry.map_err(|error| StorageError::io("listing", &dir_path, error))?;
                if entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| name.ends_with(".log"))
                {
                    return Ok(true);
                }
            }
            Ok(false)
        })
        .await?;
        if holds_segments {
            return Err(StorageError::AlreadyExists {
                dir: dir.to_path_buf(),
            });
        }
        write_file_atomically(
            dir,
            PARTITION_METADATA_FILE,
            encode_partition_metadata(topic_id).into_bytes(),
        )
        .await?;
        write_file_atomically(
            dir,
            LEADER_EPOCH_CHECKPOINT_FILE,
            encode_leader_epoch_checkpoint(&[]).into_bytes(),
        )
        .await?;
        let mut segment = Segment::new(0, now_ms(), config.segment_index_bytes);
        let initial_bytes = config.segment_settings().initial_file_bytes();
        segment.file = Some(create_segment_file(dir, 0, initial_bytes).await?);
        if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            sync_directory(parent).await?;
        }
        info!(dir = %dir.display(), %topic_id, "created log");
        Log::start(
            dir.to_path_buf(),
            config,
            Some(topic_id),
            vec![segment],
            Vec::new(),
            None,
            0,
        )
        .await
    }

    /// Opens the log in `dir`, recovering it (see `recovery.rs`): after an
    /// unclean shutdown the active segment is scanned and cut at the first
    /// torn or corrupt batch; indexes that do not check out are rebuilt.
    ///
    /// # Errors
    /// [`StorageError::InvalidConfig`], unreadable metadata files and I/O errors.
    pub async fn open(
        dir: &Path,
        config: LogConfig,
        clean_shutdown: bool,
    ) -> Result<Log, StorageError> {
        Ok(Log::open_replaying(dir, config, clean_shutdown, None, None)
            .await?
            .0)
    }

    /// [`Log::open`], handing the batches that recovery's scan of the
    /// active segment checks to `replay`. The offset returned is
    /// `replay.from_offset` when every batch of the log from there on was
    /// handed on, `None` when not (clean shutdown, or the active segment
    /// begins after it): the caller then reads them itself.
    ///
    /// # Errors
    /// As [`Log::open`].
    pub async fn open_replaying(
        dir: &Path,
        config: LogConfig,
        clean_shutdown: bool,
        replay: Option<ScanReplay<'_>>,
        expected_topic_id: Option<Uuid>,
    ) -> Result<(Log, Option<i64>), StorageError> {
        config.validate()?;
        let recovered = recover_log(
            dir,
            &config,
            clean_shutdown,
            now_ms(),
            replay,
            expected_topic_id,
        )
        .await?;
        let replayed_from = recovered.replayed_from;
        let log = Log::start(
            dir.to_path_buf(),
            config,
            recovered.topic_id,
            recovered.segments,
            recovered.leader_epochs,
            recovered.cleaner_checkpoint,
            recovered.start_floor,
        )
        .await?;
        info!(
            dir = %dir.display(),
            clean_shutdown,
            log_start_offset = log.log_start_offset(),
            log_end_offset = log.log_end_offset(),
            "opened log"
        );
        Ok((log, replayed_from))
    }

    async fn start(
        dir: PathBuf,
        config: LogConfig,
        topic_id: Option<Uuid>,
        segments: Vec<Segment>,
        leader_epochs: Vec<EpochEntry>,
        cleaner_checkpoint: Option<i64>,
        start_floor: i64,
    ) -> Result<Log, StorageError> {
        assert!(!segments.is_empty());
        let active = &segments[segments.len() - 1];
        let Some(file) = active.file.clone() else {
            unreachable!("the active segment's file is open at start");
        };
        let signal = Rc::new(Signal::default());
        let writer_exited = Rc::new(Signal::default());
        let counters = Rc::new(WriterCounters::default());
        let appender = SegmentAppender::open(
            file,
            segment_file_path(&dir, active.base_offset, LOG_FILE_EXTENSION),
            active.size_bytes,
            config.appender_settings(),
            signal.clone(),
            counters.clone(),
        )
        .await?;
        let log_end_offset = active.next_offset;
        let shared = Rc::new(LogShared {
            dir,
            segment: Cell::new(config.segment_settings()),
            config,
            state: RefCell::new(LogState {
                topic_id,
                segments,
                log_end_offset,
                written_offset: log_end_offset,
                synced_offset: log_end_offset,
                queue: VecDeque::new(),
                direct_slots: DirectSlots::default(),
                pending_bytes: 0,
                cache: VecDeque::new(),
                cached_bytes: 0,
                tail_listed: false,
                append_turns: FifoTurns::default(),
                written_waiters: Vec::new(),
                sync_waiters: Vec::new(),
                close_waiters: Vec::new(),
                lifecycle: Lifecycle::Open,
                failure: None,
                leader_epochs,
                cleaner_checkpoint,
                compaction_running: false,
                compaction_waiters: Vec::new(),
                pending_deletions: Vec::new(),
                start_floor,
                roll_seed: roll_seed(),
            }),
            writer_signal: signal.clone(),
            writer_exited: writer_exited.clone(),
            counters,
            start_turn: glommio::sync::Semaphore::new(1),
        });
        glommio::spawn_local(run_writer(
            Rc::downgrade(&shared),
            signal,
            writer_exited,
            appender,
        ))
        .detach();
        Ok(Log { shared })
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The topic id from `partition.metadata`, when known.
    pub fn topic_id(&self) -> Option<Uuid> {
        self.shared.state.borrow().topic_id
    }

    /// Bytes of the log's segments, appends not yet written included
    /// (Kafka's `UnifiedLog.size`, as DescribeLogDirs reports it).
    pub fn size_bytes(&self) -> u64 {
        let state = self.shared.state.borrow();
        state
            .segments
            .iter()
            .map(|segment| segment.size_bytes)
            .sum()
    }

    /// First offset held by the log.
    pub fn log_start_offset(&self) -> i64 {
        self.shared.state.borrow().log_start_offset()
    }

    /// Moves the log start up to `offset` (DeleteRecords, Kafka's
    /// `maybeIncrementLogStartOffset`), at most to the log end: offsets
    /// below it are out of range from then on, and retention deletes the
    /// segments wholly below it. The start is written to
    /// `log-start-offset-checkpoint` and synced before it takes effect, so
    /// a start that was answered survives a crash. Returns the log start
    /// after the call (unchanged when `offset` is not past it).
    ///
    /// # Errors
    /// The log is closed or failed; syncing the log or writing the
    /// checkpoint failed (the start is then unchanged).
    pub async fn advance_start(&self, offset: i64) -> Result<i64, StorageError> {
        let _turn = self
            .shared
            .start_turn
            .acquire_permit(1)
            .await
            .map_err(|_| StorageError::Closed {
                dir: self.shared.dir.clone(),
            })?;
        let target = {
            let state = self.shared.state.borrow();
            state.check_appendable(&self.shared.dir)?;
            let target = offset.min(state.log_end_offset);
            if target <= state.log_start_offset() {
                return Ok(state.log_start_offset());
            }
            target
        };
        // The log up to the start is made durable first: a crash must never
        // recover a log end below a start written to the checkpoint.
        self.flush(true).await?;
        write_offset_checkpoint(&self.shared.dir, LOG_START_OFFSET_CHECKPOINT_FILE, target).await?;
        let start = {
            let mut state = self.shared.state.borrow_mut();
            state.start_floor = state.start_floor.max(target);
            state.log_start_offset()
        };
        info!(dir = %self.shared.dir.display(), log_start_offset = start, "log start moved by DeleteRecords");
        // The leader epochs below the start go (Kafka's
        // `LeaderEpochFileCache.truncateFromStart`); recovery cuts them at
        // the start too, should this rewrite not happen.
        self.retention_cut_epochs();
        Ok(start)
    }

    /// Applies changed topic configs: the next append's roll check, index
    /// entries from the next append on, and segments started after it use
    /// them (as Kafka applies an altered topic config).
    ///
    /// # Errors
    /// [`StorageError::InvalidConfig`] when a value is out of bounds; the
    /// log keeps its settings.
    pub fn reconfigure(&self, settings: SegmentSettings) -> Result<(), StorageError> {
        settings.validate()?;
        self.shared.segment.set(settings);
        Ok(())
    }

    /// Whether the log failed (a write, sync or compaction swap could not
    /// be completed): it takes no more appends until a restart.
    pub fn is_failed(&self) -> bool {
        self.shared.state.borrow().failure.is_some()
    }

    /// Next offset to assign (the log end offset, LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.shared.state.borrow().log_end_offset
    }

    /// Base offset of the active (newest) segment.
    pub fn active_segment_base_offset(&self) -> i64 {
        self.shared.state.borrow().active_segment().base_offset
    }

    /// Base offsets of the segments, ascending (the active one last).
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        let state = self.shared.state.borrow();
        state
            .segments
            .iter()
            .map(|segment| segment.base_offset)
            .collect()
    }

    /// Base offset of the segment holding `offset`: the greatest segment
    /// base at or below it (the first segment's for offsets below the log).
    pub fn segment_base_offset_of(&self, offset: i64) -> i64 {
        let state = self.shared.state.borrow();
        let after = state
            .segments
            .partition_point(|segment| segment.base_offset <= offset);
        state.segments[after.saturating_sub(1)].base_offset
    }

    /// The leader epoch cache: each epoch and the first offset appended in it.
    pub fn leader_epoch_entries(&self) -> Vec<EpochEntry> {
        self.shared.state.borrow().leader_epochs.clone()
    }

    /// Counters for metrics and tests.
    pub fn stats(&self) -> LogStats {
        let state = self.shared.state.borrow();
        let counters = &self.shared.counters;
        LogStats {
            fdatasync_count: counters.fdatasync_count.get(),
            shard_sync_count: counters.shard_sync_count.get(),
            write_count: counters.write_count.get(),
            write_bytes: counters.write_bytes.get(),
            zero_fill_bytes: counters.zero_fill_bytes.get(),
            pending_bytes: state.pending_bytes,
            cached_bytes: state.cached_bytes,
            segment_count: state.segments.len(),
        }
    }

    /// Appends one batch, already validated (CRC checked) by the caller, with
    /// `header` its parsed header.
    ///
    /// Waits only while the appended-but-unwritten bytes exceed
    /// `pending_bytes_max` (callers that had to wait go in call order). Then,
    /// without awaiting, it assigns the offsets `[LEO, LEO + lastOffsetDelta]`,
    /// stamps baseOffset and partitionLeaderEpoch, rolls the segment if
    /// needed, updates the indexes, keeps the batch in the in-memory tail and
    /// queues it for the writer. Returns after queuing, not after the write.
    ///
    /// # Errors
    /// [`StorageError::Closed`] after `close`; the writer's error after a
    /// failed write.
    ///
    /// # Panics
    /// If `batch` is not `header.total_bytes()` long, or the leader epoch goes
    /// backwards.
    pub async fn append(
        &self,
        batch: Bytes,
        header: &BatchHeader,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, StorageError> {
        assert_eq!(
            batch.len(),
            header.total_bytes(),
            "the header must be the batch's"
        );
        assert!(batch.len() >= BATCH_HEADER_BYTES);
        assert_eq!(header.magic, 2);
        assert!(leader_epoch >= -1);
        let ticket = {
            let mut state = self.shared.state.borrow_mut();
            state.check_appendable(&self.shared.dir)?;
            if state.append_turns.is_idle()
                && state.pending_bytes <= self.shared.config.pending_bytes_max
            {
                None
            } else {
                Some(state.append_turns.take_ticket())
            }
        };
        if let Some(ticket) = ticket {
            self.shared.writer_signal.notify();
            AppendTurn {
                shared: &self.shared,
                ticket,
                done: false,
            }
            .await?;
        }
        let result = self.append_now(batch, header, leader_epoch, now_ms);
        if let Some(ticket) = ticket {
            self.shared.state.borrow_mut().append_turns.finish(ticket);
        }
        result
    }

    /// The synchronous part of `append`.
    fn append_now(
        &self,
        batch: Bytes,
        header: &BatchHeader,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, StorageError> {
        let shared = &*self.shared;
        let config = &shared.segment.get();
        let mut state = shared.state.borrow_mut();
        state.check_appendable(&shared.dir)?;
        let total_bytes = header.total_bytes();
        let base_offset = state.log_end_offset;
        let last_offset = base_offset + i64::from(header.last_offset_delta);
        if let Some(latest) = state.leader_epochs.last() {
            assert!(
                leader_epoch == -1 || leader_epoch >= latest.epoch,
                "leader epoch went backwards"
            );
        }

        if state.should_roll(config, header, last_offset, now_ms) {
            state.start_roll(config, &shared.dir, now_ms);
        }
        if leader_epoch >= 0
            && state
                .leader_epochs
                .last()
                .map_or(true, |latest| leader_epoch > latest.epoch)
        {
            state.leader_epochs.push(EpochEntry {
                epoch: leader_epoch,
                start_offset: base_offset,
            });
            state.queue.push_back(WriteCommand::EpochCheckpoint);
        }

        let active = state.active_segment();
        let (position, segment_base_offset) = (active.size_bytes, active.base_offset);
        let direct = state
            .direct_slots
            .take(&batch, segment_base_offset, position);
        let held_bytes = direct
            .as_ref()
            .map_or(total_bytes, |mem| mem.allocated_bytes().max(total_bytes));
        let (first, rest) = match &direct {
            Some(mem) => stamp_direct_batch(batch, mem, base_offset, leader_epoch),
            None => stamp_batch(batch, base_offset, leader_epoch),
        };
        let stamped = BatchHeader {
            base_offset,
            partition_leader_epoch: leader_epoch,
            ..*header
        };
        let active = state.active_segment_mut();
        active.index_batch(position, &stamped, config.index_interval_bytes);

        state.queue.push_back(WriteCommand::Batch {
            first: first.clone(),
            rest: rest.clone(),
            next_offset: last_offset + 1,
            direct,
        });
        state.pending_bytes += total_bytes;
        state.cache.push_back(CachedBatch {
            base_offset,
            last_offset,
            segment_base_offset,
            position,
            first,
            rest,
            held_bytes,
        });
        state.cached_bytes += held_bytes;
        tail_budget::added(held_bytes);
        state.log_end_offset = last_offset + 1;
        state.evict_cache(shared.config.cache_bytes);
        if !state.tail_listed && !state.cache.is_empty() {
            state.tail_listed = true;
            let holder: Rc<dyn TailHolder> = self.shared.clone();
            tail_budget::register(Rc::downgrade(&holder));
        }
        drop(state);
        tail_budget::enforce();
        shared.writer_signal.notify();
        Ok(AppendInfo {
            base_offset,
            last_offset,
            max_timestamp: header.max_timestamp,
        })
    }

    /// Memory to receive `len` bytes of records into, placed where they are
    /// predicted to land on disk, so the writer can write them from there
    /// (see `direct.rs`); None when the log cannot take appends or enough
    /// slots are pending.
    pub fn direct_slot(&self, len: usize) -> Option<DirectSlot> {
        let mut state = self.shared.state.borrow_mut();
        state.check_appendable(&self.shared.dir).ok()?;
        let active = state.active_segment();
        let (base_offset, size) = (active.base_offset, active.size_bytes);
        state.direct_slots.reserve(base_offset, size, len)
    }

    /// Resolves when every batch appended before the call is written
    /// (`sync == false`) or written and fdatasynced (`sync == true`). While an
    /// fdatasync runs, later callers wait for the next one, and one fdatasync
    /// covers every append made before it started. Returns the offset
    /// (exclusive) known written, or durable.
    ///
    /// # Errors
    /// [`StorageError::Closed`] after `close`; the writer's error after a
    /// failed write or sync.
    pub async fn flush(&self, sync: bool) -> Result<i64, StorageError> {
        let receiver = {
            let mut state = self.shared.state.borrow_mut();
            if let Some(failure) = &state.failure {
                return Err(failure.clone());
            }
            if state.lifecycle == Lifecycle::Closed {
                return Err(StorageError::Closed {
                    dir: self.shared.dir.clone(),
                });
            }
            let target_offset = state.log_end_offset;
            if sync && state.synced_offset >= target_offset {
                return Ok(state.synced_offset);
            }
            if !sync && state.written_offset >= target_offset {
                return Ok(state.written_offset);
            }
            let (sender, receiver) = oneshot::channel();
            let waiter = OffsetWaiter {
                target_offset,
                sender,
            };
            if sync {
                state.sync_waiters.push(waiter);
            } else {
                state.written_waiters.push(waiter);
            }
            receiver
        };
        self.shared.writer_signal.notify();
        match receiver.await {
            Ok(result) => result,
            Err(oneshot::Canceled) => Err(self.shared.terminal_error()),
        }
    }

    /// Whole batches from the one containing `offset`, in order, stopping
    /// before `max_offset_exclusive` (batches whose base offset is at or past
    /// it are not returned) and within `max_bytes`, except that the first
    /// batch is returned whatever its size when `min_one_batch`. Offsets in
    /// the in-memory tail are served from memory, older ones from the segment
    /// files (DMA reads from the indexed position).
    ///
    /// # Errors
    /// [`StorageError::OffsetOutOfRange`] when `offset` is below the log start
    /// or past the log end; I/O and corruption errors of cold reads.
    pub async fn read(
        &self,
        offset: i64,
        max_offset_exclusive: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, StorageError> {
        let read = self
            .read_pieces(
                offset,
                max_offset_exclusive,
                max_bytes,
                min_one_batch,
                false,
            )
            .await?;
        Ok(read.into_read_result())
    }

    /// [`Self::read`] for sending: with `splice`, what lies in segment files
    /// comes back as [`FileRange`]s to splice to the socket (found by
    /// walking batch headers through the page cache, see `send.rs`), except
    /// the last partial block of a segment still being written, which is
    /// read by DMA; without, as bytes.
    ///
    /// # Errors
    /// As [`Self::read`].
    pub async fn read_pieces(
        &self,
        offset: i64,
        max_offset_exclusive: i64,
        max_bytes: usize,
        min_one_batch: bool,
        splice: bool,
    ) -> Result<Pieces, StorageError> {
        {
            let state = self.shared.state.borrow();
            if offset < state.log_start_offset() || offset > state.log_end_offset {
                return Err(StorageError::OffsetOutOfRange {
                    offset,
                    log_start_offset: state.log_start_offset(),
                    log_end_offset: state.log_end_offset,
                });
            }
        }
        let mut out = Pieces::default();
        let mut batch_count = 0;
        let mut next_offset = offset;
        loop {
            let limits = ReadLimits {
                target_offset: next_offset,
                max_offset_exclusive,
                max_bytes,
                min_one_batch,
            };
            let (plan, send) = {
                let state = self.shared.state.borrow();
                if next_offset >= state.log_end_offset
                    || next_offset >= max_offset_exclusive && batch_count > 0
                {
                    break;
                }
                if next_offset < state.log_start_offset() {
                    // Retention removed the segments this read was to go on
                    // with: what it read stands (unlinked files stay
                    // readable while open), else the offset is now gone.
                    if batch_count > 0 {
                        break;
                    }
                    return Err(StorageError::OffsetOutOfRange {
                        offset: next_offset,
                        log_start_offset: state.log_start_offset(),
                        log_end_offset: state.log_end_offset,
                    });
                }
                match state.cache.front() {
                    Some(front) if next_offset >= front.base_offset => {
                        let mut result = out.memory_result();
                        state.read_cache(next_offset, &limits, &mut result, &mut batch_count);
                        out.add_memory(result);
                        break;
                    }
                    _ => match state.plan_file_read(
                        &self.shared.dir,
                        next_offset,
                        splice.then(|| (max_bytes.saturating_sub(out.bytes), max_offset_exclusive)),
                    ) {
                        FilePlan::Read(plan, send) => (plan, send),
                        FilePlan::SkipTo(skip_to) => {
                            next_offset = skip_to;
                            continue;
                        }
                    },
                }
            };
            let mut plan = plan;
            let mut limits = limits;
            let walk = if let Some(send) = send
                .as_ref()
                .filter(|send| plan.start_position < send.stable_end)
            {
                let _turn = cold_read_turn().await;
                match self
                    .walk_for_send(&plan, send, limits, &out, batch_count)
                    .await
                {
                    Ok(walk) => Some(walk),
                    Err(error) => {
                        // Out of descriptors, no /proc, ...: the DMA read
                        // below still serves the fetch (and reports real
                        // damage to the file).
                        warn_walk_failed(&plan.path, &error);
                        None
                    }
                }
            } else {
                None
            };
            if let Some(walk) = walk {
                if let Some((position, len)) = walk.range {
                    out.pieces.push(Piece::File(FileRange {
                        file: walk.file,
                        position,
                        len,
                    }));
                    out.bytes += len;
                    batch_count += walk.batch_count;
                    let bound = send.as_ref().and_then(|send| {
                        self.shared.state.borrow().offset_bound_at(
                            send.segment_base_offset,
                            &plan.file,
                            position + len as u64,
                        )
                    });
                    // Without the segment's index (compacted meanwhile):
                    // the read's offset limit, beyond anything returned.
                    out.file_bound =
                        Some((out.pieces.len(), bound.unwrap_or(max_offset_exclusive)));
                }
                if walk.limit_reached {
                    break;
                }
                if walk.stopped_at >= plan.end_position {
                    assert!(plan.end_offset > next_offset, "reads must make progress");
                    next_offset = plan.end_offset;
                    continue;
                }
                // The rest (the tail block of a segment being written) by DMA.
                next_offset = walk.next_offset.max(next_offset);
                plan.start_position = walk.stopped_at;
                limits.target_offset = next_offset;
            }
            let chunk_bytes = read_chunk_bytes(
                &self.shared.segment.get(),
                max_bytes.saturating_sub(out.bytes),
            );
            let mut result = out.memory_result();
            let outcome = read_file_batches_scheduled(
                plan,
                limits,
                chunk_bytes,
                &mut result,
                &mut batch_count,
            )
            .await?;
            out.add_memory(result);
            if outcome.limit_reached {
                break;
            }
            assert!(
                outcome.next_offset > next_offset,
                "reads must make progress"
            );
            next_offset = outcome.next_offset;
            glommio::yield_if_needed().await;
        }
        Ok(out)
    }

    /// Walks a planned file range for the splice path and keeps the
    /// segment's buffered descriptor for the next walk.
    async fn walk_for_send(
        &self,
        plan: &FileReadPlan,
        send: &SendPlan,
        limits: ReadLimits,
        out: &Pieces,
        batch_count: usize,
    ) -> Result<Walk, StorageError> {
        let file = match &send.send_file {
            Some(file) => SendFile::Open(file.clone()),
            None => {
                // SAFETY: duplicating a descriptor the plan holds open; the
                // duplicate is owned from here on.
                let duplicate =
                    unsafe { libc::fcntl(plan.file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
                if duplicate < 0 {
                    return Err(StorageError::io(
                        "duplicating the descriptor of",
                        &plan.path,
                        std::io::Error::last_os_error(),
                    ));
                }
                // SAFETY: a fresh descriptor nobody else owns.
                SendFile::Reopen(unsafe { std::os::fd::OwnedFd::from_raw_fd(duplicate) })
            }
        };
        let walk = walk_headers(
            file,
            plan.path.clone(),
            plan.start_position,
            send.stable_end,
            send.jump,
            limits,
            out.bytes,
            batch_count,
        )
        .await?;
        if send.send_file.is_none() {
            let mut state = self.shared.state.borrow_mut();
            if let Some(segment) = state
                .segments
                .iter_mut()
                .find(|segment| segment.base_offset == send.segment_base_offset)
            {
                if segment
                    .file
                    .as_ref()
                    .is_some_and(|file| Rc::ptr_eq(file, &plan.file))
                {
                    segment.send_file.get_or_insert_with(|| walk.file.clone());
                }
            }
        }
        Ok(walk)
    }

    /// Kafka's ListOffsets by timestamp: the offset and timestamp of the
    /// first record whose timestamp is >= `timestamp`, or `None`. Finds the
    /// first segment whose largest timestamp reaches it, starts at the time
    /// index entry below it, scans batch maxTimestamps, and decodes the
    /// records of the first batch that qualifies (decompressing if needed).
    ///
    /// # Errors
    /// Read errors and [`StorageError::RecordDecode`].
    pub async fn offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<(i64, i64)>, StorageError> {
        let start_offset = {
            let state = self.shared.state.borrow();
            let Some(segment) = state
                .segments
                .iter()
                .find(|segment| !segment.is_empty() && segment.max_timestamp >= timestamp)
            else {
                return Ok(None);
            };
            let entry = segment.time_index.lookup(timestamp);
            let from_offset = entry
                .offset
                .max(segment.base_offset)
                .max(state.log_start_offset());
            // The indexed batch at or before `from_offset`: reading "its"
            // offset starts the scan at that batch.
            segment.offset_index.lookup(from_offset).offset
        };
        let mut next_offset = start_offset;
        loop {
            // Retention may have moved the log start past the scan.
            next_offset = next_offset.max(self.log_start_offset());
            if next_offset >= self.log_end_offset() {
                return Ok(None);
            }
            let result = self.read(next_offset, i64::MAX, 256 << 10, true).await?;
            if result.batches.is_empty() {
                return Ok(None);
            }
            for (header, batch) in whole_batches(result) {
                if header.max_timestamp >= timestamp {
                    // A batch may straddle a start DeleteRecords set: its
                    // records below the start are not found (Kafka's
                    // `searchForTimestamp` from the log start).
                    let log_start_offset = self.log_start_offset();
                    let found =
                        find_record_by_timestamp(&batch, &header, |offset, record_timestamp| {
                            offset >= log_start_offset && record_timestamp >= timestamp
                        })
                        .map_err(|reason| self.record_decode_error(header.base_offset, reason))?;
                    if found.is_some() {
                        return Ok(found);
                    }
                }
                next_offset = header.last_offset() + 1;
            }
            glommio::yield_if_needed().await;
        }
    }

    /// ListOffsets MAX_TIMESTAMP (KIP-734): the offset and timestamp of the
    /// record with the largest timestamp (the first such record; its own
    /// offset, not its batch's last). `None` when no record has a timestamp.
    ///
    /// # Errors
    /// Read errors and [`StorageError::RecordDecode`].
    pub async fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, StorageError> {
        let (max_timestamp, batch_offset) = {
            let state = self.shared.state.borrow();
            let mut best: Option<(i64, i64)> = None;
            for segment in state.segments.iter().filter(|segment| !segment.is_empty()) {
                if segment.max_timestamp > best.map_or(NO_TIMESTAMP, |(timestamp, _)| timestamp) {
                    best = Some((segment.max_timestamp, segment.max_timestamp_offset));
                }
            }
            match best {
                Some(found) => found,
                None => return Ok(None),
            }
        };
        // The batch may lie below a start DeleteRecords set; Kafka answers
        // from its segments' bookkeeping then, as this does.
        let unread = Ok(Some((batch_offset, max_timestamp)));
        let result = match self
            .read(batch_offset.max(self.log_start_offset()), i64::MAX, 1, true)
            .await
        {
            Ok(result) => result,
            Err(StorageError::OffsetOutOfRange { .. }) => return unread,
            Err(error) => return Err(error),
        };
        let Some((header, batch)) = whole_batches(result).into_iter().next() else {
            return unread;
        };
        if header.base_offset > batch_offset || header.last_offset() < batch_offset {
            return unread;
        }
        let found =
            find_record_by_timestamp(&batch, &header, |_, timestamp| timestamp == max_timestamp)
                .map_err(|reason| self.record_decode_error(header.base_offset, reason))?;
        Ok(Some(found.unwrap_or((batch_offset, max_timestamp))))
    }

    fn record_decode_error(&self, base_offset: i64, reason: String) -> StorageError {
        StorageError::RecordDecode {
            dir: self.shared.dir.clone(),
            base_offset,
            reason,
        }
    }

    /// Writes and fdatasyncs everything appended, cuts the active segment to
    /// its real size, and writes and fsyncs its indexes. A running
    /// compaction stops at its next batch (an unfinished segment rewrite is
    /// discarded) and `close` returns only once it has. Later appends,
    /// flushes and compactions fail with [`StorageError::Closed`]; reads
    /// still work. Idempotent.
    ///
    /// # Errors
    /// The writer's error when a write, truncate or sync failed.
    pub async fn close(&self) -> Result<(), StorageError> {
        let result = self.close_writer().await;
        let compaction_ended = {
            let mut state = self.shared.state.borrow_mut();
            state.compaction_running.then(|| {
                let (sender, receiver) = oneshot::channel();
                state.compaction_waiters.push(sender);
                receiver
            })
        };
        if let Some(compaction_ended) = compaction_ended {
            // Canceled only if the guard's log went away, which also ends it.
            let _ = compaction_ended.await;
        }
        // A DeleteRecords writing the start checkpoint finishes first (later
        // ones find the log closed), so no write lands in a directory being
        // deleted.
        let _ = self.shared.start_turn.acquire_permit(1).await;
        result
    }

    async fn close_writer(&self) -> Result<(), StorageError> {
        let receiver = {
            let mut state = self.shared.state.borrow_mut();
            if let Some(failure) = &state.failure {
                return Err(failure.clone());
            }
            if state.lifecycle == Lifecycle::Closed {
                return Ok(());
            }
            state.lifecycle = Lifecycle::Closing;
            // Appends waiting for their turn now fail with Closed.
            state.append_turns.wake_all();
            let (sender, receiver) = oneshot::channel();
            state.close_waiters.push(sender);
            receiver
        };
        self.shared.writer_signal.notify();
        match receiver.await {
            Ok(result) => result,
            Err(oneshot::Canceled) => Err(self.shared.terminal_error()),
        }
    }

    /// Closes the log and renames its directory `<dir>.<uuid>-delete`, as
    /// Kafka's `LogManager.asyncDelete` does; the caller removes it later
    /// ([`super::remove_deleted_log_dir`]) and gets its new path.
    ///
    /// # Errors
    /// Rename failures. A close failure is logged, not returned: the data
    /// is being deleted anyway.
    pub async fn delete(self) -> Result<PathBuf, StorageError> {
        if let Err(close_error) = self.close().await {
            warn!(dir = %self.shared.dir.display(), %close_error, "deleting a log whose close failed");
        }
        // Closed or failed, the writer exits; wait for it so no write is in
        // flight while the directory goes away.
        self.shared.writer_exited.wait().await;
        let renamed = super::log_dirs::rename_deleted_log_dir(self.shared.dir.clone()).await?;
        info!(dir = %self.shared.dir.display(), renamed = %renamed.display(), "log renamed for deletion");
        Ok(renamed)
    }
}

/// Waits for an append's turn: its ticket is served and the unwritten bytes
/// are back under `pending_bytes_max`. Dropping it before it resolves gives
/// the ticket up; once it resolved `Ok`, the caller finishes the ticket after
/// its synchronous append.
struct AppendTurn<'a> {
    shared: &'a LogShared,
    ticket: u64,
    done: bool,
}

impl Future for AppendTurn<'_> {
    type Output = Result<(), StorageError>;
    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let shared = self.shared;
        let mut state = shared.state.borrow_mut();
        if let Err(error) = state.check_appendable(&shared.dir) {
            state.append_turns.abandon(self.ticket);
            drop(state);
            self.done = true;
            return Poll::Ready(Err(error));
        }
        if state.append_turns.is_turn(self.ticket)
            && state.pending_bytes <= shared.config.pending_bytes_max
        {
            drop(state);
            self.done = true;
            return Poll::Ready(Ok(()));
        }
        state.append_turns.register(context.waker());
        Poll::Pending
    }
}

impl Drop for AppendTurn<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.shared
                .state
                .borrow_mut()
                .append_turns
                .abandon(self.ticket);
        }
    }
}

impl LogShared {
    /// The error to report once the writer is gone.
    fn terminal_error(&self) -> StorageError {
        match &self.state.borrow().failure {
            Some(failure) => failure.clone(),
            None => StorageError::Closed {
                dir: self.dir.clone(),
            },
        }
    }

    /// Takes note of completed writes: advances the written offset, answers
    /// `flush(false)` callers, evicts the tail and lets waiting appends go.
    fn confirm_written(
        &self,
        appender: &mut SegmentAppender,
        unconfirmed: &mut VecDeque<Unconfirmed>,
    ) -> Result<(), StorageError> {
        appender.reap()?;
        let written_position = appender.written_position();
        let mut state = self.state.borrow_mut();
        let mut progressed = false;
        while let Some(front) = unconfirmed.front() {
            if front.end_position > written_position {
                break;
            }
            assert!(front.next_offset > state.written_offset);
            state.written_offset = front.next_offset;
            state.pending_bytes -= front.bytes;
            unconfirmed.pop_front();
            progressed = true;
        }
        if progressed {
            state.resolve_written_waiters();
            state.evict_cache(self.config.cache_bytes);
            state.append_turns.wake_all();
        }
        Ok(())
    }

    fn mark_synced(&self, offset: i64) {
        let mut state = self.state.borrow_mut();
        assert!(
            offset <= state.written_offset,
            "only written data can be synced"
        );
        if offset > state.synced_offset {
            state.synced_offset = offset;
        }
        state.resolve_sync_waiters();
    }

    /// The writer failed: the log takes no more appends, and everybody
    /// waiting gets the error.
    fn fail(&self, failure: StorageError) {
        error!(dir = %self.dir.display(), error = %failure, "log writer failed; the log takes no more appends");
        let mut state = self.state.borrow_mut();
        state.failure = Some(failure.clone());
        let written_waiters = std::mem::take(&mut state.written_waiters);
        let sync_waiters = std::mem::take(&mut state.sync_waiters);
        for waiter in written_waiters.into_iter().chain(sync_waiters) {
            let _ = waiter.sender.send(Err(failure.clone()));
        }
        for sender in state.close_waiters.drain(..) {
            let _ = sender.send(Err(failure.clone()));
        }
        state.append_turns.wake_all();
    }
}

/// The writer task: one per log, the only code that writes its files.
///
/// It holds the log only weakly between steps: once every `Log` handle is
/// gone (dropped without `close`), it exits after the step in progress, like
/// a crash for anything not yet written.
async fn run_writer(
    log: Weak<LogShared>,
    signal: Rc<Signal>,
    exited: Rc<Signal>,
    mut appender: SegmentAppender,
) {
    let mut unconfirmed = VecDeque::new();
    let mut roll_finish = None;
    let mut delayed = DelayedWrite::default();
    let mut wake_at: Option<Instant> = None;
    loop {
        match wake_at {
            None => signal.wait().await,
            Some(at) => {
                // A timer of the executor's own wheel: it costs the ring
                // an operation only when the shard goes to sleep with it
                // the earliest.
                let timer =
                    glommio::timer::Timer::new(at.saturating_duration_since(Instant::now()));
                futures::future::select(std::pin::pin!(signal.wait()), timer).await;
            }
        }
        let Some(shared) = log.upgrade() else {
            break;
        };
        let step = writer_step(
            &shared,
            &mut appender,
            &mut unconfirmed,
            &mut roll_finish,
            &mut delayed,
        );
        match step.await {
            Ok(WriterNext::Continue(next_wake)) => wake_at = next_wake,
            Ok(WriterNext::Stop) => break,
            Err(failure) => {
                shared.fail(failure);
                break;
            }
        }
    }
    // Writes already issued finish before the exit is announced; their
    // errors no longer matter to anybody.
    let _ = appender.wait_all().await;
    if let Some(finish) = roll_finish {
        let _ = finish.task.await;
    }
    exited.notify();
}

/// A rolled segment's fdatasync and index files, finishing in the
/// background while the next segment takes writes. On a disk that caches
/// writes the fdatasync flushes everything written since the last one: with
/// acks=1 (no syncs) that is the whole segment, 0.4 s for 256 MiB and 1.6 s
/// for 1 GiB measured on the 2-vCPU EPYC machine, and appends waited for it
/// at every roll. (Kafka also flushes a rolled segment in the background.)
struct RollFinish {
    old_base_offset: i64,
    /// The new segment's base offset: nothing from the old one is durable
    /// before the task ends.
    boundary: i64,
    /// Newest offset that syncs of the new segment covered meanwhile; it
    /// counts once the old segment is durable too.
    deferred_synced: i64,
    done: Rc<Cell<bool>>,
    task: glommio::Task<Result<(), StorageError>>,
}

/// Collects the rolled segment's background finish if it is done, or waits
/// for it when `wait`; then the log is durable up to the newest offset a
/// sync covered.
async fn collect_roll_finish(
    shared: &LogShared,
    roll_finish: &mut Option<RollFinish>,
    wait: bool,
) -> Result<(), StorageError> {
    let Some(finish) = roll_finish.take_if(|finish| wait || finish.done.get()) else {
        return Ok(());
    };
    finish.task.await?;
    {
        let mut state = shared.state.borrow_mut();
        let position = state
            .segments
            .partition_point(|segment| segment.base_offset < finish.old_base_offset);
        if let Some(old) = state.segments.get_mut(position) {
            if old.base_offset == finish.old_base_offset {
                old.files_complete = true;
            }
        }
    }
    shared.mark_synced(finish.boundary.max(finish.deferred_synced));
    Ok(())
}

/// Since when the writer holds appended data back that nobody waits for
/// (`LogConfig::write_delay_us`).
#[derive(Default)]
struct DelayedWrite {
    since: Option<Instant>,
}

async fn writer_step(
    shared: &LogShared,
    appender: &mut SegmentAppender,
    unconfirmed: &mut VecDeque<Unconfirmed>,
    roll_finish: &mut Option<RollFinish>,
    delayed: &mut DelayedWrite,
) -> Result<WriterNext, StorageError> {
    // Failed from outside the writer (a compaction): nothing more is
    // written.
    if shared.state.borrow().failure.is_some() {
        return Ok(WriterNext::Stop);
    }
    // Drain the queue in append order.
    loop {
        let command = shared.state.borrow_mut().queue.pop_front();
        let Some(command) = command else {
            break;
        };
        match command {
            WriteCommand::Batch {
                first,
                rest,
                next_offset,
                direct,
            } => {
                match direct {
                    Some(mem) if appender.can_append_direct(&mem) => {
                        appender.append_direct(mem).await?;
                    }
                    _ => {
                        appender.append(&first).await?;
                        if !rest.is_empty() {
                            appender.append(&rest).await?;
                        }
                        direct::count_copied(first.len() + rest.len());
                    }
                }
                unconfirmed.push_back(Unconfirmed {
                    end_position: appender.logical_size(),
                    next_offset,
                    bytes: first.len() + rest.len(),
                });
            }
            WriteCommand::Roll { new_base_offset } => {
                writer_roll(shared, appender, unconfirmed, roll_finish, new_base_offset).await?;
            }
            WriteCommand::EpochCheckpoint => {
                let text = encode_leader_epoch_checkpoint(&shared.state.borrow().leader_epochs);
                write_file_atomically(&shared.dir, LEADER_EPOCH_CHECKPOINT_FILE, text.into_bytes())
                    .await?;
            }
        }
        shared.confirm_written(appender, unconfirmed)?;
        glommio::yield_if_needed().await;
    }

    // Hand the data that does not fill a buffer to the disk as well (its
    // last block partial) when somebody waits for it to be written. Data
    // nobody waits for (acks=1 and 0) waits up to the write delay, and for
    // the writes of this log in flight: the writer wakes when they complete
    // or the delay ends and writes it then, with everything appended
    // meanwhile. Under load, data goes out in full buffers instead of one
    // write per request, each writing again the partial block the one
    // before it ended in; on ext4 each appending write costs its own
    // journalled block allocation and inode update in io_uring's workers.
    // Collect writes that completed since (their completion is what woke
    // this step when the queue is empty), so `writes_in_flight` is current.
    shared.confirm_written(appender, unconfirmed)?;
    let (waited_for, closing) = {
        let state = shared.state.borrow();
        let closing = state.lifecycle == Lifecycle::Closing;
        let waited_for = !state.written_waiters.is_empty()
            || !state.sync_waiters.is_empty()
            || closing
            || !state.append_turns.is_idle();
        (waited_for, closing)
    };
    let mut wake_at: Option<Instant> = None;
    if appender.has_unsubmitted() {
        let now = Instant::now();
        let since = *delayed.since.get_or_insert(now);
        let due = since + Duration::from_micros(shared.config.write_delay_us);
        // Where `WritesDuringSync` holds, data waited for is written once
        // the log's sync in flight ends (which wakes this task), unless the
        // log is closing.
        let held = shared.config.writes_during_sync.holds() && appender.sync_running() && !closing;
        if (waited_for && !held) || (due <= now && !appender.writes_in_flight()) {
            appender.write_partial().await?;
            shared.confirm_written(appender, unconfirmed)?;
        } else if due > now {
            wake_at = Some(due);
        }
    }
    if !appender.has_unsubmitted() {
        delayed.since = None;
    }

    // Group commit: one fdatasync, in the background while later writes go
    // on, covers every sync waiter whose data is written by the time it
    // starts. Waiters whose data is still being written wait for the writes
    // (which wake this task) and the next sync.
    // Waiters up to a rolled segment's end wait for its own fdatasync.
    collect_roll_finish(shared, roll_finish, false).await?;
    if let Some(synced_offset) = appender.take_finished_sync().await? {
        match roll_finish {
            Some(finish) => finish.deferred_synced = finish.deferred_synced.max(synced_offset),
            None => shared.mark_synced(synced_offset),
        }
    }
    if !appender.sync_in_flight() {
        let sync_offset = {
            let state = shared.state.borrow();
            let covered = roll_finish.as_ref().map_or(state.synced_offset, |finish| {
                finish.deferred_synced.max(state.synced_offset)
            });
            let coverable = state.sync_waiters.iter().any(|waiter| {
                waiter.target_offset > covered && waiter.target_offset <= state.written_offset
            });
            coverable.then_some(state.written_offset)
        };
        if let Some(sync_offset) = sync_offset {
            appender.start_sync(sync_offset);
        }
    }

    let closing = {
        let state = shared.state.borrow();
        state.lifecycle == Lifecycle::Closing && state.queue.is_empty()
    };
    if closing {
        collect_roll_finish(shared, roll_finish, true).await?;
        writer_close(shared, appender, unconfirmed).await?;
        return Ok(WriterNext::Stop);
    }
    Ok(WriterNext::Continue(wake_at))
}

/// Finishes the active segment (write, wait, truncate, fdatasync, indexes)
/// and starts the one at `new_base_offset`.
async fn writer_roll(
    shared: &LogShared,
    appender: &mut SegmentAppender,
    unconfirmed: &mut VecDeque<Unconfirmed>,
    roll_finish: &mut Option<RollFinish>,
    new_base_offset: i64,
) -> Result<(), StorageError> {
    // One segment finishes in the background at a time.
    collect_roll_finish(shared, roll_finish, true).await?;
    appender.finish_writes().await?;
    shared.confirm_written(appender, unconfirmed)?;
    assert!(
        unconfirmed.is_empty(),
        "a finished segment has nothing unwritten"
    );
    let written_offset = shared.state.borrow().written_offset;
    assert_eq!(
        written_offset, new_base_offset,
        "a roll follows the old segment's last batch"
    );

    let (old_base_offset, offset_index_bytes, time_index_bytes) = {
        let state = shared.state.borrow();
        let position = state
            .segments
            .partition_point(|segment| segment.base_offset < new_base_offset);
        assert!(position > 0 && position < state.segments.len());
        let old = &state.segments[position - 1];
        (
            old.base_offset,
            old.offset_index.encode(),
            old.time_index.encode(),
        )
    };

    let initial_bytes = shared.segment.get().initial_file_bytes();
    let file = create_segment_file(&shared.dir, new_base_offset, initial_bytes).await?;
    {
        let mut state = shared.state.borrow_mut();
        let position = state
            .segments
            .partition_point(|segment| segment.base_offset < new_base_offset);
        let segment = &mut state.segments[position];
        assert_eq!(segment.base_offset, new_base_offset);
        segment.file = Some(file.clone());
    }
    let next = SegmentAppender::open(
        file,
        segment_file_path(&shared.dir, new_base_offset, LOG_FILE_EXTENSION),
        0,
        shared.config.appender_settings(),
        shared.writer_signal.clone(),
        shared.counters.clone(),
    )
    .await?;
    let old = std::mem::replace(appender, next);
    let dir = shared.dir.clone();
    #[cfg(test)]
    let delay = ROLL_SYNC_DELAY_FOR_TESTS.with(Cell::get);
    let (done, task) = spawn_signalled(&shared.writer_signal, async move {
        #[cfg(test)]
        glommio::timer::sleep(delay).await;
        old.sync().await?;
        drop(old);
        write_index_files(&dir, old_base_offset, offset_index_bytes, time_index_bytes).await
    });
    *roll_finish = Some(RollFinish {
        old_base_offset,
        boundary: new_base_offset,
        deferred_synced: new_base_offset,
        done,
        task,
    });
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Delays the fdatasync of rolled segments (tests of the roll).
    static ROLL_SYNC_DELAY_FOR_TESTS: Cell<std::time::Duration> =
        const { Cell::new(std::time::Duration::ZERO) };
}

/// Writes and fdatasyncs a segment's `.index` and `.timeindex`.
async fn write_index_files(
    dir: &Path,
    base_offset: i64,
    offset_index_bytes: Vec<u8>,
    time_index_bytes: Vec<u8>,
) -> Result<(), StorageError> {
    write_file_synced(
        segment_file_path(dir, base_offset, INDEX_FILE_EXTENSION),
        offset_index_bytes,
    )
    .await?;
    write_file_synced(
        segment_file_path(dir, base_offset, TIME_INDEX_FILE_EXTENSION),
        time_index_bytes,
    )
    .await
}

/// Finishes the active segment for good and answers `close` callers.
async fn writer_close(
    shared: &LogShared,
    appender: &mut SegmentAppender,
    unconfirmed: &mut VecDeque<Unconfirmed>,
) -> Result<(), StorageError> {
    appender.finish().await?;
    shared.confirm_written(appender, unconfirmed)?;
    assert!(unconfirmed.is_empty());
    let written_offset = shared.state.borrow().written_offset;
    shared.mark_synced(written_offset);
    {
        let mut state = shared.state.borrow_mut();
        state.active_segment_mut().seal_time_index();
    }
    // Encode under the borrow, write without it.
    let (base_offset, offset_index_bytes, time_index_bytes) = {
        let state = shared.state.borrow();
        let active = state.active_segment();
        (
            active.base_offset,
            active.offset_index.encode(),
            active.time_index.encode(),
        )
    };
    write_index_files(
        &shared.dir,
        base_offset,
        offset_index_bytes,
        time_index_bytes,
    )
    .await?;

    let mut state = shared.state.borrow_mut();
    state.lifecycle = Lifecycle::Closed;
    for sender in state.close_waiters.drain(..) {
        let _ = sender.send(Ok(()));
    }
    let dir = shared.dir.clone();
    let written_waiters = std::mem::take(&mut state.written_waiters);
    let sync_waiters = std::mem::take(&mut state.sync_waiters);
    for waiter in written_waiters.into_iter().chain(sync_waiters) {
        let answer = if waiter.target_offset <= written_offset {
            Ok(written_offset)
        } else {
            Err(StorageError::Closed { dir: dir.clone() })
        };
        let _ = waiter.sender.send(answer);
    }
    state.append_turns.wake_all();
    info!(dir = %shared.dir.display(), log_end_offset = state.log_end_offset, "closed log");
    Ok(())
}

/// What compaction needs of a closed segment, copied out under the borrow.
#[derive(Debug, Clone)]
pub(super) struct SegmentSnapshot {
    pub base_offset: i64,
    pub size_bytes: u64,
    pub max_timestamp: i64,
    /// Its first batch's maxTimestamp (Kafka's rolling-based timestamp);
    /// its `max_timestamp` for a segment read at open, whose first batch was
    /// not read.
    pub first_batch_timestamp: i64,
    pub offset_index_entries: usize,
    pub time_index_entries: usize,
    pub file: Rc<DmaFile>,
}

/// The log as compaction plans it: its offsets and the closed segments it
/// may rewrite.
#[derive(Debug, Clone)]
pub(super) struct CompactionSnapshot {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// Base offset of the first segment compaction must not touch: the
    /// active segment, or a closed one whose roll the writer is finishing.
    pub first_unfinished_base_offset: i64,
    pub cleaner_checkpoint: Option<i64>,
    /// The closed, finished segments before it, in offset order.
    pub segments: Vec<SegmentSnapshot>,
}

/// Marks a compaction as running; clears the mark and wakes `close` when
/// dropped.
pub(super) struct CompactionGuard {
    log: Log,
}

impl Drop for CompactionGuard {
    fn drop(&mut self) {
        let mut state = self.log.shared.state.borrow_mut();
        state.compaction_running = false;
        for waiter in state.compaction_waiters.drain(..) {
            let _ = waiter.send(());
        }
    }
}

/// The hooks `compaction.rs` uses; everything else of the state stays here.
impl Log {
    /// The log's settings.
    pub(super) fn config(&self) -> &LogConfig {
        &self.shared.config
    }

    /// The topic-decided settings as they are now.
    pub(super) fn segment_settings(&self) -> SegmentSettings {
        self.shared.segment.get()
    }

    /// Starts a compaction: fails when the log is closing or failed, or when
    /// another compaction runs.
    pub(super) fn compaction_begin(&self) -> Result<CompactionGuard, StorageError> {
        let mut state = self.shared.state.borrow_mut();
        state.check_appendable(&self.shared.dir)?;
        if state.compaction_running {
            return Err(StorageError::CompactionInProgress {
                dir: self.shared.dir.clone(),
            });
        }
        state.compaction_running = true;
        Ok(CompactionGuard { log: self.clone() })
    }

    /// Fails once the log is closing (a compaction then stops) or failed.
    pub(super) fn compaction_check_open(&self) -> Result<(), StorageError> {
        self.shared
            .state
            .borrow()
            .check_appendable(&self.shared.dir)
    }

    /// Bytes of the closed segments that hold records past the cleaner
    /// checkpoint (the log start when there is none): the part of the log
    /// a compaction would read, as Kafka counts a partition's
    /// `uncleanable-bytes`.
    pub fn dirty_closed_bytes(&self) -> u64 {
        let state = self.shared.state.borrow();
        let first_dirty = state
            .cleaner_checkpoint
            .unwrap_or(i64::MIN)
            .max(state.log_start_offset());
        let closed = &state.segments[..state.segments.len() - 1];
        closed
            .iter()
            .zip(&state.segments[1..])
            .filter(|(_, next)| next.base_offset > first_dirty)
            .map(|(segment, _)| segment.size_bytes)
            .sum()
    }

    pub(super) fn compaction_snapshot(&self) -> CompactionSnapshot {
        let state = self.shared.state.borrow();
        assert!(state.compaction_running);
        let closed = &state.segments[..state.segments.len() - 1];
        let finished = closed
            .iter()
            .take_while(|segment| segment.files_complete)
            .count();
        let first_unfinished_base_offset = state.segments[finished].base_offset;
        let segments = closed[..finished]
            .iter()
            .map(|segment| SegmentSnapshot {
                base_offset: segment.base_offset,
                size_bytes: segment.size_bytes,
                max_timestamp: segment.max_timestamp,
                first_batch_timestamp: segment
                    .first_batch_timestamp
                    .unwrap_or(segment.max_timestamp),
                offset_index_entries: segment.offset_index.len(),
                time_index_entries: segment.time_index.len(),
                file: match &segment.file {
                    Some(file) => file.clone(),
                    None => unreachable!("a finished segment has its file open"),
                },
            })
            .collect();
        CompactionSnapshot {
            log_start_offset: state.log_start_offset(),
            log_end_offset: state.log_end_offset,
            first_unfinished_base_offset,
            cleaner_checkpoint: state.cleaner_checkpoint,
            segments,
        }
    }

    /// File position of the indexed batch at or before `offset` in the
    /// segment at `base_offset`.
    pub(super) fn offset_index_position(&self, base_offset: i64, offset: i64) -> u64 {
        let state = self.shared.state.borrow();
        let position = state
            .segments
            .partition_point(|segment| segment.base_offset < base_offset);
        let segment = &state.segments[position];
        assert_eq!(segment.base_offset, base_offset);
        u64::from(segment.offset_index.lookup(offset).position)
    }

    /// Puts the compacted `segment` in place of the closed segments at
    /// `replaced_base_offsets` (consecutive; the first shares the new
    /// segment's base offset), in one step: reads planned before keep their
    /// handles on the old files, reads planned after see the new one. Tail
    /// batches of the replaced segments are dropped from memory, their
    /// positions being those of the old files.
    ///
    /// # Panics
    /// If the replaced segments are not consecutive, finished, closed
    /// segments, or the new one holds offsets past them.
    pub(super) fn compaction_swap(&self, replaced_base_offsets: &[i64], segment: Segment) {
        assert!(!replaced_base_offsets.is_empty());
        assert_eq!(segment.base_offset, replaced_base_offsets[0]);
        assert!(segment.files_complete);
        assert!(segment.file.is_some());
        let mut state = self.shared.state.borrow_mut();
        assert!(state.compaction_running);
        let start = state
            .segments
            .partition_point(|existing| existing.base_offset < segment.base_offset);
        let end = start + replaced_base_offsets.len();
        assert!(
            end < state.segments.len(),
            "the active segment is never replaced"
        );
        for (existing, &base_offset) in state.segments[start..end].iter().zip(replaced_base_offsets)
        {
            assert_eq!(existing.base_offset, base_offset);
            assert!(existing.files_complete);
        }
        let group_end_offset = state.segments[end].base_offset;
        assert!(segment.next_offset <= group_end_offset);
        state.segments.splice(start..end, std::iter::once(segment));
        state.drop_cached_below(group_end_offset);
    }

    /// A compaction failed after its swap was in memory: the log takes no
    /// more appends (the files no longer match it until recovery) and its
    /// writer stops, so a close or delete still ends.
    pub(super) fn compaction_fail(&self, failure: StorageError) {
        self.shared.fail(failure);
        self.shared.writer_signal.notify();
    }

    /// Records how far compaction has cleaned the log.
    pub(super) fn set_cleaner_checkpoint(&self, first_dirty_offset: i64) {
        let mut state = self.shared.state.borrow_mut();
        assert!(first_dirty_offset <= state.log_end_offset);
        // DeleteRecords may have moved the start past it meanwhile (the
        // next compaction starts at the log start anyway).
        let first_dirty_offset = first_dirty_offset.max(state.log_start_offset());
        state.cleaner_checkpoint = Some(first_dirty_offset);
    }
}

/// The hooks `retention.rs` uses.
impl Log {
    /// Every segment as retention sees it, oldest first.
    pub(super) fn retention_facts(&self) -> Vec<SegmentFacts> {
        let state = self.shared.state.borrow();
        let active = state.segments.len() - 1;
        state
            .segments
            .iter()
            .enumerate()
            .map(|(position, segment)| SegmentFacts {
                base_offset: segment.base_offset,
                next_offset: segment.next_offset,
                size_bytes: segment.size_bytes,
                largest_timestamp_ms: if segment.max_timestamp >= 0 {
                    segment.max_timestamp
                } else {
                    segment.created_ms
                },
                finished: position < active && segment.files_complete,
                active: position == active,
            })
            .collect()
    }

    /// Takes the first `count` segments (closed and finished) out of the
    /// log: the log start moves to the next one's base offset, tail batches
    /// below it leave memory, and the leader epochs are cut at the new start
    /// (Kafka's `LeaderEpochFileCache.truncateFromStart`). Reads planned
    /// before keep their handles on the files. Returns each removed
    /// segment's base offset and size; its files are the caller's to delete.
    ///
    /// # Panics
    /// Without the compaction mark, or if asked for the active segment or
    /// an unfinished one.
    pub(super) fn retention_remove(&self, count: usize) -> Vec<(i64, u64)> {
        let mut state = self.shared.state.borrow_mut();
        assert!(state.compaction_running);
        assert!(
            count < state.segments.len(),
            "the active segment is never removed"
        );
        assert!(state.segments[..count]
            .iter()
            .all(|segment| segment.files_complete));
        let removed: Vec<(i64, u64)> = state
            .segments
            .drain(..count)
            .map(|segment| (segment.base_offset, segment.size_bytes))
            .collect();
        // Only what the removed segments held: a start DeleteRecords set
        // may lie in the tail, among batches not written yet.
        let first_kept = state.segments[0].base_offset;
        state.drop_cached_below(first_kept);
        removed
    }

    /// Cuts the leader epochs at the log start (Kafka's
    /// `LeaderEpochFileCache.truncateFromStart`) and has the writer rewrite
    /// the checkpoint; called once the removed segments' deletion is
    /// durable, so a crash never leaves segments below the first epoch.
    pub(super) fn retention_cut_epochs(&self) {
        let mut state = self.shared.state.borrow_mut();
        let log_start_offset = state.log_start_offset();
        if truncate_epochs_from_start(&mut state.leader_epochs, log_start_offset) {
            state.queue.push_back(WriteCommand::EpochCheckpoint);
            drop(state);
            self.shared.writer_signal.notify();
        }
    }

    /// Segments taken out of the log whose files are still to be deleted
    /// (a deletion that failed is retried by the next pass).
    pub(super) fn take_pending_deletions(&self) -> Vec<(i64, u64)> {
        std::mem::take(&mut self.shared.state.borrow_mut().pending_deletions)
    }

    /// Keeps `removed` for the next pass to delete.
    pub(super) fn keep_pending_deletions(&self, removed: Vec<(i64, u64)>) {
        self.shared
            .state
            .borrow_mut()
            .pending_deletions
            .extend(removed);
    }

    /// Rolls the active segment so retention can delete it; false (nothing
    /// done) when it is empty or the log takes no appends.
    pub(super) fn roll_for_retention(&self, now_ms: i64) -> bool {
        let mut state = self.shared.state.borrow_mut();
        if state.check_appendable(&self.shared.dir).is_err() || state.active_segment().is_empty() {
            return false;
        }
        state.start_roll(&self.shared.segment.get(), &self.shared.dir, now_ms);
        drop(state);
        self.shared.writer_signal.notify();
        true
    }
}

impl Log {
    /// Waits until the segment before the active one (the one
    /// `roll_for_retention` closed) has finished its roll; false when the
    /// log failed or stopped taking appends meanwhile. Polls: the writer
    /// finishes a roll within a sync's time, and retention runs rarely.
    pub(super) async fn wait_for_roll(&self) -> bool {
        loop {
            {
                let state = self.shared.state.borrow();
                if state.check_appendable(&self.shared.dir).is_err() {
                    return false;
                }
                let count = state.segments.len();
                if count < 2 || state.segments[count - 2].files_complete {
                    return true;
                }
            }
            glommio::timer::sleep(std::time::Duration::from_millis(2)).await;
        }
    }
}

#[cfg(test)]
impl Log {
    /// Simulates a crash of this log: drops the handle (the caller must hold
    /// no other) and waits until the writer task has exited and its issued
    /// writes completed, so a reopen of the directory races with nothing.
    pub(crate) fn active_base_offset_for_tests(&self) -> i64 {
        self.shared.state.borrow().active_segment().base_offset
    }

    pub(crate) async fn crash_for_tests(self) {
        let exited = self.shared.writer_exited.clone();
        drop(self);
        exited.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::time::Duration;

    use kafka_protocol::records::Compression;

    use super::*;
    use crate::protocol::record_batch::validate_batch;
    use crate::storage::{
        run_on_executor,
        test_support::{batch, batch_with_timestamps, joined, piece_bytes, small_config, stamped},
    };

    fn temporary_log_dir() -> (tempfile::TempDir, PathBuf) {
        let root = match tempfile::tempdir() {
            Ok(root) => root,
            Err(error) => panic!("cannot create a temporary directory: {error}"),
        };
        let dir = root.path().join("orders-0");
        (root, dir)
    }

    /// Appends `count` batches of three records, batch `i` stamped with
    /// timestamp `1000 + 10 * i`; returns the bytes the log must store.
    async fn append_batches(log: &Log, count: usize) -> Vec<Vec<u8>> {
        let mut stored = Vec::new();
        for index in 0..count {
            let (bytes, header) = batch(3, 1000 + 10 * index as i64);
            let info = log.append(bytes.clone(), &header, 0, 0).await.unwrap();
            assert_eq!(info.last_offset, info.base_offset + 2);
            stored.push(stamped(&bytes, info.base_offset, 0));
        }
        stored
    }

    /// The `.log` files of `dir`, in offset order, concatenated.
    fn segment_files_concatenated(dir: &Path) -> (usize, Vec<u8>) {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".log"))
            .collect();
        names.sort();
        let mut bytes = Vec::new();
        for name in &names {
            bytes.extend(std::fs::read(dir.join(name)).unwrap());
        }
        (names.len(), bytes)
    }

    /// A log in `dir` without a tail cache, 4 KiB index interval and
    /// `segment_bytes` segments, holding `count` written batches, batch `i`
    /// of `records(i)` records; returns it and the batches' base offsets.
    async fn log_of_batches(
        dir: &Path,
        segment_bytes: u64,
        count: i64,
        records: impl Fn(i64) -> i32,
    ) -> (Log, Vec<i64>) {
        let config = LogConfig {
            segment_bytes,
            index_interval_bytes: 4096,
            segment_index_bytes: 1 << 20,
            write_buffer_bytes: 64 << 10,
            write_buffer_bytes_max: 256 << 10,
            preallocate_bytes: 0,
            ..small_config(0)
        };
        let log = Log::create(dir, config, Uuid::new_v4()).await.unwrap();
        let mut starts = Vec::new();
        for index in 0..count {
            let (bytes, header) = batch(records(index), 1000 + index);
            let info = log.append(bytes, &header, 0, 0).await.unwrap();
            starts.push(info.base_offset);
        }
        log.flush(false).await.unwrap();
        (log, starts)
    }

    /// Goal: a cold read with a byte budget loads about the budget from the
    /// file, not the budget again to find where to stop (it used to read a
    /// second chunk for the batch straddling the first chunk's end).
    /// Method: ~4.5 KiB batches in one large segment, no tail cache, 1 MiB
    /// reads from many batch starts; each must return whole batches within
    /// the budget and load at most budget + 8 KiB slack + 2 alignment blocks.
    #[test]
    fn budgeted_cold_reads_load_about_the_budget() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let (log, starts) = log_of_batches(&dir, 16 << 20, 600, |_| 400).await;
            // Reads load at most 1 MiB at a time: the budget plus the index
            // interval does not fit one chunk.
            let budget = 1 << 20;
            for &offset in starts[..300].iter().step_by(13) {
                let before = super::super::segment::segment_bytes_read();
                let read = log.read(offset, i64::MAX, budget, true).await.unwrap();
                let loaded = super::super::segment::segment_bytes_read() - before;
                assert!(
                    read.bytes <= budget && read.bytes > budget / 2,
                    "{}",
                    read.bytes
                );
                let batches = super::super::reader::whole_batches(read);
                assert_eq!(batches[0].0.base_offset, offset);
                assert!(
                    loaded <= (budget + (8 << 10) + 2 * 4096) as u64,
                    "read {offset} loaded {loaded} bytes for a {budget}-byte budget"
                );
            }
            log.close().await.unwrap();
        });
    }

    /// The active segment's logical size.
    fn active_segment_bytes(log: &Log) -> u64 {
        log.shared.state.borrow().active_segment().size_bytes
    }

    /// Goal: the bytes a compaction would read are the closed segments
    /// holding records past the cleaner checkpoint. Method: several
    /// segments, the checkpoint moved to a segment's base and inside one.
    #[test]
    fn dirty_closed_bytes_count_the_closed_segments_past_the_checkpoint() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let (log, _) = log_of_batches(&dir, 64 << 10, 200, |index| 1 + index as i32 * 2).await;
            let bases = log.segment_base_offsets();
            assert!(bases.len() > 3, "{bases:?}");
            let size = |base: i64| {
                std::fs::metadata(segment_file_path(&dir, base, LOG_FILE_EXTENSION))
                    .unwrap()
                    .len()
            };
            let closed = &bases[..bases.len() - 1];
            let all: u64 = closed.iter().map(|&base| size(base)).sum();
            assert_eq!(log.dirty_closed_bytes(), all);
            log.set_cleaner_checkpoint(bases[2]);
            let past_two: u64 = closed[2..].iter().map(|&base| size(base)).sum();
            assert_eq!(log.dirty_closed_bytes(), past_two);
            log.set_cleaner_checkpoint(bases[2] + 1);
            assert_eq!(log.dirty_closed_bytes(), past_two);
            log.set_cleaner_checkpoint(*bases.last().unwrap());
            assert_eq!(log.dirty_closed_bytes(), 0);
            log.close().await.unwrap();
        });
    }

    /// Goal: splice reads send exactly the bytes DMA reads return, and never
    /// a range past the last whole block of a segment still being written
    /// (that block is rewritten by the next DMA write). Method: ~4.5 KiB
    /// batches over several segments, no tail cache; reads at many offsets
    /// and budgets both ways, the file ranges read back from their files.
    #[test]
    fn splice_reads_send_what_dma_reads_return() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let (log, starts) =
                log_of_batches(&dir, 64 << 10, 200, |index| 1 + index as i32 * 2).await;
            assert!(log.stats().segment_count > 2);
            let active = {
                use std::os::unix::fs::MetadataExt;
                let base = *log.segment_base_offsets().last().unwrap();
                let path = segment_file_path(&dir, base, LOG_FILE_EXTENSION);
                let size = active_segment_bytes(&log);
                assert!(
                    size % rewrite_block_bytes() != 0,
                    "the test wants a partial block"
                );
                std::fs::metadata(&path).unwrap().ino()
            };
            let mut file_ranges = 0;
            let mut active_ranges = 0;
            for (i, &offset) in starts.iter().enumerate().step_by(3) {
                let budget = [1usize, 10 << 10, 100 << 10, 1 << 20][i % 4];
                let dma = log.read(offset, i64::MAX, budget, true).await.unwrap();
                let spliced = log
                    .read_pieces(offset, i64::MAX, budget, true, true)
                    .await
                    .unwrap();
                let bytes = piece_bytes(&spliced.pieces);
                for piece in &spliced.pieces {
                    if let Piece::File(range) = piece {
                        file_ranges += 1;
                        use std::os::unix::fs::MetadataExt;
                        if range.file.metadata().unwrap().ino() == active {
                            active_ranges += 1;
                            let end = range.position + range.len as u64;
                            let size = active_segment_bytes(&log);
                            assert!(
                                end <= size / rewrite_block_bytes() * rewrite_block_bytes(),
                                "a range reaches into the active segment's partial block"
                            );
                        }
                    }
                }
                assert_eq!(spliced.bytes, dma.bytes, "offset {offset} budget {budget}");
                assert!(bytes == joined(&dma), "offset {offset} budget {budget}");
            }
            assert!(file_ranges > 10, "only {file_ranges} file ranges");
            assert!(active_ranges > 0, "no range of the active segment");
            log.close().await.unwrap();
        });
    }

    /// Which pages of `file` (from `position`, `len` bytes) are in the page
    /// cache, without reading anything (mmap + mincore).
    fn pages_cached(file: &std::fs::File, position: u64, len: usize) -> Vec<bool> {
        use std::os::fd::AsRawFd;
        let page = rewrite_block_bytes() as usize;
        assert_eq!(position % page as u64, 0);
        let pages = len.div_ceil(page);
        // SAFETY: a read-only shared mapping of a file we hold open, unmapped
        // below; mincore only reports on it.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                pages * page,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                position as libc::off_t,
            );
            assert_ne!(
                map,
                libc::MAP_FAILED,
                "mmap: {}",
                std::io::Error::last_os_error()
            );
            let mut residency = vec![0u8; pages];
            let status = libc::mincore(map, pages * page, residency.as_mut_ptr());
            let error = std::io::Error::last_os_error();
            libc::munmap(map, pages * page);
            assert_eq!(status, 0, "mincore: {error}");
            residency.iter().map(|flags| flags & 1 == 1).collect()
        }
    }

    /// Goal: a splice read of a consumer catching up asks the kernel for
    /// what its next fetches will take as well (read-ahead), and no more;
    /// without it each fetch waited for the disk in turn. Method: ~9 MiB of
    /// ~4.5 KiB batches in one segment written by DMA (none of it in the
    /// page cache), a 1 MiB splice read from the start: the page 2.5 MiB in
    /// comes into the page cache, the ones from 6 MiB on do not.
    #[test]
    fn splice_reads_ask_for_the_next_fetches_ahead() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let (log, _starts) = log_of_batches(&dir, 64 << 20, 2100, |_| 400).await;
            let base = log.segment_base_offsets()[0];
            let path = segment_file_path(&dir, base, LOG_FILE_EXTENSION);
            let probe = std::fs::File::open(&path).unwrap();
            assert!(
                active_segment_bytes(&log) > 9 << 20,
                "{}",
                active_segment_bytes(&log)
            );
            let ahead_page = 5 << 19;
            let far = 6 << 20;
            let far_len = 2 << 20;
            assert!(
                !pages_cached(&probe, ahead_page, 4096)[0]
                    && !pages_cached(&probe, far, far_len).contains(&true),
                "DMA writes left pages in the page cache"
            );
            let budget = 1 << 20;
            let read = log
                .read_pieces(0, i64::MAX, budget, true, true)
                .await
                .unwrap();
            assert!(
                matches!(read.pieces.first(), Some(Piece::File(_))),
                "the read was not spliced"
            );
            assert!(read.bytes <= budget);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !pages_cached(&probe, ahead_page, 4096)[0] {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the next fetches' range was not read ahead"
                );
                glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
            }
            assert!(
                !pages_cached(&probe, far, far_len).contains(&true),
                "read ahead further than the next fetches"
            );
            log.close().await.unwrap();
        });
    }

    /// Goal: the in-memory tails of all logs on a shard stay within the
    /// shard's budget, evicted batches still read back from the files, and
    /// the budget's count returns to zero when the logs are gone. Method:
    /// ten logs with 1 MiB tails each get ~40 KiB written, under a 64 KiB
    /// shard budget; one more append enforces it.
    #[test]
    fn shard_tail_budget_bounds_all_logs_together() {
        run_on_executor(|| async {
            let budget = 64 << 10;
            super::super::tail_budget::configure_shard_cache(budget);
            let mut logs = Vec::new();
            let mut roots = Vec::new();
            for index in 0..10 {
                let root = tempfile::tempdir().unwrap();
                let dir = root.path().join(format!("orders-{index}"));
                let log = Log::create(&dir, small_config(1 << 20), Uuid::new_v4())
                    .await
                    .unwrap();
                let stored = append_batches(&log, 400).await;
                log.flush(false).await.unwrap();
                roots.push(root);
                logs.push((log, stored));
            }
            let (bytes, header) = batch(3, 5000);
            logs[0]
                .0
                .append(bytes.clone(), &header, 0, 0)
                .await
                .unwrap();
            let total = super::super::tail_budget::shard_cached_bytes();
            let held: usize = logs.iter().map(|(log, _)| log.stats().cached_bytes).sum();
            assert_eq!(total, held, "the budget counts what the logs hold");
            assert!(
                total <= budget + bytes.len(),
                "{total} bytes held for a {budget}-byte budget"
            );
            for (log, stored) in &logs[1..] {
                let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
                assert_eq!(joined(&all), stored.concat());
            }
            for (log, _) in &logs {
                log.close().await.unwrap();
            }
            drop(logs);
            assert_eq!(super::super::tail_budget::shard_cached_bytes(), 0);
        });
    }

    /// Goal: what goes in comes out, byte for byte, across several segments,
    /// both from the in-memory tail and from the files. Method: tiny
    /// segments, a read of everything with and without a tail cache, then
    /// the segment files compared with the expected stamped batches.
    #[test]
    fn append_and_read_round_trip_across_segments() {
        run_on_executor(|| async {
            for cache_bytes in [0, 1 << 20] {
                let (_root, dir) = temporary_log_dir();
                let log = Log::create(&dir, small_config(cache_bytes), Uuid::new_v4())
                    .await
                    .unwrap();
                let stored = append_batches(&log, 40).await;
                assert_eq!(log.log_end_offset(), 120);
                assert!(log.stats().segment_count > 3);
                assert_eq!(log.flush(false).await.unwrap(), 120);
                let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
                assert_eq!(joined(&all), stored.concat());
                log.close().await.unwrap();
                let (segment_count, on_disk) = segment_files_concatenated(&dir);
                assert_eq!(segment_count, log.stats().segment_count);
                assert_eq!(
                    on_disk,
                    stored.concat(),
                    "segment files hold exactly the batches"
                );
                let again = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
                assert_eq!(joined(&again), stored.concat(), "reads work after close");
            }
        });
    }

    /// Goal: appended batches reach the disk without anybody asking (no
    /// flush, no waiter), also when the writer skipped the partial block
    /// because writes were in flight. Method: appends in bursts, then wait
    /// until nothing is pending and every byte was handed to a write.
    #[test]
    fn appends_are_written_without_anybody_asking() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(1 << 20), Uuid::new_v4())
                .await
                .unwrap();
            for burst in 0..5 {
                append_batches(&log, 1 + burst * 7).await;
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while log.stats().pending_bytes > 0 {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "burst {burst}: {} bytes still unwritten 10 s after the appends",
                        log.stats().pending_bytes
                    );
                    glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
                }
            }
            log.close().await.unwrap();
        });
    }

    /// Goal: a batch handed over whole is stamped in place (one piece in the
    /// tail, no header copy), and a batch somebody else still holds is
    /// never written to (its header is copied and stamped). Method: append
    /// one batch of each kind with a new leader epoch; the held one must be
    /// unchanged, and the tail and the file must both hold the two stamped
    /// batches, the first as one piece and the second as two.
    #[test]
    fn batches_are_stamped_in_place_only_when_nobody_else_holds_them() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(1 << 20), Uuid::new_v4())
                .await
                .unwrap();
            let (handed_over, header) = batch(3, 1000);
            let expected_first = stamped(&handed_over, 0, 7);
            log.append(handed_over, &header, 7, 0).await.unwrap();
            let (held, header) = batch(3, 1010);
            let before = held.to_vec();
            let info = log.append(held.clone(), &header, 7, 0).await.unwrap();
            assert_eq!(info.base_offset, 3);
            assert_eq!(held.to_vec(), before, "a held batch must not change");
            let mut expected = expected_first;
            expected.extend(stamped(&held, 3, 7));

            let from_tail = log.read(0, i64::MAX, 1 << 20, true).await.unwrap();
            assert_eq!(from_tail.batches.len(), 3, "one piece, then two");
            assert_eq!(joined(&from_tail), expected);
            log.close().await.unwrap();
            assert!(
                segment_files_concatenated(&dir).1 == expected,
                "file differs"
            );
        });
    }

    /// A batch of one record whose value is `value_bytes` of `fill`.
    fn sized_batch(value_bytes: usize, fill: u8) -> (Bytes, BatchHeader) {
        let value = vec![fill; value_bytes];
        let bytes = crate::protocol::record_batch::build_batch(
            &[crate::protocol::record_batch::NewRecord {
                key: None,
                value: Some(&value),
            }],
            1000,
        );
        let header = validate_batch(&bytes).unwrap();
        (Bytes::from(bytes), header)
    }

    /// `batch` received into a slot of `log`, as the produce path does.
    fn into_slot(log: &Log, batch: &Bytes) -> Bytes {
        let mut slot = log.direct_slot(batch.len()).expect("a slot");
        slot.records_mut().copy_from_slice(batch);
        slot.freeze()
    }

    /// Takes slots for two batches with values of `values` bytes before
    /// either is appended (pipelined requests), appends them in that order
    /// or `swapped`, and waits until they are synced. Returns the bytes the
    /// log must now hold after what it held, the bytes written in place
    /// meanwhile, and the two batches' lengths.
    async fn append_two_slots(
        log: &Log,
        values: [usize; 2],
        swapped: bool,
    ) -> (Vec<u8>, u64, [usize; 2]) {
        let batches = values.map(|value| sized_batch(value, value as u8));
        let mut slots: Vec<_> = batches
            .iter()
            .map(|(bytes, header)| (bytes.clone(), into_slot(log, bytes), *header))
            .collect();
        if swapped {
            slots.reverse();
        }
        let before = direct::append_bytes_in_place();
        let mut stored = Vec::new();
        for (bytes, records, header) in slots {
            let info = log.append(records, &header, 3, 0).await.unwrap();
            stored.extend(stamped(&bytes, info.base_offset, 3));
        }
        log.flush(true).await.unwrap();
        let lens = [batches[0].0.len(), batches[1].0.len()];
        (stored, direct::append_bytes_in_place() - before, lens)
    }

    /// Goal: appends to a new segment are written while the rolled
    /// segment's fdatasync still runs (it can take a second on a disk that
    /// caches writes), and a synced flush still waits for the rolled segment
    /// to be durable. Method: delay that fdatasync by 500 ms; check what the
    /// writer did meanwhile; then everything reads back after a reopen.
    #[test]
    fn appends_after_a_roll_do_not_wait_for_the_rolled_segments_sync() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(1 << 20), Uuid::new_v4())
                .await
                .unwrap();
            let mut stored = append_batches(&log, 1).await;
            log.flush(true).await.unwrap();
            ROLL_SYNC_DELAY_FOR_TESTS.with(|delay| delay.set(Duration::from_millis(500)));
            let started = std::time::Instant::now();
            // Past 600 bytes: the log rolls once.
            while log.stats().segment_count < 2 {
                stored.extend(append_batches(&log, 1).await);
            }
            stored.extend(append_batches(&log, 1).await);
            let end = log.log_end_offset();
            assert_eq!(log.flush(false).await.unwrap(), end);
            let written_after = started.elapsed();
            let first_complete = log.shared.state.borrow().segments[0].files_complete;
            assert!(
                written_after < Duration::from_millis(400) && !first_complete,
                "the new segment's writes waited {written_after:?} for the rolled one"
            );
            assert_eq!(log.flush(true).await.unwrap(), end);
            assert!(
                started.elapsed() >= Duration::from_millis(500),
                "synced before the rolled segment"
            );
            assert!(log.shared.state.borrow().segments[0].files_complete);
            ROLL_SYNC_DELAY_FOR_TESTS.with(|delay| delay.set(Duration::ZERO));
            log.close().await.unwrap();
            drop(log);
            let (segments, bytes) = segment_files_concatenated(&dir);
            assert_eq!(segments, 2);
            assert_eq!(bytes, stored.concat());
            let log = Log::open(&dir, small_config(1 << 20), true).await.unwrap();
            assert_eq!(log.log_end_offset(), end);
            log.close().await.unwrap();
        });
    }

    /// Goal: a start DeleteRecords set inside a batch is the log start at
    /// once and after a reopen; an offset at or below it changes nothing;
    /// a checkpoint past the recovered log end (a segment damaged after
    /// the start was written) is cut to the end and rewritten, so records
    /// appended from there are not hidden by the old start at the next
    /// reopen.
    #[test]
    fn the_start_deleterecords_sets_survives_reopens_and_never_passes_the_end() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(1 << 20), Uuid::new_v4())
                .await
                .unwrap();
            append_batches(&log, 4).await;
            assert_eq!(log.advance_start(4).await.unwrap(), 4);
            assert_eq!(log.advance_start(2).await.unwrap(), 4);
            assert!(matches!(
                log.read(3, i64::MAX, 1 << 20, true).await,
                Err(StorageError::OffsetOutOfRange { .. })
            ));
            let read = log.read(4, i64::MAX, 1 << 20, true).await.unwrap();
            assert_eq!(whole_batches(read)[0].0.base_offset, 3);
            log.close().await.unwrap();
            drop(log);

            let log = Log::open(&dir, small_config(1 << 20), true).await.unwrap();
            assert_eq!((log.log_start_offset(), log.log_end_offset()), (4, 12));
            log.close().await.unwrap();
            drop(log);

            // A start past the end, as a damaged segment would leave it.
            write_offset_checkpoint(&dir, LOG_START_OFFSET_CHECKPOINT_FILE, 50)
                .await
                .unwrap();
            let log = Log::open(&dir, small_config(1 << 20), true).await.unwrap();
            assert_eq!((log.log_start_offset(), log.log_end_offset()), (12, 12));
            append_batches(&log, 2).await;
            log.close().await.unwrap();
            drop(log);
            let log = Log::open(&dir, small_config(1 << 20), true).await.unwrap();
            assert_eq!((log.log_start_offset(), log.log_end_offset()), (12, 18));
            log.close().await.unwrap();
        });
    }

    /// Goal: the tail's limits count the memory a batch received into a
    /// slot keeps alive (its allocation, rounded up to 64 KiB), not just its
    /// bytes, so `--partition-cache-bytes` and `--shard-cache-bytes` bound
    /// memory.
    #[test]
    fn the_tail_counts_the_whole_allocation_a_direct_batch_holds() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let config = LogConfig {
                cache_bytes: 1 << 20,
                ..LogConfig::default()
            };
            let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
            // Just over 64 KiB: its slot is a 128 KiB allocation.
            let (bytes, header) = sized_batch(66 << 10, 7);
            let slot = into_slot(&log, &bytes);
            log.append(slot, &header, 0, 0).await.unwrap();
            assert_eq!(log.stats().cached_bytes, 128 << 10);
            // An ordinary batch counts its bytes.
            let (plain, header) = sized_batch(1000, 8);
            log.append(plain.clone(), &header, 0, 0).await.unwrap();
            assert_eq!(log.stats().cached_bytes, (128 << 10) + plain.len());
            log.flush(false).await.unwrap();
            log.close().await.unwrap();
        });
    }

    /// Goal: records received into direct memory are written from it, and
    /// the log (tail, files, reopened files) holds exactly the stamped
    /// batches whatever the order of slots, appends, refusals and flushes.
    /// Method: mix ordinary and direct appends at unaligned and aligned
    /// places, slots appended in and out of order, a slot dropped, a
    /// synced flush in between; count the bytes written in place and by
    /// copy, compare tail, files and a reopened log with the model.
    #[test]
    fn records_in_direct_memory_are_written_from_it_in_any_order() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let config = LogConfig {
                write_buffer_bytes: 16 << 10,
                write_behind: 2,
                preallocate_bytes: 64 << 10,
                ..LogConfig::default()
            };
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let mut expected = Vec::new();
            let mut next_offset = 0;
            let append = |bytes: Bytes, header: BatchHeader| {
                let log = &log;
                async move { log.append(bytes, &header, 3, 0).await.unwrap() }
            };
            let counts = || {
                (
                    direct::append_bytes_in_place(),
                    direct::append_bytes_copied(),
                )
            };
            let in_place_of = |position: usize, len: usize| {
                let head = position % direct::DIRECT_ALIGNMENT;
                let end = head + len;
                end / direct::DIRECT_ALIGNMENT * direct::DIRECT_ALIGNMENT - head
            };
            let mut position = 0usize;
            let start = counts();
            let mut want_in_place = 0;

            // Ordinary batches and direct ones behind them, unaligned, with
            // and without the ordinary one written before.
            for (value_bytes, direct, flush) in [
                (100, false, true),
                (40_000, true, true),
                (9_000, false, false),
                (9_000, true, true),
            ] {
                let (bytes, header) = sized_batch(value_bytes, value_bytes as u8);
                let records = if direct {
                    into_slot(&log, &bytes)
                } else {
                    bytes.clone()
                };
                let info = append(records, header).await;
                assert_eq!(info.base_offset, next_offset);
                next_offset += 1;
                expected.extend(stamped(&bytes, info.base_offset, 3));
                if direct {
                    want_in_place += in_place_of(position, bytes.len()) as u64;
                }
                position += bytes.len();
                if flush {
                    log.flush(false).await.unwrap();
                    let (in_place, copied) = counts();
                    assert_eq!(in_place - start.0, want_in_place, "batch of {value_bytes}");
                    assert_eq!((in_place + copied) - (start.0 + start.1), position as u64);
                }
            }

            // Two slots taken before either is appended (pipelined
            // requests), appended in order: both in place.
            let (stored, in_place, [a, b]) = append_two_slots(&log, [20_000, 30_000], false).await;
            expected.extend(stored);
            next_offset += 2;
            let want = in_place_of(position, a) + in_place_of(position + a, b);
            assert_eq!(in_place, want as u64);
            position += a + b;

            // Two slots appended in the other order: neither lands where
            // predicted, both are copied.
            let (stored, in_place, [c, d]) = append_two_slots(&log, [12_000, 15_000], true).await;
            expected.extend(stored);
            next_offset += 2;
            assert_eq!(in_place, 0, "mispredicted slots are copied");
            position += c + d;

            // A slot dropped unappended (a refused request): the next one
            // is predicted at the end again and lands in place.
            let (e, _) = sized_batch(50_000, 5);
            drop(into_slot(&log, &e));
            let (f, f_header) = sized_batch(33_000, 6);
            let before = counts();
            let info = append(into_slot(&log, &f), f_header).await;
            expected.extend(stamped(&f, info.base_offset, 3));
            next_offset += 1;
            log.flush(false).await.unwrap();
            assert_eq!(counts().0 - before.0, in_place_of(position, f.len()) as u64);

            let from_tail = log.read(0, i64::MAX, 1 << 24, true).await.unwrap();
            assert!(joined(&from_tail) == expected, "tail differs");
            assert_eq!(log.log_end_offset(), next_offset);
            log.close().await.unwrap();
            assert!(
                segment_files_concatenated(&dir).1 == expected,
                "file differs"
            );
            let reopened = Log::open(&dir, config, true).await.unwrap();
            let from_file = reopened.read(0, i64::MAX, 1 << 24, true).await.unwrap();
            assert!(joined(&from_file) == expected, "reopened log differs");
            reopened.close().await.unwrap();
        });
    }

    /// Goal: a fetch offset inside a batch returns that whole batch, from
    /// memory and from files. Method: read one batch at every offset.
    #[test]
    fn read_inside_a_batch_returns_the_whole_batch() {
        run_on_executor(|| async {
            for cache_bytes in [0, 1 << 20] {
                let (_root, dir) = temporary_log_dir();
                let log = Log::create(&dir, small_config(cache_bytes), Uuid::new_v4())
                    .await
                    .unwrap();
                let stored = append_batches(&log, 20).await;
                log.flush(false).await.unwrap();
                for offset in 0..60i64 {
                    let result = log.read(offset, i64::MAX, 1, true).await.unwrap();
                    assert_eq!(
                        joined(&result),
                        stored[offset as usize / 3],
                        "offset {offset}"
                    );
                }
            }
        });
    }

    /// Goal: the upper offset bound, the byte budget and min_one_batch behave
    /// as documented. Method: reads with each limit, from memory and files.
    #[test]
    fn read_respects_max_offset_and_max_bytes() {
        run_on_executor(|| async {
            for cache_bytes in [0, 1 << 20] {
                let (_root, dir) = temporary_log_dir();
                let log = Log::create(&dir, small_config(cache_bytes), Uuid::new_v4())
                    .await
                    .unwrap();
                let stored = append_batches(&log, 20).await;
                log.flush(false).await.unwrap();
                let batch_bytes = stored[0].len();

                let result = log.read(0, 9, usize::MAX, true).await.unwrap();
                assert_eq!(
                    joined(&result),
                    stored[..3].concat(),
                    "bases 0, 3, 6 are below 9"
                );
                let result = log.read(0, 10, usize::MAX, true).await.unwrap();
                assert_eq!(joined(&result), stored[..4].concat(), "base 9 is below 10");
                let result = log
                    .read(0, i64::MAX, 2 * batch_bytes + 1, true)
                    .await
                    .unwrap();
                assert_eq!(joined(&result), stored[..2].concat());
                let result = log.read(0, i64::MAX, 10, true).await.unwrap();
                assert_eq!(
                    joined(&result),
                    stored[0],
                    "min_one_batch returns one whole batch"
                );
                let result = log.read(0, i64::MAX, 10, false).await.unwrap();
                assert!(result.batches.is_empty());
                let result = log.read(60, i64::MAX, usize::MAX, true).await.unwrap();
                assert!(
                    result.batches.is_empty(),
                    "reading at the log end returns nothing"
                );
                let result = log.read(30, 30, usize::MAX, true).await.unwrap();
                assert!(
                    result.batches.is_empty(),
                    "at the bound nothing is returned"
                );
                assert!(matches!(
                    log.read(61, i64::MAX, usize::MAX, true).await,
                    Err(StorageError::OffsetOutOfRange { offset: 61, .. })
                ));
            }
        });
    }

    /// Goal: flush(true) makes everything durable without a close. Method:
    /// sync, drop the log as a crash would, reopen with clean=false and
    /// check contents and the next offset.
    #[test]
    fn synced_flush_then_unclean_reopen_keeps_everything() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let config = small_config(1 << 20);
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let mut stored = append_batches(&log, 25).await;
            assert_eq!(log.flush(true).await.unwrap(), 75);
            log.crash_for_tests().await;

            let log = Log::open(&dir, config, false).await.unwrap();
            assert_eq!(log.log_start_offset(), 0);
            assert_eq!(log.log_end_offset(), 75);
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            assert_eq!(joined(&all), stored.concat());
            stored.extend(append_batches(&log, 3).await);
            assert_eq!(log.log_end_offset(), 84);
            log.close().await.unwrap();
            assert_eq!(segment_files_concatenated(&dir).1, stored.concat());
        });
    }

    /// Goal: data flushed a little at a time (acks=all requests, or acks=1
    /// with --acks-wait-for-write) reaches the disk once: each whole block
    /// is written once, and only each write's partial last block is written
    /// again by the next write. (Flushing from a copy while the buffer went
    /// on filling wrote every flushed byte a second time when the buffer
    /// filled.) Method: a 64 KiB write buffer, batches each followed by
    /// flush(false) until the buffer has filled several times; the bytes
    /// handed to writes may exceed the data by at most a block per write;
    /// after a crash and an unclean reopen every batch reads back.
    #[test]
    fn flushed_data_reaches_the_disk_once_but_for_partial_blocks() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let buffer_bytes = 64 << 10;
            let config = LogConfig {
                segment_bytes: 64 << 20,
                write_buffer_bytes: buffer_bytes,
                write_buffer_bytes_max: buffer_bytes,
                preallocate_bytes: 0,
                ..small_config(0)
            };
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let before = log.stats();
            let mut stored = Vec::new();
            let mut data = 0;
            while data < 4 * buffer_bytes {
                let (bytes, header) = batch(1000, 1000 + stored.len() as i64);
                let info = log.append(bytes.clone(), &header, 0, 0).await.unwrap();
                stored.push(stamped(&bytes, info.base_offset, 0));
                data += bytes.len();
                log.flush(false).await.unwrap();
            }
            let after = log.stats();
            let writes = (after.write_count - before.write_count) as usize;
            let written = (after.write_bytes - before.write_bytes) as usize;
            assert!(writes >= stored.len(), "one write per flush at least");
            assert!(
                written >= data && written <= data + writes * 4096,
                "{written} bytes handed to {writes} writes for {data} bytes of data"
            );
            log.crash_for_tests().await;
            let log = Log::open(&dir, config, false).await.unwrap();
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            assert_eq!(joined(&all), stored.concat());
            log.close().await.unwrap();
        });
    }

    /// Goal: data nobody waits for (acks=1) is written in fuller writes:
    /// it stays in the write buffer until the write delay passes, then goes
    /// out in one write without any further append to wake the writer;
    /// data somebody waits for, and full buffers, are written at once.
    /// Method: a 300 ms delay, five small appends: nothing written 50 ms
    /// later, everything in one write after 300 ms and within 5 s; then an
    /// append with flush(false) is written at once; then 2.5 buffers'
    /// worth go out as two full buffers without waiting; after a crash and
    /// an unclean reopen every acknowledged-and-written batch reads back.
    #[test]
    fn unwaited_appends_are_written_when_the_write_delay_passes() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let buffer_bytes = 64 << 10;
            let delay = std::time::Duration::from_millis(300);
            let config = LogConfig {
                segment_bytes: 64 << 20,
                write_buffer_bytes: buffer_bytes,
                write_buffer_bytes_max: buffer_bytes,
                write_delay_us: delay.as_micros() as u64,
                preallocate_bytes: 0,
                ..small_config(0)
            };
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let before = log.stats();
            let started = Instant::now();
            let mut stored = append_batches(&log, 5).await;
            glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
            let held = log.stats();
            assert_eq!(
                held.write_count, before.write_count,
                "written before the delay"
            );
            assert_eq!(
                held.pending_bytes,
                stored.iter().map(Vec::len).sum::<usize>()
            );
            while log.stats().pending_bytes > 0 {
                assert!(
                    started.elapsed() < std::time::Duration::from_secs(5),
                    "the delayed data was never written"
                );
                glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
            }
            assert!(
                started.elapsed() >= delay,
                "written after {:?}",
                started.elapsed()
            );
            assert_eq!(log.stats().write_count, before.write_count + 1, "one write");

            let waited_from = Instant::now();
            stored.extend(append_batches(&log, 1).await);
            log.flush(false).await.unwrap();
            assert_eq!(log.stats().pending_bytes, 0);
            assert!(
                waited_from.elapsed() < delay,
                "a waited-for write was delayed"
            );

            let writes_before_full = log.stats().write_count;
            let mut data = 0;
            while data < buffer_bytes * 5 / 2 {
                let (bytes, header) = batch(1000, 1000 + stored.len() as i64);
                let info = log.append(bytes.clone(), &header, 0, 0).await.unwrap();
                stored.push(stamped(&bytes, info.base_offset, 0));
                data += bytes.len();
            }
            glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
            let full = log.stats();
            assert_eq!(
                full.write_count,
                writes_before_full + 2,
                "the two full buffers"
            );
            assert!(full.pending_bytes > 0 && full.pending_bytes < buffer_bytes);
            // Written (pending_bytes counts what no completed write holds):
            // everything but the last partial buffer, which a crash loses.
            let all_bytes = stored.concat();
            let written_bytes = all_bytes.len() - full.pending_bytes;
            let longest = stored.iter().map(Vec::len).max().unwrap();
            log.crash_for_tests().await;

            let log = Log::open(&dir, config, false).await.unwrap();
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            let back = joined(&all);
            assert!(back.len() <= written_bytes && back.len() + longest > written_bytes);
            assert_eq!(back, all_bytes[..back.len()]);
            log.close().await.unwrap();
        });
    }

    /// Goal: a log whose write buffers fill writes larger ones (fewer
    /// appending writes), up to the maximum, and starts again from the base
    /// size after a buffer written before it filled. Method: base 64 KiB,
    /// maximum 256 KiB, nobody waiting (1 s write delay), the writer
    /// running after each append (a short sleep); append until four
    /// buffers were written: 64, 128, 256 and 256 KiB; flush(false) with
    /// more than a block pending, then append until the next write: 64 KiB;
    /// close and compare the file with the batches.
    #[test]
    fn filling_write_buffers_grow_to_the_maximum_and_back_after_a_flush() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let config = LogConfig {
                segment_bytes: 64 << 20,
                index_interval_bytes: 4096,
                segment_index_bytes: 1 << 20,
                write_buffer_bytes: 64 << 10,
                write_buffer_bytes_max: 256 << 10,
                write_delay_us: 1_000_000,
                // The writer never waits for a write slot, so it takes each
                // batch before the next append (see the yield below).
                write_behind: 8,
                preallocate_bytes: 0,
                ..small_config(0)
            };
            let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
            /// Batches appended, sizes of the writes they caused.
            struct Tracked {
                stored: Vec<Vec<u8>>,
                sizes: Vec<u64>,
                last: LogStats,
                since_write: usize,
            }
            async fn append_one(log: &Log, t: &mut Tracked) {
                let (bytes, header) = batch(100, 1000 + t.stored.len() as i64);
                let info = log.append(bytes.clone(), &header, 0, 0).await.unwrap();
                t.stored.push(stamped(&bytes, info.base_offset, 0));
                // Lets the executor run the writer and reap I/O.
                glommio::timer::sleep(Duration::from_micros(50)).await;
                let now = log.stats();
                if now.write_count > t.last.write_count {
                    assert_eq!(
                        now.write_count,
                        t.last.write_count + 1,
                        "sizes so far {:?}, bytes {}",
                        t.sizes,
                        now.write_bytes - t.last.write_bytes
                    );
                    t.sizes.push(now.write_bytes - t.last.write_bytes);
                    t.since_write = 0;
                } else {
                    t.since_write += bytes.len();
                }
                t.last = now;
            }
            let mut t = Tracked {
                stored: Vec::new(),
                sizes: Vec::new(),
                last: log.stats(),
                since_write: 0,
            };
            while t.sizes.len() < 4 {
                append_one(&log, &mut t).await;
            }
            assert_eq!(t.sizes, [64 << 10, 128 << 10, 256 << 10, 256 << 10]);
            while t.since_write < 3 * 4096 {
                append_one(&log, &mut t).await;
            }
            log.flush(false).await.unwrap();
            let flushed = log.stats();
            assert_eq!(
                flushed.write_count,
                t.last.write_count + 1,
                "one partial write"
            );
            t.last = flushed;
            while t.sizes.len() < 5 {
                append_one(&log, &mut t).await;
            }
            assert_eq!(t.sizes[4], 64 << 10, "after the flush, a base-size buffer");
            let stored = t.stored;
            log.close().await.unwrap();
            assert_eq!(segment_files_concatenated(&dir).1, stored.concat());
        });
    }

    /// Goal: the zeros written ahead of the tail never show: a crash leaves
    /// them in the file and recovery cuts them off with every acknowledged
    /// batch kept; close cuts them too. Method: a 1 MiB segment with
    /// pre-allocation, append and sync, wait until the file is longer than
    /// the data, crash, reopen unclean, compare, append more, close, compare
    /// the files byte for byte.
    #[test]
    fn preallocated_zeros_are_cut_by_recovery_and_close() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let mut config = small_config(0);
            config.segment_bytes = 1 << 20;
            config.preallocate_bytes = 64 << 10;
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let mut stored = append_batches(&log, 40).await;
            log.flush(true).await.unwrap();
            let logical: usize = stored.iter().map(Vec::len).sum();
            let mut waited = 0;
            while segment_files_concatenated(&dir).1.len() <= logical {
                assert!(waited < 500, "no zero-fill reached the file");
                glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
                waited += 1;
            }
            assert!(log.stats().zero_fill_bytes > 0);
            let (_, on_disk) = segment_files_concatenated(&dir);
            assert!(on_disk[logical..].iter().all(|&byte| byte == 0));
            log.crash_for_tests().await;

            let log = Log::open(&dir, config.clone(), false).await.unwrap();
            assert_eq!(log.log_end_offset(), 120);
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            assert_eq!(joined(&all), stored.concat());
            stored.extend(append_batches(&log, 40).await);
            log.close().await.unwrap();
            assert_eq!(segment_files_concatenated(&dir).1, stored.concat());
        });
    }

    /// Goal: Kafka's `preallocate`: a new segment's file is `segment.bytes`
    /// long from its creation, cut to its data when it rolls or closes;
    /// after a crash recovery cuts the zeros without losing a batch; a
    /// reconfigure applies from the next segment. Method: 16 KiB segments
    /// of small batches, file lengths after create and after appends past
    /// several rolls (the active one's O_DIRECT blocks stay inside its
    /// length), a crash, an unclean reopen, appends without preallocation
    /// up to the next roll, a close.
    #[test]
    fn preallocated_segments_are_segment_bytes_long_until_cut() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let mut config = small_config(0);
            config.segment_bytes = 16 << 10;
            config.preallocate_bytes = 0;
            config.preallocate = true;
            let lengths = || -> Vec<u64> {
                let mut names: Vec<String> = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".log"))
                    .collect();
                names.sort();
                names
                    .iter()
                    .map(|name| std::fs::metadata(dir.join(name)).unwrap().len())
                    .collect()
            };
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            assert_eq!(lengths(), vec![16 << 10]);
            let mut stored = append_batches(&log, 400).await;
            log.flush(true).await.unwrap();
            let listed = lengths();
            assert!(listed.len() >= 3, "{listed:?}");
            assert_eq!(listed.last(), Some(&(16 << 10)), "the active segment");
            let closed = usize::try_from(listed[..listed.len() - 1].iter().sum::<u64>()).unwrap();
            let (_, on_disk) = segment_files_concatenated(&dir);
            assert_eq!(
                on_disk[..closed],
                stored.concat()[..closed],
                "rolled segments cut"
            );
            log.crash_for_tests().await;

            let log = Log::open(&dir, config.clone(), false).await.unwrap();
            assert_eq!(log.log_end_offset(), 1200);
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            assert_eq!(joined(&all), stored.concat());
            let mut settings = config.segment_settings();
            settings.preallocate = false;
            log.reconfigure(settings).unwrap();
            let segments = lengths().len();
            while lengths().len() == segments {
                stored.extend(append_batches(&log, 1).await);
                log.flush(true).await.unwrap();
            }
            let newest = *lengths().last().unwrap();
            assert!(newest <= 4096, "the next segment is {newest} bytes long");
            log.close().await.unwrap();
            assert_eq!(segment_files_concatenated(&dir).1, stored.concat());
        });
    }

    /// Goal: zero-fill ahead of the tail (`preallocate_bytes`) still fills
    /// a segment preallocated to its length (`preallocate`), from the data
    /// on. Method: both on, a few appends, wait for a fill.
    #[test]
    fn zero_fill_runs_inside_a_preallocated_segment() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let mut config = small_config(0);
            config.segment_bytes = 1 << 20;
            config.preallocate_bytes = 64 << 10;
            config.preallocate = true;
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let stored = append_batches(&log, 40).await;
            log.flush(true).await.unwrap();
            let mut waited = 0;
            while log.stats().zero_fill_bytes == 0 {
                assert!(waited < 500, "no zero-fill inside the preallocated segment");
                glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
                waited += 1;
            }
            log.close().await.unwrap();
            assert_eq!(segment_files_concatenated(&dir).1, stored.concat());
        });
    }

    /// Goal: close leaves exact files behind and a clean reopen trusts them.
    /// Method: close twice (idempotent), check appends fail after close,
    /// check sizes and indexes on disk, reopen with clean=true and continue.
    #[test]
    fn close_then_clean_reopen() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let config = small_config(0);
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let mut stored = append_batches(&log, 17).await;
            log.close().await.unwrap();
            log.close().await.unwrap();
            let (bytes, header) = batch(1, 1);
            assert!(matches!(
                log.append(bytes, &header, 0, 0).await,
                Err(StorageError::Closed { .. })
            ));
            assert!(matches!(
                log.flush(true).await,
                Err(StorageError::Closed { .. })
            ));
            for name in std::fs::read_dir(&dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
            {
                let name = name.to_string_lossy().into_owned();
                let length = std::fs::metadata(dir.join(&name)).unwrap().len();
                if name.ends_with(".index") {
                    assert_eq!(length % 8, 0, "{name}");
                } else if name.ends_with(".timeindex") {
                    assert_eq!(length % 12, 0, "{name}");
                }
            }
            let segment_count = log.stats().segment_count;
            drop(log);

            let log = Log::open(&dir, config, true).await.unwrap();
            assert_eq!(log.log_end_offset(), 51);
            assert_eq!(log.stats().segment_count, segment_count);
            stored.extend(append_batches(&log, 5).await);
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            assert_eq!(joined(&all), stored.concat());
            log.close().await.unwrap();
            assert_eq!(segment_files_concatenated(&dir).1, stored.concat());
        });
    }

    /// Each (log, records, index) appends `batch(records, index)` and then
    /// waits for flush(true), all as concurrent tasks; each flush must cover
    /// its append.
    async fn append_and_sync_concurrently(callers: impl Iterator<Item = (Log, i32, i64)>) {
        let tasks: Vec<_> = callers
            .map(|(log, records, index)| {
                glommio::spawn_local(async move {
                    let (bytes, header) = batch(records, index);
                    let info = log.append(bytes, &header, 0, 0).await.unwrap();
                    let durable = log.flush(true).await.unwrap();
                    assert!(durable > info.last_offset);
                })
            })
            .collect();
        for task in tasks {
            task.await;
        }
    }

    #[test]
    fn writes_overlap_the_sync_by_default() {
        assert!(!WritesDuringSync::Auto.holds());
        assert!(WritesDuringSync::Hold.holds());
        assert!(!WritesDuringSync::Overlap.holds());
        // What each shard's serving line shows.
        assert_eq!(WritesDuringSync::Auto.resolve(), WritesDuringSync::Overlap);
        assert_eq!(WritesDuringSync::Hold.resolve(), WritesDuringSync::Hold);
        assert_eq!(
            WritesDuringSync::Overlap.resolve(),
            WritesDuringSync::Overlap
        );
        assert_eq!(
            LogConfig::default().writes_during_sync,
            WritesDuringSync::Auto
        );
    }

    /// Goal: with `WritesDuringSync::Hold`, data waited for while the log's
    /// sync runs stays in the write buffer until that sync ends, then goes
    /// out in one write with everything appended meanwhile and is covered
    /// by the next sync; with `Overlap` it is written while the sync runs.
    /// Method: fdatasync delayed by 300 ms; append and flush(true) a first
    /// batch in a task; once its sync runs, append two batches and flush
    /// each in a task; count writes 150 ms later (the sync still running);
    /// then every flush returns with its data durable, the file holds the
    /// batches.
    #[test]
    fn data_waited_for_during_a_sync_is_held_until_the_sync_ends() {
        for policy in [WritesDuringSync::Hold, WritesDuringSync::Overlap] {
            run_on_executor(move || async move {
                let (_root, dir) = temporary_log_dir();
                let config = LogConfig {
                    writes_during_sync: policy,
                    ..LogConfig::default()
                };
                let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
                super::super::appender::FDATASYNC_DELAY_FOR_TESTS
                    .with(|delay| delay.set(Duration::from_millis(300)));
                let mut stored = Vec::new();
                let mut tasks = Vec::new();
                let mut writes_before = 0;
                for index in 0..3 {
                    let (bytes, header) = batch(3, 1000 + index);
                    let info = log.append(bytes.clone(), &header, 0, 0).await.unwrap();
                    stored.push(stamped(&bytes, info.base_offset, 0));
                    let flushing = log.clone();
                    tasks.push(glommio::spawn_local(async move {
                        let durable = flushing.flush(true).await.unwrap();
                        assert!(durable > info.last_offset);
                    }));
                    if index == 0 {
                        // The first batch is written and its sync started.
                        while log.stats().fdatasync_count == 0 {
                            glommio::timer::sleep(Duration::from_millis(5)).await;
                        }
                        writes_before = log.stats().write_count;
                    }
                }
                glommio::timer::sleep(Duration::from_millis(150)).await;
                let writes_during = log.stats().write_count - writes_before;
                match policy {
                    WritesDuringSync::Hold => assert_eq!(writes_during, 0, "held"),
                    _ => assert!(writes_during >= 1, "written at once"),
                }
                for task in tasks {
                    task.await;
                }
                let stats = log.stats();
                if policy == WritesDuringSync::Hold {
                    assert_eq!(stats.write_count, writes_before + 1, "one write for both");
                    assert_eq!(
                        stats.fdatasync_count, 2,
                        "the first sync, then one for both"
                    );
                }
                super::super::appender::FDATASYNC_DELAY_FOR_TESTS
                    .with(|delay| delay.set(Duration::ZERO));
                log.close().await.unwrap();
                assert_eq!(segment_files_concatenated(&dir).1, stored.concat());
            });
        }
    }

    /// Goal: one fdatasync serves many concurrent flush(true) callers, and
    /// each caller's data is durable when its flush returns. Method: 40
    /// tasks each append then flush(true) concurrently; count fdatasyncs.
    #[test]
    fn group_commit_needs_fewer_syncs_than_callers() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let mut config = small_config(1 << 20);
            config.segment_bytes = 1 << 20;
            let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
            let syncs_before = log.stats().fdatasync_count;
            let callers = 40;
            append_and_sync_concurrently((0..callers).map(|index| (log.clone(), 2, index))).await;
            let syncs = log.stats().fdatasync_count - syncs_before;
            assert!(syncs >= 1);
            assert!(
                syncs < callers as u64,
                "{syncs} fdatasyncs for {callers} callers"
            );
            assert_eq!(log.flush(true).await.unwrap(), 80);
        });
    }

    /// Goal: with `--log-sync syncfs` the logs of a shard share their
    /// group commit: concurrent flush(true) callers on 8 logs are served by
    /// fewer syncfs calls than logs, and no log fdatasyncs for them.
    #[test]
    fn logs_of_a_shard_share_one_syncfs() {
        run_on_executor(|| async {
            let (root, _) = temporary_log_dir();
            crate::storage::configure_log_sync(crate::storage::LogSync::Syncfs, root.path())
                .unwrap();
            let mut logs = Vec::new();
            for index in 0..8 {
                let mut config = small_config(1 << 20);
                config.segment_bytes = 1 << 20;
                let dir = root.path().join(format!("orders-{index}"));
                logs.push(Log::create(&dir, config, Uuid::new_v4()).await.unwrap());
            }
            let before: Vec<_> = logs.iter().map(Log::stats).collect();
            let syncfs_before = crate::storage::shard_syncfs_count();
            append_and_sync_concurrently(
                logs.iter()
                    .enumerate()
                    .map(|(index, log)| (log.clone(), 3, index as i64)),
            )
            .await;
            let syncfs_calls = crate::storage::shard_syncfs_count() - syncfs_before;
            assert!(
                (1..8).contains(&syncfs_calls),
                "{syncfs_calls} syncfs calls for 8 logs"
            );
            for (log, before) in logs.iter().zip(&before) {
                let after = log.stats();
                assert_eq!(after.fdatasync_count, before.fdatasync_count);
                assert!(after.shard_sync_count > before.shard_sync_count);
            }
            crate::storage::configure_log_sync(crate::storage::LogSync::Fdatasync, root.path())
                .unwrap();
        });
    }

    /// Goal: back-pressure bounds unwritten bytes and keeps call order.
    /// Method: a pending limit of about two batches, 30 concurrent appends;
    /// offsets must follow the order the appends were called in.
    #[test]
    fn appends_wait_for_pending_bytes_in_call_order() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let mut config = small_config(0);
            config.pending_bytes_max = 200;
            config.segment_bytes = 1 << 20;
            let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
            let order = Rc::new(RefCell::new(Vec::new()));
            let tasks: Vec<_> = (0..30)
                .map(|index| {
                    let log = log.clone();
                    let order = order.clone();
                    glommio::spawn_local(async move {
                        let (bytes, header) = batch(3, index);
                        let info = log.append(bytes, &header, 0, 0).await.unwrap();
                        assert!(log.stats().pending_bytes <= 200 + header.total_bytes());
                        order.borrow_mut().push((index, info.base_offset));
                    })
                })
                .collect();
            for task in tasks {
                task.await;
            }
            let mut order = order.borrow().clone();
            order.sort();
            for (index, base_offset) in order {
                assert_eq!(base_offset, index * 3, "append {index} kept its place");
            }
            assert_eq!(log.flush(false).await.unwrap(), 90);
        });
    }

    /// Goal: ListOffsets by timestamp at the edges: before the first record,
    /// exactly on a record inside a (compressed) batch, between records,
    /// between batches and after the last; from memory, files and after a
    /// clean reopen. Method: batches whose records carry distinct timestamps.
    #[test]
    fn offset_for_timestamp_edges() {
        run_on_executor(|| async {
            for (cache_bytes, reopen) in [(1 << 20, false), (0, false), (0, true)] {
                let (_root, dir) = temporary_log_dir();
                let config = small_config(cache_bytes);
                let mut log = Log::create(&dir, config.clone(), Uuid::new_v4())
                    .await
                    .unwrap();
                // Batch i holds offsets 3i..3i+2 at 1000 + 100 i + {0, 10, 20}.
                for index in 0..20i64 {
                    let base = 1000 + 100 * index;
                    let compression = if index % 2 == 0 {
                        Compression::Gzip
                    } else {
                        Compression::None
                    };
                    let (bytes, header) =
                        batch_with_timestamps(&[base, base + 10, base + 20], compression);
                    log.append(bytes, &header, 0, 0).await.unwrap();
                }
                log.flush(false).await.unwrap();
                if reopen {
                    log.close().await.unwrap();
                    log = Log::open(&dir, config.clone(), true).await.unwrap();
                }
                assert_eq!(log.offset_for_timestamp(0).await.unwrap(), Some((0, 1000)));
                assert_eq!(
                    log.offset_for_timestamp(1000).await.unwrap(),
                    Some((0, 1000))
                );
                assert_eq!(
                    log.offset_for_timestamp(1110).await.unwrap(),
                    Some((4, 1110))
                );
                assert_eq!(
                    log.offset_for_timestamp(1115).await.unwrap(),
                    Some((5, 1120))
                );
                assert_eq!(
                    log.offset_for_timestamp(1150).await.unwrap(),
                    Some((6, 1200))
                );
                assert_eq!(
                    log.offset_for_timestamp(2410).await.unwrap(),
                    Some((43, 2410))
                );
                assert_eq!(
                    log.offset_for_timestamp(2920).await.unwrap(),
                    Some((59, 2920))
                );
                assert_eq!(log.offset_for_timestamp(2921).await.unwrap(), None);
            }
        });
    }

    /// Goal: MAX_TIMESTAMP answers with the record holding the largest
    /// timestamp, not its batch's last offset (KIP-734). Method: the maximum
    /// sits in the middle of a middle batch; also an empty log.
    #[test]
    fn max_timestamp_offset_finds_the_record() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(0), Uuid::new_v4())
                .await
                .unwrap();
            assert_eq!(log.max_timestamp_offset().await.unwrap(), None);
            for index in 0..12i64 {
                let timestamps = if index == 5 {
                    [5000, 9000, 7000]
                } else {
                    [index, index + 1, index + 2]
                };
                let (bytes, header) = batch_with_timestamps(&timestamps, Compression::Lz4);
                log.append(bytes, &header, 0, 0).await.unwrap();
            }
            log.flush(false).await.unwrap();
            assert_eq!(log.max_timestamp_offset().await.unwrap(), Some((16, 9000)));
        });
    }

    /// Goal: a segment rolls by age as Kafka does, measured from its first
    /// batch's timestamp. Method: segment_ms of one second and batches two
    /// seconds apart.
    #[test]
    fn segment_rolls_by_record_age() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let mut config = small_config(0);
            config.segment_ms = 1000;
            config.segment_bytes = 1 << 20;
            let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
            for timestamp in [10_000, 10_500, 12_000, 12_100] {
                let (bytes, header) = batch(1, timestamp);
                log.append(bytes, &header, 0, timestamp).await.unwrap();
            }
            assert_eq!(log.stats().segment_count, 2);
            log.close().await.unwrap();
            assert!(dir.join("00000000000000000002.log").exists());
        });
    }

    /// Goal: `segment.jitter.ms` makes segments roll up to that much sooner,
    /// each log drawing its own amount, as Kafka's `randomSegmentJitter`;
    /// without it every log rolls at `segment.ms`. Method: 32 logs with
    /// segment_ms 1000 get batches 600 ms apart (by timestamp): with a jitter
    /// below 1000 ms, some roll (those that drew more than 400) and some do
    /// not (all alike: about 1 chance in 10^7); without, none rolls.
    #[test]
    fn segments_roll_sooner_by_a_jitter_each_log_draws() {
        run_on_executor(|| async {
            let rolled = |jitter: u64| async move {
                let mut rolled = 0;
                for _ in 0..32 {
                    let (_root, dir) = temporary_log_dir();
                    let mut config = small_config(0);
                    config.segment_ms = 1000;
                    config.segment_jitter_ms = jitter;
                    config.segment_bytes = 1 << 20;
                    let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
                    for timestamp in [10_000, 10_600] {
                        let (bytes, header) = batch(1, timestamp);
                        log.append(bytes, &header, 0, timestamp).await.unwrap();
                    }
                    rolled += usize::from(log.stats().segment_count == 2);
                    log.close().await.unwrap();
                }
                rolled
            };
            let with_jitter = rolled(999).await;
            assert!(
                with_jitter > 0 && with_jitter < 32,
                "{with_jitter} of 32 logs rolled"
            );
            assert_eq!(rolled(0).await, 0);
        });
    }

    /// Goal: a segment's jitter stays below `segment.jitter.ms` and
    /// `segment.ms`, is 0 without jitter, and is fixed for the segment.
    #[test]
    fn roll_jitter_is_bounded_and_fixed_per_segment() {
        let settings = |segment_ms, segment_jitter_ms| SegmentSettings {
            segment_bytes: 1 << 20,
            segment_ms,
            segment_jitter_ms,
            index_interval_bytes: 4096,
            segment_index_bytes: 1 << 16,
            preallocate: false,
        };
        for seed in 0..200u64 {
            for base in [0i64, 1, 1 << 40] {
                assert!(roll_jitter_ms(seed, base, &settings(1000, 300)) < 300);
                assert!(roll_jitter_ms(seed, base, &settings(100, 300)) < 100);
                assert_eq!(roll_jitter_ms(seed, base, &settings(1000, 0)), 0);
                assert_eq!(
                    roll_jitter_ms(seed, base, &settings(1000, 300)),
                    roll_jitter_ms(seed, base, &settings(1000, 300))
                );
            }
        }
        let drawn: std::collections::HashSet<u64> = (0..100)
            .map(|seed| roll_jitter_ms(seed, 0, &settings(1000, 1000)))
            .collect();
        assert!(drawn.len() > 50, "{} distinct jitters of 100", drawn.len());
    }

    /// Goal: the metadata files follow Kafka's formats and the epoch
    /// checkpoint tracks new leader epochs across a reopen. Method: read
    /// the files after create, after appends in two epochs, and reopen.
    #[test]
    fn metadata_files_follow_kafka() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let topic_id = Uuid::from_u128(0x0123456789abcdef_fedcba9876543210);
            let config = small_config(0);
            let log = Log::create(&dir, config.clone(), topic_id).await.unwrap();
            let read_text = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
            assert_eq!(
                read_text("partition.metadata"),
                "version: 0\ntopic_id: ASNFZ4mrze_-3LqYdlQyEA\n"
            );
            assert_eq!(read_text("leader-epoch-checkpoint"), "0\n0\n");
            let (bytes, header) = batch(2, 5);
            log.append(bytes.clone(), &header, 0, 0).await.unwrap();
            log.append(bytes.clone(), &header, 3, 0).await.unwrap();
            log.append(bytes, &header, 3, 0).await.unwrap();
            log.flush(false).await.unwrap();
            assert_eq!(read_text("leader-epoch-checkpoint"), "0\n2\n0 0\n3 2\n");
            let stored = log.read(2, i64::MAX, 1, true).await.unwrap();
            assert_eq!(
                validate_batch(&joined(&stored))
                    .unwrap()
                    .partition_leader_epoch,
                3
            );
            log.close().await.unwrap();
            drop(log);
            let log = Log::open(&dir, config, true).await.unwrap();
            assert_eq!(log.topic_id(), Some(topic_id));
            assert_eq!(
                log.leader_epoch_entries(),
                vec![
                    EpochEntry {
                        epoch: 0,
                        start_offset: 0
                    },
                    EpochEntry {
                        epoch: 3,
                        start_offset: 2
                    }
                ]
            );
            assert!(matches!(
                Log::create(&dir, LogConfig::default(), topic_id).await,
                Err(StorageError::AlreadyExists { .. })
            ));
        });
    }

    /// Goal: delete renames the directory Kafka's way, with every file, and
    /// the removal takes it all. Method: delete a log with data, look at
    /// the parent directory, then remove the renamed one.
    #[test]
    fn delete_renames_the_directory_for_removal() {
        run_on_executor(|| async {
            let (root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(0), Uuid::new_v4())
                .await
                .unwrap();
            append_batches(&log, 10).await;
            let renamed = log.delete().await.unwrap();
            assert!(!dir.exists());
            let name = renamed.file_name().unwrap().to_str().unwrap().to_string();
            let prefix = format!("{}.", dir.file_name().unwrap().to_str().unwrap());
            assert!(
                name.starts_with(&prefix) && name.ends_with("-delete"),
                "{name}"
            );
            assert_eq!(name.len(), prefix.len() + 32 + "-delete".len(), "{name}");
            assert!(renamed.join("partition.metadata").exists());
            assert!(renamed.join("00000000000000000000.log").exists());
            super::super::remove_deleted_log_dir(renamed).await.unwrap();
            assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
        });
    }

    /// Goal: a directory opened as another topic's log is refused before
    /// recovery changes anything in it, and opens as its own topic's.
    /// Method: open a crashed log's directory expecting another topic id,
    /// and with its `partition.metadata` removed; compare the files.
    #[test]
    fn a_log_of_another_topic_is_refused_untouched() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let topic_id = Uuid::new_v4();
            let log = Log::create(&dir, small_config(0), topic_id).await.unwrap();
            append_batches(&log, 10).await;
            assert_eq!(log.flush(true).await.unwrap(), 30);
            log.crash_for_tests().await;
            let listing = || {
                let mut files: Vec<(String, u64)> = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|entry| {
                        let entry = entry.unwrap();
                        let name = entry.file_name().into_string().unwrap();
                        (name, entry.metadata().unwrap().len())
                    })
                    .collect();
                files.sort();
                files
            };
            let before = listing();
            let other = Uuid::new_v4();
            let refused =
                Log::open_replaying(&dir, small_config(0), false, None, Some(other)).await;
            match refused {
                Err(StorageError::ForeignLogDir { reason, .. }) => {
                    assert!(reason.contains(&other.to_string()), "{reason}")
                }
                other => panic!("expected ForeignLogDir, got {:?}", other.map(|_| ())),
            }
            assert_eq!(listing(), before);
            std::fs::rename(dir.join("partition.metadata"), dir.join("kept")).unwrap();
            let refused =
                Log::open_replaying(&dir, small_config(0), false, None, Some(topic_id)).await;
            assert!(
                matches!(&refused, Err(StorageError::ForeignLogDir { reason, .. }) if reason == "no partition.metadata"),
                "{:?}",
                refused.map(|_| ())
            );
            std::fs::rename(dir.join("kept"), dir.join("partition.metadata")).unwrap();
            let (log, _) = Log::open_replaying(&dir, small_config(0), false, None, Some(topic_id))
                .await
                .unwrap();
            assert_eq!(log.log_end_offset(), 30);
            log.close().await.unwrap();
        });
    }

    /// Goal: no sequence of appends, flushes, reads, crashes and clean
    /// restarts loses or mangles a synced batch, and appends always resume at
    /// the right offset and byte position. Method: a seeded random walk over
    /// those operations with tiny segments and write buffers, checked
    /// against a model of the stored batches after every read.
    #[test]
    fn random_operations_match_a_model() {
        // RINGBROKER_STORAGE_SEEDS=N sweeps N seeds instead of the fixed three.
        let seeds: Vec<u64> = match std::env::var("RINGBROKER_STORAGE_SEEDS") {
            Ok(count) => (1..=count.parse::<u64>().unwrap()).collect(),
            Err(_) => vec![1, 2, 3],
        };
        for seed in seeds {
            random_walk(seed);
        }
    }

    fn random_walk(seed: u64) {
        eprintln!("random walk seed {seed}");
        run_on_executor(|| async move {
            let (_root, dir) = temporary_log_dir();
            let cache_bytes = if seed % 2 == 0 { 5000 } else { 0 };
            let mut seed: u64 = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next_random = move |bound: u64| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % bound
            };
            let mut config = small_config(cache_bytes);
            // Segments of about three write buffers, so full-buffer writes,
            // partial-block rewrites and rolls all happen.
            config.segment_bytes = 12_000;
            config.index_interval_bytes = 300;
            let mut log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let mut stored: Vec<(i64, Vec<u8>)> = Vec::new();
            let mut synced_batches = 0;
            for step in 0..400 {
                match next_random(20) {
                    0..=10 => {
                        let (bytes, header) = batch(1 + next_random(40) as i32, step);
                        let info = log.append(bytes.clone(), &header, 0, 0).await.unwrap();
                        let expected_base = stored.last().map_or(0, |(base, bytes)| {
                            base + i64::from(validate_batch(bytes).unwrap().last_offset_delta) + 1
                        });
                        assert_eq!(info.base_offset, expected_base, "step {step}");
                        stored.push((info.base_offset, stamped(&bytes, info.base_offset, 0)));
                    }
                    11 => {
                        log.flush(false).await.unwrap();
                    }
                    12 => {
                        log.flush(true).await.unwrap();
                        synced_batches = stored.len();
                    }
                    13..=16 if !stored.is_empty() => {
                        let first = next_random(stored.len() as u64) as usize;
                        let (base, bytes) = &stored[first];
                        let offset = base
                            + next_random(3)
                                .min(validate_batch(bytes).unwrap().last_offset_delta as u64)
                                as i64;
                        let max_bytes = next_random(2000) as usize;
                        let result = log.read(offset, i64::MAX, max_bytes, true).await.unwrap();
                        let mut expected = stored[first].1.clone();
                        for (_, more) in &stored[first + 1..] {
                            if expected.len() + more.len() > max_bytes {
                                break;
                            }
                            expected.extend_from_slice(more);
                        }
                        assert_eq!(
                            joined(&result),
                            expected,
                            "step {step} offset {offset} max {max_bytes}"
                        );
                    }
                    17 => {
                        // Crash: whatever was synced must survive.
                        log.flush(true).await.unwrap();
                        log.crash_for_tests().await;
                        log = Log::open(&dir, config.clone(), false).await.unwrap();
                        synced_batches = stored.len();
                    }
                    18 => {
                        log.close().await.unwrap();
                        drop(log);
                        log = Log::open(&dir, config.clone(), true).await.unwrap();
                        synced_batches = stored.len();
                    }
                    _ => {
                        // Crash without a sync: the unsynced tail may or may not survive.
                        log.crash_for_tests().await;
                        log = Log::open(&dir, config.clone(), false).await.unwrap();
                        let log_end_offset = log.log_end_offset();
                        stored.retain(|(base, _)| *base < log_end_offset);
                        assert!(
                            stored.len() >= synced_batches,
                            "step {step}: synced data lost"
                        );
                        synced_batches = stored.len();
                    }
                }
            }
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            let expected: Vec<u8> = stored.iter().flat_map(|(_, bytes)| bytes.clone()).collect();
            assert_eq!(joined(&all), expected);
            assert!(log.stats().segment_count > 2);
        });
    }
}
