//! The group coordinator service of one shard: one [`GroupCoordinator`] per
//! `__consumer_offsets` partition this shard owns, loaded from that
//! partition's log at start-up, with the tasks that carry out its effects
//! (appending records in order, firing timers) and the one-shots of requests
//! waiting for a rebalance. Lives on the shard that owns the partitions.
//!
//! Connection shards reach it through [`call_group`] and friends, which pick
//! the owning shard from the group id exactly as Kafka picks the coordinator:
//! `abs(hash(group_id)) % offsets.topic.num.partitions`.

use std::rc::Rc;

use crate::cluster::controller::{ensure_offsets_topic, OFFSETS_TOPIC};
use crate::group::offsets_partition_for;
use crate::protocol::ErrorCode;
use crate::shard::messages::{GroupCall, GroupReply, ShardReply, ShardRequest};
use crate::shard::Shard;

/// The `__consumer_offsets` partition that coordinates `group_id`, creating
/// the topic on first use. None when the topic cannot be had.
pub async fn group_partition(shard: &Rc<Shard>, group_id: &str) -> Option<i32> {
    if let Err(e) = ensure_offsets_topic(shard).await {
        tracing::warn!(error = %e, "cannot create the offsets topic");
        return None;
    }
    let image = shard.image();
    let topic = image.topic(OFFSETS_TOPIC)?;
    Some(offsets_partition_for(
        group_id,
        topic.partition_shards.len() as i32,
    ))
}

/// Sends `call` to the coordinator of offsets partition `partition` and waits
/// for its answer.
pub async fn call_partition(shard: &Rc<Shard>, partition: i32, call: GroupCall) -> GroupReply {
    let request = ShardRequest::Group { partition, call };
    match shard.call_owner(OFFSETS_TOPIC, partition, request).await {
        Some(ShardReply::Group(reply)) => reply,
        _ => GroupReply::Unavailable(ErrorCode::CoordinatorNotAvailable),
    }
}

/// Sends `call` to the coordinator of `group_id`.
pub async fn call_group(shard: &Rc<Shard>, group_id: &str, call: GroupCall) -> GroupReply {
    match group_partition(shard, group_id).await {
        Some(partition) => call_partition(shard, partition, call).await,
        None => GroupReply::Unavailable(ErrorCode::CoordinatorNotAvailable),
    }
}

/// ListGroups on every shard, merged.
pub async fn list_all_groups(
    shard: &Rc<Shard>,
    request: crate::group::ListGroupsRequest,
) -> Result<crate::group::ListGroupsResponse, ErrorCode> {
    let mut groups = Vec::new();
    let mut completions = Vec::new();
    for target in 0..shard.nr_shards {
        let call = GroupCall::ListGroups(request.clone());
        match shard
            .call(
                target,
                ShardRequest::Group {
                    partition: -1,
                    call,
                },
            )
            .await
        {
            Ok(c) => completions.push(c),
            Err(_) => return Err(ErrorCode::CoordinatorNotAvailable),
        }
    }
    for completion in completions {
        match completion.await {
            Ok(ShardReply::Group(GroupReply::ListGroups(listed))) => groups.extend(listed.groups),
            Ok(ShardReply::Group(GroupReply::Unavailable(e))) => return Err(e),
            _ => return Err(ErrorCode::CoordinatorNotAvailable),
        }
    }
    Ok(crate::group::ListGroupsResponse { groups })
}

// ---------------------------------------------------------------------------
// The shard side: coordinators of the offsets partitions this shard owns.
// ---------------------------------------------------------------------------

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use futures::channel::oneshot;
use futures::future::{select, Either, LocalBoxFuture};
use futures::FutureExt;

use crate::cluster::image::MetadataImage;
use crate::config::BrokerConfig;
use crate::group::consumer::TopicsView;
use crate::group::{
    Append, Effects, GroupConfig, GroupCoordinator, Outcome, Reply, RequestId, Response,
    GROUP_MEMBERS_MAX,
};
use crate::partition::{now_ms, PartitionError};
use crate::protocol::record_batch::{
    build_producer_batch, validate_batch, BatchHeader, BatchIter, BatchProducer, NewRecord,
    TxnMarkerRecord,
};
use crate::shard::messages::TopicPartition;

/// Consumer groups (KIP-848) see the topics of the shard's metadata image.
impl TopicsView for crate::cluster::image::MetadataImage {
    fn version(&self) -> u64 {
        self.topics_version
    }

