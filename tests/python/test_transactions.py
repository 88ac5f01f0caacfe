"""Idempotent and transactional producers (confluent-kafka, i.e. librdkafka)
against ringbroker.

Goal: what exactly-once users rely on. An idempotent producer whose
connections are cut again and again writes every acknowledged record exactly
once and in order. A transactional copier (read_committed consumer, produce,
send_offsets_to_transaction, commit) that aborts every fifth transaction
leaves each input record in the output exactly once for read_committed
readers, while read_uncommitted readers also see the aborted copies, as with
Kafka; the group's committed offsets end at the input's end. A second
producer with the same transactional.id fences the first (its commit fails,
its records stay invisible). A transaction left open past its timeout is
aborted by the broker and its producer fenced. A broker killed with -9 in the
middle of a transaction ends it consistently after restart: the producer
commits it (all visible) or a new producer aborts it (none visible).

Method: brokers of this module run 2 shards, so markers cross cores, with
the timed-out-transaction check every 500 ms and no initial rebalance delay.
The cut-connections test runs its own broker whose advertised address is a
TCP proxy in this process that cuts every connection after a random 2-12 KiB
from the client, mostly in the middle of a request. Every
wait polls with a deadline.
"""

import random
import socket
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import conftest

TXN_FLAGS = [
    "--group-initial-rebalance-delay-ms", "0",
    "--transaction-abort-timed-out-transaction-cleanup-interval-ms", "500",
]
PARTITIONS = 2


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    yield from conftest.serve(conftest.Broker(tmp_path_factory.mktemp("ringbroker-txn"), extra_args=TXN_FLAGS, cores=2))


@pytest.fixture
def broker(txn_broker):
    """This module's broker (named `broker` so conftest attaches its log to failures)."""
    txn_broker.assert_alive()
    yield txn_broker


def create_topics(bootstrap, *names, partitions=PARTITIONS):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result(timeout=30)


