//! Record-level work on one stored v2 batch for compaction: reading its
//! records (decompressing them) and building the batch that keeps only some
//! of them, the way Kafka's `MemoryRecords.filterTo` does.
//!
//! What Kafka keeps when it rewrites a batch (`buildRetainedRecordsInto`):
//! the original baseOffset and lastOffsetDelta (so the last offset, and the
//! producer's last sequence, survive even when the last record goes), the
//! producer id, epoch and baseSequence, the partition leader epoch, the
//! timestamp type, the transactional and control flags and the compression
//! codec (the records are compressed again with it). Offsets of the kept
//! records do not change. The first time a batch keeps a tombstone it gets a
//! delete horizon (KIP-534): attribute bit 6 set and baseTimestamp replaced
//! by `now + delete.retention.ms`; record timestamps stay what they were,
//! their deltas being taken from the new base.
//!
//! Records are parsed here rather than through `kafka_protocol`'s decoder
//! because that one keeps headers in a map (duplicate header keys, which
//! Kafka allows, would be merged) and its encoder derives baseOffset and
//! lastOffsetDelta from the records it is given. The codecs are still
//! `kafka_protocol`'s.
//!
//! Pure code, no I/O: runs on the partition's shard inside a compaction.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::compression::{
    Compressor, Decompressor, Gzip, Lz4, None as NoCompression, Snappy, Zstd,
};

use crate::protocol::record_batch::{
    BatchHeader, ATTRIBUTES_OFFSET, ATTR_COMPRESSION_MASK, ATTR_CONTROL, ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL, BATCH_HEADER_BYTES, BATCH_LOG_OVERHEAD_BYTES, CRC_OFFSET,
};

/// Attribute bit 6: baseTimestamp holds the batch's delete horizon (KIP-534).
pub const ATTR_DELETE_HORIZON: i16 = 0x40;

/// Kafka's "no timestamp".
const NO_TIMESTAMP: i64 = -1;

/// The delete horizon stamped into a batch by an earlier compaction, if any.
pub fn delete_horizon_ms(header: &BatchHeader) -> Option<i64> {
    (header.attributes & ATTR_DELETE_HORIZON != 0).then_some(header.base_timestamp)
}

/// One record of a batch, its fields sliced out of the (decompressed)
/// records bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRecord {
    /// Absolute offset.
    pub offset: i64,
    /// baseTimestamp + timestampDelta, as stored (for LogAppendTime batches
    /// Kafka reports the batch maxTimestamp instead; see `build_retained_batch`).
    pub timestamp: i64,
    /// The key, or `None` for a null key.
    pub key: Option<Bytes>,
    /// The value, or `None` for a tombstone.
    pub value: Option<Bytes>,
    /// The header count and headers exactly as stored.
    pub headers: Bytes,
}

/// The codec of a batch, or an error for ids 5..=7.
fn compression_of(header: &BatchHeader) -> Result<i16, String> {
    let codec = header.compression();
    if codec > 4 {
        return Err(format!("unknown compression codec {codec}"));
    }
    Ok(codec)
}

fn decompress(codec: i16, mut compressed: Bytes) -> Result<Bytes, String> {
    let take = |buffer: &mut Bytes| Ok(std::mem::take(buffer));
    let result = match codec {
        0 => <NoCompression as Decompressor<Bytes>>::decompress(&mut compressed, take),
        1 => <Gzip as Decompressor<Bytes>>::decompress(&mut compressed, take),
        2 => <Snappy as Decompressor<Bytes>>::decompress(&mut compressed, take),
        3 => <Lz4 as Decompressor<Bytes>>::decompress(&mut compressed, take),
        4 => <Zstd as Decompressor<Bytes>>::decompress(&mut compressed, take),
        other => return Err(format!("unknown compression codec {other}")),
    };
    result.map_err(|error| format!("cannot decompress records: {error:#}"))
}

