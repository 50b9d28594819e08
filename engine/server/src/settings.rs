//! The session parameters a PostgreSQL client reads and sets (client_encoding, DateStyle,
//! TimeZone, extra_float_digits, application_name, ...): reported at startup, changed by `SET`,
//! read by `SHOW`. rowdex answers them in the server; none changes how rowdex itself runs, but
//! drivers send them at connect and refuse a server that rejects them.

use std::collections::BTreeMap;
use std::time::Duration;

/// The version reported to clients: PostgreSQL 15's protocol and catalog queries (psql 15
/// picks its queries by it), and rowdex's own version after it.
pub const SERVER_VERSION: &str = concat!("15.0 (rowdex ", env!("CARGO_PKG_VERSION"), ")");

/// Parameters and their values at the start of a session. Names are kept in PostgreSQL's
/// spelling for ParameterStatus; lookups ignore case.
pub fn defaults() -> Vec<(&'static str, String)> {
    vec![
        ("server_version", SERVER_VERSION.to_string()),
        ("server_encoding", "UTF8".to_string()),
        ("client_encoding", "UTF8".to_string()),
        ("DateStyle", "ISO, MDY".to_string()),
        ("TimeZone", "UTC".to_string()),
        ("IntervalStyle", "postgres".to_string()),
        ("integer_datetimes", "on".to_string()),
        ("standard_conforming_strings", "on".to_string()),
        ("is_superuser", "on".to_string()),
        ("application_name", String::new()),
        ("extra_float_digits", "1".to_string()),
        ("search_path", "public".to_string()),
        ("transaction_isolation", "read committed".to_string()),
        (
            "default_transaction_isolation",
            "read committed".to_string(),
        ),
        ("max_identifier_length", "63".to_string()),
        ("default_transaction_read_only", "off".to_string()),
        ("transaction_read_only", "off".to_string()),
        ("default_transaction_deferrable", "off".to_string()),
        ("transaction_deferrable", "off".to_string()),
        ("in_hot_standby", "off".to_string()),
        ("lock_timeout", "0".to_string()),
        ("statement_timeout", "0".to_string()),
        ("log_min_duration_statement", "-1".to_string()),
        // `off` makes the session's commits ASYNC_WAL; rowdex's own `durability` takes
        // HBase's names (see `rowdex::durability_parameter`).
        ("synchronous_commit", "on".to_string()),
        ("durability", "USE_DEFAULT".to_string()),
        // rowdex compiles no query code: like a PostgreSQL built without LLVM, it accepts the
        // setting and has nothing to turn on (asyncpg turns it off around its introspection).
        ("jit", "off".to_string()),
    ]
}

/// One session's parameters.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Lower-cased name -> (name as first spelled, value).
    values: BTreeMap<String, (String, String)>,
}

impl Default for Settings {
    fn default() -> Self {
        let values = defaults()
            .into_iter()
            .map(|(name, value)| (name.to_lowercase(), (name.to_string(), value)))
            .collect();
        Settings { values }
    }
}

impl Settings {
    /// Whether `name` (any case) is a parameter `SHOW` answers.
    pub fn knows(&self, name: &str) -> bool {
        name.eq_ignore_ascii_case("all") || self.values.contains_key(&name.to_lowercase())
    }

    /// `SHOW name`: (column name, rows of values).
    pub fn show(&self, name: &str) -> Option<(String, Vec<String>)> {
        self.values
            .get(&name.to_lowercase())
            .map(|(spelled, value)| (spelled.clone(), vec![value.clone()]))
    }

    /// Sets a parameter this session knows (no-op for others).
    pub fn set(&mut self, name: &str, value: String) {
        if let Some((_, current)) = self.values.get_mut(&name.to_lowercase()) {
            *current = value;
        }
    }

    /// Every parameter as `name = value` lines (`SHOW ALL`).
    pub fn all(&self) -> Vec<String> {
        self.values
            .values()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect()
    }

    /// Takes a startup parameter's value for a parameter this session knows (others, such as
    /// `user` and `database`, are not settings).
    pub fn adopt(&mut self, name: &str, value: &str) {
        let fixed = [
            "server_version",
            "server_encoding",
            "integer_datetimes",
            "is_superuser",
            "in_hot_standby",
            "max_identifier_length",
        ];
        if fixed.iter().any(|f| f.eq_ignore_ascii_case(name)) {
            return;
        }
        if let Some((_, current)) = self.values.get_mut(&name.to_lowercase()) {
            *current = value.to_string();
        }
    }

