//! The metadata log: an append-only file of [`MetadataRecord`]s under
//! `<data-dir>/meta/`, the same log a Raft quorum will replicate later.
//!
//! Each record is framed as `length u32 | crc32c u32 | JSON bytes` (big
//! endian). Reading stops at the first torn or corrupt frame, which is cut
//! off, so a crash in the middle of a write loses only that unacknowledged
//! record. Lives on the controller shard (shard 0); read once at start-up.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::image::MetadataRecord;
use crate::config::limits::METADATA_RECORD_BYTES_MAX;

/// Problems with the metadata log.
#[derive(Debug, Error)]
pub enum MetadataLogError {
    /// An I/O call failed.
    #[error("metadata log {path}: {source}")]
    Io {
        /// File involved.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A record could not be encoded.
    #[error("metadata record encoding failed: {0}")]
    Encode(#[from] serde_json::Error),
    /// A record would be larger than a record may be.
    #[error(
        "a metadata record of {bytes} bytes is over the {METADATA_RECORD_BYTES_MAX}-byte limit"
    )]
    TooLarge {
        /// Its encoded size.
        bytes: usize,
    },
    /// A whole, intact record this build does not know (written by a newer
    /// ringbroker): the log is left as it is rather than cut there, which
    /// would drop it and every record after it.
    #[error(
        "metadata log {path}: the intact record at byte {position} is unknown to this \
         ringbroker ({reason}); was the data directory written by a newer version?"
    )]
    UnknownRecord {
        /// File involved.
        path: PathBuf,
        /// Where the record starts.
        position: usize,
        /// The decoder's complaint.
        reason: String,
    },
}

/// File name of the log inside the meta directory.
pub const METADATA_LOG_FILE: &str = "metadata.log";

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> MetadataLogError + '_ {
    move |source| MetadataLogError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads every valid record, truncating a torn tail. Blocking: call at
/// start-up, before the executors run.
///
/// # Errors
/// I/O failures other than the file being absent.
pub fn read_all(meta_dir: &Path) -> Result<Vec<MetadataRecord>, MetadataLogError> {
    let path = meta_dir.join(METADATA_LOG_FILE);
    let mut bytes = Vec::new();
    match std::fs::File::open(&path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes).map_err(io_error(&path))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(&path)(e)),
    }
    let mut records = Vec::new();
    let mut position = 0usize;
    while bytes.len() - position >= 8 {
        let length =
            u32::from_be_bytes(bytes[position..position + 4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_be_bytes(
            bytes[position + 4..position + 8]
                .try_into()
                .expect("4 bytes"),
        );
        if length > METADATA_RECORD_BYTES_MAX || bytes.len() - position - 8 < length {
            break;
        }
        let body = &bytes[position + 8..position + 8 + length];
        if crc32c::crc32c(body) != crc {
            break;
        }
        match serde_json::from_slice::<MetadataRecord>(body) {
            Ok(record) => records.push(record),
            Err(e) => {
                return Err(MetadataLogError::UnknownRecord {
                    path: path.clone(),
                    position,
                    reason: e.to_string(),
                })
            }
        }
        position += 8 + length;
    }
    if position < bytes.len() {
        tracing::warn!(
            path = %path.display(),
            valid_bytes = position,
            dropped_bytes = bytes.len() - position,
            "metadata log has a torn or corrupt tail; truncating it"
        );
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io_error(&path))?;
        file.set_len(position as u64).map_err(io_error(&path))?;
        file.sync_all().map_err(io_error(&path))?;
    }
    Ok(records)
}

/// Encodes one framed record.
///
/// # Errors
/// Encoding failure.
pub fn encode_record(record: &MetadataRecord) -> Result<Vec<u8>, MetadataLogError> {
    let body = serde_json::to_vec(record)?;
    if body.len() > METADATA_RECORD_BYTES_MAX {
        return Err(MetadataLogError::TooLarge { bytes: body.len() });
    }
    let mut framed = Vec::with_capacity(body.len() + 8);
    framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
    framed.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    framed.extend_from_slice(&body);
    Ok(framed)
}

/// Appends records and makes them durable. Runs on a blocking thread of the
/// controller shard's executor, so the executor itself never blocks on the
/// file system.
///
/// # Errors
/// I/O failures.
pub async fn append(
    meta_dir: PathBuf,
    records: Vec<MetadataRecord>,
) -> Result<(), MetadataLogError> {
    let mut framed = Vec::new();
    for record in &records {
        framed.extend(encode_record(record)?);
    }
    glommio::executor()
        .spawn_blocking(move || append_blocking(&meta_dir, &framed))
        .await
}

fn append_blocking(meta_dir: &Path, framed: &[u8]) -> Result<(), MetadataLogError> {
    std::fs::create_dir_all(meta_dir).map_err(io_error(meta_dir))?;
    let path = meta_dir.join(METADATA_LOG_FILE);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io_error(&path))?;
    file.write_all(framed).map_err(io_error(&path))?;
    file.sync_data().map_err(io_error(&path))?;
    Ok(())
}

/// Appends records synchronously; for start-up (bootstrap) only.
///
/// # Errors
/// I/O or encoding failures.
pub fn append_at_startup(
    meta_dir: &Path,
    records: &[MetadataRecord],
) -> Result<(), MetadataLogError> {
    let mut framed = Vec::new();
    for record in records {
        framed.extend(encode_record(record)?);
    }
    append_blocking(meta_dir, &framed)?;
    let dir = std::fs::File::open(meta_dir).map_err(io_error(meta_dir))?;
    dir.sync_all().map_err(io_error(meta_dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_tail_is_cut_and_earlier_records_survive() {
        let dir = tempfile::tempdir().unwrap();
        let a = MetadataRecord::Bootstrap {
            cluster_id: "x".into(),
        };
        let b = MetadataRecord::DeleteTopic {
            name: "t".into(),
            topic_id: uuid::Uuid::nil(),
        };
        append_at_startup(dir.path(), &[a.clone(), b.clone()]).unwrap();
        let path = dir.path().join(METADATA_LOG_FILE);
        let full = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(full - 3)
            .unwrap();
        assert_eq!(read_all(dir.path()).unwrap(), vec![a.clone()]);
        // The cut is permanent and appending continues after it.
        append_at_startup(dir.path(), std::slice::from_ref(&b)).unwrap();
        assert_eq!(read_all(dir.path()).unwrap(), vec![a, b]);
    }

    #[test]
    fn an_intact_record_of_a_newer_kind_stops_the_read_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = MetadataRecord::Bootstrap {
            cluster_id: "x".into(),
        };
        append_at_startup(dir.path(), std::slice::from_ref(&a)).unwrap();
        let body = br#"{"FromTheFuture":{"x":1}}"#;
        let mut framed = (body.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&crc32c::crc32c(body).to_be_bytes());
        framed.extend_from_slice(body);
        append_blocking(dir.path(), &framed).unwrap();
        append_at_startup(dir.path(), std::slice::from_ref(&a)).unwrap();
        let path = dir.path().join(METADATA_LOG_FILE);
        let before = std::fs::read(&path).unwrap();
        match read_all(dir.path()) {
            Err(MetadataLogError::UnknownRecord { .. }) => {}
            other => panic!("expected UnknownRecord, got {other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "the log was cut");
    }
}
