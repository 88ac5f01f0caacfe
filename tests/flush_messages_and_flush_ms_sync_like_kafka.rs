//! Goal: the topic configs `flush.messages` and `flush.ms` do what they do in
//! Kafka, so a user who sets them (fair benchmarks set `flush.messages=1`)
//! gets synced data, not an accepted-and-ignored setting.
//!
//! Method: a broker with the log flusher checking every 100 ms
//! (`--log-flush-scheduler-interval-ms`; `--log-flush-interval-ms` kept at
//! never, since unset it defaults to the scheduler interval) and metrics on; three one-partition
//! topics created through rdkafka's admin client: one plain, one with
//! `flush.messages=1`, one with `flush.ms=300`. acks=1 produce never waits for
//! a sync by itself, so the broker's count of syncs
//! (`ringbroker_log_syncfs_total`) tells what the configs caused:
//! - 100 messages to the plain topic: no sync, even after a second;
//! - 40 messages to the `flush.messages=1` topic, each awaited before the
//!   next (so each is its own append): at least 40 syncs, done by the time
//!   each acknowledgement arrives;
//! - 10 messages to the `flush.ms=300` topic: at least one sync within 2 s,
//!   and none more once everything is synced.

mod common;

use std::time::{Duration, Instant};

use rdkafka::producer::FutureRecord;

use common::kafka::{create_topic_with_configs, future_producer, producer_config, watermarks};
use common::{metric_sum, scrape_metrics, with_timeout, Broker, BrokerOptions};

const SYNCS: &str = "ringbroker_log_syncfs_total";

async fn produce(bootstrap: &str, topic: &str, count: usize) {
    let mut config = producer_config(bootstrap);
    config.set("acks", "1").set("linger.ms", "0");
    let producer = future_producer(&config);
    for index in 0..count {
        let payload = format!("{topic}-{index}");
        producer
            .send(
                FutureRecord::<(), str>::to(topic).payload(&payload),
                Duration::from_secs(30),
            )
            .await
            .unwrap_or_else(|(e, _)| panic!("produce to {topic}: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_messages_and_flush_ms_sync_like_kafka() {
    let metrics_port = common::free_port();
    let broker = Broker::start(
        BrokerOptions::default()
            .arg("--metrics-listen", format!("127.0.0.1:{metrics_port}"))
            // Syncs are counted by the syncfs metric, whatever the shards.
            .arg("--log-sync", "syncfs")
            .arg("--log-flush-scheduler-interval-ms", 100)
            // Unset, log.flush.interval.ms (every topic's flush.ms default)
            // is the scheduler interval, as in Kafka: keep it at "never" so
            // only the topic that sets flush.ms is flushed by time.
            .arg("--log-flush-interval-ms", i64::MAX),
    );
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(120), async {
        create_topic_with_configs(&bootstrap, "plain", 1, &[]).await;
        create_topic_with_configs(&bootstrap, "every-message", 1, &[("flush.messages", "1")]).await;
        create_topic_with_configs(&bootstrap, "timed", 1, &[("flush.ms", "300")]).await;
        let syncs = || metric_sum(&scrape_metrics(metrics_port), SYNCS);

        let before = syncs();
        produce(&bootstrap, "plain", 100).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            syncs(),
            before,
            "acks=1 to a topic without flush configs synced"
        );

        let before = syncs();
        produce(&bootstrap, "every-message", 40).await;
        let after = syncs();
        assert!(
            after - before >= 40,
            "flush.messages=1: {} syncs for 40 appends",
            after - before
        );
        assert_eq!(watermarks(&bootstrap, "every-message", 0), (0, 40));

        let before = syncs();
        produce(&bootstrap, "timed", 10).await;
        let produced = Instant::now();
        let mut synced = syncs();
        while synced == before && produced.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            synced = syncs();
        }
        // Kafka counts flush.ms from the log's last flush (or its
        // creation, long enough ago here), so the sync may come at once.
        assert!(synced > before, "flush.ms=300: no sync within 2 s");
        // A sync may have come while the messages were still being sent;
        // the rest are synced within flush.ms plus a flusher interval.
        tokio::time::sleep(Duration::from_millis(800)).await;
        let settled = syncs();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(syncs(), settled, "flush.ms synced again with nothing new");
    })
    .await;
}
