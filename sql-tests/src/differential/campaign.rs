//! A differential run: scenario after scenario, each set up on SQLite and on every rowdex
//! configuration, asked random queries; each mismatch is shrunk (once per kind of failure),
//! written as a `.slt` file, and counted. Also counts the access paths EXPLAIN shows for the
//! generated queries, so a run tells whether the index paths were exercised at all.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::Restrictions;
use super::case::{Case, Failure, Mode, Verdict, error_pattern, judge};
use super::engines::{Config, Rowdex, Sqlite};
use super::generate::Gen;
use super::query::Select;
use super::rng::Rng;
use super::scenario::Scenario;
use super::shrink::shrink;
use super::slt::{self, Notes};
use super::value::Value;
use crate::{Backend, Error};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    /// Random queries to compare (each on every configuration).
    pub cases: usize,
    /// Queries asked of each scenario before a new one is generated.
    pub queries_per_scenario: usize,
    pub configs: Vec<Config>,
    pub restrictions: Restrictions,
    /// Where shrunk failures are written as `.slt` files (none: only reported).
    pub out: Option<PathBuf>,
    /// Checks the shrinker may run per failure.
    pub shrink_budget: usize,
    /// Failures shrunk at most; later ones of a kind already seen are only counted.
    pub max_shrunk: usize,
    /// Stop generating new scenarios after this long.
    pub time_limit: Option<Duration>,
    /// Whether a few tables get thousands of rows (slow in a debug build).
    pub huge_tables: bool,
}

impl Options {
    pub fn new(seed: u64, cases: usize) -> Options {
        Options {
            seed,
            cases,
            queries_per_scenario: 20,
            configs: Config::all(),
            restrictions: Restrictions::default(),
            out: None,
            shrink_budget: 400,
            max_shrunk: 40,
            time_limit: None,
            huge_tables: true,
        }
    }
}

