//! SASL/SCRAM (RFC 5802; SHA-256 and SHA-512 as RFC 7677 and Kafka's
//! KIP-84): stored credentials and the server side of the exchange. No
//! I/O: the connection feeds client messages in and sends what comes out.
//!
//! As Kafka's `ScramSaslServer`: the gs2 header must be `n` (no channel
//! binding), an authorization id other than the user name is refused with
//! Kafka's message, the only extension taken is `tokenauth` (a delegation
//! token login: the user name is the token id, the HMAC's base64 the
//! password, and the session is the token owner's), and every other failure is one
//! generic failure so an unauthenticated client learns nothing about which
//! users exist.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};

/// Fewest iterations a credential may have (Kafka's `minIterations`, both
/// mechanisms).
pub const ITERATIONS_MIN: i32 = 4096;
/// Most iterations a credential may have (Kafka's `MAX_ITERATIONS`).
pub const ITERATIONS_MAX: i32 = 16384;

/// A SCRAM mechanism, by its wire type (AlterUserScramCredentials) and
/// SASL name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256, type 1.
    Sha256,
    /// SCRAM-SHA-512, type 2.
    Sha512,
}

impl ScramMechanism {
    /// Both, in type order.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The mechanism of a wire type; None for 0 (UNKNOWN) and anything else.
    pub fn from_type(mechanism: i8) -> Option<Self> {
        match mechanism {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// The wire type.
    pub fn type_id(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a SASL name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// HMAC of `data` under `key` with this mechanism's hash.
    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
            let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key)
                .expect("HMAC takes keys of any length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        match self {
            ScramMechanism::Sha256 => run::<Hmac<Sha256>>(key, data),
            ScramMechanism::Sha512 => run::<Hmac<Sha512>>(key, data),
        }
    }

    /// `Hi(password, salt, iterations)`: PBKDF2 with this mechanism's HMAC.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut out = [0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out.to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut out = [0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out.to_vec()
            }
        }
    }

    /// The credential a salted password gives: StoredKey = H(HMAC(salted,
    /// "Client Key")), ServerKey = HMAC(salted, "Server Key"), as Kafka's
    /// controller stores an AlterUserScramCredentials upsertion.
    pub fn credential(
        self,
        salted_password: &[u8],
        salt: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        let client_key = self.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: self.hash(&client_key),
            server_key: self.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }
}

/// What the broker keeps of a user's password for one mechanism.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    /// Salt.
    pub salt: Vec<u8>,
    /// H(ClientKey).
    pub stored_key: Vec<u8>,
    /// HMAC(SaltedPassword, "Server Key").
    pub server_key: Vec<u8>,
    /// PBKDF2 iterations.
    pub iterations: i32,
}

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramFailure {
    /// Told to the client as Kafka's generic "invalid credentials" answer;
    /// the reason is only logged.
    Invalid(&'static str),
    /// Told to the client as it is (Kafka's `SaslAuthenticationException`).
    Told(&'static str),
}

/// Kafka's message for an authorization id other than the user.
pub const AUTHORIZATION_ID_REFUSED: &str =
    "Authentication failed: Client requested an authorization id that is different from username";

/// Whom a SCRAM user name logs in as: what the lookup of a user or token
/// gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramLogin {
    /// The credential to check the proof against.
    pub credential: ScramCredential,
    /// The principal name the session gets: the user's own, or a token's
    /// owner's.
    pub principal: String,
    /// When the credential expires, in ms since the epoch (a token's
    /// expiry); None: never.
    pub expires_ms: Option<i64>,
    /// A delegation token login.
    pub token: bool,
}

enum State {
    ClientFirst,
    ClientFinal {
        login: ScramLogin,
        /// client-first-message-bare "," server-first-message ","
        auth_message_start: String,
        /// Client and server nonce.
        nonce: String,
    },
    Done,
}

/// The server side of one SCRAM exchange.
pub struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
}

impl ScramServer {
    /// An exchange for `mechanism`.
    pub fn new(mechanism: ScramMechanism) -> Self {
        ScramServer {
            mechanism,
            state: State::ClientFirst,
        }
    }

