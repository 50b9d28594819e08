//! SQL cursors: `DECLARE name [BINARY] [NO SCROLL | SCROLL] CURSOR [WITH[OUT] HOLD] FOR query`,
//! `FETCH` and `MOVE` in every direction PostgreSQL has (NEXT, PRIOR, FIRST, LAST, ABSOLUTE n,
//! RELATIVE n, n, ALL, FORWARD [n | ALL], BACKWARD [n | ALL]), and `CLOSE name | ALL`.
//!
//! A cursor holds its query's result, read when it is declared (rowdex materializes every
//! result), and a position: 0 before the first row, 1..=n on a row, n + 1 after the last, as
//! PostgreSQL counts them. A FETCH gives rows in the order it moves over them (BACKWARD gives
//! them in reverse). A cursor without HOLD ends with its transaction; one WITH HOLD lives until
//! it is closed or the session ends. The rows are sent in the format the FETCH asks for (the
//! extended protocol's Bind), so a `BINARY` cursor changes nothing here.

use std::collections::HashMap;

use rowdex::arrow::array::UInt32Array;
use rowdex::arrow::compute::{concat_batches, take_record_batch};
use rowdex::arrow::datatypes::SchemaRef;
use rowdex::arrow::error::ArrowError;
use rowdex::arrow::record_batch::RecordBatch;

use crate::settings::strip_word;

/// A DECLARE statement's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declare {
    pub name: String,
    /// WITH HOLD: the cursor outlives its transaction.
    pub hold: bool,
    /// NO SCROLL: the cursor only moves forward.
    pub no_scroll: bool,
    /// The query whose rows the cursor holds.
    pub query: String,
}

/// How far a FETCH or MOVE goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Rows(u64),
    All,
}

/// Where a FETCH or MOVE goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward(Count),
    Backward(Count),
    /// To row n (from the end when negative; 0 is before the first row).
    Absolute(i64),
    /// n rows from the current position (0 is the current row again).
    Relative(i64),
}

/// A FETCH or MOVE statement's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    pub direction: Direction,
    pub cursor: String,
}

/// Why a cursor statement failed: its SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorError {
    pub code: &'static str,
    pub message: String,
}

impl CursorError {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        CursorError {
            code,
            message: message.into(),
        }
    }

    fn syntax(statement: &str) -> Self {
        CursorError::new("42601", format!("syntax error in {statement}"))
    }
}

/// The name at the head of `text` (double-quoted, or a word folded to lower case) and what
/// follows it.
fn take_name(text: &str) -> Option<(String, &str)> {
    let text = text.trim_start();
    if let Some(quoted) = text.strip_prefix('"') {
        let mut name = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '"' {
                if quoted[i + 1..].starts_with('"') {
                    name.push('"');
                    chars.next();
                } else {
                    return Some((name, &quoted[i + 1..]));
                }
            } else {
                name.push(c);
            }
        }
        return None;
    }
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    (end > 0).then(|| (text[..end].to_lowercase(), &text[end..]))
}

/// `text` (blanks before it allowed) after its leading `keyword`.
fn word<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    strip_word(text.trim_start(), keyword)
}

/// `sql` without a trailing semicolon and surrounding blanks.
fn statement_text(sql: &str) -> &str {
    sql.trim().trim_end_matches(';').trim_end()
}

/// Reads `DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [[NO] SCROLL] CURSOR
/// [{WITH | WITHOUT} HOLD] FOR query`.
pub fn parse_declare(sql: &str) -> Result<Declare, CursorError> {
    let bad = || CursorError::syntax("DECLARE");
    let rest = word(statement_text(sql), "DECLARE").ok_or_else(bad)?;
    let (name, mut rest) = take_name(rest).ok_or_else(bad)?;
    let mut no_scroll = false;
    loop {
        if let Some(after) = ["BINARY", "ASENSITIVE", "INSENSITIVE", "SCROLL"]
            .iter()
            .find_map(|keyword| word(rest, keyword))
        {
            rest = after;
        } else if let Some(after) = word(rest, "NO").and_then(|r| word(r, "SCROLL")) {
            no_scroll = true;
            rest = after;
        } else {
            break;
        }
    }
    rest = word(rest, "CURSOR").ok_or_else(bad)?;
    let mut hold = false;
    if let Some(after) = word(rest, "WITH").and_then(|r| word(r, "HOLD")) {
        hold = true;
        rest = after;
    } else if let Some(after) = word(rest, "WITHOUT").and_then(|r| word(r, "HOLD")) {
        rest = after;
    }
    let query = word(rest, "FOR").ok_or_else(bad)?.trim();
    if query.is_empty() {
        return Err(bad());
    }
    Ok(Declare {
        name,
        hold,
        no_scroll,
        query: query.to_string(),
    })
}

