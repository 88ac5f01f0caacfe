"""The Java client (kafka-clients 4.1.1 from Maven Central) against ringbroker.

Goal: the Java producer works with its defaults (acks=all, idempotence on):
every acknowledged record is read back once. Its transactions commit and
abort as with Kafka: read_committed readers see exactly the committed
records and none of the aborted ones or of the still-open transaction,
read_uncommitted readers see all of them; they run as transactions V2
(the admin client finds transaction.version 2 finalized, and every commit
or abort bumps the producer epoch); the admin client describes the
open transaction (Ongoing), lists it, and DescribeProducers shows the
producer with an open transaction on the partition. A consume-transform-produce
copier whose consumer is a subscribed group member (sendOffsetsToTransaction
with member id and generation) and that aborts every third transaction
copies each input record exactly once and leaves the group's committed
offsets at the input's end. A consumer seeking to an offset with a leader
epoch has it validated (OffsetForLeaderEpoch) and finds log truncation past
the epoch's end. The admin client pages through a topic's partitions
(DescribeTopicPartitions), elects leaders (none needed), describes the
cluster and reassigns partitions as with Kafka. An idempotent producer
writing on after its topic is deleted and made again under the same name
(Produce v13 names topics by id) has its old-id requests refused, retries
them, and the new topic holds exactly what it acknowledged afterwards.

Method: tests/java/JavaClient.java runs as a single-file Java program on a
classpath Maven resolves from tests/java/pom.xml (cached in the session), and
prints what it saw as JSON. The test is skipped only where `java` or `mvn`
is not installed.
"""

import json
import pathlib
import struct
import subprocess
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, maven_classpath, run_json_program

JAVA_DIR = pathlib.Path(__file__).resolve().parents[1] / "java"


@pytest.fixture(scope="module")
def classpath(tmp_path_factory):
    return maven_classpath(JAVA_DIR, tmp_path_factory, "the Java client tests")


def run_java(classpath, mode, broker, topic, env=None):
    return run_json_program(["java", "-cp", classpath, JAVA_DIR / "JavaClient.java", mode, broker.bootstrap, topic],
                            env=env)


def test_java_producer_defaults_are_idempotent_and_every_ack_is_read_back(classpath, broker, topic):
    seen = run_java(classpath, "idempotent-defaults", broker, topic)
    assert seen == {"acked": 2000, "read": 2000, "distinct": 2000}


def test_java_producer_follows_a_topic_recreated_under_its_name(classpath, broker, topic):
    # Produce v13 names the topic by id: the producer's first requests after
    # the re-creation carry the old id, are refused UNKNOWN_TOPIC_ID and
    # retried with the new one (measured the same on Kafka 4.1.1).
    seen = run_java(classpath, "recreated-topic", broker, topic)
    assert seen["ids_differ"] and seen["retried"]
    assert seen["acked"] == ",".join(f"{i % 2}@{i // 2}" for i in range(40))
    assert seen["read"] == ",".join(sorted(
        ("big-" if i % 4 == 0 else "") + f"after-{i}" for i in range(40)))


def test_java_transactions_hide_aborted_and_open_records_from_read_committed(classpath, broker, topic):
    seen = run_java(classpath, "transactions", broker, topic)
    assert seen["committed"] == 80 and seen["aborted"] == 20
    assert seen["read_committed"] == 80
    assert seen["read_committed_distinct"] == 80
    assert seen["read_committed_aborted"] == 0
    # 80 committed + 20 aborted + the record of the transaction aborted last.
    assert seen["read_uncommitted"] == 101
    assert seen["state"] == "Ongoing"
    assert seen["listed"] == "Ongoing"
    assert seen["producers"] == "open"
    # Transactions V2 (KIP-890 part 2): the broker finalizes
    # transaction.version 2, so the client sends no AddPartitionsToTxn and
    # every commit or abort bumps the producer epoch, as with Kafka 4.1.
    assert seen["transaction_version"] == 2
    assert seen["epochs"] == list(range(1, 11))


