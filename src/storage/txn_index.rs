//! The aborted-transaction index of a log: Kafka's `TransactionIndex`
//! files, one `<base offset, 20 digits>.txnindex` beside each segment that
//! holds an ABORT marker, listing the transactions those markers aborted.
//! read_committed fetches use it to tell consumers which producer's data to
//! skip, and compaction uses it to drop aborted records.
//!
//! The format is Kafka's (`AbortedTxn`), so Kafka's tools read our files and
//! we read theirs. Each entry is 34 bytes, big-endian:
//!
//! ```text
//! version            i16  (= 0)
//! producer_id        i64
//! first_offset       i64  first offset of the transaction in this partition
//! last_offset        i64  offset of the ABORT marker
//! last_stable_offset i64  the partition's LSO once the marker was written
//! ```
//!
//! An entry goes in the file of the segment holding its marker, in marker
//! order. Like Kafka, appends are not synced one by one: the files are
//! synced before a producer state snapshot is written, and after a crash
//! everything past the snapshot is rebuilt from the log (see
//! `partition/mod.rs`).
//!
//! Plain values and blocking file helpers, run through `spawn_blocking` by
//! the partition that owns the log, on its shard. Nothing here is shared
//! between cores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::batch_rewrite::decode_batch_records;
use crate::protocol::record_batch::{BatchHeader, TxnMarkerRecord};

/// Extension of aborted-transaction index files.
pub const TXN_INDEX_FILE_EXTENSION: &str = "txnindex";

/// Bytes of one encoded entry.
pub const ABORTED_TXN_ENTRY_BYTES: usize = 2 + 8 + 8 + 8 + 8;

/// The only entry version Kafka writes.
const ABORTED_TXN_VERSION: i16 = 0;

/// One aborted transaction of one partition (Kafka's `AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AbortedTxn {
    /// Producer of the transaction.
    pub producer_id: i64,
    /// Its first offset in this partition (the marker's own offset when the
    /// transaction wrote nothing here).
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The partition's last stable offset right after the marker: the first
    /// offset of the oldest other open transaction, else `last_offset + 1`.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// The entry in Kafka's 34-byte layout.
    pub fn encode(&self) -> [u8; ABORTED_TXN_ENTRY_BYTES] {
        let mut out = [0u8; ABORTED_TXN_ENTRY_BYTES];
        out[0..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }
}

/// Why a `.txnindex` file could not be read whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnIndexError {
    /// An entry with a version other than 0.
    #[error("txnindex entry {entry} has unknown version {version}")]
    UnknownVersion {
        /// Entry number.
        entry: usize,
        /// Version found.
        version: i16,
    },
    /// Offsets that cannot describe a transaction.
    #[error(
        "txnindex entry {entry} is invalid: first offset {first_offset}, last offset {last_offset}"
    )]
    InvalidOffsets {
        /// Entry number.
        entry: usize,
        /// First offset.
        first_offset: i64,
        /// Last offset.
        last_offset: i64,
    },
}

/// What was read from one file: the whole entries before the first bad one,
/// and what stopped the read, if anything. A trailing partial entry (an
/// append torn by a crash) is dropped and counted in `torn_bytes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodedTxnIndex {
    /// Entries in file order.
    pub entries: Vec<AbortedTxn>,
    /// Bytes after the last whole entry.
    pub torn_bytes: usize,
    /// The first bad entry, which ends the read.
    pub error: Option<TxnIndexError>,
}

fn be_i64(bytes: &[u8]) -> i64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[..8]);
    i64::from_be_bytes(raw)
}

