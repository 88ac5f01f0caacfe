//! The transaction coordinator service of one shard: one coordinator per
//! `__transaction_state` partition this shard owns, loaded from that
//! partition's log before it serves, plus the tasks that finish prepared
//! transactions (markers, then COMPLETE), abort transactions past their
//! timeout and remove expired transactional ids. Lives on the shard that
//! owns the partitions; connection shards reach it through [`call_txn`].
//!
//! Every change is written to the log and fdatasync'd before the metadata in
//! memory changes and before the client is answered, so what a client was
//! told survives kill -9. A transaction whose PREPARE record is durable is
//! finished after a restart: load resumes its markers.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::{join_all, LocalBoxFuture};
use futures::FutureExt;

use super::coordinator::{
    completed, decide_add_partitions, decide_end_txn, decide_init, decide_verify, is_expired,
    next_transaction_producer, timed_out_abort, with_new_producer_id, AddedBy, EndDecision,
    InitDecision, TxnMetadata,
};
use super::records::{decode_key, decode_value, encode_key, encode_value};
use super::{
    txn_partition_for, DescribedTxn, ListFilter, ListedTxn, TxnCall, TxnReply, TxnState,
    TXN_STATE_TOPIC,
};
use crate::cluster::controller::ensure_txn_state_topic;
use crate::partition::now_ms;
use crate::protocol::record_batch::{build_batch, validate_batch, BatchIter, NewRecord};
use crate::protocol::ErrorCode;
use crate::shard::messages::{ShardReply, ShardRequest, TopicPartition, TxnMarkerWrite};
use crate::shard::Shard;

/// Bytes read per step while loading a transaction state partition.
const LOAD_READ_BYTES: usize = 1024 * 1024;
/// Pause before markers or a COMPLETE record that failed are tried again
/// (Kafka's `transaction.state.log` retry backoff is 100 ms too).
const RETRY_BACKOFF_MS: u64 = 100;
/// Epoch of this node's coordinators. With one node a coordinator never
/// moves, so no other coordinator can hold a newer epoch.
const COORDINATOR_EPOCH: i32 = 0;

// ---------------------------------------------------------------------------
// The connection side: routing to the owning shard.
// ---------------------------------------------------------------------------

/// The `__transaction_state` partition that coordinates `transactional_id`,
/// creating the topic on first use. None when the topic cannot be had.
pub async fn txn_partition(shard: &Rc<Shard>, transactional_id: &str) -> Option<i32> {
    if let Err(e) = ensure_txn_state_topic(shard).await {
        tracing::warn!(error = %e, "cannot create the transaction state topic");
        return None;
    }
    let image = shard.image();
    let topic = image.topic(TXN_STATE_TOPIC)?;
    Some(txn_partition_for(
        transactional_id,
        topic.partition_shards.len() as i32,
    ))
}

/// Sends `call` to the coordinator of transaction state partition
/// `partition` and waits for its answer.
pub async fn call_partition(shard: &Rc<Shard>, partition: i32, call: TxnCall) -> TxnReply {
    let request = ShardRequest::Txn { partition, call };
    match shard.call_owner(TXN_STATE_TOPIC, partition, request).await {
        Some(ShardReply::Txn(reply)) => reply,
        _ => TxnReply::Unavailable(ErrorCode::CoordinatorNotAvailable),
    }
}

/// Sends `call` to the coordinator of `transactional_id`.
pub async fn call_txn(shard: &Rc<Shard>, transactional_id: &str, call: TxnCall) -> TxnReply {
    match txn_partition(shard, transactional_id).await {
        Some(partition) => call_partition(shard, partition, call).await,
        None => TxnReply::Unavailable(ErrorCode::CoordinatorNotAvailable),
    }
}

/// Asks the coordinator of `transactional_id` whether the producer's
/// transaction is open and holds each of `partitions` (KIP-890 part 1's
/// verification): exactly one answer per partition, in order. A
/// coordinator that cannot be reached answers its error for all.
pub async fn verify(
    shard: &Rc<Shard>,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    partitions: Vec<TopicPartition>,
) -> Vec<Result<(), ErrorCode>> {
    let count = partitions.len();
    let call = TxnCall::Verify {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
        partitions,
    };
    match call_txn(shard, transactional_id, call).await {
        TxnReply::Verify(answers) if answers.len() == count => answers,
        other => vec![Err(other.unexpected()); count],
    }
}

