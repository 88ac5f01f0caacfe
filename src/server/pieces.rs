//! Responses that carry record data by reference: a response is encoded by
//! the `kafka-protocol` codec into a list of [`Bytes`] pieces in which the
//! record batches are the very `Bytes` the partitions handed out (tail cache
//! buffers, segment reads), never copied into the response buffer, and the
//! connection sends the pieces with vectored `sendmsg`. Lives on the
//! connection's shard.
//!
//! How the codec is made to skip the copy: each partition's `records` field
//! is set to a *marker*, a slice of a static zero region exactly as long as
//! the partition's data, so the codec sizes and frames the field correctly.
//! [`PiecesBuf`] recognises the marker by its address when the codec writes
//! it and puts the real pieces in its place. The marker's bytes are never
//! read. Data too large for the region (above [`RECORDS_MARKER_BYTES`] in
//! one response) is joined into one buffer instead, and those bytes are
//! counted in [`fetch_bytes_copied`].

use std::cell::Cell;
use std::io::IoSlice;
use std::ops::Range;
use std::os::fd::RawFd;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use futures::{AsyncWrite, AsyncWriteExt};
use kafka_protocol::protocol::buf::ByteBufMut;

/// Size of the marker region: the most record bytes one response can carry
/// by reference. Zero-initialised static memory: the pages are never
/// touched, so it costs address space, not memory.
pub const RECORDS_MARKER_BYTES: usize = 256 << 20;

static RECORDS_MARKER: [u8; RECORDS_MARKER_BYTES] = [0; RECORDS_MARKER_BYTES];

/// iovecs per `sendmsg` (Linux's UIO_MAXIOV is 1024).
const IOVECS_PER_SEND: usize = 256;

thread_local! {
    static FETCH_BYTES_COPIED: Cell<u64> = const { Cell::new(0) };
    static FETCH_BYTES_BY_REFERENCE: Cell<u64> = const { Cell::new(0) };
}

/// Record bytes this shard copied in user space while building fetch
/// responses (the fallback for data past the marker region).
pub fn fetch_bytes_copied() -> u64 {
    FETCH_BYTES_COPIED.with(Cell::get)
}

/// Record bytes this shard sent by reference.
pub fn fetch_bytes_by_reference() -> u64 {
    FETCH_BYTES_BY_REFERENCE.with(Cell::get)
}

/// Record data of one response, registered before encoding: each call to
/// [`Self::add`] returns the value to put in the codec's `records` field.
#[derive(Default)]
pub struct RecordSlots {
    /// (marker address, marker length, pieces), in registration order.
    slots: Vec<(usize, usize, Vec<Bytes>)>,
    next_marker_start: usize,
}

impl RecordSlots {
    /// Registers `pieces` (whole batches, `bytes` long in total) and returns
    /// what the codec should encode for them: a marker when they fit in what
    /// is left of the marker region, else the pieces joined (a copy).
    pub fn add(&mut self, pieces: Vec<Bytes>, bytes: usize) -> Bytes {
        debug_assert_eq!(pieces.iter().map(Bytes::len).sum::<usize>(), bytes);
        if bytes == 0 {
            return Bytes::new();
        }
        if pieces.len() == 1 {
            // One piece is its own marker: the codec writes this very
            // slice, which PiecesBuf recognises the same way.
            let piece = pieces.into_iter().next().expect("one piece");
            self.slots
                .push((piece.as_ptr() as usize, piece.len(), vec![piece.clone()]));
            return piece;
        }
        let start = self.next_marker_start;
        if start + bytes > RECORDS_MARKER_BYTES {
            FETCH_BYTES_COPIED.with(|c| c.set(c.get() + bytes as u64));
            let mut joined = BytesMut::with_capacity(bytes);
            for piece in &pieces {
                joined.extend_from_slice(piece);
            }
            return joined.freeze();
        }
        // Markers never overlap, so each is recognised by its address.
        self.next_marker_start = start + bytes;
        let marker = Bytes::from_static(&RECORDS_MARKER[start..start + bytes]);
        self.slots.push((marker.as_ptr() as usize, bytes, pieces));
        marker
    }

