//! Keystores and truststores as Kafka reads them (`ssl.keystore.type`,
//! `ssl.truststore.type`): Java's JKS and PKCS12 files, which Kafka 4.1.1 on
//! Java 17 reads under either type name, and Kafka's own PEM files (KIP-651),
//! whose private key may be encrypted with `ssl.key.password`. Passwords are
//! checked as Java checks them: a JKS file's integrity digest and key
//! protector, a PKCS12 file's MAC. No I/O but reading the files.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The keystore types Kafka's default SSL engine factory knows of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    /// Java's KeyStore "JKS" (Kafka's default), which reads PKCS12 files too.
    Jks,
    /// Java's KeyStore "PKCS12", which reads JKS files too.
    Pkcs12,
    /// Kafka's PEM store.
    Pem,
}

impl StoreType {
    /// Parses a type name; JKS and PKCS12 in any case, as Java's KeyStore.
    ///
    /// # Errors
    /// A type this broker does not read (Java knows others, e.g. JCEKS).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_uppercase().as_str() {
            "JKS" => Ok(StoreType::Jks),
            "PKCS12" => Ok(StoreType::Pkcs12),
            "PEM" => Ok(StoreType::Pem),
            _ => Err(format!(
                "{:?}: the keystore types read here are JKS, PKCS12 and PEM",
                text.trim()
            )),
        }
    }

    /// Kafka's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            StoreType::Jks => "JKS",
            StoreType::Pkcs12 => "PKCS12",
            StoreType::Pem => "PEM",
        }
    }

    /// The type of a store whose type is not configured: Kafka's default,
    /// JKS, unless the file is PEM text (which Kafka would refuse, wanting
    /// `ssl.keystore.type=PEM`; earlier versions of this broker read only
    /// PEM and so took it without the type).
    pub fn default_for(contents: &[u8]) -> Self {
        if contents.trim_ascii_start().starts_with(b"-----BEGIN ") {
            StoreType::Pem
        } else {
            StoreType::Jks
        }
    }
}

/// A server's private key and certificate chain, its own certificate first.
pub struct KeyMaterial {
    /// The certificate chain.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key.
    pub key: PrivateKeyDer<'static>,
}

/// Kafka's checks of which passwords a store of `store_type` may have,
/// with Kafka's messages; `truststore` for the trust store's.
///
/// # Errors
/// A JKS or PKCS12 keystore without a password, or a password given for a
/// PEM store (only the key password may be).
pub fn check_passwords(
    store_type: StoreType,
    truststore: bool,
    password: Option<&str>,
) -> Result<(), String> {
    match (store_type, truststore, password) {
        (StoreType::Pem, false, Some(_)) => Err(
            "SSL key store password cannot be specified with PEM format, only key password may be specified"
                .into(),
        ),
        (StoreType::Pem, true, Some(_)) => {
            Err("SSL trust store password cannot be specified for PEM format.".into())
        }
        (StoreType::Jks | StoreType::Pkcs12, false, None) => {
            Err("SSL key store is specified, but key store password is not specified.".into())
        }
        _ => Ok(()),
    }
}

/// Reads the key and chain of the keystore at `path`: the first private key
/// entry of a JKS or PKCS12 file (its key decrypted with `key_password`, or
/// the store's password when that is not given, as Kafka does), or a PEM
/// file's key (PKCS#8, PKCS#1 or SEC1; encrypted PKCS#8 with `key_password`)
/// and its certificates, in the order they come.
///
/// # Errors
/// An unreadable or malformed file, a wrong password, a missing key or
/// certificate; with Kafka's words where Kafka has them.
pub fn load_key_store(
    path: &Path,
    store_type: StoreType,
    password: Option<&str>,
    key_password: Option<&str>,
) -> Result<KeyMaterial, String> {
    let contents = read_store(path)?;
    let failed = |why: String| load_failed(path, store_type, &why);
    match store_type {
        StoreType::Pem => pem_key_store(&contents, key_password)
            .map_err(|why| format!("Failed to load PEM SSL keystore {}: {why}", path.display())),
        StoreType::Jks | StoreType::Pkcs12 => {
            let password = password.unwrap_or_default();
            let key_password = key_password.unwrap_or(password);
            let entries =
                java_store(&contents, Some(password), Some(key_password)).map_err(failed)?;
            entries
                .into_iter()
                .find_map(|entry| match entry {
                    // Java's key managers pass over a key without a chain.
                    Entry::Key {
                        key: Some(key),
                        chain,
                    } if !chain.is_empty() => Some(KeyMaterial { chain, key }),
                    _ => None,
                })
                .ok_or_else(|| failed("no private key entry in the keystore".into()))
        }
    }
}

