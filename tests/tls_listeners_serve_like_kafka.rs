//! Goal: SSL and SASL_SSL listeners, served from a PEM keystore (Kafka's
//! `ssl.keystore.type=PEM`, `ssl.keystore.location`), speak Kafka over TLS
//! beside a PLAINTEXT listener: each answers with its own address; records
//! produced over TLS are fetched back over TLS identical, from memory and,
//! after a restart, from the segment files (the splice path, which writes
//! into the TLS relay); SASL_SSL serves nothing before login; a client that
//! speaks plain Kafka to a TLS port, or never finishes its handshake, is
//! closed and the broker serves on; a TLS listener without a usable PEM
//! keystore stops the start-up; a client that stops reading is closed
//! after `connections.max.idle.ms` and does not hold up shutdown.
//!
//! Method: certificates made here (a CA, and a server certificate for
//! 127.0.0.1 it signed); a raw Kafka client over rustls trusting that CA.
//! Kafka 4.1.1 with the same keystore answered the same requests alike
//! (and, to plain Kafka on its TLS port, a TLS alert and a close, as here).
//! Real clients over TLS are in tests/python/test_tls.py.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, CreateTopicsResponse, FetchRequest,
    FetchResponse, MetadataRequest, MetadataResponse, ProduceResponse, ResponseHeader,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

use common::wire::{
    api_versions_v0_frames, create_topic_request, encode_batch, encode_request, plain_record,
    produce_request, read_until_closed, Outcome, RawClient,
};
use common::{wait_until, Broker, BrokerOptions};

const TOPIC: &str = "over-tls";
const RECORDS: usize = 2000;

/// A CA's certificate, and a PEM keystore (key, then certificate) for
/// 127.0.0.1 and localhost signed by it.
fn certificates() -> (CertificateDer<'static>, String) {
    let (ca, keystore, _, _) = certificates_with_client();
    (ca, keystore)
}

/// [`certificates`], and a client certificate the CA signed with its key,
/// whose subject is that of `openssl req -subj "/C=US/O=acme,
/// inc/OU=eng/CN=client one/emailAddress=c@x.io/DC=example"`; and the CA
/// in PEM.
fn certificates_with_client() -> (
    CertificateDer<'static>,
    String,
    (CertificateDer<'static>, PrivateKeyDer<'static>),
    String,
) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, DnValue, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "ringbroker-test-ca");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    // rcgen starts with a CN of its own; the subject is built afresh.
    client_params.distinguished_name = rcgen::DistinguishedName::new();
    let dn = &mut client_params.distinguished_name;
    dn.push(
        DnType::CountryName,
        DnValue::PrintableString("US".try_into().unwrap()),
    );
    dn.push(DnType::OrganizationName, "acme, inc");
    dn.push(DnType::OrganizationalUnitName, "eng");
    dn.push(DnType::CommonName, "client one");
    dn.push(
        DnType::CustomDnType(vec![1, 2, 840, 113_549, 1, 9, 1]),
        DnValue::Ia5String("c@x.io".try_into().unwrap()),
    );
    dn.push(
        DnType::CustomDnType(vec![0, 9, 2342, 19_200_300, 100, 1, 25]),
        DnValue::Ia5String("example".try_into().unwrap()),
    );
    let client = client_params.signed_by(&client_key, &ca, &ca_key).unwrap();
    (
        ca.der().clone(),
        format!("{}{}", server_key.serialize_pem(), server.pem()),
        (
            client.der().clone(),
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(client_key.serialize_der())),
        ),
        ca.pem(),
    )
}

/// A Kafka client over TLS.
struct TlsClient {
    stream: rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
    next_correlation_id: i32,
}

impl TlsClient {
    fn connect(address: &str, ca: &CertificateDer<'static>) -> TlsClient {
        TlsClient::try_connect(address, ca, None).expect("TLS handshake with the broker")
    }

