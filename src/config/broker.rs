//! The broker's settings: one struct, built from the command line and
//! validated once at start-up, then shared read-only by every shard.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::topic_config::BrokerDefaults;
use crate::quota::sensors::{WINDOW_MS, WINDOW_SAMPLES};

/// Where a shard's io_uring worker threads (io-wq) may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoWorkerCpus {
    /// On the shard's own CPU, as the kernel does for a pinned thread.
    Shard,
    /// On any of these CPUs.
    Set(Vec<usize>),
}

impl IoWorkerCpus {
    /// The CPUs to ask the kernel for (empty: leave the kernel's default).
    pub fn wanted(&self) -> Vec<usize> {
        match self {
            IoWorkerCpus::Shard => Vec::new(),
            IoWorkerCpus::Set(cpus) => cpus.clone(),
        }
    }

    /// Where the workers end up. Since Linux 6.2 a new thread keeps the
    /// affinity its parent asked for with sched_setaffinity, and the kernel
    /// narrows any later affinity to it unless the two do not overlap: a set
    /// that includes the pinned shard's CPU leaves the workers on that CPU
    /// alone; a set without it is taken as given.
    pub fn effective(&self, shard_cpu: usize) -> Vec<usize> {
        let wanted = self.wanted();
        if wanted.is_empty() || wanted.contains(&shard_cpu) {
            vec![shard_cpu]
        } else {
            wanted
        }
    }
}

/// When produce acknowledgements wait for a sync to disk (`--log-sync`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum FlushPolicy {
    /// acks=all is answered after the data is synced (batched across
    /// requests); acks=1 after the append. The default.
    AcksAll,
    /// Every acknowledged produce (acks=1 and acks=all) waits for a sync.
    Always,
    /// Never wait for a sync before acknowledging (Kafka's own default:
    /// durability comes from replication and the OS page cache).
    Never,
}

/// One listener: where it binds, how its clients authenticate, and the
/// address clients connected to it are given for this broker.
#[derive(Debug, Clone)]
pub struct Listener {
    /// Address bound (`listeners`).
    pub address: SocketAddr,
    /// Security protocol (`listener.security.protocol.map`).
    pub security_protocol: crate::security::SecurityProtocol,
    /// Host given to this listener's clients in Metadata and
    /// FindCoordinator (`advertised.listeners`).
    pub advertised_host: String,
    /// Port given with `advertised_host`.
    pub advertised_port: u16,
}

