//! AddPartitionsToTxn (key 24). Versions 0-3 come from clients: one
//! transaction, whose partitions are added to the producer's transaction on
//! its coordinator. Versions 4-5 (KIP-890) come from partition leaders: a
//! batch of transactions, each either verified (`verify_only`: is the
//! producer's transaction open and holding these partitions?) or added to
//! as transactions V2's implicit add, which may start a transaction (Kafka's
//! `transactionVersionForAddPartitionsToTxn`: TV_2 from v4). Partitions of topics that do not exist get
//! UNKNOWN_TOPIC_OR_PARTITION and the transaction's others
//! OPERATION_NOT_ATTEMPTED, as Kafka answers; otherwise every partition
//! gets the coordinator's answer (a verified partition its own: one not in
//! the transaction is TRANSACTION_ABORTABLE, as Kafka 4.1 answers both
//! broker versions, measured). An empty transactional id is INVALID_REQUEST.
//!
//! Authorization, as in Kafka: WRITE on the transactional id, else every
//! partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic
//! (never granted for internal topics), else its partitions are
//! TOPIC_AUTHORIZATION_FAILED, checked before existence and failing the
//! transaction as an unknown partition does. Broker versions need
//! CLUSTER_ACTION, else a top-level CLUSTER_AUTHORIZATION_FAILED, and are
//! not checked per transaction or topic.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey};

use super::encode_response;
use super::txn_common::txn_error_code;
use crate::cluster::image::is_internal_topic;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::TopicPartition;
use crate::shard::Shard;
use crate::txn::service::{call_txn, verify};
use crate::txn::TxnCall;

/// First version whose clients know PRODUCER_FENCED.
const PRODUCER_FENCED_SINCE: i16 = 2;

/// One transaction of a request, as either version range carries it.
struct Transaction<'a> {
    transactional_id: &'a str,
    producer_id: i64,
    producer_epoch: i16,
    verify_only: bool,
    topics: Vec<(&'a str, &'a [i32])>,
}

/// Answers AddPartitionsToTxn.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: AddPartitionsToTxnRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let mut response = AddPartitionsToTxnResponse::default();
        if version < BROKER_VERSIONS_SINCE {
            let transaction = Transaction {
                transactional_id: &request.v3_and_below_transactional_id,
                producer_id: request.v3_and_below_producer_id.0,
                producer_epoch: request.v3_and_below_producer_epoch,
                verify_only: false,
                topics: request
                    .v3_and_below_topics
                    .iter()
                    .map(|t| (t.name.as_str(), t.partitions.as_slice()))
                    .collect(),
            };
            let answers = answer(&shard, &access, version, &transaction).await;
            response.results_by_topic_v3_and_below = by_topic(answers);
        } else if !access.cluster(AclOperation::ClusterAction) {
            // Broker-to-broker only: refused as a whole.
            response.error_code = ErrorCode::ClusterAuthorizationFailed.code();
        } else {
            for t in &request.transactions {
                let transaction = Transaction {
                    transactional_id: &t.transactional_id,
                    producer_id: t.producer_id.0,
                    producer_epoch: t.producer_epoch,
                    verify_only: t.verify_only,
                    topics: t
                        .topics
                        .iter()
                        .map(|t| (t.name.as_str(), t.partitions.as_slice()))
                        .collect(),
                };
                let answers = answer(&shard, &access, version, &transaction).await;
                let mut result = AddPartitionsToTxnResult::default();
                result.transactional_id = t.transactional_id.clone();
                result.topic_results = by_topic(answers);
                response.results_by_transaction.push(result);
            }
        }
        encode_response(
            ApiKey::AddPartitionsToTxn,
            version,
            correlation_id,
            &response,
        )
    })
}

/// First version sent by brokers, batching transactions; its adds are
/// transactions V2's.
const BROKER_VERSIONS_SINCE: i16 = 4;

/// Each partition of `transaction` with its error code (0: added, or
/// verified).
async fn answer(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    version: i16,
    transaction: &Transaction<'_>,
) -> Vec<(TopicPartition, i16)> {
    let client = version < BROKER_VERSIONS_SINCE;
    let transaction_refused =
        client && !access.transactional_id(AclOperation::Write, transaction.transactional_id);
    let image = shard.image();
    // Each partition with the error that keeps it out, if any.
    let mut requested: Vec<(TopicPartition, Option<ErrorCode>)> = Vec::new();
    for &(name, partitions) in &transaction.topics {
        let known = image.topic(name);
        let writable =
            !client || (!is_internal_topic(name) && access.topic(AclOperation::Write, name));
        for &partition in partitions {
            let exists = known.is_some_and(|t| {
                usize::try_from(partition).is_ok_and(|p| p < t.partition_shards.len())
            });
            let error = if !writable {
                Some(ErrorCode::TopicAuthorizationFailed)
            } else if !exists {
                Some(ErrorCode::UnknownTopicOrPartition)
            } else {
                None
            };
            requested.push((
                TopicPartition {
                    topic: name.to_string(),
                    partition,
                },
                error,
            ));
        }
    }
    let every = |error: ErrorCode| vec![error.code(); requested.len()];
    let codes: Vec<i16> = if transaction_refused {
        every(ErrorCode::TransactionalIdAuthorizationFailed)
    } else if requested.iter().any(|(_, error)| error.is_some()) {
        requested
            .iter()
            .map(|(_, error)| error.unwrap_or(ErrorCode::OperationNotAttempted).code())
            .collect()
    } else if transaction.transactional_id.is_empty() {
        every(ErrorCode::InvalidRequest)
    } else {
        let transactional_id = transaction.transactional_id;
        let partitions: Vec<TopicPartition> = requested.iter().map(|(tp, _)| tp.clone()).collect();
        if transaction.verify_only {
            verify(
                shard,
                transactional_id,
                transaction.producer_id,
                transaction.producer_epoch,
                partitions,
            )
            .await
            .into_iter()
            .map(|answer| match answer {
                Ok(()) => 0,
                Err(ErrorCode::InvalidTxnState) => ErrorCode::TransactionAbortable.code(),
                Err(error) => error.code(),
            })
            .collect()
        } else {
            let call = TxnCall::AddPartitions {
                transactional_id: transactional_id.to_string(),
                producer_id: transaction.producer_id,
                producer_epoch: transaction.producer_epoch,
                partitions,
                implicit: !client,
            };
            let code = call_txn(shard, transactional_id, call)
                .await
                .into_added()
                .err()
                .map_or(0, |e| txn_error_code(e, version, PRODUCER_FENCED_SINCE));
            vec![code; requested.len()]
        }
    };
    requested.into_iter().map(|(tp, _)| tp).zip(codes).collect()
}

/// Answers grouped by topic.
fn by_topic(answers: Vec<(TopicPartition, i16)>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut by_topic: BTreeMap<String, Vec<AddPartitionsToTxnPartitionResult>> = BTreeMap::new();
    for (tp, code) in answers {
        let mut result = AddPartitionsToTxnPartitionResult::default();
        result.partition_index = tp.partition;
        result.partition_error_code = code;
        by_topic.entry(tp.topic).or_default().push(result);
    }
    by_topic
        .into_iter()
        .map(|(name, results)| {
            let mut topic = AddPartitionsToTxnTopicResult::default();
            topic.name = super::str_bytes(&name).into();
            topic.results_by_partition = results;
            topic
        })
        .collect()
}
