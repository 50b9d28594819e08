//! The k-way merge of the bucket streams of a salted table or index, each already in key order,
//! into one stream in key order across buckets: a heap of the buckets' next entries, so each
//! entry costs a logarithm of the bucket count, not a look at every bucket's head. A merged
//! range scan's streams (one per prefix tuple) merge the same way, by the key after the tuple.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use futures::stream::{self, BoxStream, StreamExt};
use rowdex_planner::Direction;

use crate::error::Result;

/// A stored (key, value) entry.
pub type Entry = (Vec<u8>, Vec<u8>);
pub type EntryStream = BoxStream<'static, Result<Entry>>;

/// The next entry of one bucket, ordered so that the heap's greatest is the entry to yield
/// next: the smallest key (after the header) reading forward, the largest reading in reverse;
/// ties (never within one table) go to the lower bucket.
struct Head {
    entry: Entry,
    bucket: usize,
    header: usize,
    forward: bool,
}

impl Head {
    fn rest(&self) -> &[u8] {
        self.entry.0.get(self.header..).unwrap_or_default()
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        let by_key = self.rest().cmp(other.rest());
        let by_key = if self.forward {
            by_key.reverse()
        } else {
            by_key
        };
        by_key.then_with(|| other.bucket.cmp(&self.bucket))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

/// Merges `buckets`, comparing keys without their first `header` bytes (the table or index
/// prefix and the salt byte).
pub fn merge_sorted(buckets: Vec<EntryStream>, header: usize, direction: Direction) -> EntryStream {
    merge_sorted_past(
        buckets.into_iter().map(|bucket| (bucket, header)).collect(),
        direction,
    )
}

/// Merges `streams`, each with the length of the key part it skips when comparing (a merged
/// range scan's streams each skip their own prefix tuple, of its own encoded length).
pub fn merge_sorted_past(streams: Vec<(EntryStream, usize)>, direction: Direction) -> EntryStream {
    struct Merge {
        streams: Vec<(EntryStream, usize)>,
        heads: BinaryHeap<Head>,
        started: bool,
    }
    if streams.len() == 1 {
        return streams
            .into_iter()
            .next()
            .map_or_else(|| stream::empty().boxed(), |(stream, _)| stream);
    }
    let forward = direction == Direction::Forward;
    let state = Merge {
        heads: BinaryHeap::with_capacity(streams.len()),
        streams,
        started: false,
    };
    stream::try_unfold(state, move |mut state| async move {
        if !state.started {
            for (bucket, (stream, header)) in state.streams.iter_mut().enumerate() {
                if let Some(entry) = stream.next().await.transpose()? {
                    state.heads.push(Head {
                        entry,
                        bucket,
                        header: *header,
                        forward,
                    });
                }
            }
            state.started = true;
        }
        let Some(Head { entry, bucket, .. }) = state.heads.pop() else {
            return Ok(None);
        };
        let (stream, header) = &mut state.streams[bucket];
        if let Some(next) = stream.next().await.transpose()? {
            state.heads.push(Head {
                entry: next,
                bucket,
                header: *header,
                forward,
            });
        }
        Ok(Some((entry, state)))
    })
    .boxed()
}
