//! The metadata image: topics, their partitions and where each partition
//! lives, and topic configs. Built by applying [`MetadataRecord`]s in log
//! order. Every shard holds its own copy and applies the same records, so no
//! shard reads another's memory.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::config::dynamic::DynamicBrokerConfigs;
use crate::config::TopicConfigs;
use crate::quota::{ClientQuotas, QuotaEntity, QuotaKey, QuotaValue};
use crate::security::acl::{Acl, AclSet};
use crate::security::delegation_token::DelegationToken;
use crate::security::scram::{ScramCredential, ScramMechanism};
use uuid::Uuid;

/// One change to the cluster metadata, as stored in the metadata log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetadataRecord {
    /// The cluster was formatted with this id.
    Bootstrap {
        /// Kafka-style cluster id (22 chars, base64url of a UUID).
        cluster_id: String,
    },
    /// A topic and its partitions were created.
    CreateTopic {
        /// Topic name.
        name: String,
        /// Topic id (KIP-516).
        topic_id: Uuid,
        /// For each partition index, the shard that owns it on this node.
        partition_shards: Vec<u16>,
        /// Config overrides given at creation.
        configs: BTreeMap<String, String>,
    },
    /// A block of producer ids was handed out; ids below
    /// `next_producer_id` are never given again.
    ProducerIds {
        /// First id not yet handed out.
        next_producer_id: i64,
    },
    /// A topic's config overrides were replaced (AlterConfigs,
    /// IncrementalAlterConfigs).
    AlterTopicConfigs {
        /// Topic name.
        name: String,
        /// Topic id.
        topic_id: Uuid,
        /// Every override the topic now has, validated.
        configs: BTreeMap<String, String>,
    },
    /// Partitions were added to a topic (CreatePartitions).
    CreatePartitions {
        /// Topic name.
        name: String,
        /// Topic id.
        topic_id: Uuid,
        /// The owning shard of each new partition, in partition order after
        /// the existing ones.
        partition_shards: Vec<u16>,
    },
    /// A topic was deleted.
    DeleteTopic {
        /// Topic name.
        name: String,
        /// Topic id, so a re-created topic of the same name is not confused.
        topic_id: Uuid,
    },
    /// A user's SCRAM credential for one mechanism was set
    /// (AlterUserScramCredentials, `--add-scram`).
    UserScramCredential {
        /// User name.
        name: String,
        /// Mechanism.
        mechanism: ScramMechanism,
        /// Salt, keys and iterations.
        credential: ScramCredential,
    },
    /// A user's SCRAM credential for one mechanism was removed.
    RemoveUserScramCredential {
        /// User name.
        name: String,
        /// Mechanism.
        mechanism: ScramMechanism,
    },
    /// An ACL was created (Kafka's AccessControlEntryRecord).
    AccessControlEntry {
        /// Its id.
        id: Uuid,
        /// The ACL.
        acl: Acl,
    },
    /// An ACL was deleted (Kafka's RemoveAccessControlEntryRecord).
    RemoveAccessControlEntry {
        /// Its id.
        id: Uuid,
    },
    /// One key of a client quota entity was set or removed (Kafka's
    /// ClientQuotaRecord).
    ClientQuota {
        /// The entity.
        entity: QuotaEntity,
        /// The key.
        key: QuotaKey,
        /// The new value; None removes the key.
        value: Option<QuotaValue>,
    },
    /// The dynamic configs of one BROKER resource were replaced (Kafka's
    /// ConfigRecords of a BROKER resource).
    BrokerConfigs {
        /// The node they apply to; None for the cluster-wide default.
        broker: Option<i32>,
        /// Every dynamic config the resource now has, as given.
        configs: BTreeMap<String, String>,
    },
    /// The configs of one GROUP resource were replaced (Kafka's
    /// ConfigRecords of a GROUP resource); none left forgets the group.
    GroupConfigs {
        /// Group id.
        group: String,
        /// Every config the group now has, as given.
        configs: BTreeMap<String, String>,
    },
    /// The configs of one CLIENT_METRICS resource (a subscription) were
    /// replaced (Kafka's ConfigRecords of it); none left forgets it.
    ClientMetricsConfigs {
        /// Subscription name.
        name: String,
        /// Every config it now has, as given.
        configs: BTreeMap<String, String>,
    },
    /// A delegation token was created, renewed or expired (Kafka's
    /// DelegationTokenRecord): the token as it now is.
    DelegationToken {
        /// The token.
        token: DelegationToken,
    },
    /// A delegation token was removed, expired or swept (Kafka's
    /// RemoveDelegationTokenRecord).
    RemoveDelegationToken {
        /// Its id.
        token_id: String,
    },
    /// The node started again and leads every partition anew: each
    /// partition that exists moves up two leader epochs, as a Kafka node's
    /// do when its controller fences its old incarnation (leader none)
    /// and elects the new one (Kafka's PartitionChangeRecords; measured on
    /// Kafka 4.1.1 after a clean stop and after kill -9 alike). Written at
    /// every start-up, before the partitions open.
    LeadershipResumed,
    /// A feature's finalized level was set (Kafka's FeatureLevelRecord,
    /// written by UpdateFeatures).
    FeatureLevel {
        /// Feature name.
        name: String,
        /// Its level.
        level: i16,
    },
}

