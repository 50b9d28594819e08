//! Sequences in SQL: `CREATE SEQUENCE [IF NOT EXISTS] s [START [WITH] n] [INCREMENT [BY] n]`,
//! `DROP SEQUENCE`, the sequences SERIAL and identity columns own, and the functions
//! `nextval('s')` and `currval('s')`.
//!
//! The functions are not DataFusion functions (a value must be taken from the store, which a
//! scalar function cannot wait for): before a statement runs, each call is replaced by its
//! value, a fresh one per `nextval` written in the statement. That is exact where each call is
//! evaluated once (a `VALUES` row, a SELECT without FROM); a call in a query over a table's rows
//! would need a value per row, and is refused. `currval` is the value this session last took
//! from the sequence, by `nextval` or by a SERIAL or identity column of a row it inserted.

use std::ops::ControlFlow;
use std::sync::PoisonError;

use datafusion::sql::sqlparser::ast::{
    self, Expr, Ident, ObjectName, SelectItem, SequenceOptions, SetExpr, Statement,
    visit_expressions, visit_expressions_mut,
};
use rowdex_catalog::SequenceDef;

use crate::db::block_sequences;
use crate::error::{Error, Result};
use crate::execute::schema_txn::SchemaTxn;
use crate::output::Output;
use crate::session::Session;
use crate::sql::literals::literal_exact;
use crate::sql::names::object_name;
use crate::write::constraints::sequence_call;

pub(crate) async fn create_sequence(
    session: &Session,
    name: &ObjectName,
    if_not_exists: bool,
    options: &[SequenceOptions],
) -> Result<Output> {
    let name = object_name(name)?;
    let (start, increment) = start_and_increment(options)?;
    let sequence = SequenceDef {
        name,
        id: 0,
        increment,
        next: start,
        owned_by: None,
    };
    let mut change = SchemaTxn::begin(session).await?;
    let created = {
        let (mut tx, edits) = change.stage().await?;
        session
            .db
            .catalog
            .stage_create_sequence(&mut *tx, edits, sequence)
            .await
    };
    match created {
        Err(rowdex_catalog::CatalogError::SequenceExists { .. }) if if_not_exists => {
            Ok(Output::Done)
        }
        created => {
            created?;
            change.finish(&session.db).await?;
            Ok(Output::Done)
        }
    }
}

/// START and INCREMENT of a sequence's options (1 and 1 unless given; START defaults to 1
/// for an ascending sequence and -1 for a descending one, as in PostgreSQL).
pub(crate) fn start_and_increment(options: &[SequenceOptions]) -> Result<(i64, i64)> {
    let number = |expr: &Expr| match literal_exact(expr) {
        Some(rowdex_codec::Datum::Int(n)) => Ok(n),
        _ => Err(Error::Unsupported {
            what: format!("the sequence option value {expr} (an integer is expected)"),
        }),
    };
    let (mut start, mut increment) = (None, 1i64);
    for option in options {
        match option {
            SequenceOptions::StartWith(expr, _) => start = Some(number(expr)?),
            SequenceOptions::IncrementBy(expr, _) => increment = number(expr)?,
            SequenceOptions::Cache(_) | SequenceOptions::Cycle(false) => {}
            other => {
                return Err(Error::Unsupported {
                    what: format!("the sequence option {other}"),
                });
            }
        }
    }
    if increment == 0 {
        return Err(Error::Unsupported {
            what: "a sequence with INCREMENT 0".to_string(),
        });
    }
    let start = start.unwrap_or(if increment > 0 { 1 } else { -1 });
    Ok((start, increment))
}

pub(crate) async fn drop_sequence(session: &Session, name: &str, if_exists: bool) -> Result<()> {
    let mut change = SchemaTxn::begin(session).await?;
    let dropped = {
        let (mut tx, edits) = change.stage().await?;
        session
            .db
            .catalog
            .stage_drop_sequence(&mut *tx, edits, name)
            .await
    };
    match dropped {
        Err(rowdex_catalog::CatalogError::SequenceNotFound { .. }) if if_exists => Ok(()),
        dropped => {
            dropped?;
            change.finish(&session.db).await
        }
    }
}

/// Whether the statement calls `nextval` or `currval`.
pub(crate) fn calls_sequences(statement: &Statement) -> bool {
    visit_expressions(statement, |e| match sequence_call(e) {
        Some(_) => ControlFlow::Break(()),
        None => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Replaces every `nextval('s')` and `currval('s')` in the statement by its value.
pub(crate) async fn bind_sequence_calls(
    session: &Session,
    statement: &mut Statement,
) -> Result<()> {
    let mut calls: Vec<(bool, String)> = Vec::new();
    let _ = visit_expressions(statement, |e| {
        if let Some(call) = sequence_call(e) {
            calls.push(call);
        }
        ControlFlow::<()>::Continue(())
    });
    if calls.is_empty() {
        return Ok(());
    }
    if reads_rows(statement) {
        return Err(Error::Unsupported {
            what: "nextval or currval in a query over a table's rows (use a SERIAL or identity column, or call it in VALUES)".to_string(),
        });
    }
    let mut values: Vec<i64> = Vec::with_capacity(calls.len());
    for (next, sequence) in &calls {
        let value = if *next {
            let db = &session.db;
            let txn = session.open_txn();
            let taken = block_sequences::next_values(db, txn.as_deref(), sequence, 1).await?;
            taken.first().copied().unwrap_or_default()
        } else {
            let known = session
                .sequence_values
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(sequence)
                .copied();
            known.ok_or_else(|| Error::CurrvalUndefined {
                sequence: sequence.clone(),
            })?
        };
        values.push(value);
    }
    // A call that is a whole select item keeps its function's name as the column's, as in
    // PostgreSQL (`SELECT nextval('s')` answers a column `nextval`).
    if let Statement::Query(query) = statement
        && let SetExpr::Select(select) = query.body.as_mut()
    {
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(expr) = item
                && let Some((next, _)) = sequence_call(expr)
            {
                let alias = Ident::new(if next { "nextval" } else { "currval" });
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias,
                };
            }
        }
    }
    let mut values = values.into_iter();
    let _ = visit_expressions_mut(statement, |e| {
        if sequence_call(e).is_some()
            && let Some(value) = values.next()
        {
            *e = Expr::value(ast::Value::Number(value.to_string(), false));
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(())
}

/// Whether the statement has a query that reads rows of a table (a FROM clause), where a call
/// would be evaluated once per row.
fn reads_rows(statement: &Statement) -> bool {
    let query = match statement {
        Statement::Query(query) => Some(query.as_ref()),
        Statement::Insert(insert) => insert.source.as_deref(),
        _ => return true,
    };
    match query.map(|q| q.body.as_ref()) {
        None | Some(SetExpr::Values(_)) => false,
        Some(SetExpr::Select(select)) => !select.from.is_empty(),
        Some(_) => true,
    }
}
