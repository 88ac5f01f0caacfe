//! A connection on an SSL or SASL_SSL listener: the TLS handshake (bounded
//! by the request read timeout; on an SSL listener the client certificate,
//! if any, names the principal), then the connection is served as any
//! other over one end of a socket pair while this task relays between the
//! other end and the TLS session, decrypting what the client sends and
//! encrypting what the broker answers. The broker's own paths (splice and
//! vectored sends of record data) write to the socket pair unchanged; the
//! record bytes are copied once more in user space here, into TLS records,
//! as any TLS server must (Kafka's SSL listeners give up zero-copy too).
//! Each direction relays through one fixed buffer, so a connection holds a
//! bounded amount whatever its client does.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{self, Either};
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use glommio::net::{TcpStream, UnixStream};

use super::write_watch::{self, Watched};
use super::{connection, ServerState};

/// Bytes relayed per read, each way.
const RELAY_BUFFER_BYTES: usize = 64 * 1024;

/// The TLS listener `index` serves a new connection with: this shard's
/// copy, as last reloaded; None for a listener that is not SSL or SASL_SSL.
pub fn served(shard: &crate::shard::Shard, index: usize) -> Option<Arc<rustls::ServerConfig>> {
    shard
        .listener_tls
        .borrow()
        .get(index)?
        .as_ref()
        .map(|tls| tls.config.clone())
}

/// When listeners' stores are read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// At start-up: from the configs alone, as Kafka builds its factories.
    Start,
    /// On a change of the dynamic configs: listeners whose configs changed,
    /// and with `reread_files` (a change of this node's own configs, as
    /// Kafka's `reloadUpdatedFilesWithoutConfigChange`) those whose store
    /// files were modified since they were read.
    Change {
        /// Whether modified files are read again.
        reread_files: bool,
    },
}

/// The store configs of listener `index` under dynamic configs `configs`
/// (this node's own values over the cluster-wide ones, over the flags').
fn listener_settings(
    shard: &crate::shard::Shard,
    settings: &crate::security::listener_tls::TlsSettings,
    configs: &crate::config::dynamic::DynamicBrokerConfigs,
    index: usize,
) -> crate::security::listener_tls::StoreSettings {
    let name = shard.config.listeners[index].security_protocol.name();
    let node = shard.config.node_id;
    settings.stores.for_listener(name, |config| {
        configs.value_on(node, config).map(str::to_string)
    })
}

/// Listener `index`'s stores under `stores`, as Kafka's `SslFactory`
/// reconfigures a listener (`listener_tls::rebuild`), compared with what
/// it serves unless at start-up. Reads files off the executor.
async fn rebuilt(
    shard: &crate::shard::Shard,
    index: usize,
    stores: crate::security::listener_tls::StoreSettings,
    compare: bool,
) -> Result<Option<crate::security::listener_tls::ListenerTls>, String> {
    let (Some(settings), Some(current)) = (shard.config.tls.clone(), served_built(shard, index))
    else {
        return Ok(None);
    };
    let protocol = shard.config.listeners[index].security_protocol;
    glommio::executor()
        .spawn_blocking(move || {
            crate::security::listener_tls::rebuild(
                &settings,
                &current,
                protocol.name(),
                stores,
                protocol.is_sasl(),
                compare,
            )
        })
        .await
}

/// What listener `index`'s TLS on this shard was built from.
fn served_built(
    shard: &crate::shard::Shard,
    index: usize,
) -> Option<crate::security::listener_tls::Built> {
    shard
        .listener_tls
        .borrow()
        .get(index)?
        .as_ref()
        .map(|tls| tls.built.clone())
}

/// Kafka's `validateReconfiguration` of the listeners' SSL factories: the
/// stores of each listener whose configs the change from `before` to
/// `after` (dynamic broker configs) changes can be read and keep the
/// served certificate's identity. As in Kafka, a listener whose configs
/// stay is not checked (a store file modified since is read when the
/// change is applied, [`reload`]).
///
/// # Errors
/// Why not, for the first listener that cannot.
pub async fn check(
    shard: &crate::shard::Shard,
    before: &crate::config::dynamic::DynamicBrokerConfigs,
    after: &crate::config::dynamic::DynamicBrokerConfigs,
) -> Result<(), String> {
    let Some(settings) = shard.config.tls.clone() else {
        return Ok(());
    };
    for index in 0..shard.config.listeners.len() {
        let next = listener_settings(shard, &settings, after, index);
        if next != listener_settings(shard, &settings, before, index) {
            rebuilt(shard, index, next, true).await?;
        }
    }
    Ok(())
}

