//! What a table declares about the rows written to it beyond their types: each column's
//! DEFAULT and the table's CHECK constraints. Both are SQL expressions kept as text in the
//! catalog; DataFusion compiles them into physical expressions over the table's columns, once
//! per statement, and they are evaluated over a batch of rows (a CHECK) or over no row at all
//! (a DEFAULT, which names no column).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use datafusion::arrow::array::{Array, BooleanArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::DFSchema;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{self, Expr, visit_expressions};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use rowdex_catalog::{CheckDef, ColumnDef, TableDef};
use rowdex_codec::Datum;

use crate::error::{Error, Result};
use crate::functions::register_functions;
use crate::sql::{array_literals, interval_products, type_casts};
use crate::values::{assign, datum_from_array, rows_to_batch, table_schema};

/// Rows checked at once: a statement's rows are checked in batches of this many.
pub(crate) const CHECK_BATCH: usize = 1024;

/// The context that compiles the expressions. Only its function registry and options are used,
/// so one serves every table and session.
static EXPRESSIONS: LazyLock<SessionContext> = LazyLock::new(|| {
    let ctx = SessionContext::new();
    register_functions(&ctx);
    ctx
});

/// `sql` as a DataFusion logical expression over `schema` (casts to UUID made calls first, as
/// a statement's are).
pub(crate) fn logical_expr(schema: &DFSchema, sql: &str) -> Result<datafusion::logical_expr::Expr> {
    let state_ref = EXPRESSIONS.state_ref();
    let state = state_ref.read();
    let rewritten;
    let lower = sql.to_ascii_lowercase();
    let sql = if lower.contains("uuid")
        || lower.contains("interval")
        || lower.contains("age")
        || lower.contains("[]")
    {
        let mut expr = parse_expression(sql)?;
        array_literals::array_casts_as_calls(&mut expr);
        type_casts::casts_as_calls(&mut expr);
        interval_products::products_as_calls(&mut expr);
        rewritten = expr.to_string();
        rewritten.as_str()
    } else {
        sql
    };
    Ok(state.create_logical_expr(sql, schema)?)
}

/// `sql` over `schema` as DataFusion plans it: its types coerced, simplified, and the
/// functions of the current time (`now()`, `CURRENT_TIMESTAMP`, `CURRENT_DATE`) fixed to this
/// moment.
pub(crate) fn coerced_expr(schema: &DFSchema, sql: &str) -> Result<datafusion::logical_expr::Expr> {
    let expr = logical_expr(schema, sql)?;
    let simplify = SimplifyContext::builder()
        .with_schema(Arc::new(schema.clone()))
        .with_current_time()
        .build();
    let simplifier = ExprSimplifier::new(simplify);
    Ok(simplifier.simplify(simplifier.coerce(expr, schema)?)?)
}

/// Compiles `sql` over `schema` (see [`coerced_expr`]).
pub(crate) fn compile(schema: &DFSchema, sql: &str) -> Result<Arc<dyn PhysicalExpr>> {
    let expr = coerced_expr(schema, sql)?;
    let state_ref = EXPRESSIONS.state_ref();
    let state = state_ref.read();
    Ok(state.create_physical_expr(expr, schema)?)
}

/// The first column an expression names, if any (a DEFAULT may name none).
fn column_reference(expr: &Expr) -> Option<String> {
    let mut found = None;
    let _ = visit_expressions(expr, |e| {
        match e {
            Expr::Identifier(ident) => found = Some(ident.value.clone()),
            Expr::CompoundIdentifier(parts) => {
                found = Some(
                    parts
                        .iter()
                        .map(|p| p.value.as_str())
                        .collect::<Vec<_>>()
                        .join("."),
                )
            }
            _ => return std::ops::ControlFlow::Continue(()),
        }
        std::ops::ControlFlow::Break(())
    });
    found
}

