//! JSON text as PostgreSQL's `json` and `jsonb` types read it.
//!
//! [`parse_json`] reads text by RFC 8259, as PostgreSQL's JSON parser does (blanks around
//! tokens, no comments, no trailing commas, `\uXXXX` escapes with surrogate pairs), into a tree
//! of [`JsonNode`]s that keep the text each value was written as: a `json` value is stored as
//! its text unchanged, and its operators give back the text of the part they select.
//!
//! [`Jsonb`] (`json::jsonb`) is the normalised value a `jsonb` column stores, as its text.

mod error;
mod jsonb;
mod number;
mod parse;
mod sort_key;
mod string;

pub use error::{JsonError, MAX_JSON_DEPTH};
pub use jsonb::Jsonb;
pub use number::{canonical_number, compare_numbers};
pub use parse::{JsonNode, Spanned, parse_json, resolve_index};
pub use sort_key::sort_key;
pub use string::write_json_string;
