//! Goal: kcat, the command-line client most people try first, works against
//! the broker with two librdkafka generations: Debian's kcat build
//! (librdkafka 2.0.2, which still negotiates features from exact
//! ApiVersions ranges) and the same kcat run on the current librdkafka that
//! the confluent-kafka wheel bundles.
//!
//! Method: for each library, `kcat -L` (text and JSON) must list the broker
//! at its address and a topic created beforehand with its partitions and
//! leader; `kcat -P` with snappy compression must produce keyed lines and
//! `kcat -C -e` must read them back in order. The current library is swapped
//! in by a temporary directory holding a `librdkafka.so.1` symlink to the
//! wheel's copy, put first on LD_LIBRARY_PATH; `kcat -V` proves the swap.
//! Without kcat (or the wheel) the test is skipped with a message, except
//! under CI, where both must be present.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::kafka::create_topic;
use common::{Broker, BrokerOptions};

const DEBIAN_LIBRDKAFKA: &str = "2.0.2";
const KCAT_TIMEOUT: Duration = Duration::from_secs(30);

fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|value| !value.is_empty() && value != "false")
}

fn kcat_present() -> bool {
    Command::new("kcat")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The librdkafka shared object inside the confluent-kafka wheel of the
/// project's venv (`RINGBROKER_VENV`, default `.venv`).
fn bundled_librdkafka() -> Option<PathBuf> {
    let venv = std::env::var_os("RINGBROKER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"));
    let lib = venv.join("lib");
    for python in std::fs::read_dir(&lib).ok()?.flatten() {
        let libs = python
            .path()
            .join("site-packages")
            .join("confluent_kafka.libs");
        let Ok(entries) = std::fs::read_dir(&libs) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("librdkafka") && name.contains(".so") {
                return Some(entry.path());
            }
        }
    }
    None
}

