//! Roles: who may connect to `rowdex serve`, and with which password. A role is a name, whether
//! it may log in (`CREATE USER` is `CREATE ROLE ... LOGIN`), and its password kept as a SCRAM
//! verifier, never as the password itself. rowdex has no privileges: every role that logs in
//! may do everything.

use serde::{Deserialize, Serialize};

use crate::scram::ScramVerifier;

/// One role, as stored in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleDef {
    pub name: String,
    /// May start a session (PostgreSQL's `rolcanlogin`).
    pub login: bool,
    /// The password's verifier in PostgreSQL's text form; None: no password, so no password
    /// login.
    pub password: Option<String>,
}

impl RoleDef {
    /// The password's verifier, if the role has a password (and it reads as one).
    pub fn verifier(&self) -> Option<ScramVerifier> {
        self.password.as_deref().and_then(ScramVerifier::parse)
    }
}
