//! SELECT and EXPLAIN: the native executor runs a query when it can (and explains it in its
//! own words), DataFusion everything else.

use datafusion::sql::sqlparser::ast::{Expr, Statement, UtilityOption, Value};

use crate::df::context::{explain, run_query};
use crate::error::{Error, Result};
use crate::native;
use crate::output::Output;
use crate::scan::explain::ExplainOptions;
use crate::session::Session;
use crate::sql::hints::QueryHints;

/// Runs a query: natively when it compiles and binds, through DataFusion otherwise.
pub(crate) async fn run_select(
    session: &Session,
    statement: &Statement,
    hints: &QueryHints,
) -> Result<Output> {
    if let Statement::Query(query) = statement
        && let Some(native) = session.native_query(query)
    {
        let txn = session.open_txn();
        if let Some(output) =
            native::select::run(&session.db, txn.as_ref(), &native, &[], hints).await?
        {
            return session.name_output(statement, output);
        }
    }
    let output = run_query(&session.statement_context(hints), statement.clone()).await?;
    session.name_output(statement, output)
}

/// EXPLAIN [VERBOSE] of a statement: the native executor's plan when it would run the query,
/// DataFusion's otherwise.
pub(crate) async fn run_explain(
    session: &Session,
    explained: &Statement,
    options: ExplainOptions,
    hints: &QueryHints,
) -> Result<Output> {
    if let Statement::Query(query) = explained
        && let Some(native) = session.native_query(query)
    {
        let txn = session.open_txn();
        if let Some(lines) =
            native::select::explain(&session.db, txn.as_ref(), &native, hints, options).await?
        {
            return Ok(Output::text_rows("plan", lines));
        }
    }
    explain(
        &session.db,
        &session.statement_context(hints),
        explained,
        options,
    )
    .await
}

/// The options of `EXPLAIN [ANALYZE] [VERBOSE]` and of PostgreSQL's `EXPLAIN (ANALYZE [bool],
/// VERBOSE [bool])`.
pub(crate) fn explain_options(
    analyze: bool,
    verbose: bool,
    options: Option<&[UtilityOption]>,
) -> Result<ExplainOptions> {
    let mut chosen = ExplainOptions { verbose, analyze };
    for option in options.unwrap_or_default() {
        let on = match &option.arg {
            None => true,
            Some(Expr::Value(value)) => match &value.value {
                Value::Boolean(on) => *on,
                Value::Number(n, _) if n == "0" || n == "1" => n == "1",
                other => return Err(bad_option(&option.name.value, &other.to_string())),
            },
            Some(Expr::Identifier(word)) => match word.value.to_ascii_lowercase().as_str() {
                "on" | "true" => true,
                "off" | "false" => false,
                other => return Err(bad_option(&option.name.value, other)),
            },
            Some(other) => return Err(bad_option(&option.name.value, &other.to_string())),
        };
        match option.name.value.to_ascii_lowercase().as_str() {
            "analyze" => chosen.analyze = on,
            "verbose" => chosen.verbose = on,
            other => {
                return Err(Error::Unsupported {
                    what: format!("the EXPLAIN option {other} (rowdex takes ANALYZE and VERBOSE)"),
                });
            }
        }
    }
    Ok(chosen)
}

fn bad_option(name: &str, value: &str) -> Error {
    Error::Unsupported {
        what: format!("EXPLAIN option {name} set to {value} (use true or false)"),
    }
}
