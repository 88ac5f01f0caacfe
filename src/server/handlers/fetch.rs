//! Fetch (key 1): reads whole batches from the owning shards, up to the high
//! watermark, or for read_committed (isolation level 1) up to the last
//! stable offset, with the aborted transactions overlapping what was read
//! (null for read_uncommitted, as Kafka answers). Control batches
//! (transaction markers) go out like any batch; clients skip them. When less
//! than `min_bytes` is available it waits, up to `max_wait_ms`, for an
//! append or a marker on any of the partitions (an event from the owning
//! shard, not a polling loop), then reads again.
//!
//! Incremental fetch sessions (KIP-227) are declined the way Kafka declines
//! them when its session cache is full: every response carries session id 0,
//! so clients keep sending full fetch requests.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::{join_all, select, select_all, Either};
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::Encodable;

use super::{encode_response, encode_response_pieces, str_bytes, ShardGroups};
use crate::cluster::image::check_current_leader_epoch;
use crate::protocol::ErrorCode;
use crate::quota::sensors::{Kept, RequestClient};
use crate::quota::QuotaKey;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::server::pieces::{RecordSlots, RECORDS_MARKER_BYTES};
use crate::shard::messages::{FetchItem, FetchResult, ShardReply, ShardRequest, TopicPartition};
use crate::shard::Shard;

struct Entry {
    topic_position: usize,
    topic_partition: TopicPartition,
    fetch_offset: i64,
    partition_max_bytes: usize,
    owner: Option<usize>,
    early_error: Option<ErrorCode>,
}

