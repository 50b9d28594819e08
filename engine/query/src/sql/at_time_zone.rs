//! `value AT TIME ZONE zone` becomes `timezone(zone, value)` (`functions::zones`), as
//! PostgreSQL defines it: an instant becomes the wall-clock time the zone shows then, and a
//! wall-clock time the instant at which the zone shows it. DataFusion's planner would only
//! relabel the value's zone, keeping the instant.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, VisitMut, visit_expressions_mut};

use crate::sql::interval_products::call;

/// Rewrites every `AT TIME ZONE` of `statement`.
pub(crate) fn at_time_zone_as_calls<V: VisitMut>(statement: &mut V) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Expr::AtTimeZone {
            timestamp,
            time_zone,
        } = expr
        {
            *expr = call(
                "timezone",
                vec![*time_zone.clone(), Expr::Nested(timestamp.clone())],
            );
        }
        ControlFlow::<()>::Continue(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn at_time_zone_is_a_call() {
        let mut statements = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT at AT TIME ZONE 'UTC', (now() AT TIME ZONE 'Asia/Tokyo') FROM t",
        )
        .expect("parses");
        at_time_zone_as_calls(&mut statements);
        assert_eq!(
            statements[0].to_string(),
            "SELECT timezone('UTC', (at)), (timezone('Asia/Tokyo', (now()))) FROM t"
        );
    }
}
