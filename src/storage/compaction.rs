//! Log compaction for `cleanup.policy=compact` (first used by
//! `__consumer_offsets`): Kafka's log cleaner, run on demand on the
//! partition's shard.
//!
//! One call of [`Log::compact`] is one cleaning round of Kafka's `Cleaner`:
//!
//! 1. **Range** (`LogCleanerManager.cleanableOffsets`, `LogToClean`). The
//!    first dirty offset is the cleaner checkpoint (reset to the log start
//!    when it lies outside the log). Nothing at or past the first
//!    uncleanable offset is touched: the active segment, a segment whose
//!    roll the writer is still finishing, the caller's `clean_below_offset`
//!    (Kafka's last stable offset) and, with `min.compaction.lag.ms`, the
//!    first dirty segment holding a record younger than the lag; rounded down
//!    to the base offset of the segment holding it. The round runs when the
//!    dirty ratio, dirty bytes over clean plus dirty bytes, is greater than
//!    `min.cleanable.dirty.ratio` (strictly, as Kafka), or when forced.
//! 2. **Offset map** (`Cleaner.buildOffsetMap`). The dirty records are read
//!    in order and each key's latest offset goes into a fixed-size map of key
//!    hashes ([`OffsetMap`]). When the map is full, mapping stops and this
//!    round cleans only up to the last offset mapped; the next round goes on
//!    from there.
//! 3. **Rewrite** (`Cleaner.cleanSegments`, `MemoryRecords.filterTo`). Every
//!    segment from the log start up to the end of the map is rewritten, in
//!    groups of adjacent segments whose sizes add up to at most
//!    `segment_bytes` (`groupSegmentsBySize`), each group into one new
//!    segment. A record is kept when it lies past the map, or has a key whose
//!    latest offset it holds and is not a tombstone whose delete horizon has
//!    passed. Records without a key are dropped (the broker refuses them on
//!    produce for compacted topics). Offsets of kept records never change, so
//!    the log becomes sparse; see `batch_rewrite.rs` for how a batch is
//!    rewritten and when it keeps a delete horizon.
//! 4. **Checkpoint.** The end of the map is written to
//!    `cleaner-offset-checkpoint`, so the dirty ratio survives restarts.
//!
//! A batch whose records are all removed is dropped, except where Kafka
//! keeps it as an empty (header-only) batch: the batch ending just before
//! the first uncleanable offset (so the last offset of the round stays in
//! the log), and the last batch of a producer id that is still active (so
//! its last sequence and epoch survive for idempotence). Producer state
//! lives above the storage layer: callers pass the last data offset of each
//! active producer in [`CompactionRequest::active_producers`]; without it
//! the last batch, within the rounds range, of every producer id found there
//! is kept, which keeps everything Kafka keeps and a little more.
//!
//! **Transactions.** The caller bounds the round by the last stable offset
//! (`clean_below_offset`), so no open transaction is ever cleaned, and
//! passes the partition's aborted transactions
//! ([`CompactionRequest::aborted_transactions`]). As in Kafka's cleaner
//! (`CleanedTransactionMetadata`), a transactional data batch inside an
//! aborted transaction is never put in the offset map (so an aborted value
//! cannot shadow a committed one) and its records are all removed (the
//! batch is dropped, or emptied when it is its producer's last). Of Kafka's
//! marker handling we do the simplest correct subset: control batches
//! (COMMIT and ABORT markers) are always kept whole, where Kafka removes a
//! marker once its transaction has no data left and its delete horizon has
//! passed. Kept markers cost a few bytes each and keep every `.txnindex`
//! entry pointing at a marker that is still in the log.
//!
//! **Crash safety of a segment swap** (Kafka's `LocalLog.replaceSegments`
//! and `LogLoader`): a group is written to `NNN.log.cleaned` with its
//! indexes in `NNN.index.cleaned` and `NNN.timeindex.cleaned`, all synced.
//! The indexes are renamed to `.swap`, then the log file, and the directory
//! is synced: the `.log.swap` name is the commit point. Only then does the
//! in-memory segment list take the new segment (in one step, under the state
//! borrow), the files of every replaced segment are renamed `.deleted` and
//! the directory synced, the `.swap` files are renamed over the final
//! names and the directory is synced again before the next group starts;
//! the `.deleted` files are removed `file.delete.delay.ms` later. A failure
//! after the in-memory swap fails the log (no more appends, its writer
//! stops) until a restart's recovery finishes the swap, as Kafka takes the
//! directory offline. Recovery deletes `.cleaned` and
//! `.deleted` files, and index `.swap` files without a `.log.swap`
//! (uncommitted), and for a `.log.swap` deletes the segment files it
//! replaces and renames it into place (see `recovery.rs`).
//!
//! Reads keep working throughout: they plan against the segment list and
//! hold their own handle on the file they read, so a read planned before a
//! swap finishes on the old file (unlinked files stay readable while open)
//! and later reads see the new one. Appends never wait for compaction: it
//! touches only closed segments, and it yields to the executor after every
//! batch. Memory is bounded by the offset map, the I/O chunk, one write
//! buffer, one batch and its decompressed records, and a capped producer
//! table.
//!
//! Runs on the partition's shard; one compaction per log at a time (a shard
//! may compact several logs at once, each within its own bounds).

use std::cell::Cell;
use std::{collections::HashMap, path::Path, rc::Rc};

use bytes::Bytes;
use glommio::io::OpenOptions;
use tracing::{info, warn};

use super::txn_index::AbortedTxn;
use super::{
    appender::{AppenderSettings, SegmentAppender, WriterCounters},
    batch_rewrite::{
        build_empty_batch, build_retained_batch, decode_batch_records, delete_horizon_ms,
        BatchRecord,
    },
    checkpoint::{
        remove_file_if_exists, sync_directory, write_file_synced, write_offset_checkpoint,
        CLEANER_OFFSET_CHECKPOINT_FILE,
    },
    error::StorageError,
    index::{OFFSET_INDEX_ENTRY_BYTES, TIME_INDEX_ENTRY_BYTES},
    log::{Log, SegmentSnapshot},
    notify::Signal,
    offset_map::OffsetMap,
    recovery::{cleaned_file_path, rename_file, swap_file_path},
    retention::{remove_after, rename_segment_files_deleted},
    segment::{
        ensure_iopoll_probed, segment_file_path, ScanStep, Segment, SegmentScanner,
        INDEX_FILE_EXTENSION, LOG_FILE_EXTENSION, TIME_INDEX_FILE_EXTENSION,
    },
};
use crate::protocol::record_batch::{parse_header, validate_batch, BatchHeader};

/// Bytes read per DMA read while compacting, unless told otherwise: a
/// compaction's share of Kafka's default `log.cleaner.io.buffer.size` (512
/// KiB, half for reading, half for writing) with one cleaner thread.
const COMPACTION_CHUNK_BYTES: usize = 256 << 10;

/// Producer ids tracked when the caller gives no producer state; past this,
/// every batch of an idempotent producer is treated as its last (kept, at
/// least as an empty batch), which is safe and keeps the table bounded.
const PRODUCERS_TRACKED_MAX: usize = 1 << 16;

/// Kafka's topic-level compaction settings, read at every compaction (topic
/// configs can change while the log is open).
#[derive(Debug, Clone)]
pub struct CompactionConfig {
    /// `cleanup.policy` includes `compact`. When false, `compact` does
    /// nothing: records without keys and superseded values are data in a
    /// delete-only topic.
    pub compact: bool,
    /// `delete.retention.ms`: how long a tombstone is kept after the
    /// compaction that first saw it (its delete horizon).
    pub delete_retention_ms: i64,
    /// `min.cleanable.dirty.ratio`: compact only when dirty bytes are more
    /// than this share of the cleanable log.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: records younger than this (by batch
    /// maxTimestamp) stay uncompacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a log whose oldest dirty closed segment
    /// began (by its first batch's timestamp) longer ago than this is
    /// compacted whatever its dirty ratio (KIP-354).
    pub max_compaction_lag_ms: i64,
    /// Memory of the key -> offset map (Kafka's
    /// `log.cleaner.dedupe.buffer.size`, 128 MiB shared by the broker's
    /// cleaner threads; here it is per running compaction, a share of
    /// that). 24 bytes per key.
    pub dedupe_buffer_bytes: usize,
    /// `log.cleaner.io.buffer.load.factor`: how full the key map gets.
    pub load_factor: f64,
    /// Bytes a read of a segment asks for (a batch larger is read whole):
    /// half of this compaction's share of `log.cleaner.io.buffer.size`.
    pub read_chunk_bytes: usize,
    /// The throttle of `log.cleaner.io.max.bytes.per.second` that this
    /// compaction shares with those running beside it.
    pub throttle: Rc<Throttle>,
    /// `file.delete.delay.ms`: how long the replaced segments' files stay,
    /// renamed `.deleted`, after the swap.
    pub file_delete_delay_ms: i64,
}

impl Default for CompactionConfig {
    /// Kafka's defaults; `compact` false as `cleanup.policy` defaults to
    /// `delete`.
    fn default() -> Self {
        CompactionConfig {
            compact: false,
            delete_retention_ms: 86_400_000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            dedupe_buffer_bytes: 32 << 20,
            load_factor: super::offset_map::LOAD_FACTOR_DEFAULT,
            read_chunk_bytes: COMPACTION_CHUNK_BYTES,
            throttle: Rc::new(Throttle::new(Rc::new(Cell::new(f64::MAX)))),
            file_delete_delay_ms: 60_000,
        }
    }
}

impl CompactionConfig {
    /// Checks every field against its bound.
    ///
    /// # Errors
    /// [`StorageError::InvalidConfig`] naming the first bad field.
    pub fn validate(&self) -> Result<(), StorageError> {
        let invalid = |reason| Err(StorageError::InvalidConfig { reason });
        if self.delete_retention_ms < 0 {
            return invalid("delete_retention_ms must not be negative");
        }
        if !(0.0..=1.0).contains(&self.min_cleanable_dirty_ratio) {
            return invalid("min_cleanable_dirty_ratio must be in 0..=1");
        }
        if self.min_compaction_lag_ms < 0 {
            return invalid("min_compaction_lag_ms must not be negative");
        }
        if self.dedupe_buffer_bytes < 4096 || self.dedupe_buffer_bytes > 1 << 34 {
            return invalid("dedupe_buffer_bytes must be in 4 KiB..=16 GiB");
        }
        if self.read_chunk_bytes < 4096 {
            return invalid("read_chunk_bytes must be at least 4 KiB");
        }
        if self.file_delete_delay_ms < 0 {
            return invalid("file_delete_delay_ms must not be negative");
        }
        Ok(())
    }
}

