//! Goal: Kafka's producer-state configs act here as in Kafka, from the
//! command line and at runtime (`kafka-configs --entity-type brokers`):
//! `producer.id.expiration.ms` makes a partition forget an idle idempotent
//! producer (checked every `producer.id.expiration.check.interval.ms`),
//! and the producer writes on afterwards with nothing lost or written
//! twice; `transaction.partition.verification.enable=false` lets a
//! transactional write before Produce v12 through without the coordinator
//! holding its partition, as Kafka does. Bad values get Kafka 4.1.1's
//! messages, and DescribeConfigs shows each value with its source.
//!
//! Method: an rdkafka idempotent producer and consumer; DescribeProducers,
//! IncrementalAlterConfigs, InitProducerId and Produce v7 over a raw
//! connection; rdkafka's admin client to describe.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, DescribeProducersRequest, DescribeProducersResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProduceRequest, ProduceResponse, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Record, TimestampType};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;

use common::kafka::{create_topic, described_broker_config, producer_config, read_partitions};
use common::wire::{encode_batch, incremental_alter_configs, RawClient};
use common::{wait_until, with_timeout, Broker, BrokerOptions};

const BROKER: i8 = 4;

/// (producer id, last sequence) of each producer DescribeProducers shows
/// on partition 0 of `topic`.
fn producers(client: &mut RawClient, topic: &str) -> Vec<(i64, i32)> {
    let request = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(TopicName(StrBytes::from_string(topic.into())))
        .with_partition_indexes(vec![0])]);
    let response: DescribeProducersResponse =
        client.request(ApiKey::DescribeProducers, 0, &request);
    let partition = &response.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0, "{response:?}");
    partition
        .active_producers
        .iter()
        .map(|p| (p.producer_id.0, p.last_sequence))
        .collect()
}

async fn send(producer: &FutureProducer, topic: &str, value: &str) {
    producer
        .send(
            FutureRecord::to(topic)
                .partition(0)
                .key(value)
                .payload(value),
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|(error, _)| panic!("produce {value}: {error}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_producer_ids_expire_and_their_producers_write_on_like_kafka() {
    let mut broker = Broker::start(
        BrokerOptions::default().arg("--producer-id-expiration-check-interval-ms", 200),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(120), async {
        let topic = "idle-producers";
        create_topic(&bootstrap, topic, 1).await;
        assert_eq!(
            described_broker_config(&bootstrap, 0, "producer.id.expiration.ms").await,
            ("86400000".into(), "Default".into())
        );
        // Kafka's internal check interval: described only when set, and
        // static.
        assert_eq!(
            described_broker_config(&bootstrap, 0, "producer.id.expiration.check.interval.ms").await,
            ("200".into(), "StaticBroker".into())
        );
        let mut client = RawClient::connect(&bootstrap);
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "0",
            &[("producer.id.expiration.check.interval.ms", Some("100"))],
        );
        assert_eq!(
            answer,
            (
                42,
                Some("Cannot update these configs dynamically: Set(producer.id.expiration.check.interval.ms)".into())
            )
        );
        let producer: FutureProducer = producer_config(&bootstrap)
            .set("enable.idempotence", "true")
            .create()
            .expect("producer");
        for value in ["a", "b", "c"] {
            send(&producer, topic, value).await;
        }
        let before = producers(&mut client, topic);
        assert_eq!(before.len(), 1, "{before:?}");
        assert_eq!(before[0].1, 2, "three records, sequences 0..=2: {before:?}");

        // Kafka's bounds, in its words.
        for (value, why) in [
            ("0", "Value must be at least 1"),
            ("-1", "Value must be at least 1"),
            ("abc", "Not a number of type INT"),
            ("2147483648", "Not a number of type INT"),
        ] {
            let answer = incremental_alter_configs(
                &mut client,
                BROKER,
                "",
                &[("producer.id.expiration.ms", Some(value))],
            );
            assert_eq!(
                answer,
                (
                    42,
                    Some(format!(
                        "Invalid value {value} for configuration producer.id.expiration.ms: {why}"
                    ))
                )
            );
        }
        // Past the new expiration, the idle producer is forgotten.
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "",
            &[("producer.id.expiration.ms", Some("1500"))],
        );
        assert_eq!(answer, (0, None));
        assert_eq!(
            described_broker_config(&bootstrap, 0, "producer.id.expiration.ms").await,
            ("1500".into(), "DynamicDefaultBroker".into())
        );
        wait_until(Duration::from_secs(30), "the producer to expire", || {
            producers(&mut client, topic).is_empty()
        });

        // Set back for this broker alone, a day again (over the cluster
        // default's 1.5 s; kept over restarts).
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "0",
            &[("producer.id.expiration.ms", Some("86400000"))],
        );
        assert_eq!(answer, (0, None));

        // It writes on at its next sequence, taken as Kafka takes it from a
        // producer it no longer knows; nothing is lost or written twice.
        send(&producer, topic, "d").await;
        let after = producers(&mut client, topic);
        assert_eq!(after, vec![(before[0].0, 3)]);
        drop(producer);
        broker.restart();
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(
            described_broker_config(&bootstrap, 0, "producer.id.expiration.ms").await,
            ("86400000".into(), "DynamicBroker".into())
        );
        std::thread::sleep(Duration::from_secs(3));
        assert_eq!(producers(&mut client, topic), after);
        let read = read_partitions(
            &bootstrap,
            topic,
            &BTreeMap::from([(0, 4)]),
            Duration::from_secs(30),
        );
        let values: Vec<String> = read[&0]
            .iter()
            .map(|m| String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
            .collect();
        assert_eq!(values, ["a", "b", "c", "d"]);
    })
    .await;
    broker.assert_running();
}

