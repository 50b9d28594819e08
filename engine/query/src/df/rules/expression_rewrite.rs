//! What the rules that rewrite a node's expressions share: the schema those expressions read
//! (every input's columns), and a rewrite of each expression bottom-up that keeps the name it
//! gives the node's output (DataFusion checks a rule left the schema as it was).

use datafusion::common::DFSchema;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan};

/// The columns `plan`'s expressions read: its inputs' schemas merged (empty for a leaf).
pub(crate) fn inputs_schema(plan: &LogicalPlan) -> DFSchema {
    let mut inputs = plan.inputs().into_iter();
    match inputs.next() {
        Some(first) => {
            let mut schema = first.schema().as_ref().clone();
            for input in inputs {
                schema.merge(input.schema());
            }
            schema
        }
        None => DFSchema::empty(),
    }
}

/// `plan` with `rewrite` applied to every sub-expression of its expressions, bottom-up, each
/// expression keeping the name it had.
pub(crate) fn rewrite_expressions_keeping_names(
    plan: LogicalPlan,
    mut rewrite: impl FnMut(Expr) -> DfResult<Transformed<Expr>>,
) -> DfResult<Transformed<LogicalPlan>> {
    let names = NamePreserver::new(&plan);
    plan.map_expressions(|expr| {
        let name = names.save(&expr);
        let rewritten = expr.transform_up(&mut rewrite)?;
        Ok(rewritten.update_data(|expr| name.restore(expr)))
    })
}
