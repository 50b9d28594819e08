//! Where an index intersection's or union's rows come from: the primary keys of the leapfrog
//! merge of an intersection's inputs or the k-way merge of a union's arms (to be looked up, or decoded when the indexes cover the query), or, when every
//! input outgrew the memory budget, the table itself read in key order. Inputs that outgrew
//! the budget filter the rows instead ([`RangeFilter`]), so memory stays bounded either way.
//! A plan with a partition reads only the primary keys of its span (`scan::parallel`).

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use rowdex_catalog::{IndexDef, TableDef};
use rowdex_codec::Datum;
use rowdex_indexer::intersect::{Intersection, PkInput};
use rowdex_indexer::layout;
use rowdex_planner::budget::HELD_KEY_OVERHEAD;
use rowdex_planner::{AccessPath, Direction, IndexInput, KeySpan, Predicate, ScanPlan, UnionArm};
use rowdex_store::{KeyRange, KvRead, scan_stream};

use crate::error::{Error, Result};
use crate::scan::merge::EntryStream;

/// Encoded primary keys, in primary-key order.
pub type PkStream = BoxStream<'static, Result<Vec<u8>>>;

/// Entries read per page when an input is buffered and sorted.
const SORT_PAGE: usize = 1024;

/// What an intersection reads (see [`intersection_source`]).
pub enum IntersectionSource {
    /// Every input outgrew the budget: `scan` reads the table in primary-key order, and
    /// `filter` keeps the rows every input holds.
    TableScan { scan: ScanPlan, filter: RangeFilter },
    /// The primary keys the merged inputs agree on; `lookups` is the plan to look their rows
    /// up with (reading also what `filter` checks), `filter` the inputs that outgrew the budget.
    Pks {
        pks: PkStream,
        lookups: ScanPlan,
        filter: RangeFilter,
    },
}

/// The source of the primary keys of an intersection or a union plan; for any other plan, the
/// plan itself read by key.
pub async fn pk_source(
    plan: &ScanPlan,
    reader: Arc<dyn KvRead>,
    budget: usize,
) -> Result<IntersectionSource> {
    match &plan.path {
        AccessPath::IndexIntersection {
            inputs, checked, ..
        } => intersection_source(plan, (inputs, checked), reader, budget).await,
        AccessPath::IndexUnion {
            arms,
            condition,
            also,
            also_drives,
            ..
        } => union_source(plan, (arms, condition, also, *also_drives), reader, budget).await,
        _ => Ok(IntersectionSource::TableScan {
            scan: plan.clone(),
            filter: RangeFilter::new(&plan.table, &[]),
        }),
    }
}

/// The source of a union of `arms` answering the OR `condition`, intersected with the inputs
/// `also`: the k-way merge of the arms' primary keys (a leapfrog with the other inputs), each
/// arm and input streamed or (a range on an indexed column) buffered and sorted as an
/// intersection's input. When one outgrows the budget, the table is read in primary-key order,
/// `condition` checked on each row and the other inputs applied as filters instead.
async fn union_source(
    plan: &ScanPlan,
    (arms, condition, also, also_drives): (&[UnionArm], &Predicate, &[IndexInput], bool),
    reader: Arc<dyn KvRead>,
    mut budget: usize,
) -> Result<IntersectionSource> {
    let table = plan.table.clone();
    let mut inputs = Vec::with_capacity(arms.len());
    for arm in arms {
        let input = match arm {
            UnionArm::Index(input) => pk_input(&table, input, reader.clone(), &mut budget).await?,
            // Row keys: the primary key follows each bucket's prefix.
            UnionArm::Key { .. } => Some(PkInput::Ranges(
                plan.key_arm_ranges(arm)
                    .into_iter()
                    .flat_map(|(prefix, ranges)| {
                        ranges.into_iter().map(move |range| (range, prefix.len()))
                    })
                    .collect(),
            )),
        };
        let Some(input) = input else {
            return Ok(union_by_table(plan, condition, also));
        };
        inputs.push(input);
    }
    let mut merged = Vec::with_capacity(also.len() + 1);
    for input in also {
        let Some(input) = pk_input(&table, input, reader.clone(), &mut budget).await? else {
            return Ok(union_by_table(plan, condition, also));
        };
        merged.push(input);
    }
    // The first input drives the leapfrog.
    let union = PkInput::Any(inputs);
    match also_drives {
        true => merged.push(union),
        false => merged.insert(0, union),
    }
    if let Some(span) = &plan.partition {
        merged = merged
            .into_iter()
            .map(|input| within(span, input))
            .collect();
    }
    let union = Intersection::new(reader, merged);
    let pks = stream::try_unfold(union, |mut union| async move {
        let next = union.next().await?;
        Ok::<_, Error>(next.map(|pk| (pk, union)))
    })
    .boxed();
    Ok(IntersectionSource::Pks {
        pks,
        lookups: plan.clone(),
        filter: RangeFilter::new(&table, &[]),
    })
}

/// A union (intersected with `also`) read as the table in primary-key order, `condition` and
/// the inputs `also` checked on each row.
fn union_by_table(
    plan: &ScanPlan,
    condition: &Predicate,
    also: &[IndexInput],
) -> IntersectionSource {
    let mut scan = plan.clone();
    scan.path = AccessPath::FullScan;
    scan.residual.clear();
    scan.limit = None;
    scan.needed = None;
    let mut filter = RangeFilter::new(&plan.table, also);
    filter.conditions.push(condition.clone());
    IntersectionSource::TableScan { scan, filter }
}

