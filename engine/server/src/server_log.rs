//! Where `rowdex serve` writes its log: lines such as the slow-statement log's
//! (`log_min_duration_statement`), to standard error by default, or to whatever a program that
//! embeds the server hands it.

use std::sync::Arc;
use std::time::SystemTime;

/// A destination for the server's log lines.
#[derive(Clone)]
pub struct ServerLog(Arc<dyn Fn(&str) + Send + Sync>);

impl ServerLog {
    /// Lines go to standard error, each prefixed with the time (UTC).
    pub fn stderr() -> ServerLog {
        ServerLog(Arc::new(|line| {
            eprintln!("{} {line}", utc_now());
        }))
    }

    /// Lines go to `write`, as they are.
    pub fn to(write: impl Fn(&str) + Send + Sync + 'static) -> ServerLog {
        ServerLog(Arc::new(write))
    }

    pub fn write(&self, line: &str) {
        (self.0)(line);
    }
}

impl Default for ServerLog {
    fn default() -> Self {
        ServerLog::stderr()
    }
}

impl std::fmt::Debug for ServerLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerLog")
    }
}

/// `2026-11-29 07:31:40.410 UTC`.
fn utc_now() -> String {
    let now: chrono::DateTime<chrono::Utc> = SystemTime::now().into();
    now.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string()
}
