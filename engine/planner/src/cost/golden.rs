//! Golden plans: the cost model's choice, and every candidate with its estimate, for the query
//! shapes of the scale issue over synthetic statistics of a 10,000,000-row table, compared with
//! `engine/planner/golden/plans.txt`. A cost-model change that moves a plan or an estimate shows
//! as a diff of that file: review it, then rewrite the file with
//! `ROWDEX_BLESS=1 cargo test -p rowdex-planner golden`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use rowdex_catalog::statistics::{KeyStatistics, TableStatistics};
use rowdex_catalog::{ColumnDef, DataType, IndexDef, IndexState, KeyColumn, TableDef};
use rowdex_codec::{Datum, SortOrder, key};
use rowdex_store::AccessCosts;

use crate::candidates::{IndexHint, ScanRequest, candidates};
use crate::cost::{Count, by_cost, cheapest, estimate_all, statistics_counts};
use crate::predicate::{CmpOp, Predicate};

const ROWS: u64 = 10_000_000;

/// fjall's figures (see `FjallStore::capabilities`).
const FJALL: AccessCosts = AccessCosts {
    seek_ns: 5_400,
    next_ns: 280,
    get_ns: 3_500,
    check_ns: 1_500,
    reverse_reads_whole_range: false,
    range_in_batch_ns: None,
};

/// Columns of `t`, in order.
const COLUMNS: [&str; 8] = ["id", "a", "b", "s", "c", "d", "v", "pad"];

fn column(name: &str) -> usize {
    COLUMNS
        .iter()
        .position(|c| *c == name)
        .unwrap_or(usize::MAX)
}

/// `t (id PRIMARY KEY, a, b, s, c, d, v, pad)` with `ia(a)`, `ib(b) INCLUDE (a)`, `isx(s)`,
/// `ic(c)`, `idd(d)` and `iad(a, d)`.
fn table() -> Arc<TableDef> {
    let columns = COLUMNS
        .iter()
        .map(|name| {
            let data_type = if *name == "pad" {
                DataType::Text { max_len: None }
            } else {
                DataType::Integer
            };
            ColumnDef::nullable(name, data_type)
        })
        .collect();
    let mut def = TableDef::new("t", columns, &[("id".to_string(), false)], 0)
        .unwrap_or_else(|e| panic!("a valid table: {e}"));
    def.id = 100;
    let index = |id: u32, name: &str, on: &[&str], include: &[&str]| IndexDef {
        id,
        name: name.to_string(),
        columns: on
            .iter()
            .map(|c| KeyColumn {
                column: column(c),
                desc: false,
            })
            .collect(),
        include: include.iter().map(|c| column(c)).collect(),
        unique: false,
        state: IndexState::Ready,
        salt_buckets: 0,
        constraint: false,
        filter: None,
    };
    def.indexes = vec![
        index(101, "ia", &["a"], &[]),
        index(102, "ib", &["b"], &["a"]),
        index(103, "isx", &["s"], &[]),
        index(104, "ic", &["c"], &[]),
        index(105, "idd", &["d"], &[]),
        index(106, "iad", &["a", "d"], &[]),
    ];
    Arc::new(def)
}

/// The statistics of a column holding `distinct` values spread evenly over the rows.
fn evenly(distinct: &[u64]) -> KeyStatistics {
    let leading = distinct.first().copied().unwrap_or(1);
    let samples = (0..64u64)
        .map(|k| {
            let mut out = Vec::new();
            key::encode_datum(
                &mut out,
                &Datum::Int((k * leading / 64) as i64),
                SortOrder::Asc,
            );
            out
        })
        .collect();
    KeyStatistics {
        entries: ROWS,
        distinct: distinct.to_vec(),
        samples,
    }
}

/// `a` 200 values (0.5 %), `b` unique, `s` 5,000 values (2,000 rows each), `c` and `d` 4.
fn statistics() -> TableStatistics {
    TableStatistics {
        rows: ROWS,
        gathered_at_micros: 0,
        primary: evenly(&[ROWS]),
        indexes: BTreeMap::from([
            (101, evenly(&[200])),
            (102, evenly(&[ROWS])),
            (103, evenly(&[5_000])),
            (104, evenly(&[4])),
            (105, evenly(&[4])),
            (106, evenly(&[200, 800])),
        ]),
    }
}