/// Broker-wide settings, validated. Field names follow Kafka's config names.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id`.
    pub node_id: i32,
    /// The listeners (`listeners`, `advertised.listeners`,
    /// `listener.security.protocol.map`), at least one, each of its own
    /// protocol and port.
    pub listeners: Vec<Listener>,
    /// Mechanisms a SASL listener takes (`sasl.enabled.mechanisms`).
    /// In the order given.
    pub sasl_enabled_mechanisms: Vec<crate::security::SaslMechanism>,
    /// The same, in the order Kafka's SaslHandshake lists them.
    pub sasl_handshake_order: std::sync::Arc<[crate::security::SaslMechanism]>,
    /// PLAIN's users (`listener.name.<listener>.plain.sasl.jaas.config` or
    /// the JAAS file's `KafkaServer` section); empty without PLAIN.
    pub plain_users: std::sync::Arc<crate::security::plain::PlainUsers>,
    /// How OAUTHBEARER tokens are checked; None without OAUTHBEARER.
    pub oauthbearer: Option<std::sync::Arc<crate::security::oauthbearer::Validator>>,
    /// What the TLS of SSL and SASL_SSL listeners is made of: the static
    /// stores (`ssl.keystore.*`, `ssl.truststore.*`), `ssl.client.auth`
    /// (SSL listeners only: Kafka asks for client certificates on SASL_SSL
    /// only when the listener's own `ssl.client.auth` says so), protocols
    /// and suites. None without such a listener.
    pub tls: Option<std::sync::Arc<crate::security::listener_tls::TlsSettings>>,
    /// Each listener's TLS at start-up, by listener index (None for one
    /// that is not SSL or SASL_SSL); each shard keeps its own copy and
    /// reloads it when the listener's stores are configured again.
    pub listener_tls: Vec<Option<crate::security::listener_tls::ListenerTls>>,
    /// `ssl.keystore.location`, when given.
    pub ssl_keystore_location: Option<PathBuf>,
    /// `ssl.truststore.location`, when given.
    pub ssl_truststore_location: Option<PathBuf>,
    /// The type of the keystore read, when given (`ssl.keystore.type`) or
    /// when its contents made it other than Kafka's default (PEM).
    pub ssl_keystore_type: Option<crate::security::keystore::StoreType>,
    /// The same of the truststore.
    pub ssl_truststore_type: Option<crate::security::keystore::StoreType>,
    /// The `ssl.*` configs given that are described as they were given:
    /// passwords (as empty: sensitive ones are never shown), protocols and
    /// cipher suites.
    pub ssl_values: Vec<(&'static str, String)>,
    /// `ssl.client.auth`.
    pub ssl_client_auth: crate::security::tls::ClientAuth,
    /// `ssl.principal.mapping.rules`.
    pub ssl_principal_mapper: crate::security::tls::PrincipalMapper,
    /// SCRAM credentials created at start-up where missing (`--add-scram`).
    pub add_scram: Vec<crate::security::AddScram>,
    /// The authorizer (`authorizer.class.name`, `super.users`,
    /// `allow.everyone.if.no.acl.found`).
    pub authorizer: crate::security::acl::AuthorizerConfig,
    /// `quota.window.num` and `quota.window.size.seconds`: what client
    /// rates are measured over.
    pub quota_window: crate::quota::sensors::QuotaWindow,
    /// `delegation.token.*`.
    pub delegation_tokens: std::sync::Arc<crate::security::delegation_token::TokenConfig>,
    /// `log.dirs` (one directory).
    pub data_dir: PathBuf,
    /// CPUs to run one shard each on.
    pub cpus: Vec<usize>,
    /// Broker-level values of the configs topics inherit (`num.partitions`,
    /// `log.segment.bytes`, `message.max.bytes`, ...).
    pub broker_defaults: BrokerDefaults,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `socket.request.max.bytes`.
    pub socket_request_max_bytes: usize,
    /// `connections.max.idle.ms`.
    pub connections_max_idle_ms: u64,
    /// `connections.max.reauth.ms`: how long a SASL session lasts before
    /// the client must re-authenticate (0: forever).
    pub connections_max_reauth_ms: u64,
    /// The connection limits given at start-up (`max.connections`,
    /// `max.connections.per.ip`, its overrides and
    /// `max.connection.creation.rate`); dynamic ones take their place
    /// (`server::admission::limits_in_force`).
    pub connection_limits: crate::config::dynamic::ConnectionLimits,
    /// The same as given, by config name, for DescribeConfigs.
    pub connection_limit_values: std::collections::BTreeMap<String, String>,
    /// Longest a client may take to send one whole request once it started.
    pub request_read_timeout_ms: u64,
    /// When acks wait for a sync.
    pub flush_policy: FlushPolicy,
    /// Acknowledged produces not waiting for a sync wait for their write.
    pub acks_wait_for_write: bool,
    /// Open-files descriptors each partition is budgeted when topics are
    /// created (0: no budget).
    pub topic_fds_per_partition: u64,
    /// The process's open-files limit once raised at start-up (0: unknown,
    /// until the runtime sets it).
    pub open_files_max: u64,
    /// DMA write buffer per partition log.
    pub write_buffer_bytes: usize,
    /// Largest DMA write buffer a partition log grows to while its buffers fill.
    pub write_buffer_bytes_max: usize,
    /// DMA writes in flight per partition log.
    pub write_behind: usize,
    /// Longest unwaited-for appended data waits for a fuller write.
    pub write_delay_us: u64,
    /// Where each shard's io_uring worker threads run.
    pub io_worker_cpus: IoWorkerCpus,
    /// Bound on each shard's io_uring file-I/O workers (0: kernel default).
    pub io_workers_max: u32,
    /// Scheduler shares of the task queue for connections, produce and
    /// every request not listed below.
    pub produce_shares: u64,
    /// Scheduler shares of the task queue for fetches served by the owning
    /// shard (reads from the in-memory tail).
    pub fetch_shares: u64,
    /// Scheduler shares of the task queue for reads of segment files.
    pub cold_fetch_shares: u64,
    /// Segment file reads in flight per shard; more wait their turn.
    pub cold_reads_max: usize,
    /// How consumers' reads of segment files are sent.
    pub cold_read_path: crate::storage::ColdReadPath,
    /// How spliced file data moves from the pipe to the socket.
    pub splice_to_socket: crate::server::pieces::SpliceToSocket,
    /// How durable appends are synced (one syncfs per shard, or fdatasync
    /// per log).
    pub log_sync: crate::storage::LogSync,
    /// Whether data waited for is written while its log's sync runs.
    pub writes_during_sync: crate::storage::WritesDuringSync,
    /// Scheduler shares of the background task queue.
    pub background_shares: u64,
    /// Threads per shard for blocking file-system calls.
    pub blocking_threads: usize,
    /// Largest zero-fill written ahead of each active segment's tail.
    pub preallocate_bytes: u64,
    /// In-memory tail kept per partition for consumers at the end of the log.
    pub partition_cache_bytes: usize,
    /// Bound on the in-memory tails of all partitions of one shard.
    pub shard_cache_bytes: usize,
    /// Appended-but-unwritten bytes per partition before appends wait.
    pub partition_pending_bytes_max: usize,
    /// io_uring registered memory per shard; None = fit the memlock limit
    /// (at start-up the runtime puts the planned amount here).
    pub io_memory_bytes: Option<usize>,
    /// io_uring ring depth per shard.
    pub ring_depth: usize,
    /// How long a shard spins before parking when idle (0 = never spin).
    pub spin_before_park_us: u64,
    /// A kernel thread polling each shard's main ring (`--sqpoll`; None:
    /// off): the CPU it is bound to (None: the kernel's choice) and how
    /// long it polls without submissions before it sleeps.
    pub sq_poll: Option<glommio::SqPoll>,
    /// How long SIGTERM waits for in-flight requests.
    pub shutdown_timeout_ms: u64,
    /// Where shard 0 serves Prometheus metrics over HTTP; None = off.
    pub metrics_listen: Option<SocketAddr>,
    /// Group coordinator settings.
    pub groups: GroupSettings,
    /// Transaction coordinator settings.
    pub txns: TxnSettings,
    /// Log cleaner settings as started; dynamic values override them.
    pub cleaner: CleanerSettings,
}

