//! rowdex-planner: turns the predicates of a query on one table into an access path.
//!
//! Pure and synchronous: no I/O and no DataFusion. The query crate translates DataFusion filter
//! expressions into [`Predicate`]s, asks [`plan_scan`] for a [`ScanPlan`], and executes its key
//! ranges. The plan's `Display` is the EXPLAIN text, shared by every executor.

mod choose;
mod path;
mod predicate;

pub use choose::plan_scan;
pub use path::{AccessPath, KeyBound, ScanPlan};
pub use predicate::{CmpOp, Predicate};
pub use rowdex_store::Direction;
