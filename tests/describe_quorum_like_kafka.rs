//! Goal: `kafka-metadata-quorum describe --status/--replication`
//! (DescribeQuorum v0-2) answers as Kafka 4.1.1 answered the same requests
//! on a single KRaft node: this node is the quorum's only voter and its
//! leader, at epoch 1 and one more at each restart, with no observers; the high watermark
//! is the metadata log's and grows when metadata changes (a topic is
//! created); the voter's log end offset is there too, its fetch and
//! caught-up times are "now" from v1 (-1 at v0), and v2 lists the node and
//! its endpoints. Asking for anything but `__cluster_metadata` partition 0
//! (another topic or partition, or more than that one) is
//! UNKNOWN_TOPIC_OR_PARTITION for every partition asked, with Kafka's
//! message; asking for nothing answers nothing.
//!
//! Method: hand-built requests. Run with RINGBROKER_QUORUM_REFERENCE=
//! host:port (a Kafka whose node id is 1) to send them to a Kafka instead.

mod common;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, DescribeQuorumRequest,
    DescribeQuorumResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use common::wire::RawClient;
use common::{unique, Broker, BrokerOptions};

const METADATA: &str = "__cluster_metadata";
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn describe(
    client: &mut RawClient,
    version: i16,
    topics: &[(&str, &[i32])],
) -> DescribeQuorumResponse {
    let mut request = DescribeQuorumRequest::default();
    for (name, partitions) in topics {
        let mut topic = TopicData::default();
        topic.topic_name = TopicName(StrBytes::from_string(name.to_string()));
        for index in *partitions {
            let mut partition = PartitionData::default();
            partition.partition_index = *index;
            topic.partitions.push(partition);
        }
        request.topics.push(topic);
    }
    client.request(ApiKey::DescribeQuorum, version, &request)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// A broker of node id 1 and its bootstrap, or only the bootstrap of the
/// Kafka RINGBROKER_QUORUM_REFERENCE names.
fn broker_or_reference() -> (Option<Broker>, String) {
    match std::env::var("RINGBROKER_QUORUM_REFERENCE") {
        Ok(reference) => (None, reference),
        Err(_) => {
            let broker = Broker::start(BrokerOptions::default().arg("--node-id", 1));
            let bootstrap = broker.bootstrap();
            (Some(broker), bootstrap)
        }
    }
}

#[test]
fn describe_quorum_answers_like_a_single_kafka_node() {
    let (broker, bootstrap) = broker_or_reference();
    let mut client = RawClient::connect(&bootstrap);

    let mut high_watermarks = Vec::new();
    for version in 0..=2 {
        let before = now_ms();
        let response = describe(&mut client, version, &[(METADATA, &[0])]);
        assert_eq!(response.error_code, 0);
        assert_eq!(response.topics.len(), 1);
        assert_eq!(response.topics[0].topic_name.as_str(), METADATA);
        let partition = &response.topics[0].partitions[0];
        assert_eq!((partition.partition_index, partition.error_code), (0, 0));
        assert_eq!(partition.leader_id.0, 1);
        assert!(partition.leader_epoch >= 1);
        assert!(partition.high_watermark > 0);
        assert!(partition.observers.is_empty());
        assert_eq!(partition.current_voters.len(), 1);
        let voter = &partition.current_voters[0];
        assert_eq!(voter.replica_id.0, 1);
        assert!(voter.log_end_offset >= partition.high_watermark);
        if version == 0 {
            assert_eq!(
                (voter.last_fetch_timestamp, voter.last_caught_up_timestamp),
                (-1, -1)
            );
        } else {
            for at in [voter.last_fetch_timestamp, voter.last_caught_up_timestamp] {
                assert!(
                    at >= before - 1_000 && at <= now_ms() + 1_000,
                    "{at} is not now"
                );
            }
        }
        if version == 2 {
            assert_eq!(voter.replica_directory_id, uuid::Uuid::nil());
            assert_eq!(response.nodes.len(), 1);
            assert_eq!(response.nodes[0].node_id.0, 1);
            assert!(!response.nodes[0].listeners.is_empty());
        } else {
            assert!(response.nodes.is_empty());
        }
        high_watermarks.push(partition.high_watermark);
    }

    // Metadata changes move the high watermark.
    let mut create = CreateTopicsRequest::default();
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(StrBytes::from_string(unique("quorum")));
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    create.topics.push(topic);
    create.timeout_ms = 10_000;
    let created: CreateTopicsResponse = client.request(ApiKey::CreateTopics, 5, &create);
    assert_eq!(created.topics[0].error_code, 0);
    let later = describe(&mut client, 2, &[(METADATA, &[0])]);
    assert!(
        later.topics[0].partitions[0].high_watermark > high_watermarks[2],
        "{later:?} after {high_watermarks:?}"
    );

    // Anything else: every partition asked is unknown, no nodes.
    for topics in [
        vec![("foo", &[0][..])],
        vec![(METADATA, &[1][..])],
        vec![(METADATA, &[0, 1][..])],
        vec![(METADATA, &[0][..]), ("foo", &[0][..])],
    ] {
        let response = describe(&mut client, 2, &topics);
        assert_eq!(response.error_code, 0);
        assert!(response.nodes.is_empty());
        let answered: Vec<(String, i32, i16, Option<String>, usize)> = response
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        t.topic_name.to_string(),
                        p.partition_index,
                        p.error_code,
                        p.error_message.as_ref().map(|m| m.to_string()),
                        p.current_voters.len(),
                    )
                })
            })
            .collect();
        let expected: Vec<(String, i32, i16, Option<String>, usize)> = topics
            .iter()
            .flat_map(|(name, partitions)| {
                partitions.iter().map(|p| {
                    (
                        name.to_string(),
                        *p,
                        UNKNOWN_TOPIC_OR_PARTITION,
                        Some("This server does not host this topic-partition.".to_string()),
                        0,
                    )
                })
            })
            .collect();
        assert_eq!(answered, expected, "{topics:?}");
    }
    let none = describe(&mut client, 2, &[]);
    assert_eq!((none.error_code, none.topics.len()), (0, 0));

    // Each start-up elects the voter again, one epoch up (Kafka 4.1.1 went
    // from 3 to 7 over four restarts, clean or kill -9).
    if let Some(mut broker) = broker {
        let epoch = |bootstrap: &str| {
            describe(&mut RawClient::connect(bootstrap), 2, &[(METADATA, &[0])]).topics[0]
                .partitions[0]
                .leader_epoch
        };
        let first = epoch(&bootstrap);
        assert_eq!(first, 1, "the first start-up");
        broker.restart();
        broker.kill9();
        broker.restart();
        assert_eq!(epoch(&broker.bootstrap()), 3);
    }
}

