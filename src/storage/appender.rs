//! The direct-I/O appender of the active segment file.
//!
//! Bytes are copied into an aligned DMA buffer that mirrors the file range
//! `[buffer_position, buffer_position + capacity)`. A full buffer is written
//! with one `write_at` and replaced by a fresh one; up to `write_behind`
//! writes are in flight at once. A flush (`write_partial`) writes the
//! buffer's blocks up to the end of the data, its last block padded with
//! zeros, from the buffer itself, and appends go on in a fresh buffer that
//! starts with a copy of that last partial block: each whole block is
//! written once and no appended byte is copied again, except those of the
//! partial block, which the next write rewrites as it fills. (Flushing
//! from a copy while the same buffer went on filling, as before, copied
//! every flushed byte once more and wrote it to the disk twice: 1.4-3x the
//! produced bytes reached the disk.) A flush of data that lies within one
//! partial block still writes it from a padded copy and keeps the buffer:
//! a fresh buffer per such flush raised the memory of an idle partition
//! from 11 to 20 KiB, as the allocator reuses freed aligned allocations
//! poorly. Because a partial write and the next write cover the same
//! block, the next write waits for the partial one: two writes to the same
//! block are never in flight together.
//!
//! Batches received straight into aligned memory of their own
//! (`direct.rs`) are not copied: `append_direct` puts the bytes in front of
//! such a batch in its first block into that memory and queues its whole
//! blocks, with the buffer's whole blocks before them, as a run that one
//! vectored write (`IORING_OP_WRITEV`) hands to the disk once it holds a
//! buffer's worth, or with the next partial-block write.
//!
//! Unlike glommio's `DmaStreamWriter`, the appender can resume at an existing
//! logical end after a restart: it reads the last partial block back into
//! its buffer.
//!
//! Pre-allocation: the appender writes zeros ahead of the tail in the
//! background (256 KiB first, doubling up to the configured step), so data
//! writes overwrite existing blocks. ext4 takes such O_DIRECT writes inline
//! (an extending or unwritten-extent write goes to io_uring's worker
//! threads, one file at a time), and an fdatasync after them has no inode
//! to write. `finish` cuts the zeros off; after a crash, recovery cuts them
//! as it cuts any invalid tail. A segment Kafka's `preallocate` made
//! `segment.bytes` long from its creation (sparse) is filled the same way,
//! from its data's end.
//!
//! Group commit: `start_sync` runs an fdatasync in the background while
//! later writes go on; the log collects it with `take_finished_sync`. Where
//! the shard shares one `syncfs` among its logs (`shard_sync.rs`), the
//! background sync waits for that instead.
//!
//! Owned by the log's single writer task on the partition's shard; nothing
//! else writes the file.

use std::{cell::Cell, collections::VecDeque, path::PathBuf, rc::Rc, sync::Arc};

use futures::FutureExt;
use glommio::{
    io::{DmaBuffer, DmaFile},
    Task,
};

use super::{
    direct::{self, DirectMem, DIRECT_ALIGNMENT},
    error::StorageError,
    notify::Signal,
    shard_sync::{shard_sync_for, ShardSync},
};

/// How an appender writes.
#[derive(Debug, Clone, Copy)]
pub struct AppenderSettings {
    /// Size of the first aligned DMA buffer, and of each one after a
    /// buffer written before it filled.
    pub buffer_bytes: usize,
    /// Largest buffer: one that fills is followed by one twice its size,
    /// up to this.
    pub buffer_bytes_max: usize,
    /// Most writes in flight.
    pub write_behind: usize,
    /// Largest zero-fill ahead of the tail (0: none).
    pub prealloc_max: u64,
}

/// Counters kept by the writer, read through `Log::stats`.
#[derive(Debug, Default)]
pub struct WriterCounters {
    /// `write_at` calls issued.
    pub write_count: Cell<u64>,
    /// Bytes handed to `write_at` (padding and rewrites included).
    pub write_bytes: Cell<u64>,
    /// `fdatasync` calls issued.
    pub fdatasync_count: Cell<u64>,
    /// Background syncs served by the shard's shared `syncfs` instead.
    pub shard_sync_count: Cell<u64>,
    /// Zeros written ahead of the tail (not in `write_bytes`).
    pub zero_fill_bytes: Cell<u64>,
}

