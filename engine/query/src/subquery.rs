//! Correlated subqueries that DataFusion's decorrelation rules leave in the plan.
//!
//! DataFusion turns many subqueries into joins, but not, for example, a scalar
//! `(SELECT count(*) FROM t AS x WHERE x.c > t.c)` whose correlation is not an equality, nor an
//! `IN`/`EXISTS` outside a WHERE clause. Its physical planner rejects what is left. Such a
//! subquery is evaluated here the way SQLite evaluates every subquery: once per distinct set of
//! outer values. After optimisation, [`rewrite_plan`] moves each remaining subquery of a
//! projection or filter into an [`ApplyNode`] below it, which adds one column per subquery to
//! its input; [`ApplyExec`] fills the column by binding the outer values into the subquery's
//! plan as literals and running it, remembering the answer for repeated outer values.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, new_empty_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, DFSchemaRef, ScalarValue};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{
    Expr, Extension, Filter, LogicalPlan, LogicalPlanBuilder, Projection, UserDefinedLogicalNode,
    UserDefinedLogicalNodeCore,
};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties, collect,
};
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use futures::StreamExt;

/// The session's query planner: DataFusion's, after moving leftover subqueries into
/// [`ApplyNode`]s it knows how to run.
#[derive(Debug, Default)]
pub(crate) struct RowdexQueryPlanner;

#[async_trait]
impl QueryPlanner for RowdexQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = rewrite_plan(logical_plan.clone())?;
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(ApplyPlanner)])
            .create_physical_plan(&plan, session)
            .await
    }
}

/// What a subquery contributes to its row.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
enum SubqueryKind {
    /// Its single value, NULL when it returns no row.
    Scalar,
    /// Whether it returns a row.
    Exists { negated: bool },
    /// Whether `expr` (over the outer row) is among its values, with SQL's NULL rules.
    In { expr: Box<Expr>, negated: bool },
}

/// One subquery moved out of an expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
struct MovedSubquery {
    kind: SubqueryKind,
    plan: Arc<LogicalPlan>,
    /// Columns of the Apply input that the subquery (or a subquery nested in it) reads.
    outer: Vec<Column>,
    /// Name of the column that carries the result.
    output: String,
}

/// Adds a column per subquery to every row of `input`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApplyNode {
    input: LogicalPlan,
    subqueries: Vec<MovedSubquery>,
    schema: DFSchemaRef,
}

impl Hash for ApplyNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.input.hash(state);
        self.subqueries.hash(state);
    }
}

impl PartialOrd for ApplyNode {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        match self.input.partial_cmp(&other.input) {
            Some(std::cmp::Ordering::Equal) => self.subqueries.partial_cmp(&other.subqueries),
            order => order,
        }
    }
}

impl ApplyNode {
    fn try_new(input: LogicalPlan, subqueries: Vec<MovedSubquery>) -> DfResult<ApplyNode> {
        let mut fields = Vec::with_capacity(subqueries.len());
        for subquery in &subqueries {
            let data_type = match subquery.kind {
                SubqueryKind::Scalar => subquery.plan.schema().field(0).data_type().clone(),
                SubqueryKind::Exists { .. } | SubqueryKind::In { .. } => DataType::Boolean,
            };
            fields.push(Field::new(&subquery.output, data_type, true));
        }
        let added = DFSchema::from_unqualified_fields(fields.into(), HashMap::new())?;
        let mut schema = input.schema().as_ref().clone();
        schema.merge(&added);
        Ok(ApplyNode {
            input,
            subqueries,
            schema: Arc::new(schema),
        })
    }
}

impl UserDefinedLogicalNodeCore for ApplyNode {
    fn name(&self) -> &str {
        "Apply"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        // Built from analysed expressions, during or after optimisation: no rule needs to see
        // or rewrite them (a subquery's plan is optimised when it runs).
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<&str> = self.subqueries.iter().map(|s| s.output.as_str()).collect();
        write!(f, "Apply: {}", names.join(", "))
    }

    fn prevent_predicate_push_down_columns(&self) -> HashSet<String> {
        // A filter on the input's columns may go below; one on a subquery's answer may not.
        self.subqueries.iter().map(|s| s.output.clone()).collect()
    }

