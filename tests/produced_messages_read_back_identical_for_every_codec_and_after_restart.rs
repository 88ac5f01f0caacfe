//! Goal: what an acks=all producer had acknowledged reads back bit for bit
//! (key, value, headers, CreateTime timestamp, offset) with every compression
//! codec, and again after a clean restart.
//!
//! Method: one broker, auto-created 4-partition topics. 100k uncompressed
//! messages through a FutureProducer (linger 5 ms, so requests carry many
//! batches), then 5k per codec on a topic each. Every acknowledgement's
//! offset is recorded; a consumer with `assign()` from offset 0 reads every
//! partition to its end and each message is compared with the one
//! acknowledged at that offset. Then SIGTERM (exit 0, clean shutdown marker
//! left), restart on the same directory and port, and read everything again:
//! from the segment files now (the in-memory tail starts empty), by splice
//! (the default cold read path, its pipe -> socket half a splice(2) call),
//! again after a restart with `--splice-to-socket io-uring` (that half an
//! io_uring splice), then once more after a restart with
//! `--cold-read-path dma`.

mod common;

use std::time::Duration;

use common::kafka::{
    assert_read_back_matches, auto_create_topic, end_offsets, future_producer, produce_all,
    producer_config, read_partitions, test_messages, watermarks, AckedMessage, READ_TIMEOUT,
};
use common::{with_timeout, Broker, BrokerOptions, CLEAN_SHUTDOWN_MARKER};

const PARTITIONS: i32 = 4;
const MAIN_MESSAGES: u64 = 100_000;
const CODEC_MESSAGES: u64 = 5_000;
const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

fn read_back_and_compare(broker: &Broker, topic: &str, acked: &[AckedMessage], when: &str) {
    let ends = end_offsets(acked);
    let received = read_partitions(&broker.bootstrap(), topic, &ends, READ_TIMEOUT);
    assert_read_back_matches(&format!("{topic} {when}"), acked, &received);
    for (&partition, &end) in &ends {
        assert_eq!(
            watermarks(&broker.bootstrap(), topic, partition),
            (0, end),
            "{topic}/{partition} {when}: (log start, high watermark)"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produced_messages_read_back_identical_for_every_codec_and_after_restart() {
    let mut broker = Broker::start(BrokerOptions::default().num_partitions(PARTITIONS as u32));
    let bootstrap = broker.bootstrap();
    let mut topics: Vec<(String, Vec<AckedMessage>)> = Vec::new();

    with_timeout(Duration::from_secs(240), async {
        let topic = "round-trip-main".to_string();
        auto_create_topic(&bootstrap, &topic, PARTITIONS);
        let producer = future_producer(&producer_config(&bootstrap));
        let acked = produce_all(&producer, &topic, &test_messages(MAIN_MESSAGES, PARTITIONS)).await;
        read_back_and_compare(&broker, &topic, &acked, "before restart");
        topics.push((topic, acked));

        for codec in CODECS {
            let topic = format!("round-trip-{codec}");
            auto_create_topic(&bootstrap, &topic, PARTITIONS);
            let mut config = producer_config(&bootstrap);
            config.set("compression.codec", codec);
            let producer = future_producer(&config);
            let acked = produce_all(
                &producer,
                &topic,
                &test_messages(CODEC_MESSAGES, PARTITIONS),
            )
            .await;
            read_back_and_compare(&broker, &topic, &acked, "before restart");
            topics.push((topic, acked));
        }
    })
    .await;

    broker.terminate();
    assert!(
        broker.data_dir().join(CLEAN_SHUTDOWN_MARKER).exists(),
        "no {CLEAN_SHUTDOWN_MARKER} after a clean shutdown"
    );
    broker.restart();

    for (topic, acked) in &topics {
        read_back_and_compare(&broker, topic, acked, "after SIGTERM and restart");
    }
    broker.restart_with_arg("--splice-to-socket", "io-uring");
    for (topic, acked) in &topics {
        read_back_and_compare(
            &broker,
            topic,
            acked,
            "after a restart with io_uring splices",
        );
    }
    broker.restart_with_arg("--cold-read-path", "dma");
    for (topic, acked) in &topics {
        read_back_and_compare(&broker, topic, acked, "after a restart with DMA reads");
    }
}
