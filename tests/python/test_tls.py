"""TLS listeners (SSL and SASL_SSL) with real clients.

Goal: clients configured for TLS as their documentation says (a CA file to
trust, hostname verification on) connect to SSL and SASL_SSL listeners
served from a PEM keystore (Kafka's ssl.keystore.type=PEM) and work as
against Kafka: librdkafka (confluent-kafka) produces idempotently over SSL
and reads everything back over SASL_SSL with SCRAM; kafka-python and
Debian's kcat produce and consume over SSL and SASL_SSL with PLAIN; the Java
client produces, reads in a committing group and reads the offsets back
over SASL_SSL with PLAIN; 4 MB of records cross TLS from the segment
files after a restart (the splice path) unchanged. A client that does not
trust the broker's CA cannot connect. With `--ssl-client-auth requested`,
a client certificate names the principal ACLs judge (the subject as Kafka
writes it), and a client without one is User:ANONYMOUS.

Method: a CA and a server certificate for 127.0.0.1 and localhost made
with openssl; one broker for this module listening SSL and SASL_SSL. The
same keystore, clients and settings were run against Kafka 4.1.1 with
SSL and SASL_SSL listeners and ssl.keystore.type=PEM, with the same
results.
"""

import hashlib
import os
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonTopicPartition

from conftest import Broker, free_port, kafka_python_round_trip, serve
from messages import make_messages
from test_confluent_kafka import assert_refused, produce, produce_and_read_back, read
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

