//! BEGIN, COMMIT, ROLLBACK and the savepoint statements: they open, end and mark the session's
//! transaction (see `db::txn`).

use datafusion::sql::sqlparser::ast::{Set, Statement, TransactionModifier};

use crate::db::txn::SessionTxn;
use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::ident_name;
use crate::write::bulk::delete_dropped;

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
            // SQLite's IMMEDIATE/EXCLUSIVE locks are not offered. Isolation levels and access
            // modes are PostgreSQL's (see `db::characteristics`).
            if !matches!(modifier, None | Some(TransactionModifier::Deferred))
                || !statements.is_empty()
                || exception.is_some()
            {
                return Err(Error::Unsupported {
                    what: format!(
                        "{statement} (only BEGIN [DEFERRED] [TRANSACTION] [ISOLATION LEVEL ...] \
                         [READ ONLY | READ WRITE])"
                    ),
                });
            }
            if session.in_transaction() {
                return Err(Error::TransactionAlreadyOpen);
            }
            let characteristics = session.default_characteristics().with_modes(modes)?;
            let txn = SessionTxn::begin(&session.db, characteristics, session.lock_tag()).await?;
            session.swap_txn(Some(txn));
        }
        Statement::Set(Set::SetTransaction {
            modes,
            snapshot: None,
            session: for_session,
        }) => {
            if *for_session {
                let characteristics = session.default_characteristics().with_modes(modes)?;
                session.set_default_characteristics(characteristics);
            } else if let Some(txn) = session.open_txn() {
                let characteristics = txn.characteristics().with_modes(modes)?;
                if txn.has_started() && characteristics.isolation != txn.characteristics().isolation
                {
                    return Err(Error::IsolationAfterQuery);
                }
                txn.set_characteristics(characteristics);
            } else {
                // As PostgreSQL: a warning, and nothing changes.
                session.add_notice(
                    "SET TRANSACTION can only be used in transaction blocks".to_string(),
                );
            }
        }
        Statement::Commit { chain: false, .. } => {
            let txn = session.swap_txn(None).ok_or(Error::NoTransaction)?;
            let edits = txn.commit(&session.db).await?;
            // What the block dropped is unreachable once committed; its entries go now. The
            // commit stands if that fails: the entries are left unreachable (ids are never
            // reused), as when a process stops between a DROP and its cleanup.
            if let Err(error) = delete_dropped(&session.db, &edits).await {
                session.add_notice(format!(
                    "the transaction committed, but deleting the entries of what it dropped failed: {error}"
                ));
            }
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
