//! Produce (key 0): the connection reads the request framing first, each
//! partition's records into a buffer of their own (`produce_frame.rs`).
//! Batches are validated here, on the connection's shard
//! (magic 2, exactly one batch, CRC32C, size, each record's timestamp
//! window and, on compacted topics, key), recompressed when the
//! topic's `compression.type` names another codec, grouped by owning shard, and
//! appended there in request order. acks=0 gets no response (an error on
//! any partition closes the connection instead, as in Kafka); acks=1 is
//! answered after the append (after its write with
//! `--acks-wait-for-write`); acks=all after fdatasync under the default
//! flush policy. Transactional batches are first verified with the
//! transaction coordinator (v3-v11, transactions V1) or added by it to
//! their producer's transaction (v12+, transactions V2; see
//! [`verify_transactional`]), then open or extend the transaction on the
//! partition. For V1 a window remains between the verification and the
//! write (Kafka closes it with a guard kept by the partition): a batch
//! whose client sends EndTxn without waiting for the batch's answer can
//! land after that transaction's marker. Real clients wait for their
//! batches before EndTxn. V2 closes it by epoch: the markers carry the
//! bumped epoch, which fences such a late batch on every partition.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::join_all;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ApiKey, ProduceResponse};

use super::{encode_response, str_bytes, ShardGroups};
use crate::protocol::record_batch::{
    parse_header, validate_batch, BatchError, BatchHeader, BatchIter,
};
use crate::protocol::ErrorCode;
use crate::quota::sensors::{Kept, RequestClient};
use crate::quota::QuotaKey;
use crate::security::acl::AclOperation;
use crate::server::connection::{Responder, Response};
use crate::server::produce_frame::ProduceFrame;
use crate::shard::messages::{
    ProduceItem, ProduceResult, ShardReply, ShardRequest, TopicPartition,
};
use crate::shard::Shard;
use crate::storage::recompress_batch;
use crate::txn::service::{add_implicitly, verify};

/// Checks one partition's records as Kafka's LogValidator does for v2.
fn validate_records(
    records: Option<&Bytes>,
    max_message_bytes: i32,
) -> Result<BatchHeader, (ErrorCode, String)> {
    let Some(records) = records else {
        return Err((ErrorCode::InvalidRecord, "records are missing".into()));
    };
    let mut iter = BatchIter::new(records, false);
    let count = iter.by_ref().count();
    if let Some(e) = iter.stopped_by {
        return Err(match e {
            BatchError::BadMagic(m) => (
                ErrorCode::InvalidRecord,
                format!("Produce requests with version 3 and above must use message format v2, got magic {m}"),
            ),
            other => (ErrorCode::CorruptMessage, other.to_string()),
        });
    }
    if count != 1 {
        return Err((
            ErrorCode::InvalidRecord,
            format!("Produce requests with version 3 and above must contain exactly one record batch, got {count}"),
        ));
    }
    if records.len() > max_message_bytes.max(0) as usize {
        return Err((
            ErrorCode::MessageTooLarge,
            format!(
                "The batch size {} exceeds max.message.bytes {max_message_bytes}",
                records.len()
            ),
        ));
    }
    let header = validate_batch(records).map_err(|e| (ErrorCode::CorruptMessage, e.to_string()))?;
    if header.record_count <= 0 || header.last_offset_delta != header.record_count - 1 {
        return Err((
            ErrorCode::InvalidRecord,
            format!(
                "record count {} does not match lastOffsetDelta {}",
                header.record_count, header.last_offset_delta
            ),
        ));
    }
    if header.is_control() {
        return Err((
            ErrorCode::InvalidRecord,
            "clients may not produce control batches".into(),
        ));
    }
    if header.is_transactional() && header.producer_id < 0 {
        return Err((
            ErrorCode::InvalidRecord,
            "a transactional batch needs a producer id".into(),
        ));
    }
    if header.producer_id >= 0 && (header.producer_epoch < 0 || header.base_sequence < 0) {
        return Err((
            ErrorCode::InvalidRecord,
            "a batch with a producer id needs a producer epoch and a base sequence".into(),
        ));
    }
    Ok(header)
}

