//! CreateDelegationToken (key 38, v1-3), RenewDelegationToken (39, v1-2),
//! ExpireDelegationToken (40, v1-2) and DescribeDelegationToken (41, v1-3),
//! as `kafka-delegation-tokens` and admin clients ask, answered as Kafka
//! 4.1 answers (measured against it). Without `delegation.token.secret.key`
//! (Kafka's default) tokens are disabled.
//!
//! In Kafka's order:
//! - on a PLAINTEXT connection, TLS without a client certificate, or a
//!   connection that logged in with a token:
//!   DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (Kafka's `allowTokenRequests`);
//! - create: a token for another owner needs CREATE_TOKENS on that user,
//!   else DELEGATION_TOKEN_AUTHORIZATION_FAILED; a renewer that is not a
//!   `User` is INVALID_PRINCIPAL_TYPE (these refusals carry -1
//!   timestamps);
//! - disabled: DELEGATION_TOKEN_AUTH_DISABLED, and no tokens are described;
//! - renew and expire go to the controller (`cluster::controller`), which
//!   finds the token by its HMAC and checks who asks;
//! - describe lists the tokens the caller owns, asked for, may renew, has
//!   DESCRIBE on (DELEGATION_TOKEN resource) or has DESCRIBE_TOKENS on the
//!   owner of (USER resource), of the owners asked for (each matching a
//!   token's owner, requester or renewers); an empty owner list gets none.

use std::collections::HashSet;
use std::rc::Rc;

use bytes::Bytes;
use futures::future::LocalBoxFuture;
use kafka_protocol::messages::describe_delegation_token_response::{
    DescribedDelegationToken, DescribedDelegationTokenRenewer,
};
use kafka_protocol::messages::{
    ApiKey, CreateDelegationTokenRequest, CreateDelegationTokenResponse,
    DescribeDelegationTokenRequest, DescribeDelegationTokenResponse, ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse, RenewDelegationTokenRequest, RenewDelegationTokenResponse,
};

