"""SASL/PLAIN with real clients against a SASL_PLAINTEXT listener.

Goal: clients configured for PLAIN as their documentation says log in with
the users of Kafka's JAAS file (kafka_server_jaas.conf's KafkaServer
section, `user_NAME="PASSWORD"`) and work as against Kafka, and a wrong
password is refused with Kafka's message: librdkafka (confluent-kafka)
produces idempotently and reads back as another user; kafka-python produces
and consumes; Debian's kcat (librdkafka 2.0.2, which cannot log in with
SCRAM) produces and consumes; the Java client produces idempotently, reads
back in a consumer group that commits, and its admin client reads the
committed offsets.

Method: one broker for this module, listening SASL_PLAINTEXT with
`--sasl-enabled-mechanisms PLAIN,SCRAM-SHA-256` and `--jaas-config-file`.
The refusal messages are those Kafka 4.1.1 gave the same clients with the
same JAAS users.
"""

import subprocess

import pytest
from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

from conftest import Broker, kafka_python_round_trip, serve
from test_confluent_kafka import assert_refused, produce_and_read_back
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

INVALID = "Authentication failed: Invalid username or password"

JAAS = """
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"
    user_alice="alice-secret"
    user_bob="bob-secret";
};
"""


@pytest.fixture(scope="module")
def plain_broker(tmp_path_factory):
    work = tmp_path_factory.mktemp("ringbroker-plain")
    jaas = work / "kafka_server_jaas.conf"
    jaas.write_text(JAAS)
    yield from serve(Broker(
        work,
        extra_args=[
            "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256",
            "--jaas-config-file", str(jaas),
        ],
        listen_protocol="SASL_PLAINTEXT",
    ))


def librdkafka_plain(broker, user, password):
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


def test_librdkafka_produces_and_another_user_reads_back(plain_broker, topic):
    produce_and_read_back(
        plain_broker, topic,
        {**librdkafka_plain(plain_broker, "alice", "alice-secret"), "enable.idempotence": True},
        librdkafka_plain(plain_broker, "bob", "bob-secret"),
    )


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("nobody", "alice-secret"), ("admin", "admin-secret")])
def test_librdkafka_is_refused_with_kafkas_message(plain_broker, user, password):
    # admin is the JAAS entry's own login (username/password), not a user:
    # Kafka refuses it too.
    assert_refused(librdkafka_plain(plain_broker, user, password), INVALID)


def kafka_python(broker, password="bob-secret", **extra):
    return dict(
        bootstrap_servers=broker.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="bob",
        sasl_plain_password=password,
        request_timeout_ms=10000,
        **extra,
    )


def test_kafka_python_produces_and_consumes(plain_broker, topic):
    kafka_python_round_trip(topic, **kafka_python(plain_broker))

    # A wrong password: kafka-python cannot bootstrap, the broker says why
    # and serves on.
    refusals = plain_broker.log_text().count(INVALID)
    with pytest.raises(KafkaTimeoutError):
        KafkaProducer(**kafka_python(plain_broker, password="nope", max_block_ms=3000)).send(topic, b"x").get(timeout=5)
    assert plain_broker.log_text().count(INVALID) > refusals
    plain_broker.assert_alive()


def kcat(broker, *args, user="alice", password="alice-secret", stdin=None):
    return subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
         "-X", "sasl.mechanism=PLAIN", "-X", f"sasl.username={user}", "-X", f"sasl.password={password}", *args],
        input=stdin, capture_output=True, text=True, timeout=60,
    )


def test_kcat_produces_and_consumes(plain_broker, topic):
    lines = [f"line-{i}" for i in range(100)]
    produced = kcat(plain_broker, "-P", "-t", topic, "-p", "0", stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr
    consumed = kcat(plain_broker, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-c", "100", user="bob", password="bob-secret")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == lines
    refused = kcat(plain_broker, "-L", "-m", "3", password="nope")
    assert refused.returncode != 0
    assert INVALID in refused.stderr


def test_java_admin_gets_kafkas_answers_to_delegation_token_requests(classpath, plain_broker, topic):  # noqa: F811
    # Kafka 4.1.1 without delegation.token.secret.key (its default), on a
    # SASL_PLAINTEXT listener with PLAIN, gives the same answers.
    result = run_java(classpath, "delegation-tokens", plain_broker, topic,
                      env={"JAVA_CLIENT_SASL": "PLAIN:alice:alice-secret"})
    disabled = "DelegationTokenDisabledException"
    assert result == {
        "create": disabled,
        "create for bob": disabled,  # no authorizer: any owner may be named
        "create renewed by a group": "InvalidPrincipalTypeException",
        "describe": disabled,
        "renew": disabled,
        "expire": disabled,
    }


def test_java_client_produces_consumes_in_a_group_and_commits(classpath, plain_broker, topic):  # noqa: F811
    result = run_java(classpath, "plain", plain_broker, topic, env={"JAVA_CLIENT_SASL": "PLAIN:alice:alice-secret"})
    assert result == {
        "read": 200,
        "committed": 200,
        "refused": "SaslAuthenticationException: " + INVALID,
    }
