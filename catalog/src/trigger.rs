//! Triggers: what a table runs around its writes (`CREATE TRIGGER`). A trigger is stored in its
//! table's definition, so it lives and dies with the table and a change to it bumps the
//! table's schema version (writers in flight re-read the definition and fire what it says
//! now); its name is reserved under the system prefix, since trigger names are unique across
//! tables.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::error::{CatalogError, Result};
use crate::keyspace;
use crate::table::TableDef;

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

impl TableDef {
    /// The triggers that fire `timing` on `event`, in creation order. For UPDATE, `set` names
    /// the columns the statement assigns (an `UPDATE OF` trigger fires when it names one).
    pub fn triggers_for(
        &self,
        timing: TriggerTiming,
        event: &TriggerEvent,
        set: &[String],
    ) -> Vec<&TriggerDef> {
        self.triggers
            .iter()
            .filter(|trigger| trigger.timing == timing)
            .filter(|trigger| match (&trigger.event, event) {
                (TriggerEvent::Update { columns }, TriggerEvent::Update { .. }) => {
                    columns.is_empty() || columns.iter().any(|c| set.contains(c))
                }
                (mine, theirs) => mine == theirs,
            })
            .collect()
    }

    /// Whether any trigger fires on `event` (UPDATE whatever its columns).
    pub fn has_triggers_on(&self, event: &TriggerEvent) -> bool {
        self.triggers
            .iter()
            .any(|trigger| std::mem::discriminant(&trigger.event) == std::mem::discriminant(event))
    }
}

impl Catalog {
    /// Adds `trigger` to `table`; `TriggerExists` if a trigger of any table has its name.
    pub async fn create_trigger(&self, table: &str, trigger: TriggerDef) -> Result<Arc<TableDef>> {
        let (mut tx, mut def) = self.begin_alter(table).await?;
        let name_key = keyspace::trigger_name_key(&trigger.name);
        if tx.get(&name_key).await?.is_some() {
            return Err(CatalogError::TriggerExists {
                trigger: trigger.name,
            });
        }
        if let TriggerEvent::Update { columns } = &trigger.event
            && let Some(missing) = columns.iter().find(|c| def.visible_position(c).is_err())
        {
            return Err(CatalogError::ColumnNotFound {
                table: def.name.clone(),
                column: missing.clone(),
            });
        }
        tx.put(name_key, def.name.as_bytes().to_vec());
        def.triggers.push(trigger);
        self.commit_alter(tx, table, def).await
    }

    /// Removes the trigger `name` from its table; `TriggerNotFound` if there is none.
    pub async fn drop_trigger(&self, name: &str) -> Result<Arc<TableDef>> {
        let not_found = || CatalogError::TriggerNotFound {
            trigger: name.to_string(),
        };
        let table = {
            let tx = self.store.begin().await?;
            let table = tx
                .get(&keyspace::trigger_name_key(name))
                .await?
                .ok_or_else(not_found)?;
            String::from_utf8_lossy(&table).into_owned()
        };
        let (mut tx, mut def) = self.begin_alter(&table).await?;
        let position = def
            .triggers
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(not_found)?;
        def.triggers.remove(position);
        tx.delete(keyspace::trigger_name_key(name));
        self.commit_alter(tx, &table, def).await
    }
}
