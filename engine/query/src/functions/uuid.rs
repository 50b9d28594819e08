//! UUID functions for DataFusion: `gen_random_uuid()` (and its alias `uuid()`), a fresh random
//! (version 4) UUID per row, and `to_uuid(text)`, what `CAST(x AS UUID)` and `x::uuid` become
//! (`sql::type_casts`): the text checked and given back in its canonical form.
//!
//! A UUID travels through DataFusion as its canonical text (lower case, 8-4-4-4-12), whose
//! order is the order of its bytes; both functions mark their result field with the declared
//! type UUID, so a client is told the column is a uuid, as a table's UUID column is.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use rowdex_codec::{UuidText, parse_uuid};

use crate::error::Error;
use crate::sql::type_casts::TO_UUID_FUNCTION;
use crate::values::uuid_field;

/// Registers the UUID functions in `ctx`.
pub(crate) fn register_uuid_functions(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(RandomUuid::new("gen_random_uuid")));
    ctx.register_udf(ScalarUDF::new_from_impl(RandomUuid::new("uuid")));
    ctx.register_udf(ScalarUDF::new_from_impl(ToUuid {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

/// Random bytes for `count` version 4 UUIDs.
fn random_uuids(count: usize) -> Result<Vec<[u8; 16]>, Error> {
    let mut bytes = vec![0u8; count * 16];
    getrandom::fill(&mut bytes).map_err(|error| Error::Unsupported {
        what: format!("random UUIDs: the system's random source failed ({error})"),
    })?;
    Ok(bytes
        .chunks_exact(16)
        .map(|chunk| {
            let mut uuid = [0u8; 16];
            uuid.copy_from_slice(chunk);
            // RFC 9562: version 4 in the high nibble of byte 6, variant 10 in byte 8.
            uuid[6] = (uuid[6] & 0x0F) | 0x40;
            uuid[8] = (uuid[8] & 0x3F) | 0x80;
            uuid
        })
        .collect())
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct RandomUuid {
    name: &'static str,
    signature: Signature,
}

impl RandomUuid {
    fn new(name: &'static str) -> RandomUuid {
        RandomUuid {
            name,
            signature: Signature::nullary(Volatility::Volatile),
        }
    }
}

impl ScalarUDFImpl for RandomUuid {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> DfResult<FieldRef> {
        Ok(Arc::new(uuid_field(self.name, false)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let mut out = StringBuilder::with_capacity(rows, rows * 36);
        for uuid in random_uuids(rows)? {
            out.append_value(UuidText::new(&uuid).as_str());
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToUuid {
    signature: Signature,
}

impl ScalarUDFImpl for ToUuid {
    fn name(&self) -> &str {
        TO_UUID_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let nullable = args.arg_fields.first().is_none_or(|f| f.is_nullable());
        Ok(Arc::new(uuid_field(TO_UUID_FUNCTION, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let Some(argument) = args.args.first() else {
            return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)));
        };
        let input = argument.to_array(args.number_rows)?;
        Ok(ColumnarValue::Array(canonical_uuids(&input)?))
    }
}

/// Each value of `input` (text, or anything that casts to it) as a UUID's canonical text;
/// an error for the first that is no UUID.
fn canonical_uuids(input: &ArrayRef) -> DfResult<ArrayRef> {
    let text = cast(input, &DataType::Utf8)?;
    let Some(strings) = text
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
    else {
        return Err(Error::Unsupported {
            what: format!("a cast of {} to uuid", input.data_type()),
        }
        .into());
    };
    let mut out = StringBuilder::with_capacity(strings.len(), strings.len() * 36);
    for value in strings {
        match value {
            None => out.append_null(),
            Some(value) => match parse_uuid(value) {
                Some(uuid) => out.append_value(UuidText::new(&uuid).as_str()),
                None => {
                    return Err(Error::InvalidTextRepresentation {
                        type_name: "uuid",
                        value: value.to_string(),
                    }
                    .into());
                }
            },
        }
    }
    Ok(Arc::new(out.finish()))
}