    fn topic(&self, name: &str) -> Option<(uuid::Uuid, i32)> {
        MetadataImage::topic(self, name).map(|t| (t.topic_id, t.partition_shards.len() as i32))
    }

    fn topic_name(&self, id: &uuid::Uuid) -> Option<String> {
        self.topic_names.get(id).cloned()
    }

    fn names(&self) -> Vec<String> {
        self.topics.keys().cloned().collect()
    }
}

/// The topics of an image as a caller sees them: regular expressions match
/// only the topics it may DESCRIBE (Kafka filters a regex's resolution by
/// the rights of the member whose heartbeat resolved it).
pub struct DescribableTopics<'a> {
    /// The shard's image.
    pub image: &'a MetadataImage,
    /// Whether the caller may DESCRIBE a topic.
    pub describable: &'a dyn Fn(&str) -> bool,
}

impl TopicsView for DescribableTopics<'_> {
    fn version(&self) -> u64 {
        self.image.version()
    }

    fn topic(&self, name: &str) -> Option<(uuid::Uuid, i32)> {
        TopicsView::topic(self.image, name)
    }

    fn topic_name(&self, id: &uuid::Uuid) -> Option<String> {
        self.image.topic_name(id)
    }

    fn names(&self) -> Vec<String> {
        let mut names = self.image.names();
        names.retain(|name| (self.describable)(name));
        names
    }
}

/// Bytes read per step while loading an offsets partition.
const LOAD_READ_BYTES: usize = 1024 * 1024;
/// Longest a coordinator's timer task sleeps without looking again.
const TIMER_IDLE_MS: i64 = 60_000;

/// The coordinator of one offsets partition and what it waits on.
struct Slot {
    partition: i32,
    loaded: bool,
    coordinator: GroupCoordinator,
    pending: HashMap<u64, oneshot::Sender<Response>>,
    next_request_id: u64,
    appends: VecDeque<Append>,
    append_wake: Option<oneshot::Sender<()>>,
    timer_wake: Option<oneshot::Sender<()>>,
    timer_deadline: Option<i64>,
    stopped: bool,
}

type SlotRef = Rc<RefCell<Slot>>;

/// Every group coordinator of one shard.
#[derive(Default)]
pub struct GroupShard {
    slots: RefCell<HashMap<i32, SlotRef>>,
}

/// Builds the coordinator settings from the broker's.
pub fn group_config(config: &BrokerConfig) -> GroupConfig {
    let groups = &config.groups;
    GroupConfig {
        session_timeout_ms_min: groups.group_min_session_timeout_ms,
        session_timeout_ms_max: groups.group_max_session_timeout_ms,
        initial_rebalance_delay_ms: groups
            .group_initial_rebalance_delay_ms
            .clamp(0, i64::from(i32::MAX)) as i32,
        group_members_max: usize::try_from(groups.group_max_size)
            .unwrap_or(GROUP_MEMBERS_MAX)
            .min(GROUP_MEMBERS_MAX),
        offset_metadata_max_bytes: usize::try_from(groups.offset_metadata_max_bytes).unwrap_or(0),
        offsets_retention_ms: groups.offsets_retention_minutes.saturating_mul(60_000),
        consumer_session_timeout_ms: groups.group_consumer_session_timeout_ms,
        consumer_heartbeat_interval_ms: groups.group_consumer_heartbeat_interval_ms,
        consumer_group_members_max: usize::try_from(groups.group_consumer_max_size)
            .unwrap_or(GROUP_MEMBERS_MAX)
            .clamp(1, GROUP_MEMBERS_MAX),
        migration_policy: crate::group::MigrationPolicy::parse(
            &groups.group_consumer_migration_policy,
        )
        .unwrap_or_default(),
        // In the configured order (the first is the default); the command
        // line names only built-in ones.
        consumer_assignors: groups
            .group_consumer_assignors
            .split(',')
            .filter_map(|name| {
                crate::group::assignor::ASSIGNORS
                    .iter()
                    .copied()
                    .find(|a| *a == name)
            })
            .collect(),
        ..GroupConfig::default()
    }
}

