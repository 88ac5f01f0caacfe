//! Storage: each partition replica's log in Kafka's on-disk layout
//! (`<data-dir>/<topic>-<partition>/NNNNNNNNNNNNNNNNNNNN.log`, `.index`,
//! `.timeindex`, `leader-epoch-checkpoint`, `partition.metadata`), written
//! with direct I/O through glommio DMA files, with start-up recovery that
//! truncates torn tails and rebuilds indexes.
//!
//! Values live on the shard that owns the partition: a [`Log`] is `Rc`-based
//! and `!Send`, and its single writer task runs on that shard's executor. It
//! holds a shard-local view of one partition; nothing here is cluster-wide.
//!
//! Files: `log.rs` (the `Log` API, in-memory tail, writer task),
//! `segment.rs` (segment bookkeeping and the batch scanner), `appender.rs`
//! (the O_DIRECT appender), `direct.rs` (records received straight into
//! the memory the appender writes from), `index.rs` (offset and time indexes),
//! `reader.rs` (cold reads, record lookups), `recovery.rs` (open-time
//! checks and truncation), `checkpoint.rs` (the small metadata files),
//! `notify.rs` (wake-up primitives), `shard_sync.rs` (one `syncfs` per
//! shard for every log's group commit), `error.rs`; compaction in
//! `compaction.rs` (the rounds and segment swaps), `retention.rs`
//! (deleting segments past retention.ms / retention.bytes), `log_dirs.rs`
//! (deleted and stray partition directories), `txn_index.rs` (the
//! aborted-transaction index files), `offset_map.rs` (the
//! bounded key -> offset map) and `batch_rewrite.rs` (records of one batch,
//! decoded and rebuilt).

mod appender;
mod batch_rewrite;
mod checkpoint;
mod compaction;
mod direct;
mod error;
mod index;
mod log;
mod log_dirs;
mod notify;
mod offset_map;
mod reader;
mod recovery;
mod retention;
mod segment;
mod send;
mod shard_sync;
mod tail_budget;
pub mod txn_index;

pub use batch_rewrite::recompress_batch;
pub use checkpoint::{end_offset_for_epoch, EpochEntry};
pub use compaction::{
    CompactionConfig, CompactionOutcome, CompactionRequest, CompactionStats, Throttle,
};
pub use direct::{append_bytes_copied, append_bytes_in_place, DirectSlot};
pub use error::StorageError;
pub use index::{OffsetIndex, OffsetPosition, TimeIndex, TIME_INDEX_ENTRY_BYTES};
pub use log::{
    AppendInfo, Log, LogConfig, LogStats, Pieces, ReadResult, SegmentSettings, WritesDuringSync,
    DEFAULT_WRITE_BUFFER_BYTES, DEFAULT_WRITE_BUFFER_BYTES_MAX, DEFAULT_WRITE_DELAY_US,
    WRITE_DELAY_US_MAX,
};
pub use log_dirs::{remove_deleted_log_dir, set_stray_log_dir_aside, settle_log_dirs_blocking};
pub use reader::{
    cold_read_bytes_copied, cold_read_turn, cold_reads_in_flight, configure_cold_reads,
    next_offset_after_pieces, splice_reads, ColdReadPath,
};
pub use recovery::ScanReplay;
pub use retention::{RetentionLimits, RetentionOutcome};
pub use segment::{ensure_iopoll_probed, segment_bytes_read};
pub use send::{FileRange, Piece};
pub use shard_sync::{configure_log_sync, shard_syncfs_count, LogSync};
pub use tail_budget::{configure_shard_cache, shard_cached_bytes};

/// Raises RLIMIT_MEMLOCK as far as allowed: glommio registers its I/O
/// memory with io_uring, which on older kernels counts against locked
/// memory. Asks for unlimited; where the process lacks CAP_SYS_RESOURCE (some
/// containers, even as root) it settles for the hard limit, which is enough
/// when io_uring does not charge root (CAP_IPC_LOCK) for registered buffers.
#[cfg(test)]
pub fn raise_memlock_for_tests() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};
    if setrlimit(Resource::RLIMIT_MEMLOCK, RLIM_INFINITY, RLIM_INFINITY).is_ok() {
        return;
    }
    if let Ok((_, hard_limit)) = getrlimit(Resource::RLIMIT_MEMLOCK) {
        let _ = setrlimit(Resource::RLIMIT_MEMLOCK, hard_limit, hard_limit);
    }
}

