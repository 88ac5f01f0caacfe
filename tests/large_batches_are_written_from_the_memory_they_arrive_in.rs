//! Goal: record batches of 32 KiB and more, produced on a connection of
//! the partition's own shard, are received into the memory the log writes
//! them to disk from (no user-space copy of their whole blocks, counted by
//! `ringbroker_log_append_bytes_in_place_total`), and what was acknowledged
//! reads back bit for bit: from the in-memory tail, and from the segment
//! files after kill -9 and a restart. Producers racing on the same
//! partitions (so some batches do not land where they were predicted and
//! are copied instead) lose and mix up nothing.
//!
//! Method: a one-shard broker (every connection is on the owning shard),
//! a 2-partition topic. Phase 1: one librdkafka producer (acks=all, linger
//! 20 ms, batches up to 1 MB) sends 3000 messages of ~6 KiB; the in-place
//! counter must cover at least 80 % of the value bytes (each batch's first
//! and last partial blocks are copied, and batches under 32 KiB are
//! copied). Phase 2: two producers on two connections send 3000 such
//! messages each to both partitions at once. Every acknowledged message is
//! compared with what a consumer reads at its offset, then again after
//! kill -9 and a restart.

mod common;

use std::time::Duration;

use common::kafka::{
    assert_read_back_matches, auto_create_topic, end_offsets, future_producer, produce_all,
    producer_config, read_partitions, test_message, AckedMessage, TestMessage, READ_TIMEOUT,
};
use common::{metric_sum, scrape_metrics, with_timeout, Broker, BrokerOptions};

const TOPIC: &str = "large-batches";
const PARTITIONS: i32 = 2;
const VALUE_BYTES: usize = 6000;

/// Message `index` with a value of about [`VALUE_BYTES`] pseudo-random
/// (incompressible) bytes.
fn large_message(index: u64) -> TestMessage {
    let mut message = test_message(index, (index % PARTITIONS as u64) as i32);
    let mut state = index.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut value = format!("value-{index}-").into_bytes();
    while value.len() < VALUE_BYTES + (index % 97) as usize {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        value.push(state as u8);
    }
    message.value = Some(value);
    message
}

fn value_bytes(acked: &[AckedMessage]) -> u64 {
    acked
        .iter()
        .map(|a| a.message.value.as_ref().map_or(0, Vec::len) as u64)
        .sum()
}

fn in_place_bytes(metrics_port: u16) -> (u64, String) {
    let metrics = scrape_metrics(metrics_port);
    (
        metric_sum(&metrics, "ringbroker_log_append_bytes_in_place_total"),
        metrics,
    )
}

fn read_back(broker: &Broker, acked: &[AckedMessage], when: &str) {
    let ends = end_offsets(acked);
    let received = read_partitions(&broker.bootstrap(), TOPIC, &ends, READ_TIMEOUT);
    assert_read_back_matches(when, acked, &received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_batches_are_written_from_the_memory_they_arrive_in() {
    let metrics_port = common::free_port();
    let mut broker = Broker::start(
        BrokerOptions::default()
            .cores(1)
            .num_partitions(PARTITIONS as u32)
            .arg("--metrics-listen", format!("127.0.0.1:{metrics_port}")),
    );
    let bootstrap = broker.bootstrap();
    let mut acked = Vec::new();

    with_timeout(Duration::from_secs(240), async {
        auto_create_topic(&bootstrap, TOPIC, PARTITIONS);
        let mut config = producer_config(&bootstrap);
        config
            .set("linger.ms", "20")
            .set("batch.size", "1000000")
            .set("compression.codec", "none");

        // Phase 1: one connection.
        let messages: Vec<TestMessage> = (0..3000).map(large_message).collect();
        let producer = future_producer(&config);
        acked.extend(produce_all(&producer, TOPIC, &messages).await);
        let (in_place, metrics) = in_place_bytes(metrics_port);
        let sent = value_bytes(&acked);
        assert!(
            in_place * 10 >= sent * 8,
            "{in_place} bytes written in place of {sent} value bytes:\n{metrics}"
        );
        read_back(&broker, &acked, "one producer");

        // Phase 2: two connections racing on both partitions.
        let second = future_producer(&config);
        let first_messages: Vec<TestMessage> = (3000..6000).map(large_message).collect();
        let second_messages: Vec<TestMessage> = (6000..9000).map(large_message).collect();
        let (first_acked, second_acked) = tokio::join!(
            produce_all(&producer, TOPIC, &first_messages),
            produce_all(&second, TOPIC, &second_messages)
        );
        acked.extend(first_acked);
        acked.extend(second_acked);
        let (in_place_after, metrics) = in_place_bytes(metrics_port);
        assert!(
            in_place_after > in_place,
            "nothing written in place while two producers raced:\n{metrics}"
        );
        let copied = metric_sum(&metrics, "ringbroker_log_append_bytes_copied_total");
        assert!(
            in_place_after + copied >= value_bytes(&acked),
            "appended bytes ({in_place_after} in place, {copied} copied) do not cover the values:\n{metrics}"
        );
        eprintln!(
            "in place: {in_place} of {sent} value bytes with one producer, {in_place_after} in place and {copied} copied in all"
        );
        read_back(&broker, &acked, "two producers");
    })
    .await;

    broker.kill9();
    broker.restart();
    with_timeout(Duration::from_secs(120), async {
        read_back(&broker, &acked, "after kill -9 and restart");
    })
    .await;
}
