//! The partition directories of a data directory as Kafka's `LogManager`
//! keeps them:
//! - A deleted partition's directory is renamed `<topic>-<partition>.<uuid>-delete`
//!   and removed `log.segment.delete.delay.ms` later (`LogManager.deleteLogs`);
//!   one a restart finds is removed that long after the start.
//! - A stray one is renamed `<topic>-<partition>.<uuid>-stray` and kept for
//!   the operator, never served or removed (`LogManager.findStrayReplicas`
//!   and `asyncDelete` with `isStray`): at start-up, one whose topic or
//!   partition the metadata does not have; whenever a partition opens, one
//!   whose `partition.metadata` names another topic id or none. An empty
//!   one (a crash while it was being created) is removed instead.
//!
//! Renamed names are at most 255 bytes: the topic part is cut to fit, as
//! Kafka's `UnifiedLog.logDirNameWithSuffixCappedLength` cuts it.

use std::path::{Path, PathBuf};

use tracing::{info, warn};
use uuid::Uuid;

use super::checkpoint::run_blocking;
use super::error::StorageError;

/// Kafka's `UnifiedLog.DeleteDirSuffix`.
const DELETE_DIR_SUFFIX: &str = "-delete";
/// Kafka's `UnifiedLog.StrayDirSuffix`.
const STRAY_DIR_SUFFIX: &str = "-stray";

/// Longest file name (Linux's `NAME_MAX`, Kafka's cap).
const FILE_NAME_MAX: usize = 255;

/// `(topic, partition)` of a directory named as a partition's:
/// `<topic>-<partition>`, the topic a legal Kafka topic name.
fn parse_partition_dir_name(name: &str) -> Option<(&str, i32)> {
    let (topic, partition) = name.rsplit_once('-')?;
    let digits = !partition.is_empty() && partition.bytes().all(|byte| byte.is_ascii_digit());
    if !digits || crate::cluster::controller::validate_topic_name(topic).is_err() {
        return None;
    }
    Some((topic, partition.parse().ok()?))
}

/// Whether `name` is a deleted log's directory:
/// `<topic, maybe cut>-<partition>.<32 hex digits>-delete`.
fn is_deleted_log_dir_name(name: &str) -> bool {
    name.strip_suffix(DELETE_DIR_SUFFIX)
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(partition_dir, id)| {
            id.len() == 32
                && id.bytes().all(|byte| byte.is_ascii_hexdigit())
                && parse_partition_dir_name(partition_dir).is_some()
        })
}

/// `<topic>-<partition>.<uuid><suffix>` beside the partition directory
/// `dir`, the topic cut to keep the name within 255 bytes, as Kafka's
/// `UnifiedLog.logDirNameWithSuffixCappedLength` names it.
fn renamed_log_dir(dir: &Path, suffix: &str) -> Option<PathBuf> {
    let name = dir.file_name()?.to_str()?;
    let (topic, partition) = parse_partition_dir_name(name)?;
    let tail = format!("-{partition}.{}{suffix}", Uuid::new_v4().simple());
    // Topic names are ASCII, so any byte count is a character boundary.
    let kept = topic.len().min(FILE_NAME_MAX.saturating_sub(tail.len()));
    Some(dir.with_file_name(format!("{}{tail}", &topic[..kept])))
}

/// Renames `dir` to its `suffix` name and syncs the parent directory.
///
/// # Errors
/// The rename or the sync failed, or `dir` is not named as a partition's.
fn rename_log_dir_blocking(dir: &Path, suffix: &str) -> Result<PathBuf, StorageError> {
    let renamed = renamed_log_dir(dir, suffix).ok_or_else(|| {
        StorageError::io(
            "renaming",
            dir,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a partition directory name",
            ),
        )
    })?;
    std::fs::rename(dir, &renamed).map_err(|error| StorageError::io("renaming", dir, error))?;
    if let Some(parent) = renamed
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        let synced = std::fs::File::open(parent).and_then(|parent| parent.sync_all());
        synced.map_err(|error| StorageError::io("syncing", parent, error))?;
    }
    Ok(renamed)
}

