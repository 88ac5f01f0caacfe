"""Kafka Streams 4.1.1 applications run on ringbroker as on Kafka.

Goal: a Streams application (tests/java/streams/StreamsApp.java: a word
count, an hourly windowed word count and a count per category looked up
through a GlobalKTable, each in a RocksDB store with a changelog, reached
through a repartition topic) gets exactly the counts its input implies with
processing.guarantee=exactly_once_v2, whatever is killed with -9 on the way:
the application itself (it restarts from its transactional commits and
restores its stores from the changelogs), one of two instances sharing the
work (the other takes its tasks over once its open transaction is aborted),
or the broker. Streams makes its internal topics with the configs Kafka 4.1.1
ends up with (compared whole with DescribeConfigs there) and deletes what it
has read from its repartition topics.

Method: confluent-kafka writes lines (idempotent, acks=all) and reads the
three output topics read_committed, keeping the last count per key; the
expected counts are computed from the lines written. The same scenarios,
run against a Kafka 4.1.1 KRaft broker on the same machine, gave the same
counts and topic configs (RINGBROKER_STREAMS_REFERENCE=host:port runs the
first two tests against such a broker).
"""

import collections
import os
import pathlib
import re
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from conftest import Broker, LoggedProcess, maven_classpath, serve_or_reference

STREAMS_DIR = pathlib.Path(__file__).resolve().parents[1] / "java" / "streams"
WORDS = [f"w{i}" for i in range(50)]
CATEGORY = {word: f"c{i % 5}" for i, word in enumerate(WORDS)}
HOUR_MS = 3_600_000
# Runs the tests that need no broker of their own against this Kafka instead.
REFERENCE = os.environ.get("RINGBROKER_STREAMS_REFERENCE")


@pytest.fixture(scope="module")
def streams_classpath(tmp_path_factory):
    return maven_classpath(STREAMS_DIR, tmp_path_factory, "the Kafka Streams tests")


@pytest.fixture(scope="module")
def streams_broker(tmp_path_factory):
    # Two shards: the partitions, group coordinator and transaction
    # coordinators of an application spread over both.
    yield from serve_or_reference(
        REFERENCE, lambda: Broker(tmp_path_factory.mktemp("ringbroker-streams"), cores=2))


@pytest.fixture
def broker(streams_broker):
    streams_broker.assert_alive()
    yield streams_broker


