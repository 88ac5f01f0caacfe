//! The small text files of a partition directory, in Kafka's formats, and
//! the blocking file-system helpers that run them (and other directory
//! operations) off the executor thread.
//!
//! - `leader-epoch-checkpoint`: `version\ncount\n` then one `epoch startOffset`
//!   line per entry (Kafka's `LeaderEpochCheckpointFile`, version 0).
//! - `partition.metadata`: `version: 0\ntopic_id: <id>\n`, the topic id in
//!   Kafka's form (URL-safe base64 of the 16 bytes, no padding).
//! - `cleaner-offset-checkpoint`: how far compaction has cleaned the log.
//!   Kafka keeps one such file per log directory with a `topic partition
//!   offset` line per compacted partition (`OffsetCheckpointFile`, version
//!   0); ringbroker keeps one per partition directory, in the same format
//!   with the single line of its own partition.
//!
//! Writes go to a `.tmp` file, are fsynced, renamed over the target and the
//! directory is fsynced, as Kafka's `CheckpointFile` does.
//!
//! Pure helpers: the async ones hop to glommio's blocking thread pool.

use std::{
    fs, io,
    io::Write,
    path::{Path, PathBuf},
};

use uuid::Uuid;

use super::error::StorageError;

/// File name of the leader epoch checkpoint.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
/// File name of the partition metadata.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

/// File name of the per-partition cleaner checkpoint.
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

/// File name of the per-partition log start checkpoint: the log start
/// DeleteRecords moved into a segment (Kafka keeps one such file per log
/// directory; here each partition has its own, as for the cleaner's).
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";

/// Text of a one-partition checkpoint in Kafka's `OffsetCheckpointFile`
/// layout (`cleaner-offset-checkpoint`, `log-start-offset-checkpoint`)
/// holding `offset` for the partition whose directory is named `dir_name`
/// (`<topic>-<partition>`; a name without a numeric suffix is written
/// whole, with partition 0).
pub fn encode_offset_checkpoint(dir_name: &str, offset: i64) -> String {
    let (topic, partition) = match dir_name.rsplit_once('-') {
        Some((topic, partition))
            if !topic.is_empty() && partition.parse::<i32>().is_ok_and(|p| p >= 0) =>
        {
            (topic, partition)
        }
        _ => (dir_name, "0"),
    };
    format!("0\n1\n{topic} {partition} {offset}\n")
}

/// The offset in a one-partition checkpoint (see
/// [`encode_offset_checkpoint`]), or `None` when it holds no entry.
///
/// # Errors
/// A sentence saying what does not parse.
pub fn decode_offset_checkpoint(text: &str) -> Result<Option<i64>, String> {
    let mut lines = text.lines();
    let version = lines.next().ok_or("missing version line")?;
    if version.trim() != "0" {
        return Err(format!("unsupported version {version:?}"));
    }
    let count: usize = lines
        .next()
        .ok_or("missing count line")?
        .trim()
        .parse()
        .map_err(|_| "count is not a number".to_string())?;
    if count > 1 {
        return Err(format!("{count} entries in a per-partition checkpoint"));
    }
    let mut offset = None;
    for line in lines.by_ref().take(count) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_topic, partition, value]
                if partition.parse::<i32>().is_ok()
                    && value.parse::<i64>().is_ok_and(|v| v >= 0) =>
            {
                offset = value.parse::<i64>().ok();
            }
            _ => return Err(format!("malformed entry line {line:?}")),
        }
    }
    if count == 1 && offset.is_none() {
        return Err("missing entry line".to_string());
    }
    if lines.any(|line| !line.trim().is_empty()) {
        return Err("trailing lines after the entries".to_string());
    }
    Ok(offset)
}

/// One leader epoch and the first offset written in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: i32,
    /// First offset appended with that epoch.
    pub start_offset: i64,
}

