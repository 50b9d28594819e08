//! Where the store keeps a table's entries: each column family with the options its storage
//! attributes ask for (see `execute::ddl::storage_attributes`, which declares them), and, for
//! a table with a TTL, every prefix of the table (families, indexes, older versions) in a
//! keyspace swept once per half TTL (`StorageOptions::sweep_seconds`), so that expired entries
//! leave even where no write compacts them. A prefix whose options are all defaults stays in
//! the shared keyspace.

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
        sweep_seconds: None,
    }
}

/// Seconds between the sweeps of a table with a TTL of `ttl` seconds: half of it, from a second
/// to an hour.
fn sweep_seconds(ttl: u64) -> u64 {
    (ttl / 2).clamp(1, 3600)
}

/// Every prefix of `def` the store keeps apart, with its options (defaults: kept with the
/// rest).
pub(crate) fn table_placements(def: &TableDef) -> Vec<(Vec<u8>, StorageOptions)> {
    let sweep = def.ttl_seconds.map(sweep_seconds);
    let swept = |options: StorageOptions| StorageOptions {
        sweep_seconds: sweep,
        ..options
    };
    let mut placements: Vec<(Vec<u8>, StorageOptions)> = def
        .family_numbers()
        .map(|family| {
            let options = swept(store_options(&def.family_storage(family)));
            (def.family_prefix(family), options)
        })
        .collect();
    if sweep.is_some() {
        placements.extend(
            def.indexes
                .iter()
                .map(|index| (index.prefix(), swept(StorageOptions::default()))),
        );
        if def.keeps_history() {
            placements.push((def.history_prefix(), swept(StorageOptions::default())));
        }
    }
    placements
}

/// Moves each prefix of `def` whose options differ from `before`'s (a table just created:
/// from the defaults). Returns whether the store keeps prefixes apart (false: it keeps every
/// table alike).
pub(crate) async fn place_table(
    store: &dyn KvStore,
    def: &TableDef,
    before: Option<&TableDef>,
) -> Result<bool> {
    let was = before.map(table_placements).unwrap_or_default();
    let mut honoured = true;
    for (prefix, options) in table_placements(def) {
        let previous = was
            .iter()
            .find(|(p, _)| *p == prefix)
            .map_or_else(StorageOptions::default, |(_, o)| o.clone());
        if options != previous {
            honoured &= store.place(&prefix, &options).await?;
        }
    }
    Ok(honoured)
}

/// Gives up the keyspaces of a dropped table (its entries are deleted already).
pub(crate) async fn release_table(store: &dyn KvStore, def: &TableDef) -> Result<()> {
    for (prefix, options) in table_placements(def) {
        if !options.is_default() {
            store.place(&prefix, &StorageOptions::default()).await?;
        }
    }
    Ok(())
}

/// Gives up the keyspace of a dropped index (its entries are deleted already).
pub(crate) async fn release_index(store: &dyn KvStore, prefix: &[u8]) -> Result<()> {
    if store
        .placements()
        .iter()
        .any(|(placed, _)| placed == prefix)
    {
        store.place(prefix, &StorageOptions::default()).await?;
    }
    Ok(())
}
