//! The two sparse indexes of a segment, in memory, with Kafka's file formats.
//!
//! - `.index`: 8-byte entries, `relativeOffset u32 BE, position u32 BE`. As in
//!   Kafka (`LogSegment.append`), an entry is added for a batch when more than
//!   `index.interval.bytes` were appended since the previous entry, and it maps
//!   that batch's **last** offset to the batch's byte position. (Kafka keys
//!   the entry on the last offset so that `DumpLogSegments --index-sanity-check`
//!   and the lookup "largest entry <= target, then scan forward" both hold;
//!   the scan from the entry's position still finds a target offset that lies
//!   inside a later batch.)
//! - `.timeindex`: 12-byte entries, `timestamp i64 BE, relativeOffset u32 BE`,
//!   added at the same points, mapping the largest timestamp seen so far in
//!   the segment to the last offset of the batch that holds it, and only when
//!   that timestamp is larger than the last entry's (Kafka's `maybeAppend`).
//!   When a segment stops being active, one final entry records the segment's
//!   maximum timestamp (Kafka's `onBecomeInactiveSegment`).
//!
//! Pure code, no I/O: lives on the partition's shard as part of a segment.

use super::segment::NO_TIMESTAMP;

/// Bytes per `.index` entry.
pub const OFFSET_INDEX_ENTRY_BYTES: usize = 8;
/// Bytes per `.timeindex` entry.
pub const TIME_INDEX_ENTRY_BYTES: usize = 12;

/// One offset index entry with its offset made absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// Absolute offset (the last offset of the indexed batch).
    pub offset: i64,
    /// Byte position of that batch in the segment file.
    pub position: u32,
}

/// One time index entry with its offset made absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// Largest timestamp seen up to the batch.
    pub timestamp: i64,
    /// Last offset of the batch that holds `timestamp`.
    pub offset: i64,
}

/// Sparse offset -> file position index of one segment.
#[derive(Debug, Clone)]
pub struct OffsetIndex {
    base_offset: i64,
    /// (relative offset, position), both strictly ascending.
    entries: Vec<(u32, u32)>,
    entries_max: usize,
}

impl OffsetIndex {
    /// An empty index for the segment at `base_offset`, holding at most
    /// `entries_max` entries (`log.index.size.max.bytes / 8`).
    pub fn new(base_offset: i64, entries_max: usize) -> Self {
        assert!(base_offset >= 0);
        assert!(entries_max > 0);
        OffsetIndex {
            base_offset,
            entries: Vec::new(),
            entries_max,
        }
    }

