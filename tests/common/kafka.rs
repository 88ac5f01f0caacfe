//! rdkafka helpers: client configs that match what the broker supports today
//! (no idempotence, no consumer groups: consumers use `assign()` with explicit
//! offsets and never commit), a deterministic message generator whose
//! messages vary in every field Kafka carries, and produce / read-back helpers
//! that compare what comes back with what was acknowledged, field by field.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, Timestamp, TopicPartitionList};

/// Timestamps of generated messages start here (2023-11-14), far from "now",
/// so a broker that replaced CreateTime with its own clock is caught.
pub const BASE_TIMESTAMP_MS: i64 = 1_700_000_000_000;

/// How long a read-back may take before the test gives up.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// One message as the test sent it, before the broker gave it an offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestMessage {
    pub partition: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp_ms: i64,
}

/// A message and the offset the broker acknowledged for it.
#[derive(Clone, Debug)]
pub struct AckedMessage {
    pub message: TestMessage,
    pub offset: i64,
}

/// The `index`-th message of a test, on `partition`. Keys are sometimes null,
/// values sometimes null and of varying length and content (some compress
/// well, some do not), headers absent, single, or repeated with a null value.
/// Empty (non-null) values are left out: librdkafka reports them as null.
pub fn test_message(index: u64, partition: i32) -> TestMessage {
    let key = if index % 17 == 0 {
        None
    } else {
        Some(format!("key-{index}").into_bytes())
    };
    let value = if index % 23 == 0 {
        None
    } else {
        let length = (index.wrapping_mul(7919) % 300) as usize;
        let mut value = format!("value-{index}-").into_bytes();
        let mut state = index.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for position in 0..length {
            // Every third message gets incompressible bytes, the others a
            // repeating pattern.
            if index % 3 == 0 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                value.push(state as u8);
            } else {
                value.push(b'a' + (position % 26) as u8);
            }
        }
        Some(value)
    };
    let headers = match index % 3 {
        0 => Vec::new(),
        1 => vec![("index".to_string(), Some(index.to_be_bytes().to_vec()))],
        _ => vec![
            ("trace".to_string(), Some(format!("t-{index}").into_bytes())),
            ("null-header".to_string(), None),
            (
                "trace".to_string(),
                Some(b"second value, same key".to_vec()),
            ),
        ],
    };
    TestMessage {
        partition,
        key,
        value,
        headers,
        timestamp_ms: BASE_TIMESTAMP_MS + index as i64,
    }
}

/// `count` messages spread round-robin over `partitions` partitions.
pub fn test_messages(count: u64, partitions: i32) -> Vec<TestMessage> {
    (0..count)
        .map(|index| test_message(index, (index % partitions as u64) as i32))
        .collect()
}

/// Producer settings: acks=all, no idempotence (the broker has no
/// InitProducerId yet), a short linger so requests carry batches.
pub fn producer_config(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "false")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "30000")
        .set("request.timeout.ms", "30000")
        .set("queue.buffering.max.messages", "200000");
    config
}

/// Consumer settings for `assign()`: a `group.id` because librdkafka insists,
/// but no commits, and an out-of-range offset is an error, never a silent
/// jump.
pub fn consumer_config(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "ringbroker-tests-unused")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "error")
        .set("allow.auto.create.topics", "false")
        .set("fetch.wait.max.ms", "100");
    config
}

pub fn future_producer(config: &ClientConfig) -> FutureProducer {
    config.create().expect("create FutureProducer")
}

pub fn base_consumer(bootstrap: &str) -> BaseConsumer {
    consumer_config(bootstrap)
        .create()
        .expect("create BaseConsumer")
}

pub fn admin_client(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("create AdminClient")
}

