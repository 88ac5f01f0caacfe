//! The group coordinator service of one shard: one [`GroupCoordinator`] per
//! `__consumer_offsets` partition this shard owns, loaded from that
//! partition's log at start-up, with the tasks that carry out its effects
//! (appending records in order, firing timers) and the one-shots of requests
//! waiting for a rebalance. Lives on the shard that owns the partitions.
//!
//! Connection shards reach it through [`call_group`] and friends, which pick
//! the owning shard from the group id exactly as Kafka picks the coordinator:
//! `abs(hash(group_id)) % offsets.topic.num.partitions`.

use std::rc::Rc;

use crate::cluster::controller::{ensure_offsets_topic, OFFSETS_TOPIC};
use crate::group::offsets_partition_for;
use crate::protocol::ErrorCode;
use crate::shard::messages::{GroupCall, GroupReply, ShardReply, ShardRequest};
use crate::shard::Shard;

/// The `__consumer_offsets` partition that coordinates `group_id`, creating
/// the topic on first use. None when the topic cannot be had.
pub async fn group_partition(shard: &Rc<Shard>, group_id: &str) -> Option<i32> {
    if let Err(e) = ensure_offsets_topic(shard).await {
        tracing::warn!(error = %e, "cannot create the offsets topic");
        return None;
    }
    let image = shard.image();
    let topic = image.topic(OFFSETS_TOPIC)?;
    Some(offsets_partition_for(
        group_id,
        topic.partition_shards.len() as i32,
    ))
}

/// Sends `call` to the coordinator of offsets partition `partition` and waits
/// for its answer.
pub async fn call_partition(shard: &Rc<Shard>, partition: i32, call: GroupCall) -> GroupReply {
    let image = shard.image();
    let Some(owner) = image
        .topic(OFFSETS_TOPIC)
        .and_then(|t| shard.owner_of(t, partition))
    else {
        return GroupReply::Unavailable(ErrorCode::CoordinatorNotAvailable);
    };
    let completion = match shard
        .call(owner, ShardRequest::Group { partition, call })
        .await
    {
        Ok(completion) => completion,
        Err(_) => return GroupReply::Unavailable(ErrorCode::CoordinatorNotAvailable),
    };
    match completion.await {
        Ok(ShardReply::Group(reply)) => reply,
        _ => GroupReply::Unavailable(ErrorCode::CoordinatorNotAvailable),
    }
}

/// Sends `call` to the coordinator of `group_id`.
pub async fn call_group(shard: &Rc<Shard>, group_id: &str, call: GroupCall) -> GroupReply {
    match group_partition(shard, group_id).await {
        Some(partition) => call_partition(shard, partition, call).await,
        None => GroupReply::Unavailable(ErrorCode::CoordinatorNotAvailable),
    }
}

/// ListGroups on every shard, merged.
pub async fn list_all_groups(
    shard: &Rc<Shard>,
    request: crate::group::ListGroupsRequest,
) -> Result<crate::group::ListGroupsResponse, ErrorCode> {
    let mut groups = Vec::new();
    let mut completions = Vec::new();
    for target in 0..shard.nr_shards {
        let call = GroupCall::ListGroups(request.clone());
        match shard
            .call(
                target,
                ShardRequest::Group {
                    partition: -1,
                    call,
                },
            )
            .await
        {
            Ok(c) => completions.push(c),
            Err(_) => return Err(ErrorCode::CoordinatorNotAvailable),
        }
    }
    for completion in completions {
        match completion.await {
            Ok(ShardReply::Group(GroupReply::ListGroups(listed))) => groups.extend(listed.groups),
            Ok(ShardReply::Group(GroupReply::Unavailable(e))) => return Err(e),
            _ => return Err(ErrorCode::CoordinatorNotAvailable),
        }
    }
    Ok(crate::group::ListGroupsResponse { groups })
}
