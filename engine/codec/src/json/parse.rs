//! Reading JSON text: the parser, and the tree of [`Spanned`] values it gives, each with the
//! text it was written as.

use std::borrow::Cow;

use super::error::{JsonError, MAX_JSON_DEPTH};

/// One JSON value of a parsed text, with the text it was written as (blanks around it
/// excluded).
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<'a> {
    pub text: &'a str,
    pub node: JsonNode<'a>,
}

/// A JSON value as written: numbers keep their text, object members their order and any
/// duplicate keys.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonNode<'a> {
    Null,
    Bool(bool),
    Number(&'a str),
    String(Cow<'a, str>),
    Array(Vec<Spanned<'a>>),
    Object(Vec<(Cow<'a, str>, Spanned<'a>)>),
}

impl<'a> Spanned<'a> {
    /// The value of member `key` of an object (the last, where the key repeats, as
    /// PostgreSQL's `json ->` gives it); None for a missing key or a value that is no object.
    pub fn field(&self, key: &str) -> Option<&Spanned<'a>> {
        match &self.node {
            JsonNode::Object(members) => members
                .iter()
                .rev()
                .find(|(name, _)| name == key)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    /// Element `index` of an array, counted from the end when negative.
    pub fn element(&self, index: i64) -> Option<&Spanned<'a>> {
        match &self.node {
            JsonNode::Array(items) => items.get(resolve_index(index, items.len())?),
            _ => None,
        }
    }

    /// The value as `->>` gives it: a string unescaped, null as None, anything else as the
    /// text it was written as.
    pub fn as_text(&self) -> Option<Cow<'a, str>> {
        match &self.node {
            JsonNode::Null => None,
            JsonNode::String(s) => Some(s.clone()),
            _ => Some(Cow::Borrowed(self.text)),
        }
    }
}

/// A position of `len` elements for `index`, counted from the end when negative.
pub fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let at = if index < 0 { len + index } else { index };
    usize::try_from(at).ok().filter(|_| (0..len).contains(&at))
}

