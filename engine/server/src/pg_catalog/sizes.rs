//! PostgreSQL's size functions over rowdex's store: `pg_relation_size`, `pg_table_size`,
//! `pg_indexes_size` and `pg_total_relation_size` of a table or an index, from what its key
//! ranges take in the store (`rowdex::Database::table_sizes`, which says how exact that is).
//!
//! A table's main fork is its rows (every column family); `pg_table_size` adds the older
//! versions it keeps; its primary key index takes nothing of its own (the rows are stored in
//! key order), and its secondary indexes are their entries. NULL for a relation that does not
//! exist and on a store that cannot tell (etcd).

use rowdex::{Database, TableSizes};

use crate::pg_catalog::model::Relations;

/// Which of a relation's sizes a function asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeOf {
    /// `pg_relation_size`: the main fork (a table's rows, an index's entries).
    Relation,
    /// `pg_table_size`: without indexes, with what else the table keeps (older versions).
    Table,
    /// `pg_indexes_size`: a table's indexes.
    Indexes,
    /// `pg_total_relation_size`: the table with its indexes.
    Total,
}

/// The size `of` of the relation named (or numbered) `relation`, in bytes.
pub fn relation_size(
    db: &Database,
    relations: &Relations,
    relation: &str,
    of: SizeOf,
) -> Option<i64> {
    let oid = relations.relation_oid(relation)?;
    let sizes = |table| -> Option<TableSizes> { db.table_sizes(table).ok().flatten() };
    let bytes = if let Some(table) = relations.table(oid) {
        let sizes = sizes(table)?;
        match of {
            SizeOf::Relation => sizes.rows,
            SizeOf::Table => sizes.table(),
            SizeOf::Indexes => sizes.indexes(),
            SizeOf::Total => sizes.table() + sizes.indexes(),
        }
    } else if let Some(index) = relations.index(oid) {
        if of == SizeOf::Indexes {
            0
        } else if index.primary {
            // Checked against the store all the same, so that etcd answers NULL throughout.
            sizes(&index.table).map(|_| 0)?
        } else {
            let sizes = sizes(&index.table)?;
            sizes
                .indexes
                .iter()
                .find(|(name, _)| *name == index.name)
                .map(|(_, bytes)| *bytes)?
        }
    } else if relations.views.iter().any(|(view, _, _)| *view == oid) {
        0
    } else {
        return None;
    };
    i64::try_from(bytes).ok()
}
