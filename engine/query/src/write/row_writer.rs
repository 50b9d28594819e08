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
//!
//! A table in a foreign key has its changes noted (`write::references`); at commit the
//! actions that write (CASCADE, SET NULL, SET DEFAULT) are carried out round by round, each
//! round through writers of the referencing tables joining the same transaction (so a chain
//! of cascades never recurses), and then every referenced value is looked for and every value
//! given up under NO ACTION or RESTRICT is checked to be unreferenced. A writer of a table
//! whose foreign keys write to other tables always works in a session transaction (one of
//! its own outside a block), since the other writers join it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rowdex_catalog::{ReferentialAction, TableDef, keyspace};
use rowdex_codec::Datum;
use rowdex_indexer::mutations::row_change;
use rowdex_indexer::{layout, rows};
use rowdex_store::{Direction, KeyRange, KvRead, Transaction};

use crate::db::DbState;
use crate::db::characteristics::Characteristics;
use crate::db::commit_durability;
use crate::db::txn::{GuardedTxn, SessionTxn, StatementTxn};
use crate::error::{Error, Result};
use crate::write::constraints::{CHECK_BATCH, Checks, default_now};
use crate::write::generated::fill_generated_in;
use crate::write::references::{Deferred, References, Released};

/// Entries read for one UNIQUE value of an expiring table: one live holder and the expired
/// ones not yet purged (each commit that meets them removes them).
const MAX_HOLDERS: usize = 1024;

/// Rounds of foreign-key actions (a cascade into a table, from there into the next, ...)
/// before a statement gives up: far beyond any schema's chain, short of running forever.
const MAX_ACTION_ROUNDS: usize = 100_000;

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
    /// The foreign keys the table takes part in, with what the staged changes need.
    references: Option<References>,
}

