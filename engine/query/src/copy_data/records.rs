//! Records read from COPY data in either format ([`RecordReader`]): the fields of one line
//! (or, in CSV, of a quoted field's several lines) with NULLs told apart from text by the
//! format's rules (see `copy_data::format`).

use std::io::BufRead;

use crate::copy_data::format::{CopyFormat, CopyFormatKind};

/// A field's buffer: text for the text formats, bytes for the binary one.
pub trait FieldBuffer: Default + std::ops::Deref {
    /// Empties the buffer, keeping its allocation.
    fn empty(&mut self);
}

impl FieldBuffer for String {
    fn empty(&mut self) {
        self.clear();
    }
}

impl FieldBuffer for Vec<u8> {
    fn empty(&mut self) {
        self.clear();
    }
}

/// One record read by a [`RecordReader`] (text fields) or a `BinaryReader` (`Record<Vec<u8>>`):
/// its fields, each None for NULL. The buffers are kept from record to record.
#[derive(Debug, Default)]
pub struct Record<B = String> {
    fields: Vec<B>,
    nulls: Vec<bool>,
    len: usize,
}

impl<B: FieldBuffer> Record<B> {
    pub fn len(&self) -> usize {
        self.len
    }

    /// Field `i`; None for NULL (and past the end).
    pub fn field(&self, i: usize) -> Option<&B::Target> {
        if i >= self.len || self.nulls[i] {
            None
        } else {
            Some(&self.fields[i])
        }
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Starts a new field and returns its (emptied) buffer.
    pub(crate) fn push(&mut self) -> &mut B {
        if self.len == self.fields.len() {
            self.fields.push(B::default());
            self.nulls.push(false);
        }
        self.nulls[self.len] = false;
        let field = &mut self.fields[self.len];
        field.empty();
        self.len += 1;
        field
    }

    pub(crate) fn set_last_null(&mut self) {
        if let Some(null) = self.len.checked_sub(1).and_then(|i| self.nulls.get_mut(i)) {
            *null = true;
        }
    }
}

/// Why a record could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The bytes break the format; the message says how.
    Malformed(String),
    /// The source failed (for COPY FROM STDIN: the client gave up).
    Io(std::io::Error),
}

/// Reads the records of one COPY's data, line by line.
pub struct RecordReader<R> {
    source: R,
    format: CopyFormat,
    /// The physical line the next line read is (1-based).
    next_line: u64,
    /// The line the record last read (or failing to read) starts on.
    record_line: u64,
    bytes: Vec<u8>,
    /// A field's bytes while its escapes are undone, kept from field to field.
    scratch: Vec<u8>,
    /// The line break `next_line` took off the line (a quoted CSV field keeps it).
    line_break: &'static [u8],
    started: bool,
    ended: bool,
}

impl<R: BufRead> RecordReader<R> {
    pub fn new(source: R, format: CopyFormat) -> Self {
        RecordReader {
            source,
            format,
            next_line: 1,
            record_line: 1,
            bytes: Vec::new(),
            scratch: Vec::new(),
            line_break: b"",
            started: false,
            ended: false,
        }
    }

    /// The line the record last read (or failing to read) starts on, counting a header.
    pub fn line(&self) -> u64 {
        self.record_line
    }

    /// Reads the next record into `record`; false at the end of the data.
    pub fn read(&mut self, record: &mut Record) -> std::result::Result<bool, ReadError> {
        if !self.started {
            self.started = true;
            if self.format.header && !self.next_line(false)? {
                return Ok(false);
            }
        }
        self.record_line = self.next_line;
        if self.ended || !self.next_line(false)? {
            return Ok(false);
        }
        if self.bytes == b"\\." {
            self.ended = true;
            return Ok(false);
        }
        record.clear();
        match self.format.kind {
            CopyFormatKind::Text => self.text_fields(record)?,
            CopyFormatKind::Csv => self.csv_fields(record)?,
            // Binary data is read by `copy_data::binary`, never line by line.
            CopyFormatKind::Binary => {
                return Err(ReadError::Malformed(
                    "binary COPY data read as text".to_string(),
                ));
            }
        }
        Ok(true)
    }

    /// Reads one physical line into `bytes` (appending when `append`), without its line
    /// break; false at the end of the source.
    fn next_line(&mut self, append: bool) -> std::result::Result<bool, ReadError> {
        if !append {
            self.bytes.clear();
        }
        // The break is stripped from this line only: a `\r` kept from the line before (a
        // quoted field's content) is data.
        let start = self.bytes.len();
        let read = self
            .source
            .read_until(b'\n', &mut self.bytes)
            .map_err(ReadError::Io)?;
        if read == 0 {
            return Ok(false);
        }
        self.next_line += 1;
        self.line_break = b"";
        if self.bytes.last() == Some(&b'\n') {
            self.bytes.pop();
            self.line_break = b"\n";
            if self.bytes.len() > start && self.bytes.last() == Some(&b'\r') {
                self.bytes.pop();
                self.line_break = b"\r\n";
            }
        }
        Ok(true)
    }

