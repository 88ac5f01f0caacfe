"""ACL authorization with real clients.

Goal: with `--authorizer-class-name` (Kafka's StandardAuthorizer) an
administrator manages ACLs with librdkafka's AdminClient (createAcls,
describeAcls, deleteAcls) as with `kafka-acls`, and those ACLs decide what
a logged-in user may do: librdkafka and kafka-python producers, consumers
and consumer groups get exactly the errors Kafka gives them, and get in as
soon as an ACL lets them; the Java client's idempotent and transactional
producers and its consumer group need the ACLs Kafka asks for; ACLs
survive a restart.

Method: one broker for this module with a SASL_PLAINTEXT listener,
`--super-users User:admin` and SCRAM users admin and alice. The scenario
was run first against Kafka 4.1.1 (KRaft, StandardAuthorizer,
super.users=User:admin, the same users and clients); the answers asserted
are the ones it gave.
"""

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from conftest import Broker, serve
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    yield from serve(Broker(
        tmp_path_factory.mktemp("ringbroker-acls"),
        extra_args=[
            "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "--super-users", "User:admin",
            "--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]",
            "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
        ],
        listen_protocol="SASL_PLAINTEXT",
    ))


def sasl(broker, user):
    name, password = user
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": name,
        "sasl.password": password,
    }


def produce_one(config, topic):
    """The offset the one message got, or the error's name."""
    reports = []
    producer = Producer({**config, "message.timeout.ms": 5000, "retries": 0})
    producer.produce(topic, b"v", on_delivery=lambda e, m: reports.append(e.name() if e else m.offset()))
    producer.flush(10)
    return reports[0] if reports else "no delivery report"


def consume_first(config, topic, group):
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 15
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                return message.error().name()
            return ["value", message.value().decode()]
        return "timeout"
    finally:
        consumer.close()


def acls_of(admin, acl_filter, tag):
    return sorted(
        [b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name, b.permission_type.name]
        for b in admin.describe_acls(acl_filter).result()
        if tag in b.name
    )


def alice_filter():
    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                            AclOperation.ANY, AclPermissionType.ANY)


def scenario(broker):
    tag = uuid.uuid4().hex[:6]
    topic, other = f"acl-{tag}", f"acl-{tag}-other"
    seen = {}
    admin = AdminClient(sasl(broker, ADMIN))
    alice_config = sasl(broker, ALICE)
    alice = AdminClient(alice_config)
    for future in admin.create_topics([NewTopic(topic, 1, 1), NewTopic(other, 1, 1)]).values():
        future.result()
    metadata = alice.list_topics(timeout=10)
    seen["alice_sees_before"] = sorted(n for n in metadata.topics if n.startswith(f"acl-{tag}"))
    named = alice.list_topics(topic=topic, timeout=10).topics[topic]
    seen["alice_named_before"] = named.error.name() if named.error else None
    seen["alice_produce_before"] = produce_one(alice_config, topic)
    bindings = [
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.WRITE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, f"acl-{tag}", ResourcePatternType.PREFIXED, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, f"g-{tag}", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
    ]
    seen["create"] = [future.result() for future in admin.create_acls(bindings).values()]
    seen["described"] = acls_of(admin, alice_filter(), tag)
    match_filter = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.MATCH, None, None,
                                    AclOperation.ANY, AclPermissionType.ANY)
    seen["described_match"] = acls_of(admin, match_filter, tag)
    metadata = alice.list_topics(timeout=10)
    seen["alice_sees_after"] = sorted(n for n in metadata.topics if n.startswith(f"acl-{tag}"))
    seen["alice_produce"] = produce_one(alice_config, topic)
    seen["alice_produce_other"] = produce_one(alice_config, other)
    seen["alice_consume"] = consume_first(alice_config, topic, f"g-{tag}")
    seen["alice_consume_other_group"] = consume_first(alice_config, topic, f"h-{tag}")
    # librdkafka shows no error for a refused DescribeAcls (Kafka answers
    # CLUSTER_AUTHORIZATION_FAILED at the top level, as we do): nothing.
    seen["alice_describe_acls"] = alice.describe_acls(alice_filter()).result()
    with pytest.raises(KafkaException) as refused:
        list(alice.create_acls([bindings[0]]).values())[0].result()
    seen["alice_create_acls"] = refused.value.args[0].name()
    with pytest.raises(KafkaException) as refused:
        for future in alice.create_topics([NewTopic(f"acl-{tag}-new", 1, 1)]).values():
            future.result()
    seen["alice_create_topic"] = refused.value.args[0].name()
    deny = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*", "*",
                      AclOperation.WRITE, AclPermissionType.DENY)
    for future in admin.create_acls([deny]).values():
        future.result()
    seen["alice_produce_denied"] = produce_one(alice_config, topic)
    deleted = admin.delete_acls([match_filter])
    seen["deleted"] = sorted(
        [b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name, b.permission_type.name]
        for future in deleted.values() for b in future.result()
    )
    seen["alice_produce_after_delete"] = produce_one(alice_config, topic)
    seen["left"] = acls_of(admin, alice_filter(), tag)
    return tag, seen


