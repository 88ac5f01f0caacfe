//! Feature levels (KIP-584), as ApiVersions v3+ advertises them: the
//! levels this broker can run at (SupportedFeatures) and the levels the
//! cluster runs at (FinalizedFeatures, with an epoch that grows with the
//! metadata log, as Kafka's `KRaftMetadataCache` reports it).
//!
//! Kafka 4.1 formats a new cluster at `metadata.version` 4.1-IV1 (27),
//! `transaction.version` 2, `group.version` 1 and
//! `eligible.leader.replicas.version` 1. This broker runs:
//! - `metadata.version` 27 only: it speaks Kafka 4.1's protocol;
//! - `transaction.version` 2 (supports 0-2): transactions V2 (KIP-890 part
//!   2) for clients that use it, V1 for the others, decided per request
//!   version as Kafka decides;
//! - `group.version` 1 only: the consumer group protocol (KIP-848) is on;
//! - `kraft.version` 0 only: one static voter (level 0 is not listed as
//!   finalized, as in Kafka).
//!
//! Not listed: `eligible.leader.replicas.version` (no ELR here),
//! `share.version` and `streams.version` (no share or streams groups).
//! Levels cannot be changed (UpdateFeatures is not served).

use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::protocol::StrBytes;

/// `transaction.version`.
pub const TRANSACTION_VERSION: &str = "transaction.version";

/// One feature: its name, the levels this broker supports, and the level
/// the cluster runs at.
struct Feature {
    name: &'static str,
    min: i16,
    max: i16,
    finalized: i16,
}

/// Every feature this broker knows, in Kafka's listing order.
const FEATURES: &[Feature] = &[
    Feature {
        name: "metadata.version",
        min: 27,
        max: 27,
        finalized: 27,
    },
    Feature {
        name: "kraft.version",
        min: 0,
        max: 0,
        finalized: 0,
    },
    Feature {
        name: TRANSACTION_VERSION,
        min: 0,
        max: 2,
        finalized: 2,
    },
    Feature {
        name: "group.version",
        min: 1,
        max: 1,
        finalized: 1,
    },
];

/// The finalized `transaction.version`: what the coordinator's own aborts
/// (timeouts, fencing) follow and which `__transaction_state` record
/// version it writes.
pub fn transaction_version() -> i16 {
    finalized_level(TRANSACTION_VERSION)
}

fn finalized_level(name: &str) -> i16 {
    FEATURES
        .iter()
        .find(|f| f.name == name)
        .map_or(0, |f| f.finalized)
}

/// SupportedFeatures for an ApiVersions answer of `version`: before v4,
/// features whose minimum is 0 are left out (KAFKA-17011: older clients
/// cannot parse a range starting at 0).
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
pub fn finalized() -> Vec<FinalizedFeatureKey> {
    FEATURES
        .iter()
        .filter(|f| f.finalized > 0)
        .map(|f| {
            let mut key = FinalizedFeatureKey::default();
            key.name = StrBytes::from_static_str(f.name);
            key.min_version_level = f.finalized;
            key.max_version_level = f.finalized;
            key
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<T>(keys: &[T], name: impl Fn(&T) -> &str) -> Vec<String> {
        keys.iter().map(|k| name(k).to_string()).collect()
    }

    #[test]
    fn features_are_listed_as_kafka_lists_them() {
        assert_eq!(
            names(&supported(4), |k| k.name.as_str()),
            ["metadata.version", "transaction.version", "group.version"]
        );
        // v3 leaves out ranges starting at 0.
        assert_eq!(
            names(&supported(3), |k| k.name.as_str()),
            ["metadata.version", "group.version"]
        );
        let finalized = finalized();
        assert_eq!(
            names(&finalized, |k| k.name.as_str()),
            ["metadata.version", "transaction.version", "group.version"]
        );
        assert!(finalized
            .iter()
            .all(|k| k.min_version_level == k.max_version_level));
        assert_eq!(transaction_version(), 2);
    }
}
