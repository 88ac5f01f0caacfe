//! CreateDelegationToken (key 38, v1-3), RenewDelegationToken (39, v1-2),
//! ExpireDelegationToken (40, v1-2) and DescribeDelegationToken (41, v1-3),
//! as `kafka-delegation-tokens` and admin clients ask, answered as a Kafka
//! 4.1 cluster without `delegation.token.secret.key` (its default) answers
//! (measured): this broker cannot issue delegation tokens.
//!
//! In Kafka's order:
//! - on a PLAINTEXT connection, or TLS without a client certificate:
//!   DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (Kafka's `allowTokenRequests`);
//! - a token for another owner needs CREATE_TOKENS on that user, else
//!   DELEGATION_TOKEN_AUTHORIZATION_FAILED; a renewer that is not a `User`
//!   is INVALID_PRINCIPAL_TYPE;
//! - then DELEGATION_TOKEN_AUTH_DISABLED, and no tokens are described.

use kafka_protocol::messages::{
    ApiKey, CreateDelegationTokenRequest, CreateDelegationTokenResponse,
    DescribeDelegationTokenResponse, ExpireDelegationTokenResponse, RenewDelegationTokenResponse,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::{AclOperation, ResourceType};
use crate::server::access::Access;
use crate::server::connection::Response;

/// Kafka's timestamp for a token request that failed.
const ERROR_TIMESTAMP: i64 = -1;

/// The error for a token request that passed its own checks: refused on a
/// connection Kafka takes none on, else the feature is off.
fn refusal(access: &Access) -> ErrorCode {
    if access.token_requests_allowed() {
        ErrorCode::DelegationTokenAuthDisabled
    } else {
        ErrorCode::DelegationTokenRequestNotAllowed
    }
}

/// Answers CreateDelegationToken.
pub fn handle_create(
    access: &Access,
    request: CreateDelegationTokenRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let (requester, _) = access.caller_identity();
    let (requester_type, requester_name) = requester
        .split_once(':')
        .map_or((String::new(), requester.clone()), |(t, n)| {
            (t.to_string(), n.to_string())
        });
    let owner = match (&request.owner_principal_type, &request.owner_principal_name) {
        (Some(owner_type), Some(name)) if !name.is_empty() => {
            (owner_type.to_string(), name.to_string())
        }
        _ => (requester_type.clone(), requester_name.clone()),
    };
    let owner_is_requester = owner.0 == requester_type && owner.1 == requester_name;
    let error = if !access.token_requests_allowed() {
        ErrorCode::DelegationTokenRequestNotAllowed
    } else if !owner_is_requester
        && !access.allows(
            AclOperation::CreateTokens,
            ResourceType::User,
            &format!("{}:{}", owner.0, owner.1),
        )
    {
        ErrorCode::DelegationTokenAuthorizationFailed
    } else if request
        .renewers
        .iter()
        .any(|renewer| renewer.principal_type.as_str() != "User")
    {
        ErrorCode::InvalidPrincipalType
    } else {
        ErrorCode::DelegationTokenAuthDisabled
    };
    let mut response = CreateDelegationTokenResponse::default();
    response.error_code = error.code();
    response.principal_type = str_bytes(&owner.0);
    response.principal_name = str_bytes(&owner.1);
    if version >= 3 {
        response.token_requester_principal_type = str_bytes(&requester_type);
        response.token_requester_principal_name = str_bytes(&requester_name);
    }
    // The broker's own refusals carry Kafka's error timestamps; the
    // controller's (disabled) leaves them 0.
    if error != ErrorCode::DelegationTokenAuthDisabled {
        response.issue_timestamp_ms = ERROR_TIMESTAMP;
        response.expiry_timestamp_ms = ERROR_TIMESTAMP;
        response.max_timestamp_ms = ERROR_TIMESTAMP;
    }
    encode_response(
        ApiKey::CreateDelegationToken,
        version,
        correlation_id,
        &response,
    )
}

/// The expiry timestamp of a refused renew or expire: Kafka's error
/// timestamp from the broker, 0 from the controller (disabled).
fn refused_expiry(error: ErrorCode) -> i64 {
    if error == ErrorCode::DelegationTokenAuthDisabled {
        0
    } else {
        ERROR_TIMESTAMP
    }
}

/// Answers RenewDelegationToken.
pub fn handle_renew(access: &Access, version: i16, correlation_id: i32) -> Response {
    let mut response = RenewDelegationTokenResponse::default();
    let error = refusal(access);
    response.error_code = error.code();
    response.expiry_timestamp_ms = refused_expiry(error);
    encode_response(
        ApiKey::RenewDelegationToken,
        version,
        correlation_id,
        &response,
    )
}

/// Answers ExpireDelegationToken.
pub fn handle_expire(access: &Access, version: i16, correlation_id: i32) -> Response {
    let mut response = ExpireDelegationTokenResponse::default();
    let error = refusal(access);
    response.error_code = error.code();
    response.expiry_timestamp_ms = refused_expiry(error);
    encode_response(
        ApiKey::ExpireDelegationToken,
        version,
        correlation_id,
        &response,
    )
}

/// Answers DescribeDelegationToken: no tokens.
pub fn handle_describe(access: &Access, version: i16, correlation_id: i32) -> Response {
    let mut response = DescribeDelegationTokenResponse::default();
    response.error_code = refusal(access).code();
    encode_response(
        ApiKey::DescribeDelegationToken,
        version,
        correlation_id,
        &response,
    )
}
