//! RETURNING on INSERT, UPSERT, UPDATE and DELETE: the rows the statement wrote (as written,
//! defaults and merged columns included) or removed, run through the statement's RETURNING
//! list as a SELECT over those rows alone, so every expression a query takes works there
//! ([`select_over`], which ON CONFLICT DO UPDATE also evaluates its SET list with).

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::sql::sqlparser::ast::{
    FromTable, Ident, SelectItem, Statement, TableFactor, TableObject, TableWithJoins,
};
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;

use crate::df::context::{rows_context, run_query};
use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::time_zone::statement_time_zone;
use crate::values::{rows_to_batch, table_schema};

/// The name the returned rows are registered under; the RETURNING list sees them under the
/// table's name (or the statement's alias for it).
const RETURNED: &str = "rowdex_returned_rows";

/// The result of `items` over `rows` (full rows of `def`, in the order written), where the
/// table is called `alias`.
pub(crate) async fn returning(
    def: &TableDef,
    alias: &str,
    items: &[SelectItem],
    rows: &[Vec<Datum>],
) -> Result<Output> {
    let columns: Vec<usize> = def.visible_columns().map(|(i, _)| i).collect();
    let schema = table_schema(def, &columns);
    let batch = rows_to_batch(def, &schema, &columns, rows)?;
    let list: Vec<String> = items.iter().map(ToString::to_string).collect();
    select_over(batch, alias, &list).await
}

/// `SELECT list FROM batch AS alias`, run by DataFusion over the batch alone: the rows come
/// out in the batch's order, named as a query names them.
pub(crate) async fn select_over(
    batch: RecordBatch,
    alias: &str,
    list: &[String],
) -> Result<Output> {
    let ctx = rows_context(&statement_time_zone())?;
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
    ctx.register_table(RETURNED, Arc::new(table))?;
    let sql = format!(
        "SELECT {} FROM {RETURNED} AS {}",
        list.join(", "),
        Ident::with_quote('"', alias)
    );
    let Some(ParsedStatement::Sql { statement, .. }) = split_statements(&sql)?.into_iter().next()
    else {
        return Err(Error::Unsupported {
            what: format!("the expressions {}", list.join(", ")),
        });
    };
    run_query(&ctx, *statement).await
}

/// `output`, the rows a write with RETURNING returned, with its columns named as the session
/// names a query's (PostgreSQL's names under its semantics: `upper`, not `upper(t.name)`).
pub(crate) fn name_returned(
    session: &Session,
    statement: &Statement,
    output: Output,
) -> Result<Output> {
    if !matches!(output, Output::Rows { .. }) {
        return Ok(output);
    }
    match split_returning(statement) {
        Some((_, query)) => session.name_output(&query, output),
        None => Ok(output),
    }
}

/// For a write with RETURNING, the statement without it and the query whose columns its rows
/// have (`SELECT list FROM table AS alias`), which a Describe plans in place of the write;
/// None for anything else.
pub(crate) fn split_returning(statement: &Statement) -> Option<(Statement, Statement)> {
    let mut write = statement.clone();
    let (items, table, alias) = match &mut write {
        Statement::Insert(insert) => {
            let TableObject::TableName(name) = &insert.table else {
                return None;
            };
            let alias = insert.table_alias.as_ref().map(|a| a.alias.to_string());
            (insert.returning.take()?, name.to_string(), alias)
        }
        Statement::Update(update) => {
            let (table, alias) = table_and_alias(&update.table)?;
            (update.returning.take()?, table, alias)
        }
        Statement::Delete(delete) => {
            let tables = match &delete.from {
                FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => tables,
            };
            let (table, alias) = table_and_alias(tables.first()?)?;
            (delete.returning.take()?, table, alias)
        }
        _ => return None,
    };
    let list: Vec<String> = items.iter().map(ToString::to_string).collect();
    let alias = alias.map(|a| format!(" AS {a}")).unwrap_or_default();
    let sql = format!("SELECT {} FROM {table}{alias}", list.join(", "));
    match split_statements(&sql).ok()?.into_iter().next()? {
        ParsedStatement::Sql { statement, .. } => Some((write, *statement)),
        ParsedStatement::Command(_) => None,
    }
}

/// A written table's name and alias, as SQL text.
fn table_and_alias(table: &TableWithJoins) -> Option<(String, Option<String>)> {
    match &table.relation {
        TableFactor::Table { name, alias, .. } => {
            Some((name.to_string(), alias.as_ref().map(|a| a.name.to_string())))
        }
        _ => None,
    }
}
