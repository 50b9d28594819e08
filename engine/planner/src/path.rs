//! Access paths: what a scan of one table reads, as values (for EXPLAIN) and as key ranges (for
//! the executor).

use std::ops::Bound;
use std::sync::Arc;

use rowdex_catalog::{IndexDef, KeyColumn, TableDef};
use rowdex_codec::{Datum, SortOrder, key};
use rowdex_store::{Direction, KeyRange};

use crate::predicate::{CmpOp, Predicate};

/// The condition on the first key column after the fixed ones.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyBound {
    /// Every value (a prefix scan).
    All,
    Range {
        lower: Bound<Datum>,
        upper: Bound<Datum>,
    },
    /// Text values starting with this prefix (`LIKE 'abc%'`).
    TextPrefix(String),
    /// A row-value comparison `(next columns...) op (values...)` over as many key columns as
    /// there are values: one range per leading run of equal columns (see `bounded_ranges`).
    Row { op: CmpOp, values: Vec<Datum> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum AccessPath {
    /// Every key column fixed: one key.
    PointGet {
        key: Vec<Datum>,
    },
    /// Every key column fixed by `=` or `IN`: a few keys.
    MultiGet {
        keys: Vec<Vec<Datum>>,
    },
    /// Leading key columns fixed (one tuple per prefix, several with `IN`), the next one bounded.
    RangeScan {
        prefixes: Vec<Vec<Datum>>,
        bound: KeyBound,
    },
    /// A range of one index (its columns, then the primary key, fixed and bounded like a row
    /// key), with a row lookup per entry unless the index covers the query.
    IndexScan {
        input: IndexInput,
        covering: bool,
    },
    /// Several index ranges, each sorted by primary key, merged by a leapfrog join; a row
    /// lookup per match unless the primary key is all the query needs. `checked` inputs are
    /// not read: each pk the merge yields is looked up in them (see
    /// [`IndexInput::checkable`]), which beats reading an input much denser than the driver.
    IndexIntersection {
        inputs: Vec<IndexInput>,
        checked: Vec<IndexInput>,
        covering: bool,
    },
    /// The arms of an OR, each answered by an index range or a primary-key range, their
    /// primary keys merged in key order without duplicates (a k-way merge); a row lookup per
    /// primary key unless the primary key is all the query needs.
    /// `condition` is the OR itself, `arms[i]` answering its arm i: a union whose unordered
    /// arm outgrows the memory budget reads the table and checks it instead. With `also`, the
    /// union is one input of a leapfrog intersection with these index ranges (`(a = 1 OR
    /// b = 2) AND c = 3`), shown as an INDEX INTERSECTION.
    IndexUnion {
        arms: Vec<UnionArm>,
        condition: Predicate,
        also: Vec<IndexInput>,
        /// An input of `also` is sparser than the union: it drives the leapfrog (the cost
        /// model decides).
        also_drives: bool,
        covering: bool,
    },
    FullScan,
}

/// How one arm of an [`AccessPath::IndexUnion`] finds its rows.
#[derive(Debug, Clone, PartialEq)]
pub enum UnionArm {
    /// A range of an index.
    Index(IndexInput),
    /// Leading primary-key columns fixed (one tuple per combination), the next one bounded:
    /// the table's own rows, in key order.
    Key {
        prefixes: Vec<Vec<Datum>>,
        bound: KeyBound,
    },
}

/// A range of one index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexInput {
    /// Position in the table's indexes.
    pub index: usize,
    /// Fixed leading entry columns (index columns, then primary-key columns), one tuple per
    /// combination.
    pub prefixes: Vec<Vec<Datum>>,
    /// The condition on the entry column after the fixed ones.
    pub bound: KeyBound,
}

impl IndexInput {
    /// Whether every indexed column is fixed, so that the entries come out in primary-key order
    /// within each prefix (what an intersection needs to stream).
    pub fn pk_ordered(&self, index: &IndexDef) -> bool {
        self.prefixes
            .first()
            .is_some_and(|p| p.len() >= index.columns.len())
    }

