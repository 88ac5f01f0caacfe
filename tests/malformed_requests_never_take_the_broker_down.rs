//! Goal: no byte sequence a client can send stops the broker or its other
//! clients. Where Kafka defines an error answer the broker gives it
//! (ApiVersions with an unknown version, a batch with a bad CRC); otherwise
//! it closes that one connection without answering.
//!
//! Method: each test starts its own broker, sends hand-built bytes over a raw
//! `TcpStream`, checks what comes back (an answer, a close, or silence), and
//! then checks that the process still runs and that a fresh client still
//! gets ApiVersions and Metadata answered.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;

use common::wire::{
    assert_broker_healthy, encode_batch_compressed, encode_request, frame, metadata_on,
    plain_record, request_header_v1, Outcome, RawClient,
};
use common::{open_files_limit, wait_until, Broker, BrokerOptions};

/// How long a connection gets to be closed by the broker.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
const CORRUPT_MESSAGE: i16 = 2;
const UNSUPPORTED_VERSION: i16 = 35;

fn assert_closed_without_answer(outcome: Outcome, what: &str) {
    assert_eq!(
        outcome,
        Outcome::Closed {
            bytes_before_close: Vec::new()
        },
        "{what}: the broker should close the connection without answering"
    );
}

/// Peak resident memory of the broker, from /proc.
fn peak_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .expect("VmHWM line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|value| value.parse().ok())
        .expect("VmHWM value");
    kib * 1024
}

#[test]
fn a_frame_size_over_the_limit_closes_the_connection_unanswered() {
    let mut broker = Broker::start_default();
    let sizes: [(i32, &str); 3] = [
        (100 * 1024 * 1024 + 1, "size 100 MiB + 1"),
        (i32::MAX, "size i32::MAX"),
        (-1, "negative size"),
    ];
    for (size, what) in sizes {
        let mut client = RawClient::connect(&broker.bootstrap());
        let mut bytes = size.to_be_bytes().to_vec();
        bytes.extend_from_slice(&request_header_v1(ApiKey::Metadata as i16, 1, 1));
        client
            .write_raw(&bytes)
            .expect("send oversized frame start");
        assert_closed_without_answer(client.outcome_within(CLOSE_WAIT), what);
        assert_broker_healthy(&mut broker, what);
    }
}

