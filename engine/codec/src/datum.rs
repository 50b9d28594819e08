//! The in-memory SQL value and the total order that keys preserve.

use std::cmp::Ordering;
use std::fmt;

use crate::temporal::{format_date, format_timestamp};
use crate::uuid::format_uuid;

/// One SQL value.
///
/// Integer and floating types of every width share one 64-bit variant; the
/// column's declared type is enforced above this crate.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    Boolean(bool),
    /// SMALLINT, INT, INTEGER and BIGINT.
    Int(i64),
    /// REAL, FLOAT and DOUBLE.
    Float(f64),
    /// Unscaled value; the scale belongs to the column, not to the datum.
    Decimal(i128),
    Text(String),
    Bytes(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01T00:00:00, without a time zone.
    Timestamp(i64),
    /// A UUID's 16 bytes, in the order its text spells them.
    Uuid([u8; 16]),
}

/// Which way a key column sorts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOrder {
    Asc,
    Desc,
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// Position of the variant in the cross-type order; mirrors the key tags.
    fn rank(&self) -> u8 {
        match self {
            Datum::Null => 0,
            Datum::Boolean(_) => 1,
            Datum::Int(_) => 2,
            Datum::Float(_) => 3,
            Datum::Decimal(_) => 4,
            Datum::Text(_) => 5,
            Datum::Bytes(_) => 6,
            Datum::Date(_) => 7,
            Datum::Timestamp(_) => 8,
            Datum::Uuid(_) => 9,
        }
    }

    /// The total order that encoded keys reproduce byte-wise.
    ///
    /// NULL is lowest; within a type values use their natural order, with
    /// -0.0 equal to 0.0 and every NaN equal to each other and above +inf.
    /// Mixed non-null types fall back to the variant rank
    /// (Boolean < Int < Float < Decimal < Text < Bytes < Date < Timestamp < Uuid).
    pub fn key_cmp(&self, other: &Datum) -> Ordering {
        match (self, other) {
            (Datum::Boolean(a), Datum::Boolean(b)) => a.cmp(b),
            (Datum::Int(a), Datum::Int(b)) => a.cmp(b),
            (Datum::Float(a), Datum::Float(b)) => float_cmp(*a, *b),
            (Datum::Decimal(a), Datum::Decimal(b)) => a.cmp(b),
            // str ordering is byte-wise on UTF-8, which is what the key bytes give.
            (Datum::Text(a), Datum::Text(b)) => a.cmp(b),
            (Datum::Bytes(a), Datum::Bytes(b)) => a.cmp(b),
            (Datum::Date(a), Datum::Date(b)) => a.cmp(b),
            (Datum::Timestamp(a), Datum::Timestamp(b)) => a.cmp(b),
            (Datum::Uuid(a), Datum::Uuid(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }

    /// SQL name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Datum::Null => "NULL",
            Datum::Boolean(_) => "BOOLEAN",
            Datum::Int(_) => "INTEGER",
            Datum::Float(_) => "DOUBLE",
            Datum::Decimal(_) => "DECIMAL",
            Datum::Text(_) => "TEXT",
            Datum::Bytes(_) => "BYTES",
            Datum::Date(_) => "DATE",
            Datum::Timestamp(_) => "TIMESTAMP",
            Datum::Uuid(_) => "UUID",
        }
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        // Neither is NaN, so partial_cmp is total here and already treats -0.0 == 0.0.
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// A decimal number's text as a DECIMAL of `scale`, exactly: `-12.345` at scale 2 is -1235
/// (rounded half away from zero, as PostgreSQL's numeric); None for anything else, or a value
/// past 128 bits.
pub fn decimal_from_text(text: &str, scale: i8) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let scale = usize::try_from(scale).ok()?;
    let mut value: i128 = 0;
    for b in whole
        .bytes()
        .chain(fraction.bytes().chain(std::iter::repeat(b'0')).take(scale))
    {
        value = value.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    if fraction.as_bytes().get(scale).is_some_and(|b| *b >= b'5') {
        value = value.checked_add(1)?;
    }
    Some(if negative { -value } else { value })
}

/// An unscaled DECIMAL value as its digits with `scale` of them after the point
/// (`format_decimal(-1234, 2)` is `-12.34`); a scale of 0 or less writes the integer it
/// stands for.
pub fn format_decimal(unscaled: i128, scale: i8) -> String {
    let Ok(scale) = usize::try_from(scale) else {
        // A negative scale counts trailing zeros.
        let zeros = "0".repeat(usize::from(scale.unsigned_abs()));
        return if unscaled == 0 {
            "0".to_string()
        } else {
            format!("{unscaled}{zeros}")
        };
    };
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

impl fmt::Display for Datum {
    /// Renders the value roughly as a SQL literal would be written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Datum::Null => f.write_str("NULL"),
            Datum::Boolean(b) => write!(f, "{b}"),
            Datum::Int(i) => write!(f, "{i}"),
            Datum::Float(x) if x.is_nan() => f.write_str("NaN"),
            Datum::Float(x) if x.is_infinite() => {
                f.write_str(if *x > 0.0 { "Infinity" } else { "-Infinity" })
            }
            // Debug keeps the ".0" on whole numbers so a float never reads as an integer.
            Datum::Float(x) => write!(f, "{x:?}"),
            Datum::Decimal(d) => write!(f, "{d}"),
            Datum::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Datum::Bytes(bytes) => {
                f.write_str("X'")?;
                for b in bytes {
                    write!(f, "{b:02x}")?;
                }
                f.write_str("'")
            }
            Datum::Date(days) => write!(f, "DATE '{}'", format_date(*days)),
            Datum::Timestamp(micros) => write!(f, "TIMESTAMP '{}'", format_timestamp(*micros)),
            Datum::Uuid(bytes) => write!(f, "UUID '{}'", format_uuid(bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_format_with_their_scale() {
        assert_eq!(format_decimal(1234, 2), "12.34");
        assert_eq!(format_decimal(-5, 2), "-0.05");
        assert_eq!(format_decimal(0, 3), "0.000");
        assert_eq!(format_decimal(-7, 0), "-7");
        assert_eq!(format_decimal(12, -2), "1200");
        assert_eq!(
            format_decimal(i128::MIN, 38),
            "-1.70141183460469231731687303715884105728"
        );
    }

    #[test]
    fn display_literals() {
        let cases = [
            (Datum::Null, "NULL"),
            (Datum::Boolean(true), "true"),
            (Datum::Boolean(false), "false"),
            (Datum::Int(-42), "-42"),
            (Datum::Float(1.5), "1.5"),
            (Datum::Float(2.0), "2.0"),
            (Datum::Float(f64::NAN), "NaN"),
            (Datum::Float(f64::NEG_INFINITY), "-Infinity"),
            (Datum::Decimal(-12345), "-12345"),
            (Datum::Text("it's".into()), "'it''s'"),
            (Datum::Bytes(vec![0x0a, 0xff]), "X'0aff'"),
            (Datum::Date(19_753), "DATE '2024-01-31'"),
            (
                Datum::Timestamp(1_706_702_400_123_456),
                "TIMESTAMP '2024-01-31 12:00:00.123456'",
            ),
            (
                Datum::Timestamp(1_706_702_400_000_000),
                "TIMESTAMP '2024-01-31 12:00:00'",
            ),
            (
                Datum::Uuid([
                    0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd,
                    0x38, 0x0a, 0x11,
                ]),
                "UUID 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
            ),
        ];
        for (datum, text) in cases {
            assert_eq!(datum.to_string(), text);
        }
    }

    #[test]
    fn float_order_specials() {
        let f = Datum::Float;
        assert_eq!(f(-0.0).key_cmp(&f(0.0)), Ordering::Equal);
        assert_eq!(f(f64::NAN).key_cmp(&f(f64::INFINITY)), Ordering::Greater);
        assert_eq!(f(f64::INFINITY).key_cmp(&f(f64::NAN)), Ordering::Less);
        assert_eq!(f(f64::NAN).key_cmp(&f(-f64::NAN)), Ordering::Equal);
        assert_eq!(f(f64::NEG_INFINITY).key_cmp(&f(f64::MIN)), Ordering::Less);
    }

    #[test]
    fn null_lowest_and_ranks() {
        let values = [
            Datum::Null,
            Datum::Boolean(true),
            Datum::Int(i64::MIN),
            Datum::Float(f64::NEG_INFINITY),
            Datum::Decimal(i128::MIN),
            Datum::Text(String::new()),
            Datum::Bytes(Vec::new()),
            Datum::Date(i32::MIN),
            Datum::Timestamp(i64::MIN),
        ];
        for (i, a) in values.iter().enumerate() {
            for (j, b) in values.iter().enumerate() {
                assert_eq!(a.key_cmp(b), i.cmp(&j), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn text_orders_by_bytes() {
        let a = Datum::Text("Z".into());
        let b = Datum::Text("a".into());
        let c = Datum::Text("é".into());
        assert_eq!(a.key_cmp(&b), Ordering::Less);
        assert_eq!(b.key_cmp(&c), Ordering::Less);
    }

    #[test]
    fn names_and_null() {
        assert!(Datum::Null.is_null());
        assert!(!Datum::Int(0).is_null());
        assert_eq!(Datum::Int(0).type_name(), "INTEGER");
        assert_eq!(Datum::Date(0).type_name(), "DATE");
        assert_eq!(Datum::Null.type_name(), "NULL");
    }
}
