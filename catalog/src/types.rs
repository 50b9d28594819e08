//! SQL column types as rowdex stores them.
//!
//! Every integer type is 64-bit and every floating type is a 64-bit double, as in SQLite: the
//! declared width only changes what DESCRIBE prints, never what a column can hold.

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
    Timestamp,
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
                | (DataType::Timestamp, Datum::Timestamp(_))
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
        }
    }
}
