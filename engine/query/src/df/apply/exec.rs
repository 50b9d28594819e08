//! Planning and running the [`ApplyNode`]: the session's query planner (DataFusion's, after the
//! rewrite into Apply nodes), the extension planner that turns a node into an [`ApplyExec`],
//! and the execution, which runs each subquery once per distinct set of outer values.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, new_empty_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session as DfSession;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ScalarValue};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, UserDefinedLogicalNode};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties, collect,
};
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use futures::StreamExt;

use super::{ApplyNode, SubqueryKind, rewrite_plan};

/// The session's query planner: DataFusion's, after moving leftover subqueries into
/// [`ApplyNode`]s it knows how to run.
#[derive(Debug, Default)]
pub(crate) struct RowdexQueryPlanner;

#[async_trait]
impl QueryPlanner for RowdexQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn DfSession,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = rewrite_plan(logical_plan.clone())?;
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(ApplyPlanner)])
            .create_physical_plan(&plan, session)
            .await
    }
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
        session: &dyn DfSession,
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
