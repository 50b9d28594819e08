//! Values as both engines see them: SQL literals for the generated statements, result cells
//! read from Arrow (rowdex) and from SQLite normalized to one form, their comparison, and
//! their text in a `.slt` file.
//!
//! Comparison is exact but for numbers: reals within a relative [`REAL_TOLERANCE`], and a
//! DECIMAL (rowdex's exact answer, say `12.50`) against SQLite's integer or double (`12.5`,
//! `12`, or a sum's `12.499999999999998`) as numbers within an absolute
//! [`DECIMAL_TOLERANCE`], far below the cent by which two generated DECIMAL answers differ.

use std::cmp::Ordering;
use std::fmt;

use rowdex::arrow::array::{Array, AsArray, Float64Array};
use rowdex::arrow::datatypes::{
    DataType, Decimal128Type, Float32Type, Float64Type, TimeUnit, TimestampMicrosecondType,
    UInt64Type,
};
use rowdex::format::cell_text;
use rowdex::time_zone::postgres_timestamp;

/// Relative difference under which two reals are the same answer. Generated sums and averages
/// are exact by construction (see `data`), so this only absorbs a last-bit difference in how
/// either engine rounds a final division.
const REAL_TOLERANCE: f64 = 1e-12;

/// Absolute difference under which a DECIMAL and another number are the same answer. rowdex
/// computes DECIMALs exactly, SQLite in doubles (a NUMERIC column holds 12.5 as a real). The
/// generated DECIMALs have at most two digits after the point and stay under 10^6, and sums
/// and averages are taken over values under 10^3 only (see `data`), so SQLite's binary
/// errors stay near 10^-9; DataFusion's decimal average is cut (toward zero) after six
/// digits, an error under 10^-6. Two different values, or sums, of the generated DECIMALs
/// differ by 0.01 at least, so a wrong row, sign or cent still shows. Absolute, not relative:
/// a relative 10^-12 of a large sum could reach a cent.
const DECIMAL_TOLERANCE: f64 = 2e-6;

/// One value: a literal the generator writes, or a result cell. Results normalize booleans to
/// integers (SQLite has no booleans), so `Bool` appears in results only before [`normalized`].
///
/// [`normalized`]: Value::normalized
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    /// The exact number `units / 10^scale`: a generated value of a DECIMAL column (made by
    /// [`Value::decimal`], so without trailing zeros), or a DECIMAL cell of a rowdex result,
    /// which keeps its type's scale (`12.50` is 1250 at scale 2). SQLite never returns one.
    Decimal {
        units: i128,
        scale: u8,
    },
}

impl Value {
    /// The DECIMAL `units / 10^scale` with the zeros at the end of its fraction dropped (1250
    /// at scale 2 is `12.5`, 700 is `7`): one `Value` and one literal per number, so that
    /// equal numbers are equal keys and UNIQUE values (`data::key_text`, `data::unique_free`).
    pub fn decimal(mut units: i128, mut scale: u8) -> Value {
        while scale > 0 && units % 10 == 0 {
            units /= 10;
            scale -= 1;
        }
        Value::Decimal { units, scale }
    }

