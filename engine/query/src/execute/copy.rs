//! COPY: loading a CSV file into a table, and writing a table or a query's result to one.
//!
//! `COPY t [(columns)] FROM 'file.csv' [WITH (HEADER true, DELIMITER ',', NULL '')]` streams the
//! file in batches of [`COPY_BATCH_ROWS`] rows. Each batch is one transaction that writes its rows
//! and their index entries, exactly as INSERT does (duplicate keys and UNIQUE clashes fail).
//! A load is therefore not atomic as a whole; instead it reports exactly what it loaded when it
//! stops: a row that cannot be converted stops the load after every row before it is written,
//! and a batch that cannot be written is not written at all, so the rows before its first line
//! are exactly the ones loaded. Either error names the line. The file is read and its records
//! converted on a thread of its own, and each batch is encoded (keys, cells, index entries,
//! sorted) on another, both ahead of the transaction writing the batch before.
//!
//! `COPY t TO 'file.csv'` and `COPY (SELECT ...) TO 'file.csv'` write CSV with the same options.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::csv::WriterBuilder;
use datafusion::sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Ident, ObjectName,
    Query, Statement,
};
use futures::StreamExt;
use rowdex_catalog::{ColumnDef, DataType, TableDef};
use rowdex_codec::Datum;

use crate::df::context::plan_statement;
use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::{object_name, target_columns};
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::values::full_row;
use crate::write::WRITE_ATTEMPTS;
use crate::write::load::{EncodedRows, encode_new_rows, write_new_rows};
use crate::write::rows::assign_rowids;

/// Rows per load transaction: large enough that commits are a small part of the load and that
/// on fjall each batch is ingested as a few large tables (fewer, larger runs to compact), small
/// enough that a batch's rows and mutations stay within some tens of megabytes.
pub const COPY_BATCH_ROWS: usize = 50_000;

/// The CSV dialect of one COPY.
#[derive(Debug, Clone)]
struct CsvOptions {
    header: bool,
    delimiter: u8,
    quote: u8,
    /// The field text that stands for NULL (an empty field by default).
    null: String,
}

impl CsvOptions {
    fn parse(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<CsvOptions> {
        let mut parsed = CsvOptions {
            header: false,
            delimiter: b',',
            quote: b'"',
            null: String::new(),
        };
        let single_byte = |c: char, what: &str| {
            u8::try_from(c).map_err(|_| Error::Unsupported {
                what: format!("a non-ASCII COPY {what} ({c})"),
            })
        };
        for option in options {
            match option {
                CopyOption::Format(format) if format.value.eq_ignore_ascii_case("csv") => {}
                CopyOption::Header(header) => parsed.header = *header,
                CopyOption::Delimiter(c) => parsed.delimiter = single_byte(*c, "delimiter")?,
                CopyOption::Quote(c) => parsed.quote = single_byte(*c, "quote")?,
                CopyOption::Null(null) => parsed.null = null.clone(),
                other => {
                    return Err(Error::Unsupported {
                        what: format!("the COPY option {other}"),
                    });
                }
            }
        }
        for option in legacy {
            match option {
                CopyLegacyOption::Csv(csv_options) => {
                    for csv_option in csv_options {
                        match csv_option {
                            CopyLegacyCsvOption::Header => parsed.header = true,
                            CopyLegacyCsvOption::Quote(c) => {
                                parsed.quote = single_byte(*c, "quote")?;
                            }
                            other => {
                                return Err(Error::Unsupported {
                                    what: format!("the COPY option {other}"),
                                });
                            }
                        }
                    }
                }
                CopyLegacyOption::Delimiter(c) => parsed.delimiter = single_byte(*c, "delimiter")?,
                CopyLegacyOption::Null(null) => parsed.null = null.clone(),
                CopyLegacyOption::Header => parsed.header = true,
                other => {
                    return Err(Error::Unsupported {
                        what: format!("the COPY option {other}"),
                    });
                }
            }
        }
        Ok(parsed)
    }
}

pub(crate) async fn copy(session: &Session, statement: &Statement) -> Result<Output> {
    let Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        values,
    } = statement
    else {
        return Err(Error::Unsupported {
            what: statement.to_string(),
        });
    };
    let path = match target {
        CopyTarget::File { filename } => filename.clone(),
        CopyTarget::Stdin | CopyTarget::Stdout | CopyTarget::Program { .. } => {
            return Err(Error::Unsupported {
                what: "COPY to or from anything but a file".to_string(),
            });
        }
    };
    if !values.is_empty() {
        return Err(Error::Unsupported {
            what: "inline COPY data".to_string(),
        });
    }
    let csv = CsvOptions::parse(options, legacy_options)?;
    match (source, *to) {
        (
            CopySource::Table {
                table_name,
                columns,
            },
            false,
        ) => copy_from(session, table_name, columns, Path::new(&path), &csv).await,
        (CopySource::Table { table_name, .. }, true) => {
            let sql = format!("SELECT * FROM {table_name}");
            let query = split_statements(&sql)?
                .pop()
                .and_then(|parsed| match parsed {
                    ParsedStatement::Sql { statement, .. } => Some(statement),
                    ParsedStatement::Command(_) => None,
                })
                .ok_or_else(|| Error::Unsupported {
                    what: format!("COPY {table_name} TO"),
                })?;
            copy_to(session, *query, Path::new(&path), &csv).await
        }
        (CopySource::Query(query), true) => {
            copy_to(
                session,
                Statement::Query(Box::<Query>::clone(query)),
                Path::new(&path),
                &csv,
            )
            .await
        }
        (CopySource::Query(_), false) => Err(Error::Unsupported {
            what: "COPY (query) FROM".to_string(),
        }),
    }
}

