//! `SELECT ... FOR UPDATE | SHARE [OF ...] [NOWAIT | SKIP LOCKED]`: a query whose rows are
//! locked for the transaction before they are returned.
//!
//! The query runs with the primary key of every locked table appended to its select list (the
//! native executor takes it where it takes the query). Each row's keys are then locked: under
//! SKIP LOCKED one row at a time in the result's order, a row whose key another transaction
//! holds left out; otherwise every key found, in key order, waiting (within `lock_timeout`,
//! `statement_timeout` and a cancel) or failing at once (NOWAIT). The locked rows are then
//! compared with the statement's snapshot: one that changed meanwhile moves a READ COMMITTED
//! transaction to a fresh snapshot and the query runs again (so what it returns is the newest
//! committed version of each row, and a row that stopped matching is gone: PostgreSQL's
//! re-check), and is a serialization failure (40001) at the other levels. Under SKIP LOCKED a
//! LIMIT counts the rows returned: the query asks for more rows while too many were skipped.
//! Outside a transaction block the statement takes its locks in a transaction of its own,
//! which ends with it (a NOWAIT still fails, a wait still waits, as in PostgreSQL).

use std::sync::Arc;

use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, JoinOperator, LimitClause, Query, SelectItem, SetExpr, Statement, TableFactor,
    Value,
};
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::locks::{LockMode, LockWait, Locked};

use crate::db::row_locks::RowsLocked;
use crate::db::statement_stop::StatementStop;
use crate::df::context::{context_with, new_context, run_query};
use crate::df::rules::OptimizerRules;
use crate::error::{Error, Result};
use crate::execute::query::run_select;
use crate::output::Output;
use crate::session::Session;
use crate::sql::hints::QueryHints;
use crate::sql::locking::{Held, RowLocking};
use crate::sql::names::{ident_name, object_name};
use crate::values::{assign, datum_from_array};

/// Times a READ COMMITTED locking read runs again after a row it locked turned out changed
/// (as `update_delete`'s finding does); past this, a serialization failure.
const FIND_ATTEMPTS: usize = 64;

/// The most rows one locking read locks: each lock is held in memory until the transaction
/// ends (PostgreSQL keeps row locks in the rows; rowdex in its lock table).
const MAX_EXPLICIT_LOCKS: usize = 1_000_000;

/// A table of the FROM list the clauses lock.
struct Target {
    def: Arc<TableDef>,
    mode: LockMode,
    held: Held,
    /// Where its key columns are among the columns appended to the query's own, in key order.
    key_offsets: Vec<usize>,
}

/// Runs `query` (the statement's own), its rows locked as `locking` says.
pub(crate) async fn run(
    session: &Session,
    statement: &Statement,
    query: &Query,
    locking: &RowLocking,
    hints: &QueryHints,
) -> Result<Output> {
    if session.transaction_characteristics().read_only {
        return Err(Error::ReadOnlyTransaction {
            statement: query.locks.first().map_or_else(
                || "SELECT FOR UPDATE".to_string(),
                |lock| format!("SELECT FOR {}", lock.lock_type),
            ),
        });
    }
    let tables = from_tables(session, query, locking)?;
    // The query as it runs: the locked tables' keys appended, the clauses gone.
    let mut locked_query = query.clone();
    locked_query.locks.clear();
    let mut targets = Vec::with_capacity(tables.len());
    let mut appended = Vec::new();
    let mut exposed = None;
    for (
        number,
        Named {
            qualifier,
            def,
            mode,
            held,
        },
    ) in tables.into_iter().enumerate()
    {
        let mut key_offsets = Vec::with_capacity(def.key.len());
        for key in &def.key {
            let column = &def.columns[key.column];
            // A table without a declared key is keyed by a hidden row id, which only a context
            // built to expose it (for one table) can read.
            if column.hidden
                && exposed
                    .replace((def.name.clone(), column.name.clone()))
                    .is_some()
            {
                return Err(Error::Unsupported {
                    what: "FOR UPDATE of two tables without a PRIMARY KEY".to_string(),
                });
            }
            key_offsets.push(appended.len());
            appended.push(SelectItem::ExprWithAlias {
                expr: Expr::CompoundIdentifier(vec![
                    qualifier.clone(),
                    Ident::with_quote('"', column.name.clone()),
                ]),
                alias: Ident::with_quote('"', format!("__rowdex_lock_{number}_{}", key.column)),
            });
        }
        targets.push(Target {
            def,
            mode,
            held,
            key_offsets,
        });
    }
    let appended_columns = appended.len();
    if let SetExpr::Select(select) = locked_query.body.as_mut() {
        select.projection.extend(appended);
    }
    let reading = Reading {
        session,
        statement,
        hints,
        exposed,
        appended_columns,
    };
    reading.locked_rows(locked_query, &targets, locking).await
}