    /// Its mechanism.
    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// Takes the client-first message; returns the server-first message.
    /// `lookup` gives the login of a user name for this mechanism, a
    /// delegation token's when its second argument (the `tokenauth`
    /// extension) is true;
    /// `server_nonce` is fresh randomness (printable, no comma).
    ///
    /// # Errors
    /// A malformed message, an unknown user, a token login, or an
    /// authorization id other than the user.
    pub fn client_first(
        &mut self,
        message: &[u8],
        server_nonce: &str,
        lookup: impl FnOnce(&str, bool) -> Option<ScramLogin>,
    ) -> Result<Vec<u8>, ScramFailure> {
        if !matches!(self.state, State::ClientFirst) {
            return Err(ScramFailure::Invalid("unexpected client-first message"));
        }
        self.state = State::Done;
        let message = std::str::from_utf8(message)
            .map_err(|_| ScramFailure::Invalid("client-first message is not UTF-8"))?;
        let first = parse_client_first(message)?;
        let token = first
            .extensions
            .iter()
            .any(|(key, value)| *key == "tokenauth" && value.eq_ignore_ascii_case("true"));
        let user = first.user;
        let login = lookup(&user, token).ok_or(ScramFailure::Invalid(if token {
            "no delegation token of this id"
        } else {
            "no credential for this user"
        }))?;
        let credential = &login.credential;
        if first
            .authorization_id
            .as_deref()
            .is_some_and(|id| !id.is_empty() && id != user)
        {
            return Err(ScramFailure::Told(AUTHORIZATION_ID_REFUSED));
        }
        if credential.iterations < ITERATIONS_MIN {
            return Err(ScramFailure::Invalid("credential has too few iterations"));
        }
        let nonce = format!("{}{server_nonce}", first.nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&credential.salt),
            credential.iterations
        );
        let auth_message_start = format!("{},{server_first},", first.bare);
        self.state = State::ClientFinal {
            login,
            auth_message_start,
            nonce,
        };
        Ok(server_first.into_bytes())
    }

    /// Takes the client-final message; returns the server-final message and
    /// the login that authenticated.
    ///
    /// # Errors
    /// A malformed message, a wrong nonce, or a proof that does not match.
    pub fn client_final(&mut self, message: &[u8]) -> Result<(Vec<u8>, ScramLogin), ScramFailure> {
        let State::ClientFinal {
            login,
            auth_message_start,
            nonce,
        } = std::mem::replace(&mut self.state, State::Done)
        else {
            return Err(ScramFailure::Invalid("unexpected client-final message"));
        };
        let message = std::str::from_utf8(message)
            .map_err(|_| ScramFailure::Invalid("client-final message is not UTF-8"))?;
        let (without_proof, proof) = message
            .rsplit_once(",p=")
            .ok_or(ScramFailure::Invalid("client-final message has no proof"))?;
        let mut fields = without_proof.split(',');
        let binding =
            fields
                .next()
                .and_then(|f| f.strip_prefix("c="))
                .ok_or(ScramFailure::Invalid(
                    "client-final message has no channel binding",
                ))?;
        BASE64
            .decode(binding)
            .map_err(|_| ScramFailure::Invalid("channel binding is not base64"))?;
        let client_nonce = fields
            .next()
            .and_then(|f| f.strip_prefix("r="))
            .ok_or(ScramFailure::Invalid("client-final message has no nonce"))?;
        if !fields.all(|field| extension(field).is_some()) {
            return Err(ScramFailure::Invalid("malformed client-final extension"));
        }
        if client_nonce != nonce {
            return Err(ScramFailure::Invalid(
                "wrong nonce in the client-final message",
            ));
        }
        let proof = BASE64
            .decode(proof)
            .map_err(|_| ScramFailure::Invalid("proof is not base64"))?;
        let auth_message = format!("{auth_message_start}{without_proof}");
        let credential = &login.credential;
        let signature = self
            .mechanism
            .hmac(&credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramFailure::Invalid("proof of the wrong length"));
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        if !super::constant_time_eq(&self.mechanism.hash(&client_key), &credential.stored_key) {
            return Err(ScramFailure::Invalid("invalid client proof"));
        }
        let server_signature = self
            .mechanism
            .hmac(&credential.server_key, auth_message.as_bytes());
        let server_final = format!("v={}", BASE64.encode(server_signature));
        Ok((server_final.into_bytes(), login))
    }
}

struct ClientFirst<'a> {
    /// As sent (saslname-encoded).
    authorization_id: Option<String>,
    user: String,
    nonce: &'a str,
    extensions: Vec<(&'a str, &'a str)>,
    /// client-first-message-bare: the message after the gs2 header.
    bare: &'a str,
}

