//! FindCoordinator (key 10): every group and transactional id is
//! coordinated by this node; the shard that runs the coordinator is an
//! internal detail the router hides. The first group lookup creates the
//! `__consumer_offsets` topic and the first transactional lookup
//! `__transaction_state`, as Kafka does.
//!
//! Authorization, as in Kafka: DESCRIBE on the group or transactional id
//! named, else GROUP_AUTHORIZATION_FAILED or
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED for that key with no node (v0-v3
//! with the error's message); a refused key does not create the internal
//! topic.
//!
//! Share-group keys (`SHARE`, v6+, `group:topicId:partition`) are answered
//! as Kafka 4.1.1 answers them with share groups off (its default): without
//! CLUSTER_ACTION CLUSTER_AUTHORIZATION_FAILED, else a well-formed key
//! COORDINATOR_NOT_AVAILABLE and a malformed one INVALID_REQUEST, with an
//! empty message; the key type in v4-v5 is
//! INVALID_REQUEST with an empty message, and an unknown key type (or the
//! share type before v4) INVALID_REQUEST with Kafka's standard message.

use std::rc::Rc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{ApiKey, BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::encode_response;
use super::str_bytes;
use crate::cluster::controller::{ensure_offsets_topic, ensure_txn_state_topic};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::refusal_message;
use crate::server::access::Access;
use crate::server::connection::Responder;
use crate::shard::Shard;

/// FindCoordinator key types.
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;
const KEY_TYPE_SHARE: i8 = 2;

/// Kafka's message for INVALID_REQUEST.
const INVALID_REQUEST_MESSAGE: &str = "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.";

/// Kafka 4.1.1's answer to share key `key` (v6) while share groups are
/// off: CLUSTER_ACTION is asked first; no share coordinator runs.
fn share_key_answer(key: &str, cluster_action: bool) -> (ErrorCode, &'static str) {
    if !cluster_action {
        let refused = ErrorCode::ClusterAuthorizationFailed;
        (refused, refusal_message(refused))
    } else if is_share_partition_key(key) {
        (ErrorCode::CoordinatorNotAvailable, "")
    } else {
        (ErrorCode::InvalidRequest, "")
    }
}

/// Whether `key` is a share-partition key as Kafka's `SharePartitionKey`
/// validates it: `group:topicId:partition` split as Java's
/// `String.split(":")` does (trailing empty parts dropped), the group not
/// blank (Java's `trim`), the topic id as `Uuid.fromString` reads it (at
/// most 24 characters of URL-safe base64, padding optional but correct,
/// trailing bits allowed, 16 bytes) and the partition an int.
fn is_share_partition_key(key: &str) -> bool {
    use base64::alphabet::URL_SAFE;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine;
    const UUID_BASE64: GeneralPurpose = GeneralPurpose::new(
        &URL_SAFE,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireNone),
    );
    let mut parts: Vec<&str> = key.split(':').collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    let [group, topic_id, partition] = parts[..] else {
        return false;
    };
    // Padding, when there is any, must fill the last group of four.
    let unpadded = topic_id.trim_end_matches('=');
    let padding_ok = unpadded.len() == topic_id.len() || topic_id.len() % 4 == 0;
    !group.trim_matches(|c: char| c <= ' ').is_empty()
        && topic_id.len() <= 24
        && padding_ok
        && UUID_BASE64
            .decode(unpadded)
            .is_ok_and(|bytes| bytes.len() == 16)
        && partition.parse::<i32>().is_ok()
}

#[cfg(test)]
mod share_key_tests {
    use super::is_share_partition_key;

    /// As Kafka 4.1.1's `SharePartitionKey.validate` and `Uuid.fromString`
    /// judge them.
    #[test]
    fn share_partition_keys_are_read_as_kafka_reads_them() {
        let id = "AAAAAAAAAAAAAAAAAAAAAA";
        for valid in [
            format!("g:{id}:0"),
            format!("g:{id}:-1"),
            format!("g:{id}:+3"),
            format!("g:{id}:0:"),
            format!("g:{id}:0::"),
            format!("\u{a0}:{id}:0"),
            format!("g:{id}==:0"),
            "g:AAAAAAAAAAAAAAAAAAAAAB:0".to_string(),
        ] {
            assert!(is_share_partition_key(&valid), "{valid}");
        }
        for invalid in [
            "g1".to_string(),
            format!(":{id}:0"),
            format!(" \t:{id}:0"),
            format!("g:{id}:x"),
            format!("g:{id}:0:1"),
            format!("g:{id}:0::x"),
            format!("g:{id}=:0"),
            format!("g:{id}===:0"),
            "g:zz:0".to_string(),
            format!("g:{id}AAAA:0"),
        ] {
            assert!(!is_share_partition_key(&invalid), "{invalid}");
        }
    }
}

/// The error for a key the caller may not DESCRIBE, if refused.
fn refusal(access: &Access, key_type: i8, key: &str) -> Option<ErrorCode> {
    match key_type {
        KEY_TYPE_GROUP if !access.group(AclOperation::Describe, key) => {
            Some(ErrorCode::GroupAuthorizationFailed)
        }
        KEY_TYPE_TRANSACTION if !access.transactional_id(AclOperation::Describe, key) => {
            Some(ErrorCode::TransactionalIdAuthorizationFailed)
        }
        _ => None,
    }
}

/// Answers FindCoordinator.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &Access,
    listener: &crate::config::Listener,
    request: FindCoordinatorRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let host = str_bytes(&listener.advertised_host);
    let port = i32::from(listener.advertised_port);
    let keys: Vec<StrBytes> = if version >= 4 {
        request.coordinator_keys.clone()
    } else {
        vec![request.key.clone()]
    };
    let refusals: Vec<Option<ErrorCode>> = keys
        .iter()
        .map(|key| refusal(access, request.key_type, key))
        .collect();
    // Kafka creates the internal topic only when looking up a key the
    // caller may describe.
    let all_refused = !refusals.is_empty() && refusals.iter().all(Option::is_some);
    let cluster_action = access.cluster(AclOperation::ClusterAction);
    Box::pin(async move {
        let (error, message): (Option<ErrorCode>, Option<String>) = match request.key_type {
            _ if all_refused => (None, None),
            KEY_TYPE_GROUP => match ensure_offsets_topic(&shard).await {
                Ok(()) => (None, None),
                Err(e) => (
                    Some(ErrorCode::CoordinatorNotAvailable),
                    Some(e.to_string()),
                ),
            },
            KEY_TYPE_TRANSACTION => match ensure_txn_state_topic(&shard).await {
                Ok(()) => (None, None),
                Err(e) => (
                    Some(ErrorCode::CoordinatorNotAvailable),
                    Some(e.to_string()),
                ),
            },
            // Share keys are answered one by one below.
            KEY_TYPE_SHARE if version >= 6 => (None, None),
            KEY_TYPE_SHARE if version >= 4 => {
                (Some(ErrorCode::InvalidRequest), Some(String::new()))
            }
            _ => (
                Some(ErrorCode::InvalidRequest),
                Some(INVALID_REQUEST_MESSAGE.to_string()),
            ),
        };
        let share_keys = request.key_type == KEY_TYPE_SHARE && version >= 6;
        let config = &shard.config;
        let coordinators: Vec<Coordinator> = keys
            .into_iter()
            .zip(refusals)
            .map(|(key, refused)| {
                // An empty group or transactional id has a coordinator
                // like any other, as in Kafka 4.1.
                let mut c = Coordinator::default();
                c.key = key;
                if let Some(refused) = refused {
                    c.error_code = refused.code();
                    c.node_id = BrokerId(-1);
                    c.host = str_bytes("");
                    c.port = -1;
                    // Only the single-key answer has Kafka's message.
                    if version < 4 {
                        c.error_message = Some(str_bytes(refusal_message(refused)));
                    }
                    return c;
                }
                let (error, message) = if share_keys {
                    let (error, message) = share_key_answer(&c.key, cluster_action);
                    (Some(error), Some(message.to_string()))
                } else {
                    (error, message.clone())
                };
                c.error_code = error.map_or(0, |e| e.code());
                if error.is_none() {
                    c.node_id = BrokerId(config.node_id);
                    c.host = host.clone();
                    c.port = port;
                } else {
                    c.node_id = BrokerId(-1);
                    c.host = str_bytes("");
                    c.port = -1;
                    c.error_message = message.as_deref().map(str_bytes);
                }
                c
            })
            .collect();
        let mut response = FindCoordinatorResponse::default();
        if version >= 4 {
            response.coordinators = coordinators;
        } else if let Some(first) = coordinators.into_iter().next() {
            response.error_code = first.error_code;
            if version >= 1 {
                response.error_message = first.error_message;
            }
            response.node_id = first.node_id;
            response.host = first.host;
            response.port = first.port;
        }
        encode_response(ApiKey::FindCoordinator, version, correlation_id, &response)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_carry_kafkas_messages() {
        assert_eq!(
            refusal_message(ErrorCode::GroupAuthorizationFailed),
            "Group authorization failed."
        );
        assert_eq!(
            refusal_message(ErrorCode::TransactionalIdAuthorizationFailed),
            "Transactional Id authorization failed."
        );
    }
}
