//! rowdex's optimizer rules for DataFusion 55, and the two lists a session context is built
//! with (also exported, for programs that build their own context). Each rule works around a
//! DataFusion bug; on an upgrade, check each against its upstream fix, drop the rule once the
//! version used has the fix, and rerun `sql-tests/slt` and the differential campaign.
//!
//! - `in_list_folding::GuardInListFolding`, first of the logical rules: the simplifier merges
//!   two IN lists on one expression, which is wrong where the expression or a list holds NULL.
//!   Upstream apache/datafusion#24258; retire with the release that carries it.
//! - `exact_decimal_literals::ExactDecimalLiterals`, next: a float literal cast to a DECIMAL
//!   by type coercion is multiplied as a double, so `d = 8.03` misses 8.03 (the literal becomes
//!   8.029999999999999 at scale 15). Not a bug upstream so much as a choice (literals are
//!   Float64 unless `parse_float_as_decimal`, which would change every other float's type);
//!   keep it while that holds.
//! - `predicate_subquery::GuardedPredicateSubquery`, in place of
//!   `decorrelate_predicate_subquery`: its mark joins never yield NULL, so an IN subquery under
//!   OR, NOT or CASE answers wrongly. Upstream apache/datafusion#21309; retire with the release
//!   that carries it.
//! - `filter_projection::SplitFilterProjection`, before each `ProjectionPushdown`: swapping a
//!   projection with a filter that embeds one ignores the embedded projection. No upstream issue
//!   filed (found by the differential tests); retire when
//!   `FilterExec::try_swapping_with_projection` maps the embedded projection.
//! - `join_ordering::ForgetBuildOrdering`, before `EnsureRequirements`: a hash or nested-loop
//!   join declares its build side's order, so a sort the query needs is dropped. Upstream
//!   apache/datafusion#25052 (fix in PR #25053, open); retire with the release that merges it.
//!
//! Subqueries DataFusion cannot plan at all are not a rule: `df::apply` runs them, and the
//! session's query planner (`df::apply::exec::RowdexQueryPlanner`) puts them there.

pub(crate) mod exact_decimal_literals;
pub(crate) mod filter_projection;
pub(crate) mod in_list_folding;
pub(crate) mod join_ordering;
pub(crate) mod predicate_subquery;

use std::sync::Arc;

use datafusion::optimizer::OptimizerRule;
use datafusion::optimizer::optimizer::Optimizer;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;

use crate::df::rules::exact_decimal_literals::ExactDecimalLiterals;
use crate::df::rules::filter_projection::SplitFilterProjection;
use crate::df::rules::in_list_folding::GuardInListFolding;
use crate::df::rules::join_ordering::ForgetBuildOrdering;
use crate::df::rules::predicate_subquery::GuardedPredicateSubquery;

/// DataFusion's default logical optimizer rules, with `GuardedPredicateSubquery` in place of
/// `decorrelate_predicate_subquery`, and `GuardInListFolding` then `ExactDecimalLiterals` first
/// of all, before any simplification.
///
pub fn logical_optimizer_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    let guard: Arc<dyn OptimizerRule + Send + Sync> = Arc::new(GuardInListFolding);
    let exact: Arc<dyn OptimizerRule + Send + Sync> = Arc::new(ExactDecimalLiterals);
    [guard, exact]
        .into_iter()
        .chain(Optimizer::new().rules.into_iter().map(|rule| {
            if rule.name() == "decorrelate_predicate_subquery" {
                Arc::new(GuardedPredicateSubquery::default())
                    as Arc<dyn OptimizerRule + Send + Sync>
            } else {
                rule
            }
        }))
        .collect()
}

/// DataFusion's default physical optimizer rules, with `SplitFilterProjection` before each
/// `ProjectionPushdown` pass and `ForgetBuildOrdering` before `EnsureRequirements`.
pub fn physical_optimizer_rules() -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    let mut rules = Vec::new();
    for rule in PhysicalOptimizer::new().rules {
        if rule.name() == "EnsureRequirements" {
            rules.push(
                Arc::new(ForgetBuildOrdering) as Arc<dyn PhysicalOptimizerRule + Send + Sync>
            );
        }
        if rule.name() == "ProjectionPushdown" {
            rules.push(
                Arc::new(SplitFilterProjection) as Arc<dyn PhysicalOptimizerRule + Send + Sync>
            );
        }
        rules.push(rule);
    }
    rules
}
