//! The bench's Kafka client plumbing: request frames encoded with
//! kafka-protocol, responses decoded with it, and the blocking control-plane
//! calls made before the load starts (Metadata, CreateTopics, ListOffsets).
//!
//! Only non-flexible API versions are used (Produce v7, Fetch v11, Metadata
//! v8, ListOffsets v4, CreateTopics v4): Kafka 4.x and ringbroker both serve
//! them, and their response header is the bare correlation id.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, CreateTopicsResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// Produce version used by the bench.
pub const PRODUCE_VERSION: i16 = 7;
/// Fetch version used by the bench.
pub const FETCH_VERSION: i16 = 11;
const METADATA_VERSION: i16 = 8;
const LIST_OFFSETS_VERSION: i16 = 4;
const CREATE_TOPICS_VERSION: i16 = 4;
/// Client id sent in every request header.
pub const CLIENT_ID: &str = "ringbroker-bench";
/// Largest response frame the bench accepts (bounds its read buffers).
pub const RESPONSE_BYTES_MAX: usize = 128 * 1024 * 1024;
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);
/// CreateTopics of thousands of partitions takes longer: every partition's
/// files are created and synced before the broker answers.
const CREATE_TOPICS_TIMEOUT: Duration = Duration::from_secs(300);

/// A complete request frame (size prefix, header v1, body).
///
/// # Errors
/// Encoding errors of kafka-protocol (a field out of range for `version`).
pub fn encode_frame<Req: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &Req,
) -> anyhow::Result<BytesMut> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
    let mut frame = BytesMut::with_capacity(64);
    frame.extend_from_slice(&[0u8; 4]);
    header
        .encode(&mut frame, api_key.request_header_version(version))
        .map_err(|e| anyhow::anyhow!("cannot encode {api_key:?} header: {e}"))?;
    body.encode(&mut frame, version)
        .map_err(|e| anyhow::anyhow!("cannot encode {api_key:?} v{version}: {e}"))?;
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    Ok(frame)
}

/// Byte range of the correlation id in a frame made by [`encode_frame`].
pub const CORRELATION_ID_RANGE: std::ops::Range<usize> = 8..12;

/// Decodes a response payload (the frame without its size prefix) whose
/// header must carry `correlation_id`.
///
/// # Errors
/// A wrong correlation id or a body kafka-protocol cannot decode.
pub fn decode_response<Resp: Decodable>(
    mut payload: Bytes,
    version: i16,
    correlation_id: i32,
) -> anyhow::Result<Resp> {
    if payload.len() < 4 {
        bail!("response of {} bytes has no header", payload.len());
    }
    let got = payload.get_i32();
    if got != correlation_id {
        bail!("response carries correlation id {got}, expected {correlation_id}");
    }
    Resp::decode(&mut payload, version).map_err(|e| anyhow::anyhow!("cannot decode response: {e}"))
}

/// Reads the i32 size prefix of a response and checks it.
///
/// # Errors
/// A negative or too large size.
pub fn frame_size(prefix: [u8; 4]) -> anyhow::Result<usize> {
    let size = i32::from_be_bytes(prefix);
    if size < 4 || size as usize > RESPONSE_BYTES_MAX {
        bail!("response frame size {size} is out of bounds (4..={RESPONSE_BYTES_MAX})");
    }
    Ok(size as usize)
}

/// A blocking connection for the control plane.
pub struct ControlClient {
    stream: TcpStream,
    address: String,
    next_correlation_id: i32,
}

