//! UPDATE and DELETE compiled for the native executor: the rows a statement changes are found
//! by a native query over every column of its table, and an UPDATE's SET list is computed by
//! rowdex's own scalar expressions (`native::scalar`). Compiled once (a prepared statement
//! keeps it until its table's definition changes); each run binds the parameters, reads the
//! rows through the statement's transaction and computes the new values, without DataFusion.
//!
//! What the statement then writes (constraints, triggers, index entries, RETURNING) is
//! `execute::dml`'s, the same for both paths. Anything outside what compiles here, and any run
//! whose values the native executor cannot be sure of, goes the DataFusion way.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, Delete, FromTable, SetExpr, Statement, TableFactor, TableWithJoins, Update,
};
use rowdex_catalog::{DataType, TableDef};
use rowdex_codec::Datum;

use crate::db::DbState;
use crate::db::schema_view::SchemaView;
use crate::db::statement_report::{metered_view, note_scan};
use crate::db::txn::{SessionTxn, read_view};
use crate::error::Result;
use crate::native::compile::NativeQuery;
use crate::native::scalar::Scalar;
use crate::native::scope::Scope;
use crate::sql::hints::QueryHints;
use crate::sql::names::{ident_name, object_name};
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::values::table_schema;

/// A compiled UPDATE (with its assignments) or DELETE (without).
#[derive(Debug, Clone)]
pub(crate) struct NativeWrite {
    /// Finds the rows the statement changes: every column of each, hidden ones too.
    finding: NativeQuery,
    /// `column = expression`, the rightmost of several assignments to one column.
    assignments: Vec<(usize, Scalar)>,
}

impl NativeWrite {
    /// Compiles an UPDATE of one table without FROM, ORDER BY or LIMIT whose WHERE the native
    /// executor reads and whose SET expressions it evaluates.
    pub(crate) fn update(schema: &SchemaView, update: &Update) -> Option<NativeWrite> {
        let plain = update.from.is_none()
            && update.or.is_none()
            && update.output.is_none()
            && update.order_by.is_empty()
            && update.limit.is_none()
            && update.optimizer_hints.is_empty();
        if !plain {
            return None;
        }
        let (finding, alias) = finding(schema, &update.table, update.selection.as_ref())?;
        let table = finding.table.clone();
        let scope = Scope::new(&table, alias);
        let mut assignments: Vec<(usize, Scalar)> = Vec::with_capacity(update.assignments.len());
        for assignment in &update.assignments {
            let AssignmentTarget::ColumnName(name) = &assignment.target else {
                return None;
            };
            let name = object_name(name).ok()?;
            let column = table.column_index(&name)?;
            let def = table.columns.get(column)?;
            if def.hidden || def.generated_always || def.is_generated() {
                return None;
            }
            // An instant from anything but text or a parameter (a `TIMESTAMP '...'`, a
            // timestamp column) is a time of the session's wall clock: DataFusion's cast.
            if def.data_type == DataType::TimestampTz && !is_text_or_parameter(&assignment.value) {
                return None;
            }
            let value = Scalar::compile(&scope, &assignment.value)?;
            assignments.retain(|(c, _)| *c != column);
            assignments.push((column, value));
        }
        Some(NativeWrite {
            finding,
            assignments,
        })
    }

    /// Compiles a DELETE from one table without USING, joins or LIMIT whose WHERE the native
    /// executor reads.
    pub(crate) fn delete(schema: &SchemaView, delete: &Delete) -> Option<NativeWrite> {
        let tables = match &delete.from {
            FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => tables,
        };
        let plain = delete.tables.is_empty()
            && delete.using.is_none()
            && delete.order_by.is_empty()
            && delete.limit.is_none()
            && delete.output.is_none();
        let [table] = tables.as_slice() else {
            return None;
        };
        if !plain {
            return None;
        }
        let (finding, _) = finding(schema, table, delete.selection.as_ref())?;
        Some(NativeWrite {
            finding,
            assignments: Vec::new(),
        })
    }

    /// Compiles `statement` if it is an UPDATE or DELETE the native executor runs.
    pub(crate) fn compile(schema: &SchemaView, statement: &Statement) -> Option<NativeWrite> {
        match statement {
            Statement::Update(update) => NativeWrite::update(schema, update),
            Statement::Delete(delete) => NativeWrite::delete(schema, delete),
            _ => None,
        }
    }

    /// The columns the SET list assigns, in its order.
    pub(crate) fn assigned_columns(&self) -> Vec<usize> {
        self.assignments.iter().map(|(column, _)| *column).collect()
    }

