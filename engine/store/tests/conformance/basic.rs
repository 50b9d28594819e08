//! Point reads and writes, batches and input validation.

use std::sync::Arc;

use rowdex_store::{Direction, KeyRange, KvStore, MAX_KEY_LEN, Result, StoreError, WriteBatch};

use crate::common::{entries, put_all, scan_all};

pub async fn get_put_delete(store: Arc<dyn KvStore>) -> Result<()> {
    assert_eq!(store.get(b"a").await?, None);
    put_all(&*store, &[("a", "1")]).await?;
    assert_eq!(store.get(b"a").await?, Some(b"1".to_vec()));
    put_all(&*store, &[("a", "2")]).await?;
    assert_eq!(store.get(b"a").await?, Some(b"2".to_vec()));

    let mut batch = WriteBatch::new();
    batch.delete(b"a".to_vec());
    batch.delete(b"never-written".to_vec());
    store.write(batch).await?;
    assert_eq!(store.get(b"a").await?, None);
    assert_eq!(store.get(b"never-written").await?, None);
    // Reads of keys that can never be stored are simply misses.
    assert_eq!(store.get(b"").await?, None);
    assert_eq!(store.get(&vec![7; MAX_KEY_LEN + 1]).await?, None);
    Ok(())
}

pub async fn empty_values_are_values(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("e", "")]).await?;
    assert_eq!(store.get(b"e").await?, Some(Vec::new()));
    let all = scan_all(&*store, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(all, entries(&[("e", "")]));
    Ok(())
}

pub async fn multi_get_keeps_order(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "2"), ("c", "3")]).await?;
    let keys = [b"c".to_vec(), b"x".to_vec(), b"a".to_vec(), b"c".to_vec()];
    let values = store.multi_get(&keys).await?;
    assert_eq!(
        values,
        vec![
            Some(b"3".to_vec()),
            None,
            Some(b"1".to_vec()),
            Some(b"3".to_vec())
        ]
    );
    assert!(store.multi_get(&[]).await?.is_empty());
    Ok(())
}

pub async fn batch_later_op_wins(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("d", "old")]).await?;
    let mut batch = WriteBatch::new();
    batch.put(b"a".to_vec(), b"1".to_vec());
    batch.put(b"b".to_vec(), b"1".to_vec());
    batch.put(b"a".to_vec(), b"2".to_vec());
    batch.delete(b"b".to_vec());
    batch.delete(b"c".to_vec());
    batch.put(b"c".to_vec(), b"3".to_vec());
    batch.delete(b"d".to_vec());
    batch.put(b"d".to_vec(), b"4".to_vec());
    batch.delete(b"d".to_vec());
    assert_eq!(batch.len(), 9);
    assert_eq!(batch.mutations()[0].key(), b"a");
    store.write(batch).await?;

    let all = scan_all(&*store, &KeyRange::all(), Direction::Forward, 100).await?;
    assert_eq!(all, entries(&[("a", "2"), ("c", "3")]));
    assert_eq!(store.get(b"b").await?, None);
    assert_eq!(store.get(b"d").await?, None);
    Ok(())
}

pub async fn empty_batch_is_a_no_op(store: Arc<dyn KvStore>) -> Result<()> {
    let batch = WriteBatch::new();
    assert!(batch.is_empty());
    store.write(batch).await?;
    let all = scan_all(&*store, &KeyRange::all(), Direction::Forward, 10).await?;
    assert!(all.is_empty());
    Ok(())
}

pub async fn invalid_batch_writes_nothing(store: Arc<dyn KvStore>) -> Result<()> {
    let mut batch = WriteBatch::new();
    batch.put(b"ok".to_vec(), b"1".to_vec());
    batch.put(Vec::new(), b"1".to_vec());
    assert!(matches!(
        store.write(batch).await,
        Err(StoreError::EmptyKey)
    ));

    let mut batch = WriteBatch::new();
    batch.put(b"ok".to_vec(), b"1".to_vec());
    batch.delete(vec![1; MAX_KEY_LEN + 1]);
    match store.write(batch).await {
        Err(StoreError::KeyTooLarge { len, max }) => {
            assert_eq!((len, max), (MAX_KEY_LEN + 1, MAX_KEY_LEN));
        }
        other => panic!("expected KeyTooLarge, got {other:?}"),
    }
    assert_eq!(store.get(b"ok").await?, None);
    Ok(())
}

pub async fn longest_keys_round_trip(store: Arc<dyn KvStore>) -> Result<()> {
    let low = vec![0x10; MAX_KEY_LEN];
    let high = vec![0xFF; MAX_KEY_LEN];
    let mut batch = WriteBatch::new();
    batch.put(low.clone(), b"low".to_vec());
    batch.put(high.clone(), b"high".to_vec());
    store.write(batch).await?;
    assert_eq!(store.get(&high).await?, Some(b"high".to_vec()));

    // Paging past a maximal key produces a resume bound longer than any storable key.
    for direction in [Direction::Forward, Direction::Reverse] {
        let all = scan_all(&*store, &KeyRange::all(), direction, 1).await?;
        assert_eq!(all.len(), 2, "{direction:?}");
    }
    // Over-long bounds on both sides.
    let mut start = low.clone();
    start.push(0);
    let mut end = high.clone();
    end.push(0);
    let range = KeyRange::new(start, Some(end));
    let inside = scan_all(&*store, &range, Direction::Forward, 10).await?;
    assert_eq!(inside, vec![(high.clone(), b"high".to_vec())]);
    let reverse = scan_all(&*store, &range, Direction::Reverse, 10).await?;
    assert_eq!(reverse, inside);
    let mut past_high = high.clone();
    past_high.push(1);
    let beyond = KeyRange::new(past_high, None);
    assert!(
        scan_all(&*store, &beyond, Direction::Forward, 10)
            .await?
            .is_empty()
    );
    Ok(())
}

pub async fn capabilities_are_reported(store: Arc<dyn KvStore>) -> Result<()> {
    let caps = store.capabilities();
    assert!(caps.snapshots);
    store.flush().await
}
