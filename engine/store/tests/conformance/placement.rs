//! Prefixes kept in keyspaces of their own (fjall): reads and writes find them wherever they
//! are, a move is atomic for readers, the layout survives a reopen, and each storage option
//! changes what it says.

use rowdex_store::{
    BlockEncoding, Compression, Direction, Durability, FjallStore, KeyRange, KvRead, KvStore,
    Result, StorageOptions, WriteBatch,
};

fn key(prefix: &str, n: u32) -> Vec<u8> {
    format!("{prefix}{n:05}").into_bytes()
}

/// Values that compress well: a phrase repeated.
fn value(n: u32) -> Vec<u8> {
    format!("{n:05} ").repeat(40).into_bytes()
}

async fn write_prefixes(store: &FjallStore, prefixes: &[&str], rows: u32) -> Result<()> {
    let mut batch = WriteBatch::new();
    for prefix in prefixes {
        for n in 0..rows {
            batch.put(key(prefix, n), value(n));
        }
    }
    store.write(batch).await
}

async fn keys_in(
    read: &dyn KvRead,
    range: &KeyRange,
    direction: Direction,
    page: usize,
) -> Result<Vec<Vec<u8>>> {
    let mut keys = Vec::new();
    let mut next = Some(range.clone());
    while let Some(range) = next {
        let scanned = read.scan_page(&range, direction, page).await?;
        keys.extend(scanned.entries.into_iter().map(|(k, _)| k));
        next = scanned.resume;
    }
    Ok(keys)
}

fn lz4() -> StorageOptions {
    StorageOptions {
        compression: Some(Compression::Lz4),
        ..StorageOptions::default()
    }
}

#[tokio::test]
async fn placed_prefixes_read_and_write_as_before_and_survive_a_reopen() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path(), Durability::default())?;
    write_prefixes(&store, &["a/", "b/", "c/"], 300).await?;
    let everything = keys_in(&store, &KeyRange::all(), Direction::Forward, 1000).await?;
    let before_move = store.snapshot();
    assert!(store.place(b"b/", &lz4()).await?);
    assert_eq!(store.placements(), vec![(b"b/".to_vec(), lz4())]);
    // Every read path, across the placed prefix's bounds, forward and back, paged.
    for page in [7, 1000] {
        assert_eq!(
            keys_in(&store, &KeyRange::all(), Direction::Forward, page).await?,
            everything
        );
        let mut reversed = everything.clone();
        reversed.reverse();
        assert_eq!(
            keys_in(&store, &KeyRange::all(), Direction::Reverse, page).await?,
            reversed
        );
    }
    let across = KeyRange::new(key("a/", 250), Some(key("c/", 50)));
    assert_eq!(
        keys_in(&store, &across, Direction::Forward, 13)
            .await?
            .len(),
        50 + 300 + 50
    );
    assert_eq!(store.count_page(&across, 1000).await?.entries, 400);
    assert_eq!(store.get(&key("b/", 7)).await?, Some(value(7)));
    assert_eq!(
        store
            .multi_get(&[key("c/", 1), key("b/", 2), key("a/", 3)])
            .await?,
        vec![Some(value(1)), Some(value(2)), Some(value(3))]
    );
    assert_eq!(
        store.contains(&[key("b/", 299), key("b/", 300)]).await?,
        vec![true, false]
    );
    // A snapshot from before the move reads what it read then, from where it was.
    assert_eq!(
        keys_in(
            before_move.as_ref(),
            &KeyRange::all(),
            Direction::Forward,
            50
        )
        .await?,
        everything
    );
    // Writes, in and out of the placed prefix, in one transaction.
    let mut tx = store.begin().await?;
    tx.put(key("b/", 1000), b"new".to_vec());
    tx.put(key("a/", 1000), b"new".to_vec());
    tx.delete(key("b/", 0));
    tx.commit().await?;
    assert_eq!(store.get(&key("b/", 1000)).await?, Some(b"new".to_vec()));
    assert_eq!(store.get(&key("b/", 0)).await?, None);
    let figures = store.placed_figures(b"b/").expect("placed");
    assert_eq!(
        figures.tables, 0,
        "moved entries wait in the memtable: {figures:?}"
    );
    store.compact().await?;
    assert!(store.placed_figures(b"b/").expect("placed").tables > 0);
    drop(before_move);
    drop(store);

    let store = FjallStore::open(dir.path(), Durability::default())?;
    assert_eq!(store.placements(), vec![(b"b/".to_vec(), lz4())]);
    let keys = keys_in(&store, &KeyRange::prefix(b"b/"), Direction::Forward, 1000).await?;
    assert_eq!(keys.len(), 300);
    assert_eq!(store.get(&key("a/", 1000)).await?, Some(b"new".to_vec()));
    // Given back to the data keyspace: still all there, and its keyspace gone at the next open.
    assert!(store.place(b"b/", &StorageOptions::default()).await?);
    assert!(store.placements().is_empty());
    assert!(store.placed_figures(b"b/").is_none());
    assert_eq!(
        keys_in(&store, &KeyRange::prefix(b"b/"), Direction::Forward, 1000).await?,
        keys
    );
    drop(store);
    let store = FjallStore::open(dir.path(), Durability::default())?;
    assert_eq!(
        keys_in(&store, &KeyRange::prefix(b"b/"), Direction::Forward, 1000).await?,
        keys
    );
    let leftovers: Vec<String> = std::fs::read_dir(dir.path().join("keyspaces"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(leftovers.len() <= 4, "keyspaces left: {leftovers:?}");
    // A prefix inside a placed one is refused.
    assert!(store.place(b"a/", &lz4()).await?);
    assert!(store.place(b"a/0", &lz4()).await.is_err());
    assert!(store.place(b"a", &lz4()).await.is_err());
    Ok(())
}

/// Two prefixes with the same entries, one placed with `options` and one with `baseline`,
/// compacted: their sizes and their keyspaces' figures.
async fn compare(
    options: StorageOptions,
    baseline: StorageOptions,
) -> Result<(u64, u64, FjallPair)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path(), Durability::default())?;
    assert!(store.place(b"x/", &options).await?);
    assert!(store.place(b"y/", &baseline).await?);
    write_prefixes(&store, &["x/", "y/"], 20_000).await?;
    store.compact().await?;
    let size = |prefix: &[u8]| store.approximate_size(&KeyRange::prefix(prefix));
    let (x, y) = (size(b"x/")?.unwrap_or(0), size(b"y/")?.unwrap_or(0));
    let figures = (
        store.placed_figures(b"x/").expect("placed"),
        store.placed_figures(b"y/").expect("placed"),
    );
    Ok((x, y, figures))
}

