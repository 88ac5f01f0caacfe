//! TxnOffsetCommit (key 28), v0-v5: a transactional producer commits a
//! consumer group's offsets inside its transaction (consume-transform-
//! produce). The group's coordinator writes them to the group's
//! `__consumer_offsets` partition as one transactional batch of the producer
//! and answers once it is durable; they stay pending, invisible to
//! OffsetFetch, until the transaction's COMMIT marker reaches that partition
//! (an ABORT marker drops them).
//!
//! As for OffsetCommit (Kafka's `KafkaApis.handleTxnOffsetCommitRequest`),
//! partitions of unknown topics, or partitions a topic does not have, are
//! answered UNKNOWN_TOPIC_OR_PARTITION here and never reach the coordinator.
//! Coordinator errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//! COORDINATOR_NOT_AVAILABLE) go on every partition it was asked about: the
//! response has no top-level error.
//!
//! Authorization, as in Kafka: WRITE on the transactional id, else every
//! requested partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on
//! the group, else GROUP_AUTHORIZATION_FAILED likewise; then READ on each
//! topic, else its partitions are TOPIC_AUTHORIZATION_FAILED, whether the
//! topic exists or not.
//!
//! Before the coordinator writes, the transaction coordinator is asked
//! whether the producer's transaction is open with the group's offsets
//! partition in it (KIP-890 part 1, Kafka's default
//! `transaction.partition.verification.enable=true`); see [`verify`]. From
//! v5 (transactions V2, whose clients send no AddOffsetsToTxn) it is asked
//! to add that partition instead, starting the transaction if need be.
//!
//! Versions: v2 adds `committed_leader_epoch`, v3 (flexible) the member id,
//! generation and group instance id that the coordinator checks (KIP-447:
//! ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID). v4 lets the
//! broker answer TRANSACTION_ABORTABLE where older versions get
//! INVALID_TXN_STATE. v5 is transactions V2 (the commit adds the offsets
//! partition to the transaction implicitly).
//!
//! Left open (Kafka closes it with a verification guard kept by the
//! partition): a client that sends EndTxn while its TxnOffsetCommit is
//! still between the verification and the write can leave those offsets
//! pending. Real clients wait for the TxnOffsetCommit answer first.

use std::rc::Rc;

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ApiKey, TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::encode_response;
use super::groups::{opt_string, partition_exists, string, topic_exists, unexpected, TopicErrors};
use super::offset_commit::{failed, merge_coordinator_errors};
use crate::cluster::controller::OFFSETS_TOPIC;
use crate::group;
use crate::group::service::{call_group, group_partition};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply, TopicPartition};
use crate::shard::Shard;
use crate::txn::service;

/// First version of transactions V2.
const TRANSACTIONS_V2_SINCE: i16 = 5;

/// The coordinator's request for a wire request of `version`, keeping only
/// the partitions of topics `readable` accepts that `exists` accepts; the
/// others are added to `errors` as TOPIC_AUTHORIZATION_FAILED or
/// UNKNOWN_TOPIC_OR_PARTITION.
pub fn to_coordinator(
    request: &TxnOffsetCommitRequest,
    version: i16,
    readable: impl Fn(&str) -> bool,
    topic_exists: impl Fn(&str) -> bool,
    partition_exists: impl Fn(&str, i32) -> bool,
    errors: &mut TopicErrors,
) -> group::TxnOffsetCommitRequest {
    let unknown = ErrorCode::UnknownTopicOrPartition.code();
    let mut topics = Vec::new();
    for topic in &request.topics {
        let name = string(&topic.name);
        // Authorized before existence, as in Kafka.
        if !readable(&name) {
            for partition in &topic.partitions {
                errors.add(
                    &name,
                    partition.partition_index,
                    ErrorCode::TopicAuthorizationFailed.code(),
                );
            }
            continue;
        }
        if !topic_exists(&name) {
            for partition in &topic.partitions {
                errors.add(&name, partition.partition_index, unknown);
            }
            continue;
        }
        let mut partitions = Vec::new();
        for partition in &topic.partitions {
            if !partition_exists(&name, partition.partition_index) {
                errors.add(&name, partition.partition_index, unknown);
                continue;
            }
            partitions.push(group::OffsetCommitPartition {
                partition_index: partition.partition_index,
                committed_offset: partition.committed_offset,
                committed_leader_epoch: if version >= 2 {
                    partition.committed_leader_epoch
                } else {
                    -1
                },
                committed_metadata: opt_string(&partition.committed_metadata),
            });
        }
        if !partitions.is_empty() {
            topics.push(group::OffsetCommitTopic { name, partitions });
        }
    }
    let v3 = version >= 3;
    group::TxnOffsetCommitRequest {
        transactional_id: string(&request.transactional_id),
        group_id: string(&request.group_id),
        producer_id: request.producer_id.0,
        producer_epoch: request.producer_epoch,
        generation_id: if v3 { request.generation_id } else { -1 },
        member_id: if v3 {
            string(&request.member_id)
        } else {
            String::new()
        },
        group_instance_id: if v3 {
            opt_string(&request.group_instance_id)
        } else {
            None
        },
        topics,
    }
}

