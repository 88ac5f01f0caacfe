//! The authorized-operations bit sets Metadata, DescribeCluster and
//! DescribeTopicPartitions answer when a client asks for them: without an
//! authorizer every operation Kafka defines for the resource type is
//! allowed (its `AclEntry.supportedOperations`). Bit n is ACL operation
//! code n: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
//! CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
//! IDEMPOTENT_WRITE 12.

/// Kafka's "authorized operations not requested" value.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// A topic's: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
/// DESCRIBE_CONFIGS, ALTER_CONFIGS.
pub const TOPIC_OPERATIONS_ALL: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);

/// The cluster's: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
/// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE (8096, as Kafka 4.1
/// answers).
pub const CLUSTER_OPERATIONS_ALL: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_sets_are_kafkas() {
        assert_eq!(CLUSTER_OPERATIONS_ALL, 8096);
        assert_eq!(TOPIC_OPERATIONS_ALL, 3576);
    }
}
