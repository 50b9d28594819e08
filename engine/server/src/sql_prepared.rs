//! SQL-level prepared statements, as PostgreSQL has them: `PREPARE name [(type, ...)] AS
//! statement` keeps the statement prepared (a rowdex [`Prepared`], so a query the native
//! executor runs is compiled once), `EXECUTE name [(value, ...)]` runs it with the values as
//! `$1`, `$2`, ..., and `DEALLOCATE [PREPARE] name | ALL` forgets it. They live as long as the
//! connection, across transactions, as in PostgreSQL.
//!
//! EXECUTE's values are constants, read as `prepared_statements` says; other expressions are
//! refused.

use std::sync::Arc;

use pgwire::api::results::Tag;
use pgwire::error::ErrorInfo;
use rowdex::Output;
use rowdex::datafusion::sql::sqlparser::ast::{self, Expr, Statement};
use rowdex::datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use rowdex::datafusion::sql::sqlparser::parser::Parser;

use crate::kind::{KIND_WORDS, Kind, Ran};
use crate::prepared_statements::{ParameterType, SqlStatement, parameter_type, value};
use crate::sqlstate::{error_info, statement_error};
use crate::state::SessionState;

fn parse(sql: &str) -> Result<Statement, Box<ErrorInfo>> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql)
        .map_err(|error| Box::new(error_info("42601", error.to_string())))?;
    match (statements.pop(), statements.is_empty()) {
        (Some(statement), true) => Ok(statement),
        _ => Err(Box::new(error_info(
            "42601",
            "PREPARE and EXECUTE take one statement",
        ))),
    }
}

/// `PREPARE name [(type, ...)] AS statement`.
pub fn prepare(state: &SessionState, sql: &str) -> Ran {
    let Statement::Prepare {
        name,
        data_types,
        statement,
    } = parse(sql)?
    else {
        return Err(Box::new(error_info("42601", "not a PREPARE statement")));
    };
    let name = identifier(&name);
    if state.sql_statements().contains(&name) {
        return Err(Box::new(error_info(
            "42P05",
            format!("prepared statement \"{name}\" already exists"),
        )));
    }
    let text = statement.to_string();
    let prepared = state
        .session
        .prepare(&text)
        .map_err(|error| Box::new(statement_error(&error, &text)))?;
    let words: Vec<String> = text
        .split_whitespace()
        .take(KIND_WORDS)
        .map(str::to_uppercase)
        .collect();
    let kind = Kind::of(&words, |_| false);
    let types = data_types.iter().map(parameter_type).collect();
    let kept = SqlStatement {
        prepared,
        types,
        kind,
        sql: text,
    };
    state.sql_statements().insert(name, kept);
    Ok((Output::Done, Tag::new("PREPARE")))
}

/// The statement an `EXECUTE name ...` runs, and its values.
fn executed(
    state: &SessionState,
    sql: &str,
) -> Result<(Arc<SqlStatement>, String, Vec<Expr>), Box<ErrorInfo>> {
    let Statement::Execute {
        name: Some(name),
        parameters,
        ..
    } = parse(sql)?
    else {
        return Err(Box::new(error_info(
            "42601",
            "not an EXECUTE of a statement",
        )));
    };
    let name = match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(ident)] => identifier(ident),
        _ => name.to_string(),
    };
    match state.sql_statements().get(&name) {
        Some(kept) => Ok((kept, name, parameters)),
        None => Err(Box::new(error_info(
            "26000",
            format!("prepared statement \"{name}\" does not exist"),
        ))),
    }
}

/// The statement `sql` (an EXECUTE) runs, if it names one (to describe its rows).
pub fn executed_statement(state: &SessionState, sql: &str) -> Option<Arc<SqlStatement>> {
    executed(state, sql).ok().map(|(kept, _, _)| kept)
}

/// `EXECUTE name [(value, ...)]`: the prepared statement's output, under its own tag.
pub async fn execute(state: &SessionState, sql: &str) -> Ran {
    let (kept, name, parameters) = executed(state, sql)?;
    if parameters.len() != kept.prepared.parameter_count() {
        return Err(Box::new(error_info(
            "42601",
            format!(
                "wrong number of parameters for prepared statement \"{name}\": expected {}, got {}",
                kept.prepared.parameter_count(),
                parameters.len()
            ),
        )));
    }
    let mut values = Vec::with_capacity(parameters.len());
    for (i, expr) in parameters.iter().enumerate() {
        let declared = kept.types.get(i).copied().unwrap_or(ParameterType::Untyped);
        values.push(value(expr, declared)?);
    }
    let output = kept
        .prepared
        .execute(&values)
        .await
        .map_err(|error| Box::new(statement_error(&error, &kept.sql)))?;
    let tag = kept.kind.tag(&output);
    Ok((output, tag))
}

/// A name as PostgreSQL folds it: lower-cased unless quoted.
fn identifier(ident: &ast::Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}
