"""kafka-python against ringbroker.

Goal: the pure-Python client produces with acks 0, 1 and all and every
compression type, reads back with assign() and seek() (no consumer group),
and manages topics with KafkaAdminClient (create, add partitions, alter
configs with IncrementalAlterConfigs and AlterConfigs, delete); keys, values (null and empty
included), headers and CreateTime timestamps come back exactly.

Method: one topic per test case on the session's broker (auto-created with 2
partitions), explicit partitions and timestamps, a consumer that assigns
every partition and seeks to 0, and a field-by-field comparison per
partition in send order; with acks 1 and all, the offsets the producer was
given must be the offsets read.
"""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic
from kafka.errors import InvalidPartitionsError, OffsetOutOfRangeError, TopicAlreadyExistsError

from conftest import DEFAULT_PARTITIONS
from messages import by_partition, make_messages, make_sized_messages

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
ACKS = [0, 1, "all"]
MESSAGES = 300
READ_TIMEOUT_S = 30


def make_producer(broker, **config):
    return KafkaProducer(
        **{
            "bootstrap_servers": broker.bootstrap,
            # kafka-python 3 turns idempotence on by default; the broker has
            # no InitProducerId yet.
            "enable_idempotence": False,
            "linger_ms": 5,
            "request_timeout_ms": 30000,
            "max_block_ms": 30000,
            **config,
        }
    )


def make_consumer(broker):
    return KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        request_timeout_ms=30000,
    )


def produce(producer, topic, messages):
    """Sends all, flushes, and returns each message's RecordMetadata."""
    futures = [
        producer.send(
            topic,
            value=m["value"],
            key=m["key"],
            headers=m["headers"],
            partition=m["partition"],
            timestamp_ms=m["timestamp_ms"],
        )
        for m in messages
    ]
    producer.flush(timeout=30)
    return [future.get(timeout=30) for future in futures]


def read(consumer, topic, partitions_counts, start_offsets=None):
    """Assigns the partitions, seeks, and polls until each partition has
    delivered `count` records; returns {partition: [records]}."""
    partitions = [TopicPartition(topic, p) for p in partitions_counts]
    consumer.assign(partitions)
    for tp in partitions:
        consumer.seek(tp, (start_offsets or {}).get(tp.partition, 0))
    got = {p: [] for p in partitions_counts}
    deadline = time.monotonic() + READ_TIMEOUT_S
    while any(len(got[p]) < count for p, count in partitions_counts.items()):
        assert time.monotonic() < deadline, (
            f"read {topic}: got {({p: len(r) for p, r in got.items()})}, want {partitions_counts}"
        )
        for tp, records in consumer.poll(timeout_ms=200).items():
            got[tp.partition].extend(records)
    return got


def assert_records_match(sent_by_partition, got, offsets_by_partition=None):
    for partition, sent in sent_by_partition.items():
        records = got[partition]
        assert [r.offset for r in records] == list(range(len(sent))), f"partition {partition} offsets"
        if offsets_by_partition is not None:
            assert offsets_by_partition[partition] == list(range(len(sent))), (
                f"partition {partition}: acknowledged offsets"
            )
        for message, record in zip(sent, records):
            where = f"partition {partition} offset {record.offset}"
            assert record.key == message["key"], where
            assert record.value == message["value"], where
            assert [(k, v) for k, v in record.headers] == message["headers"], where
            assert record.timestamp == message["timestamp_ms"], where
            assert record.timestamp_type == 0, f"{where}: timestamp type should be CreateTime"


@pytest.mark.parametrize("compression", CODECS, ids=lambda c: c or "none")
@pytest.mark.parametrize("acks", ACKS, ids=lambda a: f"acks-{a}")
def test_produce_and_read_back_with_assign(broker, topic, acks, compression):
    messages = make_messages(MESSAGES, DEFAULT_PARTITIONS, null_header_values=False)
    producer = make_producer(broker, acks=acks, compression_type=compression)
    try:
        metadata = produce(producer, topic, messages)
    finally:
        producer.close(timeout=10)
    sent = by_partition(messages)
    offsets = None
    if acks != 0:
        offsets = {}
        for message, record_metadata in zip(messages, metadata):
            assert record_metadata.partition == message["partition"]
            offsets.setdefault(message["partition"], []).append(record_metadata.offset)
    consumer = make_consumer(broker)
    try:
        got = read(consumer, topic, {p: len(m) for p, m in sent.items()})
        # Nothing past what was sent.
        end = consumer.end_offsets([TopicPartition(topic, p) for p in sent])
        assert {tp.partition: o for tp, o in end.items()} == {p: len(m) for p, m in sent.items()}
    finally:
        consumer.close()
    assert_records_match(sent, got, offsets)


def test_long_and_short_batches_of_several_partitions_in_one_request(broker, topic):
    # Produce v3-v8 (kafka-python): the broker reads each partition's records
    # into their own buffer, long ones straight from the socket.
    messages = make_sized_messages(48, DEFAULT_PARTITIONS)
    producer = make_producer(broker, acks="all", batch_size=400_000, linger_ms=50)
    try:
        metadata = produce(producer, topic, messages)
    finally:
        producer.close(timeout=10)
    sent = by_partition(messages)
    offsets = {}
    for message, record_metadata in zip(messages, metadata):
        offsets.setdefault(record_metadata.partition, []).append(record_metadata.offset)
    consumer = make_consumer(broker)
    try:
        got = read(consumer, topic, {p: len(m) for p, m in sent.items()})
    finally:
        consumer.close()
    assert_records_match(sent, got, offsets)


