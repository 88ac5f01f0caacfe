//! TLS for SSL and SASL_SSL listeners: the server's key and certificate
//! chain (read from the keystore by `super::keystore`), the protocols and
//! cipher suites of Kafka's `ssl.enabled.protocols` (TLSv1.2 and TLSv1.3 by
//! default) and `ssl.cipher.suites`, client certificates as
//! Kafka's `ssl.client.auth` (none, requested, required) checked against the
//! CAs of the truststore, and the principal name of a client certificate
//! as Kafka's default principal builder makes it: the subject as Java's
//! `X500Principal.getName()` writes it (RFC 2253). No I/O.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;

use super::keystore::KeyMaterial;

/// Kafka's `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// A certificate is asked for; a client without one is anonymous.
    Requested,
    /// A client without a certificate the truststore vouches for is refused.
    Required,
}

impl ClientAuth {
    /// Parses Kafka's value (none, requested, required).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Some(ClientAuth::None),
            "requested" => Some(ClientAuth::Requested),
            "required" => Some(ClientAuth::Required),
            _ => None,
        }
    }

    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Requested => "requested",
            ClientAuth::Required => "required",
        }
    }
}

/// What Kafka's `ssl.enabled.protocols` and `ssl.cipher.suites` leave of
/// what this broker's TLS (rustls with ring) serves.
#[derive(Debug, Clone)]
pub struct Protocols {
    versions: Vec<&'static rustls::SupportedProtocolVersion>,
    suites: Vec<rustls::SupportedCipherSuite>,
}

/// Protocol names Java knows that this broker does not serve (Java 17
/// disables them too, so Kafka accepts them and then fails handshakes).
const OLD_PROTOCOLS: [&str; 4] = ["TLSv1.1", "TLSv1", "SSLv3", "SSLv2Hello"];

/// Whether Java would take `name` in `ssl.cipher.suites`: a suite of the
/// IANA registry (as rustls knows it) or one of Java's legacy `SSL_*`
/// names. Java refuses anything else ("Unsupported CipherSuite").
fn known_suite(name: &str) -> bool {
    if name.starts_with("SSL_") {
        return true;
    }
    (0..=u16::MAX).any(|code| {
        rustls::CipherSuite::from(code)
            .as_str()
            .is_some_and(|known| {
                known == name
                    || matches!(
                        (known.strip_prefix("TLS13_"), name.strip_prefix("TLS_")),
                        (Some(a), Some(b)) if a == b
                    )
            })
    })
}

/// The IANA name of a cipher suite, as Java names it.
fn suite_name(suite: &rustls::SupportedCipherSuite) -> String {
    let name = suite.suite().as_str().unwrap_or_default();
    // rustls writes TLS 1.3's suites TLS13_*; IANA and Java write TLS_*.
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    }
}

impl Protocols {
    /// Kafka's defaults: TLSv1.2 and TLSv1.3, and every suite of them.
    #[cfg(test)]
    pub fn kafka_default() -> Self {
        Protocols::parse(&[], &[])
            .map(|(p, _)| p)
            .unwrap_or_else(|_| unreachable!())
    }

