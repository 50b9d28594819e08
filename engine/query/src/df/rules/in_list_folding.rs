//! Keeps DataFusion 55's expression simplifier from folding IN lists where a NULL answer
//! matters.
//!
//! The simplifier merges two IN lists on one expression joined by AND or OR (it first turns
//! `b = 1 OR b = 3` into `b IN (1, 3)`): `b IN (1, 3) AND b IN (2, 4)` becomes `false`,
//! `b NOT IN (1) OR b NOT IN (2)` becomes `true`, `b IN (1, 2) AND b NOT IN (2, NULL)` becomes
//! `b IN (1)`. Each is wrong when `b` is NULL or a list holds a NULL, where SQL says unknown:
//! under a NOT, in a select list, in an UPDATE's condition (differential finding
//! `in_lists_under_not_null`). Only the first kind, an intersection of positive lists, is exact
//! where only truth counts (a WHERE, a join or scan condition, through its ANDs and ORs); it
//! is kept there, where it empties a scan.
//!
//! [`GuardInListFolding`] runs before the simplifier. Wherever a fold would be wrong it wraps
//! the right side of the AND or OR in `rowdex_unfolded(...)`, an identity function the
//! simplifier cannot see through, so each side is still simplified on its own but the two are
//! never merged.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::expr::{InList, ScalarFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    Between, BinaryExpr, ColumnarValue, Expr, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The name of [`Unfolded`] (not registered: no query can call it).
const UNFOLDED: &str = "rowdex_unfolded";

/// Wraps in [`Unfolded`] one side of each IN-list pair the simplifier would fold wrongly.
#[derive(Debug, Default)]
pub struct GuardInListFolding;

impl OptimizerRule for GuardInListFolding {
    fn name(&self) -> &str {
        "rowdex_guard_in_list_folding"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        // Only a filter's, a join's or a scan's conditions are tested for truth alone.
        match plan {
            LogicalPlan::Filter(mut filter) => {
                let predicate = guard(filter.predicate, true)?;
                filter.predicate = predicate.data;
                Ok(Transformed::new_transformed(
                    LogicalPlan::Filter(filter),
                    predicate.transformed,
                ))
            }
            LogicalPlan::Join(mut join) => {
                let mut transformed = false;
                if let Some(condition) = join.filter.take() {
                    let condition = guard(condition, true)?;
                    transformed = condition.transformed;
                    join.filter = Some(condition.data);
                }
                let mut on = Vec::with_capacity(join.on.len());
                for (left, right) in join.on {
                    let left = guard(left, false)?;
                    let right = guard(right, false)?;
                    transformed |= left.transformed || right.transformed;
                    on.push((left.data, right.data));
                }
                join.on = on;
                Ok(Transformed::new_transformed(
                    LogicalPlan::Join(join),
                    transformed,
                ))
            }
            LogicalPlan::TableScan(mut scan) => {
                let mut transformed = false;
                let mut filters = Vec::with_capacity(scan.filters.len());
                for filter in scan.filters {
                    let filter = guard(filter, true)?;
                    transformed |= filter.transformed;
                    filters.push(filter.data);
                }
                scan.filters = filters;
                Ok(Transformed::new_transformed(
                    LogicalPlan::TableScan(scan),
                    transformed,
                ))
            }
            other => {
                // A select list's output names come from its expressions: keep them.
                let names = NamePreserver::new(&other);
                other.map_expressions(|expr| {
                    let name = names.save(&expr);
                    Ok(guard(expr, false)?.update_data(|guarded| name.restore(guarded)))
                })
            }
        }
    }
}

/// `expr` with every pair whose fold would be wrong guarded. `truth_only` says that the
/// value of `expr` only matters as true versus anything else.
fn guard(expr: Expr, truth_only: bool) -> DfResult<Transformed<Expr>> {
    Ok(guard_tree(expr, truth_only, false)?.expr)
}

/// A guarded expression and what its AND or OR chain tests.
struct Guarded {
    expr: Transformed<Expr>,
    chain: Chain,
}

/// The memberships of a chain of one operator (AND or OR), one per tested expression,
/// accumulated over its operands. Operands that test nothing (`x IS NOT NULL`, a function)
/// count as absent: the simplifier may remove them (`x IS NOT NULL` on a NOT NULL column
/// becomes `true`, and `true AND y` becomes `y`), which brings the operands around them
/// together (differential finding `not_in_null_with_point_get`).
#[derive(Debug, Default)]
struct Chain {
    /// None for a single comparison or anything that is not an AND or OR.
    op: Option<Operator>,
    memberships: Vec<Membership>,
}

