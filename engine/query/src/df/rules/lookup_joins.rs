//! `ChooseLookupJoins`: replaces a hash join by a [`LookupJoinExec`] when probing one side by
//! the other side's values costs less than reading it whole (issue 44).
//!
//! It runs after DataFusion's `JoinSelection` and before `EnsureRequirements` (so sorts are
//! still to be decided, and the driving side's order, which a lookup join keeps, can spare
//! one), bottom up, so a join of three tables sees the lookup join below it as its driving side.
//! For each equi-join it tries each side that may be probed (a rowdex scan, perhaps under
//! filters and column-only projections, joined on its plain columns of the same type as the
//! driving values): the templates its primary key and indexes offer (`planner::lookup`),
//! priced for the driving side's expected rows, against the hash join, which reads both sides
//! whole. Estimates err upward, toward the hash join: the driving rows are the rows its path
//! yields before any filter. A table of fewer than [`LOOKUP_MIN_TABLE_ROWS`] rows is read
//! whole. `/*+ LOOKUP_JOIN(t) */` probes `t` whenever a template exists, `/*+ HASH_JOIN(t) */`
//! never does.

mod sides;

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{JoinSide, NullEquality};
use datafusion::error::Result as DfResult;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::joins::HashJoinExec;
use rowdex_catalog::DataType;
use rowdex_planner::lookup::{
    JoinHint, LOOKUP_MIN_TABLE_ROWS, LookupEstimate, LookupTemplate, lookup_templates,
};

use crate::df::lookup_join::{Emit, LookupCosting, LookupJoinExec, LookupSpec};
use crate::df::rules::lookup_joins::sides::{ProbedSide, hash_join_estimate, side_estimate};
use crate::df::scan_exec::ReadEstimate;

/// See the module's header.
#[derive(Debug, Default)]
pub struct ChooseLookupJoins;

