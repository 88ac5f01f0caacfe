//! Goal: TxnOffsetCommit answers like Kafka and its offsets stay pending,
//! durably. ApiVersions advertises TxnOffsetCommit 0-5. A transactional
//! producer whose transaction holds the group's offsets partition
//! (AddOffsetsToTxn) commits offsets in it (v3, and v0 for a second
//! partition); OffsetFetch without `require_stable` still answers the last
//! plain commit (or -1), and with `require_stable` (v7 single group and v8
//! batched) UNSTABLE_OFFSET_COMMIT for those partitions, while an untouched
//! partition answers normally. A missing topic gets
//! UNKNOWN_TOPIC_OR_PARTITION, a generation for an unknown group
//! ILLEGAL_GENERATION, and an epoch fenced by a new instance of the
//! transactional id INVALID_PRODUCER_EPOCH.
//! After a clean restart and after kill -9, the same answers come back: the
//! transactional batch was durable and the load put the offsets back into
//! the pending state (no marker was written, so the transaction is open).
//!
//! Method: one broker driven over one TCP connection with hand-built
//! `kafka-protocol` requests. The markers that end a transaction come from
//! the transaction coordinator (WriteTxnMarkers), which this test cannot
//! drive; the unit tests of the group coordinator cover COMMIT and ABORT.

mod common;

use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ApiKey, CreateTopicsRequest,
    CreateTopicsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    InitProducerIdRequest, InitProducerIdResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, ProducerId, TopicName, TransactionalId,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;

use common::wire::{api_versions, RawClient};
use common::{Broker, BrokerOptions};

const GROUP: &str = "txn-readers";
const UNKNOWN_GROUP: &str = "txn-never-joined";
const EPOCH_GROUP: &str = "txn-epoch-check";
const TXN_ID: &str = "payments-tx";
const EPOCH_TXN_ID: &str = "epoch-check-tx";
const TOPIC: &str = "payments";
const MISSING_TOPIC: &str = "no-such-topic";
const PLAIN_OFFSET: i64 = 5;
const TXN_OFFSET_0: i64 = 10;
const TXN_OFFSET_1: i64 = 11;
/// How long to retry while a coordinator is (re)loading after a start.
const LOAD_WAIT: Duration = Duration::from_secs(30);

fn s(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

fn code(error: ResponseError) -> i16 {
    error.code()
}

/// Errors a client retries while the coordinator is not ready.
fn is_coordinator_loading(error_code: i16) -> bool {
    [
        ResponseError::CoordinatorLoadInProgress,
        ResponseError::CoordinatorNotAvailable,
        ResponseError::NotCoordinator,
    ]
    .iter()
    .any(|e| e.code() == error_code)
}

/// Repeats `call` until its error codes are not a coordinator's
/// loading-state error, up to [`LOAD_WAIT`].
fn retry_while_loading<T>(mut call: impl FnMut() -> T, errors: impl Fn(&T) -> Vec<i16>) -> T {
    let deadline = Instant::now() + LOAD_WAIT;
    loop {
        let answer = call();
        let loading = errors(&answer).into_iter().any(is_coordinator_loading);
        if !loading || Instant::now() > deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The producer id and epoch of transactional id `id`, whose transaction
/// (open for `transaction.max.timeout.ms`, longer than the test) holds the
/// offsets partitions of `groups` (AddOffsetsToTxn): the broker verifies
/// this before it writes a TxnOffsetCommit, as Kafka does (KIP-890).
fn transactional_producer(client: &mut RawClient, id: &str, groups: &[&str]) -> (i64, i16) {
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = Some(TransactionalId(s(id)));
    request.transaction_timeout_ms = 900_000;
    request.producer_id = ProducerId(-1);
    request.producer_epoch = -1;
    let concurrent = code(ResponseError::ConcurrentTransactions);
    let response: InitProducerIdResponse = retry_while_loading(
        || client.request(ApiKey::InitProducerId, 4, &request),
        // A re-init that fences an open transaction answers
        // CONCURRENT_TRANSACTIONS until its abort is done.
        |r: &InitProducerIdResponse| {
            let error = r.error_code;
            vec![if error == concurrent {
                code(ResponseError::CoordinatorLoadInProgress)
            } else {
                error
            }]
        },
    );
    assert_eq!(response.error_code, 0, "InitProducerId: {response:?}");
    let producer = (response.producer_id.0, response.producer_epoch);
    for group in groups {
        let mut add = AddOffsetsToTxnRequest::default();
        add.transactional_id = TransactionalId(s(id));
        add.producer_id = ProducerId(producer.0);
        add.producer_epoch = producer.1;
        add.group_id = GroupId(s(group));
        let added: AddOffsetsToTxnResponse = retry_while_loading(
            || client.request(ApiKey::AddOffsetsToTxn, 3, &add),
            |r: &AddOffsetsToTxnResponse| vec![r.error_code],
        );
        assert_eq!(added.error_code, 0, "AddOffsetsToTxn {group}: {added:?}");
    }
    producer
}

struct TxnCommit<'a> {
    transactional_id: &'a str,
    group: &'a str,
    producer: (i64, i16),
    generation_id: i32,
    member_id: &'a str,
    offsets: &'a [(&'a str, i32, i64)],
}