/// The largest store file read: Java's stores hold a few keys and
/// certificates, a few KiB each.
const STORE_BYTES_MAX: u64 = 16 << 20;

/// The contents of the store file at `path`: a regular file (a device or
/// a pipe named by a runtime config would be read without end) of at most
/// [`STORE_BYTES_MAX`] bytes.
///
/// # Errors
/// Not a regular file, too large, unreadable.
pub fn read_store(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let cannot = |e: &dyn std::fmt::Display| format!("cannot read {}: {e}", path.display());
    if !std::fs::metadata(path).map_err(|e| cannot(&e))?.is_file() {
        return Err(cannot(&"not a regular file"));
    }
    let mut contents = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(STORE_BYTES_MAX + 1).read_to_end(&mut contents))
        .map_err(|e| cannot(&e))?;
    if contents.len() as u64 > STORE_BYTES_MAX {
        return Err(cannot(&format_args!("larger than {STORE_BYTES_MAX} bytes")));
    }
    Ok(contents)
}

/// Kafka's message for a JKS or PKCS12 store that did not load.
fn load_failed(path: &Path, store_type: StoreType, why: &str) -> String {
    format!(
        "Failed to load SSL keystore {} of type {}: {why}",
        path.display(),
        store_type.name()
    )
}

/// Reads the trusted certificates of the truststore at `path`: the trusted
/// certificate entries of a JKS or PKCS12 file (a JKS file's integrity is
/// checked only when there is a `password`, as Java does), or every
/// certificate of a PEM file.
///
/// # Errors
/// An unreadable or malformed file, a wrong password, a PKCS12 file with a
/// MAC or encrypted certificates and no password, or a store without a
/// trusted certificate.
pub fn load_trust_store(
    path: &Path,
    store_type: StoreType,
    password: Option<&str>,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let contents = read_store(path)?;
    let failed = |why: String| load_failed(path, store_type, &why);
    let certificates = match store_type {
        StoreType::Pem => {
            pem_certificates(&contents).map_err(|e| format!("{}: {e}", path.display()))?
        }
        StoreType::Jks | StoreType::Pkcs12 => java_store(&contents, password, None)
            .map_err(failed)?
            .into_iter()
            .filter_map(|entry| match entry {
                Entry::Trusted(certificate) => Some(certificate),
                // Java's trust managers trust a key entry's own certificate.
                Entry::Key { chain, .. } => chain.into_iter().next(),
            })
            .collect(),
    };
    if certificates.is_empty() {
        return Err(format!(
            "{}: no trusted certificate in the truststore",
            path.display()
        ));
    }
    Ok(certificates)
}

/// The key and chain of Kafka's inline PEM keystore configs
/// (`ssl.keystore.key`, `ssl.keystore.certificate.chain`), the key
/// encrypted exactly when there is a `key_password`.
///
/// # Errors
/// As for a PEM file, in Kafka's words.
pub fn inline_key_store(
    key: &str,
    chain: &str,
    key_password: Option<&str>,
) -> Result<KeyMaterial, String> {
    pem_key_and_chain(key.as_bytes(), chain.as_bytes(), key_password)
        .map_err(|why| format!("Invalid PEM keystore configs: {why}"))
}

