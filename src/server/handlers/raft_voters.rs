//! AddRaftVoter (key 80) and RemoveRaftVoter (key 81), v0 (KIP-853), as a
//! Kafka 4.1 node whose quorum is static (`kraft.version` 0, this broker's
//! only level) answers them, measured on Kafka 4.1.1: the request is checked
//! (ALTER on the cluster, the cluster id when given, a voter with an id and a
//! directory id, and for an add an endpoint on the default listener), then
//! refused with UNSUPPORTED_VERSION "Cluster doesn't support adding voter
//! because the kraft.version feature is 0". Nothing changes: this node stays
//! the quorum's one voter (`kafka-metadata-quorum add-controller` and
//! `remove-controller` fail as they do against such a Kafka).

use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiKey, RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::{cluster_refusal, Access};
use crate::server::connection::Response;
use crate::shard::Shard;

/// A refusal: Kafka's code and message.
type Refusal = (ErrorCode, String);

/// The checks both requests share, in Kafka's order: ALTER on the cluster,
/// the cluster id (when given), a voter with an id and a directory id.
fn check_common(
    shard: &Shard,
    access: &Access,
    api: ApiKey,
    cluster_id: Option<&StrBytes>,
    voter_id: i32,
    directory_id: Uuid,
    what: &str,
) -> Result<(), Refusal> {
    if !access.cluster(AclOperation::Alter) {
        return Err((
            ErrorCode::ClusterAuthorizationFailed,
            cluster_refusal(api, "ALTER"),
        ));
    }
    let ours = shard.image().cluster_id.clone();
    if let Some(given) = cluster_id.filter(|given| given.as_str() != ours) {
        return Err((
            ErrorCode::InconsistentClusterId,
            format!("The given id \"{given}\" doesn't match the cluster id \"{ours}\""),
        ));
    }
    if voter_id < 0 || directory_id.is_nil() {
        return Err((
            ErrorCode::InvalidRequest,
            format!("{what} voter request didn't include a valid voter"),
        ));
    }
    Ok(())
}

/// The refusal every valid request gets: the quorum is static.
fn static_quorum(adding: bool) -> Refusal {
    (
        ErrorCode::UnsupportedVersion,
        format!(
            "Cluster doesn't support {} voter because the kraft.version feature is 0",
            if adding { "adding" } else { "removing" }
        ),
    )
}

/// Answers AddRaftVoter.
pub fn handle_add(
    shard: &Shard,
    access: &Access,
    request: AddRaftVoterRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let checked = check_common(
        shard,
        access,
        ApiKey::AddRaftVoter,
        request.cluster_id.as_ref(),
        request.voter_id,
        request.voter_directory_id,
        "Add",
    )
    .and_then(|()| {
        // The default listener: this node's first (a combined node here
        // has no separate controller listener).
        let default = shard
            .config
            .listeners
            .first()
            .map_or("PLAINTEXT", |l| l.security_protocol.name());
        if request.listeners.iter().any(|l| l.name.as_str() == default) {
            return Ok(());
        }
        // As Java prints the request's endpoints (unresolved addresses).
        let endpoints = request
            .listeners
            .iter()
            .map(|l| format!("ListenerName({})={}/<unresolved>:{}", l.name, l.host, l.port))
            .collect::<Vec<_>>()
            .join(", ");
        Err((
            ErrorCode::InvalidRequest,
            format!(
                "Add voter request didn't include the endpoint (Endpoints(endpoints={{{endpoints}}})) for the default listener ListenerName({default})"
            ),
        ))
    });
    let (error, message) = checked.err().unwrap_or_else(|| static_quorum(true));
    let mut response = AddRaftVoterResponse::default();
    response.error_code = error.code();
    response.error_message = Some(str_bytes(&message));
    encode_response(ApiKey::AddRaftVoter, version, correlation_id, &response)
}

/// Answers RemoveRaftVoter.
pub fn handle_remove(
    shard: &Shard,
    access: &Access,
    request: RemoveRaftVoterRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let checked = check_common(
        shard,
        access,
        ApiKey::RemoveRaftVoter,
        request.cluster_id.as_ref(),
        request.voter_id,
        request.voter_directory_id,
        "Remove",
    );
    let (error, message) = checked.err().unwrap_or_else(|| static_quorum(false));
    let mut response = RemoveRaftVoterResponse::default();
    response.error_code = error.code();
    response.error_message = Some(str_bytes(&message));
    encode_response(ApiKey::RemoveRaftVoter, version, correlation_id, &response)
}
