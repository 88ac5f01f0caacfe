//! Feature levels (KIP-584): the levels this broker can run at
//! (SupportedFeatures in ApiVersions v3+), the levels the cluster runs at
//! (FinalizedFeatures, with an epoch that grows with the metadata log, as
//! Kafka's `KRaftMetadataCache` reports it), and UpdateFeatures' checks
//! (Kafka's `FeatureControlManager`).
//!
//! Kafka 4.1 formats a new cluster at `metadata.version` 4.1-IV1 (27),
//! `transaction.version` 2, `group.version` 1 and
//! `eligible.leader.replicas.version` 1. This broker:
//! - `metadata.version` 27 only: it speaks Kafka 4.1's protocol;
//! - `transaction.version` 0-2, 2 unless changed: transactions V2 (KIP-890
//!   part 2) for clients that use it, V1 for the others, decided per request
//!   version as Kafka decides. Java clients use V2 only while 2 is
//!   finalized; the level also decides how the coordinator's own aborts bump
//!   the epoch and which `__transaction_state` record version it writes;
//! - `group.version` 0-1, 1 unless changed: at 1 the consumer group
//!   protocol (KIP-848) is on; at 0 ConsumerGroupHeartbeat and
//!   ConsumerGroupDescribe answer UNSUPPORTED_VERSION, as Kafka's do, and
//!   consumers fall back to (or are told to use) the classic protocol;
//! - `kraft.version` 0 only: one static voter (a level-0 feature is not
//!   listed, as in Kafka);
//! - `eligible.leader.replicas.version` 0-1 (KIP-966): 1 on a new cluster
//!   (written with it, as Kafka's format writes it), 0 on a data directory
//!   an older version wrote until changed, as in a Kafka upgraded in place.
//!   With one replica per partition no partition ever has eligible leader
//!   replicas, so what the level changes is Kafka's rule for
//!   `min.insync.replicas` while it is 1: the cluster-level value is kept
//!   (written with the level, as Kafka writes it at format time and on
//!   upgrade) and no node may have its own (`config::dynamic::elr_refusal`).
//!
//! Not supported (level 0 only, not listed): `share.version` and
//! `streams.version` (no share or streams groups). UpdateFeatures refuses
//! other levels of the fixed features, where Kafka would accept some (a lower `metadata.version`,
//! `kraft.version` 1, `share.version` 1).

use std::collections::BTreeMap;

use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::protocol::StrBytes;

/// `transaction.version`.
pub const TRANSACTION_VERSION: &str = "transaction.version";
/// `group.version`.
pub const GROUP_VERSION: &str = "group.version";
/// `eligible.leader.replicas.version` (KIP-966).
pub const ELR_VERSION: &str = "eligible.leader.replicas.version";

/// One feature: its name, the levels this broker supports, and the level a
/// new cluster runs at.
struct Feature {
    name: &'static str,
    min: i16,
    max: i16,
    default: i16,
}

/// Every feature this broker knows, in Kafka's listing order.
const FEATURES: &[Feature] = &[
    Feature {
        name: "metadata.version",
        min: 27,
        max: 27,
        default: 27,
    },
    Feature {
        name: "kraft.version",
        min: 0,
        max: 0,
        default: 0,
    },
    Feature {
        name: TRANSACTION_VERSION,
        min: 0,
        max: 2,
        default: 2,
    },
    Feature {
        name: GROUP_VERSION,
        min: 0,
        max: 1,
        default: 1,
    },
    Feature {
        name: ELR_VERSION,
        min: 0,
        max: 1,
        // Set by a new cluster's records (`runtime::formatted_cluster`).
        default: 0,
    },
];

/// Features Kafka 4.1 knows and this broker runs only at level 0 (not
/// listed): UpdateFeatures to level 0 succeeds for them, as in Kafka.
const KAFKA_ONLY_FEATURES: &[&str] = &["share.version", "streams.version"];

/// Levels set by UpdateFeatures, by feature name (the image's); a feature
/// not in it runs at its default.
pub type FeatureLevels = BTreeMap<String, i16>;

/// The finalized level of feature `name`: 0 for a feature this broker does
/// not know.
pub fn level(levels: &FeatureLevels, name: &str) -> i16 {
    levels.get(name).copied().unwrap_or_else(|| {
        FEATURES
            .iter()
            .find(|f| f.name == name)
            .map_or(0, |f| f.default)
    })
}

