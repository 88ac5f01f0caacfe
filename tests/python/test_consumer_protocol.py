"""KIP-848 consumer groups (`group.protocol=consumer`) with real clients.

Goal: the Java client 4.x and librdkafka run consumer groups on the new
protocol as they do against Kafka 4.1.1: the server-side assignor splits the
partitions once a member has revoked its share, a member that leaves or
dies gives its partitions back, a regular expression subscription picks up
topics created later, the Admin describes and lists the group as Kafka
does, and members carry on after the broker is killed and restarted.

Each behaviour was first run against Kafka 4.1.1 (KRaft, single node) with
the same clients; the Java mode's whole output is what Kafka gave.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, serve
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

SESSION_TIMEOUT_MS = 6000


@pytest.fixture(scope="module")
def short_session_broker(tmp_path_factory):
    """A broker of its own (killed and restarted here) whose consumer-group
    members time out after 6 s and heartbeat every second."""
    yield from serve(Broker(tmp_path_factory.mktemp("ringbroker-consumer-protocol"), extra_args=[
        "--group-consumer-session-timeout-ms", str(SESSION_TIMEOUT_MS),
        "--group-consumer-heartbeat-interval-ms", "1000",
        "--group-consumer-min-session-timeout-ms", "1000",
        "--group-consumer-min-heartbeat-interval-ms", "1000",
    ]))


def create(bootstrap, *topics):
    """Creates (name, partitions) topics."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, n, 1) for name, n in topics]).values():
        future.result(30)


def produce(bootstrap, topic, values, partitions):
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(30) == 0


class Member:
    """A librdkafka consumer on the consumer protocol, polled by a thread;
    `owned` follows its (incremental) assign and revoke callbacks."""

    def __init__(self, bootstrap, group, subscription, **settings):
        self.owned = set()
        self.revocations = 0
        self.losses = 0
        self.values = []
        self.errors = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "auto.commit.interval.ms": 200, **settings,
        })
        self.consumer.subscribe(subscription, on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._lost)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assigned(self, _consumer, partitions):
        with self.lock:
            self.owned |= {(p.topic, p.partition) for p in partitions}

    def _revoked(self, _consumer, partitions):
        with self.lock:
            self.revocations += 1
            self.owned -= {(p.topic, p.partition) for p in partitions}

    def _lost(self, _consumer, partitions):
        with self.lock:
            self.losses += 1
            self.owned -= {(p.topic, p.partition) for p in partitions}

    def _run(self):
        while not self.stop.is_set():
            message = self.consumer.poll(0.1)
            if message is None:
                continue
            if message.error():
                self.errors.append(str(message.error()))
                continue
            with self.lock:
                self.values.append(message.value())

    def partitions(self):
        with self.lock:
            return set(self.owned)

    def close(self):
        self.stop.set()
        self.thread.join(30)
        self.consumer.close()


def group_type(bootstrap, group):
    """The group's type as ListGroups answers it ("CLASSIC", "CONSUMER")."""
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until answered
    listed = admin.list_consumer_groups().result(30)
    types = {g.group_id: g.type.name for g in listed.valid}
    return types.get(group)


CLASSIC = {
    "group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky",
    "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
}


def wait_for(condition, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.1)


def test_java_consumer_protocol_splits_rebalances_and_describes_like_kafka(classpath, broker, topic):
    seen = run_java(classpath, "consumer-protocol", broker, topic)
    # Exactly what Kafka 4.1.1 answered to the same program.
    assert seen == {
        "consumed": 60, "split": "3+3 of 6",
        "described": "Consumer Stable uniform [3, 3] epoch>0=true",
        "listed": "Consumer consumer Stable", "after_leave": 6, "empty": "Empty 0",
        "committed": 60, "after_delete": "GroupIdNotFoundException",
    }


