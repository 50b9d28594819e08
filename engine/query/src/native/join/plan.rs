//! Planning a native join: which table drives, and in what order the others are probed, by
//! which key. Every table may drive; from each, the tables are joined greedily, the cheapest
//! probe first, each probe priced as `df::rules::lookup_joins` prices it (its template's
//! estimate for the rows so far) and taken only where DataFusion's rule would take it (cheaper
//! than reading the table whole for a hash join, over a table of at least
//! `LOOKUP_MIN_TABLE_ROWS` rows, or hinted). The cheapest order wins; a table no probe
//! reaches, or rows past `NATIVE_JOIN_ROWS_MAX`, leave the join to DataFusion.
//!
//! The choice (driving table and path shape, each probe's table and key) is kept per
//! generation of every table's statistics and replayed on the plans each run's values make.

use std::sync::PoisonError;

use rowdex_planner::lookup::{
    JOIN_ROW_NS, JoinHint, LOOKUP_MIN_TABLE_ROWS, LookupEstimate, LookupTemplate, lookup_templates,
};
use rowdex_planner::{Direction, IndexHint, KeySpan, ScanPlan, ScanRequest, candidates};

use crate::db::DbState;
use crate::error::Result;
use crate::native::Bound;
use crate::native::choice::PathShape;
use crate::native::join::{
    ColumnRef, JoinChoice, JoinDecision, JoinedAs, NATIVE_JOIN_ROWS_MAX, NativeJoin, ProbeShape,
};
use crate::scan::choose::{PlanningFacts, choose_among, estimate_plans};
use crate::scan::partition::{sample_spans, scan_parallelism, splits_intersection};
use crate::sql::hints::QueryHints;

/// One table probed by the rows joined before it.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    pub table: usize,
    /// The probed table's join columns (in the template's join order), each with the column
    /// of a table joined before whose value it must equal.
    pub keys: Vec<(usize, ColumnRef)>,
    pub template: LookupTemplate,
    /// Probes expected (the rows joined before) and what they find and cost, when planned
    /// afresh.
    pub estimate: Option<(f64, LookupEstimate)>,
}

/// How a join runs: the driving table's read, then the probes in order.
#[derive(Debug, Clone)]
pub(crate) struct JoinPlan {
    pub driving: usize,
    pub scan: ScanPlan,
    pub probes: Vec<Probe>,
    /// Where each table's rows expire for this statement (in FROM order).
    pub cutoffs: Vec<Option<i64>>,
    pub budget: usize,
    pub offset: usize,
    pub limit: Option<usize>,
    /// The spans of primary keys the driving read is split into, read in parallel (a large
    /// index intersection: `scan::partition::splits_intersection`); empty: read whole.
    pub spans: Vec<KeySpan>,
}

/// What one table offers the join: its own read, and its size.
struct TableFacts {
    request: ScanRequest,
    best: ScanPlan,
    rows: f64,
    cost_us: f64,
    table_rows: u64,
    hint: JoinHint,
}

impl NativeJoin {
    fn requests(&self, bound: &[Bound], hints: &QueryHints) -> Vec<ScanRequest> {
        self.tables
            .iter()
            .zip(bound)
            .enumerate()
            .map(|(i, (joined, bound))| ScanRequest {
                table: joined.table.clone(),
                predicates: bound.predicates.clone(),
                direction: Direction::Forward,
                offset: 0,
                limit: None,
                needed: Some(self.needed(i)),
                hint: hints.for_table(&joined.table.name),
            })
            .collect()
    }