/// Output of one kcat run.
struct Run {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

fn kcat(args: &[&str], stdin: &[u8], library_dir: Option<&Path>) -> Run {
    let mut command = Command::new("kcat");
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = library_dir {
        command.env("LD_LIBRARY_PATH", dir);
    }
    let mut child = command.spawn().expect("spawn kcat");
    let mut child_stdin = child.stdin.take().expect("kcat stdin");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = child_stdin.write_all(&input);
    });
    let mut child_stdout = child.stdout.take().expect("kcat stdout");
    let mut child_stderr = child.stderr.take().expect("kcat stderr");
    let out_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = child_stdout.read_to_string(&mut text);
        text
    });
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = child_stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + KCAT_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for kcat") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stdout = out_reader.join().unwrap_or_default();
            let stderr = err_reader.join().unwrap_or_default();
            panic!("kcat {args:?} ran over {KCAT_TIMEOUT:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = writer.join();
    Run {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}

fn librdkafka_version(library_dir: Option<&Path>) -> String {
    let run = kcat(&["-V"], b"", library_dir);
    let text = format!("{}{}", run.stdout, run.stderr);
    let after = text
        .split("librdkafka ")
        .nth(1)
        .unwrap_or_else(|| panic!("no librdkafka version in kcat -V: {text}"));
    after
        .split_whitespace()
        .next()
        .expect("a version word")
        .to_string()
}

/// Lists, produces and consumes with kcat on `library_dir`'s librdkafka (or
/// the system one).
async fn kcat_round_trip(library_dir: Option<&Path>, label: &str) {
    let broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    let topic = format!("kcat-{label}");
    create_topic(&bootstrap, &topic, 3).await;
    let fail = |what: &str, run: &Run| -> ! {
        panic!(
            "{label}: {what} (exit {})\nstdout:\n{}\nstderr:\n{}",
            run.status, run.stdout, run.stderr
        )
    };

    // kcat -L, text.
    let run = kcat(&["-b", &bootstrap, "-L", "-m", "10"], b"", library_dir);
    if !run.status.success() {
        fail("kcat -L failed", &run);
    }
    if !run.stdout.contains(&bootstrap) {
        fail(
            &format!("kcat -L does not show the broker at {bootstrap}"),
            &run,
        );
    }
    if !run
        .stdout
        .contains(&format!("topic \"{topic}\" with 3 partitions"))
    {
        fail(
            &format!("kcat -L does not show {topic} with 3 partitions"),
            &run,
        );
    }

    // kcat -L -J, checked field by field.
    let run = kcat(
        &["-b", &bootstrap, "-L", "-J", "-m", "10"],
        b"",
        library_dir,
    );
    if !run.status.success() {
        fail("kcat -L -J failed", &run);
    }
    let listing: serde_json::Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|error| fail(&format!("kcat -L -J is not JSON: {error}"), &run));
    let brokers = listing["brokers"].as_array().cloned().unwrap_or_default();
    assert_eq!(brokers.len(), 1, "{label}: brokers in {listing}");
    assert_eq!(
        brokers[0]["name"],
        bootstrap.as_str(),
        "{label}: broker address"
    );
    let broker_id = brokers[0]["id"].clone();
    let topics = listing["topics"].as_array().cloned().unwrap_or_default();
    let listed = topics
        .iter()
        .find(|t| t["topic"] == topic.as_str())
        .unwrap_or_else(|| panic!("{label}: {topic} not in {listing}"));
    let partitions = listed["partitions"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        partitions.len(),
        3,
        "{label}: partitions of {topic}: {listed}"
    );
    for partition in &partitions {
        assert_eq!(
            partition["leader"], broker_id,
            "{label}: leader of {partition}"
        );
    }

    // kcat -P, snappy, keyed, acks=all, then kcat -C back.
    let lines: Vec<String> = (0..50)
        .map(|i| format!("key-{i}:value-{i}-{label}"))
        .collect();
    let input = lines.join("\n") + "\n";
    let run = kcat(
        &[
            "-b", &bootstrap, "-P", "-t", &topic, "-p", "1", "-K", ":", "-z", "snappy", "-X",
            "acks=all",
        ],
        input.as_bytes(),
        library_dir,
    );
    if !run.status.success() || run.stderr.contains("ERROR") {
        fail("kcat -P failed", &run);
    }
    let run = kcat(
        &[
            "-b",
            &bootstrap,
            "-C",
            "-t",
            &topic,
            "-p",
            "1",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%k:%s@%o\n",
        ],
        b"",
        library_dir,
    );
    if !run.status.success() {
        fail("kcat -C failed", &run);
    }
    let expected: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(offset, line)| format!("{line}@{offset}"))
        .collect();
    let got: Vec<&str> = run.stdout.lines().collect();
    if got != expected {
        fail("kcat -C did not read back exactly what kcat -P wrote", &run);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_with_debian_librdkafka_lists_produces_and_consumes() {
    if !kcat_present() {
        assert!(!in_ci(), "kcat is missing; scripts/test installs it");
        eprintln!("SKIPPED: kcat is not installed (scripts/test installs it)");
        return;
    }
    let version = librdkafka_version(None);
    eprintln!("kcat on librdkafka {version}");
    kcat_round_trip(None, "debian").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_with_current_librdkafka_lists_produces_and_consumes() {
    let library = bundled_librdkafka();
    if !kcat_present() || library.is_none() {
        assert!(
            !in_ci(),
            "kcat or the confluent-kafka wheel's librdkafka is missing; scripts/test installs both"
        );
        eprintln!(
            "SKIPPED: kcat or .venv's confluent-kafka is missing (scripts/test installs both)"
        );
        return;
    }
    let library = library.expect("checked above");
    let dir = tempfile::tempdir().expect("temporary directory");
    std::os::unix::fs::symlink(&library, dir.path().join("librdkafka.so.1"))
        .expect("symlink librdkafka.so.1");
    let system = librdkafka_version(None);
    let bundled = librdkafka_version(Some(dir.path()));
    assert_ne!(
        bundled,
        system,
        "LD_LIBRARY_PATH={} did not change kcat's librdkafka",
        dir.path().display()
    );
    assert_ne!(
        bundled, DEBIAN_LIBRDKAFKA,
        "the wheel's librdkafka should be newer"
    );
    eprintln!("kcat on librdkafka {bundled} from {}", library.display());
    kcat_round_trip(Some(dir.path()), "current").await;
}
