//! `ringbroker bench limits`: the machine's own ceilings, so broker results
//! can be printed as fractions of them.
//!
//! - one TCP stream over loopback (writer and reader threads on two CPUs
//!   when two are given), 1 MiB writes of one buffer the CPU caches hold;
//!   and the same stream writing from memory far beyond the caches, as a
//!   broker serving consumers from its in-memory tail does;
//! - O_DIRECT appends of `--write-bytes` into new blocks of a fresh file
//!   (as the broker's segment appender writes), with 1 and 32 writes in
//!   flight, through glommio DMA files (io_uring); and the same writes into
//!   a file preallocated with fallocate (the ceiling a preallocating
//!   appender could reach);
//! - buffered writes (through the page cache) of `--write-bytes`, appending
//!   to a file, with an fdatasync after every MiB: the figure a durable
//!   produce (acks=all with group commit) is held against;
//! - fdatasync latency after a 4 KiB O_DIRECT overwrite of an allocated
//!   block, and after a 4 KiB append into a new block (which also changes
//!   the file size, so the file system journals metadata);
//! - reads of data not in memory, the ceiling of a consumer catching up:
//!   files written with O_DIRECT (so none of their pages is cached) read
//!   sequentially in 1 MiB reads, one file and sixteen at once (a catch-up
//!   consumer reads several partitions), by O_DIRECT (the broker's DMA read
//!   path) and through the page cache after dropping the files' pages (its
//!   splice path; Kafka's reads of data no longer in the page cache).
//!
//! Sketch (issue 5's figures for this kind of machine): loopback ~2.3 GB/s;
//! O_DIRECT ~0.6 GB/s with one write in flight, ~2.1 GB/s with 32;
//! fdatasync p50/p99 ~40/230 us after an overwrite, ~260 us/1.1 ms after an
//! append.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::stream::{FuturesUnordered, StreamExt};
use glommio::io::DmaFile;
use glommio::{LocalExecutorBuilder, Placement};

use super::args::{allowed_cpus, choose_cpus, LimitsArgs};
use super::report::{
    new_latency_histogram, record_latency, LatencySummary, LimitsResult, MachineFacts,
};

const LOOPBACK_CHUNK_BYTES: usize = 1 << 20;
/// Bytes the second loopback stream's writer cycles through, 1 MiB per
/// write: far beyond any CPU cache, so every write copies from memory, as
/// the broker's sends from its in-memory tail do (the first stream rewrites
/// one MiB the caches hold; side by side on dev-2vcpu-xeon-b, 3 Dec, a 1 MiB
/// source sent 3.7-4.5 GB/s and a 1 GiB one 3.1-3.4 GB/s).
const LOOPBACK_UNCACHED_SOURCE_BYTES: usize = 512 << 20;
/// Files the read measurements read at once (and one alone): as many as
/// the partitions of scripts/bench's 16-partition catch-up (this project's
/// 2-vCPU machine reads 16 streams more slowly than 4: 1.08 vs 1.24 GB/s).
const READ_FILES: usize = 16;
/// Bytes per read: the broker's cold-read chunk.
const READ_CHUNK_BYTES: usize = 1 << 20;
const SYNC_BLOCK_BYTES: usize = 4096;

fn pin_current_thread(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    if set.set(cpu).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
}

/// Where the loopback writer's next 1 MiB write starts after one from `at`
/// in a source of `source_bytes`: the next whole MiB, or the start again.
fn next_loopback_write(at: usize, source_bytes: usize) -> usize {
    let next = at + LOOPBACK_CHUNK_BYTES;
    if next + LOOPBACK_CHUNK_BYTES > source_bytes {
        0
    } else {
        next
    }
}

/// Memory this process may still take without pushing out others: the
/// kernel's MemAvailable, or less where the memory limit of its cgroup (v2)
/// leaves less.
fn memory_available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let available = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })?
        * 1024;
    // This process's own cgroup (v2: the "0::" line), not the root's.
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("0::"))
                .map(|path| path.trim_end_matches('/').to_string())
        })
        .unwrap_or_default();
    let read = |name: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup{cgroup}/{name}"))
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
    };
    // "max" (no limit) does not parse, and leaves MemAvailable.
    let cgroup_left =
        read("memory.max").map(|max| max.saturating_sub(read("memory.current").unwrap_or(0)));
    Some(cgroup_left.map_or(available, |left| left.min(available)))
}

