//! UnregisterBroker (key 64) v0, `kafka-cluster unregister --id N`: removes a
//! broker's registration once the broker is gone for good. ALTER on the
//! cluster is needed. A node has only itself registered here, so every other
//! id is BROKER_ID_NOT_REGISTERED with Kafka's message, measured on Kafka
//! 4.1.1 ("Broker ID 5 is not currently registered").
//!
//! This node's own id is refused (INVALID_REQUEST) where Kafka 4.1.1 answers
//! success: Kafka then drops the registration of the running node, its
//! heartbeats are refused from then on, and a single-node cluster is left
//! with no broker at all (measured). A running node cannot be permanently
//! gone, so this broker says so instead.

use kafka_protocol::messages::{ApiKey, UnregisterBrokerRequest, UnregisterBrokerResponse};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::{cluster_refusal, Access};
use crate::server::connection::Response;
use crate::shard::Shard;

/// Kafka's code and message for unregistering `broker_id` on node `node_id`
/// when the caller `may_alter` the cluster.
fn answer(may_alter: bool, node_id: i32, broker_id: i32) -> (ErrorCode, Option<String>) {
    if !may_alter {
        return (
            ErrorCode::ClusterAuthorizationFailed,
            Some(cluster_refusal(ApiKey::UnregisterBroker, "ALTER")),
        );
    }
    if broker_id == node_id {
        return (
            ErrorCode::InvalidRequest,
            Some(format!(
                "Broker ID {broker_id} is this running node; only a broker that is \
                 permanently gone can be unregistered"
            )),
        );
    }
    (
        ErrorCode::BrokerIdNotRegistered,
        Some(format!("Broker ID {broker_id} is not currently registered")),
    )
}

/// Answers UnregisterBroker.
pub fn handle(
    shard: &Shard,
    access: &Access,
    request: UnregisterBrokerRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let (error, message) = answer(
        access.cluster(AclOperation::Alter),
        shard.config.node_id,
        request.broker_id.0,
    );
    let mut response = UnregisterBrokerResponse::default();
    response.error_code = error.code();
    response.error_message = message.as_deref().map(str_bytes);
    encode_response(ApiKey::UnregisterBroker, version, correlation_id, &response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_ids_are_not_registered_and_alter_comes_first() {
        assert_eq!(
            answer(true, 1, 5),
            (
                ErrorCode::BrokerIdNotRegistered,
                Some("Broker ID 5 is not currently registered".to_string())
            )
        );
        assert_eq!(answer(true, 1, 1).0, ErrorCode::InvalidRequest);
        assert_eq!(answer(false, 1, 5).0, ErrorCode::ClusterAuthorizationFailed);
        assert_eq!(answer(false, 1, 1).0, ErrorCode::ClusterAuthorizationFailed);
    }
}
