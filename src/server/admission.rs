//! Connection limits, as Kafka's `ConnectionQuotas` enforces them:
//!
//! - past `max.connections` connections a listener's acceptor waits, holding
//!   the connection it accepted unserved (and the kernel's backlog the
//!   rest), until one closes or the limit is raised;
//! - past `max.connection.creation.rate` new connections a second it waits
//!   the throttle time, then serves the connection;
//! - a connection from an address already holding its
//!   `max.connections.per.ip` (or its override) is closed at once;
//! - a listener's own `listener.name.<listener>.max.connections` and
//!   `.max.connection.creation.rate` hold its connections the same way,
//!   besides the broker-wide limits.
//!
//! The counts are broker-wide, so one shard ([`OWNER_SHARD`]) keeps them;
//! every shard's accept loop asks it for a slot (a message, or a direct
//! call on the owner) and gives the slot back when the connection ends.
//! Only one admission per accept loop is ever pending, so the waiters are
//! bounded by the shards' listeners.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::rc::Rc;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use futures::FutureExt;

use crate::config::dynamic::{ConnectionLimits, DynamicBrokerConfigs, ListenerLimits};
use crate::config::BrokerConfig;
use crate::quota::sensors::{now_ms, Rate};
use crate::shard::messages::{ShardReply, ShardRequest};
use crate::shard::Shard;

/// The shard that keeps the broker's connection counts.
pub const OWNER_SHARD: usize = 0;

/// The owner's answer to a new connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// Serve it, after holding it this many ms (the creation rate's
    /// throttle); it holds a slot until [`release`].
    Admitted {
        /// Throttle time in ms (0: none).
        throttle_ms: u64,
        /// The `connection_creation_rate` quota of its address, if any.
        ip_rate: Option<f64>,
    },
    /// Close it: its address already holds this many connections.
    TooManyFromAddress(i32),
    /// The owner could not be reached (shutdown): serve it, uncounted (it
    /// has no slot to give back).
    Uncounted,
}

/// The connection limits in force on node `node`: its own dynamic values,
/// then the cluster-wide ones, then the command line's. Layers that no
/// longer make sense together (a command-line value changed since) are
/// ignored, with an error in the log.
pub fn limits_in_force(config: &BrokerConfig, dynamic: &DynamicBrokerConfigs) -> ConnectionLimits {
    let layered = |name: &str| config.value_in_force(dynamic, name);
    // Checked as a change at runtime, so that a value no longer right here
    // (a default of 0 connections set beside this node's own value, before
    // its id changed) cannot shut every client out.
    ConnectionLimits::from_values(&layered, true).unwrap_or_else(|message| {
        tracing::error!(%message, "dynamic connection limits ignored");
        config.connection_limits.clone()
    })
}

/// The owner shard's counts.
pub struct ConnectionCounts {
    total: Cell<u64>,
    per_address: RefCell<HashMap<IpAddr, u32>>,
    /// Accept loops waiting for a slot, first come first served.
    waiters: RefCell<VecDeque<oneshot::Sender<()>>>,
    /// The limits, and the metadata offset they were read at.
    limits: RefCell<Option<(u64, Rc<ConnectionLimits>)>>,
    creation_rate: RefCell<Rate>,
    /// `max.connections.per.ip.overrides` resolved to addresses.
    pub overrides: crate::server::hosts::ResolvedOverrides,
    /// Each listener's connections open and creation rate, by its name in
    /// lower case (as Kafka's config prefix names it).
    listeners: RefCell<HashMap<String, ListenerCounts>>,
    /// Each listener's own limits, and the metadata offset they were read
    /// at.
    listener_limits: RefCell<HashMap<String, (u64, ListenerLimits)>>,
    window: crate::quota::sensors::QuotaWindow,
}

/// One listener's share of the counts.
struct ListenerCounts {
    total: u64,
    creation_rate: Rate,
}

