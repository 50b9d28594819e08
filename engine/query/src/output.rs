//! What a statement produces ([`Output`]), and the text result sets that SHOW, EXPLAIN and the
//! other commands build.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;

use crate::copy_data::stream::{CopyIn, CopyOut};
use crate::error::Result;

/// What one statement produced.
#[derive(Debug)]
pub enum Output {
    /// A result set.
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// Rows written by INSERT, UPDATE, DELETE or UPSERT.
    Affected { rows: u64 },
    /// A DDL statement finished.
    Done,
    /// `COPY ... FROM STDIN` started and waits for its data: send it through the handle.
    CopyIn(CopyIn),
    /// What `COPY ... TO STDOUT` wrote.
    CopyOut(CopyOut),
}

impl Output {
    /// The number of rows in a result set (0 for other outputs).
    pub fn row_count(&self) -> usize {
        match self {
            Output::Rows { batches, .. } => batches.iter().map(RecordBatch::num_rows).sum(),
            _ => 0,
        }
    }

    /// A one-column text result.
    pub(crate) fn text_rows(column: &str, lines: Vec<String>) -> Output {
        let schema = Arc::new(Schema::new(vec![Field::new(
            column,
            ArrowType::Utf8,
            false,
        )]));
        let array: ArrayRef = Arc::new(StringArray::from(lines));
        match RecordBatch::try_new(schema.clone(), vec![array]) {
            Ok(batch) => Output::Rows {
                schema,
                batches: vec![batch],
            },
            Err(_) => Output::Rows {
                schema,
                batches: Vec::new(),
            },
        }
    }

    /// Rows of text under the named columns, as a result set.
    pub(crate) fn text_table<const N: usize>(
        columns: [&str; N],
        rows: &[[String; N]],
    ) -> Result<Output> {
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|c| Field::new(*c, ArrowType::Utf8, false))
                .collect::<Vec<_>>(),
        ));
        let arrays: Vec<ArrayRef> = (0..N)
            .map(|i| {
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r[i].as_str()),
                )) as ArrayRef
            })
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), arrays)?;
        Ok(Output::Rows {
            schema,
            batches: vec![batch],
        })
    }
}
