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
mod tests {
    use super::*;
    use crate::differential::case::{Case, Verdict};
    use crate::differential::data::Rows;
    use crate::differential::query::{CmpOp, ColRef, Expr, Item, Operand, Select};
    use crate::differential::schema::{
        ColType, Column, Domain, Index, IndexTiming, KeyPart, Table,
    };

    fn column(name: &str, ty: ColType) -> Column {
        Column {
            name: name.into(),
            ty,
            spelling: match ty {
                ColType::Int => "BIGINT",
                ColType::Text => "TEXT",
                ColType::Real => "DOUBLE",
                ColType::Bool => "BOOLEAN",
            },
            not_null: false,
            domain: Domain::Small,
            null_percent: 15,
        }
    }

    fn col(name: &str, ty: ColType) -> ColRef {
        ColRef {
            table: "t1".into(),
            name: name.into(),
            ty,
        }
    }

    fn part(column: &str, desc: bool) -> KeyPart {
        KeyPart {
            column: column.into(),
            desc,
        }
    }

    /// A hand-written scenario: 400 rows keyed by `a DESC`, an index on `b` (20 values) and
    /// one on `(c, d DESC)` (5 texts and NULL).
    fn scenario() -> Scenario {
        let table = Table {
            name: "t1".into(),
            columns: vec![
                column("a", ColType::Int),
                column("b", ColType::Int),
                column("c", ColType::Text),
                column("d", ColType::Real),
            ],
            key: vec![part("a", true)],
            salt: None,
            salt_on: Vec::new(),
            inline_key: false,
            uniques: Vec::new(),
            ttl: false,
            versions: false,
            families: Vec::new(),
        };
        let texts = ["h1", "h12", "h2", "a", "b"];
        let rows = (0..400i64)
            .map(|i| {
                let c = if i % 7 == 0 {
                    Value::Null
                } else {
                    Value::Text(texts[(i % 5) as usize].into())
                };
                vec![
                    Value::Int(i),
                    Value::Int(i % 20),
                    c,
                    Value::Real((i % 8) as f64 * 0.5),
                ]
            })
            .collect();
        let index = |name: &str, columns: Vec<KeyPart>| Index {
            name: name.into(),
            table: "t1".into(),
            columns,
            include: Vec::new(),
            unique: false,
            timing: IndexTiming::AfterLoad,
            salt: None,
        };
        Scenario {
            tables: vec![table],
            rows: vec![Rows {
                table: "t1".into(),
                rows,
            }],
            indexes: vec![
                index("t1_b", vec![part("b", false)]),
                index("t1_cd", vec![part("c", false), part("d", true)]),
            ],
            writes: Vec::new(),
            views: Vec::new(),
        }
    }

    fn query(filter: Expr, hint: Option<&str>) -> Select {
        let mut q = Select::all_rows("t1");
        q.star = false;
        q.items = vec![
            Item::Col(col("a", ColType::Int)),
            Item::Col(col("d", ColType::Real)),
        ];
        q.filter = Some(filter);
        q.hint = hint.map(String::from);
        q
    }

    fn eq(name: &str, ty: ColType, value: Value) -> Expr {
        Expr::Cmp {
            left: Operand::Col(col(name, ty)),
            op: CmpOp::Eq,
            right: Operand::Lit(value),
        }
    }

    /// Conditions of the shapes the generator writes take the access paths they are meant
    /// to reach (EXPLAIN on the indexed memory store), and answer like SQLite everywhere.
    #[tokio::test(flavor = "multi_thread")]
    async fn generated_shapes_take_their_access_paths() -> Result<(), Error> {
        let scenario = scenario();
        let text = |s: &str| Value::Text(s.into());
        let cases = [
            (
                query(eq("b", ColType::Int, Value::Int(3)), None),
                "INDEX SCAN t1 using t1_b",
            ),
            (
                query(
                    Expr::And(vec![
                        eq("b", ColType::Int, Value::Int(3)),
                        eq("c", ColType::Text, text("h12")),
                    ]),
                    Some("INDEX_MERGE(t1 t1_b t1_cd)"),
                ),
                "INDEX INTERSECTION t1 using",
            ),
            (
                query(
                    Expr::Like {
                        col: col("c", ColType::Text),
                        pattern: "h1%".into(),
                        negated: false,
                    },
                    None,
                ),
                "INDEX SCAN t1 using t1_cd",
            ),
            (
                query(
                    Expr::Between {
                        col: col("a", ColType::Int),
                        lo: Value::Int(10),
                        hi: Value::Int(20),
                        negated: false,
                    },
                    None,
                ),
                "RANGE SCAN t1",
            ),
            (
                query(
                    Expr::InList {
                        col: col("a", ColType::Int),
                        values: vec![Value::Int(1), Value::Int(7), Value::Int(500)],
                        negated: false,
                    },
                    None,
                ),
                "MULTI GET t1",
            ),
            (
                query(eq("a", ColType::Int, Value::Int(5)), None),
                "POINT GET t1",
            ),
        ];
        let indexed = Config {
            backend: Backend::Memory,
            executor: Executor::Auto,
            indexed: true,
        };
        let rowdex = Rowdex::open(indexed, &scenario, &BTreeSet::new()).await?;
        for (query, path) in cases {
            let sql = query.sql();
            let plan = rowdex.explain(&sql).await;
            assert!(
                plan.iter().any(|line| line.starts_with(path)),
                "{sql}: expected {path}, got {plan:?}"
            );
            for config in Config::all() {
                let case = Case {
                    scenario: scenario.clone(),
                    query: query.clone(),
                    config,
                };
                let verdict = case.check().await?;
                assert!(
                    matches!(verdict, Verdict::Pass),
                    "{sql} on {config}: {verdict:?}"
                );
            }
        }
        Ok(())
    }
}
