//! The load generator: one pinned glommio executor per chosen CPU, each
//! running producer and consumer connections as tasks. Producers send
//! pre-encoded requests with a bounded window of requests in flight;
//! consumers fetch in a loop, one fetch in flight. Only counters shared for
//! the progress line cross threads (atomics); histograms stay on their
//! executor and are merged at the end.
//!
//! Sketch of what the client costs: a send is a 4-byte patch and one write
//! syscall per request (in end-to-end mode also a CRC32C over the request's
//! batches, ~1 us per 16 KiB); a consumed batch is a header parse. At 1 GB/s
//! of 16 KiB batches that is ~60k requests/s, well under one core, so the
//! broker, not this client, should be what saturates.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use glommio::{LocalExecutorBuilder, Placement};
use hdrhistogram::Histogram;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::args::{LoadPlan, Mode, StartFrom};
use super::batches::{batch_send_time_us, build_produce_frames, BatchSpec, ProduceFrame, Rng};
use super::report::{new_latency_histogram, record_latency};
use super::wire::{
    decode_response, encode_frame, frame_size, prepare_topic, ControlClient, TopicLayout,
    FETCH_VERSION, PRODUCE_VERSION,
};
use crate::protocol::record_batch::BatchIter;

/// Most bytes of pre-encoded requests one run may hold in memory.
const PREENCODED_BYTES_MAX: usize = 1 << 30;
/// How long end-to-end consumers wait for the last produced records.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(15);
/// Registered io_uring memory per bench executor (network only; no DMA).
const BENCH_IO_MEMORY_BYTES: usize = 512 * 1024;

/// Counters shared with the progress line.
#[derive(Debug, Default)]
pub struct Counters {
    /// Acknowledged (or, with acks=0, sent) records.
    pub produced_messages: AtomicU64,
    /// Their batch bytes.
    pub produced_wire_bytes: AtomicU64,
    /// Consumed records.
    pub consumed_messages: AtomicU64,
    /// Their batch bytes.
    pub consumed_wire_bytes: AtomicU64,
    /// Producer connections still running.
    pub producers_running: AtomicUsize,
    /// Set on the first failure: everyone stops.
    pub abort: AtomicBool,
}

/// What one connection measured.
#[derive(Debug)]
pub struct ConnOutcome {
    /// Produce latency (producers).
    pub produce_latency: Histogram<u64>,
    /// End-to-end latency (consumers in end-to-end mode).
    pub e2e_latency: Histogram<u64>,
    /// Records produced and acknowledged.
    pub produced_messages: u64,
    /// Value bytes produced.
    pub produced_payload_bytes: u64,
    /// Batch bytes produced.
    pub produced_wire_bytes: u64,
    /// Produce requests answered.
    pub produce_requests: u64,
    /// Records consumed.
    pub consumed_messages: u64,
    /// Batch bytes consumed.
    pub consumed_wire_bytes: u64,
    /// Fetches made.
    pub fetches: u64,
    /// When its first request went out.
    pub started: Option<Instant>,
    /// When its last answer came in.
    pub finished: Option<Instant>,
    /// Why it stopped early.
    pub error: Option<String>,
}

