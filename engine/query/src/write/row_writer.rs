//! Applying row changes together with their index entries, in one optimistic transaction.
//!
//! Every write statement goes through a [`RowWriter`]: it first reads the table's schema version
//! inside the transaction (so a statement planned against an older definition, say from before
//! a CREATE INDEX, conflicts instead of committing without the new index's entries), stages each
//! row change as `rowdex_indexer::mutations::row_change` computes it, and at
//! commit checks UNIQUE indexes over the statement's final state (so a statement that swaps two
//! unique values is accepted, as the SQL standard asks) and every new row against the table's
//! CHECK constraints. Inside a session transaction (BEGIN)
//! the statement's writes join that transaction instead, and reach the store at its COMMIT.

use std::collections::BTreeSet;
use std::sync::Arc;

use rowdex_catalog::{TableDef, keyspace};
use rowdex_codec::Datum;
use rowdex_indexer::mutations::row_change;
use rowdex_indexer::{layout, rows};
use rowdex_store::{Direction, KeyRange, KvRead, Transaction};

use crate::db::DbState;
use crate::db::txn::{GuardedTxn, SessionTxn};
use crate::error::{Error, Result};
use crate::write::constraints::{CHECK_BATCH, Checks};

/// Entries read for one UNIQUE value of an expiring table: one live holder and the expired
/// ones not yet purged (each commit that meets them removes them).
const MAX_HOLDERS: usize = 1024;

pub(crate) struct RowWriter<'a> {
    db: &'a DbState,
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
    /// The table's CHECK constraints, if it has any, and the new rows staged since they were
    /// last checked (checked in batches, the last at commit).
    checks: Option<Checks>,
    unchecked: Vec<Vec<Datum>>,
}

/// Where a statement's writes go.
enum Target {
    /// A transaction of the statement's own, committed when it ends.
    Own(Box<dyn Transaction>),
    /// The session's open transaction, joined (its statement savepoint undoes a failed
    /// statement), read through its guarded reads: what the writer reads is validated at
    /// COMMIT at every isolation level.
    Joined(GuardedTxn),
}

