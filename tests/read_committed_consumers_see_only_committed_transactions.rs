//! Goal: the partition side of Kafka transactions behaves as Kafka's over the
//! wire: transactional batches are accepted and hold back the last stable
//! offset (LSO); read_committed Fetch stops at the LSO and lists the aborted
//! transactions, read_uncommitted sees everything and gets a null list;
//! ListOffsets read_committed answers the LSO; WriteTxnMarkers commits and
//! aborts; a read_committed long poll wakes on a marker; DescribeProducers
//! shows the producers; an open transaction survives kill -9 and a later
//! ABORT releases it; and librdkafka consumers with
//! isolation.level=read_committed / read_uncommitted receive exactly the
//! committed / all records.
//!
//! Method: producer ids from InitProducerId, each of a transactional id of
//! its own whose transaction holds the partition (AddPartitionsToTxn, which
//! the broker verifies), hand-built transactional v2 batches sent by
//! Produce v7, markers by WriteTxnMarkers v1 (the API the transaction
//! coordinator uses), all over a raw connection; then rdkafka consumers
//! read the same partition.

mod common;

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, BrokerId,
    DescribeProducersRequest, DescribeProducersResponse, FetchRequest, FetchResponse,
    InitProducerIdRequest, InitProducerIdResponse, ListOffsetsRequest, ListOffsetsResponse,
    ProduceRequest, ProduceResponse, ProducerId, TopicName, TransactionalId,
    WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Record, RecordBatchDecoder, TimestampType};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Message, Offset, TopicPartitionList};

use common::wire::{encode_batch, metadata_on, RawClient};
use common::{Broker, BrokerOptions};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// A v2 batch of `values`; transactional when `producer` is given as
/// (producer id, first sequence), plain otherwise.
fn batch(producer: Option<(i64, i32)>, values: &[&str]) -> Bytes {
    batch_at(producer, values, common::kafka::BASE_TIMESTAMP_MS)
}

/// [`batch`] with every record at `timestamp_ms`.
fn batch_at(producer: Option<(i64, i32)>, values: &[&str], timestamp_ms: i64) -> Bytes {
    let (producer_id, first_sequence) = producer.unwrap_or((-1, -1));
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional: producer.is_some(),
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch: if producer.is_some() { 0 } else { -1 },
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // The encoder splits records whose offset - sequence differ,
            // so a plain batch counts up from base sequence -1.
            sequence: first_sequence + i as i32,
            timestamp: timestamp_ms,
            key: Some(Bytes::from(format!("k-{value}"))),
            value: Some(Bytes::from(value.to_string())),
            headers: Default::default(),
        })
        .collect();
    encode_batch(&records)
}

/// Produces one batch and returns its base offset (asserting success).
fn produce(client: &mut RawClient, topic: &str, batch: Bytes) -> i64 {
    let response = produce_at(client, topic, 0, batch);
    let partition = &response.responses[0].partition_responses[0];
    assert_eq!(partition.error_code, 0, "produce: {response:?}");
    partition.base_offset
}

/// Produces one batch to `topic`-`partition` with Produce v7. A
/// transactional batch goes out as its transactional id's, with the
/// partition added to that id's transaction first: the broker verifies
/// this with the transaction coordinator, as Kafka does (KIP-890).
fn produce_at(
    client: &mut RawClient,
    topic: &str,
    partition: i32,
    batch: Bytes,
) -> ProduceResponse {
    // A v2 batch header holds the producer id at bytes 43..51 and the
    // transactional flag in its attributes (bytes 21..23, bit 4).
    let producer_id = i64::from_be_bytes(batch[43..51].try_into().expect("batch header"));
    let transactional = batch[22] & 0x10 != 0;
    let transactional_id = transactional.then(|| {
        let id = TRANSACTIONAL_IDS
            .with(|ids| ids.borrow().get(&producer_id).cloned())
            .expect("a transactional batch of a producer from init_producer_id");
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(TransactionalId(StrBytes::from_string(id.clone())))
            .with_v3_and_below_producer_id(ProducerId(producer_id))
            .with_v3_and_below_producer_epoch(0)
            .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![partition])]);
        let added: AddPartitionsToTxnResponse =
            client.request(ApiKey::AddPartitionsToTxn, 3, &request);
        let errors: Vec<i16> = added
            .results_by_topic_v3_and_below
            .iter()
            .flat_map(|t| {
                t.results_by_partition
                    .iter()
                    .map(|p| p.partition_error_code)
            })
            .collect();
        assert_eq!(errors, vec![0], "AddPartitionsToTxn: {added:?}");
        TransactionalId(StrBytes::from_string(id))
    });
    let request = ProduceRequest::default()
        .with_transactional_id(transactional_id)
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch))])]);
    client.request(ApiKey::Produce, 7, &request)
}

