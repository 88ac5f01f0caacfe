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
        max: 13,
        served_min: 3,
    },
    ApiRange {
        key: ApiKey::Fetch,
        advertised_min: 4,
        max: 18,
        served_min: 4,
    },
    ApiRange {
        key: ApiKey::ListOffsets,
        advertised_min: 1,
        max: 10,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::OffsetForLeaderEpoch,
        advertised_min: 2,
        max: 4,
        served_min: 2,
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
        key: ApiKey::CreatePartitions,
        advertised_min: 0,
        max: 3,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::AlterConfigs,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::IncrementalAlterConfigs,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeQuorum,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::UnregisterBroker,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::AddRaftVoter,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::RemoveRaftVoter,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::UpdateFeatures,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ListConfigResources,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeConfigs,
        advertised_min: 1,
        max: 4,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::InitProducerId,
        advertised_min: 0,
        max: 5,
        served_min: 0,
    },
    // Transactions V1 and V2 (KIP-890 part 2: EndTxn v5, with Produce v12
    // and TxnOffsetCommit v5; `cluster::features` finalizes
    // transaction.version 2): AddPartitionsToTxn v4+ is broker-to-broker
    // (KAFKA-15757), and V2 clients do not send AddPartitionsToTxn.
    ApiRange {
        key: ApiKey::AddPartitionsToTxn,
        advertised_min: 0,
        max: 5,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::AddOffsetsToTxn,
        advertised_min: 0,
        max: 4,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::EndTxn,
        advertised_min: 0,
        max: 5,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeTransactions,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ListTransactions,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::FindCoordinator,
        advertised_min: 0,
        max: 6,
        served_min: 0,
    },
    // JoinGroup from v0: librdkafka < 2.11 enables its balanced consumer only
    // when JoinGroup v0 is advertised (Kafka re-added v0-v1 in 4.0.1).
    ApiRange {
        key: ApiKey::JoinGroup,
        advertised_min: 0,
        max: 9,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::SyncGroup,
        advertised_min: 0,
        max: 5,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::Heartbeat,
        advertised_min: 0,
        max: 4,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::LeaveGroup,
        advertised_min: 0,
        max: 5,
        served_min: 0,
    },
    // OffsetCommit and OffsetFetch stop at Kafka 4.0's 9: v10 (Kafka 4.2)
    // names topics by id.
    ApiRange {
        key: ApiKey::OffsetCommit,
        advertised_min: 2,
        max: 9,
        served_min: 2,
    },
    ApiRange {
        key: ApiKey::OffsetFetch,
        advertised_min: 1,
        max: 9,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::ListGroups,
        advertised_min: 0,
        max: 5,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeGroups,
        advertised_min: 0,
        max: 6,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DeleteGroups,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::OffsetDelete,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    // TxnOffsetCommit: Kafka 4.0 has 0-5; v4 adds the TRANSACTION_ABORTABLE
    // error of KIP-890 verification, v5 is transactions V2 (the offsets
    // partition is added implicitly).
    ApiRange {
        key: ApiKey::ConsumerGroupHeartbeat,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ConsumerGroupDescribe,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::TxnOffsetCommit,
        advertised_min: 0,
        max: 5,
        served_min: 0,
    },
    // Kafka 4.0 serves WriteTxnMarkers v1 only (v0 was removed by KIP-896).
    ApiRange {
        key: ApiKey::WriteTxnMarkers,
        advertised_min: 1,
        max: 1,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::DescribeProducers,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    // Delegation tokens: Kafka 4.1's versions (v0 was removed by KIP-896).
    ApiRange {
        key: ApiKey::CreateDelegationToken,
        advertised_min: 1,
        max: 3,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::RenewDelegationToken,
        advertised_min: 1,
        max: 2,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::ExpireDelegationToken,
        advertised_min: 1,
        max: 2,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::DescribeDelegationToken,
        advertised_min: 1,
        max: 3,
        served_min: 1,
    },
    // Kafka 4.1 serves 1-2 (v0 was removed by KIP-896).
    ApiRange {
        key: ApiKey::AlterReplicaLogDirs,
        advertised_min: 1,
        max: 2,
        served_min: 1,
    },
    // Kafka 4.0 serves 1-4 (v0 was removed by KIP-896).
    ApiRange {
        key: ApiKey::DescribeLogDirs,
        advertised_min: 1,
        max: 4,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::DescribeCluster,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ElectLeaders,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    // No listener takes SASL: both are refused with ILLEGAL_SASL_STATE, as
    // on Kafka's PLAINTEXT listeners, which advertise them.
    ApiRange {
        key: ApiKey::SaslHandshake,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::SaslAuthenticate,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeUserScramCredentials,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::AlterUserScramCredentials,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeClientQuotas,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::AlterClientQuotas,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    // Without an authorizer these answer SECURITY_DISABLED, as Kafka does.
    ApiRange {
        key: ApiKey::DescribeAcls,
        advertised_min: 1,
        max: 3,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::CreateAcls,
        advertised_min: 1,
        max: 3,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::DeleteAcls,
        advertised_min: 1,
        max: 3,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::AlterPartitionReassignments,
        advertised_min: 0,
        max: 1,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ListPartitionReassignments,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeTopicPartitions,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DeleteRecords,
        advertised_min: 0,
        max: 2,
        served_min: 0,
    },
    // Share groups (KIP-932), listed as Kafka 4.1.1 lists them with
    // `share.version` 0 and answered as it answers them then: off
    // (`handlers::share_groups`).
    ApiRange {
        key: ApiKey::ShareGroupHeartbeat,
        advertised_min: 1,
        max: 1,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::ShareGroupDescribe,
        advertised_min: 1,
        max: 1,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::ShareFetch,
        advertised_min: 1,
        max: 1,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::ShareAcknowledge,
        advertised_min: 1,
        max: 1,
        served_min: 1,
    },
    ApiRange {
        key: ApiKey::InitializeShareGroupState,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ReadShareGroupState,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::WriteShareGroupState,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DeleteShareGroupState,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::ReadShareGroupStateSummary,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DescribeShareGroupOffsets,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::AlterShareGroupOffsets,
        advertised_min: 0,
        max: 0,
        served_min: 0,
    },
    ApiRange {
        key: ApiKey::DeleteShareGroupOffsets,
        advertised_min: 0,
        max: 0,
        served_min: 0,
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

    #[test]
    fn group_ranges_cover_every_client() {
        // librdkafka < 2.11 needs JoinGroup v0 advertised; librdkafka caps
        // FindCoordinator at 2 and LeaveGroup at 1; kafka-python caps
        // JoinGroup at 5; the KIP-848-aware librdkafka feature map wants
        // OffsetCommit/OffsetFetch v9; KafkaJS uses OffsetCommit v5.
        for (key, versions) in [
            (ApiKey::FindCoordinator, 0..=6),
            (ApiKey::JoinGroup, 0..=9),
            (ApiKey::SyncGroup, 0..=5),
            (ApiKey::Heartbeat, 0..=4),
            (ApiKey::LeaveGroup, 0..=5),
            (ApiKey::OffsetCommit, 2..=9),
            (ApiKey::OffsetFetch, 1..=9),
            (ApiKey::ListGroups, 0..=5),
            (ApiKey::DescribeGroups, 0..=6),
            (ApiKey::DeleteGroups, 0..=2),
            (ApiKey::OffsetDelete, 0..=0),
            (ApiKey::TxnOffsetCommit, 0..=5),
        ] {
            for version in versions {
                assert!(is_served(key, version), "{key:?} v{version}");
            }
        }
        assert_eq!(range_of(ApiKey::JoinGroup).unwrap().advertised_min, 0);
    }

    #[test]
    fn transaction_ranges_cover_librdkafka_and_java_v2() {
        // librdkafka sends AddPartitionsToTxn/AddOffsetsToTxn v0 and EndTxn
        // v0-1; Java 4.x with transaction.version 2 finalized sends Produce
        // v12+, EndTxn v5 and TxnOffsetCommit v5, and must find all three.
        for (key, versions) in [
            (ApiKey::AddPartitionsToTxn, 0..=3),
            (ApiKey::AddOffsetsToTxn, 0..=4),
            (ApiKey::EndTxn, 0..=5),
            (ApiKey::Produce, 12..=12),
            (ApiKey::TxnOffsetCommit, 5..=5),
            (ApiKey::DescribeTransactions, 0..=0),
            (ApiKey::ListTransactions, 0..=2),
        ] {
            for version in versions {
                assert!(is_served(key, version), "{key:?} v{version}");
            }
        }
        // v4-5 come from partition leaders (Kafka 4.1 offers them too).
        assert!(is_served(ApiKey::AddPartitionsToTxn, 5));
        assert!(!is_served(ApiKey::AddPartitionsToTxn, 6));
    }
}
