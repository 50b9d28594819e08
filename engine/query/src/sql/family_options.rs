//! `family.OPTION = value` in a table's options (`CREATE TABLE ... WITH (o.COMPRESSION =
//! 'NONE')`, `ALTER TABLE ... SET (o.BLOCKSIZE = 16384)`), Phoenix's way of giving one column
//! family an attribute, which SQL's grammar does not have: the qualified name becomes one
//! quoted identifier, `"o.COMPRESSION"`, that the table options read back apart.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

use crate::sql::tokens::significant;

/// The separator of a family-qualified option name as the options read it.
pub(crate) const FAMILY_OPTION_SEPARATOR: char = '.';

/// Joins `family . OPTION` into one quoted word inside the parentheses that follow `WITH` or
/// `SET` (at any depth outside them, so a CHECK's `o.amount = 1` is left alone).
pub(crate) fn family_qualified_options(tokens: &mut [TokenWithSpan]) {
    // The depth of the option list's parentheses, when inside one.
    let mut options_depth: Option<usize> = None;
    let mut depth = 0usize;
    let mut after_with_or_set = false;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i].token {
            Token::Whitespace(_) => {
                i += 1;
                continue;
            }
            Token::SemiColon => (options_depth, depth) = (None, 0),
            Token::Word(w) if matches!(w.keyword, Keyword::WITH | Keyword::SET) => {
                after_with_or_set = true;
                i += 1;
                continue;
            }
            Token::LParen => {
                depth += 1;
                if after_with_or_set && options_depth.is_none() {
                    options_depth = Some(depth);
                }
            }
            Token::RParen => {
                if options_depth == Some(depth) {
                    options_depth = None;
                }
                depth = depth.saturating_sub(1);
            }
            Token::Word(family) if options_depth == Some(depth) => {
                let previous = (0..i)
                    .rev()
                    .find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)));
                let starts_option = previous
                    .is_some_and(|j| matches!(tokens[j].token, Token::LParen | Token::Comma));
                let period =
                    significant(tokens, i + 1).filter(|&j| tokens[j].token == Token::Period);
                let option = period.and_then(|j| significant(tokens, j + 1));
                let equals = option.and_then(|j| significant(tokens, j + 1));
                if starts_option
                    && let (Some(period), Some(option), Some(equals)) = (period, option, equals)
                    && tokens[equals].token == Token::Eq
                    && let Token::Word(option_word) = &tokens[option].token
                {
                    let family_name = if family.quote_style.is_some() {
                        family.value.clone()
                    } else {
                        family.value.to_lowercase()
                    };
                    let joined = format!(
                        "{family_name}{FAMILY_OPTION_SEPARATOR}{}",
                        option_word.value
                    );
                    tokens[i].token = Token::Word(Word {
                        value: joined,
                        quote_style: Some('"'),
                        keyword: Keyword::NoKeyword,
                    });
                    for blank in [period, option] {
                        tokens[blank].token = Token::Whitespace(Whitespace::Space);
                    }
                    i = equals;
                    continue;
                }
            }
            _ => {}
        }
        after_with_or_set = false;
        i += 1;
    }
}
