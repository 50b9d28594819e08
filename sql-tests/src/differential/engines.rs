//! The engines under comparison: SQLite (the reference, through rusqlite) and rowdex in each
//! configuration (store, executor, with or without the secondary indexes), each set up with a
//! scenario and asked the same queries.

use std::collections::BTreeSet;
use std::fmt;

use rowdex::{Executor, Output, Session};

use super::scenario::{Scenario, Step, Target};
use super::value::Value;
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

/// SQLite with a scenario loaded.
pub struct Sqlite {
    conn: rusqlite::Connection,
    /// The write statements SQLite rejected: rowdex must reject them too.
    pub rejected: BTreeSet<WriteStatement>,
}

impl Sqlite {
    /// An in-memory SQLite database with `scenario` set up. SQLite rejecting a generated
    /// statement other than a write is a generator bug, reported as
    /// [`Error::SqliteRejected`].
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
        let mut rejected = BTreeSet::new();
        for step in scenario.setup(Target::Sqlite) {
            match conn.execute_batch(&step.sql) {
                Ok(()) => {}
                // A statement fails as a whole in both engines, so the tables stay as they
                // were and the setup goes on.
                Err(_) if step.write.is_some() => {
                    rejected.extend(write_statement(&step));
                }
                Err(source) => {
                    return Err(Error::SqliteRejected {
                        sql: step.sql,
                        source,
                    });
                }
            }
        }
        Ok(Sqlite { conn, rejected })
    }

    pub fn query(&self, sql: &str) -> Result<Vec<Vec<Value>>, rusqlite::Error> {
        let mut statement = self.conn.prepare(sql)?;
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
    /// rowdex in `config` with `scenario` set up; `rejected` are the writes SQLite rejected,
    /// which rowdex must reject too.
    pub async fn open(
        config: Config,
        scenario: &Scenario,
        rejected: &BTreeSet<WriteStatement>,
    ) -> Result<Rowdex, Error> {
        let fresh = config.backend.open().await?;
        let mut session = fresh.database().session();
        session.set_executor(config.executor);
        let mut setup_failure = None;
        let steps = scenario.setup(Target::Rowdex {
            indexed: config.indexed,
        });
        for step in steps {
            let must_fail = write_statement(&step).is_some_and(|w| rejected.contains(&w));
            match run(&session, &step.sql).await {
                Ok(_) if must_fail => {
                    setup_failure = Some((
                        step.sql,
                        "succeeded where SQLite rejected the statement".to_string(),
                    ));
                    break;
                }
                Err(message) if !must_fail => {
                    setup_failure = Some((step.sql, message));
                    break;
                }
                _ => {}
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
        // A statement: its count is not compared (writes are checked through the rows).
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
