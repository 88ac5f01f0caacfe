//! Goal: on a SASL_PLAINTEXT listener with OAUTHBEARER enabled, the
//! exchange on the wire is what Kafka 4.1.1 answered to the same messages:
//! a valid token is taken with a session lifetime no longer than the token;
//! a token that is not valid is answered with the challenge
//! `{"status":"invalid_token"}`, and the client's 0x01 after it with
//! SASL_AUTHENTICATION_FAILED and that text (a new token after the
//! challenge is tried instead); a malformed first message fails with
//! Kafka's message, another scheme than Bearer closes the connection; the
//! token's subject is the principal the authorizer judges; a broker whose
//! OAUTHBEARER would take unsigned tokens without a JAAS entry saying so, or
//! whose JWKS cannot be had, does not start.
//!
//! Method: a broker whose `--sasl-oauthbearer-jwks-endpoint-url` is a
//! `file:` JWKS of a P-256 key made here, with an expected audience and
//! issuer; ES256 tokens signed with it (and with a key it does not have);
//! the answers compared with those Kafka 4.1.1 gave for the same cases with
//! `OAuthBearerValidatorCallbackHandler` (RS256 keys from an HTTP JWKS
//! there: the checks are the same). Real clients are in
//! tests/python/test_sasl_oauthbearer.py.

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use kafka_protocol::messages::ApiKey;
use serde_json::json;

use common::wire::{
    closed_silently, create_topic, frame, metadata_answers, sasl_authenticate, sasl_handshake,
    RawClient, READ_TIMEOUT,
};
use common::{Broker, BrokerOptions};

const AUDIENCE: &str = "kafka-broker";
const ISSUER: &str = "https://issuer.ringbroker.test";
const INVALID_TOKEN: &str = r#"{"status":"invalid_token"}"#;
const MALFORMED: &str =
    "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER";

/// A P-256 signing key and its JWK.
struct Key {
    pair: rcgen::KeyPair,
    kid: &'static str,
}

impl Key {
    fn new(kid: &'static str) -> Self {
        Key {
            pair: rcgen::KeyPair::generate().expect("a P-256 key"),
            kid,
        }
    }

    fn jwk(&self) -> serde_json::Value {
        // Uncompressed point: 0x04 | x | y.
        let raw = self.pair.public_key_raw();
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        json!({"kty": "EC", "crv": "P-256", "x": b64(&raw[1..33]), "y": b64(&raw[33..65]),
               "kid": self.kid, "use": "sig", "alg": "ES256"})
    }

    /// A token with the usual claims (for `sub`, an hour long), `changes`
    /// applied (a null removes a claim).
    fn token(&self, sub: &str, changes: serde_json::Value) -> String {
        self.token_with_kid(Some(self.kid), sub, changes)
    }

    fn token_with_kid(&self, kid: Option<&str>, sub: &str, changes: serde_json::Value) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut claims =
            json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 3600});
        for (name, value) in changes.as_object().unwrap() {
            if value.is_null() {
                claims.as_object_mut().unwrap().remove(name);
            } else {
                claims[name] = value.clone();
            }
        }
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = kid.map(str::to_string);
        let key = jsonwebtoken::EncodingKey::from_ec_der(&self.pair.serialize_der());
        jsonwebtoken::encode(&header, &claims, &key).expect("signed")
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The client's first message for `token` (RFC 7628).
fn first(token: &str) -> Vec<u8> {
    format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
}

fn oauth_broker(key: &Key, extra: &[(&str, &str)]) -> (Broker, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [key.jwk()]}).to_string()).expect("write the JWKS");
    let mut options = BrokerOptions::default()
        .listen_protocol("SASL_PLAINTEXT")
        .arg("--sasl-enabled-mechanisms", "OAUTHBEARER,SCRAM-SHA-256")
        .arg(
            "--sasl-oauthbearer-jwks-endpoint-url",
            format!("file://{}", jwks.display()),
        )
        .arg("--sasl-oauthbearer-expected-audience", AUDIENCE)
        .arg("--sasl-oauthbearer-expected-issuer", ISSUER);
    for (flag, value) in extra {
        options = options.arg(flag, value);
    }
    (Broker::start(options), dir)
}

