//! Kafka's `__consumer_offsets` record encodings, byte for byte, so Kafka's
//! own tools, franz-go's `kmsg` and Kafka UIs decode what we write.
//!
//! Every record is a key and a value. The key starts with an `int16` record
//! type (historically "key version"): 0 or 1 for an offset commit, 2 for
//! group metadata, 3 (group epoch), 5 (member), 6 (target assignment
//! epoch), 7 (a member's target assignment) and 8 (a member's current
//! assignment) for KIP-848 consumer groups. Other types (KIP-848 regex
//! resolutions, share and streams groups) are neither written nor read. The value starts with an `int16`
//! schema version. A null value is a tombstone.
//!
//! ```text
//! OffsetCommitKey    type:int16(0|1) group:string topic:string partition:int32
//! OffsetCommitValue  v0: offset:int64 metadata:string commitTimestamp:int64
//!                    v1: v0 + expireTimestamp:int64
//!                    v2: as v0
//!                    v3: offset:int64 leaderEpoch:int32 metadata:string commitTimestamp:int64
//!                    v4: as v3, flexible (compact strings, tagged fields)
//! GroupMetadataKey   type:int16(2) group:string
//! GroupMetadataValue protocolType:string generation:int32 protocol:nullable_string
//!                    leader:nullable_string currentStateTimestamp:int64 (v2+)
//!                    members:[memberId groupInstanceId(v3+,nullable) clientId clientHost
//!                             rebalanceTimeout:int32(v1+) sessionTimeout:int32
//!                             subscription:bytes assignment:bytes]
//!                    v4 flexible
//! ```
//!
//! The schemas are Kafka's `OffsetCommitKey.json`, `OffsetCommitValue.json`,
//! `GroupMetadataKey.json` and `GroupMetadataValue.json` (group-coordinator
//! resources). What Kafka 4.x writes, and so what we write: key type 1 for
//! offsets and 2 for groups, OffsetCommitValue v3 (v1 when the commit carries
//! an explicit retention, the only way to persist an expire timestamp), and
//! GroupMetadataValue v3 (`GroupCoordinatorRecordHelpers`). Every version is
//! decoded. These are hand-written because the `kafka-protocol` crate does not
//! generate coordinator records; each field notes the versions it exists in.
//!
//! Pure code: used on any core.

use super::api::JoinProtocol;
pub use crate::protocol::schema::RecordError;
use crate::protocol::schema::{Reader, Writer};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// Key type of an offset commit record in Kafka 0.8.2 (same layout as 1).
pub const OFFSET_COMMIT_KEY_TYPE_LEGACY: i16 = 0;
/// Key type of an offset commit record.
pub const OFFSET_COMMIT_KEY_TYPE: i16 = 1;
/// Key type of a group metadata record.
pub const GROUP_METADATA_KEY_TYPE: i16 = 2;
/// Highest OffsetCommitValue version.
pub const OFFSET_COMMIT_VALUE_VERSION_MAX: i16 = 4;
/// Highest GroupMetadataValue version.
pub const GROUP_METADATA_VALUE_VERSION_MAX: i16 = 4;
/// Key type of a KIP-848 consumer group's metadata record (its epoch).
pub const CONSUMER_GROUP_METADATA_KEY_TYPE: i16 = 3;
/// Key type of a consumer group member's metadata (subscription, client).
pub const CONSUMER_GROUP_MEMBER_KEY_TYPE: i16 = 5;
/// Key type of a consumer group's target assignment epoch.
pub const CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE: i16 = 6;
/// Key type of one member's target assignment.
pub const CONSUMER_GROUP_TARGET_MEMBER_KEY_TYPE: i16 = 7;
/// Key type of one member's current assignment and epochs.
pub const CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE: i16 = 8;
/// GroupMetadataValue version Kafka 4.x writes.
pub const GROUP_METADATA_VALUE_VERSION_WRITTEN: i16 = 3;

/// Key of an offset commit: which group's offset for which partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffsetCommitKey {
    /// `group`.
    pub group: String,
    /// `topic`.
    pub topic: String,
    /// `partition`.
    pub partition: i32,
}

/// Value of an offset commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    /// `offset` (v0+).
    pub offset: i64,
    /// `leaderEpoch` (v3+, default -1).
    pub leader_epoch: i32,
    /// `metadata` (v0+).
    pub metadata: String,
    /// `commitTimestamp` (v0+).
    pub commit_timestamp_ms: i64,
    /// `expireTimestamp` (v1 only, default -1).
    pub expire_timestamp_ms: i64,
}

/// Key of a group's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupMetadataKey {
    /// `group`.
    pub group: String,
}

/// Value of a classic group's metadata: its generation and members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    /// `protocolType` (v0+); empty when the group has none.
    pub protocol_type: String,
    /// `generation` (v0+).
    pub generation: i32,
    /// `protocol` (v0+, nullable).
    pub protocol: Option<String>,
    /// `leader` (v0+, nullable).
    pub leader: Option<String>,
    /// `currentStateTimestamp` (v2+, default -1).
    pub current_state_timestamp_ms: i64,
    /// `members` (v0+).
    pub members: Vec<MemberMetadata>,
}

