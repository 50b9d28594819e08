//! Splitting SQL text into parsed statements.
//!
//! The whole script is tokenized once and parsed statement by statement, so an error position is
//! a position in the script the user wrote. Phoenix's `UPSERT INTO` is not SQL the parser knows:
//! its keyword is swapped for INSERT at the token level and the statement is flagged instead.

use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Word};

use crate::{Error, Result};

/// One statement ready to run.
#[derive(Debug, Clone)]
pub struct ParsedStatement {
    pub statement: Statement,
    /// Written as `UPSERT INTO ...`: insert, or update the named columns of an existing row.
    pub upsert: bool,
}

impl std::fmt::Display for ParsedStatement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.upsert {
            let text = self.statement.to_string();
            let rest = text.strip_prefix("INSERT").unwrap_or(&text);
            write!(f, "UPSERT{rest}")
        } else {
            write!(f, "{}", self.statement)
        }
    }
}

/// Parses every statement of `sql`; the first syntax error fails the whole call.
pub fn split_statements(sql: &str) -> Result<Vec<ParsedStatement>> {
    let (statements, error) = parse_script(sql);
    match error {
        Some(error) => Err(error),
        None => Ok(statements),
    }
}

/// Parses statements until the first syntax error; returns those before it and the error.
pub fn parse_script(sql: &str) -> (Vec<ParsedStatement>, Option<Error>) {
    let dialect = GenericDialect {};
    let mut tokens = match Tokenizer::new(&dialect, sql).tokenize_with_location() {
        Ok(tokens) => tokens,
        Err(e) => {
            return (
                Vec::new(),
                Some(Error::Parse {
                    message: e.to_string(),
                }),
            );
        }
    };
    let mut upserts = Vec::new();
    let mut at_start = true;
    for token in &mut tokens {
        match &token.token {
            Token::Whitespace(_) => {}
            Token::SemiColon => at_start = true,
            Token::Word(word) if at_start => {
                let is_upsert =
                    word.quote_style.is_none() && word.value.eq_ignore_ascii_case("UPSERT");
                upserts.push(is_upsert);
                if is_upsert {
                    token.token = Token::Word(Word {
                        value: "INSERT".to_string(),
                        quote_style: None,
                        keyword: Keyword::INSERT,
                    });
                }
                at_start = false;
            }
            _ if at_start => {
                upserts.push(false);
                at_start = false;
            }
            _ => {}
        }
    }
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(tokens);
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.peek_token().token == Token::EOF {
            return (statements, None);
        }
        let statement = match parser.parse_statement() {
            Ok(statement) => statement,
            Err(e) => {
                let message = e.to_string();
                let message = message
                    .strip_prefix("sql parser error: ")
                    .unwrap_or(&message);
                return (
                    statements,
                    Some(Error::Parse {
                        message: message.to_string(),
                    }),
                );
            }
        };
        let next = parser.peek_token();
        if next.token != Token::SemiColon && next.token != Token::EOF {
            return (
                statements,
                Some(Error::Parse {
                    message: format!(
                        "expected end of statement, found {} at {}",
                        next.token, next.span.start
                    ),
                }),
            );
        }
        let upsert = upserts.get(statements.len()).copied().unwrap_or(false);
        statements.push(ParsedStatement { statement, upsert });
    }
}

/// Whether `text` ends with a `;` that closes a statement (not one inside a string, a quoted
/// name or a comment). An unterminated string is not complete.
pub fn statement_ends(text: &str) -> bool {
    let dialect = GenericDialect {};
    match Tokenizer::new(&dialect, text).tokenize() {
        Ok(tokens) => tokens
            .iter()
            .rev()
            .find(|t| !matches!(t, Token::Whitespace(_)))
            .is_some_and(|t| *t == Token::SemiColon),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_scripts_and_flags_upserts() -> Result<()> {
        let statements = split_statements(
            "CREATE TABLE t (a INT PRIMARY KEY);; upsert into t values (1);\nSELECT ';' FROM t",
        )?;
        assert_eq!(statements.len(), 3);
        assert!(!statements[0].upsert && statements[1].upsert && !statements[2].upsert);
        assert_eq!(statements[1].to_string(), "UPSERT INTO t VALUES (1)");
        Ok(())
    }

    #[test]
    fn syntax_errors_name_the_position_and_keep_earlier_statements() {
        let (ok, error) = parse_script("SELECT 1;\nSELEC 2;");
        assert_eq!(ok.len(), 1);
        let message = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("Line: 2"), "{message}");
    }
}
