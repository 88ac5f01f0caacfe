//! AddOffsetsToTxn (key 25): adds the group's `__consumer_offsets`
//! partition to the producer's transaction, so EndTxn writes a marker there
//! and the offsets of TxnOffsetCommit become visible (or are dropped) with
//! the transaction.
//!
//! Authorization, as in Kafka: WRITE on the transactional id, else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then READ on the group, else
//! GROUP_AUTHORIZATION_FAILED.

use std::rc::Rc;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ApiKey};

use super::encode_response;
use super::txn_common::txn_error_code;
use crate::cluster::controller::OFFSETS_TOPIC;
use crate::group::service::group_partition;
use crate::protocol::ErrorCode;
use crate::server::connection::Responder;
use crate::shard::messages::TopicPartition;
use crate::shard::Shard;
use crate::txn::service::call_txn;
use crate::txn::TxnCall;

/// First version whose clients know PRODUCER_FENCED.
const PRODUCER_FENCED_SINCE: i16 = 2;

/// Answers AddOffsetsToTxn.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: AddOffsetsToTxnRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let refusal = access.transaction_offsets_refusal(&request.transactional_id, &request.group_id);
    Box::pin(async move {
        let partition = match refusal {
            Some(error) => Err(error),
            None => group_partition(&shard, &request.group_id)
                .await
                .ok_or(ErrorCode::CoordinatorNotAvailable),
        };
        let error = match partition {
            Err(error) => Some(error),
            Ok(partition) => {
                let transactional_id = request.transactional_id.to_string();
                let call = TxnCall::AddPartitions {
                    transactional_id: transactional_id.clone(),
                    producer_id: request.producer_id.0,
                    producer_epoch: request.producer_epoch,
                    partitions: vec![TopicPartition {
                        topic: OFFSETS_TOPIC.to_string(),
                        partition,
                    }],
                    implicit: false,
                };
                call_txn(&shard, &transactional_id, call)
                    .await
                    .into_added()
                    .err()
            }
        };
        let mut response = AddOffsetsToTxnResponse::default();
        response.error_code =
            error.map_or(0, |e| txn_error_code(e, version, PRODUCER_FENCED_SINCE));
        encode_response(ApiKey::AddOffsetsToTxn, version, correlation_id, &response)
    })
}
