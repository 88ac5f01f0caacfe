"""Client quotas with real clients.

Goal: quotas set as `kafka-configs --entity-type clients` sets them (the
Java Admin's alterClientQuotas / describeClientQuotas) hold producers and
consumers to their byte rates, as Kafka does: every record is still
acknowledged and read back in order, the clients see the throttle (the
Java client's throttle-time metrics, librdkafka's throttle callback), and
one client's connections on different cores share one quota. An admin
client under `controller_mutation_rate` gets THROTTLING_QUOTA_EXCEEDED for
the topic past it, or, by default, waits out the throttle and retries.

Method: a two-core broker for this module. The Java scenario printed the
same answers against Kafka 4.1.1 (KRaft, single node); librdkafka took
12.4 s to produce 1.5 MB at 100 kB/s on both Kafka and ringbroker (an idle
client may send ten seconds' worth at once, Kafka's window), so the
assertions here are lower bounds on time and what the clients saw.
"""

import struct
import socket
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, serve
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

RATE = 100_000
MESSAGES = 1500
SIZE = 1000


@pytest.fixture(scope="module")
def quota_broker(tmp_path_factory):
    yield from serve(Broker(tmp_path_factory.mktemp("ringbroker-quotas"), cores=2))


def set_client_quotas(bootstrap, quotas):
    """AlterClientQuotas v0 by hand (no Python client has it): `quotas` is
    [(client id, key, value or None to remove)]. Returns the error codes."""
    def string(text):
        data = text.encode()
        return struct.pack(">h", len(data)) + data
    body = struct.pack(">i", len(quotas))
    for client_id, key, value in quotas:
        body += struct.pack(">i", 1) + string("client-id") + string(client_id)
        body += struct.pack(">i", 1) + string(key) + struct.pack(">d?", value or 0.0, value is None)
    body += struct.pack(">?", False)
    header = struct.pack(">hhi", 49, 0, 1) + string("quota-test")
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        frame = header + body
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        answer = sock.recv(size, socket.MSG_WAITALL)
    # correlation id, throttle, entries: [error code, message, entity]
    position = 8
    (count,) = struct.unpack_from(">i", answer, position)
    position += 4
    codes = []
    for _ in range(count):
        (code, length) = struct.unpack_from(">hh", answer, position)
        position += 4 + max(length, 0)
        (components,) = struct.unpack_from(">i", answer, position)
        position += 4
        for _ in range(components):
            for _ in range(2):
                (length,) = struct.unpack_from(">h", answer, position)
                position += 2 + max(length, 0)
        codes.append(code)
    return codes


def create_topic(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()


def test_java_admin_sets_quotas_that_throttle_java_producers_and_consumers(classpath, quota_broker, topic):
    seen = run_java(classpath, "quotas", quota_broker, topic)
    assert seen == {
        "clients": "java-quota-c-T={consumer_byte_rate=100000.0};java-quota-p-T={producer_byte_rate=100000.0}",
        "default_client": "{ClientQuotaEntity(entries={client-id=null})={producer_byte_rate=1.0E12}}",
        "fractional": "InvalidRequestException",
        "acked": "1500",
        "produce_throttled": "true",
        "produce_at_least_5s": "true",
        "read": "1500",
        "in_order": "true",
        "fetch_throttled": "true",
        "consume_at_least_5s": "true",
        "no_retry": "ok,ok,ThrottlingQuotaExceededException",
        "retried_after_throttle": "true",
        "left": "0",
        "request_quota": "[{request_percentage=1.0E-6}]",
        "request_throttle_max": "1000.0",
        "request_acked": "3",
    }


def produce(bootstrap, topic, client_id, count, throttles):
    """Produces `count` records of SIZE bytes in batches of 16 kB (a
    throttle holds back the requests after the one it answers: with
    librdkafka's default 1 MB batches, 1.5 MB is two requests, both sent
    before the first answer); returns how many were acked."""
    producer = Producer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "batch.size": 16384,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })
    acked = []
    for index in range(count):
        while True:
            try:
                producer.produce(topic, value=b"x" * SIZE, key=str(index).encode(),
                                 on_delivery=lambda err, msg: acked.append(err is None))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    return sum(acked)


