//! Goal: on a SASL_PLAINTEXT listener, clients authenticate with
//! SCRAM-SHA-256 and SCRAM-SHA-512 as they do with Kafka, and nothing is
//! served before they have: the exchange on the wire (handshake v0 and v1, SaslAuthenticate v0-v2, every
//! refusal and when the connection closes) is what Kafka 4.1.1 answered
//! to the same requests; credentials set with AlterUserScramCredentials
//! follow Kafka's rules, are described as Kafka describes them, and
//! survive kill -9; `--add-scram` never overrides a credential set since;
//! with `connections.max.reauth.ms`, sessions end unless renewed on the
//! connection (KIP-368), as Kafka 4.1.1 ended and renewed them.
//!
//! Method: a broker listening SASL_PLAINTEXT with `--add-scram` users; a
//! raw client doing the SCRAM client side itself (RFC
//! 5802, with the sha2/hmac/pbkdf2 crates), whose answers are compared
//! with those recorded from Kafka 4.1.1 with a SASL_PLAINTEXT listener and
//! `sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512`. Real clients
//! (librdkafka through confluent-kafka, kafka-python, the Java client) are
//! tested from tests/python/test_sasl_scram.py: the rdkafka crate here is
//! built without the OpenSSL that librdkafka's SCRAM needs.

mod common;

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
    ApiVersionsRequest, ApiVersionsResponse, BrokerId, CreateTopicsRequest, CreateTopicsResponse,
    DescribeClusterRequest, DescribeClusterResponse, DescribeConfigsRequest,
    DescribeConfigsResponse, DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse, ProduceRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use sha2::{Digest, Sha256, Sha512};

use common::wire::{
    closed_silently, encode_batch, encode_request, frame, metadata_answers, plain_record,
    sasl_authenticate, sasl_handshake, Outcome, RawClient, READ_TIMEOUT,
};
use common::{Broker, BrokerOptions};

const SHA256: &str = "SCRAM-SHA-256";
const SHA512: &str = "SCRAM-SHA-512";
const INVALID_256: &str = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256";

fn sasl_broker() -> Broker {
    Broker::start(
        BrokerOptions::default()
            .listen_protocol("SASL_PLAINTEXT")
            .arg(
                "--add-scram",
                "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            )
            .arg(
                "--add-scram",
                "SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]",
            )
            .arg(
                "--add-scram",
                "SCRAM-SHA-256=[name=bob,password=bob-secret]",
            ),
    )
}

// ---- the client side of SCRAM, written here from RFC 5802 ----

fn hmac(mechanism: &str, key: &[u8], data: &[u8]) -> Vec<u8> {
    if mechanism == SHA256 {
        let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    } else {
        let mut mac = Hmac::<Sha512>::new_from_slice(key).unwrap();
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    }
}

fn hash(mechanism: &str, data: &[u8]) -> Vec<u8> {
    if mechanism == SHA256 {
        Sha256::digest(data).to_vec()
    } else {
        Sha512::digest(data).to_vec()
    }
}

fn salted_password(mechanism: &str, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut out = vec![0u8; if mechanism == SHA256 { 32 } else { 64 }];
    if mechanism == SHA256 {
        pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, iterations, &mut out);
    } else {
        pbkdf2::pbkdf2_hmac::<Sha512>(password.as_bytes(), salt, iterations, &mut out);
    }
    out
}

struct ScramClient {
    mechanism: &'static str,
    password: String,
    gs2: String,
    bare: String,
}

const CLIENT_NONCE: &str = "fyko+d2lbbFgONRv9qkxdawL";

impl ScramClient {
    fn new(mechanism: &'static str, user: &str, password: &str, authzid: &str) -> Self {
        let gs2 = if authzid.is_empty() {
            "n,,".to_string()
        } else {
            format!("n,a={authzid},")
        };
        ScramClient {
            mechanism,
            password: password.to_string(),
            gs2,
            bare: format!("n={user},r={CLIENT_NONCE}"),
        }
    }

    fn first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2, self.bare).into_bytes()
    }

    /// The client-final message for `server_first`, and the server
    /// signature the server-final message must carry.
    fn last(&self, server_first: &[u8]) -> (Vec<u8>, String) {
        let server_first = std::str::from_utf8(server_first).expect("server-first is UTF-8");
        let field = |name: &str| {
            server_first
                .split(',')
                .find_map(|f| f.strip_prefix(name))
                .unwrap_or_else(|| panic!("server-first {server_first:?} has no {name}"))
        };
        let nonce = field("r=");
        assert!(
            nonce.starts_with(CLIENT_NONCE) && nonce.len() > CLIENT_NONCE.len(),
            "server nonce {nonce:?} extends ours"
        );
        let salt = BASE64.decode(field("s=")).expect("salt is base64");
        let iterations: u32 = field("i=").parse().expect("iterations");
        let salted = salted_password(self.mechanism, &self.password, &salt, iterations);
        let client_key = hmac(self.mechanism, &salted, b"Client Key");
        let stored_key = hash(self.mechanism, &client_key);
        let without_proof = format!("c={},r={nonce}", BASE64.encode(&self.gs2));
        let auth_message = format!("{},{server_first},{without_proof}", self.bare);
        let signature = hmac(self.mechanism, &stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac(self.mechanism, &salted, b"Server Key");
        let server_signature = hmac(self.mechanism, &server_key, auth_message.as_bytes());
        (
            format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes(),
            format!("v={}", BASE64.encode(server_signature)),
        )
    }
}

// ---- raw requests ----

