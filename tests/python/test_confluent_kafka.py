"""confluent-kafka (current librdkafka) against ringbroker.

Goal: the Producer works with every compression codec, a Consumer reads back
with assign() (no consumer group) exactly what was acknowledged, and the
AdminClient creates topics with configs, describes configs (override and
defaults), lists and deletes topics, adds partitions and alters configs.

Method: one topic per test case on the session's broker, explicit partitions
and CreateTime timestamps, delivery reports recording each offset, and a
field-by-field comparison of what comes back at that offset.
"""

import time

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from conftest import DEFAULT_PARTITIONS
from messages import make_messages, make_sized_messages

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
MESSAGES = 500
READ_TIMEOUT_S = 30


def produce(broker, topic, messages, **config):
    """Produces with acks=all and returns {(partition, offset): message}."""
    producer = Producer({
        "bootstrap.servers": broker.bootstrap,
        "enable.idempotence": False,
        "acks": "all",
        "linger.ms": 5,
        **config,
    })
    acked = {}
    errors = []

    def on_delivery(error, report, message):
        if error is not None:
            errors.append(error)
        else:
            acked[(report.partition(), report.offset())] = message

    for message in messages:
        producer.produce(
            topic,
            value=message["value"],
            key=message["key"],
            partition=message["partition"],
            timestamp=message["timestamp_ms"],
            headers=message["headers"],
            on_delivery=lambda error, report, message=message: on_delivery(error, report, message),
        )
        producer.poll(0)
    left = producer.flush(30)
    assert left == 0, f"{left} messages not delivered within 30 s"
    assert not errors, f"delivery errors: {errors[:5]}"
    assert len(acked) == len(messages), "two messages acknowledged at one offset"
    return acked


def make_consumer(broker, **config):
    return Consumer({
        "bootstrap.servers": broker.bootstrap,
        # Required by librdkafka; never used with assign() and no commits.
        "group.id": "ringbroker-tests-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "fetch.wait.max.ms": 100,
        **config,
    })


def read(broker, topic, counts, **config):
    """Reads each partition from offset 0 until `counts[p]` messages came;
    `config` is added to the consumer's."""
    consumer = make_consumer(broker, **config)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in counts])
        got = {p: [] for p in counts}
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(len(got[p]) < n for p, n in counts.items()):
            assert time.monotonic() < deadline, (
                f"read {topic}: got {({p: len(m) for p, m in got.items()})}, want {counts}"
            )
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, f"consumer error: {message.error()}"
            got[message.partition()].append(message)
        return got
    finally:
        consumer.close()


def produce_and_read_back(broker, topic, producer_config, consumer_config, count=300):
    """Produces `count` messages over every partition with
    `producer_config`, reads each partition back from offset 0 with
    `consumer_config`, and asserts that what comes back is what was
    acknowledged: offsets, keys, values, headers and CreateTime timestamps."""
    messages = make_messages(count, DEFAULT_PARTITIONS, include_empty_values=False)
    acked = produce(broker, topic, messages, **producer_config)
    counts = {}
    for partition, _ in acked:
        counts[partition] = counts.get(partition, 0) + 1
    got = read(broker, topic, counts, **consumer_config)
    for partition, received in got.items():
        assert [m.offset() for m in received] == list(range(counts[partition]))
        for message in received:
            sent = acked[(partition, message.offset())]
            assert (message.key(), message.value()) == (sent["key"], sent["value"])
            assert message.headers() == (sent["headers"] or None)
            assert message.timestamp() == (TIMESTAMP_CREATE_TIME, sent["timestamp_ms"])


def assert_refused(config, expected):
    """A producer made with `config` cannot list the topics, and librdkafka
    reports an error containing `expected` within 10 s."""
    errors = []
    producer = Producer({**config, "error_cb": lambda error: errors.append(error)})
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=3)
    deadline = time.monotonic() + 10
    while not any(expected in error.str() for error in errors):
        assert time.monotonic() < deadline, f"errors: {[e.str() for e in errors]}"
        producer.poll(0.1)