/// Decodes the entries of a `.txnindex` file.
pub fn decode_txn_index(bytes: &[u8]) -> DecodedTxnIndex {
    let mut decoded = DecodedTxnIndex {
        torn_bytes: bytes.len() % ABORTED_TXN_ENTRY_BYTES,
        ..DecodedTxnIndex::default()
    };
    for (entry, raw) in bytes.chunks_exact(ABORTED_TXN_ENTRY_BYTES).enumerate() {
        let version = i16::from_be_bytes([raw[0], raw[1]]);
        if version != ABORTED_TXN_VERSION {
            decoded.error = Some(TxnIndexError::UnknownVersion { entry, version });
            break;
        }
        let txn = AbortedTxn {
            producer_id: be_i64(&raw[2..]),
            first_offset: be_i64(&raw[10..]),
            last_offset: be_i64(&raw[18..]),
            last_stable_offset: be_i64(&raw[26..]),
        };
        if txn.first_offset < 0 || txn.last_offset < txn.first_offset {
            decoded.error = Some(TxnIndexError::InvalidOffsets {
                entry,
                first_offset: txn.first_offset,
                last_offset: txn.last_offset,
            });
            break;
        }
        decoded.entries.push(txn);
    }
    decoded
}

/// Encodes entries as a whole file.
pub fn encode_txn_index(entries: &[AbortedTxn]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * ABORTED_TXN_ENTRY_BYTES);
    for entry in entries {
        out.extend_from_slice(&entry.encode());
    }
    out
}

/// `<base offset, 20 digits>.txnindex`.
pub fn txn_index_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.{TXN_INDEX_FILE_EXTENSION}")
}

/// The base offset of a `.txnindex` file name, or None for other names.
pub fn parse_txn_index_file_name(name: &str) -> Option<i64> {
    let stem = name
        .strip_suffix(TXN_INDEX_FILE_EXTENSION)?
        .strip_suffix('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Kafka's `TransactionIndex.collectAbortedTxns`: the aborted transactions
/// that overlap `[fetch_offset, upper_bound_offset)`, as (producer id, first
/// offset), in marker order.
pub fn collect_aborted<'a>(
    entries: impl IntoIterator<Item = &'a AbortedTxn>,
    fetch_offset: i64,
    upper_bound_offset: i64,
) -> Vec<(i64, i64)> {
    entries
        .into_iter()
        .filter(|txn| txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset)
        .map(|txn| (txn.producer_id, txn.first_offset))
        .collect()
}

/// The transaction marker a control batch holds, or None when the batch is
/// not a (decodable, non-empty) version-0 COMMIT or ABORT marker. A control
/// batch the cleaner emptied has no record and gives None.
pub fn decode_txn_marker(batch: &Bytes, header: &BatchHeader) -> Option<TxnMarkerRecord> {
    if !header.is_control() || header.record_count <= 0 || batch.len() != header.total_bytes() {
        return None;
    }
    let records = decode_batch_records(batch, header).ok()?;
    let record = records.first()?;
    TxnMarkerRecord::decode(record.key.as_deref()?, record.value.as_deref()?)
}

/// The base offset of the segment among `segment_bases` (ascending) holding
/// `offset`: the greatest base at or below it.
pub fn segment_base_holding(segment_bases: &[i64], offset: i64) -> Option<i64> {
    let after = segment_bases.partition_point(|&base| base <= offset);
    after.checked_sub(1).map(|i| segment_bases[i])
}

/// Groups entries by the segment holding each marker. Entries below the
/// first segment are dropped (their segment is gone).
pub fn group_by_segment(
    entries: &[AbortedTxn],
    segment_bases: &[i64],
) -> BTreeMap<i64, Vec<AbortedTxn>> {
    let mut grouped: BTreeMap<i64, Vec<AbortedTxn>> = BTreeMap::new();
    for entry in entries {
        if let Some(base) = segment_base_holding(segment_bases, entry.last_offset) {
            grouped.entry(base).or_default().push(*entry);
        }
    }
    grouped
}

/// Every `.txnindex` file of `dir` by base offset, decoded (blocking). A
/// file that cannot be read or decoded whole is logged; its readable
/// prefix is returned.
pub fn read_txn_index_files(dir: &Path) -> BTreeMap<i64, Vec<AbortedTxn>> {
    let mut files = BTreeMap::new();
    let Ok(listing) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(base) = name.to_str().and_then(parse_txn_index_file_name) else {
            continue;
        };
        files.insert(base, read_txn_index_file(&entry.path()));
    }
    files
}

