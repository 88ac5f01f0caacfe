//! SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2; v2
//! flexible) on a listener without SASL, which is every ringbroker
//! listener: as Kafka 4.1 answers on a PLAINTEXT listener, the handshake
//! gets ILLEGAL_SASL_STATE with no mechanisms, and an authentication
//! ILLEGAL_SASL_STATE with Kafka's message, no bytes and no session
//! lifetime; the connection stays open. A client configured for SASL so
//! learns the listener does not take it.

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::server::connection::Response;

/// Answers SaslHandshake.
pub fn handshake(_request: SaslHandshakeRequest, version: i16, correlation_id: i32) -> Response {
    illegal_state_handshake(version, correlation_id)
}

/// SaslHandshake refused with ILLEGAL_SASL_STATE and no mechanisms: after
/// authentication or on a listener without SASL (here), and in the middle
/// of an exchange (`server::authenticator`).
pub fn illegal_state_handshake(version: i16, correlation_id: i32) -> Response {
    let mut response = SaslHandshakeResponse::default();
    response.error_code = ErrorCode::IllegalSaslState.code();
    encode_response(ApiKey::SaslHandshake, version, correlation_id, &response)
}

/// Answers SaslAuthenticate.
pub fn authenticate(
    _request: SaslAuthenticateRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = SaslAuthenticateResponse::default();
    response.error_code = ErrorCode::IllegalSaslState.code();
    response.error_message = Some(str_bytes(
        "SaslAuthenticate request received after successful authentication",
    ));
    response.auth_bytes = Bytes::new();
    response.session_lifetime_ms = 0;
    encode_response(ApiKey::SaslAuthenticate, version, correlation_id, &response)
}
