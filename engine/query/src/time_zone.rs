//! [`TimeZone`]: a session's time zone (PostgreSQL's `TimeZone` parameter), which reads a
//! TIMESTAMPTZ written without an offset and writes every TIMESTAMPTZ out.
//!
//! A TIMESTAMPTZ is an instant: microseconds since 1970-01-01 UTC, stored as a TIMESTAMP is.
//! The zone matters only at the edges, as in PostgreSQL: `'2024-03-10 09:00'` read in
//! `Europe/Berlin` is 08:00 UTC, and 08:00 UTC is written `2024-03-10 09:00:00+01` there.
//! Zones are the IANA database's (chrono-tz, which Arrow's own time zone support builds),
//! named in any case, or a fixed number of hours east of UTC (`SET TIME ZONE -5`).

use chrono::{DateTime, LocalResult, Offset, TimeZone as _};
use chrono_tz::{OffsetName, TZ_VARIANTS, Tz};
use rowdex_codec::{format_timestamp, parse_timestamp};

const MICROS_PER_SECOND: i64 = 1_000_000;

/// The zone a TIMESTAMPTZ column's Arrow type carries: its values are UTC instants. A query's
/// result is given the session's zone (`df::rules::time_zones`), which reads and writes them.
pub const STORED_TIME_ZONE: &str = "+00:00";

tokio::task_local! {
    /// The zone of the session whose statement the task runs: what `values::assign` reads
    /// text without an offset in. A statement's entry points ([`in_time_zone`]) set it; work
    /// outside one reads UTC.
    static STATEMENT_TIME_ZONE: TimeZone;
}

/// Runs `work` (a statement) with `zone` as the zone TIMESTAMPTZ text is read in.
pub(crate) async fn in_time_zone<F: std::future::Future>(zone: TimeZone, work: F) -> F::Output {
    STATEMENT_TIME_ZONE.scope(zone, work).await
}

/// The zone of the statement this task runs (UTC outside one).
pub(crate) fn statement_time_zone() -> TimeZone {
    STATEMENT_TIME_ZONE
        .try_with(TimeZone::clone)
        .unwrap_or_default()
}

/// The zone a session reads and writes TIMESTAMPTZ values in.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeZone {
    zone: Zone,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Zone {
    /// A zone of the IANA database (`UTC`, `Europe/Berlin`, `Asia/Kolkata`).
    Named(Tz),
    /// A fixed offset, in seconds east of UTC.
    Fixed(i32),
}

impl Default for TimeZone {
    fn default() -> Self {
        TimeZone::utc()
    }
}

impl TimeZone {
    pub fn utc() -> Self {
        TimeZone {
            zone: Zone::Named(Tz::UTC),
        }
    }

    /// The zone a `SET TIME ZONE` / `SET TimeZone` value names: an IANA zone name in any
    /// case (`utc`, `Europe/Berlin`), or a whole or fractional number of hours east of UTC
    /// (`-5`, `5.5`), which PostgreSQL takes as a fixed offset. None for anything else.
    pub fn named(setting: &str) -> Option<TimeZone> {
        let setting = setting.trim();
        if let Ok(hours) = setting.parse::<f64>() {
            let seconds = (hours * 3600.0).round();
            return (seconds.abs() <= 15.0 * 3600.0).then_some(TimeZone {
                zone: Zone::Fixed(seconds as i32),
            });
        }
        named_zone(setting).map(|zone| TimeZone {
            zone: Zone::Named(zone),
        })
    }

    /// Whether this is UTC (or a zone always at UTC's offset).
    pub fn is_utc(&self) -> bool {
        match self.zone {
            Zone::Fixed(seconds) => seconds == 0,
            Zone::Named(zone) => matches!(
                zone,
                Tz::UTC
                    | Tz::Etc__UTC
                    | Tz::GMT
                    | Tz::Etc__GMT
                    | Tz::Zulu
                    | Tz::Etc__Zulu
                    | Tz::UCT
                    | Tz::Etc__UCT
                    | Tz::Universal
                    | Tz::Etc__Universal
            ),
        }
    }

