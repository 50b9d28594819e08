//! The start of a connection: protocol negotiation, the session parameters reported to the
//! client, its process id and cancel key. Connections are trusted (no password): the server
//! refuses to listen anywhere but on loopback until password authentication exists. A
//! connection over `--max-connections` is refused with PostgreSQL's `too_many_connections`.
//!
//! A refused startup sends its FATAL error, closes the connection's sending side and stays
//! refused: every later message from that client is ignored until it goes (pgwire would
//! otherwise treat the connection as ready for queries after an error).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{ClientInfo, METADATA_APPLICATION_NAME};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::cancel::CancelRegistry;
use crate::settings::defaults;
use crate::sqlstate::error_info;
use crate::state::SessionState;

/// Accepts every startup on a loopback listener, giving the connection its cancel key.
pub struct TrustStartup {
    cancels: Arc<CancelRegistry>,
    state: Arc<SessionState>,
}

impl TrustStartup {
    pub fn new(cancels: Arc<CancelRegistry>, state: Arc<SessionState>) -> Self {
        TrustStartup { cancels, state }
    }
}

/// The parameters reported at startup: rowdex's defaults, with the client's application name.
struct ReportedParameters;

impl ServerParameterProvider for ReportedParameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let mut parameters: HashMap<String, String> = defaults()
            .into_iter()
            .filter(|(name, _)| {
                !matches!(
                    *name,
                    "extra_float_digits"
                        | "search_path"
                        | "transaction_isolation"
                        | "default_transaction_isolation"
                        | "max_identifier_length"
                )
            })
            .map(|(name, value)| (name.to_string(), value))
            .collect();
        if let Some(name) = client.metadata().get(METADATA_APPLICATION_NAME) {
            parameters.insert("application_name".to_string(), name.clone());
        }
        Some(parameters)
    }
}

#[async_trait]
impl StartupHandler for TrustStartup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(startup) = &message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            let (pid, secret_key, cancel_key) = self.cancels.register(&*client);
            client.set_pid_and_secret_key(pid, secret_key);
            self.state.set_cancel_key(cancel_key);
            finish_authentication(client, &ReportedParameters).await?;
        }
        Ok(())
    }
}

/// Refuses a connection over the limit, with PostgreSQL's error, and closes it.
#[derive(Debug, Default)]
pub struct TooManyConnections {
    refused: Refusal,
}

#[async_trait]
impl StartupHandler for TooManyConnections {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        _message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.refused
            .refuse(
                client,
                error_info("53300", "sorry, too many clients already"),
            )
            .await
    }
}

/// A connection whose startup was refused: the refusal is sent once, and the connection then
/// never leaves startup, so nothing the client sends afterwards is run.
#[derive(Debug, Default)]
pub struct Refusal {
    sent: AtomicBool,
}

impl Refusal {
    /// Sends `info` as a FATAL error (the first time) and closes the sending side; the
    /// connection stays in startup until the client goes or the startup timeout ends it.
    pub async fn refuse<C>(&self, client: &mut C, mut info: ErrorInfo) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.sent.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        info.severity = "FATAL".to_string();
        client
            .send(PgWireBackendMessage::ErrorResponse(info.into()))
            .await?;
        client.close().await?;
        Ok(())
    }
}
