"""Consumer groups with kafka-python and confluent-kafka against ringbroker.

Goal: what users of consumer groups rely on. Members in separate processes
split a topic's partitions, each partition owned by exactly one member; when
one member is SIGKILLed its partitions move to the others within the session
timeout, every produced record is consumed at least once and the group's
committed offsets never go backwards. A member stopped (SIGSTOP) past its
session timeout cannot commit with its old generation after it resumes: the
new owner's commit stays. Groups can be listed, described (state, members,
assignments) and deleted with both admin clients, a group with members
cannot be deleted (NON_EMPTY_GROUP) and a deleted group's offsets are gone.
A group that never committed has no offsets: confluent reports
OFFSET_INVALID (-1001), kafka-python None, OffsetFetch itself -1.

Method: one broker for this module (not the session broker: it needs
--group-initial-rebalance-delay-ms 0 so a first rebalance completes at once
and --group-min-session-timeout-ms 1000 so short session timeouts are
accepted; __consumer_offsets keeps its default 50 partitions). Group members
that must be killed or stopped run tests/python/group_member.py in their own
process and report assignments, records and commit outcomes as JSON lines on
stdout; the others run in the test process. Every wait polls an event with a
deadline.
"""

import json
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import (
    OFFSET_INVALID,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

import conftest

MEMBER_SCRIPT = pathlib.Path(__file__).with_name("group_member.py")
GROUP_FLAGS = [
    "--group-initial-rebalance-delay-ms", "0",
    "--group-min-session-timeout-ms", "1000",
]


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory):
    yield from conftest.serve(conftest.Broker(tmp_path_factory.mktemp("ringbroker-groups"), extra_args=GROUP_FLAGS))


@pytest.fixture
def broker(group_broker):
    """This module's broker (named `broker` so conftest attaches its log to failures)."""
    group_broker.assert_alive()
    yield group_broker


# ---------------------------------------------------------------------------
# helpers


