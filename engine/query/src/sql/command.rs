//! rowdex's own statements, which the SQL parser does not know (`SHOW INDEXES`, `CHECK INDEX`,
//! `REPAIR TABLE`, `REINDEX`, `EXPLAIN KEY`, `SHOW KEY SPREAD`, `SHOW WARNINGS`, `PURGE`,
//! `ANALYZE`, `SHOW STATISTICS`, `CHECKPOINT`), and PostgreSQL's role statements in the form
//! PostgreSQL writes them (`CREATE USER name WITH PASSWORD '...'`, `ALTER ROLE`, `DROP USER`):
//! recognised by their leading words between the standard statements of a script.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::sql::names::{ident_name, object_name};

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
    /// `ANALYZE [TABLE] [t]`: gather the planner's statistics of one table, or of every table.
    Analyze { table: Option<String> },
    /// `SHOW STATISTICS [FROM|FOR] t`: the row count and the gathered statistics of a table.
    ShowStatistics { table: String },
    /// `CHECKPOINT`: make every write durable and move what the next open would replay into
    /// the store's tables (PostgreSQL's statement of that name).
    Checkpoint,
    /// `VACUUM [FULL] [FREEZE] [VERBOSE] [ANALYZE] [t, ...]`: rewrite the store's tables into
    /// as few as it can (after a bulk load, reads then consult one table per key), waiting
    /// until it is done; the whole store whatever tables are named (PostgreSQL's FULL, FREEZE
    /// and VERBOSE change nothing more). With ANALYZE, the named tables' statistics (every
    /// table's when none is named) are gathered after.
    Vacuum { analyze: bool, tables: Vec<String> },
    /// `CREATE ROLE name [[WITH] option ...]`; `CREATE USER` is the same with LOGIN unless
    /// NOLOGIN is given (`user`).
    CreateRole {
        name: String,
        options: RoleOptions,
        user: bool,
    },
    /// `ALTER ROLE|USER name [WITH] option ...`.
    AlterRole { name: String, options: RoleOptions },
    /// `DROP ROLE|USER [IF EXISTS] name [, ...]`.
    DropRole { names: Vec<String>, if_exists: bool },
}

/// The options of CREATE and ALTER ROLE that rowdex keeps: LOGIN / NOLOGIN and the password
/// (`[ENCRYPTED] PASSWORD 'text'` or `PASSWORD NULL`). rowdex has no privileges, so the
/// privilege options (SUPERUSER, CREATEDB, ...) are refused rather than ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleOptions {
    pub login: Option<bool>,
    /// Some(None): PASSWORD NULL, no password.
    pub password: Option<Option<Password>>,
}

/// A password as written in a statement: plain text, or a SCRAM verifier PostgreSQL wrote.
/// Never shown (its Debug and Display print a placeholder).
#[derive(Clone, PartialEq, Eq)]
pub struct Password(pub String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("'********'")
    }
}

impl std::fmt::Display for RoleOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.login {
            Some(true) => f.write_str(" LOGIN")?,
            Some(false) => f.write_str(" NOLOGIN")?,
            None => {}
        }
        match self.password {
            Some(Some(_)) => f.write_str(" PASSWORD '********'"),
            Some(None) => f.write_str(" PASSWORD NULL"),
            None => Ok(()),
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
            Command::Analyze { table: None } => f.write_str("ANALYZE"),
            Command::Analyze { table: Some(t) } => write!(f, "ANALYZE {t}"),
            Command::ShowStatistics { table } => write!(f, "SHOW STATISTICS {table}"),
            Command::Checkpoint => f.write_str("CHECKPOINT"),
            Command::Vacuum { analyze, tables } => {
                f.write_str("VACUUM")?;
                if *analyze {
                    f.write_str(" ANALYZE")?;
                }
                if !tables.is_empty() {
                    write!(f, " {}", tables.join(", "))?;
                }
                Ok(())
            }
            Command::CreateRole {
                name,
                options,
                user,
            } => {
                let kind = if *user { "USER" } else { "ROLE" };
                write!(f, "CREATE {kind} {name}{options}")
            }
            Command::AlterRole { name, options } => write!(f, "ALTER ROLE {name}{options}"),
            Command::DropRole { names, if_exists } => {
                let if_exists = if *if_exists { "IF EXISTS " } else { "" };
                write!(f, "DROP ROLE {if_exists}{}", names.join(", "))
            }
        }
    }
}

/// Key ranges of `SHOW KEY SPREAD` when PARTITIONS is not given.
const DEFAULT_SPREAD_PARTITIONS: usize = 8;