/// An fdatasync issued while writes go on (group commit), with the log's
/// tag for what it covers.
struct InFlightSync {
    tag: i64,
    done: Rc<Cell<bool>>,
    task: Task<Result<(), StorageError>>,
}

/// Zeros being written over `[start, end)`, ahead of the data.
struct ZeroFill {
    start: u64,
    end: u64,
    done: Rc<Cell<bool>>,
    task: Task<Result<(), StorageError>>,
}

/// The first zero-fill of an appender; later ones double up to the maximum,
/// so a partition that takes little data costs little disk.
const PREALLOC_FIRST_STEP: u64 = 256 << 10;
/// Zeros written per DMA write of a fill.
const ZERO_CHUNK_BYTES: usize = 256 << 10;
/// Most buffers in one vectored write (the kernel takes up to 1024).
const RUN_BUFFERS_MAX: usize = 64;

/// Runs `work` as a task that sets the returned flag and notifies `signal`
/// when it ends, so the writer can collect it later without waiting.
pub(super) fn spawn_signalled<F>(
    signal: &Rc<Signal>,
    work: F,
) -> (Rc<Cell<bool>>, Task<Result<(), StorageError>>)
where
    F: std::future::Future<Output = Result<(), StorageError>> + 'static,
{
    let done = Rc::new(Cell::new(false));
    let task_done = done.clone();
    let signal = signal.clone();
    let task = glommio::spawn_local(async move {
        let result = work.await;
        task_done.set(true);
        signal.notify();
        result
    });
    (done, task)
}

/// Writes zeros over `[start, end)` (aligned), one chunk at a time.
async fn write_zeros(
    file: &DmaFile,
    path: &std::path::Path,
    start: u64,
    end: u64,
) -> Result<(), StorageError> {
    let mut position = start;
    while position < end {
        let bytes = ZERO_CHUNK_BYTES.min((end - position) as usize);
        let mut zeros = file.alloc_dma_buffer(bytes);
        zeros.as_bytes_mut().fill(0);
        let written = file
            .write_at(zeros, position)
            .await
            .map_err(|error| StorageError::glommio("zero-filling", path, error))?;
        if written != bytes {
            return Err(StorageError::io(
                "zero-filling",
                path,
                std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    format!("short write of {written} of {bytes} bytes at {position}"),
                ),
            ));
        }
        position += bytes as u64;
    }
    Ok(())
}

struct InFlightWrite {
    /// Logical end of the data this write makes durable-on-completion.
    logical_end: u64,
    done: Rc<Cell<bool>>,
    task: Task<Result<(), StorageError>>,
}

/// Appends to one segment file with O_DIRECT writes.
pub struct SegmentAppender {
    file: Rc<DmaFile>,
    path: PathBuf,
    alignment: u64,
    buffer: DmaBuffer,
    /// File position of `buffer[0]`; always aligned.
    buffer_position: u64,
    fill_bytes: usize,
    /// Logical bytes handed to a write so far.
    submitted_position: u64,
    /// Logical bytes whose writes have all completed.
    written_position: u64,
    in_flight: VecDeque<InFlightWrite>,
    /// The newest in-flight write is a partial-block write.
    partial_in_flight: bool,
    sync_in_flight: Option<InFlightSync>,
    /// End of the file as written or being written (data or zero-fill).
    covered_end: u64,
    zero_fill: Option<ZeroFill>,
    /// Size of the next zero-fill; doubles up to `prealloc_max` (0: off).
    prealloc_step: u64,
    prealloc_max: u64,
    write_behind: usize,
    /// Capacity of a buffer that follows one written before it filled.
    base_capacity: usize,
    /// Largest capacity a buffer grows to while buffers fill.
    max_capacity: usize,
    signal: Rc<Signal>,
    counters: Rc<WriterCounters>,
    /// The shard's shared `syncfs` when it covers this file; None: fdatasync.
    shard_sync: Option<Rc<ShardSync>>,
    /// Whole blocks not yet handed to a write, ending at `buffer_position`:
    /// batches written from their own memory (`append_direct`) and the
    /// buffer's blocks before them, written together by one vectored
    /// write once they add up to a buffer (or before any other write).
    run: Vec<DmaBuffer>,
    /// File position of the run's first block.
    run_start: u64,
}

