//! Replacing some columns of a result batch, just before it is encoded, by the values the
//! encoder must write as they are (a UUID's 16 bytes, a timestamp's PostgreSQL text).

use std::sync::Arc;

use rowdex::arrow::array::ArrayRef;
use rowdex::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use rowdex::arrow::error::ArrowError;
use rowdex::arrow::record_batch::RecordBatch;

/// `batch` with every column `chosen` picks (by position) replaced by `convert`'s array, of
/// type `to`; the batch itself when none is picked.
pub fn replace_columns(
    batch: RecordBatch,
    chosen: impl Fn(usize) -> bool,
    to: &ArrowType,
    convert: impl Fn(usize, &ArrayRef) -> Result<ArrayRef, ArrowError>,
) -> Result<RecordBatch, ArrowError> {
    if !(0..batch.num_columns()).any(&chosen) {
        return Ok(batch);
    }
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(batch.num_columns());
    let mut fields: Vec<Field> = Vec::with_capacity(batch.num_columns());
    for (i, (column, field)) in batch.columns().iter().zip(schema.fields()).enumerate() {
        if chosen(i) {
            columns.push(convert(i, column)?);
            fields.push(field.as_ref().clone().with_data_type(to.clone()));
        } else {
            columns.push(column.clone());
            fields.push(field.as_ref().clone());
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}
