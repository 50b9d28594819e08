//! Random rows and later writes: the values each column draws from (NULLs, duplicates,
//! extremes, unicode, empty strings), unique primary keys, and the INSERT, UPDATE, DELETE and
//! INSERT OR REPLACE / IGNORE statements that load and change the tables.
//!
//! Values both engines would store differently are never generated (each is a restriction
//! against SQLite's semantics, not a rowdex bug):
//! - no NaN: SQLite stores NaN as NULL;
//! - no infinities: neither engine's SQL has a literal for them that the other reads alike;
//! - no `-0.0`: SQLite treats it as equal to `0.0` (a duplicate key, one group, tied in a
//!   sort) while Arrow's sort and rowdex's key encoding order it before `0.0`;
//! - no NUL in text (SQLite's SQL tokenizer stops at it), and no whitespace control
//!   characters (tab, newline, CR, VT, FF): sqllogictest files are line based and collapse
//!   whitespace, so a finding with them could not be written down faithfully (other control
//!   characters, such as U+0001 that order-preserving key encodings tend to escape, are fine);
//! - no text equal to `NULL` or `(empty)`: sqllogictest spells NULL and '' that way.

use std::collections::HashSet;

use super::query::Expr;
use super::rng::Rng;
use super::schema::{ColType, Column, Domain, Table};
use super::value::Value;

/// Integers every integer column draws from most of the time: small, with duplicates.
const SMALL_INTS: [i64; 13] = [-100, -3, -2, -1, 0, 1, 2, 3, 5, 7, 10, 42, 100];

/// Integers only `Domain::Wide` columns hold: the ends of `i64` and the edges of narrower
/// types (byte, 32-bit, 2^53 where `f64` stops being exact).
const WIDE_INTS: [i64; 14] = [
    i64::MIN,
    i64::MIN + 1,
    i64::MAX,
    i64::MAX - 1,
    -2_147_483_648,
    2_147_483_647,
    2_147_483_648,
    4_294_967_296,
    9_007_199_254_740_992,
    9_007_199_254_740_993,
    -9_007_199_254_740_993,
    255,
    256,
    -129,
];

/// Reals with few binary digits: sums and averages of these are exact in any order, so SQLite
/// and rowdex must agree to the bit (which a tolerance would otherwise have to cover).
const SMALL_REALS: [f64; 13] = [
    0.0, 0.5, -0.5, 1.0, -1.0, 1.25, 2.5, -3.75, 100.0, 1024.125, -7.0, 0.25, 3.0,
];

/// Reals only `Domain::Wide` columns hold: inexact decimals, the largest and smallest normal
/// magnitudes, 2^53, values near each other.
const WIDE_REALS: [f64; 14] = [
    0.1,
    0.2,
    0.300_000_000_000_000_04,
    1e300,
    -1e300,
    1e-300,
    -1e-300,
    f64::MAX,
    f64::MIN,
    2.225_073_858_507_201_4e-308,
    // 2^53, where reals start to skip integers.
    9_007_199_254_740_992.0,
    123_456_789.123,
    -2.5e-10,
    std::f64::consts::PI,
];

/// Strings with prefix relations (`h1`/`h12`, `a`/`ab`), case pairs, LIKE's wildcard
/// characters as data, a quote, a backslash, spaces, multi-byte characters, the empty
/// string, low control characters (which key encodings escape) and the largest code points
/// of each UTF-8 length (the last byte a prefix bound increments).
const TEXTS: [&str; 38] = [
    "",
    "a",
    "A",
    "ab",
    "abc",
    "b",
    "B",
    "ba",
    "h1",
    "h12",
    "h2",
    "host1",
    "x y",
    " ",
    "o'k",
    "a%b",
    "a_b",
    "%",
    "_",
    "\\",
    "a\\b",
    "é",
    "éa",
    "e\u{301}",
    "日本",
    "日本語",
    "😀",
    "😀a",
    "~",
    "zz",
    "a\u{1}",
    "\u{1}",
    "a\u{2}b",
    "\u{7f}",
    "ÿ",
    "\u{7ff}",
    "\u{ffff}",
    "a\u{10ffff}",
];

