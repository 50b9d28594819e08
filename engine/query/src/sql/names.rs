//! Names as the catalog spells them: identifiers lowercased unless quoted (DataFusion's rule,
//! so both sides agree), object names, the columns a statement names, and a statement's kind
//! for messages.

use datafusion::sql::sqlparser::ast::{Ident, ObjectName, ObjectNamePart, Statement};
use rowdex_catalog::TableDef;

use crate::error::{Error, Result};

/// An identifier as DataFusion resolves it: lowercased unless quoted.
pub(crate) fn ident_name(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The table name an object name refers to: its last part, lowercased unless quoted (the same
/// normalisation DataFusion applies, so both sides agree).
pub(crate) fn object_name(name: &ObjectName) -> Result<String> {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(ident)) => Ok(ident_name(ident)),
        _ => Err(Error::Unsupported {
            what: format!("the object name {name}"),
        }),
    }
}

/// The first two words of a statement (`CREATE TABLE`), to name it in an error.
pub(crate) fn statement_kind(statement: &Statement) -> String {
    let text = statement.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    words.join(" ")
}

/// The position of the visible column `name` of `table` (hidden columns are never named).
pub(crate) fn visible_column(table: &TableDef, name: &str) -> Result<usize> {
    table
        .column_index(name)
        .filter(|i| !table.columns[*i].hidden)
        .ok_or_else(|| Error::ColumnNotFound {
            table: table.name.clone(),
            column: name.to_string(),
        })
}

/// The columns a write names (`INSERT INTO t (a, b)`, `COPY t (a, b)`), every visible column
/// when it names none; a column named twice is an error.
pub(crate) fn target_columns(table: &TableDef, names: &[ObjectName]) -> Result<Vec<usize>> {
    if names.is_empty() {
        return Ok(table.visible_columns().map(|(i, _)| i).collect());
    }
    let mut targets = Vec::with_capacity(names.len());
    for name in names {
        let column = object_name(name)?;
        let position = visible_column(table, &column)?;
        if targets.contains(&position) {
            return Err(Error::DuplicateTarget { column });
        }
        targets.push(position);
    }
    Ok(targets)
}

/// Aggregate functions by name (a column inside one is not bare; rows of a query calling one
/// cannot be locked).
pub(crate) const AGGREGATES: [&str; 16] = [
    "count",
    "sum",
    "total",
    "min",
    "max",
    "avg",
    "group_concat",
    "string_agg",
    "array_agg",
    "first_value",
    "last_value",
    "any_value",
    "bool_and",
    "bool_or",
    "median",
    "stddev",
];
