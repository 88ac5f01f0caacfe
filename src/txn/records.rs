//! The records of `__transaction_state` in Kafka's schemas
//! (`TransactionLogKey` v0, `TransactionLogValue` v0 and v1), so a data
//! directory reads like Kafka's and Kafka's tools can dump it. Values are
//! written as v1 while the finalized `transaction.version` is 1 or more, as
//! Kafka writes them, else v0. Pure code: no I/O, any core.

use std::collections::BTreeSet;

use thiserror::Error;

use crate::protocol::schema::{Reader, RecordError, Writer};
use crate::shard::messages::TopicPartition;

/// A transactional id's state (Kafka's `TransactionState`, with its ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnState {
    /// No transaction open; the producer has an id and epoch.
    Empty,
    /// Partitions were added; the transaction is open.
    Ongoing,
    /// EndTxn(commit) is decided; markers are being written.
    PrepareCommit,
    /// EndTxn(abort) or a timeout is decided; markers are being written.
    PrepareAbort,
    /// Every COMMIT marker is written.
    CompleteCommit,
    /// Every ABORT marker is written.
    CompleteAbort,
    /// The id is being removed.
    Dead,
    /// An epoch fence before an abort (Kafka writes it; we read it).
    PrepareEpochFence,
}

impl TxnState {
    /// Kafka's byte for the state.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// The state for Kafka's byte.
    pub fn from_id(id: i8) -> Option<TxnState> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            7 => TxnState::PrepareEpochFence,
            _ => return None,
        })
    }

    /// The name DescribeTransactions and ListTransactions answer.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// Every state, for matching ListTransactions filters.
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];
}

/// The persisted part of a transactional id's metadata
/// (`TransactionLogValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogValue {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Transaction timeout.
    pub timeout_ms: i32,
    /// State.
    pub state: TxnState,
    /// Partitions of the open or finishing transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// Last change.
    pub last_update_ms: i64,
    /// When the current transaction started, or -1.
    pub start_ms: i64,
    /// The producer id before the last change of id, or -1 (v1 tag 0).
    pub previous_producer_id: i64,
    /// The producer id a finishing V2 transaction hands on, or -1 (v1 tag
    /// 1). Kafka 4.1.1 leaves tags 0 and 1 unwritten (fixed after it,
    /// KAFKA-20310); they are written here so that a restart between a
    /// Prepare and its Complete keeps the change of producer id.
    pub next_producer_id: i64,
    /// The client's transaction version, 0 or 2 (v1 tag 2).
    pub client_transaction_version: i16,
}

/// Why a record could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TxnRecordError {
    /// Bytes the schema cannot read: too few, a bad length or string.
    #[error("transaction log record: {0}")]
    Schema(#[from] RecordError),
    /// A version this broker does not know.
    #[error("transaction log record version {0} is not supported")]
    UnknownVersion(i16),
    /// An unknown state byte.
    #[error("transaction state {0} is unknown")]
    UnknownState(i8),
    /// Bytes that are not what the schema says.
    #[error("transaction log record is malformed: {0}")]
    Malformed(&'static str),
}

/// Encodes the record key of `transactional_id`.
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut w = Writer::new(false);
    w.i16(0);
    w.string(transactional_id);
    w.finish().to_vec()
}

/// Decodes a record key into its transactional id.
///
/// # Errors
/// [`TxnRecordError`] for short, unknown or malformed keys.
pub fn decode_key(bytes: &[u8]) -> Result<String, TxnRecordError> {
    let mut r = Reader::new(bytes, false);
    let version = r.i16()?;
    if version != 0 {
        return Err(TxnRecordError::UnknownVersion(version));
    }
    Ok(r.string()?)
}

