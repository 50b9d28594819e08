//! SQL column types as rowdex stores them ([`DataType`]), and the narrower type a column may
//! have been declared with ([`Declared`]).
//!
//! Every integer is stored in 64 bits and every floating value as a double. A table created
//! under SQLite's rules keeps SQLite's affinities: the declared width changes nothing. One
//! created under PostgreSQL's rules (a session of `rowdex serve`) records the declared type
//! where it is narrower (SMALLINT, INTEGER, REAL, CHAR(n), VARCHAR): a value must fit it, and
//! clients are told it.

use rowdex_codec::Datum;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataType {
    Boolean,
    Integer,
    Float,
    /// Fixed-point: `precision` digits, `scale` of them after the point; stored unscaled.
    Decimal {
        precision: u8,
        scale: i8,
    },
    /// VARCHAR(n), CHAR(n) or TEXT (no limit).
    Text {
        max_len: Option<u32>,
    },
    /// VARBINARY(n) or BYTEA (no limit).
    Bytes {
        max_len: Option<u32>,
    },
    Date,
    /// A date and time of day without a time zone: microseconds of the wall clock.
    Timestamp,
    /// TIMESTAMPTZ (TIMESTAMP WITH TIME ZONE): an instant, stored as microseconds since
    /// 1970-01-01 UTC in the same form as a [`DataType::Timestamp`]; the session's time zone
    /// reads text without an offset and writes values out (rowdex's `time_zone`).
    TimestampTz,
    /// 16 bytes, read and written as PostgreSQL's text forms (`rowdex_codec::parse_uuid`).
    Uuid,
    /// A one-dimensional array of `element`s (`INTEGER[]`, `TEXT[]`), stored as its text in
    /// PostgreSQL's form (`{1,2,NULL}`, `{a,"b c"}`), one canonical text per value.
    Array {
        element: ArrayElement,
    },
}

/// The type of an array column's elements, as PostgreSQL names them (an `INTEGER[]` holds
/// int4s, a `BIGINT[]` int8s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArrayElement {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Text,
    Varchar,
    Date,
    Timestamp,
    TimestampTz,
    Uuid,
    Json,
    Jsonb,
    Bytea,
    /// `NUMERIC(precision, scale)`: each element rounded to the scale, as a column's value.
    Numeric {
        precision: u8,
        scale: i8,
    },
}

/// The precision and scale of `numeric` as a cast names it without them (DataFusion's).
pub const CAST_NUMERIC: ArrayElement = ArrayElement::Numeric {
    precision: 38,
    scale: 10,
};

impl ArrayElement {
    /// Every element type (a NUMERIC of one precision and scale).
    pub const ALL: [ArrayElement; 16] = [
        ArrayElement::Bool,
        ArrayElement::Int2,
        ArrayElement::Int4,
        ArrayElement::Int8,
        ArrayElement::Float4,
        ArrayElement::Float8,
        ArrayElement::Text,
        ArrayElement::Varchar,
        ArrayElement::Date,
        ArrayElement::Timestamp,
        ArrayElement::TimestampTz,
        ArrayElement::Uuid,
        ArrayElement::Json,
        ArrayElement::Jsonb,
        ArrayElement::Bytea,
        CAST_NUMERIC,
    ];