def wait_until(condition, timeout, what):
    """Polls `condition` every 50 ms; returns its first truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def create_topic(broker, topic, partitions):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "metadata-only"})
    try:
        def ready():
            metadata = consumer.list_topics(topic, timeout=5)
            found = metadata.topics.get(topic)
            return (found is not None and found.error is None and len(found.partitions) == partitions
                    and all(p.leader >= 0 for p in found.partitions.values()))
        wait_until(ready, 30, f"topic {topic} with {partitions} partitions")
    finally:
        consumer.close()


def produce(broker, topic, partitions, count, first=0):
    """Produces `count` values round-robin, acks=all; returns {(partition, offset): value}."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": False,
                         "acks": "all", "linger.ms": 5})
    acked, errors = {}, []

    def on_delivery(error, message):
        if error is not None:
            errors.append(error)
        else:
            acked[(message.partition(), message.offset())] = message.value().decode()

    for index in range(first, first + count):
        producer.produce(topic, value=f"v-{index}".encode(), partition=index % partitions,
                         on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0, "messages not delivered within 30 s"
    assert not errors, f"delivery errors: {errors[:5]}"
    return acked


def end_offsets(acked):
    ends = {}
    for partition, offset in acked:
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    return ends


def confluent_consumer(broker, group, **config):
    return Consumer({
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 300,
        "fetch.wait.max.ms": 100,
        **config,
    })


def committed_confluent(broker, group, topic, partitions):
    """{partition: offset} of `group` via a confluent Consumer's committed() (no join)."""
    consumer = confluent_consumer(broker, group)
    try:
        result = consumer.committed([CTopicPartition(topic, p) for p in partitions], timeout=10)
    finally:
        consumer.close()
    for tp in result:
        assert tp.error is None, f"committed() of {group} {topic}/{tp.partition}: {tp.error}"
    return {tp.partition: tp.offset for tp in result}


class Member:
    """A group_member.py process and what it reported."""

    def __init__(self, broker, client, topic, group, name, tmp_path, session_timeout_ms,
                 heartbeat_interval_ms=300):
        self.name = name
        self.stderr_path = tmp_path / f"{name}.stderr"
        self.events = []  # (time.monotonic(), event dict)
        self.lock = threading.Lock()
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(MEMBER_SCRIPT), "--client", client,
                 "--bootstrap", broker.bootstrap, "--topic", topic, "--group", group,
                 "--name", name, "--session-timeout-ms", str(session_timeout_ms),
                 "--heartbeat-interval-ms", str(heartbeat_interval_ms)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "garbage", "line": line.decode(errors="replace")}
            with self.lock:
                self.events.append((time.monotonic(), event))

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def assignment(self):
        """Current partitions as reported: last assigned minus later revokes."""
        current = set()
        for _, event in self.snapshot():
            if event["event"] == "assigned":
                current = set(event["partitions"])
            elif event["event"] == "revoked":
                current -= set(event["partitions"])
        return current

    def last_assigned(self):
        """(time, event) of the last assigned report, or (None, None)."""
        found = (None, None)
        for when, event in self.snapshot():
            if event["event"] == "assigned":
                found = (when, event)
        return found

    def records(self):
        return [tuple(r) for _, e in self.snapshot() if e["event"] == "records" for r in e["records"]]

    def of_kind(self, kind):
        return [e for _, e in self.snapshot() if e["event"] == kind]

    def send(self, line):
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def signal(self, signum):
        self.process.send_signal(signum)

    def stderr_tail(self, lines=30):
        try:
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def describe(self):
        return (f"{self.name} (pid {self.process.pid}, exit {self.process.poll()}): "
                f"assignment {sorted(self.assignment())}, events "
                f"{[e for _, e in self.snapshot() if e['event'] != 'records'][-8:]}, "
                f"stderr tail:\n{self.stderr_tail()}")

    def stop(self):
        """SIGTERM (the member closes and leaves), SIGKILL after 15 s; only this process."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(timeout=5)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=5)


class ProducerLoop(threading.Thread):
    """Produces "p-N" round-robin over the partitions until stopped (kafka-python, acks=all)."""

    def __init__(self, broker, topic, partitions):
        super().__init__(daemon=True)
        self.topic, self.partitions = topic, partitions
        self.producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False,
                                      acks="all", linger_ms=5, request_timeout_ms=30000,
                                      max_block_ms=30000)
        self.acked = {}
        self.errors = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def _delivered(self, value, metadata):
        with self.lock:
            self.acked[(metadata.partition, metadata.offset)] = value

    def _failed(self, error):
        with self.lock:
            self.errors.append(repr(error))

    def run(self):
        index = 0
        while not self.stopping.is_set():
            value = f"p-{index}"
            future = self.producer.send(self.topic, value=value.encode(), partition=index % self.partitions)
            future.add_callback(lambda metadata, value=value: self._delivered(value, metadata))
            future.add_errback(self._failed)
            index += 1
            time.sleep(0.004)
        self.producer.flush(timeout=30)
        self.sent = index

    def acked_count(self):
        with self.lock:
            return len(self.acked)

    def finish(self):
        self.stopping.set()
        self.join(timeout=60)
        assert not self.is_alive(), "producer thread did not finish"
        self.producer.close(timeout=10)
        with self.lock:
            assert not self.errors, f"produce errors: {self.errors[:5]}"
            assert len(self.acked) == self.sent, f"{self.sent} sent, {len(self.acked)} acknowledged"
            return dict(self.acked)


class CommitSampler(threading.Thread):
    """Reads the group's committed offsets every 200 ms with KafkaAdminClient."""

    def __init__(self, broker, group):
        super().__init__(daemon=True)
        self.group = group
        self.admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
        self.samples = []  # (time, {partition: offset})
        self.errors = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                offsets = self.admin.list_group_offsets(self.group)[self.group]
                self.samples.append((time.monotonic(), {tp.partition: meta.offset for tp, meta in offsets.items()}))
            except Exception as error:  # noqa: BLE001 - recorded and reported
                self.errors.append(repr(error))
            self.stopping.wait(0.2)

    def finish(self):
        self.stopping.set()
        self.join(timeout=30)
        self.admin.close()


def stable_split(members, partitions, newer_than=None):
    """The members' current assignments when they split `partitions` disjointly,
    non-empty each, all from one generation (newer than `newer_than`), else None."""
    assignments = [m.assignment() for m in members]
    if any(not a for a in assignments):
        return None
    if sum(len(a) for a in assignments) != len(partitions) or set().union(*assignments) != set(partitions):
        return None
    generations = {m.last_assigned()[1]["generation"] for m in members}
    if len(generations) != 1:
        return None
    generation = generations.pop()
    if newer_than is not None and generation <= newer_than:
        return None
    return generation, assignments


