"""franz-go (kgo and kadm 1.22/1.20, the Go client) against ringbroker.

Goal: what a Go service built on franz-go relies on works as with Kafka.
Idempotent producers (franz-go's default) with every codec write records
that a group consumer reads back exactly once, keys, values, headers and
offsets as acknowledged, and its commits land at the end. Two members of a
group (the classic protocol with the cooperative-sticky balancer, and
KIP-848's server-side assignment) split four partitions two and two, read
everything once, and a later member resumes from their commits; each
protocol's describe answers for the other's groups as Kafka does. A
transactional producer's aborted records stay hidden from read_committed
readers, and a GroupTransactSession copies exactly the committed input.
kadm's topic life cycle (create with configs, config sources, alterations,
partition growth and shrink refusal, DeleteRecords, offsets by time,
cluster metadata, deletion) answers with Kafka's codes.

Method: tests/go/main.go is built once per session (`go build`, modules
from the Go module proxy) and run per mode on a fresh topic; it prints what
it saw as JSON. Every expected value below is what the same program printed
against Apache Kafka 4.1.1 (KRaft, single node). Skipped only where `go` is
not installed.
"""

import pathlib
import shutil
import subprocess

import pytest

from conftest import run_json_program

GO_DIR = pathlib.Path(__file__).resolve().parents[1] / "go"


@pytest.fixture(scope="module")
def franzclient(tmp_path_factory):
    if shutil.which("go") is None:
        pytest.skip("go is needed for the franz-go tests")
    binary = tmp_path_factory.mktemp("go") / "franzclient"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=GO_DIR, check=True, timeout=600)
    return binary


def run(franzclient, mode, broker, topic):
    return run_json_program([franzclient, mode, broker.bootstrap, topic])


def test_franz_go_idempotent_producers_and_a_group_consumer_round_trip_every_codec(franzclient, broker, topic):
    seen = run(franzclient, "produce-consume", broker, topic)
    assert seen == {"acked": 2500, "read": 2500, "distinct": 2500, "mismatched": 0, "committed_at_end": True}


@pytest.mark.parametrize("mode", ["group", "group-848"])
def test_franz_go_group_members_split_partitions_and_resume_from_commits(franzclient, broker, topic, mode):
    seen = run(franzclient, mode, broker, topic)
    classic, consumer = "Stable/2/", "/0/GROUP_ID_NOT_FOUND"
    if mode == "group-848":
        # DescribeGroups does not know a consumer-protocol group and
        # ConsumerGroupDescribe does (Kafka 4.1.1 answered the same).
        classic, consumer = "Dead/0/GROUP_ID_NOT_FOUND", "Stable/2/"
    assert seen == {
        "distinct": 400, "duplicates": 0, "partitions_per_member": [2, 2],
        "described": classic, "described_consumer": consumer,
        "after": 40, "after_first": "400", "extra": 0, "lag": 0,
    }


def test_franz_go_transactions_and_a_group_transact_session_copy_exactly_once(franzclient, broker, topic):
    seen = run(franzclient, "transactions", broker, topic)
    assert seen == {
        "committed": 70, "aborted": 30, "read_committed": 70, "read_committed_aborted": 0,
        # Every record written, aborted ones included.
        "read_uncommitted": 100, "copied": 70,
        # The copier commits the offset after the last record it read; each
        # partition's final commit marker stands between that and the end.
        "copier_offsets_behind_end": [1, 1],
    }


def test_franz_go_admin_walks_a_topic_life_cycle_like_kafka(franzclient, broker, topic):
    seen = run(franzclient, "admin", broker, topic)
    # With its own retention.ms deleted, the topic falls back to the
    # broker's log.retention.ms: -1, set on the command line of the tests'
    # broker (conftest.RETENTION_ARGS), as a static broker config. Kafka
    # 4.1.1 with log.retention.ms=-1 in server.properties answered the same;
    # with none it answers 604800000 from the default.
    assert seen == {
        "create_again": "TOPIC_ALREADY_EXISTS", "create_bad_config": "INVALID_CONFIG",
        "configs_created": {"cleanup.policy": "delete/DEFAULT_CONFIG",
                            "max.message.bytes": "1048588/DEFAULT_CONFIG",
                            "retention.ms": "3600000/DYNAMIC_TOPIC_CONFIG"},
        "configs_altered": {"cleanup.policy": "delete/DEFAULT_CONFIG",
                            "max.message.bytes": "65536/DYNAMIC_TOPIC_CONFIG",
                            "retention.ms": "-1/STATIC_BROKER_CONFIG"},
        "alter_unknown_config": "INVALID_CONFIG", "shrink_partitions": "INVALID_PARTITIONS",
        "start_offsets": [4, 0, 0, 0], "end_offsets": [10, 10, 10, 10], "offsets_after_ts": [5, 5, 5, 5],
        "partitions": 4, "topic_id_set": True, "brokers": 1, "cluster_id_set": True,
        "controller_is_broker": True, "listed": True, "delete": "", "delete_missing": "UNKNOWN_TOPIC_OR_PARTITION",
        "listed_after_delete": False,
    }
