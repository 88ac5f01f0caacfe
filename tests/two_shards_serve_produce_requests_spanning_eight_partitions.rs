//! Goal: with two shards, requests that name partitions owned by both shards
//! (produce and fetch alike) are split, served and reassembled correctly, on
//! connections accepted by either shard.
//!
//! Method: `--cores 2`, a topic of 8 partitions created with CreateTopics.
//! Three producers (three connections, so the kernel's SO_REUSEPORT spread
//! very likely lands them on both shards) each send to all 8 partitions with
//! a 50 ms linger, so one Produce request carries batches for many
//! partitions. A single consumer then fetches all 8 partitions at once (one
//! Fetch spanning both shards) and every message is compared with its
//! acknowledgement. Metadata must show all 8 partitions led by the one
//! broker. The fetches send record bytes by reference: the broker's
//! metrics (`--metrics-listen`) count at least every byte read back as sent
//! without a copy and zero bytes copied in user space, and each shard made
//! its acks=all writes durable with its own syncfs calls. A second test
//! restarts a two-shard broker a dozen times.

mod common;

use std::time::Duration;

use common::kafka::{
    assert_read_back_matches, base_consumer, create_topic, end_offsets, future_producer,
    produce_all, producer_config, read_partitions, test_message, watermarks, READ_TIMEOUT,
};
use common::{with_timeout, Broker, BrokerOptions};
use rdkafka::consumer::Consumer;

