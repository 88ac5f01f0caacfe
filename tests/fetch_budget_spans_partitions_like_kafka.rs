//! Goal: one Fetch over many partitions returns what Kafka would (KIP-74):
//! every partition with data gets some of the response's `max_bytes` in
//! request order, however large `partition_max_bytes` is and however many
//! partitions before it are empty; the response stays within `max_bytes`
//! except for the first batch; with `max_bytes` 1 exactly one batch comes
//! back. The broker reads a fetch's partitions concurrently, setting budget
//! aside per partition, and must not let empty partitions or unused
//! reservations starve the ones after them.
//!
//! Method: one shard, an 8-partition topic with ~1 KiB single-record
//! batches (linger 0, one send at a time) on partitions 4-7 only, written
//! and then read back after a restart (so from the segment files, by both
//! cold read paths). Raw Fetch v12 requests name partitions 0-7 in order.

mod common;

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::producer::FutureRecord;

use common::kafka::{auto_create_topic, future_producer, producer_config};
use common::wire::RawClient;
use common::{with_timeout, Broker, BrokerOptions};

const TOPIC: &str = "fetch-budget";
const PARTITIONS: i32 = 8;
const RECORDS_PER_PARTITION: usize = 60;

fn fetch(broker: &Broker, max_bytes: i32, partition_max_bytes: i32) -> FetchResponse {
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(StrBytes::from_static_str(TOPIC));
    for partition in 0..PARTITIONS {
        let mut p = FetchPartition::default();
        p.partition = partition;
        p.fetch_offset = 0;
        p.partition_max_bytes = partition_max_bytes;
        p.current_leader_epoch = -1;
        p.log_start_offset = -1;
        topic.partitions.push(p);
    }
    let mut request = FetchRequest::default();
    request.replica_id = kafka_protocol::messages::BrokerId(-1);
    request.max_wait_ms = 100;
    request.min_bytes = 1;
    request.max_bytes = max_bytes;
    request.isolation_level = 0;
    request.session_id = 0;
    request.session_epoch = -1;
    request.topics.push(topic);
    let mut client = RawClient::connect(&broker.bootstrap());
    client.request(ApiKey::Fetch, 12, &request)
}

/// Record bytes per partition, in partition order.
fn record_bytes(response: &FetchResponse) -> Vec<usize> {
    assert_eq!(response.error_code, 0);
    let partitions = &response.responses[0].partitions;
    assert_eq!(partitions.len(), PARTITIONS as usize);
    partitions
        .iter()
        .map(|p| {
            assert_eq!(p.error_code, 0, "partition {}", p.partition_index);
            let expected_end = if p.partition_index >= 4 {
                RECORDS_PER_PARTITION as i64
            } else {
                0
            };
            assert_eq!(
                p.high_watermark, expected_end,
                "partition {}",
                p.partition_index
            );
            p.records.as_ref().map_or(0, Bytes::len)
        })
        .collect()
}

/// Size of the first batch of `records` (its length field + 12).
fn first_batch_bytes(records: &Bytes) -> usize {
    12 + i32::from_be_bytes([records[8], records[9], records[10], records[11]]) as usize
}

fn check_fetches(broker: &Broker, when: &str) {
    // Large partition budgets, empty partitions first: every partition
    // with data still returns all of it.
    let bytes = record_bytes(&fetch(broker, 50 << 20, 10 << 20));
    assert_eq!(&bytes[..4], &[0, 0, 0, 0], "{when}: empty partitions");
    for (partition, &got) in bytes.iter().enumerate().skip(4) {
        assert!(
            got >= RECORDS_PER_PARTITION * 1024,
            "{when}: partition {partition} returned {got} bytes: {bytes:?}"
        );
    }
    // A response budget of about one and a half partitions: the first
    // partition with data fills it and the next gets what it leaves.
    let full = bytes[4];
    let budget = full + full / 2;
    let bytes = record_bytes(&fetch(broker, budget as i32, 10 << 20));
    let total: usize = bytes.iter().sum();
    assert_eq!(bytes[4], full, "{when}: {bytes:?}");
    assert!(
        bytes[5] > 0,
        "{when}: the second partition got nothing: {bytes:?}"
    );
    assert!(
        total <= budget,
        "{when}: {total} bytes for a {budget}-byte budget"
    );
    // max_bytes 1: exactly the first batch of the first partition with data.
    let response = fetch(broker, 1, 10 << 20);
    let bytes = record_bytes(&response);
    let first = response.responses[0].partitions[4].records.clone().unwrap();
    assert_eq!(bytes[4], first_batch_bytes(&first), "{when}: {bytes:?}");
    assert_eq!(bytes.iter().sum::<usize>(), bytes[4], "{when}: {bytes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_budget_spans_partitions_like_kafka() {
    let mut broker = Broker::start(
        BrokerOptions::default()
            .cores(1)
            .num_partitions(PARTITIONS as u32),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(120), async {
        auto_create_topic(&bootstrap, TOPIC, PARTITIONS);
        let mut config = producer_config(&bootstrap);
        config.set("linger.ms", "0");
        let producer = future_producer(&config);
        let value = vec![b'v'; 1000];
        for partition in 4..PARTITIONS {
            for index in 0..RECORDS_PER_PARTITION {
                let key = format!("{partition}-{index}");
                producer
                    .send(
                        FutureRecord::to(TOPIC)
                            .partition(partition)
                            .key(key.as_bytes())
                            .payload(&value[..]),
                        Duration::from_secs(10),
                    )
                    .await
                    .unwrap_or_else(|(error, _)| panic!("produce: {error}"));
            }
        }
    })
    .await;
    check_fetches(&broker, "from memory");
    broker.restart();
    check_fetches(&broker, "from the files by splice");
    broker.restart_with_arg("--cold-read-path", "dma");
    check_fetches(&broker, "from the files by DMA");
}
