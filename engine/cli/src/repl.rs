//! The interactive shell: multi-line statements ending at `;`, history in the home directory,
//! and backslash commands.

use std::path::PathBuf;
use std::process::ExitCode;

use rowdex::{Database, Session};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::output::Format;
use crate::script::execute_text;

const HELP: &str = "\
Statements end with ';' and may span lines.
  \\d            list tables
  \\d TABLE      describe a table (columns, key, salt buckets) and list its indexes
  \\page N QUERY run a SELECT N rows at a time, by cursor (no OFFSET): one page now
  \\next         the next page of the last \\page query
  \\timing       toggle the elapsed time after each result
  \\q            quit
  \\?            this help";

pub async fn run(db: &Database, session: &Session, format: Format) -> ExitCode {
    let mut editor = match DefaultEditor::new() {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("error: cannot start the line editor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let history = history_path();
    if let Some(path) = &history {
        // No history yet is normal.
        let _ = editor.load_history(path);
    }
    println!(
        "rowdex {} — type \\? for help, \\q to quit",
        env!("CARGO_PKG_VERSION")
    );
    let mut timing = true;
    let mut paging: Option<Paging> = None;
    let mut buffer = String::new();
    loop {
        // As psql does, the prompt shows an open transaction.
        let prompt = match (buffer.is_empty(), session.in_transaction()) {
            (true, false) => "rowdex> ",
            (true, true) => "rowdex*> ",
            (false, false) => "   ...> ",
            (false, true) => "    ...> ",
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: {e}");
                break;
            }
        };
        let trimmed = line.trim();
        if buffer.is_empty() && trimmed.starts_with('\\') {
            let _ = editor.add_history_entry(trimmed);
            match backslash(db, session, trimmed, format, &mut timing, &mut paging).await {
                Flow::Quit => break,
                Flow::Continue => continue,
            }
        }
        if !buffer.is_empty() {
            buffer.push('\n');
        }
        buffer.push_str(&line);
        if !statement_complete(&buffer) {
            continue;
        }
        let _ = editor.add_history_entry(buffer.as_str());
        execute_text(session, &buffer, format, timing).await;
        buffer.clear();
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    ExitCode::SUCCESS
}

enum Flow {
    Continue,
    Quit,
}

/// The query `\page` runs, and where its next page starts.
struct Paging {
    sql: String,
    size: usize,
    next: Option<String>,
}

/// Fetches and prints one page of `paging`'s query, then remembers where the next starts.
async fn print_page(session: &Session, paging: &mut Paging, format: Format) {
    match session
        .query_page(&paging.sql, paging.size, paging.next.as_deref())
        .await
    {
        Ok(page) => {
            let rows = rowdex::Output::Rows {
                schema: page.schema,
                batches: page.batches,
            };
            crate::output::print_output(&rows, format, None);
            paging.next = page.next;
            if paging.next.is_some() {
                println!("(more: \\next)");
            } else {
                println!("(last page)");
            }
        }
        Err(e) => eprintln!("error: {e}"),
    }
}

async fn backslash(
    db: &Database,
    session: &Session,
    command: &str,
    format: Format,
    timing: &mut bool,
    paging: &mut Option<Paging>,
) -> Flow {
    let mut words = command.split_whitespace();
    match (words.next(), words.next()) {
        (Some("\\page"), Some(size)) => {
            let sql = command
                .trim_start()
                .trim_start_matches("\\page")
                .trim_start()
                .trim_start_matches(size)
                .trim()
                .trim_end_matches(';')
                .to_string();
            match size.parse::<usize>() {
                Ok(size) if size > 0 && !sql.is_empty() => {
                    let mut state = Paging {
                        sql,
                        size,
                        next: None,
                    };
                    print_page(session, &mut state, format).await;
                    *paging = Some(state);
                }
                _ => {
                    eprintln!("error: \\page takes a page size and a SELECT: \\page 20 SELECT ...")
                }
            }
        }
        (Some("\\next"), _) => match paging {
            Some(state) if state.next.is_some() => print_page(session, state, format).await,
            Some(_) => eprintln!("error: the last \\page query has no more pages"),
            None => eprintln!("error: no \\page query to continue (\\page N SELECT ...)"),
        },
        (Some("\\q"), _) => return Flow::Quit,
        (Some("\\?"), _) => println!("{HELP}"),
        (Some("\\timing"), _) => {
            *timing = !*timing;
            println!("timing is {}", if *timing { "on" } else { "off" });
        }
        (Some("\\d"), None) => {
            execute_text(session, "SHOW TABLES", format, false).await;
        }
        (Some("\\d"), Some(table)) => {
            let name = if db.table_names().iter().any(|t| t == table) {
                format!("\"{table}\"")
            } else {
                table.to_string()
            };
            if execute_text(session, &format!("DESCRIBE {name}"), format, false).await {
                execute_text(session, &format!("SHOW INDEXES FROM {name}"), format, false).await;
            }
        }
        _ => eprintln!("error: unknown command {command} (\\? lists the commands)"),
    }
    Flow::Continue
}

/// Whether the buffer holds complete statements: it ends with `;` outside any string or comment.
fn statement_complete(buffer: &str) -> bool {
    rowdex::statement_ends(buffer)
}

fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".rowdex_history"))
}
