//! Binding a compiled query's conditions to a run's values: literals and parameters made
//! values of the columns they are compared with, comparisons with NULL found unsatisfiable,
//! and the columns the conditions fix to one value.

use std::collections::HashSet;

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_planner::{CmpOp, Predicate, ScanPlan};

use crate::native::scope::Slot;
use crate::values::exact_value;
use crate::write::generated::Generation;
use crate::write::implied::implied_conditions;

/// A native query with its values bound.
#[derive(Debug)]
pub(crate) struct Bound {
    pub(crate) predicates: Vec<Predicate>,
    /// A comparison with NULL: no row can match.
    pub(crate) unsatisfiable: bool,
    /// Columns a condition fixes to one value.
    pub(crate) constants: HashSet<usize>,
    pub(crate) offset: usize,
    pub(crate) limit: Option<usize>,
}

impl Bound {
    /// `scan` with the query's OFFSET and LIMIT (a path read in the ORDER BY's order applies
    /// them itself).
    pub(crate) fn windowed(&self, mut scan: ScanPlan) -> ScanPlan {
        scan.offset = self.offset;
        scan.limit = self.limit;
        scan
    }

    /// Adds the conditions on generated columns that the bound conditions imply (see
    /// `write::implied`); a generated column fixed to one value is a constant too.
    pub(crate) fn add_implied(&mut self, table: &TableDef, generation: Option<&Generation>) {
        if self.unsatisfiable || generation.is_none() {
            return;
        }
        for condition in implied_conditions(table, generation, &self.predicates) {
            if let Predicate::Compare {
                column,
                op: CmpOp::Eq,
                ..
            } = &condition
            {
                self.constants.insert(*column);
            }
            self.predicates.push(condition);
        }
    }
}

/// Binds `conditions` on `table` to `params` (see [`NativeQuery::bind`]): the predicates, and
/// whether one compares with NULL; the OFFSET and LIMIT are left unset.
pub(crate) fn bind_conditions(
    table: &TableDef,
    conditions: &[Predicate<Slot>],
    params: &[Datum],
) -> Option<Bound> {
    let mut bound = Bound {
        predicates: Vec::with_capacity(conditions.len()),
        unsatisfiable: false,
        constants: HashSet::new(),
        offset: 0,
        limit: None,
    };
    bind_conjunction(table, conditions, params, &mut bound)?;
    Some(bound)
}

/// Binds the conjunction `conditions` into `bound`. An OR's arms are bound each on its own: an
/// arm comparing with NULL drops out (the OR is unsatisfiable when all do), and what an arm
/// fixes is no constant of the query.
fn bind_conjunction(
    table: &TableDef,
    conditions: &[Predicate<Slot>],
    params: &[Datum],
    bound: &mut Bound,
) -> Option<()> {
    let value = |slot: &Slot| match slot {
        Slot::Value(datum) => Some(datum.clone()),
        Slot::Param(i) => params.get(*i).cloned(),
    };
    for condition in conditions {
        let predicate = match condition {
            Predicate::Or { arms } => {
                let mut bound_arms = Vec::with_capacity(arms.len());
                for arm in arms {
                    let mut arm_bound = Bound {
                        predicates: Vec::with_capacity(arm.len()),
                        unsatisfiable: false,
                        constants: HashSet::new(),
                        offset: 0,
                        limit: None,
                    };
                    bind_conjunction(table, arm, params, &mut arm_bound)?;
                    if !arm_bound.unsatisfiable {
                        bound_arms.push(arm_bound.predicates);
                    }
                }
                if bound_arms.is_empty() {
                    bound.unsatisfiable = true;
                } else {
                    bound.predicates.extend(Predicate::any_of(bound_arms));
                }
                continue;
            }
            Predicate::Compare {
                column,
                op,
                value: slot,
            } => {
                let datum = value(slot)?;
                if datum.is_null() {
                    bound.unsatisfiable = true;
                    continue;
                }
                if *op == CmpOp::Eq {
                    bound.constants.insert(*column);
                }
                Predicate::Compare {
                    column: *column,
                    op: *op,
                    value: exact_value(table, *column, datum)?,
                }
            }
            Predicate::InList { column, values } => {
                let mut list = Vec::with_capacity(values.len());
                for slot in values {
                    let datum = value(slot)?;
                    // NULL in an IN list makes the test unknown, never true.
                    if !datum.is_null() {
                        list.push(exact_value(table, *column, datum)?);
                    }
                }
                if list.is_empty() {
                    bound.unsatisfiable = true;
                    continue;
                }
                if list.iter().all(|v| v == &list[0]) {
                    bound.constants.insert(*column);
                }
                Predicate::InList {
                    column: *column,
                    values: list,
                }
            }
            Predicate::Like { column, pattern } => Predicate::Like {
                column: *column,
                pattern: pattern.clone(),
            },
            Predicate::IsNull { column } => {
                bound.constants.insert(*column);
                Predicate::IsNull { column: *column }
            }
            Predicate::IsNotNull { column } => Predicate::IsNotNull { column: *column },
            Predicate::RowCompare {
                columns,
                op,
                values,
            } => {
                let mut bound_values = Vec::with_capacity(values.len());
                for (column, slot) in columns.iter().zip(values) {
                    // A NULL in a row value: left to DataFusion (see `row_compare`).
                    let datum = value(slot).filter(|d| !d.is_null())?;
                    bound_values.push(exact_value(table, *column, datum)?);
                }
                Predicate::RowCompare {
                    columns: columns.clone(),
                    op: *op,
                    values: bound_values,
                }
            }
        };
        bound.predicates.push(predicate);
    }
    Some(())
}

/// An OFFSET or LIMIT bound to `params`: Some(None) without one, None when it is not a count.
pub(crate) fn bind_count(slot: Option<&Slot>, params: &[Datum]) -> Option<Option<usize>> {
    let Some(slot) = slot else {
        return Some(None);
    };
    let value = match slot {
        Slot::Value(datum) => datum.clone(),
        Slot::Param(i) => params.get(*i)?.clone(),
    };
    match value {
        Datum::Int(n) => usize::try_from(n).ok().map(Some),
        _ => None,
    }
}