@pytest.mark.parametrize("codec", CODECS)
def test_produce_each_codec_and_read_back_with_assign(broker, topic, codec):
    # librdkafka reports an empty value as null, so only null values here.
    messages = make_messages(MESSAGES, DEFAULT_PARTITIONS, include_empty_values=False)
    acked = produce(broker, topic, messages, **{"compression.codec": codec})
    counts = {}
    for partition, _ in acked:
        counts[partition] = counts.get(partition, 0) + 1
    got = read(broker, topic, counts)
    for partition, received in got.items():
        assert [m.offset() for m in received] == list(range(counts[partition])), f"partition {partition} offsets"
        for message in received:
            sent = acked[(partition, message.offset())]
            where = f"partition {partition} offset {message.offset()}"
            assert message.key() == sent["key"], where
            assert message.value() == sent["value"], where
            assert (message.headers() or []) == sent["headers"], where
            assert message.timestamp() == (TIMESTAMP_CREATE_TIME, sent["timestamp_ms"]), where


def test_long_and_short_batches_of_several_partitions_in_one_request(broker, topic):
    # Produce v9+ (flexible): the broker reads each partition's records into
    # their own buffer, long ones straight from the socket.
    messages = make_sized_messages(64, DEFAULT_PARTITIONS)
    acked = produce(broker, topic, messages, **{"linger.ms": 50})
    counts = {}
    for partition, _ in acked:
        counts[partition] = counts.get(partition, 0) + 1
    assert len(counts) == DEFAULT_PARTITIONS
    got = read(broker, topic, counts)
    for partition, received in got.items():
        assert [m.offset() for m in received] == list(range(counts[partition]))
        for message in received:
            sent = acked[(partition, message.offset())]
            where = f"partition {partition} offset {message.offset()}"
            assert message.key() == sent["key"], where
            assert (message.value() or b"") == sent["value"], where
            assert message.headers() == sent["headers"], where


def test_admin_client_creates_describes_lists_and_deletes_topics(broker, topic):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    new_topic = NewTopic(topic, num_partitions=3, replication_factor=1, config={"retention.ms": "123456"})
    admin.create_topics([new_topic], operation_timeout=10)[topic].result(timeout=30)

    deadline = time.monotonic() + 10
    while True:
        listed = admin.list_topics(timeout=10).topics.get(topic)
        if listed is not None and listed.error is None and len(listed.partitions) == 3:
            break
        assert time.monotonic() < deadline, f"{topic} not listed with 3 partitions: {listed}"
        time.sleep(0.1)
    assert all(p.leader >= 0 for p in listed.partitions.values()), listed.partitions

    with pytest.raises(KafkaException) as repeat:
        admin.create_topics([new_topic], operation_timeout=10)[topic].result(timeout=30)
    assert repeat.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["retention.ms"].value == "123456"
    assert not configs["retention.ms"].is_default
    for name, default in [("cleanup.policy", "delete"), ("segment.bytes", None), ("max.message.bytes", None)]:
        assert name in configs, f"{name} not described: {sorted(configs)}"
        assert configs[name].is_default, f"{name}: {configs[name]}"
        assert configs[name].value is not None, f"{name} has no default value"
        if default is not None:
            assert configs[name].value == default

    missing = ConfigResource(ResourceType.TOPIC, f"{topic}-missing")
    with pytest.raises(KafkaException) as unknown:
        admin.describe_configs([missing])[missing].result(timeout=30)
    assert unknown.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    admin.delete_topics([topic], operation_timeout=10)[topic].result(timeout=30)
    deadline = time.monotonic() + 10
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{topic} still listed 10 s after DeleteTopics"
        time.sleep(0.1)


