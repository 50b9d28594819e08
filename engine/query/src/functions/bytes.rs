//! `octet_length(bytea)`: PostgreSQL counts a bytea's bytes, where DataFusion's
//! `octet_length` takes only strings (it counts a text's UTF-8 bytes, as PostgreSQL does, and
//! so does this one).

use std::sync::Arc;

use datafusion::arrow::array::{Array, BinaryArray, Int32Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::error::Error;

/// Registers `octet_length` in `ctx`, in place of DataFusion's.
pub(crate) fn register_byte_functions(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(OctetLength {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct OctetLength {
    signature: Signature,
}

impl ScalarUDFImpl for OctetLength {
    fn name(&self) -> &str {
        "octet_length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let Some(argument) = args.args.first() else {
            return Err(Error::BadFunctionArgument {
                function: "octet_length",
                reason: "it takes one argument".to_string(),
            }
            .into());
        };
        let input = argument.to_array(args.number_rows)?;
        // Text and bytes alike: a text's bytes are its UTF-8 encoding.
        let bytes = cast(&input, &DataType::Binary)?;
        let Some(bytes) = bytes.as_any().downcast_ref::<BinaryArray>() else {
            return Err(Error::BadFunctionArgument {
                function: "octet_length",
                reason: format!("a {} is neither text nor bytea", input.data_type()),
            }
            .into());
        };
        let mut out = Int32Builder::with_capacity(bytes.len());
        for value in bytes {
            out.append_option(value.map(|v| i32::try_from(v.len()).unwrap_or(i32::MAX)));
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
