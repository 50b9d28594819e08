//! HBase's storage attributes of column families in CREATE TABLE's `WITH (...)` and ALTER
//! TABLE's `SET (...)`: `COMPRESSION`, `BLOCKSIZE`, `BLOOMFILTER`, `DATA_BLOCK_ENCODING`,
//! `IN_MEMORY`, `BLOCKCACHE`, `MAX_FILESIZE` and `MEMSTORE_FLUSHSIZE`, for the whole table or,
//! written `family.NAME`, for one family (see `sql::family_options`).
//!
//! Each family whose attributes (the table's, with its own on top) ask for anything gets its
//! key prefix placed in a keyspace of its own with the store's options for them
//! (`KvStore::place`); changing them moves the family's entries, and dropping the table gives
//! the keyspace up. What the store cannot do as asked is accepted and said in a notice: fjall
//! compresses with LZ4 only, shares key prefixes but has no DIFF encoding, builds bloom
//! filters over whole keys (a row is one key), and has no cache priority or cache bypass.

use datafusion::sql::sqlparser::ast;
use rowdex_catalog::{DEFAULT_FAMILY, StorageAttributes, TableDef};

use crate::db::family_storage::place_table;
use crate::error::{Error, Result};
use crate::execute::ddl::table_attributes::option_text;
use crate::session::Session;
use crate::sql::family_options::FAMILY_OPTION_SEPARATOR;

/// One attribute as declared: for the whole table (`family` None) or one family.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StorageDeclaration {
    family: Option<String>,
    attributes: StorageAttributes,
    /// As written, for messages.
    written: String,
}

/// The codecs HBase names, and what fjall keeps them as.
const COMPRESSIONS: [&str; 7] = ["NONE", "LZ4", "GZ", "SNAPPY", "ZSTD", "LZO", "BZIP2"];
const BLOOM_FILTERS: [&str; 4] = ["NONE", "ROW", "ROWCOL", "ROWPREFIX_FIXED_LENGTH"];
const ENCODINGS: [&str; 5] = ["NONE", "PREFIX", "DIFF", "FAST_DIFF", "ROW_INDEX_V1"];

