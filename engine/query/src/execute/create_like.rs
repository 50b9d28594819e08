//! `CREATE TABLE t (LIKE other [INCLUDING DEFAULTS])` (PostgreSQL) and `CREATE TABLE t LIKE
//! other` (MySQL): a new, empty table with the other's columns, types and NOT NULLs, and, since
//! in rowdex the primary key is how rows are laid out, its primary key and salting too (as
//! MySQL's LIKE does; PostgreSQL copies a key only with INCLUDING INDEXES). DEFAULTs are copied
//! with INCLUDING DEFAULTS, except those drawing from a sequence (which stays the other
//! table's). Indexes, CHECKs, column families, TTL, versions and triggers are not copied.

use datafusion::sql::sqlparser::ast::{
    CreateTable, CreateTableLikeDefaults, CreateTableLikeKind, Statement,
};

use crate::error::{Error, Result};
use crate::execute::ddl::create_table;
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::object_name;
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::write::constraints::sequence_of_default;

pub(crate) async fn create_table_like(session: &Session, create: &CreateTable) -> Result<Output> {
    let like = match &create.like {
        Some(CreateTableLikeKind::Parenthesized(like) | CreateTableLikeKind::Plain(like)) => like,
        None => {
            return Err(Error::Unsupported {
                what: "CREATE TABLE without LIKE here".to_string(),
            });
        }
    };
    if !create.columns.is_empty() || !create.constraints.is_empty() {
        return Err(Error::Unsupported {
            what: "CREATE TABLE (LIKE ...) beside column definitions".to_string(),
        });
    }
    let source = session.table_def(&object_name(&like.name)?)?;
    let with_defaults = matches!(like.defaults, Some(CreateTableLikeDefaults::Including));
    let mut items = Vec::new();
    for (_, column) in source.visible_columns() {
        let mut item = format!("{} {}", quoted(&column.name), column.data_type);
        if !column.nullable {
            item.push_str(" NOT NULL");
        }
        if with_defaults
            && let Some(default) = &column.default
            && sequence_of_default(default).is_none()
        {
            item.push_str(&format!(" DEFAULT {default}"));
        }
        items.push(item);
    }
    let key: Vec<String> = source
        .key
        .iter()
        .filter(|k| !source.columns[k.column].hidden)
        .map(|k| {
            let name = quoted(&source.columns[k.column].name);
            if k.desc { format!("{name} DESC") } else { name }
        })
        .collect();
    if !key.is_empty() {
        items.push(format!("PRIMARY KEY ({})", key.join(", ")));
    }
    let mut sql = format!(
        "CREATE TABLE {}{} ({})",
        if create.if_not_exists {
            "IF NOT EXISTS "
        } else {
            ""
        },
        create.name,
        items.join(", ")
    );
    if source.salt_buckets > 0 {
        sql.push_str(&format!(" WITH (SALT_BUCKETS = {}", source.salt_buckets));
        if !source.salt_on.is_empty() {
            let on: Vec<String> = source
                .salt_on
                .iter()
                .filter_map(|&k| source.key.get(k))
                .map(|k| quoted(&source.columns[k.column].name))
                .collect();
            sql.push_str(&format!(", SALT_ON = ({})", on.join(", ")));
        }
        sql.push(')');
    }
    match split_statements(&sql)?.pop() {
        Some(ParsedStatement::Sql {
            statement,
            families,
            ..
        }) => match statement.as_ref() {
            Statement::CreateTable(copy) => create_table(session, copy, &families).await,
            _ => Err(Error::Unsupported { what: sql }),
        },
        _ => Err(Error::Unsupported { what: sql }),
    }
}

/// A name as a quoted identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
