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
//!
//! The crate is built in layers, each importing only from the layers below it (checked by
//! `rowdex-layers`; DESIGN-NOTES.md lists them):
//! 1. `error`, `format`, `time_zone`, `progress` (what long operations report), `array_text`,
//!    `stack_depth` (room on the stack);
//! 2. `output`, `values`, `copy_data` (COPY's formats and the data a client sends or gets),
//!    `sql` (text into statements), `db` (the state sessions share);
//! 3. `scan` (reading an access path), `write` (rows into the store);
//! 4. `native` (the native executor), `df` (everything rowdex plugs into DataFusion);
//! 5. `session`;
//! 6. `execute/*`, one file per statement kind;
//! 7. `execute`, `prepared`, `paging`, each adding its `impl Session` block;
//! 8. `database`; and this file, the public face only.

mod array_text;
mod copy_data;
mod database;
mod db;
mod df;
mod error;
mod execute;
pub mod format;
mod functions;
mod native;
mod output;
mod paging;
mod prepared;
mod progress;
mod scan;
mod session;
mod sql;
mod stack_depth;
pub mod time_zone;
mod values;
mod write;

pub use copy_data::binary_arrays::array_send;
pub use copy_data::format::{CopyFormat, CopyFormatKind};
pub use copy_data::numeric_binary::numeric_text;
pub use copy_data::stream::{CopyIn, CopyOut};
pub use database::{Database, DatabaseMetrics, RowLock};
pub use db::characteristics::{Characteristics, IsolationLevel};
pub use db::clock::{Clock, ManualClock, SystemClock};
pub use db::planning::Planning;
pub use db::schema_view::SchemaView;
pub use db::sizes::TableSizes;
pub use db::statement_report::StatementFigures;
pub use df::context::RowdexSchema;
pub use df::rules::filter_projection::SplitFilterProjection;
pub use df::rules::predicate_subquery::GuardedPredicateSubquery;
pub use df::rules::{LogicalRule, PhysicalRule, logical_optimizer_rules, physical_optimizer_rules};
pub use df::scan_exec::RowdexScanExec;
pub use df::table::RowdexTable;
pub use error::{Error, Result};
pub use execute::copy::load::COPY_BATCH_ROWS;
pub use execute::durability_setting::{durability_parameter, show_durability_parameter};
pub use functions::quote::{quote_ident, quote_literal};
pub use output::Output;
pub use paging::Page;
pub use prepared::{Description, Prepared};
pub use progress::{Progress, ProgressFn, Work};
pub use rowdex_codec::Datum;
pub use rowdex_store::Durability;
pub use session::{Executor, Session};
pub use sql::command::Command;
pub use sql::hints::QueryHints;
pub use sql::normalize::{NormalizedStatement, normalize_statement};
pub use sql::parse::{
    ParsedStatement, ScriptStatement, parse_script, script_statements, split_statements,
    statement_ends,
};
pub use sql::semantics::Semantics;
pub use stack_depth::WORKER_STACK_BYTES;
pub use values::DECLARED_TYPE;

pub use datafusion;
pub use datafusion::arrow;
