//! Goal: the broker values topics inherit change at runtime, as with
//! Kafka's `kafka-configs --alter --entity-type brokers` (this broker, or
//! `--entity-default`): a topic without its own value follows at once
//! (segments roll at the new `log.segment.bytes`, the retention check
//! deletes past the new `log.retention.bytes`, a record over the old
//! `message.max.bytes` is taken), a topic with its own value keeps it,
//! DescribeConfigs shows the source and Kafka's synonym chain, and all of
//! it holds after a restart. Kafka 4.1.1 answered the same describes with
//! the same values, sources and synonyms.
//!
//! Method: rdkafka's admin client (AlterConfigs, which replaces the
//! broker's dynamic configs) and raw IncrementalAlterConfigs for the
//! cluster default (rdkafka cannot name it); rdkafka producers with acks=all
//! and ListOffsets for what clients see.

mod common;

use std::time::Duration;

use rdkafka::admin::{AdminOptions, AlterConfig, ResourceSpecifier};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord};

use common::kafka::{
    admin_client, create_topic, create_topic_with_configs, producer_config, watermarks,
};
use common::wire::{incremental_alter_configs, RawClient};
use common::{wait_until, with_timeout, Broker, BrokerOptions};

/// Sets configs of the cluster-default BROKER resource ("").
fn set_cluster_default(bootstrap: &str, configs: &[(&str, &str)]) {
    let configs: Vec<(&str, Option<&str>)> = configs.iter().map(|(n, v)| (*n, Some(*v))).collect();
    let answer = incremental_alter_configs(&mut RawClient::connect(bootstrap), 4, "", &configs);
    assert_eq!(answer.0, 0, "{:?}", answer.1);
}

/// (value, source) of each of `names` for topic or broker `resource`, as
/// rdkafka's describeConfigs reports them.
async fn described(
    bootstrap: &str,
    resource: ResourceSpecifier<'_>,
    names: &[&str],
) -> Vec<(String, String)> {
    let admin = admin_client(bootstrap);
    let results = admin
        .describe_configs([&resource], &AdminOptions::new())
        .await
        .expect("DescribeConfigs");
    let resource = results[0].as_ref().expect("described");
    names
        .iter()
        .map(|name| {
            let entry = resource
                .get(name)
                .unwrap_or_else(|| panic!("{name} not described"));
            (
                entry.value.clone().unwrap_or_default(),
                format!("{:?}", entry.source),
            )
        })
        .collect()
}

