//! Produce v13 (KIP-516) names each topic by its id, not its name, as the
//! Java client 4.1 sends it whenever the broker offers v13. Each answer
//! below was measured on Kafka 4.1.1 with the same requests:
//!
//! - the topic's id: written, and the answer names the topic by that id
//!   (its name left empty); a partition the topic lacks is
//!   UNKNOWN_TOPIC_OR_PARTITION;
//! - an id no topic has, and the nil id: UNKNOWN_TOPIC_ID on every
//!   partition, ahead of an invalid acks (which the known topic in the same
//!   request gets: INVALID_REQUIRED_ACKS); with acks=0 the connection is
//!   closed;
//! - records long enough to be received straight into the owning shard's
//!   log memory are written as sent, read back by Fetch v18 (the version
//!   Kafka 4.1 offers beside Produce v13), and Produce v12 by name goes on
//!   working beside it.

mod common;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsResponse, FetchRequest, FetchResponse, ProduceRequest,
    ProduceResponse,
};
use kafka_protocol::records::RecordBatchDecoder;
use uuid::Uuid;

use common::wire::{
    api_versions, assert_broker_healthy, create_topic_request, encode_batch, metadata_on,
    plain_record, Outcome, RawClient,
};
use common::{Broker, BrokerOptions};

const TOPIC: &str = "by-id";
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REQUIRED_ACKS: i16 = 21;
const UNKNOWN_TOPIC_ID: i16 = 100;

fn batch(values: &[Vec<u8>]) -> Bytes {
    let records: Vec<_> = values
        .iter()
        .enumerate()
        .map(|(i, value)| plain_record(i as i64, None, Bytes::from(value.clone())))
        .collect();
    encode_batch(&records)
}