impl SegmentAppender {
    /// An appender continuing `file` at `logical_size`. When the size is not
    /// aligned, the last partial block is read back into the buffer.
    ///
    /// `signal` is notified whenever a write completes.
    ///
    /// # Errors
    /// I/O errors reading the partial block.
    pub async fn open(
        file: Rc<DmaFile>,
        path: PathBuf,
        logical_size: u64,
        settings: AppenderSettings,
        signal: Rc<Signal>,
        counters: Rc<WriterCounters>,
    ) -> Result<Self, StorageError> {
        let AppenderSettings {
            buffer_bytes,
            buffer_bytes_max,
            write_behind,
            prealloc_max,
        } = settings;
        assert!(write_behind > 0);
        let alignment = file.alignment().max(4096);
        let capacity = (buffer_bytes as u64).div_ceil(alignment).max(1) * alignment;
        let max_capacity = (buffer_bytes_max as u64).div_ceil(alignment) * alignment;
        let max_capacity = max_capacity.max(capacity);
        let mut buffer = file.alloc_dma_buffer(capacity as usize);
        let buffer_position = logical_size / alignment * alignment;
        let fill_bytes = (logical_size - buffer_position) as usize;
        if fill_bytes > 0 {
            let block = file
                .read_at_aligned(buffer_position, alignment as usize)
                .await
                .map_err(|error| StorageError::glommio("reading last block of", &path, error))?;
            if block.len() < fill_bytes {
                return Err(StorageError::Corrupt {
                    path,
                    position: buffer_position,
                    reason: format!("file is shorter than its logical size {logical_size}"),
                });
            }
            buffer.as_bytes_mut()[..fill_bytes].copy_from_slice(&block[..fill_bytes]);
        }
        let shard_sync = shard_sync_for(file.as_ref());
        Ok(SegmentAppender {
            file,
            path,
            alignment,
            buffer,
            buffer_position,
            fill_bytes,
            submitted_position: logical_size,
            written_position: logical_size,
            in_flight: VecDeque::new(),
            partial_in_flight: false,
            sync_in_flight: None,
            // From the data's end, not the file's: a segment preallocated
            // (`preallocate`) is longer than its data, and its blocks are
            // still to be zero-filled ahead of the writes.
            covered_end: logical_size,
            zero_fill: None,
            prealloc_step: PREALLOC_FIRST_STEP.min(prealloc_max),
            prealloc_max,
            write_behind,
            base_capacity: capacity as usize,
            max_capacity: max_capacity as usize,
            shard_sync,
            signal,
            counters,
            run: Vec::new(),
            run_start: 0,
        })
    }

    /// Bytes appended so far, written or not.
    pub fn logical_size(&self) -> u64 {
        self.buffer_position + self.fill_bytes as u64
    }

    /// Appended bytes not yet handed to a write.
    pub fn has_unsubmitted(&self) -> bool {
        self.submitted_position < self.logical_size()
    }

    /// Some write (data or partial block) has not been collected yet.
    pub fn writes_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// Bytes whose writes have completed (a prefix of the file).
    pub fn written_position(&self) -> u64 {
        self.written_position
    }

    /// Copies `bytes` into the buffer, writing each buffer that fills. Waits
    /// only when `write_behind` writes are already in flight.
    ///
    /// # Errors
    /// The error of a completed write that failed.
    pub async fn append(&mut self, mut bytes: &[u8]) -> Result<(), StorageError> {
        while !bytes.is_empty() {
            let capacity = self.buffer.len();
            let copy_bytes = (capacity - self.fill_bytes).min(bytes.len());
            self.buffer.as_bytes_mut()[self.fill_bytes..self.fill_bytes + copy_bytes]
                .copy_from_slice(&bytes[..copy_bytes]);
            self.fill_bytes += copy_bytes;
            bytes = &bytes[copy_bytes..];
            if self.fill_bytes == capacity {
                self.write_full_buffer().await?;
            }
        }
        Ok(())
    }

    /// The batch in `mem` can be written from there: it starts at the
    /// logical end's place in its block (see `direct.rs`).
    pub fn can_append_direct(&self, mem: &DirectMem) -> bool {
        self.alignment == DIRECT_ALIGNMENT as u64
            && self.logical_size() % self.alignment == mem.head() as u64
    }

