//! What DescribeConfigs reports for a BROKER resource: a table of Kafka 4.0 broker configs
//! (name, type, Kafka's default, whether it can change without a restart) and the function
//! that turns the broker's own settings into DescribeConfigs entries.
//!
//! Lives on: any core. The table is `static` and the functions are pure; this is a broker-wide
//! view of one broker's settings.
//!
//! Kafka lists every one of its several hundred broker configs. The table holds every broker
//! config that a topic config inherits from (including the lower-priority synonyms such as
//! `log.retention.hours`), plus the ones operators and tools commonly inspect: identity and
//! listeners, log and retention, replication, groups and offsets, transactions, quotas and
//! limits, and the main security settings. Defaults, types and update modes come from the
//! generated "Broker Configs" page of the Kafka 4.0 documentation; `read_only` is true exactly
//! where that page says "read-only" (`DynamicBrokerConfig.AllDynamicConfigs` does not list it).
//! The documentation strings are our own one-sentence summaries, not Kafka's text.

use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::protocol::StrBytes;

use super::topic_config::{
    broker_synonym_group, canonical_value, config_source, config_synonyms, config_type,
    is_requested, ConfigLayer, Validator,
};

/// One broker config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerConfigDef {
    /// The broker config name, e.g. `log.segment.bytes`.
    pub name: &'static str,
    /// One of the [`config_type`] codes.
    pub config_type: i8,
    /// Kafka's default as DescribeConfigs prints it; `None` where Kafka's default is null or the
    /// config has no default (`node.id`, `process.roles`), which DescribeConfigs shows as a null
    /// value.
    pub default: Option<&'static str>,
    /// A one-sentence description (ours, not Kafka's wording).
    pub documentation: &'static str,
    /// True when Kafka can change the config only by a restart ("read-only" update mode); false
    /// for the per-broker and cluster-wide dynamic configs.
    pub read_only: bool,
}

impl BrokerConfigDef {
    /// Whether the config is a PASSWORD, which DescribeConfigs never reveals.
    pub fn is_sensitive(&self) -> bool {
        self.config_type == config_type::PASSWORD
    }
}

const LONG_MAX: &str = "9223372036854775807";
const INT_MAX: &str = "2147483647";

/// Shorthand constructor so that each table row fits on a few lines.
const fn broker_config(
    name: &'static str,
    config_type: i8,
    default: Option<&'static str>,
    read_only: bool,
    documentation: &'static str,
) -> BrokerConfigDef {
    BrokerConfigDef {
        name,
        config_type,
        default,
        documentation,
        read_only,
    }
}

use config_type::{BOOLEAN, CLASS, DOUBLE, INT, LIST, LONG, PASSWORD, SHORT, STRING};

/// Update mode "read-only": changing the config needs a restart.
const RESTART: bool = true;
/// Update mode "per-broker" or "cluster-wide": Kafka can change the config dynamically.
const DYNAMIC: bool = false;

