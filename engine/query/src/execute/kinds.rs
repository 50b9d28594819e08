//! What the dispatcher needs to know of a statement before running it: whether it only
//! reads, whether it writes (a READ ONLY transaction refuses it), how it runs inside a
//! transaction block, and its name for messages.

use datafusion::sql::sqlparser::ast::Statement;

use crate::error::{Error, Result};
use crate::sql::command::Command;
use crate::sql::names::statement_kind;
use crate::sql::parse::ParsedStatement;

/// Whether a statement only reads (after which no statistics can have moved).
pub(crate) fn is_query(parsed: &ParsedStatement) -> bool {
    matches!(
        parsed,
        ParsedStatement::Sql { statement, .. } if matches!(
            statement.as_ref(),
            Statement::Query(_) | Statement::Explain { .. }
        )
    )
}

/// How a statement runs inside a transaction block.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InTransaction {
    /// As part of the block: read through its snapshot, written into it.
    InBlock,
    /// On its own, committed at once apart from the block (CREATE and DROP TRIGGER, ANALYZE),
    /// allowed only before the block's first write or schema change.
    OnItsOwn,
}

/// How `parsed` runs inside a transaction block, or the error for what cannot run there at
/// all: index checks and rebuilds, PURGE, VACUUM, CHECKPOINT and role changes. (COPY FROM in a
/// block writes into the block's transaction.)
pub(crate) fn in_transaction(parsed: &ParsedStatement) -> Result<InTransaction> {
    let refused = match parsed {
        ParsedStatement::Command(
            Command::ShowIndexes { .. }
            | Command::ExplainKey { .. }
            | Command::ShowWarnings
            | Command::ShowStatistics { .. },
        ) => return Ok(InTransaction::InBlock),
        ParsedStatement::Command(Command::Analyze { .. }) => return Ok(InTransaction::OnItsOwn),
        ParsedStatement::Command(command) => command.to_string(),
        ParsedStatement::Sql { statement, .. } => match statement.as_ref() {
            // Schema changes of tables, indexes, views and sequences are written in the
            // block's transaction (`execute::schema_txn`).
            Statement::Query(_)
            | Statement::Explain { .. }
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::ShowTables { .. }
            | Statement::ExplainTable { .. }
            | Statement::Truncate(_)
            | Statement::Copy { .. }
            | Statement::CreateTable(_)
            | Statement::AlterTable(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
            | Statement::CreateView(_)
            | Statement::CreateSequence { .. }
            | Statement::Comment { .. } => return Ok(InTransaction::InBlock),
            Statement::CreateTrigger(_) | Statement::DropTrigger(_) => {
                return Ok(InTransaction::OnItsOwn);
            }
            other => statement_kind(other),
        },
    };
    Err(Error::NotInTransaction { statement: refused })
}

/// Whether a statement may change the database (so a READ ONLY transaction refuses it).
pub(crate) fn writes(parsed: &ParsedStatement) -> bool {
    match parsed {
        ParsedStatement::Command(command) => !matches!(
            command,
            Command::ShowIndexes { .. }
                | Command::ExplainKey { .. }
                | Command::ShowWarnings
                | Command::ShowStatistics { .. }
                | Command::ShowKeySpread { .. }
                | Command::CheckIndex { repair: false, .. }
                | Command::CheckTable { repair: false, .. }
        ),
        ParsedStatement::Sql { statement, .. } => !matches!(
            statement.as_ref(),
            Statement::Query(_)
                | Statement::Explain { .. }
                | Statement::ShowTables { .. }
                | Statement::ExplainTable { .. }
                | Statement::Copy { to: true, .. }
                | Statement::Set(_)
        ),
    }
}

/// The statement's name for messages, as PostgreSQL names statements (`INSERT`, `CREATE
/// TABLE`, `DROP INDEX`).
pub(crate) fn statement_name(parsed: &ParsedStatement) -> String {
    let statement = match parsed {
        ParsedStatement::Command(command) => return command.to_string(),
        ParsedStatement::Sql { statement, .. } => statement.as_ref(),
    };
    match statement {
        Statement::Insert(_) => "INSERT".into(),
        Statement::Update(_) => "UPDATE".into(),
        Statement::Delete(_) => "DELETE".into(),
        Statement::Copy { .. } => "COPY".into(),
        Statement::Truncate(_) => "TRUNCATE TABLE".into(),
        Statement::CreateTable(_) => "CREATE TABLE".into(),
        Statement::CreateIndex(_) => "CREATE INDEX".into(),
        Statement::CreateView(_) => "CREATE VIEW".into(),
        Statement::CreateSequence { .. } => "CREATE SEQUENCE".into(),
        Statement::CreateTrigger(_) => "CREATE TRIGGER".into(),
        Statement::DropTrigger(_) => "DROP TRIGGER".into(),
        Statement::AlterTable(_) => "ALTER TABLE".into(),
        Statement::Drop { object_type, .. } => format!("DROP {object_type}"),
        other => statement_kind(other),
    }
}
