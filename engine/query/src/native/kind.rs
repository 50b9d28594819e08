//! The kinds of value the native executor's expressions are typed by: one per datum kind
//! (DECIMAL and UUID aside), and NULL, which goes with any.

use rowdex_catalog::DataType;
use rowdex_codec::Datum;

/// The type of a value as evaluation sees it: one of the datum kinds, or NULL (any type).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Null,
    Boolean,
    Int,
    Float,
    Text,
    Bytes,
    Date,
    Timestamp,
}

impl Kind {
    pub(crate) fn of(datum: &Datum) -> Option<Kind> {
        Some(match datum {
            Datum::Null => Kind::Null,
            Datum::Boolean(_) => Kind::Boolean,
            Datum::Int(_) => Kind::Int,
            Datum::Float(_) => Kind::Float,
            Datum::Text(_) => Kind::Text,
            Datum::Bytes(_) => Kind::Bytes,
            Datum::Date(_) => Kind::Date,
            Datum::Timestamp(_) => Kind::Timestamp,
            // A UUID reads back from Arrow as text: left to DataFusion, which sees it so.
            Datum::Decimal(_) | Datum::Uuid(_) => return None,
        })
    }

    pub(crate) fn of_column(data_type: &DataType) -> Option<Kind> {
        Some(match data_type {
            DataType::Boolean => Kind::Boolean,
            DataType::Integer => Kind::Int,
            DataType::Float => Kind::Float,
            DataType::Text { .. } => Kind::Text,
            DataType::Bytes { .. } => Kind::Bytes,
            DataType::Date => Kind::Date,
            DataType::Timestamp => Kind::Timestamp,
            // An instant is read and written in the session's zone: DataFusion's part
            // (`df::rules::time_zones`).
            DataType::Decimal { .. }
            | DataType::Uuid
            | DataType::TimestampTz
            | DataType::Array { .. } => return None,
        })
    }

    /// The one kind of several values that must share one (NULL goes with any); None when
    /// two differ (DataFusion would coerce them to a common type).
    pub(crate) fn common(kinds: impl IntoIterator<Item = Kind>) -> Option<Kind> {
        let mut common = Kind::Null;
        for kind in kinds {
            match (common, kind) {
                (_, Kind::Null) => {}
                (Kind::Null, kind) => common = kind,
                (a, b) if a == b => {}
                _ => return None,
            }
        }
        Some(common)
    }
}
