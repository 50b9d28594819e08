//! engine/query's layers: every module of the `rowdex` library is assigned to one, and a file
//! may import only from its own layer or the layers below. The list is the one DESIGN-NOTES.md
//! opens with; change both together.

use std::path::PathBuf;

use crate::graph::Edges;
use crate::tree::Target;

/// The package whose library is layered.
pub const LAYERED_PACKAGE: &str = "engine/query";

/// Module path patterns and their layers, lowest first. `*` stands for any one module; the most
/// specific pattern that matches a module decides (a pattern matches the module it names and
/// every module inside it).
pub const QUERY_LAYERS: &[(&str, u8)] = &[
    ("error", 1),
    ("format", 1),
    ("time_zone", 1),
    ("progress", 1),
    ("array_text", 1),
    ("stack_depth", 1),
    ("output", 2),
    ("values", 2),
    ("copy_data", 2),
    ("sql", 2),
    ("functions", 2),
    ("db", 2),
    ("scan", 3),
    ("write", 3),
    ("native", 4),
    ("df", 4),
    ("session", 5),
    ("execute::*", 6),
    ("execute", 7),
    ("prepared", 7),
    ("paging", 7),
    ("database", 8),
    ("", 9),
];

/// The layer of a module, from the most specific matching pattern.
pub fn layer_of(module: &[String]) -> Option<u8> {
    QUERY_LAYERS
        .iter()
        .filter_map(|(pattern, layer)| {
            let parts: Vec<&str> = pattern.split("::").filter(|p| !p.is_empty()).collect();
            let matches = parts.len() <= module.len()
                && parts
                    .iter()
                    .zip(module)
                    .all(|(part, name)| *part == "*" || part == name);
            // The root pattern ("") names only the root file itself.
            let root_only = parts.is_empty() && !module.is_empty();
            (matches && !root_only).then_some((parts.len(), *layer))
        })
        .max_by_key(|(specificity, _)| *specificity)
        .map(|(_, layer)| layer)
}

/// What breaks the layering of `target`: files without a layer, and imports that reach up.
pub fn violations(target: &Target, edges: &Edges) -> Vec<String> {
    let layer = |path: &PathBuf| {
        target
            .files
            .get(path)
            .and_then(|file| layer_of(&file.module))
    };
    let mut found = Vec::new();
    for (path, file) in &target.files {
        if layer_of(&file.module).is_none() {
            found.push(format!(
                "{} (module {}) has no layer in QUERY_LAYERS",
                path.display(),
                file.module.join("::")
            ));
        }
    }
    for (from, to) in edges {
        if let (Some(low), Some(high)) = (layer(from), layer(to))
            && low < high
        {
            found.push(format!(
                "{} (layer {low}) imports {} (layer {high})",
                from.display(),
                to.display()
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str) -> Vec<String> {
        path.split("::")
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_most_specific_pattern_decides() {
        assert_eq!(layer_of(&module("")), Some(9));
        assert_eq!(layer_of(&module("execute")), Some(7));
        assert_eq!(layer_of(&module("execute::ddl")), Some(6));
        assert_eq!(layer_of(&module("execute::ddl::tests")), Some(6));
        assert_eq!(layer_of(&module("df::rules::join_ordering")), Some(4));
        assert_eq!(layer_of(&module("sql::parse::tests")), Some(2));
        assert_eq!(layer_of(&module("unheard_of")), None);
    }
}
