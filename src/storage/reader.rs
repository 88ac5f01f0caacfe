//! The cold read path: whole batches from a segment file by DMA reads, and
//! record-level lookups inside one batch (for ListOffsets by timestamp).
//!
//! A read is planned while the log's state is borrowed (file handle, byte
//! range, offsets) and then executed on that owned plan with the borrow
//! dropped, so no `RefCell` borrow is held across an await. The planned
//! byte range only covers bytes already written to the file; newer batches
//! come from the log's in-memory tail.
//!
//! Runs on the partition's shard.

use std::{path::PathBuf, rc::Rc};

use bytes::{Bytes, BytesMut};
use glommio::io::DmaFile;
use kafka_protocol::records::RecordBatchDecoder;

use super::{
    error::StorageError,
    log::ReadResult,
    segment::{ScanStep, SegmentScanner},
};
use crate::protocol::record_batch::{parse_header, BatchHeader, BATCH_HEADER_BYTES};

thread_local! {
    static COLD_READ_BYTES_COPIED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static COLD_READS: std::cell::RefCell<Option<Rc<ColdReadScheduler>>> =
        const { std::cell::RefCell::new(None) };
}

/// How this shard runs segment file reads: at most `permits` at once, each
/// in `queue`. A shard sets it once at start; where it is unset (tests,
/// tools) reads run unbounded in the caller's task.
struct ColdReadScheduler {
    permits: Rc<glommio::sync::Semaphore>,
    max_in_flight: usize,
    waiting: std::cell::Cell<usize>,
    queue: Option<glommio::TaskQueueHandle>,
    splice: bool,
}

/// Which way consumers' reads of segment files reach the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColdReadPath {
    /// DMA reads into memory, copied once into the response's buffers and
    /// sent with the other pieces.
    Dma,
    /// Batch headers walked through the page cache, then file -> pipe ->
    /// socket with splice(2): no copy in user space.
    Splice,
}

/// True when this shard sends consumers' segment reads by splice.
pub fn splice_reads() -> bool {
    COLD_READS.with(|scheduler| scheduler.borrow().as_ref().is_some_and(|s| s.splice))
}

/// Bounds this shard's segment file reads to `max_in_flight` at once, runs
/// them in `queue` (None: in the reading task's own queue), and chooses how
/// consumers' reads are sent.
pub fn configure_cold_reads(
    max_in_flight: usize,
    queue: Option<glommio::TaskQueueHandle>,
    path: ColdReadPath,
) {
    let max_in_flight = max_in_flight.max(1);
    COLD_READS.with(|scheduler| {
        *scheduler.borrow_mut() = Some(Rc::new(ColdReadScheduler {
            permits: Rc::new(glommio::sync::Semaphore::new(max_in_flight as u64)),
            max_in_flight,
            waiting: std::cell::Cell::new(0),
            queue,
            splice: path == ColdReadPath::Splice,
        }));
    });
}

/// Segment file reads of this shard running now, and waiting for a turn.
pub fn cold_reads_in_flight() -> (usize, usize) {
    COLD_READS.with(|scheduler| match scheduler.borrow().as_ref() {
        Some(scheduler) => {
            let available = scheduler.permits.available() as usize;
            (
                scheduler.max_in_flight.saturating_sub(available),
                scheduler.waiting.get(),
            )
        }
        None => (0, 0),
    })
}

/// One of this shard's turns to read a segment file (None where reads are
/// not bounded): splice reads take one around their header walks and
/// their file -> pipe copies.
pub async fn cold_read_turn() -> Option<glommio::sync::StaticPermit> {
    let scheduler = COLD_READS.with(|scheduler| scheduler.borrow().clone())?;
    scheduler.turn().await.ok()
}

impl ColdReadScheduler {
    /// Waits for one of the shard's read turns, counted as waiting
    /// meanwhile (also when the caller gives up).
    async fn turn(&self) -> glommio::Result<glommio::sync::StaticPermit, ()> {
        struct Waiting<'a>(&'a std::cell::Cell<usize>);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get() - 1);
            }
        }
        self.waiting.set(self.waiting.get() + 1);
        let _waiting = Waiting(&self.waiting);
        self.permits.acquire_static_permit(1).await
    }
}

