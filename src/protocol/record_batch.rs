//! A read-only view of Kafka record batches (message format v2) as they come
//! over the wire and as they sit in a segment file.
//!
//! Layout of the 61-byte batch header (all big-endian):
//!
//! ```text
//! 0  baseOffset i64            | not covered by the CRC: the broker
//! 8  batchLength i32           | rewrites baseOffset and
//! 12 partitionLeaderEpoch i32  | partitionLeaderEpoch on append
//! 16 magic i8 (= 2)
//! 17 crc u32 (CRC32C of bytes 21..end)
//! 21 attributes i16
//! 23 lastOffsetDelta i32
//! 27 baseTimestamp i64
//! 35 maxTimestamp i64
//! 43 producerId i64
//! 51 producerEpoch i16
//! 53 baseSequence i32
//! 57 recordCount i32
//! 61 records...
//! ```
//!
//! Pure code, no I/O: used on any core.

use thiserror::Error;

/// Size of the fixed record-batch header, in bytes.
pub const BATCH_HEADER_BYTES: usize = 61;
/// Bytes before `batchLength` counts: baseOffset and batchLength itself.
pub const BATCH_LOG_OVERHEAD_BYTES: usize = 12;
/// Offset of the magic byte.
pub const MAGIC_OFFSET: usize = 16;
/// Offset of the CRC field.
pub const CRC_OFFSET: usize = 17;
/// Offset of the attributes field; the CRC covers everything from here.
pub const ATTRIBUTES_OFFSET: usize = 21;
/// Offset of the partitionLeaderEpoch field.
pub const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;

/// Attribute bits.
pub const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// Timestamp type bit: 0 CreateTime, 1 LogAppendTime.
pub const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
/// Transactional batch.
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
/// Control batch (transaction markers).
pub const ATTR_CONTROL: i16 = 0x20;

/// Why a batch was refused.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum BatchError {
    /// Fewer bytes than a header, or than `batchLength` says.
    #[error("record batch truncated: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes the header says the batch needs.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// `batchLength` smaller than the header or negative.
    #[error("record batch length {0} is impossible")]
    BadLength(i32),
    /// Only message format v2 is accepted.
    #[error("record batch magic {0} is not supported (only 2)")]
    BadMagic(i8),
    /// The stored CRC does not match the bytes.
    #[error("record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadCrc {
        /// CRC in the header.
        stored: u32,
        /// CRC32C computed over the bytes.
        computed: u32,
    },
    /// Header fields contradict each other (negative counts, delta/count mismatch).
    #[error("record batch header is invalid: {0}")]
    Invalid(&'static str),
}

/// The parsed header of one v2 record batch. Copy of the fields, not a borrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// First offset of the batch.
    pub base_offset: i64,
    /// Bytes after the `batchLength` field.
    pub batch_length: i32,
    /// Leader epoch stamped by the broker.
    pub partition_leader_epoch: i32,
    /// Format version; always 2 once validated.
    pub magic: i8,
    /// CRC32C over bytes 21..end.
    pub crc: u32,
    /// Compression, timestamp type, transactional and control bits.
    pub attributes: i16,
    /// `lastOffset - baseOffset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record.
    pub base_timestamp: i64,
    /// Largest timestamp in the batch.
    pub max_timestamp: i64,
    /// Idempotent producer id or -1.
    pub producer_id: i64,
    /// Producer epoch or -1.
    pub producer_epoch: i16,
    /// First sequence or -1.
    pub base_sequence: i32,
    /// Number of records.
    pub record_count: i32,
}

