//! The condition of a partial index (`CREATE INDEX ... WHERE ...`), read into the catalog's
//! form: comparisons of a column with a constant, IN lists and IS [NOT] NULL, joined by AND
//! (what the indexer tests per row and the planner proves a query implies).

use datafusion::sql::sqlparser::ast;
use rowdex_catalog::{FilterCondition, FilterOp, FilterTest, IndexFilter, TableDef, filter_value};
use rowdex_planner::Predicate;

use crate::error::{Error, Result};
use crate::native::bind_conditions;
use crate::native::scope::Scope;

/// The catalog's form of `condition` on `table`.
pub(crate) fn index_filter(table: &TableDef, condition: &ast::Expr) -> Result<IndexFilter> {
    let refuse = |reason: &str| Error::Unsupported {
        what: format!("the partial index condition {condition}: {reason}"),
    };
    let shapes = "only comparisons of a column with a constant, IN lists and IS [NOT] NULL, \
                  joined by AND";
    let mut conditions = Vec::new();
    Scope::new(table, None)
        .conditions(condition, &mut conditions)
        .ok_or_else(|| refuse(shapes))?;
    let bound = bind_conditions(table, &conditions, &[])
        .ok_or_else(|| refuse("a constant that is not a value of its column's type"))?;
    if bound.unsatisfiable {
        return Err(refuse("a comparison with NULL holds for no row"));
    }
    let mut tests = Vec::with_capacity(bound.predicates.len());
    for predicate in bound.predicates {
        let (column, test) = match predicate {
            Predicate::Compare { column, op, value } => (
                column,
                FilterTest::Compare {
                    op: FilterOp::from(op),
                    value: filter_value(&value),
                },
            ),
            Predicate::InList { column, values } => (
                column,
                FilterTest::InList {
                    values: values.iter().map(filter_value).collect(),
                },
            ),
            Predicate::IsNull { column } => (column, FilterTest::IsNull),
            Predicate::IsNotNull { column } => (column, FilterTest::IsNotNull),
            Predicate::Like { .. } | Predicate::RowCompare { .. } | Predicate::Or { .. } => {
                return Err(refuse(shapes));
            }
        };
        tests.push(FilterCondition { column, test });
    }
    Ok(IndexFilter {
        text: condition.to_string(),
        conditions: tests,
    })
}