def test_acls_decide_what_librdkafka_clients_may_do(acl_broker):
    tag, seen = scenario(acl_broker)
    topic = f"acl-{tag}"
    write = ["TOPIC", topic, "LITERAL", "User:alice", "*", "WRITE", "ALLOW"]
    read_prefixed = ["TOPIC", topic, "PREFIXED", "User:alice", "*", "READ", "ALLOW"]
    group_read = ["GROUP", f"g-{tag}", "LITERAL", "User:alice", "*", "READ", "ALLOW"]
    assert seen == {
        # No ACL yet: alice sees and may do nothing (no super user, and
        # allow.everyone.if.no.acl.found is false).
        "alice_sees_before": [],
        "alice_named_before": "TOPIC_AUTHORIZATION_FAILED",
        "alice_produce_before": "TOPIC_AUTHORIZATION_FAILED",
        "create": [None, None, None],
        "described": [group_read, write, read_prefixed],
        "described_match": [write, read_prefixed],
        # READ on the prefix implies DESCRIBE of both topics.
        "alice_sees_after": [topic, f"{topic}-other"],
        "alice_produce": 0,
        "alice_produce_other": "TOPIC_AUTHORIZATION_FAILED",
        "alice_consume": ["value", "v"],
        "alice_consume_other_group": "GROUP_AUTHORIZATION_FAILED",
        "alice_describe_acls": [],
        "alice_create_acls": "CLUSTER_AUTHORIZATION_FAILED",
        "alice_create_topic": "TOPIC_AUTHORIZATION_FAILED",
        # A DENY for everyone wins over alice's ALLOW.
        "alice_produce_denied": "TOPIC_AUTHORIZATION_FAILED",
        "deleted": [
            ["TOPIC", topic, "LITERAL", "User:*", "*", "WRITE", "DENY"],
            write,
            read_prefixed,
        ],
        "alice_produce_after_delete": "TOPIC_AUTHORIZATION_FAILED",
        "left": [group_read],
    }


def test_kafka_python_group_needs_its_acls_which_survive_a_restart(acl_broker):
    tag = uuid.uuid4().hex[:6]
    topic, group = f"kp-{tag}", f"kp-group-{tag}"
    admin = AdminClient(sasl(acl_broker, ADMIN))
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result()
    producer = Producer(sasl(acl_broker, ADMIN))
    for i in range(10):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(10) == 0

    def kafka_python_consumer():
        return KafkaConsumer(
            topic,
            bootstrap_servers=acl_broker.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username=ALICE[0],
            sasl_plain_password=ALICE[1],
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            request_timeout_ms=10000,
        )

    def poll_all(consumer, wanted):
        values = []
        deadline = time.monotonic() + 30
        while len(values) < wanted:
            assert time.monotonic() < deadline, f"read {len(values)} of {wanted}"
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(r.value for r in records)
        return values

    # READ on the topic but not on the group: the group refuses alice.
    topic_read = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                            AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin.create_acls([topic_read]).values():
        future.result()
    consumer = kafka_python_consumer()
    try:
        with pytest.raises((GroupAuthorizationFailedError, TopicAuthorizationFailedError)) as refused:
            poll_all(consumer, 10)
        assert isinstance(refused.value, GroupAuthorizationFailedError)
    finally:
        consumer.close()

    group_read = AclBinding(ResourceType.GROUP, f"kp-group-", ResourcePatternType.PREFIXED, "User:alice", "*",
                            AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin.create_acls([group_read]).values():
        future.result()
    acl_broker.stop()
    acl_broker.start()
    admin = AdminClient(sasl(acl_broker, ADMIN))
    kp_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                                 AclOperation.ANY, AclPermissionType.ANY)
    assert acls_of(admin, kp_filter, "kp-") == sorted([
        ["GROUP", "kp-group-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"],
        ["TOPIC", topic, "LITERAL", "User:alice", "*", "READ", "ALLOW"],
    ])
    consumer = kafka_python_consumer()
    try:
        assert poll_all(consumer, 10) == [f"m{i}".encode() for i in range(10)]
        consumer.commit()
    finally:
        consumer.close()


def test_a_delegation_token_for_another_user_needs_create_tokens_on_that_user(classpath, acl_broker, topic):  # noqa: F811
    # As Kafka's KafkaApis.handleCreateTokenRequest asks (read from its
    # code): alice names bob as the owner without CREATE_TOKENS on User:bob.
    result = run_java(classpath, "delegation-tokens", acl_broker, topic,
                      env={"JAVA_CLIENT_SASL": "SCRAM-SHA-256:admin:admin-secret"})
    assert result["create for bob"] == "DelegationTokenDisabledException"  # a super user may
    result = run_java(classpath, "delegation-tokens", acl_broker, topic + "-alice",
                      env={"JAVA_CLIENT_SASL": "SCRAM-SHA-256:alice:alice-secret"})
    assert result["create for bob"] == "DelegationTokenAuthorizationException"
    assert result["create"] == "DelegationTokenDisabledException"


def test_java_clients_need_the_acls_kafka_asks_for(classpath, acl_broker, topic):  # noqa: F811
    # Recorded from Kafka 4.1.1 with the same users and super.users: the
    # idempotent producer is refused on its topic, the transactional one on
    # its transactional id, the consumer on its group, each until its ACL
    # is added with the Java admin client (as kafka-acls --add does).
    result = run_java(classpath, "acls", acl_broker, topic, env={"JAVA_CLIENT_SASL": "SCRAM-SHA-256:admin:admin-secret"})
    assert result == {
        "idempotent_before": "TopicAuthorizationException",
        "idempotent_after": "ok",
        "transaction_before": "TransactionalIdAuthorizationException",
        "transaction_after": "ok",
        "consume_before": "GroupAuthorizationException",
        "consume_after": "ok",
        "listed": "GROUP:READ,TOPIC:READ,TOPIC:WRITE,TRANSACTIONAL_ID:WRITE",
    }
