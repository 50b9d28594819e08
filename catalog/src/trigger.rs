//! Triggers as stored: what a table runs around its writes (`CREATE TRIGGER`). A trigger is
//! part of its table's definition, so it lives and dies with the table; `triggers` changes
//! them.

use serde::{Deserialize, Serialize};

/// A trigger: statements run for each row a write changes, before or after the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerDef {
    pub name: String,
    pub timing: TriggerTiming,
    pub event: TriggerEvent,
    /// `WHEN` condition as SQL text over `NEW` and `OLD`: the trigger runs for a row only
    /// where it is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The statements between BEGIN and END, as SQL text, run in order.
    pub body: Vec<String>,
}

/// Whether a trigger runs before or after the row change that fires it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerTiming {
    Before,
    After,
}

/// The kind of row change a trigger fires on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerEvent {
    Insert,
    /// `UPDATE [OF columns]`: with columns, only an UPDATE that sets one of them fires it.
    Update {
        columns: Vec<String>,
    },
    Delete,
}
