"""Deterministic test messages shared by the client tests."""

# Generated messages carry timestamps from here (2023-11-14), far from "now",
# so a broker that stamps its own clock over CreateTime is caught.
BASE_TIMESTAMP_MS = 1_700_000_000_000


def make_messages(count, partitions, include_empty_values=True, null_header_values=True):
    """Deterministic messages that vary in every field Kafka carries: null
    keys, null (and, where the client can tell, empty) values, values that
    compress well and ones that do not, no / one / repeated headers with a
    null value, explicit CreateTime timestamps. kafka-python's send() takes
    no null header value, so its tests ask for empty ones instead."""
    messages = []
    for index in range(count):
        # Never both key and value null: kafka-python refuses such a message.
        key = None if index % 7 == 0 and index % 11 != 0 else f"key-{index}".encode()
        if index % 11 == 0:
            value = None
        elif include_empty_values and index % 13 == 0:
            value = b""
        elif index % 3 == 0:
            value = f"bin-{index}-".encode() + bytes((index * 31 + i * 17) % 251 for i in range(index % 400))
        else:
            value = (f"value-{index}-" + "abcdefghij" * (index % 50)).encode()
        if index % 3 == 0:
            headers = []
        elif index % 3 == 1:
            headers = [("index", str(index).encode())]
        else:
            odd_value = None if null_header_values else b""
            headers = [("trace", f"t-{index}".encode()), ("odd-header", odd_value), ("trace", b"second")]
        messages.append({
            "partition": index % partitions,
            "key": key,
            "value": value,
            "headers": headers,
            "timestamp_ms": BASE_TIMESTAMP_MS + index,
        })
    return messages


# Value sizes that put record batches on both sides of the broker's 32 KiB
# threshold between receiving a partition's records straight into their own
# buffer and copying them out of a bulk read.
SIZED_VALUE_BYTES = [40_000, 120, 70_000, 3_000, 33_000, 0, 150_000, 31_000]


def make_sized_messages(count, partitions):
    """Messages with values of SIZED_VALUE_BYTES in turn (deterministic,
    incompressible bytes), spread over the partitions so that one produce
    request carries long and short batches of several partitions."""
    import random

    messages = []
    for index in range(count):
        size = SIZED_VALUE_BYTES[index % len(SIZED_VALUE_BYTES)]
        messages.append({
            "partition": (index // 3) % partitions,
            "key": f"sized-{index}".encode(),
            "value": random.Random(index).randbytes(size),
            "headers": [("size", str(size).encode())],
            "timestamp_ms": BASE_TIMESTAMP_MS + index,
        })
    return messages


def by_partition(messages):
    """Messages grouped by partition, in send order."""
    grouped = {}
    for message in messages:
        grouped.setdefault(message["partition"], []).append(message)
    return grouped