/// How often the throttle measures the rate (Kafka's cleaner throttler
/// checks every 300 ms).
const THROTTLE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(300);

/// Kafka's cleaner `Throttler`: counts the bytes the compactions sharing
/// it read and write and, each check interval, sleeps long enough to bring
/// the rate of that interval down to the bound; while one sleeps, the
/// others wait too (Kafka's sleeps holding the throttler's lock). Kafka
/// looks only once an interval has passed, so a compaction shorter than
/// one is never slowed; here a burst past the interval's share is slowed
/// at once too.
#[derive(Debug)]
pub struct Throttle {
    /// The bound, bytes a second: infinite, NaN or `f64::MAX` for none.
    /// Read as compactions go, so a change applies to those under way.
    bytes_per_second: Rc<Cell<f64>>,
    period_start: Cell<std::time::Instant>,
    observed: Cell<f64>,
    /// Until when one compaction sleeps off the interval.
    paused_until: Cell<Option<std::time::Instant>>,
}

impl Throttle {
    /// A throttle to the bound `bytes_per_second` holds.
    pub fn new(bytes_per_second: Rc<Cell<f64>>) -> Self {
        Throttle {
            bytes_per_second,
            period_start: Cell::new(std::time::Instant::now()),
            observed: Cell::new(0.0),
            paused_until: Cell::new(None),
        }
    }

    /// The pause that brings `observed` bytes over `elapsed` down to
    /// `bytes_per_second`, if the bound is finite and passed.
    fn pause(
        bytes_per_second: f64,
        observed: f64,
        elapsed: std::time::Duration,
    ) -> Option<std::time::Duration> {
        if bytes_per_second.is_nan() || bytes_per_second <= 0.0 || bytes_per_second >= f64::MAX {
            return None;
        }
        let wanted = std::time::Duration::try_from_secs_f64(observed / bytes_per_second)
            .unwrap_or(std::time::Duration::MAX);
        wanted.checked_sub(elapsed).filter(|pause| !pause.is_zero())
    }

    /// Counts `bytes` moved by the compaction of `log` and, when the
    /// interval's rate is past the bound, sleeps (a second at a time, so a
    /// log closing meanwhile stops the compaction).
    async fn observe(&self, log: &Log, bytes: usize) -> Result<(), StorageError> {
        let second = std::time::Duration::from_secs(1);
        // Another compaction sleeps off the interval: this one waits with it.
        while let Some(until) = self.paused_until.get() {
            let left = until.saturating_duration_since(std::time::Instant::now());
            glommio::timer::sleep(left.clamp(std::time::Duration::from_millis(1), second)).await;
            log.compaction_check_open()?;
        }
        // No bound: f64::MAX (Kafka's default), infinite or NaN.
        let bytes_per_second = self.bytes_per_second.get();
        if bytes_per_second.is_nan() || bytes_per_second >= f64::MAX {
            return Ok(());
        }
        #[allow(clippy::cast_precision_loss)]
        let observed = self.observed.get() + bytes as f64;
        self.observed.set(observed);
        let start = self.period_start.get();
        let interval_share = bytes_per_second * THROTTLE_CHECK_INTERVAL.as_secs_f64();
        if start.elapsed() <= THROTTLE_CHECK_INTERVAL && observed <= interval_share {
            return Ok(());
        }
        // A second at a time, looking again at the bound (it may have
        // changed; 0 stops the compactions, as it stops Kafka's cleaner)
        // and at the log (it may be closing). The others wait until this
        // one is done, or dropped.
        struct Pausing<'a>(&'a Cell<Option<std::time::Instant>>);
        impl Drop for Pausing<'_> {
            fn drop(&mut self) {
                self.0.set(None);
            }
        }
        let _pausing = Pausing(&self.paused_until);
        loop {
            let bytes_per_second = self.bytes_per_second.get();
            let left = if bytes_per_second == 0.0 {
                second
            } else {
                match Self::pause(bytes_per_second, observed, start.elapsed()) {
                    Some(left) => left.min(second),
                    None => break,
                }
            };
            self.paused_until
                .set(Some(std::time::Instant::now() + left));
            glommio::timer::sleep(left).await;
            log.compaction_check_open()?;
        }
        self.period_start.set(std::time::Instant::now());
        self.observed.set(0.0);
        Ok(())
    }
}

/// What one compaction call is told besides the topic settings.
#[derive(Debug, Clone)]
pub struct CompactionRequest<'a> {
    /// The time the round runs at: tombstone delete horizons are set from it
    /// and compared with it, and `min_compaction_lag_ms` counts back from it.
    pub now_ms: i64,
    /// Clean whatever is cleanable regardless of the dirty ratio (tests,
    /// admin tools).
    pub force: bool,
    /// Never clean at or past this offset: Kafka cleans only below the last
    /// stable offset (so below the high watermark). `i64::MAX` for no bound
    /// beyond the active segment.
    pub clean_below_offset: i64,
    /// Producer id -> last data offset of every producer still active
    /// (Kafka's `lastRecordsOfActiveProducers`). `None` when the caller keeps
    /// no producer state; see the module comment.
    pub active_producers: Option<&'a HashMap<i64, i64>>,
    /// The partition's aborted transactions (Kafka's
    /// `collectAbortedTransactions` over the round). `None` when the caller
    /// keeps none: transactional data is then treated as committed.
    pub aborted_transactions: Option<&'a [AbortedTxn]>,
}

impl CompactionRequest<'_> {
    /// A round at `now_ms`, not forced, bounded only by the active segment,
    /// without producer state.
    pub fn new(now_ms: i64) -> Self {
        CompactionRequest {
            now_ms,
            force: false,
            clean_below_offset: i64::MAX,
            active_producers: None,
            aborted_transactions: None,
        }
    }
}

/// Whether a compaction call cleaned anything, and why not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CompactionOutcome {
    /// The round ran.
    Cleaned,
    /// The config does not ask for compaction.
    #[default]
    NotCompacted,
    /// No closed segment lies below the first uncleanable offset.
    NothingCleanable,
    /// The dirty ratio is not above `min_cleanable_dirty_ratio`, and no
    /// dirty segment is older than `max_compaction_lag_ms`.
    BelowDirtyRatio,
}

/// What a compaction call did (Kafka's `CleanerStats`, in part).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactionStats {
    /// Whether the round ran.
    pub outcome: CompactionOutcome,
    /// Where the dirty part of the log started.
    pub first_dirty_offset: i64,
    /// The round's upper bound (exclusive): a segment base offset.
    pub first_uncleanable_offset: i64,
    /// Dirty bytes over clean plus dirty bytes, before the round.
    pub dirty_ratio: f64,
    /// The new cleaner checkpoint: the end of the offset map.
    pub cleaned_up_to_offset: i64,
    /// Distinct keys in the offset map.
    pub keys_mapped: usize,
    /// The offset map filled up before the end of the dirty part.
    pub map_full: bool,
    /// Segments rewritten.
    pub segments_read: usize,
    /// Segments they were rewritten into.
    pub segments_written: usize,
    /// Bytes of the segments rewritten.
    pub bytes_read: u64,
    /// Bytes of the segments written.
    pub bytes_written: u64,
    /// Batches read from the rewritten segments.
    pub batches_read: u64,
    /// Batches kept as header-only batches.
    pub batches_emptied: u64,
    /// Records read from non-control batches of the rewritten segments.
    pub records_read: u64,
    /// Records kept.
    pub records_retained: u64,
    /// Tombstones removed because their delete horizon had passed.
    pub tombstones_removed: u64,
}

/// Which batch is the last of its producer.
enum ProducerLastBatches<'a> {
    /// From the caller's producer state.
    Given(&'a HashMap<i64, i64>),
    /// Tracked while reading the round's range.
    Tracked {
        last_offsets: HashMap<i64, i64>,
        overflowed: bool,
    },
}

impl ProducerLastBatches<'_> {
    fn note(&mut self, producer_id: i64, last_offset: i64) {
        if let ProducerLastBatches::Tracked {
            last_offsets,
            overflowed,
        } = self
        {
            if *overflowed {
                return;
            }
            last_offsets.insert(producer_id, last_offset);
            if last_offsets.len() > PRODUCERS_TRACKED_MAX {
                warn!(
                    producers = last_offsets.len(),
                    "too many producer ids to track; keeping every idempotent batch"
                );
                *overflowed = true;
                *last_offsets = HashMap::new();
            }
        }
    }

    fn is_last(&self, producer_id: i64, last_offset: i64) -> bool {
        match self {
            ProducerLastBatches::Given(active) => active.get(&producer_id) == Some(&last_offset),
            ProducerLastBatches::Tracked {
                last_offsets,
                overflowed,
            } => *overflowed || last_offsets.get(&producer_id) == Some(&last_offset),
        }
    }

    fn tracks(&self) -> bool {
        matches!(self, ProducerLastBatches::Tracked { .. })
    }
}

/// Which transactional batches belong to aborted transactions: per
/// producer id, the (first offset, marker offset) of each.
#[derive(Debug, Default)]
struct AbortedRanges {
    by_producer: HashMap<i64, Vec<(i64, i64)>>,
}

impl AbortedRanges {
    fn new(aborted: Option<&[AbortedTxn]>) -> Self {
        let mut by_producer: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for txn in aborted.unwrap_or_default() {
            by_producer
                .entry(txn.producer_id)
                .or_default()
                .push((txn.first_offset, txn.last_offset));
        }
        AbortedRanges { by_producer }
    }

    /// A transactional data batch whose transaction was aborted.
    fn is_aborted(&self, header: &BatchHeader) -> bool {
        if !header.is_transactional() || header.is_control() || header.producer_id < 0 {
            return false;
        }
        self.by_producer
            .get(&header.producer_id)
            .is_some_and(|ranges| {
                ranges.iter().any(|(first, marker)| {
                    *first <= header.base_offset && header.base_offset < *marker
                })
            })
    }
}

/// The part of the log one round works on.
#[derive(Debug, Clone, PartialEq)]
struct CleanableRange {
    first_dirty_offset: i64,
    /// A segment base offset (or the first unfinished segment's).
    first_uncleanable_offset: i64,
    /// Segments of the snapshot below the first uncleanable offset.
    segment_count: usize,
    clean_bytes: u64,
    cleanable_bytes: u64,
}

impl CleanableRange {
    fn dirty_ratio(&self) -> f64 {
        let total_bytes = self.clean_bytes + self.cleanable_bytes;
        if total_bytes == 0 {
            return 0.0;
        }
        self.cleanable_bytes as f64 / total_bytes as f64
    }
}