    /// Whether membership of a primary key can be checked by looking up one entry key per
    /// value tuple: every indexed column is fixed and nothing else narrows the entries.
    pub fn checkable(&self, index: &IndexDef) -> bool {
        self.bound == KeyBound::All
            && !self.prefixes.is_empty()
            && self.prefixes.iter().all(|p| p.len() == index.columns.len())
    }

    /// The key ranges to read, in ascending key order; with each, where the primary key starts
    /// in an entry key (known when every indexed column is fixed).
    pub fn ranges(&self, table: &TableDef) -> Vec<(KeyRange, Option<usize>)> {
        let Some(index) = table.indexes.get(self.index) else {
            return Vec::new();
        };
        let columns = table.entry_key_columns(index);
        let mut out: Vec<(KeyRange, Option<usize>)> = self
            .prefixes
            .iter()
            .flat_map(|tuple| {
                let mut encoded = Vec::with_capacity(32);
                let mut pk_offset = None;
                for (i, (value, column)) in tuple.iter().zip(&columns).enumerate() {
                    if i == index.columns.len() {
                        pk_offset = Some(encoded.len());
                    }
                    key::encode_datum(&mut encoded, value, column.order());
                }
                if tuple.len() == index.columns.len() {
                    pk_offset = Some(encoded.len());
                }
                // A salted index hashes every indexed value: a tuple fixing them all lives in
                // one bucket, any other may be in each.
                let buckets = match pk_offset {
                    Some(values_len) if index.is_salted() => {
                        vec![Some(index.salt_of(&encoded[..values_len]))]
                    }
                    _ => index.buckets(),
                };
                let next_columns = columns.get(tuple.len()..).unwrap_or_default();
                let bound = &self.bound;
                buckets.into_iter().flat_map(move |bucket| {
                    let mut start = index.bucket_prefix(bucket);
                    let header = start.len();
                    start.extend_from_slice(&encoded);
                    let ranges = bounded_ranges(&start, bound, next_columns);
                    ranges
                        .into_iter()
                        .map(move |r| (r, pk_offset.map(|o| o + header)))
                })
            })
            .collect();
        out.sort_by(|a, b| a.0.start.cmp(&b.0.start));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

impl AccessPath {
    pub fn name(&self) -> &'static str {
        match self {
            AccessPath::PointGet { .. } => "POINT GET",
            AccessPath::MultiGet { .. } => "MULTI GET",
            AccessPath::RangeScan { .. } => "RANGE SCAN",
            AccessPath::IndexScan { .. } => "INDEX SCAN",
            AccessPath::IndexIntersection { .. } => "INDEX INTERSECTION",
            AccessPath::IndexUnion { also, .. } if also.is_empty() => "INDEX UNION",
            AccessPath::IndexUnion { .. } => "INDEX INTERSECTION",
            AccessPath::FullScan => "FULL SCAN",
        }
    }
}

/// A complete plan for reading one table.
#[derive(Debug, Clone)]
pub struct ScanPlan {
    pub table: Arc<TableDef>,
    pub path: AccessPath,
    /// Predicates the path does not guarantee; the scan evaluates them on each row.
    pub residual: Vec<Predicate>,
    pub direction: Direction,
    /// Rows to skip, then rows to return, after the residual filter.
    pub offset: usize,
    pub limit: Option<usize>,
    /// What the cost model expected, when it compared paths (shown by EXPLAIN).
    pub estimate: Option<Estimate>,
    /// Cursor paging: read only past this position, in scan direction. For a read by key
    /// it is an encoded primary key, for an index scan an entry key without its header (index
    /// prefix and salt): indexed values ‖ primary key. Ranges are cut at it, so earlier keys are never read.
    pub resume_after: Option<Vec<u8>>,
    /// The columns the consumer reads (None = all). A table with column families reads only
    /// the families of these and of the residual filter.
    pub needed: Option<Vec<usize>>,
    /// One partition of a read by key ranges: only the rows whose encoded primary key lies in
    /// this span are read (see [`KeySpan`]). None reads every row the path selects.
    pub partition: Option<KeySpan>,
    /// A range scan of several prefix tuples read merged: each tuple's range is in the order of
    /// the key columns after the tuple, and a k-way merge over those columns yields them in
    /// that order across tuples (`bucket IN (0, 1, 2, 3) ... ORDER BY ts`, the bucket a
    /// generated `ts % 4`), as a salted table's buckets are merged. See [`ScanPlan::merged`].
    pub merged: bool,
}

/// A span of encoded primary keys (without the table's header), `from` included and `to`
/// excluded; an open end is unbounded. Parallel scans read one span each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySpan {
    pub from: Option<Vec<u8>>,
    pub to: Option<Vec<u8>>,
}

