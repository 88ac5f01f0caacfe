//! DescribeAcls, CreateAcls and DeleteAcls (keys 29, 30, 31; v1-3, v2+
//! flexible), as `kafka-acls` and admin clients' `describeAcls`,
//! `createAcls` and `deleteAcls` ask. With the authorizer on, ACLs are
//! kept in the metadata log through the controller and read from the
//! shard's image, with Kafka's checks (`AclApis`, `AclControlManager`).
//! Without one, every answer is SECURITY_DISABLED with Kafka's messages, as
//! Kafka answers without `authorizer.class.name`.

use std::rc::Rc;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};

use super::{encode_response, ready, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::{
    Acl, AclFilter, AclOperation, AclPermission, PatternType, ResourceType, CLUSTER_NAME,
};
use crate::server::access::{cluster_refusal, Access};
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{ControllerReply, ControllerRequest};
use crate::shard::Shard;

/// One DeleteAcls filter's answer: the ACLs deleted, or (code, message).
type FilterResult = Result<Vec<Acl>, (i16, Option<String>)>;

/// Kafka's message for each creation and deletion filter.
const NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// Kafka closes the connection on a request with an UNKNOWN (0) code in
/// a creation or filter (`CreateAclsRequest.validate`,
/// `normalizeAndValidate`).
const UNKNOWN_ELEMENT: &str = "ACL request with an UNKNOWN element";

/// A request filter as the authorizer's type.
fn filter(
    resource_type: i8,
    resource_name: Option<&str>,
    pattern_type: i8,
    principal: Option<&str>,
    host: Option<&str>,
    operation: i8,
    permission: i8,
) -> AclFilter {
    AclFilter {
        resource_type: ResourceType::from_code(resource_type),
        resource_name: resource_name.map(str::to_string),
        pattern_type: PatternType::from_code(pattern_type),
        principal: principal.map(str::to_string),
        host: host.map(str::to_string),
        operation: AclOperation::from_code(operation),
        permission: AclPermission::from_code(permission),
    }
}

/// Answers DescribeAcls from this shard's image.
///
/// # Errors
/// A filter with an UNKNOWN (0) code: the connection is closed.
pub fn describe(
    access: &Access,
    request: DescribeAclsRequest,
    version: i16,
    correlation_id: i32,
) -> Result<Response, &'static str> {
    let r = &request;
    if AclFilter::has_unknown_code([
        r.resource_type_filter,
        r.pattern_type_filter,
        r.operation,
        r.permission_type,
    ]) {
        return Err(UNKNOWN_ELEMENT);
    }
    let mut response = DescribeAclsResponse::default();
    if !access.enabled() {
        response.error_code = ErrorCode::SecurityDisabled.code();
        response.error_message = Some(str_bytes("No Authorizer is configured on the broker"));
    } else if !access.cluster(AclOperation::Describe) {
        response.error_code = ErrorCode::ClusterAuthorizationFailed.code();
        response.error_message = Some(str_bytes(&cluster_refusal(
            ApiKey::DescribeAcls,
            "DESCRIBE",
        )));
    } else {
        let filter = filter(
            r.resource_type_filter,
            r.resource_name_filter.as_deref(),
            r.pattern_type_filter,
            r.principal_filter.as_deref(),
            r.host_filter.as_deref(),
            r.operation,
            r.permission_type,
        );
        // Grouped by resource pattern (Kafka's order is a hash map's).
        let mut resources: std::collections::BTreeMap<(i8, String, i8), Vec<AclDescription>> =
            Default::default();
        for (_, acl) in access.acls().iter().filter(|(_, acl)| filter.matches(acl)) {
            let mut description = AclDescription::default();
            description.principal = str_bytes(&acl.principal);
            description.host = str_bytes(&acl.host);
            description.operation = acl.operation.code();
            description.permission_type = acl.permission.code();
            resources
                .entry((
                    acl.resource_type.code(),
                    acl.resource_name.clone(),
                    acl.pattern_type.code(),
                ))
                .or_default()
                .push(description);
        }
        response.resources = resources
            .into_iter()
            .map(|((resource_type, name, pattern_type), acls)| {
                let mut resource = DescribeAclsResource::default();
                resource.resource_type = resource_type;
                resource.resource_name = str_bytes(&name);
                resource.pattern_type = pattern_type;
                resource.acls = acls;
                resource
            })
            .collect();
    }
    Ok(encode_response(
        ApiKey::DescribeAcls,
        version,
        correlation_id,
        &response,
    ))
}