def test_librdkafka_is_throttled_and_loses_nothing(quota_broker, topic):
    bootstrap = quota_broker.bootstrap
    create_topic(bootstrap, topic)
    producer_id, consumer_id = f"rdk-quota-p-{topic}", f"rdk-quota-c-{topic}"
    assert set_client_quotas(bootstrap, [
        (producer_id, "producer_byte_rate", RATE), (consumer_id, "consumer_byte_rate", RATE),
    ]) == [0, 0]
    throttles = []
    started = time.monotonic()
    assert produce(bootstrap, topic, producer_id, MESSAGES, throttles) == MESSAGES
    assert time.monotonic() - started >= 5
    assert throttles and max(throttles) > 0

    throttles.clear()
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "client.id": consumer_id, "group.id": f"g-{topic}",
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })
    consumer.assign([TopicPartition(topic, 0, 0)])
    started = time.monotonic()
    read = []
    while len(read) < MESSAGES and time.monotonic() - started < 90:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            read.append((message.offset(), message.key()))
    consumer.close()
    assert read == [(index, str(index).encode()) for index in range(MESSAGES)]
    assert time.monotonic() - started >= 5
    assert throttles and max(throttles) > 0
    assert set_client_quotas(bootstrap, [
        (producer_id, "producer_byte_rate", None), (consumer_id, "consumer_byte_rate", None),
    ]) == [0, 0]


def test_connections_of_one_client_share_its_quota(quota_broker, topic):
    """Two producers with one client id, each sending less than the ten
    seconds' worth an idle client may send at once: unthrottled if each
    connection (or core) had a quota of its own, throttled as one."""
    bootstrap = quota_broker.bootstrap
    create_topic(bootstrap, topic)
    client_id = f"rdk-quota-shared-{topic}"
    assert set_client_quotas(bootstrap, [(client_id, "producer_byte_rate", RATE)]) == [0]
    throttles, acked = [], []
    started = time.monotonic()
    producers = [
        threading.Thread(target=lambda: acked.append(produce(bootstrap, topic, client_id, 800, throttles)))
        for _ in range(2)
    ]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join()
    assert acked == [800, 800]
    assert throttles and max(throttles) > 0
    assert time.monotonic() - started >= 3
    assert set_client_quotas(bootstrap, [(client_id, "producer_byte_rate", None)]) == [0]


def test_librdkafka_under_a_request_quota_is_throttled_and_loses_nothing(quota_broker, topic):
    """request_percentage: 0.000001 % of a thread (0.1 µs over the ten
    seconds a new sensor measures across) is spent by any request, so every
    answer to these clients is throttled for a whole window (1 s), as on
    Kafka. The producer's records are all written (a throttled produce is
    still written); the consumer reads nothing while its throttled fetches
    answer empty, then everything, in order, once the quota is removed."""
    bootstrap = quota_broker.bootstrap
    create_topic(bootstrap, topic)
    producer_id, consumer_id = f"rdk-request-p-{topic}", f"rdk-request-c-{topic}"
    assert set_client_quotas(bootstrap, [
        (producer_id, "request_percentage", 1e-6), (consumer_id, "request_percentage", 1e-6),
    ]) == [0, 0]
    throttles = []
    started = time.monotonic()
    count = 40
    assert produce(bootstrap, topic, producer_id, count, throttles) == count
    assert time.monotonic() - started >= 2
    assert throttles and max(throttles) == 1.0  # seconds

    throttles.clear()
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "client.id": consumer_id, "group.id": f"g-{topic}",
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = []

    def poll_for(seconds):
        deadline = time.monotonic() + seconds
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                read.append((message.offset(), message.key()))

    poll_for(5)
    assert read == []
    assert throttles and max(throttles) == 1.0  # seconds
    assert set_client_quotas(bootstrap, [
        (producer_id, "request_percentage", None), (consumer_id, "request_percentage", None),
    ]) == [0, 0]
    poll_for(30)
    consumer.close()
    assert read == [(index, str(index).encode()) for index in range(count)]
