//! Opening an existing partition directory: listing segments, loading and
//! checking their indexes, and after an unclean shutdown scanning the tail
//! and truncating it at the first torn or corrupt batch.
//!
//! The rules, in order:
//!
//! - First the files of deleted segments (`.deleted`: retention,
//!   DeleteRecords or compaction renamed them, and their
//!   `file.delete.delay.ms` had not passed or their removal was
//!   interrupted) are removed, as Kafka's `LogLoader` removes them.
//! - Then an interrupted compaction is finished or discarded, as Kafka's
//!   `LogLoader` does: `.cleaned` files were never committed and are
//!   deleted; a `NNN.log.swap` was committed (it is fully written and synced
//!   before it gets that name), so every segment file whose base offset lies
//!   in `[NNN, end of the swap's last batch)` is deleted and the swap is
//!   renamed over the segment it replaces; the indexes of a swapped segment
//!   are rebuilt unless their own `.swap` files came with it. Index `.swap`
//!   files without a `.log.swap` are uncommitted and deleted.
//! - Segments are the `NNNNNNNNNNNNNNNNNNNN.log` files, in base-offset order.
//!   Offsets only have to increase: compaction leaves gaps inside and
//!   between segments, and a segment's first batch may start after its base
//!   offset. A segment that starts below the end of the previous one
//!   overlaps it; it and every one after it are garbage and are deleted.
//! - A closed segment (and, after a clean shutdown, the active one too) keeps
//!   its indexes when they pass the checks: whole entries, ascending,
//!   positions inside the file, the first and last offset-index entries
//!   pointing at batches that end at their offsets, and the batches after the
//!   last entry all valid (CRC included) up to exactly the end of the file.
//!   Checking every entry would cost one read per entry, so the middle ones
//!   are trusted, like Kafka's own sanity check does. Otherwise the segment is
//!   scanned from its start and its indexes rebuilt.
//! - After an unclean shutdown the active segment is always scanned from its
//!   start: every batch must parse, pass its CRC and start above the end of
//!   the previous one.
//!   The file is cut at the first one that does not (torn write, zero padding
//!   of an O_DIRECT block, garbage). A closed segment cut this way becomes
//!   the last one and the segments after it are garbage.
//!
//! Runs once per log on the partition's shard, before the log serves; long
//! scans yield to the executor.

use std::{
    path::{Path, PathBuf},
    rc::Rc,
};

use glommio::io::{DmaFile, OpenOptions};
use tracing::{info, warn};
use uuid::Uuid;

use super::{
    checkpoint::{
        decode_leader_epoch_checkpoint, decode_offset_checkpoint, decode_partition_metadata,
        encode_leader_epoch_checkpoint, read_file_if_exists, remove_file_if_exists, run_blocking,
        sync_directory, truncate_epochs_from_start, write_file_atomically, write_file_synced,
        write_offset_checkpoint, EpochEntry, CLEANER_OFFSET_CHECKPOINT_FILE,
        LEADER_EPOCH_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE, PARTITION_METADATA_FILE,
    },
    error::StorageError,
    index::{OffsetIndex, TimeIndex, OFFSET_INDEX_ENTRY_BYTES, TIME_INDEX_ENTRY_BYTES},
    log::LogConfig,
    segment::{
        create_segment_file, ensure_iopoll_probed, parse_segment_file_name, segment_file_path,
        ScanStep, Segment, SegmentScanner, INDEX_FILE_EXTENSION, LOG_FILE_EXTENSION, NO_TIMESTAMP,
        TIME_INDEX_FILE_EXTENSION,
    },
};
use crate::protocol::record_batch::{validate_batch, BatchHeader};

/// Suffix of a compacted segment's files while they are written
/// (uncommitted).
pub const CLEANED_FILE_SUFFIX: &str = "cleaned";
/// Suffix of a compacted segment's files once committed, until they replace
/// the segments they were cleaned from.
pub const SWAP_FILE_SUFFIX: &str = "swap";
/// Suffix Kafka gives segment files scheduled for deletion.
pub const DELETED_FILE_SUFFIX: &str = "deleted";

/// Bytes read per DMA read while scanning a segment.
const RECOVERY_CHUNK_BYTES: usize = 1 << 20;
/// Bytes read to check one index entry.
const ENTRY_CHECK_CHUNK_BYTES: usize = 4096;

/// What recovery hands to the log.
#[derive(Debug)]
pub struct RecoveredLog {
    /// Segments in offset order, each with its file open.
    pub segments: Vec<Segment>,
    /// From `partition.metadata`, when present.
    pub topic_id: Option<Uuid>,
    /// From `leader-epoch-checkpoint`, cut at the log end.
    pub leader_epochs: Vec<EpochEntry>,
    /// From `cleaner-offset-checkpoint`, when present and readable.
    pub cleaner_checkpoint: Option<i64>,
    /// From `log-start-offset-checkpoint` (DeleteRecords), at most the log
    /// end; 0 when absent.
    pub start_floor: i64,
    /// `Some(from_offset)` of the [`ScanReplay`] when it saw every batch of
    /// the recovered log from that offset to the log end: the active
    /// segment was scanned and begins at or below it, or is the only one.
    pub replayed_from: Option<i64>,
}

