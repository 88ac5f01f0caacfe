//! Goal: static membership (KIP-345, `group.instance.id`) works as users rely
//! on it. A static member that closes (static members send no LeaveGroup)
//! stays in the group; when a consumer with the same instance id comes back
//! within the session timeout it gets the same partitions again under a new
//! member id, and the other member sees no rebalance at all. That holds for a
//! follower and for the group leader. Two live consumers with one instance
//! id: the newer takes over the partitions and the older is fenced, which
//! librdkafka raises as the fatal error FENCED_INSTANCE_ID.
//!
//! Method: a broker whose first rebalance completes at once; librdkafka
//! consumers with instance ids, range assignment, a 10 s session timeout and
//! 300 ms heartbeats, committing message by message. The rebalance callbacks
//! each consumer sees are recorded; the group's members come from
//! ListGroups/DescribeGroups (`fetch_group_list`). "No rebalance" is checked
//! over at least 2 s of heartbeats after the returning member got its
//! partitions, while both consume new messages.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::RDKafkaErrorCode;

use common::groups::{
    assigned, committed_numbers, group_broker_options, group_consumer_config, poll_all_until,
    subscribed_consumer, Consumed, GroupConsumer, RebalanceEvent,
};
use common::kafka::{
    create_topic, end_offsets, future_producer, produce_all, producer_config, test_message,
    AckedMessage,
};
use common::Broker;

const STEP_TIMEOUT: Duration = Duration::from_secs(20);
const QUIET_WINDOW: Duration = Duration::from_secs(2);

fn produce(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    first: u64,
    count: u64,
) -> Vec<AckedMessage> {
    let messages: Vec<_> = (first..first + count)
        .map(|index| test_message(index, (index % partitions as u64) as i32))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let producer = future_producer(&producer_config(bootstrap));
    runtime.block_on(produce_all(&producer, topic, &messages))
}

fn static_config(bootstrap: &str, group: &str, instance: &str) -> ClientConfig {
    let mut config = group_consumer_config(bootstrap, group);
    config
        .set("group.instance.id", instance)
        .set("client.id", instance)
        .set("session.timeout.ms", "10000")
        .set("partition.assignment.strategy", "range");
    config
}

/// `(state, [(client id, member id)])` of `group` as DescribeGroups tells it.
fn describe(consumer: &GroupConsumer, group: &str) -> (String, Vec<(String, String)>) {
    let list = consumer
        .fetch_group_list(Some(group), Duration::from_secs(10))
        .unwrap_or_else(|error| panic!("DescribeGroups {group}: {error}"));
    let info = list
        .groups()
        .iter()
        .find(|g| g.name() == group)
        .unwrap_or_else(|| panic!("DescribeGroups does not list {group}"));
    let mut members: Vec<(String, String)> = info
        .members()
        .iter()
        .map(|m| (m.client_id().to_string(), m.id().to_string()))
        .collect();
    members.sort();
    (info.state().to_string(), members)
}

fn member_id_of(members: &[(String, String)], client: &str) -> String {
    members
        .iter()
        .find(|(c, _)| c == client)
        .unwrap_or_else(|| panic!("no member with client id {client} in {members:?}"))
        .1
        .clone()
}

/// Union of what every member consumed, checked to be `from..to` exactly
/// once per partition.
fn assert_consumed_exactly_once(
    what: &str,
    consumed: &[&Consumed],
    partitions: i32,
    from: &BTreeMap<i32, i64>,
    to: &BTreeMap<i32, i64>,
) {
    for partition in 0..partitions {
        let mut offsets: Vec<i64> = consumed.iter().flat_map(|c| c.offsets(partition)).collect();
        offsets.sort_unstable();
        let wanted: Vec<i64> = (from[&partition]..to[&partition]).collect();
        assert_eq!(
            offsets,
            wanted,
            "{what}: partition {partition} consumed {} over all members",
            common::kafka::summarize_offsets(&offsets)
        );
    }
}

