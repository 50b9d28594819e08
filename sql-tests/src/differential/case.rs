//! One differential case: a scenario, a query and the rowdex configuration it runs on, checked
//! against SQLite. A case that fails is what the shrinker reduces and the `.slt` writer writes.

use super::engines::{Answer, Config, Rowdex, Sqlite};
use super::query::Select;
use super::scenario::Scenario;
use super::schema::Table;
use super::value::{Value, first_difference, same_rows, sub_multiset};
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
    /// rowdex failed a query that SQLite ran, or a setup statement went otherwise than on
    /// SQLite (an error, a write SQLite rejected and rowdex ran, other RETURNING rows).
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

/// An error message without the values and names in it: numbers, quoted text, and the
/// generator's table and column names (one lower-case letter, then digits).
pub fn error_pattern(message: &str) -> String {
    let mut unquoted = String::new();
    let mut quoted = false;
    for c in message.lines().next().unwrap_or_default().chars() {
        match c {
            '\'' | '"' | '`' => {
                quoted = !quoted;
                unquoted.push('?');
            }
            _ if quoted => {}
            c if c.is_ascii_digit() => {}
            c => unquoted.push(c),
        }
    }
    let words: Vec<&str> = unquoted
        .split(' ')
        .filter(|word| {
            // `b`, `t2.o` (digits are gone by now), with any punctuation around them.
            let name: String = word
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '.')
                .collect();
            let is_name =
                |part: &str| part.len() == 1 && part.chars().all(|c| c.is_ascii_lowercase());
            name.is_empty() || !name.split('.').all(is_name)
        })
        .collect();
    words.join(" ").chars().take(80).collect()
}

/// How a query's answer is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Row by row: the query orders its rows totally.
    Ordered,
    /// As multisets: no ORDER BY, or one that leaves ties.
    Multiset,
    /// LIMIT (and OFFSET) without a total order: any `limit` rows of the answer past `offset`
    /// are right. SQLite answers the query without its LIMIT, and rowdex's rows must be that
    /// many of those (which catches a limit applied before a filter).
    Window { limit: u64, offset: u64 },
}

impl Mode {
    pub fn of(query: &Select, tables: &[Table]) -> Mode {
        let total = query.total_order(tables);
        match query.limit {
            Some((limit, offset)) if !total => Mode::Window { limit, offset },
            _ if total && !query.order_by.is_empty() => Mode::Ordered,
            _ => Mode::Multiset,
        }
    }

    /// The query SQLite answers for the comparison: without its LIMIT for a window.
    pub fn reference(self, query: &Select) -> Select {
        let mut reference = query.clone();
        if let Mode::Window { .. } = self {
            reference.limit = None;
        }
        reference
    }

    /// Whether the window's rows are exactly determined by the whole answer (it keeps all of
    /// them, or none).
    pub fn determined(self, total: usize) -> bool {
        match self {
            Mode::Window { limit, offset } => {
                let total = total as u64;
                offset >= total || (offset == 0 && limit >= total)
            }
            _ => true,
        }
    }
}

/// Whether rowdex's answer is SQLite's (`expected`: SQLite's answer to `mode.reference`).
pub fn judge(expected: &[Vec<Value>], answer: Answer, mode: Mode) -> Option<Failure> {
    let got = match answer {
        Ok(got) => got,
        Err(message) => return Some(Failure::Error { message }),
    };
    let right = match mode {
        Mode::Ordered => same_rows(expected, &got, true),
        Mode::Multiset => same_rows(expected, &got, false),
        Mode::Window { limit, offset } => {
            let wanted = (expected.len() as u64).saturating_sub(offset).min(limit);
            got.len() as u64 == wanted && sub_multiset(&got, expected)
        }
    };
    (!right).then_some(Failure::Mismatch { got })
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
    pub fn mode(&self) -> Mode {
        Mode::of(&self.query, &self.scenario.relations())
    }

    /// Sets the case up on fresh databases and compares the answers.
    pub async fn check(&self) -> Result<Verdict, Error> {
        let Ok(sqlite) = Sqlite::open(&self.scenario) else {
            return Ok(Verdict::Invalid);
        };
        let mode = self.mode();
        let Ok(expected) = sqlite.query(&mode.reference(&self.query).sql()) else {
            return Ok(Verdict::Invalid);
        };
        let rowdex = Rowdex::open(self.config, &self.scenario, &sqlite.writes).await?;
        let answer = rowdex.query(&self.query.sql()).await;
        Ok(match judge(&expected, answer, mode) {
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
        let d = Failure::Error {
            message: "filter NOT b was pushed".into(),
        };
        let e = Failure::Error {
            message: "filter NOT t2.o was pushed".into(),
        };
        assert!(d.same_kind(&e));
        assert!(a.same_kind(&b));
        assert!(!a.same_kind(&c));
        assert!(!a.same_kind(&Failure::Mismatch { got: Vec::new() }));
    }
}