thread_local! {
    /// Transactional id of each producer id `init_producer_id` handed out.
    static TRANSACTIONAL_IDS: RefCell<HashMap<i64, String>> = RefCell::default();
    /// Transactional ids `init_producer_id` has made.
    static IDS_MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A producer id (epoch 0) of a transactional id of its own, whose
/// transactions outlast the test (`transaction.max.timeout.ms`), so the
/// coordinator never aborts them: the tests write their markers by hand.
fn init_producer_id(client: &mut RawClient) -> i64 {
    let id = format!(
        "txn-tests-{}",
        IDS_MADE.with(|made| made.replace(made.get() + 1))
    );
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_string(id.clone()))))
        .with_transaction_timeout_ms(900_000);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let response: InitProducerIdResponse = client.request(ApiKey::InitProducerId, 1, &request);
        if response.error_code == 0 {
            assert_eq!(response.producer_epoch, 0, "{response:?}");
            let producer_id = response.producer_id.0;
            TRANSACTIONAL_IDS.with(|ids| ids.borrow_mut().insert(producer_id, id));
            return producer_id;
        }
        // The transaction coordinator is created and loaded on first use.
        assert!(
            Instant::now() < deadline && [14, 15, 16].contains(&response.error_code),
            "InitProducerId: {response:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn write_marker(
    client: &mut RawClient,
    producer_id: i64,
    commit: bool,
    partitions: &[(&str, i32)],
) -> Vec<i16> {
    let topics = partitions
        .iter()
        .map(|(topic, partition)| {
            WritableTxnMarkerTopic::default()
                .with_name(name(topic))
                .with_partition_indexes(vec![*partition])
        })
        .collect();
    let request =
        WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(0)
            .with_transaction_result(commit)
            .with_coordinator_epoch(0)
            .with_topics(topics)]);
    let response: WriteTxnMarkersResponse = client.request(ApiKey::WriteTxnMarkers, 1, &request);
    assert_eq!(response.markers.len(), 1);
    assert_eq!(response.markers[0].producer_id.0, producer_id);
    response.markers[0]
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

fn fetch_request(topic: &str, offset: i64, isolation_level: i8, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(isolation_level)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])])
}

/// What one partition of a Fetch answered.
#[derive(Debug)]
struct Fetched {
    high_watermark: i64,
    last_stable_offset: i64,
    aborted: Option<Vec<(i64, i64)>>,
    /// (base offset, is control, values) per batch.
    batches: Vec<(i64, bool, Vec<String>)>,
}

fn decode_fetch(response: &FetchResponse) -> Fetched {
    let partition = &response.responses[0].partitions[0];
    assert_eq!(partition.error_code, 0, "fetch: {response:?}");
    let mut records = partition.records.clone().unwrap_or_default();
    let batches = RecordBatchDecoder::decode_all(&mut records)
        .expect("decode fetched batches")
        .into_iter()
        .map(|set| {
            let first = &set.records[0];
            (
                first.offset,
                first.control,
                set.records
                    .iter()
                    .filter(|r| !r.control)
                    .map(|r| {
                        String::from_utf8(r.value.clone().unwrap_or_default().to_vec()).unwrap()
                    })
                    .collect(),
            )
        })
        .collect();
    Fetched {
        high_watermark: partition.high_watermark,
        last_stable_offset: partition.last_stable_offset,
        aborted: partition.aborted_transactions.as_ref().map(|list| {
            list.iter()
                .map(|a| (a.producer_id.0, a.first_offset))
                .collect()
        }),
        batches,
    }
}