    fn text_fields(&mut self, record: &mut Record) -> std::result::Result<(), ReadError> {
        let line = &self.bytes;
        let bytes = &mut self.scratch;
        for raw in line.split(|b| *b == self.format.delimiter) {
            let field = record.push();
            if raw == self.format.null.as_bytes() {
                record.set_last_null();
                continue;
            }
            bytes.clear();
            let mut i = 0;
            while i < raw.len() {
                let b = raw[i];
                i += 1;
                if b != b'\\' {
                    bytes.push(b);
                    continue;
                }
                let Some(&next) = raw.get(i) else {
                    // A backslash ending the line stands for itself.
                    bytes.push(b'\\');
                    break;
                };
                i += 1;
                match next {
                    b'b' => bytes.push(0x08),
                    b'f' => bytes.push(0x0c),
                    b'n' => bytes.push(b'\n'),
                    b'r' => bytes.push(b'\r'),
                    b't' => bytes.push(b'\t'),
                    b'v' => bytes.push(0x0b),
                    b'0'..=b'7' => {
                        let mut value = u32::from(next - b'0');
                        for _ in 0..2 {
                            match raw.get(i) {
                                Some(d @ b'0'..=b'7') => {
                                    value = value * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        bytes.push((value & 0xff) as u8);
                    }
                    b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                        let mut value = 0u8;
                        for _ in 0..2 {
                            match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                                Some(digit) => {
                                    value = value * 16 + digit as u8;
                                    i += 1;
                                }
                                None => break,
                            }
                        }
                        bytes.push(value);
                    }
                    other => bytes.push(other),
                }
            }
            field.push_str(utf8(bytes)?);
        }
        Ok(())
    }

    fn csv_fields(&mut self, record: &mut Record) -> std::result::Result<(), ReadError> {
        let CopyFormat {
            delimiter,
            quote,
            escape,
            ..
        } = self.format;
        let mut field = std::mem::take(&mut self.scratch);
        field.clear();
        let mut quoted = false;
        let mut in_quotes = false;
        let mut i = 0;
        loop {
            if i == self.bytes.len() {
                if in_quotes {
                    // A quoted field holds the line break; the record goes on.
                    let line_break = self.line_break;
                    if line_break.is_empty() {
                        return Err(ReadError::Malformed(
                            "unterminated CSV quoted field".to_string(),
                        ));
                    }
                    field.extend_from_slice(line_break);
                    let at = self.bytes.len();
                    if !self.next_line(true)? {
                        return Err(ReadError::Malformed(
                            "unterminated CSV quoted field".to_string(),
                        ));
                    }
                    i = at;
                    continue;
                }
                finish_csv_field(record, &mut field, quoted, &self.format.null)?;
                self.scratch = field;
                return Ok(());
            }
            let b = self.bytes[i];
            i += 1;
            if in_quotes {
                if b == escape
                    && self
                        .bytes
                        .get(i)
                        .is_some_and(|n| *n == quote || *n == escape)
                {
                    field.push(self.bytes[i]);
                    i += 1;
                } else if b == quote {
                    in_quotes = false;
                } else {
                    field.push(b);
                }
            } else if b == delimiter {
                finish_csv_field(record, &mut field, quoted, &self.format.null)?;
                quoted = false;
            } else if b == quote {
                in_quotes = true;
                quoted = true;
            } else {
                field.push(b);
            }
        }
    }
}

/// Ends a CSV field: NULL when unquoted and equal to the NULL string.
fn finish_csv_field(
    record: &mut Record,
    field: &mut Vec<u8>,
    quoted: bool,
    null: &str,
) -> std::result::Result<(), ReadError> {
    let is_null = !quoted && field == null.as_bytes();
    let slot = record.push();
    if is_null {
        record.set_last_null();
    } else {
        slot.push_str(utf8(field)?);
    }
    field.clear();
    Ok(())
}

fn utf8(bytes: &[u8]) -> std::result::Result<&str, ReadError> {
    std::str::from_utf8(bytes)
        .map_err(|_| ReadError::Malformed("a field is not valid UTF-8".to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;

    use super::*;
    use crate::copy_data::format::{encode_header, encode_rows};

    fn records(data: &str, format: &CopyFormat) -> Vec<Vec<Option<String>>> {
        let mut reader = RecordReader::new(data.as_bytes(), format.clone());
        let mut record = Record::default();
        let mut all = Vec::new();
        while reader.read(&mut record).expect("read") {
            all.push(
                (0..record.len())
                    .map(|i| record.field(i).map(str::to_string))
                    .collect(),
            );
        }
        all
    }

    fn format(kind: CopyFormatKind) -> CopyFormat {
        CopyFormat::parse(&[], &[], kind).expect("default format")
    }

    fn some(text: &str) -> Option<String> {
        Some(text.to_string())
    }

    #[test]
    fn text_fields_unescape_and_null() {
        let rows = records(
            "1\ta\\tb\t\\N\r\n2\t\\\\N\t\\101\\x41\n\\.\nignored\n",
            &format(CopyFormatKind::Text),
        );
        assert_eq!(
            rows,
            vec![
                vec![some("1"), some("a\tb"), None],
                vec![some("2"), some("\\N"), some("AA")],
            ]
        );
    }

    #[test]
    fn csv_quotes_keep_empty_strings_and_line_breaks() {
        let rows = records(
            "1,\"\",\n2,\"a,\"\"b\"\"\nc\",x\n",
            &format(CopyFormatKind::Csv),
        );
        assert_eq!(
            rows,
            vec![
                vec![some("1"), some(""), None],
                vec![some("2"), some("a,\"b\"\nc"), some("x")],
            ]
        );
    }

    #[test]
    fn a_carriage_return_ending_a_quoted_line_is_data() {
        // Found by `any_values_round_trip`: the `\r` before a quoted line break is content,
        // and the line after is a bare `\n`.
        let rows = records(
            "\"\r\r\n\n\",\n\"a\r\n\r\n\",\r\n",
            &format(CopyFormatKind::Csv),
        );
        assert_eq!(
            rows,
            vec![vec![some("\r\r\n\n"), None], vec![some("a\r\n\r\n"), None]]
        );
    }

    #[test]
    fn an_unterminated_quote_is_malformed() {
        let mut reader = RecordReader::new(&b"1,\"abc\n"[..], format(CopyFormatKind::Csv));
        let mut record = Record::default();
        assert!(matches!(
            reader.read(&mut record),
            Err(ReadError::Malformed(_))
        ));
    }

    #[test]
    fn written_rows_read_back_the_same() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", ArrowType::Int64, true),
            Field::new("s", ArrowType::Utf8, true),
        ]));
        let texts = [
            Some(""),
            None,
            Some("tab\there"),
            Some("line\nbreak"),
            Some("quote\" and , comma"),
            Some("back\\slash \\N"),
            Some("\\."),
        ];
        let ids: Vec<Option<i64>> = (0..texts.len() as i64).map(Some).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(texts.to_vec())),
        ];
        let batch = RecordBatch::try_new(schema, columns).expect("batch");
        for kind in [CopyFormatKind::Text, CopyFormatKind::Csv] {
            let mut format = format(kind);
            format.header = true;
            let mut out = Vec::new();
            encode_header(["id", "s"], &format, &mut out);
            encode_rows(&batch, &format, &mut out);
            let text = String::from_utf8(out).expect("utf-8");
            let read = records(&text, &format);
            let expected: Vec<Vec<Option<String>>> = texts
                .iter()
                .enumerate()
                .map(|(i, s)| vec![Some(i.to_string()), s.map(str::to_string)])
                .collect();
            assert_eq!(read, expected, "{kind:?}:\n{text}");
        }
    }

    proptest::proptest! {
        /// Any text, NULL or not, written in either format reads back the same.
        #[test]
        fn any_values_round_trip(
            rows in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::option::of("[a\\t\\n\\r\\\\\",N.x ]{0,6}"),
                    2,
                ),
                0..8,
            ),
            csv in proptest::bool::ANY,
            header in proptest::bool::ANY,
        ) {
            let schema = Arc::new(Schema::new(vec![
                Field::new("a", ArrowType::Utf8, true),
                Field::new("b", ArrowType::Utf8, true),
            ]));
            let column = |i: usize| -> ArrayRef {
                Arc::new(StringArray::from(
                    rows.iter().map(|r| r[i].clone()).collect::<Vec<_>>(),
                ))
            };
            let batch = RecordBatch::try_new(schema, vec![column(0), column(1)]).expect("batch");
            let kind = if csv { CopyFormatKind::Csv } else { CopyFormatKind::Text };
            let mut format = format(kind);
            format.header = header;
            let mut out = Vec::new();
            if header {
                encode_header(["a", "b"], &format, &mut out);
            }
            encode_rows(&batch, &format, &mut out);
            let text = String::from_utf8(out).expect("utf-8");
            proptest::prop_assert_eq!(records(&text, &format), rows);
        }
    }
}