use super::{encode_response, ready, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::ANONYMOUS;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::delegation_token::{self, DelegationToken};
use crate::server::access::Access;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{ControllerReply, ControllerRequest};
use crate::shard::Shard;

/// Kafka's timestamp for a token request that failed.
const ERROR_TIMESTAMP: i64 = -1;

/// The refusal of a token request before its own checks: none on a
/// connection Kafka takes them on, else DELEGATION_TOKEN_REQUEST_NOT_ALLOWED.
fn not_allowed(access: &Access) -> Option<ErrorCode> {
    (!access.token_requests_allowed()).then_some(ErrorCode::DelegationTokenRequestNotAllowed)
}

/// `Type:name` split in two (a name without a type keeps an empty type).
fn split_principal(principal: &str) -> (&str, &str) {
    principal.split_once(':').unwrap_or(("", principal))
}

/// Answers CreateDelegationToken.
pub async fn handle_create(
    shard: &Rc<Shard>,
    access: &Access,
    request: CreateDelegationTokenRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let (requester, _) = access.caller_identity();
    let owner = match (&request.owner_principal_type, &request.owner_principal_name) {
        (Some(owner_type), Some(name)) if !name.is_empty() => format!("{owner_type}:{name}"),
        // A named owner without a type: Kafka fails making its principal
        // and answers UNKNOWN_SERVER_ERROR for ANONYMOUS (measured).
        (None, Some(name)) if !name.is_empty() => {
            return ready(create_response(
                ANONYMOUS,
                ANONYMOUS,
                Err(ErrorCode::UnknownServerError),
                version,
                correlation_id,
            ));
        }
        _ => requester.clone(),
    };
    let config = shard.config.delegation_tokens.clone();
    let error = if let Some(error) = not_allowed(access) {
        Some(error)
    } else if owner != requester
        && !access.allows(AclOperation::CreateTokens, ResourceType::User, &owner)
    {
        Some(ErrorCode::DelegationTokenAuthorizationFailed)
    } else if request
        .renewers
        .iter()
        .any(|renewer| renewer.principal_type.as_str() != "User")
    {
        Some(ErrorCode::InvalidPrincipalType)
    } else if !config.enabled() {
        Some(ErrorCode::DelegationTokenAuthDisabled)
    } else {
        None
    };
    if let Some(error) = error {
        return ready(create_response(
            &owner,
            &requester,
            Err(error),
            version,
            correlation_id,
        ));
    }
    let renewers = request
        .renewers
        .iter()
        .map(|renewer| format!("{}:{}", renewer.principal_type, renewer.principal_name))
        .collect();
    // The id and its credentials are made here, off the executor, so the
    // controller only stamps and stores the token.
    let signed = match delegation_token::new_token_id() {
        Ok(token_id) => crate::cluster::controller::sign_token(&config, &token_id)
            .await
            .map(|signature| (token_id, signature)),
        Err(e) => {
            tracing::error!(error = %e, "no random bytes for a delegation token id");
            Err(ErrorCode::UnknownServerError)
        }
    };
    let (token_id, signature) = match signed {
        Ok(signed) => signed,
        Err(error) => {
            return ready(create_response(
                &owner,
                &requester,
                Err(error),
                version,
                correlation_id,
            ))
        }
    };
    let reply = shard
        .call_controller(ControllerRequest::CreateDelegationToken {
            token_id,
            signature,
            owner: owner.clone(),
            requester: requester.clone(),
            renewers,
            max_lifetime_ms: request.max_lifetime_ms,
        })
        .await;
    Box::pin(async move {
        let outcome = match reply.await {
            Some(ControllerReply::CreateDelegationToken(outcome)) => outcome,
            _ => Err(ErrorCode::RequestTimedOut),
        }
        .and_then(|token| {
            let hmac = config
                .hmac(&token.token_id)
                .ok_or(ErrorCode::DelegationTokenAuthDisabled)?;
            Ok((token, hmac))
        });
        create_response(&owner, &requester, outcome, version, correlation_id)
    })
}

/// CreateDelegationToken's answer: the token, or the error with Kafka's
/// error timestamps.
fn create_response(
    owner: &str,
    requester: &str,
    outcome: Result<(DelegationToken, Vec<u8>), ErrorCode>,
    version: i16,
    correlation_id: i32,
) -> Response {
    let (owner_type, owner_name) = split_principal(owner);
    let (requester_type, requester_name) = split_principal(requester);
    let mut response = CreateDelegationTokenResponse::default();
    response.principal_type = str_bytes(owner_type);
    response.principal_name = str_bytes(owner_name);
    if version >= 3 {
        response.token_requester_principal_type = str_bytes(requester_type);
        response.token_requester_principal_name = str_bytes(requester_name);
    }
    match outcome {
        Ok((token, hmac)) => {
            response.issue_timestamp_ms = token.issue_timestamp_ms;
            response.expiry_timestamp_ms = token.expiry_timestamp_ms;
            response.max_timestamp_ms = token.max_timestamp_ms;
            response.token_id = str_bytes(&token.token_id);
            response.hmac = Bytes::from(hmac);
        }
        Err(error) => {
            response.error_code = error.code();
            let timestamp = error_timestamp(error);
            response.issue_timestamp_ms = timestamp;
            response.expiry_timestamp_ms = timestamp;
            response.max_timestamp_ms = timestamp;
        }
    }
    encode_response(
        ApiKey::CreateDelegationToken,
        version,
        correlation_id,
        &response,
    )
}

/// The timestamps of a refused token request: Kafka's error timestamp from
/// the broker's own checks and failures, 0 (unset) from the controller's.
fn error_timestamp(error: ErrorCode) -> i64 {
    match error {
        ErrorCode::DelegationTokenRequestNotAllowed
        | ErrorCode::DelegationTokenAuthorizationFailed
        | ErrorCode::InvalidPrincipalType
        | ErrorCode::UnknownServerError => ERROR_TIMESTAMP,
        _ => 0,
    }
}

/// The error code and expiry timestamp a renew or expire answers.
fn expiry_answer(outcome: Result<i64, ErrorCode>) -> (i16, i64) {
    match outcome {
        Ok(expiry) => (0, expiry),
        Err(error) => (error.code(), error_timestamp(error)),
    }
}

/// Answers RenewDelegationToken.
pub async fn handle_renew(
    shard: &Rc<Shard>,
    access: &Access,
    request: RenewDelegationTokenRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let reply = change(shard, access, request.hmac, request.renew_period_ms, false).await;
    Box::pin(async move {
        let mut response = RenewDelegationTokenResponse::default();
        (response.error_code, response.expiry_timestamp_ms) = expiry_answer(reply.await);
        encode_response(
            ApiKey::RenewDelegationToken,
            version,
            correlation_id,
            &response,
        )
    })
}

/// Answers ExpireDelegationToken.
pub async fn handle_expire(
    shard: &Rc<Shard>,
    access: &Access,
    request: ExpireDelegationTokenRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let reply = change(
        shard,
        access,
        request.hmac,
        request.expiry_time_period_ms,
        true,
    )
    .await;
    Box::pin(async move {
        let mut response = ExpireDelegationTokenResponse::default();
        (response.error_code, response.expiry_timestamp_ms) = expiry_answer(reply.await);
        encode_response(
            ApiKey::ExpireDelegationToken,
            version,
            correlation_id,
            &response,
        )
    })
}

/// Renews or expires the token of `hmac` through the controller: its new
/// expiry, or the error.
async fn change(
    shard: &Rc<Shard>,
    access: &Access,
    hmac: Bytes,
    period_ms: i64,
    expire: bool,
) -> LocalBoxFuture<'static, Result<i64, ErrorCode>> {
    if let Some(error) = not_allowed(access) {
        return Box::pin(async move { Err(error) });
    }
    if !shard.config.delegation_tokens.enabled() {
        return Box::pin(async { Err(ErrorCode::DelegationTokenAuthDisabled) });
    }
    let reply = shard
        .call_controller(ControllerRequest::ChangeDelegationToken {
            hmac: hmac.to_vec(),
            requester: access.caller_identity().0,
            period_ms,
            expire,
        })
        .await;
    Box::pin(async move {
        match reply.await {
            Some(ControllerReply::ChangeDelegationToken(outcome)) => outcome,
            _ => Err(ErrorCode::RequestTimedOut),
        }
    })
}

