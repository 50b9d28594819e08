//! SQL text into statements, with no store and no session: splitting and parsing scripts
//! ([`parse`]), the token passes that make rowdex's extensions parse ([`tokens`]), rowdex's own
//! commands ([`command`]), names as the catalog spells them ([`names`]), every rule that reads
//! a literal ([`literals`]), optimizer hints ([`hints`]) and the rewrites applied before
//! DataFusion plans a statement ([`rewrite`], and [`sqlite_types`] for SQLite's typing).

pub(crate) mod command;
pub(crate) mod hints;
pub(crate) mod literals;
pub(crate) mod names;
pub(crate) mod parse;
pub(crate) mod rewrite;
pub(crate) mod sqlite_types;
pub(crate) mod tokens;