/// Transactions V2's implicit add (Produce v12+, TxnOffsetCommit v5): the
/// coordinator of `transactional_id` adds `partitions` to the producer's
/// transaction, starting one when none is open (Kafka's AddPartitionsToTxn
/// v5 with `VerifyOnly` false, which its partition leaders send).
///
/// # Errors
/// The coordinator's code, for every partition.
pub async fn add_implicitly(
    shard: &Rc<Shard>,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    partitions: Vec<TopicPartition>,
) -> Result<(), ErrorCode> {
    let call = TxnCall::AddPartitions {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
        partitions,
        implicit: true,
    };
    call_txn(shard, transactional_id, call).await.into_added()
}

/// ListTransactions on every shard, merged. Before the topic exists there
/// is nothing to list.
///
/// # Errors
/// The code when a coordinator is loading or a shard cannot be reached.
pub async fn list_all(shard: &Rc<Shard>, filter: ListFilter) -> Result<Vec<ListedTxn>, ErrorCode> {
    if shard.image().topic(TXN_STATE_TOPIC).is_none() {
        return Ok(Vec::new());
    }
    let mut completions = Vec::with_capacity(shard.nr_shards);
    for target in 0..shard.nr_shards {
        let request = ShardRequest::Txn {
            partition: -1,
            call: TxnCall::List(filter.clone()),
        };
        completions.push(
            shard
                .call(target, request)
                .await
                .map_err(|_| ErrorCode::CoordinatorNotAvailable)?,
        );
    }
    let mut listed = Vec::new();
    for completion in completions {
        match completion.await {
            Ok(ShardReply::Txn(TxnReply::List(some))) => listed.extend(some),
            Ok(ShardReply::Txn(TxnReply::Unavailable(e))) => return Err(e),
            _ => return Err(ErrorCode::CoordinatorNotAvailable),
        }
    }
    Ok(listed)
}

// ---------------------------------------------------------------------------
// The shard side.
// ---------------------------------------------------------------------------

struct Slot {
    partition: i32,
    loaded: bool,
    stopped: bool,
    txns: HashMap<String, TxnMetadata>,
    /// New ids whose first producer id is being taken and written.
    reserving: HashSet<String>,
    /// Ids whose change in flight is an AddPartitionsToTxn (see
    /// [`decide_verify`]).
    adding: HashSet<String>,
}

type SlotRef = Rc<RefCell<Slot>>;

/// The transaction coordinators of one shard.
#[derive(Default)]
pub struct TxnShard {
    slots: RefCell<HashMap<i32, SlotRef>>,
    cleanup_started: Cell<bool>,
    stopped: Rc<Cell<bool>>,
}

fn ready(reply: TxnReply) -> LocalBoxFuture<'static, ShardReply> {
    async move { ShardReply::Txn(reply) }.boxed_local()
}

fn state_topic_partition(partition: i32) -> TopicPartition {
    TopicPartition {
        topic: TXN_STATE_TOPIC.to_string(),
        partition,
    }
}

impl TxnShard {
    /// Starts the coordinator of transaction state partition `partition`
    /// (owned by this shard): loads it, finishes the transactions it finds
    /// prepared, then serves. The first start also starts the shard's
    /// cleanup task.
    pub fn start(&self, shard: &Rc<Shard>, partition: i32) {
        if self.slots.borrow().contains_key(&partition) {
            return;
        }
        let slot = Rc::new(RefCell::new(Slot {
            partition,
            loaded: false,
            stopped: false,
            txns: HashMap::new(),
            reserving: HashSet::new(),
            adding: HashSet::new(),
        }));
        self.slots.borrow_mut().insert(partition, slot.clone());
        let task_shard = shard.clone();
        glommio::spawn_local(async move {
            match load(&task_shard, &slot).await {
                Ok(records) => {
                    let prepared: Vec<String> = {
                        let mut s = slot.borrow_mut();
                        s.loaded = true;
                        let ids: Vec<String> = s
                            .txns
                            .iter()
                            .filter(|(_, m)| m.is_preparing())
                            .map(|(id, _)| id.clone())
                            .collect();
                        for id in &ids {
                            if let Some(m) = s.txns.get_mut(id) {
                                m.pending = true;
                            }
                        }
                        ids
                    };
                    tracing::info!(shard = task_shard.id, partition, records, resumed = prepared.len(), "transaction coordinator loaded");
                    for id in prepared {
                        glommio::spawn_local(finish(task_shard.clone(), slot.clone(), id)).detach();
                    }
                }
                Err(e) => {
                    tracing::error!(shard = task_shard.id, partition, error = %e, "cannot load transaction coordinator; it stays unavailable");
                }
            }
        })
        .detach();
        if !self.cleanup_started.replace(true) {
            glommio::spawn_local(cleanup_loop(shard.clone(), self.stopped.clone())).detach();
        }
    }

