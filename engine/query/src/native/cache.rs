//! The compiled-query cache for SQL text: a query written with different literals each time
//! (`... WHERE id = 7`, then `... WHERE id = 8`) compiles once. Its literals are lifted out at
//! the token level into parameters (`sql::literals::Lifted`), and the text with placeholders in
//! their place is the key; each run binds the literals to the cached native query, as a
//! prepared statement does.
//!
//! Only queries the native executor compiles are kept; the cache is shared by every session of
//! a database, holds at most `CAPACITY` queries (it is emptied when full), and an entry whose
//! table has changed since is compiled again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use datafusion::sql::sqlparser::ast::Statement;

use crate::native::compile::NativeQuery;
use crate::sql::hints::QueryHints;

/// Queries kept before the cache starts over.
const CAPACITY: usize = 1024;

/// A cached query, the hints its text carries, and the statement it was compiled from (for the
/// names of its result columns in a session that follows PostgreSQL).
#[derive(Debug)]
pub(crate) struct CachedQuery {
    pub query: NativeQuery,
    pub hints: QueryHints,
    pub statement: Statement,
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
