//! A shard: one core's share of the broker. It owns the partitions placed on
//! it, its copy of the metadata image, and its end of the router. Requests
//! for it arrive either from its own connections (a direct call) or from
//! other shards through the router; both go through [`Shard::submit`].
//!
//! Every value here lives on this shard's core only.

pub mod messages;
pub mod router;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{join_all, select_all, LocalBoxFuture};
use futures::{FutureExt, StreamExt, TryStreamExt};

use crate::cluster::controller::OFFSETS_TOPIC;
use crate::cluster::{MetadataImage, MetadataRecord, TopicImage};
use crate::config::limits::FETCH_WAITERS_PER_SHARD_MAX;
use crate::config::{BrokerConfig, FlushPolicy};
use crate::group::service::GroupShard;
use crate::partition::{Partition, PartitionError, PartitionSettings};
use crate::protocol::ErrorCode;
use crate::storage::{CompactionConfig, CompactionOutcome, Log, LogConfig, StorageError};
use crate::txn::service::TxnShard;
use crate::txn::TXN_STATE_TOPIC;

/// Producer ids a shard takes from the controller at a time (Kafka's block size).
const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;
/// The least key-map memory a compaction gets (a share of Kafka's least,
/// more than 1 MiB a cleaner thread, is less only with more shards than
/// threads, 256 of them).
const MIN_DEDUPE_BUFFER_BYTES: usize = 4096;
/// The least a compaction reads of a segment at a time, however small its
/// share of `log.cleaner.io.buffer.size` (Kafka grows its buffers to fit a
/// batch; here a batch larger than a read is read whole).
const MIN_COMPACTION_READ_BYTES: usize = 4096;
use messages::{
    ControllerReply, ControllerRequest, FetchItem, FetchResult, ListOffsetsItem, ListOffsetsResult,
    ProduceItem, ProduceResult, ShardReply, ShardRequest, TopicPartition, TxnMarkerWrite,
};
use router::{Router, RouterError};

/// Partition logs a shard creates or opens at once.
const PARTITION_OPEN_CONCURRENCY: usize = 32;
/// How often a shard looks for partitions whose log rolled a segment since
/// their last producer snapshot (Kafka takes one at every roll).
const PRODUCER_SNAPSHOT_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// One core's broker state.
pub struct Shard {
    /// This shard's id (0-based).
    pub id: usize,
    /// Number of shards on this node.
    pub nr_shards: usize,
    /// Broker settings.
    pub config: Arc<BrokerConfig>,
    /// This shard's own copy of the authorizer settings, so a request's
    /// `Access` shares nothing with other cores.
    pub authorizer: Rc<crate::security::acl::AuthorizerConfig>,
    image: RefCell<Rc<MetadataImage>>,
    partitions: RefCell<HashMap<TopicPartition, Rc<Partition>>>,
    /// This shard's end of the mesh.
    pub router: Router,
    /// Serialises controller work (shard 0 only).
    pub controller_lock: glommio::sync::Semaphore,
    fetch_waiters: Cell<usize>,
    /// Task queue the fetches this shard serves run in (None: the caller's).
    fetch_queue: Cell<Option<glommio::TaskQueueHandle>>,
    closing: Cell<bool>,
    /// Deleted logs' directories waiting for removal, with when each was
    /// queued, oldest first ([`Shard::deleted_logs_loop`]).
    deleted_logs: RefCell<VecDeque<(std::time::Instant, PathBuf)>>,
    /// Producer ids this shard may hand out: [next, end).
    producer_ids: Cell<(i64, i64)>,
    /// Group coordinators of the offsets partitions this shard owns.
    pub groups: GroupShard,
    /// Transaction coordinators of the transaction state partitions this
    /// shard owns.
    pub txns: TxnShard,
    /// The client quota sensors this shard owns.
    pub quota_sensors: crate::quota::sensors::SensorTable,
    /// The broker's connection counts (`server::admission`; the owner
    /// shard only).
    pub connection_counts: crate::server::admission::ConnectionCounts,
    /// This shard's share of `log.cleaner.io.max.bytes.per.second`, which
    /// the compactions under way read as they go.
    pub cleaner_io_rate: Rc<Cell<f64>>,
    /// The throttle to `cleaner_io_rate` that this shard's compactions
    /// share.
    cleaner_throttle: Rc<crate::storage::Throttle>,
    /// The TLS each listener serves new connections with, by listener
    /// index (`server::tls::reload`).
    pub listener_tls: RefCell<Vec<Option<crate::security::listener_tls::ListenerTls>>>,
    /// The `connection_creation_rate` quotas of IP entities, by address
    /// (`server::hosts`; the owner shard of `server::admission` only).
    pub ip_rates: crate::server::hosts::IpRates,
    /// [`Shard::broker_defaults`] and the metadata offset it was made at.
    defaults_cache: RefCell<Option<(u64, Rc<crate::config::BrokerDefaults>)>>,
    /// The controller mutation quotas' token buckets (shard 0 only).
    pub mutation_buckets: crate::quota::sensors::MutationBuckets,
}

/// What one partition of a fetch may read.
#[derive(Debug, Clone, Copy)]
enum FetchBudget {
    /// Nothing (no data, or the response's budget is used up): only the
    /// partition's offsets and error are answered.
    None,
    /// Up to this many bytes; with `true`, at least one whole batch.
    Bytes(usize, bool),
}

/// Kafka error code as i16.
pub fn code(error: ErrorCode) -> i16 {
    error.code()
}

/// Directory of a partition's log.
pub fn partition_dir(config: &BrokerConfig, topic: &str, partition: i32) -> PathBuf {
    config.data_dir.join(format!("{topic}-{partition}"))
}

/// The log settings of a topic's partitions: topic overrides over broker values.
pub fn log_config_for(
    topic: &TopicImage,
    config: &BrokerConfig,
    broker: &crate::config::BrokerDefaults,
) -> LogConfig {
    LogConfig {
        segment_bytes: topic.configs.segment_bytes(broker),
        segment_ms: topic.configs.max_segment_ms(broker),
        segment_jitter_ms: topic.configs.segment_jitter_ms(broker),
        index_interval_bytes: topic.configs.index_interval_bytes(broker),
        // Kafka accepts 4 bytes and up; each index needs room for two
        // entries here (a smaller index would only roll at every batch).
        segment_index_bytes: topic
            .configs
            .segment_index_bytes(broker)
            .max(2 * crate::storage::TIME_INDEX_ENTRY_BYTES as u32),
        write_buffer_bytes: config.write_buffer_bytes,
        write_buffer_bytes_max: config.write_buffer_bytes_max,
        write_behind: config.write_behind,
        write_delay_us: config.write_delay_us,
        writes_during_sync: config.writes_during_sync,
        preallocate_bytes: config.preallocate_bytes,
        preallocate: topic.configs.preallocate(broker),
        cache_bytes: config.partition_cache_bytes,
        pending_bytes_max: config.partition_pending_bytes_max,
    }
}

fn partition_settings_for(
    topic: &TopicImage,
    broker: &crate::config::BrokerDefaults,
) -> PartitionSettings {
    PartitionSettings {
        log_append_time: topic.configs.message_timestamp_type_is_log_append(broker),
        // Validated: flush.messages >= 1, flush.ms >= 0.
        flush_messages: topic.configs.flush_messages(broker).max(1) as u64,
        flush_ms: topic.configs.flush_ms(broker).max(0) as u64,
    }
}

impl Shard {
    /// A shard with an empty image; call [`Shard::load`] before serving.
    pub fn new(id: usize, nr_shards: usize, config: Arc<BrokerConfig>, router: Router) -> Rc<Self> {
        let cleaner_io_rate = Rc::new(Cell::new(f64::MAX));
        Rc::new(Shard {
            id,
            nr_shards,
            authorizer: Rc::new(config.authorizer.clone()),
            quota_sensors: crate::quota::sensors::SensorTable::new(config.quota_window),
            connection_counts: crate::server::admission::ConnectionCounts::new(config.quota_window),
            cleaner_io_rate: cleaner_io_rate.clone(),
            cleaner_throttle: Rc::new(crate::storage::Throttle::new(cleaner_io_rate)),
            listener_tls: RefCell::new(config.listener_tls.clone()),
            ip_rates: crate::server::hosts::IpRates::default(),
            config,
            image: RefCell::new(Rc::new(MetadataImage::default())),
            partitions: RefCell::new(HashMap::new()),
            router,
            controller_lock: glommio::sync::Semaphore::new(1),
            fetch_waiters: Cell::new(0),
            fetch_queue: Cell::new(None),
            closing: Cell::new(false),
            deleted_logs: RefCell::new(VecDeque::new()),
            producer_ids: Cell::new((0, 0)),
            groups: GroupShard::default(),
            txns: TxnShard::default(),
            defaults_cache: RefCell::new(None),
            mutation_buckets: Default::default(),
        })
    }

