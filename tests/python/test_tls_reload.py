"""An SSL listener's keystore is replaced at runtime, as on Kafka.

Goal: an operator renews the broker's certificate without a restart, as
with Kafka's `kafka-configs --entity-type brokers --entity-name <id> --alter
--add-config listener.name.ssl.ssl.keystore.location=...`: the listener
serves new connections with the new keystore, connections already open go
on, librdkafka clients trusting the CA go on producing and consuming, and
the change survives a restart. What Kafka's `SslFactory` refuses is refused
with Kafka's answer (INVALID_REQUEST, "Invalid dynamic configuration") and
the old certificate stays: a certificate of another subject or without one
of the served one's alternative names, a file that cannot be read, a wrong
password. The same configs given again re-read a file that was modified
(and only then); deleted, the static keystore is served again, unless
that would lose a name. Every core serves the same certificate. Started
with a configured keystore gone, the broker serves the flags' one and
takes other changes. DescribeConfigs shows the listener's values over
the static ones. With --ssl-allow-dn-changes and --ssl-allow-san-changes
(Kafka's ssl.allow.dn.changes, ssl.allow.san.changes) another subject and
fewer names are taken. A SASL_SSL listener's own keystore changes it
alone. (Cluster-wide, the configs are refused:
tests/connection_limits_apply_like_kafka.rs.)

Method: PKCS12 keystores made by openssl from one CA; confluent-kafka's
AdminClient changes the configs over a PLAINTEXT listener; Python's ssl
module reads which certificate the SSL listener serves. The same cases
against a Kafka 4.1.1 KRaft broker with an SSL listener on the same machine
gave the same answers (Kafka's reasons inside the message are its own Java
exceptions; the parts asserted here are common to both) and the same
certificates; a wider set of names and the two allow flags follow Kafka's
SslFactory source and were not measured.
"""

import socket
import ssl
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, ResourceType)

from conftest import Broker, free_port, serve
from test_tls import openssl

PASSWORD = "store-secret"
PREFIX = "listener.name.ssl."


def make_keystore(work, name, subject, san, ca=("ca.pem", "ca.key")):
    """A new key and a certificate the CA signs, in PKCS12 file `name`.p12;
    returns (keystore path, certificate DER)."""
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", subject, cwd=work)
    (work / f"{name}.cnf").write_text(f"subjectAltName={san}\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.cnf", cwd=work)
    openssl("pkcs12", "-export", "-in", f"{name}.pem", "-inkey", f"{name}.key", "-name", "server",
            "-out", f"{name}.p12", "-passout", f"pass:{PASSWORD}", cwd=work)
    return work / f"{name}.p12", ssl.PEM_cert_to_DER_cert((work / f"{name}.pem").read_text())


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    work = tmp_path_factory.mktemp("tls-reload")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=ringbroker-reload-ca", cwd=work)
    san = "DNS:localhost,IP:127.0.0.1"
    made = {
        "first": make_keystore(work, "first", "/CN=localhost/O=ringbroker", san),
        # A renewal: new key, same subject and names.
        "renewed": make_keystore(work, "renewed", "/CN=localhost/O=ringbroker", san),
        "again": make_keystore(work, "again", "/CN=localhost/O=ringbroker", san + ",DNS:broker.example"),
        # More names is a renewal too.
        "wider": make_keystore(work, "wider", "/CN=localhost/O=ringbroker", san + ",DNS:broker.example"),
        "other-subject": make_keystore(work, "other-subject", "/CN=other/O=ringbroker", san),
        "fewer-names": make_keystore(work, "fewer-names", "/CN=localhost/O=ringbroker", "DNS:localhost"),
    }
    made["ca"] = work / "ca.pem"
    made["work"] = work
    return made


@pytest.fixture(scope="module")
def reload_broker(tmp_path_factory, stores):
    ssl_port = free_port()
    keystore, _ = stores["first"]
    broker = Broker(tmp_path_factory.mktemp("ringbroker-tls-reload"), cores=2, extra_args=[
        "--listen", f"SSL://127.0.0.1:{ssl_port}",
        "--ssl-keystore-location", str(keystore),
        "--ssl-keystore-password", PASSWORD,
    ])
    broker.ssl_port = ssl_port
    yield from serve(broker)