def described_assignments(admin, group):
    """(state, {client_id: set(partitions)}) from kafka-python's describe_groups."""
    described = admin.describe_groups([group])[group]
    assert described.get("error") is None, f"DescribeGroups {group}: {described}"
    members = {}
    for member in described["members"]:
        assignment = member["member_assignment"]
        if isinstance(assignment, dict):
            topics = assignment.get("assigned_partitions", [])
            parts = {p for t in topics for p in (t["partitions"] if isinstance(t, dict) else t.partitions)}
        else:
            parts = {p for t in assignment.assigned_partitions for p in t.partitions}
        members[member["client_id"]] = parts
    return described["group_state"], members


# ---------------------------------------------------------------------------
# 1. three member processes, one SIGKILLed


def test_member_processes_share_partitions_and_take_over_from_a_killed_one(broker, topic, tmp_path):
    partitions = list(range(6))
    session_ms = 2000
    slack_s = 10
    create_topic(broker, topic, len(partitions))
    group = f"{topic}-group"
    producer = ProducerLoop(broker, topic, len(partitions))
    sampler = CommitSampler(broker, group)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    members = []
    try:
        producer.start()
        for index in range(3):
            members.append(Member(broker, "kafka-python", topic, group, f"member-{index}", tmp_path, session_ms))
        try:
            generation, assignments = wait_until(lambda: stable_split(members, partitions), 45,
                                                 "3 members splitting 6 partitions")
        except AssertionError as error:
            raise AssertionError(f"{error}:\n" + "\n".join(m.describe() for m in members)) from None
        assert sorted(len(a) for a in assignments) == [2, 2, 2], f"uneven split {assignments}"
        # The broker's view agrees with what the members were told.
        state, described = described_assignments(admin, group)
        assert state == "Stable", f"group state {state}"
        assert described == {m.name: m.assignment() for m in members}, \
            f"DescribeGroups assignments {described} differ from the members' {[(m.name, m.assignment()) for m in members]}"
        sampler.start()
        wait_until(lambda: all(m.records() for m in members), 30, "every member consuming")

        victim, survivors = members[1], [members[0], members[2]]
        lost = victim.assignment()
        killed_at = time.monotonic()
        victim.signal(signal.SIGKILL)
        victim.process.wait()
        try:
            _, after = wait_until(lambda: stable_split(survivors, partitions, newer_than=generation),
                                  session_ms / 1000 + slack_s,
                                  f"the 2 survivors taking over {sorted(lost)} within the session timeout "
                                  f"({session_ms} ms) + {slack_s} s")
        except AssertionError as error:
            raise AssertionError(f"{error}:\n" + "\n".join(m.describe() for m in survivors)) from None
        took = max(m.last_assigned()[0] for m in survivors) - killed_at
        print(f"partitions {sorted(lost)} of the killed member reassigned after {took:.2f} s: {after}")
        assert sorted(len(a) for a in after) == [3, 3], f"uneven split after the kill: {after}"

        # Keep producing a little past the takeover, then check delivery.
        reassigned_acks = producer.acked_count()
        wait_until(lambda: producer.acked_count() >= reassigned_acks + 300, 30, "300 more acknowledgements")
        acked = producer.finish()
        ends = end_offsets(acked)

        def missing():
            seen = {(p, o) for m in members for (p, o, _) in m.records()}
            return sorted(set(acked) - seen)

        try:
            wait_until(lambda: not missing(), 30, "every acknowledged record consumed by some member")
        except AssertionError as error:
            gaps = missing()
            raise AssertionError(f"{error}: {len(gaps)} of {len(acked)} never consumed, first {gaps[:10]}:\n"
                                 + "\n".join(m.describe() for m in members)) from None
        for member in members:
            for partition, offset, value in member.records():
                assert acked.get((partition, offset)) == value, \
                    f"{member.name} read {value!r} at {partition}/{offset}, acknowledged there: {acked.get((partition, offset))!r}"

        def committed():
            offsets = admin.list_group_offsets(group)[group]
            return {tp.partition: meta.offset for tp, meta in offsets.items()}

        wait_until(lambda: committed() == ends, 30, f"committed offsets reaching the end offsets {ends}")
    finally:
        for member in members:
            member.kill()
        if producer.is_alive():
            producer.stopping.set()
        sampler.finish()
        admin.close()

    # Committed offsets never went backwards between samples.
    assert len(sampler.samples) >= 5, f"only {len(sampler.samples)} commit samples; errors {sampler.errors[:5]}"
    backwards = []
    latest = {}
    for when, sample in sampler.samples:
        for partition, offset in sample.items():
            if offset < latest.get(partition, -1):
                backwards.append((round(when - killed_at, 2), partition, latest[partition], offset))
            latest[partition] = max(latest.get(partition, -1), offset)
    assert not backwards, f"committed offsets went backwards (seconds after the kill, partition, from, to): {backwards[:10]}"


