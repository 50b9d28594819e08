//! The server driven by real clients: tokio-postgres (both query protocols, COPY), psql,
//! pgbench, and the drivers and ORMs of `tests/clients/` beside PostgreSQL 15, against a
//! server started in the test on a free loopback port and stopped at its end.

mod auth;
mod cancel;
mod clients;
mod copy;
mod cursors;
mod deep;
mod drivers;
mod harness;
mod monitoring;
mod pgbench;
mod postgres;
mod psql;
mod transactions;
mod types;