/// `(topic, partition, error)` of every partition in the answer.
fn txn_commit(
    client: &mut RawClient,
    version: i16,
    commit: &TxnCommit<'_>,
) -> Vec<(String, i32, i16)> {
    let mut request = TxnOffsetCommitRequest::default();
    request.transactional_id = TransactionalId(s(commit.transactional_id));
    request.group_id = GroupId(s(commit.group));
    request.producer_id = ProducerId(commit.producer.0);
    request.producer_epoch = commit.producer.1;
    request.generation_id = commit.generation_id;
    request.member_id = s(commit.member_id);
    request.topics = commit
        .offsets
        .iter()
        .map(|&(topic, partition, offset)| {
            let mut p = TxnOffsetCommitRequestPartition::default();
            p.partition_index = partition;
            p.committed_offset = offset;
            p.committed_leader_epoch = -1;
            p.committed_metadata = Some(s("in-txn"));
            let mut t = TxnOffsetCommitRequestTopic::default();
            t.name = TopicName(s(topic));
            t.partitions = vec![p];
            t
        })
        .collect();
    let response: TxnOffsetCommitResponse = retry_while_loading(
        || client.request(ApiKey::TxnOffsetCommit, version, &request),
        |r: &TxnOffsetCommitResponse| {
            r.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
                .collect()
        },
    );
    response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index, p.error_code))
        })
        .collect()
}

fn plain_commit(client: &mut RawClient, partition: i32, offset: i64) {
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = partition;
    p.committed_offset = offset;
    p.committed_leader_epoch = -1;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s(TOPIC));
    t.partitions = vec![p];
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(GROUP));
    request.generation_id_or_member_epoch = -1;
    request.topics = vec![t];
    let response: OffsetCommitResponse = retry_while_loading(
        || client.request(ApiKey::OffsetCommit, 8, &request),
        |r: &OffsetCommitResponse| {
            r.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
                .collect()
        },
    );
    assert_eq!(
        response.topics[0].partitions[0].error_code, 0,
        "OffsetCommit: {response:?}"
    );
}

/// OffsetFetch v7 of partitions 0-2: `(partition, offset, error)`.
fn fetch_v7(client: &mut RawClient, require_stable: bool) -> Vec<(i32, i64, i16)> {
    let mut topic = OffsetFetchRequestTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.partition_indexes = vec![0, 1, 2];
    let mut request = OffsetFetchRequest::default();
    request.group_id = GroupId(s(GROUP));
    request.topics = Some(vec![topic]);
    request.require_stable = require_stable;
    let response: OffsetFetchResponse = retry_while_loading(
        || client.request(ApiKey::OffsetFetch, 7, &request),
        |r: &OffsetFetchResponse| vec![r.error_code],
    );
    assert_eq!(response.error_code, 0, "OffsetFetch v7: {response:?}");
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| (p.partition_index, p.committed_offset, p.error_code))
        .collect()
}

/// OffsetFetch v8 (batched groups) of partitions 0-2 with `require_stable`.
fn fetch_v8_stable(client: &mut RawClient) -> Vec<(i32, i64, i16)> {
    let mut topic = OffsetFetchRequestTopics::default();
    topic.name = TopicName(s(TOPIC));
    topic.partition_indexes = vec![0, 1, 2];
    let mut group = OffsetFetchRequestGroup::default();
    group.group_id = GroupId(s(GROUP));
    group.topics = Some(vec![topic]);
    let mut request = OffsetFetchRequest::default();
    request.groups = vec![group];
    request.require_stable = true;
    let response: OffsetFetchResponse = retry_while_loading(
        || client.request(ApiKey::OffsetFetch, 8, &request),
        |r: &OffsetFetchResponse| r.groups.iter().map(|g| g.error_code).collect(),
    );
    assert_eq!(
        response.groups[0].error_code, 0,
        "OffsetFetch v8: {response:?}"
    );
    response.groups[0]
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| (p.partition_index, p.committed_offset, p.error_code))
        .collect()
}