/// The broker configs, sorted by name. Kept one row per config rather than rustfmt's one line
/// per argument, so the table reads like Kafka's documentation.
#[rustfmt::skip]
static BROKER_CONFIG_DEFS: &[BrokerConfigDef] = &[
    broker_config("add.partitions.to.txn.retry.backoff.max.ms", INT, Some("100"), RESTART,
        "Longest server-side backoff when adding partitions to a transaction."),
    broker_config("add.partitions.to.txn.retry.backoff.ms", INT, Some("20"), RESTART,
        "Server-side backoff between attempts to add a partition to a transaction."),
    broker_config("advertised.listeners", STRING, None, RESTART,
        "Listener addresses published to clients and other brokers when they differ from listeners."),
    broker_config("alter.config.policy.class.name", CLASS, None, RESTART,
        "Class that validates AlterConfigs requests, run on the controller."),
    broker_config("authorizer.class.name", STRING, Some(""), RESTART,
        "Class that authorizes requests; empty means no authorization."),
    broker_config("auto.create.topics.enable", BOOLEAN, Some("true"), RESTART,
        "Whether a topic is created when a client first asks for its metadata or produces to it."),
    broker_config("auto.leader.rebalance.enable", BOOLEAN, Some("true"), RESTART,
        "Whether leadership is periodically moved back to each partition's preferred replica."),
    broker_config("background.threads", INT, Some("10"), DYNAMIC,
        "Threads for background tasks."),
    broker_config("broker.heartbeat.interval.ms", INT, Some("2000"), RESTART,
        "Interval between a broker's heartbeats to the controller."),
    broker_config("broker.id", INT, Some("-1"), RESTART,
        "Id of this broker; in KRaft mode it equals node.id."),
    broker_config("broker.rack", STRING, None, RESTART,
        "Rack of this broker, used to spread replicas across racks."),
    broker_config("broker.session.timeout.ms", INT, Some("9000"), RESTART,
        "How long a broker stays registered without heartbeats."),
    broker_config("compression.gzip.level", INT, Some("-1"), DYNAMIC,
        "Default gzip level for topics stored with gzip."),
    broker_config("compression.lz4.level", INT, Some("9"), DYNAMIC,
        "Default lz4 level for topics stored with lz4."),
    broker_config("compression.type", STRING, Some("producer"), DYNAMIC,
        "Default codec topics store batches in; producer keeps the producer's codec."),
    broker_config("compression.zstd.level", INT, Some("3"), DYNAMIC,
        "Default zstd level for topics stored with zstd."),
    broker_config("connection.failed.authentication.delay.ms", INT, Some("100"), RESTART,
        "Delay before closing a connection whose authentication failed."),
    broker_config("connections.max.idle.ms", LONG, Some("600000"), RESTART,
        "Idle time after which the broker closes a connection."),
    broker_config("connections.max.reauth.ms", LONG, Some("0"), RESTART,
        "Longest session lifetime before a client must re-authenticate; 0 disables the limit."),
    broker_config("controlled.shutdown.enable", BOOLEAN, Some("true"), RESTART,
        "Whether a broker moves its leaderships away before it shuts down."),
    broker_config("controller.listener.names", STRING, None, RESTART,
        "Names of the listeners the controller quorum uses."),
    broker_config("controller.quorum.append.linger.ms", INT, Some("25"), RESTART,
        "How long the quorum leader batches writes before flushing them."),
    broker_config("controller.quorum.bootstrap.servers", LIST, Some(""), RESTART,
        "host:port endpoints used to discover the controller quorum."),
    broker_config("controller.quorum.election.backoff.max.ms", INT, Some("1000"), RESTART,
        "Longest backoff before starting a new controller election."),
    broker_config("controller.quorum.election.timeout.ms", INT, Some("1000"), RESTART,
        "Time without a leader after which a controller election starts."),
    broker_config("controller.quorum.fetch.timeout.ms", INT, Some("2000"), RESTART,
        "Time without a successful fetch from the quorum leader before a voter becomes a candidate."),
    broker_config("controller.quorum.request.timeout.ms", INT, Some("2000"), RESTART,
        "How long a request to the controller quorum may take before it is retried or failed."),
    broker_config("controller.quorum.voters", LIST, Some(""), RESTART,
        "Static quorum voters as id@host:port entries."),
    broker_config("controller.socket.timeout.ms", INT, Some("30000"), RESTART,
        "Socket timeout of controller-to-broker channels."),
    broker_config("create.topic.policy.class.name", CLASS, None, RESTART,
        "Class that validates CreateTopics requests, run on the controller."),
    broker_config("default.replication.factor", INT, Some("1"), RESTART,
        "Replication factor of topics created automatically or with -1 replicas."),
    broker_config("delegation.token.expiry.check.interval.ms", LONG, Some("3600000"), RESTART,
        "Scan interval to remove expired delegation tokens."),
    broker_config("delegation.token.expiry.time.ms", LONG, Some("86400000"), RESTART,
        "How long a delegation token stays valid before it must be renewed."),
    broker_config("delegation.token.max.lifetime.ms", LONG, Some("604800000"), RESTART,
        "Lifetime after which a delegation token can no longer be renewed."),
    broker_config("delegation.token.secret.key", PASSWORD, None, RESTART,
        "Secret used to sign delegation tokens; unset disables them."),
    broker_config("delete.records.purgatory.purge.interval.requests", INT, Some("1"), RESTART,
        "Requests between purges of the DeleteRecords purgatory."),
    broker_config("delete.topic.enable", BOOLEAN, Some("true"), RESTART,
        "Whether topics can be deleted."),
    broker_config("early.start.listeners", STRING, None, RESTART,
        "Listeners that may start before the authorizer is ready."),
    broker_config("fetch.max.bytes", INT, Some("57671680"), RESTART,
        "Most bytes the broker returns for one fetch request."),
    broker_config("fetch.purgatory.purge.interval.requests", INT, Some("1000"), RESTART,
        "Requests between purges of the fetch purgatory."),
    broker_config("group.consumer.assignors", LIST, Some("uniform,range"), RESTART,
        "Server-side assignors of the consumer group protocol; the first is the default."),
    broker_config("group.consumer.heartbeat.interval.ms", INT, Some("5000"), RESTART,
        "Heartbeat interval given to members of consumer-protocol groups."),
    broker_config("group.consumer.max.heartbeat.interval.ms", INT, Some("15000"), RESTART,
        "Longest heartbeat interval allowed for consumer-protocol groups."),
    broker_config("group.consumer.max.session.timeout.ms", INT, Some("60000"), RESTART,
        "Longest session timeout allowed for consumer-protocol groups."),
    broker_config("group.consumer.max.size", INT, Some(INT_MAX), RESTART,
        "Most members a consumer-protocol group may have."),
    broker_config("group.consumer.migration.policy", STRING, Some("bidirectional"), RESTART,
        "Which conversions between classic and consumer-protocol groups are allowed."),
    broker_config("group.consumer.min.heartbeat.interval.ms", INT, Some("5000"), RESTART,
        "Shortest heartbeat interval allowed for consumer-protocol groups."),
    broker_config("group.consumer.min.session.timeout.ms", INT, Some("45000"), RESTART,
        "Shortest session timeout allowed for consumer-protocol groups."),
    broker_config("group.consumer.session.timeout.ms", INT, Some("45000"), RESTART,
        "Session timeout of consumer-protocol group members."),
    broker_config("group.coordinator.append.linger.ms", INT, Some("5"), RESTART,
        "How long the group coordinator batches writes before flushing them."),
    broker_config("group.coordinator.rebalance.protocols", LIST, Some("classic,consumer"), RESTART,
        "Rebalance protocols the group coordinator accepts."),
    broker_config("group.coordinator.threads", INT, Some("4"), RESTART,
        "Threads of the group coordinator."),
    broker_config("group.initial.rebalance.delay.ms", INT, Some("3000"), RESTART,
        "How long a new classic group waits for more members before its first rebalance."),
    broker_config("group.max.session.timeout.ms", INT, Some("1800000"), RESTART,
        "Longest session timeout a classic group member may ask for."),
    broker_config("group.max.size", INT, Some(INT_MAX), RESTART,
        "Most members a classic group may have."),
    broker_config("group.min.session.timeout.ms", INT, Some("6000"), RESTART,
        "Shortest session timeout a classic group member may ask for."),
    broker_config("initial.broker.registration.timeout.ms", INT, Some("60000"), RESTART,
        "How long a starting broker waits to register with the controller before exiting."),
    broker_config("inter.broker.listener.name", STRING, None, RESTART,
        "Listener brokers use to talk to each other."),
    broker_config("leader.imbalance.check.interval.seconds", LONG, Some("300"), RESTART,
        "Interval between checks for leaders away from their preferred replica."),
    broker_config("listener.security.protocol.map", STRING,
        Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"), DYNAMIC,
        "Security protocol of each listener name, as NAME:PROTOCOL pairs."),
    broker_config("listeners", STRING, Some("PLAINTEXT://:9092"), DYNAMIC,
        "Addresses and listener names the broker binds to."),
    broker_config("log.cleaner.backoff.ms", LONG, Some("15000"), DYNAMIC,
        "How long the log cleaner sleeps when no log needs cleaning."),
    broker_config("log.cleaner.dedupe.buffer.size", LONG, Some("134217728"), DYNAMIC,
        "Memory for key deduplication across all cleaner threads."),
    broker_config("log.cleaner.delete.retention.ms", LONG, Some("86400000"), DYNAMIC,
        "Default time delete tombstones are kept in compacted topics."),
    broker_config("log.cleaner.enable", BOOLEAN, Some("true"), RESTART,
        "Whether the log cleaner runs; compacted topics need it."),
    broker_config("log.cleaner.io.buffer.load.factor", DOUBLE, Some("0.9"), DYNAMIC,
        "How full the cleaner's dedupe buffer may become."),
    broker_config("log.cleaner.io.buffer.size", INT, Some("524288"), DYNAMIC,
        "Memory for cleaner I/O buffers across all cleaner threads."),
    broker_config("log.cleaner.io.max.bytes.per.second", DOUBLE, Some("1.7976931348623157E308"), DYNAMIC,
        "Throttle on the cleaner's combined read and write rate."),
    broker_config("log.cleaner.max.compaction.lag.ms", LONG, Some(LONG_MAX), DYNAMIC,
        "Default longest time a message stays ineligible for compaction."),
    broker_config("log.cleaner.min.cleanable.ratio", DOUBLE, Some("0.5"), DYNAMIC,
        "Default share of uncompacted log above which a log is cleaned."),
    broker_config("log.cleaner.min.compaction.lag.ms", LONG, Some("0"), DYNAMIC,
        "Default shortest time a message stays uncompacted."),
    broker_config("log.cleaner.threads", INT, Some("1"), DYNAMIC,
        "Threads of the log cleaner."),
    broker_config("log.cleanup.policy", LIST, Some("delete"), DYNAMIC,
        "Default retention policy for old segments: delete, compact, or both."),
    broker_config("log.dir", STRING, Some("/tmp/kafka-logs"), RESTART,
        "Log directory, used when log.dirs is not set."),
    broker_config("log.dir.failure.timeout.ms", LONG, Some("30000"), RESTART,
        "How long a broker may fail to report a failed log directory before it shuts down."),
    broker_config("log.dirs", STRING, None, RESTART,
        "Comma-separated log directories; unset means log.dir."),
    broker_config("log.flush.interval.messages", LONG, Some(LONG_MAX), DYNAMIC,
        "Default number of messages after which a partition's log is fsynced."),
    broker_config("log.flush.interval.ms", LONG, None, DYNAMIC,
        "Default time after which written data is fsynced; unset means log.flush.scheduler.interval.ms."),
    broker_config("log.flush.offset.checkpoint.interval.ms", INT, Some("60000"), RESTART,
        "Interval between writes of the recovery-point checkpoint."),
    broker_config("log.flush.scheduler.interval.ms", LONG, Some(LONG_MAX), RESTART,
        "Interval at which the flusher looks for logs due to be fsynced."),
    broker_config("log.flush.start.offset.checkpoint.interval.ms", INT, Some("60000"), RESTART,
        "Interval between writes of the log-start-offset checkpoint."),
    broker_config("log.index.interval.bytes", INT, Some("4096"), DYNAMIC,
        "Default number of log bytes between two offset index entries."),
    broker_config("log.index.size.max.bytes", INT, Some("10485760"), DYNAMIC,
        "Default size of each segment's offset index."),
    broker_config("log.local.retention.bytes", LONG, Some("-2"), DYNAMIC,
        "With tiered storage, default local size limit per partition; -2 means log.retention.bytes."),
    broker_config("log.local.retention.ms", LONG, Some("-2"), DYNAMIC,
        "With tiered storage, default local time limit; -2 means log.retention.ms."),
    broker_config("log.message.timestamp.after.max.ms", LONG, Some("3600000"), DYNAMIC,
        "Default for how far a CreateTime timestamp may lie after the broker's clock."),
    broker_config("log.message.timestamp.before.max.ms", LONG, Some(LONG_MAX), DYNAMIC,
        "Default for how far a CreateTime timestamp may lie before the broker's clock."),
    broker_config("log.message.timestamp.type", STRING, Some("CreateTime"), DYNAMIC,
        "Default timestamp type of records: CreateTime or LogAppendTime."),
    broker_config("log.preallocate", BOOLEAN, Some("false"), DYNAMIC,
        "Whether new segment files are preallocated by default."),
    broker_config("log.retention.bytes", LONG, Some("-1"), DYNAMIC,
        "Default size limit of a partition before old segments are deleted; -1 means none."),
    broker_config("log.retention.check.interval.ms", LONG, Some("300000"), RESTART,
        "Interval between checks for segments due for deletion."),
    broker_config("log.retention.hours", INT, Some("168"), RESTART,
        "Default retention time in hours, used when neither log.retention.ms nor .minutes is set."),
    broker_config("log.retention.minutes", INT, None, RESTART,
        "Default retention time in minutes, used when log.retention.ms is not set."),
    broker_config("log.retention.ms", LONG, None, DYNAMIC,
        "Default retention time in milliseconds; -1 means no limit."),
    broker_config("log.roll.hours", INT, Some("168"), RESTART,
        "Default segment roll time in hours, used when log.roll.ms is not set."),
    broker_config("log.roll.jitter.hours", INT, Some("0"), RESTART,
        "Default segment roll jitter in hours, used when log.roll.jitter.ms is not set."),
    broker_config("log.roll.jitter.ms", LONG, None, DYNAMIC,
        "Default largest random amount subtracted from the segment roll time."),
    broker_config("log.roll.ms", LONG, None, DYNAMIC,
        "Default time after which the active segment is rolled."),
    broker_config("log.segment.bytes", INT, Some("1073741824"), DYNAMIC,
        "Default size at which the active segment is rolled."),
    broker_config("log.segment.delete.delay.ms", LONG, Some("60000"), DYNAMIC,
        "Default delay before a deleted segment's files are removed, and the delay before a deleted topic's directories are."),
    broker_config("max.connection.creation.rate", INT, Some(INT_MAX), DYNAMIC,
        "Most new connections per second the broker accepts."),
    broker_config("max.connections", INT, Some(INT_MAX), DYNAMIC,
        "Most connections the broker holds at once."),
    broker_config("max.connections.per.ip", INT, Some(INT_MAX), DYNAMIC,
        "Most connections from one IP address."),
    broker_config("max.connections.per.ip.overrides", STRING, Some(""), DYNAMIC,
        "Per-host exceptions to max.connections.per.ip, as host:count pairs."),
    broker_config("max.incremental.fetch.session.cache.slots", INT, Some("1000"), RESTART,
        "Most incremental fetch sessions the broker keeps."),
    broker_config("max.request.partition.size.limit", INT, Some("2000"), RESTART,
        "Most partitions one request may name."),
    broker_config("message.max.bytes", INT, Some("1048588"), DYNAMIC,
        "Default largest record batch, after compression, that a topic accepts."),
    broker_config("metadata.log.dir", STRING, None, RESTART,
        "Directory of the metadata log; unset means the first log directory."),
    broker_config("metadata.log.max.record.bytes.between.snapshots", LONG, Some("20971520"), RESTART,
        "Metadata log bytes after which a new snapshot is written."),
    broker_config("metadata.log.max.snapshot.interval.ms", LONG, Some("3600000"), RESTART,
        "Longest time before new metadata records are captured in a snapshot."),
    broker_config("metadata.log.segment.bytes", INT, Some("1073741824"), RESTART,
        "Segment size of the metadata log."),
    broker_config("metadata.log.segment.ms", LONG, Some("604800000"), RESTART,
        "Time after which a metadata log segment is rolled."),
    broker_config("metadata.max.idle.interval.ms", INT, Some("500"), RESTART,
        "How often the active controller writes a no-op record to the metadata log."),
    broker_config("metadata.max.retention.bytes", LONG, Some("104857600"), RESTART,
        "Size of metadata log and snapshots above which old ones are deleted."),
    broker_config("metadata.max.retention.ms", LONG, Some("604800000"), RESTART,
        "Age after which metadata log files and snapshots are deleted."),
    broker_config("metric.reporters", LIST, Some("org.apache.kafka.common.metrics.JmxReporter"), DYNAMIC,
        "Classes notified of new metrics."),
    broker_config("metrics.num.samples", INT, Some("2"), RESTART,
        "Samples kept to compute each metric."),
    broker_config("metrics.recording.level", STRING, Some("INFO"), RESTART,
        "Highest level of metrics recorded."),
    broker_config("metrics.sample.window.ms", LONG, Some("30000"), RESTART,
        "Window over which a metrics sample is computed."),
    broker_config("min.insync.replicas", INT, Some("1"), DYNAMIC,
        "Default fewest in-sync replicas an acks=all produce needs."),
    broker_config("node.id", INT, None, RESTART,
        "Id of this node in the KRaft cluster; required."),
    broker_config("num.io.threads", INT, Some("8"), DYNAMIC,
        "Threads that process requests."),
    broker_config("num.network.threads", INT, Some("3"), DYNAMIC,
        "Threads per listener that read requests and write responses."),
    broker_config("num.partitions", INT, Some("1"), RESTART,
        "Default number of partitions of a new topic."),
    broker_config("num.recovery.threads.per.data.dir", INT, Some("2"), DYNAMIC,
        "Threads per log directory for recovery at start-up and flushing at shutdown."),
    broker_config("num.replica.alter.log.dirs.threads", INT, None, RESTART,
        "Threads that move replicas between log directories."),
    broker_config("num.replica.fetchers", INT, Some("1"), DYNAMIC,
        "Fetcher threads per source broker for replication."),
    broker_config("offset.metadata.max.bytes", INT, Some("4096"), RESTART,
        "Largest metadata string stored with a committed offset."),
    broker_config("offsets.commit.timeout.ms", INT, Some("5000"), RESTART,
        "How long an offset commit waits for the offsets topic's replicas."),
    broker_config("offsets.load.buffer.size", INT, Some("5242880"), RESTART,
        "Read batch size when loading the offsets topic."),
    broker_config("offsets.retention.check.interval.ms", LONG, Some("600000"), RESTART,
        "Interval between checks for expired committed offsets."),
    broker_config("offsets.retention.minutes", INT, Some("10080"), RESTART,
        "How long committed offsets of an empty or unsubscribed group are kept."),
    broker_config("offsets.topic.compression.codec", INT, Some("0"), RESTART,
        "Codec id used for the offsets topic."),
    broker_config("offsets.topic.num.partitions", INT, Some("50"), RESTART,
        "Partitions of the offsets topic; fixed after deployment."),
    broker_config("offsets.topic.replication.factor", SHORT, Some("3"), RESTART,
        "Replication factor of the offsets topic."),
    broker_config("offsets.topic.segment.bytes", INT, Some("104857600"), RESTART,
        "Segment size of the offsets topic."),
    broker_config("principal.builder.class", CLASS,
        Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), DYNAMIC,
        "Class that builds the principal used for authorization."),
    broker_config("process.roles", LIST, None, RESTART,
        "Roles of this process: broker, controller, or both."),
    broker_config("producer.id.expiration.ms", INT, Some("86400000"), DYNAMIC,
        "Idle time after which a partition leader forgets a producer id."),
    broker_config("producer.purgatory.purge.interval.requests", INT, Some("1000"), RESTART,
        "Requests between purges of the produce purgatory."),
    broker_config("queued.max.request.bytes", LONG, Some("-1"), RESTART,
        "Queued request bytes above which no more requests are read; -1 means no limit."),
    broker_config("queued.max.requests", INT, Some("500"), RESTART,
        "Queued requests above which network threads stop reading."),
    broker_config("quota.window.num", INT, Some("11"), RESTART,
        "Samples kept for client quotas."),
    broker_config("quota.window.size.seconds", INT, Some("1"), RESTART,
        "Time span of each client quota sample."),
    broker_config("remote.log.storage.system.enable", BOOLEAN, Some("false"), RESTART,
        "Whether tiered storage is enabled on the broker."),
    broker_config("replica.fetch.backoff.ms", INT, Some("1000"), RESTART,
        "Sleep after a replica fetch error."),
    broker_config("replica.fetch.max.bytes", INT, Some("1048576"), RESTART,
        "Bytes a follower asks for per partition."),
    broker_config("replica.fetch.min.bytes", INT, Some("1"), RESTART,
        "Fewest bytes a follower fetch waits for."),
    broker_config("replica.fetch.response.max.bytes", INT, Some("10485760"), RESTART,
        "Bytes a follower asks for per fetch response."),
    broker_config("replica.fetch.wait.max.ms", INT, Some("500"), RESTART,
        "Longest wait of a follower fetch."),
    broker_config("replica.high.watermark.checkpoint.interval.ms", LONG, Some("5000"), RESTART,
        "Interval between writes of the high watermark checkpoint."),
    broker_config("replica.lag.time.max.ms", LONG, Some("30000"), RESTART,
        "Time a follower may lag or stay silent before it leaves the ISR."),
    broker_config("replica.selector.class", STRING, None, RESTART,
        "Class that picks the preferred read replica; unset means the leader."),
    broker_config("replica.socket.receive.buffer.bytes", INT, Some("65536"), RESTART,
        "Socket receive buffer of follower fetch connections."),
    broker_config("replica.socket.timeout.ms", INT, Some("30000"), RESTART,
        "Socket timeout of follower fetch connections."),
    broker_config("request.timeout.ms", INT, Some("30000"), RESTART,
        "How long the broker's own client requests may take."),
    broker_config("sasl.enabled.mechanisms", LIST, Some("GSSAPI"), DYNAMIC,
        "SASL mechanisms the broker accepts."),
    broker_config("sasl.jaas.config", PASSWORD, None, DYNAMIC,
        "JAAS login settings for SASL connections."),
    broker_config("sasl.mechanism.controller.protocol", STRING, Some("GSSAPI"), RESTART,
        "SASL mechanism used to reach the controllers."),
    broker_config("sasl.mechanism.inter.broker.protocol", STRING, Some("GSSAPI"), DYNAMIC,
        "SASL mechanism used between brokers."),
    broker_config("sasl.oauthbearer.clock.skew.seconds", INT, Some("30"), RESTART,
        "How far ahead of the broker's clock a token's not-before time may be."),
    broker_config("sasl.oauthbearer.expected.audience", LIST, None, RESTART,
        "Audiences an OAUTHBEARER token must name one of."),
    broker_config("sasl.oauthbearer.expected.issuer", STRING, None, RESTART,
        "Issuer an OAUTHBEARER token must name."),
    broker_config("sasl.oauthbearer.jwks.endpoint.refresh.ms", LONG, Some("3600000"), RESTART,
        "How often the identity provider's JWKS is fetched again."),
    broker_config("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", LONG, Some("10000"), RESTART,
        "How long a failed JWKS fetch is retried for."),
    broker_config("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", LONG, Some("100"), RESTART,
        "First wait before a failed JWKS fetch is retried."),
    broker_config("sasl.oauthbearer.jwks.endpoint.url", STRING, None, RESTART,
        "Where the keys that sign OAUTHBEARER tokens are published (JWKS)."),
    broker_config("sasl.oauthbearer.scope.claim.name", STRING, Some("scope"), RESTART,
        "Claim of a token that holds its scope."),
    broker_config("sasl.oauthbearer.sub.claim.name", STRING, Some("sub"), RESTART,
        "Claim of a token that names its principal."),
    broker_config("security.inter.broker.protocol", STRING, Some("PLAINTEXT"), RESTART,
        "Security protocol used between brokers."),
    broker_config("socket.connection.setup.timeout.max.ms", LONG, Some("30000"), RESTART,
        "Longest wait for an outgoing connection to be established."),
    broker_config("socket.connection.setup.timeout.ms", LONG, Some("10000"), RESTART,
        "First wait for an outgoing connection to be established."),
    broker_config("socket.listen.backlog.size", INT, Some("50"), RESTART,
        "Most pending connections on a listening socket."),
    broker_config("socket.receive.buffer.bytes", INT, Some("102400"), RESTART,
        "SO_RCVBUF of listening sockets; -1 means the OS default."),
    broker_config("socket.request.max.bytes", INT, Some("104857600"), RESTART,
        "Largest request the broker reads."),
    broker_config("socket.send.buffer.bytes", INT, Some("102400"), RESTART,
        "SO_SNDBUF of listening sockets; -1 means the OS default."),
    broker_config("ssl.allow.dn.changes", BOOLEAN, Some("false"), RESTART,
        "Whether a keystore reloaded at runtime may change the certificate's subject."),
    broker_config("ssl.allow.san.changes", BOOLEAN, Some("false"), RESTART,
        "Whether a keystore reloaded at runtime may drop subject alternative names."),
    broker_config("ssl.cipher.suites", LIST, None, DYNAMIC,
        "TLS cipher suites enabled; all of the enabled protocols' when unset."),
    broker_config("ssl.client.auth", STRING, Some("none"), DYNAMIC,
        "Whether TLS clients must, may or need not present a certificate."),
    broker_config("ssl.enabled.protocols", LIST, Some("TLSv1.2,TLSv1.3"), DYNAMIC,
        "TLS protocol versions enabled."),
    broker_config("ssl.key.password", PASSWORD, None, DYNAMIC,
        "Password of the private key."),
    broker_config("ssl.keystore.certificate.chain", PASSWORD, None, DYNAMIC,
        "Certificate chain of a PEM key store given inline."),
    broker_config("ssl.keystore.key", PASSWORD, None, DYNAMIC,
        "Private key of a PEM key store given inline."),
    broker_config("ssl.keystore.location", STRING, None, DYNAMIC,
        "Path of the key store."),
    broker_config("ssl.keystore.password", PASSWORD, None, DYNAMIC,
        "Password of the key store."),
    broker_config("ssl.keystore.type", STRING, Some("JKS"), DYNAMIC,
        "Format of the key store."),
    broker_config("ssl.principal.mapping.rules", STRING, Some("DEFAULT"), RESTART,
        "Rules mapping a client certificate's subject to its principal name."),
    broker_config("ssl.protocol", STRING, Some("TLSv1.3"), DYNAMIC,
        "TLS protocol used to build the SSL context."),
    broker_config("ssl.truststore.certificates", PASSWORD, None, DYNAMIC,
        "Trusted certificates of a PEM trust store given inline."),
    broker_config("ssl.truststore.location", STRING, None, DYNAMIC,
        "Path of the trust store."),
    broker_config("ssl.truststore.password", PASSWORD, None, DYNAMIC,
        "Password of the trust store."),
    broker_config("ssl.truststore.type", STRING, Some("JKS"), DYNAMIC,
        "Format of the trust store."),
    broker_config("telemetry.max.bytes", INT, Some("1048576"), RESTART,
        "Largest client telemetry push accepted."),
    broker_config("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, Some("10000"), RESTART,
        "Interval between aborts of timed-out transactions."),
    broker_config("transaction.max.timeout.ms", INT, Some("900000"), RESTART,
        "Longest transaction timeout a producer may ask for."),
    broker_config("transaction.partition.verification.enable", BOOLEAN, Some("true"), DYNAMIC,
        "Whether a partition must be added to a transaction before transactional writes to it."),
    broker_config("transaction.remove.expired.transaction.cleanup.interval.ms", INT, Some("3600000"), RESTART,
        "Interval between removals of expired transactional ids."),
    broker_config("transaction.state.log.load.buffer.size", INT, Some("5242880"), RESTART,
        "Read batch size when loading the transaction topic."),
    broker_config("transaction.state.log.min.isr", INT, Some("2"), RESTART,
        "min.insync.replicas of the transaction topic."),
    broker_config("transaction.state.log.num.partitions", INT, Some("50"), RESTART,
        "Partitions of the transaction topic; fixed after deployment."),
    broker_config("transaction.state.log.replication.factor", SHORT, Some("3"), RESTART,
        "Replication factor of the transaction topic."),
    broker_config("transaction.state.log.segment.bytes", INT, Some("104857600"), RESTART,
        "Segment size of the transaction topic."),
    broker_config("transactional.id.expiration.ms", INT, Some("604800000"), RESTART,
        "Idle time after which a transactional id expires."),
    broker_config("unclean.leader.election.enable", BOOLEAN, Some("false"), DYNAMIC,
        "Default for whether a replica outside the ISR may become leader as a last resort."),
];

