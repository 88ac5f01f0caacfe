//! The Kafka listener of one shard: accepts the connections the kernel gives
//! this core (SO_REUSEPORT spreads them), and runs one connection task per
//! client. Values here live on the shard that accepted the connection.

pub mod access;
pub mod admission;
pub mod authenticator;
pub mod connection;
pub mod handlers;
pub mod hosts;
pub mod pieces;
pub mod produce_frame;
#[cfg(test)]
mod test_support;
pub mod tls;
pub mod versions;
pub mod write_watch;

use std::cell::{Cell, RefCell};

use futures::channel::oneshot;
use std::rc::Rc;
use std::time::Duration;

use glommio::net::TcpListener;

use crate::shard::Shard;
use admission::Admission;

/// Per-shard server state shared by its connections.
pub struct ServerState {
    /// The shard.
    pub shard: Rc<Shard>,
    /// Set when the broker is shutting down: stop reading new requests.
    pub shutting_down: Cell<bool>,
    /// Connections currently open on this shard.
    pub open_connections: Cell<usize>,
    shutdown_waiters: RefCell<Vec<oneshot::Sender<()>>>,
}

impl ServerState {
    /// State for a shard's server.
    pub fn new(shard: Rc<Shard>) -> Rc<Self> {
        Rc::new(ServerState {
            shard,
            shutting_down: Cell::new(false),
            open_connections: Cell::new(0),
            shutdown_waiters: RefCell::new(Vec::new()),
        })
    }

    /// Resolves when shutdown begins.
    pub fn shutdown_signal(&self) -> futures::future::BoxFuture<'static, ()> {
        if self.shutting_down.get() {
            return Box::pin(async {});
        }
        let (tx, rx) = oneshot::channel();
        let mut waiters = self.shutdown_waiters.borrow_mut();
        waiters.retain(|w| !w.is_canceled());
        waiters.push(tx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }

    /// Starts shutdown: the accept loop stops and idle connections close.
    pub fn begin_shutdown(&self) {
        self.shutting_down.set(true);
        for waiter in self.shutdown_waiters.borrow_mut().drain(..) {
            let _ = waiter.send(());
        }
    }
}

/// Binds listener `index` of the broker's listeners on this shard.
///
/// # Errors
/// When the listener cannot be bound.
pub fn bind(shard: &Shard, index: usize) -> std::io::Result<TcpListener> {
    TcpListener::bind(shard.config.listeners[index].address)
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Wait before the next accept after one failed.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);
/// A run of failed accepts logs its first failure and one in this many.
const ACCEPT_FAILURES_PER_LOG: u64 = 1000;

/// Runs the accept loop of listener `index` until shutdown begins. The
/// pending accept is only ever abandoned at shutdown: dropping an accept
/// the kernel already completed would lose that connection.
pub async fn accept_loop(listener: TcpListener, state: Rc<ServerState>, index: usize) {
    // Accepts failed in a row (out of file descriptors and the like).
    let mut failed_in_a_row = 0u64;
    loop {
        let accepted =
            futures::future::select(Box::pin(listener.accept()), state.shutdown_signal()).await;
        let stream = match accepted {
            futures::future::Either::Left((Ok(stream), _)) => {
                if failed_in_a_row > 0 {
                    tracing::info!(
                        failed_accepts = failed_in_a_row,
                        "accepting connections again"
                    );
                    failed_in_a_row = 0;
                }
                stream
            }
            futures::future::Either::Left((Err(e), _)) => {
                // Back off briefly rather than spin, and log the first
                // failure of a run and then one in ACCEPT_FAILURES_PER_LOG
                // (about every 10 s), not a hundred lines a second.
                if failed_in_a_row % ACCEPT_FAILURES_PER_LOG == 0 {
                    tracing::warn!(
                        error = %e,
                        failed_in_a_row = failed_in_a_row + 1,
                        "accept failed; retrying every {} ms",
                        ACCEPT_RETRY.as_millis()
                    );
                }
                failed_in_a_row += 1;
                glommio::timer::sleep(ACCEPT_RETRY).await;
                continue;
            }
            futures::future::Either::Right(_) => return,
        };
        // Kafka's ConnectionQuotas: wait for a slot under max.connections
        // (holding this connection, the kernel's backlog the rest) and the
        // creation rate's throttle, then close a connection whose address
        // holds its max.connections.per.ip.
        let Ok(peer) = stream.peer_addr() else {
            continue;
        };
        let admitted = futures::future::select(
            Box::pin(admission::admit(&state.shard, index, peer.ip())),
            state.shutdown_signal(),
        )
        .await;
        let (throttle_ms, ip_rate) = match admitted {
            futures::future::Either::Left((
                Admission::Admitted {
                    throttle_ms,
                    ip_rate,
                },
                _,
            )) => (Some(throttle_ms), ip_rate),
            // The owner cannot be reached (shutdown): served, uncounted.
            futures::future::Either::Left((Admission::Uncounted, _)) => (None, None),
            futures::future::Either::Left((Admission::TooManyFromAddress(allowed), _)) => {
                tracing::info!(
                    %peer,
                    "Rejected connection from {}, address already has the configured maximum of {allowed} connections.",
                    peer.ip()
                );
                continue;
            }
            futures::future::Either::Right(_) => return,
        };
        if let Some(throttle_ms @ 1..) = throttle_ms {
            tracing::debug!(%peer, throttle_ms, "max.connection.creation.rate exceeded; waiting");
            let slept = futures::future::select(
                Box::pin(glommio::timer::sleep(Duration::from_millis(throttle_ms))),
                state.shutdown_signal(),
            )
            .await;
            if let futures::future::Either::Right(_) = slept {
                return;
            }
        }
        let counted = throttle_ms.is_some();
        let state = state.clone();
        glommio::spawn_local(async move {
            // Past its IP's connection_creation_rate a connection is held
            // unread for the throttle time, then closed, as in Kafka; it
            // gives its slot back first, as Kafka never counts it.
            let throttle =
                crate::quota::sensors::connection_throttle(&state.shard, peer.ip(), ip_rate).await;
            if counted && throttle > 0 {
                admission::release(&state.shard, index, peer.ip());
            }
            if throttle > 0 {
                tracing::debug!(%peer, throttle, "connection_creation_rate exceeded; closing");
                glommio::timer::sleep(std::time::Duration::from_millis(throttle)).await;
                return;
            }
            state.open_connections.set(state.open_connections.get() + 1);
            match tls::served(&state.shard, index) {
                Some(tls) => tls::serve(stream, tls, state.clone(), index).await,
                None => connection::serve_tcp(stream, state.clone(), index).await,
            }
            state.open_connections.set(state.open_connections.get() - 1);
            // Given back here, not by a guard: the task is only ever dropped
            // unfinished when its executor ends, with the broker.
            if counted {
                admission::release(&state.shard, index, peer.ip());
            }
        })
        .detach();
    }
}
