//! Array parameters (`WHERE id = ANY($1)` with a driver's list). rowdex has no array type: an
//! array parameter travels to rowdex as the array's text, which its `= ANY(...)` reads as a
//! list of values (`rowdex`'s `sql::array_lists`). Text-format arrays already are that text;
//! binary ones (PostgreSQL's array send format) are written out as it: numbers and booleans
//! bare, text double-quoted, NULL as `NULL`.

use pgwire::api::Type;

/// Microseconds from 1970-01-01 to 2000-01-01, where PostgreSQL's binary timestamps count from.
const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// The array type whose elements are of `element`, for the element types a parameter list
/// may hold.
pub fn array_of(element: &Type) -> Option<Type> {
    Some(match *element {
        Type::BOOL => Type::BOOL_ARRAY,
        Type::INT2 => Type::INT2_ARRAY,
        Type::INT4 => Type::INT4_ARRAY,
        Type::INT8 => Type::INT8_ARRAY,
        Type::FLOAT4 => Type::FLOAT4_ARRAY,
        Type::FLOAT8 => Type::FLOAT8_ARRAY,
        Type::NUMERIC => Type::NUMERIC_ARRAY,
        Type::TEXT => Type::TEXT_ARRAY,
        Type::VARCHAR => Type::VARCHAR_ARRAY,
        Type::BPCHAR => Type::BPCHAR_ARRAY,
        Type::BYTEA => Type::BYTEA_ARRAY,
        Type::DATE => Type::DATE_ARRAY,
        Type::TIMESTAMP => Type::TIMESTAMP_ARRAY,
        Type::TIMESTAMPTZ => Type::TIMESTAMPTZ_ARRAY,
        Type::UUID => Type::UUID_ARRAY,
        _ => return None,
    })
}

/// Whether `pg_type` is an array type (PostgreSQL names them `_<element>`).
pub fn is_array(pg_type: &Type) -> bool {
    pg_type.name().starts_with('_')
}

/// A binary array parameter as the array's text (`{1,2}`, `{"a",NULL}`); the message says
/// what is wrong with bytes that are not one this reads.
pub fn binary_array_text(bytes: &[u8]) -> Result<String, String> {
    let mut reader = Reader { bytes, at: 0 };
    let dimensions = reader.int()?;
    let _has_nulls = reader.int()?;
    let element = reader.int()?;
    if dimensions == 0 {
        return Ok("{}".to_string());
    }
    if dimensions != 1 {
        return Err(format!(
            "an array of {dimensions} dimensions (only one-dimensional arrays are lists)"
        ));
    }
    let length = reader.int()?;
    let _lower_bound = reader.int()?;
    let element_type = u32::try_from(element)
        .ok()
        .and_then(Type::from_oid)
        .ok_or_else(|| format!("an array of elements of type oid {element}"))?;
    let mut text = String::from("{");
    for i in 0..length {
        if i > 0 {
            text.push(',');
        }
        let size = reader.int()?;
        if size == -1 {
            text.push_str("NULL");
            continue;
        }
        let value = reader.take(usize::try_from(size).map_err(|_| "a negative length")?)?;
        element_text(&element_type, value, &mut text)?;
    }
    if reader.at != bytes.len() {
        return Err("bytes past the array's last element".to_string());
    }
    text.push('}');
    Ok(text)
}

