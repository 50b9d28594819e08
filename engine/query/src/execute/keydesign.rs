//! The row-key advisor: what a table's keys look like in bytes (`EXPLAIN KEY t`), and the
//! warnings CREATE TABLE and CREATE INDEX give for designs that will hurt (how rows spread over
//! key ranges: `key_spread`).

pub(crate) mod key_spread;

use rowdex_catalog::{DataType, IndexDef, KeyColumn, TableDef};

use crate::error::Result;
use crate::output::Output;
use crate::session::Session;
use crate::write::constraints::sequence_of_default;

/// Keys longer than this are slow to compare, store and ship (HBase's rule of thumb).
const LONG_KEY_BYTES: usize = 100;

/// More column families than this make every write and wide read pay one entry per family
/// (HBase advises two or three).
const MANY_FAMILIES: usize = 3;

/// The encoded size of one key column: exact for fixed-size types, the likely size for
/// VARCHAR(n) (n one-byte characters), None for unbounded text and bytes.
fn encoded_len(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::Boolean => Some(2),
        DataType::Integer | DataType::Float | DataType::Timestamp | DataType::TimestampTz => {
            Some(9)
        }
        DataType::Date => Some(5),
        DataType::Decimal { .. } | DataType::Uuid => Some(17),
        // Tag, the bytes (a 0x00 byte takes two; assume none), the two-byte terminator. A
        // VARCHAR bound counts characters: one byte each when ASCII, up to four otherwise.
        DataType::Text { max_len } | DataType::Bytes { max_len } => max_len.map(|n| 3 + n as usize),
        DataType::Array { .. } => None,
    }
}

fn encoding_text(data_type: &DataType, desc: bool) -> String {
    let body = match data_type {
        DataType::Boolean => "tag 0x10 + 1 byte".to_string(),
        DataType::Integer => "tag 0x20 + 8 bytes big-endian, sign bit flipped".to_string(),
        DataType::Float => "tag 0x30 + 8 bytes, IEEE bits made order-preserving".to_string(),
        DataType::Timestamp | DataType::TimestampTz => {
            "tag 0x70 + 8 bytes big-endian microseconds".to_string()
        }
        DataType::Date => "tag 0x60 + 4 bytes big-endian days".to_string(),
        DataType::Decimal { .. } => "tag 0x38 + 16 bytes big-endian unscaled".to_string(),
        DataType::Uuid => "tag 0x80 + its 16 bytes".to_string(),
        DataType::Text { .. } => {
            "tag 0x40 + UTF-8 bytes (0x00 escaped) + terminator 0x00 0x01: prefix-safe".to_string()
        }
        DataType::Bytes { .. } => {
            "tag 0x50 + bytes (0x00 escaped) + terminator 0x00 0x01: prefix-safe".to_string()
        }
        DataType::Array { .. } => "an array is in no key".to_string(),
    };
    if desc {
        format!("{body}; every byte inverted (DESC: newest / largest first)")
    } else {
        body
    }
}

fn size_text(size: Option<usize>) -> String {
    size.map_or("variable".to_string(), |n| n.to_string())
}

