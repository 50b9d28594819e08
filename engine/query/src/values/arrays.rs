//! Array values (`INTEGER[]`, `TEXT[]`): a value is kept as its text in PostgreSQL's form,
//! canonical for its element type (`{1,2,NULL}`, `{a,"b c"}`, `{t,f}`), and travels through
//! DataFusion as an Arrow list of the element's type, so DataFusion's array functions
//! (`array_length`, `unnest`, `array_agg`, `@>`, `= ANY`) apply. This file turns one form into
//! the other: text read and made canonical, lists built from texts, texts written from lists.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, ListArray, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, TimeUnit};
use rowdex_catalog::ArrayElement;
use rowdex_codec::parse_bytea;

use crate::array_text::{canonical_element, write_array};
use crate::error::{Error, Result};
use crate::sql::array_lists::{Element, array_elements};
use crate::time_zone::{STORED_TIME_ZONE, TimeZone};

/// The Arrow type an element travels as.
pub fn element_arrow_type(element: ArrayElement) -> ArrowType {
    match element {
        ArrayElement::Bool => ArrowType::Boolean,
        ArrayElement::Int2 => ArrowType::Int16,
        ArrayElement::Int4 => ArrowType::Int32,
        ArrayElement::Int8 => ArrowType::Int64,
        ArrayElement::Float4 => ArrowType::Float32,
        ArrayElement::Float8 => ArrowType::Float64,
        // A UUID or a jsonb as its canonical text; the column's field says which.
        ArrayElement::Text
        | ArrayElement::Varchar
        | ArrayElement::Uuid
        | ArrayElement::Json
        | ArrayElement::Jsonb => ArrowType::Utf8,
        ArrayElement::Bytea => ArrowType::Binary,
        ArrayElement::Date => ArrowType::Date32,
        ArrayElement::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        ArrayElement::TimestampTz => {
            ArrowType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(STORED_TIME_ZONE)))
        }
        ArrayElement::Numeric { precision, scale } => ArrowType::Decimal128(precision, scale),
    }
}

/// The Arrow type of an array of `element`s.
pub fn list_type(element: ArrayElement) -> ArrowType {
    ArrowType::List(Arc::new(Field::new_list_field(
        element_arrow_type(element),
        true,
    )))
}

