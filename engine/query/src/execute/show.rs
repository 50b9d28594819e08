//! SHOW TABLES and DESCRIBE (columns, key and index membership): the catalog as result sets.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use rowdex_catalog::TableDef;

use crate::error::Result;
use crate::output::Output;
use crate::session::Session;

/// The primary key as `a ASC, b DESC` (the hidden row id shows as `_rowid`).
fn key_text(def: &TableDef) -> String {
    def.key
        .iter()
        .map(|k| {
            let order = if k.desc { "DESC" } else { "ASC" };
            format!("{} {order}", def.columns[k.column].name)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn show_tables(session: &Session) -> Result<Output> {
    let tables = session.schema_view().tables();
    let schema = Arc::new(Schema::new(vec![
        Field::new("table_name", ArrowType::Utf8, false),
        Field::new("primary_key", ArrowType::Utf8, false),
        Field::new("salt_buckets", ArrowType::Int64, false),
    ]));
    let names: ArrayRef = Arc::new(StringArray::from_iter_values(
        tables.iter().map(|t| t.name.clone()),
    ));
    let keys: ArrayRef = Arc::new(StringArray::from_iter_values(
        tables.iter().map(|t| key_text(t)),
    ));
    let salts: ArrayRef = Arc::new(Int64Array::from_iter_values(
        tables.iter().map(|t| i64::from(t.salt_buckets)),
    ));
    let batch = RecordBatch::try_new(schema.clone(), vec![names, keys, salts])?;
    Ok(Output::Rows {
        schema,
        batches: vec![batch],
    })
}

pub(crate) fn describe(session: &Session, table: &str) -> Result<Output> {
    let def = session.table_def(table)?;
    let columns: Vec<_> = def.visible_columns().collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("column_name", ArrowType::Utf8, false),
        Field::new("data_type", ArrowType::Utf8, false),
        Field::new("nullable", ArrowType::Utf8, false),
        Field::new("key", ArrowType::Utf8, false),
    ]));
    let primary = |i: usize| match def.key_position(i) {
        Some(position) => {
            let order = if def.key[position].desc {
                "DESC"
            } else {
                "ASC"
            };
            let salt = if def.is_salted() && def.salt_key_positions().contains(&position) {
                format!(" (salted, {} buckets)", def.salt_buckets)
            } else {
                String::new()
            };
            format!("PRIMARY KEY {} {order}{salt}", position + 1)
        }
        None => String::new(),
    };
    // The key column also names every index the column belongs to, in creation order.
    let key = |i: usize| {
        let mut parts = vec![primary(i)];
        parts.retain(|p| !p.is_empty());
        if let Some(generation) = def.columns.get(i).and_then(|c| c.generation.as_ref()) {
            parts.push(format!("GENERATED ALWAYS AS ({generation}) STORED"));
        }
        if let Some(family) = def.columns.get(i).map(|c| c.family).filter(|f| *f > 0) {
            parts.push(format!("FAMILY {}", def.family_name(family)));
        }
        for index in &def.indexes {
            if let Some(position) = index.columns.iter().position(|k| k.column == i) {
                let order = if index.columns[position].desc {
                    "DESC"
                } else {
                    "ASC"
                };
                let unique = if index.unique { "UNIQUE " } else { "" };
                parts.push(format!(
                    "{unique}INDEX {} {} {order}",
                    index.name,
                    position + 1
                ));
            } else if index.include.contains(&i) {
                parts.push(format!("INCLUDED IN {}", index.name));
            }
        }
        parts.join("; ")
    };
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            columns.iter().map(|(_, c)| c.name.clone()),
        )),
        Arc::new(StringArray::from_iter_values(
            columns.iter().map(|(_, c)| c.data_type.to_string()),
        )),
        Arc::new(StringArray::from_iter_values(
            columns
                .iter()
                .map(|(_, c)| if c.nullable { "YES" } else { "NO" }),
        )),
        Arc::new(StringArray::from_iter_values(
            columns.iter().map(|(i, _)| key(*i)),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    Ok(Output::Rows {
        schema,
        batches: vec![batch],
    })
}