/// Batches the scan of the active segment after an unclean shutdown hands
/// on, so whoever rebuilds state from them need not read the segment again.
pub struct ScanReplay<'a> {
    /// The first offset wanted: batches whose base offset is below it are
    /// not handed on.
    pub from_offset: i64,
    /// Called with each batch that passed its checks, header and whole
    /// bytes, in log order. A batch handed on is kept: the file is only
    /// ever cut after the last one.
    pub visit: &'a mut dyn FnMut(&BatchHeader, &[u8]),
}

/// Result of scanning one segment from its start.
struct SegmentScan {
    segment: Segment,
    valid_bytes: u64,
    /// Why the scan stopped before the end of the file, if it did.
    stopped_by: Option<String>,
}

/// Opens and recovers the log in `dir`; see the module comment for the rules.
/// With `expected_topic_id`, a directory whose `partition.metadata` names
/// another topic id or none is refused before anything in it is changed.
///
/// # Errors
/// I/O errors, [`StorageError::MalformedMetadata`] for unreadable
/// `partition.metadata` or `leader-epoch-checkpoint` files, and
/// [`StorageError::ForeignLogDir`].
pub async fn recover_log(
    dir: &Path,
    config: &LogConfig,
    clean_shutdown: bool,
    now_ms: i64,
    replay: Option<ScanReplay<'_>>,
    expected_topic_id: Option<Uuid>,
) -> Result<RecoveredLog, StorageError> {
    let topic_id = read_partition_metadata(dir).await?;
    if let Some(expected) = expected_topic_id {
        if topic_id != Some(expected) {
            let reason = match topic_id {
                Some(other) => format!(
                    "partition.metadata names topic id {other}, the metadata's is {expected}"
                ),
                None => "no partition.metadata".to_string(),
            };
            return Err(StorageError::ForeignLogDir {
                dir: dir.to_path_buf(),
                reason,
            });
        }
    }
    ensure_iopoll_probed(dir).await?;
    finish_interrupted_swaps(dir).await?;
    let base_offsets = list_segment_base_offsets(dir).await?;
    let mut leader_epochs = read_leader_epochs(dir).await?;
    let mut segments: Vec<Segment> = Vec::new();
    let mut replayed_from = None;
    if base_offsets.is_empty() {
        warn!(dir = %dir.display(), "no segment files; starting an empty log at offset 0");
        let mut segment = Segment::new(0, now_ms, config.segment_index_bytes);
        let initial_bytes = config.segment_settings().initial_file_bytes();
        segment.file = Some(create_segment_file(dir, 0, initial_bytes).await?);
        segments.push(segment);
    } else {
        let garbage_from;
        (garbage_from, replayed_from) = recover_segments(
            dir,
            config,
            clean_shutdown,
            now_ms,
            &base_offsets,
            &mut segments,
            replay,
        )
        .await?;
        if let Some(first_garbage) = garbage_from {
            for &base_offset in &base_offsets[first_garbage..] {
                warn!(
                    dir = %dir.display(),
                    base_offset,
                    "deleting segment that lies after the end of the valid log"
                );
                for extension in [
                    LOG_FILE_EXTENSION,
                    INDEX_FILE_EXTENSION,
                    TIME_INDEX_FILE_EXTENSION,
                ] {
                    remove_file_if_exists(segment_file_path(dir, base_offset, extension)).await?;
                }
            }
            sync_directory(dir).await?;
        }
    }
    let log_end_offset = segments.last().map_or(0, |segment| segment.next_offset);
    let mut start_floor = read_start_floor(dir).await?;
    if start_floor > log_end_offset {
        // DeleteRecords syncs the log before it writes the start, so only a
        // damaged segment brings this: the log goes on from its end, and
        // the checkpoint says so, or a later start would hide the records
        // appended from here.
        warn!(
            dir = %dir.display(),
            start_floor,
            log_end_offset,
            "the log start DeleteRecords set is past the recovered log end; starting at the end"
        );
        start_floor = log_end_offset;
        write_offset_checkpoint(dir, LOG_START_OFFSET_CHECKPOINT_FILE, start_floor).await?;
    }
    let log_start_offset = segments
        .first()
        .map_or(0, |segment| segment.base_offset)
        .max(start_floor);
    let epoch_count = leader_epochs.len();
    leader_epochs.retain(|entry| entry.start_offset < log_end_offset);
    // Retention deletes segments before it rewrites the checkpoint (Kafka's
    // LogLoader cuts it at the log start too).
    let cut_at_start = truncate_epochs_from_start(&mut leader_epochs, log_start_offset);
    if leader_epochs.len() != epoch_count || cut_at_start {
        warn!(
            dir = %dir.display(),
            log_start_offset,
            log_end_offset,
            "cutting leader epoch entries to the log's offsets"
        );
        write_file_atomically(
            dir,
            LEADER_EPOCH_CHECKPOINT_FILE,
            encode_leader_epoch_checkpoint(&leader_epochs).into_bytes(),
        )
        .await?;
    }
    let cleaner_checkpoint = read_cleaner_checkpoint(dir).await?;
    Ok(RecoveredLog {
        segments,
        topic_id,
        leader_epochs,
        cleaner_checkpoint,
        start_floor,
        replayed_from,
    })
}

