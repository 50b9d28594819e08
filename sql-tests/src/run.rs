//! Running one test file on one backend, record by record.

use std::path::Path;

use rowdex::Executor;
use sqllogictest::{Control, QueryExpect, Record, RecordOutput, ResultMode, Runner};

use crate::preprocess::sqlite_test_script;
use crate::{
    Backend, Error, ExpectedTypes, FileFormat, FileReport, RowdexDb, TypeLetter, ValueStyle,
};

/// SQLite's runner hashes results of more than this many values unless a file says otherwise.
const SQLITE_HASH_THRESHOLD: usize = 8;

/// Runs every record of the file at `path` on a fresh database of `backend`. A failed record is
/// counted and the file goes on; a file that cannot be read or parsed is one failed record.
/// The format comes from the extension (`.test` is SQLite's, anything else `.slt`).
pub async fn run_file(path: impl AsRef<Path>, backend: Backend) -> FileReport {
    run_file_head(path, backend, usize::MAX).await
}

/// Like [`run_file`], but stops after `max_records` records that ran SQL: a file's statements
/// and queries build on the ones before them, so any prefix is a meaningful test of its own.
pub async fn run_file_head(
    path: impl AsRef<Path>,
    backend: Backend,
    max_records: usize,
) -> FileReport {
    run_file_with(path, backend, Executor::Auto, max_records).await
}

/// Like [`run_file_head`], with queries run by `executor`. Records guarded by `onlyif native`
/// or `onlyif datafusion` (and `skipif`) run in the one mode only: EXPLAIN VERBOSE prints the
/// executor's own plan.
pub async fn run_file_with(
    path: impl AsRef<Path>,
    backend: Backend,
    executor: Executor,
    max_records: usize,
) -> FileReport {
    let path = path.as_ref();
    match try_run_file(path, backend, executor, max_records).await {
        Ok(report) => report,
        Err(error) => FileReport::broken(format!("{}: {error}", path.display())),
    }
}

async fn try_run_file(
    path: &Path,
    backend: Backend,
    executor: Executor,
    max_records: usize,
) -> Result<FileReport, Error> {
    let format = FileFormat::of(path).unwrap_or(FileFormat::Slt);
    let records = load_records(path, format)?;
    let fresh = backend.open().await?;

    let expected = ExpectedTypes::default();
    let style = match format {
        FileFormat::Slt => ValueStyle::Plain,
        FileFormat::SqliteTest => ValueStyle::Sqlite,
    };
    let db = fresh.database().clone();
    let letters = expected.clone();
    // Every connection a file names is a new session on the same database.
    let mut runner = Runner::new(move || {
        let mut session = db.session();
        session.set_executor(executor);
        let connection = RowdexDb::new(session, style, letters.clone());
        async move { Ok::<_, Error>(connection) }
    });
    runner.add_label(executor_label(executor));
    // Plans follow each store's access costs, so an EXPLAIN may differ between them.
    runner.add_label(backend.name());
    if format == FileFormat::SqliteTest {
        let has_threshold = records
            .iter()
            .any(|r| matches!(r, Record::HashThreshold { .. }));
        if !has_threshold {
            runner.with_hash_threshold(SQLITE_HASH_THRESHOLD);
        }
        // SQLite's files list one value per line.
        let value_wise = Record::Control(Control::ResultMode(ResultMode::ValueWise));
        if let Err(error) = runner.run_async(value_wise).await {
            return Ok(FileReport::broken(error.display(false).to_string()));
        }
    }

    let mut report = FileReport::default();
    for record in records {
        if report.total() >= max_records {
            break;
        }
        let counted = match &record {
            Record::Halt { .. } => break,
            Record::Query {
                expected: QueryExpect::Results { types, .. },
                ..
            } => {
                expected.set(Some(types.clone()));
                true
            }
            Record::Statement { .. } | Record::Query { .. } => {
                expected.set(None);
                true
            }
            _ => {
                expected.set(None);
                false
            }
        };
        match runner.run_async(record).await {
            // Skipped by a condition, or a record that runs no SQL.
            Ok(RecordOutput::Nothing) => {}
            Ok(_) => {
                if counted {
                    report.records_passed += 1;
                }
            }
            Err(error) => {
                report.records_failed += 1;
                report
                    .failures
                    .push(error.display(false).to_string().trim_end().to_string());
            }
        }
    }
    // The runner's sessions go before the database and its directory.
    drop(runner);
    drop(fresh);
    Ok(report)
}

/// The `onlyif` / `skipif` label of an executor.
pub fn executor_label(executor: Executor) -> &'static str {
    match executor {
        Executor::DataFusion => "datafusion",
        // Any executor added later starts from the native tests.
        _ => "native",
    }
}

fn load_records(path: &Path, format: FileFormat) -> Result<Vec<Record<TypeLetter>>, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    match format {
        FileFormat::Slt => {
            // The crate's file parser panics on unreadable files; check first.
            let metadata = std::fs::metadata(path).map_err(io)?;
            if !metadata.is_file() || path.to_str().is_none() {
                return Err(io(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a regular file with a UTF-8 path",
                )));
            }
            Ok(sqllogictest::parse_file(path)?)
        }
        FileFormat::SqliteTest => {
            let text = std::fs::read_to_string(path).map_err(io)?;
            let script = sqlite_test_script(&text);
            Ok(sqllogictest::parse_with_name(
                &script,
                path.display().to_string(),
            )?)
        }
    }
}