    fn necessary_children_exprs(&self, output_columns: &[usize]) -> Option<Vec<Vec<usize>>> {
        // The input columns the parent reads, and those the subqueries bind or compare.
        let input = self.input.schema();
        let mut needed: Vec<usize> = output_columns
            .iter()
            .copied()
            .filter(|i| *i < input.fields().len())
            .collect();
        for subquery in &self.subqueries {
            let mut columns: Vec<&Column> = subquery.outer.iter().collect();
            if let SubqueryKind::In { expr, .. } = &subquery.kind {
                columns.extend(expr.column_refs());
            }
            for column in columns {
                needed.push(input.index_of_column(column).ok()?);
            }
        }
        needed.sort_unstable();
        needed.dedup();
        Some(vec![needed])
    }

    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> DfResult<Self> {
        let input = inputs
            .into_iter()
            .next()
            .ok_or_else(|| DataFusionError::Internal("Apply needs one input".to_string()))?;
        ApplyNode::try_new(input, self.subqueries.clone())
    }
}

/// Moves every subquery DataFusion cannot plan out of projections and filters.
pub(crate) fn rewrite_plan(plan: LogicalPlan) -> DfResult<LogicalPlan> {
    let mut next_name = 0usize;
    plan.transform_up(|node| rewrite_node(node, &mut next_name))
        .map(|rewritten| rewritten.data)
}

fn rewrite_node(node: LogicalPlan, next_name: &mut usize) -> DfResult<Transformed<LogicalPlan>> {
    match node {
        LogicalPlan::Projection(projection) if projection.expr.iter().any(needs_apply) => {
            let input = Arc::unwrap_or_clone(projection.input);
            let mut moved = Vec::new();
            let mut exprs = Vec::with_capacity(projection.expr.len());
            for expr in projection.expr {
                let name = expr.schema_name().to_string();
                let replaced = move_subqueries(expr, input.schema(), &mut moved, next_name)?;
                exprs.push(replaced.alias_if_changed(name)?);
            }
            let apply = apply_plan(input, moved)?;
            let projection = Projection::try_new(exprs, Arc::new(apply))?;
            Ok(Transformed::yes(LogicalPlan::Projection(projection)))
        }
        LogicalPlan::Filter(filter) if needs_apply(&filter.predicate) => {
            let input = Arc::unwrap_or_clone(filter.input);
            filter_with_apply(filter.predicate, input, next_name).map(Transformed::yes)
        }
        other => Ok(Transformed::no(other)),
    }
}

/// `input` filtered by `predicate`, whose subqueries an [`ApplyNode`] below the filter
/// evaluates per row. The result has `input`'s columns.
///
/// The optimizer calls this too (see `predicate_subquery`): once the subqueries sit in an
/// `ApplyNode`, DataFusion cannot push the filter into a view, where the subqueries' outer
/// columns would no longer be in scope.
pub(crate) fn filter_with_apply(
    predicate: Expr,
    input: LogicalPlan,
    next_name: &mut usize,
) -> DfResult<LogicalPlan> {
    let kept: Vec<Expr> = input
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let mut moved = Vec::new();
    let predicate = move_subqueries(predicate, input.schema(), &mut moved, next_name)?;
    let apply = apply_plan(input, moved)?;
    let filtered = LogicalPlan::Filter(Filter::try_new(predicate, Arc::new(apply))?);
    // The added columns stop here: the filter's parent expects its input's columns.
    let projection = Projection::try_new(kept, Arc::new(filtered))?;
    Ok(LogicalPlan::Projection(projection))
}

fn apply_plan(input: LogicalPlan, moved: Vec<MovedSubquery>) -> DfResult<LogicalPlan> {
    Ok(LogicalPlan::Extension(Extension {
        node: Arc::new(ApplyNode::try_new(input, moved)?),
    }))
}

