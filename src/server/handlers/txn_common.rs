//! What the transactional APIs share at the edge: the error a coordinator
//! answer becomes for the request's version.

use crate::protocol::ErrorCode;
use crate::txn::TxnReply;

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

/// The error of an AddPartitions reply (AddPartitionsToTxn,
/// AddOffsetsToTxn and the implicit adds of transactions V2).
pub fn unit_reply_error(reply: TxnReply) -> Option<ErrorCode> {
    match reply {
        TxnReply::AddPartitions(Ok(())) => None,
        TxnReply::AddPartitions(Err(e)) | TxnReply::Unavailable(e) => Some(e),
        other => {
            tracing::error!(?other, "transaction coordinator answered the wrong call");
            Some(ErrorCode::UnknownServerError)
        }
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
