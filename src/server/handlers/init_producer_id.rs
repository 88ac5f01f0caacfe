//! InitProducerId (key 22). Without a transactional id: a fresh producer id
//! with epoch 0 for an idempotent producer, whatever id and epoch it sends
//! (Kafka bumps epochs only for transactional ids). With one: the
//! transaction coordinator of the id answers (new id, epoch bump, fencing
//! of an older producer and abort of its open transaction, KIP-360 retries).
//!
//! Authorization, as in Kafka: with a transactional id WRITE on it, else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED; without one IDEMPOTENT_WRITE on
//! the cluster or WRITE on some topic, else CLUSTER_AUTHORIZATION_FAILED.

use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::encode_response;
use super::txn_common::txn_error_code;
use crate::protocol::ErrorCode;
use crate::security::acl::{AclOperation, ResourceType};
use crate::server::connection::Responder;
use crate::shard::Shard;
use crate::txn::service::call_txn;
use crate::txn::{TxnCall, TxnReply};

/// First version whose clients know PRODUCER_FENCED.
const PRODUCER_FENCED_SINCE: i16 = 4;

/// Answers InitProducerId.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: InitProducerIdRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    // Before any other check, as in Kafka (an empty id is authorized too).
    let refusal = match &request.transactional_id {
        Some(id) if !access.transactional_id(AclOperation::Write, id) => {
            Some(ErrorCode::TransactionalIdAuthorizationFailed)
        }
        Some(_) => None,
        None if access.cluster(AclOperation::IdempotentWrite)
            || access.any_of_type(AclOperation::Write, ResourceType::Topic) =>
        {
            None
        }
        None => Some(ErrorCode::ClusterAuthorizationFailed),
    };
    Box::pin(async move {
        let id = request.transactional_id.as_ref().map(|id| id.as_str());
        let outcome = match (refusal, id) {
            (Some(error), _) => Err(error),
            (None, None) => match shard.next_producer_id().await {
                Ok(id) => Ok((id, 0)),
                Err(e) => {
                    tracing::warn!(error = %e, "InitProducerId failed");
                    Err(ErrorCode::CoordinatorNotAvailable)
                }
            },
            (None, Some("")) => Err(ErrorCode::InvalidRequest),
            (None, Some(transactional_id)) => {
                let max_timeout_ms = shard.config.txns.transaction_max_timeout_ms;
                let timeout_ms = request.transaction_timeout_ms;
                if timeout_ms <= 0 || timeout_ms > max_timeout_ms {
                    Err(ErrorCode::InvalidTransactionTimeout)
                } else {
                    let call = TxnCall::InitProducerId {
                        transactional_id: transactional_id.to_string(),
                        timeout_ms,
                        producer_id: request.producer_id.0,
                        producer_epoch: request.producer_epoch,
                    };
                    match call_txn(&shard, transactional_id, call).await {
                        TxnReply::InitProducerId(answer) => answer,
                        TxnReply::Unavailable(e) => Err(e),
                        other => {
                            tracing::error!(
                                ?other,
                                "transaction coordinator answered the wrong call"
                            );
                            Err(ErrorCode::UnknownServerError)
                        }
                    }
                }
            }
        };
        let mut response = InitProducerIdResponse::default();
        match outcome {
            Ok((id, epoch)) => {
                response.producer_id = ProducerId(id);
                response.producer_epoch = epoch;
            }
            Err(e) => {
                response.producer_id = ProducerId(-1);
                response.producer_epoch = -1;
                response.error_code = txn_error_code(e, version, PRODUCER_FENCED_SINCE);
            }
        }
        encode_response(ApiKey::InitProducerId, version, correlation_id, &response)
    })
}