/// Sends `api_key` v`version` with a default body and reports what the
/// broker did.
fn outcome_of<Req: kafka_protocol::protocol::Encodable + Default>(
    client: &mut RawClient,
    api_key: ApiKey,
    version: i16,
) -> Outcome {
    let correlation_id = client.next_correlation_id();
    let request = encode_request(api_key, version, correlation_id, &Req::default());
    client.write_raw(&request).expect("send");
    client.outcome_within(READ_TIMEOUT)
}

/// A v1 handshake and SaslAuthenticate v2 exchange; panics unless it
/// succeeds.
fn login(bootstrap: &str, mechanism: &'static str, user: &str, password: &str) -> RawClient {
    let mut client = RawClient::connect(bootstrap);
    let done = exchange(&mut client, mechanism, user, password);
    assert_eq!(
        done.error_code, 0,
        "{user} {mechanism}: {:?}",
        done.error_message
    );
    client
}

/// A v1 handshake and the SaslAuthenticate v2 exchange on `client`: the
/// last answer (checked to carry the server's signature if it succeeded).
fn exchange(
    client: &mut RawClient,
    mechanism: &'static str,
    user: &str,
    password: &str,
) -> kafka_protocol::messages::SaslAuthenticateResponse {
    assert_eq!(sasl_handshake(client, mechanism, 1).0, 0);
    let scram = ScramClient::new(mechanism, user, password, "");
    let first = sasl_authenticate(client, &scram.first(), 2);
    if first.error_code != 0 {
        return first;
    }
    let (last, server_signature) = scram.last(&first.auth_bytes);
    let done = sasl_authenticate(client, &last, 2);
    if done.error_code == 0 {
        assert_eq!(
            &done.auth_bytes[..],
            server_signature.as_bytes(),
            "server signature"
        );
    }
    done
}

/// The error code and message of an exchange that fails.
fn failed_login(
    bootstrap: &str,
    mechanism: &'static str,
    user: &str,
    password: &str,
) -> (i16, Option<String>) {
    let mut client = RawClient::connect(bootstrap);
    assert_eq!(sasl_handshake(&mut client, mechanism, 1).0, 0);
    let scram = ScramClient::new(mechanism, user, password, "");
    let first = sasl_authenticate(&mut client, &scram.first(), 2);
    let failed = if first.error_code != 0 {
        first
    } else {
        sasl_authenticate(&mut client, &scram.last(&first.auth_bytes).0, 2)
    };
    assert!(
        closed_silently(&client.outcome_within(READ_TIMEOUT)),
        "closed after a failure"
    );
    (
        failed.error_code,
        failed.error_message.map(|m| m.to_string()),
    )
}

