//! The physical limit: the same key operations written by hand against the store, without SQL.
//! Keys are a one-byte prefix naming the table or index, then fixed-width big-endian fields;
//! index entries are `prefix ‖ value ‖ id` with empty values.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rowdex_store::{Direction, KeyRange, KvStore, WriteBatch};

use crate::data::{BenchResult, Data, pad};
use crate::measure::Engine;

/// `orders` rows: `o ‖ id` → `user ‖ country length ‖ country ‖ amount ‖ note`.
const ORDER: u8 = b'o';
/// `orders (user_id)` entries.
const ORDER_BY_USER: u8 = b'u';
/// `orders (country)` entries (not `c`: a `pairs.c` entry of value 99 would share its prefix).
const ORDER_BY_COUNTRY: u8 = b'k';
/// `pairs` rows: `p ‖ id` → `a ‖ b ‖ c ‖ pad`.
const PAIR: u8 = b'p';
const PAIR_BY_A: u8 = b'a';
const PAIR_BY_B: u8 = b'b';
const PAIR_BY_C: u8 = b'c';
/// `actions` rows: `t ‖ uid ‖ !ts` (newest first) → `kind`.
const ACTION: u8 = b't';
/// The prefixes of table rows, as opposed to index entries.
const TABLE_PREFIXES: [u8; 3] = [ORDER, PAIR, ACTION];

/// Rows per write batch of the load.
const BATCH_ROWS: u64 = 10_000;
/// Entries per page of a long scan.
const SCAN_PAGE: usize = 1024;

pub struct Raw {
    store: Arc<dyn KvStore>,
    data: Data,
}

fn key(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// The key of an action: newest first within a user.
fn action_key(uid: u64, ts: u64) -> Vec<u8> {
    key(&[
        &[ACTION],
        &uid.to_be_bytes(),
        &(u64::MAX - ts).to_be_bytes(),
    ])
}

/// The country and amount of an encoded `orders` row.
fn order_country_amount(value: &[u8]) -> BenchResult<(&[u8], f64)> {
    let country_len = usize::from(*value.get(8).ok_or("order row too short")?);
    let country = value.get(9..9 + country_len).ok_or("order row too short")?;
    let amount = value
        .get(9 + country_len..17 + country_len)
        .ok_or("order row too short")?;
    Ok((country, f64::from_be_bytes(amount.try_into()?)))
}

impl Raw {
    pub fn new(store: Arc<dyn KvStore>, data: Data) -> Raw {
        Raw { store, data }
    }

    /// The first `limit` entries of `range`.
    async fn scan(
        &self,
        range: KeyRange,
        direction: Direction,
        limit: usize,
    ) -> BenchResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let page = self.store.scan_page(&range, direction, limit).await?;
        Ok(page.entries)
    }

    /// Calls `visit` on every entry of `range`, page by page.
    async fn scan_all(
        &self,
        range: KeyRange,
        mut visit: impl FnMut(&[u8], &[u8]) -> BenchResult<()>,
    ) -> BenchResult<()> {
        let mut next = Some(range);
        while let Some(range) = next {
            let page = self
                .store
                .scan_page(&range, Direction::Forward, SCAN_PAGE)
                .await?;
            for (key, value) in &page.entries {
                visit(key, value)?;
            }
            next = page.resume;
        }
        Ok(())
    }

    /// The optimum the intersection cases set: read the `b` index range in full and look up
    /// the rows that also match `keep` (which the raw layout cannot know without reading: it is
    /// taken from the data generator, for free).
    async fn intersect_with_b(&self, b: u64, keep: impl Fn(u64) -> bool) -> BenchResult<usize> {
        let prefix = [PAIR_BY_B, b as u8];
        let mut row_keys = Vec::new();
        self.scan_all(KeyRange::prefix(&prefix), |entry, _| {
            let id_bytes = entry.get(prefix.len()..).ok_or("short index entry")?;
            if keep(u64::from_be_bytes(id_bytes.try_into()?)) {
                row_keys.push(key(&[&[PAIR], id_bytes]));
            }
            Ok(())
        })
        .await?;
        let rows = self.store.multi_get(&row_keys).await?;
        Ok(rows.iter().flatten().count())
    }

    /// The page of `uid` whose newest action is older than `before_ts`.
    async fn page_before(&self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        let prefix = key(&[&[ACTION], &uid.to_be_bytes()]);
        let Some(newest) = before_ts.checked_sub(1) else {
            return Ok(0);
        };
        let range = KeyRange {
            start: action_key(uid, newest),
            end: KeyRange::prefix(&prefix).end,
        };
        Ok(self.scan(range, Direction::Forward, 10).await?.len())
    }

    fn order_entries(&self, batch: &mut WriteBatch, id: u64) {
        let order = self.data.order(id);
        let id_bytes = id.to_be_bytes();
        let value = key(&[
            &order.user.to_be_bytes(),
            &[order.country.len() as u8],
            order.country.as_bytes(),
            &order.amount.to_be_bytes(),
            order.note.as_bytes(),
        ]);
        batch.put(key(&[&[ORDER], &id_bytes]), value);
        let user = order.user.to_be_bytes();
        batch.put(key(&[&[ORDER_BY_USER], &user, &id_bytes]), Vec::new());
        let country = order.country.as_bytes();
        batch.put(key(&[&[ORDER_BY_COUNTRY], country, &id_bytes]), Vec::new());
    }

    fn pair_and_action_entries(&self, batch: &mut WriteBatch, id: u64) {
        let pair = self.data.pair(id);
        let id_bytes = id.to_be_bytes();
        let value = key(&[
            &pair.a.to_be_bytes(),
            &pair.b.to_be_bytes(),
            &pair.c.to_be_bytes(),
            pad(id).as_bytes(),
        ]);
        batch.put(key(&[&[PAIR], &id_bytes]), value);
        batch.put(key(&[&[PAIR_BY_A, pair.a as u8], &id_bytes]), Vec::new());
        batch.put(key(&[&[PAIR_BY_B, pair.b as u8], &id_bytes]), Vec::new());
        batch.put(key(&[&[PAIR_BY_C, pair.c as u8], &id_bytes]), Vec::new());
        let action = self.data.action(id);
        batch.put(
            action_key(action.uid, action.ts),
            action.kind.to_be_bytes().to_vec(),
        );
    }

    /// Writes the entries `entries` makes for every row number, in batches.
    async fn load_rows(&self, entries: impl Fn(&Raw, &mut WriteBatch, u64)) -> BenchResult<()> {
        let mut first = 0;
        while first < self.data.rows {
            let mut batch = WriteBatch::new();
            for id in first..(first + BATCH_ROWS).min(self.data.rows) {
                entries(self, &mut batch, id);
            }
            self.store.write(batch).await?;
            first += BATCH_ROWS;
        }
        Ok(())
    }
}

