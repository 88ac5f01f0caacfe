//! Record-batch validation on the produce path: header parse plus CRC32C
//! over the batch, for the batch sizes clients send.
//!
//! Sketch: CRC32C with SSE4.2 runs at roughly 10-20 GB/s per core, so a
//! 16 KiB batch should validate in about 1-2 us and a 1 MiB batch in about
//! 50-100 us; the header parse is a few nanoseconds and should not show.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ringbroker::protocol::record_batch::{
    validate_batch, ATTRIBUTES_OFFSET, BATCH_HEADER_BYTES, CRC_OFFSET,
};

/// A v2 batch header followed by `body_bytes` of opaque record bytes, with a
/// correct CRC (validation does not decode records).
fn batch(body_bytes: usize) -> Vec<u8> {
    let mut b = vec![0u8; BATCH_HEADER_BYTES + body_bytes];
    let length = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&length.to_be_bytes());
    b[16] = 2;
    b[23..27].copy_from_slice(&0i32.to_be_bytes());
    b[57..61].copy_from_slice(&1i32.to_be_bytes());
    for (i, byte) in b[BATCH_HEADER_BYTES..].iter_mut().enumerate() {
        *byte = (i * 31) as u8;
    }
    let crc = crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]);
    b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

fn validate(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate_batch");
    for size in [1024usize, 16 * 1024, 1024 * 1024] {
        let b = batch(size);
        group.throughput(Throughput::Bytes(b.len() as u64));
        group.bench_function(format!("{size}B"), |bench| {
            bench.iter(|| validate_batch(black_box(&b)).expect("valid"))
        });
    }
    group.finish();
}

criterion_group!(benches, validate);
criterion_main!(benches);
