//! Foreign keys as stored: a referencing table's columns whose values must be found in a
//! referenced table's primary key or UNIQUE index (`REFERENCES`, `FOREIGN KEY ... REFERENCES`).
//!
//! The constraint is part of the referencing table's definition; the referenced table lists
//! the ids of the tables referencing it ([`crate::TableDef::referenced_by`]), so a write to it
//! knows, from its own definition, which tables to look in. Columns are named by their stable
//! ids (not positions), so dropping an unrelated column of either table leaves the constraint
//! intact; tables by id, so renaming either does too.

use serde::{Deserialize, Serialize};

/// `FOREIGN KEY (columns) REFERENCES referenced_table (referenced_columns)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignKeyDef {
    /// Declared, or `<table>_<columns>_fkey` as PostgreSQL names it.
    pub name: String,
    /// The referencing columns (ids of this table's columns), in declared order.
    pub columns: Vec<u32>,
    /// The referenced table's id.
    pub referenced_table: u32,
    /// The referenced columns (ids of the referenced table's columns), paired with `columns`.
    pub referenced_columns: Vec<u32>,
    pub on_delete: ReferentialAction,
    pub on_update: ReferentialAction,
}

/// What a delete or key update of a referenced row does to the rows referencing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ReferentialAction {
    /// Fails if referencing rows remain at the end of the statement (the default).
    #[default]
    NoAction,
    /// Fails if referencing rows remain (checked, like NO ACTION, at the end of the statement).
    Restrict,
    /// Deletes the referencing rows (ON DELETE), or gives them the new key (ON UPDATE).
    Cascade,
    /// Sets the referencing columns to NULL.
    SetNull,
    /// Sets the referencing columns to their DEFAULTs (which must then be referenced).
    SetDefault,
}

impl ReferentialAction {
    /// PostgreSQL's one-letter code (`pg_constraint.confdeltype`).
    pub fn code(self) -> char {
        match self {
            ReferentialAction::NoAction => 'a',
            ReferentialAction::Restrict => 'r',
            ReferentialAction::Cascade => 'c',
            ReferentialAction::SetNull => 'n',
            ReferentialAction::SetDefault => 'd',
        }
    }

    /// The SQL spelling (`information_schema.referential_constraints.delete_rule`).
    pub fn sql(self) -> &'static str {
        match self {
            ReferentialAction::NoAction => "NO ACTION",
            ReferentialAction::Restrict => "RESTRICT",
            ReferentialAction::Cascade => "CASCADE",
            ReferentialAction::SetNull => "SET NULL",
            ReferentialAction::SetDefault => "SET DEFAULT",
        }
    }

    /// Whether the action changes the referencing rows (rather than only checking for them).
    pub fn writes(self) -> bool {
        matches!(
            self,
            ReferentialAction::Cascade | ReferentialAction::SetNull | ReferentialAction::SetDefault
        )
    }
}
