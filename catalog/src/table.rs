//! Table definitions and the row-key layout of a table.
//!
//! A row key is `table prefix ‖ [salt byte] ‖ encoded key columns`; the row value holds the
//! non-key columns as cells, keyed by stable column ids so that a column added later needs no
//! rewrite of old rows.

use rowdex_codec::{Datum, SortOrder, key, row};
use rowdex_store::Durability;
use serde::{Deserialize, Serialize};

use crate::column::{CheckDef, ColumnDef, KeyColumn};
use crate::error::{CatalogError, Result};
use crate::foreign_key::ForeignKeyDef;
use crate::index::IndexDef;
use crate::keyspace;
use crate::storage::StorageAttributes;
use crate::trigger::TriggerDef;
use crate::types::DataType;

/// Name of the hidden row-id column of a table declared without a PRIMARY KEY.
pub const HIDDEN_ROWID: &str = "_rowid";

/// Name of the hidden column of a table with a TTL or kept versions: when the row was last
/// written, in microseconds since the epoch. Every write sets it; a row expires `ttl_seconds`
/// after it, and it orders a row's versions.
pub const WRITTEN_AT: &str = "_written_at";

/// The most versions a table may keep of each row.
pub const MAX_VERSIONS: u32 = 1000;

/// The longest TTL: a hundred years, so that `now - ttl` never leaves the timestamp range.
pub const MAX_TTL_SECONDS: u64 = 100 * 366 * 24 * 3600;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    pub id: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// The primary key, in key order. Never empty: a table without a declared key gets the
    /// hidden row id as its key.
    pub key: Vec<KeyColumn>,
    /// 0 = not salted.
    pub salt_buckets: u16,
    /// The key columns (positions in `key`, ascending) whose values choose the salt bucket;
    /// empty = the whole key. Salting on a leading part of the key (`SALT_ON = (user_id)`)
    /// keeps one user's rows together, in key order, in one bucket.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub salt_on: Vec<usize>,
    /// Bumped by every change of the definition (indexes included); see
    /// [`keyspace::schema_version_key`].
    pub schema_version: u32,
    /// Secondary indexes, in creation order.
    #[serde(default)]
    pub indexes: Vec<IndexDef>,
    /// Time to live: a row is invisible once this many seconds have passed since it was last
    /// written (its [`WRITTEN_AT`] column), and `PURGE` removes it with its index entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
    /// Versions kept of each row, the current one included (HBase's VERSIONS): above 1, every
    /// overwrite or delete keeps the old row in the history keyspace, up to `versions - 1`
    /// older versions per primary key, for reads `AS OF` a time.
    #[serde(default = "one_version", skip_serializing_if = "is_one_version")]
    pub versions: u32,
    /// Names of the column families besides the default one, in declaration order (see
    /// [`ColumnDef::family`] and the `family` module).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub families: Vec<String>,
    /// CHECK constraints, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckDef>,
    /// The next column id to hand out (0: one past the largest id in use, for definitions
    /// stored before ALTER TABLE existed). A dropped column's id is never reused, so its
    /// cells, left in old rows, are never read as another column's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub next_column_id: u32,
    /// Triggers on the table's writes, in creation order (the order they fire in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<TriggerDef>,
    /// FOREIGN KEY constraints of this table (it is their referencing table).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// Ids of the tables with a foreign key referencing this one (itself, for one referencing
    /// its own rows), each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referenced_by: Vec<u32>,
    /// HBase's DURABILITY: how far a commit writing this table is pushed before it returns
    /// (None: the database's default; a commit writing several tables takes the strongest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durability: Option<Durability>,
    /// HBase's READONLY: writes to the rows are refused until it is switched off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Storage attributes of every column family (`WITH (COMPRESSION = ...)`; see `storage`).
    #[serde(default, skip_serializing_if = "StorageAttributes::is_empty")]
    pub storage: StorageAttributes,
    /// Storage attributes of single families, by family name (`WITH (o.COMPRESSION = ...)`),
    /// over the table's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub family_attributes: Vec<(String, StorageAttributes)>,
    /// Pre-split hints (`SPLIT ON (...)`, `NUMREGIONS = n`): where the table's key space is
    /// cut into regions, as encoded key bytes after the table prefix (and salt byte), sorted.
    /// SHOW KEY SPREAD and the parallel scan's partitions cut there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split_keys: Vec<Vec<u8>>,
    /// The hints as declared, for display: `split_on=(...)` or `numregions=n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_hint: Option<String>,
}