/// One partition's answer as it is built.
struct PartitionAnswer {
    index: i32,
    result: ProduceResult,
    message: Option<String>,
    record_errors: Vec<(i32, String)>,
}

impl PartitionAnswer {
    /// A partition refused with `error` (and Kafka's message, if any).
    fn refused(index: i32, error: ErrorCode, message: Option<String>) -> Self {
        PartitionAnswer {
            index,
            result: ProduceResult::error(error.code()),
            message,
            record_errors: Vec::new(),
        }
    }
}

/// Why a partition's records were refused: Kafka's error and message and,
/// when single records were at fault, each of them (its index in the
/// batch and why), which Produce v8+ answers in `record_errors`.
#[derive(Debug)]
struct Refusal {
    error: ErrorCode,
    message: Option<String>,
    record_errors: Vec<(i32, String)>,
}

impl From<(ErrorCode, String)> for Refusal {
    fn from((error, message): (ErrorCode, String)) -> Refusal {
        Refusal {
            error,
            message: Some(message),
            record_errors: Vec::new(),
        }
    }
}

/// What Kafka's LogValidator checks in each record of a topic's batches.
struct RecordRules {
    /// `cleanup.policy` has `compact`: every record needs a key.
    compacted: bool,
    /// `message.timestamp.type` is LogAppendTime: the broker stamps the
    /// batch and the producer's timestamps are not checked.
    log_append_time: bool,
    /// `message.timestamp.before.max.ms`.
    before_max_ms: i64,
    /// `message.timestamp.after.max.ms`.
    after_max_ms: i64,
}

impl RecordRules {
    fn of(
        topic: &crate::cluster::TopicImage,
        broker: &crate::config::topic_config::BrokerDefaults,
    ) -> RecordRules {
        RecordRules {
            compacted: topic.configs.cleanup_policy_compact(broker),
            log_append_time: topic.configs.message_timestamp_type_is_log_append(broker),
            before_max_ms: topic.configs.message_timestamp_before_max_ms(broker),
            after_max_ms: topic.configs.message_timestamp_after_max_ms(broker),
        }
    }

    /// Whether the batch header already shows every record passes, so the
    /// records need not be decoded (nor decompressed): no key is needed,
    /// no bound below is set (Kafka's default), and the batch's
    /// maxTimestamp, which producers write, is within the bound above.
    fn header_suffices(&self, header: &BatchHeader, now: i64) -> bool {
        !self.compacted
            && !header.is_log_append_time()
            && (self.log_append_time
                || (self.before_max_ms == i64::MAX
                    && header.max_timestamp.wrapping_sub(now) <= self.after_max_ms))
    }
}