/// Characters of generated strings beyond the fixed ones.
const ALPHABET: [char; 12] = [
    'a',
    'b',
    'A',
    '%',
    '_',
    ' ',
    'é',
    '😀',
    '1',
    'z',
    '\u{1}',
    '\u{10ffff}',
];

/// A random value for `column` (never NULL).
pub fn random_value(rng: &mut Rng, column: &Column) -> Value {
    match column.ty {
        ColType::Int => {
            if column.domain == Domain::Wide && rng.percent(30) {
                Value::Int(*rng.pick(&WIDE_INTS))
            } else {
                Value::Int(*rng.pick(&SMALL_INTS))
            }
        }
        ColType::Real => {
            if column.domain == Domain::Wide && rng.percent(35) {
                Value::Real(*rng.pick(&WIDE_REALS))
            } else {
                Value::Real(*rng.pick(&SMALL_REALS))
            }
        }
        ColType::Text => {
            if rng.percent(2) {
                // Long strings sharing a long prefix: keys and index entries of many bytes
                // that differ only near the end.
                let stem = *rng.pick(&["a", "h1", "é"]);
                let tail = *rng.pick(&TEXTS);
                Value::Text(format!("{}{tail}", stem.repeat(rng.between(100, 1500))))
            } else if rng.percent(80) {
                Value::Text((*rng.pick(&TEXTS)).to_string())
            } else {
                let len = rng.below(5);
                Value::Text((0..len).map(|_| *rng.pick(&ALPHABET)).collect())
            }
        }
        ColType::Bool => Value::Bool(rng.percent(50)),
    }
}

/// A value for `column` of `table`: NULL sometimes when the column allows it.
pub fn random_cell(rng: &mut Rng, table: &Table, column: &Column) -> Value {
    if table.nullable(&column.name) && rng.percent(column.null_percent) {
        Value::Null
    } else {
        random_value(rng, column)
    }
}

/// A literal to compare `column` with: usually a value it may hold (so conditions match
/// rows), sometimes a near miss (one more, a longer or shorter string).
pub fn random_literal(rng: &mut Rng, column: &Column) -> Value {
    let value = random_value(rng, column);
    if !rng.percent(20) {
        return value;
    }
    match value {
        Value::Int(v) => Value::Int(v.saturating_add(*rng.pick(&[-1, 1]))),
        Value::Text(mut s) => {
            if s.is_empty() || rng.percent(50) {
                s.push(*rng.pick(&ALPHABET));
            } else {
                s.pop();
            }
            Value::Text(s)
        }
        other => other,
    }
}

/// The rows of one table.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    pub table: String,
    /// Values in the table's column order.
    pub rows: Vec<Vec<Value>>,
}

/// How many rows a table gets: sometimes none or one, mostly tens, now and then hundreds (where
/// the planner starts preferring indexes and intersections to a full scan), and with `huge`
/// allowed, rarely thousands (loaded in one statement: many pages of index entries to merge,
/// and with its index entries more mutations than fjall's threshold for ingesting a batch
/// as tables).
fn row_count(rng: &mut Rng, huge: bool) -> usize {
    match rng.below(100) {
        0..=2 => 0,
        3..=25 => rng.between(1, 10),
        26..=70 => rng.between(10, 60),
        71..=91 => rng.between(60, 150),
        92..=97 => rng.between(200, 500),
        _ if !huge => rng.between(200, 500),
        _ => rng.between(3000, 5000),
    }
}

/// Tables with more rows than this are loaded by one INSERT statement.
const HUGE: usize = 1000;

