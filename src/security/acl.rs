//! Access control lists and the authorizer that reads them, following
//! Kafka's `StandardAuthorizer` (no I/O): ACLs are bindings of a resource
//! pattern (type, name, LITERAL or PREFIXED) to a principal, a host, an
//! operation and ALLOW or DENY. They live in the metadata image; every shard
//! answers from its own copy.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The one name a CLUSTER resource has.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// The principal of clients that did not authenticate (PLAINTEXT).
pub const ANONYMOUS: &str = "User:ANONYMOUS";

/// The principal that matches every user in an ACL.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// The host and literal resource name that match every host and name.
pub const WILDCARD: &str = "*";

/// Kafka's resource types (the protocol's int8 codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(i8)]
pub enum ResourceType {
    /// Code 0, or any code Kafka does not define.
    Unknown,
    /// 1: filters only.
    Any,
    /// 2.
    Topic,
    /// 3.
    Group,
    /// 4: the one resource `kafka-cluster`.
    Cluster,
    /// 5.
    TransactionalId,
    /// 6.
    DelegationToken,
    /// 7.
    User,
}

impl ResourceType {
    /// From the protocol code (UNKNOWN for codes Kafka does not define).
    pub fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Any,
            2 => Self::Topic,
            3 => Self::Group,
            4 => Self::Cluster,
            5 => Self::TransactionalId,
            6 => Self::DelegationToken,
            7 => Self::User,
            _ => Self::Unknown,
        }
    }

    /// The protocol code: the variant's discriminant.
    pub fn code(self) -> i8 {
        self as i8
    }

    /// The operations Kafka reports in authorized-operation bit fields for
    /// this type (`AclEntry.supportedOperations`).
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            Self::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            Self::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            Self::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            Self::TransactionalId => &[Describe, Write, TwoPhaseCommit],
            Self::DelegationToken => &[Describe],
            Self::User => &[CreateTokens, DescribeTokens],
            Self::Unknown | Self::Any => &[],
        }
    }
}

/// How an ACL's resource name applies (the protocol's int8 codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(i8)]
pub enum PatternType {
    /// Code 0, or any code Kafka does not define.
    Unknown,
    /// 1: filters only, either stored type with the name as given.
    Any,
    /// 2: filters only, every ACL that applies to the name.
    Match,
    /// 3: the name itself (or `*`, every name).
    Literal,
    /// 4: every name that starts with it.
    Prefixed,
}

impl PatternType {
    /// From the protocol code.
    pub fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Any,
            2 => Self::Match,
            3 => Self::Literal,
            4 => Self::Prefixed,
            _ => Self::Unknown,
        }
    }

    /// The protocol code: the variant's discriminant.
    pub fn code(self) -> i8 {
        self as i8
    }
}

/// Kafka's ACL operations (the protocol's int8 codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[allow(missing_docs)]
#[repr(i8)]
pub enum AclOperation {
    Unknown,
    Any,
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
    CreateTokens,
    DescribeTokens,
    TwoPhaseCommit,
}

impl AclOperation {
    const ALL_CODES: [AclOperation; 16] = [
        Self::Unknown,
        Self::Any,
        Self::All,
        Self::Read,
        Self::Write,
        Self::Create,
        Self::Delete,
        Self::Alter,
        Self::Describe,
        Self::ClusterAction,
        Self::DescribeConfigs,
        Self::AlterConfigs,
        Self::IdempotentWrite,
        Self::CreateTokens,
        Self::DescribeTokens,
        Self::TwoPhaseCommit,
    ];

    /// From the protocol code.
    pub fn from_code(code: i8) -> Self {
        usize::try_from(code)
            .ok()
            .and_then(|c| Self::ALL_CODES.get(c).copied())
            .unwrap_or(Self::Unknown)
    }

    /// The protocol code (also the operation's bit in authorized-operation
    /// fields).
    pub fn code(self) -> i8 {
        self as i8
    }