/// `EXPLAIN KEY t`: one row per part of the row key, then per part of each index entry key.
pub(crate) fn explain_key(session: &Session, table: &str) -> Result<Output> {
    let def = session.table_def(table)?;
    let mut rows: Vec<[String; 4]> = Vec::new();
    let key_name = format!("{} row key", def.name);
    rows.push([
        key_name.clone(),
        "table prefix".to_string(),
        "5".to_string(),
        format!("0x10 + table id {} (4 bytes big-endian)", def.id),
    ]);
    if def.is_salted() {
        let on: Vec<&str> = def
            .salt_key_positions()
            .iter()
            .map(|&p| def.columns[def.key[p].column].name.as_str())
            .collect();
        rows.push([
            key_name.clone(),
            "salt".to_string(),
            "1".to_string(),
            format!(
                "FNV-1a hash of ({}) mod {} buckets",
                on.join(", "),
                def.salt_buckets
            ),
        ]);
    }
    let key_total = push_columns(&mut rows, &key_name, &def, &def.key);
    rows.push([
        key_name,
        "total".to_string(),
        size_text(key_total.map(|n| n + def.key_header_len())),
        "bytes per row key".to_string(),
    ]);
    if let Some(ttl) = def.ttl_seconds {
        rows.push([
            format!("{} row value", def.name),
            "write time".to_string(),
            "up to 12".to_string(),
            format!(
                "TIMESTAMP cell set by every write; the row expires {ttl} s later (TTL), and \
                 each index entry value and each column family entry carries the same time"
            ),
        ]);
    }
    for family in def.family_numbers().skip(1) {
        let columns: Vec<&str> = def
            .columns
            .iter()
            .filter(|c| c.family == family)
            .map(|c| c.name.as_str())
            .collect();
        rows.push([
            format!("{} family {} key", def.name, def.family_name(family)),
            "layout".to_string(),
            size_text(key_total.map(|n| n + def.family_key_header_len(family))),
            format!(
                "0x11 + table id (4 bytes) + family {family} (1 byte){} + primary key: the \
                 cells of {}, one entry per row",
                if def.is_salted() { " + salt" } else { "" },
                columns.join(", ")
            ),
        ]);
    }
    // Families kept in keyspaces of their own (storage attributes).
    let placed: std::collections::HashMap<Vec<u8>, _> =
        session.db.store.placements().into_iter().collect();
    for family in def.family_numbers() {
        let attributes = def.family_storage(family);
        if attributes.is_empty() {
            continue;
        }
        let kept = if placed.contains_key(&def.family_prefix(family)) {
            "a keyspace of its own"
        } else {
            "the shared keyspace (this store keeps every table alike)"
        };
        rows.push([
            format!("{} family {}", def.name, def.family_name(family)),
            "storage".to_string(),
            String::new(),
            format!("{}, in {kept}", attributes.listed().join(", ")),
        ]);
    }
    if def.keeps_history() {
        rows.push([
            format!("{} history key", def.name),
            "layout".to_string(),
            "variable".to_string(),
            format!(
                "0x30 + table id (4 bytes) + primary key + write time DESC (9 bytes): the {} \
                 older versions of a row, newest first; an empty value marks a delete",
                def.versions - 1
            ),
        ]);
    }
    for index in &def.indexes {
        let name = format!("{} entry key", index.name);
        rows.push([
            name.clone(),
            "index prefix".to_string(),
            IndexDef::PREFIX_LEN.to_string(),
            format!("0x20 + index id {} (4 bytes big-endian)", index.id),
        ]);
        if index.is_salted() {
            let names: Vec<&str> = index
                .columns
                .iter()
                .map(|k| def.columns[k.column].name.as_str())
                .collect();
            rows.push([
                name.clone(),
                "salt".to_string(),
                "1".to_string(),
                format!(
                    "FNV-1a hash of ({}) mod {} buckets",
                    names.join(", "),
                    index.salt_buckets
                ),
            ]);
        }
        let values = push_columns(&mut rows, &name, &def, &index.columns);
        let pk = push_columns(&mut rows, &name, &def, &def.key);
        rows.push([
            name,
            "total".to_string(),
            size_text(values.zip(pk).map(|(v, p)| v + p + index.header_len())),
            "bytes per entry key: indexed values, then the primary key".to_string(),
        ]);
    }
    Output::text_table(["key", "part", "bytes", "encoding"], &rows)
}

/// One row per column of `parts`; the sum of their sizes when all are bounded.
fn push_columns(
    rows: &mut Vec<[String; 4]>,
    key_name: &str,
    def: &TableDef,
    parts: &[KeyColumn],
) -> Option<usize> {
    let mut total = Some(0);
    for part in parts {
        let column = &def.columns[part.column];
        let size = encoded_len(&column.data_type);
        total = total.zip(size).map(|(t, s)| t + s);
        // An indexed expression's hidden column is called by its expression.
        let generated = match &column.generation {
            Some(expr) if !column.hidden => format!(" GENERATED AS ({expr})"),
            _ => String::new(),
        };
        rows.push([
            key_name.to_string(),
            format!(
                "{} {}{}{generated}",
                column.label(),
                column.data_type,
                if part.desc { " DESC" } else { "" }
            ),
            size_text(size),
            encoding_text(&column.data_type, part.desc),
        ]);
    }
    total
}

