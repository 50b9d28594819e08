//! Timestamps and time zones as PostgreSQL converts them: `timezone(zone, value)` (what `value
//! AT TIME ZONE zone` is planned as: an instant becomes the wall-clock time `zone` shows then,
//! a wall-clock time the instant at which `zone` shows it) and `timestamp_text(value)`, a
//! timestamp's text as PostgreSQL casts it (`2024-01-15 10:00:00`, an instant with its zone's
//! offset: `2024-01-15 11:00:00+01`), which `df::rules::time_zones` plans `::text` as.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, StringArray, StringBuilder, TimestampMicrosecondArray,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::error::Error;
use crate::functions::arguments::takes_only;
use crate::time_zone::{TimeZone, postgres_timestamp};
use crate::values::STORED_TIME_ZONE;

/// Registers `timezone` and `timestamp_text` in `ctx`.
pub(crate) fn register_zone_functions(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(AtTimeZone {
        signature: Signature::any(2, Volatility::Immutable),
    }));
    ctx.register_udf(timestamp_text().as_ref().clone());
}

/// `timestamp_text`, for the rule that plans a timestamp's cast to text as it.
pub(crate) fn timestamp_text() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(TimestampText {
        signature: Signature::any(1, Volatility::Immutable),
    }))
}

fn instant_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(STORED_TIME_ZONE)))
}

/// `timezone(zone, value)`: `value AT TIME ZONE zone`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct AtTimeZone {
    signature: Signature,
}

impl ScalarUDFImpl for AtTimeZone {
    fn name(&self) -> &str {
        "timezone"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        // Text is read as an instant (in the session's zone unless it names one), as
        // PostgreSQL resolves an untyped literal here.
        Ok(arg_types
            .iter()
            .enumerate()
            .map(|(i, data_type)| match (i, data_type) {
                (0, _) => DataType::Utf8,
                (_, DataType::Timestamp(_, None)) => {
                    DataType::Timestamp(TimeUnit::Microsecond, None)
                }
                (_, DataType::Date32 | DataType::Date64) => {
                    DataType::Timestamp(TimeUnit::Microsecond, None)
                }
                _ => instant_type(),
            })
            .collect())
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(match arg_types.get(1) {
            Some(DataType::Timestamp(_, None)) => instant_type(),
            _ => DataType::Timestamp(TimeUnit::Microsecond, None),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|arg| arg.to_array(rows))
            .collect::<DfResult<Vec<_>>>()?;
        let [zones, values] = arrays.as_slice() else {
            return Err(takes_only("timezone", "it takes a zone and a timestamp"));
        };
        let to_instant = matches!(values.data_type(), DataType::Timestamp(_, None));
        let zones = cast(zones, &DataType::Utf8)?;
        let micros = cast(values, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
        let (Some(zones), Some(micros)) = (
            zones.as_any().downcast_ref::<StringArray>(),
            micros.as_any().downcast_ref::<TimestampMicrosecondArray>(),
        ) else {
            return Err(takes_only("timezone", "a zone and a timestamp"));
        };
        let mut out = TimestampMicrosecondBuilder::with_capacity(rows);
        let mut last: Option<(String, TimeZone)> = None;
        for (zone, value) in zones.iter().zip(micros) {
            let (Some(zone), Some(value)) = (zone, value) else {
                out.append_null();
                continue;
            };
            if last.as_ref().is_none_or(|(name, _)| name != zone) {
                let parsed = TimeZone::named(zone).ok_or_else(|| Error::UnknownTimeZone {
                    value: zone.to_string(),
                })?;
                last = Some((zone.to_string(), parsed));
            }
            let Some((_, zone)) = &last else {
                out.append_null();
                continue;
            };
            if to_instant {
                out.append_option(zone.utc_of_local(value));
            } else {
                let offset = zone.offset_at(value);
                out.append_value(value.saturating_add(i64::from(offset) * 1_000_000));
            }
        }
        let out = out.finish();
        let out: ArrayRef = if to_instant {
            Arc::new(out.with_timezone(STORED_TIME_ZONE))
        } else {
            Arc::new(out)
        };
        Ok(ColumnarValue::Array(out))
    }
}

/// `timestamp_text(value)`: a timestamp's text as PostgreSQL casts one to text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimestampText {
    signature: Signature,
}

impl ScalarUDFImpl for TimestampText {
    fn name(&self) -> &str {
        "timestamp_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let [value] = args.args.as_slice() else {
            return Err(takes_only("timestamp_text", "it takes one timestamp"));
        };
        let values = value.to_array(rows)?;
        let zone = match values.data_type() {
            DataType::Timestamp(_, Some(zone)) => {
                Some(TimeZone::of_arrow(zone).unwrap_or_default())
            }
            DataType::Timestamp(_, None) => None,
            _ => return Err(takes_only("timestamp_text", "a timestamp")),
        };
        let micros = cast(&values, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
        let Some(micros) = micros.as_any().downcast_ref::<TimestampMicrosecondArray>() else {
            return Err(takes_only("timestamp_text", "a timestamp"));
        };
        let mut out = StringBuilder::with_capacity(micros.len(), micros.len() * 26);
        for value in micros {
            match (value, &zone) {
                (None, _) => out.append_null(),
                (Some(value), Some(zone)) => out.append_value(zone.format_timestamptz(value)),
                (Some(value), None) => out.append_value(postgres_timestamp(value)),
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
