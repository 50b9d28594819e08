//! How a foreign key's rows are found. The referenced row: a point get on the referenced
//! table's primary key, or a probe of a UNIQUE index on the referenced columns
//! ([`ReferencedAccess`]). The referencing rows: a prefix scan of the referencing table's
//! primary key when it leads with the referencing columns, else of an index that does
//! ([`ReferencingAccess`]); a foreign key is only declared where one of the two exists
//! (CREATE TABLE and ADD CONSTRAINT create the index when neither does).

use crate::foreign_key::ForeignKeyDef;
use crate::table::TableDef;

/// How the row holding given values of the referenced columns is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferencedAccess {
    /// The referenced columns are the primary key: one point get.
    PrimaryKey,
    /// A UNIQUE index (position in the table's indexes) is on exactly the referenced columns.
    Unique(usize),
}

/// How the rows holding given values of the referencing columns are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferencingAccess {
    /// The primary key leads with the referencing columns: a scan of one key prefix.
    KeyPrefix,
    /// An index (position in the table's indexes) leads with them: a scan of one value prefix.
    Index(usize),
}

fn same_set(mut a: Vec<usize>, mut b: Vec<usize>) -> bool {
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

impl TableDef {
    /// The position of the column whose id is `id`.
    pub fn position_of_id(&self, id: u32) -> Option<usize> {
        self.columns.iter().position(|c| c.id == id)
    }

    /// The positions of the columns with ids `ids`, in that order (None if one is gone).
    pub fn positions_of_ids(&self, ids: &[u32]) -> Option<Vec<usize>> {
        ids.iter().map(|id| self.position_of_id(*id)).collect()
    }

    /// The foreign key (of this table) named `name`.
    pub fn foreign_key(&self, name: &str) -> Option<&ForeignKeyDef> {
        self.foreign_keys.iter().find(|fk| fk.name == name)
    }

    /// How a row is found by its values of the columns at `positions` (in any order) when
    /// they identify at most one row: the primary key, or a ready UNIQUE index on exactly them
    /// (not a partial one: it holds some of the rows).
    pub fn referenced_access(&self, positions: &[usize]) -> Option<ReferencedAccess> {
        let key: Vec<usize> = self.key.iter().map(|k| k.column).collect();
        if !self.has_hidden_rowid() && same_set(key, positions.to_vec()) {
            return Some(ReferencedAccess::PrimaryKey);
        }
        self.ready_indexes()
            .find(|(_, index)| {
                index.unique
                    && index.filter.is_none()
                    && same_set(
                        index.columns.iter().map(|c| c.column).collect(),
                        positions.to_vec(),
                    )
            })
            .map(|(position, _)| ReferencedAccess::Unique(position))
    }

    /// How the rows holding given values of the columns at `positions` (in any order) are
    /// found by a prefix scan: the primary key or an unsalted, not partial index leading with
    /// them.
    pub fn referencing_access(&self, positions: &[usize]) -> Option<ReferencingAccess> {
        let n = positions.len();
        let leading = |columns: Vec<usize>| {
            columns.len() >= n && same_set(columns[..n].to_vec(), positions.to_vec())
        };
        // A salted key's bucket must follow from the leading columns alone.
        let salt_known =
            !self.is_salted() || (!self.salt_on.is_empty() && self.salt_on.iter().all(|p| *p < n));
        if salt_known
            && !self.has_hidden_rowid()
            && leading(self.key.iter().map(|k| k.column).collect())
        {
            return Some(ReferencingAccess::KeyPrefix);
        }
        self.ready_indexes()
            .find(|(_, index)| {
                !index.is_salted()
                    && index.filter.is_none()
                    && leading(index.columns.iter().map(|c| c.column).collect())
            })
            .map(|(position, _)| ReferencingAccess::Index(position))
    }

    /// Whether a write to this table takes part in a foreign key, on either side.
    pub fn has_foreign_keys(&self) -> bool {
        !self.foreign_keys.is_empty() || !self.referenced_by.is_empty()
    }
}