/// The log start in `log-start-offset-checkpoint`, 0 when the file is
/// missing. A damaged one is refused: ignoring it would bring deleted
/// records back.
async fn read_start_floor(dir: &Path) -> Result<i64, StorageError> {
    let path = dir.join(LOG_START_OFFSET_CHECKPOINT_FILE);
    let Some(bytes) = read_file_if_exists(path.clone()).await? else {
        return Ok(0);
    };
    match decode_offset_checkpoint(&String::from_utf8_lossy(&bytes)) {
        Ok(offset) => Ok(offset.unwrap_or(0).max(0)),
        Err(reason) => Err(StorageError::MalformedMetadata { path, reason }),
    }
}

/// The cleaner checkpoint, or `None` when it is missing. A damaged one is
/// only a lost hint (the next compaction cleans the whole log), so it is
/// logged and ignored rather than refused.
async fn read_cleaner_checkpoint(dir: &Path) -> Result<Option<i64>, StorageError> {
    let path = dir.join(CLEANER_OFFSET_CHECKPOINT_FILE);
    let Some(bytes) = read_file_if_exists(path.clone()).await? else {
        return Ok(None);
    };
    match decode_offset_checkpoint(&String::from_utf8_lossy(&bytes)) {
        Ok(offset) => Ok(offset),
        Err(reason) => {
            warn!(path = %path.display(), %reason, "ignoring malformed cleaner checkpoint");
            Ok(None)
        }
    }
}

/// A file name of the form `NNNNNNNNNNNNNNNNNNNN.<extension>[.<suffix>]`
/// split into its base offset, extension and suffix, for the extensions
/// compaction swaps (log, index, timeindex).
fn split_segment_file_name(name: &str) -> Option<(i64, &str, Option<&str>)> {
    split_any_segment_file_name(name).filter(|(_, extension, _)| {
        [
            LOG_FILE_EXTENSION,
            INDEX_FILE_EXTENSION,
            TIME_INDEX_FILE_EXTENSION,
        ]
        .contains(extension)
    })
}

/// `split_segment_file_name` for any extension.
fn split_any_segment_file_name(name: &str) -> Option<(i64, &str, Option<&str>)> {
    let (stem, rest) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let base_offset = stem.parse::<i64>().ok()?;
    let (extension, suffix) = match rest.split_once('.') {
        Some((extension, suffix)) => (extension, Some(suffix)),
        None => (rest, None),
    };
    Some((base_offset, extension, suffix))
}

/// `NNNNNNNNNNNNNNNNNNNN.<any extension>.deleted`: a file of a segment that
/// retention, DeleteRecords or compaction was deleting.
fn is_deleted_segment_file_name(name: &str) -> bool {
    split_any_segment_file_name(name)
        .is_some_and(|(_, _, suffix)| suffix == Some(DELETED_FILE_SUFFIX))
}

/// Removes the files of deleted segments (`.deleted`, left before their
/// `file.delete.delay.ms` passed or by an interrupted deletion), then
/// finishes or discards a compaction interrupted by a crash; see the module
/// comment. Kafka's `LogLoader.removeTempFilesAndCollectSwapFiles` and the
/// swap passes of `LogLoader.load`.
async fn finish_interrupted_swaps(dir: &Path) -> Result<(), StorageError> {
    let listed_dir = dir.to_path_buf();
    let names: Vec<String> = run_blocking(move || {
        let entries = std::fs::read_dir(&listed_dir)
            .map_err(|error| StorageError::io("listing", &listed_dir, error))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| StorageError::io("listing", &listed_dir, error))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok::<_, StorageError>(names)
    })
    .await?;
    let mut changed = false;
    let mut log_swaps = Vec::new();
    let mut index_swaps = Vec::new();
    for name in &names {
        if is_deleted_segment_file_name(name) {
            info!(dir = %dir.display(), file = %name, "removing a deleted segment's file (its file.delete.delay.ms had not passed, or its deletion was interrupted)");
            remove_file_if_exists(dir.join(name)).await?;
            changed = true;
            continue;
        }
        let Some((base_offset, extension, suffix)) = split_segment_file_name(name) else {
            continue;
        };
        match suffix {
            Some(CLEANED_FILE_SUFFIX) => {
                warn!(dir = %dir.display(), file = %name, "deleting a file left by an interrupted compaction");
                remove_file_if_exists(dir.join(name)).await?;
                changed = true;
            }
            Some(SWAP_FILE_SUFFIX) if extension == LOG_FILE_EXTENSION => {
                log_swaps.push(base_offset)
            }
            Some(SWAP_FILE_SUFFIX) => index_swaps.push((base_offset, extension)),
            _ => {}
        }
    }
    for &(base_offset, extension) in &index_swaps {
        if !log_swaps.contains(&base_offset) {
            let path = swap_file_path(dir, base_offset, extension);
            warn!(path = %path.display(), "deleting an uncommitted index swap file");
            remove_file_if_exists(path).await?;
            changed = true;
        }
    }
    if !log_swaps.is_empty() {
        let mut replaced_from = i64::MAX;
        let mut replaced_to = i64::MIN;
        for &base_offset in &log_swaps {
            let next_offset = swap_next_offset(dir, base_offset).await?;
            replaced_from = replaced_from.min(base_offset);
            replaced_to = replaced_to.max(next_offset);
        }
        for name in &names {
            let Some((base_offset, extension, None)) = split_segment_file_name(name) else {
                continue;
            };
            let replaced = base_offset >= replaced_from && base_offset < replaced_to;
            let stale_index = extension != LOG_FILE_EXTENSION && log_swaps.contains(&base_offset);
            if replaced || stale_index {
                warn!(dir = %dir.display(), file = %name, "deleting a segment file replaced by an interrupted compaction");
                remove_file_if_exists(dir.join(name)).await?;
            }
        }
        for &base_offset in &log_swaps {
            for extension in [
                INDEX_FILE_EXTENSION,
                TIME_INDEX_FILE_EXTENSION,
                LOG_FILE_EXTENSION,
            ] {
                if extension != LOG_FILE_EXTENSION
                    && !index_swaps.contains(&(base_offset, extension))
                {
                    continue;
                }
                let from = swap_file_path(dir, base_offset, extension);
                let to = segment_file_path(dir, base_offset, extension);
                warn!(path = %from.display(), "completing an interrupted compaction swap");
                rename_file(from, to).await?;
            }
        }
        changed = true;
    }
    if changed {
        sync_directory(dir).await?;
    }
    Ok(())
}

