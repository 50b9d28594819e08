//! Decoding stored rows straight into Arrow arrays, for scans whose rows need no evaluation
//! on our side (no residual predicate): only the projected columns are decoded, values are
//! copied from the stored bytes into the arrays without a `Datum` per cell, and columns that
//! are not asked for are skipped.
//!
//! The row path (`values::rows_to_batch` over decoded rows) gives the same batches;
//! a scan uses this one when it can, because a full-table aggregate spends most of its time
//! turning bytes into values. Where the store can lend its entries ([`lent_batches`]), they
//! are decoded in place, without a copy of each key and value either.

use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float64Builder,
    Int64Builder, RecordBatch, RecordBatchOptions, StringBuilder, TimestampMicrosecondBuilder,
    new_null_array,
};
use datafusion::arrow::datatypes::SchemaRef;
use futures::stream::{self, BoxStream, StreamExt};
use rowdex_catalog::{ArrayElement, DataType, TableDef, keyspace};
use rowdex_codec::row::{CellValue, cells};
use rowdex_codec::{Datum, SortOrder, UuidText, key};
use rowdex_store::{Direction, KeyRange, KvRead};

use crate::error::Result;
use crate::values::arrays::{list_array, list_type};
use crate::values::{STORED_TIME_ZONE, column_type};

/// Turns (row key, stored value) entries of one table into record batches of some columns.
///
/// Each distinct column is decoded once; an output that repeats a column (`SELECT a, a`)
/// shares its array.
pub struct BatchDecoder {
    table: Arc<TableDef>,
    schema: SchemaRef,
    /// The distinct table columns decoded, in order of first appearance.
    decoded: Vec<usize>,
    /// Position in `decoded` of each column id, for the cells of the stored value.
    decoded_of_id: Vec<Option<usize>>,
    /// (position in the decoded key, position in `decoded`) of the projected key columns.
    key_columns: Vec<(usize, usize)>,
    key_orders: Vec<SortOrder>,
    /// Position in `decoded` of each output, in output order.
    outputs: Vec<usize>,
    /// Per decoded column added by ALTER TABLE with a value for older rows: the schema version
    /// it was added in, and that value (see `ColumnDef::missing_value`).
    missing: Vec<Option<(u32, Datum)>>,
}

impl BatchDecoder {
    /// A decoder producing `schema`, whose fields are the table columns at `columns`.
    pub fn new(table: Arc<TableDef>, columns: &[usize], schema: SchemaRef) -> BatchDecoder {
        let mut decoded: Vec<usize> = Vec::new();
        let mut outputs = Vec::with_capacity(columns.len());
        for &column in columns {
            let position = match decoded.iter().position(|&c| c == column) {
                Some(position) => position,
                None => {
                    decoded.push(column);
                    decoded.len() - 1
                }
            };
            outputs.push(position);
        }
        let mut decoded_of_id: Vec<Option<usize>> = Vec::new();
        let mut key_columns = Vec::new();
        for (position, &column) in decoded.iter().enumerate() {
            if let Some(key_position) = table.key_position(column) {
                key_columns.push((key_position, position));
            } else if let Some(def) = table.columns.get(column) {
                let id = def.id as usize;
                if decoded_of_id.len() <= id {
                    decoded_of_id.resize(id + 1, None);
                }
                decoded_of_id[id] = Some(position);
            }
        }
        let key_orders = table.key_orders();
        let missing = decoded
            .iter()
            .map(|&column| {
                let def = table.columns.get(column)?;
                let value = def.missing_value(0).filter(|_| def.family == 0)?;
                Some((def.added_in, value))
            })
            .collect();
        BatchDecoder {
            table,
            schema,
            decoded,
            decoded_of_id,
            key_columns,
            key_orders,
            outputs,
            missing,
        }
    }

    /// The batch of `entries`, in their order.
    pub fn decode(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<RecordBatch> {
        let mut batch = self.batch(entries.len());
        for (row_key, value) in entries {
            batch.append(row_key, value)?;
        }
        batch.finish()
    }

    /// An empty batch to append entries to, with room for `rows` of them.
    pub fn batch(&self, rows: usize) -> BatchBuilder<'_> {
        BatchBuilder {
            builders: self
                .decoded
                .iter()
                .map(|&column| ColumnBuilder::new(&self.table, column, rows))
                .collect(),
            filled: vec![false; self.decoded.len()],
            rows: 0,
            decoder: self,
        }
    }
}

/// A batch being decoded, entry by entry (see [`BatchDecoder::batch`]).
pub struct BatchBuilder<'a> {
    decoder: &'a BatchDecoder,
    builders: Vec<ColumnBuilder>,
    /// Which decoded columns the current row has a value for.
    filled: Vec<bool>,
    rows: usize,
}

