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
                    None if name.starts_with("TLS_") || name.starts_with("SSL_") => {
                        warnings.push(format!(
                            "ssl.cipher.suites: {name} is not served; this broker serves {}",
                            all.iter().map(suite_name).collect::<Vec<_>>().join(",")
                        ))
                    }
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
    for certificate in trusted {
        roots
            .add(certificate)
            .map_err(|e| format!("a truststore certificate: {e}"))?;
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