/// Answers DescribeDelegationToken.
pub fn handle_describe(
    shard: &Shard,
    access: &Access,
    request: DescribeDelegationTokenRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = DescribeDelegationTokenResponse::default();
    let config = &shard.config.delegation_tokens;
    if let Some(error) = not_allowed(access) {
        response.error_code = error.code();
    } else if !config.enabled() {
        response.error_code = ErrorCode::DelegationTokenAuthDisabled.code();
    } else {
        let owners: Option<HashSet<String>> = request.owners.map(|owners| {
            owners
                .iter()
                .map(|o| format!("{}:{}", o.principal_type, o.principal_name))
                .collect()
        });
        let (caller, _) = access.caller_identity();
        let image = shard.image();
        response.tokens = image
            .delegation_tokens
            .values()
            .filter(|token| {
                owners.as_ref().map_or(true, |owners| {
                    owners.contains(&token.owner)
                        || owners.contains(&token.requester)
                        || token.renewers.iter().any(|r| owners.contains(r))
                })
            })
            .filter(|token| {
                token.owner_or_renewer(&caller)
                    || access.allows(
                        AclOperation::Describe,
                        ResourceType::DelegationToken,
                        &token.token_id,
                    )
                    || access.allows(
                        AclOperation::DescribeTokens,
                        ResourceType::User,
                        &token.owner,
                    )
            })
            .filter_map(|token| {
                let hmac = config.hmac(&token.token_id)?;
                Some(described(token, hmac, version))
            })
            .collect();
    }
    encode_response(
        ApiKey::DescribeDelegationToken,
        version,
        correlation_id,
        &response,
    )
}

/// A token as DescribeDelegationToken v`version` lists it (its requester
/// from v3 only).
fn described(token: &DelegationToken, hmac: Vec<u8>, version: i16) -> DescribedDelegationToken {
    let (owner_type, owner_name) = split_principal(&token.owner);
    let (requester_type, requester_name) = split_principal(&token.requester);
    let mut described = DescribedDelegationToken::default();
    described.principal_type = str_bytes(owner_type);
    described.principal_name = str_bytes(owner_name);
    if version >= 3 {
        described.token_requester_principal_type = str_bytes(requester_type);
        described.token_requester_principal_name = str_bytes(requester_name);
    }
    described.issue_timestamp = token.issue_timestamp_ms;
    described.expiry_timestamp = token.expiry_timestamp_ms;
    described.max_timestamp = token.max_timestamp_ms;
    described.token_id = str_bytes(&token.token_id);
    described.hmac = Bytes::from(hmac);
    described.renewers = token
        .renewers
        .iter()
        .map(|renewer| {
            let (principal_type, principal_name) = split_principal(renewer);
            let mut r = DescribedDelegationTokenRenewer::default();
            r.principal_type = str_bytes(principal_type);
            r.principal_name = str_bytes(principal_name);
            r
        })
        .collect();
    described
}
