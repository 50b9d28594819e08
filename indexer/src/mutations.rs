//! What a row change does to a table's indexes, as a pure function.
//!
//! Writers apply these mutations in the same transaction as the row itself, so a row and its
//! index entries change together or not at all. Indexes still being built are maintained too:
//! that is what lets a backfill run while writers go on (see the query crate's DDL).

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::Mutation;

use crate::layout::{entry_key, entry_value};

/// The index writes that turn `old_row` into `new_row` (None = no row: an insert or a delete).
///
/// An entry whose key and value stay the same is not rewritten, so an UPDATE of a column no index
/// mentions costs nothing here.
pub fn index_mutations(
    table: &TableDef,
    old_row: Option<&[Datum]>,
    new_row: Option<&[Datum]>,
) -> Vec<Mutation> {
    let mut out = Vec::new();
    for index in &table.indexes {
        let old = old_row.map(|row| (entry_key(table, index, row), entry_value(table, index, row)));
        let new = new_row.map(|row| (entry_key(table, index, row), entry_value(table, index, row)));
        match (old, new) {
            (Some(old), Some(new)) if old == new => {}
            (old, new) => {
                if let Some((old_key, _)) = old
                    && new.as_ref().is_none_or(|(new_key, _)| *new_key != old_key)
                {
                    out.push(Mutation::Delete { key: old_key });
                }
                if let Some((key, value)) = new {
                    out.push(Mutation::Put { key, value });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex_catalog::{ColumnDef, DataType, IndexDef, IndexState, KeyColumn};

    fn table() -> TableDef {
        let column = |name: &str| ColumnDef::nullable(name, DataType::Integer);
        let mut def = TableDef::new(
            "t",
            vec![column("pk"), column("a"), column("b"), column("c")],
            &[("pk".to_string(), false)],
            0,
        )
        .expect("valid definition");
        def.id = 16;
        def.indexes = vec![
            IndexDef {
                id: 17,
                name: "by_a".into(),
                columns: vec![KeyColumn {
                    column: 1,
                    desc: false,
                }],
                include: vec![],
                unique: false,
                state: IndexState::Ready,
                salt_buckets: 0,
            },
            IndexDef {
                id: 18,
                name: "by_b_incl_c".into(),
                columns: vec![KeyColumn {
                    column: 2,
                    desc: true,
                }],
                include: vec![3],
                unique: false,
                state: IndexState::Building,
                salt_buckets: 0,
            },
        ];
        def
    }

    fn row(values: [i64; 4]) -> Vec<Datum> {
        values.iter().map(|v| Datum::Int(*v)).collect()
    }

    fn keys(mutations: &[Mutation]) -> Vec<(&'static str, Vec<u8>)> {
        mutations
            .iter()
            .map(|m| match m {
                Mutation::Put { key, .. } => ("put", key.clone()),
                Mutation::Delete { key } => ("delete", key.clone()),
            })
            .collect()
    }

    #[test]
    fn insert_and_delete_touch_every_index() {
        let t = table();
        let r = row([1, 10, 20, 30]);
        let inserted = index_mutations(&t, None, Some(&r));
        let deleted = index_mutations(&t, Some(&r), None);
        let put_keys: Vec<_> = keys(&inserted).into_iter().map(|(_, k)| k).collect();
        let delete_keys: Vec<_> = keys(&deleted).into_iter().map(|(_, k)| k).collect();
        assert_eq!(put_keys.len(), 2);
        assert_eq!(put_keys, delete_keys);
        assert!(inserted.iter().all(|m| matches!(m, Mutation::Put { .. })));
        assert!(deleted.iter().all(|m| matches!(m, Mutation::Delete { .. })));
    }

    #[test]
    fn update_rewrites_only_what_changed() {
        let t = table();
        let before = row([1, 10, 20, 30]);
        // Nothing indexed or included changed.
        assert!(index_mutations(&t, Some(&before), Some(&before)).is_empty());
        // Only an INCLUDE column changed: the entry is overwritten in place, not deleted.
        let included = row([1, 10, 20, 31]);
        let m = index_mutations(&t, Some(&before), Some(&included));
        assert_eq!(
            keys(&m).iter().map(|(op, _)| *op).collect::<Vec<_>>(),
            ["put"]
        );
        // An indexed column changed: old entry out, new one in, other index untouched.
        let moved = row([1, 11, 20, 30]);
        let m = index_mutations(&t, Some(&before), Some(&moved));
        assert_eq!(
            keys(&m).iter().map(|(op, _)| *op).collect::<Vec<_>>(),
            ["delete", "put"]
        );
        // The primary key changed: every entry moves.
        let rekeyed = row([2, 10, 20, 30]);
        assert_eq!(index_mutations(&t, Some(&before), Some(&rekeyed)).len(), 4);
    }

    #[test]
    fn entries_decode_back_to_the_covered_columns() -> crate::Result<()> {
        let t = table();
        let r = row([7, 10, -20, 30]);
        let index = &t.indexes[1];
        let key = entry_key(&t, index, &r);
        let value = entry_value(&t, index, &r);
        let (decoded, pk) = crate::layout::decode_entry(&t, index, &key, &value)?;
        assert_eq!(
            decoded,
            vec![Datum::Int(7), Datum::Null, Datum::Int(-20), Datum::Int(30)]
        );
        assert_eq!(crate::layout::pk_offset(index, &key)?, key.len() - pk.len());
        assert_eq!(pk, t.encode_key_values(&[&Datum::Int(7)]));
        Ok(())
    }
}
