//! Entries that expire (a table's TTL), dropped by the store as compaction meets them, so that
//! the space of expired rows comes back without a PURGE.
//!
//! The store knows keys and values, not tables: the layer above gives it [`ExpiryRules`],
//! which it asks at the start of each compaction for an [`ExpiryJudge`] (the rules as they
//! stand then: the tables with a TTL, the time now) and asks the judge about each entry the
//! compaction writes. An entry the judge calls expired is removed (a tombstone takes its
//! place, so no older version of its key comes back). Only a store that compacts honours
//! rules (fjall); the others keep every entry until it is deleted.
//!
//! On fjall, a reopen may bring back an expired entry that a compaction dropped: the journal
//! replays the writes newer than the newest entry the tables keep, and a dropped entry may
//! have been that newest one. What comes back is what was written (expired, so invisible to
//! readers), never an older version over a newer one, and the next compaction drops it again.
//!
//! Expiry is judged on the store's own schedule: an entry may stay past its expiry until a
//! compaction meets it (readers already treat it as gone), and a statement that began before
//! an entry expired may find it removed.

use std::panic::RefUnwindSafe;

/// What the store asks, at each compaction, which entries have expired.
pub trait ExpiryRules: Send + Sync + RefUnwindSafe {
    /// The judge of one compaction's entries (the rules and the time as they stand now).
    fn judge(&self) -> Box<dyn ExpiryJudge>;
}

/// Judges the entries of one compaction.
pub trait ExpiryJudge: Send {
    /// Whether the entry `key` = `value` has expired (and may be dropped).
    fn expired(&mut self, key: &[u8], value: &[u8]) -> bool;
}
