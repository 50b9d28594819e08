//! Lookup templates: what each key layout offers a join, the plan of a batch of probes, the
//! rows a probe finds, and the cost against reading the table whole.

use std::collections::BTreeMap;

use super::*;
use crate::cost::{Count, estimate};
use crate::predicate::CmpOp;
use rowdex_catalog::{ColumnDef, DataType, IndexDef, IndexState, KeyStatistics};

/// `orders(id PK, user_id, status, amount)`: indexes `o_user (user_id)`, `o_status_user
/// (status, user_id)` and the unique `o_ref (amount)`.
fn orders() -> Arc<TableDef> {
    let columns = vec![
        ColumnDef::nullable("id", DataType::Integer),
        ColumnDef::nullable("user_id", DataType::Integer),
        ColumnDef::nullable("status", DataType::Text { max_len: None }),
        ColumnDef::nullable("amount", DataType::Integer),
    ];
    let mut def =
        TableDef::new("orders", columns, &[("id".to_string(), false)], 0).expect("valid table");
    def.id = 7;
    let index = |id: u32, name: &str, on: &[usize], unique: bool| IndexDef {
        id,
        name: name.to_string(),
        columns: on
            .iter()
            .map(|c| KeyColumn {
                column: *c,
                desc: false,
            })
            .collect(),
        include: Vec::new(),
        unique,
        state: IndexState::Ready,
        salt_buckets: 0,
        constraint: false,
        filter: None,
    };
    def.indexes = vec![
        index(71, "o_user", &[1], false),
        index(72, "o_status_user", &[2, 1], false),
        index(73, "o_ref", &[3], true),
    ];
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

fn costs() -> AccessCosts {
    AccessCosts {
        seek_ns: 2_000,
        next_ns: 200,
        get_ns: 2_500,
        check_ns: 1_000,
        reverse_reads_whole_range: false,
        range_in_batch_ns: None,
    }
}

fn template(templates: &[LookupTemplate], key: LookupKey) -> &LookupTemplate {
    templates
        .iter()
        .find(|t| t.key == key)
        .expect("the template is offered")
}

#[test]
fn a_join_on_the_primary_key_probes_by_key_and_indexes_offer_what_they_lead_with() {
    let table = orders();
    let on_id = lookup_templates(&table, &[0], &[], None, &IndexHint::Auto);
    assert_eq!(on_id.len(), 1, "{on_id:?}");
    assert_eq!(on_id[0].key, LookupKey::Primary);
    assert_eq!(on_id[0].parts, vec![KeyPart::Join(0)]);
    assert!(on_id[0].unique());

    let on_user = lookup_templates(&table, &[1], &[], None, &IndexHint::Auto);
    // o_user leads with user_id; o_status_user leads with status, which nothing fixes.
    assert_eq!(on_user.len(), 1, "{on_user:?}");
    assert_eq!(on_user[0].key, LookupKey::Index(0));
    assert!(!on_user[0].unique());
}

#[test]
fn constants_of_the_query_bind_leading_columns_and_leave_the_rest_residual() {
    let table = orders();
    let predicates = vec![eq(2, text("open")), eq(3, Datum::Int(5))];
    let templates = lookup_templates(&table, &[1], &predicates, Some(&[0, 1]), &IndexHint::Auto);
    let by_status = template(&templates, LookupKey::Index(1));
    assert_eq!(
        by_status.parts,
        vec![KeyPart::Constant(text("open")), KeyPart::Join(0)]
    );
    assert_eq!(by_status.residual, vec![eq(3, Datum::Int(5))]);
    // The join reads id and user_id, and the residual amount, which the index lacks.
    assert!(!by_status.covering);
    let by_user = template(&templates, LookupKey::Index(0));
    assert_eq!(by_user.residual, predicates);
    assert_eq!(
        by_status.describe(&["u.id".to_string()]),
        "orders using index o_status_user [status = 'open', user_id = u.id]"
    );
}

#[test]
fn an_index_holding_every_column_read_is_covering() {
    let table = orders();
    let templates = lookup_templates(&table, &[1], &[], Some(&[0, 1]), &IndexHint::Auto);
    assert!(template(&templates, LookupKey::Index(0)).covering);
    let all = lookup_templates(&table, &[1], &[], None, &IndexHint::Auto);
    assert!(!template(&all, LookupKey::Index(0)).covering);
}

#[test]
fn hints_rule_indexes_out() {
    let table = orders();
    assert!(lookup_templates(&table, &[1], &[], None, &IndexHint::NoIndex).is_empty());
    let hinted = IndexHint::Use(vec!["o_status_user".to_string()]);
    assert!(lookup_templates(&table, &[1], &[], None, &hinted).is_empty());
    let on_id = lookup_templates(&table, &[0], &[], None, &IndexHint::NoIndex);
    assert_eq!(on_id.len(), 1);
}

#[test]
fn a_batch_of_probes_is_one_plan_in_key_order_without_nulls_or_repeats() {
    let table = orders();
    let on_id = lookup_templates(&table, &[0], &[], None, &IndexHint::Auto);
    let probes: Vec<Vec<Datum>> = vec![
        vec![Datum::Int(9)],
        vec![Datum::Null],
        vec![Datum::Int(3)],
        vec![Datum::Int(9)],
    ];
    let plan = on_id[0]
        .plan(probes.iter().map(Vec::as_slice))
        .expect("two probes can match");
    assert_eq!(
        plan.path,
        AccessPath::MultiGet {
            keys: vec![vec![Datum::Int(3)], vec![Datum::Int(9)]]
        }
    );
    let one = on_id[0].plan([vec![Datum::Int(4)].as_slice()]);
    assert_eq!(
        one.map(|p| p.path),
        Some(AccessPath::PointGet {
            key: vec![Datum::Int(4)]
        })
    );
    assert!(on_id[0].plan([vec![Datum::Null].as_slice()]).is_none());

    let predicates = vec![eq(2, text("open"))];
    let templates = lookup_templates(&table, &[1], &predicates, None, &IndexHint::Auto);
    let by_status = template(&templates, LookupKey::Index(1));
    let plan = by_status
        .plan([
            vec![Datum::Int(2)].as_slice(),
            vec![Datum::Int(1)].as_slice(),
        ])
        .expect("probes");
    assert_eq!(
        plan.path,
        AccessPath::IndexScan {
            input: IndexInput {
                index: 1,
                prefixes: vec![
                    vec![text("open"), Datum::Int(1)],
                    vec![text("open"), Datum::Int(2)]
                ],
                bound: KeyBound::All,
            },
            covering: false,
        }
    );
    assert!(plan.residual.is_empty());
}

#[test]
fn rows_per_probe_come_from_the_statistics_scaled_to_the_table() {
    let table = orders();
    let templates = lookup_templates(&table, &[1], &[], None, &IndexHint::Auto);
    let by_user = template(&templates, LookupKey::Index(0));
    assert_eq!(
        by_user.rows_per_probe(None, 1_000_000),
        DEFAULT_ROWS_PER_PROBE
    );
    assert_eq!(by_user.rows_per_probe(None, 3), 3.0);
    let statistics = TableStatistics {
        rows: 100_000,
        gathered_at_micros: 0,
        primary: KeyStatistics {
            entries: 100_000,
            distinct: vec![100_000],
            samples: Vec::new(),
        },
        indexes: BTreeMap::from([(
            71,
            KeyStatistics {
                entries: 100_000,
                distinct: vec![50_000],
                samples: Vec::new(),
            },
        )]),
    };
    assert_eq!(by_user.rows_per_probe(Some(&statistics), 100_000), 2.0);
    // The table doubled since: so did each user's orders.
    assert_eq!(by_user.rows_per_probe(Some(&statistics), 200_000), 4.0);
    let on_id = lookup_templates(&table, &[0], &[], None, &IndexHint::Auto);
    assert_eq!(on_id[0].rows_per_probe(Some(&statistics), 100_000), 1.0);
    let unique = lookup_templates(&table, &[3], &[], None, &IndexHint::Auto);
    assert_eq!(unique[0].rows_per_probe(None, 100_000), 1.0);
}

#[test]
fn few_probes_cost_less_than_a_full_scan_and_many_cost_more() {
    let table = orders();
    let rows = 1_000_000;
    let full = estimate(
        &crate::primary_key::plan_scan(table.clone(), Vec::new(), Direction::Forward, 0, None),
        &[] as &[Count],
        rows,
        costs(),
    );
    let on_id = lookup_templates(&table, &[0], &[], None, &IndexHint::Auto);
    let one = on_id[0].estimate(1.0, 1.0, costs());
    assert_eq!(one.rows, 1.0);
    assert!(one.cost_us * 1_000.0 < full.cost_us, "{one:?} {full:?}");
    let every = on_id[0].estimate(rows as f64, 1.0, costs());
    assert!(every.cost_us > full.cost_us, "{every:?} {full:?}");

    let by_user = lookup_templates(&table, &[1], &[], None, &IndexHint::Auto);
    let probe = by_user[0].estimate(10.0, 2.0, costs());
    // Ten seeks, twenty entries, twenty row lookups; the join's work per probe and row.
    assert_eq!(probe.entries, 40.0);
    let reads = 10.0 * 2.0 + 20.0 * 0.2 + 20.0 * 2.5;
    let join = (10.0 * super::PROBE_CPU_NS + 20.0 * super::JOIN_ROW_NS) / 1000.0;
    assert!((probe.cost_us - (reads + join)).abs() < 1e-9, "{probe:?}");
}

#[test]
fn on_a_store_that_batches_ranges_probes_pay_a_seek_per_batch() {
    let table = orders();
    let by_user = lookup_templates(&table, &[1], &[], None, &IndexHint::Auto);
    let batching = AccessCosts {
        seek_ns: 500_000,
        range_in_batch_ns: Some(30_000),
        ..costs()
    };
    let each_a_seek = AccessCosts {
        range_in_batch_ns: None,
        ..batching
    };
    // 250 probes finding a row each: three batches of ranges, and 250 ranges within them.
    let batched = by_user[0].estimate(250.0, 1.0, batching);
    let sought = by_user[0].estimate(250.0, 1.0, each_a_seek);
    let rest = 250.0 * 0.2
        + 250.0 * 2.5
        + (250.0 * super::PROBE_CPU_NS + 250.0 * super::JOIN_ROW_NS) / 1000.0;
    assert!(
        (batched.cost_us - (3.0 * 500.0 + 250.0 * 30.0 + rest)).abs() < 1e-6,
        "{batched:?}"
    );
    assert!(
        (sought.cost_us - (250.0 * 500.0 + rest)).abs() < 1e-6,
        "{sought:?}"
    );
    // One probe is one range: a seek either way.
    let one = by_user[0].estimate(1.0, 1.0, batching);
    let one_sought = by_user[0].estimate(1.0, 1.0, each_a_seek);
    assert_eq!(one.cost_us, one_sought.cost_us);
}