/// Random rows for `table` with distinct primary keys (a table without one may repeat whole
/// rows) that respect its UNIQUE constraints. Fewer rows come back when the columns have
/// too few distinct values.
pub fn random_rows(rng: &mut Rng, table: &Table, huge: bool) -> Rows {
    let wanted = row_count(rng, huge);
    let mut keys: HashSet<String> = HashSet::new();
    let mut rows = Vec::with_capacity(wanted);
    let mut attempts = 0;
    while rows.len() < wanted && attempts < wanted * 4 {
        attempts += 1;
        let row: Vec<Value> = table
            .columns
            .iter()
            .map(|c| random_cell(rng, table, c))
            .collect();
        let key_free = table.key.is_empty() || !keys.contains(&key_text(table, &row));
        if key_free && unique_free(table, &rows, &row) {
            if !table.key.is_empty() {
                keys.insert(key_text(table, &row));
            }
            rows.push(row);
        }
    }
    Rows {
        table: table.name.clone(),
        rows,
    }
}

/// Whether `row` clashes with none of `rows` on a UNIQUE constraint (values with a NULL among
/// them never clash).
pub fn unique_free(table: &Table, rows: &[Vec<Value>], row: &[Value]) -> bool {
    table.uniques.iter().all(|unique| {
        let positions: Vec<usize> = unique
            .iter()
            .filter_map(|k| table.columns.iter().position(|c| c.name == k.column))
            .collect();
        let values = |r: &[Value]| -> Option<Vec<Value>> {
            let v: Vec<Value> = positions
                .iter()
                .filter_map(|&i| r.get(i).cloned())
                .collect();
            (!v.iter().any(Value::is_null)).then_some(v)
        };
        match values(row) {
            None => true,
            Some(mine) => !rows
                .iter()
                .any(|other| values(other).as_ref() == Some(&mine)),
        }
    })
}

/// A row's primary key as text, for uniqueness checks. Literal text tells values apart
/// exactly: `f64`'s shortest form is unique per value, and `-0.0` is never generated.
pub fn key_text(table: &Table, row: &[Value]) -> String {
    table
        .key
        .iter()
        .filter_map(|k| table.columns.iter().position(|c| c.name == k.column))
        .map(|i| row.get(i).map(Value::sql).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\u{1}")
}

/// INSERT statements for `rows`: a few dozen rows each, or all in one for a huge table.
pub fn insert_sql(table: &Table, rows: &[Vec<Value>], verb: &str) -> Vec<String> {
    let columns: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
    let chunk = if rows.len() > HUGE { rows.len() } else { 40 };
    rows.chunks(chunk)
        .map(|chunk| {
            let tuples: Vec<String> = chunk
                .iter()
                .map(|row| {
                    let values: Vec<String> = row.iter().map(Value::sql).collect();
                    format!("({})", values.join(", "))
                })
                .collect();
            format!(
                "{verb} INTO {} ({}) VALUES {}",
                table.name,
                columns.join(", "),
                tuples.join(", ")
            )
        })
        .collect()
}

/// A write after the initial load, run on every engine alike.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Delete {
        table: String,
        filter: Expr,
    },
    /// Sets columns to literals, key columns too: moving rows onto a taken key (or two rows
    /// onto one) fails the statement in both engines. SQLite checks each row as it goes and
    /// rowdex at the end of the statement, but with literal values a clash along the way is
    /// still a clash at the end, so the two reject the same statements. (`SET k = k + 1`,
    /// where they would differ, is not generated.)
    Update {
        table: String,
        sets: Vec<(String, Value)>,
        filter: Expr,
    },
    /// Rows of which some have keys already taken, sometimes one key twice in the statement.
    Insert {
        table: String,
        mode: InsertMode,
        rows: Vec<Vec<Value>>,
    },
}

/// What an INSERT does with a key that is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertMode {
    /// Fails the statement, which writes nothing.
    Plain,
    /// `INSERT OR REPLACE`: the whole row is replaced.
    Replace,
    /// `INSERT OR IGNORE`: the row is skipped.
    Ignore,
}

impl InsertMode {
    fn verb(self) -> &'static str {
        match self {
            InsertMode::Plain => "INSERT",
            InsertMode::Replace => "INSERT OR REPLACE",
            InsertMode::Ignore => "INSERT OR IGNORE",
        }
    }
}

