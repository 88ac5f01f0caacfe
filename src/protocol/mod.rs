//! The Kafka wire protocol with no I/O: framing, request headers, the API
//! version table, error codes and the record-batch view. Message bodies are
//! the `kafka-protocol` crate's generated types.
//!
//! Pure code: runs on any core and holds no state.

pub mod record_batch;
pub mod schema;

pub use kafka_protocol::error::ResponseError as ErrorCode;