impl StorageDeclaration {
    /// The declaration `name = value` makes, if `name` (maybe `family.NAME`) is a storage
    /// attribute.
    pub(crate) fn read(name: &str, value: &ast::Expr) -> Option<Result<StorageDeclaration>> {
        let (family, attribute) = match name.split_once(FAMILY_OPTION_SEPARATOR) {
            Some((family, attribute)) => (Some(family.to_string()), attribute),
            None => (None, name),
        };
        let text = option_text(value);
        let bad = |takes: String| Error::BadTableOption {
            option: format!("{name} = {value} ({takes})"),
        };
        let named = |names: &[&str]| {
            text.as_deref()
                .map(str::to_ascii_uppercase)
                .filter(|given| names.contains(&given.as_str()))
                .ok_or_else(|| bad(format!("{attribute} is one of {}", names.join(", "))))
        };
        let bytes = |min: u64, max: u64| {
            text.as_deref()
                .and_then(|t| t.parse::<u64>().ok())
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| {
                    bad(format!(
                        "{attribute} is a number of bytes from {min} to {max}"
                    ))
                })
        };
        let flag = || match text.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("true" | "on" | "1") => Ok(true),
            Some("false" | "off" | "0") => Ok(false),
            _ => Err(bad(format!("{attribute} is true or false"))),
        };
        let mut attributes = StorageAttributes::default();
        let set = match attribute.to_ascii_uppercase().as_str() {
            "COMPRESSION" => named(&COMPRESSIONS).map(|c| attributes.compression = Some(c)),
            "BLOCKSIZE" => {
                bytes(1024, 16 * 1024 * 1024).map(|n| attributes.block_size = Some(n as u32))
            }
            "BLOOMFILTER" => named(&BLOOM_FILTERS).map(|b| attributes.bloom_filter = Some(b)),
            "DATA_BLOCK_ENCODING" => {
                named(&ENCODINGS).map(|e| attributes.data_block_encoding = Some(e))
            }
            "IN_MEMORY" => flag().map(|b| attributes.in_memory = Some(b)),
            "BLOCKCACHE" => flag().map(|b| attributes.block_cache = Some(b)),
            "MAX_FILESIZE" => bytes(64 * 1024, 1 << 40).map(|n| attributes.max_file_size = Some(n)),
            "MEMSTORE_FLUSHSIZE" => {
                bytes(64 * 1024, 1 << 32).map(|n| attributes.memstore_flush_size = Some(n))
            }
            _ => return None,
        };
        Some(set.map(|()| StorageDeclaration {
            family,
            attributes,
            written: format!("{name} = {value}"),
        }))
    }

    /// Sets the attribute on `def` (whose families are known by now).
    pub(crate) fn apply(&self, def: &mut TableDef) -> Result<()> {
        let Some(family) = &self.family else {
            def.storage = def.storage.overlaid(&self.attributes);
            return Ok(());
        };
        let known = family == DEFAULT_FAMILY || def.families.iter().any(|f| f == family);
        if !known {
            return Err(Error::BadTableOption {
                option: format!(
                    "{} (table {} has no column family {family})",
                    self.written, def.name
                ),
            });
        }
        match def.family_attributes.iter_mut().find(|(f, _)| f == family) {
            Some((_, own)) => *own = own.overlaid(&self.attributes),
            None => def
                .family_attributes
                .push((family.clone(), self.attributes.clone())),
        }
        Ok(())
    }

    /// What the store will do otherwise than declared, in words for a notice.
    pub(crate) fn caveats(&self) -> Vec<String> {
        let a = &self.attributes;
        let mut caveats = Vec::new();
        if let Some(codec) = a
            .compression
            .as_deref()
            .filter(|c| !matches!(*c, "NONE" | "LZ4"))
        {
            caveats.push(format!(
                "COMPRESSION = {codec} is kept as LZ4: the store compresses with LZ4 only"
            ));
        }
        if let Some(filter) = a
            .bloom_filter
            .as_deref()
            .filter(|b| !matches!(*b, "NONE" | "ROW"))
        {
            caveats.push(format!(
                "BLOOMFILTER = {filter} is kept as ROW: a row is one key in rowdex, filtered whole"
            ));
        }
        if let Some(encoding) = a
            .data_block_encoding
            .as_deref()
            .filter(|e| matches!(*e, "DIFF" | "FAST_DIFF"))
        {
            caveats.push(format!(
                "DATA_BLOCK_ENCODING = {encoding} is kept as PREFIX: the store's blocks share key \
                 prefixes and have no DIFF encoding"
            ));
        }
        if a.in_memory.is_some() {
            caveats.push(
                "IN_MEMORY has no effect: the store has no cache priority (every table's index \
                 and filter blocks are held in memory already)"
                    .to_string(),
            );
        }
        if a.block_cache.is_some() {
            caveats.push(
                "BLOCKCACHE has no effect: every read goes through the store's one block cache"
                    .to_string(),
            );
        }
        caveats
    }
}

/// Places each prefix of `def` whose options differ from `before`'s (see
/// `db::family_storage`), and says so when the store keeps every table alike though the
/// table declares storage attributes.
pub(crate) async fn place_families(
    session: &Session,
    def: &TableDef,
    before: Option<&TableDef>,
) -> Result<()> {
    let honoured = place_table(session.db.store.as_ref(), def, before).await?;
    let declared = def
        .family_numbers()
        .any(|f| !def.family_storage(f).is_empty());
    if !honoured && declared {
        session.add_notice(format!(
            "the storage attributes of {} have no effect here: this store keeps every table \
             alike (only the on-disk store has keyspaces of their own)",
            def.name
        ));
    }
    Ok(())
}
