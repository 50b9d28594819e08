//! rowdex over the PostgreSQL wire protocol (v3): `rowdex serve` lets psql, pgbench and
//! PostgreSQL drivers use a rowdex database. Built on the `pgwire` crate's protocol handling;
//! each connection gets its own rowdex [`Session`](rowdex::Session).
//!
//! Files, each importing only from those listed before it:
//! 1. `error` (what stops the server), `sqlstate` (statement errors as PostgreSQL errors),
//!    `cancel` (process ids, cancel keys and cancel requests), `activity` (what each
//!    connection is doing: `pg_stat_activity`, cancel and terminate by pid), `metrics` (the
//!    OpenMetrics endpoint),
//!    `statement_stats` (what `pg_stat_statements` counts), `server_log` (where log lines
//!    go), `scram` (the SCRAM-SHA-256
//!    exchange), `tls` (the TLS acceptor);
//! 2. `settings` (session parameters), `extensions` (CREATE EXTENSION), `kind` (statement
//!    kinds and command tags), `declared`
//!    (result columns typed as declared), `arrays` (array parameters as lists), `types` (Arrow results and parameters on the wire),
//!    `cursors` (DECLARE, FETCH, MOVE, CLOSE), `pg_catalog` (the catalog PostgreSQL
//!    clients read, and the rewrite of their catalog queries);
//! 3. `state` (what a connection keeps between statements);
//! 4. `statement` (extended-protocol statements and their descriptions);
//! 5. `copy` (COPY's data over the wire), `cursor_statements` (running DECLARE, FETCH, MOVE
//!    and CLOSE);
//! 6. `connection` (the query handlers), `startup` (connection start);
//! 7. `listener` (accepting connections).

mod activity;
mod arrays;
mod batched;
mod cancel;
mod connection;
mod copy;
mod cursor_statements;
mod cursors;
mod declared;
mod error;
mod extensions;
mod jsons;
mod kind;
mod listener;
mod lists;
mod metrics;
mod pg_catalog;
mod prepared_statements;
mod scram;
mod server_log;
mod settings;
mod sql_prepared;
mod sqlstate;
mod startup;
mod state;
mod statement;
mod statement_stats;
mod timestamps;
mod tls;
mod types;
mod uuids;
mod wire_columns;

pub use error::{Result, ServerError};
pub use listener::{ServeOptions, Server};
pub use server_log::ServerLog;
pub use settings::SERVER_VERSION;
pub use startup::AuthMethod;
pub use tls::TlsFiles;
