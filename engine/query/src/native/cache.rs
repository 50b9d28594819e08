//! The compiled-query cache for SQL text: a query written with different literals each time
//! (`... WHERE id = 7`, then `... WHERE id = 8`) compiles once. Its literals are lifted out at
//! the token level into parameters (`sql::literals::Lifted`), and the text with placeholders in
//! their place is the key; each run binds the literals to the cached native query, as a
//! prepared statement does.
//!
//! UPDATE and DELETE texts (without RETURNING) are kept the same way, in their native form
//! (`native::write`), and run as a prepared write runs. An INSERT ... VALUES text of a few
//! rows is kept parsed, with placeholders where its literals were: a run writes its integers
//! and strings back in (`sql::literals::bind_literals`) instead of parsing the text again.
//!
//! Only statements the native executor compiles are kept; the cache is shared by every session of
//! a database, holds at most `CAPACITY` queries (it is emptied when full), and an entry whose
//! table has changed since is compiled again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::db::schema_view::SchemaView;
use crate::native::select::NativeSelect;
use crate::native::write::NativeWrite;
use crate::sql::hints::QueryHints;
use crate::sql::parse::ParsedStatement;

/// Queries kept before the cache starts over.
const CAPACITY: usize = 1024;

/// A cached statement's native form.
#[derive(Debug)]
pub(crate) enum CachedForm {
    Query(NativeSelect),
    Write(NativeWrite),
    /// An INSERT ... VALUES: nothing compiled, only parsed (`CachedQuery::parsed`).
    Insert,
}

/// A cached statement, the hints its text carries, and the statement it was compiled from
/// (with its literals as parameters: a write runs it, and a query's result columns are named
/// from it in a session that follows PostgreSQL).
#[derive(Debug)]
pub(crate) struct CachedQuery {
    pub form: CachedForm,
    pub hints: QueryHints,
    pub parsed: ParsedStatement,
}

impl CachedQuery {
    /// Whether the table the entry was compiled against is still the table's definition.
    pub(crate) fn is_current(&self, schema: &SchemaView) -> bool {
        match &self.form {
            CachedForm::Query(query) => query.is_current(schema),
            CachedForm::Write(write) => write.is_current(schema),
            // Bound and run as a new statement: nothing of the table's definition is kept.
            CachedForm::Insert => true,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct QueryCache {
    entries: Mutex<HashMap<String, Arc<CachedQuery>>>,
}

impl QueryCache {
    pub(crate) fn get(&self, key: &str) -> Option<Arc<CachedQuery>> {
        self.lock().get(key).cloned()
    }

    pub(crate) fn insert(&self, key: String, entry: Arc<CachedQuery>) {
        let mut entries = self.lock();
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(key, entry);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CachedQuery>>> {
        // The map holds immutable entries; a panic elsewhere cannot leave it half-updated.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
