//! Pre-encoded record batches and produce requests: built once before the
//! run, so a send is a correlation-id patch (plus, in end-to-end mode, a
//! timestamp stamp and a CRC32C) and one write.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::args::{CompressionArg, KeyDistribution};
use super::wire::{encode_frame, CORRELATION_ID_RANGE, PRODUCE_VERSION};
use crate::protocol::record_batch::{
    build_batch, NewRecord, ATTRIBUTES_OFFSET, BATCH_HEADER_BYTES, CRC_OFFSET,
};

/// Byte offset of firstTimestamp in a v2 batch header.
const FIRST_TIMESTAMP_OFFSET: usize = 27;
/// Byte offset of maxTimestamp in a v2 batch header.
const MAX_TIMESTAMP_OFFSET: usize = 35;
/// Bytes of the microsecond send stamp at the start of the first record's value.
pub const STAMP_BYTES: usize = 8;

/// A small deterministic generator (xorshift64*), enough for keys and filler.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced by a constant).
    pub fn new(seed: u64) -> Self {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// What goes into each batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchSpec {
    /// Records per batch.
    pub messages: u32,
    /// Value bytes per record.
    pub message_bytes: u32,
    /// Key choice.
    pub keys: KeyDistribution,
    /// Distinct keys.
    pub key_count: u64,
    /// Codec.
    pub compression: CompressionArg,
}