    /// `ssl.enabled.protocols` (empty: Kafka's default, TLSv1.2 and
    /// TLSv1.3) and `ssl.cipher.suites` (empty: all), in Java's names.
    /// Returns them and warnings: names Java knows that are not served here
    /// (TLSv1.1 and older, and suites such as CBC or static RSA ones, which
    /// are left out).
    ///
    /// # Errors
    /// A name Java does not know either (Kafka's broker fails then too),
    /// or nothing left to serve: no protocol, or no suite of an enabled
    /// protocol (Kafka would start and fail every handshake).
    pub fn parse(
        enabled: &[String],
        cipher_suites: &[String],
    ) -> Result<(Self, Vec<String>), String> {
        let mut warnings = Vec::new();
        let mut versions = Vec::new();
        let enabled: Vec<&str> = if enabled.is_empty() {
            vec!["TLSv1.2", "TLSv1.3"]
        } else {
            enabled.iter().map(String::as_str).collect()
        };
        for name in enabled {
            match name {
                "TLSv1.3" => versions.push(&rustls::version::TLS13),
                "TLSv1.2" => versions.push(&rustls::version::TLS12),
                old if OLD_PROTOCOLS.contains(&old) => warnings.push(format!(
                    "ssl.enabled.protocols: {old} is not served (Java 17 disables it too)"
                )),
                other => {
                    return Err(format!(
                        "ssl.enabled.protocols: Unsupported protocol {other}"
                    ))
                }
            }
        }
        if versions.is_empty() {
            return Err(
                "ssl.enabled.protocols: no protocol this broker serves (TLSv1.2, TLSv1.3)".into(),
            );
        }
        #[allow(deprecated)]
        let all = rustls::crypto::ring::default_provider().cipher_suites;
        let mut suites: Vec<rustls::SupportedCipherSuite> = Vec::new();
        if cipher_suites.is_empty() {
            suites = all;
        } else {
            for name in cipher_suites {
                match all.iter().find(|suite| suite_name(suite) == *name) {
                    Some(suite) => suites.push(*suite),
                    None if known_suite(name) => warnings.push(format!(
                        "ssl.cipher.suites: {name} is not served; this broker serves {}",
                        all.iter().map(suite_name).collect::<Vec<_>>().join(",")
                    )),
                    None => {
                        return Err(format!(
                            "ssl.cipher.suites: Unsupported CipherSuite: {name}"
                        ))
                    }
                }
            }
        }
        suites.retain(|suite| {
            versions
                .iter()
                .any(|v| v.version == suite.version().version)
        });
        if suites.is_empty() {
            return Err(
                "ssl.cipher.suites: none of them is served with the enabled protocols (TLS 1.3's are TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and TLS_CHACHA20_POLY1305_SHA256; TLS 1.2's are the ECDHE ones with AES-GCM or CHACHA20)"
                    .into(),
            );
        }
        Ok((Protocols { versions, suites }, warnings))
    }
}

/// The TLS server configurations of SSL and of SASL_SSL listeners, with
/// the key and chain of `key` (from the keystore). SSL listeners take
/// client certificates as `client_auth` says, issued by one of the
/// `trusted` CAs (from the truststore); SASL_SSL listeners ask for none, as
/// Kafka's unless their own `ssl.client.auth` says otherwise.
///
/// # Errors
/// A key that does not match the certificate, or client authentication
/// without a truststore; with what is wrong.
pub fn server_configs(
    key: KeyMaterial,
    client_auth: ClientAuth,
    trusted: Option<Vec<CertificateDer<'static>>>,
    protocols: &Protocols,
) -> Result<(Arc<rustls::ServerConfig>, Arc<rustls::ServerConfig>), String> {
    let KeyMaterial { chain, key } = key;
    // ring's provider: aws-lc-rs's would add hybrid post-quantum key
    // exchange, which Kafka's Java 17 TLS does not offer either, at the cost
    // of building a C library.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::CryptoProvider {
        cipher_suites: protocols.suites.clone(),
        ..rustls::crypto::ring::default_provider()
    });
    let verifier = match client_auth {
        ClientAuth::None => None,
        ClientAuth::Requested | ClientAuth::Required => {
            Some(client_verifier(client_auth, trusted, provider.clone())?)
        }
    };
    let config = |verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>| {
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&protocols.versions)
            .map_err(|e| format!("TLS versions: {e}"))?;
        let builder = match verifier {
            None => builder.with_no_client_auth(),
            Some(verifier) => builder.with_client_cert_verifier(verifier),
        };
        builder
            .with_single_cert(chain.clone(), key.clone_key())
            .map(Arc::new)
            .map_err(|e| format!("the keystore's key and certificate: {e}"))
    };
    Ok((config(verifier)?, config(None)?))
}