/// Reads `text` as one JSON value (blanks around it allowed).
pub fn parse_json(text: &str) -> Result<Spanned<'_>, JsonError> {
    let mut parser = Parser { text, at: 0 };
    parser.blanks();
    let value = parser.value(0)?;
    parser.blanks();
    if parser.at < text.len() {
        return Err(parser.unexpected());
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The token at the current position, for an error's detail.
    fn token(&self) -> &'a str {
        let rest = &self.text[self.at..];
        let end = rest
            .char_indices()
            .find(|(i, c)| *i > 0 && !c.is_alphanumeric())
            .map_or(rest.len(), |(i, _)| i);
        &rest[..end]
    }

    fn unexpected(&self) -> JsonError {
        if self.at >= self.text.len() {
            return JsonError::Syntax {
                detail: "The input string ended unexpectedly.".to_string(),
            };
        }
        JsonError::Syntax {
            detail: format!("Token \"{}\" is invalid.", self.token()),
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), JsonError> {
        self.blanks();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else if self.at >= self.text.len() {
            Err(self.unexpected())
        } else {
            Err(JsonError::Syntax {
                detail: format!(
                    "Expected \"{}\", but found \"{}\".",
                    char::from(byte),
                    self.token()
                ),
            })
        }
    }

    fn value(&mut self, depth: usize) -> Result<Spanned<'a>, JsonError> {
        self.blanks();
        let start = self.at;
        let node = match self.peek() {
            Some(b'{') => self.object(depth + 1)?,
            Some(b'[') => self.array(depth + 1)?,
            Some(b'"') => JsonNode::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => JsonNode::Number(self.number()?),
            Some(_) => self.word()?,
            None => return Err(self.unexpected()),
        };
        Ok(Spanned {
            text: &self.text[start..self.at],
            node,
        })
    }

    fn word(&mut self) -> Result<JsonNode<'a>, JsonError> {
        let node = match self.token() {
            "true" => JsonNode::Bool(true),
            "false" => JsonNode::Bool(false),
            "null" => JsonNode::Null,
            _ => return Err(self.unexpected()),
        };
        self.at += self.token().len();
        Ok(node)
    }

    fn array(&mut self, depth: usize) -> Result<JsonNode<'a>, JsonError> {
        if depth > MAX_JSON_DEPTH {
            return Err(JsonError::TooDeep);
        }
        self.at += 1;
        let mut items = Vec::new();
        self.blanks();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(JsonNode::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.blanks();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(JsonNode::Array(items));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<JsonNode<'a>, JsonError> {
        if depth > MAX_JSON_DEPTH {
            return Err(JsonError::TooDeep);
        }
        self.at += 1;
        let mut members = Vec::new();
        self.blanks();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(JsonNode::Object(members));
        }
        loop {
            self.blanks();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected());
            }
            let key = self.string()?;
            self.expect(b':')?;
            members.push((key, self.value(depth)?));
            self.blanks();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(JsonNode::Object(members));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    /// A number's text, checked against JSON's grammar.
    fn number(&mut self) -> Result<&'a str, JsonError> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at - from
        };
        let mut at = start;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        let whole = at;
        let integer_digits = digits(&mut at);
        let mut valid = integer_digits > 0 && !(integer_digits > 1 && bytes[whole] == b'0');
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            valid &= digits(&mut at) > 0;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            valid &= digits(&mut at) > 0;
        }
        // A number runs into a letter or digit only in invalid text ("1x", "01").
        valid &= !bytes.get(at).is_some_and(|b| b.is_ascii_alphanumeric());
        if !valid {
            return Err(self.unexpected());
        }
        self.at = at;
        Ok(&self.text[start..at])
    }

    /// A string's value, its escapes resolved; borrowed when it has none.
    fn string(&mut self) -> Result<Cow<'a, str>, JsonError> {
        self.at += 1;
        let start = self.at;
        let mut owned: Option<String> = None;
        loop {
            let rest = &self.text[self.at..];
            let Some(offset) = rest.find(['"', '\\']) else {
                self.at = self.text.len();
                return Err(self.unexpected());
            };
            let run = &rest[..offset];
            if let Some(bad) = run.chars().find(|c| u32::from(*c) < 0x20) {
                return Err(JsonError::Syntax {
                    detail: format!(
                        "Character with value 0x{:02x} must be escaped.",
                        u32::from(bad)
                    ),
                });
            }
            if let Some(out) = owned.as_mut() {
                out.push_str(run);
            }
            self.at += offset;
            if self.peek() == Some(b'"') {
                let end = self.at;
                self.at += 1;
                return Ok(match owned {
                    Some(out) => Cow::Owned(out),
                    None => Cow::Borrowed(&self.text[start..end]),
                });
            }
            let out = owned.get_or_insert_with(|| self.text[start..self.at].to_string());
            self.at += 1;
            let escaped = self.peek();
            self.at += 1;
            match escaped {
                Some(b'"') => out.push('"'),
                Some(b'\\') => out.push('\\'),
                Some(b'/') => out.push('/'),
                Some(b'b') => out.push('\u{8}'),
                Some(b'f') => out.push('\u{c}'),
                Some(b'n') => out.push('\n'),
                Some(b'r') => out.push('\r'),
                Some(b't') => out.push('\t'),
                Some(b'u') => {
                    let c = self.unicode_escape()?;
                    out.push(c);
                }
                _ => {
                    self.at -= 1;
                    return Err(JsonError::Syntax {
                        detail: format!(
                            "Escape sequence \"\\{}\" is invalid.",
                            self.text[self.at..].chars().next().unwrap_or(' ')
                        ),
                    });
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(digits) = digits else {
            return Err(JsonError::Syntax {
                detail: "\"\\u\" must be followed by four hexadecimal digits.".to_string(),
            });
        };
        self.at += 4;
        u32::from_str_radix(digits, 16).map_err(|_| JsonError::Syntax {
            detail: "\"\\u\" must be followed by four hexadecimal digits.".to_string(),
        })
    }

    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let first = self.hex4()?;
        let lone = || JsonError::Syntax {
            detail: "Unicode low surrogate must follow a high surrogate.".to_string(),
        };
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.text[self.at..].starts_with("\\u") {
                    return Err(JsonError::Syntax {
                        detail: "Unicode high surrogate must not follow a high surrogate."
                            .to_string(),
                    });
                }
                self.at += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(lone());
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(lone()),
            code => code,
        };
        char::from_u32(code).ok_or_else(lone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::string::write_json_string;

    #[test]
    fn values_keep_the_text_they_were_written_as() {
        let doc = parse_json(r#" {"a": [1,  2.50], "b": "x\"y", "a": null} "#).expect("parses");
        assert_eq!(doc.text, r#"{"a": [1,  2.50], "b": "x\"y", "a": null}"#);
        assert_eq!(doc.field("a").map(|v| v.text), Some("null"));
        assert_eq!(
            doc.field("b").and_then(|v| v.as_text()).as_deref(),
            Some("x\"y")
        );
        let first = match &doc.node {
            JsonNode::Object(members) => &members[0].1,
            _ => panic!("an object"),
        };
        assert_eq!(first.text, "[1,  2.50]");
        assert_eq!(first.element(-1).map(|v| v.text), Some("2.50"));
        assert_eq!(first.element(2), None);
    }

    #[test]
    fn what_is_not_json_is_refused_with_a_detail() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "01",
            "1.",
            "-",
            "tru",
            "nul",
            "\"a",
            "[1 2]",
            "{\"a\":1,}",
            "'x'",
            "1 2",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\t\"",
            "\"\\udc00\"",
        ] {
            assert!(
                matches!(parse_json(bad), Err(JsonError::Syntax { .. })),
                "{bad:?} should be refused"
            );
        }
        let deep = "[".repeat(MAX_JSON_DEPTH + 1) + &"]".repeat(MAX_JSON_DEPTH + 1);
        assert_eq!(parse_json(&deep), Err(JsonError::TooDeep));
        let fine = "[".repeat(MAX_JSON_DEPTH) + &"]".repeat(MAX_JSON_DEPTH);
        assert!(parse_json(&fine).is_ok());
    }

    #[test]
    fn escapes_are_resolved_and_written_back() {
        let s = parse_json(r#""\u00e9\ud83d\ude00\n\/""#).expect("parses");
        assert_eq!(s.as_text().as_deref(), Some("é😀\n/"));
        let mut out = String::new();
        write_json_string(&mut out, "a\"b\\c\u{1}\t");
        assert_eq!(out, r#""a\"b\\c\u0001\t""#);
    }
}