    /// Whether any record data was registered by reference.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// A `ByteBufMut` for the codec that collects pieces: everything the codec
/// writes goes into the current buffer, except a registered record slot,
/// which closes the current buffer and adds the slot's pieces.
pub struct PiecesBuf {
    current: BytesMut,
    pieces: Vec<Bytes>,
    /// Bytes in `pieces`.
    flushed: usize,
    slots: Vec<(usize, usize, Vec<Bytes>)>,
}

impl PiecesBuf {
    /// A buffer expecting about `capacity` bytes of framing, with `slots`'
    /// record data to put in place of their markers.
    pub fn new(capacity: usize, slots: RecordSlots) -> Self {
        PiecesBuf {
            current: BytesMut::with_capacity(capacity),
            pieces: Vec::new(),
            flushed: 0,
            slots: slots.slots,
        }
    }

    /// The pieces, in order.
    pub fn into_pieces(mut self) -> Vec<Bytes> {
        if !self.current.is_empty() {
            self.pieces.push(self.current.split().freeze());
        }
        self.pieces
    }

    fn take_slot(&mut self, src: &[u8]) -> Option<Vec<Bytes>> {
        let address = src.as_ptr() as usize;
        let position = self
            .slots
            .iter()
            .position(|(a, len, _)| *a == address && *len == src.len())?;
        Some(self.slots.swap_remove(position).2)
    }
}

// SAFETY: every method delegates to the BytesMut that receives the bytes,
// which upholds BufMut's contract; put_slice only changes where a
// recognised slice's bytes come from.
unsafe impl BufMut for PiecesBuf {
    fn remaining_mut(&self) -> usize {
        self.current.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller initialised `cnt` bytes of chunk_mut, which is
        // the current buffer's.
        unsafe { self.current.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.current.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        if !src.is_empty() {
            if let Some(pieces) = self.take_slot(src) {
                if !self.current.is_empty() {
                    let framing = self.current.split().freeze();
                    self.flushed += framing.len();
                    self.pieces.push(framing);
                }
                let bytes: usize = pieces.iter().map(Bytes::len).sum();
                FETCH_BYTES_BY_REFERENCE.with(|c| c.set(c.get() + bytes as u64));
                self.flushed += bytes;
                self.pieces.extend(pieces);
                return;
            }
        }
        self.current.extend_from_slice(src);
    }
}

impl ByteBufMut for PiecesBuf {
    fn offset(&self) -> usize {
        self.flushed + self.current.len()
    }

    fn seek(&mut self, offset: usize) {
        // Responses are written front to back with sizes computed first;
        // only gaps inside the current buffer can be filled later.
        let local = offset
            .checked_sub(self.flushed)
            .expect("PiecesBuf cannot seek before a record slot");
        self.current.resize(local, 0);
    }

