//! The glommio shell: checks what the machine must provide (io_uring, locked
//! memory), starts one pinned executor per shard, joins them into the router
//! mesh, and runs start-up and shutdown in order. Each shard's values live on
//! its own executor; only the `Arc`s built here (read-only config, the peer
//! table, start-up and shutdown counters) are shared.

use std::fs;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::{LocalExecutorBuilder, Placement};

use crate::cluster::image::cluster_id_string;
use crate::cluster::{metadata_log, MetadataRecord};
use crate::config::limits::ROUTER_CHANNEL_CAPACITY;
use crate::config::BrokerConfig;
use crate::server::{self, ServerState};
use crate::shard::router::{receiver_streams, PeerTable, Router, RouterMessage};
use crate::shard::Shard;

/// Kafka's name for the clean shutdown marker in a log directory.
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";
/// Lock file that keeps two brokers off one data directory.
pub const LOCK_FILE: &str = ".lock";

/// Exit statuses for environmental dead ends (see `fatal`).
mod io_workers;
pub mod logging;

pub mod exit_status {
    /// Bad configuration or flags.
    pub const CONFIG: i32 = 2;
    /// The kernel lacks io_uring or forbids it.
    pub const NO_IO_URING: i32 = 3;
    /// Locked memory cannot be raised enough.
    pub const MEMLOCK: i32 = 4;
    /// The data directory cannot be used.
    pub const DATA_DIR: i32 = 5;
    /// A shard failed while running.
    pub const SHARD_FAILED: i32 = 6;
}

/// Logs `reason` and exits with `status`: for states the broker cannot run in.
pub fn fatal(status: i32, reason: &str) -> ! {
    tracing::error!(status, "{reason}");
    eprintln!("ringbroker: {reason}");
    std::process::exit(status)
}

fn check_io_uring() {
    if let Ok(value) = fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
        if value.trim() == "2" {
            fatal(
                exit_status::NO_IO_URING,
                "io_uring is disabled on this machine (kernel.io_uring_disabled=2); set `sysctl kernel.io_uring_disabled=0`",
            );
        }
    }
    // io_uring_setup with a null params pointer: EFAULT means the call
    // exists, ENOSYS that the kernel has no io_uring.
    // SAFETY: the kernel validates the pointer and returns EFAULT for null;
    // no memory is read or written on our side.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            1u32,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    let errno = std::io::Error::last_os_error().raw_os_error();
    if rc < 0 && errno == Some(libc::ENOSYS) {
        fatal(
            exit_status::NO_IO_URING,
            "this kernel has no io_uring (Linux 5.8 or newer is needed); ringbroker cannot run here",
        );
    }
    if rc < 0 && errno == Some(libc::EPERM) {
        fatal(
            exit_status::NO_IO_URING,
            "io_uring is not permitted for this process (kernel.io_uring_disabled or a seccomp filter); allow it and retry",
        );
    }
}

/// Locked memory the broker needs beyond the registered I/O buffers of its
/// shards (the rings themselves and glommio's own bookkeeping).
const MEMLOCK_RESERVE_BYTES: u64 = 2 * 1024 * 1024;
/// Registered I/O memory per shard when the limit allows it.
const IO_MEMORY_BYTES_DEFAULT: u64 = 10 * 1024 * 1024;
/// Less than this per shard and glommio cannot run usefully.
const IO_MEMORY_BYTES_MIN: u64 = 1024 * 1024;
/// Rings each shard registers its I/O memory with (`locked_bytes`).
const REGISTRATIONS_PER_SHARD: u64 = 3;

/// How much registered I/O memory each shard gets (`fit_io_memory`).
#[derive(Debug, PartialEq, Eq)]
enum IoMemoryFit {
    /// What was asked for (or the default).
    Wanted(u64),
    /// Less than the default, all the limit leaves room for.
    Reduced(u64),
    /// Not even the floor fits: the limit needed, in bytes.
    TooLow(u64),
}

/// Locked memory `nr_shards` shards of `per_shard` registered I/O memory
/// take: glommio registers each shard's memory with its three rings (main,
/// latency, poll) and the kernel counts each registration.
fn locked_bytes(per_shard: u64, nr_shards: u64) -> u64 {
    per_shard * REGISTRATIONS_PER_SHARD * nr_shards + MEMLOCK_RESERVE_BYTES
}

