//! AlterUserScramCredentials (key 51, v0): deletes and sets users' SCRAM
//! credentials through the controller (see
//! `cluster::controller::alter_scram_credentials` for Kafka's rules). The
//! client sends the password already salted; the controller keeps only the
//! stored and server keys derived from it.

use std::rc::Rc;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{ControllerReply, ControllerRequest, ScramUpsertion};
use crate::shard::Shard;

/// Answers AlterUserScramCredentials.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: AlterUserScramCredentialsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    // Every user the request names, for the answer should the controller
    // not answer.
    let mut users: Vec<String> = Vec::new();
    let deletions: Vec<(String, i8)> = request
        .deletions
        .into_iter()
        .map(|d| (d.name.to_string(), d.mechanism))
        .collect();
    let upsertions: Vec<ScramUpsertion> = request
        .upsertions
        .into_iter()
        .map(|u| ScramUpsertion {
            name: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for name in deletions
        .iter()
        .map(|d| &d.0)
        .chain(upsertions.iter().map(|u| &u.name))
    {
        if seen.insert(name) {
            users.push(name.clone());
        }
    }
    // ALTER on the cluster, else each user named is refused (in name
    // order, as Kafka answers).
    if !access.cluster(crate::security::acl::AclOperation::Alter) {
        users.sort();
        let message =
            crate::server::access::cluster_refusal(ApiKey::AlterUserScramCredentials, "ALTER");
        let error = ErrorCode::ClusterAuthorizationFailed.code();
        return super::ready(answer(
            users
                .into_iter()
                .map(|user| (user, error, Some(message.clone())))
                .collect(),
            version,
            correlation_id,
        ));
    }
    let reply = shard
        .call_controller(ControllerRequest::AlterUserScramCredentials {
            deletions,
            upsertions,
        })
        .await;
    Box::pin(async move {
        let results = match reply.await {
            Some(ControllerReply::AlterUserScramCredentials(r)) => Some(r),
            _ => None,
        };
        let results = results.unwrap_or_else(|| {
            users
                .into_iter()
                .map(|user| {
                    (
                        user,
                        ErrorCode::RequestTimedOut.code(),
                        Some("the controller did not answer".to_string()),
                    )
                })
                .collect()
        });
        answer(results, version, correlation_id)
    })
}

/// The response of per-user results (user, error code, message).
fn answer(
    results: Vec<(String, i16, Option<String>)>,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = AlterUserScramCredentialsResponse::default();
    response.results = results
        .into_iter()
        .map(|(user, error_code, message)| {
            let mut result = AlterUserScramCredentialsResult::default();
            result.user = str_bytes(&user);
            result.error_code = error_code;
            result.error_message = message.map(|m| str_bytes(&m));
            result
        })
        .collect();
    encode_response(
        ApiKey::AlterUserScramCredentials,
        version,
        correlation_id,
        &response,
    )
}