/// The offset where the segment at `index` of `segments` ends (the next
/// segment's base), or `end_offset` for the last.
fn segment_end_offset(segments: &[SegmentSnapshot], index: usize, end_offset: i64) -> i64 {
    segments
        .get(index + 1)
        .map_or(end_offset, |next| next.base_offset)
}

/// Kafka's `LogCleanerManager.maxCompactionDelay` > 0: among the closed
/// segments that hold dirty records (from the one holding
/// `first_dirty_offset` on), the earliest first-batch timestamp (positive
/// ones only) is older than `max.compaction.lag.ms` before `now_ms`.
fn compaction_overdue(
    segments: &[SegmentSnapshot],
    first_dirty_offset: i64,
    config: &CompactionConfig,
    now_ms: i64,
) -> bool {
    let clean_until = now_ms.saturating_sub(config.max_compaction_lag_ms.max(0));
    let holder = segments
        .partition_point(|segment| segment.base_offset <= first_dirty_offset)
        .max(1)
        - 1;
    segments
        .get(holder..)
        .unwrap_or_default()
        .iter()
        .map(|segment| segment.first_batch_timestamp)
        .filter(|&timestamp| timestamp > 0)
        .min()
        .is_some_and(|earliest| earliest < clean_until)
}

/// Kafka's `LogCleanerManager.cleanableOffsets` and `LogToClean`: where the
/// dirty part starts, where cleaning must stop, and the byte counts of the
/// dirty ratio.
#[allow(clippy::too_many_arguments)]
fn cleanable_range(
    dir: &Path,
    segments: &[SegmentSnapshot],
    log_start_offset: i64,
    log_end_offset: i64,
    first_unfinished_base_offset: i64,
    cleaner_checkpoint: Option<i64>,
    config: &CompactionConfig,
    request: &CompactionRequest<'_>,
) -> CleanableRange {
    let checkpoint = cleaner_checkpoint.unwrap_or(log_start_offset);
    let first_dirty_offset = if checkpoint < log_start_offset {
        log_start_offset
    } else if checkpoint > log_end_offset {
        warn!(
            dir = %dir.display(),
            checkpoint,
            log_end_offset,
            "cleaner checkpoint is past the log end; cleaning the whole log"
        );
        log_start_offset
    } else {
        checkpoint
    };
    let mut uncleanable_offset = request.clean_below_offset.min(first_unfinished_base_offset);
    if config.min_compaction_lag_ms > 0 {
        let too_young = request.now_ms.saturating_sub(config.min_compaction_lag_ms);
        let young = segments.iter().enumerate().find(|&(index, segment)| {
            segment_end_offset(segments, index, first_unfinished_base_offset) > first_dirty_offset
                && segment.max_timestamp > too_young
        });
        if let Some((_, segment)) = young {
            uncleanable_offset = uncleanable_offset.min(segment.base_offset);
        }
    }
    let uncleanable_offset = uncleanable_offset.max(first_dirty_offset);
    // Round down to the base offset of the segment holding it.
    let first_uncleanable_offset = if uncleanable_offset >= first_unfinished_base_offset {
        first_unfinished_base_offset
    } else {
        let holders = segments.partition_point(|segment| segment.base_offset <= uncleanable_offset);
        segments[holders.max(1) - 1].base_offset
    };
    let segment_count =
        segments.partition_point(|segment| segment.base_offset < first_uncleanable_offset);
    let clean_bytes = segments
        .iter()
        .filter(|segment| segment.base_offset < first_dirty_offset)
        .map(|segment| segment.size_bytes)
        .sum();
    let dirty_from = first_dirty_offset.min(first_uncleanable_offset);
    let cleanable_bytes = segments[..segment_count]
        .iter()
        .enumerate()
        .filter(|&(index, _)| {
            segment_end_offset(segments, index, first_unfinished_base_offset) > dirty_from
        })
        .map(|(_, segment)| segment.size_bytes)
        .sum();
    CleanableRange {
        first_dirty_offset,
        first_uncleanable_offset,
        segment_count,
        clean_bytes,
        cleanable_bytes,
    }
}

/// Kafka's `Cleaner.groupSegmentsBySize`: consecutive segments whose log
/// bytes fit `segment_bytes_max`, whose index entries fit
/// `index_bytes_max`, and whose offsets stay within a 32-bit distance of
/// the group's base offset. Returns index ranges into `segments`.
fn group_segments_by_size(
    segments: &[SegmentSnapshot],
    segment_bytes_max: u64,
    index_bytes_max: u64,
    end_offset: i64,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let first = &segments[start];
        let mut log_bytes = first.size_bytes;
        let mut offset_index_bytes = (first.offset_index_entries * OFFSET_INDEX_ENTRY_BYTES) as u64;
        let mut time_index_bytes = (first.time_index_entries * TIME_INDEX_ENTRY_BYTES) as u64;
        let mut end = start + 1;
        while let Some(next) = segments.get(end) {
            let next_offset_index_bytes =
                (next.offset_index_entries * OFFSET_INDEX_ENTRY_BYTES) as u64;
            let next_time_index_bytes = (next.time_index_entries * TIME_INDEX_ENTRY_BYTES) as u64;
            let last_offset_bound = segment_end_offset(segments, end, end_offset) - 1;
            let fits = log_bytes + next.size_bytes <= segment_bytes_max
                && offset_index_bytes + next_offset_index_bytes <= index_bytes_max
                && time_index_bytes + next_time_index_bytes <= index_bytes_max
                && (next.size_bytes == 0
                    || last_offset_bound - first.base_offset <= i64::from(i32::MAX));
            if !fits {
                break;
            }
            log_bytes += next.size_bytes;
            offset_index_bytes += next_offset_index_bytes;
            time_index_bytes += next_time_index_bytes;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// Everything the per-batch decision needs.
struct CleanContext<'a> {
    map: &'a OffsetMap,
    now_ms: i64,
    delete_retention_ms: i64,
    /// Kafka's `upperBoundOffsetOfCleaningRound`: the first uncleanable offset.
    upper_bound_offset: i64,
    producers: &'a ProducerLastBatches<'a>,
    aborted: &'a AbortedRanges,
}

/// What becomes of one batch.
#[derive(Debug)]
enum Filtered {
    /// Written as it was.
    Original,
    /// Written rebuilt with fewer records or a new delete horizon.
    Rewritten(Bytes),
    /// Written as a header-only batch.
    Emptied(Bytes),
    /// Not written.
    Dropped,
}

#[derive(Debug, Default)]
struct FilterCounts {
    records_read: u64,
    records_retained: u64,
    tombstones_removed: u64,
}

/// Kafka's `LogCleaner` record filter applied to one batch
/// (`checkBatchRetention`, `shouldRetainRecord`, then `filterTo`).
fn filter_batch(
    batch: &Bytes,
    header: &BatchHeader,
    context: &CleanContext<'_>,
    counts: &mut FilterCounts,
) -> Result<Filtered, String> {
    if header.is_control() {
        // Markers are kept whole (see the module comment).
        return Ok(Filtered::Original);
    }
    let last_offset = header.last_offset();
    let is_last_of_producer =
        header.producer_id >= 0 && context.producers.is_last(header.producer_id, last_offset);
    let retain_empty = is_last_of_producer || last_offset + 1 == context.upper_bound_offset;
    if context.aborted.is_aborted(header) {
        // Aborted data: every record goes (Kafka's `discardBatchRecords`).
        counts.records_read += u64::try_from(header.record_count.max(0)).unwrap_or(0);
        return Ok(if retain_empty {
            Filtered::Emptied(build_empty_batch(header))
        } else {
            Filtered::Dropped
        });
    }
    let horizon = delete_horizon_ms(header);
    let retain_deletes = match horizon {
        Some(horizon) => context.now_ms < horizon,
        None => true,
    };
    let records = decode_batch_records(batch, header)?;
    counts.records_read += records.len() as u64;
    let latest_mapped = context.map.latest_offset();
    let mut kept: Vec<&BatchRecord> = Vec::with_capacity(records.len());
    let mut contains_tombstones = false;
    for record in &records {
        let retain = if record.offset > latest_mapped {
            true
        } else if let Some(key) = &record.key {
            let latest_for_key = record.offset >= context.map.get(key);
            if latest_for_key && record.value.is_none() && !retain_deletes {
                counts.tombstones_removed += 1;
            }
            latest_for_key && (record.value.is_some() || retain_deletes)
        } else {
            false
        };
        if retain {
            contains_tombstones |= record.value.is_none();
            kept.push(record);
        }
    }
    counts.records_retained += kept.len() as u64;
    if kept.is_empty() {
        return Ok(if retain_empty {
            Filtered::Emptied(build_empty_batch(header))
        } else {
            Filtered::Dropped
        });
    }
    let set_horizon = contains_tombstones && horizon.is_none();
    if kept.len() == records.len() && !set_horizon {
        return Ok(Filtered::Original);
    }
    let new_horizon = if set_horizon {
        Some(context.now_ms.saturating_add(context.delete_retention_ms))
    } else {
        horizon
    };
    build_retained_batch(header, &kept, new_horizon).map(Filtered::Rewritten)
}

/// Where a simulated crash can stop a segment swap (used by tests only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CrashPoint {
    /// The `.cleaned` files are written and synced, nothing renamed.
    BeforeCommit,
    /// The `.swap` files are committed; old files still in place.
    AfterCommit,
    /// Every replaced segment's files (the first's too) are renamed
    /// `.deleted`; `.swap` not renamed.
    AfterOldFilesRenamed,
}

#[cfg(test)]
thread_local! {
    /// The crash point the next compaction on this thread stops at.
    pub(crate) static CRASH_POINT: Cell<Option<CrashPoint>> = const { Cell::new(None) };
    static CRASHED: Cell<bool> = const { Cell::new(false) };
}

/// In tests, fails the compaction at `point` when asked to, leaving the
/// files as a crash would. Does nothing otherwise.
fn crash_at(point: CrashPoint, dir: &Path) -> Result<(), StorageError> {
    #[cfg(test)]
    if CRASH_POINT.with(|wanted| wanted.get()) == Some(point) {
        CRASHED.with(|crashed| crashed.set(true));
        return Err(StorageError::io(
            "simulated crash in",
            dir,
            std::io::Error::other(format!("{point:?}")),
        ));
    }
    let _ = (point, dir);
    Ok(())
}

/// True (once) after a simulated crash: its files must stay as they are.
fn crashed() -> bool {
    #[cfg(test)]
    {
        CRASHED.with(|crashed| crashed.replace(false))
    }
    #[cfg(not(test))]
    {
        false
    }
}

