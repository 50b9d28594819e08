//! Splitting SQL text into parsed statements.
//!
//! The whole script is tokenized once and parsed statement by statement, so an error position is
//! a position in the script the user wrote. Phoenix's `UPSERT INTO` is not SQL the parser knows:
//! its keyword is swapped for INSERT at the token level and the statement is flagged instead.
//! rowdex's own commands (`SHOW INDEXES`, `CHECK INDEX`, `REPAIR TABLE`, ...) are recognised by
//! their leading words and parsed here, between the standard statements.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, Statement, Visit, Visitor};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace, Word};

use crate::hints::QueryHints;

use crate::{Error, Result};

/// How deeply expressions may nest.
const PARSER_RECURSION_LIMIT: usize = 1000;

/// The deepest expression tree a statement may hold, as in SQLite (`SQLITE_MAX_EXPR_DEPTH`).
/// The parser's recursion limit does not bound it: `a OR b OR c ...` is parsed in a loop into a
/// tree as deep as the chain is long, and every pass after parsing (cloning, rewriting,
/// planning, dropping) walks trees recursively.
pub const MAX_EXPR_DEPTH: usize = 1000;

/// Statements at least this long are parsed, measured and (when refused) dropped on a thread of
/// their own with a large stack: only a text this long can hold a tree deep enough to need it.
const DEEP_PARSE_MIN_BYTES: usize = 8 * 1024;

/// The stack of that thread. Reserved, not committed: only the pages a deep tree touches are.
const DEEP_PARSE_STACK_BYTES: usize = 256 << 20;

/// One statement ready to run.
#[derive(Debug, Clone)]
pub enum ParsedStatement {
    Sql {
        statement: Box<Statement>,
        /// Written as `UPSERT INTO ...`: insert, or update the named columns of an existing row.
        upsert: bool,
        /// Optimizer hints from `/*+ ... */` comments in the statement.
        hints: QueryHints,
        /// Of a CREATE TABLE: the columns declared `family.column`, with their family.
        families: Vec<FamilyMember>,
    },
    /// A rowdex command the SQL parser does not know.
    Command(Command),
}

/// A column declared in a column family (`info.email TEXT`): (column, family), each
/// normalised like any identifier (lowercased unless quoted).
pub type FamilyMember = (String, String);

/// rowdex's own statements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `SHOW INDEXES [FROM|IN table]` (also `SHOW INDEX`, `SHOW KEYS`).
    ShowIndexes { table: Option<String> },
    /// `CHECK INDEX name` / `REPAIR INDEX name`: compare one index with its table's rows.
    CheckIndex { index: String, repair: bool },
    /// `CHECK TABLE t` / `REPAIR TABLE t`: the same for every index of a table.
    CheckTable { table: String, repair: bool },
    /// `REINDEX [index | table]`: bring indexes back in line with their rows (all when
    /// nothing is named).
    Reindex { target: Option<String> },
    /// `EXPLAIN KEY t`: the byte layout of the table's row key and of its index entry keys.
    ExplainKey { table: String },
    /// `SHOW KEY SPREAD t [PARTITIONS n]`: how the rows spread over n key ranges, and where
    /// sequential writes would land.
    ShowKeySpread { table: String, partitions: usize },
    /// `SHOW WARNINGS`: the warnings of the previous statement.
    ShowWarnings,
    /// `PURGE [TABLE] t`: remove the expired rows of a table with a TTL, and their entries.
    Purge { table: String },
}

