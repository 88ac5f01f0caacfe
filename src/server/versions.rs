//! The API version table: what ApiVersions advertises and what each handler
//! serves. Ranges follow PROTOCOL.md: wide enough that librdkafka 2.0-2.15,
//! kafka-python 2.x and the Java client all negotiate, including the v0
//! entries old librdkafka checks for (Produce v0-v2 are advertised, as Kafka
//! 4.0 does, but refused).

use kafka_protocol::messages::ApiKey;

/// One API's ranges.
#[derive(Debug, Clone, Copy)]
pub struct ApiRange {
    /// The API.
    pub key: ApiKey,
    /// Lowest version advertised.
    pub advertised_min: i16,
    /// Highest version advertised and served.
    pub max: i16,
    /// Lowest version actually served (>= advertised_min).
    pub served_min: i16,
}

/// Every API this broker answers.
pub const API_RANGES: &[ApiRange] = &[
    ApiRange {
        key: ApiKey::Produce,
        advertised_min: 0,
        max: 12,
        served_min: 3,
    },
    ApiRange {
        key: ApiKey::Fetch,
        advertised_min: 4,
        max: 17,
        served_min: 4,
    },
    ApiRange {
        key: ApiKey::ListOffsets,
        advertised_min: 1,
        max: 10,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::Metadata,
        advertised_min: 0,
        max: 13,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ApiVersions,
        advertised_min: 0,
        max: 4,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::CreateTopics,
        advertised_min: 2,
        max: 7,
        served_min: 2,
    },
    ApiRange {
        key: ApiKey::DeleteTopics,
        advertised_min: 1,
        max: 6,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::DescribeConfigs,
        advertised_min: 1,
        max: 4,
        served_min: 1,
    },
];

/// The range of `key`, if served.
pub fn range_of(key: ApiKey) -> Option<&'static ApiRange> {
    API_RANGES.iter().find(|r| r.key == key)
}

/// True when `version` of `key` is served.
pub fn is_served(key: ApiKey, version: i16) -> bool {
    range_of(key).is_some_and(|r| version >= r.served_min && version <= r.max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_ranges_are_inside_what_the_codec_supports() {
        for r in API_RANGES {
            let codec = r.key.valid_versions();
            assert!(r.served_min >= codec.min, "{:?}", r.key);
            assert!(r.max <= codec.max, "{:?}", r.key);
            assert!(r.advertised_min <= r.served_min, "{:?}", r.key);
        }
    }

    #[test]
    fn ranges_include_what_clients_need() {
        // kafka-python caps Produce at 8 and Fetch at 10; librdkafka < 2.11.1 checks Produce v0.
        assert!(is_served(ApiKey::Produce, 8));
        assert_eq!(range_of(ApiKey::Produce).unwrap().advertised_min, 0);
        assert!(is_served(ApiKey::Fetch, 10));
        assert!(is_served(ApiKey::Fetch, 4));
        assert!(is_served(ApiKey::Metadata, 0));
        assert!(!is_served(ApiKey::Produce, 2));
    }
}
