//! SASL authentication of a connection on a SASL_PLAINTEXT listener, with
//! SCRAM or PLAIN, before any other request is served, as Kafka's
//! `SaslServerAuthenticator` does:
//!
//! - first an ApiVersions (at most one, and only first) or a SaslHandshake;
//!   any other request closes the connection;
//! - SaslHandshake with an enabled mechanism answers the enabled list; any
//!   other mechanism gets UNSUPPORTED_SASL_MECHANISM with the list, and the
//!   connection is closed after the answer;
//! - after a v1 handshake the exchange comes in SaslAuthenticate requests
//!   (anything else closes the connection); after a v0 handshake it comes
//!   as bare size-prefixed tokens, answered the same way;
//! - a failed exchange is answered SASL_AUTHENTICATION_FAILED with Kafka's
//!   message (SCRAM's own, or PLAIN's as `PlainSaslServer` words it), and
//!   the connection is closed (a v0 exchange is closed without
//!   answer); every refusal of this kind (failed exchange, unsupported
//!   mechanism, a request out of turn in the exchange) is answered and
//!   closed after `connection.failed.authentication.delay.ms` (100 ms);
//! - with `connections.max.reauth.ms` set, a session lasts that long (the
//!   lifetime SaslAuthenticate v1+ tells the client; 0, the default, is
//!   forever); a SaslHandshake on the authenticated connection begins a
//!   re-authentication (KIP-368), the first at any time and the next ones
//!   at least 1 s apart (closer, the handshake is answered as any request:
//!   ILLEGAL_SASL_STATE), which must use the same mechanism (else the
//!   connection is closed, unanswered, at the next request) and end as the
//!   same user ("Cannot change principals during re-authentication ...");
//!   any other request on an expired session closes the connection;
//!
//! Frames are bounded by `sasl.server.max.receive.size` until the client
//! has authenticated. Differs from Kafka in one corner: a request other than
//! SaslAuthenticate, SaslHandshake or ApiVersions in the middle of an
//! exchange closes the connection without the ILLEGAL_SASL_STATE answer
//! Kafka sends first (those two get it, as from Kafka).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, RequestHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::Decodable;

use super::connection::{frame_prefix, Responder, Response};
use super::handlers::{self, encode_response, str_bytes};
use super::versions;
use crate::cluster::image::MetadataImage;
use crate::protocol::ErrorCode;
use crate::security::delegation_token::TokenConfig;
use crate::security::oauthbearer::{self, Validator};
use crate::security::plain::PlainUsers;
use crate::security::scram::{server_nonce, ScramFailure, ScramLogin, ScramMechanism, ScramServer};
use crate::security::SaslMechanism;

/// Kafka's `sasl.server.max.receive.size`: the largest frame taken before
/// the client has authenticated.
pub const SASL_RECEIVE_BYTES_MAX: usize = 524_288;
/// Kafka's `connection.failed.authentication.delay.ms`.
const FAILED_AUTHENTICATION_DELAY: Duration = Duration::from_millis(100);

enum State {
    /// Nothing received yet: ApiVersions or SaslHandshake.
    Initial,
    /// ApiVersions answered: SaslHandshake.
    Handshake,
    /// The exchange, in SaslAuthenticate requests (`headers`) or bare.
    Exchange { headers: bool, exchange: Exchange },
    /// Authenticated as this user.
    Complete(String),
    /// Re-authenticating with a mechanism other than the session's: the
    /// next frame closes the connection (unanswered, as Kafka).
    BadMechanism,
}

/// Kafka's least time between the starts of two re-authentications.
const REAUTHENTICATION_INTERVAL_MIN: Duration = Duration::from_secs(1);

/// A mechanism's exchange in progress.
enum Exchange {
    /// PLAIN: one message.
    Plain,
    /// SCRAM: client-first, then client-final.
    Scram {
        server: ScramServer,
        /// The client-first message was taken.
        started: bool,
    },
    /// OAUTHBEARER: the client's first message, again after a challenge;
    /// after a challenge, the error it named, which a lone 0x01 from the
    /// client turns into the failure.
    OAuthBearer { error: Option<String> },
}

