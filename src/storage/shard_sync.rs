//! Group commit across a shard's logs: one `syncfs` makes every segment
//! write the shard completed before it started durable, however many
//! partition files they went to.
//!
//! Each log's writer already batches its own acks=all waiters into one
//! background sync. With one fdatasync per log, a produce request for 16
//! partitions waits for 16 fdatasyncs (16 inode writes and 16 device cache
//! flushes, run by io_uring's workers); measured on this project's 2-vCPU
//! virtio machine after a 64 KiB O_DIRECT append to each of 16 files: p50
//! 0.8-0.9 ms for 16 parallel fdatasyncs, 0.2-0.26 ms for one `syncfs`
//! (1 file: 0.21 ms vs 0.10-0.11 ms). `syncfs` writes the file system's
//! dirty inodes and issues one flush: on ext4 with or without a journal, and
//! on XFS, data written with O_DIRECT and completed before the call, and the
//! inode sizes it changed, are durable when it returns.
//!
//! The cost: `syncfs` also writes back every other dirty page of that file
//! system, so a data directory that shares its file system with programs
//! writing a lot through the page cache should use `--log-sync fdatasync`.
//!
//! Errors are sticky: `syncfs` reports a write-back error once per open
//! descriptor, so after one failure every later sync of the shard fails too
//! (the logs stop acknowledging acks=all writes) instead of a second call
//! succeeding over lost data.
//!
//! One `syncfs` runs at a time per shard, on the blocking thread pool (there
//! is no io_uring operation for it). A caller needs a sync that starts after
//! its call; callers that arrive while one runs share the next one.
//!
//! The next sync also waits for the segment writes the shard had in flight
//! when its first caller asked (`write_started`): a produce request for 16
//! partitions hands 16 logs' writes to the disk at once and each log asks
//! for a sync as soon as its own write completes, so without the wait the
//! first log's sync started alone, the other 15 waited for a second one, and
//! the writes still in flight competed with the first. Measured on the
//! 2-vCPU EPYC machine (16 partitions acks=all paced at 50 MB/s): 1.6
//! `syncfs` per request, those running beside writes taking 1.3-2.8 ms
//! instead of 0.45. Writes started after the first caller do not hold the
//! sync back, so it waits at most for the writes already on their way.
//!
//! Each shard syncs on its own: with several shards on one file system their
//! concurrent `syncfs` calls slowed each other down (2 shards, 16
//! partitions, acks=all: 216-221 MB/s vs 255-306 MB/s with fdatasync per
//! log), so `--log-sync auto` (the default) uses this only with one shard.

use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
    fs::File,
    future::Future,
    os::fd::{AsRawFd, RawFd},
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    rc::Rc,
    sync::Arc,
    task::{Poll, Waker},
};

use super::{checkpoint::run_blocking, error::StorageError};

/// How segment files are made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogSync {
    /// `syncfs` with one shard, `fdatasync` with several (two shards'
    /// concurrent syncfs calls on one file system slowed each other:
    /// acks=all with 2 shards 216-221 MB/s vs 255-306 with fdatasync).
    Auto,
    /// One `syncfs` per shard covers every log of the shard (group commit
    /// across partitions).
    Syncfs,
    /// One fdatasync per log.
    Fdatasync,
}

impl LogSync {
    /// What `Auto` means for a broker of `shards` shards.
    pub fn resolve(self, shards: usize) -> LogSync {
        match self {
            LogSync::Auto if shards == 1 => LogSync::Syncfs,
            LogSync::Auto => LogSync::Fdatasync,
            other => other,
        }
    }
}

thread_local! {
    static SHARD_SYNC: RefCell<Option<Rc<ShardSync>>> = const { RefCell::new(None) };
}