/// Kafka's internal broker configs (`defineInternal`) that this broker
/// takes: Kafka describes one only while it is set.
static INTERNAL_BROKER_CONFIG_DEFS: &[BrokerConfigDef] = &[broker_config(
    "producer.id.expiration.check.interval.ms",
    INT,
    Some("600000"),
    RESTART,
    "How often partitions look for producer ids past producer.id.expiration.ms.",
)];

/// The broker configs we report, sorted by name.
pub fn broker_config_defs() -> &'static [BrokerConfigDef] {
    BROKER_CONFIG_DEFS
}

/// The broker config called `name`, if the table or the internal ones
/// have it.
pub fn find_broker_config(name: &str) -> Option<&'static BrokerConfigDef> {
    BROKER_CONFIG_DEFS
        .binary_search_by(|def| def.name.cmp(name))
        .ok()
        .map(|index| &BROKER_CONFIG_DEFS[index])
        .or_else(|| {
            INTERNAL_BROKER_CONFIG_DEFS
                .iter()
                .find(|def| def.name == name)
        })
}

/// The DescribeConfigs entries for this broker's BROKER resource, as Kafka 4.0 builds them
/// (`ConfigHelper.createBrokerConfigEntry` with `perBrokerConfig = true`), sorted by name.
///
/// * `layers` give the values set for this broker, highest first, each with its source: the
///   node's dynamic configs, the cluster-wide dynamic defaults, the command line. A config's
///   value and source come from the first layer that sets it; every other config shows Kafka's
///   default (null for null-default configs) with source DEFAULT_CONFIG.
/// * `requested` is the request's `configuration_keys`: `None` or empty lists every config;
///   unknown names are omitted without error, as Kafka does.
/// * PASSWORD configs are sensitive: their value and synonym values are null.
/// * Synonyms follow Kafka's chain (each layer, then default, over the config's synonym group,
///   with entries before the config's own name dropped) and are filled only when
///   `include_synonyms`; documentation only when `include_documentation`.
pub fn describe_broker_configs(
    layers: &[ConfigLayer],
    requested: Option<&[String]>,
    include_synonyms: bool,
    include_documentation: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let default_value = |name: &str| {
        find_broker_config(name)
            .and_then(|def| def.default)
            .map(str::to_string)
    };
    let mut all_layers: Vec<ConfigLayer> = layers.to_vec();
    all_layers.push((config_source::DEFAULT_CONFIG, &default_value));
    let set_internal = INTERNAL_BROKER_CONFIG_DEFS.iter().filter(|def| {
        layers
            .iter()
            .any(|(_, value_of)| value_of(def.name).is_some())
    });
    let mut defs: Vec<&BrokerConfigDef> = BROKER_CONFIG_DEFS.iter().chain(set_internal).collect();
    defs.sort_by_key(|def| def.name);
    defs.into_iter()
        .filter(|def| is_requested(requested, def.name))
        .map(|def| {
            let single = [def.name];
            let group = broker_synonym_group(def.name).unwrap_or(&single);
            let synonyms = config_synonyms(def.name, group, &all_layers, def.is_sensitive());
            let source = synonyms
                .first()
                .map_or(config_source::DEFAULT_CONFIG, |synonym| synonym.source);
            // The value as Kafka's parsed config prints it (`+5` is 5,
            // `TRUE` true); the synonyms keep each layer's text.
            let value = layers
                .iter()
                .find_map(|(_, value_of)| value_of(def.name))
                .map(|raw| {
                    canonical_value(def.name, &raw, def.config_type, Validator::Any).unwrap_or(raw)
                })
                .or_else(|| def.default.map(str::to_string));
            entry(
                def,
                value,
                source,
                synonyms,
                include_synonyms,
                include_documentation,
            )
        })
        .collect()
}

