//! EXPLAIN of a join the native executor runs, in the words DataFusion's plan uses for the
//! same join (`df::context`): the driving table's read, then a `LOOKUP JOIN` line per probe
//! with its estimate; with VERBOSE, a head line and the driving read's candidates; with
//! ANALYZE, each probe's keys and rows found and what the whole join read.

use std::sync::Arc;
use std::time::Instant;

use rowdex_store::metered::{ReadMeter, metered};

use crate::db::DbState;
use crate::db::txn::{SessionTxn, read_view};
use crate::error::Result;
use crate::native::join::execute::ProbeCounts;
use crate::native::join::plan::Probe;
use crate::native::join::run::NullComparison;
use crate::native::join::{JoinedAs, NativeJoin};
use crate::scan::choose::weighed;
use crate::scan::explain::{ExplainOptions, actual_line, candidate_lines};
use crate::scan::partition::splits_intersection;
use crate::sql::hints::QueryHints;

/// The EXPLAIN lines of `join` run natively (None: DataFusion runs it).
pub(crate) async fn explain(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    join: &NativeJoin,
    hints: &QueryHints,
    options: ExplainOptions,
) -> Result<Option<Vec<String>>> {
    let Some(bound) = join.bind(&[]) else {
        return Ok(None);
    };
    let mut lines = Vec::new();
    if options.verbose {
        lines.push(format!(
            "NativeExec: join projection=[{}]",
            join.names.join(", ")
        ));
    }
    match bound.null_comparison(join) {
        NullComparison::Empty => {
            lines.push("EMPTY join (a comparison with NULL)".to_string());
            return Ok(Some(lines));
        }
        NullComparison::InOuterJoin => return Ok(None),
        NullComparison::None => {}
    }
    // EXPLAIN shows the estimates: planned afresh, never a kept choice.
    let window = (bound.offset, bound.limit);
    let Some(plan) = join.plan_fresh(db, &bound.tables, hints, window).await? else {
        return Ok(None);
    };
    let split = splits_intersection(&plan.scan);
    let plan = join.split(db, plan, split).await?;
    lines.push(match plan.spans.len() {
        0 | 1 => plan.scan.to_string(),
        n => format!("{} in {n} partitions", plan.scan),
    });
    if options.verbose
        && let Some(request) = join.driving_request(&bound.tables, hints, plan.driving)
    {
        lines.extend(candidate_lines(&plan.scan, &weighed(db, &request).await?));
    }
    for probe in &plan.probes {
        lines.push(join.probe_line(probe, plan.driving));
    }
    if options.analyze {
        let meter = Arc::new(ReadMeter::default());
        let started = Instant::now();
        let reader = metered(read_view(db, txn), meter.clone());
        let mut counts = ProbeCounts::default();
        let probes = plan.probes.len();
        // Past the memory budget DataFusion runs the join: its EXPLAIN ANALYZE says how.
        let Some(output) = join.execute(reader, plan, &mut counts).await? else {
            return Ok(None);
        };
        let rows = output.row_count();
        for at in 0..probes {
            lines.push(format!(
                "  probe {}: keys={} rows found={}",
                at + 1,
                counts.keys.get(at).copied().unwrap_or(0),
                counts.found.get(at).copied().unwrap_or(0)
            ));
        }
        lines.push(actual_line(
            rows as u64,
            meter.counts(),
            Some(started.elapsed()),
        ));
    }
    Ok(Some(lines))
}

impl NativeJoin {
    /// A probe's line: `LOOKUP JOIN users using primary key [id = user_id] (est. ...)`, the
    /// driving values named by their columns, as DataFusion's plan names them. A probe by the
    /// values of a semi joined table that drives is `SEMI` too, as DataFusion's semi join
    /// probing its output side is (the driving rows were made distinct: `execute`).
    fn probe_line(&self, probe: &Probe, driving: usize) -> String {
        let names: Vec<String> = probe
            .keys
            .iter()
            .map(|(_, source)| {
                self.tables
                    .get(source.table)
                    .and_then(|t| t.table.columns.get(source.column))
                    .map_or_else(|| "?".to_string(), |c| c.name.clone())
            })
            .collect();
        let kind_of = |table: usize| self.tables.get(table).map(|t| t.kind);
        let by_semi = kind_of(driving) == Some(JoinedAs::Semi)
            && probe.keys.iter().any(|(_, source)| source.table == driving);
        let kind = match kind_of(probe.table) {
            Some(JoinedAs::Left) => "LEFT ",
            Some(JoinedAs::Semi) => "SEMI ",
            Some(JoinedAs::Anti) => "ANTI ",
            Some(JoinedAs::Inner) | None if by_semi => "SEMI ",
            Some(JoinedAs::Inner) | None => "",
        };
        let mut text = format!("{kind}LOOKUP JOIN {}", probe.template.describe(&names));
        if let Some((probes, lookup)) = probe.estimate
            && probes.is_finite()
            && lookup.cost_us.is_finite()
        {
            text.push_str(&format!(
                " (est. probes={probes:.0} rows={:.0} cost={:.0}us)",
                lookup.rows, lookup.cost_us
            ));
        }
        text
    }
}
