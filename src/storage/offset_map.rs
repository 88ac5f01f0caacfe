//! The key -> latest offset map compaction builds over the dirty part of a
//! log: Kafka's `SkimpyOffsetMap`, a fixed-size open-addressing table of key
//! hashes, so the memory a compaction uses does not grow with the number of
//! keys. When the table is as full as its load factor allows, the caller
//! stops mapping and cleans only up to the last offset it mapped.
//!
//! Keys are stored as a 128-bit hash (Kafka keeps an MD5, also 128 bits):
//! two keys sharing a hash would make the older record of one of them look
//! superseded, so the hash is made wide enough for that never to matter in
//! practice (about 10^-20 for a million keys). The table lives only for one
//! compaction, so the hash needs no stability across releases; std's SipHash
//! (fixed keys) run twice with different prefixes gives the two halves.
//!
//! Pure code, no I/O: owned by one compaction on the partition's shard.

use std::hash::{DefaultHasher, Hasher};

/// Bytes one slot takes.
pub const OFFSET_MAP_SLOT_BYTES: usize = std::mem::size_of::<Slot>();

/// One slot: the key hash's two halves and the offset plus one, all zero
/// for a free slot, so a new table is zeroed memory the system maps only
/// as slots are used (a large `log.cleaner.dedupe.buffer.size` costs
/// nothing until keys fill it).
type Slot = [u64; 3];

/// Kafka's default `log.cleaner.io.buffer.load.factor`: the share of slots
/// the map fills before it reports itself full (open addressing slows down
/// sharply past this).
pub const LOAD_FACTOR_DEFAULT: f64 = 0.9;

/// Fixed-capacity map from record key (by hash) to the latest offset seen
/// for it, plus the latest offset mapped overall.
#[derive(Debug)]
pub struct OffsetMap {
    slots: Vec<Slot>,
    /// `slots.len() - 1`; the slot count is a power of two.
    mask: usize,
    entries: usize,
    entries_max: usize,
    latest_offset: i64,
}

impl OffsetMap {
    /// A map using at most `memory_bytes`: the largest power-of-two number
    /// of slots that fits, filled to `load_factor` of them (Kafka's
    /// `log.cleaner.io.buffer.load.factor`), but at least two and always
    /// leaving one slot free, so a probe for a new key ends.
    ///
    /// # Panics
    /// If `memory_bytes` does not hold enough slots to map even two keys.
    pub fn new(memory_bytes: usize, load_factor: f64) -> Self {
        let fitting = memory_bytes / OFFSET_MAP_SLOT_BYTES;
        assert!(
            fitting >= 4,
            "offset map memory {memory_bytes} is too small"
        );
        let slot_count = 1usize << (usize::BITS - 1 - fitting.leading_zeros());
        assert!(slot_count <= fitting);
        assert!(slot_count.is_power_of_two());
        // Truncated as Kafka's `(slots * loadFactor).toInt`; NaN is 0.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let wanted = (slot_count as f64 * load_factor) as usize;
        let entries_max = wanted.clamp(2, slot_count - 1);
        OffsetMap {
            slots: vec![[0; 3]; slot_count],
            mask: slot_count - 1,
            entries: 0,
            entries_max,
            latest_offset: -1,
        }
    }

    /// Distinct keys mapped.
    pub fn key_count(&self) -> usize {
        self.entries
    }

    /// True when the map takes no more keys (Kafka checks this before every
    /// put, new key or not, and stops mapping there).
    pub fn is_full(&self) -> bool {
        self.entries >= self.entries_max
    }

