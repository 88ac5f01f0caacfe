//! DescribeLogDirs (key 35, v1-4; v2+ flexible), as `kafka-log-dirs
//! --describe` and admin clients' `describeLogDirs` ask: the one log
//! directory (`--data-dir`, absolute) with the size of each partition asked
//! for (all of them when the request names none, internal topics included),
//! offset lag 0 and no future replicas; from v4 the file system's total and
//! usable bytes (Kafka's `FileStore.getTotalSpace` / `getUsableSpace`).
//! Topics and partitions this broker does not hold are left out, as Kafka
//! leaves them out. Sizes are read on the shards that own the partitions.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use futures::future::join_all;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{ApiKey, DescribeLogDirsRequest, DescribeLogDirsResponse};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::server::connection::Responder;
use crate::shard::messages::{ShardReply, ShardRequest, TopicPartition};
use crate::shard::Shard;

/// (total, usable) bytes of the file system holding `dir`, -1 each when
/// it cannot be read.
fn space_of(dir: &PathBuf) -> (i64, i64) {
    match nix::sys::statvfs::statvfs(dir) {
        Ok(stat) => {
            let fragment = stat.fragment_size() as i64;
            (
                (stat.blocks() as i64).saturating_mul(fragment),
                (stat.blocks_available() as i64).saturating_mul(fragment),
            )
        }
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "cannot read the data directory's file system size");
            (-1, -1)
        }
    }
}

/// This broker's one log directory as clients name it: `--data-dir`,
/// absolute (AlterReplicaLogDirs compares paths with it).
pub(super) fn log_dir(shard: &Shard) -> PathBuf {
    let dir = shard.config.data_dir.clone();
    std::path::absolute(&dir).unwrap_or(dir)
}

/// Answers DescribeLogDirs.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DescribeLogDirsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    // DESCRIBE on the cluster, else refused whole (v3+ has the field).
    if !access.cluster(crate::security::acl::AclOperation::Describe) {
        let mut response = DescribeLogDirsResponse::default();
        response.error_code = ErrorCode::ClusterAuthorizationFailed.code();
        return super::ready(super::encode_response(
            ApiKey::DescribeLogDirs,
            version,
            correlation_id,
            &response,
        ));
    }
    let wanted: Option<HashSet<TopicPartition>> = request.topics.as_ref().map(|topics| {
        topics
            .iter()
            .flat_map(|topic| {
                topic.partitions.iter().map(|&partition| TopicPartition {
                    topic: topic.topic.to_string(),
                    partition,
                })
            })
            .collect()
    });
    let mut calls = Vec::with_capacity(shard.nr_shards);
    for target in 0..shard.nr_shards {
        calls.push(shard.call(target, ShardRequest::PartitionSizes).await);
    }
    let dir = log_dir(shard);
    Box::pin(async move {
        let replies = join_all(calls.into_iter().map(|call| async move {
            match call {
                Ok(completion) => completion.await.ok(),
                Err(_) => None,
            }
        }))
        .await;
        let mut error_code = 0;
        let mut topics: BTreeMap<String, BTreeMap<i32, u64>> = BTreeMap::new();
        for reply in replies {
            let Some(ShardReply::PartitionSizes(sizes)) = reply else {
                // A shard that cannot answer: the directory's state is not
                // known, as Kafka answers for a directory it cannot read.
                error_code = ErrorCode::KafkaStorageError.code();
                continue;
            };
            for (tp, size) in sizes {
                if wanted.as_ref().is_some_and(|wanted| !wanted.contains(&tp)) {
                    continue;
                }
                topics
                    .entry(tp.topic)
                    .or_default()
                    .insert(tp.partition, size);
            }
        }
        let space_dir = dir.clone();
        let (total_bytes, usable_bytes) = if version >= 4 {
            glommio::executor()
                .spawn_blocking(move || space_of(&space_dir))
                .await
        } else {
            (-1, -1)
        };
        let mut result = DescribeLogDirsResult::default();
        result.error_code = error_code;
        result.log_dir = str_bytes(&dir.display().to_string());
        result.total_bytes = total_bytes;
        result.usable_bytes = usable_bytes;
        if error_code == 0 {
            result.topics = topics
                .into_iter()
                .map(|(name, partitions)| {
                    let mut topic = DescribeLogDirsTopic::default();
                    topic.name = str_bytes(&name).into();
                    topic.partitions = partitions
                        .into_iter()
                        .map(|(index, size)| {
                            let mut partition = DescribeLogDirsPartition::default();
                            partition.partition_index = index;
                            partition.partition_size = i64::try_from(size).unwrap_or(i64::MAX);
                            partition.offset_lag = 0;
                            partition.is_future_key = false;
                            partition
                        })
                        .collect();
                    topic
                })
                .collect();
        }
        let mut response = DescribeLogDirsResponse::default();
        response.results = vec![result];
        encode_response(ApiKey::DescribeLogDirs, version, correlation_id, &response)
    })
}