/// One member inside [`GroupMetadataValue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadata {
    /// `memberId` (v0+).
    pub member_id: String,
    /// `groupInstanceId` (v3+, nullable, default null).
    pub group_instance_id: Option<String>,
    /// `clientId` (v0+).
    pub client_id: String,
    /// `clientHost` (v0+).
    pub client_host: String,
    /// `rebalanceTimeout` (v1+; the schema default, 0, in v0).
    pub rebalance_timeout_ms: i32,
    /// `sessionTimeout` (v0+).
    pub session_timeout_ms: i32,
    /// `subscription` (v0+): the member's metadata for the chosen protocol.
    pub subscription: Bytes,
    /// `assignment` (v0+).
    pub assignment: Bytes,
}

/// One `__consumer_offsets` record, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorRecord {
    /// A committed offset, or its tombstone (`value` None).
    OffsetCommit {
        /// Group, topic, partition.
        key: OffsetCommitKey,
        /// The offset; None deletes it.
        value: Option<OffsetCommitValue>,
    },
    /// A group's metadata, or its tombstone (`value` None).
    GroupMetadata {
        /// The group.
        key: GroupMetadataKey,
        /// The metadata; None deletes the group.
        value: Option<GroupMetadataValue>,
    },
    /// A KIP-848 consumer group's record (types 3, 5, 6, 7 and 8), or its
    /// tombstone.
    ConsumerGroup {
        /// Record type, group and member.
        key: ConsumerGroupKey,
        /// The value; None deletes.
        value: Option<ConsumerGroupValue>,
    },
}

impl CoordinatorRecord {
    /// The record key's bytes, as Kafka 4.x writes them.
    pub fn key_bytes(&self) -> Bytes {
        match self {
            CoordinatorRecord::OffsetCommit { key, .. } => key.encode(),
            CoordinatorRecord::GroupMetadata { key, .. } => key.encode(),
            CoordinatorRecord::ConsumerGroup { key, .. } => key.encode(),
        }
    }

    /// The record value's bytes as Kafka 4.x writes them; None for a tombstone.
    pub fn value_bytes(&self) -> Option<Bytes> {
        match self {
            CoordinatorRecord::OffsetCommit { value, .. } => {
                value.as_ref().map(|v| v.encode(v.version_written()))
            }
            CoordinatorRecord::GroupMetadata { value, .. } => value
                .as_ref()
                .map(|v| v.encode(GROUP_METADATA_VALUE_VERSION_WRITTEN)),
            CoordinatorRecord::ConsumerGroup { value, .. } => value.as_ref().map(|v| v.encode()),
        }
    }

    /// Decodes a record read back from `__consumer_offsets`.
    ///
    /// # Errors
    /// [`RecordError::UnsupportedRecordType`] for record types this broker
    /// does not handle (skip those), and the other variants for malformed
    /// bytes.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<Self, RecordError> {
        let mut reader = Reader::new(key, false);
        let record_type = reader.i16()?;
        match record_type {
            OFFSET_COMMIT_KEY_TYPE_LEGACY | OFFSET_COMMIT_KEY_TYPE => {
                let key = OffsetCommitKey {
                    group: reader.string()?,
                    topic: reader.string()?,
                    partition: reader.i32()?,
                };
                reader.finish()?;
                let value = value.map(OffsetCommitValue::decode).transpose()?;
                Ok(CoordinatorRecord::OffsetCommit { key, value })
            }
            GROUP_METADATA_KEY_TYPE => {
                let key = GroupMetadataKey {
                    group: reader.string()?,
                };
                reader.finish()?;
                let value = value.map(GroupMetadataValue::decode).transpose()?;
                Ok(CoordinatorRecord::GroupMetadata { key, value })
            }
            CONSUMER_GROUP_METADATA_KEY_TYPE
            | CONSUMER_GROUP_MEMBER_KEY_TYPE
            | CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE
            | CONSUMER_GROUP_TARGET_MEMBER_KEY_TYPE
            | CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE => {
                let group = reader.string()?;
                let member_id = if record_type == CONSUMER_GROUP_METADATA_KEY_TYPE
                    || record_type == CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE
                {
                    None
                } else {
                    Some(reader.string()?)
                };
                reader.finish()?;
                let key = ConsumerGroupKey {
                    record_type,
                    group,
                    member_id,
                };
                let value = value
                    .map(|v| ConsumerGroupValue::decode(record_type, v))
                    .transpose()?;
                Ok(CoordinatorRecord::ConsumerGroup { key, value })
            }
            record_type => Err(RecordError::UnsupportedRecordType { record_type }),
        }
    }

    /// The group this record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            CoordinatorRecord::OffsetCommit { key, .. } => &key.group,
            CoordinatorRecord::GroupMetadata { key, .. } => &key.group,
            CoordinatorRecord::ConsumerGroup { key, .. } => &key.group,
        }
    }
}

impl OffsetCommitKey {
    /// Encodes the key with record type 1.
    pub fn encode(&self) -> Bytes {
        let mut writer = Writer::new(false);
        writer.i16(OFFSET_COMMIT_KEY_TYPE);
        writer.string(&self.group);
        writer.string(&self.topic);
        writer.i32(self.partition);
        writer.finish()
    }
}

impl GroupMetadataKey {
    /// Encodes the key with record type 2.
    pub fn encode(&self) -> Bytes {
        let mut writer = Writer::new(false);
        writer.i16(GROUP_METADATA_KEY_TYPE);
        writer.string(&self.group);
        writer.finish()
    }
}

