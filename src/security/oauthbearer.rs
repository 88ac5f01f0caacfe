//! SASL/OAUTHBEARER (RFC 7628, KIP-255, KIP-768) as Kafka 4.1's
//! `OAuthBearerSaslServer` serves it, with either of Kafka's two server
//! validators:
//!
//! - **unsecured** (Kafka's default `OAuthBearerUnsecuredValidatorCallbackHandler`,
//!   for development): unsigned JWTs (`alg` `none`), options from the
//!   `OAuthBearerLoginModule` JAAS entry (`unsecuredValidatorPrincipalClaimName`,
//!   `unsecuredValidatorScopeClaimName`, `unsecuredValidatorRequiredScope`,
//!   `unsecuredValidatorAllowableClockSkewMs`);
//! - **signed** (Kafka's `OAuthBearerValidatorCallbackHandler` with its
//!   `BrokerJwtValidator`): JWTs signed by a key of the identity provider's
//!   JWKS (`sasl.oauthbearer.jwks.endpoint.url`, an `http(s)` URL polled
//!   every `sasl.oauthbearer.jwks.endpoint.refresh.ms` and at once for a
//!   key id it has not seen, or a `file:` URL read at start-up), checked
//!   against `sasl.oauthbearer.expected.audience`,
//!   `sasl.oauthbearer.expected.issuer`, `sasl.oauthbearer.sub.claim.name`
//!   and `sasl.oauthbearer.clock.skew.seconds`.
//!
//! What each accepts and refuses was measured on Kafka 4.1.1; the choices
//! that differ are named where they are made. The JWKS fetches happen on a
//! thread of their own, never on a shard's executor.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};

use super::plain::LoginModule;

/// The JAAS login module of OAUTHBEARER.
pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// Kafka's least time between two key-id-triggered JWKS fetches for the
/// same key id (`RefreshingHttpsJwks.MISSING_KEY_ID_CACHE_IN_FLIGHT_MS`).
const MISSING_KEY_ID_INTERVAL: Duration = Duration::from_secs(60);
/// How many missing key ids are remembered for that (Kafka's
/// `MISSING_KEY_ID_CACHE_MAX_ENTRIES`).
const MISSING_KEY_IDS_MAX: usize = 16;
/// Key ids longer than this never trigger a fetch (Kafka's
/// `MISSING_KEY_ID_MAX_KEY_LENGTH`).
const MISSING_KEY_ID_LENGTH_MAX: usize = 1000;
/// The least time between two key-id-triggered fetches, whatever the key
/// ids: tokens naming made-up key ids (which anyone can send, before any
/// signature is checked) cost the identity provider one request a second
/// at most, and never crowd out the fetch a real new key needs.
const MISSING_KEY_FETCH_INTERVAL: Duration = Duration::from_secs(1);
/// The largest JWKS document taken.
const JWKS_BYTES_MAX: u64 = 1 << 20;
/// How long one JWKS request may take.
const JWKS_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The client's first message, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The authorization id of the GS2 header (`a=...`), as sent.
    pub authzid: Option<String>,
    /// The bearer token.
    pub token: String,
    /// SASL extensions (KIP-342), every key/value pair but `auth`.
    pub extensions: Vec<(String, String)>,
}

/// Why a client message is refused before any token is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// Not an OAUTHBEARER client first message: answered
    /// SASL_AUTHENTICATION_FAILED.
    Invalid,
    /// A scheme other than `Bearer`: Kafka fails there with an exception
    /// it does not answer, and closes the connection.
    NotBearer,
}

fn client_first_pattern() -> &'static regex::bytes::Regex {
    static PATTERN: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| {
        // Kafka's OAuthBearerClientInitialResponse: the "n" GS2 flag, an
        // optional authzid (SASLNAME), then key=value pairs each ended by
        // 0x01, and a final 0x01.
        regex::bytes::Regex::new(
            r"(?-u)\An,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=(?:2C|3D))+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01\z",
        )
        .expect("valid pattern")
    })
}

fn auth_pattern() -> &'static regex::Regex {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| {
        regex::Regex::new(r"\A([0-9A-Za-z_]+) +([-_~+/.a-zA-Z0-9]+=*)\z").expect("valid pattern")
    })
}

