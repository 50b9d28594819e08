//! A transaction's characteristics as SQL names them: its isolation level and its access mode
//! (`BEGIN ISOLATION LEVEL ... READ ONLY`, `SET TRANSACTION ...`, `SET SESSION CHARACTERISTICS
//! AS TRANSACTION ...`).
//!
//! rowdex's transactions are optimistic and validate every read at COMMIT, so every level runs
//! with SERIALIZABLE's guarantees: the SQL standard lets a transaction run at a stricter level
//! than it asked for (PostgreSQL runs READ UNCOMMITTED as READ COMMITTED the same way). The
//! level asked for is kept and reported (`SHOW transaction_isolation`). The access mode is
//! enforced: a READ ONLY transaction refuses every statement that writes.

use datafusion::sql::sqlparser::ast::{
    TransactionAccessMode, TransactionIsolationLevel, TransactionMode,
};

use crate::error::{Error, Result};

/// The isolation levels of SQL, in PostgreSQL's spelling when shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
    #[default]
    Serializable,
}

impl IsolationLevel {
    /// The level as `SHOW transaction_isolation` prints it (`read committed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            IsolationLevel::ReadUncommitted => "read uncommitted",
            IsolationLevel::ReadCommitted => "read committed",
            IsolationLevel::RepeatableRead => "repeatable read",
            IsolationLevel::Serializable => "serializable",
        }
    }

    /// The level a `SET default_transaction_isolation = '...'` value names (any case, spaces
    /// or underscores between the words).
    pub fn from_name(name: &str) -> Option<IsolationLevel> {
        let words: Vec<String> = name
            .split(|c: char| c.is_whitespace() || c == '_' || c == '-')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["read", "uncommitted"] => Some(IsolationLevel::ReadUncommitted),
            ["read", "committed"] => Some(IsolationLevel::ReadCommitted),
            ["repeatable", "read"] => Some(IsolationLevel::RepeatableRead),
            ["serializable"] => Some(IsolationLevel::Serializable),
            _ => None,
        }
    }
}

/// What a transaction was asked to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Characteristics {
    pub isolation: IsolationLevel,
    pub read_only: bool,
}

impl Characteristics {
    /// These characteristics with `modes` (from BEGIN or SET TRANSACTION) applied.
    pub(crate) fn with_modes(mut self, modes: &[TransactionMode]) -> Result<Characteristics> {
        for mode in modes {
            match mode {
                TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => {
                    self.read_only = true;
                }
                TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => {
                    self.read_only = false;
                }
                TransactionMode::IsolationLevel(level) => {
                    self.isolation = match level {
                        TransactionIsolationLevel::ReadUncommitted => {
                            IsolationLevel::ReadUncommitted
                        }
                        TransactionIsolationLevel::ReadCommitted => IsolationLevel::ReadCommitted,
                        TransactionIsolationLevel::RepeatableRead => IsolationLevel::RepeatableRead,
                        TransactionIsolationLevel::Serializable => IsolationLevel::Serializable,
                        TransactionIsolationLevel::Snapshot => {
                            return Err(Error::Unsupported {
                                what: "ISOLATION LEVEL SNAPSHOT (PostgreSQL's levels are READ \
                                       UNCOMMITTED, READ COMMITTED, REPEATABLE READ and \
                                       SERIALIZABLE)"
                                    .into(),
                            });
                        }
                    };
                }
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_read_as_postgresql_writes_them() {
        for level in [
            IsolationLevel::ReadUncommitted,
            IsolationLevel::ReadCommitted,
            IsolationLevel::RepeatableRead,
            IsolationLevel::Serializable,
        ] {
            assert_eq!(IsolationLevel::from_name(level.name()), Some(level));
        }
        assert_eq!(
            IsolationLevel::from_name("REPEATABLE_READ"),
            Some(IsolationLevel::RepeatableRead)
        );
        assert_eq!(IsolationLevel::from_name("snapshot"), None);
    }
}