/// [`read_file_batches`] within this shard's bound on reads in flight and in
/// its cold-read task queue (see [`configure_cold_reads`]).
///
/// # Errors
/// As [`read_file_batches`].
pub async fn read_file_batches_scheduled(
    plan: FileReadPlan,
    limits: ReadLimits,
    chunk_bytes: usize,
    result: &mut ReadResult,
    batch_count: &mut usize,
) -> Result<FileReadOutcome, StorageError> {
    let Some(scheduler) = COLD_READS.with(|scheduler| scheduler.borrow().clone()) else {
        return read_file_batches(&plan, &limits, chunk_bytes, result, batch_count).await;
    };
    let path = plan.path.clone();
    let permit = scheduler.turn().await;
    let _permit = permit.map_err(|error| StorageError::glommio("waiting to read", &path, error))?;
    // The read runs as its own task (so in the cold-read queue) on an owned
    // part of the result, carrying the budget already used.
    let mut part = ReadResult {
        batches: Vec::new(),
        bytes: result.bytes,
    };
    let mut count = *batch_count;
    let read = async move {
        let outcome = read_file_batches(&plan, &limits, chunk_bytes, &mut part, &mut count).await;
        (part, count, outcome)
    };
    let (part, count, outcome) = match scheduler.queue {
        Some(queue) => {
            glommio::spawn_local_into(read, queue)
                .map_err(|error| StorageError::glommio("scheduling a read of", &path, error))?
                .await
        }
        None => read.await,
    };
    result.batches.extend(part.batches);
    result.bytes = part.bytes;
    *batch_count = count;
    outcome
}

/// Bytes this shard copied out of DMA read buffers into owned batches while
/// reading segment files (cold fetches, and scans that rebuild state). The
/// read buffers belong to the shard's io memory and cannot cross cores, so
/// each batch read from a file is copied once; reads from the in-memory
/// tail are not.
pub fn cold_read_bytes_copied() -> u64 {
    COLD_READ_BYTES_COPIED.with(std::cell::Cell::get)
}

/// Bytes a budget-limited file read loads past the budget: room for the
/// batches before the target offset (one index interval) and the header of
/// the batch after the last one that fits.
const BUDGET_READ_SLACK_BYTES: usize = 8 << 10;

/// A read of one segment file, planned under the state borrow.
#[derive(Debug)]
pub struct FileReadPlan {
    /// The segment file.
    pub file: Rc<DmaFile>,
    /// Its path, for errors.
    pub path: PathBuf,
    /// Position of the indexed batch at or before the target offset.
    pub start_position: u64,
    /// End of the bytes known to be written (exclusive).
    pub end_position: u64,
    /// Offset of the first batch at `end_position`.
    pub end_offset: i64,
}

/// What a read may return.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// Return batches from the one containing this offset.
    pub target_offset: i64,
    /// Batches whose base offset is at or past this are not returned.
    pub max_offset_exclusive: i64,
    /// Byte budget of the whole read.
    pub max_bytes: usize,
    /// Return one whole batch even when it exceeds `max_bytes`.
    pub min_one_batch: bool,
}

/// How a file read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileReadOutcome {
    /// Offset the next read should start at.
    pub next_offset: i64,
    /// True when a limit stopped the read (rather than the end of the plan).
    pub limit_reached: bool,
}

/// Appends to `result` the whole batches of `plan` from the one holding
/// `limits.target_offset`, within the limits. `batch_count` counts the
/// batches already in `result` (for `min_one_batch`).
///
/// # Errors
/// I/O errors, and [`StorageError::Corrupt`] when the file does not parse
/// inside its written range.
pub async fn read_file_batches(
    plan: &FileReadPlan,
    limits: &ReadLimits,
    chunk_bytes: usize,
    result: &mut ReadResult,
    batch_count: &mut usize,
) -> Result<FileReadOutcome, StorageError> {
    assert!(plan.start_position <= plan.end_position);
    assert!(limits.target_offset < plan.end_offset);
    let mut scanner = SegmentScanner::new(
        plan.file.clone(),
        plan.path.clone(),
        plan.start_position,
        plan.end_position,
        chunk_bytes,
    );
    let mut next_offset = limits.target_offset;
    loop {
        // A file read never loads much more than the budget still allows:
        // past it only the next header is needed, to know where to stop.
        let left = limits.max_bytes.saturating_sub(result.bytes);
        let first = limits.min_one_batch && *batch_count == 0;
        if left < BATCH_HEADER_BYTES && !first {
            return Ok(FileReadOutcome {
                next_offset,
                limit_reached: true,
            });
        }
        if !first {
            scanner.set_chunk_bytes(
                left.saturating_add(BUDGET_READ_SLACK_BYTES)
                    .min(chunk_bytes),
            );
        }
        let position = scanner.position();
        let header = match scanner.peek().await? {
            ScanStep::End => {
                return Ok(FileReadOutcome {
                    next_offset: plan.end_offset,
                    limit_reached: false,
                })
            }
            ScanStep::Invalid(error) => {
                return Err(StorageError::Corrupt {
                    path: plan.path.clone(),
                    position,
                    reason: format!("written range does not parse: {error}"),
                })
            }
            ScanStep::Batch(header) => header,
        };
        let total_bytes = header.total_bytes();
        if header.last_offset() < limits.target_offset {
            scanner.advance(total_bytes);
            continue;
        }
        let stop = header.base_offset >= limits.max_offset_exclusive
            || (result.bytes + total_bytes > limits.max_bytes
                && !(limits.min_one_batch && *batch_count == 0));
        if stop {
            return Ok(FileReadOutcome {
                next_offset: header.base_offset,
                limit_reached: true,
            });
        }
        let Some(bytes) = scanner.batch_bytes(total_bytes).await? else {
            return Err(StorageError::Corrupt {
                path: plan.path.clone(),
                position,
                reason: "file ends inside its written range".to_string(),
            });
        };
        result.batches.push(Bytes::copy_from_slice(bytes));
        COLD_READ_BYTES_COPIED.with(|copied| copied.set(copied.get() + total_bytes as u64));
        result.bytes += total_bytes;
        *batch_count += 1;
        next_offset = header.last_offset() + 1;
        scanner.advance(total_bytes);
        glommio::yield_if_needed().await;
    }
}