/// The certificates of Kafka's inline truststore config
/// (`ssl.truststore.certificates`).
///
/// # Errors
/// Text that is not PEM certificates, or none.
pub fn inline_trust_store(certificates: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = pem_certificates(certificates.as_bytes())?;
    if certificates.is_empty() {
        return Err(
            "no certificate (-----BEGIN CERTIFICATE-----) in ssl.truststore.certificates".into(),
        );
    }
    Ok(certificates)
}

/// Every certificate of a PEM text.
fn pem_certificates(contents: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(contents)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a PEM truststore: {e}"))
}

/// An entry of a JKS or PKCS12 store.
enum Entry {
    /// A private key (decrypted, unless read as a truststore) and its chain.
    Key {
        key: Option<PrivateKeyDer<'static>>,
        chain: Vec<CertificateDer<'static>>,
    },
    /// A trusted certificate.
    Trusted(CertificateDer<'static>),
}

/// The entries of a JKS or PKCS12 file, told apart by their first bytes as
/// Java 17's dual-format keystores do. Private keys are decrypted with
/// `key_password`; without one (a truststore) only their chains are read.
fn java_store(
    contents: &[u8],
    password: Option<&str>,
    key_password: Option<&str>,
) -> Result<Vec<Entry>, String> {
    if contents.starts_with(&JKS_MAGIC.to_be_bytes()) {
        return jks_entries(contents, password, key_password);
    }
    if contents.first() != Some(&0x30) {
        return Err("Invalid keystore format".into());
    }
    // Without a password (a truststore's may be left out), a store with
    // neither a MAC nor encrypted certificates is still read, as by Java.
    let given = password.is_some();
    let password = password.unwrap_or_default();
    if key_password.is_some_and(|key_password| key_password != password) {
        // One password opens a PKCS12 file here; Java keys can have their
        // own, which Kafka's keytool-made stores never do.
        return Err("Get Key failed: the key password is not the keystore's".into());
    }
    let store = p12_keystore::KeyStore::from_pkcs12(contents, password).map_err(|e| match e {
        _ if !given => {
            "this PKCS12 truststore is read with its password (ssl.truststore.password)".to_string()
        }
        p12_keystore::error::Error::MacError(_) => "keystore password was incorrect".to_string(),
        other => other.to_string(),
    })?;
    let mut entries = Vec::new();
    for (_, entry) in store.entries() {
        match entry {
            p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) => entries.push(Entry::Key {
                key: key_password.map(|_| PrivatePkcs8KeyDer::from(chain.key().to_vec()).into()),
                chain: chain
                    .chain()
                    .iter()
                    .map(|c| CertificateDer::from(c.as_der().to_vec()))
                    .collect(),
            }),
            p12_keystore::KeyStoreEntry::Certificate(certificate) => entries.push(Entry::Trusted(
                CertificateDer::from(certificate.as_der().to_vec()),
            )),
            _ => {}
        }
    }
    Ok(entries)
}

/// The most password-hashing iterations a file may ask for (Java's bound).
const MAX_ITERATIONS: u32 = 5_000_000;

/// The first four bytes of a JKS file.
const JKS_MAGIC: u32 = 0xFEED_FEED;
/// The algorithm of a JKS file's private keys (Sun's KeyProtector).
const JKS_KEY_PROTECTOR: &str = "1.3.6.1.4.1.42.2.17.1.1";