/// Kafka's `LeaderEpochFileCache.truncateFromStart`: entries starting at or
/// before `start_offset` go, except that the last of them stays with its
/// start moved to `start_offset`. Returns whether anything changed.
pub fn truncate_epochs_from_start(entries: &mut Vec<EpochEntry>, start_offset: i64) -> bool {
    let before = entries.partition_point(|entry| entry.start_offset <= start_offset);
    if before == 0 || (before == 1 && entries[0].start_offset == start_offset) {
        return false;
    }
    let mut kept = entries[before - 1];
    kept.start_offset = start_offset;
    entries.splice(..before, std::iter::once(kept));
    true
}

/// Kafka's `LeaderEpochFileCache.endOffsetFor`, as OffsetForLeaderEpoch
/// answers: the (epoch, end offset) of `requested` in `entries` (ascending
/// epochs, each with its first offset). The latest epoch ends at the log
/// end; an earlier one where the next higher epoch starts, reported with the
/// highest known epoch at or below it (the requested one when none is
/// lower). -1 and an epoch above every known one are (-1, -1): undefined.
pub fn end_offset_for_epoch(
    entries: &[EpochEntry],
    requested: i32,
    log_end_offset: i64,
) -> (i32, i64) {
    const UNDEFINED: (i32, i64) = (-1, -1);
    if requested == -1 {
        return UNDEFINED;
    }
    if entries
        .last()
        .is_some_and(|latest| latest.epoch == requested)
    {
        return (requested, log_end_offset);
    }
    let higher = entries.partition_point(|entry| entry.epoch <= requested);
    let Some(next) = entries.get(higher) else {
        return UNDEFINED;
    };
    match higher.checked_sub(1).map(|floor| entries[floor]) {
        Some(floor) => (floor.epoch, next.start_offset),
        None => (requested, next.start_offset),
    }
}

/// Text of a `leader-epoch-checkpoint` file.
pub fn encode_leader_epoch_checkpoint(entries: &[EpochEntry]) -> String {
    let mut text = format!("0\n{}\n", entries.len());
    for entry in entries {
        text.push_str(&format!("{} {}\n", entry.epoch, entry.start_offset));
    }
    text
}

/// Parses a `leader-epoch-checkpoint` file.
///
/// # Errors
/// A sentence saying what does not parse.
pub fn decode_leader_epoch_checkpoint(text: &str) -> Result<Vec<EpochEntry>, String> {
    let mut lines = text.lines();
    let version = lines.next().ok_or("missing version line")?;
    if version.trim() != "0" {
        return Err(format!("unsupported version {version:?}"));
    }
    let count: usize = lines
        .next()
        .ok_or("missing count line")?
        .trim()
        .parse()
        .map_err(|_| "count is not a number".to_string())?;
    let mut entries = Vec::new();
    for line in lines.by_ref().take(count) {
        let mut fields = line.split_whitespace();
        let epoch = fields.next().and_then(|field| field.parse::<i32>().ok());
        let start_offset = fields.next().and_then(|field| field.parse::<i64>().ok());
        match (epoch, start_offset, fields.next()) {
            (Some(epoch), Some(start_offset), None) => entries.push(EpochEntry {
                epoch,
                start_offset,
            }),
            _ => return Err(format!("malformed entry line {line:?}")),
        }
    }
    if entries.len() != count {
        return Err(format!("expected {count} entries, found {}", entries.len()));
    }
    if lines.any(|line| !line.trim().is_empty()) {
        return Err("trailing lines after the entries".to_string());
    }
    Ok(entries)
}

const BASE64_URL_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Kafka's textual topic id: URL-safe base64 without padding (22 characters).
pub fn topic_id_to_kafka_string(topic_id: Uuid) -> String {
    let bytes = topic_id.as_bytes();
    let mut text = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let mut group = [0u8; 3];
        group[..chunk.len()].copy_from_slice(chunk);
        let bits = (u32::from(group[0]) << 16) | (u32::from(group[1]) << 8) | u32::from(group[2]);
        let characters = chunk.len() + 1;
        for index in 0..characters {
            let sextet = (bits >> (18 - 6 * index)) & 0x3f;
            text.push(BASE64_URL_ALPHABET[sextet as usize] as char);
        }
    }
    text
}