/// `<dir>/<base offset>.<extension>.swap`.
pub fn swap_file_path(dir: &Path, base_offset: i64, extension: &str) -> PathBuf {
    let mut path = segment_file_path(dir, base_offset, extension).into_os_string();
    path.push(".");
    path.push(SWAP_FILE_SUFFIX);
    PathBuf::from(path)
}

/// `<dir>/<base offset>.<extension>.cleaned`.
pub fn cleaned_file_path(dir: &Path, base_offset: i64, extension: &str) -> PathBuf {
    let mut path = segment_file_path(dir, base_offset, extension).into_os_string();
    path.push(".");
    path.push(CLEANED_FILE_SUFFIX);
    PathBuf::from(path)
}

/// `<dir>/<base offset>.<extension>.deleted` (the rename of retention,
/// DeleteRecords and compaction before removal; recovery removes such
/// files).
pub fn deleted_file_path(dir: &Path, base_offset: i64, extension: &str) -> PathBuf {
    let mut path = segment_file_path(dir, base_offset, extension).into_os_string();
    path.push(".");
    path.push(DELETED_FILE_SUFFIX);
    PathBuf::from(path)
}

/// Renames a file (replacing any file at `to`).
///
/// # Errors
/// The rename failure.
pub async fn rename_file(from: PathBuf, to: PathBuf) -> Result<(), StorageError> {
    run_blocking(move || {
        std::fs::rename(&from, &to).map_err(|error| StorageError::io("renaming", &from, error))
    })
    .await
}

/// The offset after the last batch of a `.log.swap` file (its base offset
/// when empty): Kafka's `readNextOffset` of the swap segment.
async fn swap_next_offset(dir: &Path, base_offset: i64) -> Result<i64, StorageError> {
    let path = swap_file_path(dir, base_offset, LOG_FILE_EXTENSION);
    let file = DmaFile::open(&path)
        .await
        .map_err(|error| StorageError::glommio("opening", &path, error))?;
    let file = Rc::new(file);
    let file_size = file
        .file_size()
        .await
        .map_err(|error| StorageError::glommio("stat of", &path, error))?;
    let mut scanner = SegmentScanner::new(
        file.clone(),
        path.clone(),
        0,
        file_size,
        RECOVERY_CHUNK_BYTES,
    );
    let mut next_offset = base_offset;
    loop {
        match scanner.peek().await? {
            ScanStep::Batch(header) => {
                next_offset = next_offset.max(header.last_offset() + 1);
                scanner.advance(header.total_bytes());
            }
            ScanStep::End => break,
            ScanStep::Invalid(error) => {
                // Cannot happen to a swap file (it is synced before it is
                // named so); the batches before the damage still bound the
                // range it replaces.
                warn!(path = %path.display(), %error, "swap file does not parse to its end");
                break;
            }
        }
        glommio::yield_if_needed().await;
    }
    drop(scanner);
    if let Ok(file) = Rc::try_unwrap(file) {
        file.close()
            .await
            .map_err(|error| StorageError::glommio("closing", &path, error))?;
    }
    Ok(next_offset)
}

