//! What the transactional APIs share at the edge: the error a coordinator
//! answer becomes for the request's version.

use crate::protocol::ErrorCode;

/// The code to send for `error` in a response of `version`, where
/// `fenced_since` is the first version that knows PRODUCER_FENCED (KIP-588);
/// older clients get INVALID_PRODUCER_EPOCH, as Kafka answers them.
pub fn txn_error_code(error: ErrorCode, version: i16, fenced_since: i16) -> i16 {
    if error == ErrorCode::ProducerFenced && version < fenced_since {
        ErrorCode::InvalidProducerEpoch.code()
    } else {
        error.code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_versions_get_invalid_producer_epoch_for_fencing() {
        assert_eq!(txn_error_code(ErrorCode::ProducerFenced, 1, 2), 47);
        assert_eq!(txn_error_code(ErrorCode::ProducerFenced, 2, 2), 90);
        assert_eq!(txn_error_code(ErrorCode::ConcurrentTransactions, 0, 2), 51);
    }
}
