//! What one statement did, beyond its result: the access path its plan chose, the store entries
//! it read, the rows it looked up by key, and the retries and conflicts it met. A server reads
//! it after each statement ([`crate::Session::take_statement_figures`]) for its statement
//! statistics and its slow-statement log.
//!
//! Each session has one report, reset when a statement starts. The statement's own task finds
//! it through a task-local ([`StatementReport::current`]: the native executor, the write retry
//! loops); DataFusion's operators, which may run on tasks of their own, find it in the
//! statement's config (`df::context::context_with` puts it there). Readers are wrapped to
//! count ([`metered_view`]), which costs an atomic add per read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rowdex_catalog::TableDef;
use rowdex_planner::{AccessPath, ScanPlan};
use rowdex_store::KvRead;
use rowdex_store::metered::{ReadMeter, metered};

tokio::task_local! {
    static CURRENT: Arc<StatementReport>;
}

/// The access path a statement's first scan took: its kind, table and indexes (by position),
/// kept as they are and written out only when asked.
#[derive(Debug, Clone)]
struct PathNote {
    kind: &'static str,
    table: Arc<TableDef>,
    indexes: Vec<usize>,
}

impl PathNote {
    fn of(plan: &ScanPlan) -> PathNote {
        let indexes = match &plan.path {
            AccessPath::IndexScan { input, .. } => vec![input.index],
            AccessPath::IndexIntersection {
                inputs, checked, ..
            } => inputs.iter().chain(checked).map(|i| i.index).collect(),
            AccessPath::IndexUnion { also, .. } => also.iter().map(|i| i.index).collect(),
            _ => Vec::new(),
        };
        PathNote {
            kind: plan.path.name(),
            table: plan.table.clone(),
            indexes,
        }
    }

    /// `INDEX SCAN t using t_v`, `POINT GET t`.
    fn text(&self) -> String {
        let mut text = format!("{} {}", self.kind, self.table.name);
        let names: Vec<&str> = self
            .indexes
            .iter()
            .filter_map(|i| self.table.indexes.get(*i).map(|index| index.name.as_str()))
            .collect();
        if !names.is_empty() {
            text.push_str(" using ");
            text.push_str(&names.join(", "));
        }
        text
    }
}

/// One session's report of its current statement.
#[derive(Debug, Default)]
pub struct StatementReport {
    path: Mutex<Option<PathNote>>,
    reads: Arc<ReadMeter>,
    retries: AtomicU64,
    conflicts: AtomicU64,
}

/// What a statement did, as [`crate::Session::take_statement_figures`] hands it out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatementFigures {
    /// The access path of its first table scan (`INDEX SCAN t using t_v`), if it read a table
    /// by one of rowdex's paths.
    pub access_path: Option<String>,
    /// Store entries read: by scans, and keys looked up.
    pub entries_read: u64,
    /// Keys looked up one by one (rows by primary key, presence checks).
    pub row_gets: u64,
    /// Times it ran again after a conflict or an interrupted commit.
    pub retries: u64,
    /// Write conflicts among those.
    pub conflicts: u64,
}

impl StatementReport {
    /// The report of the statement the current task runs, if any.
    pub(crate) fn current() -> Option<Arc<StatementReport>> {
        CURRENT.try_with(Arc::clone).ok()
    }

    /// Runs `statement` with this report as the task's current one.
    pub(crate) async fn scope<F: Future>(self: &Arc<Self>, statement: F) -> F::Output {
        CURRENT.scope(self.clone(), statement).await
    }

    /// Notes the path of a scan, unless one was noted already.
    pub(crate) fn note_scan(&self, plan: &ScanPlan) {
        let mut path = self.path.lock().unwrap_or_else(PoisonError::into_inner);
        if path.is_none() {
            *path = Some(PathNote::of(plan));
        }
    }

    /// Notes one more run of the statement after `conflict` or another retryable failure.
    pub(crate) fn retried(&self, conflict: bool) {
        self.retries.fetch_add(1, Ordering::Relaxed);
        if conflict {
            self.conflicts.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `reader` with its reads counted in this report.
    pub(crate) fn meter(&self, reader: Arc<dyn KvRead>) -> Arc<dyn KvRead> {
        metered(reader, self.reads.clone())
    }

    /// What the statement did so far; the report starts over.
    pub(crate) fn take(&self) -> StatementFigures {
        let path = self
            .path
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let reads = self.reads.counts();
        self.reads.reset();
        StatementFigures {
            access_path: path.map(|note| note.text()),
            entries_read: reads.keys(),
            row_gets: reads.gets,
            retries: self.retries.swap(0, Ordering::Relaxed),
            conflicts: self.conflicts.swap(0, Ordering::Relaxed),
        }
    }

    /// Forgets what an earlier statement left.
    pub(crate) fn reset(&self) {
        *self.path.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.reads.reset();
        self.retries.store(0, Ordering::Relaxed);
        self.conflicts.store(0, Ordering::Relaxed);
    }
}

/// `reader`, counted in the current statement's report when there is one.
pub(crate) fn metered_view(reader: Arc<dyn KvRead>) -> Arc<dyn KvRead> {
    match StatementReport::current() {
        Some(report) => report.meter(reader),
        None => reader,
    }
}

/// Notes `plan` as the current statement's access path, when there is a statement report.
pub(crate) fn note_scan(plan: &ScanPlan) {
    if let Some(report) = StatementReport::current() {
        report.note_scan(plan);
    }
}

/// Notes a retry (after a conflict if `conflict`) in the current statement's report, when there
/// is one.
pub(crate) fn note_retry(conflict: bool) {
    if let Some(report) = StatementReport::current() {
        report.retried(conflict);
    }
}