async fn copy_from(
    session: &Session,
    table_name: &ObjectName,
    columns: &[Ident],
    path: &Path,
    csv_options: &CsvOptions,
) -> Result<Output> {
    let db = &session.db;
    let table = object_name(table_name)?;
    let def = db
        .catalog
        .table(&table)
        .ok_or_else(|| Error::TableNotFound { table })?;
    let names: Vec<ObjectName> = columns
        .iter()
        .map(|c| ObjectName::from(vec![c.clone()]))
        .collect();
    let targets = target_columns(&def, &names)?;
    let file_error = |source| Error::File {
        action: "read",
        path: path.display().to_string(),
        source,
    };
    let file = File::open(path).map_err(file_error)?;
    let total_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bytes_read = Arc::new(AtomicU64::new(0));
    let counted = CountingReader {
        inner: BufReader::with_capacity(1 << 20, file),
        read: bytes_read.clone(),
    };
    let reader = csv::ReaderBuilder::new()
        .has_headers(csv_options.header)
        .delimiter(csv_options.delimiter)
        .quote(csv_options.quote)
        .flexible(true)
        .from_reader(counted);
    // The file is read and converted on a thread of its own while this task writes the
    // batch before: on two cores the CSV conversion costs the load no time.
    let (sender, mut parsed) = tokio::sync::mpsc::channel(1);
    let converter = RecordConverter {
        def: def.clone(),
        targets: targets.clone(),
        null: csv_options.null.clone(),
    };
    std::thread::Builder::new()
        .name("rowdex-copy-reader".to_string())
        .spawn(move || converter.run(reader, &sender))
        .map_err(|source| Error::File {
            action: "start reading",
            path: path.display().to_string(),
            source,
        })?;
    let progress_label = format!("loading {} (bytes)", def.name);
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
                let next = EncodingBatch::start(&def, &targets, rows, db.now_micros(), lines)?;
                if let Some(before) = encoding.replace(next) {
                    loaded += load_batch(session, &def, &targets, before, loaded).await?;
                    if let Some(progress) = &session.progress {
                        progress(
                            &progress_label,
                            bytes_read.load(Ordering::Relaxed),
                            total_bytes,
                        );
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
        }
    }
    if let Some(last) = encoding.take() {
        loaded += load_batch(session, &def, &targets, last, loaded).await?;
    }
    if let Some(progress) = &session.progress {
        progress(&progress_label, total_bytes, total_bytes);
    }
    Ok(Output::Affected { rows: loaded })
}

/// The lines of the file a batch holds.
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
}

/// Turns CSV records into rows of one table, in batches of [`COPY_BATCH_ROWS`].
struct RecordConverter {
    def: Arc<TableDef>,
    targets: Vec<usize>,
    null: String,
}

