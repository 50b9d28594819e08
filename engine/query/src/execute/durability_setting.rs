//! `SET synchronous_commit` and `SET durability` (and their SHOW) for a session of the library
//! and the REPL: the durability every commit of the session asks for (see
//! `db::commit_durability`). `rowdex serve` answers its clients' SET and SHOW itself, and
//! hands the value to the session through [`durability_parameter`] the same way.
//!
//! `synchronous_commit = off` asks for ASYNC_WAL, as PostgreSQL's `off` (a commit returns
//! before its WAL is flushed; a crash may lose the last commits, never half of one); `on`,
//! `local`, `remote_write` and `remote_apply` leave it to the tables written. `durability`
//! takes HBase's names (`SKIP_WAL`, `ASYNC_WAL`, `SYNC_WAL`, `FSYNC_WAL`; `USE_DEFAULT` leaves
//! it to the tables).

use datafusion::sql::sqlparser::ast::{Ident, Set};
use rowdex_store::Durability;

use crate::error::{Error, Result};
use crate::execute::time_zone_setting;
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::object_name;

/// The session durability `name = value` sets: None when `name` is neither parameter,
/// `Some(Ok(None))` for "as the tables ask", an error in PostgreSQL's words for a bad value.
pub fn durability_parameter(
    name: &str,
    value: &str,
) -> Option<std::result::Result<Option<Durability>, String>> {
    let invalid = || format!("invalid value for parameter \"{name}\": \"{value}\"");
    let lower = value.to_ascii_lowercase();
    if name.eq_ignore_ascii_case("synchronous_commit") {
        return Some(match lower.as_str() {
            "off" | "false" | "no" | "0" => Ok(Some(Durability::AsyncWal)),
            "on" | "true" | "yes" | "1" | "local" | "remote_write" | "remote_apply" => Ok(None),
            _ => Err(invalid()),
        });
    }
    if name.eq_ignore_ascii_case("durability") {
        return Some(match lower.as_str() {
            "use_default" | "default" => Ok(None),
            _ => Durability::from_name(value).map(Some).ok_or_else(invalid),
        });
    }
    None
}

/// What `SHOW name` answers for a session whose commits ask for `durability`: None when
/// `name` is neither parameter.
pub fn show_durability_parameter(name: &str, durability: Option<Durability>) -> Option<String> {
    if name.eq_ignore_ascii_case("synchronous_commit") {
        let off = durability.is_some_and(|d| d < Durability::SyncWal);
        return Some(if off { "off" } else { "on" }.to_string());
    }
    if name.eq_ignore_ascii_case("durability") {
        return Some(
            durability
                .map_or("USE_DEFAULT", Durability::name)
                .to_string(),
        );
    }
    None
}

/// Runs a SET: of a durability parameter here, of the time zone in `time_zone_setting`.
pub(crate) fn set(session: &Session, set: &Set) -> Result<Output> {
    if let Set::SingleAssignment {
        variable, values, ..
    } = set
        && let Ok(name) = object_name(variable)
        && let [value] = values.as_slice()
    {
        let text = time_zone_setting::setting_text(value);
        if let Some(chosen) = durability_parameter(&name, &text) {
            let chosen = chosen.map_err(|message| Error::BadParameterValue { message })?;
            session.set_durability(chosen);
            return Ok(Output::Done);
        }
    }
    time_zone_setting::set_time_zone(session, set)
}

/// Runs a SHOW: of a durability parameter here, of the time zone in `time_zone_setting`.
pub(crate) fn show(session: &Session, variable: &[Ident]) -> Result<Output> {
    if let [word] = variable
        && let Some(value) = show_durability_parameter(&word.value, session.durability())
    {
        return Ok(Output::text_rows(&word.value.to_lowercase(), vec![value]));
    }
    time_zone_setting::show(session, variable)
}