def served(port, connections=8):
    """The DER certificate the listener on `port` serves new connections,
    the same on each of `connections` (spread over the broker's cores)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    certificates = set()
    for _ in range(connections):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw) as tls:
                certificates.add(tls.getpeercert(binary_form=True))
    assert len(certificates) == 1, "cores serve different certificates"
    return certificates.pop()


def alter(bootstrap, configs, broker="0", validate_only=False):
    """Incrementally alters BROKER `broker`; returns None or (code, message)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, broker, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=(
            AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET))
        for name, value in configs.items()])
    try:
        admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(timeout=30)
        return None
    except KafkaException as e:
        return e.args[0].code(), e.args[0].str()


def keystore_configs(path, password=PASSWORD):
    return {PREFIX + "ssl.keystore.location": str(path), PREFIX + "ssl.keystore.password": password,
            PREFIX + "ssl.keystore.type": "PKCS12"}


def ssl_client(broker, stores, **extra):
    return {"bootstrap.servers": f"127.0.0.1:{broker.ssl_port}", "security.protocol": "SSL",
            "ssl.ca.location": str(stores["ca"]), **extra}


def produce(producer, topic, values):
    delivered = []
    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(30)
    assert delivered == [None] * len(values)


def consume(broker, stores, topic, count):
    consumer = Consumer(ssl_client(broker, stores, **{"group.id": f"{topic}-reader",
                                                      "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    values = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, timeout=0.5):
                assert message.error() is None, message.error()
                values.append(message.value())
    finally:
        consumer.close()
    return values


def refused(answer, reason):
    """Whether `answer` is Kafka's refusal of a listener's new stores, for
    `reason` (a part of the message)."""
    code, message = answer or (None, "")
    return (code == KafkaError.INVALID_REQUEST
            and message.startswith("Invalid value org.apache.kafka.common.config.ConfigException: "
                                   "Validation of dynamic config update of SSLFactory failed: ")
            and message.endswith(" for configuration Invalid dynamic configuration")
            and reason in message)


def test_a_renewed_keystore_is_served_to_new_connections_and_survives_a_restart(
        reload_broker, stores, topic):
    bootstrap = reload_broker.bootstrap
    port = reload_broker.ssl_port
    first, first_der = stores["first"]
    assert served(port) == first_der
    # A client connected before the renewal.
    before = Producer(ssl_client(reload_broker, stores))
    produce(before, topic, [b"before-0"])

    renewed, renewed_der = stores["renewed"]
    assert alter(bootstrap, keystore_configs(renewed)) is None
    assert served(port) == renewed_der
    # The open connection goes on; new clients verify the new certificate.
    produce(before, topic, [b"before-1"])
    after = Producer(ssl_client(reload_broker, stores))
    produce(after, topic, [b"after-0"])
    assert consume(reload_broker, stores, topic, 3) == [b"before-0", b"before-1", b"after-0"]

    # Described as Kafka 4.1.1 describes them: the location shown over the
    # static one, the password hidden.
    resource = ConfigResource(ResourceType.BROKER, "0")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_configs([resource])[resource].result(timeout=30)
    location = described[PREFIX + "ssl.keystore.location"]
    assert (location.value, location.source, location.is_sensitive, location.is_read_only) == (
        str(renewed), ConfigSource.DYNAMIC_BROKER_CONFIG.value, False, True)
    assert [(s.name, s.value, s.source) for s in location.synonyms.values()] == [
        (PREFIX + "ssl.keystore.location", str(renewed), ConfigSource.DYNAMIC_BROKER_CONFIG.value),
        ("ssl.keystore.location", str(first), ConfigSource.STATIC_BROKER_CONFIG.value)]
    password = described[PREFIX + "ssl.keystore.password"]
    assert (password.value, password.source, password.is_sensitive) == (
        None, ConfigSource.DYNAMIC_BROKER_CONFIG.value, True)

    # Refused: another subject, fewer names, no such file, a wrong password
    # (with the new location or alone); the renewed keystore stays.
    missing = stores["work"] / "missing.p12"
    for configs, reason in [
            (keystore_configs(stores["other-subject"][0]), "Keystore DistinguishedName does not match"),
            (keystore_configs(stores["fewer-names"][0]), "Keystore SubjectAltNames do not match"),
            (keystore_configs(missing), str(missing)),
            (keystore_configs(first, password="wrong"), "Failed to load SSL keystore"),
            ({PREFIX + "ssl.keystore.password": "wrong"}, "Failed to load SSL keystore"),
            # A listener without a truststore cannot be given one.
            ({PREFIX + "ssl.truststore.location": str(stores["ca"]),
              PREFIX + "ssl.truststore.type": "PEM"},
             "Cannot add SSL truststore to an existing listener for which no truststore was "
             "configured.")]:
        assert refused(alter(bootstrap, configs), reason), (configs, alter(bootstrap, configs))
        assert served(port) == renewed_der
    # Checked, not applied.
    wider, wider_der = stores["wider"]
    assert refused(alter(bootstrap, keystore_configs(missing), validate_only=True), str(missing))
    assert alter(bootstrap, keystore_configs(wider), validate_only=True) is None
    assert served(port) == renewed_der

    # Deleted, the static keystore is served again.
    assert alter(bootstrap, {name: None for name in keystore_configs(renewed)}) is None
    assert served(port) == first_der

    # More names than before is a renewal too.
    assert alter(bootstrap, keystore_configs(wider)) is None
    assert served(port) == wider_der
    # The file rewritten in place is read when the configs are given again,
    # not before.
    again, again_der = stores["again"]
    wider.write_bytes(again.read_bytes())
    assert served(port) == wider_der
    assert alter(bootstrap, keystore_configs(wider)) is None
    assert served(port) == again_der

    # Kept across a restart.
    before.flush(10)
    after.flush(10)
    reload_broker.stop()
    reload_broker.start()
    assert served(port) == again_der
    produce(Producer(ssl_client(reload_broker, stores)), topic, [b"restarted"])
    assert consume(reload_broker, stores, topic, 4)[-1] == b"restarted"
    # Going back to the static keystore now would lose a name: refused.
    assert refused(alter(bootstrap, {name: None for name in keystore_configs(wider)}),
                   "Keystore SubjectAltNames do not match")
    assert served(port) == again_der

    # Started with the configured keystore gone: the broker serves the
    # flags' keystore, says why, and takes other changes.
    reload_broker.stop()
    wider.rename(wider.with_suffix(".gone"))
    reload_broker.start()
    assert served(port) == first_der
    assert "cannot serve the listener's configured stores" in reload_broker.log_text()
    assert alter(bootstrap, {"max.connections": "1000"}) is None
    wider.with_suffix(".gone").rename(wider)


def test_allowed_subject_and_name_changes_are_taken_and_listeners_change_alone(
        tmp_path_factory, stores):
    ssl_port, sasl_ssl_port = free_port(), free_port()
    first, first_der = stores["first"]
    broker = Broker(tmp_path_factory.mktemp("ringbroker-tls-reload-allowed"), extra_args=[
        "--listen", f"SSL://127.0.0.1:{ssl_port}",
        "--listen", f"SASL_SSL://127.0.0.1:{sasl_ssl_port}",
        "--sasl-enabled-mechanisms", "PLAIN",
        "--plain-sasl-jaas-config",
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
        "--ssl-keystore-location", str(first),
        "--ssl-keystore-password", PASSWORD,
        "--ssl-allow-dn-changes", "--ssl-allow-san-changes",
    ])
    broker.start()
    try:
        # The SASL_SSL listener's own keystore leaves the SSL listener's.
        renewed, renewed_der = stores["renewed"]
        configs = {name.replace(PREFIX, "listener.name.sasl_ssl."): value
                   for name, value in keystore_configs(renewed).items()}
        assert alter(broker.bootstrap, configs) is None
        assert (served(sasl_ssl_port), served(ssl_port)) == (renewed_der, first_der)
        # A SASL_SSL client trusting the CA goes on.
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{sasl_ssl_port}",
                             "security.protocol": "SASL_SSL", "ssl.ca.location": str(stores["ca"]),
                             "sasl.mechanism": "PLAIN", "sasl.username": "alice",
                             "sasl.password": "alice-secret"})
        produce(producer, "reload-sasl-ssl", [b"over-sasl-ssl"])
        for name in ["other-subject", "fewer-names"]:
            keystore, der = stores[name]
            assert alter(broker.bootstrap, keystore_configs(keystore)) is None, name
            assert served(ssl_port) == der, name
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        resource = ConfigResource(ResourceType.BROKER, "0")
        described = admin.describe_configs([resource])[resource].result(timeout=30)
        for name in ["ssl.allow.dn.changes", "ssl.allow.san.changes"]:
            assert (described[name].value, described[name].source) == (
                "true", ConfigSource.STATIC_BROKER_CONFIG.value), name
        broker.stop()
    finally:
        broker.kill()