class App(LoggedProcess):
    """One instance of the Streams application, its output in `log_path`."""

    def __init__(self, classpath, bootstrap, names, state_dir, log_path):
        super().__init__(
            ["java", "-cp", classpath, STREAMS_DIR / "StreamsApp.java", bootstrap, names.app,
             names.lines, names.dictionary, names.out, "exactly_once_v2", state_dir],
            log_path)

    def wait_for(self, pattern, timeout=60, start=0):
        """The first match of `pattern` in the output after offset `start`."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.compile(pattern, re.M).search(self.text(), start)
            if match:
                return match
            assert self.process.poll() is None, f"the application exited:\n{self.text()[-5000:]}"
            assert time.monotonic() < deadline, f"no {pattern!r} in {timeout} s:\n{self.text()[-5000:]}"
            time.sleep(0.2)

    def assert_no_errors(self):
        assert "ERROR " not in self.text() and "Exception in thread" not in self.text(), self.text()[-5000:]


class Names:
    def __init__(self, tag):
        self.app = f"streams-{tag}"
        self.lines = f"{tag}-lines"
        self.dictionary = f"{tag}-dictionary"
        self.out = f"{tag}-counts"
        self.outputs = [self.out, f"{self.out}-hourly", f"{self.out}-categories"]


class Scenario:
    """The topics of one application, the lines written to them and the
    counts those lines imply."""

    def __init__(self, bootstrap, tag):
        self.bootstrap = bootstrap
        self.names = Names(tag)
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        n = self.names
        topics = [NewTopic(n.lines, 4, 1), NewTopic(n.dictionary, 3, 1, config={"cleanup.policy": "compact"}),
                  NewTopic(n.outputs[0], 2, 1), NewTopic(n.outputs[1], 2, 1), NewTopic(n.outputs[2], 1, 1)]
        for future in self.admin.create_topics(topics).values():
            future.result()
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        for word, category in CATEGORY.items():
            self.producer.produce(n.dictionary, key=word, value=category)
        self.producer.flush()
        self.expected = {topic: collections.Counter() for topic in n.outputs}
        self.written = 0
        # Timestamps from 20 minutes ago, 100 ms apart: the hourly windows
        # are young enough for retention.ms and the broker's timestamp
        # checks.
        self.base_ms = int(time.time() * 1000) - 1_200_000
        self.reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{tag}-reader",
                                "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        self.reader.subscribe(n.outputs)
        self.seen = {topic: {} for topic in n.outputs}

    def write(self, count):
        out, hourly, categories = self.names.outputs
        for i in range(self.written, self.written + count):
            words = [WORDS[(i * 7 + j) % len(WORDS)] for j in range(i % 5 + 1)]
            timestamp = self.base_ms + i * 100
            for word in words:
                self.expected[out][word] += 1
                self.expected[hourly][f"{word}@{timestamp - timestamp % HOUR_MS}"] += 1
                self.expected[categories][CATEGORY[word]] += 1
            self.producer.produce(self.names.lines, key=str(i), value=" ".join(words), timestamp=timestamp)
        self.producer.flush()
        self.written += count

    def wait_for_exact_counts(self, timeout=120):
        """Reads the outputs until the last count of every key is the
        expected one; fails on a count above it at any time (counted twice)
        or on missing counts at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.reader.poll(0.5)
            if message is None:
                if all(self.seen[topic] == dict(self.expected[topic]) for topic in self.seen):
                    return
                if time.monotonic() > deadline:
                    differences = {
                        topic: {key: (self.seen[topic].get(key), want)
                                for key, want in self.expected[topic].items() if self.seen[topic].get(key) != want}
                        for topic in self.seen}
                    pytest.fail(f"counts after {timeout} s (seen, expected): {differences}")
                continue
            assert message.error() is None, message.error()
            key = message.key().decode()
            count = int.from_bytes(message.value(), "big")
            assert count <= self.expected[message.topic()][key], \
                f"{message.topic()} {key}: {count} > {self.expected[message.topic()][key]}: counted twice"
            self.seen[message.topic()][key] = count

    def close(self):
        self.reader.close()


def start_app(classpath, scenario, tmp_path, name):
    return App(classpath, scenario.bootstrap, scenario.names, tmp_path / f"state-{name}", tmp_path / f"{name}.log")