/// What every fetch must answer while the transaction is open.
fn assert_transaction_pending(client: &mut RawClient, when: &str) {
    let unstable = code(ResponseError::UnstableOffsetCommit);
    assert_eq!(
        fetch_v7(client, false),
        vec![(0, PLAIN_OFFSET, 0), (1, -1, 0), (2, -1, 0)],
        "{when}: without require_stable the last plain commit is answered"
    );
    let stable = vec![(0, -1, unstable), (1, -1, unstable), (2, -1, 0)];
    assert_eq!(
        fetch_v7(client, true),
        stable,
        "{when}: v7 require_stable answers UNSTABLE_OFFSET_COMMIT for pending partitions"
    );
    assert_eq!(
        fetch_v8_stable(client),
        stable,
        "{when}: v8 require_stable answers UNSTABLE_OFFSET_COMMIT for pending partitions"
    );
}

#[test]
fn txn_offset_commit_stays_pending_across_restarts() {
    let mut broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();

    let versions = api_versions(&bootstrap);
    assert_eq!(
        common::wire::api_range(&versions, ApiKey::TxnOffsetCommit),
        Some((0, 5)),
        "ApiVersions lists TxnOffsetCommit 0-5"
    );

    let mut client = RawClient::connect(&bootstrap);
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.num_partitions = 3;
    topic.replication_factor = 1;
    let mut create = CreateTopicsRequest::default();
    create.topics = vec![topic];
    create.timeout_ms = 10_000;
    let created: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 5, &create);
    assert_eq!(created.topics[0].error_code, 0, "CreateTopics: {created:?}");
    let mut find = FindCoordinatorRequest::default();
    find.key = s(GROUP);
    let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 2, &find);
    assert_eq!(found.error_code, 0, "FindCoordinator: {found:?}");

    plain_commit(&mut client, 0, PLAIN_OFFSET);
    let producer = transactional_producer(&mut client, TXN_ID, &[GROUP, UNKNOWN_GROUP]);

    // v3 (flexible, with member fields) for partition 0 and a missing topic;
    // v0 for partition 1.
    let answered = txn_commit(
        &mut client,
        3,
        &TxnCommit {
            transactional_id: TXN_ID,
            group: GROUP,
            producer,
            generation_id: -1,
            member_id: "",
            offsets: &[(TOPIC, 0, TXN_OFFSET_0), (MISSING_TOPIC, 0, 1)],
        },
    );
    assert_eq!(
        answered,
        vec![
            (MISSING_TOPIC.to_string(), 0, code(ResponseError::UnknownTopicOrPartition)),
            (TOPIC.to_string(), 0, 0),
        ],
        "TxnOffsetCommit v3: the broker's own errors come first, as Kafka's response builder lists them"
    );
    let answered = txn_commit(
        &mut client,
        0,
        &TxnCommit {
            transactional_id: TXN_ID,
            group: GROUP,
            producer,
            generation_id: -1,
            member_id: "",
            offsets: &[(TOPIC, 1, TXN_OFFSET_1)],
        },
    );
    assert_eq!(
        answered,
        vec![(TOPIC.to_string(), 1, 0)],
        "TxnOffsetCommit v0"
    );

    // KIP-447 checks: a generation for a group that does not exist.
    let answered = txn_commit(
        &mut client,
        3,
        &TxnCommit {
            transactional_id: TXN_ID,
            group: UNKNOWN_GROUP,
            producer,
            generation_id: 3,
            member_id: "someone",
            offsets: &[(TOPIC, 0, 1)],
        },
    );
    assert_eq!(
        answered,
        vec![(TOPIC.to_string(), 0, code(ResponseError::IllegalGeneration))],
        "TxnOffsetCommit with a generation for an unknown group"
    );

    // An older epoch of a producer is fenced: a second transactional id
    // commits, then a new instance of it (InitProducerId, which aborts the
    // open transaction) fences the first.
    let first = transactional_producer(&mut client, EPOCH_TXN_ID, &[EPOCH_GROUP]);
    let commit_as = |producer| TxnCommit {
        transactional_id: EPOCH_TXN_ID,
        group: EPOCH_GROUP,
        producer,
        generation_id: -1,
        member_id: "",
        offsets: &[(TOPIC, 2, 7)],
    };
    assert_eq!(
        txn_commit(&mut client, 4, &commit_as(first)),
        vec![(TOPIC.to_string(), 2, 0)],
        "TxnOffsetCommit v4"
    );
    let second = transactional_producer(&mut client, EPOCH_TXN_ID, &[]);
    assert!(second.1 > first.1, "{second:?} after {first:?}");
    assert_eq!(
        txn_commit(&mut client, 4, &commit_as(first)),
        vec![(
            TOPIC.to_string(),
            2,
            code(ResponseError::InvalidProducerEpoch)
        )],
        "TxnOffsetCommit with an older producer epoch"
    );

    assert_transaction_pending(&mut client, "before any restart");

    drop(client);
    broker.restart();
    let mut client = RawClient::connect(&bootstrap);
    assert_transaction_pending(&mut client, "after a clean restart");

    drop(client);
    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&bootstrap);
    assert_transaction_pending(&mut client, "after kill -9");
    broker.assert_running();
}
