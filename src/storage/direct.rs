//! Records received straight into write memory (issue 5, the write path).
//!
//! When a Produce request's connection is on the shard that owns the
//! partition, the connection asks the log for a [`DirectSlot`] as soon as it
//! has read the partition's framing (`produce_frame.rs`, records of 32 KiB
//! and more): aligned memory in which the records start where the log
//! predicts they will start within their first disk block (the partition's end plus the records reserved
//! before them and not yet appended). The records are received (or, for a
//! frame read whole, copied once) into it. When the append finds the batch
//! where predicted, the writer copies the few bytes in front of it in its
//! first block into the same memory and DMA-writes the batch's whole blocks
//! from there (`SegmentAppender::append_direct`): no user-space copy between
//! the socket and the memory the disk reads, except the batch's last
//! partial block, which joins the appender's buffer. Consecutive batches
//! are file-contiguous that way, so they go to the disk together, one
//! vectored write per write-buffer's worth (one write per batch cost more
//! CPU in io_uring's workers than the copy saved). When the prediction
//! fails (another connection appended in between, a batch was refused, the
//! segment rolled), the batch is appended by copy as any other.
//!
//! Freed memory is kept per thread (up to [`POOL_BYTES_MAX`]) and reused:
//! zeroing a fresh allocation before receiving into it cost as much as the
//! copy this saves.
//!
//! The memory is shared read-only, as `Bytes`, with the partition's
//! in-memory tail, which fetches on any core read: the tail holds the
//! stamped header as a copy and the body as a view of this memory. Only the
//! bytes no view covers are ever written after the records arrive: the
//! block's bytes in front of the batch and the batch header (stamped by the
//! log, after the one view that covered it, the request's, is dropped).

use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

use bytes::Bytes;

/// Alignment of direct memory: the block size O_DIRECT writes need here
/// (an appender with a larger alignment copies instead).
pub const DIRECT_ALIGNMENT: usize = 4096;

/// Most slots a log hands out that are not appended yet (pipelined
/// requests); past it records are read into ordinary buffers.
const LIVE_SLOTS_MAX: usize = 64;

/// Allocations are rounded up to a multiple of this (of the block size
/// below it), so freed ones fit later batches of about the same size.
const ALLOCATION_GRANULE: usize = 64 << 10;

/// Bytes of freed allocations a thread keeps for reuse: a reused one is
/// already initialized, so records are received into it without zeroing
/// it first (which cost as much as the copy it saves).
const POOL_BYTES_MAX: usize = 16 << 20;

thread_local! {
    static BYTES_IN_PLACE: Cell<u64> = const { Cell::new(0) };
    static BYTES_COPIED: Cell<u64> = const { Cell::new(0) };
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// Freed allocations of this thread by size, kept for reuse.
#[derive(Default)]
struct Pool {
    free: HashMap<usize, Vec<NonNull<u8>>>,
    bytes: usize,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for (size, bases) in self.free.drain() {
            if let Ok(layout) = Layout::from_size_align(size, DIRECT_ALIGNMENT) {
                for base in bases {
                    // SAFETY: allocated by `allocate` with this layout.
                    unsafe { std::alloc::dealloc(base.as_ptr(), layout) }
                }
            }
        }
    }
}

/// An aligned allocation of at least `size` bytes, initialized: a freed
/// one of this thread when one fits, else a zeroed new one.
fn allocate(size: usize) -> Option<(NonNull<u8>, Layout)> {
    let granule = if size < ALLOCATION_GRANULE {
        DIRECT_ALIGNMENT
    } else {
        ALLOCATION_GRANULE
    };
    let size = size.div_ceil(granule) * granule;
    let layout = Layout::from_size_align(size, DIRECT_ALIGNMENT).ok()?;
    let reused = POOL
        .try_with(|pool| {
            let mut pool = pool.borrow_mut();
            let base = pool.free.get_mut(&size)?.pop()?;
            pool.bytes -= size;
            Some(base)
        })
        .ok()
        .flatten();
    if let Some(base) = reused {
        return Some((base, layout));
    }
    // SAFETY: the size is not zero.
    let base = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
    Some((base, layout))
}

/// Keeps a freed allocation for reuse on this thread, or frees it.
fn release(base: NonNull<u8>, layout: Layout) {
    let kept = POOL
        .try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.bytes + layout.size() > POOL_BYTES_MAX {
                return false;
            }
            pool.bytes += layout.size();
            pool.free.entry(layout.size()).or_default().push(base);
            true
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: allocated by `allocate` with this layout.
        unsafe { std::alloc::dealloc(base.as_ptr(), layout) }
    }
}

