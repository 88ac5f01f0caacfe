//! Goal: client quotas behave as Kafka's: AlterClientQuotas and
//! DescribeClientQuotas check, store and filter as Kafka 4.1 does, the
//! quotas survive kill -9, and `producer_byte_rate` / `consumer_byte_rate`
//! throttle a client by Kafka's arithmetic (a rate over at least ten
//! one-second windows; throttle = (rate - quota) / quota * window), as does
//! `request_percentage` by the time requests take to handle, with the
//! time in the response and the connection muted for it, while other
//! clients go on.
//!
//! Method: requests on the wire. Every answer asserted here is what Kafka
//! 4.1.1 (KRaft, single node) answered to the same requests: run with
//! RINGBROKER_QUOTA_REFERENCE=host:port to send them to a Kafka instead.
//! Kafka lists entries in hash-map order, so lists are compared sorted.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, ApiVersionsRequest,
    ApiVersionsResponse, CreateTopicsRequest, CreateTopicsResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, FetchRequest, FetchResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
    TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

use common::wire::{encode_batch, encode_request_as, plain_record, RawClient};
use common::{Broker, BrokerOptions};

const INVALID_REQUEST: i16 = 42;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn bootstrap_or_broker() -> (String, Option<Broker>) {
    if let Ok(reference) = std::env::var("RINGBROKER_QUOTA_REFERENCE") {
        return (reference, None);
    }
    let broker = Broker::start(BrokerOptions::default().auto_create_topics_enable(false));
    (broker.bootstrap(), Some(broker))
}

/// Entity components as answered: (type, name or None for the default).
type Components = Vec<(String, Option<String>)>;
/// One AlterClientQuotas answer: (error, message, entity).
type Answer = (i16, Option<String>, Components);
/// One DescribeClientQuotas entry: entity and sorted (key, value).
type DescribedEntry = (Components, Vec<(String, f64)>);
/// A DescribeClientQuotas filter that Kafka refuses: components, error,
/// message.
type FilterRefusal<'a> = (Vec<(&'a str, i8, Option<&'a str>)>, i16, &'a str);

/// An entity: (type, name or None for the default).
type Entity<'a> = Vec<(&'a str, Option<&'a str>)>;
/// An operation: (key, value, remove).
type Op<'a> = (&'a str, f64, bool);

