//! Passes over a script's tokens, before the parser sees them, that make rowdex's extensions
//! of SQL parse: Phoenix's `UPSERT INTO` and `/*+ ... */` hints (marked per statement),
//! SQLite's `x IN ()`, `family.column` in CREATE TABLE, PostgreSQL's `INSERT INTO t AS
//! alias`, `?` parameters numbered `$n`, and PostgreSQL's `jsonb` operators `?`, `?|`, `?&`.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

use crate::error::{Error, Result};
use crate::sql::hints::QueryHints;

/// A column declared in a column family (`info.email TEXT`): (column, family), each
/// normalised like any identifier (lowercased unless quoted).
pub type FamilyMember = (String, String);

/// Where a script's statements end: at each `;`, except the ones between a CREATE TRIGGER's
/// BEGIN and END, which end the statements of the trigger's body. Fed a statement's tokens in
/// order; reset by the `;` that ends it.
#[derive(Debug, Default)]
pub(crate) struct StatementBoundary {
    /// Significant tokens seen in the current statement.
    seen: usize,
    create: bool,
    trigger: bool,
    /// BEGIN and CASE blocks open in a trigger's body (both close with END).
    depth: usize,
}

impl StatementBoundary {
    /// Whether `token` ends the current statement.
    pub(crate) fn ends(&mut self, token: &Token) -> bool {
        match token {
            Token::Whitespace(_) => false,
            Token::SemiColon if self.depth == 0 => {
                *self = StatementBoundary::default();
                true
            }
            Token::Word(word) if word.quote_style.is_none() => {
                match (self.seen, word.keyword) {
                    (0, Keyword::CREATE) => self.create = true,
                    (1..=3, Keyword::TRIGGER) if self.create => self.trigger = true,
                    (_, Keyword::BEGIN) if self.trigger && self.depth == 0 => self.depth = 1,
                    (_, Keyword::CASE) if self.depth > 0 => self.depth += 1,
                    (_, Keyword::END) if self.depth > 0 => {
                        self.depth -= 1;
                        self.trigger = self.depth > 0;
                    }
                    _ => {}
                }
                self.seen += 1;
                false
            }
            _ => {
                self.seen += 1;
                false
            }
        }
    }
}

/// A script's tokens cut into its statements' (each without its closing `;`).
pub(crate) fn split_at_statement_ends(tokens: Vec<TokenWithSpan>) -> Vec<Vec<TokenWithSpan>> {
    let mut statements = Vec::new();
    let mut current = Vec::new();
    let mut boundary = StatementBoundary::default();
    for token in tokens {
        if boundary.ends(&token.token) {
            statements.push(std::mem::take(&mut current));
        } else {
            current.push(token);
        }
    }
    statements.push(current);
    statements
}

/// Whether a statement's tokens need PostgreSQL's dialect, which parses what the generic one
/// does not: `CREATE TABLE t (LIKE other ...)` (the generic one takes `CREATE TABLE t LIKE
/// other`) and `ALTER TABLE ... TYPE t USING expr`.
pub(crate) fn needs_postgres_dialect(tokens: &[TokenWithSpan]) -> bool {
    is_create_table_like(tokens) || is_alter_using(tokens) || uses_json_operators(tokens)
}

/// Whether a statement uses the JSON operators, which bind as PostgreSQL binds them
/// (`doc ->> 'k' IS NULL` tests the member) only under its dialect.
fn uses_json_operators(tokens: &[TokenWithSpan]) -> bool {
    tokens.iter().any(|t| {
        matches!(
            t.token,
            Token::Arrow
                | Token::LongArrow
                | Token::HashArrow
                | Token::HashLongArrow
                | Token::AtArrow
                | Token::ArrowAt
                | Token::Question
                | Token::QuestionPipe
                | Token::QuestionAnd
        )
    })
}

/// `ALTER TABLE ... USING ...`.
fn is_alter_using(tokens: &[TokenWithSpan]) -> bool {
    let mut words = tokens.iter().filter_map(|t| match &t.token {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    });
    words.next() == Some(Keyword::ALTER)
        && words.next() == Some(Keyword::TABLE)
        && words.any(|keyword| keyword == Keyword::USING)
}