    /// Makes the kept choice DataFusion's (a run found more rows than the memory budget
    /// holds), until the statistics or hints change.
    pub(crate) fn leave_to_datafusion(&self) {
        if let Some(choice) = self
            .choice
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            choice.decision = None;
        }
    }

    /// The driving table's read request (EXPLAIN VERBOSE weighs its candidates).
    pub(crate) fn driving_request(
        &self,
        bound: &[Bound],
        hints: &QueryHints,
        driving: usize,
    ) -> Option<ScanRequest> {
        self.requests(bound, hints).into_iter().nth(driving)
    }

    fn hints(&self, hints: &QueryHints) -> Vec<(IndexHint, JoinHint)> {
        self.tables
            .iter()
            .map(|joined| {
                let name = &joined.table.name;
                (hints.for_table(name), hints.join_for_table(name))
            })
            .collect()
    }

    /// The plan for this run (None: DataFusion runs the join), replaying the kept choice
    /// when it still holds.
    pub(crate) async fn plan(
        &self,
        db: &DbState,
        bound: &[Bound],
        hints: &QueryHints,
        window: (usize, Option<usize>),
    ) -> Result<Option<JoinPlan>> {
        let generations: Vec<u64> = self
            .tables
            .iter()
            .map(|joined| db.stats.generation(joined.table.id))
            .collect();
        let table_hints = self.hints(hints);
        let kept = self
            .choice
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|choice| {
                choice.generations == generations
                    && !generations.contains(&0)
                    && choice.hints == table_hints
            });
        if let Some(choice) = kept {
            let Some(decision) = &choice.decision else {
                return Ok(None);
            };
            if let Some(plan) = self.replay(db, bound, hints, decision, window) {
                return Ok(Some(self.split(db, plan, decision.split).await?));
            }
        }
        let plan = self.plan_fresh(db, bound, hints, window).await?;
        db.planning.chose_access_path();
        let split = plan
            .as_ref()
            .is_some_and(|plan| splits_intersection(&plan.scan));
        let decision = plan.as_ref().map(|plan| JoinDecision {
            driving: plan.driving,
            split,
            path: PathShape::of(&plan.scan),
            probes: plan
                .probes
                .iter()
                .map(|probe| ProbeShape {
                    table: probe.table,
                    keys: probe.keys.clone(),
                    key: probe.template.key,
                })
                .collect(),
        });
        // Planning loads the statistics the first time: the generations after it are the ones
        // the choice was made under.
        let generations = self
            .tables
            .iter()
            .map(|joined| db.stats.generation(joined.table.id))
            .collect();
        *self.choice.lock().unwrap_or_else(PoisonError::into_inner) = Some(JoinChoice {
            generations,
            hints: table_hints,
            decision,
        });
        match plan {
            Some(plan) => Ok(Some(self.split(db, plan, split).await?)),
            None => Ok(None),
        }
    }

    /// The plan `decision` makes of this run's values; None when a path or key it names is
    /// no longer among the candidates.
    fn replay(
        &self,
        db: &DbState,
        bound: &[Bound],
        hints: &QueryHints,
        decision: &JoinDecision,
        window: (usize, Option<usize>),
    ) -> Option<JoinPlan> {
        let requests = self.requests(bound, hints);
        let scan = decision
            .path
            .find(candidates(requests.get(decision.driving)?))?;
        let mut probes = Vec::with_capacity(decision.probes.len());
        for shape in &decision.probes {
            let template = self
                .templates(&requests, shape.table, &shape.keys)
                .into_iter()
                .find(|template| template.key == shape.key)?;
            probes.push(Probe {
                table: shape.table,
                keys: shape.keys.clone(),
                template,
                estimate: None,
            });
        }
        Some(self.made(db, decision.driving, scan, probes, window))
    }

    fn made(
        &self,
        db: &DbState,
        driving: usize,
        scan: ScanPlan,
        probes: Vec<Probe>,
        window: (usize, Option<usize>),
    ) -> JoinPlan {
        JoinPlan {
            driving,
            scan,
            probes,
            cutoffs: self
                .tables
                .iter()
                .map(|joined| db.expiry_cutoff(&joined.table))
                .collect(),
            budget: db.memory_budget(),
            offset: window.0,
            limit: window.1,
            spans: Vec::new(),
        }
    }

    /// Splits the driving read of `plan` when `split` says it is worth it (decided on the
    /// fresh plan by `splits_intersection`, which also requires an unlimited read: a driving
    /// read is never limited, the join applies its window itself).
    pub(crate) async fn split(
        &self,
        db: &DbState,
        mut plan: JoinPlan,
        split: bool,
    ) -> Result<JoinPlan> {
        if split
            && let Some(driving) = self.tables.get(plan.driving)
            && let Some(facts) = PlanningFacts::load(db, &driving.table).await?
        {
            plan.spans = sample_spans(&facts, scan_parallelism());
        }
        Ok(plan)
    }

    /// The lookups `table` offers on `keys` (its join columns), given its own conditions.
    fn templates(
        &self,
        requests: &[ScanRequest],
        table: usize,
        keys: &[(usize, ColumnRef)],
    ) -> Vec<LookupTemplate> {
        let Some(request) = requests.get(table) else {
            return Vec::new();
        };
        let join_columns: Vec<usize> = keys.iter().map(|(column, _)| *column).collect();
        lookup_templates(
            &request.table,
            &join_columns,
            &request.predicates,
            request.needed.as_deref(),
            &request.hint,
        )
    }

    /// The equalities that join `table` to the tables `joined` marks: one per column of
    /// `table` (a second equality on the same column is checked on the joined rows).
    fn keys_to(&self, table: usize, joined: &[bool]) -> Vec<(usize, ColumnRef)> {
        let mut keys: Vec<(usize, ColumnRef)> = Vec::new();
        for (a, b) in &self.equalities {
            let (probed, source) = match (a.table == table, b.table == table) {
                (true, false) => (a, b),
                (false, true) => (b, a),
                _ => continue,
            };
            let reached = joined.get(source.table).copied().unwrap_or(false);
            if reached && !keys.iter().any(|(column, _)| *column == probed.column) {
                keys.push((probed.column, *source));
            }
        }
        keys
    }

    /// Plans afresh: see the module's header.
    pub(crate) async fn plan_fresh(
        &self,
        db: &DbState,
        bound: &[Bound],
        hints: &QueryHints,
        window: (usize, Option<usize>),
    ) -> Result<Option<JoinPlan>> {
        let requests = self.requests(bound, hints);
        let costs = db.store.capabilities().costs;
        let mut facts = Vec::with_capacity(requests.len());
        for (request, joined) in requests.iter().zip(&self.tables) {
            let mut best = choose_among(db, request, candidates(request)).await?;
            if best.estimate.is_none() {
                best = estimate_plans(db, request, vec![best.clone()])
                    .await?
                    .pop()
                    .unwrap_or(best);
            }
            let table_rows = db.stats.rows(db.store.as_ref(), &joined.table).await?;
            let (rows, cost_us) = match &best.estimate {
                Some(estimate) => (estimate.rows as f64, estimate.cost_us),
                None => (table_rows as f64, f64::INFINITY),
            };
            facts.push(TableFacts {
                request: request.clone(),
                best,
                rows,
                cost_us,
                table_rows,
                hint: hints.join_for_table(&joined.table.name),
            });
        }
        let mut chosen: Option<(f64, usize, Vec<Probe>)> = None;
        for driving in 0..self.tables.len() {
            let Some((cost, probes)) = self.order_from(db, driving, &requests, &facts, costs)
            else {
                continue;
            };
            if chosen.as_ref().is_none_or(|(best, ..)| cost < *best) {
                chosen = Some((cost, driving, probes));
            }
        }
        let Some((_, driving, probes)) = chosen else {
            return Ok(None);
        };
        let scan = match facts.get(driving) {
            Some(table) => table.best.clone(),
            None => return Ok(None),
        };
        Ok(Some(self.made(db, driving, scan, probes, window)))
    }

    /// The probes that join every table to `driving`, greedily, and their total cost; None
    /// when a table cannot be probed as DataFusion's rule would, or the rows are too many.
    fn order_from(
        &self,
        db: &DbState,
        driving: usize,
        requests: &[ScanRequest],
        facts: &[TableFacts],
        costs: rowdex_store::AccessCosts,
    ) -> Option<(f64, Vec<Probe>)> {
        let first = facts.get(driving)?;
        let kind = |table: usize| self.tables.get(table).map_or(JoinedAs::Inner, |t| t.kind);
        // A LEFT or anti joined table keeps rows of the others it does not match: it cannot
        // drive. A semi joined one can (its rows made distinct, `execute`).
        let never_drives = matches!(kind(driving), JoinedAs::Left | JoinedAs::Anti);
        if never_drives || first.rows > NATIVE_JOIN_ROWS_MAX || !first.cost_us.is_finite() {
            return None;
        }
        let mut joined = vec![false; self.tables.len()];
        joined[driving] = true;
        let (mut rows, mut cost) = (first.rows.max(1.0), first.cost_us);
        let mut probes = Vec::new();
        while probes.len() + 1 < self.tables.len() {
            let mut best: Option<Probe> = None;
            for (table, table_facts) in facts.iter().enumerate() {
                if joined[table] || table_facts.hint == JoinHint::Hash {
                    continue;
                }
                let keys = self.keys_to(table, &joined);
                // A LEFT JOIN's table comes after every table its ON names, a semi or anti
                // joined one after every table its subquery names: the rows it keeps or drops
                // are then final.
                let waits = kind(table) != JoinedAs::Inner
                    && self.equalities.iter().any(|(a, b)| {
                        (a.table == table && !joined[b.table])
                            || (b.table == table && !joined[a.table])
                    });
                if keys.is_empty() || waits {
                    continue;
                }
                let statistics = db
                    .stats
                    .gathered(table_facts.request.table.id)
                    .filter(|gathered| gathered.rows > 0);
                let priced = self
                    .templates(requests, table, &keys)
                    .into_iter()
                    .map(|template| {
                        let per_probe =
                            template.rows_per_probe(statistics.as_deref(), table_facts.table_rows);
                        let estimate = template.estimate(rows, per_probe, costs);
                        (template, estimate)
                    });
                let Some((template, lookup)) =
                    priced.min_by(|(_, a), (_, b)| a.cost_us.total_cmp(&b.cost_us))
                else {
                    continue;
                };
                // DataFusion's rule: a hash join reads the table whole (with its conditions)
                // and hashes both sides.
                let hash = table_facts.cost_us + (rows + table_facts.rows) * JOIN_ROW_NS / 1000.0;
                let worth = table_facts.hint == JoinHint::Lookup
                    || (table_facts.table_rows >= LOOKUP_MIN_TABLE_ROWS && lookup.cost_us < hash);
                let cheaper = best
                    .as_ref()
                    .and_then(|b| b.estimate)
                    .is_none_or(|(_, current)| lookup.cost_us < current.cost_us);
                if worth && cheaper {
                    best = Some(Probe {
                        table,
                        keys,
                        template,
                        estimate: Some((rows, lookup)),
                    });
                }
            }
            let probe = best?;
            let (_, lookup) = probe.estimate?;
            cost += lookup.cost_us;
            rows = match kind(probe.table) {
                JoinedAs::Inner => lookup.rows.max(1.0),
                JoinedAs::Left | JoinedAs::Anti => lookup.rows.max(rows),
                JoinedAs::Semi => lookup.rows.min(rows).max(1.0),
            };
            if rows > NATIVE_JOIN_ROWS_MAX {
                return None;
            }
            joined[probe.table] = true;
            probes.push(probe);
        }
        Some((cost, probes))
    }
}