/// Whether ELR is on (`eligible.leader.replicas.version` 1).
pub fn elr_enabled(levels: &FeatureLevels) -> bool {
    level(levels, ELR_VERSION) >= 1
}

/// Whether the consumer group protocol (KIP-848) is on: `group.version` 1,
/// Kafka's `GroupVersion.isConsumerRebalanceProtocolSupported`.
pub fn consumer_protocol_enabled(levels: &FeatureLevels) -> bool {
    level(levels, GROUP_VERSION) >= 1
}

/// The finalized `transaction.version`.
pub fn transaction_version(levels: &FeatureLevels) -> i16 {
    level(levels, TRANSACTION_VERSION)
}

/// SupportedFeatures for an ApiVersions answer of `version`: features whose
/// maximum is 0 are left out, and before v4 those whose minimum is 0 too
/// (KAFKA-17011: older clients cannot parse a range starting at 0).
pub fn supported(version: i16) -> Vec<SupportedFeatureKey> {
    FEATURES
        .iter()
        .filter(|f| f.max > 0 && (version >= 4 || f.min > 0))
        .map(|f| {
            let mut key = SupportedFeatureKey::default();
            key.name = StrBytes::from_static_str(f.name);
            key.min_version = f.min;
            key.max_version = f.max;
            key
        })
        .collect()
}

/// FinalizedFeatures: every feature above level 0, with min = max = level.
pub fn finalized(levels: &FeatureLevels) -> Vec<FinalizedFeatureKey> {
    FEATURES
        .iter()
        .filter_map(|f| {
            let level = level(levels, f.name);
            (level > 0).then(|| {
                let mut key = FinalizedFeatureKey::default();
                key.name = StrBytes::from_static_str(f.name);
                key.min_version_level = level;
                key.max_version_level = level;
                key
            })
        })
        .collect()
}

/// UpdateFeatures' upgrade types (`FeatureUpdate.UpgradeType`).
/// (2 is SAFE_DOWNGRADE, lossless; this broker's levels lose nothing.)
const UPGRADE: i8 = 1;
const UNSAFE_DOWNGRADE: i8 = 3;

