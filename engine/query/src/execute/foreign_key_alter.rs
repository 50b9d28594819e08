//! `ALTER TABLE ... ADD [CONSTRAINT n] FOREIGN KEY (...) REFERENCES ...` and `ALTER TABLE ...
//! DROP CONSTRAINT n` of a foreign key: changes to two tables' definitions, so statements of
//! their own, alone in their ALTER TABLE. Adding one checks every stored row (through the
//! index that finds the referencing rows in order, one lookup per distinct value) in the
//! transaction that stores it, so a row written meanwhile makes it conflict.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    self, AlterColumnOperation, AlterTable, AlterTableOperation, Ident, Statement, TableConstraint,
};
use rowdex_catalog::{IndexDef, TableDef};

use crate::error::{Error, Result};
use crate::execute::foreign_keys::{
    DeclaredForeignKey, link_referenced, referencing_index, table_name_of,
};
use crate::execute::indexes::create_index;
use crate::execute::schema_txn::SchemaTxn;
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::ident_name;
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::write::references::{Outgoing, key_text};

/// `ALTER TABLE table ADD [CONSTRAINT n] FOREIGN KEY ...`, alone in its ALTER TABLE: creates
/// the referencing index if one is needed, checks every stored row, then stores the
/// constraint in both tables' definitions, in one schema change.
async fn add_foreign_key(
    session: &Session,
    table: &str,
    declared: &DeclaredForeignKey,
) -> Result<Output> {
    let catalog = &session.db.catalog;
    let referenced = session.table_def(declared.referenced())?;
    let current = session.table_def(table)?;
    // Resolved once first, so that a bad declaration fails before an index is built.
    let fk = declared.resolve(&current, &referenced)?;
    let mut created_index = None;
    if let Some(index) = referencing_index(&current, &fk) {
        let create = index_statement(table, &current, &index)?;
        Box::pin(create_index(session, &create)).await?;
        created_index = Some(index.name);
    }
    let added = add_checked(session, table, declared).await;
    if let (Err(_), Some(index), None) = (&added, &created_index, session.open_txn()) {
        // The statement leaves the table as it was (inside a block, its savepoint does).
        let mut change = SchemaTxn::begin(session).await?;
        {
            let (mut tx, edits) = change.stage().await?;
            catalog.stage_drop_index(&mut *tx, edits, index).await?;
        }
        change.finish(&session.db).await?;
    }
    added
}

/// The CREATE INDEX statement of `index` on `table`.
fn index_statement(table: &str, def: &TableDef, index: &IndexDef) -> Result<ast::CreateIndex> {
    let quoted = |name: &str| Ident::with_quote('"', name).to_string();
    let columns: Vec<String> = index
        .columns
        .iter()
        .map(|k| quoted(&def.columns[k.column].name))
        .collect();
    let sql = format!(
        "CREATE INDEX {} ON {} ({})",
        quoted(&index.name),
        quoted(table),
        columns.join(", ")
    );
    match split_statements(&sql)?.into_iter().next() {
        Some(ParsedStatement::Sql { statement, .. }) => match *statement {
            Statement::CreateIndex(create) => Ok(create),
            _ => Err(Error::Unsupported { what: sql }),
        },
        _ => Err(Error::Unsupported { what: sql }),
    }
}

/// The checked part of [`add_foreign_key`]: in one schema change, reads both definitions as
/// stored, checks every stored row through the change's transaction, and stores both.
async fn add_checked(
    session: &Session,
    table: &str,
    declared: &DeclaredForeignKey,
) -> Result<Output> {
    let catalog = &session.db.catalog;
    let mut change = SchemaTxn::begin(session).await?;
    let (mut def, referenced) = {
        let (tx, _) = change.stage().await?;
        let def = catalog.stored_table(&*tx, table).await?;
        let referenced = if declared.referenced() == table {
            def.clone()
        } else {
            catalog.stored_table(&*tx, declared.referenced()).await?
        };
        (def, referenced)
    };
    let fk = declared.resolve(&def, &referenced)?;
    def.foreign_keys.push(fk.clone());
    let referenced = if referenced.id == def.id {
        def.referenced_by.push(def.id);
        def.clone()
    } else {
        referenced
    };
    let outgoing = Outgoing::new(&fk, Arc::new(def.clone()), Arc::new(referenced))?;
    let now = session.db.now_micros();
    if let Some(missing) = outgoing.first_missing(change.reader(), now).await? {
        return Err(Error::ForeignKeyViolation {
            table: def.name.clone(),
            constraint: fk.name.clone(),
            key: key_text(&def, &outgoing.columns, &missing),
            referenced: outgoing.referenced.name.clone(),
        });
    }
    let staged = {
        let (mut tx, edits) = change.stage().await?;
        catalog.stage_alter(&mut *tx, edits, table, def).await?
    };
    link_referenced(session, &mut change, &staged).await?;
    change.finish(&session.db).await?;
    Ok(Output::Done)
}

