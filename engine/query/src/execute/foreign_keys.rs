//! FOREIGN KEY constraints declared, added and dropped: `col T REFERENCES p [(c)]` and
//! `[CONSTRAINT n] FOREIGN KEY (a, b) REFERENCES p [(c, d)] [ON DELETE action] [ON UPDATE
//! action]` in CREATE TABLE (ALTER TABLE's are `foreign_key_alter`'s), and what DROP TABLE,
//! DROP INDEX and TRUNCATE must respect. Enforcement is the writers' (`write::references`).
//!
//! The referenced columns must be the referenced table's primary key or carry a UNIQUE index
//! (PostgreSQL's rule), so the referenced row is one point get or index probe away. The
//! referencing rows must be found by a prefix scan too: when neither the referencing table's
//! primary key nor one of its indexes leads with the referencing columns, an index on them,
//! named `<table>_<columns>_idx` as PostgreSQL names an unnamed index, is created with the
//! constraint (PostgreSQL leaves that to the user and scans the table on every delete of a
//! referenced row; rowdex would read the whole referencing table instead).

use datafusion::sql::sqlparser::ast::{
    self, ForeignKeyConstraint, Ident, ReferentialAction as SqlAction,
};
use rowdex_catalog::{
    DataType, ForeignKeyDef, IndexDef, IndexState, KeyColumn, ReferentialAction, TableDef,
};

use crate::error::{Error, Result};
use crate::execute::schema_txn::SchemaTxn;
use crate::session::Session;
use crate::sql::names::{ident_name, object_name};

/// A foreign key as written, its tables not yet looked up.
#[derive(Debug, Clone)]
pub(crate) struct DeclaredForeignKey {
    name: Option<String>,
    columns: Vec<String>,
    referenced: String,
    /// Empty: the referenced table's primary key.
    referenced_columns: Vec<String>,
    on_delete: ReferentialAction,
    on_update: ReferentialAction,
}

impl DeclaredForeignKey {
    /// A `REFERENCES` column option of column `column` (its constraint name, if any, from
    /// `CONSTRAINT n REFERENCES ...`), or a table's `FOREIGN KEY` constraint (`column` None).
    pub(crate) fn read(
        constraint: &ForeignKeyConstraint,
        column: Option<&str>,
        option_name: Option<&Ident>,
    ) -> Result<DeclaredForeignKey> {
        if constraint
            .characteristics
            .as_ref()
            .is_some_and(|c| c.deferrable == Some(true) || c.initially.is_some())
        {
            return Err(Error::Unsupported {
                what: "DEFERRABLE foreign keys (rowdex checks them at the end of each statement)"
                    .to_string(),
            });
        }
        if let Some(kind) = &constraint.match_kind
            && !matches!(kind, ast::ConstraintReferenceMatchKind::Simple)
        {
            return Err(Error::Unsupported {
                what: format!("{kind} foreign keys (only MATCH SIMPLE)"),
            });
        }
        let columns = match column {
            Some(column) => vec![column.to_string()],
            None => constraint.columns.iter().map(ident_name).collect(),
        };
        let name = constraint.name.as_ref().or(option_name).map(ident_name);
        Ok(DeclaredForeignKey {
            name,
            columns,
            referenced: object_name(&constraint.foreign_table)?,
            referenced_columns: constraint.referred_columns.iter().map(ident_name).collect(),
            on_delete: action(constraint.on_delete),
            on_update: action(constraint.on_update),
        })
    }

    /// The name of the table it references.
    pub(crate) fn referenced(&self) -> &str {
        &self.referenced
    }

    /// The constraint for `table` referencing `referenced` (the same definition for a table
    /// referencing itself): columns found, types matching, the referenced columns the primary
    /// key or a UNIQUE index's, and a name `<table>_<columns>_fkey` unless given one that no
    /// other constraint of `table` has.
    pub(crate) fn resolve(&self, table: &TableDef, referenced: &TableDef) -> Result<ForeignKeyDef> {
        let columns_named = self.columns.join("_");
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| format!("{}_{columns_named}_fkey", table.name));
        let bad = |reason: String| Error::BadForeignKey {
            table: table.name.clone(),
            constraint: name.clone(),
            reason,
        };
        if table.foreign_key(&name).is_some() || table.checks.iter().any(|c| c.name == name) {
            return Err(bad("the table already has a constraint of that name".into()));
        }
        let positions = |def: &TableDef, names: &[String]| -> Result<Vec<usize>> {
            names
                .iter()
                .map(|column| {
                    def.column_index(column)
                        .filter(|p| !def.columns[*p].hidden)
                        .ok_or_else(|| Error::ColumnNotFound {
                            table: def.name.clone(),
                            column: column.clone(),
                        })
                })
                .collect()
        };
        let columns = positions(table, &self.columns)?;
        let referenced_columns = if self.referenced_columns.is_empty() {
            if referenced.has_hidden_rowid() {
                return Err(bad(format!(
                    "table {} has no primary key to reference; name the referenced columns",
                    referenced.name
                )));
            }
            referenced.key.iter().map(|k| k.column).collect()
        } else {
            positions(referenced, &self.referenced_columns)?
        };
        if columns.len() != referenced_columns.len() {
            return Err(bad(format!(
                "it names {} referencing and {} referenced columns",
                columns.len(),
                referenced_columns.len()
            )));
        }
        if referenced.referenced_access(&referenced_columns).is_none() {
            return Err(bad(format!(
                "there is no unique constraint matching given keys for referenced table \"{}\"",
                referenced.name
            )));
        }
        for (column, other) in columns.iter().zip(&referenced_columns) {
            let (mine, theirs) = (&table.columns[*column], &referenced.columns[*other]);
            if !key_compatible(mine.data_type, theirs.data_type) {
                return Err(bad(format!(
                    "key columns {} and {} are of incompatible types: {} and {}",
                    mine.name, theirs.name, mine.data_type, theirs.data_type
                )));
            }
        }
        Ok(ForeignKeyDef {
            name,
            columns: columns.iter().map(|c| table.columns[*c].id).collect(),
            referenced_table: referenced.id,
            referenced_columns: referenced_columns
                .iter()
                .map(|c| referenced.columns[*c].id)
                .collect(),
            on_delete: self.on_delete,
            on_update: self.on_update,
        })
    }
}

