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

/// Whether every row a partial `index` holds satisfies `predicate`: the query's condition is
/// then no check of the index's rows (`state = 'flagged'` over an index `WHERE state =
/// 'flagged'`), which lets a count be counted in the index and a covering index cover.
pub(crate) fn guaranteed(index: &IndexDef, predicate: &Predicate) -> bool {
    let Some(filter) = &index.filter else {
        return false;
    };
    if matches!(
        predicate,
        Predicate::Or { .. } | Predicate::RowCompare { .. }
    ) {
        return false;
    }
    filter
        .conditions
        .iter()
        .any(|condition| condition.column == predicate.column() && ensures(condition, predicate))
}

/// Whether every value passing `condition` satisfies `predicate` (on the same column).
fn ensures(condition: &FilterCondition, predicate: &Predicate) -> bool {
    // The values the condition lets through, when it is a list of them.
    let listed: Option<Vec<&[u8]>> = match &condition.test {
        FilterTest::Compare {
            op: FilterOp::Eq,
            value,
        } => Some(vec![value.as_slice()]),
        FilterTest::InList { values } => Some(values.iter().map(Vec::as_slice).collect()),
        _ => None,
    };
    match (&condition.test, predicate) {
        (FilterTest::IsNull, Predicate::IsNull { .. }) => true,
        (FilterTest::IsNotNull, Predicate::IsNotNull { .. }) => true,
        // A comparison or a list keeps no NULL.
        (FilterTest::Compare { .. } | FilterTest::InList { .. }, Predicate::IsNotNull { .. }) => {
            true
        }
        (
            FilterTest::Compare { op, value },
            Predicate::Compare {
                op: q, value: v, ..
            },
        ) if listed.is_none() => {
            // The same test (`score > 5` over an index `WHERE score > 5`).
            FilterOp::from(*q) == *op && filter_value(v) == *value
        }
        (_, Predicate::Compare { op, value, .. }) => listed.is_some_and(|values| {
            let bound = filter_value(value);
            values
                .iter()
                .all(|listed| op.holds((*listed).cmp(bound.as_slice())))
        }),
        (_, Predicate::InList { values, .. }) => listed.is_some_and(|listed| {
            let kept: Vec<Vec<u8>> = values.iter().map(filter_value).collect();
            listed
                .iter()
                .all(|l| kept.iter().any(|k| k.as_slice() == *l))
        }),
        _ => false,
    }
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
    fn conditions_the_index_condition_guarantees() {
        let eq7 = index(FilterTest::Compare {
            op: FilterOp::Eq,
            value: filter_value(&Datum::Int(7)),
        });
        assert!(guaranteed(&eq7, &cmp(CmpOp::Eq, 7)));
        assert!(guaranteed(&eq7, &cmp(CmpOp::GtEq, 7)));
        assert!(guaranteed(&eq7, &cmp(CmpOp::Lt, 9)));
        assert!(!guaranteed(&eq7, &cmp(CmpOp::Lt, 7)));
        assert!(guaranteed(&eq7, &Predicate::IsNotNull { column: 1 }));
        assert!(!guaranteed(&eq7, &Predicate::IsNull { column: 1 }));
        let list = |ns: &[i64]| Predicate::InList {
            column: 1,
            values: ns.iter().map(|n| Datum::Int(*n)).collect(),
        };
        assert!(guaranteed(&eq7, &list(&[1, 7])));
        assert!(!guaranteed(&eq7, &list(&[1, 8])));
        // Of another column, nothing.
        assert!(!guaranteed(
            &eq7,
            &Predicate::Compare {
                column: 0,
                op: CmpOp::Eq,
                value: Datum::Int(7)
            }
        ));
        let in_list = index(FilterTest::InList {
            values: vec![filter_value(&Datum::Int(2)), filter_value(&Datum::Int(5))],
        });
        assert!(guaranteed(&in_list, &list(&[5, 2, 9])));
        assert!(!guaranteed(&in_list, &list(&[5])));
        assert!(guaranteed(&in_list, &cmp(CmpOp::Gt, 1)));
        assert!(!guaranteed(&in_list, &cmp(CmpOp::Gt, 2)));
        // A range guarantees the same test only.
        let gt3 = index(FilterTest::Compare {
            op: FilterOp::Gt,
            value: filter_value(&Datum::Int(3)),
        });
        assert!(guaranteed(&gt3, &cmp(CmpOp::Gt, 3)));
        assert!(!guaranteed(&gt3, &cmp(CmpOp::Gt, 4)));
        assert!(!guaranteed(&index(FilterTest::IsNull), &cmp(CmpOp::Eq, 1)));
        assert!(guaranteed(
            &index(FilterTest::IsNull),
            &Predicate::IsNull { column: 1 }
        ));
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