    /// Runs one transaction call on this shard.
    pub fn submit(
        &self,
        shard: Rc<Shard>,
        partition: i32,
        call: TxnCall,
    ) -> LocalBoxFuture<'static, ShardReply> {
        if let TxnCall::List(filter) = &call {
            let mut listed = Vec::new();
            for slot in self.slots.borrow().values() {
                let s = slot.borrow();
                if !s.loaded {
                    return ready(TxnReply::Unavailable(ErrorCode::CoordinatorLoadInProgress));
                }
                listed.extend(list(&s, filter, now_ms()));
            }
            return ready(TxnReply::List(listed));
        }
        let Some(slot) = self.slots.borrow().get(&partition).cloned() else {
            // Callers route by the image this shard applies, so a missing
            // coordinator is one still being created or opened here.
            return ready(TxnReply::Unavailable(ErrorCode::CoordinatorLoadInProgress));
        };
        if !slot.borrow().loaded {
            return ready(TxnReply::Unavailable(ErrorCode::CoordinatorLoadInProgress));
        }
        match call {
            TxnCall::Describe { transactional_ids } => {
                let s = slot.borrow();
                ready(TxnReply::Describe(
                    transactional_ids
                        .iter()
                        .map(|id| describe(&s, id))
                        .collect(),
                ))
            }
            TxnCall::Verify {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
            } => {
                let s = slot.borrow();
                ready(TxnReply::Verify(decide_verify(
                    s.txns.get(&transactional_id),
                    producer_id,
                    producer_epoch,
                    &partitions,
                    s.adding.contains(&transactional_id),
                )))
            }
            TxnCall::InitProducerId {
                transactional_id,
                timeout_ms,
                producer_id,
                producer_epoch,
            } => async move {
                ShardReply::Txn(TxnReply::InitProducerId(
                    init_producer_id(
                        &shard,
                        &slot,
                        transactional_id,
                        timeout_ms,
                        producer_id,
                        producer_epoch,
                    )
                    .await,
                ))
            }
            .boxed_local(),
            TxnCall::AddPartitions {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                implicit,
            } => async move {
                ShardReply::Txn(TxnReply::AddPartitions(
                    add_partitions(
                        &shard,
                        &slot,
                        transactional_id,
                        (producer_id, producer_epoch),
                        partitions,
                        implicit,
                    )
                    .await,
                ))
            }
            .boxed_local(),
            TxnCall::EndTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                commit,
                v2,
            } => async move {
                ShardReply::Txn(TxnReply::EndTxn(
                    end_txn(
                        &shard,
                        &slot,
                        transactional_id,
                        (producer_id, producer_epoch),
                        commit,
                        v2,
                    )
                    .await,
                ))
            }
            .boxed_local(),
            TxnCall::List(_) => unreachable!("handled above"),
        }
    }

    /// Stops every coordinator (shutdown): tasks end at their next step.
    pub fn stop_all(&self) {
        self.stopped.set(true);
        for slot in self.slots.borrow().values() {
            slot.borrow_mut().stopped = true;
        }
    }
}

fn describe(s: &Slot, id: &str) -> DescribedTxn {
    match s.txns.get(id) {
        Some(m) => DescribedTxn {
            transactional_id: id.to_string(),
            error_code: 0,
            state: m.state,
            timeout_ms: m.timeout_ms,
            start_ms: m.start_ms,
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            partitions: m.partitions.iter().cloned().collect(),
        },
        None => DescribedTxn {
            transactional_id: id.to_string(),
            error_code: ErrorCode::TransactionalIdNotFound.code(),
            state: TxnState::Dead,
            timeout_ms: 0,
            start_ms: -1,
            producer_id: -1,
            producer_epoch: -1,
            partitions: Vec::new(),
        },
    }
}