def read_all(bootstrap, topic, isolation, expected=None, timeout=20, quiet=1.5):
    """Values of every record of `topic` for `isolation`, read from the start.
    Stops once `expected` records arrived (then waits `quiet` s for extra
    ones) or nothing new came for `quiet` s after the end offsets."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"reader-{topic}-{isolation}-{time.monotonic_ns()}",
        "isolation.level": isolation,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values = []
    deadline = time.monotonic() + timeout
    last_new = time.monotonic()
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                enough = expected is None or len(values) >= expected
                if enough and time.monotonic() - last_new > quiet:
                    break
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(message.error())
            values.append((message.partition(), message.value().decode()))
            last_new = time.monotonic()
    finally:
        consumer.close()
    return values


def transactional_producer(bootstrap, transactional_id, **extra):
    config = {
        "bootstrap.servers": bootstrap,
        "transactional.id": transactional_id,
        "linger.ms": 5,
    }
    config.update(extra)
    producer = Producer(config)
    producer.init_transactions(30)
    return producer


def test_transactional_copier_commits_exactly_once_and_hides_aborted_copies(broker, topic):
    source, sink, group = f"{topic}-in", f"{topic}-out", f"{topic}-copier"
    create_topics(broker.bootstrap, source, sink)
    records = 300
    plain = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(records):
        plain.produce(source, value=f"r{i}", partition=i % PARTITIONS)
    assert plain.flush(30) == 0

    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    consumer.assign([TopicPartition(source, p) for p in range(PARTITIONS)])
    producer = transactional_producer(broker.bootstrap, f"{topic}-copier-txn")
    copied, aborted_copies, txn_index = 0, 0, 0
    positions = {p: 0 for p in range(PARTITIONS)}
    deadline = time.monotonic() + 90
    while copied < records:
        assert time.monotonic() < deadline, f"copier stuck at {copied}/{records}"
        batch = consumer.consume(20, timeout=1.0)
        batch = [m for m in batch if m.error() is None]
        if not batch:
            continue
        txn_index += 1
        producer.begin_transaction()
        for m in batch:
            producer.produce(sink, value=f"copy-{m.value().decode()}", partition=m.partition())
        offsets = [
            TopicPartition(source, p, max(m.offset() for m in batch if m.partition() == p) + 1)
            for p in {m.partition() for m in batch}
        ]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        if txn_index % 5 == 0:
            # Make sure the copies reach the log before the abort, so the
            # abort has something to hide.
            assert producer.flush(30) == 0
            producer.abort_transaction(30)
            aborted_copies += len(batch)
            for p, offset in positions.items():
                consumer.seek(TopicPartition(source, p, offset))
        else:
            producer.commit_transaction(30)
            copied += len(batch)
            for tp in offsets:
                positions[tp.partition] = tp.offset
    consumer.close()
    assert aborted_copies > 0

    committed = read_all(broker.bootstrap, sink, "read_committed", expected=records)
    values = [v for _, v in committed]
    assert len(values) == records, f"read_committed saw {len(values)} records, want {records}"
    assert sorted(values) == sorted(f"copy-r{i}" for i in range(records))
    uncommitted = read_all(broker.bootstrap, sink, "read_uncommitted", expected=records + aborted_copies)
    assert len(uncommitted) == records + aborted_copies, "read_uncommitted sees the aborted copies too"

    checker = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    committed_offsets = checker.committed([TopicPartition(source, p) for p in range(PARTITIONS)], timeout=10)
    checker.close()
    assert sum(tp.offset for tp in committed_offsets) == records


def test_second_producer_with_the_same_transactional_id_fences_the_first(broker, topic):
    create_topics(broker.bootstrap, topic)
    transactional_id = f"{topic}-txn"
    zombie = transactional_producer(broker.bootstrap, transactional_id)
    zombie.begin_transaction()
    zombie.produce(topic, value="zombie", partition=0)
    assert zombie.flush(30) == 0

    successor = transactional_producer(broker.bootstrap, transactional_id)
    with pytest.raises(KafkaException) as fenced:
        zombie.commit_transaction(30)
    assert fenced.value.args[0].fatal() or fenced.value.args[0].code() in (
        KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH,
    ), fenced.value

    successor.begin_transaction()
    successor.produce(topic, value="successor", partition=0)
    successor.commit_transaction(30)
    values = [v for _, v in read_all(broker.bootstrap, topic, "read_committed", expected=1)]
    assert values == ["successor"]
    everything = [v for _, v in read_all(broker.bootstrap, topic, "read_uncommitted", expected=2)]
    assert sorted(everything) == ["successor", "zombie"]


def test_transaction_past_its_timeout_is_aborted_and_its_producer_fenced(broker, topic):
    create_topics(broker.bootstrap, topic)
    producer = transactional_producer(broker.bootstrap, f"{topic}-txn", **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    producer.produce(topic, value="late", partition=1)
    assert producer.flush(30) == 0
    time.sleep(3)
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value="after", partition=1)
    assert plain.flush(30) == 0
    # The abort marker moved the last stable offset past the open records, so
    # read_committed readers get what follows and never the aborted record.
    values = [v for _, v in read_all(broker.bootstrap, topic, "read_committed", expected=1)]
    assert values == ["after"]


def test_kill_9_in_the_middle_of_transactions_ends_each_all_or_nothing(tmp_path, topic):
    broker = conftest.Broker(tmp_path, extra_args=TXN_FLAGS, cores=2)
    broker.start()
    try:
        create_topics(broker.bootstrap, topic)
        done = transactional_producer(broker.bootstrap, f"{topic}-done")
        done.begin_transaction()
        for i in range(10):
            done.produce(topic, value=f"done-{i}", partition=i % PARTITIONS)
        done.commit_transaction(30)

        resumed = transactional_producer(broker.bootstrap, f"{topic}-resumed")
        resumed.begin_transaction()
        for i in range(10):
            resumed.produce(topic, value=f"resumed-{i}", partition=i % PARTITIONS)
        assert resumed.flush(30) == 0

        orphan = transactional_producer(broker.bootstrap, f"{topic}-orphan")
        orphan.begin_transaction()
        for i in range(10):
            orphan.produce(topic, value=f"orphan-{i}", partition=i % PARTITIONS)
        assert orphan.flush(30) == 0

        broker.kill()
        broker.start()

        # The same producer commits its open transaction after the restart.
        resumed.commit_transaction(60)
        # A new producer with the orphan's id aborts the orphan's transaction.
        del orphan
        successor = transactional_producer(broker.bootstrap, f"{topic}-orphan")
        successor.begin_transaction()
        successor.produce(topic, value="successor", partition=0)
        successor.commit_transaction(30)

        values = sorted(v for _, v in read_all(broker.bootstrap, topic, "read_committed", expected=21))
        want = sorted([f"done-{i}" for i in range(10)] + [f"resumed-{i}" for i in range(10)] + ["successor"])
        assert values == want
        broker.stop()
    finally:
        broker.kill()


class CuttingProxy:
    """A TCP proxy to `target_port` that cuts every connection once it has
    carried a random 2-12 KiB from the client to the broker, mostly in the
    middle of a request.

    Cutting by bytes rather than by a timer means each connection gets some
    work done: librdkafka >= 2.10 re-bootstraps whenever every broker is
    down (here: on every cut), and a blind timer can keep cutting that
    ApiVersions/Metadata/InitProducerId sequence before any produce gets
    through, with Kafka as with us.
    """

    def __init__(self, target_port, min_bytes=2048, max_bytes=12288, seed=5):
        self.target_port = target_port
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.random = random.Random(seed)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.cuts = 0
        self.stopping = threading.Event()
        self.cutting = threading.Event()
        self.cutting.set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                budget = self.random.randint(self.min_bytes, self.max_bytes)
            threading.Thread(target=self._pipe, args=(client, upstream, budget), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, None), daemon=True).start()

    def _pipe(self, source, sink, budget):
        """Copies source to sink; with a budget, cuts both sockets once
        `budget` bytes have gone through (while cutting is on)."""
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if budget is not None and self.cutting.is_set() and len(data) >= budget:
                    sink.sendall(data[:budget])
                    with self.lock:
                        self.cuts += 1
                    break
                if budget is not None:
                    budget -= len(data)
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        self.stopping.set()
        self.listener.close()


def test_idempotent_producer_with_connections_cut_writes_each_record_once_in_order(tmp_path, topic):
    broker_port = conftest.free_port()
    proxy = CuttingProxy(broker_port)
    broker = conftest.Broker(tmp_path, extra_args=["--advertised-listen", f"127.0.0.1:{proxy.port}"])
    broker.port = broker_port
    broker.start()
    try:
        bootstrap = f"127.0.0.1:{proxy.port}"
        create_topics(broker.bootstrap, topic)
        producer = Producer({
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
            "message.timeout.ms": 120000,
            "reconnect.backoff.ms": 10,
            "reconnect.backoff.max.ms": 100,
        })
        acknowledged = []
        failed = []

        def on_delivery(error, message):
            if error is None:
                acknowledged.append((message.partition(), message.offset(), message.value().decode()))
            else:
                failed.append(error)

        records = 6000
        for i in range(records):
            producer.produce(topic, value=f"{i:06d}", partition=i % PARTITIONS, on_delivery=on_delivery)
            if i % 200 == 0:
                producer.poll(0)
                time.sleep(0.02)
        assert producer.flush(90) == 0, "every record is delivered or failed within the timeout"
        proxy.cutting.clear()
        assert proxy.cuts >= 3, f"the proxy only cut {proxy.cuts} times"
        assert not failed, f"idempotent delivery failed: {failed[:3]}"
        assert len(acknowledged) == records

        stored = read_all(broker.bootstrap, topic, "read_uncommitted", expected=records)
        values = [v for _, v in stored]
        assert len(values) == len(set(values)), "a record was written twice"
        assert sorted(values) == sorted(f"{i:06d}" for i in range(records))
        for partition in range(PARTITIONS):
            in_log = [int(v) for p, v in stored if p == partition]
            assert in_log == sorted(in_log), f"partition {partition} holds records out of order"
        broker.stop()
    finally:
        proxy.stop()
        broker.kill()
