//! A raw Kafka wire client over `std::net::TcpStream`, for requests no real
//! client would send: bad sizes, garbage, unknown keys, corrupt batches.
//! Well-formed requests are encoded with the `kafka-protocol` crate; the
//! tests build the broken ones byte by byte.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, CreateAclsRequest, DeleteAclsRequest,
    DescribeAclsRequest, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

/// How long a read waits before the test calls the broker unresponsive.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
pub const CLIENT_ID: &str = "ringbroker-wire-tests";

/// What the broker did with a connection after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The broker closed the connection (EOF or reset), having sent these
    /// bytes first (usually none).
    Closed { bytes_before_close: Vec<u8> },
    /// The connection is still open and silent after the wait.
    OpenAndSilent,
    /// The broker sent these bytes and kept the connection open.
    Answered(Vec<u8>),
}

pub struct RawClient {
    pub stream: TcpStream,
    next_correlation_id: i32,
    client_id: &'static str,
}

impl RawClient {
    pub fn connect(bootstrap: &str) -> RawClient {
        let stream = TcpStream::connect(bootstrap)
            .unwrap_or_else(|error| panic!("connect to {bootstrap}: {error}"));
        RawClient::over(stream)
    }

    /// A client connecting from local address `source` (any 127.x.y.z
    /// reaches a loopback listener, so one test can be several hosts).
    pub fn connect_from(bootstrap: &str, source: std::net::Ipv4Addr) -> RawClient {
        let target: std::net::SocketAddr = bootstrap.parse().expect("bootstrap is ip:port");
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        socket
            .bind(&std::net::SocketAddr::from((source, 0)).into())
            .unwrap_or_else(|error| panic!("bind {source}: {error}"));
        socket
            .connect(&target.into())
            .unwrap_or_else(|error| panic!("connect to {bootstrap} from {source}: {error}"));
        RawClient::over(socket.into())
    }

    /// A client on a connected `stream`, with the tests' timeouts.
    fn over(stream: TcpStream) -> RawClient {
        stream.set_nodelay(true).expect("TCP_NODELAY");
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .expect("read timeout");
        stream
            .set_write_timeout(Some(READ_TIMEOUT))
            .expect("write timeout");
        RawClient {
            stream,
            next_correlation_id: 1,
            client_id: CLIENT_ID,
        }
    }

    /// A client whose requests carry `client_id`.
    pub fn connect_as(bootstrap: &str, client_id: &'static str) -> RawClient {
        RawClient {
            client_id,
            ..RawClient::connect(bootstrap)
        }
    }

    pub fn next_correlation_id(&mut self) -> i32 {
        let id = self.next_correlation_id;
        self.next_correlation_id += 1;
        id
    }

    /// Writes `bytes` as they are (the caller includes any size prefix).
    pub fn write_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Reads one size-prefixed response frame and returns what follows the
    /// size.
    pub fn read_frame(&mut self) -> std::io::Result<Vec<u8>> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let size = i32::from_be_bytes(size);
        assert!(
            (0..=64 * 1024 * 1024).contains(&size),
            "response frame size {size} is out of range"
        );
        let mut frame = vec![0u8; size as usize];
        self.stream.read_exact(&mut frame)?;
        Ok(frame)
    }

    /// Sends a well-formed request and decodes the response, checking that
    /// the correlation id comes back.
    pub fn request<Req: Encodable, Resp: Decodable>(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: &Req,
    ) -> Resp {
        let correlation_id = self.next_correlation_id();
        let frame = encode_request_as(api_key, version, correlation_id, body, self.client_id);
        self.write_raw(&frame)
            .unwrap_or_else(|error| panic!("send {api_key:?} v{version}: {error}"));
        let response = self
            .read_frame()
            .unwrap_or_else(|error| panic!("read {api_key:?} v{version} response: {error}"));
        let mut response = Bytes::from(response);
        let header =
            ResponseHeader::decode(&mut response, api_key.response_header_version(version))
                .unwrap_or_else(|error| {
                    panic!("decode {api_key:?} v{version} response header: {error}")
                });
        assert_eq!(
            header.correlation_id, correlation_id,
            "{api_key:?} v{version}: response correlation id"
        );
        let decoded = Resp::decode(&mut response, version)
            .unwrap_or_else(|error| panic!("decode {api_key:?} v{version} response: {error}"));
        assert_eq!(
            response.remaining(),
            0,
            "{api_key:?} v{version}: {} bytes left over after the response body",
            response.remaining()
        );
        decoded
    }

    /// Waits up to `wait` to see whether the broker answers, closes, or stays
    /// silent.
    pub fn outcome_within(&mut self, wait: Duration) -> Outcome {
        let deadline = Instant::now() + wait;
        let mut received = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return if received.is_empty() {
                    Outcome::OpenAndSilent
                } else {
                    Outcome::Answered(received)
                };
            }
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .expect("set read timeout");
            match self.stream.read(&mut buffer) {
                Ok(0) => {
                    return Outcome::Closed {
                        bytes_before_close: received,
                    }
                }
                Ok(n) => received.extend_from_slice(&buffer[..n]),
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(error)
                    if matches!(
                        error.kind(),
                        ErrorKind::ConnectionReset
                            | ErrorKind::ConnectionAborted
                            | ErrorKind::BrokenPipe
                    ) =>
                {
                    return Outcome::Closed {
                        bytes_before_close: received,
                    }
                }
                Err(error) => panic!("read from broker: {error}"),
            }
        }
    }
}

