//! Creating and dropping triggers, and which of a table's triggers a write fires. A change to
//! a table's triggers bumps its schema version (writers in flight re-read the definition and
//! fire what it says now); a trigger's name is reserved under the system prefix, since trigger
//! names are unique across tables.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::error::{CatalogError, Result};
use crate::keyspace;
use crate::table::TableDef;
use crate::trigger::{TriggerDef, TriggerEvent, TriggerTiming};

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