impl KeySpan {
    /// Whether encoded primary key `pk` lies in the span.
    pub fn contains(&self, pk: &[u8]) -> bool {
        self.from.as_deref().is_none_or(|from| pk >= from)
            && self.to.as_deref().is_none_or(|to| pk < to)
    }

    /// `ranges` (under `prefix`, a bucket's header, or an index entry's fixed part) narrowed
    /// to the keys of the span; ranges left empty are dropped.
    pub fn clip(&self, prefix: &[u8], ranges: Vec<KeyRange>) -> Vec<KeyRange> {
        let from = self.from.as_ref().map(|from| [prefix, from].concat());
        let to = self.to.as_ref().map(|to| [prefix, to].concat());
        ranges
            .into_iter()
            .filter_map(|mut range| {
                if let Some(from) = &from
                    && range.start < *from
                {
                    range.start = from.clone();
                }
                if let Some(to) = &to
                    && range.end.as_ref().is_none_or(|end| end > to)
                {
                    range.end = Some(to.clone());
                }
                let empty = range.end.as_ref().is_some_and(|end| *end <= range.start);
                (!empty).then_some(range)
            })
            .collect()
    }
}

/// The cost model's view of a plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Rows the path yields before the residual filter.
    pub rows: u64,
    /// Key-value entries the path reads (index entries and rows).
    pub entries: u64,
    /// Estimated cost in microseconds.
    pub cost_us: f64,
}

impl ScanPlan {
    /// Whether this plan reads individual keys rather than ranges: their row keys.
    pub fn point_keys(&self) -> Option<Vec<Vec<u8>>> {
        self.family_point_keys(0)
    }

    /// [`ScanPlan::point_keys`], as keys of column family `family`'s entries.
    pub fn family_point_keys(&self, family: u8) -> Option<Vec<Vec<u8>>> {
        let tuples: Vec<&Vec<Datum>> = match &self.path {
            AccessPath::PointGet { key } => vec![key],
            AccessPath::MultiGet { keys } => keys.iter().collect(),
            _ => return None,
        };
        let mut pks: Vec<Vec<u8>> = tuples
            .into_iter()
            .map(|tuple| {
                let values: Vec<&Datum> = tuple.iter().collect();
                self.table.encode_key_values(&values)
            })
            .collect();
        pks.sort();
        pks.dedup();
        if let Some(after) = &self.resume_after {
            match self.direction {
                Direction::Forward => pks.retain(|pk| pk > after),
                Direction::Reverse => pks.retain(|pk| pk < after),
            }
        }
        if self.direction == Direction::Reverse {
            pks.reverse();
        }
        Some(
            pks.iter()
                .map(|pk| self.table.family_row_key(family, pk))
                .collect(),
        )
    }

    /// The column families a read by key reads, ascending: those of the columns the consumer
    /// needs and of the residual filter, or every family when the consumer did not say. Never
    /// empty: a query of key columns alone reads the row entries (family 0).
    pub fn families_read(&self) -> Vec<u8> {
        let table = &self.table;
        if !table.has_families() {
            return vec![0];
        }
        let Some(needed) = &self.needed else {
            return table.family_numbers().collect();
        };
        let residual = self.residual.iter().flat_map(Predicate::columns);
        let families = table.families_of(needed.iter().copied().chain(residual));
        if families.is_empty() {
            vec![0]
        } else {
            families
        }
    }