    /// Appends the batch `mem` holds without copying its whole blocks: the
    /// bytes in front of it in its first block are copied into `mem`, the
    /// buffer's whole blocks before them are written, then the batch's whole
    /// blocks straight from `mem`; its last partial block continues in the
    /// buffer. Waits only when `write_behind` writes are in flight.
    ///
    /// # Errors
    /// The error of a completed write that failed.
    ///
    /// # Panics
    /// Unless `can_append_direct(&mem)`.
    pub async fn append_direct(&mut self, mem: Arc<DirectMem>) -> Result<(), StorageError> {
        assert!(self.can_append_direct(&mem));
        let head = mem.head();
        let block_start = self.logical_size() - head as u64;
        let from = (block_start - self.buffer_position) as usize;
        assert_eq!(self.fill_bytes - from, head);
        // SAFETY: nothing views the bytes in front of the records, and no
        // write of this memory has been issued yet.
        unsafe { mem.write(0, &self.buffer.as_bytes()[from..self.fill_bytes]) };
        if block_start > self.buffer_position && self.submitted_position < block_start {
            let capacity = self.buffer.len();
            let mut whole =
                std::mem::replace(&mut self.buffer, self.file.alloc_dma_buffer(capacity));
            whole.trim_to_size(from);
            self.add_to_run(whole, self.buffer_position);
        }
        let end = head + mem.records_len();
        let whole_bytes = end / DIRECT_ALIGNMENT * DIRECT_ALIGNMENT;
        if whole_bytes > 0 {
            // SAFETY: `mem` is aligned and kept alive by the buffer; its
            // first `whole_bytes` are not written again (only its head was,
            // above).
            let buffer = unsafe {
                DmaBuffer::from_foreign(mem.base_ptr(), whole_bytes, Box::new(mem.clone()))
            };
            self.add_to_run(buffer, block_start);
        }
        self.buffer_position = block_start + whole_bytes as u64;
        self.fill_bytes = end - whole_bytes;
        self.buffer.as_bytes_mut()[..self.fill_bytes].copy_from_slice(mem.bytes(whole_bytes, end));
        let in_place = whole_bytes.saturating_sub(head);
        direct::count_in_place(in_place);
        direct::count_copied(mem.records_len() - in_place);
        if self.run_bytes() >= self.buffer.len() as u64 || self.run.len() >= RUN_BUFFERS_MAX {
            self.write_run().await?;
        }
        Ok(())
    }

    /// Adds whole blocks at `position` (the run's end) to the run.
    fn add_to_run(&mut self, buffer: DmaBuffer, position: u64) {
        if self.run.is_empty() {
            self.run_start = position;
        }
        assert_eq!(position, self.run_start + self.run_bytes());
        self.run.push(buffer);
    }

    fn run_bytes(&self) -> u64 {
        self.run.iter().map(|buffer| buffer.len() as u64).sum()
    }

    /// Hands the run to one vectored write.
    async fn write_run(&mut self) -> Result<(), StorageError> {
        if self.run.is_empty() {
            return Ok(());
        }
        self.make_room_for_write().await?;
        let start = self.run_start;
        let end = start + self.run_bytes();
        self.prepare_write(start, end).await?;
        let run = std::mem::take(&mut self.run);
        self.submit(run, start, end, false);
        Ok(())
    }

    async fn write_full_buffer(&mut self) -> Result<(), StorageError> {
        assert_eq!(self.fill_bytes, self.buffer.len());
        self.write_run().await?;
        self.make_room_for_write().await?;
        let capacity = self.buffer.len();
        // A partition whose buffers fill gets larger ones: fewer writes,
        // each an appending O_DIRECT write that ext4 handles in io_uring's
        // workers at a cost per write (block allocation, inode update).
        let next_capacity = (capacity * 2).min(self.max_capacity).max(capacity);
        let full = std::mem::replace(&mut self.buffer, self.file.alloc_dma_buffer(next_capacity));
        let position = self.buffer_position;
        self.buffer_position += capacity as u64;
        self.fill_bytes = 0;
        self.prepare_write(position, self.buffer_position).await?;
        self.submit(vec![full], position, self.buffer_position, false);
        Ok(())
    }