/// Answers Fetch.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    client: RequestClient,
    request: FetchRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let follower = request.replica_id.0 >= 0 || request.replica_state.replica_id.0 >= 0;
        if follower {
            // A replica's fetch is exempt from the request quota.
            client.exempt_request_time();
        }
        if request.session_id != 0 {
            let mut response = FetchResponse::default();
            response.error_code = ErrorCode::FetchSessionIdNotFound.code();
            response.session_id = 0;
            return encode_response(ApiKey::Fetch, version, correlation_id, &response);
        }
        let image = shard.image();
        // (name, id) per requested topic, in request order.
        let mut topics: Vec<(Option<String>, uuid::Uuid)> =
            Vec::with_capacity(request.topics.len());
        let mut entries = Vec::new();
        for (ti, fetch_topic) in request.topics.iter().enumerate() {
            let topic = if version >= 13 {
                image.topic_by_id(&fetch_topic.topic_id)
            } else {
                image.topic(&fetch_topic.topic)
            };
            let unknown = if version >= 13 {
                ErrorCode::UnknownTopicId
            } else {
                ErrorCode::UnknownTopicOrPartition
            };
            let name = topic
                .map(|t| t.name.clone())
                .or_else(|| (version < 13).then(|| fetch_topic.topic.to_string()));
            topics.push((name.clone(), fetch_topic.topic_id));
            // A replica (replica id >= 0) needs CLUSTER_ACTION, a consumer
            // READ on the topic, asked before the topic is looked for (an
            // unknown topic id excepted), as Kafka does.
            let readable = if follower {
                access.cluster(AclOperation::ClusterAction)
            } else {
                name.as_ref()
                    .is_some_and(|n| access.topic(AclOperation::Read, n))
            };
            for partition in &fetch_topic.partitions {
                let owner = topic.and_then(|t| shard.owner_of(t, partition.partition));
                let early_error = match (topic, owner) {
                    (None, _) if version >= 13 => Some(unknown),
                    _ if !readable => Some(ErrorCode::TopicAuthorizationFailed),
                    (None, _) => Some(unknown),
                    (Some(_), None) => Some(ErrorCode::UnknownTopicOrPartition),
                    // Fetch takes any negative epoch for "no check" (Kafka's
                    // FetchRequest.optionalEpoch), not only -1.
                    (Some(topic), Some(_)) => check_current_leader_epoch(
                        partition.current_leader_epoch.max(-1),
                        topic.leader_epoch(partition.partition),
                    )
                    .err(),
                };
                entries.push(Entry {
                    topic_position: ti,
                    topic_partition: TopicPartition {
                        topic: name.clone().unwrap_or_default(),
                        partition: partition.partition,
                    },
                    fetch_offset: partition.fetch_offset,
                    partition_max_bytes: (partition.partition_max_bytes.max(0) as usize)
                        .min(RECORDS_MARKER_BYTES),
                    owner,
                    early_error,
                });
            }
        }
        // One response carries at most RECORDS_MARKER_BYTES of record data
        // by reference (KIP-74 lets a broker return less than asked); file
        // ranges beyond that could not be sent at all.
        let mut max_bytes = if version >= 3 {
            request.max_bytes.max(0) as usize
        } else {
            usize::MAX
        }
        .min(RECORDS_MARKER_BYTES);
        // A consumer under a byte-rate quota is given at most what the
        // quota allows over its whole window, as Kafka does; replicas are
        // not under client quotas.
        let quota = (!follower)
            .then(|| client.quota(&shard, QuotaKey::ConsumerByteRate))
            .flatten();
        if let Some((_, quota)) = &quota {
            let window_bytes = quota * shard.config.quota_window.span_ms() as f64 / 1000.0;
            if window_bytes < max_bytes as f64 {
                max_bytes = window_bytes as usize;
            }
        }
        // Never wait for more than may be answered.
        let min_bytes = (request.min_bytes.max(0) as usize).min(max_bytes);
        let max_wait = Duration::from_millis(request.max_wait_ms.max(0) as u64);
        let deadline = Instant::now() + max_wait;

        let mut results = read_round(&shard, &entries, max_bytes, request.isolation_level).await;
        loop {
            let total: usize = results.iter().map(|r| r.bytes).sum();
            let has_error = results.iter().any(|r| r.error_code != 0);
            let now = Instant::now();
            if total >= min_bytes.max(1) || has_error || now >= deadline || entries.is_empty() {
                break;
            }
            if !wait_for_data(
                &shard,
                &entries,
                &results,
                deadline - now,
                request.isolation_level,
            )
            .await
            {
                break;
            }
            results = read_round(&shard, &entries, max_bytes, request.isolation_level).await;
        }

        // KIP-74: the response stays within max_bytes, except that the first
        // batch found is always returned so a consumer can make progress.
        let mut budget_used = 0usize;
        let mut response_topics: Vec<FetchableTopicResponse> = topics
            .iter()
            .map(|(name, id)| {
                let mut t = FetchableTopicResponse::default();
                t.topic = TopicName(str_bytes(name.as_deref().unwrap_or("")));
                t.topic_id = *id;
                t
            })
            .collect();
        let mut slots = RecordSlots::default();
        for (entry, result) in entries.iter().zip(results) {
            let mut p = PartitionData::default();
            p.partition_index = entry.topic_partition.partition;
            p.error_code = result.error_code;
            p.high_watermark = result.high_watermark;
            p.last_stable_offset = result.last_stable_offset;
            if version >= 5 {
                p.log_start_offset = result.log_start_offset;
            }
            p.preferred_read_replica = BrokerId(-1);
            let fits = budget_used + result.bytes <= max_bytes || budget_used == 0;
            p.aborted_transactions = if request.isolation_level == 1 {
                let listed = if fits {
                    result.aborted_transactions.unwrap_or_default()
                } else {
                    Vec::new()
                };
                Some(
                    listed
                        .into_iter()
                        .map(|(producer_id, first_offset)| {
                            let mut aborted = AbortedTransaction::default();
                            aborted.producer_id = ProducerId(producer_id);
                            aborted.first_offset = first_offset;
                            aborted
                        })
                        .collect(),
                )
            } else {
                None
            };
            // Records are present-but-empty when there is nothing, never null.
            // The record data goes out by reference (server/pieces.rs).
            p.records = Some(if fits && result.bytes > 0 {
                match slots.add(result.records, result.bytes) {
                    Some(records) => {
                        budget_used += result.bytes;
                        records
                    }
                    None => Bytes::new(),
                }
            } else {
                Bytes::new()
            });
            response_topics[entry.topic_position].partitions.push(p);
        }
        let mut response = FetchResponse::default();
        response.error_code = 0;
        response.session_id = 0;
        response.responses = response_topics;
        // The request's handling time counts against `request_percentage`
        // (a replica's was exempted above), then the response's size
        // (`FetchResponse.sizeOf`) against `consumer_byte_rate`, as Kafka
        // counts them. When either throttles, the bytes are taken back and
        // the answer is empty, carrying only the longer throttle time.
        let mut throttle_ms = client.charge_request_time(&shard).await;
        if quota.is_some() {
            let size = (4 + Encodable::compute_size(&response, version).unwrap_or(0)) as f64;
            let kept = if throttle_ms > 0 {
                Kept::Never
            } else {
                Kept::UnlessThrottled
            };
            let bandwidth_ms = client
                .charge(&shard, QuotaKey::ConsumerByteRate, size, kept)
                .await;
            throttle_ms = throttle_ms.max(bandwidth_ms);
        }
        if throttle_ms > 0 {
            let mut throttled = FetchResponse::default();
            throttled.throttle_time_ms = i32::try_from(throttle_ms).unwrap_or(i32::MAX);
            return encode_response(ApiKey::Fetch, version, correlation_id, &throttled);
        }
        encode_response_pieces(ApiKey::Fetch, version, correlation_id, &response, slots)
    })
}

