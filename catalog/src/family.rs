//! Column families: a table's non-key columns split into groups stored under keys of their
//! own, so that a query reading one group reads only its entries (HBase's column families).
//!
//! The default family (0) is the row entry itself, `0x10 ‖ table ‖ [salt] ‖ pk`; family n ≥ 1
//! is stored at `0x11 ‖ table ‖ n ‖ [salt] ‖ pk`. Every row has an entry in every family, empty
//! or not, so any one family can drive a scan and tells on its own which rows exist; and the
//! write time of a table with a TTL is in every entry, so any one family tells which rows have
//! expired. A table without declared families has the default family only and the same bytes
//! as before families existed.

use rowdex_codec::Datum;

use crate::error::{CatalogError, Result};
use crate::keyspace;
use crate::storage::StorageAttributes;
use crate::table::TableDef;

/// The name the default family answers to (`default.c` is the same as `c`).
pub const DEFAULT_FAMILY: &str = "default";

/// The most families a table may declare besides the default one (a family number is a byte).
pub const MAX_FAMILIES: usize = 255;

impl TableDef {
    /// Puts the named columns into the named families, numbered in order of first mention.
    /// `default` names the default family.
    pub fn with_families(mut self, members: &[(String, String)]) -> Result<TableDef> {
        let mut families: Vec<String> = Vec::new();
        for (column, family) in members {
            if family.is_empty() {
                return Err(CatalogError::EmptyFamilyName {
                    table: self.name.clone(),
                });
            }
            let position =
                self.column_index(column)
                    .ok_or_else(|| CatalogError::KeyColumnNotFound {
                        table: self.name.clone(),
                        column: column.clone(),
                    })?;
            if self.key_position(position).is_some() {
                return Err(CatalogError::KeyColumnInFamily {
                    table: self.name.clone(),
                    column: column.clone(),
                });
            }
            if family.eq_ignore_ascii_case(DEFAULT_FAMILY) {
                self.columns[position].family = 0;
                continue;
            }
            let number = match families.iter().position(|f| f == family) {
                Some(known) => known + 1,
                None => {
                    families.push(family.clone());
                    families.len()
                }
            };
            let number = u8::try_from(number).map_err(|_| CatalogError::TooManyFamilies {
                table: self.name.clone(),
                families: number,
                limit: MAX_FAMILIES,
            })?;
            self.columns[position].family = number;
        }
        self.families = families;
        Ok(self)
    }

    /// Whether the table stores some columns outside its row entry.
    pub fn has_families(&self) -> bool {
        !self.families.is_empty()
    }

    /// Every family number, the default one (0) first.
    pub fn family_numbers(&self) -> impl Iterator<Item = u8> + use<> {
        // At most MAX_FAMILIES names: every number fits a byte.
        0..=(self.families.len().min(MAX_FAMILIES) as u8)
    }

    /// The name of family `family`.
    pub fn family_name(&self, family: u8) -> &str {
        match family {
            0 => DEFAULT_FAMILY,
            n => self
                .families
                .get(usize::from(n) - 1)
                .map_or(DEFAULT_FAMILY, String::as_str),
        }
    }

    /// The families holding cells of `columns` (key columns hold none; the write time is in
    /// every family and so needs none of its own), ascending.
    pub fn families_of(&self, columns: impl IntoIterator<Item = usize>) -> Vec<u8> {
        let written_at = self.written_at_column();
        let mut families: Vec<u8> = columns
            .into_iter()
            .filter(|&c| self.key_position(c).is_none() && Some(c) != written_at)
            .filter_map(|c| self.columns.get(c).map(|column| column.family))
            .collect();
        families.sort_unstable();
        families.dedup();
        families
    }

    /// The prefix of family `family`'s entries (the table prefix for the default family).
    pub fn family_prefix(&self, family: u8) -> Vec<u8> {
        match family {
            0 => self.prefix(),
            n => keyspace::family_prefix(self.id, Some(n)),
        }
    }

    /// The prefix of one salt bucket of family `family`.
    pub fn family_bucket_prefix(&self, family: u8, bucket: u8) -> Vec<u8> {
        let mut prefix = self.family_prefix(family);
        if self.is_salted() {
            prefix.push(bucket);
        }
        prefix
    }

    /// Bytes before the encoded key columns in a key of family `family`.
    pub fn family_key_header_len(&self, family: u8) -> usize {
        self.key_header_len() + usize::from(family > 0)
    }

    /// The key of the entry of family `family` of the row with encoded primary key `pk`.
    pub fn family_row_key(&self, family: u8, pk: &[u8]) -> Vec<u8> {
        if family == 0 {
            return self.row_key(pk);
        }
        let mut out = self.family_prefix(family);
        if self.is_salted() {
            out.push(self.salt_of(pk));
        }
        out.extend_from_slice(pk);
        out
    }