    /// True when an ALLOW ACL for `self` allows `action`: the same
    /// operation, ALL, or one that implies it (READ, WRITE, DELETE and ALTER
    /// imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS).
    fn allows(self, action: AclOperation) -> bool {
        use AclOperation::*;
        self == All
            || self == action
            || (action == Describe && matches!(self, Read | Write | Delete | Alter))
            || (action == DescribeConfigs && self == AlterConfigs)
    }
}

/// Kafka's authorized-operations bit field of `operations`: bit n is the
/// operation of code n.
pub fn operation_bits<'a>(operations: impl IntoIterator<Item = &'a AclOperation>) -> i32 {
    operations
        .into_iter()
        .fold(0, |bits, op| bits | (1 << op.code()))
}

/// ALLOW or DENY (the protocol's int8 codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(i8)]
pub enum AclPermission {
    /// Code 0, or any code Kafka does not define.
    Unknown,
    /// 1: filters only.
    Any,
    /// 2.
    Deny,
    /// 3.
    Allow,
}

impl AclPermission {
    /// From the protocol code.
    pub fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Any,
            2 => Self::Deny,
            3 => Self::Allow,
            _ => Self::Unknown,
        }
    }

    /// The protocol code: the variant's discriminant.
    pub fn code(self) -> i8 {
        self as i8
    }
}

/// One stored ACL (Kafka's `StandardAcl`): every field as created.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Acl {
    /// Resource type.
    pub resource_type: ResourceType,
    /// Resource name, or prefix for PREFIXED.
    pub resource_name: String,
    /// LITERAL or PREFIXED.
    pub pattern_type: PatternType,
    /// `Type:name`, e.g. `User:alice` or `User:*`.
    pub principal: String,
    /// Client IP as Java writes it, or `*`.
    pub host: String,
    /// Operation.
    pub operation: AclOperation,
    /// ALLOW or DENY.
    pub permission: AclPermission,
}

/// A DescribeAcls or DeleteAcls filter (Kafka's `AclBindingFilter`): None
/// and ANY match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    /// Resource type, or ANY.
    pub resource_type: ResourceType,
    /// Resource name, None for any.
    pub resource_name: Option<String>,
    /// Pattern type: LITERAL, PREFIXED, ANY or MATCH.
    pub pattern_type: PatternType,
    /// Principal, None for any.
    pub principal: Option<String>,
    /// Host, None for any.
    pub host: Option<String>,
    /// Operation, or ANY.
    pub operation: AclOperation,
    /// Permission, or ANY.
    pub permission: AclPermission,
}

impl AclFilter {
    /// True when `acl` matches, as Kafka's `AclBindingFilter.matches`.
    pub fn matches(&self, acl: &Acl) -> bool {
        let type_matches =
            self.resource_type == ResourceType::Any || self.resource_type == acl.resource_type;
        let pattern_matches = match self.pattern_type {
            PatternType::Any | PatternType::Match => true,
            pattern => pattern == acl.pattern_type,
        };
        let name_matches = match (&self.resource_name, self.pattern_type) {
            (None, _) => true,
            (Some(name), PatternType::Match) => match acl.pattern_type {
                PatternType::Literal => acl.resource_name == *name || acl.resource_name == WILDCARD,
                PatternType::Prefixed => name.starts_with(&acl.resource_name),
                _ => false,
            },
            (Some(name), _) => acl.resource_name == *name,
        };
        type_matches
            && pattern_matches
            && name_matches
            && self
                .principal
                .as_ref()
                .map_or(true, |p| *p == acl.principal)
            && self.host.as_ref().map_or(true, |h| *h == acl.host)
            && (self.operation == AclOperation::Any || self.operation == acl.operation)
            && (self.permission == AclPermission::Any || self.permission == acl.permission)
    }

    /// True when a field is UNKNOWN: Kafka closes the connection on such a
    /// filter (code 0) before answering.
    pub fn has_unknown_code(codes: [i8; 4]) -> bool {
        codes.contains(&0)
    }
}

