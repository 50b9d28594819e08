//! Triggers: `CREATE TRIGGER name [BEFORE|AFTER] INSERT|UPDATE [OF cols]|DELETE ON t [FOR EACH
//! ROW] [WHEN cond] BEGIN stmt; ... END`, `DROP TRIGGER`, and firing them.
//!
//! A write statement on a table with triggers runs in a transaction of its own (or the
//! session's), and its triggers' statements run in that same transaction through a session
//! derived for them ([`Session::for_trigger`]): a trigger that fails, or `RAISE(ABORT, msg)`s,
//! fails the statement and undoes everything it and its triggers wrote. For each row, `NEW`
//! and `OLD` are bound as literals of the row's values before the statement is planned.
//!
//! Order: the statement computes its rows, then fires every BEFORE trigger for every row (row
//! by row, triggers in creation order), writes the rows, then fires the AFTER triggers the
//! same way. (SQLite interleaves BEFORE, write and AFTER row by row; the two differ only for a
//! trigger that reads the rows of the statement's own table.) Triggers may fire others,
//! themselves included, down to [`MAX_TRIGGER_DEPTH`] levels.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    ConditionalStatements, CreateTrigger, DropTrigger, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Ident, ObjectName, Statement, TriggerEvent as SqlEvent, TriggerObject,
    TriggerObjectKind, TriggerPeriod, Value, visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use rowdex_catalog::{DataType, TableDef, TriggerDef, TriggerEvent, TriggerTiming};
use rowdex_codec::{Datum, format_decimal};

use crate::db::txn::SessionTxn;
use crate::df::raise::RAISE_FUNCTION;
use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::literals::literal_of_datum;
use crate::sql::names::{ident_name, object_name};
use crate::sql::parse::ParsedStatement;
use crate::write::constraints::parse_expression;

/// How deeply triggers may nest (a trigger's statement firing a trigger, and so on) before
/// the statement fails: deep enough for any chain of tables, short of a runaway recursion.
pub(crate) const MAX_TRIGGER_DEPTH: usize = 64;

/// `CREATE TRIGGER`, SQLite's form (PostgreSQL's `EXECUTE FUNCTION` needs PL/pgSQL).
pub(crate) async fn create_trigger(session: &Session, create: &CreateTrigger) -> Result<Output> {
    let name = object_name(&create.name)?;
    let bad = |reason: &str| Error::BadTrigger {
        trigger: name.clone(),
        reason: reason.to_string(),
    };
    let unsupported = |what: &str| Error::Unsupported {
        what: format!("{what} in CREATE TRIGGER"),
    };
    if create.temporary {
        return Err(unsupported("TEMP"));
    }
    if create.or_replace || create.or_alter {
        return Err(unsupported("OR REPLACE"));
    }
    if create.is_constraint || create.characteristics.is_some() {
        return Err(unsupported("CONSTRAINT triggers"));
    }
    if !create.referencing.is_empty() || create.referenced_table_name.is_some() {
        return Err(unsupported("REFERENCING and FROM"));
    }
    if create.exec_body.is_some() {
        return Err(unsupported(
            "EXECUTE FUNCTION (rowdex triggers run the SQL statements between BEGIN and END)",
        ));
    }
    let timing = match create.period {
        None | Some(TriggerPeriod::Before) => TriggerTiming::Before,
        Some(TriggerPeriod::After) => TriggerTiming::After,
        Some(other) => return Err(unsupported(&format!("{other}"))),
    };
    if let Some(
        TriggerObjectKind::For(TriggerObject::Statement)
        | TriggerObjectKind::ForEach(TriggerObject::Statement),
    ) = &create.trigger_object
    {
        return Err(unsupported("FOR EACH STATEMENT"));
    }
    let event = match create.events.as_slice() {
        [SqlEvent::Insert] => TriggerEvent::Insert,
        [SqlEvent::Delete] => TriggerEvent::Delete,
        [SqlEvent::Update(columns)] => TriggerEvent::Update {
            columns: columns.iter().map(ident_name).collect(),
        },
        [SqlEvent::Truncate] => return Err(unsupported("TRUNCATE")),
        _ => return Err(unsupported("more than one event")),
    };
    let table = object_name(&create.table_name)?;
    if session.schema_view().view(&table).is_some() {
        return Err(unsupported("a trigger on a view (INSTEAD OF)"));
    }
    let def = session.table_def(&table)?;
    // Binding rows of NULLs finds, now rather than at the first write, a NEW or OLD the event
    // has not, a column the table has not, and a RAISE of a form rowdex does not run.
    let nulls = vec![Datum::Null; def.columns.len()];
    let rows = match event {
        TriggerEvent::Insert => BoundRows::new(&def, None, Some(&nulls)),
        TriggerEvent::Update { .. } => BoundRows::new(&def, Some(&nulls), Some(&nulls)),
        TriggerEvent::Delete => BoundRows::new(&def, Some(&nulls), None),
    };
    let statements = match &create.statements {
        Some(ConditionalStatements::BeginEnd(block)) => &block.statements,
        Some(ConditionalStatements::Sequence { statements }) => statements,
        None => return Err(bad("it has no statements")),
    };
    if statements.is_empty() {
        return Err(bad("it has no statements between BEGIN and END"));
    }
    let mut body = Vec::with_capacity(statements.len());
    for statement in statements {
        if !matches!(
            statement,
            Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
                | Statement::Query(_)
        ) {
            return Err(bad(&format!(
                "a trigger runs INSERT, UPDATE, DELETE and SELECT statements, not {statement}"
            )));
        }
        rows.bind(&name, &mut statement.clone())?;
        body.push(statement.to_string());
    }
    let when = match &create.condition {
        Some(condition) => {
            let mut checked = Statement::Query(Box::new(when_query(condition.clone())?));
            rows.bind(&name, &mut checked)?;
            Some(condition.to_string())
        }
        None => None,
    };
    let trigger = TriggerDef {
        name,
        timing,
        event,
        when,
        body,
    };
    session.db.catalog.create_trigger(&table, trigger).await?;
    Ok(Output::Done)
}

