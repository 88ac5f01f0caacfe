//! Produce requests are read in two layers (issue 5, "read a Produce
//! request's header and partition framing first"): the framing (request
//! header, transactional id, acks, topic names, partition indexes, lengths,
//! tagged fields) through a small look-ahead buffer, and each partition's
//! records straight from the socket into a buffer of their own.
//!
//! Reading the whole frame into one buffer made every partition's batch a
//! slice of it: a partition's in-memory tail holding one slice kept the
//! whole frame alive, so batches of multi-partition requests were copied
//! once more in user space (6-10 % of the broker's CPU at 16 partitions per
//! request). Here each batch is its own allocation: records of at least
//! [`DIRECT_RECORDS_MIN`] are received straight into it (the kernel's copy
//! is the only one; only the look-ahead's overlap with them, at most
//! [`LOOKAHEAD_BYTES`], is copied), and handed on (to another shard, too) as
//! that `Bytes`. Shorter records are read [`BULK_READ_BYTES`] of the frame
//! at a time and copied out: a read per small batch would cost more than
//! the copy (measured: 16 batches of 15 KiB per request read one by one
//! took 10x the reads and more CPU than copying them). A frame of at most
//! [`BULK_READ_BYTES`] is read whole by its first read (the connection asks
//! for all of it), so its records, long or short, are copied out of that
//! read: one read instead of three for a request with one batch.
//!
//! Where the connection is on the partition's own shard, records of at
//! least [`DIRECT_RECORDS_MIN`] go into memory the partition's log hands out
//! instead of a buffer of their own (`storage/direct.rs`), placed as they
//! will lie on disk, so the log writes them from there without copying
//! them: received there, or copied there out of a frame read whole.
//!
//! The grammar is Kafka's ProduceRequest v3-v13 and request header v1/v2
//! (flexible from Produce v9; v13 names each topic by its id, not its
//! name). Every length is checked against the bytes the frame has left
//! before anything is allocated or read, so a malformed
//! frame costs at most its own size (bounded by socket.request.max.bytes)
//! and ends in [`FrameError::Malformed`]; bytes after the request (which
//! the whole-frame decoder ignores, too) are read and dropped, so the next
//! frame starts where it should.

use std::cell::RefCell;
use std::collections::BTreeMap;

use bytes::{Buf, Bytes, BytesMut};
use futures::{AsyncRead, AsyncReadExt};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, RequestHeader, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::storage::DirectSlot;

/// Framing bytes read ahead of the parser at once: enough for a request
/// header and a topic's framing in one read; in a frame longer than
/// [`BULK_READ_BYTES`], at most this much of a partition's records is
/// copied from the look-ahead into its buffer.
pub const LOOKAHEAD_BYTES: usize = 512;

/// Records at least this long are received straight into their own buffer
/// (one more read per partition); shorter ones are read with the frame
/// bytes around them, [`BULK_READ_BYTES`] at a time, and copied out: for a
/// batch this small, a copy costs less than a read of its own. Records
/// this long also go into the memory their log writes from when it gives
/// some (`storage/direct.rs`); shorter ones are copied into the log's write
/// buffer: taking them from 8 KiB, one partition of 16 KiB batches ran
/// 180-210 MB/s against 219-315 (p99 0.7 ms against 0.3-0.5) on
/// dev-2vcpu-epyc, though 16 partitions gained 10-20 %.
pub const DIRECT_RECORDS_MIN: usize = 32 << 10;

/// How much of the frame one read takes when short records are read.
pub const BULK_READ_BYTES: usize = 64 << 10;

/// Size of a [`ReadBuf`]: a bulk read and the look-ahead it may follow.
const READ_BUF_BYTES: usize = BULK_READ_BYTES + LOOKAHEAD_BYTES;

/// Read buffers a thread keeps for reuse (a [`READ_BUF_BYTES`] each).
const READ_BUFS_KEPT: usize = 64;

