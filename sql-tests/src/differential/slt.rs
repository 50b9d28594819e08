//! Writing a failing case as a sqllogictest file: the setup statements of its configuration
//! (a write with RETURNING as a query expecting SQLite's rows), then the query with SQLite's
//! answer as the expected result, and comments saying where it was found, which
//! configurations fail and what rowdex answered.

use std::fmt::Write as _;

use super::case::{Case, Failure, Mode};
use super::engines::{Config, WriteOutcomes, write_statement};
use super::scenario::{Step, Target};
use super::value::{OutKind, Value};

/// Everything a finding's file says besides the case itself.
pub struct Notes<'a> {
    /// How the case was found (seed, scenario, query number).
    pub origin: &'a str,
    pub failing: &'a [Config],
    pub passing: &'a [Config],
    /// EXPLAIN of the query in the failing configuration.
    pub plan: &'a [String],
    /// What SQLite did with the writes: one it rejected is a `statement error` in the file,
    /// one with RETURNING a query of the rows SQLite returned.
    pub writes: &'a WriteOutcomes,
}

/// The `.slt` text of a failing case.
pub fn render(
    case: &Case,
    expected: &[Vec<Value>],
    failure: &Failure,
    notes: &Notes<'_>,
) -> String {
    let mut out = String::new();
    let list = |configs: &[Config]| {
        configs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "# Differential test finding: rowdex disagrees with SQLite."
    );
    let _ = writeln!(
        out,
        "# Found by `rowdex-slt differential` ({}).",
        notes.origin
    );
    let _ = writeln!(out, "# Symptom: {}", failure.symptom(expected));
    let _ = writeln!(
        out,
        "# Fails on (store/executor/indexes): {}",
        list(notes.failing)
    );
    if !notes.passing.is_empty() {
        let _ = writeln!(out, "# Passes on: {}", list(notes.passing));
    }
    let config = case.config;
    let executor = match config.executor_name() {
        "datafusion" => " --executor datafusion",
        _ => "",
    };
    let _ = writeln!(
        out,
        "# Run: cargo run -p rowdex-sql-tests --bin rowdex-slt -- --backend {}{executor} FILE",
        config.backend
    );
    let _ = writeln!(
        out,
        "# Expected results are SQLite's ({}).",
        rusqlite::version()
    );
    match failure {
        Failure::Mismatch { got } => {
            let _ = writeln!(out, "# rowdex ({config}) answered {} rows:", got.len());
            for row in got.iter().take(20) {
                let values: Vec<String> = row.iter().map(Value::sql).collect();
                let _ = writeln!(out, "#   {}", values.join(" | "));
            }
            if got.len() > 20 {
                let _ = writeln!(out, "#   ... {} more", got.len() - 20);
            }
        }
        Failure::Error { message } => {
            for line in message.lines() {
                let _ = writeln!(out, "# rowdex ({config}) failed: {line}");
            }
        }
    }
    for line in notes.plan {
        let _ = writeln!(out, "# plan: {line}");
    }
    out.push('\n');
    for step in case.scenario.setup(Target::Rowdex {
        indexed: config.indexed,
    }) {
        let _ = writeln!(out, "{}", setup_record(case, &step, notes.writes));
    }
    let mode = case.mode();
    if !mode.determined(expected.len()) {
        // Which rows a LIMIT without a total order keeps is up to the engine; how many is not.
        let Mode::Window { limit, offset } = mode else {
            return out;
        };
        let count = (expected.len() as u64).saturating_sub(offset).min(limit);
        let _ = writeln!(
            out,
            "# LIMIT without a total order: only the number of rows is fixed.\nquery I\nSELECT count(*) FROM ({}) AS q\n----\n{count}",
            case.query.sql()
        );
        return out;
    }
    let kinds = case.query.out_kinds(&case.scenario.relations());
    let letters: String = kinds.iter().map(|k| k.letter()).collect();
    let sort = if mode == Mode::Ordered {
        ""
    } else {
        " rowsort"
    };
    let _ = writeln!(out, "query {letters}{sort}\n{}\n----", case.query.sql());
    // A determined window holds all of SQLite's rows or none.
    let rows: &[Vec<Value>] = match mode {
        Mode::Window { offset, .. } if offset as usize >= expected.len() => &[],
        _ => expected,
    };
    out.push_str(&result_lines(rows, &kinds));
    out
}

/// A setup statement's record: `statement ok`, `statement error` for a write SQLite rejected,
/// or for a write with RETURNING a query expecting the rows SQLite returned, in any order.
fn setup_record(case: &Case, step: &Step, writes: &WriteOutcomes) -> String {
    let statement = write_statement(step);
    if statement
        .as_ref()
        .is_some_and(|w| writes.rejected.contains(w))
    {
        return format!("statement error\n{}\n", step.sql);
    }
    let kinds = step
        .write
        .and_then(|i| case.scenario.writes.get(i))
        .and_then(|w| w.returning_kinds(&case.scenario.tables));
    let returned = statement.as_ref().and_then(|w| writes.returned.get(w));
    match (kinds, returned) {
        (Some(kinds), Some(rows)) => {
            let letters: String = kinds.iter().map(|k| k.letter()).collect();
            format!(
                "query {letters} rowsort\n{}\n----\n{}",
                step.sql,
                result_lines(rows, &kinds)
            )
        }
        _ => format!("statement ok\n{}\n", step.sql),
    }
}

/// Result rows as lines of a `.slt` file, each value as rowdex prints one of its kind.
fn result_lines(rows: &[Vec<Value>], kinds: &[OutKind]) -> String {
    let mut out = String::new();
    for row in rows {
        let texts: Vec<String> = row
            .iter()
            .zip(
                kinds
                    .iter()
                    .copied()
                    .chain(std::iter::repeat(OutKind::Text)),
            )
            .map(|(v, k)| v.slt_text(k))
            .collect();
        let _ = writeln!(out, "{}", texts.join(" "));
    }
    out
}
