//! Goal: two librdkafka consumers that `subscribe()` to one topic in one
//! group split its partitions between them, each partition owned by exactly
//! one member, with the `cooperative-sticky` assignor (incremental: the first
//! member keeps some partitions and is only asked to give up the ones that
//! move) and with the eager `range` assignor (everything revoked, then
//! reassigned); every message is consumed exactly once, a partition that
//! moves is resumed by its new owner at the offset the old owner committed,
//! the group's committed offsets end at the partitions' end offsets, and
//! when the second member leaves the first gets every partition back and
//! resumes where the leaver committed.
//!
//! Method: a broker whose first rebalance completes at once, a 6-partition
//! topic and 300 messages. Member 1 joins, is assigned all 6 partitions and
//! consumes and commits (synchronously, message by message) the 300. Member
//! 2 joins; both are polled until their assignments are disjoint, cover the
//! topic and are both non-empty; the rebalance callbacks each member saw are
//! checked against the protocol. 300 more messages are consumed by the two;
//! then member 2 closes (LeaveGroup) and member 1 consumes 300 more alone.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;

use common::groups::{
    assigned, committed_numbers, group_broker_options, group_consumer_config, poll_all_until,
    subscribed_consumer, Consumed, GroupConsumer, RebalanceEvent,
};
use common::kafka::{
    create_topic, end_offsets, future_producer, produce_all, producer_config, test_message,
    AckedMessage,
};
use common::Broker;

const PARTITIONS: i32 = 6;
const BATCH: u64 = 300;
const STEP_TIMEOUT: Duration = Duration::from_secs(20);

fn all_partitions() -> BTreeSet<i32> {
    (0..PARTITIONS).collect()
}

/// Produces messages `first..first + BATCH` round-robin over the partitions.
fn produce_batch(bootstrap: &str, topic: &str, first: u64) -> Vec<AckedMessage> {
    let messages: Vec<_> = (first..first + BATCH)
        .map(|index| test_message(index, (index % PARTITIONS as u64) as i32))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let producer = future_producer(&producer_config(bootstrap));
    runtime.block_on(produce_all(&producer, topic, &messages))
}

fn events_since(consumer: &GroupConsumer, from: usize) -> Vec<RebalanceEvent> {
    consumer.context().events()[from..].to_vec()
}

