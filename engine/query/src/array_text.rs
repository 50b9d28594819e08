//! The text of array values in PostgreSQL's form (`{1,2,NULL}`, `{a,"b c"}`, `{t,f}`): one
//! element made canonical for its type, an array written from its elements' texts (quoted
//! where PostgreSQL quotes), and the text of an Arrow list value, which the REPL, COPY and the
//! stored form all write (`values::arrays` reads the text back).

use datafusion::arrow::array::{
    Array, BinaryArray, BooleanArray, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType as ArrowType, TimeUnit};
use rowdex_catalog::ArrayElement;
use rowdex_codec::{
    decimal_from_text, format_bytea, format_date, format_decimal, format_uuid, json, parse_bytea,
    parse_date, parse_timestamp, parse_uuid,
};

use crate::error::{Error, Result};
use crate::time_zone::{TimeZone, postgres_timestamp, statement_time_zone};

/// PostgreSQL's name of the element type, for messages (`integer`, `text`).
pub fn element_type_name(element: ArrayElement) -> &'static str {
    match element {
        ArrayElement::Bool => "boolean",
        ArrayElement::Int2 => "smallint",
        ArrayElement::Int4 => "integer",
        ArrayElement::Int8 => "bigint",
        ArrayElement::Float4 => "real",
        ArrayElement::Float8 => "double precision",
        ArrayElement::Text => "text",
        ArrayElement::Varchar => "character varying",
        ArrayElement::Date => "date",
        ArrayElement::Timestamp => "timestamp without time zone",
        ArrayElement::TimestampTz => "timestamp with time zone",
        ArrayElement::Uuid => "uuid",
        ArrayElement::Json => "json",
        ArrayElement::Jsonb => "jsonb",
        ArrayElement::Bytea => "bytea",
        ArrayElement::Numeric { .. } => "numeric",
    }
}

/// The element type an Arrow element type reads as (a list DataFusion computed).
pub fn element_of_arrow(data_type: &ArrowType) -> ArrayElement {
    match data_type {
        ArrowType::Boolean => ArrayElement::Bool,
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::UInt8 => ArrayElement::Int2,
        ArrowType::Int32 | ArrowType::UInt16 => ArrayElement::Int4,
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::UInt64 => ArrayElement::Int8,
        ArrowType::Float16 | ArrowType::Float32 => ArrayElement::Float4,
        ArrowType::Float64 => ArrayElement::Float8,
        ArrowType::Decimal128(precision, scale) => ArrayElement::Numeric {
            precision: *precision,
            scale: *scale,
        },
        ArrowType::Date32 | ArrowType::Date64 => ArrayElement::Date,
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => ArrayElement::Bytea,
        ArrowType::Timestamp(_, Some(_)) => ArrayElement::TimestampTz,
        ArrowType::Timestamp(_, None) => ArrayElement::Timestamp,
        _ => ArrayElement::Text,
    }
}

/// One element's canonical text.
pub fn canonical_element(value: &str, element: ArrayElement) -> Result<String> {
    let bad = || Error::InvalidTextRepresentation {
        type_name: element_type_name(element),
        value: value.to_string(),
    };
    let trimmed = value.trim();
    Ok(match element {
        ArrayElement::Text | ArrayElement::Varchar => value.to_string(),
        ArrayElement::Bool => match trimmed.to_ascii_lowercase().as_str() {
            "t" | "true" | "yes" | "on" | "1" | "y" => "t".to_string(),
            "f" | "false" | "no" | "off" | "0" | "n" => "f".to_string(),
            _ => return Err(bad()),
        },
        ArrayElement::Int2 | ArrayElement::Int4 | ArrayElement::Int8 => {
            let number: i64 = trimmed.parse().map_err(|_| bad())?;
            let fits = match element {
                ArrayElement::Int2 => i16::try_from(number).is_ok(),
                ArrayElement::Int4 => i32::try_from(number).is_ok(),
                _ => true,
            };
            if !fits {
                return Err(bad());
            }
            number.to_string()
        }
        ArrayElement::Float4 | ArrayElement::Float8 => {
            let number: f64 = match trimmed.to_ascii_lowercase().as_str() {
                "nan" => f64::NAN,
                "infinity" | "+infinity" | "inf" => f64::INFINITY,
                "-infinity" | "-inf" => f64::NEG_INFINITY,
                _ => trimmed.parse().map_err(|_| bad())?,
            };
            float_text(number, element == ArrayElement::Float4)
        }
        ArrayElement::Date => format_date(parse_date(trimmed).ok_or_else(bad)?),
        ArrayElement::Timestamp => postgres_timestamp(parse_timestamp(trimmed).ok_or_else(bad)?),
        // An instant, read in the statement's zone and kept in UTC.
        ArrayElement::TimestampTz => TimeZone::utc().format_timestamptz(
            statement_time_zone()
                .parse_timestamptz(trimmed)
                .ok_or_else(bad)?,
        ),
        ArrayElement::Uuid => format_uuid(&parse_uuid(trimmed).ok_or_else(bad)?),
        ArrayElement::Jsonb => json::Jsonb::parse(value)?.to_text(),
        // Checked, and kept as written.
        ArrayElement::Json => {
            json::parse_json(value)?;
            value.to_string()
        }
        ArrayElement::Bytea => format_bytea(&parse_bytea(value).ok_or_else(bad)?),
        // Rounded to the scale (half away from zero), within the precision.
        ArrayElement::Numeric { precision, scale } => {
            let units = decimal_from_text(trimmed, scale).ok_or_else(bad)?;
            let limit = 10i128
                .checked_pow(u32::from(precision))
                .unwrap_or(i128::MAX);
            if units.unsigned_abs() >= limit.unsigned_abs() {
                return Err(Error::NumericOverflow { precision, scale });
            }
            format_decimal(units, scale)
        }
    })
}

