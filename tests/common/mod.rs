//! Harness shared by the integration tests: it starts the real `ringbroker`
//! binary on a loopback port with its own data directory, waits until the
//! broker says it is ready, and stops it again, by SIGTERM, by SIGKILL, or when
//! the test ends. Every test gets its own port and directory, so the tests of
//! one binary run in parallel.
//!
//! The broker's stderr goes to `broker.log` in a scratch directory that lives
//! as long as the `Broker`. When a test panics, dropping the `Broker` prints
//! that log, so a failure shows what the broker said; the harness's own
//! panics rely on that instead of repeating the log.
//!
//! `kafka` holds rdkafka helpers (client configs, a deterministic message
//! generator, produce and read-back with exact comparison); `wire` holds a
//! raw TCP client for hand-built frames; `segment` parses `.log` files;
//! `groups` holds consumer-group helpers (subscribe, rebalance recording).

#![allow(dead_code)] // every test binary uses a different part of the harness

pub mod groups;
pub mod kafka;
pub mod segment;
pub mod wire;

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tempfile::TempDir;

/// A process's open-files limit (soft, hard), set first to `new` when
/// given; returns the limit before the change.
pub fn open_files_limit(pid: u32, new: Option<(u64, u64)>) -> (u64, u64) {
    let new = new.map(|(soft, hard)| libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    });
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let new_ptr = new
        .as_ref()
        .map_or(std::ptr::null(), |limit| limit as *const _);
    // SAFETY: prlimit reads `new` (or nothing when null) and writes `old`.
    let status =
        unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_NOFILE, new_ptr, &mut old) };
    assert_eq!(status, 0, "prlimit: {}", std::io::Error::last_os_error());
    (old.rlim_cur, old.rlim_max)
}

/// The `--topic-fds-per-partition` that gives a broker under the
/// open-files limit `limit` a budget of about `wanted` partitions, and the
/// budget it gives: the broker keeps 1024 descriptors (or a quarter of the
/// limit when less) out of the budget.
pub fn fds_per_partition_for_budget(limit: u64, wanted: u64) -> (u64, u64) {
    let usable = limit - 1024.min(limit / 4);
    let fds_per_partition = (usable / wanted).max(1);
    (fds_per_partition, usable / fds_per_partition)
}

/// How long the broker may take to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a SIGTERM'd broker may take to exit.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
/// The clean shutdown marker the broker leaves in its data directory.
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";