    /// A TLS connection trusting `ca`, with the client certificate and key
    /// `identity` if given.
    fn try_connect(
        address: &str,
        ca: &CertificateDer<'static>,
        identity: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
    ) -> Result<TlsClient, std::io::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.clone()).unwrap();
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match identity {
            Some((certificate, key)) => builder
                .with_client_auth_cert(vec![certificate], key)
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let mut connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let mut tcp = TcpStream::connect(address).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        while connection.is_handshaking() {
            connection.complete_io(&mut tcp)?;
        }
        Ok(TlsClient {
            stream: rustls::StreamOwned::new(connection, tcp),
            next_correlation_id: 1,
        })
    }

    fn send<Req: Encodable>(&mut self, api_key: ApiKey, version: i16, body: &Req) -> i32 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let frame = encode_request(api_key, version, correlation_id, body);
        self.stream.write_all(&frame).unwrap();
        self.stream.flush().unwrap();
        correlation_id
    }

    /// The next response frame, or None when the broker closed; panics
    /// when it stays silent for the read timeout.
    fn read_frame(&mut self) -> Option<Vec<u8>> {
        let mut size = [0u8; 4];
        let read = self.stream.read_exact(&mut size).and_then(|()| {
            let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
            self.stream.read_exact(&mut frame).map(|()| frame)
        });
        match read {
            Ok(frame) => Some(frame),
            Err(e) => {
                assert!(
                    !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    "neither answered nor closed: {e}"
                );
                None
            }
        }
    }

    fn request<Req: Encodable, Resp: Decodable>(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: &Req,
    ) -> Resp {
        let correlation_id = self.send(api_key, version, body);
        let mut frame = Bytes::from(
            self.read_frame()
                .unwrap_or_else(|| panic!("{api_key:?}: closed")),
        );
        let header =
            ResponseHeader::decode(&mut frame, api_key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, correlation_id);
        let response = Resp::decode(&mut frame, version).unwrap();
        assert_eq!(frame.remaining(), 0, "{api_key:?}: bytes left over");
        response
    }

    /// The (host, port) Metadata gives for the broker.
    fn advertised(&mut self) -> (String, i32) {
        let metadata: MetadataResponse =
            self.request(ApiKey::Metadata, 12, &MetadataRequest::default());
        (
            metadata.brokers[0].host.to_string(),
            metadata.brokers[0].port,
        )
    }
}

fn tls_broker(
    keystore: &std::path::Path,
    sasl_ssl_port: u16,
    plaintext_port: u16,
    metrics_port: u16,
) -> Broker {
    Broker::start(
        BrokerOptions::default()
            .arg("--metrics-listen", format!("127.0.0.1:{metrics_port}"))
            .listen_protocol("SSL")
            .arg("--listen", format!("SASL_SSL://127.0.0.1:{sasl_ssl_port}"))
            .arg("--listen", format!("127.0.0.1:{plaintext_port}"))
            .arg("--ssl-keystore-location", keystore.display())
            .arg("--sasl-enabled-mechanisms", "PLAIN")
            .arg(
                "--plain-sasl-jaas-config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";",
            )
            .arg("--request-read-timeout-ms", 2000),
    )
}

fn values() -> Vec<Bytes> {
    (0..RECORDS)
        .map(|i| Bytes::from(format!("{i:06}-{}", "x".repeat(1000 + i % 97))))
        .collect()
}

/// Fetches the whole partition from offset 0 over `client`.
fn fetch_all(client: &mut TlsClient) -> Vec<Bytes> {
    let mut got = Vec::new();
    while got.len() < RECORDS {
        let mut partition = FetchPartition::default();
        partition.partition = 0;
        partition.fetch_offset = got.len() as i64;
        partition.partition_max_bytes = 1 << 20;
        let mut topic = FetchTopic::default();
        topic.topic = TopicName(StrBytes::from_static_str(TOPIC));
        topic.partitions = vec![partition];
        let mut request = FetchRequest::default();
        request.replica_id = BrokerId(-1);
        request.max_wait_ms = 500;
        request.max_bytes = 4 << 20;
        request.topics = vec![topic];
        let response: FetchResponse = client.request(ApiKey::Fetch, 12, &request);
        let answer = &response.responses[0].partitions[0];
        assert_eq!(answer.error_code, 0);
        let mut records = answer.records.clone().unwrap_or_default();
        let before = got.len();
        for batch in RecordBatchDecoder::decode_all(&mut records).unwrap() {
            for record in batch.records {
                if record.offset as usize == got.len() {
                    got.push(record.value.unwrap_or_default());
                }
            }
        }
        assert!(got.len() > before, "fetch at {before} made no progress");
    }
    got
}