/// The source of the intersection of `inputs` (merged) and `checked` (checked by lookup).
///
/// An input whose entries are not in primary-key order is buffered and sorted first, within
/// `budget` bytes (the database's memory budget, shared by the inputs of one intersection).
/// An input that outgrows it (an estimate was wrong, or a hint forced the plan) is dropped from
/// the merge and becomes a filter on the rows: a row passes when its entry in that index falls
/// in the input's ranges, which is exactly membership in the input. When no input is left to
/// merge, the table is read in primary-key order with every input as such a filter. Either way
/// memory stays within the budget and the order is kept.
async fn intersection_source(
    plan: &ScanPlan,
    (inputs, checked): (&[IndexInput], &[IndexInput]),
    reader: Arc<dyn KvRead>,
    mut budget: usize,
) -> Result<IntersectionSource> {
    let table = plan.table.clone();
    let mut inputs = inputs.to_vec();
    let mut checked = checked.to_vec();
    let mut checks = Vec::with_capacity(checked.len());
    checked.retain(|input| match check_parts(&table, input) {
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
    let mut merged = Vec::with_capacity(inputs.len());
    let mut filtered = Vec::new();
    for input in inputs {
        match pk_input(&table, &input, reader.clone(), &mut budget).await? {
            Some(pk_input) => merged.push(pk_input),
            None => filtered.push(input),
        }
    }
    if merged.is_empty() {
        filtered.extend(checked);
        let mut scan = reading_filtered(plan, &filtered);
        scan.path = AccessPath::FullScan;
        scan.residual.clear();
        scan.limit = None;
        let filter = RangeFilter::new(&table, &filtered);
        return Ok(IntersectionSource::TableScan { scan, filter });
    }
    if let Some(span) = &plan.partition {
        merged = merged
            .into_iter()
            .map(|input| within(span, input))
            .collect();
    }
    let intersection = Intersection::new(reader, merged).with_checks(checks);
    let pks = stream::try_unfold(intersection, |mut intersection| async move {
        let next = intersection.next().await?;
        Ok::<_, Error>(next.map(|pk| (pk, intersection)))
    })
    .boxed();
    Ok(IntersectionSource::Pks {
        pks,
        lookups: reading_filtered(plan, &filtered),
        filter: RangeFilter::new(&table, &filtered),
    })
}

/// The part of `input` whose primary keys lie in `span` (one partition of a parallel read):
/// each range narrowed under its fixed part, which every entry of the range starts with.
fn within(span: &KeySpan, input: PkInput) -> PkInput {
    match input {
        PkInput::Ranges(ranges) => PkInput::Ranges(
            ranges
                .into_iter()
                .flat_map(|(range, pk_offset)| {
                    let fixed = range.start[..pk_offset.min(range.start.len())].to_vec();
                    span.clip(&fixed, vec![range])
                        .into_iter()
                        .map(move |range| (range, pk_offset))
                })
                .collect(),
        ),
        PkInput::Sorted(mut pks) => {
            pks.retain(|pk| span.contains(pk));
            PkInput::Sorted(pks)
        }
        PkInput::Any(arms) => PkInput::Any(arms.into_iter().map(|arm| within(span, arm)).collect()),
    }
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
/// that input's index lies in one of the input's ranges, and it satisfies every condition (the
/// OR of a union read as a table scan).
pub struct RangeFilter {
    table: Arc<TableDef>,
    inputs: Vec<(IndexDef, Vec<KeyRange>)>,
    conditions: Vec<Predicate>,
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
            conditions: Vec::new(),
        }
    }

    /// Whether the filter keeps every row.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty() && self.conditions.is_empty()
    }

    fn passes(&self, row: &[Datum]) -> bool {
        self.conditions
            .iter()
            .all(|condition| condition.matches(row))
            && self.inputs.iter().all(|(index, ranges)| {
                let key = layout::entry_key(&self.table, index, row);
                index.covers_row(row) && ranges.iter().any(|range| range.contains(&key))
            })
    }

    /// The rows of `rows` the filter keeps.
    pub fn apply(
        self,
        rows: BoxStream<'static, Result<Vec<Datum>>>,
    ) -> BoxStream<'static, Result<Vec<Datum>>> {
        if self.is_empty() {
            return rows;
        }
        rows.try_filter(move |row| futures::future::ready(self.passes(row)))
            .boxed()
    }

    /// The row entries of `entries` the filter keeps. Each entry must hold its whole row
    /// (a table without column families).
    pub fn apply_to_entries(self, entries: EntryStream) -> EntryStream {
        if self.is_empty() {
            return entries;
        }
        entries
            .try_filter_map(move |(key, value)| {
                let row = self.table.decode_row(&key, &value).map_err(Error::from);
                let kept = row.map(|row| self.passes(&row).then_some((key, value)));
                futures::future::ready(kept)
            })
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
    let mut pks: Vec<Vec<u8>> = Vec::new();
    let mut held = 0;
    for (range, _) in ranges {
        let mut entries = scan_stream(reader.clone(), range, Direction::Forward, SORT_PAGE);
        while let Some((key, _)) = entries.try_next().await? {
            let pk = key[layout::pk_offset(index, &key)?..].to_vec();
            held += pk.len() + HELD_KEY_OVERHEAD;
            if held > *budget {
                return Ok(None);
            }
            pks.push(pk);
        }
    }
    *budget -= held;
    pks.sort_unstable();
    pks.dedup();
    Ok(Some(PkInput::Sorted(pks)))
}