/// Parses a rowdex command if the next tokens start one; None leaves the parser untouched.
pub(crate) fn parse_command(
    parser: &mut Parser<'_>,
) -> Option<std::result::Result<Command, ParserError>> {
    let word = |n: usize, parser: &Parser<'_>| match parser.peek_nth_token(n).token {
        Token::Word(w) if w.quote_style.is_none() => w.value.to_uppercase(),
        _ => String::new(),
    };
    let first = word(0, parser);
    let second = word(1, parser);
    let name = |parser: &mut Parser<'_>| {
        parser
            .parse_object_name(false)
            .map(|name| object_name(&name).unwrap_or_else(|_| name.to_string()))
    };
    // A name ending the statement, or none when the statement ends here.
    let optional_name = |parser: &mut Parser<'_>| match parser.peek_token().token {
        Token::EOF | Token::SemiColon => Ok(None),
        _ => name(parser).map(Some),
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
        ("ANALYZE", _) => {
            parser.next_token();
            if second == "TABLE" {
                parser.next_token();
            }
            Some(optional_name(parser).map(|table| Command::Analyze { table }))
        }
        ("SHOW", "STATISTICS" | "STATS") => {
            parser.next_token();
            parser.next_token();
            if matches!(word(0, parser).as_str(), "FROM" | "FOR" | "IN") {
                parser.next_token();
            }
            Some(name(parser).map(|table| Command::ShowStatistics { table }))
        }
        ("CHECKPOINT", _) => {
            parser.next_token();
            Some(Ok(Command::Checkpoint))
        }
        ("VACUUM", _) => {
            parser.next_token();
            let mut analyze = false;
            while matches!(
                word(0, parser).as_str(),
                "FULL" | "FREEZE" | "VERBOSE" | "ANALYZE"
            ) {
                analyze |= word(0, parser) == "ANALYZE";
                parser.next_token();
            }
            let mut tables = Vec::new();
            loop {
                match optional_name(parser) {
                    Ok(Some(table)) => tables.push(table),
                    Ok(None) => break,
                    Err(e) => return Some(Err(e)),
                }
                if !parser.consume_token(&Token::Comma) {
                    break;
                }
            }
            Some(Ok(Command::Vacuum { analyze, tables }))
        }
        ("REINDEX", _) => {
            parser.next_token();
            Some(optional_name(parser).map(|target| Command::Reindex { target }))
        }
        ("CREATE" | "ALTER" | "DROP", "ROLE" | "USER") => {
            parser.next_token();
            parser.next_token();
            Some(parse_role_statement(parser, &first, second == "USER"))
        }
        _ => None,
    }
}

/// The rest of a role statement, after its first two words.
fn parse_role_statement(
    parser: &mut Parser<'_>,
    verb: &str,
    user: bool,
) -> std::result::Result<Command, ParserError> {
    match verb {
        "DROP" => {
            let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
            let names = parser.parse_comma_separated(|p| p.parse_identifier())?;
            Ok(Command::DropRole {
                names: names.iter().map(ident_name).collect(),
                if_exists,
            })
        }
        _ => {
            let name = ident_name(&parser.parse_identifier()?);
            let options = parse_role_options(parser)?;
            if verb == "CREATE" {
                Ok(Command::CreateRole {
                    name,
                    options,
                    user,
                })
            } else {
                Ok(Command::AlterRole { name, options })
            }
        }
    }
}

/// `[WITH] option ...` up to the end of the statement.
fn parse_role_options(parser: &mut Parser<'_>) -> std::result::Result<RoleOptions, ParserError> {
    let mut options = RoleOptions::default();
    let _with = parser.parse_keyword(Keyword::WITH);
    loop {
        let token = parser.peek_token();
        let word = match &token.token {
            Token::EOF | Token::SemiColon => return Ok(options),
            Token::Word(w) => w.value.to_uppercase(),
            other => {
                return Err(ParserError::ParserError(format!(
                    "expected a role option, found {other}"
                )));
            }
        };
        parser.next_token();
        match word.as_str() {
            "LOGIN" => options.login = Some(true),
            "NOLOGIN" => options.login = Some(false),
            "ENCRYPTED" | "PASSWORD" => {
                if word == "ENCRYPTED" {
                    parser.expect_keyword(Keyword::PASSWORD)?;
                }
                options.password = Some(if parser.parse_keyword(Keyword::NULL) {
                    None
                } else {
                    Some(Password(parser.parse_literal_string()?))
                });
            }
            other => {
                return Err(ParserError::ParserError(format!(
                    "the role option {other} is not supported: rowdex roles have no privileges \
                     (every role that logs in may do everything); LOGIN, NOLOGIN and PASSWORD \
                     are the options it keeps"
                )));
            }
        }
    }
}