/// Checks each record as Kafka's LogValidator does: a key on a compacted
/// topic (INVALID_RECORD), a CreateTime timestamp within
/// [now - before.max.ms, now + after.max.ms] (INVALID_TIMESTAMP; -1, no
/// timestamp, is never out of range) and no LogAppendTime set by the
/// producer where it would count. One refused record refuses the batch;
/// the answer names every refused record, with Kafka's messages (Java's
/// wrapping arithmetic included).
fn check_records(
    records: &Bytes,
    header: &BatchHeader,
    rules: &RecordRules,
    topic_partition: (&str, i32),
    now: i64,
) -> Result<(), Refusal> {
    if rules.header_suffices(header, now) {
        return Ok(());
    }
    let mut buf = records.clone();
    let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).map_err(|e| {
        Refusal::from((
            ErrorCode::CorruptMessage,
            format!("cannot decode records: {e}"),
        ))
    })?;
    let (topic, partition) = topic_partition;
    let mut record_errors = Vec::new();
    let mut timestamp_refused = false;
    for (index, record) in set.records.iter().enumerate() {
        let index = i32::try_from(index).unwrap_or(i32::MAX);
        // A LogAppendTime batch's records read as its maxTimestamp.
        let timestamp = if header.is_log_append_time() {
            header.max_timestamp
        } else {
            record.timestamp
        };
        if rules.compacted && record.key.is_none() {
            record_errors.push((
                index,
                format!(
                    "Compacted topic cannot accept message without key in topic partition {topic}-{partition}"
                ),
            ));
        } else if !rules.log_append_time && timestamp != -1 {
            let behind = now.wrapping_sub(timestamp);
            if behind > rules.before_max_ms || behind.wrapping_neg() > rules.after_max_ms {
                timestamp_refused = true;
                record_errors.push((
                    index,
                    format!(
                        "Timestamp {timestamp} of message with offset {} is out of range. \
                         The timestamp should be within [{}, {}]",
                        record.offset,
                        now.wrapping_sub(rules.before_max_ms),
                        now.wrapping_add(rules.after_max_ms)
                    ),
                ));
            }
        } else if header.is_log_append_time() {
            timestamp_refused = true;
            record_errors.push((
                index,
                format!(
                    "Invalid timestamp type in message DefaultRecord(offset={}, timestamp={timestamp}, \
                     key={} bytes, value={} bytes). Producer should not set timestamp type to LogAppendTime.",
                    record.offset,
                    record.key.as_ref().map_or(0, Bytes::len),
                    record.value.as_ref().map_or(0, Bytes::len),
                ),
            ));
        }
    }
    if record_errors.is_empty() {
        return Ok(());
    }
    let (error, message) = if timestamp_refused {
        (
            ErrorCode::InvalidTimestamp,
            "One or more records have been rejected due to invalid timestamp".to_string(),
        )
    } else {
        let shown: Vec<String> = record_errors
            .iter()
            .take(3)
            .map(|(index, message)| format!("RecordError(batchIndex={index}, message='{message}')"))
            .collect();
        (
            ErrorCode::InvalidRecord,
            format!(
                "One or more records have been rejected due to {} record errors in total, \
                 and only showing the first three errors at most: [{}]",
                record_errors.len(),
                shown.join(", ")
            ),
        )
    };
    Err(Refusal {
        error,
        message: Some(message),
        record_errors,
    })
}

/// Applies the topic's `compression.type` (`codec` and its level, None
/// for `producer`) as Kafka's LogValidator does: a batch in another codec
/// is stored recompressed with the topic's, at the topic's level for it,
/// records, offsets, timestamps and producer fields unchanged, and must
/// still fit `max.message.bytes`. Returns the header of the batch now in
/// `records`.
fn recompress_for_topic(
    records: &mut Option<Bytes>,
    header: BatchHeader,
    codec: Option<(i16, Option<i32>)>,
    max_message_bytes: i32,
) -> Result<BatchHeader, (ErrorCode, String)> {
    let (Some((codec, level)), Some(batch)) = (codec, records.as_ref()) else {
        return Ok(header);
    };
    if header.compression() == codec {
        return Ok(header);
    }
    let rebuilt = recompress_batch(batch, &header, codec, level)
        .map_err(|message| (ErrorCode::CorruptMessage, message))?;
    if rebuilt.len() > max_message_bytes.max(0) as usize {
        return Err((
            ErrorCode::MessageTooLarge,
            format!(
                "The batch size {} after recompression exceeds max.message.bytes {max_message_bytes}",
                rebuilt.len()
            ),
        ));
    }
    let header =
        validate_batch(&rebuilt).map_err(|e| (ErrorCode::CorruptMessage, e.to_string()))?;
    *records = Some(rebuilt);
    Ok(header)
}

