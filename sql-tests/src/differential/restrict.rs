//! Generator restrictions for open rowdex bugs. Each keeps the generator away from one bug
//! class that a finding under `sql-tests/findings/` reproduces, so the CI run stays green
//! while the bug is open; `rowdex-slt differential --allow NAME` lifts one to hunt the bug
//! again (or to check a fix). Restrictions for legitimate differences from SQLite are not
//! here: they are written into the generator itself, each with its reason.

use std::fmt;
use std::str::FromStr;

/// One open bug the generator avoids unless allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Restriction {
    /// No `IN (subquery)` below an OR or a NOT.
    NestedInSubquery,
    /// No ORDER BY of unselected columns together with a condition DataFusion evaluates
    /// above the scan (an OR, a comparison of two columns, a subquery).
    UnselectedOrderColumns,
    /// No row value in a view's condition.
    ViewRowValue,
    /// No `ASC NULLS LAST` or `DESC NULLS FIRST` (the placements that differ from the
    /// default, where NULL sorts lowest).
    NullsPlacement,
}

impl Restriction {
    pub const ALL: [Restriction; 4] = [
        Restriction::NestedInSubquery,
        Restriction::UnselectedOrderColumns,
        Restriction::ViewRowValue,
        Restriction::NullsPlacement,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Restriction::NestedInSubquery => "nested-in-subquery",
            Restriction::UnselectedOrderColumns => "unselected-order-columns",
            Restriction::ViewRowValue => "view-row-value",
            Restriction::NullsPlacement => "nulls-placement",
        }
    }

    /// The finding that reproduces the bug, and what goes wrong.
    pub fn reason(self) -> &'static str {
        match self {
            Restriction::NestedInSubquery => {
                "open bug, see findings/nested_not_in_subquery_null.slt: below an OR or a NOT, \
                 `x NOT IN (SELECT ...)` over a subquery with a NULL is true instead of unknown \
                 (rows that SQLite leaves out are returned)"
            }
            Restriction::UnselectedOrderColumns => {
                "open bug, see findings/unselected_key_order_projection.slt: ORDER BY a key \
                 column that is not selected, under a filter DataFusion keeps above the scan, \
                 fails DataFusion's ProjectionPushdown assertion (\"Input field name p does \
                 not match with the projection expression q\")"
            }
            Restriction::ViewRowValue => {
                "open bug, see findings/view_row_value_negative_literal.slt and \
                 findings/view_row_value_null_compared.slt: row values in a view's condition \
                 reach DataFusion as they are (a query's are spelled out first), so \
                 `(d, c) < (-1, 'x')` cannot be planned (\"Only identifiers and literals are \
                 supported in tuples\") and `(b, a) <> (FALSE, TRUE)` with b NULL is true \
                 instead of unknown (DataFusion compares them as structs)"
            }
            Restriction::NullsPlacement => {
                "open bug, see findings/index_order_ignores_nulls_first.slt: `ORDER BY a DESC \
                 NULLS FIRST` served by reading an index on `a` in reverse returns the NULLs \
                 last (both executors, with the index only)"
            }
        }
    }
}

impl fmt::Display for Restriction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Restriction {
    type Err = crate::Error;

    fn from_str(name: &str) -> Result<Restriction, crate::Error> {
        Restriction::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .ok_or_else(|| crate::Error::UnknownRestriction {
                name: name.to_string(),
                known: Restriction::ALL.iter().map(|r| r.name()).collect(),
            })
    }
}

/// The restrictions in force: all of them unless lifted.
#[derive(Debug, Clone, Default)]
pub struct Restrictions {
    lifted: Vec<Restriction>,
}

impl Restrictions {
    /// Every restriction lifted: the generator's full range.
    pub fn none() -> Restrictions {
        Restrictions {
            lifted: Restriction::ALL.to_vec(),
        }
    }

    pub fn lift(&mut self, restriction: Restriction) {
        if !self.lifted.contains(&restriction) {
            self.lifted.push(restriction);
        }
    }

    /// Whether the generator may produce what `restriction` keeps it from.
    pub fn allows(&self, restriction: Restriction) -> bool {
        self.lifted.contains(&restriction)
    }

    /// The restrictions in force.
    pub fn active(&self) -> Vec<Restriction> {
        Restriction::ALL
            .into_iter()
            .filter(|r| !self.allows(*r))
            .collect()
    }
}
