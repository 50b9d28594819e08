//! Estimating how many entries a candidate's key ranges hold from gathered statistics
//! (`rowdex_catalog::TableStatistics`), without reading the store: one figure per probe of
//! [`ScanPlan::probes`], for the cost model to use where a dive did not count exactly.
//!
//! Per fixed prefix tuple of k leading columns: the entries over the distinct values of those
//! k columns (for k = 1 at least the share of samples holding that value, which catches a
//! skewed value); a range on the leading column itself is the share of samples inside it; a
//! range on a later column keeps a default share, as PostgreSQL's for an inequality without a
//! histogram.
//!
//! A range the samples pin down only to within a few sample intervals (two samples or fewer
//! inside it) is marked coarse: on a large table an interval is many entries, so such a range
//! may hold far fewer than estimated, and a capped dive pays for itself there.

use rowdex_catalog::{KeyStatistics, TableStatistics};
use rowdex_store::KeyRange;

use crate::path::{AccessPath, IndexInput, KeyBound, ScanPlan, UnionArm};

/// The share of entries a range on a column after the fixed ones is assumed to keep.
const RANGE_SHARE: f64 = 1.0 / 3.0;

/// The share a `LIKE 'prefix%'` on a column after the fixed ones is assumed to keep.
const TEXT_PREFIX_SHARE: f64 = 0.05;

/// Samples inside a leading-column range at or below which its estimate is coarse.
const COARSE_SAMPLES: f64 = 2.0;

/// The entries one probe is estimated to hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeEstimate {
    pub entries: f64,
    /// From two samples or fewer: the range may hold far fewer entries (see the module header).
    pub coarse: bool,
}

impl ScanPlan {
    /// One estimate per probe (see [`ScanPlan::probes`]), None where `stats` hold nothing for
    /// the probe's key. `table_rows` is the table's row count now: figures gathered at another
    /// size are scaled to it.
    pub fn probe_estimates(
        &self,
        stats: &TableStatistics,
        table_rows: u64,
    ) -> Vec<Option<ProbeEstimate>> {
        let scale = if stats.rows == 0 {
            1.0
        } else {
            table_rows as f64 / stats.rows as f64
        };
        match &self.path {
            AccessPath::RangeScan { prefixes, bound } => {
                let header = self.table.key_header_len();
                let per_tuple: Vec<(usize, Vec<KeyRange>)> = if prefixes.is_empty() {
                    vec![(0, self.one_bucket_ranges())]
                } else {
                    prefixes
                        .iter()
                        .map(|tuple| {
                            let mut single = self.clone();
                            single.path = AccessPath::RangeScan {
                                prefixes: vec![tuple.clone()],
                                bound: bound.clone(),
                            };
                            (tuple.len(), single.one_bucket_ranges())
                        })
                        .collect()
                };
                vec![Some(estimate(
                    &stats.primary,
                    &per_tuple,
                    bound,
                    header,
                    scale,
                ))]
            }
            AccessPath::IndexScan { input, .. } => vec![self.input_estimate(input, stats, scale)],
            AccessPath::IndexIntersection {
                inputs, checked, ..
            } => inputs
                .iter()
                .chain(checked)
                .map(|input| self.input_estimate(input, stats, scale))
                .collect(),
            AccessPath::IndexUnion { arms, also, .. } => arms
                .iter()
                .map(|arm| match arm {
                    UnionArm::Index(input) => self.input_estimate(input, stats, scale),
                    UnionArm::Key { .. } => self
                        .key_arm_scan(arm)?
                        .probe_estimates(stats, table_rows)
                        .into_iter()
                        .next()
                        .flatten(),
                })
                .chain(
                    also.iter()
                        .map(|input| self.input_estimate(input, stats, scale)),
                )
                .collect(),
            AccessPath::PointGet { .. } | AccessPath::MultiGet { .. } | AccessPath::FullScan => {
                Vec::new()
            }
        }
    }

    /// The key ranges of the first bucket this plan visits.
    fn one_bucket_ranges(&self) -> Vec<KeyRange> {
        self.bucket_ranges()
            .into_iter()
            .next()
            .map(|(_, ranges)| ranges)
            .unwrap_or_default()
    }

