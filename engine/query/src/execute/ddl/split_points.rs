//! Pre-split hints: Phoenix's `SPLIT ON (v1, v2, ...)` (read as the option `SPLIT_ON = (...)`,
//! see `sql::split_on`) and HBase's `NUMREGIONS = n`. They cut the table's key space into
//! regions: values of the leading key column (`SPLIT ON`), or n regions of even width over
//! the leading column's encoded bytes (`NUMREGIONS`, HBase's uniform split). rowdex has no
//! region servers to place them on; the cuts are recorded and used where regions matter to a
//! reader: SHOW KEY SPREAD reports one row per region, and a parallel scan cuts its partitions
//! at them. A salted table is split by its buckets and takes no hint (as in Phoenix).

use datafusion::sql::sqlparser::ast;
use rowdex_catalog::{DataType, TableDef};
use rowdex_codec::{Datum, key};
use rowdex_planner::Predicate;

use crate::error::{Error, Result};
use crate::native::bind_conditions;
use crate::native::scope::Scope;

/// The most regions a table is cut into.
const MAX_REGIONS: usize = 1024;

/// A split hint as declared.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SplitHint {
    /// `SPLIT_ON = (v1, v2, ...)`: values of the leading key column.
    Points(Vec<ast::Expr>),
    /// `NUMREGIONS = n`.
    Regions(usize),
}

impl SplitHint {
    /// The hint `name = value` declares, if `name` is one.
    pub(crate) fn read(name: &str, value: &ast::Expr) -> Option<Result<SplitHint>> {
        let bad = |takes: &str| Error::BadTableOption {
            option: format!("{name} = {value} ({takes})"),
        };
        if name.eq_ignore_ascii_case("split_on") {
            let points = match value {
                ast::Expr::Tuple(items) => items.clone(),
                ast::Expr::Nested(item) => vec![item.as_ref().clone()],
                item => vec![item.clone()],
            };
            return Some(if points.is_empty() || points.len() >= MAX_REGIONS {
                Err(bad(
                    "SPLIT ON takes from 1 to 1023 values of the leading key column",
                ))
            } else {
                Ok(SplitHint::Points(points))
            });
        }
        if name.eq_ignore_ascii_case("numregions") {
            return Some(
                value
                    .to_string()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (2..=256).contains(n))
                    .map(SplitHint::Regions)
                    .ok_or_else(|| bad("NUMREGIONS is a number of regions, from 2 to 256")),
            );
        }
        None
    }

    /// Records the hint's cuts on `def`.
    pub(crate) fn apply(&self, def: &mut TableDef) -> Result<()> {
        if def.is_salted() {
            return Err(Error::BadTableOption {
                option: format!(
                    "a split hint on {}, which is salted: its buckets are its regions \
                     (SALT_BUCKETS and SPLIT ON / NUMREGIONS do not go together, as in Phoenix)",
                    def.name
                ),
            });
        }
        let leading = def.key.first().ok_or_else(|| Error::BadTableOption {
            option: format!("a split hint on {}, which has no key", def.name),
        })?;
        let column = def.columns[leading.column].clone();
        let order = leading.order();
        match self {
            SplitHint::Points(points) => {
                // The values read as the column's type, as an IN list of a WHERE would be.
                let list = ast::Expr::InList {
                    expr: Box::new(ast::Expr::Identifier(ast::Ident::new(&column.name))),
                    list: points.clone(),
                    negated: false,
                };
                let bad = || Error::BadTableOption {
                    option: format!(
                        "SPLIT ON ({}): values of the leading key column {} ({})",
                        join(points),
                        column.name,
                        column.data_type
                    ),
                };
                let mut conditions = Vec::new();
                Scope::new(def, None)
                    .conditions(&list, &mut conditions)
                    .ok_or_else(bad)?;
                let bound = bind_conditions(def, &conditions, &[]).ok_or_else(bad)?;
                let values = match bound.predicates.as_slice() {
                    [Predicate::InList { values, .. }] => values.clone(),
                    [Predicate::Compare { value, .. }] => vec![value.clone()],
                    _ => return Err(bad()),
                };
                let mut keys: Vec<Vec<u8>> = values
                    .iter()
                    .map(|value| {
                        let mut encoded = Vec::new();
                        key::encode_datum(&mut encoded, value, order);
                        encoded
                    })
                    .collect();
                keys.sort();
                keys.dedup();
                def.split_keys = keys;
                def.split_hint = Some(format!("split_on=({})", join(points)));
            }
            SplitHint::Regions(regions) => {
                // The tag byte every key of the column starts with, then even steps of the
                // byte after it.
                let example =
                    representative(&column.data_type).ok_or_else(|| Error::BadTableOption {
                        option: format!(
                            "NUMREGIONS = {regions} (the leading key column {} is of type {}, \
                             whose keys have no even split)",
                            column.name, column.data_type
                        ),
                    })?;
                let mut sample = Vec::new();
                key::encode_datum(&mut sample, &example, order);
                let tag = sample.first().copied().unwrap_or(0);
                def.split_keys = (1..*regions)
                    .map(|k| vec![tag, (k * 256 / regions) as u8])
                    .collect();
                def.split_hint = Some(format!("numregions={regions}"));
            }
        }
        Ok(())
    }
}

/// A value of `data_type`, whose key encoding starts with the tag every key of the type has.
fn representative(data_type: &DataType) -> Option<Datum> {
    Some(match data_type {
        DataType::Integer => Datum::Int(0),
        DataType::Float => Datum::Float(0.0),
        DataType::Decimal { .. } => Datum::Decimal(0),
        DataType::Text { .. } => Datum::Text(String::new()),
        DataType::Bytes { .. } => Datum::Bytes(Vec::new()),
        DataType::Date => Datum::Date(0),
        DataType::Timestamp | DataType::TimestampTz => Datum::Timestamp(0),
        DataType::Uuid => Datum::Uuid([0; 16]),
        _ => return None,
    })
}

fn join(points: &[ast::Expr]) -> String {
    points
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
