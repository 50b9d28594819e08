//! HBase's table attributes that say how the store treats a table's writes, in CREATE TABLE's
//! `WITH (...)` and ALTER TABLE's `SET (...)`: `DURABILITY = 'SKIP_WAL' | 'ASYNC_WAL' |
//! 'SYNC_WAL' | 'FSYNC_WAL' | 'USE_DEFAULT'` and `READONLY = true | false`.
//!
//! A store that cannot honour a durability says so in a notice when the table asks for one
//! (the in-memory store keeps nothing across a restart, the etcd store commits everything
//! through its members' raft log).

use datafusion::sql::sqlparser::ast;
use rowdex_catalog::TableDef;
use rowdex_store::Durability;

use crate::error::{Error, Result};
use crate::session::Session;

/// An attribute read from one `NAME = value` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableAttribute {
    /// `DURABILITY = ...` (None: `USE_DEFAULT`, HBase's name for the database's default).
    Durability(Option<Durability>),
    /// `READONLY = ...`.
    ReadOnly(bool),
}

impl TableAttribute {
    /// The attribute `name = value` sets, if `name` is one of this module's (None: another
    /// option).
    pub(crate) fn read(name: &str, value: &ast::Expr) -> Option<Result<TableAttribute>> {
        let text = option_text(value);
        let bad = |takes: &str| Error::BadTableOption {
            option: format!("{name} = {value} ({takes})"),
        };
        if name.eq_ignore_ascii_case("durability") {
            let durability = match text.as_deref() {
                Some(text) if text.eq_ignore_ascii_case("use_default") => Ok(None),
                Some(text) => Durability::from_name(text).map(Some).ok_or_else(|| {
                    bad("DURABILITY is SKIP_WAL, ASYNC_WAL, SYNC_WAL, FSYNC_WAL or USE_DEFAULT")
                }),
                None => Err(bad("DURABILITY takes a name")),
            };
            return Some(durability.map(TableAttribute::Durability));
        }
        if name.eq_ignore_ascii_case("readonly") {
            let flag = match text.as_deref().map(str::to_ascii_lowercase).as_deref() {
                Some("true" | "on" | "1") => Ok(true),
                Some("false" | "off" | "0") => Ok(false),
                _ => Err(bad("READONLY is true or false")),
            };
            return Some(flag.map(TableAttribute::ReadOnly));
        }
        None
    }

    /// Sets the attribute on `def`.
    pub(crate) fn apply(self, def: &mut TableDef) {
        match self {
            TableAttribute::Durability(durability) => def.durability = durability,
            TableAttribute::ReadOnly(read_only) => def.read_only = read_only,
        }
    }

    /// Tells the session when the store cannot do what the attribute asks.
    pub(crate) fn warn_if_unhonoured(self, session: &Session) {
        let TableAttribute::Durability(Some(durability)) = self else {
            return;
        };
        let capabilities = session.db.store.capabilities();
        if capabilities.honours_durability {
            return;
        }
        if !capabilities.durable {
            session.add_notice(format!(
                "DURABILITY = {durability} has no effect here: the in-memory store keeps \
                 nothing across a restart"
            ));
        } else {
            session.add_notice(format!(
                "DURABILITY = {durability} has no effect here: the etcd store commits every \
                 write through its members' raft log, synced by a quorum (FSYNC_WAL)"
            ));
        }
    }
}

/// An option's value as text: a quoted string, a name, a number or a boolean.
pub(crate) fn option_text(value: &ast::Expr) -> Option<String> {
    match value {
        ast::Expr::Identifier(ident) => Some(ident.value.clone()),
        ast::Expr::Value(value) => match &value.value {
            ast::Value::SingleQuotedString(text) | ast::Value::DoubleQuotedString(text) => {
                Some(text.clone())
            }
            ast::Value::Number(number, _) => Some(number.to_string()),
            ast::Value::Boolean(flag) => Some(flag.to_string()),
            _ => None,
        },
        _ => None,
    }
}
