//! The predicate IR: simple column-versus-constant conditions the scan can apply itself.
//!
//! Anything richer stays with DataFusion. Evaluation follows SQL's three-valued logic collapsed to
//! "keep the row or not": a comparison with NULL keeps nothing.

use std::cmp::Ordering;
use std::fmt;

use rowdex_catalog::{DataType, TableDef};
use rowdex_codec::Datum;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }

    /// The operator with its operands swapped: `5 < a` is `a > 5`.
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }

    pub(crate) fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Eq => ordering == Ordering::Equal,
            CmpOp::NotEq => ordering != Ordering::Equal,
            CmpOp::Lt => ordering == Ordering::Less,
            CmpOp::LtEq => ordering != Ordering::Greater,
            CmpOp::Gt => ordering == Ordering::Greater,
            CmpOp::GtEq => ordering != Ordering::Less,
        }
    }
}

/// A condition on one column (by position in the table's columns). The planner's predicates
/// hold values already of the column's type (`Predicate<Datum>`, the default); a compiled query
/// holds slots for values bound at each run (`Predicate<Slot>` in the query crate), so every
/// kind of condition is written once.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate<V = Datum> {
    Compare {
        column: usize,
        op: CmpOp,
        value: V,
    },
    InList {
        column: usize,
        values: Vec<V>,
    },
    /// `LIKE pattern`, case-sensitive, `%` any run of characters and `_` any one character
    /// (no escape character). Its literal start (`'IMG_%'`: `IMG`) bounds a key range;
    /// `'prefix%'` is that range exactly.
    Like {
        column: usize,
        pattern: String,
    },
    IsNull {
        column: usize,
    },
    IsNotNull {
        column: usize,
    },
    /// A row-value comparison `(c1, c2, ...) op (v1, v2, ...)` (`op` one of `<`, `<=`, `>`,
    /// `>=`): the first pair that differs decides, as in SQL; a NULL met before that makes it
    /// unknown, which keeps nothing.
    RowCompare {
        columns: Vec<usize>,
        op: CmpOp,
        values: Vec<V>,
    },
}

impl<V> Predicate<V> {
    /// The column the predicate is on (the first one of a row-value comparison).
    pub fn column(&self) -> usize {
        match self {
            Predicate::Compare { column, .. }
            | Predicate::InList { column, .. }
            | Predicate::Like { column, .. }
            | Predicate::IsNull { column }
            | Predicate::IsNotNull { column } => *column,
            Predicate::RowCompare { columns, .. } => columns.first().copied().unwrap_or(0),
        }
    }

    /// Every column the predicate reads.
    pub fn columns(&self) -> Vec<usize> {
        match self {
            Predicate::RowCompare { columns, .. } => columns.clone(),
            other => vec![other.column()],
        }
    }
}

impl Predicate {
    /// Whether a row (all columns, in column order) satisfies the predicate.
    pub fn matches(&self, row: &[Datum]) -> bool {
        if let Predicate::RowCompare {
            columns,
            op,
            values,
        } = self
        {
            for (column, value) in columns.iter().zip(values) {
                let Some(datum) = row.get(*column) else {
                    return false;
                };
                if datum.is_null() || value.is_null() {
                    return false;
                }
                let ordering = datum.key_cmp(value);
                if ordering != Ordering::Equal {
                    return op.holds(ordering);
                }
            }
            return op.holds(Ordering::Equal);
        }
        let Some(datum) = row.get(self.column()) else {
            return false;
        };
        match self {
            Predicate::RowCompare { .. } => false,
            Predicate::IsNull { .. } => datum.is_null(),
            Predicate::IsNotNull { .. } => !datum.is_null(),
            _ if datum.is_null() => false,
            Predicate::Compare { op, value, .. } => {
                !value.is_null() && op.holds(datum.key_cmp(value))
            }
            Predicate::InList { values, .. } => values
                .iter()
                .any(|v| !v.is_null() && datum.key_cmp(v) == Ordering::Equal),
            Predicate::Like { pattern, .. } => match datum {
                Datum::Text(text) => like_matches(text, pattern),
                _ => false,
            },
        }
    }

    /// Renders the predicate with the table's column names.
    pub fn display<'a>(&'a self, table: &'a TableDef) -> impl fmt::Display + 'a {
        PredicateDisplay {
            predicate: self,
            table,
        }
    }
}

/// The literal start of a LIKE pattern: every row it matches starts with it.
pub fn like_prefix(pattern: &str) -> &str {
    let end = pattern.find(['%', '_']).unwrap_or(pattern.len());
    &pattern[..end]
}

/// Whether a LIKE pattern is `prefix%` with no other wildcard: exactly "starts with prefix".
pub fn like_is_prefix(pattern: &str) -> bool {
    pattern
        .strip_suffix('%')
        .is_some_and(|prefix| !prefix.contains(['%', '_']))
}

/// SQL LIKE without an escape character: `%` matches any run of characters (none included),
/// `_` exactly one character. Backtracks to the last `%` only, so it runs in
/// O(text × pattern) at worst.
pub fn like_matches(text: &str, pattern: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    let (mut t, mut p) = (0, 0);
    // The last `%` seen, and the text position its run was last extended to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('%') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '_' || c == text[t] => {
                t += 1;
                p += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    // Let the `%` take one more character and try again after it.
                    star = Some((star_p, star_t + 1));
                    p = star_p + 1;
                    t = star_t + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '%')
}