/// The DescribeConfigs entries of the cluster-wide default BROKER resource (named ""): only the
/// configs set there, each with itself as its one synonym, as Kafka lists them.
pub fn describe_default_broker_configs(
    values: &std::collections::BTreeMap<String, String>,
    requested: Option<&[String]>,
    include_synonyms: bool,
    include_documentation: bool,
) -> Vec<DescribeConfigsResourceResult> {
    values
        .iter()
        .filter(|(name, _)| is_requested(requested, name))
        .map(|(name, value)| {
            let source = config_source::DYNAMIC_DEFAULT_BROKER_CONFIG;
            let Some(def) = find_broker_config(name) else {
                let listener_limit = crate::config::dynamic::listener_config(name)
                    .filter(|c| crate::config::dynamic::LISTENER_CONNECTION_LIMITS.contains(c))
                    .and_then(find_broker_config);
                if let Some(def) = listener_limit {
                    // Kafka lists only this layer's value as its synonym.
                    let set = [vec![(source, value)], Vec::new()];
                    let mut entry =
                        listener_config_entry(name, def, &set, &|_| None, include_synonyms);
                    entry.synonyms.truncate(1);
                    return entry;
                }
                return unknown_broker_config_entry(name, &[source], include_synonyms);
            };
            let own = |n: &str| (n == def.name).then(|| value.clone());
            let synonyms =
                config_synonyms(def.name, &[def.name], &[(source, &own)], def.is_sensitive());
            entry(
                def,
                Some(value.clone()),
                source,
                synonyms,
                include_synonyms,
                include_documentation,
            )
        })
        .collect()
}