#[test]
fn ssl_and_sasl_ssl_listeners_serve_over_tls() {
    let (ca, keystore_pem) = certificates();
    let dir = tempfile::tempdir().unwrap();
    let keystore = dir.path().join("keystore.pem");
    std::fs::write(&keystore, keystore_pem).unwrap();
    let (sasl_ssl_port, plaintext_port, metrics_port) = (
        common::free_port(),
        common::free_port(),
        common::free_port(),
    );
    let mut broker = tls_broker(&keystore, sasl_ssl_port, plaintext_port, metrics_port);
    let ssl = broker.bootstrap();
    let sasl_ssl = format!("127.0.0.1:{sasl_ssl_port}");

    // SSL: served at once, with its own address.
    let mut client = TlsClient::connect(&ssl, &ca);
    let versions: ApiVersionsResponse =
        client.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(versions.error_code, 0);
    assert_eq!(
        client.advertised(),
        ("127.0.0.1".to_string(), i32::from(broker.port()))
    );
    assert_eq!(create_topic(&mut client, TOPIC), 0);

    // 2000 records (2 MB) in batches of 250, then read back.
    let values = values();
    for (index, chunk) in values.chunks(250).enumerate() {
        let records: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, value)| plain_record((index * 250 + i) as i64, None, value.clone()))
            .collect();
        let produce = produce_request(TOPIC, encode_batch(&records));
        let produced: ProduceResponse = client.request(ApiKey::Produce, 9, &produce);
        let answer = &produced.responses[0].partition_responses[0];
        assert_eq!(
            (answer.error_code, answer.base_offset),
            (0, (index * 250) as i64)
        );
    }
    assert!(fetch_all(&mut client) == values, "read back from memory");

    // SASL_SSL: nothing before login; its own address after.
    let mut anonymous = TlsClient::connect(&sasl_ssl, &ca);
    anonymous.send(ApiKey::Metadata, 12, &MetadataRequest::default());
    assert!(anonymous.read_frame().is_none(), "closed before login");
    let mut alice = TlsClient::connect(&sasl_ssl, &ca);
    let mut handshake = SaslHandshakeRequest::default();
    handshake.mechanism = StrBytes::from_static_str("PLAIN");
    let shaken: SaslHandshakeResponse = alice.request(ApiKey::SaslHandshake, 1, &handshake);
    assert_eq!(shaken.error_code, 0);
    let mut login = SaslAuthenticateRequest::default();
    login.auth_bytes = Bytes::from_static(b"\0alice\0alice-secret");
    let logged_in: SaslAuthenticateResponse = alice.request(ApiKey::SaslAuthenticate, 2, &login);
    assert_eq!(logged_in.error_code, 0);
    assert_eq!(
        alice.advertised(),
        ("127.0.0.1".to_string(), i32::from(sasl_ssl_port))
    );

    // PLAINTEXT beside them, with its own address.
    let mut plain = RawClient::connect(&format!("127.0.0.1:{plaintext_port}"));
    let metadata: MetadataResponse =
        plain.request(ApiKey::Metadata, 12, &MetadataRequest::default());
    assert_eq!(metadata.brokers[0].port, i32::from(plaintext_port));

    // Plain Kafka to the TLS port: a TLS alert, then closed, as Kafka.
    let mut confused = RawClient::connect(&ssl);
    confused
        .write_raw(&encode_request(
            ApiKey::ApiVersions,
            3,
            1,
            &ApiVersionsRequest::default(),
        ))
        .unwrap();
    match confused.outcome_within(Duration::from_secs(10)) {
        Outcome::Closed { bytes_before_close } => {
            assert_eq!(
                bytes_before_close.first(),
                Some(&0x15),
                "a TLS alert record"
            )
        }
        other => panic!("not closed: {other:?}"),
    }
    // A handshake never finished is closed after the request read timeout.
    let mut silent = RawClient::connect(&ssl);
    let started = Instant::now();
    assert!(matches!(
        silent.outcome_within(Duration::from_secs(10)),
        Outcome::Closed { .. }
    ));
    assert!(started.elapsed() >= Duration::from_millis(1500));

    // After a restart the records come from the segment files, spliced
    // into the TLS relay.
    broker.restart();
    let mut client = TlsClient::connect(&ssl, &ca);
    assert!(fetch_all(&mut client) == values, "read back from disk");
    let metrics = common::scrape_metrics(metrics_port);
    let spliced = common::metric_sum(&metrics, "ringbroker_fetch_record_bytes_spliced_total");
    assert!(spliced > 1_000_000, "spliced {spliced} bytes");
}

