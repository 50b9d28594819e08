//! The JSON operators, read by DataFusion's SQL planner through this hook: an operator whose
//! left operand is a `json` or `jsonb` value (a JSON column, a cast, a JSON function's result)
//! becomes a call of the function PostgreSQL implements it with (`functions::json::scalar`):
//!
//! | operator                 | call                                   |
//! |--------------------------|----------------------------------------|
//! | `j -> 'k'`, `j -> 2`     | `json_get(j, ...)`, JSON of j's kind   |
//! | `j ->> 'k'`              | `json_get_text(j, ...)`, text          |
//! | `j #> '{a,b}'`           | `json_get_path(j, ...)`                |
//! | `j #>> '{a,b}'`          | `json_get_path_text(j, ...)`           |
//! | `j @> x`, `j <@ x`       | `jsonb_contains`, `jsonb_contained`    |
//! | `j ? 'k'`, `?|`, `?&`    | `jsonb_exists`, `_any`, `_all`         |
//! | `j || x`, `j - 'k'`      | `jsonb_concat`, `jsonb_delete`         |
//! | `j < x` (`<=`, `>`, `>=`)| `jsonb_cmp(j, x) < 0`                  |
//! | `j = 'text'`, `<>`       | `j = jsonb_in('text')`                 |
//!
//! Equality stays a comparison of the stored texts (so that an index or key on the column
//! still answers it); a literal compared with a `jsonb` is normalised first, so spacing and
//! key order do not matter. Numbers that are equal but written differently (`1.0`, `1`) are
//! not equal this way, where PostgreSQL finds them equal (DESIGN-NOTES "JSON").

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ExprSchemable, ScalarUDF, lit};
use datafusion::sql::sqlparser::ast::BinaryOperator;

use super::kind::JsonKind;

/// The planner hook; holds the functions the operators call.
#[derive(Debug)]
pub(crate) struct JsonOperators {
    functions: HashMap<String, Arc<ScalarUDF>>,
}

impl JsonOperators {
    pub(crate) fn new(functions: &[Arc<ScalarUDF>]) -> JsonOperators {
        JsonOperators {
            functions: functions
                .iter()
                .map(|f| (f.name().to_string(), f.clone()))
                .collect(),
        }
    }

    fn call(&self, name: &str, args: Vec<Expr>) -> Option<Expr> {
        let function = self.functions.get(name)?;
        Some(Expr::ScalarFunction(ScalarFunction::new_udf(
            function.clone(),
            args,
        )))
    }
}

/// The JSON kind of `expr`'s result, if it is JSON.
fn kind_of(expr: &Expr, schema: &DFSchema) -> Option<JsonKind> {
    let (_, field) = expr.to_field(schema).ok()?;
    JsonKind::of_field(&field)
}

/// Whether `expr` is a text literal (of no type yet, as PostgreSQL sees `'...'`).
fn is_text_literal(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Literal(
            ScalarValue::Utf8(_) | ScalarValue::Utf8View(_) | ScalarValue::LargeUtf8(_),
            _
        )
    )
}

impl ExprPlanner for JsonOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> DfResult<PlannerResult<RawBinaryExpr>> {
        let left = kind_of(&expr.left, schema);
        let right = kind_of(&expr.right, schema);
        let jsonb_pair = (left == Some(JsonKind::Jsonb)
            && (right == Some(JsonKind::Jsonb) || is_text_literal(&expr.right)))
            || (right == Some(JsonKind::Jsonb) && is_text_literal(&expr.left));
        let RawBinaryExpr {
            op,
            left: l,
            right: r,
        } = expr;
        let function = match (&op, left) {
            (BinaryOperator::Arrow, Some(_)) => "json_get",
            (BinaryOperator::LongArrow, Some(_)) => "json_get_text",
            (BinaryOperator::HashArrow, Some(_)) => "json_get_path",
            (BinaryOperator::HashLongArrow, Some(_)) => "json_get_path_text",
            (BinaryOperator::AtArrow, _) if jsonb_pair => "jsonb_contains",
            (BinaryOperator::ArrowAt, _) if jsonb_pair => "jsonb_contained",
            (BinaryOperator::Question, Some(JsonKind::Jsonb)) => "jsonb_exists",
            (BinaryOperator::QuestionPipe, Some(JsonKind::Jsonb)) => "jsonb_exists_any",
            (BinaryOperator::QuestionAnd, Some(JsonKind::Jsonb)) => "jsonb_exists_all",
            (BinaryOperator::StringConcat, _) if jsonb_pair => "jsonb_concat",
            (BinaryOperator::Minus, Some(JsonKind::Jsonb)) => "jsonb_delete",
            (
                BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq,
                _,
            ) if jsonb_pair => {
                let Some(compared) = self.call("jsonb_cmp", vec![l.clone(), r.clone()]) else {
                    return Ok(PlannerResult::Original(RawBinaryExpr {
                        op,
                        left: l,
                        right: r,
                    }));
                };
                let zero = lit(0i32);
                return Ok(PlannerResult::Planned(match op {
                    BinaryOperator::Lt => compared.lt(zero),
                    BinaryOperator::LtEq => compared.lt_eq(zero),
                    BinaryOperator::Gt => compared.gt(zero),
                    _ => compared.gt_eq(zero),
                }));
            }
            (BinaryOperator::Eq | BinaryOperator::NotEq, _) if jsonb_pair => {
                // Normalise the literal side; the comparison itself stays DataFusion's.
                let normalised = |e: Expr| {
                    if is_text_literal(&e) {
                        self.call("jsonb_in", vec![e.clone()]).unwrap_or(e)
                    } else {
                        e
                    }
                };
                return Ok(PlannerResult::Original(RawBinaryExpr {
                    op,
                    left: normalised(l),
                    right: normalised(r),
                }));
            }
            _ => {
                return Ok(PlannerResult::Original(RawBinaryExpr {
                    op,
                    left: l,
                    right: r,
                }));
            }
        };
        match self.call(function, vec![l.clone(), r.clone()]) {
            Some(call) => Ok(PlannerResult::Planned(call)),
            None => Ok(PlannerResult::Original(RawBinaryExpr {
                op,
                left: l,
                right: r,
            })),
        }
    }
}
