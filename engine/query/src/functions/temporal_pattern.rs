//! PostgreSQL's `to_char` patterns for dates and timestamps: `YYYY-MM-DD HH24:MI:SS`,
//! `FMMonth DDth`, `Dy, DD Mon YYYY HH12:MI AM` and the rest of the common keywords, with the
//! `FM` prefix (no padding), the `TH`/`th` suffix (ordinals), double-quoted text copied as it
//! is, and every other character copied too. Keywords are matched longest first, in the
//! spellings PostgreSQL knows (upper case, and lower case for most; `Month`, `Mon`, `Day` and
//! `Dy` capitalise the name as written).

use rowdex_codec::days_from_civil;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The fields of a timestamp (UTC microseconds since 1970).
pub(crate) struct Fields {
    pub(crate) year: i64,
    /// 1 to 12.
    pub(crate) month: i64,
    pub(crate) day: i64,
    pub(crate) hour: i64,
    pub(crate) minute: i64,
    pub(crate) second: i64,
    pub(crate) micro: i64,
    /// Days since 1970-01-01.
    pub(crate) epoch_day: i64,
}

impl Fields {
    pub(crate) fn of(micros: i64) -> Fields {
        const MICROS_PER_DAY: i64 = 86_400_000_000;
        let epoch_day = micros.div_euclid(MICROS_PER_DAY);
        let in_day = micros.rem_euclid(MICROS_PER_DAY);
        let (year, month, day) = rowdex_codec::civil_from_days(epoch_day);
        let seconds = in_day / 1_000_000;
        Fields {
            year,
            month: i64::from(month),
            day: i64::from(day),
            hour: seconds / 3600,
            minute: seconds / 60 % 60,
            second: seconds % 60,
            micro: in_day % 1_000_000,
            epoch_day,
        }
    }

    /// 0 = Sunday.
    fn weekday(&self) -> i64 {
        (self.epoch_day + 4).rem_euclid(7)
    }

    /// 1 to 366.
    fn day_of_year(&self) -> i64 {
        self.epoch_day - days_from_civil(self.year, 1, 1) + 1
    }
}

/// What a keyword prints.
#[derive(Clone, Copy)]
enum Field {
    Hour24,
    Hour12,
    Minute,
    Second,
    Millis,
    Micros,
    Meridiem { dots: bool, upper: bool },
    YearComma,
    Year(usize),
    MonthName(Case),
    MonthAbbrev(Case),
    MonthNumber,
    DayName(Case),
    DayAbbrev(Case),
    DayOfYear,
    DayOfMonth,
    DayOfWeek,
    IsoDayOfWeek,
    WeekOfYear,
    Quarter,
    Century,
    Julian,
    Zone { upper: bool },
    Offset,
}

#[derive(Clone, Copy)]
enum Case {
    Upper,
    Capital,
    Lower,
}

/// Every keyword, longest first where one is a prefix of another.
const KEYWORDS: &[(&str, Field)] = &[
    ("HH24", Field::Hour24),
    ("hh24", Field::Hour24),
    ("HH12", Field::Hour12),
    ("hh12", Field::Hour12),
    ("HH", Field::Hour12),
    ("hh", Field::Hour12),
    ("MI", Field::Minute),
    ("mi", Field::Minute),
    ("SS", Field::Second),
    ("ss", Field::Second),
    ("MS", Field::Millis),
    ("ms", Field::Millis),
    ("US", Field::Micros),
    ("us", Field::Micros),
    (
        "A.M.",
        Field::Meridiem {
            dots: true,
            upper: true,
        },
    ),
    (
        "P.M.",
        Field::Meridiem {
            dots: true,
            upper: true,
        },
    ),
    (
        "a.m.",
        Field::Meridiem {
            dots: true,
            upper: false,
        },
    ),
    (
        "p.m.",
        Field::Meridiem {
            dots: true,
            upper: false,
        },
    ),
    (
        "AM",
        Field::Meridiem {
            dots: false,
            upper: true,
        },
    ),
    (
        "PM",
        Field::Meridiem {
            dots: false,
            upper: true,
        },
    ),
    (
        "am",
        Field::Meridiem {
            dots: false,
            upper: false,
        },
    ),
    (
        "pm",
        Field::Meridiem {
            dots: false,
            upper: false,
        },
    ),
    ("Y,YYY", Field::YearComma),
    ("y,yyy", Field::YearComma),
    ("YYYY", Field::Year(4)),
    ("yyyy", Field::Year(4)),
    ("YYY", Field::Year(3)),
    ("yyy", Field::Year(3)),
    ("YY", Field::Year(2)),
    ("yy", Field::Year(2)),
    ("Y", Field::Year(1)),
    ("y", Field::Year(1)),
    ("MONTH", Field::MonthName(Case::Upper)),
    ("Month", Field::MonthName(Case::Capital)),
    ("month", Field::MonthName(Case::Lower)),
    ("MON", Field::MonthAbbrev(Case::Upper)),
    ("Mon", Field::MonthAbbrev(Case::Capital)),
    ("mon", Field::MonthAbbrev(Case::Lower)),
    ("MM", Field::MonthNumber),
    ("mm", Field::MonthNumber),
    ("DAY", Field::DayName(Case::Upper)),
    ("Day", Field::DayName(Case::Capital)),
    ("day", Field::DayName(Case::Lower)),
    ("DY", Field::DayAbbrev(Case::Upper)),
    ("Dy", Field::DayAbbrev(Case::Capital)),
    ("dy", Field::DayAbbrev(Case::Lower)),
    ("DDD", Field::DayOfYear),
    ("ddd", Field::DayOfYear),
    ("DD", Field::DayOfMonth),
    ("dd", Field::DayOfMonth),
    ("D", Field::DayOfWeek),
    ("d", Field::DayOfWeek),
    ("ID", Field::IsoDayOfWeek),
    ("id", Field::IsoDayOfWeek),
    ("WW", Field::WeekOfYear),
    ("ww", Field::WeekOfYear),
    ("Q", Field::Quarter),
    ("q", Field::Quarter),
    ("CC", Field::Century),
    ("cc", Field::Century),
    ("J", Field::Julian),
    ("j", Field::Julian),
    ("TZ", Field::Zone { upper: true }),
    ("tz", Field::Zone { upper: false }),
    ("OF", Field::Offset),
    ("of", Field::Offset),
];