/// `DROP TRIGGER [IF EXISTS] name [ON table]`.
pub(crate) async fn drop_trigger(session: &Session, drop: &DropTrigger) -> Result<Output> {
    let name = object_name(&drop.trigger_name)?;
    if let Some(table) = &drop.table_name {
        let table = object_name(table)?;
        let def = session.table_def(&table)?;
        if !def.triggers.iter().any(|t| t.name == name) {
            return match drop.if_exists {
                true => Ok(Output::Done),
                false => {
                    Err(rowdex_catalog::CatalogError::TriggerNotFound { trigger: name }.into())
                }
            };
        }
    }
    match session.db.catalog.drop_trigger(&name).await {
        Ok(_) => Ok(Output::Done),
        Err(rowdex_catalog::CatalogError::TriggerNotFound { .. }) if drop.if_exists => {
            Ok(Output::Done)
        }
        Err(error) => Err(error.into()),
    }
}

/// One row change a statement makes: the row before (UPDATE, DELETE) and after (INSERT,
/// UPDATE).
type RowChange<'r> = (Option<&'r [Datum]>, Option<&'r [Datum]>);

/// Fires `def`'s triggers of `timing` on `event` for each of `rows`, in the statement's
/// transaction `txn`. `set` names the columns an UPDATE assigns. Does nothing, cheaply, for a
/// table without such triggers.
async fn fire(
    session: &Session,
    txn: &Arc<SessionTxn>,
    def: &TableDef,
    timing: TriggerTiming,
    event: &TriggerEvent,
    set: &[String],
    rows: &[RowChange<'_>],
) -> Result<()> {
    let triggers = def.triggers_for(timing, event, set);
    if triggers.is_empty() || rows.is_empty() {
        return Ok(());
    }
    let compiled = triggers
        .into_iter()
        .map(CompiledTrigger::new)
        .collect::<Result<Vec<_>>>()?;
    let inner = session.for_trigger(txn.clone());
    for &(old, new) in rows {
        for trigger in &compiled {
            trigger.run(&inner, def, old, new).await?;
        }
    }
    Ok(())
}

/// Fires INSERT triggers for new rows. Each of these entry points first asks whether any
/// trigger fires, so a write to a table without triggers allocates nothing here.
pub(crate) async fn fire_inserts(
    session: &Session,
    txn: &Arc<SessionTxn>,
    def: &TableDef,
    timing: TriggerTiming,
    rows: &[Vec<Datum>],
) -> Result<()> {
    if def
        .triggers_for(timing, &TriggerEvent::Insert, &[])
        .is_empty()
    {
        return Ok(());
    }
    let changes: Vec<RowChange> = rows.iter().map(|new| (None, Some(&new[..]))).collect();
    fire(
        session,
        txn,
        def,
        timing,
        &TriggerEvent::Insert,
        &[],
        &changes,
    )
    .await
}

/// Fires UPDATE triggers for (old, new) row pairs of an UPDATE that assigns `set`.
pub(crate) async fn fire_updates(
    session: &Session,
    txn: &Arc<SessionTxn>,
    def: &TableDef,
    timing: TriggerTiming,
    set: &[String],
    rows: &[(Vec<Datum>, Vec<Datum>)],
) -> Result<()> {
    let event = TriggerEvent::Update {
        columns: Vec::new(),
    };
    if def.triggers_for(timing, &event, set).is_empty() {
        return Ok(());
    }
    let changes: Vec<RowChange> = rows
        .iter()
        .map(|(old, new)| (Some(&old[..]), Some(&new[..])))
        .collect();
    fire(session, txn, def, timing, &event, set, &changes).await
}

/// Fires DELETE triggers for removed rows.
pub(crate) async fn fire_deletes(
    session: &Session,
    txn: &Arc<SessionTxn>,
    def: &TableDef,
    timing: TriggerTiming,
    rows: &[Vec<Datum>],
) -> Result<()> {
    if def
        .triggers_for(timing, &TriggerEvent::Delete, &[])
        .is_empty()
    {
        return Ok(());
    }
    let changes: Vec<RowChange> = rows.iter().map(|old| (Some(&old[..]), None)).collect();
    fire(
        session,
        txn,
        def,
        timing,
        &TriggerEvent::Delete,
        &[],
        &changes,
    )
    .await
}

/// A trigger with its statements parsed once for all the rows it fires for.
struct CompiledTrigger<'t> {
    def: &'t TriggerDef,
    /// `SELECT 1 WHERE cond`: whether the trigger runs for a row.
    when: Option<Statement>,
    body: Vec<Statement>,
}