/// Renames a deleted log's directory `<dir>.<uuid>-delete` (synced), to
/// be removed later by [`remove_deleted_log_dir`].
///
/// # Errors
/// The rename or the sync failed.
pub async fn rename_deleted_log_dir(dir: PathBuf) -> Result<PathBuf, StorageError> {
    run_blocking(move || rename_log_dir_blocking(&dir, DELETE_DIR_SUFFIX)).await
}

/// Sets a stray partition directory aside: renamed `<dir>.<uuid>-stray`
/// and kept.
///
/// # Errors
/// The rename or the sync failed.
pub async fn set_stray_log_dir_aside(dir: PathBuf, reason: String) -> Result<(), StorageError> {
    run_blocking(move || set_stray_log_dir_aside_blocking(&dir, &reason)).await
}

/// [`set_stray_log_dir_aside`], blocking; an empty directory is removed.
fn set_stray_log_dir_aside_blocking(dir: &Path, reason: &str) -> Result<(), StorageError> {
    let empty = std::fs::read_dir(dir)
        .map_err(|error| StorageError::io("listing", dir, error))?
        .next()
        .is_none();
    if empty {
        std::fs::remove_dir(dir).map_err(|error| StorageError::io("removing", dir, error))?;
        warn!(dir = %dir.display(), %reason, "empty stray partition directory removed");
        return Ok(());
    }
    let renamed = rename_log_dir_blocking(dir, STRAY_DIR_SUFFIX)?;
    warn!(dir = %dir.display(), renamed = %renamed.display(), %reason, "stray partition directory set aside: not served and not removed");
    Ok(())
}

/// Removes a directory renamed by [`rename_deleted_log_dir`] and all it
/// holds; one already gone is fine.
///
/// # Errors
/// The removal failed.
pub async fn remove_deleted_log_dir(dir: PathBuf) -> Result<(), StorageError> {
    run_blocking(move || {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => info!(dir = %dir.display(), "deleted log removed"),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StorageError::io("removing", &dir, error)),
        }
        Ok(())
    })
    .await
}

