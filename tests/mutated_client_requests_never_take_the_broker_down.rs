//! Goal: requests that real clients send, damaged in every way a byte stream
//! can be, never take the broker down or cost it data: each gets an answer
//! (Kafka's error) or a closed connection, the broker keeps serving, and
//! every message acknowledged before reads back identical, also after a
//! kill -9 and the recovery that follows.
//!
//! Method: a recording proxy stands between librdkafka and the broker (which
//! advertises the proxy's port, so every client connection passes it) while
//! librdkafka creates and deletes topics, produces with idempotence and
//! every codec, runs a committed and an aborted transaction with offsets,
//! consumes in a group and commits, looks up offsets and describes configs.
//! Each recorded request is a seed: a deterministic generator damages copies
//! (bit flips, cuts, extreme lengths and counts, inserted and deleted bytes,
//! and record batches changed inside with their CRC32C made right again, so
//! that the damage reaches past the CRC check) and sends each one alone on a
//! fresh connection, several connections at once. Between rounds the broker
//! process must be alive; at the end it must answer a healthy client, and a
//! topic written before the recording (so that no damaged copy of its
//! requests is ever sent) must read back exactly as acknowledged, before
//! and after a kill -9.
//!
//! `RINGBROKER_MUTATION_SEED` and `RINGBROKER_MUTATIONS` choose another
//! seed and count for a longer search by hand.

mod common;

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_topic_partitions_request::{
    Cursor as DescribeTopicCursor, TopicRequest as DescribeTopicRequest,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName as ScramUserName;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey, BrokerId,
    CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse, DescribeClusterRequest,
    DescribeClusterResponse, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ElectLeadersRequest,
    ElectLeadersResponse, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, SaslAuthenticateResponse,
    SaslHandshakeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AdminOptions, AlterConfig, NewPartitions, ResourceSpecifier};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{FutureProducer, Producer};
use rdkafka::{Offset, TopicPartitionList};

use common::kafka::{
    admin_client, create_topic, end_offsets, future_producer, produce_all, producer_config,
    read_partitions, test_messages, AckedMessage, READ_TIMEOUT,
};
use common::wire::{
    assert_broker_healthy, create_read_acls, delete_every_acl, describe_every_acl,
    sasl_plain_authenticate, sasl_plain_handshake, RawClient,
};
use common::{Broker, BrokerOptions};

/// The topic written before the recording and read back after the damage.
const KEPT_TOPIC: &str = "kept-before-the-damage";
/// The topic the recorded clients use.
const RECORDED_TOPIC: &str = "recorded";
const PARTITIONS: i32 = 3;
/// About how many partitions the broker may hold (`--topic-fds-per-partition`
/// is set from the open-files limit to give this).
const PARTITION_BUDGET: u64 = 3_000;
const DEFAULT_SEED: u64 = 0x5eed_0fda_4a6e;
const DEFAULT_MUTATIONS: usize = 20_000;
/// Damaged requests in flight at once, each on its own connection.
const CONNECTIONS_AT_ONCE: usize = 8;
/// Damaged requests per round; the broker must be alive after each round.
const ROUND: usize = 64;
/// How long a damaged request's sender waits for an answer or a close.
const ANSWER_WAIT: Duration = Duration::from_millis(150);

/// Client -> broker requests seen by the proxy, without their size prefix.
type Frames = Arc<Mutex<Vec<Vec<u8>>>>;

