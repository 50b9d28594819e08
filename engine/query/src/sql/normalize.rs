//! A statement's text as `pg_stat_statements` shows it: its constants (numbers and strings)
//! replaced by `$n` parameters, numbered after the statement's own, so that the same statement
//! with other values is one entry; and an id for that text.

use std::hash::{DefaultHasher, Hash, Hasher};

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// A statement's normalized text and its id (`queryid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizedStatement {
    pub text: String,
    pub id: i64,
}

/// `sql` with its constants replaced by `$n` (see the module's text), and the text's id. A text
/// the tokenizer cannot read is kept as it is, spaces and semicolons at its end aside.
pub fn normalize_statement(sql: &str) -> NormalizedStatement {
    let text = constants_lifted(sql).unwrap_or_else(|| trimmed(sql).to_string());
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    NormalizedStatement {
        id: hasher.finish() as i64,
        text,
    }
}

fn trimmed(sql: &str) -> &str {
    sql.trim()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
}

fn constants_lifted(sql: &str) -> Option<String> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, trimmed(sql))
        .tokenize()
        .ok()?;
    // Parameters the statement has of its own keep their numbers; constants follow them.
    let mut next = tokens
        .iter()
        .filter_map(|token| match token {
            Token::Placeholder(name) => name.strip_prefix('$')?.parse::<usize>().ok(),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let mut text = String::with_capacity(sql.len());
    for token in &tokens {
        match token {
            Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::EscapedStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::DollarQuotedString(_) => {
                next += 1;
                text.push('$');
                text.push_str(&next.to_string());
            }
            token => text.push_str(&token.to_string()),
        }
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::normalize_statement;

    #[test]
    fn constants_become_parameters_after_the_statements_own() {
        let a = normalize_statement("SELECT * FROM t WHERE a = 1 AND b = 'x';");
        assert_eq!(a.text, "SELECT * FROM t WHERE a = $1 AND b = $2");
        let b = normalize_statement("  SELECT * FROM t WHERE a = 42 AND b = 'yy'  ");
        assert_eq!(a, b);
        let own = normalize_statement("UPDATE t SET c = c + 1 WHERE k = $1 AND d > 2.5");
        assert_eq!(own.text, "UPDATE t SET c = c + $2 WHERE k = $1 AND d > $3");
        assert_ne!(own.id, a.id);
    }
}
