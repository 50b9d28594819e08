//! Building a catalog table: its columns' kinds, its rows' cells, and the Arrow batch they
//! make (the rows of `pg_catalog` and `information_schema` tables, and of the statistics
//! views).

use std::sync::Arc;

use rowdex::DECLARED_TYPE;
use rowdex::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, Int64Builder, ListBuilder, RecordBatch,
    StringArray, StringBuilder, TimestampMicrosecondArray,
};
use rowdex::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use rowdex::arrow::error::ArrowError;
use rowdex::time_zone::STORED_TIME_ZONE;

/// The type of a catalog column.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Int,
    /// An `int4` column (`pid`, a port): kept as an Int64, declared INTEGER for the wire.
    Int4,
    Text,
    Bool,
    Float,
    IntList,
    TextList,
    /// A `timestamptz`: microseconds since 1970-01-01 UTC.
    Timestamptz,
}

/// One value of a catalog row.
#[derive(Debug, Clone)]
pub enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
    Float(f64),
    IntList(Vec<i64>),
    TextList(Vec<String>),
    /// Microseconds since 1970-01-01 UTC, of a `Timestamptz` column.
    Timestamp(i64),
}

impl Cell {
    /// The moment `at`, for a `Timestamptz` column.
    pub fn at(at: std::time::SystemTime) -> Cell {
        let micros = match at.duration_since(std::time::UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_micros()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
        };
        Cell::Timestamp(micros)
    }
}

impl From<i64> for Cell {
    fn from(v: i64) -> Cell {
        Cell::Int(v)
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Cell {
        Cell::Text(v.to_string())
    }
}

impl From<String> for Cell {
    fn from(v: String) -> Cell {
        Cell::Text(v)
    }
}

impl From<bool> for Cell {
    fn from(v: bool) -> Cell {
        Cell::Bool(v)
    }
}

/// A catalog table's columns and rows.
pub struct Table {
    columns: Vec<(&'static str, Kind)>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(columns: &[(&'static str, Kind)]) -> Table {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row: the named cells, NULL for every other column.
    pub fn row(&mut self, cells: Vec<(&str, Cell)>) {
        let mut row = vec![Cell::Null; self.columns.len()];
        for (name, cell) in cells {
            if let Some(i) = self.columns.iter().position(|(c, _)| *c == name) {
                row[i] = cell;
            }
        }
        self.rows.push(row);
    }

    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|(name, kind)| {
                    let field = Field::new(*name, data_type(*kind), true);
                    match kind {
                        Kind::Int4 => field.with_metadata(
                            [(DECLARED_TYPE.to_string(), "INTEGER".to_string())].into(),
                        ),
                        _ => field,
                    }
                })
                .collect::<Vec<_>>(),
        ))
    }

    pub fn batch(self) -> Result<RecordBatch, ArrowError> {
        let schema = self.schema();
        let columns: Vec<ArrayRef> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| column(*kind, self.rows.iter().map(|r| &r[i])))
            .collect();
        RecordBatch::try_new(schema, columns)
    }
}

fn data_type(kind: Kind) -> DataType {
    let item = |t| DataType::List(Arc::new(Field::new("item", t, true)));
    match kind {
        Kind::Int | Kind::Int4 => DataType::Int64,
        Kind::Text => DataType::Utf8,
        Kind::Bool => DataType::Boolean,
        Kind::Float => DataType::Float64,
        Kind::IntList => item(DataType::Int64),
        Kind::TextList => item(DataType::Utf8),
        Kind::Timestamptz => {
            DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(STORED_TIME_ZONE)))
        }
    }
}

fn column<'a>(kind: Kind, cells: impl Iterator<Item = &'a Cell>) -> ArrayRef {
    match kind {
        Kind::Int | Kind::Int4 => Arc::new(Int64Array::from_iter(cells.map(|c| match c {
            Cell::Int(v) => Some(*v),
            _ => None,
        }))),
        Kind::Text => Arc::new(StringArray::from_iter(cells.map(|c| match c {
            Cell::Text(v) => Some(v.clone()),
            _ => None,
        }))),
        Kind::Bool => Arc::new(BooleanArray::from_iter(cells.map(|c| match c {
            Cell::Bool(v) => Some(*v),
            _ => None,
        }))),
        Kind::Float => Arc::new(Float64Array::from_iter(cells.map(|c| match c {
            Cell::Float(v) => Some(*v),
            _ => None,
        }))),
        Kind::IntList => {
            let mut builder = ListBuilder::new(Int64Builder::new());
            for cell in cells {
                match cell {
                    Cell::IntList(values) => {
                        builder.values().append_slice(values);
                        builder.append(true);
                    }
                    _ => builder.append(false),
                }
            }
            Arc::new(builder.finish())
        }
        Kind::Timestamptz => Arc::new(
            TimestampMicrosecondArray::from_iter(cells.map(|c| match c {
                Cell::Timestamp(v) => Some(*v),
                _ => None,
            }))
            .with_timezone(STORED_TIME_ZONE),
        ),
        Kind::TextList => {
            let mut builder = ListBuilder::new(StringBuilder::new());
            for cell in cells {
                match cell {
                    Cell::TextList(values) => {
                        for value in values {
                            builder.values().append_value(value);
                        }
                        builder.append(true);
                    }
                    _ => builder.append(false),
                }
            }
            Arc::new(builder.finish())
        }
    }
}

pub use Kind::{Bool, Float, Int, Int4, IntList, Text, TextList, Timestamptz};
