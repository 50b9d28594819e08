//! The persistent catalog: table definitions stored under the system prefix, cached in memory.
//!
//! Every DDL change is one optimistic transaction that reads and writes the id counter and the
//! definition key, so two sessions creating the same table (or taking the same id) cannot both
//! succeed, and a crash leaves either the old catalog or the new one.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use rowdex_store::{Direction, KeyRange, KvStore, scan_stream};

use crate::keyspace::{self, NEXT_ID_KEY, TABLE_DEF_PREFIX};
use crate::table::TableDef;
use crate::{CatalogError, Result};

/// First id handed out; lower ids are kept for system objects.
const FIRST_USER_ID: u32 = 16;

pub struct Catalog {
    store: Arc<dyn KvStore>,
    tables: RwLock<BTreeMap<String, Arc<TableDef>>>,
}

impl Catalog {
    /// Loads every table definition from the store.
    pub async fn open(store: Arc<dyn KvStore>) -> Result<Catalog> {
        use futures::StreamExt;
        let mut tables = BTreeMap::new();
        let mut entries = scan_stream(
            store.snapshot(),
            KeyRange::prefix(TABLE_DEF_PREFIX),
            Direction::Forward,
            256,
        );
        while let Some(entry) = entries.next().await {
            let (key, value) = entry?;
            let def: TableDef =
                serde_json::from_slice(&value).map_err(|source| CatalogError::Corrupt {
                    what: String::from_utf8_lossy(&key).into_owned(),
                    source,
                })?;
            tables.insert(def.name.clone(), Arc::new(def));
        }
        Ok(Catalog {
            store,
            tables: RwLock::new(tables),
        })
    }

    pub fn table(&self, name: &str) -> Option<Arc<TableDef>> {
        self.read_tables().get(name).cloned()
    }

    pub fn require_table(&self, name: &str) -> Result<Arc<TableDef>> {
        self.table(name).ok_or_else(|| CatalogError::TableNotFound {
            table: name.to_string(),
        })
    }

    pub fn tables(&self) -> Vec<Arc<TableDef>> {
        self.read_tables().values().cloned().collect()
    }

    /// Stores a new table, assigning its id. Errors with `TableExists` if the name is taken.
    pub async fn create_table(&self, mut def: TableDef) -> Result<Arc<TableDef>> {
        let mut tx = self.store.begin().await?;
        let def_key = keyspace::table_def_key(&def.name);
        if tx.get(&def_key).await?.is_some() {
            return Err(CatalogError::TableExists { table: def.name });
        }
        let next_id = match tx.get(NEXT_ID_KEY).await? {
            Some(bytes) => decode_id(&bytes)?,
            None => FIRST_USER_ID,
        };
        def.id = next_id;
        let following = next_id.checked_add(1).ok_or(CatalogError::IdsExhausted)?;
        tx.put(NEXT_ID_KEY.to_vec(), following.to_be_bytes().to_vec());
        tx.put(def_key, encode_def(&def)?);
        tx.commit().await?;
        let def = Arc::new(def);
        self.write_tables().insert(def.name.clone(), def.clone());
        Ok(def)
    }

    /// Removes a table's definition. Its rows become unreachable at once (ids are never reused);
    /// the caller deletes them afterwards.
    pub async fn drop_table(&self, name: &str) -> Result<Arc<TableDef>> {
        let def = self.require_table(name)?;
        let mut tx = self.store.begin().await?;
        let def_key = keyspace::table_def_key(name);
        if tx.get(&def_key).await?.is_none() {
            return Err(CatalogError::TableNotFound {
                table: name.to_string(),
            });
        }
        tx.delete(def_key);
        tx.commit().await?;
        self.write_tables().remove(name);
        Ok(def)
    }

    fn read_tables(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<TableDef>>> {
        // A poisoned lock only means another thread panicked while holding it; the map itself is
        // always left consistent (single insert/remove), so keep serving it.
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_tables(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<TableDef>>> {
        self.tables.write().unwrap_or_else(|e| e.into_inner())
    }
}

fn encode_def(def: &TableDef) -> Result<Vec<u8>> {
    serde_json::to_vec(def).map_err(|source| CatalogError::Corrupt {
        what: def.name.clone(),
        source,
    })
}

fn decode_id(bytes: &[u8]) -> Result<u32> {
    let array: [u8; 4] = bytes.try_into().map_err(|_| CatalogError::Corrupt {
        what: "next id".to_string(),
        source: serde::de::Error::custom("expected 4 bytes"),
    })?;
    Ok(u32::from_be_bytes(array))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ColumnDef, DataType};
    use rowdex_store::MemoryStore;

    fn def(name: &str) -> TableDef {
        let columns = vec![ColumnDef {
            id: 0,
            name: "a".to_string(),
            data_type: DataType::Integer,
            nullable: true,
            hidden: false,
        }];
        TableDef::new(name, columns, &[("a".to_string(), false)], 0).expect("valid definition")
    }

    #[tokio::test]
    async fn tables_survive_reopen_and_ids_are_never_reused() -> Result<()> {
        let store: Arc<dyn KvStore> = Arc::new(MemoryStore::new());
        let catalog = Catalog::open(store.clone()).await?;
        let first = catalog.create_table(def("t1")).await?;
        assert!(matches!(
            catalog.create_table(def("t1")).await,
            Err(CatalogError::TableExists { .. })
        ));
        catalog.drop_table("t1").await?;
        let second = catalog.create_table(def("t1")).await?;
        assert!(second.id > first.id);
        catalog.create_table(def("t2")).await?;

        let reopened = Catalog::open(store).await?;
        let names: Vec<String> = reopened.tables().iter().map(|t| t.name.clone()).collect();
        assert_eq!(names, vec!["t1", "t2"]);
        assert_eq!(reopened.require_table("t1")?.id, second.id);
        let third = reopened.create_table(def("t3")).await?;
        assert!(third.id > reopened.require_table("t2")?.id);
        Ok(())
    }
}
