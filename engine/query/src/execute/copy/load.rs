//! The load behind `COPY ... FROM`: records read and converted on a thread of their own, a batch
//! of [`COPY_BATCH_ROWS`] rows encoded on another, and each batch written in its own transaction
//! while the next one is read, so that on two cores reading, encoding and writing overlap. The
//! data comes from a file or, for `COPY ... FROM STDIN`, from a client through a
//! [`ChunkReader`](crate::copy_data::stream::ChunkReader); either way it is any `Read`.
//!
//! Each batch is written whole or not at all, so a load of up to [`COPY_BATCH_ROWS`] rows is
//! all-or-nothing (on a store that caps the keys of a commit, etcd, batches are smaller: see
//! [`batch_rows`]). What a stopped load leaves: a record that cannot be read or converted stops
//! it after the complete batches before its own are written; a batch that cannot be written is
//! not written at all; a source that gives up (a client's CopyFail, a dropped connection) stops
//! it without writing anything more. Each error says how many rows were loaded.

use std::io::{BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::sql::sqlparser::ast::{Ident, ObjectName};
use rowdex_catalog::{ColumnDef, DataType, TableDef, TriggerEvent};
use rowdex_codec::Datum;
use rowdex_store::Capabilities;

use crate::copy_data::binary::{BinaryReader, BinaryRecord, binary_datum};
use crate::copy_data::format::{CopyFormat, CopyFormatKind};
use crate::copy_data::records::{ReadError, Record, RecordReader};
use crate::db::statement_report::note_retry;
use crate::error::{Error, Result};
use crate::progress::{Progress, Work};
use crate::session::Session;
use crate::sql::names::{object_name, target_columns};
use crate::time_zone::TimeZone;
use crate::values::{decimal_from_text, full_row};
use crate::write::WRITE_ATTEMPTS;
use crate::write::constraints::default_row;
use crate::write::load::{EncodedRows, encode_new_rows, write_new_rows};
use crate::write::rows::{assign_rowids, fill_row_defaults};
use rowdex_codec::parse_bytea;

/// Rows per load transaction: large enough that commits are a small part of the load and that
/// on fjall each batch is ingested as a few large tables (fewer, larger runs to compact), small
/// enough that a batch's rows and mutations stay within some tens of megabytes.
pub const COPY_BATCH_ROWS: usize = 50_000;

/// Rows per batch of a bulk write into `def` on a store with `capabilities`: [`COPY_BATCH_ROWS`],
/// or fewer where the store caps the keys of one commit (each row writes its own key and one
/// per index and per column family).
pub(crate) fn batch_rows(capabilities: &Capabilities, def: &TableDef) -> usize {
    match capabilities.max_commit_keys {
        None => COPY_BATCH_ROWS,
        Some(keys) => {
            let per_row = 1 + def.indexes.len() + def.families.len();
            (keys / per_row).clamp(1, COPY_BATCH_ROWS)
        }
    }
}

/// Where a load's data comes from, for its progress and its errors.
pub(crate) struct LoadSource<R> {
    pub(crate) reader: R,
    /// A file's path, or `STDIN`.
    pub(crate) name: String,
    /// The size of the data when known (a file's), for the progress bar; 0 otherwise.
    pub(crate) total_bytes: u64,
}

/// The table and columns a COPY loads.
pub(crate) struct LoadTarget {
    def: Arc<TableDef>,
    /// The table's columns each record's fields go to, in order.
    targets: Vec<usize>,
}

impl LoadTarget {
    /// The table `table_name` and its `columns` (every visible column when empty).
    pub(crate) fn resolve(
        session: &Session,
        table_name: &ObjectName,
        columns: &[Ident],
    ) -> Result<LoadTarget> {
        let table = object_name(table_name)?;
        let def = session
            .schema_view()
            .table(&table)
            .ok_or_else(|| Error::TableNotFound { table })?;
        if def.has_triggers_on(&TriggerEvent::Insert) {
            // COPY writes batches of rows without running statements per row.
            return Err(Error::Unsupported {
                what: format!(
                    "COPY FROM into table {}, which has INSERT triggers (INSERT the rows instead)",
                    def.name
                ),
            });
        }
        let names: Vec<ObjectName> = columns
            .iter()
            .map(|c| ObjectName::from(vec![c.clone()]))
            .collect();
        let targets = target_columns(&def, &names)?;
        Ok(LoadTarget { def, targets })
    }

    /// How many fields each record holds.
    pub(crate) fn columns(&self) -> usize {
        self.targets.len()
    }

    /// Loads every record of `source`; returns the number of rows loaded.
    pub(crate) async fn run<R: Read + Send + 'static>(
        self,
        session: &Session,
        source: LoadSource<R>,
        format: &CopyFormat,
    ) -> Result<u64> {
        let LoadTarget { def, targets } = self;
        let db = &session.db;
        let bytes_read = Arc::new(AtomicU64::new(0));
        let counted = CountingReader {
            inner: source.reader,
            read: bytes_read.clone(),
        };
        let buffered = BufReader::with_capacity(1 << 20, counted);
        let reader = match format.kind {
            CopyFormatKind::Binary => {
                RowReader::Binary(BinaryReader::new(buffered), BinaryRecord::default())
            }
            _ => RowReader::Text(
                RecordReader::new(buffered, format.clone()),
                Record::default(),
            ),
        };
        // The data is read and converted on a thread of its own while this task writes the
        // batch before: on two cores the conversion costs the load no time.
        let (sender, mut parsed) = tokio::sync::mpsc::channel(1);
        let converter = RecordConverter {
            batch_rows: batch_rows(&db.store.capabilities(), &def),
            def: def.clone(),
            targets: targets.clone(),
            defaults: default_row(&def)?,
            source: source.name.clone(),
            zone: session.time_zone(),
        };
        std::thread::Builder::new()
            .name("rowdex-copy-reader".to_string())
            .spawn(move || converter.run(reader, &sender))
            .map_err(|source| Error::ThreadStart {
                work: "reading COPY data",
                source,
            })?;
        let total_bytes = source.total_bytes;
        let source_name = source.name.clone();
        let mut loaded = 0u64;
        // The batch being encoded on a thread of its own while the one before it is written.
        let mut encoding: Option<EncodingBatch> = None;
        while let Some(message) = parsed.recv().await {
            match message {
                Parsed::Batch {
                    mut rows,
                    first_line,
                    last_line,
                } => {
                    let lines = BatchLines {
                        first: first_line,
                        last: last_line,
                    };
                    if let Err(error) = assign_rowids(db, &def, &mut rows).await {
                        return Err(lines.failed(loaded, error));
                    }
                    let txn = session.open_txn();
                    if let Err(error) =
                        fill_row_defaults(db, txn.as_ref(), &def, &targets, &mut rows).await
                    {
                        return Err(lines.failed(loaded, error));
                    }
                    let next = EncodingBatch::start(&def, &targets, rows, db.now_micros(), lines)?;
                    if let Some(before) = encoding.replace(next) {
                        loaded += load_batch(session, &def, &targets, before, loaded).await?;
                        if let Some(progress) = &session.progress {
                            progress(&Progress {
                                work: Work::CopyFrom {
                                    table: &def.name,
                                    source: &source_name,
                                    rows: loaded,
                                },
                                done: bytes_read.load(Ordering::Relaxed),
                                total: total_bytes,
                            });
                        }
                    }
                }
                Parsed::Failed { line, error } => {
                    if let Some(before) = encoding.take() {
                        loaded += load_batch(session, &def, &targets, before, loaded).await?;
                    }
                    return Err(Error::CopyRow {
                        line,
                        loaded,
                        source: Box::new(error),
                    });
                }
                // The rows not written yet stay unwritten.
                Parsed::Abandoned => return Err(Error::CopyAbandoned { loaded }),
            }
        }
        if let Some(last) = encoding.take() {
            loaded += load_batch(session, &def, &targets, last, loaded).await?;
        }
        if let Some(progress) = &session.progress {
            let done = bytes_read.load(Ordering::Relaxed);
            progress(&Progress {
                work: Work::CopyFrom {
                    table: &def.name,
                    source: &source_name,
                    rows: loaded,
                },
                done,
                total: total_bytes.max(done),
            });
        }
        Ok(loaded)
    }
}