/// One encoded batch and where its first value starts (uncompressed only).
#[derive(Debug, Clone)]
pub struct EncodedBatch {
    /// The v2 batch, base offset 0, valid CRC.
    pub bytes: Vec<u8>,
    /// Offset of the first record's value when the batch is uncompressed and
    /// the value can hold a stamp.
    pub stamp_offset: Option<usize>,
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Option<i64> {
    let mut shift = 0u32;
    let mut raw = 0u64;
    loop {
        let byte = *bytes.get(*at)?;
        *at += 1;
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
    Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Offset of the first record's value in an uncompressed v2 batch, or None.
pub fn first_value_offset(batch: &[u8]) -> Option<usize> {
    let mut at = BATCH_HEADER_BYTES;
    read_varint(batch, &mut at)?; // record length
    at += 1; // attributes
    read_varint(batch, &mut at)?; // timestamp delta
    read_varint(batch, &mut at)?; // offset delta
    let key_len = read_varint(batch, &mut at)?;
    if key_len > 0 {
        at += key_len as usize;
    }
    let value_len = read_varint(batch, &mut at)?;
    (value_len >= STAMP_BYTES as i64 && at + STAMP_BYTES <= batch.len()).then_some(at)
}

fn filler(rng: &mut Rng, bytes: usize) -> Vec<u8> {
    // Text-like bytes: compressible about as much as typical JSON payloads,
    // not trivially (a constant would flatter every codec).
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 {}:,\"ABCDEFGHIJ";
    (0..bytes)
        .map(|_| ALPHABET[(rng.next_u64() % ALPHABET.len() as u64) as usize])
        .collect()
}

fn key_for(spec: &BatchSpec, rng: &mut Rng, sequence: &mut u64) -> Option<[u8; 8]> {
    match spec.keys {
        KeyDistribution::None => None,
        KeyDistribution::Uniform => Some((rng.next_u64() % spec.key_count).to_be_bytes()),
        KeyDistribution::Sequential => {
            let key = *sequence % spec.key_count;
            *sequence += 1;
            Some(key.to_be_bytes())
        }
    }
}

/// Encodes one batch: uncompressed through the project's builder, compressed
/// through kafka-protocol's encoder. Every record carries `timestamp_ms`.
///
/// # Errors
/// A codec failure.
pub fn encode_batch(
    spec: &BatchSpec,
    rng: &mut Rng,
    sequence: &mut u64,
    timestamp_ms: i64,
) -> anyhow::Result<EncodedBatch> {
    let messages = spec.messages.max(1) as usize;
    let keys: Vec<Option<[u8; 8]>> = (0..messages)
        .map(|_| key_for(spec, rng, sequence))
        .collect();
    let values: Vec<Vec<u8>> = (0..messages)
        .map(|_| filler(rng, spec.message_bytes as usize))
        .collect();
    if spec.compression == CompressionArg::None {
        let records: Vec<NewRecord<'_>> = keys
            .iter()
            .zip(&values)
            .map(|(key, value)| NewRecord {
                key: key.as_ref().map(|k| &k[..]),
                value: Some(value),
            })
            .collect();
        let bytes = build_batch(&records, timestamp_ms);
        let stamp_offset = first_value_offset(&bytes);
        return Ok(EncodedBatch {
            bytes,
            stamp_offset,
        });
    }
    let compression = match spec.compression {
        CompressionArg::None => Compression::None,
        CompressionArg::Gzip => Compression::Gzip,
        CompressionArg::Snappy => Compression::Snappy,
        CompressionArg::Lz4 => Compression::Lz4,
        CompressionArg::Zstd => Compression::Zstd,
    };
    let records: Vec<Record> = keys
        .into_iter()
        .zip(values)
        .enumerate()
        .map(|(index, (key, value))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: index as i64,
            // kafka-protocol starts a new batch whenever offset - sequence changes.
            sequence: index as i32,
            timestamp: timestamp_ms,
            key: key.map(|k| Bytes::copy_from_slice(&k)),
            value: Some(Bytes::from(value)),
            headers: Default::default(),
        })
        .collect();
    let mut buffer = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buffer,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| anyhow::anyhow!("cannot encode a {compression:?} batch: {e}"))?;
    Ok(EncodedBatch {
        bytes: buffer.to_vec(),
        stamp_offset: None,
    })
}

/// Writes the send time into a batch in place: firstTimestamp and
/// maxTimestamp in milliseconds (all records have timestamp delta 0), the
/// microsecond stamp into the first value when there is room, and the CRC.
pub fn stamp_batch(batch: &mut [u8], stamp_offset: Option<usize>, now_us: i64) {
    let now_ms = now_us / 1000;
    batch[FIRST_TIMESTAMP_OFFSET..FIRST_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&now_ms.to_be_bytes());
    batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&now_ms.to_be_bytes());
    if let Some(at) = stamp_offset {
        batch[at..at + STAMP_BYTES].copy_from_slice(&now_us.to_be_bytes());
    }
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// The send time carried by a consumed batch: the microsecond stamp of its
/// first value when `uncompressed` and present, else firstTimestamp in ms.
pub fn batch_send_time_us(batch: &[u8], uncompressed: bool) -> Option<i64> {
    if batch.len() < BATCH_HEADER_BYTES {
        return None;
    }
    if uncompressed {
        if let Some(at) = first_value_offset(batch) {
            let mut stamp = [0u8; 8];
            stamp.copy_from_slice(&batch[at..at + STAMP_BYTES]);
            return Some(i64::from_be_bytes(stamp));
        }
    }
    let mut ms = [0u8; 8];
    ms.copy_from_slice(&batch[FIRST_TIMESTAMP_OFFSET..FIRST_TIMESTAMP_OFFSET + 8]);
    Some(i64::from_be_bytes(ms) * 1000)
}

/// A pre-encoded produce request frame and where its batches are.
#[derive(Debug)]
pub struct ProduceFrame {
    /// The frame, size prefix included.
    pub frame: Vec<u8>,
    /// (offset in the frame, length, stamp offset within the batch) per batch.
    pub batches: Vec<(usize, usize, Option<usize>)>,
    /// Records in the request.
    pub messages: u64,
    /// Value bytes in the request.
    pub payload_bytes: u64,
    /// Partitions, in request order.
    pub partitions: Vec<i32>,
}

impl ProduceFrame {
    /// Sets the correlation id.
    pub fn set_correlation_id(&mut self, correlation_id: i32) {
        self.frame[CORRELATION_ID_RANGE].copy_from_slice(&correlation_id.to_be_bytes());
    }
    /// Stamps every batch with `now_us` (end-to-end mode).
    pub fn stamp(&mut self, now_us: i64) {
        for &(at, len, stamp_offset) in &self.batches {
            stamp_batch(&mut self.frame[at..at + len], stamp_offset, now_us);
        }
    }
}

/// Builds one produce request per group of partitions: batches of
/// consecutive partitions go in one request until it reaches
/// `request_bytes_max` (always at least one batch).
///
/// # Errors
/// Encoding failures.
pub fn build_produce_frames(
    topic: &str,
    partitions: &[i32],
    acks: i16,
    spec: &BatchSpec,
    request_bytes_max: usize,
    rng: &mut Rng,
    timestamp_ms: i64,
) -> anyhow::Result<Vec<ProduceFrame>> {
    let mut sequence = 0u64;
    let mut frames = Vec::new();
    let mut group: Vec<(i32, EncodedBatch)> = Vec::new();
    let mut group_bytes = 0usize;
    let finish = |group: &mut Vec<(i32, EncodedBatch)>| -> anyhow::Result<ProduceFrame> {
        let request = ProduceRequest::default()
            .with_acks(acks)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(
                    group
                        .iter()
                        .map(|(p, b)| {
                            PartitionProduceData::default()
                                .with_index(*p)
                                .with_records(Some(Bytes::copy_from_slice(&b.bytes)))
                        })
                        .collect(),
                )]);
        let frame = encode_frame(ApiKey::Produce, PRODUCE_VERSION, 0, &request)?.to_vec();
        // Each partition's records are the last field of its entry, so the
        // batches lie in order in the frame; find each after the previous.
        let mut batches = Vec::with_capacity(group.len());
        let mut from = 0usize;
        for (_, batch) in group.iter() {
            let len = batch.bytes.len();
            let at = frame[from..]
                .windows(len)
                .position(|window| window == &batch.bytes[..])
                .map(|p| p + from)
                .ok_or_else(|| anyhow::anyhow!("batch not found in its encoded request"))?;
            batches.push((at, len, batch.stamp_offset));
            from = at + len;
        }
        let messages = group.len() as u64 * u64::from(spec.messages);
        let partitions = group.iter().map(|(p, _)| *p).collect();
        group.clear();
        Ok(ProduceFrame {
            frame,
            batches,
            messages,
            payload_bytes: messages * u64::from(spec.message_bytes),
            partitions,
        })
    };
    for &partition in partitions {
        let batch = encode_batch(spec, rng, &mut sequence, timestamp_ms)?;
        if !group.is_empty() && group_bytes + batch.bytes.len() > request_bytes_max {
            frames.push(finish(&mut group)?);
            group_bytes = 0;
        }
        group_bytes += batch.bytes.len();
        group.push((partition, batch));
    }
    if !group.is_empty() {
        frames.push(finish(&mut group)?);
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::validate_batch;

    fn spec(compression: CompressionArg, keys: KeyDistribution) -> BatchSpec {
        BatchSpec {
            messages: 4,
            message_bytes: 100,
            keys,
            key_count: 10,
            compression,
        }
    }

    #[test]
    fn batches_validate_for_every_codec_and_key_choice() {
        for compression in [
            CompressionArg::None,
            CompressionArg::Gzip,
            CompressionArg::Snappy,
            CompressionArg::Lz4,
            CompressionArg::Zstd,
        ] {
            for keys in [
                KeyDistribution::None,
                KeyDistribution::Uniform,
                KeyDistribution::Sequential,
            ] {
                let b =
                    encode_batch(&spec(compression, keys), &mut Rng::new(1), &mut 0, 1000).unwrap();
                let header = validate_batch(&b.bytes).unwrap();
                assert_eq!(header.last_offset_delta, 3);
                assert_eq!(
                    header.compression() != 0,
                    compression != CompressionArg::None
                );
                assert_eq!(
                    b.stamp_offset.is_some(),
                    compression == CompressionArg::None
                );
            }
        }
    }

    #[test]
    fn stamps_survive_the_crc_and_read_back() {
        let mut b = encode_batch(
            &spec(CompressionArg::None, KeyDistribution::Uniform),
            &mut Rng::new(7),
            &mut 0,
            1000,
        )
        .unwrap();
        let now_us = 1_700_000_000_123_456;
        stamp_batch(&mut b.bytes, b.stamp_offset, now_us);
        let header = validate_batch(&b.bytes).unwrap();
        assert_eq!(header.base_timestamp, now_us / 1000);
        assert_eq!(batch_send_time_us(&b.bytes, true), Some(now_us));
        let mut c = encode_batch(
            &spec(CompressionArg::Lz4, KeyDistribution::None),
            &mut Rng::new(7),
            &mut 0,
            1000,
        )
        .unwrap();
        stamp_batch(&mut c.bytes, c.stamp_offset, now_us);
        validate_batch(&c.bytes).unwrap();
        assert_eq!(
            batch_send_time_us(&c.bytes, false),
            Some(now_us / 1000 * 1000)
        );
    }

    #[test]
    fn produce_frames_split_at_the_request_size_and_locate_their_batches() {
        let s = spec(CompressionArg::None, KeyDistribution::None);
        let partitions: Vec<i32> = (0..10).collect();
        let frames =
            build_produce_frames("t", &partitions, 1, &s, 1200, &mut Rng::new(3), 5).unwrap();
        // Each batch is ~500 bytes: two per request.
        assert_eq!(frames.len(), 5);
        let mut frame = frames.into_iter().next().unwrap();
        assert_eq!(frame.partitions, vec![0, 1]);
        assert_eq!(frame.messages, 8);
        frame.set_correlation_id(77);
        frame.stamp(9_000_000);
        assert_eq!(&frame.frame[8..12], &77i32.to_be_bytes());
        let size = i32::from_be_bytes(frame.frame[..4].try_into().unwrap()) as usize;
        assert_eq!(size + 4, frame.frame.len());
        for &(at, len, _) in &frame.batches {
            let header = validate_batch(&frame.frame[at..at + len]).unwrap();
            assert_eq!(header.base_timestamp, 9_000);
        }
    }
}