/// Cores the broker gets when a test does not say: `RINGBROKER_TEST_CORES`,
/// else 1. One shard by default keeps two brokers of parallel tests from
/// fighting over a two-core machine; the multi-shard test asks for 2.
fn default_cores() -> u32 {
    std::env::var("RINGBROKER_TEST_CORES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1)
}

/// Command-line choices for one broker. `None` leaves the broker's default.
#[derive(Clone, Debug, Default)]
pub struct BrokerOptions {
    pub cores: Option<u32>,
    pub num_partitions: Option<u32>,
    pub log_segment_bytes: Option<u64>,
    pub auto_create_topics_enable: Option<bool>,
    /// Use this directory instead of a fresh one under the scratch directory.
    pub data_dir: Option<PathBuf>,
    /// Further command-line arguments, appended as given.
    pub extra_args: Vec<String>,
    /// The listener's security protocol, e.g. "SASL_PLAINTEXT" (PLAINTEXT
    /// when not given).
    pub listen_protocol: Option<&'static str>,
}

impl BrokerOptions {
    pub fn cores(mut self, cores: u32) -> Self {
        self.cores = Some(cores);
        self
    }
    pub fn num_partitions(mut self, num_partitions: u32) -> Self {
        self.num_partitions = Some(num_partitions);
        self
    }
    pub fn log_segment_bytes(mut self, log_segment_bytes: u64) -> Self {
        self.log_segment_bytes = Some(log_segment_bytes);
        self
    }
    pub fn auto_create_topics_enable(mut self, enable: bool) -> Self {
        self.auto_create_topics_enable = Some(enable);
        self
    }
    pub fn data_dir(mut self, data_dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(data_dir.into());
        self
    }
    /// Listens with this security protocol ("SASL_PLAINTEXT").
    pub fn listen_protocol(mut self, protocol: &'static str) -> Self {
        self.listen_protocol = Some(protocol);
        self
    }
    /// Adds `flag value` to the command line, e.g.
    /// `.arg("--group-initial-rebalance-delay-ms", 0)`.
    pub fn arg(mut self, flag: &str, value: impl ToString) -> Self {
        self.extra_args.push(flag.to_string());
        self.extra_args.push(value.to_string());
        self
    }
    /// Compaction held: the cleaner looks every 100 ms but reads nothing
    /// (0 bytes a second) until the test raises
    /// `log.cleaner.io.max.bytes.per.second`.
    pub fn compaction_held(self) -> Self {
        self.arg("--log-cleaner-backoff-ms", 100)
            .arg("--log-cleaner-io-max-bytes-per-second", 0)
    }
}

/// One running (or stopped) broker process. Dropping it SIGKILLs the process,
/// so no broker outlives its test.
pub struct Broker {
    options: BrokerOptions,
    /// Holds the log and, unless the options name one, the data directory.
    scratch: TempDir,
    data_dir: PathBuf,
    port: u16,
    log_path: PathBuf,
    child: Option<Child>,
    starts_count: u32,
}

impl Broker {
    /// Starts a broker on a free loopback port and waits for its ready line.
    ///
    /// # Panics
    /// If the broker exits or stays silent for `READY_TIMEOUT`; the panic
    /// message carries the broker's log.
    pub fn start(options: BrokerOptions) -> Broker {
        let scratch = tempfile::Builder::new()
            .prefix("ringbroker-test-")
            .tempdir()
            .expect("create scratch directory");
        let data_dir = match &options.data_dir {
            Some(dir) => dir.clone(),
            None => scratch.path().join("data"),
        };
        std::fs::create_dir_all(&data_dir).expect("create data directory");
        let log_path = scratch.path().join("broker.log");
        let mut broker = Broker {
            options,
            scratch,
            data_dir,
            port: free_port(),
            log_path,
            child: None,
            starts_count: 0,
        };
        broker.spawn_and_wait_ready();
        broker
    }

    /// Starts a broker with every option at its default.
    pub fn start_default() -> Broker {
        Broker::start(BrokerOptions::default())
    }

    /// `host:port` for a client's `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Everything the broker wrote to stderr, over all its starts.
    pub fn log_contents(&self) -> String {
        std::fs::read(&self.log_path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_else(|error| format!("<cannot read {}: {error}>", self.log_path.display()))
    }

    /// The process id of the running broker.
    ///
    /// # Panics
    /// If the broker is not running.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("broker is not running").id()
    }

    /// True while the broker process has not exited.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            None => false,
            Some(child) => matches!(child.try_wait(), Ok(None)),
        }
    }

    /// Asserts the broker process is still alive.
    pub fn assert_running(&mut self) {
        let status = match self.child.as_mut() {
            None => panic!("broker was stopped by the test, not expected here"),
            Some(child) => child.try_wait().expect("query broker status"),
        };
        if let Some(status) = status {
            panic!("broker process died ({status}); the broker's log is printed below");
        }
    }

    /// SIGKILLs the broker and reaps it: a crash, with nothing flushed that
    /// was not flushed already.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("kill9: broker is not running");
        child.kill().expect("send SIGKILL to broker");
        child.wait().expect("reap broker after SIGKILL");
        self.log_note("harness: broker killed with SIGKILL");
    }

    /// Sends SIGTERM and waits for a clean exit.
    ///
    /// # Panics
    /// If the broker does not exit within `SHUTDOWN_TIMEOUT` or exits with a
    /// status other than 0.
    pub fn terminate(&mut self) {
        let status = self.terminate_status();
        assert!(
            status.success(),
            "broker exited with {status} after SIGTERM, expected 0; the broker's log is printed below"
);
    }

    /// Sends SIGTERM and returns the exit status, whatever it is.
    pub fn terminate_status(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("terminate: broker is not running");
        let pid = Pid::from_raw(child.id() as i32);
        kill(pid, Signal::SIGTERM).expect("send SIGTERM to broker");
        let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().expect("wait for broker") {
                self.log_note(&format!(
                    "harness: broker exited after SIGTERM with {status}"
                ));
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "broker did not exit within {SHUTDOWN_TIMEOUT:?} of SIGTERM; the broker's log is printed below"
);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the broker again on the same port and data directory. A broker
    /// still running is first stopped with SIGTERM (and must exit 0).
    pub fn restart(&mut self) {
        if self.child.is_some() {
            self.terminate();
        }
        self.spawn_and_wait_ready();
    }

    /// Like [`Self::restart`], with `flag value` added to the command line.
    pub fn restart_with_arg(&mut self, flag: &str, value: impl ToString) {
        self.options.extra_args.push(flag.to_string());
        self.options.extra_args.push(value.to_string());
        self.restart();
    }

    /// The command line this harness runs, for messages.
    fn args(&self) -> Vec<String> {
        let mut args = vec![
            "serve".to_string(),
            "--listen".to_string(),
            match self.options.listen_protocol {
                Some(protocol) => format!("{protocol}://{}", self.bootstrap()),
                None => self.bootstrap(),
            },
            "--data-dir".to_string(),
            self.data_dir.display().to_string(),
            "--cores".to_string(),
            self.options.cores.unwrap_or_else(default_cores).to_string(),
            // The test messages carry 2023 timestamps (BASE_TIMESTAMP_MS),
            // which the default retention.ms of 7 days deletes at the first
            // retention check, 30 s after start-up: a test whose broker lives
            // that long would race it. Topics that set retention.ms keep it.
            "--log-retention-ms".to_string(),
            "-1".to_string(),
        ];
        if let Some(n) = self.options.num_partitions {
            args.extend(["--num-partitions".to_string(), n.to_string()]);
        }
        if let Some(n) = self.options.log_segment_bytes {
            args.extend(["--log-segment-bytes".to_string(), n.to_string()]);
        }
        if let Some(enable) = self.options.auto_create_topics_enable {
            args.extend([
                "--auto-create-topics-enable".to_string(),
                enable.to_string(),
            ]);
        }
        args.extend(self.options.extra_args.iter().cloned());
        args
    }

    fn log_note(&self, note: &str) {
        if let Ok(mut log) = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_path)
        {
            let _ = writeln!(log, "==== {note} ====");
        }
    }

    fn spawn_and_wait_ready(&mut self) {
        assert!(self.child.is_none(), "broker is already running");
        self.starts_count += 1;
        let args = self.args();
        self.log_note(&format!(
            "harness: start #{} of ringbroker {}",
            self.starts_count,
            args.join(" ")
        ));
        let mut log = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_path)
            .expect("open broker log");
        let log_offset = log.seek(SeekFrom::End(0)).expect("seek broker log");
        let stdout = log.try_clone().expect("clone broker log handle");
        let mut command = Command::new(env!("CARGO_BIN_EXE_ringbroker"));
        command
            .args(&args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(log));
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        // A broker whose test process was killed outright (so no Drop ran)
        // gets SIGKILL too. The "parent" is the spawning thread, so brokers
        // must be started from the test's own thread, never a short-lived one.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("spawn ringbroker binary");
        self.child = Some(child);
        self.wait_ready(log_offset);
    }

    fn wait_ready(&mut self, log_offset: u64) {
        let ready_line = format!("ringbroker ready on {}", self.bootstrap());
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if self.log_since(log_offset).contains(&ready_line) {
                return;
            }
            let exited = self
                .child
                .as_mut()
                .expect("broker child")
                .try_wait()
                .expect("poll broker");
            if let Some(status) = exited {
                self.child = None;
                panic!(
                    "broker exited with {status} before printing {ready_line:?}; the broker's log is printed below"
);
            }
            if Instant::now() > deadline {
                if let Some(mut child) = self.child.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                panic!(
                    "broker did not print {ready_line:?} within {READY_TIMEOUT:?}; the broker's log is printed below"
);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_since(&self, offset: u64) -> String {
        let mut text = Vec::new();
        if let Ok(mut file) = File::open(&self.log_path) {
            if file.seek(SeekFrom::Start(offset)).is_ok() {
                let _ = file.read_to_end(&mut text);
            }
        }
        String::from_utf8_lossy(&text).into_owned()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "\n======== broker log ({}) ========\n{}\n======== end of broker log ========",
                self.log_path.display(),
                self.log_contents()
            );
        }
    }
}

