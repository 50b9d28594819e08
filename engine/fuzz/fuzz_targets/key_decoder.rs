//! Fuzz target `key_decoder`: arbitrary bytes into the key and row codecs and into the table and
//! index layouts built on them.
//!
//! Nothing may panic. Whatever decodes must also round-trip, because both formats are canonical
//! (decoding rejects every byte form the encoder never writes):
//!
//! * `key::decode_key(bytes, orders, true)` succeeds ⇒ `key::encode_key` gives `bytes` back, and
//!   byte order of two decoded keys equals their column-wise `Datum::key_cmp` order;
//! * `key::decode_datum` consumes exactly the bytes `key::encode_datum` writes for the value;
//! * `row::decode_row(bytes)` succeeds ⇒ `row::encode_row` gives `bytes` back, and `row::cells`
//!   yields the same cells (and the same error when it fails);
//! * `TableDef::decode_row` and `layout::decode_entry` on fixed tables (composite, DESC, salted,
//!   hidden row id; every column type) re-encode to the key they were given;
//! * `key::encode_text_prefix` prefixes the encoding of every text it starts, and
//!   `key::prefix_successor` bounds it.
//!
//! Input layout: byte 0 picks the table (and the orders of the `decode_datum` walk), byte 1 is
//! where the rest splits into a key and a value (or into two keys).

#![no_main]

use std::cmp::Ordering;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rowdex_catalog::{ColumnDef, DataType, IndexDef, IndexState, KeyColumn, TableDef};
use rowdex_codec::{Datum, SortOrder, key, row};
use rowdex_indexer::layout;

/// A row with no cells: decoding a table row or an index entry with it leaves only what the key
/// holds, so re-encoding the key must give the key back.
const EMPTY_ROW: &[u8] = &[0, 0];

fn columns() -> Vec<ColumnDef> {
    vec![
        ColumnDef::nullable("b", DataType::Boolean),
        ColumnDef::nullable("i", DataType::Integer),
        ColumnDef::nullable("f", DataType::Float),
        ColumnDef::nullable(
            "d",
            DataType::Decimal {
                precision: 10,
                scale: 2,
            },
        ),
        ColumnDef::nullable("s", DataType::Text { max_len: None }),
        ColumnDef::nullable("y", DataType::Bytes { max_len: None }),
        ColumnDef::nullable("dt", DataType::Date),
        ColumnDef::nullable("ts", DataType::Timestamp),
        ColumnDef::nullable("u", DataType::Uuid),
    ]
}

fn table(id: u32, name: &str, key: &[(&str, bool)], salt: u16) -> TableDef {
    let key: Vec<(String, bool)> = key.iter().map(|(c, d)| (c.to_string(), *d)).collect();
    let mut def = TableDef::new(name, columns(), &key, salt).expect("a valid fixed table");
    def.id = id;
    // Every table gets the same three indexes (by column name), ids from 100 up.
    let col = |name: &str, desc: bool| KeyColumn {
        column: def.column_index(name).expect("a fixed column"),
        desc,
    };
    let indexes = vec![
        (vec![col("f", true), col("d", false)], vec!["s", "ts"], true),
        (vec![col("s", false), col("u", true)], vec!["b"], false),
        (
            vec![col("ts", true), col("y", false), col("i", true)],
            vec![],
            false,
        ),
    ];
    for (n, (columns, include, unique)) in indexes.into_iter().enumerate() {
        let include = include
            .iter()
            .map(|c| def.column_index(c).expect("a fixed column"))
            .collect();
        def.indexes.push(IndexDef {
            id: 100 + id * 10 + n as u32,
            name: format!("{name}_{n}"),
            columns,
            include,
            unique,
            state: IndexState::Ready,
            // The last index is salted: its entries carry a salt byte after the prefix.
            salt_buckets: if n == 2 { 4 } else { 0 },
            constraint: false,
        });
    }
    def
}

fn tables() -> &'static [TableDef] {
    static TABLES: OnceLock<Vec<TableDef>> = OnceLock::new();
    TABLES.get_or_init(|| {
        vec![
            table(1, "salted", &[("i", false), ("s", true), ("ts", false)], 8),
            table(
                2,
                "every_type_key",
                &[
                    ("b", false),
                    ("i", true),
                    ("f", false),
                    ("d", true),
                    ("s", false),
                    ("y", true),
                    ("dt", false),
                    ("ts", true),
                    ("u", false),
                ],
                0,
            ),
            table(3, "rowid", &[], 0),
            table(
                4,
                "desc_salt256",
                &[("y", true), ("dt", false), ("f", true)],
                256,
            ),
        ]
    })
}

