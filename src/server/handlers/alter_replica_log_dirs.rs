//! AlterReplicaLogDirs (key 34, v1-2; v2 flexible), as `kafka-reassign-partitions`
//! with `log_dirs` and admin clients' `alterReplicaLogDirs` ask: move a
//! partition's replica to another log directory of the same broker. This
//! broker has one log directory (`--data-dir`, named by its absolute path as
//! DescribeLogDirs names it), so every partition already is where it can
//! be. As a Kafka broker with one log directory answers (Kafka 4.1.1,
//! measured):
//! - that directory, exactly as DescribeLogDirs names it, for a partition
//!   this broker holds: success, nothing moves;
//! - any other path (a trailing `/`, a relative path): LOG_DIR_NOT_FOUND;
//! - a partition this broker does not hold: UNKNOWN_TOPIC_OR_PARTITION;
//! - a topic name too long for Kafka's future-replica directory name
//!   (`<topic>-<partition>.<32 hex>-future` over 255 UTF-16 units, as Java
//!   counts), checked first:
//!   INVALID_TOPIC_EXCEPTION.
//!
//! ALTER on the cluster, else every partition is CLUSTER_AUTHORIZATION_FAILED.
//! A partition named twice takes its last directory and is answered once.
//! Topics are answered in the order they first appear.

use std::collections::HashMap;
use std::rc::Rc;

use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, ApiKey, TopicName,
};

use super::encode_response;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Response;
use crate::shard::Shard;

/// Longest directory name Kafka creates (`UnifiedLog.logFutureDirName`), in
/// UTF-16 units.
const DIR_NAME_UNITS_MAX: usize = 255;

/// UTF-16 units Kafka's future-replica directory name adds to the topic
/// name and partition number: `-`, `.`, a 32-hex-digit id and `-future`.
const FUTURE_DIR_NAME_EXTRA_UNITS: usize = 1 + 1 + 32 + "-future".len();

/// The error code for moving `topic`'s `partition` to `path` on this
/// broker, whose one log directory is `dir`.
fn outcome(shard: &Shard, dir: &str, topic: &str, partition: i32, path: &str) -> i16 {
    // Java's String.length(): UTF-16 units.
    let future_dir_name =
        topic.encode_utf16().count() + partition.to_string().len() + FUTURE_DIR_NAME_EXTRA_UNITS;
    if future_dir_name > DIR_NAME_UNITS_MAX {
        return ErrorCode::InvalidTopicException.code();
    }
    if path != dir {
        return ErrorCode::LogDirNotFound.code();
    }
    let held = shard
        .image()
        .topic(topic)
        .is_some_and(|t| usize::try_from(partition).is_ok_and(|p| p < t.partition_shards.len()));
    if held {
        0
    } else {
        ErrorCode::UnknownTopicOrPartition.code()
    }
}

/// Answers AlterReplicaLogDirs.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: AlterReplicaLogDirsRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let allowed = access.cluster(AclOperation::Alter);
    let dir = super::describe_log_dirs::log_dir(shard)
        .display()
        .to_string();
    // Each topic once, in first-seen order, and each of its partitions once
    // with the last path asked for it (`at`: where each pair is).
    let mut topics: Vec<(TopicName, Vec<(i32, &str)>)> = Vec::new();
    let mut topic_at: HashMap<&TopicName, usize> = HashMap::new();
    let mut at: HashMap<(&TopicName, i32), usize> = HashMap::new();
    for asked in &request.dirs {
        for topic in &asked.topics {
            let t = *topic_at.entry(&topic.name).or_insert_with(|| {
                topics.push((topic.name.clone(), Vec::new()));
                topics.len() - 1
            });
            let partitions = &mut topics[t].1;
            for &partition in &topic.partitions {
                let path = asked.path.as_str();
                match at.get(&(&topic.name, partition)) {
                    Some(&p) => partitions[p].1 = path,
                    None => {
                        at.insert((&topic.name, partition), partitions.len());
                        partitions.push((partition, path));
                    }
                }
            }
        }
    }
    let mut response = AlterReplicaLogDirsResponse::default();
    response.results = topics
        .into_iter()
        .map(|(name, partitions)| {
            let mut result = AlterReplicaLogDirTopicResult::default();
            result.partitions = partitions
                .into_iter()
                .map(|(partition, path)| {
                    let error_code = if allowed {
                        outcome(shard, &dir, &name, partition, path)
                    } else {
                        ErrorCode::ClusterAuthorizationFailed.code()
                    };
                    AlterReplicaLogDirPartitionResult::default()
                        .with_partition_index(partition)
                        .with_error_code(error_code)
                })
                .collect();
            result.topic_name = name;
            result
        })
        .collect();
    encode_response(
        ApiKey::AlterReplicaLogDirs,
        version,
        correlation_id,
        &response,
    )
}