/// Whether `expr` holds a subquery the physical planner cannot run: any EXISTS or IN subquery
/// left after optimisation, or a scalar subquery that reads the outer row.
fn needs_apply(expr: &Expr) -> bool {
    let mut found = false;
    let _ = expr.apply(|e| {
        found = match e {
            Expr::Exists(_) | Expr::InSubquery(_) => true,
            Expr::ScalarSubquery(subquery) => reads_outer(&subquery.subquery),
            _ => false,
        };
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

fn reads_outer(plan: &LogicalPlan) -> bool {
    !outer_columns(plan).is_empty()
}

/// Every outer column referenced in `plan` or in a subquery nested inside it.
fn outer_columns(plan: &LogicalPlan) -> Vec<Column> {
    let mut columns = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::OuterReferenceColumn(_, column) = e
                    && !columns.contains(column)
                {
                    columns.push(column.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    columns
}

fn move_subqueries(
    expr: Expr,
    input: &DFSchemaRef,
    moved: &mut Vec<MovedSubquery>,
    next_name: &mut usize,
) -> DfResult<Expr> {
    let rewritten = expr.transform_down(|e| {
        let (kind, plan) = match e {
            Expr::ScalarSubquery(subquery) if reads_outer(&subquery.subquery) => {
                (SubqueryKind::Scalar, subquery.subquery)
            }
            Expr::Exists(exists) => (
                SubqueryKind::Exists {
                    negated: exists.negated,
                },
                exists.subquery.subquery,
            ),
            Expr::InSubquery(in_subquery) => (
                SubqueryKind::In {
                    expr: in_subquery.expr,
                    negated: in_subquery.negated,
                },
                in_subquery.subquery.subquery,
            ),
            other => return Ok(Transformed::no(other)),
        };
        let outer = outer_columns(&plan)
            .into_iter()
            .filter(|column| input.index_of_column(column).is_ok())
            .collect();
        // The optimizer and the physical planner each count from zero; a name the input
        // already has is skipped so that two Applies can never confuse their columns.
        let mut output = format!("__rowdex_subquery_{next_name}");
        *next_name += 1;
        while input.has_column_with_unqualified_name(&output) {
            output = format!("__rowdex_subquery_{next_name}");
            *next_name += 1;
        }
        let column = Expr::Column(Column::new_unqualified(&output));
        moved.push(MovedSubquery {
            kind,
            plan,
            outer,
            output,
        });
        Ok(Transformed::new(column, true, TreeNodeRecursion::Jump))
    })?;
    Ok(rewritten.data)
}

/// Turns an [`ApplyNode`] into an [`ApplyExec`].
struct ApplyPlanner;

#[async_trait]
impl ExtensionPlanner for ApplyPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        planning_ctx: &PhysicalPlanningContext,
    ) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
        let Some(apply) = node.as_any().downcast_ref::<ApplyNode>() else {
            return Ok(None);
        };
        let (Some(input), Some(logical_input)) = (physical_inputs.first(), logical_inputs.first())
        else {
            return Err(DataFusionError::Internal(
                "Apply needs one input".to_string(),
            ));
        };
        let state = session
            .as_any()
            .downcast_ref::<SessionState>()
            .ok_or_else(|| {
                DataFusionError::NotImplemented(
                    "correlated subqueries outside a DataFusion SessionState".to_string(),
                )
            })?
            .clone();
        let input_schema = logical_input.schema();
        let mut subqueries = Vec::with_capacity(apply.subqueries.len());
        let mut fields: Vec<Field> = input
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        for subquery in &apply.subqueries {
            let outer = subquery
                .outer
                .iter()
                .map(|column| Ok((column.clone(), input_schema.index_of_column(column)?)))
                .collect::<DfResult<Vec<_>>>()?;
            let kind = match &subquery.kind {
                SubqueryKind::Scalar => Evaluation::Scalar,
                SubqueryKind::Exists { negated } => Evaluation::Exists { negated: *negated },
                SubqueryKind::In { expr, negated } => {
                    let expr =
                        planner.create_physical_expr(expr, input_schema, session, planning_ctx)?;
                    let probe_type = expr.data_type(input.schema().as_ref())?;
                    Evaluation::In {
                        expr,
                        probe_type,
                        negated: *negated,
                    }
                }
            };
            let position = apply
                .schema
                .index_of_column(&Column::new_unqualified(&subquery.output))?;
            fields.push(apply.schema.field(position).as_ref().clone());
            subqueries.push(Arc::new(PlannedSubquery {
                kind,
                plan: subquery.plan.as_ref().clone(),
                outer,
            }));
        }
        let schema: SchemaRef = Arc::new(Schema::new(fields));
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            input.output_partitioning().clone(),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Some(Arc::new(ApplyExec {
            input: input.clone(),
            subqueries,
            state: Arc::new(state),
            schema,
            properties: Arc::new(properties),
        })))
    }
}

#[derive(Debug)]
enum Evaluation {
    Scalar,
    Exists {
        negated: bool,
    },
    In {
        expr: Arc<dyn PhysicalExpr>,
        /// The operand's type; the subquery's values are cast to it before comparing.
        probe_type: DataType,
        negated: bool,
    },
}

#[derive(Debug)]
struct PlannedSubquery {
    kind: Evaluation,
    plan: LogicalPlan,
    /// Outer columns and their positions in the input batches.
    outer: Vec<(Column, usize)>,
}

/// What one run of a subquery answered, kept per distinct outer values.
#[derive(Debug, Clone)]
enum Answer {
    Value(ScalarValue),
    Found(bool),
    Set {
        values: HashSet<ScalarValue>,
        has_null: bool,
    },
}

/// Runs its input and appends one column per subquery, running each subquery once per distinct
/// set of outer values.
#[derive(Debug)]
pub(crate) struct ApplyExec {
    input: Arc<dyn ExecutionPlan>,
    subqueries: Vec<Arc<PlannedSubquery>>,
    state: Arc<SessionState>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for ApplyExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ApplyExec: subqueries={}", self.subqueries.len())
    }
}