def test_java_admin_changes_the_transaction_version_and_producers_follow(classpath, broker, topic):
    # Downgraded to 1, a new producer speaks transactions V1 (its epoch
    # stays); upgraded back to 2, a new producer speaks V2 (every
    # transaction bumps it), as against Kafka 4.1.1.
    seen = run_java(classpath, "transaction-version", broker, topic)
    assert seen == {"levels": [1, 2], "epochs": [[0, 0, 0], [1, 2, 3]]}


def test_java_admin_turns_the_consumer_group_protocol_off_and_on_again(classpath, broker, topic):
    """`kafka-features downgrade --feature group.version=0` turns KIP-848 off:
    the feature is no longer finalized, a consumer with
    group.protocol=consumer is told to use the classic protocol (its
    ConsumerGroupHeartbeat answered UNSUPPORTED_VERSION), a classic one
    reads everything, and the admin client, refused ConsumerGroupDescribe,
    describes the classic group through DescribeGroups. Upgraded to 1, the
    consumer protocol works again. Kafka 4.1.1 printed exactly this."""
    seen = run_java(classpath, "group-version", broker, topic)
    assert seen == {
        "downgraded": "absent",
        "consumer": "UnsupportedVersionException: The cluster does not support the new CONSUMER group "
                    "protocol. Set group.protocol=classic on the consumer configs to revert to the "
                    "CLASSIC protocol until the cluster is upgraded.",
        "classic": "60", "described": "Classic Stable 1", "upgraded": "1", "consumer_again": "60",
    }


def test_java_share_consumer_and_admin_see_share_groups_off_like_kafka(classpath, broker, topic):
    """Share groups (KIP-932) are off here, as on Kafka 4.1.1 with its
    default `share.version` 0: a KafkaShareConsumer's poll fails, and so do
    the admin client's share-group calls, with the very exceptions and
    messages Kafka 4.1.1 gave them; no share group is listed."""
    seen = run_java(classpath, "share-groups-off", broker, topic)
    unsupported = "UnsupportedVersionException: The version of API is not supported."
    assert seen == {
        "poll": "UnsupportedVersionException: The cluster does not support the share group protocol. "
                "To use share groups, the cluster must have the share group protocol enabled.",
        "describe": unsupported, "offsets": unsupported, "delete_offsets": unsupported,
        "listed": "ok []",
    }


def test_java_admin_asks_for_delegation_tokens_on_plaintext_and_is_refused(classpath, broker, topic):
    """`kafka-delegation-tokens` on a PLAINTEXT listener: every request is
    refused as Kafka 4.1.1 refuses it there (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)."""
    seen = run_java(classpath, "delegation-tokens", broker, topic)
    refused = "UnsupportedByAuthenticationException"
    assert seen == {key: refused for key in (
        "create", "create for bob", "create renewed by a group", "describe", "renew", "expire")}


def test_java_admin_moves_replicas_only_to_the_one_log_directory(classpath, broker, topic):
    """AlterReplicaLogDirs (`kafka-reassign-partitions` with `log_dirs`): the
    broker's one directory, named as DescribeLogDirs names it, is where every
    replica already is; any other path is not found. The same program gives
    the same answers on Kafka 4.1.1 with one log directory."""
    seen = run_java(classpath, "log-dirs", broker, topic)
    assert seen == {
        "dirs": "1",
        "T-0 DIR": "ok",
        "T-1 DIR/": "LogDirNotFoundException",  # the exact path only
        "T-0 /nonexistent": "LogDirNotFoundException",
        "T-0 relative": "LogDirNotFoundException",
        "T-5 DIR": "UnknownTopicOrPartitionException",
        "T-absent-0 DIR": "UnknownTopicOrPartitionException",
        "T-absent-0 /nonexistent": "LogDirNotFoundException",
        # Kafka's future-replica directory name would pass 255 bytes.
        "LONG-0 /nonexistent": "InvalidTopicException",
        "replica dir": "DIR",
    }


