//! What one source file says about modules: the modules it declares (`mod x;` and inline
//! `mod x { ... }`), its `use` declarations (expanded to one path per imported name), and the
//! other paths it names (`crate::a::f()`, `super::b::T`, `child::g()`).

use crate::lex::{Token, tokenize};

/// A module path relative to the file's own module: the inline modules it sits in.
pub type Scope = Vec<String>;

/// One imported name of a `use` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseItem {
    /// The inline module the declaration sits in.
    pub scope: Scope,
    /// Declared `pub` (of any reach): a re-export others may import through.
    pub public: bool,
    /// The path as written, `self` dropped from the end (`a::{self}` is `a`).
    pub path: Vec<String>,
    /// The name it is known by here; None for a glob (`a::*`).
    pub alias: Option<String>,
}

/// A path named outside `use`, two segments or more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRef {
    pub scope: Scope,
    pub segments: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSyntax {
    /// `mod name;` declarations: (scope, name), each a module in a file of its own.
    pub file_modules: Vec<(Scope, String)>,
    /// `mod name { ... }`: the full scope of each inline module.
    pub inline_modules: Vec<Scope>,
    pub uses: Vec<UseItem>,
    pub paths: Vec<PathRef>,
}

/// Reads the module structure and the paths of `source`.
pub fn read(source: &str) -> FileSyntax {
    let tokens = tokenize(source);
    let mut syntax = FileSyntax::default();
    // One entry per open brace: the inline module it opens, if it opens one.
    let mut braces: Vec<Option<String>> = Vec::new();
    let mut public = false;
    let mut i = 0;
    while i < tokens.len() {
        let scope: Scope = braces.iter().flatten().cloned().collect();
        match &tokens[i] {
            Token::Ident(word) if word == "pub" => {
                public = true;
                i += 1;
                // `pub(crate)`, `pub(super)`, `pub(in path)`.
                if tokens.get(i) == Some(&Token::Punct('(')) {
                    while i < tokens.len() && tokens[i] != Token::Punct(')') {
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            Token::Ident(word) if word == "mod" => {
                if let Some(Token::Ident(name)) = tokens.get(i + 1) {
                    match tokens.get(i + 2) {
                        Some(Token::Punct(';')) => {
                            syntax.file_modules.push((scope, name.clone()));
                            i += 3;
                        }
                        Some(Token::Punct('{')) => {
                            let mut inline = scope;
                            inline.push(name.clone());
                            syntax.inline_modules.push(inline);
                            braces.push(Some(name.clone()));
                            i += 3;
                        }
                        _ => i += 2,
                    }
                } else {
                    i += 1;
                }
            }
            Token::Ident(word) if word == "use" => {
                let mut leaves = Vec::new();
                i = use_tree(&tokens, i + 1, Vec::new(), &mut leaves);
                for (path, alias) in leaves {
                    syntax.uses.push(UseItem {
                        scope: scope.clone(),
                        public,
                        path,
                        alias,
                    });
                }
            }
            Token::Ident(first) => {
                let mut segments = vec![first.clone()];
                i += 1;
                while tokens.get(i) == Some(&Token::PathSep) {
                    match tokens.get(i + 1) {
                        Some(Token::Ident(next)) => {
                            segments.push(next.clone());
                            i += 2;
                        }
                        _ => break,
                    }
                }
                if segments.len() > 1 {
                    syntax.paths.push(PathRef { scope, segments });
                }
            }
            Token::Punct('{') => {
                braces.push(None);
                i += 1;
            }
            Token::Punct('}') => {
                braces.pop();
                i += 1;
            }
            _ => i += 1,
        }
        public = false;
    }
    syntax
}

/// Reads a use tree from `i` under `prefix`, adding each (path, alias) to `out`; returns the
/// position after it (after the `;` at the top level).
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    loop {
        match tokens.get(i) {
            Some(Token::PathSep) => i += 1,
            Some(Token::Ident(name)) => {
                prefix.push(name.clone());
                i += 1;
                if tokens.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                let alias = match (tokens.get(i), tokens.get(i + 1)) {
                    (Some(Token::Ident(as_word)), Some(Token::Ident(alias))) if as_word == "as" => {
                        i += 2;
                        alias.clone()
                    }
                    _ => name.clone(),
                };
                if prefix.last().is_some_and(|last| last == "self") {
                    prefix.pop();
                }
                let alias = if alias == "self" {
                    prefix.last().cloned().unwrap_or(alias)
                } else {
                    alias
                };
                out.push((prefix, Some(alias)));
                return past_semicolon(tokens, i);
            }
            Some(Token::Punct('*')) => {
                out.push((prefix, None));
                return past_semicolon(tokens, i + 1);
            }
            Some(Token::Punct('{')) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Punct('}')) => return past_semicolon(tokens, i + 1),
                        Some(Token::Punct(',')) => i += 1,
                        Some(_) => i = use_tree(tokens, i, prefix.clone(), out),
                        None => return i,
                    }
                }
            }
            _ => return past_semicolon(tokens, i),
        }
    }
}

/// Inside a group (`{a, b}`) the tree ends at `,` or `}`, which the caller reads; at the top
/// level, at `;`, which is consumed.
fn past_semicolon(tokens: &[Token], i: usize) -> usize {
    match tokens.get(i) {
        Some(Token::Punct(';')) => i + 1,
        _ => i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Vec<String> {
        text.split("::").map(str::to_string).collect()
    }

    #[test]
    fn use_trees_expand_to_one_path_per_name() {
        let syntax = read(
            "use crate::{Error, a::{self, B as C}, d::*};\n\
             pub(crate) use compile::NativeQuery;\n\
             use std::sync::Arc;",
        );
        let uses: Vec<(Vec<String>, Option<&str>, bool)> = syntax
            .uses
            .iter()
            .map(|u| (u.path.clone(), u.alias.as_deref(), u.public))
            .collect();
        assert_eq!(
            uses,
            vec![
                (path("crate::Error"), Some("Error"), false),
                (path("crate::a"), Some("a"), false),
                (path("crate::a::B"), Some("C"), false),
                (path("crate::d"), None, false),
                (path("compile::NativeQuery"), Some("NativeQuery"), true),
                (path("std::sync::Arc"), Some("Arc"), false),
            ]
        );
    }

    #[test]
    fn modules_and_paths_know_their_scope() {
        let syntax = read(
            "mod a;\npub(crate) mod b;\nfn f() { crate::x::g(); }\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { super::h::i(); }\n}\n",
        );
        assert_eq!(
            syntax.file_modules,
            vec![(vec![], "a".to_string()), (vec![], "b".to_string())]
        );
        assert_eq!(syntax.inline_modules, vec![vec!["tests".to_string()]]);
        assert_eq!(syntax.uses[0].scope, vec!["tests".to_string()]);
        assert_eq!(syntax.uses[0].alias, None);
        let paths: Vec<(Scope, Vec<String>)> = syntax
            .paths
            .iter()
            .map(|p| (p.scope.clone(), p.segments.clone()))
            .collect();
        assert_eq!(
            paths,
            vec![
                (vec![], path("crate::x::g")),
                (vec!["tests".to_string()], path("super::h::i")),
            ]
        );
    }
}
