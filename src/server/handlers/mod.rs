//! One file per Kafka API. Each handler decodes its body, does the ordered
//! part of its work (routing to owning shards) before returning, and returns
//! a [`Responder`] that completes the rest. Error codes are chosen here, at
//! the edge, from the outcomes shards report.

pub mod acls;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_configs;
pub mod alter_partition_reassignments;
pub mod alter_replica_log_dirs;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod authorized_operations;
pub mod client_quotas;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_partitions;
pub mod create_topics;
pub mod delegation_tokens;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_topic_partitions;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod groups;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod raft_voters;
pub mod sasl;
pub mod share_groups;
pub mod sync_group;
pub mod txn_common;
pub mod txn_offset_commit;
pub mod unregister_broker;
pub mod update_features;
pub mod write_txn_markers;

use std::collections::BTreeMap;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::buf::ByteBufMut;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::connection::{Responder, Response};
use super::ServerState;
use crate::config::limits::RESPONSE_BUFFER_BYTES_MAX;

/// Decodes a request body of type `T`.
///
/// # Errors
/// A static reason when the body is malformed; the connection is closed.
pub fn decode<T: Decodable>(body: &mut Bytes, version: i16) -> Result<T, &'static str> {
    let decoded = T::decode(body, version).map_err(|_| "malformed request body")?;
    Ok(decoded)
}

/// Kafka's `ConfigResource.Type` codes (DescribeConfigs, AlterConfigs,
/// IncrementalAlterConfigs, ListConfigResources).
pub(crate) mod config_resource_type {
    pub const TOPIC: i8 = 2;
    pub const BROKER: i8 = 4;
    pub const BROKER_LOGGER: i8 = 8;
    pub const CLIENT_METRICS: i8 = 16;
    pub const GROUP: i8 = 32;
}

/// Encodes a whole response frame: size, response header, body.
pub fn encode_response<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Response {
    match encode_frame(
        api_key,
        version,
        correlation_id,
        body,
        RESPONSE_BUFFER_BYTES_MAX,
        BytesMut::with_capacity,
    ) {
        Ok(buf) => Response::Frame(buf.freeze()),
        Err(close) => close,
    }
}

/// Encodes a response whose record fields were registered in `slots`
/// (see `server/pieces.rs`): the frame is sent as pieces, the record data by
/// reference. Without registered data it is one frame, as
/// [`encode_response`] makes.
pub fn encode_response_pieces<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
    slots: super::pieces::RecordSlots,
) -> Response {
    if slots.is_empty() {
        return encode_response(api_key, version, correlation_id, body);
    }
    // The framing alone goes into the buffer; record data stays shared.
    let make = |_frame_bytes| super::pieces::PiecesBuf::new(1024, slots);
    match encode_frame(api_key, version, correlation_id, body, usize::MAX, make) {
        Ok(buf) => Response::Pieces(buf.into_pieces()),
        Err(close) => close,
    }
}

/// Sizes the response, then writes size, header and body into the buffer
/// `make` returns for the frame's byte count, when that is at most
/// `max_bytes`. Err is the Close to answer.
fn encode_frame<T: Encodable, B: ByteBufMut>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
    max_bytes: usize,
    make: impl FnOnce(usize) -> B,
) -> Result<B, Response> {
    let header_version = api_key.response_header_version(version);
    let mut header = ResponseHeader::default();
    header.correlation_id = correlation_id;
    let (header_size, body_size) = match (
        header.compute_size(header_version),
        body.compute_size(version),
    ) {
        (Ok(h), Ok(b)) => (h, b),
        (h, b) => {
            tracing::error!(?api_key, version, header = ?h.err(), body = ?b.err(), "response could not be sized");
            return Err(Response::Close("response could not be sized"));
        }
    };
    let Ok(frame_size) = i32::try_from(header_size + body_size) else {
        tracing::error!(?api_key, version, "response larger than a frame can say");
        return Err(Response::Close("response too large"));
    };
    if 4 + header_size + body_size > max_bytes {
        tracing::warn!(
            ?api_key,
            version,
            bytes = 4 + header_size + body_size,
            "response larger than the response buffer bound; closing the connection"
        );
        return Err(Response::Close("response too large"));
    }
    let mut buf = make(4 + header_size + body_size);
    buf.put_i32(frame_size);
    if header.encode(&mut buf, header_version).is_err() || body.encode(&mut buf, version).is_err() {
        tracing::error!(?api_key, version, "response encoding failed");
        return Err(Response::Close("response encoding failed"));
    }
    Ok(buf)
}