#[test]
fn a_garbage_body_closes_the_connection_unanswered() {
    let mut broker = Broker::start_default();
    let mut noise = Vec::new();
    let mut state: u32 = 0x1234_5678;
    for _ in 0..64 {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        noise.push((state >> 16) as u8);
    }
    // Produce v3 whose transactional id claims 32767 bytes that are not there.
    let mut produce = request_header_v1(ApiKey::Produce as i16, 3, 7);
    produce.extend_from_slice(&[0x7f, 0xff, b'x', b'y']);
    // Metadata v1 with 3 topics, the first a string longer than the frame.
    let mut metadata = request_header_v1(ApiKey::Metadata as i16, 1, 8);
    metadata.extend_from_slice(&3i32.to_be_bytes());
    metadata.extend_from_slice(&30_000i16.to_be_bytes());
    metadata.extend_from_slice(b"ab");
    // A header cut short inside the client id.
    let mut short_header = Vec::new();
    short_header.extend_from_slice(&(ApiKey::ApiVersions as i16).to_be_bytes());
    short_header.extend_from_slice(&0i16.to_be_bytes());
    short_header.extend_from_slice(&9i32.to_be_bytes());
    short_header.extend_from_slice(&50i16.to_be_bytes());
    short_header.extend_from_slice(b"abc");
    // Produce is read framing first (records straight into their own
    // buffers): lengths that point past the frame must close it, not wait
    // for bytes of the next frame or allocate what they claim.
    let produce_prefix = |version: i16, flexible: bool, topics: &[u8]| {
        let mut body = request_header_v1(ApiKey::Produce as i16, version, 10);
        if flexible {
            body.push(0); // header tagged fields
            body.push(0); // null transactional id
        } else {
            body.extend_from_slice(&(-1i16).to_be_bytes());
        }
        body.extend_from_slice(&1i16.to_be_bytes()); // acks
        body.extend_from_slice(&1_000i32.to_be_bytes()); // timeout
        body.extend_from_slice(topics);
        body
    };
    let mut records_past_frame = produce_prefix(8, false, &1i32.to_be_bytes());
    records_past_frame.extend_from_slice(&1i16.to_be_bytes());
    records_past_frame.push(b't');
    records_past_frame.extend_from_slice(&1i32.to_be_bytes()); // partitions
    records_past_frame.extend_from_slice(&0i32.to_be_bytes()); // index
    records_past_frame.extend_from_slice(&1_000_000i32.to_be_bytes());
    records_past_frame.extend_from_slice(b"abc");
    let mut compact_records_past_frame = produce_prefix(9, true, &[2]);
    compact_records_past_frame.extend_from_slice(&[2, b't', 2]); // name, partitions
    compact_records_past_frame.extend_from_slice(&0i32.to_be_bytes()); // index
    compact_records_past_frame.extend_from_slice(&[0xc1, 0x84, 0x3d]); // 1_000_001
    compact_records_past_frame.extend_from_slice(b"abc");
    let many_topics = produce_prefix(8, false, &i32::MAX.to_be_bytes());
    let cases: [(&[u8], &str); 7] = [
        (&noise, "64 random bytes"),
        (&produce, "Produce v3 with a truncated transactional id"),
        (
            &records_past_frame,
            "Produce v8 whose records claim 1 MB in a frame of a few bytes",
        ),
        (
            &compact_records_past_frame,
            "Produce v9 whose compact records length points past the frame",
        ),
        (&many_topics, "Produce v8 claiming 2 billion topics"),
        (
            &metadata,
            "Metadata v1 with a topic name longer than the frame",
        ),
        (&short_header, "a request header cut inside its client id"),
    ];
    for (payload, what) in cases {
        let mut client = RawClient::connect(&broker.bootstrap());
        client
            .write_raw(&frame(payload))
            .expect("send garbage frame");
        assert_closed_without_answer(client.outcome_within(CLOSE_WAIT), what);
        assert_broker_healthy(&mut broker, what);
    }
}

#[test]
fn a_metadata_request_claiming_two_billion_topics_is_refused_without_allocating() {
    let mut broker = Broker::start_default();
    let rss_before = peak_rss_bytes(broker.pid());
    for trailing in [&[][..], &[0x00, 0x02, b'a', b'b'][..]] {
        let mut payload = request_header_v1(ApiKey::Metadata as i16, 0, 11);
        payload.extend_from_slice(&0x7fff_ffffi32.to_be_bytes());
        payload.extend_from_slice(trailing);
        let what = format!(
            "Metadata v0 claiming 2^31-1 topics followed by {} bytes",
            trailing.len()
        );
        let mut client = RawClient::connect(&broker.bootstrap());
        client.write_raw(&frame(&payload)).expect("send bomb");
        assert_closed_without_answer(client.outcome_within(CLOSE_WAIT), &what);
        assert_broker_healthy(&mut broker, &what);
    }
    let rss_after = peak_rss_bytes(broker.pid());
    assert!(
        rss_after < rss_before + 256 * 1024 * 1024,
        "peak resident memory grew from {rss_before} to {rss_after} bytes"
    );
}

#[test]
fn an_unknown_api_key_closes_the_connection_unanswered() {
    let mut broker = Broker::start_default();
    for api_key in [9_999i16, -1, 1_000] {
        let mut payload = request_header_v1(api_key, 0, 21);
        payload.extend_from_slice(&[0, 0, 0, 0]);
        let what = format!("api key {api_key}");
        let mut client = RawClient::connect(&broker.bootstrap());
        client
            .write_raw(&frame(&payload))
            .expect("send unknown key");
        assert_closed_without_answer(client.outcome_within(CLOSE_WAIT), &what);
        assert_broker_healthy(&mut broker, &what);
    }
}

/// ApiVersions v99 as a client newer than the broker would send it: request
/// header v2 (flexible) and a v3-shaped body.
fn api_versions_v99_frame(correlation_id: i32) -> Vec<u8> {
    let mut payload = request_header_v1(ApiKey::ApiVersions as i16, 99, correlation_id);
    payload.push(0); // header tagged fields
    for text in ["ringbroker-tests", "0.1"] {
        payload.push(text.len() as u8 + 1); // compact string length
        payload.extend_from_slice(text.as_bytes());
    }
    payload.push(0); // body tagged fields
    frame(&payload)
}

