//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` and
//! `PlainServerCallbackHandler` serve it, and the JAAS configuration its
//! users come from: the `user_<name>="<password>"` options of
//! `org.apache.kafka.common.security.plain.PlainLoginModule`, given as the
//! value of Kafka's `listener.name.<listener>.plain.sasl.jaas.config` or in
//! a JAAS file's `KafkaServer` section (`java.security.auth.login.config`).
//! No I/O here.

use std::collections::HashMap;

/// The login module whose options name PLAIN's users.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// The prefix of an option naming a user (Kafka's `JAAS_USER_PREFIX`).
const USER_PREFIX: &str = "user_";
/// The section of a JAAS file a broker reads (Kafka's
/// `JaasContext.Type.SERVER` default context name).
const SERVER_SECTION: &str = "KafkaServer";

/// One login module of a JAAS configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModule {
    /// Its class name.
    pub class: String,
    /// Its options, in order.
    pub options: Vec<(String, String)>,
}

/// A JAAS token: a word or quoted string, or a punctuation character.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted { value: String, single: bool },
    Punct(char),
}

/// Splits JAAS text into tokens as Java's `StreamTokenizer` does for
/// Kafka's `JaasConfig`: `//` and `/* */` comments, strings quoted with `"`
/// or `'` (backslash escapes), words of letters, digits, `.`, `_`, `-` and
/// `$`.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' || c == '\r' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                loop {
                    match chars.next() {
                        Some('/') if last == '*' => break,
                        Some(c) => last = c,
                        None => return Err("unterminated comment in JAAS config".into()),
                    }
                }
            }
            '"' | '\'' => {
                let quote = c;
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some(c) if c == quote => break,
                        // As Java's StreamTokenizer: \a \b \f \n \r \t \v,
                        // octal, and any other character as itself.
                        Some('\\') => match chars.next() {
                            Some('a') => value.push('\u{7}'),
                            Some('b') => value.push('\u{8}'),
                            Some('f') => value.push('\u{c}'),
                            Some('n') => value.push('\n'),
                            Some('r') => value.push('\r'),
                            Some('t') => value.push('\t'),
                            Some('v') => value.push('\u{b}'),
                            Some(first @ '0'..='7') => {
                                let most = if first <= '3' { 3 } else { 2 };
                                let mut code = first.to_digit(8).unwrap_or(0);
                                for _ in 1..most {
                                    match chars.peek().and_then(|c| c.to_digit(8)) {
                                        Some(digit) => {
                                            code = code * 8 + digit;
                                            chars.next();
                                        }
                                        None => break,
                                    }
                                }
                                value.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                            }
                            Some('\n' | '\r') | None => {
                                return Err("unterminated string in JAAS config".into())
                            }
                            Some(other) => value.push(other),
                        },
                        // A string ends at the end of its line.
                        Some('\n' | '\r') | None => {
                            return Err("unterminated string in JAAS config".into())
                        }
                        Some(c) => value.push(c),
                    }
                }
                tokens.push(Token::Quoted {
                    value,
                    single: quote == '\'',
                });
            }
            c if c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '$') => {
                let mut word = String::from(c);
                while let Some(&next) = chars.peek() {
                    if next.is_alphanumeric() || matches!(next, '.' | '_' | '-' | '$') {
                        word.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Word(word));
            }
            other => tokens.push(Token::Punct(other)),
        }
    }
    Ok(tokens)
}

