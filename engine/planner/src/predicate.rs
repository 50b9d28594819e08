//! The predicate IR: simple column-versus-constant conditions the scan can apply itself.
//!
//! Anything richer stays with DataFusion. Evaluation follows SQL's three-valued logic collapsed to
//! "keep the row or not": a comparison with NULL keeps nothing.

use std::cmp::Ordering;
use std::fmt;

use rowdex_catalog::{DataType, FilterOp, TableDef};
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
        FilterOp::from(self).holds(ordering)
    }
}

/// The catalog's spelling of the same operator (a partial index's condition keeps it).
impl From<CmpOp> for FilterOp {
    fn from(op: CmpOp) -> FilterOp {
        match op {
            CmpOp::Eq => FilterOp::Eq,
            CmpOp::NotEq => FilterOp::NotEq,
            CmpOp::Lt => FilterOp::Lt,
            CmpOp::LtEq => FilterOp::LtEq,
            CmpOp::Gt => FilterOp::Gt,
            CmpOp::GtEq => FilterOp::GtEq,
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
    /// `arm OR arm OR ...`, each arm a conjunction: kept when some arm keeps the row. Only ever
    /// a condition of the whole WHERE (no NOT around it), so an arm that is unknown for a row
    /// keeps nothing, as a false one. Built by [`Predicate::any_of`], which folds the forms a
    /// simpler predicate says.
    Or {
        arms: Vec<Vec<Predicate<V>>>,
    },
}

impl<V> Predicate<V> {
    /// The column the predicate is on (the first one of a row-value comparison or of an OR's
    /// first arm).
    pub fn column(&self) -> usize {
        match self {
            Predicate::Compare { column, .. }
            | Predicate::InList { column, .. }
            | Predicate::Like { column, .. }
            | Predicate::IsNull { column }
            | Predicate::IsNotNull { column } => *column,
            Predicate::RowCompare { columns, .. } => columns.first().copied().unwrap_or(0),
            Predicate::Or { arms } => arms
                .first()
                .and_then(|arm| arm.first())
                .map_or(0, Predicate::column),
        }
    }

    /// Every column the predicate reads.
    pub fn columns(&self) -> Vec<usize> {
        match self {
            Predicate::RowCompare { columns, .. } => columns.clone(),
            Predicate::Or { arms } => arms.iter().flatten().flat_map(Predicate::columns).collect(),
            other => vec![other.column()],
        }
    }

    /// The conjunction `arm OR arm OR ...` says: nested ORs flattened into this one; an arm
    /// that is always true (no conditions) makes the whole always true (no conditions); arms
    /// that are each one equality or IN list on the same column fold into one IN list (the
    /// form an index or key range is matched by); a single arm is its own conditions.
    pub fn any_of(arms: Vec<Vec<Predicate<V>>>) -> Vec<Predicate<V>> {
        let mut flat: Vec<Vec<Predicate<V>>> = Vec::with_capacity(arms.len());
        for arm in arms {
            match <[Predicate<V>; 1]>::try_from(arm) {
                Ok([Predicate::Or { arms: inner }]) => flat.extend(inner),
                Ok([one]) => flat.push(vec![one]),
                Err(arm) if arm.is_empty() => return Vec::new(),
                Err(arm) => flat.push(arm),
            }
        }
        if flat.len() == 1 {
            return flat.pop().unwrap_or_default();
        }
        match equality_column(&flat) {
            Some(column) => {
                let values = flat
                    .into_iter()
                    .flatten()
                    .flat_map(|p| match p {
                        Predicate::Compare { value, .. } => vec![value],
                        Predicate::InList { values, .. } => values,
                        _ => Vec::new(),
                    })
                    .collect();
                vec![Predicate::InList { column, values }]
            }
            None => vec![Predicate::Or { arms: flat }],
        }
    }
}

/// The column every arm tests by one equality or IN list, if they all test the same one.
fn equality_column<V>(arms: &[Vec<Predicate<V>>]) -> Option<usize> {
    let column_of = |arm: &Vec<Predicate<V>>| match arm.as_slice() {
        [
            Predicate::Compare {
                column,
                op: CmpOp::Eq,
                ..
            },
        ]
        | [Predicate::InList { column, .. }] => Some(*column),
        _ => None,
    };
    let first = column_of(arms.first()?)?;
    arms.iter()
        .all(|arm| column_of(arm) == Some(first))
        .then_some(first)
}

impl Predicate {
    /// Whether a row (all columns, in column order) satisfies the predicate.
    pub fn matches(&self, row: &[Datum]) -> bool {
        if let Predicate::Or { arms } = self {
            return arms
                .iter()
                .any(|arm| arm.iter().all(|predicate| predicate.matches(row)));
        }
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
            Predicate::RowCompare { .. } | Predicate::Or { .. } => false,
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
            .map_or("?", |c| c.label());
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
                    .map(|c| self.table.columns.get(*c).map_or("?", |c| c.label()))
                    .collect();
                write_row_compare(f, &names, *op, values)
            }
            Predicate::Or { arms } => {
                for (i, arm) in arms.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" OR ")?;
                    }
                    let parenthesised = arm.len() > 1;
                    if parenthesised {
                        f.write_str("(")?;
                    }
                    for (j, predicate) in arm.iter().enumerate() {
                        if j > 0 {
                            f.write_str(" AND ")?;
                        }
                        if matches!(predicate, Predicate::Or { .. }) {
                            write!(f, "({})", predicate.display(self.table))?;
                        } else {
                            write!(f, "{}", predicate.display(self.table))?;
                        }
                    }
                    if parenthesised {
                        f.write_str(")")?;
                    }
                }
                Ok(())
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
    fn or_keeps_a_row_some_arm_keeps_and_folds_equalities() {
        let eq = |column, n| Predicate::Compare {
            column,
            op: CmpOp::Eq,
            value: Datum::Int(n),
        };
        // `a = 1 OR a = 2 OR a IN (3)`: one IN list, the form an index matches.
        let in_list = Predicate::InList {
            column: 0,
            values: vec![Datum::Int(3)],
        };
        assert_eq!(
            Predicate::any_of(vec![vec![eq(0, 1)], vec![eq(0, 2)], vec![in_list]]),
            vec![Predicate::InList {
                column: 0,
                values: vec![Datum::Int(1), Datum::Int(2), Datum::Int(3)],
            }]
        );
        // An always-true arm makes the whole always true; one arm is itself.
        assert_eq!(Predicate::any_of(vec![vec![eq(0, 1)], Vec::new()]), vec![]);
        assert_eq!(Predicate::any_of(vec![vec![eq(0, 1)]]), vec![eq(0, 1)]);
        // Nested ORs flatten: `(a = 1 OR b = 2) OR (a = 3 AND b = 4)`.
        let inner = Predicate::any_of(vec![vec![eq(0, 1)], vec![eq(1, 2)]]);
        let or = Predicate::any_of(vec![inner, vec![eq(0, 3), eq(1, 4)]]);
        let [Predicate::Or { arms }] = or.as_slice() else {
            panic!("not one OR: {or:?}");
        };
        assert_eq!(arms.len(), 3);
        let keeps = |a: Datum, b: Datum| or[0].matches(&[a, b]);
        assert!(keeps(Datum::Int(1), Datum::Null));
        assert!(keeps(Datum::Null, Datum::Int(2)));
        assert!(keeps(Datum::Int(3), Datum::Int(4)));
        assert!(!keeps(Datum::Int(3), Datum::Int(5)));
        assert!(!keeps(Datum::Null, Datum::Null));
        assert_eq!(or[0].columns(), vec![0, 1, 0, 1]);
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
