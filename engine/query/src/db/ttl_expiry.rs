//! The expiry rules of the tables with a TTL, for the store's compactions (see
//! `rowdex_store::expiry`): an entry of such a table (its row, a column family's cells, an
//! index entry, an older version) is expired once its write time, the `_written_at` cell every
//! one of them carries, is at or before the table's cutoff on the database's clock. So the
//! space of expired rows comes back as compaction meets them, index entries with their rows,
//! without a PURGE (which stays, for a store that does not compact: memory, etcd).
//!
//! The rules read the committed catalog at the start of each compaction; they hold the
//! database weakly (the store holds them, and the database holds the store).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Weak};

use rowdex_catalog::TableDef;
use rowdex_store::expiry::{ExpiryJudge, ExpiryRules};

use crate::db::DbState;

/// The rules: the database whose catalog and clock they read.
pub(crate) struct TtlExpiry {
    // Only read (the catalog's tables, the clock): a panic elsewhere leaves nothing here
    // half-changed for a compaction to see.
    db: AssertUnwindSafe<Weak<DbState>>,
}

impl TtlExpiry {
    pub(crate) fn new(db: &Arc<DbState>) -> TtlExpiry {
        TtlExpiry {
            db: AssertUnwindSafe(Arc::downgrade(db)),
        }
    }
}

impl ExpiryRules for TtlExpiry {
    fn judge(&self) -> Box<dyn ExpiryJudge> {
        let Some(db) = self.db.upgrade() else {
            return Box::new(TtlJudge::default());
        };
        let now = db.now_micros();
        let mut prefixes = Vec::new();
        for def in db.catalog.tables() {
            let Some(cutoff) = def.expiry_cutoff(now) else {
                continue;
            };
            let mut own = vec![def.prefix()];
            own.extend(def.family_numbers().skip(1).map(|f| def.family_prefix(f)));
            own.extend(def.indexes.iter().map(|index| index.prefix()));
            if def.keeps_history() {
                own.push(def.history_prefix());
            }
            prefixes.extend(
                own.into_iter()
                    .map(|prefix| (prefix, Arc::clone(&def), cutoff)),
            );
        }
        prefixes.sort_by(|a, b| a.0.cmp(&b.0));
        Box::new(TtlJudge { prefixes })
    }
}

/// The prefixes of the tables with a TTL, sorted, each with its table and cutoff.
#[derive(Default)]
struct TtlJudge {
    prefixes: Vec<(Vec<u8>, Arc<TableDef>, i64)>,
}

impl ExpiryJudge for TtlJudge {
    fn expired(&mut self, key: &[u8], value: &[u8]) -> bool {
        // The last prefix at or before the key is the only one that can hold it (a table's
        // prefixes do not nest).
        let at = self
            .prefixes
            .partition_point(|(prefix, _, _)| prefix.as_slice() <= key);
        let Some((prefix, def, cutoff)) = at.checked_sub(1).and_then(|i| self.prefixes.get(i))
        else {
            return false;
        };
        // A value that cannot be read is kept: a reader reports it.
        key.starts_with(prefix) && !def.is_value_live(value, Some(*cutoff)).unwrap_or(true)
    }
}
