//! rowdex's own statements, which the SQL parser does not know (`SHOW INDEXES`, `CHECK INDEX`,
//! `REPAIR TABLE`, `REINDEX`, `EXPLAIN KEY`, `SHOW KEY SPREAD`, `SHOW WARNINGS`, `PURGE`,
//! `ANALYZE`, `SHOW STATISTICS`, `CHECKPOINT`):
//! recognised by their leading words between the standard statements of a script.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::sql::names::object_name;

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
    /// `VACUUM`: rewrite the store's tables into as few as it can (after a bulk load, reads
    /// then consult one table per key), waiting until it is done.
    Vacuum,
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
            Command::Vacuum => f.write_str("VACUUM"),
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
            Some(Ok(Command::Vacuum))
        }
        ("REINDEX", _) => {
            parser.next_token();
            Some(optional_name(parser).map(|target| Command::Reindex { target }))
        }
        _ => None,
    }
}
