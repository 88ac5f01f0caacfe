//! Goal: the files Kafka keeps for a while after deleting them stay here
//! too, and go by themselves, so a user watching the disk (or a tool
//! reading the data directory) sees Kafka's layout:
//! - A deleted topic's partition directories are renamed
//!   `<topic>-<partition>.<32 hex digits>-delete` and removed after the
//!   broker's `log.segment.delete.delay.ms` (a topic's own
//!   `file.delete.delay.ms` does not apply to them); after a restart, those
//!   left are removed that long after the start. A change of the broker
//!   value at runtime applies to those waiting within a second (Kafka
//!   applies it at its deletion task's next wake-up: a deliberate
//!   difference).
//! - A directory that is not a partition of the metadata's topics (at
//!   start-up), or whose `partition.metadata` names another topic id (a
//!   topic of the same name
//!   deleted before its directory was renamed), is set aside as Kafka sets
//!   aside a stray log, `<name>.<32 hex digits>-stray`, never served and
//!   never removed; the topic's partition starts empty instead of serving
//!   the old data.
//! - Compaction's replaced segments (the first one's too, which the cleaned
//!   segment replaces under the same name) stay renamed `.deleted` for the
//!   topic's `file.delete.delay.ms`, then go.
//!
//! Method: rdkafka's AdminClient and producer against the real binary, the
//! data directory listed between the steps, kill -9 for the restart.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::kafka::{
    create_compacted_topic, create_topic, create_topic_with_configs, delete_topic, future_producer,
    kept_by_key, produce_all, produce_keyed, producer_config, test_messages, watermarks,
};
use common::wire::{incremental_alter_configs, RawClient};
use common::{wait_until, with_timeout, Broker, BrokerOptions};

const BROKER: i8 = 4;