/// Compresses `records` with `codec` into `out`, at `level` where given
/// (a topic's `compression.gzip.level`, `compression.lz4.level` or
/// `compression.zstd.level`, KIP-390), else at the codec's default.
fn compress(
    codec: i16,
    level: Option<i32>,
    records: &[u8],
    out: &mut BytesMut,
) -> Result<(), String> {
    use std::io::Write;
    let put = |buffer: &mut BytesMut| {
        buffer.extend_from_slice(records);
        Ok(())
    };
    let failed = |error: &dyn std::fmt::Display| format!("cannot compress records: {error:#}");
    match (codec, level) {
        (0, _) => {
            out.extend_from_slice(records);
            Ok(())
        }
        // Gzip level -1 is zlib's default, as Java's Deflater takes it.
        (1, Some(level @ 1..=9)) => {
            let mut encoder =
                flate2::write::GzEncoder::new(out.writer(), flate2::Compression::new(level as u32));
            encoder.write_all(records).map_err(|e| failed(&e))?;
            encoder.finish().map(drop).map_err(|e| failed(&e))
        }
        // liblz4 takes levels above its maximum (12) as its maximum.
        (3, Some(level @ 1..)) => {
            let mut encoder = lz4::EncoderBuilder::new()
                .level(level as u32)
                .block_mode(lz4::BlockMode::Independent)
                .build(out.writer())
                .map_err(|e| failed(&e))?;
            encoder.write_all(records).map_err(|e| failed(&e))?;
            let (_, finished) = encoder.finish();
            finished.map_err(|e| failed(&e))
        }
        // In one call, so zstd knows the input's size and sizes its window
        // and tables for the batch, not for the level alone (level 22
        // would otherwise take some 770 MB for any batch).
        (4, Some(level)) => {
            let compressed = zstd::bulk::compress(records, level).map_err(|e| failed(&e))?;
            out.extend_from_slice(&compressed);
            Ok(())
        }
        (1, _) => <Gzip as Compressor<BytesMut>>::compress(out, put).map_err(|e| failed(&e)),
        (2, _) => <Snappy as Compressor<BytesMut>>::compress(out, put).map_err(|e| failed(&e)),
        (3, _) => <Lz4 as Compressor<BytesMut>>::compress(out, put).map_err(|e| failed(&e)),
        (4, _) => <Zstd as Compressor<BytesMut>>::compress(out, put).map_err(|e| failed(&e)),
        (other, _) => Err(format!("unknown compression codec {other}")),
    }
}

/// Reads Kafka's zig-zag varints from a byte slice.
struct VarintReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl VarintReader<'_> {
    fn varlong(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        for index in 0..10 {
            let Some(&byte) = self.bytes.get(self.position) else {
                return Err("record ends inside a varint".to_string());
            };
            self.position += 1;
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
        }
        Err("varint is longer than 10 bytes".to_string())
    }

    fn varint(&mut self) -> Result<i32, String> {
        let value = self.varlong()?;
        i32::try_from(value).map_err(|_| format!("varint {value} does not fit 32 bits"))
    }

    fn byte(&mut self) -> Result<u8, String> {
        let Some(&byte) = self.bytes.get(self.position) else {
            return Err("record ends early".to_string());
        };
        self.position += 1;
        Ok(byte)
    }

    /// A length-prefixed field: `None` for length -1.
    fn nullable_range(&mut self) -> Result<Option<(usize, usize)>, String> {
        let length = self.varint()?;
        if length == -1 {
            return Ok(None);
        }
        if length < 0 {
            return Err(format!("negative field length {length}"));
        }
        let start = self.position;
        let end = start + length as usize;
        if end > self.bytes.len() {
            return Err(format!("field of {length} bytes runs past the record"));
        }
        self.position = end;
        Ok(Some((start, end)))
    }
}

fn put_varlong(out: &mut BytesMut, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.put_u8((zigzag as u8 & 0x7f) | 0x80);
        zigzag >>= 7;
    }
    out.put_u8(zigzag as u8);
}