/// What a pattern writes of a timestamp's zone: its abbreviation (`CET`, `UTC`) and its
/// offset (`+01`, `+05:30`).
pub(crate) struct ZoneLabel {
    pub abbreviation: String,
    pub offset: String,
}

/// `fields` written by `pattern`; `zone` for a timestamp with time zone (`fields` being its
/// wall-clock time in that zone): what `TZ`/`tz` and `OF` write.
pub(crate) fn format_pattern(fields: &Fields, pattern: &str, zone: Option<&ZoneLabel>) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            // Quoted text, `\"` standing for a quote inside it.
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            out.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 2;
                        break;
                    }
                    other => out.push(other),
                }
            }
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        let fill = rest.starts_with("FM") || rest.starts_with("fm");
        let after_fill = if fill { &rest[2..] } else { rest };
        match KEYWORDS.iter().find(|(k, _)| after_fill.starts_with(k)) {
            Some((keyword, field)) => {
                let mut after = &after_fill[keyword.len()..];
                let ordinal = if after.starts_with("TH") {
                    Some(true)
                } else if after.starts_with("th") {
                    Some(false)
                } else {
                    None
                };
                if ordinal.is_some() {
                    after = &after[2..];
                }
                write_field(&mut out, fields, *field, fill, ordinal, zone);
                rest = after;
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

fn write_field(
    out: &mut String,
    f: &Fields,
    field: Field,
    fill: bool,
    ordinal: Option<bool>,
    zone: Option<&ZoneLabel>,
) {
    let number = |out: &mut String, value: i64, width: usize| {
        let text = if fill {
            value.to_string()
        } else {
            format!("{value:0width$}")
        };
        out.push_str(&text);
        if let Some(upper) = ordinal {
            let suffix = ordinal_suffix(value);
            out.push_str(&if upper {
                suffix.to_uppercase()
            } else {
                suffix.to_string()
            });
        }
    };
    let name = |out: &mut String, name: &str, case: Case, pad: bool| {
        let text = match case {
            Case::Upper => name.to_uppercase(),
            Case::Capital => name.to_string(),
            Case::Lower => name.to_lowercase(),
        };
        if pad && !fill {
            out.push_str(&format!("{text:<9}"));
        } else {
            out.push_str(&text);
        }
    };
    let hour12 = (f.hour + 11) % 12 + 1;
    match field {
        Field::Hour24 => number(out, f.hour, 2),
        Field::Hour12 => number(out, hour12, 2),
        Field::Minute => number(out, f.minute, 2),
        Field::Second => number(out, f.second, 2),
        Field::Millis => number(out, f.micro / 1000, 3),
        Field::Micros => number(out, f.micro, 6),
        Field::Meridiem { dots, upper } => {
            let text = match (f.hour < 12, dots) {
                (true, false) => "am",
                (false, false) => "pm",
                (true, true) => "a.m.",
                (false, true) => "p.m.",
            };
            out.push_str(&if upper {
                text.to_uppercase()
            } else {
                text.to_string()
            });
        }
        Field::YearComma => {
            let year = f.year.abs();
            out.push_str(&format!("{},{:03}", year / 1000, year % 1000));
        }
        Field::Year(digits) => {
            let modulus = 10_i64.pow(digits as u32);
            let value = if digits == 4 {
                f.year.abs()
            } else {
                f.year.abs() % modulus
            };
            number(out, value, digits);
        }
        Field::MonthName(case) => name(out, MONTHS[month_index(f)], case, true),
        Field::MonthAbbrev(case) => name(out, &MONTHS[month_index(f)][..3], case, false),
        Field::MonthNumber => number(out, f.month, 2),
        Field::DayName(case) => name(out, DAYS[f.weekday() as usize], case, true),
        Field::DayAbbrev(case) => name(out, &DAYS[f.weekday() as usize][..3], case, false),
        Field::DayOfYear => number(out, f.day_of_year(), 3),
        Field::DayOfMonth => number(out, f.day, 2),
        Field::DayOfWeek => number(out, f.weekday() + 1, 1),
        Field::IsoDayOfWeek => number(out, (f.weekday() + 6) % 7 + 1, 1),
        Field::WeekOfYear => number(out, (f.day_of_year() - 1) / 7 + 1, 2),
        Field::Quarter => number(out, (f.month - 1) / 3 + 1, 1),
        Field::Century => {
            let century = if f.year > 0 {
                (f.year + 99) / 100
            } else {
                f.year / 100 - 1
            };
            number(out, century, 2);
        }
        // Julian day 2440588 is 1970-01-01.
        Field::Julian => number(out, f.epoch_day + 2_440_588, 1),
        Field::Zone { upper } => {
            if let Some(zone) = zone {
                if upper {
                    out.push_str(&zone.abbreviation.to_uppercase());
                } else {
                    out.push_str(&zone.abbreviation.to_lowercase());
                }
            }
        }
        Field::Offset => {
            if let Some(zone) = zone {
                out.push_str(&zone.offset);
            }
        }
    }
}

fn month_index(f: &Fields) -> usize {
    usize::try_from(f.month - 1).unwrap_or(0).min(11)
}

/// `st`, `nd`, `rd` or `th`, as English orders `value`.
fn ordinal_suffix(value: i64) -> &'static str {
    let value = value.abs();
    if (11..=13).contains(&(value % 100)) {
        return "th";
    }
    match value % 10 {
        1 => "st",
        2 => "nd",
        3 => "rd",
        _ => "th",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i64, mo: u32, d: u32, h: i64, mi: i64, s: i64, micro: i64) -> Fields {
        let micros = days_from_civil(y, mo, d) * 86_400_000_000
            + ((h * 60 + mi) * 60 + s) * 1_000_000
            + micro;
        Fields::of(micros)
    }

    #[test]
    fn patterns_as_postgresql_writes_them() {
        // 2024-03-05 was a Tuesday.
        let t = at(2024, 3, 5, 14, 7, 9, 123_456);
        let cases = [
            ("YYYY-MM-DD HH24:MI:SS", "2024-03-05 14:07:09"),
            ("HH12:MI AM", "02:07 PM"),
            ("hh:mi a.m.", "02:07 p.m."),
            ("FMMonth DDth, YYYY", "March 05th, 2024"),
            ("FMMonth FMDDth", "March 5th"),
            ("Month|", "March    |"),
            ("Dy, DD Mon YYYY", "Tue, 05 Mar 2024"),
            ("DAY day Day", "TUESDAY   tuesday   Tuesday  "),
            ("MS US", "123 123456"),
            ("DDD D ID Q WW", "065 3 2 1 10"),
            ("\"week\" Q", "week 1"),
            ("YY Y,YYY CC J", "24 2,024 21 2460375"),
            ("TZ", ""),
        ];
        for (pattern, expected) in cases {
            assert_eq!(format_pattern(&t, pattern, None), expected, "{pattern}");
        }
        let berlin = ZoneLabel {
            abbreviation: "CEST".to_string(),
            offset: "+02".to_string(),
        };
        assert_eq!(
            format_pattern(&t, "HH24 TZ tz OF", Some(&berlin)),
            "14 CEST cest +02"
        );
        assert_eq!(
            format_pattern(&at(2024, 1, 1, 0, 0, 0, 0), "HH12 AM DDth", None),
            "12 AM 01st"
        );
        assert_eq!(ordinal_suffix(12), "th");
        assert_eq!(ordinal_suffix(22), "nd");
    }
}
