//! DescribeTransactions (key 65, v0): the state of each transactional id,
//! from its coordinator. Before `__transaction_state` exists no id is known.
//!
//! Authorization, as in Kafka: DESCRIBE on each transactional id, else an
//! entry with TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing else, its
//! coordinator not asked; topics the caller may not DESCRIBE are left out
//! of every state.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::Shard;
use crate::txn::records::group_by_topic;
use crate::txn::service::call_partition;
use crate::txn::{txn_partition_for, DescribedTxn, TxnCall, TxnReply, TXN_STATE_TOPIC};

/// Answers DescribeTransactions.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DescribeTransactionsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let ids: Vec<String> = request
            .transactional_ids
            .iter()
            .map(|id| id.to_string())
            .collect();
        let refused: Vec<bool> = ids
            .iter()
            .map(|id| !access.transactional_id(AclOperation::Describe, id))
            .collect();
        let partitions = shard
            .image()
            .topic(TXN_STATE_TOPIC)
            .map(|t| t.partition_shards.len() as i32);
        let mut by_partition: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        if let Some(count) = partitions {
            for (i, id) in ids.iter().enumerate().filter(|&(i, _)| !refused[i]) {
                by_partition
                    .entry(txn_partition_for(id, count))
                    .or_default()
                    .push(i);
            }
        }
        let mut described: Vec<Option<DescribedTxn>> = vec![None; ids.len()];
        let mut errors: Vec<i16> = vec![ErrorCode::TransactionalIdNotFound.code(); ids.len()];
        for (partition, positions) in by_partition {
            let call = TxnCall::Describe {
                transactional_ids: positions.iter().map(|&i| ids[i].clone()).collect(),
            };
            match call_partition(&shard, partition, call).await {
                TxnReply::Describe(answers) => {
                    for (&i, answer) in positions.iter().zip(answers) {
                        errors[i] = answer.error_code;
                        described[i] = Some(answer);
                    }
                }
                TxnReply::Unavailable(e) => {
                    for &i in &positions {
                        errors[i] = e.code();
                    }
                }
                other => {
                    tracing::error!(?other, "transaction coordinator answered the wrong call");
                    for &i in &positions {
                        errors[i] = ErrorCode::UnknownServerError.code();
                    }
                }
            }
        }
        let mut response = DescribeTransactionsResponse::default();
        for (i, id) in ids.iter().enumerate() {
            let mut state = TransactionState::default();
            state.transactional_id = str_bytes(id).into();
            if refused[i] {
                // Kafka's refusal entry: the id and the error, the other
                // fields their defaults.
                state.error_code = ErrorCode::TransactionalIdAuthorizationFailed.code();
                response.transaction_states.push(state);
                continue;
            }
            state.error_code = errors[i];
            state.transaction_state = str_bytes("");
            state.producer_id = ProducerId(-1);
            state.producer_epoch = -1;
            state.transaction_start_time_ms = -1;
            if let Some(d) = described[i].as_ref().filter(|d| d.error_code == 0) {
                state.transaction_state = str_bytes(d.state.name());
                state.transaction_timeout_ms = d.timeout_ms;
                state.transaction_start_time_ms = d.start_ms;
                state.producer_id = ProducerId(d.producer_id);
                state.producer_epoch = d.producer_epoch;
                let set = d.partitions.iter().cloned().collect();
                state.topics = group_by_topic(&set)
                    .into_iter()
                    .filter(|(topic, _)| access.topic(AclOperation::Describe, topic))
                    .map(|(topic, partitions)| {
                        let mut data = TopicData::default();
                        data.topic = str_bytes(&topic).into();
                        data.partitions = partitions;
                        data
                    })
                    .collect();
            }
            response.transaction_states.push(state);
        }
        encode_response(
            ApiKey::DescribeTransactions,
            version,
            correlation_id,
            &response,
        )
    })
}
