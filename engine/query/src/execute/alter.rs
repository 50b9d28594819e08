//! ALTER TABLE: `ADD [COLUMN] [IF NOT EXISTS] c type [NOT NULL] [DEFAULT e] [CHECK (...)]`,
//! `DROP [COLUMN] [IF EXISTS] c`, `RENAME [COLUMN] a TO b`, `RENAME TO t2`,
//! `ALTER [COLUMN] c SET|DROP DEFAULT`, `... SET|DROP NOT NULL`, `ADD [CONSTRAINT n] CHECK (...)`,
//! `DROP CONSTRAINT n`, `SET (TTL = n, VERSIONS = n)` and `ALTER [COLUMN] c TYPE t`.
//!
//! No stored row is rewritten (see `catalog::alter`), but for a change of type that changes
//! how a value is held (`execute::alter_type`). The statement is one catalog
//! transaction: the definition is read inside it, the rows a new constraint must hold for
//! (NOT NULL, CHECK) are read through it, and its commit bumps the schema version, so a
//! writer that wrote the old shape meanwhile makes the ALTER conflict (and run again), and
//! writers and prepared statements planned before it conflict or re-plan.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    AlterColumnOperation, AlterTable, AlterTableOperation, ColumnOption, Expr, Ident,
    RenameTableNameKind, SqlOption, Statement, TableConstraint, visit_expressions,
    visit_expressions_mut,
};
use rowdex_catalog::{CatalogError, ColumnDef, TableDef};
use rowdex_codec::{Datum, SortOrder, key};
use rowdex_store::{Direction, KeyRange, KvRead};

use crate::error::{Error, Result};
use crate::execute::add_primary_key::add_primary_key;
use crate::execute::alter_generated::{add_generated, declare_added, refuse_retyping};
use crate::execute::alter_type::{Retyped, convert_rows, set_type};
use crate::execute::column_types::parse_type;
use crate::execute::ddl::storage_attributes::{StorageDeclaration, place_families};
use crate::execute::ddl::table_attributes::TableAttribute;
use crate::execute::foreign_key_alter::alter_foreign_key;
use crate::execute::indexes::create_index;
use crate::execute::schema_txn::SchemaTxn;
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::{ident_name, object_name};
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::sql::semantics::Semantics;
use crate::write::constraints::{
    CHECK_BATCH, Checks, declared_check, declared_default, default_now, is_per_row_default,
    parse_expression,
};

/// What the table's stored rows must be checked for before the change commits, and what
/// follows it.
#[derive(Default)]
struct RowChecks {
    /// Columns that became NOT NULL without a value for the rows already stored.
    not_null: Vec<String>,
    /// Whether CHECK constraints were added.
    checks: bool,
    /// Columns added UNIQUE: each gets its unique index, built once the column exists.
    unique: Vec<String>,
    /// Columns given a new type: their stored values are converted (`execute::alter_type`).
    retyped: Vec<Retyped>,
    /// Whether a generated column was added: every stored row is rewritten with its value.
    generated: bool,
}

