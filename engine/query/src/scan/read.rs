//! Executes a [`ScanPlan`] against a store: a stream of decoded rows, in key order (or its
//! reverse), with the residual filter, OFFSET and LIMIT applied.
//!
//! Ranges are read page by page, so memory stays flat whatever the table size. A salted table
//! is read bucket by bucket and the bucket streams are merged on the primary-key bytes, which
//! restores key order across buckets. Index scans read entries in index order and look rows up
//! in batches; intersections stream primary keys out of the leapfrog join (only an input whose
//! entries are not in primary-key order, a range on the indexed column, is buffered and sorted,
//! within the memory budget: past it, the input filters the looked-up rows instead).

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use rowdex_catalog::{IndexDef, TableDef};
use rowdex_codec::Datum;
use rowdex_indexer::intersect::{Intersection, PkInput};
use rowdex_indexer::{layout, rows};
use rowdex_planner::budget::HELD_KEY_OVERHEAD;
use rowdex_planner::{AccessPath, Direction, IndexInput, ScanPlan};
use rowdex_store::{KeyRange, KvRead, scan_stream};

use crate::error::{Error, Result};

pub use crate::scan::merge::EntryStream;
use crate::scan::merge::{Entry, merge_sorted};

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
        AccessPath::IndexIntersection {
            inputs,
            checked,
            covering,
        } => {
            // Primary keys alone carry no write time: an expiring table looks its rows up.
            let covering = *covering && cutoff.is_none();
            intersection_rows(&plan, (inputs, checked), covering, reader, budget)
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
/// result as it stands: the plan reads the table by key (not through an index), reads one
/// column family and has no residual predicate; expired rows are left out (see
/// [`scan_rows`]). Such a scan can be
/// decoded by whoever consumes it, column by column.
pub fn row_entries(
    plan: &ScanPlan,
    reader: Arc<dyn KvRead>,
    cutoff: Option<i64>,
) -> Option<EntryStream> {
    let family = row_family(plan)?;
    let entries = key_entries(plan, reader, family);
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

/// The key ranges of a plan whose entries are its result rows as they stand (as for
/// [`row_entries`]), when they can be read page by page in place: the plan reads ranges (not
/// point keys) of one bucket. In ascending key order.
pub fn lendable_ranges(plan: &ScanPlan) -> Option<Vec<KeyRange>> {
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
    let by_index = matches!(
        plan.path,
        AccessPath::IndexScan { .. } | AccessPath::IndexIntersection { .. }
    );
    // With column families, an entry holds its family's columns (and the key): whole rows
    // of the query only when it reads one family.
    let families = plan.families_read();
    match (families.as_slice(), by_index, plan.residual.is_empty()) {
        ([family], false, true) => Some(*family),
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

/// The rows of a plan that reads the table by key. A table with column families is read
/// through the first family the plan needs, and the rows are completed with the entries of
/// the other needed families, a batch at a time; families it does not need are never read.
fn key_rows(plan: &ScanPlan, reader: Arc<dyn KvRead>) -> RowStream {
    let table = plan.table.clone();
    let families = plan.families_read();
    let Some((&driving, others)) = families.split_first() else {
        return stream::empty().boxed();
    };
    let entries = key_entries(plan, reader.clone(), driving);
    if others.is_empty() {
        return decode_rows(table, entries);
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

fn decode_rows(table: Arc<TableDef>, entries: EntryStream) -> RowStream {
    entries
        .and_then(move |(key, value)| {
            futures::future::ready(table.decode_row(&key, &value).map_err(Error::from))
        })
        .boxed()
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
    stream::iter(ranges)
        .map(move |range| scan_stream(reader.clone(), range, direction, page).map_err(Error::from))
        .flatten()
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
    let ranges = plan.index_scan_ranges(input);
    let entries = if index.is_salted() {
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
    } else {
        ranges_in_order(reader.clone(), ranges, plan.direction, page_size(plan))
    };
    let decode_table = table.clone();
    let decoded = entries.and_then(move |(key, value)| {
        let decoded =
            layout::decode_entry(&decode_table, &index, &key, &value).map_err(Error::from);
        futures::future::ready(decoded)
    });
    if covering {
        return decoded.map_ok(|(row, _)| row).boxed();
    }
    let pks = decoded.map_ok(|(_, pk)| pk).boxed();
    lookup_rows(plan, pks, reader)
}

/// Looks up the rows of a stream of encoded primary keys, keeping its order: the entries of
/// the families the plan reads (the row entries of a table without families).
fn lookup_rows(
    plan: &ScanPlan,
    pks: BoxStream<'static, Result<Vec<u8>>>,
    reader: Arc<dyn KvRead>,
) -> RowStream {
    let table = plan.table.clone();
    let families = plan.families_read();
    pks.try_chunks(lookup_chunk(plan))
        .map_err(|e| e.1)
        .and_then(move |pks| {
            let (reader, table, families) = (reader.clone(), table.clone(), families.clone());
            async move {
                let Some((&driving, others)) = families.split_first() else {
                    return Ok(stream::iter(Vec::new()));
                };
                let keys: Vec<Vec<u8>> = pks
                    .iter()
                    .map(|pk| table.family_row_key(driving, pk))
                    .collect();
                let values = reader.multi_get(&keys).await?;
                let mut found_pks = Vec::with_capacity(keys.len());
                let mut rows = Vec::with_capacity(keys.len());
                // An entry without its row can only be a damaged index (CHECK INDEX reports
                // it); the row is what counts, so such an entry is skipped.
                for ((key, value), pk) in keys.iter().zip(values).zip(pks) {
                    if let Some(value) = value {
                        rows.push(table.decode_row(key, &value)?);
                        found_pks.push(pk);
                    }
                }
                rows::complete_rows(reader.as_ref(), &table, &found_pks, &mut rows, others).await?;
                Ok::<_, Error>(stream::iter(rows.into_iter().map(Ok).collect::<Vec<_>>()))
            }
        })
        .try_flatten()
        .boxed()
}

/// The primary keys present in every input, merged by the leapfrog join, in primary-key order;
/// rows looked up unless the primary key is all the query reads.
///
/// An input whose entries are not in primary-key order is buffered and sorted first, within
/// `budget` bytes (the database's memory budget, shared by the inputs of one intersection).
/// An input that outgrows it (an estimate was wrong, or a hint forced the plan) is dropped from
/// the merge and becomes a filter on the looked-up rows: a row passes when its entry in that
/// index falls in the input's ranges, which is exactly membership in the input.
/// When no input is left to merge, the table is read in primary-key order with every input as
/// such a filter. Either way memory stays within the budget and the order is kept.
fn intersection_rows(
    plan: &ScanPlan,
    (inputs, checked): (&[IndexInput], &[IndexInput]),
    covering: bool,
    reader: Arc<dyn KvRead>,
    mut budget: usize,
) -> RowStream {
    let plan = plan.clone();
    let mut inputs = inputs.to_vec();
    let mut checked = checked.to_vec();
    let mut checks = Vec::with_capacity(checked.len());
    checked.retain(|input| match check_parts(&plan.table, input) {
        Some(parts) => {
            checks.push(parts);
            true
        }
        // Not checkable after all (the planner only checks checkable inputs): merge it.
        None => {
            inputs.push(input.clone());
            false
        }
    });
    let rows = async move {
        let table = plan.table.clone();
        let mut merged = Vec::with_capacity(inputs.len());
        let mut filtered = Vec::new();
        for input in inputs {
            match pk_input(&table, &input, reader.clone(), &mut budget).await? {
                Some(pk_input) => merged.push(pk_input),
                None => filtered.push(input),
            }
        }
        if merged.is_empty() {
            // Every input outgrew the budget: the table in key order, every input a filter.
            filtered.extend(checked);
            let mut scan = reading_filtered(&plan, &filtered);
            scan.path = AccessPath::FullScan;
            scan.residual.clear();
            scan.limit = None;
            let filter = RangeFilter::new(&table, &filtered);
            return Ok::<_, Error>(filter.apply(key_rows(&scan, reader)));
        }
        let intersection = Intersection::new(reader.clone(), merged).with_checks(checks);
        let pks = stream::try_unfold(intersection, |mut intersection| async move {
            let next = intersection.next().await?;
            Ok::<_, Error>(next.map(|pk| (pk, intersection)))
        })
        .boxed();
        if covering && filtered.is_empty() {
            return Ok(pk_rows(table, pks));
        }
        let filter = RangeFilter::new(&table, &filtered);
        let lookups = reading_filtered(&plan, &filtered);
        Ok(filter.apply(lookup_rows(&lookups, pks, reader)))
    };
    stream::once(rows).try_flatten().boxed()
}

/// Rows of a table holding only their primary-key columns (the others NULL), decoded from
/// encoded primary keys.
fn pk_rows(table: Arc<TableDef>, pks: BoxStream<'static, Result<Vec<u8>>>) -> RowStream {
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

/// `plan`, reading also the indexed columns of `filtered` (with column families, a row is read
/// only in the families of the columns its consumer needs).
fn reading_filtered(plan: &ScanPlan, filtered: &[IndexInput]) -> ScanPlan {
    let mut plan = plan.clone();
    if let Some(needed) = &mut plan.needed {
        for input in filtered {
            if let Some(index) = plan.table.indexes.get(input.index) {
                needed.extend(index.columns.iter().map(|column| column.column));
            }
        }
    }
    plan
}

/// Intersection inputs applied to whole rows: a row passes when, for every input, its entry in
/// that input's index lies in one of the input's ranges.
struct RangeFilter {
    table: Arc<TableDef>,
    inputs: Vec<(IndexDef, Vec<KeyRange>)>,
}

impl RangeFilter {
    fn new(table: &Arc<TableDef>, inputs: &[IndexInput]) -> RangeFilter {
        let inputs = inputs
            .iter()
            .filter_map(|input| {
                let index = table.indexes.get(input.index)?.clone();
                let ranges = input.ranges(table).into_iter().map(|(r, _)| r).collect();
                Some((index, ranges))
            })
            .collect();
        RangeFilter {
            table: table.clone(),
            inputs,
        }
    }

    fn passes(&self, row: &[Datum]) -> bool {
        self.inputs.iter().all(|(index, ranges)| {
            let key = layout::entry_key(&self.table, index, row);
            ranges.iter().any(|range| range.contains(&key))
        })
    }

    fn apply(self, rows: RowStream) -> RowStream {
        if self.inputs.is_empty() {
            return rows;
        }
        rows.try_filter(move |row| futures::future::ready(self.passes(row)))
            .boxed()
    }
}

/// The fixed entry-key parts of a checked input (its entries are `part ‖ pk`), or `None` when
/// the input is not checkable.
fn check_parts(table: &TableDef, input: &IndexInput) -> Option<Vec<Vec<u8>>> {
    let index = table.indexes.get(input.index)?;
    if !input.checkable(index) {
        return None;
    }
    input
        .ranges(table)
        .into_iter()
        .map(|(range, pk_offset)| (pk_offset == Some(range.start.len())).then_some(range.start))
        .collect()
}

/// One intersection input: streamed when its entries come out in primary-key order, otherwise
/// read, sorted and deduplicated (a range on an indexed column) while what it holds fits in
/// `budget` bytes, which it draws down; `None` when it does not fit.
async fn pk_input(
    table: &TableDef,
    input: &IndexInput,
    reader: Arc<dyn KvRead>,
    budget: &mut usize,
) -> Result<Option<PkInput>> {
    let ranges = input.ranges(table);
    let streamed: Option<Vec<(KeyRange, usize)>> = ranges
        .iter()
        .map(|(range, offset)| offset.map(|o| (range.clone(), o)))
        .collect();
    if let Some(streamed) = streamed {
        return Ok(Some(PkInput::Ranges(streamed)));
    }
    let Some(index) = table.indexes.get(input.index) else {
        return Ok(Some(PkInput::Sorted(Vec::new())));
    };
    let ranges: Vec<KeyRange> = ranges.into_iter().map(|(range, _)| range).collect();
    let mut entries = ranges_in_order(reader, ranges, Direction::Forward, MAX_PAGE);
    let mut pks: Vec<Vec<u8>> = Vec::new();
    let mut held = 0;
    while let Some((key, _)) = entries.try_next().await? {
        let pk = key[layout::pk_offset(index, &key)?..].to_vec();
        held += pk.len() + HELD_KEY_OVERHEAD;
        if held > *budget {
            return Ok(None);
        }
        pks.push(pk);
    }
    *budget -= held;
    pks.sort_unstable();
    pks.dedup();
    Ok(Some(PkInput::Sorted(pks)))
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

fn range_entries(plan: &ScanPlan, reader: Arc<dyn KvRead>, family: u8) -> EntryStream {
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
