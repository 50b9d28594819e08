//! Matching predicates to a key layout, and the primary-key access path.
//!
//! The rule is the row-key rule of every sorted KV store: fix leading key columns with `=` or
//! `IN`, then bound the next one. All columns fixed is a point get (or a multi get for IN lists);
//! a fixed prefix or a bounded leading column is a range scan; anything else is a full scan.
//! Predicates the path does not use stay as the residual, which the scan checks row by row.
//! The same matching applies to an index, whose layout is its columns followed by the primary
//! key (see `candidates`).

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use rowdex_catalog::{KeyColumn, TableDef};
use rowdex_codec::Datum;
use rowdex_store::Direction;

use crate::path::{AccessPath, KeyBound, ScanPlan};
use crate::predicate::{CmpOp, Predicate};
use crate::predicate::{like_is_prefix, like_prefix};

/// Above this many key combinations an IN-list product is not expanded into separate keys.
const MAX_KEY_COMBINATIONS: usize = 1024;

/// The plan that reads the table by primary key only (point get, range scan or full scan).
pub fn plan_scan(
    table: Arc<TableDef>,
    predicates: Vec<Predicate>,
    direction: Direction,
    offset: usize,
    limit: Option<usize>,
) -> ScanPlan {
    let mut matched = match_key(&table.key, &predicates);
    // Key columns are NOT NULL, so IS NOT NULL on one is always true.
    for (i, predicate) in predicates.iter().enumerate() {
        if let Predicate::IsNotNull { column } = predicate {
            matched.used[i] |= table.key_position(*column).is_some();
        }
    }
    let path = if matched.fixed == table.key.len() {
        let mut tuples = matched.tuples.clone();
        if tuples.len() == 1 {
            AccessPath::PointGet {
                key: tuples.remove(0),
            }
        } else {
            AccessPath::MultiGet { keys: tuples }
        }
    } else if matched.fixed == 0 && matched.bound == KeyBound::All {
        AccessPath::FullScan
    } else {
        AccessPath::RangeScan {
            prefixes: matched.tuples.clone(),
            bound: matched.bound.clone(),
        }
    };
    let residual = matched.residual(&predicates);
    ScanPlan {
        table,
        path,
        residual,
        direction,
        offset,
        limit,
        estimate: None,
        resume_after: None,
        partition: None,
        merged: false,
        needed: None,
    }
}

/// How far a conjunction of predicates pins down a key layout (primary key, or an index's
/// columns followed by the primary key).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyMatch {
    /// One tuple of values per combination of the fixed leading columns (several with `IN`).
    pub tuples: Vec<Vec<Datum>>,
    /// How many leading columns are fixed.
    pub fixed: usize,
    /// The condition on the column after the fixed ones.
    pub bound: KeyBound,
    /// Which predicates the match consumes (the rest is residual).
    pub used: Vec<bool>,
}

impl KeyMatch {
    pub(crate) fn residual(&self, predicates: &[Predicate]) -> Vec<Predicate> {
        predicates
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !**used)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// How many columns the match constrains (fixed ones, plus one if the next is bounded).
    pub(crate) fn depth(&self) -> usize {
        self.fixed + usize::from(self.bound != KeyBound::All)
    }
}

/// Fixes leading `columns` with `=`, `IN` or `IS NULL`, then bounds the next one.
pub(crate) fn match_key(columns: &[KeyColumn], predicates: &[Predicate]) -> KeyMatch {
    let mut used = vec![false; predicates.len()];
    let mut tuples: Vec<Vec<Datum>> = vec![Vec::new()];
    let mut fixed = 0;
    for key_column in columns {
        let Some((index, values)) = fixing_values(predicates, key_column.column) else {
            break;
        };
        if values.is_empty() || tuples.len() * values.len() > MAX_KEY_COMBINATIONS {
            break;
        }
        used[index] = true;
        tuples = tuples
            .iter()
            .flat_map(|tuple| {
                values.iter().map(move |v| {
                    let mut next = tuple.clone();
                    next.push(v.clone());
                    next
                })
            })
            .collect();
        fixed += 1;
    }
    let mut bound = columns.get(fixed).map_or(KeyBound::All, |key_column| {
        bound_on(predicates, key_column.column, &mut used)
    });
    if bound == KeyBound::All {
        bound = row_bound(predicates, columns, fixed, &tuples, &mut used);
    }
    KeyMatch {
        tuples,
        fixed,
        bound,
        used,
    }
}

/// The first `=`, `IN` or `IS NULL` predicate on `column`, with its distinct values.
pub(crate) fn fixing_values(
    predicates: &[Predicate],
    column: usize,
) -> Option<(usize, Vec<Datum>)> {
    predicates.iter().enumerate().find_map(|(i, p)| match p {
        // NULL is a value like any other in an index key (it sorts first).
        Predicate::IsNull { column: c } if *c == column => Some((i, vec![Datum::Null])),
        Predicate::Compare {
            column: c,
            op: CmpOp::Eq,
            value,
        } if *c == column && !value.is_null() => Some((i, vec![value.clone()])),
        Predicate::InList { column: c, values } if *c == column => {
            let mut distinct: Vec<Datum> =
                values.iter().filter(|v| !v.is_null()).cloned().collect();
            distinct.sort_by(|a, b| a.key_cmp(b));
            distinct.dedup_by(|a, b| a.key_cmp(b) == Ordering::Equal);
            // An IN list of only NULLs matches nothing; leave it to the residual.
            (!distinct.is_empty()).then_some((i, distinct))
        }
        _ => None,
    })
}