/// The DescribeConfigs entries, by name, of the broker config names Kafka
/// does not list itself that a node's own dynamic layer (`own`) or the
/// cluster default (`all`) sets, for the node's BROKER resource: a
/// listener's own keystore and truststore configs, and names Kafka does not
/// know. `command_line` gives the static value of a config.
pub fn unknown_broker_configs(
    own: Option<&std::collections::BTreeMap<String, String>>,
    all: Option<&std::collections::BTreeMap<String, String>>,
    command_line: &dyn Fn(&str) -> Option<String>,
    requested: Option<&[String]>,
    include_synonyms: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let layers = [
        (own, config_source::DYNAMIC_BROKER_CONFIG),
        (all, config_source::DYNAMIC_DEFAULT_BROKER_CONFIG),
    ];
    let names: std::collections::BTreeSet<&String> = layers
        .iter()
        .filter_map(|(layer, _)| *layer)
        .flat_map(|layer| layer.keys())
        .filter(|n| find_broker_config(n).is_none() && is_requested(requested, n))
        .collect();
    names
        .into_iter()
        .map(|name| {
            let set: Vec<(i8, &String)> = layers
                .iter()
                .filter_map(|(layer, source)| Some((*source, (*layer)?.get(name)?)))
                .collect();
            let read = crate::config::dynamic::listener_config(name)
                .filter(|c| {
                    crate::security::listener_tls::RECONFIGURABLE_CONFIGS.contains(c)
                        || crate::config::dynamic::LISTENER_CONNECTION_LIMITS.contains(c)
                })
                .and_then(find_broker_config);
            match read {
                Some(def) => {
                    // The config's own dynamic values follow the listener's.
                    let base: Vec<(i8, &String)> = layers
                        .iter()
                        .filter_map(|(layer, source)| Some((*source, (*layer)?.get(def.name)?)))
                        .collect();
                    let set = [set, base];
                    listener_config_entry(name, def, &set, command_line, include_synonyms)
                }
                None => {
                    let sources: Vec<i8> = set.iter().map(|(source, _)| *source).collect();
                    unknown_broker_config_entry(name, &sources, include_synonyms)
                }
            }
        })
        .collect()
}

