//! TEMPORARY in-memory stand-in with the storage API, replaced by the DMA log.
#![allow(missing_docs, clippy::unused_async)]

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use thiserror::Error;

use crate::protocol::record_batch::{stamp_header, BatchHeader};

#[derive(Debug, Clone)]
pub struct LogConfig {
    pub segment_bytes: u64,
    pub segment_ms: u64,
    pub index_interval_bytes: u32,
    pub segment_index_bytes: u32,
    pub write_buffer_bytes: usize,
    pub write_behind: usize,
    pub cache_bytes: usize,
    pub pending_bytes_max: usize,
}

#[derive(Debug, Error)]
pub enum StorageError {
    #[error("io error on {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct AppendInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

#[derive(Debug, Default)]
pub struct ReadResult {
    pub batches: Vec<Bytes>,
    pub bytes: usize,
}

#[derive(Clone)]
pub struct Log {
    inner: Rc<RefCell<Vec<(i64, i64, i64, Bytes)>>>,
    next: Rc<RefCell<i64>>,
}

impl Log {
    pub async fn create(
        _dir: &Path,
        _config: LogConfig,
        _topic_id: uuid::Uuid,
    ) -> Result<Log, StorageError> {
        Ok(Log {
            inner: Rc::default(),
            next: Rc::default(),
        })
    }
    pub async fn open(
        _dir: &Path,
        _config: LogConfig,
        _clean_shutdown: bool,
    ) -> Result<Log, StorageError> {
        Ok(Log {
            inner: Rc::default(),
            next: Rc::default(),
        })
    }
    pub fn log_start_offset(&self) -> i64 {
        0
    }
    pub fn log_end_offset(&self) -> i64 {
        *self.next.borrow()
    }
    pub async fn append(
        &self,
        batch: Bytes,
        header: &BatchHeader,
        leader_epoch: i32,
        _now_ms: i64,
    ) -> Result<AppendInfo, StorageError> {
        let base = *self.next.borrow();
        let mut b = BytesMut::from(&batch[..]);
        stamp_header(&mut b, base, leader_epoch);
        let last = base + i64::from(header.last_offset_delta);
        self.inner
            .borrow_mut()
            .push((base, last, header.max_timestamp, b.freeze()));
        *self.next.borrow_mut() = last + 1;
        Ok(AppendInfo {
            base_offset: base,
            last_offset: last,
            max_timestamp: header.max_timestamp,
        })
    }
    pub async fn flush(&self, _sync: bool) -> Result<i64, StorageError> {
        Ok(self.log_end_offset())
    }
    pub async fn read(
        &self,
        offset: i64,
        max_offset_exclusive: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, StorageError> {
        let mut r = ReadResult::default();
        for (base, last, _, b) in self.inner.borrow().iter() {
            if *last < offset || *base >= max_offset_exclusive {
                continue;
            }
            if r.bytes + b.len() > max_bytes && !(min_one_batch && r.batches.is_empty()) {
                break;
            }
            r.bytes += b.len();
            r.batches.push(b.clone());
        }
        Ok(r)
    }
    pub async fn offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<(i64, i64)>, StorageError> {
        Ok(self
            .inner
            .borrow()
            .iter()
            .find(|e| e.2 >= timestamp)
            .map(|e| (e.0, e.2)))
    }
    pub async fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, StorageError> {
        Ok(self
            .inner
            .borrow()
            .iter()
            .max_by_key(|e| e.2)
            .map(|e| (e.1, e.2)))
    }
    pub async fn close(&self) -> Result<(), StorageError> {
        Ok(())
    }
    pub async fn delete(self) -> Result<(), StorageError> {
        Ok(())
    }
}
