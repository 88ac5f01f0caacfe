//! The records of `__transaction_state` in Kafka's schemas
//! (`TransactionLogKey` v0, `TransactionLogValue` v0 and v1), so a data
//! directory reads like Kafka's and Kafka's tools can dump it. Values are
//! written as v1 while the finalized `transaction.version` is 1 or more, as
//! Kafka writes them, else v0. Pure code: no I/O, any core.

use std::collections::BTreeSet;

use thiserror::Error;

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
    /// Fewer bytes than the schema needs.
    #[error("transaction log record truncated")]
    Truncated,
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
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&0i16.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

/// Decodes a record key into its transactional id.
///
/// # Errors
/// [`TxnRecordError`] for short, unknown or malformed keys.
pub fn decode_key(bytes: &[u8]) -> Result<String, TxnRecordError> {
    let mut r = Reader { bytes, at: 0 };
    let version = r.i16()?;
    if version != 0 {
        return Err(TxnRecordError::UnknownVersion(version));
    }
    r.string()
}

/// Encodes `value` as `TransactionLogValue` version 1 (flexible, with the
/// tagged fields that differ from their defaults) or 0 (`flexible` false,
/// without them). The partitions of an Empty id are null, as Kafka writes.
pub fn encode_value(value: &TxnLogValue, flexible: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&i16::from(flexible).to_be_bytes());
    out.extend_from_slice(&value.producer_id.to_be_bytes());
    out.extend_from_slice(&value.producer_epoch.to_be_bytes());
    out.extend_from_slice(&value.timeout_ms.to_be_bytes());
    out.push(value.state.id() as u8);
    let topics = group_by_topic(&value.partitions);
    let null_partitions = value.state == TxnState::Empty;
    if flexible {
        put_uvarint(
            &mut out,
            if null_partitions {
                0
            } else {
                topics.len() as u64 + 1
            },
        );
    } else {
        let count = if null_partitions {
            -1
        } else {
            topics.len() as i32
        };
        out.extend_from_slice(&count.to_be_bytes());
    }
    for (topic, partitions) in topics.iter().filter(|_| !null_partitions) {
        if flexible {
            put_uvarint(&mut out, topic.len() as u64 + 1);
            out.extend_from_slice(topic.as_bytes());
            put_uvarint(&mut out, partitions.len() as u64 + 1);
        } else {
            put_string(&mut out, topic);
            out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
        }
        for p in partitions {
            out.extend_from_slice(&p.to_be_bytes());
        }
        if flexible {
            out.push(0);
        }
    }
    out.extend_from_slice(&value.last_update_ms.to_be_bytes());
    out.extend_from_slice(&value.start_ms.to_be_bytes());
    if flexible {
        let mut tagged: Vec<(u64, Vec<u8>)> = Vec::new();
        if value.previous_producer_id != -1 {
            tagged.push((0, value.previous_producer_id.to_be_bytes().to_vec()));
        }
        if value.next_producer_id != -1 {
            tagged.push((1, value.next_producer_id.to_be_bytes().to_vec()));
        }
        if value.client_transaction_version != 0 {
            tagged.push((2, value.client_transaction_version.to_be_bytes().to_vec()));
        }
        put_uvarint(&mut out, tagged.len() as u64);
        for (tag, bytes) in tagged {
            put_uvarint(&mut out, tag);
            put_uvarint(&mut out, bytes.len() as u64);
            out.extend_from_slice(&bytes);
        }
    }
    out
}

