//! What `pg_stat_statements` shows: for each statement text (its constants replaced by
//! parameters, `rowdex::normalize_statement`) and user, how often it ran, how long it took
//! (total, min, max, mean, standard deviation), the rows it returned or changed, and rowdex's
//! own figures of its last run's plan and reads.
//!
//! Memory is bounded: at most [`MAX_STATEMENTS`] entries (PostgreSQL's `pg_stat_statements.max`
//! default); when a new statement finds them all taken, the 5 % with the least total time go
//! (as PostgreSQL deallocates the least used), which `pg_stat_statements_info.dealloc` counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use dashmap::DashMap;
use rowdex::{NormalizedStatement, StatementFigures};

/// The most statements kept.
pub const MAX_STATEMENTS: usize = 5_000;

/// One statement text of one user.
#[derive(Debug, Clone)]
pub struct StatementEntry {
    pub user_oid: i64,
    pub query_id: i64,
    pub query: String,
    pub calls: u64,
    /// Milliseconds.
    pub total_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// The sum of the squared differences from the mean (Welford's), for the deviation.
    squares: f64,
    pub rows: u64,
    /// The latest run's access path.
    pub access_path: Option<String>,
    pub entries_read: u64,
    pub row_gets: u64,
    pub retries: u64,
    pub conflicts: u64,
}

impl StatementEntry {
    pub fn mean_ms(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.total_ms / self.calls as f64
        }
    }

    /// The population standard deviation of the run times, as PostgreSQL computes it.
    pub fn stddev_ms(&self) -> f64 {
        if self.calls < 2 {
            0.0
        } else {
            (self.squares / self.calls as f64).sqrt()
        }
    }

    fn add(&mut self, elapsed_ms: f64, rows: u64, report: StatementFigures) {
        let old_mean = self.mean_ms();
        self.calls += 1;
        self.total_ms += elapsed_ms;
        let new_mean = self.mean_ms();
        self.squares += (elapsed_ms - old_mean) * (elapsed_ms - new_mean);
        self.min_ms = if self.calls == 1 {
            elapsed_ms
        } else {
            self.min_ms.min(elapsed_ms)
        };
        self.max_ms = self.max_ms.max(elapsed_ms);
        self.rows += rows;
        if report.access_path.is_some() {
            self.access_path = report.access_path;
        }
        self.entries_read += report.entries_read;
        self.row_gets += report.row_gets;
        self.retries += report.retries;
        self.conflicts += report.conflicts;
    }
}

/// Every statement's figures, shared by the connections of one server.
#[derive(Debug)]
pub struct StatementStats {
    entries: DashMap<(i64, i64), Mutex<StatementEntry>>,
    /// Times entries were dropped to make room.
    dealloc: AtomicU64,
    reset_at: Mutex<SystemTime>,
}

impl Default for StatementStats {
    fn default() -> Self {
        StatementStats {
            entries: DashMap::new(),
            dealloc: AtomicU64::new(0),
            reset_at: Mutex::new(SystemTime::now()),
        }
    }
}

impl StatementStats {
    /// Counts one run of `statement` by `user_oid`.
    pub fn record(
        &self,
        user_oid: i64,
        statement: &NormalizedStatement,
        elapsed: Duration,
        rows: u64,
        report: StatementFigures,
    ) {
        let key = (user_oid, statement.id);
        let elapsed_ms = elapsed.as_secs_f64() * 1e3;
        // A statement seen before is counted under its shard's read lock.
        if let Some(entry) = self.entries.get(&key) {
            entry
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(elapsed_ms, rows, report);
            return;
        }
        if self.entries.len() >= MAX_STATEMENTS {
            self.make_room();
        }
        let entry = self.entries.entry(key).or_insert_with(|| {
            Mutex::new(StatementEntry {
                user_oid,
                query_id: statement.id,
                query: statement.text.clone(),
                calls: 0,
                total_ms: 0.0,
                min_ms: 0.0,
                max_ms: 0.0,
                squares: 0.0,
                rows: 0,
                access_path: None,
                entries_read: 0,
                row_gets: 0,
                retries: 0,
                conflicts: 0,
            })
        });
        entry
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(elapsed_ms, rows, report);
    }

