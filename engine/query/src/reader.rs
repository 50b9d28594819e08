//! Executes a [`ScanPlan`] against a store: a stream of decoded rows, in key order (or its
//! reverse), with the residual filter, OFFSET and LIMIT applied.
//!
//! Ranges are read page by page, so memory stays flat whatever the table size. A salted table
//! is read bucket by bucket and the bucket streams are merged on the primary-key bytes, which
//! restores key order across buckets.

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_planner::{Direction, ScanPlan};
use rowdex_store::{KvRead, scan_stream};

use crate::{Error, Result};

type Entry = (Vec<u8>, Vec<u8>);
type EntryStream = BoxStream<'static, Result<Entry>>;

/// Largest page read from the store in one call.
const MAX_PAGE: usize = 1024;
/// Keys fetched per multi-get call.
const MULTI_GET_CHUNK: usize = 256;

/// Streams the rows (every column, in column order) that the plan selects.
pub fn scan_rows(
    plan: Arc<ScanPlan>,
    reader: Arc<dyn KvRead>,
) -> BoxStream<'static, Result<Vec<Datum>>> {
    let entries = match plan.point_keys() {
        Some(keys) => point_entries(keys, reader),
        None => range_entries(&plan, reader),
    };
    let filter_plan = plan.clone();
    let rows = entries
        .and_then(move |(key, value)| {
            let decoded = filter_plan
                .table
                .decode_row(&key, &value)
                .map_err(Error::from);
            futures::future::ready(decoded)
        })
        .try_filter(move |row| {
            let keep = plan.residual.iter().all(|p| p.matches(row));
            futures::future::ready(keep)
        });
    rows.boxed()
}

/// Applies OFFSET and LIMIT to a row stream.
pub fn offset_limit<T: Send + 'static>(
    rows: BoxStream<'static, Result<T>>,
    offset: usize,
    limit: Option<usize>,
) -> BoxStream<'static, Result<T>> {
    let skipped = rows.skip(offset);
    match limit {
        Some(limit) => skipped.take(limit).boxed(),
        None => skipped.boxed(),
    }
}

fn point_entries(keys: Vec<Vec<u8>>, reader: Arc<dyn KvRead>) -> EntryStream {
    let chunks: Vec<Vec<Vec<u8>>> = keys.chunks(MULTI_GET_CHUNK).map(<[_]>::to_vec).collect();
    stream::iter(chunks)
        .then(move |chunk| {
            let reader = reader.clone();
            async move {
                let values = reader.multi_get(&chunk).await?;
                let found: Vec<Result<Entry>> = chunk
                    .into_iter()
                    .zip(values)
                    .filter_map(|(k, v)| v.map(|v| Ok((k, v))))
                    .collect();
                Ok::<_, Error>(stream::iter(found))
            }
        })
        .try_flatten()
        .boxed()
}

fn range_entries(plan: &ScanPlan, reader: Arc<dyn KvRead>) -> EntryStream {
    let page = match plan.limit {
        Some(limit) if plan.residual.is_empty() => (plan.offset + limit + 1).clamp(16, MAX_PAGE),
        _ => MAX_PAGE,
    };
    let direction = plan.direction;
    let buckets: Vec<EntryStream> = plan
        .table
        .scan_prefixes()
        .iter()
        .map(|prefix| {
            let mut ranges = plan.key_ranges(prefix);
            if direction == Direction::Reverse {
                ranges.reverse();
            }
            let reader = reader.clone();
            stream::iter(ranges)
                .map(move |range| {
                    scan_stream(reader.clone(), range, direction, page).map_err(Error::from)
                })
                .flatten()
                .boxed()
        })
        .collect();
    if buckets.len() == 1 {
        return buckets
            .into_iter()
            .next()
            .unwrap_or_else(|| stream::empty().boxed());
    }
    merge_buckets(buckets, plan.table.clone(), direction)
}

/// K-way merge of bucket streams, each already in key order, comparing keys without their
/// table prefix and salt byte.
fn merge_buckets(
    buckets: Vec<EntryStream>,
    table: Arc<TableDef>,
    direction: Direction,
) -> EntryStream {
    struct Merge {
        streams: Vec<EntryStream>,
        heads: Vec<Option<Entry>>,
        started: bool,
        table: Arc<TableDef>,
    }
    let heads = buckets.iter().map(|_| None).collect();
    let state = Merge {
        streams: buckets,
        heads,
        started: false,
        table,
    };
    stream::try_unfold(state, move |mut state| async move {
        if !state.started {
            for (stream, head) in state.streams.iter_mut().zip(state.heads.iter_mut()) {
                *head = stream.next().await.transpose()?;
            }
            state.started = true;
        }
        let mut best: Option<usize> = None;
        for (i, head) in state.heads.iter().enumerate() {
            let Some(entry) = head else { continue };
            let better = match best.and_then(|b| state.heads[b].as_ref()) {
                None => true,
                Some(current) => match direction {
                    Direction::Forward => {
                        state.table.pk_bytes(&entry.0) < state.table.pk_bytes(&current.0)
                    }
                    Direction::Reverse => {
                        state.table.pk_bytes(&entry.0) > state.table.pk_bytes(&current.0)
                    }
                },
            };
            if better {
                best = Some(i);
            }
        }
        let Some(winner) = best else {
            return Ok(None);
        };
        let entry = state.heads[winner].take();
        state.heads[winner] = state.streams[winner].next().await.transpose()?;
        Ok(entry.map(|e| (e, state)))
    })
    .boxed()
}