pub(crate) async fn alter_table(session: &Session, alter: &AlterTable) -> Result<Output> {
    let name = object_name(&alter.name)?;
    let catalog = &session.db.catalog;
    if session.schema_view().table(&name).is_none() {
        if alter.if_exists {
            return Ok(Output::Done);
        }
        return Err(Error::TableNotFound { table: name });
    }
    if let Some(key) = added_primary_key(alter)? {
        return add_primary_key(session, &name, &key).await;
    }
    // Boxed: adding one may build an index, a future no other ALTER should carry.
    if let Some(done) = Box::pin(alter_foreign_key(session, &name, alter)).await? {
        return Ok(done);
    }
    let owner_only = alter
        .operations
        .iter()
        .all(|operation| matches!(operation, AlterTableOperation::OwnerTo { .. }));
    if owner_only {
        // Every object belongs to rowdex's one owner: the table stays as it is.
        return Ok(Output::Done);
    }
    let retypes = alter.operations.iter().any(|operation| {
        matches!(
            operation,
            AlterTableOperation::AlterColumn {
                op: AlterColumnOperation::SetDataType { .. },
                ..
            }
        )
    });
    if retypes && alter.operations.len() > 1 {
        return Err(Error::Unsupported {
            what: "ALTER COLUMN ... TYPE with other changes in one ALTER TABLE (run them apart)"
                .to_string(),
        });
    }
    let mut change = SchemaTxn::begin(session).await?;
    let stored = {
        let (tx, _) = change.stage().await?;
        catalog.stored_table(&*tx, &name).await?
    };
    let mut def = stored.clone();
    let mut row_checks = RowChecks::default();
    for operation in &alter.operations {
        apply(session, &mut def, operation, &mut row_checks).map_err(|error| match error {
            Error::Catalog(CatalogError::ColumnNotFound { table, column }) => {
                Error::ColumnNotFound { table, column }
            }
            other => other,
        })?;
    }
    if row_checks.generated {
        let (mut tx, _) = change.stage().await?;
        add_generated(&mut *tx, &stored, &def, session.db.now_micros()).await?;
    }
    check_stored_rows(session, change.reader(), &def, &row_checks).await?;
    if !row_checks.retyped.is_empty() {
        let (mut tx, _) = change.stage().await?;
        let now = session.db.now_micros();
        convert_rows(&mut *tx, &stored, &def, &row_checks.retyped, now).await?;
    }
    let warnings = renamed_view_warnings(session, &stored, &def);
    let def = {
        let (mut tx, edits) = change.stage().await?;
        catalog.stage_alter(&mut *tx, edits, &name, def).await?
    };
    let in_block = change.in_block();
    change.finish(&session.db).await?;
    // Families whose storage attributes changed move into keyspaces with the new options.
    place_families(session, &def, Some(&stored)).await?;
    for column in &row_checks.unique {
        if let Err(error) = unique_index(session, &def.name, column).await {
            if !in_block {
                // The column goes again: the statement leaves the table as it was. (Inside
                // a block, the statement's savepoint undoes it all.)
                let (tx, mut undone) = catalog.begin_alter(&def.name).await?;
                undone.drop_column(column, |_| false)?;
                catalog.commit_alter(tx, &def.name, undone).await?;
            }
            return Err(error);
        }
    }
    session.set_warnings(warnings);
    Ok(Output::Done)
}

/// The key of an `ADD [CONSTRAINT n] PRIMARY KEY (...)`, which moves every row and so is a
/// statement of its own (`execute::add_primary_key`): alone in its ALTER TABLE.
fn added_primary_key(alter: &AlterTable) -> Result<Option<Vec<(String, bool)>>> {
    let mut keys = alter
        .operations
        .iter()
        .filter_map(|operation| match operation {
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::PrimaryKey(primary),
                ..
            } => Some(primary),
            _ => None,
        });
    let Some(primary) = keys.next() else {
        return Ok(None);
    };
    if alter.operations.len() > 1 {
        return Err(Error::Unsupported {
            what: "ADD PRIMARY KEY with other changes in one ALTER TABLE (run them apart)"
                .to_string(),
        });
    }
    let mut key = Vec::with_capacity(primary.columns.len());
    for index_column in &primary.columns {
        let Expr::Identifier(ident) = &index_column.column.expr else {
            return Err(Error::Unsupported {
                what: format!("the key expression {}", index_column.column.expr),
            });
        };
        let desc = index_column.column.options.asc == Some(false);
        key.push((ident_name(ident), desc));
    }
    Ok(Some(key))
}

/// Builds the unique index of a column added UNIQUE, named `<table>_<column>_key`.
async fn unique_index(session: &Session, table: &str, column: &str) -> Result<Output> {
    let quoted = |name: &str| Ident::with_quote('"', name).to_string();
    let sql = format!(
        "CREATE UNIQUE INDEX {} ON {} ({})",
        quoted(&format!("{table}_{column}_key")),
        quoted(table),
        quoted(column)
    );
    match split_statements(&sql)?.into_iter().next() {
        Some(ParsedStatement::Sql { statement, .. }) => match statement.as_ref() {
            Statement::CreateIndex(create) => create_index(session, create).await,
            _ => Err(Error::Unsupported { what: sql }),
        },
        _ => Err(Error::Unsupported { what: sql }),
    }
}

