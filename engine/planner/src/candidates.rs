//! The access paths worth costing for one scan: the primary-key path, one index scan per index
//! whose leading columns the predicates constrain, intersections of those index scans, and
//! unions answering an OR arm by arm (`union`).

use std::sync::Arc;

use rowdex_catalog::TableDef;
use rowdex_store::Direction;

use crate::partial::{answers, guaranteed};
use crate::path::{AccessPath, IndexInput, ScanPlan};
use crate::predicate::Predicate;
use crate::primary_key::{match_key, plan_scan};
use crate::union::{UnionPath, union_paths};

/// Intersections are enumerated over every subset of at most this many index inputs; beyond it
/// only the whole set is tried.
const MAX_SUBSET_INPUTS: usize = 4;

/// Index inputs each union is also intersected with (one at a time).
const MAX_UNION_PARTNERS: usize = 3;

/// A Phoenix-style hint: `/*+ INDEX(t idx ...) */` or `/*+ NO_INDEX */`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum IndexHint {
    #[default]
    Auto,
    /// Only these indexes may be used (and are preferred over the primary-key path).
    Use(Vec<String>),
    /// Read by primary key only.
    NoIndex,
    /// `/*+ INDEX_MERGE(t i1 i2 ...) */`: intersect exactly these indexes (as MySQL's hint).
    Merge(Vec<String>),
}

impl IndexHint {
    /// Whether the hint lets a plan use the index `name`.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            IndexHint::Use(names) | IndexHint::Merge(names) => names.iter().any(|n| n == name),
            IndexHint::Auto => true,
            IndexHint::NoIndex => false,
        }
    }
}

/// What a scan of one table must produce.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    pub table: Arc<TableDef>,
    pub predicates: Vec<Predicate>,
    pub direction: Direction,
    pub offset: usize,
    pub limit: Option<usize>,
    /// Columns the query reads (None = all): an index holding all of them needs no row lookup.
    pub needed: Option<Vec<usize>>,
    pub hint: IndexHint,
}

/// Every plan worth costing, the primary-key plan first.
pub fn candidates(request: &ScanRequest) -> Vec<ScanPlan> {
    let table = &request.table;
    let mut pk = plan_scan(
        table.clone(),
        request.predicates.clone(),
        request.direction,
        request.offset,
        request.limit,
    );
    pk.needed = request.needed.clone();
    if matches!(
        pk.path,
        AccessPath::PointGet { .. } | AccessPath::MultiGet { .. }
    ) || request.hint == IndexHint::NoIndex
    {
        return vec![pk];
    }
    // One input per usable index, with the predicates it consumes.
    let mut inputs: Vec<(IndexInput, Vec<bool>)> = Vec::new();
    for (position, index) in table.ready_indexes() {
        if !request.hint.allows(&index.name) || !answers(index, &request.predicates) {
            continue;
        }
        let matched = match_key(&table.entry_key_columns(index), &request.predicates);
        // What a partial index's condition guarantees of its rows needs no check either: such
        // an index answers that condition by itself (read whole, it holds just those rows).
        let depth = matched.depth();
        let mut used = matched.used;
        let mut answered = false;
        for (slot, predicate) in used.iter_mut().zip(&request.predicates) {
            let by_filter = guaranteed(index, predicate);
            answered |= by_filter && !*slot;
            *slot = *slot || by_filter;
        }
        if depth == 0 && !answered {
            continue;
        }
        inputs.push((
            IndexInput {
                index: position,
                prefixes: matched.tuples,
                bound: matched.bound,
            },
            used,
        ));
    }
    if matches!(request.hint, IndexHint::Merge(_)) && inputs.len() >= 2 {
        let all: Vec<&(IndexInput, Vec<bool>)> = inputs.iter().collect();
        return vec![intersection(request, &all)];
    }
    // Each union alone, and intersected with each index input of the other conditions.
    let mut unions: Vec<ScanPlan> = Vec::new();
    for union in union_paths(table, &request.predicates, &|name| {
        request.hint.allows(name)
    }) {
        for input in inputs.iter().take(MAX_UNION_PARTNERS) {
            unions.push(union_plan(request, union.clone(), Some(input)));
        }
        unions.push(union_plan(request, union, None));
    }
    if matches!(request.hint, IndexHint::Merge(_)) && !unions.is_empty() {
        return unions;
    }
    let mut plans = Vec::new();
    if !matches!(request.hint, IndexHint::Use(_)) || inputs.is_empty() {
        plans.push(pk);
    }
    for (input, used) in &inputs {
        let residual = residual_of(&request.predicates, &[used]);
        let covering = table
            .indexes
            .get(input.index)
            .is_some_and(|index| table.index_covers(index, &needed_columns(request, &residual)));
        plans.push(plan(
            request,
            AccessPath::IndexScan {
                input: input.clone(),
                covering,
            },
            residual,
        ));
    }
    // Intersections only help with inputs that each consume something the others do not.
    let useful: Vec<&(IndexInput, Vec<bool>)> = inputs
        .iter()
        .enumerate()
        .filter(|(i, (_, used))| {
            !inputs.iter().enumerate().any(|(j, (_, other))| {
                j != *i
                    && used.iter().zip(other).all(|(a, b)| !a || *b)
                    && (other != used || j < *i)
            })
        })
        .map(|(_, input)| input)
        .collect();
    if useful.len() >= 2 {
        let subsets: Vec<Vec<usize>> = if useful.len() <= MAX_SUBSET_INPUTS {
            (1u32..(1 << useful.len()))
                .filter(|mask| mask.count_ones() >= 2)
                .map(|mask| (0..useful.len()).filter(|i| mask & (1 << i) != 0).collect())
                .collect()
        } else {
            vec![(0..useful.len()).collect()]
        };
        for subset in subsets {
            let chosen: Vec<&(IndexInput, Vec<bool>)> = subset.iter().map(|i| useful[*i]).collect();
            plans.push(intersection(request, &chosen));
        }
    }
    plans.extend(unions);
    plans
}