/// Parses Kafka's textual topic id.
///
/// # Errors
/// When the text is not 22 base64url characters.
pub fn topic_id_from_kafka_string(text: &str) -> Result<Uuid, String> {
    if text.len() != 22 {
        return Err(format!("topic id {text:?} is not 22 characters"));
    }
    let mut bytes = Vec::with_capacity(18);
    let mut bits: u32 = 0;
    let mut bit_count = 0;
    for character in text.bytes() {
        let value = BASE64_URL_ALPHABET
            .iter()
            .position(|&known| known == character)
            .ok_or_else(|| format!("topic id {text:?} is not base64url"))?;
        bits = (bits << 6) | value as u32;
        bit_count += 6;
        if bit_count >= 8 {
            bit_count -= 8;
            bytes.push((bits >> bit_count) as u8);
            bits &= (1 << bit_count) - 1;
        }
    }
    let array: [u8; 16] = bytes[..16]
        .try_into()
        .map_err(|_| format!("topic id {text:?} does not hold 16 bytes"))?;
    Ok(Uuid::from_bytes(array))
}

/// Text of a `partition.metadata` file.
pub fn encode_partition_metadata(topic_id: Uuid) -> String {
    format!(
        "version: 0\ntopic_id: {}\n",
        topic_id_to_kafka_string(topic_id)
    )
}

/// Parses a `partition.metadata` file into its topic id.
///
/// # Errors
/// A sentence saying what does not parse.
pub fn decode_partition_metadata(text: &str) -> Result<Uuid, String> {
    let mut version = None;
    let mut topic_id = None;
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| format!("line {line:?} is not `key: value`"))?;
        match key.trim() {
            "version" => version = Some(value.trim().to_string()),
            "topic_id" => topic_id = Some(topic_id_from_kafka_string(value.trim())?),
            other => return Err(format!("unknown key {other:?}")),
        }
    }
    if version.as_deref() != Some("0") {
        return Err(format!("unsupported version {version:?}"));
    }
    topic_id.ok_or_else(|| "missing topic_id".to_string())
}

/// Runs blocking file-system work on glommio's blocking thread pool.
pub async fn run_blocking<F, R>(work: F) -> R
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    glommio::executor().spawn_blocking(work).await
}

fn sync_directory_blocking(dir: &Path) -> Result<(), StorageError> {
    fs::File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| StorageError::io("fsync of directory", dir, error))
}

/// fsyncs a directory, making file creations, renames and removals in it durable.
///
/// # Errors
/// The open or fsync failure.
pub async fn sync_directory(dir: &Path) -> Result<(), StorageError> {
    let dir = dir.to_path_buf();
    run_blocking(move || sync_directory_blocking(&dir)).await
}

/// Replaces `dir/name` atomically and durably with `contents`.
///
/// # Errors
/// Any failed write, fsync or rename.
pub async fn write_file_atomically(
    dir: &Path,
    name: &str,
    contents: Vec<u8>,
) -> Result<(), StorageError> {
    let dir = dir.to_path_buf();
    let name = name.to_string();
    run_blocking(move || {
        let path = dir.join(&name);
        let temporary = dir.join(format!("{name}.tmp"));
        let mut handle = fs::File::create(&temporary)
            .map_err(|error| StorageError::io("creating", &temporary, error))?;
        handle
            .write_all(&contents)
            .and_then(|()| handle.sync_all())
            .map_err(|error| StorageError::io("writing", &temporary, error))?;
        fs::rename(&temporary, &path)
            .map_err(|error| StorageError::io("renaming", &temporary, error))?;
        sync_directory_blocking(&dir)
    })
    .await
}