/// A table of the FROM list a clause names, as the query names it.
struct Named {
    /// What the query qualifies its columns with (its alias, or its name's last part).
    qualifier: Ident,
    def: Arc<TableDef>,
    mode: LockMode,
    held: Held,
}

/// The tables of the query's FROM list the clauses lock.
fn from_tables(session: &Session, query: &Query, locking: &RowLocking) -> Result<Vec<Named>> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Err(Error::Unsupported {
            what: "FOR UPDATE of a set operation".to_string(),
        });
    };
    // Each factor, with whether an outer join may fill it with NULLs.
    let mut factors: Vec<(&TableFactor, bool)> = Vec::new();
    for from in &select.from {
        let first = factors.len();
        factors.push((&from.relation, false));
        for join in &from.joins {
            let (left, right) = match &join.join_operator {
                JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => (false, true),
                JoinOperator::Right(_) | JoinOperator::RightOuter(_) => (true, false),
                JoinOperator::FullOuter(_) => (true, true),
                _ => (false, false),
            };
            if left {
                factors[first..]
                    .iter_mut()
                    .for_each(|(_, nullable)| *nullable = true);
            }
            factors.push((&join.relation, right));
        }
    }
    let mut tables = Vec::new();
    let mut names = Vec::new();
    for (factor, nullable) in factors {
        let (qualifier, table) = match factor {
            TableFactor::Table { name, alias, .. } => {
                let qualifier = match alias {
                    Some(alias) => alias.name.clone(),
                    None => name
                        .0
                        .last()
                        .and_then(|part| part.as_ident())
                        .cloned()
                        .unwrap_or_else(|| Ident::new(name.to_string())),
                };
                (qualifier, Some(object_name(name)?))
            }
            other => {
                let alias = match other {
                    TableFactor::Derived { alias, .. }
                    | TableFactor::TableFunction { alias, .. }
                    | TableFactor::UNNEST { alias, .. }
                    | TableFactor::Function { alias, .. } => alias.as_ref(),
                    _ => None,
                };
                let qualifier = alias.map_or_else(|| Ident::new(""), |a| a.name.clone());
                (qualifier, None)
            }
        };
        let alias = ident_name(&qualifier);
        names.push(alias.clone());
        let Some((mode, held)) = locking.for_table(&alias) else {
            continue;
        };
        let def = table.and_then(|name| session.schema_view().table(&name));
        let Some(def) = def else {
            return Err(Error::Unsupported {
                what: format!(
                    "FOR UPDATE/SHARE of {}, which is not a table (a view, a WITH query or a \
                     subquery); name the tables to lock with OF",
                    if alias.is_empty() {
                        factor.to_string()
                    } else {
                        alias
                    }
                ),
            });
        };
        if nullable {
            return Err(Error::LockingNullableSide {
                clause: query.locks.first().map_or_else(
                    || "FOR UPDATE".to_string(),
                    |lock| format!("FOR {}", lock.lock_type),
                ),
            });
        }
        tables.push(Named {
            qualifier,
            def,
            mode,
            held,
        });
    }
    if let Some(missing) = locking
        .named()
        .find(|named| !names.iter().any(|n| n == named))
    {
        return Err(Error::LockedTableNotInFrom {
            name: missing.to_string(),
        });
    }
    Ok(tables)
}

/// One locking read's runs of its query.
struct Reading<'a> {
    session: &'a Session,
    statement: &'a Statement,
    hints: &'a QueryHints,
    /// The table whose hidden key column the query reads, and the column, if any.
    exposed: Option<(String, String)>,
    /// How many key columns follow the statement's own in what the query returns.
    appended_columns: usize,
}