impl BatchHeader {
    /// Total size on the wire and on disk: `batchLength + 12`.
    pub fn total_bytes(&self) -> usize {
        self.batch_length as usize + BATCH_LOG_OVERHEAD_BYTES
    }
    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }
    /// Compression codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
    pub fn compression(&self) -> i16 {
        self.attributes & ATTR_COMPRESSION_MASK
    }
    /// True for transaction markers.
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }
    /// True for batches of a transactional producer.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }
    /// True when the timestamps are LogAppendTime.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & ATTR_TIMESTAMP_TYPE != 0
    }
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// Parses the header at the start of `bytes` without checking the CRC.
///
/// Only needs [`BATCH_HEADER_BYTES`] bytes; does not require the whole batch.
///
/// # Errors
/// [`BatchError`] when the header is short, the length impossible or the magic not 2.
pub fn parse_header(bytes: &[u8]) -> Result<BatchHeader, BatchError> {
    if bytes.len() < BATCH_HEADER_BYTES {
        return Err(BatchError::Truncated {
            needed: BATCH_HEADER_BYTES,
            available: bytes.len(),
        });
    }
    let batch_length = be_i32(bytes, 8);
    if batch_length < (BATCH_HEADER_BYTES - BATCH_LOG_OVERHEAD_BYTES) as i32 {
        return Err(BatchError::BadLength(batch_length));
    }
    let magic = bytes[MAGIC_OFFSET] as i8;
    if magic != 2 {
        return Err(BatchError::BadMagic(magic));
    }
    let header = BatchHeader {
        base_offset: be_i64(bytes, 0),
        batch_length,
        partition_leader_epoch: be_i32(bytes, 12),
        magic,
        crc: be_u32(bytes, CRC_OFFSET),
        attributes: be_i16(bytes, 21),
        last_offset_delta: be_i32(bytes, 23),
        base_timestamp: be_i64(bytes, 27),
        max_timestamp: be_i64(bytes, 35),
        producer_id: be_i64(bytes, 43),
        producer_epoch: be_i16(bytes, 51),
        base_sequence: be_i32(bytes, 53),
        record_count: be_i32(bytes, 57),
    };
    if header.last_offset_delta < 0 {
        return Err(BatchError::Invalid("negative lastOffsetDelta"));
    }
    if header.record_count < 0 {
        return Err(BatchError::Invalid("negative recordCount"));
    }
    Ok(header)
}

/// Parses and fully validates the batch at the start of `bytes`: header, length
/// within `bytes`, and CRC32C.
///
/// # Errors
/// [`BatchError`] describing the first problem found.
pub fn validate_batch(bytes: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = parse_header(bytes)?;
    let total = header.total_bytes();
    if bytes.len() < total {
        return Err(BatchError::Truncated {
            needed: total,
            available: bytes.len(),
        });
    }
    let computed = crc32c::crc32c(&bytes[ATTRIBUTES_OFFSET..total]);
    if computed != header.crc {
        return Err(BatchError::BadCrc {
            stored: header.crc,
            computed,
        });
    }
    Ok(header)
}

/// Writes `base_offset` and `partition_leader_epoch` into a batch header in
/// place. Neither field is covered by the CRC.
///
/// # Panics
/// If `header` is shorter than 16 bytes.
pub fn stamp_header(header: &mut [u8], base_offset: i64, partition_leader_epoch: i32) {
    assert!(header.len() >= 16);
    header[0..8].copy_from_slice(&base_offset.to_be_bytes());
    header[12..16].copy_from_slice(&partition_leader_epoch.to_be_bytes());
}

/// Iterates over the whole batches at the start of a byte slice, stopping at
/// the first one that is not whole or not valid (the caller decides whether a
/// remainder is an error).
pub struct BatchIter<'a> {
    bytes: &'a [u8],
    position: usize,
    check_crc: bool,
    /// The error that stopped iteration, if one did.
    pub stopped_by: Option<BatchError>,
}

impl<'a> BatchIter<'a> {
    /// Iterates, checking every batch's CRC when `check_crc`.
    pub fn new(bytes: &'a [u8], check_crc: bool) -> Self {
        BatchIter {
            bytes,
            position: 0,
            check_crc,
            stopped_by: None,
        }
    }
    /// Byte position after the last batch returned.
    pub fn position(&self) -> usize {
        self.position
    }
}

