//! UUIDs as text: PostgreSQL's input forms read into 16 bytes, and its one output form.
//!
//! Input follows PostgreSQL's `uuid_in`: 32 hex digits of either case, optionally inside `{}`,
//! with an optional hyphen after any group of four digits (`a0eebc99-9c0b-4ef8-...`,
//! `A0EEBC999C0B4EF8...`, `{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}`); nothing else, not even
//! surrounding blanks. Output is always lower case in the 8-4-4-4-12 form.

/// `text` read as a UUID; None when it is not one of PostgreSQL's input forms.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let mut rest = text.as_bytes();
    let braced = rest.first() == Some(&b'{');
    if braced {
        rest = rest.strip_prefix(b"{")?.strip_suffix(b"}")?;
    }
    let mut out = [0u8; 16];
    let mut digits = rest.iter();
    for (i, byte) in out.iter_mut().enumerate() {
        let high = hex_value(*digits.next()?)?;
        let low = hex_value(*digits.next()?)?;
        *byte = high << 4 | low;
        // A hyphen may follow every second byte (four digits), except the last.
        if i % 2 == 1 && i < 15 && digits.as_slice().first() == Some(&b'-') {
            digits.next();
        }
    }
    digits.as_slice().is_empty().then_some(out)
}

/// The canonical text of a UUID: lower-case hex in groups of 8-4-4-4-12.
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    UuidText::new(bytes).as_str().to_string()
}

/// The canonical text of a UUID in a buffer of its own, for writers that copy it elsewhere
/// (an Arrow string builder) without allocating per value.
pub struct UuidText([u8; 36]);

impl UuidText {
    pub fn new(bytes: &[u8; 16]) -> UuidText {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 36];
        let mut at = 0;
        for (i, byte) in bytes.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                at += 1;
            }
            out[at] = HEX[usize::from(byte >> 4)];
            out[at + 1] = HEX[usize::from(byte & 0x0F)];
            at += 2;
        }
        UuidText(out)
    }

    pub fn as_str(&self) -> &str {
        // Hex digits and hyphens only: always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANONICAL: &str = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";

    #[test]
    fn postgres_input_forms_read_as_one_value() {
        let expected = parse_uuid(CANONICAL).expect("canonical form");
        for form in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(parse_uuid(form), Some(expected), "{form}");
        }
        assert_eq!(format_uuid(&expected), CANONICAL);
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "a0eebc9-99c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1é",
        ] {
            assert_eq!(parse_uuid(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn text_order_is_byte_order() {
        let low = parse_uuid("00000000-0000-0000-0000-0000000000ff").expect("low");
        let high = parse_uuid("00000000-0000-0000-0000-000000000100").expect("high");
        assert!(low < high);
        assert!(format_uuid(&low) < format_uuid(&high));
    }
}
