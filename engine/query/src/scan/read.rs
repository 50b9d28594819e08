//! Executes a [`ScanPlan`] against a store: a stream of decoded rows, in key order (or its
//! reverse), with the residual filter, OFFSET and LIMIT applied.
//!
//! Ranges are read page by page, so memory stays flat whatever the table size. A salted table
//! is read bucket by bucket and the bucket streams are merged on the primary-key bytes, which
//! restores key order across buckets. Index scans read entries in index order and look rows up
//! in batches; intersections stream primary keys out of the leapfrog join (only an input whose
//! entries are not in primary-key order, a range on the indexed column, is buffered and sorted,
//! within the memory budget: past it, the input filters the looked-up rows instead).

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use rowdex_catalog::{IndexDef, TableDef};
use rowdex_codec::Datum;
use rowdex_indexer::{layout, rows};
use rowdex_planner::{AccessPath, Direction, IndexInput, Predicate, ScanPlan};
use rowdex_store::{KeyRange, KvRead, scan_ranges_stream};

use crate::error::{Error, Result};
use crate::scan::intersection::{IntersectionSource, PkStream, pk_source};

pub use crate::scan::merge::EntryStream;
use crate::scan::merge::{Entry, merge_sorted, merge_sorted_past};

pub type RowStream = BoxStream<'static, Result<Vec<Datum>>>;

/// Largest page read from the store in one call.
const MAX_PAGE: usize = 1024;
/// Keys fetched per multi-get call.
const MULTI_GET_CHUNK: usize = 256;

/// Streams the rows (every column, in column order; columns a covering index lacks are NULL)
/// that the plan selects. `cutoff` is the table's expiry cutoff for a table with a TTL (see
/// `TableDef::expiry_cutoff`): rows written at or before it are left out, whatever the path.
/// `budget` is the bytes an intersection may buffer (see [`intersection_rows`]).
pub fn scan_rows(
    plan: Arc<ScanPlan>,
    reader: Arc<dyn KvRead>,
    cutoff: Option<i64>,
    budget: usize,
) -> RowStream {
    let rows = match &plan.path {
        AccessPath::IndexScan { input, covering } => index_rows(&plan, input, *covering, reader),
        AccessPath::IndexIntersection { .. } | AccessPath::IndexUnion { .. } => {
            // Primary keys alone carry no write time: an expiring table looks its rows up.
            let covering = !intersection_looks_up(&plan.path, cutoff);
            intersection_rows(&plan, covering, reader, budget)
        }
        _ => key_rows(&plan, reader),
    };
    rows.try_filter(move |row| {
        let keep = plan.table.is_live(row, cutoff) && plan.residual.iter().all(|p| p.matches(row));
        futures::future::ready(keep)
    })
    .boxed()
}

/// The stored (row key, value) entries the plan selects, when each one is a row of its
/// result as it stands: the plan reads one column family and has no residual predicate, and
/// reads the table by key, or looks its rows up from an index scan or an intersection (not
/// one answered from the indexes alone); expired rows are left out (see [`scan_rows`]).
/// Such a read can be decoded by whoever consumes it, column by column. `budget` is what
/// an intersection may buffer.
pub fn row_entries(
    plan: &ScanPlan,
    reader: Arc<dyn KvRead>,
    cutoff: Option<i64>,
    budget: usize,
) -> Option<EntryStream> {
    let family = result_family(plan)?;
    let entries = match &plan.path {
        AccessPath::IndexScan {
            input,
            covering: false,
        } => {
            let index = plan.table.indexes.get(input.index)?.clone();
            let pks = index_pks(plan, input, index, reader.clone());
            lookup_entries(plan, pks, reader, family)
        }
        AccessPath::IndexIntersection { .. } | AccessPath::IndexUnion { .. }
            if !plan.table.has_families() && intersection_looks_up(&plan.path, cutoff) =>
        {
            intersection_entries(plan, reader, family, budget)
        }
        AccessPath::IndexScan { .. }
        | AccessPath::IndexIntersection { .. }
        | AccessPath::IndexUnion { .. } => return None,
        _ => key_entries(plan, reader, family),
    };
    if cutoff.is_none() {
        return Some(entries);
    }
    let table = plan.table.clone();
    Some(
        entries
            .try_filter_map(move |(key, value)| {
                let live = table.is_value_live(&value, cutoff).map_err(Error::from);
                futures::future::ready(live.map(|live| live.then_some((key, value))))
            })
            .boxed(),
    )
}