/// The DescribeConfigs entry of a listener's own value of config `def`
/// (`name`, set in the dynamic layers `set[0]`, highest first; the
/// config's own dynamic values `set[1]`), as Kafka 4.1.1 describes it:
/// the value (null when sensitive), read-only, of the config's type, its
/// synonyms the dynamic values, then the config's own dynamic and static
/// values and default.
fn listener_config_entry(
    name: &str,
    def: &BrokerConfigDef,
    set: &[Vec<(i8, &String)>; 2],
    command_line: &dyn Fn(&str) -> Option<String>,
    include_synonyms: bool,
) -> DescribeConfigsResourceResult {
    use kafka_protocol::messages::describe_configs_response::DescribeConfigsSynonym;
    let sensitive = def.is_sensitive();
    let shown = |value: &str| (!sensitive).then(|| StrBytes::from_string(value.to_string()));
    let synonym = |name: &str, value: &str, source: i8| {
        DescribeConfigsSynonym::default()
            .with_name(StrBytes::from_string(name.to_string()))
            .with_value(shown(value))
            .with_source(source)
    };
    let [set, base] = set;
    let mut synonyms: Vec<DescribeConfigsSynonym> = set
        .iter()
        .map(|(source, value)| synonym(name, value, *source))
        .chain(
            base.iter()
                .map(|(source, value)| synonym(def.name, value, *source)),
        )
        .collect();
    if let Some(value) = command_line(def.name) {
        synonyms.push(synonym(
            def.name,
            &value,
            config_source::STATIC_BROKER_CONFIG,
        ));
    }
    if let Some(value) = def.default {
        synonyms.push(synonym(def.name, value, config_source::DEFAULT_CONFIG));
    }
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(name.to_string()))
        .with_value(set.first().and_then(|(_, value)| shown(value)))
        .with_read_only(true)
        .with_config_source(
            set.first()
                .map_or(config_source::DEFAULT_CONFIG, |(source, _)| *source),
        )
        .with_is_sensitive(sensitive)
        .with_synonyms(if include_synonyms {
            synonyms
        } else {
            Vec::new()
        })
        .with_config_type(def.config_type)
}

