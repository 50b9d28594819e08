//! Foreign keys as a write sees them: which of its row changes need a referenced row found
//! (a new or changed referencing value) and which give up a value other rows may reference
//! (a deleted row, a changed referenced value), and the reads that settle both.
//!
//! A [`References`] is resolved when a writer begins, only for a table that takes part in a
//! foreign key. Each staged change is noted ([`References::note`]); what it needs is looked up
//! when the statement ends, in the statement's transaction, so that a statement may write a
//! row and the rows referencing it in either order, as PostgreSQL's end-of-statement checks
//! allow. A referenced row is found by a point get on the primary key or a probe of a UNIQUE
//! index; the referencing rows by a prefix scan of the referencing table's key or of an index
//! leading with its columns. What the store reads is validated at commit, so a concurrent
//! delete of a referenced row and insert of a row referencing it cannot both commit.
//!
//! The actions that write (CASCADE, SET NULL, SET DEFAULT) are carried out by the writer
//! (`write::row_writer`), through writers of the referencing tables in the same transaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use rowdex_catalog::{
    ForeignKeyDef, ReferencedAccess, ReferencingAccess, ReferentialAction, TableDef,
};
use rowdex_codec::Datum;
use rowdex_indexer::{layout, rows};
use rowdex_store::{Direction, KeyRange, KvRead};

use crate::db::DbState;
use crate::db::txn::SessionTxn;
use crate::error::{Error, Result};

/// Rows read at once from a prefix of referencing rows.
const PAGE: usize = 512;

/// A foreign key of the written table, with the table it references.
pub(crate) struct Outgoing {
    pub(crate) fk: ForeignKeyDef,
    pub(crate) table: Arc<TableDef>,
    /// The referencing columns (positions in the written table).
    pub(crate) columns: Vec<usize>,
    pub(crate) referenced: Arc<TableDef>,
    /// The referenced columns (positions in the referenced table), paired with `columns`.
    pub(crate) referenced_columns: Vec<usize>,
    access: ReferencedAccess,
}

/// A foreign key of another table (or of the written one) that references the written table.
pub(crate) struct Incoming {
    pub(crate) fk: ForeignKeyDef,
    pub(crate) table: Arc<TableDef>,
    /// The referencing table.
    pub(crate) referencing: Arc<TableDef>,
    /// The referencing columns (positions in the referencing table).
    pub(crate) columns: Vec<usize>,
    /// The referenced columns (positions in the written table), paired with `columns`.
    pub(crate) referenced_columns: Vec<usize>,
    referencing_access: ReferencingAccess,
    referenced_access: ReferencedAccess,
}

/// A value of referenced columns that a row change gave up: the row was deleted (`new` is
/// None) or its referenced columns changed to `new`.
pub(crate) struct Released {
    pub(crate) incoming: Arc<Incoming>,
    pub(crate) old: Vec<Datum>,
    pub(crate) new: Option<Vec<Datum>>,
}

impl Released {
    /// What the foreign key does about it.
    pub(crate) fn action(&self) -> ReferentialAction {
        match self.new {
            None => self.incoming.fk.on_delete,
            Some(_) => self.incoming.fk.on_update,
        }
    }
}

/// A value of referencing columns a row change wrote: the referenced row must exist.
pub(crate) struct Wanted {
    outgoing: Arc<Outgoing>,
    values: Vec<Datum>,
}

/// The foreign keys a writer's table takes part in, and what its changes so far need.
pub(crate) struct References {
    outgoing: Vec<Arc<Outgoing>>,
    incoming: Vec<Arc<Incoming>>,
    /// Referenced values to find, once each: keyed by foreign key and lookup bytes.
    wanted: BTreeMap<(usize, Vec<u8>), Wanted>,
    released: Vec<Released>,
}

/// What is left to check once the actions have run: every value wanted, and every value
/// given up under NO ACTION or RESTRICT.
#[derive(Default)]
pub(crate) struct Deferred {
    wanted: Vec<Wanted>,
    released: Vec<Released>,
}