    /// This shard's current metadata image (a cheap snapshot).
    pub fn image(&self) -> Rc<MetadataImage> {
        self.image.borrow().clone()
    }

    /// The shard that owns a partition, from the image.
    pub fn owner_of(&self, topic: &TopicImage, partition: i32) -> Option<usize> {
        usize::try_from(partition)
            .ok()
            .and_then(|p| topic.partition_shards.get(p))
            .map(|&s| usize::from(s) % self.nr_shards)
    }

    /// Runs the fetches this shard serves in `queue` from now on.
    pub fn set_fetch_queue(&self, queue: glommio::TaskQueueHandle) {
        self.fetch_queue.set(Some(queue));
    }

    /// Number of partitions this shard owns.
    pub fn partition_count(&self) -> usize {
        self.partitions.borrow().len()
    }

    /// Partitions of this shard whose compaction failed, and the bytes a
    /// compaction of them would read (Kafka's `uncleanable-partitions-count`
    /// and `uncleanable-bytes`).
    pub fn uncleanable_partitions(&self) -> (usize, u64) {
        self.partitions
            .borrow()
            .values()
            .filter(|p| p.is_uncleanable())
            .fold((0, 0), |(count, bytes), p| {
                (count + 1, bytes + p.dirty_closed_bytes())
            })
    }

    /// A partition this shard owns.
    pub fn partition(&self, topic_partition: &TopicPartition) -> Option<Rc<Partition>> {
        self.partitions.borrow().get(topic_partition).cloned()
    }

    /// Applies the metadata log at start-up and opens the partitions this
    /// shard owns, running recovery on each.
    ///
    /// # Errors
    /// A log that cannot be opened.
    pub async fn load(
        self: &Rc<Self>,
        records: &[MetadataRecord],
        clean_shutdown: bool,
    ) -> anyhow::Result<()> {
        *self.image.borrow_mut() = Rc::new(MetadataImage::from_records(records));
        // Listeners serve the stores their dynamic configs name.
        crate::server::tls::reload(self, crate::server::tls::Reload::Start).await;
        // Host names in IP limits are resolved as Kafka resolves them at
        // start-up, on the shard that admits connections: the IP quotas in
        // the order the log holds them.
        if self.id == crate::server::admission::OWNER_SHARD {
            self.ip_rates.apply(records).await;
        }
        crate::server::hosts::refresh_overrides(self).await;
        let image = self.image();
        // Before any log file is opened on this thread: glommio probes
        // polled reads on the first O_DIRECT file it opens per device, and an
        // empty file makes that probe answer wrongly.
        crate::storage::ensure_iopoll_probed(&self.config.data_dir).await?;
        let mine: Vec<(&TopicImage, i32)> = image
            .topics
            .values()
            .flat_map(|topic| {
                (0..topic.partition_shards.len() as i32).map(move |partition| (&**topic, partition))
            })
            .filter(|(topic, partition)| self.owner_of(topic, *partition) == Some(self.id))
            .collect();
        let opened = mine.len();
        // Several at once: opening is mostly waiting for the disk (fdatasync
        // of new files, recovery reads), and the waits overlap.
        futures::stream::iter(mine)
            .map(|(topic, partition)| self.open_partition(topic, partition, clean_shutdown))
            .buffer_unordered(PARTITION_OPEN_CONCURRENCY)
            .try_collect::<()>()
            .await?;
        tracing::info!(
            shard = self.id,
            partitions = opened,
            clean_shutdown,
            "partitions loaded"
        );
        self.start_group_coordinators();
        self.start_txn_coordinators();
        Ok(())
    }

    async fn open_partition(
        &self,
        topic: &TopicImage,
        partition: i32,
        clean_shutdown: bool,
    ) -> anyhow::Result<()> {
        let dir = partition_dir(&self.config, &topic.name, partition);
        let broker = self.broker_defaults();
        let log_config = log_config_for(topic, &self.config, &broker);
        let settings = partition_settings_for(topic, &broker);
        let opened = if dir.exists() {
            let opened = Partition::open(
                topic.name.clone(),
                partition,
                topic.topic_id,
                topic.leader_epoch(partition),
                &dir,
                log_config.clone(),
                clean_shutdown,
                settings,
            )
            .await;
            match opened {
                // A directory of another topic of this name (one deleted
                // while its directory could not be renamed), or of none, is
                // set aside as Kafka sets aside a stray log, never served as
                // this topic's; the partition starts empty.
                Err(PartitionError::Storage(StorageError::ForeignLogDir { dir, reason })) => {
                    crate::storage::set_stray_log_dir_aside(dir, reason).await?;
                    None
                }
                opened => Some(opened?),
            }
        } else {
            None
        };
        let p = if let Some(p) = opened {
            p
        } else {
            let log = Log::create(&dir, log_config, topic.topic_id).await?;
            let p = Partition::new(
                topic.name.clone(),
                partition,
                topic.topic_id,
                topic.leader_epoch(partition),
                log,
                settings,
            );
            p.load_producer_state().await?;
            p
        };
        self.partitions.borrow_mut().insert(
            TopicPartition {
                topic: topic.name.clone(),
                partition,
            },
            p,
        );
        Ok(())
    }

    /// Applies new metadata records: updates the image, creates the logs of
    /// new partitions this shard owns and deletes those of deleted topics.
    async fn apply(self: &Rc<Self>, records: Vec<MetadataRecord>) {
        let image_only = |record: &MetadataRecord| {
            matches!(
                record,
                MetadataRecord::AccessControlEntry { .. }
                    | MetadataRecord::RemoveAccessControlEntry { .. }
                    | MetadataRecord::ClientQuota { .. }
                    | MetadataRecord::GroupConfigs { .. }
                    | MetadataRecord::ClientMetricsConfigs { .. }
                    | MetadataRecord::FeatureLevel { .. }
                    | MetadataRecord::LeadershipResumed
                    | MetadataRecord::DelegationToken { .. }
                    | MetadataRecord::RemoveDelegationToken { .. }
            )
        };
        // IP quotas (naming hosts resolved) are applied first, in order,
        // on the shard that admits connections.
        if self.id == crate::server::admission::OWNER_SHARD {
            self.ip_rates.apply(&records).await;
        }
        let mut records = records.into_iter().peekable();
        while let Some(record) = records.next() {
            let before = self.image();
            let mut image = (*before).clone();
            image.apply(&record);
            // ACL, quota and group config records change nothing but the
            // image: a run of them goes into one copy, so a request of n
            // ACLs copies the ACL set once, not n times.
            if image_only(&record) {
                while let Some(next) = records.next_if(|r| image_only(r)) {
                    image.apply(&next);
                }
            }
            *self.image.borrow_mut() = Rc::new(image);
            match &record {
                MetadataRecord::CreateTopic { name, .. } => {
                    let image = self.image();
                    let Some(topic) = image.topic(name) else {
                        continue;
                    };
                    let mine = (0..topic.partition_shards.len() as i32)
                        .filter(|partition| self.owner_of(topic, *partition) == Some(self.id));
                    futures::stream::iter(mine)
                        .for_each_concurrent(PARTITION_OPEN_CONCURRENCY, |partition| async move {
                            if let Err(e) = self.open_partition(topic, partition, true).await {
                                tracing::error!(topic = %name, partition, error = %e, "cannot create partition log");
                            }
                        })
                        .await;
                    if name == OFFSETS_TOPIC {
                        self.start_group_coordinators();
                    }
                    if name == TXN_STATE_TOPIC {
                        self.start_txn_coordinators();
                    }
                }
                MetadataRecord::CreatePartitions {
                    name,
                    topic_id,
                    partition_shards,
                } => {
                    let image = self.image();
                    let Some(topic) = image.topic(name).filter(|t| t.topic_id == *topic_id) else {
                        continue;
                    };
                    let all = topic.partition_shards.len() as i32;
                    let first = all - partition_shards.len() as i32;
                    let mine = (first..all)
                        .filter(|partition| self.owner_of(topic, *partition) == Some(self.id));
                    futures::stream::iter(mine)
                        .for_each_concurrent(PARTITION_OPEN_CONCURRENCY, |partition| async move {
                            if let Err(e) = self.open_partition(topic, partition, true).await {
                                tracing::error!(topic = %name, partition, error = %e, "cannot create partition log");
                            }
                        })
                        .await;
                }
                MetadataRecord::AlterTopicConfigs { name, topic_id, .. } => {
                    self.reconfigure_partitions(|tp, p| {
                        &tp.topic == name && p.topic_id == *topic_id
                    })
                    .await;
                }
                MetadataRecord::DeleteTopic { name, topic_id } => {
                    let doomed: Vec<Rc<Partition>> = {
                        let mut partitions = self.partitions.borrow_mut();
                        let keys: Vec<TopicPartition> = partitions
                            .iter()
                            .filter(|(k, p)| &k.topic == name && p.topic_id == *topic_id)
                            .map(|(k, _)| k.clone())
                            .collect();
                        keys.iter().filter_map(|k| partitions.remove(k)).collect()
                    };
                    for partition in doomed {
                        match partition.delete().await {
                            Ok(renamed) => self.remove_deleted_log_later(renamed),
                            Err(e) => {
                                tracing::error!(topic = %name, partition = partition.index, error = %e, "cannot delete partition log");
                            }
                        }
                    }
                }
                MetadataRecord::BrokerConfigs { broker, .. } => {
                    // Overrides naming hosts are resolved, then raised
                    // limits may free slots for waiting connections.
                    crate::server::hosts::refresh_overrides(self).await;
                    self.connection_counts.wake_all();
                    // Stores configured again (or, by a change of this
                    // node's configs, files modified since they were read)
                    // are read before the change is answered.
                    // A compaction under way follows a new byte rate.
                    self.cleaner_io_rate
                        .set(self.cleaner_io_share(&self.cleaner_settings()));
                    let own = *broker == Some(self.config.node_id);
                    let when = crate::server::tls::Reload::Change { reread_files: own };
                    crate::server::tls::reload(self, when).await;
                    // Topics without their own values follow the broker's
                    // (the cache still holds the values before this record).
                    let before = self
                        .defaults_cache
                        .borrow()
                        .as_ref()
                        .map(|(_, d)| d.clone());
                    if before.as_deref() != Some(&*self.broker_defaults()) {
                        self.reconfigure_partitions(|_, _| true).await;
                    }
                }
                MetadataRecord::Bootstrap { .. }
                | MetadataRecord::AccessControlEntry { .. }
                | MetadataRecord::RemoveAccessControlEntry { .. }
                | MetadataRecord::ClientQuota { .. }
                | MetadataRecord::GroupConfigs { .. }
                | MetadataRecord::ClientMetricsConfigs { .. }
                | MetadataRecord::FeatureLevel { .. }
                | MetadataRecord::LeadershipResumed
                | MetadataRecord::DelegationToken { .. }
                | MetadataRecord::RemoveDelegationToken { .. }
                | MetadataRecord::ProducerIds { .. }
                | MetadataRecord::UserScramCredential { .. }
                | MetadataRecord::RemoveUserScramCredential { .. } => {}
            }
        }
    }