fn list(s: &Slot, filter: &ListFilter, now: i64) -> Vec<ListedTxn> {
    s.txns
        .iter()
        .filter(|(_, m)| filter.states.is_empty() || filter.states.contains(&m.state))
        .filter(|(_, m)| {
            filter.producer_ids.is_empty() || filter.producer_ids.contains(&m.producer_id)
        })
        .filter(|(_, m)| {
            // KIP-994: only transactions running longer than the filter.
            filter.min_duration_ms < 0
                || (m.state == TxnState::Ongoing
                    && m.start_ms >= 0
                    && now.saturating_sub(m.start_ms) > filter.min_duration_ms)
        })
        .map(|(id, m)| ListedTxn {
            transactional_id: id.clone(),
            producer_id: m.producer_id,
            state: m.state,
        })
        .collect()
}

/// The finalized `transaction.version`.
fn transaction_version(shard: &Shard) -> i16 {
    crate::cluster::features::transaction_version(&shard.image().features)
}

/// Writes one record of `transactional_id` (a tombstone for `None`) to the
/// coordinator's partition and waits until it is durable.
async fn append_record(
    shard: &Rc<Shard>,
    partition_index: i32,
    transactional_id: &str,
    metadata: Option<&TxnMetadata>,
) -> Result<(), ErrorCode> {
    let Some(partition) = shard.partition(&state_topic_partition(partition_index)) else {
        return Err(ErrorCode::NotCoordinator);
    };
    let key = encode_key(transactional_id);
    let flexible = transaction_version(shard) >= 1;
    let value = metadata.map(|m| encode_value(&m.to_log_value(), flexible));
    let record = NewRecord {
        key: Some(&key),
        value: value.as_deref(),
    };
    let batch = Bytes::from(build_batch(&[record], now_ms()));
    let header = validate_batch(&batch).map_err(|_| ErrorCode::CorruptMessage)?;
    let outcome = async {
        partition.append(batch, &header).await?;
        partition.flush(true).await
    }
    .await;
    outcome.map(|_| ()).map_err(|e| {
        tracing::error!(partition = partition_index, error = %e, "cannot write the transaction log");
        ErrorCode::CoordinatorNotAvailable
    })
}

/// Marks `id` busy; false when it already is.
fn mark_pending(slot: &SlotRef, id: &str) -> bool {
    let mut s = slot.borrow_mut();
    match s.txns.get_mut(id) {
        Some(m) if m.pending => false,
        Some(m) => {
            m.pending = true;
            true
        }
        None => s.reserving.insert(id.to_string()),
    }
}

/// Ends a busy spell of `id` without a change.
fn clear_pending(slot: &SlotRef, id: &str) {
    let mut s = slot.borrow_mut();
    s.reserving.remove(id);
    if let Some(m) = s.txns.get_mut(id) {
        m.pending = false;
    }
}

/// Persists `target` for `id` (already marked pending) and installs it,
/// still pending when `keep_pending`. On failure the id is freed unchanged.
async fn persist(
    shard: &Rc<Shard>,
    slot: &SlotRef,
    id: &str,
    mut target: TxnMetadata,
    keep_pending: bool,
) -> Result<(), ErrorCode> {
    let (partition, stopped) = {
        let s = slot.borrow();
        (s.partition, s.stopped)
    };
    if stopped {
        clear_pending(slot, id);
        return Err(ErrorCode::NotCoordinator);
    }
    target.pending = false;
    if let Err(e) = append_record(shard, partition, id, Some(&target)).await {
        clear_pending(slot, id);
        return Err(e);
    }
    target.pending = keep_pending;
    let mut s = slot.borrow_mut();
    s.reserving.remove(id);
    s.txns.insert(id.to_string(), target);
    Ok(())
}

