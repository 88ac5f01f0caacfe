//! Goal: the transaction coordinator's APIs answer as Kafka 4.x does for a
//! transactional id's life cycle and its error cases. ApiVersions advertises
//! AddPartitionsToTxn 0-5 (4+ is broker-to-broker), AddOffsetsToTxn 0-4,
//! EndTxn 0-5 (5 is transactions V2), DescribeTransactions 0 and
//! ListTransactions 0-2. FindCoordinator for a transactional id names this
//! broker and refuses an empty id. InitProducerId refuses a timeout above
//! `transaction.max.timeout.ms`, gives epoch 0 to a new id and bumps it on
//! re-init. EndTxn without an open transaction is INVALID_TXN_STATE; a wrong
//! producer id INVALID_PRODUCER_ID_MAPPING; an old epoch PRODUCER_FENCED for
//! v2+ clients and INVALID_PRODUCER_EPOCH for v0-1. AddPartitionsToTxn with
//! a missing topic answers UNKNOWN_TOPIC_OR_PARTITION for it and
//! OPERATION_NOT_ATTEMPTED for the rest. DescribeTransactions shows an open
//! transaction's state, partitions and timeout, TRANSACTIONAL_ID_NOT_FOUND
//! for an unknown id; ListTransactions filters by state and echoes unknown
//! state names. Writes are verified with the coordinator first (KIP-890
//! part 1), with the codes Kafka 4.1.1 answered to the same requests:
//! TxnOffsetCommit from a fenced epoch INVALID_PRODUCER_EPOCH (and no
//! warning in the log), from an unknown producer INVALID_PRODUCER_ID_MAPPING,
//! without AddOffsetsToTxn INVALID_TXN_STATE (TRANSACTION_ABORTABLE at v4);
//! transactional Produce to a partition never added, or after the commit,
//! INVALID_TXN_STATE (TRANSACTION_ABORTABLE at v11), from a fenced epoch
//! INVALID_PRODUCER_EPOCH, without a
//! transactional id TRANSACTIONAL_ID_AUTHORIZATION_FAILED; refused offsets
//! never leave OffsetFetch(require_stable) unstable. The coordinator's
//! state survives a SIGKILL: after restart
//! the committed transaction is CompleteCommit and the open one is still
//! Ongoing, and committing it then works.
//!
//! Transactions V2 (KIP-890 part 2) have a test of their own below.
//!
//! Method: one broker with 2 shards, driven over one TCP connection with
//! hand-built `kafka-protocol` requests.

mod common;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, ApiKey, ApiVersionsRequest, ApiVersionsResponse,
    CreateTopicsRequest, CreateTopicsResponse, DescribeTransactionsRequest,
    DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId, InitProducerIdRequest, InitProducerIdResponse,
    ListTransactionsRequest, ListTransactionsResponse, OffsetFetchRequest, OffsetFetchResponse,
    ProduceRequest, ProduceResponse, ProducerId, TopicName, TransactionalId,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse, UpdateFeaturesRequest, UpdateFeaturesResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Record, TimestampType};

use common::wire::{api_versions, encode_batch, RawClient};
use common::{unique, Broker, BrokerOptions};

const TOPIC: &str = "payments";
const TXN: &str = "payments-writer";
const OTHER_TXN: &str = "ledger-writer";
const GROUP: &str = "payments-group";

