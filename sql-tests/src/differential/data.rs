//! Random rows and later writes: the values each column draws from (NULLs, duplicates,
//! extremes, unicode, empty strings), unique primary keys, column DEFAULTs, and the INSERT
//! (naming every column or leaving some to their DEFAULT), UPDATE, DELETE, INSERT OR REPLACE /
//! IGNORE and `ON CONFLICT DO UPDATE` statements that load and change the tables, with or
//! without RETURNING.
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
//! - no text equal to `NULL` or `(empty)`: sqllogictest spells NULL and '' that way;
//! - no DECIMAL with more than two digits after the point (the columns' scale): rowdex
//!   rounds `1.005` to 1.01 where SQLite keeps the double; and none stored of 10^6 or more
//!   (a near-miss literal may reach it), so that SQLite's double holds every cent with room
//!   to spare (its sums and averages are compared with rowdex's exact ones within `value`'s
//!   tolerance, far below a cent).

use std::collections::HashSet;

use super::query::{Expr, kind_of};
use super::rng::Rng;
use super::schema::{ColType, Column, DECIMAL_SCALE, Domain, Table};
use super::value::{OutKind, Value};

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

/// DECIMAL(12,2) values in cents that every DECIMAL column draws from most of the time: zero
/// and a cent either side of it (where a key encoding's sign handling shows), tenths that
/// doubles do not hold exactly (SQLite's 0.1 + 0.2 is 0.30000000000000004, rowdex's 0.30),
/// whole numbers (SQLite stores them as integers), 8.03 (whose double is a little under it:
/// 8.029999999999999 at 15 digits), and duplicates. None over 1000 in magnitude, so a sum of
/// a few thousand of them stays where a double resolves 10^-9.
const SMALL_DECIMALS: [i64; 21] = [
    -100_000, -1_999, -100, -50, -5, -1, 0, 1, 5, 10, 20, 30, 50, 100, 125, 250, 700, 803, 1_050,
    1_234, 100_000,
];

/// DECIMAL(12,2) values in cents only `Domain::Wide` columns hold: the largest under 10^6
/// (see the module notes) and pairs a cent apart, the edges of narrower integer types.
const WIDE_DECIMALS: [i64; 12] = [
    99_999_999,
    -99_999_999,
    99_999_998,
    -99_999_998,
    12_345_678,
    -12_345_678,
    10_000_000,
    25_500,
    25_600,
    -12_800,
    3_276_799,
    6_553_600,
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

/// UUIDs, in the form rowdex writes them: the extremes, and neighbours that differ in the
/// first, a middle and the last byte.
pub const UUIDS: [&str; 10] = [
    "00000000-0000-0000-0000-000000000000",
    "00000000-0000-0000-0000-000000000001",
    "0b5e7c1a-3f2d-4e8b-9a6c-1d2e3f405162",
    "0b5e7c1a-3f2d-4e8b-9a6c-1d2e3f405163",
    "0b5e7c1a-3f2e-4e8b-9a6c-1d2e3f405162",
    "7fffffff-ffff-4fff-bfff-ffffffffffff",
    "80000000-0000-4000-8000-000000000000",
    "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    "fedcba98-7654-4321-8fed-cba987654321",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
];

/// Instants, in the form rowdex writes a TIMESTAMPTZ in UTC: whole seconds and fractions
/// (which sort after the whole second, as `.` sorts after `+`), around the epoch, leap days
/// and a daylight-saving change elsewhere.
pub const INSTANTS: [&str; 12] = [
    "1970-01-01 00:00:00+00",
    "1900-03-01 12:00:00+00",
    "1969-12-31 23:59:59.999999+00",
    "1970-01-01 00:00:00.5+00",
    "1999-12-31 23:59:59+00",
    "2000-02-29 12:00:00+00",
    "2024-03-10 01:59:59+00",
    "2024-03-10 02:00:00+00",
    "2024-03-10 02:00:00.25+00",
    "2024-03-10 02:00:00.125+00",
    "2038-01-19 03:14:08+00",
    "2100-12-31 23:59:59+00",
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
        ColType::Uuid => Value::Text((*rng.pick(&UUIDS)).to_string()),
        ColType::TimestampTz => Value::Text((*rng.pick(&INSTANTS)).to_string()),
        ColType::Decimal => {
            let units = if column.domain == Domain::Wide && rng.percent(30) {
                *rng.pick(&WIDE_DECIMALS)
            } else if rng.percent(80) {
                *rng.pick(&SMALL_DECIMALS)
            } else {
                // Any number of cents up to 1000.00 either way.
                rng.below(200_001) as i64 - 100_000
            };
            Value::decimal(i128::from(units), DECIMAL_SCALE)
        }
    }
}

