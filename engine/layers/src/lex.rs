//! A tokenizer for Rust source, just good enough to read module paths: comments, strings,
//! character literals and numbers are skipped; identifiers, `::` and the punctuation of `use`
//! trees and blocks are kept.

/// One token of interest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    /// `::`
    PathSep,
    /// Any other punctuation character (`{`, `}`, `;`, `,`, `*`, `#`, `(`, ...).
    Punct(char),
}

/// The tokens of `source`, with comments, literals and whitespace left out.
pub fn tokenize(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_block_comment(&chars, i);
        } else if c == '"' {
            i = skip_string(&chars, i + 1);
        } else if (c == 'r' || c == 'b') && starts_raw_or_byte_literal(&chars, i) {
            i = skip_raw_or_byte_literal(&chars, i);
        } else if c == '\'' {
            i = skip_char_or_lifetime(&chars, i);
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            // `r#name` is the identifier `name`.
            if c == 'r' && next == Some('#') && chars.get(i + 2).is_some_and(|c| is_ident_start(*c))
            {
                i += 2;
            }
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c == ':' && next == Some(':') {
            tokens.push(Token::PathSep);
            i += 2;
        } else {
            tokens.push(Token::Punct(c));
            i += 1;
        }
    }
    tokens
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

/// Past a `/* ... */` comment starting at `start` (they nest).
fn skip_block_comment(chars: &[char], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// Past the closing quote of a string whose body starts at `i`.
fn skip_string(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `r"`, `r#"`, `b"`, `b'`, `br"`, `br#"` at `i` (but not `r#ident`).
fn starts_raw_or_byte_literal(chars: &[char], i: usize) -> bool {
    let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
    if rest.starts_with("b\"") || rest.starts_with("b'") || rest.starts_with("r\"") {
        return true;
    }
    let after_prefix = if rest.starts_with("br") { i + 2 } else { i + 1 };
    if !(rest.starts_with("br") || rest.starts_with('r')) {
        return false;
    }
    // Hashes then a quote: a raw string.
    let mut j = after_prefix;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    (j > after_prefix && chars.get(j) == Some(&'"')) || rest.starts_with("br\"")
}

fn skip_raw_or_byte_literal(chars: &[char], i: usize) -> usize {
    let mut j = i;
    if chars[j] == 'b' {
        j += 1;
        match chars.get(j) {
            Some('"') => return skip_string(chars, j + 1),
            Some('\'') => return skip_char_or_lifetime(chars, j),
            _ => {}
        }
    }
    // A raw string: `r`, then n hashes, a quote, the body, a quote and n hashes.
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return j + 1 + hashes;
        }
        j += 1;
    }
    j
}

/// Past a character literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime's quote (`'a`).
fn skip_char_or_lifetime(chars: &[char], i: usize) -> usize {
    match chars.get(i + 1) {
        Some('\\') => {
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            j + 1
        }
        Some(_) if chars.get(i + 2) == Some(&'\'') => i + 3,
        // A lifetime or a label: the name that follows is read as an identifier.
        _ => i + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(source: &str) -> Vec<String> {
        tokenize(source)
            .into_iter()
            .filter_map(|t| match t {
                Token::Ident(name) => Some(name),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_strings_and_chars_hide_their_words() {
        let source = r####"
            // use crate::hidden_a;
            /* use crate::hidden_b; /* hidden_nested */ hidden_still */
            let s = "use crate::hidden_c; \" hidden_quoted";
            let r = r#"use crate::hidden_d; "hidden_raw" "#;
            let b = br"crate::hidden_e";
            let c = '"'; let d = '\''; let e = b'x';
            fn f<'a>(x: &'a str) -> &'a str { x }
            use crate::real;
        "####;
        let words = idents(source);
        assert!(words.iter().all(|w| !w.starts_with("hidden")), "{words:?}");
        assert!(words.ends_with(&["use".to_string(), "crate".to_string(), "real".to_string()]));
    }

    #[test]
    fn path_separators_and_raw_identifiers() {
        assert_eq!(
            tokenize("r#type::x"),
            vec![
                Token::Ident("type".into()),
                Token::PathSep,
                Token::Ident("x".into())
            ]
        );
    }
}
