//! Splitting SQL text into parsed statements.
//!
//! The whole script is tokenized once and parsed statement by statement, so an error position is
//! a position in the script the user wrote. The token passes of `tokens` run first (Phoenix's
//! `UPSERT INTO` is flagged and its keyword swapped for INSERT, hints are read, ...), and
//! rowdex's own commands (`command`) are recognised by their leading words between the standard
//! statements. Expressions deeper than [`MAX_EXPR_DEPTH`] are refused right after parsing.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, Query, Statement, Visit, Visitor};
use datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect, PostgreSqlDialect};
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{Error, Result};
use crate::sql::command::{Command, parse_command};
use crate::sql::family_options::family_qualified_options;
use crate::sql::hints::QueryHints;
use crate::sql::locking::{check_locking_placement, locking_clause_forms};
use crate::sql::split_on::split_on_as_option;
use crate::sql::tokens::{
    FamilyMember, StatementBoundary, copy_option_booleans, empty_in_lists_as_subqueries,
    family_qualified_columns, insert_aliases_as_table_names, needs_postgres_dialect,
    number_placeholders, question_operators, split_at_statement_ends, upserts_and_hints,
};

/// How deeply expressions may nest.
const PARSER_RECURSION_LIMIT: usize = 1000;

/// The deepest expression tree a statement may hold, as in SQLite (`SQLITE_MAX_EXPR_DEPTH`).
/// The parser's recursion limit does not bound it: `a OR b OR c ...` is parsed in a loop into a
/// tree as deep as the chain is long, and every pass after parsing (cloning, rewriting,
/// planning, dropping) walks trees recursively.
pub const MAX_EXPR_DEPTH: usize = 1000;

/// How deep queries may nest (a subquery in FROM, in an expression, in a CTE, each a level).
/// DataFusion plans a query level in frames of its own that it does not guard as it guards
/// expressions, some 50 KiB of stack each unoptimised: this many fit in the stack a statement
/// is given (`stack_depth::DATAFUSION_STACK_BYTES`).
pub const MAX_QUERY_DEPTH: usize = 100;

/// Statements of at least this many tokens are parsed, measured and (when refused) dropped on a
/// thread of their own with a large stack: a level of nesting takes at least two tokens (`(`
/// and `)`, or an operand and an operator), so only a statement this long can hold a tree deep
/// enough to need it.
const DEEP_PARSE_MIN_TOKENS: usize = 8 * 1024;

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
    match tokenize(sql) {
        Ok(tokens) => parse_bounded(tokens),
        Err(error) => (Vec::new(), Some(error)),
    }
}

/// One statement of a script, tokenized but not parsed, its tokens keeping their positions in
/// the script (so that a syntax error points into the script). [`Session::run_script_statement`]
/// (crate::Session::run_script_statement) runs it.
#[derive(Debug, Clone)]
pub struct ScriptStatement {
    tokens: Vec<TokenWithSpan>,
}

impl ScriptStatement {
    pub(crate) fn tokens(&self) -> &[TokenWithSpan] {
        &self.tokens
    }

    /// Parses the statement.
    pub fn parse(&self) -> Result<ParsedStatement> {
        let (mut statements, error) = parse_bounded(self.tokens.clone());
        if let Some(error) = error {
            return Err(error);
        }
        match (statements.pop(), statements.is_empty()) {
            (Some(statement), true) => Ok(statement),
            _ => Err(Error::Parse {
                message: "expected one statement".to_string(),
            }),
        }
    }

    /// The statement's first `n` words, upper-cased (a quoted name or any other token is an
    /// empty word): what kind of statement it is, without parsing it.
    pub fn leading_words(&self, n: usize) -> Vec<String> {
        self.tokens
            .iter()
            .filter_map(|t| match &t.token {
                Token::Whitespace(_) => None,
                Token::Word(word) if word.quote_style.is_none() => Some(word.value.to_uppercase()),
                _ => Some(String::new()),
            })
            .take(n)
            .collect()
    }

    /// The statement's text, written back from its tokens (without its semicolon).
    pub fn text(&self) -> String {
        self.tokens
            .iter()
            .filter(|t| !matches!(t.token, Token::EOF | Token::SemiColon))
            .map(|t| t.token.to_string())
            .collect()
    }

    /// Whether this is `SHOW WARNINGS` (after which a shell need not repeat the warnings).
    pub fn is_show_warnings(&self) -> bool {
        self.leading_words(3) == ["SHOW", "WARNINGS"]
    }
}

/// Splits a script at its semicolons into statements, tokenizing it once and parsing nothing:
/// a shell runs each as it comes (through the compiled-query cache when it can). Text that is
/// only whitespace and comments is no statement. Fails only when the script cannot be
/// tokenized (an unterminated string or comment).
pub fn script_statements(sql: &str) -> Result<Vec<ScriptStatement>> {
    let mut statements = Vec::new();
    for tokens in split_at_statement_ends(tokenize(sql)?) {
        push_statement(&mut statements, tokens);
    }
    Ok(statements)
}

