//! COPY: loading data into a table, and writing a table or a query's result out, to and from
//! files or the client.
//!
//! - `COPY t [(columns)] FROM 'file' [WITH (...)]` loads the file (see `copy::load` for the
//!   batches it commits and what a stopped load leaves);
//! - `COPY t [(columns)] FROM STDIN [WITH (...)]` starts the same load and returns it as
//!   [`Output::CopyIn`], for the caller (the wire protocol server) to send it the client's data;
//! - `COPY t [(columns)] TO 'file'`, `COPY (SELECT ...) TO 'file'` write the rows to the file,
//!   and `... TO STDOUT` returns them as [`Output::CopyOut`].
//!
//! The formats are PostgreSQL's text and CSV (`copy_data::format`). Files are CSV unless the
//! options say otherwise (rowdex's COPY has always read and written CSV files); STDIN and STDOUT
//! are text unless they do, as in PostgreSQL.

use std::fs::File;
use std::io::{BufWriter, Write};

use datafusion::sql::sqlparser::ast::{CopySource, CopyTarget, Query, Statement};
use futures::StreamExt;

use crate::copy_data::binary_out::{BINARY_HEADER, BINARY_TRAILER, encode_binary_rows};
use crate::copy_data::format::{
    CopyFormat, CopyFormatKind, encode_each_row, encode_header, encode_rows,
};
use crate::copy_data::stream::{CHUNKS_IN_FLIGHT, ChunkReader, CopyIn, CopyOut};
use crate::df::context::plan_statement;
use crate::error::{Error, Result};
use crate::execute::copy::load::{LoadSource, LoadTarget};
use crate::output::Output;
use crate::session::Session;
use crate::sql::parse::{ParsedStatement, split_statements};

pub mod load;

/// The bytes a COPY TO STDOUT gathers into one piece before starting the next.
const OUT_CHUNK_BYTES: usize = 64 * 1024;

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
    if !values.is_empty() {
        return Err(Error::Unsupported {
            what: "inline COPY data".to_string(),
        });
    }
    let default_kind = match target {
        CopyTarget::File { .. } => CopyFormatKind::Csv,
        CopyTarget::Stdin | CopyTarget::Stdout => CopyFormatKind::Text,
        CopyTarget::Program { .. } => {
            return Err(Error::Unsupported {
                what: "COPY to or from a program".to_string(),
            });
        }
    };
    let format = CopyFormat::parse(options, legacy_options, default_kind)?;
    match (source, *to) {
        (
            CopySource::Table {
                table_name,
                columns,
            },
            false,
        ) => {
            let load = LoadTarget::resolve(session, table_name, columns)?;
            match target {
                CopyTarget::File { filename } => {
                    copy_from_file(session, load, filename, &format).await
                }
                _ => Ok(copy_from_stdin(session, load, format)),
            }
        }
        (
            CopySource::Table {
                table_name,
                columns,
            },
            true,
        ) => {
            let list = if columns.is_empty() {
                "*".to_string()
            } else {
                columns
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let sql = format!("SELECT {list} FROM {table_name}");
            let query = split_statements(&sql)?
                .pop()
                .and_then(|parsed| match parsed {
                    ParsedStatement::Sql { statement, .. } => Some(statement),
                    ParsedStatement::Command(_) => None,
                })
                .ok_or_else(|| Error::Unsupported {
                    what: format!("COPY {table_name} TO"),
                })?;
            copy_to(session, *query, target, format).await
        }
        (CopySource::Query(query), true) => {
            let query = Statement::Query(Box::<Query>::clone(query));
            copy_to(session, query, target, format).await
        }
        (CopySource::Query(_), false) => Err(Error::Unsupported {
            what: "COPY (query) FROM".to_string(),
        }),
    }
}

/// Checks what a COPY names (its table and columns, or its query) without running it: what a
/// wire protocol's Describe reports as an error, as PostgreSQL does when it parses the COPY.
pub(crate) async fn check(session: &Session, statement: &Statement) -> Result<()> {
    match statement {
        Statement::Copy {
            source:
                CopySource::Table {
                    table_name,
                    columns,
                },
            ..
        } => LoadTarget::resolve(session, table_name, columns).map(|_| ()),
        Statement::Copy {
            source: CopySource::Query(query),
            ..
        } => {
            let ctx = session.statement_context(&Default::default());
            let query = Statement::Query(Box::<Query>::clone(query));
            plan_statement(&ctx, query).await.map(|_| ())
        }
        _ => Ok(()),
    }
}

