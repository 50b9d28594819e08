//! The JSON messages of etcd's v3 gateway (the gRPC API mapped to JSON): byte strings travel
//! as base64, 64-bit integers as decimal strings.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes that serialize as base64 text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Bytes(pub(super) Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&BASE64.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        BASE64
            .decode(text)
            .map(Bytes)
            .map_err(serde::de::Error::custom)
    }
}

/// An int64 as etcd's gateway writes it: a decimal string (a plain number is taken too).
fn int64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int64 {
        Text(String),
        Number(i64),
    }
    match Int64::deserialize(deserializer)? {
        Int64::Text(text) => text.parse().map_err(serde::de::Error::custom),
        Int64::Number(number) => Ok(number),
    }
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `RangeRequest`: the keys in `[key, range_end)` (just `key` without `range_end`).
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct RangeRequest {
    pub(super) key: Bytes,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) range_end: Option<Bytes>,
    /// At most this many keys; 0 is no limit.
    #[serde(skip_serializing_if = "is_zero")]
    pub(super) limit: i64,
    /// Read the store as of this revision; 0 is the latest.
    #[serde(skip_serializing_if = "is_zero")]
    pub(super) revision: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) sort_order: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) sort_target: Option<&'static str>,
    #[serde(skip_serializing_if = "is_false")]
    pub(super) keys_only: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub(super) count_only: bool,
    /// Served by the member asked from its own state, without confirming with the leader:
    /// exact for a read at a given revision (the versions at a revision never change), which
    /// a member not yet at that revision refuses ("future revision").
    #[serde(skip_serializing_if = "is_false")]
    pub(super) serializable: bool,
}

/// The response header: the store's revision the answer was read at (or a write made).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct Header {
    #[serde(default, deserialize_with = "int64")]
    pub(super) revision: i64,
    /// The member that answered.
    #[serde(default, deserialize_with = "int64_text")]
    pub(super) member_id: u64,
}

/// One key-value pair with the revision of its last change.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct KeyValue {
    pub(super) key: Bytes,
    #[serde(default)]
    pub(super) value: Bytes,
    #[serde(default, deserialize_with = "int64")]
    pub(super) mod_revision: i64,
    /// The revision the key was created at (since it was last absent).
    #[serde(default, deserialize_with = "int64")]
    pub(super) create_revision: i64,
}

/// `RangeResponse`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct RangeResponse {
    #[serde(default)]
    pub(super) header: Header,
    #[serde(default)]
    pub(super) kvs: Vec<KeyValue>,
    /// More keys lie in the range beyond the limit.
    #[serde(default)]
    pub(super) more: bool,
    /// Keys in the whole range (what `count_only` asks for).
    #[serde(default, deserialize_with = "int64")]
    pub(super) count: i64,
}

/// `Compare`: a condition of a transaction on the last-change revision of a key or of every
/// key of a range.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Compare {
    pub(super) key: Bytes,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) range_end: Option<Bytes>,
    pub(super) target: &'static str,
    pub(super) result: &'static str,
    pub(super) mod_revision: i64,
}

impl Compare {
    /// The key was last changed at `revision` (0: it is absent).
    pub(super) fn unchanged(key: Vec<u8>, revision: i64) -> Compare {
        Compare {
            key: Bytes(key),
            range_end: None,
            target: "MOD",
            result: "EQUAL",
            mod_revision: revision,
        }
    }

    /// No key of `[start, end)` was written after `revision`.
    pub(super) fn range_unchanged_since(start: Vec<u8>, end: Vec<u8>, revision: i64) -> Compare {
        Compare {
            key: Bytes(start),
            range_end: Some(Bytes(end)),
            target: "MOD",
            result: "LESS",
            mod_revision: revision.saturating_add(1),
        }
    }
}

/// `PutRequest`; a key put under a lease is deleted when the lease expires.
#[derive(Debug, Clone, Serialize)]
pub(super) struct PutRequest {
    pub(super) key: Bytes,
    pub(super) value: Bytes,
    #[serde(skip_serializing_if = "is_zero")]
    pub(super) lease: i64,
}

/// `LeaseGrantRequest`: a lease of `ttl` seconds.
#[derive(Debug, Clone, Serialize)]
pub(super) struct LeaseGrantRequest {
    #[serde(rename = "TTL")]
    pub(super) ttl: i64,
}