    /// Sets `name` to `value` (a parameter SET named, known or not); returns the name as the
    /// session spells it.
    pub fn assign(&mut self, name: &str, value: &str) -> String {
        let key = name.to_lowercase();
        let spelled = self
            .values
            .get(&key)
            .map_or_else(|| name.to_string(), |(spelled, _)| spelled.clone());
        self.values
            .insert(key, (spelled.clone(), value.to_string()));
        spelled
    }
}

/// A time parameter's value as PostgreSQL reads it (`lock_timeout`, `statement_timeout`): a whole number of
/// milliseconds, or a number with a unit (`us`, `ms`, `s`, `min`, `h`, `d`); zero is no
/// limit (None).
pub fn milliseconds_setting(name: &str, value: &str) -> Result<Option<Duration>, String> {
    let text = value.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let micros_per_unit: f64 = match unit.trim() {
        "" | "ms" => 1_000.0,
        "us" => 1.0,
        "s" => 1_000_000.0,
        "min" => 60_000_000.0,
        "h" => 3_600_000_000.0,
        "d" => 86_400_000_000.0,
        _ => {
            return Err(format!(
                "invalid value for parameter \"{name}\": \"{value}\" (valid units for this \
                 parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\")"
            ));
        }
    };
    let amount: f64 = number
        .parse()
        .map_err(|_| format!("invalid value for parameter \"{name}\": \"{value}\""))?;
    let micros = (amount * micros_per_unit).round();
    // PostgreSQL's limit for these parameters: INT_MAX milliseconds.
    if !(0.0..=f64::from(i32::MAX) * 1_000.0).contains(&micros) {
        return Err(format!(
            "{value} is outside the valid range for parameter \"{name}\" (0 .. {})",
            i32::MAX
        ));
    }
    let duration = Duration::from_micros(micros as u64);
    Ok((!duration.is_zero()).then_some(duration))
}

/// `log_min_duration_statement`'s value: -1 logs no statement (None), 0 every one, else those
/// that run at least that long (milliseconds, or with a unit).
pub fn log_duration_setting(name: &str, value: &str) -> Result<Option<Duration>, String> {
    if value.trim() == "-1" {
        return Ok(None);
    }
    Ok(Some(
        milliseconds_setting(name, value)?.unwrap_or(Duration::ZERO),
    ))
}

/// The parameter and value of a SET statement's text (`SET [SESSION | LOCAL] name {= | TO}
/// value`, `SET TIME ZONE value`), or a message saying what is wrong.
pub fn parse_set(sql: &str) -> Result<(String, String), String> {
    let text = sql.trim().trim_end_matches(';').trim();
    let rest = strip_word(text, "SET").ok_or("not a SET statement")?;
    let rest = strip_word(rest, "SESSION")
        .or_else(|| strip_word(rest, "LOCAL"))
        .unwrap_or(rest);
    if let Some(zone) = strip_word(rest, "TIME").and_then(|r| strip_word(r, "ZONE")) {
        return Ok(("TimeZone".to_string(), unquote(zone)));
    }
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '=')
        .unwrap_or(rest.len());
    let (name, tail) = rest.split_at(end);
    let tail = tail.trim_start();
    let value = tail
        .strip_prefix('=')
        .or_else(|| strip_word(tail, "TO"))
        .ok_or_else(|| format!("SET {name} needs = or TO and a value"))?;
    if name.is_empty() || value.trim().is_empty() {
        return Err("SET needs a parameter name and a value".to_string());
    }
    Ok((unquote(name), unquote(value)))
}

/// The parameters a RESET statement's text puts back and the value each starts a session with
/// (`RESET name`, `RESET TIME ZONE`, `RESET ALL`: every parameter a session may change), or a
/// message saying what is wrong.
pub fn parse_reset(sql: &str, starting: &Settings) -> Result<Vec<(String, String)>, String> {
    let text = sql.trim().trim_end_matches(';').trim();
    let rest = strip_word(text, "RESET").ok_or("not a RESET statement")?;
    let name = match strip_word(rest, "TIME").and_then(|r| strip_word(r, "ZONE")) {
        Some("") => "TimeZone".to_string(),
        _ => unquote(rest),
    };
    // What a session cannot SET, and the open transaction's own modes, stay as they are.
    let kept = [
        "server_version",
        "server_encoding",
        "integer_datetimes",
        "is_superuser",
        "in_hot_standby",
        "max_identifier_length",
        "transaction_isolation",
        "transaction_read_only",
        "transaction_deferrable",
    ];
    let resettable = starting
        .values
        .values()
        .filter(|(spelled, _)| !kept.iter().any(|k| k.eq_ignore_ascii_case(spelled)))
        .filter(|(spelled, _)| {
            name.eq_ignore_ascii_case("all") || spelled.eq_ignore_ascii_case(&name)
        })
        .cloned()
        .collect::<Vec<_>>();
    if resettable.is_empty() {
        return Err(format!("unrecognized configuration parameter \"{name}\""));
    }
    Ok(resettable)
}