/// Reads login modules (`Class flag key=value ... ;`) from `tokens` at
/// `*at` until the end or a `}`.
/// `single_quotes`: values may be quoted with `'` (Kafka's property, read
/// by Java's StreamTokenizer), not only `"` (a JAAS file).
fn login_modules(
    tokens: &[Token],
    at: &mut usize,
    single_quotes: bool,
) -> Result<Vec<LoginModule>, String> {
    let mut modules = Vec::new();
    while let Some(token) = tokens.get(*at) {
        let class = match token {
            Token::Word(word) => word.clone(),
            Token::Punct('}') => break,
            _ => return Err(format!("expected a login module class, found {token:?}")),
        };
        *at += 1;
        match tokens.get(*at) {
            Some(Token::Word(flag))
                if ["required", "requisite", "sufficient", "optional"]
                    .iter()
                    .any(|f| f.eq_ignore_ascii_case(flag)) => {}
            Some(Token::Word(flag) | Token::Quoted { value: flag, .. }) => {
                return Err(format!(
                    "Invalid login module control flag '{flag}' in JAAS config"
                ))
            }
            _ => return Err("Login module control flag not specified in JAAS config".into()),
        }
        *at += 1;
        let mut options = Vec::new();
        loop {
            let key = match tokens.get(*at) {
                Some(Token::Punct(';')) => {
                    *at += 1;
                    break;
                }
                Some(Token::Word(key) | Token::Quoted { value: key, .. }) => key.clone(),
                _ => return Err("JAAS config entry not terminated by semi-colon".into()),
            };
            let value = match (tokens.get(*at + 1), tokens.get(*at + 2)) {
                (Some(Token::Punct('=')), Some(Token::Quoted { value, single })) => {
                    if *single && !single_quotes {
                        return Err(format!(
                            "Value of key '{key}' in a JAAS file must be double-quoted"
                        ));
                    }
                    value.clone()
                }
                (Some(Token::Punct('=')), Some(Token::Word(value)))
                    if !value.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-') =>
                {
                    value.clone()
                }
                _ => {
                    return Err(format!(
                        "Value not specified for key '{key}' in JAAS config"
                    ))
                }
            };
            *at += 3;
            options.push((key, value));
        }
        modules.push(LoginModule { class, options });
    }
    Ok(modules)
}

/// Parses the value of Kafka's `sasl.jaas.config` (listener- and
/// mechanism-prefixed on a broker): exactly one login module.
///
/// # Errors
/// Text that is not one login module, with Kafka's message where it has one.
pub fn parse_jaas_config(text: &str) -> Result<LoginModule, String> {
    let tokens = tokenize(text)?;
    let mut at = 0;
    let mut modules = login_modules(&tokens, &mut at, true)?;
    if at < tokens.len() {
        return Err(format!("unexpected {:?} in JAAS config", tokens[at]));
    }
    match modules.len() {
        0 => Err("Login module not specified in JAAS config".into()),
        1 => Ok(modules.remove(0)),
        n => Err(format!(
            "JAAS config property contains {n} login modules, should be 1 module"
        )),
    }
}

/// Parses a JAAS file (`Name { Class flag key=value ...; ... };` sections)
/// and returns the login modules of its `KafkaServer` section, or of
/// `<listener>.KafkaServer` when it has one (`listener` lower-case, as
/// Kafka's listener-prefixed section).
///
/// # Errors
/// A file that does not parse, or has no such section, with Kafka's message.
pub fn parse_jaas_file(text: &str, listener: &str) -> Result<Vec<LoginModule>, String> {
    let tokens = tokenize(text)?;
    let mut sections: HashMap<String, Vec<LoginModule>> = HashMap::new();
    let mut at = 0;
    while at < tokens.len() {
        let name = match (&tokens[at], tokens.get(at + 1)) {
            (Token::Word(name), Some(Token::Punct('{'))) => name.clone(),
            (token, _) => return Err(format!("expected a section name and '{{', found {token:?}")),
        };
        at += 2;
        let modules = login_modules(&tokens, &mut at, false)?;
        if tokens.get(at) != Some(&Token::Punct('}'))
            || tokens.get(at + 1) != Some(&Token::Punct(';'))
        {
            return Err(format!("section {name} not closed by '}};'"));
        }
        at += 2;
        sections.entry(name).or_default().extend(modules);
    }
    let prefixed = format!("{}.{SERVER_SECTION}", listener.to_ascii_lowercase());
    sections
        .remove(&prefixed)
        .or_else(|| sections.remove(SERVER_SECTION))
        .ok_or_else(|| {
            format!("Could not find a '{SERVER_SECTION}' or '{prefixed}' entry in the JAAS configuration")
        })
}

/// PLAIN's users and their passwords.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    passwords: HashMap<String, String>,
}

/// Names the users, never their passwords.
impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut users: Vec<&String> = self.passwords.keys().collect();
        users.sort();
        f.debug_struct("PlainUsers").field("users", &users).finish()
    }
}