    /// Drops the 5 % of entries with the least total time.
    fn make_room(&self) {
        let mut totals: Vec<((i64, i64), f64)> = self
            .entries
            .iter()
            .map(|entry| {
                let total = entry
                    .value()
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .total_ms;
                (*entry.key(), total)
            })
            .collect();
        totals.sort_by(|a, b| a.1.total_cmp(&b.1));
        let drop = (MAX_STATEMENTS / 20).max(1);
        for (key, _) in totals.into_iter().take(drop) {
            self.entries.remove(&key);
        }
        self.dealloc.fetch_add(1, Ordering::Relaxed);
    }

    /// Every entry, the most total time first.
    pub fn entries(&self) -> Vec<StatementEntry> {
        let mut all: Vec<StatementEntry> = self
            .entries
            .iter()
            .map(|entry| {
                entry
                    .value()
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
            })
            .collect();
        all.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
        all
    }

    /// `pg_stat_statements_reset()`: forgets every entry.
    pub fn reset(&self) {
        self.entries.clear();
        *self.reset_at.lock().unwrap_or_else(PoisonError::into_inner) = SystemTime::now();
    }

    /// `pg_stat_statements_info`: how many times entries were dropped, and the last reset.
    pub fn info(&self) -> (u64, SystemTime) {
        (
            self.dealloc.load(Ordering::Relaxed),
            *self.reset_at.lock().unwrap_or_else(PoisonError::into_inner),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(text: &str) -> NormalizedStatement {
        rowdex::normalize_statement(text)
    }

    #[test]
    fn runs_add_up_and_the_deviation_is_the_populations() {
        let stats = StatementStats::default();
        let select = statement("SELECT 1");
        for ms in [10, 20, 30] {
            stats.record(
                10,
                &select,
                Duration::from_millis(ms),
                1,
                StatementFigures::default(),
            );
        }
        let entries = stats.entries();
        assert_eq!(entries.len(), 1);
        let entry = &entries[0];
        assert_eq!((entry.calls, entry.rows), (3, 3));
        assert!((entry.total_ms - 60.0).abs() < 1e-6);
        assert!((entry.min_ms - 10.0).abs() < 1e-6 && (entry.max_ms - 30.0).abs() < 1e-6);
        assert!((entry.mean_ms() - 20.0).abs() < 1e-6);
        // sqrt(((10-20)² + 0 + (30-20)²) / 3)
        assert!((entry.stddev_ms() - (200.0f64 / 3.0).sqrt()).abs() < 1e-6);
        stats.reset();
        assert!(stats.entries().is_empty());
    }

    #[test]
    fn a_full_table_drops_its_least_time() {
        let stats = StatementStats::default();
        for i in 0..MAX_STATEMENTS {
            let text = format!("SELECT * FROM t{i}");
            let elapsed = Duration::from_micros(i as u64 + 1);
            stats.record(
                10,
                &statement(&text),
                elapsed,
                0,
                StatementFigures::default(),
            );
        }
        assert_eq!(stats.entries().len(), MAX_STATEMENTS);
        stats.record(
            10,
            &statement("SELECT * FROM fresh"),
            Duration::from_secs(1),
            0,
            StatementFigures::default(),
        );
        let entries = stats.entries();
        assert_eq!(entries.len(), MAX_STATEMENTS - MAX_STATEMENTS / 20 + 1);
        assert_eq!(entries[0].query, "SELECT * FROM fresh");
        assert!(!entries.iter().any(|e| e.query == "SELECT * FROM t0"));
        assert_eq!(stats.info().0, 1);
    }
}