async fn init_producer_id(
    shard: &Rc<Shard>,
    slot: &SlotRef,
    id: String,
    timeout_ms: i32,
    producer_id: i64,
    producer_epoch: i16,
) -> Result<(i64, i16), ErrorCode> {
    if slot.borrow().reserving.contains(&id) {
        return Err(ErrorCode::ConcurrentTransactions);
    }
    let decision = decide_init(
        slot.borrow().txns.get(&id),
        producer_id,
        producer_epoch,
        (timeout_ms, now_ms()),
        transaction_version(shard),
    );
    match decision {
        InitDecision::Reply(answer) => answer,
        InitDecision::NeedNewProducerId => {
            if !mark_pending(slot, &id) {
                return Err(ErrorCode::ConcurrentTransactions);
            }
            let new_id = match shard.next_producer_id().await {
                Ok(new_id) => new_id,
                Err(e) => {
                    tracing::warn!(error = %e, "no producer id for a transactional id");
                    clear_pending(slot, &id);
                    return Err(ErrorCode::CoordinatorNotAvailable);
                }
            };
            let target = with_new_producer_id(
                slot.borrow().txns.get(&id),
                new_id,
                (timeout_ms, now_ms()),
                producer_epoch >= 0,
            );
            let answer = (target.producer_id, target.producer_epoch);
            persist(shard, slot, &id, target, false).await?;
            Ok(answer)
        }
        InitDecision::Write(target) => {
            if !mark_pending(slot, &id) {
                return Err(ErrorCode::ConcurrentTransactions);
            }
            let answer = (target.producer_id, target.producer_epoch);
            persist(shard, slot, &id, target, false).await?;
            Ok(answer)
        }
        InitDecision::AbortOngoing(target) => {
            if !mark_pending(slot, &id) {
                return Err(ErrorCode::ConcurrentTransactions);
            }
            tracing::info!(transactional_id = %id, epoch = target.producer_epoch, "fencing the previous producer and aborting its open transaction");
            persist(shard, slot, &id, target, true).await?;
            glommio::spawn_local(finish(shard.clone(), slot.clone(), id)).detach();
            // Kafka's answer while the abort completes; the client retries.
            Err(ErrorCode::ConcurrentTransactions)
        }
    }
}

async fn add_partitions(
    shard: &Rc<Shard>,
    slot: &SlotRef,
    id: String,
    (producer_id, producer_epoch): (i64, i16),
    partitions: Vec<TopicPartition>,
    implicit: bool,
) -> Result<(), ErrorCode> {
    let decision = {
        let s = slot.borrow();
        let by = if implicit {
            AddedBy::Implicit {
                only_adding_in_flight: s.adding.contains(&id),
            }
        } else {
            AddedBy::Client
        };
        decide_add_partitions(
            s.txns.get(&id),
            producer_id,
            producer_epoch,
            &partitions,
            now_ms(),
            by,
        )?
    };
    let Some(target) = decision else {
        return Ok(());
    };
    if !mark_pending(slot, &id) {
        return Err(ErrorCode::ConcurrentTransactions);
    }
    slot.borrow_mut().adding.insert(id.clone());
    let persisted = persist(shard, slot, &id, target, false).await;
    slot.borrow_mut().adding.remove(&id);
    persisted
}

async fn end_txn(
    shard: &Rc<Shard>,
    slot: &SlotRef,
    id: String,
    (producer_id, producer_epoch): (i64, i16),
    commit: bool,
    v2: bool,
) -> Result<(i64, i16), ErrorCode> {
    let decision = decide_end_txn(
        slot.borrow().txns.get(&id),
        producer_id,
        producer_epoch,
        commit,
        now_ms(),
        v2,
    )?;
    let (mut prepared, new_producer_id) = match decision {
        EndDecision::Done(producer_id, producer_epoch) => return Ok((producer_id, producer_epoch)),
        EndDecision::Prepare {
            prepared,
            new_producer_id,
        } => (prepared, new_producer_id),
    };
    if !mark_pending(slot, &id) {
        return Err(ErrorCode::ConcurrentTransactions);
    }
    if new_producer_id {
        match shard.next_producer_id().await {
            Ok(next) => prepared.next_producer_id = next,
            Err(e) => {
                tracing::warn!(error = %e, "no producer id for a producer whose epochs ran out");
                clear_pending(slot, &id);
                return Err(ErrorCode::CoordinatorNotAvailable);
            }
        }
    }
    let answer = next_transaction_producer(&prepared);
    persist(shard, slot, &id, prepared, true).await?;
    // Kafka answers once PREPARE is durable; the markers follow.
    glommio::spawn_local(finish(shard.clone(), slot.clone(), id)).detach();
    Ok(answer)
}