/// A complete request frame: size, header (in the version the API key
/// prescribes for `version`), body.
pub fn encode_request<Req: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &Req,
) -> Vec<u8> {
    encode_request_as(api_key, version, correlation_id, body, CLIENT_ID)
}

/// [`encode_request`] with the header's client id `client_id`.
pub fn encode_request_as<Req: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &Req,
    client_id: &'static str,
) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str(client_id)));
    let mut payload = BytesMut::new();
    header
        .encode(&mut payload, api_key.request_header_version(version))
        .expect("encode request header");
    body.encode(&mut payload, version)
        .expect("encode request body");
    frame(&payload)
}

/// An uncompressed v2 record batch of `records`, as a client sends it.
pub fn encode_batch(records: &[Record]) -> Bytes {
    encode_batch_compressed(records, Compression::None)
}

/// A v2 record batch of `records` with `compression`.
pub fn encode_batch_compressed(records: &[Record], compression: Compression) -> Bytes {
    let mut buffer = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buffer,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .expect("encode record batch");
    buffer.freeze()
}

/// A record as a plain (non-idempotent) producer sends it: CreateTime at
/// `BASE_TIMESTAMP_MS`, no headers; records of one batch take offsets
/// 0, 1, ... (the encoder starts a new batch when offset - sequence
/// changes, so the sequence follows the offset).
pub fn plain_record(offset: i64, key: Option<Bytes>, value: Bytes) -> Record {
    Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: kafka_protocol::records::TimestampType::Creation,
        offset,
        sequence: offset as i32 - 1,
        timestamp: super::kafka::BASE_TIMESTAMP_MS,
        key,
        value: Some(value),
        headers: Default::default(),
    }
}

/// `payload` with its i32 size in front.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(payload.len() + 4);
    framed.extend_from_slice(&(payload.len() as i32).to_be_bytes());
    framed.extend_from_slice(payload);
    framed
}

/// A v1 request header (key, version, correlation id, client id) by hand,
/// for requests the crate cannot or should not encode.
pub fn request_header_v1(api_key: i16, version: i16, correlation_id: i32) -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(&api_key.to_be_bytes());
    header.extend_from_slice(&version.to_be_bytes());
    header.extend_from_slice(&correlation_id.to_be_bytes());
    header.extend_from_slice(&(CLIENT_ID.len() as i16).to_be_bytes());
    header.extend_from_slice(CLIENT_ID.as_bytes());
    header
}

/// ApiVersions v0 from a fresh connection.
pub fn api_versions(bootstrap: &str) -> ApiVersionsResponse {
    let mut client = RawClient::connect(bootstrap);
    client.request(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default())
}

/// The (min, max) versions `versions` lists for `key`, None when unlisted.
pub fn api_range(versions: &ApiVersionsResponse, key: ApiKey) -> Option<(i16, i16)> {
    versions
        .api_keys
        .iter()
        .find(|k| k.api_key == key as i16)
        .map(|k| (k.min_version, k.max_version))
}

/// Metadata v1 for `topics` (`None`: all topics) from a fresh connection.
pub fn metadata(bootstrap: &str, topics: Option<&[&str]>) -> MetadataResponse {
    let mut client = RawClient::connect(bootstrap);
    metadata_on(&mut client, topics, 1)
}

/// Metadata at `version` on an existing connection.
pub fn metadata_on(
    client: &mut RawClient,
    topics: Option<&[&str]>,
    version: i16,
) -> MetadataResponse {
    let request = MetadataRequest::default()
        .with_topics(topics.map(|names| {
            names
                .iter()
                .map(|name| {
                    MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
                })
                .collect()
        }))
        .with_allow_auto_topic_creation(true);
    client.request(ApiKey::Metadata, version, &request)
}

