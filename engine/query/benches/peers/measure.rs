//! What an engine does ([`Engine`]) and how a child process times it: each case's calls on
//! deterministic inputs, its row counts checked per call, `RESULT case value` and
//! `ROWS case total` printed for the parent.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::data::{
    A_VALUES, ACTION_TS_STEP, ACTIONS_PER_USER, B_VALUES, BenchResult, C_VALUES, Data,
};
use crate::data::{FIRST_ACTION_TS, PairCounts, ROWS_PER_USER, mix, write_orders_csv};

/// The tables every engine loads.
pub const TABLES: [&str; 3] = ["orders", "pairs", "actions"];

/// Which timed cases run and how many calls each makes.
#[derive(Clone)]
pub struct Reps {
    /// Only these timed cases run (`--cases point,intersect,...`); `None` runs all of them. The
    /// load always runs.
    pub cases: Option<Vec<String>>,
    pub point: u64,
    pub lookup: u64,
    pub intersect: u64,
    pub aggregate: u64,
    /// Times each timed case runs its calls over (1 but for profiling).
    pub repeat: u64,
}

impl Reps {
    /// Whether the timed case `case` (a `RESULT` name such as `intersect_us`) is to run: a
    /// `--cases` entry matches a case whose name starts with it.
    fn wants(&self, case: &str) -> bool {
        self.cases
            .as_ref()
            .is_none_or(|cases| cases.iter().any(|c| case.starts_with(c.as_str())))
    }
}

