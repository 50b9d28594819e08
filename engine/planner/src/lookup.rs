//! Lookup joins (issue 44): reading one table by the values another side of a join produces,
//! instead of reading it whole for a hash join.
//!
//! A probed table offers one [`LookupTemplate`] per key layout whose leading columns the join
//! binds: its primary key, or a ready index (indexed columns, then the primary key). Each
//! leading column is bound by a join column or by a constant the query fixes it to (`o.user_id =
//! u.id AND o.status = 'open'` over an index on `(status, user_id)`), as far as they go; what is
//! left of the query's conditions is the residual the probe's rows are filtered by. A batch of
//! probe values becomes one [`ScanPlan`] the ordinary reader executes: a multi-get when the
//! whole primary key is bound, one prefix range per probe otherwise. The estimate prices a
//! batch of probes with the store's access costs and the table's gathered statistics, so that
//! the caller can weigh it against reading the table whole.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use rowdex_catalog::{KeyColumn, TableDef, TableStatistics};
use rowdex_codec::Datum;
use rowdex_store::{AccessCosts, Direction, RANGES_PER_BATCH};

use crate::candidates::{IndexHint, residual_of};
use crate::partial::answers;
use crate::path::{AccessPath, IndexInput, KeyBound, ScanPlan};
use crate::predicate::Predicate;
use crate::primary_key::fixing_values;

/// Rows a probe of a key prefix is taken to find when the table has no gathered statistics
/// (SQLite's default guess for an index key).
pub const DEFAULT_ROWS_PER_PROBE: f64 = 10.0;

/// What a statement's hints say about joining a table (`/*+ LOOKUP_JOIN(t) */`,
/// `/*+ HASH_JOIN(t) */`, either without a table for every join).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JoinHint {
    /// Chosen by cost.
    #[default]
    Auto,
    /// Probe the table by its keys whenever a join offers a lookup into it.
    Lookup,
    /// Never probe the table: join it by reading it whole.
    Hash,
}

/// A table with fewer rows is joined by reading it whole: a few pages, whatever the store.
pub const LOOKUP_MIN_TABLE_ROWS: u64 = 256;

/// What the join itself spends per probe, beside the store's reads: turning the driving value
/// into a key, planning and opening its read, in nanoseconds.
pub const PROBE_CPU_NS: f64 = 1000.0;
/// What matching and copying one found row costs the join, in nanoseconds; a hash join spends
/// as much per row it builds or probes.
pub const JOIN_ROW_NS: f64 = 100.0;

/// The key a lookup reads the probed table by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupKey {
    Primary,
    /// The index at this position in the table's indexes.
    Index(usize),
}

/// What binds one leading column of a lookup key.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyPart {
    /// The join column at this position in the join's columns.
    Join(usize),
    /// A value the query's conditions fix the column to.
    Constant(Datum),
}

/// One way to read the probed table by join values (see the module's header).
#[derive(Debug, Clone, PartialEq)]
pub struct LookupTemplate {
    pub table: Arc<TableDef>,
    pub key: LookupKey,
    /// The leading key columns' binders, in key order; at least one is a join column.
    pub parts: Vec<KeyPart>,
    /// The query's conditions the key does not consume, checked on every probed row.
    pub residual: Vec<Predicate>,
    /// An index scan that needs no row lookup: the index holds every column read.
    pub covering: bool,
    /// The columns the join reads of the probed table (None: all).
    pub needed: Option<Vec<usize>>,
}

/// What a batch of probes is expected to cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LookupEstimate {
    /// Rows found (before the residual filter).
    pub rows: f64,
    /// Store entries read (index entries and looked-up rows).
    pub entries: f64,
    /// Microseconds, in the units of `AccessCosts`.
    pub cost_us: f64,
}