/// The verifier of client certificates issued by one of the `trusted` CAs;
/// with `Requested`, a client may give none.
fn client_verifier(
    client_auth: ClientAuth,
    trusted: Option<Vec<CertificateDer<'static>>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, String> {
    let trusted = trusted.ok_or_else(|| {
        format!(
            "ssl.client.auth={} needs a truststore of the CAs that issue client certificates",
            client_auth.name()
        )
    })?;
    let mut roots = rustls::RootCertStore::empty();
    // Java takes any X.509 certificate; one webpki cannot use is left out.
    let (_, ignored) = roots.add_parsable_certificates(trusted);
    if ignored > 0 {
        tracing::warn!(
            "{ignored} truststore certificate(s) cannot be used as a CA and are left out"
        );
    }
    if roots.is_empty() {
        return Err("no usable CA certificate in the truststore".into());
    }
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let verifier = if client_auth == ClientAuth::Requested {
        verifier.allow_unauthenticated()
    } else {
        verifier
    };
    verifier.build().map_err(|e| format!("the truststore: {e}"))
}

/// Kafka's `ssl.principal.mapping.rules`: how a client certificate's
/// subject (as `principal_name` writes it) becomes its principal's name.
/// Rules are tried in order: `DEFAULT` takes the subject as it is;
/// `RULE:pattern/replacement/` (then `L` or `U` to lower or upper the
/// result) applies when the Java-style regular expression matches the
/// whole subject, and gives the subject with every match of it replaced,
/// `$n`, `${name}` and `\c` meaning in the replacement what they mean to
/// Java. Separated by commas; a backslash escapes `/` and `\` in a pattern.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<MappingRule>,
}

#[derive(Debug, Clone)]
enum MappingRule {
    Default,
    Rule {
        /// The pattern, to find its matches.
        pattern: regex::Regex,
        /// The pattern anchored at both ends, to match the whole subject.
        whole: regex::Regex,
        replacement: String,
        lower: bool,
        upper: bool,
    },
}

/// One rule of `ssl.principal.mapping.rules`: DEFAULT, RULE:p/r/[LU] with
/// backslash escapes in p and r, or anything else (to be refused unless
/// empty). The alternatives are tried in this order, as by Kafka.
const MAPPING_RULE: &str = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)";

impl PrincipalMapper {
    /// Parses the rules as Kafka splits and parses them.
    ///
    /// # Errors
    /// A rule with text after it, or a pattern that is not a regular
    /// expression here (Java's backreferences and lookaround are not).
    pub fn parse(text: &str) -> Result<Self, String> {
        let splitter = regex::Regex::new(&format!(r"\s*({MAPPING_RULE})\s*(?:,\s*|$)"))
            .map_err(|e| e.to_string())?;
        let parser =
            regex::Regex::new(&format!(r"\A(?:{MAPPING_RULE})")).map_err(|e| e.to_string())?;
        let mut rules = Vec::new();
        for split in splitter.captures_iter(text.trim()) {
            let rule = split.get(1).map_or("", |m| m.as_str());
            let Some(parsed) = parser.captures(rule) else {
                return Err(format!("Invalid rule: {rule}"));
            };
            let end = parsed.get(0).map_or(0, |m| m.end());
            if end != rule.len() {
                return Err(format!(
                    "Invalid rule: `{rule}`, unmatched substring: `{}`",
                    &rule[end..]
                ));
            }
            if parsed.get(1).is_some() {
                rules.push(MappingRule::Default);
            } else if let (Some(pattern), Some(replacement)) = (parsed.get(2), parsed.get(3)) {
                let compile = |text: String| {
                    regex::Regex::new(&text).map_err(|e| format!("Invalid rule: `{rule}`: {e}"))
                };
                let case = parsed.get(4).map_or("", |m| m.as_str());
                rules.push(MappingRule::Rule {
                    pattern: compile(java_classes(pattern.as_str()))?,
                    whole: compile(format!(r"\A(?:{})\z", java_classes(pattern.as_str())))?,
                    replacement: replacement.as_str().to_string(),
                    lower: case == "L",
                    upper: case == "U",
                });
            }
            // Empty rules are passed over, as by Kafka.
        }
        Ok(PrincipalMapper { rules })
    }

