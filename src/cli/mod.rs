//! Command-line interface: `ringbroker serve` with every setting as a flag
//! named after Kafka's config where one exists. Start-up only; `anyhow` is
//! allowed here.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};

use crate::bench::args::{allowed_cpus, parse_cpuset};
use crate::config::dynamic;
use crate::config::{
    BrokerConfig, BrokerDefaults, CleanerSettings, FlushPolicy, GroupSettings, IoWorkerCpus,
    Listener, TxnSettings,
};

/// ringbroker: a Kafka-compatible broker, one shard per core.
#[derive(Debug, Parser)]
#[command(name = "ringbroker", version, about)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a broker.
    Serve(Box<ServeArgs>),
    /// Load-generate against a Kafka broker, or measure the machine's limits.
    Bench(crate::bench::args::BenchArgs),
}

/// Settings of `ringbroker serve`. Kafka's config name is given in brackets.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on for Kafka clients, optionally after its security protocol: PLAINTEXT:// (the default), SASL_PLAINTEXT:// (clients must authenticate with SASL/SCRAM or SASL/PLAIN), SSL:// (TLS; needs --ssl-keystore-location) or SASL_SSL:// (TLS, then SASL); repeat for more listeners, e.g. PLAINTEXT inside and SASL_PLAINTEXT outside [listeners].
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub listen: Vec<String>,
    /// host:port given to the clients of each --listen, in the same order (one per --listen when given); defaults to the listener's own address [advertised.listeners].
    #[arg(long)]
    pub advertised_listen: Vec<String>,
    /// SASL mechanisms SASL_PLAINTEXT and SASL_SSL listeners take, comma-separated: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN (PLAIN needs its users from --plain-sasl-jaas-config or --jaas-config-file), OAUTHBEARER (JWT bearer tokens: signed ones with --sasl-oauthbearer-jwks-endpoint-url, else unsigned ones, which need --oauthbearer-sasl-jaas-config or --jaas-config-file) [sasl.enabled.mechanisms].
    #[arg(long, default_value = "SCRAM-SHA-256,SCRAM-SHA-512")]
    pub sasl_enabled_mechanisms: String,
    /// SASL/PLAIN's users, as Kafka's JAAS login module: 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";' (one user_NAME="PASSWORD" option per user); takes precedence over --jaas-config-file; one list for every SASL listener (Kafka's is per listener) [listener.name.<listener>.plain.sasl.jaas.config].
    #[arg(long)]
    pub plain_sasl_jaas_config: Option<String>,
    /// A JAAS file whose KafkaServer (or <listener>.KafkaServer, for the first SASL listener, e.g. sasl_plaintext.KafkaServer) section's PlainLoginModule names SASL/PLAIN's users for every SASL listener, as Kafka's kafka_server_jaas.conf; keeps passwords off the command line [java.security.auth.login.config].
    #[arg(long)]
    pub jaas_config_file: Option<PathBuf>,
    /// SASL/OAUTHBEARER's JAAS entry, as Kafka's: 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;' with the unsecured validator's options (unsecuredValidatorPrincipalClaimName, unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope, unsecuredValidatorAllowableClockSkewMs); takes precedence over --jaas-config-file's OAuthBearerLoginModule. Without --sasl-oauthbearer-jwks-endpoint-url, OAUTHBEARER takes unsigned tokens (Kafka's default unsecured validator, for development) and needs this entry [listener.name.<listener>.oauthbearer.sasl.jaas.config].
    #[arg(long)]
    pub oauthbearer_sasl_jaas_config: Option<String>,
    /// The identity provider's JWKS: an http(s) URL, fetched at start-up (the broker does not start without it), again every --sasl-oauthbearer-jwks-endpoint-refresh-ms and at once for a key id it has not seen; or a file: URL, read at start-up. With it, OAUTHBEARER takes only tokens signed by one of its keys (Kafka's OAuthBearerValidatorCallbackHandler) [sasl.oauthbearer.jwks.endpoint.url].
    #[arg(long)]
    pub sasl_oauthbearer_jwks_endpoint_url: Option<String>,
    /// How often the JWKS is fetched again [sasl.oauthbearer.jwks.endpoint.refresh.ms].
    #[arg(long, default_value_t = 3_600_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub sasl_oauthbearer_jwks_endpoint_refresh_ms: u64,
    /// The first wait before a failed JWKS fetch is tried again, doubled each time [sasl.oauthbearer.jwks.endpoint.retry.backoff.ms].
    #[arg(long, default_value_t = 100)]
    pub sasl_oauthbearer_jwks_endpoint_retry_backoff_ms: u64,
    /// How long a failed JWKS fetch is tried again for [sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms].
    #[arg(long, default_value_t = 10_000)]
    pub sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms: u64,
    /// Audiences a signed token must name one of (aud), comma-separated; without it, a token that names an audience is refused, as by Kafka [sasl.oauthbearer.expected.audience].
    #[arg(long)]
    pub sasl_oauthbearer_expected_audience: Option<String>,
    /// The issuer (iss) a signed token must name [sasl.oauthbearer.expected.issuer].
    #[arg(long)]
    pub sasl_oauthbearer_expected_issuer: Option<String>,
    /// The claim of a signed token that names its principal [sasl.oauthbearer.sub.claim.name].
    #[arg(long, default_value = "sub")]
    pub sasl_oauthbearer_sub_claim_name: String,
    /// The claim of a signed token that holds its scope [sasl.oauthbearer.scope.claim.name].
    #[arg(long, default_value = "scope")]
    pub sasl_oauthbearer_scope_claim_name: String,
    /// How far a signed token's not-before time (nbf) may be ahead of this broker's clock [sasl.oauthbearer.clock.skew.seconds].
    #[arg(long, default_value_t = 30)]
    pub sasl_oauthbearer_clock_skew_seconds: u32,
    /// Keystore of SSL and SASL_SSL listeners: the server's private key and certificate chain, in a JKS or PKCS12 file (Java's keytool, openssl pkcs12 -export; the first private key entry) or a PEM file (the key unencrypted as PKCS#8, PKCS#1 or SEC1, or encrypted PKCS#8 with --ssl-key-password, and the chain) [ssl.keystore.location].
    #[arg(long)]
    pub ssl_keystore_location: Option<PathBuf>,
    /// Keystore type: JKS (Kafka's default; reads PKCS12 files too, as Java's does), PKCS12 or PEM; unset, a PEM file is read as PEM [ssl.keystore.type].
    #[arg(long)]
    pub ssl_keystore_type: Option<String>,
    /// Password of a JKS or PKCS12 keystore, needed for those; none for PEM (also from the environment variable) [ssl.keystore.password].
    #[arg(long, env = "RINGBROKER_SSL_KEYSTORE_PASSWORD", hide_env_values = true)]
    pub ssl_keystore_password: Option<String>,
    /// The private key of a PEM keystore given inline instead of --ssl-keystore-location, as PEM text (needs --ssl-keystore-type PEM; also from the environment variable) [ssl.keystore.key].
    #[arg(
        long,
        env = "RINGBROKER_SSL_KEYSTORE_KEY",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub ssl_keystore_key: Option<String>,
    /// The certificate chain of a PEM keystore given inline, as PEM text, the server's certificate first (also from the environment variable) [ssl.keystore.certificate.chain].
    #[arg(
        long,
        env = "RINGBROKER_SSL_KEYSTORE_CERTIFICATE_CHAIN",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub ssl_keystore_certificate_chain: Option<String>,
    /// Password of the private key: of a JKS key with one of its own (the keystore password otherwise), or of an encrypted PEM key (also from the environment variable) [ssl.key.password].
    #[arg(long, env = "RINGBROKER_SSL_KEY_PASSWORD", hide_env_values = true)]
    pub ssl_key_password: Option<String>,
    /// How a client certificate's subject becomes its principal on SSL listeners: DEFAULT (the subject as it is) and rules RULE:pattern/replacement/[L|U], tried in order, e.g. 'RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT'; a client no rule applies to is refused [ssl.principal.mapping.rules].
    #[arg(long, default_value = "DEFAULT")]
    pub ssl_principal_mapping_rules: String,
    /// TLS versions served, comma-separated: TLSv1.2 and TLSv1.3 (TLSv1.1 and older are not served, as Java 17 disables them) [ssl.enabled.protocols].
    #[arg(long, default_value = "TLSv1.2,TLSv1.3")]
    pub ssl_enabled_protocols: String,
    /// Cipher suites served, comma-separated, by their IANA (Java) names, e.g. TLS_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384; empty (the default) for every one: TLS 1.3's AES-GCM and CHACHA20 suites and TLS 1.2's ECDHE ones with AES-GCM or CHACHA20. Others Java knows are left out with a warning [ssl.cipher.suites].
    #[arg(long, default_value = "")]
    pub ssl_cipher_suites: String,
    /// Client certificates on SSL listeners: none, requested (a client without one is User:ANONYMOUS) or required; a certificate's subject is the principal, as Java writes it (e.g. User:CN=client,O=acme,C=US). SASL_SSL listeners ask for none [ssl.client.auth].
    #[arg(long, default_value = "none")]
    pub ssl_client_auth: String,
    /// Truststore of the CAs whose client certificates are accepted: the trusted certificate entries of a JKS or PKCS12 file, or every certificate of a PEM file [ssl.truststore.location].
    #[arg(long)]
    pub ssl_truststore_location: Option<PathBuf>,
    /// The CAs of a PEM truststore given inline instead of --ssl-truststore-location, as PEM text (needs --ssl-truststore-type PEM; also from the environment variable) [ssl.truststore.certificates].
    #[arg(
        long,
        env = "RINGBROKER_SSL_TRUSTSTORE_CERTIFICATES",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub ssl_truststore_certificates: Option<String>,
    /// Truststore type: JKS (Kafka's default; reads PKCS12 files too), PKCS12 or PEM; unset, a PEM file is read as PEM [ssl.truststore.type].
    #[arg(long)]
    pub ssl_truststore_type: Option<String>,
    /// Password of a JKS or PKCS12 truststore: a JKS file's integrity is checked with it when given; a PKCS12 file needs it; none for PEM (also from the environment variable) [ssl.truststore.password].
    #[arg(
        long,
        env = "RINGBROKER_SSL_TRUSTSTORE_PASSWORD",
        hide_env_values = true
    )]
    pub ssl_truststore_password: Option<String>,
    /// Let a keystore reloaded at runtime (listener.name.<listener>.ssl.keystore.*) have a certificate of another subject than the one served [ssl.allow.dn.changes].
    #[arg(long)]
    pub ssl_allow_dn_changes: bool,
    /// Let a keystore reloaded at runtime have a certificate without every subject alternative name of the one served [ssl.allow.san.changes].
    #[arg(long)]
    pub ssl_allow_san_changes: bool,
    /// Samples a client's byte and connection rates are measured over [quota.window.num].
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub quota_window_num: u64,
    /// Length of each of those samples, seconds [quota.window.size.seconds].
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub quota_window_size_seconds: u64,
    /// Secret that signs delegation tokens (HMAC-SHA512 of the token id); unset or empty, delegation tokens are disabled and the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED; tokens made under another key get new HMACs, as in Kafka (also from the environment variable) [delegation.token.secret.key].
    #[arg(
        long,
        env = "RINGBROKER_DELEGATION_TOKEN_SECRET_KEY",
        hide_env_values = true
    )]
    pub delegation_token_secret_key: Option<String>,
    /// Longest a delegation token lives; renewals never take it further [delegation.token.max.lifetime.ms].
    #[arg(long, default_value_t = crate::security::delegation_token::MAX_LIFETIME_MS_DEFAULT, value_parser = clap::value_parser!(i64).range(1..))]
    pub delegation_token_max_lifetime_ms: i64,
    /// How long a delegation token is valid before it must be renewed [delegation.token.expiry.time.ms].
    #[arg(long, default_value_t = crate::security::delegation_token::EXPIRY_TIME_MS_DEFAULT, value_parser = clap::value_parser!(i64).range(1..))]
    pub delegation_token_expiry_time_ms: i64,
    /// How often expired delegation tokens are removed [delegation.token.expiry.check.interval.ms].
    #[arg(long, default_value_t = crate::security::delegation_token::EXPIRY_CHECK_INTERVAL_MS_DEFAULT, value_parser = clap::value_parser!(i64).range(1..))]
    pub delegation_token_expiry_check_interval_ms: i64,
    /// A SCRAM credential to create at start-up once: at the first start-up naming that user and mechanism (a credential changed or deleted since stays so), as `kafka-storage format --add-scram`: 'SCRAM-SHA-256=[name=alice,password=alice-secret]' (iterations=N optional, 4096 by default); repeat for more.
    #[arg(long)]
    pub add_scram: Vec<String>,
    /// The authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or 'standard') checks every request against the ACLs kept in the metadata (created with kafka-acls or an admin client); empty (the default) allows everything and the ACL APIs answer SECURITY_DISABLED [authorizer.class.name].
    #[arg(long, default_value = "")]
    pub authorizer_class_name: String,
    /// Principals the authorizer allows everything, ';'-separated, e.g. 'User:admin;User:ANONYMOUS' (PLAINTEXT clients are User:ANONYMOUS) [super.users].
    #[arg(long, default_value = "")]
    pub super_users: String,
    /// Allow everyone on a resource no ACL applies to [allow.everyone.if.no.acl.found].
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_everyone_if_no_acl_found: bool,
    /// Directory holding the partitions' logs and the metadata log [log.dirs].
    #[arg(long, default_value = "./data")]
    pub data_dir: PathBuf,
    /// This broker's id [node.id].
    #[arg(long, default_value_t = 0)]
    pub node_id: i32,
    /// Number of shards (one per core); defaults to every available core.
    #[arg(long, conflicts_with = "cpuset")]
    pub cores: Option<usize>,
    /// CPUs to run shards on, one shard each, e.g. "0-3,6".
    #[arg(long)]
    pub cpuset: Option<String>,
    /// Partitions of an auto-created topic, or of CreateTopics with -1 [num.partitions].
    #[arg(long, default_value_t = 1)]
    pub num_partitions: i32,
    /// Replication factor used when a request gives -1 [default.replication.factor].
    #[arg(long, default_value_t = 1)]
    pub default_replication_factor: i16,
    /// Create unknown topics when clients ask Metadata for them [auto.create.topics.enable].
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub auto_create_topics_enable: bool,
    /// Allow DeleteTopics [delete.topic.enable].
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub delete_topic_enable: bool,
    /// Segment file size at which a new segment is rolled [log.segment.bytes].
    #[arg(long, default_value_t = 1024 * 1024 * 1024)]
    pub log_segment_bytes: u64,
    /// Age at which a new segment is rolled [log.roll.ms].
    #[arg(long, default_value_t = 7 * 24 * 3600 * 1000)]
    pub log_roll_ms: u64,
    /// Each segment rolls up to a random amount below this sooner than its age says, so the segments of many partitions do not all roll at once (0: never) [log.roll.jitter.ms].
    #[arg(long, default_value_t = 0)]
    pub log_roll_jitter_ms: u64,
    /// Bytes between entries of the sparse offset index [log.index.interval.bytes].
    #[arg(long, default_value_t = 4096)]
    pub log_index_interval_bytes: u32,
    /// Largest index file; a segment rolls when its index is full [log.index.size.max.bytes].
    #[arg(long, default_value_t = 10 * 1024 * 1024)]
    pub log_index_size_max_bytes: u32,
    /// Largest record batch accepted [message.max.bytes].
    #[arg(long, default_value_t = 1_048_588)]
    pub message_max_bytes: i32,
    /// Default of the topic config retention.ms: segments whose newest
    /// record is older than this are deleted, oldest first (topics with
    /// cleanup.policy delete; -1: kept forever) [log.retention.ms].
    #[arg(long, default_value_t = 7 * 24 * 3600 * 1000, allow_negative_numbers = true)]
    pub log_retention_ms: i64,
    /// Default of the topic config retention.bytes: the oldest segments of
    /// a partition larger than this are deleted while it stays at least
    /// this large (-1: no size limit) [log.retention.bytes].
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub log_retention_bytes: i64,
    /// How often each shard looks for segments past their topics'
    /// retention.ms and retention.bytes [log.retention.check.interval.ms].
    #[arg(long, default_value_t = 300_000, value_parser = clap::value_parser!(i64).range(1..))]
    pub log_retention_check_interval_ms: i64,
    /// How long a deleted segment's files stay on disk, renamed .deleted, before they are removed (topics without their own file.delete.delay.ms follow it), and how long a deleted topic's partition directories stay, renamed -delete (whatever the topic's own value); also set at runtime [log.segment.delete.delay.ms].
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(i64).range(0..))]
    pub log_segment_delete_delay_ms: i64,
    /// Make each new segment file its topic's segment.bytes long from its creation (sparse, as Kafka does on Linux; cut to its data when it rolls or closes, or by recovery; not --preallocate-bytes's zero-fill); true or false, topics without their own preallocate follow it, also set at runtime [log.preallocate].
    #[arg(long, default_value = "false", value_parser = parse_kafka_bool, action = clap::ArgAction::Set)]
    pub log_preallocate: bool,
    /// Default of the topic config flush.messages: once a partition holds
    /// this many messages not yet synced, the append that reached it waits
    /// for a sync, whatever its acks (1: every append) [log.flush.interval.messages].
    #[arg(long, default_value_t = i64::MAX, value_parser = clap::value_parser!(i64).range(1..))]
    pub log_flush_interval_messages: i64,
    /// Default of the topic config flush.ms: the log flusher syncs a
    /// partition with unsynced messages once this long has passed since its
    /// last sync; unset, it is --log-flush-scheduler-interval-ms
    /// [log.flush.interval.ms].
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
    pub log_flush_interval_ms: Option<i64>,
    /// How often the log flusher looks for partitions whose flush.ms has
    /// passed; the default (Long.MAX_VALUE) never runs it, as in Kafka
    /// [log.flush.scheduler.interval.ms].
    #[arg(long, default_value_t = i64::MAX, value_parser = clap::value_parser!(i64).range(1..))]
    pub log_flush_scheduler_interval_ms: i64,
    /// Codec batches are stored in, for topics without their own: producer (as sent), uncompressed, gzip, snappy, lz4 or zstd [compression.type].
    #[arg(long, default_value = "producer")]
    pub compression_type: String,
    /// Level of gzip where the broker compresses (1-9, -1 for zlib's default) [compression.gzip.level].
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub compression_gzip_level: i32,
    /// Level of lz4 where the broker compresses (1-17) [compression.lz4.level].
    #[arg(long, default_value_t = 9)]
    pub compression_lz4_level: i32,
    /// Level of zstd where the broker compresses (-131072 to 22) [compression.zstd.level].
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    pub compression_zstd_level: i32,
    /// Largest request accepted; larger frames close the connection [socket.request.max.bytes].
    #[arg(long, default_value_t = 100 * 1024 * 1024)]
    pub socket_request_max_bytes: usize,
    /// A connection is closed when it has sent no request for this long, or when its client has taken none of its response bytes for this long (a client that stopped reading); once shutdown begins, such a client gets 1 s [connections.max.idle.ms].
    #[arg(long, default_value_t = 600_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub connections_max_idle_ms: u64,
    /// How long a SASL session lasts (0: forever); clients that support it (KIP-368: Java 2.2+, librdkafka 2.2+) re-authenticate on the same connection before it ends, and a connection whose session has ended is closed at its next request [connections.max.reauth.ms].
    #[arg(long, default_value_t = 0)]
    pub connections_max_reauth_ms: u64,
    /// Connections the broker serves at once, over all listeners; past it a new connection waits, unserved, until one closes (a change at runtime through IncrementalAlterConfigs applies at once) [max.connections].
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub max_connections: Option<i32>,
    /// Connections one IP address may hold; past it new ones from that address are closed at once [max.connections.per.ip].
    #[arg(long, value_parser = clap::value_parser!(i32).range(0..))]
    pub max_connections_per_ip: Option<i32>,
    /// Exceptions to --max-connections-per-ip, as comma-separated host:count pairs; a host is an IP address or a name, applied to the address it resolves to at start-up (one that does not resolve stops the broker) [max.connections.per.ip.overrides].
    #[arg(long)]
    pub max_connections_per_ip_overrides: Option<String>,
    /// New connections a second the broker accepts; past it accepting waits [max.connection.creation.rate].
    #[arg(long, value_parser = clap::value_parser!(i32).range(0..))]
    pub max_connection_creation_rate: Option<i32>,
    /// A request must arrive whole within this long of its first byte (stops slow-loris clients).
    #[arg(long, default_value_t = 30_000)]
    pub request_read_timeout_ms: u64,
    /// When produce acknowledgements wait for a sync to disk (see --log-sync).
    #[arg(long, value_enum, default_value_t = FlushPolicy::AcksAll)]
    pub flush_policy: FlushPolicy,
    /// Answer an acknowledged produce that waits for no sync (acks=1 under
    /// the default --flush-policy) only once its batches are written to the
    /// disk device, so that a broker process killed after the answer still
    /// has them, as Kafka's page cache keeps what Kafka acknowledged. Off
    /// (the default), the answer follows the append into the partition's
    /// write buffer, and a killed process loses what it had not written yet
    /// (under load up to --partition-pending-bytes-max per partition).
    /// Measured on this project's 2-vCPU machine: acks=1 at half the
    /// throughput, each round of a closed-loop client waiting one write.
    #[arg(long)]
    pub acks_wait_for_write: bool,
    /// Open-files descriptors budgeted per partition when topics are
    /// created (CreateTopics and auto-creation): a topic that would bring
    /// this broker's partitions (with room kept for the internal topics
    /// not created yet) past (the open-files limit - 1024, or - a quarter
    /// of it when less) / this is refused with INVALID_PARTITIONS, as
    /// Redpanda refuses topics past its own descriptors-per-partition
    /// budget. Running out of descriptors stops a shard, and every restart
    /// after. The default is a floor: each partition holds a descriptor
    /// per segment file, and one more per segment consumers read through
    /// the splice path, so partitions with many segments need more, as
    /// does a limit shared with many connections. 0: no budget.
    #[arg(long, default_value_t = 1)]
    pub topic_fds_per_partition: u64,
    /// Aligned DMA write buffer per partition, bytes: the first one, and
    /// each one after a buffer that was written before it filled.
    #[arg(long, default_value_t = crate::storage::DEFAULT_WRITE_BUFFER_BYTES)]
    pub write_buffer_bytes: usize,
    /// Largest write buffer per partition, bytes: a partition whose buffer
    /// fills gets the next one twice as large, up to this (fewer, larger
    /// O_DIRECT writes for partitions taking much data; a buffer written
    /// before it filled is followed by one of --write-buffer-bytes).
    /// Default: 512 KiB, or --write-buffer-bytes when that is larger.
    #[arg(long)]
    pub write_buffer_bytes_max: Option<usize>,
    /// DMA writes in flight per partition.
    #[arg(long, default_value_t = 4)]
    pub write_behind: usize,
    /// Longest data that nobody waits for (acks=1 and 0 answered before the
    /// write) stays in a partition's write buffer that is not full, in
    /// microseconds; 0: written as soon as no write of the partition is in
    /// flight. Data an acks=all produce, --acks-wait-for-write, a sync or a
    /// close waits for is written at once (or once the sync in flight ends,
    /// see --writes-during-sync). Fewer, fuller O_DIRECT writes
    /// under load (on ext4 each appending write costs a journalled block
    /// allocation and inode update); a killed process loses what was not
    /// written.
    #[arg(long, default_value_t = crate::storage::DEFAULT_WRITE_DELAY_US)]
    pub write_delay_us: u64,
    /// Zeros written ahead of each active segment's tail in the background,
    /// 256 KiB first, doubling up to this many bytes (0: off, the default).
    /// O_DIRECT writes over blocks the file already has complete inline and
    /// their fdatasync writes no metadata (lower acks=all p50), but the
    /// zero writes compete with fdatasyncs for io_uring's worker threads
    /// (higher p99) and every block is written twice. Leaves up to this
    /// much unused space per active segment until it is closed or
    /// recovered. (Not Kafka's log.preallocate: see --log-preallocate.)
    #[arg(long, default_value_t = 0)]
    pub preallocate_bytes: u64,
    /// In-memory tail of recent batches per partition, bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub partition_cache_bytes: usize,
    /// In-memory tails of all the partitions of one shard together, bytes:
    /// past it, partitions give back the older half of their written tails
    /// in turn, those holding data longest first (consumers then read those
    /// batches from the segment files).
    #[arg(long, default_value_t = 256 * 1024 * 1024)]
    pub shard_cache_bytes: usize,
    /// Appended-but-unwritten bytes per partition before producers wait.
    #[arg(long, default_value_t = 8 * 1024 * 1024)]
    pub partition_pending_bytes_max: usize,
    /// io_uring registered I/O memory per shard, bytes. Default: 10 MiB, or
    /// less where the locked-memory limit (ulimit -l) cannot hold three
    /// registrations of it (one per ring) for every shard; a process with
    /// CAP_IPC_LOCK (root) is not held to that limit.
    #[arg(long)]
    pub io_memory_bytes: Option<usize>,
    /// io_uring ring depth per shard (the kernel allows at most 32768).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=32768))]
    pub ring_depth: u64,
    /// Microseconds a shard spins before parking when idle (0: park at once).
    #[arg(long, default_value_t = 0)]
    pub spin_before_park_us: u64,
    /// Give each shard's main io_uring a kernel thread that polls its
    /// submission queue (IORING_SETUP_SQPOLL): the shard then submits I/O
    /// without a system call while that thread is awake, at the price of a
    /// CPU the thread spins on. Off by default.
    #[arg(long)]
    pub sqpoll: bool,
    /// CPU the SQPOLL threads are bound to (all shards'). Default: the first
    /// allowed CPU no shard runs on, or none (the kernel's choice) when every
    /// CPU runs a shard.
    #[arg(long, requires = "sqpoll")]
    pub sqpoll_cpu: Option<usize>,
    /// Milliseconds without submissions after which an SQPOLL thread sleeps
    /// (the next submission wakes it with a system call).
    #[arg(long, default_value_t = 10, requires = "sqpoll", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub sqpoll_idle_ms: u64,
    /// Threads per shard for blocking file-system calls (creating and
    /// syncing directories and small metadata files, renames); they run on
    /// any allowed CPU. More let partition creation and start-up overlap
    /// their fsyncs.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub blocking_threads: u64,
    /// Scheduler shares of each shard's task queue for connections: reading
    /// and decoding requests, produce appends, and every request that is not
    /// a fetch. A busy shard divides its time among the task queues with
    /// work in proportion to their shares; an idle queue costs nothing.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub produce_shares: u64,
    /// Scheduler shares of each shard's task queue for the fetches it
    /// serves as the partitions' owner (consumers at the tail read from
    /// memory here).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub fetch_shares: u64,
    /// Scheduler shares of each shard's task queue for reads of segment
    /// files (consumers catching up), so they cannot crowd out produce and
    /// tail fetches on the same core.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub cold_fetch_shares: u64,
    /// Segment file reads in flight per shard (each reads up to a fetch's
    /// partition budget, at most 1 MiB at a time); further reads wait. The
    /// partitions of one fetch are read concurrently within this bound.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub cold_reads_max: u64,
    /// How consumers' reads of segment files (below the in-memory tail)
    /// reach the socket. Measured on this project's 2-vCPU machine: equal
    /// on data read for the first time (0.9-1.0x DMA: O_DIRECT-written
    /// segments are not in the page cache), 2.1-2.3x DMA on data read
    /// before (from the page cache), so splice is the default.
    /// read_committed consumers always use DMA reads (the broker parses what
    /// it read to list aborted transactions).
    #[arg(long, value_enum, default_value = "splice")]
    pub cold_read_path: crate::storage::ColdReadPath,
    /// How the splice cold read path moves data from its pipe to the
    /// client's socket. syscall: a non-blocking splice(2) made by the
    /// shard. io-uring: an io_uring splice, run by the shard's io_uring
    /// worker threads (--io-worker-cpus); a full socket ends it at once
    /// (the socket is non-blocking), so a slow client holds no worker.
    #[arg(long, value_enum, default_value = "syscall")]
    pub splice_to_socket: crate::server::pieces::SpliceToSocket,
    /// How appends that wait for durability (acks=all under the default
    /// --flush-policy, flush.messages, group offsets, transaction markers)
    /// are synced. syncfs: one syncfs per shard covers every partition's
    /// writes that completed before it started (one inode write-back and
    /// one device flush for all of them; on this project's 2-vCPU machine 16
    /// files synced in 0.2-0.26 ms vs 0.8-0.9 ms with 16 fdatasyncs). It also
    /// writes back every other dirty page of the data directory's file
    /// system: where other programs write heavily to the same file system,
    /// use fdatasync (one per partition log, as Kafka does). Logs on another
    /// file system than --data-dir always use fdatasync. auto (the default):
    /// syncfs with one shard, fdatasync with several (the shards' syncfs
    /// calls on one file system slowed each other down).
    #[arg(long, value_enum, default_value = "auto")]
    pub log_sync: crate::storage::LogSync,
    /// What happens to data an acks=all produce or --acks-wait-for-write
    /// waits for while its partition's sync runs. hold: it stays in the
    /// write buffer until the sync ends, then goes to the disk in one write
    /// with everything appended meanwhile, covered by the next sync.
    /// overlap: written at once, beside the sync, covered by the next.
    /// auto (the default): overlap. Measured on this project's machines:
    /// on dev-2vcpu-epyc a write issued during a syncfs completed only with
    /// it, so overlapping split the data into one request's worth per sync
    /// (1 shard, 16 partitions acks=all: 65-96 MB/s with overlap, 143-161
    /// with hold, then the default under syncfs); on dev-2vcpu-xeon-b with
    /// 256 KiB batches overlap gave 1.15-1.59x hold at 16 partitions, with
    /// a lower p99. Use hold on a device whose cache flush holds back the
    /// writes issued meanwhile.
    #[arg(long, value_enum, default_value = "auto")]
    pub writes_during_sync: crate::storage::WritesDuringSync,
    /// Scheduler shares of each shard's background task queue (log
    /// compaction, the metrics endpoint): a busy shard gives background work
    /// about shares/(shares + the other queues' shares) of its time, an idle
    /// one all it needs.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub background_shares: u64,
    /// CPUs the kernel's io_uring worker threads of each shard may run on
    /// (they run fdatasync and writes the filesystem will not take inline),
    /// e.g. "0-3"; "shard" keeps them on their shard's own CPU (the kernel's
    /// default for a pinned thread). Default: the CPUs this process may use
    /// that no shard runs on, or the shard's own when every CPU runs a
    /// shard. Linux (6.2 and later) narrows a set that includes the shard's
    /// CPU to that CPU alone, so a set meant to widen it must leave it out;
    /// the start-up log shows where the workers end up.
    #[arg(long)]
    pub io_worker_cpus: Option<String>,
    /// Most io_uring worker threads per shard, of each of the kernel's two
    /// kinds: for regular-file I/O (how many fdatasyncs of different
    /// partitions run at once) and for the rest (segment -> pipe splices
    /// of the splice read path). 0: the kernel's defaults (file I/O can be
    /// as low as 2; the rest is bounded only by RLIMIT_NPROC).
    #[arg(long, default_value_t = 16)]
    pub io_workers_max: u32,
    /// Partitions of the __consumer_offsets topic; fixed once the topic exists [offsets.topic.num.partitions].
    #[arg(long, default_value_t = 50)]
    pub offsets_topic_num_partitions: i32,
    /// Segment size of __consumer_offsets, kept small so compaction runs often [offsets.topic.segment.bytes].
    #[arg(long, default_value_t = 104_857_600)]
    pub offsets_topic_segment_bytes: i32,
    /// Committed offsets of an empty group expire after this long [offsets.retention.minutes].
    #[arg(long, default_value_t = 10_080)]
    pub offsets_retention_minutes: i64,
    /// Largest metadata string of an offset commit [offset.metadata.max.bytes].
    #[arg(long, default_value_t = 4096)]
    pub offset_metadata_max_bytes: i32,
    /// How long the first rebalance of an empty group waits for more members [group.initial.rebalance.delay.ms].
    #[arg(long, default_value_t = 3000)]
    pub group_initial_rebalance_delay_ms: i64,
    /// Smallest session timeout a member may ask for [group.min.session.timeout.ms].
    #[arg(long, default_value_t = 6000)]
    pub group_min_session_timeout_ms: i32,
    /// Largest session timeout a member may ask for [group.max.session.timeout.ms].
    #[arg(long, default_value_t = 1_800_000)]
    pub group_max_session_timeout_ms: i32,
    /// Most members one group may have [group.max.size].
    #[arg(long, default_value_t = i32::MAX)]
    pub group_max_size: i32,
    /// A member of a consumer group (KIP-848 protocol) that sends no heartbeat for this long is removed [group.consumer.session.timeout.ms].
    #[arg(long, default_value_t = 45_000)]
    pub group_consumer_session_timeout_ms: i32,
    /// How often members of a consumer group (KIP-848 protocol) are told to heartbeat [group.consumer.heartbeat.interval.ms].
    #[arg(long, default_value_t = 5_000)]
    pub group_consumer_heartbeat_interval_ms: i32,
    /// Least `consumer.session.timeout.ms` a group config may set; at most --group-consumer-session-timeout-ms [group.consumer.min.session.timeout.ms].
    #[arg(long, default_value_t = 45_000)]
    pub group_consumer_min_session_timeout_ms: i32,
    /// Most `consumer.session.timeout.ms` a group config may set; at least --group-consumer-session-timeout-ms [group.consumer.max.session.timeout.ms].
    #[arg(long, default_value_t = 60_000)]
    pub group_consumer_max_session_timeout_ms: i32,
    /// Least `consumer.heartbeat.interval.ms` a group config may set; at most --group-consumer-heartbeat-interval-ms [group.consumer.min.heartbeat.interval.ms].
    #[arg(long, default_value_t = 5_000)]
    pub group_consumer_min_heartbeat_interval_ms: i32,
    /// Most `consumer.heartbeat.interval.ms` a group config may set; at least --group-consumer-heartbeat-interval-ms [group.consumer.max.heartbeat.interval.ms].
    #[arg(long, default_value_t = 15_000)]
    pub group_consumer_max_heartbeat_interval_ms: i32,
    /// Most members one consumer group (KIP-848 protocol) may have; past it a join gets GROUP_MAX_SIZE_REACHED (at most 10000 here) [group.consumer.max.size].
    #[arg(long, default_value_t = i32::MAX, value_parser = clap::value_parser!(i32).range(1..))]
    pub group_consumer_max_size: i32,
    /// Whether running groups move between protocols: bidirectional, upgrade (classic to consumer only), downgrade (consumer to classic only) or disabled; any case [group.consumer.migration.policy].
    #[arg(long, default_value = "bidirectional", value_parser = parse_migration_policy)]
    pub group_consumer_migration_policy: String,
    /// Server-side assignors consumer-group members may ask for, the first the default: uniform, range, or Kafka's class names for them [group.consumer.assignors].
    #[arg(long, default_value = "uniform,range", value_parser = parse_assignors)]
    pub group_consumer_assignors: String,
    /// Partitions of the __transaction_state topic; fixed once the topic exists [transaction.state.log.num.partitions].
    #[arg(long, default_value_t = 50)]
    pub transaction_state_log_num_partitions: i32,
    /// Segment size of __transaction_state [transaction.state.log.segment.bytes].
    #[arg(long, default_value_t = 104_857_600)]
    pub transaction_state_log_segment_bytes: i32,
    /// Longest transaction timeout a producer may ask for [transaction.max.timeout.ms].
    #[arg(long, default_value_t = 900_000)]
    pub transaction_max_timeout_ms: i32,
    /// A transactional id unused this long is forgotten [transactional.id.expiration.ms].
    #[arg(long, default_value_t = 604_800_000)]
    pub transactional_id_expiration_ms: i64,
    /// How often transactions past their timeout are looked for and aborted [transaction.abort.timed.out.transaction.cleanup.interval.ms].
    #[arg(long, default_value_t = 10_000)]
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: i64,
    /// How often expired transactional ids are looked for and removed [transaction.remove.expired.transaction.cleanup.interval.ms].
    #[arg(long, default_value_t = 3_600_000)]
    pub transaction_remove_expired_transaction_cleanup_interval_ms: i64,
    /// A partition forgets an idempotent producer whose last batch is this old (by its timestamp) and whose transaction is not open; also set at runtime [producer.id.expiration.ms].
    #[arg(long, default_value_t = 86_400_000, value_parser = clap::value_parser!(i32).range(1..))]
    pub producer_id_expiration_ms: i32,
    /// How often partitions look for producers past --producer-id-expiration-ms [producer.id.expiration.check.interval.ms].
    #[arg(long, default_value_t = 600_000, value_parser = clap::value_parser!(i32).range(1..))]
    pub producer_id_expiration_check_interval_ms: i32,
    /// Whether transactional writes (produce below v12, TxnOffsetCommit below v5) are refused unless the coordinator has their partition in the open transaction; true or false, also set at runtime [transaction.partition.verification.enable].
    #[arg(long, default_value = "true", value_parser = parse_kafka_bool, action = clap::ArgAction::Set)]
    pub transaction_partition_verification_enable: bool,
    /// Pause between compaction passes; also set at runtime [log.cleaner.backoff.ms].
    #[arg(long, default_value_t = 15_000, value_parser = clap::value_parser!(i64).range(0..))]
    pub log_cleaner_backoff_ms: i64,
    /// Key-map memory of all compactions at once, shared evenly among them; more than 1 MiB a cleaner thread; also set at runtime [log.cleaner.dedupe.buffer.size].
    #[arg(long, default_value_t = 134_217_728)]
    pub log_cleaner_dedupe_buffer_size: i64,
    /// Compactions that run at once, shared evenly among the shards (each shard runs at least one); also set at runtime, to within half and double the value in force [log.cleaner.threads].
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(0..))]
    pub log_cleaner_threads: i32,
    /// Read-buffer memory of all compactions at once: each reads its segments half its share at a time (a batch larger is read whole); also set at runtime [log.cleaner.io.buffer.size].
    #[arg(long, default_value_t = 524_288, value_parser = clap::value_parser!(i32).range(0..))]
    pub log_cleaner_io_buffer_size: i32,
    /// How full a compaction's key map gets before it cleans what it mapped; also set at runtime [log.cleaner.io.buffer.load.factor].
    #[arg(long, default_value_t = 0.9)]
    pub log_cleaner_io_buffer_load_factor: f64,
    /// Bytes a second all compactions read and write at most, shared evenly among the shards; also set at runtime [log.cleaner.io.max.bytes.per.second].
    #[arg(long, default_value = "1.7976931348623157E308")]
    pub log_cleaner_io_max_bytes_per_second: f64,
    /// Serve Prometheus metrics over HTTP on this address from shard 0 (GET /metrics); off when not given.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// Milliseconds SIGTERM waits for in-flight requests before closing.
    #[arg(long, default_value_t = 10_000)]
    pub shutdown_timeout_ms: u64,
}