def test_java_classic_group_migrates_to_the_consumer_protocol_and_back_like_kafka(classpath, broker, topic):
    seen = run_java(classpath, "migration", broker, topic)
    # Exactly what Kafka 4.1.1 answered to the same program.
    assert seen == {
        "classic": "Classic Stable [3:-, 3:-]", "split": 6,
        "upgraded": "Consumer Stable [3:classic, 3:upgraded]", "after_leave": 6,
        "downgraded": "Classic Stable [6:-]", "committed": 60,
    }


def test_librdkafka_members_share_partitions_and_take_them_back(broker, topic):
    create(broker.bootstrap, (topic, 6))
    produce(broker.bootstrap, topic, [b"a%d" % i for i in range(600)], 6)
    group = topic + "-group"
    first = Member(broker.bootstrap, group, [topic])
    everything = {(topic, p) for p in range(6)}
    wait_for(lambda: first.partitions() == everything and len(first.values) == 600,
             "the first member owns every partition and read every record")
    second = Member(broker.bootstrap, group, [topic])
    wait_for(lambda: len(first.partitions()) == 3 and len(second.partitions()) == 3,
             "the uniform assignor splits the partitions 3 + 3")
    assert first.partitions() | second.partitions() == everything
    # New records go to whoever owns their partition, each exactly once.
    produce(broker.bootstrap, topic, [b"b%d" % i for i in range(60)], 6)
    wait_for(lambda: len([v for v in first.values + second.values if v.startswith(b"b")]) >= 60,
             "the 60 new records are read")
    second.close()
    wait_for(lambda: first.partitions() == everything, "the first member gets everything back")
    first.close()
    both = first.values + second.values
    assert sorted(both) == sorted([b"a%d" % i for i in range(600)] + [b"b%d" % i for i in range(60)])
    assert first.errors == [] and second.errors == []


def test_regex_subscription_picks_up_topics_created_later(broker, topic):
    create(broker.bootstrap, (topic + "-rx-a", 2), (topic + "-other", 2))
    member = Member(broker.bootstrap, topic + "-group", ["^" + topic + "-rx-.*"])
    first = {(topic + "-rx-a", 0), (topic + "-rx-a", 1)}
    wait_for(lambda: member.partitions() == first, "the matching topic is assigned")
    create(broker.bootstrap, (topic + "-rx-b", 3))
    later = first | {(topic + "-rx-b", p) for p in range(3)}
    # Kafka picks it up within about two heartbeats (5 s each).
    wait_for(lambda: member.partitions() == later, "the topic created later is assigned too")
    produce(broker.bootstrap, topic + "-rx-b", [b"x%d" % i for i in range(9)], 3)
    produce(broker.bootstrap, topic + "-other", [b"y%d" % i for i in range(4)], 2)
    wait_for(lambda: len(member.values) >= 9, "the new topic's records are read")
    time.sleep(0.5)
    member.close()
    assert sorted(member.values) == sorted(b"x%d" % i for i in range(9))


MEMBER_PROCESS = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer"})
    c.subscribe([sys.argv[3]])
    while True:
        c.poll(0.1)
