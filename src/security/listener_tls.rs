//! The TLS of one SSL or SASL_SSL listener, and its reloading as Kafka's
//! `SslFactory` reconfigures a listener: the keystore and truststore
//! configs (`SslConfigs.RECONFIGURABLE_CONFIGS`) may be given again per
//! broker and listener (`listener.name.<listener>.ssl.keystore.location`,
//! ...), each over the static value of the same config; the listener then
//! serves new connections with the stores they name. As in Kafka:
//! - the stores are read again when a config changed, or when one is given
//!   again unchanged and its file was modified since it was read;
//! - the new keystore's certificate must keep the subject (DN) of the one
//!   served, and every subject alternative name of it, unless
//!   `ssl.allow.dn.changes` / `ssl.allow.san.changes`;
//! - a truststore cannot be added to a listener that had none.
//!
//! Reading and checking stores reads files: callers run [`rebuild`] off the
//! executor (`spawn_blocking`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use rustls::pki_types::CertificateDer;

use super::keystore::{
    check_passwords, inline_key_store, inline_trust_store, load_key_store, load_trust_store,
    KeyMaterial, StoreType,
};
use super::tls::{server_configs, ClientAuth, Protocols};

/// The SSL configs Kafka reloads at runtime, per listener only
/// (`SslConfigs.RECONFIGURABLE_CONFIGS`).
pub const RECONFIGURABLE_CONFIGS: [&str; 10] = [
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
];

/// The values of [`RECONFIGURABLE_CONFIGS`] a listener's stores are read
/// with, by Kafka name, as given. Debug output names them without values
/// (passwords and keys are among them).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StoreSettings(BTreeMap<&'static str, String>);

impl std::fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl StoreSettings {
    /// The value of `name`, when given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Gives `name` (one of [`RECONFIGURABLE_CONFIGS`]) `value`, or takes
    /// it away.
    pub fn set(&mut self, name: &'static str, value: Option<String>) {
        match value {
            Some(value) => self.0.insert(name, value),
            None => self.0.remove(name),
        };
    }

    /// These settings with listener `listener`'s own values over them
    /// (`value` of `listener.name.<listener lowercased>.<config>`), as
    /// Kafka's `valuesWithPrefixOverride`.
    pub fn for_listener(&self, listener: &str, value: impl Fn(&str) -> Option<String>) -> Self {
        let prefix = listener_prefix(listener);
        let mut settings = self.clone();
        for name in RECONFIGURABLE_CONFIGS {
            if let Some(given) = value(&format!("{prefix}{name}")) {
                settings.set(name, Some(given));
            }
        }
        settings
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from)
    }
}

/// Kafka's `ListenerName.configPrefix`.
pub fn listener_prefix(listener: &str) -> String {
    format!("listener.name.{}.", listener.to_ascii_lowercase())
}

/// What a listener's TLS is made of besides its stores, fixed at start-up.
#[derive(Debug)]
pub struct TlsSettings {
    /// The static store configs, which a listener's own values override.
    pub stores: StoreSettings,
    /// `ssl.client.auth`, for SSL listeners (SASL_SSL ones ask for no
    /// client certificate).
    pub client_auth: ClientAuth,
    /// `ssl.enabled.protocols` and `ssl.cipher.suites`.
    pub protocols: Protocols,
    /// `ssl.allow.dn.changes`.
    pub allow_dn_changes: bool,
    /// `ssl.allow.san.changes`.
    pub allow_san_changes: bool,
}

/// The stores read: the server's key and chain, the trusted CAs (when a
/// truststore is given) and the types to describe as set.
pub struct Stores {
    /// From the keystore.
    pub key: KeyMaterial,
    /// From the truststore.
    pub trusted: Option<Vec<CertificateDer<'static>>>,
    /// The keystore's type when given or when its contents made it other
    /// than Kafka's default.
    pub keystore_type: Option<StoreType>,
    /// The same of the truststore.
    pub truststore_type: Option<StoreType>,
}

