"""SASL re-authentication (KIP-368) with librdkafka and the Java client.

Goal: with `connections.max.reauth.ms` set, librdkafka (confluent-kafka)
learns the session lifetime when it logs in and renews its session on the
same connection before it ends, again and again, so a producer that runs
for several lifetimes keeps its connection and has every message
acknowledged and read back. Kafka 4.1.1 with connections.max.reauth.ms=3000
gave the same client the same lifetime and the same renewals, without a
disconnection. The Java client's producer renews likewise, by its own
metrics (one renewal in 5 s against Kafka 4.1.1 and against this broker,
both with a 3 s lifetime; none failed, no connection closed). (The exchange itself, and what happens to a client that
does not renew, is in tests/sasl_scram_authenticates_like_kafka.rs.)

Method: a broker listening SASL_PLAINTEXT with a 1.5 s session lifetime; a
producer with librdkafka's `security` and `broker` debug logs sends a
message every 100 ms for 5 s; the logs are read for the lifetime, the
renewals and any disconnection. The Java producer (JavaClient `reauth`
mode) sends a record every 100 ms for 5 s and reports its metrics.
"""

import logging
import time

import pytest
from confluent_kafka import Producer

from conftest import Broker, serve
from test_confluent_kafka import read
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

LIFETIME_MS = 1500
SCRAM_ALICE = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-256",
    "sasl.username": "alice",
    "sasl.password": "alice-secret",
}


@pytest.fixture(scope="module")
def reauth_broker(tmp_path_factory):
    yield from serve(Broker(
        tmp_path_factory.mktemp("ringbroker-reauth"),
        extra_args=[
            "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            "--connections-max-reauth-ms", str(LIFETIME_MS),
        ],
        listen_protocol="SASL_PLAINTEXT",
    ))


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_librdkafka_renews_its_session_on_the_same_connection(reauth_broker, topic):
    lines = Lines()
    logger = logging.getLogger(f"librdkafka-{topic}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    producer = Producer({
        "bootstrap.servers": reauth_broker.bootstrap, **SCRAM_ALICE,
        "debug": "security,broker", "logger": logger,
    })
    acked, failed = [], []

    def on_delivery(error, message):
        (failed if error else acked).append(error or (message.partition(), message.offset(), message.value()))

    sent = 0
    started = time.monotonic()
    while time.monotonic() - started < 5:
        producer.produce(topic, value=b"renewed-%d" % sent, partition=0, on_delivery=on_delivery)
        sent += 1
        producer.poll(0.1)
    assert producer.flush(30) == 0
    assert failed == [] and len(acked) == sent

    told = [line for line in lines.lines if f"Received session lifetime {LIFETIME_MS} ms from broker" in line]
    renewals = [line for line in lines.lines if "Received REAUTH op" in line]
    dropped = [line for line in lines.lines if "Disconnected" in line or "Connection refused" in line]
    # Logged in (bootstrap and broker connections), then renewed at about
    # 85-95 % of each lifetime: at least twice in 5 s.
    assert len(told) >= 2 + len(renewals), told
    assert len(renewals) >= 2, renewals
    assert dropped == [], dropped

    got = read(reauth_broker, topic, {0: sent}, **SCRAM_ALICE)
    assert [(m.partition(), m.offset(), m.value()) for m in got[0]] == acked


def test_java_client_renews_its_session_on_the_same_connection(classpath, reauth_broker, topic):
    seen = run_java(classpath, "reauth", reauth_broker, topic,
                    env={"JAVA_CLIENT_SASL": "SCRAM-SHA-256:alice:alice-secret"})
    assert seen["acked"] >= 20, seen
    # Renewed at 85-95 % of each 1.5 s lifetime: at least twice in 5 s.
    assert seen["reauthenticated"] >= 2, seen
    assert (seen["failed"], seen["closed"]) == (0, 0), seen