/// A password as JKS hashes it: each UTF-16 unit big-endian.
fn jks_password(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// Reads a JKS file: magic, version (1 or 2), entries (1: a protected key
/// and its chain, 2: a trusted certificate), then the SHA-1 of the
/// password, "Mighty Aphrodite" and everything before (checked only with a
/// `password`; anything after it is not read, as in Java).
fn jks_entries(
    contents: &[u8],
    password: Option<&str>,
    key_password: Option<&str>,
) -> Result<Vec<Entry>, String> {
    let malformed = || "Invalid keystore format".to_string();
    let mut reader = JksReader {
        rest: contents.get(4..).ok_or_else(malformed)?,
    };
    let version = reader.u32().ok_or_else(malformed)?;
    if version != 1 && version != 2 {
        return Err(malformed());
    }
    let count = reader.u32().ok_or_else(malformed)?;
    // Keys are recovered once the store's digest is checked, as in Java.
    let mut entries = Vec::new();
    let mut protected_keys = Vec::new();
    for _ in 0..count {
        let tag = reader.u32().ok_or_else(malformed)?;
        reader.utf().ok_or_else(malformed)?; // alias
        reader.bytes(8).ok_or_else(malformed)?; // creation time
        match tag {
            1 => {
                let protected = reader.sized().ok_or_else(malformed)?;
                let chain_len = reader.u32().ok_or_else(malformed)?;
                let mut chain = Vec::new();
                for _ in 0..chain_len {
                    chain.push(reader.certificate(version).ok_or_else(malformed)?);
                }
                protected_keys.push(protected);
                entries.push(Entry::Key { key: None, chain });
            }
            2 => entries.push(Entry::Trusted(
                reader.certificate(version).ok_or_else(malformed)?,
            )),
            _ => return Err(malformed()),
        }
    }
    // The digest follows the entries; Java reads nothing after it.
    if let Some(password) = password {
        use sha1::{Digest, Sha1};
        let body = &contents[..contents.len() - reader.rest.len()];
        let digest = reader.bytes(20).ok_or_else(malformed)?;
        let expected = Sha1::new()
            .chain_update(jks_password(password))
            .chain_update(b"Mighty Aphrodite")
            .chain_update(body)
            .finalize();
        if expected.as_slice() != digest {
            return Err("Keystore was tampered with, or password was incorrect".into());
        }
    }
    if let Some(key_password) = key_password {
        let keys = entries.iter_mut().filter_map(|entry| match entry {
            Entry::Key { key, .. } => Some(key),
            Entry::Trusted(_) => None,
        });
        for (key, protected) in keys.zip(protected_keys) {
            *key = Some(PrivatePkcs8KeyDer::from(jks_recover_key(protected, key_password)?).into());
        }
    }
    Ok(entries)
}

/// Reads the big-endian fields of a JKS file.
struct JksReader<'a> {
    rest: &'a [u8],
}

impl<'a> JksReader<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(taken)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.bytes(4)?.try_into().ok()?))
    }

    /// Java's `writeUTF`: a 16-bit length, then modified UTF-8.
    fn utf(&mut self) -> Option<&'a [u8]> {
        let len = u16::from_be_bytes(self.bytes(2)?.try_into().ok()?);
        self.bytes(usize::from(len))
    }

    /// A 32-bit length, then that many bytes.
    fn sized(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.u32()?).ok()?;
        self.bytes(len)
    }

    /// A certificate: its type (from version 2 on; X.509 only), then its DER.
    fn certificate(&mut self, version: u32) -> Option<CertificateDer<'static>> {
        if version == 2 && self.utf()? != b"X.509" {
            return None;
        }
        Some(CertificateDer::from(self.sized()?.to_vec()))
    }
}