/// One `--listen` (and its `--advertised-listen`, if given) as a listener.
fn listener(listen: &str, advertised: Option<&String>) -> anyhow::Result<Listener> {
    let (security_protocol, address) = crate::security::split_listener(listen)
        .map_err(|e| anyhow::anyhow!("--listen {listen:?}: {e}"))?;
    let bound: SocketAddr = address
        .to_socket_addrs()
        .with_context(|| format!("--listen {listen:?} is not host:port"))?
        .next()
        .with_context(|| format!("--listen {listen:?} resolves to nothing"))?;
    let advertised = match advertised {
        Some(advertised) => {
            let (protocol, address) = crate::security::split_listener(advertised)
                .map_err(|e| anyhow::anyhow!("--advertised-listen {advertised:?}: {e}"))?;
            if advertised.contains("://") && protocol != security_protocol {
                bail!(
                    "--advertised-listen {advertised:?} is {} but its --listen {listen:?} is {}",
                    protocol.name(),
                    security_protocol.name()
                );
            }
            address.to_string()
        }
        None => address.to_string(),
    };
    let (advertised_host, advertised_port) = advertised
        .rsplit_once(':')
        .with_context(|| format!("advertised listener {advertised:?} is not host:port"))?;
    let mut advertised_port: u16 = advertised_port
        .parse()
        .with_context(|| format!("bad port in {advertised:?}"))?;
    if advertised_port == 0 {
        advertised_port = bound.port();
    }
    Ok(Listener {
        address: bound,
        security_protocol,
        advertised_host: advertised_host.trim_matches(['[', ']']).to_string(),
        advertised_port,
    })
}

