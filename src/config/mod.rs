//! Broker and topic configuration as Apache Kafka 4.0 defines it: the broker's
//! own settings (`broker`, one struct validated once at start-up), the
//! topic-level config table with its validation and inheritance from broker
//! settings (`topic_config`), the broker config table DescribeConfigs reports
//! (`broker_config_table`), the broker configs that change at runtime
//! (`dynamic`), per-group overrides of the group coordinator's settings
//! (`group_config`), client-metrics subscriptions (`client_metrics`), and
//! every fixed bound (`limits`).
//!
//! Lives on: shared, read-only. The tables are `static` and every function is
//! pure, so any core may call them.

pub mod broker;
pub mod broker_config_table;
pub mod client_metrics;
pub mod dynamic;
pub mod group_config;
pub mod limits;
pub mod topic_config;

pub use broker::{
    BrokerConfig, CleanerSettings, FlushPolicy, GroupSettings, IoWorkerCpus, Listener, TxnSettings,
};
pub use topic_config::{BrokerDefaults, ConfigAlteration, ConfigOp, TopicConfigs};