fn is_zero(id: &u32) -> bool {
    *id == 0
}

fn one_version() -> u32 {
    1
}

fn is_one_version(versions: &u32) -> bool {
    *versions == 1
}

impl TableDef {
    /// Builds and validates a definition; `key` names columns, each with its DESC flag. An empty
    /// key adds the hidden row id.
    pub fn new(
        name: &str,
        mut columns: Vec<ColumnDef>,
        key: &[(String, bool)],
        salt_buckets: u16,
    ) -> Result<TableDef> {
        for (i, column) in columns.iter().enumerate() {
            if columns[..i].iter().any(|c| c.name == column.name) {
                return Err(CatalogError::DuplicateColumn {
                    table: name.to_string(),
                    column: column.name.clone(),
                });
            }
        }
        if salt_buckets > 256 {
            return Err(CatalogError::BadSaltBuckets {
                buckets: u64::from(salt_buckets),
            });
        }
        let mut key_columns = Vec::with_capacity(key.len().max(1));
        if key.is_empty() {
            columns.push(ColumnDef {
                id: 0,
                name: HIDDEN_ROWID.to_string(),
                data_type: DataType::Integer,
                nullable: false,
                hidden: true,
                family: 0,
                default: None,
                added_in: 0,
                missing: None,
                generated_always: false,
                generation: None,
                declared: None,
            });
            key_columns.push(KeyColumn {
                column: columns.len() - 1,
                desc: false,
            });
        }
        for (key_name, desc) in key {
            let position = columns
                .iter()
                .position(|c| &c.name == key_name)
                .ok_or_else(|| CatalogError::KeyColumnNotFound {
                    table: name.to_string(),
                    column: key_name.clone(),
                })?;
            if key_columns.iter().any(|k: &KeyColumn| k.column == position) {
                return Err(CatalogError::DuplicateColumn {
                    table: name.to_string(),
                    column: key_name.clone(),
                });
            }
            // Key columns can never hold NULL: a row key must identify one row.
            columns[position].nullable = false;
            key_columns.push(KeyColumn {
                column: position,
                desc: *desc,
            });
        }
        for (i, column) in columns.iter_mut().enumerate() {
            column.id = i as u32;
        }
        Ok(TableDef {
            id: 0,
            name: name.to_string(),
            columns,
            key: key_columns,
            salt_buckets,
            salt_on: Vec::new(),
            schema_version: 1,
            indexes: Vec::new(),
            ttl_seconds: None,
            versions: 1,
            families: Vec::new(),
            checks: Vec::new(),
            next_column_id: 0,
            triggers: Vec::new(),
            foreign_keys: Vec::new(),
            referenced_by: Vec::new(),
            durability: None,
            read_only: false,
            storage: StorageAttributes::default(),
            family_attributes: Vec::new(),
            split_keys: Vec::new(),
            split_hint: None,
        })
    }

    /// Gives the table a time to live: adds the hidden write-time column that every write sets.
    pub fn with_ttl(mut self, seconds: u64) -> Result<TableDef> {
        if !(1..=MAX_TTL_SECONDS).contains(&seconds) {
            return Err(CatalogError::BadTtl { seconds });
        }
        self.add_written_at()?;
        self.ttl_seconds = Some(seconds);
        Ok(self)
    }

    /// The table's attributes as `NAME=value` options, as PostgreSQL lists a table's storage
    /// parameters (`pg_class.reloptions`, psql's `\d+`): TTL, VERSIONS, SALT_BUCKETS,
    /// DURABILITY, READONLY, each only when set.
    pub fn attribute_options(&self) -> Vec<String> {
        let mut options = Vec::new();
        if self.salt_buckets > 0 {
            options.push(format!("salt_buckets={}", self.salt_buckets));
        }
        if let Some(ttl) = self.ttl_seconds {
            options.push(format!("ttl={ttl}"));
        }
        if self.versions > 1 {
            options.push(format!("versions={}", self.versions));
        }
        if let Some(durability) = self.durability {
            options.push(format!("durability={durability}"));
        }
        if self.read_only {
            options.push("readonly=true".to_string());
        }
        options.extend(self.split_hint.clone());
        options.extend(self.storage.listed());
        for (family, attributes) in &self.family_attributes {
            options.extend(
                attributes
                    .listed()
                    .into_iter()
                    .map(|o| format!("{family}.{o}")),
            );
        }
        options
    }

