//! Index dives: counting a candidate plan's key ranges in the store before choosing, in place
//! (without copying entries out), up to a cap, several candidates side by side.

use rowdex_planner::Count;
use rowdex_planner::cost::DIVE_MIN;
use rowdex_store::{KeyRange, KvRead};

use crate::error::Result;

/// Counts the entries of `ranges`, stopping at `cap` (an "index dive" when the ranges are a
/// candidate plan's). The store counts in place, without copying entries out.
pub(crate) async fn count_entries(
    reader: &dyn KvRead,
    ranges: &[KeyRange],
    cap: u64,
) -> Result<Count> {
    let mut dive = Dive::new(ranges.to_vec());
    dive.extend_to(reader, cap).await?;
    Ok(dive.count())
}

/// How far past the smallest exactly counted candidate the other candidates are counted. The
/// cost model treats a count stopped there as a large share of the table; since choosing reads
/// at least the smallest candidate, counting much further would cost more than the choice can
/// save. The exception it gives up on: a covering index more than this many times larger than
/// the best exact candidate, which could still have been cheaper (no row lookups).
const RACE_RATIO: u64 = 4;

/// A resumable count of one candidate's key ranges.
struct Dive {
    /// The ranges, the first `next` of them counted in full and `ranges[next]` resumed where
    /// the last count stopped.
    ranges: Vec<KeyRange>,
    next: usize,
    entries: u64,
}

impl Dive {
    fn new(ranges: Vec<KeyRange>) -> Dive {
        Dive {
            ranges,
            next: 0,
            entries: 0,
        }
    }

    fn exact(&self) -> bool {
        self.next == self.ranges.len()
    }

    fn count(&self) -> Count {
        Count {
            entries: self.entries,
            exact: self.exact(),
            estimate: None,
        }
    }

    /// Counts on until `target` entries are counted or every range is. At the target, the
    /// remaining ranges still get a zero-cap count, which tells an empty rest (exact) from one
    /// holding more.
    async fn extend_to(&mut self, reader: &dyn KvRead, target: u64) -> Result<()> {
        while let Some(range) = self.ranges.get(self.next) {
            let counted = reader
                .count_page(range, target.saturating_sub(self.entries))
                .await?;
            self.entries += counted.entries;
            match counted.resume {
                Some(rest) => {
                    self.ranges[self.next] = rest;
                    break;
                }
                None => self.next += 1,
            }
        }
        Ok(())
    }
}

/// Index dives for several candidates at once, counted side by side in growing rounds
/// (2 000 entries, then four times more each round, up to `cap`): once one candidate is counted
/// exactly, the others are counted only to [`RACE_RATIO`] times its size, so a sparse candidate
/// spares the counting of a dense one to the end.
pub(crate) async fn dives(
    reader: &dyn KvRead,
    candidates: &[Vec<KeyRange>],
    cap: u64,
) -> Result<Vec<Count>> {
    let mut dives: Vec<Dive> = candidates
        .iter()
        .map(|ranges| Dive::new(ranges.clone()))
        .collect();
    let mut round = DIVE_MIN.min(cap);
    loop {
        let smallest_exact = dives.iter().filter(|d| d.exact()).map(|d| d.entries).min();
        let limit = smallest_exact.map_or(cap, |smallest| {
            smallest.saturating_mul(RACE_RATIO).max(DIVE_MIN).min(cap)
        });
        let target = round.min(limit);
        let mut open = false;
        for dive in dives.iter_mut().filter(|d| !d.exact() && d.entries < limit) {
            open = true;
            dive.extend_to(reader, target).await?;
        }
        if !open {
            break;
        }
        round = round.saturating_mul(4);
    }
    Ok(dives.iter().map(Dive::count).collect())
}
