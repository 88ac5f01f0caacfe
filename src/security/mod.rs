//! Authentication: SASL/SCRAM credentials and exchanges (`scram`), SASL/PLAIN
//! and its JAAS-configured users (`plain`), the listener's security protocol,
//! the enabled mechanisms, and the `--add-scram` credentials given on the
//! command line. Authorization: ACLs and the authorizer (`acl`).

pub mod acl;
pub mod delegation_token;
pub mod keystore;
pub mod listener_tls;
pub mod oauthbearer;
pub mod plain;
pub mod scram;
pub mod tls;

use scram::{ScramMechanism, ITERATIONS_MAX, ITERATIONS_MIN};

/// Compares secrets without a timing that tells how much of them matched
/// (Kafka's `Utils.isEqualConstantTime`): every byte of the longer is
/// looked at, whatever the lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut difference = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        difference |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    difference == 0
}

/// A listener's security protocol (Kafka's
/// `listener.security.protocol.map` values this broker serves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// No authentication.
    Plaintext,
    /// SASL authentication, no encryption.
    SaslPlaintext,
    /// TLS, no authentication of the client.
    Ssl,
    /// TLS, then SASL authentication.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Clients authenticate with SASL first.
    pub fn is_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    /// Connections are TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }
}

/// Splits a listener `[PROTOCOL://]host:port` into its protocol (PLAINTEXT
/// when none is given) and address.
///
/// # Errors
/// A protocol this broker does not serve.
pub fn split_listener(listener: &str) -> Result<(SecurityProtocol, &str), String> {
    let Some((protocol, address)) = listener.split_once("://") else {
        return Ok((SecurityProtocol::Plaintext, listener));
    };
    match protocol.to_ascii_uppercase().as_str() {
        "PLAINTEXT" => Ok((SecurityProtocol::Plaintext, address)),
        "SASL_PLAINTEXT" => Ok((SecurityProtocol::SaslPlaintext, address)),
        "SSL" => Ok((SecurityProtocol::Ssl, address)),
        "SASL_SSL" => Ok((SecurityProtocol::SaslSsl, address)),
        _ => Err(format!(
            "unknown security protocol {protocol:?}; use PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL"
        )),
    }
}

/// A SASL mechanism this broker serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    /// PLAIN (RFC 4616), users from the JAAS configuration.
    Plain,
    /// SCRAM-SHA-256 or SCRAM-SHA-512, credentials in the metadata.
    Scram(ScramMechanism),
    /// OAUTHBEARER (RFC 7628): JWT bearer tokens.
    OAuthBearer,
}

impl SaslMechanism {
    /// The SASL name.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(scram) => scram.name(),
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism of a SASL name (exact, as Kafka matches them).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "PLAIN" => return Some(SaslMechanism::Plain),
            "OAUTHBEARER" => return Some(SaslMechanism::OAuthBearer),
            _ => {}
        }
        ScramMechanism::from_name(name).map(SaslMechanism::Scram)
    }
}

/// Parses `sasl.enabled.mechanisms`: a comma-separated list of PLAIN,
/// SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER, in the order given.
///
/// # Errors
/// An empty list or another mechanism.
pub fn parse_mechanisms(list: &str) -> Result<Vec<SaslMechanism>, String> {
    let mut mechanisms = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let mechanism = SaslMechanism::from_name(name).ok_or_else(|| {
            format!(
                "SASL mechanism {name:?} is not supported; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are"
            )
        })?;
        if !mechanisms.contains(&mechanism) {
            mechanisms.push(mechanism);
        }
    }
    if mechanisms.is_empty() {
        return Err("no SASL mechanism enabled".into());
    }
    Ok(mechanisms)
}

/// The order Kafka's SaslHandshake answers list the enabled mechanisms in:
/// that of a Java `HashMap` sized for them (`new HashMap<>(n)`, filled in
/// the configured order), by bucket of the name's `String.hashCode`, the
/// configured order within a bucket.
pub fn in_kafka_handshake_order(mechanisms: Vec<SaslMechanism>) -> Vec<SaslMechanism> {
    let java_hash = |name: &str| {
        let h = name.encode_utf16().fold(0u32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(u32::from(unit))
        });
        h ^ (h >> 16)
    };
    // HashMap(n): a table of the next power of two, doubled while it holds
    // more than three quarters of its size.
    let mut buckets = mechanisms.len().max(1).next_power_of_two();
    while mechanisms.len() * 4 > buckets * 3 {
        buckets *= 2;
    }
    let mask = (buckets - 1) as u32;
    let mut ordered = mechanisms;
    ordered.sort_by_key(|m| java_hash(m.name()) & mask);
    ordered
}

/// A SCRAM credential to create at start-up when the user has none for the
/// mechanism (`--add-scram`, as `kafka-storage format --add-scram`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddScram {
    /// User.
    pub user: String,
    /// Mechanism.
    pub mechanism: ScramMechanism,
    /// Password.
    pub password: String,
    /// PBKDF2 iterations.
    pub iterations: i32,
}

