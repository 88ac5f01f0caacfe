"""aiokafka (the asyncio client) driving a broker; each mode returns what it
saw as a dict. test_aiokafka.py runs the modes against ringbroker; run as
`python aiokafka_client.py MODE BOOTSTRAP TOPIC` against Apache Kafka 4.1.1
the same modes printed what that test expects.
"""

import asyncio
import json
import sys
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


async def admin_client(bootstrap):
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    await admin.start()
    return admin


async def create_topic(bootstrap, topic, partitions, configs=None):
    admin = await admin_client(bootstrap)
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    finally:
        await admin.close()


async def end_offsets(bootstrap, topic, partitions):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = await consumer.end_offsets(tps)
        return [ends[tp] for tp in tps]
    finally:
        await consumer.stop()


async def committed(bootstrap, group, topic, partitions):
    admin = await admin_client(bootstrap)
    try:
        offsets = await admin.list_consumer_group_offsets(group)
        return [offsets[TopicPartition(topic, p)].offset for p in range(partitions)]
    finally:
        await admin.close()


async def wait_for(what, predicate, seconds=60):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def produce_consume(bootstrap, topic):
    """Idempotent producers, one per codec, write 250 keyed records with
    headers each; a group consumer reads them back and compares every record
    with its acknowledgement."""
    await create_topic(bootstrap, topic, 3)
    acked = {}
    for codec in CODECS:
        name = codec or "none"
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all",
                                    compression_type=codec, linger_ms=5)
        await producer.start()
        try:
            futures = []
            for i in range(250):
                key = f"{name}-{i}"
                futures.append((key, await producer.send(
                    topic, key=key.encode(), value=(key * (1 + i % 7)).encode(),
                    headers=[("codec", name.encode()), ("i", str(i).encode())])))
            for key, future in futures:
                meta = await future
                acked[key] = (meta.partition, meta.offset)
        finally:
            await producer.stop()
    group = f"{topic}-readers"
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    read = mismatched = 0
    distinct = set()
    try:
        deadline = time.monotonic() + 60
        while read < len(acked) and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for r in records:
                    read += 1
                    key = r.key.decode()
                    distinct.add(key)
                    name, i = key.rsplit("-", 1)
                    ok = (acked.get(key) == (r.partition, r.offset)
                          and r.value == (key * (1 + int(i) % 7)).encode()
                          and list(r.headers) == [("codec", name.encode()), ("i", i.encode())])
                    mismatched += 0 if ok else 1
        await consumer.commit()
    finally:
        await consumer.stop()
    at_end = await committed(bootstrap, group, topic, 3) == await end_offsets(bootstrap, topic, 3)
    return {"acked": len(acked), "read": read, "distinct": len(distinct), "mismatched": mismatched,
            "committed_at_end": at_end}


async def group(bootstrap, topic):
    """Two members share a four-partition topic; after they leave, a third
    member reads only what came after their commits."""
    await create_topic(bootstrap, topic, 4)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()

    async def produce(start, stop):
        for i in range(start, stop):
            await producer.send(topic, value=str(i).encode(), partition=i % 4)
        await producer.flush()

    group_id = f"{topic}-group"
    values = {}
    by_member = [set(), set()]
    members = [AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group_id,
                                auto_offset_reset="earliest", fetch_max_wait_ms=200)
               for _ in range(2)]
    for member in members:
        await member.start()
    # Both members hold two partitions each before anything is written.
    polls = [asyncio.ensure_future(member.getmany(timeout_ms=200)) for member in members]
    await wait_for("the assignment", lambda: all(len(m.assignment()) == 2 for m in members))
    await produce(0, 400)
    deadline = time.monotonic() + 60
    while len(values) < 400 and time.monotonic() < deadline:
        for m, member in enumerate(members):
            if polls[m].done():
                for records in polls[m].result().values():
                    for r in records:
                        values[r.value.decode()] = values.get(r.value.decode(), 0) + 1
                        by_member[m].add(r.partition)
                polls[m] = asyncio.ensure_future(member.getmany(timeout_ms=200))
        await asyncio.sleep(0.01)
    await asyncio.gather(*polls)
    admin = await admin_client(bootstrap)
    try:
        described = (await admin.describe_consumer_groups([group_id]))[0]
        listed = [g[0] for g in await admin.list_consumer_groups()]
    finally:
        await admin.close()
    group_desc = described.groups[0]
    for member in members:
        await member.commit()
        await member.stop()
    await produce(400, 440)
    await producer.stop()
    third = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group_id,
                             auto_offset_reset="earliest", fetch_max_wait_ms=200)
    await third.start()
    after = []
    try:
        deadline = time.monotonic() + 60
        while len(after) < 40 and time.monotonic() < deadline:
            for records in (await third.getmany(timeout_ms=500)).values():
                after.extend(r.value.decode() for r in records)
        for records in (await third.getmany(timeout_ms=1000)).values():
            after.extend(r.value.decode() for r in records)
        await third.commit()
    finally:
        await third.stop()
    lag = sum(e - c for e, c in zip(await end_offsets(bootstrap, topic, 4),
                                    await committed(bootstrap, group_id, topic, 4)))
    return {"distinct": len(values), "duplicates": sum(values.values()) - len(values),
            "partitions_per_member": [len(by_member[0]), len(by_member[1])],
            "state": group_desc[2], "protocol_type": group_desc[3], "protocol": group_desc[4],
            "members": len(group_desc[5]), "listed": group_id in listed,
            "after": len(after), "after_sorted_first": sorted(after, key=int)[0], "lag": lag}