/// The ACLs of one resource type and pattern type, by name (or prefix).
#[derive(Debug, Clone, Default)]
struct Names {
    by_name: HashMap<String, Vec<(Uuid, Rc<Acl>)>>,
    /// Bytes of the longest name, so a prefix walk stops there.
    longest: usize,
}

/// ACLs by resource type, then name or prefix: looked up by `&str`, so an
/// authorization allocates nothing.
type AclIndex = HashMap<ResourceType, Names>;

/// Every ACL, by id, with indexes for authorization (literal names, `*` and
/// prefixes by resource type).
#[derive(Debug, Clone, Default)]
pub struct AclSet {
    by_id: BTreeMap<Uuid, Rc<Acl>>,
    /// Literal names, `*` included under its name.
    literal: AclIndex,
    /// Prefixes.
    prefixed: AclIndex,
}

impl AclSet {
    /// Number of ACLs.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Every ACL with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &Rc<Acl>)> {
        self.by_id.iter()
    }

    /// The id of an ACL equal to `acl` in every field.
    pub fn find(&self, acl: &Acl) -> Option<Uuid> {
        let index = match acl.pattern_type {
            PatternType::Literal => &self.literal,
            PatternType::Prefixed => &self.prefixed,
            _ => return None,
        };
        index
            .get(&acl.resource_type)?
            .by_name
            .get(acl.resource_name.as_str())?
            .iter()
            .find(|(_, a)| **a == *acl)
            .map(|(id, _)| *id)
    }

    /// True when `id` is an ACL's.
    pub fn contains(&self, id: &Uuid) -> bool {
        self.by_id.contains_key(id)
    }

    fn index_mut(&mut self, pattern: PatternType) -> &mut AclIndex {
        match pattern {
            PatternType::Prefixed => &mut self.prefixed,
            _ => &mut self.literal,
        }
    }

    /// Adds an ACL (replay of an AccessControlEntry record).
    pub fn insert(&mut self, id: Uuid, acl: Acl) {
        let acl = Rc::new(acl);
        let names = self
            .index_mut(acl.pattern_type)
            .entry(acl.resource_type)
            .or_default();
        names.longest = names.longest.max(acl.resource_name.len());
        names
            .by_name
            .entry(acl.resource_name.clone())
            .or_default()
            .push((id, acl.clone()));
        self.by_id.insert(id, acl);
    }

    /// Removes an ACL by id (replay of a RemoveAccessControlEntry record).
    pub fn remove(&mut self, id: &Uuid) {
        let Some(acl) = self.by_id.remove(id) else {
            return;
        };
        let index = self.index_mut(acl.pattern_type);
        let Some(names) = index.get_mut(&acl.resource_type) else {
            return;
        };
        if let Some(list) = names.by_name.get_mut(acl.resource_name.as_str()) {
            list.retain(|(other, _)| other != id);
            if list.is_empty() {
                names.by_name.remove(acl.resource_name.as_str());
                if acl.resource_name.len() == names.longest {
                    names.longest = names.by_name.keys().map(String::len).max().unwrap_or(0);
                }
            }
        }
        if names.by_name.is_empty() {
            index.remove(&acl.resource_type);
        }
    }

    /// The ACLs that apply to a resource: its literal name, the literal `*`
    /// and every stored prefix of the name.
    fn applying<'a>(
        &'a self,
        resource_type: ResourceType,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Acl> + 'a {
        let literals = self.literal.get(&resource_type);
        let literal = literals
            .and_then(|l| l.by_name.get(name))
            .into_iter()
            .flatten();
        let wildcard = literals
            .filter(|_| name != WILDCARD)
            .and_then(|l| l.by_name.get(WILDCARD))
            .into_iter()
            .flatten();
        let prefixes = self
            .prefixed
            .get(&resource_type)
            .map(|names| {
                name.char_indices()
                    .map(|(i, c)| i + c.len_utf8())
                    .take_while(move |&end| end <= names.longest)
                    .filter_map(move |end| names.by_name.get(&name[..end]))
                    .flatten()
            })
            .into_iter()
            .flatten();
        literal
            .chain(prefixes)
            .chain(wildcard)
            .map(|(_, acl)| &**acl)
    }
}

