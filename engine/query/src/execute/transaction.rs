//! BEGIN, COMMIT, ROLLBACK and the savepoint statements: they open, end and mark the session's
//! transaction (see `db::txn`).

use datafusion::sql::sqlparser::ast::{Statement, TransactionModifier};

use crate::db::txn::SessionTxn;
use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::ident_name;

/// Runs BEGIN, COMMIT, ROLLBACK and the savepoint statements; None for any other statement.
pub(crate) async fn transaction_control(
    session: &Session,
    statement: &Statement,
) -> Result<Option<Output>> {
    match statement {
        Statement::StartTransaction {
            modes,
            modifier,
            statements,
            exception,
            ..
        } => {
            // Deferred is what rowdex does anyway (nothing is locked; conflicts show at COMMIT);
            // SQLite's IMMEDIATE/EXCLUSIVE locks and isolation-level modes are not offered.
            if !modes.is_empty()
                || !matches!(modifier, None | Some(TransactionModifier::Deferred))
                || !statements.is_empty()
                || exception.is_some()
            {
                return Err(Error::Unsupported {
                    what: format!("{statement} (only BEGIN [DEFERRED] [TRANSACTION])"),
                });
            }
            if session.in_transaction() {
                return Err(Error::TransactionAlreadyOpen);
            }
            let txn = SessionTxn::begin(session.db.store.as_ref()).await?;
            session.swap_txn(Some(txn));
        }
        Statement::Commit { chain: false, .. } => {
            let txn = session.swap_txn(None).ok_or(Error::NoTransaction)?;
            txn.commit(&session.db).await?;
        }
        Statement::Rollback {
            chain: false,
            savepoint: None,
        } => {
            let txn = session.swap_txn(None).ok_or(Error::NoTransaction)?;
            txn.rollback().await;
        }
        Statement::Rollback {
            chain: false,
            savepoint: Some(name),
        } => {
            let txn = session.open_txn().ok_or(Error::NoTransaction)?;
            txn.rollback_to(&ident_name(name)).await?;
        }
        Statement::Savepoint { name } => {
            let txn = session.open_txn().ok_or(Error::NoTransaction)?;
            txn.savepoint(ident_name(name)).await?;
        }
        Statement::ReleaseSavepoint { name } => {
            let txn = session.open_txn().ok_or(Error::NoTransaction)?;
            txn.release(&ident_name(name)).await?;
        }
        Statement::Commit { chain: true, .. } | Statement::Rollback { chain: true, .. } => {
            return Err(Error::Unsupported {
                what: format!("{statement}"),
            });
        }
        _ => return Ok(None),
    }
    Ok(Some(Output::Done))
}