/// One TCP stream over loopback for `seconds`, its writer sending 1 MiB
/// writes in turn from a buffer of `source_bytes` (at least 1 MiB, filled
/// before the stream starts); MB/s (10^6) received.
///
/// # Errors
/// Socket errors, or a buffer the allocator refuses.
pub fn loopback_tcp(
    seconds: u64,
    writer_cpu: usize,
    reader_cpu: usize,
    source_bytes: usize,
) -> anyhow::Result<f64> {
    let source_bytes = source_bytes.max(LOOPBACK_CHUNK_BYTES);
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback socket")?;
    let address = listener.local_addr()?;
    let reader = std::thread::spawn(move || -> anyhow::Result<(u64, Duration)> {
        pin_current_thread(reader_cpu);
        let (mut stream, _) = listener.accept()?;
        let mut buffer = vec![0u8; LOOPBACK_CHUNK_BYTES];
        let mut received = 0u64;
        let mut first: Option<Instant> = None;
        loop {
            let n = stream.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            first.get_or_insert_with(Instant::now);
            received += n as u64;
        }
        Ok((received, first.map_or(Duration::ZERO, |f| f.elapsed())))
    });
    let writer = std::thread::spawn(move || -> anyhow::Result<()> {
        pin_current_thread(writer_cpu);
        let mut buffer = Vec::new();
        if let Err(error) = buffer.try_reserve_exact(source_bytes) {
            // Connect anyway, so that the reader's accept returns.
            drop(TcpStream::connect(address));
            anyhow::bail!("no memory for a {source_bytes}-byte source: {error}");
        }
        // Written, so that every page is memory of its own before the
        // stream starts (untouched pages, as `vec![0; n]` leaves them, would
        // all read the kernel's one zero page, which stays in the caches).
        buffer.resize(source_bytes, 0x5a);
        let mut stream = TcpStream::connect(address)?;
        let end = Instant::now() + Duration::from_secs(seconds);
        let mut at = 0;
        while Instant::now() < end {
            stream.write_all(&buffer[at..at + LOOPBACK_CHUNK_BYTES])?;
            at = next_loopback_write(at, source_bytes);
        }
        Ok(())
    });
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("loopback writer thread failed"))??;
    let (received, elapsed) = reader
        .join()
        .map_err(|_| anyhow::anyhow!("loopback reader thread failed"))??;
    Ok(received as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6)
}

fn scratch_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".ringbroker-limits-{}-{name}", std::process::id()))
}

