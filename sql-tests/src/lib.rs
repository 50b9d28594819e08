//! rowdex-sql-tests: runs sqllogictest files against rowdex.
//!
//! Two file formats are understood, chosen by extension:
//! - `.slt`: the sqllogictest dialect the `sqllogictest` crate parses, compared row by row with
//!   plain value text. The project's own suites under `slt/` use it.
//! - `.test`: SQLite's corpus format, compared value by value with each value rendered by the
//!   query's declared type letter, the way SQLite's own runner prints them.
//!
//! [`differential`] compares rowdex with SQLite on random schemas, data and queries.
//!
//! [`run_file`] opens a fresh database for each file on the chosen [`Backend`], runs every record
//! and keeps going after a failure, so one report counts every record that passed or failed.

mod adapter;
mod backend;
pub mod differential;
mod discover;
mod error;
mod preprocess;
mod report;
mod run;
mod values;

pub use adapter::{ExpectedTypes, RowdexDb};
pub use backend::{Backend, FreshDatabase};
pub use discover::{FileFormat, collect_files};
pub use error::Error;
pub use preprocess::ENGINE_NAME;
pub use report::FileReport;
pub use run::{executor_label, run_file, run_file_head, run_file_with};
pub use values::{TypeLetter, ValueStyle};
