//! Goal: DescribeCluster (v0-2), ElectLeaders (v0-2),
//! DescribeTopicPartitions (v0), AlterPartitionReassignments (v0-1) and
//! ListPartitionReassignments (v0) answer as Kafka 4.1.1 answered the same
//! requests (recorded against it, single KRaft node):
//! - DescribeCluster: the node as broker and controller, never fenced; the
//!   cluster's authorized operations (8096) only when asked; asking a broker
//!   for controllers is MISMATCHED_ENDPOINT_TYPE, any other endpoint type
//!   UNSUPPORTED_ENDPOINT_TYPE, both with no cluster id and controller -1.
//! - ElectLeaders: every existing partition ELECTION_NOT_NEEDED (preferred
//!   and unclean), unknown topics and partitions UNKNOWN_TOPIC_OR_PARTITION,
//!   in request order with repeats; an unknown election type INVALID_REQUEST
//!   for the request and each partition; all partitions (null): every topic
//!   with no partitions.
//! - DescribeTopicPartitions: topics sorted and merged, every topic when
//!   none is named, the partition limit (at least 1) and the cursor (where
//!   it starts, where the next answer starts, its refusals).
//! - AlterPartitionReassignments: onto the node itself is done at once; an
//!   empty list, another broker or one named twice INVALID_REPLICA_ASSIGNMENT
//!   with Kafka's messages; a cancel NO_REASSIGNMENT_IN_PROGRESS; unknown
//!   topics and partitions UNKNOWN_TOPIC_OR_PARTITION. None is listed as
//!   ongoing.
//! - DescribeAcls, CreateAcls, DeleteAcls (v1-3): SECURITY_DISABLED with
//!   Kafka's messages, as a Kafka broker without an authorizer answers.
//! - SaslHandshake (v0-1): ILLEGAL_SASL_STATE with no mechanisms, and
//!   SaslAuthenticate (v0-2) ILLEGAL_SASL_STATE with Kafka's message, the
//!   connection staying open, as on a PLAINTEXT listener.
//!
//! - Delegation tokens (Create v1-3, Describe v1-3, Renew and Expire v1-2)
//!   on a PLAINTEXT listener: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, the
//!   owner (and from v3 the requester) User:ANONYMOUS, timestamps -1.
//! - AlterReplicaLogDirs (v1-2) to a path that is not the log directory:
//!   LOG_DIR_NOT_FOUND for each partition.
//!
//! Method: hand-built requests (kafka-protocol's types) on a broker with two
//! topics of 3 and 2 partitions.

mod common;

use std::time::Duration;

use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ApiKey, BrokerId,
    CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse, DescribeClusterRequest,
    DescribeClusterResponse, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
    ElectLeadersRequest, ElectLeadersResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse, SaslAuthenticateResponse, SaslHandshakeResponse, TopicName,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, CreateDelegationTokenRequest,
    CreateDelegationTokenResponse, DescribeDelegationTokenRequest, DescribeDelegationTokenResponse,
    ExpireDelegationTokenRequest, ExpireDelegationTokenResponse, RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
};
use kafka_protocol::protocol::StrBytes;

use common::kafka::create_topic;
use common::wire::{
    create_read_acls, delete_every_acl, describe_every_acl, encode_request,
    sasl_plain_authenticate, sasl_plain_handshake, Outcome, RawClient,
};
use common::{with_timeout, Broker, BrokerOptions};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const INVALID_REQUEST: i16 = 42;
const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
const ILLEGAL_SASL_STATE: i16 = 34;
const SECURITY_DISABLED: i16 = 54;
const LOG_DIR_NOT_FOUND: i16 = 57;
const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: i16 = 64;
const ELECTION_NOT_NEEDED: i16 = 84;
const NO_REASSIGNMENT_IN_PROGRESS: i16 = 85;
const MISMATCHED_ENDPOINT_TYPE: i16 = 114;
const UNSUPPORTED_ENDPOINT_TYPE: i16 = 115;
const OMITTED: i32 = i32::MIN;
const TOPIC_OPERATIONS: i32 = 3576;
const NOT_NEEDED: &str = "Leader election not needed for topic partition.";

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

