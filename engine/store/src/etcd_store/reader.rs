//! Reads: the latest state, or a snapshot's pinned revision.
//!
//! Keys live under the store's namespace (`name/`) in etcd; a reader adds it to what it asks
//! and strips it from what it returns. A transaction's snapshot also remembers the last-change
//! revision of every key it returned or found absent, which its commit compares against.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::client::Effect;
use super::pin::Pin;
use super::shared::Shared;
use super::wire::{
    Bytes, KeyValue, RangeRequest, RangeResponse, RequestOp, ResponseOp, TxnRequest, TxnResponse,
};
use crate::api::{KvRead, RANGES_PER_BATCH, page_turn};
use crate::error::{Result, StoreError};
use crate::range::{CountPage, Direction, KeyRange, ScanPage};

/// Range reads per read-only transaction of a multi-get or a batch of ranges (under etcd's
/// default of 128 operations per transaction).
const GETS_PER_TXN: usize = RANGES_PER_BATCH;

/// Last-change revisions of the keys a transaction's snapshot read (0: absent).
pub(super) type Observed = BTreeMap<Vec<u8>, i64>;

/// A reader of one store: of its latest state (no pin) or of a snapshot.
pub(super) struct Reader {
    shared: Arc<Shared>,
    pin: Option<Arc<Pin>>,
    observed: Option<Mutex<Observed>>,
}

impl Reader {
    pub(super) fn latest(shared: Arc<Shared>) -> Reader {
        Reader {
            shared,
            pin: None,
            observed: None,
        }
    }

    pub(super) fn snapshot(shared: Arc<Shared>, observe: bool) -> Reader {
        let pin = shared.pins.pin();
        Reader {
            shared,
            pin: Some(pin),
            observed: observe.then(|| Mutex::new(Observed::new())),
        }
    }

    /// The revision this snapshot reads, if it has read anything yet.
    pub(super) fn pinned_revision(&self) -> Option<i64> {
        self.pin.as_ref().and_then(|pin| pin.revision())
    }

    /// The keys read so far with their last-change revisions.
    pub(super) fn observed(&self) -> Observed {
        self.observed
            .as_ref()
            .map(|observed| {
                observed
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner())
                    .clone()
            })
            .unwrap_or_default()
    }

    fn observe(&self, pairs: impl IntoIterator<Item = (Vec<u8>, i64)>) {
        if let Some(observed) = &self.observed {
            let mut observed = observed.lock().unwrap_or_else(|poison| poison.into_inner());
            for (key, revision) in pairs {
                observed.entry(key).or_insert(revision);
            }
        }
    }

    /// The revision to ask for: the pinned one, or 0 (the latest) before the first read.
    fn revision_to_ask(&self) -> i64 {
        self.pin
            .as_ref()
            .and_then(|pin| pin.revision())
            .unwrap_or(0)
    }

    /// After an answer read at `asked` came back at `answered`: `None` if it stands, or the
    /// revision to read again at.
    fn read_again_at(&self, asked: i64, answered: i64) -> Option<i64> {
        self.shared.pins.saw(answered);
        let pin = self.pin.as_ref()?;
        if asked != 0 {
            return None;
        }
        let pinned = pin.settle(answered);
        (pinned != answered).then_some(pinned)
    }

    /// One read-only transaction of the range requests `ops` builds for a revision, at
    /// `asked` (0: the latest, then `asked` becomes the revision answered, so that later
    /// batches read where the first did). The answers, one per request.
    async fn read_txn(
        &self,
        asked: &mut i64,
        ops: impl Fn(i64) -> Vec<RequestOp>,
    ) -> Result<Vec<ResponseOp>> {
        page_turn().await;
        loop {
            let request = TxnRequest {
                success: ops(*asked),
                ..TxnRequest::default()
            };
            let wanted = request.success.len();
            let response: TxnResponse = self
                .shared
                .client
                .call("/v3/kv/txn", &request, Effect::Read)
                .await?;
            match self.read_again_at(*asked, response.header.revision) {
                Some(revision) => *asked = revision,
                None => {
                    if *asked == 0 && self.pin.is_none() {
                        *asked = response.header.revision;
                    }
                    if response.responses.len() != wanted {
                        return Err(StoreError::Remote {
                            code: 0,
                            message: format!(
                                "etcd answered {} of {wanted} reads",
                                response.responses.len()
                            ),
                        });
                    }
                    return Ok(response.responses);
                }
            }
        }
    }

    /// A range request at this reader's revision.
    async fn range(&self, mut request: RangeRequest) -> Result<RangeResponse> {
        page_turn().await;
        request.revision = self.revision_to_ask();
        loop {
            let asked = request.revision;
            // A read at a pinned revision needs no round with the leader.
            request.serializable = asked != 0;
            let response: RangeResponse = self
                .shared
                .client
                .call("/v3/kv/range", &request, Effect::Read)
                .await?;
            match self.read_again_at(asked, response.header.revision) {
                None => return Ok(response),
                Some(revision) => request.revision = revision,
            }
        }
    }

    /// `request` over the namespaced `range`.
    fn range_request(&self, range: &KeyRange) -> RangeRequest {
        RangeRequest {
            key: Bytes(self.shared.namespaced(&range.start)),
            range_end: Some(Bytes(self.shared.namespaced_end(range.end.as_deref()))),
            ..RangeRequest::default()
        }
    }

    /// Strips the namespace from returned pairs, noting their revisions.
    fn entries(&self, kvs: Vec<KeyValue>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut entries = Vec::with_capacity(kvs.len());
        let mut revisions = Vec::new();
        for kv in kvs {
            let key = self.shared.strip(kv.key.0)?;
            if self.observed.is_some() {
                revisions.push((key.clone(), kv.mod_revision));
            }
            entries.push((key, kv.value.0));
        }
        self.observe(revisions);
        Ok(entries)
    }
}

