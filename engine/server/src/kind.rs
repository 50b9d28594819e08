//! What kind of statement a text is, from its first words (without parsing it), and the
//! CommandComplete tag PostgreSQL clients expect for it (`INSERT 0 3`, `UPDATE 2`,
//! `CREATE TABLE`, ...).

use pgwire::api::results::Tag;
use pgwire::error::ErrorInfo;
use rowdex::Output;

/// A statement's output and tag, or the error to send.
pub type Ran = Result<(Output, Tag), Box<ErrorInfo>>;

/// Words enough to classify any statement.
pub const KIND_WORDS: usize = 4;

/// The kinds the server treats apart: transaction control, the session settings it answers
/// itself, and everything rowdex runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Begin,
    Commit,
    /// ROLLBACK (or ABORT) of the whole transaction.
    Rollback,
    /// ROLLBACK TO [SAVEPOINT] name.
    RollbackTo,
    /// SET of a session parameter (answered by the server).
    Set,
    /// RESET of a session parameter, or of ALL (answered by the server).
    Reset,
    /// SHOW of a session parameter; the name upper-cased.
    ShowParameter(String),
    /// DEALLOCATE [PREPARE] name | ALL: forgets prepared statements (answered by the server,
    /// which holds them).
    Deallocate,
    /// DECLARE name CURSOR ... FOR query: the server keeps the query's rows as a cursor.
    Declare,
    /// FETCH [direction] [FROM] cursor.
    Fetch,
    /// MOVE [direction] [FROM] cursor (or a protocol-level portal).
    Move,
    /// CLOSE cursor | ALL.
    Close,
    /// PREPARE name [(types)] AS statement (kept by the server, see `sql_prepared`).
    Prepare,
    /// EXECUTE name [(values)].
    Execute,
    /// CREATE EXTENSION (answered by the server: `extensions`).
    CreateExtension,
    /// Anything rowdex runs; `words` are its first words.
    Other {
        words: Vec<String>,
    },
}

impl Kind {
    /// The kind of a statement whose first words are `words` (upper-cased); `is_parameter`
    /// tells whether a SHOW names a session parameter rather than a rowdex command.
    pub fn of(words: &[String], is_parameter: impl Fn(&str) -> bool) -> Kind {
        let word = |i: usize| words.get(i).map_or("", String::as_str);
        match (word(0), word(1)) {
            ("BEGIN", _) | ("START", "TRANSACTION") => Kind::Begin,
            ("COMMIT" | "END", _) => Kind::Commit,
            ("ROLLBACK", "TO") => Kind::RollbackTo,
            ("ROLLBACK" | "ABORT", _) => Kind::Rollback,
            // SET TRANSACTION and SET SESSION CHARACTERISTICS change the transaction's modes,
            // which rowdex keeps.
            ("SET", "TRANSACTION") => Kind::Other {
                words: words.to_vec(),
            },
            ("SET", "SESSION") if word(2) == "CHARACTERISTICS" => Kind::Other {
                words: words.to_vec(),
            },
            ("SET", _) => Kind::Set,
            ("RESET", _) => Kind::Reset,
            ("DEALLOCATE", _) => Kind::Deallocate,
            ("DECLARE", _) => Kind::Declare,
            ("FETCH", _) => Kind::Fetch,
            ("MOVE", _) => Kind::Move,
            ("CLOSE", _) => Kind::Close,
            ("PREPARE", name) if name != "TRANSACTION" => Kind::Prepare,
            ("EXECUTE", _) => Kind::Execute,
            ("CREATE", "EXTENSION") => Kind::CreateExtension,
            // SHOW TRANSACTION ISOLATION LEVEL is `transaction_isolation` by another name.
            ("SHOW", "TRANSACTION") if word(2) == "ISOLATION" => {
                Kind::ShowParameter("TRANSACTION_ISOLATION".to_string())
            }
            ("SHOW", name) if words.len() == 2 && is_parameter(name) => {
                Kind::ShowParameter(name.to_string())
            }
            _ => Kind::Other {
                words: words.to_vec(),
            },
        }
    }

    /// Whether this is `SHOW WARNINGS`, whose rows are the warnings of the statement before.
    pub fn is_show_warnings(&self) -> bool {
        matches!(self, Kind::Other { words } if words.len() >= 2 && words[0] == "SHOW" && words[1] == "WARNINGS")
    }

    /// Whether a cancel request may stop a statement of this kind while it runs: a read at
    /// any time; a write only inside a transaction block, which the cancel then fails, so
    /// nothing of it can be committed; never DDL, COPY or transaction control, which run to
    /// their end (an autocommit write's commit is not interrupted halfway). WITH may write,
    /// so outside a block it runs to its end too.
    pub fn cancellable(&self, in_block: bool) -> bool {
        let Kind::Other { words } = self else {
            return false;
        };
        let word = |i: usize| words.get(i).map_or("", String::as_str);
        match word(0) {
            "SELECT" | "VALUES" | "TABLE" | "SHOW" => true,
            "EXPLAIN" => word(1) != "ANALYZE" || in_block,
            "INSERT" | "UPSERT" | "REPLACE" | "UPDATE" | "DELETE" | "WITH" => in_block,
            _ => false,
        }
    }

