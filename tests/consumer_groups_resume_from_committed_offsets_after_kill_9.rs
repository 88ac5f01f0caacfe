//! Goal: offsets a group committed survive a broker crash (SIGKILL) and a
//! clean restart: after the restart OffsetFetch answers exactly what was
//! acknowledged last, and a consumer that subscribes in the group resumes
//! at exactly those offsets: nothing before a committed offset is delivered
//! again, nothing after it is skipped. Commits of both kinds count: those of
//! a subscribed member (with its generation, many per partition, so the
//! reload must keep the latest) and the generation-less commit of an
//! `assign()` consumer to an empty group; the SIGKILL follows the last
//! acknowledged commit at once. A member still in the group when the broker
//! dies carries on after the restart from where it was.
//!
//! Method: a broker with the default 50 `__consumer_offsets` partitions, a
//! 3-partition topic with 100 messages per partition. Member 1 consumes and
//! commits message by message up to offset 40 on partition 0 and 100 on
//! partition 1 (nothing on partition 2), then leaves; an `assign()` consumer
//! commits 77 for partition 2; SIGKILL; restart. One more message per
//! partition; member 2 must read exactly 40..=100, 100..=100 and 77..=100
//! and commits them; SIGKILL while member 2 is still in the group; restart;
//! the committed offsets are 101; one more message per partition reaches
//! member 2 and nothing else does; member 2 commits and leaves; a SIGTERM
//! restart keeps 102.
//!
//! Second test: the same holds once `__consumer_offsets` has rolled segments
//! and the log cleaner compacted them: the latest of hundreds of commits of
//! one key survives, a deleted group (DeleteGroups) and a deleted offset
//! (OffsetDelete) stay deleted after a SIGKILL and restart. Method: one
//! `__consumer_offsets` partition with 16 KiB segments, 500 commits of one
//! partition by an `assign()` consumer, a second group committed and then
//! deleted, a third with one of its two offsets deleted; the test waits for
//! the broker's "compacted" log line for `__consumer_offsets` (the cleaner
//! runs every 15 s), commits once more, SIGKILLs and restarts.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use common::groups::{
    committed_numbers, group_consumer_config, poll_and_commit, subscribed_consumer, Consumed,
    GroupConsumer,
};
use common::kafka::{
    create_topic, future_producer, produce_all, producer_config, summarize_offsets, test_message,
};
use common::wire::RawClient;
use common::{Broker, BrokerOptions};

const TOPIC: &str = "payments";
const GROUP: &str = "payment-processors";
const PARTITIONS: i32 = 3;
const PER_PARTITION: u64 = 100;
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

fn produce(bootstrap: &str, first: u64, count: u64) {
    let messages: Vec<_> = (first..first + count)
        .map(|index| test_message(index, (index % PARTITIONS as u64) as i32))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let producer = future_producer(&producer_config(bootstrap));
    runtime.block_on(produce_all(&producer, TOPIC, &messages));
}

/// Polls `consumer`, committing each message, until it has consumed up to
/// `ends` (exclusive) on every partition.
fn consume_until(consumer: &GroupConsumer, consumed: &mut Consumed, ends: &BTreeMap<i32, i64>) {
    let deadline = Instant::now() + STEP_TIMEOUT;
    let mut errors = Vec::new();
    while ends
        .iter()
        .any(|(p, end)| consumed.next_offsets().get(p).copied().unwrap_or(0) < *end)
    {
        assert!(
            Instant::now() < deadline,
            "consumer did not reach {ends:?} within {STEP_TIMEOUT:?}: consumed {:?}, errors \
             {errors:?}",
            (0..PARTITIONS)
                .map(|p| (p, summarize_offsets(&consumed.offsets(p))))
                .collect::<Vec<_>>()
        );
        if let Some(Err(error)) =
            poll_and_commit(consumer, TOPIC, consumed, Duration::from_millis(100))
        {
            errors.push(error.to_string());
        }
    }
}

fn assert_read_exactly(what: &str, consumed: &Consumed, from: &BTreeMap<i32, i64>, to: i64) {
    for partition in 0..PARTITIONS {
        let offsets = consumed.offsets(partition);
        let wanted: Vec<i64> = (from[&partition]..to).collect();
        assert_eq!(
            offsets,
            wanted,
            "{what}: partition {partition} read {} but the group had committed {} (end {to})",
            summarize_offsets(&offsets),
            from[&partition]
        );
    }
}