/// Recovers a private key Sun's KeyProtector protected: an
/// EncryptedPrivateKeyInfo whose data is a 20-byte salt, the key XORed with
/// SHA-1 chained over the password, and the SHA-1 of password and key.
fn jks_recover_key(protected: &[u8], password: &str) -> Result<Vec<u8>, String> {
    use sha1::{Digest, Sha1};
    let (algorithm, data) = encrypted_key_info(protected)
        .map_err(|e| format!("the protected private key does not parse: {e}"))?;
    if algorithm.oid.to_string() != JKS_KEY_PROTECTOR || data.len() < 40 {
        return Err(format!(
            "unsupported key protection algorithm {}",
            algorithm.oid
        ));
    }
    let password = jks_password(password);
    let (salt, rest) = data.split_at(20);
    let (encrypted, check) = rest.split_at(rest.len() - 20);
    let mut pad: [u8; 20] = salt.try_into().map_err(|_| "salt".to_string())?;
    let mut key = Vec::with_capacity(encrypted.len());
    for block in encrypted.chunks(20) {
        pad = Sha1::new()
            .chain_update(&password)
            .chain_update(pad)
            .finalize()
            .into();
        key.extend(block.iter().zip(pad).map(|(byte, mask)| byte ^ mask));
    }
    let expected = Sha1::new()
        .chain_update(&password)
        .chain_update(&key)
        .finalize();
    if expected.as_slice() != check {
        return Err("Cannot recover key".into());
    }
    Ok(key)
}

/// The algorithm and encrypted data of a DER EncryptedPrivateKeyInfo.
fn encrypted_key_info(der: &[u8]) -> der::Result<(spki::AlgorithmIdentifierOwned, Vec<u8>)> {
    use der::{Decode, Reader};
    let mut reader = der::SliceReader::new(der)?;
    let parsed = reader.sequence(|fields| {
        let algorithm = spki::AlgorithmIdentifierOwned::decode(fields)?;
        let data = der::asn1::OctetString::decode(fields)?;
        Ok((algorithm, data.into_bytes()))
    })?;
    reader.finish(parsed)
}

/// The key and certificates of a PEM keystore, its key encrypted (PKCS#8
/// `ENCRYPTED PRIVATE KEY`) exactly when there is a `key_password`.
fn pem_key_store(contents: &[u8], key_password: Option<&str>) -> Result<KeyMaterial, String> {
    pem_key_and_chain(contents, contents, key_password)
}

/// The private key of the PEM text `key` (encrypted exactly when there is
/// a `key_password`) and the certificates of the PEM text `chain`.
fn pem_key_and_chain(
    key: &[u8],
    chain: &[u8],
    key_password: Option<&str>,
) -> Result<KeyMaterial, String> {
    let text = String::from_utf8_lossy(key);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(
            "the private key is encrypted in OpenSSL's traditional format; Kafka reads encrypted keys as PKCS#8 (openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES)"
                .into(),
        );
    }
    let chain = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a PEM keystore: {e}"))?;
    if chain.is_empty() {
        return Err("no certificate (-----BEGIN CERTIFICATE-----) in the keystore".into());
    }
    let encrypted = pem_block(&text, "ENCRYPTED PRIVATE KEY")?;
    let key = match (encrypted, key_password) {
        (Some(der), Some(password)) => {
            PrivatePkcs8KeyDer::from(decrypt_pkcs8(&der, password)?).into()
        }
        (Some(_), None) => {
            return Err("the private key is encrypted: give its password (ssl.key.password)".into())
        }
        (None, Some(_)) => {
            return Err(
                "ssl.key.password is given but the private key is not encrypted (-----BEGIN ENCRYPTED PRIVATE KEY-----)"
                    .into(),
            )
        }
        (None, None) => PrivateKeyDer::from_pem_slice(key).map_err(|e| {
            format!("no private key (-----BEGIN PRIVATE KEY-----) in the keystore: {e}")
        })?,
    };
    Ok(KeyMaterial { chain, key })
}

/// The DER of the one `-----BEGIN {label}-----` block of a PEM text.
fn pem_block(text: &str, label: &str) -> Result<Option<Vec<u8>>, String> {
    use base64::Engine;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let Some(start) = text.find(&begin) else {
        return Ok(None);
    };
    let body = &text[start + begin.len()..];
    let stop = body
        .find(&end)
        .ok_or_else(|| format!("{begin} without {end}"))?;
    let base64: String = body[..stop]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(base64)
        .map(Some)
        .map_err(|e| format!("{label}: {e}"))
}