fn describe_cluster(
    bootstrap: &str,
    version: i16,
    operations: bool,
    endpoint_type: i8,
) -> DescribeClusterResponse {
    let mut request = DescribeClusterRequest::default();
    request.include_cluster_authorized_operations = operations;
    request.endpoint_type = endpoint_type;
    request.include_fenced_brokers = version >= 2;
    RawClient::connect(bootstrap).request(ApiKey::DescribeCluster, version, &request)
}

/// (topic, [(partition, error, message)]) of each topic answered.
type Elected = Vec<(String, Vec<(i32, i16, String)>)>;

fn elect(
    bootstrap: &str,
    version: i16,
    election_type: i8,
    topics: Option<&[(&str, &[i32])]>,
) -> (i16, Elected) {
    let mut request = ElectLeadersRequest::default();
    request.election_type = election_type;
    request.timeout_ms = 10_000;
    request.topic_partitions = topics.map(|topics| {
        topics
            .iter()
            .map(|(topic, partitions)| {
                let mut wanted = TopicPartitions::default();
                wanted.topic = name(topic);
                wanted.partitions = partitions.to_vec();
                wanted
            })
            .collect()
    });
    let response: ElectLeadersResponse =
        RawClient::connect(bootstrap).request(ApiKey::ElectLeaders, version, &request);
    let results = response
        .replica_election_results
        .iter()
        .map(|topic| {
            let partitions = topic
                .partition_result
                .iter()
                .map(|p| {
                    (
                        p.partition_id,
                        p.error_code,
                        p.error_message.as_deref().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            (topic.topic.to_string(), partitions)
        })
        .collect();
    (response.error_code, results)
}

/// (error, name, has an id, internal, operations, partitions) per topic,
/// and the next cursor.
type Described = (
    Vec<(i16, String, bool, bool, i32, Vec<i32>)>,
    Option<(String, i32)>,
);

fn describe_topics(
    bootstrap: &str,
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> Described {
    let mut request = DescribeTopicPartitionsRequest::default();
    request.topics = topics
        .iter()
        .map(|topic| {
            let mut wanted = TopicRequest::default();
            wanted.name = name(topic);
            wanted
        })
        .collect();
    request.response_partition_limit = limit;
    request.cursor = cursor.map(|(topic, partition)| {
        let mut cursor = Cursor::default();
        cursor.topic_name = name(topic);
        cursor.partition_index = partition;
        cursor
    });
    let response: DescribeTopicPartitionsResponse =
        RawClient::connect(bootstrap).request(ApiKey::DescribeTopicPartitions, 0, &request);
    let topics = response
        .topics
        .iter()
        .map(|t| {
            for p in &t.partitions {
                assert_eq!(p.error_code, 0);
                assert_eq!(p.leader_epoch, 0);
                assert_eq!(p.replica_nodes, [p.leader_id]);
                assert_eq!(p.isr_nodes, [p.leader_id]);
                assert_eq!(p.eligible_leader_replicas.as_deref(), Some(&[][..]));
                assert_eq!(p.last_known_elr.as_deref(), Some(&[][..]));
                assert!(p.offline_replicas.is_empty());
            }
            (
                t.error_code,
                t.name.as_deref().map(|n| n.to_string()).unwrap_or_default(),
                !t.topic_id.is_nil(),
                t.is_internal,
                t.topic_authorized_operations,
                t.partitions.iter().map(|p| p.partition_index).collect(),
            )
        })
        .collect();
    let next = response
        .next_cursor
        .map(|c| (c.topic_name.to_string(), c.partition_index));
    (topics, next)
}

/// A partition and the replicas it should move to (None: cancel).
type Move<'a> = (i32, Option<&'a [i32]>);

/// (topic, partition, error, message) of each partition answered.
type Reassigned = Vec<(String, i32, i16, Option<String>)>;

fn reassign(
    bootstrap: &str,
    version: i16,
    topics: &[(&str, &[Move])],
) -> (i16, Option<String>, Reassigned) {
    let mut request = AlterPartitionReassignmentsRequest::default();
    request.timeout_ms = 10_000;
    // v0 has no such field (its value is the default, true); v1's is
    // echoed back.
    request.allow_replication_factor_change = version == 0;
    request.topics = topics
        .iter()
        .map(|(topic, partitions)| {
            let mut wanted = ReassignableTopic::default();
            wanted.name = name(topic);
            wanted.partitions = partitions
                .iter()
                .map(|(partition, replicas)| {
                    let mut p = ReassignablePartition::default();
                    p.partition_index = *partition;
                    p.replicas = replicas.map(|r| r.iter().map(|&b| BrokerId(b)).collect());
                    p
                })
                .collect();
            wanted
        })
        .collect();
    let response: AlterPartitionReassignmentsResponse = RawClient::connect(bootstrap).request(
        ApiKey::AlterPartitionReassignments,
        version,
        &request,
    );
    assert_eq!(response.allow_replication_factor_change, version == 0);
    let answers = response
        .responses
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(|p| {
                (
                    topic.name.to_string(),
                    p.partition_index,
                    p.error_code,
                    p.error_message.as_deref().map(str::to_string),
                )
            })
        })
        .collect();
    (
        response.error_code,
        response.error_message.as_deref().map(str::to_string),
        answers,
    )
}

fn ongoing_reassignments(bootstrap: &str, topics: Option<&[(&str, &[i32])]>) -> usize {
    let mut request = ListPartitionReassignmentsRequest::default();
    request.timeout_ms = 10_000;
    request.topics = topics.map(|topics| {
        topics
            .iter()
            .map(|(topic, partitions)| {
                let mut wanted = ListPartitionReassignmentsTopics::default();
                wanted.name = name(topic);
                wanted.partition_indexes = partitions.to_vec();
                wanted
            })
            .collect()
    });
    let response: ListPartitionReassignmentsResponse =
        RawClient::connect(bootstrap).request(ApiKey::ListPartitionReassignments, 0, &request);
    assert_eq!((response.error_code, response.error_message), (0, None));
    response.topics.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_admin_apis_answer_like_kafka() {
    let broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    with_timeout(Duration::from_secs(120), async {
        create_topic(&bootstrap, "dtpa", 3).await;
        create_topic(&bootstrap, "dtpb", 2).await;

        // DescribeCluster.
        for version in 0..=2 {
            let described = describe_cluster(&bootstrap, version, false, 1);
            assert_eq!(described.error_code, 0, "v{version}");
            assert_eq!(described.brokers.len(), 1, "v{version}");
            let node = &described.brokers[0];
            assert_eq!(described.controller_id, node.broker_id);
            assert_eq!((node.host.as_str(), node.port), ("127.0.0.1", i32::from(broker.port())));
            assert!(!node.is_fenced);
            assert!(!described.cluster_id.is_empty());
            assert_eq!(described.cluster_authorized_operations, OMITTED);
        }
        assert_eq!(
            describe_cluster(&bootstrap, 0, true, 1).cluster_authorized_operations,
            8096
        );
        let controllers = describe_cluster(&bootstrap, 1, false, 2);
        assert_eq!(
            (
                controllers.error_code,
                controllers.error_message.as_deref(),
                controllers.cluster_id.as_str(),
                controllers.controller_id.0,
                controllers.brokers.len()
            ),
            (
                MISMATCHED_ENDPOINT_TYPE,
                Some("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
                "",
                -1,
                0
            )
        );
        for endpoint_type in [0, 9] {
            let refused = describe_cluster(&bootstrap, 1, false, endpoint_type);
            assert_eq!(refused.error_code, UNSUPPORTED_ENDPOINT_TYPE);
            assert_eq!(
                refused.error_message.as_deref(),
                Some(format!("Unsupported endpoint type {endpoint_type}").as_str())
            );
        }

        // ElectLeaders.
        let not_needed = |p: i32| (p, ELECTION_NOT_NEEDED, NOT_NEEDED.to_string());
        let kafka: Elected = vec![
            (
                "dtpa".into(),
                vec![
                    not_needed(0),
                    not_needed(1),
                    (9, UNKNOWN_TOPIC_OR_PARTITION, "No such partition as dtpa-9".into()),
                    not_needed(0),
                ],
            ),
            (
                "nosuch".into(),
                vec![(0, UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nosuch".into())],
            ),
            ("dtpb".into(), vec![not_needed(1)]),
            ("dtpb".into(), vec![]),
        ];
        let asked: &[(&str, &[i32])] = &[
            ("dtpa", &[0, 1, 9, 0]),
            ("nosuch", &[0]),
            ("dtpb", &[1]),
            ("dtpb", &[]),
        ];
        for version in 0..=2 {
            // v0 has no election type: preferred.
            for election_type in if version == 0 { &[0][..] } else { &[0, 1] } {
                let election_type = *election_type;
                assert_eq!(
                    elect(&bootstrap, version, election_type, Some(asked)),
                    (0, kafka.clone()),
                    "v{version} type {election_type}"
                );
            }
        }
        let unknown = |p: i32| (p, INVALID_REQUEST, "Unknown election type 5".to_string());
        assert_eq!(
            elect(&bootstrap, 1, 5, Some(&[("nosuch", &[0]), ("dtpa", &[9, 0])])),
            (
                INVALID_REQUEST,
                vec![
                    ("nosuch".into(), vec![unknown(0)]),
                    ("dtpa".into(), vec![unknown(9), unknown(0)])
                ]
            )
        );
        assert_eq!(elect(&bootstrap, 1, 5, None), (INVALID_REQUEST, vec![]));
        // A small request whose answer would repeat a 200 KiB unknown topic
        // name in each of 1000 partitions' messages (about 200 MB): the
        // connection is closed instead, and the broker keeps serving.
        let long_name = "x".repeat(200 << 10);
        let mut wanted = TopicPartitions::default();
        wanted.topic = name(&long_name);
        wanted.partitions = (0..1000).collect();
        let mut huge = ElectLeadersRequest::default();
        huge.timeout_ms = 10_000;
        huge.topic_partitions = Some(vec![wanted]);
        let mut client = RawClient::connect(&bootstrap);
        client
            .write_raw(&encode_request(ApiKey::ElectLeaders, 2, 1, &huge))
            .expect("send ElectLeaders");
        assert!(
            matches!(
                client.outcome_within(Duration::from_secs(10)),
                Outcome::Closed { ref bytes_before_close } if bytes_before_close.is_empty()
            ),
            "an answer beyond the response bound closes the connection"
        );
        let (error, every) = elect(&bootstrap, 2, 0, None);
        assert_eq!(error, 0);
        let mut topics: Vec<_> = every.iter().map(|(t, p)| (t.as_str(), p.len())).collect();
        topics.sort();
        assert_eq!(topics, [("__consumer_offsets", 0), ("dtpa", 0), ("dtpb", 0)]);

        // DescribeTopicPartitions.
        let found = |topic: &str, partitions: &[i32]| {
            (0, topic.to_string(), true, false, TOPIC_OPERATIONS, partitions.to_vec())
        };
        let missing = |topic: &str, error: i16, operations: i32| {
            (error, topic.to_string(), false, false, operations, vec![])
        };
        let d = |topics: &[&str], limit: i32, cursor: Option<(&str, i32)>| {
            describe_topics(&bootstrap, topics, limit, cursor)
        };
        let cursor = |topic: &str, partition: i32| Some((topic.to_string(), partition));
        assert_eq!(d(&["dtpa"], 2000, None), (vec![found("dtpa", &[0, 1, 2])], None));
        assert_eq!(
            d(&["dtpb", "dtpa", "nosuch", "dtpa", "bad name!"], 2000, None),
            (
                vec![
                    missing("bad name!", INVALID_TOPIC_EXCEPTION, TOPIC_OPERATIONS),
                    found("dtpa", &[0, 1, 2]),
                    found("dtpb", &[0, 1]),
                    missing("nosuch", UNKNOWN_TOPIC_OR_PARTITION, TOPIC_OPERATIONS),
                ],
                None
            )
        );
        assert_eq!(
            d(&["dtpa", "dtpb"], 2, None),
            (vec![found("dtpa", &[0, 1])], cursor("dtpa", 2))
        );
        assert_eq!(
            d(&["dtpa", "dtpb"], 2, Some(("dtpa", 2))),
            (vec![found("dtpa", &[2]), found("dtpb", &[0])], cursor("dtpb", 1))
        );
        assert_eq!(
            d(&["dtpa", "dtpb"], 10, Some(("dtpb", 1))),
            (vec![found("dtpb", &[1])], None)
        );
        assert_eq!(
            d(&["dtpa", "dtpb"], 10, Some(("dtpa", 7))),
            (vec![found("dtpa", &[]), found("dtpb", &[0, 1])], None)
        );
        // A refused cursor: every topic asked for, in request order.
        for bad in [("zzz", 0), ("dtpa", -1)] {
            assert_eq!(
                d(&["dtpb", "dtpa", "dtpb"], 10, Some(bad)),
                (
                    vec![
                        missing("dtpb", INVALID_REQUEST, OMITTED),
                        missing("dtpa", INVALID_REQUEST, OMITTED),
                        missing("dtpb", INVALID_REQUEST, OMITTED)
                    ],
                    None
                ),
                "cursor {bad:?}"
            );
        }
        // An internal topic not created yet is still internal.
        assert_eq!(
            d(&["__transaction_state"], 10, None),
            (
                vec![(
                    UNKNOWN_TOPIC_OR_PARTITION,
                    "__transaction_state".to_string(),
                    false,
                    true,
                    TOPIC_OPERATIONS,
                    vec![]
                )],
                None
            )
        );
        for limit in [0, -1] {
            assert_eq!(
                d(&["dtpa"], limit, None),
                (vec![found("dtpa", &[0])], cursor("dtpa", 1))
            );
        }
        assert_eq!(
            d(&["dtpa", "dtpb"], 3, None),
            (vec![found("dtpa", &[0, 1, 2])], cursor("dtpb", 0))
        );
        assert_eq!(
            d(&["dtpa", "dtpb"], 5, None),
            (vec![found("dtpa", &[0, 1, 2]), found("dtpb", &[0, 1])], None)
        );
        assert_eq!(
            d(&["dtpa", "dtpaa", "dtpb"], 4, None),
            (
                vec![
                    found("dtpa", &[0, 1, 2]),
                    missing("dtpaa", UNKNOWN_TOPIC_OR_PARTITION, TOPIC_OPERATIONS),
                    found("dtpb", &[0])
                ],
                cursor("dtpb", 1)
            )
        );
        assert_eq!(
            d(&["dtpa", "dtpaa", "dtpb"], 3, None),
            (vec![found("dtpa", &[0, 1, 2])], cursor("dtpaa", 0))
        );
        // Every topic: from the cursor's topic on, or from the next one.
        assert_eq!(
            d(&[], 3, Some(("dtpa", 1))),
            (vec![found("dtpa", &[1, 2]), found("dtpb", &[0])], cursor("dtpb", 1))
        );
        assert_eq!(
            d(&[], 3, Some(("dtpaa", 0))),
            (vec![found("dtpb", &[0, 1])], None)
        );
        assert_eq!(d(&[], 3, Some(("dtpa", -1))), (vec![], None));
        let offsets = (
            0,
            "__consumer_offsets".to_string(),
            true,
            true,
            TOPIC_OPERATIONS,
            (0..50).collect(),
        );
        assert_eq!(
            d(&[], 2000, None),
            (
                vec![offsets, found("dtpa", &[0, 1, 2]), found("dtpb", &[0, 1])],
                None
            )
        );

        // AlterPartitionReassignments and ListPartitionReassignments.
        let node = describe_cluster(&bootstrap, 0, false, 1).brokers[0].broker_id.0;
        let other = node + 5;
        let refused = |p: i32, error: i16, message: String| ("dtpa".to_string(), p, error, Some(message));
        let unregistered = |broker: i32| {
            format!("The manual partition assignment includes broker {broker}, but no such broker is registered.")
        };
        let twice = format!("The manual partition assignment includes the broker {node} more than once.");
        for version in 0..=1 {
            assert_eq!(
                reassign(
                    &bootstrap,
                    version,
                    &[
                        (
                            "dtpa",
                            &[
                                (0, Some(&[node][..])),
                                (0, Some(&[other][..])),
                                (0, None),
                                (0, Some(&[node, node][..])),
                                (0, Some(&[][..])),
                                (0, Some(&[node, other][..])),
                                (0, Some(&[-1][..])),
                                (0, Some(&[other, node, node][..])),
                                (9, Some(&[node][..])),
                                (-1, Some(&[node][..])),
                            ]
                        ),
                        ("nosuch", &[(0, Some(&[node][..]))]),
                    ]
                ),
                (
                    0,
                    None,
                    vec![
                        ("dtpa".to_string(), 0, 0, None),
                        refused(0, INVALID_REPLICA_ASSIGNMENT, unregistered(other)),
                        ("dtpa".to_string(), 0, NO_REASSIGNMENT_IN_PROGRESS, None),
                        refused(0, INVALID_REPLICA_ASSIGNMENT, twice.clone()),
                        refused(
                            0,
                            INVALID_REPLICA_ASSIGNMENT,
                            "The manual partition assignment includes an empty replica list.".into()
                        ),
                        refused(0, INVALID_REPLICA_ASSIGNMENT, unregistered(other)),
                        refused(0, INVALID_REPLICA_ASSIGNMENT, unregistered(-1)),
                        // Brokers are checked in ascending order.
                        refused(0, INVALID_REPLICA_ASSIGNMENT, twice.clone()),
                        refused(
                            9,
                            UNKNOWN_TOPIC_OR_PARTITION,
                            "Unable to find partition dtpa:9.".into()
                        ),
                        refused(
                            -1,
                            UNKNOWN_TOPIC_OR_PARTITION,
                            "Unable to find partition dtpa:-1.".into()
                        ),
                        (
                            "nosuch".to_string(),
                            0,
                            UNKNOWN_TOPIC_OR_PARTITION,
                            Some("Unable to find a topic named nosuch.".into())
                        ),
                    ]
                ),
                "v{version}"
            );
        }
        assert_eq!(reassign(&bootstrap, 0, &[]), (0, Some(String::new()), vec![]));

        // ACLs, without an authorizer.
        for version in 1..=3 {
            let mut client = RawClient::connect(&bootstrap);
            let described: DescribeAclsResponse =
                client.request(ApiKey::DescribeAcls, version, &describe_every_acl());
            assert_eq!(
                (
                    described.error_code,
                    described.error_message.as_deref(),
                    described.resources.len()
                ),
                (
                    SECURITY_DISABLED,
                    Some("No Authorizer is configured on the broker"),
                    0
                ),
                "v{version}"
            );
            let create = create_read_acls("dtpa", 2);
            let created: CreateAclsResponse = client.request(ApiKey::CreateAcls, version, &create);
            let refusals: Vec<_> = created
                .results
                .iter()
                .map(|r| (r.error_code, r.error_message.as_deref().map(str::to_string)))
                .collect();
            let refused = (SECURITY_DISABLED, Some("No Authorizer is configured.".to_string()));
            assert_eq!(refusals, [refused.clone(), refused.clone()], "v{version}");
            let deleted: DeleteAclsResponse =
                client.request(ApiKey::DeleteAcls, version, &delete_every_acl());
            let refusals: Vec<_> = deleted
                .filter_results
                .iter()
                .map(|r| {
                    assert!(r.matching_acls.is_empty());
                    (r.error_code, r.error_message.as_deref().map(str::to_string))
                })
                .collect();
            assert_eq!(refusals, [refused], "v{version}");
        }

        // SASL, on a listener without it.
        for version in 0..=1 {
            let answer: SaslHandshakeResponse = RawClient::connect(&bootstrap).request(
                ApiKey::SaslHandshake,
                version,
                &sasl_plain_handshake(),
            );
            assert_eq!((answer.error_code, answer.mechanisms.len()), (ILLEGAL_SASL_STATE, 0));
        }
        let authenticate = sasl_plain_authenticate();
        let mut client = RawClient::connect(&bootstrap);
        for version in 0..=2 {
            let answer: SaslAuthenticateResponse =
                client.request(ApiKey::SaslAuthenticate, version, &authenticate);
            assert_eq!(
                (
                    answer.error_code,
                    answer.error_message.as_deref(),
                    answer.auth_bytes.len(),
                    answer.session_lifetime_ms
                ),
                (
                    ILLEGAL_SASL_STATE,
                    Some("SaslAuthenticate request received after successful authentication"),
                    0,
                    0
                ),
                "SaslAuthenticate v{version}"
            );
        }
        assert_eq!(ongoing_reassignments(&bootstrap, None), 0);
        assert_eq!(
            ongoing_reassignments(&bootstrap, Some(&[("dtpa", &[0, 9]), ("nosuch", &[0])])),
            0
        );

        // Delegation tokens on a PLAINTEXT listener, at every version.
        let mut client = RawClient::connect(&bootstrap);
        for version in 1..=3 {
            let mut create = CreateDelegationTokenRequest::default();
            create.max_lifetime_ms = -1;
            let created: CreateDelegationTokenResponse =
                client.request(ApiKey::CreateDelegationToken, version, &create);
            assert_eq!(
                (
                    created.error_code,
                    created.principal_type.as_str(),
                    created.principal_name.as_str(),
                    created.token_requester_principal_name.as_str(),
                    created.expiry_timestamp_ms,
                ),
                (
                    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                    "User",
                    "ANONYMOUS",
                    if version >= 3 { "ANONYMOUS" } else { "" },
                    -1
                ),
                "CreateDelegationToken v{version}"
            );
            let described: DescribeDelegationTokenResponse = client.request(
                ApiKey::DescribeDelegationToken,
                version,
                &DescribeDelegationTokenRequest::default(),
            );
            assert_eq!(
                (described.error_code, described.tokens.len()),
                (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, 0),
                "DescribeDelegationToken v{version}"
            );
        }
        for version in 1..=2 {
            let renewed: RenewDelegationTokenResponse = client.request(
                ApiKey::RenewDelegationToken,
                version,
                &RenewDelegationTokenRequest::default(),
            );
            let expired: ExpireDelegationTokenResponse = client.request(
                ApiKey::ExpireDelegationToken,
                version,
                &ExpireDelegationTokenRequest::default(),
            );
            assert_eq!(
                [
                    (renewed.error_code, renewed.expiry_timestamp_ms),
                    (expired.error_code, expired.expiry_timestamp_ms)
                ],
                [(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1); 2],
                "Renew/ExpireDelegationToken v{version}"
            );
        }

        // AlterReplicaLogDirs v1-2: only the one log directory is known.
        for version in 1..=2 {
            let mut topic = AlterReplicaLogDirTopic::default();
            topic.name = name("dtpa");
            topic.partitions = vec![0, 7];
            let mut dir = AlterReplicaLogDir::default();
            dir.path = StrBytes::from_static_str("/nonexistent");
            dir.topics = vec![topic];
            let mut request = AlterReplicaLogDirsRequest::default();
            request.dirs = vec![dir];
            let answer: AlterReplicaLogDirsResponse =
                client.request(ApiKey::AlterReplicaLogDirs, version, &request);
            let seen: Vec<(String, i32, i16)> = answer
                .results
                .iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| (t.topic_name.to_string(), p.partition_index, p.error_code))
                })
                .collect();
            assert_eq!(
                seen,
                vec![
                    ("dtpa".to_string(), 0, LOG_DIR_NOT_FOUND),
                    ("dtpa".to_string(), 7, LOG_DIR_NOT_FOUND)
                ],
                "AlterReplicaLogDirs v{version}"
            );
        }
    })
    .await;
}