/// Group configs by group id (`config::group_config`).
pub type GroupConfigMap = BTreeMap<String, GroupConfigs>;

/// One group's configs: as given, and what the coordinator reads of them
/// (parsed once here, not at every heartbeat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigs {
    /// Every config the group has, as given.
    pub values: BTreeMap<String, String>,
    /// What they change in how the coordinator treats the group.
    pub overrides: crate::config::group_config::GroupOverrides,
}

/// A topic as the image knows it.
#[derive(Debug, Clone)]
pub struct TopicImage {
    /// Topic name.
    pub name: String,
    /// Topic id.
    pub topic_id: Uuid,
    /// Owning shard of each partition, indexed by partition.
    pub partition_shards: Vec<u16>,
    /// Leader epoch of each partition, indexed by partition: 0 at
    /// creation, two more at each start-up of the node since.
    pub leader_epochs: Vec<i32>,
    /// Config overrides, validated when the topic was created.
    pub configs: TopicConfigs,
}

impl TopicImage {
    /// True for Kafka's internal topics.
    pub fn is_internal(&self) -> bool {
        is_internal_topic(&self.name)
    }

    /// The leader epoch of partition `index` (0 for one it lacks).
    pub fn leader_epoch(&self, index: i32) -> i32 {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.leader_epochs.get(index))
            .copied()
            .unwrap_or(0)
    }
}

/// Kafka's answer to a request's `current_leader_epoch` (ListOffsets,
/// OffsetForLeaderEpoch; Fetch passes any negative epoch as -1, as Kafka's
/// `FetchRequest.optionalEpoch` does) against the partition's epoch
/// `current`: -1 asks for no check; an older epoch is FENCED_LEADER_EPOCH,
/// a newer one UNKNOWN_LEADER_EPOCH. The image and the `Partition` on the
/// owning shard hold the same epoch: it only changes at start-up.
pub fn check_current_leader_epoch(
    requested: i32,
    current: i32,
) -> Result<(), crate::protocol::ErrorCode> {
    use crate::protocol::ErrorCode;
    match requested {
        -1 => Ok(()),
        epoch if epoch < current => Err(ErrorCode::FencedLeaderEpoch),
        epoch if epoch > current => Err(ErrorCode::UnknownLeaderEpoch),
        _ => Ok(()),
    }
}

/// True for the names of Kafka's internal topics.
pub fn is_internal_topic(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
}

