//! rowdex's foreign keys as PostgreSQL describes them: a `pg_constraint` row of type `f`
//! (`conkey`/`confkey` as attribute numbers, the referenced table's unique index as `conindid`)
//! and the text `pg_get_constraintdef` gives, which psql's `\d`, SQLAlchemy's and Alembic's
//! reflection read.

use std::sync::Arc;

use rowdex::quote_ident;
use rowdex_catalog::{ReferencedAccess, ReferentialAction, TableDef};

use crate::pg_catalog::model::{Relations, view_oid};

/// A foreign key with the relations it joins.
pub struct PgForeignKey {
    pub oid: i64,
    pub name: String,
    /// The referencing table.
    pub table: Arc<TableDef>,
    pub referenced: Arc<TableDef>,
    /// The referencing columns (positions in `table`).
    pub columns: Vec<usize>,
    /// The referenced columns (positions in `referenced`), paired with `columns`.
    pub referenced_columns: Vec<usize>,
    pub on_delete: ReferentialAction,
    pub on_update: ReferentialAction,
    /// The OID of the index behind the referenced primary key or UNIQUE constraint.
    pub index_oid: i64,
    /// That constraint's name (`referential_constraints.unique_constraint_name`).
    pub unique_name: String,
}

/// The attribute number (1-based, visible columns) of the column at `position` of `table`.
pub fn attnum(table: &TableDef, position: usize) -> i64 {
    table
        .visible_columns()
        .position(|(p, _)| p == position)
        .map_or(0, |p| p as i64 + 1)
}

impl PgForeignKey {
    /// `FOREIGN KEY (a) REFERENCES t(b) ON UPDATE CASCADE ON DELETE SET NULL`, as
    /// `pg_get_constraintdef` writes it (NO ACTION left out).
    pub fn definition(&self) -> String {
        let names = |table: &TableDef, columns: &[usize]| {
            columns
                .iter()
                .map(|c| quote_ident(&table.columns[*c].name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = format!(
            "FOREIGN KEY ({}) REFERENCES {}({})",
            names(&self.table, &self.columns),
            quote_ident(&self.referenced.name),
            names(&self.referenced, &self.referenced_columns)
        );
        for (what, action) in [("UPDATE", self.on_update), ("DELETE", self.on_delete)] {
            if action != ReferentialAction::NoAction {
                text.push_str(&format!(" ON {what} {}", action.sql()));
            }
        }
        text
    }

    /// The referencing columns' attribute numbers (`conkey`).
    pub fn conkey(&self) -> Vec<i64> {
        self.columns
            .iter()
            .map(|c| attnum(&self.table, *c))
            .collect()
    }

    /// The referenced columns' attribute numbers (`confkey`).
    pub fn confkey(&self) -> Vec<i64> {
        self.referenced_columns
            .iter()
            .map(|c| attnum(&self.referenced, *c))
            .collect()
    }
}

/// Every foreign key of the relations' tables (those whose tables and index it finds).
pub fn foreign_keys(relations: &Relations) -> Vec<PgForeignKey> {
    let mut found = Vec::new();
    for table in &relations.tables {
        for fk in &table.foreign_keys {
            let Some(referenced) = relations
                .tables
                .iter()
                .find(|t| t.id == fk.referenced_table)
            else {
                continue;
            };
            let (Some(columns), Some(referenced_columns)) = (
                table.positions_of_ids(&fk.columns),
                referenced.positions_of_ids(&fk.referenced_columns),
            ) else {
                continue;
            };
            let index = match referenced.referenced_access(&referenced_columns) {
                Some(ReferencedAccess::PrimaryKey) => relations
                    .indexes
                    .iter()
                    .find(|i| i.primary && i.table.id == referenced.id),
                Some(ReferencedAccess::Unique(position)) => relations.indexes.iter().find(|i| {
                    i.table.id == referenced.id && i.name == referenced.indexes[position].name
                }),
                None => None,
            };
            let Some(index) = index else {
                continue;
            };
            found.push(PgForeignKey {
                oid: view_oid(&format!("{}\u{0}fkey\u{0}{}", table.name, fk.name)),
                name: fk.name.clone(),
                table: table.clone(),
                referenced: referenced.clone(),
                columns,
                referenced_columns,
                on_delete: fk.on_delete,
                on_update: fk.on_update,
                index_oid: index.oid,
                unique_name: index.name.clone(),
            });
        }
    }
    found
}
