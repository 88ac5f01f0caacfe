//! Cluster metadata: the metadata log, the image built from it, and the
//! controller that turns admin requests into records. The controller runs on
//! shard 0; every shard keeps its own copy of the image, updated by the same
//! records in the same order (a broker-wide view, copied per shard).

pub mod controller;
pub mod features;
pub mod image;
pub mod metadata_log;

pub use image::{MetadataImage, MetadataRecord, TopicImage};