    /// True when no further entry fits; the segment must roll.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.entries_max
    }

    /// Number of entries (the file holds 8 bytes per entry).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the index has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The last entry, if any.
    pub fn last(&self) -> Option<OffsetPosition> {
        self.entries
            .last()
            .map(|&(relative, position)| self.absolute(relative, position))
    }

    /// The first entry, if any.
    pub fn first(&self) -> Option<OffsetPosition> {
        self.entries
            .first()
            .map(|&(relative, position)| self.absolute(relative, position))
    }

    fn absolute(&self, relative: u32, position: u32) -> OffsetPosition {
        OffsetPosition {
            offset: self.base_offset + i64::from(relative),
            position,
        }
    }

    /// Adds an entry. Does nothing when the index is full (the append path
    /// rolls before that happens; a rebuild of a segment written with a
    /// larger limit just indexes less densely).
    ///
    /// # Panics
    /// If the offset or position does not increase, or the offset does not
    /// fit in a relative u32.
    pub fn append(&mut self, offset: i64, position: u32) {
        let relative = offset - self.base_offset;
        assert!(relative >= 0);
        assert!(relative <= i64::from(u32::MAX));
        if let Some(last) = self.last() {
            assert!(offset > last.offset, "offset index offsets must increase");
            assert!(
                position > last.position,
                "offset index positions must increase"
            );
        }
        if self.is_full() {
            return;
        }
        self.entries.push((relative as u32, position));
    }

    /// The entry with the largest offset <= `target_offset`, or the segment
    /// start (base offset, position 0) when there is none.
    pub fn lookup(&self, target_offset: i64) -> OffsetPosition {
        let relative_target = target_offset - self.base_offset;
        if relative_target < 0 {
            return self.absolute(0, 0);
        }
        let count = self
            .entries
            .partition_point(|&(relative, _)| i64::from(relative) <= relative_target);
        match count {
            0 => self.absolute(0, 0),
            n => {
                let (relative, position) = self.entries[n - 1];
                self.absolute(relative, position)
            }
        }
    }

    /// The first entry at or after `position`, if any.
    pub fn ceil_by_position(&self, position: u64) -> Option<OffsetPosition> {
        let count = self
            .entries
            .partition_point(|&(_, entry)| u64::from(entry) < position);
        let (relative, entry) = *self.entries.get(count)?;
        Some(self.absolute(relative, entry))
    }

    /// The entry with the largest position <= `position`, if any.
    pub fn floor_by_position(&self, position: u64) -> Option<OffsetPosition> {
        let count = self
            .entries
            .partition_point(|&(_, entry)| u64::from(entry) <= position);
        let (relative, entry) = *self.entries.get(count.checked_sub(1)?)?;
        Some(self.absolute(relative, entry))
    }

    /// Kafka's `.index` file contents.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.entries.len() * OFFSET_INDEX_ENTRY_BYTES);
        for &(relative, position) in &self.entries {
            bytes.extend_from_slice(&relative.to_be_bytes());
            bytes.extend_from_slice(&position.to_be_bytes());
        }
        bytes
    }

    /// Parses a `.index` file and checks it against the segment: whole
    /// entries, offsets and positions strictly ascending, positions inside
    /// the file.
    ///
    /// # Errors
    /// A sentence saying which check failed; the caller rebuilds the index.
    pub fn decode(
        base_offset: i64,
        bytes: &[u8],
        entries_max: usize,
        segment_bytes: u64,
    ) -> Result<Self, String> {
        if bytes.len() % OFFSET_INDEX_ENTRY_BYTES != 0 {
            return Err(format!(
                "size {} is not a multiple of {OFFSET_INDEX_ENTRY_BYTES}",
                bytes.len()
            ));
        }
        let mut index = OffsetIndex::new(base_offset, entries_max.max(1));
        let mut previous: Option<(u32, u32)> = None;
        for entry in bytes.chunks_exact(OFFSET_INDEX_ENTRY_BYTES) {
            let relative = u32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let position = u32::from_be_bytes([entry[4], entry[5], entry[6], entry[7]]);
            if let Some((previous_relative, previous_position)) = previous {
                if relative <= previous_relative {
                    return Err(format!(
                        "offsets do not ascend at relative offset {relative}"
                    ));
                }
                if position <= previous_position {
                    return Err(format!("positions do not ascend at position {position}"));
                }
            }
            if u64::from(position) >= segment_bytes {
                return Err(format!(
                    "position {position} is beyond the segment's {segment_bytes} bytes"
                ));
            }
            previous = Some((relative, position));
            index.entries.push((relative, position));
        }
        Ok(index)
    }
}

/// Sparse timestamp -> offset index of one segment.
#[derive(Debug, Clone)]
pub struct TimeIndex {
    base_offset: i64,
    /// (timestamp strictly ascending, relative offset non-decreasing).
    entries: Vec<(i64, u32)>,
    entries_max: usize,
}

impl TimeIndex {
    /// An empty index for the segment at `base_offset`, holding at most
    /// `entries_max` entries (`log.index.size.max.bytes / 12`).
    pub fn new(base_offset: i64, entries_max: usize) -> Self {
        assert!(base_offset >= 0);
        assert!(entries_max > 1);
        TimeIndex {
            base_offset,
            entries: Vec::new(),
            entries_max,
        }
    }

