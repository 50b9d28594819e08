//! Cancel requests. Each connection is given a process id and a secret key at startup; a
//! client cancels its running statement by opening a second connection that sends them back
//! (psql's Ctrl-C, a driver's `cancel_query`). The registry is shared by every connection of a
//! server: the ids are unique within it, and a request reaches the connection its key names.

use std::sync::Arc;

use async_trait::async_trait;
use futures::channel::oneshot;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::{
    ClientInfo, ConnectionGuard, ConnectionHandle, ConnectionManager, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;

/// The server's process ids and cancel keys, and the connections they name.
#[derive(Debug, Default)]
pub struct CancelRegistry {
    ids: RandomPidSecretKeyGenerator,
    connections: Arc<ConnectionManager>,
}

/// One connection's entry in the registry, removed when the connection ends.
#[derive(Debug)]
pub struct CancelKey {
    handle: Arc<ConnectionHandle>,
    _registered: ConnectionGuard,
}

impl CancelRegistry {
    /// A new process id and secret key for `client`, registered for cancel requests.
    pub fn register(&self, client: &dyn ClientInfo) -> (i32, SecretKey, CancelKey) {
        let (pid, secret) = self.ids.generate(client);
        let (handle, registered) = self.connections.register(pid, secret.clone());
        (
            pid,
            secret,
            CancelKey {
                handle,
                _registered: registered,
            },
        )
    }
}

impl CancelRegistry {
    /// Cancels what connection `pid` runs, if `secret` is its key (`pg_cancel_backend`).
    pub async fn cancel(&self, pid: i32, secret: &SecretKey) {
        self.connections.cancel(pid, secret).await;
    }
}

impl CancelKey {
    /// Arms the key for the statement about to run: the receiver completes if a cancel
    /// request for this connection arrives while it runs (a request between statements
    /// cancels nothing, as in PostgreSQL).
    pub async fn arm(&self) -> oneshot::Receiver<()> {
        self.handle.start_query().await
    }
}

#[async_trait]
impl CancelHandler for CancelRegistry {
    /// A request with an unknown id or a wrong key is ignored, as PostgreSQL ignores it.
    async fn on_cancel_request(&self, request: CancelRequest) {
        self.connections
            .cancel(request.pid, &request.secret_key)
            .await;
    }
}
