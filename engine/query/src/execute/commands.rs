//! rowdex's own commands (SHOW INDEXES, CHECK TABLE, REINDEX, EXPLAIN KEY, PURGE, ANALYZE,
//! VACUUM, CHECKPOINT, roles), each dispatched to the file that runs it.

use crate::error::Result;
use crate::execute::{indexes, keydesign, purge, roles, statistics};
use crate::output::Output;
use crate::session::Session;
use crate::sql::command::Command;

pub(crate) async fn run_command(session: &Session, command: &Command) -> Result<Output> {
    match command {
        Command::ShowIndexes { table } => indexes::show_indexes(session, table.as_deref()),
        Command::CheckIndex { index, repair } => {
            indexes::check(session, Some(index), None, *repair).await
        }
        Command::CheckTable { table, repair } => {
            indexes::check(session, None, Some(table), *repair).await
        }
        Command::Reindex { target } => indexes::reindex(session, target.as_deref()).await,
        Command::ExplainKey { table } => keydesign::explain_key(session, table),
        Command::ShowKeySpread { table, partitions } => {
            keydesign::key_spread::key_spread(session, table, *partitions).await
        }
        Command::ShowWarnings => Ok(Output::text_rows("warning", session.warnings())),
        Command::Purge { table } => purge::purge(session, table).await,
        Command::Analyze { table } => statistics::analyze_tables(session, table.as_deref()).await,
        Command::ShowStatistics { table } => statistics::show_statistics(session, table).await,
        Command::Checkpoint => {
            session.db.store.checkpoint().await?;
            Ok(Output::Done)
        }
        Command::Vacuum { analyze, tables } => {
            for table in tables {
                session.table_def(table)?;
            }
            session.db.store.compact().await?;
            if *analyze && tables.is_empty() {
                statistics::analyze_tables(session, None).await?;
            } else if *analyze {
                for table in tables {
                    statistics::analyze_tables(session, Some(table)).await?;
                }
            }
            Ok(Output::Done)
        }
        Command::CreateRole {
            name,
            options,
            user,
        } => roles::create_role(session, name, options, *user).await,
        Command::AlterRole { name, options } => roles::alter_role(session, name, options).await,
        Command::DropRole { names, if_exists } => {
            roles::drop_roles(session, names, *if_exists).await
        }
    }
}