/// Goal: a TLS listener without a usable keystore does not start, and
/// says why as Kafka does.
#[test]
fn tls_listeners_need_a_usable_keystore() {
    let dir = tempfile::tempdir().unwrap();
    let (_, keystore_pem) = certificates();
    let key_only = dir.path().join("key.pem");
    let key_end = keystore_pem.find("-----END PRIVATE KEY-----").unwrap();
    std::fs::write(&key_only, &keystore_pem[..key_end + 26]).unwrap();
    let refuse = |extra: &[&str], expected: &str| {
        let args = [&["--listen", "SSL://127.0.0.1:0"], extra].concat();
        common::assert_refuses_to_start(&args, expected);
    };
    refuse(&[], "needs --ssl-keystore-location");
    refuse(
        &[
            "--ssl-keystore-location",
            key_only.to_str().unwrap(),
            "--ssl-keystore-type",
            "JKS",
        ],
        "SSL key store is specified, but key store password is not specified.",
    );
    refuse(
        &[
            "--ssl-keystore-location",
            key_only.to_str().unwrap(),
            "--ssl-keystore-type",
            "JKS",
            "--ssl-keystore-password",
            "secret",
        ],
        "Invalid keystore format",
    );
    refuse(
        &[
            "--ssl-keystore-location",
            key_only.to_str().unwrap(),
            "--ssl-keystore-password",
            "secret",
        ],
        "SSL key store password cannot be specified with PEM format",
    );
    refuse(
        &["--ssl-keystore-location", key_only.to_str().unwrap()],
        "no certificate",
    );
}

fn create_topic(client: &mut TlsClient, name: &str) -> i16 {
    let created: CreateTopicsResponse =
        client.request(ApiKey::CreateTopics, 5, &create_topic_request(name, 1));
    created.topics[0].error_code
}

