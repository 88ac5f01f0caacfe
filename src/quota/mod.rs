//! Client quotas (KIP-13, KIP-55, KIP-546): what AlterClientQuotas stores,
//! how DescribeClientQuotas filters it, and which quota applies to a
//! request. The rules are Kafka 4.1's (`ClientQuotaControlManager`,
//! `ClientQuotasImage`, `DefaultQuotaCallback`), read from its source.
//!
//! Quotas live in the metadata image, so every shard resolves a client's
//! quota from its own copy; the measured rates live in [`sensors`].

pub mod sensors;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An entity's name for one type: a name, or that type's default
/// (`<default>` in Kafka's tools, a null name on the wire).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EntityName {
    /// The default entity of the type.
    Default,
    /// A named entity.
    Named(String),
}

impl EntityName {
    /// From the wire: null is the default.
    pub fn from_wire(name: Option<&str>) -> Self {
        match name {
            None => EntityName::Default,
            Some(n) => EntityName::Named(n.to_string()),
        }
    }

    /// For the wire: the default is null.
    pub fn as_wire(&self) -> Option<&str> {
        match self {
            EntityName::Default => None,
            EntityName::Named(n) => Some(n),
        }
    }
}

/// The entity types Kafka knows, by their wire names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityType {
    /// `user`: the authenticated principal's name.
    User,
    /// `client-id`: the request header's client id.
    ClientId,
    /// `ip`: the client's address.
    Ip,
}

impl EntityType {
    /// From the wire name (case-sensitive, as Kafka).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "user" => Some(EntityType::User),
            "client-id" => Some(EntityType::ClientId),
            "ip" => Some(EntityType::Ip),
            _ => None,
        }
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            EntityType::User => "user",
            EntityType::ClientId => "client-id",
            EntityType::Ip => "ip",
        }
    }
}

/// A quota entity: a name (or the default) for each of its types. Kafka
/// allows user, client-id, both, or ip alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QuotaEntity {
    /// `user`, when the entity has that type.
    pub user: Option<EntityName>,
    /// `client-id`, when the entity has that type.
    pub client_id: Option<EntityName>,
    /// `ip`, when the entity has that type.
    pub ip: Option<EntityName>,
}

impl QuotaEntity {
    /// The name the entity has for `kind`, if it has that type.
    pub fn get(&self, kind: EntityType) -> Option<&EntityName> {
        match kind {
            EntityType::User => self.user.as_ref(),
            EntityType::ClientId => self.client_id.as_ref(),
            EntityType::Ip => self.ip.as_ref(),
        }
    }

    fn slot(&mut self, kind: EntityType) -> &mut Option<EntityName> {
        match kind {
            EntityType::User => &mut self.user,
            EntityType::ClientId => &mut self.client_id,
            EntityType::Ip => &mut self.ip,
        }
    }

    /// Number of types the entity has.
    pub fn len(&self) -> usize {
        [&self.user, &self.client_id, &self.ip]
            .iter()
            .filter(|n| n.is_some())
            .count()
    }

    /// True for an entity with no type.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its (type, name) components for the wire, in the order Kafka's
    /// `HashMap` gives them (`client-id`, then `user`).
    pub fn components(&self) -> impl Iterator<Item = (EntityType, &EntityName)> {
        [
            (EntityType::ClientId, &self.client_id),
            (EntityType::User, &self.user),
            (EntityType::Ip, &self.ip),
        ]
        .into_iter()
        .filter_map(|(kind, name)| name.as_ref().map(|n| (kind, n)))
    }
}

/// An entity as a request names it, unchecked: (type, name) components,
/// each type once (the last name sent for a type wins, as in Kafka's
/// request conversion), in the order Kafka's `HashMap` lists them.
pub type RequestedEntity = Vec<(String, Option<String>)>;

/// One entry of an AlterClientQuotas: the entity, and each key with the
/// value to set (None: remove it), in request order.
pub type QuotaAlteration = (RequestedEntity, Vec<(String, Option<f64>)>);

/// What AlterClientQuotas answers: per distinct entity, in the order first
/// named, the entity and INVALID_REQUEST's message when refused; else the
/// error of the whole request.
pub type QuotaAlterationResults =
    Result<Vec<(RequestedEntity, Option<String>)>, (crate::protocol::ErrorCode, String)>;

