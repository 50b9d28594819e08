//! SELECT and EXPLAIN: the native executor runs a query when it can (and explains it in its
//! own words), DataFusion everything else.

use datafusion::sql::sqlparser::ast::Statement;

use crate::df::context::{explain, run_query};
use crate::error::Result;
use crate::native;
use crate::output::Output;
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
        if let Some(output) = native::run(&session.db, txn.as_ref(), &native, &[], hints).await? {
            return Ok(output);
        }
    }
    run_query(&session.statement_context(hints), statement.clone()).await
}

/// EXPLAIN [VERBOSE] of a statement: the native executor's plan when it would run the query,
/// DataFusion's otherwise.
pub(crate) async fn run_explain(
    session: &Session,
    explained: &Statement,
    verbose: bool,
    hints: &QueryHints,
) -> Result<Output> {
    if let Statement::Query(query) = explained
        && let Some(native) = session.native_query(query)
        && let Some(path) = native::explain(&session.db, &native, hints).await?
    {
        let line = if verbose {
            format!(
                "NativeExec: {path} projection=[{}]",
                native.names.join(", ")
            )
        } else {
            path
        };
        return Ok(Output::text_rows("plan", vec![line]));
    }
    explain(&session.statement_context(hints), explained, verbose).await
}