    /// The key columns whose order the rows come out in: the primary key, or for an index scan
    /// the index's columns followed by the primary key (an intersection yields primary-key
    /// order). Reversed for a reverse scan; the first [`ScanPlan::fixed_columns`] of them hold a
    /// single value.
    pub fn order_columns(&self) -> Vec<KeyColumn> {
        match &self.path {
            AccessPath::IndexScan { input, .. } => self
                .table
                .indexes
                .get(input.index)
                .map(|index| self.table.entry_key_columns(index))
                .unwrap_or_default(),
            _ => self.table.key.clone(),
        }
    }

    /// How many leading [`ScanPlan::order_columns`] come before the output's order: the
    /// columns the path fixes, or a merged range scan's prefix columns (several values each,
    /// merged away).
    pub fn ordered_from(&self) -> usize {
        match &self.path {
            AccessPath::RangeScan { prefixes, .. } if self.merged => {
                prefixes.first().map_or(0, Vec::len)
            }
            _ => self.fixed_columns(),
        }
    }

    /// This range scan read merged (see [`ScanPlan::merged`]), when that gives an order the
    /// plain read does not: several prefix tuples of one length, a table that is not salted
    /// (whose buckets merge by the whole key), no paging position, no partition.
    pub fn merged(mut self) -> Option<ScanPlan> {
        let AccessPath::RangeScan { prefixes, .. } = &self.path else {
            return None;
        };
        let length = prefixes.first()?.len();
        let mergeable = prefixes.len() > 1
            && length > 0
            && length < self.table.key.len()
            && prefixes.iter().all(|tuple| tuple.len() == length)
            && !self.table.is_salted()
            && self.resume_after.is_none()
            && self.partition.is_none();
        if !mergeable {
            return None;
        }
        self.merged = true;
        Some(self)
    }

    /// A merged range scan's ranges of column family `family`, per prefix tuple: the length of
    /// the key part the tuple fixes (the family's header and the tuple), which the merge skips,
    /// and the tuple's ranges in key order.
    pub fn merged_ranges(&self, family: u8) -> Vec<(usize, Vec<KeyRange>)> {
        let AccessPath::RangeScan { prefixes, bound } = &self.path else {
            return Vec::new();
        };
        let header = self.table.family_bucket_prefix(family, 0);
        let next_column = prefixes.first().map_or(0, Vec::len);
        let next_columns = self.table.key.get(next_column..).unwrap_or_default();
        let mut fixed: Vec<Vec<u8>> = prefixes
            .iter()
            .map(|tuple| {
                let values: Vec<&Datum> = tuple.iter().collect();
                [header.as_slice(), &self.table.encode_key_values(&values)].concat()
            })
            .collect();
        fixed.sort();
        fixed.dedup();
        fixed
            .into_iter()
            .map(|part| (part.len(), bounded_ranges(&part, bound, next_columns)))
            .collect()
    }

    /// How many leading [`ScanPlan::order_columns`] the path fixes to a single value: those are
    /// constant in the output, and the order is carried by the columns after them.
    pub fn fixed_columns(&self) -> usize {
        match &self.path {
            AccessPath::PointGet { key } => key.len(),
            AccessPath::RangeScan { prefixes, .. } if prefixes.len() == 1 => prefixes[0].len(),
            AccessPath::IndexScan { input, .. } if input.prefixes.len() == 1 => {
                input.prefixes[0].len()
            }
            _ => 0,
        }
    }