    /// Writes the data not yet handed to a write, padding the last block
    /// with zeros. Does not wait for the write to complete.
    ///
    /// # Errors
    /// The error of a completed write that failed.
    pub async fn write_partial(&mut self) -> Result<(), StorageError> {
        let logical_end = self.logical_size();
        if self.submitted_position >= logical_end {
            return Ok(());
        }
        self.make_room_for_write().await?;
        // The run's whole blocks, if any, go in the same (vectored) write.
        let mut buffers = std::mem::take(&mut self.run);
        let start = if buffers.is_empty() {
            self.submitted_position / self.alignment * self.alignment
        } else {
            self.run_start
        };
        // A run ends where the buffer starts, and no flush submits the
        // buffer past its first block without replacing it: the write
        // takes the buffer from its start.
        let copy_start = self.buffer_position;
        assert!(if buffers.is_empty() {
            start == copy_start
        } else {
            start < copy_start
        });
        let end = logical_end.div_ceil(self.alignment) * self.alignment;
        let last_block = logical_end / self.alignment * self.alignment;
        let partial = logical_end > last_block;
        if end > copy_start && last_block == copy_start {
            // Only a partial block: written from a zero-padded copy, while
            // the buffer goes on filling it (the next write rewrites it
            // anyway). No fresh buffer for a log flushed a few bytes at a
            // time, or idle after them.
            let data_bytes = (logical_end - copy_start) as usize;
            let mut copy = self.file.alloc_dma_buffer((end - copy_start) as usize);
            let copy_bytes = copy.as_bytes_mut();
            copy_bytes[..data_bytes].copy_from_slice(&self.buffer.as_bytes()[..data_bytes]);
            copy_bytes[data_bytes..].fill(0);
            buffers.push(copy);
        } else if end > copy_start {
            // The buffer's blocks go to the disk as they are; appends
            // continue in a fresh buffer from the last block, of the base
            // size: this log's data did not fill its buffer in time.
            let tail_bytes = (logical_end - last_block) as usize;
            let mut fresh = self.file.alloc_dma_buffer(self.base_capacity);
            let tail_from = (last_block - self.buffer_position) as usize;
            fresh.as_bytes_mut()[..tail_bytes]
                .copy_from_slice(&self.buffer.as_bytes()[tail_from..tail_from + tail_bytes]);
            let mut written = std::mem::replace(&mut self.buffer, fresh);
            let data_end = (logical_end - self.buffer_position) as usize;
            let pad_end = (end - self.buffer_position) as usize;
            written.as_bytes_mut()[data_end..pad_end].fill(0);
            written.trim_to_size(pad_end);
            buffers.push(written);
            self.buffer_position = last_block;
            self.fill_bytes = tail_bytes;
        }
        self.prepare_write(start, end).await?;
        self.submit(buffers, start, logical_end, partial);
        Ok(())
    }

    /// Before a data write of `[start, end)`: waits for a zero-fill it
    /// would overlap (two writes to one block are never in flight together),
    /// collects a finished one, and starts the next fill once the writes get
    /// within half a step of the filled end.
    async fn prepare_write(&mut self, start: u64, end: u64) -> Result<(), StorageError> {
        if let Some(fill) = &self.zero_fill {
            if fill.done.get() || fill.start < end && start < fill.end {
                self.wait_zero_fill().await?;
            }
        }
        self.covered_end = self.covered_end.max(end);
        if self.prealloc_max == 0 || self.zero_fill.is_some() {
            return Ok(());
        }
        if end + self.prealloc_step / 2 < self.covered_end {
            return Ok(());
        }
        let fill_start = self.covered_end.div_ceil(self.alignment) * self.alignment;
        let fill_end = fill_start + self.prealloc_step;
        self.prealloc_step = (self.prealloc_step * 2).min(self.prealloc_max);
        self.covered_end = fill_end;
        self.counters
            .zero_fill_bytes
            .set(self.counters.zero_fill_bytes.get() + (fill_end - fill_start));
        let file = self.file.clone();
        let path = self.path.clone();
        let (done, task) = spawn_signalled(&self.signal, async move {
            write_zeros(&file, &path, fill_start, fill_end).await
        });
        self.zero_fill = Some(ZeroFill {
            start: fill_start,
            end: fill_end,
            done,
            task,
        });
        Ok(())
    }

    async fn wait_zero_fill(&mut self) -> Result<(), StorageError> {
        if let Some(fill) = self.zero_fill.take() {
            fill.task.await?;
        }
        Ok(())
    }

