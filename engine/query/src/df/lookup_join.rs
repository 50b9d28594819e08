//! `LookupJoinExec`: a join that reads one side (the probed table) by the values the other
//! side (the driving input, its only child) produces, through the probed table's primary key
//! or an index, instead of reading it whole for a hash join. `df::rules::lookup_joins` puts it
//! in place of a hash join when the planner's estimates say the probes cost less.
//!
//! The output keeps the driving rows' order (but for a semi join whose output is the probed
//! side), and claims no order of the probed side. EXPLAIN prints `LOOKUP JOIN` with the lookup
//! and its estimate; VERBOSE adds the joins weighed, ANALYZE the probes made.

mod assemble;
mod spec;
mod stream;

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{JoinSide, JoinType, project_schema};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::equivalence::{ProjectionMapping, join_equivalence_properties};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties,
};
use rowdex_planner::lookup::LookupEstimate;

pub(crate) use spec::{Emit, LookupSpec};
use stream::{LookupCounts, lookup_stream};

use crate::df::scan_exec::ReadEstimate;

/// What a lookup join was expected to do when it was chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LookupCosting {
    /// Driving rows, each a probe (an upper bound: equal keys are probed once).
    pub(crate) probes: f64,
    /// What the probes find and cost.
    pub(crate) lookup: LookupEstimate,
    /// What the whole join yields and costs, its driving side included (for a join above
    /// that weighs this one as its driving side).
    pub(crate) total: ReadEstimate,
}

pub(crate) struct LookupJoinExec {
    driving: Arc<dyn ExecutionPlan>,
    spec: Arc<LookupSpec>,
    estimate: LookupCosting,
    /// The joins weighed for it, as EXPLAIN VERBOSE lists them.
    weighed: Arc<Vec<String>>,
    fetch: Option<usize>,
    counts: Arc<LookupCounts>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for LookupJoinExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LookupJoinExec")
            .field("lookup", &self.spec.described)
            .finish_non_exhaustive()
    }
}

impl LookupJoinExec {
    pub(crate) fn try_new(
        driving: Arc<dyn ExecutionPlan>,
        spec: LookupSpec,
        estimate: LookupCosting,
        weighed: Vec<String>,
    ) -> DfResult<LookupJoinExec> {
        let schema = project_schema(&spec.join_schema, spec.projection.as_ref())?;
        let properties = properties(&driving, &spec, &schema)?;
        Ok(LookupJoinExec {
            driving,
            spec: Arc::new(spec),
            estimate,
            weighed: Arc::new(weighed),
            fetch: None,
            counts: Arc::default(),
            schema,
            properties: Arc::new(properties),
        })
    }

    /// EXPLAIN's line: `LOOKUP JOIN orders using index o_user [user_id = u.id] (est. ...)`.
    pub(crate) fn explain_text(&self) -> String {
        let kind = match self.spec.emit {
            Emit::Pairs { outer: false } => "",
            Emit::Pairs { outer: true } if self.spec.join_type == JoinType::Right => "RIGHT ",
            Emit::Pairs { outer: true } => "LEFT ",
            Emit::Semi | Emit::ProbedSemi => "SEMI ",
            Emit::Anti => "ANTI ",
        };
        let mut text = format!("{kind}LOOKUP JOIN {}", self.spec.described);
        let LookupCosting { probes, lookup, .. } = self.estimate;
        if probes.is_finite() && lookup.cost_us.is_finite() {
            text.push_str(&format!(
                " (est. probes={probes:.0} rows={:.0} cost={:.0}us)",
                lookup.rows, lookup.cost_us
            ));
        }
        text
    }

    /// The joins weighed, cheapest first (EXPLAIN VERBOSE).
    pub(crate) fn weighed(&self) -> &[String] {
        &self.weighed
    }

    /// What the join did, once run (EXPLAIN ANALYZE): its probes, then what reading them did.
    pub(crate) fn actual_lines(&self) -> Vec<String> {
        use std::sync::atomic::Ordering::Relaxed;
        vec![
            format!(
                "  probes: keys={} reads={} rows found={}",
                self.counts.probes.load(Relaxed),
                self.counts.batches.load(Relaxed),
                self.counts.found.load(Relaxed)
            ),
            match self.spec.scan() {
                Ok(scan) => scan.reads().line(),
                Err(_) => String::new(),
            },
        ]
    }

    /// The join's expected rows and cost, its driving side's included (None when a hint
    /// chose it without an estimate).
    pub(crate) fn total_estimate(&self) -> Option<ReadEstimate> {
        let total = self.estimate.total;
        (total.rows.is_finite() && total.cost_us.is_finite()).then_some(total)
    }

