//! The kernel's io_uring worker threads (io-wq) of a shard.
//!
//! io_uring runs what cannot complete without blocking (fdatasync, file
//! extensions, a DMA write the filesystem will not take with NOWAIT) on
//! worker threads that belong to the submitting thread. By default they
//! inherit the shard thread's affinity, i.e. its one pinned CPU, so every
//! fdatasync of the shard competes with the shard itself for that CPU and
//! queues behind the other blocking work. `tune` lets them run on a wider
//! set of CPUs and bounds how many there are, through a small ring of our
//! own: the settings belong to the thread's io-wq, shared by every ring the
//! thread uses, glommio's included.

use io_uring::IoUring;

use crate::config::{BrokerConfig, IoWorkerCpus};

/// Sets the calling thread's io-wq CPU affinity to `cpus` (none: leave the
/// kernel's default, the thread's own affinity) and, when `max_workers` is
/// not 0, its bound on workers for file I/O. Returns the kernel's previous
/// bound.
///
/// # Errors
/// The kernel refused the ring or a registration (older kernels lack
/// these; the broker logs it and goes on with the defaults).
pub fn tune(cpus: &[usize], max_workers: u32) -> std::io::Result<u32> {
    let ring = IoUring::new(2)?;
    if !cpus.is_empty() {
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus {
            // SAFETY: CPU_SET bounds-checks against the set's size.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        ring.submitter().register_iowq_aff(&set)?;
    }
    // [bounded (file I/O), unbounded (network)]; 0 reads the current value.
    let mut limits = [max_workers, 0];
    ring.submitter().register_iowq_max_workers(&mut limits)?;
    Ok(limits[0])
}

/// Applies `--io-worker-cpus` and `--io-workers-max` on the calling shard
/// thread and logs the effective values; a kernel that refuses them leaves
/// the defaults (logged as a warning).
pub fn tune_for_shard(shard: usize, cpu: usize, config: &BrokerConfig) {
    let cpus = match &config.io_worker_cpus {
        IoWorkerCpus::Shard => vec![cpu],
        IoWorkerCpus::Set(cpus) => cpus.clone(),
    };
    let wanted = match &config.io_worker_cpus {
        IoWorkerCpus::Shard => &[][..],
        IoWorkerCpus::Set(cpus) => cpus,
    };
    match tune(wanted, config.io_workers_max) {
        Ok(previous_max) => tracing::info!(
            shard,
            io_worker_cpus = ?cpus,
            io_workers_max = if config.io_workers_max == 0 { previous_max } else { config.io_workers_max },
            "io_uring worker threads"
        ),
        Err(error) => tracing::warn!(
            shard,
            %error,
            "cannot set io_uring worker affinity or bound; keeping the kernel's defaults"
        ),
    }
}