/// A TCP proxy from its own port to the broker's that records every request
/// the clients send.
struct RecordingProxy {
    port: u16,
    frames: Frames,
    recording: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl RecordingProxy {
    fn start(broker_port: impl Fn() -> u16 + Send + 'static) -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        listener.set_nonblocking(true).expect("non-blocking proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let frames: Frames = Arc::default();
        let recording = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let frames = Arc::clone(&frames);
            let recording = Arc::clone(&recording);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            client
                                .set_nonblocking(false)
                                .expect("blocking client socket");
                            let Ok(server) = TcpStream::connect(("127.0.0.1", broker_port()))
                            else {
                                continue;
                            };
                            let (client_in, server_out) = (
                                client.try_clone().expect("clone"),
                                server.try_clone().expect("clone"),
                            );
                            let record = (Arc::clone(&frames), Arc::clone(&recording));
                            thread::spawn(move || pump(client_in, server_out, Some(record)));
                            thread::spawn(move || pump(server, client, None));
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            thread::sleep(Duration::from_millis(5));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            });
        }
        RecordingProxy {
            port,
            frames,
            recording,
            stop,
        }
    }

    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Records the requests passing from now on, or stops.
    fn record(&self, on: bool) {
        self.recording.store(on, Ordering::Relaxed);
    }

    fn frames(&self) -> Vec<Vec<u8>> {
        self.frames.lock().expect("frames lock").clone()
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies `from` to `to` until either side closes, cutting what passes into
/// size-prefixed frames for `record` when given, kept while its flag is set.
fn pump(mut from: TcpStream, mut to: TcpStream, record: Option<(Frames, Arc<AtomicBool>)>) {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut pending = Vec::new();
    loop {
        let read = match from.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        // A frame is recorded (or not) before its last bytes go on, so a
        // request answered before the recording starts is never recorded.
        if let Some((frames, recording)) = &record {
            pending.extend_from_slice(&chunk[..read]);
            while pending.len() >= 4 {
                let size = i32::from_be_bytes(pending[..4].try_into().expect("4 bytes")) as usize;
                if pending.len() < 4 + size {
                    break;
                }
                if recording.load(Ordering::Relaxed) {
                    frames
                        .lock()
                        .expect("frames lock")
                        .push(pending[4..4 + size].to_vec());
                }
                pending.drain(..4 + size);
            }
        }
        if to.write_all(&chunk[..read]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// xorshift64*: the same choices for the same seed (the recorded requests
/// they apply to vary a little with timing, heartbeats for one).
struct Generator(u64);

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Where record batches (magic 2, whole, CRC right) lie in a request: their
/// first byte and their length field.
fn record_batches(frame: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut at = 0;
    while at + 61 <= frame.len() {
        let length = i32::from_be_bytes(frame[at + 8..at + 12].try_into().expect("4 bytes"));
        if frame[at + 16] == 2 && length >= 49 && at + 12 + length as usize <= frame.len() {
            let end = at + 12 + length as usize;
            let crc = u32::from_be_bytes(frame[at + 17..at + 21].try_into().expect("4 bytes"));
            if crc == crc32c::crc32c(&frame[at + 21..end]) {
                found.push((at, length as usize));
                at = end;
                continue;
            }
        }
        at += 1;
    }
    found
}

/// An extreme value of `width` bytes: all ones, the largest and smallest
/// signed numbers, zero, or noise.
fn extreme(generator: &mut Generator, width: usize) -> Vec<u8> {
    let (first, rest) = match generator.below(5) {
        0 => (0xff, 0xff),
        1 => (0x7f, 0xff),
        2 => (0x80, 0x00),
        3 => (0x00, 0x00),
        _ => return (0..width).map(|_| generator.next() as u8).collect(),
    };
    let mut bytes = vec![rest; width];
    bytes[0] = first;
    bytes
}

/// A damaged copy of `seed` (a request without its size prefix). The API key
/// is kept so that the damage reaches that API's decoder and handler.
fn damaged(generator: &mut Generator, seed: &[u8]) -> Vec<u8> {
    let mut frame = seed.to_vec();
    if frame.len() <= 4 {
        return frame;
    }
    let batches = record_batches(&frame);
    match generator.below(8) {
        0 => {
            for _ in 0..1 + generator.below(4) {
                let at = 4 + generator.below(frame.len() - 4);
                frame[at] ^= 1 << generator.below(8);
            }
        }
        1 => frame.truncate(4 + generator.below(frame.len() - 4)),
        2 | 3 => {
            let width = [1, 2, 4][generator.below(3)];
            let at = 4 + generator.below(frame.len().saturating_sub(4 + width).max(1));
            let value = extreme(generator, width);
            let end = (at + width).min(frame.len());
            frame.splice(at..end, value);
        }
        4 => {
            let at = 4 + generator.below(frame.len() - 4);
            if generator.chance(50) {
                let end = (at + 1 + generator.below(8)).min(frame.len());
                frame.drain(at..end);
            } else {
                let noise: Vec<u8> = (0..1 + generator.below(8))
                    .map(|_| generator.next() as u8)
                    .collect();
                frame.splice(at..at, noise);
            }
        }
        5 => {
            // Another version of the same API: unknown ones, and known ones
            // given a body of another shape.
            let version = generator.below(20) as i16 - 1;
            frame[2..4].copy_from_slice(&version.to_be_bytes());
        }
        _ if !batches.is_empty() => {
            // Inside a record batch, past its CRC, and the CRC made right.
            let (start, length) = batches[generator.below(batches.len())];
            let end = start + 12 + length;
            for _ in 0..1 + generator.below(3) {
                if generator.chance(50) {
                    let at = start + 21 + generator.below(end - start - 21);
                    frame[at] ^= 1 << generator.below(8);
                } else {
                    let width = [1, 2, 4][generator.below(3)];
                    let at = start + 21 + generator.below(end - start - 21 - width);
                    let value = extreme(generator, width);
                    frame.splice(at..at + width, value);
                }
            }
            if generator.chance(20) {
                let wrong = length as i32 + [-1, 1, -13, 100][generator.below(4)];
                frame[start + 8..start + 12].copy_from_slice(&wrong.to_be_bytes());
            }
            let crc = crc32c::crc32c(&frame[start + 21..end]);
            frame[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
        }
        _ => {
            let at = 4 + generator.below(frame.len() - 4);
            frame[at] ^= 0xff;
        }
    }
    frame
}

/// Sends `frame` alone on a fresh connection and waits a little for an
/// answer or a close; either is fine.
fn send_alone(port: u16, frame: &[u8]) {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let mut bytes = (frame.len() as i32).to_be_bytes().to_vec();
    bytes.extend_from_slice(frame);
    if stream.write_all(&bytes).is_err() {
        return;
    }
    let _ = stream.set_read_timeout(Some(ANSWER_WAIT));
    let mut answer = [0u8; 4096];
    let _ = stream.read(&mut answer);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// What librdkafka sends in a typical life: topics, idempotent produce with
/// every codec, a committed and an aborted transaction with offsets, a
/// consumer group that commits, offset lookups, configs, deletions.
async fn run_clients(bootstrap: &str) {
    create_topic(bootstrap, RECORDED_TOPIC, PARTITIONS).await;
    create_topic(bootstrap, "recorded-then-deleted", 1).await;
    let messages = test_messages(60, PARTITIONS);
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let mut config = producer_config(bootstrap);
        config
            .set("enable.idempotence", "true")
            .set("compression.codec", codec);
        produce_all(&future_producer(&config), RECORDED_TOPIC, &messages).await;
    }

    let group = "recorded-group";
    let mut config = producer_config(bootstrap);
    config
        .set("enable.idempotence", "true")
        .set("transactional.id", "recorded-transactions");
    let producer: FutureProducer = future_producer(&config);
    let timeout = Duration::from_secs(30);
    producer
        .init_transactions(timeout)
        .expect("init transactions");
    let group_consumer: BaseConsumer = consumer(bootstrap, group, "read_committed");
    let group_metadata = group_consumer
        .group_metadata()
        .expect("a consumer with a group.id has group metadata");
    for commit in [true, false] {
        producer.begin_transaction().expect("begin transaction");
        produce_all(&producer, RECORDED_TOPIC, &messages[..12]).await;
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset(RECORDED_TOPIC, 0, Offset::Offset(5))
            .expect("offset");
        producer
            .send_offsets_to_transaction(&offsets, &group_metadata, timeout)
            .expect("send offsets to transaction");
        if commit {
            producer.commit_transaction(timeout).expect("commit");
        } else {
            producer.abort_transaction(timeout).expect("abort");
        }
    }
    drop(group_consumer);

    let member = consumer(bootstrap, group, "read_uncommitted");
    member.subscribe(&[RECORDED_TOPIC]).expect("subscribe");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut received = 0;
    while received < 100 && Instant::now() < deadline {
        if let Some(Ok(_)) = member.poll(Duration::from_millis(100)) {
            received += 1;
        }
    }
    assert!(received >= 100, "the group member read {received} messages");
    member
        .commit_consumer_state(CommitMode::Sync)
        .expect("commit consumer state");
    let mut times = TopicPartitionList::new();
    times
        .add_partition_offset(RECORDED_TOPIC, 1, Offset::Offset(0))
        .expect("timestamp");
    member
        .offsets_for_times(times, Duration::from_secs(10))
        .expect("offsets for times");
    member
        .fetch_watermarks(RECORDED_TOPIC, 2, Duration::from_secs(10))
        .expect("watermarks");
    member
        .committed(Duration::from_secs(10))
        .expect("committed offsets");
    drop(member);
    // What a consumer asks to validate its position after a leader change
    // (librdkafka only asks when the epoch it holds differs from the
    // leader's, which never happens on one node): hand-built, v2 as
    // librdkafka sends it and v4 as the Java client does.
    for version in [2, 4] {
        let mut topic = OffsetForLeaderTopic::default();
        topic.topic = TopicName(StrBytes::from_static_str(RECORDED_TOPIC));
        topic.partitions = (0..PARTITIONS)
            .map(|partition| {
                let mut p = OffsetForLeaderPartition::default();
                p.partition = partition;
                p.current_leader_epoch = 0;
                p.leader_epoch = 0;
                p
            })
            .collect();
        let mut request = OffsetForLeaderEpochRequest::default();
        request.replica_id = BrokerId(-1);
        request.topics = vec![topic];
        let response: OffsetForLeaderEpochResponse =
            RawClient::connect(bootstrap).request(ApiKey::OffsetForLeaderEpoch, version, &request);
        assert_eq!(response.topics[0].partitions.len(), PARTITIONS as usize);
    }
    // What admin tools ask that the Rust client cannot: hand-built too.
    let mut raw = RawClient::connect(bootstrap);
    let mut describe_cluster = DescribeClusterRequest::default();
    describe_cluster.include_cluster_authorized_operations = true;
    describe_cluster.endpoint_type = 1;
    let _: DescribeClusterResponse = raw.request(ApiKey::DescribeCluster, 1, &describe_cluster);
    let mut wanted = TopicPartitions::default();
    wanted.topic = TopicName(StrBytes::from_static_str(RECORDED_TOPIC));
    wanted.partitions = (0..PARTITIONS).collect();
    let mut elect = ElectLeadersRequest::default();
    elect.election_type = 1;
    elect.topic_partitions = Some(vec![wanted]);
    elect.timeout_ms = 10_000;
    let _: ElectLeadersResponse = raw.request(ApiKey::ElectLeaders, 2, &elect);
    let mut describe_topic = DescribeTopicRequest::default();
    describe_topic.name = TopicName(StrBytes::from_static_str(RECORDED_TOPIC));
    let mut cursor = DescribeTopicCursor::default();
    cursor.topic_name = TopicName(StrBytes::from_static_str(RECORDED_TOPIC));
    cursor.partition_index = 1;
    let mut describe_topics = DescribeTopicPartitionsRequest::default();
    describe_topics.topics = vec![describe_topic];
    describe_topics.response_partition_limit = 1;
    describe_topics.cursor = Some(cursor);
    let _: DescribeTopicPartitionsResponse =
        raw.request(ApiKey::DescribeTopicPartitions, 0, &describe_topics);
    let mut moved = ReassignablePartition::default();
    moved.partition_index = 0;
    moved.replicas = Some(vec![BrokerId(0), BrokerId(5)]);
    let mut reassigned = ReassignableTopic::default();
    reassigned.name = TopicName(StrBytes::from_static_str(RECORDED_TOPIC));
    reassigned.partitions = vec![moved];
    let mut reassign = AlterPartitionReassignmentsRequest::default();
    reassign.timeout_ms = 10_000;
    reassign.allow_replication_factor_change = false;
    reassign.topics = vec![reassigned];
    let _: AlterPartitionReassignmentsResponse =
        raw.request(ApiKey::AlterPartitionReassignments, 1, &reassign);
    let list = ListPartitionReassignmentsRequest::default();
    let _: ListPartitionReassignmentsResponse =
        raw.request(ApiKey::ListPartitionReassignments, 0, &list);
    let _: DescribeAclsResponse = raw.request(ApiKey::DescribeAcls, 1, &describe_every_acl());
    let create_acls = create_read_acls(RECORDED_TOPIC, 1);
    let _: CreateAclsResponse = raw.request(ApiKey::CreateAcls, 2, &create_acls);
    let _: DeleteAclsResponse = raw.request(ApiKey::DeleteAcls, 3, &delete_every_acl());
    let _: SaslHandshakeResponse = raw.request(ApiKey::SaslHandshake, 1, &sasl_plain_handshake());
    let authenticate = sasl_plain_authenticate();
    let _: SaslAuthenticateResponse = raw.request(ApiKey::SaslAuthenticate, 2, &authenticate);
    let mut upsertion = ScramCredentialUpsertion::default();
    upsertion.name = StrBytes::from_static_str("recorded-user");
    upsertion.mechanism = 1;
    upsertion.iterations = 4096;
    upsertion.salt = Bytes::from_static(b"salt");
    upsertion.salted_password = Bytes::from(vec![7u8; 32]);
    let mut deletion = ScramCredentialDeletion::default();
    deletion.name = StrBytes::from_static_str("recorded-user");
    deletion.mechanism = 2;
    let mut alter_scram = AlterUserScramCredentialsRequest::default();
    alter_scram.upsertions = vec![upsertion];
    alter_scram.deletions = vec![deletion];
    let _: AlterUserScramCredentialsResponse =
        raw.request(ApiKey::AlterUserScramCredentials, 0, &alter_scram);
    let mut scram_user = ScramUserName::default();
    scram_user.name = StrBytes::from_static_str("recorded-user");
    let mut describe_scram = DescribeUserScramCredentialsRequest::default();
    describe_scram.users = Some(vec![scram_user]);
    let _: DescribeUserScramCredentialsResponse =
        raw.request(ApiKey::DescribeUserScramCredentials, 0, &describe_scram);

    let admin = admin_client(bootstrap);
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    admin
        .describe_configs(
            &[
                ResourceSpecifier::Topic(RECORDED_TOPIC),
                ResourceSpecifier::Broker(0),
            ],
            &options,
        )
        .await
        .expect("describe configs");
    // Changed before it is deleted, so that replayed copies find no topic
    // to change (a mutated config on the kept topic could rightly delete
    // its data).
    admin
        .create_partitions(&[NewPartitions::new("recorded-then-deleted", 2)], &options)
        .await
        .expect("create partitions");
    admin
        .alter_configs(
            &[
                AlterConfig::new(ResourceSpecifier::Topic("recorded-then-deleted"))
                    .set("retention.ms", "86400000"),
            ],
            &options,
        )
        .await
        .expect("alter configs");
    let mut deleted_below = TopicPartitionList::new();
    deleted_below
        .add_partition_offset("recorded-then-deleted", 0, Offset::Offset(0))
        .expect("delete records offset");
    admin
        .delete_records(&deleted_below, &options)
        .await
        .expect("delete records");
    admin
        .delete_topics(&["recorded-then-deleted"], &options)
        .await
        .expect("delete topics");
    admin
        .delete_groups(&["recorded-empty-group"], &options)
        .await
        .expect("delete groups");
}

fn consumer(bootstrap: &str, group: &str, isolation: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", isolation)
        .set("session.timeout.ms", "6000")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("create consumer")
}

fn assert_kept_topic_reads_back(bootstrap: &str, acked: &[AckedMessage], when: &str) {
    let received = read_partitions(bootstrap, KEPT_TOPIC, &end_offsets(acked), READ_TIMEOUT);
    common::kafka::assert_read_back_matches(when, acked, &received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_copies_of_real_client_requests_get_errors_or_closes_and_lose_nothing() {
    let seed = env_or("RINGBROKER_MUTATION_SEED", DEFAULT_SEED);
    let mutations = env_or("RINGBROKER_MUTATIONS", DEFAULT_MUTATIONS);
    let broker_port = Arc::new(std::sync::atomic::AtomicU16::new(0));
    let proxy = {
        let broker_port = Arc::clone(&broker_port);
        RecordingProxy::start(move || broker_port.load(Ordering::Relaxed))
    };
    // Damaged CreateTopics requests create topics of up to 10,000
    // partitions: a budget of about PARTITION_BUDGET keeps the run short.
    let (_, hard_limit) = common::open_files_limit(std::process::id(), None);
    let (fds_per_partition, budget) =
        common::fds_per_partition_for_budget(hard_limit, PARTITION_BUDGET);
    let mut broker = Broker::start(
        BrokerOptions::default()
            .arg("--advertised-listen", proxy.bootstrap())
            .arg("--topic-fds-per-partition", fds_per_partition)
            // With the authorizer on, damaged ACL requests reach the
            // controller and the metadata log; the clients are super users
            // so the ACLs they store never lock the test out.
            .arg("--authorizer-class-name", "standard")
            .arg("--super-users", "User:ANONYMOUS"),
    );
    broker_port.store(broker.port(), Ordering::Relaxed);
    let direct = broker.bootstrap();

    // The data that must survive, written before the recording starts (its
    // producer's requests reach the broker through the proxy too, since
    // the broker advertises the proxy's port), so no damaged copy of them
    // is ever sent.
    create_topic(&direct, KEPT_TOPIC, PARTITIONS).await;
    let producer = future_producer(&producer_config(&direct));
    let acked = produce_all(&producer, KEPT_TOPIC, &test_messages(900, PARTITIONS)).await;
    drop(producer);

    proxy.record(true);
    run_clients(&proxy.bootstrap()).await;
    proxy.record(false);
    // The proxy stays: the broker advertises its port to every client.
    // A seed naming the kept topic would be a bug of the recording.
    let seeds = proxy.frames();
    assert!(
        !seeds.iter().any(|frame| frame
            .windows(KEPT_TOPIC.len())
            .any(|w| w == KEPT_TOPIC.as_bytes())),
        "a recorded request names {KEPT_TOPIC}"
    );
    let apis: BTreeSet<i16> = seeds
        .iter()
        .filter(|frame| frame.len() >= 2)
        .map(|frame| i16::from_be_bytes([frame[0], frame[1]]))
        .collect();
    // Produce, Fetch, ListOffsets, Metadata, OffsetCommit, OffsetFetch,
    // FindCoordinator, JoinGroup, Heartbeat, SyncGroup, ApiVersions,
    // CreateTopics, DeleteTopics, DeleteRecords, InitProducerId,
    // OffsetForLeaderEpoch, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
    // TxnOffsetCommit, DescribeConfigs, AlterConfigs, CreatePartitions,
    // DeleteGroups, ElectLeaders, Alter/ListPartitionReassignments,
    // DescribeCluster, DescribeTopicPartitions, SaslHandshake,
    // SaslAuthenticate, Describe/Create/DeleteAcls,
    // Describe/AlterUserScramCredentials.
    for api in [
        0, 1, 2, 3, 8, 9, 10, 11, 12, 14, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31,
        32, 33, 36, 37, 42, 43, 45, 46, 50, 51, 60, 75,
    ] {
        assert!(
            apis.contains(&api),
            "the clients sent no request of API {api}; recorded APIs: {apis:?}"
        );
    }
    let with_batches = seeds
        .iter()
        .filter(|frame| !record_batches(frame).is_empty())
        .count();
    assert!(
        with_batches >= 10,
        "only {with_batches} recorded requests carry record batches"
    );

    let mut generator = Generator(seed | 1);
    let port = broker.port();
    let started = Instant::now();
    let mut sent = 0;
    while sent < mutations {
        let round: Vec<Vec<u8>> = (0..ROUND.min(mutations - sent))
            .map(|_| {
                let seed = &seeds[generator.below(seeds.len())];
                damaged(&mut generator, seed)
            })
            .collect();
        thread::scope(|scope| {
            for share in round.chunks(round.len().div_ceil(CONNECTIONS_AT_ONCE)) {
                scope.spawn(move || {
                    for frame in share {
                        send_alone(port, frame);
                    }
                });
            }
        });
        if !broker.is_running() {
            let shown: Vec<String> = round
                .iter()
                .map(|frame| format!("  {}", hex(&frame[..frame.len().min(512)])))
                .collect();
            panic!(
                "the broker died during damaged requests {sent}..{} of seed {seed:#x}; \
                 they were (hex, at most 512 bytes each):\n{}",
                sent + round.len(),
                shown.join("\n")
            );
        }
        sent += round.len();
    }
    eprintln!(
        "{sent} damaged requests from {} recorded ones ({} APIs) in {:?}",
        seeds.len(),
        apis.len(),
        started.elapsed()
    );

    assert_broker_healthy(&mut broker, "the damaged requests");
    let held: u64 = common::wire::metadata(&direct, None)
        .topics
        .iter()
        .map(|topic| topic.partitions.len() as u64)
        .sum();
    assert!(
        held <= budget,
        "{held} partitions after the damaged requests, past the budget of {budget}"
    );
    assert_kept_topic_reads_back(&direct, &acked, "after the damaged requests");
    broker.kill9();
    broker.restart();
    assert_broker_healthy(
        &mut broker,
        "kill -9 and restart after the damaged requests",
    );
    assert_kept_topic_reads_back(
        &broker.bootstrap(),
        &acked,
        "after kill -9 and restart following the damaged requests",
    );
}
