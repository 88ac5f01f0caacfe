//! Goal: OffsetForLeaderEpoch (v2-v4) answers as Kafka 4.1.1 answers the
//! same requests (recorded against it): leader epoch 0 ends at the log end
//! (0 for an empty partition), -1 and an epoch never seen are undefined
//! (-1, -1), an epoch below every known one ends where the first starts; a
//! `current_leader_epoch` newer than the partition's is UNKNOWN_LEADER_EPOCH
//! and one older (below -1) FENCED_LEADER_EPOCH, in ListOffsets too (Fetch
//! takes any negative one for none); unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION; every
//! topic and partition is answered in request order, repeats included. After
//! kill -9 the partitions are at leader epoch 2, as a Kafka node's after a
//! restart, and epoch 0 ends at the acknowledged log end.
//!
//! Method: hand-built requests (kafka-protocol's types) on a broker with two
//! shards, so the partitions of one request are answered by both.

mod common;

use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use common::kafka::{create_topic, future_producer, produce_all, producer_config, test_message};
use common::wire::RawClient;
use common::{with_timeout, Broker, BrokerOptions};

const TOPIC: &str = "epochs";
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

/// (partition, current leader epoch, leader epoch) of one question.
type Question = (i32, i32, i32);
/// (topic, partition, error, epoch, end offset) of one answer.
type Answer = (String, i32, i16, i32, i64);

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// A request for `topics`: (topic, [(partition, current epoch, epoch)]).
fn request(topics: &[(&str, &[Question])]) -> OffsetForLeaderEpochRequest {
    let mut request = OffsetForLeaderEpochRequest::default();
    request.replica_id = BrokerId(-1);
    request.topics = topics
        .iter()
        .map(|(topic, partitions)| {
            let mut wanted = OffsetForLeaderTopic::default();
            wanted.topic = name(topic);
            wanted.partitions = partitions
                .iter()
                .map(|&(partition, current, epoch)| {
                    let mut p = OffsetForLeaderPartition::default();
                    p.partition = partition;
                    p.current_leader_epoch = current;
                    p.leader_epoch = epoch;
                    p
                })
                .collect();
            wanted
        })
        .collect();
    request
}

/// (topic, partition, error, epoch, end offset) of every answer, in order,
/// and the topics' names in order.
fn ask(
    bootstrap: &str,
    version: i16,
    topics: &[(&str, &[Question])],
) -> (Vec<String>, Vec<Answer>) {
    let response: OffsetForLeaderEpochResponse = RawClient::connect(bootstrap).request(
        ApiKey::OffsetForLeaderEpoch,
        version,
        &request(topics),
    );
    let names = response
        .topics
        .iter()
        .map(|t| t.topic.to_string())
        .collect();
    let answers = response
        .topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(|p| {
                (
                    topic.topic.to_string(),
                    p.partition,
                    p.error_code,
                    p.leader_epoch,
                    p.end_offset,
                )
            })
        })
        .collect();
    (names, answers)
}

fn fetch_error(bootstrap: &str, current_leader_epoch: i32) -> i16 {
    let mut partition = FetchPartition::default();
    partition.partition = 0;
    partition.fetch_offset = 0;
    partition.partition_max_bytes = 1 << 20;
    partition.current_leader_epoch = current_leader_epoch;
    partition.log_start_offset = -1;
    let mut topic = FetchTopic::default();
    topic.topic = name(TOPIC);
    topic.partitions.push(partition);
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_wait_ms = 0;
    request.max_bytes = 1 << 20;
    request.session_epoch = -1;
    request.topics.push(topic);
    let response: FetchResponse =
        RawClient::connect(bootstrap).request(ApiKey::Fetch, 12, &request);
    response.responses[0].partitions[0].error_code
}