/// Whether an expression holds a subquery, which neither a DEFAULT nor a CHECK may.
pub(crate) fn has_subquery(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match e {
        Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => {
            std::ops::ControlFlow::Break(())
        }
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break()
}

/// Checks a column's DEFAULT as declared (no column, no subquery, a value the column takes)
/// and returns the text the catalog keeps.
pub(crate) fn declared_default(def: &TableDef, column: &ColumnDef, expr: &Expr) -> Result<String> {
    if let Some(name) = column_reference(expr) {
        return Err(Error::BadDefault {
            column: column.name.clone(),
            reason: format!("it names the column {name}; a DEFAULT cannot use column references"),
        });
    }
    if has_subquery(expr) {
        return Err(Error::BadDefault {
            column: column.name.clone(),
            reason: "a DEFAULT cannot use a subquery".to_string(),
        });
    }
    let sql = expr.to_string();
    if nextval_argument(expr).is_some() {
        return Ok(sql);
    }
    let value = default_value(&sql)?;
    if !value.is_null() {
        assign(def, column, value)?;
    }
    Ok(sql)
}

/// The value of a DEFAULT expression now.
fn default_value(sql: &str) -> Result<Datum> {
    if let Some(constant) = constant_default(sql)? {
        return Ok(constant);
    }
    evaluate_default(sql)
}

/// What a DEFAULT's text is, by its text, worked out once: a DEFAULT is otherwise parsed (and a
/// constant one compiled by DataFusion) for every INSERT that leaves its column out. The map is
/// emptied past `DEFAULT_FORMS_MAX` texts.
static DEFAULT_FORMS: LazyLock<Mutex<HashMap<String, DefaultForm>>> = LazyLock::new(Mutex::default);

const DEFAULT_FORMS_MAX: usize = 4096;

#[derive(Debug, Clone)]
enum DefaultForm {
    /// No function call, so no time or randomness (`'0'`, `-1`, `'x'::text`): its value.
    Constant(Datum),
    /// `nextval('name')`: a value per row from the sequence `name`.
    Sequence(String),
    /// Evaluated once per statement (`now()`, `CURRENT_DATE`: stable within a statement).
    Evaluated,
    /// Calls a volatile function (`gen_random_uuid()`, `random()`): evaluated for each row.
    PerRow,
}

/// The form of the DEFAULT `sql` (see [`DEFAULT_FORMS`]).
fn default_form(sql: &str) -> Result<DefaultForm> {
    let lock = || DEFAULT_FORMS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = lock().get(sql) {
        return Ok(known.clone());
    }
    let expr = parse_expression(sql)?;
    let form = if let Some(sequence) = nextval_argument(&expr) {
        DefaultForm::Sequence(sequence)
    } else {
        let calls_function = visit_expressions(&expr, |e| match e {
            Expr::Function(_) | Expr::Subquery(_) | Expr::Exists { .. } => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        })
        .is_break();
        match calls_function {
            true if logical_expr(&DFSchema::empty(), sql)?.is_volatile() => DefaultForm::PerRow,
            true => DefaultForm::Evaluated,
            false => DefaultForm::Constant(evaluate_default(sql)?),
        }
    };
    let mut known = lock();
    if known.len() >= DEFAULT_FORMS_MAX {
        known.clear();
    }
    known.insert(sql.to_string(), form.clone());
    Ok(form)
}

/// The value of the DEFAULT `sql` if it is constant; None for one evaluated anew each time.
fn constant_default(sql: &str) -> Result<Option<Datum>> {
    Ok(match default_form(sql)? {
        DefaultForm::Constant(value) => Some(value),
        DefaultForm::Sequence(_) | DefaultForm::Evaluated | DefaultForm::PerRow => None,
    })
}

/// The DEFAULT `sql` evaluated now, by DataFusion.
fn evaluate_default(sql: &str) -> Result<Datum> {
    // One row in, one value out.
    Ok(evaluate_default_rows(sql, 1)?.pop().unwrap_or(Datum::Null))
}

/// The DEFAULT `sql` evaluated for `rows` rows at once: one value each (a volatile function
/// draws anew for every row).
fn evaluate_default_rows(sql: &str, rows: usize) -> Result<Vec<Datum>> {
    let expr = compile(&DFSchema::empty(), sql)?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options)?;
    let array = expr.evaluate(&batch)?.into_array(rows)?;
    (0..rows)
        .map(|row| datum_from_array(array.as_ref(), row))
        .collect()
}