/// O_DIRECT writes of `write_bytes` with `depth` writes in flight for
/// `seconds`, each file growing to `file_bytes` and then replaced by a fresh
/// one; MB/s (10^6). With `preallocate` the file is first extended to
/// `file_bytes` with fallocate, so writes do not extend it (ext4 serialises
/// size-extending direct writes, so appends get no parallelism from depth).
async fn odirect_writes(
    dir: &Path,
    write_bytes: usize,
    depth: usize,
    file_bytes: u64,
    seconds: u64,
    preallocate: bool,
) -> anyhow::Result<f64> {
    let path = scratch_path(dir, "writes");
    let end = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let mut written = 0u64;
    while Instant::now() < end {
        let file = DmaFile::create(&path)
            .await
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
        if preallocate {
            file.pre_allocate(file_bytes, false)
                .await
                .map_err(|e| anyhow::anyhow!("fallocate failed: {e}"))?;
        }
        written += write_filled(&file, write_bytes, depth, 0xa5, file_bytes, Some(end)).await?;
        file.close()
            .await
            .map_err(|e| anyhow::anyhow!("close failed: {e}"))?;
        std::fs::remove_file(&path).ok();
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(written as f64 / elapsed.max(1e-9) / 1e6)
}

/// Writes `fill` over `[0, bytes)` of `file` in `chunk`-byte O_DIRECT
/// writes, `depth` of them in flight, issuing none once `deadline` has
/// passed; returns the bytes written.
async fn write_filled(
    file: &DmaFile,
    chunk: usize,
    depth: usize,
    fill: u8,
    bytes: u64,
    deadline: Option<Instant>,
) -> anyhow::Result<u64> {
    let mut position = 0u64;
    let mut written = 0u64;
    let mut in_flight = FuturesUnordered::new();
    loop {
        let open = deadline.map_or(true, |deadline| Instant::now() < deadline);
        while open && in_flight.len() < depth && position < bytes {
            let mut buffer = file.alloc_dma_buffer(chunk);
            buffer.as_bytes_mut().fill(fill);
            in_flight.push(file.write_at(buffer, position));
            position += chunk as u64;
        }
        match in_flight.next().await {
            Some(result) => {
                written +=
                    result.map_err(|e| anyhow::anyhow!("O_DIRECT write failed: {e}"))? as u64;
            }
            None => return Ok(written),
        }
    }
}

/// Writes the files of the read measurements with O_DIRECT (so none of
/// their pages enters the page cache): one of `file_bytes`, then
/// [`READ_FILES`] of a quarter of that each (at least 16 MiB).
async fn write_read_files(dir: &Path, file_bytes: u64) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    let each = (file_bytes / 4).max(16 << 20);
    let sizes = std::iter::once(file_bytes).chain(std::iter::repeat(each).take(READ_FILES));
    for (index, bytes) in sizes.enumerate() {
        let path = scratch_path(dir, &format!("read-{index}"));
        let file = DmaFile::create(&path)
            .await
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
        paths.push(path);
        write_filled(&file, READ_CHUNK_BYTES, 8, 0x3c, bytes, None).await?;
        file.close()
            .await
            .map_err(|e| anyhow::anyhow!("close failed: {e}"))?;
    }
    Ok(paths)
}

/// O_DIRECT reads of `paths` at once, 1 MiB at a time with one read in
/// flight per file, until the files end or `seconds` pass; MB/s (10^6).
async fn odirect_reads(paths: &[PathBuf], seconds: u64) -> anyhow::Result<f64> {
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let readers = paths.iter().map(|path| async move {
        let file = DmaFile::open(path)
            .await
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
        let mut position = 0u64;
        while Instant::now() < end {
            let read = file
                .read_at_aligned(position, READ_CHUNK_BYTES)
                .await
                .map_err(|e| anyhow::anyhow!("O_DIRECT read failed: {e}"))?;
            if read.is_empty() {
                break;
            }
            position += read.len() as u64;
        }
        let _ = file.close().await;
        anyhow::Ok(position)
    });
    let mut read = 0u64;
    for result in futures::future::join_all(readers).await {
        read += result?;
    }
    Ok(read as f64 / start.elapsed().as_secs_f64().max(1e-9) / 1e6)
}

/// Reads of `paths` through the page cache after dropping their cached
/// pages, one thread per file, 1 MiB at a time, until the files end or
/// `seconds` pass; MB/s (10^6).
fn buffered_cold_reads(paths: &[PathBuf], seconds: u64) -> anyhow::Result<f64> {
    use std::os::fd::AsRawFd;
    let mut files = Vec::new();
    for path in paths {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        // SAFETY: plain advice on an open descriptor.
        let error =
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if error != 0 {
            anyhow::bail!(
                "cannot drop the cached pages of {}: errno {error}",
                path.display()
            );
        }
        files.push(file);
    }
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let threads: Vec<_> = files
        .into_iter()
        .map(|mut file| {
            std::thread::spawn(move || -> std::io::Result<u64> {
                let mut buffer = vec![0u8; READ_CHUNK_BYTES];
                let mut read = 0u64;
                while Instant::now() < end {
                    let n = file.read(&mut buffer)?;
                    if n == 0 {
                        break;
                    }
                    read += n as u64;
                }
                Ok(read)
            })
        })
        .collect();
    let mut read = 0u64;
    for thread in threads {
        read += thread
            .join()
            .map_err(|_| anyhow::anyhow!("a reader thread failed"))??;
    }
    Ok(read as f64 / start.elapsed().as_secs_f64().max(1e-9) / 1e6)
}

