//! Delegation tokens (KIP-48), as Kafka 4.1's `DelegationTokenControlManager`
//! and `DelegationTokenManager` keep them: what a token is, how its HMAC is
//! made, how its timestamps are reckoned, and who may renew, expire or see
//! it. No I/O: the controller (`cluster::controller`) writes tokens to the
//! metadata log, every shard's image holds them, SCRAM logins with
//! `tokenauth=true` use them.
//!
//! A token's HMAC is HmacSHA512 of its id under `delegation.token.secret.key`
//! and is its password: the SCRAM credentials of both mechanisms are made
//! from the HMAC's base64 at 4096 iterations, as Kafka makes them. The
//! metadata log keeps the credentials and a short hash of the HMAC, never
//! the HMAC: a token whose hash the current key does not give was made
//! under another key, logs in with nothing until the controller has made
//! its credentials afresh from the HMAC the current key gives (Kafka
//! recomputes every HMAC with the key it is started with).

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::scram::{random_bytes, ScramCredential, ScramMechanism, ITERATIONS_MIN};

/// Kafka's `delegation.token.max.lifetime.ms` default: 7 days.
pub const MAX_LIFETIME_MS_DEFAULT: i64 = 604_800_000;
/// Kafka's `delegation.token.expiry.time.ms` default: 1 day.
pub const EXPIRY_TIME_MS_DEFAULT: i64 = 86_400_000;
/// Kafka's `delegation.token.expiry.check.interval.ms` default: 1 hour.
pub const EXPIRY_CHECK_INTERVAL_MS_DEFAULT: i64 = 3_600_000;
/// Bytes of an HMAC (HmacSHA512).
pub const HMAC_BYTES: usize = 64;
/// Most tokens made under another key one sweep gives new credentials.
pub const RESIGN_TOKENS_MAX: usize = 100;
/// Most expired tokens one sweep removes (Kafka's
/// `DelegationTokenControlManager.MAX_RECORDS_PER_EXPIRATION`).
pub const SWEEP_TOKENS_MAX: usize = 1000;

/// The broker's delegation-token settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenConfig {
    /// `delegation.token.secret.key`; None (unset or empty) disables
    /// tokens, as in Kafka.
    pub secret: Option<String>,
    /// `delegation.token.max.lifetime.ms`.
    pub max_lifetime_ms: i64,
    /// `delegation.token.expiry.time.ms`.
    pub expiry_time_ms: i64,
    /// `delegation.token.expiry.check.interval.ms`.
    pub expiry_check_interval_ms: i64,
}

impl Default for TokenConfig {
    fn default() -> Self {
        TokenConfig {
            secret: None,
            max_lifetime_ms: MAX_LIFETIME_MS_DEFAULT,
            expiry_time_ms: EXPIRY_TIME_MS_DEFAULT,
            expiry_check_interval_ms: EXPIRY_CHECK_INTERVAL_MS_DEFAULT,
        }
    }
}

impl TokenConfig {
    /// Whether tokens are enabled (Kafka's `tokenAuthEnabled`).
    pub fn enabled(&self) -> bool {
        self.secret.is_some()
    }

    /// The HMAC of `token_id` under the secret key; None when tokens are
    /// disabled.
    pub fn hmac(&self, token_id: &str) -> Option<Vec<u8>> {
        let secret = self.secret.as_deref()?;
        Some(ScramMechanism::Sha512.hmac(secret.as_bytes(), token_id.as_bytes()))
    }

    /// Whether the token's credentials were made from the HMAC this key
    /// gives (false when tokens are disabled).
    pub fn signs(&self, token: &DelegationToken) -> bool {
        self.hmac(&token.token_id)
            .is_some_and(|hmac| super::constant_time_eq(&hmac_check(&hmac), &token.hmac_check))
    }

    /// The timestamps of a token created at `now_ms` asking for
    /// `max_lifetime_ms` (0 or less: the broker's): (expiry, max). As
    /// Kafka, the max lifetime asked for is capped by the broker's and the
    /// sums saturate.
    pub fn created_timestamps(&self, now_ms: i64, max_lifetime_ms: i64) -> (i64, i64) {
        let lifetime = if max_lifetime_ms > 0 {
            self.max_lifetime_ms.min(max_lifetime_ms)
        } else {
            self.max_lifetime_ms
        };
        let max = now_ms.saturating_add(lifetime);
        let expiry = max.min(now_ms.saturating_add(self.expiry_time_ms));
        (expiry, max)
    }

