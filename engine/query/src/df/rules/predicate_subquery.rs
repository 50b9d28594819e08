//! Keeps DataFusion 55's `decorrelate_predicate_subquery` away from the `IN` subqueries it
//! answers wrongly, so that SQL's NULL rules hold for `x [NOT] IN (SELECT ...)` anywhere in a
//! WHERE clause.
//!
//! DataFusion turns an IN subquery that is not a whole conjunct into a mark join whose mark
//! column is never NULL: `x NOT IN (SELECT y ...)` under an OR is true where SQL says unknown
//! (a NULL among the `y`, no match), and `(x IN (...)) IS NULL` is never true. A top-level
//! NOT IN becomes a null-aware anti join, which is right only for an uncorrelated subquery and
//! a compared expression that reads a column (differential finding
//! `nested_not_in_subquery_null`; upstream apache/datafusion#21309, fixed after 55).
//!
//! [`GuardedPredicateSubquery`] takes the rule's place. It hands DataFusion's rule only the
//! conjuncts whose subqueries it decorrelates exactly: EXISTS anywhere, IN reached from the
//! root through AND/OR only (where unknown and false both drop the row), and an uncorrelated
//! top-level NOT IN of a column expression. Other conjuncts go into a filter above, over an
//! `ApplyNode` (see `df::apply`) that evaluates their subqueries with SQL's rules.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr::InSubquery;
use datafusion::logical_expr::utils::{conjunction, split_conjunction_owned};
use datafusion::logical_expr::{BinaryExpr, Expr, Filter, LogicalPlan, Operator, lit};
use datafusion::optimizer::decorrelate_predicate_subquery::DecorrelatePredicateSubquery;
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::df::apply::filter_with_apply;

/// DataFusion's `decorrelate_predicate_subquery`, applied only where it keeps SQL's NULL rules.
#[derive(Debug, Default)]
pub struct GuardedPredicateSubquery {
    inner: DecorrelatePredicateSubquery,
}

impl OptimizerRule for GuardedPredicateSubquery {
    fn name(&self) -> &str {
        // The name of the rule it stands in for, so configuration that names it still applies.
        "decorrelate_predicate_subquery"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        // The optimizer visits every node, subquery plans included; each filter is guarded
        // where it is.
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        let LogicalPlan::Filter(filter) = plan else {
            return Ok(Transformed::no(plan));
        };
        if !has_subquery(&filter.predicate) {
            return Ok(Transformed::no(LogicalPlan::Filter(filter)));
        }
        // A subquery that earlier rules proved empty is a constant; DataFusion's rule fails on
        // it ("single expression required").
        let predicate = filter.predicate.clone().transform_up(|e| match &e {
            Expr::InSubquery(InSubquery {
                subquery, negated, ..
            }) if yields_no_rows(&subquery.subquery) => Ok(Transformed::yes(lit(*negated))),
            Expr::Exists(exists) if yields_no_rows(&exists.subquery.subquery) => {
                Ok(Transformed::yes(lit(exists.negated)))
            }
            _ => Ok(Transformed::no(e)),
        })?;
        if predicate.transformed {
            let filter = Filter::try_new(predicate.data, filter.input.clone())?;
            return Ok(Transformed::yes(LogicalPlan::Filter(filter)));
        }
        let conjuncts = split_conjunction_owned(filter.predicate.clone());
        let (exact, kept): (Vec<Expr>, Vec<Expr>) =
            conjuncts.into_iter().partition(decorrelated_exactly);
        let Some(kept) = conjunction(kept) else {
            return self.inner.rewrite(LogicalPlan::Filter(filter), config);
        };
        let input = Arc::unwrap_or_clone(filter.input);
        let below = match conjunction(exact) {
            Some(exact) => {
                let below = LogicalPlan::Filter(Filter::try_new(exact, Arc::new(input))?);
                self.inner.rewrite(below, config)?.data
            }
            None => input,
        };
        // The kept conjuncts go into an ApplyNode now rather than at physical planning: a
        // filter left with its subqueries would be pushed into a view below, out of the scope
        // of the subqueries' outer columns.
        let above = filter_with_apply(kept, below, &mut 0)?;
        Ok(Transformed::yes(above))
    }
}

