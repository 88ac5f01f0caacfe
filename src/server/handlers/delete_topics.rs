//! DeleteTopics (key 20): by name (v0-v5) or by name or id (v6+). With an
//! authorizer a topic takes DELETE (on it or on the cluster), and DESCRIBE to
//! learn whether it exists.

use std::rc::Rc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{ApiKey, DeleteTopicsRequest, DeleteTopicsResponse, TopicName};

use super::{encode_response, str_bytes};
use crate::cluster::controller::CONTROLLER_SHARD;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::refusal_message;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{ControllerReply, ControllerRequest, ShardReply, ShardRequest};
use crate::shard::Shard;

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
    // (name if resolved, id as requested, early error)
    let wanted: Vec<(Option<String>, uuid::Uuid, Option<ErrorCode>)> = if version >= 6 {
        request
            .topics
            .iter()
            .map(|t| match &t.name {
                Some(name) => (Some(name.to_string()), uuid::Uuid::nil(), None),
                None => match image.topic_by_id(&t.topic_id) {
                    Some(topic) => (Some(topic.name.clone()), t.topic_id, None),
                    None => (None, t.topic_id, Some(ErrorCode::UnknownTopicId)),
                },
            })
            .collect()
    } else {
        request
            .topic_names
            .iter()
            .map(|n| (Some(n.to_string()), uuid::Uuid::nil(), None))
            .collect()
    };
    let disabled = !shard.config.delete_topic_enable;
    // DELETE on the cluster allows every topic; else a named topic takes
    // DESCRIBE (or it is refused whether it exists or not) and DELETE. A
    // topic named by id keeps its name out of the answer without DESCRIBE.
    let may_delete_any = access.cluster(AclOperation::Delete);
    let wanted: Vec<(Option<String>, uuid::Uuid, Option<ErrorCode>)> = wanted
        .into_iter()
        .map(|(name, id, early)| match name {
            Some(name) if early.is_none() && !may_delete_any => {
                let describable = access.topic(AclOperation::Describe, &name);
                let deletable = access.topic(AclOperation::Delete, &name);
                let by_id = !id.is_nil();
                let exists = image.topic(&name).is_some();
                let shown = (describable || !by_id).then_some(name);
                // Described but not deletable: a missing topic is said to
                // be missing, as Kafka's controller answers.
                let refused = if !describable {
                    Some(ErrorCode::TopicAuthorizationFailed)
                } else if !deletable && !exists {
                    Some(ErrorCode::UnknownTopicOrPartition)
                } else {
                    (!deletable).then_some(ErrorCode::TopicAuthorizationFailed)
                };
                (shown, id, refused)
            }
            name => (name, id, early),
        })
        .collect();
    let names: Vec<String> = wanted
        .iter()
        .filter(|w| w.2.is_none() && !disabled)
        .filter_map(|w| w.0.clone())
        .collect();
    let call = if names.is_empty() {
        None
    } else {
        Some(
            shard
                .call(
                    CONTROLLER_SHARD,
                    ShardRequest::Controller(ControllerRequest::DeleteTopics {
                        names,
                        // Refused past the quota from v5 on, only throttled
                        // before.
                        quota: client.mutation_quota(shard, version >= 5),
                    }),
                )
                .await,
        )
    };
    Box::pin(async move {
        let (outcomes, throttle_ms) = match call {
            Some(Ok(completion)) => match completion.await {
                Ok(ShardReply::Controller(ControllerReply::DeleteTopics(
                    outcomes,
                    throttle_ms,
                ))) => (outcomes, throttle_ms),
                _ => (Vec::new(), 0),
            },
            _ => (Vec::new(), 0),
        };
        let mut outcomes = outcomes.into_iter();
        let mut response = DeleteTopicsResponse::default();
        response.throttle_time_ms = client.throttle(throttle_ms);
        response.responses = wanted
            .into_iter()
            .map(|(name, requested_id, early)| {
                let mut r = DeletableTopicResult::default();
                r.name = name.as_deref().map(|n| TopicName(str_bytes(n)));
                if version >= 6 {
                    r.topic_id = requested_id;
                }
                // delete.topic.enable=false refuses the whole request first.
                let error = if disabled {
                    ErrorCode::TopicDeletionDisabled.code()
                } else if let Some(e) = early {
                    e.code()
                } else {
                    match outcomes.next() {
                        Some((code, id)) => {
                            if code == 0 && version >= 6 {
                                r.topic_id = id;
                            }
                            code
                        }
                        None => ErrorCode::RequestTimedOut.code(),
                    }
                };
                r.error_code = error;
                r.error_message = (error == ErrorCode::TopicAuthorizationFailed.code())
                    .then(|| str_bytes(refusal_message(ErrorCode::TopicAuthorizationFailed)));
                r
            })
            .collect();
        let response: Response =
            encode_response(ApiKey::DeleteTopics, version, correlation_id, &response);
        response
    })
}