/// Runs `test` to completion on a fresh glommio executor on this thread.
#[cfg(test)]
pub(crate) fn run_on_executor<F, Fut>(test: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    raise_memlock_for_tests();
    let executor = match glommio::LocalExecutorBuilder::default().make() {
        Ok(executor) => executor,
        Err(error) => panic!("cannot start a glommio executor: {error}"),
    };
    executor.run(test());
}

/// Helpers shared by the storage tests: configs with tiny limits, batch
/// builders and byte comparisons.
#[cfg(test)]
pub(crate) mod test_support {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    use super::{LogConfig, ReadResult};
    use crate::protocol::record_batch::{
        stamp_header, tests::sample_batch, validate_batch, BatchHeader,
    };

    /// The bytes of `pieces` in order, file ranges read from their files.
    pub fn piece_bytes(pieces: &[super::Piece]) -> Vec<u8> {
        use std::os::unix::fs::FileExt;
        let mut flat = Vec::new();
        for piece in pieces {
            match piece {
                super::Piece::Memory(bytes) => flat.extend_from_slice(bytes),
                super::Piece::File(range) => {
                    let mut buffer = vec![0u8; range.len];
                    range
                        .file
                        .read_exact_at(&mut buffer, range.position)
                        .unwrap();
                    flat.extend_from_slice(&buffer);
                }
            }
        }
        flat
    }

    /// Segments of ~6 small batches, an index entry every ~2 batches.
    pub fn small_config(cache_bytes: usize) -> LogConfig {
        LogConfig {
            segment_bytes: 600,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            index_interval_bytes: 100,
            segment_index_bytes: 1024,
            write_buffer_bytes: 4096,
            write_buffer_bytes_max: 16384,
            write_behind: 2,
            write_delay_us: super::DEFAULT_WRITE_DELAY_US,
            writes_during_sync: super::WritesDuringSync::Auto,
            preallocate_bytes: 8192,
            preallocate: false,
            cache_bytes,
            pending_bytes_max: 1 << 20,
        }
    }

    /// An uncompressed batch of `count` records, all at `timestamp`.
    pub fn batch(count: i32, timestamp: i64) -> (Bytes, BatchHeader) {
        let bytes = sample_batch(0, count, timestamp);
        let header = match validate_batch(&bytes) {
            Ok(header) => header,
            Err(error) => panic!("sample batch is invalid: {error}"),
        };
        (Bytes::from(bytes), header)
    }

    /// A batch with one record per timestamp, encoded by kafka-protocol with
    /// `compression`.
    pub fn batch_with_timestamps(
        timestamps: &[i64],
        compression: Compression,
    ) -> (Bytes, BatchHeader) {
        let records: Vec<Record> = timestamps
            .iter()
            .enumerate()
            .map(|(index, &timestamp)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: index as i64,
                // kafka-protocol starts a new batch whenever offset - sequence changes.
                sequence: index as i32,
                timestamp,
                key: None,
                value: Some(Bytes::from(format!("value-{index}-{timestamp}"))),
                headers: Default::default(),
            })
            .collect();
        let mut buffer = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        if let Err(error) = RecordBatchEncoder::encode(&mut buffer, &records, &options) {
            panic!("cannot encode test batch: {error}");
        }
        let header = match validate_batch(&buffer) {
            Ok(header) => header,
            Err(error) => panic!("encoded batch is invalid: {error}"),
        };
        assert_eq!(header.total_bytes(), buffer.len(), "one batch expected");
        (buffer.freeze(), header)
    }

    /// `batch` as the log stores it after assigning `base_offset`.
    pub fn stamped(batch: &Bytes, base_offset: i64, leader_epoch: i32) -> Vec<u8> {
        let mut bytes = batch.to_vec();
        stamp_header(&mut bytes, base_offset, leader_epoch);
        bytes
    }

    /// The pieces of a read, concatenated.
    pub fn joined(result: &ReadResult) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(result.bytes);
        for piece in &result.batches {
            bytes.extend_from_slice(piece);
        }
        assert_eq!(bytes.len(), result.bytes);
        bytes
    }
}