/// Applies one operation to the definition.
fn apply(
    session: &Session,
    def: &mut TableDef,
    operation: &AlterTableOperation,
    row_checks: &mut RowChecks,
) -> Result<()> {
    let semantics = session.semantics;
    match operation {
        AlterTableOperation::AddColumn {
            if_not_exists,
            column_def,
            column_position: None,
            ..
        } => {
            let name = ident_name(&column_def.name);
            if *if_not_exists && def.column_index(&name).is_some() {
                return Ok(());
            }
            add_column(def, column_def, row_checks, semantics)
        }
        AlterTableOperation::DropColumn {
            column_names,
            if_exists,
            ..
        } => {
            for column in column_names {
                let column = ident_name(column);
                if *if_exists && def.column_index(&column).is_none() {
                    continue;
                }
                def.drop_column(&column, |expr| names_column(expr, &column))?;
            }
            Ok(())
        }
        AlterTableOperation::RenameColumn {
            old_column_name,
            new_column_name,
        } => {
            let (old, new) = (ident_name(old_column_name), ident_name(new_column_name));
            def.rename_column(&old, &new)?;
            for check in &mut def.checks {
                check.expr = renamed_in(&check.expr, &old, &new)?;
            }
            for column in &mut def.columns {
                if let Some(generation) = &mut column.generation {
                    *generation = renamed_in(generation, &old, &new)?;
                }
            }
            Ok(())
        }
        AlterTableOperation::RenameTable { table_name } => {
            let (RenameTableNameKind::As(new) | RenameTableNameKind::To(new)) = table_name;
            def.name = object_name(new)?;
            Ok(())
        }
        AlterTableOperation::AlterColumn { column_name, op } => {
            alter_column(def, &ident_name(column_name), op, row_checks, semantics)
        }
        AlterTableOperation::AddConstraint {
            constraint: TableConstraint::Check(check),
            ..
        } => {
            add_check(def, check.name.as_ref().map(ident_name), &check.expr)?;
            row_checks.checks = true;
            Ok(())
        }
        AlterTableOperation::DropConstraint {
            if_exists, name, ..
        } => {
            let name = ident_name(name);
            let before = def.checks.len();
            def.checks.retain(|check| check.name != name);
            if def.checks.len() < before || *if_exists {
                return Ok(());
            }
            if def.index(&name).is_some() {
                return Err(Error::Unsupported {
                    what: format!(
                        "DROP CONSTRAINT of the UNIQUE index {name} (use DROP INDEX {name})"
                    ),
                });
            }
            Err(Error::ConstraintNotFound {
                table: def.name.clone(),
                constraint: name,
            })
        }
        AlterTableOperation::SetOptionsParens { options } => set_options(session, def, options),
        // Every object belongs to rowdex's one owner (as psql's `\d` shows): nothing to change.
        AlterTableOperation::OwnerTo { .. } => Ok(()),
        other => Err(Error::Unsupported {
            what: format!("ALTER TABLE ... {other}"),
        }),
    }
}