thread_local! {
    static READ_BUFS: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// The bytes of a frame read from the socket and not yet parsed, in memory
/// kept per thread and reused. A buffer allocated and zeroed per request,
/// and again per bulk read once a topic name taken from it shared it, had
/// `memset` at 2.4-2.7 % of the shard's samples at 16 partitions acks=1;
/// with reuse it is gone from the profile (dev-2vcpu-epyc, HARDWARE.md).
/// Nothing taken from it refers to it: strings are copied out, as the
/// records are. Reads stay within one buffer unless a single string or
/// field needs more.
pub struct ReadBuf {
    data: Box<[u8]>,
    start: usize,
    end: usize,
}

impl ReadBuf {
    /// An empty buffer of [`READ_BUF_BYTES`]: this thread's last freed one,
    /// else a new one.
    pub fn new() -> Self {
        let data = READ_BUFS
            .try_with(|bufs| bufs.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_else(|| vec![0u8; READ_BUF_BYTES].into_boxed_slice());
        ReadBuf {
            data,
            start: 0,
            end: 0,
        }
    }

    /// A buffer holding `bytes`.
    pub fn from_slice(bytes: &[u8]) -> Self {
        let mut buf = ReadBuf::new();
        buf.make_room(bytes.len());
        buf.data[..bytes.len()].copy_from_slice(bytes);
        buf.end = bytes.len();
        buf
    }

    /// Memory after the held bytes, to read into; [`ReadBuf::add_read`]
    /// then adds what was read.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        &mut self.data[self.end..]
    }

    /// Counts `read` more bytes of [`ReadBuf::spare_mut`] as held.
    pub fn add_read(&mut self, read: usize) {
        assert!(read <= self.data.len() - self.end);
        self.end += read;
    }

    /// Makes room for `total` held bytes in a row: moves the held ones to
    /// the front, or into a larger buffer when `total` exceeds this one.
    fn make_room(&mut self, total: usize) {
        if self.data.len() - self.start >= total {
            return;
        }
        let held = self.end - self.start;
        if total <= self.data.len() {
            self.data.copy_within(self.start..self.end, 0);
        } else {
            // Only a malformed or unusual frame (a string or tagged field
            // longer than a bulk read) gets here; bounded by the frame.
            let mut larger = vec![0u8; total].into_boxed_slice();
            larger[..held].copy_from_slice(&self.data[self.start..self.end]);
            self.data = larger;
        }
        self.start = 0;
        self.end = held;
    }

    fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }
}

impl Default for ReadBuf {
    fn default() -> Self {
        ReadBuf::new()
    }
}

impl std::fmt::Debug for ReadBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBuf")
            .field("held", &(self.end - self.start))
            .finish()
    }
}

impl std::ops::Deref for ReadBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }
}

impl Buf for ReadBuf {
    fn remaining(&self) -> usize {
        self.end - self.start
    }

    fn chunk(&self) -> &[u8] {
        self
    }

    fn advance(&mut self, count: usize) {
        assert!(
            count <= self.end - self.start,
            "advance past the held bytes"
        );
        self.start += count;
    }
}

impl Drop for ReadBuf {
    fn drop(&mut self) {
        if self.data.len() != READ_BUF_BYTES {
            return;
        }
        let data = std::mem::take(&mut self.data);
        let _ = READ_BUFS.try_with(|bufs| {
            let mut bufs = bufs.borrow_mut();
            if bufs.len() < READ_BUFS_KEPT {
                bufs.push(data);
            }
        });
    }
}

/// Why a Produce frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The socket failed or closed inside the frame.
    Io(std::io::Error),
    /// The bytes do not form a Produce request of the header's version.
    Malformed(&'static str),
}

impl From<std::io::Error> for FrameError {
    fn from(error: std::io::Error) -> Self {
        FrameError::Io(error)
    }
}

/// A Produce request as read from one frame.
#[derive(Debug)]
pub struct ProduceFrame {
    /// The request header.
    pub header: RequestHeader,
    /// The body; each partition's `records` is a buffer of its own.
    pub request: ProduceRequest,
    /// Header and body bytes (the frame without its size), which a
    /// producer quota counts.
    pub frame_bytes: usize,
}

