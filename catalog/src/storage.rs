//! HBase's storage attributes of a table's column families, as declared (`WITH (COMPRESSION =
//! 'LZ4', o.BLOCKSIZE = 16384)`): the table's own apply to every family, a family's own on top
//! of them. The catalog keeps them as written, for display; the query layer maps them onto the
//! store's options (`rowdex_store::StorageOptions`) for each family's key prefix.

use serde::{Deserialize, Serialize};

/// One family's (or the whole table's) storage attributes; `None`: not declared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageAttributes {
    /// `COMPRESSION`: `NONE`, `LZ4`, `GZ`, `SNAPPY`, `ZSTD`, `LZO` or `BZIP2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// `BLOCKSIZE`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u32>,
    /// `BLOOMFILTER`: `NONE`, `ROW`, `ROWCOL` or `ROWPREFIX_FIXED_LENGTH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bloom_filter: Option<String>,
    /// `DATA_BLOCK_ENCODING`: `NONE`, `PREFIX`, `DIFF`, `FAST_DIFF` or `ROW_INDEX_V1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_block_encoding: Option<String>,
    /// `IN_MEMORY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_memory: Option<bool>,
    /// `BLOCKCACHE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_cache: Option<bool>,
    /// `MAX_FILESIZE`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_size: Option<u64>,
    /// `MEMSTORE_FLUSHSIZE`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memstore_flush_size: Option<u64>,
}

impl StorageAttributes {
    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        *self == StorageAttributes::default()
    }

    /// These attributes with `over`'s declared ones in their place.
    pub fn overlaid(&self, over: &StorageAttributes) -> StorageAttributes {
        StorageAttributes {
            compression: over
                .compression
                .clone()
                .or_else(|| self.compression.clone()),
            block_size: over.block_size.or(self.block_size),
            bloom_filter: over
                .bloom_filter
                .clone()
                .or_else(|| self.bloom_filter.clone()),
            data_block_encoding: over
                .data_block_encoding
                .clone()
                .or_else(|| self.data_block_encoding.clone()),
            in_memory: over.in_memory.or(self.in_memory),
            block_cache: over.block_cache.or(self.block_cache),
            max_file_size: over.max_file_size.or(self.max_file_size),
            memstore_flush_size: over.memstore_flush_size.or(self.memstore_flush_size),
        }
    }

    /// The declared attributes as `NAME=value`, HBase's names lower-cased (as PostgreSQL
    /// lists storage parameters).
    pub fn listed(&self) -> Vec<String> {
        let mut listed = Vec::new();
        let mut add = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                listed.push(format!("{name}={value}"));
            }
        };
        add("compression", self.compression.clone());
        add("blocksize", self.block_size.map(|n| n.to_string()));
        add("bloomfilter", self.bloom_filter.clone());
        add("data_block_encoding", self.data_block_encoding.clone());
        add("in_memory", self.in_memory.map(|b| b.to_string()));
        add("blockcache", self.block_cache.map(|b| b.to_string()));
        add("max_filesize", self.max_file_size.map(|n| n.to_string()));
        add(
            "memstore_flushsize",
            self.memstore_flush_size.map(|n| n.to_string()),
        );
        listed
    }
}
