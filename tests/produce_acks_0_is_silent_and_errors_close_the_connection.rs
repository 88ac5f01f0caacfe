//! Produce with acks=0, as Kafka answers it: no response at all when every
//! partition takes its records, and the connection closed when any
//! partition refuses them (the producer's only sign of the error, after
//! which it refreshes its metadata); the broker keeps serving.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ListOffsetsRequest, ListOffsetsResponse, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Record;

use common::wire::{
    assert_broker_healthy, encode_batch, encode_request, metadata_on, plain_record, Outcome,
    RawClient,
};
use common::{Broker, BrokerOptions};

const TOPIC: &str = "acks-zero";

fn batch(values: &[&str]) -> Bytes {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, value)| plain_record(i as i64, None, Bytes::from(value.to_string())))
        .collect();
    encode_batch(&records)
}

/// Sends an acks=0 Produce of `batch` to `TOPIC`'s `partition` (v9, the
/// version librdkafka 2.x sends) without waiting for anything.
fn produce_acks_0(client: &mut RawClient, partition: i32, batch: Bytes) {
    let request = ProduceRequest::default()
        .with_acks(0)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch))])]);
    let correlation_id = client.next_correlation_id();
    client
        .write_raw(&encode_request(
            ApiKey::Produce,
            9,
            correlation_id,
            &request,
        ))
        .expect("send produce");
}

fn latest_offset(client: &mut RawClient) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-1)])]);
    let response: ListOffsetsResponse = client.request(ApiKey::ListOffsets, 5, &request);
    let partition = &response.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0, "{response:?}");
    partition.offset
}

#[test]
fn produce_acks_0_is_silent_and_errors_close_the_connection() {
    let mut broker = Broker::start(BrokerOptions::default().num_partitions(1));
    let bootstrap = broker.bootstrap();
    let mut client = RawClient::connect(&bootstrap);
    let deadline = Instant::now() + Duration::from_secs(30);
    while metadata_on(&mut client, Some(&[TOPIC]), 4).topics[0].error_code != 0 {
        assert!(Instant::now() < deadline, "topic {TOPIC} never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Accepted: nothing comes back, the connection stays open and serves
    // the next request, and the records are in the log.
    produce_acks_0(&mut client, 0, batch(&["a", "b", "c"]));
    produce_acks_0(&mut client, 0, batch(&["d"]));
    assert!(
        matches!(
            client.outcome_within(Duration::from_millis(500)),
            Outcome::OpenAndSilent
        ),
        "an accepted acks=0 produce was answered or closed"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while latest_offset(&mut client) < 4 {
        assert!(Instant::now() < deadline, "acks=0 records never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(latest_offset(&mut client), 4);

    // Refused (a partition the topic does not have, and a corrupt batch):
    // the connection is closed without a response.
    let mut corrupt = batch(&["e"]).to_vec();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    for (partition, records, what) in [
        (7, batch(&["e"]), "unknown partition"),
        (0, Bytes::from(corrupt), "corrupt batch"),
    ] {
        let mut refused = RawClient::connect(&bootstrap);
        produce_acks_0(&mut refused, partition, records);
        match refused.outcome_within(Duration::from_secs(5)) {
            Outcome::Closed { bytes_before_close } => assert!(
                bytes_before_close.is_empty(),
                "{what}: {} bytes sent before the close",
                bytes_before_close.len()
            ),
            other => panic!("{what}: the connection was not closed: {other:?}"),
        }
    }
    assert_eq!(latest_offset(&mut client), 4, "a refused batch was written");
    assert_broker_healthy(&mut broker, "acks=0 produce errors");
}
