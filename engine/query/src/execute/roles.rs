//! CREATE / ALTER / DROP ROLE (and USER): the roles `rowdex serve` lets connect. A password is
//! turned into a SCRAM-SHA-256 verifier here, before anything is stored; one given already as
//! a verifier (`SCRAM-SHA-256$...`, as PostgreSQL's `pg_authid` shows it) is kept as it is.

use rowdex_catalog::{CatalogError, RoleChange, RoleDef, ScramVerifier};

use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::command::{Password, RoleOptions};

pub(crate) async fn create_role(
    session: &Session,
    name: &str,
    options: &RoleOptions,
    user: bool,
) -> Result<Output> {
    let role = RoleDef {
        name: name.to_string(),
        login: options.login.unwrap_or(user),
        password: match &options.password {
            Some(Some(password)) => Some(verifier_text(password)?),
            _ => None,
        },
    };
    session.db.catalog.create_role(role).await?;
    Ok(Output::Done)
}

pub(crate) async fn alter_role(
    session: &Session,
    name: &str,
    options: &RoleOptions,
) -> Result<Output> {
    let password = match &options.password {
        Some(Some(password)) => Some(Some(verifier_text(password)?)),
        Some(None) => Some(None),
        None => None,
    };
    let change = RoleChange {
        login: options.login,
        password,
    };
    session.db.catalog.alter_role(name, change).await?;
    Ok(Output::Done)
}

/// Drops each role in turn; IF EXISTS passes over the missing ones.
pub(crate) async fn drop_roles(
    session: &Session,
    names: &[String],
    if_exists: bool,
) -> Result<Output> {
    for name in names {
        match session.db.catalog.drop_role(name).await {
            Err(CatalogError::RoleNotFound { .. }) if if_exists => {}
            dropped => dropped?,
        }
    }
    Ok(Output::Done)
}

/// The verifier to store for a password as written.
fn verifier_text(password: &Password) -> Result<String> {
    if let Some(verifier) = ScramVerifier::parse(&password.0) {
        return Ok(verifier.to_string());
    }
    if password.0.starts_with("SCRAM-SHA-256$")
        || password.0.starts_with("md5") && password.0.len() == 35
    {
        return Err(Error::Unsupported {
            what: "a password given as a verifier other than a well-formed SCRAM-SHA-256 one"
                .to_string(),
        });
    }
    if password.0.is_empty() {
        return Err(Error::Unsupported {
            what: "an empty password (use PASSWORD NULL for none)".to_string(),
        });
    }
    Ok(ScramVerifier::new(&password.0)?.to_string())
}
