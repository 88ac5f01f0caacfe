//! Goal: on a SASL_PLAINTEXT listener with PLAIN enabled, clients log in
//! with the users of Kafka's JAAS configuration
//! (`PlainLoginModule required user_NAME="PASSWORD"`), as with Kafka: the
//! exchange on the wire (handshake v0 and v1, SaslAuthenticate v0-v2, every
//! refusal, its message, and when the connection closes) is what Kafka
//! 4.1.1 answered to the same messages; the user is the principal ACLs are
//! judged by; a broker told to take PLAIN without users, or with a JAAS
//! text Kafka refuses, does not start.
//!
//! Method: a broker with `--sasl-enabled-mechanisms
//! SCRAM-SHA-512,PLAIN,SCRAM-SHA-256` and its users in a JAAS file
//! (`--jaas-config-file`, Kafka's kafka_server_jaas.conf); a raw client
//! sending PLAIN messages, the answers compared with those recorded from
//! Kafka 4.1.1 with the same mechanisms and
//! `listener.name.sasl_plaintext.plain.sasl.jaas.config`. Real clients
//! (kcat, confluent-kafka, kafka-python, the Java client) are in
//! tests/python/test_sasl_plain.py.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest};

use common::wire::{
    closed_silently, create_topic, encode_request, frame, metadata_answers, sasl_authenticate,
    sasl_handshake, RawClient, READ_TIMEOUT,
};
use common::{Broker, BrokerOptions};

const JAAS_FILE: &str = r#"
// As Kafka's documentation writes kafka_server_jaas.conf.
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice-secret"
    user_e="";
};
"#;

/// The mechanisms in the order Kafka 4.1.1 listed them for
/// `sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN,SCRAM-SHA-256`.
const LISTED: [&str; 3] = ["SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"];

fn plain_broker(extra: &[(&str, &str)]) -> Broker {
    let dir = tempfile::tempdir().expect("temp dir");
    let jaas = dir.path().join("kafka_server_jaas.conf");
    std::fs::write(&jaas, JAAS_FILE).expect("write the JAAS file");
    let mut options = BrokerOptions::default()
        .listen_protocol("SASL_PLAINTEXT")
        .arg(
            "--sasl-enabled-mechanisms",
            "SCRAM-SHA-512,PLAIN,SCRAM-SHA-256",
        )
        .arg("--jaas-config-file", jaas.display());
    for (flag, value) in extra {
        options = options.arg(flag, value);
    }
    let broker = Broker::start(options);
    // The file is read at start-up only.
    drop(dir);
    broker
}

fn login(bootstrap: &str, user: &str, password: &str) -> RawClient {
    let mut client = RawClient::connect(bootstrap);
    assert_eq!(sasl_handshake(&mut client, "PLAIN", 1).0, 0);
    let done = sasl_authenticate(&mut client, format!("\0{user}\0{password}").as_bytes(), 2);
    assert_eq!(done.error_code, 0, "{user}: {:?}", done.error_message);
    client
}