/// Whether `plan` is known to produce no row (an empty relation under row-preserving nodes).
fn yields_no_rows(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::EmptyRelation(empty) => !empty.produce_one_row,
        LogicalPlan::Projection(p) => yields_no_rows(&p.input),
        LogicalPlan::SubqueryAlias(a) => yields_no_rows(&a.input),
        LogicalPlan::Filter(f) => yields_no_rows(&f.input),
        LogicalPlan::Sort(s) => yields_no_rows(&s.input),
        LogicalPlan::Limit(l) => yields_no_rows(&l.input),
        LogicalPlan::Distinct(d) => yields_no_rows(d.input()),
        _ => false,
    }
}

fn has_subquery(expr: &Expr) -> bool {
    expr.exists(|e| {
        Ok(matches!(
            e,
            Expr::InSubquery(_)
                | Expr::Exists(_)
                | Expr::ScalarSubquery(_)
                | Expr::SetComparison(_)
        ))
    })
    .unwrap_or(true)
}

/// Whether DataFusion's rule turns every subquery of `conjunct` into a join that keeps SQL's
/// NULL rules. The rule also rewrites the filters inside the subqueries it meets, unguarded, so
/// a conjunct whose subqueries hold an IN subquery themselves is left whole to `ApplyNode`.
fn decorrelated_exactly(conjunct: &Expr) -> bool {
    if nested_in_subquery(conjunct) {
        return false;
    }
    match conjunct {
        Expr::InSubquery(InSubquery {
            expr,
            subquery,
            negated: true,
        }) => exact_not_in(expr, subquery),
        Expr::Not(inner) => match inner.as_ref() {
            Expr::InSubquery(InSubquery {
                expr,
                subquery,
                negated: false,
            }) => exact_not_in(expr, subquery),
            other => !contains_in_subquery(other),
        },
        _ => in_subqueries_positive(conjunct),
    }
}

/// A top-level NOT IN is a null-aware anti join on one key, which DataFusion 55 gets right only
/// for an uncorrelated subquery compared with an expression of the outer row's columns.
fn exact_not_in(expr: &Expr, subquery: &datafusion::logical_expr::Subquery) -> bool {
    subquery.outer_ref_columns.is_empty()
        && !expr.column_refs().is_empty()
        && !contains_in_subquery(expr)
}

/// Every IN subquery of `expr` is reached from it through AND and OR only, and is not negated:
/// there a NULL answer and a false one both leave the row out, so the never-NULL mark is exact.
fn in_subqueries_positive(expr: &Expr) -> bool {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And | Operator::Or,
            right,
        }) => in_subqueries_positive(left) && in_subqueries_positive(right),
        Expr::InSubquery(InSubquery { expr, negated, .. }) => {
            !negated && !contains_in_subquery(expr)
        }
        other => !contains_in_subquery(other),
    }
}

fn contains_in_subquery(expr: &Expr) -> bool {
    expr.exists(|e| Ok(matches!(e, Expr::InSubquery(_))))
        .unwrap_or(true)
}

/// Whether a subquery of `expr` holds an IN subquery anywhere in its plan.
fn nested_in_subquery(expr: &Expr) -> bool {
    let mut found = false;
    let _ = expr.apply(|e| {
        let plan = match e {
            Expr::InSubquery(InSubquery { subquery, .. }) | Expr::ScalarSubquery(subquery) => {
                Some(&subquery.subquery)
            }
            Expr::Exists(exists) => Some(&exists.subquery.subquery),
            Expr::SetComparison(comparison) => Some(&comparison.subquery.subquery),
            _ => None,
        };
        if let Some(plan) = plan
            && plan_has_in_subquery(plan)
        {
            found = true;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

fn plan_has_in_subquery(plan: &LogicalPlan) -> bool {
    let mut found = false;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            if contains_in_subquery(e) {
                found = true;
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        })
    });
    found
}