impl OffsetCommitValue {
    /// The version Kafka 4.x writes for this value: 1 when it carries an
    /// expire timestamp (explicit retention in OffsetCommit v2-v4), else 3,
    /// the newest non-flexible version.
    pub fn version_written(&self) -> i16 {
        if self.expire_timestamp_ms != -1 {
            1
        } else {
            3
        }
    }

    /// Encodes the value at `version`; fields the version lacks are left out.
    ///
    /// # Panics
    /// If `version` is outside 0..=4.
    pub fn encode(&self, version: i16) -> Bytes {
        assert!((0..=OFFSET_COMMIT_VALUE_VERSION_MAX).contains(&version));
        let mut writer = Writer::new(version >= 4);
        writer.i16(version);
        writer.i64(self.offset);
        if version >= 3 {
            writer.i32(self.leader_epoch);
        }
        writer.string(&self.metadata);
        writer.i64(self.commit_timestamp_ms);
        if version == 1 {
            writer.i64(self.expire_timestamp_ms);
        }
        writer.tagged_fields();
        writer.finish()
    }

    /// Decodes a value of any version 0..=4.
    ///
    /// # Errors
    /// An unknown version or malformed bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let version = Reader::new(bytes, false).i16()?;
        if !(0..=OFFSET_COMMIT_VALUE_VERSION_MAX).contains(&version) {
            return Err(RecordError::UnsupportedValueVersion {
                record: "OffsetCommitValue",
                version,
            });
        }
        let mut reader = Reader::new(bytes, version >= 4);
        reader.i16()?;
        let offset = reader.i64()?;
        let leader_epoch = if version >= 3 { reader.i32()? } else { -1 };
        let metadata = reader.string()?;
        let commit_timestamp_ms = reader.i64()?;
        let expire_timestamp_ms = if version == 1 { reader.i64()? } else { -1 };
        reader.skip_tagged_fields()?;
        reader.finish()?;
        Ok(OffsetCommitValue {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp_ms,
            expire_timestamp_ms,
        })
    }
}

impl GroupMetadataValue {
    /// Encodes the value at `version`; fields the version lacks are left out.
    ///
    /// # Panics
    /// If `version` is outside 0..=4.
    pub fn encode(&self, version: i16) -> Bytes {
        assert!((0..=GROUP_METADATA_VALUE_VERSION_MAX).contains(&version));
        let mut writer = Writer::new(version >= 4);
        writer.i16(version);
        writer.string(&self.protocol_type);
        writer.i32(self.generation);
        writer.nullable_string(self.protocol.as_deref());
        writer.nullable_string(self.leader.as_deref());
        if version >= 2 {
            writer.i64(self.current_state_timestamp_ms);
        }
        writer.array_len(self.members.len());
        for member in &self.members {
            writer.string(&member.member_id);
            if version >= 3 {
                writer.nullable_string(member.group_instance_id.as_deref());
            }
            writer.string(&member.client_id);
            writer.string(&member.client_host);
            if version >= 1 {
                writer.i32(member.rebalance_timeout_ms);
            }
            writer.i32(member.session_timeout_ms);
            writer.bytes(&member.subscription);
            writer.bytes(&member.assignment);
            writer.tagged_fields();
        }
        writer.tagged_fields();
        writer.finish()
    }