impl Reading<'_> {
    /// The rows of `locked_query` (the keys appended), locked; the statement's own columns
    /// of them.
    async fn locked_rows(
        &self,
        mut locked_query: Query,
        targets: &[Target],
        locking: &RowLocking,
    ) -> Result<Output> {
        let session = self.session;
        // Under SKIP LOCKED, OFFSET and LIMIT count the rows returned, not those skipped: the
        // query asks for the rows up to the end of the LIMIT, more when some were skipped.
        let window = match locking.skips_locked() {
            true => take_window(&mut locked_query)?,
            false => None,
        };
        // The rows to return (with those OFFSET passes), and how many the query is asked for.
        let wanted = window.map(|(offset, limit)| offset.saturating_add(limit));
        let mut fetch = wanted;
        let statement_txn = session.statement_txn().await?;
        let txn = statement_txn.txn.clone();
        let reading = session.with_txn(txn.clone());
        let stop = StatementStop::starting_now(&session.interrupt, session.statement_timeout());
        let lock_timeout = session.lock_timeout();
        let mut attempts = 0;
        loop {
            let mut round = locked_query.clone();
            if let Some(fetch) = fetch {
                round.limit_clause = Some(LimitClause::LimitOffset {
                    limit: Some(number(fetch)),
                    offset: None,
                    limit_by: Vec::new(),
                });
            }
            let Output::Rows { schema, batches } = self.run_as(&reading, &round).await? else {
                return Err(Error::Unsupported {
                    what: "FOR UPDATE of a statement that returns no rows".to_string(),
                });
            };
            let batch = concat_batches(&schema, &batches)?;
            let found = batch.num_rows();
            // The statement's own columns (a wildcard's as many as the tables have), then the
            // keys.
            let own_columns = batch.num_columns().saturating_sub(self.appended_columns);
            let keys = row_keys(&batch, targets, own_columns)?;
            // SKIP LOCKED tables first, row by row, up to the rows the LIMIT needs.
            let mut kept: Vec<usize> = Vec::new();
            for (row, row_keys) in keys.iter().enumerate() {
                if wanted.is_some_and(|wanted| kept.len() as u64 >= wanted) {
                    break;
                }
                let mut skipped = false;
                for (target, key) in targets.iter().zip(row_keys) {
                    if target.held != Held::SkipLocked {
                        continue;
                    }
                    let Some(key) = key else { continue };
                    let got = txn
                        .lock_row_keys(
                            std::slice::from_ref(key),
                            target.mode,
                            LockWait::SkipLocked,
                            &stop,
                        )
                        .await?;
                    if got.first() == Some(&Locked::Skipped) {
                        skipped = true;
                        break;
                    }
                }
                if !skipped {
                    kept.push(row);
                }
            }
            // The other tables: every key of the rows kept, in key order.
            let mut locked: Vec<(&TableDef, Vec<Vec<u8>>)> = Vec::with_capacity(targets.len());
            for (number, target) in targets.iter().enumerate() {
                let mut table_keys: Vec<Vec<u8>> = kept
                    .iter()
                    .filter_map(|&row| keys[row][number].clone())
                    .collect();
                table_keys.sort_unstable();
                table_keys.dedup();
                if table_keys.len() > MAX_EXPLICIT_LOCKS {
                    return Err(Error::TooManyRowLocks {
                        limit: MAX_EXPLICIT_LOCKS,
                    });
                }
                if target.held != Held::SkipLocked {
                    txn.lock_row_keys(
                        &table_keys,
                        target.mode,
                        target.held.wait(lock_timeout),
                        &stop,
                    )
                    .await?;
                }
                locked.push((&target.def, table_keys));
            }
            let checked: Vec<(&TableDef, &[Vec<u8>])> = locked
                .iter()
                .map(|(def, keys)| (*def, keys.as_slice()))
                .collect();
            if txn.check_locked_rows(&checked).await? == RowsLocked::FindAgain {
                attempts += 1;
                if attempts >= FIND_ATTEMPTS {
                    return Err(Error::WriteConflict);
                }
                continue;
            }
            if let (Some(wanted), Some(asked)) = (wanted, fetch)
                && (kept.len() as u64) < wanted
                && found as u64 >= asked
            {
                // Rows were skipped and the query may have more: ask for more.
                fetch = Some(asked.saturating_mul(4));
                continue;
            }
            if let Some((offset, _)) = window {
                let offset = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(kept.len());
                kept.drain(..offset);
            }
            // A wildcard over a table whose hidden key is exposed returns that column too; the
            // statement's result does not have it.
            let own: Vec<usize> = (0..own_columns)
                .filter(|&i| {
                    self.exposed
                        .as_ref()
                        .is_none_or(|(_, hidden)| schema.field(i).name() != hidden)
                })
                .collect();
            let indices = UInt32Array::from_iter_values(
                kept.iter()
                    .map(|&row| u32::try_from(row).unwrap_or(u32::MAX)),
            );
            let taken = take_record_batch(&batch, &indices)?.project(&own)?;
            statement_txn.finish(&session.db).await?;
            let schema = Arc::new(schema.project(&own)?);
            return Ok(Output::Rows {
                schema,
                batches: vec![taken],
            });
        }
    }

    /// One run of `query` in `reading` (the session with the statement's transaction),
    /// named as the statement's columns are.
    async fn run_as(&self, reading: &Session, query: &Query) -> Result<Output> {
        let statement = Statement::Query(Box::new(query.clone()));
        let output = match &self.exposed {
            // Boxed: a query's future is large, and this one runs inside another statement's.
            None => Box::pin(run_select(reading, &statement, self.hints)).await?,
            Some((table, _)) => {
                let base = new_context(
                    &reading.db,
                    reading.schema_view(),
                    OptimizerRules::new()?,
                    Some(table.clone()),
                );
                let ctx = context_with(&base, self.hints, reading.open_txn(), reading.semantics);
                Box::pin(run_query(&ctx, statement.clone())).await?
            }
        };
        // The statement's own columns are named as the statement names them.
        match output {
            Output::Rows { .. } => reading.name_output(self.statement, output),
            other => Ok(other),
        }
    }
}