impl References {
    /// The foreign keys `def` takes part in, resolved against the catalog as the writing
    /// transaction `txn` sees it; None for a table in none.
    pub(crate) fn resolve(
        db: &DbState,
        def: &TableDef,
        txn: Option<&Arc<SessionTxn>>,
    ) -> Result<Option<References>> {
        if !def.has_foreign_keys() {
            return Ok(None);
        }
        let tables = match txn {
            Some(txn) => txn.with_catalog(|edits| db.catalog.tables_in(edits)),
            None => db.catalog.tables(),
        };
        let by_id = |id: u32| tables.iter().find(|t| t.id == id).cloned();
        let this = by_id(def.id).unwrap_or_else(|| Arc::new(def.clone()));
        let mut outgoing = Vec::with_capacity(def.foreign_keys.len());
        for fk in &def.foreign_keys {
            let referenced = by_id(fk.referenced_table)
                .ok_or_else(|| broken(fk, def, "the referenced table is gone"))?;
            let resolved = Outgoing::new(fk, this.clone(), referenced)?;
            outgoing.push(Arc::new(resolved));
        }
        let mut incoming = Vec::new();
        for id in &def.referenced_by {
            let Some(referencing) = by_id(*id) else {
                continue;
            };
            for fk in referencing
                .foreign_keys
                .iter()
                .filter(|fk| fk.referenced_table == def.id)
            {
                let resolved = Incoming::new(fk, this.clone(), referencing.clone())?;
                incoming.push(Arc::new(resolved));
            }
        }
        Ok(Some(References {
            outgoing,
            incoming,
            wanted: BTreeMap::new(),
            released: Vec::new(),
        }))
    }

    /// Whether a row change may have to change rows of other tables (an action that writes).
    pub(crate) fn may_write_others(&self) -> bool {
        self.incoming
            .iter()
            .any(|i| i.fk.on_delete.writes() || i.fk.on_update.writes())
    }

    /// Notes a staged row change from `old` to `new`.
    pub(crate) fn note(&mut self, old: Option<&[Datum]>, new: Option<&[Datum]>) {
        if let Some(new) = new {
            for (position, outgoing) in self.outgoing.iter().enumerate() {
                let values = values_at(new, &outgoing.columns);
                // MATCH SIMPLE: a NULL in any referencing column asks for nothing.
                if values.iter().any(Datum::is_null) {
                    continue;
                }
                if old.is_some_and(|old| values_at(old, &outgoing.columns) == values) {
                    continue;
                }
                let lookup = outgoing.lookup_key(&values);
                self.wanted
                    .entry((position, lookup))
                    .or_insert_with(|| Wanted {
                        outgoing: outgoing.clone(),
                        values,
                    });
            }
        }
        if let Some(old) = old {
            for incoming in &self.incoming {
                let values = values_at(old, &incoming.referenced_columns);
                if values.iter().any(Datum::is_null) {
                    continue;
                }
                let new_values = new.map(|new| values_at(new, &incoming.referenced_columns));
                if new_values.as_ref() == Some(&values) {
                    continue;
                }
                self.released.push(Released {
                    incoming: incoming.clone(),
                    old: values,
                    new: new_values,
                });
            }
        }
    }

    /// Splits what the changes need: the values given up whose action writes (for the writer
    /// to carry out), and the rest, checked when every action has run.
    pub(crate) fn into_work(self) -> (Vec<Released>, Deferred) {
        let (acted, checked): (Vec<_>, Vec<_>) = self
            .released
            .into_iter()
            .partition(|released| released.action().writes());
        let deferred = Deferred {
            wanted: self.wanted.into_values().collect(),
            released: checked,
        };
        (acted, deferred)
    }
}

impl Deferred {
    /// Adds what another writer of the statement left to check.
    pub(crate) fn extend(&mut self, other: Deferred) {
        self.wanted.extend(other.wanted);
        self.released.extend(other.released);
    }

