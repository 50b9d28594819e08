//! A transaction's characteristics as SQL names them: its isolation level and its access mode
//! (`BEGIN ISOLATION LEVEL ... READ ONLY`, `SET TRANSACTION ...`, `SET SESSION CHARACTERISTICS
//! AS TRANSACTION ...`, `default_transaction_isolation`).
//!
//! The levels are PostgreSQL's, READ COMMITTED the default as there (what each means is
//! `db::txn`'s): READ COMMITTED reads each statement from a fresh snapshot and makes a writer
//! wait for the rows another transaction is changing; REPEATABLE READ reads the whole
//! transaction from one snapshot, waits the same way and fails with a serialization failure
//! when a row it changes was changed since its snapshot (snapshot isolation: write skew is
//! possible); SERIALIZABLE validates every read at COMMIT (no anomaly; a conflict aborts
//! instead of waiting). READ UNCOMMITTED runs as READ COMMITTED, as in PostgreSQL. The access
//! mode is enforced: a READ ONLY transaction refuses every statement that writes.

use datafusion::sql::sqlparser::ast::{
    TransactionAccessMode, TransactionIsolationLevel, TransactionMode,
};

use rowdex_store::Validation;

use crate::error::{Error, Result};

/// The isolation levels of SQL, in PostgreSQL's spelling when shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    ReadUncommitted,
    #[default]
    ReadCommitted,
    RepeatableRead,
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

    /// Which reads a transaction at this level validates at COMMIT (see `db::txn`).
    pub(crate) fn validation(self) -> Validation {
        match self {
            IsolationLevel::Serializable => Validation::EveryRead,
            IsolationLevel::ReadUncommitted
            | IsolationLevel::ReadCommitted
            | IsolationLevel::RepeatableRead => Validation::GuardedReads,
        }
    }

    /// Whether each statement at this level reads from a snapshot of its own.
    pub(crate) fn reads_per_statement(self) -> bool {
        matches!(
            self,
            IsolationLevel::ReadUncommitted | IsolationLevel::ReadCommitted
        )
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
