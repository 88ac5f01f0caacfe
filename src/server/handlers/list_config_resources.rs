//! ListConfigResources (key 74; v0 was ListClientMetricsResources, KIP-1142):
//! the resources configs can be described for, by type, as Kafka 4.1
//! answers: groups that set configs, client-metrics subscriptions, this node as BROKER_LOGGER and BROKER, and every
//! topic, internal ones included. v0 knows only client metrics; asking for
//! a type the version does not know is UNSUPPORTED_VERSION for the whole
//! request. No types means all the version knows. Needs DESCRIBE_CONFIGS
//! on the cluster.

use std::rc::Rc;

use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ApiKey, ListConfigResourcesRequest, ListConfigResourcesResponse};

use super::config_resource_type::{BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC};
use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Response;
use crate::shard::Shard;

/// The resource types `version` knows, in the order Kafka lists them.
fn supported(version: i16) -> &'static [i8] {
    if version == 0 {
        &[CLIENT_METRICS]
    } else {
        &[GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC]
    }
}

/// Answers ListConfigResources.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: ListConfigResourcesRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = ListConfigResourcesResponse::default();
    let known = supported(version);
    if !access.cluster(AclOperation::DescribeConfigs) {
        response.error_code = ErrorCode::ClusterAuthorizationFailed.code();
    } else if request.resource_types.iter().any(|t| !known.contains(t)) {
        response.error_code = ErrorCode::UnsupportedVersion.code();
    } else {
        let wanted =
            |t: i8| request.resource_types.is_empty() || request.resource_types.contains(&t);
        let image = shard.image();
        let node = shard.config.node_id.to_string();
        let mut resources = Vec::new();
        for &resource_type in known.iter().filter(|t| wanted(**t)) {
            let names: Vec<String> = match resource_type {
                GROUP => image.group_configs.keys().cloned().collect(),
                CLIENT_METRICS => image.client_metrics.keys().cloned().collect(),
                BROKER_LOGGER | BROKER => vec![node.clone()],
                TOPIC => image.topics.keys().cloned().collect(),
                _ => Vec::new(),
            };
            resources.extend(names.into_iter().map(|name| {
                ConfigResource::default()
                    .with_resource_name(str_bytes(&name))
                    .with_resource_type(resource_type)
            }));
        }
        response.config_resources = resources;
    }
    encode_response(
        ApiKey::ListConfigResources,
        version,
        correlation_id,
        &response,
    )
}