/// Asserts that the broker process lives and that a fresh client gets
/// ApiVersions and Metadata answered, with at least one broker listed.
pub fn assert_broker_healthy(broker: &mut super::Broker, after: &str) {
    broker.assert_running();
    let versions = api_versions(&broker.bootstrap());
    assert_eq!(
        versions.error_code, 0,
        "after {after}: ApiVersions v0 error code"
    );
    assert!(
        versions
            .api_keys
            .iter()
            .any(|k| k.api_key == ApiKey::Metadata as i16),
        "after {after}: ApiVersions lists no Metadata: {versions:?}"
    );
    let metadata = metadata(&broker.bootstrap(), None);
    assert!(
        !metadata.brokers.is_empty(),
        "after {after}: Metadata lists no broker: {metadata:?}"
    );
    broker.assert_running();
}

/// DescribeAcls of every ACL: any resource type, pattern type, operation
/// and permission (code 1, ANY), any name, principal and host.
pub fn describe_every_acl() -> DescribeAclsRequest {
    let mut request = DescribeAclsRequest::default();
    request.resource_type_filter = 1;
    request.pattern_type_filter = 1;
    request.operation = 1;
    request.permission_type = 1;
    request
}

/// CreateAcls of `copies` ACLs allowing User:alice to read the literal
/// topic `topic` from any host.
pub fn create_read_acls(topic: &str, copies: usize) -> CreateAclsRequest {
    let mut creation = AclCreation::default();
    creation.resource_type = 2;
    creation.resource_name = StrBytes::from_string(topic.to_string());
    creation.resource_pattern_type = 3;
    creation.principal = StrBytes::from_static_str("User:alice");
    creation.host = StrBytes::from_static_str("*");
    creation.operation = 3;
    creation.permission_type = 3;
    let mut request = CreateAclsRequest::default();
    request.creations = vec![creation; copies];
    request
}

/// DeleteAcls with one filter matching every ACL.
pub fn delete_every_acl() -> DeleteAclsRequest {
    let mut filter = DeleteAclsFilter::default();
    filter.resource_type_filter = 1;
    filter.pattern_type_filter = 1;
    filter.operation = 1;
    filter.permission_type = 1;
    let mut request = DeleteAclsRequest::default();
    request.filters = vec![filter];
    request
}

/// SaslHandshake asking for PLAIN.
pub fn sasl_plain_handshake() -> SaslHandshakeRequest {
    let mut request = SaslHandshakeRequest::default();
    request.mechanism = StrBytes::from_static_str("PLAIN");
    request
}

/// SaslAuthenticate with a PLAIN token for user/password.
pub fn sasl_plain_authenticate() -> SaslAuthenticateRequest {
    let mut request = SaslAuthenticateRequest::default();
    request.auth_bytes = Bytes::from_static(b"\0user\0password");
    request
}

/// SaslHandshake for `mechanism`: the error code and the mechanisms listed.
pub fn sasl_handshake(client: &mut RawClient, mechanism: &str, version: i16) -> (i16, Vec<String>) {
    let mut request = SaslHandshakeRequest::default();
    request.mechanism = StrBytes::from_string(mechanism.to_string());
    let response: SaslHandshakeResponse = client.request(ApiKey::SaslHandshake, version, &request);
    (
        response.error_code,
        response.mechanisms.iter().map(|m| m.to_string()).collect(),
    )
}

/// SaslAuthenticate with `token`.
pub fn sasl_authenticate(
    client: &mut RawClient,
    token: &[u8],
    version: i16,
) -> SaslAuthenticateResponse {
    let mut request = SaslAuthenticateRequest::default();
    request.auth_bytes = Bytes::copy_from_slice(token);
    client.request(ApiKey::SaslAuthenticate, version, &request)
}

/// Whether a Metadata request is answered (false once the broker closed).
pub fn metadata_answers(client: &mut RawClient) -> bool {
    let correlation_id = client.next_correlation_id();
    let request = encode_request(
        ApiKey::Metadata,
        1,
        correlation_id,
        &MetadataRequest::default(),
    );
    client.write_raw(&request).is_ok() && client.read_frame().is_ok()
}

/// The broker closed the connection without sending anything.
pub fn closed_silently(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Closed { bytes_before_close } if bytes_before_close.is_empty())
}

/// CreateTopics (v5 and up) of one topic of `partitions` partitions.
pub fn create_topic_request(
    name: &str,
    partitions: i32,
) -> kafka_protocol::messages::CreateTopicsRequest {
    let mut topic = kafka_protocol::messages::create_topics_request::CreatableTopic::default();
    topic.name = TopicName(StrBytes::from_string(name.to_string()));
    topic.num_partitions = partitions;
    topic.replication_factor = 1;
    let mut request = kafka_protocol::messages::CreateTopicsRequest::default();
    request.topics = vec![topic];
    request.timeout_ms = 10_000;
    request
}

