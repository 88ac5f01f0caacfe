//! TLS for SSL and SASL_SSL listeners: the server's key and certificate
//! chain from a PEM keystore (Kafka's `ssl.keystore.type=PEM` and
//! `ssl.keystore.location`, KIP-651), TLSv1.2 and TLSv1.3 (Kafka's
//! `ssl.enabled.protocols` default), no client certificates
//! (`ssl.client.auth=none`, Kafka's default). No I/O but reading the file.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The keystore types Kafka knows; only PEM is read here.
pub const KEYSTORE_TYPES: [&str; 3] = ["JKS", "PKCS12", "PEM"];

/// A TLS server configuration from the PEM keystore at `path`: a private
/// key (PKCS#8, PKCS#1 or SEC1, not encrypted) and the certificate chain,
/// the server's own first, in any order in the file.
///
/// # Errors
/// An unreadable file, one without a key or certificate, an encrypted key,
/// or a key that does not match the certificate; with what is wrong.
pub fn server_config(path: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if text
        .windows(b"ENCRYPTED PRIVATE KEY".len())
        .any(|w| w == b"ENCRYPTED PRIVATE KEY")
    {
        return Err(format!(
            "{}: encrypted private keys (ssl.key.password) are not supported yet; store the key unencrypted",
            path.display()
        ));
    }
    let certificates = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM keystore: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!(
            "{}: no certificate (-----BEGIN CERTIFICATE-----) in the keystore",
            path.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&text).map_err(|e| {
        format!(
            "{}: no private key (-----BEGIN PRIVATE KEY-----) in the keystore: {e}",
            path.display()
        )
    })?;
    // ring's provider: aws-lc-rs's would add hybrid post-quantum key
    // exchange, which Kafka's Java 17 TLS does not offer either, at the cost
    // of building a C library.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])
        .map_err(|e| format!("TLS versions: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keystore(dir: &Path, contents: &str) -> std::path::PathBuf {
        let path = dir.join("keystore.pem");
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Goal: a PEM keystore with the key before or after the chain loads;
    /// a keystore without a key or a certificate, an encrypted key, a key
    /// of another certificate and a JKS file are refused with the reason.
    #[test]
    fn pem_keystores_load_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let server = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let other = rcgen::generate_simple_self_signed(vec!["other".into()]).unwrap();
        let (cert, key) = (server.cert.pem(), server.key_pair.serialize_pem());
        assert!(server_config(&keystore(dir.path(), &format!("{key}{cert}"))).is_ok());
        assert!(server_config(&keystore(dir.path(), &format!("{cert}{key}"))).is_ok());
        let refused = |contents: String, expected: &str| {
            let error = server_config(&keystore(dir.path(), &contents)).unwrap_err();
            assert!(error.contains(expected), "{error}");
        };
        refused(cert.clone(), "no private key");
        refused(key.clone(), "no certificate");
        refused(
            format!("{cert}-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"),
            "encrypted private keys",
        );
        refused(
            format!("{}{cert}", other.key_pair.serialize_pem()),
            "keystore.pem",
        );
        refused("\u{fe}\u{ed}\u{fe}\u{ed} not pem".into(), "no certificate");
        assert!(server_config(Path::new("/nonexistent/keystore.pem"))
            .unwrap_err()
            .contains("cannot read"));
    }
}
