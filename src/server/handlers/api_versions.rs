//! ApiVersions (key 18): the versions this broker serves, with KIP-511
//! behaviour for versions it does not know, and from v3 the feature levels
//! (`cluster::features`). The response header is always v0.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};

use crate::cluster::features;
use crate::cluster::image::MetadataImage;
use crate::protocol::ErrorCode;
use crate::server::connection::Response;
use crate::server::handlers::encode_response;
use crate::server::versions::API_RANGES;

fn advertised() -> Vec<ApiVersion> {
    API_RANGES
        .iter()
        .map(|r| {
            let mut v = ApiVersion::default();
            v.api_key = r.key as i16;
            v.min_version = r.advertised_min;
            v.max_version = r.max;
            v
        })
        .collect()
}

/// Answers a served ApiVersions request with the feature levels of
/// `image`, whose metadata offset is their epoch: the Java client takes its
/// finalized features from the node that reports the highest epoch, and
/// none from -1.
pub fn handle(
    _request: ApiVersionsRequest,
    version: i16,
    correlation_id: i32,
    image: &MetadataImage,
) -> Response {
    let mut response = ApiVersionsResponse::default();
    response.error_code = 0;
    response.api_keys = advertised();
    response.supported_features = features::supported(version);
    response.finalized_features = features::finalized(&image.features);
    response.finalized_features_epoch = image.applied_records as i64;
    encode_response(ApiKey::ApiVersions, version, correlation_id, &response)
}

/// The v0 answer to an ApiVersions version we do not serve (KIP-511).
pub fn unsupported_version_response(correlation_id: i32) -> Response {
    let mut response = ApiVersionsResponse::default();
    response.error_code = ErrorCode::UnsupportedVersion.code();
    response.api_keys = advertised();
    encode_response(ApiKey::ApiVersions, 0, correlation_id, &response)
}
