//! Goal: a broker killed with SIGKILL in the middle of an acks=all stream
//! loses no acknowledged message, invents none, leaves no hole in the
//! offsets, and carries on appending after the last message it kept; also
//! with pre-allocated (zero-filled) segments, and with one fdatasync per
//! log instead of the shard's shared syncfs; and for acks=1 when answers
//! wait for the write (`--acks-wait-for-write`), or once the write delay
//! (`--write-delay-us`) has passed.
//!
//! Method: a producer task keeps sending to a 2-partition topic (acks=all,
//! or acks=1 with 4 KiB payloads; no retries, so a message can only be on
//! disk once) and records (partition,
//! offset, payload) of every acknowledgement. Once a few thousand are
//! acknowledged the broker is SIGKILLed while sends are still in flight
//! (a kill that lands after every earlier send was answered is followed by
//! a restart and another round, up to 3).
//! After a restart on the same directory and port, each partition is read
//! from 0 to its high watermark: offsets must run 0, 1, 2, ... without a gap,
//! every acknowledged payload must sit at its acknowledged offset and appear
//! nowhere else, and a new message must land exactly at the high watermark.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::message::Message;
use rdkafka::producer::{FutureRecord, Producer};

use common::kafka::{
    auto_create_topic, future_producer, producer_config, read_partitions, summarize_offsets,
    watermarks, READ_TIMEOUT,
};
use common::{with_timeout, Broker, BrokerOptions};

const TOPIC: &str = "kill-9";
const PARTITIONS: i32 = 2;
const ACKS_BEFORE_KILL: usize = 3_000;
/// Sends not yet acknowledged when the kill is sent, at least: a producer
/// slowed by a busy machine can fall to the broker's pace, and a kill
/// between its sends would then catch nothing in flight.
const IN_FLIGHT_AT_KILL: usize = 50;
/// Kills, each after a restart, until one lands while sends are unanswered.
const KILL_ROUNDS: usize = 3;

#[derive(Clone, Debug)]
struct Ack {
    partition: i32,
    offset: i64,
    payload: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_kill_9_during_acks_all_produce() {
    kill_9_mid_stream(BrokerOptions::default(), "all").await;
}

/// The same with segments zero-filled ahead of their tail: the kill leaves
/// zeros after the data, which recovery must cut without losing or
/// inventing a message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_kill_9_with_preallocated_segments() {
    kill_9_mid_stream(
        BrokerOptions::default().arg("--preallocate-bytes", 1 << 20),
        "all",
    )
    .await;
}

/// The same with one fdatasync per partition log instead of the shard's
/// shared syncfs (`--log-sync fdatasync`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_kill_9_with_fdatasync_per_log() {
    kill_9_mid_stream(
        BrokerOptions::default().arg("--log-sync", "fdatasync"),
        "all",
    )
    .await;
}

/// The same with a kernel thread polling each shard's submission queue
/// (`--sqpoll`): the broker submits its socket and file I/O without
/// `io_uring_enter` while that thread is awake, so this checks that every
/// write, sync and answer still goes out and nothing acknowledged is lost.
/// The poll thread must exist (`iou-sqp-*` among the broker's threads),
/// before and after the restart, and not without the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_kill_9_with_sqpoll() {
    let without = Broker::start(BrokerOptions::default());
    assert_eq!(
        sqpoll_threads(without.pid()),
        0,
        "a broker without --sqpoll has an SQPOLL thread"
    );
    drop(without);
    let mut options = BrokerOptions::default().arg("--sqpoll-idle-ms", 5);
    options.extra_args.push("--sqpoll".into());
    let broker = kill_9_mid_stream(options, "all").await;
    assert!(
        sqpoll_threads(broker.pid()) >= 1,
        "the restarted broker runs no SQPOLL thread; its log:\n{}",
        broker.log_contents()
    );
}

/// acks=1 with `--acks-wait-for-write`: the answer comes once the batch is
/// written to the device, so a killed broker process keeps every message it
/// acknowledged, as Kafka keeps what its page cache holds. (Without the
/// flag the answer follows the append into the write buffer, and this
/// test loses the acknowledged messages the kill caught unwritten.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_acks_1_messages_survive_kill_9_when_answers_wait_for_the_write() {
    let mut options = BrokerOptions::default();
    options.extra_args.push("--acks-wait-for-write".into());
    kill_9_mid_stream(options, "1").await;
}

