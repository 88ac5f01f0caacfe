//! Storage micro-benchmarks through the public storage API, on a glommio
//! executor inside the bench: sparse offset index lookup, and appends to a
//! partition log with the writes completed (no sync) and with fdatasync.
//!
//! Sketch: an index lookup is a binary search over ~262k entries (a 1 GiB
//! segment indexed every 4 KiB): ~18 probes, mostly cache misses at the top
//! levels, so roughly 100-300 ns. An append copies the batch into the
//! aligned write buffer (16 KiB at ~10 GB/s: ~2 us) plus bookkeeping, so
//! appends with writes completing should run near the O_DIRECT bandwidth
//! (`ringbroker bench limits`: ~0.4-2 GB/s here). An append followed by
//! fdatasync costs about one fdatasync after an append into new blocks
//! (~0.3-1 ms on this kind of disk).
//!
//! The logs live in a temporary directory under `RINGBROKER_BENCH_DIR`, or
//! the system temporary directory (it must support O_DIRECT: not tmpfs).

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use glommio::{LocalExecutor, LocalExecutorBuilder, Placement};
use ringbroker::protocol::record_batch::{build_batch, validate_batch, BatchHeader, NewRecord};
use ringbroker::storage::{ensure_iopoll_probed, Log, LogConfig, OffsetIndex};

/// Entries of a full index of a 1 GiB segment with one entry every 4 KiB.
const INDEX_ENTRIES: usize = 262_144;

fn index_lookup(c: &mut Criterion) {
    let mut index = OffsetIndex::new(0, INDEX_ENTRIES);
    for i in 0..INDEX_ENTRIES as i64 {
        // Four 1 KiB records per 4 KiB indexed.
        index.append(i * 4 + 3, (i * 4096) as u32);
    }
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let targets: Vec<i64> = (0..4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % (INDEX_ENTRIES as u64 * 4)) as i64
        })
        .collect();
    let mut group = c.benchmark_group("offset_index");
    group.measurement_time(Duration::from_secs(2));
    group.warm_up_time(Duration::from_millis(500));
    group.bench_function("lookup_random_262k_entries", |b| {
        let mut next = 0usize;
        b.iter(|| {
            next = (next + 1) % targets.len();
            black_box(index.lookup(black_box(targets[next])))
        })
    });
    group.bench_function("lookup_tail_262k_entries", |b| {
        let tail = INDEX_ENTRIES as i64 * 4 - 1;
        b.iter(|| black_box(index.lookup(black_box(tail))))
    });
    group.finish();
}

/// A 16 KiB batch of 1 KiB records, as `ringbroker bench` sends by default.
fn batch() -> (Bytes, BatchHeader) {
    let value = vec![0x61u8; 1024];
    let records: Vec<NewRecord<'_>> = (0..15)
        .map(|_| NewRecord {
            key: None,
            value: Some(&value),
        })
        .collect();
    let bytes = build_batch(&records, 1_700_000_000_000);
    let header = validate_batch(&bytes).expect("valid batch");
    (Bytes::from(bytes), header)
}

fn executor() -> LocalExecutor {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_MEMLOCK) {
        let _ = setrlimit(Resource::RLIMIT_MEMLOCK, hard, hard);
    }
    LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(2 << 20)
        .make()
        .expect("a glommio executor (io_uring and locked memory)")
}

fn segment_append(c: &mut Criterion) {
    let base = std::env::var_os("RINGBROKER_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let scratch = tempfile::Builder::new()
        .prefix("ringbroker-storage-bench-")
        .tempdir_in(base)
        .expect("scratch directory");
    let executor = executor();
    let config = LogConfig {
        segment_bytes: 256 << 20,
        ..LogConfig::default()
    };
    let log = executor.run(async {
        ensure_iopoll_probed(scratch.path())
            .await
            .expect("iopoll probe");
        Log::create(
            &scratch.path().join("bench-0"),
            config,
            uuid::Uuid::new_v4(),
        )
        .await
        .expect("create log")
    });
    let (bytes, header) = batch();
    let mut group = c.benchmark_group("log_append_16KiB");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.measurement_time(Duration::from_secs(2));
    group.warm_up_time(Duration::from_millis(500));
    group.sample_size(10);
    group.bench_function("written_no_sync", |b| {
        b.iter_custom(|iters| {
            executor.run(async {
                let start = Instant::now();
                for _ in 0..iters {
                    log.append(bytes.clone(), &header, 0, now_ms())
                        .await
                        .expect("append");
                }
                log.flush(false).await.expect("flush");
                start.elapsed()
            })
        })
    });
    group.bench_function("each_fdatasync", |b| {
        b.iter_custom(|iters| {
            executor.run(async {
                let start = Instant::now();
                for _ in 0..iters {
                    log.append(bytes.clone(), &header, 0, now_ms())
                        .await
                        .expect("append");
                    log.flush(true).await.expect("fdatasync");
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    executor.run(async { log.close().await.expect("close") });
}

criterion_group!(benches, index_lookup, segment_append);
criterion_main!(benches);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
