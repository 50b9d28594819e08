//! Date and time functions as PostgreSQL has them, where DataFusion's differ or are missing:
//! `interval_mul(interval, n)` (what `n * INTERVAL '1 hour'` becomes, `sql::interval_products`;
//! DataFusion's planner refuses the product), `age(a, b)` (the symbolic difference in years,
//! months and days) and `to_char(timestamp | date, pattern)` with PostgreSQL's patterns
//! (DataFusion's `to_char` takes chrono's). Timestamps are read in microseconds, PostgreSQL's
//! precision.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, Float64Array, IntervalMonthDayNanoArray, IntervalMonthDayNanoBuilder,
    StringArray, StringBuilder, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano, IntervalUnit, TimeUnit};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use rowdex_codec::days_in_month;

use crate::error::Error;
use crate::functions::arguments::takes_only;
use crate::functions::temporal_pattern::{Fields, ZoneLabel, format_pattern};
use crate::time_zone::{TimeZone, offset_text};

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;
const NANOS_PER_MICRO: i64 = 1_000;

/// Registers the functions in `ctx` (`to_char` in place of DataFusion's).
pub(crate) fn register_temporal_functions(ctx: &SessionContext) {
    for function in [
        TemporalFunction::IntervalMul,
        TemporalFunction::Age,
        TemporalFunction::ToChar,
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(Temporal {
            function,
            signature: Signature::any(2, Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TemporalFunction {
    IntervalMul,
    Age,
    ToChar,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Temporal {
    function: TemporalFunction,
    signature: Signature,
}

impl Temporal {
    fn static_name(&self) -> &'static str {
        match self.function {
            TemporalFunction::IntervalMul => "interval_mul",
            TemporalFunction::Age => "age",
            TemporalFunction::ToChar => "to_char",
        }
    }
}

impl ScalarUDFImpl for Temporal {
    fn name(&self) -> &str {
        self.static_name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(match self.function {
            TemporalFunction::IntervalMul | TemporalFunction::Age => {
                DataType::Interval(IntervalUnit::MonthDayNano)
            }
            TemporalFunction::ToChar => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|arg| arg.to_array(rows))
            .collect::<DfResult<Vec<_>>>()?;
        let [first, second] = arrays.as_slice() else {
            return Err(Error::BadFunctionArgument {
                function: self.static_name(),
                reason: "it takes two arguments".to_string(),
            }
            .into());
        };
        let out = match self.function {
            TemporalFunction::IntervalMul => interval_products(first, second)?,
            TemporalFunction::Age => ages(first, second)?,
            TemporalFunction::ToChar => to_chars(first, second)?,
        };
        Ok(ColumnarValue::Array(out))
    }
}

/// `interval * factor` for every row, as PostgreSQL multiplies: a fraction of a month goes
/// into days (30 to a month), a fraction of a day into time (24 hours to a day), and the
/// time is rounded to the microsecond.
fn interval_products(intervals: &ArrayRef, factors: &ArrayRef) -> DfResult<ArrayRef> {
    let intervals = cast(intervals, &DataType::Interval(IntervalUnit::MonthDayNano))?;
    let factors = cast(factors, &DataType::Float64)?;
    let (Some(intervals), Some(factors)) = (
        intervals
            .as_any()
            .downcast_ref::<IntervalMonthDayNanoArray>(),
        factors.as_any().downcast_ref::<Float64Array>(),
    ) else {
        return Err(takes_only("interval_mul", "an interval and a number"));
    };
    let mut out = IntervalMonthDayNanoBuilder::with_capacity(intervals.len());
    for (interval, factor) in intervals.iter().zip(factors) {
        match (interval, factor) {
            (Some(interval), Some(factor)) => out.append_value(multiply(interval, factor)?),
            _ => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

fn multiply(interval: IntervalMonthDayNano, factor: f64) -> DfResult<IntervalMonthDayNano> {
    let months = f64::from(interval.months) * factor;
    let whole_months = months.trunc();
    let days = f64::from(interval.days) * factor + (months - whole_months) * 30.0;
    let whole_days = days.trunc();
    let micros = (interval.nanoseconds as f64 / NANOS_PER_MICRO as f64) * factor
        + (days - whole_days) * MICROS_PER_DAY as f64;
    let in_range = |v: f64, limit: f64| v.is_finite() && v.abs() <= limit;
    if !in_range(whole_months, f64::from(i32::MAX))
        || !in_range(whole_days, f64::from(i32::MAX))
        || !in_range(micros.round(), (i64::MAX / NANOS_PER_MICRO) as f64)
    {
        return Err(Error::BadFunctionArgument {
            function: "interval_mul",
            reason: "interval out of range".to_string(),
        }
        .into());
    }
    Ok(IntervalMonthDayNano::new(
        whole_months as i32,
        whole_days as i32,
        micros.round() as i64 * NANOS_PER_MICRO,
    ))
}

/// Every value of `values` (a timestamp of any unit, or a date) in microseconds since 1970.
fn timestamp_micros(
    values: &ArrayRef,
    function: &'static str,
) -> DfResult<TimestampMicrosecondArray> {
    let micros = match values.data_type() {
        DataType::Timestamp(_, zone) => cast(
            values,
            &DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
        )?,
        DataType::Date32 | DataType::Date64 | DataType::Null | DataType::Utf8 => {
            cast(values, &DataType::Timestamp(TimeUnit::Microsecond, None))?
        }
        other => {
            return Err(Error::BadFunctionArgument {
                function,
                reason: format!("a {other} is not a date or timestamp"),
            }
            .into());
        }
    };
    // The time zone stays in the type; the values are UTC microseconds either way.
    let micros = cast(&micros, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
    micros
        .as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
        .cloned()
        .ok_or_else(|| takes_only(function, "a date or timestamp"))
}

/// `age(later, earlier)` for every row.
fn ages(later: &ArrayRef, earlier: &ArrayRef) -> DfResult<ArrayRef> {
    let later = timestamp_micros(later, "age")?;
    let earlier = timestamp_micros(earlier, "age")?;
    let mut out = IntervalMonthDayNanoBuilder::with_capacity(later.len());
    for (a, b) in later.iter().zip(&earlier) {
        match (a, b) {
            (Some(a), Some(b)) => out.append_value(age(a, b)),
            _ => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// PostgreSQL's `age`: the field-by-field difference of `a` and `b`, each negative field
/// borrowing from the next larger one (a day borrows the length of the earlier timestamp's
/// month), the sign restored at the end.
fn age(a: i64, b: i64) -> IntervalMonthDayNano {
    let (x, y) = (Fields::of(a), Fields::of(b));
    let sign = if a < b { -1 } else { 1 };
    let mut micro = sign * (x.micro - y.micro);
    let mut second = sign * (x.second - y.second);
    let mut minute = sign * (x.minute - y.minute);
    let mut hour = sign * (x.hour - y.hour);
    let mut day = sign * (x.day - y.day);
    let mut month = sign * (x.month - y.month);
    let mut year = sign * (x.year - y.year);
    while micro < 0 {
        micro += MICROS_PER_SECOND;
        second -= 1;
    }
    while second < 0 {
        second += 60;
        minute -= 1;
    }
    while minute < 0 {
        minute += 60;
        hour -= 1;
    }
    while hour < 0 {
        hour += 24;
        day -= 1;
    }
    while day < 0 {
        let earlier = if a < b { &x } else { &y };
        let month_of = u32::try_from(earlier.month).unwrap_or(1);
        day += i64::from(days_in_month(earlier.year, month_of));
        month -= 1;
    }
    while month < 0 {
        month += 12;
        year -= 1;
    }
    let time = ((hour * 60 + minute) * 60 + second) * MICROS_PER_SECOND + micro;
    IntervalMonthDayNano::new(
        (sign * (year * 12 + month)) as i32,
        (sign * day) as i32,
        sign * time * NANOS_PER_MICRO,
    )
}

/// `to_char(value, pattern)` for every row.
fn to_chars(values: &ArrayRef, patterns: &ArrayRef) -> DfResult<ArrayRef> {
    // An instant is written as its zone's clock shows it (the session's, which
    // `df::rules::time_zones` gives it).
    let zone = match values.data_type() {
        DataType::Timestamp(_, Some(zone)) => Some(TimeZone::of_arrow(zone).unwrap_or_default()),
        _ => None,
    };
    let micros = timestamp_micros(values, "to_char")?;
    let patterns = cast(patterns, &DataType::Utf8)?;
    let Some(patterns) = patterns.as_any().downcast_ref::<StringArray>() else {
        return Err(takes_only(
            "to_char",
            "a date or timestamp and a text pattern",
        ));
    };
    let mut out = StringBuilder::with_capacity(micros.len(), micros.len() * 24);
    for (value, pattern) in micros.iter().zip(patterns) {
        match (value, pattern) {
            (Some(value), Some(pattern)) => match &zone {
                Some(zone) => {
                    let offset = zone.offset_at(value);
                    let label = ZoneLabel {
                        abbreviation: zone.abbreviation_at(value),
                        offset: offset_text(offset),
                    };
                    let local = value.saturating_add(i64::from(offset) * MICROS_PER_SECOND);
                    out.append_value(format_pattern(&Fields::of(local), pattern, Some(&label)))
                }
                None => out.append_value(format_pattern(&Fields::of(value), pattern, None)),
            },
            _ => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = MICROS_PER_DAY;

    fn micros(y: i64, m: u32, d: u32) -> i64 {
        rowdex_codec::days_from_civil(y, m, d) * DAY
    }

    #[test]
    fn age_is_symbolic_as_in_postgresql() {
        // age('2024-03-01', '2024-01-01') = 2 mons
        assert_eq!(
            age(micros(2024, 3, 1), micros(2024, 1, 1)),
            IntervalMonthDayNano::new(2, 0, 0)
        );
        // age('2024-03-01', '2024-01-31') = 1 mon 1 day (January's 31 days borrowed)
        assert_eq!(
            age(micros(2024, 3, 1), micros(2024, 1, 31)),
            IntervalMonthDayNano::new(1, 1, 0)
        );
        // and the other way round, negated: -1 mons -1 days
        assert_eq!(
            age(micros(2024, 1, 31), micros(2024, 3, 1)),
            IntervalMonthDayNano::new(-1, -1, 0)
        );
        // age('2001-04-10', '1957-06-13') = 43 years 9 mons 27 days (PostgreSQL's manual)
        assert_eq!(
            age(micros(2001, 4, 10), micros(1957, 6, 13)),
            IntervalMonthDayNano::new(43 * 12 + 9, 27, 0)
        );
        assert_eq!(Fields::of(micros(1957, 6, 13)).day, 13);
    }

    #[test]
    fn products_spill_fractions_downwards() {
        let month = IntervalMonthDayNano::new(1, 0, 0);
        assert_eq!(
            multiply(month, 1.5).ok(),
            Some(IntervalMonthDayNano::new(1, 15, 0))
        );
        let second = IntervalMonthDayNano::new(0, 0, 1_000_000_000);
        assert_eq!(
            multiply(second, 3.0).ok(),
            Some(IntervalMonthDayNano::new(0, 0, 3_000_000_000))
        );
        let day = IntervalMonthDayNano::new(0, 1, 0);
        assert_eq!(
            multiply(day, 0.5).ok(),
            Some(IntervalMonthDayNano::new(0, 0, 12 * 3600 * 1_000_000_000))
        );
        assert!(multiply(month, f64::INFINITY).is_err());
    }
}