    /// The key ranges whose entry counts the cost model needs: one list per input (the table's
    /// ranges in every bucket for a range scan, each index input's ranges otherwise).
    pub fn probes(&self) -> Vec<Vec<KeyRange>> {
        match &self.path {
            AccessPath::RangeScan { .. } => vec![
                self.bucket_ranges()
                    .into_iter()
                    .flat_map(|(_, ranges)| ranges)
                    .collect(),
            ],
            AccessPath::IndexScan { input, .. } => {
                vec![
                    input
                        .ranges(&self.table)
                        .into_iter()
                        .map(|(r, _)| r)
                        .collect(),
                ]
            }
            AccessPath::IndexIntersection {
                inputs, checked, ..
            } => inputs
                .iter()
                .chain(checked)
                .map(|input| {
                    input
                        .ranges(&self.table)
                        .into_iter()
                        .map(|(r, _)| r)
                        .collect()
                })
                .collect(),
            AccessPath::IndexUnion { arms, also, .. } => arms
                .iter()
                .map(|arm| match arm {
                    UnionArm::Index(input) => input
                        .ranges(&self.table)
                        .into_iter()
                        .map(|(r, _)| r)
                        .collect(),
                    UnionArm::Key { .. } => self
                        .key_arm_ranges(arm)
                        .into_iter()
                        .flat_map(|(_, ranges)| ranges)
                        .collect(),
                })
                .chain(also.iter().map(|input| {
                    input
                        .ranges(&self.table)
                        .into_iter()
                        .map(|(r, _)| r)
                        .collect()
                }))
                .collect(),
            AccessPath::PointGet { .. } | AccessPath::MultiGet { .. } | AccessPath::FullScan => {
                Vec::new()
            }
        }
    }

    /// This plan reading the rows a primary-key arm of a union selects, as a range scan: no
    /// resume position, partition, residual or window of its own.
    pub fn key_arm_scan(&self, arm: &UnionArm) -> Option<ScanPlan> {
        let UnionArm::Key { prefixes, bound } = arm else {
            return None;
        };
        Some(ScanPlan {
            table: self.table.clone(),
            path: AccessPath::RangeScan {
                prefixes: prefixes.clone(),
                bound: bound.clone(),
            },
            residual: Vec::new(),
            direction: Direction::Forward,
            offset: 0,
            limit: None,
            estimate: None,
            resume_after: None,
            needed: self.needed.clone(),
            partition: None,
            merged: false,
        })
    }

    /// The row-key ranges of a primary-key arm of a union, per bucket with its prefix (where
    /// the encoded primary key starts), in ascending key order; nothing for an index arm.
    pub fn key_arm_ranges(&self, arm: &UnionArm) -> Vec<(Vec<u8>, Vec<KeyRange>)> {
        self.key_arm_scan(arm)
            .map(|scan| scan.bucket_ranges())
            .unwrap_or_default()
    }

    /// The salt buckets a key scan visits (all of them for an unsalted table's one prefix):
    /// only the buckets of its prefixes when every prefix fixes the salt columns.
    pub fn buckets(&self) -> Vec<u8> {
        let table = &self.table;
        if !table.is_salted() {
            return vec![0];
        }
        if let AccessPath::RangeScan { prefixes, .. } = &self.path {
            let chosen: Option<Vec<u8>> = prefixes
                .iter()
                .map(|tuple| table.salt_of_leading(tuple))
                .collect();
            if let Some(mut chosen) = chosen.filter(|c| !c.is_empty()) {
                chosen.sort_unstable();
                chosen.dedup();
                return chosen;
            }
        }
        (0..table.salt_buckets).map(|b| b as u8).collect()
    }

    /// Every bucket the scan visits, with its prefix and the byte ranges to read in it, in
    /// ascending key order.
    pub fn bucket_ranges(&self) -> Vec<(Vec<u8>, Vec<KeyRange>)> {
        self.family_bucket_ranges(0)
    }