# ---------------------------------------------------------------------------
# 2. a member stopped past its session timeout


def test_member_stopped_past_its_session_timeout_cannot_commit_with_its_old_generation(broker, topic, tmp_path):
    # The scenario needs the resumed member to send its commit before
    # librdkafka's own timer notices the session timeout (then it rejoins
    # under a new member id instead, and its commit waits for a generation
    # that cannot form while the successor is not polled). Both threads wake
    # at SIGCONT, so that order is the client's to pick: when librdkafka
    # reports SESSTMOUT first, run the scenario again on a fresh topic.
    for attempt in range(3):
        work = tmp_path / f"attempt-{attempt}"
        work.mkdir()
        if _stopped_member_commits_with_old_generation(broker, f"{topic}-{attempt}", work):
            return
    pytest.fail("in 3 attempts librdkafka noticed its session timeout before sending the queued commit")


def _stopped_member_commits_with_old_generation(broker, topic, tmp_path):
    """Runs the scenario; False when the client rejoined on its own first."""
    create_topic(broker, topic, 1)
    acked = produce(broker, topic, 1, 20)
    group = f"{topic}-group"
    session_ms = 2000
    paused = Member(broker, "confluent", topic, group, "paused", tmp_path, session_ms)
    successor = None
    try:
        try:
            wait_until(lambda: paused.assignment() == {0} and len(paused.records()) == 20, 30,
                       "the first member owning partition 0 and reading its 20 records")
        except AssertionError as error:
            raise AssertionError(f"{error}: {paused.describe()}") from None
        paused.send("commit 0 5")
        result = wait_until(lambda: paused.of_kind("commit_result"), 15, "the first member's commit")[0]
        assert result["error"] is None, f"commit while a member: {result}"
        assert committed_confluent(broker, group, topic, [0]) == {0: 5}

        paused.signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        assigned = []
        successor = confluent_consumer(broker, group, **{"max.poll.interval.ms": 60000})
        successor.subscribe([topic], on_assign=lambda c, ps: assigned.append(sorted(p.partition for p in ps)))
        consumed = []
        deadline = time.monotonic() + session_ms / 1000 + 20
        while not (assigned and assigned[-1] == [0] and consumed and consumed[-1] == 19):
            assert time.monotonic() < deadline, \
                f"the successor did not take over partition 0 from the stopped member: assigned {assigned}, consumed {consumed}"
            message = successor.poll(0.1)
            if message is not None and message.error() is None:
                consumed.append(message.offset())
        print(f"successor took over {time.monotonic() - stopped_at:.2f} s after SIGSTOP")
        assert consumed == list(range(5, 20)), f"the successor should resume at the committed 5: read {consumed}"
        successor.commit(offsets=[CTopicPartition(topic, 0, 12)], asynchronous=False)
        assert committed_confluent(broker, group, topic, [0]) == {0: 12}

        # The stopped member wakes up with a commit queued. The successor is
        # not polled meanwhile, so no new generation can form that would
        # give the partition back to the stopped member legitimately.
        paused.send("commit 0 3")
        paused.signal(signal.SIGCONT)
        try:
            results = wait_until(lambda: paused.of_kind("commit_result")[1:], 20,
                                 "the resumed member's commit outcome")
        except AssertionError:
            if "SESSTMOUT" in paused.stderr_tail(200):
                print("librdkafka noticed its session timeout and rejoined before sending the commit; again")
                return False
            raise
        late = results[0]
        print(f"resumed member's commit with its old generation: {late}")
        assert late["error"] is not None, \
            f"the member stopped past its session timeout committed 3 successfully after resuming: {late}"
        assert committed_confluent(broker, group, topic, [0]) == {0: 12}, \
            f"the refused commit ({late}) changed the committed offset"
    finally:
        paused.kill()
        if successor is not None:
            successor.close()
    assert committed_confluent(broker, group, topic, [0]) == {0: 12}
    return True


# ---------------------------------------------------------------------------
# 4. admin: list, describe, delete