def test_java_admin_lists_transactions_whose_id_matches_a_pattern(classpath, broker):
    """`kafka-transactions list --transactional-id-pattern` (KIP-1152,
    ListTransactions v2): the whole id must match an RE2 expression, an empty
    one matches all, one that does not parse is INVALID_REGULAR_EXPRESSION;
    the same program gives the same answers on Kafka 4.1.1."""
    prefix = "lt-" + uuid.uuid4().hex[:8]
    seen = run_java(classpath, "list-transactions-pattern", broker, prefix)
    assert seen == {
        "P-app-.*": "app-1,app-2",
        "P-app": "",  # the whole id must match
        ".*-other": "other",
        "": "app-1,app-2,other",
        ".*": "app-1,app-2,other",
        "(": "InvalidRegularExpression",
        "[a-": "InvalidRegularExpression",
        "(?P<x>.*)-app-1": "app-1",  # RE2's named groups
        "a\\1": "InvalidRegularExpression",  # no back-references in RE2
        "empty state and pattern": "app-1,app-2",
        "ongoing state and pattern": "",
    }


def test_java_admin_keeps_client_metrics_subscriptions_as_kafka_does(classpath, broker):
    """`kafka-client-metrics` / `kafka-configs --entity-type client-metrics`
    through the Java admin: subscriptions are created, described, listed,
    refused and deleted with Kafka 4.1.1's answers (the same program run
    against it), and one survives a kill -9."""
    name = "telemetry-" + uuid.uuid4().hex[:8]
    seen = run_java(classpath, "client-metrics", broker, name)
    defaults = {"interval.ms": "300000", "match": "", "metrics": ""}
    created = {
        "interval.ms": "1000",
        # Kafka prints a LIST value trimmed and joined.
        "match": "client_id=ring.*,client_software_name=apache-kafka-java",
        "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator",
    }
    assert seen["before"] == {"listed": False, **defaults}
    assert seen["create"] == "ok"
    assert seen["created"] == {"listed": True, **created}
    # Kafka 4.1's controller takes no client-metrics config as a LIST.
    assert seen["append"] == "InvalidConfigurationException: Can't APPEND to key metrics because its type is not LIST."
    assert seen["subtract"] == "InvalidConfigurationException: Can't SUBTRACT to key match because its type is not LIST."
    interval = "InvalidRequestException: Invalid value {} for interval.ms, interval must be between 100 and 3600000 (1 hour)"
    illegal = "InvalidConfigurationException: Illegal client matching pattern: "
    assert seen["refusals"] == [
        interval.format(99),
        interval.format(3600001),
        "InvalidConfigurationException: Invalid value soon for configuration interval.ms: Not a number of type INT",
        "InvalidRequestException: Unknown client metrics configuration: metric",
        illegal + "client_id",
        illegal + "client_id=a=b",
        illegal + "host=.*",
        illegal + "client_id=[",
        "InvalidConfigurationException: Can't APPEND to key interval.ms because its type is not LIST.",
        illegal + "client_id=(",
        "InvalidRequestException: Subscription name can't be empty",
    ]
    # A refused change (the last one also set a good interval) changes nothing.
    assert seen["after refusals"] == {"listed": True, **created}
    assert seen["describe empty name"] == "InvalidRequestException"
    assert seen["entry"] == "DYNAMIC_CLIENT_METRICS_CONFIG false false 0 INT null"
    assert seen["keys"] == "3"
    assert seen["kept"] == "ok"
    assert seen["delete"] == "ok"
    assert seen["deleted"] == {"listed": False, **defaults}
    assert seen["delete again"] == "ok"

    broker.kill()
    broker.start()
    completed = subprocess.run(
        ["java", "-cp", classpath, str(JAVA_DIR / "JavaClient.java"), "client-metrics-kept", broker.bootstrap,
         name + "-kept"],
        capture_output=True, text=True, timeout=180,
    )
    assert completed.returncode == 0, completed.stderr
    kept = json.loads(completed.stdout.strip().splitlines()[-1])
    assert kept == {"listed": True, "interval.ms": "60000", "match": "", "metrics": "*"}


