//! What a row change writes, as pure functions: [`index_mutations`] for a table's indexes, and
//! [`row_change`] for everything (the row's entries, its index entries, the older version it
//! leaves behind and the UNIQUE values to check).
//!
//! Writers apply these in the same transaction as the row itself, so a row and its index
//! entries change together or not at all. Indexes still being built are maintained too: that
//! is what lets a backfill run while writers go on (see the query crate's DDL).

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::Mutation;

use crate::layout::{entry_key, entry_value, unique_prefix};

/// Everything one row change writes, computed without reading the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowChange {
    /// Keys to delete. A writer applies every delete of a statement before its puts, so a row
    /// moving onto a key another row just left is kept.
    pub deletes: Vec<Vec<u8>>,
    pub puts: Vec<(Vec<u8>, Vec<u8>)>,
    /// The primary key given an older version (a table that keeps VERSIONS): its history is
    /// trimmed to the table's bound before the commit.
    pub versioned: Option<Vec<u8>>,
    /// (index position, entry prefix of the values) of each UNIQUE index entry the change
    /// writes anew: checked against the statement's final state.
    pub unique_probes: Vec<(usize, Vec<u8>)>,
}

/// What changing a row from `old` to `new` writes (None: no row, so an insert or a delete) at
/// the statement's time `now`, where `cutoff` is the table's expiry point (tables with a TTL).
///
/// * `new` is written with `now` as its write time (a TTL or versioned table).
/// * A table that keeps versions writes a live `old` as an older version under its own write
///   time, and a deletion marker at `now` when the row leaves its key; an expired `old` is
///   invisible at every time and gets no version.
/// * A row that moves to another key deletes every family entry under the old key. Otherwise an
///   entry whose bytes stay the same is not written again, so an UPDATE of one family's
///   columns writes that family's entry only.
/// * Index entries change as [`index_mutations`] says.
pub fn row_change(
    table: &TableDef,
    old: Option<&[Datum]>,
    new: Option<&[Datum]>,
    now: i64,
    cutoff: Option<i64>,
) -> RowChange {
    let stamped = match (table.written_at_column(), new) {
        (Some(column), Some(row)) => {
            let mut row = row.to_vec();
            row[column] = Datum::Timestamp(now);
            Some(row)
        }
        _ => None,
    };
    let new = stamped.as_deref().or(new);
    let mut change = RowChange::default();
    let old_key = old.map(|row| table.row_key_of(row));
    let new_key = new.map(|row| table.row_key_of(row));
    if let (Some(old_key), Some(old)) = (&old_key, old)
        && table.keeps_history()
        && table.is_live(old, cutoff)
    {
        let pk = table.pk_bytes(old_key).to_vec();
        let written = match table.written_at_column().map(|c| &old[c]) {
            Some(Datum::Timestamp(at)) => *at,
            _ => 0,
        };
        change
            .puts
            .push((table.history_key(&pk, written), table.encode_value(old)));
        if new_key.as_ref() != Some(old_key) {
            change.puts.push((table.history_key(&pk, now), Vec::new()));
        }
        change.versioned = Some(pk);
    }
    let moved = old_key.is_some() && new_key != old_key;
    if let (Some(old_key), true) = (&old_key, moved) {
        let pk = table.pk_bytes(old_key);
        change.deletes.extend(
            table
                .family_numbers()
                .map(|family| table.family_row_key(family, pk)),
        );
    }
    if let Some(row) = new {
        let unchanged = old.filter(|_| !moved).map(|old| table.row_entries(old));
        for (i, entry) in table.row_entries(row).into_iter().enumerate() {
            if unchanged.as_ref().and_then(|old| old.get(i)) != Some(&entry) {
                change.puts.push(entry);
            }
        }
    }
    for mutation in index_mutations(table, old, new) {
        match mutation {
            Mutation::Put { key, value } => change.puts.push((key, value)),
            Mutation::Delete { key } => change.deletes.push(key),
        }
    }
    if let Some(row) = new {
        for (position, index) in table.indexes.iter().enumerate() {
            let Some(prefix) = unique_prefix(index, row) else {
                continue;
            };
            // An old row outside a partial index had no entry: the value is claimed anew.
            let unchanged = old.is_some_and(|old| {
                index.covers_row(old)
                    && entry_key(table, index, old) == entry_key(table, index, row)
            });
            if !unchanged {
                change.unique_probes.push((position, prefix));
            }
        }
    }
    change
}

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
        // A partial index holds entries of the rows its condition covers only.
        let entry = |row: &[Datum]| {
            index
                .covers_row(row)
                .then(|| (entry_key(table, index, row), entry_value(table, index, row)))
        };
        let old = old_row.and_then(entry);
        let new = new_row.and_then(entry);
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
                constraint: false,
                filter: None,
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
                constraint: false,
                filter: None,
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

    /// `t` with a UNIQUE index on `a`, its `b` and `c` in a family `f`, a TTL and 3 versions.
    fn kept_table() -> TableDef {
        let mut def = table()
            .with_families(&[("b".into(), "f".into()), ("c".into(), "f".into())])
            .and_then(|def| def.with_ttl(60))
            .and_then(|def| def.with_versions(3))
            .expect("valid options");
        def.indexes.truncate(1);
        def.indexes[0].unique = true;
        def
    }

    /// A row of `kept_table` (pk, a, b, c, write time).
    fn kept_row(values: [i64; 4], written: i64) -> Vec<Datum> {
        let mut row = row(values);
        row.push(Datum::Timestamp(written));
        row
    }

    #[test]
    fn an_insert_writes_every_entry_stamped_and_probes_unique_values() {
        let t = kept_table();
        let new = kept_row([1, 10, 20, 30], 0);
        let change = row_change(&t, None, Some(&new), 500, None);
        let stamped = kept_row([1, 10, 20, 30], 500);
        let mut expected = t.row_entries(&stamped);
        expected.push((
            entry_key(&t, &t.indexes[0], &stamped),
            entry_value(&t, &t.indexes[0], &stamped),
        ));
        assert_eq!(change.puts, expected);
        assert!(change.deletes.is_empty());
        assert_eq!(change.versioned, None);
        let probe = unique_prefix(&t.indexes[0], &stamped).map(|p| (0, p));
        assert_eq!(change.unique_probes, probe.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn an_update_keeps_the_old_version_and_rewrites_only_changed_entries() {
        let t = kept_table();
        let old = kept_row([1, 10, 20, 30], 100);
        // Only `c`, in family `f`, changes: no unique probe, the old version is kept.
        let new = kept_row([1, 10, 20, 31], 100);
        let change = row_change(&t, Some(&old), Some(&new), 500, Some(50));
        let pk = t.pk_bytes(&t.row_key_of(&old)).to_vec();
        let stamped = kept_row([1, 10, 20, 31], 500);
        let entries = t.row_entries(&stamped);
        assert_eq!(entries.len(), 2, "the row entry and family f's");
        assert_eq!(change.versioned, Some(pk.clone()));
        assert_eq!(
            change.puts.first(),
            Some(&(t.history_key(&pk, 100), t.encode_value(&old)))
        );
        // The time changes every entry of a TTL table, the index entry's value too.
        assert!(change.puts.contains(&entries[0]) && change.puts.contains(&entries[1]));
        assert!(change.deletes.is_empty());
        assert!(change.unique_probes.is_empty());
        // Without a TTL's time, an unchanged family entry would be left alone: the same row
        // written at the same time writes nothing at all but its version.
        let again = row_change(&t, Some(&stamped), Some(&stamped), 500, Some(50));
        assert_eq!(again.puts.len(), 1, "{:?}", again.puts);
    }

    #[test]
    fn a_move_deletes_every_old_entry_and_leaves_a_deletion_marker() {
        let t = kept_table();
        let old = kept_row([1, 10, 20, 30], 100);
        let new = kept_row([2, 11, 20, 30], 0);
        let change = row_change(&t, Some(&old), Some(&new), 500, None);
        let pk = t.pk_bytes(&t.row_key_of(&old)).to_vec();
        let family_keys: Vec<Vec<u8>> = t
            .family_numbers()
            .map(|family| t.family_row_key(family, &pk))
            .collect();
        assert!(family_keys.iter().all(|k| change.deletes.contains(k)));
        assert!(change.deletes.contains(&entry_key(&t, &t.indexes[0], &old)));
        assert!(change.puts.contains(&(t.history_key(&pk, 500), Vec::new())));
        assert_eq!(
            change.unique_probes.len(),
            1,
            "a moved unique value is checked"
        );
    }

    #[test]
    fn a_delete_of_an_expired_row_keeps_no_version() {
        let t = kept_table();
        let old = kept_row([1, 10, 20, 30], 100);
        let expired = row_change(&t, Some(&old), None, 500, Some(100));
        assert_eq!(expired.versioned, None);
        assert!(expired.puts.is_empty());
        assert_eq!(
            expired.deletes.len(),
            3,
            "two family entries and the index entry"
        );
        let live = row_change(&t, Some(&old), None, 500, Some(99));
        let pk = t.pk_bytes(&t.row_key_of(&old)).to_vec();
        assert_eq!(
            live.puts,
            vec![
                (t.history_key(&pk, 100), t.encode_value(&old)),
                (t.history_key(&pk, 500), Vec::new())
            ]
        );
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
