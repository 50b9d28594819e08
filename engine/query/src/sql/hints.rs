//! Optimizer hints written as a comment in a statement, Phoenix style:
//! `SELECT /*+ INDEX(t idx_a idx_b) */ ...` restricts the scan of `t` to those indexes, and
//! `/*+ NO_INDEX */` reads every table by primary key, and `/*+ INDEX_MERGE(t i1 i2) */` (MySQL's
//! name) intersects exactly the named indexes. `/*+ LOOKUP_JOIN(t) */` joins `t` by probing its
//! keys, `/*+ HASH_JOIN(t) */` by reading it whole (without a table: every join). Unknown hints
//! are ignored, as in Phoenix and Oracle, so a hint never turns a working query into an error.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Statement, TableFactor, Visit, Visitor};

use rowdex_planner::IndexHint;
use rowdex_planner::lookup::JoinHint;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryHints {
    /// Table name -> the indexes it may use.
    indexes: HashMap<String, Vec<String>>,
    /// Table name -> the indexes to intersect.
    merges: HashMap<String, Vec<String>>,
    no_index: bool,
    /// Table name -> how joins read it; the empty name is every table.
    joins: HashMap<String, JoinHint>,
}

impl QueryHints {
    pub fn is_empty(&self) -> bool {
        self.indexes.is_empty() && self.merges.is_empty() && !self.no_index && self.joins.is_empty()
    }

    /// How joins may read `table`: its own hint, else the one for every table.
    pub fn join_for_table(&self, table: &str) -> JoinHint {
        self.joins
            .get(table)
            .or_else(|| self.joins.get(""))
            .copied()
            .unwrap_or_default()
    }

    /// The hint for scans of `table`.
    pub fn for_table(&self, table: &str) -> IndexHint {
        if self.no_index {
            return IndexHint::NoIndex;
        }
        if let Some(names) = self.merges.get(table) {
            return IndexHint::Merge(names.clone());
        }
        match self.indexes.get(table) {
            Some(names) => IndexHint::Use(names.clone()),
            None => IndexHint::Auto,
        }
    }

    /// Lets a hint name a table by the alias `statement` gives it (`/*+ LOOKUP_JOIN(o) */` over
    /// `FROM orders o`): each alias's hints also apply to the table, unless the table has hints
    /// of its own.
    pub(crate) fn resolve_aliases(&mut self, statement: &Statement) {
        if self.is_empty() {
            return;
        }
        let mut aliases = Aliases::default();
        let _ = statement.visit(&mut aliases);
        for (alias, table) in aliases.0 {
            if let Some(names) = self.indexes.get(&alias).cloned() {
                self.indexes.entry(table.clone()).or_insert(names);
            }
            if let Some(names) = self.merges.get(&alias).cloned() {
                self.merges.entry(table.clone()).or_insert(names);
            }
            if let Some(hint) = self.joins.get(&alias).copied() {
                self.joins.entry(table).or_insert(hint);
            }
        }
    }

    /// Adds the hints of one `/*+ ... */` comment body (without the `+`).
    pub(crate) fn parse_into(&mut self, text: &str) {
        let mut rest = text;
        loop {
            rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
            let name_len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if name_len == 0 {
                return;
            }
            let name = rest[..name_len].to_ascii_uppercase();
            rest = rest[name_len..].trim_start();
            let mut args: Vec<String> = Vec::new();
            if let Some(inner) = rest.strip_prefix('(') {
                let end = inner.find(')').unwrap_or(inner.len());
                args = inner[..end]
                    .split(|c: char| c.is_whitespace() || c == ',')
                    .filter(|a| !a.is_empty())
                    .map(unquote)
                    .collect();
                rest = inner.get(end + 1..).unwrap_or_default();
            }
            match name.as_str() {
                "NO_INDEX" => self.no_index = true,
                "INDEX" if args.len() >= 2 => {
                    let table = args.remove(0);
                    self.indexes.entry(table).or_default().extend(args);
                }
                "LOOKUP_JOIN" | "HASH_JOIN" => {
                    let hint = if name == "LOOKUP_JOIN" {
                        JoinHint::Lookup
                    } else {
                        JoinHint::Hash
                    };
                    if args.is_empty() {
                        self.joins.insert(String::new(), hint);
                    }
                    for table in args {
                        self.joins.insert(table, hint);
                    }
                }
                "INDEX_MERGE" if args.len() >= 3 => {
                    let table = args.remove(0);
                    self.merges.entry(table).or_default().extend(args);
                }
                _ => {}
            }
        }
    }
}

/// The aliases a statement gives its tables: (alias, table name), both as SQL normalises them.
#[derive(Default)]
struct Aliases(Vec<(String, String)>);

impl Visitor for Aliases {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name,
            alias: Some(alias),
            ..
        } = factor
            && let Some(table) = name.0.last().and_then(|part| part.as_ident())
        {
            let normalised =
                |ident: &datafusion::sql::sqlparser::ast::Ident| match ident.quote_style {
                    Some(_) => ident.value.clone(),
                    None => ident.value.to_lowercase(),
                };
            self.0.push((normalised(&alias.name), normalised(table)));
        }
        ControlFlow::Continue(())
    }
}

/// Identifiers as SQL normalises them: lower case unless double-quoted.
fn unquote(word: &str) -> String {
    match word.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
        Some(quoted) => quoted.to_string(),
        None => word.to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_index_and_no_index_hints() {
        let mut hints = QueryHints::default();
        hints.parse_into(" INDEX(T idx_A, idx_b) FIRST_ROWS index(u \"Mixed\")");
        assert_eq!(
            hints.for_table("t"),
            IndexHint::Use(vec!["idx_a".into(), "idx_b".into()])
        );
        assert_eq!(hints.for_table("u"), IndexHint::Use(vec!["Mixed".into()]));
        assert_eq!(hints.for_table("v"), IndexHint::Auto);
        let mut none = QueryHints::default();
        none.parse_into("NO_INDEX");
        assert_eq!(none.for_table("t"), IndexHint::NoIndex);
        let mut merge = QueryHints::default();
        merge.parse_into("INDEX_MERGE(t a b)");
        assert_eq!(
            merge.for_table("t"),
            IndexHint::Merge(vec!["a".into(), "b".into()])
        );
        let mut joins = QueryHints::default();
        joins.parse_into("LOOKUP_JOIN(o, Items) HASH_JOIN");
        assert_eq!(joins.join_for_table("o"), JoinHint::Lookup);
        assert_eq!(joins.join_for_table("items"), JoinHint::Lookup);
        assert_eq!(joins.join_for_table("u"), JoinHint::Hash);
        assert_eq!(QueryHints::default().join_for_table("u"), JoinHint::Auto);
        let mut junk = QueryHints::default();
        junk.parse_into("INDEX( ) ((( ");
        assert!(junk.is_empty());
    }
}
