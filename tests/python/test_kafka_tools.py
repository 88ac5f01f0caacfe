"""Apache Kafka's own command-line tools (kafka-tools 4.1.1) against ringbroker.

Goal: an operator's scripts built on Kafka's tools print the same against
ringbroker as against Kafka: kafka-topics (create with a config, create
again, describe, add partitions, refuse to shrink, describe a missing
topic, list, delete), kafka-console-producer with keys and
kafka-console-consumer in a group, kafka-get-offsets (latest, earliest),
kafka-consumer-groups (describe with lag, --state, --members, reset
offsets by every method, delete offsets, delete the group and a missing
one), kafka-transactions (describe, describe-producers, find-hanging, and
abort of an open transaction, which read_committed readers then skip
while its producer still commits), kafka-delete-records, kafka-leader-election, kafka-reassign-partitions
--list, kafka-acls --list without an authorizer, kafka-cluster cluster-id
and unregister.

Method: each tool runs as its main class (what the .sh scripts run) on a
classpath Maven resolves from tests/tools/pom.xml, on a fresh topic; its
output (stdout and stderr, without logging noise and stack frames) is
normalized where two clusters must differ (node ids, topic and cluster ids,
addresses) and compared whole. The expected text is what the same steps
printed against Apache Kafka 4.1.1 (KRaft, single node, with
log.retention.ms=-1 as the tests' broker has it):
RINGBROKER_TOOLS_REFERENCE=host:port runs this file against such a Kafka.
Skipped only where `java` or `mvn` is not installed.
"""

import json
import os
import pathlib
import re
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from conftest import maven_classpath

TOOLS_DIR = pathlib.Path(__file__).resolve().parents[1] / "tools"
REFERENCE = os.environ.get("RINGBROKER_TOOLS_REFERENCE")


@pytest.fixture(scope="module")
def classpath(tmp_path_factory):
    return maven_classpath(TOOLS_DIR, tmp_path_factory, "the Kafka tools tests")


@pytest.fixture
def bootstrap(request):
    if REFERENCE:
        return REFERENCE
    return request.getfixturevalue("broker").bootstrap


@pytest.fixture
def fresh(topic):
    """A topic name no run has used: Kafka keeps what earlier runs made."""
    return f"{topic}-{uuid.uuid4().hex[:6]}" if REFERENCE else topic


NOISE = re.compile(r"^(SLF4J: |\tat |\t\.\.\. \d+ more|WARNING: )")


def normalize(text, bootstrap):
    text = text.replace(bootstrap, "BOOTSTRAP")
    text = re.sub(r"\b(Leader|Replicas|Isr): \d+", r"\1: N", text)
    text = re.sub(r"BOOTSTRAP \s*\(\d+\)", "BOOTSTRAP (N)", text)
    text = re.sub(r"TopicId: [A-Za-z0-9_-]{22}", "TopicId: ID", text)
    text = re.sub(r"Cluster ID: \S+", "Cluster ID: C", text)
    return "\n".join(line.rstrip() for line in text.splitlines() if not NOISE.match(line))


def tool(classpath, bootstrap, main, *args, stdin=None, command=()):
    """Runs Kafka tool `main` (a class name under org.apache.kafka.tools),
    its `command` words first, with `args`; answers its exit status and
    normalized output."""
    completed = subprocess.run(
        ["java", "-cp", classpath, f"org.apache.kafka.tools.{main}", *command, "--bootstrap-server", bootstrap,
         *args],
        input=stdin, capture_output=True, text=True, timeout=120,
    )
    return completed.returncode, normalize(completed.stdout + completed.stderr, bootstrap)


def test_kafka_topics_manages_a_topics_life_like_kafka(classpath, bootstrap, fresh):
    topic = fresh
    topics = lambda *args: tool(classpath, bootstrap, "TopicCommand", *args)  # noqa: E731
    assert topics("--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1",
                  "--config", "retention.ms=86400000") == (0, f"Created topic {topic}.")
    assert topics("--create", "--topic", topic, "--partitions", "3") == (
        1, f"Error while executing topic command : Topic '{topic}' already exists.")
    described = "\n".join(
        [f"Topic: {topic}\tTopicId: ID\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: "
         "min.insync.replicas=1,retention.ms=86400000"]
        + [f"\tTopic: {topic}\tPartition: {p}\tLeader: N\tReplicas: N\tIsr: N\tElr: \tLastKnownElr:"
           for p in range(3)])
    assert topics("--describe", "--topic", topic) == (0, described)
    assert topics("--alter", "--topic", topic, "--partitions", "4") == (0, "")
    assert topics("--alter", "--topic", topic, "--partitions", "2") == (
        1, "Error while executing topic command : The topic "
           f"{topic} currently has 4 partition(s); 2 would not be an increase.")
    assert topics("--describe", "--topic", f"{topic}-missing") == (
        1, f"Error while executing topic command : Topic '{topic}-missing' does not exist as expected")
    assert topics("--list", "--topic", topic) == (0, topic)
    assert topics("--delete", "--topic", topic) == (0, "")
    assert topics("--list", "--topic", topic) == (0, "")


