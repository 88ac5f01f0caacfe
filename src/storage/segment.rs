//! One segment of a partition log: its file names, the in-memory bookkeeping
//! (size, next offset, indexes, timestamps) and a chunked batch scanner over
//! its file.
//!
//! A `Segment` is plain data owned by the log's state on the partition's
//! shard; it is mutated synchronously by appends (which never await I/O) and
//! by recovery. The scanner does DMA reads and is used by recovery, index
//! rebuilds and cold reads.

use std::{
    cell::RefCell,
    collections::HashSet,
    io::Write,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    rc::Rc,
};

use glommio::io::{DmaFile, OpenOptions, ReadResult};

use super::{
    checkpoint::{run_blocking, sync_directory, write_file_synced},
    error::StorageError,
    index::{OffsetIndex, TimeIndex, OFFSET_INDEX_ENTRY_BYTES, TIME_INDEX_ENTRY_BYTES},
};
use crate::protocol::record_batch::{parse_header, BatchError, BatchHeader, BATCH_HEADER_BYTES};

/// Kafka's "no timestamp" value.
pub const NO_TIMESTAMP: i64 = -1;

/// Extension of segment data files.
pub const LOG_FILE_EXTENSION: &str = "log";
/// Extension of offset index files.
pub const INDEX_FILE_EXTENSION: &str = "index";
/// Extension of time index files.
pub const TIME_INDEX_FILE_EXTENSION: &str = "timeindex";

/// `<dir>/<base offset, 20 digits>.<extension>`, Kafka's file naming.
pub fn segment_file_path(dir: &Path, base_offset: i64, extension: &str) -> PathBuf {
    assert!(base_offset >= 0);
    dir.join(format!("{base_offset:020}.{extension}"))
}

/// The base offset in a `NNNNNNNNNNNNNNNNNNNN.log` file name, or `None` for
/// any other name (including Kafka's `.log.deleted`, `.log.swap`, ...).
pub fn parse_segment_file_name(name: &str) -> Option<i64> {
    let stem = name.strip_suffix(".log")?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse::<i64>().ok()
}