/// A float as PostgreSQL writes it (shortest text that reads back; `NaN`, `Infinity`).
fn float_text(number: f64, single: bool) -> String {
    if number.is_nan() {
        return "NaN".to_string();
    }
    if number.is_infinite() {
        return if number > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .to_string();
    }
    if single {
        format!("{}", number as f32)
    } else {
        format!("{number}")
    }
}

/// An array's text from its elements' texts (None: NULL): quoted where PostgreSQL quotes (an
/// empty element, `NULL`, braces, quotes, commas, backslashes, white space).
pub fn write_array<'a>(elements: impl Iterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, element) in elements.enumerate() {
        if i > 0 {
            out.push(',');
        }
        match element {
            None => out.push_str("NULL"),
            Some(text) => {
                let quote = text.is_empty()
                    || text.eq_ignore_ascii_case("null")
                    || text
                        .chars()
                        .any(|c| matches!(c, '{' | '}' | '"' | ',' | '\\') || c.is_whitespace());
                if quote {
                    out.push('"');
                    for c in text.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                } else {
                    out.push_str(text);
                }
            }
        }
    }
    out.push('}');
    out
}

/// The canonical text of one list value (`values`: its elements), its element type read from
/// the Arrow type (a list DataFusion computed, an `ARRAY[...]`, an `array_agg`).
pub fn array_text_of_list(values: &dyn Array) -> Result<String> {
    let element = element_of_arrow(values.data_type());
    let texts: Vec<Option<String>> = match values.data_type() {
        ArrowType::Boolean => {
            let flags = cast(values, &ArrowType::Boolean)?;
            flags
                .as_any()
                .downcast_ref::<BooleanArray>()
                .map(|flags| {
                    flags
                        .iter()
                        .map(|f| f.map(|f| if f { "t" } else { "f" }.to_string()))
                        .collect()
                })
                .unwrap_or_default()
        }
        // Instants in the zone the list's type carries (UTC stored, the session's in a
        // result): already canonical, which reading them again would lose the zone of.
        ArrowType::Timestamp(_, Some(zone)) => {
            let zone = TimeZone::of_arrow(zone).unwrap_or_default();
            let micros = cast(values, &ArrowType::Timestamp(TimeUnit::Microsecond, None))?;
            let texts: Vec<Option<String>> = micros
                .as_any()
                .downcast_ref::<TimestampMicrosecondArray>()
                .map(|micros| {
                    micros
                        .iter()
                        .map(|m| m.map(|m| zone.format_timestamptz(m)))
                        .collect()
                })
                .unwrap_or_default();
            return Ok(write_array(texts.iter().map(Option::as_deref)));
        }
        ArrowType::Binary => values
            .as_any()
            .downcast_ref::<BinaryArray>()
            .map(|bytes| bytes.iter().map(|b| b.map(format_bytea)).collect())
            .unwrap_or_default(),
        ArrowType::Timestamp(..) => {
            let micros = cast(values, &ArrowType::Timestamp(TimeUnit::Microsecond, None))?;
            micros
                .as_any()
                .downcast_ref::<TimestampMicrosecondArray>()
                .map(|micros| micros.iter().map(|m| m.map(postgres_timestamp)).collect())
                .unwrap_or_default()
        }
        _ => {
            let texts = cast(values, &ArrowType::Utf8)?;
            texts
                .as_any()
                .downcast_ref::<StringArray>()
                .map(|texts| texts.iter().map(|t| t.map(str::to_string)).collect())
                .unwrap_or_default()
        }
    };
    let canonical = texts
        .iter()
        .map(|text| match text {
            None => Ok(None),
            Some(text) => canonical_element(text, element).map(Some),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(write_array(canonical.iter().map(Option::as_deref)))
}
