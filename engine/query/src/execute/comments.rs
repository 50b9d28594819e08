//! `COMMENT ON TABLE | VIEW | COLUMN | INDEX ... IS '...'`, as migration tools and ORMs emit it
//! (Alembic, SQLAlchemy's `comment=`): the object must exist, as in PostgreSQL, but rowdex
//! keeps no comments yet, so the statement changes nothing and says so with a notice
//! (`pg_description` stays empty, and reflection reads no comment back).

use datafusion::sql::sqlparser::ast::{CommentObject, ObjectName};

use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::{ident_name, object_name};

pub(crate) fn comment(
    session: &Session,
    object_type: &CommentObject,
    name: &ObjectName,
    if_exists: bool,
) -> Result<Output> {
    let schema = session.schema_view();
    let exists = match object_type {
        CommentObject::Table | CommentObject::View => {
            let name = object_name(name)?;
            let found = schema.table(&name).is_some() || schema.view(&name).is_some();
            found
                .then_some(())
                .ok_or(Error::TableNotFound { table: name })
        }
        CommentObject::Index => {
            let name = object_name(name)?;
            let found = schema.find_index(&name).is_some();
            found
                .then_some(())
                .ok_or(Error::IndexNotFound { index: name })
        }
        CommentObject::Column => {
            let parts: Vec<String> = name
                .0
                .iter()
                .filter_map(|part| part.as_ident().map(ident_name))
                .collect();
            let [.., table, column] = parts.as_slice() else {
                return Err(Error::Unsupported {
                    what: format!("COMMENT ON COLUMN {name} (name it table.column)"),
                });
            };
            let def = session.table_def(table)?;
            def.visible_position(column)
                .map(|_| ())
                .map_err(|_| Error::ColumnNotFound {
                    table: table.clone(),
                    column: column.clone(),
                })
        }
        // The database, the schema, roles and the rest: nothing to look up here.
        _ => Ok(()),
    };
    match exists {
        Err(_) if if_exists => {}
        Err(error) => return Err(error),
        Ok(()) => {}
    }
    session.add_notice(format!(
        "COMMENT ON {object_type} {name} has no effect: rowdex keeps no comments"
    ));
    Ok(Output::Done)
}