/// How an exchange step fails.
enum Failure {
    /// Answered SASL_AUTHENTICATION_FAILED with this message.
    Told(String),
    /// Closed unanswered (Kafka fails there with an exception it does not
    /// answer).
    Close(&'static str),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Told(message)
    }
}

/// What to do with a frame received before authentication completed.
pub enum Step {
    /// Send this answer and go on.
    Answer(Responder),
    /// Send this answer, then close the connection.
    AnswerThenClose(Responder, &'static str),
    /// Close the connection.
    Close(&'static str),
}

/// `response`, sent after `connection.failed.authentication.delay.ms`, as
/// Kafka delays every answer to a failed authentication and the close
/// that follows it.
fn after_failure_delay(response: Response) -> Responder {
    Box::pin(async move {
        glommio::timer::sleep(FAILED_AUTHENTICATION_DELAY).await;
        response
    })
}

/// Kafka's answer to an ApiVersions or SaslHandshake in the middle of an
/// exchange: ILLEGAL_SASL_STATE and nothing else (Kafka answers any request
/// so; this broker only these two, and closes the connection after either).
fn illegal_state_answer(api_key: ApiKey, version: i16, correlation_id: i32) -> Option<Response> {
    let code = ErrorCode::IllegalSaslState.code();
    match api_key {
        ApiKey::SaslHandshake => Some(handlers::sasl::illegal_state_handshake(
            version,
            correlation_id,
        )),
        ApiKey::ApiVersions => {
            let mut response = kafka_protocol::messages::ApiVersionsResponse::default();
            response.error_code = code;
            Some(encode_response(api_key, version, correlation_id, &response))
        }
        _ => None,
    }
}

/// One connection's authentication.
pub struct Authenticator {
    state: State,
    mechanisms: Arc<[SaslMechanism]>,
    plain_users: Arc<PlainUsers>,
    oauthbearer: Option<Arc<Validator>>,
    /// `connections.max.reauth.ms`: how long a session lasts (0: forever).
    session_lifetime: Duration,
    /// The mechanism of the exchange in progress or of the session.
    mechanism: Option<SaslMechanism>,
    /// When the session ends unless renewed.
    session_expires: Option<Instant>,
    /// While re-authenticating: the session's mechanism and user.
    renewing: Option<(SaslMechanism, String)>,
    /// When the last re-authentication began.
    last_renewal: Option<Instant>,
    /// The session logged in with a delegation token.
    token_authenticated: bool,
    /// `delegation.token.*`, for token logins.
    tokens: Arc<TokenConfig>,
}

impl Authenticator {
    /// A connection that must authenticate with one of `mechanisms`, listed
    /// in this order in the handshake's answer; PLAIN's users are
    /// `plain_users`; OAUTHBEARER tokens are checked by `oauthbearer`.
    /// A session lasts `session_lifetime` (zero: forever), and an
    /// OAUTHBEARER or delegation-token one no longer than its token.
    pub fn new(
        mechanisms: Arc<[SaslMechanism]>,
        plain_users: Arc<PlainUsers>,
        oauthbearer: Option<Arc<Validator>>,
        tokens: Arc<TokenConfig>,
        session_lifetime: Duration,
    ) -> Self {
        Authenticator {
            state: State::Initial,
            mechanisms,
            plain_users,
            oauthbearer,
            session_lifetime,
            mechanism: None,
            session_expires: None,
            renewing: None,
            last_renewal: None,
            token_authenticated: false,
            tokens,
        }
    }

    /// The session has outlived its lifetime without being renewed.
    pub fn session_expired(&self) -> bool {
        self.session_expires
            .is_some_and(|expires| Instant::now() > expires)
    }

    /// Begins a re-authentication, whose SaslHandshake is the next frame
    /// to handle, if the session has a lifetime and the last one began at
    /// least a second ago; false (the handshake is then answered as any
    /// request) otherwise.
    pub fn begin_reauthentication(&mut self) -> bool {
        let now = Instant::now();
        if self.session_expires.is_none()
            || self
                .last_renewal
                .is_some_and(|last| now.duration_since(last) < REAUTHENTICATION_INTERVAL_MIN)
        {
            return false;
        }
        let (State::Complete(user), Some(mechanism)) = (&self.state, self.mechanism) else {
            return false;
        };
        self.renewing = Some((mechanism, user.clone()));
        self.last_renewal = Some(now);
        self.state = State::Handshake;
        true
    }

    /// "authentication" or "re-authentication", as Kafka's messages say.
    fn which(&self) -> &'static str {
        if self.renewing.is_some() {
            "re-authentication"
        } else {
            "authentication"
        }
    }

    /// The session logged in with a delegation token (Kafka's
    /// `KafkaPrincipal.tokenAuthenticated`).
    pub fn token_authenticated(&self) -> bool {
        self.token_authenticated
    }

    /// The authenticated user, once there is one.
    pub fn user(&self) -> Option<&str> {
        match &self.state {
            State::Complete(user) => Some(user),
            _ => None,
        }
    }

    /// Handles one frame (size prefix excluded) received before
    /// authentication completed.
    pub fn handle(&mut self, frame: Bytes, image: &MetadataImage) -> Step {
        match self.state {
            State::Exchange { headers: false, .. } => return self.bare_token(&frame, image),
            State::BadMechanism => {
                return Step::AnswerThenClose(
                    after_failure_delay(Response::None),
                    "SASL mechanism changed in re-authentication",
                )
            }
            _ => {}
        }
        let (api_key_raw, version, correlation_id) = frame_prefix(&frame);
        let Ok(api_key) = ApiKey::try_from(api_key_raw) else {
            return Step::Close("not a Kafka request during SASL authentication");
        };
        let expected = match self.state {
            State::Initial => api_key == ApiKey::ApiVersions || api_key == ApiKey::SaslHandshake,
            State::Handshake => api_key == ApiKey::SaslHandshake,
            _ => api_key == ApiKey::SaslAuthenticate,
        };
        if !expected {
            let in_exchange = matches!(self.state, State::Exchange { .. });
            if in_exchange && versions::is_served(api_key, version) {
                if let Some(answer) = illegal_state_answer(api_key, version, correlation_id) {
                    return Step::AnswerThenClose(
                        after_failure_delay(answer),
                        "unexpected request during SASL authentication",
                    );
                }
            }
            return Step::Close("unexpected request during SASL authentication");
        }
        if !versions::is_served(api_key, version) {
            if api_key == ApiKey::ApiVersions {
                let answer = handlers::api_versions::unsupported_version_response(correlation_id);
                return Step::Answer(handlers::ready(answer));
            }
            return Step::Close("unsupported version during SASL authentication");
        }
        let mut body = frame;
        let Ok(header) = RequestHeader::decode(&mut body, api_key.request_header_version(version))
        else {
            return Step::Close("malformed request header");
        };
        let correlation_id = header.correlation_id;
        match api_key {
            ApiKey::ApiVersions => {
                let Ok(request) = ApiVersionsRequest::decode(&mut body, version) else {
                    return Step::Close("malformed request body");
                };
                self.state = State::Handshake;
                Step::Answer(handlers::ready(handlers::api_versions::handle(
                    request,
                    version,
                    correlation_id,
                    image,
                )))
            }
            ApiKey::SaslHandshake => {
                let Ok(request) = SaslHandshakeRequest::decode(&mut body, version) else {
                    return Step::Close("malformed request body");
                };
                let mut response = SaslHandshakeResponse::default();
                response.mechanisms = self
                    .mechanisms
                    .iter()
                    .map(|m| str_bytes(m.name()))
                    .collect();
                let wanted = SaslMechanism::from_name(request.mechanism.as_str())
                    .filter(|m| self.mechanisms.contains(m))
                    .filter(|m| *m != SaslMechanism::OAuthBearer || self.oauthbearer.is_some());
                let Some(mechanism) = wanted else {
                    response.error_code = ErrorCode::UnsupportedSaslMechanism.code();
                    let answer =
                        encode_response(ApiKey::SaslHandshake, version, correlation_id, &response);
                    return Step::AnswerThenClose(
                        after_failure_delay(answer),
                        "unsupported SASL mechanism",
                    );
                };
                if let Some((previous, _)) = &self.renewing {
                    if *previous != mechanism {
                        tracing::info!(
                            requested = mechanism.name(),
                            previous = previous.name(),
                            "SASL mechanism changed in re-authentication"
                        );
                        self.state = State::BadMechanism;
                        return Step::Answer(handlers::ready(encode_response(
                            ApiKey::SaslHandshake,
                            version,
                            correlation_id,
                            &response,
                        )));
                    }
                }
                self.mechanism = Some(mechanism);
                let exchange = match mechanism {
                    SaslMechanism::Plain => Exchange::Plain,
                    SaslMechanism::Scram(scram) => Exchange::Scram {
                        server: ScramServer::new(scram),
                        started: false,
                    },
                    SaslMechanism::OAuthBearer => Exchange::OAuthBearer { error: None },
                };
                self.state = State::Exchange {
                    headers: version >= 1,
                    exchange,
                };
                Step::Answer(handlers::ready(encode_response(
                    ApiKey::SaslHandshake,
                    version,
                    correlation_id,
                    &response,
                )))
            }
            _ => {
                let Ok(request) = SaslAuthenticateRequest::decode(&mut body, version) else {
                    return Step::Close("malformed request body");
                };
                let mut response = SaslAuthenticateResponse::default();
                match self.exchange(&request.auth_bytes, image) {
                    Ok((token, lifetime)) => {
                        response.auth_bytes = Bytes::from(token);
                        response.session_lifetime_ms = lifetime;
                        Step::Answer(handlers::ready(encode_response(
                            ApiKey::SaslAuthenticate,
                            version,
                            correlation_id,
                            &response,
                        )))
                    }
                    Err(Failure::Close(reason)) => Step::Close(reason),
                    Err(Failure::Told(message)) => {
                        response.error_code = ErrorCode::SaslAuthenticationFailed.code();
                        response.error_message = Some(str_bytes(&message));
                        let answer = encode_response(
                            ApiKey::SaslAuthenticate,
                            version,
                            correlation_id,
                            &response,
                        );
                        Step::AnswerThenClose(
                            after_failure_delay(answer),
                            "SASL authentication failed",
                        )
                    }
                }
            }
        }
    }

    /// A token of an exchange begun with a v0 handshake.
    fn bare_token(&mut self, token: &[u8], image: &MetadataImage) -> Step {
        match self.exchange(token, image) {
            Ok((answer, _)) => {
                let mut frame = BytesMut::with_capacity(4 + answer.len());
                frame.put_u32(answer.len() as u32);
                frame.put_slice(&answer);
                Step::Answer(handlers::ready(Response::Frame(frame.freeze())))
            }
            // No answer after a v0 handshake: the connection is closed,
            // after the delay as any failed authentication.
            Err(Failure::Close(reason)) => Step::Close(reason),
            Err(Failure::Told(_)) => Step::AnswerThenClose(
                after_failure_delay(Response::None),
                "SASL authentication failed",
            ),
        }
    }

    /// Feeds the next client message to the exchange: the answer, and the
    /// session lifetime to tell the client (0 until authenticated, and for
    /// a session without end); Err is how it fails.
    fn exchange(&mut self, token: &[u8], image: &MetadataImage) -> Result<(Vec<u8>, i64), Failure> {
        let which = self.which();
        let State::Exchange { exchange, .. } = &mut self.state else {
            unreachable!("exchange outside the exchange state");
        };
        // When an OAUTHBEARER or delegation token expires, in ms since the
        // epoch.
        let mut credential_expires_ms = None;
        // A delegation token login.
        let mut token_login = false;
        let (answer, user, mechanism) = match exchange {
            Exchange::Plain => {
                let user = self.plain_users.authenticate(token).map_err(|message| {
                    tracing::info!(reason = %message, mechanism = "PLAIN", "SASL authentication failed");
                    Failure::Told(message)
                })?;
                (Vec::new(), Some(user), SaslMechanism::Plain)
            }
            Exchange::Scram { server, started } => {
                let mechanism = server.mechanism();
                let (answer, login) =
                    scram_step(server, started, token, image, &self.tokens, which)?;
                let user = login.map(|login| {
                    credential_expires_ms = login.expires_ms;
                    token_login = login.token;
                    login.principal
                });
                (answer, user, SaslMechanism::Scram(mechanism))
            }
            Exchange::OAuthBearer { error } => {
                let validator = self
                    .oauthbearer
                    .as_deref()
                    .ok_or(Failure::Close("OAUTHBEARER is not configured"))?;
                match oauthbearer_step(validator, error, token, which)? {
                    Some(validated) => {
                        credential_expires_ms = Some(validated.expires_at_ms);
                        (
                            Vec::new(),
                            Some(validated.principal),
                            SaslMechanism::OAuthBearer,
                        )
                    }
                    None => {
                        let challenge = error.clone().unwrap_or_default().into_bytes();
                        return Ok((challenge, 0));
                    }
                }
            }
        };
        if let Some(user) = user {
            if let Some((_, previous)) = self.renewing.take() {
                if previous != user {
                    tracing::info!(%previous, %user, "SASL re-authentication as another user");
                    return Err(Failure::Told(format!(
                        "Cannot change principals during re-authentication from User.{previous}: User.{user}"
                    )));
                }
            }
            tracing::debug!(%user, mechanism = mechanism.name(), which, "SASL authentication succeeded");
            let lifetime_ms = session_lifetime_ms(
                credential_expires_ms,
                self.session_lifetime,
                oauthbearer::now_ms(),
            );
            self.session_expires = lifetime_ms
                .map(|ms| Instant::now() + Duration::from_millis(u64::try_from(ms).unwrap_or(0)));
            self.state = State::Complete(user);
            self.token_authenticated = token_login;
            return Ok((answer, lifetime_ms.unwrap_or(0)));
        }
        Ok((answer, 0))
    }
}

/// How long a new session lasts, as Kafka's `SaslServerAuthenticator`
/// reckons it: no longer than `connections.max.reauth.ms` (when set) nor
/// than the credential (an OAUTHBEARER token) is valid; None: no end.
fn session_lifetime_ms(
    credential_expires_ms: Option<i64>,
    max_reauth: Duration,
    now_ms: i64,
) -> Option<i64> {
    let max_reauth_ms =
        (!max_reauth.is_zero()).then(|| i64::try_from(max_reauth.as_millis()).unwrap_or(i64::MAX));
    let credential_ms = credential_expires_ms.map(|expires| expires.saturating_sub(now_ms));
    let lifetime = match (credential_ms, max_reauth_ms) {
        (None, None) => return None,
        (Some(ms), None) | (None, Some(ms)) => ms,
        (Some(a), Some(b)) => a.min(b),
    };
    Some(lifetime.max(0))
}

/// Feeds the next client message to an OAUTHBEARER exchange, as Kafka's
/// `OAuthBearerSaslServer`: the token's principal and expiry when it is
/// valid; None when it is not, with the challenge (RFC 7628's error JSON)
/// kept in `error` to send; a lone 0x01 after a challenge fails with it.
fn oauthbearer_step(
    validator: &Validator,
    error: &mut Option<String>,
    message: &[u8],
    which: &str,
) -> Result<Option<oauthbearer::Validated>, Failure> {
    if message == [0x01] {
        if let Some(challenge) = error.take() {
            tracing::info!(
                mechanism = "OAUTHBEARER",
                "SASL authentication failed: the token was refused"
            );
            return Err(Failure::Told(challenge));
        }
    }
    *error = None;
    let invalid = || Failure::Told(invalid_credentials(which, "OAUTHBEARER"));
    let first = match oauthbearer::parse_client_first(message) {
        Ok(first) => first,
        Err(oauthbearer::Malformed::NotBearer) => {
            return Err(Failure::Close(
                "an OAUTHBEARER message without a Bearer token",
            ))
        }
        Err(oauthbearer::Malformed::Invalid) => {
            tracing::info!(
                mechanism = "OAUTHBEARER",
                "SASL authentication failed: invalid client first message"
            );
            return Err(invalid());
        }
    };
    match validator.validate(&first.token, oauthbearer::now_ms()) {
        oauthbearer::Outcome::Close => Err(Failure::Close(
            "an OAUTHBEARER token Kafka fails on unanswered",
        )),
        oauthbearer::Outcome::Rejected(rejected) => {
            tracing::info!(mechanism = "OAUTHBEARER", reason = %rejected.reason, "SASL token refused");
            *error = Some(rejected.challenge());
            Ok(None)
        }
        oauthbearer::Outcome::Valid(validated) => {
            if let Some(authzid) = &first.authzid {
                if *authzid != validated.principal {
                    return Err(Failure::Told(format!(
                        "Authentication failed: Client requested an authorization id ({authzid}) that is different from the token's principal name ({})",
                        validated.principal
                    )));
                }
            }
            // Kafka's validators take every extension; none is used here.
            Ok(Some(validated))
        }
    }
}

/// Feeds the next client message to a SCRAM exchange: the answer, and the
/// user once authenticated; Err is the message to answer the failure with
/// (`which` names the authentication or re-authentication in it).
fn scram_step(
    server: &mut ScramServer,
    started: &mut bool,
    token: &[u8],
    image: &MetadataImage,
    tokens: &TokenConfig,
    which: &str,
) -> Result<(Vec<u8>, Option<ScramLogin>), String> {
    let mechanism = server.mechanism();
    let outcome = if *started {
        server
            .client_final(token)
            .map(|(answer, login)| (answer, Some(login)))
    } else {
        *started = true;
        // Without randomness from the OS the exchange fails as any other
        // would (Kafka's SaslException), the broker serving on.
        server_nonce()
            .map_err(|_| ScramFailure::Invalid("no random bytes for a server nonce"))
            .and_then(|nonce| {
                server.client_first(token, &nonce, |user, token| {
                    scram_login(image, tokens, user, token, mechanism)
                })
            })
            .map(|answer| (answer, None))
    };
    outcome.map_err(|failure| match failure {
        ScramFailure::Told(message) => message.to_string(),
        ScramFailure::Invalid(reason) => {
            tracing::info!(
                reason,
                mechanism = mechanism.name(),
                "SASL authentication failed"
            );
            invalid_credentials(which, mechanism.name())
        }
    })
}

/// The login of a SCRAM user name: a user's credential, or, for a token
/// login, the delegation token of that id (Kafka's `DelegationTokenCache`:
/// the session is its owner's and lasts no longer than the token; a token
/// past its expiry but not yet swept still logs in, as in Kafka, for a
/// session of no time at all).
fn scram_login(
    image: &MetadataImage,
    tokens: &TokenConfig,
    user: &str,
    token: bool,
    mechanism: ScramMechanism,
) -> Option<ScramLogin> {
    if token {
        // Disabled, or made under another key and not yet made afresh:
        // unknown.
        let token = image
            .delegation_tokens
            .get(user)
            .filter(|token| tokens.signs(token))?;
        return Some(ScramLogin {
            credential: token.credentials.get(&mechanism)?.clone(),
            principal: token.owner_name().to_string(),
            expires_ms: Some(token.expiry_timestamp_ms),
            token: true,
        });
    }
    Some(ScramLogin {
        credential: (**image.scram_credential(user, mechanism)?).clone(),
        principal: user.to_string(),
        expires_ms: None,
        token: false,
    })
}

/// Kafka's message for a login refused for its credentials, `which` being
/// "authentication" or "re-authentication".
fn invalid_credentials(which: &str, mechanism: &str) -> String {
    format!(
        "Authentication failed during {which} due to invalid credentials with SASL mechanism {mechanism}"
    )
}
