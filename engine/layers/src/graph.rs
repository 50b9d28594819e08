//! The file-level import graph of a target: an edge from a file to every other file of the
//! same target whose items it names, through `use` or a path (`crate::a::f()`, `super::T`,
//! `child::g()`). A name imported through a re-export (`pub use x::T`, in `lib.rs` or
//! anywhere) leads to the file that defines it, so the root's re-exports never make circles of
//! their own. Declaring a module (`mod x;`) is not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::syntax::Scope;
use crate::tree::{Target, joined};

/// How many re-exports a name is followed through before the chase stops.
const MAX_REEXPORT_HOPS: usize = 16;

/// Distinct (importing file, imported file) pairs.
pub type Edges = BTreeSet<(PathBuf, PathBuf)>;

/// Every file-to-file import of `target`.
pub fn edges(target: &Target) -> Edges {
    let mut edges = Edges::new();
    for (path, file) in &target.files {
        let named = file
            .syntax
            .uses
            .iter()
            .map(|u| (&u.scope, &u.path))
            .chain(file.syntax.paths.iter().map(|p| (&p.scope, &p.segments)));
        for (scope, segments) in named {
            if let Some(to) = resolve(target, path, scope, segments, 0)
                && to != *path
            {
                edges.insert((path.clone(), to));
            }
        }
    }
    edges
}

/// The file holding what `segments` names when written in `scope` of `file`; None for
/// anything outside the target (other crates, the standard library, local names).
fn resolve(
    target: &Target,
    file: &Path,
    scope: &Scope,
    segments: &[String],
    hops: usize,
) -> Option<PathBuf> {
    let source = target.files.get(file)?;
    let here = joined(&source.module, scope);
    let (first, rest) = segments.split_first()?;
    let absolute: Vec<String> = match first.as_str() {
        "crate" => rest.to_vec(),
        "self" => joined(&here, &rest.to_vec()),
        "super" => {
            let mut module = here.clone();
            module.pop();
            let mut rest = rest;
            while let Some(("super", more)) = rest.split_first().map(|(s, m)| (s.as_str(), m)) {
                module.pop();
                rest = more;
            }
            joined(&module, &rest.to_vec())
        }
        name => {
            let mut child = here.clone();
            child.push(name.to_string());
            if target.modules.contains_key(&child) {
                joined(&here, &segments.to_vec())
            } else {
                // A name this scope imported (`use crate::native; native::run()`).
                let import = imported(target, file, scope, name)?;
                if hops >= MAX_REEXPORT_HOPS {
                    return None;
                }
                let mut full = import.1;
                full.extend(rest.iter().cloned());
                return resolve(target, file, &import.0, &full, hops + 1);
            }
        }
    };
    locate(target, &absolute, hops)
}

/// The file of the deepest module `path` reaches, or of the item it names there, following a
/// re-export to where the item is defined.
fn locate(target: &Target, path: &[String], hops: usize) -> Option<PathBuf> {
    let depth = (0..=path.len())
        .rev()
        .find(|&n| target.modules.contains_key(&path[..n]))?;
    let module = &path[..depth];
    let file = target.modules.get(module)?;
    let Some(item) = path.get(depth) else {
        return Some(file.clone());
    };
    if hops < MAX_REEXPORT_HOPS
        && let Some(source) = target.files.get(file)
    {
        let scope: Scope = module[source.module.len().min(module.len())..].to_vec();
        let reexport =
            source.syntax.uses.iter().find(|u| {
                u.public && u.scope == scope && u.alias.as_deref() == Some(item.as_str())
            });
        if let Some(reexport) = reexport {
            // Outside the target (`pub use rowdex_store::Direction`): defined elsewhere.
            return resolve(target, file, &reexport.scope, &reexport.path, hops + 1)
                .or(Some(file.clone()));
        }
    }
    Some(file.clone())
}

/// The (scope, path) under which `name` was imported by a `use` in `scope` of `file` or in an
/// enclosing scope.
fn imported(
    target: &Target,
    file: &Path,
    scope: &Scope,
    name: &str,
) -> Option<(Scope, Vec<String>)> {
    let source = target.files.get(file)?;
    let mut scope = scope.clone();
    loop {
        let found = source
            .syntax
            .uses
            .iter()
            .find(|u| u.scope == scope && u.alias.as_deref() == Some(name));
        if let Some(found) = found {
            return Some((found.scope.clone(), found.path.clone()));
        }
        scope.pop()?;
    }
}

/// The import circles: every set of two or more files that reach each other (Tarjan's
/// strongly connected components), each sorted, largest first.
pub fn circles(edges: &Edges) -> Vec<Vec<PathBuf>> {
    let mut graph: BTreeMap<&PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for (from, to) in edges {
        graph.entry(from).or_default().push(to);
        graph.entry(to).or_default();
    }
    let nodes: Vec<&PathBuf> = graph.keys().copied().collect();
    let position: BTreeMap<&PathBuf, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let successors: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| graph[n].iter().map(|s| position[s]).collect())
        .collect();
    let mut components = tarjan(&successors);
    components.retain(|c| c.len() > 1);
    let mut circles: Vec<Vec<PathBuf>> = components
        .into_iter()
        .map(|c| {
            let mut files: Vec<PathBuf> = c.into_iter().map(|i| nodes[i].clone()).collect();
            files.sort();
            files
        })
        .collect();
    circles.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    circles
}

/// Strongly connected components, iteratively (no recursion to overflow on long chains).
fn tarjan(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = successors.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut counter = 0;
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        // (node, next successor to visit)
        let mut work = vec![(start, 0usize)];
        while let Some(&mut (node, ref mut next)) = work.last_mut() {
            if *next == 0 && index[node] == usize::MAX {
                index[node] = counter;
                low[node] = counter;
                counter += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&successor) = successors[node].get(*next) {
                *next += 1;
                if index[successor] == usize::MAX {
                    work.push((successor, 0));
                } else if on_stack[successor] {
                    low[node] = low[node].min(index[successor]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(a: &str, b: &str) -> (PathBuf, PathBuf) {
        (PathBuf::from(a), PathBuf::from(b))
    }

    #[test]
    fn circles_are_the_strongly_connected_files() {
        let edges: Edges = [
            edge("a", "b"),
            edge("b", "c"),
            edge("c", "a"),
            edge("c", "d"),
            edge("d", "e"),
            edge("e", "d"),
            edge("f", "a"),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            circles(&edges),
            vec![
                vec![PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("c")],
                vec![PathBuf::from("d"), PathBuf::from("e")],
            ]
        );
        let acyclic: Edges = [edge("a", "b"), edge("b", "c"), edge("a", "c")]
            .into_iter()
            .collect();
        assert!(circles(&acyclic).is_empty());
    }
}