/// Reads the stores `settings` name, with Kafka's checks of which configs
/// go together in Kafka's words; `label` names a config in messages (a
/// flag or a config name) and `no_keystore` is the message when no
/// keystore is given at all.
///
/// # Errors
/// A check that fails, or a store that does not load.
pub fn load(
    settings: &StoreSettings,
    label: &dyn Fn(&str) -> String,
    no_keystore: &dyn Fn() -> String,
) -> Result<Stores, String> {
    let parse_type = |name: &str| -> Result<Option<StoreType>, String> {
        settings
            .get(name)
            .map(StoreType::parse)
            .transpose()
            .map_err(|e| format!("{} {e}", label(name)))
    };
    let keystore_given = parse_type("ssl.keystore.type")?;
    let truststore_given = parse_type("ssl.truststore.type")?;
    let keystore_location = settings.path("ssl.keystore.location");
    let truststore_location = settings.path("ssl.truststore.location");
    let keystore_password = settings.get("ssl.keystore.password");
    let key_password = settings.get("ssl.key.password");
    let truststore_password = settings.get("ssl.truststore.password");
    let truststore_certificates = settings.get("ssl.truststore.certificates");
    // Kafka's checks of inline PEM stores, in its words.
    let not_pem = keystore_given != Some(StoreType::Pem);
    let keystore_type_name = keystore_given.unwrap_or(StoreType::Jks).name();
    let inline_key = match (
        settings.get("ssl.keystore.key"),
        settings.get("ssl.keystore.certificate.chain"),
    ) {
        (Some(_), _) if not_pem => return Err(at(label("ssl.keystore.key"), format!("SSL private key can be specified only for PEM, but key store type is {keystore_type_name}."))),
        (Some(_), None) => return Err(at(label("ssl.keystore.key"), "SSL private key is specified, but certificate chain is not specified.")),
        (None, Some(_)) => return Err(at(label("ssl.keystore.certificate.chain"), "SSL certificate chain is specified, but private key is not specified")),
        (Some(key), Some(chain)) => {
            if keystore_location.is_some() {
                return Err(at(label("ssl.keystore.key"), "Both SSL key store location and separate private key are specified."));
            }
            if keystore_password.is_some() {
                return Err(at(label("ssl.keystore.password"), "SSL key store password cannot be specified with PEM format, only key password may be specified."));
            }
            Some((key, chain))
        }
        (None, None) => None,
    };
    if truststore_certificates.is_some() {
        let certificates = label("ssl.truststore.certificates");
        if truststore_given != Some(StoreType::Pem) {
            return Err(format!("{certificates}: SSL trust store certs can be specified only for PEM, but trust store type is {}.", truststore_given.unwrap_or(StoreType::Jks).name()));
        }
        if truststore_location.is_some() {
            return Err(format!("{certificates}: Both SSL trust store location and separate trust certificates are specified."));
        }
        if truststore_password.is_some() {
            return Err(at(
                label("ssl.truststore.password"),
                "SSL trust store password cannot be specified for PEM format.",
            ));
        }
    }
    // Kafka's checks of passwords without a store, in its words.
    if keystore_location.is_none() && inline_key.is_none() && keystore_password.is_some() {
        return Err(at(
            label("ssl.keystore.password"),
            "SSL key store is not specified, but key store password is specified.",
        ));
    }
    if truststore_location.is_none() && truststore_password.is_some() {
        return Err(at(
            label("ssl.truststore.password"),
            "SSL trust store is not specified, but trust store password is specified.",
        ));
    }
    // The type of a store: as given, or Kafka's default unless the file
    // is PEM text.
    let effective = |given: Option<StoreType>, path: &Path| {
        given.unwrap_or_else(|| {
            super::keystore::read_store(path)
                .map(|contents| StoreType::default_for(&contents))
                .unwrap_or(StoreType::Jks)
        })
    };
    // Described as set when given, or when it is not Kafka's default.
    let described = |given: Option<StoreType>, effective: StoreType| {
        given.or(Some(effective).filter(|t| *t != StoreType::Jks))
    };
    let (key, keystore_type) = match (&keystore_location, inline_key) {
        (None, Some((key, chain))) => (
            inline_key_store(key, chain, key_password).map_err(|e| {
                format!(
                    "{}, {}: {e}",
                    label("ssl.keystore.key"),
                    label("ssl.keystore.certificate.chain")
                )
            })?,
            Some(StoreType::Pem),
        ),
        (Some(path), _) => {
            let location = label("ssl.keystore.location");
            let keystore_type = effective(keystore_given, path);
            check_passwords(keystore_type, false, keystore_password)
                .map_err(|e| format!("{location} {}: {e}", path.display()))?;
            let key = load_key_store(path, keystore_type, keystore_password, key_password)
                .map_err(|e| format!("{location}: {e}"))?;
            (key, described(keystore_given, keystore_type))
        }
        (None, None) => return Err(no_keystore()),
    };
    let (trusted, truststore_type) = match (&truststore_location, truststore_certificates) {
        (None, None) => (None, None),
        (None, Some(certificates)) => (
            Some(
                inline_trust_store(certificates)
                    .map_err(|e| at(label("ssl.truststore.certificates"), e))?,
            ),
            Some(StoreType::Pem),
        ),
        (Some(path), _) => {
            let location = label("ssl.truststore.location");
            let truststore_type = effective(truststore_given, path);
            check_passwords(truststore_type, true, truststore_password)
                .map_err(|e| format!("{location} {}: {e}", path.display()))?;
            let trusted = load_trust_store(path, truststore_type, truststore_password)
                .map_err(|e| format!("{location}: {e}"))?;
            (Some(trusted), described(truststore_given, truststore_type))
        }
    };
    Ok(Stores {
        key,
        trusted,
        keystore_type,
        truststore_type,
    })
}