/// Whether an intersection looks its rows up: it is not covering, or primary keys alone cannot
/// tell whether a row expired.
fn intersection_looks_up(path: &AccessPath, cutoff: Option<i64>) -> bool {
    match path {
        AccessPath::IndexIntersection { covering, .. }
        | AccessPath::IndexUnion { covering, .. } => !covering || cutoff.is_some(),
        _ => false,
    }
}

/// The key ranges of a plan whose entries are its result rows as they stand (as for
/// [`row_entries`]), when they can be read page by page in place: the plan reads ranges (not
/// point keys) of one bucket. In ascending key order.
pub fn lendable_ranges(plan: &ScanPlan) -> Option<Vec<KeyRange>> {
    if plan.merged {
        return None;
    }
    let family = row_family(plan)?;
    if plan.family_point_keys(family).is_some() {
        return None;
    }
    let mut buckets = plan.family_bucket_ranges(family);
    match buckets.pop() {
        Some((_, ranges)) if buckets.is_empty() => Some(ranges),
        _ => None,
    }
}

/// The column family whose entries are the plan's result rows as they stand: the plan reads
/// the table by key (not through an index), one family, and has no residual predicate.
fn row_family(plan: &ScanPlan) -> Option<u8> {
    match plan.path {
        AccessPath::IndexScan { .. }
        | AccessPath::IndexIntersection { .. }
        | AccessPath::IndexUnion { .. } => None,
        _ => result_family(plan),
    }
}

/// The one column family the plan reads, when it has no residual predicate: then the entries
/// of that family (read or looked up) are the result rows. With column families, an entry
/// holds its family's columns (and the key): whole rows of the query only when it reads one.
fn result_family(plan: &ScanPlan) -> Option<u8> {
    match plan.families_read().as_slice() {
        [family] if plan.residual.is_empty() => Some(*family),
        _ => None,
    }
}

/// The entries of column family `family` (0: the row entries) of a plan that reads the
/// table by key: its point keys, or its key ranges.
fn key_entries(plan: &ScanPlan, reader: Arc<dyn KvRead>, family: u8) -> EntryStream {
    match plan.family_point_keys(family) {
        Some(keys) => point_entries(keys, reader),
        None => range_entries(plan, reader, family),
    }
}

/// The rows of a plan that reads the table by key (see [`family_rows`]).
fn key_rows(plan: &ScanPlan, reader: Arc<dyn KvRead>) -> RowStream {
    family_rows(plan, reader, |driving, reader| {
        key_entries(plan, reader, driving)
    })
}

/// The rows of a plan, from the entries `entries_of` reads of one family. A table with column
/// families is read through the first family the plan needs, and the rows are completed with
/// the entries of the other needed families, a batch at a time; families it does not need are
/// never read.
fn family_rows(
    plan: &ScanPlan,
    reader: Arc<dyn KvRead>,
    entries_of: impl FnOnce(u8, Arc<dyn KvRead>) -> EntryStream,
) -> RowStream {
    let table = plan.table.clone();
    let families = plan.families_read();
    let Some((&driving, others)) = families.split_first() else {
        return stream::empty().boxed();
    };
    let entries = entries_of(driving, reader.clone());
    if others.is_empty() {
        return decode_rows(table, decoded_columns(plan), entries);
    }
    let others = others.to_vec();
    entries
        .try_chunks(lookup_chunk(plan))
        .map_err(|e| e.1)
        .and_then(move |entries| {
            let (table, reader, others) = (table.clone(), reader.clone(), others.clone());
            async move {
                let rows = rows::decode_rows(reader.as_ref(), &table, &entries, &others).await?;
                Ok::<_, Error>(stream::iter(rows.into_iter().map(Ok)))
            }
        })
        .try_flatten()
        .boxed()
}

/// The rows of `entries`, with the columns `wanted` marks decoded (None: all).
fn decode_rows(table: Arc<TableDef>, wanted: Option<Vec<bool>>, entries: EntryStream) -> RowStream {
    entries
        .and_then(move |(key, value)| {
            let row = table.decode_row_columns(&key, &value, wanted.as_deref());
            futures::future::ready(row.map_err(Error::from))
        })
        .boxed()
}

