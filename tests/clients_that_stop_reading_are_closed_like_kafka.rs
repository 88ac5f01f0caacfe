//! Goal: a client that stops reading its responses cannot hold the broker.
//! Kafka closes a connection that has seen no activity for
//! `connections.max.idle.ms`, and one whose responses the client does not
//! take has none (checked on Kafka 4.1.1: a client pipelining ApiVersions
//! requests and reading nothing was reset after the idle time, and kept
//! when it came back to read before it). A client that reads slowly keeps
//! its connection, and shutdown does not wait for a client that reads
//! nothing.
//!
//! Method: raw clients pipeline 40,000 ApiVersions requests (about 12 MB of
//! answers, more than the sockets hold) from a thread of their own, so the
//! broker's writes to them wait for room; the test reads slowly (80 KB/s),
//! or not at all, and then reads to the end. A consumer that stops reading
//! Fetch answers spliced from the segment files is closed alike, with
//! either way of splicing to the socket.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsResponse, FetchRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use common::wire::{
    api_versions_v0_frames, assert_broker_healthy, correlation_ids, create_topic_request,
    encode_batch, encode_request, plain_record, produce_request, read_until_closed, RawClient,
};
use common::{wait_until, Broker, BrokerOptions};

const IDLE: Duration = Duration::from_secs(3);
const REQUESTS: i32 = 40_000;
const CLOSING_LINE: &str = "the client took no response bytes for too long";

/// A connection whose 40,000 requests (answered by more than the socket
/// buffers hold) are written by a thread of its own (which ends when they are
/// all sent or the broker closes the connection).
fn pipelining_client(broker: &Broker) -> TcpStream {
    let stream = TcpStream::connect(broker.bootstrap()).expect("connect");
    let mut writer = stream.try_clone().expect("clone the stream");
    std::thread::spawn(move || {
        let _ = writer.write_all(&api_versions_v0_frames(REQUESTS));
    });
    stream
}

#[test]
fn a_client_that_stops_reading_is_closed_after_the_idle_time_and_one_that_reads_slowly_is_not() {
    let mut broker =
        Broker::start(BrokerOptions::default().arg("--connections-max-idle-ms", IDLE.as_millis()));
    let connected = Instant::now();
    let mut stalled = pipelining_client(&broker);
    let mut slow = pipelining_client(&broker);

    // The slow reader takes a few KiB every 200 ms for twice the idle time:
    // its connection stays, and every request is answered in order.
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 16 * 1024];
    slow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while connected.elapsed() < IDLE * 2 {
        let read = slow
            .read(&mut buffer)
            .expect("the slow reader's connection");
        assert!(read > 0, "the broker closed a client that reads");
        received.extend_from_slice(&buffer[..read]);
        if connected.elapsed() < IDLE - Duration::from_millis(500) {
            assert!(
                !broker.log_contents().contains(CLOSING_LINE),
                "a connection was closed before the idle time"
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // The broker serves others meanwhile.
    assert_broker_healthy(&mut broker, "two clients with full sockets");
    while correlation_ids(&received).len() < REQUESTS as usize {
        let read = slow
            .read(&mut buffer)
            .expect("the slow reader's connection");
        assert!(read > 0, "the broker closed a client that reads");
        received.extend_from_slice(&buffer[..read]);
    }
    assert_eq!(
        correlation_ids(&received),
        (0..REQUESTS).collect::<Vec<_>>()
    );

    // The client that read nothing was closed once its writes had waited
    // the idle time, not before: what it reads now ends in a close, short
    // of the answers it asked for.
    wait_until(IDLE * 3, "the stalled connection is closed", || {
        broker.log_contents().contains(CLOSING_LINE)
    });
    let answered = correlation_ids(&read_until_closed(&mut stalled, Duration::from_secs(10)));
    assert!(
        answered.len() < REQUESTS as usize,
        "all {} requests answered",
        answered.len()
    );
    assert_eq!(answered, (0..answered.len() as i32).collect::<Vec<_>>());
    assert_eq!(broker.log_contents().matches(CLOSING_LINE).count(), 1);
    broker.terminate();
}

#[test]
fn shutdown_does_not_wait_for_a_client_that_reads_nothing() {
    // Kafka's default idle time (10 minutes) and shutdown drain (10 s).
    let mut broker = Broker::start(BrokerOptions::default());
    let mut stalled = pipelining_client(&broker);
    std::thread::sleep(Duration::from_secs(1));
    assert_broker_healthy(&mut broker, "a client with a full socket");
    let asked = Instant::now();
    broker.terminate();
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "shutdown waited {took:?} for a client that reads nothing"
    );
    read_until_closed(&mut stalled, Duration::from_secs(10));
}

#[test]
fn a_consumer_that_stops_reading_spliced_fetches_is_closed_after_the_idle_time() {
    for mode in ["syscall", "io-uring"] {
        let metrics_port = common::free_port();
        let mut broker = Broker::start(
            BrokerOptions::default()
                .arg("--connections-max-idle-ms", IDLE.as_millis())
                .arg("--splice-to-socket", mode)
                .arg("--metrics-listen", format!("127.0.0.1:{metrics_port}")),
        );
        let topic = "stalled-fetch";
        let mut client = RawClient::connect(&broker.bootstrap());
        let created: CreateTopicsResponse =
            client.request(ApiKey::CreateTopics, 7, &create_topic_request(topic, 1));
        assert_eq!(created.topics[0].error_code, 0);
        // 8 MB in batches of 800 KB.
        for batch in 0..10i64 {
            let records: Vec<_> = (0..100)
                .map(|i| plain_record(batch * 100 + i, None, Bytes::from(vec![b'x'; 8000])))
                .collect();
            let produce = produce_request(topic, encode_batch(&records));
            let produced: ProduceResponse = client.request(ApiKey::Produce, 9, &produce);
            assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
        }
        // After a restart the records are read from the segment files.
        broker.restart();
        let mut partition = FetchPartition::default();
        partition.partition = 0;
        partition.partition_max_bytes = 8 << 20;
        let mut fetch_topic = FetchTopic::default();
        fetch_topic.topic = TopicName(StrBytes::from_static_str(topic));
        fetch_topic.partitions = vec![partition];
        let mut fetch = FetchRequest::default();
        fetch.replica_id = BrokerId(-1);
        fetch.max_bytes = 8 << 20;
        fetch.topics = vec![fetch_topic];
        // 20 fetches of the whole 8 MB, none of them read.
        let requests: Vec<u8> = (0..20)
            .flat_map(|id| encode_request(ApiKey::Fetch, 12, id, &fetch))
            .collect();
        let mut stalled = TcpStream::connect(broker.bootstrap()).expect("connect");
        let mut writer = stalled.try_clone().unwrap();
        std::thread::spawn(move || {
            let _ = writer.write_all(&requests);
        });
        let connected = Instant::now();
        wait_until(IDLE * 3, "the stalled consumer is closed", || {
            broker.log_contents().matches(CLOSING_LINE).count() == 1
        });
        assert!(
            connected.elapsed() >= IDLE,
            "{mode}: closed before the idle time"
        );
        read_until_closed(&mut stalled, Duration::from_secs(10));
        let metrics = common::scrape_metrics(metrics_port);
        let spliced = common::metric_sum(&metrics, "ringbroker_fetch_record_bytes_spliced_total");
        assert!(spliced > 1_000_000, "{mode}: spliced {spliced} bytes");
        assert_broker_healthy(&mut broker, "a consumer with a full socket");
        broker.terminate();
    }
}
