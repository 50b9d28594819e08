//! Behaviour specific to the on-disk store (not part of the shared suite): persistence across
//! reopen, directory locking, and the journal a clean close leaves behind.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rowdex_store::expiry::{ExpiryJudge, ExpiryRules};
use rowdex_store::{
    Direction, Durability, FjallStore, INGEST_MIN_MUTATIONS, JOURNAL_TRIM_MIN_BYTES, KeyRange,
    KvRead, KvStore, Result, StoreError, WriteBatch,
};

async fn write_sample(store: &FjallStore) -> Result<()> {
    let mut batch = WriteBatch::new();
    batch.put(b"a".to_vec(), b"1".to_vec());
    batch.put(b"b".to_vec(), b"2".to_vec());
    batch.put(b"gone".to_vec(), b"x".to_vec());
    store.write(batch).await?;
    let mut tx = store.begin().await?;
    tx.put(b"c".to_vec(), b"3".to_vec());
    tx.delete(b"gone".to_vec());
    tx.commit().await
}

async fn check_sample(store: &FjallStore) -> Result<()> {
    assert_eq!(store.get(b"a").await?, Some(b"1".to_vec()));
    assert_eq!(store.get(b"gone").await?, None);
    let page = store
        .scan_page(&KeyRange::all(), Direction::Reverse, 10)
        .await?;
    let keys: Vec<&[u8]> = page.entries.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, [&b"c"[..], b"b", b"a"]);
    assert_eq!(page.resume, None);
    Ok(())
}

#[tokio::test]
async fn reopen_reads_back_every_durability() -> Result<()> {
    for durability in [Durability::SyncWal, Durability::FsyncWal] {
        let dir = tempfile::tempdir().expect("create temp dir");
        {
            let store = FjallStore::open(dir.path(), durability)?;
            write_sample(&store).await?;
        }
        let store = FjallStore::open(dir.path(), durability)?;
        check_sample(&store).await?;
    }
    Ok(())
}

#[tokio::test]
async fn reopen_after_flush() -> Result<()> {
    let dir = tempfile::tempdir().expect("create temp dir");
    {
        let store = FjallStore::open(dir.path(), Durability::default())?;
        write_sample(&store).await?;
        store.flush().await?;
        // Keep a snapshot alive until the very end; closing must still work.
        let snapshot = store.snapshot();
        assert_eq!(snapshot.get(b"c").await?, Some(b"3".to_vec()));
    }
    let store = FjallStore::open(dir.path(), Durability::default())?;
    check_sample(&store).await
}

#[tokio::test]
async fn directory_is_locked_while_open() -> Result<()> {
    let dir = tempfile::tempdir().expect("create temp dir");
    let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
    let second = FjallStore::open(dir.path(), Durability::SyncWal);
    assert!(matches!(second, Err(StoreError::Backend { .. })));
    drop(store);
    FjallStore::open(dir.path(), Durability::SyncWal).map(drop)
}

fn numbered(i: usize) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// A batch large enough to be ingested as tables must behave exactly like a journaled one:
/// it replaces older values, its deletes hide older keys, it is invisible to snapshots taken
/// before it, later small writes win over it, and all of it is back after reopening.
#[tokio::test]
async fn ingested_batches_behave_like_journaled_ones() -> Result<()> {
    let dir = tempfile::tempdir().expect("create temp dir");
    let total = INGEST_MIN_MUTATIONS + 100;
    {
        let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
        let mut small = WriteBatch::new();
        for i in [0, 1, 2, total - 1] {
            small.put(numbered(i), b"old".to_vec());
        }
        store.write(small).await?;
        let before = store.snapshot();

        // Built out of order, with a key written twice: the later write must win.
        let mut large = WriteBatch::new();
        large.put(numbered(5), b"first".to_vec());
        for i in (2..total).rev() {
            large.put(numbered(i), format!("new{i}").into_bytes());
        }
        large.delete(numbered(1));
        store.write(large).await?;

        assert_eq!(before.get(&numbered(1)).await?, Some(b"old".to_vec()));
        assert_eq!(before.get(&numbered(7)).await?, None);

        let mut tx = store.begin().await?;
        tx.put(numbered(3), b"after".to_vec());
        tx.commit().await?;
    }
    let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
    assert_eq!(store.get(&numbered(0)).await?, Some(b"old".to_vec()));
    assert_eq!(store.get(&numbered(1)).await?, None);
    assert_eq!(store.get(&numbered(2)).await?, Some(b"new2".to_vec()));
    assert_eq!(store.get(&numbered(3)).await?, Some(b"after".to_vec()));
    assert_eq!(store.get(&numbered(5)).await?, Some(b"new5".to_vec()));
    let last = total - 1;
    assert_eq!(
        store.get(&numbered(last)).await?,
        Some(format!("new{last}").into_bytes())
    );
    let counted = store.count_page(&KeyRange::all(), u64::MAX).await?;
    assert_eq!(counted.entries, total as u64 - 1);
    Ok(())
}

