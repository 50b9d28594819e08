//! Generator restrictions for open rowdex bugs. Each keeps the generator away from one bug
//! class that a finding under `sql-tests/findings/` reproduces, so the CI run stays green
//! while the bug is open; `rowdex-slt differential --allow NAME` lifts one to hunt the bug
//! again (or to check a fix). Restrictions for legitimate differences from SQLite are not
//! here: they are written into the generator itself, each with its reason.

use std::fmt;
use std::str::FromStr;

use super::query::Expr;

/// One open bug the generator avoids unless allowed. None is open: the two of session 9
/// (`in-lists-under-not`, `view-correlated-apply`) are fixed, their cases in `slt/nulls.slt`
/// and `slt/views.slt`. A new one gets a variant here, a name and a reason below, and a check
/// in the generator (`Gen::condition` or where the shape is drawn) that redraws what it
/// excludes (`admits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Restriction {}

impl Restriction {
    pub const ALL: [Restriction; 0] = [];

    pub fn name(self) -> &'static str {
        match self {}
    }

    /// The finding that reproduces the bug, and what goes wrong.
    pub fn reason(self) -> &'static str {
        match self {}
    }

    /// Whether a condition (on a view or not) stays clear of the bug.
    pub fn admits(self, _on_view: bool, _filter: &Expr) -> bool {
        match self {}
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
