//! Turning result batches into the strings sqllogictest compares: each column's type letter and
//! the style its values are written in.

use rowdex::arrow::array::{Array, AsArray, RecordBatch};
use rowdex::arrow::datatypes::{
    DataType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    SchemaRef, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use rowdex::format::cell_text;
use sqllogictest::ColumnType;

/// A column type letter exactly as a test file wrote it (`I`, `R`, `T`, or anything else).
/// Keeping the letter itself, rather than mapping it to a fixed set, lets the SQLite format
/// choose the rendering per column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeLetter(pub char);

impl ColumnType for TypeLetter {
    fn from_char(value: char) -> Option<Self> {
        Some(TypeLetter(value))
    }

    fn to_char(&self) -> char {
        self.0
    }
}

/// How result values become text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueStyle {
    /// The engine's own text for each value (`NULL` and `(empty)` aside).
    Plain,
    /// SQLite's runner: each value converted to its column's declared type letter first.
    Sqlite,
}

/// The column types and row texts of a result. A column's type is the letter the test declared
/// for it when there is one, else one derived from its Arrow type.
pub(crate) fn render(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    style: ValueStyle,
    expected: Option<&[TypeLetter]>,
) -> (Vec<TypeLetter>, Vec<Vec<String>>) {
    let types: Vec<TypeLetter> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            expected
                .and_then(|letters| letters.get(i).copied())
                .unwrap_or_else(|| natural_letter(field.data_type()))
        })
        .collect();
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let texts = batch
                .columns()
                .iter()
                .zip(&types)
                .map(|(array, letter)| match style {
                    ValueStyle::Plain => plain_text(array.as_ref(), row),
                    ValueStyle::Sqlite => sqlite_text(array.as_ref(), row, letter.0),
                })
                .collect();
            rows.push(texts);
        }
    }
    (types, rows)
}

/// The type letter SQLite's convention gives a column of this Arrow type.
fn natural_letter(data_type: &DataType) -> TypeLetter {
    TypeLetter(match data_type {
        t if t.is_integer() => 'I',
        DataType::Boolean => 'I',
        t if t.is_floating() => 'R',
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => 'R',
        _ => 'T',
    })
}

/// The engine's text for a value, with sqllogictest's spellings of NULL and the empty string.
fn plain_text(array: &dyn Array, row: usize) -> String {
    match cell_text(array, row) {
        None => "NULL".to_string(),
        Some(text) if text.is_empty() => "(empty)".to_string(),
        Some(text) => text,
    }
}

/// A value as SQLite's runner prints it for a column declared `letter`.
fn sqlite_text(array: &dyn Array, row: usize, letter: char) -> String {
    let Some(value) = Value::of(array, row) else {
        return "NULL".to_string();
    };
    match letter {
        'I' => value.integer().to_string(),
        'R' => format!("{:.3}", value.real()),
        _ => printable(&value.text()),
    }
}

/// A non-NULL value seen the way SQLite stores it: integer, real or text.
enum Value {
    Integer(i64),
    Real(f64),
    Text(String),
}

