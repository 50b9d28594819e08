//! Running SQL text in the shell: every statement in order, each result printed (warnings on
//! stderr), stopping at the first error.

use std::process::ExitCode;
use std::time::Instant;

use rowdex::Session;

use crate::output::{Format, print_output};

/// Runs a script, printing each result; stops at the first error with status 1.
pub(crate) async fn run_script(session: &Session, script: &str, format: Format) -> ExitCode {
    match execute_text(session, script, format, false).await {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

/// Runs every statement of `text`, printing results (and, when `timing`, a status line with the
/// elapsed time). Returns false after the first error, which goes to stderr.
///
/// The text is split at its semicolons and each statement runs as it comes: a query the
/// compiled-query cache knows (the same text but for its literals) is neither parsed nor
/// planned again.
pub(crate) async fn execute_text(
    session: &Session,
    text: &str,
    format: Format,
    timing: bool,
) -> bool {
    let statements = match rowdex::script_statements(text) {
        Ok(statements) => statements,
        Err(e) => {
            eprintln!("error: {e}");
            return false;
        }
    };
    for statement in &statements {
        let started = Instant::now();
        match session.run_script_statement(statement).await {
            Ok(rowdex::Output::CopyIn(copy)) => {
                // The shell reads SQL, not data: its input cannot carry the rows.
                let error = copy.abort().await;
                eprintln!(
                    "error: COPY ... FROM STDIN takes its data from a client such as psql \
                     (through `rowdex serve`); the shell loads files: COPY t FROM 'file' ({error})"
                );
                return false;
            }
            Ok(output) => {
                print_output(&output, format, timing.then(|| started.elapsed()));
                // Advice goes to stderr, so a script's CSV output stays clean; SHOW WARNINGS
                // has just printed it.
                if !statement.is_show_warnings() {
                    for warning in session.warnings() {
                        eprintln!("warning: {warning}");
                    }
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return false;
            }
        }
    }
    true
}
