//! One partition replica on its owning shard: the log handle, the high
//! watermark, and the fetch waiters woken by appends. This is the only place
//! that appends to a log. Lives on its owning shard only.

pub mod producer_state;

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures::channel::oneshot;
use thiserror::Error;
use uuid::Uuid;

use crate::protocol::record_batch::{
    build_control_batch, BatchHeader, TxnMarkerRecord, ATTRIBUTES_OFFSET, ATTR_TIMESTAMP_TYPE,
    CRC_OFFSET,
};
use crate::storage::{
    AppendInfo, CompactionConfig, CompactionStats, Log, ReadResult, StorageError,
};
use producer_state::{
    parse_snapshot_file_name, snapshot_file_name, AppendCheck, ProducerError, ProducerStateManager,
};

/// Bytes read per step while rebuilding producer state from the log.
const PRODUCER_STATE_READ_BYTES: usize = 1024 * 1024;

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
    settings: PartitionSettings,
    waiters: RefCell<Vec<oneshot::Sender<()>>>,
    deleted: Cell<bool>,
    producers: RefCell<ProducerStateManager>,
    /// Held from an idempotent batch's sequence check to its offset
    /// assignment, so two batches of one producer are checked in order
    /// against the state each leaves.
    producer_append_lock: glommio::sync::Semaphore,
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
        log: Log,
        settings: PartitionSettings,
    ) -> Rc<Self> {
        Rc::new(Partition {
            topic,
            index,
            topic_id,
            log,
            leader_epoch: 0,
            settings,
            waiters: RefCell::new(Vec::new()),
            deleted: Cell::new(false),
            producers: RefCell::new(ProducerStateManager::new()),
            producer_append_lock: glommio::sync::Semaphore::new(1),
        })
    }

    /// The current leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// Offset up to which consumers may read (exclusive). With one replica
    /// it is the log end offset.
    pub fn high_watermark(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// First offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
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
                let log_append_time = if self.settings.log_append_time {
                    timestamp_ms
                } else {
                    -1
                };
                return Ok((info, log_append_time));
            }
        }
        let now = now_ms();
        let (batch, header, log_append_time) = if self.settings.log_append_time {
            let (b, h) = stamp_log_append_time(&batch, header, now);
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
            .check_marker(producer_id, producer_epoch)?;
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
        self.producers
            .borrow_mut()
            .on_marker(producer_id, producer_epoch, coordinator_epoch, now);
        self.wake_waiters();
        Ok(info.base_offset)
    }

    /// Rebuilds idempotent producer state after the log was opened: from
    /// the newest snapshot at or below the log end, then the batches after
    /// it; from the whole log when there is no usable snapshot.
    ///
    /// # Errors
    /// Reading the log failed.
    pub async fn load_producer_state(&self) -> Result<(), PartitionError> {
        let dir = self.log.dir().to_path_buf();
        let log_end_offset = self.log.log_end_offset();
        let listing_dir = dir.clone();
        let snapshots: Vec<(i64, PathBuf)> = glommio::executor()
            .spawn_blocking(move || {
                let mut found = Vec::new();
                if let Ok(entries) = std::fs::read_dir(&listing_dir) {
                    for entry in entries.flatten() {
                        let name = entry.file_name();
                        if let Some(offset) = name.to_str().and_then(parse_snapshot_file_name) {
                            found.push((offset, entry.path()));
                        }
                    }
                }
                found.sort();
                found
            })
            .await;
        let mut start = self.log.log_start_offset();
        let mut state = ProducerStateManager::new();
        for (offset, path) in snapshots.iter().rev() {
            if *offset > log_end_offset || *offset < start {
                continue;
            }
            let read_path = path.clone();
            let bytes = glommio::executor()
                .spawn_blocking(move || std::fs::read(read_path))
                .await;
            match bytes.map(|b| ProducerStateManager::decode_snapshot(&b)) {
                Ok(Ok(loaded)) => {
                    state = loaded;
                    start = *offset;
                    break;
                }
                Ok(Err(e)) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring a bad producer state snapshot")
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot read a producer state snapshot")
                }
            }
        }
        let mut offset = start;
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
            for (_, header) in crate::protocol::record_batch::BatchIter::new(&chunk, false) {
                if header.producer_id >= 0 && header.base_offset >= offset {
                    state.load_from_batch(&header, header.base_offset);
                }
                next = next.max(header.last_offset() + 1);
            }
            if next <= offset {
                break;
            }
            offset = next;
            glommio::yield_if_needed().await;
        }
        *self.producers.borrow_mut() = state;
        // Snapshots past the log end describe data that is gone.
        let stale: Vec<PathBuf> = snapshots
            .into_iter()
            .filter(|(o, _)| *o > log_end_offset)
            .map(|(_, p)| p)
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

    /// Writes `<log end offset>.snapshot` of the producer state and removes
    /// older snapshots. Called after a clean close of the log.
    ///
    /// # Errors
    /// The snapshot could not be written.
    pub async fn write_producer_snapshot(&self) -> Result<(), PartitionError> {
        let dir = self.log.dir().to_path_buf();
        let path = dir.join(snapshot_file_name(self.log.log_end_offset()));
        let bytes = self.producers.borrow().encode_snapshot();
        let write_path = path.clone();
        glommio::executor()
            .spawn_blocking(move || -> std::io::Result<()> {
                let temporary = write_path.with_extension("snapshot.tmp");
                std::fs::write(&temporary, &bytes)?;
                std::fs::File::open(&temporary)?.sync_all()?;
                std::fs::rename(&temporary, &write_path)?;
                if let Some(parent) = write_path.parent() {
                    for entry in std::fs::read_dir(parent)?.flatten() {
                        let name = entry.file_name();
                        if let Some(offset) = name.to_str().and_then(parse_snapshot_file_name) {
                            if entry.path() != write_path && offset >= 0 {
                                let _ = std::fs::remove_file(entry.path());
                            }
                        }
                    }
                    std::fs::File::open(parent)?.sync_all()?;
                }
                Ok(())
            })
            .await
            .map_err(|e| PartitionError::Snapshot {
                path,
                reason: e.to_string(),
            })
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
        Ok(self.log.flush(sync).await?)
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

    /// A receiver that fires on the next append, or None when data at
    /// `offset` is already there (or the partition is deleted).
    pub fn wait_for_data(&self, offset: i64) -> Option<oneshot::Receiver<()>> {
        if offset < self.high_watermark() || self.deleted.get() {
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
        Ok(self.log.compact(config, now_ms()).await?)
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

    /// Marks the partition deleted, wakes its waiters and removes its files.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn delete(&self) -> Result<(), PartitionError> {
        self.deleted.set(true);
        self.wake_waiters();
        Ok(self.log.clone().delete().await?)
    }

    fn deleted_error(&self) -> PartitionError {
        PartitionError::Deleted {
            topic: self.topic.clone(),
            partition: self.index,
        }
    }
}

/// Rewrites a batch for a LogAppendTime topic: sets the timestamp-type bit and
/// maxTimestamp to `now`, and recomputes the CRC (both fields are covered by
/// it), as Kafka does. This copies the batch; CreateTime topics never do.
fn stamp_log_append_time(batch: &Bytes, header: &BatchHeader, now: i64) -> (Bytes, BatchHeader) {
    let mut copy = BytesMut::from(&batch[..]);
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
mod tests {
    use super::*;
    use crate::protocol::record_batch::{tests::sample_batch, validate_batch};

    #[test]
    fn log_append_time_stamp_keeps_the_batch_valid() {
        let batch = Bytes::from(sample_batch(0, 3, 10));
        let header = validate_batch(&batch).unwrap();
        let (stamped, h) = stamp_log_append_time(&batch, &header, 12345);
        let reparsed = validate_batch(&stamped).unwrap();
        assert_eq!(reparsed, h);
        assert!(reparsed.is_log_append_time());
        assert_eq!(reparsed.max_timestamp, 12345);
    }
}