thread_local! {
    /// Devices on which this thread's glommio reactor has probed iopoll
    /// support with a real read.
    static PROBED_DEVICES: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

/// Name prefix of the scratch file used by [`ensure_iopoll_probed`].
const IOPOLL_PROBE_FILE: &str = ".ringbroker-iopoll-probe";

/// Makes sure this thread's glommio reactor has probed io_uring iopoll
/// support of the device holding `dir` with a read that reaches the device.
///
/// glommio probes iopoll on the first DMA open per device and thread, by
/// reading the first block of the file being opened, and caches the answer.
/// When that file is empty (a freshly created segment) the read ends at EOF
/// without reaching the device, the probe wrongly concludes that iopoll
/// works, and every later DMA read on that device fails with EOPNOTSUPP on
/// devices without poll queues (virtio disks, most cloud volumes). Opening a
/// non-empty scratch file first gives the probe a real read.
///
/// # Errors
/// I/O errors creating, opening or removing the scratch file.
pub async fn ensure_iopoll_probed(dir: &Path) -> Result<(), StorageError> {
    let dir_path = dir.to_path_buf();
    let device = run_blocking(move || {
        std::fs::metadata(&dir_path)
            .map(|metadata| metadata.dev())
            .map_err(|error| StorageError::io("stat of", &dir_path, error))
    })
    .await?;
    if PROBED_DEVICES.with(|devices| devices.borrow().contains(&device)) {
        return Ok(());
    }
    // One scratch file per thread: shards probe concurrently in the same
    // data directory at start-up.
    let probe_path = dir.join(format!("{IOPOLL_PROBE_FILE}-{}", nix::unistd::gettid()));
    let create_path = probe_path.clone();
    run_blocking(move || {
        let mut handle = std::fs::File::create(&create_path)
            .map_err(|error| StorageError::io("creating", &create_path, error))?;
        handle
            .write_all(&[0xA5; 4096])
            .and_then(|()| handle.sync_data())
            .map_err(|error| StorageError::io("writing", &create_path, error))
    })
    .await?;
    let opened = DmaFile::open(&probe_path).await;
    let removed = remove_probe_file(probe_path.clone()).await;
    let file = opened.map_err(|error| StorageError::glommio("opening", &probe_path, error))?;
    file.close()
        .await
        .map_err(|error| StorageError::glommio("closing", &probe_path, error))?;
    removed?;
    PROBED_DEVICES.with(|devices| devices.borrow_mut().insert(device));
    Ok(())
}

async fn remove_probe_file(path: PathBuf) -> Result<(), StorageError> {
    run_blocking(move || {
        std::fs::remove_file(&path).map_err(|error| StorageError::io("removing", &path, error))
    })
    .await
}

/// Creates the empty `.log` (opened for DMA reads and writes; its length
/// set to `initial_bytes` when not 0), `.index` and `.timeindex` files of
/// the segment at `base_offset` and fsyncs the directory, so the new
/// segment survives a crash once data is synced in it.
///
/// # Errors
/// Any failed create or fsync.
pub async fn create_segment_file(
    dir: &Path,
    base_offset: i64,
    initial_bytes: u64,
) -> Result<Rc<DmaFile>, StorageError> {
    ensure_iopoll_probed(dir).await?;
    let path = segment_file_path(dir, base_offset, LOG_FILE_EXTENSION);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .dma_open(&path)
        .await
        .map_err(|error| StorageError::glommio("creating", &path, error))?;
    if initial_bytes > 0 {
        // Kafka's `preallocate` on Linux: the file's length is set
        // (`RandomAccessFile.setLength`), sparse, no block allocated (so a
        // Kafka configuration that sets it reserves no disk here either).
        // Recovery cuts the zeros past the data, a roll or close the length.
        file.truncate(initial_bytes)
            .await
            .map_err(|error| StorageError::glommio("preallocating", &path, error))?;
    }
    write_file_synced(
        segment_file_path(dir, base_offset, INDEX_FILE_EXTENSION),
        Vec::new(),
    )
    .await?;
    write_file_synced(
        segment_file_path(dir, base_offset, TIME_INDEX_FILE_EXTENSION),
        Vec::new(),
    )
    .await?;
    sync_directory(dir).await?;
    Ok(Rc::new(file))
}

/// Bookkeeping of one segment. The file itself is written only by the log's
/// writer task; this struct describes the logical contents, which run ahead
/// of the file while appends are queued.
#[derive(Debug)]
pub struct Segment {
    /// Offset of the first batch (and the file name).
    pub base_offset: i64,
    /// The open `.log` file, shared with the writer; `None` until the writer
    /// has created the file of a freshly rolled segment.
    pub file: Option<Rc<DmaFile>>,
    /// Logical size: bytes of every batch appended, written or not.
    pub size_bytes: u64,
    /// Offset after the last batch (the base offset when empty).
    pub next_offset: i64,
    /// Sparse offset index.
    pub offset_index: OffsetIndex,
    /// Sparse time index.
    pub time_index: TimeIndex,
    /// Bytes appended since the last index entry (Kafka's
    /// `bytesSinceLastIndexEntry`).
    pub bytes_since_index_entry: u64,
    /// Largest batch maxTimestamp in the segment, or [`NO_TIMESTAMP`].
    pub max_timestamp: i64,
    /// Last offset of the first batch that reached `max_timestamp` (Kafka's
    /// "shallow offset of max timestamp").
    pub max_timestamp_offset: i64,
    /// maxTimestamp of the first batch: Kafka's `rollingBasedTimestamp`.
    pub first_batch_timestamp: Option<i64>,
    /// Wall-clock creation time, used for time-based rolls when batches carry
    /// no timestamp.
    pub created_ms: i64,
    /// The `.log` file is finished (cut to its size and synced) and the
    /// `.index` and `.timeindex` files are written: true for closed segments
    /// once the writer has completed their roll, for closed segments found at
    /// open, and for compacted segments. Only such segments are compacted.
    pub files_complete: bool,
    /// The file opened for buffered reads by the splice read path, once a
    /// fetch has used it.
    pub send_file: Option<std::sync::Arc<std::fs::File>>,
}

impl Segment {
    /// An empty segment starting at `base_offset`.
    pub fn new(base_offset: i64, created_ms: i64, index_bytes_max: u32) -> Self {
        assert!(base_offset >= 0);
        let index_bytes_max = index_bytes_max as usize;
        Segment {
            base_offset,
            file: None,
            size_bytes: 0,
            next_offset: base_offset,
            offset_index: OffsetIndex::new(
                base_offset,
                (index_bytes_max / OFFSET_INDEX_ENTRY_BYTES).max(1),
            ),
            time_index: TimeIndex::new(
                base_offset,
                (index_bytes_max / TIME_INDEX_ENTRY_BYTES).max(2),
            ),
            bytes_since_index_entry: 0,
            max_timestamp: NO_TIMESTAMP,
            max_timestamp_offset: base_offset,
            first_batch_timestamp: None,
            created_ms,
            files_complete: false,
            send_file: None,
        }
    }

    /// True when no batch was appended.
    pub fn is_empty(&self) -> bool {
        self.size_bytes == 0
    }

    /// Accounts for the batch `header` placed at `position` (the current end
    /// of the segment): size, next offset, timestamps and, every
    /// `index_interval_bytes`, an index entry. Kafka's `LogSegment.append`.
    /// Offsets may skip ahead (a compacted segment is sparse) but never go
    /// backwards.
    ///
    /// # Panics
    /// If the batch is not placed at the end, or starts below the segment's
    /// next offset.
    pub fn index_batch(&mut self, position: u64, header: &BatchHeader, index_interval_bytes: u32) {
        assert_eq!(
            position, self.size_bytes,
            "batches are placed at the segment's end"
        );
        assert!(
            header.base_offset >= self.next_offset,
            "offsets must not go backwards"
        );
        let last_offset = header.last_offset();
        let total_bytes = header.total_bytes() as u64;
        assert!(
            position + total_bytes <= u64::from(u32::MAX),
            "segment position overflows u32"
        );
        if header.max_timestamp > self.max_timestamp {
            self.max_timestamp = header.max_timestamp;
            self.max_timestamp_offset = last_offset;
        }
        if position == 0 {
            self.first_batch_timestamp = Some(header.max_timestamp);
        }
        if self.bytes_since_index_entry > u64::from(index_interval_bytes) {
            self.offset_index.append(last_offset, position as u32);
            self.time_index
                .maybe_append(self.max_timestamp, self.max_timestamp_offset);
            self.bytes_since_index_entry = 0;
        }
        self.bytes_since_index_entry += total_bytes;
        self.size_bytes = position + total_bytes;
        self.next_offset = last_offset + 1;
    }

    /// Adds the final time index entry for the segment's maximum timestamp,
    /// when the segment stops being active (at roll and at close).
    pub fn seal_time_index(&mut self) {
        if self.size_bytes > 0 {
            self.time_index
                .maybe_append(self.max_timestamp, self.max_timestamp_offset);
        }
    }
}

/// What the scanner found at its position.
#[derive(Debug, Clone, Copy)]
pub enum ScanStep {
    /// A batch header (the whole batch lies before the scan end, but its
    /// CRC is not checked yet).
    Batch(BatchHeader),
    /// Nothing more before the scan end.
    End,
    /// Bytes that are not a whole batch: torn, zero padding or garbage.
    Invalid(BatchError),
}

thread_local! {
    static SEGMENT_BYTES_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bytes this shard has asked segment file reads for (cold fetches, and
/// scans that rebuild state).
pub fn segment_bytes_read() -> u64 {
    SEGMENT_BYTES_READ.with(std::cell::Cell::get)
}

/// Reads the batches of a segment file front to back in large chunks.
pub struct SegmentScanner {
    file: Rc<DmaFile>,
    path: PathBuf,
    position: u64,
    end_position: u64,
    chunk: Option<ReadResult>,
    chunk_position: u64,
    chunk_bytes: usize,
}

impl SegmentScanner {
    /// Scans `[start_position, end_position)` of `file`, reading at least
    /// `chunk_bytes` at a time.
    pub fn new(
        file: Rc<DmaFile>,
        path: PathBuf,
        start_position: u64,
        end_position: u64,
        chunk_bytes: usize,
    ) -> Self {
        assert!(start_position <= end_position);
        assert!(chunk_bytes >= BATCH_HEADER_BYTES);
        SegmentScanner {
            file,
            path,
            position: start_position,
            end_position,
            chunk: None,
            chunk_position: 0,
            chunk_bytes,
        }
    }

    /// Byte position of the next batch.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Makes `[position, position + length)` available in the chunk; returns
    /// false when the file ends before that.
    async fn ensure(&mut self, length: usize) -> Result<bool, StorageError> {
        let wanted_end = self.position + length as u64;
        if let Some(chunk) = &self.chunk {
            if self.position >= self.chunk_position
                && wanted_end <= self.chunk_position + chunk.len() as u64
            {
                return Ok(true);
            }
        }
        let remaining = self.end_position - self.position;
        let read_bytes = (length.max(self.chunk_bytes) as u64).min(remaining) as usize;
        if read_bytes < length {
            return Ok(false);
        }
        self.chunk = None;
        SEGMENT_BYTES_READ.with(|read| read.set(read.get() + read_bytes as u64));
        let chunk = self
            .file
            .read_at(self.position, read_bytes)
            .await
            .map_err(|error| StorageError::glommio("reading", &self.path, error))?;
        self.chunk_position = self.position;
        let complete = chunk.len() >= length;
        self.chunk = Some(chunk);
        Ok(complete)
    }

    fn chunk_slice(&self, length: usize) -> &[u8] {
        let chunk = self.chunk.as_ref().expect("ensure() loaded a chunk");
        let start = (self.position - self.chunk_position) as usize;
        &chunk[start..start + length]
    }

    /// Parses the header at the current position, without moving.
    ///
    /// # Errors
    /// Only I/O errors; bad bytes are reported as [`ScanStep::Invalid`].
    pub async fn peek(&mut self) -> Result<ScanStep, StorageError> {
        if self.position >= self.end_position {
            return Ok(ScanStep::End);
        }
        let remaining = (self.end_position - self.position) as usize;
        let header_bytes = BATCH_HEADER_BYTES.min(remaining);
        if !self.ensure(header_bytes).await? || header_bytes < BATCH_HEADER_BYTES {
            return Ok(ScanStep::Invalid(BatchError::Truncated {
                needed: BATCH_HEADER_BYTES,
                available: remaining,
            }));
        }
        let header = match parse_header(self.chunk_slice(BATCH_HEADER_BYTES)) {
            Ok(header) => header,
            Err(error) => return Ok(ScanStep::Invalid(error)),
        };
        if header.total_bytes() > remaining {
            return Ok(ScanStep::Invalid(BatchError::Truncated {
                needed: header.total_bytes(),
                available: remaining,
            }));
        }
        Ok(ScanStep::Batch(header))
    }

    /// The `total_bytes` bytes of the batch at the current position, or
    /// `None` when the file is shorter than that.
    ///
    /// # Errors
    /// I/O errors.
    pub async fn batch_bytes(&mut self, total_bytes: usize) -> Result<Option<&[u8]>, StorageError> {
        if !self.ensure(total_bytes).await? {
            return Ok(None);
        }
        Ok(Some(self.chunk_slice(total_bytes)))
    }

    /// Reads from now on load at least `chunk_bytes` (at least one batch
    /// header) at a time.
    pub fn set_chunk_bytes(&mut self, chunk_bytes: usize) {
        self.chunk_bytes = chunk_bytes.max(BATCH_HEADER_BYTES);
    }

    /// Moves past the current batch.
    pub fn advance(&mut self, total_bytes: usize) {
        self.position += total_bytes as u64;
        assert!(self.position <= self.end_position);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// File names round-trip through Kafka's 20-digit form, and other files
    /// in a partition directory are not taken for segments.
    #[test]
    fn segment_file_names_follow_kafka() {
        let path = segment_file_path(Path::new("/d"), 42, LOG_FILE_EXTENSION);
        assert_eq!(path, Path::new("/d/00000000000000000042.log"));
        assert_eq!(
            parse_segment_file_name("00000000000000000042.log"),
            Some(42)
        );
        assert_eq!(parse_segment_file_name("00000000000000000042.index"), None);
        assert_eq!(
            parse_segment_file_name("00000000000000000042.log.deleted"),
            None
        );
        assert_eq!(parse_segment_file_name("42.log"), None);
    }
}
