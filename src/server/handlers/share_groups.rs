//! Share groups (KIP-932) as Kafka 4.1.1 answers them with `share.version`
//! at 0, its default: the APIs are listed in ApiVersions but share groups
//! are off. This broker has no share groups yet (no `share.version` level
//! above 0 can be finalized), so it gives those answers, measured on Kafka
//! 4.1.1 byte for byte:
//! - ShareGroupHeartbeat, ShareGroupDescribe (per group), ShareFetch,
//!   ShareAcknowledge, DescribeShareGroupOffsets (per group),
//!   AlterShareGroupOffsets and DeleteShareGroupOffsets answer
//!   UNSUPPORTED_VERSION before any ACL is asked; only the two offsets
//!   alterations carry a message.
//! - The share coordinator's state RPCs (InitializeShareGroupState,
//!   ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
//!   ReadShareGroupStateSummary), which brokers send to each other, need
//!   CLUSTER_ACTION (else CLUSTER_AUTHORIZATION_FAILED on every partition
//!   asked about), then answer NOT_COORDINATOR on every partition asked
//!   about, as Kafka's share coordinator does when it owns no
//!   `__share_group_state` partition; nothing for an empty group id.

use kafka_protocol::messages::describe_share_group_offsets_response::DescribeShareGroupOffsetsResponseGroup;
use kafka_protocol::messages::share_group_describe_response::DescribedGroup;
use kafka_protocol::messages::{
    delete_share_group_state_response, initialize_share_group_state_response,
    read_share_group_state_response, read_share_group_state_summary_response,
    write_share_group_state_response, AlterShareGroupOffsetsResponse, ApiKey,
    DeleteShareGroupOffsetsResponse, DeleteShareGroupStateRequest, DeleteShareGroupStateResponse,
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
    InitializeShareGroupStateRequest, InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest, ReadShareGroupStateResponse, ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse, ShareAcknowledgeResponse, ShareFetchResponse,
    ShareGroupDescribeRequest, ShareGroupDescribeResponse, ShareGroupHeartbeatResponse,
    WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as ErrorCode;

use super::{encode_response, Response};
use crate::security::acl::AclOperation;
use crate::server::access::{refusal_message, Access};

const UNSUPPORTED: i16 = 35;

/// Kafka's message for UNSUPPORTED_VERSION, which the offsets alterations
/// carry.
fn unsupported_message() -> Option<StrBytes> {
    Some(StrBytes::from_static_str(
        "The version of API is not supported.",
    ))
}

/// The answer to a share-group API asked while share groups are off.
pub fn share_groups_off(
    api_key: ApiKey,
    body: Decoded,
    version: i16,
    correlation_id: i32,
) -> Response {
    match body {
        Decoded::Heartbeat => encode_response(
            api_key,
            version,
            correlation_id,
            &ShareGroupHeartbeatResponse::default().with_error_code(UNSUPPORTED),
        ),
        Decoded::Describe(request) => {
            let groups = request
                .group_ids
                .into_iter()
                .map(|group_id| {
                    DescribedGroup::default()
                        .with_error_code(UNSUPPORTED)
                        .with_group_id(group_id)
                        .with_authorized_operations(i32::MIN)
                })
                .collect();
            encode_response(
                api_key,
                version,
                correlation_id,
                &ShareGroupDescribeResponse::default().with_groups(groups),
            )
        }
        Decoded::Fetch => encode_response(
            api_key,
            version,
            correlation_id,
            &ShareFetchResponse::default().with_error_code(UNSUPPORTED),
        ),
        Decoded::Acknowledge => encode_response(
            api_key,
            version,
            correlation_id,
            &ShareAcknowledgeResponse::default().with_error_code(UNSUPPORTED),
        ),
        Decoded::DescribeOffsets(request) => {
            let groups = request
                .groups
                .into_iter()
                .map(|group| {
                    DescribeShareGroupOffsetsResponseGroup::default()
                        .with_group_id(group.group_id)
                        .with_error_code(UNSUPPORTED)
                })
                .collect();
            encode_response(
                api_key,
                version,
                correlation_id,
                &DescribeShareGroupOffsetsResponse::default().with_groups(groups),
            )
        }
        Decoded::AlterOffsets => encode_response(
            api_key,
            version,
            correlation_id,
            &AlterShareGroupOffsetsResponse::default()
                .with_error_code(UNSUPPORTED)
                .with_error_message(unsupported_message()),
        ),
        Decoded::DeleteOffsets => encode_response(
            api_key,
            version,
            correlation_id,
            &DeleteShareGroupOffsetsResponse::default()
                .with_error_code(UNSUPPORTED)
                .with_error_message(unsupported_message()),
        ),
    }
}

/// A share-group client API, decoded as far as its answer needs.
pub enum Decoded {
    Heartbeat,
    Describe(ShareGroupDescribeRequest),
    Fetch,
    Acknowledge,
    DescribeOffsets(DescribeShareGroupOffsetsRequest),
    AlterOffsets,
    DeleteOffsets,
}

/// A share coordinator state RPC.
pub enum StateCall {
    Initialize(InitializeShareGroupStateRequest),
    Read(ReadShareGroupStateRequest),
    Write(WriteShareGroupStateRequest),
    Delete(DeleteShareGroupStateRequest),
    ReadSummary(ReadShareGroupStateSummaryRequest),
}

/// Answers a share coordinator state RPC: CLUSTER_AUTHORIZATION_FAILED
/// without CLUSTER_ACTION, else NOT_COORDINATOR (no share coordinator
/// runs here), on every partition asked about, with Kafka's messages.
pub fn state_call(
    access: &Access,
    api_key: ApiKey,
    call: StateCall,
    version: i16,
    correlation_id: i32,
) -> Response {
    let authorized = access.cluster(AclOperation::ClusterAction);
    let code = if authorized {
        ErrorCode::NotCoordinator
    } else {
        ErrorCode::ClusterAuthorizationFailed
    }
    .code();
    let message = |action: &str| {
        Some(StrBytes::from_string(if authorized {
            format!("Unable to {action}: This is not the correct coordinator.")
        } else {
            refusal_message(ErrorCode::ClusterAuthorizationFailed).to_string()
        }))
    };
    // Every partition asked about gets the error; the response's other
    // fields keep their defaults, as in Kafka's.
    macro_rules! refuse_each_partition {
        ($request:expr, $module:ident, $result:ident, $response:ident, $action:literal) => {{
            use $module::{$result, PartitionResult};
            // The coordinator answers nothing for an empty group id.
            let asked = if authorized && $request.group_id.is_empty() {
                Vec::new()
            } else {
                $request.topics
            };
            let results = asked
                .into_iter()
                .map(|topic| {
                    $result::default()
                        .with_topic_id(topic.topic_id)
                        .with_partitions(
                            topic
                                .partitions
                                .iter()
                                .map(|p| {
                                    PartitionResult::default()
                                        .with_partition(p.partition)
                                        .with_error_code(code)
                                        .with_error_message(message($action))
                                })
                                .collect(),
                        )
                })
                .collect();
            encode_response(
                api_key,
                version,
                correlation_id,
                &$response::default().with_results(results),
            )
        }};
    }
    match call {
        StateCall::Initialize(request) => refuse_each_partition!(
            request,
            initialize_share_group_state_response,
            InitializeStateResult,
            InitializeShareGroupStateResponse,
            "initialize share group state"
        ),
        StateCall::Read(request) => refuse_each_partition!(
            request,
            read_share_group_state_response,
            ReadStateResult,
            ReadShareGroupStateResponse,
            "read share group state"
        ),
        StateCall::Write(request) => refuse_each_partition!(
            request,
            write_share_group_state_response,
            WriteStateResult,
            WriteShareGroupStateResponse,
            "write share group state"
        ),
        StateCall::Delete(request) => refuse_each_partition!(
            request,
            delete_share_group_state_response,
            DeleteStateResult,
            DeleteShareGroupStateResponse,
            "delete share group state"
        ),
        StateCall::ReadSummary(request) => refuse_each_partition!(
            request,
            read_share_group_state_summary_response,
            ReadStateSummaryResult,
            ReadShareGroupStateSummaryResponse,
            "read share group state summary"
        ),
    }
}