/// The records of `batch` (a whole stored batch whose header is `header`),
/// decompressed and parsed.
///
/// # Errors
/// A sentence when the codec is unknown, the records do not decompress, or
/// they do not parse as exactly `recordCount` records.
pub fn decode_batch_records(
    batch: &Bytes,
    header: &BatchHeader,
) -> Result<Vec<BatchRecord>, String> {
    assert_eq!(batch.len(), header.total_bytes());
    assert!(batch.len() >= BATCH_HEADER_BYTES);
    let records = decompress(compression_of(header)?, batch.slice(BATCH_HEADER_BYTES..))?;
    let mut reader = VarintReader {
        bytes: &records,
        position: 0,
    };
    // Every record takes at least 7 bytes, so a lying count cannot make us
    // reserve more than the bytes justify.
    let mut parsed = Vec::with_capacity((header.record_count as usize).min(records.len() / 7));
    for _ in 0..header.record_count {
        let length = reader.varint()?;
        if length < 0 {
            return Err(format!("negative record length {length}"));
        }
        let record_start = reader.position;
        let record_end = record_start + length as usize;
        if record_end > records.len() {
            return Err(format!("record of {length} bytes runs past the batch"));
        }
        let mut body = VarintReader {
            bytes: &records[..record_end],
            position: record_start,
        };
        let _attributes = body.byte()?;
        let timestamp_delta = body.varlong()?;
        let offset_delta = body.varint()?;
        let key = body.nullable_range()?;
        let value = body.nullable_range()?;
        let headers_start = body.position;
        let header_count = body.varint()?;
        if header_count < 0 {
            return Err(format!("negative header count {header_count}"));
        }
        for _ in 0..header_count {
            match body.nullable_range()? {
                Some(_) => {}
                None => return Err("header with a null key".to_string()),
            }
            body.nullable_range()?;
        }
        if body.position != record_end {
            return Err(format!(
                "record declares {length} bytes but its fields take {}",
                body.position - record_start
            ));
        }
        if offset_delta < 0 || offset_delta > header.last_offset_delta {
            return Err(format!(
                "record offset delta {offset_delta} is outside the batch's 0..={}",
                header.last_offset_delta
            ));
        }
        let slice =
            |range: Option<(usize, usize)>| range.map(|(start, end)| records.slice(start..end));
        parsed.push(BatchRecord {
            offset: header.base_offset + i64::from(offset_delta),
            timestamp: header.base_timestamp.wrapping_add(timestamp_delta),
            key: slice(key),
            value: slice(value),
            headers: records.slice(headers_start..record_end),
        });
        reader.position = record_end;
    }
    if reader.position != records.len() {
        return Err(format!(
            "{} bytes follow the batch's {} records",
            records.len() - reader.position,
            header.record_count
        ));
    }
    Ok(parsed)
}

/// Writes the fixed header fields after the CRC and returns nothing; the
/// caller appends the records and then calls `finish_batch`.
#[allow(clippy::too_many_arguments)]
fn put_header(
    out: &mut BytesMut,
    original: &BatchHeader,
    attributes: i16,
    base_timestamp: i64,
    max_timestamp: i64,
    record_count: i32,
) {
    out.put_i64(original.base_offset);
    out.put_i32(0); // batchLength, filled in by finish_batch
    out.put_i32(original.partition_leader_epoch);
    out.put_i8(2);
    out.put_u32(0); // crc, filled in by finish_batch
    out.put_i16(attributes);
    out.put_i32(original.last_offset_delta);
    out.put_i64(base_timestamp);
    out.put_i64(max_timestamp);
    out.put_i64(original.producer_id);
    out.put_i16(original.producer_epoch);
    out.put_i32(original.base_sequence);
    out.put_i32(record_count);
    assert_eq!(out.len(), BATCH_HEADER_BYTES);
}

fn finish_batch(mut out: BytesMut) -> Result<Bytes, String> {
    let batch_length = out.len() - BATCH_LOG_OVERHEAD_BYTES;
    let batch_length = i32::try_from(batch_length)
        .map_err(|_| format!("rebuilt batch of {batch_length} bytes is too large"))?;
    out[8..12].copy_from_slice(&batch_length.to_be_bytes());
    let crc = crc32c::crc32c(&out[ATTRIBUTES_OFFSET..]);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(out.freeze())
}

/// The attributes every rewrite keeps: timestamp type, transactional and
/// control flags.
fn kept_attributes(original: &BatchHeader) -> i16 {
    original.attributes & (ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL)
}

/// The batch holding only `records` (a non-empty, offset-ordered subset of
/// the records of the batch `original`), compressed with the original codec,
/// with `delete_horizon_ms` stamped when given. Kafka's
/// `buildRetainedRecordsInto` followed by `overrideLastOffset`.
///
/// # Errors
/// A sentence when compression fails or the batch would be too large.
///
/// # Panics
/// If `records` is empty or not inside the original batch's offsets.
pub fn build_retained_batch(
    original: &BatchHeader,
    records: &[&BatchRecord],
    delete_horizon_ms: Option<i64>,
) -> Result<Bytes, String> {
    // Kafka's cleaner compresses again at the codec's default level.
    build_batch(
        original,
        records,
        delete_horizon_ms,
        compression_of(original)?,
        None,
    )
}

