//! Phoenix's `CREATE TABLE ... SPLIT ON (v1, v2, ...)`, which SQL's grammar does not have: the
//! clause becomes the table option `SPLIT_ON = (v1, v2, ...)`, in the statement's `WITH (...)`
//! or in one of its own (see `execute::ddl::split_points`).

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

use crate::sql::tokens::significant;

/// Rewrites each CREATE TABLE's `SPLIT ON (...)` clause as a `SPLIT_ON` option.
pub(crate) fn split_on_as_option(tokens: &mut Vec<TokenWithSpan>) {
    let mut i = 0;
    let mut statement_start = 0;
    let mut depth = 0usize;
    while i < tokens.len() {
        match &tokens[i].token {
            Token::SemiColon => {
                statement_start = i + 1;
                depth = 0;
            }
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(word)
                if depth == 0
                    && word.quote_style.is_none()
                    && word.value.eq_ignore_ascii_case("split")
                    && creates_table(tokens, statement_start) =>
            {
                if let Some(moved) = move_clause(tokens, i, statement_start) {
                    i = moved;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Whether the statement from `start` is a CREATE TABLE.
fn creates_table(tokens: &[TokenWithSpan], start: usize) -> bool {
    let first = significant(tokens, start);
    let second = first.and_then(|at| significant(tokens, at + 1));
    let is = |at: Option<usize>, keyword: Keyword| {
        at.is_some_and(|at| matches!(&tokens[at].token, Token::Word(w) if w.keyword == keyword))
    };
    is(first, Keyword::CREATE) && is(second, Keyword::TABLE)
}

/// Moves the `SPLIT ON (...)` at `split` into an option; returns where to go on, or None when
/// the words there are not the clause.
fn move_clause(
    tokens: &mut Vec<TokenWithSpan>,
    split: usize,
    statement_start: usize,
) -> Option<usize> {
    let on = significant(tokens, split + 1)?;
    if !matches!(&tokens[on].token, Token::Word(w) if w.keyword == Keyword::ON) {
        return None;
    }
    let open = significant(tokens, on + 1).filter(|&at| tokens[at].token == Token::LParen)?;
    let mut depth = 0usize;
    let mut close = None;
    for (at, token) in tokens.iter().enumerate().skip(open) {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    close = Some(at);
                    break;
                }
            }
            Token::SemiColon => return None,
            _ => {}
        }
    }
    let close = close?;
    let values: Vec<TokenWithSpan> = tokens[open..=close].to_vec();
    for token in &mut tokens[split..=close] {
        token.token = Token::Whitespace(Whitespace::Space);
    }
    let mut option = vec![
        plain(Token::Word(Word {
            value: "SPLIT_ON".to_string(),
            quote_style: None,
            keyword: Keyword::NoKeyword,
        })),
        plain(Token::Eq),
    ];
    option.extend(values);
    // Into the statement's WITH (...) when it has one, else a WITH of its own here.
    let with_list = (statement_start..tokens.len())
        .take_while(|&at| tokens[at].token != Token::SemiColon)
        .find(|&at| {
            matches!(&tokens[at].token, Token::Word(w) if w.keyword == Keyword::WITH)
                && significant(tokens, at + 1).is_some_and(|p| tokens[p].token == Token::LParen)
        })
        .and_then(|with| significant(tokens, with + 1));
    let inserted = match with_list {
        Some(paren) => {
            option.push(plain(Token::Comma));
            let len = option.len();
            tokens.splice(paren + 1..paren + 1, option);
            len
        }
        None => {
            let mut clause = vec![
                plain(Token::Word(Word {
                    value: "WITH".to_string(),
                    quote_style: None,
                    keyword: Keyword::WITH,
                })),
                plain(Token::LParen),
            ];
            clause.extend(option);
            clause.push(plain(Token::RParen));
            let len = clause.len();
            tokens.splice(split..split, clause);
            len
        }
    };
    Some(close + inserted + 1)
}

fn plain(token: Token) -> TokenWithSpan {
    TokenWithSpan::wrap(token)
}
