//! EndTxn (key 26), versions 0-5: commits or aborts the producer's
//! transaction. Answered once the PREPARE record is durable; the
//! coordinator then writes the markers and the COMPLETE record. Version 5
//! is transactions V2 (KIP-890 part 2): the coordinator bumps the epoch and
//! the answer carries the producer id and epoch of the producer's next
//! transaction (-1 on an error, as in Kafka).
//!
//! Authorization, as in Kafka: WRITE on the transactional id, else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse, ProducerId};

use super::encode_response;
use super::txn_common::txn_error_code;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::Shard;
use crate::txn::service::call_txn;
use crate::txn::TxnCall;

/// First version whose clients know PRODUCER_FENCED.
const PRODUCER_FENCED_SINCE: i16 = 2;
/// First version of transactions V2.
const TRANSACTIONS_V2_SINCE: i16 = 5;

/// Answers EndTxn.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: EndTxnRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let authorized = access.transactional_id(AclOperation::Write, &request.transactional_id);
    Box::pin(async move {
        let transactional_id = request.transactional_id.to_string();
        let call = TxnCall::EndTxn {
            transactional_id: transactional_id.clone(),
            producer_id: request.producer_id.0,
            producer_epoch: request.producer_epoch,
            commit: request.committed,
            v2: version >= TRANSACTIONS_V2_SINCE,
        };
        let answer = if authorized {
            call_txn(&shard, &transactional_id, call).await.into_ended()
        } else {
            Err(ErrorCode::TransactionalIdAuthorizationFailed)
        };
        let mut response = EndTxnResponse::default();
        match answer {
            Ok((producer_id, producer_epoch)) => {
                response.producer_id = ProducerId(producer_id);
                response.producer_epoch = producer_epoch;
            }
            Err(e) => {
                response.error_code = txn_error_code(e, version, PRODUCER_FENCED_SINCE);
                response.producer_id = ProducerId(-1);
                response.producer_epoch = -1;
            }
        }
        encode_response(ApiKey::EndTxn, version, correlation_id, &response)
    })
}