/// One element, appended to `text` as the array's text writes it.
fn element_text(element: &Type, value: &[u8], text: &mut String) -> Result<(), String> {
    let fixed = |n: usize| -> Result<&[u8], String> {
        (value.len() == n)
            .then_some(value)
            .ok_or_else(|| format!("a {element} element of {} bytes", value.len()))
    };
    match *element {
        Type::BOOL => text.push(if fixed(1)?[0] != 0 { 't' } else { 'f' }),
        Type::INT2 => {
            let b = fixed(2)?;
            text.push_str(&i16::from_be_bytes([b[0], b[1]]).to_string());
        }
        Type::INT4 => {
            let b = fixed(4)?;
            text.push_str(&i32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_string());
        }
        Type::OID => {
            let b = fixed(4)?;
            text.push_str(&u32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_string());
        }
        Type::INT8 => {
            let b: [u8; 8] = fixed(8)?.try_into().map_err(|_| "an int8 element")?;
            text.push_str(&i64::from_be_bytes(b).to_string());
        }
        Type::FLOAT4 => {
            let b = fixed(4)?;
            text.push_str(&f32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_string());
        }
        Type::FLOAT8 => {
            let b: [u8; 8] = fixed(8)?.try_into().map_err(|_| "a float8 element")?;
            text.push_str(&f64::from_be_bytes(b).to_string());
        }
        Type::NUMERIC => {
            text.push_str(&rowdex::numeric_text(value).ok_or("a numeric element that is not one")?)
        }
        // An instant, counted from 2000-01-01 UTC, written with its offset.
        Type::TIMESTAMPTZ => {
            let b: [u8; 8] = fixed(8)?.try_into().map_err(|_| "a timestamptz element")?;
            let micros = i64::from_be_bytes(b)
                .checked_add(POSTGRES_EPOCH_MICROS)
                .ok_or("a timestamptz element out of range")?;
            text.push('"');
            text.push_str(&rowdex::time_zone::TimeZone::utc().format_timestamptz(micros));
            text.push('"');
        }
        Type::UUID => {
            let bytes: [u8; 16] = fixed(16)?.try_into().map_err(|_| "a uuid element")?;
            text.push('"');
            text.push_str(&rowdex_codec::format_uuid(&bytes));
            text.push('"');
        }
        // A jsonb's send format is a version byte (1) and its text.
        Type::JSONB => match value.split_first() {
            Some((1, rest)) => quoted_text(rest, text)?,
            _ => return Err("a jsonb element of an unknown format version".to_string()),
        },
        Type::BYTEA => {
            let hex = rowdex_codec::format_bytea(value);
            quoted_text(hex.as_bytes(), text)?;
        }
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON => {
            quoted_text(value, text)?
        }
        _ => {
            return Err(format!(
                "binary arrays of {element} are not supported (send it as text)"
            ));
        }
    }
    Ok(())
}

/// Big-endian words read off a byte slice.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len());
        let end = end.ok_or("the array ends early")?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn int(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// A text element (UTF-8 bytes), appended to `text` double-quoted with its quotes and
/// backslashes escaped, as an array's text writes it.
fn quoted_text(value: &[u8], text: &mut String) -> Result<(), String> {
    let value = std::str::from_utf8(value).map_err(|_| "a text element that is not UTF-8")?;
    text.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            text.push('\\');
        }
        text.push(c);
    }
    text.push('"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(element: Type, values: &[Option<&[u8]>]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for word in [1i32, 0, element.oid() as i32, values.len() as i32, 1] {
            bytes.extend_from_slice(&word.to_be_bytes());
        }
        for value in values {
            match value {
                Some(v) => {
                    bytes.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    bytes.extend_from_slice(v);
                }
                None => bytes.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        bytes
    }

    #[test]
    fn binary_arrays_read_as_their_text() {
        let ints = array(
            Type::INT4,
            &[
                Some(&2i32.to_be_bytes()),
                None,
                Some(&(-3i32).to_be_bytes()),
            ],
        );
        assert_eq!(binary_array_text(&ints), Ok("{2,NULL,-3}".to_string()));
        let texts = array(Type::TEXT, &[Some(b"a \"b\""), Some(b"1")]);
        assert_eq!(
            binary_array_text(&texts),
            Ok(r#"{"a \"b\"","1"}"#.to_string())
        );
        let mut empty = Vec::new();
        for word in [0i32, 0, 23] {
            empty.extend_from_slice(&word.to_be_bytes());
        }
        assert_eq!(binary_array_text(&empty), Ok("{}".to_string()));
        assert!(binary_array_text(&ints[..ints.len() - 2]).is_err());
        assert_eq!(array_of(&Type::INT4), Some(Type::INT4_ARRAY));
        assert!(is_array(&Type::TEXT_ARRAY) && !is_array(&Type::TEXT));
    }
}
