//! The one ordered keyspace, split by a leading tag byte.
//!
//! ```text
//! 0x00 'N'                      -> next object id (u32 big-endian)
//! 0x00 'T' table-name           -> table definition, with its indexes (JSON)
//! 0x00 'I' index-name           -> name of the table the index belongs to
//! 0x00 'W' view-name            -> the view's defining query (SQL text)
//! 0x00 'V' table-id(u32 BE)      -> schema version (u32 BE), read by every write statement
//! 0x00 'R' table-id(u32 BE)      -> the table's row count, as of the deltas folded in (u64 BE)
//! 0x00 'D' table-id(u32 BE) writer(u64 BE) seq(u64 BE) -> a committed write's net row change
//!                                    (i64 BE), written in the write's own transaction
//! 0x00 'S' table-id(u32 BE)      -> what ANALYZE gathered (JSON `TableStatistics`)
//! 0x00 'U' role-name            -> a role: login, password verifier (JSON `RoleDef`)
//! 0x00 'Q' sequence-name        -> a sequence and the next value it hands out (JSON
//!                                    `SequenceDef`)
//! 0x10 table-id(u32 BE) [salt] pk   -> row value (cells of the default column family)
//! 0x11 table-id(u32 BE) family(u8) [salt] pk -> cells of column family 1..255 (an entry
//!                                    for every row, so that one family alone can drive a scan)
//! 0x20 index-id(u32 BE) [salt] values pk -> index entry
//! 0x30 table-id(u32 BE) pk time(DESC) -> an older version of a row (cells), or empty: deleted
//! ```
//! Big-endian ids keep one table's rows contiguous and in id order; ids are never reused, so rows
//! left behind by an interrupted DROP can never reappear under a new table.

pub const SYSTEM: u8 = 0x00;
pub const TABLE_DATA: u8 = 0x10;
pub const FAMILY_DATA: u8 = 0x11;
pub const INDEX_DATA: u8 = 0x20;
pub const HISTORY_DATA: u8 = 0x30;

pub const NEXT_ID_KEY: &[u8] = &[SYSTEM, b'N'];
/// The catalog's version: every change of a table, index or view advances it.
pub const CATALOG_VERSION_KEY: &[u8] = &[SYSTEM, b'C'];
pub const TABLE_DEF_PREFIX: &[u8] = &[SYSTEM, b'T'];
pub const SCHEMA_VERSION_PREFIX: &[u8] = &[SYSTEM, b'V'];
pub const INDEX_NAME_PREFIX: &[u8] = &[SYSTEM, b'I'];
pub const VIEW_DEF_PREFIX: &[u8] = &[SYSTEM, b'W'];
pub const ROW_COUNT_PREFIX: &[u8] = &[SYSTEM, b'R'];
pub const ROW_DELTA_PREFIX: &[u8] = &[SYSTEM, b'D'];
pub const STATISTICS_PREFIX: &[u8] = &[SYSTEM, b'S'];
pub const ROLE_PREFIX: &[u8] = &[SYSTEM, b'U'];
pub const SEQUENCE_PREFIX: &[u8] = &[SYSTEM, b'Q'];
/// Per table: the next hidden row id not yet handed out to any process (shared stores).
pub const ROWID_BLOCK_PREFIX: &[u8] = &[SYSTEM, b'O'];
pub const TRIGGER_NAME_PREFIX: &[u8] = &[SYSTEM, b'G'];

