//! What EXPLAIN ANALYZE and EXPLAIN VERBOSE add under a scan's access path: the reads and rows
//! of the scan as it ran (counters shared by a scan and its re-plans), and the candidate paths
//! the planner weighed, with their estimates.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rowdex_planner::ScanPlan;
use rowdex_store::metered::{ReadCounts, ReadMeter};

/// What EXPLAIN asks for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExplainOptions {
    /// List the candidate paths the planner weighed, with their estimates.
    pub(crate) verbose: bool,
    /// Run the query and print what it read and yielded under the plan.
    pub(crate) analyze: bool,
}

/// Marks a DataFusion session config whose scans meter their reads (EXPLAIN ANALYZE).
#[derive(Debug, Default)]
pub(crate) struct AnalyzeReads;

/// The reads of one scan (through [`rowdex_store::metered::metered`]) and the rows it yielded.
#[derive(Debug, Default)]
pub(crate) struct ScanReads {
    pub(crate) meter: Arc<ReadMeter>,
    rows: AtomicU64,
}

impl ScanReads {
    pub(crate) fn add_rows(&self, rows: usize) {
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// The `actual:` line of this scan.
    pub(crate) fn line(&self) -> String {
        actual_line(self.rows.load(Ordering::Relaxed), self.meter.counts(), None)
    }
}

/// `actual: rows=.. entries=.. gets=.. pages=..[ time=..ms]`: what ran, beside the estimate
/// EXPLAIN prints (`est. rows` are the rows the path yields, `entries` the keys it reads).
pub(crate) fn actual_line(rows: u64, counts: ReadCounts, elapsed: Option<Duration>) -> String {
    let mut line = format!(
        "  actual: rows={rows} entries={} (scanned={} gets={}) pages={}",
        counts.keys(),
        counts.entries,
        counts.gets,
        counts.pages
    );
    if let Some(elapsed) = elapsed {
        line.push_str(&format!(" time={}", millis(elapsed)));
    }
    line
}

/// `total: rows=.. time=..ms`: the rows and time of a whole statement run under ANALYZE.
pub(crate) fn total_line(rows: usize, elapsed: Duration) -> String {
    format!("total: rows={rows} time={}", millis(elapsed))
}

fn millis(elapsed: Duration) -> String {
    format!("{:.3}ms", elapsed.as_secs_f64() * 1000.0)
}

/// The VERBOSE lines of the candidates for one scan, cheapest first (as weighed, see
/// `choose::weighed`), the chosen one marked `*`; none when there was no choice. A path not
/// among them (an ordered index scan chosen for a LIMIT, or a hint) is said to be so.
pub(crate) fn candidate_lines(chosen: &ScanPlan, weighed: &[ScanPlan]) -> Vec<String> {
    if weighed.len() < 2 {
        // No choice was made: nothing to show beside the path.
        return Vec::new();
    }
    let chosen_path = (&chosen.path, chosen.direction);
    let mut lines = vec![format!(
        "  candidates for {} by estimated cost ({}):",
        chosen.table.name,
        weighed.len()
    )];
    for plan in weighed {
        let mark = if (&plan.path, plan.direction) == chosen_path {
            "*"
        } else {
            " "
        };
        lines.push(format!("  {mark} {plan}"));
    }
    if !weighed
        .iter()
        .any(|plan| (&plan.path, plan.direction) == chosen_path)
    {
        lines.push("    (the chosen path is none of these: it reads in the ORDER BY's order, or a hint chose it)".into());
    }
    lines
}