/// `message` about config `label`.
fn at(label: String, message: impl std::fmt::Display) -> String {
    format!("{label}: {message}")
}

/// The subject and subject alternative names of the certificate served,
/// which a reloaded keystore must keep (Kafka's `CertificateEntries`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The subject as Java's `X500Principal.getName()` writes it.
    pub subject: String,
    /// Each subject alternative name, as x509-parser shows it.
    pub alt_names: Vec<String>,
}

impl Identity {
    /// The identity of a certificate; what does not parse is left empty
    /// (the certificate is still served, and compared as it reads).
    pub fn of(certificate: &[u8]) -> Self {
        let subject = super::tls::principal_name(certificate).unwrap_or_default();
        let mut alt_names: Vec<String> = x509_parser::parse_x509_certificate(certificate)
            .ok()
            .and_then(|(_, parsed)| {
                let extension = parsed.subject_alternative_name().ok()??;
                Some(
                    extension
                        .value
                        .general_names
                        .iter()
                        .map(|name| format!("{name:?}"))
                        .collect(),
                )
            })
            .unwrap_or_default();
        alt_names.sort();
        alt_names.dedup();
        Identity { subject, alt_names }
    }
}

/// When the store files `settings` name were modified, taken before
/// they are read, as Kafka's `SecurityStore` remembers it to tell whether
/// to read a store given again unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileTimes {
    keystore: Option<SystemTime>,
    truststore: Option<SystemTime>,
}

impl FileTimes {
    /// The files' times now.
    pub fn of(settings: &StoreSettings) -> Self {
        let modified = |name: &str| {
            std::fs::metadata(settings.path(name)?)
                .and_then(|m| m.modified())
                .ok()
        };
        FileTimes {
            keystore: modified("ssl.keystore.location"),
            truststore: modified("ssl.truststore.location"),
        }
    }
}

/// What a listener's TLS was built from.
#[derive(Debug, Clone)]
pub struct Built {
    /// The store configs.
    pub settings: StoreSettings,
    /// When the store files were modified, before they were read.
    times: FileTimes,
    /// Whether a truststore was given.
    truststore: bool,
    /// The certificate served.
    pub identity: Identity,
}