/// Bytes the file system holds for the directory's journals (`*.jnl`): what an open replays.
/// fjall sizes a new journal to 64 MiB without writing it, so the length would overstate it.
fn journal_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let entries = std::fs::read_dir(dir).expect("read the database directory");
    entries
        .map(|entry| entry.expect("read a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jnl"))
        .map(|path| std::fs::metadata(&path).expect("stat a journal").blocks() * 512)
        .sum()
}

/// Journaled writes (small transactions) of about `bytes`, keys `j00000000`...
async fn journal_writes(store: &FjallStore, bytes: usize) -> Result<usize> {
    let per_batch = 100;
    let value = vec![7u8; 200];
    let batches = bytes / (per_batch * (value.len() + 9));
    for b in 0..batches {
        let mut batch = WriteBatch::new();
        for i in 0..per_batch {
            batch.put(
                format!("j{:08}", b * per_batch + i).into_bytes(),
                value.clone(),
            );
        }
        store.write(batch).await?;
    }
    Ok(batches * per_batch)
}

/// A clean close (dropping the store) must leave no long journal for the next open to replay,
/// and lose nothing; the same holds after an explicit checkpoint on an open store, which
/// stays usable. Without the trim, the journal would keep every byte written.
#[tokio::test]
async fn a_clean_close_leaves_a_short_journal() -> Result<()> {
    let dir = tempfile::tempdir().expect("create temp dir");
    let written = {
        let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
        let written = journal_writes(&store, 3 * 1024 * 1024).await?;
        assert!(
            journal_bytes(dir.path()) > 2 * JOURNAL_TRIM_MIN_BYTES,
            "the writes are journaled"
        );
        written
    };
    assert!(
        journal_bytes(dir.path()) <= JOURNAL_TRIM_MIN_BYTES,
        "a clean close left {} journal bytes",
        journal_bytes(dir.path())
    );
    let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
    let counted = store.count_page(&KeyRange::all(), u64::MAX).await?;
    assert_eq!(counted.entries, written as u64);
    // Writes after the reopen must win over the flushed ones (sequence numbers carried on).
    let mut batch = WriteBatch::new();
    batch.put(b"j00000000".to_vec(), b"new".to_vec());
    store.write(batch).await?;
    assert_eq!(store.get(b"j00000000").await?, Some(b"new".to_vec()));
    journal_writes(&store, 2 * 1024 * 1024).await?;
    store.checkpoint().await?;
    assert!(journal_bytes(dir.path()) <= JOURNAL_TRIM_MIN_BYTES);
    let mut batch = WriteBatch::new();
    batch.put(b"j00000001".to_vec(), b"after".to_vec());
    store.write(batch).await?;
    drop(store);
    let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
    assert_eq!(store.get(b"j00000000").await?, Some(vec![7u8; 200]));
    assert_eq!(store.get(b"j00000001").await?, Some(b"after".to_vec()));
    let counted = store.count_page(&KeyRange::all(), u64::MAX).await?;
    assert_eq!(counted.entries, written as u64);
    Ok(())
}