impl Engine for Raw {
    async fn load_orders(&mut self, _csv: &Path) -> BenchResult<()> {
        self.load_rows(Raw::order_entries).await
    }

    async fn load_rest(&mut self) -> BenchResult<()> {
        self.load_rows(Raw::pair_and_action_entries).await
    }

    async fn settle(&mut self) -> BenchResult<()> {
        Ok(self.store.compact().await?)
    }

    async fn point_get(&mut self, id: u64) -> BenchResult<usize> {
        let value = self.store.get(&key(&[&[ORDER], &id.to_be_bytes()])).await?;
        Ok(usize::from(value.is_some()))
    }

    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize> {
        self.point_get(id).await
    }

    async fn point_get_adhoc_nocache(&mut self, id: u64) -> BenchResult<usize> {
        self.point_get(id).await
    }

    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize> {
        let prefix = key(&[&[ORDER_BY_USER], &user.to_be_bytes()]);
        let entries = self
            .scan(KeyRange::prefix(&prefix), Direction::Forward, 64)
            .await?;
        let row_keys: Vec<Vec<u8>> = entries
            .iter()
            .map(|(entry, _)| key(&[&[ORDER], &entry[prefix.len()..]]))
            .collect();
        let rows = self.store.multi_get(&row_keys).await?;
        Ok(rows.iter().flatten().count())
    }

    async fn intersect_a_b(&mut self, a: u64, b: u64) -> BenchResult<usize> {
        let data = self.data;
        self.intersect_with_b(b, |id| data.pair(id).a == a).await
    }

    async fn intersect_b_c(&mut self, b: u64, c: u64) -> BenchResult<usize> {
        let data = self.data;
        self.intersect_with_b(b, |id| data.pair(id).c == c).await
    }

    async fn page(&mut self, uid: u64) -> BenchResult<usize> {
        let prefix = key(&[&[ACTION], &uid.to_be_bytes()]);
        let entries = self
            .scan(KeyRange::prefix(&prefix), Direction::Forward, 30)
            .await?;
        Ok(entries.len().saturating_sub(20))
    }

    async fn page_keyset(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        self.page_before(uid, before_ts).await
    }

    /// Both keyset forms are the same key range here.
    async fn page_keyset_rowvalue(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        self.page_before(uid, before_ts).await
    }

    /// Count and sum per country by hand over a scan of every `orders` row.
    async fn aggregate(&mut self) -> BenchResult<usize> {
        let mut groups: HashMap<Vec<u8>, (u64, f64)> = HashMap::new();
        self.scan_all(KeyRange::prefix(&[ORDER]), |_, value| {
            let (country, amount) = order_country_amount(value)?;
            match groups.get_mut(country) {
                Some((count, sum)) => {
                    *count += 1;
                    *sum += amount;
                }
                None => {
                    groups.insert(country.to_vec(), (1, amount));
                }
            }
            Ok(())
        })
        .await?;
        Ok(groups.len())
    }

    /// Reads every entry, index entries included; counts the table rows.
    async fn warm(&mut self) -> BenchResult<u64> {
        let mut rows = 0;
        self.scan_all(KeyRange::prefix(b""), |entry, _| {
            if entry.first().is_some_and(|p| TABLE_PREFIXES.contains(p)) {
                rows += 1;
            }
            Ok(())
        })
        .await?;
        Ok(rows)
    }
}