impl Value {
    fn of(array: &dyn Array, row: usize) -> Option<Value> {
        if array.is_null(row) {
            return None;
        }
        let int = |v: Option<i64>| v.map(Value::Integer);
        let real = |v: Option<f64>| v.map(Value::Real);
        let value = match array.data_type() {
            // SQLite has no booleans: a comparison is the integer 1 or 0.
            DataType::Boolean => int(array.as_boolean_opt().map(|a| i64::from(a.value(row)))),
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32 => int(int_cell(array, row)),
            DataType::UInt64 => int(array
                .as_primitive_opt::<UInt64Type>()
                .map(|a| i64::try_from(a.value(row)).unwrap_or(i64::MAX))),
            DataType::Float16 => real(
                array
                    .as_primitive_opt::<Float16Type>()
                    .map(|a| a.value(row).to_f64()),
            ),
            DataType::Float32 => real(
                array
                    .as_primitive_opt::<Float32Type>()
                    .map(|a| f64::from(a.value(row))),
            ),
            DataType::Float64 => real(
                array
                    .as_primitive_opt::<Float64Type>()
                    .map(|a| a.value(row)),
            ),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                text_cell(array, row).map(Value::Text)
            }
            DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..) => {
                let text = cell_text(array, row)?;
                Some(match text.parse::<f64>() {
                    Ok(v) => Value::Real(v),
                    Err(_) => Value::Text(text),
                })
            }
            _ => None,
        };
        // Anything else (dates, binary, ...) is compared as the engine's text for it.
        value.or_else(|| cell_text(array, row).map(Value::Text))
    }

    /// `sqlite3_column_int64`: a real is truncated toward zero (saturating), a text yields its
    /// leading integer or 0.
    fn integer(&self) -> i64 {
        match self {
            Value::Integer(v) => *v,
            // `as` truncates toward zero and saturates, NaN becoming 0, as SQLite does.
            Value::Real(v) => *v as i64,
            Value::Text(text) => leading_integer(text),
        }
    }

    /// `sqlite3_column_double`: a text yields its leading number or 0.
    fn real(&self) -> f64 {
        match self {
            Value::Integer(v) => *v as f64,
            Value::Real(v) => *v,
            Value::Text(text) => leading_real(text),
        }
    }

    /// `sqlite3_column_text`: a real is printed as `%!.15g`.
    fn text(&self) -> String {
        match self {
            Value::Integer(v) => v.to_string(),
            Value::Real(v) => real_text(*v),
            Value::Text(text) => text.clone(),
        }
    }
}

/// SQLite's runner shows an empty text as `(empty)` and every byte outside printable ASCII
/// as `@`, so results with odd characters still fit one line.
fn printable(text: &str) -> String {
    if text.is_empty() {
        return "(empty)".to_string();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (' '..='~').contains(&c) {
            out.push(c);
        } else {
            // Per byte, as the C runner walks bytes.
            out.extend(std::iter::repeat_n('@', c.len_utf8()));
        }
    }
    out
}

/// The sign and the ASCII text after leading whitespace and an optional sign.
fn split_sign(text: &str) -> (bool, &str) {
    let text = text.trim_start();
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}

fn leading_integer(text: &str) -> i64 {
    let (negative, rest) = split_sign(text);
    rest.bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |value, digit| {
            let digit = i64::from(digit - b'0');
            // Accumulating with the final sign saturates at the right end of the range.
            if negative {
                value.saturating_mul(10).saturating_sub(digit)
            } else {
                value.saturating_mul(10).saturating_add(digit)
            }
        })
}

fn leading_real(text: &str) -> f64 {
    let (negative, rest) = split_sign(text);
    let bytes = rest.as_bytes();
    let digits_from = |start: usize| {
        start
            + bytes[start.min(bytes.len())..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
    };
    let mut end = digits_from(0);
    let mut has_digits = end > 0;
    if bytes.get(end) == Some(&b'.') {
        let after = digits_from(end + 1);
        has_digits |= after > end + 1;
        end = after;
    }
    if !has_digits {
        return 0.0;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exponent = end + 1;
        if matches!(bytes.get(exponent), Some(b'+' | b'-')) {
            exponent += 1;
        }
        let after = digits_from(exponent);
        if after > exponent {
            end = after;
        }
    }
    let magnitude = rest[..end].parse::<f64>().unwrap_or(0.0);
    if negative { -magnitude } else { magnitude }
}

/// C's `%!.15g` as SQLite uses it for a real's text: 15 significant digits, trailing zeros
/// dropped but always a decimal point, exponent form outside 1e-4 .. 1e15.
fn real_text(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Inf" } else { "-Inf" }.to_string();
    }
    if value == 0.0 {
        return "0.0".to_string();
    }
    let scientific = format!("{value:.14e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..15).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{}e{sign}{:02}",
            with_point(mantissa),
            exponent.unsigned_abs()
        );
    }
    // The exponent above is of the rounded value, so this precision keeps 15 digits.
    let decimals = usize::try_from(14 - exponent).unwrap_or(0);
    with_point(&format!("{value:.decimals$}"))
}