impl PlainUsers {
    /// The users the `PlainLoginModule` entries of `modules` name.
    ///
    /// # Errors
    /// No `PlainLoginModule` among `modules`.
    pub fn from_modules(modules: &[LoginModule]) -> Result<Self, String> {
        let plain: Vec<&LoginModule> = modules
            .iter()
            .filter(|m| m.class == PLAIN_LOGIN_MODULE)
            .collect();
        if plain.is_empty() {
            return Err(format!(
                "no {PLAIN_LOGIN_MODULE} entry in the JAAS configuration"
            ));
        }
        let mut passwords = HashMap::new();
        for module in plain {
            // Within an entry a repeated option's last value stands (Java
            // keeps the options in a map); across entries the first entry
            // naming a user wins, as Kafka's `JaasContext.configEntryOption`.
            let mut own: HashMap<&str, &String> = HashMap::new();
            for (key, value) in &module.options {
                if let Some(user) = key.strip_prefix(USER_PREFIX) {
                    own.insert(user, value);
                }
            }
            for (user, value) in own {
                passwords
                    .entry(user.to_string())
                    .or_insert_with(|| value.clone());
            }
        }
        Ok(PlainUsers { passwords })
    }

    /// How many users there are.
    pub fn len(&self) -> usize {
        self.passwords.len()
    }