/// Raises the `throttle_time_ms` of a response of any API that has one.
/// Returns false for an API without it.
macro_rules! raise_throttle {
    ($response:expr, $ms:expr, [$($api:ident),* $(,)?]) => {
        match $response {
            $(ResponseKind::$api(r) => {
                r.throttle_time_ms = r.throttle_time_ms.max($ms);
                true
            })*
            _ => false,
        }
    };
}

/// `response`, a response to a request of `api_key` at `version`, with its
/// `throttle_time_ms` raised to `throttle_ms` (a longer one is kept): for a
/// throttle known only once the handler has answered (the request quota).
/// A response of a version without the field, or not one frame, is
/// returned as it is; the connection is muted either way.
pub fn with_throttle(
    response: Response,
    api_key: ApiKey,
    version: i16,
    throttle_ms: u64,
) -> Response {
    let Response::Frame(frame) = response else {
        return response;
    };
    match rethrottled(&frame, api_key, version, throttle_ms) {
        Some(rewritten) => Response::Frame(rewritten),
        None => {
            tracing::debug!(
                ?api_key,
                version,
                throttle_ms,
                "response has no throttle field to carry the request quota's throttle"
            );
            Response::Frame(frame)
        }
    }
}

/// The frame decoded, its throttle raised and encoded again; None when the
/// API has no throttle field or the frame does not decode.
fn rethrottled(frame: &Bytes, api_key: ApiKey, version: i16, throttle_ms: u64) -> Option<Bytes> {
    let header_version = api_key.response_header_version(version);
    if frame.len() < 4 {
        return None;
    }
    let mut body = frame.slice(4..);
    let header = ResponseHeader::decode(&mut body, header_version).ok()?;
    let mut response = ResponseKind::decode(api_key, &mut body, version).ok()?;
    let ms = i32::try_from(throttle_ms).unwrap_or(i32::MAX);
    let raised = raise_throttle!(
        &mut response,
        ms,
        [
            Produce,
            Fetch,
            ListOffsets,
            Metadata,
            OffsetCommit,
            OffsetFetch,
            FindCoordinator,
            JoinGroup,
            Heartbeat,
            LeaveGroup,
            SyncGroup,
            DescribeGroups,
            ListGroups,
            ApiVersions,
            CreateTopics,
            DeleteTopics,
            DeleteRecords,
            InitProducerId,
            OffsetForLeaderEpoch,
            AddPartitionsToTxn,
            AddOffsetsToTxn,
            EndTxn,
            TxnOffsetCommit,
            DescribeAcls,
            CreateAcls,
            DeleteAcls,
            DescribeConfigs,
            AlterConfigs,
            AlterReplicaLogDirs,
            DescribeLogDirs,
            CreatePartitions,
            CreateDelegationToken,
            RenewDelegationToken,
            ExpireDelegationToken,
            DescribeDelegationToken,
            DeleteGroups,
            ElectLeaders,
            IncrementalAlterConfigs,
            AlterPartitionReassignments,
            ListPartitionReassignments,
            OffsetDelete,
            DescribeClientQuotas,
            AlterClientQuotas,
            DescribeUserScramCredentials,
            AlterUserScramCredentials,
            AlterPartition,
            UpdateFeatures,
            FetchSnapshot,
            DescribeCluster,
            DescribeProducers,
            BrokerRegistration,
            BrokerHeartbeat,
            UnregisterBroker,
            DescribeTransactions,
            ListTransactions,
            AllocateProducerIds,
            ConsumerGroupHeartbeat,
            ConsumerGroupDescribe,
            ControllerRegistration,
            GetTelemetrySubscriptions,
            PushTelemetry,
            AssignReplicasToDirs,
            ListConfigResources,
            DescribeTopicPartitions,
            ShareGroupHeartbeat,
            ShareGroupDescribe,
            ShareFetch,
            ShareAcknowledge,
            AddRaftVoter,
            RemoveRaftVoter,
            UpdateRaftVoter,
            DescribeShareGroupOffsets,
            AlterShareGroupOffsets,
            DeleteShareGroupOffsets,
        ]
    );
    if !raised {
        return None;
    }
    let mut buf = BytesMut::with_capacity(frame.len());
    buf.extend_from_slice(&[0; 4]);
    header.encode(&mut buf, header_version).ok()?;
    response.encode(&mut buf, version).ok()?;
    let size = i32::try_from(buf.len() - 4).ok()?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Some(buf.freeze())
}

