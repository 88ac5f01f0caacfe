//! DeleteTopics (key 20): by name (v0-v5) or by name or id (v6+), as
//! Kafka's ControllerApis: a name or id given twice, an entry with both or
//! neither, and a name whose id another entry gives are each refused with
//! INVALID_REQUEST and Kafka's message, and none of them is deleted. With an
//! authorizer a topic takes DELETE (on it or on the cluster), and DESCRIBE
//! to learn whether it exists.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{ApiKey, DeleteTopicsRequest, DeleteTopicsResponse, TopicName};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::refusal_message;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{ControllerReply, ControllerRequest};
use crate::shard::Shard;

/// One answer: a topic refused before the controller is asked, or one it
/// is asked to delete (whose outcome is its answer).
struct Row {
    name: Option<String>,
    id: uuid::Uuid,
    refused: Option<(ErrorCode, Option<&'static str>)>,
}

impl Row {
    fn refused(
        name: Option<&str>,
        id: uuid::Uuid,
        error: ErrorCode,
        message: Option<&'static str>,
    ) -> Row {
        Row {
            name: name.map(str::to_string),
            id,
            refused: Some((error, message)),
        }
    }
}

/// The values given more than once, and the others in the order given.
fn split_duplicates<T: Eq + std::hash::Hash + Copy>(
    values: impl Iterator<Item = T>,
) -> (Vec<T>, Vec<T>) {
    let mut seen = HashSet::new();
    let mut repeated = HashSet::new();
    let mut order = Vec::new();
    for value in values {
        if seen.insert(value) {
            order.push(value);
        } else {
            repeated.insert(value);
        }
    }
    order.into_iter().partition(|v| !repeated.contains(v))
}

/// Answers DeleteTopics.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    client: crate::quota::sensors::RequestClient,
    request: DeleteTopicsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let image = shard.image();
    let disabled = !shard.config.delete_topic_enable;
    let rows = if disabled {
        // delete.topic.enable=false refuses the whole request first, each
        // entry echoed as given (Kafka's error response): with
        // TOPIC_DELETION_DISABLED from v3, INVALID_REQUEST before it.
        let error = if version >= 3 {
            ErrorCode::TopicDeletionDisabled
        } else {
            ErrorCode::InvalidRequest
        };
        if version >= 6 {
            request
                .topics
                .iter()
                .map(|t| Row::refused(t.name.as_ref().map(|n| n.as_str()), t.topic_id, error, None))
                .collect()
        } else {
            request
                .topic_names
                .iter()
                .map(|n| Row::refused(Some(n), uuid::Uuid::nil(), error, None))
                .collect()
        }
    } else {
        rows_to_answer(&request, version, access, &image)
    };
    let names: Vec<String> = rows
        .iter()
        .filter(|row| row.refused.is_none())
        .filter_map(|row| row.name.clone())
        .collect();
    let call = if names.is_empty() {
        None
    } else {
        Some(
            shard
                .call_controller(ControllerRequest::DeleteTopics {
                    names,
                    // Refused past the quota from v5 on, only throttled
                    // before.
                    quota: client.mutation_quota(shard, version >= 5),
                })
                .await,
        )
    };
    Box::pin(async move {
        let reply = match call {
            Some(reply) => reply.await,
            None => None,
        };
        let (outcomes, throttle_ms) = match reply {
            Some(ControllerReply::DeleteTopics(outcomes, throttle_ms)) => (outcomes, throttle_ms),
            _ => (Vec::new(), 0),
        };
        let mut outcomes = outcomes.into_iter();
        let mut response = DeleteTopicsResponse::default();
        response.throttle_time_ms = client.throttle(throttle_ms);
        response.responses = rows
            .into_iter()
            .map(|row| {
                let mut r = DeletableTopicResult::default();
                r.name = row.name.as_deref().map(|n| TopicName(str_bytes(n)));
                if version >= 6 {
                    r.topic_id = row.id;
                }
                let (error_code, message) = match row.refused {
                    Some((error, message)) => (error.code(), message),
                    None => match outcomes.next() {
                        Some((code, id)) => {
                            if code == 0 && version >= 6 {
                                r.topic_id = id;
                            }
                            (code, None)
                        }
                        None => (ErrorCode::RequestTimedOut.code(), None),
                    },
                };
                r.error_code = error_code;
                r.error_message = message.map(str_bytes);
                r
            })
            .collect();
        let response: Response =
            encode_response(ApiKey::DeleteTopics, version, correlation_id, &response);
        response
    })
}