/// Goal: every answer of the exchange as Kafka 4.1.1 gave it.
#[test]
fn the_oauthbearer_exchange_answers_as_kafka_does() {
    let key = Key::new("key-1");
    let (broker, _dir) = oauth_broker(&key, &[]);
    let bootstrap = broker.bootstrap();
    let exchange = |message: &[u8]| {
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(
            sasl_handshake(&mut client, "OAUTHBEARER", 1),
            (
                0,
                vec!["OAUTHBEARER".to_string(), "SCRAM-SHA-256".to_string()]
            )
        );
        let answer = sasl_authenticate(&mut client, message, 2);
        (client, answer)
    };

    // Taken: no error, an empty message, no bytes; the session lasts as
    // long as the token (Kafka: even with connections.max.reauth.ms unset).
    for (what, token, lifetime_s) in [
        ("valid", key.token("alice", json!({})), 3600),
        (
            "10 s",
            key.token("alice", json!({"exp": now_secs() + 10})),
            10,
        ),
        ("no kid", key.token_with_kid(None, "alice", json!({})), 3600),
        (
            "audience list",
            key.token("alice", json!({"aud": ["x", AUDIENCE]})),
            3600,
        ),
        (
            "iat ahead",
            key.token("alice", json!({"iat": now_secs() + 600})),
            3600,
        ),
        (
            "nbf within skew",
            key.token("alice", json!({"nbf": now_secs() + 20})),
            3600,
        ),
        (
            "fractional exp",
            key.token("alice", json!({"exp": now_secs() as f64 + 100.5})),
            100,
        ),
        (
            "scope list",
            key.token("alice", json!({"scope": ["a", "b"]})),
            3600,
        ),
        (
            "scope number",
            key.token("alice", json!({"scope": 5})),
            3600,
        ),
    ] {
        let (mut client, done) = exchange(&first(&token));
        assert_eq!(done.error_code, 0, "{what}: {:?}", done.error_message);
        assert_eq!(done.error_message.as_deref(), Some(""), "{what}");
        assert!(done.auth_bytes.is_empty(), "{what}");
        let expected = lifetime_s * 1000;
        assert!(
            (expected - 2000..=expected + 1000).contains(&done.session_lifetime_ms),
            "{what}: lifetime {}",
            done.session_lifetime_ms
        );
        assert!(metadata_answers(&mut client), "{what}: served");
    }
    // Extensions and an authorization id that is the principal are taken.
    let token = key.token("alice", json!({}));
    let message = format!("n,a=alice,\u{1}auth=Bearer {token}\u{1}traceId=a b\u{1}x=1\u{1}\u{1}");
    assert_eq!(exchange(message.as_bytes()).1.error_code, 0);

    // Not taken: the challenge, answered at once, then SASL_AUTHENTICATION_FAILED
    // (58) with its text when the client sends 0x01, after the delay; closed.
    let other = Key::new("key-1");
    for (what, token) in [
        (
            "expired",
            key.token("alice", json!({"exp": now_secs() - 1})),
        ),
        (
            "other audience",
            key.token("alice", json!({"aud": "other"})),
        ),
        ("no audience", key.token("alice", json!({"aud": null}))),
        ("other issuer", key.token("alice", json!({"iss": "x"}))),
        ("no issuer", key.token("alice", json!({"iss": null}))),
        ("no subject", key.token("alice", json!({"sub": null}))),
        ("empty subject", key.token("", json!({}))),
        ("numeric subject", key.token("alice", json!({"sub": 5}))),
        ("no exp", key.token("alice", json!({"exp": null}))),
        ("exp not a number", key.token("alice", json!({"exp": "x"}))),
        ("no iat", key.token("alice", json!({"iat": null}))),
        (
            "nbf ahead",
            key.token("alice", json!({"nbf": now_secs() + 600})),
        ),
        (
            "unknown kid",
            key.token_with_kid(Some("nope"), "alice", json!({})),
        ),
        ("another key", other.token("alice", json!({}))),
        ("unsigned", {
            let b64 = |v: serde_json::Value| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
            };
            format!(
                "{}.{}.",
                b64(json!({"alg": "none"})),
                b64(
                    json!({"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now_secs(), "exp": now_secs() + 60})
                )
            )
        }),
        ("garbage", "abc".to_string()),
    ] {
        let (mut client, challenge) = exchange(&first(&token));
        assert_eq!(challenge.error_code, 0, "{what}");
        assert_eq!(
            challenge.auth_bytes.as_ref(),
            INVALID_TOKEN.as_bytes(),
            "{what}"
        );
        assert_eq!(challenge.session_lifetime_ms, 0, "{what}");
        let started = Instant::now();
        let failed = sasl_authenticate(&mut client, b"\x01", 2);
        assert!(
            started.elapsed() >= Duration::from_millis(90),
            "{what}: after the delay"
        );
        assert_eq!(
            (failed.error_code, failed.error_message.as_deref()),
            (58, Some(INVALID_TOKEN)),
            "{what}"
        );
        assert!(
            closed_silently(&client.outcome_within(READ_TIMEOUT)),
            "{what}: closed"
        );
    }

    // After a challenge, another first message is tried afresh.
    let (mut client, challenge) = exchange(&first("abc"));
    assert_eq!(challenge.auth_bytes.as_ref(), INVALID_TOKEN.as_bytes());
    let done = sasl_authenticate(&mut client, &first(&key.token("alice", json!({}))), 2);
    assert_eq!(done.error_code, 0);
    assert!(metadata_answers(&mut client));
    // ... and anything else than 0x01 that is not one fails as malformed.
    let (mut client, _) = exchange(&first("abc"));
    let failed = sasl_authenticate(&mut client, b"\x02", 2);
    assert_eq!(
        (failed.error_code, failed.error_message.as_deref()),
        (58, Some(MALFORMED))
    );

    // An authorization id other than the token's subject.
    let token = key.token("alice", json!({}));
    let message = format!("n,a=bob,\u{1}auth=Bearer {token}\u{1}\u{1}");
    let (mut client, failed) = exchange(message.as_bytes());
    assert_eq!(
        (failed.error_code, failed.error_message.as_deref()),
        (58, Some("Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"))
    );
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));

    // Malformed first messages: Kafka's message, then closed.
    let token = key.token("alice", json!({}));
    for message in [
        Vec::new(),
        b"n,,\x01\x01".to_vec(),
        format!("y,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes(),
        format!("n,,\u{1}auth=Bearer {token}\u{1}").into_bytes(),
        format!("n,a=,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes(),
        format!("n,,\u{1}auth=Bearer {token}\u{1}f1=x\u{1}\u{1}").into_bytes(),
        format!("n,,\u{1}auth=Bearer {token}\u{1}a=\u{1}\u{1}").into_bytes(),
        format!("n,,\u{1}auth=Bearer {token}\u{1}auth=x\u{1}\u{1}").into_bytes(),
        b"n,,\x01auth=Bearer a b\x01\x01".to_vec(),
    ] {
        let (mut client, failed) = exchange(&message);
        assert_eq!(
            (failed.error_code, failed.error_message.as_deref()),
            (58, Some(MALFORMED)),
            "{message:?}"
        );
        assert!(
            closed_silently(&client.outcome_within(READ_TIMEOUT)),
            "{message:?}"
        );
    }
    // Another scheme: Kafka closes the connection without an answer.
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(sasl_handshake(&mut client, "OAUTHBEARER", 1).0, 0);
    let correlation_id = client.next_correlation_id();
    client
        .write_raw(&common::wire::encode_request(
            ApiKey::SaslAuthenticate,
            2,
            correlation_id,
            &{
                let mut request = kafka_protocol::messages::SaslAuthenticateRequest::default();
                request.auth_bytes = bytes::Bytes::from_static(b"n,,\x01auth=Basic abc\x01\x01");
                request
            },
        ))
        .unwrap();
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));

    // A v0 handshake: bare tokens; the challenge comes bare too, and the
    // 0x01 after it closes the connection unanswered.
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(sasl_handshake(&mut client, "OAUTHBEARER", 0).0, 0);
    client
        .write_raw(&frame(&first(&key.token("alice", json!({})))))
        .unwrap();
    assert_eq!(client.read_frame().expect("an empty token"), b"".to_vec());
    assert!(metadata_answers(&mut client), "served after a v0 login");
    let mut client = RawClient::connect(&bootstrap);
    assert_eq!(sasl_handshake(&mut client, "OAUTHBEARER", 0).0, 0);
    client.write_raw(&frame(&first("abc"))).unwrap();
    assert_eq!(
        client.read_frame().expect("the challenge"),
        INVALID_TOKEN.as_bytes().to_vec()
    );
    client.write_raw(&frame(b"\x01")).unwrap();
    assert!(closed_silently(&client.outcome_within(READ_TIMEOUT)));
}

