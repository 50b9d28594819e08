//! Running the cursor statements of `cursors` for a connection: DECLARE keeps its query's
//! rows in the session's cursors, FETCH returns some of them, MOVE counts them, CLOSE forgets
//! a cursor. MOVE also moves a portal of the extended protocol (asyncpg's `Cursor.forward`
//! sends `MOVE FORWARD n <portal>` for a portal it bound), reading and dropping its rows.

use std::future::Future;

use std::sync::Arc;

use pgwire::api::results::Tag;
use pgwire::api::store::{Entry, MemPortalStore, PortalStore};
use pgwire::error::ErrorInfo;
use rowdex::Output;

use crate::cursors::{Count, CursorError, Direction, parse_close, parse_declare, parse_fetch};
use crate::sqlstate::{error_info, statement_error};
use crate::state::SessionState;
use crate::statement::WireStatement;

/// The connection's statements and portals of the extended protocol, as pgwire keeps them.
pub type Portals = MemPortalStore<Arc<WireStatement>>;

pub use crate::kind::Ran;

fn refused(error: CursorError) -> Box<ErrorInfo> {
    Box::new(error_info(error.code, error.message))
}

/// `DECLARE`: `run` runs the cursor's query (with the statement's parameters, if any); its
/// rows become the cursor. Without HOLD a cursor lives in a transaction block only.
pub async fn declare<F>(state: &SessionState, sql: &str, in_block: bool, run: F) -> Ran
where
    F: Future<Output = rowdex::Result<Output>>,
{
    let declare = parse_declare(sql).map_err(refused)?;
    if !in_block && !declare.hold {
        return Err(Box::new(error_info(
            "25P01",
            "DECLARE CURSOR can only be used in transaction blocks",
        )));
    }
    if state.cursors().contains(&declare.name) {
        return Err(Box::new(error_info(
            "42P03",
            format!("cursor \"{}\" already exists", declare.name),
        )));
    }
    let output = run
        .await
        .map_err(|error| Box::new(statement_error(&error, &declare.query)))?;
    let Output::Rows { schema, batches } = output else {
        return Err(Box::new(error_info(
            "42P11",
            "a cursor's query must be one that returns rows",
        )));
    };
    state
        .cursors()
        .declare(&declare, schema, &batches)
        .map_err(refused)?;
    Ok((Output::Done, Tag::new("DECLARE CURSOR")))
}

/// `FETCH` (`rows` true) or `MOVE` of a cursor; a MOVE FORWARD of a portal bound through the
/// extended protocol when no cursor has the name.
pub async fn fetch(state: &SessionState, portals: Option<&Portals>, sql: &str, rows: bool) -> Ran {
    let verb = if rows { "FETCH" } else { "MOVE" };
    let fetch = parse_fetch(sql, verb).map_err(refused)?;
    if !rows && !state.cursors().contains(&fetch.cursor) {
        return move_portal(portals, &fetch.cursor, fetch.direction).await;
    }
    let (count, batch) = state.cursors().fetch(&fetch, rows).map_err(refused)?;
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    match batch {
        Some(batch) => Ok((
            Output::Rows {
                schema: batch.schema(),
                batches: vec![batch],
            },
            Tag::new("FETCH").with_rows(count),
        )),
        None => Ok((Output::Done, Tag::new(verb).with_rows(count))),
    }
}

/// `MOVE FORWARD n` over the rows a protocol portal has left: they are read and dropped.
async fn move_portal(portals: Option<&Portals>, name: &str, direction: Direction) -> Ran {
    let missing = || {
        Box::new(error_info(
            "34000",
            format!("cursor \"{name}\" does not exist"),
        ))
    };
    let Some(Entry::Value(portal)) = portals.and_then(|portals| portals.get_portal(name)) else {
        return Err(missing());
    };
    let limit = match direction {
        Direction::Forward(Count::All) => 0,
        Direction::Forward(Count::Rows(0)) => {
            return Ok((Output::Done, Tag::new("MOVE").with_rows(0)));
        }
        Direction::Forward(Count::Rows(n)) => usize::try_from(n).unwrap_or(usize::MAX),
        _ => {
            return Err(Box::new(error_info(
                "55000",
                "a protocol portal can only move forward",
            )));
        }
    };
    let mut fetched = portal
        .fetch(limit)
        .await
        .map_err(|e| Box::new(error_info("34000", e.to_string())))?;
    let mut moved = 0;
    {
        use futures::StreamExt;
        while let Some(row) = fetched.response.data_rows().next().await {
            row.map_err(|e| Box::new(error_info("XX000", e.to_string())))?;
            moved += 1;
        }
    }
    Ok((Output::Done, Tag::new("MOVE").with_rows(moved)))
}

/// `CLOSE name | ALL`.
pub fn close(state: &SessionState, sql: &str) -> Ran {
    let name = parse_close(sql).map_err(refused)?;
    state.cursors().close(name.as_deref()).map_err(refused)?;
    Ok((Output::Done, Tag::new("CLOSE CURSOR")))
}
