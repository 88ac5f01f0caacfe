//! The broker's settings: one struct, built from the command line and
//! validated once at start-up, then shared read-only by every shard.

use std::net::SocketAddr;
use std::path::PathBuf;

/// When produce acknowledgements wait for fdatasync.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum FlushPolicy {
    /// acks=all is answered after the data is fdatasync'd (batched across
    /// requests); acks=1 after the append. The default.
    AcksAll,
    /// Every acknowledged produce (acks=1 and acks=all) waits for fdatasync.
    Always,
    /// Never wait for fdatasync before acknowledging (Kafka's own default:
    /// durability comes from replication and the OS page cache).
    Never,
}

/// Broker-wide settings, validated. Field names follow Kafka's config names.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id`.
    pub node_id: i32,
    /// Address the listener binds (`listeners`).
    pub listen: SocketAddr,
    /// Host and port given to clients in Metadata (`advertised.listeners`).
    pub advertised_host: String,
    /// Port given to clients in Metadata.
    pub advertised_port: u16,
    /// `log.dirs` (one directory).
    pub data_dir: PathBuf,
    /// CPUs to run one shard each on.
    pub cpus: Vec<usize>,
    /// Defaults and broker-level values of topic configs.
    pub topic_defaults: TopicDefaults,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `socket.request.max.bytes`.
    pub socket_request_max_bytes: usize,
    /// `connections.max.idle.ms`.
    pub connections_max_idle_ms: u64,
    /// Longest a client may take to send one whole request once it started.
    pub request_read_timeout_ms: u64,
    /// When acks wait for fdatasync.
    pub flush_policy: FlushPolicy,
    /// DMA write buffer per partition log.
    pub write_buffer_bytes: usize,
    /// DMA writes in flight per partition log.
    pub write_behind: usize,
    /// In-memory tail kept per partition for consumers at the end of the log.
    pub partition_cache_bytes: usize,
    /// Appended-but-unwritten bytes per partition before appends wait.
    pub partition_pending_bytes_max: usize,
    /// io_uring registered memory per shard; None = fit the memlock limit.
    pub io_memory_bytes: Option<usize>,
    /// io_uring ring depth per shard.
    pub ring_depth: usize,
    /// How long a shard spins before parking when idle (0 = never spin).
    pub spin_before_park_us: u64,
    /// How long SIGTERM waits for in-flight requests.
    pub shutdown_timeout_ms: u64,
}

/// Broker-level values that are the defaults of topic configs.
#[derive(Debug, Clone)]
pub struct TopicDefaults {
    /// `num.partitions`.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `log.segment.bytes`.
    pub log_segment_bytes: u64,
    /// `log.roll.ms`.
    pub log_roll_ms: u64,
    /// `log.index.interval.bytes`.
    pub log_index_interval_bytes: u32,
    /// `log.index.size.max.bytes`.
    pub log_index_size_max_bytes: u32,
    /// `message.max.bytes`.
    pub message_max_bytes: i32,
    /// `log.retention.ms`.
    pub log_retention_ms: i64,
    /// `log.retention.bytes`.
    pub log_retention_bytes: i64,
    /// `log.message.timestamp.type`.
    pub log_message_timestamp_type: String,
    /// `log.cleanup.policy`.
    pub log_cleanup_policy: String,
    /// `min.insync.replicas`.
    pub min_insync_replicas: i32,
    /// `compression.type`.
    pub compression_type: String,
}

impl Default for TopicDefaults {
    fn default() -> Self {
        TopicDefaults {
            num_partitions: 1,
            default_replication_factor: 1,
            log_segment_bytes: 1024 * 1024 * 1024,
            log_roll_ms: 7 * 24 * 3600 * 1000,
            log_index_interval_bytes: 4096,
            log_index_size_max_bytes: 10 * 1024 * 1024,
            message_max_bytes: 1_048_588,
            log_retention_ms: 7 * 24 * 3600 * 1000,
            log_retention_bytes: -1,
            log_message_timestamp_type: "CreateTime".into(),
            log_cleanup_policy: "delete".into(),
            min_insync_replicas: 1,
            compression_type: "producer".into(),
        }
    }
}