/// Decrypts a DER EncryptedPrivateKeyInfo to its PKCS#8 key: PKCS#12's
/// password-based schemes with SHA-1 (3-key triple DES, as `openssl pkcs8
/// -topk8 -v1 PBE-SHA1-3DES` makes; 40- and 128-bit RC2), which Kafka on
/// Java 17 reads, and PBES2 (PBKDF2 with AES-CBC, OpenSSL's default), which
/// it does not.
fn decrypt_pkcs8(der: &[u8], password: &str) -> Result<Vec<u8>, String> {
    use der::{Decode, Encode};
    let (algorithm, data) = encrypted_key_info(der)
        .map_err(|e| format!("the encrypted private key does not parse: {e}"))?;
    let parameters = algorithm
        .parameters
        .as_ref()
        .ok_or("the encrypted private key has no parameters")?
        .to_der()
        .map_err(|e| e.to_string())?;
    let wrong = || "ssl.key.password does not decrypt the private key".to_string();
    let key = match algorithm.oid.to_string().as_str() {
        "1.2.840.113549.1.5.13" => {
            let pbes2 = pkcs5::pbes2::Parameters::from_der(&parameters)
                .map_err(|e| format!("PBES2 parameters: {e}"))?;
            // The file's own costs are bounded as Java bounds PBE's.
            match &pbes2.kdf {
                pkcs5::pbes2::Kdf::Pbkdf2(pbkdf2) if pbkdf2.iteration_count > MAX_ITERATIONS => {
                    return Err(format!(
                        "PBKDF2 iteration count too large: {}",
                        pbkdf2.iteration_count
                    ))
                }
                pkcs5::pbes2::Kdf::Scrypt(_) => {
                    return Err("scrypt-encrypted private keys are not read (PBKDF2 ones are)".into())
                }
                _ => {}
            }
            pbes2.decrypt(password, &data).map_err(|e| match e {
                pkcs5::Error::DecryptFailed => wrong(),
                other => format!("the private key's encryption is not read here: {other}"),
            })?
        }
        "1.2.840.113549.1.12.1.3" => pkcs12_pbe::<des::TdesEde3>(&parameters, &data, password, 24)?,
        "1.2.840.113549.1.12.1.5" => pkcs12_pbe::<rc2::Rc2>(&parameters, &data, password, 16)?,
        "1.2.840.113549.1.12.1.6" => pkcs12_pbe::<rc2::Rc2>(&parameters, &data, password, 5)?,
        other => {
            return Err(format!(
                "the private key is encrypted with {other}, which is not read here (PBE-SHA1-3DES, PBE-SHA1-RC2-40/128 and PBES2 are)"
            ))
        }
    };
    // A wrong password may still unpad; the key would then not parse.
    pkcs8::PrivateKeyInfo::from_der(&key).map_err(|_| wrong())?;
    Ok(key)
}

