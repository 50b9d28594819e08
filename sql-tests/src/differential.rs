//! Differential testing against SQLite: random schemas (composite and DESC keys, salting,
//! nullable columns of five types, DECIMAL among them, column DEFAULTs), rows (NULLs,
//! duplicates, extremes, unicode), secondary indexes, writes (INSERT naming every column or
//! leaving some to their DEFAULT, OR REPLACE / IGNORE, ON CONFLICT DO UPDATE, UPDATE, DELETE,
//! any of them with RETURNING) and queries (AND/OR/NOT, ranges, IN, BETWEEN, LIKE, IS NULL,
//! row values, subqueries, ORDER BY with LIMIT/OFFSET, aggregates, joins) run on SQLite and on
//! rowdex in every configuration (memory and fjall, native and DataFusion executors, with and
//! without the indexes), answers compared (the rows RETURNING gives too, as multisets), and
//! each failure shrunk to a small `.slt` file.
//!
//! Entry points: `rowdex-slt differential --seed S --cases N --out DIR` for long runs, and a
//! fixed-seed run in the crate's test binary. Everything is seeded by one `u64`, so a finding's
//! origin line (`--seed S scenario I query Q`) names it for good.

mod campaign;
mod case;
mod data;
mod engines;
mod generate;
mod query;
mod random_scenario;
mod restrict;
mod rng;
mod scenario;
mod schema;
mod shrink;
mod slt;
mod value;

pub use campaign::{EXPRESSION_INDEX, Finding, Options, Summary, run};
pub use engines::Config;
pub use restrict::{Restriction, Restrictions};
