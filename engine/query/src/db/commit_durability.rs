//! What durability a commit asks the store for (see `rowdex_store::Durability`).
//!
//! Each table a transaction writes asks for its DURABILITY, or the store's default when it
//! has none, and the commit takes the strongest asked for: a transaction that writes a
//! SKIP_WAL table and a SYNC_WAL one is pushed as SYNC_WAL, so nothing of a table is ever
//! less durable than the table asks. A session's own durability (`SET synchronous_commit =
//! off`, `SET durability = ...`) replaces the tables' for every commit of the session, weaker
//! or stronger, as an HBase mutation's durability replaces its table's.
//!
//! The session's choice travels with its statements as a task-local (scoped by the session
//! around each statement), so the writers deep in a statement need no session handle.

use std::future::Future;

use rowdex_store::{Durability, Transaction};

tokio::task_local! {
    /// The running statement's session durability (None: the tables decide).
    static SESSION_DURABILITY: Option<Durability>;
}

/// Runs `statement` with `durability` as its session's choice.
pub(crate) async fn scoped<F: Future>(durability: Option<Durability>, statement: F) -> F::Output {
    SESSION_DURABILITY.scope(durability, statement).await
}

/// The running statement's session durability, if it chose one.
fn session_durability() -> Option<Durability> {
    SESSION_DURABILITY
        .try_with(|durability| *durability)
        .ok()
        .flatten()
}

/// Makes `tx`'s commit at least as durable as `asked` (a table it writes asks for it), or
/// exactly the session's durability when the session chose one.
pub(crate) fn ask(tx: &mut dyn Transaction, asked: Durability) {
    let wanted = match session_durability() {
        Some(chosen) => chosen,
        None => tx.durability().map_or(asked, |held| held.max(asked)),
    };
    tx.set_durability(Some(wanted));
}

/// Gives `tx`'s commit the session's durability, when the session chose one (at COMMIT:
/// the choice in force then is the one that counts, as PostgreSQL's `synchronous_commit`).
pub(crate) fn at_commit(tx: &mut dyn Transaction) {
    if let Some(chosen) = session_durability() {
        tx.set_durability(Some(chosen));
    }
}
