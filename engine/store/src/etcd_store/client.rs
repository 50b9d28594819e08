//! Calls to an etcd cluster through any of its members, with failover.
//!
//! A call goes to the member that answered last; when it cannot be reached, has lost its
//! leader or is overloaded, the call moves on to the next member, until one answers or the
//! cluster has been unreachable for [`EtcdOptions::unavailable_after`]. Reads are repeated
//! freely. A write is repeated only when it certainly was not applied (it never left this
//! process, or the member refused it before proposing it); when it left and no answer came,
//! the caller gets [`StoreError::CommitOutcomeUnknown`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::http::{Connection, HttpError, Response};
use super::wire::ErrorBody;
use crate::error::{Result, StoreError};

/// Idle connections kept per member.
const POOL_SIZE: usize = 32;

/// Timeouts of the calls to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtcdOptions {
    /// How long one call to one member may take before it counts as lost.
    pub call_timeout: Duration,
    /// How long a call keeps trying the members before it fails as unavailable.
    pub unavailable_after: Duration,
    /// How long old versions are kept before rowdex compacts them away: a snapshot of another
    /// process reading longer than this may fail with [`StoreError::SnapshotTooOld`].
    pub keep_history: Duration,
    /// How long the row locks of a process that stopped renewing them (it died, or lost the
    /// cluster) stay: their lease's length, renewed at a third of it.
    pub lock_lease: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            call_timeout: Duration::from_secs(5),
            unavailable_after: Duration::from_secs(10),
            keep_history: Duration::from_secs(300),
            lock_lease: Duration::from_secs(10),
        }
    }
}

/// Whether a call changes the store (which decides when it may be repeated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    Read,
    Write,
}

/// What a failed attempt means for the call.
enum Attempt {
    /// Try the next member.
    Retry(String),
    /// Stop with this error.
    Fail(StoreError),
}

/// The members of one cluster and a pool of connections to each.
#[derive(Debug)]
pub(super) struct Client {
    endpoints: Vec<String>,
    /// The member that answered last: calls start there.
    preferred: AtomicUsize,
    pools: Vec<Mutex<Vec<Connection>>>,
    options: EtcdOptions,
}

impl Client {
    pub(super) fn new(endpoints: Vec<String>, options: EtcdOptions) -> Client {
        let pools = endpoints.iter().map(|_| Mutex::new(Vec::new())).collect();
        Client {
            endpoints,
            preferred: AtomicUsize::new(0),
            pools,
            options,
        }
    }

    /// POSTs `request` to `path` on some member and decodes its answer.
    pub(super) async fn call<Q: Serialize, A: DeserializeOwned>(
        &self,
        path: &str,
        request: &Q,
        effect: Effect,
    ) -> Result<A> {
        let body = serde_json::to_vec(request).map_err(|error| StoreError::Remote {
            code: 0,
            message: format!("cannot encode the request: {error}"),
        })?;
        let started = Instant::now();
        let first = self.preferred.load(Ordering::Relaxed);
        let mut attempt = 0usize;
        loop {
            let member = (first + attempt) % self.endpoints.len();
            let problem = match self.post(member, path, &body).await {
                Ok(response) if response.status == 200 => {
                    self.preferred.store(member, Ordering::Relaxed);
                    return serde_json::from_slice(&response.body).map_err(|error| {
                        StoreError::Remote {
                            code: 0,
                            message: format!("cannot decode etcd's answer to {path}: {error}"),
                        }
                    });
                }
                Ok(response) => classify_refusal(&response, effect),
                Err(HttpError::Connect(error)) | Err(HttpError::Send(error)) => {
                    Attempt::Retry(format!("{}: {error}", self.endpoints[member]))
                }
                Err(HttpError::Receive(error)) => match effect {
                    Effect::Read => Attempt::Retry(format!("{}: {error}", self.endpoints[member])),
                    Effect::Write => Attempt::Fail(StoreError::CommitOutcomeUnknown {
                        reason: format!(
                            "no answer from etcd at {}: {error}",
                            self.endpoints[member]
                        ),
                    }),
                },
            };
            let reason = match problem {
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry(reason) => reason,
            };
            attempt += 1;
            self.next_member(started, attempt, reason).await?;
        }
    }

    /// After a failed attempt (`attempt` of them so far, since `started`): gives up once the
    /// cluster has been out of reach for [`EtcdOptions::unavailable_after`]; else, when every
    /// member was tried, waits a little (an election takes about a second) before the next.
    async fn next_member(&self, started: Instant, attempt: usize, reason: String) -> Result<()> {
        if started.elapsed() >= self.options.unavailable_after {
            return Err(StoreError::Unavailable {
                endpoints: self.endpoints.join(","),
                reason,
            });
        }
        if attempt.is_multiple_of(self.endpoints.len()) {
            let round = (attempt / self.endpoints.len()).min(8) as u64;
            tokio::time::sleep(Duration::from_millis(25 * round)).await;
        }
        Ok(())
    }