/// Settings of the log cleaner (compaction), with Kafka's names. Here each
/// shard compacts its own partitions, so `log.cleaner.threads` compactions
/// at once (at least one a shard) are shared out evenly among the shards:
/// the broker-wide memory is shared among the compactions and the I/O
/// bound among the shards.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerSettings {
    /// `log.cleaner.backoff.ms`: the pause between compaction passes.
    pub log_cleaner_backoff_ms: i64,
    /// `log.cleaner.dedupe.buffer.size`: key-map memory of all cleaners.
    pub log_cleaner_dedupe_buffer_size: i64,
    /// `log.cleaner.io.buffer.load.factor`: how full a key map gets.
    pub log_cleaner_io_buffer_load_factor: f64,
    /// `log.cleaner.io.max.bytes.per.second`: bytes a second all cleaners
    /// read and write at most.
    pub log_cleaner_io_max_bytes_per_second: f64,
    /// `log.cleaner.threads`: compactions that run at once.
    pub log_cleaner_threads: i32,
    /// `log.cleaner.io.buffer.size`: read and write buffer memory of all
    /// cleaners.
    pub log_cleaner_io_buffer_size: i32,
}

impl Default for CleanerSettings {
    fn default() -> Self {
        CleanerSettings {
            log_cleaner_backoff_ms: 15_000,
            log_cleaner_dedupe_buffer_size: 134_217_728,
            log_cleaner_io_buffer_load_factor: 0.9,
            log_cleaner_io_max_bytes_per_second: f64::MAX,
            log_cleaner_threads: 1,
            log_cleaner_io_buffer_size: 524_288,
        }
    }
}