/// `ADD COLUMN`: appended to the table's visible columns; rows already stored read its DEFAULT
/// as evaluated now (NULL without one).
fn add_column(
    def: &mut TableDef,
    declared: &datafusion::sql::sqlparser::ast::ColumnDef,
    row_checks: &mut RowChecks,
    semantics: Semantics,
) -> Result<()> {
    let name = ident_name(&declared.name);
    let (data_type, width) = parse_type(&declared.data_type, semantics)?;
    let mut column = ColumnDef::nullable(&name, data_type);
    column.declared = width;
    let mut default = None;
    let mut generation = None;
    let mut checks = Vec::new();
    for option in &declared.options {
        match &option.option {
            ColumnOption::Generated {
                generation_expr: Some(expr),
                ..
            } => generation = Some(expr),
            ColumnOption::Null => column.nullable = true,
            ColumnOption::NotNull => column.nullable = false,
            ColumnOption::Default(expr) => default = Some(expr),
            ColumnOption::Check(check) => {
                let name = check.name.as_ref().or(option.name.as_ref()).map(ident_name);
                checks.push((name, check.expr.as_ref()));
            }
            ColumnOption::Unique(_) => row_checks.unique.push(name.clone()),
            other => {
                return Err(Error::Unsupported {
                    what: format!("the column option {other} in ADD COLUMN"),
                });
            }
        }
    }
    let position = def.add_column(column)?;
    // The version the change commits as: rows written before it do not have the column.
    def.columns[position].added_in = def.schema_version + 1;
    if let Some(expr) = generation {
        // Every stored row is rewritten with the column's value (`add_generated`), which is
        // where NOT NULL is checked.
        declare_added(def, position, expr, default.is_some())?;
        row_checks.generated = true;
    } else if let Some(expr) = default {
        let text = declared_default(def, &def.columns[position], expr)?;
        // Rows stored before the column read one value kept in the catalog; a DEFAULT that
        // draws per row would have to rewrite each of them.
        if is_per_row_default(&text) {
            return Err(Error::Unsupported {
                what: format!(
                    "ADD COLUMN {name} with the volatile DEFAULT {text}: existing rows would share \
                     one value; add the column without it, fill it with UPDATE, then SET DEFAULT"
                ),
            });
        }
        def.columns[position].default = Some(text);
        let value = default_now(def, &def.columns[position])?;
        if !value.is_null() {
            let mut encoded = Vec::new();
            key::encode_datum(&mut encoded, &value, SortOrder::Asc);
            def.columns[position].missing = Some(encoded);
        }
    }
    let added = &def.columns[position];
    if !added.nullable && added.missing.is_none() && !added.is_generated() {
        row_checks.not_null.push(name);
    }
    for (name, expr) in checks {
        add_check(def, name, expr)?;
        row_checks.checks = true;
    }
    Ok(())
}

fn add_check(def: &mut TableDef, name: Option<String>, expr: &Expr) -> Result<()> {
    let check = declared_check(def, name, expr)?;
    if def.checks.iter().any(|c| c.name == check.name) {
        return Err(Error::BadCheck {
            constraint: check.name,
            reason: "the table already has a constraint of that name".to_string(),
        });
    }
    def.checks.push(check);
    Ok(())
}

/// `ALTER COLUMN c SET|DROP DEFAULT`, `SET|DROP NOT NULL`, `[SET DATA] TYPE t [USING ...]`.
fn alter_column(
    def: &mut TableDef,
    name: &str,
    op: &AlterColumnOperation,
    row_checks: &mut RowChecks,
    semantics: Semantics,
) -> Result<()> {
    let position = def.visible_position(name)?;
    match op {
        AlterColumnOperation::SetDefault { .. } if def.columns[position].is_generated() => {
            return Err(Error::BadGeneration {
                column: name.to_string(),
                reason: "a generated column takes no DEFAULT".to_string(),
            });
        }
        AlterColumnOperation::SetDataType { .. } => refuse_retyping(def, name, names_column)?,
        _ => {}
    }
    match op {
        AlterColumnOperation::SetDefault { value } => {
            def.columns[position].default =
                Some(declared_default(def, &def.columns[position], value)?);
        }
        AlterColumnOperation::DropDefault => def.columns[position].default = None,
        AlterColumnOperation::DropNotNull if def.key_position(position).is_some() => {
            return Err(Error::Unsupported {
                what: format!("DROP NOT NULL on the primary key column {name}"),
            });
        }
        AlterColumnOperation::DropNotNull => def.columns[position].nullable = true,
        AlterColumnOperation::SetDataType {
            data_type, using, ..
        } => {
            let retyped = set_type(def, position, data_type, using.as_ref(), semantics)?;
            row_checks.retyped.push(retyped);
        }
        AlterColumnOperation::SetNotNull => {
            if def.columns[position].nullable {
                def.columns[position].nullable = false;
                row_checks.not_null.push(name.to_string());
            }
        }
        other => {
            return Err(Error::Unsupported {
                what: format!("ALTER COLUMN {name} {other}"),
            });
        }
    }
    Ok(())
}