    /// True when only the slot kept for the final entry written at roll is
    /// left; the segment must roll.
    pub fn is_full(&self) -> bool {
        self.entries.len() + 1 >= self.entries_max
    }

    /// Number of entries (the file holds 12 bytes per entry).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the index has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The last entry, if any.
    pub fn last(&self) -> Option<TimestampOffset> {
        self.entries
            .last()
            .map(|&(timestamp, relative)| TimestampOffset {
                timestamp,
                offset: self.base_offset + i64::from(relative),
            })
    }

    /// Adds `(timestamp, offset)` when `timestamp` is larger than the last
    /// entry's (and is a real timestamp). Returns whether it was added.
    ///
    /// # Panics
    /// If the offset goes backwards or does not fit in a relative u32.
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64) -> bool {
        let relative = offset - self.base_offset;
        assert!(relative >= 0);
        assert!(relative <= i64::from(u32::MAX));
        if timestamp <= NO_TIMESTAMP {
            return false;
        }
        if let Some(last) = self.last() {
            if timestamp <= last.timestamp {
                return false;
            }
            assert!(
                offset >= last.offset,
                "time index offsets must not go backwards"
            );
        }
        if self.entries.len() >= self.entries_max {
            return false;
        }
        self.entries.push((timestamp, relative as u32));
        true
    }

    /// The entry with the largest timestamp <= `target_timestamp`, or
    /// (NO_TIMESTAMP, base offset) when there is none (Kafka's `lookup`).
    pub fn lookup(&self, target_timestamp: i64) -> TimestampOffset {
        let count = self
            .entries
            .partition_point(|&(timestamp, _)| timestamp <= target_timestamp);
        match count {
            0 => TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset,
            },
            n => {
                let (timestamp, relative) = self.entries[n - 1];
                TimestampOffset {
                    timestamp,
                    offset: self.base_offset + i64::from(relative),
                }
            }
        }
    }

    /// Kafka's `.timeindex` file contents.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.entries.len() * TIME_INDEX_ENTRY_BYTES);
        for &(timestamp, relative) in &self.entries {
            bytes.extend_from_slice(&timestamp.to_be_bytes());
            bytes.extend_from_slice(&relative.to_be_bytes());
        }
        bytes
    }

    /// Parses a `.timeindex` file: whole entries, timestamps strictly
    /// ascending, offsets non-decreasing.
    ///
    /// # Errors
    /// A sentence saying which check failed; the caller rebuilds the index.
    pub fn decode(base_offset: i64, bytes: &[u8], entries_max: usize) -> Result<Self, String> {
        if bytes.len() % TIME_INDEX_ENTRY_BYTES != 0 {
            return Err(format!(
                "size {} is not a multiple of {TIME_INDEX_ENTRY_BYTES}",
                bytes.len()
            ));
        }
        let mut index = TimeIndex::new(base_offset, entries_max.max(2));
        let mut previous: Option<(i64, u32)> = None;
        for entry in bytes.chunks_exact(TIME_INDEX_ENTRY_BYTES) {
            let mut timestamp_bytes = [0u8; 8];
            timestamp_bytes.copy_from_slice(&entry[0..8]);
            let timestamp = i64::from_be_bytes(timestamp_bytes);
            let relative = u32::from_be_bytes([entry[8], entry[9], entry[10], entry[11]]);
            if timestamp <= NO_TIMESTAMP {
                return Err(format!("entry holds no timestamp ({timestamp})"));
            }
            if let Some((previous_timestamp, previous_relative)) = previous {
                if timestamp <= previous_timestamp {
                    return Err(format!("timestamps do not ascend at {timestamp}"));
                }
                if relative < previous_relative {
                    return Err(format!(
                        "offsets go backwards at relative offset {relative}"
                    ));
                }
            }
            previous = Some((timestamp, relative));
            index.entries.push((timestamp, relative));
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Position lookups: below the first entry nothing, on an entry that
    /// entry, between entries the lower one, past the end the last.
    #[test]
    fn offset_index_floor_by_position() {
        let mut index = OffsetIndex::new(100, 16);
        assert_eq!(index.floor_by_position(1 << 20), None);
        index.append(104, 4096);
        index.append(109, 8192);
        index.append(120, 12288);
        assert_eq!(index.floor_by_position(4095), None);
        let at = |offset, position| Some(OffsetPosition { offset, position });
        assert_eq!(index.floor_by_position(4096), at(104, 4096));
        assert_eq!(index.floor_by_position(12287), at(109, 8192));
        assert_eq!(index.floor_by_position(1 << 30), at(120, 12288));
    }

    /// Lookups at the edges of the offset index: before the first entry,
    /// exactly on an entry, between entries and past the last, plus an
    /// encode/decode round trip.
    #[test]
    fn offset_index_lookup_edges_and_round_trip() {
        let mut index = OffsetIndex::new(100, 10);
        assert_eq!(
            index.lookup(150),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        index.append(110, 4096);
        index.append(120, 8192);
        assert_eq!(
            index.lookup(105),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        assert_eq!(
            index.lookup(110),
            OffsetPosition {
                offset: 110,
                position: 4096
            }
        );
        assert_eq!(
            index.lookup(115),
            OffsetPosition {
                offset: 110,
                position: 4096
            }
        );
        assert_eq!(
            index.lookup(500),
            OffsetPosition {
                offset: 120,
                position: 8192
            }
        );
        assert_eq!(
            index.lookup(50),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        let decoded = OffsetIndex::decode(100, &index.encode(), 10, 10_000).unwrap();
        assert_eq!(
            decoded.lookup(121),
            OffsetPosition {
                offset: 120,
                position: 8192
            }
        );
        assert_eq!(decoded.encode().len(), 2 * OFFSET_INDEX_ENTRY_BYTES);
    }

    /// Decoding refuses the damage recovery has to catch: a partial entry,
    /// offsets going backwards, a position past the end of the segment.
    #[test]
    fn offset_index_decode_rejects_damage() {
        let mut index = OffsetIndex::new(0, 10);
        index.append(10, 100);
        index.append(20, 200);
        let bytes = index.encode();
        assert!(OffsetIndex::decode(0, &bytes[..12], 10, 1000).is_err());
        assert!(OffsetIndex::decode(0, &bytes, 10, 150).is_err());
        let mut swapped = bytes[8..].to_vec();
        swapped.extend_from_slice(&bytes[..8]);
        assert!(OffsetIndex::decode(0, &swapped, 10, 1000).is_err());
    }

    /// The time index keeps only increasing timestamps and answers with the
    /// largest entry at or below the target, or the base offset.
    #[test]
    fn time_index_appends_increasing_only_and_looks_up() {
        let mut index = TimeIndex::new(0, 10);
        assert!(!index.maybe_append(NO_TIMESTAMP, 0));
        assert!(index.maybe_append(1000, 4));
        assert!(!index.maybe_append(1000, 9));
        assert!(!index.maybe_append(900, 9));
        assert!(index.maybe_append(2000, 9));
        assert_eq!(
            index.lookup(999),
            TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: 0
            }
        );
        assert_eq!(
            index.lookup(1000),
            TimestampOffset {
                timestamp: 1000,
                offset: 4
            }
        );
        assert_eq!(
            index.lookup(1500),
            TimestampOffset {
                timestamp: 1000,
                offset: 4
            }
        );
        assert_eq!(
            index.lookup(9999),
            TimestampOffset {
                timestamp: 2000,
                offset: 9
            }
        );
        let decoded = TimeIndex::decode(0, &index.encode(), 10).unwrap();
        assert_eq!(decoded.last(), index.last());
        assert!(TimeIndex::decode(0, &index.encode()[..13], 10).is_err());
    }
}