    /// A renewed token's expiry: `renew_period_ms` from now (0 or less, or
    /// more than `delegation.token.expiry.time.ms`: that), no later than
    /// its max timestamp.
    pub fn renewed_expiry(
        &self,
        token: &DelegationToken,
        now_ms: i64,
        renew_period_ms: i64,
    ) -> i64 {
        let period = if renew_period_ms > 0 {
            self.expiry_time_ms.min(renew_period_ms)
        } else {
            self.expiry_time_ms
        };
        token.max_timestamp_ms.min(now_ms.saturating_add(period))
    }
}

/// One delegation token, as the metadata log keeps it (Kafka's
/// `DelegationTokenRecord`, with the SCRAM credentials of its HMAC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationToken {
    /// Its id: a random UUID in Kafka's base64 form; the SCRAM user name
    /// of a token login.
    pub token_id: String,
    /// The owner, as `Type:name`.
    pub owner: String,
    /// Who asked for it, as `Type:name`.
    pub requester: String,
    /// Who else may renew and expire it, each `User:name`.
    pub renewers: Vec<String>,
    /// When it was issued, ms since the epoch.
    pub issue_timestamp_ms: i64,
    /// When it can no longer be renewed.
    pub max_timestamp_ms: i64,
    /// When it expires unless renewed.
    pub expiry_timestamp_ms: i64,
    /// The SCRAM credentials its HMAC gives, by mechanism.
    pub credentials: BTreeMap<ScramMechanism, ScramCredential>,
    /// The first 16 bytes of the SHA-256 of its HMAC: which key made the
    /// credentials.
    pub hmac_check: Vec<u8>,
}

impl DelegationToken {
    /// Expired at `now_ms` (Kafka: past its max or its expiry).
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.max_timestamp_ms < now_ms || self.expiry_timestamp_ms < now_ms
    }

    /// May `principal` renew or expire it: its owner or a renewer (not
    /// its requester, as in Kafka).
    pub fn may_renew(&self, principal: &str) -> bool {
        self.owner == principal || self.renewers.iter().any(|r| r == principal)
    }

    /// Kafka's `TokenInformation.ownerOrRenewer`: its owner, requester or
    /// a renewer.
    pub fn owner_or_renewer(&self, principal: &str) -> bool {
        self.may_renew(principal) || self.requester == principal
    }

    /// The owner's name, which a token login authenticates as (`User:`
    /// and the name, whatever the owner's principal type).
    pub fn owner_name(&self) -> &str {
        self.owner
            .split_once(':')
            .map_or(self.owner.as_str(), |(_, name)| name)
    }
}

/// The short hash of an HMAC a token keeps (`DelegationToken::hmac_check`).
pub fn hmac_check(hmac: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(hmac)[..16].to_vec()
}

/// A fresh token id as Kafka's `Uuid.randomUuid().toString()`: 16 random
/// bytes (a v4 UUID) in URL-safe base64 without padding, never starting
/// with '-'.
///
/// # Errors
/// When the operating system gives no random bytes.
pub fn new_token_id() -> Result<String, getrandom::Error> {
    loop {
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&random_bytes(16)?);
        let id = crate::cluster::image::cluster_id_string(
            uuid::Builder::from_random_bytes(uuid).into_uuid(),
        );
        if !id.starts_with('-') {
            return Ok(id);
        }
    }
}

/// What a key makes of a token id: the SCRAM credentials of its HMAC and
/// the HMAC's short hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// By mechanism.
    pub credentials: BTreeMap<ScramMechanism, ScramCredential>,
    /// `DelegationToken::hmac_check`.
    pub hmac_check: Vec<u8>,
}

impl TokenConfig {
    /// The signature of `token_id` under the key; Ok(None) when tokens are
    /// disabled. Costs two PBKDF2 runs: call it off the executor.
    ///
    /// # Errors
    /// When the operating system gives no random bytes.
    pub fn sign(&self, token_id: &str) -> Result<Option<Signature>, getrandom::Error> {
        let Some(hmac) = self.hmac(token_id) else {
            return Ok(None);
        };
        Ok(Some(Signature {
            credentials: credentials(&hmac)?,
            hmac_check: hmac_check(&hmac),
        }))
    }
}

