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
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use futures::{AsyncWrite, AsyncWriteExt};
use kafka_protocol::protocol::buf::ByteBufMut;

use crate::storage::{FileRange, Piece};

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
    slots: Vec<(usize, usize, Vec<Piece>)>,
    next_marker_start: usize,
}

impl RecordSlots {
    /// Registers `pieces` (whole batches, `bytes` long in total) and returns
    /// what the codec should encode for them: a marker when they fit in what
    /// is left of the marker region, else the pieces joined (a copy). None
    /// when they do not fit and include file ranges, which cannot be joined
    /// here: the partition is then answered without data, as when the
    /// response's budget is used up.
    pub fn add(&mut self, pieces: Vec<Piece>, bytes: usize) -> Option<Bytes> {
        debug_assert_eq!(pieces.iter().map(Piece::len).sum::<usize>(), bytes);
        if bytes == 0 {
            return Some(Bytes::new());
        }
        if let [Piece::Memory(piece)] = &pieces[..] {
            // One piece is its own marker: the codec writes this very
            // slice, which PiecesBuf recognises the same way.
            let piece = piece.clone();
            self.slots
                .push((piece.as_ptr() as usize, piece.len(), pieces));
            return Some(piece);
        }
        let start = self.next_marker_start;
        if start + bytes > RECORDS_MARKER_BYTES {
            let mut joined = BytesMut::with_capacity(bytes);
            for piece in &pieces {
                match piece {
                    Piece::Memory(piece) => joined.extend_from_slice(piece),
                    Piece::File(_) => return None,
                }
            }
            FETCH_BYTES_COPIED.with(|c| c.set(c.get() + bytes as u64));
            return Some(joined.freeze());
        }
        // Markers never overlap, so each is recognised by its address.
        self.next_marker_start = start + bytes;
        let marker = Bytes::from_static(&RECORDS_MARKER[start..start + bytes]);
        self.slots.push((marker.as_ptr() as usize, bytes, pieces));
        Some(marker)
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
    pieces: Vec<Piece>,
    /// Bytes in `pieces`.
    flushed: usize,
    slots: Vec<(usize, usize, Vec<Piece>)>,
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
    pub fn into_pieces(mut self) -> Vec<Piece> {
        if !self.current.is_empty() {
            self.pieces
                .push(Piece::Memory(self.current.split().freeze()));
        }
        self.pieces
    }

    fn take_slot(&mut self, src: &[u8]) -> Option<Vec<Piece>> {
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
                    self.pieces.push(Piece::Memory(framing));
                }
                let bytes: usize = pieces.iter().map(Piece::len).sum();
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

/// Writes `pieces` to the socket `fd` (whose writing half is `writer`):
/// runs of bytes with vectored sends, file ranges with splice through a
/// pipe borrowed from the shard's pool for the length of the range.
///
/// # Errors
/// The socket failed or closed, or a file range could not be read.
pub async fn write_pieces<W: AsyncWrite + Unpin>(
    fd: RawFd,
    writer: &mut W,
    pieces: &[Piece],
) -> std::io::Result<()> {
    let mut index = 0usize;
    while index < pieces.len() {
        match &pieces[index] {
            Piece::File(range) => {
                // glommio leaves sockets blocking (it passes MSG_DONTWAIT
                // per call); splice can only be told not to block through
                // the descriptor. Nothing of glommio's relies on blocking
                // calls.
                set_nonblocking(fd)?;
                let pipe = SplicePipe::take()?;
                splice_range(fd, writer, range, &pipe).await?;
                // Only a drained pipe goes back (an error drops it).
                pipe.give_back();
                index += 1;
            }
            Piece::Memory(_) => {
                let run: Vec<Bytes> = pieces[index..]
                    .iter()
                    .map_while(|piece| match piece {
                        Piece::Memory(bytes) => Some(bytes.clone()),
                        Piece::File(_) => None,
                    })
                    .collect();
                index += run.len();
                write_memory(fd, writer, &run).await?;
            }
        }
    }
    Ok(())
}

/// Writes `pieces` to the socket `fd` with vectored sends. When the socket
/// is full it waits through `writer`, which writes part of the current
/// piece once the socket is writable.
async fn write_memory<W: AsyncWrite + Unpin>(
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

fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on the connection's socket, which outlives the call.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if flags & libc::O_NONBLOCK == 0
        && unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A pipe for splicing file ranges to a socket. Pipes are borrowed from a
/// small per-shard pool for one range at a time, so their kernel buffers
/// (counted against `fs.pipe-user-pages-soft`) are held only while data
/// moves.
pub struct SplicePipe {
    read: Arc<OwnedFd>,
    write: Arc<OwnedFd>,
    capacity: usize,
}

/// Pipe capacity asked for (Linux's default `fs.pipe-max-size`).
const SPLICE_PIPE_BYTES: usize = 1 << 20;
/// Idle pipes kept per shard.
const SPLICE_PIPES_IDLE_MAX: usize = 8;

thread_local! {
    static IDLE_PIPES: std::cell::RefCell<Vec<SplicePipe>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl SplicePipe {
    /// An idle pipe of this shard, or a new one.
    ///
    /// # Errors
    /// pipe2 failed (out of descriptors).
    pub fn take() -> std::io::Result<Self> {
        match IDLE_PIPES.with(|idle| idle.borrow_mut().pop()) {
            Some(pipe) => Ok(pipe),
            None => Self::new(),
        }
    }

    /// Returns an empty pipe to the shard's pool (closed when it is full).
    pub fn give_back(self) {
        IDLE_PIPES.with(|idle| {
            let mut idle = idle.borrow_mut();
            if idle.len() < SPLICE_PIPES_IDLE_MAX {
                idle.push(self);
            }
        });
    }

    /// A non-blocking pipe of up to [`SPLICE_PIPE_BYTES`].
    ///
    /// # Errors
    /// pipe2 failed (out of descriptors).
    pub fn new() -> std::io::Result<Self> {
        let (read, write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK)?;
        // SAFETY: fcntl on a pipe we own; failure leaves the default size.
        let capacity = unsafe {
            let asked = libc::fcntl(
                write.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                SPLICE_PIPE_BYTES as libc::c_int,
            );
            if asked > 0 {
                asked
            } else {
                libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ)
            }
        };
        Ok(SplicePipe {
            read: Arc::new(read),
            write: Arc::new(write),
            capacity: usize::try_from(capacity).unwrap_or(0).max(4096),
        })
    }
}

/// How the pipe -> socket half of a splice send is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SpliceToSocket {
    /// A non-blocking splice(2) called by the shard itself.
    Syscall,
    /// An io_uring splice (`IORING_OP_SPLICE`) on the shard's ring, which
    /// the kernel runs on the shard's io-wq workers; the socket is
    /// non-blocking, so a full socket ends it with EAGAIN instead of
    /// holding a worker while the client is slow to read.
    IoUring,
}

thread_local! {
    static FETCH_BYTES_SPLICED: Cell<u64> = const { Cell::new(0) };
    static SPLICE_WAITS_FOR_ROOM: Cell<u64> = const { Cell::new(0) };
    static SPLICE_TO_SOCKET: Cell<SpliceToSocket> = const { Cell::new(SpliceToSocket::Syscall) };
}

/// Sets how this shard moves spliced file data from the pipe to a socket.
pub fn configure_splice_to_socket(mode: SpliceToSocket) {
    SPLICE_TO_SOCKET.with(|current| current.set(mode));
}

/// Record bytes this shard sent from segment files with splice.
pub fn fetch_bytes_spliced() -> u64 {
    FETCH_BYTES_SPLICED.with(Cell::get)
}

/// Sends `range` to the socket `fd`: file -> pipe by an io_uring splice (a
/// page-cache miss waits for the disk on an io-wq worker), pipe -> socket
/// as `--splice-to-socket` says: a non-blocking splice(2) here, or an
/// io_uring splice (`pipe_to_socket`). When the socket is full, one byte is
/// taken out of the pipe and written through `writer`, which waits until
/// the socket has room.
async fn splice_range<W: AsyncWrite + Unpin>(
    fd: RawFd,
    writer: &mut W,
    range: &FileRange,
    pipe: &SplicePipe,
) -> std::io::Result<()> {
    let mode = SPLICE_TO_SOCKET.with(Cell::get);
    // io_uring splices go to a duplicate of the socket, which they keep
    // open until the kernel has finished with them: the connection's own
    // descriptor may close (and its number be reused) under one whose
    // future was dropped.
    let socket = match mode {
        SpliceToSocket::IoUring => Some(std::rc::Rc::new(
            // SAFETY: the connection's socket is open for this call.
            unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?,
        )),
        SpliceToSocket::Syscall => None,
    };
    let mut position = range.position;
    let mut left = range.len;
    while left > 0 {
        let want = left.min(pipe.capacity);
        let file = range.file.clone();
        let pipe_write = pipe.write.clone();
        let filled = {
            // A file -> pipe copy may read the disk: one of the shard's
            // segment read turns, held until the kernel is done with the
            // splice (it goes with the descriptors, past a dropped fetch).
            let turn = crate::storage::cold_read_turn().await;
            let (file_fd, pipe_fd) = (file.as_raw_fd(), pipe_write.as_raw_fd());
            splice_file_to_pipe(
                file_fd,
                position,
                pipe_fd,
                want,
                std::rc::Rc::new((file, pipe_write, turn)),
            )
            .await?
        };
        if filled == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "segment file ends inside a planned range",
            ));
        }
        position += filled as u64;
        left -= filled;
        let mut in_pipe = filled;
        while in_pipe > 0 {
            let moved = match &socket {
                Some(socket) => pipe_to_socket(pipe, socket, in_pipe).await,
                None => {
                    // SAFETY: splice between descriptors this connection
                    // holds open.
                    let moved = unsafe {
                        libc::splice(
                            pipe.read.as_raw_fd(),
                            std::ptr::null_mut(),
                            fd,
                            std::ptr::null_mut(),
                            in_pipe,
                            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
                        )
                    };
                    usize::try_from(moved).map_err(|_| std::io::Error::last_os_error())
                }
            };
            match moved {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(moved) => in_pipe -= moved,
                Err(error) => match error.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) => {
                        SPLICE_WAITS_FOR_ROOM.with(|c| c.set(c.get() + 1));
                        let mut byte = [0u8; 1];
                        let read = nix::unistd::read(pipe.read.as_raw_fd(), &mut byte)?;
                        if read != 1 {
                            return Err(std::io::ErrorKind::UnexpectedEof.into());
                        }
                        writer.write_all(&byte).await?;
                        in_pipe -= 1;
                    }
                    _ => return Err(error),
                },
            }
        }
        FETCH_BYTES_SPLICED.with(|c| c.set(c.get() + filled as u64));
    }
    Ok(())
}

