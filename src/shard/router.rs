//! The router: the only way shards talk. A full mesh of glommio channels
//! carries [`RouterMessage`]s; each request carries the sender's id and a
//! request id, and its reply comes back on the mesh and completes a local
//! one-shot on the sending shard. A request for the local shard skips the
//! channel entirely.
//!
//! One `Router` per shard; its pending table is shard-local.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::channel::oneshot;
use glommio::channels::channel_mesh::{Receivers, Senders};
use thiserror::Error;

use super::messages::{ShardReply, ShardRequest};

/// What travels on the mesh.
#[derive(Debug)]
pub enum RouterMessage {
    /// A request from shard `from`.
    Request {
        /// Sending shard.
        from: usize,
        /// Request id, unique on the sending shard.
        id: u64,
        /// The request.
        body: ShardRequest,
    },
    /// The reply to request `id` of the receiving shard.
    Reply {
        /// Request id.
        id: u64,
        /// The reply.
        body: ShardReply,
    },
}

/// Failures of a cross-shard call.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum RouterError {
    /// The peer's channel is closed (shutting down).
    #[error("shard {0} is not reachable")]
    Unreachable(usize),
    /// The peer dropped the request without answering.
    #[error("shard {0} dropped the request")]
    Dropped(usize),
}

/// Maps shard ids to mesh peer ids. glommio numbers mesh peers in the order
/// they joined, which is not the shard order; every shard records its peer id
/// here once at start-up, and the table is read-only afterwards.
#[derive(Debug)]
pub struct PeerTable {
    peers: Vec<AtomicUsize>,
}

impl PeerTable {
    /// A table for `nr_shards` shards, all unknown.
    pub fn new(nr_shards: usize) -> Arc<Self> {
        Arc::new(PeerTable {
            peers: (0..nr_shards)
                .map(|_| AtomicUsize::new(usize::MAX))
                .collect(),
        })
    }
    /// Records the peer id of `shard`.
    pub fn set(&self, shard: usize, peer: usize) {
        self.peers[shard].store(peer, Ordering::Release);
    }
    /// Peer id of `shard`, or None while it has not joined.
    pub fn peer(&self, shard: usize) -> Option<usize> {
        match self.peers[shard].load(Ordering::Acquire) {
            usize::MAX => None,
            p => Some(p),
        }
    }
    /// Shard id of mesh peer `peer`.
    pub fn shard_of_peer(&self, peer: usize) -> Option<usize> {
        (0..self.peers.len()).find(|&s| self.peer(s) == Some(peer))
    }
    /// True when every shard has joined.
    pub fn complete(&self) -> bool {
        (0..self.peers.len()).all(|s| self.peer(s).is_some())
    }
}

/// One shard's end of the mesh.
pub struct Router {
    shard_id: usize,
    senders: Option<Senders<RouterMessage>>,
    peers: Arc<PeerTable>,
    pending: RefCell<HashMap<u64, oneshot::Sender<ShardReply>>>,
    next_id: Cell<u64>,
}

impl Router {
    /// Wraps the mesh senders of shard `shard_id` (None with one shard).
    pub fn new(
        shard_id: usize,
        senders: Option<Senders<RouterMessage>>,
        peers: Arc<PeerTable>,
    ) -> Self {
        Router {
            shard_id,
            senders,
            peers,
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(0),
        }
    }

    /// This shard's id.
    pub fn shard_id(&self) -> usize {
        self.shard_id
    }

    /// Sends `body` to another shard; resolves once it is queued on the mesh
    /// (so calls from one task reach the peer in call order) and returns the
    /// receiver of the reply.
    ///
    /// # Errors
    /// [`RouterError::Unreachable`] when the mesh is closed.
    pub async fn send(
        &self,
        target: usize,
        body: ShardRequest,
    ) -> Result<oneshot::Receiver<ShardReply>, RouterError> {
        assert_ne!(target, self.shard_id, "local requests do not use the mesh");
        let senders = self
            .senders
            .as_ref()
            .ok_or(RouterError::Unreachable(target))?;
        let peer = self
            .peers
            .peer(target)
            .ok_or(RouterError::Unreachable(target))?;
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id, tx);
        let message = RouterMessage::Request {
            from: self.shard_id,
            id,
            body,
        };
        if senders.send_to(peer, message).await.is_err() {
            self.pending.borrow_mut().remove(&id);
            return Err(RouterError::Unreachable(target));
        }
        Ok(rx)
    }

    /// Sends a reply back to shard `to`.
    pub async fn reply(&self, to: usize, id: u64, body: ShardReply) {
        let Some(senders) = self.senders.as_ref() else {
            return;
        };
        let Some(peer) = self.peers.peer(to) else {
            return;
        };
        if senders
            .send_to(peer, RouterMessage::Reply { id, body })
            .await
            .is_err()
        {
            tracing::debug!(shard = to, "reply dropped: peer gone");
        }
    }

    /// Completes a pending request with its reply.
    pub fn complete(&self, id: u64, body: ShardReply) {
        if let Some(tx) = self.pending.borrow_mut().remove(&id) {
            // The caller may have given up (connection closed); that is fine.
            let _ = tx.send(body);
        }
    }

    /// Mesh peers table.
    pub fn peers(&self) -> &Arc<PeerTable> {
        &self.peers
    }
}