    /// The principal name of the subject `name`: the first rule's that
    /// applies; None when none does or a replacement names a group the
    /// pattern does not have (Kafka refuses the client then).
    pub fn map(&self, name: &str) -> Option<String> {
        for rule in &self.rules {
            match rule {
                MappingRule::Default => return Some(name.to_string()),
                MappingRule::Rule {
                    pattern,
                    whole,
                    replacement,
                    lower,
                    upper,
                } => {
                    if !whole.is_match(name) {
                        continue;
                    }
                    let mapped = replace_all(pattern, name, replacement)?;
                    return Some(if *lower {
                        mapped.to_lowercase()
                    } else if *upper {
                        mapped.to_uppercase()
                    } else {
                        mapped
                    });
                }
            }
        }
        None
    }
}

/// A Java pattern's `\w`, `\d`, `\s`, `\b` and their negations as Java
/// means them, ASCII only (the regex crate's are Unicode's).
fn java_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('w') => out.push_str("[[:word:]]"),
            Some('W') => out.push_str("[[:^word:]]"),
            Some('d') => out.push_str("[[:digit:]]"),
            Some('D') => out.push_str("[[:^digit:]]"),
            Some('s') => out.push_str("[[:space:]]"),
            Some('S') => out.push_str("[[:^space:]]"),
            Some('b') => out.push_str("(?-u:\\b)"),
            Some('B') => out.push_str("(?-u:\\B)"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Every match of `pattern` in `text` replaced as Java's `replaceAll`
/// replaces it: an empty match may follow a match at its end, and the
/// search goes on a character after an empty one. In `replacement`, `\c`
/// is c, `${name}` a named group and `$n` group n, its digits read while
/// they name a group; a `$n` past the pattern's groups is literal text
/// (Kafka escapes those) unless the pattern has none (Java fails then).
/// None where Java's would throw.
fn replace_all(pattern: &regex::Regex, text: &str, replacement: &str) -> Option<String> {
    let groups = pattern.captures_len() - 1;
    let names: Vec<Option<&str>> = pattern.capture_names().collect();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut at) = (0, 0);
    while at <= text.len() {
        let Some(captures) = pattern.captures_at(text, at) else {
            break;
        };
        let found = captures.get(0)?;
        out.push_str(&text[copied..found.start()]);
        append_replacement(&mut out, &captures, replacement, groups, &names)?;
        copied = found.end();
        at = if found.is_empty() {
            match text[found.end()..].chars().next() {
                Some(c) => found.end() + c.len_utf8(),
                None => break,
            }
        } else {
            found.end()
        };
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Appends `replacement` for one match, as Java's `appendReplacement`.
fn append_replacement(
    out: &mut String,
    captures: &regex::Captures<'_>,
    replacement: &str,
    groups: usize,
    names: &[Option<&str>],
) -> Option<()> {
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '$' if chars.peek() == Some(&'{') => {
                chars.next();
                let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                // A group of the pattern that took no part gives nothing.
                if !names.contains(&Some(name.as_str())) {
                    return None;
                }
                out.push_str(captures.name(&name).map_or("", |m| m.as_str()));
            }
            '$' => {
                let first = chars.next()?.to_digit(10)? as usize;
                let mut number = first;
                let mut digits = first.to_string();
                while let Some(next) = chars.peek().and_then(|c| c.to_digit(10)) {
                    let longer = number * 10 + next as usize;
                    if longer > groups {
                        break;
                    }
                    number = longer;
                    digits.push(chars.next()?);
                }
                if number > groups {
                    if groups == 0 {
                        return None;
                    }
                    // Kafka makes a reference past the groups literal.
                    out.push('$');
                    out.push_str(&digits);
                } else {
                    out.push_str(captures.get(number).map_or("", |m| m.as_str()));
                }
            }
            c => out.push(c),
        }
    }
    Some(())
}

