//! The crate's one error type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The engine rejected a statement; the message is the engine's own, so `statement error`
    /// regexes in test files match what users of rowdex see. Boxed: the engine's error is
    /// large and travels through every `Result` here.
    #[error(transparent)]
    Engine(Box<rowdex::Error>),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create a temporary directory for the fjall backend: {0}")]
    TempDir(std::io::Error),
    /// The etcd backend's cluster did not start (is etcd installed? scripts/install-etcd).
    #[error("cannot start the etcd backend's cluster: {0}")]
    Cluster(String),
    #[error(transparent)]
    Parse(#[from] sqllogictest::ParseError),
    /// SQLite rejected a statement the differential generator wrote: a generator bug, since
    /// SQLite is the reference.
    #[error("SQLite rejected a generated statement: {source} [{sql}]")]
    SqliteRejected {
        sql: String,
        source: rusqlite::Error,
    },
    /// `--allow` named no generator restriction.
    #[error("no generator restriction is named {name}; known: {}", known.join(", "))]
    UnknownRestriction {
        name: String,
        known: Vec<&'static str>,
    },
}

impl From<rowdex::Error> for Error {
    fn from(error: rowdex::Error) -> Self {
        Error::Engine(Box::new(error))
    }
}
