//! Counters in Prometheus' text format on `--metrics-listen` (off unless
//! given): shard 0 accepts the HTTP connections and asks every shard for its
//! counters through the router, so each number stays owned by its shard.
//! Today: record bytes sent by reference and copied in user space on the
//! fetch path (so zero copies is shown, not claimed), bytes copied out of
//! DMA buffers by cold segment reads, segment reads running and waiting,
//! record bytes appended in place and by copy, partitions per shard,
//! uncleanable partitions and their bytes per shard.

use std::rc::Rc;
use std::time::Duration;

use futures::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};

use crate::shard::messages::{ShardReply, ShardRequest};
use crate::shard::Shard;

/// Largest HTTP request head read from a metrics client.
const REQUEST_HEAD_BYTES_MAX: usize = 8 * 1024;
/// How long a metrics client may take to send its request.
const REQUEST_TIMEOUT_MS: u64 = 5_000;

/// One shard's counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShardMetrics {
    /// Record bytes of fetch responses sent by reference.
    pub fetch_record_bytes_by_reference: u64,
    /// Record bytes of fetch responses copied in user space.
    pub fetch_record_bytes_copied: u64,
    /// Record bytes of fetch responses spliced from segment files.
    pub fetch_record_bytes_spliced: u64,
    /// Bytes copied out of DMA read buffers by segment file reads.
    pub cold_read_bytes_copied: u64,
    /// Bytes asked of segment file reads.
    pub segment_bytes_read: u64,
    /// Bytes held by the in-memory tails of the shard's partitions.
    pub tail_cached_bytes: u64,
    /// Segment file reads running now.
    pub cold_reads_in_flight: u64,
    /// Segment file reads waiting for a turn (past `--cold-reads-max`).
    pub cold_reads_waiting: u64,
    /// `syncfs` calls made for the shard's group commit (--log-sync syncfs).
    pub log_syncfs: u64,
    /// Record bytes DMA-written from the memory they were received into.
    pub append_bytes_in_place: u64,
    /// Record bytes copied into write buffers by appends.
    pub append_bytes_copied: u64,
    /// Partitions the shard owns.
    pub partitions: u64,
    /// Partitions of the shard whose compaction failed (Kafka's
    /// uncleanable partitions).
    pub uncleanable_partitions: u64,
    /// Bytes of their closed segments past the cleaner checkpoint.
    pub uncleanable_bytes: u64,
}

/// This shard's counters, read on the shard.
pub fn collect(shard: &Shard) -> ShardMetrics {
    let (cold_reads_in_flight, cold_reads_waiting) = crate::storage::cold_reads_in_flight();
    let (uncleanable_partitions, uncleanable_bytes) = shard.uncleanable_partitions();
    ShardMetrics {
        fetch_record_bytes_by_reference: crate::server::pieces::fetch_bytes_by_reference(),
        fetch_record_bytes_copied: crate::server::pieces::fetch_bytes_copied(),
        fetch_record_bytes_spliced: crate::server::pieces::fetch_bytes_spliced(),
        cold_read_bytes_copied: crate::storage::cold_read_bytes_copied(),
        segment_bytes_read: crate::storage::segment_bytes_read(),
        tail_cached_bytes: crate::storage::shard_cached_bytes() as u64,
        cold_reads_in_flight: cold_reads_in_flight as u64,
        cold_reads_waiting: cold_reads_waiting as u64,
        log_syncfs: crate::storage::shard_syncfs_count(),
        append_bytes_in_place: crate::storage::append_bytes_in_place(),
        append_bytes_copied: crate::storage::append_bytes_copied(),
        partitions: shard.partition_count() as u64,
        uncleanable_partitions: uncleanable_partitions as u64,
        uncleanable_bytes,
    }
}