    /// Decodes a value of any version 0..=4.
    ///
    /// # Errors
    /// An unknown version or malformed bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let version = Reader::new(bytes, false).i16()?;
        if !(0..=GROUP_METADATA_VALUE_VERSION_MAX).contains(&version) {
            return Err(RecordError::UnsupportedValueVersion {
                record: "GroupMetadataValue",
                version,
            });
        }
        let mut reader = Reader::new(bytes, version >= 4);
        reader.i16()?;
        let protocol_type = reader.string()?;
        let generation = reader.i32()?;
        let protocol = reader.nullable_string()?;
        let leader = reader.nullable_string()?;
        let current_state_timestamp_ms = if version >= 2 { reader.i64()? } else { -1 };
        let count = reader.array_len()?;
        let mut members = Vec::new();
        for _ in 0..count {
            let member_id = reader.string()?;
            let group_instance_id = if version >= 3 {
                reader.nullable_string()?
            } else {
                None
            };
            let client_id = reader.string()?;
            let client_host = reader.string()?;
            let rebalance_timeout_ms = if version >= 1 { reader.i32()? } else { 0 };
            let session_timeout_ms = reader.i32()?;
            let subscription = reader.bytes()?;
            let assignment = reader.bytes()?;
            reader.skip_tagged_fields()?;
            members.push(MemberMetadata {
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                subscription,
                assignment,
            });
        }
        reader.skip_tagged_fields()?;
        reader.finish()?;
        Ok(GroupMetadataValue {
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp_ms,
            members,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset_value() -> OffsetCommitValue {
        OffsetCommitValue {
            offset: 5,
            leader_epoch: 2,
            metadata: "m".to_string(),
            commit_timestamp_ms: 1000,
            expire_timestamp_ms: -1,
        }
    }

    fn group_value() -> GroupMetadataValue {
        GroupMetadataValue {
            protocol_type: "consumer".to_string(),
            generation: 7,
            protocol: Some("range".to_string()),
            leader: Some("c-1".to_string()),
            current_state_timestamp_ms: 123_456,
            members: vec![
                MemberMetadata {
                    member_id: "c-1".to_string(),
                    group_instance_id: Some("i-1".to_string()),
                    client_id: "c".to_string(),
                    client_host: "/127.0.0.1".to_string(),
                    rebalance_timeout_ms: 300_000,
                    session_timeout_ms: 45_000,
                    subscription: Bytes::from_static(b"\x00\x01sub"),
                    assignment: Bytes::from_static(b"asg"),
                },
                MemberMetadata {
                    member_id: "c-2".to_string(),
                    group_instance_id: None,
                    client_id: "c".to_string(),
                    client_host: "/127.0.0.2".to_string(),
                    rebalance_timeout_ms: 60_000,
                    session_timeout_ms: 10_000,
                    subscription: Bytes::new(),
                    assignment: Bytes::new(),
                },
            ],
        }
    }

    /// Golden bytes of an offset commit key and its v3 value, computed by hand
    /// from OffsetCommitKey.json and OffsetCommitValue.json: int16 record type
    /// 1, int16-length strings, big-endian integers, then int16 version 3,
    /// offset, leader epoch, metadata, commit timestamp.
    #[test]
    fn offset_commit_record_golden_bytes() {
        let record = CoordinatorRecord::OffsetCommit {
            key: OffsetCommitKey {
                group: "g".to_string(),
                topic: "t".to_string(),
                partition: 3,
            },
            value: Some(offset_value()),
        };
        assert_eq!(
            record.key_bytes().as_ref(),
            &[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]
        );
        assert_eq!(
            record.value_bytes().expect("value").as_ref(),
            &[
                0, 3, // version
                0, 0, 0, 0, 0, 0, 0, 5, // offset
                0, 0, 0, 2, // leader epoch
                0, 1, b'm', // metadata
                0, 0, 0, 0, 0, 0, 0x03, 0xe8, // commit timestamp 1000
            ]
        );
    }

    /// A commit with explicit retention is written as v1, with the expire
    /// timestamp and without the leader epoch, as Kafka 4.x does.
    #[test]
    fn offset_commit_with_expire_timestamp_is_written_as_v1() {
        let value = OffsetCommitValue {
            expire_timestamp_ms: 2000,
            ..offset_value()
        };
        assert_eq!(value.version_written(), 1);
        let record = CoordinatorRecord::OffsetCommit {
            key: OffsetCommitKey {
                group: "g".to_string(),
                topic: "t".to_string(),
                partition: 3,
            },
            value: Some(value.clone()),
        };
        assert_eq!(
            record.value_bytes().expect("value").as_ref(),
            &[
                0, 1, // version
                0, 0, 0, 0, 0, 0, 0, 5, // offset
                0, 1, b'm', // metadata
                0, 0, 0, 0, 0, 0, 0x03, 0xe8, // commit timestamp
                0, 0, 0, 0, 0, 0, 0x07, 0xd0, // expire timestamp 2000
            ]
        );
        let decoded = OffsetCommitValue::decode(&value.encode(1)).expect("decode");
        assert_eq!(decoded.expire_timestamp_ms, 2000);
        assert_eq!(decoded.leader_epoch, -1);
    }

    /// Golden bytes of a group metadata key and a v3 value with one member,
    /// by hand from GroupMetadataKey.json and GroupMetadataValue.json.
    #[test]
    fn group_metadata_record_golden_bytes() {
        let value = GroupMetadataValue {
            protocol_type: "consumer".to_string(),
            generation: 1,
            protocol: Some("range".to_string()),
            leader: None,
            current_state_timestamp_ms: 10,
            members: vec![MemberMetadata {
                member_id: "m".to_string(),
                group_instance_id: None,
                client_id: "c".to_string(),
                client_host: "h".to_string(),
                rebalance_timeout_ms: 256,
                session_timeout_ms: 255,
                subscription: Bytes::from_static(&[0xab]),
                assignment: Bytes::new(),
            }],
        };
        let record = CoordinatorRecord::GroupMetadata {
            key: GroupMetadataKey {
                group: "g".to_string(),
            },
            value: Some(value),
        };
        assert_eq!(record.key_bytes().as_ref(), &[0, 2, 0, 1, b'g']);
        let mut expected = vec![0, 3]; // version
        expected.extend_from_slice(&[0, 8]);
        expected.extend_from_slice(b"consumer");
        expected.extend_from_slice(&[0, 0, 0, 1]); // generation
        expected.extend_from_slice(&[0, 5]);
        expected.extend_from_slice(b"range");
        expected.extend_from_slice(&[0xff, 0xff]); // leader null
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 10]); // state timestamp
        expected.extend_from_slice(&[0, 0, 0, 1]); // one member
        expected.extend_from_slice(&[0, 1, b'm']); // member id
        expected.extend_from_slice(&[0xff, 0xff]); // group instance id null
        expected.extend_from_slice(&[0, 1, b'c']); // client id
        expected.extend_from_slice(&[0, 1, b'h']); // client host
        expected.extend_from_slice(&[0, 0, 1, 0]); // rebalance timeout 256
        expected.extend_from_slice(&[0, 0, 0, 0xff]); // session timeout 255
        expected.extend_from_slice(&[0, 0, 0, 1, 0xab]); // subscription
        expected.extend_from_slice(&[0, 0, 0, 0]); // assignment, empty
        assert_eq!(record.value_bytes().expect("value").as_ref(), &expected[..]);
        assert_eq!(
            CoordinatorRecord::decode(&record.key_bytes(), Some(&expected)).expect("decode"),
            record
        );
    }