/// Recovers each listed segment into `segments`; returns the index of the
/// first garbage segment, if any, and [`RecoveredLog::replayed_from`].
async fn recover_segments(
    dir: &Path,
    config: &LogConfig,
    clean_shutdown: bool,
    now_ms: i64,
    base_offsets: &[i64],
    segments: &mut Vec<Segment>,
    mut replay: Option<ScanReplay<'_>>,
) -> Result<(Option<usize>, Option<i64>), StorageError> {
    let last_index = base_offsets.len() - 1;
    let mut replayed_from = None;
    for (index, &base_offset) in base_offsets.iter().enumerate() {
        if let Some(previous) = segments.last() {
            if base_offset < previous.next_offset {
                warn!(
                    dir = %dir.display(),
                    base_offset,
                    previous_next_offset = previous.next_offset,
                    "segment overlaps the end of the previous one"
                );
                return Ok((Some(index), replayed_from));
            }
        }
        let is_last = index == last_index;
        let path = segment_file_path(dir, base_offset, LOG_FILE_EXTENSION);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .dma_open(&path)
            .await
            .map_err(|error| StorageError::glommio("opening", &path, error))?;
        let file = Rc::new(file);
        let file_size = file
            .file_size()
            .await
            .map_err(|error| StorageError::glommio("stat of", &path, error))?;
        let mut loaded = None;
        if clean_shutdown || !is_last {
            match load_segment(dir, &file, base_offset, file_size, config, now_ms).await? {
                Ok(segment) => loaded = Some(segment),
                Err(reason) => warn!(
                    path = %path.display(),
                    %reason,
                    "segment indexes or tail do not check out; rebuilding them by scanning the segment"
                ),
            }
        }
        let (mut segment, rebuilt, stopped_by) = match loaded {
            Some(segment) => (segment, false, None),
            None => {
                // Only the active segment's batches are handed on: the
                // replay wants the newest ones, and a closed segment
                // scanned here may be cut, making the ones after it garbage.
                // They cover the replay when it starts in this segment, or
                // when this segment is the whole log.
                let segment_replay = replay
                    .as_mut()
                    .filter(|replay| is_last && (index == 0 || replay.from_offset >= base_offset));
                if let Some(replay) = &segment_replay {
                    replayed_from = Some(replay.from_offset);
                }
                let scan = scan_segment(
                    &file,
                    &path,
                    base_offset,
                    file_size,
                    config,
                    now_ms,
                    segment_replay,
                )
                .await?;
                if scan.valid_bytes < file_size {
                    warn!(
                        path = %path.display(),
                        bytes_dropped = file_size - scan.valid_bytes,
                        valid_bytes = scan.valid_bytes,
                        reason = scan.stopped_by.as_deref().unwrap_or(""),
                        "truncating segment after its last valid batch"
                    );
                    file.truncate(scan.valid_bytes)
                        .await
                        .map_err(|error| StorageError::glommio("truncating", &path, error))?;
                }
                (scan.segment, true, scan.stopped_by)
            }
        };
        if is_last || stopped_by.is_some() {
            // The active segment: make what recovery kept (and cut) durable
            // before the log reports it as synced.
            file.fdatasync()
                .await
                .map_err(|error| StorageError::glommio("fdatasync", &path, error))?;
        } else if rebuilt {
            // A closed segment's time index ends with its maximum, as the
            // roll that closed it wrote it.
            segment.seal_time_index();
            write_segment_indexes(dir, &segment).await?;
        }
        segment.file = Some(file);
        segment.files_complete = !is_last && stopped_by.is_none();
        segments.push(segment);
        if stopped_by.is_some() && !is_last {
            return Ok((Some(index + 1), replayed_from));
        }
    }
    Ok((None, replayed_from))
}

/// Writes a segment's `.index` and `.timeindex` and fdatasyncs them.
///
/// # Errors
/// Write failures.
pub async fn write_segment_indexes(dir: &Path, segment: &Segment) -> Result<(), StorageError> {
    write_file_synced(
        segment_file_path(dir, segment.base_offset, INDEX_FILE_EXTENSION),
        segment.offset_index.encode(),
    )
    .await?;
    write_file_synced(
        segment_file_path(dir, segment.base_offset, TIME_INDEX_FILE_EXTENSION),
        segment.time_index.encode(),
    )
    .await
}

/// Base offsets of the segment files in `dir`, ascending.
async fn list_segment_base_offsets(dir: &Path) -> Result<Vec<i64>, StorageError> {
    let dir = dir.to_path_buf();
    run_blocking(move || {
        let entries =
            std::fs::read_dir(&dir).map_err(|error| StorageError::io("listing", &dir, error))?;
        let mut base_offsets = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| StorageError::io("listing", &dir, error))?;
            if let Some(base_offset) = entry.file_name().to_str().and_then(parse_segment_file_name)
            {
                base_offsets.push(base_offset);
            }
        }
        base_offsets.sort_unstable();
        base_offsets.dedup();
        Ok(base_offsets)
    })
    .await
}

/// The topic id `dir`'s `partition.metadata` names; `None` when there is
/// no such file.
///
/// # Errors
/// The file cannot be read or does not parse.
async fn read_partition_metadata(dir: &Path) -> Result<Option<Uuid>, StorageError> {
    let path = dir.join(PARTITION_METADATA_FILE);
    let Some(bytes) = read_file_if_exists(path.clone()).await? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    decode_partition_metadata(&text)
        .map(Some)
        .map_err(|reason| StorageError::MalformedMetadata { path, reason })
}

async fn read_leader_epochs(dir: &Path) -> Result<Vec<EpochEntry>, StorageError> {
    let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
    let Some(bytes) = read_file_if_exists(path.clone()).await? else {
        return Ok(Vec::new());
    };
    let text = String::from_utf8_lossy(&bytes);
    decode_leader_epoch_checkpoint(&text)
        .map_err(|reason| StorageError::MalformedMetadata { path, reason })
}