/// Bytes written between two fdatasyncs by the buffered-write measurement.
const BUFFERED_SYNC_BYTES: u64 = 1 << 20;

/// Buffered writes of `write_bytes` appended to a file for `seconds`, with
/// an fdatasync after every [`BUFFERED_SYNC_BYTES`] (and at the end), each
/// file growing to `file_bytes` and then replaced by a fresh one; MB/s
/// (10^6), the syncs included. Blocking: runs on a thread of its own.
fn buffered_synced_writes(
    dir: &Path,
    write_bytes: usize,
    file_bytes: u64,
    seconds: u64,
) -> anyhow::Result<f64> {
    let path = scratch_path(dir, "buffered-writes");
    let chunk = vec![0x5au8; write_bytes.max(1)];
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let mut written = 0u64;
    let result = (|| -> anyhow::Result<()> {
        while Instant::now() < end {
            let mut file = std::fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let (mut in_file, mut unsynced) = (0u64, 0u64);
            while in_file < file_bytes && Instant::now() < end {
                file.write_all(&chunk).context("buffered write failed")?;
                in_file += chunk.len() as u64;
                unsynced += chunk.len() as u64;
                if unsynced >= BUFFERED_SYNC_BYTES {
                    file.sync_data().context("fdatasync failed")?;
                    written += unsynced;
                    unsynced = 0;
                }
            }
            file.sync_data().context("fdatasync failed")?;
            written += unsynced;
            drop(file);
            std::fs::remove_file(&path).ok();
        }
        Ok(())
    })();
    std::fs::remove_file(&path).ok();
    result?;
    Ok(written as f64 / start.elapsed().as_secs_f64().max(1e-9) / 1e6)
}

/// fdatasync latencies: after a 4 KiB overwrite of an allocated block
/// (`append == false`) or after a 4 KiB append into a new block.
async fn fdatasync_latency(
    dir: &Path,
    samples: u32,
    append: bool,
) -> anyhow::Result<LatencySummary> {
    let path = scratch_path(
        dir,
        if append {
            "sync-append"
        } else {
            "sync-overwrite"
        },
    );
    let file = DmaFile::create(&path)
        .await
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
    let mut histogram = new_latency_histogram();
    if !append {
        // Allocate and make durable the blocks that will be overwritten.
        let buffer = file.alloc_dma_buffer(1 << 20);
        file.write_at(buffer, 0)
            .await
            .map_err(|e| anyhow::anyhow!("write failed: {e}"))?;
        file.fdatasync()
            .await
            .map_err(|e| anyhow::anyhow!("fdatasync failed: {e}"))?;
    }
    for sample in 0..u64::from(samples) {
        let position = if append {
            sample * SYNC_BLOCK_BYTES as u64
        } else {
            (sample % 256) * SYNC_BLOCK_BYTES as u64
        };
        let mut buffer = file.alloc_dma_buffer(SYNC_BLOCK_BYTES);
        buffer.as_bytes_mut().fill(sample as u8);
        file.write_at(buffer, position)
            .await
            .map_err(|e| anyhow::anyhow!("write failed: {e}"))?;
        let started = Instant::now();
        file.fdatasync()
            .await
            .map_err(|e| anyhow::anyhow!("fdatasync failed: {e}"))?;
        record_latency(&mut histogram, started.elapsed().as_micros() as i64, 1);
    }
    file.close()
        .await
        .map_err(|e| anyhow::anyhow!("close failed: {e}"))?;
    std::fs::remove_file(&path).ok();
    LatencySummary::of(&histogram).context("no fdatasync samples")
}