    /// The flexible v4 encodings, by hand: compact lengths are n+1 as an
    /// unsigned varint (0 is null) and each struct ends with an empty
    /// tagged-field section.
    #[test]
    fn flexible_v4_golden_bytes() {
        let offset = OffsetCommitValue {
            metadata: String::new(),
            ..offset_value()
        };
        assert_eq!(
            offset.encode(4).as_ref(),
            &[
                0, 4, // version
                0, 0, 0, 0, 0, 0, 0, 5, // offset
                0, 0, 0, 2, // leader epoch
                1, // metadata "" (compact length 0+1)
                0, 0, 0, 0, 0, 0, 0x03, 0xe8, // commit timestamp
                0,    // tagged fields
            ]
        );
        let group = GroupMetadataValue {
            protocol_type: String::new(),
            generation: 0,
            protocol: None,
            leader: None,
            current_state_timestamp_ms: -1,
            members: Vec::new(),
        };
        assert_eq!(
            group.encode(4).as_ref(),
            &[
                0, 4, // version
                1, // protocol type ""
                0, 0, 0, 0, // generation
                0, // protocol null
                0, // leader null
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // state timestamp -1
                1,    // members: empty compact array
                0,    // tagged fields
            ]
        );
    }

    /// Every value version round-trips; fields a version lacks come back as
    /// the schema default.
    #[test]
    fn values_round_trip_every_version() {
        for version in 0..=OFFSET_COMMIT_VALUE_VERSION_MAX {
            let mut value = offset_value();
            if version == 1 {
                value.expire_timestamp_ms = 99;
            }
            let decoded = OffsetCommitValue::decode(&value.encode(version)).expect("decode");
            let mut expected = value.clone();
            if version < 3 {
                expected.leader_epoch = -1;
            }
            assert_eq!(decoded, expected, "OffsetCommitValue v{version}");
        }
        for version in 0..=GROUP_METADATA_VALUE_VERSION_MAX {
            let value = group_value();
            let decoded = GroupMetadataValue::decode(&value.encode(version)).expect("decode");
            let mut expected = value.clone();
            if version < 2 {
                expected.current_state_timestamp_ms = -1;
            }
            for member in &mut expected.members {
                if version < 3 {
                    member.group_instance_id = None;
                }
                if version < 1 {
                    member.rebalance_timeout_ms = 0;
                }
            }
            assert_eq!(decoded, expected, "GroupMetadataValue v{version}");
        }
    }

    #[test]
    fn records_round_trip_with_tombstones_and_legacy_keys() {
        let records = [
            CoordinatorRecord::OffsetCommit {
                key: OffsetCommitKey {
                    group: "grüße".to_string(),
                    topic: "topic".to_string(),
                    partition: 7,
                },
                value: Some(offset_value()),
            },
            CoordinatorRecord::OffsetCommit {
                key: OffsetCommitKey {
                    group: "g".to_string(),
                    topic: "t".to_string(),
                    partition: 0,
                },
                value: None,
            },
            CoordinatorRecord::GroupMetadata {
                key: GroupMetadataKey {
                    group: "g".to_string(),
                },
                value: Some(group_value()),
            },
            CoordinatorRecord::GroupMetadata {
                key: GroupMetadataKey {
                    group: "g".to_string(),
                },
                value: None,
            },
        ];
        for record in records {
            let key = record.key_bytes();
            let value = record.value_bytes();
            let decoded = CoordinatorRecord::decode(&key, value.as_deref()).expect("decode");
            assert_eq!(decoded, record);
        }
        // Key type 0 (Kafka 0.8.2) has the same layout as type 1.
        let legacy_key = [0, 0, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 1];
        let decoded = CoordinatorRecord::decode(&legacy_key, None).expect("decode");
        assert_eq!(decoded.group_id(), "g");
    }

    #[test]
    fn malformed_records_are_errors_not_panics() {
        assert_eq!(
            CoordinatorRecord::decode(&[0, 16, 0, 0], None),
            Err(RecordError::UnsupportedRecordType { record_type: 16 })
        );
        assert!(matches!(
            CoordinatorRecord::decode(&[0, 1, 0, 9, b'g'], None),
            Err(RecordError::Truncated { .. })
        ));
        assert!(matches!(
            OffsetCommitValue::decode(&[0, 9]),
            Err(RecordError::UnsupportedValueVersion { version: 9, .. })
        ));
        // A member count far beyond the bytes present is refused before any
        // allocation.
        let mut huge = group_value().encode(3).to_vec();
        // version 2, "consumer" 10, generation 4, "range" 7, "c-1" 5, timestamp 8.
        let members_at = 2 + 10 + 4 + 7 + 5 + 8;
        huge[members_at..members_at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(GroupMetadataValue::decode(&huge).is_err());
        let mut trailing = offset_value().encode(3).to_vec();
        trailing.push(0);
        assert_eq!(
            OffsetCommitValue::decode(&trailing),
            Err(RecordError::TrailingBytes { remaining: 1 })
        );
        assert!(matches!(
            OffsetCommitValue::decode(&[0, 3, 0]),
            Err(RecordError::Truncated { .. })
        ));
    }
}

// ---------------------------------------------------------------------------
// KIP-848 consumer group records
// ---------------------------------------------------------------------------

/// Partitions by topic id, as the assignment records carry them.
pub type TopicPartitionsMap = BTreeMap<Uuid, BTreeSet<i32>>;

/// The key of a consumer group record: `type:int16 group:string` and, for
/// member records (5, 7, 8), `member:string`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupKey {
    /// One of the `CONSUMER_GROUP_*_KEY_TYPE`s.
    pub record_type: i16,
    /// The group.
    pub group: String,
    /// The member, for member records.
    pub member_id: Option<String>,
}