async fn read_round(
    shard: &Rc<Shard>,
    entries: &[Entry],
    max_bytes: usize,
    isolation_level: i8,
) -> Vec<FetchResult> {
    let mut results: Vec<FetchResult> = entries
        .iter()
        .map(|e| FetchResult {
            error_code: e.early_error.map_or(0, |c| c.code()),
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            ..FetchResult::default()
        })
        .collect();
    let mut groups: ShardGroups<FetchItem> = ShardGroups::new();
    for (i, e) in entries.iter().enumerate() {
        if let (None, Some(owner)) = (e.early_error, e.owner) {
            groups.push(
                owner,
                i,
                FetchItem {
                    topic_partition: e.topic_partition.clone(),
                    fetch_offset: e.fetch_offset,
                    partition_max_bytes: e.partition_max_bytes,
                },
            );
        }
    }
    let mut calls = Vec::new();
    for (target, (positions, items)) in groups.groups {
        calls.push((
            positions,
            shard
                .call(
                    target,
                    ShardRequest::Fetch {
                        items,
                        max_bytes,
                        isolation_level,
                    },
                )
                .await,
        ));
    }
    let replies = join_all(calls.into_iter().map(|(positions, call)| async move {
        let reply = match call {
            Ok(completion) => completion.await.ok(),
            Err(_) => None,
        };
        (positions, reply)
    }))
    .await;
    for (positions, reply) in replies {
        match reply {
            Some(ShardReply::Fetch(shard_results)) => {
                for (position, result) in positions.into_iter().zip(shard_results) {
                    results[position] = result;
                }
            }
            _ => {
                for position in positions {
                    results[position].error_code = ErrorCode::NotLeaderOrFollower.code();
                }
            }
        }
    }
    results
}

/// Waits until one owning shard reports an append (read_committed: a move of
/// the last stable offset) past what was read, or until `left` passes.
/// Returns false when nothing can be waited on.
async fn wait_for_data(
    shard: &Rc<Shard>,
    entries: &[Entry],
    results: &[FetchResult],
    left: Duration,
    isolation_level: i8,
) -> bool {
    let mut groups: ShardGroups<(TopicPartition, i64)> = ShardGroups::new();
    for (i, (e, r)) in entries.iter().zip(results).enumerate() {
        if let (None, Some(owner)) = (e.early_error, e.owner) {
            let readable_end = if isolation_level == 1 {
                r.last_stable_offset
            } else {
                r.high_watermark
            };
            let seen = readable_end.max(e.fetch_offset);
            groups.push(owner, i, (e.topic_partition.clone(), seen));
        }
    }
    if groups.groups.is_empty() {
        return false;
    }
    let max_wait_ms = left.as_millis() as u64;
    let mut waits = Vec::new();
    for (target, (_, items)) in groups.groups {
        match shard
            .call(
                target,
                ShardRequest::WaitForData {
                    items,
                    max_wait_ms,
                    isolation_level,
                },
            )
            .await
        {
            Ok(completion) => waits.push(completion),
            Err(_) => return false,
        }
    }
    let timer = Box::pin(glommio::timer::sleep(left));
    match select(select_all(waits), timer).await {
        Either::Left(_) | Either::Right(_) => true,
    }
}