/// Whether values of the two types encode to the same key bytes (a lengthless and a bounded
/// text are alike; numbers of different kinds are not).
fn key_compatible(a: DataType, b: DataType) -> bool {
    match (a, b) {
        (DataType::Text { .. }, DataType::Text { .. })
        | (DataType::Bytes { .. }, DataType::Bytes { .. }) => true,
        (DataType::Decimal { scale: a, .. }, DataType::Decimal { scale: b, .. }) => a == b,
        (a, b) => a == b,
    }
}

fn action(action: Option<SqlAction>) -> ReferentialAction {
    match action {
        None | Some(SqlAction::NoAction) => ReferentialAction::NoAction,
        Some(SqlAction::Restrict) => ReferentialAction::Restrict,
        Some(SqlAction::Cascade) => ReferentialAction::Cascade,
        Some(SqlAction::SetNull) => ReferentialAction::SetNull,
        Some(SqlAction::SetDefault) => ReferentialAction::SetDefault,
    }
}

/// The index a new table needs for `fk` to find its referencing rows, when neither its key
/// nor an index it declares leads with them (see the module header).
pub(crate) fn referencing_index(def: &TableDef, fk: &ForeignKeyDef) -> Option<IndexDef> {
    let columns = def.positions_of_ids(&fk.columns)?;
    if def.referencing_access(&columns).is_some() {
        return None;
    }
    let names: Vec<&str> = columns
        .iter()
        .map(|c| def.columns[*c].name.as_str())
        .collect();
    let base = format!("{}_{}_idx", def.name, names.join("_"));
    let mut name = base.clone();
    let mut suffix = 1;
    while def.index(&name).is_some() {
        name = format!("{base}{suffix}");
        suffix += 1;
    }
    Some(IndexDef {
        id: 0,
        name,
        columns: columns
            .iter()
            .map(|column| KeyColumn {
                column: *column,
                desc: false,
            })
            .collect(),
        include: Vec::new(),
        unique: false,
        state: IndexState::Ready,
        salt_buckets: 0,
        constraint: false,
        filter: None,
    })
}

/// The foreign keys `declared` in the CREATE TABLE of `def`, resolved against the table as
/// declared (one referencing its own rows included: marked true, its table id filled in by
/// [`store_declared`]); each that needs an index to find its rows gets it in `def`.
pub(crate) fn resolve_declared(
    session: &Session,
    def: &mut TableDef,
    declared: &[DeclaredForeignKey],
) -> Result<Vec<(ForeignKeyDef, bool)>> {
    let mut resolved: Vec<(ForeignKeyDef, bool)> = Vec::with_capacity(declared.len());
    for one in declared {
        let own = one.referenced() == def.name;
        let fk = if own {
            one.resolve(def, def)?
        } else {
            one.resolve(def, &*session.table_def(one.referenced())?)?
        };
        if let Some(index) = referencing_index(def, &fk) {
            def.indexes.push(index);
        }
        // Kept while resolving the next, so that two get distinct names.
        def.foreign_keys.push(fk.clone());
        resolved.push((fk, own));
    }
    def.foreign_keys.clear();
    Ok(resolved)
}

/// Stores the `resolved` foreign keys of the table `created` (staged in `change`, with its
/// id) and links the tables they reference to it.
pub(crate) async fn store_declared(
    session: &Session,
    change: &mut SchemaTxn,
    created: &TableDef,
    resolved: Vec<(ForeignKeyDef, bool)>,
) -> Result<()> {
    let mut with_keys = created.clone();
    for (mut fk, own) in resolved {
        if own {
            fk.referenced_table = created.id;
            if !with_keys.referenced_by.contains(&created.id) {
                with_keys.referenced_by.push(created.id);
            }
        }
        with_keys.foreign_keys.push(fk);
    }
    let staged = {
        let (mut tx, edits) = change.stage().await?;
        let name = with_keys.name.clone();
        session
            .db
            .catalog
            .stage_alter(&mut *tx, edits, &name, with_keys)
            .await?
    };
    link_referenced(session, change, &staged).await
}

