//! DescribeAcls, CreateAcls and DeleteAcls (keys 29, 30, 31; v1-3, v2+
//! flexible), as `kafka-acls` and admin clients' `describeAcls`,
//! `createAcls` and `deleteAcls` ask. ringbroker has no authorizer (nor
//! authentication), so it answers as Kafka does without
//! `authorizer.class.name`: SECURITY_DISABLED with Kafka's messages, for the
//! request (Describe), for each creation (Create) and for each filter
//! (Delete, matching nothing). Nothing is stored.

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::server::connection::Response;

/// Kafka's message for each creation and deletion filter.
const NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// Answers DescribeAcls.
pub fn describe(_request: DescribeAclsRequest, version: i16, correlation_id: i32) -> Response {
    let mut response = DescribeAclsResponse::default();
    response.error_code = ErrorCode::SecurityDisabled.code();
    response.error_message = Some(str_bytes("No Authorizer is configured on the broker"));
    encode_response(ApiKey::DescribeAcls, version, correlation_id, &response)
}

/// Answers CreateAcls.
pub fn create(request: CreateAclsRequest, version: i16, correlation_id: i32) -> Response {
    let mut response = CreateAclsResponse::default();
    response.results = request
        .creations
        .iter()
        .map(|_| {
            let mut result = AclCreationResult::default();
            result.error_code = ErrorCode::SecurityDisabled.code();
            result.error_message = Some(str_bytes(NO_AUTHORIZER));
            result
        })
        .collect();
    encode_response(ApiKey::CreateAcls, version, correlation_id, &response)
}

/// Answers DeleteAcls.
pub fn delete(request: DeleteAclsRequest, version: i16, correlation_id: i32) -> Response {
    let mut response = DeleteAclsResponse::default();
    response.filter_results = request
        .filters
        .iter()
        .map(|_| {
            let mut result = DeleteAclsFilterResult::default();
            result.error_code = ErrorCode::SecurityDisabled.code();
            result.error_message = Some(str_bytes(NO_AUTHORIZER));
            result
        })
        .collect();
    encode_response(ApiKey::DeleteAcls, version, correlation_id, &response)
}
