"""Transactional offset commits (send_offsets_to_transaction) with
confluent-kafka (librdkafka) against ringbroker, end to end through the
transaction coordinator's markers.

Goal: offsets sent in a transaction become the group's committed offsets
when the transaction commits and never when it aborts; while it is open, a
read_uncommitted consumer's committed() answers the previous offset and a
read_committed one (librdkafka then sets OffsetFetch's require_stable) gets
no answer (the broker says UNSTABLE_OFFSET_COMMIT, which librdkafka
retries) until the commit. A transaction left open by a broker killed with
-9 keeps its offsets pending across the restart, and a new producer with
the same transactional.id aborts it, after which the old offset is stable
again.

Method: a 2-shard broker (so the group's offsets partition and the
transaction coordinator may be on different cores); the consumer group is
never joined: consumer_group_metadata() of an unsubscribed consumer carries
generation -1, the "simple group" case. Every wait has a deadline.
"""

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import conftest

FLAGS = ["--group-initial-rebalance-delay-ms", "0"]
PARTITIONS = 2


def create_topic(bootstrap, name):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
        future.result(timeout=30)


def transactional_producer(bootstrap, transactional_id):
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    return producer


def committed(bootstrap, group, topic, isolation, timeout=10):
    """The group's committed offsets of every partition, as a consumer with
    `isolation` asks for them."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "isolation.level": isolation,
        "enable.auto.commit": False,
    })
    try:
        answer = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=timeout)
        return [tp.offset for tp in answer]
    finally:
        consumer.close()


def send_offsets(producer, bootstrap, group, topic, offsets):
    metadata_source = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, p, o) for p, o in offsets.items()],
            metadata_source.consumer_group_metadata(),
            30,
        )
    finally:
        metadata_source.close()


def test_send_offsets_to_transaction_commits_aborts_and_survives_kill_9(tmp_path, topic):
    broker = conftest.Broker(tmp_path, extra_args=FLAGS, cores=2)
    broker.start()
    try:
        bootstrap = broker.bootstrap
        group = f"{topic}-group"
        create_topic(bootstrap, topic)
        producer = transactional_producer(bootstrap, f"{topic}-txn")

        producer.begin_transaction()
        send_offsets(producer, bootstrap, group, topic, {0: 10, 1: 20})
        producer.commit_transaction(30)
        # Kafka answers EndTxn once PREPARE_COMMIT is durable and writes the
        # markers after: until the offsets partition has its marker, a
        # read_uncommitted fetch still answers the previous offsets, and a
        # read_committed one (require_stable) is told to retry. So the
        # stable answer first, then the read_uncommitted one.
        assert committed(bootstrap, group, topic, "read_committed") == [10, 20]
        assert committed(bootstrap, group, topic, "read_uncommitted") == [10, 20]

        producer.begin_transaction()
        send_offsets(producer, bootstrap, group, topic, {0: 15})
        producer.abort_transaction(30)
        assert committed(bootstrap, group, topic, "read_committed") == [10, 20], "aborted offsets dropped"

        producer.begin_transaction()
        send_offsets(producer, bootstrap, group, topic, {0: 30})
        assert committed(bootstrap, group, topic, "read_uncommitted") == [10, 20], "pending offsets invisible"
        with pytest.raises(KafkaException):
            # require_stable: UNSTABLE_OFFSET_COMMIT until the commit.
            committed(bootstrap, group, topic, "read_committed", timeout=3)
        producer.commit_transaction(30)
        assert committed(bootstrap, group, topic, "read_committed") == [30, 20]

        # An open transaction survives kill -9 as pending offsets; the next
        # producer with the same transactional.id aborts it.
        producer.begin_transaction()
        send_offsets(producer, bootstrap, group, topic, {1: 40})
        broker.kill()
        del producer
        broker.start()
        assert committed(bootstrap, group, topic, "read_uncommitted", timeout=30) == [30, 20]
        with pytest.raises(KafkaException):
            committed(bootstrap, group, topic, "read_committed", timeout=3)
        successor = transactional_producer(bootstrap, f"{topic}-txn")
        deadline = time.monotonic() + 30
        while True:
            try:
                offsets = committed(bootstrap, group, topic, "read_committed", timeout=3)
                break
            except KafkaException:
                assert time.monotonic() < deadline, "offsets still unstable after the successor's abort"
        assert offsets == [30, 20], "the orphaned transaction's offsets were aborted"

        successor.begin_transaction()
        send_offsets(successor, bootstrap, group, topic, {1: 50})
        successor.commit_transaction(30)
        assert committed(bootstrap, group, topic, "read_committed") == [30, 50]
        broker.stop()
    finally:
        broker.kill()