/// The lines of the data a batch holds.
#[derive(Debug, Clone, Copy)]
struct BatchLines {
    first: u64,
    last: u64,
}

impl BatchLines {
    /// The error of a batch that could not be written, `loaded` rows having been before it.
    fn failed(self, loaded: u64, error: Error) -> Error {
        Error::CopyBatch {
            first_line: self.first,
            last_line: self.last,
            loaded,
            source: Box::new(error),
        }
    }
}

/// A batch handed to a thread that encodes it (`write::load`), so that on two cores its
/// encoding overlaps the writing of the batch before.
struct EncodingBatch {
    encoded: tokio::sync::oneshot::Receiver<Result<EncodedRows>>,
    lines: BatchLines,
}

impl EncodingBatch {
    fn start(
        def: &Arc<TableDef>,
        targets: &[usize],
        rows: Vec<Vec<Datum>>,
        now: i64,
        lines: BatchLines,
    ) -> Result<EncodingBatch> {
        let (sender, encoded) = tokio::sync::oneshot::channel();
        let (def, targets) = (def.clone(), targets.to_vec());
        std::thread::Builder::new()
            .name("rowdex-copy-encoder".to_string())
            .spawn(move || {
                // Nothing is left to do when the writer has stopped listening.
                let _ = sender.send(encode_new_rows(&def, &targets, rows, now));
            })
            .map_err(|source| Error::ThreadStart {
                work: "encoding a COPY batch",
                source,
            })?;
        Ok(EncodingBatch { encoded, lines })
    }
}