/// Goal: the exchange and every refusal as Kafka 4.1.1 answered them.
#[test]
fn the_sasl_exchange_answers_as_kafka_does() {
    let broker = sasl_broker();
    let bootstrap = broker.bootstrap();
    // Kafka lists them in its HashMap's order, not as configured.
    let both = vec![SHA512.to_string(), SHA256.to_string()];

    // Nothing but ApiVersions and SaslHandshake before authenticating: the
    // connection is closed without an answer.
    let mut client = RawClient::connect(&bootstrap);
    assert!(closed_silently(&outcome_of::<MetadataRequest>(
        &mut client,
        ApiKey::Metadata,
        1
    )));
    let mut client = RawClient::connect(&bootstrap);
    assert!(closed_silently(&outcome_of::<SaslAuthenticateRequest>(
        &mut client,
        ApiKey::SaslAuthenticate,
        2
    )));
    // A Produce before authenticating is not written: the connection is
    // closed without an answer and the partition stays empty.
    let mut admin = login(&bootstrap, SHA256, "alice", "alice-secret");
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(StrBytes::from_static_str("before-auth"));
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    let mut create = CreateTopicsRequest::default();
    create.topics = vec![topic];
    create.timeout_ms = 10_000;
    let created: CreateTopicsResponse = admin.request(ApiKey::CreateTopics, 5, &create);
    assert_eq!(created.topics[0].error_code, 0);
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(encode_batch(&[plain_record(
        0,
        None,
        Bytes::from_static(b"unauthenticated"),
    )]));
    let mut produced = TopicProduceData::default();
    produced.name = TopicName(StrBytes::from_static_str("before-auth"));
    produced.partition_data = vec![partition];
    let mut produce = ProduceRequest::default();
    produce.acks = -1;
    produce.timeout_ms = 10_000;
    produce.topic_data = vec![produced];
    let mut client = RawClient::connect(&bootstrap);
    client
        .write_raw(&encode_request(ApiKey::Produce, 9, 1, &produce))
        .unwrap();
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));
    let mut wanted = ListOffsetsPartition::default();
    wanted.partition_index = 0;
    wanted.timestamp = -1;
    let mut listed = ListOffsetsTopic::default();
    listed.name = TopicName(StrBytes::from_static_str("before-auth"));
    listed.partitions = vec![wanted];
    let mut list = ListOffsetsRequest::default();
    list.replica_id = BrokerId(-1);
    list.topics = vec![listed];
    let offsets: ListOffsetsResponse = admin.request(ApiKey::ListOffsets, 7, &list);
    let answer = &offsets.topics[0].partitions[0];
    assert_eq!(
        (answer.error_code, answer.offset),
        (0, 0),
        "nothing written"
    );

    // One ApiVersions, first only.
    let mut client = RawClient::connect(&bootstrap);
    let versions: ApiVersionsResponse =
        client.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(versions.error_code, 0);
    assert!(closed_silently(&outcome_of::<ApiVersionsRequest>(
        &mut client,
        ApiKey::ApiVersions,
        3
    )));
    let mut client = RawClient::connect(&bootstrap);
    let _: ApiVersionsResponse =
        client.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(sasl_handshake(&mut client, SHA256, 1), (0, both.clone()));

    // A mechanism not enabled: UNSUPPORTED_SASL_MECHANISM (33) with the
    // enabled ones, then closed.
    let mut client = RawClient::connect(&bootstrap);
    let started = Instant::now();
    assert_eq!(sasl_handshake(&mut client, "PLAIN", 1), (33, both.clone()));
    assert!(
        started.elapsed() >= Duration::from_millis(90),
        "answered after the delay"
    );
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));

    // A second handshake in the middle of the exchange: ILLEGAL_SASL_STATE
    // (34) and no mechanisms, then closed.
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(sasl_handshake(&mut client, SHA256, 1), (0, both.clone()));
    assert_eq!(sasl_handshake(&mut client, SHA256, 1), (34, vec![]));
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));

    // The exchange with each SaslAuthenticate version and both mechanisms;
    // afterwards requests are served, and SaslHandshake and
    // SaslAuthenticate answer ILLEGAL_SASL_STATE as on any connection.
    for mechanism in [SHA256, SHA512] {
        for version in 0..=2 {
            let mut client = RawClient::connect(&bootstrap);
            assert_eq!(sasl_handshake(&mut client, mechanism, 1), (0, both.clone()));
            let scram = ScramClient::new(mechanism, "alice", "alice-secret", "");
            let first = sasl_authenticate(&mut client, &scram.first(), version);
            assert_eq!((first.error_code, first.session_lifetime_ms), (0, 0));
            let (last, server_signature) = scram.last(&first.auth_bytes);
            let done = sasl_authenticate(&mut client, &last, version);
            assert_eq!((done.error_code, done.session_lifetime_ms), (0, 0));
            assert_eq!(&done.auth_bytes[..], server_signature.as_bytes());
            assert!(
                metadata_answers(&mut client),
                "{mechanism} v{version}: served"
            );
            assert_eq!(sasl_handshake(&mut client, mechanism, 1), (34, vec![]));
            let again = sasl_authenticate(&mut client, b"x", version);
            assert_eq!(again.error_code, 34);
            assert_eq!(
                again.error_message.as_deref(),
                Some("SaslAuthenticate request received after successful authentication")
            );
            assert!(metadata_answers(&mut client), "still open");
        }
    }

    // Refusals: SASL_AUTHENTICATION_FAILED (58), at the client-first message
    // for an unknown user, a malformed message, a token login or another
    // authorization id, at the client-final message for a wrong password;
    // then the connection is closed.
    let refusals: [(&str, &[u8], &str); 4] = [
        ("unknown user", b"n,,n=nobody,r=abcdefgh", INVALID_256),
        ("garbage", b"hello there", INVALID_256),
        ("token login", b"n,,n=alice,r=abcdefgh,tokenauth=true", INVALID_256),
        (
            "other authorization id",
            b"n,a=bob,n=alice,r=abcdefgh",
            "Authentication failed: Client requested an authorization id that is different from username",
        ),
    ];
    for (case, first, message) in refusals {
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(sasl_handshake(&mut client, SHA256, 1).0, 0);
        let started = Instant::now();
        let refused = sasl_authenticate(&mut client, first, 2);
        assert!(
            started.elapsed() >= Duration::from_millis(90),
            "{case}: a failure is answered after connection.failed.authentication.delay.ms"
        );
        assert_eq!(refused.error_code, 58, "{case}");
        assert_eq!(refused.error_message.as_deref(), Some(message), "{case}");
        assert!(
            closed_silently(&client.outcome_within(READ_TIMEOUT)),
            "{case}"
        );
    }
    assert_eq!(
        failed_login(&bootstrap, SHA256, "alice", "wrong"),
        (58, Some(INVALID_256.to_string()))
    );
    // A credential exists for one mechanism only where it was set.
    drop(login(&bootstrap, SHA256, "bob", "bob-secret"));
    assert_eq!(
        failed_login(&bootstrap, SHA512, "bob", "bob-secret"),
        (58, Some(INVALID_256.replace("256", "512")))
    );

    // A v0 handshake: the exchange is bare size-prefixed tokens; a failure
    // closes the connection without an answer.
    for (password, succeeds) in [("alice-secret", true), ("wrong", false)] {
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(sasl_handshake(&mut client, SHA256, 0), (0, both.clone()));
        let scram = ScramClient::new(SHA256, "alice", password, "");
        client.write_raw(&frame(&scram.first())).unwrap();
        let server_first = client.read_frame().expect("server-first");
        let (last, server_signature) = scram.last(&server_first);
        client.write_raw(&frame(&last)).unwrap();
        if succeeds {
            assert_eq!(
                client.read_frame().expect("server-final"),
                server_signature.as_bytes()
            );
            assert!(metadata_answers(&mut client));
        } else {
            assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));
        }
    }

    // Before authenticating, a frame over sasl.server.max.receive.size
    // (512 KiB) closes the connection; afterwards the request size limit is
    // socket.request.max.bytes, and the broker serves everyone else.
    let mut client = RawClient::connect(&bootstrap);
    let mut big = (600 * 1024i32).to_be_bytes().to_vec();
    big.extend_from_slice(&[0, 17, 0, 1, 0, 0, 0, 1]);
    let _ = client.write_raw(&big);
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));
    let mut client = login(&bootstrap, SHA512, "alice", "alice-secret");
    let correlation_id = client.next_correlation_id();
    let mut request = MetadataRequest::default();
    request.topics = Some(Vec::new());
    let mut request = encode_request(ApiKey::Metadata, 9, correlation_id, &request);
    // Metadata v9 ends with an empty tagged-field section (one 0 byte): it
    // becomes one unknown tagged field (tag 100) of 600 KiB.
    request.pop();
    let padding = 600 * 1024;
    request.push(1);
    for mut value in [100usize, padding] {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                request.push(byte);
                break;
            }
            request.push(byte | 0x80);
        }
    }
    request.resize(request.len() + padding, 0);
    let size = (request.len() - 4) as i32;
    request[..4].copy_from_slice(&size.to_be_bytes());
    client.write_raw(&request).unwrap();
    let answer = client
        .read_frame()
        .expect("a large request after authenticating");
    assert_eq!(
        i32::from_be_bytes(answer[..4].try_into().unwrap()),
        correlation_id
    );
    let mut client = login(&bootstrap, SHA256, "alice", "alice-secret");
    assert!(metadata_answers(&mut client));

    // Mangled handshakes and SCRAM messages (v1 and bare) never take the
    // broker down: each byte of a valid exchange's frames flipped in turn.
    let mut handshake_request = SaslHandshakeRequest::default();
    handshake_request.mechanism = StrBytes::from_static_str(SHA256);
    let valid_handshake = encode_request(ApiKey::SaslHandshake, 1, 1, &handshake_request);
    let bare_handshake = encode_request(ApiKey::SaslHandshake, 0, 1, &handshake_request);
    let scram = ScramClient::new(SHA256, "alice", "alice-secret", "");
    let mut authenticate_request = SaslAuthenticateRequest::default();
    authenticate_request.auth_bytes = Bytes::from(scram.first());
    let valid_first = encode_request(ApiKey::SaslAuthenticate, 2, 2, &authenticate_request);
    let cases: Vec<(Vec<u8>, Vec<u8>)> = (4..valid_handshake.len())
        .map(|at| (at, valid_handshake.clone(), Vec::new()))
        .chain((4..valid_first.len()).map(|at| (at, valid_first.clone(), valid_handshake.clone())))
        .chain(
            (4..scram.first().len() + 4)
                .map(|at| (at, frame(&scram.first()), bare_handshake.clone())),
        )
        .map(|(at, mut mangled, before)| {
            mangled[at] ^= 0xa5;
            (before, mangled)
        })
        .collect();
    for (before, mangled) in &cases {
        let mut client = RawClient::connect(&bootstrap);
        if !before.is_empty() {
            client.write_raw(before).unwrap();
            client.read_frame().expect("handshake answer");
        }
        let _ = client.write_raw(mangled);
        let _ = client.outcome_within(Duration::from_millis(5));
    }
    let mut client = login(&bootstrap, SHA512, "alice", "alice-secret");
    assert!(
        metadata_answers(&mut client),
        "served after {} mangled frames",
        cases.len()
    );
}