/// A generated DECIMAL (`Value::decimal`, at the columns' scale or fewer digits) in cents.
fn cents(units: i128, scale: u8) -> i128 {
    let up = DECIMAL_SCALE.saturating_sub(scale);
    units.saturating_mul(10i128.saturating_pow(u32::from(up)))
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
/// rows), sometimes a near miss (one more, a cent more or less, a longer or shorter string).
pub fn random_literal(rng: &mut Rng, column: &Column) -> Value {
    let value = random_value(rng, column);
    // A UUID or an instant changed as text would no longer be one.
    if !rng.percent(20) || matches!(column.ty, ColType::Uuid | ColType::TimestampTz) {
        return value;
    }
    match value {
        Value::Int(v) => Value::Int(v.saturating_add(*rng.pick(&[-1, 1]))),
        Value::Decimal { units, scale } => {
            Value::decimal(cents(units, scale) + *rng.pick(&[-1, 1]), DECIMAL_SCALE)
        }
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
/// exactly: `f64`'s shortest form is unique per value, a DECIMAL is written without trailing
/// zeros (`Value::decimal`), and `-0.0` is never generated.
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
    insert_statements(table, rows, &[], verb, "")
}

/// INSERT statements naming every column of `table` but `omitted` (which take their
/// DEFAULT), each ending in `tail` (an ON CONFLICT or RETURNING clause, or nothing). `rows`
/// are whole rows: their values for the omitted columns are not written.
fn insert_statements(
    table: &Table,
    rows: &[Vec<Value>],
    omitted: &[String],
    verb: &str,
    tail: &str,
) -> Vec<String> {
    let named: Vec<usize> = table
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| !omitted.contains(&c.name))
        .map(|(i, _)| i)
        .collect();
    let columns: Vec<&str> = named
        .iter()
        .filter_map(|&i| table.columns.get(i))
        .map(|c| c.name.as_str())
        .collect();
    let chunk = if rows.len() > HUGE { rows.len() } else { 40 };
    rows.chunks(chunk)
        .map(|chunk| {
            let tuples: Vec<String> = chunk
                .iter()
                .map(|row| {
                    let values: Vec<String> = named
                        .iter()
                        .filter_map(|&i| row.get(i))
                        .map(Value::sql)
                        .collect();
                    format!("({})", values.join(", "))
                })
                .collect();
            format!(
                "{verb} INTO {} ({}) VALUES {}{tail}",
                table.name,
                columns.join(", "),
                tuples.join(", ")
            )
        })
        .collect()
}

/// A write after the initial load, run on every engine alike. Any of them may end in
/// RETURNING, whose rows are compared with SQLite's (see `engines`).
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Delete {
        table: String,
        filter: Expr,
        returning: Option<Returning>,
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
        returning: Option<Returning>,
    },
    /// Rows of which some have keys already taken, sometimes one key twice in the statement
    /// (never in an upsert: see `InsertMode::Update`).
    Insert {
        table: String,
        mode: InsertMode,
        /// Whole rows, in the table's column order.
        rows: Vec<Vec<Value>>,
        /// Columns the INSERT leaves out, which take their DEFAULT (NULL without one): the
        /// rows' values for them are not written.
        omitted: Vec<String>,
        returning: Option<Returning>,
    },
}

/// What an INSERT does with a key that is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertMode {
    /// Fails the statement, which writes nothing.
    Plain,
    /// `INSERT OR REPLACE`: the whole row is replaced.
    Replace,
    /// `INSERT OR IGNORE`: the row is skipped.
    Ignore,
    /// `ON CONFLICT (<primary key>) DO UPDATE`: the stored row is updated. Its rows never
    /// propose one key twice: rowdex refuses that, as PostgreSQL does, where SQLite would
    /// apply both.
    Update(DoUpdate),
}

impl InsertMode {
    fn verb(&self) -> &'static str {
        match self {
            InsertMode::Plain | InsertMode::Update(_) => "INSERT",
            InsertMode::Replace => "INSERT OR REPLACE",
            InsertMode::Ignore => "INSERT OR IGNORE",
        }
    }
}