/// Runs every measurement and returns the result (each one that fails is
/// left out with a note saying why).
///
/// # Errors
/// Bad flags or a directory that cannot be used.
pub fn run_limits(args: &LimitsArgs) -> anyhow::Result<LimitsResult> {
    let available = allowed_cpus();
    let cpus = choose_cpus(args.cores, args.cpuset.as_deref(), &available, |all| {
        all.iter().copied().take(2).collect()
    })?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    let machine = MachineFacts::gather(&args.dir);
    let mut notes = Vec::new();
    let writer_cpu = cpus[0];
    let reader_cpu = *cpus.get(1).unwrap_or(&cpus[0]);
    if cpus.len() < 2 {
        notes.push("loopback TCP measured with writer and reader on one CPU".to_string());
    }
    eprintln!("limits: loopback TCP, one stream, {} s ...", args.seconds);
    let loopback = match loopback_tcp(args.seconds, writer_cpu, reader_cpu, LOOPBACK_CHUNK_BYTES) {
        Ok(v) => Some(v),
        Err(e) => {
            notes.push(format!("loopback TCP not measured: {e:#}"));
            None
        }
    };
    eprintln!(
        "limits: loopback TCP, one stream from {} MiB of memory, {} s ...",
        LOOPBACK_UNCACHED_SOURCE_BYTES >> 20,
        args.seconds
    );
    // Only with room to spare: an allocation the kernel overcommits would
    // end in the OOM killer, not in an error.
    let available = memory_available_bytes();
    let loopback_uncached = match available {
        Some(bytes) if bytes < 4 * LOOPBACK_UNCACHED_SOURCE_BYTES as u64 => {
            notes.push(format!(
                "loopback TCP from uncached memory not measured: {} MiB of memory available, {} MiB wanted",
                bytes >> 20,
                (4 * LOOPBACK_UNCACHED_SOURCE_BYTES) >> 20
            ));
            None
        }
        _ => match loopback_tcp(
            args.seconds,
            writer_cpu,
            reader_cpu,
            LOOPBACK_UNCACHED_SOURCE_BYTES,
        ) {
            Ok(v) => Some(v),
            Err(e) => {
                notes.push(format!(
                    "loopback TCP from uncached memory not measured: {e:#}"
                ));
                None
            }
        },
    };
    let dir = args.dir.clone();
    let (seconds, write_bytes, file_bytes, samples, write_behind) = (
        args.seconds,
        args.write_bytes,
        args.file_bytes,
        args.sync_samples,
        args.write_behind,
    );
    let disk = LocalExecutorBuilder::new(Placement::Fixed(writer_cpu))
        .name("bench-limits")
        .spawn(move || async move {
            let mut notes = Vec::new();
            let mut note = |what: &str, e: anyhow::Error| notes.push(format!("{what} not measured: {e:#}"));
            if let Err(e) = crate::storage::ensure_iopoll_probed(&dir).await {
                note("iopoll probe", e.into());
            }
            let mut writes = Vec::new();
            let broker_depth = write_behind as usize;
            for (preallocate, depth) in [(false, 1), (false, 32), (true, 1), (true, 32), (false, broker_depth)] {
                let kind = if preallocate { "writes into a preallocated file" } else { "appends" };
                eprintln!("limits: O_DIRECT {kind} of {write_bytes} B, {depth} in flight, {seconds} s ...");
                writes.push(
                    odirect_writes(&dir, write_bytes, depth, file_bytes, seconds, preallocate)
                        .await
                        .map_err(|e| note(&format!("O_DIRECT {kind} with {depth} in flight"), e))
                        .ok(),
                );
            }
            eprintln!("limits: fdatasync after a 4 KiB overwrite, {samples} samples ...");
            let overwrite = fdatasync_latency(&dir, samples, false)
                .await
                .map_err(|e| note("fdatasync after overwrite", e))
                .ok();
            eprintln!("limits: fdatasync after a 4 KiB append, {samples} samples ...");
            let append = fdatasync_latency(&dir, samples, true)
                .await
                .map_err(|e| note("fdatasync after append", e))
                .ok();
            eprintln!("limits: writing 1 + {READ_FILES} files for the read measurements ...");
            let mut reads = [None, None];
            let read_files = match write_read_files(&dir, file_bytes).await {
                Ok(paths) => {
                    for (slot, files) in reads.iter_mut().zip([&paths[..1], &paths[1..]]) {
                        let count = files.len();
                        eprintln!("limits: O_DIRECT 1 MiB reads of {count} file(s) at once ...");
                        *slot = odirect_reads(files, seconds)
                            .await
                            .map_err(|e| note(&format!("O_DIRECT reads of {count} file(s)"), e))
                            .ok();
                    }
                    paths
                }
                Err(e) => {
                    note("reads", e);
                    Vec::new()
                }
            };
            (writes, overwrite, append, reads, read_files, notes)
        })
        .map_err(|e| anyhow::anyhow!("cannot start a glommio executor (io_uring?): {e}"))?
        .join()
        .map_err(|e| anyhow::anyhow!("the disk measurements failed: {e}"))?;
    let (writes, overwrite, append, odirect_reads, read_files, disk_notes) = disk;
    notes.extend(disk_notes);
    let mut buffered_reads = [None, None];
    if !read_files.is_empty() {
        for (slot, files) in buffered_reads
            .iter_mut()
            .zip([&read_files[..1], &read_files[1..]])
        {
            let count = files.len();
            eprintln!("limits: page-cache reads of {count} uncached file(s) at once ...");
            *slot = buffered_cold_reads(files, args.seconds)
                .map_err(|e| {
                    notes.push(format!(
                        "page-cache reads of {count} file(s) not measured: {e:#}"
                    ))
                })
                .ok();
        }
    }
    for path in &read_files {
        std::fs::remove_file(path).ok();
    }
    eprintln!(
        "limits: buffered writes of {} B with an fdatasync every MiB, {} s ...",
        args.write_bytes, args.seconds
    );
    let buffered_sync_every_mib =
        buffered_synced_writes(&args.dir, args.write_bytes, args.file_bytes, args.seconds)
            .map_err(|e| {
                notes.push(format!(
                    "buffered writes with an fdatasync every MiB not measured: {e:#}"
                ))
            })
            .ok();
    Ok(LimitsResult {
        tool: "ringbroker bench limits".into(),
        started_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
        machine,
        loopback_tcp_mb_per_sec: loopback,
        loopback_tcp_uncached_mb_per_sec: loopback_uncached,
        loopback_uncached_source_bytes: LOOPBACK_UNCACHED_SOURCE_BYTES,
        odirect_write_bytes: args.write_bytes,
        odirect_write_qd1_mb_per_sec: writes[0],
        odirect_write_qd32_mb_per_sec: writes[1],
        odirect_prealloc_qd1_mb_per_sec: writes[2],
        odirect_prealloc_qd32_mb_per_sec: writes[3],
        odirect_write_broker_depth: args.write_behind,
        odirect_write_broker_depth_mb_per_sec: writes[4],
        fdatasync_overwrite_us: overwrite,
        fdatasync_append_us: append,
        read_files: READ_FILES,
        odirect_read_1file_mb_per_sec: odirect_reads[0],
        odirect_read_files_mb_per_sec: odirect_reads[1],
        cold_buffered_read_1file_mb_per_sec: buffered_reads[0],
        cold_buffered_read_files_mb_per_sec: buffered_reads[1],
        buffered_sync_every_mib_mb_per_sec: buffered_sync_every_mib,
        notes,
    })
}