fn upsertion(
    name: &str,
    mechanism: i8,
    iterations: i32,
    password: &str,
) -> ScramCredentialUpsertion {
    let salt = format!("salt-of-{name}").into_bytes();
    let mechanism_name = if mechanism == 2 { SHA512 } else { SHA256 };
    let mut u = ScramCredentialUpsertion::default();
    u.name = StrBytes::from_string(name.to_string());
    u.mechanism = mechanism;
    u.iterations = iterations;
    u.salted_password = Bytes::from(salted_password(
        mechanism_name,
        password,
        &salt,
        iterations.clamp(1, 20_000) as u32,
    ));
    u.salt = Bytes::from(salt);
    u
}

fn deletion(name: &str, mechanism: i8) -> ScramCredentialDeletion {
    let mut d = ScramCredentialDeletion::default();
    d.name = StrBytes::from_string(name.to_string());
    d.mechanism = mechanism;
    d
}

/// (user, error code, message), successes first, each group by user: Kafka
/// answers in hash-map order, so the recorded answers are compared sorted.
fn alter(
    client: &mut RawClient,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Vec<(String, i16, Option<String>)> {
    let mut request = AlterUserScramCredentialsRequest::default();
    request.deletions = deletions;
    request.upsertions = upsertions;
    let response: AlterUserScramCredentialsResponse =
        client.request(ApiKey::AlterUserScramCredentials, 0, &request);
    let mut results: Vec<_> = response
        .results
        .into_iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.error_message.map(|m| m.to_string()),
            )
        })
        .collect();
    results.sort_by_key(|(user, code, _)| (*code != 0, user.clone()));
    results
}

type Described = Vec<(String, i16, Option<String>, Vec<(i8, i32)>)>;

fn describe(client: &mut RawClient, users: Option<&[&str]>) -> Described {
    let mut request = DescribeUserScramCredentialsRequest::default();
    request.users = users.map(|users| {
        users
            .iter()
            .map(|u| {
                let mut name = UserName::default();
                name.name = StrBytes::from_string(u.to_string());
                name
            })
            .collect()
    });
    let response: DescribeUserScramCredentialsResponse =
        client.request(ApiKey::DescribeUserScramCredentials, 0, &request);
    assert_eq!(response.error_code, 0);
    let mut results: Described = response
        .results
        .into_iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.error_message
                    .map(|m| m.to_string())
                    .filter(|m| !m.is_empty()),
                r.credential_infos
                    .iter()
                    .map(|i| (i.mechanism, i.iterations))
                    .collect(),
            )
        })
        .collect();
    results.sort();
    results
}

fn ok(user: &str) -> (String, i16, Option<String>) {
    (user.to_string(), 0, None)
}

fn err(user: &str, code: i16, message: &str) -> (String, i16, Option<String>) {
    (user.to_string(), code, Some(message.to_string()))
}

const TWICE: &str = "A user credential cannot be altered twice in the same request";
const NO_SUCH_DELETE: &str = "Attempt to delete a user credential that does not exist";