/// The offset after the last batch of `pieces` (whole batches, split
/// anywhere), read from the batch headers without joining the pieces; None
/// when there is no whole batch header.
pub fn next_offset_after_pieces(pieces: &[Bytes]) -> Option<i64> {
    /// baseOffset (8) batchLength (4) partitionLeaderEpoch (4) magic (1)
    /// crc (4) attributes (2) lastOffsetDelta (4).
    const PREFIX_BYTES: usize = 27;
    let mut piece = 0usize;
    let mut within = 0usize;
    let mut next = None;
    loop {
        // Copy the prefix of the batch at the cursor, across pieces.
        let mut prefix = [0u8; PREFIX_BYTES];
        let (mut p, mut w, mut filled) = (piece, within, 0usize);
        while filled < PREFIX_BYTES && p < pieces.len() {
            let available = &pieces[p][w.min(pieces[p].len())..];
            let take = available.len().min(PREFIX_BYTES - filled);
            prefix[filled..filled + take].copy_from_slice(&available[..take]);
            filled += take;
            w += take;
            if w >= pieces[p].len() {
                p += 1;
                w = 0;
            }
        }
        if filled < PREFIX_BYTES {
            return next;
        }
        let base_offset = i64::from_be_bytes(prefix[0..8].try_into().ok()?);
        let batch_length = i32::from_be_bytes(prefix[8..12].try_into().ok()?);
        let last_offset_delta = i32::from_be_bytes(prefix[23..27].try_into().ok()?);
        if batch_length < 0 || last_offset_delta < 0 {
            return next;
        }
        next = Some(base_offset + i64::from(last_offset_delta) + 1);
        // Skip the whole batch.
        let mut skip = 12 + batch_length as usize;
        while skip > 0 && piece < pieces.len() {
            let left = pieces[piece].len() - within;
            if skip < left {
                within += skip;
                skip = 0;
            } else {
                skip -= left;
                piece += 1;
                within = 0;
            }
        }
        if skip > 0 {
            return next;
        }
    }
}

/// Regroups the pieces of a [`ReadResult`] into one contiguous `Bytes` per
/// batch, with its parsed header.
///
/// # Panics
/// If the pieces do not form whole batches (the read path never does that).
pub fn whole_batches(result: ReadResult) -> Vec<(BatchHeader, Bytes)> {
    let mut batches = Vec::new();
    let mut pieces = result.batches.into_iter();
    while let Some(first) = pieces.next() {
        assert!(first.len() >= BATCH_HEADER_BYTES);
        let header = match parse_header(&first) {
            Ok(header) => header,
            Err(error) => panic!("read returned a piece that is not a batch start: {error}"),
        };
        let total_bytes = header.total_bytes();
        if first.len() == total_bytes {
            batches.push((header, first));
            continue;
        }
        let mut joined = BytesMut::with_capacity(total_bytes);
        joined.extend_from_slice(&first);
        while joined.len() < total_bytes {
            let Some(piece) = pieces.next() else {
                panic!("read returned a partial batch");
            };
            joined.extend_from_slice(&piece);
        }
        assert_eq!(joined.len(), total_bytes);
        batches.push((header, joined.freeze()));
    }
    batches
}

/// The offset and timestamp of the first record of `batch` that `wanted`
/// accepts, given its offset and timestamp. Records of a LogAppendTime batch all carry the
/// batch's maxTimestamp, as in Kafka. Compressed batches are decompressed.
///
/// # Errors
/// A sentence from the decoder when the records do not decode.
pub fn find_record_by_timestamp(
    batch: &Bytes,
    header: &BatchHeader,
    wanted: impl Fn(i64, i64) -> bool,
) -> Result<Option<(i64, i64)>, String> {
    let mut bytes = batch.clone();
    let record_set = RecordBatchDecoder::decode(&mut bytes).map_err(|error| error.to_string())?;
    for record in &record_set.records {
        let timestamp = if header.is_log_append_time() {
            header.max_timestamp
        } else {
            record.timestamp
        };
        if wanted(record.offset, timestamp) {
            return Ok(Some((record.offset, timestamp)));
        }
    }
    Ok(None)
}