/// Journaled writes never take the memtable to fjall's own sealing size (64 MiB): the store
/// seals it at 48 MiB on the writing thread. When fjall had to ask its one worker instead (a
/// message per write while the worker compacted), a 10M-row CREATE INDEX filled the worker's
/// queue and deadlocked it. Without the store's sealing, the memtable passes 56 MiB here.
#[tokio::test]
async fn writes_seal_the_memtable_before_fjall_must_ask() -> Result<()> {
    const MIB: usize = 1024 * 1024;
    let dir = tempfile::tempdir().expect("create temp dir");
    let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
    let value = vec![5u8; 16 * 1024];
    let mut written = 0u64;
    let mut largest = 0;
    for batch_number in 0..80u32 {
        let mut batch = WriteBatch::new();
        for i in 0..64u32 {
            let key = format!("m{batch_number:04}{i:04}").into_bytes();
            batch.put(key, value.clone());
            written += 1;
        }
        store.write(batch).await?;
        largest = largest.max(store.memtable_bytes());
    }
    assert!(
        largest < 56 * MIB as u64,
        "the memtable reached {largest} bytes"
    );
    assert!(largest > 40 * MIB as u64, "the test wrote too little");
    drop(store);
    let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
    let counted = store.count_page(&KeyRange::all(), u64::MAX).await?;
    assert_eq!(counted.entries, written);
    Ok(())
}

/// A stream of small writes to the same keys seals the memtable once it holds thousands of dead
/// versions (past a floor of a few MiB), where a stream of new keys fills it to 48 MiB: a
/// range read steps over every version the memtable holds, so hot rows' versions must not pile
/// up in it for a minute. Writes the same volume both ways and compares the largest memtable;
/// then again in a store with a prefix placed elsewhere (a TTL table, a family with storage
/// attributes), whose commits take the routed path.
#[tokio::test]
async fn dead_versions_seal_the_memtable_early() -> Result<()> {
    for placed in [false, true] {
        dead_versions_seal_early(placed).await?;
    }
    Ok(())
}

async fn dead_versions_seal_early(placed: bool) -> Result<()> {
    const MIB: u64 = 1024 * 1024;
    let value = vec![3u8; 600];
    let mut largest = [0u64; 2];
    for (run, overwrite) in [true, false].into_iter().enumerate() {
        let dir = tempfile::tempdir().expect("create temp dir");
        let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
        if placed {
            let options = rowdex_store::StorageOptions {
                compression: Some(rowdex_store::Compression::Lz4),
                ..rowdex_store::StorageOptions::default()
            };
            assert!(store.place(b"z/", &options).await?);
        }
        for batch_number in 0..600u32 {
            let mut batch = WriteBatch::new();
            for i in 0..64u32 {
                let key = if overwrite {
                    format!("h{i:04}")
                } else {
                    format!("n{batch_number:05}{i:04}")
                };
                batch.put(key.into_bytes(), value.clone());
            }
            store.write(batch).await?;
            largest[run] = largest[run].max(store.memtable_bytes());
        }
        let counted = store.count_page(&KeyRange::all(), u64::MAX).await?;
        assert_eq!(counted.entries, if overwrite { 64 } else { 600 * 64 });
    }
    let [overwrites, new_keys] = largest;
    assert!(
        overwrites < 8 * MIB,
        "overwrites grew the memtable to {overwrites} bytes (a prefix placed: {placed})"
    );
    assert!(
        new_keys > 16 * MIB,
        "new keys sealed the memtable at {new_keys} bytes"
    );
    Ok(())
}

#[test]
fn buffered_is_the_default() {
    assert_eq!(Durability::default(), Durability::SyncWal);
}

/// The store must be usable as the shared trait object the rest of rowdex holds.
#[test]
fn stores_are_trait_objects() {
    fn assert_store<T: KvStore + 'static>() {}
    fn assert_read<T: KvRead + 'static>() {}
    assert_store::<FjallStore>();
    assert_read::<FjallStore>();
}

