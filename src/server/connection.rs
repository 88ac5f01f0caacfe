//! One client connection: reads length-prefixed frames, checks their size
//! before allocating, decodes the request header, hands the request to its
//! handler in arrival order, and writes responses strictly in request order
//! even when handlers finish out of order (clients pipeline requests).
//!
//! Bad input never panics: an oversized or malformed frame, an unknown API
//! key or an unserved version closes this connection (as Kafka does) and
//! every other connection keeps being served. Lives on the accepting shard.

use std::rc::Rc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::{self, Either, LocalBoxFuture};
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, FutureExt};
use glommio::net::TcpStream;
use kafka_protocol::messages::produce_request::TopicProduceData;
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::Decodable;

use super::access::Access;
use super::authenticator::{Authenticator, Step, SASL_RECEIVE_BYTES_MAX};
use super::produce_frame::{
    read_produce_frame, DirectTargets, FrameError, ProduceFrame, ReadBuf, BULK_READ_BYTES,
    LOOKAHEAD_BYTES,
};
use super::write_watch::{self, Watched};
use super::{handlers, versions, ServerState};
use crate::config::limits::{CONNECTION_IN_FLIGHT_REQUESTS_MAX, REQUEST_FRAME_BYTES_MIN};
use crate::config::Listener;
use crate::quota::sensors::{Client, RequestClient};
use crate::shard::messages::TopicPartition;

