//! Every bound in the broker as a named constant, with compile-time checks on
//! how they relate. Settings a user may change live in
//! [`crate::config::BrokerConfig`]; these are the fixed ones.
//!
//! Shared, read-only.

/// Smallest frame that can hold a request header (api key, version, correlation id, client id length).
pub const REQUEST_FRAME_BYTES_MIN: usize = 10;
/// Requests a single connection may have in flight (read, not yet answered).
/// Clients pipeline at most 5 by default; a bound protects the broker from
/// one connection queueing unbounded work.
pub const CONNECTION_IN_FLIGHT_REQUESTS_MAX: usize = 64;
/// Capacity of each cross-core channel of the router mesh.
pub const ROUTER_CHANNEL_CAPACITY: usize = 1024;
/// Long-poll fetch waiters a shard keeps at once; beyond it, fetches answer
/// immediately with what they have.
pub const FETCH_WAITERS_PER_SHARD_MAX: usize = 16_384;
/// Largest response encoded into one buffer (every response but the record
/// data of fetches, which is sent by reference). Kafka has no such bound;
/// the largest real answers (Metadata of 100,000 partitions) are a few MiB,
/// while a request can ask for answers far larger than itself (a long
/// unknown topic name repeated in the error message of every partition it
/// names). A larger one closes the connection instead of being allocated.
pub const RESPONSE_BUFFER_BYTES_MAX: usize = 128 << 20;
/// Longest topic name Kafka accepts.
pub const TOPIC_NAME_BYTES_MAX: usize = 249;
/// Partitions one topic may have (Kafka has no hard limit; this keeps a
/// single CreateTopics from creating millions of directories).
pub const TOPIC_PARTITIONS_MAX: i32 = 100_000;
/// Partitions one CreateTopics request may create in all, as Kafka's
/// controller allows (KAFKA-17870, Kafka 4.0): beyond it every topic of the
/// request gets POLICY_VIOLATION.
pub const CREATE_TOPICS_PARTITIONS_MAX: i64 = 10_000;
/// Open-files descriptors kept out of the partitions' budget (see
/// `--topic-fds-per-partition`) for connections, pipes, rings and the
/// files of the metadata log: this many, or a quarter of the limit when
/// that is less.
pub const OPEN_FILES_RESERVED_MAX: u64 = 1024;
/// Bytes of one metadata log record.
pub const METADATA_RECORD_BYTES_MAX: usize = 16 * 1024 * 1024;

const _: () = assert!(CONNECTION_IN_FLIGHT_REQUESTS_MAX >= 5);
const _: () = assert!(ROUTER_CHANNEL_CAPACITY >= CONNECTION_IN_FLIGHT_REQUESTS_MAX);
/// Partitions one DescribeTopicPartitions answer describes at most: Kafka's
/// `max.request.partition.size.limit` default; a client's smaller
/// `response_partition_limit` wins, one below 1 counts as 1.
pub const DESCRIBE_TOPIC_PARTITIONS_MAX: i32 = 2000;
