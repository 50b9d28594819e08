//! Printing results: an aligned table for people, CSV/TSV/JSON for programs.

use std::io::Write;
use std::time::Duration;

use rowdex::Output;
use rowdex::arrow::array::Array;
use rowdex::arrow::datatypes::DataType;
use rowdex::format::column_texts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Tsv,
    Json,
}

/// Prints one statement's output to stdout, in one write. `elapsed` adds the status line.
pub fn print_output(output: &Output, format: Format, elapsed: Option<Duration>) {
    let mut text = Vec::new();
    let _ = write_output(&mut text, output, format, elapsed);
    // A closed stdout (e.g. piped into `head`) is not an error worth reporting.
    let _ = std::io::stdout().lock().write_all(&text);
}

fn write_output(
    out: &mut impl Write,
    output: &Output,
    format: Format,
    elapsed: Option<Duration>,
) -> std::io::Result<()> {
    let status = match output {
        Output::Rows { schema, batches } => {
            let header: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            let mut rows: Vec<Vec<Option<String>>> = Vec::new();
            let mut numeric = vec![false; header.len()];
            for batch in batches {
                for (i, column) in batch.columns().iter().enumerate() {
                    numeric[i] = is_numeric(column.data_type());
                }
                let mut columns: Vec<_> = batch
                    .columns()
                    .iter()
                    .map(|c| column_texts(c.as_ref()).into_iter())
                    .collect();
                for _ in 0..batch.num_rows() {
                    rows.push(columns.iter_mut().map(|c| c.next().flatten()).collect());
                }
            }
            match format {
                Format::Table => write_table(out, &header, &rows, &numeric)?,
                Format::Csv => write_delimited(out, &header, &rows, ',')?,
                Format::Tsv => write_delimited(out, &header, &rows, '\t')?,
                Format::Json => write_json(out, &header, &rows, &numeric)?,
            }
            let plural = if rows.len() == 1 { "" } else { "s" };
            format!("({} row{plural}", rows.len())
        }
        Output::Affected { rows } => {
            let plural = if *rows == 1 { "" } else { "s" };
            format!("({rows} row{plural} affected")
        }
        Output::Done => "(ok".to_string(),
        Output::CopyOut(copied) => {
            for chunk in &copied.chunks {
                out.write_all(chunk)?;
            }
            let plural = if copied.rows == 1 { "" } else { "s" };
            format!("({} row{plural} copied", copied.rows)
        }
        // The shell gives such a COPY up before printing (see `script`).
        Output::CopyIn(_) => "(COPY FROM STDIN given up".to_string(),
    };
    if let Some(elapsed) = elapsed {
        writeln!(out, "{status}, {:.3} ms)", elapsed.as_secs_f64() * 1000.0)?;
    } else if format == Format::Table && !matches!(output, Output::Rows { .. }) {
        writeln!(out, "{status})")?;
    }
    Ok(())
}

fn is_numeric(data_type: &DataType) -> bool {
    data_type.is_numeric()
}

fn write_table(
    out: &mut impl Write,
    header: &[String],
    rows: &[Vec<Option<String>>],
    numeric: &[bool],
) -> std::io::Result<()> {
    let shown = |cell: &Option<String>| cell.clone().unwrap_or_else(|| "NULL".to_string());
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(shown(cell).chars().count());
        }
    }
    let rule: String = widths
        .iter()
        .map(|w| "-".repeat(w + 2))
        .collect::<Vec<_>>()
        .join("+");
    let line = |cells: Vec<String>, right: &[bool]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = widths[i] - c.chars().count();
                if right.get(i).copied().unwrap_or(false) {
                    format!(" {}{c} ", " ".repeat(pad))
                } else {
                    format!(" {c}{} ", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join("|")
    };
    writeln!(out, "{}", line(header.to_vec(), &[]))?;
    writeln!(out, "{rule}")?;
    for row in rows {
        writeln!(out, "{}", line(row.iter().map(shown).collect(), numeric))?;
    }
    Ok(())
}

fn write_delimited(
    out: &mut impl Write,
    header: &[String],
    rows: &[Vec<Option<String>>],
    delimiter: char,
) -> std::io::Result<()> {
    let field = |text: &str| {
        if text.contains([delimiter, '"', '\n', '\r']) {
            format!("\"{}\"", text.replace('"', "\"\""))
        } else {
            text.to_string()
        }
    };
    let separator = delimiter.to_string();
    writeln!(
        out,
        "{}",
        header
            .iter()
            .map(|h| field(h))
            .collect::<Vec<_>>()
            .join(&separator)
    )?;
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .map(|c| c.as_deref().map(field).unwrap_or_default())
            .collect();
        writeln!(out, "{}", cells.join(&separator))?;
    }
    Ok(())
}

fn write_json(
    out: &mut impl Write,
    header: &[String],
    rows: &[Vec<Option<String>>],
    numeric: &[bool],
) -> std::io::Result<()> {
    let objects: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let map = header
                .iter()
                .zip(row)
                .enumerate()
                .map(|(i, (name, cell))| {
                    let value = match cell {
                        None => serde_json::Value::Null,
                        Some(text) if numeric[i] => serde_json::from_str(text)
                            .unwrap_or_else(|_| serde_json::Value::String(text.clone())),
                        Some(text) => serde_json::Value::String(text.clone()),
                    };
                    (name.clone(), value)
                })
                .collect();
            serde_json::Value::Object(map)
        })
        .collect();
    let text = serde_json::to_string_pretty(&objects).unwrap_or_default();
    writeln!(out, "{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Vec<String>, Vec<Vec<Option<String>>>) {
        (
            vec!["a".into(), "b".into()],
            vec![
                vec![Some("1".into()), None],
                vec![Some("10".into()), Some("x,\"y\"".into())],
            ],
        )
    }

    #[test]
    fn csv_prints_a_header_and_empty_fields_for_null() -> std::io::Result<()> {
        let (header, rows) = sample();
        let mut out = Vec::new();
        write_delimited(&mut out, &header, &rows, ',')?;
        assert_eq!(
            String::from_utf8_lossy(&out),
            "a,b\n1,\n10,\"x,\"\"y\"\"\"\n"
        );
        Ok(())
    }

    #[test]
    fn table_aligns_and_shows_null() -> std::io::Result<()> {
        let (header, rows) = sample();
        let mut out = Vec::new();
        write_table(&mut out, &header, &rows, &[true, false])?;
        let text = String::from_utf8_lossy(&out).to_string();
        assert_eq!(
            text,
            " a  | b     \n----+-------\n  1 | NULL  \n 10 | x,\"y\" \n"
        );
        Ok(())
    }

    #[test]
    fn json_keeps_numbers_numeric() -> std::io::Result<()> {
        let (header, rows) = sample();
        let mut out = Vec::new();
        write_json(&mut out, &header, &rows, &[true, false])?;
        let parsed: serde_json::Value =
            serde_json::from_slice(&out).map_err(std::io::Error::other)?;
        assert_eq!(parsed[1]["a"], serde_json::json!(10));
        assert_eq!(parsed[0]["b"], serde_json::Value::Null);
        Ok(())
    }
}