/// The templates `table` offers a join on `join_columns` (positions in its columns), given the
/// query's own conditions on it and the columns it reads; the primary key's first. An index the
/// hint rules out offers none.
pub fn lookup_templates(
    table: &Arc<TableDef>,
    join_columns: &[usize],
    predicates: &[Predicate],
    needed: Option<&[usize]>,
    hint: &IndexHint,
) -> Vec<LookupTemplate> {
    let mut layouts = vec![(LookupKey::Primary, table.key.clone())];
    if *hint != IndexHint::NoIndex {
        for (position, index) in table.ready_indexes() {
            if hint.allows(&index.name) && answers(index, predicates) {
                layouts.push((LookupKey::Index(position), table.entry_key_columns(index)));
            }
        }
    }
    layouts
        .into_iter()
        .filter_map(|(key, columns)| {
            let (parts, used) = bind_leading(&columns, join_columns, predicates);
            if !parts.iter().any(|part| matches!(part, KeyPart::Join(_))) {
                return None;
            }
            let residual = residual_of(predicates, &[&used]);
            let covering = match key {
                LookupKey::Primary => false,
                LookupKey::Index(position) => table.indexes.get(position).is_some_and(|index| {
                    let mut read: Vec<usize> = match needed {
                        Some(needed) => needed.to_vec(),
                        None => (0..table.columns.len()).collect(),
                    };
                    read.extend(residual.iter().flat_map(Predicate::columns));
                    read.extend_from_slice(join_columns);
                    table.index_covers(index, &read)
                }),
            };
            Some(LookupTemplate {
                table: table.clone(),
                key,
                parts,
                residual,
                covering,
                needed: needed.map(<[usize]>::to_vec),
            })
        })
        .collect()
}

/// Binds the leading `columns` of a key: each by a join column, else by a condition fixing it
/// to one non-NULL value (`primary_key::fixing_values`), until one is neither. Returns the binders and which predicates they
/// consume.
fn bind_leading(
    columns: &[KeyColumn],
    join_columns: &[usize],
    predicates: &[Predicate],
) -> (Vec<KeyPart>, Vec<bool>) {
    let mut used = vec![false; predicates.len()];
    let mut parts = Vec::new();
    for key_column in columns {
        if let Some(position) = join_columns.iter().position(|c| *c == key_column.column) {
            parts.push(KeyPart::Join(position));
            continue;
        }
        // One value only: a probe reads one prefix (`= v`, or an IN list of one).
        let fixed = fixing_values(predicates, key_column.column)
            .filter(|(_, values)| values.len() == 1 && !values[0].is_null());
        let Some((i, mut values)) = fixed else {
            break;
        };
        used[i] = true;
        parts.push(KeyPart::Constant(values.remove(0)));
    }
    (parts, used)
}

impl LookupTemplate {
    /// The columns of the key layout the template reads by.
    fn key_columns(&self) -> Vec<KeyColumn> {
        match self.key {
            LookupKey::Primary => self.table.key.clone(),
            LookupKey::Index(position) => self
                .table
                .indexes
                .get(position)
                .map(|index| self.table.entry_key_columns(index))
                .unwrap_or_default(),
        }
    }

    /// Whether a probe finds at most one row: the whole primary key is bound, or every column
    /// of a unique index (a NULL never probes).
    pub fn unique(&self) -> bool {
        match self.key {
            LookupKey::Primary => self.parts.len() == self.table.key.len(),
            LookupKey::Index(position) => self
                .table
                .indexes
                .get(position)
                .is_some_and(|index| index.unique && self.parts.len() >= index.columns.len()),
        }
    }

    /// The key prefix one probe reads: its join values (one per join column, in the join's
    /// order) and the constants, in key order; None when a join value is NULL, which equals
    /// nothing.
    pub fn prefix(&self, join_values: &[Datum]) -> Option<Vec<Datum>> {
        self.parts
            .iter()
            .map(|part| match part {
                KeyPart::Join(position) => join_values.get(*position).filter(|v| !v.is_null()),
                KeyPart::Constant(value) => Some(value),
            })
            .map(|value| value.cloned())
            .collect()
    }

