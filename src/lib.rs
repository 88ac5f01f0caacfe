//! ringbroker: a Kafka-compatible message broker, thread-per-core on glommio.
//!
//! See ARCHITECTURE.md in the shared folder for the map; each module's top
//! comment says what it owns and which core its values live on.

pub mod protocol;
pub mod storage;