    /// PostgreSQL's internal name of the element type (`int4`, `text`).
    pub fn pg_name(self) -> &'static str {
        match self {
            ArrayElement::Bool => "bool",
            ArrayElement::Int2 => "int2",
            ArrayElement::Int4 => "int4",
            ArrayElement::Int8 => "int8",
            ArrayElement::Float4 => "float4",
            ArrayElement::Float8 => "float8",
            ArrayElement::Text => "text",
            ArrayElement::Varchar => "varchar",
            ArrayElement::Date => "date",
            ArrayElement::Timestamp => "timestamp",
            ArrayElement::TimestampTz => "timestamptz",
            ArrayElement::Uuid => "uuid",
            ArrayElement::Json => "json",
            ArrayElement::Jsonb => "jsonb",
            ArrayElement::Bytea => "bytea",
            ArrayElement::Numeric { .. } => "numeric",
        }
    }

    /// The oid of the element type in PostgreSQL's pg_type (what a binary array names).
    pub fn pg_oid(self) -> i32 {
        match self {
            ArrayElement::Bool => 16,
            ArrayElement::Int2 => 21,
            ArrayElement::Int4 => 23,
            ArrayElement::Int8 => 20,
            ArrayElement::Float4 => 700,
            ArrayElement::Float8 => 701,
            ArrayElement::Text => 25,
            ArrayElement::Varchar => 1043,
            ArrayElement::Date => 1082,
            ArrayElement::Timestamp => 1114,
            ArrayElement::TimestampTz => 1184,
            ArrayElement::Uuid => 2950,
            ArrayElement::Json => 114,
            ArrayElement::Jsonb => 3802,
            ArrayElement::Bytea => 17,
            ArrayElement::Numeric { .. } => 1700,
        }
    }

    /// The element type PostgreSQL's internal name names (`numeric(10,2)` with its precision
    /// and scale; `numeric` alone is [`CAST_NUMERIC`]).
    pub fn of_pg_name(name: &str) -> Option<ArrayElement> {
        let lower = name.trim().to_ascii_lowercase();
        if let Some(numbers) = lower
            .strip_prefix("numeric(")
            .and_then(|rest| rest.strip_suffix(')'))
        {
            let mut parts = numbers.split(',').map(|n| n.trim().parse::<u8>());
            let precision = parts.next()?.ok()?;
            let scale = match parts.next() {
                Some(scale) => i8::try_from(scale.ok()?).ok()?,
                None => 0,
            };
            if precision == 0 || precision > 38 || scale < 0 || scale as u8 > precision {
                return None;
            }
            return Some(ArrayElement::Numeric { precision, scale });
        }
        ArrayElement::ALL
            .into_iter()
            .find(|element| element.pg_name() == lower)
    }

    /// The declared type (`UUID[]`) of an array whose elements travel as text that only the
    /// declaration tells apart (UUID, JSON, JSONB); None for the others, whose Arrow type says.
    pub fn declared_array(self) -> Option<String> {
        matches!(
            self,
            ArrayElement::Uuid | ArrayElement::Json | ArrayElement::Jsonb
        )
        .then(|| format!("{}[]", self.spelling()))
    }

    /// The element of the array type [`ArrayElement::declared_array`] writes.
    pub fn of_declared_array(declared: &str) -> Option<ArrayElement> {
        [ArrayElement::Uuid, ArrayElement::Json, ArrayElement::Jsonb]
            .into_iter()
            .find(|element| element.declared_array().as_deref() == Some(declared))
    }

    /// The element type's SQL spelling (`INTEGER`, `NUMERIC(10,2)`), which `[]` follows in the
    /// column's.
    pub fn spelling(self) -> String {
        let fixed = match self {
            ArrayElement::Bool => "BOOLEAN",
            ArrayElement::Int2 => "SMALLINT",
            ArrayElement::Int4 => "INTEGER",
            ArrayElement::Int8 => "BIGINT",
            ArrayElement::Float4 => "REAL",
            ArrayElement::Float8 => "DOUBLE PRECISION",
            ArrayElement::Text => "TEXT",
            ArrayElement::Varchar => "VARCHAR",
            ArrayElement::Date => "DATE",
            ArrayElement::Timestamp => "TIMESTAMP",
            ArrayElement::TimestampTz => "TIMESTAMPTZ",
            ArrayElement::Uuid => "UUID",
            ArrayElement::Json => "JSON",
            ArrayElement::Jsonb => "JSONB",
            ArrayElement::Bytea => "BYTEA",
            ArrayElement::Numeric { precision, scale } => {
                return format!("NUMERIC({precision},{scale})");
            }
        };
        fixed.to_string()
    }
}

