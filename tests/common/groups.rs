//! Consumer-group helpers for the `consumer_groups_*` tests: broker flags that
//! make rebalances and session expiry fast, `subscribe()` consumers whose
//! context records every rebalance, committed-offset look-ups, and a poll
//! loop that keeps several group members alive at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaResult;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::BrokerOptions;

/// Broker options for group tests: the first rebalance of an empty group
/// completes at once (no 3 s wait for more members) and members may ask for
/// session timeouts down to 1 s.
pub fn group_broker_options() -> BrokerOptions {
    BrokerOptions::default()
        .arg("--group-initial-rebalance-delay-ms", 0)
        .arg("--group-min-session-timeout-ms", 1000)
}

/// A `subscribe()` consumer in `group`: manual commits only, reads from the
/// earliest offset when the group has none, heartbeats every 300 ms so a
/// rebalance is noticed quickly.
pub fn group_consumer_config(bootstrap: &str, group: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("allow.auto.create.topics", "false")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("max.poll.interval.ms", "30000")
        .set("fetch.wait.max.ms", "100")
        .set("topic.metadata.refresh.interval.ms", "1000");
    config
}

/// One rebalance callback as librdkafka delivered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RebalanceEvent {
    Assign(BTreeSet<i32>),
    Revoke(BTreeSet<i32>),
    Error(String),
}

/// A consumer context that records rebalances (partitions of every topic,
/// the tests use one topic per group) and the errors librdkafka reports.
#[derive(Clone, Default)]
pub struct RecordingContext {
    pub name: String,
    pub events: Arc<Mutex<Vec<RebalanceEvent>>>,
    pub errors: Arc<Mutex<Vec<String>>>,
}

impl RecordingContext {
    pub fn named(name: &str) -> RecordingContext {
        RecordingContext {
            name: name.to_string(),
            ..RecordingContext::default()
        }
    }

    pub fn events(&self) -> Vec<RebalanceEvent> {
        self.events.lock().expect("events lock").clone()
    }

    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().expect("errors lock").clone()
    }
}

impl ClientContext for RecordingContext {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        self.errors
            .lock()
            .expect("errors lock")
            .push(format!("{error}: {reason}"));
    }
}

impl ConsumerContext for RecordingContext {
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let event = match rebalance {
            Rebalance::Assign(tpl) => RebalanceEvent::Assign(partitions_of(tpl)),
            Rebalance::Revoke(tpl) => RebalanceEvent::Revoke(partitions_of(tpl)),
            Rebalance::Error(error) => RebalanceEvent::Error(error.to_string()),
        };
        self.events.lock().expect("events lock").push(event);
    }
}

pub type GroupConsumer = BaseConsumer<RecordingContext>;

/// Creates a consumer from `config` with a recording context named `name`
/// and subscribes it to `topic`.
pub fn subscribed_consumer(config: &ClientConfig, name: &str, topic: &str) -> GroupConsumer {
    let consumer: GroupConsumer = config
        .create_with_context(RecordingContext::named(name))
        .unwrap_or_else(|error| panic!("create consumer {name}: {error}"));
    consumer
        .subscribe(&[topic])
        .unwrap_or_else(|error| panic!("{name}: subscribe to {topic}: {error}"));
    consumer
}

pub fn partitions_of(tpl: &TopicPartitionList) -> BTreeSet<i32> {
    tpl.elements().iter().map(|e| e.partition()).collect()
}

/// The partitions librdkafka currently has assigned to `consumer`.
pub fn assigned<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> BTreeSet<i32> {
    partitions_of(&consumer.assignment().expect("assignment"))
}

/// What a member consumed: (partition, offset) in arrival order.
#[derive(Clone, Debug, Default)]
pub struct Consumed {
    pub records: Vec<(i32, i64)>,
}

impl Consumed {
    /// Offsets of `partition`, in arrival order.
    pub fn offsets(&self, partition: i32) -> Vec<i64> {
        self.records
            .iter()
            .filter(|(p, _)| *p == partition)
            .map(|(_, o)| *o)
            .collect()
    }

    /// One past the largest offset seen on each partition.
    pub fn next_offsets(&self) -> BTreeMap<i32, i64> {
        let mut next = BTreeMap::new();
        for &(partition, offset) in &self.records {
            let entry = next.entry(partition).or_insert(0);
            *entry = (*entry).max(offset + 1);
        }
        next
    }
}

/// Polls `consumer` once for up to `wait`; a message is recorded in
/// `consumed` and its offset + 1 committed synchronously for its partition
/// (so what was recorded is exactly what the group has committed); an error
/// is returned to the caller.
pub fn poll_and_commit<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    topic: &str,
    consumed: &mut Consumed,
    wait: Duration,
) -> Option<KafkaResult<(i32, i64)>> {
    match consumer.poll(wait)? {
        Ok(message) => {
            let (partition, offset) = (message.partition(), message.offset());
            consumed.records.push((partition, offset));
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(topic, partition, Offset::Offset(offset + 1))
                .expect("add partition offset");
            Some(
                consumer
                    .commit(&tpl, rdkafka::consumer::CommitMode::Sync)
                    .map(|()| (partition, offset)),
            )
        }
        Err(error) => Some(Err(error)),
    }
}

/// The offsets `group` has committed for `topic`'s partitions `0..partitions`,
/// through OffsetFetch from a consumer that never joins the group. A
/// partition without a commit maps to `Offset::Invalid`.
pub fn committed_offsets(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partitions: i32,
) -> BTreeMap<i32, Offset> {
    let consumer: BaseConsumer = group_consumer_config(bootstrap, group)
        .create()
        .expect("create OffsetFetch consumer");
    let mut tpl = TopicPartitionList::new();
    for partition in 0..partitions {
        tpl.add_partition(topic, partition);
    }
    let committed = consumer
        .committed_offsets(tpl, Duration::from_secs(10))
        .unwrap_or_else(|error| panic!("OffsetFetch of group {group}: {error}"));
    committed
        .elements()
        .iter()
        .map(|e| (e.partition(), e.offset()))
        .collect()
}

/// `committed_offsets` with every partition expected to hold a real offset.
pub fn committed_numbers(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partitions: i32,
) -> BTreeMap<i32, i64> {
    committed_offsets(bootstrap, group, topic, partitions)
        .into_iter()
        .map(|(partition, offset)| match offset {
            Offset::Offset(n) => (partition, n),
            other => panic!("group {group}: {topic}/{partition} committed offset is {other:?}"),
        })
        .collect()
}

/// Polls every consumer in turn (each for `slice`) until `done` holds or
/// `timeout` passes, committing what each consumes; returns whether `done`
/// held. Consumer errors are collected into `errors` with the consumer's
/// index.
pub fn poll_all_until<C: ConsumerContext>(
    consumers: &[&BaseConsumer<C>],
    topic: &str,
    consumed: &mut [Consumed],
    errors: &mut Vec<(usize, String)>,
    timeout: Duration,
    mut done: impl FnMut(&[&BaseConsumer<C>], &[Consumed]) -> bool,
) -> bool {
    let deadline = Instant::now() + timeout;
    let slice = Duration::from_millis(20);
    loop {
        if done(consumers, consumed) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        for (index, consumer) in consumers.iter().enumerate() {
            // Drain what is ready, then move on so no member starves.
            for _ in 0..50 {
                match poll_and_commit(consumer, topic, &mut consumed[index], slice) {
                    None => break,
                    Some(Ok(_)) => {}
                    Some(Err(error)) => {
                        errors.push((index, error.to_string()));
                        break;
                    }
                }
            }
        }
    }
}