    /// Waits until another write may be issued without two writes covering
    /// the same block or more than `write_behind` writes in flight.
    async fn make_room_for_write(&mut self) -> Result<(), StorageError> {
        if self.partial_in_flight {
            self.wait_all().await?;
        }
        while self.in_flight.len() >= self.write_behind {
            self.wait_oldest().await?;
        }
        Ok(())
    }

    /// Writes `buffers` one after another from `position` (one vectored
    /// write when there are several).
    fn submit(&mut self, buffers: Vec<DmaBuffer>, position: u64, logical_end: u64, partial: bool) {
        assert_eq!(position % self.alignment, 0);
        assert!(buffers
            .iter()
            .all(|buffer| buffer.len() as u64 % self.alignment == 0));
        assert!(logical_end >= self.submitted_position);
        let file = self.file.clone();
        let path = self.path.clone();
        let expected_bytes = buffers.iter().map(DmaBuffer::len).sum::<usize>();
        self.counters
            .write_count
            .set(self.counters.write_count.get() + 1);
        self.counters
            .write_bytes
            .set(self.counters.write_bytes.get() + expected_bytes as u64);
        // The shard's next sync waits for this write if asked while it runs.
        let in_flight = self.shard_sync.as_ref().map(ShardSync::write_started);
        let (done, task) = spawn_signalled(&self.signal, async move {
            let _in_flight = in_flight;
            let written = if buffers.len() == 1 {
                let buffer = buffers.into_iter().next().expect("one buffer");
                file.write_at(buffer, position).await
            } else {
                file.write_vectored_at(buffers, position).await
            };
            match written {
                Ok(written) if written == expected_bytes => Ok(()),
                Ok(written) => Err(StorageError::io(
                    "writing",
                    path,
                    std::io::Error::new(
                        std::io::ErrorKind::WriteZero,
                        format!("short write of {written} of {expected_bytes} bytes at {position}"),
                    ),
                )),
                Err(error) => Err(StorageError::glommio("writing", path, error)),
            }
        });
        self.in_flight.push_back(InFlightWrite {
            logical_end,
            done,
            task,
        });
        self.partial_in_flight = partial;
        self.submitted_position = logical_end;
    }

    async fn wait_oldest(&mut self) -> Result<(), StorageError> {
        let Some(write) = self.in_flight.pop_front() else {
            return Ok(());
        };
        write.task.await?;
        self.written_position = self.written_position.max(write.logical_end);
        if self.in_flight.is_empty() {
            self.partial_in_flight = false;
        }
        Ok(())
    }

    /// Waits for every in-flight write.
    ///
    /// # Errors
    /// The first failed write.
    pub async fn wait_all(&mut self) -> Result<(), StorageError> {
        while !self.in_flight.is_empty() {
            self.wait_oldest().await?;
        }
        self.partial_in_flight = false;
        Ok(())
    }

    /// Collects writes that have completed, in order, without waiting.
    ///
    /// # Errors
    /// The first failed write.
    pub fn reap(&mut self) -> Result<(), StorageError> {
        while self.in_flight.front().is_some_and(|write| write.done.get()) {
            let Some(mut write) = self.in_flight.pop_front() else {
                break;
            };
            match (&mut write.task).now_or_never() {
                Some(result) => result?,
                None => {
                    // Marked done but not yet finished polling: put it back
                    // and let a later reap or wait collect it.
                    self.in_flight.push_front(write);
                    break;
                }
            }
            self.written_position = self.written_position.max(write.logical_end);
        }
        if self.in_flight.is_empty() {
            self.partial_in_flight = false;
        }
        Ok(())
    }

    /// Writes everything, waits for it, cuts the file to its logical size
    /// (dropping the zero padding of the last block) and fdatasyncs it.
    /// Returns the logical size.
    ///
    /// # Errors
    /// Any failed write, truncate or fdatasync.
    pub async fn finish(&mut self) -> Result<u64, StorageError> {
        let logical_size = self.finish_writes().await?;
        self.sync().await?;
        Ok(logical_size)
    }