/// Collapses a request's components into a [`RequestedEntity`].
pub fn requested_entity<'a>(
    components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> RequestedEntity {
    let mut collapsed: RequestedEntity = Vec::new();
    let mut positions: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (kind, name) in components {
        match positions.get(kind) {
            Some(&position) => collapsed[position].1 = name.map(str::to_string),
            None => {
                positions.insert(kind, collapsed.len());
                collapsed.push((kind.to_string(), name.map(str::to_string)));
            }
        }
    }
    // Java's HashMap, made with the entity's size as its capacity, lists
    // keys by bucket (the spread String hash masked by the table size),
    // then in insertion order.
    let mut table = collapsed.len().next_power_of_two().max(1);
    if collapsed.len() * 4 > table * 3 {
        table *= 2;
    }
    let bucket = |kind: &str| {
        let hash = kind
            .encode_utf16()
            .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)));
        ((hash ^ (hash >> 16)) as usize) & (table - 1)
    };
    collapsed.sort_by_key(|(kind, _)| bucket(kind));
    collapsed
}

/// Kafka's `ClientQuotaEntity.toString` of a requested entity:
/// `ClientQuotaEntity(entries={client-id=app, user=null})`.
pub fn entity_text(entity: &RequestedEntity) -> String {
    let entries: Vec<String> = entity
        .iter()
        .map(|(kind, name)| format!("{kind}={}", name.as_deref().unwrap_or("null")))
        .collect();
    format!("ClientQuotaEntity(entries={{{}}})", entries.join(", "))
}

/// The quota keys Kafka 4.1 accepts (`QuotaConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum QuotaKey {
    /// Bytes a second a producer may send (LONG).
    ProducerByteRate,
    /// Bytes a second a consumer may fetch (LONG).
    ConsumerByteRate,
    /// Percentage of one request-handling thread (DOUBLE).
    RequestPercentage,
    /// Partitions a second created or deleted (DOUBLE).
    ControllerMutationRate,
    /// Connections a second from one IP (INT).
    ConnectionCreationRate,
}

/// How a key's value must be shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueType {
    Int,
    Long,
    Double,
}

impl QuotaKey {
    /// Every key, for lookups by name.
    pub const ALL: [QuotaKey; 5] = [
        QuotaKey::ProducerByteRate,
        QuotaKey::ConsumerByteRate,
        QuotaKey::RequestPercentage,
        QuotaKey::ControllerMutationRate,
        QuotaKey::ConnectionCreationRate,
    ];

    /// The key's name.
    pub fn name(self) -> &'static str {
        match self {
            QuotaKey::ProducerByteRate => "producer_byte_rate",
            QuotaKey::ConsumerByteRate => "consumer_byte_rate",
            QuotaKey::RequestPercentage => "request_percentage",
            QuotaKey::ControllerMutationRate => "controller_mutation_rate",
            QuotaKey::ConnectionCreationRate => "connection_creation_rate",
        }
    }

    /// The key called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    fn value_type(self) -> ValueType {
        match self {
            QuotaKey::ProducerByteRate | QuotaKey::ConsumerByteRate => ValueType::Long,
            QuotaKey::RequestPercentage | QuotaKey::ControllerMutationRate => ValueType::Double,
            QuotaKey::ConnectionCreationRate => ValueType::Int,
        }
    }

    /// True when an entity of the IP type may carry this key (the others
    /// are for users and client ids).
    fn for_ip(self) -> bool {
        self == QuotaKey::ConnectionCreationRate
    }
}

/// A stored quota value. Kafka stores any double that passes its checks,
/// NaN and infinity included; the metadata log (JSON) writes it as text so
/// those survive a restart.
#[derive(Debug, Clone, Copy)]
pub struct QuotaValue(pub f64);

impl PartialEq for QuotaValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for QuotaValue {}

impl Serialize for QuotaValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0.to_string())
    }
}

impl<'de> Deserialize<'de> for QuotaValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse::<f64>()
            .map(QuotaValue)
            .map_err(serde::de::Error::custom)
    }
}