/// Why a whole CreateAcls or DeleteAcls is refused: no authorizer
/// (SECURITY_DISABLED), or no ALTER on the cluster.
fn refused_whole(access: &Access, api: ApiKey) -> Option<(ErrorCode, String)> {
    if !access.enabled() {
        Some((ErrorCode::SecurityDisabled, NO_AUTHORIZER.to_string()))
    } else if !access.cluster(AclOperation::Alter) {
        Some((
            ErrorCode::ClusterAuthorizationFailed,
            cluster_refusal(api, "ALTER"),
        ))
    } else {
        None
    }
}

/// Checks one creation as Kafka's `AclApis` and `AclControlManager` do;
/// Err is the INVALID_REQUEST message.
fn checked_acl(acl: &Acl) -> Result<(), String> {
    if acl.resource_type == ResourceType::Cluster && acl.resource_name != CLUSTER_NAME {
        return Err("The only valid name for the CLUSTER resource is kafka-cluster".into());
    }
    if acl.resource_name.is_empty() {
        return Err("Invalid empty resource name".into());
    }
    if acl.resource_type == ResourceType::Unknown {
        return Err("Invalid resourceType UNKNOWN".into());
    }
    if acl.pattern_type == PatternType::Unknown {
        return Err("Invalid patternType UNKNOWN".into());
    }
    if acl.operation == AclOperation::Unknown {
        return Err("Invalid operation UNKNOWN".into());
    }
    if acl.permission == AclPermission::Unknown {
        return Err("Invalid permissionType UNKNOWN".into());
    }
    if !acl.principal.contains(':') {
        return Err(format!(
            "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
            acl.principal
        ));
    }
    Ok(())
}

/// Answers CreateAcls: checks each ACL, then has the controller store the
/// valid ones.
///
/// # Errors
/// A creation with an UNKNOWN (0) code: the connection is closed.
pub async fn create(
    shard: &Rc<Shard>,
    access: &Access,
    request: CreateAclsRequest,
    version: i16,
    correlation_id: i32,
) -> Result<Responder, &'static str> {
    if request.creations.iter().any(|c| {
        AclFilter::has_unknown_code([
            c.resource_type,
            c.resource_pattern_type,
            c.operation,
            c.permission_type,
        ])
    }) {
        return Err(UNKNOWN_ELEMENT);
    }
    let count = request.creations.len();
    let answer = move |results: Vec<(i16, Option<String>)>| {
        let mut response = CreateAclsResponse::default();
        response.results = results
            .into_iter()
            .map(|(code, message)| {
                let mut result = AclCreationResult::default();
                result.error_code = code;
                // Kafka answers a creation done with an empty message.
                result.error_message = match (code, message) {
                    (0, None) => Some(str_bytes("")),
                    (_, message) => message.as_deref().map(str_bytes),
                };
                result
            })
            .collect();
        encode_response(ApiKey::CreateAcls, version, correlation_id, &response)
    };
    let all = |code: ErrorCode, message: Option<String>| vec![(code.code(), message); count];
    if let Some((code, message)) = refused_whole(access, ApiKey::CreateAcls) {
        return Ok(ready(answer(all(code, Some(message)))));
    }
    let acls: Vec<Acl> = request
        .creations
        .iter()
        .map(|c| Acl {
            resource_type: ResourceType::from_code(c.resource_type),
            resource_name: c.resource_name.to_string(),
            pattern_type: PatternType::from_code(c.resource_pattern_type),
            principal: c.principal.to_string(),
            host: c.host.to_string(),
            operation: AclOperation::from_code(c.operation),
            permission: AclPermission::from_code(c.permission_type),
        })
        .collect();
    // Filter-only values fail the whole request, as Kafka's constructors
    // throwing in the handler do: UNKNOWN_SERVER_ERROR without a message.
    if acls.iter().any(|a| {
        a.resource_type == ResourceType::Any
            || matches!(a.pattern_type, PatternType::Any | PatternType::Match)
            || a.operation == AclOperation::Any
            || a.permission == AclPermission::Any
    }) {
        return Ok(ready(answer(all(ErrorCode::UnknownServerError, None))));
    }
    let mut results: Vec<(i16, Option<String>)> = Vec::with_capacity(count);
    let mut valid = Vec::new();
    let mut valid_at = Vec::new();
    for (at, acl) in acls.into_iter().enumerate() {
        match checked_acl(&acl) {
            Ok(()) => {
                valid_at.push(at);
                valid.push(acl);
                results.push((0, None));
            }
            Err(message) => results.push((ErrorCode::InvalidRequest.code(), Some(message))),
        }
    }
    if valid.is_empty() {
        return Ok(ready(answer(results)));
    }
    let reply = shard
        .call_controller(ControllerRequest::CreateAcls { acls: valid })
        .await;
    Ok(Box::pin(async move {
        let outcome = match reply.await {
            Some(ControllerReply::CreateAcls(outcome)) => outcome,
            _ => Err((ErrorCode::UnknownServerError, None)),
        };
        if let Err((code, message)) = outcome {
            if code == ErrorCode::PolicyViolation {
                // Too many: the whole request fails.
                for result in &mut results {
                    *result = (code.code(), message.clone());
                }
            } else {
                for &at in &valid_at {
                    results[at] = (code.code(), message.clone());
                }
            }
        }
        answer(results)
    }))
}