/// Scans a segment from its start, validating every batch and rebuilding
/// its indexes; stops at the first batch that is torn, corrupt or starts
/// below the end of the one before it.
async fn scan_segment(
    file: &Rc<DmaFile>,
    path: &Path,
    base_offset: i64,
    file_size: u64,
    config: &LogConfig,
    now_ms: i64,
    mut replay: Option<&mut ScanReplay<'_>>,
) -> Result<SegmentScan, StorageError> {
    let mut segment = Segment::new(base_offset, now_ms, config.segment_index_bytes);
    let mut scanner = SegmentScanner::new(
        file.clone(),
        path.to_path_buf(),
        0,
        file_size,
        RECOVERY_CHUNK_BYTES,
    );
    let mut stopped_by = None;
    loop {
        let position = scanner.position();
        let header = match scanner.peek().await? {
            ScanStep::End => break,
            ScanStep::Invalid(error) => {
                stopped_by = Some(format!("batch at byte {position}: {error}"));
                break;
            }
            ScanStep::Batch(header) => header,
        };
        if header.base_offset < segment.next_offset {
            stopped_by = Some(format!(
                "batch at byte {position} has base offset {} below {}, the end of what precedes it",
                header.base_offset, segment.next_offset
            ));
            break;
        }
        let total_bytes = header.total_bytes();
        if position + total_bytes as u64 > u64::from(u32::MAX) {
            stopped_by = Some(format!("batch at byte {position} ends past 4 GiB"));
            break;
        }
        match scanner.batch_bytes(total_bytes).await? {
            None => {
                stopped_by = Some(format!("file ends inside the batch at byte {position}"));
                break;
            }
            Some(bytes) => {
                if let Err(error) = validate_batch(bytes) {
                    stopped_by = Some(format!("batch at byte {position}: {error}"));
                    break;
                }
                if let Some(replay) = replay.as_mut() {
                    if header.base_offset >= replay.from_offset {
                        (replay.visit)(&header, bytes);
                    }
                }
            }
        }
        segment.index_batch(position, &header, config.index_interval_bytes);
        scanner.advance(total_bytes);
        glommio::yield_if_needed().await;
    }
    Ok(SegmentScan {
        segment,
        valid_bytes: scanner.position(),
        stopped_by,
    })
}

/// Loads a segment whose indexes and size are trusted after the checks in
/// the module comment. The inner `Err` says why they are not.
async fn load_segment(
    dir: &Path,
    file: &Rc<DmaFile>,
    base_offset: i64,
    file_size: u64,
    config: &LogConfig,
    now_ms: i64,
) -> Result<Result<Segment, String>, StorageError> {
    let path = segment_file_path(dir, base_offset, LOG_FILE_EXTENSION);
    let index_bytes_max = config.segment_index_bytes as usize;
    let Some(offset_bytes) =
        read_file_if_exists(segment_file_path(dir, base_offset, INDEX_FILE_EXTENSION)).await?
    else {
        return Ok(Err("the .index file is missing".to_string()));
    };
    let Some(time_bytes) = read_file_if_exists(segment_file_path(
        dir,
        base_offset,
        TIME_INDEX_FILE_EXTENSION,
    ))
    .await?
    else {
        return Ok(Err("the .timeindex file is missing".to_string()));
    };
    let offset_index = match OffsetIndex::decode(
        base_offset,
        &offset_bytes,
        index_bytes_max / OFFSET_INDEX_ENTRY_BYTES,
        file_size,
    ) {
        Ok(index) => index,
        Err(reason) => return Ok(Err(format!(".index: {reason}"))),
    };
    let time_index = match TimeIndex::decode(
        base_offset,
        &time_bytes,
        index_bytes_max / TIME_INDEX_ENTRY_BYTES,
    ) {
        Ok(index) => index,
        Err(reason) => return Ok(Err(format!(".timeindex: {reason}"))),
    };
    for entry in [offset_index.first(), offset_index.last()]
        .into_iter()
        .flatten()
    {
        let mut scanner = SegmentScanner::new(
            file.clone(),
            path.clone(),
            u64::from(entry.position),
            file_size,
            ENTRY_CHECK_CHUNK_BYTES,
        );
        match scanner.peek().await? {
            ScanStep::Batch(header) if header.last_offset() == entry.offset => {}
            ScanStep::Batch(header) => {
                return Ok(Err(format!(
                    ".index entry for offset {} points at the batch {}..={}",
                    entry.offset,
                    header.base_offset,
                    header.last_offset()
                )))
            }
            _ => {
                return Ok(Err(format!(
                    ".index entry for offset {} points at byte {} where no batch starts",
                    entry.offset, entry.position
                )))
            }
        }
    }

    // Validate everything after the last index entry, to exactly the end.
    let tail_start = offset_index
        .last()
        .map_or(0, |entry| u64::from(entry.position));
    let mut scanner = SegmentScanner::new(
        file.clone(),
        path.clone(),
        tail_start,
        file_size,
        RECOVERY_CHUNK_BYTES,
    );
    // Offsets must increase from batch to batch, gaps allowed (compaction).
    let mut offset_min = base_offset;
    let mut next_offset = base_offset;
    let mut tail_max_timestamp = NO_TIMESTAMP;
    let mut tail_max_timestamp_offset = base_offset;
    let mut first_batch_timestamp = None;
    loop {
        let position = scanner.position();
        let header = match scanner.peek().await? {
            ScanStep::End => break,
            ScanStep::Invalid(error) => {
                return Ok(Err(format!("batch at byte {position}: {error}")))
            }
            ScanStep::Batch(header) => header,
        };
        if header.base_offset < offset_min {
            return Ok(Err(format!(
                "batch at byte {position} has base offset {} below {offset_min}",
                header.base_offset
            )));
        }
        let total_bytes = header.total_bytes();
        match scanner.batch_bytes(total_bytes).await? {
            None => {
                return Ok(Err(format!(
                    "file ends inside the batch at byte {position}"
                )))
            }
            Some(bytes) => {
                if let Err(error) = validate_batch(bytes) {
                    return Ok(Err(format!("batch at byte {position}: {error}")));
                }
            }
        }
        if position == 0 {
            first_batch_timestamp = Some(header.max_timestamp);
        }
        if header.max_timestamp > tail_max_timestamp {
            tail_max_timestamp = header.max_timestamp;
            tail_max_timestamp_offset = header.last_offset();
        }
        next_offset = header.last_offset() + 1;
        offset_min = next_offset;
        scanner.advance(total_bytes);
        glommio::yield_if_needed().await;
    }
    if let Some(last) = time_index.last() {
        if last.offset >= next_offset || last.offset < base_offset {
            return Ok(Err(format!(
                ".timeindex entry for offset {} lies outside the segment's offsets {base_offset}..{next_offset}",
                last.offset
            )));
        }
    }
    if first_batch_timestamp.is_none() && file_size > 0 {
        let mut scanner = SegmentScanner::new(
            file.clone(),
            path.clone(),
            0,
            file_size,
            ENTRY_CHECK_CHUNK_BYTES,
        );
        match scanner.peek().await? {
            ScanStep::Batch(header) if header.base_offset >= base_offset => {
                first_batch_timestamp = Some(header.max_timestamp);
            }
            _ => return Ok(Err("no batch at the start of the segment".to_string())),
        }
    }

    let mut segment = Segment::new(base_offset, now_ms, config.segment_index_bytes);
    segment.size_bytes = file_size;
    segment.next_offset = next_offset;
    segment.bytes_since_index_entry = file_size - tail_start;
    if let Some(last) = time_index.last() {
        segment.max_timestamp = last.timestamp;
        segment.max_timestamp_offset = last.offset;
    }
    if tail_max_timestamp > segment.max_timestamp {
        segment.max_timestamp = tail_max_timestamp;
        segment.max_timestamp_offset = tail_max_timestamp_offset;
    }
    segment.first_batch_timestamp = first_batch_timestamp;
    segment.offset_index = offset_index;
    segment.time_index = time_index;
    Ok(Ok(segment))
}

