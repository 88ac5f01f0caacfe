//! The splice read path (`--cold-read-path splice`): a fetch below the
//! in-memory tail returns *ranges of segment files* rather than bytes, and
//! the connection moves them file -> pipe -> socket with splice(2), so the
//! record bytes never enter user space. The ranges are found by walking the
//! batch headers through the page cache (`pread` of each 61-byte header,
//! after `posix_fadvise(WILLNEED)` over the range the budget allows and
//! the next fetches' share, see [`READ_AHEAD_FETCHES`]), on a blocking-pool
//! thread: a read that misses the page cache waits for the disk there, not
//! on the shard.
//!
//! Kernel facts this path lives with: the broker writes segments with
//! O_DIRECT, so a file's first buffered read comes from the disk (later
//! ones from the page cache); and the active segment's last partial block
//! is rewritten by every DMA write, so a buffered read could cache a stale
//! copy of it. The walk therefore stops at the last whole block of the
//! active segment (the rest is read by DMA), and turns off the kernel's own
//! readahead on its descriptor (`POSIX_FADV_RANDOM`), so only the blocks
//! asked for are ever cached.
//!
//! Runs on the partition's shard; the ranges cross cores as
//! [`FileRange`]s holding their file open.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use super::checkpoint::run_blocking;
use super::error::StorageError;
use super::reader::ReadLimits;
use crate::protocol::record_batch::{parse_header, BATCH_HEADER_BYTES};

/// Size of the blocks a DMA write may rewrite (the tail block of the active
/// segment), rounded up to whole pages: the page cache caches whole pages,
/// so a splice range must stop at a page boundary too.
pub fn rewrite_block_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page).unwrap_or(4096).max(4096)
}

/// Read-ahead of a consumer's segment reads: besides the range a fetch may
/// take, each walk asks the kernel for what the next this-many fetches of
/// the same size would take (at most [`READ_AHEAD_BYTES_MAX`] more), so a
/// consumer catching up finds its next fetch on its way from the disk
/// instead of waiting for it. The kernel's own readahead is off on these
/// descriptors (see above), and never reaches past the walk's end.
pub const READ_AHEAD_FETCHES: u64 = 2;
/// Most bytes one walk asks for beyond its own budget.
pub const READ_AHEAD_BYTES_MAX: u64 = 8 << 20;

/// Whole batches of a segment file, sent by splice. The descriptor stays
/// open while any range holds it, so a segment deleted meanwhile (by
/// compaction or topic deletion) still reads back what was planned.
#[derive(Debug, Clone)]
pub struct FileRange {
    /// The segment file, opened for buffered reads.
    pub file: Arc<File>,
    /// Byte position of the first batch.
    pub position: u64,
    /// Bytes of whole batches from `position`.
    pub len: usize,
}

/// Part of a fetch's record data: bytes in memory, or a file range.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Bytes held in memory (the in-memory tail, a DMA read, framing).
    Memory(Bytes),
    /// Bytes of a segment file.
    File(FileRange),
}

impl Piece {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Piece::Memory(bytes) => bytes.len(),
            Piece::File(range) => range.len,
        }
    }

    /// True when the piece holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a header walk found.
#[derive(Debug)]
pub struct Walk {
    /// The buffered descriptor of the segment (to keep for the next walk).
    pub file: Arc<File>,
    /// Whole batches within the limits: (position, bytes); none when
    /// nothing qualified.
    pub range: Option<(u64, usize)>,
    /// Batches in `range`.
    pub batch_count: usize,
    /// Offset after the last batch in `range` (or the target when empty).
    pub next_offset: i64,
    /// Position the walk stopped at.
    pub stopped_at: u64,
    /// True when a limit stopped the walk (not the end of the range).
    pub limit_reached: bool,
}

/// Where a walk gets its buffered descriptor.
#[derive(Debug)]
pub enum SendFile {
    /// The one a previous walk of this segment opened.
    Open(Arc<File>),
    /// A duplicate of the segment's DMA descriptor, to reopen without
    /// O_DIRECT. Reopening the very inode (not the path) cannot pick up a
    /// file that compaction renamed into place meanwhile.
    Reopen(std::os::fd::OwnedFd),
}

/// Reopens the file behind `dma` for buffered reads with the kernel's
/// readahead off (only the blocks a walk asks for are cached).
fn open_for_send(dma: &std::os::fd::OwnedFd, path: &PathBuf) -> Result<File, StorageError> {
    let file = File::open(format!("/proc/self/fd/{}", dma.as_raw_fd()))
        .map_err(|error| StorageError::io("reopening for splice", path, error))?;
    // SAFETY: fadvise on a descriptor we own; it only changes caching hints.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    Ok(file)
}

