//! Indexes on expressions (`CREATE INDEX ON users (lower(email))`): each indexed expression is
//! a hidden generated column of the table, computed by every write like any generated column
//! (`write::generated`), and the index is an ordinary index on it. A query that writes the same
//! expression (normalised: case of names, qualifiers, parentheses) reads the column instead
//! (`Scope::operand`, `df::filters::column_of`), so its conditions and ORDER BY use the index.
//!
//! Before the index is built, the hidden columns are added in a schema change of their own that
//! rewrites every stored row with their values (`add_generated`); an expression that a
//! generated column of the table already stands for reuses it. The last index on a hidden
//! column takes it away when dropped (`TableDef::drop_unindexed_expressions`), a failed build
//! included.

use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::logical_expr::ExprSchemable;
use datafusion::sql::sqlparser::ast::Expr;
use rowdex_catalog::{ColumnDef, TableDef};

use crate::error::{Error, Result};
use crate::execute::alter_generated::add_generated;
use crate::execute::schema_txn::SchemaTxn;
use crate::session::Session;
use crate::values::{stored_type, table_schema};
use crate::write::constraints::coerced_expr;
use crate::write::generated::{Generation, declared_generation};

/// The column of `table` each key part of an index reads (`parts`, as CREATE INDEX lists
/// them): a column by name, or for an expression the generated column that stands for it,
/// added hidden when there is none. Returns the table as it is after any such addition.
pub(crate) async fn expression_columns(
    session: &Session,
    table: Arc<TableDef>,
    parts: &[&Expr],
) -> Result<Arc<TableDef>> {
    let missing: Vec<&Expr> = parts
        .iter()
        .copied()
        .filter(|expr| is_expression(expr) && stand_in(&table, expr).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(table);
    }
    let catalog = &session.db.catalog;
    let mut change = SchemaTxn::begin(session).await?;
    let stored = {
        let (tx, _) = change.stage().await?;
        catalog.stored_table(&*tx, &table.name).await?
    };
    let mut def = stored.clone();
    for expr in missing {
        if stand_in(&def, expr).is_some() {
            // Written twice in one CREATE INDEX.
            continue;
        }
        add_hidden(&mut def, expr)?;
    }
    let def = {
        let (mut tx, edits) = change.stage().await?;
        add_generated(&mut *tx, &stored, &def, session.db.now_micros()).await?;
        catalog
            .stage_alter(&mut *tx, edits, &table.name, def)
            .await?
    };
    change.finish(&session.db).await?;
    Ok(def)
}

/// Takes away the hidden expression columns of `table` no index uses (those a CREATE INDEX
/// added before failing).
pub(crate) async fn forget_expressions(session: &Session, table: &str) -> Result<()> {
    let catalog = &session.db.catalog;
    let mut change = SchemaTxn::begin(session).await?;
    {
        let (mut tx, edits) = change.stage().await?;
        let mut def = catalog.stored_table(&*tx, table).await?;
        if def.drop_unindexed_expressions().is_empty() {
            return Ok(());
        }
        catalog.stage_alter(&mut *tx, edits, table, def).await?;
    }
    change.finish(&session.db).await
}

/// Whether an index key part is an expression rather than a column's name.
pub(crate) fn is_expression(expr: &Expr) -> bool {
    !matches!(expr, Expr::Identifier(_))
}

/// The hidden generated column of `def` that stands for `expr`, if any. (A visible generated
/// column computing the same is not reused: the index stays an index on the expression, as
/// `pg_get_indexdef` and ORMs' reflection show it.)
pub(crate) fn stand_in(def: &TableDef, expr: &Expr) -> Option<usize> {
    Generation::compile(def)
        .ok()
        .flatten()?
        .column_for_sql(expr, &def.name)
        .filter(|&column| def.columns[column].hidden)
}

/// Adds a hidden generated column computing `expr` to `def`, of the expression's own type (so
/// that it stands for the expression), checked as a declared generated column is.
fn add_hidden(def: &mut TableDef, expr: &Expr) -> Result<()> {
    let unsupported = |why: &str| Error::Unsupported {
        what: format!("indexing the expression {expr}: {why}"),
    };
    let sources: Vec<usize> = (0..def.columns.len())
        .filter(|&p| !def.columns[p].is_generated())
        .collect();
    let schema = table_schema(def, &sources);
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let arrow_type = coerced_expr(&df_schema, &expr.to_string())?.get_type(&df_schema)?;
    let data_type =
        stored_type(&arrow_type).ok_or_else(|| unsupported("no column type holds its values"))?;
    let mut number = 1;
    while def.column_index(&format!("_expr_{number}")).is_some() {
        number += 1;
    }
    let mut column = ColumnDef::nullable(&format!("_expr_{number}"), data_type);
    column.hidden = true;
    let generation = declared_generation(def, &column, expr)?;
    let position = def.add_column(column)?;
    def.columns[position].added_in = def.schema_version + 1;
    def.columns[position].generation = Some(generation);
    Ok(())
}
