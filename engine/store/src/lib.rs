//! rowdex-store: the ordered key-value layer underneath rowdex.
//!
//! Everything above this crate sees the store only through three traits:
//!
//! * [`KvRead`] — point reads, batched point reads and paged range scans in either direction;
//! * [`KvStore`] — the store itself: atomic [`WriteBatch`]es, point-in-time snapshots,
//!   optimistic transactions and an explicit durability barrier ([`KvStore::flush`]);
//! * [`Transaction`] — an optimistic transaction that reads a snapshot, sees its own writes and
//!   commits only if nothing it read has changed in the meantime.
//!
//! Three backends implement them: [`MemoryStore`] (multi-version in-memory map, for tests and
//! scratch data) and [`FjallStore`] (the on-disk LSM tree of the `fjall` crate), each a
//! [`Store`] over its backend, and [`EtcdStore`] (a replicated etcd cluster, shared by several
//! processes). The transactions are implemented once, in the `optimistic` module, so every
//! backend has the same isolation semantics: memory and fjall validate a commit under a lock in
//! the process, etcd by the compares of one server-side transaction.
//!
//! Limits shared by all backends (they come from fjall's on-disk format and are enforced
//! everywhere so that code tested on the memory store behaves the same on disk): keys are
//! 1..=[`MAX_KEY_LEN`] bytes, values at most [`MAX_VALUE_LEN`] bytes.

mod api;
mod batch;
mod durability;
mod error;
pub mod etcd_store;
pub mod expiry;
pub mod faulty;
mod fjall_store;
pub mod hooked;
pub mod locks;
mod memory;
pub mod metered;
mod optimistic;
mod range;
mod storage_options;
mod store_metrics;
mod stream;

pub use api::{
    AccessCosts, Capabilities, KvRead, KvStore, RANGES_PER_BATCH, Savepoint, Transaction,
    Validation,
};
pub use batch::{MAX_KEY_LEN, MAX_VALUE_LEN, Mutation, WriteBatch};
pub use durability::{ASYNC_WAL_PERIOD, Durability};
pub use error::{Result, StoreError};
pub use etcd_store::{EtcdAddress, EtcdOptions, EtcdStore};
pub use fjall_store::{
    DEFAULT_FJALL_CACHE_BYTES, FjallStore, INGEST_MIN_MUTATIONS, JOURNAL_TRIM_MIN_BYTES,
    PlacedFigures,
};
pub use memory::MemoryStore;
pub use optimistic::Store;
pub use range::{CountPage, Direction, EntryVisitor, KeyRange, ScanPage};
pub use storage_options::{BlockEncoding, Compression, StorageOptions};
pub use store_metrics::StoreMetrics;
pub use stream::{scan_ranges_stream, scan_stream};
