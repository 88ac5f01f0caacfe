//! Reads the broker's segment files the way Kafka lays them out
//! (`DIR/<topic>-<partition>/<base offset, 20 digits>.log`, record batches in
//! wire format v2), so tests can find batch boundaries and damage a log on
//! purpose.
//!
//! A v2 batch starts with baseOffset (i64), batchLength (i32, the bytes after
//! this field), partitionLeaderEpoch (i32), magic (i8), crc (u32, CRC-32C of
//! everything from attributes on), attributes (i16), lastOffsetDelta (i32),
//! then timestamps, producer fields and the record count: 61 bytes in all
//! before the records.

use std::path::{Path, PathBuf};

/// Bytes before batchLength's count starts: baseOffset and batchLength.
pub const BATCH_LENGTH_PREFIX_BYTES: u64 = 12;
/// Bytes of a v2 batch header, records excluded.
pub const BATCH_HEADER_BYTES: u64 = 61;
/// Where the CRC-covered part of a batch starts (the attributes field).
const CRC_COVERED_FROM: usize = 21;

/// Where one batch sits in a segment file and which offsets it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchExtent {
    pub position: u64,
    pub total_bytes: u64,
    pub base_offset: i64,
    pub last_offset_delta: i32,
    pub records_count: i32,
    pub crc_ok: bool,
}

impl BatchExtent {
    /// The file position just past this batch.
    pub fn end_position(&self) -> u64 {
        self.position + self.total_bytes
    }

    /// The offset of the first record after this batch.
    pub fn next_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta) + 1
    }
}

/// The complete magic-2 batches at the start of `bytes`, in order. Parsing
/// stops at the first place that does not hold one: zero padding, a torn
/// tail, or garbage. CRC failures are reported, not treated as the end.
pub fn parse_batches(bytes: &[u8]) -> Vec<BatchExtent> {
    let mut batches = Vec::new();
    let mut position = 0usize;
    while position + BATCH_HEADER_BYTES as usize <= bytes.len() {
        let at = &bytes[position..];
        let base_offset = i64::from_be_bytes(at[0..8].try_into().expect("8 bytes"));
        let batch_length = i32::from_be_bytes(at[8..12].try_into().expect("4 bytes"));
        let magic = at[16] as i8;
        if batch_length < (BATCH_HEADER_BYTES - BATCH_LENGTH_PREFIX_BYTES) as i32 || magic != 2 {
            break;
        }
        let total_bytes = batch_length as usize + BATCH_LENGTH_PREFIX_BYTES as usize;
        if position + total_bytes > bytes.len() {
            break;
        }
        let crc_stored = u32::from_be_bytes(at[17..21].try_into().expect("4 bytes"));
        let crc_ok = crc32c::crc32c(&at[CRC_COVERED_FROM..total_bytes]) == crc_stored;
        batches.push(BatchExtent {
            position: position as u64,
            total_bytes: total_bytes as u64,
            base_offset,
            last_offset_delta: i32::from_be_bytes(at[23..27].try_into().expect("4 bytes")),
            records_count: i32::from_be_bytes(at[57..61].try_into().expect("4 bytes")),
            crc_ok,
        });
        position += total_bytes;
    }
    batches
}

/// `DIR/<topic>-<partition>`.
pub fn partition_dir(data_dir: &Path, topic: &str, partition: i32) -> PathBuf {
    data_dir.join(format!("{topic}-{partition}"))
}

/// The `.log` files of a partition, oldest (lowest base offset) first.
pub fn segment_files(data_dir: &Path, topic: &str, partition: i32) -> Vec<PathBuf> {
    let dir = partition_dir(data_dir, topic, partition);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("list {}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .collect();
    // Names are zero-padded base offsets, so name order is offset order.
    files.sort();
    files
}

/// The newest `.log` file of a partition.
///
/// # Panics
/// If the partition has none.
pub fn last_segment(data_dir: &Path, topic: &str, partition: i32) -> PathBuf {
    segment_files(data_dir, topic, partition)
        .pop()
        .unwrap_or_else(|| {
            panic!(
                "no .log file for {topic}-{partition} in {}",
                data_dir.display()
            )
        })
}
