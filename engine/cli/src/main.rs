//! The `rowdex` binary: an interactive SQL shell over a rowdex database, a script runner
//! (`-c`, `-f`, or statements piped on stdin), and `rowdex serve`, the PostgreSQL wire-protocol
//! server.

mod location;
mod output;
mod progress;
mod repl;
mod script;
mod serve;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::location::Location;
use crate::output::Format;
use crate::script::run_script;

/// mimalloc rather than glibc's malloc: a statement allocates and frees many small buffers
/// (rows, keys, wire messages) across the runtime's threads, and glibc's free lists and
/// consolidation were 8 % of the server's time under sysbench's point selects.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "rowdex",
    version,
    about = "SQL over a sorted key-value store",
    args_conflicts_with_subcommands = true
)]
struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// Directory of the durable database (created if missing).
    #[arg(default_value = "./rowdex-data")]
    dir: PathBuf,
    /// Use an in-memory database instead of DIR.
    #[arg(long, conflicts_with = "store")]
    memory: bool,
    /// Use the database on an etcd cluster instead of DIR:
    /// etcd://host:port[,host:port...][/name].
    #[arg(long, value_name = "ADDRESS")]
    store: Option<String>,
    /// Run these statements and exit.
    #[arg(short = 'c', long = "command")]
    command: Option<String>,
    /// Run the statements of this file and exit.
    #[arg(short = 'f', long = "file")]
    file: Option<PathBuf>,
    /// Output format (table by default on a terminal, csv otherwise).
    #[arg(long, value_enum)]
    format: Option<Format>,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Serve the database to PostgreSQL clients (psql, pgbench, drivers) until SIGTERM or
    /// Ctrl-C.
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Threads with room for the deepest statement, so none moves to a fresh stack segment.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(rowdex::WORKER_STACK_BYTES)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match args.action {
        Some(Action::Serve(serve_args)) => runtime.block_on(serve::serve(serve_args)),
        None => runtime.block_on(run(args)),
    }
}

async fn run(args: Args) -> ExitCode {
    let location = Location::from_options(args.dir, args.memory, args.store);
    let db = match location.open().await {
        Ok(db) => db,
        Err(e) => {
            eprintln!("error: cannot open {location}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut session = db.session();
    if let Some(progress) = progress::terminal_progress() {
        session.set_progress(progress);
    }
    let interactive_stdin = std::io::stdin().is_terminal();
    let script = if let Some(command) = args.command {
        Some(command)
    } else if let Some(file) = &args.file {
        match std::fs::read_to_string(file) {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        }
    } else if !interactive_stdin {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("error: cannot read stdin: {e}");
            return ExitCode::FAILURE;
        }
        Some(text)
    } else {
        None
    };
    let code = match script {
        Some(script) => {
            let format = args.format.unwrap_or(if std::io::stdout().is_terminal() {
                Format::Table
            } else {
                Format::Csv
            });
            run_script(&session, &script, format).await
        }
        None => repl::run(&db, &session, args.format.unwrap_or(Format::Table)).await,
    };
    // Durable now; dropping the database then trims the journal for the next open.
    if let Err(e) = db.flush().await {
        eprintln!("error: flushing to disk failed: {e}");
        return ExitCode::FAILURE;
    }
    code
}
