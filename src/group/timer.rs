//! The coordinator's deadlines: one per key (a member's session, a group's
//! join phase, a group's sync phase, the offsets retention sweep), ordered by
//! time. Scheduling a key again replaces its deadline, as Kafka's
//! `CoordinatorTimer.schedule` does. No clock here: the coordinator is told
//! the time and asks which deadlines have passed.
//!
//! Shard-local, owned by one [`super::GroupCoordinator`].

use std::collections::{BTreeMap, HashMap};

/// What a deadline is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum TimerKey {
    /// A member's (or pending member's) session expires.
    Heartbeat { group_id: String, member_id: String },
    /// A group's join phase ends (rebalance timeout or initial delay).
    Join { group_id: String },
    /// A group's members must have sent SyncGroup.
    Sync { group_id: String },
    /// The periodic sweep for expired offsets and empty groups.
    OffsetsRetention,
    /// A consumer-group (KIP-848) member's session expires.
    ConsumerSession { group_id: String, member_id: String },
    /// A consumer-group member had to revoke partitions by now.
    ConsumerRevocation { group_id: String, member_id: String },
    /// A classic member of a consumer group, told to rejoin, had to send
    /// JoinGroup by now.
    ConsumerClassicJoin { group_id: String, member_id: String },
    /// A classic member of a consumer group had to send SyncGroup after its
    /// JoinGroup by now.
    ConsumerClassicSync { group_id: String, member_id: String },
}

/// What to do when a deadline passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerAction {
    /// Remove the member unless a rebalance is satisfying its heartbeat.
    ExpireHeartbeat,
    /// Complete the join phase with whoever joined.
    CompleteJoin,
    /// The initial rebalance's delay passed: extend it while members keep
    /// arriving, else complete the join phase.
    InitialRebalance { delay_ms: i32, remaining_ms: i32 },
    /// Members of `generation_id` that have not synced are removed.
    ExpireSync { generation_id: i32 },
    /// Expire offsets and delete empty groups.
    OffsetsRetention,
    /// Remove the consumer-group member (its session expired, or, as a
    /// classic member, it did not rejoin or sync in time).
    ExpireConsumerSession,
    /// Remove the consumer-group member if it is still revoking at this
    /// epoch.
    ExpireConsumerRevocation { member_epoch: i32 },
}

/// A set of keyed deadlines.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    by_key: HashMap<TimerKey, (i64, u64)>,
    queue: BTreeMap<(i64, u64), (TimerKey, TimerAction)>,
    next_sequence: u64,
}

impl Timers {
    /// Sets `key` to fire at `deadline_ms`, replacing any earlier deadline.
    pub fn schedule(&mut self, key: TimerKey, deadline_ms: i64, action: TimerAction) {
        self.cancel(&key);
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.by_key.insert(key.clone(), (deadline_ms, sequence));
        self.queue.insert((deadline_ms, sequence), (key, action));
        debug_assert_eq!(self.by_key.len(), self.queue.len());
    }

    /// Removes `key`'s deadline, if any.
    pub fn cancel(&mut self, key: &TimerKey) {
        if let Some(slot) = self.by_key.remove(key) {
            let removed = self.queue.remove(&slot);
            assert!(removed.is_some());
        }
    }

    /// Whether `key` has a deadline.
    pub fn contains(&self, key: &TimerKey) -> bool {
        self.by_key.contains_key(key)
    }

    /// The earliest deadline.
    pub fn next_deadline(&self) -> Option<i64> {
        self.queue
            .keys()
            .next()
            .map(|&(deadline_ms, _)| deadline_ms)
    }

    /// A marker: deadlines scheduled after this call have sequences at or
    /// above it, so a tick can leave them for the next tick.
    pub fn sequence_mark(&self) -> u64 {
        self.next_sequence
    }

    /// Removes and returns the earliest deadline at or before `now_ms` that
    /// was scheduled before `mark`.
    pub fn pop_expired(&mut self, now_ms: i64, mark: u64) -> Option<(TimerKey, TimerAction)> {
        let (&(deadline_ms, sequence), _) = self.queue.iter().next()?;
        // Deadlines scheduled during this tick are never earlier than now, so
        // every older expired deadline sorts before them.
        if deadline_ms > now_ms || sequence >= mark {
            return None;
        }
        let (key, action) = self.queue.remove(&(deadline_ms, sequence))?;
        self.by_key.remove(&key);
        Some((key, action))
    }

    /// Drops every deadline.
    pub fn clear(&mut self) {
        self.by_key.clear();
        self.queue.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(group: &str) -> TimerKey {
        TimerKey::Join {
            group_id: group.to_string(),
        }
    }

    #[test]
    fn rescheduling_replaces_and_pop_respects_time_and_mark() {
        let mut timers = Timers::default();
        timers.schedule(join("a"), 100, TimerAction::CompleteJoin);
        timers.schedule(join("b"), 50, TimerAction::CompleteJoin);
        timers.schedule(join("a"), 30, TimerAction::CompleteJoin);
        assert_eq!(timers.next_deadline(), Some(30));
        let mark = timers.sequence_mark();
        assert_eq!(timers.pop_expired(29, mark), None);
        assert_eq!(
            timers.pop_expired(60, mark).map(|(k, _)| k),
            Some(join("a"))
        );
        timers.schedule(join("c"), 60, TimerAction::CompleteJoin);
        assert_eq!(
            timers.pop_expired(60, mark).map(|(k, _)| k),
            Some(join("b"))
        );
        // "c" was scheduled after the mark: it waits for the next tick.
        assert_eq!(timers.pop_expired(60, mark), None);
        assert!(timers.contains(&join("c")));
        timers.cancel(&join("c"));
        assert_eq!(timers.next_deadline(), None);
    }
}