impl RecordConverter {
    /// Reads the whole file into `sender`, stopping at the first bad record (after sending the
    /// rows before it), or as soon as the writer has stopped listening.
    fn run<R: Read>(self, mut reader: csv::Reader<R>, sender: &tokio::sync::mpsc::Sender<Parsed>) {
        let mut rows: Vec<Vec<Datum>> = Vec::with_capacity(COPY_BATCH_ROWS);
        let (mut first_line, mut last_line) = (0u64, 0u64);
        let mut record = csv::StringRecord::new();
        let failure = loop {
            let line = reader.position().line();
            match reader.read_record(&mut record) {
                Ok(true) => {}
                Ok(false) => break None,
                Err(error) => {
                    let line = error.position().map_or(line, |p| p.line());
                    break Some((line, Error::Csv(error)));
                }
            }
            let line = record.position().map_or(line, |p| p.line());
            match convert_record(&self.def, &self.targets, &record, &self.null) {
                Ok(row) => {
                    if rows.is_empty() {
                        first_line = line;
                    }
                    last_line = line;
                    rows.push(row);
                }
                Err(error) => break Some((line, error)),
            }
            if rows.len() >= COPY_BATCH_ROWS {
                let full = std::mem::replace(&mut rows, Vec::with_capacity(COPY_BATCH_ROWS));
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
        if !rows.is_empty() {
            let batch = Parsed::Batch {
                rows,
                first_line,
                last_line,
            };
            if sender.blocking_send(batch).is_err() {
                return;
            }
        }
        if let Some((line, error)) = failure {
            // Nothing is left to do when the writer has stopped listening.
            let _ = sender.blocking_send(Parsed::Failed { line, error });
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
        let current = session.db.table_def(&def.name)?;
        match write_new_rows(&session.db, &current, targets, &mut encoded).await {
            Ok(written) => return Ok(written),
            Err(error) if error.is_retryable() && attempt < WRITE_ATTEMPTS => attempt += 1,
            Err(error) => return Err(lines.failed(loaded_before, error)),
        }
    }
}

/// One CSV record as a full-width row of the table.
fn convert_record(
    def: &TableDef,
    targets: &[usize],
    record: &csv::StringRecord,
    null: &str,
) -> Result<Vec<Datum>> {
    if record.len() != targets.len() {
        return Err(Error::ColumnCountMismatch {
            table: def.name.clone(),
            expected: targets.len(),
            found: record.len(),
        });
    }
    let fields = targets.iter().zip(record.iter()).map(|(&column, field)| {
        if field == null {
            Ok(Datum::Null)
        } else {
            parse_field(def, &def.columns[column], field)
        }
    });
    full_row(def, targets, fields)
}

/// The value a CSV field spells for a column of the given type.
fn parse_field(def: &TableDef, column: &ColumnDef, field: &str) -> Result<Datum> {
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
            Datum::Decimal(parse_decimal(trimmed, scale).ok_or_else(mismatch)?)
        }
        DataType::Text { .. } | DataType::Date | DataType::Timestamp => {
            Datum::Text(field.to_string())
        }
        DataType::Bytes { .. } => Datum::Bytes(field.as_bytes().to_vec()),
    })
}

/// `-12.345` at scale 2 is -1235 (rounded half away from zero); None for anything else.
fn parse_decimal(text: &str, scale: i8) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let scale = usize::try_from(scale).ok()?;
    let mut value: i128 = 0;
    for b in whole
        .bytes()
        .chain(fraction.bytes().chain(std::iter::repeat(b'0')).take(scale))
    {
        value = value.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    if fraction.as_bytes().get(scale).is_some_and(|b| *b >= b'5') {
        value = value.checked_add(1)?;
    }
    Some(if negative { -value } else { value })
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

async fn copy_to(
    session: &Session,
    query: Statement,
    path: &Path,
    csv_options: &CsvOptions,
) -> Result<Output> {
    let ctx = session.statement_context(&Default::default());
    let plan = plan_statement(&ctx, query).await?;
    let mut stream = ctx
        .execute_logical_plan(plan)
        .await?
        .execute_stream()
        .await?;
    let file = File::create(path).map_err(|source| Error::File {
        action: "create",
        path: path.display().to_string(),
        source,
    })?;
    let mut writer = WriterBuilder::new()
        .with_header(csv_options.header)
        .with_delimiter(csv_options.delimiter)
        .with_quote(csv_options.quote)
        .with_null(csv_options.null.clone())
        .build(BufWriter::new(file));
    let mut written = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        written += batch.num_rows() as u64;
        writer.write(&batch)?;
    }
    writer.into_inner().into_inner().map_err(|e| Error::File {
        action: "write",
        path: path.display().to_string(),
        source: e.into_error(),
    })?;
    Ok(Output::Affected { rows: written })
}