impl ControlClient {
    /// Connects to `address` (host:port).
    ///
    /// # Errors
    /// Connection failures.
    pub fn connect(address: &str) -> anyhow::Result<Self> {
        let stream =
            TcpStream::connect(address).with_context(|| format!("cannot connect to {address}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(CONTROL_TIMEOUT))?;
        stream.set_write_timeout(Some(CONTROL_TIMEOUT))?;
        Ok(ControlClient {
            stream,
            address: address.to_string(),
            next_correlation_id: 1,
        })
    }

    fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: &Req,
    ) -> anyhow::Result<Resp> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let frame = encode_frame(api_key, version, correlation_id, body)?;
        self.stream
            .write_all(&frame)
            .with_context(|| format!("{api_key:?} to {}", self.address))?;
        let mut prefix = [0u8; 4];
        self.stream
            .read_exact(&mut prefix)
            .with_context(|| format!("{api_key:?} answer from {}", self.address))?;
        let mut payload = vec![0u8; frame_size(prefix)?];
        self.stream
            .read_exact(&mut payload)
            .with_context(|| format!("{api_key:?} answer from {}", self.address))?;
        decode_response(Bytes::from(payload), version, correlation_id)
    }

    /// Metadata for one topic, without creating it.
    ///
    /// # Errors
    /// I/O and decoding errors.
    pub fn metadata(&mut self, topic: &str) -> anyhow::Result<MetadataResponse> {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
                TopicName(StrBytes::from_string(topic.to_string())),
            ))]))
            .with_allow_auto_topic_creation(false);
        self.call(ApiKey::Metadata, METADATA_VERSION, &request)
    }

    /// CreateTopics for one topic with replication factor 1 (a single node)
    /// or the broker default (-1) when `replication_factor` says so.
    ///
    /// # Errors
    /// I/O and decoding errors, or an error code other than TOPIC_ALREADY_EXISTS.
    pub fn create_topic(
        &mut self,
        topic: &str,
        partitions: u32,
        replication_factor: i16,
    ) -> anyhow::Result<()> {
        let request = CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_num_partitions(partitions as i32)
                .with_replication_factor(replication_factor)])
            .with_timeout_ms(CREATE_TOPICS_TIMEOUT.as_millis() as i32);
        self.stream.set_read_timeout(Some(CREATE_TOPICS_TIMEOUT))?;
        let response = self.call(ApiKey::CreateTopics, CREATE_TOPICS_VERSION, &request);
        self.stream.set_read_timeout(Some(CONTROL_TIMEOUT))?;
        let response: CreateTopicsResponse = response?;
        for result in response.topics {
            // 36: TOPIC_ALREADY_EXISTS (another bench created it first).
            if result.error_code != 0 && result.error_code != 36 {
                bail!(
                    "CreateTopics {topic}: error code {} {}",
                    result.error_code,
                    result
                        .error_message
                        .map(|m| m.to_string())
                        .unwrap_or_default()
                );
            }
        }
        Ok(())
    }

    /// Offsets of `partitions` at `timestamp` (-2 earliest, -1 latest).
    /// Retries for up to 30 s while partitions answer with a retriable error
    /// (a topic just created: Kafka lists leaders in Metadata a moment
    /// before they answer ListOffsets).
    ///
    /// # Errors
    /// I/O and decoding errors, or a partition's non-retriable error code.
    pub fn list_offsets(
        &mut self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> anyhow::Result<BTreeMap<i32, i64>> {
        let deadline = Instant::now() + CONTROL_TIMEOUT;
        loop {
            match self.list_offsets_once(topic, partitions, timestamp)? {
                Ok(offsets) => return Ok(offsets),
                Err((partition, code)) => {
                    // 3 UNKNOWN_TOPIC_OR_PARTITION, 5 LEADER_NOT_AVAILABLE,
                    // 6 NOT_LEADER_OR_FOLLOWER, 74/75 fenced/unknown leader epoch.
                    let retriable = matches!(code, 3 | 5 | 6 | 74 | 75);
                    if !retriable || Instant::now() > deadline {
                        bail!("ListOffsets {topic}/{partition}: error code {code}");
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    fn list_offsets_once(
        &mut self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> anyhow::Result<Result<BTreeMap<i32, i64>, (i32, i16)>> {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&p| {
                            ListOffsetsPartition::default()
                                .with_partition_index(p)
                                .with_current_leader_epoch(-1)
                                .with_timestamp(timestamp)
                        })
                        .collect(),
                )]);
        let response: ListOffsetsResponse =
            self.call(ApiKey::ListOffsets, LIST_OFFSETS_VERSION, &request)?;
        let mut offsets = BTreeMap::new();
        for topic_response in response.topics {
            for p in topic_response.partitions {
                if p.error_code != 0 {
                    return Ok(Err((p.partition_index, p.error_code)));
                }
                offsets.insert(p.partition_index, p.offset);
            }
        }
        Ok(Ok(offsets))
    }
}

/// Where each partition of the topic lives.
#[derive(Debug, Clone)]
pub struct TopicLayout {
    /// Partition -> leader address (host:port).
    pub leaders: BTreeMap<i32, String>,
}

impl TopicLayout {
    /// The partitions, in order.
    pub fn partitions(&self) -> Vec<i32> {
        self.leaders.keys().copied().collect()
    }
}

fn layout_of(response: &MetadataResponse, topic: &str) -> anyhow::Result<Option<TopicLayout>> {
    let brokers: BTreeMap<i32, String> = response
        .brokers
        .iter()
        .map(|b| (b.node_id.0, format!("{}:{}", b.host, b.port)))
        .collect();
    let Some(t) = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
    else {
        return Ok(None);
    };
    match t.error_code {
        0 => {}
        3 | 5 => return Ok(None), // UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE
        code => bail!("Metadata for {topic}: error code {code}"),
    }
    let mut leaders = BTreeMap::new();
    for p in &t.partitions {
        if p.error_code != 0 || p.leader_id.0 < 0 {
            return Ok(None);
        }
        let Some(address) = brokers.get(&p.leader_id.0) else {
            return Ok(None);
        };
        leaders.insert(p.partition_index, address.clone());
    }
    if leaders.is_empty() {
        return Ok(None);
    }
    Ok(Some(TopicLayout { leaders }))
}

/// How long `prepare_topic` waits for every partition of a topic of
/// `partitions` to have a leader: `CONTROL_TIMEOUT` plus 10 ms per
/// partition, since a broker creates each partition's directory and files
/// (2.6 ms each for 10000 partitions on dev-2vcpu-xeon-b, 26 s, where a
/// slower moment of the disk went past a flat 30 s).
fn leader_wait(partitions: u32) -> Duration {
    CONTROL_TIMEOUT + Duration::from_millis(10) * partitions
}

/// Finds `topic`, creating it with `partitions` partitions if it is missing,
/// and waits until every partition has a leader. An existing topic must have
/// exactly `partitions` partitions.
///
/// # Errors
/// Unreachable broker, CreateTopics failure, a partition count that differs,
/// or leaders still missing after `leader_wait(partitions)`.
pub fn prepare_topic(bootstrap: &str, topic: &str, partitions: u32) -> anyhow::Result<TopicLayout> {
    let mut client = ControlClient::connect(bootstrap)?;
    let wait = leader_wait(partitions);
    let deadline = Instant::now() + wait;
    let mut created = false;
    loop {
        let response = client.metadata(topic)?;
        if let Some(layout) = layout_of(&response, topic)? {
            if layout.leaders.len() != partitions as usize {
                bail!(
                    "topic {topic} has {} partitions, not --partitions {partitions}; use another --topic",
                    layout.leaders.len()
                );
            }
            return Ok(layout);
        }
        if !created {
            let exists = response.topics.iter().any(|t| {
                t.name.as_ref().is_some_and(|n| n.0.as_str() == topic) && t.error_code != 3
            });
            if !exists {
                client.create_topic(topic, partitions, 1)?;
            }
            created = true;
        }
        if Instant::now() > deadline {
            bail!(
                "topic {topic} still has partitions without a leader after {} s",
                wait.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: a topic of many partitions gets longer to find its leaders
    /// than a small one, and no topic less than the control timeout.
    #[test]
    fn the_wait_for_leaders_grows_with_the_partitions() {
        assert_eq!(leader_wait(1), Duration::from_millis(30_010));
        assert_eq!(leader_wait(10_000), Duration::from_secs(130));
        assert!(leader_wait(0) >= CONTROL_TIMEOUT);
    }
}
