//! SQL text into statements, with no store and no session: splitting and parsing scripts
//! ([`parse`]), the token passes that make rowdex's extensions parse ([`tokens`]), rowdex's own
//! commands ([`command`]), names as the catalog spells them ([`names`]), every rule that reads
//! a literal ([`literals`]), optimizer hints ([`hints`]), PostgreSQL's storage parameters
//! ([`storage`]), whose rules a session follows where SQLite and PostgreSQL differ
//! ([`semantics`]), the result column names PostgreSQL gives ([`output_names`]) and the integer
//! widths it keeps in arithmetic ([`integer_types`]), and parameter
//! types from casts ([`parameter_casts`]), statements normalized as `pg_stat_statements` shows
//! them ([`normalize`]), and the rewrites applied before
//! DataFusion plans a statement ([`rewrite`], and [`sqlite_types`] for SQLite's typing).

pub(crate) mod array_lists;
pub(crate) mod array_literals;
pub(crate) mod at_time_zone;
pub(crate) mod bytea_literals;
pub(crate) mod command;
pub(crate) mod family_options;
pub(crate) mod hints;
pub(crate) mod integer_types;
pub(crate) mod interval_products;
pub(crate) mod literals;
pub(crate) mod locking;
pub(crate) mod names;
pub(crate) mod normalize;
pub(crate) mod output_names;
pub(crate) mod parameter_casts;
pub(crate) mod parse;
pub(crate) mod rewrite;
pub(crate) mod semantics;
pub(crate) mod split_on;
pub(crate) mod sqlite_types;
pub(crate) mod storage;
pub(crate) mod tokens;
pub(crate) mod type_casts;
