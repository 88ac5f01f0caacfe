"""aiokafka 0.14 (the asyncio Python client) against ringbroker.

Goal: what an asyncio service built on aiokafka relies on works as with
Kafka. Idempotent producers with every codec write keyed records with
headers that a group consumer reads back once each at the acknowledged
offsets, and its commit lands at the end. Two group members split four
partitions two and two, the admin client describes and lists the group,
and a later member resumes from their commits. Transactions commit and
abort, read_committed readers see only what was committed, and a copier
with send_offsets_to_transaction copies exactly the committed input. The
admin client's topic life cycle (create, config sources, alter_configs,
create_partitions and its shrink refusal, delete_records, offsets by time,
describe_cluster, delete_topics) answers with Kafka's codes.

Method: aiokafka_client.py's modes run in-process, each on a fresh topic.
Every expected value below is what the same modes returned against Apache
Kafka 4.1.1 (KRaft, single node).
"""

import aiokafka_client


def test_aiokafka_idempotent_producers_and_a_group_consumer_round_trip_every_codec(broker, topic):
    seen = aiokafka_client.run("produce-consume", broker.bootstrap, topic)
    assert seen == {"acked": 1250, "read": 1250, "distinct": 1250, "mismatched": 0, "committed_at_end": True}


def test_aiokafka_group_members_split_partitions_and_resume_from_commits(broker, topic):
    seen = aiokafka_client.run("group", broker.bootstrap, topic)
    assert seen == {
        "distinct": 400, "duplicates": 0, "partitions_per_member": [2, 2],
        "state": "Stable", "protocol_type": "consumer", "protocol": "roundrobin", "members": 2,
        "listed": True, "after": 40, "after_sorted_first": "400", "lag": 0,
    }


def test_aiokafka_transactions_and_a_copier_with_send_offsets_copy_exactly_once(broker, topic):
    seen = aiokafka_client.run("transactions", broker.bootstrap, topic)
    assert seen == {
        "committed": 70, "aborted": 30, "read_committed": 70, "read_committed_aborted": 0,
        "read_uncommitted": 100, "copied": 70,
        # The copier commits the offset after the last record it read; each
        # partition's final commit marker stands between that and the end.
        "copier_offsets_behind_end": [1, 1],
    }


def test_aiokafka_admin_walks_a_topic_life_cycle_like_kafka(broker, topic):
    seen = aiokafka_client.run("admin", broker.bootstrap, topic)
    # With its own retention.ms deleted, the topic falls back to the
    # broker's log.retention.ms: -1, set on the command line of the tests'
    # broker (conftest.RETENTION_ARGS), as a static broker config. Kafka
    # 4.1.1 with log.retention.ms=-1 in server.properties answered the same;
    # with none it answers 604800000 from the default.
    # Error codes as numbers (36 TOPIC_ALREADY_EXISTS, 40 INVALID_CONFIG);
    # config sources 1 (the topic's own) and 5 (the default).
    assert seen == {
        "create_again": [36], "create_bad_config": [40],
        "configs_created": {"cleanup.policy": "delete/5", "max.message.bytes": "1048588/5",
                            "retention.ms": "3600000/1"},
        "configs_altered": {"cleanup.policy": "delete/5", "max.message.bytes": "65536/1",
                            "retention.ms": "-1/4"},
        "alter_unknown_config": 40, "shrink_partitions": "InvalidPartitionsError", "deleted_low_watermark": 4,
        "start_offsets": [4, 0, 0, 0], "end_offsets": [10, 10, 10, 10], "offsets_after_ts": [5, 5, 5, 5],
        "brokers": 1, "controller_is_broker": True, "cluster_id_set": True,
        "listed": True, "listed_after_delete": False,
    }
