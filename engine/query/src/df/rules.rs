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
//! - `uuid_literals::UuidLiterals`, next: not a workaround but rowdex's own. A UUID travels as
//!   its text, so a text literal compared with one is read as a UUID (canonical, or 22P02).
//! - `jsonb_order::JsonbOrder`, next: rowdex's own. A jsonb travels as its text, so ORDER BY
//!   one sorts by `jsonb_sort_key`, bytes in jsonb's order.
//! - `time_zones::SessionTimeZone`, next: rowdex's own. A TIMESTAMPTZ column's values are typed
//!   in UTC; text is read, and dates and fields taken, in the session's zone.
//! - `array_casts::ArrayTextCasts`, next: rowdex's own. An array cast to text is written as
//!   PostgreSQL writes arrays, not as Arrow writes a list.
//! - `predicate_subquery::GuardedPredicateSubquery`, in place of
//!   `decorrelate_predicate_subquery`: its mark joins never yield NULL, so an IN subquery under
//!   OR, NOT or CASE answers wrongly. Upstream apache/datafusion#21309; retire with the release
//!   that carries it.
//! - `filter_projection::SplitFilterProjection`, before each `ProjectionPushdown`: swapping a
//!   projection with a filter that embeds one ignores the embedded projection. No upstream issue
//!   filed (found by the differential tests); retire when
//!   `FilterExec::try_swapping_with_projection` maps the embedded projection.
//! - `lookup_joins::ChooseLookupJoins`, before `EnsureRequirements` (and so after
//!   `JoinSelection`), is not a workaround but rowdex's own: a hash join whose one side is
//!   cheaper probed by the other side's values becomes a lookup join (`df::lookup_join`).
//! - `join_ordering::ForgetBuildOrdering`, before `EnsureRequirements`: a hash or nested-loop
//!   join declares its build side's order, so a sort the query needs is dropped. Upstream
//!   apache/datafusion#25052 (fix in PR #25053, open); retire with the release that merges it.
//!
//! Subqueries DataFusion cannot plan at all are not a rule: `df::apply` runs them, and the
//! session's query planner (`df::apply::exec::RowdexQueryPlanner`) puts them there.

pub(crate) mod array_casts;
pub(crate) mod exact_decimal_literals;
pub(crate) mod expression_rewrite;
pub(crate) mod filter_projection;
pub(crate) mod in_list_folding;
pub(crate) mod join_ordering;
pub(crate) mod jsonb_order;
pub(crate) mod lookup_joins;
pub(crate) mod predicate_subquery;
pub(crate) mod time_zones;
pub(crate) mod uuid_literals;

use std::sync::Arc;

use datafusion::optimizer::OptimizerRule;
use datafusion::optimizer::optimizer::Optimizer;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;

use crate::df::rules::array_casts::ArrayTextCasts;
use crate::df::rules::exact_decimal_literals::ExactDecimalLiterals;
use crate::df::rules::filter_projection::SplitFilterProjection;
use crate::df::rules::in_list_folding::GuardInListFolding;
use crate::df::rules::join_ordering::ForgetBuildOrdering;
use crate::df::rules::jsonb_order::JsonbOrder;
use crate::df::rules::lookup_joins::ChooseLookupJoins;
use crate::df::rules::predicate_subquery::GuardedPredicateSubquery;
use crate::df::rules::time_zones::SessionTimeZone;
use crate::df::rules::uuid_literals::UuidLiterals;
use crate::error::{Error, Result};

/// The DataFusion logical rule `GuardedPredicateSubquery` replaces.
const REPLACED_LOGICAL_RULE: &str = "decorrelate_predicate_subquery";
/// The DataFusion physical rule `ChooseLookupJoins` and `ForgetBuildOrdering` go before.
const BEFORE_ENSURE_REQUIREMENTS: &str = "EnsureRequirements";
/// The DataFusion physical rule (it picks a hash join's build side) `ChooseLookupJoins` must
/// come after.
const AFTER_JOIN_SELECTION: &str = "join_selection";
/// The DataFusion physical rule `SplitFilterProjection` goes before (each time it runs).
const BEFORE_PROJECTION_PUSHDOWN: &str = "ProjectionPushdown";

