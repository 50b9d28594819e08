//! How many bytes a key range takes in fjall, for the size functions (`pg_relation_size` and
//! the like): fjall 3.1 has no estimate of a key range's size, so it is worked out from the
//! LSM tree's tables and memtable.
//!
//! - A table (SST) whose keys all lie inside the range counts whole: its file size.
//! - A table the range cuts counts the share of its file its entries inside the range make: by
//!   their bytes, the table read whole, when it holds up to [`READ_WHOLE_ENTRIES`] entries (a
//!   table of a bulk load, which holds rows and index entries together, is cut so); a larger one
//!   by their number (up to [`COUNTED_ENTRIES`] counted; past that, the rest of the cut is
//!   estimated by where the range's end falls between the last entry counted and the table's
//!   last key, read as numbers), which is exact only when entries inside and outside are of a
//!   size.
//! - The active memtable counts the bytes of the keys and values inside the range (read in
//!   memory). A memtable sealed and waiting for its flush is not counted: for the moment
//!   between a seal and its flush, a size can dip by what that memtable held.
//!
//! Every version and tombstone an LSM tree keeps counts, as dead tuples count in PostgreSQL's
//! relation sizes until VACUUM: the figure is what the range costs on disk and in memory, and
//! it shrinks when compaction drops what was deleted.

use std::ops::Bound;

use fjall::{AbstractTree, Keyspace, UserKey};

use crate::error::Result;
use crate::range::KeyRange;

/// A cut table of up to this many entries is read whole: the share of its entries' bytes inside
/// the range is its share of the file.
const READ_WHOLE_ENTRIES: u64 = 250_000;

/// Of a larger cut table, the entries inside the range counted one by one before the rest of
/// the cut is estimated.
const COUNTED_ENTRIES: u64 = 50_000;

/// The approximate bytes `range` takes in `keyspace` (see the module's text).
pub(super) fn range_size(keyspace: &Keyspace, range: &KeyRange) -> Result<u64> {
    if range.is_empty() {
        return Ok(0);
    }
    let start = range.start.as_slice();
    let end = range.end.as_deref();
    let end_bound = match end {
        Some(end) => Bound::Excluded(UserKey::from(end)),
        None => Bound::Unbounded,
    };
    let mut bytes = 0u64;
    let version = keyspace.tree.current_version();
    for table in version.iter_tables() {
        let meta = &table.metadata;
        let (min, max) = (meta.key_range.min().as_ref(), meta.key_range.max().as_ref());
        let before_start = max < start;
        let past_end = end.is_some_and(|end| min >= end);
        if before_start || past_end {
            continue;
        }
        let contains_min = min >= start;
        let contains_max = end.is_none_or(|end| max < end);
        if contains_min && contains_max {
            bytes += meta.file_size;
            continue;
        }
        // A cut table: the share of it inside the range.
        if meta.item_count == 0 {
            continue;
        }
        let share = if meta.item_count <= READ_WHOLE_ENTRIES {
            let (mut inside, mut all) = (0u64, 0u64);
            for item in table.iter() {
                let item = item.map_err(fjall::Error::from)?;
                let entry = (item.key.user_key.len() + item.value.len()) as u64;
                all += entry;
                if range.contains(&item.key.user_key) {
                    inside += entry;
                }
            }
            if all == 0 {
                0.0
            } else {
                inside as f64 / all as f64
            }
        } else {
            let mut counted = 0u64;
            let mut last: Option<UserKey> = None;
            for item in table.range((Bound::Included(UserKey::from(start)), end_bound.clone())) {
                let item = item.map_err(fjall::Error::from)?;
                counted += 1;
                if counted == COUNTED_ENTRIES {
                    last = Some(item.key.user_key);
                    break;
                }
            }
            cut_share(counted, meta.item_count, last.as_deref(), max, end)
        };
        bytes += (meta.file_size as f64 * share) as u64;
    }
    let memtable = keyspace.tree.active_memtable();
    for item in memtable.iter() {
        let key = item.key.user_key.as_ref();
        if range.contains(key) {
            bytes += (key.len() + item.value.len()) as u64;
        }
    }
    Ok(bytes)
}

/// The share (0..=1) of a cut table's `item_count` entries inside the range: `counted`
/// entries read inside it, and when the count stopped at `last`, the rest estimated by where the
/// range's `end` falls between `last` and the table's last key `table_max`.
fn cut_share(
    counted: u64,
    item_count: u64,
    last: Option<&[u8]>,
    table_max: &[u8],
    end: Option<&[u8]>,
) -> f64 {
    let mut share = counted as f64 / item_count as f64;
    if let Some(last) = last {
        let reach = end.map_or(1.0, |end| position(last, table_max, end));
        share += (1.0 - share) * reach;
    }
    share.clamp(0.0, 1.0)
}

/// Where `key` falls between `low` and `high` (0..=1), reading the eight bytes after their
/// common prefix as big-endian numbers.
fn position(low: &[u8], high: &[u8], key: &[u8]) -> f64 {
    let common = low.iter().zip(high).take_while(|(a, b)| a == b).count();
    let number = |bytes: &[u8]| -> f64 {
        let mut word = [0u8; 8];
        for (slot, byte) in word.iter_mut().zip(bytes.iter().skip(common)) {
            *slot = *byte;
        }
        u64::from_be_bytes(word) as f64
    };
    let (low, high, key) = (number(low), number(high), number(key));
    if high <= low {
        return 1.0;
    }
    ((key - low) / (high - low)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::{cut_share, position};

    #[test]
    fn position_reads_the_bytes_after_the_common_prefix() {
        assert_eq!(position(b"t\x00", b"t\xff", b"t\x00"), 0.0);
        assert!((position(b"t\x00", b"t\x80", b"t\x40") - 0.5).abs() < 1e-9);
        assert_eq!(position(b"a", b"b", b"c"), 1.0);
    }

    #[test]
    fn a_cut_counted_whole_is_its_share_and_a_stopped_count_reaches_on() {
        assert!((cut_share(25, 100, None, b"z", Some(b"m")) - 0.25).abs() < 1e-9);
        // 50 of 100 counted up to "t\x40"; the range ends halfway to the last key "t\x80".
        let share = cut_share(50, 100, Some(b"t\x40"), b"t\x80", Some(b"t\x60"));
        assert!((share - 0.75).abs() < 1e-9, "{share}");
        assert_eq!(cut_share(50, 100, Some(b"t\x40"), b"t\x80", None), 1.0);
    }
}