/// AlterClientQuotas v1: per entity answered, (error, message, entity),
/// sorted.
fn alter(
    client: &mut RawClient,
    entries: &[(Entity, Vec<Op>)],
    validate_only: bool,
) -> Vec<Answer> {
    let mut request = AlterClientQuotasRequest::default();
    request.validate_only = validate_only;
    request.entries = entries
        .iter()
        .map(|(entity, ops)| {
            let mut entry = EntryData::default();
            entry.entity = entity
                .iter()
                .map(|(kind, name)| {
                    let mut data = EntityData::default();
                    data.entity_type = s(kind);
                    data.entity_name = name.map(s);
                    data
                })
                .collect();
            entry.ops = ops
                .iter()
                .map(|(key, value, remove)| {
                    let mut op = OpData::default();
                    op.key = s(key);
                    op.value = *value;
                    op.remove = *remove;
                    op
                })
                .collect();
            entry
        })
        .collect();
    let response: AlterClientQuotasResponse =
        client.request(ApiKey::AlterClientQuotas, 1, &request);
    let mut out: Vec<_> = response
        .entries
        .into_iter()
        .map(|e| {
            (
                e.error_code,
                e.error_message.map(|m| m.to_string()),
                e.entity
                    .into_iter()
                    .map(|c| {
                        (
                            c.entity_type.to_string(),
                            c.entity_name.map(|n| n.to_string()),
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    out.sort();
    out
}

/// What DescribeClientQuotas answers: error, message, and the entries
/// (entity, sorted values) sorted, None when null.
type Described = (i16, Option<String>, Option<Vec<DescribedEntry>>);

fn describe(
    client: &mut RawClient,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> Described {
    let mut request = DescribeClientQuotasRequest::default();
    request.strict = strict;
    request.components = components
        .iter()
        .map(|(kind, match_type, name)| {
            let mut c = ComponentData::default();
            c.entity_type = s(kind);
            c.match_type = *match_type;
            c._match = name.map(s);
            c
        })
        .collect();
    let response: DescribeClientQuotasResponse =
        client.request(ApiKey::DescribeClientQuotas, 1, &request);
    let entries = response.entries.map(|entries| {
        let mut entries: Vec<_> = entries
            .into_iter()
            .map(|e| {
                let entity = e
                    .entity
                    .into_iter()
                    .map(|c| {
                        (
                            c.entity_type.to_string(),
                            c.entity_name.map(|n| n.to_string()),
                        )
                    })
                    .collect();
                let mut values: Vec<_> = e
                    .values
                    .into_iter()
                    .map(|v| (v.key.to_string(), v.value))
                    .collect();
                values.sort_by(|a, b| a.0.cmp(&b.0));
                (entity, values)
            })
            .collect();
        entries.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
        entries
    });
    (
        response.error_code,
        response.error_message.map(|m| m.to_string()),
        entries,
    )
}

fn ok(entity: &[(&str, Option<&str>)]) -> Answer {
    (0, None, owned(entity))
}

fn refused(message: &str, entity: &[(&str, Option<&str>)]) -> Answer {
    (INVALID_REQUEST, Some(message.to_string()), owned(entity))
}

fn owned(entity: &[(&str, Option<&str>)]) -> Components {
    entity
        .iter()
        .map(|(k, n)| (k.to_string(), n.map(str::to_string)))
        .collect()
}

/// Waits until DescribeClientQuotas of everything answers `want` (Kafka
/// applies an alteration to its brokers' images a moment after answering).
fn wait_for_all(client: &mut RawClient, want: &Described) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = describe(client, &[], false);
        if &got == want || Instant::now() > deadline {
            assert_eq!(&got, want);
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn client_quota_apis_check_store_and_filter_as_kafka() {
    let (bootstrap, mut broker) = bootstrap_or_broker();
    let mut client = RawClient::connect(&bootstrap);
    let alice: Entity = vec![("user", Some("alice"))];
    let bob_app: Entity = vec![("client-id", Some("app")), ("user", Some("bob"))];
    let default_client: Entity = vec![("client-id", None)];

    assert_eq!(
        alter(
            &mut client,
            &[(alice.clone(), vec![("producer_byte_rate", 1024.0, false)])],
            false
        ),
        vec![ok(&alice)]
    );
    // Components in any order name the same entity; it is answered in
    // Kafka's order (client-id before user).
    assert_eq!(
        alter(
            &mut client,
            &[(
                vec![("user", Some("bob")), ("client-id", Some("app"))],
                vec![("consumer_byte_rate", 2048.0, false)]
            )],
            false
        ),
        vec![ok(&bob_app)]
    );
    // A key twice in one entry, or an entity twice in one request.
    assert_eq!(
        alter(
            &mut client,
            &[(
                bob_app.clone(),
                vec![
                    ("consumer_byte_rate", 1.0, false),
                    ("consumer_byte_rate", 2.0, false)
                ]
            )],
            false
        ),
        vec![refused(
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=app, user=bob})",
            &bob_app
        )]
    );
    let xy: Entity = vec![("client-id", Some("y")), ("user", Some("x"))];
    assert_eq!(
        alter(
            &mut client,
            &[
                (xy.clone(), vec![("consumer_byte_rate", 1.5, false)]),
                (xy.clone(), vec![("producer_byte_rate", 5.0, false)]),
            ],
            false
        ),
        vec![refused(
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=y, user=x})",
            &xy
        )]
    );
    // Entity checks, in Kafka's order, each refusing only its entry.
    let cases: Vec<(Entity, Op, &str)> = vec![
        (vec![("client-id", None), ("bogus", Some("z"))], ("a", 1.0, false), "Unhandled client quota entity type: bogus"),
        (vec![], ("a", 1.0, false), "Invalid empty client quota entity"),
        (vec![("user", Some(""))], ("a", 1.0, false), "Empty user not supported"),
        (vec![("user", None)], ("producer_byte_rate", 0.0, false), "Quota producer_byte_rate must be greater than 0"),
        (vec![("user", None), ("ip", Some("1.2.3.4"))], ("producer_byte_rate", 1.0, false), "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
        (vec![("ip", Some("1.2.3.4"))], ("producer_byte_rate", 1.0, false), "Invalid configuration key producer_byte_rate"),
        (vec![("user", Some("u"))], ("SCRAM-SHA-256", 1.0, false), "Invalid configuration key SCRAM-SHA-256"),
        (vec![("user", Some("u"))], ("producer_byte_rate", 1e19, false), "Proposed value for producer_byte_rate is too large for a LONG."),
        (vec![("user", Some("u"))], ("consumer_byte_rate", 2.5, false), "consumer_byte_rate cannot be a fractional value."),
        (vec![("user", Some("u"))], ("producer_byte_rate", -1.0, false), "Quota producer_byte_rate must be greater than 0"),
    ];
    for (entity, op, message) in cases {
        assert_eq!(
            alter(&mut client, &[(entity.clone(), vec![op])], false),
            vec![refused(message, &entity)],
            "{entity:?} {op:?}"
        );
    }
    // Removing keys an entity lacks (known or not) succeeds, writing nothing.
    let u: Entity = vec![("user", Some("u"))];
    assert_eq!(
        alter(
            &mut client,
            &[(
                u.clone(),
                vec![
                    ("SCRAM-SHA-256", 1.0, true),
                    ("producer_byte_rate", 7.0, true)
                ]
            )],
            false
        ),
        vec![ok(&u)]
    );
    // validate_only answers without storing.
    assert_eq!(
        alter(
            &mut client,
            &[(
                default_client.clone(),
                vec![("consumer_byte_rate", 4096.0, false)]
            )],
            true
        ),
        vec![ok(&default_client)]
    );
    assert!(alter(&mut client, &[], false).is_empty());
    let alice_values = (
        owned(&alice),
        vec![("producer_byte_rate".to_string(), 1024.0)],
    );
    let bob_values = (
        owned(&bob_app),
        vec![("consumer_byte_rate".to_string(), 2048.0)],
    );
    let mut everything = vec![alice_values.clone(), bob_values.clone()];
    everything.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
    wait_for_all(
        &mut client,
        &(0, Some(String::new()), Some(everything.clone())),
    );
    assert_eq!(
        alter(
            &mut client,
            &[(
                default_client.clone(),
                vec![("consumer_byte_rate", 4096.0, false)]
            )],
            false
        ),
        vec![ok(&default_client)]
    );
    let default_values = (
        owned(&default_client),
        vec![("consumer_byte_rate".to_string(), 4096.0)],
    );
    everything.push(default_values.clone());
    everything.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
    wait_for_all(
        &mut client,
        &(0, Some(String::new()), Some(everything.clone())),
    );

    // Filters.
    let found = |entries: Vec<_>| (0, Some(String::new()), Some(entries));
    let sorted = |mut entries: Vec<DescribedEntry>| {
        entries.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
        entries
    };
    assert_eq!(describe(&mut client, &[], true), found(vec![]));
    assert_eq!(
        describe(&mut client, &[("user", 2, None)], false),
        found(sorted(vec![alice_values.clone(), bob_values.clone()]))
    );
    assert_eq!(
        describe(&mut client, &[("user", 2, None)], true),
        found(vec![alice_values.clone()])
    );
    assert_eq!(
        describe(&mut client, &[("client-id", 1, None)], false),
        found(vec![default_values])
    );
    assert_eq!(
        describe(
            &mut client,
            &[("user", 0, Some("bob")), ("client-id", 0, Some("app"))],
            true
        ),
        found(vec![bob_values])
    );
    let refusals: Vec<FilterRefusal> = vec![
        (vec![("user", 0, None)], INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
        (vec![("user", 1, Some("x"))], INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
        (vec![("user", 2, Some("x"))], INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
        (vec![("user", 9, None)], INVALID_REQUEST, "Unknown match type 9"),
        (vec![("grp", 2, None)], 35, "Unsupported entity type grp"),
        (vec![("", 2, None)], INVALID_REQUEST, "Invalid empty entity type."),
        (vec![("user", 2, None), ("user", 2, None)], INVALID_REQUEST, "Entity type user cannot appear more than once in the filter."),
        (vec![("ip", 2, None), ("user", 2, None)], INVALID_REQUEST, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."),
    ];
    for (components, code, message) in refusals {
        assert_eq!(
            describe(&mut client, &components, false),
            (code, Some(message.to_string()), None),
            "{components:?}"
        );
    }

    // Quotas are in the metadata log: they survive kill -9.
    if let Some(broker) = broker.as_mut() {
        broker.kill9();
        broker.restart();
        client = RawClient::connect(&bootstrap);
        assert_eq!(describe(&mut client, &[], false), found(everything));
    }
    // Removing the last key forgets the entity.
    assert_eq!(
        alter(
            &mut client,
            &[
                (alice.clone(), vec![("producer_byte_rate", 0.0, true)]),
                (bob_app.clone(), vec![("consumer_byte_rate", 0.0, true)]),
                (
                    default_client.clone(),
                    vec![("consumer_byte_rate", 0.0, true)]
                ),
            ],
            false
        ),
        {
            let mut all = vec![ok(&alice), ok(&bob_app), ok(&default_client)];
            all.sort();
            all
        }
    );
    wait_for_all(&mut client, &found(vec![]));
}

/// A topic name new at each run (a reference Kafka keeps its topics).
fn fresh_topic(prefix: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("{prefix}-{now}")
}

fn create_topic(client: &mut RawClient, name: &str) {
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(s(name));
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    let mut request = CreateTopicsRequest::default();
    request.topics = vec![topic];
    request.timeout_ms = 10_000;
    let response: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 7, &request);
    assert_eq!(response.topics[0].error_code, 0);
}

/// A Produce v9 (acks=1) of one batch of `records` values of `size` bytes.
fn produce_request(topic: &str, records: usize, size: usize) -> ProduceRequest {
    let batch = encode_batch(
        &(0..records)
            .map(|i| plain_record(i as i64, None, Bytes::from(vec![b'q'; size])))
            .collect::<Vec<_>>(),
    );
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(batch);
    let mut topic_data = TopicProduceData::default();
    topic_data.name = TopicName(s(topic));
    topic_data.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = 1;
    request.timeout_ms = 10_000;
    request.topic_data = vec![topic_data];
    request
}

fn fetch_request(topic: &str, offset: i64) -> FetchRequest {
    let mut partition = FetchPartition::default();
    partition.partition = 0;
    partition.fetch_offset = offset;
    partition.partition_max_bytes = 1 << 20;
    let mut fetch_topic = FetchTopic::default();
    fetch_topic.topic = TopicName(s(topic));
    fetch_topic.partitions = vec![partition];
    let mut request = FetchRequest::default();
    request.replica_id = kafka_protocol::messages::BrokerId(-1);
    request.max_wait_ms = 0;
    request.max_bytes = 1 << 20;
    request.topics = vec![fetch_topic];
    request
}

/// Bytes Kafka counts for a request: its frame without the size.
fn request_bytes(request: &ProduceRequest, client_id: &'static str) -> usize {
    encode_request_as(ApiKey::Produce, 9, 1, request, client_id).len() - 4
}

#[test]
fn byte_rate_quotas_throttle_by_kafkas_arithmetic() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut admin = RawClient::connect(&bootstrap);
    let topic = &fresh_topic("quota-throttled");
    create_topic(&mut admin, topic);
    const QUOTA: f64 = 10_000.0;
    let producer_entity: Entity = vec![("client-id", Some("rb-quota-producer"))];
    let consumer_entity: Entity = vec![("client-id", Some("rb-quota-consumer"))];
    assert_eq!(
        alter(
            &mut admin,
            &[
                (
                    producer_entity.clone(),
                    vec![("producer_byte_rate", QUOTA, false)]
                ),
                (
                    consumer_entity.clone(),
                    vec![("consumer_byte_rate", QUOTA, false)]
                ),
            ],
            false
        ),
        {
            let mut all = vec![ok(&consumer_entity), ok(&producer_entity)];
            all.sort();
            all
        }
    );
    std::thread::sleep(Duration::from_secs(1));

    // A new sensor measures over ten windows: 150 kB at 10 kB/s is a rate
    // of 15 kB/s, throttled (15 - 10) / 10 * 10 s = bytes / 10 - 10 000 ms.
    let mut producer = RawClient::connect_as(&bootstrap, "rb-quota-producer");
    let big = produce_request(topic, 150, 1000);
    let size = request_bytes(&big, "rb-quota-producer");
    let response: ProduceResponse = producer.request(ApiKey::Produce, 9, &big);
    let answered = Instant::now();
    assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    let expected = (size as f64 / 10.0 - QUOTA).round() as i32;
    assert!(expected > 4000, "{size} bytes");
    assert_eq!(response.throttle_time_ms, expected, "{size} bytes");
    // Other clients are not held back.
    let mut other = RawClient::connect_as(&bootstrap, "rb-quota-other");
    let _: ProduceResponse = other.request(ApiKey::Produce, 9, &produce_request(topic, 1, 10));
    let _: ApiVersionsResponse =
        other.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert!(answered.elapsed() < Duration::from_millis(expected as u64 / 2));
    // The throttled connection reads nothing until its time has passed.
    let _: ApiVersionsResponse =
        producer.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert!(
        answered.elapsed() >= Duration::from_millis(expected as u64 - 1000),
        "answered after {:?} of a {expected} ms throttle",
        answered.elapsed()
    );

    // The consumer under its quota: two batches of 30 kB, a rate of
    // 6 kB/s, then two more make it 12 kB/s: an empty answer carrying the
    // throttle, its bytes not counted, and the connection muted for the
    // time.
    let mut consumer = RawClient::connect_as(&bootstrap, "rb-quota-consumer");
    for _ in 0..2 {
        let _: ProduceResponse =
            other.request(ApiKey::Produce, 9, &produce_request(topic, 30, 1000));
    }
    let first: FetchResponse = consumer.request(ApiKey::Fetch, 12, &fetch_request(topic, 151));
    assert_eq!(first.throttle_time_ms, 0);
    let fetched = first.responses[0].partitions[0]
        .records
        .clone()
        .unwrap_or_default();
    assert!(
        (60_000..62_000).contains(&fetched.len()),
        "{} bytes",
        fetched.len()
    );
    for _ in 0..2 {
        let _: ProduceResponse =
            other.request(ApiKey::Produce, 9, &produce_request(topic, 30, 1000));
    }
    let first_size = 4 + first.compute_size(12).unwrap();
    let second: FetchResponse = consumer.request(ApiKey::Fetch, 12, &fetch_request(topic, 211));
    let throttled_at = Instant::now();
    assert!(
        second.responses.is_empty(),
        "a throttled fetch carries no data"
    );
    let most = ((first_size + 62_000) as f64 / 10.0 - QUOTA).round() as i32;
    assert!(
        second.throttle_time_ms > 1000 && second.throttle_time_ms <= most,
        "throttle {} of at most {most}",
        second.throttle_time_ms
    );
    let _: ApiVersionsResponse =
        consumer.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert!(
        throttled_at.elapsed() >= Duration::from_millis(second.throttle_time_ms as u64 - 500),
        "answered after {:?} of a {} ms throttle",
        throttled_at.elapsed(),
        second.throttle_time_ms
    );

    assert_eq!(
        alter(
            &mut admin,
            &[
                (
                    producer_entity.clone(),
                    vec![("producer_byte_rate", 0.0, true)]
                ),
                (
                    consumer_entity.clone(),
                    vec![("consumer_byte_rate", 0.0, true)]
                ),
            ],
            false
        )
        .len(),
        2
    );
}

/// Goal: `request_percentage` throttles a client by the time its requests
/// take to handle, as Kafka's request quota does: every kind of request
/// counts and carries the throttle (at most one quota window, 1000 ms),
/// the connection reads nothing more until it has passed, a throttled
/// fetch answers empty, other clients and a client within its quota go on
/// unthrottled, and removing the quota frees the client.
///
/// Method: a quota of 0.000001 % of a thread (0.1 µs over the ten seconds
/// a new sensor measures across) is spent by any request, so every answer
/// is throttled for the whole window, on Kafka 4.1.1 as here; a quota of
/// 100 % (a whole thread) is not reached by a few requests on either.
#[test]
fn request_percentage_throttles_by_handling_time_like_kafka() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut admin = RawClient::connect(&bootstrap);
    let topic = &fresh_topic("quota-requests");
    create_topic(&mut admin, topic);
    let _: ProduceResponse = admin.request(ApiKey::Produce, 9, &produce_request(topic, 5, 100));
    let tight: Entity = vec![("client-id", Some("rb-request-quota"))];
    let ample: Entity = vec![("client-id", Some("rb-request-ample"))];
    let mut answers = alter(
        &mut admin,
        &[
            (
                tight.clone(),
                vec![("request_percentage", 0.000_001, false)],
            ),
            (ample.clone(), vec![("request_percentage", 100.0, false)]),
        ],
        false,
    );
    answers.sort();
    assert_eq!(answers, vec![ok(&ample), ok(&tight)]);
    let described = describe(
        &mut admin,
        &[("client-id", 0, Some("rb-request-quota"))], // exact match
        false,
    );
    assert_eq!(
        described,
        (
            0,
            Some(String::new()),
            Some(vec![(
                owned(&tight),
                vec![("request_percentage".to_string(), 0.000_001)]
            )])
        )
    );
    std::thread::sleep(Duration::from_secs(1));

    let mut client = RawClient::connect_as(&bootstrap, "rb-request-quota");
    let mut other = RawClient::connect_as(&bootstrap, "rb-request-other");
    let mut within = RawClient::connect_as(&bootstrap, "rb-request-ample");
    let metadata = MetadataRequest::default();
    let first: MetadataResponse = client.request(ApiKey::Metadata, 12, &metadata);
    let mut answered = Instant::now();
    assert_eq!(first.throttle_time_ms, 1000);
    // Meanwhile the others are answered at once, unthrottled.
    for _ in 0..5 {
        let response: MetadataResponse = other.request(ApiKey::Metadata, 12, &metadata);
        assert_eq!(response.throttle_time_ms, 0);
        let response: MetadataResponse = within.request(ApiKey::Metadata, 12, &metadata);
        assert_eq!(response.throttle_time_ms, 0);
    }
    assert!(answered.elapsed() < Duration::from_millis(500));
    // Each next request waits out the throttle and is throttled in turn,
    // whatever its kind.
    let mut throttles = Vec::new();
    let mut check_muted = |answered: &mut Instant, throttle: i32| {
        assert!(
            answered.elapsed() >= Duration::from_millis(900),
            "answered {:?} after a 1000 ms throttle",
            answered.elapsed()
        );
        *answered = Instant::now();
        throttles.push(throttle);
    };
    let versions: ApiVersionsResponse =
        client.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    check_muted(&mut answered, versions.throttle_time_ms);
    let mut find = FindCoordinatorRequest::default();
    find.key_type = 0;
    find.coordinator_keys = vec![s("rb-request-group")];
    let coordinator: FindCoordinatorResponse = client.request(ApiKey::FindCoordinator, 4, &find);
    check_muted(&mut answered, coordinator.throttle_time_ms);
    let produced: ProduceResponse =
        client.request(ApiKey::Produce, 9, &produce_request(topic, 1, 100));
    check_muted(&mut answered, produced.throttle_time_ms);
    assert_eq!(
        produced.responses[0].partition_responses[0].error_code, 0,
        "a throttled produce is still written"
    );
    let fetched: FetchResponse = client.request(ApiKey::Fetch, 12, &fetch_request(topic, 0));
    check_muted(&mut answered, fetched.throttle_time_ms);
    assert!(
        fetched.responses.is_empty(),
        "a throttled fetch carries no data"
    );
    assert_eq!(throttles, vec![1000; 4]);

    // Without the quota the client is free once its last throttle ends.
    assert_eq!(
        alter(
            &mut admin,
            &[
                (tight.clone(), vec![("request_percentage", 0.0, true)]),
                (ample.clone(), vec![("request_percentage", 0.0, true)]),
            ],
            false
        )
        .len(),
        2
    );
    std::thread::sleep(Duration::from_millis(1500));
    let fetched: FetchResponse = client.request(ApiKey::Fetch, 12, &fetch_request(topic, 0));
    assert_eq!(fetched.throttle_time_ms, 0);
    let records = fetched.responses[0].partitions[0]
        .records
        .clone()
        .unwrap_or_default();
    assert!(!records.is_empty(), "the fetch reads the records again");
}

/// Goal: altering quotas takes ALTER_CONFIGS on the cluster and describing
/// Goal: altering quotas takes ALTER_CONFIGS on the cluster and describing
/// them DESCRIBE_CONFIGS, refused as Kafka's source answers: every entry
/// of an alteration, its entity as sent, with CLUSTER_AUTHORIZATION_FAILED
/// and Kafka's default message; a description with the code alone.
#[test]
fn quota_apis_need_the_cluster_config_rights() {
    let broker = Broker::start(
        BrokerOptions::default()
            .arg("--authorizer-class-name", "standard")
            .arg("--allow-everyone-if-no-acl-found", "true"),
    );
    let mut client = RawClient::connect(&broker.bootstrap());
    let entity: Entity = vec![("user", Some("a")), ("user", None)];
    assert_eq!(
        alter(
            &mut client,
            &[(entity.clone(), vec![("producer_byte_rate", 10.0, false)])],
            false
        ),
        vec![ok(&[("user", None)])]
    );
    // DENY the client (User:ANONYMOUS) both rights on the cluster.
    let mut request = kafka_protocol::messages::CreateAclsRequest::default();
    request.creations = [4i8, 8]
        .into_iter()
        .map(|operation| {
            let mut c = kafka_protocol::messages::create_acls_request::AclCreation::default();
            c.resource_type = 4; // CLUSTER
            c.resource_name = s("kafka-cluster");
            c.resource_pattern_type = 3; // LITERAL
            c.principal = s("User:ANONYMOUS");
            c.host = s("*");
            c.operation = operation; // DESCRIBE_CONFIGS, ALTER_CONFIGS
            c.permission_type = 2; // DENY
            c
        })
        .collect();
    let created: kafka_protocol::messages::CreateAclsResponse =
        client.request(ApiKey::CreateAcls, 3, &request);
    assert!(created.results.iter().all(|r| r.error_code == 0));
    let refused = (
        31,
        Some("Cluster authorization failed.".to_string()),
        owned(&entity),
    );
    assert_eq!(
        alter(
            &mut client,
            &[(entity.clone(), vec![("producer_byte_rate", 20.0, false)])],
            false
        ),
        vec![refused]
    );
    assert_eq!(describe(&mut client, &[], false), (31, None, None));
}

/// CreateTopics of `names` with `partitions` each, as `client` sends it at
/// `version`: (throttle, [(name, error, message)]).
#[allow(clippy::type_complexity)]
fn create_topics_at(
    client: &mut RawClient,
    version: i16,
    names: &[String],
    partitions: i32,
    validate_only: bool,
) -> (i32, Vec<(String, i16, Option<String>)>) {
    let mut request = CreateTopicsRequest::default();
    request.topics = names
        .iter()
        .map(|name| {
            let mut topic = CreatableTopic::default();
            topic.name = TopicName(s(name));
            topic.num_partitions = partitions;
            topic.replication_factor = 1;
            topic
        })
        .collect();
    request.timeout_ms = 10_000;
    request.validate_only = validate_only;
    let response: CreateTopicsResponse = client.request(ApiKey::CreateTopics, version, &request);
    (
        response.throttle_time_ms,
        response
            .topics
            .into_iter()
            .map(|t| {
                (
                    t.name.to_string(),
                    t.error_code,
                    t.error_message.map(|m| m.to_string()),
                )
            })
            .collect(),
    )
}

/// Goal: `controller_mutation_rate` is Kafka's token bucket of partitions:
/// strict requests (CreateTopics v6+, DeleteTopics v5+) are refused topic
/// by topic with THROTTLING_QUOTA_EXCEEDED once it is below zero and carry
/// the throttle (the connection muted for it); older versions are counted
/// and throttled, never refused; validate_only counts too.
#[test]
fn controller_mutation_rate_refuses_and_throttles_as_kafka() {
    const THROTTLED: i16 = 89;
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut admin = RawClient::connect(&bootstrap);
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let name = |n: u32| format!("mutation-{n}-{run}");
    let entity: Entity = vec![("client-id", Some("rb-quota-mutations"))];
    assert_eq!(
        alter(
            &mut admin,
            &[(
                entity.clone(),
                vec![("controller_mutation_rate", 1.0, false)]
            )],
            false
        ),
        vec![ok(&entity)]
    );
    std::thread::sleep(Duration::from_secs(1));
    let mut client = RawClient::connect_as(&bootstrap, "rb-quota-mutations");
    // 11 tokens: 10 and 10 partitions pass (each checked before it is
    // counted), leaving -9: the third is refused, 9 s of throttle.
    let (throttle, topics) =
        create_topics_at(&mut client, 7, &[name(1), name(2), name(3)], 10, false);
    let answered = Instant::now();
    assert_eq!(
        topics,
        vec![
            (name(1), 0, None),
            (name(2), 0, None),
            (name(3), THROTTLED, None)
        ]
    );
    // (Less the time the request took after the refusal.)
    assert!((6000..=9000).contains(&throttle), "{throttle}");
    let first_throttle = throttle as u64;
    // Muted until then; by then the bucket is back to 0: one partition
    // passes (to -1), without a throttle (strict never throttles a pass).
    let (throttle, topics) = create_topics_at(&mut client, 7, &[name(4)], 1, false);
    assert!(answered.elapsed() >= Duration::from_millis(first_throttle - 500));
    assert_eq!((throttle, topics), (0, vec![(name(4), 0, None)]));
    // v5 is permissive: three more pass, throttled about 4 s.
    let (throttle, topics) = create_topics_at(&mut client, 5, &[name(5)], 3, false);
    assert_eq!(topics, vec![(name(5), 0, None)]);
    assert!((2000..=4000).contains(&throttle), "{throttle}");
    // After the mute (about 0 again), validate_only counts two.
    let (throttle, topics) = create_topics_at(&mut client, 7, &[name(6)], 2, true);
    assert_eq!((throttle, topics), (0, vec![(name(6), 0, None)]));
    let mut request = kafka_protocol::messages::DeleteTopicsRequest::default();
    request.topics = [name(1), name(2)]
        .into_iter()
        .map(|n| {
            let mut t =
                kafka_protocol::messages::delete_topics_request::DeleteTopicState::default();
            t.name = Some(TopicName(s(&n)));
            t
        })
        .collect();
    request.timeout_ms = 10_000;
    let response: kafka_protocol::messages::DeleteTopicsResponse =
        client.request(ApiKey::DeleteTopics, 6, &request);
    assert!(
        (500..=2000).contains(&response.throttle_time_ms),
        "{}",
        response.throttle_time_ms
    );
    assert!(response.responses.iter().all(|r| r.error_code == THROTTLED));
    assert_eq!(
        alter(
            &mut admin,
            &[(
                entity.clone(),
                vec![("controller_mutation_rate", 0.0, true)]
            )],
            false
        ),
        vec![ok(&entity)]
    );
}

/// Goal: past an IP's `connection_creation_rate` a new connection is held
/// unread and closed, uncounted, as Kafka's `ConnectionQuotas` does, while
/// connections already open go on; an idle IP may open ten seconds' worth
/// at once (the rate's window).
#[test]
fn connection_creation_rate_closes_connections_past_it() {
    let (bootstrap, _broker) = bootstrap_or_broker();
    let mut admin = RawClient::connect(&bootstrap);
    // The default IP's quota applies to 127.0.0.1.
    let entity: Entity = vec![("ip", None)];
    assert_eq!(
        alter(
            &mut admin,
            &[(
                entity.clone(),
                vec![("connection_creation_rate", 2.0, false)]
            )],
            false
        ),
        vec![ok(&entity)]
    );
    std::thread::sleep(Duration::from_secs(1));
    // 2 a second over ten seconds: 20 are served, the rest closed.
    let served = served_of_burst(&bootstrap, 25);
    // (A few more if connecting took long enough to stretch the window.)
    assert!((20..=22).contains(&served), "{served} served");
    // The open connection is not affected.
    assert_eq!(
        alter(
            &mut admin,
            &[(
                entity.clone(),
                vec![("connection_creation_rate", 0.0, true)]
            )],
            false
        ),
        vec![ok(&entity)]
    );
    std::thread::sleep(Duration::from_millis(500));
    let _: ApiVersionsResponse = RawClient::connect(&bootstrap).request(
        ApiKey::ApiVersions,
        3,
        &ApiVersionsRequest::default(),
    );
}

/// Opens `count` connections from 127.0.0.1 at once, sends ApiVersions v0
/// on each: how many are answered.
fn served_of_burst(bootstrap: &str, count: usize) -> usize {
    let sockets: Vec<std::net::TcpStream> = (0..count)
        .map(|_| std::net::TcpStream::connect(bootstrap).unwrap())
        .collect();
    let mut served = 0;
    for mut socket in sockets {
        use std::io::{Read, Write};
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // ApiVersions v0, no client id.
        let request = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0];
        let answered = socket.write_all(&request).is_ok() && {
            let mut size = [0u8; 4];
            socket.read_exact(&mut size).is_ok()
        };
        served += usize::from(answered);
    }
    served
}

/// Goal: an IP quota may name a host, as in Kafka 4.1.1: a name that
/// resolves is taken and stored as given, and its rate applies to the
/// address it resolves to; one that does not (or a numeric form Java does
/// not read) is refused with Kafka's message, even to remove it or with
/// validate_only. As Kafka keeps one rate per address, of two entities
/// naming the same address the one applied last sets the rate, and
/// removing either removes the address's rate. Kept across a restart.
#[test]
fn ip_quotas_may_name_hosts_that_resolve() {
    let (bootstrap, mut broker) = bootstrap_or_broker();
    let mut admin = RawClient::connect(&bootstrap);
    let rate = |value: f64| vec![("connection_creation_rate", value, false)];
    let remove = || vec![("connection_creation_rate", 0.0, true)];
    for name in ["no-such-host.invalid", "999.1.1.1", "a b", "0x7f.0.0.1"] {
        let entity: Entity = vec![("ip", Some(name))];
        let message = format!("{name} is not a valid IP or resolvable host.");
        for validate_only in [false, true] {
            assert_eq!(
                alter(&mut admin, &[(entity.clone(), rate(2.0))], validate_only),
                vec![refused(&message, &entity)]
            );
        }
        assert_eq!(
            alter(&mut admin, &[(entity.clone(), remove())], false),
            vec![refused(&message, &entity)]
        );
    }
    let localhost: Entity = vec![("ip", Some("localhost"))];
    let address: Entity = vec![("ip", Some("127.0.0.1"))];
    let set = |admin: &mut RawClient, entity: &Entity, ops: Vec<Op>| {
        assert_eq!(
            alter(admin, &[(entity.clone(), ops)], false),
            vec![ok(entity)]
        );
        // Kafka applies it a moment after answering.
        std::thread::sleep(Duration::from_millis(500));
    };
    set(&mut admin, &localhost, rate(2.0));
    // Stored as named: found by its name only.
    let described = |admin: &mut RawClient, name: &str| {
        describe(admin, &[("ip", 0, Some(name))], false).2.unwrap()
    };
    assert_eq!(
        described(&mut admin, "localhost"),
        vec![(
            owned(&localhost),
            vec![("connection_creation_rate".to_string(), 2.0)]
        )]
    );
    assert!(described(&mut admin, "127.0.0.1").is_empty());
    // 2 a second over ten seconds from 127.0.0.1.
    std::thread::sleep(Duration::from_secs(1));
    let served = served_of_burst(&bootstrap, 30);
    assert!((20..=22).contains(&served), "{served} served");
    // 127.0.0.1's own quota, applied last, sets the address's rate.
    set(&mut admin, &address, rate(50.0));
    assert_eq!(served_of_burst(&bootstrap, 20), 20);
    // Removing it removes the address's rate, though localhost's is kept.
    set(&mut admin, &address, remove());
    assert_eq!(served_of_burst(&bootstrap, 20), 20);
    assert_eq!(described(&mut admin, "localhost").len(), 1);
    // localhost's quota applied again (a new value) sets it again.
    set(&mut admin, &localhost, rate(1.0));
    assert_eq!(served_of_burst(&bootstrap, 3), 0, "past 1 a second");
    if let Some(broker) = broker.as_mut() {
        broker.restart();
        let mut admin = RawClient::connect(&bootstrap);
        std::thread::sleep(Duration::from_secs(1));
        let served = served_of_burst(&bootstrap, 20);
        assert!(
            (9..=12).contains(&served),
            "{served} served after a restart"
        );
        set(&mut admin, &localhost, remove());
    } else {
        set(&mut admin, &localhost, remove());
    }
    assert_eq!(served_of_burst(&bootstrap, 20), 20);
}

/// Goal: `quota.window.num` and `quota.window.size.seconds` decide the span
/// a rate is measured over, as in Kafka: with 3 samples of 2 s a new
/// sensor's rate is taken over (3 - 1) * 2 s = 4 s, so 150 kB against a
/// 10 kB/s quota is throttled (size / 4 s - 10 kB/s) / 10 kB/s * 4 s =
/// size / 10 - 4000 ms (with Kafka's 11 samples of 1 s: size / 10 - 10 000).
/// Measured the same on Kafka 4.1.1 started with quota.window.num=3 and
/// quota.window.size.seconds=2 (RINGBROKER_QUOTA_WINDOW_REFERENCE=host:port
/// runs this against such a Kafka); DescribeConfigs shows both values.
#[test]
fn quota_windows_set_the_span_rates_are_measured_over() {
    let (bootstrap, _broker) = match std::env::var("RINGBROKER_QUOTA_WINDOW_REFERENCE") {
        Ok(reference) => (reference, None),
        Err(_) => {
            let broker = Broker::start(
                BrokerOptions::default()
                    .auto_create_topics_enable(false)
                    .arg("--quota-window-num", 3)
                    .arg("--quota-window-size-seconds", 2),
            );
            (broker.bootstrap(), Some(broker))
        }
    };
    let mut admin = RawClient::connect(&bootstrap);
    let topic = &fresh_topic("quota-windows");
    create_topic(&mut admin, topic);
    const QUOTA: f64 = 10_000.0;
    let entity: Entity = vec![("client-id", Some("rb-window-producer"))];
    assert_eq!(
        alter(
            &mut admin,
            &[(entity.clone(), vec![("producer_byte_rate", QUOTA, false)])],
            false
        ),
        vec![ok(&entity)]
    );
    std::thread::sleep(Duration::from_secs(1));
    let mut producer = RawClient::connect_as(&bootstrap, "rb-window-producer");
    let big = produce_request(topic, 150, 1000);
    let size = request_bytes(&big, "rb-window-producer");
    let response: ProduceResponse = producer.request(ApiKey::Produce, 9, &big);
    assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    let expected = (size as f64 / 10.0 - 4000.0).round() as i32;
    assert_eq!(response.throttle_time_ms, expected, "{size} bytes");

    let mut request = kafka_protocol::messages::DescribeConfigsRequest::default();
    let mut resource =
        kafka_protocol::messages::describe_configs_request::DescribeConfigsResource::default();
    resource.resource_type = 4;
    let node = common::wire::metadata(&bootstrap, Some(&[])).brokers[0]
        .node_id
        .0;
    resource.resource_name = s(&node.to_string());
    resource.configuration_keys = Some(vec![s("quota.window.num"), s("quota.window.size.seconds")]);
    request.resources = vec![resource];
    let described: kafka_protocol::messages::DescribeConfigsResponse =
        admin.request(ApiKey::DescribeConfigs, 4, &request);
    let mut values: Vec<(String, Option<String>)> = described.results[0]
        .configs
        .iter()
        .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
        .collect();
    values.sort();
    assert_eq!(
        values,
        vec![
            ("quota.window.num".to_string(), Some("3".to_string())),
            (
                "quota.window.size.seconds".to_string(),
                Some("2".to_string())
            ),
        ]
    );
}