/// The error code CreateTopics v5 answers for one topic of one partition.
pub fn create_topic(client: &mut RawClient, name: &str) -> i16 {
    let response: kafka_protocol::messages::CreateTopicsResponse = client.request(
        kafka_protocol::messages::ApiKey::CreateTopics,
        5,
        &create_topic_request(name, 1),
    );
    response.topics[0].error_code
}

/// `count` pipelined ApiVersions v0 requests (no client id), with
/// correlation ids 0, 1, ...: 14 bytes each, answered by a few hundred.
pub fn api_versions_v0_frames(count: i32) -> Vec<u8> {
    let mut frames = Vec::with_capacity(count as usize * 14);
    for correlation_id in 0..count {
        frames.extend_from_slice(&10i32.to_be_bytes());
        frames.extend_from_slice(&(ApiKey::ApiVersions as i16).to_be_bytes());
        frames.extend_from_slice(&0i16.to_be_bytes());
        frames.extend_from_slice(&correlation_id.to_be_bytes());
        frames.extend_from_slice(&(-1i16).to_be_bytes());
    }
    frames
}

/// Reads `stream` until the broker closes it (EOF or reset) and returns
/// what came before; panics if it is still open after `within`.
pub fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Vec<u8> {
    let deadline = Instant::now() + within;
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "the broker kept the connection open for {within:?} ({} bytes read)",
            received.len()
        );
        stream.set_read_timeout(Some(left)).expect("read timeout");
        match stream.read(&mut buffer) {
            Ok(0) => return received,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(error)
                if matches!(
                    error.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ) =>
            {
                return received
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(error) => panic!("read from broker: {error}"),
        }
    }
}

/// The correlation ids of the whole response frames at the start of
/// `bytes` (a partial frame at the end is left out).
pub fn correlation_ids(bytes: &[u8]) -> Vec<i32> {
    let mut ids = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 8 {
        let size = i32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        if rest.len() < 4 + size {
            break;
        }
        ids.push(i32::from_be_bytes(rest[4..8].try_into().unwrap()));
        rest = &rest[4 + size..];
    }
    ids
}

/// Produce (acks=all, 10 s timeout) of `records` to partition 0 of `topic`.
pub fn produce_request(topic: &str, records: Bytes) -> kafka_protocol::messages::ProduceRequest {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(records);
    let mut data = TopicProduceData::default();
    data.name = TopicName(StrBytes::from_string(topic.to_string()));
    data.partition_data = vec![partition];
    let mut produce = kafka_protocol::messages::ProduceRequest::default();
    produce.acks = -1;
    produce.timeout_ms = 10_000;
    produce.topic_data = vec![data];
    produce
}

/// IncrementalAlterConfigs v1 of one resource (`resource_type` 2: a topic,
/// 4: a broker, "" the cluster default): each config SET to its value, or
/// DELETEd when None. Returns the resource's (error code, message).
pub fn incremental_alter_configs(
    client: &mut RawClient,
    resource_type: i8,
    name: &str,
    configs: &[(&str, Option<&str>)],
) -> (i16, Option<String>) {
    let ops: Vec<(&str, i8, Option<&str>)> = configs
        .iter()
        .map(|(name, value)| (*name, if value.is_some() { 0 } else { 1 }, *value))
        .collect();
    incremental_alter_configs_ops(client, resource_type, name, &ops)
}

/// IncrementalAlterConfigs v1 of one resource with each config's operation
/// (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT): the resource's error code and
/// message.
pub fn incremental_alter_configs_ops(
    client: &mut RawClient,
    resource_type: i8,
    name: &str,
    configs: &[(&str, i8, Option<&str>)],
) -> (i16, Option<String>) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{
        IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    };
    let mut resource = AlterConfigsResource::default();
    resource.resource_type = resource_type;
    resource.resource_name = StrBytes::from_string(name.to_string());
    resource.configs = configs
        .iter()
        .map(|(name, op, value)| {
            let mut config = AlterableConfig::default();
            config.name = StrBytes::from_string(name.to_string());
            config.config_operation = *op;
            config.value = value.map(|v| StrBytes::from_string(v.to_string()));
            config
        })
        .collect();
    let mut request = IncrementalAlterConfigsRequest::default();
    request.resources = vec![resource];
    let response: IncrementalAlterConfigsResponse =
        client.request(ApiKey::IncrementalAlterConfigs, 1, &request);
    let answer = &response.responses[0];
    (
        answer.error_code,
        answer.error_message.as_ref().map(|m| m.to_string()),
    )
}
