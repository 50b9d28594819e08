//! A native query's plan choice, kept between runs: which candidate path won and how the rows
//! come out in order, so that a prepared statement or a cached compiled query plans once per
//! generation of its table's statistics instead of estimating and diving on every run. The
//! choice is replayed on the candidates built from each run's values; it lapses when the
//! statistics are gathered again (or loaded), when the hint, OFFSET or LIMIT differ, and with
//! the table's definition (a changed table recompiles the query).

use rowdex_planner::{AccessPath, IndexHint, IndexInput, KeyBound, ScanPlan, UnionArm};

/// Which candidate a plan is, whatever the values bound into it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PathShape {
    PointGet,
    MultiGet,
    /// A range scan, read merged across its prefix tuples or not.
    RangeScan {
        merged: bool,
    },
    FullScan,
    /// An index scan of the index at this position, narrowed by a condition or walked whole
    /// (an index read only for its order).
    Index {
        index: usize,
        narrowed: bool,
    },
    /// An intersection: merged inputs in merge order, then checked inputs (index positions).
    Intersection {
        inputs: Vec<usize>,
        checked: Vec<usize>,
    },
    /// A union: per arm, the index position it reads (None: the primary key); with the
    /// positions of the indexes it is intersected with.
    Union {
        arms: Vec<Option<usize>>,
        also: Vec<usize>,
    },
}

impl PathShape {
    pub(crate) fn of(plan: &ScanPlan) -> PathShape {
        match &plan.path {
            AccessPath::PointGet { .. } => PathShape::PointGet,
            AccessPath::MultiGet { .. } => PathShape::MultiGet,
            AccessPath::RangeScan { .. } => PathShape::RangeScan {
                merged: plan.merged,
            },
            AccessPath::FullScan => PathShape::FullScan,
            AccessPath::IndexScan { input, .. } => PathShape::Index {
                index: input.index,
                narrowed: !input.prefixes.is_empty() || input.bound != KeyBound::All,
            },
            AccessPath::IndexIntersection {
                inputs, checked, ..
            } => PathShape::Intersection {
                inputs: inputs.iter().map(|i| i.index).collect(),
                checked: checked.iter().map(|i| i.index).collect(),
            },
            AccessPath::IndexUnion { arms, also, .. } => PathShape::Union {
                arms: arms
                    .iter()
                    .map(|arm| match arm {
                        UnionArm::Index(input) => Some(input.index),
                        UnionArm::Key { .. } => None,
                    })
                    .collect(),
                also: also.iter().map(|input| input.index).collect(),
            },
        }
    }

    /// The candidate among `plans` of this shape, arranged as this shape says (an
    /// intersection's merge order and checked inputs are the cost model's arrangement).
    pub(crate) fn find(&self, plans: Vec<ScanPlan>) -> Option<ScanPlan> {
        plans.into_iter().find_map(|plan| self.arrange(plan))
    }

    fn arrange(&self, mut plan: ScanPlan) -> Option<ScanPlan> {
        match (self, &mut plan.path) {
            (
                PathShape::Intersection { inputs, checked },
                AccessPath::IndexIntersection {
                    inputs: plan_inputs,
                    checked: plan_checked,
                    ..
                },
            ) => {
                let mut all: Vec<IndexInput> = std::mem::take(plan_inputs);
                all.append(plan_checked);
                let mut take = |position: &usize| {
                    let at = all.iter().position(|i| i.index == *position)?;
                    Some(all.remove(at))
                };
                let merged: Option<Vec<IndexInput>> = inputs.iter().map(&mut take).collect();
                let checks: Option<Vec<IndexInput>> = checked.iter().map(&mut take).collect();
                if !all.is_empty() {
                    return None;
                }
                *plan_inputs = merged?;
                *plan_checked = checks?;
                Some(plan)
            }
            (shape, _) => (*shape == PathShape::of(&plan)).then_some(plan),
        }
    }
}

/// How the rows of the chosen path become the result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// The path read as is (a query without ORDER BY).
    Scan(PathShape),
    /// The path (a candidate for the query without its LIMIT) read in the ORDER BY's order.
    InOrder(PathShape),
    /// The path (likewise) read whole, then sorted.
    Sorted(PathShape),
    /// Left to DataFusion (a sort of many rows, or too many for the memory budget).
    DataFusion,
}

/// A decision and what it was made under.
#[derive(Debug, Clone)]
pub(crate) struct PlanChoice {
    pub(crate) generation: u64,
    pub(crate) hint: IndexHint,
    pub(crate) offset: usize,
    pub(crate) limit: Option<usize>,
    pub(crate) decision: Decision,
}