/// The columns a plan's rows must carry, by position, when its consumer reads only some
/// (`ScanPlan::needed`): those, the residual filter's, the write time an expiring table is
/// filtered on, and the key (always decoded: a cursor is cut from it). The other cells are
/// skipped: `SELECT c ... WHERE id BETWEEN ...` copies no other text of the row.
fn decoded_columns(plan: &ScanPlan) -> Option<Vec<bool>> {
    let needed = plan.needed.as_ref()?;
    let table = &plan.table;
    let mut wanted = vec![false; table.columns.len()];
    let residual = plan.residual.iter().flat_map(Predicate::columns);
    let keys = table.key.iter().map(|key| key.column);
    let written_at = table.written_at_column();
    for column in needed
        .iter()
        .copied()
        .chain(residual)
        .chain(keys)
        .chain(written_at)
    {
        if let Some(slot) = wanted.get_mut(column) {
            *slot = true;
        }
    }
    Some(wanted)
}

/// Rows the path must yield before a LIMIT stops it, when nothing is filtered after the path.
fn rows_wanted(plan: &ScanPlan) -> Option<usize> {
    plan.limit
        .filter(|_| plan.residual.is_empty())
        .map(|limit| plan.offset + limit)
}

/// Entries per scan page: fewer when a LIMIT will stop the scan soon (one more than wanted, so
/// the page also tells whether the range ends there).
fn page_size(plan: &ScanPlan) -> usize {
    // Exactly the rows wanted: the consumer stops there, so one more would be read for nothing
    // (and cursor paging would read each page's boundary key twice).
    rows_wanted(plan).map_or(MAX_PAGE, |wanted| wanted.clamp(16, MAX_PAGE))
}

/// Row lookups to batch into one multi-get: fewer when a LIMIT will stop the scan soon.
fn lookup_chunk(plan: &ScanPlan) -> usize {
    rows_wanted(plan).map_or(MULTI_GET_CHUNK, |wanted| wanted.clamp(1, MULTI_GET_CHUNK))
}

/// The entries of `ranges` (given in ascending key order), read in `direction`, one range after
/// the other.
fn ranges_in_order(
    reader: Arc<dyn KvRead>,
    mut ranges: Vec<KeyRange>,
    direction: Direction,
    page: usize,
) -> EntryStream {
    if direction == Direction::Reverse {
        ranges.reverse();
    }
    scan_ranges_stream(reader, ranges, direction, page)
        .map_err(Error::from)
        .boxed()
}

/// An index range in index order (or its reverse), each entry turned into its row: decoded
/// from the entry when the index covers the query, looked up by primary key otherwise.
fn index_rows(
    plan: &ScanPlan,
    input: &IndexInput,
    covering: bool,
    reader: Arc<dyn KvRead>,
) -> RowStream {
    let table = plan.table.clone();
    let Some(index) = table.indexes.get(input.index).cloned() else {
        return stream::empty().boxed();
    };
    if covering {
        return index_entries(plan, input, &index, reader)
            .and_then(move |(key, value)| {
                let decoded = layout::decode_entry(&table, &index, &key, &value);
                futures::future::ready(decoded.map(|(row, _)| row).map_err(Error::from))
            })
            .boxed();
    }
    lookup_rows(plan, index_pks(plan, input, index, reader.clone()), reader)
}

/// The entries of an index range in index order (or its reverse).
fn index_entries(
    plan: &ScanPlan,
    input: &IndexInput,
    index: &IndexDef,
    reader: Arc<dyn KvRead>,
) -> EntryStream {
    let ranges = plan.index_scan_ranges(input);
    if !index.is_salted() {
        return ranges_in_order(reader, ranges, plan.direction, page_size(plan));
    }
    // Each bucket is in index order; merging them on the key after the salt restores it.
    let mut buckets: Vec<(u8, Vec<KeyRange>)> = Vec::new();
    for range in ranges {
        let bucket = range.start.get(IndexDef::PREFIX_LEN).copied().unwrap_or(0);
        match buckets.iter_mut().find(|(b, _)| *b == bucket) {
            Some((_, same)) => same.push(range),
            None => buckets.push((bucket, vec![range])),
        }
    }
    let page = page_size(plan);
    let streams = buckets
        .into_iter()
        .map(|(_, ranges)| ranges_in_order(reader.clone(), ranges, plan.direction, page))
        .collect();
    merge_sorted(streams, index.header_len(), plan.direction)
}

