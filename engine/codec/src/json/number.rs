//! JSON numbers as `jsonb` holds them: in the canonical text of PostgreSQL's `numeric` (`1e2`
//! is `100`, `1.50` stays `1.50`, `1.5e-3` is `0.0015`, `-0` is `0`), compared by value.

use std::cmp::Ordering;

use super::error::JsonError;

/// The largest exponent a number may be written with, as PostgreSQL's `numeric` input allows.
const MAX_EXPONENT: i64 = 1000;

/// The canonical text of a number written by JSON's grammar (checked by the parser): its
/// digits with as many after the point as the text had, less the exponent.
pub fn canonical_number(text: &str) -> Result<String, JsonError> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => {
            let exponent: i64 = unsigned[at + 1..]
                .parse()
                .map_err(|_| JsonError::NumberOutOfRange)?;
            (&unsigned[..at], exponent)
        }
        None => (unsigned, 0),
    };
    if exponent.abs() > MAX_EXPONENT {
        return Err(JsonError::NumberOutOfRange);
    }
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: Vec<u8> = whole.bytes().chain(fraction.bytes()).collect();
    // Where the point falls among `digits`, and how many digits follow it.
    let point = whole.len() as i64 + exponent;
    let scale = (fraction.len() as i64 - exponent).max(0);
    let mut integer = String::new();
    let mut decimals = String::new();
    for i in point.min(0)..point.max(digits.len() as i64) {
        let digit = usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .map_or('0', |d| char::from(*d));
        if i < point {
            integer.push(digit);
        } else if (decimals.len() as i64) < scale {
            decimals.push(digit);
        }
    }
    while (decimals.len() as i64) < scale {
        decimals.push('0');
    }
    let integer = integer.trim_start_matches('0');
    let zero = integer.is_empty() && decimals.bytes().all(|d| d == b'0');
    let mut out = String::with_capacity(integer.len() + decimals.len() + 3);
    if negative && !zero {
        out.push('-');
    }
    out.push_str(if integer.is_empty() { "0" } else { integer });
    if !decimals.is_empty() {
        out.push('.');
        out.push_str(&decimals);
    }
    Ok(out)
}

/// Compares two numbers in canonical text ([`canonical_number`]) by value: `1.0` equals `1`.
pub fn compare_numbers(a: &str, b: &str) -> Ordering {
    let sign = |s: &str| s.starts_with('-');
    match (sign(a), sign(b)) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (true, true) => compare_magnitudes(&b[1..], &a[1..]),
        (false, false) => compare_magnitudes(a, b),
    }
}

fn compare_magnitudes(a: &str, b: &str) -> Ordering {
    let (a_whole, a_fraction) = a.split_once('.').unwrap_or((a, ""));
    let (b_whole, b_fraction) = b.split_once('.').unwrap_or((b, ""));
    a_whole
        .len()
        .cmp(&b_whole.len())
        .then_with(|| a_whole.cmp(b_whole))
        .then_with(|| {
            a_fraction
                .trim_end_matches('0')
                .cmp(b_fraction.trim_end_matches('0'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_take_numeric_canonical_text() {
        for (text, canonical) in [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "0.0"),
            ("1.50", "1.50"),
            ("1e2", "100"),
            ("1.0E+2", "100"),
            ("1.23e1", "12.3"),
            ("1e-2", "0.01"),
            ("1.5e-3", "0.0015"),
            ("-12.5e-1", "-1.25"),
            ("120e-1", "12.0"),
            ("0.000", "0.000"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
        ] {
            assert_eq!(canonical_number(text).as_deref(), Ok(canonical), "{text}");
        }
        assert_eq!(canonical_number("1e1001"), Err(JsonError::NumberOutOfRange));
    }

    #[test]
    fn numbers_compare_by_value() {
        let order = [
            "-100", "-2.5", "-2", "0", "0.01", "1", "1.5", "10", "100.25",
        ];
        for (i, a) in order.iter().enumerate() {
            for (j, b) in order.iter().enumerate() {
                assert_eq!(compare_numbers(a, b), i.cmp(&j), "{a} vs {b}");
            }
        }
        assert_eq!(compare_numbers("1.0", "1"), Ordering::Equal);
        assert_eq!(compare_numbers("0.0", "0"), Ordering::Equal);
    }
}