/// The principal name Kafka's default principal builder gives a client
/// certificate (with `ssl.principal.mapping.rules=DEFAULT`): its subject as
/// Java's `X500Principal.getName()` writes it, RFC 2253 style: the last
/// RDN first, `+` between the values of one RDN, the keywords CN, C, L,
/// ST, O, OU, STREET, DC and UID, any other attribute as its OID, a value
/// that is not a string (or of an OID) as `#` and its DER in hex, and
/// `,=+<>#;"\` escaped with a backslash.
///
/// # Errors
/// A certificate that does not parse.
pub fn principal_name(certificate: &[u8]) -> Result<String, String> {
    use x509_parser::der_parser::asn1_rs::{Tag, ToDer};
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate)
        .map_err(|e| format!("client certificate: {e}"))?;
    let mut rdns = Vec::new();
    for rdn in parsed
        .subject()
        .iter()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let mut values = Vec::new();
        for ava in rdn.iter() {
            let oid = ava.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => "CN",
                "2.5.4.6" => "C",
                "2.5.4.7" => "L",
                "2.5.4.8" => "ST",
                "2.5.4.10" => "O",
                "2.5.4.11" => "OU",
                "2.5.4.9" => "STREET",
                "0.9.2342.19200300.100.1.25" => "DC",
                "0.9.2342.19200300.100.1.1" => "UID",
                _ => oid.as_str(),
            };
            let value = ava.attr_value();
            let text = match value.tag() {
                _ if keyword.starts_with(|c: char| c.is_ascii_digit()) => None,
                Tag::Utf8String | Tag::PrintableString | Tag::Ia5String => {
                    Some(String::from_utf8_lossy(value.data).into_owned())
                }
                // Java reads T61String and GeneralString as ISO 8859-1.
                Tag::T61String | Tag::GeneralString => {
                    Some(value.data.iter().map(|&b| char::from(b)).collect())
                }
                Tag::BmpString => Some(String::from_utf16_lossy(
                    &value
                        .data
                        .chunks(2)
                        .map(|pair| u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]))
                        .collect::<Vec<_>>(),
                )),
                _ => None,
            };
            let written = match text {
                Some(text) => escape_rfc2253(&text),
                None => {
                    let der = value
                        .to_der_vec()
                        .map_err(|e| format!("client certificate subject: {e}"))?;
                    let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
                    format!("#{hex}")
                }
            };
            values.push(format!("{keyword}={written}"));
        }
        rdns.push(values.join("+"));
    }
    Ok(rdns.join(","))
}