/// Read-only view of the metadata on one shard.
#[derive(Debug, Clone, Default)]
pub struct MetadataImage {
    /// Cluster id, set by the bootstrap record.
    pub cluster_id: String,
    /// Topics by name.
    pub topics: BTreeMap<String, Rc<TopicImage>>,
    /// Topic names by id.
    pub topic_names: HashMap<Uuid, String>,
    /// Number of records applied (the metadata offset).
    pub applied_records: u64,
    /// The metadata offset of the last topic created or deleted or given
    /// partitions: what consumer groups' subscriptions depend on.
    pub topics_version: u64,
    /// First producer id not yet handed out.
    pub next_producer_id: i64,
    /// SCRAM credentials by user, then mechanism.
    pub scram_credentials: BTreeMap<String, BTreeMap<ScramMechanism, Rc<ScramCredential>>>,
    /// Every ACL (shared between images until one changes).
    pub acls: Rc<AclSet>,
    /// Every client quota (shared between images until one changes).
    pub client_quotas: Rc<ClientQuotas>,
    /// The dynamic broker configs.
    pub broker_configs: Rc<DynamicBrokerConfigs>,
    /// Group configs by group id, only groups that set some (shared
    /// between images until one changes).
    pub group_configs: Rc<GroupConfigMap>,
    /// Client-metrics subscriptions by name, each with its configs as
    /// given (`config::client_metrics`).
    pub client_metrics: Rc<BTreeMap<String, BTreeMap<String, String>>>,
    /// Feature levels set by UpdateFeatures (`cluster::features`).
    pub features: crate::cluster::features::FeatureLevels,
    /// Delegation tokens by id (shared between images until one changes).
    pub delegation_tokens: Rc<BTreeMap<String, Rc<DelegationToken>>>,
    /// Start-ups of the node after its first (`LeadershipResumed` records).
    pub restarts: i32,
}

impl MetadataImage {
    /// The image `records` make, applied in order from an empty one.
    pub fn from_records(records: &[MetadataRecord]) -> Self {
        let mut image = MetadataImage::default();
        for record in records {
            image.apply(record);
        }
        image
    }

    /// Applies one record, in log order.
    pub fn apply(&mut self, record: &MetadataRecord) {
        self.applied_records += 1;
        if matches!(
            record,
            MetadataRecord::CreateTopic { .. }
                | MetadataRecord::CreatePartitions { .. }
                | MetadataRecord::DeleteTopic { .. }
        ) {
            self.topics_version = self.applied_records;
        }
        match record {
            MetadataRecord::Bootstrap { cluster_id } => self.cluster_id.clone_from(cluster_id),
            MetadataRecord::CreateTopic {
                name,
                topic_id,
                partition_shards,
                configs,
            } => {
                self.topic_names.insert(*topic_id, name.clone());
                self.topics.insert(
                    name.clone(),
                    Rc::new(TopicImage {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partition_shards: partition_shards.clone(),
                        leader_epochs: vec![0; partition_shards.len()],
                        configs: TopicConfigs::from_validated(configs.clone()),
                    }),
                );
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                assert!(
                    *next_producer_id >= self.next_producer_id,
                    "producer ids never go backwards"
                );
                self.next_producer_id = *next_producer_id;
            }
            MetadataRecord::AlterTopicConfigs {
                name,
                topic_id,
                configs,
            } => self.replace_topic(name, *topic_id, |topic| {
                topic.configs = TopicConfigs::from_validated(configs.clone());
            }),
            MetadataRecord::CreatePartitions {
                name,
                topic_id,
                partition_shards,
            } => self.replace_topic(name, *topic_id, |topic| {
                topic.partition_shards.extend_from_slice(partition_shards);
                topic.leader_epochs.resize(topic.partition_shards.len(), 0);
            }),
            MetadataRecord::LeadershipResumed => {
                self.restarts = self.restarts.saturating_add(1);
                for topic in self.topics.values_mut() {
                    for epoch in &mut Rc::make_mut(topic).leader_epochs {
                        *epoch = epoch.saturating_add(2);
                    }
                }
            }
            MetadataRecord::DeleteTopic { name, topic_id } => {
                if self
                    .topics
                    .get(name)
                    .is_some_and(|t| t.topic_id == *topic_id)
                {
                    self.topics.remove(name);
                    self.topic_names.remove(topic_id);
                }
            }
            MetadataRecord::UserScramCredential {
                name,
                mechanism,
                credential,
            } => {
                self.scram_credentials
                    .entry(name.clone())
                    .or_default()
                    .insert(*mechanism, Rc::new(credential.clone()));
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                if let Some(mechanisms) = self.scram_credentials.get_mut(name) {
                    mechanisms.remove(mechanism);
                    if mechanisms.is_empty() {
                        self.scram_credentials.remove(name);
                    }
                }
            }
            MetadataRecord::AccessControlEntry { id, acl } => {
                Rc::make_mut(&mut self.acls).insert(*id, acl.clone());
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                Rc::make_mut(&mut self.acls).remove(id);
            }
            MetadataRecord::ClientQuota { entity, key, value } => {
                Rc::make_mut(&mut self.client_quotas).apply(entity, *key, value.map(|v| v.0));
            }
            MetadataRecord::BrokerConfigs { broker, configs } => {
                Rc::make_mut(&mut self.broker_configs).set_layer(*broker, configs.clone());
            }
            MetadataRecord::DelegationToken { token } => {
                Rc::make_mut(&mut self.delegation_tokens)
                    .insert(token.token_id.clone(), Rc::new(token.clone()));
            }
            MetadataRecord::RemoveDelegationToken { token_id } => {
                Rc::make_mut(&mut self.delegation_tokens).remove(token_id);
            }
            MetadataRecord::FeatureLevel { name, level } => {
                self.features.insert(name.clone(), *level);
            }
            MetadataRecord::ClientMetricsConfigs { name, configs } => {
                let subscriptions = Rc::make_mut(&mut self.client_metrics);
                if configs.is_empty() {
                    subscriptions.remove(name);
                } else {
                    subscriptions.insert(name.clone(), configs.clone());
                }
            }
            MetadataRecord::GroupConfigs { group, configs } => {
                let groups = Rc::make_mut(&mut self.group_configs);
                if configs.is_empty() {
                    groups.remove(group);
                } else {
                    groups.insert(
                        group.clone(),
                        GroupConfigs {
                            values: configs.clone(),
                            overrides: crate::config::group_config::GroupOverrides::of(configs),
                        },
                    );
                }
            }
        }
    }