/// A value of `column` as a SQL literal: a DECIMAL with the column's scale, any other value
/// as it displays.
pub(crate) fn value_text(table: &TableDef, column: usize, value: &Datum) -> String {
    match (table.columns.get(column).map(|c| c.data_type), value) {
        (Some(DataType::Decimal { scale, .. }), Datum::Decimal(unscaled)) => {
            rowdex_codec::format_decimal(*unscaled, scale)
        }
        _ => value.to_string(),
    }
}

struct PredicateDisplay<'a> {
    predicate: &'a Predicate,
    table: &'a TableDef,
}

impl fmt::Display for PredicateDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .table
            .columns
            .get(self.predicate.column())
            .map_or("?", |c| c.name.as_str());
        match self.predicate {
            Predicate::Compare { op, value, column } => write!(
                f,
                "{name} {} {}",
                op.symbol(),
                value_text(self.table, *column, value)
            ),
            Predicate::InList { values, column } => {
                write!(f, "{name} IN (")?;
                for (i, value) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(&value_text(self.table, *column, value))?;
                }
                f.write_str(")")
            }
            Predicate::Like { pattern, .. } => {
                write!(f, "{name} LIKE '{}'", pattern.replace('\'', "''"))
            }
            Predicate::IsNull { .. } => write!(f, "{name} IS NULL"),
            Predicate::IsNotNull { .. } => write!(f, "{name} IS NOT NULL"),
            Predicate::RowCompare {
                columns,
                op,
                values,
            } => {
                let names: Vec<&str> = columns
                    .iter()
                    .map(|c| self.table.columns.get(*c).map_or("?", |c| c.name.as_str()))
                    .collect();
                write_row_compare(f, &names, *op, values)
            }
        }
    }
}

/// Writes a row-value comparison: `(a, b) < (1, 2)`.
pub(crate) fn write_row_compare(
    f: &mut fmt::Formatter<'_>,
    names: &[&str],
    op: CmpOp,
    values: &[Datum],
) -> fmt::Result {
    let values: Vec<String> = values.iter().map(ToString::to_string).collect();
    write!(
        f,
        "({}) {} ({})",
        names.join(", "),
        op.symbol(),
        values.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_with_null_keep_nothing() {
        let row = [Datum::Null, Datum::Int(3)];
        let on_null = Predicate::Compare {
            column: 0,
            op: CmpOp::NotEq,
            value: Datum::Int(1),
        };
        assert!(!on_null.matches(&row));
        let against_null = Predicate::Compare {
            column: 1,
            op: CmpOp::Eq,
            value: Datum::Null,
        };
        assert!(!against_null.matches(&row));
        assert!(Predicate::IsNull { column: 0 }.matches(&row));
        assert!(!Predicate::IsNull { column: 1 }.matches(&row));
        let in_with_null = Predicate::InList {
            column: 1,
            values: vec![Datum::Null, Datum::Int(3)],
        };
        assert!(in_with_null.matches(&row));
    }

    #[test]
    fn row_values_compare_left_to_right() {
        let row = [Datum::Int(3), Datum::Null, Datum::Int(7)];
        let cmp = |columns: Vec<usize>, op, values: Vec<i64>| Predicate::RowCompare {
            columns,
            op,
            values: values.into_iter().map(Datum::Int).collect(),
        };
        // The first element decides before the NULL is reached.
        assert!(cmp(vec![0, 1], CmpOp::Lt, vec![4, 0]).matches(&row));
        assert!(!cmp(vec![0, 1], CmpOp::Gt, vec![4, 0]).matches(&row));
        // Equal first elements reach the NULL: unknown.
        assert!(!cmp(vec![0, 1], CmpOp::Lt, vec![3, 9]).matches(&row));
        assert!(!cmp(vec![0, 1], CmpOp::GtEq, vec![3, 9]).matches(&row));
        assert!(cmp(vec![0, 2], CmpOp::Lt, vec![3, 8]).matches(&row));
        assert!(!cmp(vec![0, 2], CmpOp::Lt, vec![3, 7]).matches(&row));
        assert!(cmp(vec![0, 2], CmpOp::LtEq, vec![3, 7]).matches(&row));
        assert!(cmp(vec![0, 2], CmpOp::GtEq, vec![3, 7]).matches(&row));
        assert!(cmp(vec![2, 0], CmpOp::Gt, vec![6, 100]).matches(&row));
    }

    #[test]
    fn like_prefix_and_ranges() {
        let row = [Datum::Text("host12".into()), Datum::Int(5)];
        let like = |p: &str| Predicate::Like {
            column: 0,
            pattern: p.into(),
        };
        assert!(like("host1%").matches(&row));
        assert!(!like("host2%").matches(&row));
        assert!(like("host__").matches(&row) && !like("host_").matches(&row));
        assert!(like("%12").matches(&row) && like("h%1%2").matches(&row));
        assert!(!like("%21%").matches(&row) && !like("host1").matches(&row));
        let cmp = |op| Predicate::Compare {
            column: 1,
            op,
            value: Datum::Int(5),
        };
        assert!(cmp(CmpOp::LtEq).matches(&row) && cmp(CmpOp::GtEq).matches(&row));
        assert!(!cmp(CmpOp::Lt).matches(&row) && !cmp(CmpOp::Gt).matches(&row));
    }
}