impl Iterator for BatchIter<'_> {
    /// (position of the batch in the slice, header)
    type Item = (usize, BatchHeader);
    fn next(&mut self) -> Option<Self::Item> {
        let rest = &self.bytes[self.position..];
        if rest.is_empty() {
            return None;
        }
        let parsed = if self.check_crc {
            validate_batch(rest)
        } else {
            parse_header(rest).and_then(|h| {
                if rest.len() < h.total_bytes() {
                    Err(BatchError::Truncated {
                        needed: h.total_bytes(),
                        available: rest.len(),
                    })
                } else {
                    Ok(h)
                }
            })
        };
        match parsed {
            Ok(header) => {
                let at = self.position;
                self.position += header.total_bytes();
                Some((at, header))
            }
            Err(e) => {
                self.stopped_by = Some(e);
                None
            }
        }
    }
}

/// One record to put in a batch the broker writes itself (internal topics,
/// transaction markers).
#[derive(Debug, Clone, Copy)]
pub struct NewRecord<'a> {
    /// Key, or None for a null key.
    pub key: Option<&'a [u8]>,
    /// Value, or None for a tombstone.
    pub value: Option<&'a [u8]>,
}

fn put_varlong(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push((zigzag as u8 & 0x7f) | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

fn put_bytes_field(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Producer fields of a batch the broker builds itself (coordinator records,
/// transaction markers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchProducer {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// First sequence, or -1 (coordinator-written batches carry none).
    pub base_sequence: i32,
    /// Sets the transactional attribute bit.
    pub transactional: bool,
}

/// Builds an uncompressed v2 batch with base offset 0 (the log assigns the
/// real one), CreateTime `timestamp_ms` on every record, no producer id, and
/// a valid CRC.
///
/// # Panics
/// If `records` is empty.
pub fn build_batch(records: &[NewRecord<'_>], timestamp_ms: i64) -> Vec<u8> {
    build_producer_batch(records, timestamp_ms, None)
}

/// Like [`build_batch`], with the producer id, epoch, sequence and
/// transactional bit of `producer` when given.
///
/// # Panics
/// If `records` is empty.
pub fn build_producer_batch(
    records: &[NewRecord<'_>],
    timestamp_ms: i64,
    producer: Option<BatchProducer>,
) -> Vec<u8> {
    let attributes = match producer {
        Some(p) if p.transactional => ATTR_TRANSACTIONAL,
        _ => 0,
    };
    encode_batch(records, timestamp_ms, attributes, producer)
}

/// Control record type of a transaction marker.
pub const CONTROL_TYPE_ABORT: i16 = 0;
/// Control record type of a transaction marker.
pub const CONTROL_TYPE_COMMIT: i16 = 1;

/// A transaction marker as stored in a control batch (Kafka's
/// `EndTransactionMarker`): key = version 0 + type, value = version 0 +
/// coordinator epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarkerRecord {
    /// COMMIT (true) or ABORT (false).
    pub commit: bool,
    /// Epoch of the transaction coordinator that wrote it.
    pub coordinator_epoch: i32,
}

impl TxnMarkerRecord {
    /// The marker's control record key and value.
    pub fn encode(&self) -> ([u8; 4], [u8; 6]) {
        let mut key = [0u8; 4];
        let kind = if self.commit {
            CONTROL_TYPE_COMMIT
        } else {
            CONTROL_TYPE_ABORT
        };
        key[2..4].copy_from_slice(&kind.to_be_bytes());
        let mut value = [0u8; 6];
        value[2..6].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        (key, value)
    }

    /// Reads a control record's key and value; None when it is not a
    /// version-0 transaction marker (Kafka's other control types, or junk).
    pub fn decode(key: &[u8], value: &[u8]) -> Option<TxnMarkerRecord> {
        if key.len() < 4 || be_i16(key, 0) != 0 {
            return None;
        }
        let commit = match be_i16(key, 2) {
            CONTROL_TYPE_ABORT => false,
            CONTROL_TYPE_COMMIT => true,
            _ => return None,
        };
        if value.len() < 6 || be_i16(value, 0) < 0 {
            return None;
        }
        Some(TxnMarkerRecord {
            commit,
            coordinator_epoch: be_i32(value, 2),
        })
    }
}

/// Builds the control batch of a COMMIT or ABORT marker for
/// `producer_id`/`producer_epoch`: transactional and control bits set, no
/// sequence, one record.
pub fn build_control_batch(
    producer_id: i64,
    producer_epoch: i16,
    marker: TxnMarkerRecord,
    timestamp_ms: i64,
) -> Vec<u8> {
    let (key, value) = marker.encode();
    let record = NewRecord {
        key: Some(&key),
        value: Some(&value),
    };
    encode_batch(
        &[record],
        timestamp_ms,
        ATTR_TRANSACTIONAL | ATTR_CONTROL,
        Some(BatchProducer {
            producer_id,
            producer_epoch,
            base_sequence: -1,
            transactional: true,
        }),
    )
}

fn encode_batch(
    records: &[NewRecord<'_>],
    timestamp_ms: i64,
    attributes: i16,
    producer: Option<BatchProducer>,
) -> Vec<u8> {
    assert!(!records.is_empty(), "a batch holds at least one record");
    let mut body = Vec::new();
    let mut record = Vec::new();
    for (offset_delta, r) in records.iter().enumerate() {
        record.clear();
        record.push(0); // attributes
        put_varlong(&mut record, 0); // timestamp delta
        put_varlong(&mut record, offset_delta as i64);
        put_bytes_field(&mut record, r.key);
        put_bytes_field(&mut record, r.value);
        put_varlong(&mut record, 0); // headers
        put_varlong(&mut body, record.len() as i64);
        body.extend_from_slice(&record);
    }
    let count = records.len() as i32;
    let (producer_id, producer_epoch, base_sequence) = producer.map_or((-1, -1, -1), |p| {
        (p.producer_id, p.producer_epoch, p.base_sequence)
    });
    let mut b = Vec::with_capacity(BATCH_HEADER_BYTES + body.len());
    b.extend_from_slice(&0i64.to_be_bytes());
    b.extend_from_slice(
        &((BATCH_HEADER_BYTES - BATCH_LOG_OVERHEAD_BYTES + body.len()) as i32).to_be_bytes(),
    );
    b.extend_from_slice(&(-1i32).to_be_bytes());
    b.push(2);
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&attributes.to_be_bytes());
    b.extend_from_slice(&(count - 1).to_be_bytes());
    b.extend_from_slice(&timestamp_ms.to_be_bytes());
    b.extend_from_slice(&timestamp_ms.to_be_bytes());
    b.extend_from_slice(&producer_id.to_be_bytes());
    b.extend_from_slice(&producer_epoch.to_be_bytes());
    b.extend_from_slice(&base_sequence.to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    b.extend_from_slice(&body);
    let crc = crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]);
    b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a valid uncompressed batch with `count` empty-key records.
    pub fn sample_batch(base_offset: i64, count: i32, timestamp: i64) -> Vec<u8> {
        let mut records = Vec::new();
        for i in 0..count {
            // record: length varint, attributes, tsDelta, offsetDelta, keyLen(-1), valueLen, value, headers(0)
            let value = format!("v{i}");
            let mut body = vec![0u8]; // attributes
            put_varint(&mut body, 0); // timestamp delta
            put_varint(&mut body, i64::from(i)); // offset delta
            put_varint(&mut body, -1); // key null
            put_varint(&mut body, value.len() as i64);
            body.extend_from_slice(value.as_bytes());
            put_varint(&mut body, 0); // headers
            put_varint(&mut records, body.len() as i64);
            records.extend_from_slice(&body);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&base_offset.to_be_bytes());
        let length = (BATCH_HEADER_BYTES - BATCH_LOG_OVERHEAD_BYTES + records.len()) as i32;
        b.extend_from_slice(&length.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.push(2);
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(count - 1).max(0).to_be_bytes());
        b.extend_from_slice(&timestamp.to_be_bytes());
        b.extend_from_slice(&timestamp.to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&count.to_be_bytes());
        b.extend_from_slice(&records);
        let crc = crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]);
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        b
    }

    fn put_varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            if z < 0x80 {
                out.push(z as u8);
                return;
            }
            out.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
    }

    #[test]
    fn valid_batch_parses_and_flipped_bit_fails_crc() {
        let mut b = sample_batch(0, 3, 1000);
        let h = validate_batch(&b).unwrap();
        assert_eq!(h.record_count, 3);
        assert_eq!(h.last_offset(), 2);
        assert_eq!(h.total_bytes(), b.len());
        let last = b.len() - 2;
        b[last] ^= 1;
        assert!(matches!(validate_batch(&b), Err(BatchError::BadCrc { .. })));
    }

    #[test]
    fn stamping_offset_keeps_crc_valid() {
        let mut b = sample_batch(0, 2, 5);
        stamp_header(&mut b, 42, 7);
        let h = validate_batch(&b).unwrap();
        assert_eq!(h.base_offset, 42);
        assert_eq!(h.partition_leader_epoch, 7);
    }

    #[test]
    fn iterator_stops_at_torn_tail() {
        let mut all = sample_batch(0, 2, 1);
        all.extend(sample_batch(2, 2, 2));
        let whole = all.len();
        all.extend_from_slice(&sample_batch(4, 2, 3)[..20]);
        let mut it = BatchIter::new(&all, true);
        assert_eq!(it.by_ref().count(), 2);
        assert_eq!(it.position(), whole);
        assert!(matches!(it.stopped_by, Some(BatchError::Truncated { .. })));
    }

    #[test]
    fn built_batches_validate_and_decode_with_the_codec_crate() {
        let records = [
            NewRecord {
                key: Some(b"k1"),
                value: Some(b"v1"),
            },
            NewRecord {
                key: Some(b"k2"),
                value: None,
            },
        ];
        let b = build_batch(&records, 1234);
        let h = validate_batch(&b).unwrap();
        assert_eq!(h.record_count, 2);
        assert_eq!(h.max_timestamp, 1234);
        let mut bytes = bytes::Bytes::from(b);
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
        assert_eq!(set.records.len(), 2);
        assert_eq!(set.records[0].key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(set.records[1].value, None);
        assert_eq!(set.records[1].offset, 1);
    }

    #[test]
    fn short_and_bad_headers_are_errors_not_panics() {
        assert!(parse_header(&[0u8; 10]).is_err());
        let mut b = sample_batch(0, 1, 1);
        b[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(parse_header(&b), Err(BatchError::BadLength(-5))));
        let mut b = sample_batch(0, 1, 1);
        b[MAGIC_OFFSET] = 1;
        assert!(matches!(parse_header(&b), Err(BatchError::BadMagic(1))));
    }

    #[test]
    fn control_batches_carry_the_marker_and_producer() {
        let marker = TxnMarkerRecord {
            commit: true,
            coordinator_epoch: 7,
        };
        let b = build_control_batch(42, 3, marker, 1000);
        let h = validate_batch(&b).unwrap();
        assert!(h.is_control() && h.is_transactional());
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (42, 3, -1)
        );
        assert_eq!(h.record_count, 1);
        let (key, value) = marker.encode();
        assert_eq!(TxnMarkerRecord::decode(&key, &value), Some(marker));
        assert_eq!(TxnMarkerRecord::decode(&[0, 0, 0, 5], &value), None);
        let abort = TxnMarkerRecord {
            commit: false,
            coordinator_epoch: 0,
        };
        let (k, v) = abort.encode();
        assert_eq!(k, [0, 0, 0, 0]);
        assert_eq!(TxnMarkerRecord::decode(&k, &v), Some(abort));
    }

    #[test]
    fn producer_batches_set_the_transactional_bit_only_when_asked() {
        let r = [NewRecord {
            key: Some(b"k"),
            value: Some(b"v"),
        }];
        let p = BatchProducer {
            producer_id: 9,
            producer_epoch: 1,
            base_sequence: -1,
            transactional: true,
        };
        let h = validate_batch(&build_producer_batch(&r, 5, Some(p))).unwrap();
        assert!(h.is_transactional() && !h.is_control());
        assert_eq!(h.producer_id, 9);
        let h = validate_batch(&build_batch(&r, 5)).unwrap();
        assert!(!h.is_transactional());
        assert_eq!(h.producer_id, -1);
    }
}
