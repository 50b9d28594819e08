//! Text rendering of result values, shared by the CLI and the test runner.

use datafusion::arrow::array::{Array, ListArray, TimestampMicrosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::array_text::array_text_of_list;
use crate::time_zone::{TimeZone, postgres_timestamp};

/// The text of one value, or None for NULL. For a whole column, [`column_texts`] builds its
/// formatter once.
pub fn cell_text(array: &dyn Array, row: usize) -> Option<String> {
    if array.is_null(row) {
        return None;
    }
    if let Some(texts) = timestamp_texts(array.slice(row, 1).as_ref())
        .or_else(|| list_texts(array.slice(row, 1).as_ref()))
    {
        return texts.into_iter().next().flatten();
    }
    match ArrayFormatter::try_new(array, &options()) {
        Ok(formatter) => Some(formatter.value(row).to_string()),
        Err(_) => Some(String::from("?")),
    }
}

/// The text of every value of a column (None for NULL), as [`cell_text`] gives it.
pub fn column_texts(array: &dyn Array) -> Vec<Option<String>> {
    if let Some(texts) = timestamp_texts(array) {
        return texts;
    }
    if let Some(texts) = list_texts(array) {
        return texts;
    }
    let options = options();
    let formatter = ArrayFormatter::try_new(array, &options).ok();
    (0..array.len())
        .map(|row| {
            if array.is_null(row) {
                return None;
            }
            Some(match &formatter {
                Some(formatter) => formatter.value(row).to_string(),
                None => String::from("?"),
            })
        })
        .collect()
}

/// The texts of a timestamp column as PostgreSQL writes them (`2024-01-15 10:00:00.25`), a
/// TIMESTAMPTZ's in the zone its type carries (the session's) with its offset
/// (`2024-01-15 11:00:00+01`); None for a column of another type.
pub fn timestamp_texts(array: &dyn Array) -> Option<Vec<Option<String>>> {
    let DataType::Timestamp(_, zone) = array.data_type() else {
        return None;
    };
    let zone = match zone {
        Some(zone) => Some(TimeZone::of_arrow(zone)?),
        None => None,
    };
    let micros = cast(array, &DataType::Timestamp(TimeUnit::Microsecond, None)).ok()?;
    let micros = micros
        .as_any()
        .downcast_ref::<TimestampMicrosecondArray>()?;
    Some(
        micros
            .iter()
            .map(|value| {
                value.map(|micros| match &zone {
                    Some(zone) => zone.format_timestamptz(micros),
                    None => postgres_timestamp(micros),
                })
            })
            .collect(),
    )
}

/// The texts of a list column as PostgreSQL writes arrays (`{1,2}`, `{a,"b c"}`); None for a
/// column of another type.
pub fn list_texts(array: &dyn Array) -> Option<Vec<Option<String>>> {
    let lists = array.as_any().downcast_ref::<ListArray>()?;
    Some(
        (0..lists.len())
            .map(|row| {
                if lists.is_null(row) {
                    return None;
                }
                array_text_of_list(lists.value(row).as_ref()).ok()
            })
            .collect(),
    )
}

/// SQL-style timestamps (space, not ISO 'T'); the fraction only when there is one.
fn options() -> FormatOptions<'static> {
    FormatOptions::default().with_timestamp_format(Some("%Y-%m-%d %H:%M:%S%.f"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};

    use super::*;

    #[test]
    fn a_column_reads_like_its_cells() {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), None, Some(-30)])),
            Arc::new(Float64Array::from(vec![Some(0.5), Some(2.0), None])),
            Arc::new(StringArray::from(vec![None, Some("x"), Some("")])),
        ];
        for column in &columns {
            let cells: Vec<Option<String>> = (0..column.len())
                .map(|row| cell_text(column, row))
                .collect();
            assert_eq!(column_texts(column), cells);
        }
        assert_eq!(
            column_texts(&columns[0]),
            [Some("1".to_string()), None, Some("-30".to_string())]
        );
    }
}
