//! The server driven by real clients: tokio-postgres (both query protocols, COPY), psql and
//! pgbench, against a server started in the test on a free loopback port and stopped at its end.

mod auth;
mod cancel;
mod clients;
mod copy;
mod harness;
mod pgbench;
mod psql;
mod transactions;
mod types;