impl ExecutionPlan for ApplyExec {
    fn name(&self) -> &str {
        "ApplyExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        for subquery in &self.subqueries {
            if let Evaluation::In { expr, .. } = &subquery.kind
                && f(expr)? == TreeNodeRecursion::Stop
            {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let input = children
            .into_iter()
            .next()
            .ok_or_else(|| DataFusionError::Internal("ApplyExec needs one child".to_string()))?;
        Ok(Arc::new(ApplyExec {
            input,
            subqueries: self.subqueries.clone(),
            state: self.state.clone(),
            schema: self.schema.clone(),
            properties: self.properties.clone(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let subqueries = self.subqueries.clone();
        let state = self.state.clone();
        let schema = self.schema.clone();
        let memos: Vec<HashMap<Vec<ScalarValue>, Answer>> = vec![HashMap::new(); subqueries.len()];
        let batches = futures::stream::unfold((input, memos), move |(mut input, mut memos)| {
            let subqueries = subqueries.clone();
            let state = state.clone();
            let schema = schema.clone();
            async move {
                let batch = match input.next().await? {
                    Ok(batch) => batch,
                    Err(error) => return Some((Err(error), (input, memos))),
                };
                let extended = extend_batch(&batch, &subqueries, &mut memos, &state, schema).await;
                Some((extended, (input, memos)))
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
    }
}

async fn extend_batch(
    batch: &RecordBatch,
    subqueries: &[Arc<PlannedSubquery>],
    memos: &mut [HashMap<Vec<ScalarValue>, Answer>],
    state: &SessionState,
    schema: SchemaRef,
) -> DfResult<RecordBatch> {
    let mut columns = batch.columns().to_vec();
    for (subquery, memo) in subqueries.iter().zip(memos.iter_mut()) {
        let field = schema.field(columns.len());
        let probe = match &subquery.kind {
            Evaluation::In { expr, .. } => {
                Some(expr.evaluate(batch)?.into_array(batch.num_rows())?)
            }
            _ => None,
        };
        let mut values = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let key = subquery
                .outer
                .iter()
                .map(|(_, index)| ScalarValue::try_from_array(batch.column(*index), row))
                .collect::<DfResult<Vec<_>>>()?;
            let answer = match memo.get(&key) {
                Some(answer) => answer.clone(),
                None => {
                    let answer = run_subquery(subquery, &key, state).await?;
                    memo.insert(key, answer.clone());
                    answer
                }
            };
            values.push(row_value(
                &subquery.kind,
                &answer,
                probe.as_ref(),
                row,
                field.data_type(),
            )?);
        }
        let column: ArrayRef = if values.is_empty() {
            new_empty_array(field.data_type())
        } else {
            ScalarValue::iter_to_array(values)?
        };
        columns.push(column);
    }
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// The value a subquery's answer gives one outer row.
fn row_value(
    kind: &Evaluation,
    answer: &Answer,
    probe: Option<&ArrayRef>,
    row: usize,
    data_type: &DataType,
) -> DfResult<ScalarValue> {
    Ok(match (kind, answer) {
        (Evaluation::Scalar, Answer::Value(value)) => value.cast_to(data_type)?,
        (Evaluation::Exists { negated }, Answer::Found(found)) => {
            ScalarValue::Boolean(Some(found != negated))
        }
        (Evaluation::In { negated, .. }, Answer::Set { values, has_null }) => {
            let probe = probe
                .ok_or_else(|| DataFusionError::Internal("IN without its operand".to_string()))?;
            let needle = ScalarValue::try_from_array(probe, row)?;
            // SQL's three-valued IN: no match among non-NULL values is unknown when the operand
            // or any candidate is NULL, except that nothing is in an empty set.
            let found = if values.is_empty() && !has_null {
                Some(false)
            } else if needle.is_null() {
                None
            } else if values.contains(&needle) {
                Some(true)
            } else if *has_null {
                None
            } else {
                Some(false)
            };
            ScalarValue::Boolean(found.map(|found| found != *negated))
        }
        _ => {
            return Err(DataFusionError::Internal(
                "subquery answer of the wrong kind".to_string(),
            ));
        }
    })
}

async fn run_subquery(
    subquery: &PlannedSubquery,
    key: &[ScalarValue],
    state: &SessionState,
) -> DfResult<Answer> {
    let bindings: HashMap<&Column, &ScalarValue> = subquery
        .outer
        .iter()
        .map(|(column, _)| column)
        .zip(key)
        .collect();
    let bound = subquery
        .plan
        .clone()
        .transform_down_with_subqueries(|node| {
            node.map_expressions(|expr| {
                expr.transform(|e| match e {
                    Expr::OuterReferenceColumn(field, column) => match bindings.get(&column) {
                        Some(value) => Ok(Transformed::yes(Expr::Literal(
                            value.cast_to(field.data_type())?,
                            None,
                        ))),
                        None => Ok(Transformed::no(Expr::OuterReferenceColumn(field, column))),
                    },
                    other => Ok(Transformed::no(other)),
                })
            })
        })?
        .data;
    let bound = match subquery.kind {
        // One row answers EXISTS; a scalar subquery needs two to detect a second row.
        Evaluation::Exists { .. } => LogicalPlanBuilder::from(bound).limit(0, Some(1))?.build()?,
        Evaluation::Scalar => LogicalPlanBuilder::from(bound).limit(0, Some(2))?.build()?,
        Evaluation::In { .. } => bound,
    };
    let physical = state.create_physical_plan(&bound).await?;
    let batches = collect(physical, state.task_ctx()).await?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    Ok(match &subquery.kind {
        Evaluation::Exists { .. } => Answer::Found(rows > 0),
        Evaluation::Scalar => {
            if rows > 1 {
                return Err(DataFusionError::Execution(
                    "a scalar subquery returned more than one row".to_string(),
                ));
            }
            match batches.iter().find(|b| b.num_rows() > 0) {
                Some(batch) => Answer::Value(ScalarValue::try_from_array(batch.column(0), 0)?),
                None => Answer::Value(ScalarValue::try_from(bound.schema().field(0).data_type())?),
            }
        }
        Evaluation::In { probe_type, .. } => {
            let mut values = HashSet::new();
            let mut has_null = false;
            for batch in &batches {
                let column = batch.column(0);
                let column = if column.data_type() == probe_type {
                    column.clone()
                } else {
                    cast(column, probe_type)?
                };
                for row in 0..column.len() {
                    if column.is_null(row) {
                        has_null = true;
                    } else {
                        values.insert(ScalarValue::try_from_array(&column, row)?);
                    }
                }
            }
            Answer::Set { values, has_null }
        }
    })
}
