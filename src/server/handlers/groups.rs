//! What the consumer-group handlers share: string conversions between the
//! `kafka-protocol` types and the coordinator's plain structs, the client
//! address as Kafka prints it, and fanning a multi-group request out to the
//! coordinators of the groups' `__consumer_offsets` partitions.
//!
//! Every group handler does all of its work inside its [`Responder`]: the
//! connection's writer awaits responders one at a time, in request order, so
//! a connection's group requests reach the coordinator in the order they were
//! sent and none starts before the one ahead of it is answered (Kafka mutes a
//! connection while a request is in flight, with the same effect).
//!
//! [`Responder`]: crate::server::connection::Responder

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;

use futures::future::join_all;
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::str_bytes;
use crate::group::service::{call_partition, group_partition};
use crate::protocol::ErrorCode;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The error put in every error field when the coordinator answers with a
/// reply of the wrong kind (a bug) or cannot be reached.
pub const UNEXPECTED_REPLY: ErrorCode = ErrorCode::CoordinatorNotAvailable;

/// `DescribeGroups.authorized_operations` when the client did not ask.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// Kafka's `AclOperation` codes of what may be done to a group.
const ACL_READ: u32 = 3;
const ACL_DELETE: u32 = 6;
const ACL_DESCRIBE: u32 = 8;

/// The bit field of every operation ringbroker offers on a group, the most
/// DescribeGroups reports (masking what the authorizer allows). ringbroker
/// has no group configs, so DESCRIBE_CONFIGS and ALTER_CONFIGS are not
/// offered.
pub const GROUP_AUTHORIZED_OPERATIONS: i32 =
    ((1u32 << ACL_READ) | (1u32 << ACL_DELETE) | (1u32 << ACL_DESCRIBE)) as i32;

/// Who sent a request, as the coordinator records it for DescribeGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// The request header's client id ("" when null).
    pub client_id: String,
    /// The peer address as Kafka prints it: `/127.0.0.1`.
    pub client_host: String,
}

impl Client {
    /// The sender of a request with `header`, connected from `peer`.
    pub fn of(header: &kafka_protocol::messages::RequestHeader, peer: Option<SocketAddr>) -> Self {
        Client {
            client_id: header.client_id.as_deref().unwrap_or_default().to_string(),
            client_host: client_host(peer),
        }
    }
}

/// The client's address as Kafka prints it (Java's `InetAddress.toString`
/// of an unresolved address): `/` then the IP, IPv4-mapped IPv6 addresses as
/// IPv4, IPv6 uncompressed (`/0:0:0:0:0:0:0:1`). "" when unknown.
pub fn client_host(peer: Option<SocketAddr>) -> String {
    let Some(peer) = peer else {
        return String::new();
    };
    let ip = match peer.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => format!("/{v4}"),
        IpAddr::V6(v6) => {
            let segments: Vec<String> = v6.segments().iter().map(|s| format!("{s:x}")).collect();
            format!("/{}", segments.join(":"))
        }
    }
}

/// An owned `String` of a wire string.
pub fn string(s: &StrBytes) -> String {
    s.to_string()
}

/// An owned optional `String` of an optional wire string.
pub fn opt_string(s: &Option<StrBytes>) -> Option<String> {
    s.as_ref().map(string)
}

/// An optional wire string.
pub fn opt_str_bytes(s: Option<&str>) -> Option<StrBytes> {
    s.map(str_bytes)
}

/// A wire group id.
pub fn group_id(s: &str) -> GroupId {
    GroupId(str_bytes(s))
}

/// A wire topic name.
pub fn topic_name(s: &str) -> TopicName {
    TopicName(str_bytes(s))
}

/// Per-topic partition errors in Kafka's response-builder order: a topic is
/// listed where it first appears, partitions in the order added; later
/// additions to a known topic extend it (Kafka's `OffsetCommitResponse.Builder`
/// and `OffsetDeleteResponse.Builder`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TopicErrors {
    /// `(topic, [(partition, error code)])`.
    pub topics: Vec<(String, Vec<(i32, i16)>)>,
}

impl TopicErrors {
    /// Adds one partition's outcome.
    pub fn add(&mut self, topic: &str, partition: i32, error_code: i16) {
        match self.topics.iter_mut().find(|(name, _)| name == topic) {
            Some((_, partitions)) => partitions.push((partition, error_code)),
            None => self
                .topics
                .push((topic.to_string(), vec![(partition, error_code)])),
        }
    }

    /// Builds the response's topic list in this order, with `topic` making
    /// one wire topic from its name and partitions and `partition` one wire
    /// partition from its index and error code.
    pub fn into_wire<T, P>(
        self,
        topic: impl Fn(TopicName, Vec<P>) -> T,
        partition: impl Fn(i32, i16) -> P,
    ) -> Vec<T> {
        self.topics
            .into_iter()
            .map(|(name, partitions)| {
                let partitions = partitions
                    .into_iter()
                    .map(|(index, code)| partition(index, code))
                    .collect();
                topic(topic_name(&name), partitions)
            })
            .collect()
    }
}

