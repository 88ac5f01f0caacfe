//! The few bytes of Kafka's embedded consumer protocol (protocol type
//! `"consumer"`) the broker itself reads or writes. Members' subscriptions and
//! assignments are otherwise opaque to the coordinator.
//!
//! - Subscriptions are read to learn which topics a group consumes: OffsetDelete
//!   refuses GROUP_SUBSCRIBED_TO_TOPIC and offset expiry spares those topics.
//!   Like Kafka (`ClassicGroup.computeSubscribedTopics`), only the version-0
//!   prefix is parsed (`version:int16 topics:[string]`), which every later
//!   version starts with, so future versions still parse.
//! - [`EMPTY_ASSIGNMENT`] is a valid, empty `ConsumerProtocolAssignment`.
//!
//! Pure code: used on any core.

use bytes::Bytes;

/// The protocol type of Kafka consumers.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// A `ConsumerProtocolAssignment` v0 with no partitions and null user data:
/// `version=0, assigned_partitions=[] (int32 0), user_data=null (int32 -1)`.
///
/// Kafka sends zero bytes to a member the leader left out of its SyncGroup
/// (`ClassicGroupMember.EMPTY_ASSIGNMENT`); franz-go cannot parse that and
/// fails the sync, so for consumer groups we send this instead. Every
/// client's decoder accepts v0.
pub const EMPTY_ASSIGNMENT: [u8; 10] = [0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];

/// [`EMPTY_ASSIGNMENT`] as `Bytes`.
pub fn empty_assignment() -> Bytes {
    Bytes::from_static(&EMPTY_ASSIGNMENT)
}

/// The topics of a `ConsumerProtocolSubscription`, or None when the bytes do
/// not follow the schema (Kafka then treats the group's subscriptions as
/// unknown).
pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut position = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let end = position
            .checked_add(n)
            .filter(|&end| end <= metadata.len())?;
        let slice = &metadata[position..end];
        position = end;
        Some(slice)
    };
    let version = i16::from_be_bytes(take(2)?.try_into().ok()?);
    if version < 0 {
        return None;
    }
    let count = i32::from_be_bytes(take(4)?.try_into().ok()?);
    // Each topic takes at least its two length bytes.
    let count = usize::try_from(count).ok()?;
    if count > metadata.len() / 2 {
        return None;
    }
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let length = i16::from_be_bytes(take(2)?.try_into().ok()?);
        let length = usize::try_from(length).ok()?;
        let name = std::str::from_utf8(take(length)?).ok()?;
        topics.push(name.to_string());
    }
    Some(topics)
}

/// The newest `ConsumerProtocolSubscription` / `ConsumerProtocolAssignment`
/// version; later ones are read as this one (their fields come after).
const PROTOCOL_VERSION_MAX: i16 = 3;

/// The version a member's protocol metadata starts with, within what the
/// broker reads and writes (Kafka's `ConsumerProtocol.deserializeVersion`,
/// then its check of the assignment version).
pub fn version_of(metadata: &[u8]) -> i16 {
    metadata
        .get(..2)
        .map_or(0, |v| i16::from_be_bytes([v[0], v[1]]))
        .clamp(0, PROTOCOL_VERSION_MAX)
}

/// A whole `ConsumerProtocolSubscription` (topics, owned partitions,
/// rack), as Kafka reads a classic member's in a consumer group; None when
/// the bytes do not follow the schema.
pub fn decode_subscription(
    metadata: &[u8],
) -> Option<kafka_protocol::messages::ConsumerProtocolSubscription> {
    use kafka_protocol::protocol::Decodable;
    let version = i16::from_be_bytes(metadata.get(..2)?.try_into().ok()?);
    if version < 0 {
        return None;
    }
    let mut body = Bytes::copy_from_slice(&metadata[2..]);
    kafka_protocol::messages::ConsumerProtocolSubscription::decode(
        &mut body,
        version.min(PROTOCOL_VERSION_MAX),
    )
    .ok()
}