/// Makes this shard's logs on the file system of `data_dir` share one
/// `syncfs` (`LogSync::Syncfs`), or sync each log on its own (`Auto` must be
/// resolved first; unresolved it means fdatasync).
///
/// # Errors
/// `data_dir` cannot be opened.
pub fn configure_log_sync(mode: LogSync, data_dir: &Path) -> Result<(), StorageError> {
    let sync = match mode {
        LogSync::Fdatasync | LogSync::Auto => None,
        LogSync::Syncfs => Some(Rc::new(ShardSync::open(data_dir)?)),
    };
    SHARD_SYNC.with(|shard| *shard.borrow_mut() = sync);
    Ok(())
}

/// `syncfs` calls this shard has made.
pub fn shard_syncfs_count() -> u64 {
    SHARD_SYNC.with(|shard| shard.borrow().as_ref().map_or(0, |sync| sync.count.get()))
}

/// The shard's shared sync if it covers `file` (same file system), else
/// None (the log fdatasyncs its own files).
pub(super) fn shard_sync_for(file: &impl AsRawFd) -> Option<Rc<ShardSync>> {
    let sync = SHARD_SYNC.with(|shard| shard.borrow().clone())?;
    let stat = nix::sys::stat::fstat(file.as_raw_fd()).ok()?;
    (stat.st_dev as u64 == sync.device).then_some(sync)
}

#[derive(Default)]
struct State {
    /// Syncs that have called `syncfs` so far (the running one included).
    started: u64,
    /// Syncs finished so far (they finish in order).
    finished: u64,
    running: bool,
    /// A sync is running but has not called `syncfs` yet (`started` does
    /// not count it yet).
    starting: bool,
    failure: Option<StorageError>,
    wakers: Vec<Waker>,
    /// Generation of writes started now; bumped when a sync gets its first
    /// caller, so the writes before that call have older generations.
    generation: u64,
    /// Writes in flight by the generation they started in.
    writes: BTreeMap<u64, usize>,
    /// The next sync starts once no write of a generation below this is in
    /// flight (None: no caller waits for a sync not yet started).
    barrier: Option<u64>,
}

impl State {
    /// Whether the next sync may start now.
    fn may_start(&self) -> bool {
        let oldest_write = self.writes.keys().next();
        match (self.barrier, oldest_write) {
            _ if self.running => false,
            (Some(barrier), Some(&generation)) => generation >= barrier,
            _ => true,
        }
    }
}

/// One shard's shared `syncfs` (see the module documentation).
pub struct ShardSync {
    dir: Arc<File>,
    path: PathBuf,
    device: u64,
    state: RefCell<State>,
    count: Cell<u64>,
    /// The call itself (tests put a slow or failing one in).
    syncfs: fn(RawFd) -> std::io::Result<()>,
}