/// What one engine does: set up, load, and each case's operation on one input. Every operation
/// returns the number of rows it produced.
pub trait Engine {
    /// Whether this process's peak memory is the engine's. False for a server, which runs in
    /// processes of its own that the client cannot measure.
    fn peak_memory_is_own(&self) -> bool {
        true
    }
    /// Loads `orders` (created empty with its two indexes) from the CSV file: the timed load.
    async fn load_orders(&mut self, csv: &Path) -> BenchResult<()>;
    /// Creates and loads `pairs` and `actions`, and prepares the statements.
    async fn load_rest(&mut self) -> BenchResult<()>;
    /// What a user does after a bulk load before serving reads, beyond what `load_rest` did
    /// (rowdex: `VACUUM`, merging the load's level-0 runs; SQLite and PostgreSQL analyze and
    /// vacuum in `load_rest`). Timed apart.
    async fn settle(&mut self) -> BenchResult<()> {
        Ok(())
    }
    /// Whether each call crosses a network to a server (PostgreSQL), so that what a round trip
    /// costs is measured beside the cases (`round_trip_us`).
    fn has_round_trip(&self) -> bool {
        false
    }
    /// A prepared `SELECT 1` through the same client as the cases: the round trip alone.
    async fn round_trip(&mut self) -> BenchResult<usize> {
        Err("no round trip: the engine runs in this process".into())
    }
    async fn point_get(&mut self, id: u64) -> BenchResult<usize>;
    /// The point get as SQL text with the id written in it, through the engine's statement cache.
    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize>;
    /// The same text with no statement cache: parsed and planned on every call.
    async fn point_get_adhoc_nocache(&mut self, id: u64) -> BenchResult<usize>;
    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize>;
    /// `pairs WHERE a = ? AND b = ?`.
    async fn intersect_a_b(&mut self, a: u64, b: u64) -> BenchResult<usize>;
    /// `pairs WHERE b = ? AND c = ?`.
    async fn intersect_b_c(&mut self, b: u64, c: u64) -> BenchResult<usize>;
    async fn page(&mut self, uid: u64) -> BenchResult<usize>;
    /// The page of `uid` before `before_ts`, as `uid = ? AND ts < ?`.
    async fn page_keyset(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize>;
    /// The same page as `uid = ? AND (uid, ts) < (?, ?)`.
    async fn page_keyset_rowvalue(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize>;
    /// `GROUP BY country` over `orders`: the number of groups.
    async fn aggregate(&mut self) -> BenchResult<usize>;
    /// Reads every table once, so that the timed cases see warm caches (fjall's block cache,
    /// SQLite's page cache, PostgreSQL's shared buffers and the OS's) rather than the first
    /// touch of each block. Returns the number of table rows (index entries aside).
    async fn warm(&mut self) -> BenchResult<u64>;
}

pub fn report(case: &str, value: f64) {
    println!("RESULT {case} {value}");
}

fn report_rows(case: &str, total: u64) {
    println!("ROWS {case} {total}");
}

/// Peak resident memory of this process since the last reset, in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Starts a new peak-memory window (Linux: writing 5 to clear_refs resets VmHWM).
fn reset_peak_rss() {
    // Best effort: without it the peak covers the process's whole life so far.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Reports the peak memory of the window under `case`, when it is the engine's own.
fn report_peak_rss(engine: &impl Engine, case: &str) {
    if engine.peak_memory_is_own()
        && let Some(peak) = peak_rss_mib()
    {
        report(case, peak);
    }
}

/// Runs `op` on inputs 0..calls and reports the mean time per call in microseconds and the
/// rows returned in all; fails when a call returns other than `expect(i)` rows.
async fn time_each<E: Engine>(
    engine: &mut E,
    reps: &Reps,
    case: &str,
    calls: u64,
    mut op: impl AsyncFnMut(&mut E, u64) -> BenchResult<usize>,
    expect: impl Fn(u64) -> Option<usize>,
) -> BenchResult<()> {
    if !reps.wants(case) {
        return Ok(());
    }
    // Marks the start of the case for a profiler attached from outside (the parent ignores it).
    println!("CASE {case}");
    // Warm up on other inputs: the first calls pay for caches and lazily built statistics.
    for i in 0..calls.min(50) {
        op(engine, i + calls).await?;
    }
    let mut total_rows = 0;
    let started = Instant::now();
    for _ in 0..reps.repeat {
        for i in 0..calls {
            let rows = op(engine, i).await?;
            if let Some(expected) = expect(i)
                && rows != expected
            {
                let message = format!("{case}: input {i} gave {rows} rows, expected {expected}");
                return Err(message.into());
            }
            total_rows += rows as u64;
        }
    }
    let calls_made = calls * reps.repeat;
    report(
        case,
        started.elapsed().as_secs_f64() * 1e6 / calls_made as f64,
    );
    report_rows(case, total_rows);
    Ok(())
}

/// The timed load of `orders`, and the untimed load of the rest, checked by a full read.
async fn load(engine: &mut impl Engine, data: Data, dir: &Path) -> BenchResult<()> {
    let csv = dir.join("orders.csv");
    write_orders_csv(data, &csv)?;
    reset_peak_rss();
    let started = Instant::now();
    engine.load_orders(&csv).await?;
    let elapsed = started.elapsed();
    report("load_rows_per_s", data.rows as f64 / elapsed.as_secs_f64());
    report("load_s", elapsed.as_secs_f64());
    report_peak_rss(engine, "load_peak_mib");
    engine.load_rest().await?;
    let started = Instant::now();
    engine.settle().await?;
    report("settle_s", started.elapsed().as_secs_f64());
    let loaded = engine.warm().await?;
    let expected = data.rows * TABLES.len() as u64;
    if loaded != expected {
        return Err(format!("load: the tables hold {loaded} rows, expected {expected}").into());
    }
    Ok(())
}

async fn point_cases(engine: &mut impl Engine, data: Data, reps: &Reps) -> BenchResult<()> {
    let rows = data.rows;
    let calls = reps.point;
    if engine.has_round_trip() {
        time_each(
            engine,
            reps,
            "round_trip_us",
            calls,
            async |e, _| e.round_trip().await,
            |_| Some(1),
        )
        .await?;
    }
    time_each(
        engine,
        reps,
        "point_get_us",
        calls,
        async |e, i| e.point_get(mix(i) % rows).await,
        |_| Some(1),
    )
    .await?;
    time_each(
        engine,
        reps,
        "point_get_adhoc_us",
        calls,
        async |e, i| e.point_get_adhoc(mix(i) % rows).await,
        |_| Some(1),
    )
    .await?;
    time_each(
        engine,
        reps,
        "point_get_adhoc_nocache_us",
        calls,
        async |e, i| e.point_get_adhoc_nocache(mix(i) % rows).await,
        |_| Some(1),
    )
    .await
}

/// The (a, b) values of the i-th 10 % x 1 % intersection.
fn a_b_input(i: u64) -> (u64, u64) {
    (i % A_VALUES, mix(i) % B_VALUES)
}

/// The (b, c) values of the i-th 1 % x 1 % intersection.
fn b_c_input(i: u64) -> (u64, u64) {
    (mix(i) % B_VALUES, mix(i ^ 3) % C_VALUES)
}

async fn lookup_cases(engine: &mut impl Engine, data: Data, reps: &Reps) -> BenchResult<()> {
    let rows = data.rows;
    let users = data.users();
    time_each(
        engine,
        reps,
        "index_lookup_us",
        reps.lookup,
        async |e, i| e.index_lookup(mix(i) % users).await,
        |_| (rows >= ROWS_PER_USER).then_some(ROWS_PER_USER as usize),
    )
    .await?;
    let counts = PairCounts::new(data);
    time_each(
        engine,
        reps,
        "intersect_us",
        reps.intersect,
        async |e, i| {
            let (a, b) = a_b_input(i);
            e.intersect_a_b(a, b).await
        },
        |i| {
            let (a, b) = a_b_input(i);
            Some(counts.a_b(a, b))
        },
    )
    .await?;
    time_each(
        engine,
        reps,
        "intersect_1x1_us",
        reps.intersect,
        async |e, i| {
            let (b, c) = b_c_input(i);
            e.intersect_b_c(b, c).await
        },
        |i| {
            let (b, c) = b_c_input(i);
            Some(counts.b_c(b, c))
        },
    )
    .await
}

async fn paging_cases(engine: &mut impl Engine, data: Data, reps: &Reps) -> BenchResult<()> {
    let action_users = data.action_users();
    // Each user's page is full when the user has a page beyond the skipped rows.
    let full_page = (data.rows >= ACTIONS_PER_USER).then_some(10);
    time_each(
        engine,
        reps,
        "page_us",
        reps.lookup,
        async |e, i| e.page(mix(i) % action_users).await,
        |_| full_page,
    )
    .await?;
    // Halfway through each user's actions.
    let before_ts = FIRST_ACTION_TS + ACTION_TS_STEP * (ACTIONS_PER_USER / 2);
    time_each(
        engine,
        reps,
        "page_keyset_us",
        reps.lookup,
        async |e, i| e.page_keyset(mix(i) % action_users, before_ts).await,
        |_| full_page,
    )
    .await?;
    time_each(
        engine,
        reps,
        "page_keyset_rowvalue_us",
        reps.lookup,
        async |e, i| {
            e.page_keyset_rowvalue(mix(i) % action_users, before_ts)
                .await
        },
        |_| full_page,
    )
    .await
}

/// The median of `reps.aggregate` runs of the aggregate, and its peak memory.
async fn aggregate_case(engine: &mut impl Engine, data: Data, reps: &Reps) -> BenchResult<()> {
    let case = "aggregate_s";
    if !reps.wants(case) {
        return Ok(());
    }
    println!("CASE {case}");
    let expected = data.countries_present();
    let mut times = Vec::new();
    let mut total_groups = 0;
    reset_peak_rss();
    for _ in 0..reps.aggregate {
        let started = Instant::now();
        let groups = engine.aggregate().await?;
        times.push(started.elapsed());
        if groups != expected {
            return Err(format!("{case}: {groups} groups, expected {expected}").into());
        }
        total_groups += groups as u64;
    }
    times.sort();
    let median = times
        .get(times.len() / 2)
        .copied()
        .unwrap_or(Duration::ZERO);
    report(case, median.as_secs_f64());
    report_rows(case, total_groups);
    report_peak_rss(engine, "aggregate_peak_mib");
    Ok(())
}

/// Everything a child process measures of one engine, with `dir` for its files.
pub async fn run_engine(
    mut engine: impl Engine,
    data: Data,
    reps: Reps,
    dir: &Path,
) -> BenchResult<()> {
    load(&mut engine, data, dir).await?;
    point_cases(&mut engine, data, &reps).await?;
    lookup_cases(&mut engine, data, &reps).await?;
    paging_cases(&mut engine, data, &reps).await?;
    aggregate_case(&mut engine, data, &reps).await
}
