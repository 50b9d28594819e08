//! `rowdex serve --metrics ADDRESS`: the server's figures in the OpenMetrics text format
//! (which Prometheus scrapes), written by the Prometheus project's `prometheus-client` crate.
//!
//! Counted as they happen: connections accepted, statements by kind and outcome with a
//! histogram of their durations, retries and conflicts, and the store entries statements read
//! and the keys they looked up. Read at each scrape: open connections, row-lock waits and
//! deadlocks, and the store's own figures (writes applied, memtable, flushes waiting,
//! compactions, journal files, disk bytes, block cache size and hits).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rowdex::{Database, StatementFigures};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::activity::Activities;

/// A statement's labels: its kind and how it ended.
type StatementLabels = [(&'static str, &'static str); 2];

/// The kinds of statement the metrics tell apart (see [`statement_kind`]).
const KINDS: [&str; 8] = [
    "read",
    "insert",
    "update",
    "delete",
    "copy",
    "ddl",
    "transaction",
    "other",
];

/// Each kind's counters (succeeded, failed) and duration histogram, taken out of their
/// families once, so that counting a statement hashes and locks nothing.
#[derive(Debug)]
struct KindMetrics {
    ok: Counter,
    error: Counter,
    durations: Histogram,
}

/// The figures counted as they happen, and the registry that writes them out with the live
/// ones.
#[derive(Debug)]
pub struct ServerMetrics {
    registry: Registry,
    connections: Counter,
    /// By the position of the kind in [`KINDS`].
    kinds: Vec<KindMetrics>,
    retries: Counter,
    conflicts: Counter,
    entries_read: Counter,
    row_gets: Counter,
}

impl ServerMetrics {
    pub fn new(db: &Database, activities: Arc<Activities>) -> ServerMetrics {
        let mut registry = Registry::default();
        let connections = Counter::default();
        let statements = Family::<StatementLabels, Counter>::default();
        // 100 µs to about 26 s, doubling.
        let durations =
            Family::<[(&'static str, &'static str); 1], Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.0, 19))
            });
        let (retries, conflicts) = (Counter::default(), Counter::default());
        let (entries_read, row_gets) = (Counter::default(), Counter::default());
        registry.register(
            "rowdex_connections_accepted",
            "Connections accepted (past startup)",
            connections.clone(),
        );
        registry.register(
            "rowdex_statements",
            "Statements run, by kind and outcome",
            statements.clone(),
        );
        registry.register(
            "rowdex_statement_duration_seconds",
            "How long statements ran, by kind",
            durations.clone(),
        );
        registry.register(
            "rowdex_statement_retries",
            "Times a statement ran again after a conflict or an interrupted commit",
            retries.clone(),
        );
        registry.register(
            "rowdex_statement_conflicts",
            "Write conflicts statements met",
            conflicts.clone(),
        );
        registry.register(
            "rowdex_store_entries_read",
            "Store entries statements read (scanned, and keys looked up)",
            entries_read.clone(),
        );
        registry.register(
            "rowdex_store_row_gets",
            "Keys statements looked up one by one",
            row_gets.clone(),
        );
        registry.register_collector(Box::new(LiveFigures {
            db: db.clone(),
            activities,
        }));
        // One handle at a time: a family's guard held while another label set is created
        // would wait for itself.
        let mut kinds = Vec::with_capacity(KINDS.len());
        for kind in KINDS {
            let ok = statements
                .get_or_create(&[("kind", kind), ("outcome", "ok")])
                .clone();
            let error = statements
                .get_or_create(&[("kind", kind), ("outcome", "error")])
                .clone();
            let histogram = durations.get_or_create(&[("kind", kind)]).clone();
            kinds.push(KindMetrics {
                ok,
                error,
                durations: histogram,
            });
        }
        ServerMetrics {
            registry,
            connections,
            kinds,
            retries,
            conflicts,
            entries_read,
            row_gets,
        }
    }

    pub fn connection_accepted(&self) {
        self.connections.inc();
    }

    /// Counts a statement of `kind` that ran for `elapsed`, succeeded or not, and what it did.
    pub fn statement(
        &self,
        kind: &'static str,
        ok: bool,
        elapsed: Duration,
        figures: &StatementFigures,
    ) {
        let position = KINDS
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(KINDS.len() - 1);
        if let Some(metrics) = self.kinds.get(position) {
            if ok {
                metrics.ok.inc();
            } else {
                metrics.error.inc();
            }
            metrics.durations.observe(elapsed.as_secs_f64());
        }
        self.retries.inc_by(figures.retries);
        self.conflicts.inc_by(figures.conflicts);
        self.entries_read.inc_by(figures.entries_read);
        self.row_gets.inc_by(figures.row_gets);
    }

    /// Every figure, in the OpenMetrics text format.
    pub fn text(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// A statement's kind for the metrics' labels, by its first word.
pub fn statement_kind(text: &str) -> &'static str {
    let word = text
        .trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match word.as_str() {
        "select" | "with" | "values" | "table" | "show" | "explain" | "fetch" => "read",
        "insert" | "upsert" | "replace" => "insert",
        "update" => "update",
        "delete" | "truncate" => "delete",
        "copy" => "copy",
        "create" | "alter" | "drop" | "comment" | "reindex" | "analyze" | "vacuum" => "ddl",
        "begin" | "start" | "commit" | "end" | "rollback" | "savepoint" | "release" | "prepare" => {
            "transaction"
        }
        _ => "other",
    }
}