/// (value, source) of broker config `name` on broker `broker`, as
/// rdkafka's describeConfigs reports them (the source as its `Debug` name:
/// `Default`, `StaticBroker`, `DynamicBroker`, `DynamicDefaultBroker`).
pub async fn described_broker_config(bootstrap: &str, broker: i32, name: &str) -> (String, String) {
    let results = admin_client(bootstrap)
        .describe_configs(
            [&rdkafka::admin::ResourceSpecifier::Broker(broker)],
            &AdminOptions::new(),
        )
        .await
        .expect("DescribeConfigs");
    let resource = results[0].as_ref().expect("described");
    let entry = resource
        .get(name)
        .unwrap_or_else(|| panic!("{name} not described"));
    (
        entry.value.clone().unwrap_or_default(),
        format!("{:?}", entry.source),
    )
}

/// Asserts broker 0's described (value, source) of each `(name, value,
/// source)`, sources named as in [`described_broker_config`].
pub async fn assert_broker_configs(bootstrap: &str, expected: &[(&str, &str, &str)]) {
    for &(name, value, source) in expected {
        assert_eq!(
            described_broker_config(bootstrap, 0, name).await,
            (value.to_string(), source.to_string()),
            "{name}"
        );
    }
}

/// Creates `topic` with `partitions` partitions through CreateTopics and
/// waits until Metadata shows every partition with a leader.
pub async fn create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    create_topic_with_configs(bootstrap, topic, partitions, &[]).await;
}

/// [`create_topic`] with topic config overrides.
pub async fn create_topic_with_configs(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) {
    let admin = admin_client(bootstrap);
    let mut new_topic = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (name, value) in configs {
        new_topic = new_topic.set(name, value);
    }
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = admin
        .create_topics([&new_topic], &options)
        .await
        .expect("CreateTopics request");
    assert_eq!(results.len(), 1, "one result per topic: {results:?}");
    if let Err((name, code)) = &results[0] {
        panic!("CreateTopics {name}: {code:?}");
    }
    wait_for_topic(bootstrap, topic, partitions, Duration::from_secs(30));
}

/// Creates a compacted `topic` of 1 MiB segments (Kafka 4.1's least) whose
/// logs are compacted at any dirty share (`min.cleanable.dirty.ratio`
/// 0.01), with the `extra` topic configs too.
pub async fn create_compacted_topic(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    extra: &[(&str, &str)],
) {
    let mut configs = vec![
        ("cleanup.policy", "compact"),
        ("segment.bytes", "1048576"),
        ("min.cleanable.dirty.ratio", "0.01"),
    ];
    configs.extend_from_slice(extra);
    create_topic_with_configs(bootstrap, topic, partitions, &configs).await;
}

/// Deletes `topic` with rdkafka's admin client.
pub async fn delete_topic(bootstrap: &str, topic: &str) {
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = admin_client(bootstrap)
        .delete_topics(&[topic], &options)
        .await
        .expect("DeleteTopics");
    assert_eq!(results, vec![Ok(topic.to_string())], "DeleteTopics");
}

/// Keys of [`produce_keyed`].
pub const KEYED_KEYS: usize = 20;

/// Produces `records` values of 10 KB over [`KEYED_KEYS`] keys to each of
/// `partitions` of `topic`; returns each partition's latest value by key.
pub async fn produce_keyed(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    records: usize,
) -> BTreeMap<i32, BTreeMap<String, Vec<u8>>> {
    let producer: FutureProducer = producer_config(bootstrap)
        .set("batch.size", "100000")
        .create()
        .expect("producer");
    let mut latest: BTreeMap<i32, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    for index in 0..records {
        for partition in 0..partitions {
            let key = format!("key-{}", index % KEYED_KEYS);
            let mut value = format!("value-{partition}-{index}-").into_bytes();
            value.resize(10_000, b'x');
            producer
                .send(
                    FutureRecord::to(topic)
                        .partition(partition)
                        .key(&key)
                        .payload(&value),
                    Duration::from_secs(30),
                )
                .await
                .unwrap_or_else(|(error, _)| panic!("produce {index} to {partition}: {error}"));
            latest.entry(partition).or_default().insert(key, value);
        }
    }
    latest
}

