//! CREATE VIEW (DROP VIEW is with the other DROPs in `ddl`). A view is its defining query,
//! stored as SQL text in the catalog and planned again each time a statement names it (so it
//! always sees the current tables and their indexes).

use datafusion::sql::sqlparser::ast::{CreateView, Statement};

use crate::df::context::plan_statement;
use crate::error::{Error, Result};
use crate::execute::schema_txn::SchemaTxn;
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::object_name;
use crate::sql::parse::{ParsedStatement, split_statements};

pub(crate) async fn create_view(session: &Session, create: &CreateView) -> Result<Output> {
    if create.materialized {
        return Err(Error::Unsupported {
            what: "materialized views".to_string(),
        });
    }
    let name = object_name(&create.name)?;
    if create.if_not_exists && session.schema_view().view(&name).is_some() {
        return Ok(Output::Done);
    }
    let query = create.query.to_string();
    let sql = if create.columns.is_empty() {
        query
    } else {
        let columns: Vec<String> = create.columns.iter().map(|c| c.name.to_string()).collect();
        format!(
            "SELECT * FROM ({query}) AS \"{}\" ({})",
            name.replace('"', "\"\""),
            columns.join(", ")
        )
    };
    // Planned once now, so a view over a missing table or column fails here, not later.
    let statements = split_statements(&sql)?;
    if let Some(ParsedStatement::Sql { statement, .. }) = statements.first() {
        plan_statement(&session.ctx, Statement::clone(statement)).await?;
    }
    let mut change = SchemaTxn::begin(session).await?;
    {
        let (mut tx, edits) = change.stage().await?;
        session
            .db
            .catalog
            .stage_create_view(&mut *tx, edits, &name, &sql, create.or_replace)
            .await?;
    }
    change.finish(&session.db).await?;
    Ok(Output::Done)
}
