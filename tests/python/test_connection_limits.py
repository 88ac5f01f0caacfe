"""Connection limits set with real admin clients.

Goal: the Java Admin sets connection limits as `kafka-configs --alter
--entity-type brokers` does (the cluster default and broker 0), a bad
value is refused with Kafka's message, and describing both resources shows
what Kafka 4.1.1 converges to for the same calls (Kafka answered the same
values and sources once its broker had applied the change). The limits are
in force at once: a second host (connections from 127.0.0.2) past its
override is closed while librdkafka clients on 127.0.0.1 go on producing and
consuming; librdkafka's admin client deletes the override and the second
host is served again.
"""

import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)

from conftest import Broker, serve
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)


@pytest.fixture(scope="module")
def limits_broker(tmp_path_factory):
    yield from serve(Broker(tmp_path_factory.mktemp("ringbroker-connection-limits")))


def connect_from(bootstrap, source):
    """A connection from local address `source` that sent ApiVersions v0:
    True when answered, False when closed unanswered."""
    host, port = bootstrap.split(":")
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(5)
    sock.connect((host, int(port)))
    body = struct.pack(">hhih", 18, 0, 7, 4) + b"test"
    try:
        sock.sendall(struct.pack(">i", len(body)) + body)
        answered = len(sock.recv(4, socket.MSG_WAITALL)) == 4
    except (ConnectionResetError, BrokenPipeError):
        answered = False
    except socket.timeout:
        raise AssertionError(f"a connection from {source} was neither answered nor closed in 5 s")
    return sock, answered


def round_trip(bootstrap, topic, count=100):
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "limits-" + topic,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values = []
    deadline = time.time() + 30
    while len(values) < count and time.time() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None and message.partition() == 0:
            values.append(message.value())
    consumer.close()
    assert values == [b"v%d" % i for i in range(count)]


def alter_overrides(admin, value, operation):
    """Alters broker 0's max.connections.per.ip.overrides with librdkafka's
    incremental API and returns broker 0's configs as described after."""
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("max.connections.per.ip.overrides", value,
                    incremental_operation=operation)])
    admin.incremental_alter_configs([resource])[resource].result()
    described = ConfigResource(ResourceType.BROKER, "0")
    return admin.describe_configs([described])[described].result()


def test_java_admin_sets_connection_limits_that_apply_at_once(classpath, limits_broker, topic):
    seen = run_java(classpath, "connection-limits", limits_broker, topic)
    assert seen == {
        "refused": "InvalidRequestException: Invalid value -1 for configuration "
                   "max.connections.per.ip: Value must be at least 0",
        "default": ["max.connections.per.ip=50 (DYNAMIC_DEFAULT_BROKER_CONFIG) "
                    "[DYNAMIC_DEFAULT_BROKER_CONFIG:50]"],
        "broker": [
            "max.connection.creation.rate=1000 (DYNAMIC_BROKER_CONFIG) "
            "[DYNAMIC_BROKER_CONFIG:1000, DEFAULT_CONFIG:2147483647]",
            "max.connections.per.ip.overrides=127.0.0.2:1 (DYNAMIC_BROKER_CONFIG) "
            "[DYNAMIC_BROKER_CONFIG:127.0.0.2:1, DEFAULT_CONFIG:]",
            "max.connections.per.ip=50 (DYNAMIC_DEFAULT_BROKER_CONFIG) "
            "[DYNAMIC_DEFAULT_BROKER_CONFIG:50, DEFAULT_CONFIG:2147483647]",
            "max.connections=2147483647 (DEFAULT_CONFIG) [DEFAULT_CONFIG:2147483647]",
        ],
    }
    bootstrap = limits_broker.bootstrap
    first, answered = connect_from(bootstrap, "127.0.0.2")
    assert answered, "the second host's one connection was not served"
    second, answered = connect_from(bootstrap, "127.0.0.2")
    assert not answered, "the second host's override of 1 let a second connection in"
    second.close()
    # 127.0.0.1 is held to 50 connections: librdkafka is unaffected.
    round_trip(bootstrap, topic)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = alter_overrides(admin, None, AlterConfigOpType.DELETE)
    assert configs["max.connections.per.ip.overrides"].value == ""
    assert configs["max.connections.per.ip"].value == "50"
    third, answered = connect_from(bootstrap, "127.0.0.2")
    assert answered, "the second host is still limited after its override was deleted"
    for sock in (first, third):
        sock.close()


@pytest.fixture
def hosts_broker(tmp_path):
    yield from serve(Broker(tmp_path))


def test_librdkafka_admin_sets_overrides_naming_hosts(hosts_broker):
    """An override may name a host, as in Kafka 4.1.1: librdkafka's admin
    sets `localhost:4` on broker 0 and, once its connections are gone,
    127.0.0.1 (what localhost resolves to) holds four connections and a
    fifth is closed. A host that does not resolve is taken and described,
    as Kafka takes it, and leaves localhost's 4 in force."""
    bootstrap = hosts_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def set_overrides(value):
        configs = alter_overrides(admin, value, AlterConfigOpType.SET)
        assert configs["max.connections.per.ip.overrides"].value == value

    set_overrides("localhost:4")
    set_overrides("localhost:1,no-such-host.invalid:1")
    del admin
    held = []
    deadline = time.time() + 10
    while len(held) < 4:
        sock, answered = connect_from(bootstrap, "127.0.0.1")
        if answered:
            held.append(sock)
        else:
            sock.close()
            assert time.time() < deadline, f"only {len(held)} connections from 127.0.0.1 served"
            time.sleep(0.2)
    fifth, answered = connect_from(bootstrap, "127.0.0.1")
    assert not answered, "a fifth connection from 127.0.0.1 was served past localhost:4"
    for sock in held + [fifth]:
        sock.close()
    assert "max.connections.per.ip.overrides could not be applied: no-such-host.invalid" \
        in hosts_broker.log_path.read_text()
