//! Goal: DescribeLogDirs (`kafka-log-dirs --describe`, admin clients'
//! `describeLogDirs`) reports the broker's one log directory with the bytes
//! each partition holds on disk, for every partition when no topic is
//! named (internal ones included) and for exactly the held ones named
//! otherwise (unknown topics and partitions are left out, as Kafka does);
//! v4 adds the file system's total and usable bytes; a DeleteRecords that
//! drops segments shrinks the size reported.
//!
//! Method: an rdkafka producer with acks=all and small batches into small
//! segments, hand-built v1 and v4 requests, the sizes compared with the
//! batches found in the partition's segment files.

mod common;

use std::time::Duration;

use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::{
    ApiKey, DescribeLogDirsRequest, DescribeLogDirsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::AdminOptions;
use rdkafka::{Offset, TopicPartitionList};

use common::kafka::{
    admin_client, create_topic_with_configs, future_producer, produce_all, producer_config,
    test_messages,
};
use common::segment::{parse_batches, segment_files};
use common::wire::RawClient;
use common::{with_timeout, Broker, BrokerOptions};

const TOPIC: &str = "log-dirs";

/// Bytes of the whole batches in the partition's segment files.
fn bytes_on_disk(broker: &Broker, topic: &str, partition: i32) -> i64 {
    segment_files(broker.data_dir(), topic, partition)
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).expect("read segment");
            parse_batches(&bytes)
                .last()
                .map_or(0, |batch| batch.end_position() as i64)
        })
        .sum()
}

fn describe(
    bootstrap: &str,
    version: i16,
    topics: Option<&[(&str, &[i32])]>,
) -> DescribeLogDirsResponse {
    let mut request = DescribeLogDirsRequest::default();
    request.topics = topics.map(|topics| {
        topics
            .iter()
            .map(|(name, partitions)| {
                let mut topic = DescribableLogDirTopic::default();
                topic.topic = TopicName(StrBytes::from_string(name.to_string()));
                topic.partitions = partitions.to_vec();
                topic
            })
            .collect()
    });
    RawClient::connect(bootstrap).request(ApiKey::DescribeLogDirs, version, &request)
}

/// (topic, partition) -> size reported, from the one directory.
fn sizes(broker: &Broker, response: &DescribeLogDirsResponse) -> Vec<(String, i32, i64)> {
    assert_eq!(response.error_code, 0);
    assert_eq!(response.results.len(), 1, "one log directory");
    let dir = &response.results[0];
    assert_eq!(dir.error_code, 0);
    assert_eq!(
        std::path::Path::new(dir.log_dir.as_str()),
        std::path::absolute(broker.data_dir()).unwrap(),
        "the log directory is the data directory"
    );
    dir.topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(move |p| {
                assert_eq!((p.offset_lag, p.is_future_key), (0, false));
                (topic.name.to_string(), p.partition_index, p.partition_size)
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_log_dirs_reports_what_each_partition_holds() {
    let broker = Broker::start(BrokerOptions::default().cores(2));
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(240), async {
        create_topic_with_configs(&bootstrap, TOPIC, 3, &[("segment.bytes", "8192")]).await;
        let mut config = producer_config(&bootstrap);
        config.set("batch.num.messages", "10");
        let producer = future_producer(&config);
        // Partitions 0 and 1 get data, 2 stays empty.
        produce_all(&producer, TOPIC, &test_messages(400, 2)).await;
        drop(producer);
        let mut find = FindCoordinatorRequest::default();
        find.key = StrBytes::from_static_str("log-dirs-group");
        let found: FindCoordinatorResponse =
            RawClient::connect(&bootstrap).request(ApiKey::FindCoordinator, 3, &find);
        assert_eq!(found.error_code, 0, "FindCoordinator");

        let on_disk: Vec<i64> = (0..3).map(|p| bytes_on_disk(&broker, TOPIC, p)).collect();
        assert!(
            on_disk[0] > 8192 && on_disk[1] > 8192 && on_disk[2] == 0,
            "{on_disk:?}"
        );

        // Every partition when no topic is named.
        let all = sizes(&broker, &describe(&bootstrap, 1, None));
        let ours: Vec<(String, i32, i64)> =
            all.iter().filter(|(t, _, _)| t == TOPIC).cloned().collect();
        assert_eq!(
            ours,
            (0..3)
                .map(|p| (TOPIC.to_string(), p, on_disk[p as usize]))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            all.iter()
                .filter(|(t, _, _)| t == "__consumer_offsets")
                .count(),
            50,
            "internal topics are listed: {all:?}"
        );

        // Named: only what is held, unknown topics and partitions left out.
        let response = describe(
            &bootstrap,
            4,
            Some(&[(TOPIC, &[1, 7]), ("log-dirs-nope", &[0])]),
        );
        assert_eq!(
            sizes(&broker, &response),
            vec![(TOPIC.to_string(), 1, on_disk[1])]
        );
        let dir = &response.results[0];
        assert!(
            dir.total_bytes > 0 && dir.usable_bytes > 0 && dir.usable_bytes <= dir.total_bytes,
            "total {} usable {}",
            dir.total_bytes,
            dir.usable_bytes
        );
        assert_eq!(
            describe(&bootstrap, 3, Some(&[])).results[0].topics.len(),
            0,
            "no topic named, none described"
        );

        // Deleting records drops whole segments: the size follows the disk.
        let mut below = TopicPartitionList::new();
        below
            .add_partition_offset(TOPIC, 0, Offset::Offset(150))
            .expect("offset");
        let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
        admin_client(&bootstrap)
            .delete_records(&below, &options)
            .await
            .expect("delete records");
        let after = bytes_on_disk(&broker, TOPIC, 0);
        assert!(after < on_disk[0], "no segment of partition 0 was deleted");
        assert_eq!(
            sizes(&broker, &describe(&bootstrap, 2, Some(&[(TOPIC, &[0])]))),
            vec![(TOPIC.to_string(), 0, after)]
        );
    })
    .await;
}