def test_console_clients_and_kafka_consumer_groups_like_kafka(classpath, bootstrap, fresh):
    topic = fresh
    group = f"{topic}-g"
    assert tool(classpath, bootstrap, "TopicCommand", "--create", "--topic", topic,
                "--partitions", "3")[0] == 0
    # Keyed records: the default partitioner puts each key where Kafka's does.
    records = "".join(f"k{i}:v{i}\n" for i in range(300))
    assert tool(classpath, bootstrap, "ConsoleProducer", "--topic", topic,
                "--property", "parse.key=true", "--property", "key.separator=:", stdin=records) == (0, "")
    assert tool(classpath, bootstrap, "GetOffsetShell", "--topic", topic) == (
        0, f"{topic}:0:98\n{topic}:1:95\n{topic}:2:107")
    assert tool(classpath, bootstrap, "GetOffsetShell", "--topic", topic, "--time", "-2") == (
        0, f"{topic}:0:0\n{topic}:1:0\n{topic}:2:0")
    status, consumed = tool(
        classpath, bootstrap, "consumer.ConsoleConsumer", "--topic", topic, "--group", group,
        "--from-beginning", "--max-messages", "300", "--timeout-ms", "30000",
        "--property", "print.key=true", "--property", "print.partition=true",
        "--property", "print.offset=true")
    lines = consumed.splitlines()
    assert (status, lines[-1]) == (0, "Processed a total of 300 messages")
    assert len(set(lines[:-1])) == 300
    offsets = {}
    for line in lines[:-1]:
        partition, offset, key, value = line.split("\t")
        offsets.setdefault(partition, []).append(int(offset.split(":")[1]))
        assert value == "v" + key[1:]
    assert {p: sorted(o) for p, o in offsets.items()} == {
        "Partition:0": list(range(98)), "Partition:1": list(range(95)), "Partition:2": list(range(107))}

    def groups(*args):
        """The tool's status and its lines as words (column widths follow
        the names), rows in partition order (Java prints them in hash order)."""
        status, text = tool(classpath, bootstrap, "consumer.group.ConsumerGroupCommand", *args)
        lines = [line.split() for line in text.splitlines() if line]
        return status, sorted(lines, key=lambda cells: (cells[:1] != [group], cells))

    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
              "HOST", "CLIENT-ID"]
    inactive = ["Consumer", "group", f"'{group}'", "has", "no", "active", "members."]

    def row(p, current, end):
        return [group, topic, str(p), str(current), str(end), str(end - current), "-", "-", "-"]

    assert groups("--describe", "--group", group) == (0, [
        row(0, 98, 98), row(1, 95, 95), row(2, 107, 107), inactive, header])
    assert groups("--describe", "--group", group, "--state") == (0, [
        [group, "BOOTSTRAP", "(N)", "-", "Empty", "0"], inactive,
        ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]])
    assert groups("--describe", "--group", group, "--members") == (0, [
        inactive, ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]])
    reset = ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert groups("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--dry-run") == (0, [
        [group, topic, "0", "0"], [group, topic, "1", "0"], [group, topic, "2", "0"], reset])
    assert groups("--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--to-offset", "5",
                  "--execute") == (0, [[group, topic, "0", "5"], reset])
    assert groups("--reset-offsets", "--group", group, "--topic", topic, "--shift-by", "-10", "--execute") == (0, [
        [group, topic, "0", "0"], [group, topic, "1", "85"], [group, topic, "2", "97"], reset])
    assert groups("--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-datetime",
                  "2000-01-01T00:00:00.000", "--execute") == (0, [[group, topic, "1", "0"], reset])
    assert groups("--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-latest",
                  "--execute") == (0, [[group, topic, "1", "95"], reset])
    assert groups("--delete-offsets", "--group", group, "--topic", f"{topic}:1") == (0, [
        ["Request", "succeeded", "for", "deleting", "offsets", "from", "group", f"{group}."],
        ["TOPIC", "PARTITION", "STATUS"], [topic, "1", "Successful"]])
    assert groups("--describe", "--group", group) == (0, [
        row(0, 0, 98), row(2, 97, 107), inactive, header])
    status, listed = tool(classpath, bootstrap, "consumer.group.ConsumerGroupCommand", "--list")
    assert status == 0 and group in listed.splitlines()
    assert tool(classpath, bootstrap, "consumer.group.ConsumerGroupCommand", "--delete", "--group", group) == (
        0, f"Deletion of requested consumer groups ('{group}') was successful.")
    assert tool(classpath, bootstrap, "consumer.group.ConsumerGroupCommand", "--delete", "--group", group) == (
        0, f"\nError: Deletion of some consumer groups failed:\n* Group '{group}' could not be deleted due to: "
           "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.")