/// Goal: the token's subject (or the claim `--sasl-oauthbearer-sub-claim-name`
/// names) is the principal `User:<name>` the authorizer judges; a session
/// ends with its token, or at `connections.max.reauth.ms` when that comes
/// first, and the connection is closed at the next request after.
#[test]
fn the_token_subject_is_the_principal_and_the_session_ends_with_the_token() {
    let key = Key::new("k");
    let (broker, _dir) = oauth_broker(
        &key,
        &[
            (
                "--authorizer-class-name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            ("--super-users", "User:admin"),
            ("--sasl-oauthbearer-sub-claim-name", "email"),
            ("--connections-max-reauth-ms", "60000"),
        ],
    );
    let bootstrap = broker.bootstrap();
    let login = |email: &str, lifetime_s: f64| {
        let mut client = RawClient::connect(&bootstrap);
        assert_eq!(sasl_handshake(&mut client, "OAUTHBEARER", 1).0, 0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let token = key.token("ignored", json!({"email": email, "exp": now + lifetime_s}));
        let done = sasl_authenticate(&mut client, &first(&token), 2);
        assert_eq!(done.error_code, 0, "{email}");
        (client, done.session_lifetime_ms)
    };
    let (mut admin, lifetime) = login("admin", 3600.0);
    // connections.max.reauth.ms comes first.
    assert_eq!(lifetime, 60_000);
    let (mut carol, _) = login("carol", 3600.0);
    assert_eq!(create_topic(&mut admin, "by-admin"), 0);
    // No ACL for User:carol: TOPIC_AUTHORIZATION_FAILED (29).
    assert_eq!(create_topic(&mut carol, "by-carol"), 29);
    // A 3 s token: its session ends with it.
    let (mut short, lifetime) = login("admin", 3.0);
    assert!((2000..=3001).contains(&lifetime), "{lifetime}");
    assert!(metadata_answers(&mut short));
    std::thread::sleep(Duration::from_millis(3500));
    assert!(
        !metadata_answers(&mut short),
        "closed once the token expired"
    );
}

/// Goal: OAUTHBEARER that would take unsigned tokens without a JAAS entry
/// saying so, or whose JWKS cannot be read, stops the start-up with the
/// reason; with the JAAS entry, unsigned tokens are taken (Kafka's default
/// validator) and its options apply.
#[test]
fn oauthbearer_without_keys_or_jaas_entry_does_not_start() {
    let refuse = |extra: &[&str], expected: &str| {
        let listener = [
            "--listen",
            "SASL_PLAINTEXT://127.0.0.1:0",
            "--sasl-enabled-mechanisms",
            "OAUTHBEARER",
        ];
        common::assert_refuses_to_start(&[&listener[..], extra].concat(), expected);
    };
    refuse(&[], "it would take unsigned tokens");
    refuse(
        &[
            "--oauthbearer-sasl-jaas-config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required;",
        ],
        "no org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule entry",
    );
    refuse(
        &["--oauthbearer-sasl-jaas-config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorAllowableClockSkewMs=\"-1\";"],
        "unsecuredValidatorAllowableClockSkewMs",
    );
    refuse(
        &[
            "--sasl-oauthbearer-jwks-endpoint-url",
            "file:///nonexistent/jwks.json",
        ],
        "cannot read /nonexistent/jwks.json",
    );
    refuse(
        &[
            "--sasl-oauthbearer-jwks-endpoint-url",
            "http://127.0.0.1:1/jwks",
            "--sasl-oauthbearer-jwks-endpoint-retry-backoff-max-ms",
            "300",
        ],
        "Could not refresh JWKS from http://127.0.0.1:1/jwks",
    );

    // With the JAAS entry: unsigned tokens, the entry's options.
    let broker = Broker::start(
        BrokerOptions::default()
            .listen_protocol("SASL_PLAINTEXT")
            .arg("--sasl-enabled-mechanisms", "OAUTHBEARER")
            .arg(
                "--oauthbearer-sasl-jaas-config",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                 unsecuredValidatorPrincipalClaimName=\"user\" unsecuredValidatorRequiredScope=\"kafka\";",
            ),
    );
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let unsigned =
        |claims: serde_json::Value| format!("{}.{}.", b64(json!({"alg": "none"})), b64(claims));
    let attempt = |token: &str| {
        let mut client = RawClient::connect(&broker.bootstrap());
        assert_eq!(sasl_handshake(&mut client, "OAUTHBEARER", 1).0, 0);
        sasl_authenticate(&mut client, &first(token), 2)
    };
    let now = now_secs();
    let taken = attempt(&unsigned(
        json!({"user": "alice", "exp": now + 30, "scope": ["kafka"]}),
    ));
    assert_eq!(taken.error_code, 0);
    assert!((28_000..=30_000).contains(&taken.session_lifetime_ms));
    // The scope claim as a string is one scope, not split (measured).
    for scope in [json!("other"), json!("kafka other")] {
        let refused = attempt(&unsigned(
            json!({"user": "alice", "exp": now + 30, "scope": scope}),
        ));
        assert_eq!(
            refused.auth_bytes.as_ref(),
            br#"{"status":"insufficient_scope", "scope":"[kafka]"}"#
        );
    }
    // The principal claim is the JAAS option's.
    let refused = attempt(&unsigned(
        json!({"sub": "alice", "exp": now + 30, "scope": "kafka"}),
    ));
    assert_eq!(refused.auth_bytes.as_ref(), INVALID_TOKEN.as_bytes());
}