#[cfg(test)]
mod tests {
    use std::{
        io::{Seek, SeekFrom, Write},
        path::PathBuf,
    };

    use uuid::Uuid;

    use crate::storage::{
        run_on_executor,
        test_support::{batch, joined, small_config},
        Log, LogConfig,
    };

    fn temporary_log_dir() -> (tempfile::TempDir, PathBuf) {
        let root = match tempfile::tempdir() {
            Ok(root) => root,
            Err(error) => panic!("cannot create a temporary directory: {error}"),
        };
        let dir = root.path().join("orders-3");
        (root, dir)
    }

    /// Appends `count` three-record batches; returns the stored bytes of each.
    async fn append_batches(log: &Log, count: usize) -> Vec<Vec<u8>> {
        let mut stored = Vec::new();
        for index in 0..count {
            let (bytes, header) = batch(3, 1000 + index as i64);
            let info = log.append(bytes.clone(), &header, 0, 0).await.unwrap();
            let mut expected = bytes.to_vec();
            crate::protocol::record_batch::stamp_header(&mut expected, info.base_offset, 0);
            stored.push(expected);
        }
        stored
    }

    fn one_segment_config() -> LogConfig {
        let mut config = small_config(0);
        config.segment_bytes = 1 << 20;
        config
    }

    #[derive(Debug, Clone, Copy)]
    enum Damage {
        TornMidBatch,
        GarbageAppended,
        FlippedPayloadBit,
        ZeroPaddingOnly,
    }

    /// Goal: after a crash, reopening keeps exactly the valid prefix of the
    /// active segment and appends continue right after it. Method: a synced
    /// but unclosed log (so its file ends with O_DIRECT zero padding), then
    /// each kind of damage to its tail, then an unclean reopen.
    #[test]
    fn unclean_reopen_truncates_to_the_valid_prefix() {
        run_on_executor(|| async {
            for damage in [
                Damage::TornMidBatch,
                Damage::GarbageAppended,
                Damage::FlippedPayloadBit,
                Damage::ZeroPaddingOnly,
            ] {
                let (_root, dir) = temporary_log_dir();
                let config = one_segment_config();
                let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                    .await
                    .unwrap();
                let stored = append_batches(&log, 10).await;
                log.flush(true).await.unwrap();
                log.crash_for_tests().await;

                let path = dir.join("00000000000000000000.log");
                let logical_bytes: usize = stored.iter().map(Vec::len).sum();
                let on_disk = std::fs::metadata(&path).unwrap().len() as usize;
                assert!(
                    on_disk > logical_bytes,
                    "an unclosed segment ends with zero padding"
                );
                assert_eq!(on_disk % 512, 0);
                let mut file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .unwrap();
                match damage {
                    Damage::TornMidBatch => file.set_len(logical_bytes as u64 - 7).unwrap(),
                    Damage::GarbageAppended => {
                        file.seek(SeekFrom::Start(logical_bytes as u64)).unwrap();
                        file.write_all(&[0x5a; 300]).unwrap();
                    }
                    Damage::FlippedPayloadBit => {
                        let mut bytes = std::fs::read(&path).unwrap();
                        bytes[logical_bytes - 3] ^= 0x01;
                        file.seek(SeekFrom::Start(0)).unwrap();
                        file.write_all(&bytes).unwrap();
                    }
                    Damage::ZeroPaddingOnly => {}
                }
                file.sync_all().unwrap();
                drop(file);

                let kept = match damage {
                    Damage::TornMidBatch | Damage::FlippedPayloadBit => 9,
                    Damage::GarbageAppended | Damage::ZeroPaddingOnly => 10,
                };
                let kept_bytes: usize = stored[..kept].iter().map(Vec::len).sum();
                let log = Log::open(&dir, config.clone(), false).await.unwrap();
                assert_eq!(log.log_end_offset(), kept as i64 * 3, "{damage:?}");
                assert_eq!(
                    std::fs::metadata(&path).unwrap().len() as usize,
                    kept_bytes,
                    "{damage:?}"
                );
                let (bytes, header) = batch(2, 7);
                let info = log.append(bytes, &header, 0, 0).await.unwrap();
                assert_eq!(info.base_offset, kept as i64 * 3, "{damage:?}");
                let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
                assert_eq!(
                    &joined(&all)[..kept_bytes],
                    &stored[..kept].concat()[..],
                    "{damage:?}"
                );
                log.close().await.unwrap();
                drop(log);
                let log = Log::open(&dir, config, true).await.unwrap();
                assert_eq!(log.log_end_offset(), kept as i64 * 3 + 2, "{damage:?}");
            }
        });
    }