/// Names in `dir` starting with `prefix`, sorted.
fn names(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("listing {}: {error}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// Whether `name` is `dir_name` renamed Kafka's way with `suffix`:
/// `<dir_name>.<32 lowercase hex digits><suffix>`.
fn renamed_with(name: &str, dir_name: &str, suffix: &str) -> bool {
    name.strip_prefix(dir_name)
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|rest| rest.strip_suffix(suffix))
        .is_some_and(|id| {
            id.len() == 32
                && id
                    .bytes()
                    .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
        })
}

/// The directories of `topic`'s partition `partition` renamed with `suffix`.
fn renamed_dirs(data_dir: &Path, topic: &str, partition: i32, suffix: &str) -> Vec<String> {
    let dir_name = format!("{topic}-{partition}");
    names(data_dir, &format!("{dir_name}."))
        .into_iter()
        .filter(|name| renamed_with(name, &dir_name, suffix))
        .collect()
}

async fn produce(bootstrap: &str, topic: &str, count: u64, partitions: i32) {
    let producer = future_producer(&producer_config(bootstrap));
    let acked = produce_all(&producer, topic, &test_messages(count, partitions)).await;
    assert_eq!(acked.len() as u64, count);
}

fn set_broker_delete_delay(bootstrap: &str, value: &str) {
    let mut client = RawClient::connect(bootstrap);
    assert_eq!(
        incremental_alter_configs(
            &mut client,
            BROKER,
            "",
            &[("log.segment.delete.delay.ms", Some(value))]
        ),
        (0, None)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_topics_wait_the_broker_delay_and_strays_are_set_aside() {
    let mut broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    let data_dir = broker.data_dir().to_path_buf();
    with_timeout(Duration::from_secs(120), async {
        // The topic's own delay of 0 is not the directories': they wait
        // the broker's minute.
        create_topic_with_configs(&bootstrap, "gone", 2, &[("file.delete.delay.ms", "0")]).await;
        produce(&bootstrap, "gone", 20, 2).await;
        delete_topic(&bootstrap, "gone").await;
        wait_until(Duration::from_secs(10), "the directories renamed", || {
            names(&data_dir, "gone-")
                .iter()
                .all(|name| name.contains('.'))
        });
        std::thread::sleep(Duration::from_secs(2));
        for partition in 0..2 {
            let renamed = renamed_dirs(&data_dir, "gone", partition, "-delete");
            assert_eq!(renamed.len(), 1, "{:?}", names(&data_dir, "gone-"));
            let dir = data_dir.join(&renamed[0]);
            assert!(dir.join("partition.metadata").exists());
            let log = dir.join("00000000000000000000.log");
            assert!(
                std::fs::metadata(&log).is_ok_and(|meta| meta.len() > 0),
                "{} kept with its records",
                log.display()
            );
        }

        // The name serves a new, empty topic meanwhile.
        create_topic(&bootstrap, "gone", 1).await;
        produce(&bootstrap, "gone", 5, 1).await;
        assert_eq!(watermarks(&bootstrap, "gone", 0), (0, 5));
    })
    .await;

    // kill -9 with both deletions waiting; meanwhile a directory no topic
    // claims, and the new topic's directory given the deleted topic's id
    // (as if its deletion had stopped before the rename).
    broker.kill9();
    let ghost = data_dir.join("ghost-0");
    std::fs::create_dir(&ghost).unwrap();
    std::fs::write(ghost.join("00000000000000000000.log"), b"not served").unwrap();
    let old_metadata = data_dir
        .join(&renamed_dirs(&data_dir, "gone", 0, "-delete")[0])
        .join("partition.metadata");
    std::fs::copy(
        &old_metadata,
        data_dir.join("gone-0").join("partition.metadata"),
    )
    .unwrap();
    let restarted = Instant::now();
    broker.restart_with_arg("--log-segment-delete-delay-ms", 15000);
    // Both deletions wait again, the delay counted from the start.
    let waiting = |data_dir: &Path| {
        (0..2)
            .map(|partition| renamed_dirs(data_dir, "gone", partition, "-delete").len())
            .sum::<usize>()
    };
    assert_eq!(waiting(&data_dir), 2, "{:?}", names(&data_dir, "gone-"));
    with_timeout(Duration::from_secs(120), async {
        let strays = |prefix: &str, dir_name: &str| -> Vec<String> {
            names(&data_dir, prefix)
                .into_iter()
                .filter(|name| renamed_with(name, dir_name, "-stray"))
                .collect()
        };
        let ghost_strays = strays("ghost-0.", "ghost-0");
        assert_eq!(ghost_strays.len(), 1, "{:?}", names(&data_dir, "ghost"));
        assert!(data_dir
            .join(&ghost_strays[0])
            .join("00000000000000000000.log")
            .exists());
        assert_eq!(strays("gone-0.", "gone-0").len(), 1);
        // Served empty, not with the set-aside records.
        assert_eq!(watermarks(&bootstrap, "gone", 0), (0, 0));
        produce(&bootstrap, "gone", 3, 1).await;
        assert_eq!(watermarks(&bootstrap, "gone", 0), (0, 3));

        // The deletions left are removed 15 s after the start.
        wait_until(
            Duration::from_secs(60),
            "the deleted directories to go",
            || waiting(&data_dir) == 0,
        );
        let took = restarted.elapsed();
        assert!(
            took >= Duration::from_secs(15),
            "removed {took:?} after the restart"
        );
        // Strays stay.
        assert_eq!(strays("ghost-0.", "ghost-0").len(), 1);
        assert_eq!(strays("gone-0.", "gone-0").len(), 1);
        assert!(broker
            .log_contents()
            .contains("stray partition directory set aside"));

        // The broker's value set at runtime, and changed again while a
        // deletion waits: followed within a second here, where Kafka 4.1.1
        // follows it when its deletion task next wakes (scheduled by the
        // old value, 10 minutes here).
        set_broker_delete_delay(&bootstrap, "600000");
        delete_topic(&bootstrap, "gone").await;
        std::thread::sleep(Duration::from_secs(7));
        assert_eq!(waiting(&data_dir), 1, "{:?}", names(&data_dir, "gone-"));
        set_broker_delete_delay(&bootstrap, "0");
        wait_until(
            Duration::from_secs(10),
            "the waiting deletion to follow the change",
            || waiting(&data_dir) == 0,
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_segments_stay_deleted_for_the_topic_delay() {
    // Compaction held until the segments are written.
    let broker = Broker::start(BrokerOptions::default().compaction_held());
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(180), async {
        let topic = "compacted-later-deleted";
        create_compacted_topic(&bootstrap, topic, 1, &[("file.delete.delay.ms", "12000")]).await;
        // About 3.5 MB over 20 keys: three closed segments to compact.
        let records = 350;
        let latest = produce_keyed(&bootstrap, topic, 1, records).await;
        let dir = broker.data_dir().join(format!("{topic}-0"));
        assert!(names(&dir, "")
            .iter()
            .all(|name| !name.ends_with(".deleted")));

        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(
            incremental_alter_configs(
                &mut client,
                BROKER,
                "0",
                &[("log.cleaner.io.max.bytes.per.second", Some("1e12"))]
            ),
            (0, None)
        );
        let compacting = Instant::now();
        // Every replaced segment kept, the first's files beside the cleaned
        // segment that took its name.
        wait_until(
            Duration::from_secs(60),
            "the replaced segments kept",
            || {
                let listed = names(&dir, "");
                let has = |name: &str| listed.iter().any(|listed| listed == name);
                has("00000000000000000000.log")
                    && has("00000000000000000000.log.deleted")
                    && has("00000000000000000000.index.deleted")
                    && has("00000000000000000000.timeindex.deleted")
                    && listed
                        .iter()
                        .filter(|name| name.ends_with(".log.deleted"))
                        .count()
                        >= 3
            },
        );
        wait_until(Duration::from_secs(60), "the deleted files to go", || {
            names(&dir, "")
                .iter()
                .all(|name| !name.ends_with(".deleted"))
        });
        let took = compacting.elapsed();
        assert!(
            took >= Duration::from_secs(12),
            "removed {took:?} after compaction began"
        );
        assert_eq!(kept_by_key(&bootstrap, topic, 1, records), latest);
    })
    .await;
}