    fn range(&mut self, r: Range<usize>) -> &mut [u8] {
        let start = r
            .start
            .checked_sub(self.flushed)
            .expect("PiecesBuf cannot reach before a record slot");
        &mut self.current[start..r.end - self.flushed]
    }
}

/// Writes `pieces` to the socket `fd` (whose writing half is `writer`) with
/// vectored sends. When the socket is full it waits through `writer`, which
/// writes part of the current piece once the socket is writable.
///
/// # Errors
/// The socket failed or closed.
pub async fn write_pieces<W: AsyncWrite + Unpin>(
    fd: RawFd,
    writer: &mut W,
    pieces: &[Bytes],
) -> std::io::Result<()> {
    let mut index = 0usize;
    let mut offset = 0usize;
    while index < pieces.len() {
        if offset == pieces[index].len() {
            index += 1;
            offset = 0;
            continue;
        }
        let iovecs: Vec<IoSlice<'_>> = std::iter::once(&pieces[index][offset..])
            .chain(pieces[index + 1..].iter().map(|p| &p[..]))
            .filter(|s| !s.is_empty())
            .take(IOVECS_PER_SEND)
            .map(IoSlice::new)
            .collect();
        let flags =
            nix::sys::socket::MsgFlags::MSG_DONTWAIT | nix::sys::socket::MsgFlags::MSG_NOSIGNAL;
        let sent = match nix::sys::socket::sendmsg::<()>(fd, &iovecs, &[], flags, None) {
            Ok(sent) => sent,
            Err(nix::errno::Errno::EAGAIN) => {
                // Full: let the runtime wait for room, then send some bytes.
                writer.write(&pieces[index][offset..]).await?
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(std::io::Error::from(e)),
        };
        if sent == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let mut left = sent;
        while left > 0 {
            let available = pieces[index].len() - offset;
            if left < available {
                offset += left;
                left = 0;
            } else {
                left -= available;
                index += 1;
                offset = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::protocol::{Decodable, Encodable};

    fn response(records: Vec<Bytes>) -> FetchResponse {
        let mut topic = FetchableTopicResponse::default();
        for (i, r) in records.into_iter().enumerate() {
            let mut p = PartitionData::default();
            p.partition_index = i as i32;
            p.records = Some(r);
            topic.partitions.push(p);
        }
        let mut response = FetchResponse::default();
        response.responses.push(topic);
        response
    }

    #[test]
    fn pieces_encode_exactly_what_the_codec_would_and_share_the_record_memory() {
        let tail = Bytes::from(vec![7u8; 300]);
        let first = tail.slice(0..100);
        let second = tail.slice(100..300);
        let alone = Bytes::from(vec![9u8; 50]);
        for version in [4i16, 11, 12, 16] {
            let expected = {
                let mut joined = BytesMut::new();
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&second);
                let plain = response(vec![joined.freeze(), alone.clone(), Bytes::new()]);
                let mut buf = BytesMut::new();
                plain.encode(&mut buf, version).unwrap();
                buf.freeze()
            };
            let mut slots = RecordSlots::default();
            let a = slots.add(vec![first.clone(), second.clone()], 300);
            let b = slots.add(vec![alone.clone()], 50);
            let c = slots.add(Vec::new(), 0);
            let marked = response(vec![a, b, c]);
            assert_eq!(marked.compute_size(version).unwrap(), expected.len());
            let mut buf = PiecesBuf::new(64, slots);
            marked.encode(&mut buf, version).unwrap();
            let pieces = buf.into_pieces();
            let flat: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
            assert_eq!(flat, expected.to_vec(), "v{version}");
            assert!(
                pieces.iter().any(|p| p.as_ptr() == second.as_ptr()),
                "shared, not copied"
            );
            assert!(pieces.iter().any(|p| p.as_ptr() == alone.as_ptr()));
            let decoded = FetchResponse::decode(&mut Bytes::from(flat), version).unwrap();
            assert_eq!(
                decoded.responses[0].partitions[0]
                    .records
                    .as_ref()
                    .unwrap()
                    .len(),
                300
            );
        }
        assert_eq!(fetch_bytes_copied(), 0);
    }

    #[test]
    fn data_past_the_marker_region_is_joined_and_counted() {
        let mut slots = RecordSlots {
            slots: Vec::new(),
            next_marker_start: RECORDS_MARKER_BYTES - 10,
        };
        let before = fetch_bytes_copied();
        let joined = slots.add(
            vec![Bytes::from_static(b"abcdefgh"), Bytes::from_static(b"ijkl")],
            12,
        );
        assert_eq!(&joined[..], b"abcdefghijkl");
        assert_eq!(fetch_bytes_copied() - before, 12);
        assert!(slots.is_empty());
    }
}