fn push_statement(statements: &mut Vec<ScriptStatement>, tokens: Vec<TokenWithSpan>) {
    if tokens
        .iter()
        .any(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
    {
        statements.push(ScriptStatement { tokens });
    }
}

/// [`parse_tokens`], then refuses the first statement whose expressions nest deeper than
/// [`MAX_EXPR_DEPTH`] (keeping the ones before it, like a syntax error would).
fn parse_bounded(tokens: Vec<TokenWithSpan>) -> (Vec<ParsedStatement>, Option<Error>) {
    if tokens.len() < DEEP_PARSE_MIN_TOKENS {
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
    let too_deep = statements
        .iter()
        .enumerate()
        .find_map(|(position, parsed)| match parsed {
            ParsedStatement::Sql { statement, .. } => {
                nesting_error(statement).map(|error| (position, error))
            }
            ParsedStatement::Command(_) => None,
        });
    match too_deep {
        Some((position, too_deep)) => {
            // Dropped here, on the thread whose stack was sized for them.
            statements.truncate(position);
            (statements, Some(too_deep))
        }
        None => (statements, error),
    }
}

/// The error for a statement some expression of which nests deeper than [`MAX_EXPR_DEPTH`],
/// or some query deeper than [`MAX_QUERY_DEPTH`]. The walk stops as soon as it passes a limit,
/// so it recurses no deeper than that itself.
fn nesting_error(statement: &Statement) -> Option<Error> {
    #[derive(Default)]
    struct Depth {
        expressions: usize,
        queries: usize,
    }
    impl Visitor for Depth {
        type Break = Error;
        fn pre_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<Error> {
            self.expressions += 1;
            if self.expressions > MAX_EXPR_DEPTH {
                return ControlFlow::Break(Error::ExpressionTooDeep {
                    limit: MAX_EXPR_DEPTH,
                });
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<Error> {
            self.expressions -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<Error> {
            self.queries += 1;
            if self.queries > MAX_QUERY_DEPTH {
                return ControlFlow::Break(Error::QueriesTooDeep {
                    limit: MAX_QUERY_DEPTH,
                });
            }
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<Error> {
            self.queries -= 1;
            ControlFlow::Continue(())
        }
    }
    match statement.visit(&mut Depth::default()) {
        ControlFlow::Break(error) => Some(error),
        ControlFlow::Continue(()) => None,
    }
}

fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>> {
    let mut tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| Error::Parse {
            message: e.to_string(),
        })?;
    question_operators(&mut tokens);
    Ok(tokens)
}

/// Parses one statement with parameters, written `$1`, `$2`, ... or `?` (numbered in order of
/// appearance); returns it with the number of parameters it takes.
pub(crate) fn parse_with_parameters(sql: &str) -> Result<(ParsedStatement, usize)> {
    let mut tokens = tokenize(sql)?;
    let count = number_placeholders(&mut tokens)?;
    let (mut statements, error) = parse_bounded(tokens);
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

/// Parses a script's statements, each apart (so that the passes over tokens below count a
/// trigger's body as part of its CREATE TRIGGER).
fn parse_tokens(tokens: Vec<TokenWithSpan>) -> (Vec<ParsedStatement>, Option<Error>) {
    let mut statements = Vec::new();
    for tokens in split_at_statement_ends(tokens) {
        let (parsed, error) = parse_statement_tokens(tokens);
        statements.extend(parsed);
        if error.is_some() {
            return (statements, error);
        }
    }
    (statements, None)
}

/// Parses one statement's tokens (none, when they are only whitespace and comments).
fn parse_statement_tokens(mut tokens: Vec<TokenWithSpan>) -> (Vec<ParsedStatement>, Option<Error>) {
    // PostgreSQL's dialect parses `CREATE TABLE t (LIKE other)`, ALTER TABLE's USING and the
    // JSON operators' precedence; the generic one all else.
    let dialect: &dyn Dialect = if needs_postgres_dialect(&tokens) {
        &PostgreSqlDialect {}
    } else {
        &GenericDialect {}
    };
    let (upserts, hints) = upserts_and_hints(&mut tokens);
    empty_in_lists_as_subqueries(&mut tokens);
    insert_aliases_as_table_names(&mut tokens);
    copy_option_booleans(&mut tokens);
    let locking = locking_clause_forms(&mut tokens);
    split_on_as_option(&mut tokens);
    family_qualified_options(&mut tokens);
    let families = family_qualified_columns(&mut tokens);
    // Generated SQL (and the SQLite corpus) nests parentheses far deeper than the parser's
    // default limit of 50; the parser grows its stack on demand, so depth is safe.
    let mut parser = Parser::new(dialect)
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
                .map(|statement| {
                    let mut hints: QueryHints =
                        hints.get(statements.len()).cloned().unwrap_or_default();
                    hints.resolve_aliases(&statement);
                    (statement, hints)
                })
                .map(|(statement, hints)| ParsedStatement::Sql {
                    statement: Box::new(statement),
                    upsert: upserts.get(statements.len()).copied().unwrap_or(false),
                    hints,
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
        if locking
            && let ParsedStatement::Sql { statement: sql, .. } = &statement
            && let Err(error) = check_locking_placement(sql)
        {
            return (statements, Some(error));
        }
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

/// Whether `text` ends with a `;` that closes a statement (not one inside a string, a quoted
/// name or a comment). An unterminated string is not complete.
pub fn statement_ends(text: &str) -> bool {
    let dialect = GenericDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, text).tokenize() else {
        return false;
    };
    // Whether the last significant token is a `;` that ends a statement.
    let mut boundary = StatementBoundary::default();
    let mut ended = false;
    for token in &tokens {
        if !matches!(token, Token::Whitespace(_)) {
            ended = boundary.ends(token);
        }
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_splits_at_its_semicolons_and_keeps_positions() -> Result<()> {
        let statements = script_statements(
            "SELECT 1;\n -- a comment\n; SELECT 'a;b' /* ; */ ;\nSHOW warnings;\nSELEC 2;",
        )?;
        assert_eq!(statements.len(), 4);
        assert_eq!(statements[1].parse()?.to_string(), "SELECT 'a;b'");
        assert!(statements[2].is_show_warnings());
        assert!(!statements[0].is_show_warnings());
        let error = statements[3].parse().err().map(|e| e.to_string());
        assert!(
            error.as_deref().is_some_and(|e| e.contains("Line: 5")),
            "{error:?}"
        );
        assert!(script_statements("SELECT 'open").is_err());
        assert!(script_statements(" ;; -- nothing").map(|s| s.is_empty())?);
        Ok(())
    }

    #[test]
    fn a_question_mark_after_an_operand_is_the_jsonb_operator() -> Result<()> {
        let (statement, parameters) = parse_with_parameters(
            "SELECT doc ? 'k', doc ?| '{a,b}', doc ?& ARRAY['a'] FROM t WHERE id = ? AND doc ? ? LIMIT ?",
        )?;
        assert_eq!(parameters, 3);
        let ParsedStatement::Sql { statement, .. } = statement else {
            panic!("not one SQL statement");
        };
        assert_eq!(
            statement.to_string(),
            "SELECT doc ? 'k', doc ?| '{a,b}', doc ?& ARRAY['a'] FROM t WHERE id = $1 AND doc ? $2 LIMIT $3"
        );
        Ok(())
    }

    #[test]
    fn hints_name_tables_by_their_aliases() -> Result<()> {
        let statements = split_statements(
            "SELECT /*+ LOOKUP_JOIN(o) INDEX(u u_city) */ 1 FROM orders o JOIN Users AS u ON o.user_id = u.id",
        )?;
        let Some(ParsedStatement::Sql { hints, .. }) = statements.first() else {
            panic!("not one SQL statement: {statements:?}");
        };
        assert_eq!(
            hints.join_for_table("orders"),
            rowdex_planner::lookup::JoinHint::Lookup
        );
        assert_eq!(
            hints.for_table("users"),
            rowdex_planner::IndexHint::Use(vec!["u_city".into()])
        );
        Ok(())
    }

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
    fn a_trigger_body_stays_in_its_create_trigger() -> Result<()> {
        let script = "CREATE TRIGGER g AFTER INSERT ON t BEGIN INSERT INTO u VALUES (NEW.a); \
                      SELECT CASE WHEN NEW.a > 0 THEN 1 END; END; upsert into t values (2)";
        let statements = split_statements(script)?;
        assert_eq!(statements.len(), 2);
        assert!(matches!(
            &statements[1],
            ParsedStatement::Sql { upsert: true, .. }
        ));
        assert_eq!(script_statements(script)?.len(), 2);
        assert!(statement_ends(
            "CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END;"
        ));
        assert!(!statement_ends(
            "CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1;"
        ));
        assert!(statement_ends("SELECT 1;"));
        Ok(())
    }

    #[test]
    fn in_a_table_reads_its_rows() -> Result<()> {
        let statements = split_statements("SELECT 1 NOT IN t1, x IN (2), 'a' IN \"t 2\"")?;
        assert_eq!(
            statements[0].to_string(),
            "SELECT 1 NOT IN (SELECT * FROM t1), x IN (2), 'a' IN (SELECT * FROM \"t 2\")"
        );
        let show = split_statements("SHOW TABLES IN public")?;
        assert!(!show[0].to_string().contains("SELECT"));
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
