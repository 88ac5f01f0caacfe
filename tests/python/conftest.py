"""Fixtures for the Python client tests.

One broker process (the release binary: RINGBROKER_BIN, default
target/release/ringbroker) serves the whole session on a free loopback port
with a temporary data directory; each test works on topics of its own.
Before each test the fixture checks that the broker still runs; when a test
fails, the tail of the broker's log is attached to the report.
"""

import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BROKER_BIN = pathlib.Path(os.environ.get("RINGBROKER_BIN", ROOT / "target" / "release" / "ringbroker"))
READY_TIMEOUT_S = 30
SHUTDOWN_TIMEOUT_S = 30
# Partitions of auto-created topics.
DEFAULT_PARTITIONS = 2
# The test messages carry 2023 timestamps (messages.py), which Kafka's
# default retention.ms of 7 days deletes at the first retention check, 30 s
# after start-up and every 5 minutes after: a read racing it finds the log
# start moved past what it wrote. Brokers of the tests keep data forever
# unless a topic sets its own retention.ms.
RETENTION_ARGS = ["--log-retention-ms", "-1"]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Broker:
    """A ringbroker process with its log in `log_path`."""

    def __init__(self, work_dir: pathlib.Path, extra_args=(), cores=1, listen_protocol=None):
        self.extra_args = list(extra_args)
        # "SASL_PLAINTEXT" for a listener clients must authenticate on.
        self.listen_protocol = listen_protocol
        self.cores = cores
        self.port = free_port()
        self.data_dir = work_dir / "data"
        self.data_dir.mkdir(parents=True)
        self.log_path = work_dir / "broker.log"
        self.process = None

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        if not BROKER_BIN.exists():
            pytest.fail(f"{BROKER_BIN} does not exist: run `cargo build --release` or set RINGBROKER_BIN")
        args = [
            str(BROKER_BIN), "serve",
            "--listen", f"{self.listen_protocol}://{self.bootstrap}" if self.listen_protocol else self.bootstrap,
            "--data-dir", str(self.data_dir),
            "--cores", str(self.cores),
            "--num-partitions", str(DEFAULT_PARTITIONS),
            *RETENTION_ARGS,
            *self.extra_args,
        ]
        log = open(self.log_path, "ab")
        log.write(f"==== pytest: {' '.join(args)} ====\n".encode())
        log.flush()
        offset = log.tell()
        env = dict(os.environ, NO_COLOR="1")
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        log.close()
        ready = f"ringbroker ready on {self.bootstrap}"
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                if ready in f.read().decode(errors="replace"):
                    return
            if self.process.poll() is not None:
                pytest.fail(f"broker exited with {self.process.returncode} before it was ready:\n{self.log_text()}")
            if time.monotonic() > deadline:
                self.process.kill()
                self.process.wait()
                pytest.fail(f"broker not ready after {READY_TIMEOUT_S} s:\n{self.log_text()}")
            time.sleep(0.02)

    def stop(self):
        """SIGTERM; the broker must exit 0."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=SHUTDOWN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"broker ignored SIGTERM for {SHUTDOWN_TIMEOUT_S} s:\n{self.log_tail()}")
        assert code == 0, f"broker exited with {code} after SIGTERM:\n{self.log_tail()}"

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def assert_alive(self):
        if self.process is None or self.process.poll() is not None:
            code = None if self.process is None else self.process.returncode
            pytest.fail(f"broker process is gone (exit {code}):\n{self.log_tail()}")

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError as error:
            return f"<cannot read {self.log_path}: {error}>"

    def log_tail(self, lines=200):
        return "\n".join(self.log_text().splitlines()[-lines:])


def serve(broker):
    """For fixtures: starts `broker`, yields it, then stops it (SIGTERM, exit
    0 required) and kills it if it is still running."""
    broker.start()
    try:
        yield broker
        broker.stop()
    finally:
        broker.kill()


class LoggedProcess:
    """A client program (a Kafka Streams application, a Connect worker)
    running with its output in `log_path`."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen([str(a) for a in args], stdout=self.log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def text(self):
        return self.log_path.read_text(errors="replace")

    def kill(self):
        """kill -9."""
        self.process.kill()
        self.process.wait()

    def stop(self, timeout=40):
        """SIGTERM, and kill -9 after `timeout` seconds."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


class Reference:
    """A Kafka broker started elsewhere, standing in for a ringbroker."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def assert_alive(self):
        pass


def serve_or_reference(reference, make_broker):
    """For fixtures: yields a Reference to `reference` (host:port) when it
    is set, else serves the broker `make_broker()` makes."""
    if reference:
        yield Reference(reference)
        return
    yield from serve(make_broker())


@pytest.fixture(scope="session")
def broker_process(tmp_path_factory):
    yield from serve(Broker(tmp_path_factory.mktemp("ringbroker")))


@pytest.fixture
def broker(broker_process):
    """The session's broker, checked to be alive before the test."""
    broker_process.assert_alive()
    yield broker_process


def kafka_python_round_trip(topic, partition=0, count=50, **settings):
    """kafka-python, made with `settings`, produces `count` values to
    `partition` of `topic` and reads them back from offset 0; asserts the
    offsets and values are what was sent."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(max_block_ms=10000, **settings)
    try:
        sent = [producer.send(topic, value=f"v{i}".encode(), partition=partition) for i in range(count)]
        producer.flush(timeout=30)
        offsets = [future.get(timeout=30).offset for future in sent]
    finally:
        producer.close(timeout=10)
    assert offsets == list(range(count))
    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100, **settings)
    try:
        assigned = TopicPartition(topic, partition)
        consumer.assign([assigned])
        consumer.seek(assigned, 0)
        values = []
        deadline = time.monotonic() + 30
        while len(values) < count:
            assert time.monotonic() < deadline, f"read {len(values)} of {count}"
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(r.value for r in records)
    finally:
        consumer.close()
    assert values == [f"v{i}".encode() for i in range(count)]


_topic_counter = 0


@pytest.fixture
def topic(request):
    """A topic name no other test uses."""
    global _topic_counter
    _topic_counter += 1
    name = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")
    return f"{name[:180]}-{_topic_counter}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        broker = item.funcargs.get("broker")
        if broker is not None:
            alive = broker.process is not None and broker.process.poll() is None
            report.sections.append(
                (f"broker log tail (process {'alive' if alive else 'dead'})", broker.log_tail())
            )


def maven_classpath(pom_dir, tmp_path_factory, needed_for):
    """The classpath Maven resolves from `pom_dir`/pom.xml (once per
    caller's scope); the test is skipped where `java` or `mvn` is missing."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip(f"java and mvn are needed for {needed_for}")
    output = tmp_path_factory.mktemp("classpath") / "classpath.txt"
    subprocess.run(
        ["mvn", "-q", "-B", "-f", str(pom_dir / "pom.xml"), "dependency:build-classpath",
         f"-Dmdep.outputFile={output}"],
        check=True, timeout=600,
    )
    return output.read_text().strip()


def run_json_program(args, env=None, timeout=180):
    """Runs a client program that prints what it saw as JSON on its last
    line; asserts it exited 0 and answers that JSON."""
    completed = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                               env=None if env is None else {**os.environ, **env})
    assert completed.returncode == 0, f"{args[:3]} failed:\n{completed.stdout}\n{completed.stderr}"
    return json.loads(completed.stdout.strip().splitlines()[-1])