/// Records, in the schema change `change`, that `referencing` (already staged) references
/// each table its foreign keys name: each such table lists it in `referenced_by`.
pub(crate) async fn link_referenced(
    session: &Session,
    change: &mut SchemaTxn,
    referencing: &TableDef,
) -> Result<()> {
    let catalog = &session.db.catalog;
    let mut targets: Vec<u32> = referencing
        .foreign_keys
        .iter()
        .map(|fk| fk.referenced_table)
        .collect();
    targets.sort_unstable();
    targets.dedup();
    for id in targets {
        let Some(name) = table_name_of(session, id) else {
            continue;
        };
        let (mut tx, edits) = change.stage().await?;
        let mut def = catalog.stored_table(&*tx, &name).await?;
        if !def.referenced_by.contains(&referencing.id) {
            def.referenced_by.push(referencing.id);
            catalog.stage_alter(&mut *tx, edits, &name, def).await?;
        }
    }
    Ok(())
}

/// The name of the table whose id is `id`, as the session sees the catalog.
pub(crate) fn table_name_of(session: &Session, id: u32) -> Option<String> {
    session
        .schema_view()
        .tables()
        .into_iter()
        .find(|t| t.id == id)
        .map(|t| t.name.clone())
}

/// The foreign keys of other tables (outside `dropping`) that reference `def`, as
/// `constraint on table`.
pub(crate) fn dependents(
    session: &Session,
    def: &TableDef,
    dropping: &[String],
) -> Vec<(String, String)> {
    let tables = session.schema_view().tables();
    let mut found = Vec::new();
    for other in tables
        .iter()
        .filter(|t| def.referenced_by.contains(&t.id) && t.id != def.id)
        .filter(|t| !dropping.contains(&t.name))
    {
        for fk in other
            .foreign_keys
            .iter()
            .filter(|fk| fk.referenced_table == def.id)
        {
            found.push((fk.name.clone(), other.name.clone()));
        }
    }
    found
}

/// Stages, in `change`, what dropping `def` does to the foreign keys around it: each table it
/// references stops listing it; with `cascade`, the foreign keys of other tables referencing
/// it are dropped (else they make the drop fail, 2BP01).
pub(crate) async fn unlink_dropped(
    session: &Session,
    change: &mut SchemaTxn,
    def: &TableDef,
    dropping: &[String],
    cascade: bool,
) -> Result<()> {
    let dependents = dependents(session, def, dropping);
    if !dependents.is_empty() && !cascade {
        let listed: Vec<String> = dependents
            .iter()
            .map(|(constraint, table)| format!("constraint {constraint} on table {table}"))
            .collect();
        return Err(Error::DependentObjects {
            what: format!("table {}", def.name),
            dependents: listed.join(", "),
        });
    }
    let catalog = &session.db.catalog;
    let mut tables: Vec<u32> = def
        .foreign_keys
        .iter()
        .map(|fk| fk.referenced_table)
        .collect();
    tables.extend(def.referenced_by.iter().copied().filter(|id| *id != def.id));
    tables.sort_unstable();
    tables.dedup();
    for id in tables.into_iter().filter(|id| *id != def.id) {
        let Some(name) = table_name_of(session, id) else {
            continue;
        };
        if dropping.contains(&name) {
            continue;
        }
        let (mut tx, edits) = change.stage().await?;
        let mut other = catalog.stored_table(&*tx, &name).await?;
        other.referenced_by.retain(|r| *r != def.id);
        other
            .foreign_keys
            .retain(|fk| fk.referenced_table != def.id);
        catalog.stage_alter(&mut *tx, edits, &name, other).await?;
    }
    Ok(())
}

/// Fails a DROP INDEX of an index a foreign key finds rows through (the referenced side's
/// UNIQUE index, or the referencing side's only index leading with its columns).
pub(crate) fn check_index_drop(session: &Session, def: &TableDef, index: &str) -> Result<()> {
    let mut without = def.clone();
    without.indexes.retain(|i| i.name != index);
    let mut needed_by = Vec::new();
    for fk in &def.foreign_keys {
        if let Some(columns) = def.positions_of_ids(&fk.columns)
            && without.referencing_access(&columns).is_none()
        {
            needed_by.push(format!("constraint {} on table {}", fk.name, def.name));
        }
    }
    for other in session
        .schema_view()
        .tables()
        .iter()
        .filter(|t| def.referenced_by.contains(&t.id))
    {
        for fk in other
            .foreign_keys
            .iter()
            .filter(|fk| fk.referenced_table == def.id)
        {
            if let Some(columns) = def.positions_of_ids(&fk.referenced_columns)
                && without.referenced_access(&columns).is_none()
            {
                needed_by.push(format!("constraint {} on table {}", fk.name, other.name));
            }
        }
    }
    if needed_by.is_empty() {
        return Ok(());
    }
    Err(Error::DependentObjects {
        what: format!("index {index}"),
        dependents: needed_by.join(", "),
    })
}