/// Goal: AlterUserScramCredentials and DescribeUserScramCredentials answer
/// as Kafka 4.1.1 did, the credentials log in at once and after kill -9,
/// and a restart with `--add-scram` keeps a password changed since.
#[test]
fn scram_credentials_are_altered_described_and_survive_kill_9() {
    let mut broker = sasl_broker();
    let bootstrap = broker.bootstrap();
    let mut admin = login(&bootstrap, SHA256, "alice", "alice-secret");

    let described = describe(&mut admin, Some(&["u1", "u1", "zz", ""]));
    assert_eq!(
        described,
        vec![
            ("".into(), 91, Some("Attempt to describe a user credential that does not exist: ".into()), vec![]),
            ("u1".into(), 92, Some("Cannot describe SCRAM credentials for the same user twice in a single request: u1".into()), vec![]),
            ("zz".into(), 91, Some("Attempt to describe a user credential that does not exist: zz".into()), vec![]),
        ]
    );
    assert_eq!(
        alter(
            &mut admin,
            vec![],
            vec![
                upsertion("u1", 1, 4096, "p1"),
                upsertion("u1b", 2, 16384, "p1b"),
                upsertion("u2", 1, 8192, "p2"),
                upsertion("u3", 2, 4096, "p3"),
            ]
        ),
        vec![ok("u1"), ok("u1b"), ok("u2"), ok("u3")]
    );
    assert_eq!(
        alter(&mut admin, vec![], vec![upsertion("u1", 2, 5000, "p1-512")]),
        vec![ok("u1")]
    );
    let everyone = vec![
        ("alice".to_string(), 0, None, vec![(1, 4096), (2, 8192)]),
        ("bob".into(), 0, None, vec![(1, 4096)]),
        ("u1".into(), 0, None, vec![(1, 4096), (2, 5000)]),
        ("u1b".into(), 0, None, vec![(2, 16384)]),
        ("u2".into(), 0, None, vec![(1, 8192)]),
        ("u3".into(), 0, None, vec![(2, 4096)]),
    ];
    assert_eq!(describe(&mut admin, None), everyone);
    assert_eq!(describe(&mut admin, Some(&[])), everyone);
    assert_eq!(
        alter(
            &mut admin,
            vec![],
            vec![
                upsertion("", 1, 4096, "x"),
                upsertion("e0", 0, 4096, "x"),
                upsertion("e3", 3, 4096, "x"),
                upsertion("lo", 1, 4095, "x"),
                upsertion("hi", 1, 16385, "x"),
            ]
        ),
        vec![
            err("", 93, "Username must not be empty"),
            err("e0", 33, "Unknown SCRAM mechanism"),
            err("e3", 33, "Unknown SCRAM mechanism"),
            err("hi", 93, "Too many iterations"),
            err("lo", 93, "Too few iterations"),
        ]
    );
    assert_eq!(
        alter(
            &mut admin,
            vec![deletion("u2", 1), deletion("u2", 1)],
            vec![
                upsertion("d1", 1, 4096, "x"),
                upsertion("d1", 2, 4096, "x"),
                upsertion("u3", 2, 4096, "p3-new"),
            ]
        ),
        vec![ok("u3"), err("d1", 92, TWICE), err("u2", 92, TWICE)]
    );
    assert_eq!(
        alter(
            &mut admin,
            vec![deletion("u3", 2)],
            vec![upsertion("u3", 1, 4096, "x")]
        ),
        vec![err("u3", 92, TWICE)]
    );
    assert_eq!(
        alter(
            &mut admin,
            vec![
                deletion("u2", 2),
                deletion("never", 1),
                deletion("", 1),
                deletion("u1", 0)
            ],
            vec![]
        ),
        vec![
            err("", 93, "Username must not be empty"),
            err("never", 91, NO_SUCH_DELETE),
            err("u1", 33, "Unknown SCRAM mechanism"),
            err("u2", 91, NO_SUCH_DELETE),
        ]
    );
    assert_eq!(
        alter(
            &mut admin,
            vec![deletion("x", 1)],
            vec![upsertion("x", 1, 4096, "x"), upsertion("x", 1, 4096, "x")]
        ),
        vec![err("x", 91, NO_SUCH_DELETE)]
    );
    assert_eq!(
        alter(
            &mut admin,
            vec![deletion("u1", 1), deletion("u1b", 2)],
            vec![]
        ),
        vec![ok("u1"), ok("u1b")]
    );
    assert_eq!(
        describe(&mut admin, Some(&["u1", "u1b", "u2", "u3", "d1"])),
        vec![
            (
                "d1".into(),
                91,
                Some("Attempt to describe a user credential that does not exist: d1".into()),
                vec![]
            ),
            ("u1".into(), 0, None, vec![(2, 5000)]),
            (
                "u1b".into(),
                91,
                Some("Attempt to describe a user credential that does not exist: u1b".into()),
                vec![]
            ),
            ("u2".into(), 0, None, vec![(1, 8192)]),
            ("u3".into(), 0, None, vec![(2, 4096)]),
        ]
    );

    // What was set logs in at once; what was deleted or replaced does not.
    drop(login(&bootstrap, SHA512, "u1", "p1-512"));
    drop(login(&bootstrap, SHA256, "u2", "p2"));
    drop(login(&bootstrap, SHA512, "u3", "p3-new"));
    assert_eq!(failed_login(&bootstrap, SHA512, "u3", "p3").0, 58);
    assert_eq!(failed_login(&bootstrap, SHA256, "u1", "p1").0, 58);

    // alice changes her SCRAM-SHA-256 password and bob's is deleted;
    // after kill -9 every acknowledged change holds, and --add-scram (still
    // on the command line) puts back neither the old password nor bob.
    assert_eq!(
        alter(
            &mut admin,
            vec![deletion("bob", 1)],
            vec![upsertion("alice", 1, 4096, "new-secret")]
        ),
        vec![ok("alice"), ok("bob")]
    );
    // An empty salted password: UNKNOWN_SERVER_ERROR without a message, the
    // rest done, as Kafka 4.1.1 answered.
    let mut empty = upsertion("emp", 1, 4096, "x");
    empty.salted_password = Bytes::new();
    assert_eq!(
        alter(
            &mut admin,
            vec![],
            vec![upsertion("u4", 1, 4096, "p4"), empty]
        ),
        vec![ok("u4"), ("emp".to_string(), -1, None)]
    );
    drop(admin);
    broker.kill9();
    broker.restart();
    drop(login(&bootstrap, SHA256, "alice", "new-secret"));
    assert_eq!(
        failed_login(&bootstrap, SHA256, "alice", "alice-secret").0,
        58
    );
    assert_eq!(failed_login(&bootstrap, SHA256, "bob", "bob-secret").0, 58);
    drop(login(&bootstrap, SHA256, "u4", "p4"));
    drop(login(&bootstrap, SHA512, "alice", "alice-secret"));
    drop(login(&bootstrap, SHA512, "u1", "p1-512"));
    drop(login(&bootstrap, SHA256, "u2", "p2"));
    assert_eq!(failed_login(&bootstrap, SHA256, "u1", "p1").0, 58);
    let mut admin = login(&bootstrap, SHA512, "u3", "p3-new");
    assert_eq!(
        describe(&mut admin, None),
        vec![
            ("alice".to_string(), 0, None, vec![(1, 4096), (2, 8192)]),
            ("u1".into(), 0, None, vec![(2, 5000)]),
            ("u2".into(), 0, None, vec![(1, 8192)]),
            ("u3".into(), 0, None, vec![(2, 4096)]),
            ("u4".into(), 0, None, vec![(1, 4096)]),
        ]
    );
}

