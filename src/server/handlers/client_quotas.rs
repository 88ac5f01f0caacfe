//! DescribeClientQuotas (key 48, v0-1) from this shard's image, and
//! AlterClientQuotas (key 49, v0-1) through the controller (see
//! `cluster::controller::alter_client_quotas` and `quota` for Kafka's
//! rules). Describing takes DESCRIBE_CONFIGS on the cluster, altering
//! ALTER_CONFIGS, as in Kafka.

use std::rc::Rc;

use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlteredEntity, EntryData as AlteredEntry,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::quota::{requested_entity, Filter, QuotaAlteration};
use crate::security::acl::AclOperation;
use crate::server::access::Access;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{ControllerReply, ControllerRequest};
use crate::shard::Shard;

/// Answers DescribeClientQuotas.
pub fn describe(
    shard: &Shard,
    access: &Access,
    request: DescribeClientQuotasRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = DescribeClientQuotasResponse::default();
    let components: Vec<(String, i8, Option<String>)> = request
        .components
        .iter()
        .map(|c| {
            (
                c.entity_type.to_string(),
                c.match_type,
                c._match.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    let filter = if access.cluster(AclOperation::DescribeConfigs) {
        Filter::parse(&components, request.strict).map_err(|(code, message)| (code, Some(message)))
    } else {
        // Kafka answers its default message, which it leaves out.
        Err((ErrorCode::ClusterAuthorizationFailed, None))
    };
    match filter {
        Err((code, message)) => {
            response.error_code = code.code();
            response.error_message = message.map(|m| str_bytes(&m));
            response.entries = None;
        }
        Ok(filter) => {
            // Kafka's generated default: an empty message, not null.
            response.error_message = Some(str_bytes(""));
            let image = shard.image();
            response.entries = Some(
                image
                    .client_quotas
                    .iter()
                    .filter(|(entity, _)| filter.matches(entity))
                    .map(|(entity, keys)| {
                        let mut entry = EntryData::default();
                        entry.entity = entity
                            .components()
                            .map(|(kind, name)| {
                                let mut data = EntityData::default();
                                data.entity_type = str_bytes(kind.name());
                                data.entity_name = name.as_wire().map(str_bytes);
                                data
                            })
                            .collect();
                        entry.values = keys
                            .iter()
                            .map(|(key, value)| {
                                let mut data = ValueData::default();
                                data.key = str_bytes(key.name());
                                data.value = *value;
                                data
                            })
                            .collect();
                        entry
                    })
                    .collect(),
            );
        }
    }
    encode_response(
        ApiKey::DescribeClientQuotas,
        version,
        correlation_id,
        &response,
    )
}

/// Answers AlterClientQuotas.
pub async fn alter(
    shard: &Rc<Shard>,
    access: &Access,
    request: AlterClientQuotasRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    // Each entry's entity as the request named it, for answers that echo
    // the request.
    let sent: Vec<Vec<(String, Option<String>)>> = request
        .entries
        .iter()
        .map(|e| {
            e.entity
                .iter()
                .map(|c| {
                    (
                        c.entity_type.to_string(),
                        c.entity_name.as_ref().map(|n| n.to_string()),
                    )
                })
                .collect()
        })
        .collect();
    if !access.cluster(AclOperation::AlterConfigs) {
        let error = ErrorCode::ClusterAuthorizationFailed;
        return super::ready(whole_refusal(
            &sent,
            error,
            "Cluster authorization failed.",
            version,
            correlation_id,
        ));
    }
    let entries: Vec<QuotaAlteration> = request
        .entries
        .iter()
        .zip(&sent)
        .map(|(entry, components)| {
            let entity =
                requested_entity(components.iter().map(|(k, n)| (k.as_str(), n.as_deref())));
            let ops = entry
                .ops
                .iter()
                .map(|op| (op.key.to_string(), (!op.remove).then_some(op.value)))
                .collect();
            (entity, ops)
        })
        .collect();
    let reply = shard
        .call_controller(ControllerRequest::AlterClientQuotas {
            entries,
            validate_only: request.validate_only,
        })
        .await;
    Box::pin(async move {
        match reply.await {
            Some(ControllerReply::AlterClientQuotas(Ok(results))) => answer(
                results.iter().map(|(entity, refusal)| {
                    let code = match refusal {
                        Some(_) => ErrorCode::InvalidRequest.code(),
                        None => 0,
                    };
                    (code, refusal.as_deref(), &entity[..])
                }),
                version,
                correlation_id,
            ),
            Some(ControllerReply::AlterClientQuotas(Err((code, message)))) => {
                whole_refusal(&sent, code, &message, version, correlation_id)
            }
            _ => whole_refusal(
                &sent,
                ErrorCode::RequestTimedOut,
                "the controller did not answer",
                version,
                correlation_id,
            ),
        }
    })
}

/// The response of (error code, message, entity) entries.
fn answer<'a>(
    entries: impl Iterator<Item = (i16, Option<&'a str>, &'a [(String, Option<String>)])>,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = AlterClientQuotasResponse::default();
    response.entries = entries
        .map(|(code, message, components)| {
            let mut entry = AlteredEntry::default();
            entry.error_code = code;
            entry.error_message = message.map(str_bytes);
            entry.entity = components
                .iter()
                .map(|(kind, name)| {
                    let mut data = AlteredEntity::default();
                    data.entity_type = str_bytes(kind);
                    data.entity_name = name.as_deref().map(str_bytes);
                    data
                })
                .collect();
            entry
        })
        .collect();
    encode_response(
        ApiKey::AlterClientQuotas,
        version,
        correlation_id,
        &response,
    )
}

/// Every entry of the request, its entity as sent, refused with `code` and
/// `message` (Kafka's answer to an error of the whole request).
fn whole_refusal(
    sent: &[Vec<(String, Option<String>)>],
    code: ErrorCode,
    message: &str,
    version: i16,
    correlation_id: i32,
) -> Response {
    answer(
        sent.iter().map(|c| (code.code(), Some(message), &c[..])),
        version,
        correlation_id,
    )
}