/// Encodes `value` as `TransactionLogValue` version 1 (flexible, with the
/// tagged fields that differ from their defaults) or 0 (`flexible` false,
/// without them). The partitions of an Empty id are null, as Kafka writes.
pub fn encode_value(value: &TxnLogValue, flexible: bool) -> Vec<u8> {
    let mut w = Writer::new(flexible);
    w.i16(i16::from(flexible));
    w.i64(value.producer_id);
    w.i16(value.producer_epoch);
    w.i32(value.timeout_ms);
    w.i8(value.state.id());
    if value.state == TxnState::Empty {
        w.nullable_array_len(None);
    } else {
        let topics = group_by_topic(&value.partitions);
        w.array_len(topics.len());
        for (topic, partitions) in &topics {
            w.string(topic);
            w.array_len(partitions.len());
            for &p in partitions {
                w.i32(p);
            }
            w.tagged_fields();
        }
    }
    w.i64(value.last_update_ms);
    w.i64(value.start_ms);
    let previous = value.previous_producer_id.to_be_bytes();
    let next = value.next_producer_id.to_be_bytes();
    let version = value.client_transaction_version.to_be_bytes();
    let tagged: Vec<(u64, &[u8])> = [
        (0, &previous[..], value.previous_producer_id != -1),
        (1, &next[..], value.next_producer_id != -1),
        (2, &version[..], value.client_transaction_version != 0),
    ]
    .into_iter()
    .filter(|&(_, _, written)| written)
    .map(|(tag, bytes, _)| (tag, bytes))
    .collect();
    w.tagged_fields_with(&tagged);
    w.finish().to_vec()
}

/// Decodes `TransactionLogValue` version 0 or 1.
///
/// # Errors
/// [`TxnRecordError`] for short, unknown or malformed values.
pub fn decode_value(bytes: &[u8]) -> Result<TxnLogValue, TxnRecordError> {
    let version = Reader::new(bytes, false).i16()?;
    let flexible = match version {
        0 => false,
        1 => true,
        other => return Err(TxnRecordError::UnknownVersion(other)),
    };
    let mut r = Reader::new(bytes, flexible);
    r.i16()?;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let timeout_ms = r.i32()?;
    let state_id = r.i8()?;
    let state = TxnState::from_id(state_id).ok_or(TxnRecordError::UnknownState(state_id))?;
    let mut partitions = BTreeSet::new();
    for _ in 0..r.nullable_array_len()?.unwrap_or(0) {
        let topic = r.string()?;
        for _ in 0..r.array_len()? {
            partitions.insert(TopicPartition {
                topic: topic.clone(),
                partition: r.i32()?,
            });
        }
        r.skip_tagged_fields()?;
    }
    let last_update_ms = r.i64()?;
    let start_ms = r.i64()?;
    let mut value = TxnLogValue {
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        partitions,
        last_update_ms,
        start_ms,
        previous_producer_id: -1,
        next_producer_id: -1,
        client_transaction_version: 0,
    };
    let mut wrong_size = false;
    r.tagged_fields(|tag, bytes| {
        let wide = <[u8; 8]>::try_from(bytes).map(i64::from_be_bytes);
        let narrow = <[u8; 2]>::try_from(bytes).map(i16::from_be_bytes);
        match (tag, wide, narrow) {
            (0, Ok(id), _) => value.previous_producer_id = id,
            (1, Ok(id), _) => value.next_producer_id = id,
            (2, _, Ok(version)) => value.client_transaction_version = version,
            (0..=2, _, _) => wrong_size = true,
            // NextProducerEpoch (3) and later tags: not used here.
            _ => {}
        }
        Ok(())
    })?;
    if wrong_size {
        return Err(TxnRecordError::Malformed("tagged field of the wrong size"));
    }
    Ok(value)
}