#[tokio::test]
async fn compaction_merges_ingested_runs_and_keeps_every_entry() -> Result<()> {
    let dir = tempfile::tempdir().expect("create temp dir");
    let store = FjallStore::open(dir.path(), Durability::SyncWal)?;
    // Three ingested batches whose keys interleave: three overlapping tables, each of which a
    // read of any range must consult.
    let per_batch = INGEST_MIN_MUTATIONS as u32;
    for batch_number in 0..3u32 {
        let mut batch = WriteBatch::new();
        for i in 0..per_batch {
            let key = (i * 3 + batch_number).to_be_bytes().to_vec();
            batch.put(key, batch_number.to_be_bytes().to_vec());
        }
        store.write(batch).await?;
    }
    // (fjall's worker may have merged some of them already.)
    assert!(store.table_count() >= 1);
    store.compact().await?;
    assert_eq!(store.table_count(), 1, "a few MB fit one table");
    let total = u64::from(per_batch) * 3;
    let counted = store.count_page(&KeyRange::all(), u64::MAX).await?;
    assert_eq!(counted.entries, total);
    for key in [0u32, 1, 2, 3 * per_batch - 1] {
        let value = store.get(&key.to_be_bytes()).await?;
        assert_eq!(value, Some((key % 3).to_be_bytes().to_vec()), "key {key}");
    }
    Ok(())
}

/// The bytes `prefix`'s keys take, as the store estimates them.
fn size_of(store: &FjallStore, prefix: &[u8]) -> u64 {
    store
        .approximate_size(&KeyRange::prefix(prefix))
        .expect("size")
        .expect("fjall can tell")
}

/// A key range's size follows what it holds, in the memtable, in a bulk-loaded table holding
/// two ranges at once (cut by bytes, not by entries), after compaction, and after a delete
/// that compaction carried out.
#[tokio::test]
async fn range_sizes_follow_the_data_in_memory_and_on_disk() -> Result<()> {
    let dir = tempfile::tempdir().expect("create temp dir");
    let store = FjallStore::open(dir.path(), Durability::default())?;
    assert_eq!(size_of(&store, b"w"), 0);
    // Wide entries under `w`, narrow ones under `x`, as many of each, of bytes that do not
    // compress: in the memtable.
    let noise = |i: usize, len: usize| -> Vec<u8> {
        let mut state = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    };
    let write = |from: usize, to: usize| {
        let mut batch = WriteBatch::new();
        for i in from..to {
            batch.put(format!("w{i:06}").into_bytes(), noise(i, 300));
            batch.put(format!("x{i:06}").into_bytes(), noise(i + 1, 10));
        }
        batch
    };
    store.write(write(0, 100)).await?;
    let (wide, narrow) = (size_of(&store, b"w"), size_of(&store, b"x"));
    assert_eq!(wide, 100 * (7 + 300), "memtable bytes are exact");
    assert_eq!(narrow, 100 * (7 + 10));
    // A bulk load past the ingestion threshold: one table holding both prefixes.
    store.write(write(100, 100 + INGEST_MIN_MUTATIONS)).await?;
    let (wide, narrow) = (size_of(&store, b"w"), size_of(&store, b"x"));
    assert!(wide > 5 * narrow, "cut by bytes: {wide} against {narrow}");
    store.compact().await?;
    let (wide, narrow) = (size_of(&store, b"w"), size_of(&store, b"x"));
    assert!(
        wide > 5 * narrow && narrow > 0,
        "compacted: {wide} against {narrow}"
    );
    let total = store.total_size()?.expect("fjall can tell");
    assert!(total >= wide + narrow, "{total}");
    // Every wide entry deleted and compacted away: that range shrinks, the other stays.
    let mut batch = WriteBatch::new();
    for i in 0..100 + INGEST_MIN_MUTATIONS {
        batch.delete(format!("w{i:06}").into_bytes());
    }
    store.write(batch).await?;
    store.compact().await?;
    assert!(
        size_of(&store, b"w") < wide / 20,
        "{}",
        size_of(&store, b"w")
    );
    let kept = size_of(&store, b"x");
    assert!(
        kept * 2 > narrow && kept < narrow * 2,
        "{kept} against {narrow}"
    );
    Ok(())
}