/// The prefix of every row of table `id`.
pub fn table_prefix(id: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(16);
    key.push(TABLE_DATA);
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// The prefix of every entry of column family `family` (1..) of table `id`, or of all of the
/// table's families (`None`).
pub fn family_prefix(id: u32, family: Option<u8>) -> Vec<u8> {
    let mut key = Vec::with_capacity(16);
    key.push(FAMILY_DATA);
    key.extend_from_slice(&id.to_be_bytes());
    key.extend(family);
    key
}

/// The prefix of every older row version of table `id` (tables with `VERSIONS` above 1).
pub fn history_prefix(id: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(32);
    key.push(HISTORY_DATA);
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// The prefix of every entry of index `id`.
pub fn index_prefix(id: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(32);
    key.push(INDEX_DATA);
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// The key of a table's schema version. Every write statement reads it inside its transaction,
/// so a statement planned against an older definition (say, before an index was added) cannot
/// commit after the change: it conflicts and is retried against the new definition.
pub fn schema_version_key(table_id: u32) -> Vec<u8> {
    table_key(SCHEMA_VERSION_PREFIX, table_id)
}

/// A catalog key of one table: `prefix ‖ table id`, with room for a suffix.
fn table_key(prefix: &[u8], table_id: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 4 + 16);
    key.extend_from_slice(prefix);
    key.extend_from_slice(&table_id.to_be_bytes());
    key
}

/// The key of a table's hidden row id allocator (see [`ROWID_BLOCK_PREFIX`]).
pub fn rowid_block_key(table_id: u32) -> Vec<u8> {
    table_key(ROWID_BLOCK_PREFIX, table_id)
}

/// The key of a table's folded row count (see [`row_delta_key`]).
pub fn row_count_key(table_id: u32) -> Vec<u8> {
    table_key(ROW_COUNT_PREFIX, table_id)
}

/// The prefix of every unfolded row-count delta of a table.
pub fn row_delta_prefix(table_id: u32) -> Vec<u8> {
    table_key(ROW_DELTA_PREFIX, table_id)
}

/// The key of one committed write's row-count delta. Each write puts its own key (`writer`
/// names the process, `seq` the write within it), so writers never read or overwrite one
/// counter and cannot conflict on it; the deltas are summed into [`row_count_key`] later.
pub fn row_delta_key(table_id: u32, writer: u64, seq: u64) -> Vec<u8> {
    let mut key = row_delta_prefix(table_id);
    key.extend_from_slice(&writer.to_be_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The key of what ANALYZE gathered about a table.
pub fn statistics_key(table_id: u32) -> Vec<u8> {
    table_key(STATISTICS_PREFIX, table_id)
}

/// The catalog key that reserves an index name (index names are unique across tables).
pub fn index_name_key(name: &str) -> Vec<u8> {
    let mut key = INDEX_NAME_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// The catalog key that reserves a trigger name (trigger names are unique across tables, as
/// in SQLite); its value is the table's name.
pub fn trigger_name_key(name: &str) -> Vec<u8> {
    let mut key = TRIGGER_NAME_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// The catalog key of a view's definition (views and tables share one namespace).
pub fn view_def_key(name: &str) -> Vec<u8> {
    let mut key = VIEW_DEF_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// The catalog key of a sequence.
pub fn sequence_key(name: &str) -> Vec<u8> {
    let mut key = SEQUENCE_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// The catalog key of a role.
pub fn role_key(name: &str) -> Vec<u8> {
    let mut key = ROLE_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// The catalog key of a table's definition.
pub fn table_def_key(name: &str) -> Vec<u8> {
    let mut key = TABLE_DEF_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

/// Salt bucket of an encoded primary key: FNV-1a, chosen because it is fixed forever (a std
/// hasher may change between Rust releases, which would move every salted row).
pub fn salt_bucket(pk_bytes: &[u8], buckets: u16) -> u8 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in pk_bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    // buckets <= 256, so the remainder always fits a byte.
    (hash % u32::from(buckets.max(1))) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salt_is_stable_and_in_range() {
        // Pinned: changing the hash would strand every salted row.
        assert_eq!(salt_bucket(b"", 8), (0x811c_9dc5u32 % 8) as u8);
        assert_eq!(salt_bucket(b"abc", 256), (0x1a47_e90bu32 % 256) as u8);
        for n in 0..200u32 {
            assert!(salt_bucket(&n.to_be_bytes(), 7) < 7);
        }
    }

    #[test]
    fn table_prefixes_order_by_id() {
        assert!(table_prefix(1) < table_prefix(2));
        assert!(table_prefix(255) < table_prefix(256));
        assert_eq!(table_prefix(3), vec![TABLE_DATA, 0, 0, 0, 3]);
    }
}