    /// There are none.
    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }

    /// Checks a client's PLAIN message (`[authzid] NUL authcid NUL passwd`)
    /// as Kafka's `PlainSaslServer.evaluateResponse`: the authenticated user,
    /// or Kafka's message for the failure (sent to the client as it is).
    ///
    /// # Errors
    /// Kafka's message.
    pub fn authenticate(&self, message: &[u8]) -> Result<String, String> {
        // Java decodes the bytes as UTF-8, invalid sequences replaced.
        let text = String::from_utf8_lossy(message);
        // Kafka splits at the first three NULs: four tokens or more are
        // "4".
        let tokens: Vec<&str> = text.splitn(4, '\0').collect();
        if tokens.len() != 3 {
            return Err(format!(
                "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
                tokens.len()
            ));
        }
        let (authorization_id, user, password) = (tokens[0], tokens[1], tokens[2]);
        if user.is_empty() {
            return Err("Authentication failed: username not specified".into());
        }
        if password.is_empty() {
            return Err("Authentication failed: password not specified".into());
        }
        let matches = self.passwords.get(user).is_some_and(|expected| {
            super::constant_time_eq(expected.as_bytes(), password.as_bytes())
        });
        if !matches {
            return Err("Authentication failed: Invalid username or password".into());
        }
        if !authorization_id.is_empty() && authorization_id != user {
            return Err("Authentication failed: Client requested an authorization id that is different from username".into());
        }
        Ok(user.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> PlainUsers {
        let module = parse_jaas_config(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
               username="admin" password="admin-secret"
               user_admin="admin-secret" user_alice="alice-secret" user_e="";"#,
        )
        .unwrap();
        PlainUsers::from_modules(&[module]).unwrap()
    }

    /// Goal: the answers Kafka 4.1.1 gave the same PLAIN messages.
    #[test]
    fn messages_are_judged_as_kafka_judges_them() {
        let users = users();
        assert_eq!(users.len(), 3);
        let cases: [(&[u8], Result<&str, &str>); 17] = [
            (b"\0alice\0alice-secret", Ok("alice")),
            (b"alice\0alice\0alice-secret", Ok("alice")),
            (
                b"bob\0alice\0alice-secret",
                Err("Authentication failed: Client requested an authorization id that is different from username"),
            ),
            (b"\0alice\0wrong", Err("Authentication failed: Invalid username or password")),
            (b"\0nobody\0alice-secret", Err("Authentication failed: Invalid username or password")),
            (b"\0\0x", Err("Authentication failed: username not specified")),
            (b"\0alice\0", Err("Authentication failed: password not specified")),
            (b"\0e\0", Err("Authentication failed: password not specified")),
            (b"\0e\0x", Err("Authentication failed: Invalid username or password")),
            (b"alice\0alice-secret", Err("Invalid SASL/PLAIN response: expected 3 tokens, got 2")),
            (b"alice", Err("Invalid SASL/PLAIN response: expected 3 tokens, got 1")),
            (b"", Err("Invalid SASL/PLAIN response: expected 3 tokens, got 1")),
            (b"\0alice\0alice-secret\0x", Err("Invalid SASL/PLAIN response: expected 3 tokens, got 4")),
            (b"\0alice\0alice-secret\0x\0y\0z", Err("Invalid SASL/PLAIN response: expected 3 tokens, got 4")),
            (b"\0alice\0alice-secret\xff", Err("Authentication failed: Invalid username or password")),
            (b"bob\0alice\0wrong", Err("Authentication failed: Invalid username or password")),
            (b"\0\0", Err("Authentication failed: username not specified")),
        ];
        for (message, expected) in cases {
            assert_eq!(
                users.authenticate(message),
                expected.map(str::to_string).map_err(str::to_string),
                "{message:?}"
            );
        }
    }

    /// Goal: Kafka's JAAS syntax, in the property and in a file.
    #[test]
    fn jaas_configs_parse_as_kafkas() {
        let module = parse_jaas_config(
            "org.apache.kafka.common.security.plain.PlainLoginModule REQUIRED /* c */ user_a=\"x\\\"y\" // end\n user_b='z' user_c=word;",
        )
        .unwrap();
        assert_eq!(module.class, PLAIN_LOGIN_MODULE);
        assert_eq!(
            module.options,
            vec![
                ("user_a".to_string(), "x\"y".to_string()),
                ("user_b".to_string(), "z".to_string()),
                ("user_c".to_string(), "word".to_string()),
            ]
        );
        for (bad, message) in [
            ("", "Login module not specified in JAAS config"),
            (
                "a.B",
                "Login module control flag not specified in JAAS config",
            ),
            (
                "a.B sometimes;",
                "Invalid login module control flag 'sometimes' in JAAS config",
            ),
            (
                "a.B required k=\"v\"",
                "JAAS config entry not terminated by semi-colon",
            ),
            (
                "a.B required k=;",
                "Value not specified for key 'k' in JAAS config",
            ),
            (
                "a.B required k=12;",
                "Value not specified for key 'k' in JAAS config",
            ),
            (
                "a.B required; c.D required;",
                "JAAS config property contains 2 login modules, should be 1 module",
            ),
            (
                "a.B required k=\"v\nw\";",
                "unterminated string in JAAS config",
            ),
        ] {
            assert_eq!(parse_jaas_config(bad), Err(message.to_string()), "{bad}");
        }

        // Java's escapes; a repeated option's last value.
        let module = parse_jaas_config(&format!(
            "{PLAIN_LOGIN_MODULE} required user_a=\"\\101\\t\\x\" user_b=\"1\" user_b=\"2\";"
        ))
        .unwrap();
        let users = PlainUsers::from_modules(&[module]).unwrap();
        assert_eq!(users.authenticate(b"\0a\0A\tx"), Ok("a".into()));
        assert_eq!(users.authenticate(b"\0b\x002"), Ok("b".into()));
        assert!(users.authenticate(b"\0b\x001").is_err());
        assert!(!format!("{users:?}").contains('2'), "{users:?}");
        // A JAAS file takes double quotes only, and `};` closes a section.
        assert!(parse_jaas_file("KafkaServer { a.B required k='v'; };", "x").is_err());
        assert!(parse_jaas_file("KafkaServer { a.B required k=\"v\"; }", "x").is_err());

        let file = r#"
            // The broker's logins.
            KafkaServer {
                org.apache.kafka.common.security.plain.PlainLoginModule required
                username="admin" password="admin-secret"
                user_admin="admin-secret";
            };
            Client { org.apache.zookeeper.server.auth.DigestLoginModule required user_x="y"; };
        "#;
        let modules = parse_jaas_file(file, "SASL_PLAINTEXT").unwrap();
        let users = PlainUsers::from_modules(&modules).unwrap();
        assert_eq!(
            users.authenticate(b"\0admin\0admin-secret"),
            Ok("admin".into())
        );
        assert!(users.authenticate(b"\0x\0y").is_err());
        let prefixed = format!(
            "{file} sasl_plaintext.KafkaServer {{ {PLAIN_LOGIN_MODULE} required user_p=\"q\"; }};"
        );
        let users =
            PlainUsers::from_modules(&parse_jaas_file(&prefixed, "SASL_PLAINTEXT").unwrap())
                .unwrap();
        assert_eq!(users.authenticate(b"\0p\0q"), Ok("p".into()));
        assert!(users.authenticate(b"\0admin\0admin-secret").is_err());
        assert_eq!(
            parse_jaas_file("Client { a.B required; };", "SASL_PLAINTEXT"),
            Err("Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration".into())
        );
        assert!(parse_jaas_file("KafkaServer { a.B required;", "x").is_err());
        assert!(PlainUsers::from_modules(
            &parse_jaas_file("KafkaServer { a.B required; };", "x").unwrap()
        )
        .is_err());
    }
}