    /// The scan that reads the rows of a batch of probes (each one value per join column):
    /// their key prefixes, deduplicated (the reader sorts the encoded keys and ranges, so the
    /// reads go in key order, DESC columns included). None when no probe can match (every one
    /// has a NULL).
    pub fn plan<'a>(&self, probes: impl IntoIterator<Item = &'a [Datum]>) -> Option<ScanPlan> {
        let mut prefixes: Vec<Vec<Datum>> = probes
            .into_iter()
            .filter_map(|probe| self.prefix(probe))
            .collect();
        if prefixes.is_empty() {
            return None;
        }
        prefixes.sort_by(|a, b| tuple_cmp(a, b));
        prefixes.dedup_by(|a, b| tuple_cmp(a, b) == Ordering::Equal);
        let path = match self.key {
            LookupKey::Primary if self.parts.len() == self.table.key.len() => {
                if prefixes.len() == 1 {
                    AccessPath::PointGet {
                        key: prefixes.remove(0),
                    }
                } else {
                    AccessPath::MultiGet { keys: prefixes }
                }
            }
            LookupKey::Primary => AccessPath::RangeScan {
                prefixes,
                bound: KeyBound::All,
            },
            LookupKey::Index(index) => AccessPath::IndexScan {
                input: IndexInput {
                    index,
                    prefixes,
                    bound: KeyBound::All,
                },
                covering: self.covering,
            },
        };
        Some(ScanPlan {
            table: self.table.clone(),
            path,
            residual: self.residual.clone(),
            direction: Direction::Forward,
            offset: 0,
            limit: None,
            estimate: None,
            resume_after: None,
            needed: self.needed.clone(),
            partition: None,
            merged: false,
        })
    }

    /// Rows one probe finds, from the gathered statistics of its key (scaled to `table_rows`
    /// when the table grew or shrank since), or [`DEFAULT_ROWS_PER_PROBE`] without them.
    pub fn rows_per_probe(&self, statistics: Option<&TableStatistics>, table_rows: u64) -> f64 {
        if self.unique() {
            return 1.0;
        }
        let table_rows = table_rows as f64;
        let guess = DEFAULT_ROWS_PER_PROBE.min(table_rows.max(1.0));
        let Some(statistics) = statistics else {
            return guess;
        };
        let key = match self.key {
            LookupKey::Primary => Some(&statistics.primary),
            LookupKey::Index(position) => self
                .table
                .indexes
                .get(position)
                .and_then(|index| statistics.indexes.get(&index.id)),
        };
        // `distinct` counts leading runs of the indexed columns only: a prefix longer than
        // them is priced as the whole run (an upper bound).
        let distinct = key.and_then(|key| {
            let run = self.parts.len().min(key.distinct.len());
            run.checked_sub(1)
                .and_then(|last| key.distinct.get(last))
                .map(|d| (key.entries, *d))
        });
        match distinct {
            Some((entries, distinct)) if distinct > 0 && statistics.rows > 0 => {
                let scale = table_rows / statistics.rows as f64;
                (entries as f64 * scale / distinct as f64).max(1.0)
            }
            _ => guess,
        }
    }

    /// What `probes` distinct probes cost, each finding `per_probe` rows: the store's reads,
    /// and the join's own work per probe and per row found.
    pub fn estimate(&self, probes: f64, per_probe: f64, costs: AccessCosts) -> LookupEstimate {
        let reads = self.reads(probes, per_probe, costs);
        LookupEstimate {
            cost_us: reads.cost_us + (probes * PROBE_CPU_NS + reads.rows * JOIN_ROW_NS) / 1000.0,
            ..reads
        }
    }

    /// The store's part of [`LookupTemplate::estimate`].
    fn reads(&self, probes: f64, per_probe: f64, costs: AccessCosts) -> LookupEstimate {
        let next = f64::from(costs.next_ns) / 1000.0;
        let get = f64::from(costs.get_ns) / 1000.0;
        let rows = probes * per_probe;
        match self.key {
            LookupKey::Primary if self.parts.len() == self.table.key.len() => LookupEstimate {
                rows,
                entries: probes,
                cost_us: probes * get,
            },
            LookupKey::Primary => LookupEstimate {
                rows,
                entries: rows,
                cost_us: self.opening(probes, costs) + rows * next,
            },
            LookupKey::Index(_) => {
                let lookups = if self.covering { 0.0 } else { rows };
                LookupEstimate {
                    rows,
                    entries: rows + lookups,
                    cost_us: self.opening(probes, costs) + rows * next + lookups * get,
                }
            }
        }
    }

    /// What opening the ranges of `probes` probes costs: a seek each, or, on a store that
    /// reads ranges in batches, a seek per batch of [`RANGES_PER_BATCH`] and the price of a
    /// range within a batch each.
    fn opening(&self, probes: f64, costs: AccessCosts) -> f64 {
        let ranges = probes * self.seeks_per_probe();
        let seek = f64::from(costs.seek_ns) / 1000.0;
        match costs.range_in_batch_ns {
            Some(each) if ranges > 1.0 => {
                (ranges / RANGES_PER_BATCH as f64).ceil() * seek + ranges * f64::from(each) / 1000.0
            }
            _ => ranges * seek,
        }
    }

    /// Ranges one probe opens: one per salt bucket its prefix may be in.
    fn seeks_per_probe(&self) -> f64 {
        let buckets = match self.key {
            LookupKey::Primary if self.table.is_salted() => self.table.salt_buckets,
            LookupKey::Primary => 1,
            LookupKey::Index(position) => match self.table.indexes.get(position) {
                // Fixing every indexed value names the bucket.
                Some(index) if index.is_salted() && self.parts.len() < index.columns.len() => {
                    index.salt_buckets
                }
                _ => 1,
            },
        };
        f64::from(buckets.max(1))
    }

    /// EXPLAIN's text, with `join_names` naming the driving side's value for each join column:
    /// `users using primary key [id = o.user_id]`, `orders using index o_user [user_id = u.id,
    /// status = 'open'] covering`.
    pub fn describe(&self, join_names: &[String]) -> String {
        LookupText {
            template: self,
            join_names,
        }
        .to_string()
    }
}