/// Replaces the one-partition checkpoint `name` in the partition directory
/// `dir` with `offset` (see [`encode_offset_checkpoint`]), atomically and
/// durably.
///
/// # Errors
/// As [`write_file_atomically`].
pub async fn write_offset_checkpoint(
    dir: &Path,
    name: &str,
    offset: i64,
) -> Result<(), StorageError> {
    let dir_name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    write_file_atomically(
        dir,
        name,
        encode_offset_checkpoint(&dir_name, offset).into_bytes(),
    )
    .await
}

/// Writes `path` in place with `contents` and fdatasyncs it (index files,
/// which are checked on load, so a torn write is detected there).
///
/// # Errors
/// Any failed write or fdatasync.
pub async fn write_file_synced(path: PathBuf, contents: Vec<u8>) -> Result<(), StorageError> {
    run_blocking(move || {
        let mut handle =
            fs::File::create(&path).map_err(|error| StorageError::io("creating", &path, error))?;
        handle
            .write_all(&contents)
            .and_then(|()| handle.sync_data())
            .map_err(|error| StorageError::io("writing", &path, error))
    })
    .await
}

/// The contents of `path`, or `None` when it does not exist.
///
/// # Errors
/// Read failures other than "not found".
pub async fn read_file_if_exists(path: PathBuf) -> Result<Option<Vec<u8>>, StorageError> {
    run_blocking(move || match fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(StorageError::io("reading", &path, error)),
    })
    .await
}

