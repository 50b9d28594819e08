//! Values as both engines see them: SQL literals for the generated statements, result cells
//! read from Arrow (rowdex) and from SQLite normalized to one form, their comparison, and
//! their text in a `.slt` file.

use std::cmp::Ordering;
use std::fmt;

use rowdex::arrow::array::{Array, AsArray, Float64Array};
use rowdex::arrow::datatypes::{DataType, Float32Type, Float64Type, UInt64Type};
use rowdex::format::cell_text;

/// Relative difference under which two reals are the same answer. Generated sums and averages
/// are exact by construction (see `data`), so this only absorbs a last-bit difference in how
/// either engine rounds a final division.
const REAL_TOLERANCE: f64 = 1e-12;

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
}

impl Value {
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
            _ => false,
        }
    }

    /// A total order for sorting unordered results before comparing them: NULL, then numbers,
    /// then text (SQLite's order of storage classes).
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        fn class(v: &Value) -> u8 {
            match v {
                Value::Null => 0,
                Value::Bool(_) | Value::Int(_) | Value::Real(_) => 1,
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
        }
    }

    /// The value as rowdex's `.slt` runner prints it, for a column whose generated type is
    /// `kind`: booleans by name, reals in Arrow's formatting, the empty string as `(empty)`.
    pub fn slt_text(&self, kind: OutKind) -> String {
        match (self, kind) {
            (Value::Null, _) => "NULL".to_string(),
            (Value::Int(v), OutKind::Bool) => (*v != 0).to_string(),
            (Value::Bool(b), _) => b.to_string(),
            (Value::Int(v), OutKind::Real) => arrow_real_text(*v as f64),
            (Value::Int(v), _) => v.to_string(),
            (Value::Real(v), _) => arrow_real_text(*v),
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
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                crate::values::text_cell(array, row).map(Value::Text)
            }
            _ => None,
        };
        // Any other type (a decimal, say) is not one the generator asks for: its text makes
        // the difference visible in the report instead of being converted into agreement.
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
}

impl OutKind {
    /// The sqllogictest column letter.
    pub fn letter(self) -> char {
        match self {
            OutKind::Int | OutKind::Bool => 'I',
            OutKind::Real => 'R',
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

/// Compares two results: in order when the query fixes the order, else as multisets.
pub fn same_rows(expected: &[Vec<Value>], got: &[Vec<Value>], ordered: bool) -> bool {
    if expected.len() != got.len() {
        return false;
    }
    let same_row = |a: &Vec<Value>, b: &Vec<Value>| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
    };
    if ordered {
        return expected.iter().zip(got).all(|(a, b)| same_row(a, b));
    }
    let mut a: Vec<&Vec<Value>> = expected.iter().collect();
    let mut b: Vec<&Vec<Value>> = got.iter().collect();
    a.sort_by(|x, y| row_cmp(x, y));
    b.sort_by(|x, y| row_cmp(x, y));
    a.iter().zip(&b).all(|(x, y)| same_row(x, y))
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
}
