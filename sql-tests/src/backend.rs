//! Storage backends a file can run on, each giving a fresh, empty database per file.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use rowdex::Database;
use rowdex_store::etcd_store::local_cluster::LocalEtcdCluster;
use tempfile::TempDir;

use crate::Error;

/// Which store a database lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The in-memory store: fast, gone when dropped.
    Memory,
    /// The durable fjall store, in a temporary directory.
    Fjall,
    /// An etcd cluster of three members on loopback, started at the first file that asks for
    /// it (its members stop when the process exits); each file gets a database of its own.
    Etcd,
}

impl Backend {
    pub const ALL: [Backend; 2] = [Backend::Memory, Backend::Fjall];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Fjall => "fjall",
            Backend::Etcd => "etcd",
        }
    }

    /// Opens an empty database on this backend.
    pub async fn open(self) -> Result<FreshDatabase, Error> {
        match self {
            Backend::Memory => Ok(FreshDatabase {
                db: Database::open_memory().await?,
                _dir: None,
            }),
            Backend::Fjall => {
                let dir = tempfile::Builder::new()
                    .prefix("rowdex-slt-")
                    .tempdir()
                    .map_err(Error::TempDir)?;
                let db = Database::open(dir.path()).await?;
                Ok(FreshDatabase {
                    db,
                    _dir: Some(dir),
                })
            }
            Backend::Etcd => {
                static DATABASES: AtomicUsize = AtomicUsize::new(0);
                let name = format!("slt{}", DATABASES.fetch_add(1, Ordering::Relaxed));
                let cluster =
                    LocalEtcdCluster::shared().map_err(|e| Error::Cluster(e.to_string()))?;
                let address = cluster.address(&name).to_string();
                Ok(FreshDatabase {
                    db: Database::open_etcd(&address).await?,
                    _dir: None,
                })
            }
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A database opened for one file, together with the directory that backs it.
#[derive(Debug)]
pub struct FreshDatabase {
    // Field order matters: the database is dropped before its directory is deleted.
    db: Database,
    _dir: Option<TempDir>,
}

impl FreshDatabase {
    pub fn database(&self) -> &Database {
        &self.db
    }
}