/// Goal: PLAINTEXT and SASL_PLAINTEXT listeners side by side, as Kafka's
/// `listeners=PLAINTEXT://...,SASL_PLAINTEXT://...`: each serves its own
/// protocol, each gives its clients its own address for the broker
/// (Metadata, FindCoordinator, DescribeCluster), the broker config
/// `listeners` names both, and a user created on the inside listener logs
/// in on the outside one. Method: a broker with both, raw requests.
#[test]
fn plaintext_and_sasl_listeners_serve_side_by_side() {
    let sasl_port = common::free_port();
    let broker = Broker::start(BrokerOptions::default().arg(
        "--listen",
        format!("SASL_PLAINTEXT://127.0.0.1:{sasl_port}"),
    ));
    let inside = broker.bootstrap();
    let outside = format!("127.0.0.1:{sasl_port}");

    // The inside listener needs no login; it creates the user.
    let mut admin = RawClient::connect(&inside);
    assert_eq!(
        alter(
            &mut admin,
            vec![],
            vec![upsertion("carol", 2, 4096, "carol-secret")]
        ),
        vec![ok("carol")]
    );
    // The outside one closes a request sent without logging in, and serves
    // carol once she has.
    let mut anonymous = RawClient::connect(&outside);
    assert!(closed_silently(&outcome_of::<MetadataRequest>(
        &mut anonymous,
        ApiKey::Metadata,
        1
    )));
    let mut carol = login(&outside, SHA512, "carol", "carol-secret");

    for (client, port) in [(&mut admin, broker.port()), (&mut carol, sasl_port)] {
        let mut request = MetadataRequest::default();
        request.topics = Some(Vec::new());
        let metadata: MetadataResponse = client.request(ApiKey::Metadata, 12, &request);
        assert_eq!(
            metadata
                .brokers
                .iter()
                .map(|b| (b.host.to_string(), b.port))
                .collect::<Vec<_>>(),
            vec![("127.0.0.1".to_string(), i32::from(port))],
            "Metadata on the listener of port {port}"
        );
        let mut find = FindCoordinatorRequest::default();
        find.key = StrBytes::from_static_str("some-group");
        let coordinator: FindCoordinatorResponse =
            client.request(ApiKey::FindCoordinator, 3, &find);
        assert_eq!(coordinator.error_code, 0);
        assert_eq!(coordinator.port, i32::from(port), "FindCoordinator");
        let cluster: DescribeClusterResponse = client.request(
            ApiKey::DescribeCluster,
            1,
            &DescribeClusterRequest::default(),
        );
        assert_eq!(cluster.brokers[0].port, i32::from(port), "DescribeCluster");
    }

    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = 4;
    resource.resource_name = StrBytes::from_static_str("0");
    resource.configuration_keys = Some(vec![
        StrBytes::from_static_str("listeners"),
        StrBytes::from_static_str("advertised.listeners"),
    ]);
    let mut describe = DescribeConfigsRequest::default();
    describe.resources = vec![resource];
    let configs: DescribeConfigsResponse = carol.request(ApiKey::DescribeConfigs, 4, &describe);
    let both = format!("PLAINTEXT://{inside},SASL_PLAINTEXT://{outside}");
    let values: Vec<(String, String)> = configs.results[0]
        .configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        values,
        vec![
            ("advertised.listeners".to_string(), both.clone()),
            ("listeners".to_string(), both)
        ]
    );
}