impl ConnOutcome {
    fn new() -> Self {
        ConnOutcome {
            produce_latency: new_latency_histogram(),
            e2e_latency: new_latency_histogram(),
            produced_messages: 0,
            produced_payload_bytes: 0,
            produced_wire_bytes: 0,
            produce_requests: 0,
            consumed_messages: 0,
            consumed_wire_bytes: 0,
            fetches: 0,
            started: None,
            finished: None,
            error: None,
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: ConnOutcome) {
        let _ = self.produce_latency.add(&other.produce_latency);
        let _ = self.e2e_latency.add(&other.e2e_latency);
        self.produced_messages += other.produced_messages;
        self.produced_payload_bytes += other.produced_payload_bytes;
        self.produced_wire_bytes += other.produced_wire_bytes;
        self.produce_requests += other.produce_requests;
        self.consumed_messages += other.consumed_messages;
        self.consumed_wire_bytes += other.consumed_wire_bytes;
        self.fetches += other.fetches;
        self.started = match (self.started, other.started) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.finished = match (self.finished, other.finished) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if self.error.is_none() {
            self.error = other.error;
        }
    }
}

/// Work of one producer connection.
struct ProducerJob {
    address: String,
    frames: Vec<ProduceFrame>,
    /// Records this connection sends in count mode.
    message_budget: Option<u64>,
}

/// Work of one consumer connection.
struct ConsumerJob {
    address: String,
    /// Partition -> next offset.
    offsets: BTreeMap<i32, i64>,
}

enum Job {
    Produce(ProducerJob),
    Consume(ConsumerJob),
}

/// Run-wide settings every task reads.
#[derive(Debug, Clone)]
struct Settings {
    mode: Mode,
    topic: String,
    deadline: Option<Instant>,
    count: Option<u64>,
    max_in_flight: usize,
    linger: Duration,
    /// Payload bytes per second of each producer connection (None: no pacing).
    rate_bytes_per_sec: Option<f64>,
    acks: i16,
    uncompressed: bool,
    fetch_partition_max_bytes: i32,
    fetch_max_wait_ms: i32,
}

fn now_unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Partitions of `partitions` taken by client `index` of `clients`: round
/// robin; with more clients than partitions, client i takes partition
/// i mod partitions.
pub fn assign(partitions: &[i32], clients: usize, index: usize) -> Vec<i32> {
    if partitions.is_empty() || clients == 0 {
        return Vec::new();
    }
    if clients >= partitions.len() {
        return vec![partitions[index % partitions.len()]];
    }
    partitions
        .iter()
        .enumerate()
        .filter(|(i, _)| i % clients == index)
        .map(|(_, &p)| p)
        .collect()
}

fn group_by_leader(layout: &TopicLayout, partitions: &[i32]) -> BTreeMap<String, Vec<i32>> {
    let mut groups: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for p in partitions {
        if let Some(address) = layout.leaders.get(p) {
            groups.entry(address.clone()).or_default().push(*p);
        }
    }
    groups
}

/// Runs the load described by `plan` and returns what the connections
/// measured, merged, and the run's elapsed time.
///
/// # Errors
/// Set-up failures (topic, offsets, executors); failures of connections are
/// reported in the outcome's `error`.
pub fn run_load(
    plan: &LoadPlan,
    counters: &Arc<Counters>,
) -> anyhow::Result<(ConnOutcome, Duration)> {
    let args = &plan.args;
    let layout = prepare_topic(&args.bootstrap, &args.topic, args.partitions)?;
    let partitions = layout.partitions();
    let mut jobs: Vec<Job> = Vec::new();
    let spec = BatchSpec {
        messages: plan.messages_per_batch,
        message_bytes: args.message_bytes,
        keys: args.key_distribution,
        key_count: args.key_count,
        compression: args.compression,
    };
    if plan.mode.consumes() {
        let timestamp = match plan.from {
            StartFrom::Earliest => -2,
            StartFrom::Latest => -1,
        };
        for index in 0..args.consumers as usize {
            let mine = assign(&partitions, args.consumers as usize, index);
            for (address, group) in group_by_leader(&layout, &mine) {
                let offsets = ControlClient::connect(&address)?
                    .list_offsets(&args.topic, &group, timestamp)
                    .with_context(|| format!("start offsets from {address}"))?;
                jobs.push(Job::Consume(ConsumerJob { address, offsets }));
            }
        }
    }
    if plan.mode.produces() {
        let mut rng = Rng::new(args.seed);
        let mut preencoded = 0usize;
        let producer_jobs_start = jobs.len();
        for index in 0..args.producers as usize {
            let mine = assign(&partitions, args.producers as usize, index);
            for (address, group) in group_by_leader(&layout, &mine) {
                let frames = build_produce_frames(
                    &args.topic,
                    &group,
                    args.acks,
                    &spec,
                    args.request_bytes_max as usize,
                    &mut rng,
                    now_unix_us() / 1000,
                )?;
                preencoded += frames.iter().map(|f| f.frame.len()).sum::<usize>();
                if preencoded > PREENCODED_BYTES_MAX {
                    bail!(
                        "pre-encoded requests would exceed {PREENCODED_BYTES_MAX} bytes; lower --partitions, --producers or --batch-bytes"
                    );
                }
                jobs.push(Job::Produce(ProducerJob {
                    address,
                    frames,
                    message_budget: None,
                }));
            }
        }
        let producer_jobs = jobs.len() - producer_jobs_start;
        if let Some(count) = args.count {
            let share = count.div_ceil(producer_jobs as u64);
            for job in &mut jobs[producer_jobs_start..] {
                if let Job::Produce(p) = job {
                    p.message_budget = Some(share);
                }
            }
        }
        counters
            .producers_running
            .store(producer_jobs, Ordering::SeqCst);
    }

    let producer_connections = jobs
        .iter()
        .filter(|job| matches!(job, Job::Produce(_)))
        .count();
    let nr_workers = plan.cpus.len().min(jobs.len()).max(1);
    let mut per_worker: Vec<Vec<Job>> = (0..nr_workers).map(|_| Vec::new()).collect();
    for (index, job) in jobs.into_iter().enumerate() {
        per_worker[index % nr_workers].push(job);
    }
    raise_memlock();
    let ready = Arc::new(AtomicUsize::new(0));
    let go = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    let settings_template = Settings {
        mode: plan.mode,
        topic: args.topic.clone(),
        deadline: None,
        count: args.count,
        max_in_flight: args.max_in_flight as usize,
        linger: Duration::from_millis(args.linger_ms),
        rate_bytes_per_sec: (args.rate_mb_per_sec > 0.0 && producer_connections > 0)
            .then(|| args.rate_mb_per_sec * 1e6 / producer_connections as f64),
        acks: args.acks,
        uncompressed: args.compression == super::args::CompressionArg::None,
        fetch_partition_max_bytes: args.fetch_partition_max_bytes as i32,
        fetch_max_wait_ms: args.fetch_max_wait_ms as i32,
    };
    let start_cell = Arc::new(std::sync::Mutex::new(None::<Instant>));
    for (worker, jobs) in per_worker.into_iter().enumerate() {
        let cpu = plan.cpus[worker];
        let counters = counters.clone();
        let ready = ready.clone();
        let go = go.clone();
        let settings = settings_template.clone();
        let start_cell = start_cell.clone();
        let duration = plan.duration_secs.map(Duration::from_secs);
        let handle = LocalExecutorBuilder::new(Placement::Fixed(cpu))
            .name(&format!("bench-{worker}"))
            .io_memory(BENCH_IO_MEMORY_BYTES)
            .spawn(move || async move {
                ready.fetch_add(1, Ordering::SeqCst);
                while !go.load(Ordering::SeqCst) {
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }
                let start = start_cell
                    .lock()
                    .map(|s| s.unwrap_or_else(Instant::now))
                    .unwrap_or_else(|_| Instant::now());
                let settings = Settings {
                    deadline: duration.map(|d| start + d),
                    ..settings
                };
                let mut tasks = Vec::new();
                for job in jobs {
                    let counters = counters.clone();
                    let settings = settings.clone();
                    tasks.push(glommio::spawn_local(async move {
                        let mut outcome = ConnOutcome::new();
                        let result = match job {
                            Job::Produce(job) => {
                                let r = produce(job, &settings, &counters, &mut outcome).await;
                                counters.producers_running.fetch_sub(1, Ordering::SeqCst);
                                r
                            }
                            Job::Consume(job) => {
                                consume(job, &settings, &counters, &mut outcome).await
                            }
                        };
                        if let Err(e) = result {
                            outcome.error = Some(format!("{e:#}"));
                            counters.abort.store(true, Ordering::SeqCst);
                        }
                        outcome
                    }));
                }
                let mut merged = ConnOutcome::new();
                for task in tasks {
                    merged.merge(task.await);
                }
                merged
            })
            .map_err(|e| anyhow::anyhow!("cannot start a bench executor on CPU {cpu}: {e}"))?;
        handles.push(handle);
    }
    while ready.load(Ordering::SeqCst) < handles.len() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    if let Ok(mut cell) = start_cell.lock() {
        *cell = Some(start);
    }
    go.store(true, Ordering::SeqCst);
    let mut total = ConnOutcome::new();
    for handle in handles {
        match handle.join() {
            Ok(outcome) => total.merge(outcome),
            Err(e) => {
                total
                    .error
                    .get_or_insert_with(|| format!("a bench executor failed: {e}"));
            }
        }
    }
    let elapsed = match (total.started, total.finished) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => start.elapsed(),
    };
    Ok((total, elapsed))
}