impl Log {
    /// One round of compaction at `now_ms` with `config` (not forced, no
    /// producer state, bounded only by the active segment); see
    /// [`Log::compact_with`] and the module comment of `compaction.rs`.
    ///
    /// # Errors
    /// As [`Log::compact_with`].
    pub async fn compact(
        &self,
        config: &CompactionConfig,
        now_ms: i64,
    ) -> Result<CompactionStats, StorageError> {
        self.compact_with(config, &CompactionRequest::new(now_ms))
            .await
    }

    /// One round of compaction of the closed segments, when the dirty ratio
    /// calls for it or `request.force` is set: builds the key -> latest
    /// offset map of the dirty part, rewrites every segment up to the end of
    /// the map keeping the latest record of each key (and unexpired
    /// tombstones), swaps the new segments in crash-safely, and records the
    /// new cleaner checkpoint. Offsets of kept records, the log start and
    /// the log end do not change. Appends and reads go on meanwhile.
    ///
    /// # Errors
    /// [`StorageError::InvalidConfig`]; [`StorageError::CompactionInProgress`]
    /// when another compaction of this log runs; [`StorageError::Closed`]
    /// when the log is closing (a started rewrite is discarded); I/O errors;
    /// [`StorageError::Corrupt`] for a batch whose CRC fails and
    /// [`StorageError::RecordDecode`] for records that do not decode (the
    /// round stops; segments swapped before stay swapped, all consistent).
    ///
    /// # Panics
    /// If `request.now_ms` is negative.
    pub async fn compact_with(
        &self,
        config: &CompactionConfig,
        request: &CompactionRequest<'_>,
    ) -> Result<CompactionStats, StorageError> {
        config.validate()?;
        assert!(request.now_ms >= 0, "now_ms is a wall-clock time");
        let mut stats = CompactionStats::default();
        if !config.compact {
            return Ok(stats);
        }
        let _guard = self.compaction_begin()?;
        let dir = self.dir().to_path_buf();
        ensure_iopoll_probed(&dir).await?;
        let snapshot = self.compaction_snapshot();
        let range = cleanable_range(
            &dir,
            &snapshot.segments,
            snapshot.log_start_offset,
            snapshot.log_end_offset,
            snapshot.first_unfinished_base_offset,
            snapshot.cleaner_checkpoint,
            config,
            request,
        );
        stats.first_dirty_offset = range.first_dirty_offset;
        stats.first_uncleanable_offset = range.first_uncleanable_offset;
        stats.cleaned_up_to_offset = range.first_dirty_offset;
        stats.dirty_ratio = range.dirty_ratio();
        if range.segment_count == 0 {
            stats.outcome = CompactionOutcome::NothingCleanable;
            return Ok(stats);
        }
        let overdue = compaction_overdue(
            &snapshot.segments[..range.segment_count],
            range.first_dirty_offset,
            config,
            request.now_ms,
        );
        if !request.force && !overdue && stats.dirty_ratio <= config.min_cleanable_dirty_ratio {
            stats.outcome = CompactionOutcome::BelowDirtyRatio;
            return Ok(stats);
        }
        stats.outcome = CompactionOutcome::Cleaned;
        info!(
            dir = %dir.display(),
            first_dirty_offset = range.first_dirty_offset,
            first_uncleanable_offset = range.first_uncleanable_offset,
            dirty_ratio = stats.dirty_ratio,
            "compacting log"
        );
        let segments = &snapshot.segments[..range.segment_count];
        let mut producers = match request.active_producers {
            Some(active) => ProducerLastBatches::Given(active),
            None => ProducerLastBatches::Tracked {
                last_offsets: HashMap::new(),
                overflowed: false,
            },
        };
        let mut map = OffsetMap::new(config.dedupe_buffer_bytes, config.load_factor);
        map.set_latest_offset(range.first_dirty_offset - 1);
        let aborted = AbortedRanges::new(request.aborted_transactions);
        stats.map_full = self
            .compaction_build_offset_map(
                segments,
                &range,
                &mut map,
                &mut producers,
                &aborted,
                config,
            )
            .await?;
        stats.keys_mapped = map.key_count();
        let end_offset = map.latest_offset() + 1;
        assert!(end_offset >= range.first_dirty_offset);
        assert!(end_offset <= range.first_uncleanable_offset);

        let cleaned_count = segments.partition_point(|segment| segment.base_offset < end_offset);
        let groups = group_segments_by_size(
            &segments[..cleaned_count],
            self.segment_settings().segment_bytes,
            u64::from(self.segment_settings().segment_index_bytes),
            range.first_uncleanable_offset,
        );
        let context = CleanContext {
            map: &map,
            now_ms: request.now_ms,
            delete_retention_ms: config.delete_retention_ms,
            upper_bound_offset: range.first_uncleanable_offset,
            producers: &producers,
            aborted: &aborted,
        };
        for group in groups {
            self.compaction_clean_group(&segments[group], &context, &mut stats, config)
                .await?;
        }

        if snapshot.cleaner_checkpoint != Some(end_offset) {
            write_offset_checkpoint(&dir, CLEANER_OFFSET_CHECKPOINT_FILE, end_offset).await?;
        }
        self.set_cleaner_checkpoint(end_offset);
        stats.cleaned_up_to_offset = end_offset;
        info!(
            dir = %dir.display(),
            cleaned_up_to_offset = end_offset,
            keys_mapped = stats.keys_mapped,
            map_full = stats.map_full,
            segments_read = stats.segments_read,
            segments_written = stats.segments_written,
            bytes_read = stats.bytes_read,
            bytes_written = stats.bytes_written,
            records_read = stats.records_read,
            records_retained = stats.records_retained,
            "compacted log"
        );
        Ok(stats)
    }

    /// Kafka's `Cleaner.buildOffsetMap`: maps every keyed record of the
    /// dirty part, in order, until the map is full; with tracked producer
    /// state also notes the last batch of each producer id from the log
    /// start. Returns whether the map filled up.
    async fn compaction_build_offset_map(
        &self,
        segments: &[SegmentSnapshot],
        range: &CleanableRange,
        map: &mut OffsetMap,
        producers: &mut ProducerLastBatches<'_>,
        aborted: &AbortedRanges,
        cleaner: &CompactionConfig,
    ) -> Result<bool, StorageError> {
        let first_dirty_offset = range.first_dirty_offset;
        for (index, segment) in segments.iter().enumerate() {
            let segment_end = segment_end_offset(segments, index, range.first_uncleanable_offset);
            let dirty = segment_end > first_dirty_offset;
            if !dirty && !producers.tracks() {
                continue;
            }
            let start_position = if producers.tracks() || segment.base_offset >= first_dirty_offset
            {
                0
            } else {
                self.offset_index_position(segment.base_offset, first_dirty_offset)
            };
            let path = segment_file_path(self.dir(), segment.base_offset, LOG_FILE_EXTENSION);
            let mut scanner = SegmentScanner::new(
                segment.file.clone(),
                path.clone(),
                start_position,
                segment.size_bytes,
                cleaner.read_chunk_bytes,
            );
            loop {
                self.compaction_check_open()?;
                let position = scanner.position();
                let header = match scanner.peek().await? {
                    ScanStep::End => break,
                    ScanStep::Invalid(error) => {
                        return Err(StorageError::Corrupt {
                            path,
                            position,
                            reason: format!("closed segment does not parse: {error}"),
                        })
                    }
                    ScanStep::Batch(header) => header,
                };
                let total_bytes = header.total_bytes();
                if header.producer_id >= 0 {
                    producers.note(header.producer_id, header.last_offset());
                }
                if header.last_offset() >= first_dirty_offset {
                    // Aborted records never enter the map, so they cannot
                    // shadow committed values of the same keys.
                    if !header.is_control() && !aborted.is_aborted(&header) {
                        let Some(bytes) = scanner.batch_bytes(total_bytes).await? else {
                            return Err(StorageError::Corrupt {
                                path,
                                position,
                                reason: "file ends inside a batch".to_string(),
                            });
                        };
                        let batch = Bytes::copy_from_slice(bytes);
                        let records = decode_batch_records(&batch, &header).map_err(|reason| {
                            StorageError::RecordDecode {
                                dir: self.dir().to_path_buf(),
                                base_offset: header.base_offset,
                                reason,
                            }
                        })?;
                        for record in &records {
                            let Some(key) = &record.key else { continue };
                            if record.offset < first_dirty_offset {
                                continue;
                            }
                            if map.is_full() {
                                return Ok(true);
                            }
                            map.put(key, record.offset);
                        }
                    }
                    map.set_latest_offset(map.latest_offset().max(header.last_offset()));
                }
                scanner.advance(total_bytes);
                cleaner.throttle.observe(self, total_bytes).await?;
                glommio::yield_if_needed().await;
            }
            if dirty {
                // Gaps at the end of a compacted segment belong to it.
                map.set_latest_offset(map.latest_offset().max(segment_end - 1));
            }
        }
        Ok(false)
    }