#[test]
fn consumer_groups_resume_from_committed_offsets_after_kill_9() {
    // Default offsets.topic.num.partitions (50) and session timeouts.
    let mut broker =
        Broker::start(BrokerOptions::default().arg("--group-initial-rebalance-delay-ms", 0));
    let bootstrap = broker.bootstrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(create_topic(&bootstrap, TOPIC, PARTITIONS));
    produce(&bootstrap, 0, PER_PARTITION * PARTITIONS as u64);
    let config = group_consumer_config(&bootstrap, GROUP);

    // Member 1 commits message by message up to 40 on p0 and 100 on p1.
    let targets: BTreeMap<i32, i64> = [(0, 40), (1, 100)].into();
    {
        let member = subscribed_consumer(&config, "member-1", TOPIC);
        let mut committed: BTreeMap<i32, i64> = BTreeMap::new();
        let deadline = Instant::now() + STEP_TIMEOUT;
        while committed != targets {
            assert!(
                Instant::now() < deadline,
                "member 1 committed only {committed:?} of {targets:?} within {STEP_TIMEOUT:?}"
            );
            let Some(result) = member.poll(Duration::from_millis(100)) else {
                continue;
            };
            let message = result.unwrap_or_else(|error| panic!("member 1 poll: {error}"));
            let (partition, offset) = (message.partition(), message.offset());
            let Some(&target) = targets.get(&partition) else {
                continue;
            };
            if offset >= target {
                continue;
            }
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(TOPIC, partition, Offset::Offset(offset + 1))
                .expect("add partition offset");
            member
                .commit(&tpl, CommitMode::Sync)
                .unwrap_or_else(|error| {
                    panic!("member 1 commit {partition}@{}: {error}", offset + 1)
                });
            committed.insert(partition, offset + 1);
        }
    } // dropped: LeaveGroup, the group is empty
    assert_eq!(
        common::groups::committed_offsets(&bootstrap, GROUP, TOPIC, PARTITIONS),
        [
            (0, Offset::Offset(40)),
            (1, Offset::Offset(100)),
            (2, Offset::Invalid)
        ]
        .into(),
        "committed offsets before the crash"
    );

    // A generation-less commit of an assign() consumer, then SIGKILL at once.
    {
        let simple: BaseConsumer = config.create().expect("create assign() consumer");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(TOPIC, 2, Offset::Offset(77))
            .expect("add partition offset");
        simple.assign(&tpl).expect("assign partition 2");
        simple
            .commit(&tpl, CommitMode::Sync)
            .unwrap_or_else(|error| panic!("simple commit of partition 2 @77: {error}"));
        broker.kill9();
    }
    broker.restart();

    let expected: BTreeMap<i32, i64> = [(0, 40), (1, 100), (2, 77)].into();
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        expected,
        "committed offsets after kill -9 and restart"
    );

    // Member 2 resumes at exactly the committed offsets.
    produce(&bootstrap, 300, PARTITIONS as u64);
    let member = subscribed_consumer(&config, "member-2", TOPIC);
    let mut consumed = Consumed::default();
    let ends: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, 101)).collect();
    consume_until(&member, &mut consumed, &ends);
    assert_read_exactly("member 2 after the first crash", &consumed, &expected, 101);
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends,
        "member 2's commits"
    );

    // SIGKILL while member 2 is in the group; its commits survive and it
    // goes on from where it was.
    broker.kill9();
    broker.restart();
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends,
        "committed offsets after the second kill -9 (member 2 still in the group)"
    );
    produce(&bootstrap, 303, PARTITIONS as u64);
    let mut after = Consumed::default();
    let ends2: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, 102)).collect();
    consume_until(&member, &mut after, &ends2);
    assert_read_exactly("member 2 after the second crash", &after, &ends, 102);
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends2,
        "member 2's commits after the second restart"
    );
    drop(member);

    broker.restart();
    assert_eq!(
        committed_numbers(&bootstrap, GROUP, TOPIC, PARTITIONS),
        ends2,
        "committed offsets after a clean restart"
    );
}

/// Commits `offsets` of `group` through an `assign()` consumer (no
/// generation: the way tools and simple consumers commit to an empty group).
fn simple_commit(bootstrap: &str, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let consumer: BaseConsumer = group_consumer_config(bootstrap, group)
        .create()
        .expect("create assign() consumer");
    let mut tpl = TopicPartitionList::new();
    for &(partition, offset) in offsets {
        tpl.add_partition_offset(topic, partition, Offset::Offset(offset))
            .expect("add partition offset");
    }
    consumer.assign(&tpl).expect("assign");
    consumer
        .commit(&tpl, CommitMode::Sync)
        .unwrap_or_else(|error| panic!("commit {offsets:?} for {group}: {error}"));
}