/// The DescribeConfigs entry of a broker config name Kafka does not know,
/// set in the dynamic layers `sources` (highest first), as Kafka 4.1.1
/// describes one: read-only, sensitive (its value and its synonyms' values
/// null), of type UNKNOWN, without documentation, its source the highest
/// layer, one synonym per layer.
fn unknown_broker_config_entry(
    name: &str,
    sources: &[i8],
    include_synonyms: bool,
) -> DescribeConfigsResourceResult {
    let synonyms = sources
        .iter()
        .map(|source| {
            kafka_protocol::messages::describe_configs_response::DescribeConfigsSynonym::default()
                .with_name(StrBytes::from_string(name.to_string()))
                .with_value(None)
                .with_source(*source)
        })
        .collect();
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(name.to_string()))
        .with_value(None)
        .with_read_only(true)
        .with_config_source(
            sources
                .first()
                .copied()
                .unwrap_or(config_source::DEFAULT_CONFIG),
        )
        .with_is_sensitive(true)
        .with_synonyms(if include_synonyms {
            synonyms
        } else {
            Vec::new()
        })
        .with_config_type(0)
        .with_documentation(None)
}

/// One DescribeConfigs entry of a broker config.
fn entry(
    def: &BrokerConfigDef,
    value: Option<String>,
    source: i8,
    synonyms: Vec<kafka_protocol::messages::describe_configs_response::DescribeConfigsSynonym>,
    include_synonyms: bool,
    include_documentation: bool,
) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_static_str(def.name))
        .with_value(
            value
                .filter(|_| !def.is_sensitive())
                .map(StrBytes::from_string),
        )
        .with_read_only(def.read_only)
        .with_config_source(source)
        .with_is_sensitive(def.is_sensitive())
        .with_synonyms(if include_synonyms {
            synonyms
        } else {
            Vec::new()
        })
        .with_config_type(def.config_type)
        .with_documentation(
            include_documentation.then(|| StrBytes::from_static_str(def.documentation)),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::topic_config::tests::{entry, synonym_triples};
    use crate::config::topic_config::{
        canonical_value, topic_config_defs, BrokerDefaults, Validator,
    };

    /// Goal: the table can be binary-searched and every default is a value of its type, already
    /// in Kafka's printed form.
    #[test]
    fn table_is_sorted_unique_and_defaults_parse() {
        for pair in broker_config_defs().windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} before {}",
                pair[0].name,
                pair[1].name
            );
        }
        for def in broker_config_defs() {
            assert_eq!(find_broker_config(def.name), Some(def));
            if let Some(default) = def.default {
                let printed = canonical_value(def.name, default, def.config_type, Validator::Any)
                    .unwrap_or_else(|error| panic!("default of {}: {error}", def.name));
                assert_eq!(printed, default, "{} default is not canonical", def.name);
            }
            assert!(!def.documentation.is_empty());
        }
        assert_eq!(find_broker_config("no.such.config"), None);
    }

    /// Goal: every broker config that feeds a topic config is in the table, with the same
    /// default as `BrokerDefaults::default()`, so topic and broker describes agree.
    #[test]
    fn topic_synonyms_are_in_the_table_with_matching_defaults() {
        let kafka_defaults = BrokerDefaults::default();
        for topic_def in topic_config_defs() {
            let Some(primary) = topic_def.broker_synonym else {
                continue;
            };
            let single = [primary];
            for member in broker_synonym_group(primary).unwrap_or(&single) {
                let def = find_broker_config(member).unwrap_or_else(|| {
                    panic!("{member} (for {}) is not in the table", topic_def.name)
                });
                assert_eq!(
                    def.default.map(str::to_string),
                    kafka_defaults.value_of(member),
                    "{member}"
                );
            }
        }
        for name in ["num.partitions", "default.replication.factor"] {
            let def = find_broker_config(name).expect("in table");
            assert_eq!(
                def.default.map(str::to_string),
                kafka_defaults.value_of(name),
                "{name}"
            );
        }
    }

    /// Goal: an unset broker shows Kafka's defaults, sources and flags. Method: describe a
    /// subset with nothing set, including an unknown name, a null default and a password.
    #[test]
    fn unset_configs_show_kafkas_defaults() {
        let requested: Vec<String> = [
            "num.partitions",
            "log.retention.ms",
            "ssl.keystore.password",
            "listeners",
            "bogus",
        ]
        .iter()
        .map(|name| name.to_string())
        .collect();
        let entries = describe_broker_configs(&[], Some(&requested), true, true);
        let names: Vec<&str> = entries.iter().map(|entry| entry.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "listeners",
                "log.retention.ms",
                "num.partitions",
                "ssl.keystore.password"
            ]
        );

        let partitions = entry(&entries, "num.partitions");
        assert_eq!(partitions.value.as_deref(), Some("1"));
        assert_eq!(partitions.config_source, config_source::DEFAULT_CONFIG);
        assert!(partitions.read_only);
        assert_eq!(partitions.config_type, config_type::INT);
        assert!(partitions.documentation.is_some());
        assert_eq!(
            synonym_triples(partitions),
            [(
                "num.partitions".to_string(),
                Some("1".to_string()),
                config_source::DEFAULT_CONFIG
            )]
        );

        let retention = entry(&entries, "log.retention.ms");
        assert_eq!(retention.value, None);
        assert_eq!(retention.config_source, config_source::DEFAULT_CONFIG);
        assert!(!retention.read_only);
        assert!(retention.synonyms.is_empty());

        let password = entry(&entries, "ssl.keystore.password");
        assert!(password.is_sensitive);
        assert_eq!(password.value, None);
        assert_eq!(password.config_type, config_type::PASSWORD);

        assert!(!entry(&entries, "listeners").read_only);
    }

    /// Goal: values set at start-up show as STATIC_BROKER_CONFIG with Kafka's synonym chain.
    /// Method: set `log.retention.ms`, `listeners` and a password, then describe everything.
    #[test]
    fn set_configs_show_as_static_with_synonyms() {
        let set_value = |name: &str| match name {
            "log.retention.ms" => Some("5000".to_string()),
            "listeners" => Some("PLAINTEXT://127.0.0.1:19092".to_string()),
            "sasl.jaas.config" => Some("secret".to_string()),
            _ => None,
        };
        let entries = describe_broker_configs(
            &[(config_source::STATIC_BROKER_CONFIG, &set_value)],
            None,
            true,
            false,
        );
        assert_eq!(entries.len(), broker_config_defs().len());
        assert!(entries.iter().all(|entry| entry.documentation.is_none()));

        let retention = entry(&entries, "log.retention.ms");
        assert_eq!(retention.value.as_deref(), Some("5000"));
        assert_eq!(retention.config_source, config_source::STATIC_BROKER_CONFIG);
        assert_eq!(
            synonym_triples(retention),
            [
                (
                    "log.retention.ms".to_string(),
                    Some("5000".to_string()),
                    config_source::STATIC_BROKER_CONFIG
                ),
                (
                    "log.retention.hours".to_string(),
                    Some("168".to_string()),
                    config_source::DEFAULT_CONFIG
                ),
            ]
        );
        // The hours entry keeps its own value; the milliseconds setting precedes it in the
        // chain and is dropped.
        let hours = entry(&entries, "log.retention.hours");
        assert_eq!(hours.value.as_deref(), Some("168"));
        assert_eq!(hours.config_source, config_source::DEFAULT_CONFIG);
        assert_eq!(
            synonym_triples(hours),
            [(
                "log.retention.hours".to_string(),
                Some("168".to_string()),
                config_source::DEFAULT_CONFIG
            )]
        );

        let listeners = entry(&entries, "listeners");
        assert_eq!(
            listeners.value.as_deref(),
            Some("PLAINTEXT://127.0.0.1:19092")
        );
        assert_eq!(listeners.config_source, config_source::STATIC_BROKER_CONFIG);

        let jaas = entry(&entries, "sasl.jaas.config");
        assert!(jaas.is_sensitive);
        assert_eq!(jaas.value, None);
        assert_eq!(jaas.config_source, config_source::STATIC_BROKER_CONFIG);
        assert_eq!(
            synonym_triples(jaas),
            [(
                "sasl.jaas.config".to_string(),
                None,
                config_source::STATIC_BROKER_CONFIG
            )]
        );

        let without_synonyms = describe_broker_configs(
            &[(config_source::STATIC_BROKER_CONFIG, &set_value)],
            None,
            false,
            false,
        );
        assert!(without_synonyms
            .iter()
            .all(|entry| entry.synonyms.is_empty()));
        assert_eq!(
            entry(&without_synonyms, "log.retention.ms").config_source,
            config_source::STATIC_BROKER_CONFIG
        );
    }
}
