//! Planner tests: the chosen path for typical WHERE clauses, and a property that the key ranges
//! plus the residual select exactly the rows the predicates select.

use super::*;
use crate::path::KeySpan;
use proptest::prelude::*;
use rowdex_catalog::{ColumnDef, DataType};

fn table(desc_second: bool, salt: u16) -> Arc<TableDef> {
    let column = ColumnDef::nullable;
    let columns = vec![
        column("host", DataType::Text { max_len: None }),
        column("ts", DataType::Integer),
        column("v", DataType::Integer),
    ];
    let key = [("host".to_string(), false), ("ts".to_string(), desc_second)];
    let mut def = TableDef::new("m", columns, &key, salt).expect("valid table");
    def.id = 42;
    Arc::new(def)
}

fn eq(column: usize, value: Datum) -> Predicate {
    Predicate::Compare {
        column,
        op: CmpOp::Eq,
        value,
    }
}

fn text(s: &str) -> Datum {
    Datum::Text(s.to_string())
}

#[test]
fn all_key_columns_fixed_is_a_point_get() {
    let plan = plan_scan(
        table(false, 0),
        vec![eq(1, Datum::Int(5)), eq(0, text("a")), eq(2, Datum::Int(1))],
        Direction::Forward,
        0,
        None,
    );
    assert_eq!(
        plan.path,
        AccessPath::PointGet {
            key: vec![text("a"), Datum::Int(5)]
        }
    );
    assert_eq!(plan.residual, vec![eq(2, Datum::Int(1))]);
    assert_eq!(
        plan.to_string(),
        "POINT GET m key (host = 'a', ts = 5) residual=(v = 1)"
    );
}

#[test]
fn in_lists_on_every_key_column_are_a_multi_get() {
    let plan = plan_scan(
        table(false, 0),
        vec![
            Predicate::InList {
                column: 0,
                values: vec![text("b"), text("a"), text("b")],
            },
            eq(1, Datum::Int(1)),
        ],
        Direction::Forward,
        0,
        None,
    );
    let AccessPath::MultiGet { keys } = &plan.path else {
        panic!("expected a multi get, got {plan}");
    };
    assert_eq!(keys.len(), 2);
    assert!(plan.residual.is_empty());
}

#[test]
fn leading_column_fixed_and_next_bounded_is_a_range_scan() {
    let plan = plan_scan(
        table(true, 0),
        vec![
            eq(0, text("h")),
            Predicate::Compare {
                column: 1,
                op: CmpOp::Gt,
                value: Datum::Int(3),
            },
            Predicate::Compare {
                column: 1,
                op: CmpOp::Gt,
                value: Datum::Int(7),
            },
        ],
        Direction::Reverse,
        0,
        Some(10),
    );
    assert_eq!(
        plan.to_string(),
        // The tighter bound implies the looser one, which needs no check of its own.
        "RANGE SCAN m range [host = 'h', ts > 7] reverse limit=10"
    );
}

#[test]
fn like_prefix_on_leading_column_and_full_scan_otherwise() {
    let like = plan_scan(
        table(false, 8),
        vec![Predicate::Like {
            column: 0,
            pattern: "host1%".into(),
        }],
        Direction::Forward,
        0,
        None,
    );
    assert_eq!(
        like.to_string(),
        "RANGE SCAN m range [host LIKE 'host1%'] buckets=8"
    );
    let full = plan_scan(
        table(false, 0),
        vec![eq(2, Datum::Int(1))],
        Direction::Forward,
        0,
        None,
    );
    assert_eq!(full.path, AccessPath::FullScan);
    assert_eq!(full.residual.len(), 1);
}

fn arb_row() -> impl Strategy<Value = Vec<Datum>> {
    (
        prop::sample::select(vec!["", "h", "h1", "h12", "h2", "x\u{0}y"]),
        -4i64..4,
        prop::option::of(-3i64..3),
    )
        .prop_map(|(h, ts, v)| vec![text(h), Datum::Int(ts), v.map_or(Datum::Null, Datum::Int)])
}

