//! Generated columns (`GENERATED ALWAYS AS (expr) STORED`): a column whose value every write
//! computes from the other columns of the row, so that it can lead a row key or an index
//! (`reverse(uid)`, `substr(md5(uid), 1, 4)`, `ts % 16`) while statements name only the
//! source columns.
//!
//! The expression is kept as SQL text in the catalog ([`ColumnDef::generation`]), checked when
//! declared (immutable functions only, no subquery, no other generated column), and compiled by
//! DataFusion into a physical expression evaluated over a batch of the rows being written, as a
//! CHECK is. Every path that forms a new row version (INSERT, UPSERT, COPY, UPDATE, ON CONFLICT
//! DO UPDATE, a foreign key's SET NULL / SET DEFAULT) fills the generated columns before the
//! row's key is computed, so the key, the index entries and the stored cell all hold the value
//! the expression gives.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema};
use datafusion::logical_expr::{Expr as LogicalExpr, Volatility};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::sql::sqlparser::ast::{Expr, Ident, ObjectName, visit_expressions_mut};
use rowdex_catalog::{ColumnDef, TableDef};
use rowdex_codec::Datum;

use crate::error::{Error, Result};
use crate::sql::names::ident_name;
use crate::values::{assign, datum_from_array, rows_to_batch, stored_type, table_schema};
use crate::write::constraints::{
    CHECK_BATCH, coerced_expr, compile, has_subquery, logical_expr, parse_expression,
};

/// A table's generated columns, compiled.
#[derive(Debug)]
pub(crate) struct Generation {
    /// The columns the expressions read, in the batch's order, and the batch's schema.
    sources: Vec<usize>,
    schema: SchemaRef,
    /// Each generated column's position with its compiled expression and the positions (in
    /// the table) of the columns it reads.
    compiled: Vec<(usize, Arc<dyn PhysicalExpr>, Vec<usize>)>,
    /// The generated columns a query's expression may be read from (see [`StandIn`]).
    stand_ins: Vec<StandIn>,
}

/// A generated column whose stored value is exactly its expression's (the column's type is the
/// expression's), so a query that writes the expression may read the column instead: its
/// conditions and ORDER BY then use the key or an index that holds the column (an expression
/// index is an index on a hidden one). The expression as each executor sees it: the native
/// compiler's SQL text and DataFusion's logical expression, both with columns unqualified.
#[derive(Debug)]
struct StandIn {
    column: usize,
    sql: Option<String>,
    logical: Option<String>,
}

/// Compiled generated columns by the definition they were compiled from ([`fingerprint`]):
/// a prepared statement's every run, and every write, would otherwise compile them anew.
/// Emptied past `COMPILED_MAX` definitions.
static COMPILED: LazyLock<Mutex<HashMap<String, Arc<Generation>>>> = LazyLock::new(Mutex::default);

const COMPILED_MAX: usize = 1024;

/// What a table's generated columns are compiled from: every column's name, type and
/// generation expression.
fn fingerprint(def: &TableDef) -> String {
    let mut text = String::new();
    for column in &def.columns {
        text.push_str(&format!(
            "{}\u{1f}{:?}\u{1f}{:?}\u{1f}{:?}\u{1e}",
            column.name, column.data_type, column.declared, column.generation
        ));
    }
    text
}

