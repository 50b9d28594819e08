//! rowdex-planner: turns the predicates of a query on one table into an access path.
//!
//! Pure and synchronous: no I/O and no DataFusion. The query crate translates DataFusion filter
//! expressions into [`Predicate`]s, asks [`candidates`] for the plans worth considering (the
//! primary-key path, index scans, index intersections), counts the entries of each candidate's
//! [`ScanPlan::probes`] ("index dives"), and lets [`cheapest`] pick by cost. The plan's `Display`
//! (module `explain`) is the EXPLAIN text, shared by every executor.
//!
//! Modules, lowest first: `predicate` (the IR), `path` (plans as values and key ranges),
//! `explain` (their text), `primary_key` (the path along the table's key), `partial` (whether a partial index may answer), `union` (the unions
//! answering an OR), `candidates` (every path worth costing), `selectivity` (range sizes from gathered statistics), `cost` (estimates
//! and the choice), `lookup` (reading a table by a join's values: the templates its keys offer,
//! the plan of a batch of probes, their cost). `budget` is the memory budget both the cost model and the executors read.

pub mod budget;
mod candidates;
pub mod cost;
mod explain;
pub mod lookup;
mod partial;
mod path;
mod predicate;
mod primary_key;
mod selectivity;
mod union;

pub use candidates::{IndexHint, ScanRequest, candidates, ordered_index_scan};
pub use cost::{Count, by_cost, cheapest, cheapest_in_order, estimate_all, statistics_counts};
pub use path::{AccessPath, Estimate, IndexInput, KeyBound, KeySpan, ScanPlan, UnionArm};
pub use predicate::{CmpOp, Predicate, like_matches};
pub use primary_key::plan_scan;
pub use rowdex_store::Direction;
pub use selectivity::ProbeEstimate;