/// Hands pending answers to their requests, queues appends for the appender
/// and tells the timer task when its deadline moved earlier.
fn absorb(slot: &mut Slot, effects: Effects) {
    for completion in effects.completions {
        if let Some(tx) = slot.pending.remove(&completion.request_id.0) {
            // The requester may be gone (connection closed): nothing to do.
            let _ = tx.send(completion.response);
        }
    }
    if !effects.appends.is_empty() {
        slot.appends.extend(effects.appends);
        if let Some(wake) = slot.append_wake.take() {
            let _ = wake.send(());
        }
    }
    let next = slot.coordinator.next_deadline();
    let earlier = match (next, slot.timer_deadline) {
        (Some(n), Some(scheduled)) => n < scheduled,
        (Some(_), None) => true,
        _ => false,
    };
    if earlier {
        if let Some(wake) = slot.timer_wake.take() {
            let _ = wake.send(());
        }
    }
}

fn reply_of(response: Response) -> GroupReply {
    match response {
        Response::JoinGroup(r) => GroupReply::JoinGroup(r),
        Response::SyncGroup(r) => GroupReply::SyncGroup(r),
        Response::OffsetCommit(r) => GroupReply::OffsetCommit(r),
        Response::DeleteGroups(r) => GroupReply::DeleteGroups(r),
        Response::OffsetDelete(r) => GroupReply::OffsetDelete(r),
        Response::TxnOffsetCommit(r) => GroupReply::TxnOffsetCommit(r),
        Response::ConsumerGroupHeartbeat(r) => GroupReply::ConsumerGroupHeartbeat(r),
        Response::OffsetFetch(r) => GroupReply::OffsetFetch(r),
    }
}

fn ready(reply: GroupReply) -> LocalBoxFuture<'static, ShardReply> {
    async move { ShardReply::Group(reply) }.boxed_local()
}

/// Turns a coordinator outcome into the request's completion.
fn finish<T: 'static>(
    slot: &mut Slot,
    id: RequestId,
    outcome: Outcome<T>,
    wrap: fn(T) -> GroupReply,
) -> LocalBoxFuture<'static, ShardReply> {
    match outcome.reply {
        Reply::Ready(value) => {
            absorb(slot, outcome.effects);
            ready(wrap(value))
        }
        Reply::Pending => {
            let (tx, rx) = oneshot::channel();
            slot.pending.insert(id.0, tx);
            absorb(slot, outcome.effects);
            async move {
                match rx.await {
                    Ok(response) => ShardReply::Group(reply_of(response)),
                    // Dropped without an answer: the coordinator went away.
                    Err(_) => ShardReply::Group(GroupReply::Unavailable(ErrorCode::NotCoordinator)),
                }
            }
            .boxed_local()
        }
    }
}

fn offsets_topic_partition(partition: i32) -> TopicPartition {
    TopicPartition {
        topic: OFFSETS_TOPIC.to_string(),
        partition,
    }
}

impl GroupShard {
    /// Starts the coordinator of offsets partition `partition` (owned by
    /// this shard): loads it from the log, then serves.
    pub fn start(&self, shard: &Rc<Shard>, partition: i32) {
        if self.slots.borrow().contains_key(&partition) {
            return;
        }
        let seed = uuid::Uuid::new_v4().as_u64_pair().0;
        let slot = Rc::new(RefCell::new(Slot {
            partition,
            loaded: false,
            coordinator: GroupCoordinator::new(group_config(&shard.config), seed, now_ms()),
            pending: HashMap::new(),
            next_request_id: 0,
            appends: VecDeque::new(),
            append_wake: None,
            timer_wake: None,
            timer_deadline: None,
            stopped: false,
        }));
        self.slots.borrow_mut().insert(partition, slot.clone());
        let shard = shard.clone();
        glommio::spawn_local(async move {
            match load(&shard, &slot).await {
                Ok(records) => {
                    let mut s = slot.borrow_mut();
                    s.coordinator
                        .set_group_configs(shard.image().group_configs.clone());
                    let effects = s.coordinator.loaded(now_ms());
                    s.loaded = true;
                    absorb(&mut s, effects);
                    tracing::info!(shard = shard.id, partition, records, "group coordinator loaded");
                }
                Err(e) => {
                    tracing::error!(shard = shard.id, partition, error = %e, "cannot load group coordinator; it stays unavailable");
                    return;
                }
            }
            glommio::spawn_local(append_loop(shard.clone(), slot.clone())).detach();
            glommio::spawn_local(timer_loop(slot.clone())).detach();
        })
        .detach();
    }