    /// `finish` without its fdatasync: writes everything, waits for it and
    /// cuts the file to its logical size. Returns the logical size.
    ///
    /// # Errors
    /// Any failed write or truncate.
    pub async fn finish_writes(&mut self) -> Result<u64, StorageError> {
        // A background sync in progress is covered by the caller's; a
        // zero-fill must end before the truncate, or it would grow the file
        // again.
        self.wait_sync().await?;
        self.wait_zero_fill().await?;
        self.write_partial().await?;
        self.wait_all().await?;
        // The last write may have started another fill (`prepare_write`).
        self.wait_zero_fill().await?;
        let logical_size = self.logical_size();
        assert_eq!(self.written_position, logical_size);
        self.file
            .truncate(logical_size)
            .await
            .map_err(|error| StorageError::glommio("truncating", &self.path, error))?;
        Ok(logical_size)
    }

    /// fdatasync of the file (does not write buffered data first).
    ///
    /// # Errors
    /// The fdatasync failure.
    pub async fn sync(&self) -> Result<(), StorageError> {
        self.fdatasync().await
    }

    /// One fdatasync of the file, counted; the future owns what it needs,
    /// so it can run as a background task too.
    fn fdatasync(&self) -> impl std::future::Future<Output = Result<(), StorageError>> {
        self.counters
            .fdatasync_count
            .set(self.counters.fdatasync_count.get() + 1);
        let file = self.file.clone();
        let path = self.path.clone();
        #[cfg(test)]
        let delay = FDATASYNC_DELAY_FOR_TESTS.with(std::cell::Cell::get);
        async move {
            #[cfg(test)]
            glommio::timer::sleep(delay).await;
            file.fdatasync()
                .await
                .map_err(|error| StorageError::glommio("fdatasync", path, error))
        }
    }

    /// An fdatasync started by `start_sync` has not been collected yet.
    pub fn sync_in_flight(&self) -> bool {
        self.sync_in_flight.is_some()
    }

    /// A sync started by `start_sync` is still running (not just
    /// uncollected).
    pub fn sync_running(&self) -> bool {
        self.sync_in_flight
            .as_ref()
            .is_some_and(|sync| !sync.done.get())
    }

    /// Starts an fdatasync in the background and returns at once, so writes
    /// go on while it runs; it covers the writes completed before the call.
    /// `tag` comes back from `take_finished_sync` once it is done. The
    /// signal is notified when it completes. One at a time.
    pub fn start_sync(&mut self, tag: i64) {
        assert!(
            self.sync_in_flight.is_none(),
            "one background sync at a time"
        );
        let (done, task) = if let Some(shard_sync) = self.shard_sync.clone() {
            self.counters
                .shard_sync_count
                .set(self.counters.shard_sync_count.get() + 1);
            spawn_signalled(&self.signal, shard_sync.sync())
        } else {
            spawn_signalled(&self.signal, self.fdatasync())
        };
        self.sync_in_flight = Some(InFlightSync { tag, done, task });
    }

    /// The tag of the background sync if it has finished (its task may
    /// still need a poll to hand over its result, so this awaits it, which
    /// never waits for the disk); None while it runs.
    ///
    /// # Errors
    /// The sync's failure.
    pub async fn take_finished_sync(&mut self) -> Result<Option<i64>, StorageError> {
        if !self
            .sync_in_flight
            .as_ref()
            .is_some_and(|sync| sync.done.get())
        {
            return Ok(None);
        }
        self.wait_sync().await
    }

    /// Waits for the background sync, if any, and returns its tag.
    ///
    /// # Errors
    /// The sync's failure.
    pub async fn wait_sync(&mut self) -> Result<Option<i64>, StorageError> {
        let Some(sync) = self.sync_in_flight.take() else {
            return Ok(None);
        };
        sync.task.await?;
        Ok(Some(sync.tag))
    }
}

#[cfg(test)]
thread_local! {
    /// Delays each fdatasync of an appender (tests of what runs meanwhile).
    pub(super) static FDATASYNC_DELAY_FOR_TESTS: std::cell::Cell<std::time::Duration> =
        const { std::cell::Cell::new(std::time::Duration::ZERO) };
}

impl Drop for SegmentAppender {
    fn drop(&mut self) {
        // Dropping a glommio task cancels it; let writes already issued
        // finish instead, so what was handed to the disk gets there.
        for write in self.in_flight.drain(..) {
            drop(write.task.detach());
        }
        if let Some(sync) = self.sync_in_flight.take() {
            drop(sync.task.detach());
        }
        if let Some(fill) = self.zero_fill.take() {
            drop(fill.task.detach());
        }
    }
}