fn list_offsets_error(bootstrap: &str, current_leader_epoch: i32) -> i16 {
    let mut partition = ListOffsetsPartition::default();
    partition.partition_index = 0;
    partition.timestamp = -1;
    partition.current_leader_epoch = current_leader_epoch;
    let mut topic = ListOffsetsTopic::default();
    topic.name = name(TOPIC);
    topic.partitions = vec![partition];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = BrokerId(-1);
    request.topics = vec![topic];
    let response: ListOffsetsResponse =
        RawClient::connect(bootstrap).request(ApiKey::ListOffsets, 7, &request);
    response.topics[0].partitions[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_for_leader_epoch_answers_like_kafka() {
    let mut broker = Broker::start(BrokerOptions::default().cores(2));
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(240), async {
        create_topic(&bootstrap, TOPIC, 3).await;
        let producer = future_producer(&producer_config(&bootstrap));
        let messages: Vec<_> = (0..5).map(|i| test_message(i, 0)).collect();
        let acked = produce_all(&producer, TOPIC, &messages).await;
        assert_eq!(acked.last().map(|a| a.offset), Some(4));

        let cases: &[Question] = &[
            (0, -1, 0),
            (0, 0, 0),
            (0, 1, 0),
            (0, -1, 1),
            (0, -1, -1),
            (0, 0, -1),
            (0, -1, 5),
            (1, -1, 0),
            (1, -1, -1),
            (9, -1, 0),
            (0, -2, 0),
            (0, -1, -5),
        ];
        // Kafka 4.1.1's answers to the same cases, in order.
        let kafka: Vec<Answer> = [
            (0, 0, 0, 5),
            (0, 0, 0, 5),
            (0, UNKNOWN_LEADER_EPOCH, -1, -1),
            (0, 0, -1, -1),
            (0, 0, -1, -1),
            (0, 0, -1, -1),
            (0, 0, -1, -1),
            (1, 0, 0, 0),
            (1, 0, -1, -1),
            (9, UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
            (0, FENCED_LEADER_EPOCH, -1, -1),
            (0, 0, -5, 0),
        ]
        .into_iter()
        .map(|(p, e, epoch, end)| (TOPIC.to_string(), p, e, epoch, end))
        .chain([
            ("nosuch".to_string(), 0, UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
            (TOPIC.to_string(), 0, 0, 0, 5),
        ])
        .collect();
        for version in 2..=4 {
            let (names, answers) = ask(
                &bootstrap,
                version,
                &[
                    (TOPIC, cases),
                    ("nosuch", &[(0, -1, 0)]),
                    (TOPIC, &[(0, -1, 0)]),
                ],
            );
            assert_eq!(names, [TOPIC, "nosuch", TOPIC], "v{version}");
            assert_eq!(answers, kafka, "v{version}");
        }
        // A topic with no partitions named is answered with none.
        let (names, answers) = ask(&bootstrap, 2, &[(TOPIC, &[]), ("nosuch", &[])]);
        assert_eq!(
            (names, answers),
            (vec![TOPIC.into(), "nosuch".into()], vec![])
        );

        // ListOffsets checks the current leader epoch the same way; Fetch
        // takes every negative epoch for "no check", as Kafka 4.1.1 does.
        for (current, list_offsets, fetch) in [
            (-1, 0, 0),
            (0, 0, 0),
            (1, UNKNOWN_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH),
            (-2, FENCED_LEADER_EPOCH, 0),
        ] {
            assert_eq!(
                list_offsets_error(&bootstrap, current),
                list_offsets,
                "ListOffsets at current epoch {current}"
            );
            assert_eq!(
                fetch_error(&bootstrap, current),
                fetch,
                "Fetch at current epoch {current}"
            );
        }

        // The epoch cache comes back from disk after kill -9, and the
        // partitions come back two leader epochs up, as a Kafka node's do
        // (Kafka 4.1.1 after a restart, its cache [0@0, 4@1249]: epochs 0-3
        // end at 1249, 4 at the log end, 5 is undefined, an older current
        // epoch is fenced).
        let more: Vec<_> = (5..12).map(|i| test_message(i, 0)).collect();
        produce_all(&producer, TOPIC, &more).await;
        drop(producer);
        broker.kill9();
        broker.restart();
        let (_, answers) = ask(
            &broker.bootstrap(),
            4,
            &[(
                TOPIC,
                &[
                    (0, 2, 0),
                    (0, 2, 1),
                    (0, 2, 2),
                    (0, 2, 3),
                    (0, -1, -5),
                    (0, 0, 0),
                    (1, 2, 0),
                    (1, 2, 2),
                ],
            )],
        );
        assert_eq!(
            answers,
            [
                (TOPIC.to_string(), 0, 0, 0, 12),
                (TOPIC.to_string(), 0, 0, 0, 12),
                (TOPIC.to_string(), 0, 0, 2, 12),
                (TOPIC.to_string(), 0, 0, -1, -1),
                (TOPIC.to_string(), 0, 0, -5, 0),
                (TOPIC.to_string(), 0, FENCED_LEADER_EPOCH, -1, -1),
                (TOPIC.to_string(), 1, 0, 0, 0),
                (TOPIC.to_string(), 1, 0, 2, 0),
            ]
        );
        for (current, error) in [(0, FENCED_LEADER_EPOCH), (2, 0), (3, UNKNOWN_LEADER_EPOCH)] {
            assert_eq!(
                list_offsets_error(&broker.bootstrap(), current),
                error,
                "ListOffsets at current epoch {current} after the restart"
            );
            assert_eq!(
                fetch_error(&broker.bootstrap(), current),
                error,
                "Fetch at current epoch {current} after the restart"
            );
        }
    })
    .await;
}