impl std::fmt::Display for ParsedStatement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParsedStatement::Sql {
                statement,
                upsert: true,
                ..
            } => {
                let text = statement.to_string();
                let rest = text.strip_prefix("INSERT").unwrap_or(&text);
                write!(f, "UPSERT{rest}")
            }
            ParsedStatement::Sql { statement, .. } => write!(f, "{statement}"),
            ParsedStatement::Command(command) => write!(f, "{command}"),
        }
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = |repair: bool| if repair { "REPAIR" } else { "CHECK" };
        match self {
            Command::ShowIndexes { table: None } => f.write_str("SHOW INDEXES"),
            Command::ShowIndexes { table: Some(t) } => write!(f, "SHOW INDEXES FROM {t}"),
            Command::CheckIndex { index, repair } => write!(f, "{} INDEX {index}", verb(*repair)),
            Command::CheckTable { table, repair } => write!(f, "{} TABLE {table}", verb(*repair)),
            Command::Reindex { target: None } => f.write_str("REINDEX"),
            Command::Reindex { target: Some(t) } => write!(f, "REINDEX {t}"),
            Command::ExplainKey { table } => write!(f, "EXPLAIN KEY {table}"),
            Command::ShowKeySpread { table, partitions } => {
                write!(f, "SHOW KEY SPREAD {table} PARTITIONS {partitions}")
            }
            Command::ShowWarnings => f.write_str("SHOW WARNINGS"),
            Command::Purge { table } => write!(f, "PURGE {table}"),
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

/// `x IN ()` is SQLite's spelling of a test against the empty set, which the generic dialect
/// does not parse. An empty subquery means the same in standard SQL (false for every `x`, NULL
/// included, and `NOT IN ()` true), so the list becomes `(SELECT NULL WHERE FALSE)`.
fn empty_in_lists_as_subqueries(tokens: &mut Vec<TokenWithSpan>) {
    let significant = |tokens: &[TokenWithSpan], from: usize| {
        (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
    };
    let mut i = 0;
    while i < tokens.len() {
        let is_in = matches!(&tokens[i].token, Token::Word(w) if w.keyword == Keyword::IN);
        let open = significant(tokens, i + 1).filter(|&j| tokens[j].token == Token::LParen);
        let close = open
            .and_then(|j| significant(tokens, j + 1))
            .filter(|&k| tokens[k].token == Token::RParen);
        if let (true, Some(open), Some(close)) = (is_in, open, close) {
            let span = tokens[close].span;
            let word = |keyword: Keyword, text: &str| {
                Token::Word(Word {
                    value: text.to_string(),
                    quote_style: None,
                    keyword,
                })
            };
            let space = Token::Whitespace(Whitespace::Space);
            let inserted: Vec<TokenWithSpan> = [
                word(Keyword::SELECT, "SELECT"),
                space.clone(),
                word(Keyword::NULL, "NULL"),
                space.clone(),
                word(Keyword::WHERE, "WHERE"),
                space,
                word(Keyword::FALSE, "FALSE"),
            ]
            .into_iter()
            .map(|token| TokenWithSpan::new(token, span))
            .collect();
            let count = inserted.len();
            tokens.splice(open + 1..close, inserted);
            i = open + count + 2;
        } else {
            i += 1;
        }
    }
}

/// Finds `family.column` at the start of a column definition of CREATE TABLE, which SQL's
/// grammar does not have, and leaves only `column` for the parser: returns, per statement (in
/// order, counted like [`parse_tokens`] counts them), the columns found and their families.
fn family_qualified_columns(tokens: &mut [TokenWithSpan]) -> Vec<Vec<FamilyMember>> {
    let mut found: Vec<Vec<FamilyMember>> = Vec::new();
    let mut at_start = true;
    // Within the current statement: whether it is CREATE TABLE, the parenthesis depth, and
    // whether the next significant token starts a column definition.
    let (mut create, mut table, mut depth, mut at_column) = (false, false, 0usize, false);
    let significant = |tokens: &[TokenWithSpan], from: usize| {
        (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
    };
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i].token;
        if matches!(token, Token::Whitespace(_)) {
            i += 1;
            continue;
        }
        if *token == Token::SemiColon {
            at_start = true;
            i += 1;
            continue;
        }
        if at_start {
            found.push(Vec::new());
            create = matches!(token, Token::Word(w) if w.keyword == Keyword::CREATE);
            (table, depth, at_column, at_start) = (false, 0, false, false);
            i += 1;
            continue;
        }
        match token {
            Token::Word(w) if create && depth == 0 && w.keyword == Keyword::TABLE => table = true,
            Token::LParen => {
                depth += 1;
                at_column = table && depth == 1;
                i += 1;
                continue;
            }
            Token::RParen => {
                depth = depth.saturating_sub(1);
                // The column list is over: table options and the like follow.
                if depth == 0 {
                    (create, table) = (false, false);
                }
            }
            Token::Word(w) if depth == 0 && w.keyword == Keyword::AS => table = false,
            Token::Comma if table && depth == 1 => {
                at_column = true;
                i += 1;
                continue;
            }
            Token::Word(family) if at_column => {
                let period =
                    significant(tokens, i + 1).filter(|&j| tokens[j].token == Token::Period);
                let column = period.and_then(|j| significant(tokens, j + 1));
                if let (Some(period), Some(column)) = (period, column)
                    && let Token::Word(column_word) = &tokens[column].token
                {
                    let name = |word: &Word| {
                        if word.quote_style.is_some() {
                            word.value.clone()
                        } else {
                            word.value.to_lowercase()
                        }
                    };
                    let member = (name(column_word), name(family));
                    if let Some(current) = found.last_mut() {
                        current.push(member);
                    }
                    for blank in [i, period] {
                        tokens[blank].token = Token::Whitespace(Whitespace::Space);
                    }
                    i = column;
                }
            }
            _ => {}
        }
        at_column = false;
        i += 1;
    }
    found
}

/// Parses statements until the first syntax error; returns those before it and the error.
pub fn parse_script(sql: &str) -> (Vec<ParsedStatement>, Option<Error>) {
    match tokenize(sql) {
        Ok(tokens) => parse_bounded(tokens, sql.len()),
        Err(error) => (Vec::new(), Some(error)),
    }
}

/// [`parse_tokens`], then refuses the first statement whose expressions nest deeper than
/// [`MAX_EXPR_DEPTH`] (keeping the ones before it, like a syntax error would).
fn parse_bounded(
    tokens: Vec<TokenWithSpan>,
    text_len: usize,
) -> (Vec<ParsedStatement>, Option<Error>) {
    if text_len < DEEP_PARSE_MIN_BYTES {
        return parse_and_measure(tokens);
    }
    let spawned = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("rowdex-parse".to_string())
            .stack_size(DEEP_PARSE_STACK_BYTES)
            .spawn_scoped(scope, || parse_and_measure(tokens))
            .map(|handle| handle.join())
    });
    match spawned {
        Ok(Ok(parsed)) => parsed,
        // The parser does not panic on any input it is given; a failed spawn is the machine
        // being out of threads or memory.
        Ok(Err(_)) | Err(_) => (
            Vec::new(),
            Some(Error::Parse {
                message: "could not start the parser's thread for a long statement".to_string(),
            }),
        ),
    }
}

