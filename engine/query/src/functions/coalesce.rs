//! `coalesce` as PostgreSQL types it: a text literal among date or time arguments is a value
//! of their type (`coalesce(created_at, '2024-01-01 00:00+00')`), as PostgreSQL reads an
//! unknown literal by the other arguments. DataFusion's own `coalesce` finds no common type
//! for a timestamp and text and refuses the call; everything else is left to it.

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result as DfResult;
use datafusion::functions::core::coalesce::CoalesceFunc;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

/// Registers [`PostgresCoalesce`] in place of DataFusion's `coalesce`.
pub(crate) fn register_coalesce(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(PostgresCoalesce::default()));
}

/// DataFusion's `coalesce` with PostgreSQL's reading of text among dates and times.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
struct PostgresCoalesce {
    inner: CoalesceFunc,
}

/// The date or time type a text argument of `arg_types` takes: the first such argument's,
/// when every other argument is text or NULL.
fn temporal_type(arg_types: &[DataType]) -> Option<&DataType> {
    let temporal = arg_types.iter().find(|t| t.is_temporal())?;
    let others_untyped = arg_types.iter().all(|t| {
        t == temporal
            || matches!(
                t,
                DataType::Null | DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            )
    });
    others_untyped.then_some(temporal)
}

impl ScalarUDFImpl for PostgresCoalesce {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> DfResult<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn conditional_arguments<'a>(
        &self,
        args: &'a [Expr],
    ) -> Option<(Vec<&'a Expr>, Vec<&'a Expr>)> {
        self.inner.conditional_arguments(args)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        match temporal_type(arg_types) {
            Some(temporal) => Ok(vec![temporal.clone(); arg_types.len()]),
            None => self.inner.coerce_types(arg_types),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::TimeUnit;

    #[test]
    fn text_among_times_takes_their_type() {
        let zoned = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        assert_eq!(
            temporal_type(&[zoned.clone(), DataType::Utf8, DataType::Null]),
            Some(&zoned)
        );
        assert_eq!(
            temporal_type(&[DataType::Utf8, DataType::Date32]),
            Some(&DataType::Date32)
        );
        // A number among them is DataFusion's to refuse or coerce.
        assert_eq!(temporal_type(&[DataType::Date32, DataType::Int64]), None);
        assert_eq!(temporal_type(&[DataType::Utf8, DataType::Utf8]), None);
    }
}