#[test]
fn api_versions_with_an_unsupported_version_gets_a_v0_unsupported_version_answer() {
    let mut broker = Broker::start_default();
    let mut client = RawClient::connect(&broker.bootstrap());
    client
        .write_raw(&api_versions_v99_frame(4242))
        .expect("send ApiVersions v99");
    let response = client.read_frame().expect("an answer to ApiVersions v99");

    // KIP-511: response header v0 (correlation id only, no tagged fields),
    // body v0: error code, [api key, min, max], nothing else.
    assert!(response.len() >= 10, "response too short: {response:?}");
    let correlation_id = i32::from_be_bytes(response[0..4].try_into().expect("4 bytes"));
    assert_eq!(correlation_id, 4242, "correlation id");
    let error_code = i16::from_be_bytes(response[4..6].try_into().expect("2 bytes"));
    assert_eq!(error_code, UNSUPPORTED_VERSION, "error code");
    let count = i32::from_be_bytes(response[6..10].try_into().expect("4 bytes"));
    assert!(count > 0, "the api key list must not be empty, got {count}");
    assert_eq!(
        response.len(),
        10 + 6 * count as usize,
        "a v0 body holds exactly {count} entries of 6 bytes and nothing after them"
    );
    let entries: Vec<(i16, i16, i16)> = response[10..]
        .chunks(6)
        .map(|entry| {
            (
                i16::from_be_bytes([entry[0], entry[1]]),
                i16::from_be_bytes([entry[2], entry[3]]),
                i16::from_be_bytes([entry[4], entry[5]]),
            )
        })
        .collect();
    let api_versions_entry = entries
        .iter()
        .find(|(key, _, _)| *key == ApiKey::ApiVersions as i16)
        .unwrap_or_else(|| panic!("ApiVersions itself is not listed: {entries:?}"));
    assert!(
        api_versions_entry.1 == 0 && api_versions_entry.2 >= 3,
        "ApiVersions range {api_versions_entry:?} should be 0..=3 or wider"
    );

    // The client retries on the same connection with a version the broker
    // listed, as librdkafka does.
    let retry: ApiVersionsResponse = client.request(
        ApiKey::ApiVersions,
        3,
        &ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("ringbroker-tests"))
            .with_client_software_version(StrBytes::from_static_str("0.1")),
    );
    assert_eq!(retry.error_code, 0, "ApiVersions v3 retry error code");
    assert!(!retry.api_keys.is_empty(), "ApiVersions v3 lists no api");
    assert_broker_healthy(&mut broker, "ApiVersions v99");
}

fn one_record_batch(compression: Compression) -> Bytes {
    let record = plain_record(
        0,
        Some(Bytes::from_static(b"key")),
        Bytes::from(vec![b'v'; 200]),
    );
    encode_batch_compressed(std::slice::from_ref(&record), compression)
}

fn produce_v3(client: &mut RawClient, topic: &str, batch: Bytes) -> (i16, i64) {
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])]);
    let response: ProduceResponse = client.request(ApiKey::Produce, 3, &request);
    assert_eq!(response.responses.len(), 1, "one topic in {response:?}");
    let partitions = &response.responses[0].partition_responses;
    assert_eq!(partitions.len(), 1, "one partition in {response:?}");
    (partitions[0].error_code, partitions[0].base_offset)
}

