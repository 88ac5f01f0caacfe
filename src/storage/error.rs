//! The storage layer's error type.
//!
//! Every variant carries what an operator or the partition layer needs to act
//! on it: the file or directory, the byte position or the offset. Errors are
//! `Clone` (the I/O source sits behind an `Arc`) because one failed write has
//! to be reported to every flush, append and close waiting on that log, and
//! `Send`, so they can cross a shard hop unchanged.

use std::{io, path::PathBuf, sync::Arc};

use thiserror::Error;

/// Why a storage operation failed.
#[derive(Debug, Clone, Error)]
pub enum StorageError {
    /// A system call on a log file or directory failed.
    #[error("{operation} {path}: {source}")]
    Io {
        /// What was being done ("writing", "fdatasync", ...).
        operation: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: Arc<io::Error>,
    },
    /// Log data that recovery cannot explain or repair (for example a segment
    /// whose batches do not parse where an index says they start, found
    /// while serving a read).
    #[error("corrupt log data in {path} at byte {position}: {reason}")]
    Corrupt {
        /// The segment or index file.
        path: PathBuf,
        /// Byte position inside that file.
        position: u64,
        /// What was wrong.
        reason: String,
    },
    /// A read or lookup asked for an offset the log does not hold.
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// First offset held.
        log_start_offset: i64,
        /// Next offset to be assigned.
        log_end_offset: i64,
    },
    /// The records of a stored batch could not be decoded (bad compression
    /// frame, truncated record).
    #[error("cannot decode the records of the batch at offset {base_offset} of {dir}: {reason}")]
    RecordDecode {
        /// The partition directory.
        dir: PathBuf,
        /// Base offset of the batch.
        base_offset: i64,
        /// The decoder's message.
        reason: String,
    },
    /// The log was closed (or is closing) and takes no more appends or flushes.
    #[error("log {dir} is closed")]
    Closed {
        /// The partition directory.
        dir: PathBuf,
    },
    /// `Log::compact` was called while another compaction of the same log
    /// runs.
    #[error("log {dir} is already being compacted")]
    CompactionInProgress {
        /// The partition directory.
        dir: PathBuf,
    },
    /// `Log::create` found segment files already in the directory.
    #[error("log directory {dir} already holds a log")]
    AlreadyExists {
        /// The partition directory.
        dir: PathBuf,
    },
    /// A `LogConfig` value is out of its allowed range.
    #[error("invalid log configuration: {reason}")]
    InvalidConfig {
        /// Which bound was broken.
        reason: &'static str,
    },
    /// `partition.metadata` or `leader-epoch-checkpoint` does not parse.
    #[error("malformed {path}: {reason}")]
    MalformedMetadata {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The directory opened as a topic's partition belongs to another
    /// topic of that name, or to none: its `partition.metadata` names
    /// another topic id, or is missing. Nothing in it was touched.
    #[error("{dir} is not this topic's log: {reason}")]
    ForeignLogDir {
        /// The partition directory.
        dir: PathBuf,
        /// What its `partition.metadata` says.
        reason: String,
    },
}

impl StorageError {
    /// Wraps a standard I/O error with the operation and path.
    pub(crate) fn io(operation: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StorageError::Io {
            operation,
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// Wraps a glommio I/O error with the operation and path.
    pub(crate) fn glommio(
        operation: &'static str,
        path: impl Into<PathBuf>,
        source: glommio::GlommioError<()>,
    ) -> Self {
        Self::io(operation, path, io::Error::from(source))
    }
}