/// `LeaseGrantResponse`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct LeaseGrantResponse {
    #[serde(rename = "ID", default, deserialize_with = "int64")]
    pub(super) id: i64,
}

/// `DeleteRangeRequest`: one key, or the keys of `[key, range_end)`.
#[derive(Debug, Clone, Serialize)]
pub(super) struct DeleteRequest {
    pub(super) key: Bytes,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) range_end: Option<Bytes>,
}

/// `LeaseRequest`: renews lease `id` for its whole TTL.
#[derive(Debug, Clone, Serialize)]
pub(super) struct LeaseRequest {
    #[serde(rename = "ID")]
    pub(super) id: i64,
}

/// `LeaseKeepAliveResponse`, as the gateway wraps a streamed answer.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct LeaseKeepAliveStreamed {
    #[serde(default)]
    pub(super) result: LeaseKeepAliveResponse,
}

/// The lease's remaining TTL in seconds: 0 or less once it has expired.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct LeaseKeepAliveResponse {
    #[serde(rename = "TTL", default, deserialize_with = "int64")]
    pub(super) ttl: i64,
}

/// `WatchRequest` with its `create_request`: the changes to the keys of `[key, range_end)`
/// from `start_revision` on.
#[derive(Debug, Clone, Serialize)]
pub(super) struct WatchRequest {
    pub(super) create_request: WatchCreateRequest,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct WatchCreateRequest {
    pub(super) key: Bytes,
    pub(super) range_end: Bytes,
    pub(super) start_revision: i64,
}

/// One message of a watch's stream, as the gateway wraps it.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct WatchStreamed {
    #[serde(default)]
    pub(super) result: Option<WatchResponse>,
    /// A failure of the stream itself.
    #[serde(default)]
    pub(super) error: Option<ErrorBody>,
}

/// `WatchResponse`: the events of one revision or more, or the watch's creation or end.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct WatchResponse {
    #[serde(default)]
    pub(super) header: Header,
    #[serde(default)]
    pub(super) canceled: bool,
    /// Set when the start revision was compacted away: the watch is canceled.
    #[serde(default, deserialize_with = "int64")]
    pub(super) compact_revision: i64,
    #[serde(default)]
    pub(super) events: Vec<Event>,
}

/// A change of one key: a put (etcd's default, left out by the gateway) or a delete.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Event {
    #[serde(default, rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) kv: KeyValue,
}

impl Event {
    pub(super) fn is_delete(&self) -> bool {
        self.kind == "DELETE"
    }
}

/// `RequestOp`: one operation of a transaction.
#[derive(Debug, Clone, Serialize)]
pub(super) enum RequestOp {
    #[serde(rename = "request_range")]
    Range(RangeRequest),
    #[serde(rename = "request_put")]
    Put(PutRequest),
    #[serde(rename = "request_delete_range")]
    DeleteRange(DeleteRequest),
}

/// `TxnRequest`: if every compare holds, `success` runs, else `failure`; atomically.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct TxnRequest {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) compare: Vec<Compare>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) success: Vec<RequestOp>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) failure: Vec<RequestOp>,
}

/// `ResponseOp`, of which only range answers are read.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ResponseOp {
    #[serde(default)]
    pub(super) response_range: Option<RangeResponse>,
}

/// `TxnResponse`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct TxnResponse {
    #[serde(default)]
    pub(super) header: Header,
    /// Whether the compares held (and `success` ran).
    #[serde(default)]
    pub(super) succeeded: bool,
    #[serde(default)]
    pub(super) responses: Vec<ResponseOp>,
}

/// `CompactionRequest`: forget the versions older than `revision`.
#[derive(Debug, Clone, Serialize)]
pub(super) struct CompactionRequest {
    pub(super) revision: i64,
}

/// `CompactionResponse`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct CompactionResponse {}

/// `StatusResponse` (a member's view of the cluster).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct StatusResponse {
    #[serde(default)]
    pub(super) header: Header,
    #[serde(default, deserialize_with = "int64_text")]
    pub(super) leader: u64,
}

/// A uint64 member id, written as a decimal string.
fn int64_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(serde::de::Error::custom)
}

/// The body of a failed call: the gRPC status the gateway translated.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) error: String,
    #[serde(default)]
    pub(super) code: i64,
}