impl<'t> CompiledTrigger<'t> {
    fn new(def: &'t TriggerDef) -> Result<CompiledTrigger<'t>> {
        let when = match &def.when {
            Some(text) => Some(Statement::Query(Box::new(when_query(parse_expression(
                text,
            )?)?))),
            None => None,
        };
        let body = def
            .body
            .iter()
            .map(|text| parse_statement(text))
            .collect::<Result<Vec<_>>>()?;
        Ok(CompiledTrigger { def, when, body })
    }

    /// Runs the trigger for one row change, in `inner` (the statement's transaction).
    async fn run(
        &self,
        inner: &Session,
        table: &TableDef,
        old: Option<&[Datum]>,
        new: Option<&[Datum]>,
    ) -> Result<()> {
        let rows = BoundRows::new(table, old, new);
        if let Some(when) = &self.when {
            let mut statement = when.clone();
            rows.bind(&self.def.name, &mut statement)?;
            if !returns_rows(run_nested(inner, statement).await?) {
                return Ok(());
            }
        }
        if inner.trigger_depth > MAX_TRIGGER_DEPTH {
            return Err(Error::TriggerDepth {
                limit: MAX_TRIGGER_DEPTH,
            });
        }
        for statement in &self.body {
            let mut statement = statement.clone();
            rows.bind(&self.def.name, &mut statement)?;
            run_nested(inner, statement).await?;
        }
        Ok(())
    }
}

/// Runs one of a trigger's statements on a task of its own: the statement may fire triggers
/// in turn, and a task's polls start from the runtime's loop, so nesting does not deepen the
/// stack (it would, polled inline, by a whole statement's frames per level). The task is
/// stopped if the statement waiting for it is dropped.
fn run_nested(inner: &Session, statement: Statement) -> NestedRun {
    let session = inner.clone();
    let task = tokio::spawn(async move {
        let parsed = ParsedStatement::Sql {
            statement: Box::new(statement),
            upsert: false,
            hints: Default::default(),
            families: Default::default(),
        };
        session.run(&parsed).await
    });
    Box::pin(async move {
        let _stop = StopOnDrop(task.abort_handle());
        task.await.unwrap_or(Err(Error::WorkerStopped {
            work: "running a trigger's statement",
        }))
    })
}

/// A trigger statement's run, typed apart from the statement that fires it (whose future
/// would otherwise contain itself).
type NestedRun = std::pin::Pin<Box<dyn Future<Output = Result<Output>> + Send>>;

/// Stops a task when the future waiting for it goes away.
struct StopOnDrop(tokio::task::AbortHandle);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn returns_rows(output: Output) -> bool {
    match output {
        Output::Rows { batches, .. } => batches.iter().any(|b| b.num_rows() > 0),
        _ => false,
    }
}

/// `SELECT 1 WHERE cond`.
fn when_query(condition: Expr) -> Result<datafusion::sql::sqlparser::ast::Query> {
    match parse_statement(&format!("SELECT 1 WHERE {condition}"))? {
        Statement::Query(query) => Ok(*query),
        _ => Err(Error::Parse {
            message: format!("WHEN {condition}"),
        }),
    }
}

fn parse_statement(text: &str) -> Result<Statement> {
    Parser::new(&GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut parser| parser.parse_statement())
        .map_err(|e| Error::Parse {
            message: format!("{text}: {e}"),
        })
}

/// The `NEW` and `OLD` rows of one row change, for binding into a trigger's statements.
struct BoundRows<'r> {
    table: &'r TableDef,
    old: Option<&'r [Datum]>,
    new: Option<&'r [Datum]>,
}

