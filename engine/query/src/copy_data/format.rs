//! COPY's options ([`CopyFormat`]) and how result rows are written in its two formats, as
//! PostgreSQL writes them, so that what COPY TO writes, COPY FROM (rowdex's or PostgreSQL's)
//! reads back to the same values: an empty string stays distinct from NULL, BYTEA travels as
//! `\x` hex, booleans as `t`/`f`.
//!
//! - **text**: one row a line, fields split at the delimiter (a tab by default), `\N` for NULL,
//!   backslash escapes (`\t`, `\n`, `\\`, octal and `\x` hex) for the bytes that would end a
//!   field or a line;
//! - **csv**: fields split at the delimiter (`,`), quoted with `"` when they hold the delimiter,
//!   a quote or a line break (a quoted field may span lines); NULL is an unquoted field equal to
//!   the NULL string (empty by default), so `""` is the empty string.
//!
//! A line `\.` alone ends the data in either format (old clients still send it).

use datafusion::arrow::array::{
    Array, BinaryArray, BooleanArray, Date32Array, Float64Array, LargeBinaryArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType as ArrowType, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption};
use rowdex_codec::{format_bytea, format_date};

use crate::error::{Error, Result};
use crate::format::{column_texts, list_texts};
use crate::time_zone::postgres_timestamp;

/// The two data formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormatKind {
    /// PostgreSQL's text format: tab-separated, backslash escapes, `\N` for NULL.
    Text,
    Csv,
    /// PostgreSQL's binary format (`copy_data::binary`): COPY FROM only.
    Binary,
}

/// How one COPY's data is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyFormat {
    pub kind: CopyFormatKind,
    /// The first line names the columns (skipped on input).
    pub header: bool,
    pub delimiter: u8,
    /// CSV only: the quote character, and the one that escapes a quote inside quotes.
    pub quote: u8,
    pub escape: u8,
    /// The field text that stands for NULL: `\N` in text, an unquoted empty field in CSV.
    pub null: String,
}

impl CopyFormat {
    /// The format `options` describe; without a FORMAT (or CSV) option, `default` is used.
    pub fn parse(
        options: &[CopyOption],
        legacy: &[CopyLegacyOption],
        default: CopyFormatKind,
    ) -> Result<CopyFormat> {
        let mut kind = default;
        let mut header = false;
        let mut delimiter = None;
        let mut quote = None;
        let mut escape = None;
        let mut null = None;
        let single_byte = |c: char, what: &str| {
            u8::try_from(c).map_err(|_| Error::Unsupported {
                what: format!("a non-ASCII COPY {what} ({c})"),
            })
        };
        let unsupported = |option: String| Error::Unsupported {
            what: format!("the COPY option {option}"),
        };
        for option in options {
            match option {
                CopyOption::Format(format) => {
                    kind = match format.value.to_ascii_lowercase().as_str() {
                        "csv" => CopyFormatKind::Csv,
                        "text" => CopyFormatKind::Text,
                        "binary" => CopyFormatKind::Binary,
                        _ => return Err(unsupported(option.to_string())),
                    };
                }
                CopyOption::Header(on) => header = *on,
                CopyOption::Delimiter(c) => delimiter = Some(single_byte(*c, "delimiter")?),
                CopyOption::Quote(c) => quote = Some(single_byte(*c, "quote")?),
                CopyOption::Escape(c) => escape = Some(single_byte(*c, "escape")?),
                CopyOption::Null(text) => null = Some(text.clone()),
                // Every load is written as new rows already.
                CopyOption::Freeze(_) => {}
                CopyOption::Encoding(encoding)
                    if matches!(
                        encoding.to_ascii_uppercase().replace('-', "").as_str(),
                        "UTF8" | "UNICODE"
                    ) => {}
                other => return Err(unsupported(other.to_string())),
            }
        }
        for option in legacy {
            match option {
                CopyLegacyOption::Csv(csv_options) => {
                    kind = CopyFormatKind::Csv;
                    for csv_option in csv_options {
                        match csv_option {
                            CopyLegacyCsvOption::Header => header = true,
                            CopyLegacyCsvOption::Quote(c) => {
                                quote = Some(single_byte(*c, "quote")?);
                            }
                            CopyLegacyCsvOption::Escape(c) => {
                                escape = Some(single_byte(*c, "escape")?);
                            }
                            other => return Err(unsupported(other.to_string())),
                        }
                    }
                }
                CopyLegacyOption::Delimiter(c) => delimiter = Some(single_byte(*c, "delimiter")?),
                CopyLegacyOption::Null(text) => null = Some(text.clone()),
                CopyLegacyOption::Header => header = true,
                other => return Err(unsupported(other.to_string())),
            }
        }
        let csv = kind == CopyFormatKind::Csv;
        let quote = quote.unwrap_or(b'"');
        let format = CopyFormat {
            kind,
            header,
            delimiter: delimiter.unwrap_or(if csv { b',' } else { b'\t' }),
            quote,
            escape: escape.unwrap_or(quote),
            null: null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() }),
        };
        format.check()?;
        Ok(format)
    }

    /// Refuses delimiters that cannot be told apart from the data, as PostgreSQL does.
    fn check(&self) -> Result<()> {
        let bad = |what: &str| {
            Err(Error::BadCopyData {
                message: format!("COPY {what}"),
            })
        };
        if matches!(self.delimiter, b'\r' | b'\n') {
            return bad("delimiter cannot be newline or carriage return");
        }
        if self.kind == CopyFormatKind::Text && self.delimiter == b'\\' {
            return bad("delimiter cannot be backslash");
        }
        if self.kind == CopyFormatKind::Csv && self.delimiter == self.quote {
            return bad("delimiter and quote must be different");
        }
        if self.null.contains(['\r', '\n']) {
            return bad("null representation cannot use newline or carriage return");
        }
        if self.kind == CopyFormatKind::Binary && self.header {
            return bad("HEADER cannot be given in BINARY mode");
        }
        Ok(())
    }
}

