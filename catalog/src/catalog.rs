//! The persistent catalog: table definitions stored under the system prefix, cached in memory.
//!
//! Every DDL change is one optimistic transaction that reads and writes the id counter and the
//! definition key, so two sessions creating the same table (or taking the same id) cannot both
//! succeed, and a crash leaves either the old catalog or the new one.
//!
//! Every change also advances the catalog's version. On a store other processes write too
//! (an etcd cluster), [`Catalog::refresh`] compares the stored version with the one the cache
//! was loaded at before each statement and reloads when another process changed the catalog;
//! writers check their table's schema version in their own transaction, so a write planned
//! against an old definition conflicts and runs again on the new one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rowdex_store::{Direction, KeyRange, KvRead, KvStore, Transaction, scan_stream};

use crate::edits::CatalogEdits;
use crate::error::{CatalogError, Result};
use crate::index::{IndexDef, IndexState};
use crate::keyspace::{self, CATALOG_VERSION_KEY, NEXT_ID_KEY, TABLE_DEF_PREFIX, VIEW_DEF_PREFIX};
use crate::table::TableDef;

/// First id handed out; lower ids are kept for system objects.
const FIRST_USER_ID: u32 = 16;

pub struct Catalog {
    pub(crate) store: Arc<dyn KvStore>,
    tables: RwLock<BTreeMap<String, Arc<TableDef>>>,
    /// View name -> defining SQL.
    views: RwLock<BTreeMap<String, String>>,
    /// The catalog version the cache holds.
    version: AtomicU64,
    /// Whether other processes may change the catalog (see [`Catalog::refresh`]).
    shared: bool,
}

impl Catalog {
    /// Loads every table definition from the store.
    pub async fn open(store: Arc<dyn KvStore>) -> Result<Catalog> {
        let (tables, views, version) = load(store.as_ref()).await?;
        Ok(Catalog {
            shared: store.capabilities().shared,
            store,
            tables: RwLock::new(tables),
            views: RwLock::new(views),
            version: AtomicU64::new(version),
        })
    }

    /// On a store other processes write too: reloads the cache if the stored catalog version
    /// moved since it was loaded (one point read), and returns the snapshot it read the version
    /// through, which a query may go on reading (one linearizable read instead of two).
    /// Elsewhere nothing: this process makes every change and keeps its cache current itself.
    pub async fn refresh(&self) -> Result<Option<Arc<dyn KvRead>>> {
        if !self.shared {
            return Ok(None);
        }
        let view = self.store.snapshot();
        let stored = decode_version(view.get(CATALOG_VERSION_KEY).await?.as_deref())?;
        if stored != self.version.load(Ordering::SeqCst) {
            self.reload().await?;
        }
        Ok(Some(view))
    }

    /// The catalog version the cache holds.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Advances the stored catalog version inside a change's transaction (which therefore
    /// conflicts with any other change committed meanwhile), and records it in `edits`.
    async fn advance_version(tx: &mut dyn Transaction, edits: &mut CatalogEdits) -> Result<()> {
        let read = decode_version(tx.get(CATALOG_VERSION_KEY).await?.as_deref())?;
        let written = read + 1;
        tx.put(CATALOG_VERSION_KEY.to_vec(), written.to_be_bytes().to_vec());
        edits.advanced(read, written);
        Ok(())
    }