impl<'a> RowWriter<'a> {
    /// Starts a statement's writes to `def`: in the session transaction `txn` when one is open.
    pub(crate) async fn begin(
        db: &'a DbState,
        def: &'a TableDef,
        txn: Option<&Arc<SessionTxn>>,
    ) -> Result<RowWriter<'a>> {
        Self::begin_at(db, def, txn, db.now_micros()).await
    }

    /// Like [`RowWriter::begin`], for a statement whose time is `now` (rows encoded before
    /// the transaction began carry that time).
    pub(crate) async fn begin_at(
        db: &'a DbState,
        def: &'a TableDef,
        txn: Option<&Arc<SessionTxn>>,
        now: i64,
    ) -> Result<RowWriter<'a>> {
        let target = match txn {
            Some(txn) => Target::Joined(GuardedTxn { txn: txn.clone() }),
            None => Target::Own(db.store.begin().await?),
        };
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
            checks: Checks::compile(def)?,
            unchecked: Vec::new(),
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

    /// Reads through the transaction (its own applied writes included), validated at COMMIT.
    pub(crate) fn tx(&self) -> &dyn KvRead {
        match &self.target {
            Target::Own(tx) => tx.as_ref(),
            Target::Joined(guarded) => guarded,
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
        let own_key = self.def.row_key_of(row);
        let mut clashing: Vec<(Vec<u8>, Vec<Datum>)> = Vec::new();
        for position in 0..self.def.indexes.len() {
            for (row_key, other) in self.unique_holders(position, row).await? {
                if row_key != own_key && !clashing.iter().any(|(k, _)| *k == row_key) {
                    clashing.push((row_key, other));
                }
            }
        }
        Ok(clashing.into_iter().map(|(_, row)| row).collect())
    }

    /// The stored rows (with their row keys) that hold `row`'s values in the UNIQUE index at
    /// `position` of the table's indexes, `row`'s own stored version included; none for an
    /// index that is not UNIQUE or a value with a NULL. Expired rows are among them.
    pub(crate) async fn unique_holders(
        &self,
        position: usize,
        row: &[Datum],
    ) -> Result<Vec<(Vec<u8>, Vec<Datum>)>> {
        let def = self.def;
        let Some(index) = def.indexes.get(position) else {
            return Ok(Vec::new());
        };
        let Some(prefix) = layout::unique_prefix(index, row) else {
            return Ok(Vec::new());
        };
        // Unique, so at most one other entry, plus possibly the row's own.
        let page = self
            .tx()
            .scan_page(&KeyRange::prefix(&prefix), Direction::Forward, 4)
            .await?;
        let mut holders: Vec<(Vec<u8>, Vec<Datum>)> = Vec::new();
        for (key, value) in &page.entries {
            let (_, pk) = layout::decode_entry(def, index, key, value)?;
            let row_key = def.row_key(&pk);
            if holders.iter().any(|(k, _)| *k == row_key) {
                continue;
            }
            if let Some(holder) = self.stored_row(&row_key).await? {
                holders.push((row_key, holder));
            }
        }
        Ok(holders)
    }

    /// Whether a stored row is still there for SQL: not expired at the statement's time.
    pub(crate) fn is_live(&self, row: &[Datum]) -> bool {
        self.def.is_live(row, self.cutoff)
    }

    /// Stages the change of one row from `old` to `new` (None = absent) with its index entries
    /// (see `row_change`). In a table with a TTL, `new` is written with the statement's time.
    pub(crate) fn stage(&mut self, old: Option<&[Datum]>, new: Option<&[Datum]>) {
        if let (Some(_), Some(new)) = (&self.checks, new) {
            self.unchecked.push(new.to_vec());
        }
        let change = row_change(self.def, old, new, self.now, self.cutoff);
        self.row_delta += i64::from(new.is_some()) - i64::from(old.is_some());
        self.deletes.extend(change.deletes);
        self.puts.extend(change.puts);
        self.versioned.extend(change.versioned);
        self.unique_probes.extend(change.unique_probes);
    }

    /// Stages the insert of `rows` new rows whose row and index entries are `ascending` (sorted,
    /// each key once, none stored: see `write::load`), with the UNIQUE index entries among them
    /// in `unique_probes`, checked at commit like any other.
    pub(crate) async fn stage_new_run(
        &mut self,
        rows: usize,
        ascending: Vec<(Vec<u8>, Vec<u8>)>,
        unique_probes: BTreeSet<(usize, Vec<u8>)>,
    ) -> Result<()> {
        self.apply().await?;
        self.row_delta += i64::try_from(rows).unwrap_or(i64::MAX);
        self.unique_probes.extend(unique_probes);
        match &mut self.target {
            Target::Own(tx) => tx.put_run(ascending),
            Target::Joined(_) => {
                self.puts = ascending;
                self.apply().await?;
            }
        }
        Ok(())
    }

    /// Applies what is staged to the transaction: every delete before any put, so that a row
    /// (or entry) moving onto a key another row of the statement just left is kept.
    pub(crate) async fn apply(&mut self) -> Result<()> {
        if self.unchecked.len() >= CHECK_BATCH {
            self.check_staged()?;
        }
        match &mut self.target {
            Target::Own(tx) => {
                for key in self.deletes.drain(..) {
                    tx.delete(key);
                }
                for (key, value) in self.puts.drain(..) {
                    tx.put(key, value);
                }
            }
            Target::Joined(GuardedTxn { txn }) => {
                txn.apply(self.deletes.drain(..), self.puts.drain(..))
                    .await?
            }
        }
        Ok(())
    }

    /// Checks the new rows staged since the last check against the table's CHECK constraints.
    fn check_staged(&mut self) -> Result<()> {
        let rows = std::mem::take(&mut self.unchecked);
        match &self.checks {
            Some(checks) => checks.check(self.def, &rows),
            None => Ok(()),
        }
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
        self.check_staged()?;
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
            Target::Own(mut tx) => {
                if let Some((key, value)) = self.db.stats.delta_entry(self.def.id, self.row_delta) {
                    tx.put(key, value);
                }
                tx.commit().await?;
                let store = self.db.store.as_ref();
                self.db
                    .stats
                    .committed(store, self.def.id, self.row_delta)
                    .await;
            }
            Target::Joined(GuardedTxn { txn }) => txn.add_rows(self.def.id, self.row_delta).await?,
        }
        Ok(())
    }
}