fn compare(name: &str, op: CmpOp, value: i64) -> Predicate {
    Predicate::Compare {
        column: column(name),
        op,
        value: Datum::Int(value),
    }
}

fn eq(name: &str, value: i64) -> Predicate {
    compare(name, CmpOp::Eq, value)
}

fn or(arms: Vec<Vec<Predicate>>) -> Predicate {
    Predicate::Or { arms }
}

/// (what the case is, its conditions, the columns it reads, its LIMIT)
type Case = (
    &'static str,
    Vec<Predicate>,
    Vec<&'static str>,
    Option<usize>,
);

fn cases() -> Vec<Case> {
    let all = COLUMNS.to_vec();
    vec![
        ("a = 7: 0.5 %", vec![eq("a", 7)], all.clone(), None),
        (
            "a = 5 AND b >= 0, reading b: ib covers it but holds every row",
            vec![eq("a", 5), compare("b", CmpOp::GtEq, 0)],
            vec!["b"],
            None,
        ),
        (
            "s = 5: 2,000 rows",
            vec![eq("s", 5)],
            vec!["id", "pad", "b"],
            None,
        ),
        (
            "c = 1 AND d = 2: two dense equalities",
            vec![eq("c", 1), eq("d", 2)],
            vec!["id"],
            None,
        ),
        (
            "c = 1 AND d = 2 LIMIT 1",
            vec![eq("c", 1), eq("d", 2)],
            vec!["id"],
            Some(1),
        ),
        (
            "a = 5 AND c = 1: a sparse and a dense equality",
            vec![eq("a", 5), eq("c", 1)],
            all.clone(),
            None,
        ),
        (
            "a = 5 AND b < 5,000,000: an equality and half the table out of key order",
            vec![eq("a", 5), compare("b", CmpOp::Lt, 5_000_000)],
            vec!["id"],
            None,
        ),
        (
            "b < 1,000: a narrow range on a unique column",
            vec![compare("b", CmpOp::Lt, 1_000)],
            all.clone(),
            None,
        ),
        (
            "b BETWEEN 1,000 AND 3,000,000: 30 % of the table",
            vec![
                compare("b", CmpOp::GtEq, 1_000),
                compare("b", CmpOp::LtEq, 3_000_000),
            ],
            all.clone(),
            None,
        ),
        (
            "a = 5 AND d = 2: a composite index and two single ones",
            vec![eq("a", 5), eq("d", 2)],
            all.clone(),
            None,
        ),
        (
            "id >= 9,999,000: a key range",
            vec![compare("id", CmpOp::GtEq, 9_999_000)],
            all.clone(),
            None,
        ),
        (
            "a IN (8 values) AND c = 1: an IN-list input opens a range per value",
            vec![
                Predicate::InList {
                    column: column("a"),
                    values: (10..18).map(Datum::Int).collect(),
                },
                eq("c", 1),
            ],
            vec!["id"],
            None,
        ),
        (
            "a = 7 OR s = 5: two sparse arms, a union",
            vec![or(vec![vec![eq("a", 7)], vec![eq("s", 5)]])],
            all.clone(),
            None,
        ),
        (
            "a = 7 OR id < 1,000, reading id: an index arm and a key arm, covering",
            vec![or(vec![
                vec![eq("a", 7)],
                vec![compare("id", CmpOp::Lt, 1_000)],
            ])],
            vec!["id"],
            None,
        ),
        (
            "a = 7 OR c = 1: a dense arm, the table read",
            vec![or(vec![vec![eq("a", 7)], vec![eq("c", 1)]])],
            all.clone(),
            None,
        ),
        (
            "(a = 7 OR s = 5) AND c = 1: a union and a dense residual",
            vec![or(vec![vec![eq("a", 7)], vec![eq("s", 5)]]), eq("c", 1)],
            all.clone(),
            None,
        ),
        (
            "a = 7 OR v = 3: an arm without an index",
            vec![or(vec![vec![eq("a", 7)], vec![eq("v", 3)]])],
            all.clone(),
            None,
        ),
        ("v = 3: no index", vec![eq("v", 3)], all, None),
    ]
}