/// A logical optimizer rule as a session context holds it.
pub type LogicalRule = Arc<dyn OptimizerRule + Send + Sync>;
/// A physical optimizer rule as a session context holds it.
pub type PhysicalRule = Arc<dyn PhysicalOptimizerRule + Send + Sync>;

/// Both rule lists a rowdex session context is built with, checked against the DataFusion
/// built with.
#[derive(Clone)]
pub(crate) struct OptimizerRules {
    pub(crate) logical: Vec<LogicalRule>,
    pub(crate) physical: Vec<PhysicalRule>,
}

impl OptimizerRules {
    /// Both lists; fails when a DataFusion rule that rowdex replaces or places its own rules
    /// before is missing (renamed or removed by an upgrade), since the workaround would then
    /// silently drop out.
    pub(crate) fn new() -> Result<OptimizerRules> {
        Ok(OptimizerRules {
            logical: logical_optimizer_rules()?,
            physical: physical_optimizer_rules()?,
        })
    }
}

impl std::fmt::Debug for OptimizerRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptimizerRules")
            .field(
                "logical",
                &self.logical.iter().map(|r| r.name()).collect::<Vec<_>>(),
            )
            .field(
                "physical",
                &self.physical.iter().map(|r| r.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// DataFusion's default logical optimizer rules, with `GuardedPredicateSubquery` in place of
/// `decorrelate_predicate_subquery`, and `GuardInListFolding`, `ExactDecimalLiterals`,
/// `UuidLiterals`, `JsonbOrder`, `SessionTimeZone` then `ArrayTextCasts` first of all, before any simplification. Fails with [`Error::OptimizerRuleMissing`] when this
/// DataFusion has no `decorrelate_predicate_subquery`.
pub fn logical_optimizer_rules() -> Result<Vec<LogicalRule>> {
    logical_rules_from(Optimizer::new().rules)
}

fn logical_rules_from(upstream: Vec<LogicalRule>) -> Result<Vec<LogicalRule>> {
    if !upstream
        .iter()
        .any(|rule| rule.name() == REPLACED_LOGICAL_RULE)
    {
        return Err(Error::OptimizerRuleMissing {
            rule: REPLACED_LOGICAL_RULE,
        });
    }
    let guard: LogicalRule = Arc::new(GuardInListFolding);
    let exact: LogicalRule = Arc::new(ExactDecimalLiterals);
    let uuids: LogicalRule = Arc::new(UuidLiterals);
    let jsonb: LogicalRule = Arc::new(JsonbOrder::default());
    let zones: LogicalRule = Arc::new(SessionTimeZone);
    let arrays: LogicalRule = Arc::new(ArrayTextCasts);
    Ok([guard, exact, uuids, jsonb, zones, arrays]
        .into_iter()
        .chain(upstream.into_iter().map(|rule| {
            if rule.name() == REPLACED_LOGICAL_RULE {
                Arc::new(GuardedPredicateSubquery::default()) as LogicalRule
            } else {
                rule
            }
        }))
        .collect())
}

/// DataFusion's default physical optimizer rules, with `SplitFilterProjection` before each
/// `ProjectionPushdown` pass, and `ChooseLookupJoins` then `ForgetBuildOrdering` before
/// `EnsureRequirements`. Fails with [`Error::OptimizerRuleMissing`] when this DataFusion has no
/// `join_selection` before `EnsureRequirements`, or no `ProjectionPushdown`.
pub fn physical_optimizer_rules() -> Result<Vec<PhysicalRule>> {
    physical_rules_from(PhysicalOptimizer::new().rules)
}

fn physical_rules_from(upstream: Vec<PhysicalRule>) -> Result<Vec<PhysicalRule>> {
    let at = |name: &str| upstream.iter().position(|rule| rule.name() == name);
    for anchor in [
        AFTER_JOIN_SELECTION,
        BEFORE_ENSURE_REQUIREMENTS,
        BEFORE_PROJECTION_PUSHDOWN,
    ] {
        if at(anchor).is_none() {
            return Err(Error::OptimizerRuleMissing { rule: anchor });
        }
    }
    if at(AFTER_JOIN_SELECTION) > at(BEFORE_ENSURE_REQUIREMENTS) {
        return Err(Error::OptimizerRuleMissing {
            rule: AFTER_JOIN_SELECTION,
        });
    }
    let mut rules = Vec::new();
    for rule in upstream {
        if rule.name() == BEFORE_ENSURE_REQUIREMENTS {
            rules.push(Arc::new(ChooseLookupJoins) as PhysicalRule);
            rules.push(Arc::new(ForgetBuildOrdering) as PhysicalRule);
        }
        if rule.name() == BEFORE_PROJECTION_PUSHDOWN {
            rules.push(Arc::new(SplitFilterProjection) as PhysicalRule);
        }
        rules.push(rule);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<R: ?Sized>(rules: &[Arc<R>], name: impl Fn(&R) -> &str) -> Vec<String> {
        rules.iter().map(|rule| name(rule).to_string()).collect()
    }

    #[test]
    fn every_rule_rowdex_replaces_or_precedes_is_in_this_datafusion() -> Result<()> {
        let logical = names(&logical_optimizer_rules()?, |r| r.name());
        // The two guards, the UUID literals and the jsonb order first, then DataFusion's list with the
        // replacement (which keeps the replaced rule's name) in its place.
        assert_eq!(
            logical.len(),
            Optimizer::new().rules.len() + 6,
            "{logical:?}"
        );
        assert_eq!(logical[0], GuardInListFolding.name());
        assert_eq!(logical[1], ExactDecimalLiterals.name());
        assert_eq!(logical[2], UuidLiterals.name());
        assert_eq!(logical[3], JsonbOrder::default().name());
        assert_eq!(logical[4], SessionTimeZone.name());
        assert_eq!(logical[5], ArrayTextCasts.name());
        let physical = names(&physical_optimizer_rules()?, |r| r.name());
        let join_selection = physical.iter().position(|n| n == AFTER_JOIN_SELECTION);
        let lookups = physical.iter().position(|n| n == ChooseLookupJoins.name());
        assert!(
            join_selection.is_some() && lookups > join_selection,
            "{physical:?}"
        );
        for (ours, anchor) in [
            (ChooseLookupJoins.name(), BEFORE_ENSURE_REQUIREMENTS),
            (ForgetBuildOrdering.name(), BEFORE_ENSURE_REQUIREMENTS),
            (SplitFilterProjection.name(), BEFORE_PROJECTION_PUSHDOWN),
        ] {
            let before = physical.iter().position(|n| n == ours);
            let at = physical.iter().position(|n| n == anchor);
            assert!(
                before.is_some() && at.is_some() && before < at,
                "{ours} is not before {anchor}: {physical:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn a_missing_rule_fails_the_build_of_the_lists() {
        let without = |name: &str| -> Vec<LogicalRule> {
            Optimizer::new()
                .rules
                .into_iter()
                .filter(|rule| rule.name() != name)
                .collect()
        };
        assert!(matches!(
            logical_rules_from(without(REPLACED_LOGICAL_RULE)),
            Err(Error::OptimizerRuleMissing {
                rule: REPLACED_LOGICAL_RULE
            })
        ));
        for anchor in [
            AFTER_JOIN_SELECTION,
            BEFORE_ENSURE_REQUIREMENTS,
            BEFORE_PROJECTION_PUSHDOWN,
        ] {
            let upstream: Vec<PhysicalRule> = PhysicalOptimizer::new()
                .rules
                .into_iter()
                .filter(|rule| rule.name() != anchor)
                .collect();
            assert!(
                matches!(
                    physical_rules_from(upstream),
                    Err(Error::OptimizerRuleMissing { rule }) if rule == anchor
                ),
                "{anchor}"
            );
        }
    }
}