fn fetch(client: &mut RawClient, topic: &str, offset: i64, isolation_level: i8) -> Fetched {
    let response: FetchResponse = client.request(
        ApiKey::Fetch,
        11,
        &fetch_request(topic, offset, isolation_level, 0),
    );
    decode_fetch(&response)
}

fn latest_offset(client: &mut RawClient, topic: &str, isolation_level: i8) -> i64 {
    offset_for(client, topic, isolation_level, -1)
}

/// ListOffsets v7 for `timestamp` (-1 latest, -3 max timestamp, else a time).
fn offset_for(client: &mut RawClient, topic: &str, isolation_level: i8, timestamp: i64) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation_level)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(timestamp)])]);
    let response: ListOffsetsResponse = client.request(ApiKey::ListOffsets, 7, &request);
    let partition = &response.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0, "ListOffsets: {response:?}");
    partition.offset
}

/// (producer id, current transaction start offset) per producer.
fn describe_producers(client: &mut RawClient, topic: &str) -> Vec<(i64, i64)> {
    let request = DescribeProducersRequest::default().with_topics(vec![
        TopicRequest::default()
            .with_name(name(topic))
            .with_partition_indexes(vec![0, 7]),
        TopicRequest::default()
            .with_name(name("no-such-topic"))
            .with_partition_indexes(vec![0]),
    ]);
    let response: DescribeProducersResponse =
        client.request(ApiKey::DescribeProducers, 0, &request);
    let partitions = &response.topics[0].partitions;
    assert_eq!(partitions[0].error_code, 0, "{response:?}");
    assert_eq!(partitions[1].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(
        response.topics[1].partitions[0].error_code,
        UNKNOWN_TOPIC_OR_PARTITION
    );
    partitions[0]
        .active_producers
        .iter()
        .map(|p| (p.producer_id.0, p.current_txn_start_offset))
        .collect()
}

fn wait_for_topic(client: &mut RawClient, topic: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metadata = metadata_on(client, Some(&[topic]), 4);
        if metadata
            .topics
            .iter()
            .any(|t| t.error_code == 0 && t.partitions.len() == 1)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "topic never appeared: {metadata:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start_broker() -> Broker {
    Broker::start(BrokerOptions::default().num_partitions(1))
}

#[test]
fn read_committed_fetch_stops_at_the_lso_and_lists_aborted_transactions() {
    const TOPIC: &str = "txn-wire";
    let mut broker = start_broker();
    let bootstrap = broker.bootstrap();
    let mut client = RawClient::connect(&bootstrap);
    wait_for_topic(&mut client, TOPIC);
    let first = init_producer_id(&mut client);
    let second = init_producer_id(&mut client);

    assert_eq!(produce(&mut client, TOPIC, batch(None, &["p0", "p1"])), 0);
    let later_ms = common::kafka::BASE_TIMESTAMP_MS + 60_000;
    assert_eq!(
        produce(
            &mut client,
            TOPIC,
            batch_at(Some((first, 0)), &["a0", "a1"], later_ms)
        ),
        2
    );
    assert_eq!(
        produce(&mut client, TOPIC, batch(Some((second, 0)), &["c0", "c1"])),
        4
    );

    let committed = fetch(&mut client, TOPIC, 0, 1);
    assert_eq!(committed.high_watermark, 6);
    assert_eq!(committed.last_stable_offset, 2);
    assert_eq!(committed.aborted, Some(vec![]));
    assert_eq!(committed.batches.len(), 1, "{committed:?}");
    let uncommitted = fetch(&mut client, TOPIC, 0, 0);
    assert_eq!(uncommitted.last_stable_offset, 2);
    assert_eq!(uncommitted.aborted, None);
    assert_eq!(uncommitted.batches.len(), 3);
    assert_eq!(latest_offset(&mut client, TOPIC, 1), 2);
    assert_eq!(latest_offset(&mut client, TOPIC, 0), 6);
    // Timestamp lookups find nothing at or past the LSO (Kafka's
    // lastFetchableOffset filter).
    assert_eq!(offset_for(&mut client, TOPIC, 1, later_ms), -1);
    assert_eq!(offset_for(&mut client, TOPIC, 0, later_ms), 2);
    assert_eq!(offset_for(&mut client, TOPIC, 1, -3), -1);
    assert_eq!(offset_for(&mut client, TOPIC, 0, -3), 2);
    assert_eq!(offset_for(&mut client, TOPIC, 1, 0), 0);
    assert_eq!(
        describe_producers(&mut client, TOPIC),
        vec![(first, 2), (second, 4)]
    );

    // Abort the first (one partition known, one not), commit the second.
    assert_eq!(
        write_marker(
            &mut client,
            first,
            false,
            &[(TOPIC, 0), ("no-such-topic", 0)]
        ),
        vec![0, UNKNOWN_TOPIC_OR_PARTITION]
    );
    assert_eq!(latest_offset(&mut client, TOPIC, 1), 4);
    assert_eq!(
        write_marker(&mut client, second, true, &[(TOPIC, 0)]),
        vec![0]
    );
    assert_eq!(latest_offset(&mut client, TOPIC, 1), 8);
    let committed = fetch(&mut client, TOPIC, 0, 1);
    assert_eq!(committed.last_stable_offset, 8);
    assert_eq!(committed.aborted, Some(vec![(first, 2)]));
    let controls: Vec<i64> = committed
        .batches
        .iter()
        .filter(|b| b.1)
        .map(|b| b.0)
        .collect();
    assert_eq!(controls, vec![6, 7], "markers are sent as batches");
    assert_eq!(
        describe_producers(&mut client, TOPIC),
        vec![(first, -1), (second, -1)]
    );

    // A read_committed long poll at the LSO wakes on the marker, not the
    // append.
    assert_eq!(
        produce(&mut client, TOPIC, batch(Some((first, 2)), &["late"])),
        8
    );
    let poll_bootstrap = bootstrap.clone();
    let started = Instant::now();
    let poller = std::thread::spawn(move || {
        let mut poll_client = RawClient::connect(&poll_bootstrap);
        let response: FetchResponse =
            poll_client.request(ApiKey::Fetch, 11, &fetch_request(TOPIC, 8, 1, 8_000));
        (decode_fetch(&response), started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        write_marker(&mut client, first, true, &[(TOPIC, 0)]),
        vec![0]
    );
    let (woken, waited) = poller.join().expect("poller");
    assert!(
        waited < Duration::from_secs(6),
        "long poll waited {waited:?}"
    );
    assert_eq!(woken.batches[0].2, vec!["late".to_string()], "{woken:?}");

    // kill -9 with a transaction open: it still holds the LSO afterwards.
    let open_first = produce(&mut client, TOPIC, batch(Some((second, 2)), &["x0", "x1"]));
    assert_eq!(open_first, 10);
    produce(&mut client, TOPIC, batch(None, &["after"]));
    assert_eq!(latest_offset(&mut client, TOPIC, 1), open_first);
    drop(client);
    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&bootstrap);
    wait_for_topic(&mut client, TOPIC);
    assert_eq!(latest_offset(&mut client, TOPIC, 1), open_first);
    assert_eq!(latest_offset(&mut client, TOPIC, 0), 13);
    assert!(describe_producers(&mut client, TOPIC).contains(&(second, open_first)));
    assert_eq!(
        write_marker(&mut client, second, false, &[(TOPIC, 0)]),
        vec![0]
    );
    assert_eq!(latest_offset(&mut client, TOPIC, 1), 14);
    let committed = fetch(&mut client, TOPIC, 0, 1);
    assert_eq!(
        committed.aborted,
        Some(vec![(first, 2), (second, open_first)])
    );
    let from_late = fetch(&mut client, TOPIC, 9, 1);
    assert_eq!(from_late.aborted, Some(vec![(second, open_first)]));
    // Each entry sits in the `.txnindex` of the segment holding its marker
    // (the markers' wall-clock timestamps roll a segment after the test
    // data's old ones, as Kafka's time-based roll does).
    let dir = broker.data_dir().join(format!("{TOPIC}-0"));
    let mut index_bytes = 0;
    for entry in std::fs::read_dir(&dir)
        .expect("partition directory")
        .flatten()
    {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = file_name.strip_suffix(".txnindex") {
            assert!(
                dir.join(format!("{stem}.log")).exists(),
                "{file_name} has no segment"
            );
            index_bytes += std::fs::read(entry.path()).expect("read txnindex").len();
        }
    }
    assert_eq!(
        index_bytes,
        2 * 34,
        "two aborted transactions in Kafka's format"
    );
}

/// Reads partition 0 of `topic` from the start with `isolation_level` until
/// the end of the partition; the values of the data records.
fn consume_all(bootstrap: &str, topic: &str, isolation_level: &str) -> Vec<String> {
    consume_all_with(bootstrap, topic, isolation_level, &[])
}

/// [`consume_all`] with more consumer settings.
fn consume_all_with(
    bootstrap: &str,
    topic: &str,
    isolation_level: &str,
    settings: &[(&str, &str)],
) -> Vec<String> {
    let mut config = common::kafka::consumer_config(bootstrap);
    config
        .set("isolation.level", isolation_level)
        .set("enable.partition.eof", "true");
    for (key, value) in settings {
        config.set(*key, *value);
    }
    let consumer: BaseConsumer = config.create().expect("create consumer");
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Beginning)
        .expect("assignment");
    consumer.assign(&assignment).expect("assign");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut values = Vec::new();
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            None => continue,
            Some(Ok(message)) => values
                .push(String::from_utf8(message.payload().unwrap_or_default().to_vec()).unwrap()),
            Some(Err(KafkaError::PartitionEOF(_))) => return values,
            Some(Err(error)) => panic!("consume {isolation_level}: {error}"),
        }
    }
    panic!("{isolation_level} consumer never reached the end; got {values:?}");
}