/// `batch` (a whole v2 batch whose header is `header`) with its records
/// compressed with `codec` instead (0 none, 1 gzip, 2 snappy, 3 lz4, 4
/// zstd): what Kafka stores when a topic's `compression.type` names
/// another codec than the producer used (`LogValidator`). Offsets,
/// timestamps, producer fields, flags and every record stay as they were.
/// A batch of no records is returned as it is. `level` is the topic's
/// level for `codec` (None: the codec's default).
///
/// # Errors
/// A sentence when the records do not decompress or parse, or do not
/// compress again.
pub fn recompress_batch(
    batch: &Bytes,
    header: &BatchHeader,
    codec: i16,
    level: Option<i32>,
) -> Result<Bytes, String> {
    let records = decode_batch_records(batch, header)?;
    if records.is_empty() {
        return Ok(batch.clone());
    }
    let records: Vec<&BatchRecord> = records.iter().collect();
    build_batch(header, &records, None, codec, level)
}

fn build_batch(
    original: &BatchHeader,
    records: &[&BatchRecord],
    delete_horizon_ms: Option<i64>,
    codec: i16,
    level: Option<i32>,
) -> Result<Bytes, String> {
    assert!(
        !records.is_empty(),
        "an empty batch is built by build_empty_batch"
    );
    let log_append_time = original.is_log_append_time();
    // Kafka reads every record of a LogAppendTime batch as the batch's
    // maxTimestamp, and writes what it read.
    let timestamp_of = |record: &BatchRecord| {
        if log_append_time {
            original.max_timestamp
        } else {
            record.timestamp
        }
    };
    let base_timestamp = delete_horizon_ms.unwrap_or_else(|| timestamp_of(records[0]));
    let max_timestamp = if log_append_time {
        original.max_timestamp
    } else {
        records
            .iter()
            .map(|record| timestamp_of(record))
            .max()
            .unwrap_or(NO_TIMESTAMP)
    };
    let mut plain = BytesMut::new();
    let mut body = BytesMut::new();
    let mut previous_offset = original.base_offset - 1;
    for record in records {
        assert!(
            record.offset > previous_offset,
            "records stay in offset order"
        );
        assert!(record.offset <= original.last_offset());
        previous_offset = record.offset;
        body.clear();
        body.put_u8(0); // record attributes: unused in v2, written as 0 like Kafka
        put_varlong(&mut body, timestamp_of(record).wrapping_sub(base_timestamp));
        put_varlong(&mut body, record.offset - original.base_offset);
        for field in [&record.key, &record.value] {
            match field {
                Some(bytes) => {
                    put_varlong(&mut body, bytes.len() as i64);
                    body.extend_from_slice(bytes);
                }
                None => put_varlong(&mut body, -1),
            }
        }
        body.extend_from_slice(&record.headers);
        put_varlong(&mut plain, body.len() as i64);
        plain.extend_from_slice(&body);
    }
    let mut attributes = (codec & ATTR_COMPRESSION_MASK) | kept_attributes(original);
    if delete_horizon_ms.is_some() {
        attributes |= ATTR_DELETE_HORIZON;
    }
    let record_count = i32::try_from(records.len()).map_err(|_| "too many records".to_string())?;
    let mut out = BytesMut::with_capacity(BATCH_HEADER_BYTES + plain.len());
    put_header(
        &mut out,
        original,
        attributes,
        base_timestamp,
        max_timestamp,
        record_count,
    );
    compress(codec, level, &plain, &mut out)?;
    finish_batch(out)
}

