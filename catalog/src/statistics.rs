//! What ANALYZE gathers about a table for the planner: for its primary key and for each index,
//! how many entries it holds, how many distinct values each leading run of its columns takes,
//! and a systematic sample of its leading column (evenly spaced entries, so that the share of
//! samples inside a range estimates the share of entries inside it).
//!
//! The data is plain and serialized as JSON under [`crate::keyspace::statistics_key`];
//! [`KeyGatherer`] builds one [`KeyStatistics`] from entry keys fed in key order.

use std::collections::BTreeMap;

use rowdex_codec::{SortOrder, key};
use serde::{Deserialize, Serialize};

use crate::error::{CatalogError, Result};

/// Samples kept of a key's leading column: enough for a range estimate within a few percent.
pub const SAMPLES: usize = 64;

/// What ANALYZE gathered about one table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableStatistics {
    /// The table's row count when they were gathered (the figure the refresh threshold and the
    /// scaling of stale figures are measured against).
    pub rows: u64,
    /// When they were gathered, in microseconds since the epoch.
    pub gathered_at_micros: i64,
    /// The primary key's (its entries are the rows).
    pub primary: KeyStatistics,
    /// Each ready index's, by index id.
    pub indexes: BTreeMap<u32, KeyStatistics>,
}

/// The statistics of one ordered key: the primary key or an index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyStatistics {
    pub entries: u64,
    /// `distinct[k]`: distinct values of the first `k + 1` key columns (the indexed columns
    /// only, for an index). Over a salted index a leading run short of all indexed columns may
    /// be counted once per bucket it appears in.
    pub distinct: Vec<u64>,
    /// The leading column's encoded value (key order, as in the key) at evenly spaced entries,
    /// ascending.
    pub samples: Vec<Vec<u8>>,
}

impl TableStatistics {
    pub fn encode(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|source| CatalogError::Corrupt {
            what: "table statistics".to_string(),
            source,
        })
    }

    pub fn decode(bytes: &[u8]) -> Result<TableStatistics> {
        serde_json::from_slice(bytes).map_err(|source| CatalogError::Corrupt {
            what: "table statistics".to_string(),
            source,
        })
    }
}

impl KeyStatistics {
    /// The share of samples whose leading value lies within `lower..upper` (encoded, either
    /// bound open when `None`; `upper` exclusive), or None without samples.
    pub fn sampled_share(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Option<f64> {
        if self.samples.is_empty() {
            return None;
        }
        let inside = self
            .samples
            .iter()
            .filter(|s| lower.is_none_or(|l| s.as_slice() >= l))
            .filter(|s| upper.is_none_or(|u| s.as_slice() < u))
            .count();
        Some(inside as f64 / self.samples.len() as f64)
    }
}

/// Builds a [`KeyStatistics`] from the keys of one primary key or index, fed in key order
/// (bucket by bucket when salted), each without its header (prefix and salt).
#[derive(Debug)]
pub struct KeyGatherer {
    /// Sort orders of the columns whose distinct runs are counted.
    orders: Vec<SortOrder>,
    entries: u64,
    distinct: Vec<u64>,
    /// The previous key's bytes up to the end of its last counted column, and where each of
    /// those columns ends in it.
    previous: Vec<u8>,
    previous_ends: Vec<usize>,
    samples: Vec<Vec<u8>>,
    /// Every `step`-th entry is sampled; the step doubles whenever the samples fill up.
    step: u64,
}

impl KeyGatherer {
    /// A gatherer counting distinct runs of the columns of `orders` (at least one).
    pub fn new(orders: Vec<SortOrder>) -> KeyGatherer {
        KeyGatherer {
            distinct: vec![0; orders.len()],
            orders,
            entries: 0,
            previous: Vec::new(),
            previous_ends: Vec::new(),
            samples: Vec::new(),
            step: 1,
        }
    }

    /// Adds one key (without its header).
    pub fn add(&mut self, key_bytes: &[u8]) -> Result<()> {
        let mut ends = Vec::with_capacity(self.orders.len());
        let mut rest = key_bytes;
        for order in &self.orders {
            key::decode_datum(&mut rest, *order)?;
            ends.push(key_bytes.len() - rest.len());
        }
        let first = self.entries == 0;
        let mut changed = first;
        for (k, end) in ends.iter().enumerate() {
            if !changed {
                let same = self.previous_ends.get(k) == Some(end)
                    && self.previous.get(..*end) == key_bytes.get(..*end);
                changed = !same;
            }
            if changed {
                self.distinct[k] += 1;
            }
        }
        if self.entries.is_multiple_of(self.step) {
            let leading = ends.first().copied().unwrap_or(0);
            self.samples.push(key_bytes[..leading].to_vec());
            if self.samples.len() >= 2 * SAMPLES {
                let kept: Vec<Vec<u8>> = self.samples.drain(..).step_by(2).collect();
                self.samples = kept;
                self.step *= 2;
            }
        }
        self.entries += 1;
        let last = ends.last().copied().unwrap_or(0);
        self.previous.clear();
        self.previous.extend_from_slice(&key_bytes[..last]);
        self.previous_ends = ends;
        Ok(())
    }

    pub fn finish(mut self) -> KeyStatistics {
        // Salted keys arrive bucket by bucket: the samples are sorted into one order.
        self.samples.sort_unstable();
        KeyStatistics {
            entries: self.entries,
            distinct: self.distinct,
            samples: self.samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use rowdex_codec::Datum;

    use super::*;

    fn encoded(values: &[i64]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            key::encode_datum(&mut out, &Datum::Int(*v), SortOrder::Asc);
        }
        out
    }

    #[test]
    fn counts_distinct_runs_of_each_leading_column_set() -> Result<()> {
        let mut gatherer = KeyGatherer::new(vec![SortOrder::Asc, SortOrder::Asc]);
        // (a, b, pk): a takes 10 values, (a, b) 30, 300 entries.
        for a in 0..10 {
            for b in 0..3 {
                for pk in 0..10 {
                    gatherer.add(&encoded(&[a, b, pk]))?;
                }
            }
        }
        let stats = gatherer.finish();
        assert_eq!(stats.entries, 300);
        assert_eq!(stats.distinct, vec![10, 30]);
        assert!(stats.samples.len() >= SAMPLES && stats.samples.len() < 2 * SAMPLES);
        Ok(())
    }

    #[test]
    fn samples_estimate_range_shares() -> Result<()> {
        let mut gatherer = KeyGatherer::new(vec![SortOrder::Asc]);
        for v in 0..100_000 {
            gatherer.add(&encoded(&[v]))?;
        }
        let stats = gatherer.finish();
        assert_eq!(stats.distinct, vec![100_000]);
        let low = encoded(&[25_000]);
        let high = encoded(&[75_000]);
        let share = stats
            .sampled_share(Some(&low), Some(&high))
            .unwrap_or_default();
        assert!((share - 0.5).abs() < 0.05, "share {share}");
        let all = stats.sampled_share(None, None).unwrap_or_default();
        assert!((all - 1.0).abs() < f64::EPSILON);
        Ok(())
    }

    #[test]
    fn round_trips_as_json() -> Result<()> {
        let mut stats = TableStatistics {
            rows: 7,
            gathered_at_micros: 1,
            ..TableStatistics::default()
        };
        stats.indexes.insert(
            3,
            KeyStatistics {
                entries: 7,
                distinct: vec![2],
                samples: vec![vec![1, 2]],
            },
        );
        assert_eq!(TableStatistics::decode(&stats.encode()?)?, stats);
        Ok(())
    }
}
