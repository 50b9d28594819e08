//! SQL values as JSON, as PostgreSQL's `to_json` writes them: numbers and booleans as
//! themselves, text as a JSON string, a `json` or `jsonb` value as the JSON it is, dates and
//! timestamps as ISO 8601 strings (`"2024-05-01T10:00:00"`), bytes as `"\\x..."`, arrays as
//! JSON arrays, NULL as `null`. Also the text of a value used as a key or a path.

use datafusion::arrow::array::Array;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use rowdex_codec::json::write_json_string;
use rowdex_codec::{format_date, format_decimal, format_timestamp};

use super::kind::JsonKind;
use crate::error::Error;
use crate::sql::array_lists::{Element, array_elements};

/// `value` (of `field`) as JSON text.
pub(crate) fn json_text(value: &ScalarValue, field: &Field) -> DfResult<String> {
    if value.is_null() {
        return Ok("null".to_string());
    }
    if JsonKind::of_field(field).is_some()
        && let Some(Some(text)) = value.try_as_str()
    {
        return Ok(text.to_string());
    }
    let quoted = |text: &str| {
        let mut out = String::with_capacity(text.len() + 2);
        write_json_string(&mut out, text);
        out
    };
    Ok(match value {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Int8(Some(v)) => v.to_string(),
        ScalarValue::Int16(Some(v)) => v.to_string(),
        ScalarValue::Int32(Some(v)) => v.to_string(),
        ScalarValue::Int64(Some(v)) => v.to_string(),
        ScalarValue::UInt8(Some(v)) => v.to_string(),
        ScalarValue::UInt16(Some(v)) => v.to_string(),
        ScalarValue::UInt32(Some(v)) => v.to_string(),
        ScalarValue::UInt64(Some(v)) => v.to_string(),
        ScalarValue::Float32(Some(v)) => float_json(f64::from(*v)),
        ScalarValue::Float64(Some(v)) => float_json(*v),
        ScalarValue::Decimal128(Some(v), _, scale) => format_decimal(*v, *scale),
        ScalarValue::Date32(Some(days)) => quoted(&format_date(*days)),
        ScalarValue::TimestampSecond(Some(v), _) => quoted(&iso_timestamp(&format_timestamp(
            v.saturating_mul(1_000_000),
        ))),
        ScalarValue::TimestampMillisecond(Some(v), _) => {
            quoted(&iso_timestamp(&format_timestamp(v.saturating_mul(1_000))))
        }
        ScalarValue::TimestampMicrosecond(Some(v), _) => {
            quoted(&iso_timestamp(&format_timestamp(*v)))
        }
        ScalarValue::TimestampNanosecond(Some(v), _) => {
            quoted(&iso_timestamp(&format_timestamp(v.div_euclid(1_000))))
        }
        ScalarValue::Binary(Some(bytes)) | ScalarValue::LargeBinary(Some(bytes)) => {
            let mut hex = String::with_capacity(2 + bytes.len() * 2);
            hex.push_str("\\x");
            for byte in bytes {
                hex.push_str(&format!("{byte:02x}"));
            }
            quoted(&hex)
        }
        ScalarValue::List(list) => {
            let element = match field.data_type() {
                DataType::List(element) => element.as_ref().clone(),
                _ => Field::new("item", list.value_type(), true),
            };
            let values = list.value(0);
            let mut items = Vec::with_capacity(values.len());
            for i in 0..values.len() {
                items.push(json_text(
                    &ScalarValue::try_from_array(&values, i)?,
                    &element,
                )?);
            }
            format!("[{}]", items.join(","))
        }
        other => match other.try_as_str() {
            Some(Some(text)) => quoted(text),
            _ => quoted(&display_text(other)?),
        },
    })
}

/// `value`'s text where it stands for a key, a path step or text to read: a string as it
/// is, anything else as its SQL text.
pub(crate) fn key_text(value: &ScalarValue) -> DfResult<String> {
    if let Some(Some(text)) = value.try_as_str() {
        return Ok(text.to_string());
    }
    display_text(value)
}

/// The steps of a path given as a text array: its text (`'{a,1}'`) or a list.
pub(crate) fn path_steps(value: &ScalarValue) -> DfResult<Vec<String>> {
    if let ScalarValue::List(list) = value {
        let values = list.value(0);
        return (0..values.len())
            .map(|i| {
                let step = ScalarValue::try_from_array(&values, i)?;
                if step.is_null() {
                    return Err(null_path_element());
                }
                display_text(&step).map(|text| match step.try_as_str() {
                    Some(Some(s)) => s.to_string(),
                    _ => text,
                })
            })
            .collect();
    }
    let text = key_text(value)?;
    let Some(elements) = array_elements(&text) else {
        return Err(Error::InvalidTextRepresentation {
            type_name: "text[]",
            value: text,
        }
        .into());
    };
    elements
        .into_iter()
        .map(|element| match element {
            Element::Null => Err(null_path_element()),
            Element::Quoted(s) | Element::Bare(s) => Ok(s),
        })
        .collect()
}

fn null_path_element() -> datafusion::error::DataFusionError {
    Error::BadFunctionArgument {
        function: "jsonb path",
        reason: "a path element is NULL".to_string(),
    }
    .into()
}

/// A value's text as a cast to text gives it.
fn display_text(value: &ScalarValue) -> DfResult<String> {
    let array = value.to_array()?;
    let text = cast(&array, &DataType::Utf8)?;
    Ok(match ScalarValue::try_from_array(&text, 0)? {
        ScalarValue::Utf8(Some(s)) => s,
        _ => String::new(),
    })
}

/// A double as JSON: its shortest text, or a string for what JSON has no number for.
fn float_json(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "\"NaN\"".to_string()
    } else if v > 0.0 {
        "\"Infinity\"".to_string()
    } else {
        "\"-Infinity\"".to_string()
    }
}

/// `2024-05-01 10:00:00.500000` as ISO 8601 with the fraction's trailing zeros dropped:
/// `2024-05-01T10:00:00.5`.
fn iso_timestamp(text: &str) -> String {
    let text = text.replacen(' ', "T", 1);
    match text.split_once('.') {
        Some((whole, fraction)) => format!("{whole}.{}", fraction.trim_end_matches('0')),
        None => text,
    }
}