    /// The zone an Arrow type names (`+05:00`, `-0330`, `Europe/Berlin`).
    pub fn of_arrow(name: &str) -> Option<TimeZone> {
        let zone = match zone_suffix(name.trim())? {
            // `+00:00` is how a plan types an instant: UTC's.
            ZoneSuffix::Offset(0) => Zone::Named(Tz::UTC),
            ZoneSuffix::Offset(seconds) => Zone::Fixed(seconds),
            ZoneSuffix::Named(zone) => Zone::Named(zone),
        };
        Some(TimeZone { zone })
    }

    /// The zone's name as `SHOW TimeZone` prints it (PostgreSQL's `<+05>-05` for a fixed
    /// offset of five hours east).
    pub fn name(&self) -> String {
        match self.zone {
            Zone::Named(zone) => zone.name().to_string(),
            Zone::Fixed(seconds) => {
                format!("<{}>{}", offset_text(seconds), offset_text(-seconds))
            }
        }
    }

    /// The zone as Arrow and DataFusion name one (an IANA name, or `+05:00`): the time zone a
    /// timestamp of this session's zone carries in its Arrow type.
    pub fn arrow_name(&self) -> String {
        match self.zone {
            Zone::Named(zone) => zone.name().to_string(),
            Zone::Fixed(seconds) => {
                let sign = if seconds < 0 { '-' } else { '+' };
                let seconds = seconds.unsigned_abs();
                format!("{sign}{:02}:{:02}", seconds / 3600, seconds / 60 % 60)
            }
        }
    }

    /// Seconds east of UTC the zone's clocks show at the instant `utc_micros`.
    pub fn offset_at(&self, utc_micros: i64) -> i32 {
        match self.zone {
            Zone::Fixed(seconds) => seconds,
            Zone::Named(zone) => match DateTime::from_timestamp_micros(utc_micros) {
                Some(instant) => zone
                    .offset_from_utc_datetime(&instant.naive_utc())
                    .fix()
                    .local_minus_utc(),
                None => 0,
            },
        }
    }

    /// The abbreviation the zone goes by at the instant `utc_micros` (`CET`, `CEST`, `UTC`;
    /// a fixed offset's is the offset, `+05`), as `to_char`'s `TZ` writes it.
    pub fn abbreviation_at(&self, utc_micros: i64) -> String {
        match self.zone {
            Zone::Fixed(seconds) => offset_text(seconds),
            Zone::Named(zone) => DateTime::from_timestamp_micros(utc_micros)
                .and_then(|instant| {
                    zone.offset_from_utc_datetime(&instant.naive_utc())
                        .abbreviation()
                        .map(str::to_string)
                })
                .unwrap_or_else(|| offset_text(self.offset_at(utc_micros))),
        }
    }

    /// The instant at which the zone's clocks show `local_micros` (a wall-clock time as
    /// microseconds since 1970-01-01). As PostgreSQL has it, a time the clocks skip (a jump
    /// forward) is read with the offset before the jump, and a time they show twice (a jump
    /// back) as the later of the two instants.
    pub fn utc_of_local(&self, local_micros: i64) -> Option<i64> {
        let zone = match self.zone {
            Zone::Fixed(seconds) => {
                return local_micros.checked_sub(i64::from(seconds) * MICROS_PER_SECOND);
            }
            Zone::Named(zone) => zone,
        };
        let local = DateTime::from_timestamp_micros(local_micros)?.naive_utc();
        let offset = match zone.from_local_datetime(&local) {
            LocalResult::Single(at) => at.offset().fix().local_minus_utc(),
            LocalResult::Ambiguous(_, later) => later.offset().fix().local_minus_utc(),
            LocalResult::None => {
                let before = local - chrono::Duration::days(1);
                zone.offset_from_utc_datetime(&before)
                    .fix()
                    .local_minus_utc()
            }
        };
        local_micros.checked_sub(i64::from(offset) * MICROS_PER_SECOND)
    }

