"""Retention seen from kafka-python.

Goal: a topic created through KafkaAdminClient with `segment.bytes` and
`retention.bytes` keeps its newest segments only, as Kafka would; the
client's `beginning_offsets` (ListOffsets earliest) moves to the first kept
offset, and a consumer that seeks to offset 0 with
`auto_offset_reset="earliest"` is moved there by the broker's
OFFSET_OUT_OF_RANGE and reads every kept record unchanged.

Method: a broker of its own that checks retention every 200 ms; small
batches (`batch_size`) so that 8 KiB segments hold several; the
partition's `.log` files on disk tell what was kept; records are compared
field by field with what was sent at their offsets.
"""

import struct
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from conftest import Broker, serve
from messages import make_messages

SEGMENT_BYTES = 8192
RETENTION_BYTES = 32768
MESSAGES = 800


@pytest.fixture(scope="module")
def retention_broker(tmp_path_factory):
    yield from serve(Broker(tmp_path_factory.mktemp("ringbroker-retention"),
                            extra_args=["--log-retention-check-interval-ms", "200"]))


@pytest.fixture
def broker(retention_broker):
    """This module's broker (named `broker` so conftest attaches its log to failures)."""
    retention_broker.assert_alive()
    yield retention_broker


def batch_bytes(data):
    """Bytes of the record batches at the start of a segment file: each is a
    base offset (8 bytes) and a length (4 bytes) followed by that many
    bytes; the zero padding after the last one reads as length 0."""
    position = 0
    while position + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, position + 8)
        if length <= 0 or position + 12 + length > len(data):
            break
        position += 12 + length
    return position


def segments_on_disk(directory):
    """(base offset, bytes of record batches) of each .log file, in offset
    order: the batches' own bytes, as the broker counts them for
    retention.bytes; the active segment's file runs on, zero-padded, to
    the end of its last written block."""
    segments = []
    for path in directory.glob("*.log"):
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # a deletion under way
            continue
        segments.append((int(path.stem), batch_bytes(data)))
    return sorted(segments)


def test_retention_bytes_moves_the_log_start_and_consumers_follow(broker, topic):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([
        NewTopic(topic, num_partitions=1, replication_factor=1, topic_configs={
            "segment.bytes": str(SEGMENT_BYTES),
            "retention.bytes": str(RETENTION_BYTES),
            # The messages carry 2023 timestamps: no time limit here.
            "retention.ms": "-1",
        }),
    ])
    admin.close()

    messages = make_messages(MESSAGES, 1, include_empty_values=False, null_header_values=False)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, enable_idempotence=False, acks="all",
        batch_size=1024, linger_ms=0, max_block_ms=30000, request_timeout_ms=30000,
    )
    futures = [
        producer.send(topic, value=m["value"], key=m["key"], headers=m["headers"],
                      partition=0, timestamp_ms=m["timestamp_ms"])
        for m in messages
    ]
    producer.flush(timeout=30)
    offsets = [future.get(timeout=30).offset for future in futures]
    producer.close()
    assert offsets == list(range(MESSAGES))

    directory = broker.data_dir / f"{topic}-0"
    deadline = time.monotonic() + 20
    while True:
        segments = segments_on_disk(directory)
        total = sum(size for _, size in segments)
        # Kafka's rule: whole segments go while at least retention.bytes stay.
        if total - segments[0][1] < RETENTION_BYTES:
            break
        assert time.monotonic() < deadline, f"retention not applied: {segments}"
        time.sleep(0.1)
    assert RETENTION_BYTES <= total < RETENTION_BYTES + SEGMENT_BYTES + 2048, segments
    start = segments[0][0]
    assert start > 0

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
        auto_offset_reset="earliest", fetch_max_wait_ms=100, request_timeout_ms=30000,
    )
    partition = TopicPartition(topic, 0)
    assert consumer.beginning_offsets([partition]) == {partition: start}
    assert consumer.end_offsets([partition]) == {partition: MESSAGES}
    consumer.assign([partition])
    consumer.seek(partition, 0)
    records = []
    deadline = time.monotonic() + 30
    while not records or records[-1].offset < MESSAGES - 1:
        assert time.monotonic() < deadline, f"read {len(records)} records"
        for batch in consumer.poll(timeout_ms=200).values():
            records.extend(batch)
    consumer.close()
    assert [record.offset for record in records] == list(range(start, MESSAGES))
    for record in records:
        message = messages[record.offset]
        where = f"offset {record.offset}"
        assert record.key == message["key"], where
        assert record.value == message["value"], where
        assert [(k, v) for k, v in record.headers] == message["headers"], where
        assert record.timestamp == message["timestamp_ms"], where