def test_admin_client_adds_partitions_and_alters_configs(broker, topic):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)], operation_timeout=10)[
        topic
    ].result(timeout=30)
    admin.create_partitions([NewPartitions(topic, 3)], operation_timeout=10)[topic].result(timeout=30)
    deadline = time.monotonic() + 10
    while len(admin.list_topics(timeout=10).topics[topic].partitions) != 3:
        assert time.monotonic() < deadline, f"{topic} not listed with 3 partitions"
        time.sleep(0.1)
    with pytest.raises(KafkaException) as same:
        admin.create_partitions([NewPartitions(topic, 3)], operation_timeout=10)[topic].result(timeout=30)
    assert same.value.args[0].code() == KafkaError.INVALID_PARTITIONS

    delivered = []
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"on a new partition", partition=2, on_delivery=lambda e, m: delivered.append((e, m)))
    producer.flush(30)
    assert [(e, m.partition(), m.offset()) for e, m in delivered] == [(None, 2, 0)]

    def alter(*entries):
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=list(entries))
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)

    def described():
        resource = ConfigResource(ResourceType.TOPIC, topic)
        return admin.describe_configs([resource])[resource].result(timeout=30)

    alter(
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    )
    configs = described()
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "delete,compact"

    alter(ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    assert described()["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value

    with pytest.raises(KafkaException) as not_a_list:
        alter(ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND))
    assert not_a_list.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert described()["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_admin_client_deletes_records(broker, topic):
    """DeleteRecords moves the log start: the low watermark is answered,
    the watermarks and a consumer from the beginning follow, a lower
    offset changes nothing and one past the high watermark is refused."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)], operation_timeout=10)[
        topic
    ].result(timeout=30)
    delivered = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(20):
        producer.produce(topic, value=b"m%d" % i, partition=0, on_delivery=lambda e, m: delivered.append((e, m)))
        producer.poll(0)
    producer.flush(30)
    assert [(e, m.offset()) for e, m in delivered] == [(None, i) for i in range(20)]

    def delete(offset):
        futures = admin.delete_records([TopicPartition(topic, 0, offset)], operation_timeout=10)
        (future,) = futures.values()
        return future.result(timeout=30).low_watermark

    assert delete(12) == 12
    assert delete(5) == 12
    with pytest.raises(KafkaException) as beyond:
        delete(21)
    assert beyond.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE

    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (12, 20)
        consumer.subscribe([topic])
        read = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(read) < 8:
            assert time.monotonic() < deadline, f"read {read}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            read.append((message.offset(), message.value()))
        assert read == [(i, b"m%d" % i) for i in range(12, 20)]
    finally:
        consumer.close()


def test_consumer_validates_a_position_with_a_leader_epoch(broker, topic):
    """A position that carries a leader epoch (as committed offsets do) is
    checked with OffsetForLeaderEpoch before fetching (KIP-320): one past
    where that epoch ends is reported as log truncation with the broker's
    end offset, as Kafka reports it; one inside the log reads on."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)], operation_timeout=10)[
        topic
    ].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(30) == 0

    def resume_at(offset):
        """The records read from `offset` to the log end, or the first error."""
        consumer = Consumer({
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"{topic}-{offset}",
            "auto.offset.reset": "error",
            "enable.auto.commit": False,
        })
        try:
            consumer.assign([TopicPartition(topic, 0, offset, leader_epoch=0)])
            seen = []
            deadline = time.monotonic() + READ_TIMEOUT_S
            while time.monotonic() < deadline and len(seen) < max(5 - offset, 1):
                message = consumer.poll(0.5)
                if message is None:
                    continue
                if message.error() is not None:
                    return message.error()
                seen.append((message.offset(), message.value(), message.leader_epoch()))
            return seen
        finally:
            consumer.close()

    assert resume_at(3) == [(3, b"v3", 0), (4, b"v4", 0)]
    error = resume_at(100)
    assert isinstance(error, KafkaError), error
    assert error.code() == KafkaError._AUTO_OFFSET_RESET
    # Without OffsetForLeaderEpoch librdkafka would fetch at 100 and report
    # an offset out of range instead.
    assert "log truncation detected at offset 100" in error.str()
    assert "broker end offset is 5 (offset leader epoch 0)" in error.str()


def test_admin_client_describes_the_cluster_and_elects_leaders(broker, topic):
    """DescribeCluster and ElectLeaders through librdkafka, as Kafka 4.1.1
    answers them on one node: the node is the controller, the cluster's
    operations are Kafka's seven, and no partition needs an election,
    preferred or unclean, while unknown ones are unknown."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], operation_timeout=10)[
        topic
    ].result(timeout=30)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert [(node.host, node.port) for node in cluster.nodes] == [("127.0.0.1", broker.port)]
    assert cluster.controller.id == cluster.nodes[0].id
    assert sorted(op.name for op in cluster.authorized_operations) == [
        "ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE",
    ]
    for election in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        result = admin.elect_leaders(
            election,
            [TopicPartition(topic, 0), TopicPartition(topic, 5), TopicPartition(f"{topic}-missing", 0)],
        ).result(timeout=30)
        assert {(tp.topic, tp.partition): error.code() for tp, error in result.items()} == {
            (topic, 0): KafkaError.ELECTION_NOT_NEEDED,
            (topic, 5): KafkaError.UNKNOWN_TOPIC_OR_PART,
            (f"{topic}-missing", 0): KafkaError.UNKNOWN_TOPIC_OR_PART,
        }, election
    assert admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout=30) == {}


def test_acl_calls_answer_security_disabled_as_kafka_without_an_authorizer(broker):
    """The broker has no authorizer, so librdkafka's ACL calls get what Kafka
    answers without one: creations and deletions SECURITY_DISABLED with
    Kafka's message; a description comes back empty (librdkafka drops the
    SECURITY_DISABLED of DescribeAcls, with Kafka as with us)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    binding = AclBinding(
        ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    every = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY,
    )
    for call in (lambda: admin.create_acls([binding]), lambda: admin.delete_acls([every])):
        (future,) = call().values()
        with pytest.raises(KafkaException) as refused:
            future.result(timeout=30)
        assert refused.value.args[0].code() == KafkaError.SECURITY_DISABLED
        assert refused.value.args[0].str() == "No Authorizer is configured."
    assert admin.describe_acls(every).result(timeout=30) == []