/// One listener's TLS server configuration and what it was built from.
#[derive(Debug, Clone)]
pub struct ListenerTls {
    /// What new connections are served with.
    pub config: Arc<rustls::ServerConfig>,
    /// Its sources.
    pub built: Built,
}

/// A listener's TLS from `stores` read with `settings`: client
/// certificates as `ssl.client.auth` says on an SSL listener, none asked
/// for on a SASL_SSL one (`sasl`).
///
/// # Errors
/// A key that does not match its certificate, client authentication
/// without a truststore, a certificate that does not parse.
pub fn build(
    tls: &TlsSettings,
    settings: StoreSettings,
    times: FileTimes,
    stores: &Stores,
    sasl: bool,
) -> Result<ListenerTls, String> {
    let identity = Identity::of(
        stores
            .key
            .chain
            .first()
            .ok_or("the keystore holds no certificate")?,
    );
    let truststore = stores.trusted.is_some();
    let client_auth = if sasl {
        ClientAuth::None
    } else {
        tls.client_auth
    };
    let key = KeyMaterial {
        chain: stores.key.chain.clone(),
        key: stores.key.key.clone_key(),
    };
    let (ssl, sasl_ssl) = server_configs(key, client_auth, stores.trusted.clone(), &tls.protocols)?;
    Ok(ListenerTls {
        config: if sasl { sasl_ssl } else { ssl },
        built: Built {
            times,
            settings,
            truststore,
            identity,
        },
    })
}

/// Listener `listener`'s TLS under its configs `settings` (its own values
/// over the static ones), as Kafka's `SslFactory` reconfigures it: None
/// when the configs are those `current` was built from and neither store
/// file was modified since; else the new TLS, checked against `current`
/// when `compare` (not at start-up, where Kafka builds its factories from
/// the configs alone). Reads files: run it off the executor.
///
/// # Errors
/// What is wrong with the new stores; Kafka answers a client such a
/// change with "Invalid dynamic configuration".
pub fn rebuild(
    tls: &TlsSettings,
    current: &Built,
    listener: &str,
    settings: StoreSettings,
    sasl: bool,
    compare: bool,
) -> Result<Option<ListenerTls>, String> {
    let times = FileTimes::of(&settings);
    if settings == current.settings && times == current.times {
        return Ok(None);
    }
    let prefix = listener_prefix(listener);
    let label = |name: &str| format!("{prefix}{name}");
    let stores = load(&settings, &label, &|| {
        format!("{CONFIG_EXCEPTION}: Cannot remove the SSL keystore from an existing listener for which a keystore was configured.")
    })?;
    let truststore_added = !current.truststore && stores.trusted.is_some();
    let next = build(tls, settings, times, &stores, sasl)?;
    if !compare {
        return Ok(Some(next));
    }
    // In Kafka's order.
    let (old, new) = (&current.identity, &next.built.identity);
    if !tls.allow_dn_changes && !old.subject.eq_ignore_ascii_case(&new.subject) {
        return Err(format!(
            "{CONFIG_EXCEPTION}: Keystore DistinguishedName does not match:  existing={{DN={}}}, new={{DN={}}}",
            old.subject, new.subject
        ));
    }
    if !tls.allow_san_changes && !old.alt_names.iter().all(|n| new.alt_names.contains(n)) {
        return Err(format!(
            "{CONFIG_EXCEPTION}: Keystore SubjectAltNames do not match:  existing={{SAN={:?}}}, new={{SAN={:?}}}",
            old.alt_names, new.alt_names
        ));
    }
    if truststore_added {
        return Err(format!("{CONFIG_EXCEPTION}: Cannot add SSL truststore to an existing listener for which no truststore was configured."));
    }
    Ok(Some(next))
}

/// Kafka's own reasons are its ConfigExceptions.
const CONFIG_EXCEPTION: &str = "org.apache.kafka.common.config.ConfigException";
