//! Scenario tests of the rowdex library through its public API: durability across reopen and
//! across SIGKILL, statement atomicity, concurrent sessions, identical answers on every backend
//! and key layout, scans that stop early, and cursor paging. One binary for the crate (each module is one
//! theme).

mod atomicity;
mod backends;
mod cluster;
mod cluster_locks;
mod concurrency;
mod copy;
mod crash;
mod durability;
mod durability_levels;
mod early_stop;
mod embedding;
mod explain;
mod families;
mod faults;
mod foreign_keys;
mod hot_rows;
mod indexes;
mod isolation;
mod joins;
mod limits;
mod locking_reads;
mod memory_budget;
mod paging;
mod plan_once;
mod prepared;
mod scale;
mod schema_changes;
mod sequences;
mod transactional_ddl;
mod transactions;
mod ttl;
mod versions;

use std::io::Write;

use rowdex::arrow::array::{Array, RecordBatch};
use rowdex::{Output, Session};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Every row of a query as text cells (NULL as "NULL"), in result order.
pub async fn rows(session: &Session, sql: &str) -> Result<Vec<Vec<String>>, rowdex::Error> {
    let mut out = Vec::new();
    for output in session.execute(sql).await? {
        if let Output::Rows { batches, .. } = output {
            out.extend(cells(&batches));
        }
    }
    Ok(out)
}

/// The rows a statement (or script) changed.
pub async fn affected(session: &Session, sql: &str) -> Result<u64, rowdex::Error> {
    let mut total = 0;
    for output in session.execute(sql).await? {
        if let Output::Affected { rows } = output {
            total += rows;
        }
    }
    Ok(total)
}

/// Every row of `batches` as text cells (NULL as "NULL").
pub fn cells(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            out.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| {
                        rowdex::format::cell_text(c.as_ref() as &dyn Array, row)
                            .unwrap_or_else(|| "NULL".to_string())
                    })
                    .collect(),
            );
        }
    }
    out
}

/// The cores this process may use, for a check of reads split across them: a check that needs
/// two or more says on a one-core machine that it is skipped, and fails instead where
/// `ROWDEX_REQUIRE_PARALLEL` is set (CI sets it: its machines have two cores, so a skip there
/// means the check silently stopped running).
pub fn cores_for_parallel_check(check: &str) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        let message = format!("SKIPPED: {check} needs two cores; this machine gives one");
        assert!(
            std::env::var_os("ROWDEX_REQUIRE_PARALLEL").is_none(),
            "{message}, and ROWDEX_REQUIRE_PARALLEL is set"
        );
        // Straight to the process's stderr: the test harness captures `eprintln!` of a test
        // that passes, and a skip must be seen.
        let _ = writeln!(std::io::stderr(), "{message}");
    }
    cores
}

/// Shorthand for expected rows.
pub fn table(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

/// Deterministic pseudo-random numbers (xorshift), so a failure reproduces from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    /// A number in `lo..hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.next((hi - lo) as u64) as i64
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next(items.len() as u64) as usize]
    }
}