fn syncfs(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: syncfs only reads the descriptor, which the caller keeps open.
    if unsafe { libc::syncfs(fd) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl ShardSync {
    fn open(data_dir: &Path) -> Result<Self, StorageError> {
        let dir =
            File::open(data_dir).map_err(|error| StorageError::io("opening", data_dir, error))?;
        let device = dir
            .metadata()
            .map_err(|error| StorageError::io("reading the metadata of", data_dir, error))?
            .dev();
        Ok(ShardSync {
            dir: Arc::new(dir),
            path: data_dir.to_path_buf(),
            device,
            state: RefCell::new(State::default()),
            count: Cell::new(0),
            syncfs,
        })
    }

    /// Returns once a `syncfs` that started after this call has finished:
    /// every O_DIRECT write completed before the call is then durable.
    ///
    /// # Errors
    /// This or an earlier `syncfs` of the shard failed.
    pub fn sync(self: Rc<Self>) -> impl Future<Output = Result<(), StorageError>> {
        let target = {
            let mut state = self.state.borrow_mut();
            // A caller while the next sync is about to start is served by
            // it; otherwise the next sync waits for the writes now in flight.
            if state.barrier.is_none() && !state.starting {
                state.generation += 1;
                state.barrier = Some(state.generation);
            }
            state.started + 1
        };
        std::future::poll_fn(move |context| {
            let mut state = self.state.borrow_mut();
            if let Some(failure) = &state.failure {
                return Poll::Ready(Err(failure.clone()));
            }
            if state.finished >= target {
                return Poll::Ready(Ok(()));
            }
            if !state
                .wakers
                .iter()
                .any(|known| known.will_wake(context.waker()))
            {
                state.wakers.push(context.waker().clone());
            }
            if state.may_start() {
                state.running = true;
                state.starting = true;
                state.barrier = None;
                drop(state);
                self.clone().spawn_syncfs();
            }
            Poll::Pending
        })
    }

    /// Counts a segment write of this shard's file system as in flight
    /// until the returned guard drops (when the write completes or is
    /// abandoned): a sync asked for while it runs waits for it.
    pub(super) fn write_started(self: &Rc<Self>) -> WriteInFlight {
        let mut state = self.state.borrow_mut();
        let generation = state.generation;
        *state.writes.entry(generation).or_default() += 1;
        WriteInFlight {
            sync: self.clone(),
            generation,
        }
    }

    fn write_finished(&self, generation: u64) {
        let wakers = {
            let mut state = self.state.borrow_mut();
            if let Some(count) = state.writes.get_mut(&generation) {
                *count -= 1;
                if *count == 0 {
                    state.writes.remove(&generation);
                }
            }
            if !state.may_start() {
                return;
            }
            std::mem::take(&mut state.wakers)
        };
        // The callers start the sync when they run.
        for waker in wakers {
            waker.wake();
        }
    }

    /// Runs one `syncfs` in a task of its own, so a caller that gives up
    /// does not leave the shard's sync marked as running.
    fn spawn_syncfs(self: Rc<Self>) {
        self.count.set(self.count.get() + 1);
        glommio::spawn_local(async move {
            // Let the tasks woken with this one run first: the writers of
            // logs whose writes have just completed ask for a sync when they
            // run, and are served by this one if they ask before it begins.
            futures_lite::future::yield_now().await;
            {
                let mut state = self.state.borrow_mut();
                state.starting = false;
                state.started += 1;
            }
            let dir = self.dir.clone();
            let call = self.syncfs;
            let result = run_blocking(move || call(dir.as_raw_fd())).await;
            let wakers = {
                let mut state = self.state.borrow_mut();
                state.running = false;
                state.finished += 1;
                if let Err(error) = result {
                    tracing::error!(path = %self.path.display(), %error,
                        "syncfs failed: this shard's logs stop acknowledging synced writes");
                    state.failure = Some(StorageError::io("syncfs of", &self.path, error));
                }
                std::mem::take(&mut state.wakers)
            };
            // Waiters for the next sync start it when they run.
            for waker in wakers {
                waker.wake();
            }
        })
        .detach();
    }
}

/// A segment write in flight (`ShardSync::write_started`).
pub(super) struct WriteInFlight {
    sync: Rc<ShardSync>,
    generation: u64,
}

impl Drop for WriteInFlight {
    fn drop(&mut self) {
        self.sync.write_finished(self.generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::run_on_executor;
    use std::time::Duration;

    fn slow_syncfs(_: RawFd) -> std::io::Result<()> {
        std::thread::sleep(Duration::from_millis(60));
        Ok(())
    }

    fn failing_syncfs(_: RawFd) -> std::io::Result<()> {
        Err(std::io::Error::from_raw_os_error(libc::EIO))
    }

    /// A shard sync over a fresh directory that calls `call` for syncfs.
    fn sync_calling(call: fn(RawFd) -> std::io::Result<()>) -> (tempfile::TempDir, Rc<ShardSync>) {
        let dir = tempfile::tempdir().unwrap();
        let mut sync = ShardSync::open(dir.path()).unwrap();
        sync.syncfs = call;
        (dir, Rc::new(sync))
    }

    #[test]
    fn callers_during_a_sync_share_the_next_one() {
        // Goal: a caller is never answered by a sync that started before
        // its call, and the callers that arrive while one runs share one.
        run_on_executor(|| async {
            let (_dir, sync) = sync_calling(slow_syncfs);
            let first = glommio::spawn_local(sync.clone().sync());
            glommio::timer::sleep(Duration::from_millis(15)).await;
            assert!(sync.state.borrow().running);
            let later: Vec<_> = (0..10)
                .map(|_| glommio::spawn_local(sync.clone().sync()))
                .collect();
            glommio::timer::sleep(Duration::from_millis(15)).await;
            first.await.unwrap();
            assert_eq!(sync.state.borrow().finished, 1);
            for task in later {
                task.await.unwrap();
            }
            assert_eq!(
                sync.count.get(),
                2,
                "one more syncfs for the ten later callers"
            );
            let state = sync.state.borrow();
            assert_eq!(
                (state.started, state.finished, state.running),
                (2, 2, false)
            );
        });
    }

    #[test]
    fn a_sync_waits_for_the_writes_in_flight_when_asked_and_no_later_ones() {
        // Goal: the writes a shard has in flight when a sync is asked for
        // (the other partitions of the same request) are covered by that
        // sync, not left for a second one; writes started after the call
        // do not hold it back.
        run_on_executor(|| async {
            let (_dir, sync) = sync_calling(syncfs);
            let earlier = sync.write_started();
            let asked = glommio::spawn_local(sync.clone().sync());
            let later = sync.write_started();
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert_eq!(
                sync.count.get(),
                0,
                "no syncfs before the earlier write completes"
            );
            // More callers for the same sync share it.
            let second = glommio::spawn_local(sync.clone().sync());
            drop(earlier);
            asked.await.unwrap();
            second.await.unwrap();
            assert_eq!(sync.count.get(), 1, "one syncfs for both callers");
            // The later write, still in flight, held nothing back; a new
            // caller now waits for it.
            let third = glommio::spawn_local(sync.clone().sync());
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert_eq!(sync.count.get(), 1);
            drop(later);
            third.await.unwrap();
            assert_eq!(sync.count.get(), 2);
            assert!(sync.state.borrow().writes.is_empty());
        });
    }

    #[test]
    fn callers_woken_with_the_sync_join_it_before_it_begins() {
        // Goal: a log whose write completed in the same reactor pass as the
        // last write the sync waited for, and which asks when its task runs
        // (after the sync's starter), is served by that sync.
        run_on_executor(|| async {
            let (_dir, sync) = sync_calling(syncfs);
            let write = sync.write_started();
            let first = glommio::spawn_local(sync.clone().sync());
            glommio::timer::sleep(Duration::from_millis(5)).await;
            // Wakes `first`, which starts the sync.
            drop(write);
            // Runs after `first` in this task queue: the sync is starting.
            let joiner = glommio::spawn_local({
                let sync = sync.clone();
                async move {
                    futures_lite::future::yield_now().await;
                    assert!(sync.state.borrow().starting);
                    sync.clone().sync().await
                }
            });
            first.await.unwrap();
            joiner.await.unwrap();
            assert_eq!(sync.count.get(), 1, "the joiner shared the sync");
        });
    }

    #[test]
    fn a_failed_syncfs_fails_every_later_sync() {
        // Goal: after a failed syncfs no later call reports success (syncfs
        // reports a write-back error only once per descriptor).
        run_on_executor(|| async {
            let (_dir, sync) = sync_calling(failing_syncfs);
            assert!(sync.clone().sync().await.is_err());
            assert!(sync.clone().sync().await.is_err());
            assert_eq!(sync.count.get(), 1);
        });
    }

    #[test]
    fn a_real_syncfs_succeeds() {
        run_on_executor(|| async {
            let (_dir, sync) = sync_calling(syncfs);
            sync.clone().sync().await.unwrap();
            assert_eq!(sync.count.get(), 1);
        });
    }
}