/// The text of the query a DECLARE opens a cursor over, for running or preparing it.
pub fn declared_query(sql: &str) -> Option<String> {
    parse_declare(sql).ok().map(|declare| declare.query)
}

/// Reads `FETCH [direction] [FROM | IN] cursor` (or MOVE: `verb` says which).
pub fn parse_fetch(sql: &str, verb: &str) -> Result<Fetch, CursorError> {
    let bad = || CursorError::syntax(verb);
    let mut rest = word(statement_text(sql), verb).ok_or_else(bad)?;
    let direction = if let Some(after) = word(rest, "NEXT") {
        rest = after;
        Direction::Forward(Count::Rows(1))
    } else if let Some(after) = word(rest, "PRIOR") {
        rest = after;
        Direction::Backward(Count::Rows(1))
    } else if let Some(after) = word(rest, "FIRST") {
        rest = after;
        Direction::Absolute(1)
    } else if let Some(after) = word(rest, "LAST") {
        rest = after;
        Direction::Absolute(-1)
    } else if let Some(after) = word(rest, "ABSOLUTE") {
        let (n, after) = signed(after).ok_or_else(bad)?;
        rest = after;
        Direction::Absolute(n)
    } else if let Some(after) = word(rest, "RELATIVE") {
        let (n, after) = signed(after).ok_or_else(bad)?;
        rest = after;
        Direction::Relative(n)
    } else if let Some(after) = word(rest, "FORWARD") {
        let (n, after) = count(after).unwrap_or((Count::Rows(1), after));
        rest = after;
        Direction::Forward(n)
    } else if let Some(after) = word(rest, "BACKWARD") {
        let (n, after) = count(after).unwrap_or((Count::Rows(1), after));
        rest = after;
        Direction::Backward(n)
    } else if let Some(after) = word(rest, "ALL") {
        rest = after;
        Direction::Forward(Count::All)
    } else if let Some((n, after)) = signed(rest) {
        rest = after;
        // `FETCH -2` goes back two rows.
        match u64::try_from(n) {
            Ok(n) => Direction::Forward(Count::Rows(n)),
            Err(_) => Direction::Backward(Count::Rows(n.unsigned_abs())),
        }
    } else {
        Direction::Forward(Count::Rows(1))
    };
    let rest = word(rest, "FROM")
        .or_else(|| word(rest, "IN"))
        .unwrap_or(rest);
    let (cursor, tail) = take_name(rest).ok_or_else(bad)?;
    if !tail.trim().is_empty() {
        return Err(bad());
    }
    Ok(Fetch { direction, cursor })
}

/// A FORWARD or BACKWARD count at the head of `text` (ALL or a number), and what follows it.
fn count(text: &str) -> Option<(Count, &str)> {
    if let Some(after) = word(text, "ALL") {
        return Some((Count::All, after));
    }
    let (number, after) = signed(text)?;
    Some((Count::Rows(u64::try_from(number).ok()?), after))
}