fn put_uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Decodes `TransactionLogValue` version 0 or 1.
///
/// # Errors
/// [`TxnRecordError`] for short, unknown or malformed values.
pub fn decode_value(bytes: &[u8]) -> Result<TxnLogValue, TxnRecordError> {
    let mut r = Reader { bytes, at: 0 };
    let version = r.i16()?;
    let flexible = match version {
        0 => false,
        1 => true,
        other => return Err(TxnRecordError::UnknownVersion(other)),
    };
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let timeout_ms = r.i32()?;
    let state_id = r.i8()?;
    let state = TxnState::from_id(state_id).ok_or(TxnRecordError::UnknownState(state_id))?;
    let mut partitions = BTreeSet::new();
    let topic_count = if flexible {
        r.compact_len()?
    } else {
        r.array_len()?
    };
    for _ in 0..topic_count.unwrap_or(0) {
        let topic = if flexible {
            r.compact_string()?
        } else {
            r.string()?
        };
        let count = if flexible {
            r.compact_len()?
        } else {
            r.array_len()?
        }
        .ok_or(TxnRecordError::Malformed("null partition list"))?;
        for _ in 0..count {
            partitions.insert(TopicPartition {
                topic: topic.clone(),
                partition: r.i32()?,
            });
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
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
    if flexible {
        let count = r.uvarint()?;
        for _ in 0..count {
            let tag = r.uvarint()?;
            let size = usize::try_from(r.uvarint()?).map_err(|_| TxnRecordError::Truncated)?;
            let bytes = r.take(size)?;
            let malformed = || TxnRecordError::Malformed("tagged field of the wrong size");
            match tag {
                0 => {
                    value.previous_producer_id =
                        i64::from_be_bytes(bytes.try_into().map_err(|_| malformed())?)
                }
                1 => {
                    value.next_producer_id =
                        i64::from_be_bytes(bytes.try_into().map_err(|_| malformed())?)
                }
                2 => {
                    value.client_transaction_version =
                        i16::from_be_bytes(bytes.try_into().map_err(|_| malformed())?)
                }
                // NextProducerEpoch (3) and later tags: not used here.
                _ => {}
            }
        }
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

fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = i16::try_from(s.len()).unwrap_or(i16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&s.as_bytes()[..len as usize]);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], TxnRecordError> {
        let end = self.at.checked_add(n).ok_or(TxnRecordError::Truncated)?;
        let slice = self
            .bytes
            .get(self.at..end)
            .ok_or(TxnRecordError::Truncated)?;
        self.at = end;
        Ok(slice)
    }
    fn i8(&mut self) -> Result<i8, TxnRecordError> {
        Ok(self.take(1)?[0] as i8)
    }
    fn i16(&mut self) -> Result<i16, TxnRecordError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32, TxnRecordError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> Result<i64, TxnRecordError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(i64::from_be_bytes(a))
    }
    fn uvarint(&mut self) -> Result<u64, TxnRecordError> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(TxnRecordError::Malformed("varint too long"))
    }
    fn string(&mut self) -> Result<String, TxnRecordError> {
        let len = self.i16()?;
        if len < 0 {
            return Err(TxnRecordError::Malformed("null string"));
        }
        let b = self.take(len as usize)?;
        String::from_utf8(b.to_vec()).map_err(|_| TxnRecordError::Malformed("string not UTF-8"))
    }
    fn compact_string(&mut self) -> Result<String, TxnRecordError> {
        let len = self.uvarint()?;
        if len == 0 {
            return Err(TxnRecordError::Malformed("null string"));
        }
        let b = self.take((len - 1) as usize)?;
        String::from_utf8(b.to_vec()).map_err(|_| TxnRecordError::Malformed("string not UTF-8"))
    }
    /// An i32 array length; None for a null array. Bounded by the bytes
    /// left, since every element takes at least one byte.
    fn array_len(&mut self) -> Result<Option<usize>, TxnRecordError> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(None);
        }
        self.bounded(len as u64)
    }
    fn compact_len(&mut self) -> Result<Option<usize>, TxnRecordError> {
        let len = self.uvarint()?;
        if len == 0 {
            return Ok(None);
        }
        self.bounded(len - 1)
    }
    fn bounded(&self, len: u64) -> Result<Option<usize>, TxnRecordError> {
        if len > (self.bytes.len() - self.at) as u64 {
            return Err(TxnRecordError::Truncated);
        }
        Ok(Some(len as usize))
    }
    fn skip_tagged_fields(&mut self) -> Result<(), TxnRecordError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let _tag = self.uvarint()?;
            let size = self.uvarint()?;
            self.take(usize::try_from(size).map_err(|_| TxnRecordError::Truncated)?)?;
        }
        Ok(())
    }
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