/// `ALTER TABLE table DROP CONSTRAINT name` of a foreign key: gone from the table, and the
/// referenced table no longer lists it (unless another of its foreign keys references it).
async fn drop_foreign_key(session: &Session, table: &str, name: &str) -> Result<Output> {
    let catalog = &session.db.catalog;
    let mut change = SchemaTxn::begin(session).await?;
    {
        let (mut tx, edits) = change.stage().await?;
        let mut def = catalog.stored_table(&*tx, table).await?;
        let Some(position) = def.foreign_keys.iter().position(|fk| fk.name == name) else {
            return Err(Error::ConstraintNotFound {
                table: table.to_string(),
                constraint: name.to_string(),
            });
        };
        let fk = def.foreign_keys.remove(position);
        let still = def
            .foreign_keys
            .iter()
            .any(|other| other.referenced_table == fk.referenced_table);
        if fk.referenced_table == def.id && !still {
            def.referenced_by.retain(|id| *id != def.id);
        }
        let def = catalog.stage_alter(&mut *tx, edits, table, def).await?;
        drop(tx);
        if fk.referenced_table != def.id
            && !still
            && let Some(referenced) = table_name_of(session, fk.referenced_table)
        {
            let (mut tx, edits) = change.stage().await?;
            let mut other = catalog.stored_table(&*tx, &referenced).await?;
            other.referenced_by.retain(|id| *id != def.id);
            catalog
                .stage_alter(&mut *tx, edits, &referenced, other)
                .await?;
        }
    }
    change.finish(&session.db).await?;
    Ok(Output::Done)
}

/// A foreign key added or dropped: a change to two tables, so a statement of its own.
enum ForeignKeyChange {
    Add(DeclaredForeignKey),
    Drop(String),
}

/// The foreign key an ALTER TABLE adds (`ADD [CONSTRAINT n] FOREIGN KEY ...`) or drops (`DROP
/// CONSTRAINT n` naming one of the table's foreign keys), alone in its ALTER TABLE.
fn foreign_key_change(
    session: &Session,
    table: &str,
    alter: &AlterTable,
) -> Result<Option<ForeignKeyChange>> {
    let def = session.table_def(table)?;
    let mut changes = Vec::new();
    for operation in &alter.operations {
        match operation {
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::ForeignKey(constraint),
                ..
            } => changes.push(ForeignKeyChange::Add(DeclaredForeignKey::read(
                constraint, None, None,
            )?)),
            AlterTableOperation::DropConstraint { name, .. }
            | AlterTableOperation::DropForeignKey { name, .. }
                if def.foreign_key(&ident_name(name)).is_some() =>
            {
                changes.push(ForeignKeyChange::Drop(ident_name(name)));
            }
            AlterTableOperation::AlterColumn {
                column_name,
                op: AlterColumnOperation::SetDataType { .. },
            } if in_foreign_key(session, &def, &ident_name(column_name)) => {
                return Err(Error::Unsupported {
                    what: format!(
                        "ALTER COLUMN {} TYPE: the column is in a foreign key (drop it, change the type, add it again)",
                        ident_name(column_name)
                    ),
                });
            }
            _ => {}
        }
    }
    if changes.is_empty() {
        return Ok(None);
    }
    if alter.operations.len() > 1 {
        return Err(Error::Unsupported {
            what: "a foreign key added or dropped with other changes in one ALTER TABLE (run them apart)"
                .to_string(),
        });
    }
    Ok(changes.pop())
}

/// Whether column `column` of `def` is a referencing or referenced column of a foreign key.
fn in_foreign_key(session: &Session, def: &TableDef, column: &str) -> bool {
    let Some(id) = def.column_index(column).map(|p| def.columns[p].id) else {
        return false;
    };
    def.foreign_keys.iter().any(|fk| fk.columns.contains(&id))
        || session.schema_view().tables().iter().any(|other| {
            other
                .foreign_keys
                .iter()
                .any(|fk| fk.referenced_table == def.id && fk.referenced_columns.contains(&id))
        })
}

/// Runs an ALTER TABLE that adds or drops a foreign key (see [`foreign_key_change`]); None
/// for one that does neither.
pub(crate) async fn alter_foreign_key(
    session: &Session,
    table: &str,
    alter: &AlterTable,
) -> Result<Option<Output>> {
    Ok(Some(match foreign_key_change(session, table, alter)? {
        None => return Ok(None),
        Some(ForeignKeyChange::Add(declared)) => add_foreign_key(session, table, &declared).await?,
        Some(ForeignKeyChange::Drop(constraint)) => {
            drop_foreign_key(session, table, &constraint).await?
        }
    }))
}
