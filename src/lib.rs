//! ringbroker: a Kafka-compatible message broker, thread-per-core on glommio.
//!
//! See ARCHITECTURE.md in the shared folder for the map; each module's top
//! comment says what it owns and which core its values live on.

pub mod bench;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod group;
pub mod metrics;
pub mod partition;
pub mod protocol;
pub mod quota;
pub mod runtime;
pub mod security;
pub mod server;
pub mod shard;
pub mod storage;
pub mod txn;
