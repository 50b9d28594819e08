//! A table's columns as declared ([`ColumnDef`], with an optional DEFAULT), its CHECK
//! constraints ([`CheckDef`]), and the columns of a key, a primary key's or an index's, with
//! their sort order ([`KeyColumn`]).

use rowdex_codec::{Datum, SortOrder, key};
use serde::{Deserialize, Serialize};

use crate::types::{DataType, Declared};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// Stable id used in stored cells; never reused within a table.
    pub id: u32,
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    /// A hidden column (the row id, the write time of a TTL table): not part of `SELECT *`,
    /// never named by a statement.
    pub hidden: bool,
    /// The column family whose entry holds the column's cells: 0 is the default family (the
    /// row entry), n the table's `families[n - 1]`. Key columns live in the key, in no family.
    #[serde(default, skip_serializing_if = "is_default_family")]
    pub family: u8,
    /// The DEFAULT expression, as SQL text without column references (a constant,
    /// `CURRENT_TIMESTAMP`, ...): the value a write that does not set the column gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// For a column added by ALTER TABLE: the table's schema version from then on. A stored
    /// row written at an older version has no cell for the column and reads [`Self::missing`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub added_in: u32,
    /// The value rows written before the column was added read (its DEFAULT at the time of
    /// the ALTER), key-encoded; None reads NULL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<u8>>,
    /// `GENERATED ALWAYS AS IDENTITY`: only its sequence gives the column values; a statement
    /// that writes one is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generated_always: bool,
    /// `GENERATED ALWAYS AS (expr) STORED`: the expression (SQL text over the table's other,
    /// not generated, columns) every write computes the column's value from; no statement
    /// writes the column itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<String>,
    /// The narrower type the column was declared with under PostgreSQL's rules (INTEGER,
    /// REAL, CHAR(n), ...), None where `data_type` is the declared type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<Declared>,
}

fn is_zero(version: &u32) -> bool {
    *version == 0
}

fn is_default_family(family: &u8) -> bool {
    *family == 0
}

impl ColumnDef {
    /// A visible, nullable column; `TableDef::new` assigns its id and makes key columns
    /// NOT NULL.
    pub fn nullable(name: &str, data_type: DataType) -> ColumnDef {
        ColumnDef {
            id: 0,
            name: name.to_string(),
            data_type,
            nullable: true,
            hidden: false,
            family: 0,
            default: None,
            added_in: 0,
            missing: None,
            generated_always: false,
            generation: None,
            declared: None,
        }
    }

    /// What messages and plans call the column: its name, or for the hidden column of an
    /// indexed expression the expression (`lower(email)`).
    pub fn label(&self) -> &str {
        match (&self.generation, self.hidden) {
            (Some(expr), true) => expr,
            _ => &self.name,
        }
    }

    /// Whether the column's values come from its generation expression
    /// (`GENERATED ALWAYS AS (...) STORED`).
    pub fn is_generated(&self) -> bool {
        self.generation.is_some()
    }

    /// The column's declared type as SQL spells it where that says more than `data_type`'s
    /// name: a [`Declared`] type, `VARCHAR(n)` for a length-limited text column, or `UUID` (whose
    /// values travel through Arrow as their text).
    pub fn declared_type(&self) -> Option<String> {
        let max_len = match self.data_type {
            DataType::Text { max_len } => max_len,
            _ => None,
        };
        match self.data_type {
            // Travel as their text; clients are told what the text is.
            DataType::Uuid => return Some("UUID".to_string()),
            DataType::Array { element } if element.declared_array().is_some() => {
                return element.declared_array();
            }
            _ => {}
        }
        match (self.declared, max_len) {
            (Some(declared), _) => Some(declared.spelling(max_len)),
            (None, Some(_)) => Some(Declared::Varchar.spelling(max_len)),
            (None, None) => None,
        }
    }

    /// What a row stored before the column was added reads in it (NULL unless the column
    /// was added with a DEFAULT), for a row written at schema version `written_in`.
    pub fn missing_value(&self, written_in: u32) -> Option<Datum> {
        if written_in >= self.added_in {
            return None;
        }
        let mut bytes = self.missing.as_deref()?;
        key::decode_datum(&mut bytes, SortOrder::Asc).ok()
    }
}

/// A CHECK constraint: every row written must not make `expr` false (NULL passes, as in SQL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckDef {
    /// The constraint's name: declared, or `<table>_<column>_check` / `<table>_check` as
    /// PostgreSQL names them.
    pub name: String,
    /// The condition as SQL text over the table's columns.
    pub expr: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyColumn {
    /// Position in the table's columns (`TableDef::columns`).
    pub column: usize,
    pub desc: bool,
}

impl KeyColumn {
    pub fn order(&self) -> SortOrder {
        if self.desc {
            SortOrder::Desc
        } else {
            SortOrder::Asc
        }
    }
}