/// Registered I/O memory per shard for `requested` (None: the default) and
/// `nr_shards` shards under the locked-memory limit `limit`; `exempt` when
/// the process holds CAP_IPC_LOCK, whose registered io_uring buffers the
/// kernel does not count against the limit (as root on dev-2vcpu-xeon-b,
/// 2 shards registered 3 x 10 MiB each under an 8 MiB limit; without the
/// capability, 2 shards of 3 MiB failed to register in their second ring,
/// and glommio then ran them with no registered memory at all).
fn fit_io_memory(requested: Option<u64>, nr_shards: u64, limit: u64, exempt: bool) -> IoMemoryFit {
    let wanted_per_shard = requested.unwrap_or(IO_MEMORY_BYTES_DEFAULT);
    if exempt || limit >= locked_bytes(wanted_per_shard, nr_shards) {
        return IoMemoryFit::Wanted(wanted_per_shard);
    }
    let fits_per_shard =
        limit.saturating_sub(MEMLOCK_RESERVE_BYTES) / (REGISTRATIONS_PER_SHARD * nr_shards);
    if requested.is_none() && fits_per_shard >= IO_MEMORY_BYTES_MIN {
        return IoMemoryFit::Reduced(fits_per_shard / (64 * 1024) * (64 * 1024));
    }
    IoMemoryFit::TooLow(locked_bytes(
        requested.unwrap_or(IO_MEMORY_BYTES_MIN),
        nr_shards,
    ))
}

/// Whether this process holds CAP_IPC_LOCK in its effective set (from
/// `/proc/self/status`; false where that cannot be read).
fn has_cap_ipc_lock() -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// Raises RLIMIT_MEMLOCK as far as allowed and returns the registered I/O
/// memory each shard gets: the requested amount, or by default 10 MiB or
/// what the limit leaves room for (a process with CAP_IPC_LOCK is not held
/// to the limit). Stops the broker with a clear message when even the
/// minimum does not fit.
fn plan_locked_memory(requested: Option<usize>, nr_shards: u64) -> usize {
    use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};
    let wanted_per_shard = requested.map_or(IO_MEMORY_BYTES_DEFAULT, |r| r as u64);
    let needed = locked_bytes(wanted_per_shard, nr_shards);
    let (soft, hard) = getrlimit(Resource::RLIMIT_MEMLOCK).unwrap_or((0, 0));
    let mut limit = soft;
    if soft < needed {
        // Root with CAP_SYS_RESOURCE may lift the hard limit; anyone may go
        // up to the hard limit.
        if setrlimit(Resource::RLIMIT_MEMLOCK, RLIM_INFINITY, RLIM_INFINITY).is_ok() {
            limit = RLIM_INFINITY;
        } else if setrlimit(Resource::RLIMIT_MEMLOCK, hard, hard).is_ok() {
            limit = hard;
        }
    }
    let exempt = limit < needed && has_cap_ipc_lock();
    if exempt {
        tracing::info!(
            memlock_limit_kib = limit / 1024,
            io_memory_bytes = wanted_per_shard,
            "locked memory limit is below what the shards register, but this process holds CAP_IPC_LOCK, so io_uring does not count their buffers against it"
        );
    }
    match fit_io_memory(requested.map(|r| r as u64), nr_shards, limit, exempt) {
        IoMemoryFit::Wanted(per_shard) => per_shard as usize,
        IoMemoryFit::Reduced(per_shard) => {
            tracing::warn!(
                memlock_limit_kib = limit / 1024,
                io_memory_bytes = per_shard,
                "locked memory limit is below the default; using less registered I/O memory per shard (raise ulimit -l for the default)"
            );
            per_shard as usize
        }
        IoMemoryFit::TooLow(floor) => fatal(
            exit_status::MEMLOCK,
            &format!(
                "locked memory limit is {} KiB but {} shard(s) need at least {} KiB for io_uring buffers; raise it with \
                 `ulimit -l {}` (or LimitMEMLOCK= in a systemd unit), or lower --io-memory-bytes / --cores",
                limit / 1024,
                nr_shards,
                floor / 1024,
                floor / 1024
            ),
        ),
    }
}

