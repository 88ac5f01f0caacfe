"""One consumer-group member as a separate process, for test_consumer_groups.py.

It subscribes to one topic in one group and reports on stdout, one JSON
object per line (flushed at once):

    {"event": "started", "pid": ...}
    {"event": "assigned", "partitions": [...], "generation": g, "member_id": m}
    {"event": "revoked", "partitions": [...]}
    {"event": "records", "records": [[partition, offset, value], ...]}
    {"event": "committed", "offsets": {partition: offset}}
    {"event": "commit_failed", "error": "..."}
    {"event": "commit_result", "error": null or "...", "code": ...}
    {"event": "closed"}

--client kafka-python: after each poll that returned records, the records
are reported and then their positions committed synchronously (so whatever
was committed was reported first). SIGTERM closes the consumer (LeaveGroup).

--client confluent: records are reported but nothing is committed unless the
test writes `commit PARTITION OFFSET` on stdin; the synchronous commit's
outcome comes back as a commit_result line. `exit` on stdin closes.
"""

import argparse
import json
import os
import select
import signal
import sys
import time

stop = False


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def on_sigterm(signum, frame):
    global stop
    stop = True


def run_kafka_python(args):
    import logging
    import os
    if os.environ.get("GROUP_MEMBER_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.errors import KafkaError

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        fetch_max_wait_ms=100,
        request_timeout_ms=30000,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit(event="revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            meta = consumer.group_metadata()
            emit(
                event="assigned",
                partitions=sorted(tp.partition for tp in assigned),
                generation=meta.generation_id,
                member_id=meta.member_id,
            )

        def on_partitions_lost(self, lost):
            emit(event="revoked", partitions=sorted(tp.partition for tp in lost), lost=True)

    # kafka-python 3.0.12 loses a join that completes after poll()'s
    # timeout ran out ("timeout in ensure_active_group; returning early"):
    # it never handles the SyncGroup answer, never re-enables heartbeats and
    # its session expires (seen with GROUP_MEMBER_DEBUG, 1 run in ~15). The
    # leader rejoins at once when it had no metadata for the topic at its
    # first assignment, which is what puts a join inside that window: load
    # the metadata first, and poll with a wider timeout.
    consumer.partitions_for_topic(args.topic)
    consumer.subscribe([args.topic], listener=Listener())
    while not stop:
        batches = consumer.poll(timeout_ms=500)
        records = [
            [record.partition, record.offset, record.value.decode() if record.value is not None else None]
            for batch in batches.values()
            for record in batch
        ]
        if not records:
            continue
        emit(event="records", records=records)
        try:
            consumer.commit()
            positions = {}
            for partition, offset, _ in records:
                positions[str(partition)] = max(positions.get(str(partition), 0), offset + 1)
            emit(event="committed", offsets=positions)
        except KafkaError as error:
            emit(event="commit_failed", error=repr(error))
    consumer.close(autocommit=False)
    emit(event="closed")


def run_confluent(args):
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.name,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "max.poll.interval.ms": 60000,
        "fetch.wait.max.ms": 100,
    })

    def on_assign(c, partitions):
        emit(event="assigned", partitions=sorted(tp.partition for tp in partitions))

    def on_revoke(c, partitions):
        emit(event="revoked", partitions=sorted(tp.partition for tp in partitions))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    buffered = b""
    while not stop:
        message = consumer.poll(0.05)
        if message is not None:
            if message.error() is not None:
                emit(event="error", error=str(message.error()))
            else:
                value = message.value()
                emit(event="records", records=[[message.partition(), message.offset(),
                                                value.decode() if value is not None else None]])
        ready, _, _ = select.select([sys.stdin], [], [], 0)
        if not ready:
            continue
        chunk = os.read(sys.stdin.fileno(), 4096)
        if not chunk:
            break
        buffered += chunk
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            words = line.decode().split()
            if words == ["exit"]:
                consumer.close()
                emit(event="closed")
                return
            if len(words) == 3 and words[0] == "commit":
                partition, offset = int(words[1]), int(words[2])
                try:
                    consumer.commit(offsets=[TopicPartition(args.topic, partition, offset)],
                                    asynchronous=False)
                    emit(event="commit_result", error=None, code=None)
                except KafkaException as error:
                    kafka_error = error.args[0]
                    emit(event="commit_result", error=str(kafka_error), code=kafka_error.code(),
                         name=kafka_error.name())
    consumer.close()
    emit(event="closed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=["kafka-python", "confluent"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=300)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    emit(event="started", pid=os.getpid(), time=time.time())
    if args.client == "kafka-python":
        run_kafka_python(args)
    else:
        run_confluent(args)


if __name__ == "__main__":
    main()
