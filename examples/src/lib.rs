//! Runnable examples of rowdex: see `examples/` (run one with
//! `cargo run -p rowdex-examples --example NAME`). This library only holds what they share.

use rowdex::arrow::record_batch::RecordBatch;
use rowdex::{Output, Session};

/// Prints every row of `batches` as `|`-separated cells, indented under the statement.
pub fn print_batches(batches: &[RecordBatch]) {
    for batch in batches {
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = batch
                .columns()
                .iter()
                .map(|c| {
                    rowdex::format::cell_text(c.as_ref(), row).unwrap_or_else(|| "NULL".to_string())
                })
                .collect();
            println!("  {}", cells.join(" | "));
        }
    }
}

/// Runs `sql` and prints every result as `|`-separated rows, the way the examples show output.
pub async fn show(session: &Session, sql: &str) -> rowdex::Result<()> {
    println!("> {sql}");
    for output in session.execute(sql).await? {
        match output {
            Output::Rows { batches, .. } => print_batches(&batches),
            Output::Affected { rows } => println!("  ({rows} rows affected)"),
            Output::Done => {}
            Output::CopyOut(copied) => {
                for chunk in &copied.chunks {
                    print!("{}", String::from_utf8_lossy(chunk));
                }
            }
            // The examples run no COPY FROM STDIN: they have no client to send its data.
            Output::CopyIn(copy) => println!("  ({})", copy.abort().await),
        }
    }
    Ok(())
}
