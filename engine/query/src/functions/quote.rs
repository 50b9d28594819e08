//! Names and values as SQL text, quoted as PostgreSQL's `quote_ident` and `quote_literal`
//! quote them: for `format()`'s `%I` and `%L`, and for the server's catalog functions
//! (`pg_get_indexdef`, `quote_literal`).

/// An identifier as PostgreSQL writes it: quoted unless it is lower-case letters, digits and
/// underscores not starting with a digit.
pub fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// `text` as a literal: in single quotes, each quote doubled, and as an `E'...'` string with
/// each backslash doubled when it holds one.
pub fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if text.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_as_postgresql_quotes_them() {
        assert_eq!(quote_ident("orders"), "orders");
        assert_eq!(quote_ident("Mixed"), "\"Mixed\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_ident("1st"), "\"1st\"");
        assert_eq!(quote_literal("4"), "'4'");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal("a\\b"), "E'a\\\\b'");
    }
}