/// Each row's key in each target (None where a key is all NULL).
fn row_keys(
    batch: &datafusion::arrow::record_batch::RecordBatch,
    targets: &[Target],
    own_columns: usize,
) -> Result<Vec<Vec<Option<Vec<u8>>>>> {
    let mut keys = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let mut row_keys = Vec::with_capacity(targets.len());
        for target in targets {
            let def = &target.def;
            let mut values = Vec::with_capacity(target.key_offsets.len());
            for (key, &offset) in def.key.iter().zip(&target.key_offsets) {
                let value = datum_from_array(batch.column(own_columns + offset).as_ref(), row)?;
                // Arrow's form of a value (a DECIMAL's float) to the stored one the key is
                // encoded from; NULL where an outer join found no row.
                values.push(match value {
                    Datum::Null => Datum::Null,
                    value => assign(def, &def.columns[key.column], value)?,
                });
            }
            row_keys.push(match values.iter().all(|value| *value == Datum::Null) {
                true => None,
                false => {
                    let refs: Vec<&Datum> = values.iter().collect();
                    Some(def.row_key(&def.encode_key_values(&refs)))
                }
            });
        }
        keys.push(row_keys);
    }
    Ok(keys)
}

/// Takes the query's OFFSET and LIMIT off it (SKIP LOCKED applies them to the rows it keeps):
/// None when it has no LIMIT (every row is wanted).
fn take_window(query: &mut Query) -> Result<Option<(u64, u64)>> {
    if query.fetch.is_some() {
        return Err(Error::Unsupported {
            what: "FETCH FIRST with SKIP LOCKED (write LIMIT)".to_string(),
        });
    }
    let (limit, offset) = match query.limit_clause.take() {
        None => return Ok(None),
        Some(LimitClause::LimitOffset { limit, offset, .. }) => {
            (limit, offset.map(|offset| offset.value))
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
    };
    let count = |expr: Option<Expr>| -> Result<Option<u64>> {
        match expr {
            None => Ok(None),
            Some(Expr::Value(value)) => match &value.value {
                Value::Number(text, _) => text.parse().map(Some).map_err(|_| Error::Unsupported {
                    what: format!("LIMIT/OFFSET {text} with SKIP LOCKED"),
                }),
                Value::Null => Ok(None),
                other => Err(Error::Unsupported {
                    what: format!("LIMIT/OFFSET {other} with SKIP LOCKED"),
                }),
            },
            Some(other) => Err(Error::Unsupported {
                what: format!("LIMIT/OFFSET {other} with SKIP LOCKED (a number is needed)"),
            }),
        }
    };
    let offset = count(offset)?.unwrap_or(0);
    Ok(count(limit)?.map(|limit| (offset, limit)))
}

fn number(n: u64) -> Expr {
    Expr::value(Value::Number(n.to_string(), false))
}