/// Asks the transaction coordinator, once per producer id and epoch in the
/// request, whether its transaction is open and holds every partition its
/// transactional batches go to (KIP-890 part 1, Kafka's default
/// `transaction.partition.verification.enable=true`), or from v12 to add
/// them (KIP-890 part 2, whose clients send no AddPartitionsToTxn).
/// Without it a batch from a fenced producer, or one that arrives after its
/// transaction ended (a late retry), or one for a partition never added,
/// would open a transaction on the partition that no marker ever closes:
/// its last stable offset would stop there, and read_committed consumers
/// with it.
/// Returns the refused positions with the error Kafka answers for them.
async fn verify_transactional(
    shard: &Rc<Shard>,
    transactional_id: &str,
    validated: &[(usize, usize, ProduceItem)],
    version: i16,
) -> Vec<(usize, ErrorCode)> {
    /// The transactional batches of one producer id and epoch.
    #[derive(Default)]
    struct Writes {
        positions: Vec<usize>,
        partitions: Vec<TopicPartition>,
    }
    let mut producers: BTreeMap<(i64, i16), Writes> = BTreeMap::new();
    for (_, position, item) in validated {
        let header = &item.header;
        if header.is_transactional() {
            let writes = producers
                .entry((header.producer_id, header.producer_epoch))
                .or_default();
            writes.positions.push(*position);
            writes.partitions.push(item.topic_partition.clone());
        }
    }
    let mut refused = Vec::new();
    for ((producer_id, producer_epoch), writes) in producers {
        let Writes {
            positions,
            partitions,
        } = writes;
        if version >= TRANSACTIONS_V2_SINCE {
            if let Err(error) = add_with_retries(
                shard,
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
            )
            .await
            {
                tracing::debug!(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    ?error,
                    "transactional produce not added to its transaction"
                );
                let error = produce_add_error(error);
                refused.extend(positions.into_iter().map(|p| (p, error)));
            }
            continue;
        }
        let answers = verify(
            shard,
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
        )
        .await;
        for (position, answer) in positions.into_iter().zip(answers) {
            if let Err(error) = answer {
                tracing::debug!(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    ?error,
                    "transactional produce not verified"
                );
                refused.push((position, produce_verification_error(error, version)));
            }
        }
    }
    refused
}

/// First Produce version of transactions V2: its transactional batches add
/// their partitions to the transaction (Kafka decides by request version).
const TRANSACTIONS_V2_SINCE: i16 = 12;
/// Pause between the implicit adds a busy coordinator refused (Kafka's
/// `add.partitions.to.txn.retry.backoff.ms`).
const ADD_RETRY_BACKOFF: Duration = Duration::from_millis(20);
/// How long the implicit add is retried while the coordinator is busy
/// (Kafka's `add.partitions.to.txn.retry.backoff.max.ms`): typically the
/// markers of the producer's previous transaction, whose EndTxn was
/// answered before them.
const ADD_RETRY_TIME: Duration = Duration::from_millis(100);

/// The implicit add of transactions V2, retried on CONCURRENT_TRANSACTIONS
/// for up to `ADD_RETRY_TIME`, as Kafka's partition leader retries it.
async fn add_with_retries(
    shard: &Rc<Shard>,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    partitions: Vec<TopicPartition>,
) -> Result<(), ErrorCode> {
    let deadline = std::time::Instant::now() + ADD_RETRY_TIME;
    loop {
        let answer = add_implicitly(
            shard,
            transactional_id,
            producer_id,
            producer_epoch,
            partitions.clone(),
        )
        .await;
        match answer {
            Err(ErrorCode::ConcurrentTransactions) if std::time::Instant::now() < deadline => {
                glommio::timer::sleep(ADD_RETRY_BACKOFF).await;
            }
            answer => return answer,
        }
    }
}

/// What a failed implicit add becomes in a Produce v12+ answer, as Kafka
/// 4.1 answers V2 clients: a fenced epoch INVALID_PRODUCER_EPOCH, an
/// unreachable coordinator NOT_ENOUGH_REPLICAS (retried without a metadata
/// refresh); CONCURRENT_TRANSACTIONS stays (common while the previous
/// transaction's markers are written, and retried by the client).
fn produce_add_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::ProducerFenced => ErrorCode::InvalidProducerEpoch,
        ErrorCode::CoordinatorLoadInProgress
        | ErrorCode::CoordinatorNotAvailable
        | ErrorCode::NotCoordinator => ErrorCode::NotEnoughReplicas,
        other => other,
    }
}