/// Record bytes this shard's logs DMA-wrote from the memory they were
/// received into.
pub fn append_bytes_in_place() -> u64 {
    BYTES_IN_PLACE.with(Cell::get)
}

/// Record bytes this shard's logs copied into their write buffers.
pub fn append_bytes_copied() -> u64 {
    BYTES_COPIED.with(Cell::get)
}

pub(super) fn count_in_place(bytes: usize) {
    BYTES_IN_PLACE.with(|cell| cell.set(cell.get() + bytes as u64));
}

pub(super) fn count_copied(bytes: usize) {
    BYTES_COPIED.with(|cell| cell.set(cell.get() + bytes as u64));
}

/// Aligned memory holding one batch at `head` bytes into its first block.
#[derive(Debug)]
pub struct DirectMem {
    base: NonNull<u8>,
    layout: Layout,
    head: usize,
    len: usize,
}

// SAFETY: the memory is owned by this value; after the records are received
// it is only read, except the bytes in front of the records and the batch
// header, written on the owning shard while no view covers them (see the
// module comment).
unsafe impl Send for DirectMem {}
unsafe impl Sync for DirectMem {}

impl DirectMem {
    fn new(head: usize, len: usize) -> Option<Self> {
        let (base, layout) = allocate(head + len)?;
        Some(DirectMem {
            base,
            layout,
            head,
            len,
        })
    }

    /// Where the records start within their first block.
    pub fn head(&self) -> usize {
        self.head
    }

    /// Length of the records.
    pub fn records_len(&self) -> usize {
        self.len
    }

    /// Memory the allocation holds (the records rounded up to the
    /// allocation granule): what a view of the records keeps alive.
    pub fn allocated_bytes(&self) -> usize {
        self.layout.size()
    }

    /// Address of the first record byte.
    fn data_address(&self) -> usize {
        self.base.as_ptr() as usize + self.head
    }

    /// The aligned memory, `[0, size)`, for a DMA write of its first
    /// `size` bytes.
    pub(super) fn base_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Bytes `[start, end)` of the memory (block-relative).
    pub(super) fn bytes(&self, start: usize, end: usize) -> &[u8] {
        assert!(start <= end && end <= self.layout.size());
        // SAFETY: in bounds; nobody writes these bytes while they are read
        // (only the head and the header are written, by the owning shard's
        // single writer, before anybody reads them through the memory).
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(start), end - start) }
    }

    /// Writes `bytes` at `start` (block-relative).
    ///
    /// # Safety
    /// No reference to or `Bytes` view of `[start, start + bytes.len())`
    /// may be alive or used afterwards, and the range must not be inside a
    /// DMA write in flight.
    pub(super) unsafe fn write(&self, start: usize, bytes: &[u8]) {
        assert!(start + bytes.len() <= self.layout.size());
        // SAFETY: in bounds (checked); the caller vouches nobody reads it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.base.as_ptr().add(start),
                bytes.len(),
            );
        }
    }

    /// A view of the records' bytes `[from, len)` as `Bytes`.
    pub(super) fn view(self: &Arc<Self>, from: usize) -> Bytes {
        assert!(from <= self.len);
        Bytes::from_owner(View {
            mem: self.clone(),
            start: self.head + from,
            end: self.head + self.len,
        })
    }
}

impl Drop for DirectMem {
    fn drop(&mut self) {
        release(self.base, self.layout);
    }
}

/// A `Bytes` owner over part of a [`DirectMem`].
struct View {
    mem: Arc<DirectMem>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for View {
    fn as_ref(&self) -> &[u8] {
        self.mem.bytes(self.start, self.end)
    }
}

/// Memory for one partition's records, handed to the connection reading
/// them; [`DirectSlot::freeze`] turns it into the request's records.
#[derive(Debug)]
pub struct DirectSlot {
    mem: Arc<DirectMem>,
}

impl DirectSlot {
    /// The records' bytes, to receive into.
    pub fn records_mut(&mut self) -> &mut [u8] {
        // SAFETY: until `freeze` nothing else reaches the memory: the log
        // keeps only a weak handle, which it upgrades only for a batch whose
        // bytes are a view of this memory, and views come from `freeze`.
        unsafe {
            std::slice::from_raw_parts_mut(self.mem.base.as_ptr().add(self.mem.head), self.mem.len)
        }
    }

