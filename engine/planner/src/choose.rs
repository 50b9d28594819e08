//! Access-path choice for a scan of one table by primary key.
//!
//! The rule is the row-key rule of every sorted KV store: fix leading key columns with `=` or
//! `IN`, then bound the next one. All columns fixed is a point get (or a multi get for IN lists);
//! a fixed prefix or a bounded leading column is a range scan; anything else is a full scan.
//! Predicates the path does not use stay as the residual, which the scan checks row by row.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::Direction;

use crate::path::{AccessPath, KeyBound, ScanPlan};
use crate::{CmpOp, Predicate};

/// Above this many key combinations an IN-list product is not expanded into separate keys.
const MAX_KEY_COMBINATIONS: usize = 1024;

pub fn plan_scan(
    table: Arc<TableDef>,
    predicates: Vec<Predicate>,
    direction: Direction,
    offset: usize,
    limit: Option<usize>,
) -> ScanPlan {
    let mut used = vec![false; predicates.len()];
    let mut tuples: Vec<Vec<Datum>> = vec![Vec::new()];
    let mut fixed = 0;
    for key_column in &table.key {
        let Some((index, values)) = fixing_values(&predicates, key_column.column) else {
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
    // Key columns are NOT NULL, so IS NOT NULL on one is always true.
    for (i, predicate) in predicates.iter().enumerate() {
        if let Predicate::IsNotNull { column } = predicate {
            used[i] |= table.key_position(*column).is_some();
        }
    }

    let path = if fixed == table.key.len() {
        if tuples.len() == 1 {
            AccessPath::PointGet {
                key: tuples.remove(0),
            }
        } else {
            AccessPath::MultiGet { keys: tuples }
        }
    } else {
        let bound = table.key.get(fixed).map_or(KeyBound::All, |key_column| {
            bound_on(&predicates, key_column.column, &mut used)
        });
        if fixed == 0 && bound == KeyBound::All {
            AccessPath::FullScan
        } else {
            AccessPath::RangeScan {
                prefixes: tuples,
                bound,
            }
        }
    };
    let residual = predicates
        .into_iter()
        .zip(used)
        .filter(|(_, used)| !used)
        .map(|(p, _)| p)
        .collect();
    ScanPlan {
        table,
        path,
        residual,
        direction,
        offset,
        limit,
    }
}

/// The first `=` or `IN` predicate on `column`, with its distinct non-NULL values.
fn fixing_values(predicates: &[Predicate], column: usize) -> Option<(usize, Vec<Datum>)> {
    predicates.iter().enumerate().find_map(|(i, p)| match p {
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

/// The tightest range (or LIKE prefix) on `column`, marking the predicates it consumes.
fn bound_on(predicates: &[Predicate], column: usize, used: &mut [bool]) -> KeyBound {
    let mut lower: Option<(usize, Bound<Datum>)> = None;
    let mut upper: Option<(usize, Bound<Datum>)> = None;
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
        let replace = match slot {
            None => true,
            Some((_, current)) => is_tighter(&bound, current, tighter),
        };
        if replace {
            *slot = Some((i, bound));
        }
    }
    if lower.is_none() && upper.is_none() {
        let like = predicates.iter().enumerate().find_map(|(i, p)| match p {
            Predicate::LikePrefix { column: c, prefix } if *c == column => Some((i, prefix)),
            _ => None,
        });
        return match like {
            Some((i, prefix)) => {
                used[i] = true;
                KeyBound::TextPrefix(prefix.clone())
            }
            None => KeyBound::All,
        };
    }
    let mut take = |slot: Option<(usize, Bound<Datum>)>| match slot {
        Some((i, bound)) => {
            used[i] = true;
            bound
        }
        None => Bound::Unbounded,
    };
    KeyBound::Range {
        lower: take(lower),
        upper: take(upper),
    }
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
