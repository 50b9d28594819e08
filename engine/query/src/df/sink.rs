//! `INSERT INTO` a rowdex table planned by someone else's DataFusion context: the
//! `TableProvider::insert_into` sink. The rows go through the same writer as rowdex's own
//! INSERT, so index entries are written with them and the statement is all-or-nothing.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::sink::DataSink;
use datafusion::error::Result as DfResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;
use rowdex_catalog::TriggerEvent;
use rowdex_codec::Datum;

use crate::db::DbState;
use crate::db::statement_report::note_retry;
use crate::error::{Error, Result};
use crate::values::{datum_from_array, full_row};
use crate::write::WRITE_ATTEMPTS;
use crate::write::rows::{OnExisting, write_rows};

/// Appends rows to one table; `columns` are the table positions behind the input's fields.
pub(crate) struct RowdexSink {
    pub(crate) db: Arc<DbState>,
    pub(crate) table: String,
    pub(crate) columns: Vec<usize>,
    pub(crate) schema: SchemaRef,
}

impl fmt::Debug for RowdexSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowdexSink")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl DisplayAs for RowdexSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "RowdexSink: table={}", self.table)
    }
}

#[async_trait]
impl DataSink for RowdexSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        let mut values: Vec<Vec<Datum>> = Vec::new();
        while let Some(batch) = data.next().await {
            let batch = batch?;
            for row in 0..batch.num_rows() {
                let mut cells = Vec::with_capacity(batch.num_columns());
                for column in batch.columns() {
                    cells.push(datum_from_array(column.as_ref(), row)?);
                }
                values.push(cells);
            }
        }
        Ok(self.write(values).await?)
    }
}

impl RowdexSink {
    async fn write(&self, values: Vec<Vec<Datum>>) -> Result<u64> {
        let mut attempt = 1;
        loop {
            // Read the definition afresh each try: a retry after a schema change must see it.
            let def = self.db.table_def(&self.table)?;
            if def.has_triggers_on(&TriggerEvent::Insert) {
                // Triggers run statements, which need a session; this sink has none.
                return Err(Error::Unsupported {
                    what: format!(
                        "INSERT through DataFusion's own planner into table {}, which has INSERT triggers (run it with Session::execute)",
                        def.name
                    ),
                });
            }
            let mut rows = Vec::with_capacity(values.len());
            for cells in &values {
                // DataFusion filled the columns the INSERT left out (see
                // `RowdexTable::get_column_default`).
                rows.push(full_row(
                    &def,
                    &[],
                    &self.columns,
                    cells.iter().cloned().map(Ok),
                )?);
            }
            match write_rows(&self.db, None, &def, &self.columns, rows, OnExisting::Fail).await {
                Err(error) if error.is_retryable() && attempt < WRITE_ATTEMPTS => {
                    attempt += 1;
                    note_retry(error.is_conflict());
                }
                result => return result.map(|written| written.len() as u64),
            }
        }
    }
}
