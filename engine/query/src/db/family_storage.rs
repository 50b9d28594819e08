//! The store's options for a column family's storage attributes (see
//! `execute::ddl::storage_attributes`, which declares them), and giving up a dropped table's
//! keyspaces.

use rowdex_catalog::{StorageAttributes, TableDef};
use rowdex_store::{BlockEncoding, Compression, KvStore, StorageOptions};

use crate::error::Result;

/// The store's options for `attributes`.
pub(crate) fn store_options(attributes: &StorageAttributes) -> StorageOptions {
    StorageOptions {
        compression: attributes.compression.as_deref().map(|codec| match codec {
            "NONE" => Compression::None,
            _ => Compression::Lz4,
        }),
        block_size: attributes.block_size,
        bloom_filter: attributes
            .bloom_filter
            .as_deref()
            .map(|filter| filter != "NONE"),
        block_encoding: attributes
            .data_block_encoding
            .as_deref()
            .map(|encoding| match encoding {
                "NONE" => BlockEncoding::Plain,
                "ROW_INDEX_V1" => BlockEncoding::PrefixHashIndex,
                _ => BlockEncoding::Prefix,
            }),
        table_size: attributes.max_file_size,
        memtable_size: attributes.memstore_flush_size,
    }
}

/// Gives up the keyspaces of a dropped table's families (their entries are deleted already).
pub(crate) async fn release_families(store: &dyn KvStore, def: &TableDef) -> Result<()> {
    for family in def.family_numbers() {
        if !store_options(&def.family_storage(family)).is_default() {
            store
                .place(&def.family_prefix(family), &StorageOptions::default())
                .await?;
        }
    }
    Ok(())
}