impl BatchBuilder<'_> {
    /// Rows appended so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Decodes one stored row (its row key and value) into the batch. On an error (damaged
    /// data) the batch is left unusable, and so is dropped by the caller.
    pub fn append(&mut self, row_key: &[u8], value: &[u8]) -> Result<()> {
        let decoder = self.decoder;
        let (builders, filled) = (&mut self.builders, &mut self.filled);
        filled.fill(false);
        if !decoder.key_columns.is_empty() {
            let table = &decoder.table;
            let key_values = key::decode_key(table.pk_bytes(row_key), &decoder.key_orders, true)?;
            for &(key_position, position) in &decoder.key_columns {
                if let Some(datum) = key_values.get(key_position) {
                    builders[position].append(CellValue::from(datum));
                    filled[position] = true;
                }
            }
        }
        let (written_in, row_cells) = cells(value)?;
        for cell in row_cells {
            let (id, cell) = cell?;
            let position = usize::try_from(id)
                .ok()
                .and_then(|id| decoder.decoded_of_id.get(id).copied().flatten());
            // A column id met twice (only in damaged data) keeps its first value, so
            // every array gets exactly one value per row.
            if let Some(position) = position.filter(|&position| !filled[position]) {
                builders[position].append(cell);
                filled[position] = true;
            }
        }
        // Columns without a cell: NULL, or added after the row was written (in the row
        // entry, which every row has, such a column reads the value it was added with).
        let row_entry = row_key.first() != Some(&keyspace::FAMILY_DATA);
        for ((builder, filled), missing) in
            builders.iter_mut().zip(filled.iter()).zip(&decoder.missing)
        {
            if !filled {
                match missing {
                    Some((added_in, value)) if row_entry && written_in < *added_in => {
                        builder.append(CellValue::from(value));
                    }
                    _ => builder.append(CellValue::Null),
                }
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// The record batch of the rows appended.
    pub fn finish(self) -> Result<RecordBatch> {
        let decoder = self.decoder;
        let decoded: Vec<ArrayRef> = self
            .builders
            .into_iter()
            .map(ColumnBuilder::finish)
            .collect();
        let arrays: Vec<ArrayRef> = decoder
            .outputs
            .iter()
            .map(|&i| decoded[i].clone())
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        Ok(RecordBatch::try_new_with_options(
            decoder.schema.clone(),
            arrays,
            &options,
        )?)
    }
}

/// What a scan read in place covers: key ranges of one table's row entries, each entry a
/// result row (see `read::lendable_ranges`), read in `direction`, with its OFFSET and LIMIT.
pub struct LentScan {
    pub reader: Arc<dyn KvRead>,
    /// In ascending key order.
    pub ranges: Vec<KeyRange>,
    pub direction: Direction,
    /// The table's expiry cutoff (rows written at or before it are left out).
    pub cutoff: Option<i64>,
    pub offset: usize,
    pub limit: Option<usize>,
}

/// Most entries lent in one store call.
const MAX_LENT_PAGE: usize = 1024;

/// The rows of `scan`, in batches of at most `batch_size` rows: each entry is decoded from the
/// store's own bytes as it is lent ([`KvRead::visit_page`]), without a copy of it.
pub fn lent_batches(
    mut scan: LentScan,
    decoder: BatchDecoder,
    batch_size: usize,
) -> BoxStream<'static, Result<RecordBatch>> {
    // The stream keeps what is left of the ranges, in reading order.
    let mut ranges = std::mem::take(&mut scan.ranges);
    if scan.direction == Direction::Reverse {
        ranges.reverse();
    }
    let state = Lending {
        ranges: VecDeque::from(ranges),
        skip: scan.offset,
        left: scan.limit,
        scan,
        decoder,
        batch_size: batch_size.max(1),
    };
    stream::try_unfold(state, |mut state| async move {
        let batch = state.next_batch().await?;
        Ok(batch.map(|batch| (batch, state)))
    })
    .boxed()
}

/// Where a [`lent_batches`] stream stands.
struct Lending {
    scan: LentScan,
    /// What is left to read, in reading order.
    ranges: VecDeque<KeyRange>,
    /// Rows of the OFFSET still to skip, and of the LIMIT still to return.
    skip: usize,
    left: Option<usize>,
    decoder: BatchDecoder,
    batch_size: usize,
}

impl Lending {
    /// The next batch, or None when the scan is done.
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let table = self.decoder.table.clone();
        let cutoff = self.scan.cutoff;
        let mut batch = self.decoder.batch(self.batch_size.min(MAX_LENT_PAGE));
        while batch.len() < self.batch_size && self.left != Some(0) {
            let Some(range) = self.ranges.front() else {
                break;
            };
            let room = self.batch_size - batch.len();
            let wanted = self.left.map_or(room, |left| left.min(room));
            let page = wanted.saturating_add(self.skip).clamp(1, MAX_LENT_PAGE);
            let (skip, mut appended, mut failed) = (&mut self.skip, 0, None);
            let resume = self
                .scan
                .reader
                .visit_page(range, self.scan.direction, page, &mut |key, value| {
                    // Nothing is appended past a damaged entry. (The page holds at most the
                    // OFFSET left plus `wanted` entries, so every row lent is taken.)
                    if failed.is_some() {
                        return;
                    }
                    match table.is_value_live(value, cutoff) {
                        Ok(true) if *skip > 0 => *skip -= 1,
                        Ok(true) => match batch.append(key, value) {
                            Ok(()) => appended += 1,
                            Err(error) => failed = Some(error),
                        },
                        Ok(false) => {}
                        Err(error) => failed = Some(error.into()),
                    }
                })
                .await?;
            if let Some(error) = failed {
                return Err(error);
            }
            if let Some(left) = &mut self.left {
                *left -= appended;
            }
            match resume {
                Some(rest) => {
                    if let Some(front) = self.ranges.front_mut() {
                        *front = rest;
                    }
                }
                None => {
                    self.ranges.pop_front();
                }
            }
        }
        if batch.is_empty() {
            return Ok(None);
        }
        batch.finish().map(Some)
    }
}