impl PhysicalOptimizerRule for ChooseLookupJoins {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(join) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            Ok(match choose(join)? {
                Some(lookup) => Transformed::yes(Arc::new(lookup) as Arc<dyn ExecutionPlan>),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "rowdex_lookup_joins"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// One way to run a join as a lookup join: which side drives, the lookup into the other, and
/// what it is expected to cost.
struct Candidate {
    driving_side: JoinSide,
    probed: ProbedSide,
    /// Per equality of the join: the driving expression and the probed column's position in
    /// the probed side's output and in its table.
    keys: Vec<(
        Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        usize,
        usize,
    )>,
    template: LookupTemplate,
    emit: Emit,
    hint: JoinHint,
    probes: Option<f64>,
    lookup: Option<LookupEstimate>,
    /// The whole join's cost this way (the driving side read, then the probes).
    total: Option<ReadEstimate>,
}

/// The lookup join to run `join` as, if one is cheaper or hinted.
fn choose(join: &HashJoinExec) -> DfResult<Option<LookupJoinExec>> {
    // A LIMIT already on the join is left to it (the rule runs before DataFusion pushes
    // limits, so there is none but in a plan optimized twice).
    let limited = join.fetch().is_some();
    if limited || join.null_aware || join.null_equality() != NullEquality::NullEqualsNothing {
        return Ok(None);
    }
    let hash = hash_join_estimate(join).map(|estimate| estimate.cost_us);
    let mut candidates: Vec<Candidate> = [JoinSide::Left, JoinSide::Right]
        .into_iter()
        .filter_map(|driving_side| candidate(join, driving_side))
        .collect();
    candidates.retain(|c| c.hint != JoinHint::Hash);
    candidates.sort_by(|a, b| {
        let cost = |c: &Candidate| c.total.map_or(f64::INFINITY, |t| t.cost_us);
        cost(a).total_cmp(&cost(b))
    });
    let forced = candidates.iter().position(|c| c.hint == JoinHint::Lookup);
    let chosen = match forced {
        Some(position) => Some(position),
        None => candidates.iter().position(|c| {
            let big_enough = c
                .probed
                .scan()
                .and_then(|scan| scan.join_facts().rows)
                .is_some_and(|rows| rows >= LOOKUP_MIN_TABLE_ROWS);
            match (c.total, hash) {
                (Some(total), Some(hash)) => big_enough && total.cost_us < hash,
                _ => false,
            }
        }),
    };
    let Some(chosen) = chosen else {
        return Ok(None);
    };
    let weighed = weighed_lines(&candidates, chosen, hash, join);
    let candidate = candidates.swap_remove(chosen);
    build(join, candidate, weighed).map(Some)
}

/// `join` run by probing the side opposite `driving_side`, when that side can be probed.
fn candidate(join: &HashJoinExec, driving_side: JoinSide) -> Option<Candidate> {
    let emit = Emit::of(*join.join_type(), driving_side, join.filter().is_some())?;
    let (driving, probed_plan) = match driving_side {
        JoinSide::Left => (join.left(), join.right()),
        _ => (join.right(), join.left()),
    };
    let probed = ProbedSide::find(probed_plan)?;
    let scan = probed.scan()?;
    let table = scan.plan().table.clone();
    let driving_schema = driving.schema();
    let probed_schema = probed_plan.schema();
    let mut keys = Vec::new();
    for (left, right) in join.on() {
        let (driving_expr, probed_expr) = match driving_side {
            JoinSide::Left => (left, right),
            _ => (right, left),
        };
        let position = probed_expr.downcast_ref::<Column>()?.index();
        let column = probed.columns.get(position).copied().flatten()?;
        // Equal Arrow types, so a driving value converts to the column's exactly; floats are
        // left to the hash join (their key encoding and its equality differ on -0.0 and NaN).
        let same_type = driving_expr.data_type(&driving_schema).ok()?
            == *probed_schema.field(position).data_type();
        let float = matches!(table.columns.get(column)?.data_type, DataType::Float);
        if !same_type || float {
            return None;
        }
        keys.push((driving_expr.clone(), position, column));
    }
    let facts = scan.join_facts();
    let join_columns: Vec<usize> = keys.iter().map(|k| k.2).collect();
    let templates = lookup_templates(
        &table,
        &join_columns,
        scan.predicates(),
        Some(scan.projection()),
        &facts.index_hint,
    );
    let driving_estimate = side_estimate(driving);
    let probes = driving_estimate.map(|d| d.rows.max(1.0));
    let priced = |template: &LookupTemplate| -> Option<LookupEstimate> {
        let rows = facts.rows?;
        let per_probe = template.rows_per_probe(facts.statistics.as_deref(), rows);
        Some(template.estimate(probes?, per_probe, facts.costs?))
    };
    let mut best: Option<(LookupTemplate, Option<LookupEstimate>)> = None;
    for template in templates {
        let estimate = priced(&template);
        let cheaper = match (&best, estimate) {
            (None, _) => true,
            (Some((_, Some(current))), Some(new)) => new.cost_us < current.cost_us,
            (Some((_, None)), Some(_)) => true,
            (Some(_), None) => false,
        };
        if cheaper {
            best = Some((template, estimate));
        }
    }
    let (template, lookup) = best?;
    let total = match (driving_estimate, lookup) {
        (Some(driving), Some(lookup)) => Some(ReadEstimate {
            rows: match emit {
                Emit::Pairs { outer: false } | Emit::ProbedSemi => lookup.rows,
                Emit::Pairs { outer: true } => lookup.rows.max(driving.rows),
                Emit::Semi | Emit::Anti => driving.rows,
            },
            cost_us: driving.cost_us + lookup.cost_us,
        }),
        _ => None,
    };
    Some(Candidate {
        driving_side,
        hint: facts.hint,
        probed,
        keys,
        template,
        emit,
        probes,
        lookup,
        total,
    })
}

/// EXPLAIN VERBOSE's lines: the lookup joins weighed and the hash join, the chosen one marked.
fn weighed_lines(
    candidates: &[Candidate],
    chosen: usize,
    hash: Option<f64>,
    join: &HashJoinExec,
) -> Vec<String> {
    let cost = |c: Option<f64>| c.map_or("unknown".to_string(), |c| format!("{c:.0}us"));
    let mut lines = vec!["  joins weighed by estimated cost:".to_string()];
    for (i, candidate) in candidates.iter().enumerate() {
        let mark = if i == chosen { "*" } else { " " };
        lines.push(format!(
            "  {mark} LOOKUP JOIN {} (est. cost={})",
            candidate.template.describe(&driving_names(candidate)),
            cost(candidate.total.map(|t| t.cost_us))
        ));
    }
    lines.push(format!(
        "    HASH JOIN reading both sides whole (est. cost={}) join_type={}",
        cost(hash),
        join.join_type()
    ));
    lines
}

/// The driving side's value for each join column, as EXPLAIN names it.
fn driving_names(candidate: &Candidate) -> Vec<String> {
    candidate
        .keys
        .iter()
        .map(|(expr, _, _)| match expr.downcast_ref::<Column>() {
            Some(column) => column.name().to_string(),
            None => expr.to_string(),
        })
        .collect()
}

fn build(
    join: &HashJoinExec,
    candidate: Candidate,
    weighed: Vec<String>,
) -> DfResult<LookupJoinExec> {
    let described = candidate.template.describe(&driving_names(&candidate));
    let (driving, probed) = match candidate.driving_side {
        JoinSide::Left => (join.left().clone(), join.right().clone()),
        _ => (join.right().clone(), join.left().clone()),
    };
    let unknown = ReadEstimate {
        rows: f64::NAN,
        cost_us: f64::NAN,
    };
    let costing = LookupCosting {
        probes: candidate.probes.unwrap_or(f64::NAN),
        lookup: candidate.lookup.unwrap_or(LookupEstimate {
            rows: f64::NAN,
            entries: f64::NAN,
            cost_us: f64::NAN,
        }),
        total: candidate.total.unwrap_or(unknown),
    };
    let spec = LookupSpec {
        probed,
        scan: candidate.probed.scan.clone(),
        lookup: candidate.template,
        driving_side: candidate.driving_side,
        driving_keys: candidate.keys.iter().map(|k| k.0.clone()).collect(),
        probed_keys: candidate.keys.iter().map(|k| k.1).collect(),
        join_columns: candidate.keys.iter().map(|k| k.2).collect(),
        join_type: *join.join_type(),
        emit: candidate.emit,
        filter: join.filter().cloned(),
        join_schema: join.join_schema().clone(),
        projection: join.projection.as_ref().map(|p| p.to_vec()),
        described,
    };
    LookupJoinExec::try_new(driving, spec, costing, weighed)
}