fn s(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

fn code(error: ResponseError) -> i16 {
    error.code()
}

fn init(client: &mut RawClient, id: &str, timeout_ms: i32, version: i16) -> InitProducerIdResponse {
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = Some(TransactionalId(s(id)));
    request.transaction_timeout_ms = timeout_ms;
    request.producer_id = ProducerId(-1);
    request.producer_epoch = -1;
    client.request(ApiKey::InitProducerId, version, &request)
}

/// InitProducerId until the coordinator has loaded (and, after a fence,
/// finished the abort): the coordinator errors and CONCURRENT_TRANSACTIONS
/// are retriable.
fn init_retrying(client: &mut RawClient, id: &str) -> (i64, i16) {
    let mut last = 0;
    for _ in 0..200 {
        let response = init(client, id, 60_000, 4);
        if response.error_code == 0 {
            return (response.producer_id.0, response.producer_epoch);
        }
        last = response.error_code;
        // Kafka answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE while
        // it creates `__transaction_state`.
        assert!(
            [
                ResponseError::CoordinatorLoadInProgress,
                ResponseError::ConcurrentTransactions,
                ResponseError::NotCoordinator,
                ResponseError::CoordinatorNotAvailable
            ]
            .map(code)
            .contains(&last),
            "InitProducerId {id}: error {last}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("InitProducerId {id} kept failing with {last}");
}

fn add_partitions(
    client: &mut RawClient,
    id: &str,
    producer: (i64, i16),
    topics: &[(&str, &[i32])],
    version: i16,
) -> Vec<(String, i32, i16)> {
    let mut request = AddPartitionsToTxnRequest::default();
    request.v3_and_below_transactional_id = TransactionalId(s(id));
    request.v3_and_below_producer_id = ProducerId(producer.0);
    request.v3_and_below_producer_epoch = producer.1;
    for (name, partitions) in topics {
        let mut topic = AddPartitionsToTxnTopic::default();
        topic.name = TopicName(s(name));
        topic.partitions = partitions.to_vec();
        request.v3_and_below_topics.push(topic);
    }
    let response: AddPartitionsToTxnResponse =
        client.request(ApiKey::AddPartitionsToTxn, version, &request);
    let mut results = Vec::new();
    for topic in response.results_by_topic_v3_and_below {
        for p in topic.results_by_partition {
            results.push((
                topic.name.to_string(),
                p.partition_index,
                p.partition_error_code,
            ));
        }
    }
    results.sort();
    results
}

fn end_txn(
    client: &mut RawClient,
    id: &str,
    producer: (i64, i16),
    commit: bool,
    version: i16,
) -> i16 {
    let mut request = EndTxnRequest::default();
    request.transactional_id = TransactionalId(s(id));
    request.producer_id = ProducerId(producer.0);
    request.producer_epoch = producer.1;
    request.committed = commit;
    let response: EndTxnResponse = client.request(ApiKey::EndTxn, version, &request);
    response.error_code
}

/// EndTxn v5 (transactions V2): the error code and the producer id and
/// epoch of the producer's next transaction.
fn end_txn_v5(
    client: &mut RawClient,
    id: &str,
    producer: (i64, i16),
    commit: bool,
) -> (i16, i64, i16) {
    let mut request = EndTxnRequest::default();
    request.transactional_id = TransactionalId(s(id));
    request.producer_id = ProducerId(producer.0);
    request.producer_epoch = producer.1;
    request.committed = commit;
    let response: EndTxnResponse = client.request(ApiKey::EndTxn, 5, &request);
    (
        response.error_code,
        response.producer_id.0,
        response.producer_epoch,
    )
}

fn describe(client: &mut RawClient, ids: &[&str]) -> DescribeTransactionsResponse {
    let mut request = DescribeTransactionsRequest::default();
    request.transactional_ids = ids.iter().map(|id| TransactionalId(s(id))).collect();
    client.request(ApiKey::DescribeTransactions, 0, &request)
}

/// Describes `id` until its state is `state` (markers finish after EndTxn
/// is answered).
fn wait_for_state(client: &mut RawClient, id: &str, state: &str) {
    for _ in 0..200 {
        let response = describe(client, &[id]);
        let found = &response.transaction_states[0];
        if found.error_code == 0 && found.transaction_state.as_str() == state {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("{id} never reached {state}");
}

fn list(client: &mut RawClient, states: &[&str]) -> ListTransactionsResponse {
    let mut request = ListTransactionsRequest::default();
    request.state_filters = states.iter().map(|f| s(f)).collect();
    request.duration_filter = -1;
    client.request(ApiKey::ListTransactions, 1, &request)
}

/// TxnOffsetCommit of `offset` for partition 0 of TOPIC; the partitions'
/// error codes.
fn txn_offset_commit(
    client: &mut RawClient,
    id: &str,
    producer: (i64, i16),
    group: &str,
    offset: i64,
    version: i16,
) -> Vec<i16> {
    let mut commit = TxnOffsetCommitRequest::default();
    commit.transactional_id = TransactionalId(s(id));
    commit.group_id = GroupId(s(group));
    commit.producer_id = ProducerId(producer.0);
    commit.producer_epoch = producer.1;
    commit.generation_id = -1;
    let mut partition = TxnOffsetCommitRequestPartition::default();
    partition.partition_index = 0;
    partition.committed_offset = offset;
    let mut topic = TxnOffsetCommitRequestTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.partitions = vec![partition];
    commit.topics = vec![topic];
    let response: TxnOffsetCommitResponse =
        client.request(ApiKey::TxnOffsetCommit, version, &commit);
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// Produce `version` of one transactional record of `producer` (sequence
/// `sequence`) to `partition` of TOPIC; the error code and message.
fn produce(
    client: &mut RawClient,
    id: Option<&str>,
    producer: (i64, i16),
    partition: i32,
    sequence: i32,
    version: i16,
) -> (i16, Option<String>) {
    let record = Record {
        transactional: true,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: producer.0,
        producer_epoch: producer.1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence,
        timestamp: common::kafka::BASE_TIMESTAMP_MS,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: Default::default(),
    };
    let mut data = PartitionProduceData::default();
    data.index = partition;
    data.records = Some(encode_batch(&[record]));
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(s(TOPIC));
    topic.partition_data = vec![data];
    let mut request = ProduceRequest::default();
    request.transactional_id = id.map(|id| TransactionalId(s(id)));
    request.acks = -1;
    request.timeout_ms = 5_000;
    request.topic_data = vec![topic];
    let response: ProduceResponse = client.request(ApiKey::Produce, version, &request);
    let answer = &response.responses[0].partition_responses[0];
    (
        answer.error_code,
        answer.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// OffsetFetch with `require_stable` of partition 0 of TOPIC: the offset
/// and the partition's error code.
fn offset_fetch_stable(client: &mut RawClient, group: &str) -> (i64, i16) {
    let mut topic = OffsetFetchRequestTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.partition_indexes = vec![0];
    let mut request = OffsetFetchRequest::default();
    request.group_id = GroupId(s(group));
    request.topics = Some(vec![topic]);
    request.require_stable = true;
    let response: OffsetFetchResponse = client.request(ApiKey::OffsetFetch, 7, &request);
    let partition = &response.topics[0].partitions[0];
    (partition.committed_offset, partition.error_code)
}

#[test]
fn transaction_apis_answer_like_kafka() {
    let mut broker = Broker::start(BrokerOptions::default().cores(2));
    let mut client = RawClient::connect(&broker.bootstrap());

    let versions = api_versions(&broker.bootstrap());
    let range = |key: ApiKey| common::wire::api_range(&versions, key);
    assert_eq!(range(ApiKey::AddPartitionsToTxn), Some((0, 5)));
    assert_eq!(range(ApiKey::AddOffsetsToTxn), Some((0, 4)));
    assert_eq!(range(ApiKey::EndTxn), Some((0, 5)));
    assert_eq!(range(ApiKey::DescribeTransactions), Some((0, 0)));
    assert_eq!(range(ApiKey::ListTransactions), Some((0, 2)));

    assert_eq!(create_topic(&mut client), 0);

    // FindCoordinator for a transactional id.
    let mut find = FindCoordinatorRequest::default();
    find.key_type = 1;
    find.coordinator_keys = vec![s(TXN), s("")];
    let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 4, &find);
    assert_eq!(found.coordinators[0].error_code, 0);
    assert_eq!(found.coordinators[0].port, i32::from(broker.port()));
    // An empty transactional id has a coordinator too, as Kafka 4.1.1
    // answers.
    assert_eq!(
        (found.coordinators[1].error_code, found.coordinators[1].port),
        (0, i32::from(broker.port()))
    );

    // InitProducerId: timeout bound, new id, re-init bumps the epoch.
    let too_long = init(&mut client, TXN, 900_001, 4);
    assert_eq!(
        too_long.error_code,
        code(ResponseError::InvalidTransactionTimeout)
    );
    let first = init_retrying(&mut client, TXN);
    assert_eq!(first.1, 0);
    let producer = init_retrying(&mut client, TXN);
    assert_eq!(
        producer,
        (first.0, 1),
        "re-init keeps the id and bumps the epoch"
    );

    // EndTxn error table.
    assert_eq!(
        end_txn(&mut client, TXN, producer, true, 3),
        code(ResponseError::InvalidTxnState),
        "no open transaction"
    );
    assert_eq!(
        end_txn(&mut client, TXN, (producer.0 + 1000, 1), true, 3),
        code(ResponseError::InvalidProducerIdMapping)
    );
    assert_eq!(
        end_txn(&mut client, TXN, first, true, 3),
        code(ResponseError::ProducerFenced)
    );
    assert_eq!(
        end_txn(&mut client, TXN, first, true, 1),
        code(ResponseError::InvalidProducerEpoch),
        "v0-1 clients do not know PRODUCER_FENCED"
    );

    // AddPartitionsToTxn: a missing topic spoils the whole request.
    let refused = add_partitions(
        &mut client,
        TXN,
        producer,
        &[(TOPIC, &[0]), ("no-such-topic", &[0])],
        0,
    );
    assert_eq!(
        refused,
        vec![
            (
                "no-such-topic".to_string(),
                0,
                code(ResponseError::UnknownTopicOrPartition)
            ),
            (
                TOPIC.to_string(),
                0,
                code(ResponseError::OperationNotAttempted)
            ),
        ]
    );
    let added = add_partitions(&mut client, TXN, producer, &[(TOPIC, &[0, 3])], 3);
    assert!(added.iter().all(|(_, _, c)| *c == 0), "{added:?}");
    let mut offsets = AddOffsetsToTxnRequest::default();
    offsets.transactional_id = TransactionalId(s(TXN));
    offsets.producer_id = ProducerId(producer.0);
    offsets.producer_epoch = producer.1;
    offsets.group_id = GroupId(s(GROUP));
    let offsets_added: AddOffsetsToTxnResponse =
        client.request(ApiKey::AddOffsetsToTxn, 0, &offsets);
    assert_eq!(offsets_added.error_code, 0);

    // Writes are verified with the coordinator (KIP-890 part 1); the codes
    // are those Kafka 4.1.1 answered to the same requests. TxnOffsetCommit
    // from the fenced epoch is INVALID_PRODUCER_EPOCH at every version, and
    // a client retrying it does not write a warning per request into the
    // broker's log.
    let warnings = |broker: &Broker| {
        let log = broker.log_contents();
        let count = log.lines().filter(|line| line.contains(" WARN ")).count();
        (count, log)
    };
    let (warnings_before, _) = warnings(&broker);
    for version in [0, 3, 4] {
        assert_eq!(
            txn_offset_commit(&mut client, TXN, first, GROUP, 5, version),
            vec![code(ResponseError::InvalidProducerEpoch)],
            "TxnOffsetCommit v{version} from the fenced epoch"
        );
    }
    let (warnings_after, log) = warnings(&broker);
    assert_eq!(
        warnings_after, warnings_before,
        "a fenced producer's offset commits wrote warnings:\n{log}"
    );
    assert_eq!(
        txn_offset_commit(&mut client, TXN, producer, GROUP, 7, 3),
        vec![0]
    );
    assert_eq!(
        txn_offset_commit(
            &mut client,
            "never-initialized",
            (first.0 + 99, 0),
            GROUP,
            1,
            3
        ),
        vec![code(ResponseError::InvalidProducerIdMapping)]
    );
    // Produce: a partition of the transaction takes the batch; one never
    // added, or the fenced epoch, is refused before anything is written.
    assert_eq!(
        produce(&mut client, Some(TXN), producer, 0, 0, 9),
        (0, None)
    );
    assert_eq!(
        produce(&mut client, Some(TXN), producer, 1, 0, 9),
        (
            code(ResponseError::InvalidTxnState),
            Some("Partition was not added to the transaction".to_string())
        )
    );
    assert_eq!(
        produce(&mut client, Some(TXN), producer, 1, 0, 11).0,
        code(ResponseError::TransactionAbortable),
        "Produce v11 clients know TRANSACTION_ABORTABLE"
    );
    assert_eq!(
        produce(&mut client, Some(TXN), first, 3, 0, 9).0,
        code(ResponseError::InvalidProducerEpoch)
    );
    assert_eq!(
        produce(&mut client, None, producer, 3, 0, 9).0,
        code(ResponseError::TransactionalIdAuthorizationFailed),
        "transactional records without a transactional id"
    );

    let described = describe(&mut client, &[TXN, "unknown-id"]);
    let open = &described.transaction_states[0];
    assert_eq!(open.error_code, 0);
    assert_eq!(open.transaction_state.as_str(), "Ongoing");
    assert_eq!(open.transaction_timeout_ms, 60_000);
    assert_eq!((open.producer_id.0, open.producer_epoch), producer);
    assert!(open.transaction_start_time_ms > 0);
    let mut topics: Vec<(String, Vec<i32>)> = open
        .topics
        .iter()
        .map(|t| (t.topic.to_string(), t.partitions.clone()))
        .collect();
    topics.sort();
    assert_eq!(topics.len(), 2, "{topics:?}");
    assert_eq!(topics[0].0, "__consumer_offsets");
    assert_eq!(topics[1], (TOPIC.to_string(), vec![0, 3]));
    assert_eq!(
        described.transaction_states[1].error_code,
        code(ResponseError::TransactionalIdNotFound)
    );

    // Commit it, and leave a second id's transaction open.
    assert_eq!(end_txn(&mut client, TXN, producer, true, 3), 0);
    wait_for_state(&mut client, TXN, "CompleteCommit");
    assert_eq!(
        end_txn(&mut client, TXN, producer, true, 3),
        0,
        "a retried commit succeeds"
    );
    assert_eq!(
        end_txn(&mut client, TXN, producer, false, 3),
        code(ResponseError::InvalidTxnState)
    );
    let other = init_retrying(&mut client, OTHER_TXN);
    let added = add_partitions(&mut client, OTHER_TXN, other, &[(TOPIC, &[1])], 3);
    assert_eq!(added, vec![(TOPIC.to_string(), 1, 0)]);

    // After the commit, a late batch of the committed transaction would
    // open a transaction no marker closes: refused. So are offsets of a
    // transaction without AddOffsetsToTxn (TRANSACTION_ABORTABLE from v4),
    // which would otherwise stay pending for good.
    assert_eq!(
        produce(&mut client, Some(TXN), producer, 0, 1, 9).0,
        code(ResponseError::InvalidTxnState)
    );
    assert_eq!(
        txn_offset_commit(&mut client, OTHER_TXN, other, "ledger-group", 9, 3),
        vec![code(ResponseError::InvalidTxnState)]
    );
    assert_eq!(
        txn_offset_commit(&mut client, OTHER_TXN, other, "ledger-group", 9, 4),
        vec![code(ResponseError::TransactionAbortable)]
    );
    assert_eq!(offset_fetch_stable(&mut client, GROUP), (7, 0));
    assert_eq!(offset_fetch_stable(&mut client, "ledger-group"), (-1, 0));

    let listed = list(&mut client, &["Ongoing", "Sleeping"]);
    assert_eq!(listed.error_code, 0);
    assert_eq!(
        listed
            .unknown_state_filters
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>(),
        vec!["Sleeping".to_string()]
    );
    let ongoing: Vec<String> = listed
        .transaction_states
        .iter()
        .map(|t| t.transactional_id.to_string())
        .collect();
    assert_eq!(ongoing, vec![OTHER_TXN.to_string()]);
    assert_eq!(list(&mut client, &[]).transaction_states.len(), 2);

    // The coordinator's state survives a SIGKILL.
    drop(client);
    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&broker.bootstrap());
    wait_for_state(&mut client, TXN, "CompleteCommit");
    wait_for_state(&mut client, OTHER_TXN, "Ongoing");
    assert_eq!(end_txn(&mut client, OTHER_TXN, other, true, 3), 0);
    wait_for_state(&mut client, OTHER_TXN, "CompleteCommit");
    let next = init_retrying(&mut client, TXN);
    assert_eq!(
        next,
        (producer.0, producer.1 + 1),
        "epochs continue after restart"
    );
    broker.terminate();
}

/// FindCoordinator of `key` (key type 0 group, 1 transactional id) until
/// it answers: Kafka creates `__consumer_offsets` and `__transaction_state`
/// on it, as clients send it first.
fn wait_for_coordinator(client: &mut RawClient, key_type: i8, key: &str) {
    let mut find = FindCoordinatorRequest::default();
    find.key_type = key_type;
    find.coordinator_keys = vec![s(key)];
    for _ in 0..200 {
        let found: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 4, &find);
        if found.coordinators[0].error_code == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no coordinator for {key}");
}

/// Creates TOPIC with 4 partitions (a reference broker may have it
/// already).
/// Creates TOPIC with four partitions; its error code.
fn create_topic(client: &mut RawClient) -> i16 {
    let mut create = CreateTopicsRequest::default();
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.num_partitions = 4;
    topic.replication_factor = 1;
    create.topics.push(topic);
    create.timeout_ms = 10_000;
    let created: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 5, &create);
    created.topics[0].error_code
}

/// Creates TOPIC unless it exists (the reference broker keeps it between
/// runs).
fn ensure_topic(client: &mut RawClient) {
    let error = create_topic(client);
    assert!(
        [0, code(ResponseError::TopicAlreadyExists)].contains(&error),
        "{error}"
    );
}

/// ApiVersions `version` on a fresh connection: the supported features as
/// (name, min, max), the finalized ones as (name, level), and the epoch.
#[allow(clippy::type_complexity)]
fn features(bootstrap: &str, version: i16) -> (Vec<(String, i16, i16)>, Vec<(String, i16)>, i64) {
    let mut client = RawClient::connect(bootstrap);
    let mut request = ApiVersionsRequest::default();
    request.client_software_name = s("ringbroker-tests");
    request.client_software_version = s("1");
    let response: ApiVersionsResponse = client.request(ApiKey::ApiVersions, version, &request);
    assert_eq!(response.error_code, 0);
    let supported = response
        .supported_features
        .iter()
        .map(|f| (f.name.to_string(), f.min_version, f.max_version))
        .collect();
    let finalized = response
        .finalized_features
        .iter()
        .map(|f| {
            assert_eq!(f.min_version_level, f.max_version_level, "{f:?}");
            (f.name.to_string(), f.max_version_level)
        })
        .collect();
    (supported, finalized, response.finalized_features_epoch)
}

/// The state, producer id and epoch DescribeTransactions shows for `id`,
/// and its partitions by topic, sorted.
#[allow(clippy::type_complexity)]
fn described(client: &mut RawClient, id: &str) -> (String, i64, i16, Vec<(String, Vec<i32>)>) {
    let response = describe(client, &[id]);
    let found = &response.transaction_states[0];
    assert_eq!(found.error_code, 0, "{id}");
    let mut topics: Vec<(String, Vec<i32>)> = found
        .topics
        .iter()
        .map(|t| (t.topic.to_string(), t.partitions.clone()))
        .collect();
    topics.sort();
    (
        found.transaction_state.to_string(),
        found.producer_id.0,
        found.producer_epoch,
        topics,
    )
}

/// Goal: transactions V2 (KIP-890 part 2) as Kafka 4.1 runs them, which
/// Java clients 4.x use once a broker finalizes `transaction.version` 2:
/// ApiVersions v3+ finalizes it (v3 leaves out supported ranges starting at
/// 0) with an epoch of 0 or more, and advertises EndTxn v5, TxnOffsetCommit
/// v5 and Produce v12. A transactional Produce v12 or TxnOffsetCommit v5
/// adds its partition to the transaction itself (no AddPartitionsToTxn or
/// AddOffsetsToTxn) and starts one if none is open. Every EndTxn v5 bumps
/// the epoch and answers the producer id and epoch of the next transaction;
/// a retry with the old epoch gets the same answer; a late batch of the
/// finished transaction is INVALID_PRODUCER_EPOCH; a commit without a
/// transaction is INVALID_TXN_STATE while an abort without one is legal (a
/// bump). Aborted offsets stay invisible. A V1 client (AddPartitionsToTxn
/// v3, Produce v11, EndTxn v4) on the same id keeps its epoch. A
/// transaction past its timeout is aborted with one bump, and the V2
/// producer recovers by aborting with its old epoch, as in Kafka.
///
/// Method: requests on the wire. Every answer asserted up to the restart is
/// what Kafka 4.1.1 (KRaft, single node, default features) answered to the
/// same requests: run with RINGBROKER_TXN_V2_REFERENCE=host:port to send
/// them to a Kafka instead. Then (own broker only) the bumped epoch and a
/// committed V2 transaction survive kill -9.
#[test]
fn transactions_v2_bump_the_epoch_of_every_transaction_like_kafka() {
    let reference = std::env::var("RINGBROKER_TXN_V2_REFERENCE").ok();
    let mut broker = reference
        .is_none()
        .then(|| Broker::start(BrokerOptions::default().cores(2)));
    let bootstrap = reference.unwrap_or_else(|| broker.as_ref().expect("a broker").bootstrap());
    let mut client = RawClient::connect(&bootstrap);

    // Features: transaction.version 2 is finalized.
    let (supported, finalized, epoch) = features(&bootstrap, 4);
    assert!(epoch >= 0, "the Java client ignores features of epoch -1");
    assert!(
        supported.contains(&("transaction.version".to_string(), 0, 2)),
        "{supported:?}"
    );
    assert!(
        finalized.contains(&("transaction.version".to_string(), 2)),
        "{finalized:?}"
    );
    assert!(
        finalized.contains(&("group.version".to_string(), 1)),
        "{finalized:?}"
    );
    assert!(
        finalized.contains(&("metadata.version".to_string(), 27)),
        "{finalized:?}"
    );
    let (supported, finalized_v3, _) = features(&bootstrap, 3);
    assert!(
        supported.iter().all(|(_, min, _)| *min > 0),
        "v3 leaves out ranges from 0: {supported:?}"
    );
    assert!(supported
        .iter()
        .any(|(name, _, _)| name == "metadata.version"));
    assert_eq!(finalized_v3, finalized);
    let versions = api_versions(&bootstrap);
    let max = |key: ApiKey| common::wire::api_range(&versions, key).map_or(-1, |(_, max)| max);
    assert!(max(ApiKey::EndTxn) >= 5);
    assert!(max(ApiKey::TxnOffsetCommit) >= 5);
    assert!(max(ApiKey::Produce) >= 12);

    ensure_topic(&mut client);
    let txn = unique("v2-writer");
    let group = unique("v2-group");
    wait_for_coordinator(&mut client, 1, &txn);
    wait_for_coordinator(&mut client, 0, &group);
    let (pid, first_epoch) = init_retrying(&mut client, &txn);
    assert_eq!(first_epoch, 0);

    // A transactional Produce v12 starts the transaction by itself.
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 0), 0, 0, 12),
        (0, None)
    );
    assert_eq!(
        described(&mut client, &txn),
        (
            "Ongoing".to_string(),
            pid,
            0,
            vec![(TOPIC.to_string(), vec![0])]
        )
    );
    // Commit: the next transaction's epoch comes back.
    assert_eq!(end_txn_v5(&mut client, &txn, (pid, 0), true), (0, pid, 1));
    wait_for_state(&mut client, &txn, "CompleteCommit");
    assert_eq!(described(&mut client, &txn).2, 1);
    assert_eq!(
        end_txn_v5(&mut client, &txn, (pid, 0), true),
        (0, pid, 1),
        "a retry with the old epoch gets the same answer"
    );
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 0), 0, 1, 12).0,
        code(ResponseError::InvalidProducerEpoch),
        "a late batch of the committed transaction is fenced"
    );
    assert_eq!(
        end_txn_v5(&mut client, &txn, (pid, 1), true).0,
        code(ResponseError::InvalidTxnState),
        "a commit without a transaction"
    );
    assert_eq!(
        end_txn_v5(&mut client, &txn, (pid, 1), false),
        (0, pid, 2),
        "an abort without a transaction bumps the epoch"
    );
    wait_for_state(&mut client, &txn, "CompleteAbort");
    assert_eq!(
        end_txn_v5(&mut client, &txn, (pid, 0), false).0,
        code(ResponseError::ProducerFenced)
    );

    // Offsets join the transaction by themselves too; aborted, they never
    // show.
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 2), 1, 0, 12),
        (0, None)
    );
    // The group's coordinator may still be loading (a client retries).
    let mut committed = Vec::new();
    for _ in 0..200 {
        committed = txn_offset_commit(&mut client, &txn, (pid, 2), &group, 5, 5);
        let loading = [
            ResponseError::NotCoordinator,
            ResponseError::CoordinatorNotAvailable,
            ResponseError::CoordinatorLoadInProgress,
        ]
        .map(code);
        if !committed.iter().any(|c| loading.contains(c)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(committed, vec![0]);
    let (state, _, _, topics) = described(&mut client, &txn);
    assert_eq!(state, "Ongoing");
    assert_eq!(topics.len(), 2, "{topics:?}");
    assert_eq!(topics[0].0, "__consumer_offsets");
    assert_eq!(topics[1], (TOPIC.to_string(), vec![1]));
    assert_eq!(end_txn_v5(&mut client, &txn, (pid, 2), false), (0, pid, 3));
    wait_for_state(&mut client, &txn, "CompleteAbort");
    assert_eq!(offset_fetch_stable(&mut client, &group), (-1, 0));
    // Committed, they do.
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 3), 0, 0, 12),
        (0, None)
    );
    assert_eq!(
        txn_offset_commit(&mut client, &txn, (pid, 3), &group, 6, 5),
        vec![0]
    );
    assert_eq!(end_txn_v5(&mut client, &txn, (pid, 3), true), (0, pid, 4));
    wait_for_state(&mut client, &txn, "CompleteCommit");
    assert_eq!(offset_fetch_stable(&mut client, &group), (6, 0));

    // A V1 client on the same id keeps its epoch.
    let added = add_partitions(&mut client, &txn, (pid, 4), &[(TOPIC, &[2])], 3);
    assert_eq!(added, vec![(TOPIC.to_string(), 2, 0)]);
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 4), 2, 0, 11),
        (0, None)
    );
    assert_eq!(end_txn(&mut client, &txn, (pid, 4), true, 4), 0);
    wait_for_state(&mut client, &txn, "CompleteCommit");
    assert_eq!(described(&mut client, &txn).2, 4);
    assert_eq!(end_txn(&mut client, &txn, (pid, 4), true, 4), 0);

    // A transaction past its timeout is aborted with one bump; the V2
    // producer learns the new epoch by aborting with its old one.
    let slow = unique("v2-slow");
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = Some(TransactionalId(s(&slow)));
    request.transaction_timeout_ms = 1_000;
    request.producer_id = ProducerId(-1);
    request.producer_epoch = -1;
    let slow_producer: InitProducerIdResponse = client.request(ApiKey::InitProducerId, 4, &request);
    assert_eq!(slow_producer.error_code, 0);
    let slow_pid = slow_producer.producer_id.0;
    assert_eq!(
        produce(&mut client, Some(&slow), (slow_pid, 0), 3, 0, 12),
        (0, None)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while described(&mut client, &slow).0 != "CompleteAbort" {
        assert!(std::time::Instant::now() < deadline, "never aborted");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(described(&mut client, &slow).2, 1);
    assert_eq!(
        produce(&mut client, Some(&slow), (slow_pid, 0), 3, 1, 12).0,
        code(ResponseError::InvalidProducerEpoch)
    );
    assert_eq!(
        end_txn_v5(&mut client, &slow, (slow_pid, 0), true).0,
        code(ResponseError::InvalidTxnState),
        "its commit cannot succeed"
    );
    assert_eq!(
        end_txn_v5(&mut client, &slow, (slow_pid, 0), false),
        (0, slow_pid, 1),
        "its abort learns the epoch"
    );
    assert_eq!(
        produce(&mut client, Some(&slow), (slow_pid, 1), 3, 0, 12),
        (0, None)
    );
    assert_eq!(
        end_txn_v5(&mut client, &slow, (slow_pid, 1), true),
        (0, slow_pid, 2)
    );
    wait_for_state(&mut client, &slow, "CompleteCommit");

    let Some(broker) = broker.as_mut() else {
        return;
    };
    // Own broker: a V2 commit answered just before kill -9 completes after
    // the restart, at the bumped epoch, which still fences the old one.
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 4), 0, 0, 12),
        (0, None)
    );
    assert_eq!(end_txn_v5(&mut client, &txn, (pid, 4), true), (0, pid, 5));
    drop(client);
    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&broker.bootstrap());
    wait_for_state(&mut client, &txn, "CompleteCommit");
    assert_eq!(described(&mut client, &txn).2, 5);
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 4), 0, 1, 12).0,
        code(ResponseError::InvalidProducerEpoch)
    );
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 5), 0, 0, 12),
        (0, None)
    );
    assert_eq!(end_txn_v5(&mut client, &txn, (pid, 5), true), (0, pid, 6));
    wait_for_state(&mut client, &txn, "CompleteCommit");
}