/// What a failed verification becomes in a Produce answer of `version`,
/// as Kafka 4.1 answers clients of transactions V1: a fenced epoch
/// INVALID_PRODUCER_EPOCH; a partition outside the transaction
/// INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from v11 (KIP-890 part 1's
/// version, whose clients know it); a busy or unreachable coordinator
/// NOT_ENOUGH_REPLICAS, which every producer retries without refreshing its
/// metadata.
fn produce_verification_error(error: ErrorCode, version: i16) -> ErrorCode {
    match error {
        ErrorCode::ProducerFenced => ErrorCode::InvalidProducerEpoch,
        ErrorCode::InvalidTxnState if version >= 11 => ErrorCode::TransactionAbortable,
        ErrorCode::ConcurrentTransactions
        | ErrorCode::CoordinatorLoadInProgress
        | ErrorCode::CoordinatorNotAvailable
        | ErrorCode::NotCoordinator => ErrorCode::NotEnoughReplicas,
        other => other,
    }
}

/// True when the request may append to internal topics: only Kafka's
/// admin client id may (`internalTopicsAllowed` in Kafka's produce path);
/// everyone else gets INVALID_TOPIC_EXCEPTION, whatever their ACLs.
fn internal_topics_allowed(header: &kafka_protocol::messages::RequestHeader) -> bool {
    header.client_id.as_deref() == Some("__admin_client")
}

/// First Produce version naming topics by id (KIP-516).
const PRODUCE_TOPIC_IDS_SINCE: i16 = 13;