    fn with_driving(&self, driving: Arc<dyn ExecutionPlan>) -> DfResult<LookupJoinExec> {
        let properties = properties(&driving, &self.spec, &self.schema)?;
        Ok(LookupJoinExec {
            driving,
            spec: self.spec.clone(),
            estimate: self.estimate,
            weighed: self.weighed.clone(),
            fetch: self.fetch,
            counts: self.counts.clone(),
            schema: self.schema.clone(),
            properties: Arc::new(properties),
        })
    }
}

/// The join's properties: the driving input's partitions, and its order and equivalences
/// (with the join's equalities); nothing of the probed side's order, which probes do not keep.
fn properties(
    driving: &Arc<dyn ExecutionPlan>,
    spec: &LookupSpec,
    schema: &SchemaRef,
) -> DfResult<PlanProperties> {
    let driving_properties = driving.equivalence_properties().clone();
    let probed_properties = EquivalenceProperties::new(spec.probed.schema());
    let keeps = spec.emit.keeps_driving_order();
    let (left, right, maintains) = match spec.driving_side {
        JoinSide::Right => (probed_properties, driving_properties, [false, keeps]),
        _ => (driving_properties, probed_properties, [keeps, false]),
    };
    let on: Vec<_> = spec
        .driving_keys
        .iter()
        .zip(&spec.probed_keys)
        .map(|(driving, &probed)| {
            let name = spec.probed.schema().field(probed).name().clone();
            let probed: Arc<dyn PhysicalExpr> = Arc::new(
                datafusion::physical_plan::expressions::Column::new(&name, probed),
            );
            match spec.driving_side {
                JoinSide::Right => (probed, driving.clone()),
                _ => (driving.clone(), probed),
            }
        })
        .collect();
    let mut equivalence = join_equivalence_properties(
        left,
        right,
        &spec.join_type,
        spec.join_schema.clone(),
        &maintains,
        None,
        &on,
    )?;
    if let Some(projection) = &spec.projection {
        let mapping = ProjectionMapping::from_indices(projection, &spec.join_schema)?;
        equivalence = equivalence.project(&mapping, schema.clone());
    }
    Ok(PlanProperties::new(
        equivalence,
        Partitioning::UnknownPartitioning(driving.output_partitioning().partition_count()),
        EmissionType::Incremental,
        Boundedness::Bounded,
    ))
}

impl DisplayAs for LookupJoinExec {
    fn fmt_as(&self, _format: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LookupJoinExec: {} join_type={}",
            self.explain_text(),
            self.spec.join_type
        )?;
        if let Some(projection) = &self.spec.projection {
            let names: Vec<String> = projection
                .iter()
                .map(|&i| format!("{}@{i}", self.spec.join_schema.field(i).name()))
                .collect();
            write!(f, ", projection=[{}]", names.join(", "))?;
        }
        if let Some(fetch) = self.fetch {
            write!(f, ", fetch={fetch}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for LookupJoinExec {
    fn name(&self) -> &str {
        "LookupJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.driving]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        for expr in &self.spec.driving_keys {
            if f(expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    /// A semi join that emits probed rows remembers the keys it probed, so that each probed
    /// row is emitted once: that takes every driving row in one stream.
    fn required_input_distribution(&self) -> Vec<Distribution> {
        match self.spec.emit {
            Emit::ProbedSemi => vec![Distribution::SinglePartition],
            _ => vec![Distribution::UnspecifiedDistribution],
        }
    }

    /// Whether a sort of the output is a sort of the driving input with the same column
    /// positions, which is what DataFusion takes this to mean when it pushes a sort below the
    /// join: only when the output starts with the driving columns, unprojected. (The output's
    /// order is declared through its equivalences either way.)
    fn maintains_input_order(&self) -> Vec<bool> {
        let spec = &self.spec;
        let driving_first = match spec.emit {
            Emit::Pairs { .. } => spec.driving_side == JoinSide::Left,
            Emit::Semi | Emit::Anti => true,
            Emit::ProbedSemi => false,
        };
        vec![driving_first && spec.projection.is_none()]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let driving = children.into_iter().next().ok_or_else(|| {
            DataFusionError::Internal("LookupJoinExec needs one child".to_string())
        })?;
        Ok(Arc::new(self.with_driving(driving)?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let driving = self.driving.execute(partition, context.clone())?;
        Ok(lookup_stream(
            self.spec.clone(),
            driving,
            context,
            self.fetch,
            self.counts.clone(),
            self.schema.clone(),
        ))
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        let mut join = self.with_driving(self.driving.clone()).ok()?;
        join.fetch = limit;
        Some(Arc::new(join))
    }

    fn fetch(&self) -> Option<usize> {
        self.fetch
    }
}
