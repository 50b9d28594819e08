//! Replies to the extended protocol's messages sent together: PostgreSQL answers
//! Parse/Bind/Describe/Execute/Close into its output buffer and writes it out at Sync (or
//! Flush, or when the buffer fills), one packet for a whole round trip. pgwire's default
//! handlers flush after most replies, four writes to the socket for a prepared point read.
//!
//! [`Batched`] lends a handler the client with flushing held back: messages are only
//! buffered (the socket's framing still writes when its buffer passes its size limit, so
//! memory stays bounded). Sync and Flush, which pgwire handles on the client itself, write
//! everything out. A reply the client waits for before it sends more (CopyInResponse) is
//! flushed by the caller.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Sink;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, SessionExtensions};
use pgwire::messages::ProtocolVersion;
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer;

/// A client whose flushes are deferred to the protocol's Sync or Flush.
pub struct Batched<'a, C> {
    client: &'a mut C,
}

impl<'a, C> Batched<'a, C> {
    pub fn new(client: &'a mut C) -> Self {
        Batched { client }
    }
}

impl<C, M> Sink<M> for Batched<'_, C>
where
    C: Sink<M> + Unpin,
{
    type Error = C::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut *self.client).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: M) -> Result<(), Self::Error> {
        Pin::new(&mut *self.client).start_send(item)
    }

    /// Held back: the message stays buffered until Sync or Flush.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut *self.client).poll_close(cx)
    }
}

impl<C: ClientPortalStore> ClientPortalStore for Batched<'_, C> {
    type PortalStore = C::PortalStore;

    fn portal_store(&self) -> &Self::PortalStore {
        self.client.portal_store()
    }
}

impl<C: ClientInfo> ClientInfo for Batched<'_, C> {
    fn socket_addr(&self) -> SocketAddr {
        self.client.socket_addr()
    }

    fn is_secure(&self) -> bool {
        self.client.is_secure()
    }

    fn protocol_version(&self) -> ProtocolVersion {
        self.client.protocol_version()
    }

    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.client.set_protocol_version(version);
    }

    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.client.pid_and_secret_key()
    }

    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.client.set_pid_and_secret_key(pid, secret_key);
    }

    fn state(&self) -> PgWireConnectionState {
        self.client.state()
    }

    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.client.set_state(new_state);
    }

    fn transaction_status(&self) -> TransactionStatus {
        self.client.transaction_status()
    }

    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.client.set_transaction_status(new_status);
    }

    fn metadata(&self) -> &HashMap<String, String> {
        self.client.metadata()
    }

    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.client.metadata_mut()
    }

    fn session_extensions(&self) -> &SessionExtensions {
        self.client.session_extensions()
    }

    fn sni_server_name(&self) -> Option<&str> {
        self.client.sni_server_name()
    }

    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        self.client.client_certificates()
    }
}