impl CleanerSettings {
    /// The value of cleaner config `name` as Kafka prints it.
    pub fn value_of(&self, name: &str) -> Option<String> {
        Some(match name {
            "log.cleaner.backoff.ms" => self.log_cleaner_backoff_ms.to_string(),
            "log.cleaner.dedupe.buffer.size" => self.log_cleaner_dedupe_buffer_size.to_string(),
            "log.cleaner.threads" => self.log_cleaner_threads.to_string(),
            "log.cleaner.io.buffer.size" => self.log_cleaner_io_buffer_size.to_string(),
            "log.cleaner.io.buffer.load.factor" => {
                crate::config::topic_config::java_double_to_string(
                    self.log_cleaner_io_buffer_load_factor,
                )
            }
            "log.cleaner.io.max.bytes.per.second" => {
                crate::config::topic_config::java_double_to_string(
                    self.log_cleaner_io_max_bytes_per_second,
                )
            }
            _ => return None,
        })
    }
}

/// Settings of the transaction coordinator, with Kafka's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnSettings {
    /// `transaction.state.log.num.partitions`.
    pub transaction_state_log_num_partitions: i32,
    /// `transaction.state.log.segment.bytes`.
    pub transaction_state_log_segment_bytes: i32,
    /// `transaction.max.timeout.ms`.
    pub transaction_max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`.
    pub transactional_id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    pub transaction_remove_expired_transaction_cleanup_interval_ms: i64,
    /// `producer.id.expiration.ms` as started; a dynamic value overrides
    /// it (`Shard::producer_id_expiration_ms`).
    pub producer_id_expiration_ms: i32,
    /// `producer.id.expiration.check.interval.ms`.
    pub producer_id_expiration_check_interval_ms: i32,
    /// `transaction.partition.verification.enable` as started; a dynamic
    /// value overrides it.
    pub transaction_partition_verification_enable: bool,
}

impl Default for TxnSettings {
    fn default() -> Self {
        TxnSettings {
            transaction_state_log_num_partitions: 50,
            transaction_state_log_segment_bytes: 104_857_600,
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            transaction_abort_timed_out_transaction_cleanup_interval_ms: 10_000,
            transaction_remove_expired_transaction_cleanup_interval_ms: 3_600_000,
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
            transaction_partition_verification_enable: true,
        }
    }
}

/// Settings of the group coordinator, with Kafka's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSettings {
    /// `offsets.topic.num.partitions`.
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.segment.bytes`.
    pub offsets_topic_segment_bytes: i32,
    /// `offsets.retention.minutes`.
    pub offsets_retention_minutes: i64,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: i32,
    /// `group.initial.rebalance.delay.ms`.
    pub group_initial_rebalance_delay_ms: i64,
    /// `group.min.session.timeout.ms`.
    pub group_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub group_max_session_timeout_ms: i32,
    /// `group.max.size`.
    pub group_max_size: i32,
    /// `group.consumer.session.timeout.ms` (KIP-848 groups).
    pub group_consumer_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms` (KIP-848 groups).
    pub group_consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.session.timeout.ms`: the least a group config may set.
    pub group_consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms`: the most a group config may set.
    pub group_consumer_max_session_timeout_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`.
    pub group_consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms`.
    pub group_consumer_max_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub group_consumer_max_size: i32,
    /// `group.consumer.migration.policy`, in lower case.
    pub group_consumer_migration_policy: String,
    /// `group.consumer.assignors`: built-in assignor names, comma-separated.
    pub group_consumer_assignors: String,
}

impl GroupSettings {
    /// What group configs are checked against and default to.
    pub fn group_bounds(&self) -> super::group_config::GroupBounds {
        super::group_config::GroupBounds {
            consumer_session_timeout_ms: self.group_consumer_session_timeout_ms,
            consumer_min_session_timeout_ms: self.group_consumer_min_session_timeout_ms,
            consumer_max_session_timeout_ms: self.group_consumer_max_session_timeout_ms,
            consumer_heartbeat_interval_ms: self.group_consumer_heartbeat_interval_ms,
            consumer_min_heartbeat_interval_ms: self.group_consumer_min_heartbeat_interval_ms,
            consumer_max_heartbeat_interval_ms: self.group_consumer_max_heartbeat_interval_ms,
        }
    }
}

impl Default for GroupSettings {
    fn default() -> Self {
        GroupSettings {
            offsets_topic_num_partitions: 50,
            offsets_topic_segment_bytes: 104_857_600,
            offsets_retention_minutes: 10_080,
            offset_metadata_max_bytes: 4096,
            group_initial_rebalance_delay_ms: 3000,
            group_min_session_timeout_ms: 6000,
            group_max_session_timeout_ms: 1_800_000,
            group_max_size: i32::MAX,
            group_consumer_session_timeout_ms: 45_000,
            group_consumer_heartbeat_interval_ms: 5_000,
            group_consumer_min_session_timeout_ms: 45_000,
            group_consumer_max_session_timeout_ms: 60_000,
            group_consumer_min_heartbeat_interval_ms: 5_000,
            group_consumer_max_heartbeat_interval_ms: 15_000,
            group_consumer_max_size: i32::MAX,
            group_consumer_migration_policy: "bidirectional".to_string(),
            group_consumer_assignors: "uniform,range".to_string(),
        }
    }
}

impl BrokerConfig {
    /// The value of broker config `name` when this broker sets it (from a
    /// flag or because the setting is inherent, like `listeners`); None means
    /// Kafka's default applies. Feeds DescribeConfigs' STATIC_BROKER_CONFIG.
    pub fn static_value(&self, name: &str) -> Option<String> {
        let joined = |each: &dyn Fn(&Listener) -> String| {
            self.listeners
                .iter()
                .map(|l| format!("{}://{}", l.security_protocol.name(), each(l)))
                .collect::<Vec<_>>()
                .join(",")
        };
        let listener = joined(&|l| l.address.to_string());
        let advertised = joined(&|l| format!("{}:{}", l.advertised_host, l.advertised_port));
        match name {
            "node.id" | "broker.id" => Some(self.node_id.to_string()),
            "listeners" => Some(listener),
            "advertised.listeners" => Some(advertised),
            "log.dirs" => Some(self.data_dir.display().to_string()),
            "process.roles" => Some("broker,controller".into()),
            "ssl.keystore.location" => self
                .ssl_keystore_location
                .as_ref()
                .map(|p| p.display().to_string()),
            "ssl.keystore.type" => self.ssl_keystore_type.map(|t| t.name().into()),
            "ssl.truststore.location" => self
                .ssl_truststore_location
                .as_ref()
                .map(|p| p.display().to_string()),
            "ssl.truststore.type" => self.ssl_truststore_type.map(|t| t.name().into()),
            name if name.starts_with("ssl.") && name != "ssl.client.auth" => self
                .ssl_values
                .iter()
                .find(|(given, _)| *given == name)
                .map(|(_, value)| value.clone()),
            "ssl.client.auth" if self.ssl_client_auth != crate::security::tls::ClientAuth::None => {
                Some(self.ssl_client_auth.name().into())
            }
            // Kafka's default is GSSAPI, which this broker does not serve.
            "sasl.enabled.mechanisms" => Some(
                self.sasl_enabled_mechanisms
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            name if name.starts_with("sasl.oauthbearer.") => self.oauthbearer_value(name),
            "authorizer.class.name" if self.authorizer.enabled => {
                Some(crate::security::acl::STANDARD_AUTHORIZER.into())
            }
            "super.users" if !self.authorizer.super_users.is_empty() => {
                Some(self.authorizer.super_users.join(";"))
            }
            "allow.everyone.if.no.acl.found" if self.authorizer.allow_everyone_if_no_acl_found => {
                Some("true".into())
            }
            "auto.create.topics.enable" if !self.auto_create_topics_enable => Some("false".into()),
            "delete.topic.enable" if !self.delete_topic_enable => Some("false".into()),
            "socket.request.max.bytes" if self.socket_request_max_bytes != 104_857_600 => {
                Some(self.socket_request_max_bytes.to_string())
            }
            "connections.max.idle.ms" if self.connections_max_idle_ms != 600_000 => {
                Some(self.connections_max_idle_ms.to_string())
            }
            "quota.window.num" if self.quota_window.samples != WINDOW_SAMPLES => {
                Some(self.quota_window.samples.to_string())
            }
            "quota.window.size.seconds" if self.quota_window.window_ms != WINDOW_MS => {
                Some((self.quota_window.window_ms / 1000).to_string())
            }
            // Sensitive: described with no value.
            "delegation.token.secret.key" if self.delegation_tokens.enabled() => {
                Some(String::new())
            }
            "delegation.token.max.lifetime.ms"
                if self.delegation_tokens.max_lifetime_ms
                    != crate::security::delegation_token::MAX_LIFETIME_MS_DEFAULT =>
            {
                Some(self.delegation_tokens.max_lifetime_ms.to_string())
            }
            "delegation.token.expiry.time.ms"
                if self.delegation_tokens.expiry_time_ms
                    != crate::security::delegation_token::EXPIRY_TIME_MS_DEFAULT =>
            {
                Some(self.delegation_tokens.expiry_time_ms.to_string())
            }
            "delegation.token.expiry.check.interval.ms"
                if self.delegation_tokens.expiry_check_interval_ms
                    != crate::security::delegation_token::EXPIRY_CHECK_INTERVAL_MS_DEFAULT =>
            {
                Some(self.delegation_tokens.expiry_check_interval_ms.to_string())
            }
            "connections.max.reauth.ms" if self.connections_max_reauth_ms != 0 => {
                Some(self.connections_max_reauth_ms.to_string())
            }
            _ if self.connection_limit_values.contains_key(name) => {
                self.connection_limit_values.get(name).cloned()
            }
            _ if self.broker_overridden(name) => self.broker_defaults.value_of(name),
            _ => self
                .group_static_value(name)
                .or_else(|| self.txn_static_value(name))
                .or_else(|| {
                    let value = self.cleaner.value_of(name)?;
                    (Some(&value) != CleanerSettings::default().value_of(name).as_ref())
                        .then_some(value)
                }),
        }
    }

    fn txn_static_value(&self, name: &str) -> Option<String> {
        let mine = &self.txns;
        let kafka = TxnSettings::default();
        let pick = |t: &TxnSettings| -> Option<String> {
            Some(match name {
                "transaction.state.log.num.partitions" => {
                    t.transaction_state_log_num_partitions.to_string()
                }
                "transaction.state.log.segment.bytes" => {
                    t.transaction_state_log_segment_bytes.to_string()
                }
                "transaction.max.timeout.ms" => t.transaction_max_timeout_ms.to_string(),
                "transactional.id.expiration.ms" => t.transactional_id_expiration_ms.to_string(),
                "transaction.abort.timed.out.transaction.cleanup.interval.ms" => t
                    .transaction_abort_timed_out_transaction_cleanup_interval_ms
                    .to_string(),
                "transaction.remove.expired.transaction.cleanup.interval.ms" => t
                    .transaction_remove_expired_transaction_cleanup_interval_ms
                    .to_string(),
                "producer.id.expiration.ms" => t.producer_id_expiration_ms.to_string(),
                "producer.id.expiration.check.interval.ms" => {
                    t.producer_id_expiration_check_interval_ms.to_string()
                }
                "transaction.partition.verification.enable" => {
                    t.transaction_partition_verification_enable.to_string()
                }
                _ => return None,
            })
        };
        let value = pick(mine)?;
        (Some(&value) != pick(&kafka).as_ref()).then_some(value)
    }

    fn group_static_value(&self, name: &str) -> Option<String> {
        let mine = &self.groups;
        let kafka = GroupSettings::default();
        let differs = |a: String, b: String| (a != b).then_some(a);
        match name {
            "offsets.topic.num.partitions" => differs(
                mine.offsets_topic_num_partitions.to_string(),
                kafka.offsets_topic_num_partitions.to_string(),
            ),
            "offsets.topic.segment.bytes" => differs(
                mine.offsets_topic_segment_bytes.to_string(),
                kafka.offsets_topic_segment_bytes.to_string(),
            ),
            "offsets.retention.minutes" => differs(
                mine.offsets_retention_minutes.to_string(),
                kafka.offsets_retention_minutes.to_string(),
            ),
            "offset.metadata.max.bytes" => differs(
                mine.offset_metadata_max_bytes.to_string(),
                kafka.offset_metadata_max_bytes.to_string(),
            ),
            "group.initial.rebalance.delay.ms" => differs(
                mine.group_initial_rebalance_delay_ms.to_string(),
                kafka.group_initial_rebalance_delay_ms.to_string(),
            ),
            "group.min.session.timeout.ms" => differs(
                mine.group_min_session_timeout_ms.to_string(),
                kafka.group_min_session_timeout_ms.to_string(),
            ),
            "group.max.session.timeout.ms" => differs(
                mine.group_max_session_timeout_ms.to_string(),
                kafka.group_max_session_timeout_ms.to_string(),
            ),
            "group.max.size" => differs(
                mine.group_max_size.to_string(),
                kafka.group_max_size.to_string(),
            ),
            "group.consumer.session.timeout.ms" => differs(
                mine.group_consumer_session_timeout_ms.to_string(),
                kafka.group_consumer_session_timeout_ms.to_string(),
            ),
            "group.consumer.heartbeat.interval.ms" => differs(
                mine.group_consumer_heartbeat_interval_ms.to_string(),
                kafka.group_consumer_heartbeat_interval_ms.to_string(),
            ),
            "group.consumer.min.session.timeout.ms" => differs(
                mine.group_consumer_min_session_timeout_ms.to_string(),
                kafka.group_consumer_min_session_timeout_ms.to_string(),
            ),
            "group.consumer.max.session.timeout.ms" => differs(
                mine.group_consumer_max_session_timeout_ms.to_string(),
                kafka.group_consumer_max_session_timeout_ms.to_string(),
            ),
            "group.consumer.min.heartbeat.interval.ms" => differs(
                mine.group_consumer_min_heartbeat_interval_ms.to_string(),
                kafka.group_consumer_min_heartbeat_interval_ms.to_string(),
            ),
            "group.consumer.assignors" => differs(
                mine.group_consumer_assignors.clone(),
                kafka.group_consumer_assignors.clone(),
            ),
            "group.consumer.max.size" => differs(
                mine.group_consumer_max_size.to_string(),
                kafka.group_consumer_max_size.to_string(),
            ),
            "group.consumer.migration.policy" => differs(
                mine.group_consumer_migration_policy.clone(),
                kafka.group_consumer_migration_policy.clone(),
            ),
            "group.consumer.max.heartbeat.interval.ms" => differs(
                mine.group_consumer_max_heartbeat_interval_ms.to_string(),
                kafka.group_consumer_max_heartbeat_interval_ms.to_string(),
            ),
            _ => None,
        }
    }

    /// The value of broker config `name` on this node with `dynamic`
    /// layered over it: this node's dynamic value, else the cluster
    /// default's, else [`BrokerConfig::static_value`].
    pub fn value_in_force(
        &self,
        dynamic: &crate::config::dynamic::DynamicBrokerConfigs,
        name: &str,
    ) -> Option<String> {
        dynamic
            .value_on(self.node_id, name)
            .map(str::to_string)
            .or_else(|| self.static_value(name))
    }
    /// The value of a `sasl.oauthbearer.*` config that this broker's
    /// signed-token settings give other than Kafka's default.
    fn oauthbearer_value(&self, name: &str) -> Option<String> {
        let Some(crate::security::oauthbearer::Validator::Signed { options, .. }) =
            self.oauthbearer.as_deref()
        else {
            return None;
        };
        let value = match name {
            "sasl.oauthbearer.jwks.endpoint.url" => options.jwks_endpoint_url.clone(),
            "sasl.oauthbearer.jwks.endpoint.refresh.ms" => {
                options.jwks_refresh.as_millis().to_string()
            }
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms" => {
                options.jwks_retry_backoff.as_millis().to_string()
            }
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms" => {
                options.jwks_retry_backoff_max.as_millis().to_string()
            }
            "sasl.oauthbearer.expected.audience" if !options.expected_audience.is_empty() => {
                options.expected_audience.join(",")
            }
            "sasl.oauthbearer.expected.issuer" => options.expected_issuer.clone()?,
            "sasl.oauthbearer.sub.claim.name" => options.sub_claim.clone(),
            "sasl.oauthbearer.scope.claim.name" => options.scope_claim.clone(),
            "sasl.oauthbearer.clock.skew.seconds" => options.clock_skew_seconds.to_string(),
            _ => return None,
        };
        let default = super::broker_config_table::find_broker_config(name).and_then(|c| c.default);
        (default != Some(value.as_str())).then_some(value)
    }

    /// True when broker config `name` differs from Kafka's default here.
    pub fn broker_overridden(&self, name: &str) -> bool {
        let mine = self.broker_defaults.value_of(name);
        mine.is_some() && mine != BrokerDefaults::default().value_of(name)
    }
}
