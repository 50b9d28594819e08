//! The catalog changes one store transaction has made and not yet published.
//!
//! A schema change is staged in a store transaction (`Catalog::stage_*`): its definitions are
//! written there, and what the in-memory catalog must become once the transaction commits is
//! recorded here. A statement of its own commits at once and publishes the edits
//! ([`crate::Catalog::publish`]); a transaction block keeps them until its COMMIT, and until
//! then its own statements see the catalog through them (`Catalog::table_in` and the other
//! `*_in` readers) while every other session sees the catalog as committed. A ROLLBACK drops
//! them with the transaction's writes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::index::IndexDef;
use crate::table::TableDef;

/// What committing a transaction changes in the catalog, latest change per name.
#[derive(Debug, Clone, Default)]
pub struct CatalogEdits {
    /// The catalog version the first change read and the last one wrote.
    pub(crate) versions: Option<(u64, u64)>,
    /// Each table named by a change: its definition now, or None once dropped (or renamed).
    pub(crate) tables: BTreeMap<String, Option<Arc<TableDef>>>,
    /// Each view named by a change: its defining SQL now, or None once dropped.
    pub(crate) views: BTreeMap<String, Option<String>>,
    /// Tables dropped: their rows and index entries are deleted once the drop committed.
    pub(crate) dropped_tables: Vec<Arc<TableDef>>,
    /// Indexes dropped: their entries are deleted once the drop committed.
    pub(crate) dropped_indexes: Vec<IndexDef>,
    /// Sequences created by the transaction, which only it can draw from until it commits.
    pub(crate) created_sequences: BTreeSet<String>,
    /// Sequences dropped: what a process kept of their values is forgotten once committed.
    pub(crate) dropped_sequences: Vec<String>,
}

impl CatalogEdits {
    pub fn is_empty(&self) -> bool {
        self.versions.is_none()
            && self.created_sequences.is_empty()
            && self.dropped_sequences.is_empty()
    }

    /// The table `name` as the transaction left it: `Some(None)` if it dropped (or renamed)
    /// it, None if it did not touch the name.
    pub fn table(&self, name: &str) -> Option<Option<Arc<TableDef>>> {
        self.tables.get(name).cloned()
    }

    /// The view `name` as the transaction left it, as [`CatalogEdits::table`].
    pub fn view(&self, name: &str) -> Option<Option<String>> {
        self.views.get(name).cloned()
    }

    /// Whether the transaction created the sequence `name` (so that it alone can see it).
    pub fn created_sequence(&self, name: &str) -> bool {
        self.created_sequences.contains(name)
    }

    /// The tables and indexes whose stored entries are left to delete after the commit.
    pub fn dropped(&self) -> (&[Arc<TableDef>], &[IndexDef]) {
        (&self.dropped_tables, &self.dropped_indexes)
    }

    /// The sequences dropped.
    pub fn dropped_sequences(&self) -> &[String] {
        &self.dropped_sequences
    }

    /// Records the catalog version a change read and wrote: the first read is kept.
    pub(crate) fn advanced(&mut self, read: u64, written: u64) {
        let first = self.versions.map_or(read, |(first, _)| first);
        self.versions = Some((first, written));
    }

    pub(crate) fn put_table(&mut self, def: Arc<TableDef>) {
        self.tables.insert(def.name.clone(), Some(def));
    }

    pub(crate) fn remove_table(&mut self, name: &str) {
        self.tables.insert(name.to_string(), None);
    }
}