/// `n,[a=authzid],[m=reserved,]n=user,r=nonce[,key=value...]`, with the
/// characters Kafka's `ClientFirstMessage` pattern allows: names and values
/// ASCII (names with `=` only as `=2C` or `=3D`), the nonce printable ASCII,
/// extension keys letters. The authorization id is kept as sent (Kafka
/// compares it undecoded with the decoded user name).
fn parse_client_first(message: &str) -> Result<ClientFirst<'_>, ScramFailure> {
    let malformed = ScramFailure::Invalid("malformed client-first message");
    let rest = message.strip_prefix("n,").ok_or(malformed.clone())?;
    let (authzid, bare) = rest.split_once(',').ok_or(malformed.clone())?;
    let authorization_id = match authzid {
        "" => None,
        id => {
            let id = id.strip_prefix("a=").ok_or(malformed.clone())?;
            decode_sasl_name(id)?;
            Some(id.to_string())
        }
    };
    let mut fields = bare.split(',').peekable();
    if fields
        .next_if(|f| f.starts_with("m="))
        .is_some_and(|reserved| !is_value(&reserved[2..]))
    {
        return Err(malformed);
    }
    let user = fields
        .next()
        .and_then(|f| f.strip_prefix("n="))
        .ok_or(malformed.clone())?;
    let user = decode_sasl_name(user)?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        .ok_or(malformed.clone())?;
    let mut extensions = Vec::new();
    for field in fields {
        extensions.push(extension(field).ok_or(malformed.clone())?);
    }
    Ok(ClientFirst {
        authorization_id,
        user,
        nonce,
        extensions,
        bare,
    })
}

/// An extension `key=value`: the key letters, the value a SCRAM value.
fn extension(field: &str) -> Option<(&str, &str)> {
    let (key, value) = field.split_once('=')?;
    (!key.is_empty() && key.bytes().all(|b| b.is_ascii_alphabetic()) && is_value(value))
        .then_some((key, value))
}

/// A SCRAM value: ASCII other than NUL (commas never reach here).
fn is_value(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| (0x01..=0x7f).contains(&b))
}