    /// Runs one group call on this shard.
    pub fn submit(
        &self,
        partition: i32,
        call: GroupCall,
        topics: &dyn TopicsView,
        group_configs: &Rc<crate::cluster::image::GroupConfigMap>,
    ) -> LocalBoxFuture<'static, ShardReply> {
        if let GroupCall::ListGroups(request) = &call {
            let mut groups = Vec::new();
            for slot in self.slots.borrow().values() {
                let s = slot.borrow();
                if !s.loaded {
                    return ready(GroupReply::Unavailable(
                        ErrorCode::CoordinatorLoadInProgress,
                    ));
                }
                groups.extend(s.coordinator.list_groups(request).groups);
            }
            return ready(GroupReply::ListGroups(crate::group::ListGroupsResponse {
                groups,
            }));
        }
        let Some(slot) = self.slots.borrow().get(&partition).cloned() else {
            // Callers route by the same image this shard applies, so a
            // missing coordinator is one whose partition is still being
            // created or opened here.
            return ready(GroupReply::Unavailable(
                ErrorCode::CoordinatorLoadInProgress,
            ));
        };
        let mut s = slot.borrow_mut();
        if s.stopped {
            // Stopped: nothing would answer a request that waits.
            return ready(GroupReply::Unavailable(ErrorCode::NotCoordinator));
        }
        if !s.loaded {
            return ready(GroupReply::Unavailable(
                ErrorCode::CoordinatorLoadInProgress,
            ));
        }
        s.coordinator.set_group_configs(group_configs.clone());
        let now = now_ms();
        let id = RequestId(s.next_request_id);
        s.next_request_id += 1;
        match call {
            GroupCall::JoinGroup(r) => {
                let outcome = s.coordinator.join_group(now, id, r, topics);
                finish(&mut s, id, outcome, GroupReply::JoinGroup)
            }
            GroupCall::SyncGroup(r) => {
                let outcome = s.coordinator.sync_group(now, id, r, topics);
                finish(&mut s, id, outcome, GroupReply::SyncGroup)
            }
            GroupCall::Heartbeat(r) => {
                let response = s.coordinator.heartbeat(now, r);
                absorb(&mut s, Effects::default());
                ready(GroupReply::Heartbeat(response))
            }
            GroupCall::LeaveGroup(r) => {
                let outcome = s.coordinator.leave_group(now, r);
                finish(&mut s, id, outcome, GroupReply::LeaveGroup)
            }
            GroupCall::OffsetCommit(r) => {
                let outcome = s.coordinator.offset_commit(now, id, r);
                finish(&mut s, id, outcome, GroupReply::OffsetCommit)
            }
            GroupCall::OffsetFetch(r) => {
                let outcome = s.coordinator.offset_fetch_call(id, &r);
                finish(&mut s, id, outcome, GroupReply::OffsetFetch)
            }
            GroupCall::DescribeGroups {
                group_ids,
                api_version,
            } => ready(GroupReply::DescribeGroups(
                s.coordinator.describe_groups(&group_ids, api_version),
            )),
            GroupCall::DeleteGroups { group_ids } => {
                let outcome = s.coordinator.delete_groups(now, id, &group_ids);
                finish(&mut s, id, outcome, GroupReply::DeleteGroups)
            }
            GroupCall::OffsetDelete(r) => {
                let outcome = s.coordinator.offset_delete(now, id, &r);
                finish(&mut s, id, outcome, GroupReply::OffsetDelete)
            }
            GroupCall::TxnOffsetCommit(r) => {
                let outcome = s.coordinator.txn_offset_commit(now, id, r);
                finish(&mut s, id, outcome, GroupReply::TxnOffsetCommit)
            }
            GroupCall::ConsumerGroupHeartbeat { request: r, .. } => {
                let outcome = s
                    .coordinator
                    .consumer_group_heartbeat_call(now, id, *r, topics);
                finish(&mut s, id, outcome, GroupReply::ConsumerGroupHeartbeat)
            }
            GroupCall::ConsumerGroupDescribe { group_ids } => {
                ready(GroupReply::ConsumerGroupDescribe(
                    s.coordinator.consumer_group_describe(&group_ids, topics),
                ))
            }
            GroupCall::ListGroups(_) => unreachable!("handled above"),
        }
    }

    /// A COMMIT (`commit`) or ABORT marker of `producer_id` is durable in
    /// offsets partition `partition` of this shard: the producer's pending
    /// transactional offsets in every group of that partition are
    /// materialized or dropped ([`GroupCoordinator::on_txn_marker`]).
    /// Call it only after the marker's fdatasync succeeded.
    ///
    /// A coordinator still loading ignores the call: its load reads the log
    /// up to the high watermark, which already covers the durable marker,
    /// and applies the marker there in log order. Applying a marker twice is
    /// a no-op the second time.
    pub fn on_txn_marker(&self, partition: i32, producer_id: i64, commit: bool) {
        let Some(slot) = self.slots.borrow().get(&partition).cloned() else {
            tracing::warn!(
                partition,
                producer_id,
                "transaction marker for an offsets partition without a coordinator here"
            );
            return;
        };
        let mut s = slot.borrow_mut();
        if !s.loaded || s.stopped {
            return;
        }
        s.coordinator.on_txn_marker(now_ms(), producer_id, commit);
    }

    /// Stops every coordinator: pending requests get NOT_COORDINATOR.
    pub fn stop_all(&self) {
        for slot in self.slots.borrow().values() {
            let mut s = slot.borrow_mut();
            s.stopped = true;
            let effects = s.coordinator.unload();
            // Appends handed out earlier are not acknowledged after unload.
            s.appends.clear();
            absorb(
                &mut s,
                Effects {
                    appends: Vec::new(),
                    completions: effects.completions,
                },
            );
            for (_, tx) in s.pending.drain() {
                drop(tx);
            }
            if let Some(w) = s.append_wake.take() {
                let _ = w.send(());
            }
            if let Some(w) = s.timer_wake.take() {
                let _ = w.send(());
            }
        }
    }
}

