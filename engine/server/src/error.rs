//! The server's error type: what can stop `rowdex serve` itself (as opposed to a statement,
//! whose errors go back to its client as PostgreSQL error responses, see `sqlstate`).

use std::net::SocketAddr;

pub type Result<T> = std::result::Result<T, ServerError>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "rowdex serve accepts connections without a password (trust), which is only allowed on a loopback address; {addr} is not one"
    )]
    TrustOffLoopback { addr: SocketAddr },
    #[error("waiting for a signal failed: {0}")]
    Signal(std::io::Error),
    #[error(transparent)]
    Database(#[from] rowdex::Error),
}