#[test]
fn a_produced_batch_with_a_bad_crc_is_refused_as_corrupt_message() {
    let mut broker = Broker::start(BrokerOptions::default().num_partitions(1));
    let topic = "bad-crc";
    let mut client = RawClient::connect(&broker.bootstrap());
    // Metadata with auto-creation until the partition has a leader.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metadata = metadata_on(&mut client, Some(&[topic]), 4);
        let ready = metadata.topics.iter().any(|t| {
            t.error_code == 0
                && t.partitions.len() == 1
                && t.partitions
                    .iter()
                    .all(|p| p.error_code == 0 && p.leader_id.0 >= 0)
        });
        if ready {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "topic {topic} never got a leader: {metadata:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    for compression in [Compression::None, Compression::Gzip] {
        let mut batch = one_record_batch(compression).to_vec();
        // Flip one bit in the record bytes, which the CRC covers.
        let last = batch.len() - 1;
        batch[last] ^= 0x01;
        let (error_code, _) = produce_v3(&mut client, topic, Bytes::from(batch));
        assert_eq!(
            error_code, CORRUPT_MESSAGE,
            "{compression:?} batch with a bad CRC: partition error code"
        );
    }
    // The connection stays usable and nothing of the refused batches was
    // appended: the first good batch gets offset 0.
    let (error_code, base_offset) =
        produce_v3(&mut client, topic, one_record_batch(Compression::None));
    assert_eq!(error_code, 0, "good batch after the bad ones: error code");
    assert_eq!(base_offset, 0, "good batch after the bad ones: base offset");
    assert_broker_healthy(&mut broker, "Produce with a bad CRC");
}

#[test]
fn slow_clients_with_partial_frames_do_not_stall_other_clients() {
    let mut broker = Broker::start_default();
    let mut stalled = Vec::new();
    for index in 0..20 {
        let mut client = RawClient::connect(&broker.bootstrap());
        let bytes = if index % 2 == 0 {
            // Half a size prefix.
            vec![0, 0]
        } else {
            // A size of 200, then 30 bytes of the request.
            let mut bytes = 200i32.to_be_bytes().to_vec();
            bytes.extend_from_slice(&request_header_v1(ApiKey::Metadata as i16, 1, 1));
            bytes.resize(4 + 30, 0);
            bytes
        };
        client.write_raw(&bytes).expect("send partial frame");
        stalled.push(client);
    }
    assert_broker_healthy(&mut broker, "20 stalled partial frames");

    // A request trickled one byte at a time is still answered once whole.
    let mut trickling = RawClient::connect(&broker.bootstrap());
    let request = encode_request(ApiKey::ApiVersions, 0, 77, &ApiVersionsRequest::default());
    for byte in &request {
        trickling
            .write_raw(std::slice::from_ref(byte))
            .expect("trickle a byte");
        std::thread::sleep(Duration::from_millis(40));
    }
    let response = trickling
        .read_frame()
        .expect("answer to a trickled request");
    assert_eq!(
        i32::from_be_bytes(response[0..4].try_into().expect("4 bytes")),
        77,
        "trickled request: correlation id"
    );
    assert_eq!(
        i16::from_be_bytes(response[4..6].try_into().expect("2 bytes")),
        0,
        "trickled request: error code"
    );

    drop(stalled);
    assert_broker_healthy(&mut broker, "stalled clients hung up");
}