/// Parses `SCRAM-SHA-256=[name=alice,password=alice-secret]`, with an
/// optional `iterations=N` (default 4096); values may be double-quoted.
///
/// # Errors
/// Anything else, with what is wrong.
pub fn parse_add_scram(text: &str) -> Result<AddScram, String> {
    let (mechanism, rest) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not MECHANISM=[name=...,password=...]"))?;
    let mechanism = ScramMechanism::from_name(mechanism.trim())
        .ok_or_else(|| format!("{mechanism:?} is not SCRAM-SHA-256 or SCRAM-SHA-512"))?;
    let inner = rest
        .trim()
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| format!("{rest:?} is not [name=...,password=...]"))?;
    let (mut user, mut password, mut iterations) = (None, None, ITERATIONS_MIN);
    for pair in inner.split(',') {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not key=value"))?;
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        match key.trim() {
            "name" => user = Some(value.to_string()),
            "password" => password = Some(value.to_string()),
            "iterations" => {
                iterations = value
                    .parse()
                    .map_err(|_| format!("iterations {value:?} is not a number"))?
            }
            other => {
                return Err(format!(
                    "unknown key {other:?}; name, password and iterations are taken"
                ))
            }
        }
    }
    let user = user.filter(|u| !u.is_empty()).ok_or("name is missing")?;
    let password = password.ok_or("password is missing")?;
    if !(ITERATIONS_MIN..=ITERATIONS_MAX).contains(&iterations) {
        return Err(format!(
            "iterations must be {ITERATIONS_MIN} to {ITERATIONS_MAX}, not {iterations}"
        ));
    }
    Ok(AddScram {
        user,
        mechanism,
        password,
        iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abc\0"));
        assert!(!constant_time_eq(b"", b"\0"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn listeners_name_their_protocol() {
        assert_eq!(
            split_listener("127.0.0.1:9092"),
            Ok((SecurityProtocol::Plaintext, "127.0.0.1:9092"))
        );
        assert_eq!(
            split_listener("SASL_PLAINTEXT://h:1"),
            Ok((SecurityProtocol::SaslPlaintext, "h:1"))
        );
        assert_eq!(
            split_listener("PLAINTEXT://h:1"),
            Ok((SecurityProtocol::Plaintext, "h:1"))
        );
        assert_eq!(
            split_listener("ssl://h:1"),
            Ok((SecurityProtocol::Ssl, "h:1"))
        );
        assert_eq!(
            split_listener("SASL_SSL://h:1"),
            Ok((SecurityProtocol::SaslSsl, "h:1"))
        );
        assert!(split_listener("FOO://h:1").is_err());
    }

    #[test]
    fn add_scram_takes_kafka_storage_syntax() {
        assert_eq!(
            parse_add_scram("SCRAM-SHA-512=[name=alice,password=\"a-secret\",iterations=8192]"),
            Ok(AddScram {
                user: "alice".into(),
                mechanism: ScramMechanism::Sha512,
                password: "a-secret".into(),
                iterations: 8192,
            })
        );
        assert_eq!(
            parse_add_scram("SCRAM-SHA-256=[name=bob,password=x]").map(|a| a.iterations),
            Ok(4096)
        );
        for bad in [
            "PLAIN=[name=a,password=b]",
            "SCRAM-SHA-256=[name=a]",
            "SCRAM-SHA-256=[password=b]",
            "SCRAM-SHA-256=name=a,password=b",
            "SCRAM-SHA-256=[name=a,password=b,iterations=100]",
            "SCRAM-SHA-256=[name=a,password=b,salt=c]",
        ] {
            assert!(parse_add_scram(bad).is_err(), "{bad}");
        }
        assert!(parse_mechanisms("GSSAPI").is_err());
        assert!(parse_mechanisms("plain").is_err());
        assert!(parse_mechanisms("").is_err());
    }

    /// Goal: the enabled mechanisms listed in the order Kafka 4.1.1 lists them.
    #[test]
    fn mechanisms_are_listed_in_kafkas_order() {
        let names = |list: &str| -> Vec<&'static str> {
            in_kafka_handshake_order(parse_mechanisms(list).unwrap())
                .into_iter()
                .map(SaslMechanism::name)
                .collect()
        };
        assert_eq!(
            names("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
            ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"]
        );
        assert_eq!(
            names("SCRAM-SHA-256,SCRAM-SHA-512"),
            ["SCRAM-SHA-512", "SCRAM-SHA-256"]
        );
        assert_eq!(
            names("SCRAM-SHA-512,PLAIN,SCRAM-SHA-256"),
            ["SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"]
        );
        assert_eq!(names("SCRAM-SHA-256"), ["SCRAM-SHA-256"]);
    }
}