/// Goal: every PLAIN answer as Kafka 4.1.1 gave it.
#[test]
fn the_plain_exchange_answers_as_kafka_does() {
    let broker = plain_broker(&[]);
    let bootstrap = broker.bootstrap();
    let listed: Vec<String> = LISTED.iter().map(|m| m.to_string()).collect();

    // Success, with each SaslAuthenticate version: no error, an empty
    // message (not null), no bytes, no session lifetime; then requests are
    // served, and another SaslAuthenticate is ILLEGAL_SASL_STATE (34).
    for (message, version) in [
        (&b"\0alice\0alice-secret"[..], 0),
        (b"\0alice\0alice-secret", 1),
        (b"alice\0alice\0alice-secret", 2),
        (b"\0admin\0admin-secret", 1),
    ] {
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(sasl_handshake(&mut client, "PLAIN", 1), (0, listed.clone()));
        let done = sasl_authenticate(&mut client, message, version);
        assert_eq!(done.error_code, 0, "{message:?}: {:?}", done.error_message);
        assert_eq!(done.error_message.as_deref(), Some(""));
        assert!(done.auth_bytes.is_empty());
        assert_eq!(done.session_lifetime_ms, 0);
        assert!(metadata_answers(&mut client), "served after login");
        let again = sasl_authenticate(&mut client, message, version);
        assert_eq!(again.error_code, 34);
        assert_eq!(
            again.error_message.as_deref(),
            Some("SaslAuthenticate request received after successful authentication")
        );
        assert!(metadata_answers(&mut client), "still open");
    }

    // Refusals: SASL_AUTHENTICATION_FAILED (58) with PlainSaslServer's
    // message, after the failed-authentication delay; then closed.
    let refusals: [(&[u8], &str); 16] = [
        (b"bob\0alice\0alice-secret", "Authentication failed: Client requested an authorization id that is different from username"),
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0nobody\0alice-secret", "Authentication failed: Invalid username or password"),
        (b"\0\0x", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        // A user configured with an empty password cannot log in.
        (b"\0e\0", "Authentication failed: password not specified"),
        (b"\0e\0x", "Authentication failed: Invalid username or password"),
        (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"\0alice\0alice-secret\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"\0alice\0alice-secret\0x\0y\0z", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"\0alice\0alice-secret\xff", "Authentication failed: Invalid username or password"),
        (b"\0\xffalice\0alice-secret", "Authentication failed: Invalid username or password"),
        // The password is checked before the authorization id.
        (b"bob\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0\0", "Authentication failed: username not specified"),
    ];
    for (message, expected) in refusals {
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(sasl_handshake(&mut client, "PLAIN", 1).0, 0);
        let started = Instant::now();
        let failed = sasl_authenticate(&mut client, message, 1);
        assert!(
            started.elapsed() >= Duration::from_millis(90),
            "{message:?}: answered after the delay"
        );
        assert_eq!(
            (failed.error_code, failed.error_message.as_deref()),
            (58, Some(expected)),
            "{message:?}"
        );
        assert!(failed.auth_bytes.is_empty());
        assert!(
            closed_silently(&client.outcome_within(READ_TIMEOUT)),
            "{message:?}: closed"
        );
    }

    // A v0 handshake: the message comes bare; success is answered with an
    // empty token and the connection serves on; a failure closes it
    // without an answer.
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(sasl_handshake(&mut client, "PLAIN", 0), (0, listed.clone()));
    client.write_raw(&frame(b"\0alice\0alice-secret")).unwrap();
    assert_eq!(client.read_frame().expect("an empty token"), b"".to_vec());
    assert!(metadata_answers(&mut client), "served after a v0 login");
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(sasl_handshake(&mut client, "PLAIN", 0).0, 0);
    client.write_raw(&frame(b"\0alice\0bad")).unwrap();
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));

    // Mechanism names are exact: "plain" is not enabled.
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(
        sasl_handshake(&mut client, "plain", 1),
        (33, listed.clone())
    );
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));

    // Garbage of every length never takes the broker down.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for length in 0..200usize {
        let message: Vec<u8> = (0..length)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // NULs often enough to make three tokens.
                if seed % 5 == 0 {
                    0
                } else {
                    seed as u8
                }
            })
            .collect();
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(sasl_handshake(&mut client, "PLAIN", 1).0, 0);
        let correlation_id = client.next_correlation_id();
        let mut request = SaslAuthenticateRequest::default();
        request.auth_bytes = Bytes::from(message);
        client
            .write_raw(&encode_request(
                ApiKey::SaslAuthenticate,
                2,
                correlation_id,
                &request,
            ))
            .unwrap();
    }
    let mut alice = login(&bootstrap, "alice", "alice-secret");
    assert!(metadata_answers(&mut alice), "serving after the garbage");
}

/// Goal: a PLAIN user is the principal `User:<name>` the authorizer judges,
/// and `--plain-sasl-jaas-config` (Kafka's listener property) takes
/// precedence over the JAAS file, as Kafka's does.
#[test]
fn plain_users_are_principals_and_the_property_wins() {
    let broker = plain_broker(&[
        (
            "--authorizer-class-name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("--super-users", "User:admin"),
        (
            "--plain-sasl-jaas-config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"other-secret\" user_carol=\"carol-secret\";",
        ),
    ]);
    let bootstrap = broker.bootstrap();
    // The property's users, not the file's.
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(sasl_handshake(&mut client, "PLAIN", 1).0, 0);
    let refused = sasl_authenticate(&mut client, b"\0alice\0alice-secret", 2);
    assert_eq!(refused.error_code, 58);
    let mut admin = login(&bootstrap, "admin", "other-secret");
    let mut carol = login(&bootstrap, "carol", "carol-secret");
    // User:admin is a super user; User:carol has no ACL: TOPIC_AUTHORIZATION_FAILED (29).
    assert_eq!(create_topic(&mut admin, "by-admin"), 0);
    assert_eq!(create_topic(&mut carol, "by-carol"), 29);
}

/// Goal: PLAIN enabled without users, or with a JAAS text Kafka refuses,
/// stops the start-up with the reason, as Kafka's does.
#[test]
fn plain_without_users_does_not_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let refuse = |extra: &[&str], expected: &str| {
        let listener = [
            "--listen",
            "SASL_PLAINTEXT://127.0.0.1:0",
            "--sasl-enabled-mechanisms",
            "PLAIN",
        ];
        common::assert_refuses_to_start(&[&listener[..], extra].concat(), expected);
    };
    refuse(&[], "no JAAS configuration names its users");
    refuse(
        &["--plain-sasl-jaas-config", "x.Y required user_a=1;"],
        "Value not specified for key 'user_a' in JAAS config",
    );
    refuse(
        &["--plain-sasl-jaas-config", "x.Y required user_a=\"b\""],
        "JAAS config entry not terminated by semi-colon",
    );
    let client_only = dir.path().join("client.conf");
    std::fs::write(&client_only, "KafkaClient { a.B required; };").unwrap();
    refuse(
        &["--jaas-config-file", client_only.to_str().unwrap()],
        "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration",
    );
    refuse(
        &["--jaas-config-file", "/nonexistent/jaas.conf"],
        "cannot read /nonexistent/jaas.conf",
    );
}