/// Appends the rows of `batch` to `out` in `format`, a line each.
pub fn encode_rows(batch: &RecordBatch, format: &CopyFormat, out: &mut Vec<u8>) {
    let columns = batch_texts(batch);
    for row in 0..batch.num_rows() {
        encode_row(&columns, row, format, out);
    }
}

/// Every row of `batch` in `format`, each in a piece of its own: PostgreSQL sends a `COPY ...
/// TO STDOUT` as one CopyData message per row, and drivers read rows by message.
pub fn encode_each_row(batch: &RecordBatch, format: &CopyFormat) -> Vec<Vec<u8>> {
    let columns = batch_texts(batch);
    (0..batch.num_rows())
        .map(|row| {
            let mut out = Vec::new();
            encode_row(&columns, row, format, &mut out);
            out
        })
        .collect()
}

/// Each column of `batch` as COPY's texts (None for NULL).
fn batch_texts(batch: &RecordBatch) -> Vec<Vec<Option<String>>> {
    batch
        .columns()
        .iter()
        .map(|column| copy_texts(column.as_ref()))
        .collect()
}

/// Appends row `row` of `columns` to `out`, ended by a line break.
fn encode_row(columns: &[Vec<Option<String>>], row: usize, format: &CopyFormat, out: &mut Vec<u8>) {
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            out.push(format.delimiter);
        }
        encode_field(column[row].as_deref(), format, out);
    }
    out.push(b'\n');
}

/// Appends the header line (the column names) to `out`.
pub fn encode_header<'a>(
    names: impl IntoIterator<Item = &'a str>,
    format: &CopyFormat,
    out: &mut Vec<u8>,
) {
    for (i, name) in names.into_iter().enumerate() {
        if i > 0 {
            out.push(format.delimiter);
        }
        encode_field(Some(name), format, out);
    }
    out.push(b'\n');
}

fn encode_field(value: Option<&str>, format: &CopyFormat, out: &mut Vec<u8>) {
    let Some(text) = value else {
        out.extend_from_slice(format.null.as_bytes());
        return;
    };
    match format.kind {
        // COPY TO in binary is refused before any row is written (`execute::copy`).
        CopyFormatKind::Text | CopyFormatKind::Binary => {
            for &b in text.as_bytes() {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    0x08 => out.extend_from_slice(b"\\b"),
                    0x0c => out.extend_from_slice(b"\\f"),
                    0x0b => out.extend_from_slice(b"\\v"),
                    b if b == format.delimiter => {
                        out.push(b'\\');
                        out.push(b);
                    }
                    b => out.push(b),
                }
            }
        }
        CopyFormatKind::Csv => {
            let needs_quotes = text == format.null
                || text == "\\."
                || text.bytes().any(|b| {
                    b == format.delimiter || b == format.quote || b == b'\n' || b == b'\r'
                });
            if !needs_quotes {
                out.extend_from_slice(text.as_bytes());
                return;
            }
            out.push(format.quote);
            for &b in text.as_bytes() {
                if b == format.quote || b == format.escape {
                    out.push(format.escape);
                }
                out.push(b);
            }
            out.push(format.quote);
        }
    }
}