    /// POSTs `request` to `path` for an answer that streams (a watch), on a connection of its
    /// own to some member: the connection, its status read, for
    /// [`Connection::next_chunk`]. Tried on each member in turn, like a read.
    pub(super) async fn open_stream<Q: Serialize>(
        &self,
        path: &str,
        request: &Q,
    ) -> Result<Connection> {
        let body = serde_json::to_vec(request).map_err(|error| StoreError::Remote {
            code: 0,
            message: format!("cannot encode the request: {error}"),
        })?;
        let timeout = self.options.call_timeout;
        let started = Instant::now();
        let first = self.preferred.load(Ordering::Relaxed);
        let mut attempt = 0usize;
        loop {
            let member = (first + attempt) % self.endpoints.len();
            let host = &self.endpoints[member];
            let opened = tokio::time::timeout(timeout, async {
                let mut connection = Connection::open(host).await?;
                let status = connection.post_streaming(path, &body).await?;
                Ok::<_, HttpError>((connection, status))
            })
            .await;
            let reason = match opened {
                Ok(Ok((connection, 200))) => return Ok(connection),
                Ok(Ok((_, status))) => format!("{host}: HTTP {status} to {path}"),
                Ok(Err(
                    HttpError::Connect(error) | HttpError::Send(error) | HttpError::Receive(error),
                )) => format!("{host}: {error}"),
                Err(_) => format!("{host}: timed out opening {path}"),
            };
            attempt += 1;
            self.next_member(started, attempt, reason).await?;
        }
    }

    /// One attempt on one member, on a pooled connection when one is alive.
    async fn post(
        &self,
        member: usize,
        path: &str,
        body: &[u8],
    ) -> std::result::Result<Response, HttpError> {
        let timeout = self.options.call_timeout;
        let pooled = self.take_pooled(member);
        let mut connection = match pooled {
            Some(connection) => connection,
            None => tokio::time::timeout(timeout, Connection::open(&self.endpoints[member]))
                .await
                .map_err(|_| HttpError::Connect(timed_out("connecting")))??,
        };
        let response = tokio::time::timeout(timeout, connection.post(path, body))
            .await
            .map_err(|_| HttpError::Receive(timed_out("waiting for the answer")))??;
        if connection.is_reusable() {
            self.put_back(member, connection);
        }
        Ok(response)
    }

    fn take_pooled(&self, member: usize) -> Option<Connection> {
        let mut pool = self.pools[member].lock().ok()?;
        while let Some(connection) = pool.pop() {
            if connection.is_alive() {
                return Some(connection);
            }
        }
        None
    }

    fn put_back(&self, member: usize, connection: Connection) {
        if let Ok(mut pool) = self.pools[member].lock()
            && pool.len() < POOL_SIZE
        {
            pool.push(connection);
        }
    }
}

fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, format!("timed out {what}"))
}

/// What a member's error answer means: a limit or a compacted revision fails the call; a
/// member without a leader, overloaded or behind is skipped; a write that may have been
/// proposed before the member gave up on it has an unknown outcome.
fn classify_refusal(response: &Response, effect: Effect) -> Attempt {
    let body: ErrorBody = serde_json::from_slice(&response.body).unwrap_or_default();
    let message = if body.message.is_empty() {
        body.error.clone()
    } else {
        body.message.clone()
    };
    let message = if message.is_empty() {
        format!(
            "HTTP {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )
    } else {
        message
    };
    if message.contains("too many operations in txn request") {
        return Attempt::Fail(StoreError::ServerLimit {
            limit: "operations per transaction",
            flag: "--max-txn-ops",
            detail: message,
        });
    }
    if message.contains("request is too large") || message.contains("larger than max") {
        return Attempt::Fail(StoreError::ServerLimit {
            limit: "request size",
            flag: "--max-request-bytes",
            detail: message,
        });
    }
    if message.contains("database space exceeded") {
        return Attempt::Fail(StoreError::ServerLimit {
            limit: "storage quota",
            flag: "--quota-backend-bytes",
            detail: message,
        });
    }
    if message.contains("required revision has been compacted") {
        return Attempt::Fail(StoreError::SnapshotTooOld { detail: message });
    }
    // Refused before anything was proposed: safe to send again, to another member.
    let not_proposed = [
        "no leader",
        "too many requests",
        "not capable",
        "future revision",
        "server is stopping",
    ];
    if not_proposed.iter().any(|sign| message.contains(sign)) {
        return Attempt::Retry(message);
    }
    // Gave up waiting on a proposal, or lost the connection to it.
    let maybe_proposed = [
        "timed out",
        "leader changed",
        "transport is closing",
        "connection",
    ];
    if maybe_proposed.iter().any(|sign| message.contains(sign)) || body.code == 14 {
        return match effect {
            Effect::Read => Attempt::Retry(message),
            Effect::Write => Attempt::Fail(StoreError::CommitOutcomeUnknown { reason: message }),
        };
    }
    Attempt::Fail(StoreError::Remote {
        code: body.code,
        message,
    })
}