/// Replays the whole offsets partition into the coordinator. Returns the
/// number of records replayed.
async fn load(shard: &Rc<Shard>, slot: &SlotRef) -> anyhow::Result<usize> {
    let partition_index = slot.borrow().partition;
    let Some(partition) = shard.partition(&offsets_topic_partition(partition_index)) else {
        anyhow::bail!("offsets partition {partition_index} is not on this shard");
    };
    let mut offset = partition.log_start_offset();
    let mut replayed = 0usize;
    while offset < partition.high_watermark() {
        let read = partition.read(offset, LOAD_READ_BYTES, true).await?;
        if read.batches.is_empty() {
            break;
        }
        let chunk = read.into_contiguous();
        let mut iter = BatchIter::new(&chunk, false);
        let mut next_offset = offset;
        let mut batches = Vec::new();
        for (position, header) in iter.by_ref() {
            next_offset = header.last_offset() + 1;
            batches.push((
                chunk.slice(position..position + header.total_bytes()),
                header,
            ));
        }
        if let Some(e) = iter.stopped_by {
            anyhow::bail!("offsets partition {partition_index} has a bad batch near offset {next_offset}: {e}");
        }
        {
            let now = now_ms();
            let mut s = slot.borrow_mut();
            for (batch, header) in batches {
                replayed +=
                    replay_offsets_batch(&mut s.coordinator, now, partition_index, &header, batch)?;
            }
        }
        if next_offset <= offset {
            break;
        }
        offset = next_offset;
        glommio::yield_if_needed().await;
    }
    Ok(replayed)
}

/// Replays one batch of an offsets partition into `coordinator`, in log
/// order: a control batch's transaction marker commits or drops its
/// producer's pending offsets; a transactional batch (TxnOffsetCommit's)
/// adds pending offsets of its producer; any other batch is replayed as
/// committed state. Returns the number of data records replayed.
///
/// # Errors
/// The batch's records cannot be decoded.
fn replay_offsets_batch(
    coordinator: &mut GroupCoordinator,
    now: i64,
    partition_index: i32,
    header: &BatchHeader,
    mut batch: Bytes,
) -> anyhow::Result<usize> {
    let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut batch).map_err(|e| {
        anyhow::anyhow!(
            "cannot decode offsets batch at offset {}: {e}",
            header.base_offset
        )
    })?;
    if header.is_control() {
        for record in set.records {
            let (Some(key), Some(value)) = (&record.key, &record.value) else {
                continue;
            };
            match TxnMarkerRecord::decode(key, value) {
                Some(marker) => coordinator.on_txn_marker(now, header.producer_id, marker.commit),
                None => tracing::warn!(
                    partition = partition_index,
                    offset = record.offset,
                    "skipping an unknown control record"
                ),
            }
        }
        return Ok(0);
    }
    let producer_id = header
        .is_transactional()
        .then_some(header.producer_id)
        .filter(|&id| id >= 0);
    let mut replayed = 0;
    for record in set.records {
        let Some(key) = record.key else { continue };
        let outcome = match producer_id {
            Some(producer_id) => coordinator.replay_transactional_bytes(
                now,
                producer_id,
                &key,
                record.value.as_deref(),
            ),
            None => coordinator.replay_bytes(now, &key, record.value.as_deref()),
        };
        if let Err(e) = outcome {
            tracing::warn!(partition = partition_index, offset = record.offset, error = %e, "skipping an offsets record");
        }
        replayed += 1;
    }
    Ok(replayed)
}

