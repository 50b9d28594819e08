//! `raise(kind, message)`: SQLite's `RAISE(ABORT, 'message')`, with which a trigger refuses the
//! row it runs for. A trigger's statements reach it with the kind written as a string
//! (`execute::triggers` rewrites `RAISE(ABORT, ...)`); evaluated on any row, it fails the
//! statement with [`Error::Raised`], and the statement's writes are undone with the trigger's.
//! It is volatile, so no optimizer evaluates it ahead of the rows that reach it.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::error::Error;

/// The name a query calls it by.
pub(crate) const RAISE_FUNCTION: &str = "raise";

/// Registers `raise` in `ctx`.
pub(crate) fn register_raise(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Raise {
        signature: Signature::any(2, Volatility::Volatile),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Raise {
    signature: Signature,
}

impl ScalarUDFImpl for Raise {
    fn name(&self) -> &str {
        RAISE_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Null)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        if args.number_rows == 0 {
            return Ok(ColumnarValue::Scalar(ScalarValue::Null));
        }
        let message = match args.args.get(1) {
            Some(ColumnarValue::Scalar(value)) => scalar_text(value),
            Some(ColumnarValue::Array(array)) => ScalarValue::try_from_array(array, 0)
                .map(|value| scalar_text(&value))
                .unwrap_or_default(),
            None => String::new(),
        };
        Err(Error::Raised { message }.into())
    }
}

/// A message argument as text (NULL as the empty message).
fn scalar_text(value: &ScalarValue) -> String {
    match value {
        ScalarValue::Utf8(Some(text))
        | ScalarValue::LargeUtf8(Some(text))
        | ScalarValue::Utf8View(Some(text)) => text.clone(),
        other if other.is_null() => String::new(),
        other => other.to_string(),
    }
}
