//! DescribeUserScramCredentials (key 50, v0): which SCRAM mechanisms each
//! user has a credential for, and their iterations, from this shard's copy
//! of the metadata image. As Kafka's `ScramImage.describe`: no users (null
//! or empty) lists every user; a user named twice is answered once with
//! DUPLICATE_RESOURCE, a user without credentials RESOURCE_NOT_FOUND, each
//! with Kafka's message. Users come in request order (all users: sorted),
//! mechanisms SCRAM-SHA-256 before SCRAM-SHA-512.

use std::collections::HashMap;

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    ApiKey, DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::server::connection::Response;
use crate::shard::Shard;

/// Answers DescribeUserScramCredentials.
pub fn handle(
    shard: &Shard,
    access: &crate::server::access::Access,
    request: DescribeUserScramCredentialsRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let image = shard.image();
    // DESCRIBE on the cluster, else the request and each user named are
    // refused (Kafka leaves the user out of those results).
    if !access.cluster(crate::security::acl::AclOperation::Describe) {
        let error = ErrorCode::ClusterAuthorizationFailed.code();
        let mut response = DescribeUserScramCredentialsResponse::default();
        response.error_code = error;
        response.results = request
            .users
            .unwrap_or_default()
            .iter()
            .map(|_| {
                let mut result = DescribeUserScramCredentialsResult::default();
                result.error_code = error;
                result
            })
            .collect();
        return encode_response(
            ApiKey::DescribeUserScramCredentials,
            version,
            correlation_id,
            &response,
        );
    }
    // (user, named more than once), first mention first.
    let mut users: Vec<(String, bool)> = Vec::new();
    match request.users.filter(|users| !users.is_empty()) {
        None => users.extend(image.scram_credentials.keys().map(|u| (u.clone(), false))),
        Some(named) => {
            let mut at: HashMap<String, usize> = HashMap::new();
            for user in named {
                let name = user.name.to_string();
                match at.get(&name) {
                    Some(&index) => users[index].1 = true,
                    None => {
                        at.insert(name.clone(), users.len());
                        users.push((name, false));
                    }
                }
            }
        }
    }
    let mut response = DescribeUserScramCredentialsResponse::default();
    response.results = users
        .into_iter()
        .map(|(user, twice)| {
            let mut result = DescribeUserScramCredentialsResult::default();
            let credentials = image.scram_credentials.get(&user);
            if twice {
                result.error_code = ErrorCode::DuplicateResource.code();
                result.error_message = Some(str_bytes(&format!(
                    "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
                )));
            } else if let Some(credentials) = credentials {
                result.credential_infos = credentials
                    .iter()
                    .map(|(mechanism, credential)| {
                        let mut info = CredentialInfo::default();
                        info.mechanism = mechanism.type_id();
                        info.iterations = credential.iterations;
                        info
                    })
                    .collect();
            } else {
                result.error_code = ErrorCode::ResourceNotFound.code();
                result.error_message = Some(str_bytes(&format!(
                    "Attempt to describe a user credential that does not exist: {user}"
                )));
            }
            result.user = str_bytes(&user);
            result
        })
        .collect();
    encode_response(
        ApiKey::DescribeUserScramCredentials,
        version,
        correlation_id,
        &response,
    )
}