    /// Kafka's `Cleaner.cleanSegments`: rewrites `group` into one segment
    /// and swaps it in (see the module comment for the steps).
    async fn compaction_clean_group(
        &self,
        group: &[SegmentSnapshot],
        context: &CleanContext<'_>,
        stats: &mut CompactionStats,
        cleaner: &CompactionConfig,
    ) -> Result<(), StorageError> {
        let dir = self.dir().to_path_buf();
        let base_offset = group[0].base_offset;
        let cleaned = |extension| cleaned_file_path(&dir, base_offset, extension);
        let written = self
            .compaction_write_cleaned(group, context, stats, cleaner)
            .await;
        let segment = match written {
            Ok(segment) => segment,
            Err(error) => {
                if !crashed() {
                    for extension in [
                        LOG_FILE_EXTENSION,
                        INDEX_FILE_EXTENSION,
                        TIME_INDEX_FILE_EXTENSION,
                    ] {
                        if let Err(remove_error) = remove_file_if_exists(cleaned(extension)).await {
                            warn!(%remove_error, "cannot remove an unfinished compaction file");
                        }
                    }
                }
                return Err(error);
            }
        };

        // Commit: the indexes become .swap, then the log file.
        for extension in [
            INDEX_FILE_EXTENSION,
            TIME_INDEX_FILE_EXTENSION,
            LOG_FILE_EXTENSION,
        ] {
            rename_file(
                cleaned(extension),
                swap_file_path(&dir, base_offset, extension),
            )
            .await?;
        }
        sync_directory(&dir).await?;
        crash_at(CrashPoint::AfterCommit, &dir)?;

        let replaced: Vec<i64> = group.iter().map(|segment| segment.base_offset).collect();
        stats.segments_read += group.len();
        stats.segments_written += 1;
        stats.bytes_written += segment.size_bytes;
        self.compaction_swap(&replaced, segment);

        // The memory holds the swap now: a failure from here on leaves the
        // files behind it, so the log fails (as Kafka takes the directory
        // offline) until a restart's recovery finishes the swap.
        let finished = async {
            // Kafka's `LocalLog.replaceSegments`: every replaced segment's
            // files, the first's too (the cleaned one takes its name), are
            // renamed `.deleted` (made durable before the swap's names, so
            // no old segment outlives the swap that replaced it), then
            // removed `file.delete.delay.ms` later.
            let deleted = rename_segment_files_deleted(
                &dir,
                replaced.iter().copied(),
                &[
                    INDEX_FILE_EXTENSION,
                    TIME_INDEX_FILE_EXTENSION,
                    LOG_FILE_EXTENSION,
                ],
            )
            .await?;
            crash_at(CrashPoint::AfterOldFilesRenamed, &dir)?;
            for extension in [
                INDEX_FILE_EXTENSION,
                TIME_INDEX_FILE_EXTENSION,
                LOG_FILE_EXTENSION,
            ] {
                rename_file(
                    swap_file_path(&dir, base_offset, extension),
                    segment_file_path(&dir, base_offset, extension),
                )
                .await?;
            }
            sync_directory(&dir).await?;
            Ok::<_, StorageError>(deleted)
        };
        let deleted = match finished.await {
            Ok(deleted) => deleted,
            Err(error) => {
                self.compaction_fail(error.clone());
                return Err(error);
            }
        };
        // The files match the memory again: a failure to remove is only
        // logged (a restart removes what is left).
        let delay = u64::try_from(cleaner.file_delete_delay_ms).unwrap_or(0);
        if let Err(error) = remove_after(deleted, std::time::Duration::from_millis(delay)).await {
            warn!(%error, "cannot remove a compacted segment's files");
        }
        Ok(())
    }

    /// Writes the cleaned `.log`, `.index` and `.timeindex` of `group`,
    /// synced, and returns the new segment (its file open).
    async fn compaction_write_cleaned(
        &self,
        group: &[SegmentSnapshot],
        context: &CleanContext<'_>,
        stats: &mut CompactionStats,
        cleaner: &CompactionConfig,
    ) -> Result<Segment, StorageError> {
        let dir = self.dir().to_path_buf();
        let config = self.config();
        let settings = self.segment_settings();
        let base_offset = group[0].base_offset;
        let log_path = cleaned_file_path(&dir, base_offset, LOG_FILE_EXTENSION);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .dma_open(&log_path)
            .await
            .map_err(|error| StorageError::glommio("creating", &log_path, error))?;
        let file = Rc::new(file);
        let mut appender = SegmentAppender::open(
            file.clone(),
            log_path.clone(),
            0,
            AppenderSettings {
                // Written once and finished: nothing to pre-allocate.
                prealloc_max: 0,
                ..config.appender_settings()
            },
            Rc::new(Signal::default()),
            Rc::new(WriterCounters::default()),
        )
        .await?;
        let mut segment = Segment::new(base_offset, context.now_ms, settings.segment_index_bytes);
        let mut counts = FilterCounts::default();
        for source in group {
            stats.bytes_read += source.size_bytes;
            let path = segment_file_path(&dir, source.base_offset, LOG_FILE_EXTENSION);
            let mut scanner = SegmentScanner::new(
                source.file.clone(),
                path.clone(),
                0,
                source.size_bytes,
                cleaner.read_chunk_bytes,
            );
            loop {
                self.compaction_check_open()?;
                let position = scanner.position();
                let header = match scanner.peek().await? {
                    ScanStep::End => break,
                    ScanStep::Invalid(error) => {
                        return Err(StorageError::Corrupt {
                            path,
                            position,
                            reason: format!("closed segment does not parse: {error}"),
                        })
                    }
                    ScanStep::Batch(header) => header,
                };
                let total_bytes = header.total_bytes();
                let batch = match scanner.batch_bytes(total_bytes).await? {
                    Some(bytes) => {
                        if let Err(error) = validate_batch(bytes) {
                            return Err(StorageError::Corrupt {
                                path,
                                position,
                                reason: format!("closed segment holds a bad batch: {error}"),
                            });
                        }
                        Bytes::copy_from_slice(bytes)
                    }
                    None => {
                        return Err(StorageError::Corrupt {
                            path,
                            position,
                            reason: "file ends inside a batch".to_string(),
                        })
                    }
                };
                scanner.advance(total_bytes);
                stats.batches_read += 1;
                cleaner.throttle.observe(self, total_bytes).await?;
                let filtered =
                    filter_batch(&batch, &header, context, &mut counts).map_err(|reason| {
                        StorageError::RecordDecode {
                            dir: dir.clone(),
                            base_offset: header.base_offset,
                            reason,
                        }
                    })?;
                let output = match filtered {
                    Filtered::Original => batch,
                    Filtered::Rewritten(bytes) => bytes,
                    Filtered::Emptied(bytes) => {
                        stats.batches_emptied += 1;
                        bytes
                    }
                    Filtered::Dropped => continue,
                };
                let output_header = match parse_header(&output) {
                    Ok(output_header) => output_header,
                    Err(error) => unreachable!("a batch the cleaner wrote does not parse: {error}"),
                };
                assert_eq!(output_header.base_offset, header.base_offset);
                assert_eq!(output_header.last_offset(), header.last_offset());
                let write_position = appender.logical_size();
                appender.append(&output).await?;
                cleaner.throttle.observe(self, output.len()).await?;
                segment.index_batch(
                    write_position,
                    &output_header,
                    settings.index_interval_bytes,
                );
                glommio::yield_if_needed().await;
            }
        }
        stats.records_read += counts.records_read;
        stats.records_retained += counts.records_retained;
        stats.tombstones_removed += counts.tombstones_removed;
        let size_bytes = appender.finish().await?;
        assert_eq!(size_bytes, segment.size_bytes);
        drop(appender);
        segment.seal_time_index();
        write_file_synced(
            cleaned_file_path(&dir, base_offset, INDEX_FILE_EXTENSION),
            segment.offset_index.encode(),
        )
        .await?;
        write_file_synced(
            cleaned_file_path(&dir, base_offset, TIME_INDEX_FILE_EXTENSION),
            segment.time_index.encode(),
        )
        .await?;
        sync_directory(&dir).await?;
        crash_at(CrashPoint::BeforeCommit, &dir)?;
        segment.file = Some(file);
        segment.files_complete = true;
        Ok(segment)
    }
}

#[cfg(test)]
mod tests {
    use std::{
        collections::{BTreeMap, HashMap},
        path::PathBuf,
    };

    use bytes::{Bytes, BytesMut};
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    use uuid::Uuid;

    use super::*;
    use crate::storage::{
        reader::whole_batches,
        run_on_executor,
        test_support::{joined, small_config},
    };

    fn temporary_log_dir() -> (tempfile::TempDir, PathBuf) {
        let root = match tempfile::tempdir() {
            Ok(root) => root,
            Err(error) => panic!("cannot create a temporary directory: {error}"),
        };
        let dir = root.path().join("offsets-0");
        (root, dir)
    }

    fn compacting() -> CompactionConfig {
        CompactionConfig {
            compact: true,
            dedupe_buffer_bytes: 1 << 16,
            ..CompactionConfig::default()
        }
    }