/// The figures read at each scrape.
#[derive(Debug)]
struct LiveFigures {
    db: Database,
    activities: Arc<Activities>,
}

/// Writes one gauge or counter of a value read now.
fn write_value(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: Value,
) -> Result<(), std::fmt::Error> {
    match value {
        Value::Counter(n) => {
            let counter = ConstCounter::new(n);
            counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)
        }
        Value::Gauge(n) => {
            let gauge = ConstGauge::new(n);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
        }
        Value::Float(x) => {
            let gauge = ConstGauge::new(x);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
        }
    }
}

enum Value {
    Counter(u64),
    Gauge(i64),
    Float(f64),
}

fn gauge(n: u64) -> Value {
    Value::Gauge(i64::try_from(n).unwrap_or(i64::MAX))
}

impl Collector for LiveFigures {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let metrics = self.db.metrics();
        let store = &metrics.store;
        let mut values: Vec<(&str, &str, Value)> = vec![
            (
                "rowdex_connections",
                "Connections open now",
                gauge(self.activities.count() as u64),
            ),
            (
                "rowdex_lock_waits",
                "Row-lock requests that had to wait",
                Value::Counter(metrics.lock_waits),
            ),
            (
                "rowdex_deadlocks",
                "Transactions a deadlock made its victim",
                Value::Counter(metrics.deadlocks),
            ),
            (
                "rowdex_store_commits",
                "Batches and transaction commits the store applied",
                Value::Counter(store.commits),
            ),
            (
                "rowdex_store_keys_written",
                "Keys the store's commits put or deleted",
                Value::Counter(store.keys_written),
            ),
            (
                "rowdex_store_bytes_written",
                "Bytes of the keys and values the store's commits wrote",
                Value::Counter(store.bytes_written),
            ),
        ];
        let optional: [(&str, &str, Option<u64>); 8] = [
            (
                "rowdex_store_memtable_bytes",
                "Bytes in the active memtable",
                store.memtable_bytes,
            ),
            (
                "rowdex_store_sealed_memtables",
                "Memtables sealed and waiting to be flushed",
                store.sealed_memtables,
            ),
            ("rowdex_store_tables", "Tables (SSTs) on disk", store.tables),
            (
                "rowdex_store_compactions_running",
                "Compactions running now",
                store.compactions_running,
            ),
            (
                "rowdex_store_journal_files",
                "Journal files kept",
                store.journal_files,
            ),
            (
                "rowdex_store_disk_bytes",
                "Bytes of the store's files",
                store.disk_bytes,
            ),
            (
                "rowdex_store_block_cache_bytes",
                "Bytes the block cache holds",
                store.cache_bytes,
            ),
            (
                "rowdex_store_block_cache_capacity_bytes",
                "The block cache's capacity",
                store.cache_capacity_bytes,
            ),
        ];
        values.extend(
            optional
                .into_iter()
                .filter_map(|(name, help, n)| n.map(|n| (name, help, gauge(n)))),
        );
        let counters: [(&str, &str, Option<u64>); 3] = [
            (
                "rowdex_store_compactions",
                "Compactions finished since the store was opened",
                store.compactions_done,
            ),
            (
                "rowdex_store_block_loads",
                "Blocks read, from the cache or from disk",
                store.block_loads,
            ),
            (
                "rowdex_store_block_cache_hits",
                "Blocks read from the cache",
                store.cache_hits,
            ),
        ];
        values.extend(
            counters
                .into_iter()
                .filter_map(|(name, help, n)| n.map(|n| (name, help, Value::Counter(n)))),
        );
        if let Some(seconds) = store.compaction_seconds {
            values.push((
                "rowdex_store_compaction_seconds",
                "Time spent compacting since the store was opened",
                Value::Float(seconds),
            ));
        }
        for (name, help, value) in values {
            write_value(&mut encoder, name, help, value)?;
        }
        Ok(())
    }
}

/// Serves `metrics` at `GET /metrics` on `listener` until the task is dropped: one response
/// per connection, then it closes.
pub async fn serve_metrics(listener: TcpListener, metrics: Arc<ServerMetrics>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            // A client that goes away concerns itself alone.
            let _ = respond(socket, &metrics).await;
        });
    }
}

/// The largest request head read.
const MAX_REQUEST_BYTES: usize = 8192;

async fn respond(mut socket: TcpStream, metrics: &ServerMetrics) -> std::io::Result<()> {
    let mut request = Vec::with_capacity(512);
    let mut buffer = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MAX_REQUEST_BYTES {
        let read = socket.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        request.extend_from_slice(&buffer[..read]);
    }
    let line = request.split(|b| *b == b'\r').next().unwrap_or_default();
    let (status, content_type, body) = if line.starts_with(b"GET /metrics ") {
        (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.text(),
        )
    } else {
        (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "rowdex serves its metrics at /metrics\n".to_string(),
        )
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    socket.shutdown().await
}

/// Binds the metrics endpoint's address.
pub async fn bind_metrics(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}