/// The plan of a union, alone or intersected with `partner` (an index input with the
/// predicates it consumes): the OR it answers exactly and what the partner consumes leave the
/// residual; like an intersection it covers the query only when the primary key is all the
/// query reads.
fn union_plan(
    request: &ScanRequest,
    union: UnionPath,
    partner: Option<&(IndexInput, Vec<bool>)>,
) -> ScanPlan {
    let used = |i: usize| partner.is_some_and(|(_, used)| used.get(i).copied().unwrap_or(false));
    let residual: Vec<Predicate> = request
        .predicates
        .iter()
        .enumerate()
        .filter(|(i, _)| union.consumed != Some(*i) && !used(*i))
        .map(|(_, p)| p.clone())
        .collect();
    let covering = needed_columns(request, &residual)
        .iter()
        .all(|c| request.table.key_position(*c).is_some());
    plan(
        request,
        AccessPath::IndexUnion {
            arms: union.arms,
            condition: union.condition,
            also: partner
                .map(|(input, _)| input.clone())
                .into_iter()
                .collect(),
            also_drives: false,
            covering,
        },
        residual,
    )
}

/// The intersection of `inputs` (each with the predicates it consumes); it covers the query
/// only when the primary key is all the query reads, since the merge yields primary keys.
fn intersection(request: &ScanRequest, inputs: &[&(IndexInput, Vec<bool>)]) -> ScanPlan {
    let used: Vec<&Vec<bool>> = inputs.iter().map(|(_, used)| used).collect();
    let residual = residual_of(&request.predicates, &used);
    let covering = needed_columns(request, &residual)
        .iter()
        .all(|c| request.table.key_position(*c).is_some());
    plan(
        request,
        AccessPath::IndexIntersection {
            inputs: inputs.iter().map(|(input, _)| input.clone()).collect(),
            // The cost model decides which inputs to check rather than read.
            checked: Vec::new(),
            covering,
        },
        residual,
    )
}

/// A scan of the whole index at `position` (narrowed by whatever the predicates fix), for a
/// query that wants the index's order rather than its selectivity: `ORDER BY` its columns.
/// Whether it covers the query is in the path: a non-covering one pays a row lookup per entry,
/// which only a small LIMIT makes worthwhile.
pub fn ordered_index_scan(request: &ScanRequest, position: usize) -> Option<ScanPlan> {
    let table = &request.table;
    let index = table
        .indexes
        .get(position)
        .filter(|i| i.is_ready() && answers(i, &request.predicates))?;
    let matched = match_key(&table.entry_key_columns(index), &request.predicates);
    let mut residual = matched.residual(&request.predicates);
    residual.retain(|predicate| !guaranteed(index, predicate));
    let covering = table.index_covers(index, &needed_columns(request, &residual));
    Some(plan(
        request,
        AccessPath::IndexScan {
            input: IndexInput {
                index: position,
                prefixes: matched.tuples,
                bound: matched.bound,
            },
            covering,
        },
        residual,
    ))
}

fn plan(request: &ScanRequest, path: AccessPath, residual: Vec<Predicate>) -> ScanPlan {
    ScanPlan {
        table: request.table.clone(),
        path,
        residual,
        direction: Direction::Forward,
        offset: request.offset,
        limit: request.limit,
        estimate: None,
        resume_after: None,
        partition: None,
        merged: false,
        needed: request.needed.clone(),
    }
}

/// The predicates none of the `used` masks consumes.
pub(crate) fn residual_of(predicates: &[Predicate], used: &[&Vec<bool>]) -> Vec<Predicate> {
    predicates
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            !used
                .iter()
                .any(|mask| mask.get(*i).copied().unwrap_or(false))
        })
        .map(|(_, p)| p.clone())
        .collect()
}

/// The columns a plan must produce: the query's, plus those its residual filter reads.
fn needed_columns(request: &ScanRequest, residual: &[Predicate]) -> Vec<usize> {
    let mut needed = match &request.needed {
        Some(columns) => columns.clone(),
        None => (0..request.table.columns.len()).collect(),
    };
    needed.extend(residual.iter().flat_map(Predicate::columns));
    needed.sort_unstable();
    needed.dedup();
    needed
}
