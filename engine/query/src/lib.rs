//! rowdex: a SQL layer over a sorted key-value store.
//!
//! A table's PRIMARY KEY is its row key, so a query that fixes key columns becomes a point get
//! or a range scan. Open a [`Database`] (durable in a directory, or in memory), take a
//! [`Session`], and run SQL:
//!
//! ```no_run
//! # async fn demo() -> rowdex::Result<()> {
//! let db = rowdex::Database::open_memory().await?;
//! let session = db.session();
//! session
//!     .execute("CREATE TABLE m (host TEXT, ts BIGINT, v DOUBLE, PRIMARY KEY (host, ts DESC))")
//!     .await?;
//! session.execute("INSERT INTO m VALUES ('h1', 1, 0.5), ('h1', 2, 0.7)").await?;
//! let batches = session.query("SELECT * FROM m WHERE host = 'h1' LIMIT 1").await?;
//! # Ok(()) }
//! ```
//!
//! A query on one table that the access paths answer by themselves (point and multi gets, key
//! and index ranges, intersections, with ORDER BY along the key and LIMIT) runs natively;
//! every other SELECT runs through DataFusion, with each table registered as a `TableProvider`
//! whose scans use the same access-path planner (`rowdex-planner`). DDL and DML run here.
//! [`Session::prepare`] parses a statement with parameters once for many runs.

mod clock;
mod columnar;
mod copy;
mod database;
mod ddl;
mod dml;
mod error;
mod execute;
mod filter_projection;
mod filters;
pub mod format;
mod hints;
mod history;
mod indexes;
mod inlist_folding;
mod join_ordering;
mod keydesign;
mod native;
mod predicate_subquery;
mod prepared;
mod provider;
mod purge;
mod reader;
mod rewrite;
mod scan_exec;
mod show;
mod sink;
mod statement;
mod stats;
mod subquery;
mod txn;
mod types;
mod views;
mod write;

pub use clock::{Clock, ManualClock, SystemClock};
pub use copy::COPY_BATCH_ROWS;
pub use database::{Database, Output, ProgressFn, Session};
pub use error::{Error, Result};
pub use filter_projection::{SplitFilterProjection, physical_optimizer_rules};
pub use hints::QueryHints;
pub use native::Executor;
pub use native::paging::Page;
pub use predicate_subquery::{GuardedPredicateSubquery, logical_optimizer_rules};
pub use prepared::Prepared;
pub use provider::{RowdexSchema, RowdexTable};
pub use rowdex_codec::Datum;
pub use scan_exec::RowdexScanExec;
pub use statement::{Command, ParsedStatement, parse_script, split_statements, statement_ends};

pub use datafusion;
pub use datafusion::arrow;
