//! Where the binary's database lives: a directory (the default), memory, or an etcd cluster.

use std::path::PathBuf;

use rowdex::Durability;
use rowdex::{Database, Result};

/// The database a command opens.
pub enum Location {
    Dir(PathBuf),
    Memory,
    /// `etcd://host:port[,host:port...][/name]`.
    Etcd(String),
}

impl Location {
    /// From the options every command takes: `--memory`, `--store ADDRESS`, else DIR.
    pub fn from_options(dir: PathBuf, memory: bool, store: Option<String>) -> Location {
        match (memory, store) {
            (true, _) => Location::Memory,
            (false, Some(address)) => Location::Etcd(address),
            (false, None) => Location::Dir(dir),
        }
    }

    pub async fn open(&self) -> Result<Database> {
        self.open_with_durability(Durability::default()).await
    }

    /// Opens the database with `durability` as the default of its commits (a directory's; a
    /// cluster's and memory's commits do one thing whatever is asked).
    pub async fn open_with_durability(&self, durability: Durability) -> Result<Database> {
        match self {
            Location::Dir(dir) => Database::open_with_durability(dir, durability).await,
            Location::Memory => Database::open_memory().await,
            Location::Etcd(address) => Database::open_etcd(address).await,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Dir(dir) => write!(f, "{}", dir.display()),
            Location::Memory => write!(f, "an in-memory database"),
            Location::Etcd(address) => write!(f, "{address}"),
        }
    }
}