impl ServeArgs {
    /// `--write-buffer-bytes-max`, or its default: 512 KiB, or
    /// `--write-buffer-bytes` when that is larger.
    fn write_buffer_bytes_max(&self) -> usize {
        self.write_buffer_bytes_max.unwrap_or(
            self.write_buffer_bytes
                .max(crate::storage::DEFAULT_WRITE_BUFFER_BYTES_MAX),
        )
    }

    /// The TLS of each listener (None for one that is not SSL or
    /// SASL_SSL), what it is made of (None without such a listener), and
    /// the types of the keystore and truststore read.
    #[allow(clippy::type_complexity)]
    fn tls(
        &self,
        listeners: &[crate::config::broker::Listener],
        client_auth: crate::security::tls::ClientAuth,
    ) -> anyhow::Result<(
        Option<std::sync::Arc<crate::security::listener_tls::TlsSettings>>,
        Vec<Option<crate::security::listener_tls::ListenerTls>>,
        SslStoreTypes,
    )> {
        use crate::security::keystore::StoreType;
        use crate::security::listener_tls::{build, load, FileTimes, StoreSettings, TlsSettings};
        for (flag, given) in [
            ("--ssl-keystore-type", &self.ssl_keystore_type),
            ("--ssl-truststore-type", &self.ssl_truststore_type),
        ] {
            if let Some(Err(e)) = given.as_deref().map(StoreType::parse) {
                bail!("{flag} {e}");
            }
        }
        // As in Kafka, SSL settings are read only for SSL and SASL_SSL
        // listeners.
        let Some(tls_listener) = listeners.iter().find(|l| l.security_protocol.is_tls()) else {
            if self.ssl_keystore_location.is_some() || self.ssl_keystore_key.is_some() {
                tracing::warn!("a keystore is given but no listener is SSL or SASL_SSL");
            }
            return Ok((None, vec![None; listeners.len()], SslStoreTypes::default()));
        };
        let path = |flag: &str, p: &Option<PathBuf>| -> anyhow::Result<Option<String>> {
            p.as_ref()
                .map(|p| {
                    p.to_str()
                        .map(str::to_string)
                        .ok_or_else(|| anyhow::anyhow!("{flag} {}: not UTF-8", p.display()))
                })
                .transpose()
        };
        let mut stores = StoreSettings::default();
        for (name, value) in [
            (
                "ssl.keystore.location",
                path("--ssl-keystore-location", &self.ssl_keystore_location)?,
            ),
            ("ssl.keystore.type", self.ssl_keystore_type.clone()),
            ("ssl.keystore.password", self.ssl_keystore_password.clone()),
            ("ssl.keystore.key", self.ssl_keystore_key.clone()),
            (
                "ssl.keystore.certificate.chain",
                self.ssl_keystore_certificate_chain.clone(),
            ),
            ("ssl.key.password", self.ssl_key_password.clone()),
            (
                "ssl.truststore.location",
                path("--ssl-truststore-location", &self.ssl_truststore_location)?,
            ),
            ("ssl.truststore.type", self.ssl_truststore_type.clone()),
            (
                "ssl.truststore.password",
                self.ssl_truststore_password.clone(),
            ),
            (
                "ssl.truststore.certificates",
                self.ssl_truststore_certificates.clone(),
            ),
        ] {
            stores.set(name, value);
        }
        let flag = |name: &str| format!("--{}", name.replace('.', "-"));
        let no_keystore = || {
            format!(
            "--listen {}://{} needs --ssl-keystore-location (a JKS, PKCS12 or PEM file with the private key and certificate chain) or --ssl-keystore-type PEM with --ssl-keystore-key and --ssl-keystore-certificate-chain",
            tls_listener.security_protocol.name(),
            tls_listener.address
        )
        };
        let list = |text: &str| -> Vec<String> {
            text.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_string)
                .collect()
        };
        // Read once for every TLS listener, and before the protocols are
        // checked, as they were first.
        let times = FileTimes::of(&stores);
        let read = load(&stores, &flag, &no_keystore).map_err(anyhow::Error::msg)?;
        let types = SslStoreTypes {
            keystore: read.keystore_type,
            truststore: read.truststore_type,
        };
        let (protocols, warnings) = crate::security::tls::Protocols::parse(
            &list(&self.ssl_enabled_protocols),
            &list(&self.ssl_cipher_suites),
        )
        .map_err(|e| anyhow::anyhow!("--ssl-enabled-protocols, --ssl-cipher-suites: {e}"))?;
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        let settings = std::sync::Arc::new(TlsSettings {
            stores,
            client_auth,
            protocols,
            allow_dn_changes: self.ssl_allow_dn_changes,
            allow_san_changes: self.ssl_allow_san_changes,
        });
        let mut served = Vec::with_capacity(listeners.len());
        for listener in listeners {
            let sasl = match listener.security_protocol {
                crate::security::SecurityProtocol::Ssl => false,
                crate::security::SecurityProtocol::SaslSsl => true,
                _ => {
                    served.push(None);
                    continue;
                }
            };
            let tls =
                build(&settings, settings.stores.clone(), times, &read, sasl).map_err(|e| {
                    anyhow::anyhow!("--ssl-keystore-location, --ssl-truststore-location: {e}")
                })?;
            served.push(Some(tls));
        }
        Ok((Some(settings), served, types))
    }

    /// The login modules of a mechanism's JAAS configuration: its
    /// listener property (`property`, given as `flag`), else the
    /// `--jaas-config-file`'s server section; None without either.
    /// Kafka's listener-prefixed JAAS section is that of the listener; here
    /// every SASL listener shares the first's.
    fn jaas_modules(
        &self,
        property: Option<&str>,
        flag: &str,
        listeners: &[crate::config::broker::Listener],
    ) -> anyhow::Result<Option<Vec<crate::security::plain::LoginModule>>> {
        use crate::security::plain;
        let sasl_listener = listeners.iter().find(|l| l.security_protocol.is_sasl());
        let protocol_name = sasl_listener.map_or("SASL_PLAINTEXT", |l| l.security_protocol.name());
        if let Some(text) = property {
            let module =
                plain::parse_jaas_config(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
            return Ok(Some(vec![module]));
        }
        let Some(path) = &self.jaas_config_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--jaas-config-file: cannot read {}", path.display()))?;
        plain::parse_jaas_file(&text, protocol_name)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("--jaas-config-file {}: {e}", path.display()))
    }

    /// PLAIN's users, from `--plain-sasl-jaas-config`, else from
    /// `--jaas-config-file`, as Kafka's `JaasContext.loadServerContext`
    /// prefers the listener's property to the JAAS file.
    fn plain_users(
        &self,
        mechanisms: &[crate::security::SaslMechanism],
        listeners: &[crate::config::broker::Listener],
    ) -> anyhow::Result<std::sync::Arc<crate::security::plain::PlainUsers>> {
        use crate::security::{plain, SaslMechanism};
        let sasl_listener = listeners.iter().find(|l| l.security_protocol.is_sasl());
        let modules = self
            .jaas_modules(
                self.plain_sasl_jaas_config.as_deref(),
                "--plain-sasl-jaas-config",
                listeners,
            )?
            .unwrap_or_default();
        let wanted = mechanisms.contains(&SaslMechanism::Plain) && sasl_listener.is_some();
        if !wanted {
            if modules.iter().any(|m| m.class == plain::PLAIN_LOGIN_MODULE) {
                tracing::warn!("a JAAS configuration is given but no SASL listener takes PLAIN (--sasl-enabled-mechanisms); its users are not used");
            }
            return Ok(Default::default());
        }
        if modules.is_empty() {
            bail!(
                "PLAIN is enabled (--sasl-enabled-mechanisms) but no JAAS configuration names its users: give --plain-sasl-jaas-config '{} required user_NAME=\"PASSWORD\";' or --jaas-config-file",
                plain::PLAIN_LOGIN_MODULE
            );
        }
        let users = plain::PlainUsers::from_modules(&modules).map_err(|e| anyhow::anyhow!(e))?;
        if users.is_empty() {
            tracing::warn!("the PlainLoginModule names no user (user_NAME=\"PASSWORD\"): every PLAIN login will fail");
        }
        Ok(std::sync::Arc::new(users))
    }

    /// How OAUTHBEARER tokens are checked, when a SASL listener takes them:
    /// signed ones with the keys of `--sasl-oauthbearer-jwks-endpoint-url`
    /// (fetched now), else unsigned ones, with the options of the
    /// `OAuthBearerLoginModule` entry of `--oauthbearer-sasl-jaas-config`
    /// or `--jaas-config-file`, which Kafka requires too.
    fn oauthbearer(
        &self,
        mechanisms: &[crate::security::SaslMechanism],
        listeners: &[crate::config::broker::Listener],
    ) -> anyhow::Result<Option<std::sync::Arc<crate::security::oauthbearer::Validator>>> {
        use crate::security::oauthbearer::{self, SignedOptions, UnsecuredOptions, Validator};
        use crate::security::SaslMechanism;
        let sasl_listener = listeners.iter().find(|l| l.security_protocol.is_sasl());
        if !mechanisms.contains(&SaslMechanism::OAuthBearer) || sasl_listener.is_none() {
            if self.sasl_oauthbearer_jwks_endpoint_url.is_some()
                || self.oauthbearer_sasl_jaas_config.is_some()
            {
                tracing::warn!("OAUTHBEARER settings are given but no SASL listener takes OAUTHBEARER (--sasl-enabled-mechanisms); they are not used");
            }
            return Ok(None);
        }
        if let Some(url) = &self.sasl_oauthbearer_jwks_endpoint_url {
            let options = SignedOptions {
                jwks_endpoint_url: url.clone(),
                jwks_refresh: std::time::Duration::from_millis(
                    self.sasl_oauthbearer_jwks_endpoint_refresh_ms,
                ),
                jwks_retry_backoff: std::time::Duration::from_millis(
                    self.sasl_oauthbearer_jwks_endpoint_retry_backoff_ms,
                ),
                jwks_retry_backoff_max: std::time::Duration::from_millis(
                    self.sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms,
                ),
                expected_audience: self
                    .sasl_oauthbearer_expected_audience
                    .iter()
                    .flat_map(|list| list.split(','))
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect(),
                expected_issuer: self
                    .sasl_oauthbearer_expected_issuer
                    .as_deref()
                    .map(str::trim)
                    .filter(|i| !i.is_empty())
                    .map(str::to_string),
                sub_claim: self.sasl_oauthbearer_sub_claim_name.trim().to_string(),
                scope_claim: self.sasl_oauthbearer_scope_claim_name.trim().to_string(),
                clock_skew_seconds: i64::from(self.sasl_oauthbearer_clock_skew_seconds),
            };
            if options.sub_claim.is_empty() || options.scope_claim.is_empty() {
                bail!("--sasl-oauthbearer-sub-claim-name and --sasl-oauthbearer-scope-claim-name must not be empty");
            }
            let keys = oauthbearer::key_source(&options)
                .map_err(|e| anyhow::anyhow!("--sasl-oauthbearer-jwks-endpoint-url: {e}"))?;
            tracing::info!(url = %options.jwks_endpoint_url, keys = keys.current().keys.len(), "OAUTHBEARER takes tokens signed by the JWKS's keys");
            return Ok(Some(std::sync::Arc::new(Validator::Signed {
                options,
                keys,
            })));
        }
        let modules = self.jaas_modules(
            self.oauthbearer_sasl_jaas_config.as_deref(),
            "--oauthbearer-sasl-jaas-config",
            listeners,
        )?;
        let Some(modules) = modules else {
            bail!(
                "OAUTHBEARER is enabled (--sasl-enabled-mechanisms) without --sasl-oauthbearer-jwks-endpoint-url, so it would take unsigned tokens, and no JAAS configuration says so: give --sasl-oauthbearer-jwks-endpoint-url, or --oauthbearer-sasl-jaas-config '{} required;' (or --jaas-config-file) to take unsigned tokens, as Kafka's default validator does",
                oauthbearer::OAUTHBEARER_LOGIN_MODULE
            );
        };
        let options = UnsecuredOptions::from_modules(&modules).map_err(|e| anyhow::anyhow!(e))?;
        tracing::warn!("OAUTHBEARER takes unsigned tokens (Kafka's unsecured validator): anyone can log in as anyone; give --sasl-oauthbearer-jwks-endpoint-url outside development");
        Ok(Some(std::sync::Arc::new(Validator::Unsecured(options))))
    }

    /// Validates the flags into a [`BrokerConfig`].
    ///
    /// # Errors
    /// A message naming the flag that is wrong.
    pub fn into_config(self) -> anyhow::Result<BrokerConfig> {
        let sasl_enabled_mechanisms =
            crate::security::parse_mechanisms(&self.sasl_enabled_mechanisms)
                .map_err(|e| anyhow::anyhow!("--sasl-enabled-mechanisms: {e}"))?;
        let add_scram = self
            .add_scram
            .iter()
            .map(|text| {
                crate::security::parse_add_scram(text)
                    .map_err(|e| anyhow::anyhow!("--add-scram {text:?}: {e}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let authorizer = crate::security::acl::AuthorizerConfig {
            enabled: match self.authorizer_class_name.trim() {
                "" => false,
                crate::security::acl::STANDARD_AUTHORIZER | "standard" => true,
                other => bail!(
                    "--authorizer-class-name {other:?}: the authorizer this broker has is {} (or 'standard')",
                    crate::security::acl::STANDARD_AUTHORIZER
                ),
            },
            super_users: crate::security::acl::parse_super_users(&self.super_users)
                .map_err(|e| anyhow::anyhow!("--super-users: {e}"))?,
            allow_everyone_if_no_acl_found: self.allow_everyone_if_no_acl_found,
        };
        if !self.advertised_listen.is_empty() && self.advertised_listen.len() != self.listen.len() {
            bail!(
                "--advertised-listen is given {} times for {} --listen; give one per listener, in the same order",
                self.advertised_listen.len(),
                self.listen.len()
            );
        }
        let mut listeners = Vec::with_capacity(self.listen.len());
        for (index, text) in self.listen.iter().enumerate() {
            listeners.push(listener(text, self.advertised_listen.get(index))?);
        }
        // As Kafka checks `listeners`: one listener per name (here, per
        // protocol), and each on a port of its own, but for one IPv4 and one
        // IPv6 listener sharing a port.
        for (index, listener) in listeners.iter().enumerate() {
            for earlier in &listeners[..index] {
                if earlier.security_protocol == listener.security_protocol {
                    bail!(
                        "--listen gives {} twice; each listener needs a protocol of its own",
                        listener.security_protocol.name()
                    );
                }
                if earlier.address.port() == listener.address.port()
                    && earlier.address.is_ipv4() == listener.address.is_ipv4()
                {
                    bail!(
                        "--listen {} and {} share port {}; each listener must have a different port",
                        earlier.address,
                        listener.address,
                        listener.address.port()
                    );
                }
            }
        }
        let plain_users = self.plain_users(&sasl_enabled_mechanisms, &listeners)?;
        let oauthbearer = self.oauthbearer(&sasl_enabled_mechanisms, &listeners)?;
        let ssl_client_auth = crate::security::tls::ClientAuth::parse(&self.ssl_client_auth)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--ssl-client-auth {:?}: none, requested or required",
                    self.ssl_client_auth
                )
            })?;
        let (tls, listener_tls, ssl_store_types) = self.tls(&listeners, ssl_client_auth)?;
        let ssl_principal_mapper =
            crate::security::tls::PrincipalMapper::parse(&self.ssl_principal_mapping_rules)
                .map_err(|e| anyhow::anyhow!("--ssl-principal-mapping-rules: {e}"))?;
        let available = allowed_cpus();
        let cpus = match (&self.cpuset, self.cores) {
            (Some(list), _) => {
                let cpus = parse_cpuset(list)?;
                if let Some(bad) = cpus.iter().find(|c| !available.contains(c)) {
                    bail!("--cpuset names CPU {bad}, which this process may not use (allowed: {available:?})");
                }
                cpus
            }
            (None, Some(0)) => bail!("--cores must be at least 1"),
            (None, Some(n)) if n > available.len() => {
                bail!(
                    "--cores {n} exceeds the {} CPUs this process may use",
                    available.len()
                )
            }
            (None, Some(n)) => available[..n].to_vec(),
            (None, None) => available.clone(),
        };
        // The allowed CPUs no shard runs on: the default home of the io_uring
        // workers and of the SQPOLL threads.
        let free: Vec<usize> = available
            .iter()
            .copied()
            .filter(|cpu| !cpus.contains(cpu))
            .collect();
        // Workers default to the free CPUs (measured better than the shard's
        // own when there are any: 1 shard of 2 CPUs), else the shard's own
        // (with 2 shards on 2 CPUs, workers on the other shard's CPU cost
        // 1.5-2x the broker CPU per GB at acks=1).
        let io_worker_cpus = match self.io_worker_cpus.as_deref() {
            None if free.is_empty() => IoWorkerCpus::Shard,
            None => IoWorkerCpus::Set(free.clone()),
            Some("shard") => IoWorkerCpus::Shard,
            Some(list) => {
                let set = parse_cpuset(list)?;
                if let Some(bad) = set.iter().find(|c| !available.contains(c)) {
                    bail!("--io-worker-cpus names CPU {bad}, which this process may not use (allowed: {available:?})");
                }
                IoWorkerCpus::Set(set)
            }
        };
        let sq_poll = if self.sqpoll {
            let cpu = match self.sqpoll_cpu {
                Some(cpu) if !available.contains(&cpu) => {
                    bail!("--sqpoll-cpu names CPU {cpu}, which this process may not use (allowed: {available:?})")
                }
                Some(cpu) => Some(cpu),
                None => free.first().copied(),
            };
            Some(glommio::SqPoll {
                cpu,
                idle: Duration::from_millis(self.sqpoll_idle_ms),
            })
        } else {
            None
        };
        if self.num_partitions < 1 {
            bail!("--num-partitions must be at least 1");
        }
        if self.default_replication_factor < 1 {
            bail!("--default-replication-factor must be at least 1");
        }
        if self.message_max_bytes < 0 {
            bail!("--message-max-bytes must not be negative");
        }
        if self.write_buffer_bytes < 4096 || !self.write_buffer_bytes.is_power_of_two() {
            bail!("--write-buffer-bytes must be a power of two of at least 4096");
        }
        let write_buffer_bytes_max = self.write_buffer_bytes_max();
        if write_buffer_bytes_max < self.write_buffer_bytes
            || !write_buffer_bytes_max.is_power_of_two()
            || write_buffer_bytes_max > 64 << 20
        {
            bail!("--write-buffer-bytes-max must be a power of two from --write-buffer-bytes to 64 MiB");
        }
        if self.write_behind == 0 {
            bail!("--write-behind must be at least 1");
        }
        if self.write_delay_us > crate::storage::WRITE_DELAY_US_MAX {
            bail!("--write-delay-us must be at most 1000000");
        }
        if self.preallocate_bytes % 4096 != 0 || self.preallocate_bytes > 1 << 30 {
            bail!("--preallocate-bytes must be a multiple of 4096 up to 1 GiB");
        }
        if self.offsets_topic_num_partitions < 1 {
            bail!("--offsets-topic-num-partitions must be at least 1");
        }
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms {
            bail!("--group-min-session-timeout-ms must not exceed --group-max-session-timeout-ms");
        }
        // Kafka's GroupCoordinatorConfig checks, in its order.
        let (interval, min_interval, max_interval) = (
            self.group_consumer_heartbeat_interval_ms,
            self.group_consumer_min_heartbeat_interval_ms,
            self.group_consumer_max_heartbeat_interval_ms,
        );
        let (session, min_session, max_session) = (
            self.group_consumer_session_timeout_ms,
            self.group_consumer_min_session_timeout_ms,
            self.group_consumer_max_session_timeout_ms,
        );
        if min_interval < 1 || min_session < 1 {
            bail!("--group-consumer-min-heartbeat-interval-ms and --group-consumer-min-session-timeout-ms must be at least 1");
        }
        if max_interval < min_interval {
            bail!("--group-consumer-max-heartbeat-interval-ms must be greater than or equal to --group-consumer-min-heartbeat-interval-ms");
        }
        if interval < min_interval {
            bail!("--group-consumer-heartbeat-interval-ms must be greater than or equal to --group-consumer-min-heartbeat-interval-ms");
        }
        if interval > max_interval {
            bail!("--group-consumer-heartbeat-interval-ms must be less than or equal to --group-consumer-max-heartbeat-interval-ms");
        }
        if max_session < min_session {
            bail!("--group-consumer-max-session-timeout-ms must be greater than or equal to --group-consumer-min-session-timeout-ms");
        }
        if session < min_session {
            bail!("--group-consumer-session-timeout-ms must be greater than or equal to --group-consumer-min-session-timeout-ms");
        }
        if session > max_session {
            bail!("--group-consumer-session-timeout-ms must be less than or equal to --group-consumer-max-session-timeout-ms");
        }
        if interval >= session {
            bail!("--group-consumer-heartbeat-interval-ms must be less than --group-consumer-session-timeout-ms");
        }
        if self.transaction_state_log_num_partitions < 1 {
            bail!("--transaction-state-log-num-partitions must be at least 1");
        }
        if self.transaction_max_timeout_ms < 1 {
            bail!("--transaction-max-timeout-ms must be at least 1");
        }
        if self.transactional_id_expiration_ms < 1
            || self.transaction_abort_timed_out_transaction_cleanup_interval_ms < 1
            || self.transaction_remove_expired_transaction_cleanup_interval_ms < 1
        {
            bail!("transaction expiration and cleanup intervals must be at least 1 ms");
        }
        dynamic::check_dedupe_buffer_size(
            self.log_cleaner_dedupe_buffer_size,
            self.log_cleaner_threads,
        )
        .map_err(|message| {
            let flag = if self.log_cleaner_threads == 0 {
                "--log-cleaner-threads"
            } else {
                "--log-cleaner-dedupe-buffer-size"
            };
            anyhow::anyhow!("{flag}: {message}")
        })?;
        if self.socket_request_max_bytes < 1024 {
            bail!("--socket-request-max-bytes must be at least 1024");
        }
        let broker_defaults = BrokerDefaults {
            num_partitions: self.num_partitions,
            default_replication_factor: i32::from(self.default_replication_factor),
            log_segment_bytes: i32::try_from(self.log_segment_bytes)
                .map_err(|_| anyhow::anyhow!("--log-segment-bytes must be at most {}", i32::MAX))?,
            log_roll_ms: (self.log_roll_ms != 7 * 24 * 3600 * 1000)
                .then_some(self.log_roll_ms as i64),
            log_roll_jitter_ms: (self.log_roll_jitter_ms != 0)
                .then(|| i64::try_from(self.log_roll_jitter_ms).unwrap_or(i64::MAX)),
            log_index_interval_bytes: i32::try_from(self.log_index_interval_bytes)
                .map_err(|_| anyhow::anyhow!("--log-index-interval-bytes is too large"))?,
            log_index_size_max_bytes: i32::try_from(self.log_index_size_max_bytes)
                .map_err(|_| anyhow::anyhow!("--log-index-size-max-bytes is too large"))?,
            message_max_bytes: self.message_max_bytes,
            log_retention_ms: (self.log_retention_ms != 7 * 24 * 3600 * 1000)
                .then_some(self.log_retention_ms),
            log_retention_bytes: self.log_retention_bytes,
            log_retention_check_interval_ms: self.log_retention_check_interval_ms,
            log_segment_delete_delay_ms: self.log_segment_delete_delay_ms,
            log_preallocate: self.log_preallocate,
            log_flush_interval_messages: self.log_flush_interval_messages,
            log_flush_interval_ms: self.log_flush_interval_ms,
            log_flush_scheduler_interval_ms: self.log_flush_scheduler_interval_ms,
            // Trimmed, as Kafka parses a string config.
            compression_type: self.compression_type.trim().to_string(),
            compression_gzip_level: self.compression_gzip_level,
            compression_lz4_level: self.compression_lz4_level,
            compression_zstd_level: self.compression_zstd_level,
            ..BrokerDefaults::default()
        };
        broker_defaults
            .validate()
            .map_err(|e| anyhow::anyhow!("invalid broker setting: {e}"))?;
        let connection_limit_values: std::collections::BTreeMap<String, String> = [
            (
                dynamic::MAX_CONNECTIONS,
                self.max_connections.map(|v| v.to_string()),
            ),
            (
                dynamic::MAX_CONNECTIONS_PER_IP,
                self.max_connections_per_ip.map(|v| v.to_string()),
            ),
            (
                dynamic::MAX_CONNECTIONS_PER_IP_OVERRIDES,
                self.max_connections_per_ip_overrides.clone(),
            ),
            (
                dynamic::MAX_CONNECTION_CREATION_RATE,
                self.max_connection_creation_rate.map(|v| v.to_string()),
            ),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name.to_string(), v)))
        .collect();
        let connection_limits = dynamic::ConnectionLimits::from_values(
            &|name| connection_limit_values.get(name).cloned(),
            false,
        )
        .map_err(|e| anyhow::anyhow!("invalid broker setting: {e}"))?;
        // Kafka resolves the overrides' hosts as it starts, and does not
        // start when one does not resolve.
        if let Some((host, _)) = connection_limits
            .overrides
            .iter()
            .find(|(host, _)| crate::server::hosts::resolve(host).is_none())
        {
            anyhow::bail!(
                "invalid broker setting: {}: {host}: Name or service not known",
                dynamic::MAX_CONNECTIONS_PER_IP_OVERRIDES
            );
        }
        Ok(BrokerConfig {
            node_id: self.node_id,
            listeners,
            sasl_handshake_order: crate::security::in_kafka_handshake_order(
                sasl_enabled_mechanisms.clone(),
            )
            .into(),
            sasl_enabled_mechanisms,
            plain_users,
            oauthbearer,
            tls,
            listener_tls,
            ssl_keystore_location: self.ssl_keystore_location.clone(),
            ssl_truststore_location: self.ssl_truststore_location.clone(),
            ssl_keystore_type: ssl_store_types.keystore,
            ssl_truststore_type: ssl_store_types.truststore,
            ssl_values: [
                // Passwords are sensitive: described as set, never shown.
                (
                    "ssl.keystore.password",
                    self.ssl_keystore_password.as_ref().map(|_| String::new()),
                ),
                (
                    "ssl.key.password",
                    self.ssl_key_password.as_ref().map(|_| String::new()),
                ),
                (
                    "ssl.truststore.password",
                    self.ssl_truststore_password.as_ref().map(|_| String::new()),
                ),
                (
                    "ssl.keystore.key",
                    self.ssl_keystore_key.as_ref().map(|_| String::new()),
                ),
                (
                    "ssl.keystore.certificate.chain",
                    self.ssl_keystore_certificate_chain
                        .as_ref()
                        .map(|_| String::new()),
                ),
                (
                    "ssl.truststore.certificates",
                    self.ssl_truststore_certificates
                        .as_ref()
                        .map(|_| String::new()),
                ),
                (
                    "ssl.enabled.protocols",
                    Some(self.ssl_enabled_protocols.clone()).filter(|p| p != "TLSv1.2,TLSv1.3"),
                ),
                (
                    "ssl.principal.mapping.rules",
                    Some(self.ssl_principal_mapping_rules.clone()).filter(|r| r != "DEFAULT"),
                ),
                (
                    "ssl.cipher.suites",
                    Some(self.ssl_cipher_suites.clone()).filter(|s| !s.is_empty()),
                ),
                (
                    "ssl.allow.dn.changes",
                    self.ssl_allow_dn_changes.then(|| "true".to_string()),
                ),
                (
                    "ssl.allow.san.changes",
                    self.ssl_allow_san_changes.then(|| "true".to_string()),
                ),
            ]
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?)))
            .collect(),
            ssl_client_auth,
            ssl_principal_mapper,
            add_scram,
            authorizer,
            quota_window: crate::quota::sensors::QuotaWindow {
                samples: self.quota_window_num,
                window_ms: self.quota_window_size_seconds * 1000,
            },
            delegation_tokens: std::sync::Arc::new(
                crate::security::delegation_token::TokenConfig {
                    secret: self
                        .delegation_token_secret_key
                        .filter(|key| !key.is_empty()),
                    max_lifetime_ms: self.delegation_token_max_lifetime_ms,
                    expiry_time_ms: self.delegation_token_expiry_time_ms,
                    expiry_check_interval_ms: self.delegation_token_expiry_check_interval_ms,
                },
            ),
            data_dir: self.data_dir,
            cpus,
            broker_defaults,
            auto_create_topics_enable: self.auto_create_topics_enable,
            delete_topic_enable: self.delete_topic_enable,
            socket_request_max_bytes: self.socket_request_max_bytes,
            connections_max_idle_ms: self.connections_max_idle_ms,
            connections_max_reauth_ms: self.connections_max_reauth_ms,
            connection_limits,
            connection_limit_values,
            request_read_timeout_ms: self.request_read_timeout_ms,
            flush_policy: self.flush_policy,
            acks_wait_for_write: self.acks_wait_for_write,
            topic_fds_per_partition: self.topic_fds_per_partition,
            open_files_max: 0,
            write_buffer_bytes: self.write_buffer_bytes,
            write_buffer_bytes_max,
            write_behind: self.write_behind,
            write_delay_us: self.write_delay_us,
            io_worker_cpus,
            io_workers_max: self.io_workers_max,
            produce_shares: self.produce_shares,
            fetch_shares: self.fetch_shares,
            cold_fetch_shares: self.cold_fetch_shares,
            cold_reads_max: self.cold_reads_max as usize,
            cold_read_path: self.cold_read_path,
            splice_to_socket: self.splice_to_socket,
            log_sync: self.log_sync,
            writes_during_sync: self.writes_during_sync,
            background_shares: self.background_shares,
            blocking_threads: self.blocking_threads as usize,
            preallocate_bytes: self.preallocate_bytes,
            partition_cache_bytes: self.partition_cache_bytes,
            shard_cache_bytes: self.shard_cache_bytes,
            partition_pending_bytes_max: self.partition_pending_bytes_max,
            io_memory_bytes: self.io_memory_bytes,
            ring_depth: self.ring_depth as usize,
            spin_before_park_us: self.spin_before_park_us,
            sq_poll,
            shutdown_timeout_ms: self.shutdown_timeout_ms,
            metrics_listen: self.metrics_listen,
            groups: GroupSettings {
                offsets_topic_num_partitions: self.offsets_topic_num_partitions,
                offsets_topic_segment_bytes: self.offsets_topic_segment_bytes,
                offsets_retention_minutes: self.offsets_retention_minutes,
                offset_metadata_max_bytes: self.offset_metadata_max_bytes,
                group_initial_rebalance_delay_ms: self.group_initial_rebalance_delay_ms,
                group_min_session_timeout_ms: self.group_min_session_timeout_ms,
                group_max_session_timeout_ms: self.group_max_session_timeout_ms,
                group_max_size: self.group_max_size,
                group_consumer_session_timeout_ms: self.group_consumer_session_timeout_ms,
                group_consumer_heartbeat_interval_ms: self.group_consumer_heartbeat_interval_ms,
                group_consumer_min_session_timeout_ms: self.group_consumer_min_session_timeout_ms,
                group_consumer_max_session_timeout_ms: self.group_consumer_max_session_timeout_ms,
                group_consumer_min_heartbeat_interval_ms: self
                    .group_consumer_min_heartbeat_interval_ms,
                group_consumer_max_heartbeat_interval_ms: self
                    .group_consumer_max_heartbeat_interval_ms,
                group_consumer_max_size: self.group_consumer_max_size,
                group_consumer_migration_policy: self.group_consumer_migration_policy.clone(),
                group_consumer_assignors: self.group_consumer_assignors.clone(),
            },
            cleaner: CleanerSettings {
                log_cleaner_backoff_ms: self.log_cleaner_backoff_ms,
                log_cleaner_dedupe_buffer_size: self.log_cleaner_dedupe_buffer_size,
                log_cleaner_io_buffer_load_factor: self.log_cleaner_io_buffer_load_factor,
                log_cleaner_io_max_bytes_per_second: self.log_cleaner_io_max_bytes_per_second,
                log_cleaner_threads: self.log_cleaner_threads,
                log_cleaner_io_buffer_size: self.log_cleaner_io_buffer_size,
            },
            txns: TxnSettings {
                transaction_state_log_num_partitions: self.transaction_state_log_num_partitions,
                transaction_state_log_segment_bytes: self.transaction_state_log_segment_bytes,
                transaction_max_timeout_ms: self.transaction_max_timeout_ms,
                transactional_id_expiration_ms: self.transactional_id_expiration_ms,
                transaction_abort_timed_out_transaction_cleanup_interval_ms: self
                    .transaction_abort_timed_out_transaction_cleanup_interval_ms,
                transaction_remove_expired_transaction_cleanup_interval_ms: self
                    .transaction_remove_expired_transaction_cleanup_interval_ms,
                producer_id_expiration_ms: self.producer_id_expiration_ms,
                producer_id_expiration_check_interval_ms: self
                    .producer_id_expiration_check_interval_ms,
                transaction_partition_verification_enable: self
                    .transaction_partition_verification_enable,
            },
        })
    }
}