def test_java_admin_sees_elr_and_min_insync_replicas_as_kafka_keeps_them(classpath, broker, topic):
    """`kafka-features` and `kafka-configs --entity-type brokers` on
    `eligible.leader.replicas.version` (KIP-966) and `min.insync.replicas`:
    the same program run against Kafka 4.1.1 printed the same (its brokers
    take config changes a moment late, which the program waits out). ELR is
    on from the first start, with the cluster-level value Kafka writes when
    it formats; while it is on that value cannot be removed and no broker
    may have its own; off, both are allowed; on again, the cluster-level
    value comes back and the broker's goes. Both survive a kill -9."""
    seen = run_java(classpath, "elr", broker, topic)
    refused_broker = "InvalidConfigurationException: Broker-level min.insync.replicas cannot be altered while ELR is enabled."
    cluster_default = "DYNAMIC_DEFAULT_BROKER_CONFIG"
    first = f"1 {cluster_default}"
    assert seen["features"] == {"finalized": 1, "supported": "0-1", "cluster": first}
    assert seen["topic"] == first and seen["broker"] == first
    assert seen["delete cluster"] == (
        "InvalidConfigurationException: Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    assert seen["set broker"] == refused_broker
    assert seen["delete broker"] == refused_broker
    assert seen["set cluster"] == "ok"
    assert seen["cluster after set"] == f"2 {cluster_default}"
    assert seen["downgrade"] == "ok"
    assert seen["after downgrade"] == {"finalized": 0, "supported": "0-1", "cluster": f"2 {cluster_default}"}
    assert seen["set broker when off"] == "ok"
    assert seen["broker when off"] == "3 DYNAMIC_BROKER_CONFIG"
    assert seen["delete cluster when off"] == "ok"
    assert seen["cluster when off"] == "none"
    assert seen["upgrade"] == "ok"
    assert seen["cluster after upgrade"] == f"1 {cluster_default}"
    assert seen["broker after upgrade"] == f"1 {cluster_default}"
    assert seen["set cluster again"] == "ok"
    assert seen["partitions"] == "[] [],[] []"

    broker.kill()
    broker.start()
    completed = subprocess.run(
        ["java", "-cp", classpath, str(JAVA_DIR / "JavaClient.java"), "elr-kept", broker.bootstrap, topic + "-kept"],
        capture_output=True, text=True, timeout=180,
    )
    assert completed.returncode == 0, completed.stderr
    kept = json.loads(completed.stdout.strip().splitlines()[-1])
    assert kept == {"finalized": 1, "supported": "0-1", "cluster": f"2 {cluster_default}"}


def test_java_admin_reads_and_changes_the_broker_log_levels(classpath, broker, topic):
    """`kafka-configs --entity-type broker-loggers` through the Java admin:
    the answers are Kafka 4.1.1's (run with its logger names), and the
    levels really change what the broker logs."""
    import time
    from confluent_kafka.admin import AdminClient

    def debug_lines():
        return broker.log_path.read_text(errors="replace").count(
            "DEBUG ringbroker::server::connection: connection closed")

    before = debug_lines()
    seen = run_java(classpath, "broker-loggers", broker, topic)
    assert seen["refusals"] == [
        "InvalidConfigurationException: Cannot set the log level of ringbroker::server::connection to "
        "debug as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN",
        # Kafka has this one; each broker lists its own loggers.
        "InvalidConfigurationException: Logger kafka.server.KafkaApis does not exist!",
        "InvalidConfigurationException: Logger no.such.logger does not exist!",
        "InvalidRequestException: APPEND operation is not allowed for the BROKER_LOGGER resource",
        "InvalidRequestException: Removing the log level of the root logger is not allowed",
    ]
    assert seen["root"] == "INFO DYNAMIC_BROKER_LOGGER_CONFIG false 0"
    assert seen["many"] == "true"
    assert seen["after refusals"] == "INFO"  # a refused resource changes nothing
    assert seen["validate only"] == "ok INFO"
    # A logger without its own level logs at its parent's (log4j's
    # hierarchy; Kafka's listed loggers have no parents among them).
    assert seen["parent"] == "ok FATAL FATAL INFO"
    assert seen["set"] == "ok DEBUG"
    assert seen["deleted"] == "ok INFO"
    # While DEBUG was set, the second admin client's connections were
    # logged as they closed; after the delete, a client's are not.
    after = debug_lines()
    assert after > before
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.list_topics(timeout=10)
    del admin
    time.sleep(1)
    assert debug_lines() == after


def test_java_copier_with_a_group_member_copies_exactly_once(classpath, broker, topic):
    seen = run_java(classpath, "copier", broker, topic)
    assert seen["aborts"] > 0
    assert seen["copied"] == 200
    assert seen["committed_offsets"] == 200
    assert seen["read_committed"] == 200
    assert seen["read_committed_distinct"] == 200


def test_java_admin_deletes_records_adds_partitions_alters_configs_and_describes(classpath, broker, topic):
    seen = run_java(classpath, "admin", broker, topic)
    assert seen["low_watermark"] == 12
    assert seen["earliest"] == 12
    assert seen["beyond"] == "OffsetOutOfRangeException"
    assert seen["partitions"] == 4
    assert seen["retention_ms"] == "86400000"
    assert seen["read"] == ",".join(f"{i}:v{i}" for i in range(12, 20))
    assert seen["log_dirs"] == 1
    # 20 records in small batches, none deleted (one segment).
    assert 0 < seen["size"] < 10000
    # describeTopics two partitions at a time (DescribeTopicPartitions and
    # its cursor), electLeaders and describeCluster as Kafka 4.1.1 answers
    # them on one node (node id 0 here).
    assert seen["paged"] == "0@0,1@0,2@0,3@0"
    assert seen["election"] == "ElectionNotNeededException"
    assert seen["controller_is_node"] is True
    assert seen["cluster_operations"] == 7
    # kafka-reassign-partitions: onto the node itself, onto a broker that
    # does not exist, a cancel with nothing in progress; none ongoing.
    assert seen["reassignments"] == "done,InvalidReplicaAssignmentException,NoReassignmentInProgressException"
    assert seen["ongoing"] == 0


def test_java_consumer_validates_a_position_with_a_leader_epoch(classpath, broker, topic):
    # Answers of Kafka 4.1.1 to the same program: truncation found at the
    # end of epoch 0 (offset 5), and records read on from offset 3.
    seen = run_java(classpath, "validate", broker, topic)
    assert seen == {"truncation": "5@0", "read": "3:v3@0,4:v4@0"}


def test_java_consumer_resumes_where_a_truncated_log_diverges_after_a_restart(classpath, tmp_path):
    # Kafka's partitions move up two leader epochs when their node comes
    # back (its controller fences the old incarnation and elects the new):
    # a consumer whose committed offset carries an older epoch validates it
    # (OffsetForLeaderEpoch) and, past where that epoch now ends, resumes
    # there. Here the log loses its tail while the broker is down (cut
    # after offset 49, as a crash losing unsynced writes would): the group
    # committed 100 at epoch 0; 30 records written after the restart are
    # 50..79 at epoch 2, and the group reads exactly those. (Were the epoch
    # the same, epoch 0 would end at 80 and the group would skip them.)
    # Kafka 4.1.1, its segment cut the same way after kill -9, answered
    # the same: epoch 2, and the group read 50@2..79@2.
    broker = Broker(tmp_path / "broker")
    broker.start()
    try:
        topic = f"truncated-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})

        def write(prefix, count, batch):
            for start in range(0, count, batch):
                for i in range(start, start + batch):
                    producer.produce(topic, value=f"{prefix}-{i}")
                producer.flush()

        def resume(count):
            return run_json_program(["java", "-cp", classpath, JAVA_DIR / "JavaClient.java", "resume",
                                     broker.bootstrap, topic], env={"JAVA_CLIENT_COUNT": str(count)})["read"]

        write("old", 100, 10)
        assert resume(100) == ",".join(f"{offset}@0" for offset in range(100))
        broker.kill()
        segment = sorted((broker.data_dir / f"{topic}-0").glob("*.log"))[-1]
        data = segment.read_bytes()
        cut = 0
        while cut + 12 <= len(data):
            base, length = struct.unpack(">qi", data[cut:cut + 12])
            if length <= 0 or base >= 50:
                break
            cut += 12 + length
        with open(segment, "r+b") as file:
            file.truncate(cut)
        broker.start()
        write("new", 30, 30)
        assert resume(30) == ",".join(f"{offset}@2" for offset in range(50, 80))
        producer.flush()
    finally:
        broker.stop()
        broker.kill()
