//! Optimizer hints written as a comment in a statement, Phoenix style:
//! `SELECT /*+ INDEX(t idx_a idx_b) */ ...` restricts the scan of `t` to those indexes, and
//! `/*+ NO_INDEX */` reads every table by primary key, and `/*+ INDEX_MERGE(t i1 i2) */` (MySQL's
//! name) intersects exactly the named indexes. Unknown hints are ignored, as in Phoenix
//! and Oracle, so a hint never turns a working query into an error.

use std::collections::HashMap;

use rowdex_planner::IndexHint;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryHints {
    /// Table name -> the indexes it may use.
    indexes: HashMap<String, Vec<String>>,
    /// Table name -> the indexes to intersect.
    merges: HashMap<String, Vec<String>>,
    no_index: bool,
}

impl QueryHints {
    pub fn is_empty(&self) -> bool {
        self.indexes.is_empty() && self.merges.is_empty() && !self.no_index
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
                "INDEX_MERGE" if args.len() >= 3 => {
                    let table = args.remove(0);
                    self.merges.entry(table).or_default().extend(args);
                }
                _ => {}
            }
        }
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
        let mut junk = QueryHints::default();
        junk.parse_into("INDEX( ) ((( ");
        assert!(junk.is_empty());
    }
}