    /// A user's SCRAM credential for `mechanism`.
    pub fn scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Option<&Rc<ScramCredential>> {
        self.scram_credentials.get(user)?.get(&mechanism)
    }

    /// Changes the topic `name` if it is still the incarnation `topic_id`.
    fn replace_topic(&mut self, name: &str, topic_id: Uuid, change: impl FnOnce(&mut TopicImage)) {
        if let Some(topic) = self.topics.get_mut(name).filter(|t| t.topic_id == topic_id) {
            change(Rc::make_mut(topic));
        }
    }

    /// Topic by name.
    pub fn topic(&self, name: &str) -> Option<&Rc<TopicImage>> {
        self.topics.get(name)
    }

    /// Topic by id.
    pub fn topic_by_id(&self, id: &Uuid) -> Option<&Rc<TopicImage>> {
        self.topic_names.get(id).and_then(|n| self.topics.get(n))
    }

    /// Partitions owned by each shard, for least-loaded placement.
    pub fn partitions_per_shard(&self, nr_shards: usize) -> Vec<usize> {
        let mut counts = vec![0usize; nr_shards];
        for topic in self.topics.values() {
            for &shard in &topic.partition_shards {
                counts[usize::from(shard) % nr_shards] += 1;
            }
        }
        counts
    }
}

/// Chooses the owning shard of `count` new partitions: each goes to the shard
/// with the fewest partitions so far (lowest id on ties). Deterministic, so
/// the same image always gives the same placement.
pub fn place_partitions(image: &MetadataImage, nr_shards: usize, count: usize) -> Vec<u16> {
    assert!(nr_shards > 0);
    assert!(nr_shards <= usize::from(u16::MAX));
    let mut load = image.partitions_per_shard(nr_shards);
    (0..count)
        .map(|_| {
            let (shard, _) = load
                .iter()
                .enumerate()
                .min_by_key(|(i, n)| (**n, *i))
                .expect("at least one shard");
            load[shard] += 1;
            shard as u16
        })
        .collect()
}

