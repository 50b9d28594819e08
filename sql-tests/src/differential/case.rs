//! One differential case: a scenario, a query and the rowdex configuration it runs on, checked
//! against SQLite. A case that fails is what the shrinker reduces and the `.slt` writer writes.

use super::engines::{Answer, Config, Rowdex, Sqlite};
use super::query::Select;
use super::scenario::Scenario;
use super::value::{Value, same_rows};
use crate::Error;

#[derive(Debug, Clone)]
pub struct Case {
    pub scenario: Scenario,
    pub query: Select,
    pub config: Config,
}

/// How rowdex's answer differs from SQLite's.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Other rows (or the same in another order, where the order is defined).
    Mismatch { got: Vec<Vec<Value>> },
    /// rowdex failed a query (or a setup statement) that SQLite ran.
    Error { message: String },
}

impl Failure {
    /// Whether two failures look like the same bug, so shrinking does not wander from one
    /// bug to another: any two mismatches, or errors with the same message once the values
    /// in it (numbers and quoted text) are left out.
    pub fn same_kind(&self, other: &Failure) -> bool {
        match (self, other) {
            (Failure::Mismatch { .. }, Failure::Mismatch { .. }) => true,
            (Failure::Error { message: a }, Failure::Error { message: b }) => {
                error_pattern(a) == error_pattern(b)
            }
            _ => false,
        }
    }

    /// One line for reports.
    pub fn symptom(&self, expected: &[Vec<Value>]) -> String {
        match self {
            Failure::Mismatch { got } => format!(
                "wrong result: {} rows, SQLite {} ({})",
                got.len(),
                expected.len(),
                first_difference(expected, got)
            ),
            Failure::Error { message } => {
                format!("error: {}", message.lines().next().unwrap_or_default())
            }
        }
    }
}

/// An error message without the values in it.
pub fn error_pattern(message: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in message.lines().next().unwrap_or_default().chars() {
        match c {
            '\'' | '"' | '`' => {
                quoted = !quoted;
                out.push('?');
            }
            _ if quoted => {}
            c if c.is_ascii_digit() => {}
            c => out.push(c),
        }
    }
    out.chars().take(80).collect()
}

fn first_difference(expected: &[Vec<Value>], got: &[Vec<Value>]) -> String {
    let show = |row: Option<&Vec<Value>>| match row {
        Some(row) => row.iter().map(Value::sql).collect::<Vec<_>>().join(", "),
        None => "nothing".to_string(),
    };
    let mut e: Vec<&Vec<Value>> = expected.iter().collect();
    let mut g: Vec<&Vec<Value>> = got.iter().collect();
    e.sort_by(|a, b| super::value::row_cmp(a, b));
    g.sort_by(|a, b| super::value::row_cmp(a, b));
    let missing = e.iter().find(|row| !g.contains(row));
    let extra = g.iter().find(|row| !e.contains(row));
    match (missing, extra) {
        (None, None) => "same rows, other order".to_string(),
        (m, x) => format!(
            "missing [{}], extra [{}]",
            show(m.copied()),
            show(x.copied())
        ),
    }
}

/// Whether rowdex's answer is SQLite's.
pub fn judge(expected: &[Vec<Value>], answer: Answer, ordered: bool) -> Option<Failure> {
    match answer {
        Ok(got) if same_rows(expected, &got, ordered) => None,
        Ok(got) => Some(Failure::Mismatch { got }),
        Err(message) => Some(Failure::Error { message }),
    }
}

/// The result of checking a case from scratch.
#[derive(Debug)]
pub enum Verdict {
    Pass,
    Fail {
        expected: Vec<Vec<Value>>,
        failure: Failure,
    },
    /// SQLite rejected the scenario or the query: not a case at all (the shrinker meets this
    /// when a simplification makes the query invalid).
    Invalid,
}

impl Case {
    /// Whether rows must come in SQLite's order.
    pub fn ordered(&self) -> bool {
        !self.query.order_by.is_empty() && self.query.total_order(&self.scenario.tables)
    }

    /// Sets the case up on fresh databases and compares the answers.
    pub async fn check(&self) -> Result<Verdict, Error> {
        let Ok(sqlite) = Sqlite::open(&self.scenario) else {
            return Ok(Verdict::Invalid);
        };
        let sql = self.query.sql();
        let Ok(expected) = sqlite.query(&sql) else {
            return Ok(Verdict::Invalid);
        };
        let rowdex = Rowdex::open(self.config, &self.scenario, &sqlite.rejected).await?;
        let answer = rowdex.query(&sql).await;
        Ok(match judge(&expected, answer, self.ordered()) {
            None => Verdict::Pass,
            Some(failure) => Verdict::Fail { expected, failure },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_match_without_their_values() {
        let a = Failure::Error {
            message: "duplicate key 'x' in t1 at 12".into(),
        };
        let b = Failure::Error {
            message: "duplicate key 'yy' in t1 at 3".into(),
        };
        let c = Failure::Error {
            message: "type error".into(),
        };
        assert!(a.same_kind(&b));
        assert!(!a.same_kind(&c));
        assert!(!a.same_kind(&Failure::Mismatch { got: Vec::new() }));
    }
}