fn arb_predicate() -> impl Strategy<Value = Predicate> {
    let op = prop::sample::select(vec![
        CmpOp::Eq,
        CmpOp::NotEq,
        CmpOp::Lt,
        CmpOp::LtEq,
        CmpOp::Gt,
        CmpOp::GtEq,
    ]);
    prop_oneof![
        (op.clone(), -5i64..5, 1usize..3).prop_map(|(op, v, column)| Predicate::Compare {
            column,
            op,
            value: Datum::Int(v),
        }),
        (op, prop::sample::select(vec!["", "h", "h1", "h2", "z"])).prop_map(|(op, v)| {
            Predicate::Compare {
                column: 0,
                op,
                value: text(v),
            }
        }),
        prop::collection::vec(-3i64..3, 0..4).prop_map(|vs| Predicate::InList {
            column: 1,
            values: vs.into_iter().map(Datum::Int).collect(),
        }),
        prop::sample::select(vec![
            "%", "h%", "h1%", "x%", "h_%", "h_", "%1", "_1%", "h%2", "h1", "h__%", "%"
        ])
        .prop_map(|p| Predicate::Like {
            column: 0,
            pattern: p.to_string(),
        }),
        (0usize..3).prop_map(|column| Predicate::IsNull { column }),
        (0usize..3).prop_map(|column| Predicate::IsNotNull { column }),
    ]
}

proptest! {
    /// Whatever path is chosen, "key in one of its ranges (or keys) and residual holds" is the
    /// same as "every predicate holds", for ASC and DESC keys, salted or not.
    #[test]
    fn path_plus_residual_selects_exactly_the_matching_rows(
        rows in prop::collection::vec(arb_row(), 0..30),
        predicates in prop::collection::vec(arb_predicate(), 0..4),
        desc in any::<bool>(),
        salting in 0..3u8,
    ) {
        // Unsalted, salted on the whole key, salted on `host` (a prefix scan on one host then
        // visits one bucket).
        let table = match salting {
            0 => table(desc, 0),
            1 => table(desc, 4),
            _ => {
                let def = (*table(desc, 4)).clone();
                Arc::new(def.with_salt_on(&["host".to_string()]).expect("host is a key column"))
            }
        };
        let plan = plan_scan(table.clone(), predicates.clone(), Direction::Forward, 0, None);
        let points = plan.point_keys();
        let ranges: Vec<_> = plan
            .bucket_ranges()
            .into_iter()
            .flat_map(|(_, ranges)| ranges)
            .collect();
        for row in &rows {
            let key = table.row_key_of(row);
            let on_path = match &points {
                Some(keys) => keys.contains(&key),
                None => ranges.iter().any(|r| r.contains(&key)),
            };
            let selected = on_path && plan.residual.iter().all(|p| p.matches(row));
            let expected = predicates.iter().all(|p| p.matches(row));
            prop_assert_eq!(selected, expected, "row {:?} plan {}", row, plan);
        }
    }
}

proptest! {
    /// Splitting a key scan into partitions at any primary-key positions (as a parallel scan
    /// does, at the statistics' samples) reads every row of the whole scan in exactly one
    /// partition, salted or not.
    #[test]
    fn partitions_read_each_row_of_the_scan_once(
        rows in prop::collection::vec(arb_row(), 0..30),
        predicates in prop::collection::vec(arb_predicate(), 0..3),
        cuts in prop::collection::vec((0usize..30, 0usize..12), 0..4),
        salt in prop::sample::select(vec![0u16, 4]),
    ) {
        let table = table(false, salt);
        let whole = plan_scan(table.clone(), predicates, Direction::Forward, 0, None);
        prop_assume!(whole.point_keys().is_none());
        let header = table.family_bucket_prefix(0, 0).len();
        // Split points: prefixes of the rows' encoded primary keys.
        let mut splits: Vec<Vec<u8>> = cuts
            .iter()
            .filter_map(|(row, len)| {
                let key = table.row_key_of(rows.get(*row)?);
                let pk = key.get(header..)?;
                Some(pk[..(*len).min(pk.len())].to_vec())
            })
            .collect();
        splits.sort();
        splits.dedup();
        let mut bounds: Vec<Option<Vec<u8>>> = vec![None];
        bounds.extend(splits.into_iter().map(Some));
        bounds.push(None);
        let partitions: Vec<ScanPlan> = bounds
            .windows(2)
            .map(|pair| ScanPlan {
                partition: Some(KeySpan { from: pair[0].clone(), to: pair[1].clone() }),
                ..whole.clone()
            })
            .collect();
        let in_ranges = |plan: &ScanPlan, key: &[u8]| {
            plan.bucket_ranges()
                .into_iter()
                .flat_map(|(_, ranges)| ranges)
                .any(|range| range.contains(key))
        };
        for row in &rows {
            let key = table.row_key_of(row);
            let readers = partitions.iter().filter(|p| in_ranges(p, &key)).count();
            prop_assert_eq!(readers, usize::from(in_ranges(&whole, &key)), "row {:?}", row);
        }
    }
}