    /// [`ScanPlan::bucket_ranges`] in the entries of column family `family`.
    pub fn family_bucket_ranges(&self, family: u8) -> Vec<(Vec<u8>, Vec<KeyRange>)> {
        self.buckets()
            .into_iter()
            .map(|bucket| {
                let prefix = self.table.family_bucket_prefix(family, bucket);
                let mut ranges = self.key_ranges_in(&prefix, Some(bucket));
                if let Some(after) = &self.resume_after {
                    // Each bucket holds its keys in primary-key order, as the merge compares.
                    let position = [prefix.as_slice(), after].concat();
                    ranges = cut_ranges(ranges, &position, self.direction);
                }
                if let Some(span) = &self.partition {
                    ranges = span.clip(&prefix, ranges);
                }
                (prefix, ranges)
            })
            .collect()
    }

    /// The entry-key ranges an index scan reads, cut at the resume position.
    pub fn index_scan_ranges(&self, input: &IndexInput) -> Vec<KeyRange> {
        let ranges: Vec<KeyRange> = input
            .ranges(&self.table)
            .into_iter()
            .map(|(range, _)| range)
            .collect();
        match (&self.resume_after, self.table.indexes.get(input.index)) {
            (Some(after), Some(index)) => {
                // Each bucket is cut at the same values and primary key, behind its own header.
                let header = index.header_len();
                ranges
                    .into_iter()
                    .flat_map(|range| {
                        let position =
                            [&range.start[..header.min(range.start.len())], after].concat();
                        cut_ranges(vec![range], &position, self.direction)
                    })
                    .collect()
            }
            _ => ranges,
        }
    }

    /// The byte ranges to scan inside one bucket prefix, in ascending key order.
    pub fn key_ranges(&self, bucket_prefix: &[u8]) -> Vec<KeyRange> {
        self.key_ranges_in(bucket_prefix, None)
    }

    /// The ranges in `bucket` (or in every bucket): a prefix tuple whose salt columns hash to
    /// another bucket has no rows here.
    fn key_ranges_in(&self, bucket_prefix: &[u8], bucket: Option<u8>) -> Vec<KeyRange> {
        match &self.path {
            AccessPath::PointGet { .. }
            | AccessPath::MultiGet { .. }
            | AccessPath::IndexScan { .. }
            | AccessPath::IndexIntersection { .. }
            | AccessPath::IndexUnion { .. } => Vec::new(),
            AccessPath::FullScan => vec![KeyRange::prefix(bucket_prefix)],
            AccessPath::RangeScan { prefixes, bound } => {
                let mut encoded: Vec<Vec<u8>> = prefixes
                    .iter()
                    .filter(|tuple| {
                        bucket.is_none_or(|b| {
                            !self.table.is_salted()
                                || self.table.salt_of_leading(tuple).is_none_or(|t| t == b)
                        })
                    })
                    .map(|tuple| {
                        let values: Vec<&Datum> = tuple.iter().collect();
                        let mut start = bucket_prefix.to_vec();
                        start.extend_from_slice(&self.table.encode_key_values(&values));
                        start
                    })
                    .collect();
                encoded.sort();
                encoded.dedup();
                let next_column = prefixes.first().map_or(0, Vec::len);
                let next_columns = self.table.key.get(next_column..).unwrap_or_default();
                encoded
                    .iter()
                    .flat_map(|p| bounded_ranges(p, bound, next_columns))
                    .collect()
            }
        }
    }
}

/// What is left of `ranges` strictly after `position` in scan direction (strictly before it
/// when reading in reverse).
fn cut_ranges(ranges: Vec<KeyRange>, position: &[u8], direction: Direction) -> Vec<KeyRange> {
    ranges
        .into_iter()
        .filter_map(|mut range| {
            match direction {
                Direction::Forward => {
                    // The smallest key after `position` is `position ‖ 0x00`.
                    let next = [position, &[0u8]].concat();
                    if range.start < next {
                        range.start = next;
                    }
                }
                Direction::Reverse => {
                    if range
                        .end
                        .as_ref()
                        .is_none_or(|end| end.as_slice() > position)
                    {
                        range.end = Some(position.to_vec());
                    }
                }
            }
            let empty = range.end.as_ref().is_some_and(|end| *end <= range.start);
            (!empty).then_some(range)
        })
        .collect()
}