/// Every value of a column as COPY writes it (None for NULL): PostgreSQL's spellings where
/// they differ from rowdex's display (`t`/`f`, `\x` hex, `Infinity`), the display otherwise.
fn copy_texts(array: &dyn Array) -> Vec<Option<String>> {
    let each = |f: &dyn Fn(usize) -> String| -> Vec<Option<String>> {
        (0..array.len())
            .map(|row| (!array.is_null(row)).then(|| f(row)))
            .collect()
    };
    let any = array.as_any();
    match array.data_type() {
        ArrowType::Boolean => match any.downcast_ref::<BooleanArray>() {
            Some(values) => each(&|row| if values.value(row) { "t" } else { "f" }.to_string()),
            None => column_texts(array),
        },
        ArrowType::Float64 => match any.downcast_ref::<Float64Array>() {
            Some(values) => each(&|row| float_text(values.value(row))),
            None => column_texts(array),
        },
        ArrowType::Binary => match any.downcast_ref::<BinaryArray>() {
            Some(values) => each(&|row| format_bytea(values.value(row))),
            None => column_texts(array),
        },
        ArrowType::LargeBinary => match any.downcast_ref::<LargeBinaryArray>() {
            Some(values) => each(&|row| format_bytea(values.value(row))),
            None => column_texts(array),
        },
        ArrowType::Date32 => match any.downcast_ref::<Date32Array>() {
            Some(values) => each(&|row| format_date(values.value(row))),
            None => column_texts(array),
        },
        ArrowType::Timestamp(TimeUnit::Microsecond, None) => {
            match any.downcast_ref::<TimestampMicrosecondArray>() {
                Some(values) => each(&|row| postgres_timestamp(values.value(row))),
                None => column_texts(array),
            }
        }
        ArrowType::List(_) => list_texts(array).unwrap_or_else(|| column_texts(array)),
        _ => column_texts(array),
    }
}

/// A double as PostgreSQL writes it: the shortest text that reads back the same value.
fn float_text(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(kind: CopyFormatKind) -> CopyFormat {
        CopyFormat::parse(&[], &[], kind).expect("default format")
    }

    fn some(text: &str) -> Option<String> {
        Some(text.to_string())
    }

    #[test]
    fn postgresql_spellings() {
        assert_eq!(float_text(f64::INFINITY), "Infinity");
        assert_eq!(float_text(0.1), "0.1");
        assert_eq!(postgres_timestamp(1_500_000), "1970-01-01 00:00:01.5");
        assert_eq!(postgres_timestamp(1_000_000), "1970-01-01 00:00:01");
        let booleans = BooleanArray::from(vec![Some(true), None, Some(false)]);
        assert_eq!(copy_texts(&booleans), vec![some("t"), None, some("f")]);
    }

    #[test]
    fn options_pick_the_format_and_refuse_clashes() {
        let csv = CopyFormat::parse(
            &[CopyOption::Format("csv".into()), CopyOption::Header(true)],
            &[],
            CopyFormatKind::Text,
        )
        .expect("csv");
        assert_eq!(
            (csv.kind, csv.delimiter, csv.null.as_str()),
            (CopyFormatKind::Csv, b',', "")
        );
        assert!(csv.header);
        let text = format(CopyFormatKind::Text);
        assert_eq!((text.delimiter, text.null.as_str()), (b'\t', "\\N"));
        assert!(
            CopyFormat::parse(
                &[CopyOption::Format("csv".into()), CopyOption::Delimiter('"')],
                &[],
                CopyFormatKind::Text
            )
            .is_err()
        );
        let binary = CopyFormat::parse(
            &[CopyOption::Format("binary".into())],
            &[],
            CopyFormatKind::Text,
        )
        .expect("binary");
        assert_eq!(binary.kind, CopyFormatKind::Binary);
        assert!(
            CopyFormat::parse(
                &[
                    CopyOption::Format("binary".into()),
                    CopyOption::Header(true)
                ],
                &[],
                CopyFormatKind::Text
            )
            .is_err()
        );
    }
}
