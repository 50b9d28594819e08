//! rowdex-layers: reads the workspace's Rust sources and checks the shape of its imports.
//!
//! * no import circle between files of any target, however long ([`graph::circles`]);
//! * in engine/query, every module sits in a layer and imports only from its layer or below
//!   ([`layers`]).
//!
//! It reads source text, not compiled code: [`lex`] skips comments and literals, [`syntax`]
//! finds module declarations, `use` trees and paths, [`tree`] builds each target's module tree,
//! and [`graph`] resolves paths to files, re-exports included. `cargo test -p rowdex-layers`
//! runs the checks; `cargo run -p rowdex-layers` prints the import counts and circles.

pub mod graph;
pub mod layers;
pub mod lex;
pub mod syntax;
pub mod tree;

use std::path::{Path, PathBuf};

use graph::Edges;
use tree::{ReadError, Target};

/// One target's imports.
#[derive(Debug)]
pub struct TargetImports {
    pub target: Target,
    pub edges: Edges,
    pub circles: Vec<Vec<PathBuf>>,
}

/// Every target of the workspace at `root`, with its file-level imports and circles.
pub fn workspace(root: &Path) -> Result<Vec<TargetImports>, ReadError> {
    Ok(tree::targets(root)?
        .into_iter()
        .map(|target| {
            let edges = graph::edges(&target);
            let circles = graph::circles(&edges);
            TargetImports {
                target,
                edges,
                circles,
            }
        })
        .collect())
}

/// The workspace this crate belongs to. The manifest directory is read when the program runs
/// (`cargo test` and `cargo run` set it), not when it was compiled: a target directory shared
/// by several checkouts may hand one checkout a binary built in another.
pub fn own_workspace() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.clone(), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files longer than this in engine/query are split (the house rule of the layers issue).
    const MAX_QUERY_FILE_LINES: usize = 600;

    fn checked() -> Result<Vec<TargetImports>, ReadError> {
        let all = workspace(&own_workspace())?;
        // A wrong root would check nothing and pass.
        assert!(
            all.iter()
                .any(|t| t.target.package == layers::LAYERED_PACKAGE
                    && t.target.name == "lib"
                    && t.target.files.len() > 20),
            "engine/query's library was not found under {}",
            own_workspace().display()
        );
        Ok(all)
    }

    #[test]
    fn no_import_circle_in_any_target() -> Result<(), ReadError> {
        let mut found = Vec::new();
        for imports in checked()? {
            for circle in &imports.circles {
                let files: Vec<String> = circle.iter().map(|p| p.display().to_string()).collect();
                found.push(format!(
                    "{} [{}]: {}",
                    imports.target.package,
                    imports.target.name,
                    files.join(" <-> ")
                ));
            }
        }
        assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
        Ok(())
    }

    #[test]
    fn engine_query_imports_only_from_its_layer_or_below() -> Result<(), ReadError> {
        let all = checked()?;
        let query = all
            .iter()
            .find(|t| t.target.package == layers::LAYERED_PACKAGE && t.target.name == "lib");
        let violations = query
            .map(|q| layers::violations(&q.target, &q.edges))
            .unwrap_or_default();
        assert!(violations.is_empty(), "{}", violations.join("\n"));
        Ok(())
    }

    #[test]
    fn engine_query_files_stay_under_the_line_limit() -> Result<(), ReadError> {
        let mut long = Vec::new();
        for imports in checked()? {
            if imports.target.package != layers::LAYERED_PACKAGE || imports.target.name != "lib" {
                continue;
            }
            for (path, file) in &imports.target.files {
                if file.lines > MAX_QUERY_FILE_LINES {
                    long.push(format!("{}: {} lines", path.display(), file.lines));
                }
            }
        }
        assert!(
            long.is_empty(),
            "over {MAX_QUERY_FILE_LINES} lines:\n{}",
            long.join("\n")
        );
        Ok(())
    }

    #[test]
    fn no_mod_rs_in_the_workspace() -> Result<(), ReadError> {
        let mut found = Vec::new();
        for imports in checked()? {
            found.extend(
                imports
                    .target
                    .files
                    .keys()
                    .filter(|p| p.file_name().is_some_and(|n| n == "mod.rs"))
                    .map(|p| p.display().to_string()),
            );
        }
        found.sort();
        found.dedup();
        assert!(found.is_empty(), "name these foo.rs beside foo/: {found:?}");
        Ok(())
    }
}