/// A signed integer at the head of `text`, and what follows it.
fn signed(text: &str) -> Option<(i64, &str)> {
    let text = text.trim_start();
    let digits_from = usize::from(text.starts_with(['-', '+']));
    let end = text[digits_from..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(text.len(), |i| i + digits_from);
    if end == digits_from {
        return None;
    }
    Some((text[..end].parse().ok()?, &text[end..]))
}

/// One declared cursor.
#[derive(Debug)]
pub struct Cursor {
    /// Every row of the query's result, in one batch.
    rows: RecordBatch,
    /// 0 before the first row, 1..=n on row n, n + 1 after the last.
    position: u64,
    hold: bool,
    no_scroll: bool,
}

impl Cursor {
    pub fn schema(&self) -> SchemaRef {
        self.rows.schema()
    }

    fn len(&self) -> u64 {
        self.rows.num_rows() as u64
    }

    /// Moves as `direction` says; the positions (1-based) of the rows passed over, in the
    /// order they were met.
    fn advance(&mut self, direction: Direction) -> Result<Vec<u64>, CursorError> {
        let n = self.len();
        let backwards = match direction {
            Direction::Backward(_) => true,
            Direction::Absolute(to) => to < 0 || (to as u64) < self.position,
            Direction::Relative(by) => by < 0,
            Direction::Forward(_) => false,
        };
        if backwards && self.no_scroll {
            return Err(CursorError::new(
                "55000",
                "cursor can only scan forward (declare it with SCROLL)",
            ));
        }
        let rows = match direction {
            Direction::Forward(count) => {
                let step = match count {
                    Count::All => n + 1,
                    Count::Rows(0) => return Ok(self.current().into_iter().collect()),
                    Count::Rows(k) => k,
                };
                let from = self.position + 1;
                let to = self.position.saturating_add(step).min(n);
                self.position = self.position.saturating_add(step).min(n + 1);
                (from..=to).collect()
            }
            Direction::Backward(count) => {
                let step = match count {
                    Count::All => n + 1,
                    Count::Rows(0) => return Ok(self.current().into_iter().collect()),
                    Count::Rows(k) => k,
                };
                let from = self.position.min(n + 1).saturating_sub(1);
                let to = self.position.saturating_sub(step).max(1);
                self.position = self.position.saturating_sub(step);
                (to..=from).rev().collect()
            }
            Direction::Absolute(to) => {
                let target = if to >= 0 {
                    i128::from(to)
                } else {
                    i128::from(n) + 1 + i128::from(to)
                };
                self.place(target);
                self.current().into_iter().collect()
            }
            Direction::Relative(by) => {
                self.place(i128::from(self.position) + i128::from(by));
                self.current().into_iter().collect()
            }
        };
        Ok(rows)
    }

    /// Puts the cursor on row `target`, or before the first / after the last row when it lies
    /// outside them.
    fn place(&mut self, target: i128) {
        let n = i128::from(self.len());
        self.position = target.clamp(0, n + 1) as u64;
    }

    /// The row the cursor is on, if it is on one.
    fn current(&self) -> Option<u64> {
        (1..=self.len())
            .contains(&self.position)
            .then_some(self.position)
    }

    /// The rows at `positions` (1-based), in that order.
    fn rows_at(&self, positions: &[u64]) -> Result<RecordBatch, ArrowError> {
        let indices: UInt32Array = positions
            .iter()
            .map(|p| u32::try_from(p - 1).unwrap_or(u32::MAX))
            .collect();
        take_record_batch(&self.rows, &indices)
    }
}

/// The cursors of one session.
#[derive(Debug, Default)]
pub struct Cursors {
    open: HashMap<String, Cursor>,
}

impl Cursors {
    /// Whether a cursor of this name is open.
    pub fn contains(&self, name: &str) -> bool {
        self.open.contains_key(name)
    }

    /// The columns of cursor `name`'s rows.
    pub fn schema(&self, name: &str) -> Option<SchemaRef> {
        self.open.get(name).map(Cursor::schema)
    }

    /// Opens the cursor `declare` names over `batches` (its query's result, of `schema`).
    pub fn declare(
        &mut self,
        declare: &Declare,
        schema: SchemaRef,
        batches: &[RecordBatch],
    ) -> Result<(), CursorError> {
        if self.open.contains_key(&declare.name) {
            return Err(CursorError::new(
                "42P03",
                format!("cursor \"{}\" already exists", declare.name),
            ));
        }
        let rows = concat_batches(&schema, batches)
            .map_err(|e| CursorError::new("XX000", e.to_string()))?;
        self.open.insert(
            declare.name.clone(),
            Cursor {
                rows,
                position: 0,
                hold: declare.hold,
                no_scroll: declare.no_scroll,
            },
        );
        Ok(())
    }

    /// Runs a FETCH (`rows` true: the rows passed over) or a MOVE (only their count).
    pub fn fetch(
        &mut self,
        fetch: &Fetch,
        rows: bool,
    ) -> Result<(u64, Option<RecordBatch>), CursorError> {
        let cursor = self.open.get_mut(&fetch.cursor).ok_or_else(|| {
            CursorError::new(
                "34000",
                format!("cursor \"{}\" does not exist", fetch.cursor),
            )
        })?;
        let positions = cursor.advance(fetch.direction)?;
        let count = positions.len() as u64;
        if !rows {
            return Ok((count, None));
        }
        let batch = cursor
            .rows_at(&positions)
            .map_err(|e| CursorError::new("XX000", e.to_string()))?;
        Ok((count, Some(batch)))
    }

    /// `CLOSE name`, or `CLOSE ALL` (`name` None).
    pub fn close(&mut self, name: Option<&str>) -> Result<(), CursorError> {
        match name {
            None => self.open.clear(),
            Some(name) => {
                if self.open.remove(name).is_none() {
                    return Err(CursorError::new(
                        "34000",
                        format!("cursor \"{name}\" does not exist"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The transaction ended: its cursors without HOLD go.
    pub fn end_transaction(&mut self) {
        self.open.retain(|_, cursor| cursor.hold);
    }
}

/// Reads `CLOSE name | ALL`: the name, None for ALL.
pub fn parse_close(sql: &str) -> Result<Option<String>, CursorError> {
    let bad = || CursorError::syntax("CLOSE");
    let rest = word(statement_text(sql), "CLOSE").ok_or_else(bad)?;
    if word(rest, "ALL").is_some_and(|r| r.trim().is_empty()) {
        return Ok(None);
    }
    let (name, tail) = take_name(rest).ok_or_else(bad)?;
    if !tail.trim().is_empty() {
        return Err(bad());
    }
    Ok(Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex::arrow::array::{Array, Int64Array};
    use rowdex::arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn cursor_of(n: i64, no_scroll: bool) -> (Cursors, SchemaRef) {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from((1..=n).collect::<Vec<_>>()))],
        )
        .expect("batch");
        let mut cursors = Cursors::default();
        let declare = Declare {
            name: "c".into(),
            hold: false,
            no_scroll,
            query: "SELECT".into(),
        };
        cursors
            .declare(&declare, schema.clone(), &[batch])
            .expect("declare");
        (cursors, schema)
    }

    fn ids(cursors: &mut Cursors, sql: &str) -> Vec<i64> {
        let fetch = parse_fetch(sql, "FETCH").expect("parses");
        let (_, batch) = cursors.fetch(&fetch, true).expect("fetches");
        let batch = batch.expect("rows");
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        (0..column.len()).map(|i| column.value(i)).collect()
    }

    #[test]
    fn declarations_are_read_as_postgresql_writes_them() {
        let declare =
            parse_declare("DECLARE \"Big\" NO SCROLL CURSOR WITH HOLD FOR SELECT 1;").expect("ok");
        assert_eq!(
            declare,
            Declare {
                name: "Big".into(),
                hold: true,
                no_scroll: true,
                query: "SELECT 1".into()
            }
        );
        let plain = parse_declare("declare c binary cursor for select * from t").expect("ok");
        assert_eq!((plain.name.as_str(), plain.hold), ("c", false));
        assert!(parse_declare("DECLARE c FOR SELECT 1").is_err());
        assert_eq!(parse_close("CLOSE ALL"), Ok(None));
        assert_eq!(parse_close("close \"x\""), Ok(Some("x".into())));
    }

    #[test]
    fn fetches_move_as_postgresql_counts_positions() {
        let (mut cursors, _) = cursor_of(5, false);
        assert_eq!(ids(&mut cursors, "FETCH 2 FROM c"), vec![1, 2]);
        assert_eq!(ids(&mut cursors, "FETCH NEXT c"), vec![3]);
        assert_eq!(ids(&mut cursors, "FETCH PRIOR IN c"), vec![2]);
        assert_eq!(ids(&mut cursors, "FETCH RELATIVE 0 c"), vec![2]);
        assert_eq!(ids(&mut cursors, "FETCH FORWARD ALL c"), vec![3, 4, 5]);
        assert_eq!(ids(&mut cursors, "FETCH c"), Vec::<i64>::new());
        assert_eq!(ids(&mut cursors, "FETCH BACKWARD 2 c"), vec![5, 4]);
        assert_eq!(ids(&mut cursors, "FETCH LAST c"), vec![5]);
        assert_eq!(ids(&mut cursors, "FETCH ABSOLUTE -2 c"), vec![4]);
        assert_eq!(ids(&mut cursors, "FETCH FIRST c"), vec![1]);
        assert_eq!(ids(&mut cursors, "FETCH ABSOLUTE 9 c"), Vec::<i64>::new());
        assert_eq!(
            ids(&mut cursors, "FETCH BACKWARD ALL c"),
            vec![5, 4, 3, 2, 1]
        );
        assert_eq!(ids(&mut cursors, "FETCH -1 c"), Vec::<i64>::new());
        let forward = parse_fetch("MOVE FORWARD 3 c", "MOVE").expect("parses");
        assert_eq!(cursors.fetch(&forward, false).map(|r| r.0), Ok(3));
        assert_eq!(ids(&mut cursors, "FETCH ALL c"), vec![4, 5]);
    }

    #[test]
    fn a_no_scroll_cursor_only_goes_forward_and_others_end_with_the_transaction() {
        let (mut cursors, _) = cursor_of(3, true);
        assert_eq!(ids(&mut cursors, "FETCH 2 c"), vec![1, 2]);
        let prior = parse_fetch("FETCH PRIOR c", "FETCH").expect("parses");
        assert_eq!(
            cursors.fetch(&prior, true).map(|_| ()).map_err(|e| e.code),
            Err("55000")
        );
        cursors.end_transaction();
        assert!(!cursors.contains("c"));
        let missing = parse_fetch("FETCH c", "FETCH").expect("parses");
        assert_eq!(
            cursors
                .fetch(&missing, true)
                .map(|_| ())
                .map_err(|e| e.code),
            Err("34000")
        );
    }
}