/// Second phase of a prepared transaction of `id` (pending): markers to
/// every partition, then the COMPLETE record. Retries until done or the
/// coordinator stops (a restart resumes from the PREPARE record).
async fn finish(shard: Rc<Shard>, slot: SlotRef, id: String) {
    let Some(prepared) = slot.borrow().txns.get(&id).cloned() else {
        return;
    };
    if !prepared.is_preparing() {
        clear_pending(&slot, &id);
        return;
    }
    let commit = prepared.state == TxnState::PrepareCommit;
    if !write_markers(&shard, &slot, &prepared, commit).await {
        return;
    }
    loop {
        let (partition, stopped) = {
            let s = slot.borrow();
            (s.partition, s.stopped)
        };
        if stopped {
            return;
        }
        let target = completed(&prepared, now_ms());
        match append_record(&shard, partition, &id, Some(&target)).await {
            Ok(()) => {
                tracing::debug!(transactional_id = %id, commit, "transaction completed");
                slot.borrow_mut().txns.insert(id, target);
                return;
            }
            Err(_) => glommio::timer::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await,
        }
    }
}

/// Writes the transaction's markers to all its partitions through the
/// owning shards, retrying failed partitions. A partition whose topic is
/// gone, or that has seen a newer epoch of the producer, needs no marker.
/// False when the coordinator stopped first.
async fn write_markers(shard: &Rc<Shard>, slot: &SlotRef, txn: &TxnMetadata, commit: bool) -> bool {
    let mut remaining: Vec<TopicPartition> = txn.partitions.iter().cloned().collect();
    loop {
        if slot.borrow().stopped {
            return false;
        }
        let image = shard.image();
        let mut by_owner: BTreeMap<usize, Vec<TopicPartition>> = BTreeMap::new();
        for tp in remaining.drain(..) {
            let owner = image
                .topic(&tp.topic)
                .and_then(|topic| shard.owner_of(topic, tp.partition));
            match owner {
                Some(owner) => by_owner.entry(owner).or_default().push(tp),
                None => {
                    tracing::info!(topic = %tp.topic, partition = tp.partition, "no marker for a partition that no longer exists");
                }
            }
        }
        let mut calls = Vec::with_capacity(by_owner.len());
        for (owner, partitions) in by_owner {
            let request = ShardRequest::WriteTxnMarkers(vec![TxnMarkerWrite {
                producer_id: txn.producer_id,
                producer_epoch: txn.producer_epoch,
                coordinator_epoch: COORDINATOR_EPOCH,
                commit,
                partitions: partitions.clone(),
            }]);
            let completion = shard.call(owner, request).await;
            calls.push((partitions, completion));
        }
        let mut waits = Vec::with_capacity(calls.len());
        let mut lists = Vec::with_capacity(calls.len());
        for (partitions, completion) in calls {
            match completion {
                Ok(c) => {
                    waits.push(c);
                    lists.push(partitions);
                }
                Err(_) => remaining.extend(partitions),
            }
        }
        for (partitions, outcome) in lists.into_iter().zip(join_all(waits).await) {
            let codes = match outcome {
                Ok(ShardReply::WriteTxnMarkers(mut codes)) if codes.len() == 1 => codes.remove(0),
                _ => {
                    remaining.extend(partitions);
                    continue;
                }
            };
            for (tp, code) in partitions.into_iter().zip(codes) {
                if code == 0 {
                    continue;
                }
                if code == ErrorCode::InvalidProducerEpoch.code() {
                    tracing::warn!(topic = %tp.topic, partition = tp.partition, producer_id = txn.producer_id, "partition has a newer producer epoch; its transaction was already ended");
                    continue;
                }
                let topic_gone = shard.image().topic(&tp.topic).is_none();
                if code == ErrorCode::UnknownTopicOrPartition.code() && topic_gone {
                    continue;
                }
                remaining.push(tp);
            }
        }
        if remaining.is_empty() {
            return true;
        }
        glommio::timer::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await;
    }
}

