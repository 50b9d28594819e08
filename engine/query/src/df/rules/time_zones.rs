//! `SessionTimeZone`: TIMESTAMPTZ values are read and taken apart in the session's time zone,
//! as PostgreSQL does.
//!
//! Every zoned timestamp in a plan is a UTC instant typed `Timestamp(_, "+00:00")`
//! (`values::STORED_TIME_ZONE`, which is DataFusion's `execution.time_zone` too, so `now()` and
//! `::timestamptz` carry it and two instants always meet in one type). The session's zone is
//! the [`SessionZoneOptions`] extension of the session's options. Arrow reads and splits a
//! timestamp in the zone its type carries, so without this rule a session in
//! `Europe/Berlin` would read `ts = '2024-01-15 11:00'` as 11:00 UTC and `date_trunc('day',
//! ts)` would cut days at UTC midnight. Before any simplification, this rule:
//! - reads a text literal cast to a zoned timestamp (a comparison's coercion, `::timestamptz`)
//!   with `time_zone::TimeZone::parse_timestamptz` in the session's zone: offsets and zone
//!   names as PostgreSQL accepts them, 22007 for text that is no timestamp;
//! - gives a zoned argument of `date_trunc`, `date_part` (`extract`) and `to_char`, a zoned
//!   value cast to DATE, and one an interval is added to or taken from, the session's zone (a
//!   change of type only: the instants stay);
//! - casts a zoned value to a TIMESTAMP through the session's wall clock (`to_local_time`),
//!   and a TIMESTAMP to a zoned one as a time of the session's zone;
//! - reads a text literal cast to a TIMESTAMP in PostgreSQL's forms (`'2024-01-15 10:00'`),
//!   and casts a timestamp to text as PostgreSQL writes it (`functions::zones`'s
//!   `timestamp_text`), not as Arrow does (`2024-01-15T10:00:00Z`).
//!
//! [`results_in_session_zone`] gives a query's zoned result columns the session's zone, which
//! the clients' text forms are written in.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType as ArrowType, TimeUnit};
use datafusion::common::config::{ConfigExtension, ConfigOptions};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result as DfResult;
use datafusion::functions::datetime::to_local_time;
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{
    BinaryExpr, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use rowdex_codec::parse_timestamp;

use crate::df::rules::expression_rewrite::{inputs_schema, rewrite_expressions_keeping_names};
use crate::error::Error;
use crate::functions::zones::timestamp_text;
use crate::time_zone::TimeZone;
use crate::values::STORED_TIME_ZONE;

#[derive(Debug, Default)]
pub struct SessionTimeZone;

impl OptimizerRule for SessionTimeZone {
    fn name(&self) -> &str {
        "rowdex_session_time_zone"
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
        config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        let zone = session_zone(&config.options());
        let session = Session {
            name: Arc::from(zone.arrow_name().as_str()),
            utc: zone.is_utc(),
            zone,
        };
        let schema = inputs_schema(&plan);
        rewrite_expressions_keeping_names(plan, |expr| session.rewrite(expr, &schema))
    }
}

datafusion::common::extensions_options! {
    /// rowdex's part of a DataFusion session's options (`rowdex.*`).
    pub struct SessionZoneOptions {
        /// The session's time zone, as Arrow names a zone (`Europe/Berlin`, `+05:30`).
        pub time_zone: String, default = "UTC".to_string()
    }
}

impl ConfigExtension for SessionZoneOptions {
    const PREFIX: &'static str = "rowdex";
}

/// The session's zone, as `options` carry it (UTC when they do not).
pub(crate) fn session_zone(options: &ConfigOptions) -> TimeZone {
    options
        .extensions
        .get::<SessionZoneOptions>()
        .and_then(|options| TimeZone::of_arrow(&options.time_zone))
        .unwrap_or_default()
}

/// Makes `zone` the session's zone in `options`; every zoned value stays typed in UTC.
pub(crate) fn set_session_zone(options: &mut ConfigOptions, zone: &TimeZone) {
    options.extensions.insert(SessionZoneOptions {
        time_zone: zone.arrow_name(),
    });
    options.execution.time_zone = Some(STORED_TIME_ZONE.to_string());
}

/// The session's zone, its name as Arrow types carry it, and whether it is UTC (where a value
/// typed in UTC needs no other zone).
struct Session {
    zone: TimeZone,
    name: Arc<str>,
    utc: bool,
}

/// The functions that take a timestamp apart in the zone its type carries.
const ZONED_FUNCTIONS: &[&str] = &[
    "date_trunc",
    "datetrunc",
    "date_part",
    "datepart",
    "to_char",
];

impl Session {
    fn rewrite(&self, expr: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
        match expr {
            Expr::Cast(Cast { expr, field }) => {
                self.cast(*expr, field.data_type().clone(), schema, false)
            }
            Expr::TryCast(TryCast { expr, field }) => {
                self.cast(*expr, field.data_type().clone(), schema, true)
            }
            Expr::ScalarFunction(ScalarFunction { func, args })
                if ZONED_FUNCTIONS.contains(&func.name()) =>
            {
                let mut changed = false;
                let args = args
                    .into_iter()
                    .map(|arg| match self.in_session_zone(arg, schema) {
                        Transformed {
                            data,
                            transformed: true,
                            ..
                        } => {
                            changed = true;
                            data
                        }
                        unchanged => unchanged.data,
                    })
                    .collect();
                let expr = Expr::ScalarFunction(ScalarFunction { func, args });
                Ok(if changed {
                    Transformed::yes(expr)
                } else {
                    Transformed::no(expr)
                })
            }
            // Days and months are added as the session's calendar has them (a day across a
            // change to summer time is 23 hours).
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if matches!(op, Operator::Plus | Operator::Minus)
                    && (is_interval(&left, schema) || is_interval(&right, schema)) =>
            {
                let left = self.in_session_zone(*left, schema);
                let right = self.in_session_zone(*right, schema);
                let changed = left.transformed || right.transformed;
                let expr = Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(left.data),
                    op,
                    Box::new(right.data),
                ));
                Ok(if changed {
                    Transformed::yes(expr)
                } else {
                    Transformed::no(expr)
                })
            }
            expr => Ok(Transformed::no(expr)),
        }
    }

    /// A cast of `expr` to `to`, with the session's zone where the cast reads or drops one.
    fn cast(
        &self,
        expr: Expr,
        to: ArrowType,
        schema: &DFSchema,
        try_cast: bool,
    ) -> DfResult<Transformed<Expr>> {
        let rebuild = |expr: Expr, to: ArrowType| {
            if try_cast {
                Expr::TryCast(TryCast::new(Box::new(expr), to))
            } else {
                Expr::Cast(Cast::new(Box::new(expr), to))
            }
        };
        let from = expr.get_type(schema).ok();
        match (&from, &to) {
            // Text read as an instant: in the session's zone unless it names its own.
            (_, ArrowType::Timestamp(unit, Some(zone))) if text_literal(&expr).is_some() => {
                let text = text_literal(&expr).unwrap_or_default();
                match self.zone.parse_timestamptz(text) {
                    Some(micros) => Ok(Transformed::yes(Expr::Literal(
                        timestamp_scalar(micros, *unit, Some(zone.clone())),
                        None,
                    ))),
                    None if try_cast => Ok(Transformed::no(rebuild(expr, to))),
                    None => Err(Error::InvalidDatetime {
                        type_name: "timestamp with time zone",
                        value: text.to_string(),
                    }
                    .into()),
                }
            }
            // Text read as a wall-clock time: PostgreSQL's forms (`HH:MM` too); what rowdex
            // does not read is left to Arrow's reading.
            (_, ArrowType::Timestamp(unit, None)) if text_literal(&expr).is_some() => {
                match text_literal(&expr).and_then(parse_timestamp) {
                    Some(micros) => Ok(Transformed::yes(Expr::Literal(
                        timestamp_scalar(micros, *unit, None),
                        None,
                    ))),
                    None => Ok(Transformed::no(rebuild(expr, to))),
                }
            }
            // A timestamp's text is PostgreSQL's (`2024-01-15 11:00:00+01`), not Arrow's.
            (
                Some(ArrowType::Timestamp(..)),
                ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::LargeUtf8,
            ) => {
                let value = self.in_session_zone(expr, schema).data;
                let text =
                    Expr::ScalarFunction(ScalarFunction::new_udf(timestamp_text(), vec![value]));
                Ok(Transformed::yes(if to == ArrowType::Utf8 {
                    text
                } else {
                    rebuild(text, to)
                }))
            }
            // A wall-clock time made an instant: a time of the session's zone.
            (Some(ArrowType::Timestamp(from_unit, None)), ArrowType::Timestamp(_, Some(zone)))
                if !self.utc && **zone != *self.name =>
            {
                let local = rebuild(
                    expr,
                    ArrowType::Timestamp(*from_unit, Some(self.name.clone())),
                );
                Ok(Transformed::yes(rebuild(local, to)))
            }
            // A date made an instant: its midnight in the session's zone.
            (Some(ArrowType::Date32 | ArrowType::Date64), ArrowType::Timestamp(_, Some(_)))
                if !self.utc =>
            {
                let midnight = rebuild(expr, ArrowType::Timestamp(TimeUnit::Microsecond, None));
                let local = rebuild(
                    midnight,
                    ArrowType::Timestamp(TimeUnit::Microsecond, Some(self.name.clone())),
                );
                Ok(Transformed::yes(rebuild(local, to)))
            }
            // An instant made a wall-clock time: the session's clock at that instant.
            (Some(ArrowType::Timestamp(from_unit, Some(_))), ArrowType::Timestamp(_, None))
                if !self.utc =>
            {
                let zoned = rebuild(
                    expr,
                    ArrowType::Timestamp(*from_unit, Some(self.name.clone())),
                );
                let local = to_local_time().call(vec![zoned]);
                Ok(Transformed::yes(rebuild(local, to)))
            }
            // An instant's date: the session's date at that instant.
            (Some(ArrowType::Timestamp(from_unit, Some(zone))), ArrowType::Date32)
                if !self.utc && **zone != *self.name =>
            {
                let zoned = rebuild(
                    expr,
                    ArrowType::Timestamp(*from_unit, Some(self.name.clone())),
                );
                Ok(Transformed::yes(rebuild(zoned, to)))
            }
            _ => Ok(Transformed::no(rebuild(expr, to))),
        }
    }

    /// `expr` retyped to the session's zone when it is a timestamp of another zone.
    fn in_session_zone(&self, expr: Expr, schema: &DFSchema) -> Transformed<Expr> {
        if self.utc {
            return Transformed::no(expr);
        }
        match expr.get_type(schema) {
            Ok(ArrowType::Timestamp(unit, Some(zone))) if *zone != *self.name => {
                Transformed::yes(Expr::Cast(Cast::new(
                    Box::new(expr),
                    ArrowType::Timestamp(unit, Some(self.name.clone())),
                )))
            }
            _ => Transformed::no(expr),
        }
    }
}