/// Walks the batch headers of `path` from `start` (a batch start) up to
/// `end` (exclusive, a batch boundary or the last whole block of an active
/// segment) and finds the whole batches from the one holding
/// `limits.target_offset` that fit the limits, jumping from the first of
/// them to `jump` (a batch start the caller found in the offset index, all
/// batches before it within the limits) when given; `used_bytes` and
/// `batches_before` are what the read already holds. Runs on a blocking
/// thread.
///
/// # Errors
/// I/O errors, and [`StorageError::Corrupt`] when a header inside the range
/// does not parse.
#[allow(clippy::too_many_arguments)]
pub async fn walk_headers(
    file: SendFile,
    path: PathBuf,
    start: u64,
    end: u64,
    jump: Option<u64>,
    limits: ReadLimits,
    used_bytes: usize,
    batches_before: usize,
) -> Result<Walk, StorageError> {
    run_blocking(move || {
        let file = match file {
            SendFile::Open(file) => file,
            SendFile::Reopen(dma) => Arc::new(open_for_send(&dma, &path)?),
        };
        // Ask for the blocks the budget can use at once, and for the next
        // fetches' (the kernel's readahead is off).
        let budget = limits.max_bytes.saturating_sub(used_bytes) as u64;
        let ahead = budget
            .saturating_mul(READ_AHEAD_FETCHES)
            .min(READ_AHEAD_BYTES_MAX);
        let wanted = budget
            .saturating_add(ahead)
            .saturating_add(2 * rewrite_block_bytes())
            .min(end - start);
        will_need(&file, start, wanted);
        let mut walk = Walk {
            file: file.clone(),
            range: None,
            batch_count: 0,
            next_offset: limits.target_offset,
            stopped_at: start,
            limit_reached: false,
        };
        let mut position = start;
        let mut header_bytes = [0u8; BATCH_HEADER_BYTES];
        loop {
            walk.stopped_at = position;
            if position + BATCH_HEADER_BYTES as u64 > end {
                return Ok(walk);
            }
            read_exact_at(&file, &mut header_bytes, position)
                .map_err(|error| StorageError::io("reading", &path, error))?;
            let header = parse_header(&header_bytes).map_err(|error| StorageError::Corrupt {
                path: path.clone(),
                position,
                reason: format!("written range does not parse: {error}"),
            })?;
            let total_bytes = header.total_bytes();
            if position + total_bytes as u64 > end {
                return Ok(walk);
            }
            if header.last_offset() < limits.target_offset {
                position += total_bytes as u64;
                continue;
            }
            let taken = walk.range.map_or(0, |(_, len)| len);
            let first = limits.min_one_batch && batches_before + walk.batch_count == 0;
            if header.base_offset >= limits.max_offset_exclusive
                || (used_bytes + taken + total_bytes > limits.max_bytes && !first)
            {
                walk.limit_reached = true;
                return Ok(walk);
            }
            walk.range = Some((walk.range.map_or(position, |(p, _)| p), taken + total_bytes));
            walk.batch_count += 1;
            walk.next_offset = header.last_offset() + 1;
            position += total_bytes as u64;
            if let Some(target) = jump.filter(|&target| target > position && target <= end) {
                // Whole batches up to an indexed batch start, all within the
                // limits (see the caller): no need to read their headers.
                // `next_offset` stays below them, which only makes a DMA
                // read of a remainder start earlier.
                let (first, len) = walk.range.expect("a batch was just taken");
                walk.range = Some((first, len + (target - position) as usize));
                position = target;
            }
        }
    })
    .await
}

/// Largest range one `WILLNEED` asks for: the kernel reads at most the
/// larger of the device's largest I/O and the file's readahead window per
/// call, and drops the rest (128 KiB of readahead is a common default, this
/// machine has 8 MiB), so longer ranges are asked for in pieces.
const WILL_NEED_CHUNK_BYTES: u64 = 128 << 10;

/// Asks the kernel to start reading `[start, start + len)` of `file` into
/// the page cache (without waiting for it).
fn will_need(file: &File, start: u64, len: u64) {
    let end = start.saturating_add(len);
    let mut position = start;
    while position < end {
        let chunk = (end - position).min(WILL_NEED_CHUNK_BYTES);
        // SAFETY: fadvise on a descriptor we hold; a hint only.
        unsafe {
            libc::posix_fadvise(
                file.as_raw_fd(),
                position as libc::off_t,
                chunk as libc::off_t,
                libc::POSIX_FADV_WILLNEED,
            )
        };
        position += chunk;
    }
}

fn read_exact_at(file: &File, buffer: &mut [u8], position: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buffer, position)
}
