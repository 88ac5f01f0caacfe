"""KafkaJS 2.2.4 (the Node.js client) against ringbroker.

Goal: what a Node.js service built on KafkaJS relies on works as with
Kafka. Its idempotent producer writes records (uncompressed and gzip) that
a group consumer reads back once each, keys, values and headers intact,
offsets dense in every partition, and its commits land at the end. Two
group members (KafkaJS's own join and round-robin assignment) split four
partitions two and two, the admin client describes and lists the group,
and a later member resumes from their commits. Transactions commit and
abort, read_committed readers see only what was committed, and a
consume-transform-produce copier (sendOffsets) copies exactly the committed
input. The admin client's topic life cycle (create, config sources,
alterConfigs, createPartitions and its shrink refusal, deleteTopicRecords,
offsets by time, describeCluster, deleteTopics) answers with Kafka's codes.

Method: tests/node/kafkajs_client.js runs under node with the package
tests/node/package-lock.json pins (`npm ci` once per session); each mode
runs on a fresh topic and prints what it saw as JSON. Every expected value
below is what the same program printed against Apache Kafka 4.1.1 (KRaft,
single node). Skipped only where `node` or `npm` is not installed.
"""

import pathlib
import shutil
import subprocess

import pytest

from conftest import run_json_program

NODE_DIR = pathlib.Path(__file__).resolve().parents[1] / "node"


@pytest.fixture(scope="module")
def kafkajs():
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the KafkaJS tests")
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=NODE_DIR, check=True, timeout=600)
    return NODE_DIR / "kafkajs_client.js"


def run(kafkajs, mode, broker, topic):
    return run_json_program(["node", kafkajs, mode, broker.bootstrap, topic])


def test_kafkajs_idempotent_producer_and_group_consumer_round_trip(kafkajs, broker, topic):
    seen = run(kafkajs, "produce-consume", broker, topic)
    assert seen == {"acked": 1000, "read": 1000, "distinct": 1000, "mismatched": 0, "dense": True,
                    "committed_at_end": True}


def test_kafkajs_group_members_split_partitions_and_resume_from_commits(kafkajs, broker, topic):
    seen = run(kafkajs, "group", broker, topic)
    assert seen == {
        "distinct": 400, "duplicates": 0, "partitions_per_member": [2, 2],
        "state": "Stable", "members": 2, "protocol": "RoundRobinAssigner", "listed": True,
        "after": 40, "repeats": 0, "lag": 0, "emptied": "Empty",
    }


def test_kafkajs_transactions_and_a_copier_with_send_offsets_copy_exactly_once(kafkajs, broker, topic):
    seen = run(kafkajs, "transactions", broker, topic)
    assert seen == {
        "committed": 70, "aborted": 30, "read_committed": 70, "read_committed_aborted": 0,
        "read_uncommitted": 100, "copied": 70,
        # The copier commits the offset after the last record it read; each
        # partition's final commit marker stands between that and the end.
        "copier_offsets_behind_end": [1, 1],
    }


def test_kafkajs_admin_walks_a_topic_life_cycle_like_kafka(kafkajs, broker, topic):
    seen = run(kafkajs, "admin", broker, topic)
    # With its own retention.ms deleted, the topic falls back to the
    # broker's log.retention.ms: -1, set on the command line of the tests'
    # broker (conftest.RETENTION_ARGS), as a static broker config. Kafka
    # 4.1.1 with log.retention.ms=-1 in server.properties answered the same;
    # with none it answers 604800000 from the default.
    # Config sources as KafkaJS numbers them: 1 the topic's own, 5 the default.
    assert seen == {
        "created": True, "created_again": False, "create_bad_config": "INVALID_CONFIG",
        "configs_created": {"cleanup.policy": "delete/true/5", "max.message.bytes": "1048588/true/5",
                            "retention.ms": "3600000/false/1"},
        "configs_altered": {"cleanup.policy": "delete/true/5", "max.message.bytes": "65536/false/1",
                            "retention.ms": "-1/false/4"},
        "alter_unknown_config": "INVALID_CONFIG", "shrink_partitions": "INVALID_PARTITIONS",
        "start_offsets": [4, 0, 0, 0], "end_offsets": [10, 10, 10, 10], "offsets_after_ts": [5, 5, 5, 5],
        "partitions": 4, "brokers": 1, "controller_is_broker": True, "cluster_id_set": True,
        "listed": True, "listed_after_delete": False,
    }
