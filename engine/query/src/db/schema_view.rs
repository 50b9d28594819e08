//! The catalog as one session sees it: the committed catalog, overlaid with the schema changes
//! its open transaction block has staged and not committed (see `db::txn`). Every lookup of a
//! table, view or index by a session goes through it, and so do its DataFusion context's
//! schema and the `pg_catalog` a server builds for it; other sessions see only what committed.

use std::sync::{Arc, Mutex, PoisonError};

use rowdex_catalog::{CatalogEdits, IndexDef, TableDef};

use crate::db::DbState;
use crate::db::txn::SessionTxn;
use crate::error::{Error, Result};

/// Where a session keeps its open transaction (None outside a transaction block).
pub(crate) type TxnSlot = Arc<Mutex<Option<Arc<SessionTxn>>>>;

/// A session's view of the catalog; cheap to clone, and always current: it reads the
/// session's transaction slot at each lookup.
#[derive(Clone)]
pub struct SchemaView {
    db: Arc<DbState>,
    txn: TxnSlot,
}

impl std::fmt::Debug for SchemaView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaView").finish_non_exhaustive()
    }
}

impl SchemaView {
    /// The catalog as the session whose transaction slot is `txn` sees it.
    pub(crate) fn new(db: Arc<DbState>, txn: TxnSlot) -> SchemaView {
        SchemaView { db, txn }
    }

    /// The committed catalog (no session, so no transaction block).
    pub(crate) fn committed(db: Arc<DbState>) -> SchemaView {
        SchemaView::new(db, TxnSlot::default())
    }

    fn with_edits<R>(&self, read: impl FnOnce(Option<&CatalogEdits>) -> R) -> R {
        let txn = self
            .txn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match txn {
            Some(txn) => txn.with_catalog(read),
            None => read(None),
        }
    }

    /// The table `name`, if the session can see one.
    pub fn table(&self, name: &str) -> Option<Arc<TableDef>> {
        self.with_edits(|edits| self.db.catalog.table_in(name, edits))
    }

    /// The table `name`, or `TableNotFound`.
    pub(crate) fn require_table(&self, name: &str) -> Result<Arc<TableDef>> {
        self.table(name).ok_or_else(|| Error::TableNotFound {
            table: name.to_string(),
        })
    }

    /// Every table the session can see, by name.
    pub fn tables(&self) -> Vec<Arc<TableDef>> {
        self.with_edits(|edits| self.db.catalog.tables_in(edits))
    }

    /// The defining SQL of the view `name`.
    pub(crate) fn view(&self, name: &str) -> Option<String> {
        self.with_edits(|edits| self.db.catalog.view_in(name, edits))
    }

    /// Every view's name.
    pub(crate) fn view_names(&self) -> Vec<String> {
        self.with_edits(|edits| self.db.catalog.view_names_in(edits))
    }

    /// Every view the session can see, with the query that defines it.
    pub fn views(&self) -> Vec<(String, String)> {
        self.with_edits(|edits| {
            let catalog = &self.db.catalog;
            catalog
                .view_names_in(edits)
                .into_iter()
                .filter_map(|name| catalog.view_in(&name, edits).map(|sql| (name, sql)))
                .collect()
        })
    }

    /// The table an index belongs to, with the index.
    pub(crate) fn find_index(&self, name: &str) -> Option<(Arc<TableDef>, IndexDef)> {
        self.with_edits(|edits| self.db.catalog.find_index_in(name, edits))
    }
}