/// Checks one feature update as Kafka's `FeatureControlManager.updateFeature`
/// does, in its order, on node `node_id`: Some((name, level)) to record,
/// None when the level is already that (nothing to write).
///
/// # Errors
/// Kafka's message for INVALID_UPDATE_VERSION.
pub fn check_update(
    levels: &FeatureLevels,
    node_id: i32,
    name: &str,
    new_level: i16,
    upgrade_type: i8,
) -> Result<Option<(String, i16)>, String> {
    let invalid =
        |reason: &str| format!("Invalid update version {new_level} for feature {name}. {reason}");
    if !(UPGRADE..=UNSAFE_DOWNGRADE).contains(&upgrade_type) {
        return Err(invalid(
            "The controller does not support the given upgrade type.",
        ));
    }
    let current = level(levels, name);
    if new_level < 0 {
        return Err(invalid("A feature version cannot be less than 0."));
    }
    // Kafka's `QuorumFeatures.reasonNotSupported`: an unknown feature
    // supports level 0 only; a range of one level reads as that level.
    let (min, max) = FEATURES
        .iter()
        .find(|f| f.name == name)
        .map_or((0, 0), |f| (f.min, f.max));
    if !(min..=max).contains(&new_level) {
        let who = format!("Local controller {node_id}");
        return Err(invalid(&if max == 0 {
            format!("{who} does not support this feature.")
        } else if min == max {
            format!("{who} only supports versions {min}")
        } else {
            format!("{who} only supports versions {min}-{max}")
        }));
    }
    // Level 0 of a feature Kafka does not know either (`Feature.featureFromName`).
    let known = FEATURES.iter().any(|f| f.name == name) || KAFKA_ONLY_FEATURES.contains(&name);
    if !known {
        return Err(invalid(&format!("Feature {name} not found.")));
    }
    if new_level < current && upgrade_type == UPGRADE {
        return Err(invalid(
            "Can't downgrade the version of this feature without setting the upgrade type \
             to either safe or unsafe downgrade.",
        ));
    }
    if new_level > current && upgrade_type != UPGRADE {
        return Err(invalid("Can't downgrade to a newer version."));
    }
    Ok((new_level != current).then(|| (name.to_string(), new_level)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<T>(keys: &[T], name: impl Fn(&T) -> &str) -> Vec<String> {
        keys.iter().map(|k| name(k).to_string()).collect()
    }

    #[test]
    fn features_are_listed_as_kafka_lists_them() {
        // A new cluster's levels (`runtime::formatted_cluster`).
        let levels = FeatureLevels::from([(ELR_VERSION.to_string(), 1)]);
        assert!(!elr_enabled(&FeatureLevels::new()));
        let all = [
            "metadata.version",
            "transaction.version",
            "group.version",
            ELR_VERSION,
        ];
        assert_eq!(names(&supported(4), |k| k.name.as_str()), all);
        // v3 leaves out ranges starting at 0.
        assert_eq!(
            names(&supported(3), |k| k.name.as_str()),
            ["metadata.version"]
        );
        let finalized_features = finalized(&levels);
        assert_eq!(names(&finalized_features, |k| k.name.as_str()), all);
        assert!(elr_enabled(&levels));
        assert!(finalized_features
            .iter()
            .all(|k| k.min_version_level == k.max_version_level));
        assert_eq!(transaction_version(&levels), 2);
        // Level 0 is not listed.
        assert!(consumer_protocol_enabled(&levels));
        let lowered = FeatureLevels::from([
            (TRANSACTION_VERSION.to_string(), 0),
            (ELR_VERSION.to_string(), 0),
            (GROUP_VERSION.to_string(), 0),
        ]);
        assert_eq!(
            names(&finalized(&lowered), |k| k.name.as_str()),
            ["metadata.version"]
        );
        assert_eq!(transaction_version(&lowered), 0);
        assert!(!consumer_protocol_enabled(&lowered));
    }

    #[test]
    fn updates_are_checked_in_kafkas_order_with_its_messages() {
        let levels = FeatureLevels::new();
        let check = |name: &str, level: i16, upgrade_type: i8| {
            check_update(&levels, 1, name, level, upgrade_type)
        };
        let prefix =
            |name: &str, level: i16| format!("Invalid update version {level} for feature {name}. ");
        assert_eq!(
            check("transaction.version", 1, 0),
            Err(prefix("transaction.version", 1)
                + "The controller does not support the given upgrade type.")
        );
        assert_eq!(
            check("transaction.version", -1, 3),
            Err(prefix("transaction.version", -1) + "A feature version cannot be less than 0.")
        );
        assert_eq!(
            check("transaction.version", 3, 1),
            Err(prefix("transaction.version", 3) + "Local controller 1 only supports versions 0-2")
        );
        assert_eq!(
            check("foo.version", 1, 1),
            Err(prefix("foo.version", 1) + "Local controller 1 does not support this feature.")
        );
        assert_eq!(
            check("transaction.version", 1, 1),
            Err(prefix("transaction.version", 1)
                + "Can't downgrade the version of this feature without setting the upgrade \
                   type to either safe or unsafe downgrade.")
        );
        assert_eq!(
            check("transaction.version", 1, 2),
            Ok(Some(("transaction.version".to_string(), 1)))
        );
        assert_eq!(check("transaction.version", 2, 2), Ok(None));
        assert_eq!(check("share.version", 0, 2), Ok(None));
        assert_eq!(
            check(ELR_VERSION, 1, 1),
            Ok(Some((ELR_VERSION.to_string(), 1)))
        );
        assert_eq!(
            check("foo.version", 0, 2),
            Err(prefix("foo.version", 0) + "Feature foo.version not found.")
        );
        // Measured on Kafka 4.1.1.
        assert_eq!(
            check("group.version", 0, 2),
            Ok(Some(("group.version".to_string(), 0)))
        );
        assert_eq!(
            check("group.version", 2, 1),
            Err(prefix("group.version", 2) + "Local controller 1 only supports versions 0-1")
        );
        assert_eq!(
            check("metadata.version", 26, 2),
            Err(prefix("metadata.version", 26) + "Local controller 1 only supports versions 27")
        );
        let lowered = FeatureLevels::from([(TRANSACTION_VERSION.to_string(), 1)]);
        assert_eq!(
            check_update(&lowered, 1, "transaction.version", 2, 2),
            Err(prefix("transaction.version", 2) + "Can't downgrade to a newer version.")
        );
    }
}