    /// The value the way SQLite would hand it back: booleans as 0 and 1.
    pub fn normalized(self) -> Value {
        match self {
            Value::Bool(b) => Value::Int(i64::from(b)),
            other => other,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Whether two result cells are the same answer.
    pub fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Real(a), Value::Real(b)) => {
                a == b || (a - b).abs() <= REAL_TOLERANCE * a.abs().max(b.abs())
            }
            (Value::Text(a), Value::Text(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            // rowdex's DECIMAL against SQLite's integer or double (or another DECIMAL).
            (Value::Decimal { .. }, _) | (_, Value::Decimal { .. }) => {
                match (self.number(), other.number()) {
                    (Some(a), Some(b)) => (a - b).abs() <= DECIMAL_TOLERANCE,
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// The value as a number, if it is one (booleans are not: results hold them as integers).
    fn number(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::Real(v) => Some(*v),
            Value::Decimal { units, scale } => Some(decimal_f64(*units, *scale)),
            Value::Null | Value::Text(_) | Value::Bool(_) => None,
        }
    }

    /// A total order for sorting unordered results before comparing them: NULL, then numbers,
    /// then text (SQLite's order of storage classes).
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        fn class(v: &Value) -> u8 {
            match v {
                Value::Null => 0,
                Value::Bool(_) | Value::Int(_) | Value::Real(_) | Value::Decimal { .. } => 1,
                Value::Text(_) => 2,
            }
        }
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (a, b) if class(a) == 1 && class(b) == 1 => a.as_f64().total_cmp(&b.as_f64()),
            (a, b) => class(a).cmp(&class(b)),
        }
    }

    fn as_f64(&self) -> f64 {
        match self {
            Value::Int(v) => *v as f64,
            Value::Real(v) => *v,
            Value::Bool(b) => f64::from(u8::from(*b)),
            Value::Decimal { units, scale } => decimal_f64(*units, *scale),
            Value::Null | Value::Text(_) => 0.0,
        }
    }

    /// The SQL literal both engines read as this value.
    pub fn sql(&self) -> String {
        match self {
            Value::Null => "NULL".to_string(),
            // i64::MIN is spelled as a negated literal one past i64::MAX; both engines fold it
            // back into an integer.
            Value::Int(v) => v.to_string(),
            Value::Real(v) => real_literal(*v),
            Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Bool(true) => "TRUE".to_string(),
            Value::Bool(false) => "FALSE".to_string(),
            // Its digits exactly (`12.5`, `-0.05`, `7`): rowdex reads a literal bound for a
            // DECIMAL column from its text, SQLite as the double (or integer) it spells.
            Value::Decimal { units, scale } => decimal_text(*units, *scale),
        }
    }

    /// The value as rowdex's `.slt` runner prints it, for a column whose generated type is
    /// `kind`: booleans by name, reals in Arrow's formatting, decimals with their type's
    /// scale (SQLite's `12.5` or `12` as `12.50`), the empty string as `(empty)`.
    pub fn slt_text(&self, kind: OutKind) -> String {
        match (self, kind) {
            (Value::Null, _) => "NULL".to_string(),
            (Value::Int(v), OutKind::Bool) => (*v != 0).to_string(),
            (Value::Bool(b), _) => b.to_string(),
            (Value::Int(v), OutKind::Decimal(scale)) => decimal_text(
                i128::from(*v).saturating_mul(10i128.saturating_pow(u32::from(scale))),
                scale,
            ),
            (Value::Real(v), OutKind::Decimal(scale)) => decimal_text(real_units(*v, scale), scale),
            (Value::Int(v), OutKind::Real) => arrow_real_text(*v as f64),
            (Value::Int(v), _) => v.to_string(),
            (Value::Real(v), _) => arrow_real_text(*v),
            (Value::Decimal { units, scale }, _) => decimal_text(*units, *scale),
            (Value::Text(s), _) if s.is_empty() => "(empty)".to_string(),
            (Value::Text(s), _) => s.clone(),
        }
    }

    /// A cell of an Arrow array, as rowdex returns it.
    pub fn from_arrow(array: &dyn Array, row: usize) -> Value {
        if array.is_null(row) {
            return Value::Null;
        }
        let int = |v: Option<i64>| v.map(Value::Int);
        let value = match array.data_type() {
            DataType::Boolean => array.as_boolean_opt().map(|a| Value::Bool(a.value(row))),
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32 => int(crate::values::int_cell(array, row)),
            // A count is never near 2^63; a value that is shows as its text and mismatches.
            DataType::UInt64 => array
                .as_primitive_opt::<UInt64Type>()
                .and_then(|a| i64::try_from(a.value(row)).ok())
                .map(Value::Int),
            DataType::Float32 => array
                .as_primitive_opt::<Float32Type>()
                .map(|a| Value::Real(f64::from(a.value(row)))),
            DataType::Float64 => array
                .as_primitive_opt::<Float64Type>()
                .map(|a| Value::Real(a.value(row))),
            // A DECIMAL column, or a sum, average, minimum or maximum of one.
            DataType::Decimal128(_, scale) => array
                .as_primitive_opt::<Decimal128Type>()
                .zip(u8::try_from(*scale).ok())
                .map(|(a, scale)| Value::Decimal {
                    units: a.value(row),
                    scale,
                }),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                crate::values::text_cell(array, row).map(Value::Text)
            }
            // A TIMESTAMPTZ, in the tester's session zone (UTC), as the generator writes it.
            DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => array
                .as_primitive_opt::<TimestampMicrosecondType>()
                .map(|a| Value::Text(format!("{}+00", postgres_timestamp(a.value(row))))),
            _ => None,
        };
        // Any other type (a date, or a decimal of a negative scale, say) is not one the
        // generator asks for: its text makes the difference visible in the report instead of
        // being converted into agreement.
        value.unwrap_or_else(|| {
            Value::Text(format!(
                "<{} {}>",
                array.data_type(),
                cell_text(array, row).unwrap_or_default()
            ))
        })
    }

    /// A cell of a SQLite result.
    pub fn from_sqlite(value: rusqlite::types::ValueRef<'_>) -> Value {
        use rusqlite::types::ValueRef;
        match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(v) => Value::Int(v),
            ValueRef::Real(v) => Value::Real(v),
            ValueRef::Text(bytes) => Value::Text(String::from_utf8_lossy(bytes).into_owned()),
            // The generator never stores blobs; show one rather than hide it.
            ValueRef::Blob(bytes) => Value::Text(format!("<blob of {} bytes>", bytes.len())),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql())
    }
}