/// Each partition's values read back from `topic`, the last by key, after
/// checking that fewer than `produced` records a partition are left.
pub fn kept_by_key(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    produced: usize,
) -> BTreeMap<i32, BTreeMap<String, Vec<u8>>> {
    let ends = (0..partitions).map(|p| (p, produced as i64)).collect();
    let read = read_partitions(bootstrap, topic, &ends, Duration::from_secs(30));
    let mut kept: BTreeMap<i32, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    for (partition, messages) in &read {
        assert!(
            messages.len() < produced,
            "{} of {produced} records of partition {partition} read back after compaction",
            messages.len()
        );
        for message in messages {
            let key = String::from_utf8_lossy(message.key().expect("keyed")).into_owned();
            kept.entry(*partition)
                .or_default()
                .insert(key, message.payload().expect("a value").to_vec());
        }
    }
    kept
}

/// Waits until Metadata lists `topic` with `partitions` partitions, each with
/// a leader. Uses a consumer client, which never asks for auto-creation.
pub fn wait_for_topic(bootstrap: &str, topic: &str, partitions: i32, timeout: Duration) {
    let consumer = base_consumer(bootstrap);
    let deadline = Instant::now() + timeout;
    loop {
        let last = match consumer.fetch_metadata(Some(topic), Duration::from_secs(5)) {
            Ok(metadata) => {
                if let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) {
                    let leaders_ok = found.partitions().iter().all(|p| p.leader() >= 0);
                    if found.error().is_none()
                        && found.partitions().len() == partitions as usize
                        && leaders_ok
                    {
                        return;
                    }
                    format!(
                        "error {:?}, {} partitions, leaders {:?}",
                        found.error(),
                        found.partitions().len(),
                        found
                            .partitions()
                            .iter()
                            .map(|p| p.leader())
                            .collect::<Vec<_>>()
                    )
                } else {
                    "topic not listed".to_string()
                }
            }
            Err(error) => format!("Metadata failed: {error}"),
        };
        assert!(
            Instant::now() < deadline,
            "topic {topic} not ready with {partitions} partitions after {timeout:?}: {last}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Asks the broker to create `topic` the way a producer does (Metadata with
/// auto-creation allowed) and waits until it has `partitions` partitions.
pub fn auto_create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    let producer = future_producer(&producer_config(bootstrap));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = producer
            .client()
            .fetch_metadata(Some(topic), Duration::from_secs(5))
            .ok()
            .and_then(|metadata| {
                metadata
                    .topics()
                    .iter()
                    .find(|t| t.name() == topic)
                    .map(|t| {
                        t.error().is_none()
                            && t.partitions().len() == partitions as usize
                            && t.partitions().iter().all(|p| p.leader() >= 0)
                    })
            })
            .unwrap_or(false);
        if ready {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "auto-created topic {topic} not ready with {partitions} partitions"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Builds the rdkafka record for `message`.
pub fn future_record<'a>(topic: &'a str, message: &'a TestMessage) -> FutureRecord<'a, [u8], [u8]> {
    let mut record = FutureRecord::to(topic)
        .partition(message.partition)
        .timestamp(message.timestamp_ms);
    if let Some(key) = &message.key {
        record = record.key(key.as_slice());
    }
    if let Some(value) = &message.value {
        record = record.payload(value.as_slice());
    }
    if !message.headers.is_empty() {
        let mut headers = OwnedHeaders::new_with_capacity(message.headers.len());
        for (key, value) in &message.headers {
            headers = headers.insert(Header {
                key: key.as_str(),
                value: value.as_deref(),
            });
        }
        record = record.headers(headers);
    }
    record
}

/// Produces every message, waits for every acknowledgement and returns the
/// messages with their offsets, in the order given.
///
/// # Panics
/// On the first delivery that fails, with the error.
pub async fn produce_all(
    producer: &FutureProducer,
    topic: &str,
    messages: &[TestMessage],
) -> Vec<AckedMessage> {
    let mut deliveries = Vec::with_capacity(messages.len());
    for message in messages {
        let mut record = future_record(topic, message);
        let delivery = loop {
            match producer.send_result(record) {
                Ok(delivery) => break delivery,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    record = returned;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                Err((error, _)) => panic!("enqueue to {topic}: {error}"),
            }
        };
        deliveries.push(delivery);
    }
    let mut acked = Vec::with_capacity(messages.len());
    for (message, delivery) in messages.iter().zip(deliveries) {
        match delivery.await {
            Ok(Ok(delivery)) => {
                assert_eq!(
                    delivery.partition, message.partition,
                    "acknowledged on another partition"
                );
                acked.push(AckedMessage {
                    message: message.clone(),
                    offset: delivery.offset,
                });
            }
            Ok(Err((error, _))) => {
                panic!("delivery to {topic}/{} failed: {error}", message.partition)
            }
            Err(_) => panic!("delivery future of {topic} was cancelled"),
        }
    }
    acked
}

/// The message as it came back, in the same shape as what was sent.
/// Fails if the timestamp is not a CreateTime.
pub fn received_as_test_message(received: &OwnedMessage) -> Result<TestMessage, String> {
    let timestamp_ms = match received.timestamp() {
        Timestamp::CreateTime(ms) => ms,
        other => return Err(format!("timestamp {other:?}, expected CreateTime")),
    };
    let headers = received
        .headers()
        .map(|headers| {
            headers
                .iter()
                .map(|header| (header.key.to_string(), header.value.map(<[u8]>::to_vec)))
                .collect()
        })
        .unwrap_or_default();
    Ok(TestMessage {
        partition: received.partition(),
        key: received.key().map(<[u8]>::to_vec),
        value: received.payload().map(<[u8]>::to_vec),
        headers,
        timestamp_ms,
    })
}

/// The end offset each partition should have after `acked` were appended to
/// an empty topic by one producer: one past the largest acknowledged offset.
pub fn end_offsets(acked: &[AckedMessage]) -> BTreeMap<i32, i64> {
    let mut ends = BTreeMap::new();
    for acked in acked {
        let end = ends.entry(acked.message.partition).or_insert(0);
        *end = (*end).max(acked.offset + 1);
    }
    ends
}

/// Reads `topic`'s partitions from offset 0 with `assign()` until each has
/// delivered its end offset minus one, and returns what arrived per
/// partition in arrival order.
///
/// # Panics
/// If `timeout` passes first; the message says how far each partition got.
pub fn read_partitions(
    bootstrap: &str,
    topic: &str,
    end_offsets: &BTreeMap<i32, i64>,
    timeout: Duration,
) -> BTreeMap<i32, Vec<OwnedMessage>> {
    let consumer = base_consumer(bootstrap);
    let mut assignment = TopicPartitionList::new();
    for (&partition, &end) in end_offsets {
        if end > 0 {
            assignment
                .add_partition_offset(topic, partition, Offset::Offset(0))
                .expect("add partition to assignment");
        }
    }
    let mut received: BTreeMap<i32, Vec<OwnedMessage>> = end_offsets
        .keys()
        .map(|&partition| (partition, Vec::new()))
        .collect();
    if assignment.count() == 0 {
        return received;
    }
    consumer.assign(&assignment).expect("assign partitions");
    let mut next_offsets: BTreeMap<i32, i64> = end_offsets
        .keys()
        .map(|&partition| (partition, 0))
        .collect();
    let done = |next_offsets: &BTreeMap<i32, i64>| {
        end_offsets
            .iter()
            .all(|(partition, end)| next_offsets[partition] >= *end)
    };
    let deadline = Instant::now() + timeout;
    let mut errors = Vec::new();
    while !done(&next_offsets) {
        if Instant::now() > deadline {
            panic!(
                "reading {topic} timed out after {timeout:?}: next offsets {next_offsets:?}, \
                 wanted end offsets {end_offsets:?}, consumer errors {errors:?}"
            );
        }
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Ok(message)) => {
                let partition = message.partition();
                let next = next_offsets.entry(partition).or_insert(0);
                *next = (*next).max(message.offset() + 1);
                received
                    .entry(partition)
                    .or_default()
                    .push(message.detach());
            }
            Some(Err(error)) => {
                // OFFSET_OUT_OF_RANGE (auto.offset.reset=error) and the like
                // mean the broker lost or misplaced data: stop at once.
                if let KafkaError::MessageConsumption(code) = &error {
                    if matches!(
                        code,
                        RDKafkaErrorCode::AutoOffsetReset | RDKafkaErrorCode::OffsetOutOfRange
                    ) {
                        panic!("reading {topic}: {error} (next offsets {next_offsets:?})");
                    }
                }
                errors.push(error.to_string());
            }
        }
    }
    received
}

/// Checks that `received` holds exactly the `acked` messages: per partition,
/// offsets 0, 1, 2, ... with no hole, no repeat and nothing past the end, and
/// each message equal to the one acknowledged at that offset.
///
/// # Panics
/// With the first mismatches found and a count of all of them.
pub fn assert_read_back_matches(
    what: &str,
    acked: &[AckedMessage],
    received: &BTreeMap<i32, Vec<OwnedMessage>>,
) {
    let mut expected: BTreeMap<(i32, i64), &TestMessage> = BTreeMap::new();
    for acked in acked {
        let previous = expected.insert((acked.message.partition, acked.offset), &acked.message);
        assert!(
            previous.is_none(),
            "{what}: two messages acknowledged at {}/{}",
            acked.message.partition,
            acked.offset
        );
    }
    let ends = end_offsets(acked);
    let mut problems = Vec::new();
    for (&partition, &end) in &ends {
        for offset in 0..end {
            if !expected.contains_key(&(partition, offset)) {
                problems.push(format!(
                    "partition {partition}: offset {offset} was never acknowledged (hole in acks)"
                ));
            }
        }
    }
    for (&partition, messages) in received {
        let offsets: Vec<i64> = messages.iter().map(Message::offset).collect();
        let end = ends.get(&partition).copied().unwrap_or(0);
        let wanted: Vec<i64> = (0..end).collect();
        if offsets != wanted {
            problems.push(format!(
                "partition {partition}: read offsets {} not 0..{end} in order (first differing \
                 at index {:?})",
                summarize_offsets(&offsets),
                offsets.iter().zip(&wanted).position(|(a, b)| a != b)
            ));
        }
        for message in messages {
            let Some(sent) = expected.get(&(partition, message.offset())) else {
                continue;
            };
            match received_as_test_message(message) {
                Ok(got) if &&got == sent => {}
                Ok(got) => problems.push(format!(
                    "partition {partition} offset {}: sent {sent:?}, read {got:?}",
                    message.offset()
                )),
                Err(error) => problems.push(format!(
                    "partition {partition} offset {}: {error}",
                    message.offset()
                )),
            }
        }
    }
    for partition in ends.keys() {
        if !received.contains_key(partition) {
            problems.push(format!("partition {partition}: nothing read"));
        }
    }
    if !problems.is_empty() {
        let shown: Vec<&String> = problems.iter().take(10).collect();
        panic!(
            "{what}: {} problems reading back {} messages; first ones:\n{}",
            problems.len(),
            acked.len(),
            shown
                .iter()
                .map(|p| format!("  {p}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// "0..=99, 101..=200"-style summary of a list of offsets.
pub fn summarize_offsets(offsets: &[i64]) -> String {
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for &offset in offsets {
        match ranges.last_mut() {
            Some((_, last)) if *last + 1 == offset => *last = offset,
            _ => ranges.push((offset, offset)),
        }
    }
    let parts: Vec<String> = ranges
        .iter()
        .take(20)
        .map(|(first, last)| {
            if first == last {
                first.to_string()
            } else {
                format!("{first}..={last}")
            }
        })
        .collect();
    let more = if ranges.len() > 20 { ", ..." } else { "" };
    format!("[{}{more}]", parts.join(", "))
}

/// Low and high watermark of one partition, from ListOffsets.
pub fn watermarks(bootstrap: &str, topic: &str, partition: i32) -> (i64, i64) {
    base_consumer(bootstrap)
        .fetch_watermarks(topic, partition, Duration::from_secs(10))
        .unwrap_or_else(|error| panic!("ListOffsets for {topic}/{partition}: {error}"))
}
