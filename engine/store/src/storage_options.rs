//! How the store keeps the entries under one key prefix, when they are kept apart from the
//! rest: HBase's per-family storage attributes, in the store's terms. A store that keeps
//! everything alike (memory, etcd) places nothing; fjall gives a placed prefix a keyspace of
//! its own, created with these options (see `fjall_store::placement`).

use serde::{Deserialize, Serialize};

/// How data blocks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Compression {
    /// Uncompressed.
    None,
    /// LZ4 (the only codec the fjall build has).
    Lz4,
}

/// How the keys of a data block are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockEncoding {
    /// Every key whole: no prefix shared with the key before it.
    Plain,
    /// Keys share their prefix with the key before (restarting every 16 keys).
    Prefix,
    /// Shared prefixes and a hash index in each block, so a point read finds its key without
    /// a binary search.
    PrefixHashIndex,
}

/// The options of one placed prefix; `None` leaves a choice to the store's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageOptions {
    pub compression: Option<Compression>,
    /// Bytes of a data block (before compression).
    pub block_size: Option<u32>,
    /// Whether each table keeps a bloom filter over its keys (10 bits a key).
    pub bloom_filter: Option<bool>,
    pub block_encoding: Option<BlockEncoding>,
    /// The size compaction cuts tables at.
    pub table_size: Option<u64>,
    /// The bytes a memtable takes before it is flushed into a table.
    pub memtable_size: Option<u64>,
    /// Seconds between sweeps: the prefix's keyspace is flushed and compacted whole this
    /// often, so that what expired (see `crate::expiry`) leaves even where no write would
    /// compact it (old keys of a time-ordered table sit in tables no new write overlaps).
    /// Changing it alone moves nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_seconds: Option<u64>,
}

impl StorageOptions {
    /// Whether no option is set (the prefix needs no keyspace of its own).
    pub fn is_default(&self) -> bool {
        *self == StorageOptions::default()
    }

    /// Whether `other` lays entries out as these do (they differ at most in their sweeps).
    pub fn same_layout(&self, other: &StorageOptions) -> bool {
        let unswept = |options: &StorageOptions| StorageOptions {
            sweep_seconds: None,
            ..options.clone()
        };
        unswept(self) == unswept(other)
    }
}