/// Whether the DEFAULT `sql` draws a value per row by calling a volatile function
/// (`gen_random_uuid()`, `random()`); sequences draw per row too, apart
/// ([`sequence_of_default`]).
pub(crate) fn is_per_row_default(sql: &str) -> bool {
    matches!(default_form(sql), Ok(DefaultForm::PerRow))
}

/// `rows` values of `column`'s per-row DEFAULT, each converted to the column's type.
pub(crate) fn per_row_defaults(
    def: &TableDef,
    column: &ColumnDef,
    rows: usize,
) -> Result<Vec<Datum>> {
    let Some(sql) = &column.default else {
        return Ok(vec![Datum::Null; rows]);
    };
    evaluate_default_rows(sql, rows)?
        .into_iter()
        .map(|value| assign(def, column, value))
        .collect()
}

/// A column's DEFAULT evaluated now and converted to its type; NULL for a column without one.
pub(crate) fn default_now(def: &TableDef, column: &ColumnDef) -> Result<Datum> {
    let Some(sql) = column
        .default
        .as_ref()
        .filter(|s| sequence_of_default(s).is_none())
    else {
        return Ok(Datum::Null);
    };
    let value = default_value(sql)?;
    if value.is_null() {
        return Ok(value);
    }
    assign(def, column, value)
}

/// An SQL expression's text parsed (a DEFAULT or CHECK as the catalog keeps it).
pub(crate) fn parse_expression(sql: &str) -> Result<Expr> {
    Parser::new(&GenericDialect {})
        .try_with_sql(sql)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|error| Error::Parse {
            message: error.to_string(),
        })
}

/// The sequence a DEFAULT draws from, when it is `nextval('name')` (SERIAL and identity
/// columns, or declared so).
pub(crate) fn sequence_of_default(sql: &str) -> Option<String> {
    match default_form(sql).ok()? {
        DefaultForm::Sequence(sequence) => Some(sequence),
        DefaultForm::Constant(_) | DefaultForm::Evaluated | DefaultForm::PerRow => None,
    }
}

/// `name` of a call `nextval('name')`.
pub(crate) fn nextval_argument(expr: &Expr) -> Option<String> {
    match sequence_call(expr)? {
        (true, name) => Some(name),
        (false, _) => None,
    }
}

