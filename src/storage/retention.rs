//! Retention: deleting a log's oldest segments once they are older than
//! `retention.ms` or the log is larger than `retention.bytes` (topics whose
//! `cleanup.policy` includes `delete`). Kafka's rules
//! (`UnifiedLog.deleteOldSegments`):
//!
//! - Only whole segments go, oldest first, and only a prefix of the log: the
//!   first segment that must stay ends the deletion.
//! - By time, a segment goes when `now - largest timestamp > retention.ms`;
//!   its largest timestamp is the largest batch `maxTimestamp` in it. When
//!   no batch carries one, Kafka uses the file's modification time; here it
//!   is the time the segment was created or, after a restart, recovered
//!   (a little earlier than Kafka before a restart, later after one).
//! - By size, with `excess = log size - retention.bytes`, segments go while
//!   `excess - segment size >= 0`, each subtracting its size.
//! - Time is applied first, then size on what remains; a negative limit
//!   disables its rule.
//! - A segment goes only when every offset in it is below a bound the caller
//!   gives: the high watermark in Kafka; here the last stable offset, so an
//!   open transaction's data stays until it ends (a transaction open for
//!   long, up to `transaction.max.timeout.ms`, holds back the deletion of
//!   everything after its first offset, where Kafka would go on).
//! - Whatever the limits, a segment goes once every offset in it is below
//!   a log start DeleteRecords set (`deleteLogStartOffsetBreachedSegments`;
//!   Kafka waits for its next retention check, DeleteRecords here runs a
//!   pass at once).
//! - The active segment can go too when it is not empty: the log rolls a new
//!   empty one first, so the log start offset becomes the log end offset.
//!
//! Deletion renames a segment's files to `.deleted` (the `.log` is the
//! commit point: recovery lists segments by their `.log` files and removes
//! `.deleted` ones) and syncs the directory; only then are the leader
//! epochs cut at the new start. The renamed files are removed
//! `file.delete.delay.ms` later, as Kafka removes them (at once for 0; a
//! restart meanwhile removes them when the log loads). A deletion that
//! fails is retried by the next pass. Reads planned before keep their open
//! descriptors, so they finish on the renamed or unlinked files; a read
//! that would go on past what it read into the removed segments stops
//! there (or, with nothing read yet, is out of range), and a read_committed
//! fetch that overlapped a deletion is answered out of range, since the
//! aborted transactions of the removed segments may be gone from its
//! answer.

use std::path::Path;

use tracing::info;

use super::{
    checkpoint::{remove_file_if_exists, sync_directory},
    error::StorageError,
    log::Log,
    recovery::{deleted_file_path, rename_file},
    segment::{
        segment_file_path, INDEX_FILE_EXTENSION, LOG_FILE_EXTENSION, TIME_INDEX_FILE_EXTENSION,
    },
    txn_index::TXN_INDEX_FILE_EXTENSION,
};

/// What one retention pass may delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionLimits {
    /// `retention.ms`; negative: no time limit.
    pub retention_ms: i64,
    /// `retention.bytes`; negative: no size limit.
    pub retention_bytes: i64,
    /// Wall-clock time of the pass, milliseconds since the epoch.
    pub now_ms: i64,
    /// Only segments whose every offset is below this may go.
    pub upper_bound_offset: i64,
    /// `file.delete.delay.ms`: how long the files of a deleted segment
    /// stay, renamed `.deleted`, before they are removed.
    pub file_delete_delay_ms: i64,
}

impl RetentionLimits {
    /// Whether either rule can delete anything.
    pub fn any(&self) -> bool {
        self.retention_ms >= 0 || self.retention_bytes >= 0
    }
}

/// What a retention pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    /// Base offsets of the segments deleted, oldest first.
    pub deleted_base_offsets: Vec<i64>,
    /// Bytes of the segments deleted.
    pub deleted_bytes: u64,
    /// The log start offset after the pass.
    pub log_start_offset: i64,
    /// The active segment was rolled so that it could go.
    pub rolled: bool,
}

/// One segment as retention sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SegmentFacts {
    pub base_offset: i64,
    /// The offset after its last batch.
    pub next_offset: i64,
    pub size_bytes: u64,
    /// Largest batch maxTimestamp, else its creation time.
    pub largest_timestamp_ms: i64,
    /// Closed and finished (files cut, synced, indexes written); the active
    /// segment and one whose roll is still being finished are not.
    pub finished: bool,
    pub active: bool,
}