/// A ready responder for an already encoded response.
pub fn ready(response: Response) -> Responder {
    Box::pin(async move { response })
}

/// Routes one request to its handler. `peer` is the client's address, for
/// the group coordinator's `client_host`; `listener` the listener it came
/// in on, whose advertised address the client is given for this broker.
///
/// # Errors
/// A reason to close the connection (malformed body).
#[allow(clippy::too_many_arguments)]
pub async fn dispatch(
    state: &Rc<ServerState>,
    api_key: ApiKey,
    header: RequestHeader,
    mut body: Bytes,
    peer: Option<std::net::SocketAddr>,
    listener: &crate::config::Listener,
    access: &super::access::Access,
    client: crate::quota::sensors::RequestClient,
) -> Result<Responder, &'static str> {
    let version = header.request_api_version;
    let correlation_id = header.correlation_id;
    let shard = &state.shard;
    let share_off = |decoded| {
        ready(share_groups::share_groups_off(
            api_key,
            decoded,
            version,
            correlation_id,
        ))
    };
    let share_state = |call| {
        ready(share_groups::state_call(
            access,
            api_key,
            call,
            version,
            correlation_id,
        ))
    };
    Ok(match api_key {
        ApiKey::ApiVersions => ready(api_versions::handle(
            decode(&mut body, version)?,
            version,
            correlation_id,
            &shard.image(),
        )),
        ApiKey::Metadata => {
            metadata::handle(
                shard,
                access,
                client,
                listener,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::CreateTopics => {
            create_topics::handle(
                shard,
                access,
                client,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DeleteTopics => {
            delete_topics::handle(
                shard,
                access,
                client,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::CreatePartitions => {
            create_partitions::handle(
                shard,
                access,
                client,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::AlterConfigs => {
            alter_configs::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::IncrementalAlterConfigs => {
            alter_configs::handle_incremental(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        // Produce never comes here: the connection reads it framing first
        // (`produce_frame.rs`) and calls `produce::handle` itself.
        ApiKey::Fetch => {
            fetch::handle(
                shard,
                access,
                client,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::ListOffsets => {
            list_offsets::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::InitProducerId => {
            init_producer_id::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::AddPartitionsToTxn => {
            add_partitions_to_txn::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::AddOffsetsToTxn => {
            add_offsets_to_txn::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::EndTxn => {
            end_txn::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DescribeTransactions => {
            describe_transactions::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::ListTransactions => {
            list_transactions::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::FindCoordinator => {
            find_coordinator::handle(
                shard,
                access,
                listener,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DescribeCluster => ready(describe_cluster::handle(
            shard,
            access,
            listener,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::DescribeTopicPartitions => ready(describe_topic_partitions::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::SaslHandshake => ready(sasl::handshake(
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::SaslAuthenticate => ready(sasl::authenticate(
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::DescribeAcls => ready(acls::describe(
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )?),
        ApiKey::CreateAcls => {
            acls::create(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await?
        }
        ApiKey::DeleteAcls => {
            acls::delete(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await?
        }
        ApiKey::AlterPartitionReassignments => ready(alter_partition_reassignments::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::ListPartitionReassignments => ready(list_partition_reassignments::handle(
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::DescribeUserScramCredentials => ready(describe_user_scram_credentials::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::AlterUserScramCredentials => {
            alter_user_scram_credentials::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DescribeClientQuotas => ready(client_quotas::describe(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::AlterClientQuotas => {
            client_quotas::alter(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::CreateDelegationToken => {
            delegation_tokens::handle_create(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::RenewDelegationToken => {
            delegation_tokens::handle_renew(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::ExpireDelegationToken => {
            delegation_tokens::handle_expire(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DescribeDelegationToken => ready(delegation_tokens::handle_describe(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::AlterReplicaLogDirs => ready(alter_replica_log_dirs::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::ElectLeaders => ready(elect_leaders::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::AddRaftVoter => ready(raft_voters::handle_add(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::UnregisterBroker => ready(unregister_broker::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::RemoveRaftVoter => ready(raft_voters::handle_remove(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::DescribeQuorum => ready(describe_quorum::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::UpdateFeatures => {
            update_features::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::ListConfigResources => ready(list_config_resources::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::DescribeConfigs => ready(describe_configs::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        )),
        ApiKey::JoinGroup => join_group::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
            groups::Client::of(&header, peer),
        ),
        ApiKey::ConsumerGroupHeartbeat => consumer_group_heartbeat::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
            groups::Client::of(&header, peer),
        ),
        ApiKey::ConsumerGroupDescribe => consumer_group_describe::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::SyncGroup => sync_group::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::Heartbeat => heartbeat::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::LeaveGroup => leave_group::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::OffsetCommit => offset_commit::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::OffsetFetch => offset_fetch::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::ListGroups => list_groups::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::DescribeGroups => describe_groups::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::DeleteGroups => delete_groups::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::OffsetDelete => offset_delete::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::TxnOffsetCommit => txn_offset_commit::handle(
            shard,
            access,
            decode(&mut body, version)?,
            version,
            correlation_id,
        ),
        ApiKey::WriteTxnMarkers => {
            write_txn_markers::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DescribeProducers => {
            describe_producers::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DescribeLogDirs => {
            describe_log_dirs::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::OffsetForLeaderEpoch => {
            offset_for_leader_epoch::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::DeleteRecords => {
            delete_records::handle(
                shard,
                access,
                decode(&mut body, version)?,
                version,
                correlation_id,
            )
            .await
        }
        ApiKey::ShareGroupHeartbeat => {
            let _: kafka_protocol::messages::ShareGroupHeartbeatRequest =
                decode(&mut body, version)?;
            share_off(share_groups::Decoded::Heartbeat)
        }
        ApiKey::ShareGroupDescribe => {
            share_off(share_groups::Decoded::Describe(decode(&mut body, version)?))
        }
        ApiKey::ShareFetch => {
            let _: kafka_protocol::messages::ShareFetchRequest = decode(&mut body, version)?;
            share_off(share_groups::Decoded::Fetch)
        }
        ApiKey::ShareAcknowledge => {
            let _: kafka_protocol::messages::ShareAcknowledgeRequest = decode(&mut body, version)?;
            share_off(share_groups::Decoded::Acknowledge)
        }
        ApiKey::DescribeShareGroupOffsets => share_off(share_groups::Decoded::DescribeOffsets(
            decode(&mut body, version)?,
        )),
        ApiKey::AlterShareGroupOffsets => {
            let _: kafka_protocol::messages::AlterShareGroupOffsetsRequest =
                decode(&mut body, version)?;
            share_off(share_groups::Decoded::AlterOffsets)
        }
        ApiKey::DeleteShareGroupOffsets => {
            let _: kafka_protocol::messages::DeleteShareGroupOffsetsRequest =
                decode(&mut body, version)?;
            share_off(share_groups::Decoded::DeleteOffsets)
        }
        ApiKey::InitializeShareGroupState => share_state(share_groups::StateCall::Initialize(
            decode(&mut body, version)?,
        )),
        ApiKey::ReadShareGroupState => {
            share_state(share_groups::StateCall::Read(decode(&mut body, version)?))
        }
        ApiKey::WriteShareGroupState => {
            share_state(share_groups::StateCall::Write(decode(&mut body, version)?))
        }
        ApiKey::DeleteShareGroupState => {
            share_state(share_groups::StateCall::Delete(decode(&mut body, version)?))
        }
        ApiKey::ReadShareGroupStateSummary => share_state(share_groups::StateCall::ReadSummary(
            decode(&mut body, version)?,
        )),
        _ => return Err("API not served"),
    })
}

/// `StrBytes` from a `&str`.
pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Groups items by the shard that owns them, remembering each item's
/// position so results can be put back in request order.
pub struct ShardGroups<T> {
    /// shard id -> (positions, items)
    pub groups: BTreeMap<usize, (Vec<usize>, Vec<T>)>,
}

impl<T> ShardGroups<T> {
    /// Empty grouping.
    pub fn new() -> Self {
        ShardGroups {
            groups: BTreeMap::new(),
        }
    }
    /// Adds `item` at request position `position` for `shard`.
    pub fn push(&mut self, shard: usize, position: usize, item: T) {
        let entry = self
            .groups
            .entry(shard)
            .or_insert_with(|| (Vec::new(), Vec::new()));
        entry.0.push(position);
        entry.1.push(item);
    }

    /// Sends each shard its items as one request that `request` makes of
    /// them; every request is sent before this returns. The future returned
    /// resolves to each group's positions and its shard's reply (None when
    /// the shard could not be reached or dropped the request).
    pub async fn send(
        self,
        shard: &Rc<crate::shard::Shard>,
        request: impl Fn(Vec<T>) -> crate::shard::messages::ShardRequest,
    ) -> impl std::future::Future<Output = Vec<(Vec<usize>, Option<crate::shard::messages::ShardReply>)>>
    {
        let mut calls = Vec::with_capacity(self.groups.len());
        for (target, (positions, items)) in self.groups {
            calls.push((positions, shard.call(target, request(items)).await));
        }
        futures::future::join_all(calls.into_iter().map(|(positions, call)| async move {
            let reply = match call {
                Ok(completion) => completion.await.ok(),
                Err(_) => None,
            };
            (positions, reply)
        }))
    }
}

impl<T> Default for ShardGroups<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{
        ApiVersionsResponse, MetadataResponse, ProduceResponse, SaslHandshakeResponse,
    };

    fn frame_of(response: Response) -> Bytes {
        match response {
            Response::Frame(frame) => frame,
            _ => panic!("not one frame"),
        }
    }

    /// Decodes a frame's body as `T` (after its size and header).
    fn body_of<T: Decodable>(frame: &Bytes, api_key: ApiKey, version: i16) -> T {
        let mut body = frame.slice(4..);
        ResponseHeader::decode(&mut body, api_key.response_header_version(version)).unwrap();
        let decoded = T::decode(&mut body, version).unwrap();
        assert!(body.is_empty(), "{api_key:?} v{version} decoded whole");
        decoded
    }

    /// Goal: a throttle known after a response was encoded lands in its
    /// `throttle_time_ms` wherever the field sits (first in Metadata, after
    /// the API list in ApiVersions, last in Produce), a longer one already
    /// there is kept, nothing else changes, and a version or API without
    /// the field is answered as it was.
    #[test]
    fn a_late_throttle_lands_in_the_response_wherever_its_field_sits() {
        let mut metadata = MetadataResponse::default();
        metadata.controller_id = kafka_protocol::messages::BrokerId(3);
        let mut versions = ApiVersionsResponse::default();
        versions.api_keys.push(Default::default());
        let mut produce = ProduceResponse::default();
        produce.responses.push(Default::default());
        produce.throttle_time_ms = 2500;
        for version in [1, 12] {
            let frame = frame_of(encode_response(ApiKey::Metadata, version, 7, &metadata));
            let raised = frame_of(with_throttle(
                Response::Frame(frame.clone()),
                ApiKey::Metadata,
                version,
                1000,
            ));
            let mut want = metadata.clone();
            if version >= 3 {
                want.throttle_time_ms = 1000;
            } else {
                assert_eq!(raised, frame, "Metadata v{version} has no throttle field");
            }
            assert_eq!(
                body_of::<MetadataResponse>(&raised, ApiKey::Metadata, version),
                want
            );
            assert_eq!(raised.len(), frame.len());
            assert_eq!(&raised[4..8], &7i32.to_be_bytes(), "correlation id kept");
        }
        for version in [1, 3] {
            let frame = frame_of(encode_response(ApiKey::ApiVersions, version, 7, &versions));
            let raised = frame_of(with_throttle(
                Response::Frame(frame),
                ApiKey::ApiVersions,
                version,
                1000,
            ));
            let mut want = versions.clone();
            want.throttle_time_ms = 1000;
            assert_eq!(
                body_of::<ApiVersionsResponse>(&raised, ApiKey::ApiVersions, version),
                want
            );
        }
        for (version, ms, kept) in [(9, 1000, 2500), (9, 4000, 4000), (3, 4000, 4000)] {
            let frame = frame_of(encode_response(ApiKey::Produce, version, 7, &produce));
            let raised = frame_of(with_throttle(
                Response::Frame(frame),
                ApiKey::Produce,
                version,
                ms,
            ));
            let mut want = produce.clone();
            want.throttle_time_ms = kept;
            assert_eq!(
                body_of::<ProduceResponse>(&raised, ApiKey::Produce, version),
                want
            );
        }
        let handshake = SaslHandshakeResponse::default();
        let frame = frame_of(encode_response(ApiKey::SaslHandshake, 1, 7, &handshake));
        let raised = with_throttle(Response::Frame(frame.clone()), ApiKey::SaslHandshake, 1, 10);
        assert_eq!(frame_of(raised), frame);
    }
}