fn is_interval(expr: &Expr, schema: &DFSchema) -> bool {
    matches!(expr.get_type(schema), Ok(ArrowType::Interval(_)))
}

/// The text of a text literal.
fn text_literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Literal(
            ScalarValue::Utf8(Some(text))
            | ScalarValue::Utf8View(Some(text))
            | ScalarValue::LargeUtf8(Some(text)),
            _,
        ) => Some(text),
        _ => None,
    }
}

/// The instant `micros` as a timestamp literal of `unit` in `zone`.
fn timestamp_scalar(micros: i64, unit: TimeUnit, zone: Option<Arc<str>>) -> ScalarValue {
    match unit {
        TimeUnit::Second => ScalarValue::TimestampSecond(Some(micros.div_euclid(1_000_000)), zone),
        TimeUnit::Millisecond => {
            ScalarValue::TimestampMillisecond(Some(micros.div_euclid(1_000)), zone)
        }
        TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(micros), zone),
        TimeUnit::Nanosecond => {
            ScalarValue::TimestampNanosecond(Some(micros.saturating_mul(1_000)), zone)
        }
    }
}

/// `plan` with each zoned timestamp column of its result in the session's zone
/// (the instants unchanged), so clients write them in that zone. A plan that returns no rows
/// of a query (a write, DDL, EXPLAIN) is left as it is.
pub(crate) fn results_in_session_zone(
    plan: LogicalPlan,
    options: &ConfigOptions,
) -> DfResult<LogicalPlan> {
    let zone = session_zone(options);
    if zone.is_utc() {
        return Ok(plan);
    }
    let zone_name = zone.arrow_name();
    let zone_name = zone_name.as_str();
    if matches!(
        plan,
        LogicalPlan::Dml(_)
            | LogicalPlan::Ddl(_)
            | LogicalPlan::Explain(_)
            | LogicalPlan::Analyze(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::Copy(_)
            | LogicalPlan::DescribeTable(_)
    ) {
        return Ok(plan);
    }
    let needs = plan
        .schema()
        .fields()
        .iter()
        .any(|field| in_zone(field.data_type(), &Arc::from(zone_name)).is_some());
    let names: std::collections::HashSet<&String> = plan
        .schema()
        .fields()
        .iter()
        .map(|field| field.name())
        .collect();
    // A result whose columns share a name cannot be projected by name; it keeps its zones.
    if !needs || names.len() != plan.schema().fields().len() {
        return Ok(plan);
    }
    let zone: Arc<str> = Arc::from(zone_name);
    let columns: Vec<Expr> = plan
        .schema()
        .iter()
        .map(|(qualifier, field)| {
            let column = Expr::Column(datafusion::common::Column::new(
                qualifier.cloned(),
                field.name(),
            ));
            match in_zone(field.data_type(), &zone) {
                Some(zoned) => Expr::Cast(Cast::new(Box::new(column), zoned))
                    .alias_qualified(qualifier.cloned(), field.name()),
                None => column,
            }
        })
        .collect();
    LogicalPlanBuilder::from(plan).project(columns)?.build()
}

/// `data_type` with its instants (a TIMESTAMPTZ, or a list of them) in `zone`; None when it
/// holds none in another zone.
pub(crate) fn in_zone(data_type: &ArrowType, zone: &Arc<str>) -> Option<ArrowType> {
    match data_type {
        ArrowType::Timestamp(unit, Some(current)) if current != zone => {
            Some(ArrowType::Timestamp(*unit, Some(zone.clone())))
        }
        ArrowType::List(element) => {
            let zoned = in_zone(element.data_type(), zone)?;
            Some(ArrowType::List(Arc::new(
                element.as_ref().clone().with_data_type(zoned),
            )))
        }
        _ => None,
    }
}
