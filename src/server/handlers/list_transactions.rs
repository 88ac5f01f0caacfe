//! ListTransactions (key 66, v0-2): the transactional ids of every
//! coordinator on this node, filtered by state, producer id, (v1, KIP-994)
//! how long the transaction has been running and (v2, KIP-1152) a regular
//! expression the whole id matches (RE2 syntax, as Kafka's RE2/J; an empty
//! one matches all, one that does not parse fails the request with
//! INVALID_REGULAR_EXPRESSION). Unknown state names are echoed in
//! `unknown_state_filters`, as Kafka does.
//!
//! Authorization, as in Kafka: only the transactional ids the caller may
//! DESCRIBE are listed (never an error).

use std::rc::Rc;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ApiKey, ListTransactionsRequest, ListTransactionsResponse, ProducerId,
};

use super::{encode_response, str_bytes};
use crate::group::consumer::compile_regex;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::Shard;
use crate::txn::service::list_all;
use crate::txn::{ListFilter, TxnState};

/// Answers ListTransactions.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: ListTransactionsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let mut response = ListTransactionsResponse::default();
        let pattern = match request.transactional_id_pattern {
            Some(pattern) if version >= 2 && !pattern.is_empty() => {
                // Off the reactor: a 16 KiB pattern of case-folded Unicode
                // classes takes a fraction of a second to compile, and any
                // client may send one (ListTransactions needs no ACL).
                let pattern = pattern.to_string();
                let compiled = glommio::executor()
                    .spawn_blocking(move || compile_regex(&pattern))
                    .await;
                match compiled {
                    Ok(regex) => Some(regex),
                    Err(_) => {
                        response.error_code = ErrorCode::InvalidRegularExpression.code();
                        return encode_response(
                            ApiKey::ListTransactions,
                            version,
                            correlation_id,
                            &response,
                        );
                    }
                }
            }
            _ => None,
        };
        let mut states = Vec::new();
        for name in &request.state_filters {
            match TxnState::ALL.iter().find(|s| s.name() == name.as_str()) {
                Some(state) => states.push(*state),
                None => response.unknown_state_filters.push(name.clone()),
            }
        }
        let nothing_can_match = !request.state_filters.is_empty() && states.is_empty();
        let filter = ListFilter {
            states,
            producer_ids: request.producer_id_filters.iter().map(|p| p.0).collect(),
            min_duration_ms: if version >= 1 {
                request.duration_filter
            } else {
                -1
            },
        };
        if !nothing_can_match {
            match list_all(&shard, filter).await {
                Ok(mut listed) => {
                    listed.retain(|t| {
                        pattern
                            .as_ref()
                            .map_or(true, |regex| regex.is_match(&t.transactional_id))
                            && access.transactional_id(AclOperation::Describe, &t.transactional_id)
                    });
                    listed.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
                    response.transaction_states = listed
                        .into_iter()
                        .map(|t| {
                            let mut state = TransactionState::default();
                            state.transactional_id = str_bytes(&t.transactional_id).into();
                            state.producer_id = ProducerId(t.producer_id);
                            state.transaction_state = str_bytes(t.state.name());
                            state
                        })
                        .collect();
                }
                Err(e) => response.error_code = e.code(),
            }
        }
        encode_response(ApiKey::ListTransactions, version, correlation_id, &response)
    })
}