/// `text` after its leading `word` (any case) and the whitespace following it.
pub fn strip_word<'a>(text: &'a str, word: &str) -> Option<&'a str> {
    let head = text.get(..word.len())?;
    let tail = &text[word.len()..];
    (head.eq_ignore_ascii_case(word) && (tail.is_empty() || tail.starts_with(char::is_whitespace)))
        .then(|| tail.trim_start())
}

/// A value as written, without its quotes (`'UTC'` -> `UTC`, `"a"` -> `a`, `ISO, MDY` as is).
fn unquote(value: &str) -> String {
    let value = value.trim();
    for quote in ['\'', '"'] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner.replace(&format!("{quote}{quote}"), &quote.to_string());
        }
    }
    value.to_string()
}

/// The parameters a startup `options` value sets: `-c name=value`, `-cname=value` and
/// `--name=value`, separated by spaces (a backslash keeps the next character, a space too).
pub fn startup_options(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut parameters = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let setting = if word == "-c" {
            words.next()
        } else {
            word.strip_prefix("--")
                .or_else(|| word.strip_prefix("-c"))
                .map(str::to_string)
        };
        if let Some((name, value)) = setting.as_deref().and_then(|s| s.split_once('=')) {
            parameters.push((name.replace('-', "_"), value.to_string()));
        }
    }
    parameters
}

/// The parameters a client's startup message sets, in order: each parameter it names (the
/// user and database aside) and those its `options` value sets.
pub fn startup_parameters<'a>(
    metadata: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Vec<(String, String)> {
    let mut parameters = Vec::new();
    for (name, value) in metadata {
        match name.as_str() {
            "options" => parameters.extend(startup_options(value)),
            "user" | "database" | "replication" => {}
            _ => parameters.push((name.clone(), value.clone())),
        }
    }
    parameters
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_options_set_parameters_as_libpq_sends_them() {
        assert_eq!(
            startup_options("-c TimeZone=Asia/Kolkata  -cstatement_timeout=5s --lock-timeout=1s"),
            vec![
                ("TimeZone".to_string(), "Asia/Kolkata".to_string()),
                ("statement_timeout".to_string(), "5s".to_string()),
                ("lock_timeout".to_string(), "1s".to_string()),
            ]
        );
        assert_eq!(
            startup_options(r"-c application_name=a\ b"),
            vec![("application_name".to_string(), "a b".to_string())]
        );
        assert!(startup_options("-x").is_empty());
    }

    #[test]
    fn reset_puts_back_the_starting_values() {
        let mut starting = Settings::default();
        starting.adopt("TimeZone", "Europe/Berlin");
        assert_eq!(
            parse_reset("RESET TIME ZONE", &starting),
            Ok(vec![("TimeZone".to_string(), "Europe/Berlin".to_string())])
        );
        assert_eq!(
            parse_reset("reset timezone;", &starting),
            Ok(vec![("TimeZone".to_string(), "Europe/Berlin".to_string())])
        );
        let all = parse_reset("RESET ALL", &starting).expect("RESET ALL");
        assert!(all.iter().any(|(name, _)| name == "statement_timeout"));
        assert!(!all.iter().any(|(name, _)| name == "server_version"));
        assert!(parse_reset("RESET nothing_such", &starting).is_err());
    }

    #[test]
    fn set_forms_drivers_send() {
        let mut settings = Settings::default();
        let mut apply = |sql: &str| {
            let (name, value) = parse_set(sql)?;
            Ok::<_, String>((settings.assign(&name, &value), value))
        };
        assert_eq!(
            apply("SET extra_float_digits = 3"),
            Ok(("extra_float_digits".into(), "3".into()))
        );
        assert_eq!(
            apply("set application_name to 'psql'"),
            Ok(("application_name".into(), "psql".into()))
        );
        assert_eq!(
            apply("SET SESSION TIME ZONE 'UTC'"),
            Ok(("TimeZone".into(), "UTC".into()))
        );
        assert_eq!(
            apply("SET datestyle = ISO, MDY;"),
            Ok(("DateStyle".into(), "ISO, MDY".into()))
        );
        assert!(apply("SET x").is_err());
        assert_eq!(
            settings.show("APPLICATION_NAME"),
            Some(("application_name".into(), vec!["psql".into()]))
        );
        assert!(settings.knows("timezone") && settings.knows("ALL") && !settings.knows("indexes"));
    }
}