    /// Checks, through the statement's transaction, that every wanted value is referenced
    /// and that no value given up is still referenced (unless a row holds it again).
    pub(crate) async fn check(self, reader: &dyn KvRead, now: i64) -> Result<()> {
        for wanted in &self.wanted {
            if !wanted
                .outgoing
                .is_present(reader, &wanted.values, now)
                .await?
            {
                let outgoing = &wanted.outgoing;
                return Err(Error::ForeignKeyViolation {
                    table: outgoing.table.name.clone(),
                    constraint: outgoing.fk.name.clone(),
                    key: key_text(&outgoing.table, &outgoing.columns, &wanted.values),
                    referenced: outgoing.referenced.name.clone(),
                });
            }
        }
        for released in &self.released {
            let incoming = &released.incoming;
            if incoming.is_held(reader, &released.old, now).await? {
                continue;
            }
            let mut rows = incoming.referencing_rows(reader, &released.old, 1).await?;
            rows.retain(|row| {
                let referencing = &incoming.referencing;
                referencing.is_live(row, referencing.expiry_cutoff(now))
            });
            if !rows.is_empty() {
                return Err(Error::StillReferenced {
                    table: incoming.table.name.clone(),
                    constraint: incoming.fk.name.clone(),
                    referencing: incoming.referencing.name.clone(),
                    key: key_text(&incoming.table, &incoming.referenced_columns, &released.old),
                });
            }
        }
        Ok(())
    }
}

impl Outgoing {
    /// `fk` of `table`, referencing `referenced`; fails when a column is gone or no key or
    /// UNIQUE index of `referenced` finds a row by the referenced columns.
    pub(crate) fn new(
        fk: &ForeignKeyDef,
        table: Arc<TableDef>,
        referenced: Arc<TableDef>,
    ) -> Result<Self> {
        let (columns, referenced_columns, access) = resolved(fk, &table, &referenced)?;
        Ok(Outgoing {
            fk: fk.clone(),
            table,
            columns,
            referenced,
            referenced_columns,
            access,
        })
    }

    /// The referenced row's key (primary key) or UNIQUE index prefix holding `values`.
    fn lookup_key(&self, values: &[Datum]) -> Vec<u8> {
        let row = placed(&self.referenced, &self.referenced_columns, values);
        match self.access {
            ReferencedAccess::PrimaryKey => self.referenced.row_key_of(&row),
            ReferencedAccess::Unique(position) => {
                let index = &self.referenced.indexes[position];
                layout::value_prefix(index, index.columns.iter().map(|k| &row[k.column]))
            }
        }
    }

    /// The first referencing value (in the order of the referencing table's key or index)
    /// that no row of the referenced table holds: what adding the foreign key to a table
    /// with rows checks. Each distinct value is looked up once.
    pub(crate) async fn first_missing(
        &self,
        reader: &dyn KvRead,
        now: i64,
    ) -> Result<Option<Vec<Datum>>> {
        let table = &self.table;
        let access =
            table
                .referencing_access(&self.columns)
                .ok_or_else(|| Error::BadForeignKey {
                    table: table.name.clone(),
                    constraint: self.fk.name.clone(),
                    reason: "no key or index leads with the referencing columns".to_string(),
                })?;
        let (mut range, index) = match access {
            ReferencingAccess::KeyPrefix => (KeyRange::prefix(&table.prefix()), None),
            ReferencingAccess::Index(position) => {
                let index = &table.indexes[position];
                (KeyRange::prefix(&index.prefix()), Some(index))
            }
        };
        let mut last: Option<Vec<Datum>> = None;
        loop {
            let page = reader.scan_page(&range, Direction::Forward, PAGE).await?;
            for (key, value) in &page.entries {
                let row = match index {
                    Some(index) => layout::decode_entry(table, index, key, value)?.0,
                    None => table.decode_row(key, value)?,
                };
                let values = values_at(&row, &self.columns);
                if values.iter().any(Datum::is_null) || last.as_ref() == Some(&values) {
                    continue;
                }
                if !self.is_present(reader, &values, now).await? {
                    return Ok(Some(values));
                }
                last = Some(values);
            }
            match page.resume {
                Some(next) => range = next,
                None => return Ok(None),
            }
        }
    }