/// `text` (an array as PostgreSQL reads one) in the canonical form for `element`s: 22P02 for
/// text that is no one-dimensional array, or an element that is no `element`.
pub fn canonical_array_text(text: &str, element: ArrayElement) -> Result<String> {
    let elements = array_elements(text).ok_or_else(|| Error::MalformedArray {
        value: text.to_string(),
    })?;
    let canonical = elements
        .iter()
        .map(|item| match item {
            Element::Null => Ok(None),
            Element::Quoted(value) | Element::Bare(value) => {
                canonical_element(value, element).map(Some)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(write_array(canonical.iter().map(Option::as_deref)))
}

/// The Arrow list of `element`s whose values are `texts` (canonical arrays; None: NULL).
pub fn list_array<'a>(
    element: ArrayElement,
    texts: impl IntoIterator<Item = Option<&'a str>>,
) -> Result<ArrayRef> {
    let mut offsets = vec![0i32];
    let mut valid = Vec::new();
    let mut items: Vec<Option<String>> = Vec::new();
    for text in texts {
        match text {
            None => valid.push(false),
            Some(text) => {
                let elements = array_elements(text).ok_or_else(|| Error::MalformedArray {
                    value: text.to_string(),
                })?;
                for item in elements {
                    items.push(match item {
                        Element::Null => None,
                        Element::Quoted(value) | Element::Bare(value) => Some(value),
                    });
                }
                valid.push(true);
            }
        }
        let end = i32::try_from(items.len()).map_err(|_| Error::Unsupported {
            what: "an array column of more than 2^31 elements in one batch".to_string(),
        })?;
        offsets.push(end);
    }
    let values: ArrayRef = match element {
        ArrayElement::Bool => Arc::new(
            items
                .iter()
                .map(|item| item.as_deref().map(|t| t == "t"))
                .collect::<BooleanArray>(),
        ),
        ArrayElement::Text | ArrayElement::Varchar => Arc::new(StringArray::from(items)),
        // Stored as hex text (`\x0102`).
        ArrayElement::Bytea => Arc::new(
            items
                .iter()
                .map(|item| match item {
                    None => Ok(None),
                    Some(text) => parse_bytea(text).map(Some).ok_or_else(|| {
                        Error::InvalidTextRepresentation {
                            type_name: "bytea",
                            value: text.clone(),
                        }
                    }),
                })
                .collect::<Result<BinaryArray>>()?,
        ),
        // Stored in UTC with their offset (`+00`), which Arrow's parser does not read.
        ArrayElement::TimestampTz => {
            let utc = TimeZone::utc();
            let micros = items
                .iter()
                .map(|item| match item {
                    None => Ok(None),
                    Some(text) => utc.parse_timestamptz(text).map(Some).ok_or_else(|| {
                        Error::InvalidTextRepresentation {
                            type_name: "timestamp with time zone",
                            value: text.clone(),
                        }
                    }),
                })
                .collect::<Result<TimestampMicrosecondArray>>()?;
            Arc::new(micros.with_timezone(STORED_TIME_ZONE))
        }
        other => cast(
            &(Arc::new(StringArray::from(items)) as ArrayRef),
            &element_arrow_type(other),
        )?,
    };
    let field = Arc::new(Field::new_list_field(element_arrow_type(element), true));
    let nulls = NullBuffer::from(valid);
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        values,
        Some(nulls),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array_text::array_text_of_list;
    use datafusion::arrow::array::Array;
    use proptest::prelude::*;

    #[test]
    fn text_is_made_canonical_for_its_elements() {
        let cases = [
            (" { 1 , 002,NULL, -3 }", ArrayElement::Int4, "{1,2,NULL,-3}"),
            ("{true, off, T}", ArrayElement::Bool, "{t,f,t}"),
            (
                r#"{a,"b c","",NULL,"NULL","x\"y"}"#,
                ArrayElement::Text,
                r#"{a,"b c","",NULL,"NULL","x\"y"}"#,
            ),
            ("{1.50, 2e2, NaN}", ArrayElement::Float8, "{1.5,200,NaN}"),
            ("{2024-01-31}", ArrayElement::Date, "{2024-01-31}"),
            (
                "{\"2024-01-31 10:00\"}",
                ArrayElement::Timestamp,
                "{\"2024-01-31 10:00:00\"}",
            ),
            ("{}", ArrayElement::Int8, "{}"),
        ];
        for (text, element, canonical) in cases {
            assert_eq!(
                canonical_array_text(text, element).ok().as_deref(),
                Some(canonical),
                "{text}"
            );
        }
        assert!(canonical_array_text("{1,x}", ArrayElement::Int4).is_err());
        assert!(canonical_array_text("{70000}", ArrayElement::Int2).is_err());
        assert!(canonical_array_text("{{1},{2}}", ArrayElement::Int4).is_err());
        assert!(canonical_array_text("1,2", ArrayElement::Int4).is_err());
    }

    #[test]
    fn lists_and_texts_make_each_other() -> Result<()> {
        let texts = [Some("{1,NULL,3}"), None, Some("{}")];
        let list = list_array(ArrayElement::Int4, texts)?;
        assert_eq!(list.data_type(), &list_type(ArrayElement::Int4));
        let list = list
            .as_any()
            .downcast_ref::<ListArray>()
            .ok_or(Error::Unsupported {
                what: "a list".into(),
            })?;
        assert!(list.is_null(1));
        assert_eq!(array_text_of_list(list.value(0).as_ref())?, "{1,NULL,3}");
        assert_eq!(array_text_of_list(list.value(2).as_ref())?, "{}");
        let words = list_array(ArrayElement::Text, [Some(r#"{"a b",c}"#)])?;
        let words = words
            .as_any()
            .downcast_ref::<ListArray>()
            .ok_or(Error::Unsupported {
                what: "a list".into(),
            })?;
        assert_eq!(array_text_of_list(words.value(0).as_ref())?, r#"{"a b",c}"#);
        Ok(())
    }

    proptest! {
        /// Any elements written as an array's text read back as the same elements, and the
        /// canonical text is a fixed point.
        #[test]
        fn written_text_reads_back(elements in proptest::collection::vec(
            proptest::option::of("[ -~]{0,6}|[^\\u{0}]{0,3}"), 0..6,
        )) {
            let text = write_array(elements.iter().map(Option::as_deref));
            let canonical = canonical_array_text(&text, ArrayElement::Text);
            prop_assert_eq!(canonical.as_deref().ok(), Some(text.as_str()), "{}", text);
            let list = list_array(ArrayElement::Text, [Some(text.as_str())]);
            let list = list.expect("a list");
            let list = list.as_any().downcast_ref::<ListArray>().expect("a list array");
            prop_assert_eq!(array_text_of_list(list.value(0).as_ref()).ok(), Some(text.clone()));
        }

        /// Arbitrary text is an array or an error, never a panic, and what reads is canonical.
        #[test]
        fn any_text_reads_or_is_refused(text in "\\PC{0,24}", which in 0usize..ArrayElement::ALL.len()) {
            let element = ArrayElement::ALL[which];
            if let Ok(canonical) = canonical_array_text(&text, element) {
                prop_assert_eq!(canonical_array_text(&canonical, element).ok(), Some(canonical));
            }
        }
    }
}