/// Warnings for a new table's key design.
pub(crate) fn advise_table(def: &TableDef) -> Vec<String> {
    let mut warnings = Vec::new();
    if !def.is_salted()
        && !def.has_hidden_rowid()
        && let Some(first) = def.key.first()
    {
        let column = &def.columns[first.column];
        let from_sequence = column
            .default
            .as_deref()
            .and_then(sequence_of_default)
            .is_some();
        if from_sequence {
            warnings.push(format!(
                "write hotspot: the leading key column {} of table {} takes its values from a \
                 sequence (SERIAL or identity), so every new row lands at the same end of the \
                 key space (one hot partition); add WITH (SALT_BUCKETS = n), or lead the key \
                 with a column that spreads (SHOW KEY SPREAD {} shows where writes land)",
                column.name, def.name, def.name
            ));
        } else if increases_monotonically(&column.name, &column.data_type, def.key.len()) {
            warnings.push(format!(
                "write hotspot: the leading key column {} of table {} looks like a time or a \
                 sequence, so every new row lands at the same end of the key space (one hot \
                 partition); add WITH (SALT_BUCKETS = n), or lead the key with a column that \
                 spreads (SHOW KEY SPREAD {} shows where writes land)",
                column.name, def.name, def.name
            ));
        }
    }
    if def.has_hidden_rowid() && !def.is_salted() {
        warnings.push(format!(
            "write hotspot: table {} has no PRIMARY KEY, so rows are keyed by an increasing \
             hidden row id and every insert lands at the end of the key space; declare a key \
             or add WITH (SALT_BUCKETS = n)",
            def.name
        ));
    }
    let key_len = def
        .key
        .iter()
        .map(|k| encoded_len(&def.columns[k.column].data_type))
        .sum::<Option<usize>>()
        .map(|n| n + def.key_header_len());
    if let Some(len) = key_len.filter(|&n| n > LONG_KEY_BYTES) {
        warnings.push(format!(
            "long key: row keys of table {} can reach {len} bytes (over {LONG_KEY_BYTES}); every \
             index entry repeats the key, so prefer short ids (EXPLAIN KEY {} shows the layout)",
            def.name, def.name
        ));
    }
    if def.families.len() + 1 > MANY_FAMILIES {
        warnings.push(format!(
            "many column families: table {} has {} (the default one included); a write puts \
             one entry per family and a query of several families reads one per family, so \
             keep to {MANY_FAMILIES} or fewer, grouping columns that are read together",
            def.name,
            def.families.len() + 1
        ));
    }
    for part in def.key.iter().take(def.key.len().saturating_sub(1)) {
        let column = &def.columns[part.column];
        if matches!(
            column.data_type,
            DataType::Text { .. } | DataType::Bytes { .. }
        ) {
            warnings.push(format!(
                "note: key column {} of table {} is variable-length and not last; rowdex \
                 terminates it in the key, so a prefix scan on {} = 'host1' never matches \
                 'host12', but a key built by hand by concatenating values would",
                column.name, def.name, column.name
            ));
        }
    }
    warnings
}

/// Warnings for a new index.
pub(crate) fn advise_index(def: &TableDef, index: &IndexDef) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(first) = index.columns.first() {
        let column = &def.columns[first.column];
        if !index.is_salted()
            && increases_monotonically(&column.name, &column.data_type, index.columns.len())
        {
            warnings.push(format!(
                "write hotspot: index {} leads with {}, which looks like a time or a sequence, \
                 so every new entry lands at the same end of the index; add WITH \
                 (SALT_BUCKETS = n) to the CREATE INDEX",
                index.name, column.name
            ));
        }
    }
    let entry_len = index
        .columns
        .iter()
        .chain(&def.key)
        .map(|k| encoded_len(&def.columns[k.column].data_type))
        .sum::<Option<usize>>()
        .map(|n| n + index.header_len());
    if let Some(len) = entry_len.filter(|&n| n > LONG_KEY_BYTES) {
        warnings.push(format!(
            "long key: entries of index {} can reach {len} bytes (over {LONG_KEY_BYTES}): the \
             indexed values followed by the primary key",
            index.name
        ));
    }
    warnings
}

/// A time or date column, a column named like one, or a lone integer key (a sequence id).
fn increases_monotonically(name: &str, data_type: &DataType, key_columns: usize) -> bool {
    let name = name.to_ascii_lowercase();
    let time_like = [
        "ts",
        "time",
        "timestamp",
        "date",
        "created",
        "updated",
        "seq",
    ]
    .contains(&name.as_str())
        || ["_at", "_time", "_ts", "_date", "_seq"]
            .iter()
            .any(|suffix| name.ends_with(suffix));
    match data_type {
        DataType::Timestamp | DataType::TimestampTz | DataType::Date => true,
        // A lone `id` key is a sequence; `user_id` leading a key usually spreads.
        DataType::Integer => time_like || (key_columns == 1 && name == "id"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex_codec::{Datum, SortOrder, key};

    #[test]
    fn fixed_sizes_match_the_codec() {
        let samples = [
            (DataType::Boolean, Datum::Boolean(true)),
            (DataType::Integer, Datum::Int(-5)),
            (DataType::Float, Datum::Float(1.5)),
            (DataType::Timestamp, Datum::Timestamp(7)),
            (DataType::Date, Datum::Date(3)),
            (
                DataType::Decimal {
                    precision: 10,
                    scale: 2,
                },
                Datum::Decimal(125),
            ),
        ];
        for (data_type, datum) in samples {
            let mut out = Vec::new();
            key::encode_datum(&mut out, &datum, SortOrder::Asc);
            assert_eq!(encoded_len(&data_type), Some(out.len()), "{data_type}");
        }
        let mut out = Vec::new();
        key::encode_datum(&mut out, &Datum::Text("abcd".into()), SortOrder::Desc);
        assert!(encoded_len(&DataType::Text { max_len: Some(4) }).is_some_and(|n| n >= out.len()));
    }
}