    /// One batch of keyed records (`None` values are tombstones) encoded by
    /// kafka-protocol with `compression`, all at `timestamp`.
    fn keyed_batch(
        records: &[(String, Option<String>)],
        timestamp: i64,
        compression: Compression,
        producer_id: i64,
    ) -> (Bytes, BatchHeader) {
        let records: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(index, (key, value))| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id,
                producer_epoch: if producer_id >= 0 { 0 } else { -1 },
                timestamp_type: TimestampType::Creation,
                offset: index as i64,
                sequence: index as i32,
                timestamp,
                key: Some(Bytes::from(key.clone())),
                value: value.clone().map(Bytes::from),
                headers: Default::default(),
            })
            .collect();
        let mut buffer = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut buffer, &records, &options).unwrap();
        let header = validate_batch(&buffer).unwrap();
        assert_eq!(header.total_bytes(), buffer.len());
        (buffer.freeze(), header)
    }

    /// What was appended at each offset: key and value.
    type Model = BTreeMap<i64, (String, Option<String>)>;

    async fn append_keyed(
        log: &Log,
        model: &mut Model,
        records: &[(String, Option<String>)],
        timestamp: i64,
        compression: Compression,
        producer_id: i64,
    ) {
        let (bytes, header) = keyed_batch(records, timestamp, compression, producer_id);
        let info = log.append(bytes, &header, 0, timestamp).await.unwrap();
        for (index, record) in records.iter().enumerate() {
            model.insert(info.base_offset + index as i64, record.clone());
        }
        settle(log).await;
    }

    /// Appends `batch_count` batches of two records over `key_count` keys,
    /// value `v<offset>`.
    async fn append_updates(
        log: &Log,
        model: &mut Model,
        batch_count: usize,
        key_count: usize,
        compression: Compression,
    ) {
        for index in 0..batch_count {
            let next = log.log_end_offset();
            let records: Vec<(String, Option<String>)> = (0..2)
                .map(|slot| {
                    let offset = next + slot;
                    let key = format!("key-{}", (index * 2 + slot as usize * 3) % key_count);
                    (key, Some(format!("v{offset}")))
                })
                .collect();
            append_keyed(log, model, &records, 1000 + index as i64, compression, -1).await;
        }
    }

    /// Every batch the log returns with its decoded records.
    async fn read_all(log: &Log) -> Vec<(BatchHeader, Vec<BatchRecord>)> {
        let result = log
            .read(log.log_start_offset(), i64::MAX, usize::MAX, true)
            .await
            .unwrap();
        whole_batches(result)
            .into_iter()
            .map(|(header, bytes)| {
                let records = decode_batch_records(&bytes, &header).unwrap();
                (header, records)
            })
            .collect()
    }

    fn text(bytes: &Option<Bytes>) -> Option<String> {
        bytes
            .as_ref()
            .map(|bytes| String::from_utf8(bytes.to_vec()).unwrap())
    }

    /// The last value written per key, tombstoned keys removed.
    fn final_values(
        pairs: impl Iterator<Item = (String, Option<String>)>,
    ) -> BTreeMap<String, String> {
        let mut values = BTreeMap::new();
        for (key, value) in pairs {
            match value {
                Some(value) => values.insert(key, value),
                None => values.remove(&key),
            };
        }
        values
    }

    /// Checks what the log returns against what was written: offsets
    /// strictly increase and batches do not overlap; every record is the one
    /// written at its offset; the final value per key is the last written;
    /// below `cleaned_below` a record survives only if no later write of its
    /// key lies below `cleaned_below`, and the last write of every key there
    /// survives unless it is a tombstone. Returns the records read.
    fn check_against_model(
        batches: &[(BatchHeader, Vec<BatchRecord>)],
        model: &Model,
        cleaned_below: i64,
    ) -> Vec<(i64, String, Option<String>)> {
        let mut previous_last_offset = -1;
        let mut read = Vec::new();
        for (header, records) in batches {
            assert!(header.base_offset > previous_last_offset, "batches overlap");
            previous_last_offset = header.last_offset();
            let mut previous_offset = header.base_offset - 1;
            for record in records {
                assert!(record.offset > previous_offset);
                assert!(record.offset <= header.last_offset());
                previous_offset = record.offset;
                let key = text(&record.key).unwrap();
                let value = text(&record.value);
                assert_eq!(
                    model.get(&record.offset),
                    Some(&(key.clone(), value.clone())),
                    "record at offset {}",
                    record.offset
                );
                read.push((record.offset, key, value));
            }
        }
        assert_eq!(
            final_values(
                read.iter()
                    .map(|(_, key, value)| (key.clone(), value.clone()))
            ),
            final_values(model.values().cloned()),
            "the latest value per key survives"
        );
        let mut last_write_below: HashMap<&str, i64> = HashMap::new();
        for (&offset, (key, _)) in model.range(..cleaned_below) {
            last_write_below.insert(key, offset);
        }
        for (offset, key, _) in read.iter().filter(|(offset, ..)| *offset < cleaned_below) {
            assert_eq!(
                last_write_below.get(key.as_str()),
                Some(offset),
                "offset {offset}: an older write of {key} survived"
            );
        }
        for (key, offset) in &last_write_below {
            let (_, value) = &model[offset];
            if value.is_some() {
                assert!(
                    read.iter().any(|(read_offset, ..)| read_offset == offset),
                    "the last write of {key} at {offset} was removed"
                );
            }
        }
        read
    }

    fn leftover_compaction_files(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".cleaned") || name.ends_with(".swap"))
            .collect()
    }

    fn active_base_offset(log: &Log) -> i64 {
        log.active_base_offset_for_tests()
    }

    /// Waits until everything appended is written and synced, so the writer
    /// has finished every roll (a rolled segment's files are complete once
    /// it is durable) and all closed segments can be compacted.
    async fn settle(log: &Log) {
        let log_end_offset = log.log_end_offset();
        assert_eq!(log.flush(true).await.unwrap(), log_end_offset);
    }

    /// Goal: the throttle sleeps what brings an interval's bytes down to
    /// the bound, as Kafka's throttler, and never for no bound, NaN, a
    /// negative or infinite one. Method: the pause for given figures.
    #[test]
    fn the_throttle_pauses_to_the_bound() {
        let second = std::time::Duration::from_secs(1);
        assert_eq!(
            Throttle::pause(1000.0, 2000.0, second / 2),
            Some(std::time::Duration::from_millis(1500))
        );
        assert_eq!(Throttle::pause(1000.0, 400.0, second / 2), None);
        for unbounded in [f64::MAX, f64::INFINITY, f64::NAN, -1.0] {
            assert_eq!(
                Throttle::pause(unbounded, 1e12, second),
                None,
                "{unbounded}"
            );
        }
        assert_eq!(
            Throttle::pause(1e-300, 1e300, second),
            Some(std::time::Duration::MAX - second)
        );
    }

    /// Goal: many updates of few keys over tiny segments compact to the
    /// latest value per key, offsets unchanged and increasing, the active
    /// segment untouched, adjacent small segments merged. Method: 120
    /// two-record batches over 7 keys in ~600-byte segments, with and
    /// without a tail cache; compare reads with the model, and the active
    /// segment's file bytes before and after.
    #[test]
    fn compaction_keeps_the_latest_value_per_key() {
        run_on_executor(|| async {
            for cache_bytes in [0, 1 << 20] {
                let (_root, dir) = temporary_log_dir();
                let config = small_config(cache_bytes);
                let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                    .await
                    .unwrap();
                let mut model = Model::new();
                append_updates(&log, &mut model, 120, 7, Compression::None).await;
                log.flush(true).await.unwrap();
                let segments_before = log.stats().segment_count;
                assert!(segments_before > 10);
                let active = active_base_offset(&log);
                let active_path = segment_file_path(&dir, active, LOG_FILE_EXTENSION);
                let active_before = log.read(active, i64::MAX, usize::MAX, true).await.unwrap();
                let log_end_offset = log.log_end_offset();

                let stats = log.compact(&compacting(), 10_000).await.unwrap();
                assert_eq!(stats.outcome, CompactionOutcome::Cleaned, "{stats:?}");
                assert_eq!(stats.first_dirty_offset, 0);
                assert_eq!(stats.first_uncleanable_offset, active);
                assert_eq!(stats.cleaned_up_to_offset, active);
                assert!(!stats.map_full);
                assert!(stats.keys_mapped <= 7);
                assert!(stats.records_retained <= 7, "{stats:?}");
                // Kafka groups segments by their sizes before cleaning: the
                // full ones of the first round stay one to one.
                assert_eq!(stats.segments_written, stats.segments_read, "{stats:?}");
                assert_eq!(log.stats().segment_count, segments_before);
                assert_eq!(log.log_end_offset(), log_end_offset);
                check_against_model(&read_all(&log).await, &model, active);

                // The next round, forced as nothing is dirty, merges the now
                // small segments.
                let mut request = CompactionRequest::new(10_000);
                assert_eq!(
                    log.compact(&compacting(), 10_000).await.unwrap().outcome,
                    CompactionOutcome::BelowDirtyRatio
                );
                request.force = true;
                let stats = log.compact_with(&compacting(), &request).await.unwrap();
                assert_eq!(stats.outcome, CompactionOutcome::Cleaned, "{stats:?}");
                assert_eq!(stats.dirty_ratio, 0.0);
                assert_eq!(stats.segments_written, 1, "{stats:?}");
                assert_eq!(log.stats().segment_count, 2);
                assert_eq!(log.log_start_offset(), 0);
                assert_eq!(active_base_offset(&log), active);

                let batches = read_all(&log).await;
                check_against_model(&batches, &model, active);
                let active_after = log.read(active, i64::MAX, usize::MAX, true).await.unwrap();
                assert_eq!(joined(&active_after), joined(&active_before));
                log.close().await.unwrap();
                let on_disk = std::fs::read(&active_path).unwrap();
                assert_eq!(
                    on_disk,
                    joined(&active_before),
                    "active segment file untouched"
                );
                assert!(leftover_compaction_files(&dir).is_empty());
                assert!(dir.join(CLEANER_OFFSET_CHECKPOINT_FILE).exists());
            }
        });
    }

    fn pairs(keys: &[&str], value: Option<&str>) -> Vec<(String, Option<String>)> {
        keys.iter()
            .map(|key| (key.to_string(), value.map(str::to_string)))
            .collect()
    }

    fn forced(now_ms: i64) -> CompactionRequest<'static> {
        CompactionRequest {
            force: true,
            ..CompactionRequest::new(now_ms)
        }
    }

    /// Goal: tombstones outlive the values they delete by
    /// delete.retention.ms counted from the compaction that first saw them
    /// (KIP-534's delete horizon), then go. Method: values, then tombstones
    /// for two keys, then more values; compact at T (horizon T + 1000 is
    /// stamped), again at T + 999 (kept) and at T + 1000 (removed).
    #[test]
    fn tombstones_are_removed_only_after_delete_retention() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(0), Uuid::new_v4())
                .await
                .unwrap();
            let mut model = Model::new();
            let keys = ["k0", "k1", "k2", "k3", "k4"];
            for round in 0..4 {
                let value = format!("value-{round}");
                append_keyed(
                    &log,
                    &mut model,
                    &pairs(&keys, Some(&value)),
                    1000 + round,
                    Compression::None,
                    -1,
                )
                .await;
            }
            append_keyed(
                &log,
                &mut model,
                &pairs(&["k0", "k1"], None),
                2000,
                Compression::None,
                -1,
            )
            .await;
            for round in 0..12 {
                let value = format!("later-{round}");
                append_keyed(
                    &log,
                    &mut model,
                    &pairs(&["k2", "k3"], Some(&value)),
                    3000 + round,
                    Compression::None,
                    -1,
                )
                .await;
            }
            let active = active_base_offset(&log);
            let config = CompactionConfig {
                delete_retention_ms: 1000,
                ..compacting()
            };
            let tombstones =
                |batches: &[(BatchHeader, Vec<BatchRecord>)]| -> Vec<(String, Option<i64>)> {
                    batches
                        .iter()
                        .flat_map(|(header, records)| {
                            records
                                .iter()
                                .filter(|record| record.value.is_none())
                                .map(|record| {
                                    (text(&record.key).unwrap(), delete_horizon_ms(header))
                                })
                        })
                        .collect()
                };

            let stats = log.compact(&config, 50_000).await.unwrap();
            assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
            assert_eq!(stats.tombstones_removed, 0);
            let batches = read_all(&log).await;
            check_against_model(&batches, &model, active);
            assert_eq!(
                tombstones(&batches),
                vec![
                    ("k0".to_string(), Some(51_000)),
                    ("k1".to_string(), Some(51_000))
                ]
            );

            let stats = log.compact_with(&config, &forced(50_999)).await.unwrap();
            assert_eq!(stats.tombstones_removed, 0);
            let batches = read_all(&log).await;
            check_against_model(&batches, &model, active);
            assert_eq!(tombstones(&batches).len(), 2, "the horizon has not passed");

            let stats = log.compact_with(&config, &forced(51_000)).await.unwrap();
            assert_eq!(stats.tombstones_removed, 2);
            let batches = read_all(&log).await;
            check_against_model(&batches, &model, active);
            assert!(tombstones(&batches).is_empty());
            let keys_left: Vec<String> = batches
                .iter()
                .flat_map(|(_, records)| records.iter().map(|record| text(&record.key).unwrap()))
                .collect();
            assert!(!keys_left.contains(&"k0".to_string()));
            assert!(keys_left.contains(&"k4".to_string()));
        });
    }

    /// Goal: a compacted (sparse) log reopens, cleanly and after a crash,
    /// to the same contents, its indexes and cleaner checkpoint intact, and
    /// appends continue at the log end. Method: compact, compare a full read
    /// and every single-batch read before and after each reopen; the dirty
    /// ratio after reopening shows the checkpoint survived.
    #[test]
    fn compacted_log_reopens_clean_and_unclean() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let config = small_config(0);
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let mut model = Model::new();
            append_updates(&log, &mut model, 80, 5, Compression::Gzip).await;
            let active = active_base_offset(&log);
            let stats = log.compact(&compacting(), 10_000).await.unwrap();
            assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
            let everything = |log: Log| async move {
                let all = joined(&log.read(0, i64::MAX, usize::MAX, true).await.unwrap());
                let mut singles = Vec::new();
                for offset in 0..log.log_end_offset() {
                    singles.push(joined(&log.read(offset, i64::MAX, 1, true).await.unwrap()));
                }
                (all, singles, log)
            };
            let (all, singles, log) = everything(log).await;
            log.close().await.unwrap();
            drop(log);

            let log = Log::open(&dir, config.clone(), true).await.unwrap();
            let (all_clean, singles_clean, log) = everything(log).await;
            assert_eq!(all_clean, all);
            assert_eq!(singles_clean, singles);
            let stats = log.compact(&compacting(), 10_000).await.unwrap();
            assert_eq!(stats.outcome, CompactionOutcome::BelowDirtyRatio);
            assert_eq!(stats.first_dirty_offset, active);
            log.flush(true).await.unwrap();
            log.crash_for_tests().await;

            let log = Log::open(&dir, config.clone(), false).await.unwrap();
            let (all_unclean, singles_unclean, log) = everything(log).await;
            assert_eq!(all_unclean, all);
            assert_eq!(singles_unclean, singles);
            check_against_model(&read_all(&log).await, &model, active);
            append_updates(&log, &mut model, 40, 5, Compression::Gzip).await;
            assert_eq!(log.log_end_offset(), *model.keys().last().unwrap() + 1);
            let stats = log.compact(&compacting(), 10_000).await.unwrap();
            assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
            assert_eq!(stats.first_dirty_offset, active);
            let active = active_base_offset(&log);
            check_against_model(&read_all(&log).await, &model, active);
        });
    }

    /// A log of 100 updates to 6 keys, compacted once and flushed, so that
    /// a forced round merges every closed segment into one; with its model
    /// and the active segment's base offset.
    async fn log_ready_for_a_forced_round(
        dir: &Path,
        config: &crate::storage::LogConfig,
    ) -> (Log, Model, i64) {
        let log = Log::create(dir, config.clone(), Uuid::new_v4())
            .await
            .unwrap();
        let mut model = Model::new();
        append_updates(&log, &mut model, 100, 6, Compression::None).await;
        let active = active_base_offset(&log);
        log.compact(&compacting(), 10_000).await.unwrap();
        log.flush(true).await.unwrap();
        (log, model, active)
    }

    /// A forced compaction round of `log` that stops at `point`, which
    /// fails it.
    async fn forced_round_stopping_at(log: &Log, point: CrashPoint) {
        CRASH_POINT.with(|crash_point| crash_point.set(Some(point)));
        let stopped = log.compact_with(&compacting(), &forced(10_000)).await;
        CRASH_POINT.with(|crash_point| crash_point.set(None));
        match stopped {
            Err(error) => assert!(
                error.to_string().contains(&format!("{point:?}")),
                "stopped by {error}, not at {point:?}"
            ),
            Ok(stats) => panic!("not stopped at {point:?}: {stats:?}"),
        }
    }

    /// Goal: a crash at any step of a segment swap recovers to a consistent
    /// log: before the commit the old segments stay, after it the swap is
    /// completed; a later compaction finishes the job. Method: a compacted
    /// log whose next forced round merges every closed segment into one;
    /// that round stops at each crash point, the log "crashes" and reopens
    /// uncleanly; also stray `.cleaned` and index `.swap` files.
    #[test]
    fn crash_during_a_swap_recovers_to_a_consistent_log() {
        run_on_executor(|| async {
            for point in [
                CrashPoint::BeforeCommit,
                CrashPoint::AfterCommit,
                CrashPoint::AfterOldFilesRenamed,
            ] {
                let (_root, dir) = temporary_log_dir();
                let config = small_config(0);
                let (log, model, active) = log_ready_for_a_forced_round(&dir, &config).await;
                let segments_before = log.stats().segment_count;
                assert!(segments_before > 3);
                forced_round_stopping_at(&log, point).await;
                log.crash_for_tests().await;
                assert!(!leftover_compaction_files(&dir).is_empty(), "{point:?}");

                let log = Log::open(&dir, config.clone(), false).await.unwrap();
                assert!(leftover_compaction_files(&dir).is_empty(), "{point:?}");
                let expected_segments = match point {
                    CrashPoint::BeforeCommit => segments_before,
                    _ => 2,
                };
                assert_eq!(log.stats().segment_count, expected_segments, "{point:?}");
                check_against_model(&read_all(&log).await, &model, active);
                let stats = log
                    .compact_with(&compacting(), &forced(10_000))
                    .await
                    .unwrap();
                assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
                assert_eq!(log.stats().segment_count, 2);
                check_against_model(&read_all(&log).await, &model, active);
                log.close().await.unwrap();
                drop(log);

                // Files of a compaction that never committed are discarded.
                std::fs::write(dir.join("00000000000000000000.log.cleaned"), [7; 100]).unwrap();
                std::fs::write(dir.join("00000000000000000000.index.swap"), [7; 16]).unwrap();
                std::fs::write(dir.join("00000000000000000000.timeindex.cleaned"), [7; 12])
                    .unwrap();
                let log = Log::open(&dir, config.clone(), true).await.unwrap();
                assert!(leftover_compaction_files(&dir).is_empty());
                check_against_model(&read_all(&log).await, &model, active);
            }
        });
    }

    /// Goal: a compaction failing after its swap is in memory fails the log
    /// (appends refused) without holding its close or its deletion, and a
    /// restart's recovery finishes the swap. Method: a compaction stopped
    /// after the old files' renames, then an append, a close, a reopen and
    /// a delete.
    #[test]
    fn a_failure_after_the_swap_fails_the_log_and_close_and_delete_still_end() {
        run_on_executor(|| async {
            let (root, dir) = temporary_log_dir();
            let config = small_config(0);
            let (log, mut model, active) = log_ready_for_a_forced_round(&dir, &config).await;
            forced_round_stopping_at(&log, CrashPoint::AfterOldFilesRenamed).await;
            let (bytes, header) = crate::storage::test_support::batch(1, 1);
            assert!(log.append(bytes, &header, 0, 0).await.is_err());
            assert!(log.close().await.is_err());
            drop(log);

            let log = Log::open(&dir, config.clone(), false).await.unwrap();
            assert!(leftover_compaction_files(&dir).is_empty());
            check_against_model(&read_all(&log).await, &model, active);
            let (bytes, header) = crate::storage::test_support::batch(1, 1);
            log.append(bytes, &header, 0, 0).await.unwrap();

            // And a failed log is deleted too.
            append_updates(&log, &mut model, 100, 6, Compression::None).await;
            log.flush(true).await.unwrap();
            forced_round_stopping_at(&log, CrashPoint::AfterOldFilesRenamed).await;
            let renamed = log.delete().await.unwrap();
            crate::storage::remove_deleted_log_dir(renamed)
                .await
                .unwrap();
            assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
        });
    }

    /// Goal: a fetch at an offset compaction removed returns the next
    /// surviving batch (Kafka's behaviour), from files and from the tail
    /// cache, and ListOffsets by timestamp still works. Method: after
    /// compaction, read one batch at every offset and compare with the
    /// first stored batch ending at or after it.
    #[test]
    fn fetch_in_a_removed_range_returns_the_next_batch() {
        run_on_executor(|| async {
            for cache_bytes in [0, 1 << 20] {
                let (_root, dir) = temporary_log_dir();
                let log = Log::create(&dir, small_config(cache_bytes), Uuid::new_v4())
                    .await
                    .unwrap();
                let mut model = Model::new();
                append_updates(&log, &mut model, 90, 4, Compression::None).await;
                log.compact(&compacting(), 10_000).await.unwrap();
                let stored = whole_batches(log.read(0, i64::MAX, usize::MAX, true).await.unwrap());
                assert!(stored.len() < 90, "compaction removed batches");
                let mut gaps = 0;
                for offset in 0..log.log_end_offset() {
                    let read = whole_batches(log.read(offset, i64::MAX, 1, true).await.unwrap());
                    let expected = stored
                        .iter()
                        .find(|(header, _)| header.last_offset() >= offset)
                        .unwrap();
                    assert_eq!(read.len(), 1, "offset {offset}");
                    assert_eq!(read[0].1, expected.1, "offset {offset}");
                    if expected.0.base_offset > offset {
                        gaps += 1;
                    }
                    let more = whole_batches(log.read(offset, i64::MAX, 400, true).await.unwrap());
                    assert_eq!(more[0].1, expected.1, "offset {offset}");
                }
                assert!(gaps > 100, "most offsets were removed ({gaps} gaps)");
                let first = &stored[0].0;
                let found = log.offset_for_timestamp(0).await.unwrap().unwrap();
                assert!(found.0 >= first.base_offset && found.0 <= first.last_offset());
            }
        });
    }

    /// Goal: compressed batches compact correctly: surviving records are
    /// re-encoded with the batch's own codec. Method: alternate gzip and
    /// zstd batches, compact, check the model and each batch's codec.
    #[test]
    fn compressed_batches_compact_with_their_codec() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(0), Uuid::new_v4())
                .await
                .unwrap();
            let mut model = Model::new();
            let mut codecs = HashMap::new();
            for index in 0..60 {
                let compression = if index % 2 == 0 {
                    Compression::Gzip
                } else {
                    Compression::Zstd
                };
                codecs.insert(log.log_end_offset(), compression as i16);
                let records: Vec<(String, Option<String>)> = [index % 5, (index + 2) % 7]
                    .iter()
                    .map(|key| (format!("key-{key}"), Some(format!("value-{index}"))))
                    .collect();
                append_keyed(
                    &log,
                    &mut model,
                    &records,
                    1000 + index as i64,
                    compression,
                    -1,
                )
                .await;
            }
            let active = active_base_offset(&log);
            let stats = log.compact(&compacting(), 10_000).await.unwrap();
            assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
            let batches = read_all(&log).await;
            check_against_model(&batches, &model, active);
            let mut rewritten = 0;
            for (header, records) in &batches {
                assert_eq!(header.compression(), codecs[&header.base_offset]);
                if (records.len() as i32) < header.last_offset_delta + 1 {
                    rewritten += 1;
                }
            }
            assert!(rewritten > 0, "some batches lost records and were rebuilt");
        });
    }

    /// Goal: the last batch of an idempotent producer stays (as an empty
    /// batch) when all its records are superseded, unless the caller's
    /// producer state says the producer is gone; an ordinary emptied batch
    /// is dropped. Method: producer 7 writes one batch, later writes
    /// supersede it; compact with tracked, empty and matching producer state.
    #[test]
    fn last_batch_of_a_producer_is_kept_empty() {
        run_on_executor(|| async {
            for (active_producers, kept) in [
                (None, true),
                (Some(HashMap::new()), false),
                (Some(HashMap::from([(7, 1)])), true),
            ] {
                let (_root, dir) = temporary_log_dir();
                let log = Log::create(&dir, small_config(0), Uuid::new_v4())
                    .await
                    .unwrap();
                let mut model = Model::new();
                append_keyed(
                    &log,
                    &mut model,
                    &pairs(&["a", "b"], Some("old")),
                    1000,
                    Compression::None,
                    7,
                )
                .await;
                append_keyed(
                    &log,
                    &mut model,
                    &pairs(&["c", "d"], Some("old")),
                    1000,
                    Compression::None,
                    -1,
                )
                .await;
                for round in 0..12 {
                    let value = format!("new-{round}");
                    append_keyed(
                        &log,
                        &mut model,
                        &pairs(&["a", "b", "c", "d"], Some(&value)),
                        2000,
                        Compression::None,
                        -1,
                    )
                    .await;
                }
                let request = CompactionRequest {
                    active_producers: active_producers.as_ref(),
                    ..CompactionRequest::new(10_000)
                };
                let stats = log.compact_with(&compacting(), &request).await.unwrap();
                assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
                let batches = read_all(&log).await;
                check_against_model(&batches, &model, active_base_offset(&log));
                let first = &batches[0].0;
                if kept {
                    assert_eq!((first.base_offset, first.last_offset()), (0, 1));
                    assert_eq!(first.record_count, 0);
                    assert_eq!(first.producer_id, 7);
                    assert_eq!(first.total_bytes(), 61);
                } else {
                    assert!(first.base_offset > 3, "both first batches were dropped");
                }
                assert!(batches.iter().all(|(header, _)| header.base_offset != 2));
            }
        });
    }

    /// Goal: a full offset map cleans only up to where it filled, and later
    /// rounds go on from there until the log is clean. Method: the smallest
    /// map (115 keys) over 150 keys written twice.
    #[test]
    fn full_offset_map_cleans_up_to_where_it_filled() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let mut config = small_config(0);
            config.segment_bytes = 2000;
            let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
            let mut model = Model::new();
            for round in 0..2 {
                for key in (0..150).step_by(3) {
                    let records: Vec<(String, Option<String>)> = (key..key + 3)
                        .map(|key| (format!("key-{key}"), Some(format!("round-{round}"))))
                        .collect();
                    append_keyed(&log, &mut model, &records, 1000, Compression::None, -1).await;
                }
            }
            let active = active_base_offset(&log);
            let config = CompactionConfig {
                dedupe_buffer_bytes: 4096,
                ..compacting()
            };
            let stats = log.compact(&config, 10_000).await.unwrap();
            assert!(stats.map_full);
            assert_eq!(stats.keys_mapped, 115);
            assert!(stats.cleaned_up_to_offset < active);
            check_against_model(&read_all(&log).await, &model, stats.cleaned_up_to_offset);
            let mut rounds = 1;
            let mut cleaned_up_to = stats.cleaned_up_to_offset;
            while cleaned_up_to < active {
                let stats = log.compact_with(&config, &forced(10_000)).await.unwrap();
                assert!(stats.cleaned_up_to_offset > cleaned_up_to);
                cleaned_up_to = stats.cleaned_up_to_offset;
                check_against_model(&read_all(&log).await, &model, cleaned_up_to);
                rounds += 1;
                assert!(rounds < 10);
            }
        });
    }

    /// Goal: segments holding records younger than min.compaction.lag.ms
    /// are not cleaned. Method: timestamps one apart, a lag covering the
    /// last forty.
    #[test]
    fn min_compaction_lag_keeps_young_segments() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(0), Uuid::new_v4())
                .await
                .unwrap();
            let mut model = Model::new();
            append_updates(&log, &mut model, 100, 3, Compression::None).await;
            let config = CompactionConfig {
                min_compaction_lag_ms: 40,
                ..compacting()
            };
            let stats = log.compact(&config, 1100).await.unwrap();
            assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
            let young_offset = *model.keys().nth(2 * 60).unwrap();
            assert!(stats.first_uncleanable_offset <= young_offset + 1);
            assert!(stats.first_uncleanable_offset < active_base_offset(&log));
            let batches = read_all(&log).await;
            check_against_model(&batches, &model, stats.first_uncleanable_offset);
            let untouched = model.range(stats.first_uncleanable_offset..).count();
            let read_above: usize = batches
                .iter()
                .flat_map(|(_, records)| records)
                .filter(|record| record.offset >= stats.first_uncleanable_offset)
                .count();
            assert_eq!(read_above, untouched);
        });
    }

    /// Goal: Kafka's range rules: the checkpoint is reset when outside the
    /// log, the uncleanable offset is rounded down to a segment base, and
    /// grouping respects sizes. Method: pure calls on made-up segments.
    #[test]
    fn cleanable_range_and_grouping_follow_kafka() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            std::fs::create_dir_all(&dir).unwrap();
            let file = Rc::new(
                glommio::io::DmaFile::create(dir.join("scratch"))
                    .await
                    .unwrap(),
            );
            let segment = |base_offset, size_bytes, max_timestamp| SegmentSnapshot {
                base_offset,
                size_bytes,
                max_timestamp,
                first_batch_timestamp: max_timestamp,
                offset_index_entries: 1,
                time_index_entries: 1,
                file: file.clone(),
            };
            let segments = vec![
                segment(0, 100, 10),
                segment(10, 100, 20),
                segment(20, 100, 30),
            ];
            let config = compacting();
            let request = CompactionRequest::new(1000);
            let range = cleanable_range(&dir, &segments, 0, 40, 30, Some(10), &config, &request);
            assert_eq!(range.first_dirty_offset, 10);
            assert_eq!(range.first_uncleanable_offset, 30);
            assert_eq!((range.clean_bytes, range.cleanable_bytes), (100, 200));
            let range = cleanable_range(&dir, &segments, 0, 40, 30, Some(99), &config, &request);
            assert_eq!(range.first_dirty_offset, 0, "reset past the log end");
            let bounded = CompactionRequest {
                clean_below_offset: 15,
                ..CompactionRequest::new(1000)
            };
            let range = cleanable_range(&dir, &segments, 0, 40, 30, None, &config, &bounded);
            assert_eq!(range.first_uncleanable_offset, 10);
            assert_eq!(range.segment_count, 1);
            let lagging = CompactionConfig {
                min_compaction_lag_ms: 985,
                ..compacting()
            };
            let range = cleanable_range(&dir, &segments, 0, 40, 30, None, &lagging, &request);
            assert_eq!(range.first_uncleanable_offset, 10);
            // max.compaction.lag.ms: overdue once the oldest dirty segment's
            // first batch (from the one holding the first dirty offset on)
            // is older than the lag.
            let overdue = |max_compaction_lag_ms, first_dirty| {
                let config = CompactionConfig {
                    max_compaction_lag_ms,
                    ..compacting()
                };
                compaction_overdue(&segments, first_dirty, &config, 1000)
            };
            assert!(!overdue(i64::MAX, 0));
            assert!(overdue(989, 0), "segment 0 began at 10, 990 ms ago");
            assert!(!overdue(990, 0));
            assert!(!overdue(985, 10), "segment 10 began at 20");
            assert!(overdue(979, 15), "offset 15 is in segment 10");
            assert!(!overdue(980, 15));
            assert!(!overdue(975, 25));
            assert!(overdue(969, 25));
            assert_eq!(
                group_segments_by_size(&segments, 250, 1000, 30),
                vec![0..2, 2..3]
            );
            assert_eq!(
                group_segments_by_size(&segments, 300, 24, 30),
                vec![0..2, 2..3]
            );
            assert_eq!(
                group_segments_by_size(&segments, 300, 16, 30),
                vec![0..1, 1..2, 2..3]
            );
            assert_eq!(
                group_segments_by_size(&segments, 99, 1000, 30),
                vec![0..1, 1..2, 2..3]
            );
        });
    }

    /// Goal: appends and reads go on while a compaction runs, and `close`
    /// waits for it. Method: one task compacts a large log while another
    /// appends and reads the head; then a second compaction is started and
    /// the log closed under it: close returns only after it, and no
    /// compaction file is left behind.
    #[test]
    fn appends_and_reads_continue_during_compaction() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let log = Log::create(&dir, small_config(4096), Uuid::new_v4())
                .await
                .unwrap();
            let mut model = Model::new();
            append_updates(&log, &mut model, 150, 9, Compression::Lz4).await;
            let active = active_base_offset(&log);
            let compaction = {
                let log = log.clone();
                glommio::spawn_local(
                    async move { log.compact(&compacting(), 10_000).await.unwrap() },
                )
            };
            let mut reads = 0;
            for _ in 0..30 {
                append_updates(&log, &mut model, 1, 9, Compression::Lz4).await;
                let result = log.read(0, i64::MAX, 2000, true).await.unwrap();
                assert!(!result.batches.is_empty());
                reads += 1;
            }
            let stats = compaction.await;
            assert_eq!(stats.outcome, CompactionOutcome::Cleaned);
            assert_eq!(reads, 30);
            check_against_model(&read_all(&log).await, &model, active);
            assert!(matches!(
                log.compact_with(&compacting(), &forced(10_000)).await,
                Ok(CompactionStats {
                    outcome: CompactionOutcome::Cleaned,
                    ..
                })
            ));

            let active = active_base_offset(&log);
            check_against_model(&read_all(&log).await, &model, active);

            let compaction = {
                let log = log.clone();
                glommio::spawn_local(async move {
                    log.compact_with(&compacting(), &forced(10_000)).await
                })
            };
            glommio::yield_if_needed().await;
            glommio::executor().yield_now().await;
            log.close().await.unwrap();
            let outcome = compaction.await;
            assert!(
                matches!(outcome, Ok(_) | Err(StorageError::Closed { .. })),
                "{outcome:?}"
            );
            assert!(leftover_compaction_files(&dir).is_empty());
            assert!(matches!(
                log.compact(&compacting(), 10_000).await,
                Err(StorageError::Closed { .. })
            ));
            drop(log);
            let log = Log::open(&dir, small_config(0), true).await.unwrap();
            check_against_model(&read_all(&log).await, &model, active);
        });
    }
}
