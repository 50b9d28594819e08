//! `UuidLiterals`: a string literal compared with a UUID is read as a UUID.
//!
//! A UUID travels through DataFusion as its canonical text (`df::uuid_functions`), so
//! `owner = 'A0EEBC99-...'` would compare text and miss the row PostgreSQL finds, and
//! `id < 'b'` would compare where PostgreSQL refuses the literal (22P02). This rule, before any
//! simplification, replaces each text literal compared with a UUID-typed expression (`=`, `<>`,
//! `<`, `<=`, `>`, `>=`, IS [NOT] DISTINCT FROM, IN lists, BETWEEN) with the literal's canonical
//! text, and fails the statement with `Error::InvalidTextRepresentation` for one that is no
//! UUID. Not a DataFusion bug: DataFusion has no UUID type; rowdex keeps this rule as long as
//! UUIDs travel as text.
//!
//! A `jsonb` travels as its normalised text the same way, so a text literal compared with one
//! is normalised here too (22P02 for text that is no JSON): `doc IN ('{"b":1,"a":2}')` finds
//! the row stored as `{"a": 2, "b": 1}`. (`=`, `<>` and the ordering comparisons of a jsonb
//! are already planned by `functions::json::operators`; this covers IN lists and BETWEEN.)

use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr::{Between, InList};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use rowdex_codec::json::Jsonb;
use rowdex_codec::{UuidText, parse_uuid};

use crate::df::rules::expression_rewrite::{inputs_schema, rewrite_expressions_keeping_names};
use crate::error::Error;
use crate::values::{declared_type_of, is_uuid_field};

#[derive(Debug, Default)]
pub struct UuidLiterals;

impl OptimizerRule for UuidLiterals {
    fn name(&self) -> &str {
        "rowdex_uuid_literals"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        // The expressions of a node read its inputs' columns; a node none of whose inputs has
        // a UUID or jsonb column (most of them) is left as it is without a look at its
        // expressions.
        let any_text_form = plan.inputs().iter().any(|input| {
            input
                .schema()
                .fields()
                .iter()
                .any(|field| is_uuid_field(field) || declared_type_of(field) == Some("JSONB"))
        });
        if !any_text_form {
            return Ok(Transformed::no(plan));
        }
        let schema = inputs_schema(&plan);
        rewrite_expressions_keeping_names(plan, |expr| uuid_literals(expr, &schema))
    }
}

/// A type whose values travel as a canonical text, which a text literal is read into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextForm {
    Uuid,
    Jsonb,
}

/// The canonical-text type `expr` has over `schema`, if any.
fn text_form(expr: &Expr, schema: &DFSchema) -> Option<TextForm> {
    let (_, field) = expr.to_field(schema).ok()?;
    if is_uuid_field(&field) {
        Some(TextForm::Uuid)
    } else if declared_type_of(&field) == Some("JSONB") {
        Some(TextForm::Jsonb)
    } else {
        None
    }
}

/// The canonical text of a text literal read as `form`; None for an expression that is no
/// text literal (left as it is); an error for text that is no such value.
fn canonical(expr: &Expr, form: TextForm) -> DfResult<Option<Expr>> {
    let Expr::Literal(value, metadata) = expr else {
        return Ok(None);
    };
    let text = match value {
        ScalarValue::Utf8(Some(text))
        | ScalarValue::Utf8View(Some(text))
        | ScalarValue::LargeUtf8(Some(text)) => text,
        _ => return Ok(None),
    };
    let canonical = match form {
        TextForm::Uuid => match parse_uuid(text) {
            Some(uuid) => UuidText::new(&uuid).as_str().to_string(),
            None => {
                return Err(Error::InvalidTextRepresentation {
                    type_name: "uuid",
                    value: text.clone(),
                }
                .into());
            }
        },
        TextForm::Jsonb => Jsonb::parse(text).map_err(Error::from)?.to_text(),
    };
    Ok(Some(Expr::Literal(
        ScalarValue::Utf8(Some(canonical)),
        metadata.clone(),
    )))
}