/// CPU time (user + system) the broker has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    // Fields after the command name, which is in parentheses.
    let after = &stat[stat.rfind(')').expect("stat has a command") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line (11 and 12 here).
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

/// Goal: a broker out of file descriptors keeps serving the connections it
/// has, does not spin on the accepts it cannot take (nor fill its log with
/// them), and takes new connections again once descriptors are free (Kafka's acceptor, too, logs
/// the failure and carries on).
#[test]
fn connections_past_the_open_files_limit_wait_while_the_others_are_served() {
    let mut broker = Broker::start_default();
    let pid = broker.pid();
    let mut early = RawClient::connect(&broker.bootstrap());
    let asked = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("ringbroker-tests"))
        .with_client_software_version(StrBytes::from_static_str("0.1"));
    let answer: ApiVersionsResponse = early.request(ApiKey::ApiVersions, 3, &asked);
    assert_eq!(answer.error_code, 0);

    // Room for a few more descriptors, then many more connections.
    let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("list the broker's descriptors")
        .count() as u64;
    let (soft, hard) = open_files_limit(pid, None);
    open_files_limit(pid, Some((open + 8, hard)));
    // The kernel completes these connections; the broker can take only a
    // few of them.
    let mut crowd: Vec<RawClient> = (0..64)
        .map(|_| RawClient::connect(&broker.bootstrap()))
        .collect();
    wait_until(
        Duration::from_secs(10),
        "the broker to log a failed accept",
        || broker.log_contents().contains("accept failed"),
    );

    // The connection it had is still served, while accepts keep failing.
    let ticks_before = cpu_ticks(pid);
    let started = Instant::now();
    for _ in 0..10 {
        let answer: ApiVersionsResponse = early.request(ApiKey::ApiVersions, 3, &asked);
        assert_eq!(answer.error_code, 0, "ApiVersions while out of descriptors");
        std::thread::sleep(Duration::from_millis(100));
    }
    let busy = (cpu_ticks(pid) - ticks_before) as f64
        / (started.elapsed().as_secs_f64() * clock_ticks_per_second());
    assert!(
        busy < 0.5,
        "the broker used {:.0} % of a CPU while out of descriptors: spinning on accept?",
        busy * 100.0
    );
    broker.assert_running();
    // A second of failed accepts (about a hundred) logged once, not per try.
    let failures_logged = broker.log_contents().matches("accept failed").count();
    assert!(
        failures_logged <= 3,
        "{failures_logged} lines for one run of failed accepts"
    );

    // Descriptors free again: the connections that waited are taken and
    // served (the last one waited longest), and so is a new client.
    open_files_limit(pid, Some((soft, hard)));
    let last = crowd.last_mut().expect("64 connections");
    let answer: ApiVersionsResponse = last.request(ApiKey::ApiVersions, 3, &asked);
    assert_eq!(
        answer.error_code, 0,
        "ApiVersions on a connection that waited"
    );
    wait_until(
        Duration::from_secs(10),
        "the broker to log that it accepts again",
        || {
            broker
                .log_contents()
                .contains("accepting connections again")
        },
    );
    drop(crowd);
    assert_broker_healthy(&mut broker, "running out of descriptors for connections");
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn unsigned_varint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn compact_string(s: &str, out: &mut Vec<u8>) {
    unsigned_varint(s.len() + 1, out);
    out.extend_from_slice(s.as_bytes());
}

/// Kafka limits every string field to 0x7fff bytes, in the compact form of
/// flexible versions too ("string field groupId had invalid length 40000",
/// and the connection is closed). Such a group id once reached the offsets
/// topic's record keys (int16 lengths) and took the broker down.
#[test]
fn a_string_field_over_32767_bytes_closes_the_connection_like_kafka() {
    let mut broker = Broker::start_default();
    let long = "g".repeat(40_000);
    // OffsetCommit v8 (flexible): group, generation -1, member "", no
    // instance, one topic with one partition.
    let mut commit = Vec::new();
    compact_string(&long, &mut commit);
    commit.extend_from_slice(&(-1i32).to_be_bytes());
    compact_string("", &mut commit);
    commit.push(0);
    unsigned_varint(2, &mut commit);
    compact_string("t", &mut commit);
    unsigned_varint(2, &mut commit);
    commit.extend_from_slice(&0i32.to_be_bytes());
    commit.extend_from_slice(&5i64.to_be_bytes());
    commit.extend_from_slice(&(-1i32).to_be_bytes());
    commit.extend_from_slice(&[0, 0, 0, 0]);
    // ConsumerGroupHeartbeat v1: the same group id, then anything.
    let mut heartbeat = Vec::new();
    compact_string(&long, &mut heartbeat);
    compact_string("m", &mut heartbeat);
    heartbeat.extend_from_slice(&[0; 16]);
    for (api_key, version, body) in [
        (ApiKey::OffsetCommit, 8i16, commit),
        (ApiKey::ConsumerGroupHeartbeat, 1, heartbeat),
    ] {
        let mut payload = Vec::new();
        payload.extend_from_slice(&(api_key as i16).to_be_bytes());
        payload.extend_from_slice(&version.to_be_bytes());
        payload.extend_from_slice(&7i32.to_be_bytes());
        payload.extend_from_slice(&[0, 1, b'c', 0]);
        payload.extend_from_slice(&body);
        let what = format!("{api_key:?} v{version} with a 40000-byte group id");
        let mut client = RawClient::connect(&broker.bootstrap());
        client.write_raw(&frame(&payload)).expect("send");
        assert_closed_without_answer(client.outcome_within(CLOSE_WAIT), &what);
        assert_broker_healthy(&mut broker, &what);
    }
}