/// Where a statement's writes go.
enum Target {
    /// A transaction of the statement's own, committed when it ends.
    Own(Box<dyn Transaction>),
    /// The session's open transaction, joined (its statement savepoint undoes a failed
    /// statement), read through its guarded reads: what the writer reads is validated at
    /// COMMIT at every isolation level.
    Joined(GuardedTxn),
    /// A session transaction of the statement's own (outside a block, for a table whose
    /// foreign keys write to other tables), committed when it ends.
    Statement(StatementTxn, GuardedTxn),
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
        // HBase's READONLY: the rows are not written (DDL, indexes and PURGE go on).
        if def.read_only {
            return Err(Error::ReadOnlyTable {
                table: def.name.clone(),
            });
        }
        let references = References::resolve(db, def, txn)?;
        let asked = def.durability.unwrap_or(db.store.capabilities().durability);
        let mut target = match txn {
            Some(txn) => Target::Joined(GuardedTxn { txn: txn.clone() }),
            None if references
                .as_ref()
                .is_some_and(References::may_write_others) =>
            {
                let begun = StatementTxn::begin(db, None, Characteristics::default(), None);
                let statement = Box::pin(begun).await?;
                let guarded = GuardedTxn {
                    txn: statement.txn.clone(),
                };
                Target::Statement(statement, guarded)
            }
            None => Target::Own(db.store.begin().await?),
        };
        // The commit is at least as durable as this table asks (see `db::commit_durability`).
        match &mut target {
            Target::Own(tx) => commit_durability::ask(tx.as_mut(), asked),
            Target::Joined(guarded) | Target::Statement(_, guarded) => {
                guarded.txn.ask_durability(asked).await?;
            }
        }
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
            references,
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
            Target::Joined(guarded) | Target::Statement(_, guarded) => guarded,
        }
    }

    /// The session transaction the writes join, if they do.
    fn session_txn(&self) -> Option<&Arc<SessionTxn>> {
        match &self.target {
            Target::Own(_) => None,
            Target::Joined(guarded) | Target::Statement(_, guarded) => Some(&guarded.txn),
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
        if let Some(references) = &mut self.references {
            references.note(old, new);
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
        rows: &[Vec<Datum>],
        ascending: Vec<(Vec<u8>, Vec<u8>)>,
        unique_probes: BTreeSet<(usize, Vec<u8>)>,
    ) -> Result<()> {
        self.apply().await?;
        if let Some(references) = &mut self.references {
            for row in rows {
                references.note(None, Some(row));
            }
        }
        self.row_delta += i64::try_from(rows.len()).unwrap_or(i64::MAX);
        self.unique_probes.extend(unique_probes);
        match &mut self.target {
            Target::Own(tx) => tx.put_run(ascending),
            Target::Joined(_) | Target::Statement(..) => {
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
            Target::Joined(GuardedTxn { txn }) | Target::Statement(_, GuardedTxn { txn }) => {
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

    /// Checks UNIQUE indexes and foreign keys against the statement's final state (carrying
    /// out the foreign keys' actions first), then commits.
    pub(crate) async fn commit(mut self) -> Result<()> {
        self.settle().await?;
        if let Some(references) = self.references.take() {
            // Boxed: the actions hold other writers' futures, which every statement's commit
            // would otherwise carry in its frame.
            Box::pin(self.settle_references(references)).await?;
        }
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
            Target::Statement(statement, GuardedTxn { txn }) => {
                txn.add_rows(self.def.id, self.row_delta).await?;
                Box::pin(statement.finish(self.db)).await?;
            }
        }
        Ok(())
    }

    /// Ends the writes of a writer that joined another's transaction to carry out a foreign
    /// key's action: checks its UNIQUE indexes and returns what its own changes need (more
    /// actions, and checks for the end of the statement).
    async fn finish_joined(mut self) -> Result<(Vec<Released>, Deferred)> {
        self.settle().await?;
        let Target::Joined(GuardedTxn { txn }) = &self.target else {
            return Err(Error::WriteConflict);
        };
        txn.add_rows(self.def.id, self.row_delta).await?;
        Ok(self
            .references
            .take()
            .map(References::into_work)
            .unwrap_or_default())
    }

    /// Carries out the foreign keys' actions, then checks what they leave to check.
    async fn settle_references(&mut self, references: References) -> Result<()> {
        let deferred = self.act_on_references(references).await?;
        deferred.check(self.tx(), self.now).await
    }

    /// Carries out the actions that write for the values `references` saw given up, round by
    /// round (the rows one round changes may give up values in turn); returns what is left to
    /// check once they have all run.
    async fn act_on_references(&mut self, references: References) -> Result<Deferred> {
        let (mut acting, mut deferred) = references.into_work();
        let mut rounds = 0;
        while !acting.is_empty() {
            rounds += 1;
            let Some(txn) = self
                .session_txn()
                .cloned()
                .filter(|_| rounds <= MAX_ACTION_ROUNDS)
            else {
                return Err(Error::BadForeignKey {
                    table: self.def.name.clone(),
                    constraint: acting[0].incoming.fk.name.clone(),
                    reason: format!(
                        "its actions did not settle within {MAX_ACTION_ROUNDS} rounds of cascades"
                    ),
                });
            };
            let mut by_table: BTreeMap<u32, Vec<Released>> = BTreeMap::new();
            for released in acting.drain(..) {
                let table = released.incoming.referencing.id;
                by_table.entry(table).or_default().push(released);
            }
            for (_, group) in by_table {
                let referencing = group[0].incoming.referencing.clone();
                let mut writer =
                    RowWriter::begin_at(self.db, &referencing, Some(&txn), self.now).await?;
                for released in &group {
                    // Rows an earlier value of the round changed are read as changed.
                    writer.apply().await?;
                    let rows = released
                        .incoming
                        .referencing_rows(writer.tx(), &released.old, usize::MAX)
                        .await?;
                    let mut news = rows
                        .iter()
                        .map(|row| acted_on(&referencing, released, row))
                        .collect::<Result<Vec<_>>>()?;
                    fill_generated_in(&referencing, news.iter_mut().flatten())?;
                    for (row, new) in rows.iter().zip(&news) {
                        writer.stage(Some(row), new.as_deref());
                    }
                }
                let (more, left) = writer.finish_joined().await?;
                acting.extend(more);
                deferred.extend(left);
            }
        }
        Ok(deferred)
    }

    /// Checks CHECK constraints and UNIQUE indexes against the statement's final state and
    /// trims the history of the rows given older versions. An expired row holding a unique
    /// value gives it up: it is removed, with its entries.
    async fn settle(&mut self) -> Result<()> {
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
        self.trim_history().await
    }
}

/// The row `row` of the referencing table becomes under the action for `released`: None
/// (deleted), or with its referencing columns given the new values, NULL or their DEFAULTs
/// (its generated columns are computed by the caller, for all of an action's rows at once).
fn acted_on(
    referencing: &TableDef,
    released: &Released,
    row: &[Datum],
) -> Result<Option<Vec<Datum>>> {
    let columns = &released.incoming.columns;
    let mut new_row = row.to_vec();
    match (released.action(), &released.new) {
        (ReferentialAction::Cascade, None) => return Ok(None),
        (ReferentialAction::Cascade, Some(values)) => {
            for (column, value) in columns.iter().zip(values) {
                new_row[*column] = value.clone();
            }
        }
        (ReferentialAction::SetNull, _) => {
            for column in columns {
                let def = &referencing.columns[*column];
                if !def.nullable {
                    return Err(Error::NotNullViolation {
                        table: referencing.name.clone(),
                        column: def.name.clone(),
                    });
                }
                new_row[*column] = Datum::Null;
            }
        }
        (ReferentialAction::SetDefault, _) => {
            for column in columns {
                let def = &referencing.columns[*column];
                let value = default_now(referencing, def)?;
                if value.is_null() && !def.nullable {
                    return Err(Error::NotNullViolation {
                        table: referencing.name.clone(),
                        column: def.name.clone(),
                    });
                }
                new_row[*column] = value;
            }
        }
        (ReferentialAction::NoAction | ReferentialAction::Restrict, _) => {
            return Ok(Some(new_row));
        }
    }
    Ok(Some(new_row))
}
