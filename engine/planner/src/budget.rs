//! The memory one operator of one query may hold: sorts without a LIMIT, intersection inputs
//! buffered out of primary-key order. One budget, set here, read by the cost model (which
//! costs out plans that would pass it) and by the executors (which change course when an
//! estimate was wrong and the budget runs out at run time).

/// Bytes one sort or one set of buffered intersection inputs may hold, by default (an embedder
/// sets its own with `Database::set_memory_budget`; the cost model keeps this figure).
pub const MEMORY_BUDGET_BYTES: usize = 64 << 20;

/// The memory pool of a session's DataFusion operators together: sorts and aggregations spill
/// to disk when it is full; an operator that cannot spill (a hash join's build side) fails the
/// query with "Resources exhausted" rather than taking the machine's memory.
pub const DATAFUSION_POOL_BYTES: usize = 1 << 30;

/// Memory a held primary key takes beyond its bytes: the `Vec` header and the allocator's
/// rounding.
pub const HELD_KEY_OVERHEAD: usize = 40;

/// Memory a held decoded row takes per column (a `Datum` and its share of the row's `Vec`),
/// beyond the bytes of its text and blob values.
pub const HELD_CELL_BYTES: usize = 40;

/// Primary keys of about 16 bytes the budget holds: the most entries an intersection input
/// out of primary-key order is planned to buffer.
pub const BUFFERED_KEYS_MAX: f64 = (MEMORY_BUDGET_BYTES / (16 + HELD_KEY_OVERHEAD)) as f64;

/// Rows of `columns` columns that `budget` bytes hold, for a sort without a LIMIT.
pub fn held_rows_max(budget: usize, columns: usize) -> f64 {
    (budget / (HELD_CELL_BYTES * columns.max(1) + 24)) as f64
}