/// Splits the receiving side into (peer shard, stream) pairs.
pub fn receiver_streams(
    receivers: &mut Receivers<RouterMessage>,
    peers: &PeerTable,
) -> Vec<(
    usize,
    glommio::channels::shared_channel::ConnectedReceiver<RouterMessage>,
)> {
    receivers
        .streams()
        .into_iter()
        .filter_map(|(peer, stream)| peers.shard_of_peer(peer).map(|s| (s, stream)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use glommio::channels::channel_mesh::MeshBuilder;
    use glommio::{LocalExecutorBuilder, Placement};

    use super::*;

    /// Each shard parks whenever it waits for the other, and a parked shard
    /// is woken only by the peer's eventfd write, decided by the handshake
    /// between the shard announcing its sleep and the peer's notify (the
    /// vendored glommio pairs two SeqCst fences there instead of a
    /// membarrier). A wake-up lost in that handshake leaves both shards
    /// asleep for good: nothing else (no timer) would wake them, so the
    /// round trips stop and the deadline below fails the test.
    #[test]
    fn round_trips_between_parking_shards_never_lose_a_wake_up() {
        const ROUND_TRIPS: u64 = 20_000;
        let mesh = MeshBuilder::<RouterMessage, _>::full(2, 16);
        let peers = PeerTable::new(2);
        let shard = |index: usize| {
            let mesh = mesh.clone();
            let peers = peers.clone();
            LocalExecutorBuilder::new(Placement::Unbound)
                .name(&format!("wake-test-{index}"))
                .io_memory(1 << 20)
                .spawn(move || async move {
                    let (senders, mut receivers) = mesh.join().await.expect("join mesh");
                    peers.set(index, senders.peer_id());
                    while !peers.complete() {
                        glommio::timer::sleep(Duration::from_millis(1)).await;
                    }
                    let streams = receiver_streams(&mut receivers, &peers);
                    let router = Router::new(index, Some(senders), peers.clone());
                    let stream = &streams[0].1;
                    if index == 1 {
                        // Answers until the requester's senders are gone.
                        let mut answered = 0u64;
                        while let Some(message) = stream.recv().await {
                            if let RouterMessage::Request { from, id, .. } = message {
                                router.reply(from, id, ShardReply::Applied).await;
                                answered += 1;
                            }
                        }
                        return answered;
                    }
                    for _ in 0..ROUND_TRIPS {
                        let body = ShardRequest::WaitForData {
                            items: Vec::new(),
                            max_wait_ms: 0,
                            isolation_level: 0,
                        };
                        let reply = router.send(1, body).await.expect("send");
                        match stream.recv().await {
                            Some(RouterMessage::Reply { id, body }) => router.complete(id, body),
                            other => panic!("unexpected mesh message {other:?}"),
                        }
                        assert!(matches!(reply.await, Ok(ShardReply::Applied)));
                    }
                    ROUND_TRIPS
                })
                .expect("executor")
        };
        let (done_tx, done_rx) = mpsc::channel();
        for index in [0, 1] {
            let handle = shard(index);
            let done_tx = done_tx.clone();
            std::thread::spawn(move || {
                let _ = done_tx.send((index, handle.join()));
            });
        }
        for _ in 0..2 {
            let (index, result) = done_rx
                .recv_timeout(Duration::from_secs(60))
                .expect("the round trips stalled: a parked shard was never woken");
            assert_eq!(result.expect("shard thread"), ROUND_TRIPS, "shard {index}");
        }
    }
}