async fn produce(producer: &FutureProducer, topic: &str, count: usize, size: usize) {
    let payload = vec![b'x'; size];
    for i in 0..count {
        let key = i.to_string();
        producer
            .send(
                FutureRecord::to(topic)
                    .partition(0)
                    .key(&key)
                    .payload(&payload),
                Duration::from_secs(30),
            )
            .await
            .unwrap_or_else(|(error, _)| panic!("produce {i} to {topic}: {error}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_follow_broker_values_changed_at_runtime_like_kafka() {
    let mut broker =
        Broker::start(BrokerOptions::default().arg("--log-retention-check-interval-ms", 200));
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(240), async {
        create_topic(&bootstrap, "follows", 1).await;
        create_topic_with_configs(&bootstrap, "own", 1, &[("retention.bytes", "-1")]).await;

        // This broker: 1 MiB segments, 1 MiB kept.
        let admin = admin_client(&bootstrap);
        let change = AlterConfig::new(ResourceSpecifier::Broker(0))
            .set("log.segment.bytes", "1048576")
            .set("log.retention.bytes", "1048576");
        let answers = admin
            .alter_configs([&change], &AdminOptions::new())
            .await
            .expect("AlterConfigs");
        assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");

        // 4 MiB to each: "follows" rolls and loses its oldest segments, "own"
        // keeps everything.
        let producer: FutureProducer = producer_config(&bootstrap)
            .set("message.max.bytes", "10000000")
            .set("batch.size", "100000")
            .create()
            .expect("producer");
        produce(&producer, "follows", 400, 10_000).await;
        produce(&producer, "own", 400, 10_000).await;
        wait_until(
            Duration::from_secs(30),
            "retention by the new log.retention.bytes",
            || watermarks(&bootstrap, "follows", 0).0 > 0,
        );
        let (start, end) = watermarks(&bootstrap, "follows", 0);
        assert_eq!(end, 400);
        assert!(
            (200..=350).contains(&start),
            "1 MiB kept in 1 MiB segments of 10 kB records should start at 200-350, not {start}"
        );
        assert_eq!(
            watermarks(&bootstrap, "own", 0),
            (0, 400),
            "a topic's own value lost"
        );

        // A record over Kafka's default message.max.bytes is refused until
        // the cluster default allows it.
        let big = vec![b'y'; 1_500_000];
        let refused = producer
            .send(
                FutureRecord::<(), _>::to("follows")
                    .partition(0)
                    .payload(&big),
                Duration::from_secs(30),
            )
            .await;
        assert!(
            matches!(
                refused,
                Err((
                    KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge),
                    _
                ))
            ),
            "{refused:?}"
        );
        set_cluster_default(&bootstrap, &[("message.max.bytes", "3000000")]);
        producer
            .send(
                FutureRecord::<(), _>::to("follows")
                    .partition(0)
                    .payload(&big),
                Duration::from_secs(30),
            )
            .await
            .expect("a 1.5 MB record under the new message.max.bytes");

        let expect = [
            ("1048576".to_string(), "DynamicBroker".to_string()),
            ("1048576".to_string(), "DynamicBroker".to_string()),
            ("3000000".to_string(), "DynamicDefaultBroker".to_string()),
        ];
        let topic_names = ["segment.bytes", "retention.bytes", "max.message.bytes"];
        assert_eq!(
            described(
                &bootstrap,
                ResourceSpecifier::Topic("follows"),
                &topic_names
            )
            .await,
            expect
        );
        let broker_names = [
            "log.segment.bytes",
            "log.retention.bytes",
            "message.max.bytes",
        ];
        assert_eq!(
            described(&bootstrap, ResourceSpecifier::Broker(0), &broker_names).await,
            expect
        );
        assert_eq!(
            described(
                &bootstrap,
                ResourceSpecifier::Topic("own"),
                &["retention.bytes"]
            )
            .await,
            [("-1".to_string(), "DynamicTopic".to_string())]
        );
    })
    .await;

    broker.restart();
    with_timeout(Duration::from_secs(60), async {
        let topic_names = ["segment.bytes", "retention.bytes", "max.message.bytes"];
        let values: Vec<String> = described(
            &bootstrap,
            ResourceSpecifier::Topic("follows"),
            &topic_names,
        )
        .await
        .into_iter()
        .map(|(value, _)| value)
        .collect();
        assert_eq!(values, ["1048576", "1048576", "3000000"]);
        // AlterConfigs replaces this broker's dynamic configs: without them
        // the topic is back to Kafka's defaults, the cluster default stays.
        let admin = admin_client(&bootstrap);
        let change = AlterConfig::new(ResourceSpecifier::Broker(0));
        let answers = admin
            .alter_configs([&change], &AdminOptions::new())
            .await
            .expect("AlterConfigs");
        assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");
        assert_eq!(
            described(
                &bootstrap,
                ResourceSpecifier::Topic("follows"),
                &topic_names
            )
            .await,
            [
                ("1073741824".to_string(), "Default".to_string()),
                ("-1".to_string(), "Default".to_string()),
                ("3000000".to_string(), "DynamicDefaultBroker".to_string()),
            ]
        );
    })
    .await;
}

/// The DescribeConfigs entries of BROKER resource `name` whose names start
/// with "plugin.": (name, value, read_only, source, sensitive, type,
/// synonyms as (value, source)).
type Unknown = (
    String,
    Option<String>,
    bool,
    i8,
    bool,
    i8,
    Vec<(Option<String>, i8)>,
);
fn plugin_configs(bootstrap: &str, name: &str) -> Vec<Unknown> {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};
    use kafka_protocol::protocol::StrBytes;
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = 4;
    resource.resource_name = StrBytes::from_string(name.to_string());
    let mut request = DescribeConfigsRequest::default();
    request.resources = vec![resource];
    request.include_synonyms = true;
    let response: DescribeConfigsResponse =
        RawClient::connect(bootstrap).request(ApiKey::DescribeConfigs, 4, &request);
    response.results[0]
        .configs
        .iter()
        .filter(|c| c.name.starts_with("plugin."))
        .map(|c| {
            (
                c.name.to_string(),
                c.value.as_ref().map(|v| v.to_string()),
                c.read_only,
                c.config_source,
                c.is_sensitive,
                c.config_type,
                c.synonyms
                    .iter()
                    .map(|s| (s.value.as_ref().map(|v| v.to_string()), s.source))
                    .collect(),
            )
        })
        .collect()
}