/// The Prometheus text for every shard's counters.
pub fn render(per_shard: &[ShardMetrics]) -> String {
    let mut out = String::new();
    let mut family = |name: &str, help: &str, kind: &str, value: &dyn Fn(&ShardMetrics) -> u64| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (shard, m) in per_shard.iter().enumerate() {
            out.push_str(&format!("{name}{{shard=\"{shard}\"}} {}\n", value(m)));
        }
    };
    family(
        "ringbroker_fetch_record_bytes_by_reference_total",
        "Record bytes of fetch responses sent without a user-space copy.",
        "counter",
        &|m| m.fetch_record_bytes_by_reference,
    );
    family(
        "ringbroker_fetch_record_bytes_copied_total",
        "Record bytes of fetch responses copied in user space.",
        "counter",
        &|m| m.fetch_record_bytes_copied,
    );
    family(
        "ringbroker_fetch_record_bytes_spliced_total",
        "Record bytes of fetch responses moved from segment files to sockets with splice (--cold-read-path splice), counted on the connection's shard.",
        "counter",
        &|m| m.fetch_record_bytes_spliced,
    );
    family(
        "ringbroker_log_cold_read_bytes_copied_total",
        "Bytes copied out of DMA read buffers by reads of segment files (fetches below the in-memory tail, and scans that rebuild state); the tail is served without this copy.",
        "counter",
        &|m| m.cold_read_bytes_copied,
    );
    family(
        "ringbroker_log_segment_bytes_read_total",
        "Bytes read from segment files (cold fetches, and scans that rebuild state).",
        "counter",
        &|m| m.segment_bytes_read,
    );
    family(
        "ringbroker_log_tail_cached_bytes",
        "Bytes of recent batches the shard's partitions hold in memory for consumers at the tail (at most --shard-cache-bytes, plus batches not yet written).",
        "gauge",
        &|m| m.tail_cached_bytes,
    );
    family(
        "ringbroker_log_cold_reads_in_flight",
        "Reads of segment files running now (at most --cold-reads-max).",
        "gauge",
        &|m| m.cold_reads_in_flight,
    );
    family(
        "ringbroker_log_cold_reads_waiting",
        "Reads of segment files waiting for one of the --cold-reads-max turns.",
        "gauge",
        &|m| m.cold_reads_waiting,
    );
    family(
        "ringbroker_log_syncfs_total",
        "syncfs calls that made the shard's durable appends durable, one covering every partition (--log-sync syncfs).",
        "counter",
        &|m| m.log_syncfs,
    );
    family(
        "ringbroker_log_append_bytes_in_place_total",
        "Record bytes of produced batches written to disk straight from the memory they were received into (no user-space copy), on the partition's shard.",
        "counter",
        &|m| m.append_bytes_in_place,
    );
    family(
        "ringbroker_log_append_bytes_copied_total",
        "Record bytes of appended batches copied into a write buffer before the disk write (records under 32 KiB, batches from another shard's connection, mispredicted places, and the last partial block of each in-place batch).",
        "counter",
        &|m| m.append_bytes_copied,
    );
    family(
        "ringbroker_partitions",
        "Partitions owned by the shard.",
        "gauge",
        &|m| m.partitions,
    );
    family(
        "ringbroker_log_cleaner_uncleanable_partitions",
        "Partitions of the shard whose compaction failed, which the cleaner leaves alone until the broker restarts (Kafka's uncleanable-partitions-count).",
        "gauge",
        &|m| m.uncleanable_partitions,
    );
    family(
        "ringbroker_log_cleaner_uncleanable_bytes",
        "Bytes of the uncleanable partitions' closed segments past their cleaner checkpoints, what a compaction of them would read (Kafka's uncleanable-bytes).",
        "gauge",
        &|m| m.uncleanable_bytes,
    );
    out
}

/// Serves `GET /metrics` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, shard: Rc<Shard>) {
    loop {
        let Ok(stream) = listener.accept().await else {
            continue;
        };
        let shard = shard.clone();
        glommio::spawn_local(async move {
            if let Err(e) = answer(stream, &shard).await {
                tracing::debug!(error = %e, "metrics request failed");
            }
        })
        .detach();
    }
}

async fn answer(mut stream: TcpStream, shard: &Rc<Shard>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_millis(REQUEST_TIMEOUT_MS)))?;
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 || head.len() + n > REQUEST_HEAD_BYTES_MAX {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let (status, body) = if head.starts_with(b"GET /metrics ") || head.starts_with(b"GET / ") {
        let mut per_shard = Vec::with_capacity(shard.nr_shards);
        for target in 0..shard.nr_shards {
            let reply = match shard.call(target, ShardRequest::Metrics).await {
                Ok(completion) => completion.await.ok(),
                Err(_) => None,
            };
            per_shard.push(match reply {
                Some(ShardReply::Metrics(m)) => m,
                _ => ShardMetrics::default(),
            });
        }
        ("200 OK", render(&per_shard))
    } else {
        ("404 Not Found", "only GET /metrics is served\n".to_string())
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.close().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_lists_every_shard_per_family() {
        let text = render(&[
            ShardMetrics {
                fetch_record_bytes_by_reference: 10,
                fetch_record_bytes_copied: 0,
                fetch_record_bytes_spliced: 0,
                cold_read_bytes_copied: 4096,
                segment_bytes_read: 8192,
                tail_cached_bytes: 0,
                cold_reads_in_flight: 2,
                cold_reads_waiting: 0,
                log_syncfs: 7,
                append_bytes_in_place: 65536,
                append_bytes_copied: 100,
                partitions: 3,
                uncleanable_partitions: 1,
                uncleanable_bytes: 4096,
            },
            ShardMetrics::default(),
        ]);
        assert!(text.contains("ringbroker_fetch_record_bytes_by_reference_total{shard=\"0\"} 10\n"));
        assert!(text.contains("ringbroker_fetch_record_bytes_copied_total{shard=\"1\"} 0\n"));
        assert!(text.contains("ringbroker_log_cold_read_bytes_copied_total{shard=\"0\"} 4096\n"));
        assert!(text.contains("ringbroker_log_cold_reads_in_flight{shard=\"0\"} 2\n"));
        assert!(text.contains("ringbroker_log_syncfs_total{shard=\"0\"} 7\n"));
        assert!(text.contains("ringbroker_log_append_bytes_in_place_total{shard=\"0\"} 65536\n"));
        assert!(text.contains("ringbroker_log_append_bytes_copied_total{shard=\"0\"} 100\n"));
        assert!(text.contains("# TYPE ringbroker_partitions gauge\n"));
        assert!(text.contains("ringbroker_log_cleaner_uncleanable_partitions{shard=\"0\"} 1\n"));
        assert!(text.contains("ringbroker_log_cleaner_uncleanable_bytes{shard=\"0\"} 4096\n"));
    }
}