impl Chain {
    /// The memberships this chain brings as one operand of an `op` chain: all of them when
    /// it is itself an `op` chain (the simplifier flattens those), else its only one.
    fn into_operand_of(self, op: Operator) -> Vec<Membership> {
        if self.op.is_none_or(|own| own == op) || self.memberships.len() == 1 {
            self.memberships
        } else {
            Vec::new()
        }
    }

    /// By De Morgan, NOT of an AND chain is an OR chain of the negated operands.
    fn negated(self) -> Chain {
        Chain {
            op: self.op.map(|op| match op {
                Operator::And => Operator::Or,
                Operator::Or => Operator::And,
                other => other,
            }),
            memberships: self
                .memberships
                .into_iter()
                .map(Membership::flipped)
                .collect(),
        }
    }
}

/// What a condition compares with literals only, through AND, OR and NOT, and the IN-list
/// kinds it can become. Wider than the simplifier's own pattern on purpose: its other
/// rewrites (De Morgan, OR chains to IN lists) can turn such a tree into that pattern.
#[derive(Debug, Clone)]
struct Membership {
    tested: Expr,
    /// `x = lit` or `x IN (...)`, after the NOTs above it.
    positive: bool,
    /// `x <> lit` or `x NOT IN (...)`, after the NOTs above it.
    negative: bool,
}

impl Membership {
    fn kinds(&self) -> (bool, bool) {
        (self.positive, self.negative)
    }

    fn flipped(self) -> Membership {
        Membership {
            positive: self.negative,
            negative: self.positive,
            ..self
        }
    }
}

/// Guards bottom-up, carrying each chain's memberships up so that a chain of a thousand ORs
/// is one pass. Deep trees grow the stack rather than overflow it. `under_not` says that an
/// odd number of NOTs stands above `expr`: the simplifier may push them in by De Morgan, so
/// each AND or OR must also be safe as its dual over negated operands.
#[recursive::recursive]
fn guard_tree(expr: Expr, truth_only: bool, under_not: bool) -> DfResult<Guarded> {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: op @ (Operator::And | Operator::Or),
            right,
        }) => {
            // Through AND and OR, a truth-only position stays truth-only: an unknown operand
            // and a false one give results that are both "not true" or both true.
            let left = guard_tree(*left, truth_only, under_not)?;
            let right = guard_tree(*right, truth_only, under_not)?;
            let mut transformed = left.expr.transformed || right.expr.transformed;
            let mut memberships = left.chain.into_operand_of(op);
            let added = right.chain.into_operand_of(op);
            let mut right_expr = right.expr.data;
            let clashes = added.iter().any(|r| {
                memberships
                    .iter()
                    .any(|l| l.tested == r.tested && wrong_fold(l, op, r, truth_only, under_not))
            });
            if clashes {
                // The simplifier cannot see into the wrapped side, so the pair stays.
                right_expr = unfolded(right_expr);
                transformed = true;
            } else {
                for r in added {
                    match memberships.iter_mut().find(|l| l.tested == r.tested) {
                        Some(l) => {
                            l.positive |= r.positive;
                            l.negative |= r.negative;
                        }
                        None => memberships.push(r),
                    }
                }
            }
            let rebuilt = Expr::BinaryExpr(BinaryExpr::new(
                Box::new(left.expr.data),
                op,
                Box::new(right_expr),
            ));
            Ok(Guarded {
                expr: Transformed::new_transformed(rebuilt, transformed),
                chain: Chain {
                    op: Some(op),
                    memberships,
                },
            })
        }
        Expr::Not(inner) => {
            let inner = guard_tree(*inner, false, !under_not)?;
            Ok(Guarded {
                expr: inner.expr.update_data(|e| Expr::Not(Box::new(e))),
                chain: inner.chain.negated(),
            })
        }
        // Subquery plans are rules' business node by node; the expression tree stops here.
        Expr::Exists(_) | Expr::InSubquery(_) | Expr::ScalarSubquery(_) => Ok(Guarded {
            expr: Transformed::no(expr),
            chain: Chain::default(),
        }),
        other => {
            let expr = other.map_children(|child| guard(child, false))?;
            let chain = Chain {
                op: None,
                memberships: comparison(&expr.data).into_iter().collect(),
            };
            Ok(Guarded { expr, chain })
        }
    }
}