/// Kafka's text form of a cluster id: URL-safe base64 of a UUID, no padding.
pub fn cluster_id_string(id: Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    let mut bits: u32 = 0;
    let mut nbits = 0;
    for &b in bytes {
        bits = (bits << 8) | u32::from(b);
        nbits += 8;
        while nbits >= 6 {
            nbits -= 6;
            out.push(ALPHABET[((bits >> nbits) & 63) as usize] as char);
        }
    }
    if nbits > 0 {
        out.push(ALPHABET[((bits << (6 - nbits)) & 63) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_spreads_partitions_over_shards_and_is_stable() {
        let mut image = MetadataImage::default();
        let first = place_partitions(&image, 2, 3);
        assert_eq!(first, vec![0, 1, 0]);
        image.apply(&MetadataRecord::CreateTopic {
            name: "a".into(),
            topic_id: Uuid::new_v4(),
            partition_shards: first,
            configs: BTreeMap::new(),
        });
        assert_eq!(place_partitions(&image, 2, 3), vec![1, 0, 1]);
    }

    #[test]
    fn added_partitions_and_altered_configs_change_only_their_incarnation() {
        let mut image = MetadataImage::default();
        let old = Uuid::new_v4();
        image.apply(&MetadataRecord::CreateTopic {
            name: "t".into(),
            topic_id: old,
            partition_shards: vec![0],
            configs: BTreeMap::new(),
        });
        let overrides: BTreeMap<String, String> =
            [("retention.ms".to_string(), "5".to_string())].into();
        image.apply(&MetadataRecord::CreatePartitions {
            name: "t".into(),
            topic_id: old,
            partition_shards: vec![1, 0],
        });
        image.apply(&MetadataRecord::AlterTopicConfigs {
            name: "t".into(),
            topic_id: old,
            configs: overrides.clone(),
        });
        let topic = image.topic("t").unwrap();
        assert_eq!(topic.partition_shards, vec![0, 1, 0]);
        assert_eq!(topic.configs.overrides(), &overrides);
        // Records of another incarnation of the name change nothing.
        image.apply(&MetadataRecord::CreatePartitions {
            name: "t".into(),
            topic_id: Uuid::new_v4(),
            partition_shards: vec![1],
        });
        image.apply(&MetadataRecord::AlterTopicConfigs {
            name: "t".into(),
            topic_id: Uuid::new_v4(),
            configs: BTreeMap::new(),
        });
        let topic = image.topic("t").unwrap();
        assert_eq!(topic.partition_shards.len(), 3);
        assert_eq!(topic.configs.overrides(), &overrides);
    }

    #[test]
    fn each_start_up_moves_existing_partitions_up_two_leader_epochs() {
        let mut image = MetadataImage::default();
        let id = Uuid::new_v4();
        image.apply(&MetadataRecord::CreateTopic {
            name: "t".into(),
            topic_id: id,
            partition_shards: vec![0, 1],
            configs: BTreeMap::new(),
        });
        assert_eq!(image.topic("t").unwrap().leader_epochs, vec![0, 0]);
        image.apply(&MetadataRecord::LeadershipResumed);
        image.apply(&MetadataRecord::CreatePartitions {
            name: "t".into(),
            topic_id: id,
            partition_shards: vec![0],
        });
        image.apply(&MetadataRecord::LeadershipResumed);
        image.apply(&MetadataRecord::CreateTopic {
            name: "u".into(),
            topic_id: Uuid::new_v4(),
            partition_shards: vec![0],
            configs: BTreeMap::new(),
        });
        let t = image.topic("t").unwrap();
        assert_eq!(t.leader_epochs, vec![4, 4, 2]);
        assert_eq!(
            (t.leader_epoch(2), t.leader_epoch(3), t.leader_epoch(-1)),
            (2, 0, 0)
        );
        assert_eq!(image.topic("u").unwrap().leader_epochs, vec![0]);
    }

    #[test]
    fn delete_of_an_older_incarnation_keeps_the_new_topic() {
        let mut image = MetadataImage::default();
        let old = Uuid::new_v4();
        let new = Uuid::new_v4();
        for id in [old, new] {
            image.apply(&MetadataRecord::CreateTopic {
                name: "t".into(),
                topic_id: id,
                partition_shards: vec![0],
                configs: BTreeMap::new(),
            });
        }
        image.apply(&MetadataRecord::DeleteTopic {
            name: "t".into(),
            topic_id: old,
        });
        assert_eq!(image.topic("t").unwrap().topic_id, new);
    }

    #[test]
    fn cluster_id_is_22_url_safe_chars() {
        let id = cluster_id_string(Uuid::new_v4());
        assert_eq!(id.len(), 22);
        assert!(id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }
}