    /// Keeps `versions` versions of each row (the current one included); adds the hidden
    /// write-time column that orders them.
    pub fn with_versions(mut self, versions: u32) -> Result<TableDef> {
        if !(1..=MAX_VERSIONS).contains(&versions) {
            return Err(CatalogError::BadVersions { versions });
        }
        if versions > 1 {
            self.add_written_at()?;
        }
        self.versions = versions;
        Ok(self)
    }

    fn add_written_at(&mut self) -> Result<()> {
        if self.written_at_column().is_some() {
            return Ok(());
        }
        if self.column_index(WRITTEN_AT).is_some() {
            return Err(CatalogError::ReservedColumn {
                table: self.name.clone(),
                column: WRITTEN_AT.to_string(),
            });
        }
        let id = self.fresh_column_id();
        self.columns.push(ColumnDef {
            id,
            name: WRITTEN_AT.to_string(),
            data_type: DataType::Timestamp,
            nullable: true,
            hidden: true,
            family: 0,
            default: None,
            added_in: 0,
            missing: None,
            generated_always: false,
            generation: None,
            declared: None,
        });
        Ok(())
    }

    /// Position of the hidden write-time column, for a table with a TTL or kept versions.
    pub fn written_at_column(&self) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.hidden && c.name == WRITTEN_AT)
    }

    /// Whether overwritten and deleted rows are kept as older versions.
    pub fn keeps_history(&self) -> bool {
        self.versions > 1
    }

    /// The prefix of the table's older row versions.
    pub fn history_prefix(&self) -> Vec<u8> {
        keyspace::history_prefix(self.id)
    }

    /// The prefix of the older versions of the row with encoded primary key `pk`, newest first.
    pub fn history_prefix_of(&self, pk: &[u8]) -> Vec<u8> {
        let mut key = self.history_prefix();
        key.extend_from_slice(pk);
        key
    }

    /// The key of the version of row `pk` written at `written_at`. The time is encoded DESC so
    /// that a row's versions sort newest first.
    pub fn history_key(&self, pk: &[u8], written_at: i64) -> Vec<u8> {
        let mut key = self.history_prefix_of(pk);
        key::encode_datum(&mut key, &Datum::Timestamp(written_at), SortOrder::Desc);
        key
    }

    /// The primary key and the time of a history key.
    pub fn split_history_key<'a>(&self, history_key: &'a [u8]) -> Result<(&'a [u8], i64)> {
        let header = self.history_prefix().len();
        let rest = history_key.get(header..).unwrap_or_default();
        let mut after_pk = rest;
        for column in &self.key {
            key::decode_datum(&mut after_pk, column.order())?;
        }
        let pk = &rest[..rest.len() - after_pk.len()];
        match key::decode_datum(&mut after_pk, SortOrder::Desc)? {
            Datum::Timestamp(at) if after_pk.is_empty() => Ok((pk, at)),
            _ => Err(CatalogError::BadHistoryKey {
                key: history_key.to_vec(),
            }),
        }
    }

    /// The write time at or before which a row has expired, at `now` (microseconds since the
    /// epoch); None for a table without a TTL.
    pub fn expiry_cutoff(&self, now_micros: i64) -> Option<i64> {
        let ttl = i64::try_from(self.ttl_seconds?).ok()?;
        Some(now_micros.saturating_sub(ttl.saturating_mul(1_000_000)))
    }

    /// Whether a stored row value is still live at `cutoff`, read from its write-time cell
    /// alone (the row need not be decoded).
    pub fn is_value_live(&self, value: &[u8], cutoff: Option<i64>) -> Result<bool> {
        // Checked first: the column lookup is a scan, and most tables have no cutoff.
        let Some(cutoff) = cutoff else {
            return Ok(true);
        };
        let Some(column) = self.written_at_column() else {
            return Ok(true);
        };
        let id = self.columns[column].id;
        let (_, cells) = row::cells(value)?;
        for cell in cells {
            if let (cell_id, row::CellValue::Timestamp(written)) = cell?
                && cell_id == id
            {
                return Ok(written > cutoff);
            }
        }
        Ok(true)
    }

    /// Whether a row (all columns, in order) is still live at `cutoff` (see
    /// [`TableDef::expiry_cutoff`]). A row without a write time was never stamped: live.
    pub fn is_live(&self, row: &[Datum], cutoff: Option<i64>) -> bool {
        // Checked first: the column lookup is a scan, and most tables have no cutoff.
        let Some(cutoff) = cutoff else {
            return true;
        };
        let Some(column) = self.written_at_column() else {
            return true;
        };
        match row.get(column) {
            Some(Datum::Timestamp(written)) => *written > cutoff,
            _ => true,
        }
    }

    /// Salts on the named key columns instead of the whole key.
    pub fn with_salt_on(mut self, columns: &[String]) -> Result<TableDef> {
        if !self.is_salted() {
            return Err(CatalogError::SaltOnWithoutBuckets {
                table: self.name.clone(),
            });
        }
        let mut positions = Vec::with_capacity(columns.len());
        for name in columns {
            let position = self
                .column_index(name)
                .and_then(|c| self.key_position(c))
                .ok_or_else(|| CatalogError::SaltColumnNotInKey {
                    table: self.name.clone(),
                    column: name.clone(),
                })?;
            if positions.contains(&position) {
                return Err(CatalogError::DuplicateColumn {
                    table: self.name.clone(),
                    column: name.clone(),
                });
            }
            positions.push(position);
        }
        positions.sort_unstable();
        // The whole key, named column by column, is the default.
        if positions.len() == self.key.len() {
            positions.clear();
        }
        self.salt_on = positions;
        Ok(self)
    }

    /// The salt columns, as positions in `key`.
    pub fn salt_key_positions(&self) -> Vec<usize> {
        if self.salt_on.is_empty() {
            (0..self.key.len()).collect()
        } else {
            self.salt_on.clone()
        }
    }

    /// The bucket of a row with encoded primary key `pk_bytes`.
    pub fn salt_of(&self, pk_bytes: &[u8]) -> u8 {
        if self.salt_on.is_empty() {
            return keyspace::salt_bucket(pk_bytes, self.salt_buckets);
        }
        match key::decode_key(pk_bytes, &self.key_orders(), true) {
            Ok(values) => self.salt_of_leading(&values).unwrap_or(0),
            // Our own encoding always decodes; hashing the bytes keeps this total.
            Err(_) => keyspace::salt_bucket(pk_bytes, self.salt_buckets),
        }
    }

    /// The bucket of every row whose leading key columns equal `leading`, if they include
    /// every salt column (for an unsalted table, the one prefix).
    pub fn salt_of_leading(&self, leading: &[Datum]) -> Option<u8> {
        let positions = self.salt_key_positions();
        if positions.last().is_some_and(|&p| p >= leading.len()) {
            return None;
        }
        let mut salted = Vec::with_capacity(16 * positions.len());
        for position in positions {
            key::encode_datum(&mut salted, &leading[position], self.key[position].order());
        }
        Some(keyspace::salt_bucket(&salted, self.salt_buckets))
    }

    pub fn index(&self, name: &str) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// The indexes queries may use.
    pub fn ready_indexes(&self) -> impl Iterator<Item = (usize, &IndexDef)> {
        self.indexes
            .iter()
            .enumerate()
            .filter(|(_, i)| i.is_ready())
    }

    pub fn has_hidden_rowid(&self) -> bool {
        self.rowid_column().is_some()
    }

    /// Position of the hidden row id, for a table declared without a PRIMARY KEY.
    pub fn rowid_column(&self) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.hidden && c.name == HIDDEN_ROWID)
    }

    /// The columns a user sees, in declaration order.
    pub fn visible_columns(&self) -> impl Iterator<Item = (usize, &ColumnDef)> {
        self.columns.iter().enumerate().filter(|(_, c)| !c.hidden)
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// Position of column `column` in the key, if it is a key column.
    pub fn key_position(&self, column: usize) -> Option<usize> {
        self.key.iter().position(|k| k.column == column)
    }

    /// The key columns of `index`'s entries as a scan sees them: the indexed columns, then the
    /// primary key columns that follow them.
    pub fn entry_key_columns(&self, index: &IndexDef) -> Vec<KeyColumn> {
        index.columns.iter().chain(&self.key).copied().collect()
    }

    /// Whether an entry of `index` alone can answer a query reading `needed` columns: each is
    /// indexed, included, or part of the primary key (which every entry carries).
    pub fn index_covers(&self, index: &IndexDef, needed: &[usize]) -> bool {
        needed.iter().all(|c| {
            index.columns.iter().any(|k| k.column == *c)
                || index.include.contains(c)
                || self.key_position(*c).is_some()
        })
    }

    pub fn key_orders(&self) -> Vec<SortOrder> {
        self.key.iter().map(KeyColumn::order).collect()
    }

    pub fn is_salted(&self) -> bool {
        self.salt_buckets > 0
    }

    /// Prefix of all of this table's rows.
    pub fn prefix(&self) -> Vec<u8> {
        keyspace::table_prefix(self.id)
    }

    /// Prefix of one salt bucket (the table prefix when not salted).
    pub fn bucket_prefix(&self, bucket: u8) -> Vec<u8> {
        let mut prefix = self.prefix();
        if self.is_salted() {
            prefix.push(bucket);
        }
        prefix
    }

    /// The prefixes a scan must visit: one per bucket, or the table prefix.
    pub fn scan_prefixes(&self) -> Vec<Vec<u8>> {
        if self.is_salted() {
            (0..self.salt_buckets)
                .map(|b| self.bucket_prefix(b as u8))
                .collect()
        } else {
            vec![self.prefix()]
        }
    }

    /// Bytes before the encoded key columns in a row key.
    pub fn key_header_len(&self) -> usize {
        5 + usize::from(self.is_salted())
    }

    /// Encodes leading key columns (all of them for a full key).
    pub fn encode_key_values(&self, values: &[&Datum]) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 * values.len());
        for (value, key_column) in values.iter().zip(&self.key) {
            key::encode_datum(&mut out, value, key_column.order());
        }
        out
    }

    /// Full row key of encoded primary-key bytes.
    pub fn row_key(&self, pk_bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.key_header_len() + pk_bytes.len());
        out.extend_from_slice(&self.prefix());
        if self.is_salted() {
            out.push(self.salt_of(pk_bytes));
        }
        out.extend_from_slice(pk_bytes);
        out
    }

    /// Row key of a full row (values in column order).
    pub fn row_key_of(&self, row: &[Datum]) -> Vec<u8> {
        let values: Vec<&Datum> = self.key.iter().map(|k| &row[k.column]).collect();
        self.row_key(&self.encode_key_values(&values))
    }

    /// The encoded primary key inside a row key, or inside the key of one of the row's
    /// family entries (prefix and salt stripped).
    pub fn pk_bytes<'a>(&self, row_key: &'a [u8]) -> &'a [u8] {
        let header = match row_key.first() {
            Some(&keyspace::FAMILY_DATA) => self.family_key_header_len(1),
            _ => self.key_header_len(),
        };
        row_key.get(header..).unwrap_or_default()
    }

    /// Encodes every non-key column of a full row as one value: a stored older version. The
    /// row's own entries are [`TableDef::row_entries`].
    pub fn encode_value(&self, row: &[Datum]) -> Vec<u8> {
        self.encode_cells(row, |_| true)
    }

    /// The non-NULL, non-key cells of a full row whose column positions `keep` accepts, as a
    /// stored value.
    pub(crate) fn encode_cells(&self, row: &[Datum], keep: impl Fn(usize) -> bool) -> Vec<u8> {
        let cells: Vec<(u32, &Datum)> = self
            .columns
            .iter()
            .zip(row)
            .enumerate()
            .filter(|(i, (_, d))| self.key_position(*i).is_none() && !d.is_null() && keep(*i))
            .map(|(_, (c, d))| (c.id, d))
            .collect();
        let mut out = Vec::with_capacity(8 + 12 * cells.len());
        row::encode_row(&mut out, self.schema_version, &cells);
        out
    }

    /// Decodes a stored row into all columns, in column order: the key columns from the key,
    /// the others from the value's cells. For the entry of one column family (see
    /// [`TableDef::row_entries`]), the columns of other families are NULL; fill them in with
    /// [`TableDef::merge_cells`].
    pub fn decode_row(&self, row_key: &[u8], value: &[u8]) -> Result<Vec<Datum>> {
        self.decode_row_columns(row_key, value, None)
    }

    /// Like [`TableDef::decode_row`], with only the key columns and the columns `wanted`
    /// marks (by position; None: all) decoded: the others are left NULL, their cells skipped
    /// without copying their values.
    pub fn decode_row_columns(
        &self,
        row_key: &[u8],
        value: &[u8],
        wanted: Option<&[bool]>,
    ) -> Result<Vec<Datum>> {
        let mut out = vec![Datum::Null; self.columns.len()];
        let key_values = key::decode_key(self.pk_bytes(row_key), &self.key_orders(), true)?;
        for (key_column, datum) in self.key.iter().zip(key_values) {
            out[key_column.column] = datum;
        }
        let family = match row_key.first() {
            Some(&keyspace::FAMILY_DATA) => None,
            _ => Some(0),
        };
        self.merge_wanted_cells(&mut out, family, value, wanted)?;
        Ok(out)
    }

    /// Sets the columns whose cells `value` holds.
    pub fn merge_cells(&self, row: &mut [Datum], value: &[u8]) -> Result<()> {
        self.merge_entry_cells(row, None, value)
    }

    /// Sets the columns whose cells `value`, the entry of column family `family`, holds; in
    /// the row entry (family 0), a column added after the entry was written reads the value
    /// it was added with (see [`ColumnDef::missing_value`]). Columns are added to the default
    /// family only, whose entry every row has.
    pub fn merge_entry_cells(
        &self,
        row: &mut [Datum],
        family: Option<u8>,
        value: &[u8],
    ) -> Result<()> {
        self.merge_wanted_cells(row, family, value, None)
    }

    /// [`TableDef::merge_entry_cells`] for the columns `wanted` marks (None: all). Every
    /// cell is read (and checked) whether or not its value is kept.
    fn merge_wanted_cells(
        &self,
        row: &mut [Datum],
        family: Option<u8>,
        value: &[u8],
        wanted: Option<&[bool]>,
    ) -> Result<()> {
        let is_wanted = |position: usize| wanted.is_none_or(|w| w.get(position) == Some(&true));
        let (schema_version, cells) = row::cells(value)?;
        // A column added after the entry was written reads its added value; a cell, when the
        // entry has one, overwrites it below.
        if family == Some(0) {
            for (position, (slot, column)) in row.iter_mut().zip(&self.columns).enumerate() {
                if column.family == 0
                    && is_wanted(position)
                    && let Some(value) = column.missing_value(schema_version)
                {
                    *slot = value;
                }
            }
        }
        for cell in cells {
            let (id, value) = cell?;
            if let Some(position) = self.columns.iter().position(|c| c.id == id)
                && is_wanted(position)
                && let Some(slot) = row.get_mut(position)
            {
                *slot = value.to_datum();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, data_type: DataType) -> ColumnDef {
        ColumnDef::nullable(name, data_type)
    }

    fn events(salt: u16) -> TableDef {
        let columns = vec![
            column("host", DataType::Text { max_len: None }),
            column("ts", DataType::Integer),
            column("value", DataType::Float),
        ];
        let mut def = TableDef::new(
            "events",
            columns,
            &[("host".to_string(), false), ("ts".to_string(), true)],
            salt,
        )
        .expect("valid definition");
        def.id = 7;
        def
    }

    #[test]
    fn row_round_trips_through_key_and_value() {
        for salt in [0, 8] {
            let def = events(salt);
            let row = vec![
                Datum::Text("host1".into()),
                Datum::Int(42),
                Datum::Float(1.5),
            ];
            let key = def.row_key_of(&row);
            assert!(key.starts_with(&def.prefix()));
            let value = def.encode_value(&row);
            assert_eq!(def.decode_row(&key, &value).expect("decodes"), row);
        }
    }

    #[test]
    fn desc_key_column_sorts_newest_first() {
        let def = events(0);
        let older = def.row_key_of(&[Datum::Text("h".into()), Datum::Int(1), Datum::Null]);
        let newer = def.row_key_of(&[Datum::Text("h".into()), Datum::Int(2), Datum::Null]);
        assert!(newer < older);
    }

    #[test]
    fn key_columns_become_not_null_and_hidden_rowid_is_added() {
        let def = events(0);
        assert!(!def.columns[0].nullable && !def.columns[1].nullable);
        let plain = TableDef::new("t", vec![column("a", DataType::Integer)], &[], 0)
            .expect("valid definition");
        assert!(plain.has_hidden_rowid());
        assert_eq!(plain.visible_columns().count(), 1);
        assert_eq!(plain.key[0].column, 1);
    }

    #[test]
    fn bad_definitions_are_rejected() {
        let dup = TableDef::new(
            "t",
            vec![
                column("a", DataType::Integer),
                column("a", DataType::Integer),
            ],
            &[],
            0,
        );
        assert!(matches!(dup, Err(CatalogError::DuplicateColumn { .. })));
        let missing = TableDef::new(
            "t",
            vec![column("a", DataType::Integer)],
            &[("b".to_string(), false)],
            0,
        );
        assert!(matches!(
            missing,
            Err(CatalogError::KeyColumnNotFound { .. })
        ));
        let salt = TableDef::new("t", vec![column("a", DataType::Integer)], &[], 300);
        assert!(matches!(salt, Err(CatalogError::BadSaltBuckets { .. })));
    }
}
