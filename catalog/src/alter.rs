//! ALTER TABLE on a definition: columns added, dropped and renamed, and fresh column ids. None of
//! these rewrites a stored row: cells are keyed by column id, so an added column is absent
//! from older rows (which read the value it was added with), and a dropped column's cells are
//! left in older rows, unread, until a later write of the row drops them.

use crate::column::{ColumnDef, KeyColumn};
use crate::error::{CatalogError, Result};
use crate::table::TableDef;

impl TableDef {
    /// A column id never used in this table before.
    pub fn fresh_column_id(&mut self) -> u32 {
        let past_used = self.columns.iter().map(|c| c.id + 1).max().unwrap_or(0);
        let id = self.next_column_id.max(past_used);
        self.next_column_id = id + 1;
        id
    }

    /// Appends `column` (after every visible column) with a fresh id; returns its position.
    /// The caller sets what older rows read in it ([`ColumnDef::added_in`],
    /// [`ColumnDef::missing`]).
    pub fn add_column(&mut self, mut column: ColumnDef) -> Result<usize> {
        if self.column_index(&column.name).is_some() {
            return Err(CatalogError::ColumnExists {
                table: self.name.clone(),
                column: column.name,
            });
        }
        column.id = self.fresh_column_id();
        column.family = 0;
        self.columns.push(column);
        Ok(self.columns.len() - 1)
    }

    /// Removes a column that no key, index or salt uses; returns the CHECK constraints that
    /// named it, which go with it (as in PostgreSQL). `names_column` tells whether a check's
    /// condition names the column.
    pub fn drop_column(
        &mut self,
        name: &str,
        names_column: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>> {
        let position = self.visible_position(name)?;
        if self.key_position(position).is_some() {
            return Err(CatalogError::DropKeyColumn {
                table: self.name.clone(),
                column: name.to_string(),
            });
        }
        if let Some(index) = self.indexes.iter().find(|index| {
            index.columns.iter().any(|k| k.column == position)
                || index.include.contains(&position)
                || index
                    .filter
                    .as_ref()
                    .is_some_and(|filter| filter.names_column(position))
        }) {
            return Err(CatalogError::DropIndexedColumn {
                table: self.name.clone(),
                column: name.to_string(),
                index: index.name.clone(),
            });
        }
        if let Some(generated) = self
            .columns
            .iter()
            .find(|c| c.name != name && c.generation.as_deref().is_some_and(&names_column))
        {
            return Err(CatalogError::DropGenerationSource {
                table: self.name.clone(),
                column: name.to_string(),
                generated: generated.name.clone(),
            });
        }
        if self.visible_columns().count() == 1 {
            return Err(CatalogError::DropLastColumn {
                table: self.name.clone(),
                column: name.to_string(),
            });
        }
        // Its id stays taken.
        let dropped = self.columns.remove(position);
        self.next_column_id = self.next_column_id.max(dropped.id + 1);
        self.shift_positions_after(position);
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.checks)
            .into_iter()
            .partition(|check| names_column(&check.expr));
        self.checks = kept;
        Ok(gone.into_iter().map(|check| check.name).collect())
    }

    /// Removes the hidden generated columns (those CREATE INDEX adds for an indexed expression)
    /// that no index uses any more; returns their names. Their cells stay in stored rows,
    /// unread, as a dropped column's do.
    pub fn drop_unindexed_expressions(&mut self) -> Vec<String> {
        let mut dropped = Vec::new();
        for position in (0..self.columns.len()).rev() {
            let column = &self.columns[position];
            let used = self.key_position(position).is_some()
                || self.indexes.iter().any(|index| {
                    index.columns.iter().any(|k| k.column == position)
                        || index.include.contains(&position)
                });
            if !column.hidden || !column.is_generated() || used {
                continue;
            }
            let removed = self.columns.remove(position);
            self.next_column_id = self.next_column_id.max(removed.id + 1);
            self.shift_positions_after(position);
            dropped.push(removed.name);
        }
        dropped
    }