/// The name listener `index` of `config` goes by in its configs'
/// `listener.name.<name>.` prefix.
fn listener_name(config: &BrokerConfig, index: usize) -> String {
    config
        .listeners
        .get(index)
        .map(|l| l.security_protocol.name().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The own connection limits of listener `name` in force on this node
/// (none when the stored values no longer make sense, with an error in
/// the log).
fn listener_limits(shard: &Shard, name: &str) -> ListenerLimits {
    let image = shard.image();
    let value = |config: &str| shard.config.value_in_force(&image.broker_configs, config);
    ListenerLimits::from_values(name, &value).unwrap_or_else(|message| {
        tracing::error!(listener = name, %message, "dynamic listener connection limits ignored");
        ListenerLimits {
            max_connections: i32::MAX,
            max_connection_creation_rate: i32::MAX,
        }
    })
}

impl ConnectionCounts {
    /// Counts whose creation rate is measured over `window`.
    pub fn new(window: crate::quota::sensors::QuotaWindow) -> Self {
        ConnectionCounts {
            total: Cell::default(),
            per_address: RefCell::default(),
            waiters: RefCell::default(),
            limits: RefCell::default(),
            creation_rate: RefCell::new(Rate::new(window)),
            overrides: Default::default(),
            listeners: RefCell::default(),
            listener_limits: RefCell::default(),
            window,
        }
    }

    /// The broker's connection limits in force, read again only once the
    /// metadata moved on.
    pub fn limits(&self, shard: &Shard) -> Rc<ConnectionLimits> {
        let image = shard.image();
        let mut cached = self.limits.borrow_mut();
        match &*cached {
            Some((offset, limits)) if *offset == image.applied_records => limits.clone(),
            _ => {
                let limits = Rc::new(limits_in_force(&shard.config, &image.broker_configs));
                *cached = Some((image.applied_records, limits.clone()));
                limits
            }
        }
    }

    /// Listener `name`'s own limits, read again only once the metadata
    /// moved on.
    fn listener_limits(&self, shard: &Shard, name: &str) -> ListenerLimits {
        let applied = shard.image().applied_records;
        if let Some((offset, limits)) = self.listener_limits.borrow().get(name) {
            if *offset == applied {
                return *limits;
            }
        }
        let limits = listener_limits(shard, name);
        self.listener_limits
            .borrow_mut()
            .insert(name.to_string(), (applied, limits));
        limits
    }

    /// Connections open on the broker.
    pub fn total(&self) -> u64 {
        self.total.get()
    }

    /// Wakes every waiting accept loop to look at the limits again (they
    /// may have been raised).
    pub fn wake_all(&self) {
        for waiter in self.waiters.borrow_mut().drain(..) {
            let _ = waiter.send(());
        }
    }

    /// Frees the slot of a connection from `ip` on listener `listener`
    /// and wakes the waiting accept loops, longest-waiting first (the slot
    /// may be one only another listener's loop can take).
    fn release(&self, listener: &str, ip: IpAddr) {
        let mut per_address = self.per_address.borrow_mut();
        if let Some(count) = per_address.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                per_address.remove(&ip);
            }
            self.total.set(self.total.get().saturating_sub(1));
            if let Some(counts) = self.listeners.borrow_mut().get_mut(listener) {
                counts.total = counts.total.saturating_sub(1);
            }
        }
        drop(per_address);
        self.wake_all();
    }

    /// Connections open on listener `name`.
    fn listener_total(&self, name: &str) -> u64 {
        self.listeners.borrow().get(name).map_or(0, |c| c.total)
    }

    /// Listener `name`'s counts.
    fn listener<T>(&self, name: &str, f: impl FnOnce(&mut ListenerCounts) -> T) -> T {
        let mut listeners = self.listeners.borrow_mut();
        let counts = listeners
            .entry(name.to_string())
            .or_insert_with(|| ListenerCounts {
                total: 0,
                creation_rate: Rate::new(self.window),
            });
        f(counts)
    }
}