def test_seek_reads_from_the_offset_asked_for(broker, topic):
    messages = make_messages(100, 1, null_header_values=False)
    producer = make_producer(broker, acks="all")
    try:
        produce(producer, topic, messages)
    finally:
        producer.close(timeout=10)
    consumer = make_consumer(broker)
    try:
        tp = TopicPartition(topic, 0)
        got = read(consumer, topic, {0: 60}, start_offsets={0: 40})
        assert [r.offset for r in got[0]] == list(range(40, 100))
        assert [r.value for r in got[0]] == [m["value"] for m in messages[40:]]
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 100}
        consumer.seek_to_end(tp)
        assert consumer.position(tp) == 100
        assert consumer.poll(timeout_ms=500) == {}, "nothing after the end"
    finally:
        consumer.close()


def test_admin_client_creates_and_deletes_topics(broker, topic):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics({topic: {"num_partitions": 3, "replication_factor": 1}})
        assert topic in admin.list_topics()
        described = [t for t in admin.describe_topics([topic]) if t["name"] == topic]
        assert len(described) == 1 and len(described[0]["partitions"]) == 3, described
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics({topic: {"num_partitions": 3, "replication_factor": 1}})
        admin.delete_topics([topic])
        deadline = time.monotonic() + 10
        while topic in admin.list_topics():
            assert time.monotonic() < deadline, f"{topic} still listed 10 s after DeleteTopics"
            time.sleep(0.1)
    finally:
        admin.close()


def test_admin_client_adds_partitions_and_alters_configs(broker, topic):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)

    def overrides():
        described = admin.describe_configs([resource])["topic"][topic]
        return {name: entry["value"] for name, entry in described.items()}

    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        admin.create_partitions({topic: NewPartitions(3)})
        assert len(admin.describe_topics([topic])[0]["partitions"]) == 3
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({topic: NewPartitions(3)})
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        sent = producer.send(topic, value=b"on a new partition", partition=2).get(timeout=30)
        producer.close()
        assert (sent.partition, sent.offset) == (2, 0)

        # The client picks IncrementalAlterConfigs: SET and APPEND, then DELETE.
        configs = {"retention.ms": "1000", "cleanup.policy": ("APPEND", "compact")}
        result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
        assert result == {"topic": {topic: "OK"}}
        assert overrides() == {"retention.ms": "1000", "cleanup.policy": "delete,compact"}
        configs = {"retention.ms": ("DELETE", None)}
        result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
        assert result == {"topic": {topic: "OK"}}
        assert overrides() == {"cleanup.policy": "delete,compact"}
        configs = {"retention.ms": ("APPEND", "5")}
        result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
        assert "InvalidConfigurationError" in str(result["topic"][topic]), result
        assert overrides() == {"cleanup.policy": "delete,compact"}

        # AlterConfigs (the client sends the other overrides along).
        configs = {"segment.ms": "100000"}
        result = admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)], incremental=False
        )
        assert result == {"topic": {topic: "OK"}}
        assert overrides() == {"cleanup.policy": "delete,compact", "segment.ms": "100000"}
    finally:
        admin.close()


def test_admin_client_changes_a_client_metrics_subscription_with_either_api(broker, topic):
    """kafka-python's alter_configs on a client-metrics subscription, with
    IncrementalAlterConfigs and with AlterConfigs (which Kafka 4.1 takes for
    CLIENT_METRICS resources too); the answers are Kafka 4.1.1's."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    name = topic + "-subscription"

    def resource(configs=None):
        return ConfigResource(ConfigResourceType.CLIENT_METRICS, name, configs=configs)

    def described():
        entries = admin.describe_configs([resource()])["client_metrics"][name]
        return {key: (entries[key]["value"], entries[key]["config_source"]) for key in ("interval.ms", "metrics")}

    try:
        assert admin.alter_configs([resource({"interval.ms": "1000", "metrics": "a"})]) == {
            "client_metrics": {name: "OK"}}
        source = "DYNAMIC_CLIENT_METRICS_CONFIG"
        assert described() == {"interval.ms": ("1000", source), "metrics": ("a", source)}
        result = admin.alter_configs([resource({"interval.ms": "2000"})], incremental=False)
        assert result == {"client_metrics": {name: "OK"}}
        assert described() == {"interval.ms": ("2000", source), "metrics": ("a", source)}
        result = admin.alter_configs([resource({"interval.ms": "5"})], incremental=False)
        assert result == {"client_metrics": {name: "[Error 42] InvalidRequestError: Invalid value 5 for "
                                            "interval.ms, interval must be between 100 and 3600000 (1 hour)"}}
        assert described() == {"interval.ms": ("2000", source), "metrics": ("a", source)}
    finally:
        admin.close()


def test_admin_client_deletes_records(broker, topic):
    """DeleteRecords moves the log start: the low watermark is answered,
    a consumer from the beginning starts there with the acknowledged
    message, and an offset past the high watermark is OFFSET_OUT_OF_RANGE."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
        sent = [producer.send(topic, value=b"m%d" % i, partition=0).get(timeout=30) for i in range(20)]
        producer.close()
        assert [s.offset for s in sent] == list(range(20))

        partition = TopicPartition(topic, 0)
        result = admin.delete_records({partition: 12})
        assert result[partition]["low_watermark"] == 12
        assert result[partition]["error_code"] == 0
        with pytest.raises(OffsetOutOfRangeError):
            admin.delete_records({partition: 21})

        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10000
        )
        consumer.assign([partition])
        assert consumer.beginning_offsets([partition]) == {partition: 12}
        consumer.seek_to_beginning(partition)
        read = []
        for message in consumer:
            read.append((message.offset, message.value))
            if message.offset == 19:
                break
        consumer.close()
        assert read == [(i, b"m%d" % i) for i in range(12, 20)]
    finally:
        admin.close()