impl<'r> BoundRows<'r> {
    fn new(
        table: &'r TableDef,
        old: Option<&'r [Datum]>,
        new: Option<&'r [Datum]>,
    ) -> BoundRows<'r> {
        BoundRows { table, old, new }
    }

    /// Replaces every `NEW.column` and `OLD.column` of `statement` with the row's value, and
    /// `RAISE(kind, msg)` with the `raise` function.
    fn bind(&self, trigger: &str, statement: &mut Statement) -> Result<()> {
        let mut failure = None;
        let _ = visit_expressions_mut(statement, |expr| {
            let Expr::CompoundIdentifier(parts) = expr else {
                return ControlFlow::Continue(());
            };
            let [row, column] = parts.as_slice() else {
                return ControlFlow::Continue(());
            };
            let row_name = ident_name(row);
            let values = match row_name.as_str() {
                "new" => self.new,
                "old" => self.old,
                _ => return ControlFlow::Continue(()),
            };
            match self.value(trigger, &row_name, values, column) {
                Ok(literal) => {
                    *expr = literal;
                    ControlFlow::Continue(())
                }
                Err(error) => {
                    failure = Some(error);
                    ControlFlow::Break(())
                }
            }
        });
        if let Some(error) = failure {
            return Err(error);
        }
        raise_calls(statement).map_err(|reason| Error::BadTrigger {
            trigger: trigger.to_string(),
            reason,
        })
    }

    /// The literal of `row.column`.
    fn value(
        &self,
        trigger: &str,
        row: &str,
        values: Option<&[Datum]>,
        column: &Ident,
    ) -> Result<Expr> {
        let Some(values) = values else {
            return Err(Error::BadTrigger {
                trigger: trigger.to_string(),
                reason: format!(
                    "{} has no {} row",
                    event_text(self.old, self.new),
                    row.to_uppercase()
                ),
            });
        };
        let position = self.table.visible_position(&ident_name(column))?;
        let datum = &values[position];
        match (datum, self.table.columns[position].data_type) {
            (Datum::Decimal(units), DataType::Decimal { precision, scale }) => {
                parse_expression(&format!(
                    "CAST('{}' AS DECIMAL({precision}, {scale}))",
                    format_decimal(*units, scale)
                ))
            }
            (datum, _) => literal_of_datum(datum),
        }
    }
}

fn event_text(old: Option<&[Datum]>, new: Option<&[Datum]>) -> &'static str {
    match (old, new) {
        (None, _) => "an INSERT",
        (_, None) => "a DELETE",
        _ => "an UPDATE",
    }
}

/// Rewrites SQLite's `RAISE(ABORT|FAIL|ROLLBACK, message)` into `raise('ABORT', message)`;
/// refuses `RAISE(IGNORE)` (skipping the row) and other forms, with the reason.
fn raise_calls(statement: &mut Statement) -> std::result::Result<(), String> {
    let mut failure = None;
    let _ = visit_expressions_mut(statement, |expr| {
        let Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        if !function.name.to_string().eq_ignore_ascii_case("raise") {
            return ControlFlow::Continue(());
        }
        let FunctionArguments::List(list) = &mut function.args else {
            failure = Some("RAISE takes (ABORT, message)".to_string());
            return ControlFlow::Break(());
        };
        let kind = match list.args.first() {
            Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(kind)))) => {
                kind.value.to_uppercase()
            }
            // Already rewritten (a statement bound twice).
            Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(_)))) => {
                return ControlFlow::Continue(());
            }
            _ => String::new(),
        };
        match (kind.as_str(), list.args.len()) {
            ("ABORT" | "FAIL" | "ROLLBACK", 2) => {
                list.args[0] = FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(
                    Value::SingleQuotedString(kind),
                )));
                function.name = ObjectName::from(vec![Ident::new(RAISE_FUNCTION)]);
                ControlFlow::Continue(())
            }
            ("IGNORE", _) => {
                failure = Some("RAISE(IGNORE) is not supported".to_string());
                ControlFlow::Break(())
            }
            _ => {
                failure = Some(format!("RAISE takes (ABORT, message), not {function}"));
                ControlFlow::Break(())
            }
        }
    });
    match failure {
        Some(reason) => Err(reason),
        None => Ok(()),
    }
}