/// `expr` with its text literals read as UUIDs where it compares them with a UUID.
fn uuid_literals(expr: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(
                op,
                Operator::Eq
                    | Operator::NotEq
                    | Operator::Lt
                    | Operator::LtEq
                    | Operator::Gt
                    | Operator::GtEq
                    | Operator::IsDistinctFrom
                    | Operator::IsNotDistinctFrom
            ) =>
        {
            let (left, right) = if let Some(form) = text_form(&left, schema) {
                match canonical(&right, form)? {
                    Some(literal) => (left, Box::new(literal)),
                    None => {
                        return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                            left,
                            op,
                            right,
                        })));
                    }
                }
            } else if let Some(form) = text_form(&right, schema) {
                match canonical(&left, form)? {
                    Some(literal) => (Box::new(literal), right),
                    None => {
                        return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                            left,
                            op,
                            right,
                        })));
                    }
                }
            } else {
                return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                    left,
                    op,
                    right,
                })));
            };
            Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                left,
                op,
                right,
            })))
        }
        Expr::InList(InList {
            expr: tested,
            list,
            negated,
        }) if text_form(&tested, schema).is_some() => {
            let form = text_form(&tested, schema);
            let list = list
                .into_iter()
                .map(|item| match form {
                    Some(form) => Ok(canonical(&item, form)?.unwrap_or(item)),
                    None => Ok(item),
                })
                .collect::<DfResult<Vec<_>>>()?;
            Ok(Transformed::yes(Expr::InList(InList {
                expr: tested,
                list,
                negated,
            })))
        }
        Expr::Between(Between {
            expr: tested,
            negated,
            low,
            high,
        }) if text_form(&tested, schema).is_some() => {
            let form = text_form(&tested, schema);
            let read = |bound: Box<Expr>| -> DfResult<Box<Expr>> {
                Ok(Box::new(match form {
                    Some(form) => canonical(&bound, form)?.unwrap_or(*bound),
                    None => *bound,
                }))
            };
            let (low, high) = (read(low)?, read(high)?);
            Ok(Transformed::yes(Expr::Between(Between {
                expr: tested,
                negated,
                low,
                high,
            })))
        }
        other => Ok(Transformed::no(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::uuid_field;

    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::logical_expr::{col, lit};

    fn schema() -> DFSchema {
        let uuid = uuid_field("u", true);
        let text = Field::new("s", DataType::Utf8, true);
        DFSchema::try_from(Schema::new(vec![uuid, text])).expect("schema")
    }

    #[test]
    fn text_compared_with_a_uuid_is_read_as_one() {
        let schema = schema();
        let upper = col("u").eq(lit("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"));
        let rewritten = uuid_literals(upper, &schema).expect("a uuid");
        assert!(rewritten.transformed);
        assert_eq!(
            rewritten.data,
            col("u").eq(lit("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
        );
        let swapped = uuid_literals(
            lit("{00000000000000000000000000000001}").lt(col("u")),
            &schema,
        )
        .expect("a uuid");
        assert_eq!(
            swapped.data,
            lit("00000000-0000-0000-0000-000000000001").lt(col("u"))
        );
        // Text columns keep their comparisons; a literal that is no UUID is refused.
        assert!(
            !uuid_literals(col("s").eq(lit("X")), &schema)
                .expect("text")
                .transformed
        );
        let refused = uuid_literals(col("u").lt(lit("b")), &schema).expect_err("no uuid");
        assert!(
            refused
                .to_string()
                .contains("invalid input syntax for type uuid"),
            "{refused}"
        );
        let listed = uuid_literals(
            col("u").in_list(vec![lit("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")], false),
            &schema,
        )
        .expect("a uuid");
        assert_eq!(
            listed.data,
            col("u").in_list(vec![lit("ffffffff-ffff-ffff-ffff-ffffffffffff")], false)
        );
    }
}