""")


def test_a_killed_member_loses_its_partitions_after_the_session_timeout(short_session_broker, topic):
    bootstrap = short_session_broker.bootstrap
    create(bootstrap, (topic, 4))
    group = topic + "-group"
    survivor = Member(bootstrap, group, [topic])
    everything = {(topic, p) for p in range(4)}
    wait_for(lambda: survivor.partitions() == everything, "the first member owns everything")
    doomed = subprocess.Popen([sys.executable, "-c", MEMBER_PROCESS, bootstrap, group, topic])
    try:
        wait_for(lambda: len(survivor.partitions()) == 2, "the second member takes half")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(10)
        killed_at = time.monotonic()
        wait_for(lambda: survivor.partitions() == everything,
                 "the survivor gets the dead member's partitions back", timeout=30)
        # Not before the session timeout (less a heartbeat of slack).
        assert time.monotonic() - killed_at >= SESSION_TIMEOUT_MS / 1000 - 1.5
    finally:
        doomed.kill()
        survivor.close()


def test_members_carry_on_after_the_broker_is_killed_and_restarted(short_session_broker, topic):
    bootstrap = short_session_broker.bootstrap
    create(bootstrap, (topic, 3))
    produce(bootstrap, topic, [b"a%d" % i for i in range(30)], 3)
    group = topic + "-group"
    member = Member(bootstrap, group, [topic])
    wait_for(lambda: len(member.values) == 30, "the records before the crash are read")
    time.sleep(1)  # auto-commit
    owned = member.partitions()
    short_session_broker.kill()
    short_session_broker.start()
    # The group, its member and their epochs and partitions were replayed
    # from __consumer_offsets: the member goes on as if nothing happened,
    # without losing or giving up a partition.
    produce(bootstrap, topic, [b"b%d" % i for i in range(30)], 3)
    wait_for(lambda: len(member.values) >= 60, "the records after the restart are read", timeout=60)
    time.sleep(2)  # a couple of heartbeats on the restarted broker
    assert (member.losses, member.revocations) == (0, 0)
    assert member.partitions() == owned
    member.close()
    after = [v for v in member.values if v.startswith(b"b")]
    assert sorted(after) == sorted(b"b%d" % i for i in range(30))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(30)
    types = {g.group_id: str(g.type) for g in listed.valid}
    assert types.get(group) == "ConsumerGroupType.CONSUMER", types


def test_a_classic_group_is_upgraded_and_rolled_back_one_member_at_a_time(short_session_broker, topic):
    """Kafka's migration policy `bidirectional`, as Kafka 4.1.1 ran the same
    steps: a consumer restarted on the new protocol turns the running
    classic group into a consumer group in which the other (classic) member
    keeps its partitions and goes on with JoinGroup/SyncGroup/Heartbeat,
    across a kill -9 of the broker too; when the new-protocol member leaves,
    the group is classic again. Every record is read exactly once."""
    bootstrap = short_session_broker.bootstrap
    create(bootstrap, (topic, 6))
    everything = {(topic, p) for p in range(6)}
    group = topic + "-group"
    members = []

    def join(**settings):
        members.append(Member(bootstrap, group, [topic], **settings))
        return members[-1]

    def read_all(count):
        wait_for(lambda: sum(len(m.values) for m in members) == count, f"{count} records read")
        time.sleep(1)  # auto-commit

    produce(bootstrap, topic, [b"a%d" % i for i in range(120)], 6)
    a, b = join(**CLASSIC), join(**CLASSIC)
    wait_for(lambda: len(a.partitions()) == 3 and len(b.partitions()) == 3, "two classic members 3 + 3")
    assert group_type(bootstrap, group) == "CLASSIC"
    read_all(120)

    b.close()
    upgraded = join()
    wait_for(lambda: upgraded.partitions() | a.partitions() == everything
             and len(upgraded.partitions()) == 3, "the new-protocol member takes the free half")
    assert group_type(bootstrap, group) == "CONSUMER"
    produce(bootstrap, topic, [b"b%d" % i for i in range(60)], 6)
    read_all(180)
    kept = a.partitions()

    # The classic member's protocols, session and epoch were replayed.
    short_session_broker.kill()
    short_session_broker.start()
    produce(bootstrap, topic, [b"c%d" % i for i in range(60)], 6)
    read_all(240)
    assert a.partitions() == kept and a.losses == 0
    assert group_type(bootstrap, group) == "CONSUMER"

    # Rolled back: the last new-protocol member leaves.
    upgraded.close()
    wait_for(lambda: a.partitions() == everything, "the classic member gets everything")
    wait_for(lambda: group_type(bootstrap, group) == "CLASSIC", "the group is classic again")
    produce(bootstrap, topic, [b"d%d" % i for i in range(60)], 6)
    read_all(300)
    a.close()
    read = sorted(v for m in members for v in m.values)
    assert read == sorted(b"%s%d" % (c, i) for c, n in ((b"a", 120), (b"b", 60), (b"c", 60), (b"d", 60))
                          for i in range(n))
    assert [m.errors for m in members] == [[]] * len(members)


def test_classic_members_join_a_consumer_group_and_commit(broker, topic):
    """A classic member (eager `range`) joins a group of new-protocol
    members: it gets its share once the others released it, commits by
    its generation, and its partitions go back when it leaves; the group
    stays a consumer group. As Kafka 4.1.1 ran it."""
    create(broker.bootstrap, (topic, 4))
    produce(broker.bootstrap, topic, [b"a%d" % i for i in range(40)], 4)
    group = topic + "-group"
    everything = {(topic, p) for p in range(4)}
    modern = Member(broker.bootstrap, group, [topic])
    wait_for(lambda: modern.partitions() == everything and len(modern.values) == 40, "one member reads all")
    time.sleep(1)  # auto-commit
    classic = Member(broker.bootstrap, group, [topic], **{**CLASSIC, "partition.assignment.strategy": "range"})
    wait_for(lambda: len(classic.partitions()) == 2 and len(modern.partitions()) == 2,
             "the classic member gets half")
    assert classic.partitions() | modern.partitions() == everything
    assert group_type(broker.bootstrap, group) == "CONSUMER"
    produce(broker.bootstrap, topic, [b"b%d" % i for i in range(40)], 4)
    wait_for(lambda: len(classic.values) == 20 and len(modern.values) == 60, "each reads its half")
    time.sleep(1)  # auto-commit
    classic.close()
    wait_for(lambda: modern.partitions() == everything, "the partitions come back")
    assert group_type(broker.bootstrap, group) == "CONSUMER"
    produce(broker.bootstrap, topic, [b"c%d" % i for i in range(8)], 4)
    wait_for(lambda: len(modern.values) == 68, "the new records are read once")
    time.sleep(0.5)
    modern.close()
    assert sorted(classic.values + modern.values) == sorted(
        [b"a%d" % i for i in range(40)] + [b"b%d" % i for i in range(40)] + [b"c%d" % i for i in range(8)])
    assert classic.errors == [] and modern.errors == []


def test_a_static_classic_consumer_restarted_on_the_new_protocol_keeps_its_partitions(broker, topic):
    """A static member (group.instance.id) sends no LeaveGroup when it
    stops; restarted on the consumer protocol with the same instance id it
    takes over its classic self at once, partitions included, as on Kafka
    4.1.1 (not UNRELEASED_INSTANCE_ID, which the Java client treats as
    fatal)."""
    create(broker.bootstrap, (topic, 4))
    group = topic + "-group"
    a = Member(broker.bootstrap, group, [topic], **CLASSIC, **{"group.instance.id": "a"})
    b = Member(broker.bootstrap, group, [topic], **CLASSIC, **{"group.instance.id": "b"})
    try:
        wait_for(lambda: len(a.partitions()) == 2 and len(b.partitions()) == 2, "two static members 2 + 2")
        held = b.partitions()
        b.close()
        restarted = Member(broker.bootstrap, group, [topic], **{"group.instance.id": "b"})
        try:
            # Well within the classic session timeout (10 s).
            wait_for(lambda: restarted.partitions() == held, "the restarted member holds the same partitions",
                     timeout=5)
            assert group_type(broker.bootstrap, group) == "CONSUMER"
            assert a.partitions() | restarted.partitions() == {(topic, p) for p in range(4)}
            assert restarted.errors == [] and a.errors == []
        finally:
            restarted.close()
    finally:
        a.close()


def test_a_static_consumer_rolled_back_to_classic_turns_the_group_classic(broker, topic):
    """The reverse of the static upgrade: the last new-protocol member,
    static, restarts on the classic protocol with its instance id; it
    takes its partitions over at once and the group, now all classic, is a
    classic group again, as on Kafka 4.1.1."""
    create(broker.bootstrap, (topic, 4))
    group = topic + "-group"
    classic = Member(broker.bootstrap, group, [topic], **CLASSIC)
    modern = None
    try:
        # A JoinGroup still parked when the group turns into a consumer group
        # is answered REBALANCE_IN_PROGRESS (Kafka's convertToConsumerGroup
        # too), which librdkafka reports: let the classic group settle first.
        wait_for(lambda: len(classic.partitions()) == 4, "the classic member owns everything")
        modern = Member(broker.bootstrap, group, [topic], **{"group.instance.id": "m"})
        wait_for(lambda: len(classic.partitions()) == 2 and len(modern.partitions()) == 2, "2 + 2")
        assert group_type(broker.bootstrap, group) == "CONSUMER"
        held, kept = modern.partitions(), classic.partitions()
        modern.close()
        rolled_back = Member(broker.bootstrap, group, [topic], **CLASSIC, **{"group.instance.id": "m"})
        try:
            wait_for(lambda: rolled_back.partitions() == held, "it holds its partitions again", timeout=5)
            assert group_type(broker.bootstrap, group) == "CLASSIC"
            time.sleep(2)  # a few classic heartbeats: no rebalance follows
            assert (classic.partitions(), rolled_back.partitions()) == (kept, held)
            assert classic.errors == [] and rolled_back.errors == []
        finally:
            rolled_back.close()
    finally:
        classic.close()


def test_a_group_config_shortens_the_session_of_that_group_only(short_session_broker, topic):
    """`kafka-configs --entity-type groups --alter --add-config
    consumer.session.timeout.ms=2000` through librdkafka's Admin: a killed
    member of that group loses its partitions after 2 s, while one of a group
    without configs keeps them for the broker's 6 s."""
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)
    bootstrap = short_session_broker.bootstrap
    create(bootstrap, (topic, 4))
    quick, slow = topic + "-quick", topic + "-slow"
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def alter(group, name, value):
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
        return admin.incremental_alter_configs([resource])[resource]

    # Kafka's bounds: here 1 s (--group-consumer-min-session-timeout-ms) to 60 s.
    with pytest.raises(Exception) as refused:
        alter(quick, "consumer.session.timeout.ms", "500").result(30)
    assert ("consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms") in str(refused.value)
    alter(quick, "consumer.session.timeout.ms", "2000").result(30)
    resource = ConfigResource(ResourceType.GROUP, quick)
    described = admin.describe_configs([resource])[resource].result(30)
    entry = described["consumer.session.timeout.ms"]
    assert (entry.value, int(entry.source)) == ("2000", 8)  # GROUP_CONFIG
    assert described["consumer.heartbeat.interval.ms"].value == "1000"  # the broker's

    everything = {(topic, p) for p in range(4)}
    survivors, doomed = {}, {}
    try:
        for group in (quick, slow):
            survivors[group] = Member(bootstrap, group, [topic])
            wait_for(lambda: survivors[group].partitions() == everything,
                     f"the first member of {group} owns everything")
            doomed[group] = subprocess.Popen(
                [sys.executable, "-c", MEMBER_PROCESS, bootstrap, group, topic])
            wait_for(lambda: len(survivors[group].partitions()) == 2,
                     f"the second member of {group} takes half")
        for process in doomed.values():
            process.send_signal(signal.SIGKILL)
        for process in doomed.values():
            process.wait(10)
        killed_at = time.monotonic()
        wait_for(lambda: survivors[quick].partitions() == everything,
                 "the quick group's survivor gets the dead member's partitions back")
        assert time.monotonic() - killed_at >= 2 - 1, "before the group's 2 s session ended"
        assert len(survivors[slow].partitions()) == 2, \
            "the group without configs gave partitions back before the broker's 6 s session"
        wait_for(lambda: survivors[slow].partitions() == everything,
                 "the slow group's survivor gets them back after 6 s")
        assert time.monotonic() - killed_at >= SESSION_TIMEOUT_MS / 1000 - 1.5
    finally:
        for process in doomed.values():
            process.kill()
        for member in survivors.values():
            member.close()