    fn input_estimate(
        &self,
        input: &IndexInput,
        stats: &TableStatistics,
        scale: f64,
    ) -> Option<ProbeEstimate> {
        let index = self.table.indexes.get(input.index)?;
        let key_stats = stats.indexes.get(&index.id)?;
        let header = index.header_len();
        let first_bucket = |input: &IndexInput| -> Vec<KeyRange> {
            let ranges = input.ranges(&self.table);
            let Some(bucket) = ranges
                .first()
                .map(|(r, _)| r.start.get(..header).map(<[u8]>::to_vec))
            else {
                return Vec::new();
            };
            ranges
                .into_iter()
                .filter(|(r, _)| r.start.get(..header).map(<[u8]>::to_vec) == bucket)
                .map(|(r, _)| r)
                .collect()
        };
        let per_tuple: Vec<(usize, Vec<KeyRange>)> = if input.prefixes.is_empty() {
            vec![(0, first_bucket(input))]
        } else {
            input
                .prefixes
                .iter()
                .map(|tuple| {
                    let single = IndexInput {
                        prefixes: vec![tuple.clone()],
                        ..input.clone()
                    };
                    (tuple.len(), first_bucket(&single))
                })
                .collect()
        };
        Some(estimate(key_stats, &per_tuple, &input.bound, header, scale))
    }
}

/// Entries in the ranges of each fixed tuple (its length, and its ranges in one bucket), by
/// the key's statistics.
fn estimate(
    stats: &KeyStatistics,
    per_tuple: &[(usize, Vec<KeyRange>)],
    bound: &KeyBound,
    header: usize,
    scale: f64,
) -> ProbeEstimate {
    let entries = stats.entries as f64 * scale;
    // A range too narrow for any sample still holds up to half the entries between two.
    let floor = if stats.samples.is_empty() {
        0.0
    } else {
        0.5 / stats.samples.len() as f64
    };
    let sampled = |ranges: &[KeyRange], floor: f64| -> Option<f64> {
        let mut share = 0.0;
        for range in ranges {
            let lower = range.start.get(header..)?;
            // An end past this key's header (the next prefix, or none) leaves the range open.
            let upper = range.end.as_ref().and_then(|end| {
                (end.len() > header && end.get(..header) == range.start.get(..header))
                    .then(|| &end[header..])
            });
            share += stats.sampled_share(Some(lower), upper)?;
        }
        Some(share.max(floor).min(1.0))
    };
    let bound_share = match bound {
        KeyBound::All => 1.0,
        KeyBound::TextPrefix(_) => TEXT_PREFIX_SHARE,
        KeyBound::Range { .. } | KeyBound::Row { .. } => RANGE_SHARE,
    };
    let mut coarse = false;
    let total = per_tuple
        .iter()
        .map(|(fixed, ranges)| match fixed {
            // A range on the leading column: the samples inside it.
            0 => {
                let share = sampled(ranges, floor);
                coarse |=
                    share.is_some_and(|share| share * stats.samples.len() as f64 <= COARSE_SAMPLES);
                share.unwrap_or(bound_share) * entries
            }
            k => {
                let per_value = match stats.distinct.get(k - 1) {
                    Some(&distinct) if distinct > 0 => entries / distinct as f64,
                    // Past the counted columns (into the primary key): one entry per tuple.
                    Some(_) => 0.0,
                    None => 1.0,
                };
                // A value in two samples or more is frequent (one sample is chance: any value
                // of a 1/n share lands on one sample with probability about samples/n).
                let skewed = if *k == 1 && *bound == KeyBound::All {
                    sampled(ranges, 0.0)
                        .filter(|share| share * stats.samples.len() as f64 >= 1.5)
                        .map_or(0.0, |share| share * entries)
                } else {
                    0.0
                };
                per_value.max(skewed) * bound_share
            }
        })
        .sum::<f64>()
        .min(entries);
    ProbeEstimate {
        entries: total,
        coarse,
    }
}