/// The encoded primary keys of an index range's entries, in index order (or its reverse).
/// An unsalted index is read in place: the store lends each entry and only its primary key is
/// copied out. A salted one is read as entries, to merge its buckets on the entry key, and so
/// are the ranges of a store that reads them in batches.
fn index_pks(
    plan: &ScanPlan,
    input: &IndexInput,
    index: IndexDef,
    reader: Arc<dyn KvRead>,
) -> PkStream {
    // On a store that reads batches of ranges (the probes of a lookup join), the ranges go
    // together, as entries.
    if index.is_salted() || reader.batches_ranges() {
        return entry_pks(index_entries(plan, input, &index, reader), index);
    }
    let mut ranges = plan.index_scan_ranges(input);
    if plan.direction == Direction::Reverse {
        ranges.reverse();
    }
    let (direction, page) = (plan.direction, page_size(plan));
    let state = (VecDeque::from(ranges), reader, index);
    stream::try_unfold(state, move |(mut ranges, reader, index)| async move {
        while let Some(range) = ranges.front() {
            let (mut pks, mut damaged) = (Vec::new(), None);
            let rest = reader
                .visit_page(
                    range,
                    direction,
                    page,
                    &mut |key, _| match layout::pk_offset(&index, key) {
                        Ok(offset) if damaged.is_none() => pks.push(Ok(key[offset..].to_vec())),
                        Ok(_) => {}
                        Err(error) => {
                            damaged.get_or_insert(error);
                        }
                    },
                )
                .await?;
            if let Some(error) = damaged {
                return Err(Error::from(error));
            }
            match rest {
                Some(rest) => ranges[0] = rest,
                None => {
                    ranges.pop_front();
                }
            }
            if !pks.is_empty() {
                return Ok(Some((stream::iter(pks), (ranges, reader, index))));
            }
        }
        Ok(None)
    })
    .try_flatten()
    .boxed()
}

/// The encoded primary keys of index entries, in their order.
fn entry_pks(entries: EntryStream, index: IndexDef) -> PkStream {
    entries
        .and_then(move |(mut key, _)| {
            let pk = layout::pk_offset(&index, &key).map(|offset| key.split_off(offset));
            futures::future::ready(pk.map_err(Error::from))
        })
        .boxed()
}

/// The entries of column family `family` of the rows whose encoded primary keys `pks`
/// streams, looked up in batches and kept in the order of `pks`. An index entry without its
/// row can only be a damaged index (CHECK INDEX reports it); the row is what counts, so such
/// an entry is skipped.
fn lookup_entries(
    plan: &ScanPlan,
    pks: PkStream,
    reader: Arc<dyn KvRead>,
    family: u8,
) -> EntryStream {
    let table = plan.table.clone();
    pks.try_chunks(lookup_chunk(plan))
        .map_err(|e| e.1)
        .and_then(move |pks| {
            let (reader, table) = (reader.clone(), table.clone());
            async move {
                let keys: Vec<Vec<u8>> = pks
                    .iter()
                    .map(|pk| table.family_row_key(family, pk))
                    .collect();
                let values = reader.multi_get(&keys).await?;
                let found: Vec<Result<Entry>> = keys
                    .into_iter()
                    .zip(values)
                    .filter_map(|(key, value)| value.map(|value| Ok((key, value))))
                    .collect();
                Ok::<_, Error>(stream::iter(found))
            }
        })
        .try_flatten()
        .boxed()
}

/// Looks up the rows of a stream of encoded primary keys, keeping its order: the entries of
/// the families the plan reads (the row entries of a table without families).
fn lookup_rows(plan: &ScanPlan, pks: PkStream, reader: Arc<dyn KvRead>) -> RowStream {
    family_rows(plan, reader, |driving, reader| {
        lookup_entries(plan, pks, reader, driving)
    })
}

