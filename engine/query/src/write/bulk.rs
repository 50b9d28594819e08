//! Removing what lives under a key prefix, in batches: the rows, family entries, versions and
//! index entries of a dropped table, the entries of a dropped index, and at open the indexes
//! whose build a stopped process left unfinished. The catalog lets go of the object first, so
//! nothing can read the keys meanwhile (ids are never reused).

use futures::StreamExt;
use rowdex_catalog::{CatalogEdits, IndexState, TableDef, keyspace};
use rowdex_store::{Direction, KeyRange, KvStore, WriteBatch, scan_stream};

use crate::db::DbState;
use crate::db::family_storage::{release_index, release_table};
use crate::error::Result;

/// Keys deleted per batch when a dropped table or index is cleaned up.
const DELETE_BATCH: usize = 1024;

/// Removes an index from the catalog, then deletes its entries.
pub(crate) async fn drop_index(db: &DbState, name: &str) -> Result<()> {
    let (_, index) = db.catalog.drop_index(name).await?;
    delete_prefix(db.store.as_ref(), &index.prefix()).await?;
    release_index(db.store.as_ref(), &index.prefix()).await
}

/// Deletes every key under `prefix`, in batches. Used once the catalog no longer points at the
/// keys (ids are never reused, so nothing can read them meanwhile).
async fn delete_prefix(store: &dyn KvStore, prefix: &[u8]) -> Result<()> {
    let reader = store.snapshot();
    let mut entries = scan_stream(
        reader,
        KeyRange::prefix(prefix),
        Direction::Forward,
        DELETE_BATCH,
    )
    .chunks(DELETE_BATCH);
    while let Some(chunk) = entries.next().await {
        let mut batch = WriteBatch::new();
        for entry in chunk {
            batch.delete(entry?.0);
        }
        store.write(batch).await?;
    }
    Ok(())
}

/// Drops indexes whose build was interrupted (the process stopped during CREATE INDEX).
pub(crate) async fn drop_unfinished_indexes(db: &DbState) -> Result<()> {
    for table in db.catalog.tables() {
        for index in &table.indexes {
            if index.state == IndexState::Building {
                drop_index(db, &index.name).await?;
            }
        }
    }
    Ok(())
}

/// Removes a table's definition (and its sequences), then its rows and index entries.
pub(crate) async fn drop_table(db: &DbState, name: &str) -> Result<()> {
    let def = db.catalog.drop_table(name).await?;
    delete_table_entries(db, &def).await
}

/// Deletes the stored entries of the tables and indexes that committed `edits` dropped.
pub(crate) async fn delete_dropped(db: &DbState, edits: &CatalogEdits) -> Result<()> {
    let (tables, indexes) = edits.dropped();
    for def in tables {
        delete_table_entries(db, def).await?;
    }
    for index in indexes {
        delete_prefix(db.store.as_ref(), &index.prefix()).await?;
        release_index(db.store.as_ref(), &index.prefix()).await?;
    }
    for sequence in edits.dropped_sequences() {
        db.sequences.forget(sequence);
    }
    Ok(())
}

/// Deletes a dropped table's rows, index entries, counts and statistics, and forgets what this
/// process kept of it (its sequences' ranges among them).
async fn delete_table_entries(db: &DbState, def: &TableDef) -> Result<()> {
    db.sequences.forget_all();
    // The definition is gone, so rows and index entries are unreachable (ids are never
    // reused); deleting them afterwards in batches keeps any one batch small.
    let store = db.store.as_ref();
    delete_prefix(store, &def.prefix()).await?;
    if def.has_families() {
        delete_prefix(
            store,
            &rowdex_catalog::keyspace::family_prefix(def.id, None),
        )
        .await?;
    }
    delete_prefix(store, &def.history_prefix()).await?;
    for index in &def.indexes {
        delete_prefix(store, &index.prefix()).await?;
    }
    release_table(store, def).await?;
    if let Ok(mut rowids) = db.next_rowids.lock() {
        rowids.remove(&def.id);
    }
    let mut batch = WriteBatch::new();
    batch.delete(keyspace::row_count_key(def.id));
    batch.delete(keyspace::statistics_key(def.id));
    store.write(batch).await?;
    delete_prefix(store, &keyspace::row_delta_prefix(def.id)).await?;
    db.stats.forget(def.id);
    Ok(())
}
