//! Text rendering of result values, shared by the CLI and the test runner.

use datafusion::arrow::array::Array;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

/// The text of one value, or None for NULL. For a whole column, [`column_texts`] builds its
/// formatter once.
pub fn cell_text(array: &dyn Array, row: usize) -> Option<String> {
    if array.is_null(row) {
        return None;
    }
    match ArrayFormatter::try_new(array, &options()) {
        Ok(formatter) => Some(formatter.value(row).to_string()),
        Err(_) => Some(String::from("?")),
    }
}

/// The text of every value of a column (None for NULL), as [`cell_text`] gives it.
pub fn column_texts(array: &dyn Array) -> Vec<Option<String>> {
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