/// Goal: a broker config name Kafka does not know (a plugin's own, say) is
/// kept as Kafka 4.1.1 keeps it, for the node and for all brokers, and
/// described as it describes one: read-only, sensitive (no value shown), of
/// type UNKNOWN, its synonyms the layers that set it; deleting it removes
/// it; it survives kill -9. APPEND to it is refused (INVALID_CONFIG; Kafka
/// answers UNKNOWN_SERVER_ERROR there).
///
/// Method: raw IncrementalAlterConfigs and DescribeConfigs; with
/// RINGBROKER_CONFIGS_REFERENCE=host:port (a Kafka of node id 1) up to the
/// restart against that Kafka, waiting for its configs to settle.
#[test]
fn unknown_broker_config_names_are_kept_like_kafka() {
    const DYNAMIC_BROKER: i8 = 2;
    const DYNAMIC_DEFAULT_BROKER: i8 = 3;
    let reference = std::env::var("RINGBROKER_CONFIGS_REFERENCE").ok();
    let mut broker = reference
        .is_none()
        .then(|| Broker::start(BrokerOptions::default().arg("--node-id", 1)));
    let bootstrap = reference.unwrap_or_else(|| broker.as_ref().expect("a broker").bootstrap());
    let alter = |resource: &str, name: &str, value: Option<&str>| {
        incremental_alter_configs(
            &mut RawClient::connect(&bootstrap),
            4,
            resource,
            &[(name, value)],
        )
    };
    assert_eq!(alter("", "plugin.a", Some("x")), (0, None));
    assert_eq!(alter("1", "plugin.a", Some("y")), (0, None));
    assert_eq!(alter("1", "plugin.b", Some("z")), (0, None));
    let unknown = |name: &str, sources: &[i8]| -> Unknown {
        (
            name.to_string(),
            None,
            true,
            sources[0],
            true,
            0,
            sources.iter().map(|s| (None, *s)).collect(),
        )
    };
    // Kafka applies a change a moment after answering it.
    let settled = |resource: &str, expected: Vec<Unknown>| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while plugin_configs(&bootstrap, resource) != expected
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            plugin_configs(&bootstrap, resource),
            expected,
            "{resource:?}"
        );
    };
    settled("", vec![unknown("plugin.a", &[DYNAMIC_DEFAULT_BROKER])]);
    settled(
        "1",
        vec![
            unknown("plugin.a", &[DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER]),
            unknown("plugin.b", &[DYNAMIC_BROKER]),
        ],
    );
    assert_eq!(alter("1", "plugin.b", None), (0, None));
    settled(
        "1",
        vec![unknown(
            "plugin.a",
            &[DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER],
        )],
    );
    if let Some(broker) = broker.as_mut() {
        let mut client = RawClient::connect(&broker.bootstrap());
        let appended = common::wire::incremental_alter_configs_ops(
            &mut client,
            4,
            "",
            &[("plugin.a", 2, Some("w"))],
        );
        assert_eq!(
            appended,
            (
                40,
                Some("Config value append is not allowed for config key: plugin.a".to_string())
            )
        );
        broker.kill9();
        broker.restart();
        assert_eq!(
            plugin_configs(&broker.bootstrap(), "1"),
            vec![unknown(
                "plugin.a",
                &[DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER]
            )]
        );
    }
    let bootstrap = broker.as_ref().map_or(bootstrap.clone(), |b| b.bootstrap());
    for resource in ["", "1"] {
        let answer = incremental_alter_configs(
            &mut RawClient::connect(&bootstrap),
            4,
            resource,
            &[("plugin.a", None)],
        );
        assert_eq!(answer, (0, None));
    }
    wait_until(Duration::from_secs(10), "plugin.a deleted", || {
        plugin_configs(&bootstrap, "").is_empty() && plugin_configs(&bootstrap, "1").is_empty()
    });
}