/// Writes the coordinator's appends in order, one fdatasync for everything
/// queued at once, and reports each back in order.
async fn append_loop(shard: Rc<Shard>, slot: SlotRef) {
    loop {
        let batch: Vec<Append> = {
            let mut s = slot.borrow_mut();
            if s.stopped {
                return;
            }
            s.appends.drain(..).collect()
        };
        if batch.is_empty() {
            let (tx, rx) = oneshot::channel();
            slot.borrow_mut().append_wake = Some(tx);
            let _ = rx.await;
            continue;
        }
        let partition_index = slot.borrow().partition;
        let results = write_appends(&shard, partition_index, &batch).await;
        let mut s = slot.borrow_mut();
        if s.stopped {
            return;
        }
        for (append, outcome) in batch.into_iter().zip(results) {
            let effects = s.coordinator.append_completed(now_ms(), append.id, outcome);
            absorb(&mut s, effects);
        }
    }
}

/// Writes `appends` in order and syncs once; one outcome per append, in
/// order. A transactional append refused for its producer's epoch fails
/// alone; a log failure fails it and everything after it.
async fn write_appends(
    shard: &Rc<Shard>,
    partition_index: i32,
    appends: &[Append],
) -> Vec<Result<(), ErrorCode>> {
    let Some(partition) = shard.partition(&offsets_topic_partition(partition_index)) else {
        return vec![Err(ErrorCode::NotLeaderOrFollower); appends.len()];
    };
    let now = now_ms();
    let mut results: Vec<Result<(), ErrorCode>> = Vec::with_capacity(appends.len());
    for append in appends {
        if append.records.is_empty() {
            results.push(Ok(()));
            continue;
        }
        let encoded: Vec<(Bytes, Option<Bytes>)> = append
            .records
            .iter()
            .map(|r| (r.key_bytes(), r.value_bytes()))
            .collect();
        let records: Vec<NewRecord<'_>> = encoded
            .iter()
            .map(|(k, v)| NewRecord {
                key: Some(&k[..]),
                value: v.as_deref(),
            })
            .collect();
        // TxnOffsetCommit's offsets go out as one transactional batch of
        // the producer (no sequence: the coordinator writes it), which
        // opens the producer's transaction on this partition.
        let producer = append.producer.map(|p| BatchProducer {
            producer_id: p.producer_id,
            producer_epoch: p.producer_epoch,
            base_sequence: -1,
            transactional: true,
        });
        let batch = Bytes::from(build_producer_batch(&records, now, producer));
        let Ok(header) = validate_batch(&batch) else {
            results.push(Err(ErrorCode::CorruptMessage));
            continue;
        };
        let appended = match producer {
            Some(_) => partition
                .append_from_coordinator(batch, &header)
                .await
                .map(|_| ()),
            None => partition.append(batch, &header).await.map(|_| ()),
        };
        match appended {
            Ok(()) => results.push(Ok(())),
            Err(PartitionError::Producer(e)) => {
                tracing::info!(partition = partition_index, error = %e, "transactional offsets refused");
                results.push(Err(e.error_code()));
            }
            Err(e) => {
                tracing::error!(partition = partition_index, error = %e, "cannot append to the offsets topic");
                results.resize(appends.len(), Err(ErrorCode::KafkaStorageError));
                return results;
            }
        }
    }
    if let Err(e) = partition.flush(true).await {
        tracing::error!(partition = partition_index, error = %e, "cannot sync the offsets topic");
        for result in results.iter_mut() {
            *result = Err(ErrorCode::KafkaStorageError);
        }
    }
    results
}

