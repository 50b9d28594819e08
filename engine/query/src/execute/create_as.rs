//! `CREATE TABLE [IF NOT EXISTS] t [(PRIMARY KEY (cols))] [WITH (...)] AS query`: a table whose
//! columns are the query's (names and types as the query gives them), filled with its rows.
//! Without a PRIMARY KEY the table gets the hidden row id, as any table declared without one.
//!
//! The query runs first; the table is then created and its rows written in batches, each in a
//! transaction of its own. A failure on the way (a duplicate key, a conflict) drops the table
//! again, so the statement leaves either the whole table or nothing. Inside a transaction
//! block the table and its rows are written in the block's transaction instead.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    CreateTable, Expr, Query, SelectItem, SetExpr, Statement, TableConstraint, TableFactor,
};
use rowdex_catalog::{CatalogError, ColumnDef, DataType, TableDef};
use rowdex_codec::Datum;

use crate::db::txn::SessionTxn;
use crate::df::context::run_query;
use crate::error::{Error, Result};
use crate::execute::copy::load::batch_rows;
use crate::execute::ddl::storage_attributes::place_families;
use crate::execute::ddl::table_options;
use crate::execute::keydesign::advise_table;
use crate::execute::schema_txn::SchemaTxn;
use crate::output::Output;
use crate::session::Session;
use crate::sql::hints::QueryHints;
use crate::sql::names::{ident_name, object_name};
use crate::values::{datum_from_array, full_row, stored_type};
use crate::write::bulk::drop_table;
use crate::write::rows::{OnExisting, write_rows};

pub(crate) async fn create_table_as(session: &Session, create: &CreateTable) -> Result<Output> {
    let name = object_name(&create.name)?;
    let Some(query) = &create.query else {
        return Err(Error::Unsupported {
            what: "CREATE TABLE ... AS without a query".to_string(),
        });
    };
    if session.schema_view().table(&name).is_some() {
        if create.if_not_exists {
            return Ok(Output::Done);
        }
        return Err(Error::Catalog(CatalogError::TableExists { table: name }));
    }
    if !create.columns.is_empty() {
        return Err(Error::Unsupported {
            what: "column definitions in CREATE TABLE ... AS (name the columns in the query)"
                .to_string(),
        });
    }
    let key = declared_key(create)?;
    let ctx = session.statement_context(&QueryHints::default());
    let Output::Rows { schema, batches } = run_query(&ctx, Statement::Query(query.clone())).await?
    else {
        return Err(Error::Unsupported {
            what: format!("CREATE TABLE ... AS {query}"),
        });
    };
    let declared = source_column_types(session, query, schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let data_type = match declared.get(i).copied().flatten() {
            Some(declared) => declared,
            None => stored_type(field.data_type()).ok_or_else(|| Error::Unsupported {
                what: format!("a column of type {} ({})", field.data_type(), field.name()),
            })?,
        };
        columns.push(ColumnDef::nullable(field.name(), data_type));
    }
    let options = table_options(&create.table_options)?;
    let def = options.apply(TableDef::new(&name, columns, &key, options.buckets)?)?;
    let def = options.apply_storage(def)?;
    let warnings = advise_table(&def);
    let mut change = SchemaTxn::begin(session).await?;
    let def = {
        let (mut tx, edits) = change.stage().await?;
        session
            .db
            .catalog
            .stage_create_table(&mut *tx, edits, def)
            .await?
    };
    let in_block = change.in_block();
    place_families(session, &def, None).await?;
    change.finish(&session.db).await?;
    // Inside a block the rows go into its transaction, and a failure is undone with the rest
    // of the statement by its savepoint.
    let txn = session.open_txn();
    // A READONLY table is filled by its own CREATE, as HBase's bulk load fills one.
    let writable = TableDef {
        read_only: false,
        ..(*def).clone()
    };
    let filled = fill(session, txn.as_ref(), &writable, &batches).await;
    if let Err(error) = filled {
        if !in_block {
            // Nothing of the statement stays.
            drop_table(&session.db, &def.name).await?;
        }
        return Err(error);
    }
    session.set_warnings(warnings);
    options.notify(session);
    Ok(Output::Done)
}

/// The table's PRIMARY KEY, declared as its only table constraint (`(PRIMARY KEY (a, b))`).
fn declared_key(create: &CreateTable) -> Result<Vec<(String, bool)>> {
    let mut key = Vec::new();
    for constraint in &create.constraints {
        let TableConstraint::PrimaryKey(primary) = constraint else {
            return Err(Error::Unsupported {
                what: format!("the constraint {constraint} in CREATE TABLE ... AS"),
            });
        };
        for column in &primary.columns {
            let Expr::Identifier(ident) = &column.column.expr else {
                return Err(Error::Unsupported {
                    what: format!("the key expression {}", column.column.expr),
                });
            };
            key.push((ident_name(ident), column.column.options.asc == Some(false)));
        }
    }
    Ok(key)
}

/// The declared types behind a query's outputs where they are plain columns of the one table it
/// reads (`SELECT *`, `SELECT a, b AS c`), so that a copy keeps `VARCHAR(3)` and `DECIMAL(5, 1)`
/// as declared; None for any other output (typed from its Arrow type).
fn source_column_types(session: &Session, query: &Query, outputs: usize) -> Vec<Option<DataType>> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Vec::new();
    };
    let [from] = select.from.as_slice() else {
        return Vec::new();
    };
    let TableFactor::Table { name, .. } = &from.relation else {
        return Vec::new();
    };
    let Some(table) = from
        .joins
        .is_empty()
        .then(|| object_name(name).ok())
        .flatten()
        .and_then(|name| session.schema_view().table(&name))
    else {
        return Vec::new();
    };
    let column = |expr: &Expr| {
        let name = match expr {
            Expr::Identifier(ident) => ident_name(ident),
            Expr::CompoundIdentifier(parts) => ident_name(parts.last()?),
            _ => return None,
        };
        let position = table.column_index(&name)?;
        Some(table.columns[position].data_type)
    };
    if let [SelectItem::Wildcard(_)] = select.projection.as_slice() {
        return table
            .visible_columns()
            .map(|(_, c)| Some(c.data_type))
            .collect();
    }
    let types: Vec<Option<DataType>> = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => column(expr),
            _ => None,
        })
        .collect();
    if types.len() == outputs {
        types
    } else {
        Vec::new()
    }
}

/// Writes the query's rows into the new table: a batch per transaction, or all in `txn`.
async fn fill(
    session: &Session,
    txn: Option<&Arc<SessionTxn>>,
    def: &TableDef,
    batches: &[datafusion::arrow::record_batch::RecordBatch],
) -> Result<()> {
    let targets: Vec<usize> = def.visible_columns().map(|(i, _)| i).collect();
    let batch_rows = batch_rows(&session.db.store.capabilities(), def);
    let mut rows: Vec<Vec<Datum>> = Vec::with_capacity(batch_rows);
    for batch in batches {
        for row in 0..batch.num_rows() {
            let values = batch
                .columns()
                .iter()
                .map(|column| datum_from_array(column.as_ref(), row));
            rows.push(full_row(def, &[], &targets, values)?);
            if rows.len() >= batch_rows {
                let full = std::mem::replace(&mut rows, Vec::with_capacity(batch_rows));
                write_rows(&session.db, txn, def, &targets, full, OnExisting::Fail).await?;
            }
        }
    }
    write_rows(&session.db, txn, def, &targets, rows, OnExisting::Fail).await?;
    Ok(())
}
