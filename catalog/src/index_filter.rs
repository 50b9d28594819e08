//! A partial index's condition (`CREATE INDEX ... WHERE b > 3 AND c IS NULL`): only the rows it
//! holds for get entries. It is a conjunction of column tests against constants, kept with the
//! constants in the key encoding (order-preserving, so a comparison of encoded values is the
//! comparison of the values), which lets the indexer decide per row without an expression
//! evaluator and the planner decide whether a query's conditions imply it.

use std::cmp::Ordering;

use rowdex_codec::{Datum, SortOrder, key};
use serde::{Deserialize, Serialize};

/// The condition of a partial index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexFilter {
    /// The condition as written, for `\d`, `pg_indexes` and SHOW CREATE.
    pub text: String,
    /// Every one must hold.
    pub conditions: Vec<FilterCondition>,
}

/// One test of one column (a position in the table's columns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterCondition {
    pub column: usize,
    pub test: FilterTest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FilterOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// What a condition tests; values are encoded as keys in ascending order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FilterTest {
    Compare { op: FilterOp, value: Vec<u8> },
    InList { values: Vec<Vec<u8>> },
    IsNull,
    IsNotNull,
}

impl FilterOp {
    pub fn holds(self, ordering: Ordering) -> bool {
        match self {
            FilterOp::Eq => ordering == Ordering::Equal,
            FilterOp::NotEq => ordering != Ordering::Equal,
            FilterOp::Lt => ordering == Ordering::Less,
            FilterOp::LtEq => ordering != Ordering::Greater,
            FilterOp::Gt => ordering == Ordering::Greater,
            FilterOp::GtEq => ordering != Ordering::Less,
        }
    }
}

/// `value` in the encoding a filter keeps its constants in.
pub fn filter_value(value: &Datum) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    key::encode_datum(&mut out, value, SortOrder::Asc);
    out
}

impl IndexFilter {
    /// Whether `row` (every column, in column order) satisfies the condition: a comparison with
    /// a NULL is not true, as in a WHERE.
    pub fn holds(&self, row: &[Datum]) -> bool {
        self.conditions.iter().all(|condition| {
            let Some(datum) = row.get(condition.column) else {
                return false;
            };
            match &condition.test {
                FilterTest::IsNull => datum.is_null(),
                FilterTest::IsNotNull => !datum.is_null(),
                _ if datum.is_null() => false,
                FilterTest::Compare { op, value } => {
                    op.holds(filter_value(datum).as_slice().cmp(value.as_slice()))
                }
                FilterTest::InList { values } => {
                    let encoded = filter_value(datum);
                    values.contains(&encoded)
                }
            }
        })
    }

    /// Whether the condition tests `column`.
    pub fn names_column(&self, column: usize) -> bool {
        self.conditions.iter().any(|c| c.column == column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_passes_when_every_test_holds_and_null_compares_false() {
        let filter = IndexFilter {
            text: "b > 3 AND c IS NULL".into(),
            conditions: vec![
                FilterCondition {
                    column: 1,
                    test: FilterTest::Compare {
                        op: FilterOp::Gt,
                        value: filter_value(&Datum::Int(3)),
                    },
                },
                FilterCondition {
                    column: 2,
                    test: FilterTest::IsNull,
                },
            ],
        };
        let row = |b: Datum, c: Datum| vec![Datum::Int(1), b, c];
        assert!(filter.holds(&row(Datum::Int(4), Datum::Null)));
        assert!(!filter.holds(&row(Datum::Int(3), Datum::Null)));
        assert!(!filter.holds(&row(Datum::Int(-7), Datum::Null)));
        assert!(!filter.holds(&row(Datum::Int(9), Datum::Int(1))));
        assert!(!filter.holds(&row(Datum::Null, Datum::Null)));
        // Negative and positive integers, and text, compare as values.
        let in_list = IndexFilter {
            text: "c IN ('x', 'y')".into(),
            conditions: vec![FilterCondition {
                column: 2,
                test: FilterTest::InList {
                    values: vec![
                        filter_value(&Datum::Text("x".into())),
                        filter_value(&Datum::Text("y".into())),
                    ],
                },
            }],
        };
        assert!(in_list.holds(&row(Datum::Null, Datum::Text("y".into()))));
        assert!(!in_list.holds(&row(Datum::Null, Datum::Text("xy".into()))));
        assert!(!in_list.holds(&row(Datum::Null, Datum::Null)));
    }
}