/// Moves up to `len` bytes from the pipe to the (non-blocking) socket with
/// an io_uring splice; both descriptors stay open until the kernel has
/// completed it. EAGAIN when the socket is full.
async fn pipe_to_socket(
    pipe: &SplicePipe,
    socket: &std::rc::Rc<OwnedFd>,
    len: usize,
) -> std::io::Result<usize> {
    let keep_alive: Box<dyn std::any::Any> = Box::new((pipe.read.clone(), socket.clone()));
    glommio::io::splice(
        pipe.read.as_raw_fd(),
        -1,
        socket.as_raw_fd(),
        len,
        keep_alive,
    )
    .await
}

/// Moves up to `want` bytes at `position` of the segment file into the
/// pipe with an io_uring splice: the kernel runs it on the shard's io-wq
/// workers (`--io-worker-cpus`), so a page-cache miss waits for the disk
/// there, not on the shard. `keep_alive` holds both descriptors open (and
/// the read turn) until the kernel is done, even if the fetch is dropped
/// meanwhile (each attempt holds a share of it). Returns the bytes moved;
/// 0 at the end of the file.
async fn splice_file_to_pipe(
    file_fd: RawFd,
    position: u64,
    pipe_fd: RawFd,
    want: usize,
    keep_alive: std::rc::Rc<dyn std::any::Any>,
) -> std::io::Result<usize> {
    loop {
        let held: Box<dyn std::any::Any> = Box::new(keep_alive.clone());
        match glommio::io::splice(file_fd, position as i64, pipe_fd, want, held).await {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            other => return other,
        }
    }
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

    fn memory(pieces: &[&Bytes]) -> Vec<Piece> {
        pieces.iter().map(|b| Piece::Memory((*b).clone())).collect()
    }

    /// The bytes of `pieces` in order, file ranges read from their files.
    fn flatten(pieces: &[Piece]) -> Vec<u8> {
        crate::storage::test_support::piece_bytes(pieces)
    }

    /// A temporary file holding `contents`, as a splice read sees it.
    fn file_with(contents: &[u8]) -> (tempfile::NamedTempFile, Arc<std::fs::File>) {
        use std::io::Write;
        let mut named = tempfile::NamedTempFile::new().unwrap();
        named.write_all(contents).unwrap();
        named.flush().unwrap();
        let file = Arc::new(std::fs::File::open(named.path()).unwrap());
        (named, file)
    }

    #[test]
    fn pieces_encode_exactly_what_the_codec_would_and_share_the_record_memory() {
        let tail = Bytes::from(vec![7u8; 300]);
        let first = tail.slice(0..100);
        let second = tail.slice(100..300);
        let alone = Bytes::from(vec![9u8; 50]);
        let on_disk: Vec<u8> = (0..200u8).collect();
        let (_named, file) = file_with(&on_disk);
        let range = FileRange {
            file,
            position: 40,
            len: 120,
        };
        for version in [4i16, 11, 12, 16] {
            let expected = {
                let mut joined = BytesMut::new();
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&second);
                let plain = response(vec![
                    joined.freeze(),
                    alone.clone(),
                    Bytes::new(),
                    Bytes::copy_from_slice(&on_disk[40..160]),
                ]);
                let mut buf = BytesMut::new();
                plain.encode(&mut buf, version).unwrap();
                buf.freeze()
            };
            let mut slots = RecordSlots::default();
            let a = slots.add(memory(&[&first, &second]), 300).unwrap();
            let b = slots.add(memory(&[&alone]), 50).unwrap();
            let c = slots.add(Vec::new(), 0).unwrap();
            let d = slots.add(vec![Piece::File(range.clone())], 120).unwrap();
            let marked = response(vec![a, b, c, d]);
            assert_eq!(marked.compute_size(version).unwrap(), expected.len());
            let mut buf = PiecesBuf::new(64, slots);
            marked.encode(&mut buf, version).unwrap();
            let pieces = buf.into_pieces();
            let flat = flatten(&pieces);
            assert_eq!(flat, expected.to_vec(), "v{version}");
            let shares = |shared: &Bytes| {
                pieces
                    .iter()
                    .any(|p| matches!(p, Piece::Memory(b) if b.as_ptr() == shared.as_ptr()))
            };
            assert!(shares(&second), "shared, not copied");
            assert!(shares(&alone));
            assert!(pieces.iter().any(|p| matches!(p, Piece::File(_))));
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
        let joined = slots
            .add(
                memory(&[
                    &Bytes::from_static(b"abcdefgh"),
                    &Bytes::from_static(b"ijkl"),
                ]),
                12,
            )
            .unwrap();
        assert_eq!(&joined[..], b"abcdefghijkl");
        assert_eq!(fetch_bytes_copied() - before, 12);
        // File ranges cannot be joined there: the partition gets no data.
        let (_named, file) = file_with(b"0123456789abcdef");
        let range = Piece::File(FileRange {
            file,
            position: 0,
            len: 16,
        });
        assert!(slots
            .add(vec![Piece::Memory(Bytes::from_static(b"x")), range], 17)
            .is_none());
        assert!(slots.is_empty());
    }

    /// Goal: a response mixing bytes and file ranges arrives whole and in
    /// order over a real socket, also when the range is larger than the
    /// pipe and the reader is slower than the writer (the socket fills up,
    /// so the wait-for-room path runs). Method: 6 MiB of a file between
    /// two memory pieces, read back by a client thread that sleeps
    /// between reads, compared byte for byte.
    #[test]
    fn file_ranges_splice_whole_and_in_order_through_a_full_socket() {
        splice_through_a_full_socket(SpliceToSocket::Syscall);
    }

    /// The same with the pipe -> socket half through io_uring.
    #[test]
    fn file_ranges_splice_whole_and_in_order_through_a_full_socket_by_io_uring() {
        splice_through_a_full_socket(SpliceToSocket::IoUring);
    }

    fn splice_through_a_full_socket(mode: SpliceToSocket) {
        let contents: Vec<u8> = (0..(6u32 << 20) + 12345)
            .map(|i| (i * 7 + i / 4096) as u8)
            .collect();
        let (_named, file) = file_with(&contents);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let head = Bytes::from_static(b"head-");
        let tail = Bytes::from_static(b"-tail");
        let mut expected = head.to_vec();
        expected.extend_from_slice(&contents[3..]);
        expected.extend_from_slice(&tail);
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let (mut stream, _) = listener.accept().unwrap();
            let mut received = Vec::new();
            let mut chunk = vec![0u8; 16 << 10];
            loop {
                let n = stream.read(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                received.extend_from_slice(&chunk[..n]);
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
            received
        });
        let pieces = vec![
            Piece::Memory(head),
            Piece::File(FileRange {
                file,
                position: 3,
                len: contents.len() - 3,
            }),
            Piece::Memory(tail),
        ];
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                configure_splice_to_socket(mode);
                let stream = glommio::net::TcpStream::connect(address).await.unwrap();
                let fd = stream.as_raw_fd();
                // A small send buffer, so the socket fills up.
                // SAFETY: the stream owns `fd` and outlives this borrow.
                let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                nix::sys::socket::setsockopt(
                    &borrowed,
                    nix::sys::socket::sockopt::SndBuf,
                    &(16 << 10),
                )
                .unwrap();
                let (_read_half, mut writer) = futures::AsyncReadExt::split(stream);
                let before = fetch_bytes_spliced();
                let waits_before = SPLICE_WAITS_FOR_ROOM.with(Cell::get);
                write_pieces(fd, &mut writer, &pieces).await.unwrap();
                assert_eq!(fetch_bytes_spliced() - before, (contents.len() - 3) as u64);
                assert!(
                    SPLICE_WAITS_FOR_ROOM.with(Cell::get) > waits_before,
                    "the socket never filled up"
                );
                writer.close().await.unwrap();
            })
            .unwrap()
            .join()
            .unwrap();
        let received = reader.join().unwrap();
        assert_eq!(received.len(), expected.len());
        assert!(received == expected, "bytes differ");
    }
}
