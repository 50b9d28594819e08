//! `rowdex_prefix_elements(prefix, array)`: each element of a text array with `prefix` in
//! front, `'{}'` for a NULL array. It is what `ARRAY(SELECT 'p' || x FROM unnest(a) x)` gives
//! in PostgreSQL, and what the query rewrite (`rewrite`) turns that subquery into when `a`
//! belongs to the outer query (psql's `\d+` prefixes a table's TOAST options so): DataFusion
//! cannot decorrelate an `unnest` of an outer column.

use std::sync::Arc;

use rowdex::arrow::array::{Array, ArrayRef, ListArray, ListBuilder, StringArray, StringBuilder};
use rowdex::arrow::compute::cast;
use rowdex::arrow::datatypes::{DataType, Field};
use rowdex::datafusion::error::{DataFusionError, Result as DfResult};
use rowdex::datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use rowdex::datafusion::prelude::SessionContext;

/// The function's name, as the rewrite writes it.
pub const PREFIX_ELEMENTS: &str = "rowdex_prefix_elements";

/// Registers the function in `ctx`.
pub fn register_prefix_elements(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(PrefixElements {
        signature: Signature::any(2, Volatility::Immutable),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PrefixElements {
    signature: Signature,
}

fn text_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

impl ScalarUDFImpl for PrefixElements {
    fn name(&self) -> &str {
        PREFIX_ELEMENTS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(text_list())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [prefixes, lists] = arrays.as_slice() else {
            return Err(DataFusionError::Plan(format!(
                "{PREFIX_ELEMENTS} takes a prefix and an array"
            )));
        };
        let prefixes = cast(prefixes, &DataType::Utf8)?;
        let prefixes = prefixes
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| DataFusionError::Internal("a text prefix".to_string()))?;
        // A NULL array (the arguments' type unknown) is no element at all.
        let lists = if lists.data_type() == &DataType::Null {
            None
        } else {
            Some(cast(lists, &text_list())?)
        };
        let lists = lists
            .as_ref()
            .map(|lists| {
                lists
                    .as_any()
                    .downcast_ref::<ListArray>()
                    .ok_or_else(|| DataFusionError::Internal("a text array".to_string()))
            })
            .transpose()?;
        let mut builder = ListBuilder::new(StringBuilder::new());
        for row in 0..rows {
            if let Some(lists) = lists
                && !lists.is_null(row)
            {
                let elements = lists.value(row);
                let elements = elements
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(|| DataFusionError::Internal("text elements".to_string()))?;
                for element in elements.iter() {
                    match (prefixes.is_null(row), element) {
                        (false, Some(element)) => builder
                            .values()
                            .append_value(format!("{}{element}", prefixes.value(row))),
                        _ => builder.values().append_null(),
                    }
                }
            }
            builder.append(true);
        }
        let result: ArrayRef = Arc::new(builder.finish());
        Ok(ColumnarValue::Array(result))
    }
}