/// Every stored quota: by entity, by key name (the keys Kafka accepts;
/// stored as names so the image keeps what the log holds).
#[derive(Debug, Clone, Default)]
pub struct ClientQuotas {
    entities: BTreeMap<QuotaEntity, BTreeMap<QuotaKey, f64>>,
    /// Entities holding each key (by `QuotaKey as usize`), so a request
    /// under no quota of its kind costs one look.
    holders: [usize; QuotaKey::ALL.len()],
}

impl ClientQuotas {
    /// Sets (`Some`) or removes (`None`) one key of an entity; an entity
    /// without keys is forgotten.
    pub fn apply(&mut self, entity: &QuotaEntity, key: QuotaKey, value: Option<f64>) {
        match value {
            Some(value) => {
                let keys = self.entities.entry(entity.clone()).or_default();
                if keys.insert(key, value).is_none() {
                    self.holders[key as usize] += 1;
                }
            }
            None => {
                if let Some(keys) = self.entities.get_mut(entity) {
                    if keys.remove(&key).is_some() {
                        self.holders[key as usize] -= 1;
                    }
                    if keys.is_empty() {
                        self.entities.remove(entity);
                    }
                }
            }
        }
    }

    /// The value of `key` for exactly `entity`.
    pub fn get(&self, entity: &QuotaEntity, key: QuotaKey) -> Option<f64> {
        self.entities.get(entity)?.get(&key).copied()
    }

    /// Every entity with its keys.
    pub fn iter(&self) -> impl Iterator<Item = (&QuotaEntity, &BTreeMap<QuotaKey, f64>)> {
        self.entities.iter()
    }

    /// True when no quota is stored.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// True when some user or client-id entity has `key`.
    pub fn any(&self, key: QuotaKey) -> bool {
        self.holders[key as usize] > 0
    }

    /// The quota of `key` that applies to a request of `user` with client
    /// id `client_id`, and the sensor it is measured by, following Kafka's
    /// `DefaultQuotaCallback`: the most specific of
    /// user+client-id, user+default client-id, user, default user+client-id,
    /// default user+default client-id, default user, client-id, default
    /// client-id wins. Clients sharing a sensor share the quota: a quota of
    /// a user (or the default user) is shared by every client id of that
    /// user; a quota of a client id by every user of it. A request without
    /// a client id is under its user's quotas only, as in Kafka.
    pub fn resolve(&self, key: QuotaKey, user: &str, client_id: &str) -> Option<(SensorId, f64)> {
        use EntityName::{Default, Named};
        if !self.any(key) {
            return None;
        }
        let named_user = || Some(Named(user.to_string()));
        let named_client = || Some(Named(client_id.to_string()));
        // (entity, user tag kept, client-id tag kept), most specific first.
        let levels: [(Option<EntityName>, Option<EntityName>, bool, bool); 8] = [
            (named_user(), named_client(), true, true),
            (named_user(), Some(Default), true, true),
            (named_user(), None, true, false),
            (Some(Default), named_client(), true, true),
            (Some(Default), Some(Default), true, true),
            (Some(Default), None, true, false),
            (None, named_client(), false, true),
            (None, Some(Default), false, true),
        ];
        levels
            .into_iter()
            .filter(|(_, client_name, _, _)| client_name.is_none() || !client_id.is_empty())
            .find_map(|(user_name, client_name, keep_user, keep_client)| {
                let entity = QuotaEntity {
                    user: user_name,
                    client_id: client_name,
                    ip: None,
                };
                let quota = self.get(&entity, key)?;
                Some((
                    SensorId {
                        key,
                        user: if keep_user { user } else { "" }.to_string(),
                        client_id: if keep_client { client_id } else { "" }.to_string(),
                    },
                    quota,
                ))
            })
    }

    /// The default IP entity's `connection_creation_rate`, for addresses
    /// without their own (kept by address, `server::hosts::IpRates`), as
    /// Kafka takes it ([`java_to_int`]; NaN is 0: every connection is
    /// throttled).
    pub fn default_connection_rate(&self) -> Option<f64> {
        let key = QuotaKey::ConnectionCreationRate;
        if !self.any(key) {
            return None;
        }
        let entity = QuotaEntity {
            ip: Some(EntityName::Default),
            ..QuotaEntity::default()
        };
        self.get(&entity, key).map(java_to_int)
    }
}