/// What each topic of the request gets, in Kafka's order of checks:
/// malformed entries and duplicates, unknown ids, authorization of the
/// topics given by id, then of those given by name (with unknown names,
/// and names whose id another entry gives). The rows without a refusal
/// are the topics to delete.
fn rows_to_answer(
    request: &DeleteTopicsRequest,
    version: i16,
    access: &crate::server::access::Access,
    image: &crate::cluster::image::MetadataImage,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut named: Vec<&str> = Vec::new();
    let mut by_id: Vec<uuid::Uuid> = Vec::new();
    if version >= 6 {
        for topic in &request.topics {
            match (&topic.name, topic.topic_id.is_nil()) {
                (None, true) => rows.push(Row::refused(
                    None,
                    uuid::Uuid::nil(),
                    ErrorCode::InvalidRequest,
                    Some("Neither topic name nor id were specified."),
                )),
                (None, false) => by_id.push(topic.topic_id),
                (Some(name), true) => named.push(name),
                (Some(name), false) => rows.push(Row::refused(
                    Some(name),
                    topic.topic_id,
                    ErrorCode::InvalidRequest,
                    Some("You may not specify both topic name and topic id."),
                )),
            }
        }
    } else {
        named.extend(request.topic_names.iter().map(|n| n.as_str()));
    }
    let (named, repeated_names) = split_duplicates(named.into_iter());
    let (by_id, repeated_ids) = split_duplicates(by_id.into_iter());
    for name in &repeated_names {
        rows.push(Row::refused(
            Some(name),
            uuid::Uuid::nil(),
            ErrorCode::InvalidRequest,
            Some("Duplicate topic name."),
        ));
    }
    for id in &repeated_ids {
        rows.push(Row::refused(
            None,
            *id,
            ErrorCode::InvalidRequest,
            Some("Duplicate topic id."),
        ));
    }
    let mut repeated_ids: HashSet<uuid::Uuid> = repeated_ids.into_iter().collect();
    // DELETE on the cluster allows every topic; else a topic takes DELETE,
    // and DESCRIBE to be named in a refusal (or, given by name, to learn
    // whether it exists).
    let may_delete_any = access.cluster(AclOperation::Delete);
    let describable = |name: &str| may_delete_any || access.topic(AclOperation::Describe, name);
    let deletable = |name: &str| may_delete_any || access.topic(AclOperation::Delete, name);
    let refused_topic = || {
        (
            ErrorCode::TopicAuthorizationFailed,
            Some(refusal_message(ErrorCode::TopicAuthorizationFailed)),
        )
    };
    // The topics to delete, by id, in the order found.
    let mut deleting: Vec<Option<(uuid::Uuid, String)>> = Vec::new();
    let mut deleting_at: HashMap<uuid::Uuid, usize> = HashMap::new();
    for id in by_id {
        match image.topic_by_id(&id) {
            None => rows.push(Row::refused(
                None,
                id,
                ErrorCode::UnknownTopicId,
                Some("This server does not host this topic ID."),
            )),
            Some(topic) if !deletable(&topic.name) => {
                let (error, message) = refused_topic();
                let shown = describable(&topic.name).then_some(topic.name.as_str());
                rows.push(Row::refused(shown, id, error, message));
            }
            Some(topic) => {
                deleting_at.insert(id, deleting.len());
                deleting.push(Some((id, topic.name.clone())));
            }
        }
    }
    for name in named {
        if !describable(name) {
            let (error, message) = refused_topic();
            rows.push(Row::refused(Some(name), uuid::Uuid::nil(), error, message));
            continue;
        }
        let Some(topic) = image.topic(name) else {
            rows.push(Row::refused(
                Some(name),
                uuid::Uuid::nil(),
                ErrorCode::UnknownTopicOrPartition,
                Some("This server does not host this topic-partition."),
            ));
            continue;
        };
        if !deletable(name) {
            let (error, message) = refused_topic();
            rows.push(Row::refused(Some(name), uuid::Uuid::nil(), error, message));
            continue;
        }
        let id = topic.topic_id;
        if repeated_ids.contains(&id) || deleting_at.contains_key(&id) {
            // Given by id too: neither is deleted.
            if let Some(at) = deleting_at.remove(&id) {
                deleting[at] = None;
            }
            repeated_ids.insert(id);
            rows.push(Row::refused(
                Some(name),
                id,
                ErrorCode::InvalidRequest,
                Some("The provided topic name maps to an ID that was already supplied."),
            ));
        } else {
            deleting_at.insert(id, deleting.len());
            deleting.push(Some((id, name.to_string())));
        }
    }
    rows.extend(deleting.into_iter().flatten().map(|(id, name)| Row {
        name: Some(name),
        id,
        refused: None,
    }));
    rows
}
