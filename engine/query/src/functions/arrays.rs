//! Array literals as PostgreSQL reads them: `'{1,2}'::int[]` is `array_in('{1,2}', 'int4')`
//! (`sql::type_casts`), a list of the element type; and a text literal met by an array in a
//! comparison or a containment (`tags = '{a,b}'`, `tags @> '{a}'`, `tags && '{x}'`) is read as
//! an array of that array's elements, as PostgreSQL types an unknown literal by the other
//! operand. DataFusion's own planner then takes the operators on two lists (`@>` is
//! `array_has_all`, `&&` `array_has_any`), and its array functions the rest.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Int32Array, Int64Array, ListArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result as DfResult;
use datafusion::execution::FunctionRegistry;
use datafusion::functions_nested::expr_fn::{array_has_all, array_has_any};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TypeSignature, Volatility, lit,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::BinaryOperator;
use rowdex_catalog::ArrayElement;

use crate::array_text::element_of_arrow;
use crate::error::Error;
use crate::format::list_texts;
use crate::functions::arguments::takes_only;
use crate::values::DECLARED_TYPE;
use crate::values::arrays::{canonical_array_text, list_array, list_type};

/// Registers `array_in` and the literal planner in `ctx`.
pub(crate) fn register_array_functions(ctx: &SessionContext) {
    let array_in = array_in();
    ctx.register_udf(array_in.as_ref().clone());
    ctx.register_udf(array_text().as_ref().clone());
    // PostgreSQL's `array_length` (NULL for an empty array) and `cardinality` (an integer) in
    // place of DataFusion's.
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayLength {
        signature: Signature::one_of(
            vec![TypeSignature::Any(1), TypeSignature::Any(2)],
            Volatility::Immutable,
        ),
    }));
    ctx.register_udf(ScalarUDF::new_from_impl(Cardinality {
        signature: Signature::any(1, Volatility::Immutable),
    }));
    // A planner that cannot be added leaves literals unread: DataFusion then reports the
    // comparison as one of text with a list, which is what it would be.
    let _ = ctx
        .state_ref()
        .write()
        .register_expr_planner(Arc::new(ArrayLiterals { array_in }));
}

fn array_in() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(ArrayIn {
        signature: Signature::any(2, Volatility::Immutable),
    }))
}

/// `array_in(text, element)`: the array `text` spells, of the element type PostgreSQL names
/// `element` (`int4`, `text`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayIn {
    signature: Signature,
}

/// The element type `array_in`'s second argument names.
fn named_element(argument: Option<&ScalarValue>) -> DfResult<ArrayElement> {
    let name = match argument {
        Some(ScalarValue::Utf8(Some(name)) | ScalarValue::Utf8View(Some(name))) => name,
        _ => {
            return Err(Error::BadFunctionArgument {
                function: "array_in",
                reason: "its second argument must name an element type".to_string(),
            }
            .into());
        }
    };
    ArrayElement::of_pg_name(name).ok_or_else(|| {
        Error::Unsupported {
            what: format!("arrays of {name}"),
        }
        .into()
    })
}

impl ScalarUDFImpl for ArrayIn {
    fn name(&self) -> &str {
        "array_in"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(list_type(ArrayElement::Text))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let element = named_element(args.scalar_arguments.get(1).copied().flatten())?;
        let field = Field::new(self.name(), list_type(element), true);
        // Elements that travel as text say what the text is, as a column of them does.
        Ok(Arc::new(match element.declared_array() {
            Some(declared) => {
                field.with_metadata(HashMap::from([(DECLARED_TYPE.to_string(), declared)]))
            }
            None => field,
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let element = match args.args.get(1) {
            Some(ColumnarValue::Scalar(name)) => named_element(Some(name))?,
            _ => named_element(None)?,
        };
        let texts = match args.args.first() {
            Some(texts) => cast(&texts.to_array(rows)?, &DataType::Utf8)?,
            None => {
                return Err(Error::BadFunctionArgument {
                    function: "array_in",
                    reason: "it takes a text and an element type".to_string(),
                }
                .into());
            }
        };
        let Some(texts) = texts.as_any().downcast_ref::<StringArray>() else {
            return Err(Error::BadFunctionArgument {
                function: "array_in",
                reason: "its first argument must be text".to_string(),
            }
            .into());
        };
        let canonical = texts
            .iter()
            .map(|text| {
                text.map(|text| canonical_array_text(text, element))
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let list = list_array(element, canonical.iter().map(Option::as_deref))?;
        Ok(ColumnarValue::Array(list))
    }
}

/// `array_text`, for the rule that plans an array's cast to text as it.
pub(crate) fn array_text() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(ArrayText {
        signature: Signature::any(1, Volatility::Immutable),
    }))
}

/// `array_text(list)`: an array's text as PostgreSQL writes it (`{1,2}`, `{a,"b c"}`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayText {
    signature: Signature,
}

impl ScalarUDFImpl for ArrayText {
    fn name(&self) -> &str {
        "array_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let Some(lists) = args.args.first() else {
            return Err(takes_only("array_text", "it takes an array"));
        };
        let lists = lists.to_array(rows)?;
        let texts =
            list_texts(lists.as_ref()).ok_or_else(|| takes_only("array_text", "an array"))?;
        Ok(ColumnarValue::Array(Arc::new(StringArray::from(texts))))
    }
}

/// `array_length(array, dimension)` as PostgreSQL answers it: the number of elements along
/// dimension 1 (rowdex's arrays have one), NULL for an empty array or another dimension.
/// Without a dimension (DataFusion's form, which its own rewrites use) it is dimension 1.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayLength {
    signature: Signature,
}

