//! The kernel's io_uring worker threads (io-wq) of a shard.
//!
//! io_uring runs what cannot complete without blocking (fdatasync, file
//! extensions, a DMA write the filesystem will not take with NOWAIT) on
//! worker threads that belong to the submitting thread. By default they
//! inherit the shard thread's affinity, i.e. its one pinned CPU, so every
//! fdatasync of the shard competes with the shard itself for that CPU and
//! queues behind the other blocking work. `tune` moves them to other CPUs
//! and bounds how many there are, through a small ring of our own: the
//! settings belong to the thread's io-wq, shared by every ring the thread
//! uses, glommio's included. The kernel (6.2 and later) narrows a worker
//! affinity that overlaps the pinned thread's own CPU to that CPU alone, so
//! the default set is the CPUs no shard runs on (`IoWorkerCpus::effective`).
//! The kernel's SQPOLL thread of a shard (`--sqpoll`) is one of these
//! kernel threads too; `log_sq_poll` reports where it runs.

use io_uring::IoUring;

use crate::config::BrokerConfig;

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
    // [bounded (regular-file I/O), unbounded (everything else, splice into
    // a pipe included)]; 0 reads the current value. Both get the bound.
    let mut limits = [max_workers, max_workers];
    ring.submitter().register_iowq_max_workers(&mut limits)?;
    Ok(limits[0])
}

/// Applies `--io-worker-cpus` and `--io-workers-max` on the calling shard
/// thread and logs the effective values; a kernel that refuses them leaves
/// the defaults (logged as a warning).
pub fn tune_for_shard(shard: usize, cpu: usize, config: &BrokerConfig) {
    let wanted = config.io_worker_cpus.wanted();
    let effective = config.io_worker_cpus.effective(cpu);
    if wanted.len() > 1 && wanted.contains(&cpu) {
        tracing::warn!(
            shard,
            ?wanted,
            "--io-worker-cpus includes the shard's own CPU: the kernel keeps the shard's io_uring workers on that CPU alone; leave it out to move them"
        );
    }
    match tune(&wanted, config.io_workers_max) {
        Ok(previous_max) => tracing::info!(
            shard,
            io_worker_cpus = ?effective,
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

/// The CPUs the thread of this process named `comm` may run on (from
/// /proc), or None when there is no such thread.
pub fn thread_cpus(comm: &str) -> Option<Vec<usize>> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if name.trim() != comm {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).ok()?;
        let list = status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))?;
        return crate::bench::args::parse_cpuset(list.trim()).ok();
    }
    None
}

/// Logs where the calling shard's SQPOLL thread runs (`--sqpoll`): the
/// kernel names it `iou-sqp-<creating thread's id>` once the thread first
/// runs (until then it carries its creator's name), so a thread not yet
/// named is looked for again every `SQ_POLL_LOOKUP_INTERVAL` up to
/// `SQ_POLL_LOOKUP_TIME`, on the executor's timer; its absence then is a
/// warning (the ring was set up without it).
pub async fn log_sq_poll(shard: usize, config: &BrokerConfig) {
    let Some(sq_poll) = config.sq_poll else {
        return;
    };
    let name = format!("iou-sqp-{}", nix::unistd::gettid());
    let deadline = std::time::Instant::now() + SQ_POLL_LOOKUP_TIME;
    let cpus = loop {
        match thread_cpus(&name) {
            Some(cpus) => break Some(cpus),
            None if std::time::Instant::now() < deadline => {
                glommio::timer::sleep(SQ_POLL_LOOKUP_INTERVAL).await;
            }
            None => break None,
        }
    };
    match cpus {
        Some(cpus) => tracing::info!(
            shard,
            thread = %name,
            cpus = ?cpus,
            idle_ms = sq_poll.idle.as_millis(),
            "SQPOLL thread"
        ),
        None => tracing::warn!(shard, "--sqpoll is set but this shard has no SQPOLL thread"),
    }
}

/// How long `log_sq_poll` looks for a shard's SQPOLL thread by name.
const SQ_POLL_LOOKUP_TIME: std::time::Duration = std::time::Duration::from_secs(2);
/// How often `log_sq_poll` looks again.
const SQ_POLL_LOOKUP_INTERVAL: std::time::Duration = std::time::Duration::from_millis(5);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IoWorkerCpus;

    /// The CPUs the calling thread's io-wq workers may run on, read from
    /// /proc after making the kernel start one (an async no-op).
    fn worker_cpus_after_tuning(cpus: &[usize]) -> Vec<usize> {
        let mut ring = IoUring::new(4).unwrap();
        let nop = io_uring::opcode::Nop::new().build();
        // SAFETY: a no-op carries no buffers.
        unsafe { ring.submission().push(&nop).unwrap() };
        ring.submit_and_wait(1).unwrap();
        ring.completion().for_each(drop);
        tune(cpus, 4).unwrap();
        let worker_name = format!("iou-wrk-{}", nix::unistd::gettid());
        // An idle worker may exit (or not be listed yet) by the time /proc is
        // read on a loaded machine, so the no-op is sent again, a bounded
        // number of times, until a worker is seen.
        for _ in 0..WORKER_LOOKUPS {
            let nop = io_uring::opcode::Nop::new()
                .build()
                .flags(io_uring::squeue::Flags::ASYNC);
            // SAFETY: as above.
            unsafe { ring.submission().push(&nop).unwrap() };
            ring.submit_and_wait(1).unwrap();
            ring.completion().for_each(drop);
            if let Some(cpus) = thread_cpus(&worker_name) {
                return cpus;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("no {worker_name} thread after {WORKER_LOOKUPS} async no-ops")
    }

    /// How many async no-ops `worker_cpus_after_tuning` sends at most.
    const WORKER_LOOKUPS: usize = 100;

    /// Goal: the start-up log tells where the workers really run. Method: a
    /// thread pinned to one CPU (as a shard is) tunes its io-wq as a shard
    /// would, with the default set and with a set that includes its own CPU;
    /// the workers' affinity read from /proc must equal `effective`.
    #[test]
    fn effective_worker_cpus_match_the_kernel() {
        let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| {
                nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
                    .is_ok_and(|set| set.is_set(cpu).unwrap_or(false))
            })
            .collect();
        let shard_cpu = allowed[0];
        let others: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|&c| c != shard_cpu)
            .collect();
        let mut settings = vec![IoWorkerCpus::Set(allowed.clone()), IoWorkerCpus::Shard];
        if !others.is_empty() {
            settings.push(IoWorkerCpus::Set(others));
        }
        for setting in settings {
            let setting_for_thread = setting.clone();
            let observed = std::thread::spawn(move || {
                let mut own = nix::sched::CpuSet::new();
                own.set(shard_cpu).unwrap();
                nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &own).unwrap();
                worker_cpus_after_tuning(&setting_for_thread.wanted())
            })
            .join()
            .unwrap();
            assert_eq!(observed, setting.effective(shard_cpu), "{setting:?}");
        }
    }
}