/// At start-up, before any partition opens (blocking): sets aside, as
/// stray, the partition directories of `data_dir` that `known(topic,
/// partition)` does not claim, and returns the deleted logs' directories
/// still there (to be removed after the delay). Other entries are left
/// alone.
///
/// # Errors
/// `data_dir` cannot be listed.
pub fn settle_log_dirs_blocking(
    data_dir: &Path,
    known: impl Fn(&str, i32) -> bool,
) -> Result<Vec<PathBuf>, StorageError> {
    let listing = |error| StorageError::io("listing", data_dir, error);
    let mut deleted = Vec::new();
    for entry in std::fs::read_dir(data_dir).map_err(listing)? {
        let entry = entry.map_err(listing)?;
        if !entry.file_type().map_err(listing)?.is_dir() {
            continue;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_deleted_log_dir_name(name) {
            deleted.push(entry.path());
            continue;
        }
        let Some((topic, partition)) = parse_partition_dir_name(name) else {
            continue;
        };
        if !known(topic, partition) {
            // Never opened, so a failure to set it aside is only logged.
            let reason = "its topic or partition is not in the metadata".to_string();
            if let Err(error) = set_stray_log_dir_aside_blocking(&entry.path(), &reason) {
                warn!(dir = %entry.path().display(), %error, "cannot set a stray partition directory aside");
            }
        }
    }
    deleted.sort();
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: partition directories are told from the rest by Kafka's
    /// naming. Method: names of each kind.
    #[test]
    fn partition_dir_names_parse_like_kafka() {
        assert_eq!(parse_partition_dir_name("orders-0"), Some(("orders", 0)));
        assert_eq!(
            parse_partition_dir_name("__consumer_offsets-49"),
            Some(("__consumer_offsets", 49))
        );
        assert_eq!(parse_partition_dir_name("a-b.c-12"), Some(("a-b.c", 12)));
        for name in [
            "meta",
            "orders-",
            "-3",
            "orders-x",
            "orders-0.0123456789abcdef0123456789abcdef-delete",
            "orders-0.0123456789abcdef0123456789abcdef-stray",
            "or ders-1",
            "..-1",
            "orders-99999999999",
        ] {
            assert_eq!(parse_partition_dir_name(name), None, "{name}");
        }
    }

    /// Goal: at start-up, stray partition directories are renamed and kept
    /// (an empty one removed), deleted logs' directories are listed, and
    /// everything else is left alone. Method: a data directory with one of
    /// each.
    #[test]
    fn start_up_sets_strays_aside_and_lists_deleted_logs() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path();
        let deleted_name = "t-0.0123456789abcdef0123456789abcdef-delete";
        for dir in [
            "kept-0",
            "gone-0",
            "kept-5",
            "meta",
            deleted_name,
            "backup-delete",
        ] {
            std::fs::create_dir(path.join(dir)).unwrap();
            std::fs::write(path.join(dir).join("00000000000000000000.log"), b"x").unwrap();
        }
        std::fs::create_dir(path.join("empty-0")).unwrap();
        std::fs::write(path.join("loose-0"), b"a file").unwrap();
        let deleted =
            settle_log_dirs_blocking(path, |topic, partition| topic == "kept" && partition == 0)
                .unwrap();
        assert_eq!(deleted, vec![path.join(deleted_name)]);
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), 7, "{names:?}");
        assert!(!path.join("empty-0").exists(), "an empty stray is removed");
        for name in ["kept-0", "loose-0", "meta", deleted_name, "backup-delete"] {
            assert!(names.contains(&name.to_string()), "{names:?}");
        }
        for stray in ["gone-0.", "kept-5."] {
            let renamed = names
                .iter()
                .find(|name| name.starts_with(stray))
                .unwrap_or_else(|| panic!("{stray} not set aside: {names:?}"));
            assert!(renamed.ends_with(STRAY_DIR_SUFFIX), "{renamed}");
            assert_eq!(renamed.len(), stray.len() + 32 + STRAY_DIR_SUFFIX.len());
            assert!(path.join(renamed).join("00000000000000000000.log").exists());
        }
    }

    /// Goal: a renamed directory's name stays within 255 bytes whatever the
    /// topic's length, its partition and suffix whole, as Kafka cuts it.
    /// Method: the longest topic name Kafka allows, renamed both ways.
    #[test]
    fn renamed_names_are_cut_to_255_bytes_like_kafka() {
        let topic = "t".repeat(249);
        let dir = Path::new("/data").join(format!("{topic}-12"));
        for suffix in [DELETE_DIR_SUFFIX, STRAY_DIR_SUFFIX] {
            let renamed = renamed_log_dir(&dir, suffix).unwrap();
            let name = renamed.file_name().unwrap().to_str().unwrap();
            assert_eq!(name.len(), 255, "{name}");
            let tail = &name[name.len() - (4 + 32 + suffix.len())..];
            assert!(tail.starts_with("-12.") && tail.ends_with(suffix), "{name}");
            assert_eq!(renamed.parent(), Some(Path::new("/data")));
            if suffix == DELETE_DIR_SUFFIX {
                assert!(is_deleted_log_dir_name(name), "{name}");
            }
        }
        let short = renamed_log_dir(Path::new("/data/orders-3"), DELETE_DIR_SUFFIX).unwrap();
        let name = short.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("orders-3.") && is_deleted_log_dir_name(name),
            "{name}"
        );
        assert_eq!(name.len(), "orders-3.".len() + 32 + DELETE_DIR_SUFFIX.len());
        assert!(!is_deleted_log_dir_name("backup-delete"));
        assert!(!is_deleted_log_dir_name("orders-3.xyz-delete"));
    }
}