    /// Whether a live row of the referenced table holds `values`.
    pub(crate) async fn is_present(
        &self,
        reader: &dyn KvRead,
        values: &[Datum],
        now: i64,
    ) -> Result<bool> {
        present(
            reader,
            &self.referenced,
            self.access,
            &self.referenced_columns,
            values,
            now,
        )
        .await
    }
}

impl Incoming {
    fn new(fk: &ForeignKeyDef, table: Arc<TableDef>, referencing: Arc<TableDef>) -> Result<Self> {
        let (columns, referenced_columns, referenced_access) = resolved(fk, &referencing, &table)?;
        let referencing_access = referencing.referencing_access(&columns).ok_or_else(|| {
            broken(
                fk,
                &referencing,
                "no key or index leads with the referencing columns",
            )
        })?;
        Ok(Incoming {
            fk: fk.clone(),
            table,
            referencing,
            columns,
            referenced_columns,
            referencing_access,
            referenced_access,
        })
    }

    /// Whether a live row of the referenced (written) table holds `values` now.
    async fn is_held(&self, reader: &dyn KvRead, values: &[Datum], now: i64) -> Result<bool> {
        present(
            reader,
            &self.table,
            self.referenced_access,
            &self.referenced_columns,
            values,
            now,
        )
        .await
    }

    /// The rows of the referencing table whose referencing columns hold `values`, at most
    /// `limit` of them (every one for `usize::MAX`), in key or index order.
    pub(crate) async fn referencing_rows(
        &self,
        reader: &dyn KvRead,
        values: &[Datum],
        limit: usize,
    ) -> Result<Vec<Vec<Datum>>> {
        referencing_rows(
            reader,
            &self.referencing,
            self.referencing_access,
            &self.columns,
            values,
            limit,
        )
        .await
    }
}

/// `fk`'s columns in `referencing` and in `referenced` (positions), and how a referenced row
/// is found; fails when a column is gone or no key or UNIQUE index finds the row.
fn resolved(
    fk: &ForeignKeyDef,
    referencing: &TableDef,
    referenced: &TableDef,
) -> Result<(Vec<usize>, Vec<usize>, ReferencedAccess)> {
    let columns = referencing
        .positions_of_ids(&fk.columns)
        .ok_or_else(|| broken(fk, referencing, "a referencing column is gone"))?;
    let referenced_columns = referenced
        .positions_of_ids(&fk.referenced_columns)
        .ok_or_else(|| broken(fk, referencing, "a referenced column is gone"))?;
    let access = referenced
        .referenced_access(&referenced_columns)
        .ok_or_else(|| {
            broken(
                fk,
                referencing,
                "no primary key or UNIQUE index covers the referenced columns",
            )
        })?;
    Ok((columns, referenced_columns, access))
}

/// The error of a foreign key of `referencing` that no longer fits the tables.
fn broken(fk: &ForeignKeyDef, referencing: &TableDef, what: &str) -> Error {
    Error::BadForeignKey {
        table: referencing.name.clone(),
        constraint: fk.name.clone(),
        reason: what.to_string(),
    }
}