/// Java's `toInt` of a quota value, as Kafka's `ConnectionQuotas` takes
/// a `connection_creation_rate`: truncated, NaN 0, saturating.
pub fn java_to_int(rate: f64) -> f64 {
    f64::from(rate as i32)
}

/// What a quota is measured by: Kafka's sensor, named by the quota type
/// and its metric tags (user and client id, either left empty when the
/// quota that applies does not name it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SensorId {
    /// The quota measured.
    pub key: QuotaKey,
    /// The `user` tag.
    pub user: String,
    /// The `client-id` tag (for a connection rate, the client's address).
    pub client_id: String,
}

/// An AlterClientQuotas entry refused: INVALID_REQUEST with Kafka's message.
pub type Refusal = String;

/// Checks an AlterClientQuotas entity as Kafka's `validateEntity` and
/// `configKeysForEntityType` do, in their order; `resolvable` tells
/// whether an IP entity's name is an address or a host name that resolves
/// (`server::hosts::resolve`).
pub fn check_entity(
    requested: &RequestedEntity,
    resolvable: &dyn Fn(&str) -> bool,
) -> Result<QuotaEntity, Refusal> {
    if requested.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    let mut entity = QuotaEntity::default();
    for (kind, name) in requested {
        let Some(parsed) = EntityType::parse(kind) else {
            return Err(format!("Unhandled client quota entity type: {kind}"));
        };
        if name.as_deref() == Some("") {
            return Err(format!("Empty {kind} not supported"));
        }
        *entity.slot(parsed) = Some(EntityName::from_wire(name.as_deref()));
    }
    if entity.ip.is_some() && (entity.user.is_some() || entity.client_id.is_some()) {
        return Err(
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                .into(),
        );
    }
    if let Some(EntityName::Named(ip)) = &entity.ip {
        if !resolvable(ip) {
            return Err(format!("{ip} is not a valid IP or resolvable host."));
        }
    }
    Ok(entity)
}

/// Checks a value to set for `key` on `entity`, as Kafka's
/// `validateQuotaKeyValue`; returns the key.
pub fn check_value(entity: &QuotaEntity, key: &str, value: f64) -> Result<QuotaKey, Refusal> {
    let parsed = QuotaKey::parse(key)
        .filter(|k| k.for_ip() == entity.ip.is_some())
        .ok_or_else(|| format!("Invalid configuration key {key}"))?;
    // Every comparison with NaN is false: Kafka stores it.
    if value <= 0.0 {
        return Err(format!("Quota {key} must be greater than 0"));
    }
    let integral = match parsed.value_type() {
        ValueType::Double => false,
        ValueType::Int => {
            if value > f64::from(i32::MAX) {
                return Err(format!("Proposed value for {key} is too large for an INT."));
            }
            true
        }
        ValueType::Long => {
            if value > i64::MAX as f64 {
                return Err(format!("Proposed value for {key} is too large for a LONG."));
            }
            true
        }
    };
    if integral && (value % 1.0).abs() > 1e-6 {
        return Err(format!("{key} cannot be a fractional value."));
    }
    Ok(parsed)
}

/// DescribeClientQuotas's match types.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

/// A DescribeClientQuotas filter, checked.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Types that must have exactly this name (or the default).
    exact: Vec<(EntityType, EntityName)>,
    /// Types the entity must have, whatever the name.
    specified: Vec<EntityType>,
    /// No other types allowed.
    strict: bool,
}

/// Why a filter is refused: (Kafka error, message).
pub type FilterError = (crate::protocol::ErrorCode, String);

