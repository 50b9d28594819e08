//! TLS for `rowdex serve --tls-cert FILE --tls-key FILE`: a rustls acceptor (the ring provider
//! pgwire is built with) from PEM files, offered to clients that ask for SSL (PostgreSQL's
//! SSLRequest, or a direct TLS handshake with ALPN `postgresql`). Clients that do not ask still
//! connect in the clear; `sslmode=require` on the client side insists on TLS.

use std::path::PathBuf;
use std::sync::Arc;

use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Result, ServerError};

/// The certificate chain and private key files, both PEM.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The acceptor for `files`; an error names the file that could not be used and why.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor> {
    let tls_error = |path: &PathBuf, reason: String| ServerError::Tls {
        path: path.clone(),
        reason,
    };
    let read = |path: &PathBuf| std::fs::read(path).map_err(|e| tls_error(path, e.to_string()));
    let cert_pem = read(&files.cert)?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| tls_error(&files.cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(tls_error(
            &files.cert,
            "no certificate in the file".to_string(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&read(&files.key)?)
        .map_err(|e| tls_error(&files.key, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(&files.cert, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| tls_error(&files.key, e.to_string()))?;
    // A client connecting with direct TLS (PostgreSQL 17's sslnegotiation=direct) must name
    // the protocol.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