/// Raises RLIMIT_MEMLOCK to the hard limit (io_uring rings and buffers).
fn raise_memlock() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_MEMLOCK) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_MEMLOCK, hard, hard);
        }
    }
}

async fn connect(address: &str) -> anyhow::Result<TcpStream> {
    let stream = TcpStream::connect(address)
        .await
        .map_err(|e| anyhow::anyhow!("cannot connect to {address}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| anyhow::anyhow!("TCP_NODELAY on {address}: {e}"))?;
    Ok(stream)
}

/// Frame buffers a client thread keeps for reuse.
const FRAME_BUFS_KEPT: usize = 8;

thread_local! {
    static FRAME_BUFS: std::cell::RefCell<Vec<Vec<u8>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The memory of one frame read by [`read_frame`]: given back to its
/// thread's pool when the last `Bytes` of it goes. A fetch answer of several
/// MiB allocated and zeroed per read cost the consumer a `memset` (11 % of
/// its samples) and the page faults of fresh memory (25 %) per fetch on
/// dev-2vcpu-epyc, beside the kernel's copy (23 %), which is all that is left.
struct PooledFrame {
    buf: Vec<u8>,
    len: usize,
}

impl AsRef<[u8]> for PooledFrame {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for PooledFrame {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        let _ = FRAME_BUFS.try_with(|bufs| {
            let mut bufs = bufs.borrow_mut();
            if bufs.len() < FRAME_BUFS_KEPT {
                bufs.push(buf);
            }
        });
    }
}

async fn read_frame(stream: &mut (impl futures_lite::AsyncRead + Unpin)) -> anyhow::Result<Bytes> {
    let mut prefix = [0u8; 4];
    stream
        .read_exact(&mut prefix)
        .await
        .context("reading a response")?;
    let len = frame_size(prefix)?;
    let mut buf = FRAME_BUFS
        .try_with(|bufs| bufs.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default();
    if buf.len() < len {
        // Zeroes only the growth: what a reused buffer holds is overwritten.
        buf.resize(len, 0);
    }
    stream
        .read_exact(&mut buf[..len])
        .await
        .context("reading a response")?;
    Ok(Bytes::from_owner(PooledFrame { buf, len }))
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// One producer connection: keeps up to `max_in_flight` requests in flight,
/// cycling over its pre-encoded requests, until the deadline or its budget.
/// Requests leave from one future and answers are read by another, so a
/// paced producer sends each request on its schedule even while it waits
/// for earlier answers (as a Kafka client does, up to its in-flight limit).
async fn produce(
    mut job: ProducerJob,
    settings: &Settings,
    counters: &Counters,
    outcome: &mut ConnOutcome,
) -> anyhow::Result<()> {
    let stream = connect(&job.address).await?;
    let address = job.address.clone();
    let (mut reader, mut writer) = futures_lite::io::split(stream);
    let started = Instant::now();
    outcome.started = Some(started);
    let outcome = std::cell::RefCell::new(outcome);
    // Free places in the window; the answer reader gives them back.
    let window = glommio::sync::Semaphore::new(settings.max_in_flight as u64);
    // (correlation id, what the request carries, sent at) of each request
    // awaiting its answer.
    let (sent, answers_due) =
        glommio::channels::local_channel::new_bounded::<(i32, Carried, Instant)>(
            settings.max_in_flight.max(1),
        );
    let frames = &mut job.frames;
    let send = async {
        let mut correlation_id = 0i32;
        let mut next_frame = 0usize;
        let mut sent_messages = 0u64;
        let mut next_send_at = Instant::now();
        let frames_count = frames.len();
        let mut scheduled_payload_bytes = 0f64;
        while !past(settings.deadline)
            && !counters.abort.load(Ordering::Relaxed)
            && job.message_budget.map_or(true, |b| sent_messages < b)
        {
            if settings.acks != 0 {
                window
                    .acquire(1)
                    .await
                    .map_err(|e| anyhow::anyhow!("producer window: {e}"))?;
            }
            if !settings.linger.is_zero() {
                let now = Instant::now();
                if next_send_at > now {
                    glommio::timer::sleep(next_send_at - now).await;
                }
                next_send_at = Instant::now() + settings.linger;
            }
            // Open loop: this request's slot on the schedule; latency counts
            // from it even when the window made the request leave late.
            let mut scheduled_at = None;
            if let Some(rate) = settings.rate_bytes_per_sec {
                let due = started + Duration::from_secs_f64(scheduled_payload_bytes / rate);
                let now = Instant::now();
                if due > now {
                    glommio::timer::sleep(due - now).await;
                }
                scheduled_payload_bytes += frames[next_frame].payload_bytes as f64;
                scheduled_at = Some(due);
            }
            if past(settings.deadline) || counters.abort.load(Ordering::Relaxed) {
                break;
            }
            let index = next_frame;
            next_frame = (next_frame + 1) % frames_count;
            correlation_id = correlation_id.wrapping_add(1);
            let frame = &mut frames[index];
            frame.set_correlation_id(correlation_id);
            if settings.mode == Mode::EndToEnd {
                frame.stamp(now_unix_us());
            }
            sent_messages += frame.messages;
            let sent_at = scheduled_at.unwrap_or_else(Instant::now);
            writer
                .write_all(&frame.frame)
                .await
                .with_context(|| format!("sending a produce request to {address}"))?;
            let carried = Carried::of(frame);
            if settings.acks == 0 {
                carried.account(counters, &mut outcome.borrow_mut());
            } else {
                sent.send((correlation_id, carried, sent_at))
                    .await
                    .map_err(|_| anyhow::anyhow!("the answer reader of {address} stopped"))?;
            }
        }
        writer.flush().await.ok();
        drop(sent); // the reader ends after the last answer
        anyhow::Ok(())
    };
    let receive = async {
        while let Some((expected, carried, sent_at)) = answers_due.recv().await {
            let payload = read_frame(&mut reader)
                .await
                .with_context(|| format!("produce answer from {address}"))?;
            let response: ProduceResponse = decode_response(payload, PRODUCE_VERSION, expected)?;
            for topic in &response.responses {
                for p in &topic.partition_responses {
                    if p.error_code != 0 {
                        bail!(
                            "produce to {}/{} failed with error code {}",
                            settings.topic,
                            p.index,
                            p.error_code
                        );
                    }
                }
            }
            let latency = sent_at.elapsed();
            let mut outcome = outcome.borrow_mut();
            record_latency(&mut outcome.produce_latency, latency.as_micros() as i64, 1);
            outcome.produce_requests += 1;
            carried.account(counters, &mut outcome);
            drop(outcome);
            window.signal(1);
        }
        anyhow::Ok(())
    };
    futures::future::try_join(send, receive).await?;
    outcome.borrow_mut().finished = Some(Instant::now());
    Ok(())
}

/// What one produce request carries, counted once it is acknowledged.
#[derive(Debug, Clone, Copy)]
struct Carried {
    messages: u64,
    payload_bytes: u64,
    wire_bytes: u64,
}

impl Carried {
    fn of(frame: &ProduceFrame) -> Carried {
        Carried {
            messages: frame.messages,
            payload_bytes: frame.payload_bytes,
            wire_bytes: frame.batches.iter().map(|b| b.1 as u64).sum(),
        }
    }

    fn account(self, counters: &Counters, outcome: &mut ConnOutcome) {
        outcome.produced_messages += self.messages;
        outcome.produced_payload_bytes += self.payload_bytes;
        outcome.produced_wire_bytes += self.wire_bytes;
        counters
            .produced_messages
            .fetch_add(self.messages, Ordering::Relaxed);
        counters
            .produced_wire_bytes
            .fetch_add(self.wire_bytes, Ordering::Relaxed);
    }
}

fn consumer_should_stop(
    settings: &Settings,
    counters: &Counters,
    drain_since: &mut Option<Instant>,
) -> bool {
    if counters.abort.load(Ordering::Relaxed) {
        return true;
    }
    let consumed = counters.consumed_messages.load(Ordering::Relaxed);
    match settings.mode {
        Mode::EndToEnd => {
            if counters.producers_running.load(Ordering::SeqCst) > 0 {
                return false;
            }
            if consumed >= counters.produced_messages.load(Ordering::SeqCst) {
                return true;
            }
            let since = drain_since.get_or_insert_with(Instant::now);
            since.elapsed() > DRAIN_TIMEOUT
        }
        _ => {
            if let Some(count) = settings.count {
                return consumed >= count;
            }
            past(settings.deadline)
        }
    }
}

/// One consumer connection: fetches its partitions from their offsets until
/// the run ends, counting records (and, end-to-end, their latency).
async fn consume(
    mut job: ConsumerJob,
    settings: &Settings,
    counters: &Counters,
    outcome: &mut ConnOutcome,
) -> anyhow::Result<()> {
    let mut stream = connect(&job.address).await?;
    let topic = TopicName(StrBytes::from_string(settings.topic.clone()));
    let max_bytes = (settings.fetch_partition_max_bytes as i64 * job.offsets.len() as i64)
        .min(64 * 1024 * 1024) as i32;
    let mut correlation_id = 0i32;
    let mut drain_since = None;
    outcome.started = Some(Instant::now());
    while !consumer_should_stop(settings, counters, &mut drain_since) {
        correlation_id = correlation_id.wrapping_add(1);
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(settings.fetch_max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(max_bytes)
            .with_isolation_level(0)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic.clone())
                .with_partitions(
                    job.offsets
                        .iter()
                        .map(|(&p, &offset)| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_current_leader_epoch(-1)
                                .with_fetch_offset(offset)
                                .with_log_start_offset(-1)
                                .with_partition_max_bytes(settings.fetch_partition_max_bytes)
                        })
                        .collect(),
                )]);
        let frame = encode_frame(ApiKey::Fetch, FETCH_VERSION, correlation_id, &request)?;
        stream
            .write_all(&frame)
            .await
            .with_context(|| format!("sending a fetch to {}", job.address))?;
        let payload = read_frame(&mut stream)
            .await
            .with_context(|| format!("fetch answer from {}", job.address))?;
        let response: FetchResponse = decode_response(payload, FETCH_VERSION, correlation_id)?;
        outcome.fetches += 1;
        if response.error_code != 0 {
            bail!("fetch failed with error code {}", response.error_code);
        }
        let received_us = now_unix_us();
        let mut fetched = 0u64;
        for topic_response in &response.responses {
            for p in &topic_response.partitions {
                if p.error_code != 0 {
                    bail!(
                        "fetch from {}/{} failed with error code {}",
                        settings.topic,
                        p.partition_index,
                        p.error_code
                    );
                }
                let Some(offset) = job.offsets.get_mut(&p.partition_index) else {
                    continue;
                };
                let Some(records) = &p.records else { continue };
                let mut messages = 0u64;
                let mut wire = 0u64;
                let mut batches = BatchIter::new(records, false);
                for (at, header) in &mut batches {
                    let last = header.last_offset();
                    if last < *offset {
                        continue;
                    }
                    let count = (last - header.base_offset.max(*offset) + 1) as u64;
                    messages += count;
                    wire += header.total_bytes() as u64;
                    if settings.mode == Mode::EndToEnd {
                        let bytes = &records[at..at + header.total_bytes()];
                        if let Some(sent_us) = batch_send_time_us(
                            bytes,
                            settings.uncompressed && header.compression() == 0,
                        ) {
                            record_latency(&mut outcome.e2e_latency, received_us - sent_us, count);
                        }
                    }
                    *offset = last + 1;
                }
                fetched += messages;
                outcome.consumed_messages += messages;
                outcome.consumed_wire_bytes += wire;
                counters
                    .consumed_messages
                    .fetch_add(messages, Ordering::Relaxed);
                counters
                    .consumed_wire_bytes
                    .fetch_add(wire, Ordering::Relaxed);
            }
        }
        if fetched > 0 {
            outcome.finished = Some(Instant::now());
        }
    }
    if outcome.finished.is_none() {
        outcome.finished = Some(Instant::now());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: frames read into reused memory hold exactly their own bytes.
    /// Method: read a long frame, drop it (its memory goes back to the
    /// pool), read a shorter one into that memory, then a longer one while
    /// the second is still held; the pool never keeps more than its bound.
    #[test]
    fn frames_read_into_reused_memory_hold_only_their_own_bytes() {
        fn frame(fill: u8, len: usize) -> Vec<u8> {
            let mut bytes = (len as i32).to_be_bytes().to_vec();
            bytes.extend(std::iter::repeat(fill).take(len));
            bytes
        }
        let mut wire = frame(1, 300);
        wire.extend(frame(2, 8));
        wire.extend(frame(3, 500));
        let mut stream = futures_lite::io::Cursor::new(wire);
        futures_lite::future::block_on(async {
            let first = read_frame(&mut stream).await.unwrap();
            assert_eq!(&first[..], &[1u8; 300][..]);
            drop(first);
            let second = read_frame(&mut stream).await.unwrap();
            assert_eq!(&second[..], &[2u8; 8][..]);
            let third = read_frame(&mut stream).await.unwrap();
            assert_eq!(&third[..], &[3u8; 500][..]);
            assert_eq!(&second[..], &[2u8; 8][..], "a later read left it alone");
            assert!(read_frame(&mut stream).await.is_err(), "no fourth frame");
        });
        let held: Vec<Bytes> = (0..FRAME_BUFS_KEPT + 3)
            .map(|_| {
                Bytes::from_owner(PooledFrame {
                    buf: vec![0; 4],
                    len: 4,
                })
            })
            .collect();
        drop(held);
        assert_eq!(FRAME_BUFS.with(|bufs| bufs.borrow().len()), FRAME_BUFS_KEPT);
    }

    #[test]
    fn partitions_are_assigned_round_robin_and_shared_when_clients_outnumber_them() {
        let parts: Vec<i32> = (0..5).collect();
        assert_eq!(assign(&parts, 2, 0), vec![0, 2, 4]);
        assert_eq!(assign(&parts, 2, 1), vec![1, 3]);
        assert_eq!(assign(&parts, 7, 6), vec![1]);
        assert_eq!(assign(&[], 2, 0), Vec::<i32>::new());
        let all: Vec<i32> = (0..3).flat_map(|i| assign(&parts, 3, i)).collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, parts);
    }

    /// Goal: a paced producer sends each request on its schedule while it
    /// waits for earlier answers (up to its window), as Kafka clients do;
    /// it used to stop sending until the oldest answer came, so a slow
    /// broker saw fewer, later requests and the latency was measured on a
    /// load it never received.
    #[test]
    fn a_paced_producer_keeps_its_schedule_while_answers_are_slow() {
        use kafka_protocol::messages::ProduceResponse;
        use kafka_protocol::protocol::Encodable;
        // Long enough against the pace that scheduling noise on a loaded
        // machine (tens of ms) cannot pass for waiting on answers.
        const ANSWER_DELAY: Duration = Duration::from_millis(200);
        let executor = LocalExecutorBuilder::default().make().expect("executor");
        executor.run(async {
            let listener = glommio::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap().to_string();
            // A broker that answers every Produce request 200 ms after it
            // arrives, in order; it notes when each request arrived.
            let arrivals = std::rc::Rc::new(std::cell::RefCell::new(Vec::<Instant>::new()));
            let server = glommio::spawn_local({
                let arrivals = arrivals.clone();
                async move {
                    let stream = listener.accept().await.unwrap();
                    let (mut reader, mut writer) = futures_lite::io::split(stream);
                    let (queue, due) =
                        glommio::channels::local_channel::new_unbounded::<([u8; 4], Instant)>();
                    let answer = glommio::spawn_local(async move {
                        while let Some((correlation_id, arrived)) = due.recv().await {
                            let at: Instant = arrived + ANSWER_DELAY;
                            if at > Instant::now() {
                                glommio::timer::sleep(at - Instant::now()).await;
                            }
                            let mut body = bytes::BytesMut::new();
                            ProduceResponse::default()
                                .encode(&mut body, PRODUCE_VERSION)
                                .unwrap();
                            let mut frame = Vec::new();
                            frame.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
                            frame.extend_from_slice(&correlation_id);
                            frame.extend_from_slice(&body);
                            if writer.write_all(&frame).await.is_err() {
                                break;
                            }
                        }
                    });
                    while let Ok(request) = read_frame(&mut reader).await {
                        arrivals.borrow_mut().push(Instant::now());
                        let correlation_id: [u8; 4] = request[4..8].try_into().unwrap();
                        queue.send((correlation_id, Instant::now())).await.unwrap();
                    }
                    drop(queue);
                    answer.await;
                }
            });
            let spec = BatchSpec {
                messages: 10,
                message_bytes: 100,
                keys: super::super::args::KeyDistribution::None,
                key_count: 1,
                compression: super::super::args::CompressionArg::None,
            };
            let frames =
                build_produce_frames("t", &[0], 1, &spec, 1 << 20, &mut Rng::new(1), 0).unwrap();
            let payload_bytes = frames[0].payload_bytes as f64;
            let started = Instant::now();
            let settings = Settings {
                mode: Mode::Produce,
                topic: "t".into(),
                deadline: Some(started + Duration::from_millis(1200)),
                count: None,
                // Room for every request the delay keeps unanswered (10).
                max_in_flight: 20,
                linger: Duration::ZERO,
                // One request every 20 ms.
                rate_bytes_per_sec: Some(payload_bytes * 50.0),
                acks: 1,
                uncompressed: true,
                fetch_partition_max_bytes: 0,
                fetch_max_wait_ms: 0,
            };
            let job = ProducerJob {
                address,
                frames,
                message_budget: None,
            };
            let counters = Counters::default();
            let mut outcome = ConnOutcome::new();
            produce(job, &settings, &counters, &mut outcome)
                .await
                .unwrap();
            server.await;
            let arrivals = arrivals.borrow();
            // 60 requests are due in 1.2 s; waiting for each answer before
            // the next request would have sent about 6, 200 ms apart.
            assert!(arrivals.len() >= 48, "{} requests arrived", arrivals.len());
            assert_eq!(
                outcome.produce_requests,
                arrivals.len() as u64,
                "every request answered"
            );
            let worst_gap = arrivals.windows(2).map(|w| w[1] - w[0]).max().unwrap();
            assert!(
                worst_gap < ANSWER_DELAY / 2,
                "a gap of {worst_gap:?} between requests"
            );
        });
    }

    #[test]
    fn outcomes_merge() {
        let mut a = ConnOutcome::new();
        let mut b = ConnOutcome::new();
        let t0 = Instant::now();
        a.produced_messages = 3;
        a.started = Some(t0 + Duration::from_millis(5));
        a.finished = Some(t0 + Duration::from_millis(10));
        b.produced_messages = 4;
        b.started = Some(t0);
        b.finished = Some(t0 + Duration::from_millis(7));
        record_latency(&mut b.produce_latency, 100, 2);
        b.error = Some("x".into());
        a.merge(b);
        assert_eq!(a.produced_messages, 7);
        assert_eq!(a.started, Some(t0));
        assert_eq!(a.finished, Some(t0 + Duration::from_millis(10)));
        assert_eq!(a.produce_latency.len(), 2);
        assert_eq!(a.error.as_deref(), Some("x"));
    }
}
