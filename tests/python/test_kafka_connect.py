"""A Kafka Connect 4.1.1 distributed worker runs on ringbroker as on Kafka.

Goal: a Connect worker (ConnectDistributed, exactly.once.source.support=
enabled) makes its compacted config, offset and status topics, joins its
group (the classic protocol with the "connect" protocol type), and runs a
FileStreamSource connector whose records and source offsets are written
in transactions, and a FileStreamSink connector. Killed with -9 while the
source is mid-file and started again, the worker fences the dead task's
transactional producer, resumes from the committed file position, and the
topic holds every line exactly once for read_committed readers; the sink
writes every line out.

Method: the worker runs from a classpath Maven resolves from
tests/java/connect/pom.xml, driven through its REST API; confluent-kafka
reads the topic read_committed. The same scenario against a Kafka 4.1.1
KRaft broker on the same machine gave the same outcome and the same
internal topic configs.
"""

import json
import pathlib
import os
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from conftest import Broker, LoggedProcess, free_port, maven_classpath, serve_or_reference

CONNECT_DIR = pathlib.Path(__file__).resolve().parents[1] / "java" / "connect"
LINES = 200_000
# Runs the test against this Kafka instead (RINGBROKER_CONNECT_REFERENCE=host:port).
REFERENCE = os.environ.get("RINGBROKER_CONNECT_REFERENCE")


@pytest.fixture(scope="module")
def connect_classpath(tmp_path_factory):
    return maven_classpath(CONNECT_DIR, tmp_path_factory, "the Kafka Connect tests")


@pytest.fixture(scope="module")
def connect_broker(tmp_path_factory):
    yield from serve_or_reference(
        REFERENCE, lambda: Broker(tmp_path_factory.mktemp("ringbroker-connect"), cores=2))


class Worker(LoggedProcess):
    def __init__(self, classpath, bootstrap, work_dir, tag):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        properties = work_dir / "worker.properties"
        properties.write_text("\n".join([
            f"bootstrap.servers={bootstrap}",
            f"group.id={tag}-cluster",
            "key.converter=org.apache.kafka.connect.storage.StringConverter",
            "value.converter=org.apache.kafka.connect.storage.StringConverter",
            f"config.storage.topic={tag}-configs",
            f"offset.storage.topic={tag}-offsets",
            f"status.storage.topic={tag}-status",
            "config.storage.replication.factor=1",
            "offset.storage.replication.factor=1",
            "status.storage.replication.factor=1",
            f"listeners=http://127.0.0.1:{self.port}",
            "exactly.once.source.support=enabled",
            "offset.flush.interval.ms=1000",
            # A dead worker's tasks are given out again after this.
            "scheduled.rebalance.max.delay.ms=5000",
            # A worker starting reads the offsets topic read_committed up to
            # its end, so a transaction the dead one left open holds it until
            # the transaction times out (60 s by default), on Kafka as here.
            "producer.transaction.timeout.ms=10000",
            "",
        ]))
        super().__init__(
            ["java", "-cp", classpath, "org.apache.kafka.connect.cli.ConnectDistributed", properties],
            work_dir / "worker.log")
        deadline = time.monotonic() + 90
        while True:
            try:
                if "version" in self.get("/"):
                    return
            except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
                pass
            assert self.process.poll() is None, f"the worker exited:\n{self.text()[-5000:]}"
            assert time.monotonic() < deadline, f"the worker did not start:\n{self.text()[-5000:]}"
            time.sleep(0.5)

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return json.loads(response.read())

    def put_connector(self, name, config):
        request = urllib.request.Request(f"{self.url}/connectors/{name}/config", method="PUT",
                                         data=json.dumps(config).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def running(self, name):
        try:
            status = self.get(f"/connectors/{name}/status")
        except urllib.error.HTTPError:
            return False
        return status["connector"]["state"] == "RUNNING" and bool(status["tasks"]) and all(
            task["state"] == "RUNNING" for task in status["tasks"])


def read_committed(bootstrap, topic, expected, timeout=150):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < expected and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=0.5):
                assert message.error() is None, message.error()
                values.append(message.value().decode())
        # Anything written twice would come after the expected count.
        end = time.monotonic() + 3
        while time.monotonic() < end:
            for message in consumer.consume(10_000, timeout=0.5):
                values.append(message.value().decode())
    finally:
        consumer.close()
    return values


# Two worker start-ups, a rebalance after the dead one's session ends, a
# transaction timeout and 200,000 lines read twice: about 45 s alone, more
# than the 120 s default on a loaded CI machine (it once ran out there).
@pytest.mark.timeout(300)
def test_connect_exactly_once_source_survives_a_killed_worker(connect_classpath, connect_broker, tmp_path):
    bootstrap = connect_broker.bootstrap
    tag = f"connect-{uuid.uuid4().hex[:8]}"
    topic = f"{tag}-lines"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # One partition: read back in file order.
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    source_file = tmp_path / "in.txt"
    sink_file = tmp_path / "out.txt"
    lines = [f"line-{i}" for i in range(LINES)]
    source_file.write_text("".join(f"{line}\n" for line in lines))
    (tmp_path / "first").mkdir()
    worker = Worker(connect_classpath, bootstrap, tmp_path / "first", tag)
    try:
        worker.put_connector("source", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source_file), "topic": topic, "tasks.max": "1",
            # Small polls and transactions, so the kill finds the file half read.
            "batch.size": "500", "transaction.boundary": "poll"})
        deadline = time.monotonic() + 60
        while not worker.running("source"):
            assert time.monotonic() < deadline, worker.text()[-5000:]
            time.sleep(0.2)
        # Mid-file: some lines are in the topic, not all.
        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "connect-probe"})
        while probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1] < LINES // 10:
            assert time.monotonic() < deadline, worker.text()[-5000:]
            time.sleep(0.05)
        print(f"{time.strftime('%T')} killing the first worker", flush=True)
        worker.kill()
        worker.stop()  # closes its log
        high = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        probe.close()
        assert high < LINES, "the source finished before the kill"

        (tmp_path / "second").mkdir()
        worker = Worker(connect_classpath, bootstrap, tmp_path / "second", tag)
        worker.put_connector("sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file), "topics": topic, "tasks.max": "1"})
        print(f"{time.strftime('%T')} second worker up; reading {topic} read_committed", flush=True)
        read = read_committed(bootstrap, topic, LINES)
        assert len(read) == LINES, (
            f"{len(read)} of {LINES} lines read committed; the second worker's log:\n"
            f"{worker.text()[-8000:]}")
        assert read == lines

        deadline = time.monotonic() + 60
        while not (sink_file.exists() and len(sink_file.read_text().splitlines()) >= LINES):
            assert time.monotonic() < deadline, worker.text()[-5000:]
            time.sleep(0.5)
        assert sorted(set(sink_file.read_text().splitlines())) == sorted(lines)
        assert worker.running("source") and worker.running("sink")

        # The worker's topics, as Kafka 4.1.1 shows them.
        for name, partitions in [("configs", 1), ("offsets", 25), ("status", 5)]:
            internal = f"{tag}-{name}"
            resource = ConfigResource("topic", internal)
            configs = admin.describe_configs([resource])[resource].result()
            set_ = {name: entry.value for name, entry in configs.items()
                    if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
            assert set_ == {"cleanup.policy": "compact"}, internal
            assert len(admin.list_topics(internal, timeout=10).topics[internal].partitions) == partitions, internal
    finally:
        worker.stop()