/// The header-only batch Kafka keeps when every record of `original` is
/// removed but the batch must stay (`DefaultRecordBatch.writeEmptyHeader`):
/// same offsets, producer fields, leader epoch, timestamp type and flags, no
/// compression, baseTimestamp -1, maxTimestamp the original's, no records.
pub fn build_empty_batch(original: &BatchHeader) -> Bytes {
    let mut out = BytesMut::with_capacity(BATCH_HEADER_BYTES);
    put_header(
        &mut out,
        original,
        kept_attributes(original),
        NO_TIMESTAMP,
        original.max_timestamp,
        0,
    );
    match finish_batch(out) {
        Ok(bytes) => bytes,
        Err(reason) => unreachable!("a 61-byte batch always fits: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
        TimestampType,
    };

    use super::*;
    use crate::protocol::record_batch::validate_batch;

    fn encoded(records: &[Record], compression: Compression) -> (Bytes, BatchHeader) {
        let mut buffer = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut buffer, records, &options).unwrap();
        let header = validate_batch(&buffer).unwrap();
        (buffer.freeze(), header)
    }

    fn record(offset: i64, key: &str, value: Option<&str>) -> Record {
        let mut headers = kafka_protocol::indexmap::IndexMap::new();
        headers.insert("h".into(), Some(Bytes::from(format!("header-{offset}"))));
        Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 3,
            producer_id: 7,
            producer_epoch: 1,
            timestamp_type: TimestampType::Creation,
            offset,
            sequence: offset as i32,
            timestamp: 5000 + offset,
            key: Some(Bytes::from(key.to_string())),
            value: value.map(|value| Bytes::from(value.to_string())),
            headers,
        }
    }

    /// Goal: decoding and rebuilding with every codec keeps the kept records
    /// as they were, and the batch's first and last offsets, producer fields
    /// and codec as Kafka does. Method: drop the first and last record of a
    /// five-record batch, decode the result with kafka-protocol's decoder.
    #[test]
    fn rebuilt_batches_keep_offsets_and_codec() {
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let originals: Vec<Record> = (0..5)
                .map(|offset| {
                    let value = (offset != 2).then(|| format!("value-{offset}"));
                    record(offset, &format!("key-{offset}"), value.as_deref())
                })
                .collect();
            let (bytes, header) = encoded(&originals, compression);
            let decoded = decode_batch_records(&bytes, &header).unwrap();
            assert_eq!(decoded.len(), 5);
            assert_eq!(decoded[3].key.as_deref(), Some(&b"key-3"[..]));
            assert_eq!(decoded[2].value, None);
            assert_eq!(decoded[4].timestamp, 5004);
            let kept: Vec<&BatchRecord> = decoded[1..4].iter().collect();
            let rebuilt = build_retained_batch(&header, &kept, Some(99_000)).unwrap();
            let rebuilt_header = validate_batch(&rebuilt).unwrap();
            assert_eq!(rebuilt_header.base_offset, header.base_offset);
            assert_eq!(rebuilt_header.last_offset_delta, 4);
            assert_eq!(rebuilt_header.record_count, 3);
            assert_eq!(rebuilt_header.compression(), header.compression());
            assert_eq!(rebuilt_header.producer_id, 7);
            assert_eq!(rebuilt_header.base_sequence, header.base_sequence);
            assert_eq!(rebuilt_header.partition_leader_epoch, 3);
            assert_eq!(delete_horizon_ms(&rebuilt_header), Some(99_000));
            assert_eq!(rebuilt_header.max_timestamp, 5003);
            let mut for_decoder = rebuilt.clone();
            let set = RecordBatchDecoder::decode(&mut for_decoder).unwrap();
            let offsets: Vec<i64> = set.records.iter().map(|r| r.offset).collect();
            assert_eq!(offsets, vec![1, 2, 3], "{compression:?}");
            for (got, want) in set.records.iter().zip(&originals[1..4]) {
                assert_eq!(got.key, want.key);
                assert_eq!(got.value, want.value);
                assert_eq!(got.timestamp, want.timestamp);
                assert_eq!(got.headers, want.headers);
            }
            let again = decode_batch_records(&rebuilt, &rebuilt_header).unwrap();
            assert_eq!(again, decoded[1..4].to_vec());
        }
    }

    /// Goal: the empty batch is Kafka's header-only form. Method: build one
    /// and check its fields.
    #[test]
    fn empty_batch_is_a_valid_header_only_batch() {
        let originals: Vec<Record> = (0..3)
            .map(|offset| record(offset, "k", Some("v")))
            .collect();
        let (bytes, header) = encoded(&originals, Compression::Gzip);
        let empty = build_empty_batch(&header);
        assert_eq!(empty.len(), BATCH_HEADER_BYTES);
        let empty_header = validate_batch(&empty).unwrap();
        assert_eq!(empty_header.record_count, 0);
        assert_eq!(empty_header.last_offset(), header.last_offset());
        assert_eq!(empty_header.compression(), 0);
        assert_eq!(empty_header.base_timestamp, -1);
        assert_eq!(empty_header.max_timestamp, header.max_timestamp);
        assert_eq!(decode_batch_records(&empty, &empty_header).unwrap(), vec![]);
        assert!(bytes.len() > empty.len());
    }
}