/// A distinct failure found by the run.
#[derive(Debug, Clone)]
pub struct Finding {
    /// What tells it apart from other findings: query shape, failure kind, failing configs.
    pub signature: String,
    pub symptom: String,
    pub failing: Vec<Config>,
    /// The shrunk case as a `.slt` file.
    pub slt: String,
    pub file: Option<PathBuf>,
    /// Failing queries of the run that shrank into this finding or looked like one that did.
    pub occurrences: usize,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Summary {
    pub scenarios: usize,
    pub queries: usize,
    /// Query answers compared with SQLite's (queries times configurations).
    pub comparisons: usize,
    /// Comparisons that failed.
    pub mismatches: usize,
    pub findings: Vec<Finding>,
    /// Failing queries not shrunk because the run had shrunk `max_shrunk` already.
    pub unshrunk: usize,
    /// Generated writes SQLite rejected (a taken key or unique value), which rowdex then had
    /// to reject too.
    pub rejected_writes: usize,
    /// Generated writes with RETURNING that SQLite ran, whose rows rowdex had to return too.
    pub returning_writes: usize,
    /// Generated statements SQLite rejected (generator bugs), with its message.
    pub rejected: Vec<String>,
    /// How often EXPLAIN showed each access path for the generated queries (indexed, memory).
    pub paths: BTreeMap<String, usize>,
    pub elapsed: Duration,
}

impl Summary {
    pub fn report(&self) -> String {
        let mut lines = vec![format!(
            "{} scenarios ({} writes rejected alike, {} RETURNING answers compared), {} queries, {} comparisons with SQLite, {} mismatches, {} distinct findings, {} generator errors, {:.1}s",
            self.scenarios,
            self.rejected_writes,
            self.returning_writes,
            self.queries,
            self.comparisons,
            self.mismatches,
            self.findings.len(),
            self.rejected.len(),
            self.elapsed.as_secs_f64()
        )];
        let paths: Vec<String> = self
            .paths
            .iter()
            .map(|(p, n)| format!("{p}: {n}"))
            .collect();
        lines.push(format!("access paths: {}", paths.join(", ")));
        for finding in &self.findings {
            lines.push(format!(
                "finding ({} occurrences) [{}] {}{}",
                finding.occurrences,
                finding
                    .failing
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                finding.symptom,
                finding
                    .file
                    .as_ref()
                    .map(|f| format!(" -> {}", f.display()))
                    .unwrap_or_default()
            ));
        }
        for rejected in self.rejected.iter().take(10) {
            lines.push(format!("generator error: {rejected}"));
        }
        lines.join("\n")
    }
}

/// The access paths counted, as EXPLAIN spells them.
const PATHS: [&str; 8] = [
    "POINT GET",
    "MULTI GET",
    "RANGE SCAN",
    "INDEX SCAN",
    "INDEX INTERSECTION",
    "INDEX UNION",
    "FULL SCAN",
    "LOOKUP JOIN",
];

/// What the paths count a range scan read merged across its key prefixes as.
pub const MERGED_RANGES: &str = "MERGED RANGES";

/// What the paths count an index read through an indexed expression as.
pub const EXPRESSION_INDEX: &str = "EXPRESSION INDEX";

/// Whether a plan line reads an index by the value of an expression (`[lower(b) = 'x']`,
/// `[(a % 7) > 2]`, `[SUBSTR(b, 1, 2) = 'ab']`), as EXPLAIN names an indexed expression.
fn reads_expression_index(line: &str) -> bool {
    line.contains(" using ")
        && ["[lower(", "[SUBSTR(", "[(", "; lower(", "; SUBSTR(", "; ("]
            .iter()
            .any(|marker| line.contains(marker))
}

/// Runs `options`, calling `progress` with a line now and then.
pub async fn run(options: &Options, progress: &mut dyn FnMut(&str)) -> Result<Summary, Error> {
    let started = Instant::now();
    let mut summary = Summary::default();
    // Failures seen before shrinking, by (query shape, failure, failing configs), with the
    // finding each was shrunk into: a failure like one already shrunk is only counted.
    let mut seen: BTreeMap<String, Option<usize>> = BTreeMap::new();
    let mut shrunk = 0usize;
    let mut scenario_number = 0u64;
    while summary.queries < options.cases {
        if options
            .time_limit
            .is_some_and(|limit| started.elapsed() > limit)
        {
            progress("time limit reached");
            break;
        }
        let mut rng = Rng::new(Rng::derive(options.seed, scenario_number));
        let scenario = Scenario::random(&mut rng, &options.restrictions, options.huge_tables);
        let origin_scenario = scenario_number;
        scenario_number += 1;
        let sqlite = match Sqlite::open(&scenario) {
            Ok(sqlite) => sqlite,
            Err(error) => {
                summary.rejected.push(error.to_string());
                continue;
            }
        };
        let mut engines = Vec::with_capacity(options.configs.len());
        for &config in &options.configs {
            engines.push(Rowdex::open(config, &scenario, &sqlite.writes).await?);
        }
        summary.scenarios += 1;
        summary.rejected_writes += sqlite.writes.rejected.len();
        summary.returning_writes += sqlite
            .writes
            .returned
            .keys()
            .filter(|statement| {
                scenario
                    .writes
                    .get(statement.0)
                    .is_some_and(|w| w.returning().is_some())
            })
            .count();
        let explainer = engines
            .iter()
            .position(|e| e.config.indexed && e.config.backend == Backend::Memory);

        // Each table's whole contents first (the load and the writes), then random queries.
        let mut queries: Vec<Select> = scenario
            .relations()
            .iter()
            .map(|t| Select::all_rows(&t.name))
            .collect();
        let wanted = options
            .queries_per_scenario
            .min(options.cases.saturating_sub(summary.queries))
            .max(queries.len() + 1);
        let mut generator = Gen {
            rng: &mut rng,
            scenario: &scenario,
            restrictions: &options.restrictions,
        };
        while queries.len() < wanted {
            let query = generator.query();
            // Now and then the same query again with other values, as an application would
            // send it: the second one runs from the compiled-query cache.
            let sibling = generator.rng.percent(25).then(|| generator.sibling(&query));
            queries.push(query);
            queries.extend(sibling);
        }
        for (number, query) in queries.iter().enumerate() {
            let sql = query.sql();
            let mode = Mode::of(query, &scenario.relations());
            let expected = match sqlite.query(&mode.reference(query).sql()) {
                Ok(rows) => rows,
                Err(error) => {
                    summary.rejected.push(format!("{error} [{sql}]"));
                    continue;
                }
            };
            summary.queries += 1;
            let mut failing: Vec<(Config, Failure)> = Vec::new();
            for engine in &engines {
                summary.comparisons += 1;
                if let Some(failure) = judge(&expected, engine.query(&sql).await, mode) {
                    summary.mismatches += 1;
                    failing.push((engine.config, failure));
                }
            }
            if let Some(i) = explainer {
                for line in engines[i].explain(&sql).await {
                    for path in PATHS {
                        if line.contains(path) {
                            *summary.paths.entry(path.to_string()).or_default() += 1;
                        }
                    }
                    if reads_expression_index(&line) {
                        *summary
                            .paths
                            .entry(EXPRESSION_INDEX.to_string())
                            .or_default() += 1;
                    }
                    if line.contains("] merged") {
                        *summary.paths.entry(MERGED_RANGES.to_string()).or_default() += 1;
                    }
                }
            }
            let Some((config, failure)) = failing.first().cloned() else {
                continue;
            };
            let configs: Vec<Config> = failing.iter().map(|(c, _)| *c).collect();
            let key = format!(
                "{} | {} | {}",
                query.shape(),
                failure_key(&failure),
                configs
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            if let Some(known) = seen.get(&key) {
                match known.and_then(|i| summary.findings.get_mut(i)) {
                    Some(finding) => finding.occurrences += 1,
                    None => summary.unshrunk += 1,
                }
                continue;
            }
            if shrunk >= options.max_shrunk {
                seen.insert(key, None);
                summary.unshrunk += 1;
                continue;
            }
            shrunk += 1;
            let origin = format!(
                "--seed {} scenario {origin_scenario} query {number}",
                options.seed
            );
            progress(&format!("failure on {config} ({origin}): {sql}"));
            let case = Case {
                scenario: scenario.clone(),
                query: query.clone(),
                config,
            };
            let (finding, rows, checks) =
                shrink_and_write(options, case, expected, failure, &origin).await?;
            progress(&format!(
                "  shrunk to {rows} rows in {checks} checks: {}",
                finding.symptom
            ));
            let index = match summary
                .findings
                .iter()
                .position(|f| f.signature == finding.signature)
            {
                // The same failure after shrinking, reached from another query shape.
                Some(i) => {
                    summary.findings[i].occurrences += 1;
                    i
                }
                None => {
                    summary.findings.push(finding);
                    summary.findings.len() - 1
                }
            };
            seen.insert(key, Some(index));
        }
        if scenario_number.is_multiple_of(10) {
            progress(&format!(
                "{} scenarios, {} queries, {} mismatches, {:.0}s",
                summary.scenarios,
                summary.queries,
                summary.mismatches,
                started.elapsed().as_secs_f64()
            ));
        }
    }
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// The failure's kind for telling failures apart: a mismatch, or the error's message
/// without its values.
fn failure_key(failure: &Failure) -> String {
    match failure {
        Failure::Mismatch { .. } => "mismatch".to_string(),
        Failure::Error { message } => error_pattern(message),
    }
}

/// Shrinks a failing case, checks the result on every configuration, and writes its `.slt`.
/// Returns the finding, the shrunk case's row count and the checks shrinking took.
async fn shrink_and_write(
    options: &Options,
    case: Case,
    expected: Vec<Vec<Value>>,
    failure: Failure,
    origin: &str,
) -> Result<(Finding, usize, usize), Error> {
    let shrunk = shrink(case, expected, failure, options.shrink_budget).await?;
    let mut failing = Vec::new();
    let mut passing = Vec::new();
    for &config in &Config::all() {
        let mut c = shrunk.case.clone();
        c.config = config;
        match c.check().await? {
            Verdict::Fail { .. } => failing.push(config),
            _ => passing.push(config),
        }
    }
    let writes = Sqlite::open(&shrunk.case.scenario)
        .map(|s| s.writes)
        .unwrap_or_default();
    let plan = Rowdex::open(shrunk.case.config, &shrunk.case.scenario, &writes)
        .await?
        .explain(&shrunk.case.query.sql())
        .await;
    let notes = Notes {
        origin,
        failing: &failing,
        passing: &passing,
        plan: &plan,
        writes: &writes,
    };
    let text = slt::render(&shrunk.case, &shrunk.expected, &shrunk.failure, &notes);
    let symptom = shrunk.failure.symptom(&shrunk.expected);
    let signature = format!(
        "{} | {} | {}",
        shrunk.case.query.shape(),
        failure_key(&shrunk.failure),
        failing
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut file = None;
    if let Some(dir) = &options.out {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let name = format!(
            "seed{}-{}.slt",
            options.seed,
            origin
                .split_whitespace()
                .skip(2)
                .collect::<Vec<_>>()
                .join("-")
        );
        let path = dir.join(name);
        std::fs::write(&path, &text).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        file = Some(path);
    }
    let rows = shrunk.case.scenario.row_count();
    Ok((
        Finding {
            signature,
            symptom,
            failing,
            slt: text,
            file,
            occurrences: 1,
        },
        rows,
        shrunk.checks,
    ))
}