/// Whether a live row of `table` holds `values` in the columns at `columns`, found through
/// `access`.
async fn present(
    reader: &dyn KvRead,
    table: &TableDef,
    access: ReferencedAccess,
    columns: &[usize],
    values: &[Datum],
    now: i64,
) -> Result<bool> {
    let row = placed(table, columns, values);
    let cutoff = table.expiry_cutoff(now);
    match access {
        ReferencedAccess::PrimaryKey => {
            let found = rows::get_rows(reader, table, &[table.row_key_of(&row)]).await?;
            Ok(found
                .into_iter()
                .flatten()
                .any(|row| table.is_live(&row, cutoff)))
        }
        ReferencedAccess::Unique(position) => {
            let index = &table.indexes[position];
            let prefix = layout::value_prefix(index, index.columns.iter().map(|k| &row[k.column]));
            let page = reader
                .scan_page(&KeyRange::prefix(&prefix), Direction::Forward, 4)
                .await?;
            if cutoff.is_none() {
                return Ok(!page.entries.is_empty());
            }
            for (key, value) in &page.entries {
                let (_, pk) = layout::decode_entry(table, index, key, value)?;
                let found = rows::get_rows(reader, table, &[table.row_key(&pk)]).await?;
                if found
                    .into_iter()
                    .flatten()
                    .any(|row| table.is_live(&row, cutoff))
                {
                    return Ok(true);
                }
            }
            Ok(false)
        }
    }
}

/// The rows of `table` holding `values` in the columns at `columns`, found through `access`:
/// at most `limit`.
pub(crate) async fn referencing_rows(
    reader: &dyn KvRead,
    table: &TableDef,
    access: ReferencingAccess,
    columns: &[usize],
    values: &[Datum],
    limit: usize,
) -> Result<Vec<Vec<Datum>>> {
    let row = placed(table, columns, values);
    let n = columns.len();
    let mut found = Vec::new();
    match access {
        ReferencingAccess::KeyPrefix => {
            let leading: Vec<Datum> = table.key[..n]
                .iter()
                .map(|k| row[k.column].clone())
                .collect();
            let mut prefix = table.prefix();
            if table.is_salted() {
                prefix.extend(table.salt_of_leading(&leading));
            }
            let refs: Vec<&Datum> = leading.iter().collect();
            prefix.extend(table.encode_key_values(&refs));
            let mut range = KeyRange::prefix(&prefix);
            loop {
                let page = reader
                    .scan_page(&range, Direction::Forward, PAGE.min(limit - found.len()))
                    .await?;
                found.extend(rows::full_rows(reader, table, &page.entries).await?);
                match page.resume {
                    Some(next) if found.len() < limit => range = next,
                    _ => break,
                }
            }
        }
        ReferencingAccess::Index(position) => {
            let index = &table.indexes[position];
            let prefix =
                layout::value_prefix(index, index.columns[..n].iter().map(|k| &row[k.column]));
            let mut range = KeyRange::prefix(&prefix);
            loop {
                let page = reader
                    .scan_page(&range, Direction::Forward, PAGE.min(limit - found.len()))
                    .await?;
                let mut keys = Vec::with_capacity(page.entries.len());
                for (key, value) in &page.entries {
                    let (_, pk) = layout::decode_entry(table, index, key, value)?;
                    keys.push(table.row_key(&pk));
                }
                found.extend(
                    rows::get_rows(reader, table, &keys)
                        .await?
                        .into_iter()
                        .flatten(),
                );
                match page.resume {
                    Some(next) if found.len() < limit => range = next,
                    _ => break,
                }
            }
        }
    }
    Ok(found)
}

/// The values of `row` at `columns`.
fn values_at(row: &[Datum], columns: &[usize]) -> Vec<Datum> {
    columns.iter().map(|c| row[*c].clone()).collect()
}

/// A full-width row of `table` holding `values` at `columns` and NULL elsewhere.
fn placed(table: &TableDef, columns: &[usize], values: &[Datum]) -> Vec<Datum> {
    let mut row = vec![Datum::Null; table.columns.len()];
    for (column, value) in columns.iter().zip(values) {
        row[*column] = value.clone();
    }
    row
}

/// `(a, b)=(1, 2)`, as PostgreSQL's messages show a key.
pub(crate) fn key_text(table: &TableDef, columns: &[usize], values: &[Datum]) -> String {
    let names: Vec<&str> = columns
        .iter()
        .map(|c| table.columns[*c].name.as_str())
        .collect();
    let values: Vec<String> = values
        .iter()
        .map(|value| match value {
            Datum::Text(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    format!("({})=({})", names.join(", "), values.join(", "))
}