/// A `ConsumerProtocolAssignment`; None when the bytes do not follow the
/// schema. Zero bytes (what Kafka keeps for a member never synced) read as
/// no partitions.
pub fn decode_assignment(
    assignment: &[u8],
) -> Option<kafka_protocol::messages::ConsumerProtocolAssignment> {
    use kafka_protocol::protocol::Decodable;
    if assignment.is_empty() {
        return Some(Default::default());
    }
    let version = i16::from_be_bytes(assignment.get(..2)?.try_into().ok()?);
    if version < 0 {
        return None;
    }
    let mut body = Bytes::copy_from_slice(&assignment[2..]);
    kafka_protocol::messages::ConsumerProtocolAssignment::decode(
        &mut body,
        version.min(PROTOCOL_VERSION_MAX),
    )
    .ok()
}

/// Encodes a `ConsumerProtocolAssignment` of `partitions` (topic name,
/// partitions) at `version`, no user data: what a classic member of a
/// consumer group gets in its SyncGroup.
pub fn encode_assignment(partitions: &[(String, Vec<i32>)], version: i16) -> Bytes {
    use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
    use kafka_protocol::protocol::{Encodable, StrBytes};
    let mut assignment = kafka_protocol::messages::ConsumerProtocolAssignment::default();
    assignment.assigned_partitions = partitions
        .iter()
        .map(|(topic, partitions)| {
            let mut tp = TopicPartition::default();
            tp.topic = kafka_protocol::messages::TopicName(StrBytes::from_string(topic.clone()));
            tp.partitions.clone_from(partitions);
            tp
        })
        .collect();
    let version = version.clamp(0, PROTOCOL_VERSION_MAX);
    let mut buf = bytes::BytesMut::new();
    buf.extend_from_slice(&version.to_be_bytes());
    assignment
        .encode(&mut buf, version)
        .expect("an assignment of valid names encodes");
    buf.freeze()
}

/// Encodes a `ConsumerProtocolSubscription` v0 (no user data) for tests.
#[cfg(test)]
pub fn encode_subscription(topics: &[&str]) -> Bytes {
    use bytes::BufMut;
    let mut buf = bytes::BytesMut::new();
    buf.put_i16(0);
    buf.put_i32(topics.len() as i32);
    for topic in topics {
        buf.put_i16(topic.len() as i16);
        buf.put_slice(topic.as_bytes());
    }
    buf.put_i32(-1);
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_topics_are_read_from_the_v0_prefix() {
        let encoded = encode_subscription(&["orders", "payments"]);
        assert_eq!(
            subscribed_topics(&encoded),
            Some(vec!["orders".to_string(), "payments".to_string()])
        );
        // A v3 subscription (owned partitions, generation, rack after the
        // v0 fields) parses the same way.
        let mut v3 = encoded.to_vec();
        v3[1] = 3;
        v3.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff]);
        assert_eq!(subscribed_topics(&v3).map(|t| t.len()), Some(2));
        assert_eq!(subscribed_topics(&[]), None);
        assert_eq!(subscribed_topics(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), None);
        assert_eq!(subscribed_topics(&[0xff, 0xff, 0, 0, 0, 0]), None);
    }

    /// The empty assignment decodes as version 0 with no partitions.
    #[test]
    fn empty_assignment_is_a_valid_encoding() {
        assert_eq!(
            i16::from_be_bytes([EMPTY_ASSIGNMENT[0], EMPTY_ASSIGNMENT[1]]),
            0
        );
        assert_eq!(
            i32::from_be_bytes(EMPTY_ASSIGNMENT[2..6].try_into().expect("4 bytes")),
            0
        );
        assert_eq!(
            i32::from_be_bytes(EMPTY_ASSIGNMENT[6..10].try_into().expect("4 bytes")),
            -1
        );
    }
}