/// Like [`compare`], the entries written in rounds, each flushed into a table of level 0, and
/// left to fjall's own compactions (its major compaction cuts tables at a fixed 64 MB; the
/// table size is what its leveled compactions cut at).
async fn compacted_in_rounds(
    options: StorageOptions,
    baseline: StorageOptions,
) -> Result<FjallPair> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path(), Durability::default())?;
    assert!(store.place(b"x/", &options).await?);
    assert!(store.place(b"y/", &baseline).await?);
    for round in 0..6u32 {
        let mut batch = WriteBatch::new();
        for prefix in ["x/", "y/"] {
            // Rounds interleave their keys, so that their tables overlap and are merged (a
            // table that overlaps none is moved down a level whole).
            for n in (0..24_000).filter(|n| n % 6 == round) {
                batch.put(key(prefix, n), value(n));
            }
        }
        store.write(batch).await?;
        // Past the journal's trim size: every keyspace's memtable is flushed.
        store.checkpoint().await?;
    }
    let waited = std::time::Instant::now();
    loop {
        let figures = (
            store.placed_figures(b"x/").expect("placed"),
            store.placed_figures(b"y/").expect("placed"),
        );
        let settled = store.metrics().compactions_running == Some(0) && figures.1.tables <= 2;
        if settled || waited.elapsed() > std::time::Duration::from_secs(30) {
            return Ok(figures);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

type FjallPair = (rowdex_store::PlacedFigures, rowdex_store::PlacedFigures);

#[tokio::test]
async fn each_storage_option_changes_what_it_says() -> Result<()> {
    let none = StorageOptions {
        compression: Some(Compression::None),
        ..StorageOptions::default()
    };
    let (compressed, plain, _) = compare(lz4(), none.clone()).await?;
    assert!(
        compressed * 2 < plain,
        "LZ4 {compressed} bytes, none {plain}"
    );

    let no_bloom = StorageOptions {
        bloom_filter: Some(false),
        ..none.clone()
    };
    let bloom = StorageOptions {
        bloom_filter: Some(true),
        ..none.clone()
    };
    let (_, _, (without, with)) = compare(no_bloom, bloom).await?;
    assert_eq!(without.filter_bytes, 0, "{without:?}");
    assert!(with.filter_bytes > 10_000, "{with:?}");

    let small_tables = StorageOptions {
        table_size: Some(256 * 1024),
        ..none.clone()
    };
    let (small, large) = compacted_in_rounds(small_tables, none.clone()).await?;
    assert!(small.tables > large.tables * 4, "{small:?} vs {large:?}");

    // A small memtable is flushed into tables as it fills; the default one holds it all.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path(), Durability::default())?;
    let small_memtable = StorageOptions {
        memtable_size: Some(256 * 1024),
        ..none.clone()
    };
    assert!(store.place(b"x/", &small_memtable).await?);
    assert!(store.place(b"y/", &none).await?);
    for chunk in 0..200u32 {
        let mut batch = WriteBatch::new();
        for prefix in ["x/", "y/"] {
            for n in chunk * 100..(chunk + 1) * 100 {
                batch.put(key(prefix, n), value(n));
            }
        }
        store.write(batch).await?;
    }
    let waited = std::time::Instant::now();
    while store.placed_figures(b"x/").expect("placed").tables == 0
        && waited.elapsed() < std::time::Duration::from_secs(30)
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (small, default) = (
        store.placed_figures(b"x/").expect("placed"),
        store.placed_figures(b"y/").expect("placed"),
    );
    assert!(
        small.tables > 0 && default.tables == 0,
        "{small:?} vs {default:?}"
    );
    drop(store);

    let plain_keys = StorageOptions {
        block_encoding: Some(BlockEncoding::Plain),
        ..none.clone()
    };
    let prefixed_keys = StorageOptions {
        block_encoding: Some(BlockEncoding::Prefix),
        ..none.clone()
    };
    let (whole, shared, _) = compare(plain_keys, prefixed_keys).await?;
    assert!(
        shared < whole,
        "prefix-encoded {shared} bytes, plain {whole}"
    );

    let small_blocks = StorageOptions {
        block_size: Some(1024),
        ..lz4()
    };
    let large_blocks = StorageOptions {
        block_size: Some(64 * 1024),
        ..lz4()
    };
    let (small, large, _) = compare(small_blocks, large_blocks).await?;
    assert!(
        large < small,
        "64 KiB blocks {large} bytes, 1 KiB blocks {small}"
    );
    Ok(())
}
