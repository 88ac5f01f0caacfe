//! InitProducerId (key 22): gives an idempotent producer a fresh producer id
//! with epoch 0. Kafka's transaction coordinator does the same for a
//! non-transactional producer, whatever id and epoch it sends (KIP-360 only
//! bumps epochs of transactional ids). Transactional ids are not coordinated
//! here yet: they get COORDINATOR_NOT_AVAILABLE, as FindCoordinator gives.

use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::encode_response;
use crate::protocol::ErrorCode;
use crate::server::connection::Responder;
use crate::shard::Shard;

/// Answers InitProducerId.
pub async fn handle(
    shard: &Rc<Shard>,
    request: InitProducerIdRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    Box::pin(async move {
        let mut response = InitProducerIdResponse::default();
        response.producer_id = ProducerId(-1);
        response.producer_epoch = -1;
        if request.transactional_id.is_some() {
            response.error_code = ErrorCode::CoordinatorNotAvailable.code();
        } else {
            match shard.next_producer_id().await {
                Ok(id) => {
                    response.producer_id = ProducerId(id);
                    response.producer_epoch = 0;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "InitProducerId failed");
                    response.error_code = ErrorCode::CoordinatorNotAvailable.code();
                }
            }
        }
        encode_response(ApiKey::InitProducerId, version, correlation_id, &response)
    })
}