    /// Makes `key` (visible columns, each with its DESC flag) the primary key of a table
    /// declared without one: the hidden row id goes (its id stays taken, its cells unread) and
    /// the key columns become NOT NULL. The caller moves every stored row to its new key, and
    /// rewrites the index entries (which end with the key), in the transaction that stores
    /// this definition.
    pub fn set_primary_key(&mut self, key: &[(String, bool)]) -> Result<()> {
        let Some(rowid) = self.rowid_column() else {
            return Err(CatalogError::PrimaryKeyExists {
                table: self.name.clone(),
            });
        };
        let mut columns: Vec<KeyColumn> = Vec::with_capacity(key.len());
        for (name, desc) in key {
            let column = self.visible_position(name)?;
            if columns.iter().any(|k| k.column == column) {
                return Err(CatalogError::DuplicateColumn {
                    table: self.name.clone(),
                    column: name.clone(),
                });
            }
            if self.columns[column].family != 0 {
                return Err(CatalogError::KeyColumnInFamily {
                    table: self.name.clone(),
                    column: name.clone(),
                });
            }
            columns.push(KeyColumn {
                column,
                desc: *desc,
            });
        }
        for k in &columns {
            self.columns[k.column].nullable = false;
        }
        self.key = columns;
        let dropped = self.columns.remove(rowid);
        self.next_column_id = self.next_column_id.max(dropped.id + 1);
        self.shift_positions_after(rowid);
        Ok(())
    }

    /// Every position (key, indexes) past `removed` one less, once the column there is gone.
    fn shift_positions_after(&mut self, removed: usize) {
        let shift = |column: &mut usize| {
            if *column > removed {
                *column -= 1;
            }
        };
        for key in &mut self.key {
            shift(&mut key.column);
        }
        for index in &mut self.indexes {
            for column in &mut index.columns {
                shift(&mut column.column);
            }
            for column in &mut index.include {
                shift(column);
            }
            if let Some(filter) = &mut index.filter {
                for condition in &mut filter.conditions {
                    shift(&mut condition.column);
                }
            }
        }
    }

    /// The position of the visible column `name`.
    pub fn visible_position(&self, name: &str) -> Result<usize> {
        self.column_index(name)
            .filter(|&p| !self.columns[p].hidden)
            .ok_or_else(|| CatalogError::ColumnNotFound {
                table: self.name.clone(),
                column: name.to_string(),
            })
    }

    /// Renames a visible column (its id, and so its stored cells, stay).
    pub fn rename_column(&mut self, old: &str, new: &str) -> Result<()> {
        let position = self.visible_position(old)?;
        if self.column_index(new).is_some() {
            return Err(CatalogError::ColumnExists {
                table: self.name.clone(),
                column: new.to_string(),
            });
        }
        self.columns[position].name = new.to_string();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::KeyColumn;
    use crate::index::{IndexDef, IndexState};
    use crate::types::DataType;

    fn table() -> TableDef {
        let columns = vec![
            ColumnDef::nullable("id", DataType::Integer),
            ColumnDef::nullable("a", DataType::Integer),
            ColumnDef::nullable("b", DataType::Integer),
            ColumnDef::nullable("c", DataType::Integer),
        ];
        let mut def =
            TableDef::new("t", columns, &[("id".to_string(), false)], 0).expect("valid definition");
        def.indexes.push(IndexDef {
            id: 1,
            name: "ic".to_string(),
            columns: vec![KeyColumn {
                column: 3,
                desc: false,
            }],
            include: Vec::new(),
            unique: false,
            state: IndexState::Ready,
            salt_buckets: 0,
            constraint: false,
            filter: None,
        });
        def
    }

    #[test]
    fn a_dropped_column_shifts_positions_and_keeps_its_id_taken() -> Result<()> {
        let mut def = table();
        let dropped_id = def.columns[2].id;
        def.drop_column("b", |_| false)?;
        assert_eq!(def.indexes[0].columns[0].column, 2);
        assert_eq!(def.columns[2].name, "c");
        let position = def.add_column(ColumnDef::nullable("b", DataType::Integer))?;
        assert!(def.columns[position].id > dropped_id);
        Ok(())
    }

    #[test]
    fn key_and_indexed_columns_cannot_be_dropped() {
        let mut def = table();
        assert!(matches!(
            def.drop_column("id", |_| false),
            Err(CatalogError::DropKeyColumn { .. })
        ));
        assert!(matches!(
            def.drop_column("c", |_| false),
            Err(CatalogError::DropIndexedColumn { index, .. }) if index == "ic"
        ));
        assert!(matches!(
            def.rename_column("a", "b"),
            Err(CatalogError::ColumnExists { .. })
        ));
    }
}
