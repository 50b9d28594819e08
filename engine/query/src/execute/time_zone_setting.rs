//! `SET TIME ZONE zone`, `SET timezone = zone` (`TO`, `LOCAL`, `DEFAULT`) and `SHOW TIME ZONE`
//! / `SHOW timezone` for a session of the library and the REPL (`rowdex serve` answers its
//! clients' SET and SHOW itself, and hands the zone to the session the same way).

use datafusion::sql::sqlparser::ast::{Expr, Ident, ObjectName, Set, Value};

use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::object_name;
use crate::time_zone::TimeZone;

/// Runs `set`, which must set the time zone (rowdex keeps no other parameter).
pub(crate) fn set_time_zone(session: &Session, set: &Set) -> Result<Output> {
    time_zone_set(session, set).unwrap_or_else(|| {
        Err(Error::Unsupported {
            what: format!("the statement {set} (only SET TIME ZONE)"),
        })
    })
}

/// `SHOW TIME ZONE` / `SHOW timezone` (rowdex keeps no other parameter).
pub(crate) fn show(session: &Session, variable: &[Ident]) -> Result<Output> {
    show_time_zone(session, variable).ok_or_else(|| Error::Unsupported {
        what: "SHOW of a parameter other than TimeZone".to_string(),
    })
}

/// Runs `set` when it sets the time zone; None for any other SET.
fn time_zone_set(session: &Session, set: &Set) -> Option<Result<Output>> {
    let value = match set {
        Set::SetTimeZone { value, .. } => value,
        Set::SingleAssignment {
            variable, values, ..
        } if names_time_zone(variable) => match values.as_slice() {
            [value] => value,
            _ => {
                return Some(Err(Error::UnknownTimeZone {
                    value: set.to_string(),
                }));
            }
        },
        _ => return None,
    };
    let text = setting_text(value);
    let zone = if text.eq_ignore_ascii_case("local") || text.eq_ignore_ascii_case("default") {
        Some(TimeZone::utc())
    } else {
        TimeZone::named(&text)
    };
    Some(match zone {
        Some(zone) => {
            session.set_time_zone(zone);
            Ok(Output::Done)
        }
        None => Err(Error::UnknownTimeZone { value: text }),
    })
}

/// `SHOW TIME ZONE` / `SHOW timezone`: the zone's name; None for another SHOW.
fn show_time_zone(session: &Session, variable: &[Ident]) -> Option<Output> {
    let words: Vec<String> = variable
        .iter()
        .map(|word| word.value.to_lowercase())
        .collect();
    let asked = matches!(
        words
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["timezone"] | ["time", "zone"]
    );
    asked.then(|| Output::text_rows("TimeZone", vec![session.time_zone().name()]))
}

fn names_time_zone(variable: &ObjectName) -> bool {
    object_name(variable).is_ok_and(|name| name.eq_ignore_ascii_case("timezone"))
}

/// The text a SET value spells: a quoted string, a number (`-5`), or a bare word.
pub(crate) fn setting_text(value: &Expr) -> String {
    match value {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => text.clone(),
            Value::Number(number, _) => number.clone(),
            other => other.to_string(),
        },
        Expr::UnaryOp { op, expr } => format!("{op}{}", setting_text(expr)),
        Expr::Identifier(ident) => ident.value.clone(),
        other => other.to_string(),
    }
}