/// What the reading thread of a COPY hands the writing task, in file order.
enum Parsed {
    /// The rows of consecutive records, lines `first_line..=last_line`.
    Batch {
        rows: Vec<Vec<Datum>>,
        first_line: u64,
        last_line: u64,
    },
    /// The record at `line` cannot be read or converted. Every record before it was sent.
    Failed { line: u64, error: Error },
    /// The source gave up before the end of its data.
    Abandoned,
}

/// Turns records into rows of one table, in batches of `batch_rows` (see [`batch_rows`]).
struct RecordConverter {
    batch_rows: usize,
    def: Arc<TableDef>,
    targets: Vec<usize>,
    /// The row each record starts from: the columns' DEFAULTs (see `default_row`).
    defaults: Vec<Datum>,
    /// The data's name for a read error (a file's path, or `STDIN`).
    source: String,
    /// The session's zone, which a TIMESTAMPTZ field without an offset is a time of.
    zone: TimeZone,
}

impl RecordConverter {
    /// Reads all the data into `sender` in whole batches, stopping at the first bad record
    /// (the complete batches before it sent, the rows of its own batch dropped), or as soon as
    /// the writer has stopped listening.
    fn run<R: std::io::BufRead>(
        self,
        mut reader: RowReader<R>,
        sender: &tokio::sync::mpsc::Sender<Parsed>,
    ) {
        let mut rows: Vec<Vec<Datum>> = Vec::with_capacity(self.batch_rows);
        let (mut first_line, mut last_line) = (0u64, 0u64);
        let failure = loop {
            let read = reader.next_row(&self.def, &self.defaults, &self.targets, &self.zone);
            let line = reader.line();
            let converted = match read {
                Ok(Some(converted)) => converted,
                Ok(None) => break None,
                Err(ReadError::Io(error))
                    if error.kind() == std::io::ErrorKind::ConnectionAborted =>
                {
                    break Some(Parsed::Abandoned);
                }
                Err(ReadError::Io(source)) => {
                    let error = Error::File {
                        action: "read",
                        path: self.source.clone(),
                        source,
                    };
                    break Some(Parsed::Failed { line, error });
                }
                Err(ReadError::Malformed(message)) => {
                    let error = Error::BadCopyData { message };
                    break Some(Parsed::Failed { line, error });
                }
            };
            match converted {
                Ok(row) => {
                    if rows.is_empty() {
                        first_line = line;
                    }
                    last_line = line;
                    rows.push(row);
                }
                Err(error) => break Some(Parsed::Failed { line, error }),
            }
            if rows.len() >= self.batch_rows {
                let full = std::mem::replace(&mut rows, Vec::with_capacity(self.batch_rows));
                let batch = Parsed::Batch {
                    rows: full,
                    first_line,
                    last_line,
                };
                if sender.blocking_send(batch).is_err() {
                    // The writer failed and reported it: nothing more is wanted.
                    return;
                }
            }
        };
        // The rows read before a failure in the same batch are not written: each batch is
        // written whole or not at all.
        if !rows.is_empty() && failure.is_none() {
            let batch = Parsed::Batch {
                rows,
                first_line,
                last_line,
            };
            if sender.blocking_send(batch).is_err() {
                return;
            }
        }
        if let Some(failure) = failure {
            // Nothing is left to do when the writer has stopped listening.
            let _ = sender.blocking_send(failure);
        }
    }
}

/// Writes one batch in its own transaction once it is encoded (retrying races); returns its
/// size.
async fn load_batch(
    session: &Session,
    def: &TableDef,
    targets: &[usize],
    batch: EncodingBatch,
    loaded_before: u64,
) -> Result<u64> {
    let lines = batch.lines;
    let mut encoded = match batch.encoded.await {
        Ok(Ok(encoded)) => encoded,
        Ok(Err(error)) => return Err(lines.failed(loaded_before, error)),
        Err(_) => {
            let error = Error::WorkerStopped {
                work: "encoding a COPY batch",
            };
            return Err(lines.failed(loaded_before, error));
        }
    };
    if encoded.len() == 0 {
        return Ok(0);
    }
    let mut attempt = 1;
    loop {
        // A write that fails for any reason writes nothing, so the batch can be offered again
        // (row by row, against the definition as it is now).
        let current = session.table_def(&def.name)?;
        let txn = session.open_txn();
        match write_new_rows(&session.db, txn.as_ref(), &current, targets, &mut encoded).await {
            Ok(written) => return Ok(written),
            Err(error) if error.is_retryable() && attempt < WRITE_ATTEMPTS => {
                attempt += 1;
                note_retry(error.is_conflict());
            }
            Err(error) => return Err(lines.failed(loaded_before, error)),
        }
    }
}