/// Replaces the member `leaving` (one of `pair`) by a new consumer with the
/// same instance id and checks that it gets the same partitions back and
/// the other member sees no rebalance. Returns the new pair, same order.
#[allow(clippy::too_many_arguments)]
fn restart_static_member(
    what: &str,
    bootstrap: &str,
    topic: &str,
    group: &str,
    partitions: i32,
    pair: [GroupConsumer; 2],
    leaving: usize,
    produced_so_far: &mut u64,
) -> [GroupConsumer; 2] {
    let staying = 1 - leaving;
    let [a, b] = pair;
    let mut members = [Some(a), Some(b)];
    let stayer = members[staying].take().expect("staying member");
    let leaver = members[leaving].take().expect("leaving member");
    let instance = leaver.context().name.clone();
    let owned = assigned(&leaver);
    let stayer_owned = assigned(&stayer);
    let stayer_events = stayer.context().events().len();
    let (state, before) = describe(&stayer, group);
    assert_eq!(state, "Stable", "{what}: group state before the restart");
    let old_member_id = member_id_of(&before, &instance);

    let closed_at = Instant::now();
    drop(leaver);
    eprintln!("{what}: {instance} closed in {:?}", closed_at.elapsed());
    // A static member's close sends no LeaveGroup: it is still a member.
    let (state, during) = describe(&stayer, group);
    assert_eq!(
        (state.as_str(), during.len()),
        ("Stable", 2),
        "{what}: after the static member {instance} closed, the group should keep it \
         (no LeaveGroup); members {during:?}"
    );

    let committed_before = committed_numbers(bootstrap, group, topic, partitions);
    let returning = subscribed_consumer(
        &static_config(bootstrap, group, &instance),
        &instance,
        topic,
    );
    let mut consumed = [Consumed::default(), Consumed::default()];
    let mut errors = Vec::new();
    let ok = poll_all_until(
        &[&stayer, &returning],
        topic,
        &mut consumed,
        &mut errors,
        STEP_TIMEOUT,
        |consumers, _| assigned(consumers[1]) == owned,
    );
    assert!(
        ok,
        "{what}: {instance} came back within the session timeout but did not get its \
         partitions {owned:?} back: it has {:?}, rebalances {:?}; the other member has {:?} \
         (rebalances {:?}); errors {errors:?}",
        assigned(&returning),
        returning.context().events(),
        assigned(&stayer),
        stayer.context().events()
    );
    eprintln!(
        "{what}: {instance} got {owned:?} back {:?} after it closed",
        closed_at.elapsed()
    );

    // Both consume new messages; the staying member sees no rebalance.
    let from = committed_before;
    let batch = produce(bootstrap, topic, partitions, *produced_so_far, 100);
    *produced_so_far += 100;
    let mut to = from.clone();
    for (partition, end) in end_offsets(&batch) {
        to.insert(partition, end);
    }
    let quiet_from = Instant::now();
    let ok = poll_all_until(
        &[&stayer, &returning],
        topic,
        &mut consumed,
        &mut errors,
        STEP_TIMEOUT,
        |_, consumed| {
            let mut next = consumed[0].next_offsets();
            for (p, o) in consumed[1].next_offsets() {
                let entry = next.entry(p).or_insert(0);
                *entry = (*entry).max(o);
            }
            next == to && quiet_from.elapsed() >= QUIET_WINDOW
        },
    );
    assert!(
        ok,
        "{what}: new messages not consumed: staying member up to {:?}, {instance} up to {:?}, \
         wanted {to:?}; errors {errors:?}",
        consumed[0].next_offsets(),
        consumed[1].next_offsets()
    );
    assert_eq!(
        stayer.context().events()[stayer_events..].to_vec(),
        Vec::<RebalanceEvent>::new(),
        "{what}: the member that stayed saw a rebalance when static member {instance} came back"
    );
    assert_eq!(
        assigned(&stayer),
        stayer_owned,
        "{what}: staying member's partitions"
    );
    assert_eq!(
        returning.context().events(),
        vec![RebalanceEvent::Assign(owned.clone())],
        "{what}: {instance}'s rebalance callbacks"
    );
    assert_consumed_exactly_once(
        &format!("{what}: messages after the restart"),
        &[&consumed[0], &consumed[1]],
        partitions,
        &from,
        &to,
    );
    assert!(errors.is_empty(), "{what}: consumer errors {errors:?}");
    let (state, after) = describe(&stayer, group);
    assert_eq!(state, "Stable", "{what}: group state after the restart");
    assert_eq!(
        after.len(),
        2,
        "{what}: members after the restart: {after:?}"
    );
    let new_member_id = member_id_of(&after, &instance);
    assert_ne!(
        new_member_id, old_member_id,
        "{what}: the returning static member should have a new member id"
    );
    let mut result = [Some(stayer), Some(returning)];
    if leaving == 0 {
        result.swap(0, 1);
    }
    let [x, y] = result;
    [x.expect("member"), y.expect("member")]
}

