//! The catalog's roles. Unlike tables they are not cached: a login reads its role from the
//! store, so a password changed by one process holds at once for every process serving the
//! same store. Each change is one transaction that reads the role's key, so two sessions
//! creating one role cannot both succeed.

use futures::StreamExt;
use rowdex_store::{Direction, KeyRange, Transaction, scan_stream};

use crate::catalog::Catalog;
use crate::error::{CatalogError, Result};
use crate::keyspace::{self, ROLE_PREFIX};
use crate::role::RoleDef;

/// A change to a role's attributes (ALTER ROLE); None leaves one as it is.
#[derive(Debug, Default, Clone)]
pub struct RoleChange {
    pub login: Option<bool>,
    /// Some(None) removes the password.
    pub password: Option<Option<String>>,
}

impl Catalog {
    /// The role named `name`, read from the store.
    pub async fn role(&self, name: &str) -> Result<Option<RoleDef>> {
        let bytes = self.store.snapshot().get(&keyspace::role_key(name)).await?;
        bytes.map(|bytes| decode_role(name, &bytes)).transpose()
    }

    /// Every role, by name.
    pub async fn roles(&self) -> Result<Vec<RoleDef>> {
        let mut roles = Vec::new();
        let mut entries = scan_stream(
            self.store.snapshot(),
            KeyRange::prefix(ROLE_PREFIX),
            Direction::Forward,
            256,
        );
        while let Some(entry) = entries.next().await {
            let (key, value) = entry?;
            let name = String::from_utf8_lossy(&key[ROLE_PREFIX.len()..]).into_owned();
            roles.push(decode_role(&name, &value)?);
        }
        Ok(roles)
    }

    /// Stores a new role; `RoleExists` if the name is taken.
    pub async fn create_role(&self, role: RoleDef) -> Result<()> {
        let mut tx = self.store.begin().await?;
        let key = keyspace::role_key(&role.name);
        if tx.get(&key).await?.is_some() {
            return Err(CatalogError::RoleExists { role: role.name });
        }
        put_role(tx.as_mut(), &role)?;
        tx.commit().await?;
        Ok(())
    }

    /// Changes a role's attributes; `RoleNotFound` if there is no such role.
    pub async fn alter_role(&self, name: &str, change: RoleChange) -> Result<()> {
        let mut tx = self.store.begin().await?;
        let bytes =
            tx.get(&keyspace::role_key(name))
                .await?
                .ok_or_else(|| CatalogError::RoleNotFound {
                    role: name.to_string(),
                })?;
        let mut role = decode_role(name, &bytes)?;
        if let Some(login) = change.login {
            role.login = login;
        }
        if let Some(password) = change.password {
            role.password = password;
        }
        put_role(tx.as_mut(), &role)?;
        tx.commit().await?;
        Ok(())
    }

    /// Removes a role; `RoleNotFound` if there is no such role.
    pub async fn drop_role(&self, name: &str) -> Result<()> {
        if !self.delete_present(keyspace::role_key(name)).await? {
            return Err(CatalogError::RoleNotFound {
                role: name.to_string(),
            });
        }
        Ok(())
    }
}

fn put_role(tx: &mut dyn Transaction, role: &RoleDef) -> Result<()> {
    let bytes = serde_json::to_vec(role).map_err(|source| CatalogError::Corrupt {
        what: format!("role {}", role.name),
        source,
    })?;
    tx.put(keyspace::role_key(&role.name), bytes);
    Ok(())
}

fn decode_role(name: &str, bytes: &[u8]) -> Result<RoleDef> {
    serde_json::from_slice(bytes).map_err(|source| CatalogError::Corrupt {
        what: format!("role {name}"),
        source,
    })
}