fn listed_groups(bootstrap: &str) -> Vec<String> {
    let consumer: BaseConsumer = group_consumer_config(bootstrap, "lister")
        .create()
        .expect("create ListGroups consumer");
    let mut names: Vec<String> = consumer
        .fetch_group_list(None, Duration::from_secs(10))
        .expect("ListGroups")
        .groups()
        .iter()
        .map(|g| g.name().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn committed_offsets_and_deletions_survive_compaction_of_consumer_offsets_and_kill_9() {
    use kafka_protocol::messages::offset_delete_request::{
        OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    };
    use kafka_protocol::messages::{
        ApiKey, GroupId, OffsetDeleteRequest, OffsetDeleteResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    use rdkafka::admin::AdminOptions;

    const LEDGER: &str = "ledger";
    const BUSY: &str = "busy-group";
    const DELETED: &str = "deleted-group";
    const PRUNED: &str = "pruned-group";
    const COMMITS: i64 = 500;

    let mut broker = Broker::start(
        BrokerOptions::default()
            .arg("--group-initial-rebalance-delay-ms", 0)
            .arg("--offsets-topic-num-partitions", 1)
            .arg("--offsets-topic-segment-bytes", 16 * 1024),
    );
    let bootstrap = broker.bootstrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(create_topic(&bootstrap, LEDGER, 2));

    // Hundreds of commits of one key: many segments, almost all dirty.
    {
        let consumer: BaseConsumer = group_consumer_config(&bootstrap, BUSY)
            .create()
            .expect("create assign() consumer");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(LEDGER, 0, Offset::Offset(0))
            .expect("add partition");
        consumer.assign(&tpl).expect("assign");
        for offset in 1..=COMMITS {
            let mut commit = TopicPartitionList::new();
            commit
                .add_partition_offset(LEDGER, 0, Offset::Offset(offset))
                .expect("add partition offset");
            consumer
                .commit(&commit, CommitMode::Sync)
                .unwrap_or_else(|error| panic!("commit {offset} for {BUSY}: {error}"));
        }
    }
    simple_commit(&bootstrap, DELETED, LEDGER, &[(0, 11), (1, 12)]);
    simple_commit(&bootstrap, PRUNED, LEDGER, &[(0, 21), (1, 22)]);

    let admin = common::kafka::admin_client(&bootstrap);
    let deleted = runtime
        .block_on(admin.delete_groups(&[DELETED], &AdminOptions::new()))
        .expect("DeleteGroups request");
    assert_eq!(
        deleted,
        vec![Ok(DELETED.to_string())],
        "DeleteGroups {DELETED}"
    );

    let mut raw = RawClient::connect(&bootstrap);
    let mut partition = OffsetDeleteRequestPartition::default();
    partition.partition_index = 0;
    let mut topic = OffsetDeleteRequestTopic::default();
    topic.name = TopicName(StrBytes::from_static_str(LEDGER));
    topic.partitions = vec![partition];
    let mut offset_delete = OffsetDeleteRequest::default();
    offset_delete.group_id = GroupId(StrBytes::from_static_str(PRUNED));
    offset_delete.topics = vec![topic];
    let answer: OffsetDeleteResponse = raw.request(ApiKey::OffsetDelete, 0, &offset_delete);
    assert_eq!(answer.error_code, 0, "OffsetDelete: {answer:?}");
    assert_eq!(
        answer.topics[0].partitions[0].error_code, 0,
        "OffsetDelete: {answer:?}"
    );

    let check = |when: &str, busy: i64| {
        assert_eq!(
            common::groups::committed_offsets(&bootstrap, BUSY, LEDGER, 1),
            [(0, Offset::Offset(busy))].into(),
            "{BUSY} {when}"
        );
        assert_eq!(
            common::groups::committed_offsets(&bootstrap, DELETED, LEDGER, 2),
            [(0, Offset::Invalid), (1, Offset::Invalid)].into(),
            "{DELETED} (deleted with DeleteGroups) {when}"
        );
        assert_eq!(
            common::groups::committed_offsets(&bootstrap, PRUNED, LEDGER, 2),
            [(0, Offset::Invalid), (1, Offset::Offset(22))].into(),
            "{PRUNED} (partition 0 deleted with OffsetDelete) {when}"
        );
        let groups = listed_groups(&bootstrap);
        assert!(
            groups.contains(&BUSY.to_string()) && groups.contains(&PRUNED.to_string()),
            "ListGroups {when}: {groups:?}"
        );
        assert!(
            !groups.contains(&DELETED.to_string()),
            "the deleted group {DELETED} is listed again {when}: {groups:?}"
        );
    };
    check("before compaction", COMMITS);

    // Wait for the cleaner to compact __consumer_offsets.
    let deadline = Instant::now() + Duration::from_secs(45);
    while !broker
        .log_contents()
        .lines()
        .any(|line| line.contains("compacted") && line.contains("__consumer_offsets"))
    {
        assert!(
            Instant::now() < deadline,
            "__consumer_offsets was not compacted within 45 s (500 commits in 16 KiB segments)"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    if let Some(line) = broker
        .log_contents()
        .lines()
        .find(|line| line.contains("compacted") && line.contains("__consumer_offsets"))
    {
        eprintln!("{line}");
    }
    check("after compaction", COMMITS);
    simple_commit(&bootstrap, BUSY, LEDGER, &[(0, COMMITS + 1)]);
    broker.kill9();
    broker.restart();
    check("after compaction, kill -9 and restart", COMMITS + 1);
}
