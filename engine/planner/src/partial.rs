//! Whether a partial index may answer a query: every test of its condition must follow from
//! one of the query's conditions on the same column (`a = 5` implies `a > 3` and `a IS NOT
//! NULL`; `a IN (4, 6)` implies `a > 3`; `a > 7` implies `a >= 5`). A query that does not
//! imply the condition might want rows the index leaves out, so it reads another path.

use std::cmp::Ordering;

use rowdex_catalog::{FilterCondition, FilterOp, FilterTest, IndexDef, filter_value};
use rowdex_codec::Datum;

use crate::predicate::{CmpOp, Predicate};

/// Whether `index` holds every row `predicates` (a conjunction) can select: it is not partial,
/// or the predicates imply its condition.
pub(crate) fn answers(index: &IndexDef, predicates: &[Predicate]) -> bool {
    index.filter.as_ref().is_none_or(|filter| {
        filter
            .conditions
            .iter()
            .all(|condition| predicates.iter().any(|p| implies(p, condition)))
    })
}

/// Whether every row `predicate` keeps passes `condition`.
fn implies(predicate: &Predicate, condition: &FilterCondition) -> bool {
    if let Predicate::Or { arms } = predicate {
        return arms
            .iter()
            .all(|arm| arm.iter().any(|p| implies(p, condition)));
    }
    if matches!(predicate, Predicate::RowCompare { .. }) || predicate.column() != condition.column {
        return false;
    }
    match (&condition.test, predicate) {
        // A comparison, an IN list or a LIKE keeps no NULL.
        (
            FilterTest::IsNotNull,
            Predicate::Compare { .. }
            | Predicate::InList { .. }
            | Predicate::Like { .. }
            | Predicate::IsNotNull { .. },
        ) => true,
        (FilterTest::IsNull, Predicate::IsNull { .. }) => true,
        (
            FilterTest::Compare { op, value },
            Predicate::Compare {
                op: q, value: v, ..
            },
        ) => compare_implies(*q, &filter_value(v), *op, value),
        (FilterTest::Compare { op, value }, Predicate::InList { values, .. }) => {
            !values.is_empty() && values.iter().all(|v| holds(v, *op, value))
        }
        (
            FilterTest::InList { values },
            Predicate::Compare {
                op: CmpOp::Eq,
                value,
                ..
            },
        ) => values.contains(&filter_value(value)),
        (FilterTest::InList { values }, Predicate::InList { values: kept, .. }) => {
            !kept.is_empty() && kept.iter().all(|v| values.contains(&filter_value(v)))
        }
        _ => false,
    }
}

/// Whether `value op bound` holds (encoded comparison).
fn holds(value: &Datum, op: FilterOp, bound: &[u8]) -> bool {
    op.holds(filter_value(value).as_slice().cmp(bound))
}

/// Whether every x with `x q v` has `x op f`.
fn compare_implies(q: CmpOp, v: &[u8], op: FilterOp, f: &[u8]) -> bool {
    let vs = v.cmp(f);
    match q {
        CmpOp::Eq => op.holds(vs),
        CmpOp::NotEq => op == FilterOp::NotEq && vs == Ordering::Equal,
        // x > v: every x past v.
        CmpOp::Gt => match op {
            FilterOp::Gt | FilterOp::GtEq | FilterOp::NotEq => vs != Ordering::Less,
            _ => false,
        },
        CmpOp::GtEq => match op {
            FilterOp::Gt | FilterOp::NotEq => vs == Ordering::Greater,
            FilterOp::GtEq => vs != Ordering::Less,
            _ => false,
        },
        CmpOp::Lt => match op {
            FilterOp::Lt | FilterOp::LtEq | FilterOp::NotEq => vs != Ordering::Greater,
            _ => false,
        },
        CmpOp::LtEq => match op {
            FilterOp::Lt | FilterOp::NotEq => vs == Ordering::Less,
            FilterOp::LtEq => vs != Ordering::Greater,
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex_catalog::{IndexFilter, IndexState, KeyColumn};

    fn index(test: FilterTest) -> IndexDef {
        IndexDef {
            id: 1,
            name: "p".into(),
            columns: vec![KeyColumn {
                column: 0,
                desc: false,
            }],
            include: Vec::new(),
            unique: false,
            state: IndexState::Ready,
            salt_buckets: 0,
            constraint: false,
            filter: Some(IndexFilter {
                text: String::new(),
                conditions: vec![FilterCondition { column: 1, test }],
            }),
        }
    }

    fn cmp(op: CmpOp, n: i64) -> Predicate {
        Predicate::Compare {
            column: 1,
            op,
            value: Datum::Int(n),
        }
    }

    #[test]
    fn conditions_that_imply_the_index_condition() {
        let gt3 = index(FilterTest::Compare {
            op: FilterOp::Gt,
            value: filter_value(&Datum::Int(3)),
        });
        assert!(answers(&gt3, &[cmp(CmpOp::Eq, 4)]));
        assert!(!answers(&gt3, &[cmp(CmpOp::Eq, 3)]));
        assert!(answers(&gt3, &[cmp(CmpOp::Gt, 3)]));
        assert!(answers(&gt3, &[cmp(CmpOp::GtEq, 4), cmp(CmpOp::Lt, 9)]));
        assert!(!answers(&gt3, &[cmp(CmpOp::GtEq, 3)]));
        assert!(!answers(&gt3, &[cmp(CmpOp::Lt, 9)]));
        assert!(!answers(&gt3, &[]));
        // Negative numbers order before positive ones in the encoding too.
        assert!(!answers(&gt3, &[cmp(CmpOp::Eq, -5)]));
        let list = |ns: &[i64]| Predicate::InList {
            column: 1,
            values: ns.iter().map(|n| Datum::Int(*n)).collect(),
        };
        assert!(answers(&gt3, &[list(&[4, 100])]));
        assert!(!answers(&gt3, &[list(&[4, 1])]));
        let or = Predicate::Or {
            arms: vec![vec![cmp(CmpOp::Eq, 5)], vec![cmp(CmpOp::Gt, 10)]],
        };
        assert!(answers(&gt3, &[or]));

        let not_null = index(FilterTest::IsNotNull);
        assert!(answers(&not_null, &[cmp(CmpOp::Lt, 0)]));
        assert!(!answers(&not_null, &[Predicate::IsNull { column: 1 }]));
        let null = index(FilterTest::IsNull);
        assert!(answers(&null, &[Predicate::IsNull { column: 1 }]));
        assert!(!answers(&null, &[cmp(CmpOp::Eq, 1)]));
        // A test of another column implies nothing.
        assert!(!answers(
            &not_null,
            &[Predicate::Compare {
                column: 0,
                op: CmpOp::Eq,
                value: Datum::Int(1),
            }]
        ));
    }
}