    /// The records, as the request carries them.
    pub fn freeze(self) -> Bytes {
        self.mem.view(0)
    }
}

/// A slot handed out and not yet appended.
#[derive(Debug)]
struct LiveSlot {
    address: usize,
    len: usize,
    position: u64,
    mem: Weak<DirectMem>,
}

/// A log's predictions of where the records of requests being read will
/// land in its active segment.
#[derive(Debug, Default)]
pub(super) struct DirectSlots {
    segment_base_offset: i64,
    live: Vec<LiveSlot>,
}

impl DirectSlots {
    /// A slot for `len` bytes of records, predicted to be appended after
    /// the slots still live, in the segment based at `segment_base_offset`
    /// whose size is `segment_size` (which counts every append so far, with
    /// a slot or not).
    pub(super) fn reserve(
        &mut self,
        segment_base_offset: i64,
        segment_size: u64,
        len: usize,
    ) -> Option<DirectSlot> {
        if len == 0 {
            return None;
        }
        // Slots whose records were dropped unappended (a refused request)
        // no longer count.
        self.live.retain(|slot| slot.mem.strong_count() > 0);
        if self.segment_base_offset != segment_base_offset {
            self.live.clear();
            self.segment_base_offset = segment_base_offset;
        }
        if self.live.len() >= LIVE_SLOTS_MAX {
            return None;
        }
        let position = segment_size + self.live.iter().map(|slot| slot.len as u64).sum::<u64>();
        let mem = Arc::new(DirectMem::new(
            (position % DIRECT_ALIGNMENT as u64) as usize,
            len,
        )?);
        self.live.push(LiveSlot {
            address: mem.data_address(),
            len,
            position,
            mem: Arc::downgrade(&mem),
        });
        Some(DirectSlot { mem })
    }

    /// The memory `batch` is a view of, when it came from a slot predicted
    /// at `position` of the segment based at `segment_base_offset`. The slot
    /// is no longer live either way.
    pub(super) fn take(
        &mut self,
        batch: &Bytes,
        segment_base_offset: i64,
        position: u64,
    ) -> Option<Arc<DirectMem>> {
        let address = batch.as_ptr() as usize;
        let index = self
            .live
            .iter()
            .position(|slot| slot.address == address && slot.len == batch.len())?;
        let slot = self.live.swap_remove(index);
        // Alive while `batch` is: the address is this memory's, not a reuse.
        let mem = slot.mem.upgrade()?;
        (slot.position == position && self.segment_base_offset == segment_base_offset)
            .then_some(mem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: slots follow one another from the segment's end, predictions
    /// restart at the end once nothing reserved is pending, and a batch is
    /// matched to its slot only by its own memory and predicted place.
    #[test]
    fn slots_predict_consecutive_positions_and_resync_when_idle() {
        let mut slots = DirectSlots::default();
        let mut a = slots.reserve(0, 100, 5000).unwrap();
        assert_eq!(a.mem.head(), 100);
        assert_eq!(a.records_mut().len(), 5000);
        assert_eq!(a.mem.base_ptr() as usize % DIRECT_ALIGNMENT, 0);
        let b = slots.reserve(0, 100, 3000).unwrap();
        assert_eq!(b.mem.head(), (5100 % DIRECT_ALIGNMENT as u64) as usize);
        a.records_mut().fill(7);
        let a = a.freeze();
        assert!(a.iter().all(|&byte| byte == 7));
        // A copy of the bytes is not the slot's memory.
        let copy = Bytes::copy_from_slice(&a);
        assert!(slots.take(&copy, 0, 100).is_none());
        // Appended where predicted: matched, and no longer live.
        assert!(slots.take(&a, 0, 100).is_some());
        assert!(slots.take(&a, 0, 100).is_none());
        // b is refused: dropped unappended. The next slot starts at the end.
        drop(b);
        let c = slots.reserve(0, 5100, 10).unwrap();
        assert_eq!(c.mem.head(), 5100 % DIRECT_ALIGNMENT);
        // Predicted for another place: not matched.
        let c = c.freeze();
        assert!(slots.take(&c, 0, 5200).is_none());
        // A batch of 100 bytes appended without a slot while one is live:
        // the next slot is predicted after both.
        let live = slots.reserve(0, 5110, 1000).unwrap();
        let after = slots.reserve(0, 5210, 10).unwrap();
        assert_eq!(after.mem.head(), 6210 % DIRECT_ALIGNMENT);
        drop((live, after));
        // A new segment restarts predictions at its end.
        let d = slots.reserve(0, 5110, 10).unwrap();
        let e = slots.reserve(7, 0, 10).unwrap();
        assert_eq!(e.mem.head(), 0);
        drop(d);
    }
}