READ_TIMEOUT_S = 30
CLIENT_SUBJECT = "/C=US/O=acme, inc/OU=eng/CN=client one/emailAddress=c@x.io"
# Its principal, as Kafka 4.1.1 named it.
CLIENT_PRINCIPAL = "User:1.2.840.113549.1.9.1=#16066340782e696f,CN=client one,OU=eng,O=acme\\, inc,C=US"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A CA, and a keystore with a key and a certificate the CA signed for
    127.0.0.1 and localhost; returns (CA file, keystore file)."""
    work = tmp_path_factory.mktemp("tls")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=ringbroker-test-ca", cwd=work)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=localhost", cwd=work)
    (work / "san.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "san.cnf", cwd=work)
    keystore = work / "keystore.pem"
    keystore.write_text((work / "server.key").read_text() + (work / "server.pem").read_text())
    # A client certificate (X.509 v3: rustls, as most TLS stacks, refuses v1
    # certificates, which Java accepts).
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key", "-out", "client.csr",
            "-subj", CLIENT_SUBJECT, cwd=work)
    (work / "client.cnf").write_text("basicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "client.pem", "-days", "2", "-extfile", "client.cnf", cwd=work)
    return work / "ca.pem", keystore


class TlsBroker:
    def __init__(self, broker, sasl_ssl_port, ca):
        self.broker = broker
        self.ssl = broker.bootstrap
        self.sasl_ssl = f"127.0.0.1:{sasl_ssl_port}"
        self.ca = str(ca)


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory, certificates):
    ca, keystore = certificates
    sasl_ssl_port = free_port()
    broker = Broker(
        tmp_path_factory.mktemp("ringbroker-tls"),
        extra_args=[
            "--listen", f"SASL_SSL://127.0.0.1:{sasl_ssl_port}",
            "--ssl-keystore-location", str(keystore),
            "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-512",
            "--plain-sasl-jaas-config",
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
            "--add-scram", "SCRAM-SHA-512=[name=bob,password=bob-secret]",
        ],
        listen_protocol="SSL",
    )
    for running in serve(broker):
        yield TlsBroker(running, sasl_ssl_port, ca)


def librdkafka_ssl(tls):
    return {"bootstrap.servers": tls.ssl, "security.protocol": "SSL", "ssl.ca.location": tls.ca}


def librdkafka_sasl_ssl(tls, mechanism, user, password):
    return {
        "bootstrap.servers": tls.sasl_ssl,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": tls.ca,
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def test_librdkafka_produces_over_ssl_and_reads_back_over_sasl_ssl(tls_broker, topic):
    produce_and_read_back(
        tls_broker.broker, topic,
        {**librdkafka_ssl(tls_broker), "enable.idempotence": True},
        librdkafka_sasl_ssl(tls_broker, "SCRAM-SHA-512", "bob", "bob-secret"),
    )


def test_large_records_cross_tls_from_disk_after_a_restart(tls_broker, topic):
    """Tail reads come from memory, reads after a restart from the segment
    files by splice: both reach the client through TLS unchanged."""
    values = [os.urandom(4000 + i) for i in range(1000)]
    producer = Producer({**librdkafka_ssl(tls_broker), "linger.ms": 5, "acks": "all"})
    for value in values:
        producer.produce(topic, value, partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0

    def read_all():
        consumer = Consumer({**librdkafka_ssl(tls_broker), "group.id": "unused", "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        try:
            while len(got) < len(values):
                assert time.monotonic() < deadline, f"read {len(got)} of {len(values)}"
                for message in consumer.consume(500, 0.5):
                    assert message.error() is None, message.error()
                    got.append(message.value())
        finally:
            consumer.close()
        return got

    digest = hashlib.sha256(b"".join(values)).hexdigest()
    assert hashlib.sha256(b"".join(read_all())).hexdigest() == digest
    tls_broker.broker.stop()
    tls_broker.broker.start()
    assert hashlib.sha256(b"".join(read_all())).hexdigest() == digest


def test_a_client_not_trusting_the_ca_cannot_connect(tls_broker):
    assert_refused({"bootstrap.servers": tls_broker.ssl, "security.protocol": "SSL"}, "certificate verify failed")


def test_kafka_python_produces_and_consumes_over_ssl_and_sasl_ssl(tls_broker, topic):
    ssl = dict(bootstrap_servers=tls_broker.ssl, security_protocol="SSL", ssl_cafile=tls_broker.ca, request_timeout_ms=10000)
    sasl_ssl = dict(
        bootstrap_servers=tls_broker.sasl_ssl, security_protocol="SASL_SSL", ssl_cafile=tls_broker.ca,
        sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret",
        request_timeout_ms=10000,
    )
    kafka_python_round_trip(topic, partition=0, **ssl)
    kafka_python_round_trip(topic, partition=1, **sasl_ssl)


def kcat(tls, bootstrap, *args, sasl=(), stdin=None):
    protocol = "SASL_SSL" if sasl else "SSL"
    return subprocess.run(
        ["kcat", "-b", bootstrap, "-X", f"security.protocol={protocol}", "-X", f"ssl.ca.location={tls.ca}",
         *sasl, *args],
        input=stdin, capture_output=True, text=True, timeout=60,
    )


def test_kcat_produces_and_consumes_over_ssl_and_sasl_ssl(tls_broker, topic):
    lines = [f"line-{i}" for i in range(100)]
    produced = kcat(tls_broker, tls_broker.ssl, "-P", "-t", topic, "-p", "0", stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr
    plain = ("-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret")
    consumed = kcat(tls_broker, tls_broker.sasl_ssl, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-c", "100", sasl=plain)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == lines


def test_java_client_over_sasl_ssl(classpath, tls_broker, topic):  # noqa: F811
    class Bootstrap:
        bootstrap = tls_broker.sasl_ssl

    result = run_java(classpath, "plain", Bootstrap, topic, env={
        "JAVA_CLIENT_SASL": "PLAIN:alice:alice-secret",
        "JAVA_CLIENT_TLS": tls_broker.ca,
    })
    assert result == {
        "read": 200,
        "committed": 200,
        "refused": "SaslAuthenticationException: Authentication failed: Invalid username or password",
    }


@pytest.fixture(scope="module")
def mtls_broker(tmp_path_factory, certificates):
    ca, keystore = certificates
    broker = Broker(
        tmp_path_factory.mktemp("ringbroker-mtls"),
        extra_args=[
            "--ssl-keystore-location", str(keystore),
            "--ssl-truststore-location", str(ca),
            "--ssl-client-auth", "requested",
            "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "--super-users", "User:ANONYMOUS",
        ],
        listen_protocol="SSL",
    )
    yield from serve(broker)


def test_client_certificates_name_the_principal_acls_judge(mtls_broker, certificates, topic):
    from confluent_kafka.admin import (
        AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
    )
    ca, _ = certificates
    anonymous = {"bootstrap.servers": mtls_broker.bootstrap, "security.protocol": "SSL", "ssl.ca.location": str(ca)}
    certified = {
        **anonymous,
        "ssl.certificate.location": str(ca.parent / "client.pem"),
        "ssl.key.location": str(ca.parent / "client.key"),
    }

    def create(config, name):
        admin = AdminClient(config)
        try:
            admin.create_topics([NewTopic(name, 1, 1)])[name].result()
            return "created"
        except KafkaException as error:
            return error.args[0].name()

    # Without a certificate: User:ANONYMOUS, a super user here.
    assert create(anonymous, topic + "-anonymous") == "created"
    # With one: its subject, which no ACL allows yet.
    assert create(certified, topic) == "TOPIC_AUTHORIZATION_FAILED"
    acl = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, CLIENT_PRINCIPAL, "*",
                     AclOperation.ALL, AclPermissionType.ALLOW)
    # (and reading needs its consumer group's)
    groups = AclBinding(ResourceType.GROUP, "*", ResourcePatternType.LITERAL, CLIENT_PRINCIPAL, "*",
                        AclOperation.ALL, AclPermissionType.ALLOW)
    admin = AdminClient(anonymous)
    for future in admin.create_acls([acl, groups]).values():
        assert future.result() is None
    deadline = time.monotonic() + 10
    while (outcome := create(certified, topic)) != "created":
        assert time.monotonic() < deadline, outcome
        time.sleep(0.1)
    # The certified client produces and reads back under its ACL; so does
    # kafka-python with the same certificate.
    acked = produce(mtls_broker, topic, make_messages(50, 1, include_empty_values=False), **certified)
    got = read(mtls_broker, topic, {0: len(acked)}, **certified)
    assert [m.offset() for m in got[0]] == list(range(len(acked)))
    consumer = KafkaConsumer(
        bootstrap_servers=mtls_broker.bootstrap, security_protocol="SSL", ssl_cafile=str(ca),
        ssl_certfile=str(ca.parent / "client.pem"), ssl_keyfile=str(ca.parent / "client.key"),
        group_id=None, enable_auto_commit=False, request_timeout_ms=10000,
    )
    try:
        partition = KafkaPythonTopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, 0)
        values = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(values) < len(acked):
            assert time.monotonic() < deadline, f"read {len(values)} of {len(acked)}"
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(records)
    finally:
        consumer.close()
    assert len(values) == len(acked)