impl Filter {
    /// Checks the components (type, match type, match) in request order as
    /// Kafka's `ClientQuotasImage.describe` does.
    pub fn parse(
        components: &[(String, i8, Option<String>)],
        strict: bool,
    ) -> Result<Self, FilterError> {
        use crate::protocol::ErrorCode::{InvalidRequest, UnsupportedVersion};
        let mut filter = Filter {
            strict,
            ..Filter::default()
        };
        let mut seen: Vec<&str> = Vec::new();
        for (kind, match_type, name) in components {
            if kind.is_empty() {
                return Err((InvalidRequest, "Invalid empty entity type.".into()));
            }
            if seen.contains(&kind.as_str()) {
                return Err((
                    InvalidRequest,
                    format!("Entity type {kind} cannot appear more than once in the filter."),
                ));
            }
            seen.push(kind);
            let Some(parsed) = EntityType::parse(kind) else {
                return Err((
                    UnsupportedVersion,
                    format!("Unsupported entity type {kind}"),
                ));
            };
            match (*match_type, name) {
                (MATCH_EXACT, None) => {
                    return Err((
                        InvalidRequest,
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    ))
                }
                (MATCH_EXACT, Some(name)) => {
                    filter.exact.push((parsed, EntityName::Named(name.clone())))
                }
                (MATCH_DEFAULT, Some(_)) => {
                    return Err((
                        InvalidRequest,
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                            .into(),
                    ))
                }
                (MATCH_DEFAULT, None) => filter.exact.push((parsed, EntityName::Default)),
                (MATCH_SPECIFIED, Some(_)) => return Err((
                    InvalidRequest,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                )),
                (MATCH_SPECIFIED, None) => filter.specified.push(parsed),
                (other, _) => return Err((InvalidRequest, format!("Unknown match type {other}"))),
            }
        }
        let has = |kind: EntityType| seen.contains(&kind.name());
        if has(EntityType::Ip) && (has(EntityType::User) || has(EntityType::ClientId)) {
            return Err((
                InvalidRequest,
                "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.".into(),
            ));
        }
        Ok(filter)
    }