fn partitions_of(
    request: &group::TxnOffsetCommitRequest,
) -> impl Iterator<Item = (&String, Vec<i32>)> {
    request.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| p.partition_index).collect();
        (&t.name, partitions)
    })
}

/// The wire answer when the whole request is refused: `error` on every
/// requested partition, topics as the request lists them (Kafka's
/// `TxnOffsetCommitRequest.getErrorResponse`).
pub fn refused(request: &TxnOffsetCommitRequest, error: ErrorCode) -> TxnOffsetCommitResponse {
    let mut wire = TxnOffsetCommitResponse::default();
    wire.topics = request
        .topics
        .iter()
        .map(|t| {
            let mut topic = TxnOffsetCommitResponseTopic::default();
            topic.name = t.name.clone();
            topic.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut partition = TxnOffsetCommitResponsePartition::default();
                    partition.partition_index = p.partition_index;
                    partition.error_code = error.code();
                    partition
                })
                .collect();
            topic
        })
        .collect();
    wire
}

/// The wire answer: the handler's own partition errors merged with the
/// coordinator's answer.
pub fn to_wire(
    mut errors: TopicErrors,
    response: group::TxnOffsetCommitResponse,
) -> TxnOffsetCommitResponse {
    merge_coordinator_errors(&mut errors, response);
    let mut wire = TxnOffsetCommitResponse::default();
    wire.topics = errors.into_wire(
        |name, partitions| {
            let mut topic = TxnOffsetCommitResponseTopic::default();
            topic.name = name;
            topic.partitions = partitions;
            topic
        },
        |index, error_code| {
            let mut partition = TxnOffsetCommitResponsePartition::default();
            partition.partition_index = index;
            partition.error_code = error_code;
            partition
        },
    );
    wire
}

/// Asks the transaction coordinator whether the producer's transaction is
/// open and holds the group's offsets partition (AddOffsetsToTxn), as
/// Kafka does before it writes (KIP-890 part 1): offsets from a fenced
/// producer, or outside an open transaction, would otherwise stay pending
/// with no marker ever to settle them, and OffsetFetch with
/// `require_stable` would answer UNSTABLE_OFFSET_COMMIT for good.
async fn verify(
    shard: &Rc<Shard>,
    call: &group::TxnOffsetCommitRequest,
    version: i16,
) -> Result<(), ErrorCode> {
    let Some(partition) = group_partition(shard, &call.group_id).await else {
        return Err(ErrorCode::CoordinatorNotAvailable);
    };
    let partitions = vec![TopicPartition {
        topic: OFFSETS_TOPIC.to_string(),
        partition,
    }];
    if version >= TRANSACTIONS_V2_SINCE {
        return service::add_implicitly(
            shard,
            &call.transactional_id,
            call.producer_id,
            call.producer_epoch,
            partitions,
        )
        .await;
    }
    // Kafka asks the coordinator before v5 only while
    // `transaction.partition.verification.enable` is on.
    if !shard.transaction_partition_verification_enable() {
        return Ok(());
    }
    service::verify(
        shard,
        &call.transactional_id,
        call.producer_id,
        call.producer_epoch,
        partitions,
    )
    .await
    .pop()
    .unwrap_or(Err(ErrorCode::UnknownServerError))
}