/// Removes `path`; a missing file is not an error.
///
/// # Errors
/// Removal failures other than "not found".
pub async fn remove_file_if_exists(path: PathBuf) -> Result<(), StorageError> {
    run_blocking(move || match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(StorageError::io("removing", &path, error)),
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where an epoch ends, as Kafka's `LeaderEpochFileCache.endOffsetFor`
    /// answers.
    #[test]
    fn end_offset_for_epoch_follows_kafkas_epoch_cache() {
        let entries = [
            EpochEntry {
                epoch: 2,
                start_offset: 10,
            },
            EpochEntry {
                epoch: 5,
                start_offset: 40,
            },
        ];
        // The latest epoch ends at the log end.
        assert_eq!(end_offset_for_epoch(&entries, 5, 70), (5, 70));
        // An earlier epoch ends where the next starts.
        assert_eq!(end_offset_for_epoch(&entries, 2, 70), (2, 40));
        // An unknown epoch between two known ones: the lower one's answer.
        assert_eq!(end_offset_for_epoch(&entries, 3, 70), (2, 40));
        // Below every known epoch: the requested epoch, ending where the
        // first known one starts.
        assert_eq!(end_offset_for_epoch(&entries, 1, 70), (1, 10));
        assert_eq!(end_offset_for_epoch(&entries, -5, 70), (-5, 10));
        // Above every known epoch, and -1: undefined.
        assert_eq!(end_offset_for_epoch(&entries, 6, 70), (-1, -1));
        assert_eq!(end_offset_for_epoch(&entries, -1, 70), (-1, -1));
        assert_eq!(end_offset_for_epoch(&[], 0, 70), (-1, -1));
    }

    /// The checkpoint text matches Kafka's layout and parses back; damaged
    /// text is refused rather than half-read.
    #[test]
    fn leader_epoch_checkpoint_round_trips() {
        let entries = vec![
            EpochEntry {
                epoch: 0,
                start_offset: 0,
            },
            EpochEntry {
                epoch: 3,
                start_offset: 120,
            },
        ];
        let text = encode_leader_epoch_checkpoint(&entries);
        assert_eq!(text, "0\n2\n0 0\n3 120\n");
        assert_eq!(decode_leader_epoch_checkpoint(&text).unwrap(), entries);
        assert_eq!(decode_leader_epoch_checkpoint("0\n0\n").unwrap(), vec![]);
        assert!(decode_leader_epoch_checkpoint("0\n2\n0 0\n").is_err());
        assert!(decode_leader_epoch_checkpoint("1\n0\n").is_err());
    }

    /// The cleaner checkpoint uses Kafka's `OffsetCheckpointFile` layout with
    /// one entry and parses back; damage is refused.
    #[test]
    fn cleaner_checkpoint_round_trips() {
        let text = encode_offset_checkpoint("__consumer_offsets-17", 4242);
        assert_eq!(text, "0\n1\n__consumer_offsets 17 4242\n");
        assert_eq!(decode_offset_checkpoint(&text).unwrap(), Some(4242));
        assert_eq!(encode_offset_checkpoint("odd", 5), "0\n1\nodd 0 5\n");
        assert_eq!(decode_offset_checkpoint("0\n0\n").unwrap(), None);
        assert!(decode_offset_checkpoint("0\n1\n").is_err());
        assert!(decode_offset_checkpoint("0\n1\nt 0 x\n").is_err());
        assert!(decode_offset_checkpoint("1\n1\nt 0 5\n").is_err());
    }

    /// Topic ids use Kafka's base64url-without-padding form (checked against
    /// a value printed by Kafka's `Uuid.toString()`).
    #[test]
    fn topic_id_uses_kafka_base64() {
        // Kafka: new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L).toString()
        let topic_id = Uuid::from_u128(0x0123456789abcdef_fedcba9876543210);
        let text = topic_id_to_kafka_string(topic_id);
        assert_eq!(text, "ASNFZ4mrze_-3LqYdlQyEA");
        assert_eq!(topic_id_from_kafka_string(&text).unwrap(), topic_id);
        let metadata = encode_partition_metadata(topic_id);
        assert_eq!(metadata, "version: 0\ntopic_id: ASNFZ4mrze_-3LqYdlQyEA\n");
        assert_eq!(decode_partition_metadata(&metadata).unwrap(), topic_id);
        assert!(decode_partition_metadata("version: 0\n").is_err());
    }

    /// A blocking function's result is dropped, not leaked, when the future
    /// awaiting it goes first: a cancelled fetch's header walk holds the
    /// segment's descriptor, which would otherwise stay open for good.
    #[test]
    fn a_blocking_result_is_dropped_when_its_awaiting_future_is_dropped() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        let executor = glommio::LocalExecutorBuilder::default().make().unwrap();
        let (drops_in, ran_in) = (drops.clone(), ran.clone());
        executor.run(async move {
            // Awaited to the end: the value comes back, nothing is dropped.
            let counted = run_blocking({
                let drops = drops_in.clone();
                move || Counted(drops)
            })
            .await;
            assert_eq!(drops_in.load(Ordering::SeqCst), 0);
            drop(counted);
            assert_eq!(drops_in.load(Ordering::SeqCst), 1);
            // Given up before the function returns: it waits for `go`,
            // sent only once the future that awaited it is gone.
            let (go, wait_for_go) = std::sync::mpsc::channel::<()>();
            let mut slow = Box::pin(run_blocking({
                let (drops, ran) = (drops_in.clone(), ran_in.clone());
                move || {
                    let _ = wait_for_go.recv();
                    ran.fetch_add(1, Ordering::SeqCst);
                    Counted(drops)
                }
            }));
            // One poll hands the function to a blocking thread.
            assert!(futures::FutureExt::now_or_never(&mut slow).is_none());
            drop(slow);
            go.send(()).unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while ran_in.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
                glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
            }
            assert_eq!(ran_in.load(Ordering::SeqCst), 1, "the function ran");
        });
        // The blocking thread drops its reference right after storing the
        // value; give it a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while drops.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            drops.load(Ordering::SeqCst),
            2,
            "the abandoned result was dropped"
        );
    }
}