/// What retention deletes from `segments` (oldest first; the last is the
/// active one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct RetentionPlan {
    /// Finished segments to delete now, from the first.
    pub delete: usize,
    /// Every segment before the active one goes and so does the active one's
    /// data: roll it, then delete it once its roll has finished.
    pub roll_active: bool,
}

/// How many leading segments hold only offsets below `log_start_offset`
/// (finished ones, never the active one).
pub(super) fn below_start(segments: &[SegmentFacts], log_start_offset: i64) -> usize {
    segments
        .iter()
        .take_while(|segment| {
            !segment.active && segment.finished && segment.next_offset <= log_start_offset
        })
        .count()
}

/// Kafka's retention rules over `segments` (see the module comment).
pub(super) fn plan_retention(segments: &[SegmentFacts], limits: &RetentionLimits) -> RetentionPlan {
    // How many leading segments each rule lets go, the active one included.
    let mut breached = 0;
    if limits.retention_ms >= 0 {
        breached = segments
            .iter()
            .take_while(|segment| {
                limits.now_ms.saturating_sub(segment.largest_timestamp_ms) > limits.retention_ms
            })
            .count();
    }
    if limits.retention_bytes >= 0 {
        let remaining = &segments[breached..];
        let total: u64 = remaining.iter().map(|segment| segment.size_bytes).sum();
        let mut excess = i128::from(total) - i128::from(limits.retention_bytes);
        for segment in remaining {
            let after = excess - i128::from(segment.size_bytes);
            if after < 0 {
                break;
            }
            excess = after;
            breached += 1;
        }
    }
    let mut plan = RetentionPlan::default();
    for segment in &segments[..breached] {
        let empty = segment.next_offset == segment.base_offset;
        if segment.next_offset > limits.upper_bound_offset || (segment.active && empty) {
            break;
        }
        if segment.active {
            plan.roll_active = true;
            break;
        }
        if !segment.finished {
            break;
        }
        plan.delete += 1;
    }
    plan
}

impl Log {
    /// Deletes the segments retention lets go (see the module comment);
    /// when that includes the active segment, rolls it, waits for the roll to
    /// finish and deletes it too. Skipped (nothing deleted) while a
    /// compaction of the log runs.
    ///
    /// # Errors
    /// The log is closed or failed; renaming or removing files failed (the
    /// segments are then out of the log, and the next pass retries their
    /// deletion).
    pub async fn apply_retention(
        &self,
        limits: &RetentionLimits,
    ) -> Result<RetentionOutcome, StorageError> {
        let mut outcome = RetentionOutcome {
            log_start_offset: self.log_start_offset(),
            ..RetentionOutcome::default()
        };
        if !limits.any() && below_start(&self.retention_facts(), outcome.log_start_offset) == 0 {
            return Ok(outcome);
        }
        let _guard = match self.compaction_begin() {
            Ok(guard) => guard,
            Err(StorageError::CompactionInProgress { .. }) => return Ok(outcome),
            Err(error) => return Err(error),
        };
        // Segments an earlier pass took out but could not delete.
        let pending = self.take_pending_deletions();
        if !pending.is_empty() {
            self.delete_removed(pending, limits).await?;
        }
        // A second pass deletes the active segment rolled by the first.
        for _ in 0..2 {
            let facts = self.retention_facts();
            let mut plan = plan_retention(&facts, limits);
            // Segments wholly below a start DeleteRecords set go whatever
            // the limits (Kafka's `deleteLogStartOffsetBreachedSegments`).
            plan.delete = plan
                .delete
                .max(below_start(&facts, self.log_start_offset()));
            if plan.delete > 0 {
                let removed = self.retention_remove(plan.delete);
                for &(base_offset, size_bytes) in &removed {
                    outcome.deleted_base_offsets.push(base_offset);
                    outcome.deleted_bytes += size_bytes;
                }
                self.delete_removed(removed, limits).await?;
            }
            outcome.log_start_offset = self.log_start_offset();
            if !plan.roll_active || outcome.rolled {
                break;
            }
            if !self.roll_for_retention(limits.now_ms) {
                break;
            }
            outcome.rolled = true;
            if !self.wait_for_roll().await {
                break;
            }
        }
        if !outcome.deleted_base_offsets.is_empty() {
            info!(
                dir = %self.dir().display(),
                segments = outcome.deleted_base_offsets.len(),
                bytes = outcome.deleted_bytes,
                log_start_offset = outcome.log_start_offset,
                retention_ms = limits.retention_ms,
                retention_bytes = limits.retention_bytes,
                "deleted segments past the retention limits"
            );
        }
        Ok(outcome)
    }