/// The `ON CONFLICT (<primary key>) DO UPDATE` of an upsert. It sets neither key columns nor
/// UNIQUE ones, so an updated row never clashes with another (a clash SQLite would find row
/// by row and rowdex at the end of the statement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoUpdate {
    /// `c = excluded.c`: the columns that take the proposed value.
    pub take: Vec<String>,
    /// `d = <table>.d + 1`: a column counted up from its stored value, always an integer or
    /// real of `Domain::Small` (no overflow, and an exact sum in both engines; never a
    /// DECIMAL, which SQLite adds as a double: 0.14 + 1 is not the double of 1.14).
    pub bump: Option<String>,
    /// `WHERE <table>.c IS NOT NULL`, or `excluded.c`.
    pub guard: Option<SetGuard>,
}

/// The condition of a DO UPDATE: a column of the stored (or the proposed) row is not NULL. A
/// conflicting row it does not hold for is left as it is, and not returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetGuard {
    pub column: String,
    /// Whether it tests the proposed row (`excluded.c`) rather than the stored one.
    pub proposed: bool,
}

impl DoUpdate {
    /// The clause after the VALUES list: ` ON CONFLICT (key) DO UPDATE SET ... [WHERE ...]`.
    fn sql(&self, table: &Table) -> String {
        let key: Vec<&str> = table.key.iter().map(|k| k.column.as_str()).collect();
        let mut sets: Vec<String> = self
            .take
            .iter()
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        if let Some(c) = &self.bump {
            sets.push(format!("{c} = {}.{c} + 1", table.name));
        }
        let guard = self
            .guard
            .as_ref()
            .map(|g| {
                let row = if g.proposed {
                    "excluded"
                } else {
                    table.name.as_str()
                };
                format!(" WHERE {row}.{} IS NOT NULL", g.column)
            })
            .unwrap_or_default();
        format!(
            " ON CONFLICT ({}) DO UPDATE SET {}{guard}",
            key.join(", "),
            sets.join(", ")
        )
    }

    /// Whether it names `column` (in its SET list or its condition).
    fn mentions(&self, column: &str) -> bool {
        self.take.iter().any(|c| c == column)
            || self.bump.as_deref() == Some(column)
            || self.guard.as_ref().is_some_and(|g| g.column == column)
    }
}

/// A RETURNING clause: `*`, or items over the written table's columns. Its rows are compared
/// with SQLite's as a multiset: neither engine defines their order.
#[derive(Debug, Clone, PartialEq)]
pub enum Returning {
    Star,
    Items(Vec<ReturnItem>),
}

/// One item of a RETURNING list: a column, or an expression over one that both engines
/// evaluate alike (no arithmetic: see `generate`).
#[derive(Debug, Clone, PartialEq)]
pub enum ReturnItem {
    Column(String),
    /// `c IS [NOT] NULL`.
    IsNull {
        column: String,
        negated: bool,
    },
    /// `coalesce(c, fallback)`, the fallback a value of the column's type.
    Coalesce {
        column: String,
        fallback: Value,
    },
}

impl ReturnItem {
    /// The column it reads.
    pub fn column(&self) -> &str {
        match self {
            ReturnItem::Column(column)
            | ReturnItem::IsNull { column, .. }
            | ReturnItem::Coalesce { column, .. } => column,
        }
    }

    fn sql(&self) -> String {
        match self {
            ReturnItem::Column(column) => column.clone(),
            ReturnItem::IsNull { column, negated } => {
                format!("{column} IS {}NULL", if *negated { "NOT " } else { "" })
            }
            ReturnItem::Coalesce { column, fallback } => {
                format!("coalesce({column}, {})", fallback.sql())
            }
        }
    }

    /// The kind of its value, its column being of type `ty`.
    fn kind(&self, ty: ColType) -> OutKind {
        match self {
            ReturnItem::IsNull { .. } => OutKind::Bool,
            ReturnItem::Column(_) | ReturnItem::Coalesce { .. } => kind_of(ty),
        }
    }
}

impl Returning {
    /// The clause, with its leading space.
    fn sql(&self) -> String {
        match self {
            Returning::Star => " RETURNING *".to_string(),
            Returning::Items(items) => {
                let items: Vec<String> = items.iter().map(ReturnItem::sql).collect();
                format!(" RETURNING {}", items.join(", "))
            }
        }
    }