@pytest.fixture(scope="module")
def no_migration_broker(tmp_path_factory):
    """A broker whose groups never change protocol while running
    (`group.consumer.migration.policy=disabled`), whose consumer groups
    take at most two members (`group.consumer.max.size=2`) and offer only
    the range assignor (`group.consumer.assignors=range`)."""
    yield from serve(Broker(tmp_path_factory.mktemp("ringbroker-no-migration"), extra_args=[
        "--group-consumer-migration-policy", "DISABLED",
        "--group-consumer-max-size", "2",
        "--group-consumer-assignors", "range",
    ]))


def test_without_online_upgrade_a_new_protocol_member_cannot_join_a_classic_group(
        no_migration_broker, topic):
    """Kafka's `group.consumer.migration.policy=disabled`: a consumer on the
    new protocol joining a running classic group is refused with
    GROUP_ID_NOT_FOUND (fatal to librdkafka), and the
    classic members keep the group and their partitions."""
    bootstrap = no_migration_broker.bootstrap
    create(bootstrap, (topic, 4))
    everything = {(topic, p) for p in range(4)}
    group = topic + "-group"
    classic = Member(bootstrap, group, [topic], **CLASSIC)
    upgraded = None
    try:
        wait_for(lambda: classic.partitions() == everything, "the classic member owns everything")
        upgraded = Member(bootstrap, group, [topic])
        wait_for(lambda: upgraded.errors, "the new-protocol member is refused")
        # librdkafka shows the code's text, not the broker's message.
        assert any("_FATAL" in e and "The group id does not exist" in e
                   for e in upgraded.errors), upgraded.errors
        assert upgraded.partitions() == set()
        assert group_type(bootstrap, group) == "CLASSIC"
        assert classic.partitions() == everything and classic.revocations == 0
    finally:
        classic.close()
        if upgraded is not None:
            upgraded.close()