impl ScalarUDFImpl for ArrayLength {
    fn name(&self) -> &str {
        "array_length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|arg| arg.to_array(rows))
            .collect::<DfResult<Vec<_>>>()?;
        let (lists, dimensions) = match arrays.as_slice() {
            [lists, dimensions] => (lists, cast(dimensions, &DataType::Int64)?),
            [lists] => (lists, Arc::new(Int64Array::from(vec![1; rows])) as ArrayRef),
            _ => return Err(takes_only("array_length", "an array and a dimension")),
        };
        let (Some(lists), Some(dimensions)) = (
            lists.as_any().downcast_ref::<ListArray>(),
            dimensions.as_any().downcast_ref::<Int64Array>(),
        ) else {
            return Err(takes_only("array_length", "an array and a dimension"));
        };
        let lengths: Int32Array = (0..lists.len())
            .map(|row| {
                if lists.is_null(row) || dimensions.is_null(row) || dimensions.value(row) != 1 {
                    return None;
                }
                let length = lists.value_length(row);
                (length > 0).then_some(length)
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(lengths)))
    }
}

/// `cardinality(array)`: the number of elements, an integer as PostgreSQL's (0 for an empty
/// array, NULL for NULL).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Cardinality {
    signature: Signature,
}

impl ScalarUDFImpl for Cardinality {
    fn name(&self) -> &str {
        "cardinality"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let Some(lists) = args.args.first() else {
            return Err(takes_only("cardinality", "an array"));
        };
        let lists = lists.to_array(rows)?;
        let Some(lists) = lists.as_any().downcast_ref::<ListArray>() else {
            return Err(takes_only("cardinality", "an array"));
        };
        let counts: Int32Array = (0..lists.len())
            .map(|row| (!lists.is_null(row)).then(|| lists.value_length(row)))
            .collect();
        Ok(ColumnarValue::Array(Arc::new(counts)))
    }
}

/// The planner hook reading text literals met by arrays.
#[derive(Debug)]
struct ArrayLiterals {
    array_in: Arc<ScalarUDF>,
}

/// The element type of `expr`'s result, if it is a list.
fn list_element(expr: &Expr, schema: &DFSchema) -> Option<ArrayElement> {
    match expr.get_type(schema).ok()? {
        DataType::List(field) | DataType::LargeList(field) => {
            Some(element_of_arrow(field.data_type()))
        }
        _ => None,
    }
}

fn is_text_literal(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Literal(
            ScalarValue::Utf8(Some(_)) | ScalarValue::Utf8View(Some(_)),
            _
        )
    )
}

impl ArrayLiterals {
    fn read(&self, literal: Expr, element: ArrayElement) -> Expr {
        Expr::ScalarFunction(ScalarFunction::new_udf(
            self.array_in.clone(),
            vec![literal, lit(element.pg_name())],
        ))
    }
}

impl ExprPlanner for ArrayLiterals {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> DfResult<PlannerResult<RawBinaryExpr>> {
        let compares = matches!(
            expr.op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::AtArrow
                | BinaryOperator::ArrowAt
                | BinaryOperator::PGOverlap
        );
        if !compares {
            return Ok(PlannerResult::Original(expr));
        }
        let RawBinaryExpr { op, left, right } = expr;
        let (left, right) = match (list_element(&left, schema), list_element(&right, schema)) {
            (Some(element), None) if is_text_literal(&right) => {
                let right = self.read(right, element);
                (left, right)
            }
            (None, Some(element)) if is_text_literal(&left) => (self.read(left, element), right),
            (Some(_), Some(_)) => (left, right),
            _ => return Ok(PlannerResult::Original(RawBinaryExpr { op, left, right })),
        };
        // Containment and overlap of two lists, as PostgreSQL defines them for arrays.
        Ok(match op {
            BinaryOperator::AtArrow => PlannerResult::Planned(array_has_all(left, right)),
            BinaryOperator::ArrowAt => PlannerResult::Planned(array_has_all(right, left)),
            BinaryOperator::PGOverlap => PlannerResult::Planned(array_has_any(left, right)),
            op => PlannerResult::Original(RawBinaryExpr { op, left, right }),
        })
    }
}
