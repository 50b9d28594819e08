//! The start of a connection: protocol negotiation, the session parameters reported to the
//! client, its process id and cancel key. Connections are trusted (no password): the server
//! refuses to listen anywhere but on loopback until password authentication exists. A
//! connection over `--max-connections` is refused with PostgreSQL's `too_many_connections`.

use std::collections::HashMap;
use std::fmt::Debug;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{
    ClientInfo, METADATA_APPLICATION_NAME, PidSecretKeyGenerator, RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::settings::defaults;
use crate::sqlstate::error_info;

/// Accepts every startup on a loopback listener.
#[derive(Debug, Default)]
pub struct TrustStartup {
    pids: RandomPidSecretKeyGenerator,
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
            let (pid, secret_key) = self.pids.generate(client);
            client.set_pid_and_secret_key(pid, secret_key);
            finish_authentication(client, &ReportedParameters).await?;
        }
        Ok(())
    }
}

/// Refuses a connection over the limit, with PostgreSQL's error, and closes it.
#[derive(Debug, Default)]
pub struct TooManyConnections;

#[async_trait]
impl StartupHandler for TooManyConnections {
    async fn on_startup<C>(
        &self,
        _client: &mut C,
        _message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut info = error_info("53300", "sorry, too many clients already");
        info.severity = "FATAL".to_string();
        Err(PgWireError::UserError(Box::new(info)))
    }
}