/// Answers DeleteAcls: the controller deletes what each filter matches.
///
/// # Errors
/// A filter with an UNKNOWN (0) code: the connection is closed.
pub async fn delete(
    shard: &Rc<Shard>,
    access: &Access,
    request: DeleteAclsRequest,
    version: i16,
    correlation_id: i32,
) -> Result<Responder, &'static str> {
    if request.filters.iter().any(|f| {
        AclFilter::has_unknown_code([
            f.resource_type_filter,
            f.pattern_type_filter,
            f.operation,
            f.permission_type,
        ])
    }) {
        return Err(UNKNOWN_ELEMENT);
    }
    let count = request.filters.len();
    let answer = move |results: Vec<FilterResult>| {
        let mut response = DeleteAclsResponse::default();
        response.filter_results = results
            .into_iter()
            .map(|result| {
                let mut out = DeleteAclsFilterResult::default();
                out.error_message = None;
                match result {
                    Ok(acls) => {
                        out.matching_acls = acls
                            .into_iter()
                            .map(|acl| {
                                let mut m = DeleteAclsMatchingAcl::default();
                                m.error_message = None;
                                m.resource_type = acl.resource_type.code();
                                m.resource_name = str_bytes(&acl.resource_name);
                                m.pattern_type = acl.pattern_type.code();
                                m.principal = str_bytes(&acl.principal);
                                m.host = str_bytes(&acl.host);
                                m.operation = acl.operation.code();
                                m.permission_type = acl.permission.code();
                                m
                            })
                            .collect()
                    }
                    Err((code, message)) => {
                        out.error_code = code;
                        out.error_message = message.as_deref().map(str_bytes);
                    }
                }
                out
            })
            .collect();
        encode_response(ApiKey::DeleteAcls, version, correlation_id, &response)
    };
    let all = |code: ErrorCode, message: Option<String>| {
        (0..count)
            .map(|_| Err((code.code(), message.clone())))
            .collect::<Vec<_>>()
    };
    if let Some((code, message)) = refused_whole(access, ApiKey::DeleteAcls) {
        return Ok(ready(answer(all(code, Some(message)))));
    }
    // Filters Kafka refuses one by one (codes it does not define); the
    // others go to the controller.
    let mut results: Vec<FilterResult> = Vec::with_capacity(count);
    let mut valid = Vec::new();
    let mut valid_at = Vec::new();
    for f in &request.filters {
        let filter = filter(
            f.resource_type_filter,
            f.resource_name_filter.as_deref(),
            f.pattern_type_filter,
            f.principal_filter.as_deref(),
            f.host_filter.as_deref(),
            f.operation,
            f.permission_type,
        );
        if filter.resource_type == ResourceType::Unknown
            || filter.pattern_type == PatternType::Unknown
        {
            results.push(Err((
                ErrorCode::InvalidRequest.code(),
                Some("Unknown patternFilter.".into()),
            )));
        } else if filter.operation == AclOperation::Unknown
            || filter.permission == AclPermission::Unknown
        {
            results.push(Err((
                ErrorCode::InvalidRequest.code(),
                Some("Unknown entryFilter.".into()),
            )));
        } else {
            valid_at.push(results.len());
            results.push(Ok(Vec::new()));
            valid.push(filter);
        }
    }
    if valid.is_empty() {
        return Ok(ready(answer(results)));
    }
    let reply = shard
        .call_controller(ControllerRequest::DeleteAcls { filters: valid })
        .await;
    Ok(Box::pin(async move {
        let outcome = match reply.await {
            Some(ControllerReply::DeleteAcls(outcome)) => outcome,
            _ => Err((ErrorCode::UnknownServerError, None)),
        };
        match outcome {
            Ok(matched) => {
                for (at, acls) in valid_at.into_iter().zip(matched) {
                    results[at] = Ok(acls);
                }
            }
            Err((code, message)) if code == ErrorCode::InvalidRequest => {
                // Too many: the whole request fails.
                for result in &mut results {
                    *result = Err((code.code(), message.clone()));
                }
            }
            Err((code, message)) => {
                for at in valid_at {
                    results[at] = Err((code.code(), message.clone()));
                }
            }
        }
        answer(results)
    }))
}