/// What a handler's completion yields.
pub enum Response {
    /// A whole response frame, size prefix included.
    Frame(Bytes),
    /// A whole response frame as pieces sent with vectored writes and
    /// splice (record data by reference, see `pieces.rs`).
    Pieces(Vec<crate::storage::Piece>),
    /// No response (Produce with acks=0).
    None,
    /// Close the connection (Kafka's answer to some bad requests).
    Close(&'static str),
}

/// A response still being computed.
pub type Responder = LocalBoxFuture<'static, Response>;

/// A request as read from the socket.
enum Frame {
    /// A whole frame (size prefix excluded), decoded by its handler.
    Whole(Bytes),
    /// A Produce request read framing first (see `produce_frame.rs`).
    Produce(ProduceFrame),
}

/// Why a connection is being closed.
#[derive(Debug, thiserror::Error)]
enum CloseReason {
    #[error("client closed the connection")]
    Eof,
    #[error("idle longer than connections.max.idle.ms")]
    Idle,
    #[error("request not received whole within the read timeout")]
    ReadTimeout,
    #[error("socket error: {0}")]
    Io(std::io::Error),
    #[error("frame of {0} bytes exceeds socket.request.max.bytes")]
    FrameTooLarge(i64),
    #[error("frame of {0} bytes is too small for a request header")]
    FrameTooSmall(i64),
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    #[error("API key {0} version {1} is not supported")]
    UnsupportedVersion(i16, i16),
    #[error("malformed request header")]
    BadHeader,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("{0}")]
    Handler(&'static str),
    #[error("broker shutting down")]
    ShuttingDown,
    #[error("SASL: {0}")]
    Authentication(&'static str),
    #[error("SASL session expired without re-authentication (connections.max.reauth.ms)")]
    SessionExpired,
}

/// Serves one TCP connection, accepted on listener `listener` (an index
/// into the broker's listeners), until it closes.
pub async fn serve_tcp(stream: TcpStream, state: Rc<ServerState>, listener: usize) {
    let peer_addr = stream.peer_addr().ok();
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(?peer_addr, error = %e, "cannot set TCP_NODELAY");
    }
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    serve(stream, fd, peer_addr, None, state, listener).await;
}

/// Serves one connection from `peer_addr` on `stream` (whose socket is
/// `fd`, written to directly by splice and vectored sends), accepted on
/// listener `listener`, until it closes. `certified` is the principal
/// name of the client's TLS certificate, if it gave one on an SSL
/// listener; SASL's user takes its place on a SASL listener.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin + 'static>(
    stream: S,
    fd: std::os::fd::RawFd,
    peer_addr: Option<std::net::SocketAddr>,
    certified: Option<String>,
    state: Rc<ServerState>,
    listener: usize,
) {
    let peer = peer_addr.map(|a| a.to_string()).unwrap_or_default();
    let (mut reader, writer) = stream.split();
    let (tx, rx) = glommio::channels::local_channel::new_bounded::<Responder>(
        CONNECTION_IN_FLIGHT_REQUESTS_MAX,
    );
    let config = &state.shard.config;
    let writer_task = glommio::spawn_local(write_loop(
        fd,
        writer,
        rx,
        Duration::from_millis(config.connections_max_idle_ms),
        state.shutdown_signal(),
        peer.clone(),
    ));
    let endpoint = &config.listeners[listener];
    let mut authenticator = endpoint.security_protocol.is_sasl().then(|| {
        Authenticator::new(
            config.sasl_handshake_order.clone(),
            config.plain_users.clone(),
            config.oauthbearer.clone(),
            config.delegation_tokens.clone(),
            Duration::from_millis(config.connections_max_reauth_ms),
        )
    });
    let mut caller: Option<crate::security::acl::Caller> = None;
    let mut quota_client: Option<Client> = None;
    let reason = loop {
        let authenticating = authenticator.as_ref().is_some_and(|a| a.user().is_none());
        // A throttled client's next request is not read until its throttle
        // time has passed (KIP-219), nor handled if it was being read.
        if !wait_out_mute(quota_client.as_ref(), &state).await {
            break CloseReason::ShuttingDown;
        }
        let frame = match read_frame(&mut reader, &state, authenticating).await {
            Ok(frame) => frame,
            Err(reason) => break reason,
        };
        if !wait_out_mute(quota_client.as_ref(), &state).await {
            break CloseReason::ShuttingDown;
        }
        // On an authenticated SASL connection a SaslHandshake may begin a
        // re-authentication; any other request needs an unexpired session.
        let reauthenticating = match &mut authenticator {
            Some(auth) if !authenticating => {
                let handshake = matches!(&frame, Frame::Whole(whole)
                    if frame_prefix(whole).0 == ApiKey::SaslHandshake as i16);
                if handshake && auth.begin_reauthentication() {
                    true
                } else if auth.session_expired() {
                    break CloseReason::SessionExpired;
                } else {
                    false
                }
            }
            _ => false,
        };
        if let (true, Some(auth)) = (authenticating || reauthenticating, &mut authenticator) {
            // Every frame is read whole before authentication (no produce
            // framing); anything else closes, never reaching a handler.
            let Frame::Whole(frame) = frame else {
                break CloseReason::Authentication("request framed before authentication");
            };
            let (answer, close) = match auth.handle(frame, &state.shard.image()) {
                Step::Answer(answer) => (Some(answer), None),
                Step::AnswerThenClose(answer, reason) => (Some(answer), Some(reason)),
                Step::Close(reason) => (None, Some(reason)),
            };
            if let Some(answer) = answer {
                if tx.send(answer).await.is_err() {
                    break CloseReason::Eof;
                }
            }
            match close {
                Some(reason) => break CloseReason::Authentication(reason),
                None => continue,
            }
        }
        // Who the client is, once it has authenticated (or at once on a
        // PLAINTEXT listener).
        let user = match &authenticator {
            Some(authenticator) => authenticator.user(),
            None => certified.as_deref(),
        };
        let caller = caller.get_or_insert_with(|| Access::caller(user, peer_addr));
        let protocol = endpoint.security_protocol;
        // Kafka's `allowTokenRequests`: SASL, or TLS with a client
        // certificate, but not a session that logged in with a token.
        let token_session = authenticator
            .as_ref()
            .is_some_and(Authenticator::token_authenticated);
        let access = Access::new(&state.shard, caller).with_token_requests(
            !token_session && (protocol.is_sasl() || (protocol.is_tls() && certified.is_some())),
        );
        // Quotas know a client by its principal's name.
        let client = quota_client.get_or_insert_with(|| Client::new(user.unwrap_or("ANONYMOUS")));
        let handled = match frame {
            Frame::Whole(frame) => {
                handle_frame(frame, &state, peer_addr, endpoint, access, client).await
            }
            Frame::Produce(produce) => {
                let client = client
                    .for_request(produce.header.client_id.as_ref())
                    .metered(&state.shard);
                let version = produce.header.request_api_version;
                let handling =
                    handlers::produce::handle(&state.shard, &access, client.clone(), produce);
                under_request_quota(&state.shard, ApiKey::Produce, version, client, async {
                    Ok(handling.await)
                })
                .await
            }
        };
        match handled {
            Ok(responder) => {
                if tx.send(responder).await.is_err() {
                    break CloseReason::Eof;
                }
            }
            Err(reason) => break reason,
        }
    };
    match &reason {
        CloseReason::Eof | CloseReason::ShuttingDown => {
            tracing::debug!(%peer, %reason, "connection closed")
        }
        _ => tracing::info!(%peer, %reason, "closing connection"),
    }
    if matches!(reason, CloseReason::SessionExpired) {
        // As Kafka closes an expired channel: responses still queued for
        // it are dropped, not sent.
        let _ = nix::sys::socket::shutdown(fd, nix::sys::socket::Shutdown::Both);
    }
    drop(tx);
    writer_task.await;
}

