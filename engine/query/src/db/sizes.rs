//! How many bytes a table and its indexes take in the store, for PostgreSQL's size functions
//! (`pg_relation_size`, `pg_table_size`, `pg_indexes_size`, `pg_total_relation_size`,
//! `pg_database_size`) and `\dt+`: each figure is the store's estimate of the key ranges that
//! hold it (`KvStore::approximate_size`: exact in memory, from the LSM tree's tables and
//! memtable on fjall, unknown on etcd).

use rowdex_catalog::{TableDef, keyspace};
use rowdex_store::{KeyRange, KvStore};

use crate::error::Result;

/// The bytes of one table's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSizes {
    /// The rows: every column family's entries (the primary key is the rows' own order, not a
    /// structure of its own).
    pub rows: u64,
    /// The older versions a table with `VERSIONS` above 1 keeps.
    pub history: u64,
    /// Each secondary index's entries, by index name.
    pub indexes: Vec<(String, u64)>,
}

impl TableSizes {
    /// What PostgreSQL's `pg_table_size` counts: the table without its indexes.
    pub fn table(&self) -> u64 {
        self.rows + self.history
    }

    /// `pg_indexes_size`: every index of the table.
    pub fn indexes(&self) -> u64 {
        self.indexes.iter().map(|(_, bytes)| bytes).sum()
    }
}

/// The sizes of `table`'s parts in `store`, or `None` when the store cannot tell.
pub(crate) fn table_sizes(store: &dyn KvStore, table: &TableDef) -> Result<Option<TableSizes>> {
    let size = |prefix: Vec<u8>| store.approximate_size(&KeyRange::prefix(&prefix));
    let (Some(rows), Some(families), Some(history)) = (
        size(keyspace::table_prefix(table.id))?,
        size(keyspace::family_prefix(table.id, None))?,
        size(keyspace::history_prefix(table.id))?,
    ) else {
        return Ok(None);
    };
    let mut indexes = Vec::with_capacity(table.indexes.len());
    for index in &table.indexes {
        let Some(bytes) = size(keyspace::index_prefix(index.id))? else {
            return Ok(None);
        };
        indexes.push((index.name.clone(), bytes));
    }
    Ok(Some(TableSizes {
        rows: rows + families,
        history,
        indexes,
    }))
}
