//! Bytes that sort as `jsonb` values compare ([`Jsonb::compare`]): what ORDER BY of a jsonb
//! sorts by, since the stored text's order is not jsonb's.
//!
//! An empty top-level array is `01` (below everything, as PostgreSQL keeps it); anything else
//! is `02` then the value's encoding, each self-delimiting so that a container's members
//! compare one after the other:
//!
//! | value   | encoding                                                              |
//! |---------|-----------------------------------------------------------------------|
//! | null    | `10`                                                                  |
//! | string  | `20`, its bytes with `00` written `00 FF`, then `00 01`                 |
//! | number  | `30`, then `01` and the magnitude inverted (negative), `02` (zero), or  |
//! |         | `03` and the magnitude (positive); magnitude: the decimal exponent as  |
//! |         | a sign-flipped big-endian i32, the significant digits, then `00`       |
//! | boolean | `40`, `00` or `01`                                                    |
//! | array   | `50`, the element count (big-endian u32), the elements                |
//! | object  | `60`, the pair count, then per pair its key's length and bytes and    |
//! |         | its value (keys in jsonb's order: shorter first, then bytewise)       |

use super::jsonb::Jsonb;

/// The sort key of `value` (see the module docs).
pub fn sort_key(value: &Jsonb) -> Vec<u8> {
    let mut out = Vec::new();
    if matches!(value, Jsonb::Array(items) if items.is_empty()) {
        out.push(0x01);
    } else {
        out.push(0x02);
        encode(value, &mut out);
    }
    out
}

fn encode(value: &Jsonb, out: &mut Vec<u8>) {
    match value {
        Jsonb::Null => out.push(0x10),
        Jsonb::String(s) => {
            out.push(0x20);
            for &byte in s.as_bytes() {
                out.push(byte);
                if byte == 0 {
                    out.push(0xFF);
                }
            }
            out.extend_from_slice(&[0x00, 0x01]);
        }
        Jsonb::Number(n) => {
            out.push(0x30);
            number(n, out);
        }
        Jsonb::Bool(b) => out.extend_from_slice(&[0x40, u8::from(*b)]),
        Jsonb::Array(items) => {
            out.push(0x50);
            out.extend_from_slice(&count(items.len()));
            for item in items {
                encode(item, out);
            }
        }
        Jsonb::Object(pairs) => {
            out.push(0x60);
            out.extend_from_slice(&count(pairs.len()));
            for (key, value) in pairs {
                out.extend_from_slice(&count(key.len()));
                out.extend_from_slice(key.as_bytes());
                encode(value, out);
            }
        }
    }
}

fn count(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes()
}

/// A number in canonical text (`-12.50`) as sign, then exponent and significant digits.
fn number(text: &str, out: &mut Vec<u8>) {
    let (negative, magnitude) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = magnitude.split_once('.').unwrap_or((magnitude, ""));
    let digits: Vec<u8> = whole.bytes().chain(fraction.bytes()).collect();
    let Some(first) = digits.iter().position(|d| *d != b'0') else {
        out.push(0x02);
        return;
    };
    let last = digits.iter().rposition(|d| *d != b'0').unwrap_or(first);
    // The value is 0.d1d2... × 10^exponent.
    let exponent = whole.len() as i64 - first as i64;
    let exponent =
        i32::try_from(exponent).unwrap_or(if exponent < 0 { i32::MIN } else { i32::MAX });
    let mut body = ((exponent as u32) ^ 0x8000_0000).to_be_bytes().to_vec();
    body.extend_from_slice(&digits[first..=last]);
    body.push(0x00);
    if negative {
        out.push(0x01);
        out.extend(body.iter().map(|b| !b));
    } else {
        out.push(0x03);
        out.extend_from_slice(&body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_jsonb_compares() {
        let ascending = [
            "[]",
            "null",
            r#""""#,
            r#""a""#,
            r#""a\u0001""#,
            r#""b""#,
            "-100",
            "-2.5",
            "-2.25",
            "-0.001",
            "0",
            "0.001",
            "0.01",
            "1",
            "1.5",
            "10",
            "100.25",
            "false",
            "true",
            "[5]",
            "[[]]",
            "[1, 2]",
            "[1, 3]",
            r#"{"b": 1}"#,
            r#"{"aa": 0}"#,
            r#"{"a": 1, "b": 1}"#,
            r#"{"a": 1, "b": 2}"#,
        ];
        let values: Vec<Jsonb> = ascending
            .iter()
            .map(|t| Jsonb::parse(t).expect("valid"))
            .collect();
        for (i, a) in values.iter().enumerate() {
            for (j, b) in values.iter().enumerate() {
                assert_eq!(a.compare(b), i.cmp(&j), "{a:?} vs {b:?}");
                assert_eq!(sort_key(a).cmp(&sort_key(b)), i.cmp(&j), "{a:?} vs {b:?}");
            }
        }
        let equal = |a: &str, b: &str| {
            sort_key(&Jsonb::parse(a).expect("valid")) == sort_key(&Jsonb::parse(b).expect("valid"))
        };
        assert!(equal("1.50", "1.5") && equal("0.00", "0") && equal("-1.0", "-1"));
    }
}
