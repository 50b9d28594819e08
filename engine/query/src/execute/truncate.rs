//! TRUNCATE [TABLE] t [, ...] [CONTINUE IDENTITY] [CASCADE | RESTRICT]: every row of each
//! table removed in one transaction (the session's open one, as PostgreSQL's TRUNCATE is
//! transactional, or one of the statement's own), with their index entries, as DELETE
//! removes them. Tools run it inside their transactions (`pgbench -i` truncates its tables
//! before loading them). rowdex has no ON TRUNCATE triggers, and a TRUNCATE does not fire
//! DELETE triggers, so a table with DELETE triggers is refused rather than emptied
//! differently from PostgreSQL; RESTART IDENTITY is refused too (sequences do not restart).

use std::future::Future;
use std::pin::Pin;

use datafusion::sql::sqlparser::ast::{Statement, Truncate, TruncateIdentityOption};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use rowdex_catalog::TriggerEvent;

use crate::db::characteristics::{Characteristics, IsolationLevel};
use crate::db::txn::SessionTxn;
use crate::error::{Error, Result};
use crate::execute::foreign_keys::dependents;
use crate::execute::update_delete;
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::object_name;

/// [`truncate`], its future made and boxed in a frame of its own: it holds DELETE's futures,
/// and built in the dispatcher's frame it would grow the stack every statement is polled on
/// (a debug build keeps a slot per arm), which a statement nested in another's poll (a store
/// hook in a test) runs out of.
pub(crate) fn boxed<'a>(
    session: &'a Session,
    statement: &'a Truncate,
) -> Pin<Box<dyn Future<Output = Result<Output>> + Send + 'a>> {
    Box::pin(truncate(session, statement))
}

async fn truncate(session: &Session, truncate: &Truncate) -> Result<Output> {
    if matches!(truncate.identity, Some(TruncateIdentityOption::Restart)) {
        return Err(Error::Unsupported {
            what: "TRUNCATE ... RESTART IDENTITY (sequences do not restart)".into(),
        });
    }
    let mut deletes = Vec::with_capacity(truncate.table_names.len());
    let named: Vec<String> = truncate
        .table_names
        .iter()
        .map(|target| object_name(&target.name))
        .collect::<Result<_>>()?;
    let mut defs = Vec::with_capacity(named.len());
    for name in &named {
        let def = session.table_def(name)?;
        if def.read_only {
            return Err(Error::ReadOnlyTable {
                table: def.name.clone(),
            });
        }
        if let Some((constraint, table)) = dependents(session, &def, &named).into_iter().next() {
            return Err(Error::Unsupported {
                what: format!(
                    "cannot truncate a table referenced in a foreign key constraint: {constraint} of table {table} references {name} (truncate {table} in the same TRUNCATE)"
                ),
            });
        }
        defs.push(def);
    }
    // Referencing tables are emptied before the tables they reference, so that no DELETE
    // leaves a row referencing one already gone (a cycle of references keeps its order).
    let mut pending: Vec<_> = truncate.table_names.iter().zip(defs).collect();
    let mut targets = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let unreferenced = pending.iter().position(|(_, def)| {
            !pending.iter().any(|(_, other)| {
                other.id != def.id
                    && other
                        .foreign_keys
                        .iter()
                        .any(|fk| fk.referenced_table == def.id)
            })
        });
        targets.push(pending.remove(unreferenced.unwrap_or(0)));
    }
    for (target, def) in targets {
        let name = def.name.clone();
        if def.has_triggers_on(&TriggerEvent::Delete) {
            return Err(Error::Unsupported {
                what: format!("TRUNCATE of {name}, which has DELETE triggers"),
            });
        }
        let sql = format!("DELETE FROM {}", target.name);
        let parsed = Parser::parse_sql(&GenericDialect {}, &sql)
            .map_err(|e| Error::Parse {
                message: e.to_string(),
            })?
            .pop();
        match parsed {
            Some(Statement::Delete(delete)) => deletes.push(delete),
            _ => {
                return Err(Error::Parse {
                    message: format!("{sql} is not a DELETE"),
                });
            }
        }
    }
    if session.open_txn().is_some() {
        for delete in &deletes {
            update_delete::delete(session, delete).await?;
        }
        return Ok(Output::Done);
    }
    // All the tables at once, or none.
    // Validated as a whole (SERIALIZABLE), as a schema change is: it reads every row.
    let whole = Characteristics {
        isolation: IsolationLevel::Serializable,
        read_only: false,
    };
    let txn = SessionTxn::begin(&session.db, whole, session.lock_tag()).await?;
    let inner = session.with_txn(txn.clone());
    for delete in &deletes {
        if let Err(error) = update_delete::delete(&inner, delete).await {
            txn.rollback().await;
            return Err(error);
        }
    }
    txn.commit(&session.db).await?;
    Ok(Output::Done)
}