    /// The tag of a statement of this kind that produced `output`.
    pub fn tag(&self, output: &Output) -> Tag {
        match self {
            Kind::Begin => Tag::new("BEGIN"),
            Kind::Commit => Tag::new("COMMIT"),
            Kind::Rollback | Kind::RollbackTo => Tag::new("ROLLBACK"),
            Kind::Set => Tag::new("SET"),
            Kind::Reset => Tag::new("RESET"),
            Kind::ShowParameter(_) => Tag::new("SHOW"),
            Kind::Deallocate => Tag::new("DEALLOCATE"),
            Kind::Declare => Tag::new("DECLARE CURSOR"),
            Kind::Fetch => Tag::new("FETCH").with_rows(output.row_count()),
            Kind::Move => Tag::new("MOVE"),
            Kind::Close => Tag::new("CLOSE CURSOR"),
            Kind::Prepare => Tag::new("PREPARE"),
            // The executed statement's own tag (`sql_prepared::execute`).
            Kind::Execute => Tag::new("EXECUTE"),
            Kind::CreateExtension => Tag::new("CREATE EXTENSION"),
            Kind::Other { words } => other_tag(words, output),
        }
    }
}

fn other_tag(words: &[String], output: &Output) -> Tag {
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    match output {
        // A write with RETURNING: its rows go under the write's own tag, as in PostgreSQL.
        Output::Rows { .. } => match word(0) {
            "INSERT" | "UPSERT" | "REPLACE" => {
                Tag::new("INSERT").with_oid(0).with_rows(output.row_count())
            }
            "UPDATE" | "DELETE" => Tag::new(word(0)).with_rows(output.row_count()),
            _ => Tag::new("SELECT").with_rows(output.row_count()),
        },
        Output::CopyOut(copied) => {
            Tag::new("COPY").with_rows(usize::try_from(copied.rows).unwrap_or(usize::MAX))
        }
        Output::CopyIn(_) => Tag::new("COPY"),
        Output::Affected { rows } => {
            let rows = usize::try_from(*rows).unwrap_or(usize::MAX);
            match word(0) {
                "INSERT" | "UPSERT" | "REPLACE" => Tag::new("INSERT").with_oid(0).with_rows(rows),
                "UPDATE" => Tag::new("UPDATE").with_rows(rows),
                "DELETE" => Tag::new("DELETE").with_rows(rows),
                "COPY" => Tag::new("COPY").with_rows(rows),
                "WITH" => Tag::new("INSERT").with_oid(0).with_rows(rows),
                other => Tag::new(other).with_rows(rows),
            }
        }
        Output::Done => match word(0) {
            "CREATE" | "DROP" | "ALTER" => {
                let object = words[1..]
                    .iter()
                    .map(String::as_str)
                    .find(|w| !matches!(*w, "UNIQUE" | "OR" | "REPLACE" | "TEMP" | "TEMPORARY"))
                    .unwrap_or("");
                // PostgreSQL tags CREATE USER as the role it creates.
                let object = if object == "USER" { "ROLE" } else { object };
                Tag::new(&format!("{} {object}", word(0)))
            }
            "SAVEPOINT" => Tag::new("SAVEPOINT"),
            "RELEASE" => Tag::new("RELEASE"),
            other => Tag::new(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgwire::messages::response::CommandComplete;
    use rowdex::arrow::array::{ArrayRef, StringArray};
    use rowdex::arrow::datatypes::{DataType as ArrowType, Field, Schema};
    use rowdex::arrow::record_batch::RecordBatch;
    use std::sync::Arc;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    fn tag_text(text: &str, output: &Output) -> String {
        let tag = Kind::of(&words(text), |_| false).tag(output);
        CommandComplete::from(tag).tag
    }

    #[test]
    fn tags_are_postgresql_s() {
        let affected = Output::Affected { rows: 3 };
        assert_eq!(tag_text("INSERT INTO t", &affected), "INSERT 0 3");
        assert_eq!(tag_text("UPSERT INTO t", &affected), "INSERT 0 3");
        assert_eq!(tag_text("UPDATE t SET", &affected), "UPDATE 3");
        assert_eq!(tag_text("DELETE FROM t", &affected), "DELETE 3");
        // With RETURNING, a write's rows come under its own tag.
        let schema = Arc::new(Schema::new(vec![Field::new("id", ArrowType::Utf8, false)]));
        let ids: ArrayRef = Arc::new(StringArray::from(vec!["1", "2"]));
        let batches = vec![RecordBatch::try_new(schema.clone(), vec![ids]).expect("one column")];
        let returned = Output::Rows { schema, batches };
        assert_eq!(tag_text("INSERT INTO t", &returned), "INSERT 0 2");
        assert_eq!(tag_text("DELETE FROM t", &returned), "DELETE 2");
        assert_eq!(tag_text("SELECT 1", &returned), "SELECT 2");
        assert_eq!(
            tag_text("CREATE UNIQUE INDEX i", &Output::Done),
            "CREATE INDEX"
        );
        assert_eq!(tag_text("DROP TABLE t", &Output::Done), "DROP TABLE");
        assert_eq!(tag_text("START TRANSACTION", &Output::Done), "BEGIN");
        assert_eq!(tag_text("END", &Output::Done), "COMMIT");
        assert_eq!(tag_text("ROLLBACK TO s", &Output::Done), "ROLLBACK");
    }

    #[test]
    fn show_is_a_parameter_only_when_named_one() {
        let kind = Kind::of(&words("SHOW TIMEZONE"), |n| n == "TIMEZONE");
        assert_eq!(kind, Kind::ShowParameter("TIMEZONE".into()));
        assert_eq!(
            Kind::of(&words("SHOW TRANSACTION ISOLATION LEVEL"), |_| false),
            Kind::ShowParameter("TRANSACTION_ISOLATION".into())
        );
        assert!(matches!(
            Kind::of(&words("SET TRANSACTION ISOLATION LEVEL"), |_| true),
            Kind::Other { .. }
        ));
        assert_eq!(Kind::of(&words("SET search_path TO"), |_| true), Kind::Set);
        assert!(matches!(
            Kind::of(&words("SHOW INDEXES"), |n| n == "TIMEZONE"),
            Kind::Other { .. }
        ));
    }
}