impl ConsumerGroupKey {
    /// Encodes the key (not flexible: int16-length strings).
    pub fn encode(&self) -> Bytes {
        let mut writer = Writer::new(false);
        writer.i16(self.record_type);
        writer.string(&self.group);
        if let Some(member_id) = &self.member_id {
            writer.string(member_id);
        }
        writer.finish()
    }
}

/// `ConsumerGroupMemberMetadataValue.ClassicMemberMetadata` (tagged field
/// 0): set for a member that speaks the classic protocol (JoinGroup,
/// SyncGroup, Heartbeat) inside a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberValue {
    /// `SessionTimeoutMs`.
    pub session_timeout_ms: i32,
    /// `SupportedProtocols`, in the member's order.
    pub supported_protocols: Vec<JoinProtocol>,
}

/// `ConsumerGroupMemberMetadataValue` v0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberValue {
    /// `InstanceId`.
    pub instance_id: Option<String>,
    /// `RackId`.
    pub rack_id: Option<String>,
    /// `ClientId`.
    pub client_id: String,
    /// `ClientHost`.
    pub client_host: String,
    /// `SubscribedTopicNames`.
    pub subscribed_topic_names: Vec<String>,
    /// `SubscribedTopicRegex`.
    pub subscribed_topic_regex: Option<String>,
    /// `RebalanceTimeoutMs`.
    pub rebalance_timeout_ms: i32,
    /// `ServerAssignor`.
    pub server_assignor: Option<String>,
    /// `ClassicMemberMetadata` (tagged field 0).
    pub classic: Option<ClassicMemberValue>,
}

/// `ConsumerGroupCurrentMemberAssignmentValue` v0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentAssignmentValue {
    /// `MemberEpoch`.
    pub member_epoch: i32,
    /// `PreviousMemberEpoch`.
    pub previous_member_epoch: i32,
    /// `State`: 0 stable, 1 unrevoked partitions, 2 unreleased partitions.
    pub state: i8,
    /// `AssignedPartitions`.
    pub assigned: TopicPartitionsMap,
    /// `PartitionsPendingRevocation`.
    pub pending_revocation: TopicPartitionsMap,
}

/// The value of a consumer group record (all are flexible v0 structs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerGroupValue {
    /// 3, `ConsumerGroupMetadataValue`: `Epoch` and the tagged
    /// `MetadataHash` (tag 0; ours: a hash of the subscribed topics' names,
    /// ids and partition counts, compared only by this broker).
    Metadata {
        /// The group epoch.
        epoch: i32,
        /// Hash of the subscribed topics.
        metadata_hash: i64,
    },
    /// 5, `ConsumerGroupMemberMetadataValue`.
    Member(Box<ConsumerMemberValue>),
    /// 6, `ConsumerGroupTargetAssignmentMetadataValue`: `AssignmentEpoch`.
    TargetEpoch(i32),
    /// 7, `ConsumerGroupTargetAssignmentMemberValue`: `TopicPartitions`.
    TargetMember(TopicPartitionsMap),
    /// 8, `ConsumerGroupCurrentMemberAssignmentValue`.
    CurrentAssignment(CurrentAssignmentValue),
}

fn write_partitions(writer: &mut Writer, partitions: &TopicPartitionsMap) {
    writer.array_len(partitions.len());
    for (topic, set) in partitions {
        writer.uuid(topic);
        writer.array_len(set.len());
        for &p in set {
            writer.i32(p);
        }
        writer.tagged_fields();
    }
}

fn read_partitions(reader: &mut Reader<'_>) -> Result<TopicPartitionsMap, RecordError> {
    let mut out = TopicPartitionsMap::new();
    for _ in 0..reader.array_len()? {
        let topic = reader.uuid()?;
        let set = out.entry(topic).or_default();
        for _ in 0..reader.array_len()? {
            set.insert(reader.i32()?);
        }
        reader.skip_tagged_fields()?;
    }
    Ok(out)
}

/// Reads a nullable `ClassicMemberMetadata` struct (flexible): an int8
/// marker (-1 null, 1 present), then the struct.
fn read_classic_member(bytes: &[u8]) -> Result<Option<ClassicMemberValue>, RecordError> {
    let mut reader = Reader::new(bytes, true);
    if reader.i8()? < 0 {
        reader.finish()?;
        return Ok(None);
    }
    let session_timeout_ms = reader.i32()?;
    let mut supported_protocols = Vec::new();
    for _ in 0..reader.array_len()? {
        let name = reader.string()?;
        let metadata = reader.bytes()?;
        reader.skip_tagged_fields()?;
        supported_protocols.push(JoinProtocol { name, metadata });
    }
    reader.skip_tagged_fields()?;
    reader.finish()?;
    Ok(Some(ClassicMemberValue {
        session_timeout_ms,
        supported_protocols,
    }))
}