    /// After a change committed with `versions` (read, written): the cache is at the new
    /// version if it was current when the change read the version; otherwise another process
    /// changed the catalog before, and the whole cache is read again.
    async fn committed_at(&self, (read, written): (u64, u64)) {
        let was_current = self
            .version
            .compare_exchange(read, written, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if !was_current && self.reload().await.is_err() {
            // The change is committed whatever happens here: leave the cache marked stale,
            // so that the next statement's refresh reads it again.
            self.version.store(u64::MAX, Ordering::SeqCst);
        }
    }

    /// Makes what a committed transaction staged (`edits`) the catalog every session sees.
    pub async fn publish(&self, edits: &CatalogEdits) {
        if let Some(versions) = edits.versions {
            self.committed_at(versions).await;
        }
        {
            let mut tables = self.write_tables();
            for (name, def) in &edits.tables {
                match def {
                    Some(def) => tables.insert(name.clone(), def.clone()),
                    None => tables.remove(name),
                };
            }
        }
        let mut views = write_lock(&self.views);
        for (name, sql) in &edits.views {
            match sql {
                Some(sql) => views.insert(name.clone(), sql.clone()),
                None => views.remove(name),
            };
        }
    }

    /// Commits a change's own transaction and publishes its edits.
    async fn commit(&self, tx: Box<dyn Transaction>, edits: &CatalogEdits) -> Result<()> {
        tx.commit().await?;
        self.publish(edits).await;
        Ok(())
    }

    /// Reads every definition from the store again, in place of the cached ones: after a
    /// catalog change whose commit's outcome is unknown, the store says which it was.
    pub async fn reload(&self) -> Result<()> {
        let (tables, views, version) = load(self.store.as_ref()).await?;
        *self.write_tables() = tables;
        *write_lock(&self.views) = views;
        self.version.store(version, Ordering::SeqCst);
        Ok(())
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

    /// The table `name` as a transaction with `edits` pending sees it.
    pub fn table_in(&self, name: &str, edits: Option<&CatalogEdits>) -> Option<Arc<TableDef>> {
        match edits.and_then(|edits| edits.table(name)) {
            Some(pending) => pending,
            None => self.table(name),
        }
    }

    /// Every table as a transaction with `edits` pending sees them, by name.
    pub fn tables_in(&self, edits: Option<&CatalogEdits>) -> Vec<Arc<TableDef>> {
        let Some(edits) = edits.filter(|edits| !edits.tables.is_empty()) else {
            return self.tables();
        };
        let mut tables = self.read_tables().clone();
        for (name, def) in &edits.tables {
            match def {
                Some(def) => tables.insert(name.clone(), def.clone()),
                None => tables.remove(name),
            };
        }
        tables.into_values().collect()
    }

    /// The defining SQL of the view `name` as a transaction with `edits` pending sees it.
    pub fn view_in(&self, name: &str, edits: Option<&CatalogEdits>) -> Option<String> {
        match edits.and_then(|edits| edits.view(name)) {
            Some(pending) => pending,
            None => self.view(name),
        }
    }

    /// Every view's name as a transaction with `edits` pending sees them.
    pub fn view_names_in(&self, edits: Option<&CatalogEdits>) -> Vec<String> {
        let mut names: std::collections::BTreeSet<String> =
            read_lock(&self.views).keys().cloned().collect();
        for (name, sql) in edits.iter().flat_map(|edits| edits.views.iter()) {
            match sql {
                Some(_) => names.insert(name.clone()),
                None => names.remove(name),
            };
        }
        names.into_iter().collect()
    }

    /// The table an index belongs to, with the index, as a transaction with `edits` pending
    /// sees them.
    pub fn find_index_in(
        &self,
        index_name: &str,
        edits: Option<&CatalogEdits>,
    ) -> Option<(Arc<TableDef>, IndexDef)> {
        self.tables_in(edits).into_iter().find_map(|table| {
            let index = table.index(index_name).cloned()?;
            Some((table, index))
        })
    }

    /// Stores a new table, assigning its id. Errors with `TableExists` if the name is taken.
    pub async fn create_table(&self, def: TableDef) -> Result<Arc<TableDef>> {
        let mut tx = self.store.begin().await?;
        let mut edits = CatalogEdits::default();
        let def = self
            .stage_create_table(tx.as_mut(), &mut edits, def)
            .await?;
        self.commit(tx, &edits).await?;
        Ok(def)
    }

    /// [`Catalog::create_table`] in `tx`, recording what it changes in `edits`.
    pub async fn stage_create_table(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        mut def: TableDef,
    ) -> Result<Arc<TableDef>> {
        let def_key = keyspace::table_def_key(&def.name);
        if tx.get(&def_key).await?.is_some() {
            return Err(CatalogError::TableExists { table: def.name });
        }
        if tx.get(&keyspace::view_def_key(&def.name)).await?.is_some() {
            return Err(CatalogError::ViewExists { view: def.name });
        }
        def.id = take_id(tx).await?;
        // Indexes declared with the table (UNIQUE constraints) start out complete: the table
        // is empty.
        for i in 0..def.indexes.len() {
            let name_key = keyspace::index_name_key(&def.indexes[i].name);
            let clashes = def.indexes[..i]
                .iter()
                .any(|o| o.name == def.indexes[i].name);
            if clashes || tx.get(&name_key).await?.is_some() {
                return Err(CatalogError::IndexExists {
                    index: def.indexes[i].name.clone(),
                });
            }
            check_index_columns(&def, &def.indexes[i])?;
            def.indexes[i].id = take_id(tx).await?;
            def.indexes[i].state = IndexState::Ready;
            tx.put(name_key, def.name.as_bytes().to_vec());
        }
        put_def(tx, &def)?;
        Self::advance_version(tx, edits).await?;
        let def = Arc::new(def);
        edits.put_table(def.clone());
        Ok(def)
    }

    /// Removes a table's definition, its indexes and the sequences it owns. Its rows and index
    /// entries become unreachable at once (ids are never reused); the caller deletes them
    /// afterwards.
    pub async fn drop_table(&self, name: &str) -> Result<Arc<TableDef>> {
        let mut tx = self.store.begin().await?;
        let mut edits = CatalogEdits::default();
        let def = self.stage_drop_table(tx.as_mut(), &mut edits, name).await?;
        self.commit(tx, &edits).await?;
        Ok(def)
    }

    /// [`Catalog::drop_table`] in `tx`, recording what it changes in `edits` (the table among
    /// the dropped ones, whose entries are deleted once the drop committed).
    pub async fn stage_drop_table(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        name: &str,
    ) -> Result<Arc<TableDef>> {
        let def = stored_def(tx, name).await?;
        tx.delete(keyspace::table_def_key(name));
        tx.delete(keyspace::schema_version_key(def.id));
        for index in &def.indexes {
            tx.delete(keyspace::index_name_key(&index.name));
        }
        for trigger in &def.triggers {
            tx.delete(keyspace::trigger_name_key(&trigger.name));
        }
        self.stage_drop_owned_sequences(tx, def.id).await?;
        Self::advance_version(tx, edits).await?;
        edits.remove_table(name);
        let def = Arc::new(def);
        edits.dropped_tables.push(def.clone());
        Ok(def)
    }

    /// Starts an ALTER TABLE of `name`: a transaction and the definition as stored in it (not
    /// as cached), so that two changes of one table conflict instead of overwriting each other.
    /// The caller changes the definition, may read the table's rows through the transaction
    /// (to check them against it), and ends with [`Catalog::commit_alter`].
    pub async fn begin_alter(&self, name: &str) -> Result<(Box<dyn Transaction>, TableDef)> {
        let tx = self.store.begin().await?;
        let def = stored_def(tx.as_ref(), name).await?;
        Ok((tx, def))
    }

    /// The definition of `name` as stored in `tx` (not as cached): what an ALTER TABLE starts
    /// from, so that two changes of one table conflict instead of overwriting each other.
    pub async fn stored_table(&self, tx: &dyn Transaction, name: &str) -> Result<TableDef> {
        stored_def(tx, name).await
    }

    /// Stores `def` as the new definition of the table stored as `old_name` (moving it when
    /// renamed), bumps its schema version so that statements planned against the old one
    /// re-plan and writers in flight conflict, and commits.
    pub async fn commit_alter(
        &self,
        mut tx: Box<dyn Transaction>,
        old_name: &str,
        def: TableDef,
    ) -> Result<Arc<TableDef>> {
        let mut edits = CatalogEdits::default();
        let def = self
            .stage_alter(tx.as_mut(), &mut edits, old_name, def)
            .await?;
        self.commit(tx, &edits).await?;
        Ok(def)
    }

    /// [`Catalog::commit_alter`] in `tx`, recording what it changes in `edits`.
    pub async fn stage_alter(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        old_name: &str,
        mut def: TableDef,
    ) -> Result<Arc<TableDef>> {
        if def.name != old_name {
            let new_key = keyspace::table_def_key(&def.name);
            if tx.get(&new_key).await?.is_some() {
                return Err(CatalogError::TableExists { table: def.name });
            }
            if tx.get(&keyspace::view_def_key(&def.name)).await?.is_some() {
                return Err(CatalogError::ViewExists { view: def.name });
            }
            tx.delete(keyspace::table_def_key(old_name));
            for index in &def.indexes {
                tx.put(
                    keyspace::index_name_key(&index.name),
                    def.name.as_bytes().to_vec(),
                );
            }
            for trigger in &def.triggers {
                tx.put(
                    keyspace::trigger_name_key(&trigger.name),
                    def.name.as_bytes().to_vec(),
                );
            }
            edits.remove_table(old_name);
        }
        def.schema_version += 1;
        put_def(tx, &def)?;
        Self::advance_version(tx, edits).await?;
        let def = Arc::new(def);
        edits.put_table(def.clone());
        Ok(def)
    }

    /// The defining SQL of a view.
    pub fn view(&self, name: &str) -> Option<String> {
        read_lock(&self.views).get(name).cloned()
    }

    pub fn view_names(&self) -> Vec<String> {
        read_lock(&self.views).keys().cloned().collect()
    }

    /// Stores a view's defining query; `replace` overwrites an existing view of that name.
    pub async fn create_view(&self, name: &str, sql: &str, replace: bool) -> Result<()> {
        let mut tx = self.store.begin().await?;
        let mut edits = CatalogEdits::default();
        self.stage_create_view(tx.as_mut(), &mut edits, name, sql, replace)
            .await?;
        self.commit(tx, &edits).await
    }

    /// [`Catalog::create_view`] in `tx`, recording what it changes in `edits`.
    pub async fn stage_create_view(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        name: &str,
        sql: &str,
        replace: bool,
    ) -> Result<()> {
        if tx.get(&keyspace::table_def_key(name)).await?.is_some() {
            return Err(CatalogError::TableExists {
                table: name.to_string(),
            });
        }
        let key = keyspace::view_def_key(name);
        if !replace && tx.get(&key).await?.is_some() {
            return Err(CatalogError::ViewExists {
                view: name.to_string(),
            });
        }
        tx.put(key, sql.as_bytes().to_vec());
        Self::advance_version(tx, edits).await?;
        edits.views.insert(name.to_string(), Some(sql.to_string()));
        Ok(())
    }

    pub async fn drop_view(&self, name: &str) -> Result<()> {
        let mut tx = self.store.begin().await?;
        let mut edits = CatalogEdits::default();
        self.stage_drop_view(tx.as_mut(), &mut edits, name).await?;
        self.commit(tx, &edits).await
    }

    /// [`Catalog::drop_view`] in `tx`, recording what it changes in `edits`.
    pub async fn stage_drop_view(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        name: &str,
    ) -> Result<()> {
        let key = keyspace::view_def_key(name);
        if tx.get(&key).await?.is_none() {
            return Err(CatalogError::ViewNotFound {
                view: name.to_string(),
            });
        }
        tx.delete(key);
        Self::advance_version(tx, edits).await?;
        edits.views.insert(name.to_string(), None);
        Ok(())
    }

    /// Deletes the catalog entry at `key` in a transaction of its own; false, writing nothing,
    /// when there is none.
    pub(crate) async fn delete_present(&self, key: Vec<u8>) -> Result<bool> {
        let mut tx = self.store.begin().await?;
        if tx.get(&key).await?.is_none() {
            return Ok(false);
        }
        tx.delete(key);
        tx.commit().await?;
        Ok(true)
    }

    /// The table an index belongs to, with the index.
    pub fn find_index(&self, index_name: &str) -> Option<(Arc<TableDef>, IndexDef)> {
        self.find_index_in(index_name, None)
    }

    /// Adds an index in the [`IndexState::Building`] state: from now on every writer maintains
    /// it, but queries ignore it until [`Catalog::mark_index_ready`]. Assigns its id.
    pub async fn create_index(&self, table: &str, index: IndexDef) -> Result<Arc<TableDef>> {
        let mut tx = self.store.begin().await?;
        let mut edits = CatalogEdits::default();
        let def = self
            .stage_create_index(tx.as_mut(), &mut edits, table, index, IndexState::Building)
            .await?;
        self.commit(tx, &edits).await?;
        Ok(def)
    }

    /// Adds an index to `table` in `tx`, in `state`, recording the change in `edits`: Building
    /// for an online build ([`Catalog::create_index`]), Ready when the same transaction also
    /// writes its entries (a build inside a transaction block).
    pub async fn stage_create_index(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        table: &str,
        mut index: IndexDef,
        state: IndexState,
    ) -> Result<Arc<TableDef>> {
        let mut def = stored_def(tx, table).await?;
        let name_key = keyspace::index_name_key(&index.name);
        if tx.get(&name_key).await?.is_some() {
            return Err(CatalogError::IndexExists { index: index.name });
        }
        check_index_columns(&def, &index)?;
        index.id = take_id(tx).await?;
        index.state = state;
        tx.put(name_key, table.as_bytes().to_vec());
        def.indexes.push(index);
        def.schema_version += 1;
        put_def(tx, &def)?;
        Self::advance_version(tx, edits).await?;
        let def = Arc::new(def);
        edits.put_table(def.clone());
        Ok(def)
    }

    /// Makes a built index visible to queries.
    pub async fn mark_index_ready(&self, table: &str, index_name: &str) -> Result<Arc<TableDef>> {
        let mut tx = self.store.begin().await?;
        let mut def = stored_def(tx.as_ref(), table).await?;
        let index = def
            .indexes
            .iter_mut()
            .find(|i| i.name == index_name)
            .ok_or_else(|| CatalogError::IndexNotFound {
                index: index_name.to_string(),
            })?;
        index.state = IndexState::Ready;
        def.schema_version += 1;
        put_def(tx.as_mut(), &def)?;
        let mut edits = CatalogEdits::default();
        Self::advance_version(tx.as_mut(), &mut edits).await?;
        let def = Arc::new(def);
        edits.put_table(def.clone());
        self.commit(tx, &edits).await?;
        Ok(def)
    }

    /// Removes an index's definition; writers stop maintaining it at once. Its entries become
    /// unreachable (ids are never reused) and the caller deletes them afterwards.
    pub async fn drop_index(&self, index_name: &str) -> Result<(Arc<TableDef>, IndexDef)> {
        let mut tx = self.store.begin().await?;
        let mut edits = CatalogEdits::default();
        let dropped = self
            .stage_drop_index(tx.as_mut(), &mut edits, index_name)
            .await?;
        self.commit(tx, &edits).await?;
        Ok(dropped)
    }

    /// [`Catalog::drop_index`] in `tx`, recording what it changes in `edits` (the index among
    /// the dropped ones, whose entries are deleted once the drop committed).
    pub async fn stage_drop_index(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        index_name: &str,
    ) -> Result<(Arc<TableDef>, IndexDef)> {
        let name_key = keyspace::index_name_key(index_name);
        let not_found = || CatalogError::IndexNotFound {
            index: index_name.to_string(),
        };
        let table = tx.get(&name_key).await?.ok_or_else(not_found)?;
        let table = String::from_utf8_lossy(&table).into_owned();
        let mut def = stored_def(tx, &table).await?;
        let position = def
            .indexes
            .iter()
            .position(|i| i.name == index_name)
            .ok_or_else(not_found)?;
        let index = def.indexes.remove(position);
        // An indexed expression's hidden column goes with the last index on it.
        def.drop_unindexed_expressions();
        def.schema_version += 1;
        tx.delete(name_key);
        put_def(tx, &def)?;
        Self::advance_version(tx, edits).await?;
        let def = Arc::new(def);
        edits.put_table(def.clone());
        edits.dropped_indexes.push(index.clone());
        Ok((def, index))
    }

    fn read_tables(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<TableDef>>> {
        read_lock(&self.tables)
    }

    fn write_tables(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<TableDef>>> {
        write_lock(&self.tables)
    }
}

// A poisoned lock only means another thread panicked while holding it; the maps are always left
// consistent (single insert/remove), so keep serving them.
fn read_lock<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write_lock<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

/// Every table definition and view stored in `store`, by name, and the catalog version they
/// are at (all read from one snapshot).
async fn load(
    store: &dyn KvStore,
) -> Result<(
    BTreeMap<String, Arc<TableDef>>,
    BTreeMap<String, String>,
    u64,
)> {
    use futures::StreamExt;
    let snapshot = store.snapshot();
    let version = decode_version(snapshot.get(CATALOG_VERSION_KEY).await?.as_deref())?;
    let mut tables = BTreeMap::new();
    let mut entries = scan_stream(
        snapshot.clone(),
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
    let mut views = BTreeMap::new();
    let mut entries = scan_stream(
        snapshot,
        KeyRange::prefix(VIEW_DEF_PREFIX),
        Direction::Forward,
        256,
    );
    while let Some(entry) = entries.next().await {
        let (key, value) = entry?;
        let name = String::from_utf8_lossy(&key[VIEW_DEF_PREFIX.len()..]).into_owned();
        views.insert(name, String::from_utf8_lossy(&value).into_owned());
    }
    Ok((tables, views, version))
}

/// A stored catalog version (none stored: 0).
fn decode_version(bytes: Option<&[u8]>) -> Result<u64> {
    let Some(bytes) = bytes else {
        return Ok(0);
    };
    let array: [u8; 8] = bytes.try_into().map_err(|_| CatalogError::Corrupt {
        what: "catalog version".to_string(),
        source: serde::de::Error::custom("expected 8 bytes"),
    })?;
    Ok(u64::from_be_bytes(array))
}

/// Takes the next object id from the persisted counter.
pub(crate) async fn take_id(tx: &mut dyn Transaction) -> Result<u32> {
    let next_id = match tx.get(NEXT_ID_KEY).await? {
        Some(bytes) => decode_id(&bytes)?,
        None => FIRST_USER_ID,
    };
    let following = next_id.checked_add(1).ok_or(CatalogError::IdsExhausted)?;
    tx.put(NEXT_ID_KEY.to_vec(), following.to_be_bytes().to_vec());
    Ok(next_id)
}

/// The definition as stored (not as cached), read inside the transaction so that two DDL
/// statements on one table conflict instead of overwriting each other.
async fn stored_def(tx: &dyn Transaction, name: &str) -> Result<TableDef> {
    let bytes = tx
        .get(&keyspace::table_def_key(name))
        .await?
        .ok_or_else(|| CatalogError::TableNotFound {
            table: name.to_string(),
        })?;
    serde_json::from_slice(&bytes).map_err(|source| CatalogError::Corrupt {
        what: name.to_string(),
        source,
    })
}

/// Writes a definition and its schema version.
fn put_def(tx: &mut dyn Transaction, def: &TableDef) -> Result<()> {
    tx.put(keyspace::table_def_key(&def.name), encode_def(def)?);
    tx.put(
        keyspace::schema_version_key(def.id),
        def.schema_version.to_be_bytes().to_vec(),
    );
    Ok(())
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

/// An index names existing columns, each once.
fn check_index_columns(def: &TableDef, index: &IndexDef) -> Result<()> {
    for (i, column) in index.columns.iter().enumerate() {
        let name = def
            .columns
            .get(column.column)
            .map(|c| c.name.clone())
            .ok_or_else(|| CatalogError::ColumnNotFound {
                table: def.name.clone(),
                column: column.column.to_string(),
            })?;
        if index.columns[..i].iter().any(|c| c.column == column.column) {
            return Err(CatalogError::DuplicateIndexColumn {
                index: index.name.clone(),
                column: name,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::ColumnDef;
    use crate::types::DataType;
    use rowdex_store::MemoryStore;

    fn def(name: &str) -> TableDef {
        let columns = vec![ColumnDef::nullable("a", DataType::Integer)];
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

    fn index_on_a(name: &str) -> IndexDef {
        IndexDef {
            id: 0,
            name: name.to_string(),
            columns: vec![crate::column::KeyColumn {
                column: 0,
                desc: false,
            }],
            include: Vec::new(),
            unique: false,
            state: IndexState::Ready,
            salt_buckets: 0,
            constraint: false,
            filter: None,
        }
    }

    #[tokio::test]
    async fn indexes_are_created_built_dropped_and_survive_reopen() -> Result<()> {
        let store: Arc<dyn KvStore> = Arc::new(MemoryStore::new());
        let catalog = Catalog::open(store.clone()).await?;
        let table = catalog.create_table(def("t1")).await?;
        catalog.create_table(def("t2")).await?;
        let with_index = catalog.create_index("t1", index_on_a("i1")).await?;
        let index = with_index.index("i1").expect("index exists");
        assert_eq!(
            index.state,
            IndexState::Building,
            "new indexes start invisible"
        );
        assert!(index.id > table.id);
        assert!(with_index.schema_version > table.schema_version);
        assert!(matches!(
            catalog.create_index("t2", index_on_a("i1")).await,
            Err(CatalogError::IndexExists { .. })
        ));
        catalog.mark_index_ready("t1", "i1").await?;

        let reopened = Catalog::open(store.clone()).await?;
        let (owner, index) = reopened.find_index("i1").expect("index survives reopen");
        assert_eq!(owner.name, "t1");
        assert!(index.is_ready());
        let (after, dropped) = reopened.drop_index("i1").await?;
        assert_eq!(dropped.name, "i1");
        assert!(after.indexes.is_empty());
        assert!(matches!(
            reopened.drop_index("i1").await,
            Err(CatalogError::IndexNotFound { .. })
        ));
        // The name is free again, on any table.
        reopened.create_index("t2", index_on_a("i1")).await?;
        reopened.drop_table("t2").await?;
        assert!(reopened.find_index("i1").is_none());
        reopened.create_index("t1", index_on_a("i1")).await?;
        Ok(())
    }
}