def test_streams_counts_stay_exact_when_the_application_is_killed(streams_classpath, broker, tmp_path):
    scenario = Scenario(broker.bootstrap, "killed-app")
    scenario.write(2000)
    app = start_app(streams_classpath, scenario, tmp_path, "app")
    try:
        app.wait_for("^STATE RUNNING")
        scenario.wait_for_exact_counts()
        scenario.write(2000)
        time.sleep(1.5)
        app.kill()
        scenario.write(1000)
        # The same state directory: the same process id, so the same
        # transactional ids, and the zombie's open transaction is fenced at
        # once. Under exactly_once_v2 the stores were not checkpointed, so
        # they are restored from the changelogs.
        app = start_app(streams_classpath, scenario, tmp_path, "app")
        scenario.wait_for_exact_counts()
        app.assert_no_errors()

        names = scenario.names
        admin = scenario.admin
        internal = sorted(topic for topic in admin.list_topics(timeout=10).topics
                          if topic.startswith(names.app + "-"))
        assert internal == [f"{names.app}-{store}-{kind}" for store in ("categories", "counts", "hourly")
                            for kind in ("changelog", "repartition")]
        # The configs Streams gives them, as Kafka 4.1.1 shows them
        # (DescribeConfigs entries of source DYNAMIC_TOPIC_CONFIG).
        changelog = {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
        repartition = {"cleanup.policy": "delete", "message.timestamp.type": "CreateTime",
                       "retention.ms": "-1", "segment.bytes": "52428800"}
        windowed_changelog = {**changelog, "cleanup.policy": "compact,delete",
                              # the windows' 2 h (size and grace) and a day of
                              # windowstore.changelog.additional.retention.ms
                              "retention.ms": "93600000"}
        for topic in internal:
            resource = ConfigResource("topic", topic)
            configs = admin.describe_configs([resource])[resource].result()
            set_ = {name: entry.value for name, entry in configs.items()
                    if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
            want = (repartition if topic.endswith("repartition")
                    else windowed_changelog if "hourly" in topic else changelog)
            assert set_ == want, topic
            assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 4, topic

        # Streams deletes what it has read from the repartition topics
        # (DeleteRecords every repartition.purge.interval.ms, 1 s here).
        # The five categories leave a partition of theirs empty.
        for topic in (t for t in internal if t.endswith("repartition")):
            def unpurged():
                watermarks = [scenario.reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                              for p in range(4)]
                assert sum(high for _, high in watermarks) > 0
                return [(p, low, high) for p, (low, high) in enumerate(watermarks) if high > 0 and low == 0]
            deadline = time.monotonic() + 30
            while unpurged():
                assert time.monotonic() < deadline, f"{topic} not purged: {unpurged()}"
                time.sleep(0.5)
    finally:
        app.stop()
        scenario.close()


def test_streams_tasks_move_to_the_instance_that_survives(streams_classpath, broker, tmp_path):
    scenario = Scenario(broker.bootstrap, "two-instances")
    scenario.write(1000)
    first = start_app(streams_classpath, scenario, tmp_path, "first")
    second = None
    try:
        first.wait_for("^TASKS ")
        scenario.wait_for_exact_counts()
        mark = len(first.text())
        second = start_app(streams_classpath, scenario, tmp_path, "second")
        # The two share the 16 tasks (4 partitions of the lines and of each
        # of the three repartition topics) once the rebalance settles.
        tasks_second = second.wait_for(r"^TASKS (.+)$").group(1).split(",")
        deadline = time.monotonic() + 60
        while True:
            runs = re.findall(r"^TASKS (.*)$", first.text()[mark:], re.M)
            runs_second = re.findall(r"^TASKS (.*)$", second.text(), re.M)
            if runs and runs_second:
                tasks_first = [t for t in runs[-1].split(",") if t]
                tasks_second = [t for t in runs_second[-1].split(",") if t]
                if tasks_first and tasks_second and len(tasks_first) + len(tasks_second) == 16:
                    break
            assert time.monotonic() < deadline, f"tasks not shared:\n{first.text()[mark:][-3000:]}"
            time.sleep(0.5)
        assert not set(tasks_first) & set(tasks_second)
        scenario.write(1000)
        scenario.wait_for_exact_counts()

        # The first dies with a transaction open; the second gets its tasks
        # after session.timeout.ms (10 s) and reads them from where the
        # first last committed, once the open transaction is aborted
        # (transaction.timeout.ms, 10 s under exactly_once_v2).
        scenario.write(1000)
        time.sleep(1)
        first.kill()
        scenario.write(1000)
        scenario.wait_for_exact_counts(timeout=150)
        assert len(re.findall(r"^TASKS (.*)$", second.text(), re.M)[-1].split(",")) == 16
        second.assert_no_errors()
    finally:
        first.stop()
        if second is not None:
            second.stop()
        scenario.close()


@pytest.mark.skipif(bool(REFERENCE), reason="kills a ringbroker of its own")
def test_streams_counts_stay_exact_when_the_broker_is_killed(streams_classpath, tmp_path):
    broker = Broker(tmp_path / "broker", cores=2)
    broker.start()
    app = None
    try:
        scenario = Scenario(broker.bootstrap, "killed-broker")
        scenario.write(2000)
        app = start_app(streams_classpath, scenario, tmp_path, "app")
        app.wait_for("^STATE RUNNING")
        scenario.wait_for_exact_counts()
        # kill -9 in the middle of the application's transactions; what
        # the broker acknowledged (acks=all) is on disk.
        scenario.write(2000)
        time.sleep(1)
        broker.kill()
        time.sleep(2)
        broker.start()
        scenario.write(1000)
        scenario.wait_for_exact_counts(timeout=180)
        app.assert_no_errors()
        scenario.close()
    finally:
        if app is not None:
            app.stop()
        broker.stop()
        broker.kill()