async fn count_prefix(store: &FjallStore, prefix: &[u8]) -> Result<usize> {
    let page = store
        .scan_page(&KeyRange::prefix(prefix), Direction::Forward, 10_000)
        .await?;
    Ok(page.entries.len())
}

/// Expiry rules that call every entry under `prefix` whose value is `expired` expired, and
/// count the entries they were asked about.
struct ExpireValue {
    prefix: &'static [u8],
    asked: Arc<AtomicUsize>,
}

struct ExpireValueJudge {
    prefix: &'static [u8],
    asked: Arc<AtomicUsize>,
}

impl ExpiryRules for ExpireValue {
    fn judge(&self) -> Box<dyn ExpiryJudge> {
        Box::new(ExpireValueJudge {
            prefix: self.prefix,
            asked: Arc::clone(&self.asked),
        })
    }
}

impl ExpiryJudge for ExpireValueJudge {
    fn expired(&mut self, key: &[u8], value: &[u8]) -> bool {
        self.asked.fetch_add(1, Ordering::Relaxed);
        key.starts_with(self.prefix) && value == b"expired"
    }
}

#[tokio::test]
async fn compaction_drops_what_the_expiry_rules_call_expired() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path(), Durability::default())?;
    let asked = Arc::new(AtomicUsize::new(0));
    assert!(store.set_expiry_rules(Arc::new(ExpireValue {
        prefix: b"t/",
        asked: Arc::clone(&asked),
    })));
    let mut batch = WriteBatch::new();
    for n in 0..1000u32 {
        let value: &[u8] = if n % 2 == 0 { b"expired" } else { b"live" };
        batch.put(format!("t/{n:04}").into_bytes(), value.to_vec());
        // Outside the rules' prefix, an expired-looking value stays.
        batch.put(format!("u/{n:04}").into_bytes(), b"expired".to_vec());
    }
    store.write(batch).await?;
    // An entry overwritten with an expired value does not bring back its older, live one.
    let mut tx = store.begin().await?;
    tx.put(b"t/0001".to_vec(), b"expired".to_vec());
    tx.commit().await?;
    // Readers above the store decide what is live; the store keeps it all until compaction.
    assert_eq!(count_prefix(&store, b"t/").await?, 1000);
    store.compact().await?;
    assert!(
        asked.load(Ordering::Relaxed) >= 2000,
        "the rules were not asked"
    );
    assert_eq!(store.get(b"t/0001").await?, None);
    assert_eq!(count_prefix(&store, b"t/").await?, 499);
    assert_eq!(count_prefix(&store, b"u/").await?, 1000);
    assert_eq!(store.get(b"t/0003").await?, Some(b"live".to_vec()));
    drop(store);
    // Reopened, no live value comes back that was not live: the journal replays the writes
    // newer than the newest entry its tables keep (the compaction dropped the newest, the
    // overwrite of t/0001), which brings back an expired entry until the next compaction,
    // never an older version over a newer one.
    let store = FjallStore::open(dir.path(), Durability::default())?;
    assert!(store.set_expiry_rules(Arc::new(ExpireValue {
        prefix: b"t/",
        asked: Arc::clone(&asked),
    })));
    let page = store
        .scan_page(&KeyRange::prefix(b"t/"), Direction::Forward, 10_000)
        .await?;
    let live = page.entries.iter().filter(|(_, v)| v == b"live").count();
    assert_eq!(live, 499);
    assert_ne!(store.get(b"t/0001").await?, Some(b"live".to_vec()));
    store.compact().await?;
    assert_eq!(count_prefix(&store, b"t/").await?, 499);
    Ok(())
}