/// Escapes an attribute value as Java's `AVA.toRFC2253String`.
fn escape_rfc2253(value: &str) -> String {
    const ESCAPEES: &str = ",=+<>#;\"\\";
    let mut escaped: Vec<char> = Vec::with_capacity(value.len());
    for c in value.chars() {
        if ESCAPEES.contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(escaped.len() + 4);
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= escaped.len() - trail {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: `ssl.enabled.protocols` and `ssl.cipher.suites` as Kafka 4.1.1
    /// took them: Java's names, unknown ones refused with Java's words,
    /// old protocols and suites Java knows but this broker does not serve
    /// left out with a warning, and a configuration that leaves nothing to
    /// serve refused (Kafka would start and fail every handshake).
    #[test]
    fn protocols_and_cipher_suites_follow_kafkas_names() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let parse = |protocols: &[&str], suites: &[&str]| {
            Protocols::parse(&names(protocols), &names(suites))
        };
        let (default, warnings) = parse(&[], &[]).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(default.versions.len(), 2);
        let served: Vec<String> = default.suites.iter().map(suite_name).collect();
        assert!(
            served.contains(&"TLS_AES_256_GCM_SHA384".to_string()),
            "{served:?}"
        );
        assert!(
            served.contains(&"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string()),
            "{served:?}"
        );
        let (only13, _) = parse(&["TLSv1.3"], &[]).unwrap();
        assert_eq!(only13.versions.len(), 1);
        assert!(only13
            .suites
            .iter()
            .all(|s| s.version() == &rustls::version::TLS13));
        let (old, warnings) = parse(&["TLSv1.1", "TLSv1.2"], &[]).unwrap();
        assert_eq!((old.versions.len(), warnings.len()), (1, 1));
        assert!(parse(&["TLSv1.1"], &[])
            .unwrap_err()
            .contains("no protocol"));
        assert!(parse(&["BOGUS"], &[])
            .unwrap_err()
            .contains("Unsupported protocol BOGUS"));
        assert!(parse(&[], &["BOGUS"])
            .unwrap_err()
            .contains("Unsupported CipherSuite: BOGUS"));
        // A misspelt suite is refused as Java refuses it; known ones Java
        // takes but this broker does not serve are left out.
        assert!(parse(&[], &["TLS_AES_256_GCM_SHA348"]).is_err());
        let (_, warned) = parse(
            &[],
            &[
                "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
                "SSL_RSA_WITH_RC4_128_SHA",
                "TLS_AES_128_GCM_SHA256",
            ],
        )
        .unwrap();
        assert_eq!(warned.len(), 2);
        let (one, warnings) = parse(
            &[],
            &["TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_AES_256_GCM_SHA384"],
        )
        .unwrap();
        assert_eq!(
            one.suites.iter().map(suite_name).collect::<Vec<_>>(),
            ["TLS_AES_256_GCM_SHA384"]
        );
        assert_eq!(warnings.len(), 1);
        let none = parse(&["TLSv1.2"], &["TLS_AES_256_GCM_SHA384"]).unwrap_err();
        assert!(none.contains("none of them is served"), "{none}");
    }

    /// Goal: `ssl.principal.mapping.rules` map subjects as Kafka 4.1.1's
    /// SslPrincipalMapper mapped the same subjects with the same rules
    /// (None where Kafka found no rule or threw, so refused the client), and
    /// refuse the rules Kafka refused with its words.
    #[test]
    fn principal_mapping_rules_map_as_kafka() {
        let cases: [(&str, &str, Option<&str>); 19] = [
            (
                "DEFAULT",
                "CN=client one,OU=eng,O=acme\\, inc,C=US",
                Some("CN=client one,OU=eng,O=acme\\, inc,C=US"),
            ),
            (
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/L,DEFAULT",
                "CN=Client One,OU=eng,O=acme,C=US",
                Some("client one@eng"),
            ),
            (
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/U",
                "CN=Client One,OU=eng,O=acme,C=US",
                Some("CLIENT ONE@ENG"),
            ),
            (
                "RULE:^CN=([^,]*),.*$/$1/",
                "CN=client one,OU=eng,O=acme\\, inc,C=US",
                Some("client one"),
            ),
            ("RULE:^CN=nomatch$/x/,DEFAULT", "CN=a", Some("CN=a")),
            ("RULE:^CN=nomatch$/x/", "CN=a", None),
            ("RULE:(.*)/$1!/", "CN=a", Some("CN=a!!")),
            ("RULE:.*/X/", "CN=a", Some("XX")),
            ("RULE:^CN=(.*)$/$2-$1/", "CN=a", Some("$2-a")),
            ("RULE:^CN=(.*)$/$12/", "CN=a", Some("a2")),
            (
                "RULE:^CN=(.*)$/\\$1 costs \\\\1/",
                "CN=a",
                Some("$1 costs \\1"),
            ),
            ("RULE:^CN=(?<who>.*)$/${who}/", "CN=a", Some("a")),
            ("RULE:^CN=.*$/$1/", "CN=a", None),
            ("RULE:^CN=([a-z]+)\\/x$/$1/", "CN=ab/x", Some("ab")),
            (" RULE:^CN=(.*)$/$1/L , DEFAULT ", "CN=AB", Some("ab")),
            ("", "CN=a", None),
            ("RULE:CN=(.)/<$1>/", "CN=a", Some("<a>")),
            (
                "RULE:^(.*?)=(.*)$/$2=$1/,DEFAULT",
                "CN=a,O=b",
                Some("a,O=b=CN"),
            ),
            ("RULE:^CN=(.*)$/$1/U,RULE:^(.*)$/none/", "O=x", Some("none")),
        ];
        for (rules, subject, expected) in cases {
            let mapper = PrincipalMapper::parse(rules).unwrap();
            assert_eq!(
                mapper.map(subject).as_deref(),
                expected,
                "{rules} {subject}"
            );
        }
        // Java's classes are ASCII; an unmatched named group gives nothing.
        let map = |rules: &str, subject: &str| PrincipalMapper::parse(rules).unwrap().map(subject);
        assert_eq!(
            map("RULE:^CN=(\\w+),.*$/$1/,DEFAULT", "CN=Müller,O=x").as_deref(),
            Some("CN=Müller,O=x")
        );
        assert_eq!(
            map("RULE:^CN=(\\w+),.*$/$1/", "CN=Mueller,O=x").as_deref(),
            Some("Mueller")
        );
        assert_eq!(
            map("RULE:^CN=([\\w ]+)\\b.*$/$1/", "CN=a b,O=x").as_deref(),
            Some("a b")
        );
        assert_eq!(
            map("RULE:^CN=(\\S+)\\s(\\d+)$/$2/", "CN=x 42").as_deref(),
            Some("42")
        );
        let optional = "RULE:^CN=(?<cn>[^,]*)(?<ou>,OU=[^,]*)?.*$/${cn}${ou}/";
        assert_eq!(map(optional, "CN=a,O=x").as_deref(), Some("a"));
        assert_eq!(map(optional, "CN=a,OU=b").as_deref(), Some("a,OU=b"));
        assert_eq!(map("RULE:^CN=(.*)$/${nope}/", "CN=a"), None);
        let refused = |rules: &str| PrincipalMapper::parse(rules).unwrap_err();
        assert_eq!(
            refused("RULE:^CN=(.*)$/$1/Lxyz"),
            "Invalid rule: `RULE:^CN=(.*)$/$1/Lxyz`, unmatched substring: `xyz`"
        );
        assert_eq!(
            refused("BOGUS"),
            "Invalid rule: `BOGUS`, unmatched substring: `BOGUS`"
        );
        assert_eq!(
            refused("RULE:a/b"),
            "Invalid rule: `RULE:a/b`, unmatched substring: `RULE:a/b`"
        );
        assert!(refused("RULE:(a)\\1/x/").contains("Invalid rule"));
    }

    /// Goal: principal names as Kafka 4.1.1 (Java 17's X500Principal)
    /// wrote them for the same subjects.
    #[test]
    fn principal_names_are_javas_rfc2253_names() {
        use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue, KeyPair};
        let name = |entries: Vec<(DnType, DnValue)>| {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            let mut dn = DistinguishedName::new();
            for (kind, value) in entries {
                dn.push(kind, value);
            }
            params.distinguished_name = dn;
            let cert = params.self_signed(&KeyPair::generate().unwrap()).unwrap();
            principal_name(cert.der()).unwrap()
        };
        let utf8 = |s: &str| DnValue::Utf8String(s.into());
        let printable = |s: &str| DnValue::PrintableString(s.try_into().unwrap());
        let ia5 = |s: &str| DnValue::Ia5String(s.try_into().unwrap());
        // openssl req -subj "/C=US/O=acme, inc/OU=eng/CN=client one/emailAddress=c@x.io/DC=example"
        // was User:DC=example,1.2.840.113549.1.9.1=#16066340782e696f,CN=client one,OU=eng,O=acme\, inc,C=US
        assert_eq!(
            name(vec![
                (DnType::CountryName, printable("US")),
                (DnType::OrganizationName, utf8("acme, inc")),
                (DnType::OrganizationalUnitName, utf8("eng")),
                (DnType::CommonName, utf8("client one")),
                (DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]), ia5("c@x.io")),
                (DnType::CustomDnType(vec![0, 9, 2342, 19200300, 100, 1, 25]), ia5("example")),
            ]),
            "DC=example,1.2.840.113549.1.9.1=#16066340782e696f,CN=client one,OU=eng,O=acme\\, inc,C=US"
        );
        assert_eq!(
            name(vec![(DnType::CommonName, utf8(" a+b=c;d<e>f#g\"h\\i "))]),
            "CN=\\ a\\+b\\=c\\;d\\<e\\>f\\#g\\\"h\\\\i\\ "
        );
        assert_eq!(
            name(vec![
                (DnType::LocalityName, utf8("Zürich")),
                (DnType::StateOrProvinceName, utf8("ZH"))
            ]),
            "ST=ZH,L=Zürich"
        );
    }
}