/// Partitions grouped by topic, in order.
pub fn group_by_topic(partitions: &BTreeSet<TopicPartition>) -> Vec<(String, Vec<i32>)> {
    let mut topics: Vec<(String, Vec<i32>)> = Vec::new();
    for tp in partitions {
        match topics.last_mut() {
            Some((topic, list)) if *topic == tp.topic => list.push(tp.partition),
            _ => topics.push((tp.topic.clone(), vec![tp.partition])),
        }
    }
    topics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.to_string(),
            partition,
        }
    }

    fn sample() -> TxnLogValue {
        TxnLogValue {
            producer_id: 1001,
            producer_epoch: 3,
            timeout_ms: 60_000,
            state: TxnState::Ongoing,
            partitions: [tp("b", 1), tp("a", 2), tp("a", 0)].into_iter().collect(),
            last_update_ms: 1_700_000_000_123,
            start_ms: 1_700_000_000_000,
            previous_producer_id: -1,
            next_producer_id: -1,
            client_transaction_version: 0,
        }
    }

    #[test]
    fn values_round_trip_and_match_kafkas_v0_layout() {
        let value = sample();
        let bytes = encode_value(&value, false);
        // version, pid, epoch, timeout, state
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &1001i64.to_be_bytes());
        assert_eq!(&bytes[10..12], &3i16.to_be_bytes());
        assert_eq!(&bytes[12..16], &60_000i32.to_be_bytes());
        assert_eq!(bytes[16], 1);
        // two topics: "a" [0, 2], "b" [1]
        assert_eq!(&bytes[17..21], &2i32.to_be_bytes());
        assert_eq!(&bytes[21..24], &[0, 1, b'a']);
        assert_eq!(&bytes[24..28], &2i32.to_be_bytes());
        assert_eq!(decode_value(&bytes).unwrap(), value);
        let key = encode_key("my-txn");
        assert_eq!(key, [0, 0, 0, 6, b'm', b'y', b'-', b't', b'x', b'n']);
        assert_eq!(decode_key(&key).unwrap(), "my-txn");
    }

    #[test]
    fn version_1_values_with_tagged_fields_are_read() {
        let mut b = Vec::new();
        b.extend_from_slice(&1i16.to_be_bytes());
        b.extend_from_slice(&77i64.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&1000i32.to_be_bytes());
        b.push(4); // CompleteCommit
        b.push(2); // one topic (compact length + 1)
        b.push(2); // "t"
        b.push(b't');
        b.push(3); // two partitions
        b.extend_from_slice(&5i32.to_be_bytes());
        b.extend_from_slice(&6i32.to_be_bytes());
        b.push(0); // topic tagged fields
        b.extend_from_slice(&10i64.to_be_bytes());
        b.extend_from_slice(&9i64.to_be_bytes());
        b.extend_from_slice(&[2, 0, 8]); // two tagged fields: tag 0, 8 bytes
        b.extend_from_slice(&5i64.to_be_bytes());
        b.extend_from_slice(&[2, 2]); // tag 2, 2 bytes
        b.extend_from_slice(&2i16.to_be_bytes());
        let v = decode_value(&b).unwrap();
        assert_eq!(v.producer_id, 77);
        assert_eq!(v.state, TxnState::CompleteCommit);
        assert_eq!(v.partitions.len(), 2);
        assert_eq!((v.last_update_ms, v.start_ms), (10, 9));
        assert_eq!(
            (
                v.previous_producer_id,
                v.next_producer_id,
                v.client_transaction_version
            ),
            (5, -1, 2)
        );
        // What this broker writes as v1 is exactly these bytes, and reads
        // back the same.
        assert_eq!(encode_value(&v, true), b);
        let mut v2 = v.clone();
        v2.next_producer_id = 9000;
        v2.previous_producer_id = -1;
        assert_eq!(decode_value(&encode_value(&v2, true)).unwrap(), v2);
        // An Empty id's partitions are null in both versions.
        let mut empty = v.clone();
        empty.state = TxnState::Empty;
        empty.partitions.clear();
        for flexible in [false, true] {
            assert_eq!(
                decode_value(&encode_value(&empty, flexible))
                    .unwrap()
                    .partitions
                    .len(),
                0
            );
        }
        for cut in 0..b.len() {
            assert!(decode_value(&b[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let bytes = encode_value(&sample(), false);
        for cut in 0..bytes.len() {
            assert!(decode_value(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_state = bytes.clone();
        bad_state[16] = 42;
        assert_eq!(
            decode_value(&bad_state),
            Err(TxnRecordError::UnknownState(42))
        );
        let mut huge = bytes.clone();
        huge[17..21].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_value(&huge).is_err());
        assert_eq!(
            decode_key(&[0, 5, 0, 0]),
            Err(TxnRecordError::UnknownVersion(5))
        );
        assert!(decode_key(&[0, 0, 0, 9, b'x']).is_err());
        for state in TxnState::ALL {
            assert_eq!(TxnState::from_id(state.id()), Some(state));
        }
    }
}