/// Waits out what is left of a throttle; false when the broker begins
/// shutting down first.
async fn wait_out_mute(client: Option<&Client>, state: &ServerState) -> bool {
    match client.and_then(Client::take_mute) {
        None => true,
        Some(left) => matches!(
            future::select(
                Box::pin(glommio::timer::sleep(left)),
                state.shutdown_signal()
            )
            .await,
            Either::Left(_)
        ),
    }
}

/// Writes the responses in request order until the reader is done or a
/// write fails. A write that waits `limit` for the client to make room
/// (less once shutdown begins, see `write_watch`) closes the connection
/// both ways, which also ends the reading side.
async fn write_loop<W: AsyncWrite + Unpin>(
    fd: std::os::fd::RawFd,
    writer: W,
    rx: glommio::channels::local_channel::LocalReceiver<Responder>,
    limit: Duration,
    shutdown: futures::future::BoxFuture<'static, ()>,
    peer: String,
) {
    let mut writer = Watched::new(writer);
    let waiting_since = writer.waiting_since();
    let writes = async {
        while let Some(responder) = rx.recv().await {
            match responder.await {
                Response::Frame(bytes) => {
                    if writer.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                Response::Pieces(pieces) => {
                    // The socket stays open while this loop runs: the reading
                    // half and the stream are dropped only after it ends.
                    if let Err(e) = super::pieces::write_pieces(fd, &mut writer, &pieces).await {
                        tracing::debug!(error = %e, "cannot send a response");
                        break;
                    }
                }
                Response::None => {}
                Response::Close(reason) => {
                    tracing::info!(reason, "closing connection after a refused request");
                    break;
                }
            }
        }
        let _ = writer.close().await;
    };
    if write_watch::bounded(writes, &waiting_since, limit, shutdown)
        .await
        .is_none()
    {
        tracing::info!(
            %peer,
            waited_ms = waiting_since.get().map_or(0, |since| since.elapsed().as_millis() as u64),
            "closing connection: the client took no response bytes for too long"
        );
        // The reading side is woken by the socket's end of input.
        let _ = nix::sys::socket::shutdown(fd, nix::sys::socket::Shutdown::Both);
    }
}

/// Runs `io` unless `limit` passes first.
pub(super) async fn within<T>(
    limit: Duration,
    io: impl std::future::Future<Output = T>,
) -> Option<T> {
    match future::select(Box::pin(io), Box::pin(glommio::timer::sleep(limit))).await {
        Either::Left((value, _)) => Some(value),
        Either::Right(_) => None,
    }
}

/// Reads the next request frame. Before a SASL client has authenticated
/// (`authenticating`), frames are bounded by `sasl.server.max.receive.size`
/// and every frame is read whole.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    state: &ServerState,
    authenticating: bool,
) -> Result<Frame, CloseReason> {
    let config = &state.shard.config;
    let mut size_bytes = [0u8; 4];
    // The first bytes may take as long as the connection may idle; once a
    // request has started, all of it must arrive within the read timeout.
    // The first read asks for the whole size (one read when it came whole).
    let first = {
        let idle = Duration::from_millis(config.connections_max_idle_ms);
        let read = within(idle, reader.read(&mut size_bytes));
        let shutdown = state.shutdown_signal();
        match future::select(Box::pin(read), shutdown).await {
            Either::Left((read, _)) => read,
            Either::Right(_) => return Err(CloseReason::ShuttingDown),
        }
    };
    let first = match first {
        None => return Err(CloseReason::Idle),
        Some(Ok(0)) => return Err(CloseReason::Eof),
        Some(Ok(read)) => read,
        Some(Err(e)) => return Err(CloseReason::Io(e)),
    };
    let deadline = Duration::from_millis(config.request_read_timeout_ms);
    let started = std::time::Instant::now();
    if first < size_bytes.len() {
        match within(deadline, reader.read_exact(&mut size_bytes[first..])).await {
            None => return Err(CloseReason::ReadTimeout),
            Some(Err(e)) => return Err(io_reason(e)),
            Some(Ok(())) => {}
        }
    }
    let size = i64::from(i32::from_be_bytes(size_bytes));
    if size < REQUEST_FRAME_BYTES_MIN as i64 {
        return Err(CloseReason::FrameTooSmall(size));
    }
    let size_max = if authenticating {
        SASL_RECEIVE_BYTES_MAX.min(config.socket_request_max_bytes)
    } else {
        config.socket_request_max_bytes
    };
    if size > size_max as i64 {
        return Err(CloseReason::FrameTooLarge(size));
    }
    // The size is checked against socket.request.max.bytes above, so what
    // is allocated for the frame is bounded.
    let left = deadline.saturating_sub(started.elapsed());
    // Records of partitions this shard owns may be received into the
    // memory their log writes from.
    let direct = |topic: &TopicProduceData, partition: i32, len: usize| {
        // Produce v13 names the topic by its id alone.
        let name = if topic.topic_id.is_nil() {
            topic.name.to_string()
        } else {
            state
                .shard
                .image()
                .topic_by_id(&topic.topic_id)?
                .name
                .clone()
        };
        state
            .shard
            .partition(&TopicPartition {
                topic: name,
                partition,
            })?
            .direct_slot(len)
    };
    match within(
        left,
        read_body(reader, size as usize, &direct, !authenticating),
    )
    .await
    {
        None => Err(CloseReason::ReadTimeout),
        Some(result) => result,
    }
}

