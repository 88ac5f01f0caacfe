//! Goal: share groups (KIP-932) are off here, as on Kafka 4.1.1 with its
//! default `share.version` 0, and every share-group request is answered
//! byte for byte as Kafka 4.1.1 answered it:
//! - ApiVersions lists the twelve share-group APIs at Kafka's versions;
//! - ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
//!   and the share-group offsets APIs answer UNSUPPORTED_VERSION, before
//!   any ACL is asked;
//! - the share coordinator's state RPCs need CLUSTER_ACTION
//!   (CLUSTER_AUTHORIZATION_FAILED on every partition without it), then
//!   answer NOT_COORDINATOR on every partition asked about (nothing for an
//!   empty group id);
//! - FindCoordinator for share keys (v6) needs CLUSTER_ACTION, then
//!   answers COORDINATOR_NOT_AVAILABLE for a well-formed
//!   `group:topicId:partition` key and INVALID_REQUEST for a malformed one;
//!   before v6 the key type is INVALID_REQUEST, as is an unknown one.
//!
//! Method: the requests below were sent, as these bytes, to a Kafka 4.1.1
//! KRaft node (combined mode, PLAINTEXT; for the ACL cases with
//! StandardAuthorizer, `allow.everyone.if.no.acl.found=true` and the DENY
//! ACL created here) and its answers recorded; each is sent here and the
//! answer compared byte for byte (correlation id 7, client id "probe").
//! Run with RINGBROKER_SHARE_REFERENCE=host:port to send them to a Kafka
//! instead (and RINGBROKER_SHARE_ACL_REFERENCE for the ACL cases).

mod common;

use kafka_protocol::messages::ApiKey;

use common::wire::{api_range, api_versions, frame, RawClient};
use common::{Broker, BrokerOptions};

/// One request as sent to Kafka 4.1.1, and its answer there.
#[derive(Clone, Copy)]
struct Case {
    label: &'static str,
    api_key: i16,
    version: i16,
    /// Whether the request header carries tagged fields (v2).
    flexible: bool,
    /// The request body, hex.
    body: &'static str,
    /// Kafka 4.1.1's response frame (after its size), hex.
    kafka: &'static str,
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Sends `case` as Kafka got it and returns the answer, hex.
fn answer(client: &mut RawClient, case: &Case) -> String {
    let mut request = Vec::new();
    request.extend_from_slice(&case.api_key.to_be_bytes());
    request.extend_from_slice(&case.version.to_be_bytes());
    request.extend_from_slice(&7i32.to_be_bytes());
    request.extend_from_slice(&5i16.to_be_bytes());
    request.extend_from_slice(b"probe");
    if case.flexible {
        request.push(0);
    }
    request.extend_from_slice(&unhex(case.body));
    client
        .write_raw(&frame(&request))
        .unwrap_or_else(|e| panic!("{}: send: {e}", case.label));
    let response = client
        .read_frame()
        .unwrap_or_else(|e| panic!("{}: no answer: {e}", case.label));
    hex(&response)
}

fn answers_as_kafka(client: &mut RawClient, cases: &[Case]) {
    let mismatched: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let ours = answer(client, case);
            (ours != case.kafka)
                .then(|| format!("{}:\n  Kafka {}\n  here  {ours}", case.label, case.kafka))
        })
        .collect();
    assert!(
        mismatched.is_empty(),
        "answered unlike Kafka 4.1.1:\n{}",
        mismatched.join("\n")
    );
}

#[test]
fn share_group_requests_are_answered_as_kafka_answers_them_with_share_groups_off() {
    let (_broker, bootstrap) = match std::env::var("RINGBROKER_SHARE_REFERENCE") {
        Ok(reference) => (None, reference),
        Err(_) => {
            let broker = Broker::start(BrokerOptions::default());
            let bootstrap = broker.bootstrap();
            (Some(broker), bootstrap)
        }
    };
    let versions = api_versions(&bootstrap);
    for (key, range) in [
        (ApiKey::ShareGroupHeartbeat, (1, 1)),
        (ApiKey::ShareGroupDescribe, (1, 1)),
        (ApiKey::ShareFetch, (1, 1)),
        (ApiKey::ShareAcknowledge, (1, 1)),
        (ApiKey::InitializeShareGroupState, (0, 0)),
        (ApiKey::ReadShareGroupState, (0, 0)),
        (ApiKey::WriteShareGroupState, (0, 0)),
        (ApiKey::DeleteShareGroupState, (0, 0)),
        (ApiKey::ReadShareGroupStateSummary, (0, 0)),
        (ApiKey::DescribeShareGroupOffsets, (0, 0)),
        (ApiKey::AlterShareGroupOffsets, (0, 0)),
        (ApiKey::DeleteShareGroupOffsets, (0, 0)),
    ] {
        assert_eq!(api_range(&versions, key), Some(range), "{key:?}");
    }
    let mut client = RawClient::connect(&bootstrap);
    answers_as_kafka(&mut client, SHARE_GROUPS_OFF);
}