    /// The broker values topics inherit, as of the current image: the
    /// command line's with the dynamic broker configs over them.
    pub fn broker_defaults(&self) -> Rc<crate::config::BrokerDefaults> {
        let image = self.image();
        let mut cached = self.defaults_cache.borrow_mut();
        if let Some((offset, defaults)) = &*cached {
            if *offset == image.applied_records {
                return defaults.clone();
            }
        }
        let defaults = crate::config::dynamic::defaults_in_force(
            &self.config.broker_defaults,
            &image.broker_configs,
            self.config.node_id,
        );
        let defaults = Rc::new(defaults);
        *cached = Some((image.applied_records, defaults.clone()));
        defaults
    }

    /// Applies the current topic configs and broker values to this shard's
    /// open partitions that `which` picks.
    async fn reconfigure_partitions(&self, which: impl Fn(&TopicPartition, &Partition) -> bool) {
        let image = self.image();
        let broker = self.broker_defaults();
        let mine: Vec<Rc<Partition>> = self
            .partitions
            .borrow()
            .iter()
            .filter(|(k, p)| which(k, p))
            .map(|(_, p)| p.clone())
            .collect();
        for partition in mine {
            let Some(topic) = image
                .topic(&partition.topic)
                .filter(|t| t.topic_id == partition.topic_id)
            else {
                continue;
            };
            let segment = log_config_for(topic, &self.config, &broker).segment_settings();
            let settings = partition_settings_for(topic, &broker);
            if let Err(e) = partition.reconfigure(settings, segment) {
                tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "cannot apply altered topic configs");
            }
            glommio::yield_if_needed().await;
        }
    }

    /// Sends `request` to `target` (or runs it here) and waits for the reply.
    /// The returned future is ordered: requests submitted by one task reach
    /// their shard in submission order.
    ///
    /// # Errors
    /// When the target shard cannot be reached.
    pub async fn call(
        self: &Rc<Self>,
        target: usize,
        request: ShardRequest,
    ) -> Result<LocalBoxFuture<'static, Result<ShardReply, RouterError>>, RouterError> {
        if target == self.id {
            let completion = self.clone().submit(request).await;
            return Ok(completion.map(Ok).boxed_local());
        }
        let rx = self.router.send(target, request).await?;
        Ok(async move { rx.await.map_err(|_| RouterError::Dropped(target)) }.boxed_local())
    }

    /// Sends `request` to the controller shard. The future returned gives
    /// the controller's reply, None when it did not answer (its shard gone
    /// or the call dropped). The send is awaited here and the reply later,
    /// so a connection's requests reach the controller in order.
    pub async fn call_controller(
        self: &Rc<Self>,
        request: ControllerRequest,
    ) -> LocalBoxFuture<'static, Option<ControllerReply>> {
        let call = self
            .call(
                crate::cluster::controller::CONTROLLER_SHARD,
                ShardRequest::Controller(request),
            )
            .await;
        async move {
            match call.ok()?.await {
                Ok(ShardReply::Controller(reply)) => Some(reply),
                _ => None,
            }
        }
        .boxed_local()
    }

    /// Sends `request` to the shard that owns partition `partition` of
    /// `topic` and waits for the reply: None when no shard owns it (unknown
    /// topic or partition) or the owner cannot be reached.
    pub async fn call_owner(
        self: &Rc<Self>,
        topic: &str,
        partition: i32,
        request: ShardRequest,
    ) -> Option<ShardReply> {
        let image = self.image();
        let owner = image
            .topic(topic)
            .and_then(|t| self.owner_of(t, partition))?;
        self.call(owner, request).await.ok()?.await.ok()
    }

    /// Runs the ordered part of a request now and returns its completion.
    pub async fn submit(
        self: Rc<Self>,
        request: ShardRequest,
    ) -> LocalBoxFuture<'static, ShardReply> {
        match request {
            ShardRequest::Produce { acks, items } => self.submit_produce(acks, items).await,
            ShardRequest::Fetch {
                items,
                max_bytes,
                isolation_level,
            } => {
                let queue = self.fetch_queue.get();
                let read = async move {
                    ShardReply::Fetch(self.fetch(items, max_bytes, isolation_level == 1).await)
                };
                // In the fetch task queue when the shard has one (created at
                // start and never removed, so spawning into it cannot fail).
                match queue {
                    Some(queue) => glommio::spawn_local_into(read, queue)
                        .expect("the fetch task queue lives as long as the shard")
                        .boxed_local(),
                    None => read.boxed_local(),
                }
            }
            ShardRequest::WaitForData {
                items,
                max_wait_ms,
                isolation_level,
            } => async move {
                self.wait_for_data(items, max_wait_ms, isolation_level == 1)
                    .await;
                ShardReply::WaitForData
            }
            .boxed_local(),
            ShardRequest::DescribeProducers(partitions) => {
                let described = partitions
                    .iter()
                    .map(|tp| match self.partition(tp) {
                        Some(partition) => Ok(partition.describe_producers()),
                        None => Err(code(ErrorCode::NotLeaderOrFollower)),
                    })
                    .collect();
                async move { ShardReply::DescribeProducers(described) }.boxed_local()
            }
            ShardRequest::PartitionSizes => {
                let sizes = self
                    .partitions
                    .borrow()
                    .iter()
                    .map(|(tp, partition)| (tp.clone(), partition.size_bytes()))
                    .collect();
                async move { ShardReply::PartitionSizes(sizes) }.boxed_local()
            }
            ShardRequest::EpochEndOffsets(items) => {
                let ends = items
                    .iter()
                    .map(|(tp, epoch)| match self.partition(tp) {
                        Some(partition) => Ok(partition.end_offset_for_epoch(*epoch)),
                        None => Err(code(ErrorCode::NotLeaderOrFollower)),
                    })
                    .collect();
                async move { ShardReply::EpochEndOffsets(ends) }.boxed_local()
            }
            ShardRequest::DeleteRecords(items) => {
                async move { ShardReply::DeleteRecords(self.delete_records(items).await) }
                    .boxed_local()
            }
            ShardRequest::ListOffsets {
                items,
                isolation_level,
            } => async move {
                ShardReply::ListOffsets(self.list_offsets(items, isolation_level == 1).await)
            }
            .boxed_local(),
            ShardRequest::Apply(records) => {
                self.apply(records).await;
                async { ShardReply::Applied }.boxed_local()
            }
            ShardRequest::Group { partition, call } => self.groups_submit(partition, call),
            ShardRequest::RecordQuota {
                sensor,
                value,
                quota,
                kept,
            } => {
                let throttle = self.quota_sensors.record(sensor, value, quota, kept);
                async move { ShardReply::Throttle(throttle) }.boxed_local()
            }
            ShardRequest::AdmitConnection(index, ip) => {
                let admission = crate::server::admission::admit_here(self, index, ip);
                async move { ShardReply::Admission(admission.await) }.boxed_local()
            }
            ShardRequest::ReleaseConnection(index, ip) => {
                crate::server::admission::release_here(&self, index, ip);
                async { ShardReply::Released }.boxed_local()
            }
            ShardRequest::Metrics => {
                let metrics = crate::metrics::collect(&self);
                async move { ShardReply::Metrics(metrics) }.boxed_local()
            }
            ShardRequest::Txn { partition, call } => {
                let shard = self.clone();
                self.txns.submit(shard, partition, call)
            }
            ShardRequest::WriteTxnMarkers(markers) => {
                let written = self.write_txn_markers(markers).await;
                async move { ShardReply::WriteTxnMarkers(written.await) }.boxed_local()
            }
            ShardRequest::Controller(request) => async move {
                ShardReply::Controller(crate::cluster::controller::handle(&self, request).await)
            }
            .boxed_local(),
        }
    }

    /// Writes each marker to its partitions in order (the ordered part),
    /// then returns a future that resolves once they are durable.
    async fn write_txn_markers(
        self: &Rc<Self>,
        markers: Vec<TxnMarkerWrite>,
    ) -> LocalBoxFuture<'static, Vec<Vec<i16>>> {
        let mut codes = Vec::with_capacity(markers.len());
        let mut written: Vec<((usize, usize), Rc<Partition>)> = Vec::new();
        // (producer id, commit) of each marker, by row: the group
        // coordinator applies the ones written to offsets partitions.
        let mut outcomes: Vec<(i64, bool)> = Vec::with_capacity(markers.len());
        for marker in markers {
            outcomes.push((marker.producer_id, marker.commit));
            let mut per_partition = Vec::with_capacity(marker.partitions.len());
            for tp in &marker.partitions {
                let Some(partition) = self.partition(tp) else {
                    per_partition.push(code(ErrorCode::UnknownTopicOrPartition));
                    continue;
                };
                match partition
                    .write_txn_marker(
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.coordinator_epoch,
                        marker.commit,
                    )
                    .await
                {
                    Ok(_) => {
                        written.push(((codes.len(), per_partition.len()), partition));
                        per_partition.push(0);
                    }
                    Err(PartitionError::Producer(e)) => {
                        tracing::info!(topic = %tp.topic, partition = tp.partition, error = %e, "transaction marker refused");
                        per_partition.push(code(e.error_code()));
                    }
                    Err(PartitionError::Deleted { .. }) => {
                        per_partition.push(code(ErrorCode::UnknownTopicOrPartition));
                    }
                    Err(e) => {
                        tracing::error!(topic = %tp.topic, partition = tp.partition, error = %e, "cannot write a transaction marker");
                        per_partition.push(code(ErrorCode::KafkaStorageError));
                    }
                }
            }
            codes.push(per_partition);
        }
        let shard = self.clone();
        async move {
            let flushes = written.iter().map(|(_, p)| p.flush(true));
            for (((row, column), partition), outcome) in written.iter().zip(join_all(flushes).await) {
                if let Err(e) = outcome {
                    // Not durable: the coordinator must write it again.
                    tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "cannot sync a transaction marker");
                    codes[*row][*column] = code(ErrorCode::KafkaStorageError);
                    continue;
                }
                // Durable in an offsets partition: the transaction's pending
                // offsets there are committed or dropped before the answer.
                if partition.topic == crate::cluster::controller::OFFSETS_TOPIC {
                    let (producer_id, commit) = outcomes[*row];
                    shard.groups.on_txn_marker(partition.index, producer_id, commit);
                }
            }
            codes
        }
        .boxed_local()
    }

    async fn submit_produce(
        self: Rc<Self>,
        acks: i16,
        items: Vec<ProduceItem>,
    ) -> LocalBoxFuture<'static, ShardReply> {
        let mut results = Vec::with_capacity(items.len());
        // (result index, partition, whether its flush.messages asks this
        // append to be synced)
        let mut appended: Vec<(usize, Rc<Partition>, bool)> = Vec::new();
        for item in items {
            let Some(partition) = self.partition(&item.topic_partition) else {
                results.push(ProduceResult::error(code(ErrorCode::NotLeaderOrFollower)));
                continue;
            };
            match partition.append(item.batch, &item.header).await {
                Ok((info, log_append_time_ms)) => {
                    let messages = (info.last_offset - info.base_offset + 1).max(1) as u64;
                    let flush_asked = partition.count_appended(messages);
                    appended.push((results.len(), partition.clone(), flush_asked));
                    results.push(ProduceResult {
                        error_code: 0,
                        base_offset: info.base_offset,
                        log_append_time_ms,
                        log_start_offset: partition.log_start_offset(),
                    });
                }
                Err(PartitionError::Producer(e)) => {
                    // The client's own sequencing problem, answered per partition.
                    tracing::debug!(topic = %partition.topic, partition = partition.index, error = %e, "idempotent batch refused");
                    results.push(ProduceResult::error(code(e.error_code())));
                }
                Err(e) => {
                    tracing::warn!(topic = %partition.topic, partition = partition.index, error = %e, "append failed");
                    results.push(ProduceResult::error(code(ErrorCode::KafkaStorageError)));
                }
            }
        }
        let sync = match self.config.flush_policy {
            FlushPolicy::AcksAll => acks == -1,
            FlushPolicy::Always => acks != 0,
            FlushPolicy::Never => false,
        };
        // Without the flush policy's sync, only the partitions whose
        // flush.messages was reached wait for one, and the others wait for
        // their write under --acks-wait-for-write.
        let written = self.config.acks_wait_for_write && acks != 0;
        appended.retain(|(_, _, flush_asked)| sync || *flush_asked || written);
        async move {
            if !appended.is_empty() {
                let flushes = appended
                    .iter()
                    .map(|(_, p, flush_asked)| p.flush(sync || *flush_asked));
                for ((index, partition, _), outcome) in appended.iter().zip(join_all(flushes).await) {
                    if let Err(e) = outcome {
                        tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "write or sync failed");
                        results[*index] = ProduceResult::error(code(ErrorCode::KafkaStorageError));
                    }
                }
            }
            ShardReply::Produce(results)
        }
        .boxed_local()
    }

    /// Reads the partitions of a fetch in request order, a wave of up to
    /// `--cold-reads-max` at once (so a consumer of many partitions keeps
    /// several segment reads in flight), each within its partition budget
    /// and what is left of the response's `max_bytes` (KIP-74). Budget is
    /// set aside only for partitions with something to read; a partition
    /// left without budget by the others of its wave waits for the next
    /// wave (the others may use less than they were given), and once the
    /// response's budget is really used up the rest are answered without
    /// data. Only the first partition that reads may return a batch larger
    /// than what is left.
    async fn fetch(
        &self,
        items: Vec<FetchItem>,
        max_bytes: usize,
        read_committed: bool,
    ) -> Vec<FetchResult> {
        let wave_size = self.config.cold_reads_max.max(1);
        let mut results: Vec<Option<FetchResult>> = vec![None; items.len()];
        let mut queue: std::collections::VecDeque<(usize, FetchItem)> =
            items.into_iter().enumerate().collect();
        let mut used = 0usize;
        while !queue.is_empty() {
            let mut reserved = used;
            let mut wave = Vec::with_capacity(wave_size);
            let mut deferred = Vec::new();
            while wave.len() < wave_size {
                let Some((index, item)) = queue.pop_front() else {
                    break;
                };
                if !self.has_data_to_read(&item, read_committed) {
                    wave.push((index, item, FetchBudget::None));
                    continue;
                }
                let left = max_bytes.saturating_sub(reserved);
                let budget = if left > 0 {
                    FetchBudget::Bytes(
                        item.partition_max_bytes.min(left),
                        used == 0 && reserved == 0,
                    )
                } else if reserved > used {
                    // Set aside for others of this wave: try in the next.
                    deferred.push((index, item));
                    continue;
                } else if used == 0 {
                    FetchBudget::Bytes(0, true)
                } else {
                    FetchBudget::None
                };
                if let FetchBudget::Bytes(bytes, _) = budget {
                    reserved += bytes;
                }
                wave.push((index, item, budget));
            }
            for item in deferred.into_iter().rev() {
                queue.push_front(item);
            }
            let reads = wave.into_iter().map(|(index, item, budget)| async move {
                (
                    index,
                    self.fetch_partition(item, budget, read_committed).await,
                )
            });
            for (index, result) in futures::future::join_all(reads).await {
                used += result.bytes;
                results[index] = Some(result);
            }
        }
        results
            .into_iter()
            .map(|result| result.expect("every partition of the fetch was answered"))
            .collect()
    }

    /// True when a fetch of `item` would read batches (an owned partition,
    /// an offset inside the log below the readable end).
    fn has_data_to_read(&self, item: &FetchItem, read_committed: bool) -> bool {
        let Some(partition) = self.partition(&item.topic_partition) else {
            return false;
        };
        let end = if read_committed {
            partition.last_stable_offset()
        } else {
            partition.high_watermark()
        };
        item.fetch_offset >= partition.log_start_offset() && item.fetch_offset < end
    }

    async fn fetch_partition(
        &self,
        item: FetchItem,
        budget: FetchBudget,
        read_committed: bool,
    ) -> FetchResult {
        let Some(partition) = self.partition(&item.topic_partition) else {
            return FetchResult {
                error_code: code(ErrorCode::NotLeaderOrFollower),
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                ..FetchResult::default()
            };
        };
        let high_watermark = partition.high_watermark();
        let log_start_offset = partition.log_start_offset();
        let mut result = FetchResult {
            error_code: 0,
            high_watermark,
            last_stable_offset: partition.last_stable_offset(),
            log_start_offset,
            aborted_transactions: read_committed.then(Vec::new),
            ..FetchResult::default()
        };
        // Out of range: Kafka answers -1 for the watermarks and the log
        // start (its error read result), as measured on Kafka 4.1.1.
        let out_of_range = |result: &mut FetchResult| {
            result.error_code = code(ErrorCode::OffsetOutOfRange);
            result.high_watermark = -1;
            result.last_stable_offset = -1;
            result.log_start_offset = -1;
        };
        if item.fetch_offset < log_start_offset || item.fetch_offset > high_watermark {
            out_of_range(&mut result);
        } else if let (FetchBudget::Bytes(max_bytes, min_one_batch), true) =
            (budget, item.fetch_offset < high_watermark)
        {
            let splice = crate::storage::splice_reads();
            match partition
                .fetch_pieces(
                    item.fetch_offset,
                    max_bytes,
                    min_one_batch,
                    read_committed,
                    splice,
                )
                .await
            {
                Ok((pieces, aborted_transactions)) => {
                    result.bytes = pieces.bytes;
                    result.records = pieces.pieces;
                    if read_committed {
                        result.aborted_transactions = aborted_transactions;
                    }
                }
                // Retention moved the log start past the offset meanwhile.
                Err(PartitionError::Storage(StorageError::OffsetOutOfRange { .. })) => {
                    out_of_range(&mut result);
                    result.aborted_transactions = read_committed.then(Vec::new);
                }
                Err(e) => {
                    tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "read failed");
                    result.error_code = code(ErrorCode::KafkaStorageError);
                }
            }
        }
        result
    }

    /// `file.delete.delay.ms` of `topic` (the broker's for one this shard
    /// does not know).
    fn file_delete_delay_ms(&self, topic: &str) -> i64 {
        let broker = self.broker_defaults();
        self.image()
            .topic(topic)
            .map_or(broker.log_segment_delete_delay_ms, |topic| {
                topic.configs.file_delete_delay_ms(&broker)
            })
    }

    /// Queues a deleted log's directory (renamed `-delete`) for removal
    /// once the broker's `log.segment.delete.delay.ms` has passed since now
    /// ([`Shard::deleted_logs_loop`]).
    pub fn remove_deleted_log_later(&self, dir: PathBuf) {
        self.deleted_logs
            .borrow_mut()
            .push_back((std::time::Instant::now(), dir));
    }

    /// Kafka's `LogManager.deleteLogs`: removes each queued deleted log's
    /// directory, one at a time, once the broker's
    /// `log.segment.delete.delay.ms` has passed since it was queued. The
    /// delay is read as it is at each look, at least every second, so a
    /// change at runtime applies to the deletions waiting within a second
    /// (Kafka applies it when its task next wakes, which the old value
    /// scheduled). Those still waiting at shutdown are removed the delay
    /// after the next start. Stops when the shard shuts down.
    pub async fn deleted_logs_loop(self: Rc<Self>) {
        loop {
            if self.closing.get() {
                return;
            }
            let delay_ms = self.broker_defaults().log_segment_delete_delay_ms;
            let delay = Duration::from_millis(u64::try_from(delay_ms).unwrap_or(0));
            // Queued in time order, so the front is due first.
            let next_due = self
                .deleted_logs
                .borrow()
                .front()
                .map(|(at, _)| *at + delay);
            let now = std::time::Instant::now();
            match next_due {
                Some(due) if due <= now => {
                    let Some((_, dir)) = self.deleted_logs.borrow_mut().pop_front() else {
                        continue;
                    };
                    if let Err(error) = crate::storage::remove_deleted_log_dir(dir).await {
                        tracing::error!(%error, "cannot remove a deleted log's directory");
                    }
                }
                Some(due) => {
                    glommio::timer::sleep((due - now).min(Duration::from_secs(1))).await;
                }
                None => glommio::timer::sleep(Duration::from_secs(1)).await,
            }
        }
    }

    /// DeleteRecords on partitions this shard owns, all at once.
    async fn delete_records(&self, items: Vec<(TopicPartition, i64)>) -> Vec<Result<i64, i16>> {
        join_all(items.into_iter().map(|(tp, offset)| async move {
            let Some(partition) = self.partition(&tp) else {
                return Err(code(ErrorCode::NotLeaderOrFollower));
            };
            let delay = self.file_delete_delay_ms(&tp.topic);
            match partition.delete_records(offset, delay).await {
                Ok(low_watermark) => Ok(low_watermark),
                Err(PartitionError::Storage(StorageError::OffsetOutOfRange { .. })) => {
                    Err(code(ErrorCode::OffsetOutOfRange))
                }
                Err(PartitionError::Deleted { .. }) => {
                    Err(code(ErrorCode::UnknownTopicOrPartition))
                }
                // Shutting down: the partition is being given up.
                Err(PartitionError::Storage(StorageError::Closed { .. })) => {
                    Err(code(ErrorCode::NotLeaderOrFollower))
                }
                Err(e) => {
                    tracing::error!(topic = %tp.topic, partition = tp.partition, error = %e, "DeleteRecords failed");
                    Err(code(ErrorCode::KafkaStorageError))
                }
            }
        }))
        .await
    }

    async fn wait_for_data(
        &self,
        items: Vec<(TopicPartition, i64)>,
        max_wait_ms: u64,
        read_committed: bool,
    ) {
        let mut receivers = Vec::new();
        if self.fetch_waiters.get() + items.len() > FETCH_WAITERS_PER_SHARD_MAX {
            // Out of waiter slots: wait out the time instead of being woken,
            // so the fetch neither spins nor grows the waiter lists.
            tracing::debug!(shard = self.id, "fetch waiter slots exhausted");
            glommio::timer::sleep(Duration::from_millis(max_wait_ms)).await;
            return;
        }
        for (topic_partition, offset) in &items {
            let Some(partition) = self.partition(topic_partition) else {
                return;
            };
            match partition.wait_for_data(*offset, read_committed) {
                Some(rx) => receivers.push(rx),
                None => return,
            }
        }
        if receivers.is_empty() {
            return;
        }
        let count = receivers.len();
        self.fetch_waiters.set(self.fetch_waiters.get() + count);
        let timeout = glommio::timer::sleep(Duration::from_millis(max_wait_ms));
        futures::future::select(select_all(receivers), Box::pin(timeout)).await;
        self.fetch_waiters.set(self.fetch_waiters.get() - count);
    }

    /// Kafka's `fetchOffsetForTimestamp`: LATEST is the last fetchable
    /// offset (the LSO for read_committed, else the high watermark), and a
    /// timestamp or MAX_TIMESTAMP lookup finds nothing at or past it.
    async fn list_offsets(
        &self,
        items: Vec<ListOffsetsItem>,
        read_committed: bool,
    ) -> Vec<ListOffsetsResult> {
        let mut results = Vec::with_capacity(items.len());
        for item in items {
            let Some(partition) = self.partition(&item.topic_partition) else {
                results.push(ListOffsetsResult {
                    error_code: code(ErrorCode::NotLeaderOrFollower),
                    timestamp: -1,
                    offset: -1,
                    leader_epoch: -1,
                });
                continue;
            };
            let epoch = partition.leader_epoch();
            let last_fetchable_offset = if read_committed {
                partition.last_stable_offset()
            } else {
                partition.high_watermark()
            };
            let fetchable =
                |hit: Option<(i64, i64)>| hit.filter(|(offset, _)| *offset < last_fetchable_offset);
            let found = |offset: i64, timestamp: i64| ListOffsetsResult {
                error_code: 0,
                timestamp,
                offset,
                leader_epoch: epoch,
            };
            let not_found = ListOffsetsResult {
                leader_epoch: -1,
                ..found(-1, -1)
            };
            let result = match item.timestamp {
                // LATEST.
                -1 => found(last_fetchable_offset, -1),
                // LATEST_TIERED: nothing is tiered, so no offset, as Kafka
                // 4.1 answers without remote storage.
                -5 => not_found,
                // EARLIEST and EARLIEST_LOCAL.
                -2 | -4 => found(partition.log_start_offset(), -1),
                -3 => match partition.max_timestamp_offset().await.map(fetchable) {
                    Ok(Some((offset, timestamp))) => found(offset, timestamp),
                    Ok(None) => not_found,
                    Err(_) => ListOffsetsResult {
                        error_code: code(ErrorCode::KafkaStorageError),
                        ..found(-1, -1)
                    },
                },
                timestamp if timestamp >= 0 => {
                    match partition
                        .offset_for_timestamp(timestamp)
                        .await
                        .map(fetchable)
                    {
                        Ok(Some((offset, ts))) => found(offset, ts),
                        Ok(None) => not_found,
                        Err(_) => ListOffsetsResult {
                            error_code: code(ErrorCode::KafkaStorageError),
                            ..found(-1, -1)
                        },
                    }
                }
                _ => ListOffsetsResult {
                    error_code: code(ErrorCode::InvalidRequest),
                    ..found(-1, -1)
                },
            };
            results.push(result);
        }
        results
    }

    fn groups_submit(
        self: Rc<Self>,
        partition: i32,
        call: messages::GroupCall,
    ) -> LocalBoxFuture<'static, ShardReply> {
        let image = self.image();
        if let messages::GroupCall::ConsumerGroupHeartbeat {
            caller: Some((principal, host)),
            ..
        } = &call
        {
            if self.authorizer.enabled {
                let caller = crate::security::acl::Caller {
                    principal: principal.as_str().into(),
                    host: host.as_str().into(),
                };
                let access = crate::server::access::Access::new(&self, &caller);
                let describable =
                    |topic: &str| access.topic(crate::security::acl::AclOperation::Describe, topic);
                let view = crate::group::service::DescribableTopics {
                    image: &image,
                    describable: &describable,
                };
                return self
                    .groups
                    .submit(partition, call, &view, &image.group_configs);
            }
        }
        self.groups
            .submit(partition, call, &*image, &image.group_configs)
    }

    /// Starts the group coordinators of the offsets partitions this shard owns.
    fn start_group_coordinators(self: &Rc<Self>) {
        let image = self.image();
        let Some(topic) = image.topic(OFFSETS_TOPIC) else {
            return;
        };
        for partition in 0..topic.partition_shards.len() as i32 {
            if self.owner_of(topic, partition) == Some(self.id) {
                self.groups.start(self, partition);
            }
        }
    }

    /// Starts the transaction coordinators of the transaction state
    /// partitions this shard owns.
    fn start_txn_coordinators(self: &Rc<Self>) {
        let image = self.image();
        let Some(topic) = image.topic(TXN_STATE_TOPIC) else {
            return;
        };
        for partition in 0..topic.partition_shards.len() as i32 {
            if self.owner_of(topic, partition) == Some(self.id) {
                self.txns.start(self, partition);
            }
        }
    }

    /// Kafka's log flusher: every `log.flush.scheduler.interval.ms`, syncs
    /// each log with messages appended since its last sync once its
    /// `flush.ms` has passed. As in Kafka, nothing runs while the interval
    /// is its default, Long.MAX_VALUE (so `flush.ms` alone does nothing).
    pub async fn flush_loop(self: Rc<Self>) {
        let interval = self.config.broker_defaults.log_flush_scheduler_interval_ms;
        if interval <= 0 || interval == i64::MAX {
            return;
        }
        let interval = Duration::from_millis(interval as u64);
        loop {
            glommio::timer::sleep(interval).await;
            if self.closing.get() {
                return;
            }
            let now = std::time::Instant::now();
            let due: Vec<Rc<Partition>> = self
                .partitions
                .borrow()
                .values()
                .filter(|partition| partition.flush_due(now))
                .cloned()
                .collect();
            let outcomes = join_all(due.iter().map(|partition| partition.flush(true))).await;
            for (partition, outcome) in due.iter().zip(outcomes) {
                if let Err(e) = outcome {
                    tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "scheduled flush failed");
                }
            }
        }
    }

    /// Broker config `name` (one of those read where they act) in force:
    /// this node's dynamic value, else the cluster default's, else
    /// `started` (the command line's).
    fn broker_setting<T: std::str::FromStr>(&self, name: &str, started: T) -> T {
        let image = self.image();
        crate::config::dynamic::dynamic_value(
            &image.broker_configs,
            self.config.node_id,
            name,
            |text| crate::config::dynamic::setting_value(name, text),
        )
        .unwrap_or(started)
    }

    /// `producer.id.expiration.ms` in force.
    pub fn producer_id_expiration_ms(&self) -> i32 {
        self.broker_setting(
            crate::config::dynamic::PRODUCER_ID_EXPIRATION_MS,
            self.config.txns.producer_id_expiration_ms,
        )
    }

    /// `transaction.partition.verification.enable` in force.
    pub fn transaction_partition_verification_enable(&self) -> bool {
        self.broker_setting(
            crate::config::dynamic::TRANSACTION_PARTITION_VERIFICATION_ENABLE,
            self.config.txns.transaction_partition_verification_enable,
        )
    }

    /// The log cleaner settings in force, dynamic values over the command
    /// line's.
    fn cleaner_settings(&self) -> crate::config::CleanerSettings {
        use crate::config::dynamic::{
            LOG_CLEANER_BACKOFF_MS, LOG_CLEANER_DEDUPE_BUFFER_SIZE,
            LOG_CLEANER_IO_BUFFER_LOAD_FACTOR, LOG_CLEANER_IO_BUFFER_SIZE,
            LOG_CLEANER_IO_MAX_BYTES_PER_SECOND, LOG_CLEANER_THREADS,
        };
        let started = &self.config.cleaner;
        crate::config::CleanerSettings {
            log_cleaner_backoff_ms: self
                .broker_setting(LOG_CLEANER_BACKOFF_MS, started.log_cleaner_backoff_ms),
            log_cleaner_dedupe_buffer_size: self.broker_setting(
                LOG_CLEANER_DEDUPE_BUFFER_SIZE,
                started.log_cleaner_dedupe_buffer_size,
            ),
            log_cleaner_io_buffer_load_factor: self.broker_setting(
                LOG_CLEANER_IO_BUFFER_LOAD_FACTOR,
                started.log_cleaner_io_buffer_load_factor,
            ),
            log_cleaner_io_max_bytes_per_second: self.broker_setting(
                LOG_CLEANER_IO_MAX_BYTES_PER_SECOND,
                started.log_cleaner_io_max_bytes_per_second,
            ),
            log_cleaner_threads: self
                .broker_setting(LOG_CLEANER_THREADS, started.log_cleaner_threads),
            log_cleaner_io_buffer_size: self.broker_setting(
                LOG_CLEANER_IO_BUFFER_SIZE,
                started.log_cleaner_io_buffer_size,
            ),
        }
    }

    /// This shard's share of `cleaner`'s
    /// `log.cleaner.io.max.bytes.per.second`: the shards compact side by
    /// side, as Kafka's cleaner threads share one throttle. A positive bound
    /// stays positive; none, 0 and Kafka's values that bound nothing
    /// (negative, NaN) are kept.
    pub fn cleaner_io_share(&self, cleaner: &crate::config::CleanerSettings) -> f64 {
        let io = cleaner.log_cleaner_io_max_bytes_per_second;
        #[allow(clippy::cast_precision_loss)]
        let shards = self.nr_shards.max(1) as f64;
        if io > 0.0 && io < f64::MAX {
            (io / shards).max(f64::MIN_POSITIVE)
        } else {
            io
        }
    }

    /// Every `producer.id.expiration.check.interval.ms`, forgets the
    /// producers of this shard's partitions idle past
    /// `producer.id.expiration.ms` (as it is then) whose transaction is not
    /// open, as Kafka's `UnifiedLog` producer-expiry task does. Stops when
    /// the shard shuts down.
    pub async fn producer_expiry_loop(self: Rc<Self>) {
        let interval = u64::try_from(self.config.txns.producer_id_expiration_check_interval_ms)
            .unwrap_or(1)
            .max(1);
        loop {
            glommio::timer::sleep(Duration::from_millis(interval)).await;
            if self.closing.get() {
                return;
            }
            let expiration = i64::from(self.producer_id_expiration_ms());
            let partitions: Vec<Rc<Partition>> =
                self.partitions.borrow().values().cloned().collect();
            let now = crate::partition::now_ms();
            for partition in &partitions {
                let expired = partition.expire_producers(now, expiration);
                if expired > 0 {
                    tracing::debug!(topic = %partition.topic, partition = partition.index, expired, "producer ids expired");
                }
            }
        }
    }

    /// Every `log.cleaner.backoff.ms`, compacts the partitions of compacted
    /// topics this shard owns, its share of `log.cleaner.threads` at a time
    /// (each compaction yields, so produce and fetch keep running), and
    /// applies `retention.ms` / `retention.bytes` to those whose
    /// `cleanup.policy` is `compact,delete`. A partition whose compaction
    /// failed on its data is left alone from then on, by both, until the
    /// broker restarts, as Kafka's cleaner leaves its uncleanable
    /// partitions ([`Partition::mark_uncleanable_after`]); so is a failed
    /// log.
    /// Stops when the shard shuts down.
    pub async fn compaction_loop(self: Rc<Self>) {
        use futures::StreamExt;
        loop {
            // A change of the backoff counts from the pass before, as
            // Kafka's restarted cleaner threads wait it afresh.
            let started = std::time::Instant::now();
            loop {
                let backoff = self.broker_setting(
                    crate::config::dynamic::LOG_CLEANER_BACKOFF_MS,
                    self.config.cleaner.log_cleaner_backoff_ms,
                );
                let Some(left) = Duration::from_millis(u64::try_from(backoff).unwrap_or(0))
                    .checked_sub(started.elapsed())
                    .filter(|d| !d.is_zero())
                else {
                    break;
                };
                glommio::timer::sleep(left.min(Duration::from_secs(1))).await;
            }
            // A pass that finds nothing to do never awaits: a backoff of 0
            // must still leave the executor to the rest of the shard.
            glommio::timer::sleep(Duration::from_millis(1)).await;
            if self.closing.get() {
                return;
            }
            let cleaner = self.cleaner_settings();
            self.cleaner_io_rate.set(self.cleaner_io_share(&cleaner));
            // Kafka's throttle of 0 bytes a second stops its cleaners.
            if self.cleaner_io_rate.get() == 0.0 {
                glommio::timer::sleep(Duration::from_secs(1)).await;
                continue;
            }
            let (here, config) = self.compaction_share(&cleaner);
            let image = self.image();
            let broker = self.broker_defaults();
            let partitions: Vec<Rc<Partition>> =
                self.partitions.borrow().values().cloned().collect();
            let compacted = partitions.into_iter().filter_map(|partition| {
                if partition.is_uncleanable() || partition.log_failed() {
                    return None;
                }
                let topic = image.topic(&partition.topic)?;
                topic
                    .configs
                    .cleanup_policy_compact(&broker)
                    .then_some((partition, topic))
            });
            futures::stream::iter(compacted)
                .for_each_concurrent(here, |(partition, topic)| {
                    let config = config.clone();
                    let shard = &self;
                    async move {
                        if shard.closing.get() {
                            return;
                        }
                        // As they are now: a pass can be long.
                        let broker = &*shard.broker_defaults();
                        let config = CompactionConfig {
                            delete_retention_ms: topic
                                .configs
                                .get("delete.retention.ms", broker)
                                .parse()
                                .unwrap_or(86_400_000),
                            min_cleanable_dirty_ratio: topic
                                .configs
                                .get("min.cleanable.dirty.ratio", broker)
                                .parse()
                                .unwrap_or(0.5),
                            min_compaction_lag_ms: topic
                                .configs
                                .get("min.compaction.lag.ms", broker)
                                .parse()
                                .unwrap_or(0),
                            max_compaction_lag_ms: topic.configs.max_compaction_lag_ms(broker),
                            file_delete_delay_ms: topic.configs.file_delete_delay_ms(broker),
                            ..config
                        };
                        match partition.compact(&config).await {
                            Ok(stats) if stats.outcome == CompactionOutcome::Cleaned => {
                                tracing::info!(
                                    topic = %partition.topic,
                                    partition = partition.index,
                                    records_read = stats.records_read,
                                    records_retained = stats.records_retained,
                                    bytes_written = stats.bytes_written,
                                    "compacted"
                                );
                            }
                            Ok(_) => {}
                            Err(e) => {
                                if partition.mark_uncleanable_after(&e) {
                                    tracing::warn!(
                                        topic = %partition.topic,
                                        partition = partition.index,
                                        error = %e,
                                        "compaction failed; marking the partition uncleanable: the cleaner leaves it alone until the broker restarts"
                                    );
                                    return;
                                }
                                tracing::warn!(topic = %partition.topic, partition = partition.index, error = %e, "compaction failed");
                            }
                        }
                        // Kafka's cleaner deletes the expired segments of
                        // `compact,delete` logs at each pass
                        // (`deletableLogs`), not at the retention check.
                        if topic.configs.cleanup_policy_delete(broker) {
                            apply_retention(&partition, &topic.configs, broker).await;
                        }
                    }
                })
                .await;
            if self.closing.get() {
                return;
            }
        }
    }

    /// How many compactions this shard runs at once under `cleaner`, and
    /// the settings each gets besides its topic's: `log.cleaner.threads`
    /// compactions over the broker (at least one a shard, so every shard's
    /// partitions are compacted), shared out evenly among the shards; each
    /// compaction with its share of the key-map memory (at most
    /// `Int.MaxValue`, as Kafka's per-thread share) and half its share of
    /// the I/O buffers for reading; all of this shard's under its throttle.
    fn compaction_share(
        &self,
        cleaner: &crate::config::CleanerSettings,
    ) -> (usize, CompactionConfig) {
        let (here, compactions) =
            compactions_at_once(cleaner.log_cleaner_threads, self.nr_shards, self.id);
        let dedupe = u64::try_from(cleaner.log_cleaner_dedupe_buffer_size).unwrap_or(0)
            / u64::try_from(compactions).unwrap_or(u64::MAX);
        let io_buffer = usize::try_from(cleaner.log_cleaner_io_buffer_size).unwrap_or(0);
        let config = CompactionConfig {
            compact: true,
            dedupe_buffer_bytes: usize::try_from(dedupe.min(i32::MAX as u64))
                .unwrap_or(usize::MAX)
                .max(MIN_DEDUPE_BUFFER_BYTES),
            load_factor: cleaner.log_cleaner_io_buffer_load_factor,
            read_chunk_bytes: (io_buffer / compactions / 2).max(MIN_COMPACTION_READ_BYTES),
            throttle: self.cleaner_throttle.clone(),
            ..CompactionConfig::default()
        };
        (here, config)
    }

    /// On shard 0: every `delegation.token.expiry.check.interval.ms`, removes
    /// the delegation tokens past their expiry or max, as Kafka's controller
    /// does (tokens enabled or not), and, with tokens enabled, gives those
    /// made under another key the credentials of the current one (their
    /// PBKDF2 runs off the executor and outside the controller). The first
    /// sweep runs at start-up, and the next at once while a sweep had more
    /// to do. Stops when the shard shuts down.
    pub async fn token_sweep_loop(self: Rc<Self>) {
        use crate::security::delegation_token::{RESIGN_TOKENS_MAX, SWEEP_TOKENS_MAX};
        use crate::shard::messages::{ControllerReply, ControllerRequest};
        if self.id != crate::cluster::controller::CONTROLLER_SHARD {
            return;
        }
        let config = self.config.delegation_tokens.clone();
        let interval =
            Duration::from_millis(u64::try_from(config.expiry_check_interval_ms).unwrap_or(1));
        let mut delay = Duration::ZERO;
        loop {
            glommio::timer::sleep(delay).await;
            if self.closing.get() {
                return;
            }
            let unsigned: Vec<String> = if config.enabled() {
                self.image()
                    .delegation_tokens
                    .values()
                    .filter(|token| !config.signs(token))
                    .take(RESIGN_TOKENS_MAX)
                    .map(|token| token.token_id.clone())
                    .collect()
            } else {
                Vec::new()
            };
            let mut resigned = Vec::with_capacity(unsigned.len());
            for token_id in unsigned {
                match crate::cluster::controller::sign_token(&config, &token_id).await {
                    Ok(signature) => resigned.push((token_id, signature)),
                    Err(_) => break,
                }
            }
            let resigning = resigned.len();
            let reply = self
                .call_controller(ControllerRequest::SweepDelegationTokens { resigned })
                .await
                .await;
            if resigning > 0 {
                tracing::info!(
                    tokens = resigning,
                    "delegation tokens made under another key were given the current key's credentials"
                );
            }
            delay = match reply {
                Some(ControllerReply::SweepDelegationTokens(changed))
                    if changed >= SWEEP_TOKENS_MAX || resigning == RESIGN_TOKENS_MAX =>
                {
                    Duration::ZERO
                }
                _ => interval,
            };
        }
    }

    /// Takes a producer snapshot of each partition whose log rolled a
    /// segment since its last one, one partition at a time, so a start after
    /// kill -9 replays about a segment of each log instead of everything
    /// since the last clean stop. Stops when the shard shuts down.
    pub async fn producer_snapshot_loop(self: Rc<Self>) {
        loop {
            glommio::timer::sleep(PRODUCER_SNAPSHOT_CHECK_INTERVAL).await;
            if self.closing.get() {
                return;
            }
            let due: Vec<Rc<Partition>> = self
                .partitions
                .borrow()
                .values()
                .filter(|partition| partition.producer_snapshot_due())
                .cloned()
                .collect();
            for partition in due {
                let taken = partition.take_producer_snapshot().await;
                if let (Err(e), false) = (taken, partition.is_deleted()) {
                    tracing::warn!(topic = %partition.topic, partition = partition.index, error = %e, "producer snapshot failed");
                }
                if self.closing.get() {
                    return;
                }
            }
        }
    }

    /// Every `log.retention.check.interval.ms`, deletes the segments past
    /// `retention.ms` / `retention.bytes` of this shard's partitions whose
    /// topic's `cleanup.policy` is `delete` (Kafka's
    /// `LogManager.cleanupLogs`, which leaves `compact,delete` logs to the
    /// cleaner), one partition at a time. Stops when the shard shuts down.
    pub async fn retention_loop(self: Rc<Self>) {
        let interval = Duration::from_millis(
            u64::try_from(self.config.broker_defaults.log_retention_check_interval_ms).unwrap_or(1),
        );
        // Kafka's first check comes 30 s after start-up
        // (`log.initial.task.delay.ms`), or sooner with a shorter interval.
        let mut delay = interval.min(Duration::from_secs(30));
        loop {
            glommio::timer::sleep(delay).await;
            delay = interval;
            if self.closing.get() {
                return;
            }
            let image = self.image();
            let broker = self.broker_defaults();
            let broker = &*broker;
            let partitions: Vec<Rc<Partition>> =
                self.partitions.borrow().values().cloned().collect();
            for partition in partitions {
                let Some(topic) = image.topic(&partition.topic) else {
                    continue;
                };
                // The log cleaner's pass deletes for compacted topics.
                if !topic.configs.cleanup_policy_delete(broker)
                    || topic.configs.cleanup_policy_compact(broker)
                {
                    continue;
                }
                apply_retention(&partition, &topic.configs, broker).await;
                if self.closing.get() {
                    return;
                }
                glommio::yield_if_needed().await;
            }
        }
    }

    /// A producer id never handed out before on this cluster. Ids come in
    /// blocks from the controller, which records each block in the metadata
    /// log before giving it out, so a restart never reuses one.
    ///
    /// # Errors
    /// When the controller cannot be reached or cannot make the block durable.
    pub async fn next_producer_id(self: &Rc<Self>) -> anyhow::Result<i64> {
        loop {
            let (next, end) = self.producer_ids.get();
            if next < end {
                self.producer_ids.set((next + 1, end));
                return Ok(next);
            }
            let request = ControllerRequest::AllocateProducerIds {
                count: PRODUCER_ID_BLOCK_SIZE,
            };
            match self.call_controller(request).await.await {
                Some(ControllerReply::ProducerIds(Some(first))) => {
                    // Another task may have refilled the pool meanwhile; the
                    // newer block wins and the older remainder is skipped.
                    self.producer_ids
                        .set((first, first + PRODUCER_ID_BLOCK_SIZE));
                }
                other => anyhow::bail!("cannot allocate producer ids: {other:?}"),
            }
        }
    }

    /// Closes every partition log (clean shutdown).
    pub async fn close_all(&self) -> usize {
        self.closing.set(true);
        self.groups.stop_all();
        self.txns.stop_all();
        let partitions: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        let mut failures = 0;
        for partition in partitions {
            if let Err(e) = partition.close().await {
                tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "close failed");
                failures += 1;
            }
        }
        failures
    }
}

