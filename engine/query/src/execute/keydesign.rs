//! The row-key advisor: what a table's keys look like in bytes (`EXPLAIN KEY t`), how its rows
//! spread over key-range partitions, what each takes in the store and where sequential writes
//! land (`SHOW KEY SPREAD t`), and
//! the warnings CREATE TABLE and CREATE INDEX give for designs that will hurt.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use rowdex_catalog::{DataType, IndexDef, KeyColumn, TableDef};
use rowdex_codec::Datum;
use rowdex_store::{Direction, KeyRange};

use crate::error::Result;
use crate::output::Output;
use crate::session::Session;
use crate::write::constraints::sequence_of_default;
use crate::write::generated::Generation;

/// Keys longer than this are slow to compare, store and ship (HBase's rule of thumb).
const LONG_KEY_BYTES: usize = 100;

/// More column families than this make every write and wide read pay one entry per family
/// (HBase advises two or three).
const MANY_FAMILIES: usize = 3;

/// Simulated sequential inserts in a spread report.
const SIMULATED_WRITES: usize = 1000;

/// Rows read at most for a spread report.
const SPREAD_ROW_CAP: usize = 2_000_000;

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

/// `SHOW KEY SPREAD t [PARTITIONS n]`: the table's rows split into `n` key ranges of equal
/// row counts (where size-based region splits would put the boundaries), with, for each, where
/// the next [`SIMULATED_WRITES`] rows would land if the leading key column kept increasing
/// (a time or a sequence: the classic write hotspot).
pub(crate) async fn key_spread(
    session: &Session,
    table: &str,
    partitions: usize,
) -> Result<Output> {
    let def = session.table_def(table)?;
    let partitions = partitions.clamp(1, 1000);
    let snapshot = session.db.store.snapshot();
    let mut keys: Vec<(Vec<u8>, Vec<Datum>)> = Vec::new();
    let mut range = KeyRange::prefix(&def.prefix());
    loop {
        let page = snapshot.scan_page(&range, Direction::Forward, 4096).await?;
        for (row_key, value) in &page.entries {
            if keys.len() >= SPREAD_ROW_CAP {
                break;
            }
            let row = def.decode_row(row_key, value)?;
            let key_values = def.key.iter().map(|k| row[k.column].clone()).collect();
            keys.push((row_key.clone(), key_values));
        }
        match page.resume {
            Some(next) if keys.len() < SPREAD_ROW_CAP => range = next,
            _ => break,
        }
    }
    let total = keys.len();
    // Partition i starts at the key of row i * total / n.
    let starts: Vec<usize> = (0..partitions)
        .map(|i| i * total / partitions)
        .filter(|&s| s < total)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let landing = simulated_landing(&def, &keys, &starts);
    let mut numbers = Vec::new();
    let mut first_keys = Vec::new();
    let mut row_counts = Vec::new();
    let mut writes = Vec::new();
    let mut sizes = Vec::new();
    let table_end = KeyRange::prefix(&def.prefix()).end;
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(total);
        numbers.push(i as i64 + 1);
        first_keys.push(describe_key(&def, &keys[start].0, &keys[start].1));
        row_counts.push((end - start) as i64);
        writes.push(landing.as_ref().map(|l| l[i] as i64));
        // What the range's rows take in the store (its estimate; unknown on etcd).
        let range_end = match starts.get(i + 1) {
            Some(&next) => Some(keys[next].0.clone()),
            None => table_end.clone(),
        };
        let range = KeyRange::new(keys[start].0.clone(), range_end);
        let bytes = session.db.store.approximate_size(&range)?;
        sizes.push(bytes.and_then(|b| i64::try_from(b).ok()));
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("partition", ArrowType::Int64, false),
        Field::new("starts_at", ArrowType::Utf8, false),
        Field::new("rows", ArrowType::Int64, false),
        Field::new("bytes", ArrowType::Int64, true),
        Field::new("next_writes", ArrowType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(numbers)),
            Arc::new(StringArray::from(first_keys)),
            Arc::new(Int64Array::from(row_counts)),
            Arc::new(Int64Array::from(sizes)),
            Arc::new(Int64Array::from(writes)),
        ],
    )?;
    Ok(Output::Rows {
        schema,
        batches: vec![batch],
    })
}