/// The SCRAM credentials of a token whose HMAC is `hmac`, for both
/// mechanisms: the password is the HMAC's base64, the iterations Kafka's
/// 4096, the salt fresh. Costs two PBKDF2 runs: call it off the executor.
///
/// # Errors
/// When the operating system gives no random bytes.
fn credentials(hmac: &[u8]) -> Result<BTreeMap<ScramMechanism, ScramCredential>, getrandom::Error> {
    let password = BASE64.encode(hmac);
    let iterations = ITERATIONS_MIN;
    ScramMechanism::ALL
        .into_iter()
        .map(|mechanism| {
            let salt = random_bytes(32)?;
            let salted =
                mechanism.salted_password(password.as_bytes(), &salt, iterations.unsigned_abs());
            Ok((mechanism, mechanism.credential(&salted, &salt, iterations)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TokenConfig {
        TokenConfig {
            secret: Some("topsecret".into()),
            ..TokenConfig::default()
        }
    }

    fn token() -> DelegationToken {
        DelegationToken {
            token_id: "t".into(),
            owner: "User:alice".into(),
            requester: "User:admin".into(),
            renewers: vec!["User:bob".into()],
            issue_timestamp_ms: 1000,
            max_timestamp_ms: 10_000,
            expiry_timestamp_ms: 5000,
            credentials: BTreeMap::new(),
            hmac_check: hmac_check(&config().hmac("t").unwrap()),
        }
    }

    /// Goal: the HMAC is Kafka's, byte for byte.
    /// Measured: Kafka 4.1.1 with delegation.token.secret.key=topsecret
    /// gave token uv7qv7DCR5-Wp48asyj4hA this HMAC.
    #[test]
    fn hmac_is_kafkas() {
        let hmac = config().hmac("uv7qv7DCR5-Wp48asyj4hA").unwrap();
        assert_eq!(
            BASE64.encode(hmac),
            "DH/1fdQ9hG/j2FAoiNwWkP0mKjhD49mjB2disYaDpp9XNGgKw8ri8LYLJ6V5aDuKSWHVvrEVrnMrPUTCmbGljg=="
        );
        assert_eq!(TokenConfig::default().hmac("x"), None);
    }

    /// Goal: timestamps as Kafka reckons them (measured: max lifetime -1
    /// and 0 give the broker's 7 days, 100 gives 100 ms and an expiry at
    /// the max, 3600000 an expiry at the max).
    #[test]
    fn timestamps_are_kafkas() {
        let c = config();
        assert_eq!(c.created_timestamps(0, -1), (86_400_000, 604_800_000));
        assert_eq!(c.created_timestamps(0, 0), (86_400_000, 604_800_000));
        assert_eq!(c.created_timestamps(0, 100), (100, 100));
        assert_eq!(c.created_timestamps(0, 3_600_000), (3_600_000, 3_600_000));
        assert_eq!(
            c.created_timestamps(0, 10 * 604_800_000),
            (86_400_000, 604_800_000)
        );
        assert_eq!(c.created_timestamps(i64::MAX - 5, -1), (i64::MAX, i64::MAX));
        let t = token();
        assert_eq!(c.renewed_expiry(&t, 2000, 1000), 3000);
        assert_eq!(c.renewed_expiry(&t, 2000, -1), 10_000);
        assert_eq!(c.renewed_expiry(&t, 2000, i64::MAX), 10_000);
    }

    /// Goal: renewers and owners may renew; the requester only sees it.
    #[test]
    fn who_may_renew_and_see() {
        let t = token();
        assert!(t.may_renew("User:alice") && t.may_renew("User:bob"));
        assert!(!t.may_renew("User:admin") && t.owner_or_renewer("User:admin"));
        assert!(!t.owner_or_renewer("User:eve"));
        assert_eq!(t.owner_name(), "alice");
        assert!(!t.is_expired(5000) && t.is_expired(5001));
    }

    /// Goal: a token is known for the key that made it only.
    #[test]
    fn a_token_is_signed_by_its_key_only() {
        let t = token();
        assert!(config().signs(&t));
        let other = TokenConfig {
            secret: Some("another".into()),
            ..TokenConfig::default()
        };
        assert!(!other.signs(&t));
        assert!(!TokenConfig::default().signs(&t));
    }

    /// Goal: ids are 22 URL-safe characters, never starting with '-'.
    #[test]
    fn token_ids_are_kafka_uuids() {
        for _ in 0..200 {
            let id = new_token_id().unwrap();
            assert_eq!(id.len(), 22);
            assert!(!id.starts_with('-'));
            assert!(id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        }
    }

    /// Goal: a token's credentials authenticate its HMAC's base64.
    #[test]
    fn credentials_take_the_hmac_as_password() {
        let hmac = config().hmac("abc").unwrap();
        let creds = credentials(&hmac).unwrap();
        let password = BASE64.encode(&hmac);
        for (mechanism, credential) in &creds {
            let salted = mechanism.salted_password(password.as_bytes(), &credential.salt, 4096);
            assert_eq!(
                &mechanism.credential(&salted, &credential.salt, 4096),
                credential
            );
        }
        assert_eq!(creds.len(), 2);
    }
}
