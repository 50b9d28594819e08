//! Streaming a whole range page by page.

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::{Direction, KeyRange, KvRead, Result, StoreError};

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