const TOPIC: &str = "two-shards";
const PARTITIONS: i32 = 8;
const PRODUCERS: u64 = 3;
const MESSAGES_PER_PRODUCER: u64 = 4_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_serve_produce_requests_spanning_eight_partitions() {
    let metrics_port = common::free_port();
    let broker = Broker::start(
        BrokerOptions::default()
            .cores(2)
            .arg("--metrics-listen", format!("127.0.0.1:{metrics_port}"))
            // Not the default with 2 shards (auto picks fdatasync there):
            // checks each shard's own syncfs.
            .arg("--log-sync", "syncfs"),
    );
    let bootstrap = broker.bootstrap();

    with_timeout(Duration::from_secs(120), async {
        create_topic(&bootstrap, TOPIC, PARTITIONS).await;

        let metadata = base_consumer(&bootstrap)
            .fetch_metadata(Some(TOPIC), Duration::from_secs(10))
            .expect("Metadata");
        assert_eq!(metadata.brokers().len(), 1, "brokers: one node");
        let broker_id = metadata.brokers()[0].id();
        let topic = &metadata.topics()[0];
        let mut partition_ids: Vec<i32> = topic.partitions().iter().map(|p| p.id()).collect();
        partition_ids.sort();
        assert_eq!(partition_ids, (0..PARTITIONS).collect::<Vec<_>>());
        for partition in topic.partitions() {
            assert_eq!(
                partition.leader(),
                broker_id,
                "partition {} leader",
                partition.id()
            );
        }

        let mut config = producer_config(&bootstrap);
        config.set("linger.ms", "50");
        let producers: Vec<_> = (0..PRODUCERS).map(|_| future_producer(&config)).collect();
        let sends = producers
            .iter()
            .enumerate()
            .map(|(producer_index, producer)| {
                let messages: Vec<_> = (0..MESSAGES_PER_PRODUCER)
                    .map(|i| {
                        let index = producer_index as u64 * MESSAGES_PER_PRODUCER + i;
                        test_message(index, (index % PARTITIONS as u64) as i32)
                    })
                    .collect();
                async move { produce_all(producer, TOPIC, &messages).await }
            });
        let acked: Vec<_> = futures::future::join_all(sends)
            .await
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(acked.len() as u64, PRODUCERS * MESSAGES_PER_PRODUCER);

        let ends = end_offsets(&acked);
        assert_eq!(
            ends.len(),
            PARTITIONS as usize,
            "every partition got messages"
        );
        let received = read_partitions(&bootstrap, TOPIC, &ends, READ_TIMEOUT);
        assert_read_back_matches("8 partitions over 2 shards", &acked, &received);
        for (&partition, &end) in &ends {
            assert_eq!(
                watermarks(&bootstrap, TOPIC, partition),
                (0, end),
                "partition {partition}: (log start, high watermark)"
            );
        }
        let value_bytes: usize = acked
            .iter()
            .map(|a| a.message.value.as_ref().map_or(0, Vec::len))
            .sum();
        let metrics = common::scrape_metrics(metrics_port);
        assert_eq!(
            common::metric_sum(&metrics, "ringbroker_fetch_record_bytes_copied_total"),
            0,
            "record bytes copied in user space on the fetch path:\n{metrics}"
        );
        assert!(
            common::metric_sum(&metrics, "ringbroker_fetch_record_bytes_by_reference_total")
                >= value_bytes as u64,
            "fewer bytes sent by reference than the values read back ({value_bytes}):\n{metrics}"
        );
        // acks=all under --log-sync syncfs: each shard made
        // its partitions' writes durable with its own syncfs calls.
        let syncfs_per_shard: Vec<u64> = metrics
            .lines()
            .filter(|l| l.starts_with("ringbroker_log_syncfs_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        assert!(
            syncfs_per_shard.len() == 2 && syncfs_per_shard.iter().all(|&n| n > 0),
            "syncfs calls per shard {syncfs_per_shard:?}:\n{metrics}"
        );
    })
    .await;
}

/// Start-up and shutdown of a two-shard broker, repeated: shards that race
/// each other at start (over a shared file, say) fail here rather than once
/// in a while elsewhere. Each restart must print the ready line and each
/// SIGTERM must exit 0. Each shard logs the per-core settings it took from
/// the command line, with its own CPU.
#[test]
fn a_two_shard_broker_starts_and_stops_cleanly_every_time() {
    const STARTS: usize = 12;
    let mut broker = Broker::start(
        BrokerOptions::default()
            .cores(2)
            .arg("--produce-shares", 700)
            .arg("--cold-fetch-shares", 300)
            .arg("--write-behind", 3)
            .arg("--shard-cache-bytes", 64 << 20)
            .arg("--ring-depth", 256),
    );
    let log = broker.log_contents();
    let mut cpus_seen = Vec::new();
    for shard in 0..2 {
        let line = log
            .lines()
            .find(|l| l.contains(" serving ") && l.contains(&format!(" shard={shard} ")))
            .unwrap_or_else(|| panic!("no serving line of shard {shard}:\n{log}"));
        for setting in [
            "produce_shares=700",
            "fetch_shares=1000",
            "cold_fetch_shares=300",
            "background_shares=100",
            "write_behind=3",
            "shard_cache_bytes=67108864",
            "ring_depth=256",
            // Two shards sync each partition on its own, and write beside it.
            "log_sync=Fdatasync",
            "writes_during_sync=Overlap",
        ] {
            assert!(
                line.split(' ').any(|field| field == setting),
                "shard {shard}: {setting} missing from {line}"
            );
        }
        let cpus = line
            .split(' ')
            .find_map(|field| field.strip_prefix("cpus="))
            .unwrap_or_else(|| panic!("shard {shard}: no cpus in {line}"));
        cpus_seen.push(cpus.to_string());
    }
    assert_ne!(cpus_seen[0], cpus_seen[1], "each shard on a CPU of its own");
    if holds_cap_ipc_lock() {
        // io_uring does not count a CAP_IPC_LOCK holder's registered memory
        // against `ulimit -l`, so the shards take the default whatever the
        // limit, and glommio registers it with each of its rings (it logs
        // "registering buffers ... Skipping" and runs without registered
        // memory when the kernel refuses).
        for shard in 0..2 {
            let line = log
                .lines()
                .find(|l| l.contains(" serving ") && l.contains(&format!(" shard={shard} ")))
                .unwrap();
            assert!(
                line.split(' ')
                    .any(|field| field == "io_memory_bytes=10485760"),
                "shard {shard}: not the default registered memory: {line}"
            );
        }
        assert!(
            !log.contains("registering buffers"),
            "registered memory refused:\n{log}"
        );
    }
    for _ in 1..STARTS {
        broker.restart();
        common::wire::assert_broker_healthy(&mut broker, "a restart");
    }
    broker.terminate();
}

/// Whether this test process (and so the broker it starts) holds
/// CAP_IPC_LOCK (root usually does).
fn holds_cap_ipc_lock() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << 14) != 0)
}
