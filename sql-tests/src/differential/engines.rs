//! The engines under comparison: SQLite (the reference, through rusqlite) and rowdex in each
//! configuration (store, executor, with or without the secondary indexes), each set up with a
//! scenario and asked the same queries. Setting up compares the writes too: rowdex must reject
//! the ones SQLite rejects, and return the rows SQLite returns (RETURNING, in any order).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rowdex::{Executor, Output, Session};

use super::scenario::{Scenario, Step, Target};
use super::value::{Value, first_difference, same_rows};
use crate::{Backend, Error, FreshDatabase};

/// One way of running rowdex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub backend: Backend,
    pub executor: Executor,
    /// Whether the scenario's secondary indexes exist.
    pub indexed: bool,
}

impl Config {
    /// Every configuration: both stores, both executors, with and without indexes.
    pub fn all() -> Vec<Config> {
        let mut out = Vec::new();
        for backend in Backend::ALL {
            for indexed in [true, false] {
                for executor in [Executor::Auto, Executor::DataFusion] {
                    out.push(Config {
                        backend,
                        executor,
                        indexed,
                    });
                }
            }
        }
        out
    }

    pub fn executor_name(self) -> &'static str {
        match self.executor {
            Executor::DataFusion => "datafusion",
            _ => "auto",
        }
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}",
            self.backend,
            self.executor_name(),
            if self.indexed { "indexed" } else { "no-index" }
        )
    }
}

/// A query's rows, or the engine's error message.
pub type Answer = Result<Vec<Vec<Value>>, String>;

/// What SQLite did with a scenario's writes, which rowdex must do alike.
#[derive(Debug, Clone, Default)]
pub struct WriteOutcomes {
    /// The write statements SQLite rejected: rowdex must reject them too.
    pub rejected: BTreeSet<WriteStatement>,
    /// The rows each write statement SQLite ran returned: its RETURNING rows, none without
    /// the clause. rowdex's must be the same multiset.
    pub returned: BTreeMap<WriteStatement, Vec<Vec<Value>>>,
}

/// SQLite with a scenario loaded.
pub struct Sqlite {
    conn: rusqlite::Connection,
    /// What SQLite did with the scenario's writes.
    pub writes: WriteOutcomes,
}

impl Sqlite {
    /// An in-memory SQLite database with `scenario` set up. SQLite rejecting a generated
    /// statement other than a write, or failing to prepare a write, is a generator bug,
    /// reported as [`Error::SqliteRejected`].
    pub fn open(scenario: &Scenario) -> Result<Sqlite, Error> {
        let conn =
            rusqlite::Connection::open_in_memory().map_err(|source| Error::SqliteRejected {
                sql: "(open)".to_string(),
                source,
            })?;
        // rowdex's LIKE, DataFusion's, is case-sensitive; SQLite's is not by default.
        let pragma = "PRAGMA case_sensitive_like = ON";
        conn.execute_batch(pragma)
            .map_err(|source| Error::SqliteRejected {
                sql: pragma.to_string(),
                source,
            })?;
        let mut writes = WriteOutcomes::default();
        for step in scenario.setup(Target::Sqlite) {
            let rejected = |source| Error::SqliteRejected {
                sql: step.sql.clone(),
                source,
            };
            let Some(statement) = write_statement(&step) else {
                conn.execute_batch(&step.sql).map_err(rejected)?;
                continue;
            };
            // A write fails to prepare only when it is malformed: the generator's bug. One
            // that fails to run (on a taken key, say) fails as a whole in both engines, so
            // the tables stay as they were and the setup goes on.
            let mut prepared = conn.prepare(&step.sql).map_err(rejected)?;
            match statement_rows(&mut prepared) {
                Ok(rows) => {
                    writes.returned.insert(statement, rows);
                }
                Err(_) => {
                    writes.rejected.insert(statement);
                }
            }
        }
        Ok(Sqlite { conn, writes })
    }

    pub fn query(&self, sql: &str) -> Result<Vec<Vec<Value>>, rusqlite::Error> {
        let mut statement = self.conn.prepare(sql)?;
        statement_rows(&mut statement)
    }
}

/// Runs a prepared statement to its end and returns its rows: a query's, a write's RETURNING
/// rows, or none (a write without RETURNING).
fn statement_rows(
    statement: &mut rusqlite::Statement<'_>,
) -> Result<Vec<Vec<Value>>, rusqlite::Error> {
    let width = statement.column_count();
    let mut rows = statement.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
            values.push(Value::from_sqlite(row.get_ref(i)?));
        }
        out.push(values);
    }
    Ok(out)
}

/// rowdex in one configuration with a scenario loaded, or the setup statement it rejected.
pub struct Rowdex {
    pub config: Config,
    // The session goes before the database it belongs to, which goes before its directory.
    session: Session,
    _fresh: FreshDatabase,
    /// The setup statement rowdex failed and its message: every query then answers with it.
    pub setup_failure: Option<(String, String)>,
}

