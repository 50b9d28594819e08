//! Correlated subqueries that DataFusion's decorrelation rules leave in the plan.
//!
//! DataFusion turns many subqueries into joins, but not, for example, a scalar
//! `(SELECT count(*) FROM t AS x WHERE x.c > t.c)` whose correlation is not an equality, nor an
//! `IN`/`EXISTS` outside a WHERE clause. Its physical planner rejects what is left. Such a
//! subquery is evaluated the way SQLite evaluates every subquery: once per distinct set of
//! outer values. After optimisation, [`rewrite_plan`] moves each remaining subquery of a
//! projection or filter into an [`ApplyNode`] below it, which adds one column per subquery to
//! its input; `exec::ApplyExec` fills the column by binding the outer values into the
//! subquery's plan as literals and running it, remembering the answer for repeated outer
//! values. This file holds the logical node and the rewrite; `exec` plans and runs it.

pub(crate) mod exec;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, DFSchemaRef};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    Expr, Extension, Filter, LogicalPlan, Projection, UserDefinedLogicalNodeCore,
};

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
