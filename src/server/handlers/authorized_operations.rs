//! The authorized-operations value Metadata, DescribeCluster and
//! DescribeTopicPartitions answer when a client did not ask for them. The bit fields themselves come from `server::access`.

/// Kafka's "authorized operations not requested" value.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;
