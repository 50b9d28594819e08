//! How far a commit is pushed before it is acknowledged: HBase's four WAL durabilities.
//!
//! A store is opened with a default, and a commit may ask for another (a table's DURABILITY, a
//! session's `synchronous_commit`): see [`WriteBatch::durability`](crate::WriteBatch) and
//! [`Transaction::set_durability`](crate::Transaction::set_durability). The on-disk store
//! (fjall) honours each; the in-memory store keeps nothing across a restart whatever is
//! asked, and the etcd store commits every write through its members' raft log, fsynced by a
//! quorum, whatever is asked.
//!
//! What an acknowledged commit survives, on the fjall store:
//!
//! | durability  | process killed (SIGKILL)            | OS crash, power loss          |
//! |-------------|-------------------------------------|-------------------------------|
//! | `SKIP_WAL`  | lost until pushed (see below)       | lost until synced             |
//! | `ASYNC_WAL` | lost if within [`ASYNC_WAL_PERIOD`] | lost until synced             |
//! | `SYNC_WAL`  | survives                            | lost until synced             |
//! | `FSYNC_WAL` | survives                            | survives                      |
//!
//! fjall journals every write; it cannot leave one out of its journal as HBase's SKIP_WAL
//! does. What rowdex can do, and does, is leave the journal record in the process's own
//! buffer (fjall's journal writer holds 8 KiB): a SKIP_WAL commit is "pushed" to the operating
//! system only when something later pushes the journal (a SYNC_WAL or FSYNC_WAL commit of any
//! table, the ASYNC_WAL flusher, the buffer filling, a memtable flush, a checkpoint or a clean
//! close). So a kill loses the SKIP_WAL commits since the last push, not, as on HBase, every
//! one since the last memstore flush. Whatever is lost is lost whole, in commit order: the
//! journal is replayed up to its last complete batch.

use serde::{Deserialize, Serialize};

/// How often the fjall store pushes the journal when ASYNC_WAL commits wait in it (HBase's
/// `hbase.regionserver.optionallogflushinterval`, 1 s by default).
pub const ASYNC_WAL_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// How far a commit is pushed before it is acknowledged (see the module documentation), from
/// weakest to strongest.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Durability {
    /// The journal record stays in the process's buffer until something pushes it.
    #[serde(rename = "SKIP_WAL")]
    SkipWal,
    /// The journal is pushed to the OS within [`ASYNC_WAL_PERIOD`] by a background flusher.
    #[serde(rename = "ASYNC_WAL")]
    AsyncWal,
    /// The journal is handed to the OS (`write(2)`) before the commit returns: the commit
    /// survives the process being killed, not an OS crash or power loss.
    /// [`KvStore::flush`](crate::KvStore::flush) upgrades everything written so far to
    /// `FsyncWal`.
    #[default]
    #[serde(rename = "SYNC_WAL")]
    SyncWal,
    /// The journal is fsynced before the commit returns: it survives power loss.
    #[serde(rename = "FSYNC_WAL")]
    FsyncWal,
}

impl Durability {
    /// Every durability, weakest first.
    pub const ALL: [Durability; 4] = [
        Durability::SkipWal,
        Durability::AsyncWal,
        Durability::SyncWal,
        Durability::FsyncWal,
    ];

    /// HBase's name: `SKIP_WAL`, `ASYNC_WAL`, `SYNC_WAL`, `FSYNC_WAL`.
    pub fn name(self) -> &'static str {
        match self {
            Durability::SkipWal => "SKIP_WAL",
            Durability::AsyncWal => "ASYNC_WAL",
            Durability::SyncWal => "SYNC_WAL",
            Durability::FsyncWal => "FSYNC_WAL",
        }
    }

    /// The durability named `name` (HBase's names, any case).
    pub fn from_name(name: &str) -> Option<Durability> {
        Durability::ALL
            .into_iter()
            .find(|durability| durability.name().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