    /// True when `entity` passes the filter. A SPECIFIED type matches the
    /// default entity of the type too, as in Kafka 4.1.
    pub fn matches(&self, entity: &QuotaEntity) -> bool {
        if self.strict && entity.len() != self.exact.len() + self.specified.len() {
            return false;
        }
        self.exact
            .iter()
            .all(|(kind, name)| entity.get(*kind) == Some(name))
            && self
                .specified
                .iter()
                .all(|kind| entity.get(*kind).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requested(components: &[(&str, Option<&str>)]) -> RequestedEntity {
        requested_entity(components.iter().copied())
    }

    fn check_entity_here(requested: &RequestedEntity) -> Result<QuotaEntity, Refusal> {
        check_entity(requested, &|ip| crate::server::hosts::literal(ip).is_some())
    }

    fn named(name: &str) -> Option<EntityName> {
        Some(EntityName::Named(name.into()))
    }

    /// Goal: entities are checked with Kafka's messages, in its order.
    #[test]
    fn entities_are_checked_as_kafka_checks_them() {
        assert_eq!(
            check_entity_here(&requested(&[])).unwrap_err(),
            "Invalid empty client quota entity"
        );
        assert_eq!(
            check_entity_here(&requested(&[("group", Some("g"))])).unwrap_err(),
            "Unhandled client quota entity type: group"
        );
        assert_eq!(
            check_entity_here(&requested(&[("client-id", Some(""))])).unwrap_err(),
            "Empty client-id not supported"
        );
        assert_eq!(
            check_entity_here(&requested(&[("ip", None), ("user", Some("a"))])).unwrap_err(),
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        );
        assert_eq!(
            check_entity_here(&requested(&[("ip", Some("nope"))])).unwrap_err(),
            "nope is not a valid IP or resolvable host."
        );
        // The last name of a type named twice wins.
        let entity = check_entity_here(&requested(&[("user", Some("a")), ("user", None)])).unwrap();
        assert_eq!(entity.user, Some(EntityName::Default));
        // Listed in Java's HashMap order, as Kafka prints them.
        let both = requested(&[("user", Some("u")), ("client-id", None)]);
        assert_eq!(
            entity_text(&both),
            "ClientQuotaEntity(entries={client-id=null, user=u})"
        );
        assert_eq!(
            entity_text(&requested(&[("bogus", Some("z")), ("client-id", None)])),
            "ClientQuotaEntity(entries={client-id=null, bogus=z})"
        );
        assert_eq!(both, requested(&[("client-id", None), ("user", Some("u"))]));
        assert!(check_entity_here(&requested(&[("ip", Some("::1"))])).is_ok());
    }

    /// Goal: values are checked per key type as Kafka does.
    #[test]
    fn values_are_checked_per_key_type() {
        let user = QuotaEntity {
            user: named("u"),
            ..QuotaEntity::default()
        };
        let ip = QuotaEntity {
            ip: named("1.2.3.4"),
            ..QuotaEntity::default()
        };
        assert_eq!(
            check_value(&user, "producer_byte_rate", 1024.0),
            Ok(QuotaKey::ProducerByteRate)
        );
        assert_eq!(
            check_value(&user, "connection_creation_rate", 1.0).unwrap_err(),
            "Invalid configuration key connection_creation_rate"
        );
        assert_eq!(
            check_value(&ip, "producer_byte_rate", 1.0).unwrap_err(),
            "Invalid configuration key producer_byte_rate"
        );
        assert_eq!(
            check_value(&user, "SCRAM-SHA-256", 1.0).unwrap_err(),
            "Invalid configuration key SCRAM-SHA-256"
        );
        assert_eq!(
            check_value(&user, "consumer_byte_rate", 0.0).unwrap_err(),
            "Quota consumer_byte_rate must be greater than 0"
        );
        assert_eq!(
            check_value(&user, "consumer_byte_rate", 1.5).unwrap_err(),
            "consumer_byte_rate cannot be a fractional value."
        );
        assert!(check_value(&user, "consumer_byte_rate", 1.000_000_1).is_ok());
        assert_eq!(
            check_value(&user, "producer_byte_rate", 1e19).unwrap_err(),
            "Proposed value for producer_byte_rate is too large for a LONG."
        );
        assert_eq!(
            check_value(&ip, "connection_creation_rate", 3e9).unwrap_err(),
            "Proposed value for connection_creation_rate is too large for an INT."
        );
        for key in QuotaKey::ALL {
            let entity = if key.for_ip() { &ip } else { &user };
            assert!(check_value(entity, key.name(), 7.0).is_ok(), "{key:?}");
            assert!(check_value(entity, key.name(), f64::NAN).is_ok(), "{key:?}");
        }
    }

    /// Goal: the most specific quota applies, and its sensor is shared as
    /// Kafka's metric tags share it.
    #[test]
    fn the_most_specific_quota_applies() {
        let key = QuotaKey::ProducerByteRate;
        let mut quotas = ClientQuotas::default();
        assert!(quotas.resolve(key, "u", "c").is_none());
        let set = |quotas: &mut ClientQuotas, user, client_id, value| {
            quotas.apply(
                &QuotaEntity {
                    user,
                    client_id,
                    ip: None,
                },
                key,
                Some(value),
            )
        };
        set(&mut quotas, None, Some(EntityName::Default), 1.0);
        let (sensor, quota) = quotas.resolve(key, "u", "c").unwrap();
        assert_eq!((&*sensor.user, &*sensor.client_id, quota), ("", "c", 1.0));
        set(&mut quotas, Some(EntityName::Default), None, 2.0);
        let (sensor, quota) = quotas.resolve(key, "u", "c").unwrap();
        assert_eq!((&*sensor.user, &*sensor.client_id, quota), ("u", "", 2.0));
        set(&mut quotas, named("u"), named("c"), 3.0);
        assert_eq!(quotas.resolve(key, "u", "c").unwrap().1, 3.0);
        assert_eq!(quotas.resolve(key, "v", "c").unwrap().1, 2.0);
        assert!(quotas
            .resolve(QuotaKey::ConsumerByteRate, "u", "c")
            .is_none());
        quotas.apply(
            &QuotaEntity {
                user: named("u"),
                client_id: named("c"),
                ip: None,
            },
            key,
            None,
        );
        assert_eq!(quotas.resolve(key, "u", "c").unwrap().1, 2.0);
        // Without a client id only user quotas apply, as in Kafka.
        set(&mut quotas, Some(EntityName::Default), None, 4.0);
        assert_eq!(quotas.resolve(key, "u", "").unwrap().1, 4.0);
        quotas.apply(
            &QuotaEntity {
                user: Some(EntityName::Default),
                client_id: None,
                ip: None,
            },
            key,
            None,
        );
        assert!(quotas.resolve(key, "u", "").is_none());
        assert!(quotas.resolve(key, "u", "c").is_some());
        // Keys no entity holds cost nothing to look up.
        assert!(!quotas.any(QuotaKey::ConnectionCreationRate));
        let ip = |name: &str| QuotaEntity {
            ip: Some(EntityName::Named(name.into())),
            ..QuotaEntity::default()
        };
        quotas.apply(&ip("10.0.0.1"), QuotaKey::ConnectionCreationRate, Some(5.0));
        assert_eq!(quotas.default_connection_rate(), None);
        let default_ip = QuotaEntity {
            ip: Some(EntityName::Default),
            ..QuotaEntity::default()
        };
        quotas.apply(
            &default_ip,
            QuotaKey::ConnectionCreationRate,
            Some(f64::NAN),
        );
        assert_eq!(quotas.default_connection_rate(), Some(0.0));
        quotas.apply(&default_ip, QuotaKey::ConnectionCreationRate, Some(2.9));
        assert_eq!(quotas.default_connection_rate(), Some(2.0));
        quotas.apply(&default_ip, QuotaKey::ConnectionCreationRate, Some(1e20));
        assert_eq!(quotas.default_connection_rate(), Some(f64::from(i32::MAX)));
        quotas.apply(&default_ip, QuotaKey::ConnectionCreationRate, None);
        quotas.apply(&ip("10.0.0.1"), QuotaKey::ConnectionCreationRate, None);
        assert!(!quotas.any(QuotaKey::ConnectionCreationRate));
    }

    /// Goal: filters are checked and matched as Kafka 4.1's image does.
    #[test]
    fn filters_check_and_match_as_kafka() {
        use crate::protocol::ErrorCode;
        let c = |kind: &str, match_type: i8, name: Option<&str>| {
            (kind.to_string(), match_type, name.map(str::to_string))
        };
        assert_eq!(
            Filter::parse(&[c("group", 2, None)], false).unwrap_err().0,
            ErrorCode::UnsupportedVersion
        );
        assert_eq!(
            Filter::parse(&[c("user", 0, None)], false).unwrap_err().1,
            "Request specified MATCH_TYPE_EXACT, but set match string to null."
        );
        assert_eq!(
            Filter::parse(&[c("user", 2, None), c("user", 1, None)], false)
                .unwrap_err()
                .1,
            "Entity type user cannot appear more than once in the filter."
        );
        assert_eq!(
            Filter::parse(&[c("ip", 2, None), c("user", 2, None)], false)
                .unwrap_err()
                .0,
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            Filter::parse(&[c("user", 7, None)], false).unwrap_err().1,
            "Unknown match type 7"
        );
        let both = QuotaEntity {
            user: named("u"),
            client_id: Some(EntityName::Default),
            ip: None,
        };
        let default_user = QuotaEntity {
            user: Some(EntityName::Default),
            ..QuotaEntity::default()
        };
        let specified = Filter::parse(&[c("user", 2, None)], false).unwrap();
        assert!(specified.matches(&both) && specified.matches(&default_user));
        let strict = Filter::parse(&[c("user", 2, None)], true).unwrap();
        assert!(!strict.matches(&both) && strict.matches(&default_user));
        let exact =
            Filter::parse(&[c("user", 0, Some("u")), c("client-id", 1, None)], true).unwrap();
        assert!(exact.matches(&both) && !exact.matches(&default_user));
        assert!(Filter::parse(&[], false).unwrap().matches(&both));
        assert!(!Filter::parse(&[], true).unwrap().matches(&both));
    }

    /// Goal: NaN and infinite values survive the metadata log's JSON.
    #[test]
    fn odd_values_survive_json() {
        for value in [f64::NAN, f64::INFINITY, 1024.0, 0.25] {
            let text = serde_json::to_string(&QuotaValue(value)).unwrap();
            let back: QuotaValue = serde_json::from_str(&text).unwrap();
            assert_eq!(back, QuotaValue(value), "{text}");
        }
    }
}