    /// Deletes the files of segments taken out of the log, then cuts the
    /// leader epochs at the new start; on failure keeps the segments for
    /// the next pass to delete.
    async fn delete_removed(
        &self,
        removed: Vec<(i64, u64)>,
        limits: &RetentionLimits,
    ) -> Result<(), StorageError> {
        let delay = std::time::Duration::from_millis(
            u64::try_from(limits.file_delete_delay_ms).unwrap_or(0),
        );
        if let Err(error) = delete_segment_files(self.dir(), &removed, delay).await {
            self.keep_pending_deletions(removed);
            return Err(error);
        }
        self.retention_cut_epochs();
        Ok(())
    }
}

/// Renames the files of each removed segment to `.deleted`, syncs the
/// directory, then removes them after `delay` (at once for none).
async fn delete_segment_files(
    dir: &Path,
    removed: &[(i64, u64)],
    delay: std::time::Duration,
) -> Result<(), StorageError> {
    // The `.log` is the commit point, so it goes after the indexes (which
    // recovery rebuilds if the deletion stops before it) and before the
    // txnindex (whose entries an unfinished deletion still needs; a stray
    // one past the log start is dropped when the partition loads).
    const EXTENSIONS: [&str; 4] = [
        INDEX_FILE_EXTENSION,
        TIME_INDEX_FILE_EXTENSION,
        LOG_FILE_EXTENSION,
        TXN_INDEX_FILE_EXTENSION,
    ];
    let bases = removed.iter().map(|&(base_offset, _)| base_offset);
    let deleted = rename_segment_files_deleted(dir, bases, &EXTENSIONS).await?;
    remove_after(deleted, delay).await
}

/// Renames the `extensions` files of the segments at `base_offsets`, in
/// that order, to `.deleted` and syncs the directory; returns every
/// `.deleted` path, for removal. A file not there is skipped (no txnindex:
/// no aborted transaction in the segment; no index yet; or renamed by an
/// earlier attempt of the same deletion, whose `.deleted` path is still
/// returned).
///
/// # Errors
/// A rename or the sync failed.
pub(super) async fn rename_segment_files_deleted(
    dir: &Path,
    base_offsets: impl Iterator<Item = i64>,
    extensions: &[&str],
) -> Result<Vec<std::path::PathBuf>, StorageError> {
    let mut deleted = Vec::new();
    for base_offset in base_offsets {
        for &extension in extensions {
            let from = segment_file_path(dir, base_offset, extension);
            let to = deleted_file_path(dir, base_offset, extension);
            match rename_file(from, to.clone()).await {
                Ok(()) => deleted.push(to),
                // Renamed by an earlier attempt: still to be removed.
                Err(StorageError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    deleted.push(to);
                }
                Err(error) => return Err(error),
            }
        }
    }
    sync_directory(dir).await?;
    Ok(deleted)
}