def test_records_timestamped_more_than_an_hour_ahead_are_refused(broker, topic):
    """As Kafka 4.x (message.timestamp.after.max.ms = 1 hour): a record
    stamped two hours ahead fails with INVALID_TIMESTAMP, not retried, and
    takes no offset; the records around it are written. A topic that raised
    the bound takes it."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    relaxed = topic + "-relaxed"
    futures = admin.create_topics(
        [
            NewTopic(topic, num_partitions=1, replication_factor=1),
            NewTopic(
                relaxed,
                num_partitions=1,
                replication_factor=1,
                config={"message.timestamp.after.max.ms": str(3 * 3600 * 1000)},
            ),
        ],
        operation_timeout=10,
    )
    for future in futures.values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    delivered = []
    now = int(time.time() * 1000)
    for name, value, timestamp in [
        (topic, b"now", now),
        (topic, b"later", now + 2 * 3600 * 1000),
        (topic, b"again", now),
        (relaxed, b"later", now + 2 * 3600 * 1000),
    ]:
        producer.produce(
            name,
            value=value,
            partition=0,
            timestamp=timestamp,
            on_delivery=lambda e, m: delivered.append((m.topic(), m.value(), e and e.code(), m.offset())),
        )
        assert producer.flush(30) == 0
    refused = [d for d in delivered if d[2] is not None]
    assert refused == [(topic, b"later", KafkaError.INVALID_TIMESTAMP, None)]
    assert [d for d in delivered if d[2] is None] == [
        (topic, b"now", None, 0),
        (topic, b"again", None, 1),
        (relaxed, b"later", None, 0),
    ]