def test_admin_clients_list_describe_and_delete_groups(broker, topic):
    create_topic(broker, topic, 2)
    acked = produce(broker, topic, 2, 10)
    ends = end_offsets(acked)
    by_confluent, by_kafka_python = f"{topic}-g1", f"{topic}-g2"
    groups = [by_confluent, by_kafka_python]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    consumers = {}
    try:
        for group in groups:
            consumer = confluent_consumer(broker, group, **{"client.id": f"client-{group}",
                                                            "enable.auto.offset.store": True})
            consumer.subscribe([topic])
            consumers[group] = consumer
        for group, consumer in consumers.items():
            read = 0
            deadline = time.monotonic() + 30
            while read < len(acked):
                assert time.monotonic() < deadline, f"{group}: read {read} of {len(acked)}"
                message = consumer.poll(0.1)
                if message is not None and message.error() is None:
                    read += 1
            consumer.commit(asynchronous=False)
            assert committed_confluent(broker, group, topic, [0, 1]) == ends

        # confluent: list and describe.
        listing = admin.list_consumer_groups(request_timeout=10).result()
        assert not listing.errors, f"list_consumer_groups errors: {listing.errors}"
        listed = {g.group_id: g for g in listing.valid}
        for group in groups:
            assert group in listed, f"{group} not in list_consumer_groups: {sorted(listed)}"
            assert listed[group].state == ConsumerGroupState.STABLE, f"{group}: {listed[group].state}"
            assert listed[group].is_simple_consumer_group is False
        stable_only = admin.list_consumer_groups(request_timeout=10, states={ConsumerGroupState.STABLE}).result()
        assert set(groups) <= {g.group_id for g in stable_only.valid}
        for group, future in admin.describe_consumer_groups(groups, request_timeout=10).items():
            description = future.result()
            assert description.group_id == group
            assert description.state == ConsumerGroupState.STABLE, f"{group}: {description.state}"
            assert description.is_simple_consumer_group is False
            assert description.partition_assignor == "range", f"{group}: assignor {description.partition_assignor!r}"
            assert description.coordinator.port == broker.port, f"coordinator {description.coordinator}"
            assert len(description.members) == 1, f"{group}: members {description.members}"
            member = description.members[0]
            assert member.client_id == f"client-{group}"
            assert "127.0.0.1" in member.host, f"member host {member.host!r}"
            assert sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions) == \
                [(topic, 0), (topic, 1)], f"{group}: member assignment {member.assignment.topic_partitions}"

        # kafka-python: list and describe.
        kp_listed = {g["group_id"]: g for g in kp.list_groups()}
        for group in groups:
            assert group in kp_listed, f"{group} not in kafka-python list_groups: {sorted(kp_listed)}"
            assert kp_listed[group]["protocol_type"] == "consumer"
        state, described = described_assignments(kp, by_kafka_python)
        assert (state, described) == ("Stable", {f"client-{by_kafka_python}": {0, 1}})

        # A group with a member cannot be deleted, by either client.
        with pytest.raises(KafkaException) as refused:
            admin.delete_consumer_groups([by_confluent], request_timeout=10)[by_confluent].result()
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP, f"delete of a non-empty group: {refused.value}"
        assert kp.delete_groups([by_kafka_python]) == {by_kafka_python: "NonEmptyGroupError"}
        for group in groups:
            assert committed_confluent(broker, group, topic, [0, 1]) == ends, f"{group}: offsets after refused delete"

        # The members leave: the groups are Empty, their offsets kept.
        for group in groups:
            consumers.pop(group).close()
        for group, future in admin.describe_consumer_groups(groups, request_timeout=10).items():
            description = future.result()
            assert (description.state, description.members) == (ConsumerGroupState.EMPTY, []), \
                f"{group} after its member left: {description.state} {description.members}"
        empty_only = admin.list_consumer_groups(request_timeout=10, states={ConsumerGroupState.EMPTY}).result()
        assert set(groups) <= {g.group_id for g in empty_only.valid}
        offsets = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(by_confluent, [CTopicPartition(topic, 0), CTopicPartition(topic, 1)])],
            request_timeout=10)[by_confluent].result()
        assert {tp.partition: tp.offset for tp in offsets.topic_partitions} == ends

        # Now they can be deleted.
        assert admin.delete_consumer_groups([by_confluent], request_timeout=10)[by_confluent].result() is None
        assert kp.delete_groups([by_kafka_python]) == {by_kafka_python: "OK"}

        remaining = {g.group_id for g in admin.list_consumer_groups(request_timeout=10).result().valid}
        assert not set(groups) & remaining, f"deleted groups still listed: {set(groups) & remaining}"
        assert not set(groups) & {g["group_id"] for g in kp.list_groups()}
        # Their offsets are gone.
        for group in groups:
            assert committed_confluent(broker, group, topic, [0, 1]) == {0: OFFSET_INVALID, 1: OFFSET_INVALID}, \
                f"{group}: committed offsets after deletion"
        raw = kp.list_group_offsets({by_kafka_python: [TopicPartition(topic, 0), TopicPartition(topic, 1)]})
        assert {tp.partition: meta.offset for tp, meta in raw[by_kafka_python].items()} == {0: -1, 1: -1}
        assert kp.list_group_offsets(by_kafka_python) == {by_kafka_python: {}}
        # Deleting again: the group does not exist.
        with pytest.raises(KafkaException) as missing:
            admin.delete_consumer_groups([by_confluent], request_timeout=10)[by_confluent].result()
        assert missing.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND, f"second delete: {missing.value}"
        assert kp.delete_groups([by_kafka_python]) == {by_kafka_python: "GroupIdNotFoundError"}

        # A consumer joining the deleted group starts over (auto.offset.reset=earliest).
        fresh = confluent_consumer(broker, by_confluent)
        consumers["fresh"] = fresh
        fresh.subscribe([topic])
        first = {}
        deadline = time.monotonic() + 30
        while len(first) < 2:
            assert time.monotonic() < deadline, f"fresh consumer of the deleted group read {first}"
            message = fresh.poll(0.1)
            if message is not None and message.error() is None:
                first.setdefault(message.partition(), message.offset())
        assert first == {0: 0, 1: 0}, f"first offsets in the re-created group {first}"
    finally:
        for consumer in consumers.values():
            consumer.close()
        kp.close()