/// Replays the whole partition into the slot: the last record of each id
/// wins, a tombstone removes it. Returns the number of records read.
async fn load(shard: &Rc<Shard>, slot: &SlotRef) -> anyhow::Result<usize> {
    let partition_index = slot.borrow().partition;
    let Some(partition) = shard.partition(&state_topic_partition(partition_index)) else {
        anyhow::bail!("transaction state partition {partition_index} is not on this shard");
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
            if !header.is_control() {
                batches.push(chunk.slice(position..position + header.total_bytes()));
            }
        }
        if let Some(e) = iter.stopped_by {
            anyhow::bail!("transaction state partition {partition_index} has a bad batch near offset {next_offset}: {e}");
        }
        {
            let mut s = slot.borrow_mut();
            for mut batch in batches {
                let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut batch)
                    .map_err(|e| anyhow::anyhow!("cannot decode a transaction log batch: {e}"))?;
                for record in set.records {
                    replayed += 1;
                    let Some(key) = record.key else { continue };
                    let id = match decode_key(&key) {
                        Ok(id) => id,
                        Err(e) => {
                            tracing::warn!(partition = partition_index, offset = record.offset, error = %e, "skipping a transaction log record");
                            continue;
                        }
                    };
                    match record.value.as_deref().map(decode_value) {
                        None => {
                            s.txns.remove(&id);
                        }
                        Some(Ok(value)) => {
                            s.txns.insert(id, TxnMetadata::from_log_value(value));
                        }
                        Some(Err(e)) => {
                            tracing::warn!(partition = partition_index, offset = record.offset, error = %e, "skipping a transaction log record");
                        }
                    }
                }
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

/// Every `transaction.abort.timed.out.transaction.cleanup.interval.ms`,
/// aborts open transactions past their timeout (fencing their producer);
/// every `transaction.remove.expired.transaction.cleanup.interval.ms`,
/// removes ids idle for `transactional.id.expiration.ms` with a tombstone.
async fn cleanup_loop(shard: Rc<Shard>, stopped: Rc<Cell<bool>>) {
    let settings = shard.config.txns.clone();
    let abort_every = settings
        .transaction_abort_timed_out_transaction_cleanup_interval_ms
        .max(1) as u64;
    let mut last_expiry = now_ms();
    loop {
        glommio::timer::sleep(Duration::from_millis(abort_every)).await;
        if stopped.get() {
            return;
        }
        let slots: Vec<SlotRef> = shard.txns.slots.borrow().values().cloned().collect();
        let now = now_ms();
        let version = transaction_version(&shard);
        for slot in &slots {
            let timed_out: Vec<(String, TxnMetadata)> = {
                let s = slot.borrow();
                if !s.loaded || s.stopped {
                    continue;
                }
                s.txns
                    .iter()
                    .filter_map(|(id, m)| timed_out_abort(m, now, version).map(|t| (id.clone(), t)))
                    .collect()
            };
            for (id, target) in timed_out {
                if !mark_pending(slot, &id) {
                    continue;
                }
                tracing::info!(transactional_id = %id, producer_id = target.producer_id, "aborting a transaction past its timeout");
                if persist(&shard, slot, &id, target, true).await.is_ok() {
                    glommio::spawn_local(finish(shard.clone(), slot.clone(), id)).detach();
                }
            }
        }
        if now - last_expiry >= settings.transaction_remove_expired_transaction_cleanup_interval_ms
        {
            last_expiry = now;
            for slot in &slots {
                remove_expired(&shard, slot, settings.transactional_id_expiration_ms).await;
            }
        }
    }
}

async fn remove_expired(shard: &Rc<Shard>, slot: &SlotRef, expiration_ms: i64) {
    let now = now_ms();
    let (partition, expired): (i32, Vec<String>) = {
        let s = slot.borrow();
        if !s.loaded || s.stopped {
            return;
        }
        (
            s.partition,
            s.txns
                .iter()
                .filter(|(_, m)| is_expired(m, now, expiration_ms))
                .map(|(id, _)| id.clone())
                .collect(),
        )
    };
    for id in expired {
        if !mark_pending(slot, &id) {
            continue;
        }
        match append_record(shard, partition, &id, None).await {
            Ok(()) => {
                tracing::info!(transactional_id = %id, "transactional id expired");
                slot.borrow_mut().txns.remove(&id);
            }
            Err(_) => clear_pending(slot, &id),
        }
    }
}