/// The authorizer's settings: `authorizer.class.name` set to Kafka's
/// StandardAuthorizer, `super.users`, `allow.everyone.if.no.acl.found`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// False: no authorizer, every request is allowed and the ACL APIs
    /// answer SECURITY_DISABLED.
    pub enabled: bool,
    /// Principals allowed everything, as `Type:name`.
    pub super_users: Vec<String>,
    /// The answer for a resource no ACL applies to.
    pub allow_everyone_if_no_acl_found: bool,
}

/// Kafka's class name for the authorizer this broker has.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Parses `super.users`: `Type:name` entries separated by `;`.
///
/// # Errors
/// An entry without a colon, with Kafka's message.
pub fn parse_super_users(text: &str) -> Result<Vec<String>, String> {
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.contains(':') {
                Ok(s.to_string())
            } else {
                Err(format!(
                    "expected a string in format principalType:principalName but got {s}"
                ))
            }
        })
        .collect()
}

/// Who is asking, from where.
#[derive(Debug, Clone)]
pub struct Caller {
    /// `Type:name`.
    pub principal: Rc<str>,
    /// The client's IP as Java writes it.
    pub host: Rc<str>,
}

impl AuthorizerConfig {
    /// Kafka's `StandardAuthorizer.authorize` for a literal resource: super
    /// users may do anything; a DENY that applies wins; then an ALLOW that
    /// applies; with neither, `allow.everyone.if.no.acl.found` only when no
    /// ACL at all (of anyone) applies to the resource.
    pub fn authorize(
        &self,
        acls: &AclSet,
        caller: &Caller,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if !self.enabled || self.is_super_user(caller) {
            return true;
        }
        let mut any_applies = false;
        let mut allowed = false;
        for acl in acls.applying(resource_type, name) {
            any_applies = true;
            if !applies_to(acl, caller) {
                continue;
            }
            match acl.permission {
                AclPermission::Deny
                    if acl.operation == AclOperation::All || acl.operation == operation =>
                {
                    return false;
                }
                AclPermission::Allow if acl.operation.allows(operation) => allowed = true,
                _ => {}
            }
        }
        allowed || (!any_applies && self.allow_everyone_if_no_acl_found)
    }

    /// Kafka's `Authorizer.authorizeByResourceType`: may the caller do
    /// `operation` on some resource of the type (an ALLOW not undone by a
    /// DENY), as InitProducerId asks WRITE on any topic.
    pub fn authorize_any(
        &self,
        acls: &AclSet,
        caller: &Caller,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if self.authorize(acls, caller, operation, resource_type, "hardcode") {
            return true;
        }
        let mut denied_literal = std::collections::HashSet::new();
        let mut denied_prefix = std::collections::HashSet::new();
        let mut allowed: Vec<(&str, PatternType)> = Vec::new();
        // A wildcard ALLOW counts only once every DENY has been seen.
        let mut wildcard_allowed = false;
        for (_, acl) in acls.iter() {
            if acl.resource_type != resource_type
                || !applies_to(acl, caller)
                || !(acl.operation == operation || acl.operation == AclOperation::All)
            {
                continue;
            }
            let wildcard =
                acl.pattern_type == PatternType::Literal && acl.resource_name == WILDCARD;
            match (acl.permission, wildcard) {
                (AclPermission::Deny, true) => return false,
                (AclPermission::Deny, false) => {
                    if acl.pattern_type == PatternType::Literal {
                        denied_literal.insert(acl.resource_name.as_str());
                    } else {
                        denied_prefix.insert(acl.resource_name.as_str());
                    }
                }
                (AclPermission::Allow, true) => wildcard_allowed = true,
                (AclPermission::Allow, false) => {
                    allowed.push((acl.resource_name.as_str(), acl.pattern_type))
                }
                _ => {}
            }
        }
        wildcard_allowed
            || allowed.into_iter().any(|(name, pattern)| {
                (pattern != PatternType::Literal || !denied_literal.contains(name))
                    && !name
                        .char_indices()
                        .any(|(i, c)| denied_prefix.contains(&name[..i + c.len_utf8()]))
            })
    }

