//! Everything rowdex plugs into DataFusion: the session context and the schema provider
//! ([`context`]), each table's provider ([`table`]) with its scan node ([`scan_exec`]), the
//! translation of pushed filters ([`filters`]) and the INSERT sink ([`sink`]), the history
//! table functions ([`history`]), PostgreSQL's result types where DataFusion's differ
//! ([`postgres_types`]), SQLite's `RAISE` for triggers ([`raise`]), the Apply node that runs the subqueries DataFusion cannot
//! plan ([`apply`]), and the optimizer rules that work around DataFusion 55 ([`rules`]).

pub(crate) mod apply;
pub(crate) mod context;
pub(crate) mod filters;
pub(crate) mod history;
pub(crate) mod lookup_join;
pub(crate) mod postgres_types;
pub(crate) mod raise;
pub(crate) mod rules;
pub(crate) mod scan_exec;
pub(crate) mod sink;
pub(crate) mod table;