/// Reads a frame's `size` bytes: a served Produce request framing first
/// (when `produce_framing`), with each partition's records received into a
/// buffer of their own; anything else whole.
async fn read_body<R: AsyncRead + Unpin>(
    reader: &mut R,
    size: usize,
    direct: DirectTargets<'_>,
    produce_framing: bool,
) -> Result<Frame, CloseReason> {
    // API key and version first, with as much of the frame as one read gives:
    // all of it when the frame is short enough to be read in bulk (its
    // records are then copied out, as from any bulk read), else up to the
    // look-ahead, so long records can be received into their own buffers.
    let first_read = if size <= BULK_READ_BYTES {
        size
    } else {
        LOOKAHEAD_BYTES
    };
    // Into this thread's reusable read memory: a Produce request's records
    // are copied out of it; any other frame is copied into its own buffer.
    let mut prefix = ReadBuf::new();
    while prefix.len() < 4 {
        let want = first_read - prefix.len();
        match reader.read(&mut prefix.spare_mut()[..want]).await {
            Ok(0) => return Err(CloseReason::Eof),
            Ok(read) => prefix.add_read(read),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_reason(e)),
        }
    }
    let api_key = i16::from_be_bytes([prefix[0], prefix[1]]);
    let version = i16::from_be_bytes([prefix[2], prefix[3]]);
    if produce_framing
        && api_key == ApiKey::Produce as i16
        && versions::is_served(ApiKey::Produce, version)
    {
        return match read_produce_frame(reader, prefix, size, direct).await {
            Ok(produce) => Ok(Frame::Produce(produce)),
            Err(FrameError::Io(e)) => Err(io_reason(e)),
            Err(FrameError::Malformed(reason)) => Err(CloseReason::Malformed(reason)),
        };
    }
    let filled = prefix.len();
    let mut body = BytesMut::with_capacity(size);
    body.extend_from_slice(&prefix);
    drop(prefix);
    body.resize(size, 0);
    match reader.read_exact(&mut body[filled..]).await {
        Err(e) => Err(io_reason(e)),
        Ok(()) => Ok(Frame::Whole(body.freeze())),
    }
}