#[test]
fn static_member_restarting_within_session_timeout_keeps_its_partitions_without_rebalance() {
    const TOPIC: &str = "static-orders";
    const GROUP: &str = "static-readers";
    const PARTITIONS: i32 = 4;
    let broker = Broker::start(group_broker_options());
    let bootstrap = broker.bootstrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(create_topic(&bootstrap, TOPIC, PARTITIONS));
    let batch = produce(&bootstrap, TOPIC, PARTITIONS, 0, 200);
    let ends = end_offsets(&batch);
    let mut produced = 200u64;

    // instance-a joins first (and stays the leader), instance-b second.
    let a = subscribed_consumer(
        &static_config(&bootstrap, GROUP, "instance-a"),
        "instance-a",
        TOPIC,
    );
    let mut consumed = [Consumed::default(), Consumed::default()];
    let mut errors = Vec::new();
    let all: BTreeSet<i32> = (0..PARTITIONS).collect();
    let ok = poll_all_until(
        &[&a],
        TOPIC,
        &mut consumed[..1],
        &mut errors,
        STEP_TIMEOUT,
        |c, consumed| assigned(c[0]) == all && consumed[0].next_offsets() == ends,
    );
    assert!(
        ok,
        "instance-a alone: assigned {:?}, consumed {:?}, errors {errors:?}",
        assigned(&a),
        consumed[0].next_offsets()
    );
    let b = subscribed_consumer(
        &static_config(&bootstrap, GROUP, "instance-b"),
        "instance-b",
        TOPIC,
    );
    let ok = poll_all_until(
        &[&a, &b],
        TOPIC,
        &mut consumed,
        &mut errors,
        STEP_TIMEOUT,
        |c, _| {
            let (x, y) = (assigned(c[0]), assigned(c[1]));
            x.len() == 2 && y.len() == 2 && x.is_disjoint(&y)
        },
    );
    assert!(
        ok,
        "instance-b joined: assignments {:?} / {:?}, errors {errors:?}",
        assigned(&a),
        assigned(&b)
    );
    assert!(errors.is_empty(), "consumer errors {errors:?}");

    // The follower restarts, then the leader.
    let pair = restart_static_member(
        "follower restart",
        &bootstrap,
        TOPIC,
        GROUP,
        PARTITIONS,
        [a, b],
        1,
        &mut produced,
    );
    let pair = restart_static_member(
        "leader restart",
        &bootstrap,
        TOPIC,
        GROUP,
        PARTITIONS,
        pair,
        0,
        &mut produced,
    );
    drop(pair);
}

