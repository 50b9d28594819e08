//! `SessionTimeZone`: TIMESTAMPTZ values are read and taken apart in the session's time zone,
//! as PostgreSQL does.
//!
//! A TIMESTAMPTZ column travels as UTC instants typed `Timestamp(µs, "+00:00")`
//! (`values::STORED_TIME_ZONE`), and the session's zone is DataFusion's
//! `execution.time_zone` (so `now()` and `::timestamptz` carry it). Arrow reads and splits a
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
//!   and a TIMESTAMP to a zoned one as a time of the session's zone.
//!
//! [`results_in_session_zone`] gives a query's zoned result columns the session's zone, which
//! the clients' text forms are written in.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType as ArrowType, TimeUnit};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result as DfResult;
use datafusion::functions::datetime::to_local_time;
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{
    BinaryExpr, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::error::Error;
use crate::time_zone::TimeZone;

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
        let Some(zone_name) = config.options().execution.time_zone.clone() else {
            return Ok(Transformed::no(plan));
        };
        let Some(zone) = TimeZone::of_arrow(&zone_name) else {
            return Ok(Transformed::no(plan));
        };
        let session = Session {
            zone,
            name: Arc::from(zone_name.as_str()),
        };
        let mut inputs = plan.inputs().into_iter();
        let schema = match inputs.next() {
            Some(first) => {
                let mut schema = first.schema().as_ref().clone();
                for input in inputs {
                    schema.merge(input.schema());
                }
                schema
            }
            None => DFSchema::empty(),
        };
        plan.map_expressions(|expr| expr.transform_up(|expr| session.rewrite(expr, &schema)))
    }
}

/// The session's zone, and its name as Arrow types carry it.
struct Session {
    zone: TimeZone,
    name: Arc<str>,
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
                        timestamp_scalar(micros, *unit, zone.clone()),
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
            // A wall-clock time made an instant: a time of the session's zone.
            (Some(ArrowType::Timestamp(from_unit, None)), ArrowType::Timestamp(_, Some(zone)))
                if **zone != *self.name =>
            {
                let local = rebuild(
                    expr,
                    ArrowType::Timestamp(*from_unit, Some(self.name.clone())),
                );
                Ok(Transformed::yes(rebuild(local, to)))
            }
            // An instant made a wall-clock time: the session's clock at that instant.
            (Some(ArrowType::Timestamp(from_unit, Some(_))), ArrowType::Timestamp(_, None)) => {
                let zoned = rebuild(
                    expr,
                    ArrowType::Timestamp(*from_unit, Some(self.name.clone())),
                );
                let local = to_local_time().call(vec![zoned]);
                Ok(Transformed::yes(rebuild(local, to)))
            }
            // An instant's date: the session's date at that instant.
            (Some(ArrowType::Timestamp(from_unit, Some(zone))), ArrowType::Date32)
                if **zone != *self.name =>
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
fn timestamp_scalar(micros: i64, unit: TimeUnit, zone: Arc<str>) -> ScalarValue {
    let zone = Some(zone);
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

/// `plan` with each zoned timestamp column of its result in the session's zone `zone_name`
/// (the instants unchanged), so clients write them in that zone. A plan that returns no rows
/// of a query (a write, DDL, EXPLAIN) is left as it is.
pub(crate) fn results_in_session_zone(
    plan: LogicalPlan,
    zone_name: Option<&str>,
) -> DfResult<LogicalPlan> {
    let Some(zone_name) = zone_name else {
        return Ok(plan);
    };
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
    let needs = plan.schema().fields().iter().any(|field| {
        matches!(field.data_type(), ArrowType::Timestamp(_, Some(zone)) if **zone != *zone_name)
    });
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
            match field.data_type() {
                ArrowType::Timestamp(unit, Some(_)) => Expr::Cast(Cast::new(
                    Box::new(column),
                    ArrowType::Timestamp(*unit, Some(zone.clone())),
                ))
                .alias_qualified(qualifier.cloned(), field.name()),
                _ => column,
            }
        })
        .collect();
    LogicalPlanBuilder::from(plan).project(columns)?.build()
}
