//! Streaming a whole range page by page, or many ranges one after the other (batched where
//! the store reads batches of ranges in one round trip).

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::{Direction, KeyRange, KvRead, RANGES_PER_BATCH, Result, StoreError};

/// Streams every entry of `range` in `direction`, fetching `page_size` entries at a time.
///
/// Each page is a separate read, so on a live store (as opposed to a snapshot or transaction)
/// pages may reflect different states; pass a snapshot for a consistent result. A `page_size`
/// of 0 is treated as 1 so the stream always makes progress. The stream ends after the first
/// error.
pub fn scan_stream(
    reader: Arc<dyn KvRead>,
    range: KeyRange,
    direction: Direction,
    page_size: usize,
) -> BoxStream<'static, Result<(Vec<u8>, Vec<u8>)>> {
    let page_size = page_size.max(1);
    stream::try_unfold(Some(range), move |next| {
        let reader = Arc::clone(&reader);
        async move {
            let Some(range) = next else {
                return Ok::<_, StoreError>(None);
            };
            let page = reader.scan_page(&range, direction, page_size).await?;
            Ok(Some((page.entries, page.resume)))
        }
    })
    .map_ok(|entries| stream::iter(entries.into_iter().map(Ok)))
    .try_flatten()
    .boxed()
}

/// Streams every entry of `ranges`, one range after the other in the order given, each in
/// `direction`. A reader that batches ranges ([`KvRead::batches_ranges`]) is asked for the
/// first pages of [`RANGES_PER_BATCH`] ranges at a time ([`KvRead::scan_pages`], one round
/// trip on etcd), and a range its page did not finish continues page by page; any other reader
/// reads each range as [`scan_stream`] does.
pub fn scan_ranges_stream(
    reader: Arc<dyn KvRead>,
    ranges: Vec<KeyRange>,
    direction: Direction,
    page_size: usize,
) -> BoxStream<'static, Result<(Vec<u8>, Vec<u8>)>> {
    let page_size = page_size.max(1);
    if ranges.len() < 2 || !reader.batches_ranges() {
        return stream::iter(ranges)
            .map(move |range| scan_stream(Arc::clone(&reader), range, direction, page_size))
            .flatten()
            .boxed();
    }
    let batches: Vec<Vec<KeyRange>> = ranges
        .chunks(RANGES_PER_BATCH)
        .map(<[KeyRange]>::to_vec)
        .collect();
    stream::iter(batches)
        .then(move |batch| {
            let reader = Arc::clone(&reader);
            async move {
                let pages = reader.scan_pages(&batch, direction, page_size).await?;
                let ranges = pages.into_iter().map(move |page| {
                    let first = stream::iter(page.entries.into_iter().map(Ok));
                    match page.resume {
                        Some(rest) => first
                            .chain(scan_stream(Arc::clone(&reader), rest, direction, page_size))
                            .boxed(),
                        None => first.boxed(),
                    }
                });
                Ok::<_, StoreError>(stream::iter(ranges).flatten())
            }
        })
        .try_flatten()
        .boxed()
}