#[test]
fn rdkafka_read_committed_consumer_receives_only_committed_records() {
    const TOPIC: &str = "txn-rdkafka";
    let broker = start_broker();
    let bootstrap = broker.bootstrap();
    let mut client = RawClient::connect(&bootstrap);
    wait_for_topic(&mut client, TOPIC);
    let committing = init_producer_id(&mut client);
    let aborting = init_producer_id(&mut client);
    produce(&mut client, TOPIC, batch(Some((committing, 0)), &["c1"]));
    produce(
        &mut client,
        TOPIC,
        batch(Some((aborting, 0)), &["a1", "a2"]),
    );
    produce(&mut client, TOPIC, batch(None, &["p1"]));
    produce(&mut client, TOPIC, batch(Some((committing, 1)), &["c2"]));
    produce(&mut client, TOPIC, batch(Some((aborting, 2)), &["a3"]));
    assert_eq!(
        write_marker(&mut client, aborting, false, &[(TOPIC, 0)]),
        vec![0]
    );
    assert_eq!(
        write_marker(&mut client, committing, true, &[(TOPIC, 0)]),
        vec![0]
    );
    produce(&mut client, TOPIC, batch(None, &["p2"]));

    assert_eq!(
        consume_all(&bootstrap, TOPIC, "read_committed"),
        vec!["c1", "p1", "c2", "p2"]
    );
    assert_eq!(
        consume_all(&bootstrap, TOPIC, "read_uncommitted"),
        vec!["c1", "a1", "a2", "p1", "c2", "a3", "p2"]
    );
}

