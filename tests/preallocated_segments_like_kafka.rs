//! Goal: Kafka's `preallocate` topic config and its broker value
//! `log.preallocate` do what they do on Kafka 4.1.1 (measured there, same
//! machine): a new segment's `.log` is `segment.bytes` long from its
//! creation (sparse, no disk reserved), cut to its data when it rolls;
//! after kill -9 recovery cuts the zeros and loses nothing; an active
//! segment is not preallocated again when the log loads; a change (of the
//! topic, or of the broker value at runtime, or on the command line)
//! applies from the next segment; the broker value is checked and
//! described in Kafka's words.
//!
//! Method: rdkafka's AdminClient, producer and consumer against the real
//! binary; IncrementalAlterConfigs by hand; the segment files' lengths and
//! allocated blocks read from the data directory.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use common::kafka::{
    create_topic, create_topic_with_configs, described_broker_config, produce_keyed,
    read_partitions,
};
use common::wire::{incremental_alter_configs, RawClient};
use common::{wait_until, with_timeout, Broker, BrokerOptions};

const BROKER: i8 = 4;
const TOPIC: i8 = 2;
const SEGMENT: u64 = 1 << 20;
const INVALID_REQUEST: i16 = 42;

/// (length, allocated bytes) of each `.log` file of `dir`, in offset order.
fn segment_files(dir: &Path) -> Vec<(u64, u64)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("listing {}: {error}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".log"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| {
            let meta = std::fs::metadata(dir.join(name)).unwrap();
            (meta.len(), meta.blocks() * 512)
        })
        .collect()
}

/// [`segment_files`] once `dir` holds a segment file.
fn created_segment_files(dir: &Path) -> Vec<(u64, u64)> {
    wait_until(Duration::from_secs(10), "the segment file", || {
        dir.join("00000000000000000000.log").exists()
    });
    segment_files(dir)
}

fn read_count(bootstrap: &str, topic: &str, count: i64) -> usize {
    let ends = [(0, count)].into_iter().collect();
    read_partitions(bootstrap, topic, &ends, Duration::from_secs(30))[&0].len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_segments_are_segment_bytes_long_like_kafka() {
    let mut broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    let data_dir = broker.data_dir().to_path_buf();
    let pre = data_dir.join("pre-0");
    let plain = data_dir.join("plain-0");
    with_timeout(Duration::from_secs(180), async {
        create_topic_with_configs(
            &bootstrap,
            "pre",
            1,
            &[("preallocate", "true"), ("segment.bytes", "1048576")],
        )
        .await;
        create_topic_with_configs(&bootstrap, "plain", 1, &[("segment.bytes", "1048576")]).await;
        // Created that long, sparse; without the config, empty.
        let created = created_segment_files(&pre);
        assert_eq!(created.len(), 1);
        assert_eq!(created[0].0, SEGMENT);
        assert!(created[0].1 < SEGMENT / 2, "disk reserved: {created:?}");
        assert_eq!(created_segment_files(&plain), vec![(0, 0)]);

        // 250 records of 10 KB: two rolls; the rolled segments cut to their
        // data, the new one preallocated.
        produce_keyed(&bootstrap, "pre", 1, 250).await;
        let files = segment_files(&pre);
        assert_eq!(files.len(), 3, "{files:?}");
        for (length, _) in &files[..2] {
            assert!(*length > SEGMENT - 20_000 && *length < SEGMENT, "{files:?}");
        }
        assert_eq!(files[2].0, SEGMENT, "{files:?}");
    })
    .await;

    // kill -9: recovery cuts the active segment's zeros; nothing is lost,
    // and the loaded segment is not preallocated again.
    broker.kill9();
    broker.restart();
    with_timeout(Duration::from_secs(180), async {
        let files = segment_files(&pre);
        assert_eq!(files.len(), 3, "{files:?}");
        assert!(files[2].0 < SEGMENT / 2, "not cut by recovery: {files:?}");
        assert_eq!(read_count(&bootstrap, "pre", 250), 250);

        // The broker value at runtime, for topics without their own: from
        // the next segment on, as in Kafka.
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(
            incremental_alter_configs(&mut client, BROKER, "", &[("log.preallocate", Some("maybe"))]),
            (
                INVALID_REQUEST,
                Some(
                    "Invalid value maybe for configuration log.preallocate: Expected value to be either true or false"
                        .into()
                )
            )
        );
        assert_eq!(
            incremental_alter_configs(&mut client, BROKER, "", &[("log.preallocate", Some("true"))]),
            (0, None)
        );
        assert_eq!(
            described_broker_config(&bootstrap, 0, "log.preallocate").await,
            ("true".into(), "DynamicDefaultBroker".into())
        );
        assert_eq!(segment_files(&plain), vec![(0, 0)], "the active segment changed");
        produce_keyed(&bootstrap, "plain", 1, 110).await;
        let files = segment_files(&plain);
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(files[1].0, SEGMENT, "the next segment is not preallocated: {files:?}");
        create_topic(&bootstrap, "later", 1).await;
        assert_eq!(created_segment_files(&data_dir.join("later-0"))[0].0, 1 << 30);

        // A topic's own false wins, from its next segment.
        assert_eq!(
            incremental_alter_configs(&mut client, TOPIC, "pre", &[("preallocate", Some("false"))]),
            (0, None)
        );
        produce_keyed(&bootstrap, "pre", 1, 110).await;
        let files = segment_files(&pre);
        assert!(files.len() >= 4, "{files:?}");
        assert!(files.last().unwrap().0 < SEGMENT, "{files:?}");
        assert_eq!(
            incremental_alter_configs(&mut client, BROKER, "", &[("log.preallocate", None)]),
            (0, None)
        );
    })
    .await;

    // On the command line: described as Kafka describes a static value.
    broker.terminate();
    broker.restart_with_arg("--log-preallocate", "TRUE");
    with_timeout(Duration::from_secs(60), async {
        assert_eq!(
            described_broker_config(&bootstrap, 0, "log.preallocate").await,
            ("true".into(), "StaticBroker".into())
        );
        create_topic_with_configs(&bootstrap, "static", 1, &[("segment.bytes", "1048576")]).await;
        assert_eq!(
            created_segment_files(&data_dir.join("static-0"))[0].0,
            SEGMENT
        );
    })
    .await;
}
