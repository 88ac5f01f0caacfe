"""SASL/SCRAM with real clients against a SASL_PLAINTEXT listener.

Goal: clients authenticate with SCRAM-SHA-256 and SCRAM-SHA-512 as against
Kafka, and are refused with Kafka's message otherwise: librdkafka
(confluent-kafka) produces and reads back what it produced, and its
AdminClient creates, describes and deletes credentials
(AlterUserScramCredentials, DescribeUserScramCredentials); kafka-python
logs in with a credential created so, and cannot once it is deleted; the
Java client does the same as `kafka-configs --alter --add-config
'SCRAM-SHA-512=[...]' --entity-type users` and logs in with it.

Method: one broker for this module, listening SASL_PLAINTEXT, started with
`--add-scram` credentials for alice (the admin); every client is configured
as its documentation says for SCRAM. The answers compared are those Kafka
4.1.1 gave the same clients (recorded by hand against a SASL_PLAINTEXT
listener with sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512).
"""

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

from conftest import Broker, kafka_python_round_trip, serve
from test_confluent_kafka import assert_refused, produce_and_read_back
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

ALICE = {"user": "alice", "password": "alice-secret"}


def invalid_credentials(mechanism):
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory):
    yield from serve(Broker(
        tmp_path_factory.mktemp("ringbroker-sasl"),
        extra_args=[
            "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            "--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]",
        ],
        listen_protocol="SASL_PLAINTEXT",
    ))


def librdkafka_sasl(broker, mechanism, user, password):
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def test_librdkafka_produces_and_reads_back_with_either_mechanism(sasl_broker, topic):
    produce_and_read_back(
        sasl_broker, topic,
        {**librdkafka_sasl(sasl_broker, "SCRAM-SHA-256", **ALICE), "enable.idempotence": True},
        librdkafka_sasl(sasl_broker, "SCRAM-SHA-512", **ALICE),
    )


@pytest.mark.parametrize("mechanism,user,password", [
    ("SCRAM-SHA-256", "alice", "wrong"),
    ("SCRAM-SHA-512", "nobody", "alice-secret"),
])
def test_librdkafka_is_refused_with_kafkas_message(sasl_broker, mechanism, user, password):
    assert_refused(librdkafka_sasl(sasl_broker, mechanism, user, password), invalid_credentials(mechanism))


def test_admin_manages_credentials_that_kafka_python_logs_in_with(sasl_broker, topic):
    admin = AdminClient(librdkafka_sasl(sasl_broker, "SCRAM-SHA-256", **ALICE))
    upserted = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("py-user", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"py-secret"),
        UserScramCredentialUpsertion("py-other", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 10000), b"x"),
    ])
    for future in upserted.values():
        assert future.result() is None
    described = admin.describe_user_scram_credentials(["py-user", "py-other"])
    infos = {
        user: sorted((info.mechanism, info.iterations) for info in future.result().scram_credential_infos)
        for user, future in described.items()
    }
    assert infos == {
        "py-user": [(ScramMechanism.SCRAM_SHA_256, 4096)],
        "py-other": [(ScramMechanism.SCRAM_SHA_512, 10000)],
    }
    everyone = admin.describe_user_scram_credentials().result()
    assert {"alice", "py-user", "py-other"} <= set(everyone)

    def kafka_python(**extra):
        return dict(
            bootstrap_servers=sasl_broker.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="py-user",
            sasl_plain_password="py-secret",
            request_timeout_ms=10000,
            **extra,
        )

    kafka_python_round_trip(topic, **kafka_python())

    deleted = admin.alter_user_scram_credentials([
        UserScramCredentialDeletion("py-user", ScramMechanism.SCRAM_SHA_256),
        UserScramCredentialDeletion("py-other", ScramMechanism.SCRAM_SHA_256),
    ])
    assert deleted["py-user"].result() is None
    with pytest.raises(KafkaException) as refused:
        deleted["py-other"].result()
    assert refused.value.args[0].str() == "Attempt to delete a user credential that does not exist"
    with pytest.raises(KafkaException) as missing:
        admin.describe_user_scram_credentials(["py-user"])["py-user"].result()
    # librdkafka (2.16) shows this message with a stray \x01 at the end,
    # against Kafka 4.1.1 as here.
    assert missing.value.args[0].str().rstrip("\x01") == (
        "Attempt to describe a user credential that does not exist: py-user"
    )
    # Kafka-python cannot bootstrap once its credential is gone: the broker
    # refuses it for that reason and goes on serving alice.
    refusals = sasl_broker.log_text().count("no credential for this user")
    with pytest.raises(KafkaTimeoutError):
        KafkaProducer(**kafka_python(max_block_ms=3000)).send(topic, b"x").get(timeout=5)
    assert sasl_broker.log_text().count("no credential for this user") > refusals
    assert admin.describe_user_scram_credentials(["alice"])["alice"].result() is not None


def test_java_admin_creates_a_credential_the_java_client_logs_in_with(classpath, sasl_broker, topic):  # noqa: F811
    result = run_java(classpath, "scram", sasl_broker, topic, env={"JAVA_CLIENT_SASL": "SCRAM-SHA-256:alice:alice-secret"})
    assert result == {
        "described": "SCRAM_SHA_512/8192",
        "read": 200,
        "refused": "SaslAuthenticationException: " + invalid_credentials("SCRAM-SHA-512"),
        "after_delete": "ResourceNotFoundException: Attempt to describe a user credential that does not exist: java-user",
    }
