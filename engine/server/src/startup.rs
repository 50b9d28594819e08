//! The start of a connection: protocol negotiation, authentication, the session parameters
//! reported to the client, its process id and cancel key.
//!
//! Authentication is `trust` (any user name, no password; only allowed on a loopback
//! listener) or `scram-sha-256` against the roles in rowdex's catalog (`CREATE USER name WITH
//! PASSWORD '...'`). A user who cannot log in by password (no such role, no password) goes
//! through the same exchange with a made-up verifier and fails at the same point with the same
//! error as a wrong password, so the answer does not tell which names exist. A role with
//! NOLOGIN that gives its right password is told it may not log in.
//!
//! A refused startup sends its FATAL error, closes the connection's sending side and stays
//! refused: every later message from that client is ignored until it goes (pgwire would
//! otherwise treat the connection as ready for queries after an error). A connection over
//! `--max-connections` is refused with PostgreSQL's `too_many_connections`.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{ClientInfo, METADATA_APPLICATION_NAME, METADATA_USER, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use rowdex::Database;
use rowdex_catalog::ScramVerifier;

use crate::cancel::CancelRegistry;
use crate::scram::{MECHANISM, ScramFailure, ServerFirst, mock_verifier, server_first};
use crate::settings::{defaults, startup_parameters};
use crate::sqlstate::{PROTOCOL_VIOLATION, error_info};
use crate::state::{SessionState, time_zone_setting};

/// How connections prove who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// Every user name is accepted without a password (loopback listeners only).
    Trust,
    /// A password checked by SCRAM-SHA-256 against the role's verifier.
    ScramSha256,
}

/// What the startups of a server's connections share.
pub struct Authenticator {
    method: AuthMethod,
    db: Database,
    cancels: Arc<CancelRegistry>,
    /// Salts the made-up verifiers of users who cannot log in; random per server.
    mock_secret: [u8; 32],
}

impl Authenticator {
    pub fn new(method: AuthMethod, db: &Database, cancels: Arc<CancelRegistry>) -> Self {
        let mut mock_secret = [0; 32];
        // Without random bytes the made-up salts are merely predictable: a client could then
        // tell an unknown name from a known one, nothing more.
        let _ = getrandom::fill(&mut mock_secret);
        Authenticator {
            method,
            db: db.clone(),
            cancels,
            mock_secret,
        }
    }
}

/// One connection's startup.
pub struct Startup {
    auth: Arc<Authenticator>,
    state: Arc<SessionState>,
    exchange: Mutex<Exchange>,
    refusal: Refusal,
}

/// Where a password exchange stands.
enum Exchange {
    /// Before the startup message, or after the exchange (either way).
    Idle,
    /// AuthenticationSASL sent; waiting for the client's first message.
    AwaitingFirst { user: String },
    /// The server's first message sent; waiting for the client's proof.
    AwaitingFinal {
        user: String,
        first: ServerFirst,
        verifier: ScramVerifier,
        /// The role exists, has a password and may log in; otherwise the exchange fails.
        login: Login,
    },
}

/// What a correct proof leads to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Login {
    Allowed,
    /// The role exists with a password but NOLOGIN.
    NotPermitted,
    /// No such role, or no password: the verifier was made up.
    NoPassword,
}

impl Startup {
    pub fn new(auth: Arc<Authenticator>, state: Arc<SessionState>) -> Self {
        Startup {
            auth,
            state,
            exchange: Mutex::new(Exchange::Idle),
            refusal: Refusal::default(),
        }
    }