fn io_reason(e: std::io::Error) -> CloseReason {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        CloseReason::Eof
    } else {
        CloseReason::Io(e)
    }
}

/// A request frame's API key, version and correlation id, read before its
/// header is decoded. Frames are at least `REQUEST_FRAME_BYTES_MIN` long.
pub(super) fn frame_prefix(frame: &[u8]) -> (i16, i16, i32) {
    (
        i16::from_be_bytes([frame[0], frame[1]]),
        i16::from_be_bytes([frame[2], frame[3]]),
        i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]),
    )
}

async fn handle_frame(
    frame: Bytes,
    state: &Rc<ServerState>,
    peer: Option<std::net::SocketAddr>,
    listener: &Listener,
    access: Access,
    client: &Client,
) -> Result<Responder, CloseReason> {
    let (api_key_raw, version, correlation_id) = frame_prefix(&frame);
    let Ok(api_key) = ApiKey::try_from(api_key_raw) else {
        return Err(CloseReason::UnknownApiKey(api_key_raw));
    };
    if !versions::is_served(api_key, version) {
        if api_key == ApiKey::ApiVersions {
            // KIP-511: answer an unknown ApiVersions version in v0 with
            // UNSUPPORTED_VERSION and our ranges, so the client can retry.
            let frame = handlers::api_versions::unsupported_version_response(correlation_id);
            return Ok(async move { frame }.boxed_local());
        }
        return Err(CloseReason::UnsupportedVersion(api_key_raw, version));
    }
    let mut buf = frame;
    let header = RequestHeader::decode(&mut buf, api_key.request_header_version(version))
        .map_err(|_| CloseReason::BadHeader)?;
    let client = client
        .for_request(header.client_id.as_ref())
        .metered(&state.shard);
    let handling = handlers::dispatch(
        state,
        api_key,
        header,
        buf,
        peer,
        listener,
        &access,
        client.clone(),
    );
    under_request_quota(&state.shard, api_key, version, client, async {
        handling.await.map_err(CloseReason::Handler)
    })
    .await
}

