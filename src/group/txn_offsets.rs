//! Pending transactional offsets of one `__consumer_offsets` partition:
//! what TxnOffsetCommit wrote for a producer whose transaction has not ended
//! yet, kept per producer id (to materialize or drop at the marker) and
//! indexed per group and partition (for OffsetFetch's `require_stable`,
//! offset expiry and deletion). Kafka 4.x keeps the same two views in
//! `OffsetMetadataManager` (`pendingTransactionalOffsets` and
//! `openTransactions`).
//!
//! A pure data structure with no I/O, owned by the [`super::GroupCoordinator`]
//! of the partition, on the shard that owns that partition (shard-local).
//!
//! Bounds: every entry is a record already durable in the offsets log
//! (written by TxnOffsetCommit, whose size the request limit bounds), and a
//! producer's entries leave at its transaction's marker; the transaction
//! coordinator aborts transactions that exceed `transaction.timeout.ms`, so
//! the map is bounded by the offsets of open transactions, like the log
//! itself.

use std::collections::{BTreeMap, BTreeSet};

use super::classic::OffsetAndMetadata;

/// A topic-partition inside one group: (topic, partition).
type TopicPartitionKey = (String, i32);

/// Pending offsets of one producer: group -> (topic, partition) -> offset.
pub(crate) type ProducerOffsets = BTreeMap<String, BTreeMap<TopicPartitionKey, OffsetAndMetadata>>;

/// The pending transactional offsets of one coordinator.
#[derive(Debug, Default)]
pub(crate) struct PendingTxnOffsets {
    /// producer id -> its pending offsets.
    by_producer: BTreeMap<i64, ProducerOffsets>,
    /// group -> (topic, partition) -> producers with a pending offset there.
    /// Never holds an empty set or an empty group.
    open: BTreeMap<String, BTreeMap<TopicPartitionKey, BTreeSet<i64>>>,
}

impl PendingTxnOffsets {
    /// Records `offset` as `producer_id`'s pending offset of the partition,
    /// replacing an earlier one of the same producer.
    pub fn add(
        &mut self,
        producer_id: i64,
        group_id: &str,
        topic: &str,
        partition: i32,
        offset: OffsetAndMetadata,
    ) {
        let key = (topic.to_string(), partition);
        self.by_producer
            .entry(producer_id)
            .or_default()
            .entry(group_id.to_string())
            .or_default()
            .insert(key.clone(), offset);
        self.open
            .entry(group_id.to_string())
            .or_default()
            .entry(key)
            .or_default()
            .insert(producer_id);
    }

    /// Removes and returns every pending offset of `producer_id` (its
    /// transaction ended).
    pub fn take_producer(&mut self, producer_id: i64) -> Option<ProducerOffsets> {
        let offsets = self.by_producer.remove(&producer_id)?;
        for (group_id, partitions) in &offsets {
            let Some(open) = self.open.get_mut(group_id) else {
                continue;
            };
            for key in partitions.keys() {
                if let Some(producers) = open.get_mut(key) {
                    producers.remove(&producer_id);
                    if producers.is_empty() {
                        open.remove(key);
                    }
                }
            }
            if open.is_empty() {
                self.open.remove(group_id);
            }
        }
        Some(offsets)
    }

    /// Drops every producer's pending offset of one partition (an offset
    /// tombstone was written for it, as Kafka's replay of a tombstone does).
    pub fn remove_partition(&mut self, group_id: &str, topic: &str, partition: i32) {
        let key = (topic.to_string(), partition);
        let Some(open) = self.open.get_mut(group_id) else {
            return;
        };
        let Some(producers) = open.remove(&key) else {
            return;
        };
        if open.is_empty() {
            self.open.remove(group_id);
        }
        for producer_id in producers {
            let Some(groups) = self.by_producer.get_mut(&producer_id) else {
                continue;
            };
            if let Some(partitions) = groups.get_mut(group_id) {
                partitions.remove(&key);
                if partitions.is_empty() {
                    groups.remove(group_id);
                }
            }
            if groups.is_empty() {
                self.by_producer.remove(&producer_id);
            }
        }
    }

    /// Whether any producer has a pending offset for the partition.
    pub fn has_partition(&self, group_id: &str, topic: &str, partition: i32) -> bool {
        self.open
            .get(group_id)
            .is_some_and(|open| open.contains_key(&(topic.to_string(), partition)))
    }

    /// Whether the group has any pending offset.
    pub fn has_group(&self, group_id: &str) -> bool {
        self.open.contains_key(group_id)
    }

    /// The partitions of `group_id` with a pending offset, in order.
    pub fn partitions_of_group(&self, group_id: &str) -> Vec<(String, i32)> {
        self.open
            .get(group_id)
            .map(|open| open.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The pending offset of `producer_id` for the partition.
    pub fn get(
        &self,
        producer_id: i64,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> Option<&OffsetAndMetadata> {
        self.by_producer
            .get(&producer_id)?
            .get(group_id)?
            .get(&(topic.to_string(), partition))
    }

    /// Producers with pending offsets.
    pub fn producer_count(&self) -> usize {
        self.by_producer.len()
    }

    /// Forgets everything (the coordinator unloads).
    pub fn clear(&mut self) {
        self.by_producer.clear();
        self.open.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(value: i64, log_order: u64) -> OffsetAndMetadata {
        OffsetAndMetadata {
            offset: value,
            leader_epoch: None,
            metadata: String::new(),
            commit_timestamp_ms: 0,
            expire_timestamp_ms: None,
            log_order,
        }
    }

    /// The two views stay consistent: taking a producer or tombstoning a
    /// partition removes exactly its entries from both, and empty levels
    /// disappear.
    #[test]
    fn take_and_remove_keep_both_views_consistent() {
        let mut pending = PendingTxnOffsets::default();
        pending.add(7, "g", "t", 0, offset(10, 1));
        pending.add(7, "g", "t", 1, offset(11, 2));
        pending.add(8, "g", "t", 0, offset(20, 3));
        pending.add(8, "h", "u", 0, offset(30, 4));
        assert!(pending.has_partition("g", "t", 0));
        assert_eq!(pending.producer_count(), 2);

        pending.remove_partition("g", "t", 0);
        assert!(!pending.has_partition("g", "t", 0));
        assert!(pending.has_partition("g", "t", 1));
        assert!(pending.get(8, "g", "t", 0).is_none());
        assert_eq!(pending.get(8, "h", "u", 0).map(|o| o.offset), Some(30));

        let seven = pending.take_producer(7).expect("producer 7 pending");
        assert_eq!(seven["g"][&("t".to_string(), 1)].offset, 11);
        assert!(!pending.has_group("g"));
        assert!(pending.has_group("h"));
        assert!(pending.take_producer(7).is_none());

        pending.remove_partition("h", "u", 0);
        assert_eq!(pending.producer_count(), 0);
        assert!(!pending.has_group("h"));
    }
}