/// The records of a load's data, in its format, with the record read last (its buffers kept
/// from record to record).
enum RowReader<R> {
    Text(RecordReader<R>, Record),
    Binary(BinaryReader<R>, BinaryRecord),
}

impl<R: std::io::BufRead> RowReader<R> {
    /// The next record as a full-width row of `def` (or why it does not convert); None at the
    /// end of the data.
    fn next_row(
        &mut self,
        def: &TableDef,
        defaults: &[Datum],
        targets: &[usize],
        zone: &TimeZone,
    ) -> std::result::Result<Option<Result<Vec<Datum>>>, ReadError> {
        match self {
            RowReader::Text(reader, record) => Ok(reader
                .read(record)?
                .then(|| convert_record(def, defaults, targets, record, zone))),
            RowReader::Binary(reader, record) => Ok(reader
                .read(record)?
                .then(|| convert_binary(def, defaults, targets, record))),
        }
    }

    /// The line (a binary COPY's tuple) the record read last starts on.
    fn line(&self) -> u64 {
        match self {
            RowReader::Text(reader, _) => reader.line(),
            RowReader::Binary(reader, _) => reader.line(),
        }
    }
}

/// One binary tuple as a full-width row of the table.
fn convert_binary(
    def: &TableDef,
    defaults: &[Datum],
    targets: &[usize],
    record: &BinaryRecord,
) -> Result<Vec<Datum>> {
    full_width(def, defaults, targets, record.len(), |i, column| {
        let bytes = record.field(i)?;
        Some(binary_datum(column, bytes).map_err(|message| Error::BadCopyData { message }))
    })
}

/// One record as a full-width row of the table.
fn convert_record(
    def: &TableDef,
    defaults: &[Datum],
    targets: &[usize],
    record: &Record,
    zone: &TimeZone,
) -> Result<Vec<Datum>> {
    full_width(def, defaults, targets, record.len(), |i, column| {
        Some(parse_field(def, column, record.field(i)?, zone))
    })
}

/// A record of `found` fields as a full-width row of the table: field `i` goes to column
/// `targets[i]`, read by `value` (None for NULL).
fn full_width(
    def: &TableDef,
    defaults: &[Datum],
    targets: &[usize],
    found: usize,
    value: impl Fn(usize, &ColumnDef) -> Option<Result<Datum>>,
) -> Result<Vec<Datum>> {
    if found != targets.len() {
        return Err(Error::ColumnCountMismatch {
            table: def.name.clone(),
            expected: targets.len(),
            found,
        });
    }
    let fields = targets
        .iter()
        .enumerate()
        .map(|(i, &column)| value(i, &def.columns[column]).unwrap_or(Ok(Datum::Null)));
    full_row(def, defaults, targets, fields)
}

/// The value a field spells for a column of the given type (a TIMESTAMPTZ without an offset
/// being a time of `zone`).
fn parse_field(def: &TableDef, column: &ColumnDef, field: &str, zone: &TimeZone) -> Result<Datum> {
    let mismatch = || Error::TypeMismatch {
        table: def.name.clone(),
        column: column.name.clone(),
        expected: column.data_type.to_string(),
        found: "TEXT",
        value: Datum::Text(field.to_string()).to_string(),
    };
    let trimmed = field.trim();
    Ok(match column.data_type {
        DataType::Integer => Datum::Int(trimmed.parse().map_err(|_| mismatch())?),
        DataType::Float => Datum::Float(trimmed.parse().map_err(|_| mismatch())?),
        DataType::Boolean => match trimmed.to_ascii_lowercase().as_str() {
            "true" | "t" | "1" | "yes" | "y" => Datum::Boolean(true),
            "false" | "f" | "0" | "no" | "n" => Datum::Boolean(false),
            _ => return Err(mismatch()),
        },
        DataType::Decimal { scale, .. } => {
            Datum::Decimal(decimal_from_text(trimmed, scale).ok_or_else(mismatch)?)
        }
        DataType::Text { .. }
        | DataType::Date
        | DataType::Timestamp
        | DataType::Uuid
        | DataType::Array { .. } => Datum::Text(field.to_string()),
        DataType::TimestampTz => {
            Datum::Timestamp(zone.parse_timestamptz(trimmed).ok_or_else(mismatch)?)
        }
        DataType::Bytes { .. } => Datum::Bytes(parse_bytea(field).ok_or_else(mismatch)?),
    })
}

/// Counts the bytes the CSV reader has consumed, for the progress bar.
struct CountingReader<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
