//! PostgreSQL's binary NUMERIC: a digit count, a weight, a sign, a display scale, then
//! base-10000 digits, most significant first. Binary COPY reads and writes a DECIMAL column's
//! values so, and an array's NUMERIC elements.

/// `units` at `scale` as PostgreSQL's binary NUMERIC: digit count, weight (of the first
/// base-10000 digit), sign, display scale, then the base-10000 digits without leading or
/// trailing zero digits.
pub fn numeric_bytes(units: i128, scale: i8) -> Vec<u8> {
    let scale = u32::try_from(scale.max(0)).unwrap_or(0);
    let negative = units < 0;
    let magnitude = units.unsigned_abs();
    let divisor = 10u128.pow(scale);
    let (whole, fraction) = (magnitude / divisor, magnitude % divisor);
    // Whole part in base-10000 digits, most significant first.
    let mut whole_digits = Vec::new();
    let mut rest = whole;
    while rest > 0 {
        whole_digits.push((rest % 10_000) as i16);
        rest /= 10_000;
    }
    whole_digits.reverse();
    // The fraction padded to whole groups of four decimal digits.
    let groups = scale.div_ceil(4);
    let padded = fraction * 10u128.pow(groups * 4 - scale);
    let mut fraction_digits = vec![0i16; groups as usize];
    let mut rest = padded;
    for digit in fraction_digits.iter_mut().rev() {
        *digit = (rest % 10_000) as i16;
        rest /= 10_000;
    }
    let mut weight = whole_digits.len() as i16 - 1;
    let mut digits: Vec<i16> = whole_digits.into_iter().chain(fraction_digits).collect();
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    let mut out = Vec::with_capacity(8 + 2 * digits.len());
    out.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    let sign: u16 = if negative && !digits.is_empty() {
        0x4000
    } else {
        0
    };
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as i16).to_be_bytes());
    for digit in digits {
        out.extend_from_slice(&digit.to_be_bytes());
    }
    out
}

/// PostgreSQL's binary NUMERIC (digit count, weight, sign, display scale, then base-10000
/// digits) as decimal text; None for bytes that are not one, and for NaN and the infinities.
pub fn numeric_text(bytes: &[u8]) -> Option<String> {
    let word = |i: usize| -> Option<i16> {
        let pair = bytes.get(2 * i..2 * i + 2)?;
        Some(i16::from_be_bytes([pair[0], pair[1]]))
    };
    let ndigits = usize::try_from(word(0)?).ok()?;
    let weight = i32::from(word(1)?);
    let sign = word(2)? as u16;
    let scale = usize::try_from(word(3)?).ok()?;
    if bytes.len() != 8 + 2 * ndigits {
        return None;
    }
    let negative = match sign {
        0x0000 => false,
        0x4000 => true,
        _ => return None,
    };
    let digits: Vec<i16> = (0..ndigits).map(|i| word(4 + i)).collect::<Option<_>>()?;
    if digits.iter().any(|d| !(0..10_000).contains(d)) {
        return None;
    }
    // Base-10000 digit i stands for 10000^(weight - i).
    let mut integer = String::new();
    for position in 0..=weight.max(-1) {
        let digit = usize::try_from(position)
            .ok()
            .and_then(|p| digits.get(p))
            .copied()
            .unwrap_or(0);
        if integer.is_empty() {
            if digit != 0 {
                integer.push_str(&digit.to_string());
            }
        } else {
            integer.push_str(&format!("{digit:04}"));
        }
    }
    if integer.is_empty() {
        integer.push('0');
    }
    let mut fraction = String::new();
    let mut group = weight + 1;
    while fraction.len() < scale {
        let digit = usize::try_from(group)
            .ok()
            .and_then(|g| digits.get(g))
            .copied()
            .unwrap_or(0);
        let digit = if group < 0 { 0 } else { digit };
        fraction.push_str(&format!("{digit:04}"));
        group += 1;
    }
    fraction.truncate(scale);
    let sign = if negative { "-" } else { "" };
    Some(if fraction.is_empty() {
        format!("{sign}{integer}")
    } else {
        format!("{sign}{integer}.{fraction}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(ndigits: i16, weight: i16, sign: u16, scale: i16, digits: &[i16]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for word in [ndigits, weight, sign as i16, scale].iter().chain(digits) {
            bytes.extend_from_slice(&word.to_be_bytes());
        }
        bytes
    }

    #[test]
    fn numerics_read_as_their_decimal_text() {
        // 12345678.90: digits 1234 5678 9000, weight 1, scale 2.
        assert_eq!(
            numeric_text(&numeric(3, 1, 0, 2, &[1234, 5678, 9000])).as_deref(),
            Some("12345678.90")
        );
        // -0.05: digit 500 at weight -1, scale 2.
        assert_eq!(
            numeric_text(&numeric(1, -1, 0x4000, 2, &[500])).as_deref(),
            Some("-0.05")
        );
        // 0.000001: digit 100 at weight -2, scale 6.
        assert_eq!(
            numeric_text(&numeric(1, -2, 0, 6, &[100])).as_deref(),
            Some("0.000001")
        );
        // 10000 (one digit 1 at weight 1, trailing zero digits dropped), and zero.
        assert_eq!(
            numeric_text(&numeric(1, 1, 0, 0, &[1])).as_deref(),
            Some("10000")
        );
        assert_eq!(
            numeric_text(&numeric(0, 0, 0, 0, &[])).as_deref(),
            Some("0")
        );
        assert_eq!(numeric_text(&numeric(0, 0, 0xC000, 0, &[])), None, "NaN");
    }

    fn words(bytes: &[u8]) -> Vec<i16> {
        bytes
            .chunks(2)
            .map(|pair| i16::from_be_bytes([pair[0], pair[1]]))
            .collect()
    }

    #[test]
    fn numerics_are_base_10000_digits_as_postgresql_sends_them() {
        // 12345.67: digits 1, 2345, 6700; weight 1; scale 2.
        assert_eq!(
            words(&numeric_bytes(1_234_567, 2)),
            vec![3, 1, 0, 2, 1, 2345, 6700]
        );
        // -0.5 at scale 1: one digit 5000 at weight -1.
        assert_eq!(words(&numeric_bytes(-5, 1)), vec![1, -1, 0x4000, 1, 5000]);
        // 0 at scale 2: no digits.
        assert_eq!(words(&numeric_bytes(0, 2)), vec![0, 0, 0, 2]);
        // 10000 at scale 0: digit 1 at weight 1 (trailing zero digits dropped).
        assert_eq!(words(&numeric_bytes(10_000, 0)), vec![1, 1, 0, 0, 1]);
        // 0.000001 at scale 6: digit 100 at weight -2.
        assert_eq!(words(&numeric_bytes(1, 6)), vec![1, -2, 0, 6, 100]);
    }
}