# ---------------------------------------------------------------------------
# 5. a group that never committed


def test_group_that_never_committed_has_no_offsets(broker, topic):
    create_topic(broker, topic, 2)
    acked = produce(broker, topic, 2, 10)
    group = f"{topic}-never"
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    ctps = [CTopicPartition(topic, 0), CTopicPartition(topic, 1)]

    # confluent: OFFSET_INVALID (-1001), no error.
    assert committed_confluent(broker, group, topic, [0, 1]) == {0: OFFSET_INVALID, 1: OFFSET_INVALID}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, ctps)],
                                               request_timeout=10)[group].result()
    assert [(tp.partition, tp.offset, tp.error) for tp in listed.topic_partitions] == \
        [(0, OFFSET_INVALID, None), (1, OFFSET_INVALID, None)]

    # kafka-python: committed() is None; OffsetFetch itself answers -1.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        assert [consumer.committed(tp) for tp in tps] == [None, None]
        raw = kp.list_group_offsets({group: tps})[group]
        assert {tp.partition: (meta.offset, meta.metadata) for tp, meta in raw.items()} == {0: (-1, ""), 1: (-1, "")}
        assert kp.list_group_offsets(group) == {group: {}}, "all-partitions OffsetFetch of a group without commits"

        # A commit of partition 0 only (generation-less, as an assign()
        # consumer does): partition 1 stays without an offset.
        committer = confluent_consumer(broker, group)
        committer.assign([CTopicPartition(topic, 0, 4)])
        committer.commit(offsets=[CTopicPartition(topic, 0, 4)], asynchronous=False)
        committer.close()
        assert committed_confluent(broker, group, topic, [0, 1]) == {0: 4, 1: OFFSET_INVALID}
        assert [consumer.committed(tp) for tp in tps] == [4, None]
        raw = kp.list_group_offsets({group: tps})[group]
        assert {tp.partition: meta.offset for tp, meta in raw.items()} == {0: 4, 1: -1}
    finally:
        consumer.close()
        kp.close()

    # A member of the group starts at the commit on 0 and, by
    # auto.offset.reset=earliest, at 0 on 1.
    member = confluent_consumer(broker, group)
    try:
        member.subscribe([topic])
        first = {}
        deadline = time.monotonic() + 30
        while len(first) < 2:
            assert time.monotonic() < deadline, f"member read {first}"
            message = member.poll(0.1)
            if message is not None and message.error() is None:
                first.setdefault(message.partition(), message.offset())
        assert first == {0: 4, 1: 0}
    finally:
        member.close()
