//! What PostgreSQL clients read about a database: the `pg_catalog` and `information_schema`
//! schemas and the catalog functions, built from rowdex's live catalog (psql's `\d` family,
//! drivers' metadata calls), and the rewrite that lets their PostgreSQL-dialect queries run.
//!
//! Files, each importing only from those listed before it: `rows` (a catalog table's cells
//! and batch), `model` (rowdex's catalog as PostgreSQL relations, OIDs and types),
//! `monitoring` (the statistics views: `pg_stat_activity`), `sizes` (the size functions),
//! `foreign_keys` (their foreign keys as constraints),
//! `defaults` (a DEFAULT as PostgreSQL prints it),
//! `functions`, `tables`, `schema` (registering both schemas and the functions in a session),
//! `introspection` (asyncpg's type lookup), `rewrite`.

pub mod defaults;
pub mod expressions;
pub mod foreign_keys;
pub mod functions;
pub mod introspection;
pub mod model;
pub mod monitoring;
pub mod prefix_elements;
pub mod rewrite;
pub mod rows;
pub mod schema;
pub mod sizes;
pub mod tables;
