//! Escaping of variable-length TEXT/BYTES payloads, and the prefix-scan
//! helpers that depend on exactly how that escaping works.
//!
//! Each payload byte maps to a code word: a non-zero byte to itself, 0x00 to
//! `00 FF`, and the end of the value to `00 01`. No code word is a prefix of
//! another, so the escaped form of a string `p` prefixes the encoding of `s`
//! exactly when `p` prefixes `s`, and the terminator (`00 01`) sorts below
//! every continuation (`00 FF` or any non-zero byte), so shorter strings sort
//! first.

use super::reader::{ESCAPE, ESCAPED_ZERO, TERMINATOR};
use super::tags::TAG_TEXT;
use crate::datum::SortOrder;

/// Appends `bytes` escaped, without the terminator.
pub(super) fn write_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        if b == ESCAPE {
            out.extend_from_slice(&[ESCAPE, ESCAPED_ZERO]);
        } else {
            out.push(b);
        }
    }
}

pub(super) fn write_terminator(out: &mut Vec<u8>) {
    out.extend_from_slice(&[ESCAPE, TERMINATOR]);
}

/// Inverts every byte appended since `start`, turning an ASC encoding into DESC.
pub(super) fn apply_order(out: &mut [u8], start: usize, order: SortOrder) {
    if order == SortOrder::Desc
        && let Some(tail) = out.get_mut(start..)
    {
        for b in tail {
            *b = !*b;
        }
    }
}

/// Appends the byte prefix shared by the encodings of every TEXT value that
/// starts with `prefix` (and by no other value), for `LIKE 'abc%'` scans.
///
/// It is the full encoding with the terminator left off, so it works for DESC
/// too: inverting bytes one by one keeps prefixes prefixes.
pub fn encode_text_prefix(out: &mut Vec<u8>, prefix: &str, order: SortOrder) {
    let start = out.len();
    out.push(TAG_TEXT);
    write_escaped(out, prefix.as_bytes());
    apply_order(out, start, order);
}

/// The smallest byte string greater than every string starting with `prefix`,
/// i.e. the exclusive upper bound of a prefix scan.
///
/// Trailing 0xFF bytes cannot be incremented, so they are dropped before
/// bumping the last byte; `None` when nothing is left (every string starting
/// with an all-0xFF or empty prefix has no finite upper bound).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut out = prefix.get(..=keep)?.to_vec();
    let last = out.last_mut()?;
    *last = last.checked_add(1)?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_only_zero() {
        let mut out = Vec::new();
        write_escaped(&mut out, &[0x00, 0x01, 0xFF, 0x00]);
        write_terminator(&mut out);
        assert_eq!(out, [0x00, 0xFF, 0x01, 0xFF, 0x00, 0xFF, 0x00, 0x01]);
    }

    #[test]
    fn text_prefix_bytes() {
        let mut asc = Vec::new();
        encode_text_prefix(&mut asc, "a\0", SortOrder::Asc);
        assert_eq!(asc, [0x40, 0x61, 0x00, 0xFF]);
        let mut desc = vec![0x99];
        encode_text_prefix(&mut desc, "a\0", SortOrder::Desc);
        assert_eq!(desc, [0x99, 0xBF, 0x9E, 0xFF, 0x00]);
        let mut empty = Vec::new();
        encode_text_prefix(&mut empty, "", SortOrder::Asc);
        assert_eq!(empty, [0x40]);
    }

    #[test]
    fn successor() {
        assert_eq!(prefix_successor(&[0x40, 0x61]), Some(vec![0x40, 0x62]));
        assert_eq!(prefix_successor(&[0x40, 0xFF, 0xFF]), Some(vec![0x41]));
        assert_eq!(prefix_successor(&[0x00]), Some(vec![0x01]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_successor(&[]), None);
    }

    #[test]
    fn apply_order_touches_only_the_tail() {
        let mut bytes = vec![0x01, 0x02, 0x03];
        apply_order(&mut bytes, 1, SortOrder::Desc);
        assert_eq!(bytes, [0x01, 0xFD, 0xFC]);
        apply_order(&mut bytes, 0, SortOrder::Asc);
        assert_eq!(bytes, [0x01, 0xFD, 0xFC]);
    }
}