    /// Goal: a missing or damaged index is rebuilt, identical to the one the
    /// log wrote, with clean and unclean opens alike. Method: close a log of
    /// several segments, delete one index, truncate another, make a third
    /// point at the wrong batch, damage a time index; reopen; compare files
    /// and read every offset from disk.
    #[test]
    fn missing_or_corrupt_indexes_are_rebuilt() {
        run_on_executor(|| async {
            for clean_shutdown in [true, false] {
                let (_root, dir) = temporary_log_dir();
                let config = small_config(0);
                let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                    .await
                    .unwrap();
                let stored = append_batches(&log, 40).await;
                log.close().await.unwrap();
                assert!(log.stats().segment_count >= 5);
                drop(log);

                let mut names: Vec<String> = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".index") || name.ends_with(".timeindex"))
                    .collect();
                names.sort();
                let originals: Vec<(String, Vec<u8>)> = names
                    .iter()
                    .map(|name| (name.clone(), std::fs::read(dir.join(name)).unwrap()))
                    .collect();
                let index_of = |segment: usize| dir.join(&names[2 * segment]);
                let time_index_of = |segment: usize| dir.join(&names[2 * segment + 1]);
                assert!(names[0].ends_with(".index") && names[1].ends_with(".timeindex"));
                assert!(
                    !originals[0].1.is_empty(),
                    "entries are expected at this interval"
                );

                std::fs::remove_file(index_of(0)).unwrap();
                std::fs::write(index_of(1), [1, 2, 3, 4, 5]).unwrap();
                let mut wrong = originals[4].1.clone();
                let last = wrong.len() - 8;
                wrong[last + 3] = wrong[last + 3].wrapping_add(1);
                std::fs::write(index_of(2), &wrong).unwrap();
                std::fs::write(time_index_of(3), [9; 7]).unwrap();

                let log = Log::open(&dir, config.clone(), clean_shutdown)
                    .await
                    .unwrap();
                assert_eq!(log.log_end_offset(), 120);
                for (name, original) in &originals {
                    assert_eq!(
                        &std::fs::read(dir.join(name)).unwrap(),
                        original,
                        "{name} clean={clean_shutdown}"
                    );
                }
                for offset in 0..120i64 {
                    let result = log.read(offset, i64::MAX, 1, true).await.unwrap();
                    assert_eq!(
                        joined(&result),
                        stored[offset as usize / 3],
                        "offset {offset}"
                    );
                }
                assert_eq!(
                    log.offset_for_timestamp(1017).await.unwrap(),
                    Some((51, 1017))
                );
            }
        });
    }

    /// Goal: when a closed segment turns out torn, the log ends there and the
    /// segments after it are dropped as garbage. Method: flip a bit in the
    /// last batch of the second segment of a closed log, reopen unclean.
    #[test]
    fn torn_closed_segment_drops_the_segments_after_it() {
        run_on_executor(|| async {
            let (_root, dir) = temporary_log_dir();
            let config = small_config(0);
            let log = Log::create(&dir, config.clone(), Uuid::new_v4())
                .await
                .unwrap();
            let stored = append_batches(&log, 40).await;
            log.close().await.unwrap();
            drop(log);

            let mut logs: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".log"))
                .collect();
            logs.sort();
            assert!(logs.len() >= 4);
            let second = dir.join(&logs[1]);
            let mut bytes = std::fs::read(&second).unwrap();
            let length = bytes.len();
            bytes[length - 2] ^= 0x10;
            std::fs::write(&second, &bytes).unwrap();
            let first_batches =
                std::fs::metadata(dir.join(&logs[0])).unwrap().len() as usize / stored[0].len();
            let second_batches = length / stored[0].len();

            let log = Log::open(&dir, config, false).await.unwrap();
            let kept = first_batches + second_batches - 1;
            assert_eq!(log.log_end_offset(), kept as i64 * 3);
            assert_eq!(log.stats().segment_count, 2);
            for name in &logs[2..] {
                assert!(!dir.join(name).exists(), "{name} is garbage");
            }
            let all = log.read(0, i64::MAX, usize::MAX, true).await.unwrap();
            assert_eq!(joined(&all), stored[..kept].concat());
            let (bytes, header) = batch(1, 1);
            assert_eq!(
                log.append(bytes, &header, 0, 0).await.unwrap().base_offset,
                kept as i64 * 3
            );
        });
    }
}