/// A call `nextval('s')` (true) or `currval('s')` (false), with the sequence's name.
pub(crate) fn sequence_call(expr: &Expr) -> Option<(bool, String)> {
    let Expr::Function(function) = expr else {
        return None;
    };
    let next = match function.name.to_string().to_lowercase().as_str() {
        "nextval" => true,
        "currval" => false,
        _ => return None,
    };
    let ast::FunctionArguments::List(list) = &function.args else {
        return None;
    };
    match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(Expr::Value(value)))] => {
            match &value.value {
                ast::Value::SingleQuotedString(name) => Some((next, name.to_lowercase())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The row every write of new rows starts from: each column's DEFAULT, evaluated once for the
/// statement and converted to the column's type, and NULL in the columns without one or
/// whose DEFAULT draws a value per row (a sequence, a volatile function).
pub(crate) fn default_row(def: &TableDef) -> Result<Vec<Datum>> {
    let mut row = vec![Datum::Null; def.columns.len()];
    for (slot, column) in row.iter_mut().zip(&def.columns) {
        let Some(sql) = &column.default else {
            continue;
        };
        // A value per row, drawn when the rows are written (`fill_row_defaults`).
        if sequence_of_default(sql).is_some() || is_per_row_default(sql) {
            continue;
        }
        let value = default_value(sql)?;
        // A NULL default is left for the NOT NULL check of the columns a write leaves unset.
        if !value.is_null() {
            *slot = assign(def, column, value)?;
        }
    }
    Ok(row)
}

/// A column's DEFAULT as an expression to put where a statement writes the DEFAULT keyword
/// (NULL for a column without one).
pub(crate) fn default_expression(column: &ColumnDef) -> Result<Expr> {
    let Some(sql) = &column.default else {
        return Ok(Expr::value(ast::Value::Null));
    };
    parse_expression(sql).map_err(|error| Error::Parse {
        message: format!("the DEFAULT of column {}: {error}", column.name),
    })
}

/// A column's DEFAULT as a DataFusion expression, for INSERTs that DataFusion plans.
pub(crate) fn default_logical_expr(sql: &str) -> Result<datafusion::logical_expr::Expr> {
    let state_ref = EXPRESSIONS.state_ref();
    let state = state_ref.read();
    Ok(state.create_logical_expr(sql, &DFSchema::empty())?)
}

/// A table's CHECK constraints, compiled for one statement.
pub(crate) struct Checks {
    schema: SchemaRef,
    columns: Vec<usize>,
    compiled: Vec<(CheckDef, Arc<dyn PhysicalExpr>)>,
}

impl Checks {
    /// The table's constraints, or None when it declares none.
    pub(crate) fn compile(def: &TableDef) -> Result<Option<Checks>> {
        if def.checks.is_empty() {
            return Ok(None);
        }
        let columns: Vec<usize> = (0..def.columns.len()).collect();
        let schema = table_schema(def, &columns);
        let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
        let mut compiled = Vec::with_capacity(def.checks.len());
        for check in &def.checks {
            compiled.push((check.clone(), compile(&df_schema, &check.expr)?));
        }
        Ok(Some(Checks {
            schema,
            columns,
            compiled,
        }))
    }

    /// Fails on the first row, in order, that makes a constraint false (NULL passes).
    pub(crate) fn check(&self, def: &TableDef, rows: &[Vec<Datum>]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch = rows_to_batch(def, &self.schema, &self.columns, rows)?;
        for (check, expr) in &self.compiled {
            let array = expr.evaluate(&batch)?.into_array(rows.len())?;
            let violated = match array.as_any().downcast_ref::<BooleanArray>() {
                Some(answers) => {
                    (0..answers.len()).any(|i| answers.is_valid(i) && !answers.value(i))
                }
                None => true,
            };
            if violated {
                return Err(Error::CheckViolation {
                    table: def.name.clone(),
                    constraint: check.name.clone(),
                    expr: check.expr.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Checks a CHECK constraint as declared (the columns it names exist, it is a condition, no
/// subquery) and returns it as the catalog keeps it, named as PostgreSQL would when unnamed.
pub(crate) fn declared_check(
    def: &TableDef,
    name: Option<String>,
    expr: &Expr,
) -> Result<CheckDef> {
    let name = name.unwrap_or_else(|| check_name(def, expr));
    if has_subquery(expr) {
        return Err(Error::BadCheck {
            constraint: name,
            reason: "a CHECK cannot use a subquery".to_string(),
        });
    }
    let check = CheckDef {
        name,
        expr: expr.to_string(),
    };
    let columns: Vec<usize> = (0..def.columns.len()).collect();
    let schema = table_schema(def, &columns);
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let compiled = compile(&df_schema, &check.expr)?;
    if compiled.data_type(&schema)? != ArrowType::Boolean {
        return Err(Error::BadCheck {
            constraint: check.name,
            reason: "its expression is not a condition (true or false)".to_string(),
        });
    }
    Ok(check)
}

/// PostgreSQL's name for an unnamed CHECK: `<table>_<column>_check` when the condition names
/// exactly one column (wherever it was declared), `<table>_check` otherwise; a numeral is
/// appended while the name is taken.
fn check_name(def: &TableDef, expr: &Expr) -> String {
    let mut named: Vec<String> = Vec::new();
    let _ = visit_expressions(expr, |e| {
        let column = match e {
            Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
            Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.to_lowercase()),
            _ => None,
        };
        if let Some(column) = column
            && !named.contains(&column)
        {
            named.push(column);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let base = match named.as_slice() {
        [column] => format!("{}_{}_check", def.name, column),
        _ => format!("{}_check", def.name),
    };
    let mut name = base.clone();
    let mut suffix = 1;
    while def.checks.iter().any(|c| c.name == name) {
        name = format!("{base}{suffix}");
        suffix += 1;
    }
    name
}
