//! Calendar arithmetic for DATE and TIMESTAMP values.
//!
//! Dates are days since 1970-01-01 and timestamps are microseconds since
//! 1970-01-01T00:00:00, both in the proleptic Gregorian calendar with no time
//! zone. The conversions use the closed-form "civil from days" arithmetic on
//! 400-year eras (146 097 days each) so that every representable value, far
//! before 1970 included, converts without tables or loops.

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;
const DAYS_PER_ERA: i64 = 146_097;
/// Days from 0000-03-01 (the origin of the March-based era arithmetic) to 1970-01-01.
const EPOCH_SHIFT: i64 = 719_468;

/// Days since 1970-01-01 of a valid civil date.
/// Days since 1970-01-01 of a (proleptic Gregorian) date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    // Counting years from March puts the leap day at the end of the year, so
    // the day-of-year formula needs no leap-year special case.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let march_month = i64::from((month + 9) % 12);
    let day_of_year = (153 * march_month + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * DAYS_PER_ERA + day_of_era - EPOCH_SHIFT
}

/// (year, month, day) of a count of days since 1970-01-01.
/// (year, month 1-12, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + EPOCH_SHIFT;
    let era = shifted.div_euclid(DAYS_PER_ERA);
    let day_of_era = shifted - era * DAYS_PER_ERA;
    // Subtracting the leap days already elapsed turns the era into 365-day years.
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    // Both are in range by construction (1..=31, 1..=12); the fallbacks are unreachable.
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// The days of `month` (1-12) of `year`.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Formats a date as `YYYY-MM-DD`; years before 1 BC get a leading `-`.
pub fn format_date(days: i32) -> String {
    let (year, month, day) = civil_from_days(i64::from(days));
    let sign = if year < 0 { "-" } else { "" };
    format!("{sign}{:04}-{month:02}-{day:02}", year.unsigned_abs())
}

/// Formats a timestamp as `YYYY-MM-DD HH:MM:SS`, adding `.ffffff` only when
/// the sub-second part is non-zero.
pub fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let in_day = micros.rem_euclid(MICROS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let sign = if year < 0 { "-" } else { "" };
    let seconds = in_day / MICROS_PER_SECOND;
    let fraction = in_day % MICROS_PER_SECOND;
    let mut out = format!(
        "{sign}{:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        year.unsigned_abs(),
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if fraction != 0 {
        out.push_str(&format!(".{fraction:06}"));
    }
    out
}

/// Parses exactly `width` ASCII digits.
fn fixed_digits(text: &str, width: usize) -> Option<u32> {
    if text.len() != width || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Parses `YYYY-MM-DD` (four or more year digits, optional leading `-`).
pub fn parse_date(text: &str) -> Option<i32> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let mut parts = rest.split('-');
    let year_text = parts.next()?;
    let month = fixed_digits(parts.next()?, 2)?;
    let day = fixed_digits(parts.next()?, 2)?;
    if parts.next().is_some() {
        return None;
    }
    // Seven digits cover every year an i32 day count can reach, and keep the
    // arithmetic below far from i64 overflow.
    if !(4..=7).contains(&year_text.len()) || !year_text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude: i64 = year_text.parse().ok()?;
    let year = if negative { -magnitude } else { magnitude };
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    i32::try_from(days_from_civil(year, month, day)).ok()
}

/// Parses `HH:MM:SS[.f]` with one to six fraction digits into microseconds.
fn parse_time(text: &str) -> Option<i64> {
    let (clock, fraction) = match text.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (text, None),
    };
    let mut parts = clock.split(':');
    let hour = fixed_digits(parts.next()?, 2)?;
    let minute = fixed_digits(parts.next()?, 2)?;
    // `HH:MM` is a whole minute, as PostgreSQL reads it; a fraction needs the seconds.
    let second = match parts.next() {
        Some(second) => fixed_digits(second, 2)?,
        None if fraction.is_none() => 0,
        None => return None,
    };
    if parts.next().is_some() || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let micros = match fraction {
        None => 0,
        Some(digits) => {
            if digits.is_empty() || digits.len() > 6 {
                return None;
            }
            let value = fixed_digits(digits, digits.len())?;
            // Right-pad: ".5" means half a second, not five microseconds.
            let scale = 10_i64.pow(6 - u32::try_from(digits.len()).ok()?);
            i64::from(value) * scale
        }
    };
    let seconds = i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second);
    Some(seconds * MICROS_PER_SECOND + micros)
}