/// Whether the simplifier's fold of `left op right`, both testing the same expression, is
/// wrong for NULL, as written or (`under_not`) as its De Morgan dual. Intersections and
/// differences are; a union (OR of positive lists, AND of negated ones) keeps SQL's NULL
/// rules.
///
/// Where only truth counts, the intersection of two positive lists is still exact: it is true
/// for the same rows. The others are not: two negated lists under OR fold to `true` (a NULL
/// row would pass), and `b IN (1, 2) AND b NOT IN (2, NULL)` becomes `b IN (1)`, true for a
/// row where SQL says unknown.
fn wrong_fold(
    left: &Membership,
    op: Operator,
    right: &Membership,
    truth_only: bool,
    under_not: bool,
) -> bool {
    if folds_wrongly(left.kinds(), op, right.kinds(), truth_only) {
        return true;
    }
    // NOT (a OR b) becomes NOT a AND NOT b: flipped memberships under the dual operator, in a
    // position where unknown and false differ.
    let dual = match op {
        Operator::And => Operator::Or,
        Operator::Or => Operator::And,
        _ => return false,
    };
    let flip = |(positive, negative): (bool, bool)| (negative, positive);
    under_not && folds_wrongly(flip(left.kinds()), dual, flip(right.kinds()), false)
}

/// [`wrong_fold`] for `(positive, negative)` kinds, as written.
fn folds_wrongly(left: (bool, bool), op: Operator, right: (bool, bool), truth_only: bool) -> bool {
    let ((left_positive, left_negative), (right_positive, right_negative)) = (left, right);
    match op {
        Operator::And => {
            (left_positive && right_negative)
                || (left_negative && right_positive)
                || (!truth_only && left_positive && right_positive)
        }
        Operator::Or => left_negative && right_negative,
        _ => false,
    }
}

/// The membership of one comparison with literals: an IN list, a BETWEEN, `x op literal`.
fn comparison(expr: &Expr) -> Option<Membership> {
    let tested = |tested: &Expr, positive: bool, negative: bool| Membership {
        tested: tested.clone(),
        positive,
        negative,
    };
    match expr {
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => list
            .iter()
            .all(is_literal)
            .then(|| tested(expr, !negated, *negated)),
        Expr::Between(Between {
            expr, low, high, ..
        }) => (is_literal(low) && is_literal(high)).then(|| tested(expr, false, false)),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (positive, negative) = match op {
                Operator::Eq => (true, false),
                Operator::NotEq => (false, true),
                Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => (false, false),
                _ => return None,
            };
            match (is_literal(left), is_literal(right)) {
                (false, true) => Some(tested(left, positive, negative)),
                (true, false) => Some(tested(right, positive, negative)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn is_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Literal(..) => true,
        Expr::Cast(cast) => is_literal(&cast.expr),
        Expr::TryCast(cast) => is_literal(&cast.expr),
        Expr::Negative(inner) => is_literal(inner),
        _ => false,
    }
}

/// The `expr` of `rowdex_unfolded(expr)`: a reader of filters takes it as `expr` itself (the
/// guard may wrap part of a filter after a scan accepted the filter unwrapped).
pub(crate) fn unfolded_argument(expr: &Expr) -> Option<&Expr> {
    match expr {
        Expr::ScalarFunction(function)
            if function.func.name() == UNFOLDED && function.args.len() == 1 =>
        {
            function.args.first()
        }
        _ => None,
    }
}

/// `rowdex_unfolded(expr)`: `expr` itself, opaque to the simplifier.
fn unfolded(expr: Expr) -> Expr {
    static UNFOLDED: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(Unfolded::new())));
    Expr::ScalarFunction(ScalarFunction::new_udf(UNFOLDED.clone(), vec![expr]))
}

/// The identity on booleans. It is not registered: a query cannot name it, only
/// [`GuardInListFolding`] builds it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Unfolded {
    signature: Signature,
}

impl Unfolded {
    fn new() -> Unfolded {
        Unfolded {
            signature: Signature::exact(vec![DataType::Boolean], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Unfolded {
    fn name(&self) -> &str {
        UNFOLDED
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        args.args.into_iter().next().ok_or_else(|| {
            DataFusionError::Internal("rowdex_unfolded takes one argument".to_string())
        })
    }
}
