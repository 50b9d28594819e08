//! Applying row changes together with their index entries, in one optimistic transaction.
//!
//! Every write statement goes through a [`RowWriter`]: it first reads the table's schema version
//! inside the transaction (so a statement planned against an older definition, say from before
//! a CREATE INDEX, conflicts instead of committing without the new index's entries), stages each
//! row change with the index mutations computed by `rowdex_indexer::index_mutations`, and at
//! commit checks UNIQUE indexes over the statement's final state (so a statement that swaps two
//! unique values is accepted, as the SQL standard asks). Inside a session transaction (BEGIN)
//! the statement's writes join that transaction instead, and reach the store at its COMMIT.

use std::collections::BTreeSet;
use std::sync::Arc;

use rowdex_catalog::{TableDef, keyspace};
use rowdex_codec::Datum;
use rowdex_indexer::{layout, mutations::index_mutations, rows};
use rowdex_store::{Direction, KeyRange, KvRead, Mutation, Transaction};

use crate::database::DbInner;
use crate::txn::SessionTxn;

use crate::{Error, Result};

/// Entries read for one UNIQUE value of an expiring table: one live holder and the expired
/// ones not yet purged (each commit that meets them removes them).
const MAX_HOLDERS: usize = 1024;

pub(crate) struct RowWriter<'a> {
    db: &'a DbInner,
    def: &'a TableDef,
    /// Rows added minus rows removed, for the row-count estimate.
    row_delta: i64,
    target: Target,
    deletes: Vec<Vec<u8>>,
    puts: Vec<(Vec<u8>, Vec<u8>)>,
    /// (index position, value prefix) of every new entry in a UNIQUE index.
    unique_probes: BTreeSet<(usize, Vec<u8>)>,
    /// The statement's time: the write time of every row it writes (tables with a TTL).
    now: i64,
    /// Where the table's rows expire at `now` (tables with a TTL).
    pub(crate) cutoff: Option<i64>,
    /// Primary keys given an older version by this statement: their history is trimmed to
    /// the table's VERSIONS at commit.
    versioned: BTreeSet<Vec<u8>>,
}

/// Where a statement's writes go.
enum Target {
    /// A transaction of the statement's own, committed when it ends.
    Own(Box<dyn Transaction>),
    /// The session's open transaction (its statement savepoint undoes a failed statement).
    Session(Arc<SessionTxn>),
}

