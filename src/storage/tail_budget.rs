//! One memory budget for the in-memory tails of every log on a shard
//! (`--shard-cache-bytes`). Each log keeps at most its own
//! `--partition-cache-bytes` of recent batches; on top of that the shard
//! counts what all its logs hold, and when an append takes the total past
//! the budget, the oldest written batches of other logs go first, one log
//! after another in the order they started holding data, so a shard of many
//! partitions that were once busy cannot keep a full tail for each.
//!
//! Shard-local: the counters and the list of holders live in a thread
//! local of the shard's thread; logs are only touched through `Weak`
//! handles, and a log whose state is borrowed right now is skipped.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Weak;

/// A log whose tail can give batches back.
pub(super) trait TailHolder {
    /// Drops some of the oldest written batches of the tail (about half of
    /// it, at least one batch) and returns (bytes freed, whether batches
    /// remain). None when the log is busy (its state is borrowed).
    fn give_back(&self) -> Option<(usize, bool)>;
}

struct Budget {
    limit: usize,
    total: usize,
    /// Logs that held batches when last seen, oldest first; each at most
    /// once (a log registers when its tail goes from empty to non-empty and
    /// it is not listed).
    holders: VecDeque<Weak<dyn TailHolder>>,
}

thread_local! {
    static BUDGET: RefCell<Budget> = RefCell::new(Budget {
        limit: usize::MAX,
        total: 0,
        holders: VecDeque::new(),
    });
}

/// Bounds the bytes all logs of this shard keep in their in-memory tails.
pub fn configure_shard_cache(limit_bytes: usize) {
    BUDGET.with(|budget| budget.borrow_mut().limit = limit_bytes);
}

/// Bytes the logs of this shard hold in their in-memory tails.
pub fn shard_cached_bytes() -> usize {
    BUDGET.with(|budget| budget.borrow().total)
}

/// A log's tail grew by `bytes`.
pub(super) fn added(bytes: usize) {
    BUDGET.with(|budget| {
        let mut budget = budget.borrow_mut();
        budget.total += bytes;
    });
}

/// A log's tail shrank by `bytes`.
pub(super) fn removed(bytes: usize) {
    BUDGET.with(|budget| {
        let mut budget = budget.borrow_mut();
        budget.total = budget.total.saturating_sub(bytes);
    });
}

/// Lists a log that started holding batches.
pub(super) fn register(holder: Weak<dyn TailHolder>) {
    BUDGET.with(|budget| budget.borrow_mut().holders.push_back(holder));
}

/// While the shard is over budget, takes batches back from listed logs in
/// turn. Stops when under budget, or after a full round without progress
/// (every remaining batch is still unwritten, or its log busy).
pub(super) fn enforce() {
    let mut idle_visits = 0usize;
    loop {
        let next = BUDGET.with(|budget| {
            let mut budget = budget.borrow_mut();
            if budget.total <= budget.limit || idle_visits > budget.holders.len() {
                return None;
            }
            budget.holders.pop_front()
        });
        let Some(weak) = next else {
            return;
        };
        let Some(holder) = weak.upgrade() else {
            continue;
        };
        match holder.give_back() {
            Some((freed, remains)) => {
                idle_visits = if freed == 0 { idle_visits + 1 } else { 0 };
                if remains {
                    register(weak);
                }
            }
            None => {
                idle_visits += 1;
                register(weak);
            }
        }
    }
}
