//! Reading one plan in several partitions at once, outside DataFusion: each span of primary
//! keys (`scan::partition`) is read by a task of its own on the runtime's threads, and the
//! rows come out span after span, so the stream keeps the plan's primary-key order. A task
//! runs ahead of the consumer by at most [`AHEAD_ROWS`] rows (its channel), so memory stays
//! bounded whatever the spans hold; dropping the stream stops every task.
//!
//! The partitions share the caller's read view, so together they see one state of the store.

use std::sync::Arc;

use futures::stream::{self, StreamExt};
use rowdex_codec::Datum;
use rowdex_planner::{KeySpan, ScanPlan};
use rowdex_store::KvRead;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::scan::read::{RowStream, scan_rows};

/// Rows a partition's task may read ahead of the consumer.
const AHEAD_ROWS: usize = 1024;

/// One partition's rows as its task sends them; dropping it (a LIMIT met, an error elsewhere,
/// the statement cancelled) aborts the task.
struct Partition {
    receiver: mpsc::Receiver<Result<Vec<Datum>>>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Partition {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The rows of `plan` (as [`scan_rows`] yields them), read in `spans` in parallel; read whole
/// when there are fewer than two spans. Each partition may buffer `budget / spans` bytes.
pub(crate) fn partitioned_rows(
    plan: &ScanPlan,
    spans: Vec<KeySpan>,
    reader: Arc<dyn KvRead>,
    cutoff: Option<i64>,
    budget: usize,
) -> RowStream {
    if spans.len() < 2 {
        return scan_rows(Arc::new(plan.clone()), reader, cutoff, budget);
    }
    let share = budget / spans.len();
    let parts: Vec<RowStream> = spans
        .into_iter()
        .map(|span| {
            let mut part = plan.clone();
            part.partition = Some(span);
            let rows = scan_rows(Arc::new(part), reader.clone(), cutoff, share);
            spawned(rows)
        })
        .collect();
    stream::iter(parts).flatten().boxed()
}

/// `rows`, read by a task of its own into a bounded channel. A task that ended without
/// sending all its rows (it panicked) ends the stream with an error, never quietly short.
fn spawned(mut rows: RowStream) -> RowStream {
    let (sender, receiver) = mpsc::channel::<Result<Vec<Datum>>>(AHEAD_ROWS);
    let task = tokio::spawn(async move {
        while let Some(row) = rows.next().await {
            let failed = row.is_err();
            // The consumer is gone: stop reading.
            if sender.send(row).await.is_err() || failed {
                return;
            }
        }
    });
    let partition = Partition {
        receiver,
        task: Some(task),
    };
    stream::unfold(partition, |mut partition| async move {
        if let Some(row) = partition.receiver.recv().await {
            return Some((row, partition));
        }
        let task = partition.task.take()?;
        match task.await {
            Ok(()) => None,
            Err(_) => Some((
                Err(Error::WorkerStopped {
                    work: "reading a partition of a scan",
                }),
                partition,
            )),
        }
    })
    .boxed()
}