fn parse_and_measure(tokens: Vec<TokenWithSpan>) -> (Vec<ParsedStatement>, Option<Error>) {
    let (mut statements, error) = parse_tokens(tokens);
    let too_deep = statements.iter().position(|parsed| match parsed {
        ParsedStatement::Sql { statement, .. } => exceeds_depth(statement, MAX_EXPR_DEPTH),
        ParsedStatement::Command(_) => false,
    });
    match too_deep {
        Some(position) => {
            // Dropped here, on the thread whose stack was sized for them.
            statements.truncate(position);
            (
                statements,
                Some(Error::ExpressionTooDeep {
                    limit: MAX_EXPR_DEPTH,
                }),
            )
        }
        None => (statements, error),
    }
}

/// Whether some expression of `statement` nests deeper than `limit`. The walk stops as soon as
/// it passes the limit, so it recurses no deeper than that itself.
fn exceeds_depth(statement: &Statement, limit: usize) -> bool {
    struct Depth {
        current: usize,
        limit: usize,
    }
    impl Visitor for Depth {
        type Break = ();
        fn pre_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<()> {
            self.current += 1;
            if self.current > self.limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        fn post_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<()> {
            self.current -= 1;
            ControlFlow::Continue(())
        }
    }
    statement.visit(&mut Depth { current: 0, limit }).is_break()
}

fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>> {
    Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| Error::Parse {
            message: e.to_string(),
        })
}

/// Parses one statement with parameters, written `$1`, `$2`, ... or `?` (numbered in order of
/// appearance); returns it with the number of parameters it takes.
pub(crate) fn parse_with_parameters(sql: &str) -> Result<(ParsedStatement, usize)> {
    let mut tokens = tokenize(sql)?;
    let mut anonymous = 0;
    let mut count = 0;
    let mut numbered = false;
    for token in &mut tokens {
        let Token::Placeholder(name) = &mut token.token else {
            continue;
        };
        if name == "?" {
            anonymous += 1;
            *name = format!("${anonymous}");
            count = count.max(anonymous);
        } else if let Some(n) = name.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
            numbered = true;
            count = count.max(n);
        } else {
            return Err(Error::Parse {
                message: format!(
                    "parameter {name} at {}: write $1, $2, ... or ?",
                    token.span.start
                ),
            });
        }
    }
    if numbered && anonymous > 0 {
        return Err(Error::Parse {
            message: "a statement numbers its parameters ($1) or does not (?), not both"
                .to_string(),
        });
    }
    let (mut statements, error) = parse_bounded(tokens, sql.len());
    if let Some(error) = error {
        return Err(error);
    }
    match (statements.pop(), statements.is_empty()) {
        (Some(statement), true) => Ok((statement, count)),
        (None, _) => Err(Error::Parse {
            message: "no statement to prepare".to_string(),
        }),
        (Some(_), false) => Err(Error::Parse {
            message: "a prepared statement holds one statement".to_string(),
        }),
    }
}