    /// Reads a TIMESTAMPTZ as PostgreSQL does: `2024-03-10 09:00[:00[.ffffff]]` with an
    /// optional `T`, then an optional zone: `Z`, `UTC`, `+02`, `+0530`, `+05:30`,
    /// `-03:00:00`, or a zone name (`Europe/Berlin`); without one, the text is a time of this
    /// zone. A date alone is its midnight. None if the text is none of these.
    pub fn parse_timestamptz(&self, text: &str) -> Option<i64> {
        let (local, zone) = split_zone(text.trim());
        let local_micros = parse_timestamp(local)?;
        match zone {
            None => self.utc_of_local(local_micros),
            Some(zone) => match zone_suffix(zone)? {
                ZoneSuffix::Offset(seconds) => {
                    local_micros.checked_sub(i64::from(seconds) * MICROS_PER_SECOND)
                }
                ZoneSuffix::Named(zone) => TimeZone {
                    zone: Zone::Named(zone),
                }
                .utc_of_local(local_micros),
            },
        }
    }

    /// The instant `utc_micros` as PostgreSQL writes a TIMESTAMPTZ in this zone:
    /// `2024-03-10 09:00:00+01`, the fraction without trailing zeros, the offset's minutes
    /// (and seconds) only where it has them.
    pub fn format_timestamptz(&self, utc_micros: i64) -> String {
        let offset = self.offset_at(utc_micros);
        let local = utc_micros.saturating_add(i64::from(offset) * MICROS_PER_SECOND);
        let mut text = postgres_timestamp(local);
        text.push_str(&offset_text(offset));
        text
    }
}

/// A wall-clock time as PostgreSQL writes a TIMESTAMP: `2024-01-01 10:31:00`, the fraction of
/// a second only where there is one and without its trailing zeros (`10:31:00.25`).
pub fn postgres_timestamp(micros: i64) -> String {
    let mut text = format_timestamp(micros);
    if let Some(point) = text.rfind('.')
        && text[point + 1..].chars().all(|c| c.is_ascii_digit())
    {
        let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(trimmed.max(point));
    }
    text
}

/// An offset as PostgreSQL writes one after a time: `+00`, `-08`, `+05:30`, `+00:09:21`.
pub fn offset_text(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let seconds = seconds.unsigned_abs();
    let (hours, minutes, rest) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    match (minutes, rest) {
        (0, 0) => format!("{sign}{hours:02}"),
        (_, 0) => format!("{sign}{hours:02}:{minutes:02}"),
        _ => format!("{sign}{hours:02}:{minutes:02}:{rest:02}"),
    }
}

/// The IANA zone `name` names, in any case.
fn named_zone(name: &str) -> Option<Tz> {
    if let Ok(zone) = name.parse::<Tz>() {
        return Some(zone);
    }
    TZ_VARIANTS
        .iter()
        .find(|zone| zone.name().eq_ignore_ascii_case(name))
        .copied()
}

/// `text` split into its date and time, and the zone written after them (if any).
fn split_zone(text: &str) -> (&str, Option<&str>) {
    // The zone starts after the time: at a sign, a `Z` or a letter once the date (which has
    // signs of its own) and its separator are behind.
    let Some(separator) = text.find([' ', 'T']) else {
        return (text, None);
    };
    let time = &text[separator + 1..];
    match time.find(|c: char| c == '+' || c == '-' || c.is_ascii_alphabetic()) {
        Some(at) => {
            let local = text[..separator + 1 + at].trim_end();
            (local, Some(time[at..].trim()))
        }
        None => (text, None),
    }
}

/// What a zone written after a time says.
enum ZoneSuffix {
    /// Seconds east of UTC.
    Offset(i32),
    Named(Tz),
}

