//! `pg_typeof(x)`: the PostgreSQL type of its argument, by name (`integer`, `jsonb`,
//! `timestamp without time zone`), as psql prints PostgreSQL's `regtype`. The type is the
//! argument's field's: its declared type where it carries one (INTEGER, VARCHAR, UUID, JSON,
//! JSONB), else its Arrow type's. A quoted literal is `text` here, where PostgreSQL says
//! `unknown`.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use crate::values::declared_type_of;

/// Registers `pg_typeof` in `ctx`.
pub(crate) fn register_type_of(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(TypeOf {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

/// The PostgreSQL name of the type of values of `field`.
pub(crate) fn postgres_type_name(field: &Field) -> String {
    let declared = declared_type_of(field).map(|d| {
        let base = d.split('(').next().unwrap_or(d);
        match base {
            "SMALLINT" => "smallint",
            "INTEGER" => "integer",
            "REAL" => "real",
            "CHAR" => "character",
            "VARCHAR" => "character varying",
            "UUID" => "uuid",
            "JSON" => "json",
            "JSONB" => "jsonb",
            _ => "",
        }
    });
    if let Some(name) = declared.filter(|n| !n.is_empty()) {
        return name.to_string();
    }
    match field.data_type() {
        DataType::Null => "unknown",
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint",
        DataType::Int32 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => "bigint",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => "numeric",
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "bytea",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Timestamp(_, None) => "timestamp without time zone",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
        DataType::Interval(_) | DataType::Duration(TimeUnit::Microsecond) => "interval",
        DataType::List(element) | DataType::LargeList(element) => {
            return format!("{}[]", postgres_type_name(element));
        }
        _ => "text",
    }
    .to_string()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeOf {
    signature: Signature,
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> DfResult<FieldRef> {
        Ok(Arc::new(Field::new("pg_typeof", DataType::Utf8, false)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let name = args
            .arg_fields
            .first()
            .map_or_else(|| "unknown".to_string(), |f| postgres_type_name(f));
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name))))
    }
}