/// The type of a result column as the generator knows it, which decides its `.slt` text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutKind {
    Int,
    Real,
    Text,
    Bool,
    /// A DECIMAL of this scale, which rowdex prints with exactly that many digits after the
    /// point (a column's 2, an average's 6).
    Decimal(u8),
}

impl OutKind {
    /// The sqllogictest column letter.
    pub fn letter(self) -> char {
        match self {
            OutKind::Int | OutKind::Bool => 'I',
            OutKind::Real | OutKind::Decimal(_) => 'R',
            OutKind::Text => 'T',
        }
    }
}

/// A real literal that both SQLite and DataFusion parse back to exactly `v`: Rust's shortest
/// round-trip text, which always has a `.` or an exponent, so neither engine reads an integer.
fn real_literal(v: f64) -> String {
    let text = format!("{v:?}");
    if text.contains(['.', 'e', 'E']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// A real as rowdex prints it (Arrow's formatter), so a `.slt` expectation written from
/// SQLite's value matches rowdex's text for the same value.
fn arrow_real_text(v: f64) -> String {
    let array = Float64Array::from(vec![v]);
    cell_text(&array, 0).unwrap_or_default()
}

/// The DECIMAL `units / 10^scale` as the nearest double (exactly the double its text reads as,
/// for the generated magnitudes: both are integers below 2^53 divided once).
fn decimal_f64(units: i128, scale: u8) -> f64 {
    units as f64 / 10f64.powi(i32::from(scale))
}

/// A DECIMAL's text as rowdex (Arrow) prints it and as a literal: every digit of the scale
/// (`-5` at scale 2 is `-0.05`, 1250 is `12.50`, 7 at scale 0 is `7`).
fn decimal_text(units: i128, scale: u8) -> String {
    let digits = units.unsigned_abs().to_string();
    let sign = if units < 0 { "-" } else { "" };
    let scale = usize::from(scale);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

/// SQLite's double for a DECIMAL answer as units of `scale`, as rowdex computes that answer
/// exactly: rounded to nine digits after the point first, which removes the binary error of
/// SQLite's arithmetic (near 10^-9 at most for the generated magnitudes), then cut to `scale`
/// digits toward zero, as DataFusion cuts a decimal average (a column's value, a sum, a
/// minimum or maximum has two digits, and comes out of the first step exact).
fn real_units(v: f64, scale: u8) -> i128 {
    const PLACES: u8 = 9;
    // `as` saturates, and the generated magnitudes are far from it.
    let nines = (v * 1e9).round() as i128;
    if scale <= PLACES {
        nines / 10i128.pow(u32::from(PLACES - scale))
    } else {
        nines.saturating_mul(10i128.saturating_pow(u32::from(scale - PLACES)))
    }
}

/// Whether two rows are the same answer, value by value.
fn same_row(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
}

/// Compares two results: in order when the query fixes the order, else as multisets.
pub fn same_rows(expected: &[Vec<Value>], got: &[Vec<Value>], ordered: bool) -> bool {
    if expected.len() != got.len() {
        return false;
    }
    if ordered {
        return expected.iter().zip(got).all(|(a, b)| same_row(a, b));
    }
    let mut a: Vec<&Vec<Value>> = expected.iter().collect();
    let mut b: Vec<&Vec<Value>> = got.iter().collect();
    a.sort_by(|x, y| row_cmp(x, y));
    b.sort_by(|x, y| row_cmp(x, y));
    if a.iter().zip(&b).all(|(x, y)| same_row(x, y)) {
        return true;
    }
    // Numbers that are the same DECIMAL answer may sort apart: SQLite's sums of two groups
    // may be 0.30000000000000004 and 0.3 where rowdex has 0.30 twice, and the rows then pair
    // up wrongly once sorted. Such answers are matched row by row instead.
    let decimal = |rows: &[Vec<Value>]| {
        rows.iter()
            .flatten()
            .any(|v| matches!(v, Value::Decimal { .. }))
    };
    (decimal(expected) || decimal(got)) && matched_near(&a, &b)
}

/// Whether two answers sorted alike are the same multiset: each row of `got` takes the
/// nearest unused row of `expected`, by sorted position, that is the same answer. Rows that
/// are the same answer sort at most a few places apart (where numbers a rounding error apart
/// meet ties), so this costs little more than a pass over the rows, even for two answers of
/// thousands of rows that differ (a row missing moves the rest by one place).
fn matched_near(expected: &[&Vec<Value>], got: &[&Vec<Value>]) -> bool {
    let mut used = vec![false; expected.len()];
    for (i, row) in got.iter().enumerate() {
        let found = (0..expected.len())
            .flat_map(|d| [i.checked_sub(d), Some(i + d)])
            .flatten()
            .find(|&j| j < expected.len() && !used[j] && same_row(expected[j], row));
        match found {
            Some(j) => used[j] = true,
            None => return false,
        }
    }
    true
}

/// Whether every row of `part` is in `whole`, as many times as it occurs in `part` at most
/// (each row of `whole` matches one of `part`). With as many rows on each side, whether the
/// two are the same multiset.
pub fn sub_multiset(part: &[Vec<Value>], whole: &[Vec<Value>]) -> bool {
    let mut unused: Vec<&Vec<Value>> = whole.iter().collect();
    part.iter().all(|row| {
        let found = unused.iter().position(|candidate| same_row(candidate, row));
        found.map(|i| unused.swap_remove(i)).is_some()
    })
}

pub fn row_cmp(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = x.total_cmp(y);
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// The first row one answer has and the other lacks, each way, for a one-line report.
pub fn first_difference(expected: &[Vec<Value>], got: &[Vec<Value>]) -> String {
    let show = |row: Option<&Vec<Value>>| match row {
        Some(row) => row.iter().map(Value::sql).collect::<Vec<_>>().join(", "),
        None => "nothing".to_string(),
    };
    let mut e: Vec<&Vec<Value>> = expected.iter().collect();
    let mut g: Vec<&Vec<Value>> = got.iter().collect();
    e.sort_by(|a, b| row_cmp(a, b));
    g.sort_by(|a, b| row_cmp(a, b));
    // The same answer as `same` sees it (SQLite's 12.5 is rowdex's DECIMAL 12.50).
    let lacks = |rows: &[&Vec<Value>], row: &Vec<Value>| !rows.iter().any(|r| same_row(r, row));
    let missing = e.iter().find(|row| lacks(&g, row));
    let extra = g.iter().find(|row| lacks(&e, row));
    match (missing, extra) {
        (None, None) => "same rows, other order".to_string(),
        (m, x) => format!(
            "missing [{}], extra [{}]",
            show(m.copied()),
            show(x.copied())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_round_trip_their_type() {
        assert_eq!(Value::Real(2.0).sql(), "2.0");
        assert_eq!(Value::Real(1e300).sql(), "1e300");
        assert_eq!(Value::Real(-0.5).sql(), "-0.5");
        assert_eq!(Value::Text("o'k".into()).sql(), "'o''k'");
        assert_eq!(Value::Int(i64::MIN).sql(), "-9223372036854775808");
        assert_eq!(Value::Bool(true).sql(), "TRUE");
    }

    #[test]
    fn slt_text_follows_rowdex_formatting() {
        assert_eq!(Value::Int(1).slt_text(OutKind::Bool), "true");
        assert_eq!(Value::Real(0.5).slt_text(OutKind::Real), "0.5");
        assert_eq!(Value::Real(2.0).slt_text(OutKind::Real), "2.0");
        assert_eq!(
            Value::Text(String::new()).slt_text(OutKind::Text),
            "(empty)"
        );
        assert_eq!(Value::Null.slt_text(OutKind::Int), "NULL");
    }

    #[test]
    fn comparison_is_strict_on_types_and_tolerant_on_reals() {
        assert!(Value::Real(1.0).same(&Value::Real(1.0 + 1e-15)));
        assert!(!Value::Real(1.0).same(&Value::Real(1.0001)));
        assert!(!Value::Int(1).same(&Value::Real(1.0)));
        let a = vec![vec![Value::Int(2)], vec![Value::Null]];
        let b = vec![vec![Value::Null], vec![Value::Int(2)]];
        assert!(same_rows(&a, &b, false));
        assert!(!same_rows(&a, &b, true));
    }

    #[test]
    fn decimal_literals_have_exactly_their_digits() {
        assert_eq!(Value::decimal(1250, 2).sql(), "12.5");
        assert_eq!(Value::decimal(700, 2).sql(), "7");
        assert_eq!(Value::decimal(-5, 2).sql(), "-0.05");
        assert_eq!(Value::decimal(0, 2).sql(), "0");
        assert_eq!(Value::decimal(1250, 2), Value::decimal(125, 1));
        // A result cell keeps its type's scale, as rowdex prints it.
        let cell = Value::Decimal {
            units: 1250,
            scale: 2,
        };
        assert_eq!(cell.sql(), "12.50");
        assert_eq!(cell.slt_text(OutKind::Decimal(2)), "12.50");
    }

    #[test]
    fn slt_text_writes_sqlite_numbers_with_the_decimal_scale() {
        assert_eq!(Value::Int(7).slt_text(OutKind::Decimal(2)), "7.00");
        assert_eq!(Value::Int(-3).slt_text(OutKind::Decimal(2)), "-3.00");
        assert_eq!(Value::Real(12.5).slt_text(OutKind::Decimal(2)), "12.50");
        assert_eq!(Value::Real(-0.05).slt_text(OutKind::Decimal(2)), "-0.05");
        assert_eq!(Value::Real(0.1 + 0.2).slt_text(OutKind::Decimal(2)), "0.30");
        // Averages: DataFusion cuts after six digits, toward zero.
        assert_eq!(
            Value::Real(2.0 / 3.0).slt_text(OutKind::Decimal(6)),
            "0.666666"
        );
        assert_eq!(
            Value::Real(-2.0 / 3.0).slt_text(OutKind::Decimal(6)),
            "-0.666666"
        );
        assert_eq!(Value::Real(0.015).slt_text(OutKind::Decimal(6)), "0.015000");
        assert_eq!(OutKind::Decimal(2).letter(), 'R');
    }

    #[test]
    fn decimals_compare_as_numbers_and_still_differ() {
        let cents = |units: i128| Value::Decimal { units, scale: 2 };
        assert!(Value::Int(12).same(&cents(1200)));
        assert!(Value::Real(12.5).same(&cents(1250)));
        assert!(cents(1250).same(&Value::Real(12.5)));
        assert!(Value::Real(0.1 + 0.2).same(&cents(30)));
        let average = Value::Decimal {
            units: 666_666,
            scale: 6,
        };
        assert!(Value::Real(2.0 / 3.0).same(&average));
        assert!(!Value::Real(12.5).same(&cents(1251)));
        assert!(!Value::Real(-12.5).same(&cents(1250)));
        assert!(!Value::Int(12).same(&cents(1201)));
        assert!(!Value::Text("12.50".into()).same(&cents(1250)));
        assert!(!Value::Null.same(&cents(0)));
        assert!(!cents(0).same(&Value::Null));
        // Two groups whose sums are equal in rowdex and a rounding error apart in SQLite sort
        // apart; the rows still pair up.
        let sqlite = vec![
            vec![Value::Real(0.1 + 0.2), Value::Int(1)],
            vec![Value::Real(0.3), Value::Int(2)],
        ];
        let rowdex = vec![
            vec![cents(30), Value::Int(2)],
            vec![cents(30), Value::Int(1)],
        ];
        assert!(same_rows(&sqlite, &rowdex, false));
        let wrong = vec![
            vec![cents(30), Value::Int(2)],
            vec![cents(31), Value::Int(1)],
        ];
        assert!(!same_rows(&sqlite, &wrong, false));
        assert!(first_difference(&sqlite, &wrong).starts_with("missing [0.30000000000000004, 1]"));
    }
}