async def count(bootstrap, topic, isolation, want):
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, isolation_level=isolation,
                                auto_offset_reset="earliest", fetch_max_wait_ms=200)
    await consumer.start()
    n = aborted = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                for r in records:
                    n += 1
                    aborted += int(r.value.decode()[1:].split("-")[0]) % 3 == 2
            if not batches and n >= want:
                break
    finally:
        await consumer.stop()
    return n, aborted


async def transactions(bootstrap, topic):
    """Seven committed and three aborted transactions of ten records; then a
    copier that produces what it reads and commits its input offsets in the
    same transaction (send_offsets_to_transaction)."""
    out = f"{topic}-copy"
    await create_topic(bootstrap, topic, 2)
    await create_topic(bootstrap, out, 2)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic}-txn")
    await producer.start()
    committed_n = aborted_n = 0
    try:
        for t in range(10):
            await producer.begin_transaction()
            for i in range(10):
                await producer.send(topic, key=str(i).encode(), value=f"t{t}-{i}".encode())
            if t % 3 == 2:
                await producer.abort_transaction()
                aborted_n += 10
            else:
                await producer.commit_transaction()
                committed_n += 10
    finally:
        await producer.stop()
    rc, rc_aborted = await count(bootstrap, topic, "read_committed", committed_n)
    ru, _ = await count(bootstrap, topic, "read_uncommitted", committed_n + aborted_n)
    copier_group = f"{topic}-copiers"
    copier = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic}-copier")
    await copier.start()
    source = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=copier_group,
                              isolation_level="read_committed", auto_offset_reset="earliest",
                              enable_auto_commit=False, fetch_max_wait_ms=200)
    await source.start()
    copied = 0
    try:
        deadline = time.monotonic() + 60
        while copied < committed_n and time.monotonic() < deadline:
            batches = await source.getmany(timeout_ms=500)
            if not batches:
                continue
            async with copier.transaction():
                offsets = {}
                for tp, records in batches.items():
                    for r in records:
                        await copier.send(out, key=r.key, value=r.value)
                    offsets[tp] = records[-1].offset + 1
                await copier.send_offsets_to_transaction(offsets, copier_group)
            copied += sum(len(records) for records in batches.values())
    finally:
        await source.stop()
        await copier.stop()
    copies, _ = await count(bootstrap, out, "read_committed", committed_n)
    behind = [e - c for e, c in zip(await end_offsets(bootstrap, topic, 2),
                                    await committed(bootstrap, copier_group, topic, 2))]
    return {"committed": committed_n, "aborted": aborted_n, "read_committed": rc,
            "read_committed_aborted": rc_aborted, "read_uncommitted": ru, "copied": copies,
            "copier_offsets_behind_end": behind}


def error_name(err):
    return type(err).__name__ if err else ""


async def admin(bootstrap, topic):
    """The admin client walks a topic's life: create, describe and alter its
    configs, add partitions, delete records, describe the cluster, delete."""
    seen = {}
    admin = await admin_client(bootstrap)
    try:
        await admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"})])
        # aiokafka answers CreateTopics' per-topic errors rather than raising.
        again = await admin.create_topics([NewTopic(topic, 2, 1)])
        seen["create_again"] = [t[1] for t in again.topic_errors]
        bad = await admin.create_topics([NewTopic(f"{topic}-bad", 1, 1, topic_configs={"cleanup.policy": "sideways"})])
        seen["create_bad_config"] = [t[1] for t in bad.topic_errors]

        async def configs():
            described = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic,
                                configs={"retention.ms": None, "cleanup.policy": None, "max.message.bytes": None})])
            resources = described[0].to_object()["resources"]
            return {c["config_names"]: f'{c["config_value"]}/{c["config_source"]}'
                    for c in resources[0]["config_entries"]}

        seen["configs_created"] = await configs()
        await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                  configs={"max.message.bytes": "65536"})])
        seen["configs_altered"] = await configs()
        altered = await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                            configs={"no.such.config": "1"})])
        seen["alter_unknown_config"] = altered[0].to_object()["resources"][0]["error_code"]
        await admin.create_partitions({topic: NewPartitions(4)})
        try:
            await admin.create_partitions({topic: NewPartitions(1)})
            seen["shrink_partitions"] = ""
        except KafkaError as e:
            seen["shrink_partitions"] = error_name(e)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        for i in range(40):
            await producer.send(topic, value=b"v", partition=i % 4, timestamp_ms=1_700_000_000_000 + i * 1000)
        await producer.stop()
        deleted = await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(4)})
        seen["deleted_low_watermark"] = deleted[TopicPartition(topic, 0)]
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(4)]
            starts = await consumer.beginning_offsets(tps)
            ends = await consumer.end_offsets(tps)
            by_time = await consumer.offsets_for_times({tp: 1_700_000_020_000 for tp in tps})
            seen["start_offsets"] = [starts[tp] for tp in tps]
            seen["end_offsets"] = [ends[tp] for tp in tps]
            seen["offsets_after_ts"] = [by_time[tp].offset for tp in tps]
        finally:
            await consumer.stop()
        cluster = await admin.describe_cluster()
        seen["brokers"] = len(cluster["brokers"])
        seen["controller_is_broker"] = cluster["controller_id"] == cluster["brokers"][0]["node_id"]
        seen["cluster_id_set"] = bool(cluster["cluster_id"])
        seen["listed"] = topic in await admin.list_topics()
        await admin.delete_topics([topic])
        seen["listed_after_delete"] = topic in await admin.list_topics()
    finally:
        await admin.close()
    return seen


MODES = {"produce-consume": produce_consume, "group": group, "transactions": transactions, "admin": admin}


def run(mode, bootstrap, topic):
    return asyncio.run(asyncio.wait_for(MODES[mode](bootstrap, topic), 150))


if __name__ == "__main__":
    print(json.dumps(run(*sys.argv[1:4])))