    /// True when the caller is one of `super.users` (compared as written).
    pub fn is_super_user(&self, caller: &Caller) -> bool {
        self.super_users.iter().any(|u| **u == *caller.principal)
    }
}

/// True when `acl` names the caller (or `User:*`) and its host (or `*`).
fn applies_to(acl: &Acl, caller: &Caller) -> bool {
    (acl.principal == WILDCARD_PRINCIPAL || *acl.principal == *caller.principal)
        && (acl.host == WILDCARD || *acl.host == *caller.host)
}

/// Java's `InetAddress.getHostAddress` text for an address (IPv6 in full,
/// without compression), which is what ACL hosts are compared with.
pub fn java_host_address(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(
        rt: ResourceType,
        name: &str,
        pattern: PatternType,
        principal: &str,
        op: AclOperation,
        perm: AclPermission,
    ) -> Acl {
        Acl {
            resource_type: rt,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: principal.into(),
            host: "*".into(),
            operation: op,
            permission: perm,
        }
    }

    fn caller(principal: &str) -> Caller {
        Caller {
            principal: principal.into(),
            host: "127.0.0.1".into(),
        }
    }

    fn on() -> AuthorizerConfig {
        AuthorizerConfig {
            enabled: true,
            super_users: vec!["User:admin".into()],
            allow_everyone_if_no_acl_found: false,
        }
    }

    #[test]
    fn standard_authorizer_rules() {
        use AclOperation::*;
        use AclPermission::*;
        use PatternType::*;
        use ResourceType::*;
        let mut acls = AclSet::default();
        let config = on();
        let alice = caller("User:alice");
        assert!(config.authorize(&acls, &caller("User:admin"), Write, Topic, "t"));
        assert!(!config.authorize(&acls, &alice, Read, Topic, "t"));
        let everyone = AuthorizerConfig {
            allow_everyone_if_no_acl_found: true,
            ..on()
        };
        assert!(everyone.authorize(&acls, &alice, Read, Topic, "t"));
        acls.insert(
            Uuid::new_v4(),
            acl(Topic, "app-", Prefixed, "User:alice", Read, Allow),
        );
        assert!(config.authorize(&acls, &alice, Read, Topic, "app-1"));
        assert!(
            config.authorize(&acls, &alice, Describe, Topic, "app-1"),
            "READ implies DESCRIBE"
        );
        assert!(!config.authorize(&acls, &alice, Write, Topic, "app-1"));
        assert!(!config.authorize(&acls, &alice, Read, Topic, "ap"));
        // An ACL of someone else on the resource takes away the default.
        assert!(!everyone.authorize(&acls, &caller("User:bob"), Read, Topic, "app-1"));
        assert!(everyone.authorize(&acls, &caller("User:bob"), Read, Topic, "other"));
        acls.insert(
            Uuid::new_v4(),
            acl(Topic, "*", Literal, "User:*", Read, Deny),
        );
        assert!(
            !config.authorize(&acls, &alice, Read, Topic, "app-1"),
            "DENY wins"
        );
        assert!(
            config.authorize(&acls, &alice, Describe, Topic, "app-1"),
            "DENY READ leaves DESCRIBE"
        );
        let id = acls
            .find(&acl(Topic, "*", Literal, "User:*", Read, Deny))
            .unwrap();
        acls.remove(&id);
        assert!(config.authorize(&acls, &alice, Read, Topic, "app-1"));
        assert!(config.authorize_any(&acls, &alice, Read, Topic));
        assert!(!config.authorize_any(&acls, &alice, Write, Topic));
        acls.insert(
            Uuid::new_v4(),
            acl(Topic, "app", Prefixed, "User:alice", All, Deny),
        );
        assert!(
            !config.authorize_any(&acls, &alice, Read, Topic),
            "the allowed prefix is denied"
        );
    }

    #[test]
    fn a_wildcard_deny_wins_over_a_wildcard_allow_whatever_their_order() {
        use AclOperation::*;
        use AclPermission::*;
        use PatternType::*;
        use ResourceType::*;
        let allow = acl(Topic, "*", Literal, "User:alice", Write, Allow);
        let deny = acl(Topic, "*", Literal, "User:*", Write, Deny);
        // Ids decide the order the ACLs are seen in: both orders.
        for (first, second) in [(&allow, &deny), (&deny, &allow)] {
            let mut acls = AclSet::default();
            acls.insert(Uuid::from_u128(1), first.clone());
            acls.insert(Uuid::from_u128(2), second.clone());
            assert!(!on().authorize_any(&acls, &caller("User:alice"), Write, Topic));
        }
    }

    #[test]
    fn prefixes_are_found_and_forgotten() {
        use AclOperation::*;
        use AclPermission::*;
        use PatternType::*;
        use ResourceType::*;
        let mut acls = AclSet::default();
        let short = acl(Group, "g", Prefixed, "User:alice", Read, Allow);
        let long = acl(Group, "g-long-", Prefixed, "User:alice", Describe, Allow);
        acls.insert(Uuid::from_u128(1), short.clone());
        acls.insert(Uuid::from_u128(2), long.clone());
        let alice = caller("User:alice");
        let name = format!("g-long-{}", "x".repeat(100_000));
        assert_eq!(acls.applying(Group, &name).count(), 2);
        assert!(on().authorize(&acls, &alice, Read, Group, &name));
        acls.remove(&Uuid::from_u128(1));
        assert_eq!(acls.applying(Group, &name).count(), 1);
        assert!(!on().authorize(&acls, &alice, Read, Group, &name));
        acls.remove(&Uuid::from_u128(2));
        assert_eq!(acls.applying(Group, &name).count(), 0);
        assert!(acls.is_empty() && acls.prefixed.is_empty());
    }

    #[test]
    fn codes_are_kafkas() {
        for code in 0..=7 {
            assert_eq!(ResourceType::from_code(code).code(), code);
        }
        for code in 0..=4 {
            assert_eq!(PatternType::from_code(code).code(), code);
        }
        for code in 0..=15 {
            assert_eq!(AclOperation::from_code(code).code(), code);
        }
        for code in 0..=3 {
            assert_eq!(AclPermission::from_code(code).code(), code);
        }
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(AclOperation::from_code(16), AclOperation::Unknown);
        assert_eq!(
            (
                ResourceType::Cluster.code(),
                PatternType::Prefixed.code(),
                AclOperation::Describe.code(),
                AclOperation::IdempotentWrite.code(),
                AclPermission::Allow.code()
            ),
            (4, 4, 8, 12, 3)
        );
    }

    #[test]
    fn every_operation_of_a_type_is_kafkas_bit_field() {
        // As Kafka 4.1 answers without an authorizer.
        assert_eq!(
            operation_bits(ResourceType::Cluster.supported_operations()),
            8096
        );
        assert_eq!(
            operation_bits(ResourceType::Topic.supported_operations()),
            3576
        );
    }

    #[test]
    fn filters_match_as_kafka() {
        use PatternType::*;
        let stored = acl(
            ResourceType::Topic,
            "app-",
            Prefixed,
            "User:a",
            AclOperation::Read,
            AclPermission::Allow,
        );
        let mut filter = AclFilter {
            resource_type: ResourceType::Any,
            resource_name: Some("app-1".into()),
            pattern_type: Match,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: AclPermission::Any,
        };
        assert!(filter.matches(&stored));
        filter.pattern_type = Any;
        assert!(!filter.matches(&stored));
        filter.resource_name = Some("app-".into());
        assert!(filter.matches(&stored));
        filter.pattern_type = Literal;
        assert!(!filter.matches(&stored));
    }

    #[test]
    fn java_host_text() {
        assert_eq!(java_host_address("::1".parse().unwrap()), "0:0:0:0:0:0:0:1");
        assert_eq!(java_host_address("10.0.0.1".parse().unwrap()), "10.0.0.1");
    }
}