/// Parses `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.ffffff]` or the same with a `T`
/// separator; `None` if malformed or outside the i64 microsecond range.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((date, time)) => (date, parse_time(time)?),
        None => (text, 0),
    };
    let days = i64::from(parse_date(date)?);
    days.checked_mul(MICROS_PER_DAY)?.checked_add(time)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_dates() {
        let cases = [
            ("1970-01-01", 0),
            ("1969-12-31", -1),
            ("2000-03-01", 11_017),
            ("2024-02-29", 19_782),
            ("1900-01-01", -25_567),
            ("0001-01-01", -719_162),
            ("0000-03-01", -719_468),
            ("-0001-12-31", -719_529),
        ];
        for (text, days) in cases {
            assert_eq!(parse_date(text), Some(days), "{text}");
            assert_eq!(format_date(days), text);
        }
    }

    #[test]
    fn rejects_bad_dates() {
        for text in [
            "1900-02-29",
            "2023-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-04-31",
            "2024-1-01",
            "24-01-01",
            "2024-01-01-",
            "2024/01/01",
            "+2024-01-01",
            "99999999-01-01",
            "",
        ] {
            assert_eq!(parse_date(text), None, "{text}");
        }
        assert_eq!(parse_date("2000-02-29"), Some(11_016));
    }

    #[test]
    fn timestamps() {
        let ts = parse_timestamp("2024-01-31 12:00:00.123456");
        assert_eq!(ts, Some(1_706_702_400_123_456));
        assert_eq!(
            parse_timestamp("2024-01-31T12:00:00.123456"),
            Some(1_706_702_400_123_456)
        );
        assert_eq!(
            format_timestamp(1_706_702_400_123_456),
            "2024-01-31 12:00:00.123456"
        );
        assert_eq!(
            format_timestamp(1_706_702_400_000_000),
            "2024-01-31 12:00:00"
        );
        assert_eq!(parse_timestamp("2024-01-31"), Some(1_706_659_200_000_000));
        assert_eq!(parse_timestamp("1970-01-01 00:00:00.5"), Some(500_000));
        assert_eq!(parse_timestamp("1970-01-01 00:01"), Some(60_000_000));
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999999");
        assert_eq!(parse_timestamp("1969-12-31 23:59:59.999999"), Some(-1));
    }

    #[test]
    fn rejects_bad_timestamps() {
        for text in [
            "2024-01-31 24:00:00",
            "2024-01-31 12:60:00",
            "2024-01-31 12:00:60",
            "2024-01-31 12:00.5",
            "2024-01-31 12",
            "2024-01-31 12:00:00.",
            "2024-01-31 12:00:00.1234567",
            "2024-01-31 12:00:00.12a",
            "2024-01-31 ",
            "5879610-07-11 00:00:00",
        ] {
            assert_eq!(parse_timestamp(text), None, "{text}");
        }
    }

    proptest! {
        #[test]
        fn date_round_trip(days in any::<i32>()) {
            prop_assert_eq!(parse_date(&format_date(days)), Some(days));
        }

        #[test]
        fn timestamp_round_trip(micros in any::<i64>()) {
            prop_assert_eq!(parse_timestamp(&format_timestamp(micros)), Some(micros));
        }

        #[test]
        fn consecutive_days_are_consecutive_dates(days in -3_000_000_i64..3_000_000) {
            let (y, m, d) = civil_from_days(days);
            let next = civil_from_days(days + 1);
            let expected = if d < days_in_month(y, m) {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            prop_assert_eq!(next, expected);
            prop_assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