def test_a_consumer_group_takes_no_more_members_than_its_max_size(no_migration_broker, topic):
    """`group.consumer.max.size=2`: a third member of a consumer group is
    refused with GROUP_MAX_SIZE_REACHED (fatal to librdkafka); the two members
    keep their partitions."""
    bootstrap = no_migration_broker.bootstrap
    create(bootstrap, (topic, 4))
    group = topic + "-group"
    members = [Member(bootstrap, group, [topic]), Member(bootstrap, group, [topic])]
    try:
        wait_for(lambda: all(len(m.partitions()) == 2 for m in members), "two members 2 + 2")
        members.append(Member(bootstrap, group, [topic]))
        wait_for(lambda: members[2].errors, "the third member is refused")
        assert any("_FATAL" in e and "Consumer group has reached maximum size" in e
                   for e in members[2].errors), members[2].errors
        assert members[2].partitions() == set()
        assert all(len(m.partitions()) == 2 for m in members[:2])
    finally:
        for member in members:
            member.close()


def test_only_the_configured_server_assignors_are_offered(no_migration_broker, topic):
    """`group.consumer.assignors=range`: a member asking for `uniform` is
    refused with UNSUPPORTED_ASSIGNOR (fatal to librdkafka); members asking
    for none get contiguous ranges, the only assignor offered being the
    default."""
    bootstrap = no_migration_broker.bootstrap
    create(bootstrap, (topic, 4))
    group = topic + "-group"
    refused = Member(bootstrap, group + "-uniform", [topic], **{"group.remote.assignor": "uniform"})
    members = []
    try:
        wait_for(lambda: refused.errors, "the uniform member is refused")
        assert any("_FATAL" in e and "assignor or its version range is not supported" in e
                   for e in refused.errors), \
            refused.errors
        members = [Member(bootstrap, group, [topic]), Member(bootstrap, group, [topic])]
        wait_for(lambda: all(len(m.partitions()) == 2 for m in members), "two members 2 + 2")
        ranges = sorted(sorted(p for _, p in m.partitions()) for m in members)
        assert ranges == [[0, 1], [2, 3]]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(30)
        assert described.partition_assignor == "range"
    finally:
        refused.close()
        for member in members:
            member.close()