/// How many of [`SIMULATED_WRITES`] new rows land in each partition, when the leading key
/// column counts up from its largest value (the other key columns taken from existing rows);
/// None when that column is not a number, date or time. When the leading column is generated
/// from another key column (`ts % 16` before `ts`), that column counts up instead and the
/// generated ones are computed from it, as a write would.
fn simulated_landing(
    def: &TableDef,
    keys: &[(Vec<u8>, Vec<Datum>)],
    starts: &[usize],
) -> Option<Vec<usize>> {
    let generation = Generation::compile(def).ok().flatten();
    let growing = def
        .key
        .first()
        .and_then(|leading| {
            let (_, reads) = generation
                .as_ref()?
                .columns()
                .find(|(position, _)| *position == leading.column)?;
            let [source] = reads else {
                return None;
            };
            def.key.iter().position(|k| k.column == *source)
        })
        .unwrap_or(0);
    let largest = keys
        .iter()
        .filter_map(|(_, values)| values.get(growing))
        .filter_map(datum_as_i64)
        .max()?;
    let mut counts = vec![0usize; starts.len()];
    let boundaries: Vec<&[u8]> = starts.iter().map(|&s| keys[s].0.as_slice()).collect();
    for i in 0..SIMULATED_WRITES {
        let template = &keys[(i * keys.len() / SIMULATED_WRITES).min(keys.len() - 1)].1;
        let mut values = template.clone();
        let next = largest.saturating_add(i as i64 + 1);
        values[growing] = with_i64(&values[growing], next)?;
        if let Some(generation) = &generation {
            values = generated_key_values(def, generation, values)?;
        }
        let refs: Vec<&Datum> = values.iter().collect();
        let row_key = def.row_key(&def.encode_key_values(&refs));
        // The last partition whose first key is not after the new key (the first one when the
        // key sorts before them all).
        let partition = boundaries
            .partition_point(|start| *start <= row_key.as_slice())
            .saturating_sub(1);
        counts[partition] += 1;
    }
    Some(counts)
}

/// `values` (a row's key values) with the generated key columns computed from the others.
fn generated_key_values(
    def: &TableDef,
    generation: &Generation,
    values: Vec<Datum>,
) -> Option<Vec<Datum>> {
    let mut row = vec![Datum::Null; def.columns.len()];
    for (part, value) in def.key.iter().zip(values) {
        row[part.column] = value;
    }
    generation.fill(def, std::slice::from_mut(&mut row)).ok()?;
    Some(def.key.iter().map(|k| row[k.column].clone()).collect())
}

fn datum_as_i64(datum: &Datum) -> Option<i64> {
    match datum {
        Datum::Int(v) | Datum::Timestamp(v) => Some(*v),
        Datum::Date(v) => Some(i64::from(*v)),
        _ => None,
    }
}

fn with_i64(template: &Datum, value: i64) -> Option<Datum> {
    match template {
        Datum::Int(_) => Some(Datum::Int(value)),
        Datum::Timestamp(_) => Some(Datum::Timestamp(value)),
        Datum::Date(_) => i32::try_from(value).ok().map(Datum::Date),
        _ => None,
    }
}

/// A row key as its bucket and key values: `bucket 3: user_id = 7, ts = 12`.
fn describe_key(def: &TableDef, row_key: &[u8], values: &[Datum]) -> String {
    let columns: Vec<String> = def
        .key
        .iter()
        .zip(values)
        .map(|(k, v)| format!("{} = {v}", def.columns[k.column].name))
        .collect();
    let header_len = def.key_header_len();
    match def
        .is_salted()
        .then(|| row_key.get(header_len - 1))
        .flatten()
    {
        Some(bucket) => format!("bucket {bucket}: {}", columns.join(", ")),
        None => columns.join(", "),
    }
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
    use rowdex_codec::{SortOrder, key};

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