/// Goal: a read_committed librdkafka consumer that reads everything from
/// the segment files, in small fetches, gets exactly the committed and
/// plain records, by both cold read paths: splice (the fetch's aborted
/// transactions bounded by the offset index, as Kafka bounds them) and DMA
/// (bounded by the batches read). Method: no in-memory tail; 30 rounds of
/// three interleaved transactions of ~1 KiB records, one of them aborted
/// each round, plain records between; 4 KiB partition fetches, so fetch
/// ends fall everywhere; the metrics show which path served.
#[test]
fn read_committed_consumers_reading_segment_files_skip_every_aborted_transaction() {
    const TOPIC: &str = "txn-files";
    for path in ["splice", "dma"] {
        let metrics_port = common::free_port();
        let broker = Broker::start(
            BrokerOptions::default()
                .num_partitions(1)
                .arg("--partition-cache-bytes", 0)
                .arg("--cold-read-path", path)
                .arg("--metrics-listen", format!("127.0.0.1:{metrics_port}")),
        );
        let bootstrap = broker.bootstrap();
        let mut client = RawClient::connect(&bootstrap);
        wait_for_topic(&mut client, TOPIC);
        let producers = [
            init_producer_id(&mut client),
            init_producer_id(&mut client),
            init_producer_id(&mut client),
        ];
        let mut sequences = [0i32; 3];
        let mut expected = Vec::new();
        let mut everything = 0;
        for round in 0..30 {
            let aborted = round % 3;
            for step in 0..6 {
                let which = step % 3;
                let values: Vec<String> = (0..2)
                    .map(|i| format!("r{round}-p{which}-s{step}-{i}-{}", "x".repeat(1000)))
                    .collect();
                let refs: Vec<&str> = values.iter().map(String::as_str).collect();
                produce(
                    &mut client,
                    TOPIC,
                    batch(Some((producers[which], sequences[which])), &refs),
                );
                sequences[which] += 2;
                everything += 2;
                if which != aborted {
                    expected.extend(values);
                }
                if step == 2 {
                    let plain = format!("r{round}-plain");
                    produce(&mut client, TOPIC, batch(None, &[&plain]));
                    everything += 1;
                    expected.push(plain);
                }
            }
            for (which, &producer_id) in producers.iter().enumerate() {
                assert_eq!(
                    write_marker(&mut client, producer_id, which != aborted, &[(TOPIC, 0)]),
                    vec![0]
                );
            }
        }
        let small_fetches = [
            ("max.partition.fetch.bytes", "4096"),
            ("fetch.max.bytes", "4096"),
            ("message.max.bytes", "4096"),
        ];
        let committed = consume_all_with(&bootstrap, TOPIC, "read_committed", &small_fetches);
        assert!(
            committed == expected,
            "{path}: read_committed got {} records, expected {}",
            committed.len(),
            expected.len()
        );
        assert_eq!(
            consume_all_with(&bootstrap, TOPIC, "read_uncommitted", &small_fetches).len(),
            everything,
            "{path}: read_uncommitted"
        );
        let metrics = common::scrape_metrics(metrics_port);
        let spliced = common::metric_sum(&metrics, "ringbroker_fetch_record_bytes_spliced_total");
        let copied = common::metric_sum(&metrics, "ringbroker_log_cold_read_bytes_copied_total");
        match path {
            "splice" => assert!(spliced > 100_000, "spliced {spliced} bytes"),
            _ => assert!(spliced == 0 && copied > 100_000, "{spliced} / {copied}"),
        }
    }
}