fn lock_data_dir(data_dir: &Path) -> anyhow::Result<fs::File> {
    use std::os::fd::AsRawFd;
    let path = data_dir.join(LOCK_FILE);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    // SAFETY: flock on a file descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        bail!(
            "{} is locked: another broker uses this data directory",
            data_dir.display()
        );
    }
    Ok(file)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

/// Prepares the data directory and reads the metadata log: returns the
/// records and whether the last shutdown was clean.
fn prepare_data_dir(
    config: &BrokerConfig,
) -> anyhow::Result<(Vec<MetadataRecord>, bool, fs::File)> {
    let data_dir = &config.data_dir;
    fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let lock = lock_data_dir(data_dir)?;
    let meta_dir = data_dir.join("meta");
    fs::create_dir_all(&meta_dir)
        .with_context(|| format!("cannot create {}", meta_dir.display()))?;
    let mut records = metadata_log::read_all(&meta_dir)?;
    if records.is_empty() {
        let formatted = formatted_cluster(config);
        metadata_log::append_at_startup(&meta_dir, &formatted)?;
        records.extend(formatted);
    } else {
        // Back again: every partition moves up its leader epochs, made
        // durable before any partition opens, so an epoch is never reused.
        let resumed = [MetadataRecord::LeadershipResumed];
        metadata_log::append_at_startup(&meta_dir, &resumed)?;
        records.extend(resumed);
    }
    let added = scram_credentials_to_add(config, &records)?;
    if !added.is_empty() {
        metadata_log::append_at_startup(&meta_dir, &added)?;
        records.extend(added);
    }
    let marker = data_dir.join(CLEAN_SHUTDOWN_MARKER);
    let clean = marker.exists();
    if clean {
        // Removed before anything is written, so a crash from here on is
        // never mistaken for a clean stop.
        fs::remove_file(&marker).with_context(|| format!("cannot remove {}", marker.display()))?;
        sync_dir(data_dir)?;
    }
    Ok((records, clean, lock))
}

/// The records of a new cluster, as `kafka-storage format` writes them for
/// Kafka 4.1: its id, and `eligible.leader.replicas.version` 1 with the
/// cluster-level `min.insync.replicas` ELR needs. (A data directory an
/// older version of this broker wrote keeps ELR off, as a Kafka upgraded
/// in place does, until `kafka-features` turns it on.)
fn formatted_cluster(config: &BrokerConfig) -> Vec<MetadataRecord> {
    let mut records = vec![
        MetadataRecord::Bootstrap {
            cluster_id: cluster_id_string(uuid::Uuid::new_v4()),
        },
        MetadataRecord::FeatureLevel {
            name: crate::cluster::features::ELR_VERSION.to_string(),
            level: 1,
        },
    ];
    records.extend(crate::cluster::controller::elr_safety_records(
        config,
        &Default::default(),
    ));
    records
}

/// The `--add-scram` credentials for a user and mechanism the metadata
/// `records` never mention, salted afresh. As `kafka-storage format
/// --add-scram` writes them once: a credential set since, by `--add-scram`
/// or AlterUserScramCredentials, is kept, and a deleted one stays deleted.
fn scram_credentials_to_add(
    config: &BrokerConfig,
    records: &[MetadataRecord],
) -> anyhow::Result<Vec<MetadataRecord>> {
    let mut mentioned: std::collections::HashSet<(&str, crate::security::scram::ScramMechanism)> =
        records
            .iter()
            .filter_map(|record| match record {
                MetadataRecord::UserScramCredential {
                    name, mechanism, ..
                }
                | MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                    Some((name.as_str(), *mechanism))
                }
                _ => None,
            })
            .collect();
    let mut added = Vec::new();
    for add in &config.add_scram {
        if !mentioned.insert((add.user.as_str(), add.mechanism)) {
            continue;
        }
        let salt = crate::security::scram::random_bytes(24)
            .map_err(|e| anyhow::anyhow!("no random salt for --add-scram: {e}"))?;
        let salted =
            add.mechanism
                .salted_password(add.password.as_bytes(), &salt, add.iterations as u32);
        let record = MetadataRecord::UserScramCredential {
            name: add.user.clone(),
            mechanism: add.mechanism,
            credential: add.mechanism.credential(&salted, &salt, add.iterations),
        };
        tracing::info!(user = %add.user, mechanism = add.mechanism.name(), "SCRAM credential added");
        added.push(record);
    }
    Ok(added)
}