/// An Arrow builder for one column's type. A value of another type than the column's (which a
/// validated write never stores) becomes NULL, as on the row path.
enum ColumnBuilder {
    Boolean(BooleanBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Decimal(Decimal128Builder, u8, i8),
    Text(StringBuilder),
    Bytes(BinaryBuilder),
    Date(Date32Builder),
    /// A TIMESTAMP, or a TIMESTAMPTZ (`zoned`: typed in `values::STORED_TIME_ZONE`).
    Timestamp(TimestampMicrosecondBuilder, bool),
    /// A UUID column: its canonical text.
    Uuid(StringBuilder),
    /// An array column: its stored texts, made a list of its elements at the end.
    Array(ArrayElement, Vec<Option<String>>),
}

impl ColumnBuilder {
    fn new(table: &TableDef, column: usize, rows: usize) -> ColumnBuilder {
        match column_type(table, column) {
            DataType::Boolean => ColumnBuilder::Boolean(BooleanBuilder::with_capacity(rows)),
            DataType::Integer => ColumnBuilder::Int(Int64Builder::with_capacity(rows)),
            DataType::Float => ColumnBuilder::Float(Float64Builder::with_capacity(rows)),
            DataType::Decimal { precision, scale } => {
                ColumnBuilder::Decimal(Decimal128Builder::with_capacity(rows), precision, scale)
            }
            DataType::Text { .. } => {
                ColumnBuilder::Text(StringBuilder::with_capacity(rows, rows * 16))
            }
            DataType::Bytes { .. } => {
                ColumnBuilder::Bytes(BinaryBuilder::with_capacity(rows, rows * 16))
            }
            DataType::Date => ColumnBuilder::Date(Date32Builder::with_capacity(rows)),
            DataType::Timestamp => {
                ColumnBuilder::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows), false)
            }
            DataType::TimestampTz => {
                ColumnBuilder::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows), true)
            }
            DataType::Uuid => ColumnBuilder::Uuid(StringBuilder::with_capacity(rows, rows * 36)),
            DataType::Array { element } => ColumnBuilder::Array(element, Vec::with_capacity(rows)),
        }
    }

    fn append(&mut self, value: CellValue<'_>) {
        match (self, value) {
            (ColumnBuilder::Boolean(b), CellValue::Boolean(v)) => b.append_value(v),
            (ColumnBuilder::Int(b), CellValue::Int(v)) => b.append_value(v),
            (ColumnBuilder::Float(b), CellValue::Float(v)) => b.append_value(v),
            (ColumnBuilder::Decimal(b, ..), CellValue::Decimal(v)) => b.append_value(v),
            (ColumnBuilder::Text(b), CellValue::Text(v)) => b.append_value(v),
            (ColumnBuilder::Bytes(b), CellValue::Bytes(v)) => b.append_value(v),
            (ColumnBuilder::Date(b), CellValue::Date(v)) => b.append_value(v),
            (ColumnBuilder::Timestamp(b, _), CellValue::Timestamp(v)) => b.append_value(v),
            (ColumnBuilder::Uuid(b), CellValue::Uuid(v)) => {
                b.append_value(UuidText::new(&v).as_str())
            }
            (ColumnBuilder::Array(_, texts), CellValue::Text(v)) => texts.push(Some(v.to_string())),
            (builder, _) => builder.append_null(),
        }
    }

    fn append_null(&mut self) {
        match self {
            ColumnBuilder::Boolean(b) => b.append_null(),
            ColumnBuilder::Int(b) => b.append_null(),
            ColumnBuilder::Float(b) => b.append_null(),
            ColumnBuilder::Decimal(b, ..) => b.append_null(),
            ColumnBuilder::Text(b) | ColumnBuilder::Uuid(b) => b.append_null(),
            ColumnBuilder::Bytes(b) => b.append_null(),
            ColumnBuilder::Date(b) => b.append_null(),
            ColumnBuilder::Timestamp(b, _) => b.append_null(),
            ColumnBuilder::Array(_, texts) => texts.push(None),
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            ColumnBuilder::Boolean(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Int(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Float(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Decimal(mut b, precision, scale) => {
                let array = b.finish();
                // Precision and scale come from a validated column definition.
                Arc::new(
                    array
                        .clone()
                        .with_precision_and_scale(precision, scale)
                        .unwrap_or(array),
                )
            }
            ColumnBuilder::Text(mut b) | ColumnBuilder::Uuid(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Bytes(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Date(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Timestamp(mut b, false) => Arc::new(b.finish()),
            ColumnBuilder::Timestamp(mut b, true) => {
                Arc::new(b.finish().with_timezone(STORED_TIME_ZONE))
            }
            // Stored texts are canonical; one that does not read (none should) is NULL.
            ColumnBuilder::Array(element, texts) => {
                let rows = texts.len();
                list_array(element, texts.iter().map(Option::as_deref))
                    .unwrap_or_else(|_| new_null_array(&list_type(element), rows))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::{rows_to_batch, table_schema};
    use rowdex_catalog::ColumnDef;
    use rowdex_codec::Datum;

    fn column(name: &str, data_type: DataType) -> ColumnDef {
        ColumnDef::nullable(name, data_type)
    }

    /// A table with a DESC text key column in second place and a column of every type.
    fn table() -> Arc<TableDef> {
        let columns = vec![
            column("id", DataType::Integer),
            column("host", DataType::Text { max_len: None }),
            column("flag", DataType::Boolean),
            column("ratio", DataType::Float),
            column(
                "price",
                DataType::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
            column("note", DataType::Text { max_len: None }),
            column("blob", DataType::Bytes { max_len: None }),
            column("day", DataType::Date),
            column("at", DataType::Timestamp),
        ];
        let key = [("id".to_string(), false), ("host".to_string(), true)];
        let mut def = TableDef::new("t", columns, &key, 4).expect("valid definition");
        def.id = 3;
        Arc::new(def)
    }

    fn rows() -> Vec<Vec<Datum>> {
        vec![
            vec![
                Datum::Int(1),
                Datum::Text("host1".into()),
                Datum::Boolean(true),
                Datum::Float(-0.5),
                Datum::Decimal(12_345),
                Datum::Text("héllo".into()),
                Datum::Bytes(vec![0, 255]),
                Datum::Date(-3),
                Datum::Timestamp(1_700_000_000_000_000),
            ],
            // Every non-key column NULL: the stored value has no cells at all.
            vec![
                Datum::Int(-7),
                Datum::Text(String::new()),
                Datum::Null,
                Datum::Null,
                Datum::Null,
                Datum::Null,
                Datum::Null,
                Datum::Null,
                Datum::Null,
            ],
        ]
    }

    #[test]
    fn decodes_like_the_row_path_for_any_projection() -> Result<()> {
        let table = table();
        let entries: Vec<(Vec<u8>, Vec<u8>)> = rows()
            .iter()
            .map(|row| (table.row_key_of(row), table.encode_value(row)))
            .collect();
        let decoded: Vec<Vec<Datum>> = entries
            .iter()
            .map(|(key, value)| table.decode_row(key, value))
            .collect::<std::result::Result<_, _>>()?;
        assert_eq!(decoded, rows(), "the row path itself round-trips");
        let projections: [&[usize]; 6] = [
            &[0, 1, 2, 3, 4, 5, 6, 7, 8],
            &[8, 1, 5],
            &[3],
            &[1, 1, 0],
            // A stored column twice (`SELECT note, ratio, note`).
            &[5, 3, 5],
            &[],
        ];
        for projection in projections {
            let schema = table_schema(&table, projection);
            let expected = rows_to_batch(&table, &schema, projection, &decoded)?;
            let got = BatchDecoder::new(table.clone(), projection, schema).decode(&entries)?;
            assert_eq!(got, expected, "projection {projection:?}");
        }
        Ok(())
    }

    #[test]
    fn damaged_values_are_errors() {
        let table = table();
        let row = &rows()[0];
        let key = table.row_key_of(row);
        let mut value = table.encode_value(row);
        value.push(0);
        let schema = table_schema(&table, &[5]);
        let decoder = BatchDecoder::new(table.clone(), &[5], schema);
        assert!(decoder.decode(&[(key.clone(), value.clone())]).is_err());
        value.truncate(3);
        assert!(decoder.decode(&[(key, value)]).is_err());
    }
}
