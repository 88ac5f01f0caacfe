//! ListPartitionReassignments (key 46, v0, flexible), as
//! `kafka-reassign-partitions --list/--verify` and admin clients'
//! `listPartitionReassignments` ask: the reassignments in progress. A single
//! node completes every reassignment it accepts at once (see
//! `alter_partition_reassignments.rs`), so none is ever in progress and the
//! answer lists no topic, whichever topics and partitions are named (Kafka
//! leaves out named ones that are unknown or not moving).

use kafka_protocol::messages::{
    ApiKey, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};

use super::encode_response;
use crate::server::connection::Response;

/// Answers ListPartitionReassignments.
pub fn handle(
    access: &crate::server::access::Access,
    _request: ListPartitionReassignmentsRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = ListPartitionReassignmentsResponse::default();
    response.error_message = None;
    // DESCRIBE on the cluster.
    if !access.cluster(crate::security::acl::AclOperation::Describe) {
        response.error_code = crate::protocol::ErrorCode::ClusterAuthorizationFailed.code();
        response.error_message = Some(super::str_bytes(&crate::server::access::cluster_refusal(
            ApiKey::ListPartitionReassignments,
            "DESCRIBE",
        )));
    }
    encode_response(
        ApiKey::ListPartitionReassignments,
        version,
        correlation_id,
        &response,
    )
}