    fn take_exchange(&self) -> Exchange {
        let mut exchange = self.exchange.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *exchange, Exchange::Idle)
    }

    fn set_exchange(&self, next: Exchange) {
        *self.exchange.lock().unwrap_or_else(PoisonError::into_inner) = next;
    }

    /// Lets the client in: its process id and cancel key, the parameters, ReadyForQuery.
    async fn accept<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (pid, secret_key, cancel_key) = self.auth.cancels.register(&*client);
        self.state
            .register_backend(pid, secret_key.clone(), &*client);
        client.set_pid_and_secret_key(pid, secret_key);
        self.state.set_cancel_key(cancel_key);
        finish_authentication(client, &ReportedParameters).await
    }

    /// The startup message: the user it names is let in (trust) or asked for its password.
    async fn on_startup_message<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let user = client.metadata().get(METADATA_USER).cloned();
        let Some(user) = user.filter(|u| !u.is_empty()) else {
            let info = error_info(
                "28000",
                "no PostgreSQL user name specified in startup packet",
            );
            return self.refusal.refuse(client, info).await;
        };
        match self.auth.method {
            AuthMethod::Trust => self.accept(client).await,
            AuthMethod::ScramSha256 => {
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                client
                    .send(PgWireBackendMessage::Authentication(Authentication::SASL(
                        vec![MECHANISM.to_string()],
                    )))
                    .await?;
                self.set_exchange(Exchange::AwaitingFirst { user });
                Ok(())
            }
        }
    }

    /// The verifier to run the exchange with for `user`, and what a correct proof leads to.
    async fn verifier_of(&self, user: &str) -> Result<(ScramVerifier, Login), ErrorInfo> {
        let role = self
            .auth
            .db
            .role(user)
            .await
            .map_err(|e| error_info("58000", format!("cannot read the roles: {e}")))?;
        Ok(
            match role.as_ref().and_then(|r| r.verifier().map(|v| (r, v))) {
                Some((role, verifier)) if role.login => (verifier, Login::Allowed),
                Some((_, verifier)) => (verifier, Login::NotPermitted),
                None => (
                    mock_verifier(&self.auth.mock_secret, user),
                    Login::NoPassword,
                ),
            },
        )
    }

    /// A SASL message from the client, in the exchange's current step.
    async fn on_sasl_message<C>(
        &self,
        client: &mut C,
        message: pgwire::messages::startup::PasswordMessageFamily,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self.take_exchange() {
            Exchange::AwaitingFirst { user } => {
                let initial = message.into_sasl_initial_response()?;
                if initial.auth_method != MECHANISM {
                    let info = error_info(
                        PROTOCOL_VIOLATION,
                        format!(
                            "SASL mechanism {} is not supported; use {MECHANISM}",
                            initial.auth_method
                        ),
                    );
                    return self.refusal.refuse(client, info).await;
                }
                let (verifier, login) = match self.verifier_of(&user).await {
                    Ok(found) => found,
                    Err(info) => return self.refusal.refuse(client, info).await,
                };
                let data = initial.data.unwrap_or_default();
                let first = match server_first(&data, &verifier) {
                    Ok(first) => first,
                    Err(failure) => return self.refuse_exchange(client, &user, failure).await,
                };
                client
                    .send(PgWireBackendMessage::Authentication(
                        Authentication::SASLContinue(Bytes::from(first.message.clone())),
                    ))
                    .await?;
                self.set_exchange(Exchange::AwaitingFinal {
                    user,
                    first,
                    verifier,
                    login,
                });
                Ok(())
            }
            Exchange::AwaitingFinal {
                user,
                first,
                verifier,
                login,
            } => {
                let response = message.into_sasl_response()?;
                let server_final = match first.server_final(&response.data, &verifier) {
                    Ok(server_final) => server_final,
                    Err(failure) => return self.refuse_exchange(client, &user, failure).await,
                };
                match login {
                    Login::Allowed => {
                        client
                            .feed(PgWireBackendMessage::Authentication(
                                Authentication::SASLFinal(Bytes::from(server_final)),
                            ))
                            .await?;
                        self.accept(client).await
                    }
                    Login::NotPermitted => {
                        let info = error_info(
                            "28000",
                            format!("role \"{user}\" is not permitted to log in"),
                        );
                        self.refusal.refuse(client, info).await
                    }
                    // A made-up verifier's password is known to no one; should a proof match
                    // it anyway, the user still has no password to log in with.
                    Login::NoPassword => {
                        self.refuse_exchange(client, &user, ScramFailure::WrongProof)
                            .await
                    }
                }
            }
            Exchange::Idle => {
                let info = error_info(PROTOCOL_VIOLATION, "unexpected password message");
                self.refusal.refuse(client, info).await
            }
        }
    }

    /// Refuses a failed exchange: PostgreSQL's 28P01 for a wrong proof, 08P01 for a message
    /// that broke the protocol.
    async fn refuse_exchange<C>(
        &self,
        client: &mut C,
        user: &str,
        failure: ScramFailure,
    ) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let info = match failure {
            ScramFailure::WrongProof => error_info(
                "28P01",
                format!("password authentication failed for user \"{user}\""),
            ),
            ScramFailure::Malformed(reason) => error_info(
                PROTOCOL_VIOLATION,
                format!("malformed SCRAM message: {reason}"),
            ),
        };
        self.refusal.refuse(client, info).await
    }
}

#[async_trait]
impl StartupHandler for Startup {
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
        if self.refusal.was_sent() {
            return Ok(());
        }
        match message {
            PgWireFrontendMessage::Startup(startup) => {
                protocol_negotiation(client, &startup).await?;
                save_startup_parameters_to_metadata(client, &startup);
                self.on_startup_message(client).await
            }
            PgWireFrontendMessage::PasswordMessageFamily(password) => {
                self.on_sasl_message(client, password).await
            }
            _ => {
                let info = error_info(PROTOCOL_VIOLATION, "expected a startup or password message");
                self.refusal.refuse(client, info).await
            }
        }
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
        // What the client asked for at startup is what it is told (drivers read TimeZone to
        // place the instants they receive).
        for (name, value) in startup_parameters(client.metadata()) {
            if name.eq_ignore_ascii_case("timezone") {
                if let Ok(zone) = time_zone_setting(&value) {
                    parameters.insert("TimeZone".to_string(), zone.name());
                }
            } else if let Some(known) = parameters
                .keys()
                .find(|known| known.eq_ignore_ascii_case(&name))
                .cloned()
            {
                parameters.insert(known, value);
            }
        }
        Some(parameters)
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
    fn was_sent(&self) -> bool {
        self.sent.load(Ordering::Acquire)
    }

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