/// Runs `ringbroker serve` with `args` (a data directory of its own added)
/// and asserts it refuses to start with a message containing `expected`.
pub fn assert_refuses_to_start(args: &[&str], expected: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_ringbroker"))
        .arg("serve")
        .args(args)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .output()
        .expect("run ringbroker");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{args:?} started");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
}

/// A name no earlier run used (a reference broker keeps what tests make).
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos();
    format!("{prefix}-{nanos}")
}

/// A loopback port nobody listens on right now: bind port 0, note what the
/// kernel gave, and close again. Another process could take it in between;
/// with ephemeral ports drawn at random that is rare enough for tests.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// Polls `condition` every 50 ms until it holds or `timeout` passes.
///
/// # Panics
/// On timeout, naming `what`.
pub fn wait_until(timeout: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs an async test body under a deadline, so a hung broker fails the test
/// instead of hanging the suite.
pub async fn with_timeout<T>(timeout: Duration, body: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(timeout, body).await {
        Ok(value) => value,
        Err(_) => panic!("test did not finish within {timeout:?}"),
    }
}

/// A partition directory's `.log` files and their lengths, by name (so in
/// offset order).
pub fn segments(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("listing {}: {error}", dir.display()))
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".log"))
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            Some((name, entry.metadata().ok()?.len()))
        })
        .collect()
}

/// The body of `GET /metrics`.
pub fn scrape_metrics(port: u16) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect metrics");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("send metrics request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read metrics");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// Sum of a counter over its shards.
pub fn metric_sum(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}
