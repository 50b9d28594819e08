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
    /// No NOT over two IN lists on one column.
    InListsUnderNot,
    /// No IN subquery below an OR or a NOT together with an EXISTS, in a query on a view.
    ViewCorrelatedApply,
}

impl Restriction {
    pub const ALL: [Restriction; 2] = [
        Restriction::InListsUnderNot,
        Restriction::ViewCorrelatedApply,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Restriction::InListsUnderNot => "in-lists-under-not",
            Restriction::ViewCorrelatedApply => "view-correlated-apply",
        }
    }

    /// The finding that reproduces the bug, and what goes wrong.
    pub fn reason(self) -> &'static str {
        match self {
            Restriction::InListsUnderNot => {
                "open bug, see findings/in_lists_under_not_null.slt: DataFusion's simplifier \
                 folds `b IN (1, 3) AND b IN (2, 4)` to false, so `NOT (...)` is true for a \
                 NULL b (SQL: unknown), in queries and in UPDATE/DELETE conditions"
            }
            Restriction::ViewCorrelatedApply => {
                "open bug, see findings/view_correlated_apply.slt: a condition on a view with an \
                 IN subquery below an OR or NOT and a correlated EXISTS fails with \
                 \"Physical plan does not support logical expression OuterReferenceColumn\""
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