/// Removes `paths` (those that exist) at once when `delay` is zero, else
/// `delay` from now on a task of its own, as Kafka's scheduler removes
/// deleted segments: a failure then is logged, and what a restart finds
/// is removed when the log loads.
///
/// # Errors
/// Removing at once failed.
pub(super) async fn remove_after(
    paths: Vec<std::path::PathBuf>,
    delay: std::time::Duration,
) -> Result<(), StorageError> {
    if delay.is_zero() {
        for path in paths {
            remove_file_if_exists(path).await?;
        }
        return Ok(());
    }
    glommio::spawn_local(async move {
        glommio::timer::sleep(delay).await;
        for path in paths {
            if let Err(error) = remove_file_if_exists(path).await {
                tracing::warn!(%error, "removing a deleted segment's file failed");
            }
        }
    })
    .detach();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{
        run_on_executor,
        test_support::{batch, joined, small_config, stamped},
        EpochEntry, LogConfig, StorageError,
    };
    use uuid::Uuid;

    /// A new log with `config` in a temporary directory (kept alive by the
    /// returned guard).
    async fn new_log(config: LogConfig) -> (tempfile::TempDir, std::path::PathBuf, Log) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("orders-0");
        let log = Log::create(&dir, config, Uuid::new_v4()).await.unwrap();
        (root, dir, log)
    }

    /// Names of the files in `dir`, sorted.
    fn file_names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Appends `count` batches of three records, batch `i` with timestamp
    /// `1000 + i` and leader epoch `first_epoch` for the first half, one
    /// more after; waits until they are synced. Returns the stored bytes by
    /// base offset.
    async fn fill(log: &Log, count: usize, first_epoch: i32) -> Vec<(i64, Vec<u8>)> {
        let mut stored = Vec::new();
        for index in 0..count {
            let epoch = first_epoch + i32::from(index >= count / 2);
            let (bytes, header) = batch(3, 1000 + index as i64);
            let info = log.append(bytes.clone(), &header, epoch, 0).await.unwrap();
            stored.push((info.base_offset, stamped(&bytes, info.base_offset, epoch)));
        }
        log.flush(true).await.unwrap();
        stored
    }

    /// The stored bytes of every batch at or after `start`.
    fn from(stored: &[(i64, Vec<u8>)], start: i64) -> Vec<u8> {
        stored
            .iter()
            .filter(|(base, _)| *base >= start)
            .flat_map(|(_, bytes)| bytes.clone())
            .collect()
    }

    async fn check_start(log: &Log, stored: &[(i64, Vec<u8>)], start: i64) {
        assert_eq!(log.log_start_offset(), start);
        let all = log.read(start, i64::MAX, usize::MAX, true).await.unwrap();
        assert_eq!(joined(&all), from(stored, start), "the log from its start");
        if start > 0 {
            assert!(matches!(
                log.read(start - 1, i64::MAX, usize::MAX, true).await,
                Err(StorageError::OffsetOutOfRange { .. })
            ));
        }
    }

    /// Goal: a retention pass by size removes whole old segments from the
    /// log and the disk, the rest reads back unchanged, reads below the new
    /// start are out of range, the leader epochs start there, and a reopen
    /// (clean or after a crash) finds the same log.
    /// Method: ~6 batches per segment, 40 batches; retention.bytes of about
    /// half the log; compare with the stored bytes before and after reopens.
    #[test]
    fn size_retention_deletes_old_segments_and_survives_reopen() {
        run_on_executor(|| async {
            let config = LogConfig {
                cache_bytes: 1 << 20,
                ..small_config(0)
            };
            let (_root, dir, log) = new_log(config.clone()).await;
            let stored = fill(&log, 40, 0).await;
            let facts = log.retention_facts();
            assert!(facts.len() > 4, "several segments: {facts:?}");
            let total: u64 = facts.iter().map(|segment| segment.size_bytes).sum();
            let limits = RetentionLimits {
                retention_ms: -1,
                retention_bytes: i64::try_from(total / 2).unwrap(),
                now_ms: 0,
                upper_bound_offset: log.log_end_offset(),
                file_delete_delay_ms: 0,
            };
            let expected = plan_retention(&facts, &limits);
            assert!(expected.delete > 0 && !expected.roll_active);
            let outcome = log.apply_retention(&limits).await.unwrap();
            let start = facts[expected.delete].base_offset;
            assert_eq!(
                outcome.deleted_base_offsets,
                facts[..expected.delete]
                    .iter()
                    .map(|segment| segment.base_offset)
                    .collect::<Vec<_>>()
            );
            assert_eq!(outcome.log_start_offset, start);
            assert!(!outcome.rolled);
            check_start(&log, &stored, start).await;
            let names = file_names(&dir);
            for deleted in &outcome.deleted_base_offsets {
                let prefix = format!("{deleted:020}.");
                assert!(
                    !names.iter().any(|name| name.starts_with(&prefix)),
                    "files of {deleted} left: {names:?}"
                );
            }
            assert!(!names.iter().any(|name| name.ends_with(".deleted")));
            // Epoch 0 until batch 20, epoch 1 from there.
            let epoch_1_start = stored[20].0;
            let expected_epochs = if start < epoch_1_start {
                vec![
                    EpochEntry {
                        epoch: 0,
                        start_offset: start,
                    },
                    EpochEntry {
                        epoch: 1,
                        start_offset: epoch_1_start,
                    },
                ]
            } else {
                vec![EpochEntry {
                    epoch: 1,
                    start_offset: start,
                }]
            };
            assert_eq!(log.leader_epoch_entries(), expected_epochs);
            // A second pass with the same limits deletes nothing more.
            let again = log.apply_retention(&limits).await.unwrap();
            assert!(again.deleted_base_offsets.is_empty());

            log.close().await.unwrap();
            let log = Log::open(&dir, config.clone(), true).await.unwrap();
            check_start(&log, &stored, start).await;
            assert_eq!(log.leader_epoch_entries(), expected_epochs);
            log.crash_for_tests().await;
            let log = Log::open(&dir, config, false).await.unwrap();
            check_start(&log, &stored, start).await;
            log.close().await.unwrap();
        });
    }

    /// Goal: when every record is past retention.ms, the active segment is
    /// rolled and deleted too: the log is empty at its old end offset,
    /// takes new appends there, and reopens that way.
    #[test]
    fn time_retention_of_everything_rolls_and_empties_the_log() {
        run_on_executor(|| async {
            let config = small_config(1 << 20);
            let (_root, dir, log) = new_log(config.clone()).await;
            let stored = fill(&log, 20, 0).await;
            let end = log.log_end_offset();
            // Newest timestamp 1019: at now 2000, 1000 ms keeps nothing.
            let limits = RetentionLimits {
                retention_ms: 900,
                retention_bytes: -1,
                now_ms: 2000,
                upper_bound_offset: end,
                file_delete_delay_ms: 0,
            };
            let outcome = log.apply_retention(&limits).await.unwrap();
            assert!(outcome.rolled);
            assert_eq!(outcome.log_start_offset, end);
            assert_eq!(log.log_start_offset(), end);
            assert_eq!(log.log_end_offset(), end);
            let files: Vec<String> = file_names(&dir)
                .into_iter()
                .filter(|name| name.ends_with(".log"))
                .collect();
            assert_eq!(files, vec![format!("{end:020}.log")]);
            assert!(matches!(
                log.read(0, i64::MAX, usize::MAX, true).await,
                Err(StorageError::OffsetOutOfRange { .. })
            ));
            let mut more = stored.clone();
            more.extend(fill(&log, 3, 1).await);
            check_start(&log, &more, end).await;
            log.crash_for_tests().await;
            let log = Log::open(&dir, config, false).await.unwrap();
            check_start(&log, &more, end).await;
            log.close().await.unwrap();
        });
    }

    /// Goal: a deletion stopped by a crash is finished or undone by
    /// recovery: with the `.log` renamed (the commit point) the segment is
    /// gone and its `.deleted` files removed; with only the indexes renamed
    /// the segment stays, whole, with its indexes rebuilt.
    #[test]
    fn recovery_finishes_an_interrupted_deletion() {
        run_on_executor(|| async {
            let config = small_config(0);
            let (_root, dir, log) = new_log(config.clone()).await;
            let stored = fill(&log, 30, 0).await;
            let facts = log.retention_facts();
            log.close().await.unwrap();
            let rename = |base: i64, extension: &str| {
                std::fs::rename(
                    segment_file_path(&dir, base, extension),
                    deleted_file_path(&dir, base, extension),
                )
                .unwrap();
            };
            // Segment 0: committed (indexes and log renamed), with a stray
            // txnindex.deleted; segment 1: only its indexes renamed.
            for extension in [
                INDEX_FILE_EXTENSION,
                TIME_INDEX_FILE_EXTENSION,
                LOG_FILE_EXTENSION,
            ] {
                rename(facts[0].base_offset, extension);
            }
            std::fs::write(
                deleted_file_path(&dir, facts[0].base_offset, TXN_INDEX_FILE_EXTENSION),
                [0u8; 34],
            )
            .unwrap();
            for extension in [INDEX_FILE_EXTENSION, TIME_INDEX_FILE_EXTENSION] {
                rename(facts[1].base_offset, extension);
            }
            let log = Log::open(&dir, config, false).await.unwrap();
            check_start(&log, &stored, facts[1].base_offset).await;
            let names = file_names(&dir);
            assert!(
                !names.iter().any(|name| name.ends_with(".deleted")),
                "{names:?}"
            );
            log.close().await.unwrap();
            assert!(file_names(&dir).contains(&format!("{:020}.index", facts[1].base_offset)));
        });
    }

    /// Goal: a read in flight when retention removes the segments it is
    /// reading returns what it had read (from the unlinked file) and stops
    /// there, instead of going on into offsets the log no longer has.
    /// Method: no tail cache, so the read waits for its file; retention of
    /// three segments while it waits.
    #[test]
    fn a_read_in_flight_stops_where_retention_removed_the_log() {
        run_on_executor(|| async {
            let (_root, _dir, log) = new_log(small_config(0)).await;
            let stored = fill(&log, 30, 0).await;
            let facts = log.retention_facts();
            let mut read = Box::pin(log.read(0, i64::MAX, usize::MAX, true));
            assert!(futures::poll!(read.as_mut()).is_pending());
            let limits = RetentionLimits {
                retention_ms: 0,
                retention_bytes: -1,
                now_ms: 1_000_000,
                upper_bound_offset: facts[3].base_offset,
                file_delete_delay_ms: 0,
            };
            let outcome = log.apply_retention(&limits).await.unwrap();
            assert_eq!(outcome.log_start_offset, facts[3].base_offset);
            let result = read.await.unwrap();
            let read_bytes = joined(&result);
            let whole = from(&stored, 0);
            assert!(!read_bytes.is_empty());
            assert!(whole.starts_with(&read_bytes), "a prefix of the log");
            let first_segment: usize = stored
                .iter()
                .filter(|(base, _)| *base < facts[1].base_offset)
                .map(|(_, bytes)| bytes.len())
                .sum();
            assert!(
                read_bytes.len() <= first_segment,
                "no more than the segment it was reading"
            );
            log.close().await.unwrap();
        });
    }

    /// Goal: nothing at or past the bound goes, even when it is old.
    #[test]
    fn the_bound_keeps_an_open_transactions_segments() {
        run_on_executor(|| async {
            let (_root, _dir, log) = new_log(small_config(0)).await;
            let stored = fill(&log, 30, 0).await;
            let facts = log.retention_facts();
            let bound = facts[2].base_offset + 1;
            let limits = RetentionLimits {
                retention_ms: 0,
                retention_bytes: -1,
                now_ms: 1_000_000,
                upper_bound_offset: bound,
                file_delete_delay_ms: 0,
            };
            let outcome = log.apply_retention(&limits).await.unwrap();
            assert_eq!(outcome.deleted_base_offsets.len(), 2);
            check_start(&log, &stored, facts[2].base_offset).await;
            log.close().await.unwrap();
        });
    }

    fn segment(base_offset: i64, next_offset: i64, size_bytes: u64, largest: i64) -> SegmentFacts {
        SegmentFacts {
            base_offset,
            next_offset,
            size_bytes,
            largest_timestamp_ms: largest,
            finished: true,
            active: false,
        }
    }

    /// Four closed segments of 100 bytes, 10 offsets each, with largest
    /// timestamps 1000, 2000, 3000, 4000, and an active one with 5000.
    fn log() -> Vec<SegmentFacts> {
        let mut segments: Vec<SegmentFacts> = (0..4)
            .map(|i| segment(i * 10, i * 10 + 10, 100, (i + 1) * 1000))
            .collect();
        let mut active = segment(40, 50, 100, 5000);
        active.finished = false;
        active.active = true;
        segments.push(active);
        segments
    }

    fn limits(retention_ms: i64, retention_bytes: i64, now_ms: i64) -> RetentionLimits {
        RetentionLimits {
            retention_ms,
            retention_bytes,
            now_ms,
            upper_bound_offset: i64::MAX,
            file_delete_delay_ms: 0,
        }
    }

    fn plan(delete: usize, roll_active: bool) -> RetentionPlan {
        RetentionPlan {
            delete,
            roll_active,
        }
    }

    /// Goal: a log start inside the log (DeleteRecords) lets go exactly the
    /// leading segments with no offset at or past it, never the active one
    /// nor one still being finished.
    #[test]
    fn segments_wholly_below_the_log_start_go() {
        let segments = log();
        assert_eq!(below_start(&segments, 0), 0);
        assert_eq!(below_start(&segments, 9), 0);
        assert_eq!(below_start(&segments, 10), 1);
        assert_eq!(below_start(&segments, 25), 2);
        assert_eq!(below_start(&segments, 50), 4);
        let mut unfinished = log();
        unfinished[1].finished = false;
        assert_eq!(below_start(&unfinished, 50), 1);
    }

    /// Goal: the time rule deletes the leading segments strictly older than
    /// retention.ms and nothing when it is negative.
    #[test]
    fn time_deletes_the_leading_segments_older_than_retention_ms() {
        let segments = log();
        assert_eq!(
            plan_retention(&segments, &limits(-1, -1, 10_000)),
            plan(0, false)
        );
        // now - 2000 = 1000 is not > 1000: the second segment stays.
        assert_eq!(
            plan_retention(&segments, &limits(1000, -1, 3000)),
            plan(1, false)
        );
        assert_eq!(
            plan_retention(&segments, &limits(999, -1, 3000)),
            plan(2, false)
        );
        // A younger segment first stops the prefix, whatever follows.
        let mut out_of_order = log();
        out_of_order[0].largest_timestamp_ms = 9000;
        assert_eq!(
            plan_retention(&out_of_order, &limits(1000, -1, 9500)),
            plan(0, false)
        );
    }

    /// Goal: the size rule keeps the log at or under retention.bytes by
    /// whole segments, oldest first (never below it), and applies after the
    /// time rule.
    #[test]
    fn size_deletes_oldest_segments_until_the_log_fits() {
        let segments = log();
        // 500 bytes, 250 allowed: two go (300 stay); a third would leave
        // less than retention.bytes, which Kafka keeps. Time first: it takes
        // the first segment, size the next ones on what remains (400).
        let cases = [
            ((-1, 250, 0), 2),
            ((-1, 300, 0), 2),
            ((-1, 100, 0), 4),
            ((-1, 500, 0), 0),
            ((-1, 499, 0), 0),
            ((-1, 400, 0), 1),
            ((1500, 200, 3000), 3),
        ];
        for ((retention_ms, retention_bytes, now_ms), delete) in cases {
            assert_eq!(
                plan_retention(&segments, &limits(retention_ms, retention_bytes, now_ms)),
                plan(delete, false),
                "retention.ms {retention_ms}, retention.bytes {retention_bytes}, now {now_ms}"
            );
        }
    }

    /// Goal: everything breached, the active segment is rolled (when it
    /// holds data) so that it can go; an empty active segment stays.
    #[test]
    fn the_active_segment_goes_by_rolling_when_everything_is_breached() {
        let segments = log();
        assert_eq!(
            plan_retention(&segments, &limits(100, -1, 10_000)),
            plan(4, true)
        );
        assert_eq!(plan_retention(&segments, &limits(-1, 0, 0)), plan(4, true));
        let mut empty_active = log();
        empty_active[4].next_offset = 40;
        empty_active[4].size_bytes = 0;
        assert_eq!(
            plan_retention(&empty_active, &limits(100, -1, 10_000)),
            plan(4, false)
        );
        let only_active = vec![segments[4]];
        assert_eq!(
            plan_retention(&only_active, &limits(100, -1, 10_000)),
            plan(0, true)
        );
    }

    /// Goal: a segment with offsets at or past the bound (an open
    /// transaction's LSO) stays, and so does one whose roll is unfinished,
    /// and everything after them.
    #[test]
    fn the_bound_and_unfinished_rolls_stop_the_deletion() {
        let mut bounded = limits(100, -1, 10_000);
        bounded.upper_bound_offset = 25;
        assert_eq!(plan_retention(&log(), &bounded), plan(2, false));
        bounded.upper_bound_offset = 20;
        assert_eq!(plan_retention(&log(), &bounded), plan(2, false));
        bounded.upper_bound_offset = 50;
        assert_eq!(plan_retention(&log(), &bounded), plan(4, true));
        bounded.upper_bound_offset = 49;
        assert_eq!(plan_retention(&log(), &bounded), plan(4, false));
        let mut unfinished = log();
        unfinished[1].finished = false;
        assert_eq!(
            plan_retention(&unfinished, &limits(100, -1, 10_000)),
            plan(1, false)
        );
    }
}