/// True when `topic` exists and has partition `partition` (what Kafka's
/// `metadataCache` checks before committing or deleting offsets).
pub fn partition_exists(shard: &Rc<Shard>, topic: &str, partition: i32) -> bool {
    let image = shard.image();
    image
        .topic(topic)
        .is_some_and(|t| shard.owner_of(t, partition).is_some())
}

/// True when `topic` exists.
pub fn topic_exists(shard: &Rc<Shard>, topic: &str) -> bool {
    shard.image().topic(topic).is_some()
}

/// Sends a request about several groups to the coordinators of their
/// partitions, one call per partition (all at once), and returns one result
/// per item, in item order: the coordinator's answer for that group, or the
/// error to report for it.
///
/// `items` are `(group id, item)`; `make_call` builds one partition's call
/// from its items (in item order); `take` extracts the per-item answers, in
/// the same order, from the partition's reply (`Err` for
/// [`GroupReply::Unavailable`] or a reply of the wrong kind).
pub async fn call_by_partition<T, R>(
    shard: &Rc<Shard>,
    items: Vec<(String, T)>,
    make_call: impl Fn(Vec<T>) -> GroupCall,
    take: impl Fn(GroupReply) -> Result<Vec<R>, ErrorCode>,
) -> Vec<Result<R, ErrorCode>> {
    let mut results: Vec<Option<Result<R, ErrorCode>>> = Vec::with_capacity(items.len());
    let mut by_partition: BTreeMap<i32, (Vec<usize>, Vec<T>)> = BTreeMap::new();
    for (position, (group_id, item)) in items.into_iter().enumerate() {
        results.push(None);
        match group_partition(shard, &group_id).await {
            Some(partition) => {
                let entry = by_partition.entry(partition).or_default();
                entry.0.push(position);
                entry.1.push(item);
            }
            None => results[position] = Some(Err(ErrorCode::CoordinatorNotAvailable)),
        }
    }
    let calls = by_partition
        .into_iter()
        .map(|(partition, (positions, items))| {
            let call = make_call(items);
            async move { (positions, call_partition(shard, partition, call).await) }
        })
        .collect::<Vec<_>>();
    for (positions, reply) in join_all(calls).await {
        match take(reply) {
            Ok(answers) if answers.len() == positions.len() => {
                for (position, answer) in positions.into_iter().zip(answers) {
                    results[position] = Some(Ok(answer));
                }
            }
            Ok(answers) => {
                tracing::error!(
                    expected = positions.len(),
                    got = answers.len(),
                    "group coordinator answered for the wrong number of groups"
                );
                for position in positions {
                    results[position] = Some(Err(UNEXPECTED_REPLY));
                }
            }
            Err(error) => {
                for position in positions {
                    results[position] = Some(Err(error));
                }
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or(Err(UNEXPECTED_REPLY)))
        .collect()
}

/// Logs a coordinator reply of the wrong kind and gives the error to report.
pub fn unexpected(api: &'static str, reply: &GroupReply) -> ErrorCode {
    tracing::error!(
        api,
        ?reply,
        "group coordinator answered with the wrong reply kind"
    );
    UNEXPECTED_REPLY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_host_prints_like_java_inet_address() {
        let v4: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        assert_eq!(client_host(Some(v4)), "/127.0.0.1");
        let v6: SocketAddr = "[::1]:5555".parse().unwrap();
        assert_eq!(client_host(Some(v6)), "/0:0:0:0:0:0:0:1");
        let mapped: SocketAddr = "[::ffff:10.1.2.3]:5555".parse().unwrap();
        assert_eq!(client_host(Some(mapped)), "/10.1.2.3");
        let full: SocketAddr = "[fe80::1:abcd]:1".parse().unwrap();
        assert_eq!(client_host(Some(full)), "/fe80:0:0:0:0:0:1:abcd");
        assert_eq!(client_host(None), "");
    }

    #[test]
    fn group_operations_are_read_describe_delete() {
        assert_eq!(GROUP_AUTHORIZED_OPERATIONS, 8 | 64 | 256);
    }

    #[test]
    fn topic_errors_keep_first_appearance_order() {
        let mut errors = TopicErrors::default();
        errors.add("b", 1, 3);
        errors.add("a", 0, 3);
        errors.add("b", 0, 0);
        assert_eq!(
            errors.topics,
            vec![
                ("b".to_string(), vec![(1, 3), (0, 0)]),
                ("a".to_string(), vec![(0, 3)]),
            ]
        );
    }
}
