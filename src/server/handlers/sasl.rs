//! SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2) on a
//! listener without SASL, which is every ringbroker listener: as Kafka
//! answers on a PLAINTEXT listener, the handshake gets ILLEGAL_SASL_STATE
//! with no mechanisms, and an authentication closes the connection. A
//! client configured for SASL so learns the listener does not take it.

use kafka_protocol::messages::{ApiKey, SaslHandshakeRequest, SaslHandshakeResponse};

use super::encode_response;
use crate::protocol::ErrorCode;
use crate::server::connection::Response;

/// Answers SaslHandshake.
pub fn handshake(_request: SaslHandshakeRequest, version: i16, correlation_id: i32) -> Response {
    let mut response = SaslHandshakeResponse::default();
    response.error_code = ErrorCode::IllegalSaslState.code();
    encode_response(ApiKey::SaslHandshake, version, correlation_id, &response)
}