#[test]
fn without_cluster_action_share_state_and_coordinator_lookups_are_refused_like_kafka() {
    let (_broker, bootstrap) = match std::env::var("RINGBROKER_SHARE_ACL_REFERENCE") {
        Ok(reference) => (None, reference),
        Err(_) => {
            let broker = Broker::start(
                BrokerOptions::default()
                    .arg(
                        "--authorizer-class-name",
                        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    )
                    .arg("--allow-everyone-if-no-acl-found", "true"),
            );
            let bootstrap = broker.bootstrap();
            (Some(broker), bootstrap)
        }
    };
    // DENY CLUSTER_ACTION on the cluster, and ALL on group g1, to
    // User:ANONYMOUS from 127.0.0.2 (CreateAcls v3). With an ACL on the
    // cluster, no one else is allowed CLUSTER_ACTION either.
    let mut admin = RawClient::connect(&bootstrap);
    let create_acls = Case {
        label: "CreateAcls v3",
        api_key: 30,
        version: 3,
        flexible: true,
        body: CREATE_ACLS,
        kafka: "00000007000000000003000001000000010000",
    };
    answers_as_kafka(&mut admin, &[create_acls]);
    let refused: Vec<Case> = WITHOUT_CLUSTER_ACTION
        .iter()
        .map(|&(label, kafka)| {
            let request = SHARE_GROUPS_OFF
                .iter()
                .find(|case| case.label == label)
                .unwrap_or_else(|| panic!("no request {label}"));
            Case { kafka, ..*request }
        })
        .collect();
    let mut client = RawClient::connect_from(&bootstrap, std::net::Ipv4Addr::new(127, 0, 0, 2));
    answers_as_kafka(&mut client, &refused);
}

const CREATE_ACLS: &str = "03040e6b61666b612d636c7573746572030f557365723a414e4f4e594d4f55530a3132372e302e302e3209020003036731030f557365723a414e4f4e594d4f55530a3132372e302e302e3202020000";