def test_records_leaders_reassignments_acls_and_the_cluster_like_kafka(classpath, bootstrap, fresh, tmp_path):
    topic = fresh
    assert tool(classpath, bootstrap, "TopicCommand", "--create", "--topic", topic,
                "--partitions", "2")[0] == 0
    records = "".join(f"k{i}:v{i}\n" for i in range(20))
    assert tool(classpath, bootstrap, "ConsoleProducer", "--topic", topic,
                "--property", "parse.key=true", "--property", "key.separator=:", stdin=records) == (0, "")
    offsets = tmp_path / "delete.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 3}], "version": 1}))
    assert tool(classpath, bootstrap, "DeleteRecordsCommand", "--offset-json-file", str(offsets)) == (0, "\n".join([
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 3"]))
    assert tool(classpath, bootstrap, "GetOffsetShell", "--topic", topic, "--time", "-2") == (
        0, f"{topic}:0:3\n{topic}:1:0")
    assert tool(classpath, bootstrap, "LeaderElectionCommand", "--election-type", "preferred",
                "--topic", topic, "--partition", "0") == (
        0, f"Valid replica already elected for partitions {topic}-0")
    assert tool(classpath, bootstrap, "reassign.ReassignPartitionsCommand", "--list") == (
        0, "No partition reassignments found.")
    assert tool(classpath, bootstrap, "AclCommand", "--list") == (
        1, "Error while executing ACL command: org.apache.kafka.common.errors.SecurityDisabledException: "
           "No Authorizer is configured on the broker\n"
           "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.SecurityDisabledException: "
           "No Authorizer is configured on the broker\n"
           "Caused by: org.apache.kafka.common.errors.SecurityDisabledException: No Authorizer is configured on "
           "the broker\n")
    assert tool(classpath, bootstrap, "ClusterTool", command=["cluster-id"]) == (0, "Cluster ID: C")
    status, unregistered = tool(classpath, bootstrap, "ClusterTool", "--id", "5", command=["unregister"])
    assert (status, unregistered.splitlines()[0]) == (
        1, "org.apache.kafka.common.errors.BrokerIdNotRegisteredException: Broker ID 5 is not currently registered")


def table(text):
    """A kafka-transactions table as one dict per row, cells stripped."""
    lines = [line.split("\t") for line in text.splitlines() if line]
    header = [cell.strip() for cell in lines[0]]
    return [dict(zip(header, (cell.strip() for cell in row))) for row in lines[1:]]


def test_kafka_transactions_describes_and_aborts_an_open_transaction_like_kafka(classpath, bootstrap, fresh):
    topic = fresh
    txn = lambda *args: tool(classpath, bootstrap, "TransactionsCommand", *args)  # noqa: E731
    assert tool(classpath, bootstrap, "TopicCommand", "--create", "--topic", topic, "--partitions", "1")[0] == 0
    assert tool(classpath, bootstrap, "ConsoleProducer", "--topic", topic, stdin="a\nb\n") == (0, "")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx",
                         "transaction.timeout.ms": 60000})
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=f"x{i}".encode(), partition=0)
    producer.flush()

    status, described = txn("describe", "--transactional-id", f"{topic}-tx")
    [row] = table(described)
    assert status == 0
    assert {k: row[k] for k in ("TransactionalId", "ProducerEpoch", "TransactionState", "TransactionTimeoutMs",
                                "TopicPartitions")} == {
        "TransactionalId": f"{topic}-tx", "ProducerEpoch": "0", "TransactionState": "Ongoing",
        "TransactionTimeoutMs": "60000", "TopicPartitions": f"{topic}-0"}
    transactional_id = row["ProducerId"]
    status, producers = txn("describe-producers", "--topic", topic, "--partition", "0")
    fields = ("ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "CurrentTransactionStartOffset")
    by_id = {r["ProducerId"]: [r[k] for k in fields] for r in table(producers)}
    assert status == 0 and sorted(by_id.values()) == [["0", "-1", "1", "None"], ["0", "-1", "2", "2"]]
    assert by_id[transactional_id] == ["0", "-1", "2", "2"]
    # The coordinator knows the transaction: nothing hangs.
    assert txn("find-hanging", "--topic", topic, "--max-transaction-timeout", "0") == (
        0, "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\t"
           "Duration(min)")
    assert txn("abort", "--topic", topic, "--partition", "0", "--start-offset", "2") == (0, "")
    status, producers = txn("describe-producers", "--topic", topic, "--partition", "0")
    by_id = {r["ProducerId"]: [r[k] for k in fields] for r in table(producers)}
    assert status == 0 and by_id[transactional_id] == ["0", "0", "2", "None"]
    assert tool(classpath, bootstrap, "GetOffsetShell", "--topic", topic) == (0, f"{topic}:0:6")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe([topic])
    read = []
    while True:
        message = consumer.poll(10)
        assert message is not None, f"read_committed consumer stalled after {read}"
        if message.error():
            break
        read.append(message.value())
    consumer.close()
    assert read == [b"a", b"b"]
    # The producer never learns of the abort: its commit succeeds, with
    # nothing left to commit.
    producer.commit_transaction(30)
    status, described = txn("describe", "--transactional-id", f"{topic}-tx")
    [row] = table(described)
    assert (status, row["TransactionState"], row.get("TopicPartitions", "")) == (0, "CompleteCommit", "")
