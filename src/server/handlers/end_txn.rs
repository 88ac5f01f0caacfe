//! EndTxn (key 26), versions 0-4: commits or aborts the producer's
//! transaction. Answered once the PREPARE record is durable; the
//! coordinator then writes the markers and the COMPLETE record. Version 5
//! belongs to transactions V2, which this broker does not enable.
//!
//! Authorization, as in Kafka: WRITE on the transactional id, else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse};

use super::encode_response;
use super::txn_common::{txn_error_code, unit_reply_error};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::Shard;
use crate::txn::service::call_txn;
use crate::txn::TxnCall;

/// First version whose clients know PRODUCER_FENCED.
const PRODUCER_FENCED_SINCE: i16 = 2;

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
        };
        let error = if authorized {
            unit_reply_error(call_txn(&shard, &transactional_id, call).await)
        } else {
            Some(ErrorCode::TransactionalIdAuthorizationFailed)
        };
        let mut response = EndTxnResponse::default();
        response.error_code =
            error.map_or(0, |e| txn_error_code(e, version, PRODUCER_FENCED_SINCE));
        encode_response(ApiKey::EndTxn, version, correlation_id, &response)
    })
}