/// Goal: `kafka-metadata-quorum add-controller` / `remove-controller`
/// (AddRaftVoter and RemoveRaftVoter v0, KIP-853), which Kafka 4.1.1
/// offers, answer as it answered the same requests on a static quorum
/// (`kraft.version` 0): a request naming another cluster is
/// INCONSISTENT_CLUSTER_ID, a voter without an id or a directory id
/// INVALID_REQUEST, an add without an endpoint on the default listener
/// INVALID_REQUEST naming the endpoints as Java prints them, and every valid
/// request UNSUPPORTED_VERSION, with Kafka's messages. The quorum is left
/// as it was.
///
/// Method: hand-built requests; with RINGBROKER_QUORUM_REFERENCE the
/// default listener is Kafka's CONTROLLER, here this node's PLAINTEXT.
#[test]
fn raft_voters_are_refused_like_a_static_kafka_quorum() {
    use kafka_protocol::messages::add_raft_voter_request::Listener;
    use kafka_protocol::messages::{
        AddRaftVoterRequest, AddRaftVoterResponse, DescribeClusterRequest, DescribeClusterResponse,
        RemoveRaftVoterRequest, RemoveRaftVoterResponse,
    };
    use uuid::Uuid;

    let (broker, bootstrap) = broker_or_reference();
    let default_listener = if broker.is_none() {
        "CONTROLLER"
    } else {
        "PLAINTEXT"
    };
    let mut client = RawClient::connect(&bootstrap);
    let versions = common::wire::api_versions(&bootstrap);
    for key in [ApiKey::AddRaftVoter, ApiKey::RemoveRaftVoter] {
        assert_eq!(
            common::wire::api_range(&versions, key),
            Some((0, 0)),
            "{key:?}"
        );
    }
    let cluster: DescribeClusterResponse = client.request(
        ApiKey::DescribeCluster,
        0,
        &DescribeClusterRequest::default(),
    );
    let cluster_id = cluster.cluster_id.to_string();

    let directory = Uuid::from_u128(0x7777_0000_0000_0000_0000_0000_0000_0007);
    let endpoint = |name: &str| {
        let mut listener = Listener::default();
        listener.name = StrBytes::from_string(name.to_string());
        listener.host = StrBytes::from_static_str("localhost");
        listener.port = 9999;
        listener
    };
    let mut add = |cluster: Option<&str>, id: i32, dir: Uuid, listeners: Vec<Listener>| {
        let mut request = AddRaftVoterRequest::default();
        request.cluster_id = cluster.map(|c| StrBytes::from_string(c.to_string()));
        request.timeout_ms = 30_000;
        request.voter_id = id;
        request.voter_directory_id = dir;
        request.listeners = listeners;
        let response: AddRaftVoterResponse = client.request(ApiKey::AddRaftVoter, 0, &request);
        (
            response.error_code,
            response
                .error_message
                .map(|m| m.to_string())
                .unwrap_or_default(),
        )
    };
    let unsupported_add = (
        35,
        "Cluster doesn't support adding voter because the kraft.version feature is 0".to_string(),
    );
    let invalid_voter = |what: &str| {
        (
            42,
            format!("{what} voter request didn't include a valid voter"),
        )
    };
    let missing_endpoint = |endpoints: &str| {
        (
            42,
            format!(
                "Add voter request didn't include the endpoint (Endpoints(endpoints={{{endpoints}}})) for the default listener ListenerName({default_listener})"
            ),
        )
    };
    let other_cluster = (
        104,
        format!("The given id \"other-cluster\" doesn't match the cluster id \"{cluster_id}\""),
    );
    assert_eq!(
        add(None, 7, directory, vec![endpoint(default_listener)]),
        unsupported_add
    );
    assert_eq!(
        add(
            Some(&cluster_id),
            1,
            directory,
            vec![endpoint(default_listener)]
        ),
        unsupported_add
    );
    assert_eq!(
        add(None, 7, Uuid::nil(), vec![endpoint(default_listener)]),
        invalid_voter("Add")
    );
    assert_eq!(
        add(None, -1, directory, vec![endpoint(default_listener)]),
        invalid_voter("Add")
    );
    assert_eq!(
        add(None, 7, directory, vec![endpoint("OTHER")]),
        missing_endpoint("ListenerName(OTHER)=localhost/<unresolved>:9999")
    );
    assert_eq!(add(None, 7, directory, vec![]), missing_endpoint(""));
    assert_eq!(
        add(
            Some("other-cluster"),
            7,
            directory,
            vec![endpoint(default_listener)]
        ),
        other_cluster
    );

    let mut remove = |cluster: Option<&str>, id: i32, dir: Uuid| {
        let mut request = RemoveRaftVoterRequest::default();
        request.cluster_id = cluster.map(|c| StrBytes::from_string(c.to_string()));
        request.voter_id = id;
        request.voter_directory_id = dir;
        let response: RemoveRaftVoterResponse =
            client.request(ApiKey::RemoveRaftVoter, 0, &request);
        (
            response.error_code,
            response
                .error_message
                .map(|m| m.to_string())
                .unwrap_or_default(),
        )
    };
    assert_eq!(
        remove(None, 7, directory),
        (
            35,
            "Cluster doesn't support removing voter because the kraft.version feature is 0"
                .to_string()
        )
    );
    assert_eq!(remove(None, 1, Uuid::nil()), invalid_voter("Remove"));
    assert_eq!(remove(Some("other-cluster"), 7, directory), other_cluster);

    // This node is still the one voter.
    let response = describe(&mut client, 2, &[(METADATA, &[0])]);
    let voters: Vec<i32> = response.topics[0].partitions[0]
        .current_voters
        .iter()
        .map(|v| v.replica_id.0)
        .collect();
    assert_eq!(voters, vec![1]);
}