/// The tightest range (or LIKE prefix) on `column`, marking the predicates it consumes: every
/// bound on the column, since the tightest one implies the looser ones.
fn bound_on(predicates: &[Predicate], column: usize, used: &mut [bool]) -> KeyBound {
    let mut lower: Option<(usize, Bound<Datum>)> = None;
    let mut upper: Option<(usize, Bound<Datum>)> = None;
    let mut bounds = Vec::new();
    for (i, predicate) in predicates.iter().enumerate() {
        let Predicate::Compare {
            column: c,
            op,
            value,
        } = predicate
        else {
            continue;
        };
        if *c != column || value.is_null() {
            continue;
        }
        let (slot, bound, tighter) = match op {
            CmpOp::Gt => (
                &mut lower,
                Bound::Excluded(value.clone()),
                Ordering::Greater,
            ),
            CmpOp::GtEq => (
                &mut lower,
                Bound::Included(value.clone()),
                Ordering::Greater,
            ),
            CmpOp::Lt => (&mut upper, Bound::Excluded(value.clone()), Ordering::Less),
            CmpOp::LtEq => (&mut upper, Bound::Included(value.clone()), Ordering::Less),
            CmpOp::Eq | CmpOp::NotEq => continue,
        };
        bounds.push(i);
        let replace = match slot {
            None => true,
            Some((_, current)) => is_tighter(&bound, current, tighter),
        };
        if replace {
            *slot = Some((i, bound));
        }
    }
    if lower.is_none() && upper.is_none() {
        // A pattern that is exactly a prefix is consumed by its range; any other only
        // narrows the range to its literal start and is checked on each row.
        let like = predicates
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Predicate::Like { column: c, pattern }
                    if *c == column && !like_prefix(pattern).is_empty() =>
                {
                    Some((i, pattern))
                }
                _ => None,
            })
            .max_by_key(|(_, pattern)| (like_is_prefix(pattern), like_prefix(pattern).len()));
        return match like {
            Some((i, pattern)) => {
                used[i] = like_is_prefix(pattern);
                KeyBound::TextPrefix(like_prefix(pattern).to_string())
            }
            None => KeyBound::All,
        };
    }
    for i in bounds {
        used[i] = true;
    }
    let take = |slot: Option<(usize, Bound<Datum>)>| match slot {
        Some((_, bound)) => bound,
        None => Bound::Unbounded,
    };
    KeyBound::Range {
        lower: take(lower),
        upper: take(upper),
    }
}

/// A row-value comparison over consecutive key columns that reach the first unfixed one, as a
/// bound (it is then consumed): `(a, b) < (1, 2)` with nothing fixed, or `(uid, ts) < (7, 100)`
/// with `uid = 7` fixed, where the fixed leading pairs are equal and drop out. A fixed column
/// that already decides the comparison for every row (`uid = 6`) consumes it when it holds
/// and leaves it as a residual when it fails, which then filters every row out.
fn row_bound(
    predicates: &[Predicate],
    columns: &[KeyColumn],
    fixed: usize,
    tuples: &[Vec<Datum>],
    used: &mut [bool],
) -> KeyBound {
    for (i, predicate) in predicates.iter().enumerate() {
        let Predicate::RowCompare {
            columns: row_columns,
            op,
            values,
        } = predicate
        else {
            continue;
        };
        let ordering = matches!(op, CmpOp::Lt | CmpOp::LtEq | CmpOp::Gt | CmpOp::GtEq);
        if !ordering
            || values.is_empty()
            || values.len() != row_columns.len()
            || values.iter().any(Datum::is_null)
        {
            continue;
        }
        // Where the row value starts in the key: at most `fixed` columns before the first
        // unfixed one, and every element on the following key columns in order.
        let Some(start) = (0..=fixed.min(columns.len())).find(|&start| {
            row_columns.len() + start > fixed
                && row_columns.len() + start <= columns.len()
                && row_columns
                    .iter()
                    .zip(&columns[start..])
                    .all(|(c, k)| *c == k.column)
        }) else {
            continue;
        };
        let leading = fixed - start;
        let mut decided = None;
        if leading > 0 {
            // The fixed pairs must be the same for every combination of fixed values.
            let [tuple] = tuples else { continue };
            for (value, fixed_value) in values.iter().zip(&tuple[start..fixed]) {
                let ordering = fixed_value.key_cmp(value);
                if ordering != Ordering::Equal {
                    decided = Some(op.holds(ordering));
                    break;
                }
            }
        }
        match decided {
            Some(true) => {
                used[i] = true;
                return KeyBound::All;
            }
            Some(false) => continue,
            None => {
                used[i] = true;
                return KeyBound::Row {
                    op: *op,
                    values: values[leading..].to_vec(),
                };
            }
        }
    }
    KeyBound::All
}

/// Whether `candidate` restricts more than `current`, where `direction` is the way a value
/// moves to restrict more (Greater for lower bounds).
fn is_tighter(candidate: &Bound<Datum>, current: &Bound<Datum>, direction: Ordering) -> bool {
    let (Bound::Included(a) | Bound::Excluded(a)) = candidate else {
        return false;
    };
    let (Bound::Included(b) | Bound::Excluded(b)) = current else {
        return true;
    };
    match a.key_cmp(b) {
        Ordering::Equal => {
            matches!(candidate, Bound::Excluded(_)) && matches!(current, Bound::Included(_))
        }
        ordering => ordering == direction,
    }
}

#[cfg(test)]
mod tests;