async fn copy_from_file(
    session: &Session,
    load: LoadTarget,
    path: &str,
    format: &CopyFormat,
) -> Result<Output> {
    let file = File::open(path).map_err(|source| Error::File {
        action: "read",
        path: path.to_string(),
        source,
    })?;
    let total_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let source = LoadSource {
        reader: file,
        name: path.to_string(),
        total_bytes,
    };
    let rows = load.run(session, source, format).await?;
    Ok(Output::Affected { rows })
}

/// Starts the load on a task of its own, reading what the returned [`CopyIn`] is sent.
fn copy_from_stdin(session: &Session, load: LoadTarget, format: CopyFormat) -> Output {
    let (chunks, received) = tokio::sync::mpsc::channel(CHUNKS_IN_FLIGHT);
    let columns = load.columns();
    let session = session.clone();
    let load_format = format.clone();
    let task = tokio::spawn(async move {
        let source = LoadSource {
            reader: ChunkReader::new(received),
            name: "STDIN".to_string(),
            total_bytes: 0,
        };
        load.run(&session, source, &load_format).await
    });
    Output::CopyIn(CopyIn::new(chunks, task, columns, format))
}

/// Runs `query` and writes its rows to the file `target` names, or returns them for STDOUT.
async fn copy_to(
    session: &Session,
    query: Statement,
    target: &CopyTarget,
    format: CopyFormat,
) -> Result<Output> {
    let ctx = session.statement_context(&Default::default());
    let plan = plan_statement(&ctx, query).await?;
    let columns = plan.schema().fields().len();
    let binary = format.kind == CopyFormatKind::Binary;
    let mut chunk = Vec::new();
    if binary {
        // Sent with the first row, as PostgreSQL sends it.
        chunk.extend_from_slice(BINARY_HEADER);
    } else if format.header {
        let names = plan.schema().fields().iter().map(|f| f.name().as_str());
        encode_header(names, &format, &mut chunk);
    }
    let mut stream = ctx
        .execute_logical_plan(plan)
        .await?
        .execute_stream()
        .await?;
    let mut file = match target {
        CopyTarget::File { filename } => {
            let file = File::create(filename).map_err(|source| Error::File {
                action: "create",
                path: filename.clone(),
                source,
            })?;
            Some((BufWriter::new(file), filename.as_str()))
        }
        _ => None,
    };
    let mut chunks = Vec::new();
    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        match &mut file {
            Some((writer, path)) => {
                if binary {
                    for row in encode_binary_rows(&batch)? {
                        chunk.extend_from_slice(&row);
                    }
                } else {
                    encode_rows(&batch, &format, &mut chunk);
                }
                if chunk.len() >= OUT_CHUNK_BYTES {
                    write_file(writer, path, &chunk)?;
                    chunk.clear();
                }
            }
            // To the client, a piece per row (a CopyData message each, as PostgreSQL sends);
            // a text header line is a piece of its own, the binary header goes with the
            // first row.
            None => {
                if !binary && !chunk.is_empty() {
                    chunks.push(std::mem::take(&mut chunk));
                }
                let encoded = if binary {
                    encode_binary_rows(&batch)?
                } else {
                    encode_each_row(&batch, &format)
                };
                for row in encoded {
                    chunk.extend_from_slice(&row);
                    chunks.push(std::mem::take(&mut chunk));
                }
            }
        }
    }
    if binary {
        if file.is_none() && !chunks.is_empty() {
            chunks.push(BINARY_TRAILER.to_vec());
        } else {
            chunk.extend_from_slice(&BINARY_TRAILER);
        }
    }
    match file {
        Some((mut writer, path)) => {
            write_file(&mut writer, path, &chunk)?;
            writer.flush().map_err(|source| Error::File {
                action: "write",
                path: path.to_string(),
                source,
            })?;
            Ok(Output::Affected { rows })
        }
        None => {
            if !chunk.is_empty() {
                chunks.push(chunk);
            }
            Ok(Output::CopyOut(CopyOut {
                format,
                columns,
                rows,
                chunks,
            }))
        }
    }
}

fn write_file(writer: &mut BufWriter<File>, path: &str, bytes: &[u8]) -> Result<()> {
    writer.write_all(bytes).map_err(|source| Error::File {
        action: "write",
        path: path.to_string(),
        source,
    })
}
