//! The workspace as module trees: its member packages (from the root `Cargo.toml`), each
//! package's targets (library, binaries, tests, benchmarks, examples), and each target's modules
//! with the file that holds each one.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::syntax::{self, FileSyntax, Scope};

/// What went wrong reading the workspace.
#[derive(Debug)]
pub struct ReadError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for ReadError {}

/// A source file of a target.
#[derive(Debug)]
pub struct SourceFile {
    /// The module the file holds, from the target's root (`[]` for the root file).
    pub module: Vec<String>,
    pub syntax: FileSyntax,
    pub lines: usize,
}

/// One compilation target: a module tree rooted at one file.
#[derive(Debug)]
pub struct Target {
    /// The member directory, relative to the workspace root (`engine/query`).
    pub package: String,
    /// `lib`, `bin main`, `test slt`, `bench peers`, `example user_actions`.
    pub name: String,
    /// Files by path relative to the workspace root.
    pub files: BTreeMap<PathBuf, SourceFile>,
    /// Every module (file modules and inline ones) with the file that holds it.
    pub modules: BTreeMap<Vec<String>, PathBuf>,
}

/// The member directories listed in the workspace's `Cargo.toml`.
pub fn members(root: &Path) -> Result<Vec<String>, ReadError> {
    let manifest = read(&root.join("Cargo.toml"))?;
    let Some(start) = manifest.find("members") else {
        return Ok(Vec::new());
    };
    let list = &manifest[start..];
    let (Some(open), Some(close)) = (list.find('['), list.find(']')) else {
        return Ok(Vec::new());
    };
    Ok(list[open + 1..close]
        .split(',')
        .map(|item| item.trim().trim_matches('"').to_string())
        .filter(|item| !item.is_empty())
        .collect())
}

/// Every target of every member.
pub fn targets(root: &Path) -> Result<Vec<Target>, ReadError> {
    let mut targets = Vec::new();
    for member in members(root)? {
        let dir = root.join(&member);
        let mut roots: Vec<(String, PathBuf)> = Vec::new();
        for (name, file) in [("lib", "src/lib.rs"), ("bin main", "src/main.rs")] {
            if dir.join(file).is_file() {
                roots.push((name.to_string(), dir.join(file)));
            }
        }
        for (kind, folder) in [
            ("bin", "src/bin"),
            ("test", "tests"),
            ("bench", "benches"),
            ("example", "examples"),
        ] {
            for (stem, file) in target_roots(&dir.join(folder))? {
                roots.push((format!("{kind} {stem}"), file));
            }
        }
        for (name, file) in roots {
            targets.push(load_target(root, &member, &name, &file)?);
        }
    }
    Ok(targets)
}

/// `x.rs` and `x/main.rs` directly under `folder`, as (x, file).
fn target_roots(folder: &Path) -> Result<Vec<(String, PathBuf)>, ReadError> {
    if !folder.is_dir() {
        return Ok(Vec::new());
    }
    let entries = fs::read_dir(folder).map_err(|source| ReadError {
        path: folder.to_path_buf(),
        source,
    })?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        if path.extension().is_some_and(|e| e == "rs") {
            found.push((stem, path));
        } else if path.join("main.rs").is_file() {
            found.push((stem, path.join("main.rs")));
        }
    }
    found.sort();
    Ok(found)
}

fn load_target(root: &Path, package: &str, name: &str, file: &Path) -> Result<Target, ReadError> {
    let mut target = Target {
        package: package.to_string(),
        name: name.to_string(),
        files: BTreeMap::new(),
        modules: BTreeMap::new(),
    };
    // (file, its module, whether its child modules live beside it rather than below it).
    let mut pending: Vec<(PathBuf, Vec<String>, bool)> = vec![(file.to_path_buf(), vec![], true)];
    while let Some((path, module, children_beside)) = pending.pop() {
        let source = read(&path)?;
        let syntax = syntax::read(&source);
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        target.modules.insert(module.clone(), relative.clone());
        for inline in &syntax.inline_modules {
            target
                .modules
                .insert(joined(&module, inline), relative.clone());
        }
        let base = match (children_beside, path.parent()) {
            (true, Some(parent)) => parent.to_path_buf(),
            (false, Some(parent)) => parent.join(path.file_stem().unwrap_or_default()),
            (_, None) => PathBuf::new(),
        };
        for (scope, child) in &syntax.file_modules {
            let dir = scope.iter().fold(base.clone(), |dir, part| dir.join(part));
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(child).join("mod.rs");
            let (child_path, beside) = if flat.is_file() {
                (flat, false)
            } else {
                (nested, true)
            };
            if child_path.is_file() {
                let mut child_module = joined(&module, scope);
                child_module.push(child.clone());
                pending.push((child_path, child_module, beside));
            }
        }
        target.files.insert(
            relative,
            SourceFile {
                module,
                lines: source.lines().count(),
                syntax,
            },
        );
    }
    Ok(target)
}

/// `module` followed by `scope`.
pub fn joined(module: &[String], scope: &Scope) -> Vec<String> {
    module.iter().chain(scope).cloned().collect()
}

fn read(path: &Path) -> Result<String, ReadError> {
    fs::read_to_string(path).map_err(|source| ReadError {
        path: path.to_path_buf(),
        source,
    })
}
