//! AddPartitionsToTxn (key 24), the client versions 0-3: adds partitions to
//! the producer's transaction on its coordinator. Partitions of topics that
//! do not exist get UNKNOWN_TOPIC_OR_PARTITION and the others
//! OPERATION_NOT_ATTEMPTED, as Kafka answers; otherwise every partition
//! gets the coordinator's one answer. Versions 4 and up are broker-to-broker
//! (KIP-890) and not advertised.
//!
//! Authorization, as in Kafka: WRITE on the transactional id, else every
//! partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic
//! (never granted for internal topics), else its partitions are
//! TOPIC_AUTHORIZATION_FAILED, checked before existence and failing the
//! request as an unknown partition does. Broker versions need
//! CLUSTER_ACTION, else a top-level CLUSTER_AUTHORIZATION_FAILED.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
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
use crate::txn::service::call_txn;
use crate::txn::TxnCall;

/// First version whose clients know PRODUCER_FENCED.
const PRODUCER_FENCED_SINCE: i16 = 2;

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
        if version >= 4 && !access.cluster(AclOperation::ClusterAction) {
            // Broker-to-broker only: refused as a whole.
            let mut response = AddPartitionsToTxnResponse::default();
            response.error_code = ErrorCode::ClusterAuthorizationFailed.code();
            return encode_response(
                ApiKey::AddPartitionsToTxn,
                version,
                correlation_id,
                &response,
            );
        }
        // Brokers' versions are not checked per transaction or topic.
        let client = version < 4;
        let transaction_refused = client
            && !access
                .transactional_id(AclOperation::Write, &request.v3_and_below_transactional_id);
        let image = shard.image();
        // Each partition with the error that keeps it out, if any.
        let mut requested: Vec<(TopicPartition, Option<ErrorCode>)> = Vec::new();
        for topic in &request.v3_and_below_topics {
            let known = image.topic(&topic.name);
            let writable = !client
                || (!is_internal_topic(&topic.name)
                    && access.topic(AclOperation::Write, &topic.name));
            for &partition in &topic.partitions {
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
                        topic: topic.name.to_string(),
                        partition,
                    },
                    error,
                ));
            }
        }
        let codes: Vec<i16> = if transaction_refused {
            vec![ErrorCode::TransactionalIdAuthorizationFailed.code(); requested.len()]
        } else if requested.iter().any(|(_, error)| error.is_some()) {
            requested
                .iter()
                .map(|(_, error)| error.unwrap_or(ErrorCode::OperationNotAttempted).code())
                .collect()
        } else {
            let transactional_id = request.v3_and_below_transactional_id.to_string();
            let call = TxnCall::AddPartitions {
                transactional_id: transactional_id.clone(),
                producer_id: request.v3_and_below_producer_id.0,
                producer_epoch: request.v3_and_below_producer_epoch,
                partitions: requested.iter().map(|(tp, _)| tp.clone()).collect(),
                implicit: false,
            };
            let code = call_txn(&shard, &transactional_id, call)
                .await
                .into_added()
                .err()
                .map_or(0, |e| txn_error_code(e, version, PRODUCER_FENCED_SINCE));
            vec![code; requested.len()]
        };
        let mut by_topic: BTreeMap<String, Vec<AddPartitionsToTxnPartitionResult>> =
            BTreeMap::new();
        for ((tp, _), code) in requested.into_iter().zip(codes) {
            let mut result = AddPartitionsToTxnPartitionResult::default();
            result.partition_index = tp.partition;
            result.partition_error_code = code;
            by_topic.entry(tp.topic).or_default().push(result);
        }
        let mut response = AddPartitionsToTxnResponse::default();
        response.results_by_topic_v3_and_below = by_topic
            .into_iter()
            .map(|(name, results)| {
                let mut topic = AddPartitionsToTxnTopicResult::default();
                topic.name = super::str_bytes(&name).into();
                topic.results_by_partition = results;
                topic
            })
            .collect();
        encode_response(
            ApiKey::AddPartitionsToTxn,
            version,
            correlation_id,
            &response,
        )
    })
}