/// Reloads this shard's listeners' TLS from the dynamic configs in its
/// image, as `when` says; new connections are served with it, open ones
/// keep theirs. A listener whose stores cannot be served is logged and
/// keeps what it serves; the others change.
pub async fn reload(shard: &crate::shard::Shard, when: Reload) {
    let Some(settings) = shard.config.tls.clone() else {
        return;
    };
    let configs = shard.image().broker_configs.clone();
    for index in 0..shard.config.listeners.len() {
        let stores = listener_settings(shard, &settings, &configs, index);
        let listener = shard.config.listeners[index].security_protocol.name();
        if let (
            Reload::Change {
                reread_files: false,
            },
            Some(current),
        ) = (when, served_built(shard, index))
        {
            if current.settings == stores {
                continue;
            }
        }
        match rebuilt(shard, index, stores, when != Reload::Start).await {
            Ok(Some(tls)) => {
                tracing::info!(
                    shard = shard.id,
                    listener,
                    subject = %tls.built.identity.subject,
                    "listener TLS reloaded"
                );
                if let Some(slot) = shard.listener_tls.borrow_mut().get_mut(index) {
                    *slot = Some(tls);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::error!(
                shard = shard.id,
                listener,
                error = %e,
                "cannot serve the listener's configured stores; serving what was served"
            ),
        }
    }
}

/// Serves one TCP connection accepted on TLS listener `listener`.
pub async fn serve(
    stream: TcpStream,
    tls: Arc<rustls::ServerConfig>,
    state: Rc<ServerState>,
    listener: usize,
) {
    let peer_addr = stream.peer_addr().ok();
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(?peer_addr, error = %e, "cannot set TCP_NODELAY");
    }
    let timeout = Duration::from_millis(state.shard.config.request_read_timeout_ms);
    let handshake = futures_rustls::TlsAcceptor::from(tls).accept(stream);
    // Bounded by the request read timeout, and given up when the broker
    // begins shutting down.
    let bounded = Box::pin(connection::within(timeout, handshake));
    let session = match future::select(bounded, state.shutdown_signal()).await {
        Either::Left((Some(Ok(session)), _)) => session,
        Either::Left((Some(Err(e)), _)) => {
            tracing::debug!(?peer_addr, error = %e, "TLS handshake failed");
            return;
        }
        Either::Left((None, _)) => {
            tracing::debug!(
                ?peer_addr,
                "TLS handshake not done within the request read timeout"
            );
            return;
        }
        Either::Right(_) => return,
    };
    // A client certificate names the principal on an SSL listener (on a
    // SASL_SSL one, SASL does), as Kafka's default principal builder.
    let certified = match session.get_ref().1.peer_certificates() {
        Some([certificate, ..])
            if !state.shard.config.listeners[listener]
                .security_protocol
                .is_sasl() =>
        {
            match crate::security::tls::principal_name(certificate) {
                Ok(name) => match state.shard.config.ssl_principal_mapper.map(&name) {
                    Some(mapped) => Some(mapped),
                    None => {
                        // Kafka's principal builder fails, and the
                        // connection is closed.
                        tracing::info!(?peer_addr, subject = %name, "no ssl.principal.mapping.rules rule applies to the client certificate; closing");
                        return;
                    }
                },
                Err(e) => {
                    tracing::info!(?peer_addr, error = %e, "client certificate without a usable subject; closing");
                    return;
                }
            }
        }
        _ => None,
    };
    let (inner, outer) = match std::os::unix::net::UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!(?peer_addr, error = %e, "no socket pair for a TLS connection; closing it");
            return;
        }
    };
    use std::os::fd::{FromRawFd, IntoRawFd};
    let fd = inner.into_raw_fd();
    // SAFETY: each descriptor was just given up by its std socket, owned by
    // nothing else from here on.
    let (inner, outer) = unsafe {
        (
            UnixStream::from_raw_fd(fd),
            UnixStream::from_raw_fd(outer.into_raw_fd()),
        )
    };
    let idle = Duration::from_millis(state.shard.config.connections_max_idle_ms);
    let shutdown = state.shutdown_signal();
    futures::join!(
        connection::serve(inner, fd, peer_addr, certified, state, listener),
        relay(session, outer, idle, shutdown)
    );
}

/// Copies `from` to `to` until `from` ends or either fails; false on a
/// failure.
async fn copy<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(from: &mut R, to: &mut W) -> bool {
    let mut buffer = vec![0u8; RELAY_BUFFER_BYTES];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) => return true,
            Ok(read) => read,
            Err(_) => return false,
        };
        if to.write_all(&buffer[..read]).await.is_err() || to.flush().await.is_err() {
            return false;
        }
    }
}

/// Relays between the client's TLS session and the broker's end of the
/// socket pair until the broker closes its end: the client's end of input
/// is passed on as the end of the broker's input, and the broker closing
/// ends the session (close_notify, then the TCP connection). A write to
/// the client that waits `limit` for room (less once `shutdown` resolves,
/// see `write_watch`) ends the relay, and so the connection.
async fn relay<C, B>(
    client: C,
    broker: B,
    limit: Duration,
    shutdown: futures::future::BoxFuture<'static, ()>,
) where
    C: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let (mut client_read, client_write) = client.split();
    let mut client_write = Watched::new(client_write);
    let waiting_since = client_write.waiting_since();
    let (mut broker_read, mut broker_write) = broker.split();
    let inbound = async {
        copy(&mut client_read, &mut broker_write).await;
        let _ = broker_write.close().await;
    };
    let outbound = async {
        copy(&mut broker_read, &mut client_write).await;
        let _ = client_write.close().await;
    };
    let both = async {
        futures::pin_mut!(inbound, outbound);
        if let Either::Left(((), outbound)) = future::select(inbound, outbound).await {
            outbound.await;
        }
    };
    if write_watch::bounded(both, &waiting_since, limit, shutdown)
        .await
        .is_none()
    {
        tracing::info!(
            waited_ms = waiting_since
                .get()
                .map_or(0, |since| since.elapsed().as_millis() as u64),
            "closing TLS connection: the client took no bytes for too long"
        );
    }
}
