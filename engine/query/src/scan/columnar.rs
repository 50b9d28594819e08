//! Decoding stored rows straight into Arrow arrays, for scans whose rows need no evaluation
//! on our side (no residual predicate): only the projected columns are decoded, values are
//! copied from the stored bytes into the arrays without a `Datum` per cell, and columns that
//! are not asked for are skipped.
//!
//! The row path (`values::rows_to_batch` over decoded rows) gives the same batches;
//! a scan uses this one when it can, because a full-table aggregate spends most of its time
//! turning bytes into values.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float64Builder,
    Int64Builder, RecordBatch, RecordBatchOptions, StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::SchemaRef;
use rowdex_catalog::{DataType, TableDef};
use rowdex_codec::row::{CellValue, cells};
use rowdex_codec::{SortOrder, key};

use crate::error::Result;
use crate::values::column_type;

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
        BatchDecoder {
            table,
            schema,
            decoded,
            decoded_of_id,
            key_columns,
            key_orders,
            outputs,
        }
    }

    /// The batch of `entries`, in their order.
    pub fn decode(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<RecordBatch> {
        let mut builders: Vec<ColumnBuilder> = self
            .decoded
            .iter()
            .map(|&column| ColumnBuilder::new(&self.table, column, entries.len()))
            .collect();
        let mut filled = vec![false; builders.len()];
        for (row_key, value) in entries {
            filled.fill(false);
            if !self.key_columns.is_empty() {
                let key_values =
                    key::decode_key(self.table.pk_bytes(row_key), &self.key_orders, true)?;
                for &(key_position, position) in &self.key_columns {
                    if let Some(datum) = key_values.get(key_position) {
                        builders[position].append(CellValue::from(datum));
                        filled[position] = true;
                    }
                }
            }
            let (_, row_cells) = cells(value)?;
            for cell in row_cells {
                let (id, cell) = cell?;
                let position = usize::try_from(id)
                    .ok()
                    .and_then(|id| self.decoded_of_id.get(id).copied().flatten());
                // A column id met twice (only in damaged data) keeps its first value, so
                // every array gets exactly one value per row.
                if let Some(position) = position.filter(|&position| !filled[position]) {
                    builders[position].append(cell);
                    filled[position] = true;
                }
            }
            // Columns without a cell (NULL, or added after the row was written).
            for (builder, filled) in builders.iter_mut().zip(&filled) {
                if !filled {
                    builder.append(CellValue::Null);
                }
            }
        }
        let decoded: Vec<ArrayRef> = builders.into_iter().map(ColumnBuilder::finish).collect();
        let arrays: Vec<ArrayRef> = self.outputs.iter().map(|&i| decoded[i].clone()).collect();
        let options = RecordBatchOptions::new().with_row_count(Some(entries.len()));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &options,
        )?)
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
    Timestamp(TimestampMicrosecondBuilder),
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
                ColumnBuilder::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows))
            }
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
            (ColumnBuilder::Timestamp(b), CellValue::Timestamp(v)) => b.append_value(v),
            (builder, _) => builder.append_null(),
        }
    }

    fn append_null(&mut self) {
        match self {
            ColumnBuilder::Boolean(b) => b.append_null(),
            ColumnBuilder::Int(b) => b.append_null(),
            ColumnBuilder::Float(b) => b.append_null(),
            ColumnBuilder::Decimal(b, ..) => b.append_null(),
            ColumnBuilder::Text(b) => b.append_null(),
            ColumnBuilder::Bytes(b) => b.append_null(),
            ColumnBuilder::Date(b) => b.append_null(),
            ColumnBuilder::Timestamp(b) => b.append_null(),
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
            ColumnBuilder::Text(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Bytes(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Date(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Timestamp(mut b) => Arc::new(b.finish()),
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