/// Goal: with `connections.max.reauth.ms` a session lasts that long and is
/// renewed on the same connection by a fresh handshake and exchange, as
/// Kafka 4.1.1 (same setting, same requests) answered: SaslAuthenticate
/// gives the lifetime; a request after it closes the connection unless the
/// session was renewed; the first renewal may come at once, the next ones
/// a second apart (closer, the handshake gets ILLEGAL_SASL_STATE and the
/// session goes on); a renewal as another user is refused with Kafka's
/// message, one with another mechanism is closed unanswered, and a wrong
/// password's message says "re-authentication".
#[test]
fn sessions_end_after_connections_max_reauth_ms_unless_renewed_like_kafka() {
    let lifetime = Duration::from_millis(3000);
    let broker = Broker::start(
        BrokerOptions::default()
            .listen_protocol("SASL_PLAINTEXT")
            .arg("--connections-max-reauth-ms", lifetime.as_millis())
            .arg(
                "--add-scram",
                "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            )
            .arg(
                "--add-scram",
                "SCRAM-SHA-512=[name=alice,password=alice-secret]",
            )
            .arg(
                "--add-scram",
                "SCRAM-SHA-256=[name=bob,password=bob-secret]",
            ),
    );
    let bootstrap = broker.bootstrap();
    let illegal_sasl_state = 34;

    // As another user: refused, closed.
    let mut other = login(&bootstrap, SHA256, "alice", "alice-secret");
    let done = exchange(&mut other, SHA256, "bob", "bob-secret");
    assert_eq!(
        (done.error_code, done.error_message.map(|m| m.to_string())),
        (
            58,
            Some(
                "Cannot change principals during re-authentication from User.alice: User.bob"
                    .to_string()
            )
        )
    );
    assert!(closed_silently(&other.outcome_within(READ_TIMEOUT)));
    // With a wrong password: Kafka's message names the re-authentication.
    let mut wrong = login(&bootstrap, SHA256, "alice", "alice-secret");
    let done = exchange(&mut wrong, SHA256, "alice", "wrong");
    assert_eq!(
        (done.error_code, done.error_message.map(|m| m.to_string())),
        (
            58,
            Some(
                "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
                    .to_string()
            )
        )
    );
    // With another mechanism: the handshake is answered, the exchange
    // closed unanswered.
    let mut switched = login(&bootstrap, SHA256, "alice", "alice-secret");
    assert_eq!(sasl_handshake(&mut switched, SHA512, 1).0, 0);
    let scram = ScramClient::new(SHA512, "alice", "alice-secret", "");
    let correlation_id = switched.next_correlation_id();
    let mut request = SaslAuthenticateRequest::default();
    request.auth_bytes = Bytes::from(scram.first());
    let request = encode_request(ApiKey::SaslAuthenticate, 2, correlation_id, &request);
    switched.write_raw(&request).unwrap();
    assert!(closed_silently(&switched.outcome_within(READ_TIMEOUT)));

    // The lifetime is told; past it, a request closes the connection.
    let mut lapsed = RawClient::connect(&bootstrap);
    let started = Instant::now();
    let done = exchange(&mut lapsed, SHA256, "alice", "alice-secret");
    assert_eq!((done.error_code, done.session_lifetime_ms), (0, 3000));
    assert!(metadata_answers(&mut lapsed));

    // Renewed at once (the first renewal may come any time), then again a
    // second later: served past the first session's end.
    let mut renewed = RawClient::connect(&bootstrap);
    assert_eq!(
        exchange(&mut renewed, SHA256, "alice", "alice-secret").error_code,
        0
    );
    let done = exchange(&mut renewed, SHA256, "alice", "alice-secret");
    assert_eq!((done.error_code, done.session_lifetime_ms), (0, 3000));
    std::thread::sleep(Duration::from_millis(1100));
    let done = exchange(&mut renewed, SHA256, "alice", "alice-secret");
    assert_eq!((done.error_code, done.session_lifetime_ms), (0, 3000));
    // Too soon for another: the handshake is answered as any request.
    assert_eq!(
        sasl_handshake(&mut renewed, SHA256, 1).0,
        illegal_sasl_state
    );
    assert!(metadata_answers(&mut renewed));

    // The first connection's session has ended by now.
    std::thread::sleep(lifetime.saturating_sub(started.elapsed()) + Duration::from_millis(200));
    assert!(!metadata_answers(&mut lapsed), "served past its session");
    assert!(metadata_answers(&mut renewed), "the renewed session ended");

    // The broker describes the setting as set.
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = 4;
    resource.resource_name = StrBytes::from_static_str("0");
    resource.configuration_keys =
        Some(vec![StrBytes::from_static_str("connections.max.reauth.ms")]);
    let mut describe = DescribeConfigsRequest::default();
    describe.resources = vec![resource];
    let configs: DescribeConfigsResponse = renewed.request(ApiKey::DescribeConfigs, 4, &describe);
    let config = &configs.results[0].configs[0];
    assert_eq!(
        (
            config.value.as_ref().map(|v| v.to_string()),
            config.config_source
        ),
        // STATIC_BROKER_CONFIG, as a value in server.properties.
        (Some("3000".to_string()), 4)
    );
}

/// A v1 handshake and SaslAuthenticate v2 exchange logging in with a
/// delegation token (`tokenauth=true`): the last answer.
fn token_exchange(
    client: &mut RawClient,
    mechanism: &'static str,
    token_id: &str,
    hmac: &[u8],
) -> kafka_protocol::messages::SaslAuthenticateResponse {
    assert_eq!(sasl_handshake(client, mechanism, 1).0, 0);
    let mut scram = ScramClient::new(mechanism, token_id, &BASE64.encode(hmac), "");
    scram.bare.push_str(",tokenauth=true");
    let first = sasl_authenticate(client, &scram.first(), 2);
    if first.error_code != 0 {
        return first;
    }
    sasl_authenticate(client, &scram.last(&first.auth_bytes).0, 2)
}

/// Goal: delegation tokens on the wire as Kafka 4.1.1 answers them:
/// CreateDelegationToken and DescribeDelegationToken at every version
/// (the requester only from v3, measured; v1 and v2 answered, not
/// closed), an owner named without a type (UNKNOWN_SERVER_ERROR for
/// ANONYMOUS, -1 timestamps, measured), an unknown or oversized HMAC
/// (DELEGATION_TOKEN_NOT_FOUND, expiry 0, measured); a token login tells
/// the session's lifetime, which is the token's (Kafka's
/// `CREDENTIAL_LIFETIME_MS`): up to its expiry, and none at all for a token
/// expired but not yet swept, whose session ends at the next request.
#[test]
fn delegation_tokens_on_the_wire_like_kafka() {
    use kafka_protocol::messages::create_delegation_token_request::CreatableRenewers;
    use kafka_protocol::messages::{
        CreateDelegationTokenRequest, CreateDelegationTokenResponse,
        DescribeDelegationTokenRequest, DescribeDelegationTokenResponse,
        RenewDelegationTokenRequest, RenewDelegationTokenResponse,
    };
    let broker = Broker::start(
        BrokerOptions::default()
            .listen_protocol("SASL_PLAINTEXT")
            .arg("--delegation-token-secret-key", "wire-secret")
            .arg(
                "--add-scram",
                "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            ),
    );
    let bootstrap = broker.bootstrap();
    let mut alice = login(&bootstrap, SHA256, "alice", "alice-secret");
    let create = |client: &mut RawClient, version: i16, max_lifetime_ms: i64| {
        let mut request = CreateDelegationTokenRequest::default();
        request.max_lifetime_ms = max_lifetime_ms;
        let mut renewer = CreatableRenewers::default();
        renewer.principal_type = StrBytes::from_static_str("User");
        renewer.principal_name = StrBytes::from_static_str("bob");
        request.renewers = vec![renewer];
        let created: CreateDelegationTokenResponse =
            client.request(ApiKey::CreateDelegationToken, version, &request);
        assert_eq!(created.error_code, 0, "create v{version}");
        created
    };
    let mut tokens = Vec::new();
    for version in 1..=3 {
        let created = create(&mut alice, version, -1);
        assert_eq!(
            (
                created.principal_name.as_str(),
                created.token_requester_principal_name.as_str(),
                created.hmac.len(),
                created.max_timestamp_ms - created.issue_timestamp_ms,
                created.expiry_timestamp_ms - created.issue_timestamp_ms
            ),
            (
                "alice",
                if version >= 3 { "alice" } else { "" },
                64,
                604_800_000,
                86_400_000
            )
        );
        tokens.push(created);
    }
    let mut unnamed = CreateDelegationTokenRequest::default();
    unnamed.owner_principal_type = None;
    unnamed.owner_principal_name = Some(StrBytes::from_static_str("bob"));
    let refused: CreateDelegationTokenResponse =
        alice.request(ApiKey::CreateDelegationToken, 3, &unnamed);
    assert_eq!(
        (
            refused.error_code,
            refused.principal_type.as_str(),
            refused.principal_name.as_str(),
            refused.token_requester_principal_name.as_str(),
            refused.issue_timestamp_ms,
            refused.expiry_timestamp_ms,
            refused.max_timestamp_ms,
        ),
        (-1, "User", "ANONYMOUS", "ANONYMOUS", -1, -1, -1)
    );
    for version in 1..=3 {
        // No owner list: every token (an empty list: none).
        let mut describe = DescribeDelegationTokenRequest::default();
        describe.owners = None;
        let described: DescribeDelegationTokenResponse =
            alice.request(ApiKey::DescribeDelegationToken, version, &describe);
        assert_eq!(described.error_code, 0);
        assert_eq!(described.tokens.len(), 3, "describe v{version}");
        for token in &described.tokens {
            assert_eq!(token.principal_name.as_str(), "alice");
            assert_eq!(
                token.token_requester_principal_name.as_str(),
                if version >= 3 { "alice" } else { "" }
            );
            assert_eq!(token.renewers.len(), 1);
        }
    }
    for hmac in [vec![1u8, 2, 3], vec![7u8; 100_000]] {
        for version in 1..=2 {
            let mut renew = RenewDelegationTokenRequest::default();
            renew.hmac = Bytes::from(hmac.clone());
            let renewed: RenewDelegationTokenResponse =
                alice.request(ApiKey::RenewDelegationToken, version, &renew);
            assert_eq!((renewed.error_code, renewed.expiry_timestamp_ms), (62, 0));
        }
    }

    // A token's session lasts until the token expires.
    let token = &tokens[0];
    let mut session = RawClient::connect(&bootstrap);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let done = token_exchange(&mut session, SHA512, token.token_id.as_str(), &token.hmac);
    assert_eq!(done.error_code, 0, "{:?}", done.error_message);
    let until_expiry = token.expiry_timestamp_ms - now;
    assert!(
        done.session_lifetime_ms <= until_expiry
            && done.session_lifetime_ms > until_expiry - 60_000,
        "session lifetime {} for a token expiring in {until_expiry} ms",
        done.session_lifetime_ms
    );
    assert!(metadata_answers(&mut session));
    // A wrong HMAC or an unknown token id fails as any wrong password.
    let mut wrong = RawClient::connect(&bootstrap);
    let done = token_exchange(&mut wrong, SHA256, token.token_id.as_str(), &tokens[1].hmac);
    assert_eq!(done.error_code, 58);
    let mut unknown = RawClient::connect(&bootstrap);
    let done = token_exchange(&mut unknown, SHA256, "no-such-token", &token.hmac);
    assert_eq!(done.error_code, 58);

    // Expired, not yet swept (the sweep is hourly): logs in for no time.
    let short = create(&mut alice, 3, 200);
    std::thread::sleep(Duration::from_millis(400));
    let mut lapsed = RawClient::connect(&bootstrap);
    let done = token_exchange(&mut lapsed, SHA256, short.token_id.as_str(), &short.hmac);
    assert_eq!((done.error_code, done.session_lifetime_ms), (0, 0));
    assert!(!metadata_answers(&mut lapsed));
}
