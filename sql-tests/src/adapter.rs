//! The sqllogictest `AsyncDB` over a rowdex session.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rowdex::{Output, Session};
use sqllogictest::{AsyncDB, DBOutput};

use crate::error::Error;
use crate::preprocess::ENGINE_NAME;
use crate::values::{self, TypeLetter, ValueStyle};

/// The type letters of the query about to run. `AsyncDB::run` only receives SQL, so the file
/// runner puts each query's declared letters here just before running it.
#[derive(Debug, Clone, Default)]
pub struct ExpectedTypes(Arc<Mutex<Option<Vec<TypeLetter>>>>);

impl ExpectedTypes {
    pub fn set(&self, letters: Option<Vec<TypeLetter>>) {
        // A poisoned lock only means another thread panicked mid-update of a plain value.
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = letters;
    }

    /// Takes the letters, so they apply to one query only.
    pub fn take(&self) -> Option<Vec<TypeLetter>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// One connection of a test file to its database.
pub struct RowdexDb {
    session: Session,
    style: ValueStyle,
    expected: ExpectedTypes,
}

impl RowdexDb {
    pub fn new(session: Session, style: ValueStyle, expected: ExpectedTypes) -> RowdexDb {
        RowdexDb {
            session,
            style,
            expected,
        }
    }
}

#[async_trait]
impl AsyncDB for RowdexDb {
    type Error = Error;
    type ColumnType = TypeLetter;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<TypeLetter>, Error> {
        let expected = self.expected.take();
        let outputs = self.session.execute(sql).await?;
        // A record with several statements reports the last one, as a SQL shell would.
        Ok(match outputs.into_iter().last() {
            None | Some(Output::Done) => DBOutput::StatementComplete(0),
            Some(Output::CopyOut(copied)) => DBOutput::StatementComplete(copied.rows),
            Some(Output::CopyIn(copy)) => return Err(copy.abort().await.into()),
            Some(Output::Affected { rows }) => DBOutput::StatementComplete(rows),
            Some(Output::Rows { schema, batches }) => {
                let (types, mut rows) =
                    values::render(&schema, &batches, self.style, expected.as_deref());
                if is_explain(sql) {
                    for cell in rows.iter_mut().flatten() {
                        *cell = without_estimates(cell);
                    }
                }
                DBOutput::Rows { types, rows }
            }
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        ENGINE_NAME
    }
}

fn is_explain(sql: &str) -> bool {
    sql.trim_start()
        .get(..7)
        .is_some_and(|word| word.eq_ignore_ascii_case("EXPLAIN"))
}

/// EXPLAIN text without the cost model's `(est. ...)` notes: their costs differ from one store
/// to another (each has its own seek and get costs), and a suite runs on every store, so the
/// suites compare the chosen path only.
fn without_estimates(cell: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    let mut rest = cell;
    while let Some(start) = rest.find(" (est. ") {
        out.push_str(&rest[..start]);
        rest = match rest[start..].find(')') {
            Some(end) => &rest[start + end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_are_removed_from_explain_text() {
        assert_eq!(
            without_estimates("INDEX SCAN t using i [a = 1] (est. rows=2 entries=4 cost=3us) x"),
            "INDEX SCAN t using i [a = 1] x"
        );
        assert_eq!(without_estimates("FULL SCAN t"), "FULL SCAN t");
        assert!(is_explain("  explain SELECT 1") && !is_explain("SELECT 1"));
    }
}