/// acks=1 without `--acks-wait-for-write`: data nobody waits for stays in
/// the partition's write buffer up to `--write-delay-us` and is written
/// then without another produce to wake the writer. A broker killed once
/// the delay has passed keeps every acknowledged message. Method: 400
/// small acks=1 messages over 2 partitions, all acknowledged; wait 3x the
/// 300 ms delay with no traffic; kill -9, restart, and find each payload at
/// its acknowledged offset. (Killed a tenth of the delay after the last
/// acknowledgement instead, the broker lost all 400.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_1_messages_reach_the_disk_once_the_write_delay_passes() {
    const DELAY_MS: u64 = 300;
    let mut broker = Broker::start(
        BrokerOptions::default()
            .arg("--write-delay-us", DELAY_MS * 1000)
            .num_partitions(PARTITIONS as u32),
    );
    let bootstrap = broker.bootstrap();
    let topic = "write-delay";
    auto_create_topic(&bootstrap, topic, PARTITIONS);
    let mut config = producer_config(&bootstrap);
    config.set("acks", "1").set("linger.ms", "5");
    let producer = future_producer(&config);
    let mut deliveries = Vec::new();
    for index in 0..400 {
        let payload = format!("delayed-{index:04}");
        let record = FutureRecord::<(), str>::to(topic)
            .partition(index % PARTITIONS)
            .payload(&payload);
        let delivery = producer
            .send_result(record)
            .unwrap_or_else(|(error, _)| panic!("queue an acks=1 message: {error}"));
        deliveries.push((payload.clone(), delivery));
    }
    let mut acks = Vec::new();
    for (payload, delivery) in deliveries {
        let delivery = with_timeout(Duration::from_secs(30), delivery)
            .await
            .expect("delivery report")
            .unwrap_or_else(|(error, _)| panic!("acks=1 produce: {error}"));
        acks.push(Ack {
            partition: delivery.partition,
            offset: delivery.offset,
            payload,
        });
    }
    drop(producer);
    tokio::time::sleep(Duration::from_millis(3 * DELAY_MS)).await;
    broker.kill9();
    broker.restart();

    let mut ends = BTreeMap::new();
    for partition in 0..PARTITIONS {
        ends.insert(partition, watermarks(&bootstrap, topic, partition).1);
    }
    let received = read_partitions(&bootstrap, topic, &ends, READ_TIMEOUT);
    let missing: Vec<&Ack> = acks
        .iter()
        .filter(|ack| {
            !received[&ack.partition].iter().any(|message| {
                message.offset() == ack.offset && message.payload() == Some(ack.payload.as_bytes())
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged acks=1 messages lost by a kill {} ms after the last \
         (write delay {DELAY_MS} ms; high watermarks {ends:?}); first: {:?}",
        missing.len(),
        acks.len(),
        3 * DELAY_MS,
        missing.first()
    );
}

/// What one round of `produce_until_killed` saw.
struct Round {
    /// Every acknowledgement, including those that arrived after the kill.
    acks: Vec<Ack>,
    /// Sends made, numbered from the round's first index up to this.
    sent_until: usize,
    /// Sends numbered below this were made before the kill was sent.
    sent_before_kill: usize,
    /// Acknowledgements of sends made before the kill.
    acknowledged_before_kill: usize,
}

/// Sends numbered payloads from `first_index` on to `broker` with `acks`
/// until the broker, killed with SIGKILL once ACKS_BEFORE_KILL are
/// acknowledged and IN_FLIGHT_AT_KILL are unanswered, stops answering.
async fn produce_until_killed(
    broker: &mut Broker,
    acks: &str,
    padding: usize,
    first_index: usize,
) -> Round {
    let mut config = producer_config(&broker.bootstrap());
    config
        .set("acks", acks)
        .set("linger.ms", "1")
        // No retries: a resend after a lost acknowledgement would put the
        // message on disk twice, and no idempotence is there to stop it.
        .set("message.send.max.retries", "0")
        .set("message.timeout.ms", "5000")
        .set("reconnect.backoff.ms", "50");
    let producer = Arc::new(future_producer(&config));
    let acks: Arc<Mutex<Vec<Ack>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let sent_so_far = Arc::new(AtomicUsize::new(first_index));

    let producing = {
        let producer = Arc::clone(&producer);
        let acks = Arc::clone(&acks);
        let stop = Arc::clone(&stop);
        let sent_so_far = Arc::clone(&sent_so_far);
        tokio::spawn(async move {
            let mut waiting = Vec::new();
            let mut sent = first_index;
            while !stop.load(Ordering::Relaxed) {
                let partition = (sent % PARTITIONS as usize) as i32;
                let payload = format!("payload-{sent:08}{}", ".".repeat(padding));
                let record = FutureRecord::<(), str>::to(TOPIC)
                    .partition(partition)
                    .payload(&payload);
                match producer.send_result(record) {
                    Ok(delivery) => {
                        let acks = Arc::clone(&acks);
                        waiting.push(tokio::spawn(async move {
                            if let Ok(Ok(delivery)) = delivery.await {
                                acks.lock().expect("acks lock").push(Ack {
                                    partition: delivery.partition,
                                    offset: delivery.offset,
                                    payload,
                                });
                            }
                        }));
                        sent += 1;
                        sent_so_far.store(sent, Ordering::Relaxed);
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                }
                if sent % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            for task in waiting {
                task.await.expect("delivery task");
            }
            sent
        })
    };

    // The kill waits for librdkafka's own count of messages it has no
    // answer for, not for the acknowledgement tasks above, which a busy
    // machine can run late.
    let deadline = Instant::now() + Duration::from_secs(60);
    let sent_before_kill = loop {
        let acknowledged = acks.lock().expect("acks lock").len();
        let unanswered = usize::try_from(producer.in_flight_count()).unwrap_or(0);
        if acknowledged >= ACKS_BEFORE_KILL && unanswered >= IN_FLIGHT_AT_KILL {
            break sent_so_far.load(Ordering::Relaxed);
        }
        assert!(
            Instant::now() < deadline,
            "within 60 s: {acknowledged} acknowledgements, {unanswered} sends unanswered (the \
             kill waits for {ACKS_BEFORE_KILL}, and {IN_FLIGHT_AT_KILL} unanswered)"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    broker.kill9();
    stop.store(true, Ordering::Relaxed);
    let sent_until = with_timeout(Duration::from_secs(60), producing)
        .await
        .expect("producer task");
    drop(producer);
    let acks = acks.lock().expect("acks lock").clone();
    // Sends made after the kill can never be acknowledged, so only those
    // made before it show whether the kill caught the broker mid-stream.
    let acknowledged_before_kill = acks
        .iter()
        .filter(|ack| payload_index(&ack.payload) < sent_before_kill)
        .count();
    Round {
        acks,
        sent_until,
        sent_before_kill,
        acknowledged_before_kill,
    }
}

/// The send number a payload of `produce_until_killed` carries.
fn payload_index(payload: &str) -> usize {
    payload
        .strip_prefix("payload-")
        .and_then(|rest| rest.get(..8))
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("not a payload of this test: {payload:.40}"))
}

/// Threads of process `pid` that are io_uring SQPOLL threads.
fn sqpoll_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("list the broker's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("iou-sqp-"))
        .count()
}

/// Runs the kill -9 scenario against a broker started with `options`,
/// producing with `acks`; returns the restarted broker.
async fn kill_9_mid_stream(options: BrokerOptions, acks: &str) -> Broker {
    // acks=1 answers come before the write unless the broker waits for it:
    // payloads of 4 KiB keep writes in flight, so that appends queue behind
    // them and a kill catches acknowledged data not yet written.
    let padding = if acks == "1" { 4096 } else { 0 };
    let sqpoll = options.extra_args.iter().any(|arg| arg == "--sqpoll");
    let mut broker = Broker::start(options.num_partitions(PARTITIONS as u32));
    if sqpoll {
        assert!(
            sqpoll_threads(broker.pid()) >= 1,
            "a broker started with --sqpoll runs no SQPOLL thread; its log:\n{}",
            broker.log_contents()
        );
        // The start-up log shows each shard's poll thread and its CPUs.
        let log = broker.log_contents();
        assert!(
            log.contains("SQPOLL thread") && !log.contains("has no SQPOLL thread"),
            "the start-up log does not show the SQPOLL thread:\n{log}"
        );
    }
    let bootstrap = broker.bootstrap();
    auto_create_topic(&bootstrap, TOPIC, PARTITIONS);

    // A kill can land after the broker has answered every send made
    // before it (a busy machine can stall the producer for that long); such
    // a round proves nothing about data in flight, so the broker restarts
    // and the producer goes on, up to KILL_ROUNDS times.
    let mut acks_all = Vec::new();
    let mut first_index = 0;
    let mut landed = false;
    for round in 1..=KILL_ROUNDS {
        if round > 1 {
            broker.restart();
        }
        let result = produce_until_killed(&mut broker, acks, padding, first_index).await;
        eprintln!(
            "round {round}: sends {}..{}, {} made before the kill, of which {} acknowledged; \
             {} acknowledged in all",
            first_index,
            result.sent_until,
            result.sent_before_kill - first_index,
            result.acknowledged_before_kill,
            result.acks.len()
        );
        landed = result.acknowledged_before_kill < result.sent_before_kill - first_index;
        first_index = result.sent_until;
        acks_all.extend(result.acks);
        if landed {
            break;
        }
    }
    assert!(
        landed,
        "in {KILL_ROUNDS} rounds every send made before the kill was acknowledged: no kill \
         landed mid-stream"
    );
    let acks = acks_all;

    broker.restart();

    let mut ends = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let (low, high) = watermarks(&bootstrap, TOPIC, partition);
        assert_eq!(
            low, 0,
            "partition {partition}: log start offset after restart"
        );
        ends.insert(partition, high);
    }
    let received = read_partitions(&bootstrap, TOPIC, &ends, READ_TIMEOUT);

    let mut problems = Vec::new();
    for partition in 0..PARTITIONS {
        let messages = &received[&partition];
        let offsets: Vec<i64> = messages.iter().map(Message::offset).collect();
        let wanted: Vec<i64> = (0..ends[&partition]).collect();
        if offsets != wanted {
            problems.push(format!(
                "partition {partition}: offsets {} are not 0..{} without holes",
                summarize_offsets(&offsets),
                ends[&partition]
            ));
        }
        let mut payload_offsets: HashMap<&[u8], Vec<i64>> = HashMap::new();
        for message in messages {
            if let Some(payload) = message.payload() {
                payload_offsets
                    .entry(payload)
                    .or_default()
                    .push(message.offset());
            }
        }
        let by_offset: HashMap<i64, Option<&[u8]>> = messages
            .iter()
            .map(|message| (message.offset(), message.payload()))
            .collect();
        for ack in acks.iter().filter(|ack| ack.partition == partition) {
            match by_offset.get(&ack.offset) {
                Some(Some(payload)) if *payload == ack.payload.as_bytes() => {}
                Some(found) => problems.push(format!(
                    "partition {partition} offset {}: acknowledged {:?}, found {:?}",
                    ack.offset,
                    ack.payload,
                    found.map(String::from_utf8_lossy)
                )),
                None => problems.push(format!(
                    "partition {partition} offset {}: acknowledged {:?} is missing \
                     (high watermark {})",
                    ack.offset, ack.payload, ends[&partition]
                )),
            }
            let copies = payload_offsets
                .get(ack.payload.as_bytes())
                .map_or(0, Vec::len);
            if copies > 1 {
                problems.push(format!(
                    "partition {partition}: {:?} present {copies} times at offsets {:?}",
                    ack.payload,
                    payload_offsets[ack.payload.as_bytes()]
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems after kill -9 and restart; first ones:\n  {}",
        problems.len(),
        problems
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );

    // Appending continues right after the last message the broker kept.
    let producer = future_producer(&producer_config(&bootstrap));
    for partition in 0..PARTITIONS {
        let delivery = producer
            .send(
                FutureRecord::<(), str>::to(TOPIC)
                    .partition(partition)
                    .payload("after restart"),
                Duration::from_secs(10),
            )
            .await
            .unwrap_or_else(|(error, _)| panic!("produce after restart: {error}"));
        assert_eq!(
            delivery.offset, ends[&partition],
            "partition {partition}: first offset after restart"
        );
    }
    broker
}