/// Goal: `kafka-cluster unregister --id N` (UnregisterBroker v0), offered
/// as by Kafka 4.1.1, answers as it answered: an id no broker has is
/// BROKER_ID_NOT_REGISTERED with Kafka's message. This node's own id is
/// refused (INVALID_REQUEST), where Kafka answers success and leaves its
/// running node unregistered, a single-node cluster without a broker
/// (measured); the node goes on serving.
///
/// Method: hand-built requests; RINGBROKER_QUORUM_REFERENCE=host:port sends
/// the first part to a Kafka instead.
#[test]
fn unregister_broker_answers_like_kafka() {
    use kafka_protocol::messages::{
        MetadataRequest, MetadataResponse, UnregisterBrokerRequest, UnregisterBrokerResponse,
    };

    let (broker, bootstrap) = broker_or_reference();
    let mut client = RawClient::connect(&bootstrap);
    let versions = common::wire::api_versions(&bootstrap);
    assert_eq!(
        common::wire::api_range(&versions, ApiKey::UnregisterBroker),
        Some((0, 0))
    );
    let mut unregister = |id: i32| {
        let mut request = UnregisterBrokerRequest::default();
        request.broker_id = id.into();
        let response: UnregisterBrokerResponse =
            client.request(ApiKey::UnregisterBroker, 0, &request);
        (
            response.error_code,
            response.error_message.map(|m| m.to_string()),
        )
    };
    for id in [5, -1, i32::MAX] {
        assert_eq!(
            unregister(id),
            (
                102,
                Some(format!("Broker ID {id} is not currently registered"))
            )
        );
    }
    if broker.is_some() {
        assert_eq!(
            unregister(1),
            (
                42,
                Some(
                    "Broker ID 1 is this running node; only a broker that is permanently \
                     gone can be unregistered"
                        .to_string()
                )
            )
        );
        let metadata: MetadataResponse =
            client.request(ApiKey::Metadata, 12, &MetadataRequest::default());
        let brokers: Vec<i32> = metadata.brokers.iter().map(|b| b.node_id.0).collect();
        assert_eq!(brokers, vec![1]);
    }
}