    /// The kinds of the returned columns, for a `.slt` file.
    pub fn kinds(&self, table: &Table) -> Vec<OutKind> {
        match self {
            Returning::Star => table.columns.iter().map(|c| kind_of(c.ty)).collect(),
            Returning::Items(items) => items
                .iter()
                .map(|item| {
                    let ty = table.column(item.column()).map_or(ColType::Text, |c| c.ty);
                    item.kind(ty)
                })
                .collect(),
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

    /// The RETURNING clause, if the write has one.
    pub fn returning(&self) -> Option<&Returning> {
        match self {
            Write::Delete { returning, .. }
            | Write::Update { returning, .. }
            | Write::Insert { returning, .. } => returning.as_ref(),
        }
    }

    /// The RETURNING clause, to set or drop.
    pub fn returning_mut(&mut self) -> &mut Option<Returning> {
        match self {
            Write::Delete { returning, .. }
            | Write::Update { returning, .. }
            | Write::Insert { returning, .. } => returning,
        }
    }

    /// The kinds of the columns its RETURNING clause returns; None without one.
    pub fn returning_kinds(&self, tables: &[Table]) -> Option<Vec<OutKind>> {
        let table = tables.iter().find(|t| t.name == self.table())?;
        Some(self.returning()?.kinds(table))
    }

    pub fn sql(&self, tables: &[Table]) -> Vec<String> {
        let returning = self.returning().map(Returning::sql).unwrap_or_default();
        match self {
            Write::Delete { table, filter, .. } => {
                vec![format!(
                    "DELETE FROM {table} WHERE {}{returning}",
                    filter.sql(false)
                )]
            }
            Write::Update {
                table,
                sets,
                filter,
                ..
            } => {
                let sets: Vec<String> = sets
                    .iter()
                    .map(|(c, v)| format!("{c} = {}", v.sql()))
                    .collect();
                vec![format!(
                    "UPDATE {table} SET {} WHERE {}{returning}",
                    sets.join(", "),
                    filter.sql(false)
                )]
            }
            Write::Insert {
                table,
                mode,
                rows,
                omitted,
                ..
            } => match tables.iter().find(|t| &t.name == table) {
                Some(t) => {
                    let conflict = match mode {
                        InsertMode::Update(update) => update.sql(t),
                        _ => String::new(),
                    };
                    let tail = format!("{conflict}{returning}");
                    insert_statements(t, rows, omitted, mode.verb(), &tail)
                }
                None => Vec::new(),
            },
        }
    }

    /// Whether the write mentions `column` of `table` (in a SET, its condition, a DO UPDATE
    /// or its RETURNING list).
    pub fn mentions(&self, table: &str, column: &str) -> bool {
        if self.table() != table {
            return false;
        }
        if let Some(Returning::Items(items)) = self.returning()
            && items.iter().any(|item| item.column() == column)
        {
            return true;
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
            // Whole rows: removing a column removes it from them (and from `omitted`).
            Write::Insert { mode, .. } => {
                return matches!(mode, InsertMode::Update(update) if update.mentions(column));
            }
        }
        columns.contains(&(table.to_string(), column.to_string()))
    }
}

/// Rows for an INSERT (an upsert keeps only the first row of each key: see
/// [`distinct_keys`]): half of them reuse keys of `existing` rows.
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

/// `rows` without those whose key an earlier one proposes: an upsert's rows (see
/// `InsertMode::Update`).
pub fn distinct_keys(table: &Table, rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    let mut keys: HashSet<String> = HashSet::new();
    rows.into_iter()
        .filter(|row| keys.insert(key_text(table, row)))
        .collect()
}

/// Now and then, columns for an INSERT to leave out: mostly columns with a DEFAULT, sometimes
/// nullable ones without (NULL then). Never a key column, nor a NOT NULL one without a
/// DEFAULT (SQLite's OR IGNORE would skip such a row where rowdex fails the statement), nor
/// every column.
pub fn omitted_columns(rng: &mut Rng, table: &Table) -> Vec<String> {
    let mut omitted = Vec::new();
    if !rng.percent(35) {
        return omitted;
    }
    for column in &table.columns {
        let chance = if table.is_key(&column.name) {
            0
        } else if column.default.is_some() {
            70
        } else if table.nullable(&column.name) {
            25
        } else {
            0
        };
        if rng.percent(chance) {
            omitted.push(column.name.clone());
        }
    }
    if omitted.len() == table.columns.len() {
        omitted.pop();
    }
    omitted
}

/// Gives some non-key columns of `table` a DEFAULT, in two tables of five: a constant of the
/// column's type, which the INSERTs that leave the column out write.
pub fn random_defaults(rng: &mut Rng, table: &mut Table) {
    if !rng.percent(40) {
        return;
    }
    let key: Vec<String> = table.key.iter().map(|k| k.column.clone()).collect();
    for column in &mut table.columns {
        if !key.contains(&column.name) && rng.percent(50) {
            let default = random_default(rng, column);
            column.default = Some(default);
        }
    }
}

/// A DEFAULT for `column`: a value it may hold, but never a long string (which would only
/// bloat every CREATE TABLE of a finding).
fn random_default(rng: &mut Rng, column: &Column) -> Value {
    match column.ty {
        ColType::Text => Value::Text((*rng.pick(&TEXTS)).to_string()),
        _ => random_value(rng, column),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::differential::schema::{KeyPart, random_table};

    /// `t1 (a BIGINT, b BIGINT DEFAULT 7, c TEXT, PRIMARY KEY (a DESC))`.
    fn table() -> Table {
        let column = |name: &str, ty: ColType, default: Option<Value>| Column {
            name: name.into(),
            ty,
            spelling: if ty == ColType::Text {
                "TEXT"
            } else {
                "BIGINT"
            },
            not_null: false,
            domain: Domain::Small,
            null_percent: 15,
            default,
        };
        Table {
            name: "t1".into(),
            columns: vec![
                column("a", ColType::Int, None),
                column("b", ColType::Int, Some(Value::Int(7))),
                column("c", ColType::Text, None),
            ],
            key: vec![KeyPart {
                column: "a".into(),
                desc: true,
            }],
            salt: None,
            salt_on: Vec::new(),
            inline_key: false,
            uniques: Vec::new(),
            ttl: false,
            versions: false,
            families: Vec::new(),
        }
    }

    #[test]
    fn upserts_propose_each_key_once_and_render() {
        let table = table();
        let text = |s: &str| Value::Text(s.into());
        let rows = distinct_keys(
            &table,
            vec![
                vec![Value::Int(1), Value::Int(2), text("x")],
                vec![Value::Int(1), Value::Int(3), Value::Null],
                vec![Value::Int(4), Value::Int(5), Value::Null],
            ],
        );
        assert_eq!(rows.len(), 2);
        let write = Write::Insert {
            table: "t1".into(),
            mode: InsertMode::Update(DoUpdate {
                take: vec!["c".into()],
                bump: Some("b".into()),
                guard: Some(SetGuard {
                    column: "c".into(),
                    proposed: false,
                }),
            }),
            rows,
            omitted: vec!["b".into()],
            returning: Some(Returning::Items(vec![ReturnItem::Coalesce {
                column: "c".into(),
                fallback: text("z"),
            }])),
        };
        let tables = std::slice::from_ref(&table);
        assert_eq!(
            write.sql(tables),
            vec![
                "INSERT INTO t1 (a, c) VALUES (1, 'x'), (4, NULL) ON CONFLICT (a) DO UPDATE \
                 SET c = excluded.c, b = t1.b + 1 WHERE t1.c IS NOT NULL RETURNING coalesce(c, 'z')"
                    .to_string()
            ]
        );
        assert_eq!(write.returning_kinds(tables), Some(vec![OutKind::Text]));
        assert!(write.mentions("t1", "b") && write.mentions("t1", "c"));
        assert!(!write.mentions("t1", "a"));
    }

    #[test]
    fn deletes_and_updates_render_returning() {
        let table = table();
        let filter = Expr::IsNull {
            col: crate::differential::query::ColRef {
                table: "t1".into(),
                name: "c".into(),
                ty: ColType::Text,
            },
            negated: false,
        };
        let delete = Write::Delete {
            table: "t1".into(),
            filter: filter.clone(),
            returning: Some(Returning::Star),
        };
        let tables = std::slice::from_ref(&table);
        assert_eq!(
            delete.sql(tables),
            vec!["DELETE FROM t1 WHERE c IS NULL RETURNING *".to_string()]
        );
        assert_eq!(
            delete.returning_kinds(tables),
            Some(vec![OutKind::Int, OutKind::Int, OutKind::Text])
        );
        let update = Write::Update {
            table: "t1".into(),
            sets: vec![("b".into(), Value::Int(1))],
            filter,
            returning: Some(Returning::Items(vec![ReturnItem::IsNull {
                column: "b".into(),
                negated: true,
            }])),
        };
        assert_eq!(
            update.sql(tables),
            vec!["UPDATE t1 SET b = 1 WHERE c IS NULL RETURNING b IS NOT NULL".to_string()]
        );
    }

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
        // Cents: at most 1000 for sums, under 10^6 at all (a near miss may be a cent more).
        assert!(SMALL_DECIMALS.iter().all(|c| c.abs() <= 100_000));
        assert!(WIDE_DECIMALS.iter().all(|c| c.abs() < 100_000_000));
        let unwritable = |c: char| c == '\0' || (c.is_control() && c.is_ascii_whitespace());
        for t in TEXTS {
            assert!(!t.chars().any(unwritable) && t != "NULL" && t != "(empty)");
        }
        assert!(!ALPHABET.iter().any(|c| unwritable(*c)));
    }
}