/// Raises the open-files soft limit to the hard limit: each partition holds
/// its segment and index files open, splice reads a second descriptor per
/// segment they read, and every connection one. Returns the limit in force.
fn raise_open_files_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

/// Segment reads beyond the registered I/O memory get their DMA buffers
/// (up to 1 MiB) from malloc. By default glibc serves such sizes with a
/// fresh mmap, or trims them off its heaps once freed, so every read
/// faults in and zeroes new pages and unmaps them again (measured: the
/// largest cost of a cold fetch). Serving them from the heap and keeping
/// freed memory for reuse takes that away; the heap then stays at its peak
/// size, which the bounds on reads and buffers keep in check.
fn keep_freed_memory_for_reuse() {
    // SAFETY: mallopt only changes allocator tuning; called before the
    // shard threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Shared start-up and shutdown coordination.
struct Coordination {
    ready_shards: AtomicUsize,
    shutdown_requested: AtomicBool,
    drained_shards: AtomicUsize,
    failed_shards: AtomicUsize,
}

async fn wait_until(condition: impl Fn() -> bool) {
    while !condition() {
        glommio::timer::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs the broker until SIGTERM or SIGINT.
///
/// # Errors
/// Start-up failures (data directory, metadata log, executors).
pub fn run(config: BrokerConfig) -> anyhow::Result<()> {
    check_io_uring();
    keep_freed_memory_for_reuse();
    let open_files_max = raise_open_files_limit();
    let nr_shards = config.cpus.len();
    let io_memory_bytes = plan_locked_memory(config.io_memory_bytes, nr_shards as u64);
    // From here on the amount each shard registers.
    let mut config = config;
    config.io_memory_bytes = Some(io_memory_bytes);
    config.open_files_max = open_files_max;
    let (records, clean_shutdown, _lock) = match prepare_data_dir(&config) {
        Ok(prepared) => prepared,
        Err(e) => fatal(exit_status::DATA_DIR, &format!("{e:#}")),
    };
    // Signals are taken by the main thread with sigwait; block them before
    // the executor threads start so they inherit the mask.
    let mut signals = nix::sys::signal::SigSet::empty();
    signals.add(nix::sys::signal::Signal::SIGTERM);
    signals.add(nix::sys::signal::Signal::SIGINT);
    signals.thread_block().context("cannot block signals")?;

    // Before any partition opens: stray partition directories set aside,
    // deleted logs' directories found, to be removed after the delay.
    let deleted_log_dirs = {
        let image = crate::cluster::MetadataImage::from_records(&records);
        let known = |topic: &str, partition: i32| {
            image.topic(topic).is_some_and(|topic| {
                usize::try_from(partition).is_ok_and(|p| p < topic.partition_shards.len())
            })
        };
        match crate::storage::settle_log_dirs_blocking(&config.data_dir, known) {
            Ok(deleted) => deleted,
            Err(e) => fatal(exit_status::DATA_DIR, &format!("{e:#}")),
        }
    };
    let deleted_log_dirs = Arc::new(deleted_log_dirs);
    let config = Arc::new(config);
    let records = Arc::new(records);
    let peers = PeerTable::new(nr_shards);
    let coordination = Arc::new(Coordination {
        ready_shards: AtomicUsize::new(0),
        shutdown_requested: AtomicBool::new(false),
        drained_shards: AtomicUsize::new(0),
        failed_shards: AtomicUsize::new(0),
    });
    let mesh = (nr_shards > 1)
        .then(|| MeshBuilder::<RouterMessage, _>::full(nr_shards, ROUTER_CHANNEL_CAPACITY));
    // Process-wide settings here; each shard logs its own effective
    // settings when it serves ("serving").
    tracing::info!(
        shards = nr_shards,
        cpus = ?config.cpus,
        open_files_max,
        topic_fds_per_partition = config.topic_fds_per_partition,
        partitions_max = ?crate::cluster::controller::partitions_within_open_files(
            open_files_max,
            config.topic_fds_per_partition
        ),
        log_flush_interval_messages = config.broker_defaults.log_flush_interval_messages,
        log_flush_interval_ms = ?config.broker_defaults.log_flush_interval_ms,
        log_flush_scheduler_interval_ms = config.broker_defaults.log_flush_scheduler_interval_ms,
        log_retention_check_interval_ms = config.broker_defaults.log_retention_check_interval_ms,
        "starting shards"
    );

    let mut handles = Vec::with_capacity(nr_shards);
    for (shard_id, &cpu) in config.cpus.iter().enumerate() {
        let config = config.clone();
        let records = records.clone();
        let deleted_log_dirs = deleted_log_dirs.clone();
        let peers = peers.clone();
        let coordination = coordination.clone();
        let mesh = mesh.clone();
        let mut builder = LocalExecutorBuilder::new(Placement::Fixed(cpu))
            .name(&format!("shard-{shard_id}"))
            .io_memory(io_memory_bytes)
            .ring_depth(config.ring_depth)
            .sq_poll(config.sq_poll)
            .blocking_thread_pool_placement(glommio::PoolPlacement::Unbound(
                config.blocking_threads,
            ));
        if config.spin_before_park_us > 0 {
            builder = builder.spin_before_park(Duration::from_micros(config.spin_before_park_us));
        }
        let handle = builder
            .spawn(move || async move {
                io_workers::tune_for_shard(shard_id, cpu, &config);
                io_workers::log_sq_poll(shard_id, &config).await;
                let outcome = shard_main(
                    shard_id,
                    nr_shards,
                    config,
                    records,
                    clean_shutdown,
                    &deleted_log_dirs,
                    peers,
                    mesh,
                    &coordination,
                )
                .await;
                if let Err(e) = &outcome {
                    tracing::error!(shard = shard_id, error = %format!("{e:#}"), "shard failed");
                    coordination.failed_shards.fetch_add(1, Ordering::SeqCst);
                    coordination
                        .shutdown_requested
                        .store(true, Ordering::SeqCst);
                }
                outcome.is_ok()
            })
            .map_err(|e| anyhow::anyhow!("cannot start shard {shard_id} on CPU {cpu}: {e}"));
        match handle {
            Ok(h) => handles.push(h),
            Err(e) => fatal(
                exit_status::NO_IO_URING,
                &format!("{e:#} (io_uring or locked memory unavailable?)"),
            ),
        }
    }

    // Wait for readiness or an early failure.
    loop {
        if coordination.failed_shards.load(Ordering::SeqCst) > 0 {
            break;
        }
        // A shard thread that ends before it is ready never ran its task:
        // its executor could not be created (the kernel refused a ring of
        // that depth, SQPOLL, or locked memory). Nothing else would notice,
        // and the signals are blocked until the broker is ready.
        if let Some(shard_id) = handles.iter().position(|h| h.is_finished()) {
            let reason = match handles.swap_remove(shard_id).join() {
                Err(e) => e.to_string(),
                Ok(_) => "its thread ended".to_string(),
            };
            fatal(
                exit_status::NO_IO_URING,
                &format!(
                    "cannot start shard {shard_id} on CPU {}: {reason} (io_uring, locked memory or --sqpoll unavailable? --ring-depth too large?)",
                    config.cpus[shard_id]
                ),
            );
        }
        if coordination.ready_shards.load(Ordering::SeqCst) == nr_shards {
            let listeners: Vec<String> = config
                .listeners
                .iter()
                .map(|l| format!("{}://{}", l.security_protocol.name(), l.address))
                .collect();
            tracing::info!(listeners = %listeners.join(","), "ready");
            let addresses: Vec<String> = config
                .listeners
                .iter()
                .map(|l| l.address.to_string())
                .collect();
            eprintln!("ringbroker ready on {}", addresses.join(", "));
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if coordination.failed_shards.load(Ordering::SeqCst) == 0 {
        // Wait for a signal, or for a shard to fail (checked every 100 ms).
        let watcher_coordination = coordination.clone();
        std::thread::spawn(move || {
            while !watcher_coordination
                .shutdown_requested
                .load(Ordering::SeqCst)
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            // Wake the main thread's sigwait.
            // SAFETY: sending a signal to our own process.
            unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
        });
        match signals.wait() {
            Ok(signal) => tracing::info!(?signal, "shutting down"),
            Err(e) => tracing::error!(error = %e, "sigwait failed; shutting down"),
        }
        coordination
            .shutdown_requested
            .store(true, Ordering::SeqCst);
    }
    if coordination.failed_shards.load(Ordering::SeqCst) > 0 {
        // A shard that failed cannot take part in the orderly shutdown (the
        // others would wait for it forever); acknowledged data is already
        // durable, so exit now and let the next start run recovery.
        fatal(
            exit_status::SHARD_FAILED,
            "a shard failed; stopping (the next start runs full recovery)",
        );
    }
    let mut all_ok = true;
    for handle in handles {
        all_ok &= handle.join().unwrap_or(false);
    }
    if all_ok && coordination.failed_shards.load(Ordering::SeqCst) == 0 {
        let marker = config.data_dir.join(CLEAN_SHUTDOWN_MARKER);
        fs::write(&marker, b"").with_context(|| format!("cannot write {}", marker.display()))?;
        sync_dir(&config.data_dir)?;
        tracing::info!("clean shutdown complete");
        Ok(())
    } else {
        fatal(
            exit_status::SHARD_FAILED,
            "a shard failed; the next start will run full recovery",
        )
    }
}

#[allow(clippy::too_many_arguments)]
async fn shard_main(
    shard_id: usize,
    nr_shards: usize,
    config: Arc<BrokerConfig>,
    records: Arc<Vec<MetadataRecord>>,
    clean_shutdown: bool,
    deleted_log_dirs: &[PathBuf],
    peers: Arc<PeerTable>,
    mesh: Option<
        glommio::channels::channel_mesh::MeshBuilder<
            RouterMessage,
            glommio::channels::channel_mesh::Full,
        >,
    >,
    coordination: &Coordination,
) -> anyhow::Result<()> {
    let (senders, mut receivers) = match mesh {
        Some(mesh) => {
            let (s, r) = mesh
                .join()
                .await
                .map_err(|e| anyhow::anyhow!("cannot join the router mesh: {e}"))?;
            peers.set(shard_id, s.peer_id());
            (Some(s), Some(r))
        }
        None => {
            peers.set(shard_id, 0);
            (None, None)
        }
    };
    wait_until(|| peers.complete()).await;
    let shard = Shard::new(
        shard_id,
        nr_shards,
        config.clone(),
        Router::new(shard_id, senders, peers.clone()),
    );
    // The shard's work is split over task queues that share its core by
    // shares when it is busy: requests (connections, produce, everything
    // but fetch), fetches served here, segment file reads, background.
    let queue = |shares: u64, name: &str| {
        glommio::executor().create_task_queue(
            glommio::Shares::Static(shares as usize),
            glommio::Latency::NotImportant,
            name,
        )
    };
    let requests = queue(config.produce_shares, "produce");
    let fetch = queue(config.fetch_shares, "fetch");
    shard.set_fetch_queue(fetch);
    let cold_fetch = queue(config.cold_fetch_shares, "cold-fetch");
    crate::storage::configure_cold_reads(
        config.cold_reads_max,
        Some(cold_fetch),
        config.cold_read_path,
    );
    crate::server::pieces::configure_splice_to_socket(config.splice_to_socket);
    crate::storage::configure_log_sync(config.log_sync.resolve(nr_shards), &config.data_dir)?;
    let background = queue(config.background_shares, "background");
    crate::storage::configure_shard_cache(config.shard_cache_bytes);
    if let Some(receivers) = receivers.as_mut() {
        for (from, stream) in receiver_streams(receivers, &peers) {
            let shard = shard.clone();
            // Tasks spawned from here on (the requests' completions) stay
            // in this queue.
            glommio::spawn_local_into(receive_loop(shard, from, stream), requests)
                .map_err(|e| anyhow::anyhow!("cannot start a router receiver: {e}"))?
                .detach();
        }
    }
    shard.load(&records, clean_shutdown).await?;
    if shard_id == 0 {
        // Those the last run left, removed the delay after this start.
        for dir in deleted_log_dirs {
            shard.remove_deleted_log_later(dir.clone());
        }
    }
    let mut bound = Vec::with_capacity(config.listeners.len());
    for (index, listener) in config.listeners.iter().enumerate() {
        bound.push(
            server::bind(&shard, index)
                .with_context(|| format!("cannot listen on {}", listener.address))?,
        );
    }
    glommio::spawn_local_into(shard.clone().flush_loop(), background)
        .map_err(|e| anyhow::anyhow!("cannot start the log flusher: {e}"))?
        .detach();
    glommio::spawn_local_into(shard.clone().compaction_loop(), background)
        .map_err(|e| anyhow::anyhow!("cannot start the compaction task: {e}"))?
        .detach();
    glommio::spawn_local_into(shard.clone().producer_expiry_loop(), background)
        .map_err(|e| anyhow::anyhow!("cannot start the producer expiry task: {e}"))?
        .detach();
    glommio::spawn_local_into(shard.clone().retention_loop(), background)
        .map_err(|e| anyhow::anyhow!("cannot start the retention task: {e}"))?
        .detach();
    glommio::spawn_local_into(shard.clone().deleted_logs_loop(), background)
        .map_err(|e| anyhow::anyhow!("cannot start the deleted logs task: {e}"))?
        .detach();
    glommio::spawn_local_into(shard.clone().token_sweep_loop(), background)
        .map_err(|e| anyhow::anyhow!("cannot start the delegation token sweep: {e}"))?
        .detach();
    glommio::spawn_local_into(shard.clone().producer_snapshot_loop(), background)
        .map_err(|e| anyhow::anyhow!("cannot start the producer snapshot task: {e}"))?
        .detach();
    let metrics = match config.metrics_listen {
        Some(address) if shard_id == 0 => {
            let listener = glommio::net::TcpListener::bind(address)
                .map_err(|e| anyhow::anyhow!("cannot serve metrics on {address}: {e}"))?;
            tracing::info!(%address, "serving metrics");
            Some(
                glommio::spawn_local_into(
                    crate::metrics::serve(listener, shard.clone()),
                    background,
                )
                .map_err(|e| anyhow::anyhow!("cannot start the metrics task: {e}"))?,
            )
        }
        _ => None,
    };
    let state = ServerState::new(shard.clone());
    // Connections (and the tasks they spawn) run in the requests queue.
    let mut accepts = Vec::with_capacity(bound.len());
    for (index, listener) in bound.into_iter().enumerate() {
        accepts.push(
            glommio::spawn_local_into(
                server::accept_loop(listener, state.clone(), index),
                requests,
            )
            .map_err(|e| anyhow::anyhow!("cannot start accepting connections: {e}"))?,
        );
    }
    let shares = |queue| {
        glommio::executor()
            .task_queue_stats(queue)
            .map_or(0, |stats| stats.current_shares())
    };
    // The settings this shard runs with, as its executor and storage took
    // them (the CPUs from the thread's own affinity, the shares from the
    // scheduler's queues).
    tracing::info!(
        shard = shard_id,
        cpus = ?crate::bench::args::allowed_cpus(),
        partitions = shard.partition_count(),
        io_memory_bytes = config.io_memory_bytes.unwrap_or(0),
        ring_depth = config.ring_depth,
        spin_before_park_us = config.spin_before_park_us,
        sqpoll = config.sq_poll.is_some(),
        produce_shares = shares(requests),
        fetch_shares = shares(fetch),
        cold_fetch_shares = shares(cold_fetch),
        background_shares = shares(background),
        cold_reads_max = config.cold_reads_max,
        cold_read_path = ?config.cold_read_path,
        splice_to_socket = ?config.splice_to_socket,
        log_sync = ?config.log_sync.resolve(nr_shards),
        blocking_threads = config.blocking_threads,
        write_buffer_bytes = config.write_buffer_bytes,
        write_buffer_bytes_max = config.write_buffer_bytes_max,
        write_behind = config.write_behind,
        write_delay_us = config.write_delay_us,
        writes_during_sync = ?config.writes_during_sync.resolve(),
        preallocate_bytes = config.preallocate_bytes,
        partition_cache_bytes = config.partition_cache_bytes,
        shard_cache_bytes = config.shard_cache_bytes,
        partition_pending_bytes_max = config.partition_pending_bytes_max,
        flush_policy = ?config.flush_policy,
        acks_wait_for_write = config.acks_wait_for_write,
        "serving"
    );
    // Counted ready only after its line is out, so the log holds every
    // shard's settings by the time the broker says it is ready.
    coordination.ready_shards.fetch_add(1, Ordering::SeqCst);

    wait_until(|| coordination.shutdown_requested.load(Ordering::SeqCst)).await;
    // Phase 1: stop taking requests and let in-flight ones finish.
    state.begin_shutdown();
    if let Some(metrics) = metrics {
        metrics.cancel().await;
    }
    for accept in accepts {
        accept.await;
    }
    let drain = wait_until(|| state.open_connections.get() == 0);
    let limit = glommio::timer::sleep(Duration::from_millis(config.shutdown_timeout_ms));
    futures::future::select(Box::pin(drain), Box::pin(limit)).await;
    coordination.drained_shards.fetch_add(1, Ordering::SeqCst);
    // Phase 2: once no shard can route new work, close the logs.
    wait_until(|| coordination.drained_shards.load(Ordering::SeqCst) >= nr_shards).await;
    let failures = shard.close_all().await;
    if failures > 0 {
        anyhow::bail!("{failures} partition logs failed to close");
    }
    Ok(())
}

async fn receive_loop(
    shard: Rc<Shard>,
    from: usize,
    stream: glommio::channels::shared_channel::ConnectedReceiver<RouterMessage>,
) {
    while let Some(message) = stream.recv().await {
        match message {
            RouterMessage::Request {
                from: sender,
                id,
                body,
            } => {
                debug_assert_eq!(sender, from);
                // The ordered part runs here, in arrival order; the rest in
                // its own task so one slow request does not hold the others.
                let completion = shard.clone().submit(body).await;
                let shard = shard.clone();
                glommio::spawn_local(async move {
                    let reply = completion.await;
                    shard.router.reply(sender, id, reply).await;
                })
                .detach();
            }
            RouterMessage::Reply { id, body } => shard.router.complete(id, body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    /// Goal: shards get the default registered memory where the limit
    /// holds it, what fits (at least 1 MiB) where it does not, and an
    /// explicit size is never cut; a process with CAP_IPC_LOCK is not held
    /// to the limit, since io_uring does not count its buffers against it.
    #[test]
    fn io_memory_fits_the_memlock_limit_unless_the_process_is_exempt() {
        // Each shard's memory is registered, and counted, three times.
        assert_eq!(
            fit_io_memory(None, 2, 62 * MIB, false),
            IoMemoryFit::Wanted(10 * MIB)
        );
        assert_eq!(
            fit_io_memory(None, 2, 61 * MIB, false),
            IoMemoryFit::Reduced(59 * MIB / 6 / (64 * 1024) * (64 * 1024))
        );
        assert_eq!(
            fit_io_memory(None, 2, 8 * MIB, false),
            IoMemoryFit::Reduced(MIB)
        );
        assert_eq!(
            fit_io_memory(None, 1, 8 * MIB, false),
            IoMemoryFit::Reduced(2 * MIB)
        );
        assert_eq!(
            fit_io_memory(Some(3 * MIB), 2, 8 * MIB, false),
            IoMemoryFit::TooLow(20 * MIB)
        );
        assert_eq!(
            fit_io_memory(None, 3, 8 * MIB, false),
            IoMemoryFit::TooLow(11 * MIB)
        );
        assert_eq!(
            fit_io_memory(None, 2, 8 * MIB, true),
            IoMemoryFit::Wanted(10 * MIB)
        );
        assert_eq!(
            fit_io_memory(Some(64 * MIB), 2, 8 * MIB, true),
            IoMemoryFit::Wanted(64 * MIB)
        );
    }
}