/// `CREATE TABLE t (LIKE other ...)`.
fn is_create_table_like(tokens: &[TokenWithSpan]) -> bool {
    let mut words = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)));
    if !matches!(words.next(), Some(Token::Word(w)) if w.keyword == Keyword::CREATE) {
        return false;
    }
    let mut table = false;
    for token in words.by_ref() {
        match token {
            Token::Word(w) if w.keyword == Keyword::TABLE => table = true,
            Token::LParen => break,
            _ => {}
        }
    }
    table && matches!(words.next(), Some(Token::Word(w)) if w.keyword == Keyword::LIKE)
}

/// Per statement of the script (in order): whether it is written `UPSERT INTO` (its keyword
/// becomes INSERT, which the parser knows), and the hints of the `/*+ ... */` comments in it.
pub(crate) fn upserts_and_hints(tokens: &mut [TokenWithSpan]) -> (Vec<bool>, Vec<QueryHints>) {
    let mut upserts = Vec::new();
    let mut hints: Vec<QueryHints> = Vec::new();
    let mut at_start = true;
    for token in tokens.iter_mut() {
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
    (upserts, hints)
}

/// `x IN ()` is SQLite's spelling of a test against the empty set, which the generic dialect
/// does not parse. An empty subquery means the same in standard SQL (false for every `x`, NULL
/// included, and `NOT IN ()` true), so the list becomes `(SELECT NULL WHERE FALSE)`. SQLite's
/// `x IN t`, a table's rows, becomes `x IN (SELECT * FROM t)`.
pub(crate) fn empty_in_lists_as_subqueries(tokens: &mut Vec<TokenWithSpan>) {
    let mut i = 0;
    while i < tokens.len() {
        let is_in = matches!(&tokens[i].token, Token::Word(w) if w.keyword == Keyword::IN);
        let open = significant(tokens, i + 1).filter(|&j| tokens[j].token == Token::LParen);
        let close = open
            .and_then(|j| significant(tokens, j + 1))
            .filter(|&k| tokens[k].token == Token::RParen);
        if is_in && let Some(table) = in_table(tokens, i) {
            // `x IN t` (SQLite): the rows of table t, a one-column table.
            let span = tokens[table].span;
            let name = tokens[table].token.clone();
            let inserted: Vec<TokenWithSpan> = [
                Token::LParen,
                word(Keyword::SELECT, "SELECT"),
                Token::Whitespace(Whitespace::Space),
                Token::Mul,
                Token::Whitespace(Whitespace::Space),
                word(Keyword::FROM, "FROM"),
                Token::Whitespace(Whitespace::Space),
                name,
                Token::RParen,
            ]
            .into_iter()
            .map(|token| TokenWithSpan::new(token, span))
            .collect();
            let count = inserted.len();
            tokens.splice(table..=table, inserted);
            i = table + count;
        } else if let (true, Some(open), Some(close)) = (is_in, open, close) {
            let span = tokens[close].span;
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

/// `COPY ... WITH (FREEZE on)`: PostgreSQL takes on/off (and 1/0) for a COPY option's boolean,
/// the parser only TRUE/FALSE; `pgbench -i` writes `(freeze on)`. In a COPY statement, an `on`
/// or `off` right after FREEZE or HEADER becomes TRUE or FALSE.
pub(crate) fn copy_option_booleans(tokens: &mut [TokenWithSpan]) {
    let Some(first) = significant(tokens, 0) else {
        return;
    };
    if !matches!(&tokens[first].token, Token::Word(w) if w.keyword == Keyword::COPY) {
        return;
    }
    let mut i = first;
    while let Some(at) = significant(tokens, i + 1) {
        let is_option = matches!(
            &tokens[i].token,
            Token::Word(w) if matches!(w.keyword, Keyword::FREEZE | Keyword::HEADER)
        );
        if is_option && let Token::Word(value) = &tokens[at].token {
            let replacement = match value.value.to_lowercase().as_str() {
                "on" => Some(word(Keyword::TRUE, "TRUE")),
                "off" => Some(word(Keyword::FALSE, "FALSE")),
                _ => None,
            };
            if let Some(replacement) = replacement {
                tokens[at].token = replacement;
            }
        }
        i = at;
    }
}

/// The first token at or after `from` that is not whitespace or a comment.
pub(crate) fn significant(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

/// An unkeyworded word (plain or quoted).
fn word(keyword: Keyword, text: &str) -> Token {
    Token::Word(Word {
        value: text.to_string(),
        quote_style: None,
        keyword,
    })
}

/// Where the table name of `x [NOT] IN t` is, for the IN at `at`: a lone name (not a function
/// call or a qualified name) after an IN that follows an operand (so `SHOW TABLES IN db` is
/// left alone).
fn in_table(tokens: &[TokenWithSpan], at: usize) -> Option<usize> {
    let before = |to: usize| {
        (0..to)
            .rev()
            .find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
    };
    let mut operand = before(at)?;
    if matches!(&tokens[operand].token, Token::Word(w) if w.keyword == Keyword::NOT) {
        operand = before(operand)?;
    }
    let follows_operand = match &tokens[operand].token {
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::HexStringLiteral(_)
        | Token::RParen => true,
        Token::Word(w) => {
            w.quote_style.is_some()
                || matches!(
                    w.keyword,
                    Keyword::NoKeyword | Keyword::NULL | Keyword::TRUE | Keyword::FALSE
                )
        }
        _ => false,
    };
    let table = significant(tokens, at + 1)?;
    let is_name = matches!(&tokens[table].token, Token::Word(w)
        if w.quote_style.is_some() || w.keyword == Keyword::NoKeyword);
    let after = significant(tokens, table + 1).map(|i| &tokens[i].token);
    let lone = !matches!(after, Some(Token::LParen | Token::Period));
    (follows_operand && is_name && lone).then_some(table)
}

/// Finds `family.column` at the start of a column definition of CREATE TABLE, which SQL's
/// grammar does not have, and leaves only `column` for the parser: returns, per statement (in
/// order, counted as the parser counts them), the columns found and their families.
pub(crate) fn family_qualified_columns(tokens: &mut [TokenWithSpan]) -> Vec<Vec<FamilyMember>> {
    let mut found: Vec<Vec<FamilyMember>> = Vec::new();
    let mut at_start = true;
    // Within the current statement: whether it is CREATE TABLE, the parenthesis depth, and
    // whether the next significant token starts a column definition.
    let (mut create, mut table, mut depth, mut at_column) = (false, false, 0usize, false);
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

/// PostgreSQL's `INSERT INTO t AS alias ...` (the alias its ON CONFLICT DO UPDATE and
/// RETURNING use), which the parser's dialect does not take: the alias is dropped and
/// `alias.column` in the rest of the statement becomes `t.column`.
pub(crate) fn insert_aliases_as_table_names(tokens: &mut [TokenWithSpan]) {
    let is_keyword = |tokens: &[TokenWithSpan], at: Option<usize>, keyword: Keyword| {
        at.is_some_and(|i| matches!(&tokens[i].token, Token::Word(w) if w.keyword == keyword))
    };
    let mut start = 0;
    while let Some(first) = significant(tokens, start) {
        let end = (first..tokens.len())
            .find(|&i| tokens[i].token == Token::SemiColon)
            .unwrap_or(tokens.len());
        start = end + 1;
        let words = |tokens: &[TokenWithSpan]| {
            let mut at = Some(first);
            // INSERT [OR word] INTO
            if !is_keyword(tokens, at, Keyword::INSERT) {
                return None;
            }
            at = significant(tokens, at? + 1);
            if is_keyword(tokens, at, Keyword::OR) {
                at = significant(tokens, significant(tokens, at? + 1)? + 1);
            }
            if !is_keyword(tokens, at, Keyword::INTO) {
                return None;
            }
            // The table name, qualified or not: its last part is what `alias.` becomes.
            let mut name = significant(tokens, at? + 1)?;
            while let Some(period) =
                significant(tokens, name + 1).filter(|&p| tokens[p].token == Token::Period)
            {
                name = significant(tokens, period + 1)?;
            }
            let as_word = significant(tokens, name + 1);
            if !is_keyword(tokens, as_word, Keyword::AS) {
                return None;
            }
            let alias = significant(tokens, as_word? + 1)?;
            matches!(tokens[alias].token, Token::Word(_)).then_some((name, as_word?, alias))
        };
        let Some((name, as_word, alias)) = words(tokens) else {
            continue;
        };
        let (Token::Word(table), Token::Word(alias_word)) =
            (tokens[name].token.clone(), tokens[alias].token.clone())
        else {
            continue;
        };
        let same = |word: &Word| match (word.quote_style, alias_word.quote_style) {
            (None, None) => word.value.eq_ignore_ascii_case(&alias_word.value),
            (Some(_), Some(_)) => word.value == alias_word.value,
            _ => false,
        };
        for blank in [as_word, alias] {
            tokens[blank].token = Token::Whitespace(Whitespace::Space);
        }
        for i in alias + 1..end.min(tokens.len()) {
            let qualifies = matches!(&tokens[i].token, Token::Word(w) if same(w))
                && significant(tokens, i + 1).is_some_and(|p| tokens[p].token == Token::Period);
            if qualifies {
                tokens[i].token = Token::Word(table.clone());
            }
        }
    }
}

/// `doc ? 'key'`, `doc ?| '{a,b}'`, `doc ?& ARRAY[...]`: PostgreSQL's key-existence operators,
/// which the tokenizer reads as `?` placeholders. A `?` right after an operand (a name, a
/// literal, a closing parenthesis) and before a string, a parameter or ARRAY is the operator
/// `?`; followed at once by `|` or `&`, the operator `?|` or `?&`. A placeholder never stands
/// there (two operands in a row are no expression), so `?` parameters keep working.
pub(crate) fn question_operators(tokens: &mut Vec<TokenWithSpan>) {
    let mut i = 0;
    while i < tokens.len() {
        let is_question = matches!(&tokens[i].token, Token::Placeholder(p) if p == "?");
        let after_operand = is_question
            && (0..i)
                .rev()
                .find(|&p| !matches!(tokens[p].token, Token::Whitespace(_)))
                .is_some_and(|p| {
                    matches!(
                        &tokens[p].token,
                        Token::Word(w) if w.quote_style.is_some() || !is_clause_keyword(w.keyword)
                    ) || matches!(
                        tokens[p].token,
                        Token::RParen | Token::SingleQuotedString(_) | Token::Number(..)
                    )
                });
        if !after_operand {
            i += 1;
            continue;
        }
        let joined = match tokens.get(i + 1).map(|t| &t.token) {
            Some(Token::Pipe) => Some(Token::QuestionPipe),
            Some(Token::Ampersand) => Some(Token::QuestionAnd),
            _ => None,
        };
        if let Some(joined) = joined {
            tokens[i].token = joined;
            tokens.remove(i + 1);
        } else if significant(tokens, i + 1).is_some_and(|n| {
            matches!(
                &tokens[n].token,
                Token::SingleQuotedString(_) | Token::Placeholder(_)
            ) || matches!(&tokens[n].token, Token::Word(w) if w.keyword == Keyword::ARRAY)
        }) {
            tokens[i].token = Token::Question;
        }
        i += 1;
    }
}

/// Keywords after which a `?` is a parameter (`LIMIT ?`, `SELECT ?`, `AND ?`), not an
/// operator on an operand.
fn is_clause_keyword(keyword: Keyword) -> bool {
    matches!(
        keyword,
        Keyword::SELECT
            | Keyword::WHERE
            | Keyword::AND
            | Keyword::OR
            | Keyword::NOT
            | Keyword::LIMIT
            | Keyword::OFFSET
            | Keyword::SET
            | Keyword::VALUES
            | Keyword::THEN
            | Keyword::ELSE
            | Keyword::WHEN
            | Keyword::CASE
            | Keyword::BY
            | Keyword::ON
            | Keyword::IN
            | Keyword::IS
            | Keyword::LIKE
            | Keyword::BETWEEN
            | Keyword::RETURNING
            | Keyword::HAVING
            | Keyword::AS
            | Keyword::DEFAULT
    )
}

/// Numbers `?` placeholders `$1`, `$2`, ... in order of appearance; returns how many
/// parameters the statement takes. A statement numbers its parameters itself or not at all.
pub(crate) fn number_placeholders(tokens: &mut [TokenWithSpan]) -> Result<usize> {
    let mut anonymous = 0;
    let mut count = 0;
    let mut numbered = false;
    for token in tokens.iter_mut() {
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
    Ok(count)
}