impl Write {
    pub fn table(&self) -> &str {
        match self {
            Write::Delete { table, .. }
            | Write::Update { table, .. }
            | Write::Insert { table, .. } => table,
        }
    }

    pub fn sql(&self, tables: &[Table]) -> Vec<String> {
        match self {
            Write::Delete { table, filter } => {
                vec![format!("DELETE FROM {table} WHERE {}", filter.sql(false))]
            }
            Write::Update {
                table,
                sets,
                filter,
            } => {
                let sets: Vec<String> = sets
                    .iter()
                    .map(|(c, v)| format!("{c} = {}", v.sql()))
                    .collect();
                vec![format!(
                    "UPDATE {table} SET {} WHERE {}",
                    sets.join(", "),
                    filter.sql(false)
                )]
            }
            Write::Insert { table, mode, rows } => match tables.iter().find(|t| &t.name == table) {
                Some(t) => insert_sql(t, rows, mode.verb()),
                None => Vec::new(),
            },
        }
    }

    /// Whether the write mentions `column` of `table` (in a SET or its condition).
    pub fn mentions(&self, table: &str, column: &str) -> bool {
        if self.table() != table {
            return false;
        }
        let mut columns = std::collections::BTreeSet::new();
        match self {
            Write::Delete { filter, .. } => filter.columns(&mut columns),
            Write::Update { sets, filter, .. } => {
                if sets.iter().any(|(c, _)| c == column) {
                    return true;
                }
                filter.columns(&mut columns);
            }
            // Whole rows: removing a column removes it from them.
            Write::Insert { .. } => return false,
        }
        columns.contains(&(table.to_string(), column.to_string()))
    }
}

/// Rows for an INSERT OR REPLACE / IGNORE: half of them reuse keys of `existing` rows.
pub fn conflicting_rows(rng: &mut Rng, table: &Table, existing: &[Vec<Value>]) -> Vec<Vec<Value>> {
    let count = rng.between(1, 6);
    let key_positions: Vec<usize> = table
        .key
        .iter()
        .filter_map(|k| table.columns.iter().position(|c| c.name == k.column))
        .collect();
    let mut out: Vec<Vec<Value>> = Vec::with_capacity(count);
    for _ in 0..count {
        let mut row: Vec<Value> = table
            .columns
            .iter()
            .map(|c| random_cell(rng, table, c))
            .collect();
        let source = if !existing.is_empty() && rng.percent(50) {
            Some(rng.pick(existing))
        } else if !out.is_empty() && rng.percent(15) {
            // A key twice in one statement: the later row wins.
            Some(rng.pick(&out))
        } else {
            None
        };
        if let Some(source) = source {
            for &i in &key_positions {
                if let (Some(slot), Some(v)) = (row.get_mut(i), source.get(i)) {
                    *slot = v.clone();
                }
            }
        }
        out.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::differential::schema::random_table;

    #[test]
    fn rows_have_unique_keys_and_allowed_nulls() {
        let mut rng = Rng::new(11);
        for n in 0..100 {
            let table = random_table(&mut rng, n % 2);
            let rows = random_rows(&mut rng, &table, false);
            let mut keys = HashSet::new();
            for row in &rows.rows {
                assert_eq!(row.len(), table.columns.len());
                for (c, v) in table.columns.iter().zip(row) {
                    assert!(!v.is_null() || table.nullable(&c.name));
                }
                if !table.key.is_empty() {
                    assert!(keys.insert(key_text(&table, row)));
                }
            }
        }
    }

    #[test]
    fn no_value_is_one_the_engines_store_differently() {
        for v in SMALL_REALS.iter().chain(&WIDE_REALS) {
            assert!(v.is_finite() && !(*v == 0.0 && v.is_sign_negative()));
        }
        let unwritable = |c: char| c == '\0' || (c.is_control() && c.is_ascii_whitespace());
        for t in TEXTS {
            assert!(!t.chars().any(unwritable) && t != "NULL" && t != "(empty)");
        }
        assert!(!ALPHABET.iter().any(|c| unwritable(*c)));
    }
}