/// Drops trailing fractional zeros, keeping at least one digit after the point.
fn with_point(number: &str) -> String {
    if !number.contains('.') {
        return format!("{number}.0");
    }
    let trimmed = number.trim_end_matches('0');
    if trimmed.ends_with('.') {
        format!("{trimmed}0")
    } else {
        trimmed.to_string()
    }
}

/// A cell of a signed integer array, or of an unsigned one narrower than 64 bits; None for any
/// other type.
pub(crate) fn int_cell(array: &dyn Array, row: usize) -> Option<i64> {
    match array.data_type() {
        DataType::Int8 => array
            .as_primitive_opt::<Int8Type>()
            .map(|a| a.value(row).into()),
        DataType::Int16 => array
            .as_primitive_opt::<Int16Type>()
            .map(|a| a.value(row).into()),
        DataType::Int32 => array
            .as_primitive_opt::<Int32Type>()
            .map(|a| a.value(row).into()),
        DataType::Int64 => array.as_primitive_opt::<Int64Type>().map(|a| a.value(row)),
        DataType::UInt8 => array
            .as_primitive_opt::<UInt8Type>()
            .map(|a| a.value(row).into()),
        DataType::UInt16 => array
            .as_primitive_opt::<UInt16Type>()
            .map(|a| a.value(row).into()),
        DataType::UInt32 => array
            .as_primitive_opt::<UInt32Type>()
            .map(|a| a.value(row).into()),
        _ => None,
    }
}

/// A cell of any Arrow string array; None for any other type.
pub(crate) fn text_cell(array: &dyn Array, row: usize) -> Option<String> {
    match array.data_type() {
        DataType::Utf8 => array
            .as_string_opt::<i32>()
            .map(|a| a.value(row).to_string()),
        DataType::LargeUtf8 => array
            .as_string_opt::<i64>()
            .map(|a| a.value(row).to_string()),
        DataType::Utf8View => array.as_string_view_opt().map(|a| a.value(row).to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reals_print_like_sqlite() {
        assert_eq!(real_text(1.0), "1.0");
        assert_eq!(real_text(-2.5), "-2.5");
        assert_eq!(real_text(1.0 / 3.0), "0.333333333333333");
        assert_eq!(real_text(1e20), "1.0e+20");
        assert_eq!(real_text(1.5e-7), "1.5e-07");
        assert_eq!(real_text(123456.0), "123456.0");
        assert_eq!(real_text(0.0001), "0.0001");
    }

    #[test]
    fn text_converts_by_leading_number() {
        assert_eq!(leading_integer("  42abc"), 42);
        assert_eq!(leading_integer("-7.9"), -7);
        assert_eq!(leading_integer("abc"), 0);
        assert_eq!(leading_integer("99999999999999999999"), i64::MAX);
        assert_eq!(leading_real("2.5x"), 2.5);
        assert_eq!(leading_real("-1e2z"), -100.0);
        assert_eq!(leading_real("3e"), 3.0);
        assert_eq!(leading_real(".5"), 0.5);
        assert_eq!(leading_real("."), 0.0);
    }

    #[test]
    fn odd_characters_become_at_signs() {
        assert_eq!(printable(""), "(empty)");
        assert_eq!(printable("a\tb"), "a@b");
        assert_eq!(printable("é"), "@@");
    }

    #[test]
    fn values_convert_by_letter() {
        assert_eq!(Value::Real(-3.7).integer(), -3);
        assert_eq!(format!("{:.3}", Value::Integer(2).real()), "2.000");
        assert_eq!(Value::Text("12x".into()).integer(), 12);
        assert_eq!(Value::Real(2.0).text(), "2.0");
    }
}