/// Answers a Produce request as the connection read it.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    client: RequestClient,
    frame: ProduceFrame,
) -> Responder {
    let internal_topics_allowed = internal_topics_allowed(&frame.header);
    let version = frame.header.request_api_version;
    let correlation_id = frame.header.correlation_id;
    let frame_bytes = frame.frame_bytes;
    let mut request = frame.request;
    // The producer quota counts the request as it arrives (Kafka counts
    // it as it answers, but reads no next request before then; here later
    // requests are read while this one is handled, so a throttle must be
    // known before the next is read). acks=0 is counted too.
    let throttle_ms = client
        .charge(
            shard,
            QuotaKey::ProducerByteRate,
            frame_bytes as f64,
            Kept::Always,
        )
        .await;
    let acks = request.acks;
    // Whether any partition's records say they are transactional, read
    // before validation as Kafka's `hasTransactionalRecords` reads them: the
    // transactional id is authorized for the whole request.
    let claims_transactional = request
        .topic_data
        .iter()
        .flat_map(|t| &t.partition_data)
        .any(|p| {
            p.records
                .as_deref()
                .is_some_and(|r| parse_header(r).is_ok_and(|h| h.is_transactional()))
        });
    let image = shard.image();
    // Results in request order: (topic position, partition position).
    let mut results: Vec<Vec<PartitionAnswer>> = Vec::with_capacity(request.topic_data.len());
    let mut flat = Vec::new(); // (topic position, partition position)

    // (owning shard, position in `flat`, item), before verification.
    let mut validated: Vec<(usize, usize, ProduceItem)> = Vec::new();
    let acks_valid = (-1..=1).contains(&acks);
    let broker = shard.broker_defaults();
    let now = crate::partition::now_ms();
    for (ti, topic_data) in request.topic_data.iter_mut().enumerate() {
        // From v13 a topic is named by its id; an id no topic has (the nil
        // id too) is UNKNOWN_TOPIC_ID on every partition, before ACLs and
        // acks are looked at, as Kafka 4.1 answers (measured).
        let (name, topic) = if version >= PRODUCE_TOPIC_IDS_SINCE {
            match image.topic_by_id(&topic_data.topic_id) {
                Some(topic) => (topic.name.clone(), Some(topic)),
                None => {
                    results.push(
                        topic_data
                            .partition_data
                            .iter()
                            .map(|p| {
                                PartitionAnswer::refused(p.index, ErrorCode::UnknownTopicId, None)
                            })
                            .collect(),
                    );
                    continue;
                }
            }
        } else {
            let name = topic_data.name.to_string();
            let topic = image.topic(&name);
            (name, topic)
        };
        // WRITE is asked before the topic is looked for, as Kafka does.
        let writable = access.topic(AclOperation::Write, &name);
        let max_message_bytes = topic.map_or(broker.message_max_bytes, |t| {
            t.configs.max_message_bytes(&broker)
        });
        // Topic-level rules, looked up once for all its partitions.
        let rules = topic.map(|t| RecordRules::of(t, &broker));
        let codec = topic.and_then(|t| {
            let codec = t.configs.compression_codec(&broker)?;
            Some((codec, t.configs.compression_level(codec, &broker)))
        });
        let mut partitions = Vec::with_capacity(topic_data.partition_data.len());
        for (pi, partition_data) in topic_data.partition_data.iter_mut().enumerate() {
            let index = partition_data.index;
            let refuse = |error: ErrorCode, message: Option<String>| {
                PartitionAnswer::refused(index, error, message)
            };
            if !acks_valid {
                partitions.push(refuse(ErrorCode::InvalidRequiredAcks, None));
                continue;
            }
            if !writable {
                partitions.push(refuse(ErrorCode::TopicAuthorizationFailed, None));
                continue;
            }
            let (Some(topic), Some(rules)) = (topic, &rules) else {
                partitions.push(refuse(ErrorCode::UnknownTopicOrPartition, None));
                continue;
            };
            let Some(owner) = shard.owner_of(topic, index) else {
                partitions.push(refuse(ErrorCode::UnknownTopicOrPartition, None));
                continue;
            };
            if topic.is_internal() && !internal_topics_allowed {
                partitions.push(refuse(ErrorCode::InvalidTopicException, None));
                continue;
            }
            let checked = validate_records(partition_data.records.as_ref(), max_message_bytes)
                .map_err(Refusal::from)
                .and_then(|header| {
                    let records = partition_data.records.as_ref().expect("validated");
                    check_records(records, &header, rules, (&name, index), now).map(|()| header)
                });
            let stored = checked.and_then(|header| {
                recompress_for_topic(
                    &mut partition_data.records,
                    header,
                    codec,
                    max_message_bytes,
                )
                .map_err(Refusal::from)
            });
            match stored {
                Ok(header) => {
                    let position = flat.len();
                    flat.push((ti, pi));
                    validated.push((
                        owner,
                        position,
                        ProduceItem {
                            topic_partition: TopicPartition {
                                topic: name.clone(),
                                partition: index,
                            },
                            // Each partition's records are a buffer of
                            // their own (read so by the connection), so the
                            // partition's tail holds just these bytes; handed
                            // over, not shared, so the log can stamp the
                            // batch in place (`stamp_batch`).
                            batch: partition_data
                                .records
                                .take()
                                .expect("validated records are present"),
                            header,
                        },
                    ));
                    partitions.push(refuse(ErrorCode::RequestTimedOut, None));
                }
                Err(refusal) => {
                    tracing::debug!(topic = %name, partition = index, ?refusal, "produce refused");
                    partitions.push(PartitionAnswer {
                        record_errors: refusal.record_errors,
                        ..refuse(refusal.error, refusal.message)
                    });
                }
            }
        }
        results.push(partitions);
    }
    let transactional_id = request
        .transactional_id
        .as_ref()
        .map(|id| id.to_string())
        .filter(|id| !id.is_empty());
    let has_transactional = validated
        .iter()
        .any(|(_, _, item)| item.header.is_transactional());
    // Kafka authorizes transactional records by the request's transactional
    // id (WRITE), and refuses the whole request without one. (Batches that
    // passed validation were read by the same header parser, so
    // `has_transactional` implies `claims_transactional`.)
    let authorized_id = transactional_id
        .as_ref()
        .filter(|id| access.transactional_id(AclOperation::Write, id));
    let refused = match authorized_id {
        _ if !claims_transactional => Vec::new(),
        None => {
            for answer in results.iter_mut().flatten() {
                *answer = PartitionAnswer::refused(
                    answer.index,
                    ErrorCode::TransactionalIdAuthorizationFailed,
                    None,
                );
            }
            validated.clear();
            Vec::new()
        }
        // Kafka asks the coordinator to add the partitions from v12
        // (transactions V2) always, to verify them before only while
        // `transaction.partition.verification.enable` is on.
        Some(id)
            if has_transactional
                && (version >= TRANSACTIONS_V2_SINCE
                    || shard.transaction_partition_verification_enable()) =>
        {
            verify_transactional(shard, id, &validated, version).await
        }
        Some(_) => Vec::new(),
    };
    let mut groups: ShardGroups<ProduceItem> = ShardGroups::new();
    for (owner, position, item) in validated {
        match refused.iter().find(|(p, _)| *p == position) {
            Some((_, error)) => {
                let (ti, pi) = flat[position];
                results[ti][pi].result = ProduceResult::error(error.code());
                if *error == ErrorCode::InvalidTxnState {
                    results[ti][pi].message =
                        Some("Partition was not added to the transaction".into());
                }
            }
            None => groups.push(owner, position, item),
        }
    }
    // The ordered part: hand each shard its items now, in request order.
    let mut calls = Vec::new();
    for (target, (positions, items)) in groups.groups {
        let call = shard
            .call(target, ShardRequest::Produce { acks, items })
            .await;
        calls.push((positions, call));
    }
    let topic_names: Vec<_> = request
        .topic_data
        .iter()
        .map(|t| (t.name.clone(), t.topic_id))
        .collect();
    Box::pin(async move {
        let completions = calls.into_iter().map(|(positions, call)| async move {
            let reply = match call {
                Ok(completion) => completion.await.ok(),
                Err(_) => None,
            };
            (positions, reply)
        });
        for (positions, reply) in join_all(completions).await {
            match reply {
                Some(ShardReply::Produce(shard_results)) => {
                    for (position, result) in positions.into_iter().zip(shard_results) {
                        let (ti, pi) = flat[position];
                        results[ti][pi].result = result;
                    }
                }
                _ => {
                    for position in positions {
                        let (ti, pi) = flat[position];
                        results[ti][pi].result =
                            ProduceResult::error(ErrorCode::NotLeaderOrFollower.code());
                    }
                }
            }
        }
        if acks == 0 {
            // As Kafka: acks=0 gets no response, so an error on any
            // partition closes the connection, the producer's only sign
            // that something failed (it then refreshes its metadata).
            let failed = results
                .iter()
                .flatten()
                .any(|answer| answer.result.error_code != 0);
            return if failed {
                Response::Close("acks=0 produce failed on some partition")
            } else {
                Response::None
            };
        }
        let mut response = ProduceResponse::default();
        response.throttle_time_ms = i32::try_from(throttle_ms).unwrap_or(i32::MAX);
        response.responses = topic_names
            .into_iter()
            .zip(results)
            .map(|((name, topic_id), partitions)| {
                let mut t = TopicProduceResponse::default();
                t.name = name;
                t.topic_id = topic_id;
                t.partition_responses = partitions
                    .into_iter()
                    .map(|answer| {
                        let PartitionAnswer {
                            index,
                            result,
                            message,
                            record_errors,
                        } = answer;
                        let mut p = PartitionProduceResponse::default();
                        p.index = index;
                        p.error_code = result.error_code;
                        p.base_offset = result.base_offset;
                        p.log_append_time_ms = result.log_append_time_ms;
                        // The codec refuses fields the version lacks.
                        if version >= 5 {
                            p.log_start_offset = result.log_start_offset;
                        }
                        if version >= 8 {
                            p.error_message = message.as_deref().map(str_bytes);
                            p.record_errors = record_errors
                                .into_iter()
                                .map(|(batch_index, message)| {
                                    let mut e = BatchIndexAndErrorMessage::default();
                                    e.batch_index = batch_index;
                                    e.batch_index_error_message = Some(message.into());
                                    e
                                })
                                .collect();
                        }
                        p
                    })
                    .collect();
                t
            })
            .collect();
        encode_response(ApiKey::Produce, version, correlation_id, &response)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::tests::sample_batch;

    const NOW: i64 = 1_800_000_000_000;
    const HOUR: i64 = 3_600_000;

    fn rules(compacted: bool, log_append_time: bool, before_max_ms: i64) -> RecordRules {
        RecordRules {
            compacted,
            log_append_time,
            before_max_ms,
            after_max_ms: HOUR,
        }
    }

    fn checked(batch: Vec<u8>, rules: &RecordRules) -> Result<(), Refusal> {
        let batch = Bytes::from(batch);
        let header = validate_batch(&batch).expect("a valid batch");
        check_records(&batch, &header, rules, ("t", 3), NOW)
    }

    #[test]
    fn compacted_topics_refuse_keyless_records() {
        let keyless = || sample_batch(0, 2, NOW);
        assert!(checked(keyless(), &rules(false, false, i64::MAX)).is_ok());
        let refusal = checked(keyless(), &rules(true, false, i64::MAX)).unwrap_err();
        assert_eq!(refusal.error, ErrorCode::InvalidRecord);
        let why = "Compacted topic cannot accept message without key in topic partition t-3";
        assert_eq!(
            refusal.record_errors,
            [(0, why.to_string()), (1, why.to_string())]
        );
        let keyed = crate::protocol::record_batch::build_batch(
            &[crate::protocol::record_batch::NewRecord {
                key: Some(b"k"),
                value: Some(b"v"),
            }],
            NOW,
        );
        assert!(checked(keyed, &rules(true, false, i64::MAX)).is_ok());
    }

    #[test]
    fn timestamps_outside_the_window_are_refused_unless_the_broker_stamps_them() {
        let within = sample_batch(0, 2, NOW + HOUR);
        let ahead = || sample_batch(0, 2, NOW + HOUR + 1);
        assert!(checked(within, &rules(false, false, i64::MAX)).is_ok());
        let refusal = checked(ahead(), &rules(false, false, i64::MAX)).unwrap_err();
        assert_eq!(refusal.error, ErrorCode::InvalidTimestamp);
        assert_eq!(refusal.record_errors.len(), 2);
        assert_eq!(
            refusal.record_errors[1].1,
            format!(
                "Timestamp {} of message with offset 1 is out of range. The timestamp should be \
                 within [{}, {}]",
                NOW + HOUR + 1,
                NOW.wrapping_sub(i64::MAX),
                NOW + HOUR
            )
        );
        assert!(checked(ahead(), &rules(false, true, i64::MAX)).is_ok());
        // A bound below is checked record by record.
        assert!(checked(sample_batch(0, 1, NOW - 1000), &rules(false, false, 1000)).is_ok());
        let refusal = checked(sample_batch(0, 1, NOW - 1001), &rules(false, false, 1000));
        assert_eq!(refusal.unwrap_err().error, ErrorCode::InvalidTimestamp);
        // No timestamp is never out of range.
        assert!(checked(sample_batch(0, 1, -1), &rules(false, false, 0)).is_ok());
    }

    #[test]
    fn one_valid_batch_passes_and_two_do_not() {
        let one = Bytes::from(sample_batch(0, 3, 1));
        assert!(validate_records(Some(&one), 1_000_000).is_ok());
        let mut two = sample_batch(0, 3, 1);
        two.extend(sample_batch(3, 1, 1));
        let err = validate_records(Some(&Bytes::from(two)), 1_000_000).unwrap_err();
        assert_eq!(err.0, ErrorCode::InvalidRecord);
    }

    #[test]
    fn bad_crc_is_corrupt_message_and_size_is_checked() {
        let mut b = sample_batch(0, 3, 1);
        let last = b.len() - 1;
        b[last] ^= 0x40;
        assert_eq!(
            validate_records(Some(&Bytes::from(b)), 1_000_000)
                .unwrap_err()
                .0,
            ErrorCode::CorruptMessage
        );
        let ok = Bytes::from(sample_batch(0, 3, 1));
        assert_eq!(
            validate_records(Some(&ok), 10).unwrap_err().0,
            ErrorCode::MessageTooLarge
        );
        assert_eq!(
            validate_records(None, 10).unwrap_err().0,
            ErrorCode::InvalidRecord
        );
    }
}