/// `SET (TTL = seconds, VERSIONS = n, DURABILITY = ..., READONLY = ..., COMPRESSION = ...,
/// o.BLOCKSIZE = ...)`.
fn set_options(session: &Session, def: &mut TableDef, options: &[SqlOption]) -> Result<()> {
    for option in options {
        let bad = || Error::BadTableOption {
            option: option.to_string(),
        };
        let SqlOption::KeyValue { key, value } = option else {
            return Err(bad());
        };
        if let Some(attribute) = TableAttribute::read(&key.value, value) {
            let attribute = attribute?;
            attribute.apply(def);
            attribute.warn_if_unhonoured(session);
            continue;
        }
        if let Some(declared) = StorageDeclaration::read(&key.value, value) {
            let declared = declared?;
            declared.apply(def)?;
            for caveat in declared.caveats() {
                session.add_notice(caveat);
            }
            continue;
        }
        let number: u64 = value.to_string().parse().map_err(|_| bad())?;
        let changed = if key.value.eq_ignore_ascii_case("ttl") {
            def.clone().with_ttl(number)?
        } else if key.value.eq_ignore_ascii_case("versions") {
            def.clone()
                .with_versions(u32::try_from(number).map_err(|_| bad())?)?
        } else {
            return Err(bad());
        };
        *def = changed;
    }
    Ok(())
}

/// Reads every stored row of the table, through the ALTER's transaction, and fails when one
/// breaks what the change asks of it.
async fn check_stored_rows(
    session: &Session,
    tx: &dyn KvRead,
    def: &TableDef,
    row_checks: &RowChecks,
) -> Result<()> {
    if row_checks.not_null.is_empty() && !row_checks.checks {
        return Ok(());
    }
    let checks = if row_checks.checks {
        Checks::compile(def)?
    } else {
        None
    };
    let not_null: Vec<usize> = row_checks
        .not_null
        .iter()
        .filter_map(|name| def.column_index(name))
        .collect();
    let cutoff = def.expiry_cutoff(session.db.now_micros());
    let others: Vec<u8> = def.family_numbers().filter(|&f| f != 0).collect();
    let mut range = KeyRange::prefix(&def.prefix());
    loop {
        let page = tx
            .scan_page(&range, Direction::Forward, CHECK_BATCH)
            .await?;
        let rows = rowdex_indexer::rows::decode_rows(tx, def, &page.entries, &others).await?;
        let live: Vec<Vec<Datum>> = rows
            .into_iter()
            .filter(|r| def.is_live(r, cutoff))
            .collect();
        for row in &live {
            if let Some(&column) = not_null.iter().find(|&&c| row[c].is_null()) {
                return Err(Error::ColumnHasNulls {
                    table: def.name.clone(),
                    column: def.columns[column].name.clone(),
                });
            }
        }
        if let Some(checks) = &checks {
            checks.check(def, &live).map_err(|error| match error {
                Error::CheckViolation {
                    table, constraint, ..
                } => Error::CheckViolatedByRows { table, constraint },
                other => other,
            })?;
        }
        match page.resume {
            Some(next) => range = next,
            None => return Ok(()),
        }
    }
}

/// Whether a condition (SQL text) names `column`.
fn names_column(expr: &str, column: &str) -> bool {
    let Ok(expr) = parse_expression(expr) else {
        return true;
    };
    visit_expressions(&expr, |e| match e {
        Expr::Identifier(ident) if ident_name(ident) == column => ControlFlow::Break(()),
        Expr::CompoundIdentifier(parts)
            if parts.last().is_some_and(|p| ident_name(p) == column) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// A condition (SQL text) with the column `old` named `new`.
fn renamed_in(expr: &str, old: &str, new: &str) -> Result<String> {
    let mut expr = parse_expression(expr)?;
    let renamed = Ident::with_quote('"', new);
    let _ = visit_expressions_mut(&mut expr, |e| {
        match e {
            Expr::Identifier(ident) if ident_name(ident) == old => *ident = renamed.clone(),
            Expr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last_mut().filter(|p| ident_name(p) == old) {
                    *last = renamed.clone();
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(expr.to_string())
}

/// After a RENAME TO, the views whose query names the table by its old name: they fail until
/// recreated.
fn renamed_view_warnings(session: &Session, before: &TableDef, after: &TableDef) -> Vec<String> {
    if before.name == after.name {
        return Vec::new();
    }
    let schema = session.schema_view();
    schema
        .view_names()
        .into_iter()
        .filter(|view| {
            schema.view(view).is_some_and(|sql| {
                sql.to_lowercase()
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|word| word == before.name)
            })
        })
        .map(|view| {
            format!(
                "view {view} names table {}, which is now {}: recreate the view",
                before.name, after.name
            )
        })
        .collect()
}