/// What a failed verification becomes in a TxnOffsetCommit answer of
/// `version`, as Kafka 4.1 answers (checked against it): a fenced epoch is
/// INVALID_PRODUCER_EPOCH at every version, a transaction without the
/// offsets partition INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v4, the
/// version that knows it), and a busy or unreachable transaction
/// coordinator COORDINATOR_NOT_AVAILABLE, which clients retry.
///
/// From v5 the transaction coordinator's codes of the implicit add pass as
/// they are (Kafka's group coordinator passes them on), a fenced epoch
/// excepted.
fn verification_error(error: ErrorCode, version: i16) -> ErrorCode {
    match error {
        ErrorCode::ProducerFenced => ErrorCode::InvalidProducerEpoch,
        other if version >= TRANSACTIONS_V2_SINCE => other,
        ErrorCode::InvalidTxnState if version >= 4 => ErrorCode::TransactionAbortable,
        ErrorCode::ConcurrentTransactions
        | ErrorCode::CoordinatorLoadInProgress
        | ErrorCode::NotCoordinator => ErrorCode::CoordinatorNotAvailable,
        other => other,
    }
}

/// Answers TxnOffsetCommit.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: TxnOffsetCommitRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let refusal =
            access.transaction_offsets_refusal(&request.transactional_id, &request.group_id);
        if let Some(error) = refusal {
            let answer = refused(&request, error);
            return encode_response(ApiKey::TxnOffsetCommit, version, correlation_id, &answer);
        }
        let mut errors = TopicErrors::default();
        let call = to_coordinator(
            &request,
            version,
            |topic| access.topic(AclOperation::Read, topic),
            |topic| topic_exists(&shard, topic),
            |topic, partition| partition_exists(&shard, topic, partition),
            &mut errors,
        );
        let response = if call.topics.is_empty() {
            group::OffsetCommitResponse { topics: Vec::new() }
        } else if call.group_id.is_empty() {
            // Kafka's GroupCoordinatorService answers this before routing.
            failed(partitions_of(&call), ErrorCode::InvalidGroupId)
        } else if let Err(error) = verify(&shard, &call, version).await {
            failed(partitions_of(&call), verification_error(error, version))
        } else {
            let group_id = call.group_id.clone();
            let sent = call.clone();
            match call_group(&shard, &group_id, GroupCall::TxnOffsetCommit(call)).await {
                GroupReply::TxnOffsetCommit(response) => response,
                GroupReply::Unavailable(error) => failed(partitions_of(&sent), error),
                other => failed(partitions_of(&sent), unexpected("TxnOffsetCommit", &other)),
            }
        };
        encode_response(
            ApiKey::TxnOffsetCommit,
            version,
            correlation_id,
            &to_wire(errors, response),
        )
    })
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{ProducerId, TransactionalId};
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    use super::*;
    use crate::server::handlers::groups::{group_id, topic_name};

    fn request() -> TxnOffsetCommitRequest {
        let partition = |index: i32, offset: i64| {
            let mut p = TxnOffsetCommitRequestPartition::default();
            p.partition_index = index;
            p.committed_offset = offset;
            p.committed_leader_epoch = 4;
            p.committed_metadata = Some(StrBytes::from_static_str("meta"));
            p
        };
        let topic = |name: &str, partitions| {
            let mut t = TxnOffsetCommitRequestTopic::default();
            t.name = topic_name(name);
            t.partitions = partitions;
            t
        };
        let mut request = TxnOffsetCommitRequest::default();
        request.transactional_id = TransactionalId(StrBytes::from_static_str("tx"));
        request.group_id = group_id("g");
        request.producer_id = ProducerId(7);
        request.producer_epoch = 2;
        request.generation_id = 5;
        request.member_id = StrBytes::from_static_str("m-1");
        request.group_instance_id = Some(StrBytes::from_static_str("i-1"));
        request.topics = vec![
            topic("known", vec![partition(0, 10), partition(7, 70)]),
            topic("missing", vec![partition(0, 5)]),
        ];
        request
    }

    /// v3+ carry the member, generation and instance; unknown topics and
    /// partitions are answered before the coordinator and listed first.
    #[test]
    fn v3_passes_the_member_and_unknown_partitions_are_answered_here() {
        let mut errors = TopicErrors::default();
        let call = to_coordinator(
            &request(),
            3,
            |_| true,
            |t| t == "known",
            |t, p| t == "known" && p < 2,
            &mut errors,
        );
        assert_eq!(call.producer_id, 7);
        assert_eq!(call.producer_epoch, 2);
        assert_eq!(call.generation_id, 5);
        assert_eq!(call.member_id, "m-1");
        assert_eq!(call.group_instance_id.as_deref(), Some("i-1"));
        assert_eq!(call.topics.len(), 1);
        assert_eq!(call.topics[0].partitions[0].committed_leader_epoch, 4);
        let unknown = ErrorCode::UnknownTopicOrPartition.code();
        let wire = to_wire(
            errors,
            group::OffsetCommitResponse {
                topics: vec![group::OffsetCommitTopicResponse {
                    name: "known".into(),
                    partitions: vec![group::OffsetCommitPartitionResponse {
                        partition_index: 0,
                        error: Some(ErrorCode::IllegalGeneration),
                    }],
                }],
            },
        );
        let flat: Vec<(String, i32, i16)> = wire
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.name.to_string(), p.partition_index, p.error_code))
            })
            .collect();
        assert_eq!(
            flat,
            vec![
                ("known".to_string(), 7, unknown),
                ("known".to_string(), 0, ErrorCode::IllegalGeneration.code()),
                ("missing".to_string(), 0, unknown),
            ]
        );
    }

    /// v0-v2 have no member fields (generation -1, empty member), and v0-v1
    /// no leader epoch.
    #[test]
    fn old_versions_have_no_member_and_v0_v1_no_leader_epoch() {
        for version in 0..=2 {
            let mut errors = TopicErrors::default();
            let call = to_coordinator(
                &request(),
                version,
                |_| true,
                |_| true,
                |_, _| true,
                &mut errors,
            );
            assert_eq!(call.generation_id, -1);
            assert_eq!(call.member_id, "");
            assert_eq!(call.group_instance_id, None);
            let epoch = call.topics[0].partitions[0].committed_leader_epoch;
            assert_eq!(epoch, if version >= 2 { 4 } else { -1 });
        }
    }

    /// A topic the caller may not read is refused whether it exists or
    /// not; a refused transactional id or group refuses every partition.
    #[test]
    fn refusals_name_every_refused_partition() {
        let mut errors = TopicErrors::default();
        let call = to_coordinator(
            &request(),
            3,
            |t| t == "known",
            |_| false,
            |_, _| false,
            &mut errors,
        );
        assert!(call.topics.is_empty());
        let unknown = ErrorCode::UnknownTopicOrPartition.code();
        let refused_topic = ErrorCode::TopicAuthorizationFailed.code();
        assert_eq!(
            errors.topics,
            vec![
                ("known".to_string(), vec![(0, unknown), (7, unknown)]),
                ("missing".to_string(), vec![(0, refused_topic)]),
            ]
        );
        let wire = refused(&request(), ErrorCode::TransactionalIdAuthorizationFailed);
        let codes: Vec<(i32, i16)> = wire
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (p.partition_index, p.error_code))
            })
            .collect();
        assert_eq!(codes, vec![(0, 53), (7, 53), (0, 53)]);
    }

    /// Every served version's answer encodes and decodes back.
    #[test]
    fn responses_round_trip_for_every_served_version() {
        let mut errors = TopicErrors::default();
        errors.add("t", 1, ErrorCode::UnknownTopicOrPartition.code());
        let wire = to_wire(errors, group::OffsetCommitResponse { topics: Vec::new() });
        for version in 0..=4 {
            let mut buf = BytesMut::new();
            wire.encode(&mut buf, version).expect("encodes");
            let back =
                TxnOffsetCommitResponse::decode(&mut buf.freeze(), version).expect("decodes");
            assert_eq!(back.topics[0].partitions[0].partition_index, 1);
        }
    }
}