/// Equality that tells NaN payloads and -0.0 apart (the row format keeps both).
fn same(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Float(x), Datum::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn encode_key(values: &[Datum], orders: &[SortOrder]) -> Vec<u8> {
    let columns: Vec<(&Datum, SortOrder)> = values.iter().zip(orders.iter().copied()).collect();
    let mut out = Vec::new();
    key::encode_key(&mut out, &columns);
    out
}

/// Column-wise order of two keys, honouring each column's direction.
fn key_order(a: &[Datum], b: &[Datum], orders: &[SortOrder]) -> Ordering {
    for ((x, y), order) in a.iter().zip(b).zip(orders) {
        let ord = match order {
            SortOrder::Asc => x.key_cmp(y),
            SortOrder::Desc => y.key_cmp(x),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

fn check_key(bytes: &[u8], orders: &[SortOrder]) {
    if let Ok(values) = key::decode_key(bytes, orders, true) {
        assert_eq!(values.len(), orders.len());
        assert_eq!(encode_key(&values, orders), bytes, "exact key round trip");
    }
    if let Ok(values) = key::decode_key(bytes, orders, false) {
        let encoded = encode_key(&values, orders);
        assert!(bytes.starts_with(&encoded), "leading key round trip");
    }
}

fn check_key_order(a: &[u8], b: &[u8], orders: &[SortOrder]) {
    if let (Ok(x), Ok(y)) = (
        key::decode_key(a, orders, true),
        key::decode_key(b, orders, true),
    ) {
        assert_eq!(
            a.cmp(b),
            key_order(&x, &y, orders),
            "byte order = value order"
        );
    }
}

fn check_datum_walk(mut input: &[u8], selector: u8) {
    let mut n = 0u32;
    while !input.is_empty() {
        let order = if selector.rotate_left(n) & 1 == 1 {
            SortOrder::Desc
        } else {
            SortOrder::Asc
        };
        n += 1;
        let before = input;
        match key::decode_datum(&mut input, order) {
            Ok(datum) => {
                let consumed = &before[..before.len() - input.len()];
                let mut encoded = Vec::new();
                key::encode_datum(&mut encoded, &datum, order);
                assert_eq!(encoded, consumed, "datum round trip");
            }
            Err(_) => {
                assert_eq!(input, before, "a failed decode leaves the input alone");
                break;
            }
        }
    }
}

fn check_row(bytes: &[u8]) {
    let decoded = row::decode_row(bytes);
    let streamed = row::cells(bytes).and_then(|(version, cells)| {
        let cells = cells
            .map(|cell| cell.map(|(id, value)| (id, value.to_datum())))
            .collect::<rowdex_codec::Result<Vec<_>>>()?;
        Ok((version, cells))
    });
    match (&decoded, &streamed) {
        (Ok(row), Ok((version, cells))) => {
            assert_eq!(row.schema_version, *version);
            assert_eq!(row.cells.len(), cells.len());
            for ((a, x), (b, y)) in row.cells.iter().zip(cells) {
                assert!(a == b && same(x, y), "cells() = decode_row()");
            }
            let refs: Vec<(u32, &Datum)> = row.cells.iter().map(|(id, d)| (*id, d)).collect();
            let mut encoded = Vec::new();
            row::encode_row(&mut encoded, row.schema_version, &refs);
            assert_eq!(encoded, bytes, "row round trip");
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "cells() and decode_row() fail alike"),
        _ => panic!("cells() and decode_row() disagree: {decoded:?} / {streamed:?}"),
    }
}

fn check_table(table: &TableDef, row_key: &[u8], value: &[u8]) {
    let _ = table.decode_row(row_key, value);
    let header = table.key_header_len();
    if let Ok(row) = table.decode_row(row_key, EMPTY_ROW) {
        assert_eq!(row.len(), table.columns.len());
        let rebuilt = table.row_key_of(&row);
        assert_eq!(&rebuilt[header..], &row_key[header..], "row key round trip");
        assert!(rebuilt.starts_with(&table.prefix()));
        if table.is_salted() {
            assert!(u16::from(rebuilt[header - 1]) < table.salt_buckets);
        }
        // A full row (key and value) re-encodes to the same row. Its value may hold cells for
        // key columns too (decoding lets them win), so the key is rebuilt from the full row.
        if let Ok(full) = table.decode_row(row_key, value) {
            let again = table
                .decode_row(&table.row_key_of(&full), &table.encode_value(&full))
                .expect("a re-encoded row decodes");
            // Key columns go through the key encoding, which normalises -0.0 and NaN payloads.
            let equal = |(i, (a, b)): (usize, (&Datum, &Datum))| match table.key_position(i) {
                Some(_) => a.key_cmp(b) == Ordering::Equal,
                None => same(a, b),
            };
            assert!(
                full.iter().zip(&again).enumerate().all(equal),
                "table row round trip"
            );
        }
    }
    for index in &table.indexes {
        let offset = layout::pk_offset(index, row_key);
        let _ = layout::decode_entry(table, index, row_key, value);
        if let Ok((row, pk)) = layout::decode_entry(table, index, row_key, EMPTY_ROW) {
            let start = index.header_len();
            // The entry is `indexed values ‖ primary key`.
            let index_orders: Vec<SortOrder> = index.columns.iter().map(KeyColumn::order).collect();
            let values = key::decode_key(&row_key[start..], &index_orders, false)
                .expect("decode_entry decoded these values");
            let mut rebuilt = layout::value_prefix(index, values.iter());
            rebuilt.extend_from_slice(&pk);
            assert_eq!(&rebuilt[start..], &row_key[start..], "entry key round trip");
            let key_values: Vec<&Datum> = table.key.iter().map(|k| &row[k.column]).collect();
            assert_eq!(
                table.encode_key_values(&key_values),
                pk,
                "entry pk round trip"
            );
            // Where the index shares no column with the primary key, the decoded row holds both
            // parts (a shared column keeps the primary key's value, which a real entry repeats).
            if index
                .columns
                .iter()
                .all(|c| table.key_position(c.column).is_none())
            {
                let from_row = layout::entry_key(table, index, &row);
                assert_eq!(
                    &from_row[start..],
                    &row_key[start..],
                    "entry_key of the row"
                );
            }
            assert_eq!(offset.ok(), Some(row_key.len() - pk.len()), "pk_offset");
            let entry_value = layout::entry_value(table, index, &row);
            assert!(row::decode_row(&entry_value).is_ok());
        }
    }
}

fn check_text_prefix(bytes: &[u8], order: SortOrder) {
    let text = String::from_utf8_lossy(bytes);
    let mut prefix = Vec::new();
    key::encode_text_prefix(&mut prefix, &text, order);
    for suffix in ["", "\0", "a", "\u{10FFFF}"] {
        let mut full = Vec::new();
        key::encode_datum(&mut full, &Datum::Text(format!("{text}{suffix}")), order);
        assert!(full.starts_with(&prefix), "text prefix");
        if let Some(successor) = key::prefix_successor(&prefix) {
            assert!(full < successor, "prefix successor bounds the range");
        }
    }
    if let Some(successor) = key::prefix_successor(bytes) {
        assert!(successor.as_slice() > bytes && !successor.starts_with(bytes));
    }
}

fuzz_target!(|data: &[u8]| {
    let [selector, split, rest @ ..] = data else {
        return;
    };
    let tables = tables();
    let table = &tables[usize::from(*selector) % tables.len()];
    let (first, second) = rest.split_at(usize::from(*split).min(rest.len()));

    let orders = table.key_orders();
    check_key(rest, &orders);
    check_key_order(first, second, &orders);
    for index in &table.indexes {
        let entry_orders: Vec<SortOrder> = table
            .entry_key_columns(index)
            .iter()
            .map(KeyColumn::order)
            .collect();
        check_key(rest, &entry_orders);
        check_key_order(first, second, &entry_orders);
    }
    check_key(rest, &[SortOrder::Asc]);
    check_key(rest, &[SortOrder::Desc]);
    check_datum_walk(rest, *selector);
    check_row(rest);
    check_row(second);
    // As a row key and an index entry key, with and without the table's header in front.
    check_table(table, first, second);
    let mut with_header = table.prefix();
    if table.is_salted() {
        with_header.push(*split);
    }
    with_header.extend_from_slice(first);
    check_table(table, &with_header, second);
    let order = if selector & 0x80 == 0 {
        SortOrder::Asc
    } else {
        SortOrder::Desc
    };
    check_text_prefix(rest, order);
});