const SHARE_GROUPS_OFF: &[Case] = &[
    Case {
        label: "ShareGroupHeartbeat v1",
        api_key: 76,
        version: 1,
        flexible: true,
        body: "036731196d656d2d6161616161616161616161616161616161616161000000000002027400",
        kafka: "000000070000000000002300000000000000000000ff00",
    },
    Case {
        label: "ShareGroupDescribe v1",
        api_key: 77,
        version: 1,
        flexible: true,
        body: "020367310000",
        kafka: "000000070000000000020023000367310100000000000000000101800000000000",
    },
    Case {
        label: "ShareFetch v1",
        api_key: 78,
        version: 1,
        flexible: true,
        body: "036731046d656d00000000000000640000000100100000000001f4000001f4010100",
        kafka: "00000007000000000000230000000000010100",
    },
    Case {
        label: "ShareAcknowledge v1",
        api_key: 79,
        version: 1,
        flexible: true,
        body: "036731046d656d000000010100",
        kafka: "000000070000000000002300010100",
    },
    Case {
        label: "DescribeShareGroupOffsets v0",
        api_key: 90,
        version: 0,
        flexible: true,
        body: "02036731000000",
        kafka: "00000007000000000002036731010023000000",
    },
    Case {
        label: "AlterShareGroupOffsets v0",
        api_key: 91,
        version: 0,
        flexible: true,
        body: "0367310100",
        kafka: "0000000700000000000023255468652076657273696f6e206f6620415049206973206e6f7420737570706f727465642e0100",
    },
    Case {
        label: "DeleteShareGroupOffsets v0",
        api_key: 92,
        version: 0,
        flexible: true,
        body: "0367310100",
        kafka: "0000000700000000000023255468652076657273696f6e206f6620415049206973206e6f7420737570706f727465642e0100",
    },
    Case {
        label: "InitializeShareGroupState v0",
        api_key: 83,
        version: 0,
        flexible: true,
        body: "03673102000000000000000000000000000000000200000000000000000000000000000000000000",
        kafka: "00000007000200000000000000000000000000000000020000000000104d556e61626c6520746f20696e697469616c697a652073686172652067726f75702073746174653a2054686973206973206e6f742074686520636f727265637420636f6f7264696e61746f722e000000",
    },
    Case {
        label: "InitializeShareGroupState v0, empty group",
        api_key: 83,
        version: 0,
        flexible: true,
        body: "0102000000000000000000000000000000000200000000000000000000000000000000000000",
        kafka: "00000007000100",
    },
    Case {
        label: "InitializeShareGroupState v0, no topics",
        api_key: 83,
        version: 0,
        flexible: true,
        body: "0367310100",
        kafka: "00000007000100",
    },
    Case {
        label: "ReadShareGroupState v0",
        api_key: 84,
        version: 0,
        flexible: true,
        body: "0367310200000000000000000000000000000000020000000000000000000000",
        kafka: "000000070002000000000000000000000000000000000200000000001047556e61626c6520746f20726561642073686172652067726f75702073746174653a2054686973206973206e6f742074686520636f727265637420636f6f7264696e61746f722e00000000000000000000000001000000",
    },
    Case {
        label: "WriteShareGroupState v0",
        api_key: 85,
        version: 0,
        flexible: true,
        body: "036731020000000000000000000000000000000002000000000000000000000000000000000000000001000000",
        kafka: "000000070002000000000000000000000000000000000200000000001048556e61626c6520746f2077726974652073686172652067726f75702073746174653a2054686973206973206e6f742074686520636f727265637420636f6f7264696e61746f722e000000",
    },
    Case {
        label: "DeleteShareGroupState v0",
        api_key: 86,
        version: 0,
        flexible: true,
        body: "03673102000000000000000000000000000000000200000000000000",
        kafka: "000000070002000000000000000000000000000000000200000000001049556e61626c6520746f2064656c6574652073686172652067726f75702073746174653a2054686973206973206e6f742074686520636f727265637420636f6f7264696e61746f722e000000",
    },
    Case {
        label: "ReadShareGroupStateSummary v0",
        api_key: 87,
        version: 0,
        flexible: true,
        body: "0367310200000000000000000000000000000000020000000000000000000000",
        kafka: "00000007000200000000000000000000000000000000020000000000104f556e61626c6520746f20726561642073686172652067726f75702073746174652073756d6d6172793a2054686973206973206e6f742074686520636f727265637420636f6f7264696e61746f722e00000000000000000000000000000000000000",
    },
    Case {
        label: "FindCoordinator v6, share key",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "02021c67313a414141414141414141414141414141414141414141413a3000",
        kafka: "000000070000000000021c67313a414141414141414141414141414141414141414141413a30ffffffff01ffffffff000f010000",
    },
    Case {
        label: "FindCoordinator v6, share keys good and bad",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "02031c67313a414141414141414141414141414141414141414141413a30027800",
        kafka: "000000070000000000031c67313a414141414141414141414141414141414141414141413a30ffffffff01ffffffff000f01000278ffffffff01ffffffff002a010000",
    },
    Case {
        label: "FindCoordinator v6, bad share key",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "020203673100",
        kafka: "00000007000000000002036731ffffffff01ffffffff002a010000",
    },
    Case {
        label: "FindCoordinator v6, share key without partition number",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "02021c67313a414141414141414141414141414141414141414141413a7800",
        kafka: "000000070000000000021c67313a414141414141414141414141414141414141414141413a78ffffffff01ffffffff002a010000",
    },
    Case {
        label: "FindCoordinator v6, share key with a bad topic id",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "02020867313a7a7a3a3000",
        kafka: "000000070000000000020867313a7a7a3a30ffffffff01ffffffff002a010000",
    },
    Case {
        label: "FindCoordinator v6, share key without group",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "02021a3a414141414141414141414141414141414141414141413a3000",
        kafka: "000000070000000000021a3a414141414141414141414141414141414141414141413a30ffffffff01ffffffff002a010000",
    },
    Case {
        label: "FindCoordinator v6, share key of partition -1",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "02021c673a414141414141414141414141414141414141414141413a2d3100",
        kafka: "000000070000000000021c673a414141414141414141414141414141414141414141413a2d31ffffffff01ffffffff000f010000",
    },
    Case {
        label: "FindCoordinator v6, unknown key type",
        api_key: 10,
        version: 6,
        flexible: true,
        body: "030203673100",
        kafka: "00000007000000000002036731ffffffff01ffffffff002aac0154686973206d6f7374206c696b656c79206f63637572732062656361757365206f6620612072657175657374206265696e67206d616c666f726d65642062792074686520636c69656e74206c696272617279206f7220746865206d657373616765207761732073656e7420746f20616e20696e636f6d70617469626c652062726f6b65722e20536565207468652062726f6b6572206c6f677320666f72206d6f72652064657461696c732e0000",
    },
    Case {
        label: "FindCoordinator v5, share key",
        api_key: 10,
        version: 5,
        flexible: true,
        body: "02021c67313a414141414141414141414141414141414141414141413a3000",
        kafka: "000000070000000000021c67313a414141414141414141414141414141414141414141413a30ffffffff01ffffffff002a010000",
    },
    Case {
        label: "FindCoordinator v3, share key",
        api_key: 10,
        version: 3,
        flexible: true,
        body: "1c67313a414141414141414141414141414141414141414141413a300200",
        kafka: "000000070000000000002aac0154686973206d6f7374206c696b656c79206f63637572732062656361757365206f6620612072657175657374206265696e67206d616c666f726d65642062792074686520636c69656e74206c696272617279206f7220746865206d657373616765207761732073656e7420746f20616e20696e636f6d70617469626c652062726f6b65722e20536565207468652062726f6b6572206c6f677320666f72206d6f72652064657461696c732effffffff01ffffffff00",
    },
    Case {
        label: "FindCoordinator v1, share key",
        api_key: 10,
        version: 1,
        flexible: false,
        body: "001b67313a414141414141414141414141414141414141414141413a3002",
        kafka: "0000000700000000002a00ab54686973206d6f7374206c696b656c79206f63637572732062656361757365206f6620612072657175657374206265696e67206d616c666f726d65642062792074686520636c69656e74206c696272617279206f7220746865206d657373616765207761732073656e7420746f20616e20696e636f6d70617469626c652062726f6b65722e20536565207468652062726f6b6572206c6f677320666f72206d6f72652064657461696c732effffffff0000ffffffff",
    },
    Case {
        label: "FindCoordinator v3, unknown key type",
        api_key: 10,
        version: 3,
        flexible: true,
        body: "0367310300",
        kafka: "000000070000000000002aac0154686973206d6f7374206c696b656c79206f63637572732062656361757365206f6620612072657175657374206265696e67206d616c666f726d65642062792074686520636c69656e74206c696272617279206f7220746865206d657373616765207761732073656e7420746f20616e20696e636f6d70617469626c652062726f6b65722e20536565207468652062726f6b6572206c6f677320666f72206d6f72652064657461696c732effffffff01ffffffff00",
    },
];

