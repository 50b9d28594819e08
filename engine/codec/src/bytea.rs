//! BYTEA's text forms, as PostgreSQL writes and reads them: `\x` and two hex digits a byte,
//! and, read only, the older escape format.

/// BYTEA's hex output: `\x` and two hex digits a byte.
pub fn format_bytea(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + 2 * bytes.len());
    text.push_str("\\x");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

/// The bytes a BYTEA field spells: `\x` hex, or (PostgreSQL's escape format) the text with
/// `\\` for a backslash and `\nnn` octal for any byte.
pub fn parse_bytea(text: &str) -> Option<Vec<u8>> {
    if let Some(hex) = text.strip_prefix("\\x") {
        let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !digits.len().is_multiple_of(2) {
            return None;
        }
        return digits
            .chunks(2)
            .map(|pair| {
                let high = (pair[0] as char).to_digit(16)?;
                let low = (pair[1] as char).to_digit(16)?;
                Some((high * 16 + low) as u8)
            })
            .collect();
    }
    let raw = text.as_bytes();
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' {
            bytes.push(raw[i]);
            i += 1;
        } else if raw.get(i + 1) == Some(&b'\\') {
            bytes.push(b'\\');
            i += 2;
        } else {
            let octal = raw.get(i + 1..i + 4)?;
            if !octal.iter().all(|d| (b'0'..=b'7').contains(d)) || octal[0] > b'3' {
                return None;
            }
            let value = octal.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
            bytes.push(value as u8);
            i += 4;
        }
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_out_hex_and_escapes_in() {
        assert_eq!(format_bytea(&[0, 255, 16]), "\\x00ff10");
        assert_eq!(parse_bytea("\\x00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(parse_bytea("a\\\\b\\001"), Some(b"a\\b\x01".to_vec()));
        assert_eq!(parse_bytea("\\x0"), None);
    }
}