/// The limits as printed.
pub fn render_limits(result: &LimitsResult) -> String {
    let mb = |v: Option<f64>| v.map_or("not measured".to_string(), |v| format!("{v:.0} MB/s"));
    let sync = |s: &Option<LatencySummary>| {
        s.as_ref().map_or("not measured".to_string(), |s| {
            format!(
                "p50 {} us, p99 {} us, max {} us",
                s.p50_us, s.p99_us, s.max_us
            )
        })
    };
    let m = &result.machine;
    let mut out = format!(
        "machine: {} ({} CPUs allowed), kernel {}, memlock {}, disk {}, load {}\n",
        m.cpu_model,
        m.cpus_allowed,
        m.kernel,
        m.memlock_kib
            .map_or("unlimited".into(), |k| format!("{k} KiB")),
        m.disk,
        m.load_average
    );
    out += &format!(
        "loopback TCP, one stream:            {}\n",
        mb(result.loopback_tcp_mb_per_sec)
    );
    out += &format!(
        "loopback TCP, one stream from {} MiB of memory (beyond the CPU caches): {}\n",
        result.loopback_uncached_source_bytes >> 20,
        mb(result.loopback_tcp_uncached_mb_per_sec)
    );
    out += &format!(
        "O_DIRECT appends {} KiB, 1 in flight:  {}\n",
        result.odirect_write_bytes / 1024,
        mb(result.odirect_write_qd1_mb_per_sec)
    );
    out += &format!(
        "O_DIRECT appends {} KiB, 32 in flight: {}\n",
        result.odirect_write_bytes / 1024,
        mb(result.odirect_write_qd32_mb_per_sec)
    );
    out += &format!(
        "O_DIRECT appends {} KiB, {} in flight (the broker's --write-behind): {}\n",
        result.odirect_write_bytes / 1024,
        result.odirect_write_broker_depth,
        mb(result.odirect_write_broker_depth_mb_per_sec)
    );
    out += &format!(
        "O_DIRECT preallocated {} KiB, 1 in flight:  {}\n",
        result.odirect_write_bytes / 1024,
        mb(result.odirect_prealloc_qd1_mb_per_sec)
    );
    out += &format!(
        "O_DIRECT preallocated {} KiB, 32 in flight: {}\n",
        result.odirect_write_bytes / 1024,
        mb(result.odirect_prealloc_qd32_mb_per_sec)
    );
    out += &format!(
        "buffered writes {} KiB, fdatasync every MiB: {}\n",
        result.odirect_write_bytes / 1024,
        mb(result.buffered_sync_every_mib_mb_per_sec)
    );
    out += &format!(
        "fdatasync after 4 KiB overwrite:     {}\n",
        sync(&result.fdatasync_overwrite_us)
    );
    out += &format!(
        "fdatasync after 4 KiB append:        {}\n",
        sync(&result.fdatasync_append_us)
    );
    out += &format!(
        "O_DIRECT reads 1 MiB, 1 file:          {}\n",
        mb(result.odirect_read_1file_mb_per_sec)
    );
    out += &format!(
        "O_DIRECT reads 1 MiB, {} files at once: {}\n",
        result.read_files,
        mb(result.odirect_read_files_mb_per_sec)
    );
    out += &format!(
        "uncached page-cache reads, 1 file:          {}\n",
        mb(result.cold_buffered_read_1file_mb_per_sec)
    );
    out += &format!(
        "uncached page-cache reads, {} files at once: {}\n",
        result.read_files,
        mb(result.cold_buffered_read_files_mb_per_sec)
    );
    for note in &result.notes {
        out += &format!("note: {note}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_writes_take_every_whole_mib_of_the_source_in_turn() {
        const MIB: usize = 1 << 20;
        let offsets = |source: usize| {
            let mut at = 0;
            let mut seen = vec![at];
            for _ in 0..5 {
                at = next_loopback_write(at, source);
                seen.push(at);
            }
            seen
        };
        assert_eq!(offsets(MIB), vec![0; 6]);
        assert_eq!(offsets(2 * MIB), vec![0, MIB, 0, MIB, 0, MIB]);
        assert_eq!(offsets(5 * MIB / 2), vec![0, MIB, 0, MIB, 0, MIB]);
        assert_eq!(offsets(3 * MIB), vec![0, MIB, 2 * MIB, 0, MIB, 2 * MIB]);
        // The last whole MiB of the 512 MiB source is sent too.
        let last = LOOPBACK_UNCACHED_SOURCE_BYTES - MIB;
        assert_eq!(
            next_loopback_write(last - MIB, LOOPBACK_UNCACHED_SOURCE_BYTES),
            last
        );
        assert_eq!(next_loopback_write(last, LOOPBACK_UNCACHED_SOURCE_BYTES), 0);
        assert!(memory_available_bytes().is_some_and(|bytes| bytes > 0));
    }

    #[test]
    fn loopback_streams_from_a_source_of_several_writes_and_wraps_around() {
        // 2.5 MiB: the writer sends its first two MiB in turn, then starts
        // over (the last half MiB never makes a whole write).
        let cpu = allowed_cpus()[0];
        let rate = loopback_tcp(1, cpu, cpu, (5 << 20) / 2).unwrap();
        assert!(rate > 1.0, "{rate} MB/s");
    }
}