/// A saslname: ASCII, `=2C` is a comma, `=3D` an equals sign, any other
/// `=` is malformed.
fn decode_sasl_name(name: &str) -> Result<String, ScramFailure> {
    if !is_value(name) {
        return Err(ScramFailure::Invalid("malformed user name"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramFailure::Invalid("malformed user name")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `count` random bytes from the operating system.
///
/// # Errors
/// When the operating system gives none.
pub fn random_bytes(count: usize) -> Result<Vec<u8>, getrandom::Error> {
    let mut bytes = vec![0u8; count];
    getrandom::getrandom(&mut bytes)?;
    Ok(bytes)
}

/// A fresh server nonce: 32 random alphanumeric characters.
///
/// # Errors
/// When the operating system gives no random bytes.
pub fn server_nonce() -> Result<String, getrandom::Error> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    Ok(random_bytes(32)?
        .into_iter()
        .map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil".
    const SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
    const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn pencil() -> ScramCredential {
        let salt = BASE64.decode(SALT).unwrap();
        let m = ScramMechanism::Sha256;
        m.credential(&m.salted_password(b"pencil", &salt, 4096), &salt, 4096)
    }

    /// A user's own login with `credential`.
    fn login(credential: ScramCredential) -> ScramLogin {
        ScramLogin {
            credential,
            principal: "user".into(),
            expires_ms: None,
            token: false,
        }
    }

    /// Goal: the exchange of RFC 7677's worked example, byte for byte.
    #[test]
    fn rfc_7677_example_authenticates() {
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        let first = server
            .client_first(CLIENT_FIRST.as_bytes(), SERVER_NONCE, |user, token| {
                (user == "user" && !token).then(|| login(pencil()))
            })
            .unwrap();
        assert_eq!(first, SERVER_FIRST.as_bytes());
        let (last, authenticated) = server.client_final(CLIENT_FINAL.as_bytes()).unwrap();
        assert_eq!(last, SERVER_FINAL.as_bytes());
        assert_eq!(authenticated, login(pencil()));
    }

    /// Goal: `tokenauth=true` looks the name up as a token id, and the
    /// login that authenticates is the token's (its owner, its expiry).
    #[test]
    fn token_logins_are_the_owners() {
        let token_login = ScramLogin {
            credential: pencil(),
            principal: "alice".into(),
            expires_ms: Some(42),
            token: true,
        };
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        let first = format!("{CLIENT_FIRST},tokenauth=true");
        let server_first = server
            .client_first(first.as_bytes(), SERVER_NONCE, |user, token| {
                (user == "user" && token).then(|| token_login.clone())
            })
            .unwrap();
        // The client's proof over the changed client-first message.
        let m = ScramMechanism::Sha256;
        let salted = m.salted_password(b"pencil", &BASE64.decode(SALT).unwrap(), 4096);
        let client_key = m.hmac(&salted, b"Client Key");
        let without_proof = CLIENT_FINAL.split(",p=").next().unwrap();
        let auth_message = format!(
            "{},{},{without_proof}",
            &first[3..],
            String::from_utf8(server_first).unwrap()
        );
        let signature = m.hmac(&m.hash(&client_key), auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let last = format!("{without_proof},p={}", BASE64.encode(proof));
        let (_, authenticated) = server.client_final(last.as_bytes()).unwrap();
        assert_eq!(authenticated, token_login);
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        assert_eq!(
            server.client_first(first.as_bytes(), SERVER_NONCE, |_, token| {
                (!token).then(|| login(pencil()))
            }),
            Err(ScramFailure::Invalid("no delegation token of this id"))
        );
    }

    /// Goal: a wrong password, nonce, user, authorization id, token login
    /// or malformed message fails, and only the authorization id is told.
    #[test]
    fn every_wrong_exchange_fails() {
        let run = |first: &str, last: &str, credential: Option<ScramCredential>| {
            let mut server = ScramServer::new(ScramMechanism::Sha256);
            server
                .client_first(first.as_bytes(), SERVER_NONCE, |_, token| {
                    credential.filter(|_| !token).map(login)
                })
                .and_then(|_| server.client_final(last.as_bytes()).map(|_| ()))
        };
        assert_eq!(run(CLIENT_FIRST, CLIENT_FINAL, Some(pencil())), Ok(()));
        let other = {
            let salt = BASE64.decode(SALT).unwrap();
            let m = ScramMechanism::Sha256;
            m.credential(&m.salted_password(b"crayon", &salt, 4096), &salt, 4096)
        };
        assert!(matches!(
            run(CLIENT_FIRST, CLIENT_FINAL, Some(other)),
            Err(ScramFailure::Invalid(_))
        ));
        assert!(matches!(
            run(CLIENT_FIRST, CLIENT_FINAL, None),
            Err(ScramFailure::Invalid(_))
        ));
        let wrong_nonce = CLIENT_FINAL.replace("k0,p=", "k1,p=");
        assert!(matches!(
            run(CLIENT_FIRST, &wrong_nonce, Some(pencil())),
            Err(ScramFailure::Invalid(_))
        ));
        assert_eq!(
            run(
                "n,a=admin,n=user,r=rOprNGfwEbeRWgbNEkqO",
                CLIENT_FINAL,
                Some(pencil())
            ),
            Err(ScramFailure::Told(AUTHORIZATION_ID_REFUSED))
        );
        // The user's own name as authorization id is taken.
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        assert!(server
            .client_first(b"n,a=user,n=user,r=abc", SERVER_NONCE, |_, _| {
                Some(login(pencil()))
            })
            .is_ok());
        assert!(matches!(
            run(
                "n,,n=user,r=rOprNGfwEbeRWgbNEkqO,tokenauth=true",
                CLIENT_FINAL,
                Some(pencil())
            ),
            Err(ScramFailure::Invalid(_))
        ));
        for malformed in [
            "y,,n=user,r=x",
            "n,,r=x,n=user",
            "n,,n=us=er,r=x",
            "n,,n=user",
            "",
            "n,,n=user,r=",
        ] {
            assert!(
                matches!(
                    run(malformed, CLIENT_FINAL, Some(pencil())),
                    Err(ScramFailure::Invalid(_))
                ),
                "{malformed}"
            );
        }
        assert!(matches!(
            run(CLIENT_FIRST, "c=biws,r=x", Some(pencil())),
            Err(ScramFailure::Invalid(_))
        ));
    }

    /// Goal: saslname escapes decode, and the authorization id check uses
    /// the decoded name.
    #[test]
    fn sasl_names_unescape() {
        assert_eq!(decode_sasl_name("a=2Cb=3Dc").unwrap(), "a,b=c");
        assert!(decode_sasl_name("a=2").is_err());
        let mut server = ScramServer::new(ScramMechanism::Sha512);
        let mut seen = String::new();
        let salt = b"salt".to_vec();
        let m = ScramMechanism::Sha512;
        let credential = m.credential(&m.salted_password(b"p", &salt, 4096), &salt, 4096);
        server
            .client_first(b"n,,n=x=2Cy,r=abc", "def", |user, _| {
                seen = user.to_string();
                Some(login(credential.clone()))
            })
            .unwrap();
        assert_eq!(seen, "x,y");
        // As Kafka, the authorization id is compared as sent.
        let first = |message: &[u8]| {
            ScramServer::new(m).client_first(message, "def", |_, _| Some(login(credential.clone())))
        };
        assert_eq!(
            first(b"n,a=x=2Cy,n=x=2Cy,r=abc"),
            Err(ScramFailure::Told(AUTHORIZATION_ID_REFUSED))
        );
        // Kafka's pattern: ASCII names, a printable nonce, a reserved m=
        // field taken, extension keys of letters.
        assert!(first(b"n,,m=ext,n=xy,r=abc").is_ok());
        assert!(first(b"n,,n=xy,r=abc,foo=bar=baz").is_ok());
        for bad in [
            "n,,n=\u{e9}t\u{e9},r=abc",
            "n,,n=xy,r=a c",
            "n,,n=xy,r=abc,f1=x",
            "n,,n=xy,r=abc,foo=",
            "n,,n=,r=abc",
        ] {
            assert!(
                matches!(first(bad.as_bytes()), Err(ScramFailure::Invalid(_))),
                "{bad}"
            );
        }
    }
}