impl Generation {
    /// The table's generated columns, or None when it has none.
    pub(crate) fn compile(def: &TableDef) -> Result<Option<Arc<Generation>>> {
        if !def.columns.iter().any(ColumnDef::is_generated) {
            return Ok(None);
        }
        let key = fingerprint(def);
        let lock = || COMPILED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = lock().get(&key) {
            return Ok(Some(known.clone()));
        }
        let sources = source_positions(def);
        // Nullable throughout: conditions on one source compute with the others unset.
        let fields: Vec<Field> = table_schema(def, &sources)
            .fields()
            .iter()
            .map(|field| field.as_ref().clone().with_nullable(true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
        let mut compiled = Vec::new();
        let mut stand_ins = Vec::new();
        for (position, column) in def.columns.iter().enumerate() {
            if let Some(sql) = &column.generation {
                let expr = compile(&df_schema, sql)?;
                let mut reads: Vec<usize> = collect_columns(&expr)
                    .iter()
                    .filter_map(|c| sources.get(c.index()).copied())
                    .collect();
                reads.sort_unstable();
                // Read in the expression's place only when storing lost nothing: the same type
                // (an INTEGER column holds any integer the expression gives).
                if stored_type(&expr.data_type(&schema)?) == Some(column.data_type) {
                    stand_ins.push(StandIn {
                        column: position,
                        sql: parse_expression(sql)
                            .ok()
                            .and_then(|parsed| sql_key(&parsed, None)),
                        logical: logical_key(&coerced_expr(&df_schema, sql)?),
                    });
                }
                compiled.push((position, expr, reads));
            }
        }
        // An indexed expression's hidden column first: it exists for its index, where a
        // visible generated column computing the same may have none.
        stand_ins.sort_by_key(|stand_in| !def.columns[stand_in.column].hidden);
        let generation = Arc::new(Generation {
            sources,
            schema,
            compiled,
            stand_ins,
        });
        let mut known = lock();
        if known.len() >= COMPILED_MAX {
            known.clear();
        }
        known.insert(key, generation.clone());
        Ok(Some(generation))
    }

    /// The generated column a query may read for the expression `expr` (SQL, its columns
    /// unqualified or qualified by `qualifier`), if one stands for it.
    pub(crate) fn column_for_sql(&self, expr: &Expr, qualifier: &str) -> Option<usize> {
        let key = sql_key(expr, Some(qualifier))?;
        self.stand_ins
            .iter()
            .find(|stand_in| stand_in.sql.as_ref() == Some(&key))
            .map(|stand_in| stand_in.column)
    }

    /// The generated column a query may read for DataFusion's expression `expr`, if one
    /// stands for it.
    pub(crate) fn column_for_logical(&self, expr: &LogicalExpr) -> Option<usize> {
        let key = logical_key(expr)?;
        self.stand_ins
            .iter()
            .find(|stand_in| stand_in.logical.as_ref() == Some(&key))
            .map(|stand_in| stand_in.column)
    }

    /// Each generated column's position with the positions of the columns it reads.
    pub(crate) fn columns(&self) -> impl Iterator<Item = (usize, &[usize])> {
        self.compiled
            .iter()
            .map(|(position, _, reads)| (*position, reads.as_slice()))
    }

    /// Sets every generated column of `rows` (full-width rows) to its expression's value,
    /// converted to the column's type.
    pub(crate) fn fill(&self, def: &TableDef, rows: &mut [Vec<Datum>]) -> Result<()> {
        for chunk in rows.chunks_mut(CHECK_BATCH) {
            let batch = rows_to_batch(def, &self.schema, &self.sources, chunk)?;
            for (position, expr, _) in &self.compiled {
                let column = &def.columns[*position];
                let array = expr.evaluate(&batch)?.into_array(chunk.len())?;
                for (i, row) in chunk.iter_mut().enumerate() {
                    let value = datum_from_array(array.as_ref(), i)?;
                    row[*position] = match value {
                        Datum::Null if column.nullable => Datum::Null,
                        value => assign(def, column, value)?,
                    };
                }
            }
        }
        Ok(())
    }
}

/// Fills the generated columns of `rows` (nothing to do for a table without any).
pub(crate) fn fill_generated(def: &TableDef, rows: &mut [Vec<Datum>]) -> Result<()> {
    match Generation::compile(def)? {
        Some(generation) => generation.fill(def, rows),
        None => Ok(()),
    }
}

/// Fills the generated columns of the rows `rows` yields (rows kept inside other structures:
/// an UPDATE's (old, new) pairs, ON CONFLICT's updated rows, a foreign key action's new rows)
/// in one batch, as [`fill_generated`] does.
pub(crate) fn fill_generated_in<'a>(
    def: &TableDef,
    rows: impl IntoIterator<Item = &'a mut Vec<Datum>>,
) -> Result<()> {
    let Some(generation) = Generation::compile(def)? else {
        return Ok(());
    };
    let mut slots: Vec<&mut Vec<Datum>> = rows.into_iter().collect();
    let mut batch: Vec<Vec<Datum>> = slots.iter_mut().map(|row| std::mem::take(*row)).collect();
    generation.fill(def, &mut batch)?;
    for (slot, row) in slots.into_iter().zip(batch) {
        *slot = row;
    }
    Ok(())
}

/// Refuses a write that gives a generated column among `targets` a value of its own: only
/// NULL (what the DEFAULT keyword gives it) may reach one.
pub(crate) fn refuse_generated_targets(
    def: &TableDef,
    targets: &[usize],
    rows: &[Vec<Datum>],
) -> Result<()> {
    for &position in targets {
        let column = &def.columns[position];
        let Some(expr) = &column.generation else {
            continue;
        };
        if rows.iter().any(|row| !row[position].is_null()) {
            return Err(Error::GeneratedColumnWritten {
                table: def.name.clone(),
                column: column.name.clone(),
                expr: expr.clone(),
            });
        }
    }
    Ok(())
}

/// The positions of the columns a generation expression may read: the table's columns that are
/// not generated.
fn source_positions(def: &TableDef) -> Vec<usize> {
    (0..def.columns.len())
        .filter(|&position| !def.columns[position].is_generated())
        .collect()
}

/// Checks the generation expression `expr` of `column` as declared in `def` (whose other
/// columns are all declared) and returns the text the catalog keeps: it must read only columns
/// of the table that are not generated themselves, call only immutable functions, hold no
/// subquery, and give a value of a type the column takes.
pub(crate) fn declared_generation(
    def: &TableDef,
    column: &ColumnDef,
    expr: &Expr,
) -> Result<String> {
    let bad = |reason: String| Error::BadGeneration {
        column: column.name.clone(),
        reason,
    };
    if column.default.is_some() || column.generated_always {
        return Err(bad(
            "a generated column has no DEFAULT and is no identity column".to_string(),
        ));
    }
    if has_subquery(expr) {
        return Err(bad("it cannot use a subquery".to_string()));
    }
    let sql = expr.to_string();
    // Resolved over every column, so that naming a generated one says so instead of "not
    // found".
    let everything: Vec<usize> = (0..def.columns.len()).collect();
    let schema = table_schema(def, &everything);
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let logical = logical_expr(&df_schema, &sql)?;
    for reference in logical.column_refs() {
        let named = def.column_index(&reference.name);
        if let Some(other) = named.map(|p| &def.columns[p]) {
            if other.is_generated() || other.name == column.name {
                return Err(bad(format!(
                    "it reads the generated column {}; a generated column is computed from \
                     stored columns only",
                    other.name
                )));
            }
            if other.hidden {
                return Err(bad(format!("it reads the hidden column {}", other.name)));
            }
        }
    }
    if let Some(function) = changing_function(&logical) {
        return Err(bad(format!(
            "it calls {function}, whose value can change between calls with the same \
             arguments; a generation expression may call immutable functions only"
        )));
    }
    // The expression's type must be one the column takes: evaluated over sources only.
    let sources = source_positions(def);
    let source_schema = table_schema(def, &sources);
    let source_df = DFSchema::try_from(source_schema.as_ref().clone())?;
    compile(&source_df, &sql)?;
    Ok(sql)
}

/// The first function `expr` calls that is not immutable (`now()`, `random()`,
/// `nextval(...)`), if any.
fn changing_function(expr: &LogicalExpr) -> Option<String> {
    let mut found = None;
    let _ = expr.apply(|e| {
        if let LogicalExpr::ScalarFunction(call) = e
            && call.func.signature().volatility != Volatility::Immutable
        {
            found = Some(format!("{}()", call.func.name()));
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

/// `expr` as the text a stand-in is matched by: without the parentheses around it,
/// identifiers by their SQL names (unquoted ones in lower case), columns qualified by
/// `qualifier` unqualified, function names in lower case. None when it names a column of
/// another table.
fn sql_key(expr: &Expr, qualifier: Option<&str>) -> Option<String> {
    let mut expr = unnested(expr).clone();
    let mut foreign = false;
    let _ = visit_expressions_mut(&mut expr, |e| {
        let column = match e {
            Expr::Identifier(ident) => Some(ident_name(ident)),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [table, column] if qualifier.is_some_and(|q| ident_name(table) == q) => {
                    Some(ident_name(column))
                }
                _ => {
                    foreign = true;
                    None
                }
            },
            Expr::Function(function) => {
                let name = function.name.to_string().to_lowercase();
                function.name = ObjectName::from(vec![Ident::new(name)]);
                None
            }
            _ => None,
        };
        if let Some(column) = column {
            *e = Expr::Identifier(Ident::with_quote('"', column));
        }
        ControlFlow::<()>::Continue(())
    });
    (!foreign).then(|| expr.to_string())
}

/// `expr` without the parentheses around it.
pub(crate) fn unnested(mut expr: &Expr) -> &Expr {
    while let Expr::Nested(inner) = expr {
        expr = inner;
    }
    expr
}

/// DataFusion's `expr` as the text a stand-in is matched by: its columns unqualified.
fn logical_key(expr: &LogicalExpr) -> Option<String> {
    let unqualified = expr
        .clone()
        .transform(|e| {
            Ok(match e {
                LogicalExpr::Column(column) => {
                    Transformed::yes(LogicalExpr::Column(Column::new_unqualified(column.name)))
                }
                other => Transformed::no(other),
            })
        })
        .ok()?
        .data;
    Some(unqualified.to_string())
}