impl Rowdex {
    /// rowdex in `config` with `scenario` set up; `writes` is what SQLite did with the writes,
    /// which rowdex must do alike (reject the same ones, return the same rows).
    pub async fn open(
        config: Config,
        scenario: &Scenario,
        writes: &WriteOutcomes,
    ) -> Result<Rowdex, Error> {
        let fresh = config.backend.open().await?;
        let mut session = fresh.database().session();
        session.set_executor(config.executor);
        let mut setup_failure = None;
        let steps = scenario.setup(Target::Rowdex {
            indexed: config.indexed,
        });
        for step in steps {
            let statement = write_statement(&step);
            let answer = run(&session, &step.sql).await;
            if let Some(message) = setup_difference(statement.as_ref(), answer, writes) {
                setup_failure = Some((step.sql, message));
                break;
            }
        }
        Ok(Rowdex {
            config,
            session,
            _fresh: fresh,
            setup_failure,
        })
    }

    pub async fn query(&self, sql: &str) -> Answer {
        if let Some((statement, message)) = &self.setup_failure {
            return Err(format!("setup statement failed: {message} [{statement}]"));
        }
        run(&self.session, sql).await
    }

    /// The access-path lines of EXPLAIN for `sql` (empty when EXPLAIN fails).
    pub async fn explain(&self, sql: &str) -> Vec<String> {
        match run(&self.session, &format!("EXPLAIN {sql}")).await {
            Ok(rows) => rows
                .into_iter()
                .flatten()
                .filter_map(|v| match v {
                    Value::Text(line) => Some(line),
                    _ => None,
                })
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// A write's statement as the setups of different engines (whose other statements differ)
/// both name it: the write's number and the statement's text.
pub type WriteStatement = (usize, String);

pub fn write_statement(step: &Step) -> Option<WriteStatement> {
    step.write.map(|w| (w, step.sql.clone()))
}

/// How rowdex's answer to a setup statement differs from SQLite's, if it does: an error
/// where SQLite ran the statement, success where SQLite rejected the write, or other rows
/// returned by the write.
fn setup_difference(
    statement: Option<&WriteStatement>,
    answer: Answer,
    writes: &WriteOutcomes,
) -> Option<String> {
    let must_fail = statement.is_some_and(|w| writes.rejected.contains(w));
    match answer {
        Ok(_) if must_fail => Some("succeeded where SQLite rejected the statement".to_string()),
        Err(message) if !must_fail => Some(message),
        Err(_) => None,
        Ok(got) => {
            let expected = writes.returned.get(statement?)?;
            returned_difference(expected, &got)
        }
    }
}

/// How a write's returned rows differ from SQLite's, compared as multisets: neither engine
/// defines the order of RETURNING rows. Integers and reals are compared as numbers here: SQLite
/// hands a REAL column's whole value stored as an integer back to RETURNING without turning it
/// into a real (`RETURNING coalesce(n, 1.5)` of a stored 0.0 gives 0, while `SELECT` gives
/// 0.0). (No apostrophe in the message: `case::error_pattern` would take it for a quote.)
fn returned_difference(expected: &[Vec<Value>], got: &[Vec<Value>]) -> Option<String> {
    let as_numbers = |rows: &[Vec<Value>]| -> Vec<Vec<Value>> {
        rows.iter()
            .map(|row| {
                row.iter()
                    .map(|value| match value {
                        Value::Int(v) => Value::Real(*v as f64),
                        other => other.clone(),
                    })
                    .collect()
            })
            .collect()
    };
    if same_rows(&as_numbers(expected), &as_numbers(got), false) {
        return None;
    }
    Some(format!(
        "RETURNING rows differ from SQLite: {} rows, SQLite {} ({})",
        got.len(),
        expected.len(),
        first_difference(expected, got)
    ))
}

/// Runs `sql` on a task of its own, so a panic inside rowdex is reported as that query's
/// answer instead of ending the run.
async fn run(session: &Session, sql: &str) -> Answer {
    let session = session.clone();
    let text = sql.to_string();
    let task = tokio::spawn(async move { session.execute(&text).await });
    let outputs = match task.await {
        Ok(Ok(outputs)) => outputs,
        Ok(Err(error)) => return Err(error.to_string()),
        Err(join) => return Err(format!("panic: {}", panic_message(join))),
    };
    match outputs.into_iter().last() {
        Some(Output::Rows { batches, .. }) => {
            let mut rows = Vec::new();
            for batch in &batches {
                for row in 0..batch.num_rows() {
                    rows.push(
                        batch
                            .columns()
                            .iter()
                            .map(|array| Value::from_arrow(array.as_ref(), row).normalized())
                            .collect(),
                    );
                }
            }
            Ok(rows)
        }
        // A statement without rows (a write without RETURNING): its count is not compared
        // (writes are checked through the rows they leave).
        _ => Ok(Vec::new()),
    }
}

fn panic_message(join: tokio::task::JoinError) -> String {
    if !join.is_panic() {
        return join.to_string();
    }
    let payload = join.into_panic();
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(no message)".to_string()
    }
}

#[cfg(test)]
mod tests;
