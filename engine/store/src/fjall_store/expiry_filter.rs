//! fjall's compaction filter over the store's [`ExpiryRules`]: every keyspace of the database
//! gets it, and it removes what the rules' judge calls expired (see `crate::expiry`).

use std::sync::{Arc, PoisonError, RwLock};

use fjall::compaction::filter::{
    CompactionFilter, CompactionFilterResult, Context, Factory, ItemAccessor, Verdict,
};

use crate::expiry::{ExpiryJudge, ExpiryRules};

/// The rules the store was given (none until the layer above sets them).
pub(super) type SharedRules = Arc<RwLock<Option<Arc<dyn ExpiryRules>>>>;

/// Makes a filter per compaction from the rules of the moment.
pub(super) struct ExpiryFactory {
    pub(super) rules: SharedRules,
}

impl Factory for ExpiryFactory {
    fn name(&self) -> &str {
        "rowdex-expiry"
    }

    fn make_filter(&self, _ctx: &Context) -> Box<dyn CompactionFilter> {
        let rules = self
            .rules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Box::new(ExpiryFilter {
            judge: rules.map(|rules| rules.judge()),
        })
    }
}

struct ExpiryFilter {
    judge: Option<Box<dyn ExpiryJudge>>,
}

impl CompactionFilter for ExpiryFilter {
    fn filter_item(&mut self, item: ItemAccessor<'_>, _ctx: &Context) -> CompactionFilterResult {
        let Some(judge) = self.judge.as_mut() else {
            return Ok(Verdict::Keep);
        };
        let value = item.value()?;
        Ok(if judge.expired(item.key(), &value) {
            Verdict::Remove
        } else {
            Verdict::Keep
        })
    }
}