/// Where a partition's records may be received into the memory its log
/// writes from (`storage/direct.rs`): given the topic (by name before
/// Produce v13, by id from v13), partition and the records' length, a slot,
/// or None to use a buffer of their own. Asked only for records of at least
/// [`DIRECT_RECORDS_MIN`].
pub type DirectTargets<'a> = &'a dyn Fn(&TopicProduceData, i32, usize) -> Option<DirectSlot>;

/// No partition takes records directly.
pub fn no_direct_targets(_: &TopicProduceData, _: i32, _: usize) -> Option<DirectSlot> {
    None
}

/// Reads the rest of a Produce frame of `frame_bytes` (size prefix
/// excluded), of which `prefix` (at least the 4 bytes of API key and
/// version) was read already, into a buffer reads go on in; records of
/// partitions `direct` has a slot for are received into it.
///
/// # Errors
/// [`FrameError::Io`] when the socket fails or closes inside the frame,
/// [`FrameError::Malformed`] when the bytes are not a Produce request of
/// the header's version. Either way the connection cannot go on.
pub async fn read_produce_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    prefix: ReadBuf,
    frame_bytes: usize,
    direct: DirectTargets<'_>,
) -> Result<ProduceFrame, FrameError> {
    if prefix.len() > frame_bytes {
        return Err(FrameError::Malformed("prefix longer than the frame"));
    }
    let mut framing = Framing {
        reader,
        unread: frame_bytes - prefix.len(),
        buf: prefix,
    };
    let header = framing.header().await?;
    let version = header.request_api_version;
    if !(3..=13).contains(&version) {
        return Err(FrameError::Malformed("Produce version not readable"));
    }
    let flexible = version >= 9;
    let mut request = ProduceRequest::default();
    request.transactional_id = framing
        .nullable_string(flexible)
        .await?
        .map(TransactionalId);
    request.acks = framing.i16().await?;
    request.timeout_ms = framing.i32().await?;
    let topics = framing.array_len(flexible, "topic array").await?;
    let mut topic_data = Vec::with_capacity(topics.min(64));
    for _ in 0..topics {
        let mut topic = TopicProduceData::default();
        if version >= 13 {
            topic.topic_id = framing.uuid().await?;
        } else {
            topic.name = TopicName(
                framing
                    .nullable_string(flexible)
                    .await?
                    .ok_or(FrameError::Malformed("null topic name"))?,
            );
        }
        let partitions = framing.array_len(flexible, "partition array").await?;
        let mut partition_data = Vec::with_capacity(partitions.min(1024));
        for _ in 0..partitions {
            let mut partition = PartitionProduceData::default();
            partition.index = framing.i32().await?;
            partition.records = framing
                .records(flexible, |len| direct(&topic, partition.index, len))
                .await?;
            if flexible {
                partition.unknown_tagged_fields = framing.tagged_fields().await?;
            }
            partition_data.push(partition);
        }
        topic.partition_data = partition_data;
        if flexible {
            topic.unknown_tagged_fields = framing.tagged_fields().await?;
        }
        topic_data.push(topic);
    }
    request.topic_data = topic_data;
    if flexible {
        request.unknown_tagged_fields = framing.tagged_fields().await?;
    }
    framing.skip_rest().await?;
    Ok(ProduceFrame {
        header,
        request,
        frame_bytes,
    })
}

/// The frame's bytes not yet parsed: `buf` read from the socket, `unread`
/// still in it.
struct Framing<'a, R> {
    reader: &'a mut R,
    unread: usize,
    buf: ReadBuf,
}