/// Requests of [`SHARE_GROUPS_OFF`], by label, and Kafka 4.1.1's answers
/// to a client without CLUSTER_ACTION.
const WITHOUT_CLUSTER_ACTION: &[(&str, &str)] = &[
    (
        "InitializeShareGroupState v0",
        "000000070002000000000000000000000000000000000200000000001f1e436c757374657220617574686f72697a6174696f6e206661696c65642e000000",
    ),
    (
        "InitializeShareGroupState v0, empty group",
        "000000070002000000000000000000000000000000000200000000001f1e436c757374657220617574686f72697a6174696f6e206661696c65642e000000",
    ),
    (
        "ReadShareGroupStateSummary v0",
        "000000070002000000000000000000000000000000000200000000001f1e436c757374657220617574686f72697a6174696f6e206661696c65642e00000000000000000000000000000000000000",
    ),
    (
        "ShareGroupHeartbeat v1",
        "000000070000000000002300000000000000000000ff00",
    ),
    (
        "ShareGroupDescribe v1",
        "000000070000000000020023000367310100000000000000000101800000000000",
    ),
    (
        "DeleteShareGroupOffsets v0",
        "0000000700000000000023255468652076657273696f6e206f6620415049206973206e6f7420737570706f727465642e0100",
    ),
    (
        "FindCoordinator v6, share key",
        "000000070000000000021c67313a414141414141414141414141414141414141414141413a30ffffffff01ffffffff001f1e436c757374657220617574686f72697a6174696f6e206661696c65642e0000",
    ),
    (
        "FindCoordinator v6, bad share key",
        "00000007000000000002036731ffffffff01ffffffff001f1e436c757374657220617574686f72697a6174696f6e206661696c65642e0000",
    ),
    (
        "FindCoordinator v6, share keys good and bad",
        "000000070000000000031c67313a414141414141414141414141414141414141414141413a30ffffffff01ffffffff001f1e436c757374657220617574686f72697a6174696f6e206661696c65642e000278ffffffff01ffffffff001f1e436c757374657220617574686f72697a6174696f6e206661696c65642e0000",
    ),
    (
        "FindCoordinator v5, share key",
        "000000070000000000021c67313a414141414141414141414141414141414141414141413a30ffffffff01ffffffff002a010000",
    ),
];