/// Asserts every offset in `from[p]..to[p]` was consumed exactly once over
/// all of `consumed`, and nothing outside those ranges (no re-delivery of
/// what was committed before).
fn assert_consumed_exactly_once(
    what: &str,
    consumed: &[Consumed],
    from: &BTreeMap<i32, i64>,
    to: &BTreeMap<i32, i64>,
) {
    let mut problems = Vec::new();
    for partition in 0..PARTITIONS {
        let mut offsets: Vec<i64> = consumed.iter().flat_map(|c| c.offsets(partition)).collect();
        offsets.sort_unstable();
        let wanted: Vec<i64> = (from[&partition]..to[&partition]).collect();
        if offsets != wanted {
            problems.push(format!(
                "partition {partition}: consumed {} (sorted, over all members), wanted {}..{}",
                common::kafka::summarize_offsets(&offsets),
                from[&partition],
                to[&partition]
            ));
        }
    }
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

fn balance_and_commit(strategy: &str) {
    let broker = Broker::start(group_broker_options());
    let bootstrap = broker.bootstrap();
    let topic = format!("{strategy}-orders");
    let group = format!("{strategy}-readers");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(create_topic(&bootstrap, &topic, PARTITIONS));

    let batch1 = produce_batch(&bootstrap, &topic, 0);
    let ends1 = end_offsets(&batch1);
    let zeros: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, 0)).collect();

    let mut config = group_consumer_config(&bootstrap, &group);
    config.set("partition.assignment.strategy", strategy);
    let first = subscribed_consumer(&config, "member-1", &topic);
    let mut consumed = vec![Consumed::default(), Consumed::default()];
    let mut errors = Vec::new();

    // Member 1 alone: every partition, every message of batch 1.
    let ok = poll_all_until(
        &[&first],
        &topic,
        &mut consumed[..1],
        &mut errors,
        STEP_TIMEOUT,
        |consumers, consumed| {
            assigned(consumers[0]) == all_partitions() && consumed[0].next_offsets() == ends1
        },
    );
    assert!(
        ok,
        "{strategy}: member 1 alone should be assigned all partitions and consume batch 1 \
         (end offsets {ends1:?}); assigned {:?}, consumed up to {:?}, rebalances {:?}, \
         errors {errors:?}",
        assigned(&first),
        consumed[0].next_offsets(),
        first.context().events()
    );
    assert_eq!(
        committed_numbers(&bootstrap, &group, &topic, PARTITIONS),
        ends1,
        "{strategy}: committed offsets after member 1 consumed batch 1"
    );
    let first_events_before_join = first.context().events().len();

    // Member 2 joins: the partitions are split, each owned exactly once.
    let second = subscribed_consumer(&config, "member-2", &topic);
    let join_started = Instant::now();
    let ok = poll_all_until(
        &[&first, &second],
        &topic,
        &mut consumed,
        &mut errors,
        STEP_TIMEOUT,
        |consumers, _| {
            let a = assigned(consumers[0]);
            let b = assigned(consumers[1]);
            !a.is_empty()
                && !b.is_empty()
                && a.is_disjoint(&b)
                && a.union(&b).copied().collect::<BTreeSet<_>>() == all_partitions()
        },
    );
    let first_after = assigned(&first);
    let second_after = assigned(&second);
    assert!(
        ok,
        "{strategy}: after member 2 joined, the two assignments should split the {PARTITIONS} \
         partitions; member 1 has {first_after:?}, member 2 has {second_after:?}; rebalances: \
         member 1 {:?}, member 2 {:?}; errors {errors:?}",
        first.context().events(),
        second.context().events()
    );
    eprintln!(
        "{strategy}: rebalance after the join took {:?}: member 1 {first_after:?}, member 2 \
         {second_after:?}",
        join_started.elapsed()
    );
    assert_eq!(
        (first_after.len(), second_after.len()),
        (3, 3),
        "{strategy}: both assignors split 6 partitions over 2 members 3 and 3"
    );

    let first_events = events_since(&first, first_events_before_join);
    let second_events = second.context().events();
    match strategy {
        "cooperative-sticky" => {
            // Incremental: member 1 is only told to give up what moves, never
            // everything, and keeps the rest throughout.
            let revoked: BTreeSet<i32> = first_events
                .iter()
                .filter_map(|e| match e {
                    RebalanceEvent::Revoke(p) => Some(p.clone()),
                    _ => None,
                })
                .flatten()
                .collect();
            assert_eq!(
                revoked, second_after,
                "{strategy}: member 1 should revoke exactly the partitions that moved to \
                 member 2; its rebalances since the join: {first_events:?}"
            );
            for event in &first_events {
                match event {
                    RebalanceEvent::Revoke(p) => assert!(
                        p.len() < PARTITIONS as usize,
                        "{strategy}: member 1 had all its partitions revoked at once (eager), \
                         rebalances {first_events:?}"
                    ),
                    RebalanceEvent::Assign(p) => assert!(
                        p.is_subset(&first_after),
                        "{strategy}: incremental assign {p:?} to member 1 is not part of its \
                         final {first_after:?}: {first_events:?}"
                    ),
                    RebalanceEvent::Error(e) => {
                        panic!("{strategy}: member 1 rebalance error {e}: {first_events:?}")
                    }
                }
            }
            let given: BTreeSet<i32> = second_events
                .iter()
                .filter_map(|e| match e {
                    RebalanceEvent::Assign(p) => Some(p.clone()),
                    _ => None,
                })
                .flatten()
                .collect();
            assert_eq!(
                given, second_after,
                "{strategy}: member 2's incremental assigns: {second_events:?}"
            );
            assert!(
                !second_events
                    .iter()
                    .any(|e| matches!(e, RebalanceEvent::Revoke(p) if !p.is_empty())),
                "{strategy}: member 2 lost partitions during the join: {second_events:?}"
            );
        }
        "range" => {
            // Eager: member 1 gives up everything, then gets its share.
            assert_eq!(
                first_events,
                vec![
                    RebalanceEvent::Revoke(all_partitions()),
                    RebalanceEvent::Assign(first_after.clone()),
                ],
                "{strategy}: member 1's rebalances since member 2 joined"
            );
            assert_eq!(
                second_events,
                vec![RebalanceEvent::Assign(second_after.clone())],
                "{strategy}: member 2's rebalances"
            );
            // Range gives each member a contiguous block of the sorted
            // partitions.
            for owned in [&first_after, &second_after] {
                let lowest = *owned.iter().next().expect("non-empty");
                assert_eq!(
                    owned,
                    &(lowest..lowest + 3).collect::<BTreeSet<_>>(),
                    "{strategy}: not a range assignment: {first_after:?} / {second_after:?}"
                );
            }
        }
        other => panic!("no expectations for strategy {other}"),
    }
    assert!(
        consumed[1].records.is_empty(),
        "{strategy}: member 2 consumed {:?} although batch 1 was committed before it joined",
        consumed[1].records
    );

    // Batch 2, consumed by both; no rebalance while the group is stable.
    let stable_events = (
        first.context().events().len(),
        second.context().events().len(),
    );
    let batch2 = produce_batch(&bootstrap, &topic, BATCH);
    let ends2 = end_offsets(&batch1.iter().chain(&batch2).cloned().collect::<Vec<_>>());
    let ok = poll_all_until(
        &[&first, &second],
        &topic,
        &mut consumed,
        &mut errors,
        STEP_TIMEOUT,
        |_, consumed| {
            let mut next = consumed[0].next_offsets();
            for (partition, offset) in consumed[1].next_offsets() {
                let entry = next.entry(partition).or_insert(0);
                *entry = (*entry).max(offset);
            }
            next == ends2
        },
    );
    assert!(
        ok,
        "{strategy}: batch 2 not consumed within {STEP_TIMEOUT:?}: member 1 up to {:?}, member 2 \
         up to {:?}, wanted {ends2:?}; errors {errors:?}",
        consumed[0].next_offsets(),
        consumed[1].next_offsets()
    );
    // A cooperative member may still get the empty incremental Assign of
    // the rebalance's last generation after the split is visible; any
    // callback that moves a partition is a rebalance of a stable group.
    let moves = |events: Vec<RebalanceEvent>| -> Vec<RebalanceEvent> {
        events
            .into_iter()
            .filter(|e| match e {
                RebalanceEvent::Assign(p) | RebalanceEvent::Revoke(p) => !p.is_empty(),
                RebalanceEvent::Error(_) => true,
            })
            .collect()
    };
    assert_eq!(
        (
            moves(events_since(&first, stable_events.0)),
            moves(events_since(&second, stable_events.1))
        ),
        (Vec::new(), Vec::new()),
        "{strategy}: rebalance callbacks while the group was stable: member 1 {:?}, member 2 {:?}",
        first.context().events(),
        second.context().events()
    );
    for (member, owned, other) in [
        (0, &first_after, &second_after),
        (1, &second_after, &first_after),
    ] {
        let strays: Vec<&(i32, i64)> = consumed[member]
            .records
            .iter()
            .filter(|(p, o)| *o >= ends1[p] && !owned.contains(p))
            .collect();
        assert!(
            strays.is_empty(),
            "{strategy}: member {} consumed batch-2 records of partitions it does not own \
             (it owns {owned:?}, the other {other:?}): {strays:?}",
            member + 1
        );
    }
    // The new owner of a moved partition starts exactly at the old owner's
    // commit.
    for &partition in &second_after {
        let offsets = consumed[1].offsets(partition);
        assert_eq!(
            offsets.first().copied(),
            Some(ends1[&partition]),
            "{strategy}: member 2's first offset on moved partition {partition} (member 1 \
             committed {}); member 2 read {}",
            ends1[&partition],
            common::kafka::summarize_offsets(&offsets)
        );
    }
    assert_consumed_exactly_once(
        &format!("{strategy}: batches 1 and 2"),
        &consumed,
        &zeros,
        &ends2,
    );
    assert_eq!(
        committed_numbers(&bootstrap, &group, &topic, PARTITIONS),
        ends2,
        "{strategy}: committed offsets after batch 2"
    );
    assert!(errors.is_empty(), "{strategy}: consumer errors: {errors:?}");

    // Member 2 leaves: member 1 takes everything back and resumes at member
    // 2's commits.
    let first_events_before_leave = first.context().events().len();
    let before_leave = consumed[0].records.len();
    let leave_started = Instant::now();
    drop(second);
    let ok = poll_all_until(
        &[&first],
        &topic,
        &mut consumed[..1],
        &mut errors,
        STEP_TIMEOUT,
        |consumers, _| assigned(consumers[0]) == all_partitions(),
    );
    assert!(
        ok,
        "{strategy}: after member 2 left, member 1 should own all partitions; it has {:?}, \
         rebalances since {:?}",
        assigned(&first),
        events_since(&first, first_events_before_leave)
    );
    eprintln!(
        "{strategy}: rebalance after the leave took {:?}",
        leave_started.elapsed()
    );
    let batch3 = produce_batch(&bootstrap, &topic, 2 * BATCH);
    let ends3 = end_offsets(
        &batch1
            .iter()
            .chain(&batch2)
            .chain(&batch3)
            .cloned()
            .collect::<Vec<_>>(),
    );
    let ok = poll_all_until(
        &[&first],
        &topic,
        &mut consumed[..1],
        &mut errors,
        STEP_TIMEOUT,
        |_, consumed| consumed[0].next_offsets() == ends3,
    );
    assert!(
        ok,
        "{strategy}: member 1 alone did not consume batch 3: up to {:?}, wanted {ends3:?}",
        consumed[0].next_offsets()
    );
    let after_leave = Consumed {
        records: consumed[0].records[before_leave..].to_vec(),
    };
    assert_consumed_exactly_once(
        &format!("{strategy}: batch 3 after member 2 left"),
        &[after_leave],
        &ends2,
        &ends3,
    );
    assert_eq!(
        committed_numbers(&bootstrap, &group, &topic, PARTITIONS),
        ends3,
        "{strategy}: committed offsets after batch 3"
    );
    assert!(errors.is_empty(), "{strategy}: consumer errors: {errors:?}");
    drop(first);
}

#[test]
fn cooperative_sticky_members_split_partitions_incrementally_and_commit() {
    balance_and_commit("cooperative-sticky");
}

#[test]
fn range_members_split_partitions_eagerly_and_commit() {
    balance_and_commit("range");
}