impl<'a> RowWriter<'a> {
    /// Starts a statement's writes to `def`: in the session transaction `txn` when one is open.
    pub(crate) async fn begin(
        db: &'a DbInner,
        def: &'a TableDef,
        txn: Option<&Arc<SessionTxn>>,
    ) -> Result<RowWriter<'a>> {
        let target = match txn {
            Some(txn) => Target::Session(txn.clone()),
            None => Target::Own(db.store.begin().await?),
        };
        let now = db.now_micros();
        let writer = RowWriter {
            db,
            def,
            row_delta: 0,
            target,
            deletes: Vec::new(),
            puts: Vec::new(),
            unique_probes: BTreeSet::new(),
            now,
            cutoff: def.expiry_cutoff(now),
            versioned: BTreeSet::new(),
        };
        let stored = writer
            .tx()
            .get(&keyspace::schema_version_key(def.id))
            .await?;
        let current = stored
            .as_deref()
            .and_then(|bytes| <[u8; 4]>::try_from(bytes).ok())
            .map(u32::from_be_bytes);
        if current != Some(def.schema_version) {
            return Err(Error::SchemaChanged {
                table: def.name.clone(),
            });
        }
        Ok(writer)
    }

    /// Reads through the transaction (its own applied writes included).
    pub(crate) fn tx(&self) -> &dyn KvRead {
        match &self.target {
            Target::Own(tx) => tx.as_ref(),
            Target::Session(txn) => txn.as_ref(),
        }
    }

    /// The stored row under `key`, decoded (every column family).
    pub(crate) async fn stored_row(&self, key: &[u8]) -> Result<Option<Vec<Datum>>> {
        let mut found = rows::get_rows(self.tx(), self.def, &[key.to_vec()]).await?;
        Ok(found.pop().flatten())
    }

    /// The stored rows under `keys`, which must be distinct and not yet written by this
    /// statement, in the order asked. Loading new rows is the common case, so the span of the
    /// keys is first probed with one scan: when it holds nothing, no key needs a read of its
    /// own (and the transaction remembers one empty range instead of a fingerprint per key).
    /// Otherwise the keys are read in one multi-get.
    pub(crate) async fn stored_rows(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<Datum>>>> {
        let (Some(lowest), Some(highest)) = (keys.iter().min(), keys.iter().max()) else {
            return Ok(Vec::new());
        };
        // The smallest key above `highest`, so the span includes it.
        let mut past_highest = highest.clone();
        past_highest.push(0);
        let span = KeyRange::new(lowest.clone(), Some(past_highest));
        let probe = self.tx().scan_page(&span, Direction::Forward, 1).await?;
        if probe.entries.is_empty() {
            return Ok(vec![None; keys.len()]);
        }
        Ok(rows::get_rows(self.tx(), self.def, keys).await?)
    }

    /// Other stored rows that hold `row`'s values in some UNIQUE index. Expired rows are
    /// among them: the caller removes those (see [`RowWriter::is_live`]).
    pub(crate) async fn unique_clashes(&self, row: &[Datum]) -> Result<Vec<Vec<Datum>>> {
        let def = self.def;
        let own_key = def.row_key_of(row);
        let mut clashing: Vec<(Vec<u8>, Vec<Datum>)> = Vec::new();
        for index in &def.indexes {
            let Some(prefix) = layout::unique_prefix(index, row) else {
                continue;
            };
            // Unique, so at most one other entry, plus possibly the row's own.
            let page = self
                .tx()
                .scan_page(&KeyRange::prefix(&prefix), Direction::Forward, 4)
                .await?;
            for (key, value) in &page.entries {
                let (_, pk) = layout::decode_entry(def, index, key, value)?;
                let row_key = def.row_key(&pk);
                if row_key == own_key || clashing.iter().any(|(k, _)| *k == row_key) {
                    continue;
                }
                if let Some(other) = self.stored_row(&row_key).await? {
                    clashing.push((row_key, other));
                }
            }
        }
        Ok(clashing.into_iter().map(|(_, row)| row).collect())
    }

    /// Whether a stored row is still there for SQL: not expired at the statement's time.
    pub(crate) fn is_live(&self, row: &[Datum]) -> bool {
        self.def.is_live(row, self.cutoff)
    }

    /// Stages the change of one row from `old` to `new` (None = absent) with its index entries.
    /// In a table with a TTL, `new` is written with the statement's time.
    pub(crate) fn stage(&mut self, old: Option<&[Datum]>, new: Option<&[Datum]>) {
        let stamped = match (self.def.written_at_column(), new) {
            (Some(column), Some(row)) => {
                let mut row = row.to_vec();
                row[column] = Datum::Timestamp(self.now);
                Some(row)
            }
            _ => None,
        };
        let new = stamped.as_deref().or(new);
        let def = self.def;
        self.row_delta += i64::from(new.is_some()) - i64::from(old.is_some());
        let old_key = old.map(|row| def.row_key_of(row));
        let new_key = new.map(|row| def.row_key_of(row));
        if let (Some(old_key), Some(old)) = (&old_key, old)
            && def.keeps_history()
            && def.is_live(old, self.cutoff)
        {
            // The old row becomes an older version; a row that leaves its key leaves a
            // deletion marker after it. (An expired row is invisible at every time: no
            // version of it is kept.)
            let pk = def.pk_bytes(old_key).to_vec();
            let written = match def.written_at_column().map(|c| &old[c]) {
                Some(Datum::Timestamp(at)) => *at,
                _ => 0,
            };
            self.puts
                .push((def.history_key(&pk, written), def.encode_value(old)));
            if new_key.as_ref() != Some(old_key) {
                self.puts.push((def.history_key(&pk, self.now), Vec::new()));
            }
            self.versioned.insert(pk);
        }
        let moved = old_key.is_some() && new_key != old_key;
        if let (Some(old_key), true) = (&old_key, moved) {
            let pk = def.pk_bytes(old_key);
            self.deletes.extend(
                def.family_numbers()
                    .map(|family| def.family_row_key(family, pk)),
            );
        }
        if let Some(row) = new {
            // An entry whose bytes stay the same is not written again: an UPDATE of one
            // family's columns writes that family's entry only.
            let unchanged = old.filter(|_| !moved).map(|old| def.row_entries(old));
            for (i, entry) in def.row_entries(row).into_iter().enumerate() {
                if unchanged.as_ref().and_then(|old| old.get(i)) != Some(&entry) {
                    self.puts.push(entry);
                }
            }
        }
        for mutation in index_mutations(def, old, new) {
            match mutation {
                Mutation::Put { key, value } => self.puts.push((key, value)),
                Mutation::Delete { key } => self.deletes.push(key),
            }
        }
        if let Some(row) = new {
            for (position, index) in def.indexes.iter().enumerate() {
                let Some(prefix) = layout::unique_prefix(index, row) else {
                    continue;
                };
                let unchanged = old.is_some_and(|old| {
                    layout::entry_key(def, index, old) == layout::entry_key(def, index, row)
                });
                if !unchanged {
                    self.unique_probes.insert((position, prefix));
                }
            }
        }
    }

    /// Applies what is staged to the transaction: every delete before any put, so that a row
    /// (or entry) moving onto a key another row of the statement just left is kept.
    pub(crate) async fn apply(&mut self) -> Result<()> {
        match &mut self.target {
            Target::Own(tx) => {
                for key in self.deletes.drain(..) {
                    tx.delete(key);
                }
                for (key, value) in self.puts.drain(..) {
                    tx.put(key, value);
                }
            }
            Target::Session(txn) => {
                txn.apply(self.deletes.drain(..), self.puts.drain(..))
                    .await?
            }
        }
        Ok(())
    }

    /// Keeps the newest `versions - 1` older versions of every row this statement gave one.
    async fn trim_history(&mut self) -> Result<()> {
        let keep = usize::try_from(self.def.versions.saturating_sub(1)).unwrap_or(usize::MAX);
        for pk in std::mem::take(&mut self.versioned) {
            let mut range = KeyRange::prefix(&self.def.history_prefix_of(&pk));
            let mut seen = 0usize;
            loop {
                let page = self
                    .tx()
                    .scan_page(&range, Direction::Forward, keep + 16)
                    .await?;
                for (key, _) in &page.entries {
                    seen += 1;
                    if seen > keep {
                        self.deletes.push(key.clone());
                    }
                }
                match page.resume {
                    Some(next) => range = next,
                    None => break,
                }
            }
        }
        self.apply().await
    }

    /// Checks UNIQUE indexes against the statement's final state, then commits. An expired row
    /// holding a unique value gives it up: it is removed, with its entries.
    pub(crate) async fn commit(mut self) -> Result<()> {
        self.apply().await?;
        let probes = std::mem::take(&mut self.unique_probes);
        for (position, prefix) in &probes {
            let index = &self.def.indexes[*position];
            let page = self
                .tx()
                .scan_page(&KeyRange::prefix(prefix), Direction::Forward, 2)
                .await?;
            if page.entries.len() < 2 {
                continue;
            }
            let mut live = Vec::new();
            if self.cutoff.is_some() {
                // Rare (an expiring table, a value taken twice): read every holder.
                let all = self
                    .tx()
                    .scan_page(&KeyRange::prefix(prefix), Direction::Forward, MAX_HOLDERS)
                    .await?;
                for (key, value) in &all.entries {
                    let (row, pk) = layout::decode_entry(self.def, index, key, value)?;
                    if self.is_live(&row) {
                        live.push(row);
                    } else if let Some(expired) = self.stored_row(&self.def.row_key(&pk)).await? {
                        self.stage(Some(&expired), None);
                    }
                }
                self.apply().await?;
            } else {
                for (key, value) in &page.entries {
                    live.push(layout::decode_entry(self.def, index, key, value)?.0);
                }
            }
            if let [first, _, ..] = live.as_slice() {
                return Err(Error::UniqueViolation {
                    index: index.name.clone(),
                    table: self.def.name.clone(),
                    value: rowdex_indexer::maintain::values_text(self.def, index, first),
                });
            }
        }
        self.trim_history().await?;
        match self.target {
            Target::Own(tx) => {
                tx.commit().await?;
                self.db.stats.add(self.def.id, self.row_delta);
            }
            Target::Session(txn) => txn.add_rows(self.def.id, self.row_delta).await?,
        }
        Ok(())
    }
}
