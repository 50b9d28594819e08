//! ANALYZE: gathering a table's statistics (`rowdex_catalog::TableStatistics`) by reading its
//! primary key and every ready index once, in key order, from one snapshot; and storing them,
//! so they survive restarts.

use std::sync::Arc;

use futures::StreamExt;
use rowdex_catalog::{IndexDef, KeyGatherer, KeyStatistics, TableDef, TableStatistics, keyspace};
use rowdex_store::{Direction, KeyRange, KvRead, KvStore, scan_stream};

use crate::db::DbState;
use crate::error::Result;

/// Entries read per page while gathering.
const GATHER_PAGE: usize = 1024;

/// Gathers `def`'s statistics and stores them. With `only`, only that index is read; the
/// others keep what was gathered before (CREATE INDEX gathers its new index this way).
pub(crate) async fn analyze(
    db: &DbState,
    def: &TableDef,
    only: Option<&IndexDef>,
) -> Result<TableStatistics> {
    let store: &dyn KvStore = db.store.as_ref();
    let rows = db.stats.rows(store, def).await?;
    let snapshot = store.snapshot();
    let mut gathered = match (only, db.stats.gathered(def.id)) {
        (Some(_), Some(before)) => (*before).clone(),
        _ => TableStatistics::default(),
    };
    if only.is_none() || gathered.primary.entries == 0 {
        gathered.primary = gather_primary(snapshot.clone(), def).await?;
    }
    let ready: Vec<&IndexDef> = def.indexes.iter().filter(|i| i.is_ready()).collect();
    gathered
        .indexes
        .retain(|id, _| ready.iter().any(|i| i.id == *id));
    for index in ready {
        if only.is_none_or(|o| o.id == index.id) {
            let stats = gather_index(snapshot.clone(), index).await?;
            gathered.indexes.insert(index.id, stats);
        }
    }
    gathered.rows = rows;
    gathered.gathered_at_micros = db.now_micros();
    let mut batch = rowdex_store::WriteBatch::new();
    batch.put(keyspace::statistics_key(def.id), gathered.encode()?);
    store.write(batch).await?;
    db.stats.set_gathered(def.id, gathered.clone());
    Ok(gathered)
}

async fn gather_primary(reader: Arc<dyn KvRead>, def: &TableDef) -> Result<KeyStatistics> {
    let orders = def.key_orders();
    let ranges = def
        .scan_prefixes()
        .iter()
        .map(|prefix| KeyRange::prefix(prefix))
        .collect();
    gather(reader, ranges, def.key_header_len(), orders).await
}

async fn gather_index(reader: Arc<dyn KvRead>, index: &IndexDef) -> Result<KeyStatistics> {
    let orders = index.columns.iter().map(|c| c.order()).collect();
    let ranges = index
        .buckets()
        .into_iter()
        .map(|bucket| KeyRange::prefix(&index.bucket_prefix(bucket)))
        .collect();
    gather(reader, ranges, index.header_len(), orders).await
}

/// Feeds every key of `ranges`, without its `header` bytes, to a gatherer over `orders`.
async fn gather(
    reader: Arc<dyn KvRead>,
    ranges: Vec<KeyRange>,
    header: usize,
    orders: Vec<rowdex_codec::SortOrder>,
) -> Result<KeyStatistics> {
    let mut gatherer = KeyGatherer::new(orders);
    for range in ranges {
        let mut entries = scan_stream(reader.clone(), range, Direction::Forward, GATHER_PAGE);
        while let Some(entry) = entries.next().await {
            let (key, _) = entry?;
            gatherer.add(key.get(header..).unwrap_or_default())?;
        }
    }
    Ok(gatherer.finish())
}