#[test]
fn two_live_members_with_one_instance_id_fence_the_older() {
    const TOPIC: &str = "fenced-orders";
    const GROUP: &str = "fenced-readers";
    const PARTITIONS: i32 = 2;
    let broker = Broker::start(group_broker_options());
    let bootstrap = broker.bootstrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(create_topic(&bootstrap, TOPIC, PARTITIONS));
    let batch = produce(&bootstrap, TOPIC, PARTITIONS, 0, 100);
    let ends = end_offsets(&batch);
    let all: BTreeSet<i32> = (0..PARTITIONS).collect();

    let mut old_config = static_config(&bootstrap, GROUP, "dup");
    old_config.set("client.id", "dup-old");
    let old = subscribed_consumer(&old_config, "dup-old", TOPIC);
    let mut consumed = [Consumed::default(), Consumed::default()];
    let mut errors = Vec::new();
    let ok = poll_all_until(
        &[&old],
        TOPIC,
        &mut consumed[..1],
        &mut errors,
        STEP_TIMEOUT,
        |c, consumed| assigned(c[0]) == all && consumed[0].next_offsets() == ends,
    );
    assert!(
        ok,
        "older member: assigned {:?}, consumed {:?}, errors {errors:?}",
        assigned(&old),
        consumed[0].next_offsets()
    );

    let (_, before) = describe(&old, GROUP);
    let old_member_id = member_id_of(&before, "dup-old");

    let mut new_config = static_config(&bootstrap, GROUP, "dup");
    new_config.set("client.id", "dup-new");
    let new = subscribed_consumer(&new_config, "dup-new", TOPIC);
    let started = Instant::now();
    let ok = poll_all_until(
        &[&old, &new],
        TOPIC,
        &mut consumed,
        &mut errors,
        STEP_TIMEOUT,
        |c, _| c[0].client().fatal_error().is_some() && assigned(c[1]) == all,
    );
    assert!(
        ok,
        "with two live consumers of instance id \"dup\", the older should be fenced (fatal \
         error) and the newer own every partition: older fatal error {:?}, errors {:?}, \
         rebalances {:?}; newer assigned {:?}, rebalances {:?}; poll errors {errors:?}",
        old.client().fatal_error(),
        old.context().errors(),
        old.context().events(),
        assigned(&new),
        new.context().events()
    );
    eprintln!("fenced after {:?}", started.elapsed());
    let (code, reason) = old.client().fatal_error().expect("fatal error");
    assert_eq!(
        code,
        RDKafkaErrorCode::FencedInstanceId,
        "the older member's fatal error ({reason})"
    );

    // The fenced member can no longer commit; the newer one can.
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(TOPIC, 0, rdkafka::Offset::Offset(1))
        .expect("add partition offset");
    let refused = old.commit(&tpl, CommitMode::Sync);
    assert!(
        refused.is_err(),
        "a commit by the fenced member succeeded: {refused:?}"
    );
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends,
        "committed offsets after the fenced member's commit attempt"
    );
    let batch2 = produce(&bootstrap, TOPIC, PARTITIONS, 100, 100);
    let mut ends2 = ends.clone();
    ends2.extend(end_offsets(&batch2));
    let ok = poll_all_until(
        &[&new],
        TOPIC,
        &mut consumed[1..],
        &mut errors,
        STEP_TIMEOUT,
        |_, consumed| consumed[0].next_offsets() == ends2,
    );
    assert!(
        ok,
        "the newer member did not consume the new messages: {:?}, wanted {ends2:?}; errors \
         {errors:?}",
        consumed[1].next_offsets()
    );
    assert_consumed_exactly_once(
        "the newer member resumes at the older one's commits",
        &[&consumed[1]],
        PARTITIONS,
        &ends,
        &ends2,
    );
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends2,
        "committed offsets of the newer member"
    );
    let (state, members) = describe(&new, GROUP);
    assert_eq!(
        (state.as_str(), members.len()),
        ("Stable", 1),
        "group after the fencing: {members:?}"
    );
    // Kafka keeps the replaced static member's client id and host, so only
    // the member id tells the newer consumer apart.
    assert_ne!(
        members[0].1, old_member_id,
        "the remaining member should be the newer consumer, with a new member id"
    );
    drop(old);
    drop(new);
}