impl ConsumerGroupValue {
    /// Encodes the value at version 0 (flexible).
    pub fn encode(&self) -> Bytes {
        let mut writer = Writer::new(true);
        writer.i16(0);
        match self {
            ConsumerGroupValue::Metadata {
                epoch,
                metadata_hash,
            } => {
                writer.i32(*epoch);
                if *metadata_hash == 0 {
                    writer.tagged_fields();
                } else {
                    // One tagged field: tag 0, 8 bytes.
                    writer.unsigned_varint(1);
                    writer.unsigned_varint(0);
                    writer.unsigned_varint(8);
                    writer.i64(*metadata_hash);
                }
                return writer.finish();
            }
            ConsumerGroupValue::Member(m) => {
                writer.nullable_string(m.instance_id.as_deref());
                writer.nullable_string(m.rack_id.as_deref());
                writer.string(&m.client_id);
                writer.string(&m.client_host);
                writer.array_len(m.subscribed_topic_names.len());
                for name in &m.subscribed_topic_names {
                    writer.string(name);
                }
                writer.nullable_string(m.subscribed_topic_regex.as_deref());
                writer.i32(m.rebalance_timeout_ms);
                writer.nullable_string(m.server_assignor.as_deref());
                if let Some(classic) = &m.classic {
                    // A nullable struct: an int8 1 (present) before it.
                    let mut field = Writer::new(true);
                    field.i8(1);
                    field.i32(classic.session_timeout_ms);
                    field.array_len(classic.supported_protocols.len());
                    for protocol in &classic.supported_protocols {
                        field.string(&protocol.name);
                        field.bytes(&protocol.metadata);
                        field.tagged_fields();
                    }
                    field.tagged_fields();
                    let field = field.finish();
                    // One tagged field: tag 0.
                    writer.unsigned_varint(1);
                    writer.unsigned_varint(0);
                    writer.unsigned_varint(field.len() as u64);
                    writer.raw(&field);
                    return writer.finish();
                }
            }
            ConsumerGroupValue::TargetEpoch(epoch) => writer.i32(*epoch),
            ConsumerGroupValue::TargetMember(partitions) => {
                write_partitions(&mut writer, partitions)
            }
            ConsumerGroupValue::CurrentAssignment(a) => {
                writer.i32(a.member_epoch);
                writer.i32(a.previous_member_epoch);
                writer.i8(a.state);
                write_partitions(&mut writer, &a.assigned);
                write_partitions(&mut writer, &a.pending_revocation);
            }
        }
        writer.tagged_fields();
        writer.finish()
    }

    /// Decodes the value of a record of `record_type`.
    ///
    /// # Errors
    /// An unknown version or malformed bytes.
    pub fn decode(record_type: i16, bytes: &[u8]) -> Result<Self, RecordError> {
        let version = Reader::new(bytes, false).i16()?;
        if version != 0 {
            return Err(RecordError::UnsupportedValueVersion {
                record: "ConsumerGroup*Value",
                version,
            });
        }
        let mut reader = Reader::new(bytes, true);
        reader.i16()?;
        let value = match record_type {
            CONSUMER_GROUP_METADATA_KEY_TYPE => {
                let epoch = reader.i32()?;
                let metadata_hash = match reader.tagged_field(0)? {
                    Some(field) if field.len() == 8 => {
                        let mut array = [0u8; 8];
                        array.copy_from_slice(field);
                        i64::from_be_bytes(array)
                    }
                    _ => 0,
                };
                reader.finish()?;
                return Ok(ConsumerGroupValue::Metadata {
                    epoch,
                    metadata_hash,
                });
            }
            CONSUMER_GROUP_MEMBER_KEY_TYPE => {
                let instance_id = reader.nullable_string()?;
                let rack_id = reader.nullable_string()?;
                let client_id = reader.string()?;
                let client_host = reader.string()?;
                let mut subscribed_topic_names = Vec::new();
                for _ in 0..reader.array_len()? {
                    subscribed_topic_names.push(reader.string()?);
                }
                let subscribed_topic_regex = reader.nullable_string()?;
                let rebalance_timeout_ms = reader.i32()?;
                let server_assignor = reader.nullable_string()?;
                let classic = match reader.tagged_field(0)? {
                    Some(field) => read_classic_member(field)?,
                    None => None,
                };
                reader.finish()?;
                return Ok(ConsumerGroupValue::Member(Box::new(ConsumerMemberValue {
                    instance_id,
                    rack_id,
                    client_id,
                    client_host,
                    subscribed_topic_names,
                    subscribed_topic_regex,
                    rebalance_timeout_ms,
                    server_assignor,
                    classic,
                })));
            }
            CONSUMER_GROUP_TARGET_EPOCH_KEY_TYPE => ConsumerGroupValue::TargetEpoch(reader.i32()?),
            CONSUMER_GROUP_TARGET_MEMBER_KEY_TYPE => {
                ConsumerGroupValue::TargetMember(read_partitions(&mut reader)?)
            }
            CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY_TYPE => {
                let member_epoch = reader.i32()?;
                let previous_member_epoch = reader.i32()?;
                let state = reader.i8()?;
                let assigned = read_partitions(&mut reader)?;
                let pending_revocation = read_partitions(&mut reader)?;
                ConsumerGroupValue::CurrentAssignment(CurrentAssignmentValue {
                    member_epoch,
                    previous_member_epoch,
                    state,
                    assigned,
                    pending_revocation,
                })
            }
            record_type => return Err(RecordError::UnsupportedRecordType { record_type }),
        };
        reader.skip_tagged_fields()?;
        reader.finish()?;
        Ok(value)
    }
}