/// Goal: with `--ssl-client-auth required`, a client certificate the
/// truststore's CA issued names the principal the authorizer judges, as
/// Kafka's default principal builder names it (the subject in Java's RFC
/// 2253 form, recorded from Kafka 4.1.1 for the same subject); a client
/// without a certificate is refused.
#[test]
fn client_certificates_name_the_principal() {
    let (ca, keystore_pem, identity, ca_pem) = certificates_with_client();
    let dir = tempfile::tempdir().unwrap();
    let keystore = dir.path().join("keystore.pem");
    std::fs::write(&keystore, keystore_pem).unwrap();
    let truststore = dir.path().join("truststore.pem");
    std::fs::write(&truststore, ca_pem).unwrap();
    let plaintext_port = common::free_port();
    let broker = Broker::start(
        BrokerOptions::default()
            .listen_protocol("SSL")
            .arg("--listen", format!("127.0.0.1:{plaintext_port}"))
            .arg("--ssl-keystore-location", keystore.display())
            .arg("--ssl-truststore-location", truststore.display())
            .arg("--ssl-client-auth", "required")
            .arg(
                "--authorizer-class-name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            )
            .arg("--super-users", "User:ANONYMOUS"),
    );
    let ssl = broker.bootstrap();
    let mut certified = TlsClient::try_connect(&ssl, &ca, Some(identity)).unwrap();
    // No ACL for the certificate's principal: TOPIC_AUTHORIZATION_FAILED.
    assert_eq!(create_topic(&mut certified, "by-certificate"), 29);
    let principal = "User:DC=example,1.2.840.113549.1.9.1=#16066340782e696f,CN=client one,OU=eng,O=acme\\, inc,C=US";
    let mut creation = kafka_protocol::messages::create_acls_request::AclCreation::default();
    creation.resource_type = 2;
    creation.resource_name = StrBytes::from_static_str("by-certificate");
    creation.resource_pattern_type = 3;
    creation.principal = StrBytes::from_static_str(principal);
    creation.host = StrBytes::from_static_str("*");
    creation.operation = 5;
    creation.permission_type = 3;
    let mut acls = kafka_protocol::messages::CreateAclsRequest::default();
    acls.creations = vec![creation];
    let mut admin = RawClient::connect(&format!("127.0.0.1:{plaintext_port}"));
    let created: kafka_protocol::messages::CreateAclsResponse =
        admin.request(ApiKey::CreateAcls, 3, &acls);
    assert_eq!(created.results[0].error_code, 0);
    // The ACL reaches the connection's shard through the metadata log.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let code = create_topic(&mut certified, "by-certificate");
        if code == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "still {code} under the ACL");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Without a certificate: refused in the handshake, or at the first
    // request (TLS 1.3 clients finish before the server checks).
    if let Ok(mut anonymous) = TlsClient::try_connect(&ssl, &ca, None) {
        anonymous.send(ApiKey::Metadata, 12, &MetadataRequest::default());
        assert!(
            anonymous.read_frame().is_none(),
            "served without a certificate"
        );
    }

    // A handshake never begun does not hold up a shutdown (waiting for it,
    // the shutdown's drain gave up after 10 s).
    let _silent = TcpStream::connect(&ssl).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut broker = broker;
    let started = Instant::now();
    assert!(broker.terminate_status().success());
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "shutdown took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_tls_client_that_stops_reading_is_closed_after_the_idle_time_and_does_not_hold_shutdown() {
    let (ca, keystore_pem) = certificates();
    let dir = tempfile::tempdir().unwrap();
    let keystore = dir.path().join("keystore.pem");
    std::fs::write(&keystore, keystore_pem).unwrap();
    let idle = Duration::from_secs(3);
    let mut broker = Broker::start(
        BrokerOptions::default()
            .listen_protocol("SSL")
            .arg("--ssl-keystore-location", keystore.display())
            .arg("--connections-max-idle-ms", idle.as_millis()),
    );
    // 40,000 pipelined ApiVersions requests, about 12 MB of answers: more
    // than the socket buffers and the relay hold. The client reads none.
    let stalled_client = || {
        let mut client = TlsClient::connect(&broker.bootstrap(), &ca);
        client
            .stream
            .sock
            .set_write_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let _ = client
            .stream
            .write_all(&api_versions_v0_frames(40_000))
            .and_then(|()| client.stream.flush());
        client
    };
    let closing_line = "closing TLS connection: the client took no bytes for too long";
    let connected = Instant::now();
    let mut stalled = stalled_client();
    assert!(connected.elapsed() < idle - Duration::from_millis(500));
    assert!(!broker.log_contents().contains(closing_line));
    wait_until(idle * 3, "the stalled TLS connection is closed", || {
        broker.log_contents().contains(closing_line)
    });
    assert!(connected.elapsed() >= idle, "closed before the idle time");
    read_until_closed(&mut stalled.stream.sock, Duration::from_secs(10));
    // Others are served; shutdown gives a client that reads nothing a
    // second, not the 10 s drain.
    let mut other = TlsClient::connect(&broker.bootstrap(), &ca);
    let versions: ApiVersionsResponse =
        other.request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(versions.error_code, 0);
    let mut stalled = stalled_client();
    std::thread::sleep(Duration::from_secs(1));
    let asked = Instant::now();
    broker.terminate();
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "shutdown waited {took:?} for a TLS client that reads nothing"
    );
    read_until_closed(&mut stalled.stream.sock, Duration::from_secs(10));
}