/// Fires the coordinator's timers (session expiry, rebalance and join
/// timeouts, offset expiry) when they fall due.
async fn timer_loop(slot: SlotRef) {
    loop {
        let (wait_ms, rx) = {
            let mut s = slot.borrow_mut();
            if s.stopped {
                return;
            }
            let now = now_ms();
            let deadline = s.coordinator.next_deadline();
            s.timer_deadline = deadline;
            let wait = deadline.map_or(TIMER_IDLE_MS, |d| (d - now).clamp(0, TIMER_IDLE_MS));
            let (tx, rx) = oneshot::channel();
            s.timer_wake = Some(tx);
            (wait, rx)
        };
        if wait_ms > 0 {
            let sleep = Box::pin(glommio::timer::sleep(Duration::from_millis(wait_ms as u64)));
            match select(sleep, rx).await {
                Either::Left(_) | Either::Right(_) => {}
            }
        }
        let mut s = slot.borrow_mut();
        if s.stopped {
            return;
        }
        let effects = s.coordinator.on_tick(now_ms());
        s.timer_deadline = None;
        absorb(&mut s, effects);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::{
        CoordinatorRecord, OffsetCommitKey, OffsetCommitValue, OffsetFetchGroup,
        OffsetFetchRequest, OffsetFetchTopic,
    };
    use crate::protocol::record_batch::build_control_batch;

    fn offset_batch(partition: i32, offset: i64, producer: Option<BatchProducer>) -> Bytes {
        let record = CoordinatorRecord::OffsetCommit {
            key: OffsetCommitKey {
                group: "g".into(),
                topic: "t".into(),
                partition,
            },
            value: Some(OffsetCommitValue {
                offset,
                leader_epoch: -1,
                metadata: String::new(),
                commit_timestamp_ms: 1,
                expire_timestamp_ms: -1,
            }),
        };
        let (key, value) = (record.key_bytes(), record.value_bytes());
        let records = [NewRecord {
            key: Some(&key[..]),
            value: value.as_deref(),
        }];
        Bytes::from(build_producer_batch(&records, 1, producer))
    }

    fn replay(coordinator: &mut GroupCoordinator, batch: Bytes) {
        let header = validate_batch(&batch).expect("valid batch");
        replay_offsets_batch(coordinator, 0, 0, &header, batch).expect("replays");
    }

    fn fetch(coordinator: &GroupCoordinator, partition: i32) -> (i64, Option<ErrorCode>) {
        let response = coordinator.offset_fetch(&OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: "g".into(),
                member: None,
                topics: Some(vec![OffsetFetchTopic {
                    name: "t".into(),
                    partition_indexes: vec![partition],
                }]),
            }],
            require_stable: true,
        });
        let p = &response.groups[0].topics[0].partitions[0];
        (p.committed_offset, p.error)
    }

    /// Loading decodes the batches exactly as written: a transactional
    /// batch of a producer (the TxnOffsetCommit append) gives pending
    /// offsets, a control batch's COMMIT or ABORT marker (as
    /// `Partition::write_txn_marker` writes it) ends them, and a plain batch
    /// is committed at once.
    #[test]
    fn load_replays_transactional_and_control_batches_as_written() {
        let mut coordinator = GroupCoordinator::new(GroupConfig::default(), 1, 0);
        let producer = |producer_id| {
            Some(BatchProducer {
                producer_id,
                producer_epoch: 3,
                base_sequence: -1,
                transactional: true,
            })
        };
        let marker = |producer_id, commit| {
            Bytes::from(build_control_batch(
                producer_id,
                3,
                TxnMarkerRecord {
                    commit,
                    coordinator_epoch: 9,
                },
                1,
            ))
        };
        replay(&mut coordinator, offset_batch(0, 5, None));
        replay(&mut coordinator, offset_batch(0, 10, producer(70)));
        replay(&mut coordinator, offset_batch(1, 20, producer(71)));
        replay(&mut coordinator, offset_batch(2, 30, producer(72)));
        assert_eq!(
            fetch(&coordinator, 0),
            (-1, Some(ErrorCode::UnstableOffsetCommit))
        );

        replay(&mut coordinator, marker(70, true));
        replay(&mut coordinator, marker(71, false));
        assert_eq!(fetch(&coordinator, 0), (10, None));
        assert_eq!(fetch(&coordinator, 1), (-1, None));
        assert_eq!(
            fetch(&coordinator, 2),
            (-1, Some(ErrorCode::UnstableOffsetCommit))
        );
        assert_eq!(coordinator.pending_txn_offset(72, "g", "t", 2), Some(30));
    }
}