/// Parses the client's first message as Kafka does.
///
/// # Errors
/// A message Kafka refuses, and how it refuses it.
pub fn parse_client_first(message: &[u8]) -> Result<ClientFirst, Malformed> {
    let captures = client_first_pattern()
        .captures(message)
        .ok_or(Malformed::Invalid)?;
    // Both groups are ASCII by the pattern.
    let text = |i: usize| {
        captures
            .get(i)
            .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
    };
    let authzid = text(1);
    let pairs = text(2).unwrap_or_default();
    // Kafka's Utils.parseMap: split at the first '='; a repeated key's last
    // value stands.
    let mut map: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for pair in pairs.split('\u{1}').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').ok_or(Malformed::Invalid)?;
        map.insert(key, value);
    }
    let auth = map.remove("auth").ok_or(Malformed::Invalid)?;
    let auth_captures = auth_pattern().captures(auth).ok_or(Malformed::Invalid)?;
    if !auth_captures[1].eq_ignore_ascii_case("bearer") {
        return Err(Malformed::NotBearer);
    }
    Ok(ClientFirst {
        authzid,
        token: auth_captures[2].to_string(),
        extensions: map
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    })
}

/// A token that passed: whose it is and until when.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// The principal's name (the sub claim, or the configured one).
    pub principal: String,
    /// When the token expires, in milliseconds since the epoch.
    pub expires_at_ms: i64,
    /// Its scope.
    pub scope: Vec<String>,
}

/// A token that did not pass: the error the challenge names (RFC 7628
/// 3.2.2), and why (logged, never sent, as Kafka).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// `invalid_token` or `insufficient_scope`.
    pub status: &'static str,
    /// The scope that was needed, as Kafka prints a list (`[a, b]`).
    pub scope: Option<String>,
    /// Why, for the log.
    pub reason: String,
}

impl Rejected {
    fn invalid(reason: impl Into<String>) -> Self {
        Rejected {
            status: "invalid_token",
            scope: None,
            reason: reason.into(),
        }
    }

    /// The challenge sent back, byte for byte as Kafka builds it.
    pub fn challenge(&self) -> String {
        let mut json = format!("{{\"status\":\"{}\"", self.status);
        if let Some(scope) = &self.scope {
            json.push_str(&format!(", \"scope\":\"{scope}\""));
        }
        json.push('}');
        json
    }
}

/// What a token check ends in.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Valid.
    Valid(Validated),
    /// Not valid: the client is sent the challenge.
    Rejected(Rejected),
    /// A token Kafka fails on with an exception it does not answer (an
    /// unsecured token whose header has no `alg`): the connection is closed.
    Close,
}

/// The unsecured validator's options (JAAS options of the
/// `OAuthBearerLoginModule` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredOptions {
    /// `unsecuredValidatorPrincipalClaimName` (sub).
    pub principal_claim: String,
    /// `unsecuredValidatorScopeClaimName` (scope).
    pub scope_claim: String,
    /// `unsecuredValidatorRequiredScope`, space-separated.
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (0).
    pub clock_skew_ms: i64,
}

impl Default for UnsecuredOptions {
    fn default() -> Self {
        UnsecuredOptions {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            required_scope: Vec::new(),
            clock_skew_ms: 0,
        }
    }
}

impl UnsecuredOptions {
    /// The options of the `OAuthBearerLoginModule` entries among `modules`
    /// (the first entry naming an option wins, as Kafka's
    /// `JaasContext.configEntryOption`).
    ///
    /// # Errors
    /// No such entry, or an option Kafka would refuse.
    pub fn from_modules(modules: &[LoginModule]) -> Result<Self, String> {
        let entries: Vec<&LoginModule> = modules
            .iter()
            .filter(|m| m.class == OAUTHBEARER_LOGIN_MODULE)
            .collect();
        if entries.is_empty() {
            return Err(format!(
                "no {OAUTHBEARER_LOGIN_MODULE} entry in the JAAS configuration"
            ));
        }
        let option = |name: &str| {
            entries.iter().find_map(|m| {
                m.options
                    .iter()
                    .rev()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            })
        };
        let mut options = UnsecuredOptions::default();
        if let Some(v) = option("unsecuredValidatorPrincipalClaimName") {
            let v = v.trim();
            if !v.is_empty() {
                options.principal_claim = v.to_string();
            }
        }
        if let Some(v) = option("unsecuredValidatorScopeClaimName") {
            let v = v.trim();
            if !v.is_empty() {
                options.scope_claim = v.to_string();
            }
        }
        if let Some(v) = option("unsecuredValidatorRequiredScope") {
            for item in v.split(' ').filter(|s| !s.is_empty()) {
                // RFC 6749 3.3 scope-token characters.
                if !item
                    .bytes()
                    .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
                {
                    return Err(format!(
                        "unsecuredValidatorRequiredScope: invalid scope value {item:?}"
                    ));
                }
                options.required_scope.push(item.to_string());
            }
        }
        if let Some(v) = option("unsecuredValidatorAllowableClockSkewMs") {
            options.clock_skew_ms = v
                .trim()
                .parse::<i32>()
                .ok()
                .filter(|ms| *ms >= 0)
                .ok_or_else(|| {
                    format!("unsecuredValidatorAllowableClockSkewMs: {v:?} is not a non-negative integer")
                })?
                .into();
        }
        Ok(options)
    }
}