/// A producer id of transactional id `id`, epoch 0.
fn init_producer_id(client: &mut RawClient, id: &str) -> i64 {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_string(id.into()))))
        .with_transaction_timeout_ms(60_000);
    let mut answer = None;
    wait_until(Duration::from_secs(30), "InitProducerId", || {
        let response: InitProducerIdResponse = client.request(ApiKey::InitProducerId, 1, &request);
        // The coordinator loads on first use.
        assert!(
            [0, 14, 15, 16].contains(&response.error_code),
            "{response:?}"
        );
        answer = (response.error_code == 0).then_some(response.producer_id.0);
        answer.is_some()
    });
    answer.expect("a producer id")
}

/// Produce v7 of one transactional record of `producer_id` at `sequence`
/// to partition 0 of `topic`, no AddPartitionsToTxn before it: the
/// partition's error code.
fn produce_unadded(
    client: &mut RawClient,
    topic: &str,
    id: &str,
    producer_id: i64,
    sequence: i32,
) -> i16 {
    let record = Record {
        transactional: true,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id,
        producer_epoch: 0,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence,
        timestamp: common::kafka::BASE_TIMESTAMP_MS,
        key: None,
        value: Some(Bytes::from_static(b"unadded")),
        headers: Default::default(),
    };
    let request = ProduceRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_string(id.into()))))
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.into())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(encode_batch(&[record])))])]);
    let response: ProduceResponse = client.request(ApiKey::Produce, 7, &request);
    response.responses[0].partition_responses[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_writes_go_unverified_only_while_verification_is_off_like_kafka() {
    let mut broker = Broker::start(
        BrokerOptions::default().arg("--transaction-partition-verification-enable", "FALSE"),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(120), async {
        let topic = "unverified";
        create_topic(&bootstrap, topic, 1).await;
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(
            described_broker_config(&bootstrap, 0, "transaction.partition.verification.enable").await,
            ("false".into(), "StaticBroker".into())
        );
        // Off from the command line: the write is taken, though its
        // partition was never added to the transaction.
        let first = init_producer_id(&mut client, "unverified-1");
        assert_eq!(produce_unadded(&mut client, topic, "unverified-1", first, 0), 0);

        // On again at runtime: refused as Kafka refuses it.
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "",
            &[("transaction.partition.verification.enable", Some("abc"))],
        );
        assert_eq!(
            answer,
            (42, Some("Invalid value abc for configuration transaction.partition.verification.enable: Expected value to be either true or false".into()))
        );
        let answer = incremental_alter_configs(
            &mut client,
            BROKER,
            "",
            &[("transaction.partition.verification.enable", Some("true"))],
        );
        assert_eq!(answer, (0, None));
        assert_eq!(
            described_broker_config(&bootstrap, 0, "transaction.partition.verification.enable").await,
            ("true".into(), "DynamicDefaultBroker".into())
        );
        let second = init_producer_id(&mut client, "unverified-2");
        assert_eq!(
            produce_unadded(&mut client, topic, "unverified-2", second, 0),
            48,
            "INVALID_TXN_STATE"
        );
    })
    .await;
    broker.assert_running();
}
