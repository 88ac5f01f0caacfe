//! AddRaftVoter (key 80) and RemoveRaftVoter (key 81), v0 (KIP-853), as a
//! Kafka 4.1 node whose quorum is static (`kraft.version` 0, this broker's
//! only level) answers them, measured on Kafka 4.1.1: the request is checked
//! (ALTER on the cluster, the cluster id when given, a voter with an id and a
//! directory id, and for an add an endpoint on the default listener), then
//! refused with UNSUPPORTED_VERSION "Cluster doesn't support adding voter
//! because the kraft.version feature is 0". Nothing changes: this node stays
//! the quorum's one voter (`kafka-metadata-quorum add-controller` and
//! `remove-controller` fail as they do against such a Kafka).

use kafka_protocol::messages::add_raft_voter_request::Listener;
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

/// The voter a request adds or removes.
struct VoterChange<'a> {
    adding: bool,
    cluster_id: Option<&'a StrBytes>,
    voter_id: i32,
    directory_id: Uuid,
}

/// Why `change` is refused, checked in Kafka's order: ALTER on the
/// cluster, the cluster id (when given), a voter with an id and a directory
/// id, then `more` (an add's endpoint); a valid change is refused because
/// the quorum is static.
fn refusal(
    shard: &Shard,
    access: &Access,
    change: &VoterChange<'_>,
    more: impl FnOnce() -> Result<(), Refusal>,
) -> Refusal {
    let (api, what, verb) = if change.adding {
        (ApiKey::AddRaftVoter, "Add", "adding")
    } else {
        (ApiKey::RemoveRaftVoter, "Remove", "removing")
    };
    if !access.cluster(AclOperation::Alter) {
        return (
            ErrorCode::ClusterAuthorizationFailed,
            cluster_refusal(api, "ALTER"),
        );
    }
    let ours = shard.image().cluster_id.clone();
    if let Some(given) = change.cluster_id.filter(|given| given.as_str() != ours) {
        return (
            ErrorCode::InconsistentClusterId,
            format!("The given id \"{given}\" doesn't match the cluster id \"{ours}\""),
        );
    }
    if change.voter_id < 0 || change.directory_id.is_nil() {
        return (
            ErrorCode::InvalidRequest,
            format!("{what} voter request didn't include a valid voter"),
        );
    }
    more().err().unwrap_or_else(|| {
        (
            ErrorCode::UnsupportedVersion,
            format!("Cluster doesn't support {verb} voter because the kraft.version feature is 0"),
        )
    })
}

/// An add's check: an endpoint on the default listener, this node's first
/// (a combined node here has no separate controller listener).
fn check_endpoint(shard: &Shard, listeners: &[Listener]) -> Result<(), Refusal> {
    let default = shard
        .config
        .listeners
        .first()
        .map_or("PLAINTEXT", |l| l.security_protocol.name());
    if listeners.iter().any(|l| l.name.as_str() == default) {
        return Ok(());
    }
    // As Java prints the request's endpoints (unresolved addresses).
    let endpoints = listeners
        .iter()
        .map(|l| {
            format!(
                "ListenerName({})={}/<unresolved>:{}",
                l.name, l.host, l.port
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Err((
        ErrorCode::InvalidRequest,
        format!(
            "Add voter request didn't include the endpoint (Endpoints(endpoints={{{endpoints}}})) for the default listener ListenerName({default})"
        ),
    ))
}

/// Answers AddRaftVoter.
pub fn handle_add(
    shard: &Shard,
    access: &Access,
    request: AddRaftVoterRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let change = VoterChange {
        adding: true,
        cluster_id: request.cluster_id.as_ref(),
        voter_id: request.voter_id,
        directory_id: request.voter_directory_id,
    };
    let (error, message) = refusal(shard, access, &change, || {
        check_endpoint(shard, &request.listeners)
    });
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
    let change = VoterChange {
        adding: false,
        cluster_id: request.cluster_id.as_ref(),
        voter_id: request.voter_id,
        directory_id: request.voter_directory_id,
    };
    let (error, message) = refusal(shard, access, &change, || Ok(()));
    let mut response = RemoveRaftVoterResponse::default();
    response.error_code = error.code();
    response.error_message = Some(str_bytes(&message));
    encode_response(ApiKey::RemoveRaftVoter, version, correlation_id, &response)
}