/// ListOffsets latest for every partition of `topic`, by partition.
fn latest_offsets(
    client: &mut RawClient,
    topic: &str,
    partitions: i32,
    isolation_level: i8,
) -> Vec<i64> {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation_level)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(
                (0..partitions)
                    .map(|p| {
                        ListOffsetsPartition::default()
                            .with_partition_index(p)
                            .with_timestamp(-1)
                    })
                    .collect(),
            )]);
    let response: ListOffsetsResponse = client.request(ApiKey::ListOffsets, 5, &request);
    response.topics[0]
        .partitions
        .iter()
        .map(|p| p.offset)
        .collect()
}

/// Goal: one WriteTxnMarkers request whose transactions span partitions on
/// both shards is split per owning shard and answered per partition in
/// request order. Method: two shards, four partitions, a transaction on
/// each partition for two producers, then one request committing the first
/// producer's and aborting the second's (plus an unknown partition).
#[test]
fn write_txn_markers_spanning_two_shards_answers_every_partition() {
    const TOPIC: &str = "txn-shards";
    const PARTITIONS: i32 = 4;
    let broker = Broker::start(
        BrokerOptions::default()
            .cores(2)
            .num_partitions(PARTITIONS as u32),
    );
    let bootstrap = broker.bootstrap();
    let mut client = RawClient::connect(&bootstrap);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metadata = metadata_on(&mut client, Some(&[TOPIC]), 4);
        if metadata
            .topics
            .iter()
            .any(|t| t.error_code == 0 && t.partitions.len() == PARTITIONS as usize)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "topic never appeared: {metadata:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let committing = init_producer_id(&mut client);
    let aborting = init_producer_id(&mut client);
    let produce_to = |client: &mut RawClient, partition: i32, batch: Bytes| {
        let response = produce_at(client, TOPIC, partition, batch);
        assert_eq!(
            response.responses[0].partition_responses[0].error_code, 0,
            "{response:?}"
        );
    };
    for partition in 0..PARTITIONS {
        produce_to(&mut client, partition, batch(Some((committing, 0)), &["c"]));
        produce_to(&mut client, partition, batch(Some((aborting, 0)), &["a"]));
    }
    assert_eq!(
        latest_offsets(&mut client, TOPIC, PARTITIONS, 1),
        vec![0; 4]
    );
    let all: Vec<i32> = (0..PARTITIONS).collect();
    let marker = |producer_id: i64, commit: bool, partitions: Vec<i32>| {
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(0)
            .with_transaction_result(commit)
            .with_coordinator_epoch(0)
            .with_topics(vec![
                WritableTxnMarkerTopic::default()
                    .with_name(name(TOPIC))
                    .with_partition_indexes(partitions),
                WritableTxnMarkerTopic::default()
                    .with_name(name("missing"))
                    .with_partition_indexes(vec![0]),
            ])
    };
    let request = WriteTxnMarkersRequest::default().with_markers(vec![
        marker(committing, true, all.clone()),
        marker(aborting, false, all.iter().rev().copied().collect()),
    ]);
    let response: WriteTxnMarkersResponse = client.request(ApiKey::WriteTxnMarkers, 1, &request);
    assert_eq!(response.markers.len(), 2);
    for (result, expected_order) in response
        .markers
        .iter()
        .zip([all.clone(), all.iter().rev().copied().collect()])
    {
        let partitions: Vec<(i32, i16)> = result.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.error_code))
            .collect();
        assert_eq!(
            partitions,
            expected_order.iter().map(|p| (*p, 0)).collect::<Vec<_>>()
        );
        assert_eq!(
            result.topics[1].partitions[0].error_code,
            UNKNOWN_TOPIC_OR_PARTITION
        );
    }
    // Two data batches and two markers per partition, all stable now.
    assert_eq!(
        latest_offsets(&mut client, TOPIC, PARTITIONS, 1),
        vec![4; 4]
    );
    for partition in 0..PARTITIONS {
        let response: FetchResponse = client.request(
            ApiKey::Fetch,
            11,
            &fetch_request(TOPIC, 0, 1, 0).with_topics(vec![FetchTopic::default()
                .with_topic(name(TOPIC))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])]),
        );
        let fetched = decode_fetch(&response);
        assert_eq!(
            fetched.aborted,
            Some(vec![(aborting, 1)]),
            "partition {partition}"
        );
    }
}