/// Admits a connection from `ip` on listener `index` on the owner shard
/// (the ordered part runs now; the returned future resolves once a slot
/// is free).
pub fn admit_here(
    shard: Rc<Shard>,
    index: usize,
    ip: IpAddr,
) -> LocalBoxFuture<'static, Admission> {
    async move {
        let counts = &shard.connection_counts;
        let listener = listener_name(&shard.config, index);
        let (limits, own) = loop {
            let limits = counts.limits(&shard);
            let own = counts.listener_limits(&shard, &listener);
            let under = |open: u64, max: i32| open < u64::try_from(max).unwrap_or(0);
            if under(counts.total.get(), limits.max_connections)
                && under(counts.listener_total(&listener), own.max_connections)
            {
                break (limits, own);
            }
            let (tx, rx) = oneshot::channel();
            counts.waiters.borrow_mut().push_back(tx);
            // A dropped sender (shutdown) looks again too.
            let _ = rx.await;
        };
        let mut throttle_ms = 0;
        if limits.max_connection_creation_rate < i32::MAX {
            let quota = f64::from(limits.max_connection_creation_rate);
            throttle_ms = counts
                .creation_rate
                .borrow_mut()
                .record_and_throttle(1.0, quota, now_ms())
                .min(shard.config.quota_window.window_ms);
        }
        if own.max_connection_creation_rate < i32::MAX {
            let quota = f64::from(own.max_connection_creation_rate);
            let listener_throttle = counts.listener(&listener, |c| {
                c.creation_rate.record_and_throttle(1.0, quota, now_ms())
            });
            throttle_ms =
                throttle_ms.max(listener_throttle.min(shard.config.quota_window.window_ms));
        }
        let ip = ip.to_canonical();
        let allowed = limits.per_ip(ip, &counts.overrides.by_address());
        let mut per_address = counts.per_address.borrow_mut();
        let held = per_address.get(&ip).copied().unwrap_or(0);
        if i64::from(held) >= i64::from(allowed) {
            return Admission::TooManyFromAddress(allowed);
        }
        per_address.insert(ip, held + 1);
        counts.total.set(counts.total.get() + 1);
        counts.listener(&listener, |c| c.total += 1);
        let ip_rate = shard.ip_rates.rate(ip);
        let ip_rate = ip_rate.or_else(|| shard.image().client_quotas.default_connection_rate());
        Admission::Admitted {
            throttle_ms,
            ip_rate,
        }
    }
    .boxed_local()
}

/// Frees, on the owner shard, the slot of a connection from `ip` on
/// listener `index`.
pub fn release_here(shard: &Shard, index: usize, ip: IpAddr) {
    let listener = listener_name(&shard.config, index);
    shard
        .connection_counts
        .release(&listener, ip.to_canonical());
}

/// Asks the owner shard to admit a connection from `ip`. A connection is
/// served uncounted when the owner cannot be reached (shutdown).
pub async fn admit(shard: &Rc<Shard>, index: usize, ip: IpAddr) -> Admission {
    let served = Admission::Uncounted;
    match shard
        .call(OWNER_SHARD, ShardRequest::AdmitConnection(index, ip))
        .await
    {
        Ok(reply) => match reply.await {
            Ok(ShardReply::Admission(admission)) => admission,
            _ => served,
        },
        Err(_) => served,
    }
}

/// Gives back the slot of an admitted connection from `ip` on listener
/// `index`, without waiting for the owner (call from a task, not a
/// destructor).
pub fn release(shard: &Rc<Shard>, index: usize, ip: IpAddr) {
    if shard.id == OWNER_SHARD {
        release_here(shard, index, ip);
        return;
    }
    let shard = shard.clone();
    glommio::spawn_local(async move {
        if let Ok(reply) = shard
            .call(OWNER_SHARD, ShardRequest::ReleaseConnection(index, ip))
            .await
        {
            let _ = reply.await;
        }
    })
    .detach();
}