fn render() -> String {
    let table = table();
    let stats = statistics();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Plans over 10,000,000 rows of t (see cost/golden.rs); * marks the choice."
    );
    for (label, predicates, reads, limit) in cases() {
        let request = ScanRequest {
            table: table.clone(),
            predicates,
            direction: crate::Direction::Forward,
            offset: 0,
            limit,
            needed: Some(reads.iter().map(|c| column(c)).collect()),
            hint: IndexHint::Auto,
        };
        let plans = candidates(&request);
        let counts: Vec<Vec<Count>> = plans
            .iter()
            .map(|plan| statistics_counts(plan, &stats, ROWS))
            .collect();
        let estimated = estimate_all(plans, &counts, ROWS, FJALL);
        let chosen = cheapest(estimated.clone()).map(|plan| plan.to_string());
        let _ = writeln!(out, "\n## {label}");
        for plan in by_cost(estimated) {
            let text = plan.to_string();
            let mark = if Some(&text) == chosen.as_ref() {
                "*"
            } else {
                " "
            };
            let _ = writeln!(out, "{mark} {text}");
        }
    }
    out
}

#[test]
fn plans_over_large_statistics_match_the_golden_file() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let path = std::path::Path::new(&dir).join("golden/plans.txt");
    let rendered = render();
    if std::env::var_os("ROWDEX_BLESS").is_some() {
        std::fs::write(&path, &rendered)
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (write it with ROWDEX_BLESS=1 cargo test -p rowdex-planner golden)",
            path.display()
        )
    });
    if golden != rendered {
        let first = golden
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(golden.lines().count().min(rendered.lines().count()));
        panic!(
            "the plans differ from {} from line {} on:\n--- golden\n{}\n--- now\n{}\n\
             Review the change, then ROWDEX_BLESS=1 cargo test -p rowdex-planner golden",
            path.display(),
            first + 1,
            golden
                .lines()
                .skip(first)
                .take(6)
                .collect::<Vec<_>>()
                .join("\n"),
            rendered
                .lines()
                .skip(first)
                .take(6)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}

/// On a backend whose reverse pages read the rest of the range (etcd), `ORDER BY id DESC LIMIT
/// 10` reads the whole table on the server: its cost grows with the table, where a forward
/// scan's or an in-memory reverse scan's stops at the LIMIT.
#[test]
fn a_reverse_scan_costs_its_whole_range_where_pages_sort_on_the_server() {
    let costs = |reverse_reads_whole_range| AccessCosts {
        reverse_reads_whole_range,
        ..FJALL
    };
    let cost = |direction, costs: AccessCosts| {
        let request = ScanRequest {
            table: table(),
            predicates: Vec::new(),
            direction,
            offset: 0,
            limit: Some(10),
            needed: None,
            hint: IndexHint::Auto,
        };
        let plans = candidates(&request);
        let counts: Vec<Vec<Count>> = plans
            .iter()
            .map(|plan| statistics_counts(plan, &statistics(), ROWS))
            .collect();
        cheapest(estimate_all(plans, &counts, ROWS, costs))
            .and_then(|plan| plan.estimate)
            .map(|estimate| estimate.cost_us)
            .unwrap_or(f64::NAN)
    };
    let forward = cost(crate::Direction::Forward, costs(true));
    let reverse_native = cost(crate::Direction::Reverse, costs(false));
    let reverse_sorted = cost(crate::Direction::Reverse, costs(true));
    assert!(
        (forward - reverse_native).abs() < 1.0,
        "{forward} {reverse_native}"
    );
    // 10,000,000 entries at 0.28 µs each: seconds, not microseconds.
    assert!(reverse_sorted > 1_000_000.0, "{reverse_sorted}");
}