#[cfg(test)]
mod consumer_group_tests {
    use super::*;

    #[test]
    fn consumer_group_records_round_trip() {
        let t = Uuid::from_bytes([3; 16]);
        let records = [
            (
                ConsumerGroupKey {
                    record_type: 3,
                    group: "g".into(),
                    member_id: None,
                },
                ConsumerGroupValue::Metadata {
                    epoch: 4,
                    metadata_hash: -7,
                },
            ),
            (
                ConsumerGroupKey {
                    record_type: 5,
                    group: "g".into(),
                    member_id: Some("m".into()),
                },
                ConsumerGroupValue::Member(Box::new(ConsumerMemberValue {
                    instance_id: Some("i".into()),
                    rack_id: None,
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    subscribed_topic_names: vec!["a".into(), "b".into()],
                    subscribed_topic_regex: Some("x.*".into()),
                    rebalance_timeout_ms: 300_000,
                    server_assignor: Some("range".into()),
                    classic: None,
                })),
            ),
            (
                ConsumerGroupKey {
                    record_type: 5,
                    group: "g".into(),
                    member_id: Some("classic".into()),
                },
                ConsumerGroupValue::Member(Box::new(ConsumerMemberValue {
                    instance_id: None,
                    rack_id: None,
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    subscribed_topic_names: vec!["a".into()],
                    subscribed_topic_regex: None,
                    rebalance_timeout_ms: 300_000,
                    server_assignor: None,
                    classic: Some(ClassicMemberValue {
                        session_timeout_ms: 45_000,
                        supported_protocols: vec![
                            JoinProtocol {
                                name: "range".into(),
                                metadata: Bytes::from_static(b"\0\x01sub"),
                            },
                            JoinProtocol {
                                name: "roundrobin".into(),
                                metadata: Bytes::new(),
                            },
                        ],
                    }),
                })),
            ),
            (
                ConsumerGroupKey {
                    record_type: 6,
                    group: "g".into(),
                    member_id: None,
                },
                ConsumerGroupValue::TargetEpoch(4),
            ),
            (
                ConsumerGroupKey {
                    record_type: 7,
                    group: "g".into(),
                    member_id: Some("m".into()),
                },
                ConsumerGroupValue::TargetMember([(t, BTreeSet::from([0, 2]))].into()),
            ),
            (
                ConsumerGroupKey {
                    record_type: 8,
                    group: "g".into(),
                    member_id: Some("m".into()),
                },
                ConsumerGroupValue::CurrentAssignment(CurrentAssignmentValue {
                    member_epoch: 4,
                    previous_member_epoch: 3,
                    state: 1,
                    assigned: [(t, BTreeSet::from([0]))].into(),
                    pending_revocation: [(t, BTreeSet::from([1]))].into(),
                }),
            ),
        ];
        for (key, value) in records {
            let record = CoordinatorRecord::ConsumerGroup {
                key,
                value: Some(value),
            };
            let decoded =
                CoordinatorRecord::decode(&record.key_bytes(), record.value_bytes().as_deref())
                    .expect("decodes");
            assert_eq!(decoded, record);
        }
        // Kafka's own bytes for ConsumerGroupMetadataValue without the hash.
        let value = ConsumerGroupValue::Metadata {
            epoch: 1,
            metadata_hash: 0,
        }
        .encode();
        assert_eq!(&value[..], &[0, 0, 0, 0, 0, 1, 0]);
    }

    /// A `ConsumerGroupMemberMetadataValue` Kafka 4.1.1 wrote for a classic
    /// librdkafka member (cooperative-sticky) of a consumer group: read
    /// field by field, and written back to the same bytes.
    #[test]
    fn a_classic_member_record_reads_and_writes_as_kafkas() {
        let kafka = "000000000872646b61666b610b2f3132372e302e302e310213726f6c6c2d3137393634373536\
            313334343301000493e00001004401000027100213636f6f70657261746976652d737469636b79\
            290003000000010012726f6c6c2d313739363437353631333434330000000000000000ffffffff\
            00000000";
        let bytes: Vec<u8> = (0..kafka.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&kafka[i..i + 2], 16).expect("hex"))
            .collect();
        let value = ConsumerGroupValue::decode(CONSUMER_GROUP_MEMBER_KEY_TYPE, &bytes)
            .expect("Kafka's record decodes");
        let ConsumerGroupValue::Member(member) = &value else {
            panic!("{value:?}");
        };
        assert_eq!(member.client_id, "rdkafka");
        assert_eq!(member.subscribed_topic_names, ["roll-1796475613443"]);
        assert_eq!(member.rebalance_timeout_ms, 300_000);
        let classic = member.classic.as_ref().expect("classic metadata");
        assert_eq!(classic.session_timeout_ms, 10_000);
        assert_eq!(classic.supported_protocols.len(), 1);
        assert_eq!(classic.supported_protocols[0].name, "cooperative-sticky");
        assert_eq!(classic.supported_protocols[0].metadata.len(), 40);
        assert_eq!(&value.encode()[..], &bytes[..]);
    }
}