/// UpdateFeatures `version` of (feature, level, upgrade type): the top-level
/// error code and message, and the per-feature results.
#[allow(clippy::type_complexity)]
fn update_features(
    client: &mut RawClient,
    version: i16,
    updates: &[(&str, i16, i8)],
    validate_only: bool,
) -> (i16, Option<String>, Vec<(String, i16, Option<String>)>) {
    let mut request = UpdateFeaturesRequest::default();
    request.timeout_ms = 10_000;
    request.validate_only = validate_only;
    for (name, level, upgrade_type) in updates {
        let mut update = FeatureUpdateKey::default();
        update.feature = s(name);
        update.max_version_level = *level;
        update.upgrade_type = *upgrade_type;
        request.feature_updates.push(update);
    }
    let response: UpdateFeaturesResponse =
        client.request(ApiKey::UpdateFeatures, version, &request);
    (
        response.error_code,
        response.error_message.map(|m| m.to_string()),
        response
            .results
            .iter()
            .map(|r| {
                (
                    r.feature.to_string(),
                    r.error_code,
                    r.error_message.as_ref().map(|m| m.to_string()),
                )
            })
            .collect(),
    )
}

/// Goal: `kafka-features upgrade/downgrade` (UpdateFeatures) changes
/// `transaction.version` as in Kafka 4.1: refusals carry Kafka's messages
/// (unknown upgrade type, negative level, a level or feature this node does
/// not support, a downgrade without a downgrade type, an upgrade with
/// one), the first refusal fails the whole request with no results,
/// validate-only changes nothing, v0-1 list each update with "NONE".
/// A downgrade shows in ApiVersions at a higher epoch (level 0 is no
/// longer listed); EndTxn v5 still bumps the epoch (the request version
/// decides, as in Kafka); an upgrade restores level 2. The level survives
/// kill -9, as does group.version 0. Levels Kafka supports and this broker
/// does not (other metadata.version levels, kraft.version 1) are refused.
///
/// Method: requests on the wire; the answers up to the restart are what
/// Kafka 4.1.1 answered (RINGBROKER_TXN_V2_REFERENCE=host:port runs them
/// against a Kafka, and restores its level 2 at the end; with
/// `--test-threads=1`, since the transactions V2 test wants level 2 there).
#[test]
fn update_features_changes_the_transaction_version_like_kafka() {
    let reference = std::env::var("RINGBROKER_TXN_V2_REFERENCE").ok();
    let mut broker = reference
        .is_none()
        .then(|| Broker::start(BrokerOptions::default().arg("--node-id", 1)));
    let bootstrap = reference.unwrap_or_else(|| broker.as_ref().expect("a broker").bootstrap());
    let mut client = RawClient::connect(&bootstrap);
    const UPGRADE: i8 = 1;
    const SAFE: i8 = 2;
    const UNSAFE: i8 = 3;
    let invalid = code(ResponseError::InvalidUpdateVersion);
    let failed = |message: &str| {
        (
            invalid,
            Some(format!(
                "The update failed for all features since the following feature had an \
                 error: {message}"
            )),
            vec![],
        )
    };
    for (updates, message) in [
        (
            vec![("transaction.version", 1, 0)],
            "Invalid update version 1 for feature transaction.version. The controller does \
             not support the given upgrade type.",
        ),
        (
            vec![("transaction.version", -1, UNSAFE)],
            "Invalid update version -1 for feature transaction.version. A feature version \
             cannot be less than 0.",
        ),
        (
            vec![("transaction.version", 3, UPGRADE)],
            "Invalid update version 3 for feature transaction.version. Local controller 1 \
             only supports versions 0-2",
        ),
        (
            vec![
                ("transaction.version", 1, SAFE),
                ("foo.version", 1, UPGRADE),
            ],
            "Invalid update version 1 for feature foo.version. Local controller 1 does not \
             support this feature.",
        ),
        (
            vec![("transaction.version", 1, UPGRADE)],
            "Invalid update version 1 for feature transaction.version. Can't downgrade the \
             version of this feature without setting the upgrade type to either safe or \
             unsafe downgrade.",
        ),
    ] {
        for version in [1, 2] {
            assert_eq!(
                update_features(&mut client, version, &updates, true),
                failed(message),
                "{updates:?} v{version}"
            );
        }
    }
    assert_eq!(
        update_features(&mut client, 1, &[("transaction.version", 1, SAFE)], true),
        (
            0,
            None,
            vec![(
                "transaction.version".to_string(),
                0,
                Some("NONE".to_string())
            )]
        )
    );
    assert_eq!(
        update_features(&mut client, 2, &[("transaction.version", 2, UPGRADE)], true),
        (0, None, vec![])
    );
    // A refusal changes nothing; neither does asking for the current level.
    assert_eq!(
        update_features(
            &mut client,
            2,
            &[
                ("transaction.version", 0, SAFE),
                ("transaction.version", 3, UPGRADE)
            ],
            false
        ),
        failed(
            "Invalid update version 3 for feature transaction.version. Local controller 1 \
             only supports versions 0-2"
        ),
        "a feature named twice takes its last update"
    );
    assert_eq!(
        update_features(
            &mut client,
            2,
            &[("transaction.version", 2, UPGRADE)],
            false
        ),
        (0, None, vec![])
    );
    let (_, before, epoch_before) = features(&bootstrap, 4);
    assert!(before.contains(&("transaction.version".to_string(), 2)));

    // Downgrade to 1: listed at a higher epoch; EndTxn v5 still bumps.
    assert_eq!(
        update_features(&mut client, 2, &[("transaction.version", 1, SAFE)], false),
        (0, None, vec![])
    );
    let epoch = transaction_version_shown(&bootstrap, 1);
    assert!(epoch > epoch_before, "{epoch} after {epoch_before}");
    assert_eq!(
        update_features(&mut client, 2, &[("transaction.version", 2, SAFE)], true),
        failed(
            "Invalid update version 2 for feature transaction.version. Can't downgrade to a \
             newer version."
        )
    );
    ensure_topic(&mut client);
    let txn = unique("tv1-writer");
    wait_for_coordinator(&mut client, 1, &txn);
    let (pid, _) = init_retrying(&mut client, &txn);
    assert_eq!(
        produce(&mut client, Some(&txn), (pid, 0), 0, 0, 12),
        (0, None)
    );
    assert_eq!(end_txn_v5(&mut client, &txn, (pid, 0), true), (0, pid, 1));
    wait_for_state(&mut client, &txn, "CompleteCommit");

    // Down to 0: no longer listed; back up to 2.
    assert_eq!(
        update_features(&mut client, 2, &[("transaction.version", 0, UNSAFE)], false),
        (0, None, vec![])
    );
    transaction_version_shown(&bootstrap, 0);
    if let Some(broker) = broker.as_mut() {
        // Own broker: the level survives kill -9.
        drop(client);
        broker.kill9();
        broker.restart();
        client = RawClient::connect(&broker.bootstrap());
        transaction_version_shown(&broker.bootstrap(), 0);
        // group.version 0 (the consumer group protocol off, as Kafka 4.1.1
        // allows) survives kill -9 too, and 1 comes back.
        let group_version_shown = |bootstrap: &str| {
            let (_, finalized, _) = features(bootstrap, 4);
            finalized
                .iter()
                .find(|(name, _)| name == "group.version")
                .map_or(0, |(_, level)| *level)
        };
        assert_eq!(
            update_features(&mut client, 2, &[("group.version", 0, SAFE)], false),
            (0, None, vec![])
        );
        drop(client);
        broker.kill9();
        broker.restart();
        client = RawClient::connect(&broker.bootstrap());
        assert_eq!(group_version_shown(&broker.bootstrap()), 0);
        assert_eq!(
            update_features(&mut client, 2, &[("group.version", 1, UPGRADE)], false),
            (0, None, vec![])
        );
        assert_eq!(group_version_shown(&broker.bootstrap()), 1);
        // What Kafka allows and this broker cannot run at is refused.
        for (name, level, upgrade_type, supported) in [
            ("metadata.version", 26, SAFE, "only supports versions 27"),
            (
                "kraft.version",
                1,
                UPGRADE,
                "does not support this feature.",
            ),
        ] {
            assert_eq!(
                update_features(&mut client, 2, &[(name, level, upgrade_type)], true),
                failed(&format!(
                    "Invalid update version {level} for feature {name}. Local controller 1 \
                     {supported}"
                ))
            );
        }
    }
    assert_eq!(
        update_features(
            &mut client,
            0,
            &[("transaction.version", 2, UPGRADE)],
            false
        ),
        (
            0,
            None,
            vec![(
                "transaction.version".to_string(),
                0,
                Some("NONE".to_string())
            )]
        )
    );
    transaction_version_shown(&bootstrap_of(&broker, &bootstrap), 2);
}