/// The signed validator's settings (Kafka's `sasl.oauthbearer.*` broker
/// configs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedOptions {
    /// `sasl.oauthbearer.jwks.endpoint.url`.
    pub jwks_endpoint_url: String,
    /// `sasl.oauthbearer.jwks.endpoint.refresh.ms` (3600000).
    pub jwks_refresh: Duration,
    /// `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms` (100).
    pub jwks_retry_backoff: Duration,
    /// `sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms` (10000): how
    /// long one fetch is retried for.
    pub jwks_retry_backoff_max: Duration,
    /// `sasl.oauthbearer.expected.audience`: empty takes only tokens
    /// without an audience.
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name` (sub).
    pub sub_claim: String,
    /// `sasl.oauthbearer.scope.claim.name` (scope).
    pub scope_claim: String,
    /// `sasl.oauthbearer.clock.skew.seconds` (30).
    pub clock_skew_seconds: i64,
}

/// Where the signing keys come from, and the keys.
pub struct KeySource {
    keys: RwLock<Arc<JwkSet>>,
    /// Asks the fetching thread for a fetch because of this key id (an
    /// http(s) endpoint only).
    missing: Option<SyncSender<String>>,
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = self.current();
        f.debug_struct("KeySource")
            .field("keys", &keys.keys.len())
            .finish()
    }
}

impl KeySource {
    /// The keys as they are now.
    pub fn current(&self) -> Arc<JwkSet> {
        match self.keys.read() {
            Ok(keys) => keys.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn replace(&self, keys: JwkSet) {
        let keys = Arc::new(keys);
        match self.keys.write() {
            Ok(mut slot) => *slot = keys,
            Err(poisoned) => *poisoned.into_inner() = keys,
        }
    }

    /// Keys that never change (tests, a `file:` URL).
    pub fn fixed(keys: JwkSet) -> Self {
        KeySource {
            keys: RwLock::new(Arc::new(keys)),
            missing: None,
        }
    }

    fn key_id_missing(&self, kid: &str) {
        if let Some(sender) = &self.missing {
            if kid.len() <= MISSING_KEY_ID_LENGTH_MAX {
                // A full queue means fetches are already asked for.
                let _ = sender.try_send(kid.to_string());
            }
        }
    }
}

/// Reads a JWKS document.
///
/// # Errors
/// Not JSON, or not a key set.
pub fn parse_jwks(text: &str) -> Result<JwkSet, String> {
    // Keys of kinds this broker cannot use (e.g. "oct") are skipped rather
    // than failing the whole set.
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let keys = value
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("no \"keys\" array")?;
    let keys = keys
        .iter()
        .filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok())
        .collect();
    Ok(JwkSet { keys })
}

fn fetch_jwks(agent: &ureq::Agent, url: &str) -> Result<JwkSet, String> {
    use std::io::Read;
    let response = agent.get(url).call().map_err(|e| e.to_string())?;
    let mut text = String::new();
    response
        .into_reader()
        .take(JWKS_BYTES_MAX)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    parse_jwks(&text)
}

/// Fetches with retries: waits `backoff`, doubling, while within `budget`
/// (Kafka's `Retry`).
fn fetch_with_retries(
    agent: &ureq::Agent,
    url: &str,
    backoff: Duration,
    budget: Duration,
) -> Result<JwkSet, String> {
    let started = Instant::now();
    let mut wait = backoff;
    loop {
        match fetch_jwks(agent, url) {
            Ok(keys) => return Ok(keys),
            Err(error) => {
                if started.elapsed() + wait > budget {
                    return Err(error);
                }
                tracing::warn!(%url, %error, "JWKS fetch failed; retrying");
                std::thread::sleep(wait);
                wait = wait.saturating_mul(2);
            }
        }
    }
}

/// The keys of `options.jwks_endpoint_url`: a `file:` URL is read now, an
/// http(s) one fetched now and then kept fresh by a thread of its own.
///
/// # Errors
/// The keys cannot be had now (the broker does not start, as Kafka's
/// "Could not refresh JWKS").
pub fn key_source(options: &SignedOptions) -> Result<Arc<KeySource>, String> {
    let url = options.jwks_endpoint_url.trim();
    if let Some(path) = url.strip_prefix("file:") {
        // file:/path and file:///path both name /path.
        let path = path.strip_prefix("//").unwrap_or(path);
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let keys = parse_jwks(&text).map_err(|e| format!("{path}: {e}"))?;
        return Ok(Arc::new(KeySource::fixed(keys)));
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!("{url:?} is not an http, https or file URL"));
    }
    let agent = ureq::AgentBuilder::new()
        .timeout(JWKS_REQUEST_TIMEOUT)
        .build();
    let keys = fetch_with_retries(
        &agent,
        url,
        options.jwks_retry_backoff,
        options.jwks_retry_backoff_max,
    )
    .map_err(|e| format!("Could not refresh JWKS from {url}: {e}"))?;
    let (sender, receiver) = sync_channel(MISSING_KEY_IDS_MAX);
    let source = Arc::new(KeySource {
        keys: RwLock::new(Arc::new(keys)),
        missing: Some(sender),
    });
    let refreshed = Arc::downgrade(&source);
    let url = url.to_string();
    let (refresh, backoff, budget) = (
        options.jwks_refresh,
        options.jwks_retry_backoff,
        options.jwks_retry_backoff_max,
    );
    // The thread must not take the SIGTERM and SIGINT the main thread
    // waits for (a signal a thread leaves unblocked ends the process):
    // it starts with them blocked, as the executor threads do.
    let mut shutdown_signals = nix::sys::signal::SigSet::empty();
    shutdown_signals.add(nix::sys::signal::Signal::SIGTERM);
    shutdown_signals.add(nix::sys::signal::Signal::SIGINT);
    let previous_mask = shutdown_signals
        .thread_swap_mask(nix::sys::signal::SigmaskHow::SIG_BLOCK)
        .map_err(|e| format!("cannot block signals for the JWKS thread: {e}"))?;
    let spawned =
        std::thread::Builder::new()
            .name("jwks-refresh".into())
            .spawn(move || {
                refresh_keys(&agent, &url, &receiver, refresh, backoff, budget, |keys| {
                    match refreshed.upgrade() {
                        Some(source) => {
                            source.replace(keys);
                            true
                        }
                        None => false,
                    }
                });
            });
    let restored = previous_mask.thread_set_mask();
    spawned.map_err(|e| format!("cannot start the JWKS thread: {e}"))?;
    restored.map_err(|e| format!("cannot restore the signal mask: {e}"))?;
    Ok(source)
}

/// The fetching thread: every `refresh`, and at once for a key id not seen
/// in the last minute; runs until the source is gone.
fn refresh_keys(
    agent: &ureq::Agent,
    url: &str,
    missing: &Receiver<String>,
    refresh: Duration,
    backoff: Duration,
    budget: Duration,
    mut publish: impl FnMut(JwkSet) -> bool,
) {
    // Key ids fetched for lately (Kafka's cache of 16, the oldest evicted).
    let mut asked: HashMap<String, Instant> = HashMap::new();
    let mut next = Instant::now() + refresh;
    let mut last_key_fetch: Option<Instant> = None;
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        match missing.recv_timeout(wait) {
            Ok(kid) => {
                let now = Instant::now();
                asked.retain(|_, at| now.duration_since(*at) < MISSING_KEY_ID_INTERVAL);
                if asked.contains_key(&kid) {
                    continue;
                }
                if asked.len() >= MISSING_KEY_IDS_MAX {
                    if let Some(oldest) = asked
                        .iter()
                        .min_by_key(|(_, at)| **at)
                        .map(|(k, _)| k.clone())
                    {
                        asked.remove(&oldest);
                    }
                }
                asked.insert(kid.clone(), now);
                if let Some(last) = last_key_fetch {
                    let since = now.duration_since(last);
                    if since < MISSING_KEY_FETCH_INTERVAL {
                        std::thread::sleep(MISSING_KEY_FETCH_INTERVAL - since);
                    }
                }
                // One fetch answers every key id asked for meanwhile.
                while let Ok(other) = missing.try_recv() {
                    if asked.len() < MISSING_KEY_IDS_MAX {
                        asked.entry(other).or_insert(now);
                    }
                }
                last_key_fetch = Some(Instant::now());
                tracing::info!(%url, %kid, "fetching the JWKS for a key id it did not have");
            }
            Err(RecvTimeoutError::Timeout) => next = Instant::now() + refresh,
            Err(RecvTimeoutError::Disconnected) => return,
        }
        match fetch_with_retries(agent, url, backoff, budget) {
            Ok(keys) => {
                if !publish(keys) {
                    return;
                }
            }
            Err(error) => {
                tracing::warn!(%url, %error, "JWKS refresh failed; the keys fetched before stay in use")
            }
        }
    }
}

/// How OAUTHBEARER tokens are checked on this broker.
#[derive(Debug)]
pub enum Validator {
    /// Unsigned tokens (Kafka's default, for development).
    Unsecured(UnsecuredOptions),
    /// Tokens signed by the identity provider's keys.
    Signed {
        /// The settings.
        options: SignedOptions,
        /// The keys.
        keys: Arc<KeySource>,
    },
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Validator {
    /// Checks `token` at `now_ms`.
    pub fn validate(&self, token: &str, now_ms: i64) -> Outcome {
        match self {
            Validator::Unsecured(options) => validate_unsecured(options, token, now_ms),
            Validator::Signed { options, keys } => validate_signed(options, keys, token, now_ms),
        }
    }
}

/// Decodes a JWT part: base64url without padding, as JWTs are written;
/// the standard alphabet and padding are taken too.
fn decode_part(part: &str) -> Option<Map<String, Value>> {
    let trimmed = part.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(trimmed)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed))
        .ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// A NumericDate claim (seconds, maybe with a fraction) in milliseconds.
fn millis(value: &Value) -> Option<i64> {
    let seconds = value.as_f64()?;
    let ms = (seconds * 1000.0).round();
    (ms.is_finite() && ms.abs() < 9.0e18).then_some(ms as i64)
}

/// Kafka's `OAuthBearerUnsecuredJws` and `OAuthBearerValidationUtils`.
/// Differs in one corner: Kafka decodes the parts with Java's standard
/// base64 decoder, so a token whose base64url has '-' or '_' (depending on
/// its claims) fails there; here it is decoded.
fn validate_unsecured(options: &UnsecuredOptions, token: &str, now_ms: i64) -> Outcome {
    let reject = |reason: &str| Outcome::Rejected(Rejected::invalid(reason));
    if token.contains("..") {
        return reject("Malformed compact serialization contains '..'");
    }
    let parts: Vec<&str> = token.splitn(4, '.').collect();
    if parts.len() != 3 {
        return reject(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values",
        );
    }
    let (Some(header), Some(claims)) = (decode_part(parts[0]), decode_part(parts[1])) else {
        return reject("malformed Base64 URL encoded value or malformed JSON");
    };
    match header.get("alg") {
        None | Some(Value::Null) => return Outcome::Close,
        Some(Value::String(alg)) if alg == "none" => {}
        Some(_) => return reject("Unsecured JWS must have 'none' for an algorithm"),
    }
    if !parts[2].is_empty() {
        return reject("Unsecured JWS must not contain a digital signature");
    }
    let scope = match claims.get(&options.scope_claim) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => {
            let s = s.trim();
            if s.is_empty() {
                Vec::new()
            } else {
                vec![s.to_string()]
            }
        }
        Some(Value::Array(items)) => {
            let mut scope = Vec::new();
            for item in items {
                match item {
                    Value::Null => {}
                    Value::String(s) if !s.trim().is_empty() => scope.push(s.trim().to_string()),
                    Value::String(_) => {}
                    // Kafka fails on it with an exception it does not
                    // answer (ClassCastException).
                    _ => return Outcome::Close,
                }
            }
            scope
        }
        Some(_) => return reject("scope claim is not a string or a list"),
    };
    let expires_at_ms = match claims.get("exp") {
        None | Some(Value::Null) => return reject("No expiration time in JWT"),
        Some(value) => match millis(value) {
            Some(ms) => ms,
            None => return reject("The 'exp' claim was not of type Number"),
        },
    };
    let principal = match claims.get(&options.principal_claim) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => {
            return reject(&format!(
                "No principal name in JWT claim: {}",
                options.principal_claim
            ))
        }
    };
    // Kafka rounds a fractional iat to the nearest millisecond, and so
    // refuses a token made less than half a millisecond before it is
    // checked (rarely there, as its checks take longer); here the fraction
    // is dropped instead.
    let issued_at_ms = match claims.get("iat") {
        None | Some(Value::Null) => None,
        Some(value) => match value
            .as_f64()
            .map(|s| (s * 1000.0).floor())
            .filter(|ms| ms.is_finite() && ms.abs() < 9.0e18)
        {
            Some(ms) => Some(ms as i64),
            None => return reject("The 'iat' claim was not of type Number"),
        },
    };
    if issued_at_ms.is_some_and(|iat| iat > now_ms.saturating_add(options.clock_skew_ms)) {
        return reject(&format!(
            "The token's issued-at time ({} ms) is after now ({now_ms} ms) plus the allowed clock skew",
            issued_at_ms.unwrap_or_default()
        ));
    }
    if now_ms.saturating_sub(options.clock_skew_ms) >= expires_at_ms {
        return reject("The token has expired");
    }
    if issued_at_ms.is_some_and(|iat| expires_at_ms <= iat) {
        return reject("The token expires before it was issued");
    }
    if let Some(missing) = options
        .required_scope
        .iter()
        .find(|needed| !scope.contains(needed))
    {
        return Outcome::Rejected(Rejected {
            status: "insufficient_scope",
            scope: Some(format!("[{}]", options.required_scope.join(", "))),
            reason: format!("The provided scope lacked a required item: {missing}"),
        });
    }
    Outcome::Valid(Validated {
        principal,
        expires_at_ms,
        scope,
    })
}

/// The algorithms a key of this kind verifies (as jose4j takes them: any
/// the key supports but `none`).
/// A key for encryption (`use` `enc`) is not used (jose4j's key
/// selection); the `alg` a key declares is not looked at (measured: Kafka
/// 4.1.1 takes a PS256 or RS512 token signed with a key declared RS256).
/// Never a symmetric key: `HS*` tokens are refused whatever the set holds.
fn key_verifies(key: &Jwk, algorithm: Algorithm) -> bool {
    use jsonwebtoken::jwk::{EllipticCurve, PublicKeyUse};
    use Algorithm::*;
    if matches!(key.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return false;
    }
    match &key.algorithm {
        AlgorithmParameters::RSA(_) => {
            matches!(algorithm, RS256 | RS384 | RS512 | PS256 | PS384 | PS512)
        }
        AlgorithmParameters::EllipticCurve(ec) => matches!(
            (&ec.curve, algorithm),
            (EllipticCurve::P256, ES256) | (EllipticCurve::P384, ES384)
        ),
        AlgorithmParameters::OctetKeyPair(_) => matches!(algorithm, EdDSA),
        AlgorithmParameters::OctetKey(_) => false,
    }
}

/// Kafka's `BrokerJwtValidator` (jose4j's `JwtConsumer` as Kafka sets it
/// up), as measured on Kafka 4.1.1: the signature must verify with a key
/// of the set (the header's `kid`, or any key when there is none); `exp`
/// and `iat` are required; `exp` is not given the clock skew (a token one
/// second past it is refused), `nbf` is; an audience is required to match
/// when one is expected and refused when none is; the issuer must match
/// when one is expected; the subject claim must be a non-blank string.
fn validate_signed(options: &SignedOptions, keys: &KeySource, token: &str, now_ms: i64) -> Outcome {
    let reject = |reason: &str| Outcome::Rejected(Rejected::invalid(reason));
    let parts: Vec<&str> = token.splitn(4, '.').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return reject("not a JWS compact serialization of three parts");
    }
    let (Some(header), Some(claims)) = (decode_part(parts[0]), decode_part(parts[1])) else {
        return reject("malformed JWT header or claims");
    };
    let Some(algorithm) = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(|alg| alg.parse::<Algorithm>().ok())
    else {
        return reject("no algorithm this broker verifies");
    };
    let set = keys.current();
    let kid = header.get("kid").and_then(Value::as_str);
    let candidates: Vec<&Jwk> = set
        .keys
        .iter()
        .filter(|key| match kid {
            Some(kid) => key.common.key_id.as_deref() == Some(kid),
            None => true,
        })
        .filter(|key| key_verifies(key, algorithm))
        .collect();
    if candidates.is_empty() {
        if let Some(kid) = kid {
            if !set
                .keys
                .iter()
                .any(|k| k.common.key_id.as_deref() == Some(kid))
            {
                keys.key_id_missing(kid);
            }
        }
        return reject("Unable to find a suitable verification key");
    }
    let message = &token[..parts[0].len() + 1 + parts[1].len()];
    let verified = candidates.iter().any(|key| {
        DecodingKey::from_jwk(key).is_ok_and(|decoding| {
            jsonwebtoken::crypto::verify(parts[2], message.as_bytes(), &decoding, algorithm)
                .unwrap_or(false)
        })
    });
    if !verified {
        return reject("JWS signature is invalid");
    }
    let skew_ms = options.clock_skew_seconds.saturating_mul(1000);
    let Some(expires_at_ms) = claims.get("exp").and_then(millis) else {
        return reject("no numeric exp claim");
    };
    match claims.get("iat").and_then(millis) {
        Some(iat) if iat >= 0 => {}
        Some(_) => return reject("iat value must be non-negative"),
        None => return reject("no numeric iat claim"),
    }
    if now_ms >= expires_at_ms {
        return reject("The JWT is no longer valid");
    }
    match claims.get("nbf") {
        None => {}
        Some(value) => match millis(value) {
            Some(nbf) if nbf <= now_ms.saturating_add(skew_ms) => {}
            _ => return reject("The JWT is not yet valid"),
        },
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        None => Vec::new(),
        Some(Value::String(aud)) => vec![aud.as_str()],
        Some(Value::Array(items)) => {
            let Some(list) = items.iter().map(Value::as_str).collect::<Option<Vec<_>>>() else {
                return reject("aud claim is not a string or a list of strings");
            };
            list
        }
        Some(_) => return reject("aud claim is not a string or a list of strings"),
    };
    if options.expected_audience.is_empty() {
        if !audiences.is_empty() {
            return reject("the token has an audience and none is expected");
        }
    } else if !audiences
        .iter()
        .any(|aud| options.expected_audience.iter().any(|e| e == aud))
    {
        return reject("No audience matches the expected audience");
    }
    if let Some(issuer) = &options.expected_issuer {
        if claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str()) {
            return reject("Issuer (iss) claim does not match the expected issuer");
        }
    }
    // Kafka's ClaimValidationUtils.validateSubject trims it.
    let principal = match claims.get(&options.sub_claim) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        _ => {
            return reject(&format!(
                "{} value must be non-null, non-empty, and non-whitespace",
                options.sub_claim
            ))
        }
    };
    let scope = match claims.get(&options.scope_claim) {
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        Some(Value::String(_)) => return reject("scope value must be non-blank"),
        Some(Value::Array(items)) => {
            let mut scope: Vec<String> = Vec::new();
            for item in items {
                let Some(s) = item.as_str().map(str::trim).filter(|s| !s.is_empty()) else {
                    return reject("scope items must be non-blank strings");
                };
                if scope.iter().any(|x| x == s) {
                    return reject("scope must not contain duplicates");
                }
                scope.push(s.to_string());
            }
            scope
        }
        _ => Vec::new(),
    };
    Outcome::Valid(Validated {
        principal,
        expires_at_ms,
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(value: &Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    }

    fn unsecured(claims: Value) -> String {
        format!(
            "{}.{}.",
            b64(&serde_json::json!({"alg": "none"})),
            b64(&claims)
        )
    }

    #[test]
    fn client_first_messages_parse_as_kafka_parses_them() {
        let parsed = parse_client_first(b"n,,\x01auth=Bearer abc.def.\x01\x01").unwrap();
        assert_eq!(parsed.token, "abc.def.");
        assert_eq!(parsed.authzid, None);
        assert!(parsed.extensions.is_empty());
        let parsed =
            parse_client_first(b"n,a=alice,\x01auth=bearer  t\x01a=1\x01a=x y\x01b=2\x01\x01")
                .unwrap();
        assert_eq!(parsed.authzid.as_deref(), Some("alice"));
        assert_eq!(parsed.token, "t");
        assert_eq!(
            parsed.extensions,
            [("a".into(), "x y".into()), ("b".into(), "2".into())]
        );
        for bad in [
            &b""[..],
            b"n,,\x01\x01",
            b"y,,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Bearer t\x01",
            b"n,a=,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Bearer t\x01f1=x\x01\x01",
            b"n,,\x01auth=Bearer t\x01a=\x01\x01",
            b"n,,\x01auth=Bearer t\x01auth=x\x01\x01",
            b"n,,\x01auth=Bearer a b\x01\x01",
            b"n,,\x01auth=Bearer t\x01\x01\xff",
        ] {
            assert_eq!(parse_client_first(bad), Err(Malformed::Invalid), "{bad:?}");
        }
        assert_eq!(
            parse_client_first(b"n,,\x01auth=Basic abc\x01\x01"),
            Err(Malformed::NotBearer)
        );
    }

    #[test]
    fn unsecured_tokens_are_checked_as_kafka_checks_them() {
        let options = UnsecuredOptions::default();
        let now = 1_700_000_000_000i64;
        let valid = unsecured(
            serde_json::json!({"sub": "alice", "exp": 1_700_000_100.5, "iat": 1_700_000_000}),
        );
        assert_eq!(
            options_validate(&options, &valid, now),
            Ok(("alice".into(), 1_700_000_100_500))
        );
        for claims in [
            serde_json::json!({"sub": "alice"}),
            serde_json::json!({"sub": "alice", "exp": "1700000100"}),
            serde_json::json!({"sub": "", "exp": 1_700_000_100}),
            serde_json::json!({"sub": 5, "exp": 1_700_000_100}),
            serde_json::json!({"exp": 1_700_000_100}),
            serde_json::json!({"sub": "alice", "exp": 1_700_000_000}),
            serde_json::json!({"sub": "alice", "exp": 1_700_000_100, "iat": 1_700_000_001}),
            serde_json::json!({"sub": "alice", "exp": 1_700_000_100, "iat": "x"}),
            serde_json::json!({"sub": "alice", "exp": 1_700_000_100, "scope": 5}),
        ] {
            let token = unsecured(claims.clone());
            assert!(options_validate(&options, &token, now).is_err(), "{claims}");
        }
        let header_rs = b64(&serde_json::json!({"alg": "RS256"}));
        let body = b64(&serde_json::json!({"sub": "a", "exp": 1_700_000_100}));
        assert!(options_validate(&options, &format!("{header_rs}.{body}."), now).is_err());
        assert!(options_validate(
            &options,
            &format!("{}.{body}.sig", b64(&serde_json::json!({"alg": "none"}))),
            now
        )
        .is_err());
        assert_eq!(
            validate_unsecured(
                &options,
                &format!("{}.{body}.", b64(&serde_json::json!({}))),
                now
            ),
            Outcome::Close
        );
        let required = UnsecuredOptions {
            required_scope: vec!["a".into(), "b".into()],
            ..UnsecuredOptions::default()
        };
        let token =
            unsecured(serde_json::json!({"sub": "x", "exp": 1_700_000_100, "scope": ["a"]}));
        let Outcome::Rejected(rejected) = validate_unsecured(&required, &token, now) else {
            panic!("refused");
        };
        assert_eq!(
            rejected.challenge(),
            "{\"status\":\"insufficient_scope\", \"scope\":\"[a, b]\"}"
        );
        let token =
            unsecured(serde_json::json!({"sub": "x", "exp": 1_700_000_100, "scope": ["b", "a"]}));
        assert!(matches!(
            validate_unsecured(&required, &token, now),
            Outcome::Valid(_)
        ));
    }

    fn options_validate(
        options: &UnsecuredOptions,
        token: &str,
        now: i64,
    ) -> Result<(String, i64), String> {
        match validate_unsecured(options, token, now) {
            Outcome::Valid(v) => Ok((v.principal, v.expires_at_ms)),
            Outcome::Rejected(r) => Err(r.reason),
            Outcome::Close => Err("close".into()),
        }
    }

    /// Goal: a token never meets a key of another kind than its algorithm
    /// (jsonwebtoken's verify does not check, and would panic on some
    /// pairs): refused, never verified, whatever the header says.
    #[test]
    fn tokens_only_meet_keys_of_their_algorithm() {
        let keys = parse_jwks(
            &serde_json::json!({"keys": [
                {"kty": "RSA", "kid": "rsa", "e": "AQAB",
                 "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWLRXUVGmTCAZDYqb8yq2g6P4eJwHr0zxqtvdBl5D4KMpiiqOi2JNgHAbTBy7sMMoAfv1NgeFcw8QcL4Fy6s0_6tsUHT"},
                {"kty": "EC", "kid": "ec", "crv": "P-256", "use": "sig",
                 "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4",
                 "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"},
                {"kty": "RSA", "kid": "enc", "use": "enc", "e": "AQAB", "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78L"},
                {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"}
            ]})
            .to_string(),
        )
        .unwrap();
        let source = KeySource::fixed(keys);
        let options = SignedOptions {
            jwks_endpoint_url: "file:/x".into(),
            jwks_refresh: Duration::from_secs(3600),
            jwks_retry_backoff: Duration::from_millis(100),
            jwks_retry_backoff_max: Duration::from_secs(10),
            expected_audience: Vec::new(),
            expected_issuer: None,
            sub_claim: "sub".into(),
            scope_claim: "scope".into(),
            clock_skew_seconds: 30,
        };
        let body = b64(&serde_json::json!({"sub": "a", "iat": 1, "exp": 4_000_000_000u64}));
        for (alg, kid) in [
            ("HS256", Some("rsa")),
            ("HS256", Some("secret")),
            ("HS256", None),
            ("ES384", Some("ec")),
            ("ES256", Some("rsa")),
            ("RS256", Some("ec")),
            ("RS256", Some("enc")),
            ("EdDSA", None),
            ("none", None),
            ("XX999", None),
        ] {
            let mut header = serde_json::json!({"alg": alg});
            if let Some(kid) = kid {
                header["kid"] = kid.into();
            }
            let token = format!("{}.{body}.c2lnbmF0dXJl", b64(&header));
            assert!(
                matches!(
                    validate_signed(&options, &source, &token, 1_700_000_000_000),
                    Outcome::Rejected(_)
                ),
                "{alg} {kid:?}"
            );
        }
    }

    #[test]
    fn jaas_options_of_the_login_module() {
        let module = super::super::plain::parse_jaas_config(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             unsecuredValidatorPrincipalClaimName=\"email\" unsecuredValidatorRequiredScope=\"read write\" \
             unsecuredValidatorAllowableClockSkewMs=\"500\";",
        )
        .unwrap();
        let options = UnsecuredOptions::from_modules(&[module]).unwrap();
        assert_eq!(options.principal_claim, "email");
        assert_eq!(options.required_scope, ["read", "write"]);
        assert_eq!(options.clock_skew_ms, 500);
        let module = super::super::plain::parse_jaas_config(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             unsecuredValidatorAllowableClockSkewMs=\"-1\";",
        )
        .unwrap();
        assert!(UnsecuredOptions::from_modules(&[module]).is_err());
        assert!(UnsecuredOptions::from_modules(&[]).is_err());
    }
}