/// The entries of one file (blocking); a missing file has none.
pub fn read_txn_index_file(path: &Path) -> Vec<AbortedTxn> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot read a txnindex file");
            return Vec::new();
        }
    };
    let decoded = decode_txn_index(&bytes);
    if decoded.torn_bytes > 0 || decoded.error.is_some() {
        tracing::warn!(
            path = %path.display(),
            torn_bytes = decoded.torn_bytes,
            error = ?decoded.error,
            "txnindex file damaged; using its whole entries"
        );
    }
    decoded.entries
}

/// Path of the `.txnindex` file of the segment at `base_offset`.
pub fn txn_index_path(dir: &Path, base_offset: i64) -> PathBuf {
    dir.join(txn_index_file_name(base_offset))
}

/// Appends one entry to its segment's file (blocking, not synced).
///
/// # Errors
/// I/O errors.
pub fn append_txn_index_entry(
    dir: &Path,
    segment_base_offset: i64,
    entry: &AbortedTxn,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(txn_index_path(dir, segment_base_offset))?;
    file.write_all(&entry.encode())
}

/// Makes the `.txnindex` files of `dir` exactly `wanted` (blocking): files
/// whose content differs are replaced atomically (temporary file, sync,
/// rename), files not in `wanted` are deleted, and the directory is synced
/// when anything changed. Returns how many files changed.
///
/// # Errors
/// I/O errors; files already replaced stay replaced.
pub fn rewrite_txn_index_files(
    dir: &Path,
    current: &BTreeMap<i64, Vec<AbortedTxn>>,
    wanted: &BTreeMap<i64, Vec<AbortedTxn>>,
) -> std::io::Result<usize> {
    let mut changed = 0;
    for (base, entries) in wanted {
        if current.get(base) == Some(entries) {
            continue;
        }
        let path = txn_index_path(dir, *base);
        let temporary = path.with_extension("txnindex.tmp");
        std::fs::write(&temporary, encode_txn_index(entries))?;
        std::fs::File::open(&temporary)?.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        changed += 1;
    }
    for base in current.keys() {
        if !wanted.contains_key(base) {
            match std::fs::remove_file(txn_index_path(dir, *base)) {
                Ok(()) => changed += 1,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
    }
    if changed > 0 {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(changed)
}

/// Syncs every `.txnindex` file of `dir` (blocking). A file removed
/// meanwhile (a regrouping, a retention deletion) is skipped.
///
/// # Errors
/// I/O errors.
pub fn sync_txn_index_files(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        if name.to_str().and_then(parse_txn_index_file_name).is_some() {
            match std::fs::File::open(entry.path()) {
                Ok(file) => file.sync_all()?,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset,
            last_offset,
            last_stable_offset: last_offset + 1,
        }
    }

    /// Goal: an entry is Kafka's 34-byte `AbortedTxn` layout. Method: write
    /// the bytes by hand from the schema and compare both ways.
    #[test]
    fn txnindex_entry_bytes_match_kafkas_format() {
        let entry = AbortedTxn {
            producer_id: 0x0102_0304_0506_0708,
            first_offset: 5,
            last_offset: 9,
            last_stable_offset: 7,
        };
        let mut expected = vec![0x00, 0x00];
        expected.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 5]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(entry.encode().to_vec(), expected);
        let decoded = decode_txn_index(&expected);
        assert_eq!(decoded.entries, vec![entry]);
        assert_eq!(decoded.torn_bytes, 0);
        assert_eq!(decoded.error, None);
    }

    /// Goal: a torn tail or a bad entry keeps the whole entries before it
    /// and never panics. Method: every truncation of two entries, a bad
    /// version, bad offsets.
    #[test]
    fn damaged_txnindex_keeps_its_whole_entries() {
        let entries = [txn(1, 0, 4), txn(2, 3, 8)];
        let bytes = encode_txn_index(&entries);
        assert_eq!(bytes.len(), 2 * ABORTED_TXN_ENTRY_BYTES);
        for length in 0..=bytes.len() {
            let decoded = decode_txn_index(&bytes[..length]);
            assert_eq!(
                decoded.entries,
                entries[..length / ABORTED_TXN_ENTRY_BYTES].to_vec()
            );
            assert_eq!(decoded.torn_bytes, length % ABORTED_TXN_ENTRY_BYTES);
        }
        let mut version = bytes.clone();
        version[ABORTED_TXN_ENTRY_BYTES + 1] = 1;
        let decoded = decode_txn_index(&version);
        assert_eq!(decoded.entries, vec![entries[0]]);
        assert!(matches!(
            decoded.error,
            Some(TxnIndexError::UnknownVersion {
                entry: 1,
                version: 1
            })
        ));
        let inverted = encode_txn_index(&[txn(1, 9, 4)]);
        assert!(matches!(
            decode_txn_index(&inverted).error,
            Some(TxnIndexError::InvalidOffsets { .. })
        ));
    }

    /// Goal: collection follows Kafka's overlap rule (marker at or after the
    /// fetch offset, first offset before the upper bound). Method: entries
    /// around a window.
    #[test]
    fn collect_aborted_returns_transactions_overlapping_the_range() {
        let entries = [txn(1, 0, 4), txn(2, 5, 9), txn(3, 10, 12), txn(4, 20, 30)];
        assert_eq!(collect_aborted(&entries, 5, 11), vec![(2, 5), (3, 10)]);
        assert_eq!(collect_aborted(&entries, 4, 5), vec![(1, 0)]);
        assert_eq!(collect_aborted(&entries, 13, 20), Vec::<(i64, i64)>::new());
        assert_eq!(collect_aborted(&entries, 0, i64::MAX).len(), 4);
    }

    /// Goal: names are `<20 digits>.txnindex` and entries group by the
    /// segment holding their marker. Method: names, near misses, grouping.
    #[test]
    fn file_names_and_grouping_by_segment() {
        assert_eq!(txn_index_file_name(42), "00000000000000000042.txnindex");
        assert_eq!(
            parse_txn_index_file_name("00000000000000000042.txnindex"),
            Some(42)
        );
        for name in [
            "42.txnindex",
            "00000000000000000042.index",
            "0000000000000000004x.txnindex",
        ] {
            assert_eq!(parse_txn_index_file_name(name), None, "{name}");
        }
        let bases = [0, 10, 20];
        assert_eq!(segment_base_holding(&bases, 9), Some(0));
        assert_eq!(segment_base_holding(&bases, 10), Some(10));
        assert_eq!(segment_base_holding(&bases, 99), Some(20));
        assert_eq!(segment_base_holding(&[5], 4), None);
        let grouped = group_by_segment(&[txn(1, 0, 4), txn(2, 3, 12), txn(3, 13, 15)], &bases);
        assert_eq!(grouped.len(), 2);
        assert_eq!(grouped[&10].len(), 2);
    }

    /// Goal: rewriting makes the directory hold exactly the wanted files
    /// and appends go to the named segment's file. Method: append, read,
    /// rewrite with a merge and a removal.
    #[test]
    fn rewrite_and_append_manage_the_files() {
        let dir = tempfile::tempdir().unwrap();
        append_txn_index_entry(dir.path(), 0, &txn(1, 0, 4)).unwrap();
        append_txn_index_entry(dir.path(), 10, &txn(2, 8, 12)).unwrap();
        let current = read_txn_index_files(dir.path());
        assert_eq!(current.len(), 2);
        let mut wanted = BTreeMap::new();
        wanted.insert(0, vec![txn(1, 0, 4), txn(2, 8, 12)]);
        assert_eq!(
            rewrite_txn_index_files(dir.path(), &current, &wanted).unwrap(),
            2
        );
        assert_eq!(read_txn_index_files(dir.path()), wanted);
        assert_eq!(
            rewrite_txn_index_files(dir.path(), &wanted, &wanted).unwrap(),
            0
        );
        sync_txn_index_files(dir.path()).unwrap();
    }
}
