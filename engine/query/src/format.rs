//! Text rendering of result values, shared by the CLI and the test runner.

use datafusion::arrow::array::Array;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

/// The text of one value, or None for NULL.
pub fn cell_text(array: &dyn Array, row: usize) -> Option<String> {
    if array.is_null(row) {
        return None;
    }
    // SQL-style timestamps (space, not ISO 'T'); the fraction only when there is one.
    let options = FormatOptions::default().with_timestamp_format(Some("%Y-%m-%d %H:%M:%S%.f"));
    match ArrayFormatter::try_new(array, &options) {
        Ok(formatter) => Some(formatter.value(row).to_string()),
        Err(_) => Some(String::from("?")),
    }
}
