//! AddPartitionsToTxn (key 24), the client versions 0-3: adds partitions to
//! the producer's transaction on its coordinator. Partitions of topics that
//! do not exist get UNKNOWN_TOPIC_OR_PARTITION and the others
//! OPERATION_NOT_ATTEMPTED, as Kafka answers; otherwise every partition
//! gets the coordinator's one answer. Versions 4 and up are broker-to-broker
//! (KIP-890) and not advertised.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey};

use super::encode_response;
use super::txn_common::{txn_error_code, unit_reply_error};
use crate::protocol::ErrorCode;
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
    Box::pin(async move {
        let image = shard.image();
        let mut requested: Vec<(TopicPartition, bool)> = Vec::new();
        for topic in &request.v3_and_below_topics {
            let known = image.topic(&topic.name);
            for &partition in &topic.partitions {
                let exists = known.is_some_and(|t| {
                    usize::try_from(partition).is_ok_and(|p| p < t.partition_shards.len())
                });
                requested.push((
                    TopicPartition {
                        topic: topic.name.to_string(),
                        partition,
                    },
                    exists,
                ));
            }
        }
        let codes: Vec<i16> = if requested.iter().any(|(_, exists)| !exists) {
            requested
                .iter()
                .map(|(_, exists)| {
                    if *exists {
                        ErrorCode::OperationNotAttempted.code()
                    } else {
                        ErrorCode::UnknownTopicOrPartition.code()
                    }
                })
                .collect()
        } else {
            let transactional_id = request.v3_and_below_transactional_id.to_string();
            let call = TxnCall::AddPartitions {
                transactional_id: transactional_id.clone(),
                producer_id: request.v3_and_below_producer_id.0,
                producer_epoch: request.v3_and_below_producer_epoch,
                partitions: requested.iter().map(|(tp, _)| tp.clone()).collect(),
            };
            let code = unit_reply_error(call_txn(&shard, &transactional_id, call).await)
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
