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
pub(crate) async fn execute_text(
    session: &Session,
    text: &str,
    format: Format,
    timing: bool,
) -> bool {
    let (statements, parse_error) = rowdex::parse_script(text);
    for statement in &statements {
        let started = Instant::now();
        match session.run(statement).await {
            Ok(output) => {
                print_output(&output, format, timing.then(|| started.elapsed()));
                // Advice goes to stderr, so a script's CSV output stays clean; SHOW WARNINGS
                // has just printed it.
                let shown = matches!(
                    statement,
                    rowdex::ParsedStatement::Command(rowdex::Command::ShowWarnings)
                );
                for warning in session.warnings().into_iter().filter(|_| !shown) {
                    eprintln!("warning: {warning}");
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return false;
            }
        }
    }
    if let Some(e) = parse_error {
        eprintln!("error: {e}");
        return false;
    }
    true
}
