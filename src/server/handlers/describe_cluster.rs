//! DescribeCluster (key 60, v0-2, flexible): the cluster id, the controller
//! and the brokers, as admin clients' `describeCluster` asks (the Java
//! client falls back to Metadata without it). On one node the broker is its
//! own controller and never fenced. v1 names the endpoint type wanted: a
//! broker answers for brokers (1); asking it for controllers (2) is
//! MISMATCHED_ENDPOINT_TYPE and any other type UNSUPPORTED_ENDPOINT_TYPE,
//! with Kafka's messages, as Kafka 4.1 answers on a broker listener.

use std::rc::Rc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{ApiKey, BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use super::authorized_operations::AUTHORIZED_OPERATIONS_OMITTED;
use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::server::connection::Response;
use crate::shard::Shard;

/// Endpoint type of brokers (v1+).
const ENDPOINT_TYPE_BROKER: i8 = 1;
/// Endpoint type of controllers (v1+).
const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

/// Answers DescribeCluster.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    listener: &crate::config::Listener,
    request: DescribeClusterRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = DescribeClusterResponse::default();
    response.endpoint_type = ENDPOINT_TYPE_BROKER;
    response.cluster_authorized_operations = AUTHORIZED_OPERATIONS_OMITTED;
    let wanted = if version >= 1 {
        request.endpoint_type
    } else {
        ENDPOINT_TYPE_BROKER
    };
    let refusal = match wanted {
        ENDPOINT_TYPE_BROKER => None,
        ENDPOINT_TYPE_CONTROLLER => Some((
            ErrorCode::MismatchedEndpointType,
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER".to_string(),
        )),
        other => Some((
            ErrorCode::UnsupportedEndpointType,
            format!("Unsupported endpoint type {other}"),
        )),
    };
    if let Some((error, message)) = refusal {
        response.error_code = error.code();
        response.error_message = Some(str_bytes(&message));
        response.controller_id = BrokerId(-1);
        return encode_response(ApiKey::DescribeCluster, version, correlation_id, &response);
    }
    let config = &shard.config;
    let mut broker = DescribeClusterBroker::default();
    broker.broker_id = BrokerId(config.node_id);
    broker.host = str_bytes(&listener.advertised_host);
    broker.port = i32::from(listener.advertised_port);
    broker.rack = None;
    broker.is_fenced = false;
    response.cluster_id = str_bytes(&shard.image().cluster_id);
    response.controller_id = BrokerId(config.node_id);
    response.brokers = vec![broker];
    if request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = access.cluster_operations();
    }
    encode_response(ApiKey::DescribeCluster, version, correlation_id, &response)
}