/// A v13 request: each topic by id, with `batch` on each of its partitions.
fn produce_by_id(acks: i16, topics: &[(Uuid, &[i32])], batch: &Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(
            topics
                .iter()
                .map(|(id, partitions)| {
                    TopicProduceData::default()
                        .with_topic_id(*id)
                        .with_partition_data(
                            partitions
                                .iter()
                                .map(|&index| {
                                    PartitionProduceData::default()
                                        .with_index(index)
                                        .with_records(Some(batch.clone()))
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

/// One topic's answer: (topic id, name, [(partition, error, base offset)]).
type TopicAnswer = (Uuid, String, Vec<(i32, i16, i64)>);

/// Each topic's answer, in order.
fn answers(response: &ProduceResponse) -> Vec<TopicAnswer> {
    response
        .responses
        .iter()
        .map(|t| {
            (
                t.topic_id,
                t.name.to_string(),
                t.partition_responses
                    .iter()
                    .map(|p| (p.index, p.error_code, p.base_offset))
                    .collect(),
            )
        })
        .collect()
}

/// The values of partition 0 from offset 0, by Fetch v18 (by topic id).
fn fetch_values(client: &mut RawClient, id: Uuid) -> Vec<Vec<u8>> {
    let mut partition = FetchPartition::default();
    partition.partition = 0;
    partition.fetch_offset = 0;
    partition.partition_max_bytes = 1 << 20;
    partition.current_leader_epoch = -1;
    partition.log_start_offset = -1;
    let mut topic = FetchTopic::default();
    topic.topic_id = id;
    topic.partitions.push(partition);
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_wait_ms = 100;
    request.min_bytes = 1;
    request.max_bytes = 4 << 20;
    request.session_epoch = -1;
    request.topics.push(topic);
    let response: FetchResponse = client.request(ApiKey::Fetch, 18, &request);
    let partition = &response.responses[0].partitions[0];
    assert_eq!(partition.error_code, 0, "{response:?}");
    let mut records = partition.records.clone().expect("records");
    RecordBatchDecoder::decode_all(&mut records)
        .expect("decode batches")
        .into_iter()
        .flat_map(|set| set.records)
        .map(|record| record.value.expect("value").to_vec())
        .collect()
}

#[test]
fn produce_v13_names_topics_by_id_like_kafka() {
    let mut broker = Broker::start(BrokerOptions::default());
    let mut client = RawClient::connect(&broker.bootstrap());
    let versions = api_versions(&broker.bootstrap());
    let max = |key: ApiKey| common::wire::api_range(&versions, key).map(|(_, max)| max);
    assert_eq!(max(ApiKey::Produce), Some(13));
    assert_eq!(max(ApiKey::Fetch), Some(18));

    let created: CreateTopicsResponse =
        client.request(ApiKey::CreateTopics, 5, &create_topic_request(TOPIC, 2));
    assert_eq!(created.topics[0].error_code, 0, "{created:?}");
    let id = metadata_on(&mut client, Some(&[TOPIC]), 12).topics[0].topic_id;
    assert!(!id.is_nil());

    // The topic's id: partition 0 written, partition 7 unknown; the answer
    // names the topic by id alone.
    let small = batch(&[b"small".to_vec()]);
    let response: ProduceResponse = client.request(
        ApiKey::Produce,
        13,
        &produce_by_id(-1, &[(id, &[0, 7])], &small),
    );
    assert_eq!(
        answers(&response),
        vec![(
            id,
            String::new(),
            vec![(0, 0, 0), (7, UNKNOWN_TOPIC_OR_PARTITION, -1)]
        )]
    );

    // Ids no topic has: every partition UNKNOWN_TOPIC_ID.
    let unknown = Uuid::from_u128(0x5eed_0000_0000_0000_0000_0000_0000_0001);
    for missing in [unknown, Uuid::nil()] {
        let response: ProduceResponse = client.request(
            ApiKey::Produce,
            13,
            &produce_by_id(-1, &[(missing, &[0, 1])], &small),
        );
        assert_eq!(
            answers(&response),
            vec![(
                missing,
                String::new(),
                vec![(0, UNKNOWN_TOPIC_ID, -1), (1, UNKNOWN_TOPIC_ID, -1)]
            )]
        );
    }

    // An invalid acks: the unknown id is still UNKNOWN_TOPIC_ID, the known
    // topic INVALID_REQUIRED_ACKS.
    let response: ProduceResponse = client.request(
        ApiKey::Produce,
        13,
        &produce_by_id(5, &[(unknown, &[0]), (id, &[0])], &small),
    );
    assert_eq!(
        answers(&response),
        vec![
            (unknown, String::new(), vec![(0, UNKNOWN_TOPIC_ID, -1)]),
            (id, String::new(), vec![(0, INVALID_REQUIRED_ACKS, -1)]),
        ]
    );

    // acks=0 to an unknown id: no answer, the connection closed.
    let mut silent = RawClient::connect(&broker.bootstrap());
    let correlation_id = silent.next_correlation_id();
    silent
        .write_raw(&common::wire::encode_request(
            ApiKey::Produce,
            13,
            correlation_id,
            &produce_by_id(0, &[(unknown, &[0])], &small),
        ))
        .expect("send");
    match silent.outcome_within(std::time::Duration::from_secs(5)) {
        Outcome::Closed { bytes_before_close } => assert!(bytes_before_close.is_empty()),
        other => panic!("acks=0 to an unknown id was not closed: {other:?}"),
    }

    // Long records (received into the owning shard's log memory when this
    // connection is on it), then v12 by name; Fetch v18 by id reads all.
    let long: Vec<Vec<u8>> = (0..3u8).map(|i| vec![b'a' + i; 40 << 10]).collect();
    let response: ProduceResponse = client.request(
        ApiKey::Produce,
        13,
        &produce_by_id(-1, &[(id, &[0])], &batch(&long)),
    );
    assert_eq!(
        answers(&response),
        vec![(id, String::new(), vec![(0, 0, 1)])]
    );
    let by_name = common::wire::produce_request(TOPIC, batch(&[b"by-name".to_vec()]));
    let response: ProduceResponse = client.request(ApiKey::Produce, 12, &by_name);
    assert_eq!(
        answers(&response),
        vec![(Uuid::nil(), TOPIC.to_string(), vec![(0, 0, 4)])]
    );
    let mut expected = vec![b"small".to_vec()];
    expected.extend(long);
    expected.push(b"by-name".to_vec());
    assert_eq!(fetch_values(&mut client, id), expected);
    assert_broker_healthy(&mut broker, "Produce v13");
}
