//! `SHOW KEY SPREAD t [n]`: how a table's rows spread over key-range partitions, what each
//! takes in the store, and where sequential writes would land. The partitions are the table's
//! regions when it was pre-split (`SPLIT ON`, `NUMREGIONS`: one row per region that holds
//! rows), else n partitions of as many rows each.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::{Direction, KeyRange};

use crate::error::Result;
use crate::output::Output;
use crate::session::Session;
use crate::write::generated::Generation;

/// Simulated sequential inserts in a spread report.
const SIMULATED_WRITES: usize = 1000;

/// Rows read at most for a spread report.
const SPREAD_ROW_CAP: usize = 2_000_000;

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
    // The partitions' first rows, and each one's number (a pre-split table's: its region's).
    let mut region_numbers: Vec<i64> = Vec::new();
    let starts: Vec<usize> = if def.split_keys.is_empty() {
        // Partition i starts at the key of row i * total / n.
        (0..partitions)
            .map(|i| i * total / partitions)
            .filter(|&s| s < total)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    } else {
        // One partition per region of the pre-split table that holds rows: a region starts
        // at its split key (the rows are in key order).
        let header = def.prefix().len();
        let region_of = |row_key: &[u8]| {
            let suffix = row_key.get(header..).unwrap_or_default();
            def.split_keys
                .partition_point(|split| split.as_slice() <= suffix)
        };
        let mut starts = Vec::new();
        let mut region = None;
        for (at, (row_key, _)) in keys.iter().enumerate() {
            let of = region_of(row_key);
            if region != Some(of) {
                starts.push(at);
                region_numbers.push(of as i64 + 1);
                region = Some(of);
            }
        }
        starts
    };
    let landing = simulated_landing(&def, &keys, &starts);
    let mut numbers = Vec::new();
    let mut first_keys = Vec::new();
    let mut row_counts = Vec::new();
    let mut writes = Vec::new();
    let mut sizes = Vec::new();
    let table_end = KeyRange::prefix(&def.prefix()).end;
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(total);
        numbers.push(region_numbers.get(i).copied().unwrap_or(i as i64 + 1));
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