    /// The keys of every entry of the row whose row entry key is `row_key`: that key, then
    /// one per other family (what a write to the row rewrites).
    pub fn entry_keys_of_row(&self, row_key: &[u8]) -> Vec<Vec<u8>> {
        let pk = self.pk_bytes(row_key);
        let mut keys = vec![row_key.to_vec()];
        keys.extend(
            self.family_numbers()
                .skip(1)
                .map(|family| self.family_row_key(family, pk)),
        );
        keys
    }

    /// The entries that store a full row (values in column order): its row entry, then one
    /// per family, each holding that family's non-NULL cells (and the write time, if any).
    pub fn row_entries(&self, row: &[Datum]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let row_key = self.row_key_of(row);
        if !self.has_families() {
            return vec![(row_key, self.encode_value(row))];
        }
        let pk = self.pk_bytes(&row_key).to_vec();
        self.family_numbers()
            .map(|family| {
                (
                    self.family_row_key(family, &pk),
                    self.encode_family_value(row, family),
                )
            })
            .collect()
    }

    /// The cells of family `family` of a full row.
    pub fn encode_family_value(&self, row: &[Datum], family: u8) -> Vec<u8> {
        let written_at = self.written_at_column();
        self.encode_cells(row, |i| {
            self.columns[i].family == family || Some(i) == written_at
        })
    }
}

impl TableDef {
    /// The storage attributes family `family` is kept with: the table's, with the family's
    /// own on top.
    pub fn family_storage(&self, family: u8) -> StorageAttributes {
        let name = self.family_name(family);
        match self.family_attributes.iter().find(|(f, _)| f == name) {
            Some((_, own)) => self.storage.overlaid(own),
            None => self.storage.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::ColumnDef;
    use crate::types::DataType;

    fn users() -> Result<TableDef> {
        let columns = ["id", "name", "email", "visits", "note"]
            .iter()
            .map(|name| ColumnDef::nullable(name, DataType::Text { max_len: None }))
            .collect();
        TableDef::new("users", columns, &[("id".to_string(), false)], 4)?.with_families(&[
            ("name".to_string(), "info".to_string()),
            ("email".to_string(), "info".to_string()),
            ("visits".to_string(), "stats".to_string()),
            ("note".to_string(), "default".to_string()),
        ])
    }

    fn text(value: &str) -> Datum {
        Datum::Text(value.to_string())
    }

    #[test]
    fn families_are_numbered_in_order_of_mention() -> Result<()> {
        let def = users()?;
        assert_eq!(def.families, ["info", "stats"]);
        let family = |name: &str| def.column_index(name).map(|c| def.columns[c].family);
        assert_eq!(family("name"), Some(1));
        assert_eq!(family("email"), Some(1));
        assert_eq!(family("visits"), Some(2));
        assert_eq!(family("note"), Some(0));
        assert_eq!(def.families_of([0, 1, 3]), [1, 2]);
        assert_eq!(def.family_name(2), "stats");
        Ok(())
    }

    #[test]
    fn a_row_splits_into_one_entry_per_family_and_merges_back() -> Result<()> {
        let def = users()?;
        let row = vec![text("u1"), text("Ann"), Datum::Null, text("7"), text("hi")];
        let entries = def.row_entries(&row);
        assert_eq!(entries.len(), 3);
        // Every entry carries the same primary key, behind its own family's header.
        for (family, (key, _)) in def.family_numbers().zip(&entries) {
            assert!(key.starts_with(&def.family_prefix(family)));
            assert_eq!(def.pk_bytes(key), def.pk_bytes(&entries[0].0));
        }
        let mut merged = def.decode_row(&entries[2].0, &entries[2].1)?;
        assert_eq!(
            merged[1],
            Datum::Null,
            "the stats entry holds no info cells"
        );
        for (_, value) in &entries[..2] {
            def.merge_cells(&mut merged, value)?;
        }
        assert_eq!(merged, row);
        Ok(())
    }

    #[test]
    fn key_columns_stay_out_of_families() {
        let columns = vec![
            ColumnDef::nullable("id", DataType::Integer),
            ColumnDef::nullable("v", DataType::Integer),
        ];
        let made = TableDef::new("t", columns, &[("id".to_string(), false)], 0)
            .and_then(|def| def.with_families(&[("id".to_string(), "f".to_string())]));
        assert!(matches!(made, Err(CatalogError::KeyColumnInFamily { .. })));
    }

    #[test]
    fn a_table_without_families_keeps_its_bytes() -> Result<()> {
        let columns = vec![
            ColumnDef::nullable("id", DataType::Integer),
            ColumnDef::nullable("v", DataType::Integer),
        ];
        let def = TableDef::new("t", columns, &[("id".to_string(), false)], 0)?;
        let row = vec![Datum::Int(1), Datum::Int(2)];
        assert_eq!(
            def.row_entries(&row),
            vec![(def.row_key_of(&row), def.encode_value(&row))]
        );
        Ok(())
    }
}
