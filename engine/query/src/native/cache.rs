//! The compiled-query cache for SQL text: a query written with different literals each time
//! (`... WHERE id = 7`, then `... WHERE id = 8`) compiles once. Its literals are lifted out at
//! the token level into parameters, and the text with placeholders in their place is the key;
//! each run binds the literals to the cached native query, as a prepared statement does.
//!
//! Only queries the native executor compiles are kept; the cache is shared by every session of
//! a database, holds at most `CAPACITY` queries (it is emptied when full), and an entry whose
//! table has changed since is compiled again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rowdex_codec::Datum;

use crate::hints::QueryHints;
use crate::native::NativeQuery;

/// Queries kept before the cache starts over.
const CAPACITY: usize = 1024;

/// A cached query and the hints its text carries.
#[derive(Debug)]
pub(crate) struct CachedQuery {
    pub query: NativeQuery,
    pub hints: QueryHints,
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

/// A statement's text with its literals lifted out.
#[derive(Debug)]
pub(crate) struct Lifted {
    /// The text with `$1`, `$2`, ... where the literals were.
    pub key: String,
    pub literals: Vec<Datum>,
}

impl Lifted {
    /// Lifts the number and string literals out of a single statement without placeholders of
    /// its own; None for anything else (several statements, a literal the native executor
    /// would not read the same way, a tokenizer error, which the normal path reports).
    pub(crate) fn from_sql(sql: &str) -> Option<Lifted> {
        use datafusion::sql::sqlparser::dialect::GenericDialect;
        use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

        let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
        let mut key = String::with_capacity(sql.len());
        let mut literals = Vec::new();
        let mut ended = false;
        for token in &tokens {
            if ended && !matches!(token, Token::Whitespace(_) | Token::SemiColon) {
                return None;
            }
            match token {
                Token::SemiColon => ended = true,
                Token::Placeholder(_) => return None,
                Token::Number(text, false) => {
                    literals.push(super::compile::number(text)?);
                    key.push_str(&format!("${}", literals.len()));
                    continue;
                }
                Token::SingleQuotedString(text) => {
                    literals.push(Datum::Text(text.clone()));
                    key.push_str(&format!("${}", literals.len()));
                    continue;
                }
                _ => {}
            }
            key.push_str(&token.to_string());
        }
        Some(Lifted { key, literals })
    }
}
