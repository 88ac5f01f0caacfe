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
