//! rowdex-planner: turns the predicates of a query on one table into an access path.
//!
//! Pure and synchronous: no I/O and no DataFusion. The query crate translates DataFusion filter
//! expressions into [`Predicate`]s, asks [`candidates`] for the plans worth considering (the
//! primary-key path, index scans, index intersections), counts the entries of each candidate's
//! [`ScanPlan::probes`] ("index dives"), and lets [`choose`] pick by cost. The plan's `Display`
//! is the EXPLAIN text, shared by every executor.

mod candidates;
mod choose;
pub mod cost;
mod path;
mod predicate;

pub use candidates::{IndexHint, ScanRequest, candidates, ordered_index_scan};
pub use choose::plan_scan;
pub use cost::{Count, choose};
pub use path::{AccessPath, Estimate, IndexInput, KeyBound, ScanPlan};
pub use predicate::{CmpOp, Predicate, like_matches};
pub use rowdex_store::Direction;