/// PKCS#12's password-based encryption (RFC 7292 appendix B) with SHA-1 and
/// the block cipher `C` in CBC mode: parameters are a salt and an iteration
/// count; the key and IV are derived from the password.
fn pkcs12_pbe<C>(
    parameters: &[u8],
    data: &[u8],
    password: &str,
    key_len: usize,
) -> Result<Vec<u8>, String>
where
    C: cbc::cipher::BlockCipher + cbc::cipher::BlockDecrypt + cbc::cipher::KeyInit,
{
    use cbc::cipher::{block_padding::Pkcs7, BlockDecryptMut, KeyIvInit};
    use der::{Decode, Reader};
    let bad = |e: der::Error| format!("PBE parameters: {e}");
    let mut reader = der::SliceReader::new(parameters).map_err(bad)?;
    let (salt, iterations) = reader
        .sequence(|fields| {
            let salt = der::asn1::OctetString::decode(fields)?;
            let iterations = i32::decode(fields)?;
            Ok((salt.into_bytes(), iterations))
        })
        .map_err(bad)?;
    if !(1..=MAX_ITERATIONS as i32).contains(&iterations) {
        return Err(format!("PBE iteration count out of range: {iterations}"));
    }
    use pkcs12::kdf::{derive_key_utf8, Pkcs12KeyType};
    let derive = |kind, len| {
        derive_key_utf8::<sha1::Sha1>(password, &salt, kind, iterations, len).map_err(bad)
    };
    let key = derive(Pkcs12KeyType::EncryptionKey, key_len)?;
    let iv = derive(Pkcs12KeyType::Iv, 8)?;
    cbc::Decryptor::<C>::new_from_slices(&key, &iv)
        .map_err(|e| e.to_string())?
        .decrypt_padded_vec_mut::<Pkcs7>(data)
        .map_err(|_| "ssl.key.password does not decrypt the private key".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::tls::{server_configs, ClientAuth, Protocols};

    fn keystore(dir: &Path, contents: &[u8]) -> std::path::PathBuf {
        let path = dir.join("keystore");
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Goal: a PEM keystore with the key before or after the chain loads and
    /// serves; a keystore without a key or a certificate, an encrypted key
    /// without its password, a key password for a plain key, a key of
    /// another certificate and a JKS file read as PEM are refused with the
    /// reason; client authentication needs a truststore with certificates.
    #[test]
    fn pem_keystores_load_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let server = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let other = rcgen::generate_simple_self_signed(vec!["other".into()]).unwrap();
        let (cert, key) = (server.cert.pem(), server.key_pair.serialize_pem());
        let load = |contents: &str, key_password: Option<&str>| {
            let path = keystore(dir.path(), contents.as_bytes());
            load_key_store(&path, StoreType::Pem, None, key_password).and_then(|key| {
                server_configs(key, ClientAuth::None, None, &Protocols::kafka_default())
            })
        };
        assert!(load(&format!("{key}{cert}"), None).is_ok());
        assert!(load(&format!("{cert}{key}"), None).is_ok());
        let refused = |contents: String, key_password: Option<&str>, expected: &str| {
            let error = load(&contents, key_password).unwrap_err();
            assert!(error.contains(expected), "{error}");
        };
        refused(cert.clone(), None, "no private key");
        refused(key.clone(), None, "no certificate");
        let encrypted = format!(
            "{cert}-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
        );
        refused(encrypted.clone(), None, "give its password");
        refused(encrypted, Some("secret"), "does not parse");
        refused(format!("{key}{cert}"), Some("secret"), "not encrypted");
        refused(
            format!("{}{cert}", other.key_pair.serialize_pem()),
            None,
            "key and certificate",
        );
        refused(
            "\u{fe}\u{ed}\u{fe}\u{ed} not pem".into(),
            None,
            "no certificate",
        );
        let missing = load_key_store(Path::new("/nonexistent/ks.pem"), StoreType::Pem, None, None);
        assert!(missing.err().unwrap().contains("cannot read"));
        let both = load_key_store(
            &keystore(dir.path(), format!("{key}{cert}").as_bytes()),
            StoreType::Pem,
            None,
            None,
        )
        .unwrap();
        let needs = server_configs(
            both,
            ClientAuth::Required,
            None,
            &Protocols::kafka_default(),
        )
        .unwrap_err();
        assert!(needs.contains("needs a truststore"), "{needs}");
        let truststore = dir.path().join("truststore.pem");
        std::fs::write(&truststore, &key).unwrap();
        let empty = load_trust_store(&truststore, StoreType::Pem, None).unwrap_err();
        assert!(empty.contains("no trusted certificate"), "{empty}");
        std::fs::write(&truststore, &cert).unwrap();
        assert_eq!(
            load_trust_store(&truststore, StoreType::Pem, None)
                .unwrap()
                .len(),
            1
        );
    }

    /// Goal: types parse as Kafka names them, an unset type is Kafka's
    /// default unless the file is PEM, and passwords are checked with
    /// Kafka's messages.
    #[test]
    fn store_types_and_passwords_follow_kafka() {
        assert_eq!(StoreType::parse("jks"), Ok(StoreType::Jks));
        assert_eq!(StoreType::parse(" PKCS12 "), Ok(StoreType::Pkcs12));
        assert_eq!(StoreType::parse("PEM"), Ok(StoreType::Pem));
        assert!(StoreType::parse("JCEKS").is_err());
        assert_eq!(
            StoreType::default_for(b"\n-----BEGIN PRIVATE KEY-----"),
            StoreType::Pem
        );
        assert_eq!(
            StoreType::default_for(&JKS_MAGIC.to_be_bytes()),
            StoreType::Jks
        );
        assert_eq!(StoreType::default_for(b"\x30\x82"), StoreType::Jks);
        let check = |t, truststore, password| check_passwords(t, truststore, password).err();
        assert_eq!(
            check(StoreType::Jks, false, None).as_deref(),
            Some("SSL key store is specified, but key store password is not specified.")
        );
        assert_eq!(check(StoreType::Jks, true, None), None);
        assert_eq!(check(StoreType::Pkcs12, false, Some("x")), None);
        assert!(check(StoreType::Pem, false, Some("x"))
            .unwrap()
            .contains("only key password"));
        assert!(check(StoreType::Pem, true, Some("x"))
            .unwrap()
            .contains("trust store password"));
        assert_eq!(check(StoreType::Pem, false, None), None);
    }

    /// Goal: malformed JKS and PKCS12 files are refused, never a panic:
    /// every truncation of a JKS-shaped file and of a DER sequence, counts
    /// and lengths past the end, a bad integrity digest.
    #[test]
    fn malformed_java_stores_are_refused() {
        let mut jks = JKS_MAGIC.to_be_bytes().to_vec();
        jks.extend(2u32.to_be_bytes()); // version
        jks.extend(1u32.to_be_bytes()); // one entry
        jks.extend(2u32.to_be_bytes()); // trusted certificate
        jks.extend(2u16.to_be_bytes());
        jks.extend(b"ca");
        jks.extend(0u64.to_be_bytes());
        jks.extend(5u16.to_be_bytes());
        jks.extend(b"X.509");
        jks.extend(3u32.to_be_bytes());
        jks.extend([1, 2, 3]);
        use sha1::{Digest, Sha1};
        let digest = Sha1::new()
            .chain_update(jks_password("pw"))
            .chain_update(b"Mighty Aphrodite")
            .chain_update(&jks)
            .finalize();
        let mut whole = jks.clone();
        whole.extend(digest);
        let entries = java_store(&whole, Some("pw"), None).unwrap();
        assert!(matches!(&entries[..], [Entry::Trusted(c)] if c.as_ref() == [1, 2, 3]));
        assert_eq!(
            java_store(&whole, Some("other"), None).err().unwrap(),
            "Keystore was tampered with, or password was incorrect"
        );
        // Without a password the digest is not checked, as in Java, and
        // nothing after it is read.
        assert!(java_store(&jks, None, None).is_ok());
        let mut trailing = whole.clone();
        trailing.extend(b"after");
        assert!(java_store(&trailing, Some("pw"), None).is_ok());
        for len in 0..whole.len() {
            assert!(
                java_store(&whole[..len], Some("pw"), None).is_err(),
                "{len}"
            );
            let mut huge = whole.clone();
            huge[len] = 0xff;
            let _ = java_store(&huge, None, Some("pw"));
        }
        for len in 0..whole.len() {
            let mut der = vec![0x30, 0x82, 0xff, 0xff];
            der.extend(&whole[..len]);
            assert!(java_store(&der, Some("pw"), Some("pw")).is_err());
            assert!(decrypt_pkcs8(&der, "pw").is_err());
            assert!(jks_recover_key(&der, "pw").is_err());
        }
    }
}