/// The rest of a range after a page that ended at `last` in `direction`.
fn resume_after(range: &KeyRange, last: &[u8], direction: Direction) -> KeyRange {
    match direction {
        Direction::Forward => {
            let mut next = last.to_vec();
            next.push(0);
            KeyRange::new(next, range.end.clone())
        }
        Direction::Reverse => KeyRange::new(range.start.clone(), Some(last.to_vec())),
    }
}

#[async_trait::async_trait]
impl KvRead for Reader {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let response = self
            .range(RangeRequest {
                key: Bytes(self.shared.namespaced(key)),
                ..RangeRequest::default()
            })
            .await?;
        let found = response.kvs.into_iter().next();
        self.observe([(key.to_vec(), found.as_ref().map_or(0, |kv| kv.mod_revision))]);
        Ok(found.map(|kv| kv.value.0))
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut values = Vec::with_capacity(keys.len());
        // The latest state has no pin: later chunks read where the first did.
        let mut asked = self.revision_to_ask();
        for chunk in keys.chunks(GETS_PER_TXN) {
            let responses = self
                .read_txn(&mut asked, |revision| {
                    chunk
                        .iter()
                        .map(|key| {
                            RequestOp::Range(RangeRequest {
                                key: Bytes(self.shared.namespaced(key)),
                                revision,
                                serializable: revision != 0,
                                ..RangeRequest::default()
                            })
                        })
                        .collect()
                })
                .await?;
            let mut revisions = Vec::new();
            for (key, answer) in chunk.iter().zip(responses) {
                let found = answer
                    .response_range
                    .and_then(|range| range.kvs.into_iter().next());
                revisions.push((key.clone(), found.as_ref().map_or(0, |kv| kv.mod_revision)));
                values.push(found.map(|kv| kv.value.0));
            }
            self.observe(revisions);
        }
        Ok(values)
    }

    /// One read-only transaction per [`GETS_PER_TXN`] ranges: a lookup join's probes cost a
    /// round trip per batch, not per probe.
    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        if limit == 0 {
            let mut pages = Vec::with_capacity(ranges.len());
            for range in ranges {
                pages.push(self.scan_page(range, direction, 0).await?);
            }
            return Ok(pages);
        }
        let asked_for: Vec<&KeyRange> = ranges.iter().filter(|r| !r.is_empty()).collect();
        let mut answers: Vec<ScanPage> = Vec::with_capacity(asked_for.len());
        let mut asked = self.revision_to_ask();
        for chunk in asked_for.chunks(GETS_PER_TXN) {
            let responses = self
                .read_txn(&mut asked, |revision| {
                    chunk
                        .iter()
                        .map(|range| {
                            let mut request = self.range_request(range);
                            request.revision = revision;
                            request.serializable = revision != 0;
                            request.limit = i64::try_from(limit).unwrap_or(i64::MAX);
                            if direction == Direction::Reverse {
                                request.sort_order = Some("DESCEND");
                                request.sort_target = Some("KEY");
                            }
                            RequestOp::Range(request)
                        })
                        .collect()
                })
                .await?;
            for (range, answer) in chunk.iter().zip(responses) {
                let answer = answer.response_range.unwrap_or_default();
                let more = answer.more;
                let entries = self.entries(answer.kvs)?;
                let resume = match entries.last() {
                    Some((last, _)) if more => Some(resume_after(range, last, direction)),
                    _ => None,
                };
                answers.push(ScanPage { entries, resume });
            }
        }
        // Empty ranges read nothing; the others' pages in the order asked.
        let mut answers = answers.into_iter();
        Ok(ranges
            .iter()
            .map(|range| match range.is_empty() {
                true => ScanPage::default(),
                false => answers.next().unwrap_or_default(),
            })
            .collect())
    }

    fn batches_ranges(&self) -> bool {
        true
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        if range.is_empty() {
            return Ok(ScanPage::default());
        }
        let mut request = self.range_request(range);
        // etcd reads a limit of 0 as "no limit": an empty page asks for one key only.
        request.limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
        request.keys_only = limit == 0;
        if direction == Direction::Reverse {
            request.sort_order = Some("DESCEND");
            request.sort_target = Some("KEY");
        }
        let response = self.range(request).await?;
        if limit == 0 {
            return Ok(ScanPage {
                entries: Vec::new(),
                resume: (!response.kvs.is_empty()).then(|| range.clone()),
            });
        }
        let more = response.more;
        let entries = self.entries(response.kvs)?;
        let resume = match entries.last() {
            Some((last, _)) if more => Some(resume_after(range, last, direction)),
            _ => None,
        };
        Ok(ScanPage { entries, resume })
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        if range.is_empty() {
            return Ok(CountPage {
                entries: 0,
                resume: None,
            });
        }
        let mut request = self.range_request(range);
        request.count_only = true;
        let counted = self.range(request).await?;
        let total = u64::try_from(counted.count).unwrap_or(0);
        if total <= cap {
            return Ok(CountPage {
                entries: total,
                resume: None,
            });
        }
        // More than the cap: find where the count stopped (keys only, no values).
        let mut request = self.range_request(range);
        request.keys_only = true;
        request.limit = i64::try_from(cap.max(1)).unwrap_or(i64::MAX);
        let page = self.range(request).await?;
        let last = page
            .kvs
            .last()
            .map(|kv| self.shared.strip(kv.key.0.clone()));
        let resume = match (cap, last) {
            (0, _) | (_, None) => range.clone(),
            (_, Some(last)) => resume_after(range, &last?, Direction::Forward),
        };
        Ok(CountPage {
            entries: cap,
            resume: Some(resume),
        })
    }
}
