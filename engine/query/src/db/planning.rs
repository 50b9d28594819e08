//! How many times statements were planned: DataFusion's logical plans made, and queries and
//! writes compiled for the native executor. A prepared statement or a cached compiled query
//! plans once and runs many times; these counters are how tests see that it does.

use std::sync::atomic::{AtomicU64, Ordering};

/// The counters of one database, shared by its sessions (and put in every DataFusion context
/// it makes, so that planning anywhere counts).
#[derive(Debug, Default)]
pub(crate) struct PlanCounter {
    datafusion: AtomicU64,
    native: AtomicU64,
    choices: AtomicU64,
}

/// The counts at one moment (see [`crate::Database::planning`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Planning {
    /// Statements DataFusion planned (SQL to a logical plan, then a physical one).
    pub datafusion_plans: u64,
    /// Queries and writes compiled for the native executor.
    pub native_compiles: u64,
    /// Access paths chosen afresh for a native query (a prepared one replays its choice until
    /// its table's statistics move).
    pub access_path_choices: u64,
}

impl PlanCounter {
    pub(crate) fn planned_by_datafusion(&self) {
        self.datafusion.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn compiled_natively(&self) {
        self.native.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn chose_access_path(&self) {
        self.choices.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn counts(&self) -> Planning {
        Planning {
            datafusion_plans: self.datafusion.load(Ordering::Relaxed),
            native_compiles: self.native.load(Ordering::Relaxed),
            access_path_choices: self.choices.load(Ordering::Relaxed),
        }
    }
}