/// A Kafka BOOLEAN config's value: true or false in any case.
fn parse_kafka_bool(value: &str) -> Result<bool, String> {
    crate::config::dynamic::parse_boolean(value).ok_or_else(|| "expected true or false".into())
}

/// `--group-consumer-migration-policy`: Kafka's policy names in any case,
/// kept in lower case.
fn parse_migration_policy(value: &str) -> Result<String, String> {
    crate::group::MigrationPolicy::parse(value)
        .map(|policy| policy.name().to_string())
        .ok_or_else(|| {
            format!(
                "Invalid value {value} for configuration group.consumer.migration.policy: String \
                 must be one of (case insensitive): bidirectional, upgrade, downgrade, disabled"
            )
        })
}

/// `--group-consumer-assignors`: a comma-separated list of the built-in
/// assignors, by name or by Kafka's class name, kept as names.
fn parse_assignors(value: &str) -> Result<String, String> {
    let mut names: Vec<&str> = Vec::new();
    for item in value.split(',').map(str::trim) {
        let name = match item {
            "uniform" | "org.apache.kafka.coordinator.group.assignor.UniformAssignor" => "uniform",
            "range" | "org.apache.kafka.coordinator.group.assignor.RangeAssignor" => "range",
            other => {
                return Err(format!(
                    "unknown assignor {other:?}: this broker offers uniform and range \
                     (custom assignor classes are not supported)"
                ))
            }
        };
        if names.contains(&name) {
            return Err(format!("assignor {name} is listed twice"));
        }
        names.push(name);
    }
    Ok(names.join(","))
}

