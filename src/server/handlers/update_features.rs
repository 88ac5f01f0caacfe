//! UpdateFeatures (key 57, v0-v2, flexible): `kafka-features upgrade` and
//! `downgrade`. The controller checks every update as Kafka's
//! `FeatureControlManager` does (`cluster::features::check_update`) and
//! records the changed levels in the metadata log; ApiVersions then
//! answers them with a higher epoch, so clients see the change when they
//! next connect.
//!
//! Answers as Kafka 4.1: one error for the whole request (the first
//! refused update fails all, with no per-feature results); on success v0-v1
//! list every update with NONE and the message "NONE", v2 lists none. v0's
//! `AllowDowngrade` is ignored, as Kafka ignores it: v0 can only upgrade.
//! Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

use std::rc::Rc;

use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{ApiKey, UpdateFeaturesRequest, UpdateFeaturesResponse};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::{cluster_refusal, Access};
use crate::server::connection::Responder;
use crate::shard::messages::{ControllerReply, ControllerRequest};
use crate::shard::Shard;

/// First version whose answer lists no per-feature results.
const NO_RESULTS_SINCE: i16 = 2;

/// Answers UpdateFeatures.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &Access,
    request: UpdateFeaturesRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let names: Vec<_> = request
        .feature_updates
        .iter()
        .map(|u| u.feature.clone())
        .collect();
    let answer = move |outcome: Result<(), (ErrorCode, String)>| {
        let mut response = UpdateFeaturesResponse::default();
        match outcome {
            Ok(()) => {
                response.error_message = None;
                if version < NO_RESULTS_SINCE {
                    response.results = names
                        .into_iter()
                        .map(|feature| {
                            let mut result = UpdatableFeatureResult::default();
                            result.feature = feature;
                            result.error_message = Some(str_bytes("NONE"));
                            result
                        })
                        .collect();
                }
            }
            Err((error, message)) => {
                response.error_code = error.code();
                response.error_message = Some(str_bytes(&message));
            }
        }
        encode_response(ApiKey::UpdateFeatures, version, correlation_id, &response)
    };
    if !access.cluster(AclOperation::Alter) {
        let refusal = (
            ErrorCode::ClusterAuthorizationFailed,
            cluster_refusal(ApiKey::UpdateFeatures, "ALTER"),
        );
        return super::ready(answer(Err(refusal)));
    }
    let updates = request
        .feature_updates
        .into_iter()
        .map(|u| (u.feature.to_string(), u.max_version_level, u.upgrade_type))
        .collect();
    let reply = shard
        .call_controller(ControllerRequest::UpdateFeatures {
            updates,
            validate_only: request.validate_only,
        })
        .await;
    Box::pin(async move {
        let unanswered = || {
            Err((
                ErrorCode::RequestTimedOut,
                "the controller did not answer".to_string(),
            ))
        };
        let outcome = match reply.await {
            Some(ControllerReply::UpdateFeatures(outcome)) => outcome,
            _ => unanswered(),
        };
        answer(outcome)
    })
}