/// The rows of an intersection (see [`intersection_source`]), in primary-key order: decoded
/// from the primary keys alone when the indexes cover the query and no input became a filter,
/// looked up otherwise.
fn intersection_rows(
    plan: &ScanPlan,
    covering: bool,
    reader: Arc<dyn KvRead>,
    budget: usize,
) -> RowStream {
    let plan = plan.clone();
    let rows = async move {
        let source = pk_source(&plan, reader.clone(), budget);
        Ok::<_, Error>(match source.await? {
            IntersectionSource::TableScan { scan, filter } => filter.apply(key_rows(&scan, reader)),
            IntersectionSource::Pks { pks, filter, .. } if covering && filter.is_empty() => {
                pk_rows(plan.table.clone(), pks)
            }
            IntersectionSource::Pks {
                pks,
                lookups,
                filter,
            } => filter.apply(lookup_rows(&lookups, pks, reader)),
        })
    };
    stream::once(rows).try_flatten().boxed()
}

/// The row entries of `family` of an intersection whose looked-up rows are its result rows
/// (a table without column families), in primary-key order.
fn intersection_entries(
    plan: &ScanPlan,
    reader: Arc<dyn KvRead>,
    family: u8,
    budget: usize,
) -> EntryStream {
    let plan = plan.clone();
    let entries = async move {
        let source = pk_source(&plan, reader.clone(), budget);
        Ok::<_, Error>(match source.await? {
            IntersectionSource::TableScan { scan, filter } => {
                filter.apply_to_entries(key_entries(&scan, reader, family))
            }
            IntersectionSource::Pks {
                pks,
                lookups,
                filter,
            } => filter.apply_to_entries(lookup_entries(&lookups, pks, reader, family)),
        })
    };
    stream::once(entries).try_flatten().boxed()
}

/// Rows of a table holding only their primary-key columns (the others NULL), decoded from
/// encoded primary keys.
fn pk_rows(table: Arc<TableDef>, pks: PkStream) -> RowStream {
    let orders = table.key_orders();
    pks.and_then(move |pk| {
        let mut row = vec![Datum::Null; table.columns.len()];
        let decoded = rowdex_codec::key::decode_key(&pk, &orders, true).map(|values| {
            for (column, value) in table.key.iter().zip(values) {
                row[column.column] = value;
            }
            row
        });
        futures::future::ready(decoded.map_err(Error::from))
    })
    .boxed()
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

/// The entries of a merged range scan (see `ScanPlan::merged`): one stream per prefix tuple,
/// merged by the key after the tuple, so that they come out in the order of the key columns
/// after it. Under a LIMIT each stream reads small pages, as a salted table's buckets do.
fn merged_range_entries(plan: &ScanPlan, reader: Arc<dyn KvRead>, family: u8) -> EntryStream {
    let tuples = plan.merged_ranges(family);
    let mut page = page_size(plan);
    if let Some(wanted) = rows_wanted(plan) {
        page = (wanted / (8 * tuples.len().max(1))).clamp(16, MAX_PAGE);
    }
    let direction = plan.direction;
    let streams: Vec<(EntryStream, usize)> = tuples
        .into_iter()
        .map(|(fixed, ranges)| {
            (
                ranges_in_order(reader.clone(), ranges, direction, page),
                fixed,
            )
        })
        .collect();
    merge_sorted_past(streams, direction)
}

fn range_entries(plan: &ScanPlan, reader: Arc<dyn KvRead>, family: u8) -> EntryStream {
    if plan.merged {
        return merged_range_entries(plan, reader, family);
    }
    let bucket_ranges = plan.family_bucket_ranges(family);
    let mut page = page_size(plan);
    if let Some(wanted) = rows_wanted(plan).filter(|_| bucket_ranges.len() > 1) {
        // Under a LIMIT the merge takes about limit / buckets rows from each bucket: pages of
        // an eighth of that keep what is read past the limit to a fraction of it.
        page = (wanted / (8 * bucket_ranges.len())).clamp(16, MAX_PAGE);
    }
    let direction = plan.direction;
    let buckets: Vec<EntryStream> = bucket_ranges
        .into_iter()
        .map(|(_, ranges)| ranges_in_order(reader.clone(), ranges, direction, page))
        .collect();
    merge_sorted(buckets, plan.table.family_key_header_len(family), direction)
}