/// The types of the keystore and truststore to describe as set: as given,
/// or when the file made them other than Kafka's default (JKS).
#[derive(Debug, Default)]
struct SslStoreTypes {
    keystore: Option<crate::security::keystore::StoreType>,
    truststore: Option<crate::security::keystore::StoreType>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::SecurityProtocol;

    #[test]
    fn cpuset_lists_and_ranges_parse() {
        assert_eq!(parse_cpuset("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpuset("3,1,1").unwrap(), vec![1, 3]);
        assert!(parse_cpuset("2-1").is_err());
        assert!(parse_cpuset("").is_err());
        assert!(parse_cpuset("x").is_err());
    }

    fn serve_config(args: &[&str]) -> anyhow::Result<BrokerConfig> {
        let cli = Cli::try_parse_from(["ringbroker", "serve"].iter().chain(args))?;
        let Command::Serve(serve) = cli.command else {
            unreachable!("parsed a serve command line")
        };
        serve.into_config()
    }

    #[test]
    fn sqpoll_is_off_unless_asked_and_its_cpu_must_be_allowed() {
        let cpu0 = allowed_cpus()[0];
        assert_eq!(serve_config(&[]).unwrap().sq_poll, None);
        // The details need the flag itself.
        assert!(serve_config(&["--sqpoll-idle-ms", "5"]).is_err());
        assert!(serve_config(&["--sqpoll-cpu", &cpu0.to_string()]).is_err());
        let on = serve_config(&["--sqpoll", "--sqpoll-cpu", &cpu0.to_string()]).unwrap();
        assert_eq!(
            on.sq_poll,
            Some(glommio::SqPoll {
                cpu: Some(cpu0),
                idle: Duration::from_millis(10)
            })
        );
        // Without --sqpoll-cpu: a CPU no shard runs on, else the kernel's
        // choice.
        let every = serve_config(&["--sqpoll", "--sqpoll-idle-ms", "3"]).unwrap();
        let free = allowed_cpus()
            .into_iter()
            .find(|cpu| !every.cpus.contains(cpu));
        assert_eq!(
            every.sq_poll,
            Some(glommio::SqPoll {
                cpu: free,
                idle: Duration::from_millis(3)
            })
        );
        let one = serve_config(&["--sqpoll", "--cpuset", &cpu0.to_string()]).unwrap();
        assert_eq!(
            one.sq_poll.unwrap().cpu,
            allowed_cpus().into_iter().find(|&cpu| cpu != cpu0)
        );
        assert!(serve_config(&["--sqpoll", "--sqpoll-cpu", "100000"]).is_err());
        assert!(serve_config(&["--sqpoll", "--sqpoll-idle-ms", "0"]).is_err());
    }

    /// Goal: a connection idle limit of 0 is refused (it would close every
    /// connection at once, and Kafka's -1 for "never" cannot be given).
    #[test]
    fn connections_max_idle_ms_must_be_positive() {
        assert!(serve_config(&["--connections-max-idle-ms", "0"]).is_err());
        assert_eq!(
            serve_config(&["--connections-max-idle-ms", "1"])
                .unwrap()
                .connections_max_idle_ms,
            1
        );
    }

    /// Goal: listeners are checked as Kafka checks `listeners` and
    /// `advertised.listeners`.
    #[test]
    fn listeners_need_their_own_protocol_and_port() {
        let both = serve_config(&[
            "--listen",
            "127.0.0.1:9092",
            "--listen",
            "SASL_PLAINTEXT://127.0.0.1:9093",
            "--advertised-listen",
            "inside:9092",
            "--advertised-listen",
            "SASL_PLAINTEXT://outside:19093",
        ])
        .unwrap();
        let shown: Vec<_> = both
            .listeners
            .iter()
            .map(|l| {
                (
                    l.security_protocol,
                    l.advertised_host.as_str(),
                    l.advertised_port,
                )
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                (SecurityProtocol::Plaintext, "inside", 9092),
                (SecurityProtocol::SaslPlaintext, "outside", 19093)
            ]
        );
        // The default is one PLAINTEXT listener; a given --listen replaces it.
        assert_eq!(serve_config(&[]).unwrap().listeners.len(), 1);
        assert_eq!(
            serve_config(&["--listen", "SASL_PLAINTEXT://127.0.0.1:9093"])
                .unwrap()
                .listeners[0]
                .security_protocol,
            SecurityProtocol::SaslPlaintext
        );
        for bad in [
            &[
                "--listen",
                "127.0.0.1:9092",
                "--listen",
                "PLAINTEXT://127.0.0.1:9093",
            ][..],
            &[
                "--listen",
                "127.0.0.1:9092",
                "--listen",
                "SASL_PLAINTEXT://0.0.0.0:9092",
            ],
            &[
                "--listen",
                "127.0.0.1:9092",
                "--advertised-listen",
                "SASL_PLAINTEXT://h:1",
            ],
            &[
                "--listen",
                "127.0.0.1:9092",
                "--listen",
                "SASL_PLAINTEXT://127.0.0.1:9093",
                "--advertised-listen",
                "h:1",
            ],
            &["--listen", "SSL://127.0.0.1:9092"],
        ] {
            assert!(serve_config(bad).is_err(), "{bad:?}");
        }
        // One IPv4 and one IPv6 listener may share a port.
        assert!(serve_config(&[
            "--listen",
            "127.0.0.1:9092",
            "--listen",
            "SASL_PLAINTEXT://[::1]:9092"
        ])
        .is_ok());
    }

    /// Goal: SSL settings are read only for TLS listeners, as in Kafka: a
    /// PLAINTEXT broker with a leftover keystore password starts; with an
    /// SSL listener Kafka's refusal applies.
    #[test]
    fn ssl_settings_matter_only_with_a_tls_listener() {
        assert!(serve_config(&["--ssl-keystore-password", "x"]).is_ok());
        let refused = serve_config(&[
            "--listen",
            "SSL://127.0.0.1:9093",
            "--ssl-keystore-password",
            "x",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            refused
                .contains("SSL key store is not specified, but key store password is specified."),
            "{refused}"
        );
    }

    #[test]
    fn ring_depth_is_bounded_as_the_kernel_bounds_it() {
        // A depth the kernel refuses would stop a shard's executor from
        // being created; refuse it up front, with the usage message.
        assert_eq!(serve_config(&[]).unwrap().ring_depth, 128);
        assert_eq!(
            serve_config(&["--ring-depth", "32768"]).unwrap().ring_depth,
            32768
        );
        assert!(serve_config(&["--ring-depth", "32769"]).is_err());
        assert!(serve_config(&["--ring-depth", "0"]).is_err());
    }

    #[test]
    fn retention_limits_take_minus_one_as_a_separate_word() {
        // -1 is Kafka's "no limit"; clap would read a bare `-1` as a flag.
        let unlimited =
            serve_config(&["--log-retention-ms", "-1", "--log-retention-bytes", "-1"]).unwrap();
        assert_eq!(unlimited.broker_defaults.log_retention_ms, Some(-1));
        assert_eq!(unlimited.broker_defaults.log_retention_bytes, -1);
        assert_eq!(
            serve_config(&[]).unwrap().broker_defaults.log_retention_ms,
            None
        );
    }
}