/// Runs a request's handling (`handling`, then the responder it gives)
/// and, while some `request_percentage` quota exists, charges the time
/// spent on it to the client's quota when the response is ready, as Kafka
/// does when it answers: the response's `throttle_time_ms` is raised to the
/// throttle and the connection muted for it. WriteTxnMarkers (a cluster
/// action) and Produce with acks=0 (no response) are exempt, as in Kafka;
/// a handler may charge or exempt its request itself first (Fetch).
async fn under_request_quota(
    shard: &Rc<crate::shard::Shard>,
    api_key: ApiKey,
    version: i16,
    client: RequestClient,
    handling: impl std::future::Future<Output = Result<Responder, CloseReason>>,
) -> Result<Responder, CloseReason> {
    let Some(meter) = client.meter().cloned() else {
        return handling.await;
    };
    let responder = meter.time(handling).await?;
    if api_key == ApiKey::WriteTxnMarkers {
        client.exempt_request_time();
        return Ok(responder);
    }
    let shard = Rc::clone(shard);
    Ok(Box::pin(async move {
        let response = meter.time(responder).await;
        if matches!(response, Response::None | Response::Close(_)) {
            return response;
        }
        match client.charge_request_time(&shard).await {
            0 => response,
            throttle => handlers::with_throttle(response, api_key, version, throttle),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Chunked;
    use super::*;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ProduceRequest, TopicName};
    use kafka_protocol::protocol::{Encodable, StrBytes};

    /// Reads one frame body of `body.len()` bytes followed by `next`;
    /// returns the frame and what was left unread.
    fn read_one(body: &[u8], next: &[u8], chunk: usize) -> (Frame, Vec<u8>) {
        let mut all = body.to_vec();
        all.extend_from_slice(next);
        let mut reader = Chunked { data: &all, chunk };
        let frame = match futures::executor::block_on(read_body(
            &mut reader,
            body.len(),
            &super::super::produce_frame::no_direct_targets,
            true,
        )) {
            Ok(frame) => frame,
            Err(reason) => panic!("frame of {} bytes not read: {reason}", body.len()),
        };
        (frame, reader.data.to_vec())
    }

    /// Goal: every frame body is read exactly, whole or in pieces, on both
    /// sides of the size read whole by the first read, and the next frame's
    /// bytes stay unread. Method: Metadata-keyed bodies of many sizes
    /// through readers returning 1 byte to everything per read.
    #[test]
    fn frame_bodies_are_read_exactly_on_both_sides_of_the_bulk_size() {
        for size in [
            8,
            LOOKAHEAD_BYTES,
            LOOKAHEAD_BYTES + 1,
            BULK_READ_BYTES,
            BULK_READ_BYTES + 1,
            3 * BULK_READ_BYTES,
        ] {
            let mut body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            body[..4].copy_from_slice(&[0, ApiKey::Metadata as u8, 0, 1]);
            for chunk in [1, 3, 1000, usize::MAX] {
                let (frame, rest) = read_one(&body, b"next", chunk);
                match frame {
                    Frame::Whole(read) => assert!(read == body, "size {size} chunk {chunk}"),
                    Frame::Produce(_) => panic!("not a Produce frame"),
                }
                assert_eq!(rest, b"next", "size {size} chunk {chunk}");
            }
        }
    }

    /// Goal: a Produce frame read whole by the first read parses as one read
    /// in pieces does. Method: a v9 request with two partitions, under and
    /// over the bulk size, through readers of several chunk sizes.
    #[test]
    fn produce_frames_parse_the_same_whatever_the_first_read_holds() {
        for records_bytes in [100, 20_000, BULK_READ_BYTES] {
            let mut request = ProduceRequest::default();
            request.acks = 1;
            request.timeout_ms = 1000;
            let mut topic = TopicProduceData::default();
            topic.name = TopicName(StrBytes::from_static_str("t"));
            for index in 0..2 {
                let mut partition = PartitionProduceData::default();
                partition.index = index;
                partition.records = Some(Bytes::from(vec![index as u8 + 1; records_bytes]));
                topic.partition_data.push(partition);
            }
            request.topic_data.push(topic);
            let mut header = RequestHeader::default();
            header.request_api_key = ApiKey::Produce as i16;
            header.request_api_version = 9;
            header.correlation_id = 7;
            let mut body = BytesMut::new();
            header.encode(&mut body, 2).unwrap();
            request.encode(&mut body, 9).unwrap();
            for chunk in [1, 1000, usize::MAX] {
                let (frame, rest) = read_one(&body, b"x", chunk);
                match frame {
                    Frame::Produce(produce) => {
                        assert_eq!(produce.request, request, "{records_bytes} chunk {chunk}");
                        assert_eq!(produce.header, header);
                    }
                    Frame::Whole(_) => panic!("a served Produce version is read framing first"),
                }
                assert_eq!(rest, b"x");
            }
        }
    }
}