/// Reads the zone written after a time: `Z`, an offset (`+02`, `+0530`, `+05:30`,
/// `+05:30:15`), or a zone name.
fn zone_suffix(zone: &str) -> Option<ZoneSuffix> {
    if zone.eq_ignore_ascii_case("z") {
        return Some(ZoneSuffix::Offset(0));
    }
    let Some(sign) = zone.chars().next().filter(|c| *c == '+' || *c == '-') else {
        return named_zone(zone).map(ZoneSuffix::Named);
    };
    let digits = &zone[1..];
    let parts: Vec<&str> = if digits.contains(':') {
        digits.split(':').collect()
    } else {
        match digits.len() {
            1 | 2 => vec![digits],
            4 => vec![&digits[..2], &digits[2..]],
            6 => vec![&digits[..2], &digits[2..4], &digits[4..]],
            _ => return None,
        }
    };
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut seconds = 0i32;
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: i32 = part.parse().ok()?;
        let (limit, unit) = [(15, 3600), (59, 60), (59, 1)][i];
        if value > limit {
            return None;
        }
        seconds += value * unit;
    }
    Some(ZoneSuffix::Offset(if sign == '-' {
        -seconds
    } else {
        seconds
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn zone(name: &str) -> TimeZone {
        TimeZone::named(name).unwrap_or_else(|| panic!("{name} is a zone"))
    }

    fn at(text: &str) -> i64 {
        parse_timestamp(text).unwrap_or_else(|| panic!("{text} is a timestamp"))
    }

    #[test]
    fn offsets_and_names_read_as_postgresql_does() {
        let utc = TimeZone::utc();
        let ten_utc = at("2024-01-15 10:00:00");
        for text in [
            "2024-01-15 10:00:00",
            "2024-01-15 10:00:00Z",
            "2024-01-15T12:00:00+02",
            "2024-01-15 12:00:00+02:00",
            "2024-01-15 15:30:00 +0530",
            "2024-01-15 05:00:00-05",
            "2024-01-15 11:00:00 Europe/Berlin",
            "2024-01-15 11:00:00 europe/berlin",
            "2024-01-15 10:00:00 UTC",
        ] {
            assert_eq!(utc.parse_timestamptz(text), Some(ten_utc), "{text}");
        }
        let berlin = zone("Europe/Berlin");
        assert_eq!(
            berlin.parse_timestamptz("2024-01-15 11:00:00"),
            Some(ten_utc)
        );
        assert_eq!(
            berlin.parse_timestamptz("2024-01-15"),
            Some(at("2024-01-14 23:00:00"))
        );
        for bad in [
            "2024-01-15 10:00:00+16",
            "2024-01-15 10:00 Mars/Olympus",
            "soon",
        ] {
            assert_eq!(utc.parse_timestamptz(bad), None, "{bad}");
        }
    }

    #[test]
    fn written_in_the_zone_with_its_offset() {
        let instant = at("2024-07-01 08:00:00") + 250_000;
        assert_eq!(
            TimeZone::utc().format_timestamptz(instant),
            "2024-07-01 08:00:00.25+00"
        );
        assert_eq!(
            zone("Europe/Berlin").format_timestamptz(instant),
            "2024-07-01 10:00:00.25+02"
        );
        assert_eq!(
            zone("Asia/Kolkata").format_timestamptz(instant),
            "2024-07-01 13:30:00.25+05:30"
        );
        assert_eq!(
            zone("America/Los_Angeles").format_timestamptz(instant),
            "2024-07-01 01:00:00.25-07"
        );
        assert_eq!(
            zone("-5").format_timestamptz(instant),
            "2024-07-01 03:00:00.25-05"
        );
    }

    #[test]
    fn skipped_and_repeated_times_follow_postgresql() {
        let berlin = zone("Europe/Berlin");
        // 02:30 on 2024-03-31 does not exist in Berlin: read with the offset before (+01).
        assert_eq!(
            berlin.parse_timestamptz("2024-03-31 02:30:00"),
            Some(at("2024-03-31 01:30:00"))
        );
        // 02:30 on 2024-10-27 happens twice: the later (+01) is meant.
        assert_eq!(
            berlin.parse_timestamptz("2024-10-27 02:30:00"),
            Some(at("2024-10-27 01:30:00"))
        );
    }

    #[test]
    fn settings_name_zones_as_show_prints_them() {
        assert_eq!(zone("utc").name(), "UTC");
        assert_eq!(zone("america/new_york").name(), "America/New_York");
        assert_eq!(zone("5").name(), "<+05>-05");
        assert_eq!(zone("-5").name(), "<-05>+05");
        assert_eq!(zone("-3.5").arrow_name(), "-03:30");
        assert!(TimeZone::named("Nowhere/Special").is_none());
    }

    proptest! {
        /// What a zone writes, it reads back as the same instant.
        #[test]
        fn written_text_reads_back(
            micros in -60_000_000_000_000_000i64..60_000_000_000_000_000i64,
            which in 0usize..4,
        ) {
            let zone = zone(["UTC", "Europe/Berlin", "Asia/Kolkata", "America/Sao_Paulo"][which]);
            let text = zone.format_timestamptz(micros);
            prop_assert_eq!(TimeZone::utc().parse_timestamptz(&text), Some(micros), "{}", text);
        }
    }
}