/// The key ranges, in key order, of the rows under `prefix` whose next columns satisfy
/// `bound`.
///
/// A row-value comparison `(c1, ..., cm) < (v1, ..., vm)` is the union over `i` of "`c1..ci`
/// equal `v1..vi` and `c(i+1) < v(i+1)`", plus "all equal" for `<=`: disjoint ranges, each
/// contiguous in the key whatever mix of ASC and DESC the columns have.
pub(crate) fn bounded_ranges(
    prefix: &[u8],
    bound: &KeyBound,
    next_columns: &[KeyColumn],
) -> Vec<KeyRange> {
    let first = next_columns
        .first()
        .map_or(SortOrder::Asc, KeyColumn::order);
    match bound {
        KeyBound::All => vec![KeyRange::prefix(prefix)],
        KeyBound::TextPrefix(text) => {
            let mut start = prefix.to_vec();
            key::encode_text_prefix(&mut start, text, first);
            vec![KeyRange::prefix(&start)]
        }
        KeyBound::Range { lower, upper } => value_range(prefix, lower, upper, first)
            .into_iter()
            .collect(),
        KeyBound::Row { op, values } => {
            let mut out = Vec::with_capacity(values.len() + 1);
            let mut equal = prefix.to_vec();
            for (value, column) in values.iter().zip(next_columns) {
                let value_bound = Bound::Excluded(value.clone());
                let piece = match op {
                    CmpOp::Lt | CmpOp::LtEq => {
                        value_range(&equal, &Bound::Unbounded, &value_bound, column.order())
                    }
                    _ => value_range(&equal, &value_bound, &Bound::Unbounded, column.order()),
                };
                out.extend(piece);
                key::encode_datum(&mut equal, value, column.order());
            }
            if matches!(op, CmpOp::LtEq | CmpOp::GtEq) && values.len() <= next_columns.len() {
                out.push(KeyRange::prefix(&equal));
            }
            out.sort_by(|a, b| a.start.cmp(&b.start));
            out
        }
    }
}

/// The key range of the rows under `prefix` whose next column (sorted by `order`) lies between
/// the value bounds `lower` and `upper`; `None` when nothing can.
fn value_range(
    prefix: &[u8],
    lower: &Bound<Datum>,
    upper: &Bound<Datum>,
    order: SortOrder,
) -> Option<KeyRange> {
    let with = |datum: &Datum| {
        let mut out = prefix.to_vec();
        key::encode_datum(&mut out, datum, order);
        out
    };
    let after = |bytes: Vec<u8>| key::prefix_successor(&bytes);
    let whole = KeyRange::prefix(prefix);
    let (lower, upper) = match order {
        SortOrder::Asc => (lower, upper),
        // A DESC column stores larger values first: the value bounds swap ends.
        SortOrder::Desc => (upper, lower),
    };
    // In key order `lower` is where the range starts. The bounded column can never be NULL in a
    // match, so an open end stops at the NULLs (first in ASC, last in DESC).
    let null = with(&Datum::Null);
    let start = match (lower, order) {
        (Bound::Included(v), _) => with(v),
        (Bound::Excluded(v), _) => after(with(v))?,
        (Bound::Unbounded, SortOrder::Asc) => after(null.clone())?,
        (Bound::Unbounded, SortOrder::Desc) => prefix.to_vec(),
    };
    let end = match (upper, order) {
        (Bound::Included(v), _) => after(with(v)),
        (Bound::Excluded(v), _) => Some(with(v)),
        (Bound::Unbounded, SortOrder::Asc) => whole.end.clone(),
        (Bound::Unbounded, SortOrder::Desc) => Some(null),
    };
    if let Some(end) = &end
        && *end <= start
    {
        return None;
    }
    Some(KeyRange { start, end })
}
