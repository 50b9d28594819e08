//! Point-in-time snapshots.

use std::sync::Arc;

use rowdex_store::{Direction, KeyRange, KvStore, Result, WriteBatch};

use crate::common::{entries, put_all, scan_all};

pub async fn snapshot_ignores_later_writes(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "1")]).await?;
    let snap = store.snapshot();

    let mut batch = WriteBatch::new();
    batch.put(b"a".to_vec(), b"2".to_vec());
    batch.delete(b"b".to_vec());
    batch.put(b"c".to_vec(), b"2".to_vec());
    store.write(batch).await?;

    assert_eq!(snap.get(b"a").await?, Some(b"1".to_vec()));
    assert_eq!(snap.get(b"b").await?, Some(b"1".to_vec()));
    assert_eq!(snap.get(b"c").await?, None);
    let keys = [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
    assert_eq!(
        snap.multi_get(&keys).await?,
        vec![Some(b"1".to_vec()), Some(b"1".to_vec()), None]
    );
    let old = entries(&[("a", "1"), ("b", "1")]);
    assert_eq!(
        scan_all(&*snap, &KeyRange::all(), Direction::Forward, 1).await?,
        old
    );

    let fresh = store.snapshot();
    let new = entries(&[("a", "2"), ("c", "2")]);
    assert_eq!(
        scan_all(&*fresh, &KeyRange::all(), Direction::Reverse, 1)
            .await?
            .len(),
        2
    );
    assert_eq!(
        scan_all(&*fresh, &KeyRange::all(), Direction::Forward, 5).await?,
        new
    );
    assert_eq!(
        scan_all(&*store, &KeyRange::all(), Direction::Forward, 5).await?,
        new
    );
    Ok(())
}

pub async fn snapshot_pages_stay_consistent(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "1"), ("c", "1"), ("d", "1")]).await?;
    let snap = store.snapshot();
    let first = snap
        .scan_page(&KeyRange::all(), Direction::Forward, 2)
        .await?;
    assert_eq!(first.entries, entries(&[("a", "1"), ("b", "1")]));

    // Change both the part already read and the part still to come.
    let mut batch = WriteBatch::new();
    batch.delete(b"a".to_vec());
    batch.put(b"bb".to_vec(), b"new".to_vec());
    batch.delete(b"c".to_vec());
    batch.put(b"d".to_vec(), b"2".to_vec());
    store.write(batch).await?;

    let Some(rest) = first.resume else {
        panic!("first page should resume");
    };
    let second = scan_all(&*snap, &rest, Direction::Forward, 2).await?;
    assert_eq!(second, entries(&[("c", "1"), ("d", "1")]));
    Ok(())
}

pub async fn snapshots_are_independent(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("k", "1")]).await?;
    let s1 = store.snapshot();
    put_all(&*store, &[("k", "2")]).await?;
    let s2 = store.snapshot();
    put_all(&*store, &[("k", "3")]).await?;
    let s3 = store.snapshot();
    let mut batch = WriteBatch::new();
    batch.delete(b"k".to_vec());
    store.write(batch).await?;

    // Dropping the oldest snapshot must not disturb the newer ones.
    assert_eq!(s1.get(b"k").await?, Some(b"1".to_vec()));
    drop(s1);
    assert_eq!(s2.get(b"k").await?, Some(b"2".to_vec()));
    assert_eq!(s3.get(b"k").await?, Some(b"3".to_vec()));
    drop(s3);
    assert_eq!(s2.get(b"k").await?, Some(b"2".to_vec()));
    assert_eq!(store.get(b"k").await?, None);
    // A clone of a snapshot handle is the same view.
    let s2b = Arc::clone(&s2);
    drop(s2);
    assert_eq!(s2b.get(b"k").await?, Some(b"2".to_vec()));
    Ok(())
}