    /// The latest offset mapped (Kafka's `latestOffset`): the last put, or
    /// what `set_latest_offset` moved it to; -1 at first.
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Moves the latest offset (Kafka's `updateLatestOffset`: after a batch,
    /// and to the end of a fully mapped segment).
    ///
    /// # Panics
    /// If the offset goes backwards.
    pub fn set_latest_offset(&mut self, offset: i64) {
        assert!(
            offset >= self.latest_offset,
            "the latest mapped offset never goes backwards"
        );
        self.latest_offset = offset;
    }

    fn hash(key: &[u8]) -> (u64, u64) {
        let mut high = DefaultHasher::new();
        high.write_u8(0x5a);
        high.write(key);
        let mut low = DefaultHasher::new();
        low.write_u8(0xa5);
        low.write(key);
        (high.finish(), low.finish())
    }

    /// Index of the slot holding `hash`, or of the free slot where it would
    /// go. Triangular probing visits every slot of a power-of-two table.
    fn find_slot(&self, hash_high: u64, hash_low: u64) -> usize {
        let mut index = (hash_low as usize) & self.mask;
        let mut step = 0;
        loop {
            let [high, low, stored] = self.slots[index];
            if stored == 0 || (high == hash_high && low == hash_low) {
                return index;
            }
            step += 1;
            assert!(
                step <= self.mask,
                "a map below its load factor has a free slot"
            );
            index = (index + step) & self.mask;
        }
    }

    /// Records `offset` as the latest for `key`, and as the latest offset
    /// mapped.
    ///
    /// # Panics
    /// If the map is full (the caller checks [`OffsetMap::is_full`] first),
    /// or offsets go backwards.
    pub fn put(&mut self, key: &[u8], offset: i64) {
        assert!(offset >= 0);
        assert!(!self.is_full(), "put into a full offset map");
        let (hash_high, hash_low) = Self::hash(key);
        let index = self.find_slot(hash_high, hash_low);
        let slot = &mut self.slots[index];
        let stored = u64::try_from(offset).expect("offsets are not negative") + 1;
        if slot[2] == 0 {
            self.entries += 1;
        } else {
            assert!(stored > slot[2], "keys are mapped in offset order");
        }
        *slot = [hash_high, hash_low, stored];
        self.set_latest_offset(offset);
    }

    /// The latest offset mapped for `key`, or -1 when it was not mapped.
    pub fn get(&self, key: &[u8]) -> i64 {
        let (hash_high, hash_low) = Self::hash(key);
        let stored = self.slots[self.find_slot(hash_high, hash_low)][2];
        i64::try_from(stored).map_or(i64::MAX, |stored| stored - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: later puts win, unknown keys answer -1, and the map reports
    /// full at its load factor without ever losing a key. Method: fill a
    /// small map to the brim with distinct keys, overwrite some, look all up.
    #[test]
    fn keeps_the_latest_offset_per_key_until_full() {
        let mut map = OffsetMap::new(64 * OFFSET_MAP_SLOT_BYTES + 5, LOAD_FACTOR_DEFAULT);
        assert_eq!(map.get(b"missing"), -1);
        let mut offset = 0;
        while !map.is_full() {
            map.put(format!("key-{offset}").as_bytes(), offset);
            offset += 1;
        }
        assert_eq!(map.key_count(), 57, "64 slots filled to 90 %");
        assert_eq!(map.latest_offset(), 56);
        for key in 0..57 {
            assert_eq!(map.get(format!("key-{key}").as_bytes()), key);
        }
        assert_eq!(map.get(b"key-57"), -1);
        map.set_latest_offset(100);
        assert_eq!(map.latest_offset(), 100);
    }

    /// Goal: the load factor sets how full the map gets, as Kafka's
    /// `(slots * loadFactor).toInt`, but a probe for a new key always finds
    /// a free slot and two keys always fit. Method: fill 64-slot maps.
    #[test]
    fn the_load_factor_sets_how_full_the_map_gets() {
        for (load_factor, keys) in [
            (0.5, 32),
            (0.9, 57),
            (1.0, 63),
            (1.5, 63),
            (0.0, 2),
            (f64::NAN, 2),
        ] {
            let mut map = OffsetMap::new(64 * OFFSET_MAP_SLOT_BYTES, load_factor);
            let mut offset = 0;
            while !map.is_full() {
                map.put(format!("key-{offset}").as_bytes(), offset);
                offset += 1;
            }
            assert_eq!(map.key_count(), keys, "load factor {load_factor}");
            assert_eq!(map.get(b"absent"), -1);
        }
    }

    /// Goal: overwriting a key does not use a new slot. Method: put one key
    /// many times.
    #[test]
    fn overwrites_do_not_grow_the_map() {
        let mut map = OffsetMap::new(1024, LOAD_FACTOR_DEFAULT);
        for offset in 0..1000 {
            map.put(b"same", offset);
        }
        assert_eq!(map.key_count(), 1);
        assert_eq!(map.get(b"same"), 999);
    }
}