    pub(crate) fn table(&self) -> &Arc<TableDef> {
        &self.finding.table
    }

    /// Whether the table this was compiled against is still the table's definition.
    pub(crate) fn is_current(&self, schema: &SchemaView) -> bool {
        self.finding.is_current(schema)
    }

    /// Whether every SET expression is typed with `params` as the native executor is sure
    /// DataFusion types it (checked before any row is read, as DataFusion plans before it
    /// reads).
    pub(crate) fn typed(&self, params: &[Datum]) -> bool {
        let table = self.table();
        self.assignments
            .iter()
            .all(|(_, value)| value.typed(table, params).is_some())
    }

    /// Whether `params` bind to the conditions that find the rows (a value whose comparison
    /// needs a cast does not: then the statement runs through DataFusion).
    pub(crate) fn binds(&self, params: &[Datum]) -> bool {
        self.finding.bind(params).is_some()
    }

    /// The rows the statement changes, read through `txn` (so that a concurrent change to one
    /// of them conflicts at commit), every column of each; None to leave the statement to
    /// DataFusion (a value whose comparison needs a cast, a sort the native executor leaves).
    pub(crate) async fn rows(
        &self,
        db: &DbState,
        txn: &Arc<SessionTxn>,
        params: &[Datum],
        hints: &QueryHints,
    ) -> Result<Option<Vec<Vec<Datum>>>> {
        let Some(bound) = self.finding.bind(params) else {
            return Ok(None);
        };
        if bound.unsatisfiable {
            return Ok(Some(Vec::new()));
        }
        let hint = hints.for_table(&self.finding.table.name);
        let Some(plan) = self.finding.plan(db, &bound, hint).await? else {
            return Ok(None);
        };
        note_scan(&plan.scan);
        let reader = metered_view(read_view(db, Some(txn)));
        let rows = self.finding.rows(reader, plan).await?;
        Ok(Some(rows))
    }

    /// The values the SET list gives each of `rows`, before they are converted to their
    /// columns' types (for parameters [`NativeWrite::typed`] accepted); None when any of them
    /// is not one the native executor is sure of (an overflow: then nothing is written, and
    /// the statement goes the DataFusion way).
    pub(crate) fn assigned(
        &self,
        rows: &[Vec<Datum>],
        params: &[Datum],
    ) -> Option<Vec<Vec<(usize, Datum)>>> {
        let table = self.table();
        rows.iter()
            .map(|row| {
                self.assignments
                    .iter()
                    .map(|(column, value)| Some((*column, value.evaluate(table, row, params)?)))
                    .collect()
            })
            .collect()
    }
}

/// Whether `expr` is a quoted literal or a parameter (which `values::assign` reads in the
/// statement's zone when it is text).
fn is_text_or_parameter(expr: &datafusion::sql::sqlparser::ast::Expr) -> bool {
    use datafusion::sql::sqlparser::ast::{Expr, Value};
    matches!(expr, Expr::Value(value) if matches!(
        value.value,
        Value::SingleQuotedString(_) | Value::Placeholder(_)
    ))
}

/// The native query that finds a write's rows (`SELECT * FROM table WHERE selection`, made to
/// read every column), and the alias the table has in the statement.
fn finding(
    schema: &SchemaView,
    table: &TableWithJoins,
    selection: Option<&datafusion::sql::sqlparser::ast::Expr>,
) -> Option<(NativeQuery, Option<String>)> {
    if !table.joins.is_empty() {
        return None;
    }
    let TableFactor::Table { alias, .. } = &table.relation else {
        return None;
    };
    let alias = match alias {
        Some(alias) if alias.columns.is_empty() => Some(ident_name(&alias.name)),
        Some(_) => return None,
        None => None,
    };
    let mut sql = format!("SELECT * FROM {}", table.relation);
    if let Some(selection) = selection {
        sql.push_str(&format!(" WHERE {selection}"));
    }
    let mut statements = split_statements(&sql).ok()?;
    let Some(ParsedStatement::Sql { statement, .. }) = statements.pop() else {
        return None;
    };
    let Statement::Query(query) = *statement else {
        return None;
    };
    if !matches!(query.body.as_ref(), SetExpr::Select(_)) {
        return None;
    }
    let mut finding = NativeQuery::compile(schema, &query)?;
    let table = finding.table.clone();
    let every: Vec<usize> = (0..table.columns.len()).collect();
    finding.names = table.columns.iter().map(|c| c.name.clone()).collect();
    finding.schema = table_schema(&table, &every);
    finding.columns = every;
    Some((finding, alias))
}
