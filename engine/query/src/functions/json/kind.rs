//! Which of the two JSON types a value is, as its Arrow field declares it.

use datafusion::arrow::datatypes::Field;

use crate::values::{declared_text_field, declared_type_of};

/// Which of the two JSON types a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum JsonKind {
    /// `json`: the text as written.
    Json,
    /// `jsonb`: normalised.
    Jsonb,
}

impl JsonKind {
    /// The declared type a field of this kind carries.
    pub(crate) fn declared(self) -> &'static str {
        match self {
            JsonKind::Json => "JSON",
            JsonKind::Jsonb => "JSONB",
        }
    }

    /// The kind `field` declares, if it is a JSON field.
    pub(crate) fn of_field(field: &Field) -> Option<JsonKind> {
        match declared_type_of(field) {
            Some("JSON") => Some(JsonKind::Json),
            Some("JSONB") => Some(JsonKind::Jsonb),
            _ => None,
        }
    }

    /// A text field of `name` holding values of this kind.
    pub(crate) fn field(self, name: &str, nullable: bool) -> Field {
        declared_text_field(name, nullable, self.declared())
    }
}