/// Waits until ApiVersions finalizes `transaction.version` at `level` (0:
/// not listed); Kafka's brokers apply a change shortly after answering it.
/// Returns the features' epoch.
fn transaction_version_shown(bootstrap: &str, level: i16) -> i64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, finalized, epoch) = features(bootstrap, 4);
        let shown = finalized
            .iter()
            .find(|(name, _)| name == "transaction.version")
            .map_or(0, |(_, level)| *level);
        if shown == level {
            return epoch;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "transaction.version {shown}, not {level}: {finalized:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The bootstrap of `broker` (it moves on restart), else `reference`.
fn bootstrap_of(broker: &Option<Broker>, reference: &str) -> String {
    broker
        .as_ref()
        .map_or_else(|| reference.to_string(), |b| b.bootstrap())
}

/// Goal: a transactional id idle for `transactional.id.expiration.ms` is
/// removed (tombstoned): DescribeTransactions then answers
/// TRANSACTIONAL_ID_NOT_FOUND, also after a restart, and InitProducerId
/// starts it over with a new producer id.
#[test]
fn idle_transactional_ids_expire() {
    let mut broker = Broker::start(
        BrokerOptions::default()
            .arg("--transactional-id-expiration-ms", 1000)
            .arg(
                "--transaction-abort-timed-out-transaction-cleanup-interval-ms",
                200,
            )
            .arg(
                "--transaction-remove-expired-transaction-cleanup-interval-ms",
                200,
            ),
    );
    let mut client = RawClient::connect(&broker.bootstrap());
    let first = init_retrying(&mut client, TXN);
    wait_for_state(&mut client, TXN, "Empty");
    let mut gone = false;
    for _ in 0..200 {
        let found = describe(&mut client, &[TXN]);
        if found.transaction_states[0].error_code == code(ResponseError::TransactionalIdNotFound) {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(gone, "{TXN} did not expire");
    drop(client);
    broker.kill9();
    broker.restart();
    let mut client = RawClient::connect(&broker.bootstrap());
    let again = init_retrying(&mut client, TXN);
    assert_ne!(
        again.0, first.0,
        "an expired id starts over with a new producer id"
    );
    assert_eq!(again.1, 0);
    broker.terminate();
}

/// One transaction of a broker's AddPartitionsToTxn (v4+): transactional
/// id, producer id and epoch, verify only, partitions by topic.
type BrokerTxn<'a> = (&'a str, (i64, i16), bool, &'a [(&'a str, &'a [i32])]);

/// AddPartitionsToTxn v4+ as a partition leader sends it: the top-level
/// error and each (transactional id, topic, partition, error), sorted.
#[allow(clippy::type_complexity)]
fn leader_add_partitions(
    client: &mut RawClient,
    version: i16,
    transactions: &[BrokerTxn],
) -> (i16, Vec<(String, String, i32, i16)>) {
    use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction;
    let mut request = AddPartitionsToTxnRequest::default();
    for &(id, (producer_id, producer_epoch), verify_only, topics) in transactions {
        let mut transaction = AddPartitionsToTxnTransaction::default();
        transaction.transactional_id = TransactionalId(s(id));
        transaction.producer_id = ProducerId(producer_id);
        transaction.producer_epoch = producer_epoch;
        transaction.verify_only = verify_only;
        for (name, partitions) in topics {
            let mut topic = AddPartitionsToTxnTopic::default();
            topic.name = TopicName(s(name));
            topic.partitions = partitions.to_vec();
            transaction.topics.push(topic);
        }
        request.transactions.push(transaction);
    }
    let response: AddPartitionsToTxnResponse =
        client.request(ApiKey::AddPartitionsToTxn, version, &request);
    let mut results = Vec::new();
    for transaction in response.results_by_transaction {
        for topic in transaction.topic_results {
            for p in topic.results_by_partition {
                results.push((
                    transaction.transactional_id.to_string(),
                    topic.name.to_string(),
                    p.partition_index,
                    p.partition_error_code,
                ));
            }
        }
    }
    results.sort();
    (response.error_code, results)
}

/// Goal: AddPartitionsToTxn v4-5, which Kafka 4.1 offers and its partition
/// leaders send to a transaction coordinator, answers batches of
/// transactions as Kafka 4.1.1 answered the same requests: verifying, a
/// partition in the open transaction is NONE and one outside it (or any,
/// with no transaction open) TRANSACTION_ABORTABLE at both versions; an
/// unknown transactional id INVALID_PRODUCER_ID_MAPPING, a newer epoch
/// PRODUCER_FENCED, a missing topic or partition UNKNOWN_TOPIC_OR_PARTITION
/// with the transaction's other partitions OPERATION_NOT_ATTEMPTED, an empty
/// id INVALID_REQUEST; adding (as transactions V2's implicit add, at both
/// versions) puts the partitions into the transaction, starting one where
/// none was open, the epoch unchanged.
///
/// Method: requests on the wire, run with RINGBROKER_TXN_V2_REFERENCE to
/// send them to a Kafka instead.
#[test]
fn partition_leaders_verify_and_add_batches_of_transactions_like_kafka() {
    let reference = std::env::var("RINGBROKER_TXN_V2_REFERENCE").ok();
    let broker = reference
        .is_none()
        .then(|| Broker::start(BrokerOptions::default().cores(2)));
    let bootstrap = reference.unwrap_or_else(|| broker.as_ref().expect("a broker").bootstrap());
    let mut client = RawClient::connect(&bootstrap);
    let versions = api_versions(&bootstrap);
    assert_eq!(
        common::wire::api_range(&versions, ApiKey::AddPartitionsToTxn),
        Some((0, 5))
    );
    ensure_topic(&mut client);
    let (x, y, z) = (unique("leader-x"), unique("leader-y"), unique("leader-z"));
    let (x, y, z) = (x.as_str(), y.as_str(), z.as_str());
    // (FindCoordinator is what makes a Kafka create `__transaction_state`.)
    wait_for_coordinator(&mut client, 1, x);
    let px = init_retrying(&mut client, x);
    let py = init_retrying(&mut client, y);
    let pz = init_retrying(&mut client, z);
    // X's transaction holds partition 0 (added by a V2 write); Y and Z
    // have none open. (A reference Kafka may still be electing the new
    // topic's leader.)
    let mut written = produce(&mut client, Some(x), px, 0, 0, 12).0;
    for _ in 0..100 {
        if written != code(ResponseError::NotLeaderOrFollower) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        written = produce(&mut client, Some(x), px, 0, 0, 12).0;
    }
    assert_eq!(written, 0);
    let ok = 0;
    let abortable = code(ResponseError::TransactionAbortable);
    let unknown = code(ResponseError::UnknownTopicOrPartition);
    let r = |id: &str, topic: &str, partition: i32, error: i16| {
        (id.to_string(), topic.to_string(), partition, error)
    };
    let mut expected_verified = vec![
        r(x, TOPIC, 0, ok),
        r(x, TOPIC, 1, abortable),
        r(
            "never-initialized",
            TOPIC,
            0,
            code(ResponseError::InvalidProducerIdMapping),
        ),
        r(y, TOPIC, 0, abortable),
        r(z, TOPIC, 0, code(ResponseError::ProducerFenced)),
    ];
    expected_verified.sort();
    for version in [4, 5] {
        let verified = leader_add_partitions(
            &mut client,
            version,
            &[
                (x, px, true, &[(TOPIC, &[0, 1])]),
                ("never-initialized", (12_345, 0), true, &[(TOPIC, &[0])]),
                (y, py, true, &[(TOPIC, &[0])]),
                (z, (pz.0, pz.1 + 1), true, &[(TOPIC, &[0])]),
            ],
        );
        assert_eq!(verified, (0, expected_verified.clone()), "v{version}");
        let missing = leader_add_partitions(
            &mut client,
            version,
            &[
                (x, px, true, &[("missing-topic", &[0]), (TOPIC, &[0])]),
                (y, py, true, &[(TOPIC, &[7])]),
            ],
        );
        let not_attempted = code(ResponseError::OperationNotAttempted);
        assert_eq!(
            missing,
            (
                0,
                vec![
                    r(x, "missing-topic", 0, unknown),
                    r(x, TOPIC, 0, not_attempted),
                    r(y, TOPIC, 7, unknown),
                ]
            ),
            "v{version}"
        );
    }

    // Adding: v5 to X's open transaction and Y's none, v4 to Z's none.
    let added = leader_add_partitions(
        &mut client,
        5,
        &[
            (x, px, false, &[(TOPIC, &[1])]),
            (y, py, false, &[(TOPIC, &[2])]),
        ],
    );
    assert_eq!(added, (0, vec![r(x, TOPIC, 1, ok), r(y, TOPIC, 2, ok)]));
    let added = leader_add_partitions(&mut client, 4, &[(z, pz, false, &[(TOPIC, &[2])])]);
    assert_eq!(added, (0, vec![r(z, TOPIC, 2, ok)]));
    let ongoing = |partitions: Vec<i32>, producer: (i64, i16)| {
        (
            "Ongoing".to_string(),
            producer.0,
            producer.1,
            vec![(TOPIC.to_string(), partitions)],
        )
    };
    let mut seen = described(&mut client, x);
    seen.3[0].1.sort();
    assert_eq!(seen, ongoing(vec![0, 1], px));
    assert_eq!(described(&mut client, y), ongoing(vec![2], py));
    assert_eq!(described(&mut client, z), ongoing(vec![2], pz));
    let verified = leader_add_partitions(&mut client, 5, &[(x, px, true, &[(TOPIC, &[1, 2])])]);
    assert_eq!(
        verified,
        (0, vec![r(x, TOPIC, 1, ok), r(x, TOPIC, 2, abortable)])
    );

    // An empty transactional id, verifying or adding.
    let invalid = code(ResponseError::InvalidRequest);
    for verify_only in [true, false] {
        let answer = leader_add_partitions(
            &mut client,
            5,
            &[("", (1, 0), verify_only, &[(TOPIC, &[0])])],
        );
        assert_eq!(answer, (0, vec![r("", TOPIC, 0, invalid)]));
    }

    // The transactions end as any do.
    for (id, producer) in [(x, px), (y, py), (z, pz)] {
        assert_eq!(end_txn_v5(&mut client, id, producer, false).0, 0, "{id}");
    }
}