fn parse_tokens(mut tokens: Vec<TokenWithSpan>) -> (Vec<ParsedStatement>, Option<Error>) {
    let dialect = GenericDialect {};
    let mut upserts = Vec::new();
    let mut hints: Vec<QueryHints> = Vec::new();
    let mut at_start = true;
    for token in &mut tokens {
        match &token.token {
            Token::Whitespace(Whitespace::MultiLineComment(text)) if text.starts_with('+') => {
                // A hint belongs to the statement it sits in (or, before one, the next).
                let statement = if at_start {
                    upserts.len()
                } else {
                    upserts.len().saturating_sub(1)
                };
                if hints.len() <= statement {
                    hints.resize(statement + 1, QueryHints::default());
                }
                hints[statement].parse_into(&text[1..]);
            }
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
    empty_in_lists_as_subqueries(&mut tokens);
    let families = family_qualified_columns(&mut tokens);
    // Generated SQL (and the SQLite corpus) nests parentheses far deeper than the parser's
    // default limit of 50; the parser grows its stack on demand, so depth is safe.
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(PARSER_RECURSION_LIMIT)
        .with_tokens_with_locations(tokens);
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.peek_token().token == Token::EOF {
            return (statements, None);
        }
        let parsed = match parse_command(&mut parser) {
            Some(command) => command.map(ParsedStatement::Command),
            None => parser
                .parse_statement()
                .map(|statement| ParsedStatement::Sql {
                    statement: Box::new(statement),
                    upsert: upserts.get(statements.len()).copied().unwrap_or(false),
                    hints: hints.get(statements.len()).cloned().unwrap_or_default(),
                    families: families.get(statements.len()).cloned().unwrap_or_default(),
                }),
        };
        let statement = match parsed {
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
        statements.push(statement);
    }
}

/// Key ranges of `SHOW KEY SPREAD` when PARTITIONS is not given.
const DEFAULT_SPREAD_PARTITIONS: usize = 8;

/// Parses a rowdex command if the next tokens start one; None leaves the parser untouched.
fn parse_command(parser: &mut Parser<'_>) -> Option<std::result::Result<Command, ParserError>> {
    let word = |n: usize, parser: &Parser<'_>| match parser.peek_nth_token(n).token {
        Token::Word(w) if w.quote_style.is_none() => w.value.to_uppercase(),
        _ => String::new(),
    };
    let first = word(0, parser);
    let second = word(1, parser);
    let name = |parser: &mut Parser<'_>| {
        parser
            .parse_object_name(false)
            .map(|name| crate::execute::object_name(&name).unwrap_or_else(|_| name.to_string()))
    };
    match (first.as_str(), second.as_str()) {
        ("SHOW", "INDEX" | "INDEXES" | "KEYS") => {
            parser.next_token();
            parser.next_token();
            let table = if parser.parse_keyword(Keyword::FROM) || parser.parse_keyword(Keyword::IN)
            {
                match name(parser) {
                    Ok(table) => Some(table),
                    Err(e) => return Some(Err(e)),
                }
            } else {
                None
            };
            Some(Ok(Command::ShowIndexes { table }))
        }
        ("CHECK" | "REPAIR", "INDEX" | "TABLE") => {
            parser.next_token();
            parser.next_token();
            let repair = first == "REPAIR";
            Some(name(parser).map(|target| {
                if second == "INDEX" {
                    Command::CheckIndex {
                        index: target,
                        repair,
                    }
                } else {
                    Command::CheckTable {
                        table: target,
                        repair,
                    }
                }
            }))
        }
        ("EXPLAIN", "KEY") => {
            parser.next_token();
            parser.next_token();
            Some(name(parser).map(|table| Command::ExplainKey { table }))
        }
        ("SHOW", "KEY") if word(2, parser) == "SPREAD" => {
            parser.next_token();
            parser.next_token();
            parser.next_token();
            let table = match name(parser) {
                Ok(table) => table,
                Err(e) => return Some(Err(e)),
            };
            let partitions = if word(0, parser) == "PARTITIONS" {
                parser.next_token();
                match parser.parse_literal_uint() {
                    Ok(n) if (1..=1000).contains(&n) => n as usize,
                    Ok(n) => {
                        return Some(Err(ParserError::ParserError(format!(
                            "PARTITIONS must be from 1 to 1000, got {n}"
                        ))));
                    }
                    Err(e) => return Some(Err(e)),
                }
            } else {
                DEFAULT_SPREAD_PARTITIONS
            };
            Some(Ok(Command::ShowKeySpread { table, partitions }))
        }
        ("PURGE", _) => {
            parser.next_token();
            if second == "TABLE" {
                parser.next_token();
            }
            Some(name(parser).map(|table| Command::Purge { table }))
        }
        ("SHOW", "WARNINGS") => {
            parser.next_token();
            parser.next_token();
            Some(Ok(Command::ShowWarnings))
        }
        ("REINDEX", _) => {
            parser.next_token();
            let target = match parser.peek_token().token {
                Token::EOF | Token::SemiColon => None,
                _ => match name(parser) {
                    Ok(target) => Some(target),
                    Err(e) => return Some(Err(e)),
                },
            };
            Some(Ok(Command::Reindex { target }))
        }
        _ => None,
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
    fn hints_attach_to_their_statement() -> Result<()> {
        let statements = split_statements(
            "SELECT 1; SELECT /*+ INDEX(t i) */ 2; /* plain */ SELECT 3; /*+ NO_INDEX */ SELECT 4",
        )?;
        let hinted: Vec<bool> = statements
            .iter()
            .map(|s| matches!(s, ParsedStatement::Sql { hints, .. } if !hints.is_empty()))
            .collect();
        assert_eq!(hinted, [false, true, false, true]);
        Ok(())
    }

    #[test]
    fn rowdex_commands_parse_between_sql_statements() -> Result<()> {
        let statements = split_statements(
            "SELECT 1; show indexes from T1; CHECK INDEX i; repair table t; SHOW INDEX; SELECT 2",
        )?;
        let commands: Vec<String> = statements.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            commands,
            [
                "SELECT 1",
                "SHOW INDEXES FROM t1",
                "CHECK INDEX i",
                "REPAIR TABLE t",
                "SHOW INDEXES",
                "SELECT 2"
            ]
        );
        let error = split_statements("CHECK INDEX").err().map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains("identifier")));
        Ok(())
    }

    #[test]
    fn family_qualified_columns_belong_to_their_create_table() -> Result<()> {
        let statements = split_statements(
            "SHOW TABLES; CREATE TABLE t (id INT PRIMARY KEY, f.a INT, \"G\".B INT, c INT) \
             WITH (TTL = 5); SELECT f.a FROM t f",
        )?;
        let families: Vec<Vec<FamilyMember>> = statements
            .iter()
            .map(|s| match s {
                ParsedStatement::Sql { families, .. } => families.clone(),
                ParsedStatement::Command(_) => Vec::new(),
            })
            .collect();
        let member = |c: &str, f: &str| (c.to_string(), f.to_string());
        assert_eq!(
            families,
            [
                Vec::new(),
                vec![member("a", "f"), member("b", "G")],
                Vec::new()
            ]
        );
        // The query keeps its qualified column.
        assert_eq!(statements[2].to_string(), "SELECT f.a FROM t f");
        Ok(())
    }

    #[test]
    fn splits_scripts_and_flags_upserts() -> Result<()> {
        let statements = split_statements(
            "CREATE TABLE t (a INT PRIMARY KEY);; upsert into t values (1);\nSELECT ';' FROM t",
        )?;
        assert_eq!(statements.len(), 3);
        let upserts: Vec<bool> = statements
            .iter()
            .map(|s| matches!(s, ParsedStatement::Sql { upsert: true, .. }))
            .collect();
        assert_eq!(upserts, [false, true, false]);
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