/// Orders key tuples as the keys they encode to (NULL first, as in a key).
fn tuple_cmp(a: &[Datum], b: &[Datum]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.key_cmp(y))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or_else(|| a.len().cmp(&b.len()))
}

struct LookupText<'a> {
    template: &'a LookupTemplate,
    join_names: &'a [String],
}

impl fmt::Display for LookupText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let template = self.template;
        let table = &template.table;
        write!(f, "{} using ", table.name)?;
        match template.key {
            LookupKey::Primary => f.write_str("primary key")?,
            LookupKey::Index(position) => {
                let name = table.indexes.get(position).map_or("?", |i| i.name.as_str());
                write!(f, "index {name}")?;
            }
        }
        f.write_str(" [")?;
        let columns = template.key_columns();
        for (i, part) in template.parts.iter().enumerate() {
            let column = columns.get(i).map_or(usize::MAX, |k| k.column);
            let name = table.columns.get(column).map_or("?", |c| c.name.as_str());
            f.write_str(if i > 0 { ", " } else { "" })?;
            match part {
                KeyPart::Join(position) => {
                    let driving = self.join_names.get(*position).map_or("?", String::as_str);
                    write!(f, "{name} = {driving}")?;
                }
                KeyPart::Constant(value) => {
                    write!(
                        f,
                        "{name} = {}",
                        crate::predicate::value_text(table, column, value)
                    )?;
                }
            }
        }
        f.write_str("]")?;
        if template.covering {
            f.write_str(" covering")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