/// How many compactions shard `id` of `shards` runs at once, and how many
/// run over the broker, under `log.cleaner.threads` of `threads`: as many
/// as the threads, at least one a shard, shared out evenly (the first
/// shards run one more when they do not divide).
fn compactions_at_once(threads: i32, shards: usize, id: usize) -> (usize, usize) {
    let shards = shards.max(1);
    let compactions = usize::try_from(threads).unwrap_or(1).max(shards);
    let here = compactions / shards + usize::from(id < compactions % shards);
    (here, compactions)
}

/// Deletes `partition`'s segments past its topic's `retention.ms` /
/// `retention.bytes` (Kafka's `deleteOldSegments`); a failure is logged.
async fn apply_retention(
    partition: &Partition,
    configs: &crate::config::topic_config::TopicConfigs,
    broker: &crate::config::topic_config::BrokerDefaults,
) {
    let retention_ms = configs.retention_ms(broker);
    let retention_bytes = configs.retention_bytes(broker);
    let now = crate::partition::now_ms();
    let delay = configs.file_delete_delay_ms(broker);
    if let Err(e) = partition
        .apply_retention(retention_ms, retention_bytes, now, delay)
        .await
    {
        tracing::warn!(topic = %partition.topic, partition = partition.index, error = %e, "retention failed");
    }
}

#[cfg(test)]
mod tests {
    use super::compactions_at_once;

    /// Goal: `log.cleaner.threads` compactions run at once over the broker,
    /// shared out evenly among the shards, at least one each, whatever the
    /// threads (Kafka allows up to `Int.MaxValue` with enough memory).
    #[test]
    fn cleaner_threads_are_shared_out_among_the_shards() {
        assert_eq!(compactions_at_once(1, 2, 0), (1, 2));
        assert_eq!(compactions_at_once(1, 2, 1), (1, 2));
        assert_eq!(compactions_at_once(4, 2, 0), (2, 4));
        assert_eq!(compactions_at_once(4, 2, 1), (2, 4));
        assert_eq!(compactions_at_once(3, 2, 0), (2, 3));
        assert_eq!(compactions_at_once(3, 2, 1), (1, 3));
        assert_eq!(compactions_at_once(8, 1, 0), (8, 8));
        assert_eq!(compactions_at_once(0, 0, 0), (1, 1));
        let most = usize::try_from(i32::MAX).unwrap();
        assert_eq!(compactions_at_once(i32::MAX, 2, 0), (most / 2 + 1, most));
        assert_eq!(compactions_at_once(i32::MAX, 2, 1), (most / 2, most));
    }
}
