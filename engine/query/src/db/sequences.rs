//! Values from sequences, for SERIAL and identity columns and `nextval`: each database keeps
//! the range it last took from a sequence and hands values out of it, taking a new range (one
//! catalog transaction) only when it runs out. Ranges are never given back, so a value is never
//! handed out twice, by this process or any other on the same store; values a process took and
//! did not use before it ended are skipped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rowdex_catalog::CatalogError;
use rowdex_store::StoreError;

use rowdex_catalog::Catalog;

use crate::error::Result;

/// Tries at taking a range before a conflict with other allocations is reported.
const ALLOCATION_ATTEMPTS: usize = 8;

/// The value a session last took from each sequence (`currval`).
pub(crate) type LastValues = Arc<Mutex<HashMap<String, i64>>>;

tokio::task_local! {
    /// The running statement's session's [`LastValues`]: every value handed out is recorded
    /// there, whether a `nextval` call or a SERIAL column took it.
    pub(crate) static LAST_VALUES: LastValues;
}

/// Values taken from a sequence at once, at least.
const RANGE: u32 = 32;

/// The values this process took from each sequence and has not handed out yet.
#[derive(Debug, Default)]
pub(crate) struct SequenceRanges {
    ranges: Mutex<HashMap<String, Range>>,
}

#[derive(Debug, Clone, Copy)]
struct Range {
    next: i64,
    left: u32,
    increment: i64,
}

impl SequenceRanges {
    /// Forgets what was taken from `name` (it was dropped).
    pub(crate) fn forget(&self, name: &str) {
        self.lock().remove(name);
    }

    /// Forgets every range (sequences of a dropped table).
    pub(crate) fn forget_all(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Range>> {
        self.ranges.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Up to `count` values from the range kept for `name`.
    fn take(&self, name: &str, count: usize, out: &mut Vec<i64>) {
        let mut ranges = self.lock();
        let Some(range) = ranges.get_mut(name) else {
            return;
        };
        while out.len() < count && range.left > 0 {
            out.push(range.next);
            range.next = range.next.saturating_add(range.increment);
            range.left -= 1;
        }
    }
}

impl SequenceRanges {
    /// `count` fresh values of sequence `name` (kept in `catalog`), in the order handed out.
    pub(crate) async fn next_values(
        &self,
        catalog: &Catalog,
        name: &str,
        count: usize,
    ) -> Result<Vec<i64>> {
        next_values(self, catalog, name, count).await
    }
}

/// Remembers the last value handed out as the session's `currval`.
pub(crate) fn record_last(name: &str, values: &[i64]) {
    if let Some(&last) = values.last() {
        let _ = LAST_VALUES.try_with(|known| {
            known
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(name.to_string(), last)
        });
    }
}

async fn next_values(
    ranges: &SequenceRanges,
    catalog: &Catalog,
    name: &str,
    count: usize,
) -> Result<Vec<i64>> {
    let mut values = Vec::with_capacity(count);
    let mut attempt = 1;
    while values.len() < count {
        ranges.take(name, count, &mut values);
        if values.len() == count {
            break;
        }
        let wanted = u32::try_from(count - values.len())
            .unwrap_or(u32::MAX)
            .max(RANGE);
        match catalog.allocate_sequence(name, wanted).await {
            Ok(taken) => {
                let range = Range {
                    next: taken.next,
                    left: wanted,
                    increment: taken.increment,
                };
                ranges.lock().insert(name.to_string(), range);
            }
            Err(CatalogError::Store(StoreError::Conflict)) if attempt < ALLOCATION_ATTEMPTS => {
                attempt += 1;
            }
            Err(error) => return Err(error.into()),
        }
    }
    record_last(name, &values);
    Ok(values)
}
