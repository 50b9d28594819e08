//! A watch on a range of keys through the gateway: one streamed POST to `/v3/watch` on a
//! connection of its own, whose body is a run of JSON messages (the watch's creation, then
//! the events of each revision as they happen). Dropping the watch closes the connection,
//! which ends the watch on the member.

use super::client::Client;
use super::http::Connection;
use super::wire::{Bytes, WatchCreateRequest, WatchRequest, WatchResponse, WatchStreamed};
use crate::error::{Result, StoreError};

/// The changes to one range of keys, from a revision on.
pub(super) struct Watch {
    connection: Connection,
    /// Bytes of the stream not decoded yet (a message may span chunks).
    pending: Vec<u8>,
    /// Events that came with the watch's confirmation, for the first [`Watch::next`].
    held: Option<WatchResponse>,
}

impl Watch {
    /// Watches `[start, end)` (keys as etcd has them, namespace included) from revision
    /// `from` on, and waits for the member to confirm the watch.
    pub(super) async fn open(
        client: &Client,
        start: Vec<u8>,
        end: Vec<u8>,
        from: i64,
    ) -> Result<Watch> {
        let request = WatchRequest {
            create_request: WatchCreateRequest {
                key: Bytes(start),
                range_end: Bytes(end),
                start_revision: from,
            },
        };
        let connection = client.open_stream("/v3/watch", &request).await?;
        let mut watch = Watch {
            connection,
            pending: Vec::new(),
            held: None,
        };
        // The first message confirms the watch (or refuses it: a compacted start revision).
        let created = watch.next_message().await?;
        if !created.events.is_empty() {
            watch.held = Some(created);
        }
        Ok(watch)
    }

    /// The next message with events; an error when the stream ends or the member cancels the
    /// watch (its start revision was compacted): the caller reads the range again and
    /// watches from there.
    pub(super) async fn next(&mut self) -> Result<WatchResponse> {
        if let Some(held) = self.held.take() {
            return Ok(held);
        }
        loop {
            let message = self.next_message().await?;
            if !message.events.is_empty() {
                return Ok(message);
            }
        }
    }

    async fn next_message(&mut self) -> Result<WatchResponse> {
        loop {
            let mut messages =
                serde_json::Deserializer::from_slice(&self.pending).into_iter::<WatchStreamed>();
            match messages.next() {
                Some(Ok(streamed)) => {
                    let used = messages.byte_offset();
                    self.pending.drain(..used);
                    return message_of(streamed);
                }
                Some(Err(error)) if !error.is_eof() => {
                    return Err(broken(format!("cannot decode a watch message: {error}")));
                }
                // Only part of a message (or nothing) so far: read on.
                _ => {}
            }
            match self.connection.next_chunk().await {
                Ok(Some(chunk)) => self.pending.extend_from_slice(&chunk),
                Ok(None) => return Err(broken("the watch's stream ended".to_string())),
                Err(error) => return Err(broken(format!("the watch's stream failed: {error}"))),
            }
        }
    }
}

/// A watch message as it streamed, or the stream's failure.
fn message_of(streamed: WatchStreamed) -> Result<WatchResponse> {
    if let Some(error) = streamed.error {
        return Err(broken(format!("etcd ended the watch: {}", error.message)));
    }
    let Some(message) = streamed.result else {
        return Err(broken("a watch message without a result".to_string()));
    };
    if message.canceled || message.compact_revision > 0 {
        return Err(broken(format!(
            "etcd canceled the watch (compacted to revision {})",
            message.compact_revision
        )));
    }
    Ok(message)
}

fn broken(message: String) -> StoreError {
    StoreError::Remote { code: 0, message }
}