impl DataType {
    /// Whether a non-NULL datum is of this type's runtime representation.
    pub fn admits(&self, datum: &Datum) -> bool {
        matches!(
            (self, datum),
            (_, Datum::Null)
                | (DataType::Boolean, Datum::Boolean(_))
                | (DataType::Integer, Datum::Int(_))
                | (DataType::Float, Datum::Float(_))
                | (DataType::Decimal { .. }, Datum::Decimal(_))
                | (DataType::Text { .. }, Datum::Text(_))
                | (DataType::Bytes { .. }, Datum::Bytes(_))
                | (DataType::Date, Datum::Date(_))
                | (
                    DataType::Timestamp | DataType::TimestampTz,
                    Datum::Timestamp(_)
                )
                | (DataType::Uuid, Datum::Uuid(_))
                | (DataType::Array { .. }, Datum::Text(_))
        )
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataType::Boolean => f.write_str("BOOLEAN"),
            DataType::Integer => f.write_str("INTEGER"),
            DataType::Float => f.write_str("DOUBLE"),
            DataType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            DataType::Text { max_len: Some(n) } => write!(f, "VARCHAR({n})"),
            DataType::Text { max_len: None } => f.write_str("TEXT"),
            DataType::Bytes { max_len: Some(n) } => write!(f, "VARBINARY({n})"),
            DataType::Bytes { max_len: None } => f.write_str("BYTEA"),
            DataType::Date => f.write_str("DATE"),
            DataType::Timestamp => f.write_str("TIMESTAMP"),
            DataType::TimestampTz => f.write_str("TIMESTAMPTZ"),
            DataType::Uuid => f.write_str("UUID"),
            DataType::Array { element } => write!(f, "{}[]", element.spelling()),
        }
    }
}

/// The type a column was declared with where it is narrower than the [`DataType`] that stores
/// it: PostgreSQL's SMALLINT, INTEGER and REAL (stored as 64-bit integers and doubles), its
/// character types and its JSON types (stored as text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Declared {
    /// SMALLINT (INT2): -32768 to 32767.
    SmallInt,
    /// INTEGER (INT, INT4): a 32-bit signed integer.
    Integer,
    /// REAL (FLOAT4): a single-precision float; a value is rounded to one when stored.
    Real,
    /// CHAR(n): stored without trailing blanks, read padded with blanks to its length.
    Char,
    /// VARCHAR or VARCHAR(n): text of at most its length (the DataType's `max_len`).
    Varchar,
    /// JSON: text that is one JSON value, kept as written.
    Json,
    /// JSONB: a JSON value kept as its normalised text (`rowdex_codec::json::Jsonb`).
    Jsonb,
}

impl Declared {
    /// The range of integers the type holds, for the integer types.
    pub fn integer_range(self) -> Option<std::ops::RangeInclusive<i64>> {
        match self {
            Declared::SmallInt => Some(i64::from(i16::MIN)..=i64::from(i16::MAX)),
            Declared::Integer => Some(i64::from(i32::MIN)..=i64::from(i32::MAX)),
            _ => None,
        }
    }

    /// The type's SQL spelling, with the length `max_len` a character type has.
    pub fn spelling(self, max_len: Option<u32>) -> String {
        match (self, max_len) {
            (Declared::SmallInt, _) => "SMALLINT".to_string(),
            (Declared::Integer, _) => "INTEGER".to_string(),
            (Declared::Real, _) => "REAL".to_string(),
            (Declared::Char, n) => format!("CHAR({})", n.unwrap_or(1)),
            (Declared::Varchar, Some(n)) => format!("VARCHAR({n})"),
            (Declared::Varchar, None) => "VARCHAR".to_string(),
            (Declared::Json, _) => "JSON".to_string(),
            (Declared::Jsonb, _) => "JSONB".to_string(),
        }
    }
}
