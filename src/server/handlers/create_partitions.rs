//! CreatePartitions (key 37, v0-v3): more partitions for existing topics,
//! added by the controller (see `cluster::controller`). With an authorizer
//! a topic takes ALTER.

use std::collections::HashSet;
use std::rc::Rc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreatePartitionsResponse, TopicName,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{
    AdminOutcome, ControllerReply, ControllerRequest, CreatePartitionsSpec,
};
use crate::shard::Shard;

/// Answers CreatePartitions. A topic named twice is answered once,
/// INVALID_REQUEST "Duplicate topic name.", as Kafka 4.1 answers.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    client: crate::quota::sensors::RequestClient,
    request: CreatePartitionsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = request
        .topics
        .iter()
        .map(|t| t.name.to_string())
        .filter(|name| !seen.insert(name.clone()))
        .collect();
    // (name, answered here) in request order, duplicates once.
    let mut answered_names = HashSet::new();
    let mut order: Vec<(String, Option<AdminOutcome>)> = Vec::new();
    let mut specs = Vec::new();
    for topic in request.topics {
        let name = topic.name.to_string();
        if duplicates.contains(&name) {
            if answered_names.insert(name.clone()) {
                order.push((
                    name,
                    Some((
                        ErrorCode::InvalidRequest.code(),
                        Some("Duplicate topic name.".into()),
                    )),
                ));
            }
            continue;
        }
        // ALTER on the topic, asked before it is looked for.
        if !access.topic(AclOperation::Alter, &name) {
            order.push((
                name,
                Some((ErrorCode::TopicAuthorizationFailed.code(), None)),
            ));
            continue;
        }
        specs.push(CreatePartitionsSpec {
            name: name.clone(),
            count: topic.count,
            assignments: topic.assignments.map(|assignments| {
                assignments
                    .into_iter()
                    .map(|a| a.broker_ids.into_iter().map(|id| id.0).collect())
                    .collect()
            }),
        });
        order.push((name, None));
    }
    let call = if specs.is_empty() {
        None
    } else {
        let request = ControllerRequest::CreatePartitions {
            topics: specs,
            validate_only: request.validate_only,
            // Refused past the quota from v3 on, only throttled before.
            quota: client.mutation_quota(shard, version >= 3),
        };
        Some(shard.call_controller(request).await)
    };
    Box::pin(async move {
        let reply = match call {
            Some(reply) => reply.await,
            None => None,
        };
        let (outcomes, throttle_ms) = match reply {
            Some(ControllerReply::CreatePartitions(outcomes, throttle_ms)) => {
                (outcomes, throttle_ms)
            }
            _ => (Vec::new(), 0),
        };
        let mut outcomes = outcomes.into_iter();
        let mut response = CreatePartitionsResponse::default();
        response.throttle_time_ms = client.throttle(throttle_ms);
        response.results = order
            .into_iter()
            .map(|(name, early)| {
                let (error_code, message) = early.unwrap_or_else(|| {
                    outcomes.next().unwrap_or((
                        ErrorCode::RequestTimedOut.code(),
                        Some("the controller did not answer".into()),
                    ))
                });
                let mut r = CreatePartitionsTopicResult::default();
                r.name = TopicName(str_bytes(&name));
                r.error_code = error_code;
                r.error_message = message.map(|m| str_bytes(&m));
                r
            })
            .collect();
        let response: Response =
            encode_response(ApiKey::CreatePartitions, version, correlation_id, &response);
        response
    })
}
