//! What a long operation reports as it goes ([`Progress`]): an index's backfill counts the
//! table's rows, a COPY FROM the bytes of its data (and the rows loaded). A session hands it to
//! the callback set by [`Session::set_progress`](crate::Session::set_progress): the CLI draws a
//! bar, the server shows it in `pg_stat_progress_create_index` and `pg_stat_progress_copy`.

use std::sync::Arc;

/// Which operation, on what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work<'a> {
    /// `CREATE INDEX index ON table`: counts the table's rows.
    IndexBuild { table: &'a str, index: &'a str },
    /// `COPY table FROM source` (a file's path, or `STDIN`): counts the data's bytes; `rows`
    /// loaded so far.
    CopyFrom {
        table: &'a str,
        source: &'a str,
        rows: u64,
    },
}

/// One report: `done` of `total` units (`total` is an estimate, 0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress<'a> {
    pub work: Work<'a>,
    pub done: u64,
    pub total: u64,
}

impl Progress<'_> {
    /// What it counts, for a progress bar: `building index t_v (rows)`.
    pub fn label(&self) -> String {
        match self.work {
            Work::IndexBuild { index, .. } => format!("building index {index} (rows)"),
            Work::CopyFrom { table, .. } => format!("loading {table} (bytes)"),
        }
    }
}

/// Called during long operations with each report.
pub type ProgressFn = Arc<dyn Fn(&Progress<'_>) + Send + Sync>;
