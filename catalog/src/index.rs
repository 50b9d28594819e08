//! Secondary index definitions and the key layout of index entries.
//!
//! An index entry key is `0x20 ‖ index id (u32 BE) ‖ encoded indexed values ‖ encoded primary
//! key`. The primary-key suffix ("id redundancy") makes every entry unique even when values
//! repeat, and sorts the entries of one value tuple by primary key, which is what lets several
//! indexes be intersected by a streaming merge. The entry value holds the INCLUDE columns as
//! cells, like a row value.

use serde::{Deserialize, Serialize};

use crate::keyspace;
use crate::table::{KeyColumn, TableDef};

/// Whether queries may read an index yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexState {
    /// Writers maintain it, a backfill is filling it in; queries ignore it.
    Building,
    /// Complete: writers maintain it and queries use it.
    Ready,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Catalog object id (shared id space with tables, never reused).
    pub id: u32,
    pub name: String,
    /// Indexed columns in key order (positions in the table's columns, with DESC flags).
    pub columns: Vec<KeyColumn>,
    /// Covered columns stored in the entry value (positions in the table's columns).
    pub include: Vec<usize>,
    pub unique: bool,
    pub state: IndexState,
}

impl IndexDef {
    /// Prefix of every entry of this index.
    pub fn prefix(&self) -> Vec<u8> {
        keyspace::index_prefix(self.id)
    }

    /// Bytes before the encoded indexed values in an entry key.
    pub const HEADER_LEN: usize = 5;

    pub fn is_ready(&self) -> bool {
        self.state == IndexState::Ready
    }

    /// Whether the entry alone can answer a query reading `needed` columns: each is indexed,
    /// included, or part of the primary key (which every entry carries).
    pub fn covers(&self, table: &TableDef, needed: &[usize]) -> bool {
        needed.iter().all(|c| {
            self.columns.iter().any(|k| k.column == *c)
                || self.include.contains(c)
                || table.key_position(*c).is_some()
        })
    }

    /// The key columns of an entry as a scan sees them: the indexed columns, then the primary
    /// key columns that follow them.
    pub fn entry_key_columns(&self, table: &TableDef) -> Vec<KeyColumn> {
        self.columns.iter().chain(&table.key).copied().collect()
    }
}