impl<R: AsyncRead + Unpin> Framing<'_, R> {
    /// Frame bytes left to parse.
    fn left(&self) -> usize {
        self.buf.len() + self.unread
    }

    /// Makes `need` bytes available in `buf`, reading up to
    /// [`LOOKAHEAD_BYTES`] more of the frame when it can.
    async fn fill(&mut self, need: usize) -> Result<(), FrameError> {
        self.fill_ahead(need, LOOKAHEAD_BYTES).await
    }

    /// Makes `need` bytes available in `buf`, reading up to `ahead` bytes
    /// at once when the frame has them (what a read returns, never waiting
    /// for more than `need`).
    async fn fill_ahead(&mut self, need: usize, ahead: usize) -> Result<(), FrameError> {
        if self.buf.len() >= need {
            return Ok(());
        }
        if need > self.left() {
            return Err(FrameError::Malformed("request ends early"));
        }
        let held = self.buf.len();
        // Read ahead within one read buffer; beyond it only what is needed.
        let room = (need - held)
            .max(ahead)
            .min(self.unread)
            .min(READ_BUF_BYTES.saturating_sub(held))
            .max(need - held);
        self.buf.make_room(held + room);
        let mut read_total = 0;
        while self.buf.len() < need {
            let spare = &mut self.buf.spare_mut()[..room - read_total];
            let read = match self.reader.read(spare).await {
                Ok(0) => {
                    return Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()));
                }
                Ok(read) => read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error.into()),
            };
            self.buf.add_read(read);
            read_total += read;
        }
        self.unread -= read_total;
        Ok(())
    }

    async fn take(&mut self, bytes: usize) -> Result<Bytes, FrameError> {
        self.fill(bytes).await?;
        let taken = Bytes::copy_from_slice(&self.buf[..bytes]);
        self.buf.advance(bytes);
        Ok(taken)
    }

    async fn i16(&mut self) -> Result<i16, FrameError> {
        self.fill(2).await?;
        Ok(self.buf.get_i16())
    }

    async fn i32(&mut self) -> Result<i32, FrameError> {
        self.fill(4).await?;
        Ok(self.buf.get_i32())
    }

    async fn uuid(&mut self) -> Result<Uuid, FrameError> {
        self.fill(16).await?;
        Ok(Uuid::from_u128(self.buf.get_u128()))
    }

    /// Kafka's UNSIGNED_VARINT, read as Java's `ByteUtils.readUnsignedVarint`
    /// reads it: at most 5 bytes, the fifth without a continuation bit; its
    /// bits above the 32nd are dropped.
    async fn uvarint(&mut self) -> Result<u32, FrameError> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            self.fill(1).await?;
            let byte = self.buf.get_u8();
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(FrameError::Malformed("varint too long"))
    }

    /// A (compact when `flexible`) nullable string's length: None for null.
    async fn nullable_len(&mut self, flexible: bool) -> Result<Option<usize>, FrameError> {
        let len = if flexible {
            i64::from(self.uvarint().await?) - 1
        } else {
            i64::from(self.i16().await?)
        };
        match len {
            -1 => Ok(None),
            len if len < 0 => Err(FrameError::Malformed("negative length")),
            len if len as u64 > self.left() as u64 => {
                Err(FrameError::Malformed("length past the end of the request"))
            }
            len => Ok(Some(len as usize)),
        }
    }

    async fn nullable_string(&mut self, flexible: bool) -> Result<Option<StrBytes>, FrameError> {
        let Some(len) = self.nullable_len(flexible).await? else {
            return Ok(None);
        };
        let bytes = self.take(len).await?;
        StrBytes::from_utf8(bytes)
            .map(Some)
            .map_err(|_| FrameError::Malformed("string is not UTF-8"))
    }

    /// A non-null array's element count. Each element takes at least one
    /// byte, so a count past the bytes left is malformed.
    async fn array_len(&mut self, flexible: bool, what: &'static str) -> Result<usize, FrameError> {
        let count = if flexible {
            i64::from(self.uvarint().await?) - 1
        } else {
            i64::from(self.i32().await?)
        };
        if count < 0 {
            return Err(FrameError::Malformed(what));
        }
        if count as u64 > self.left() as u64 {
            return Err(FrameError::Malformed("array longer than the request"));
        }
        Ok(count as usize)
    }

    /// A partition's records (nullable bytes), in a buffer of their own:
    /// short ones copied out of a bulk read, long ones received straight
    /// into place (after what the look-ahead holds of them); long ones go
    /// into the slot `direct` gives, when it gives one.
    async fn records(
        &mut self,
        flexible: bool,
        direct: impl FnOnce(usize) -> Option<DirectSlot>,
    ) -> Result<Option<Bytes>, FrameError> {
        let len = if flexible {
            i64::from(self.uvarint().await?) - 1
        } else {
            i64::from(self.i32().await?)
        };
        let len = match len {
            -1 => return Ok(None),
            len if len < 0 => return Err(FrameError::Malformed("negative records length")),
            len if len as u64 > self.left() as u64 => {
                return Err(FrameError::Malformed("records past the end of the request"))
            }
            len => len as usize,
        };
        if len < DIRECT_RECORDS_MIN {
            self.fill_ahead(len, BULK_READ_BYTES).await?;
        } else if let Some(mut slot) = direct(len) {
            let buffered = len.min(self.buf.len());
            let records = slot.records_mut();
            records[..buffered].copy_from_slice(&self.buf[..buffered]);
            self.buf.advance(buffered);
            self.reader.read_exact(&mut records[buffered..]).await?;
            self.unread -= len - buffered;
            return Ok(Some(slot.freeze()));
        }
        let buffered = len.min(self.buf.len());
        if buffered == len {
            // Records the read buffer holds whole are copied out, so a
            // partition's tail never keeps that buffer alive.
            let records = Bytes::copy_from_slice(&self.buf[..len]);
            self.buf.advance(len);
            return Ok(Some(records));
        }
        let mut records = BytesMut::zeroed(len);
        records[..buffered].copy_from_slice(&self.buf[..buffered]);
        self.buf.advance(buffered);
        self.reader.read_exact(&mut records[buffered..]).await?;
        self.unread -= len - buffered;
        Ok(Some(records.freeze()))
    }

    /// A tagged-field section, kept as unknown fields (Produce defines none).
    async fn tagged_fields(&mut self) -> Result<BTreeMap<i32, Bytes>, FrameError> {
        let count = self.uvarint().await?;
        if count as usize > self.left() {
            return Err(FrameError::Malformed("more tagged fields than bytes"));
        }
        let mut fields = BTreeMap::new();
        for _ in 0..count {
            let tag = self.uvarint().await?;
            let size = self.uvarint().await? as usize;
            if size > self.left() {
                return Err(FrameError::Malformed("tagged field past the end"));
            }
            let value = self.take(size).await?;
            fields.insert(tag as i32, value);
        }
        Ok(fields)
    }

    /// Request header v1 (Produce v3-v8) or v2 (v9 and later): the client
    /// id is a non-compact nullable string in both.
    async fn header(&mut self) -> Result<RequestHeader, FrameError> {
        let mut header = RequestHeader::default();
        header.request_api_key = self.i16().await?;
        header.request_api_version = self.i16().await?;
        header.correlation_id = self.i32().await?;
        header.client_id = self.nullable_string(false).await?;
        if header.request_api_version >= 9 {
            header.unknown_tagged_fields = self.tagged_fields().await?;
        }
        Ok(header)
    }

    /// Reads and drops whatever follows the request in its frame.
    async fn skip_rest(&mut self) -> Result<(), FrameError> {
        self.buf.clear();
        let mut scratch = [0u8; 1024];
        while self.unread > 0 {
            let chunk = self.unread.min(scratch.len());
            self.reader.read_exact(&mut scratch[..chunk]).await?;
            self.unread -= chunk;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Chunked;
    use super::*;
    use kafka_protocol::protocol::{Decodable, Encodable};

    /// A request, and its frame (size prefix excluded) at `version`.
    fn frame(
        version: i16,
        records: &[Option<Vec<u8>>],
    ) -> (ProduceRequest, RequestHeader, Vec<u8>) {
        let mut header = RequestHeader::default();
        header.request_api_key = 0;
        header.request_api_version = version;
        header.correlation_id = 42;
        header.client_id = Some(StrBytes::from_string("client-1".into()));
        let mut request = ProduceRequest::default();
        request.acks = -1;
        request.timeout_ms = 30_000;
        if version >= 9 {
            request.transactional_id = Some(TransactionalId(StrBytes::from_string("tx".into())));
        }
        // From v13 a topic is named by its id only.
        let mut topic = TopicProduceData::default();
        if version >= 13 {
            topic.topic_id = Uuid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        } else {
            topic.name = TopicName(StrBytes::from_string("topic-a".into()));
        }
        for (index, records) in records.iter().enumerate() {
            let mut partition = PartitionProduceData::default();
            partition.index = index as i32;
            partition.records = records.clone().map(Bytes::from);
            topic.partition_data.push(partition);
        }
        request.topic_data.push(topic);
        let mut second = TopicProduceData::default();
        if version >= 13 {
            second.topic_id = Uuid::from_u128(2);
        } else {
            second.name = TopicName(StrBytes::from_string("b".into()));
        }
        request.topic_data.push(second);
        let mut buf = BytesMut::new();
        let header_version = if version >= 9 { 2 } else { 1 };
        header.encode(&mut buf, header_version).unwrap();
        request.encode(&mut buf, version).unwrap();
        (request, header, buf.to_vec())
    }

    /// Reads `bytes` as one frame through a reader that returns at most
    /// `chunk` bytes per read (a socket delivering the frame in pieces).
    fn read(
        bytes: &[u8],
        chunk: usize,
        extra: &[u8],
    ) -> Result<(ProduceFrame, Vec<u8>), FrameError> {
        let mut all = bytes.to_vec();
        all.extend_from_slice(extra);
        let mut reader = Chunked { data: &all, chunk };
        let mut head = [0u8; 4];
        futures::executor::block_on(reader.read_exact(&mut head)).unwrap();
        let prefix = ReadBuf::from_slice(&head);
        let frame = futures::executor::block_on(read_produce_frame(
            &mut reader,
            prefix,
            bytes.len(),
            &no_direct_targets,
        ))?;
        Ok((frame, reader.data.to_vec()))
    }

    #[test]
    fn every_version_reads_as_the_codec_decodes_it() {
        let medium = vec![7u8; 3 * LOOKAHEAD_BYTES + 5];
        let large = vec![8u8; DIRECT_RECORDS_MIN + 3 * LOOKAHEAD_BYTES];
        let records = [
            Some(vec![1u8; 10]),
            None,
            Some(medium),
            Some(large.clone()),
            Some(Vec::new()),
            Some(large),
            Some(vec![2u8; 5]),
        ];
        for version in 3..=13 {
            let (request, header, bytes) = frame(version, &records);
            let mut body = Bytes::from(bytes.clone());
            let header_version = if version >= 9 { 2 } else { 1 };
            let decoded_header = RequestHeader::decode(&mut body, header_version).unwrap();
            let decoded = ProduceRequest::decode(&mut body, version).unwrap();
            assert_eq!(decoded, request);
            for chunk in [1, 3, 100, usize::MAX] {
                let (frame, rest) = read(&bytes, chunk, b"next").unwrap();
                assert_eq!(frame.header, header, "v{version} chunk {chunk}");
                assert_eq!(frame.header, decoded_header);
                assert_eq!(frame.request, request, "v{version} chunk {chunk}");
                assert_eq!(rest, b"next", "the next frame is left unread");
            }
        }
    }

    /// Goal: strings longer than a read buffer (a topic name, a
    /// transactional id) read whole, and read buffers freed by one frame
    /// serve the next without carrying its bytes over. Method: a v9 frame
    /// whose topic name and transactional id exceed the buffer, read in
    /// chunks of several sizes, then ordinary frames, on one thread.
    #[test]
    fn strings_longer_than_the_read_buffer_and_reused_buffers_read_correctly() {
        let records = [Some(vec![5u8; 3000]), Some(vec![6u8; 40_000])];
        let (mut request, header, _) = frame(9, &records);
        let long = |c: char| {
            StrBytes::from_string(std::iter::repeat_n(c, READ_BUF_BYTES + 3000).collect())
        };
        request.topic_data[0].name = TopicName(long('t'));
        request.transactional_id = Some(TransactionalId(long('x')));
        let mut bytes = BytesMut::new();
        header.encode(&mut bytes, 2).unwrap();
        request.encode(&mut bytes, 9).unwrap();
        for chunk in [7, 4096, usize::MAX] {
            let (long_frame, rest) = read(&bytes, chunk, b"z").unwrap();
            assert_eq!(long_frame.request, request, "chunk {chunk}");
            assert_eq!(rest, b"z");
            let (plain, plain_header, plain_bytes) = frame(12, &records);
            let (plain_frame, _) = read(&plain_bytes, chunk, b"").unwrap();
            assert_eq!(plain_frame.request, plain, "chunk {chunk}");
            assert_eq!(plain_frame.header, plain_header);
        }
        // A buffer taken after one was freed starts empty.
        let mut first = ReadBuf::from_slice(b"abc");
        first.advance(1);
        assert_eq!(&first[..], b"bc");
        drop(first);
        let mut again = ReadBuf::new();
        assert_eq!(again.remaining(), 0);
        assert_eq!(again.spare_mut().len(), READ_BUF_BYTES);
    }

    #[test]
    fn varints_read_as_java_reads_them() {
        let (request, _, bytes) = frame(9, &[Some(vec![3u8; 20])]);
        assert_eq!(bytes.last(), Some(&0), "ends with the tagged-field count");
        let with_last = |last: &[u8]| {
            let mut changed = bytes[..bytes.len() - 1].to_vec();
            changed.extend_from_slice(last);
            changed
        };
        // Five bytes whose last overflows 32 bits: Java drops those bits (0).
        let overflowing = with_last(&[0x80, 0x80, 0x80, 0x80, 0x10]);
        let (frame, _) = read(&overflowing, 7, b"").unwrap();
        assert_eq!(frame.request, request);
        // A fifth byte that says more follow: Java refuses it.
        let too_long = with_last(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
        assert!(matches!(
            read(&too_long, 7, b""),
            Err(FrameError::Malformed(_))
        ));
    }

    #[test]
    fn trailing_bytes_inside_the_frame_are_dropped() {
        let (request, _, mut bytes) = frame(9, &[Some(vec![3u8; 2000])]);
        bytes.extend_from_slice(&[0xee; 3000]);
        let (frame, rest) = read(&bytes, 700, b"x").unwrap();
        assert_eq!(frame.request, request);
        assert_eq!(rest, b"x");
    }

    #[test]
    fn truncated_and_lying_frames_are_malformed_not_panics() {
        let (_, _, bytes) = frame(8, &[Some(vec![9u8; 1500]), Some(vec![1u8; 20])]);
        // Every cut of the frame: the parser must stop at the frame's end
        // (never read the next frame's bytes) and report it malformed.
        for cut in 4..bytes.len() {
            match read(&bytes[..cut], 64, &bytes[cut..]) {
                Err(FrameError::Malformed(_)) => {}
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
        // A records length larger than the frame.
        let (_, _, mut lying) = frame(8, &[Some(vec![9u8; 100])]);
        let at = lying
            .windows(4)
            .position(|w| w == 100i32.to_be_bytes())
            .unwrap();
        lying[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            read(&lying, 64, b""),
            Err(FrameError::Malformed(_))
        ));
        // A huge topic count.
        let (_, _, mut counted) = frame(8, &[]);
        let at = 4 + 4 + 2 + 8 + 2 + 2 + 4;
        counted[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            read(&counted, 64, b""),
            Err(FrameError::Malformed(_))
        ));
    }

    #[test]
    fn a_closed_socket_inside_the_frame_is_an_io_error() {
        let (_, _, bytes) = frame(9, &[Some(vec![9u8; 1500])]);
        let mut reader: &[u8] = &bytes[4..bytes.len() - 10];
        let prefix = ReadBuf::from_slice(&bytes[..4]);
        let result = futures::executor::block_on(read_produce_frame(
            &mut reader,
            prefix,
            bytes.len(),
            &no_direct_targets,
        ));
        assert!(matches!(result, Err(FrameError::Io(_))));
    }
}
