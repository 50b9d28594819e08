//! A SELECT's row-locking clauses (`FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE [OF name,
//! ...] [NOWAIT | SKIP LOCKED]`), as PostgreSQL spells them, read into what each table of the
//! FROM list is locked in and how a held row is waited for.
//!
//! The parser knows `FOR UPDATE` and `FOR SHARE` with one name after OF; the token pass
//! (`locking_clause_forms`) reads PostgreSQL's other forms into those before parsing: rowdex's
//! locks have two modes (`LockMode`), so `NO KEY UPDATE` locks as `UPDATE` and `KEY SHARE` as
//! `SHARE` (stronger than PostgreSQL's: they wait where PostgreSQL's would not, never the
//! other way), and `OF a, b` becomes one clause per name.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, LockClause, LockType, NonBlock, Query, SelectItem, SetExpr, Statement,
    Visit, Visitor,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};
use rowdex_store::locks::{LockMode, LockWait};

use crate::error::{Error, Result};
use crate::sql::names::{AGGREGATES, ident_name};
use crate::sql::tokens::significant;

/// How a locking clause treats a row another transaction holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    Wait,
    NoWait,
    SkipLocked,
}

impl Held {
    /// The lock table's request, waiting up to `lock_timeout` when it waits.
    pub(crate) fn wait(self, lock_timeout: Option<std::time::Duration>) -> LockWait {
        match self {
            Held::Wait => LockWait::Wait(lock_timeout),
            Held::NoWait => LockWait::NoWait,
            Held::SkipLocked => LockWait::SkipLocked,
        }
    }
}

/// One clause: its mode, the names after OF (none: every table), what a held row does.
#[derive(Debug, Clone)]
struct Clause {
    mode: LockMode,
    of: Option<String>,
    held: Held,
}

/// The locking clauses of a query.
#[derive(Debug, Clone)]
pub(crate) struct RowLocking {
    clauses: Vec<Clause>,
}

impl RowLocking {
    /// The clauses of `query`, None when it has none; an error when the query is not one rows
    /// can be locked for (PostgreSQL's 0A000: DISTINCT, GROUP BY, HAVING, aggregates, window
    /// functions, set operations).
    pub(crate) fn of(query: &Query) -> Result<Option<RowLocking>> {
        if query.locks.is_empty() {
            return Ok(None);
        }
        let first = clause_name(&query.locks[0]);
        let not_allowed = |with: &str| Error::LockingNotAllowed {
            clause: first.clone(),
            with: with.to_string(),
        };
        let SetExpr::Select(select) = query.body.as_ref() else {
            return Err(not_allowed("UNION/INTERSECT/EXCEPT"));
        };
        if select.distinct.is_some() {
            return Err(not_allowed("DISTINCT clause"));
        }
        if !matches!(&select.group_by, GroupByExpr::Expressions(exprs, _) if exprs.is_empty()) {
            return Err(not_allowed("GROUP BY clause"));
        }
        if select.having.is_some() {
            return Err(not_allowed("HAVING clause"));
        }
        let mut functions = FunctionKinds::default();
        for item in &select.projection {
            if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
                let _ = expr.visit(&mut functions);
            }
        }
        if let Some(order_by) = &query.order_by {
            let _ = order_by.visit(&mut functions);
        }
        if functions.window {
            return Err(not_allowed("window functions"));
        }
        if functions.aggregate {
            return Err(not_allowed("aggregate functions"));
        }
        let clauses = query
            .locks
            .iter()
            .map(|lock| Clause {
                mode: match lock.lock_type {
                    LockType::Update => LockMode::Exclusive,
                    LockType::Share => LockMode::Shared,
                },
                of: lock.of.as_ref().map(|name| {
                    name.0
                        .last()
                        .and_then(|part| part.as_ident())
                        .map_or_else(|| name.to_string(), ident_name)
                }),
                held: match lock.nonblock {
                    None => Held::Wait,
                    Some(NonBlock::Nowait) => Held::NoWait,
                    Some(NonBlock::SkipLocked) => Held::SkipLocked,
                },
            })
            .collect();
        Ok(Some(RowLocking { clauses }))
    }

    /// How the table that goes by `alias` in FROM is locked, None when no clause names it.
    /// Several clauses naming one table: the strongest mode, and NOWAIT before SKIP LOCKED
    /// before waiting, as in PostgreSQL.
    pub(crate) fn for_table(&self, alias: &str) -> Option<(LockMode, Held)> {
        let mut found: Option<(LockMode, Held)> = None;
        for clause in &self.clauses {
            if clause.of.as_deref().is_some_and(|of| of != alias) {
                continue;
            }
            found = Some(match found {
                None => (clause.mode, clause.held),
                Some((mode, held)) => (
                    if mode == LockMode::Exclusive || clause.mode == LockMode::Exclusive {
                        LockMode::Exclusive
                    } else {
                        LockMode::Shared
                    },
                    match (held, clause.held) {
                        (Held::NoWait, _) | (_, Held::NoWait) => Held::NoWait,
                        (Held::SkipLocked, _) | (_, Held::SkipLocked) => Held::SkipLocked,
                        _ => Held::Wait,
                    },
                ),
            });
        }
        found
    }

    /// The names the clauses' OF lists give (each must be a table of the FROM list).
    pub(crate) fn named(&self) -> impl Iterator<Item = &str> {
        self.clauses
            .iter()
            .filter_map(|clause| clause.of.as_deref())
    }

    /// Whether a clause skips held rows.
    pub(crate) fn skips_locked(&self) -> bool {
        self.clauses
            .iter()
            .any(|clause| clause.held == Held::SkipLocked)
    }
}

/// The clause's own words for messages: `FOR UPDATE` or `FOR SHARE`.
fn clause_name(lock: &LockClause) -> String {
    format!("FOR {}", lock.lock_type)
}

/// Whether expressions call an aggregate or a window function.
#[derive(Default)]
struct FunctionKinds {
    aggregate: bool,
    window: bool,
}

impl Visitor for FunctionKinds {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        // A subquery's own functions are its own.
        ControlFlow::Break(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr {
            if function.over.is_some() {
                self.window = true;
            }
            let name = function.name.to_string().to_lowercase();
            if AGGREGATES.contains(&name.as_str()) {
                self.aggregate = true;
            }
        }
        ControlFlow::Continue(())
    }
}

/// Refuses a locking clause anywhere but on the statement's own query (a subquery's, a CTE's,
/// an INSERT's source): rowdex locks the rows of a top-level SELECT only, and a clause it
/// would not honour is an error, not ignored.
pub(crate) fn check_locking_placement(statement: &Statement) -> Result<()> {
    struct Nested {
        top: bool,
        found: bool,
    }
    impl Visitor for Nested {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            let top = std::mem::replace(&mut self.top, false);
            if !top && !query.locks.is_empty() {
                self.found = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    // EXPLAIN shows the plan of the query it names, locking clause and all.
    let statement = match statement {
        Statement::Explain { statement, .. } => statement.as_ref(),
        other => other,
    };
    let mut nested = Nested {
        top: matches!(statement, Statement::Query(_)),
        found: false,
    };
    let _ = statement.visit(&mut nested);
    if nested.found {
        return Err(Error::Unsupported {
            what: "FOR UPDATE/SHARE in a subquery, a WITH query or an INSERT's source \
                   (lock the rows with a SELECT ... FOR UPDATE of its own first)"
                .to_string(),
        });
    }
    Ok(())
}

/// PostgreSQL's forms of a locking clause the parser does not read, in the forms it does:
/// `FOR NO KEY UPDATE` -> `FOR UPDATE`, `FOR KEY SHARE` -> `FOR SHARE`, and `OF a, b ...` ->
/// one clause per name, each with the list's NOWAIT or SKIP LOCKED. Returns whether the
/// tokens hold a locking clause at all.
pub(crate) fn locking_clause_forms(tokens: &mut Vec<TokenWithSpan>) -> bool {
    let mut found = false;
    let mut i = 0;
    while i < tokens.len() {
        if !is_keyword(tokens, i, Keyword::FOR) {
            i += 1;
            continue;
        }
        // FOR [NO] KEY: drop the words that only PostgreSQL's weaker modes have.
        let mut at = significant(tokens, i + 1);
        if let Some(no) = at.filter(|&j| is_keyword(tokens, j, Keyword::NO))
            && let Some(key) =
                significant(tokens, no + 1).filter(|&k| is_keyword(tokens, k, Keyword::KEY))
            && significant(tokens, key + 1).is_some_and(|u| is_keyword(tokens, u, Keyword::UPDATE))
        {
            tokens.drain(no..=key);
            at = significant(tokens, i + 1);
        } else if let Some(key) = at.filter(|&j| is_keyword(tokens, j, Keyword::KEY))
            && significant(tokens, key + 1).is_some_and(|s| is_keyword(tokens, s, Keyword::SHARE))
        {
            tokens.drain(key..=key);
            at = significant(tokens, i + 1);
        }
        let Some(strength) = at.filter(|&j| {
            is_keyword(tokens, j, Keyword::UPDATE) || is_keyword(tokens, j, Keyword::SHARE)
        }) else {
            i += 1;
            continue;
        };
        found = true;
        split_of_list(tokens, i, strength);
        i = strength + 1;
    }
    found
}

/// `FOR x OF a, b, c [tail]` (FOR at `start`, x at `strength`) as `FOR x OF a [tail] FOR x OF
/// b [tail] FOR x OF c [tail]`.
fn split_of_list(tokens: &mut Vec<TokenWithSpan>, start: usize, strength: usize) {
    let Some(of) =
        significant(tokens, strength + 1).filter(|&j| is_keyword(tokens, j, Keyword::OF))
    else {
        return;
    };
    // The names: words and dots up to the end of the list.
    let mut names: Vec<Vec<TokenWithSpan>> = vec![Vec::new()];
    let mut end = of + 1;
    while let Some(j) = significant(tokens, end) {
        match &tokens[j].token {
            Token::Comma => names.push(Vec::new()),
            Token::Period => names
                .last_mut()
                .into_iter()
                .for_each(|n| n.push(tokens[j].clone())),
            Token::Word(word)
                if !matches!(word.keyword, Keyword::NOWAIT | Keyword::SKIP | Keyword::FOR)
                    || word.quote_style.is_some() =>
            {
                names
                    .last_mut()
                    .into_iter()
                    .for_each(|n| n.push(tokens[j].clone()));
            }
            _ => break,
        }
        end = j + 1;
    }
    if names.len() < 2 || names.iter().any(Vec::is_empty) {
        return;
    }
    // The tail: NOWAIT or SKIP LOCKED.
    let mut tail: Vec<TokenWithSpan> = Vec::new();
    let mut after = end;
    if let Some(j) = significant(tokens, end) {
        if is_keyword(tokens, j, Keyword::NOWAIT) {
            tail.push(tokens[j].clone());
            after = j + 1;
        } else if is_keyword(tokens, j, Keyword::SKIP)
            && let Some(k) =
                significant(tokens, j + 1).filter(|&k| is_keyword(tokens, k, Keyword::LOCKED))
        {
            tail.extend([tokens[j].clone(), space(&tokens[j]), tokens[k].clone()]);
            after = k + 1;
        }
    }
    let mut clauses: Vec<TokenWithSpan> = Vec::new();
    for name in names {
        clauses.extend([
            tokens[start].clone(),
            space(&tokens[start]),
            tokens[strength].clone(),
            space(&tokens[start]),
            tokens[of].clone(),
            space(&tokens[start]),
        ]);
        clauses.extend(name);
        if !tail.is_empty() {
            clauses.push(space(&tokens[start]));
            clauses.extend(tail.iter().cloned());
        }
        clauses.push(space(&tokens[start]));
    }
    tokens.splice(start..after, clauses);
}

fn is_keyword(tokens: &[TokenWithSpan], at: usize, keyword: Keyword) -> bool {
    matches!(&tokens[at].token, Token::Word(word) if word.keyword == keyword && word.quote_style.is_none())
}

fn space(like: &TokenWithSpan) -> TokenWithSpan {
    TokenWithSpan::new(
        Token::Whitespace(datafusion::sql::sqlparser::tokenizer::Whitespace::Space),
        like.span,
    )
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;

    use super::*;

    fn parsed(sql: &str) -> Statement {
        let dialect = GenericDialect {};
        let mut tokens = Tokenizer::new(&dialect, sql)
            .tokenize_with_location()
            .expect("tokens");
        locking_clause_forms(&mut tokens);
        Parser::new(&dialect)
            .with_tokens_with_locations(tokens)
            .parse_statement()
            .expect("parses")
    }

    fn locking(sql: &str) -> Result<Option<RowLocking>> {
        match parsed(sql) {
            Statement::Query(query) => RowLocking::of(&query),
            other => panic!("not a query: {other}"),
        }
    }

    #[test]
    fn postgresql_forms_read_as_the_parsers() {
        for (sql, read) in [
            (
                "SELECT * FROM a FOR NO KEY UPDATE",
                "SELECT * FROM a FOR UPDATE",
            ),
            (
                "SELECT * FROM a FOR KEY SHARE SKIP LOCKED",
                "SELECT * FROM a FOR SHARE SKIP LOCKED",
            ),
            (
                "SELECT * FROM a, s.b FOR UPDATE OF a, s.b NOWAIT",
                "SELECT * FROM a, s.b FOR UPDATE OF a NOWAIT FOR UPDATE OF s.b NOWAIT",
            ),
            (
                "SELECT * FROM a, b FOR SHARE OF a, b FOR UPDATE OF a",
                "SELECT * FROM a, b FOR SHARE OF a FOR SHARE OF b FOR UPDATE OF a",
            ),
        ] {
            assert_eq!(parsed(sql).to_string(), read);
        }
    }

    #[test]
    fn clauses_name_tables_modes_and_waits() {
        let clauses = locking(
            "SELECT * FROM a, b FOR SHARE OF a SKIP LOCKED FOR UPDATE OF b FOR SHARE OF b NOWAIT",
        )
        .expect("lockable")
        .expect("clauses");
        assert_eq!(
            clauses.for_table("a"),
            Some((LockMode::Shared, Held::SkipLocked))
        );
        assert_eq!(
            clauses.for_table("b"),
            Some((LockMode::Exclusive, Held::NoWait))
        );
        assert_eq!(clauses.for_table("c"), None);
        assert!(clauses.skips_locked());
        assert_eq!(clauses.named().collect::<Vec<_>>(), ["a", "b", "b"]);
        assert!(locking("SELECT * FROM a").expect("plain").is_none());
    }

    #[test]
    fn queries_rows_cannot_be_locked_for_are_refused() {
        for (sql, with) in [
            ("SELECT count(*) FROM a FOR UPDATE", "aggregate functions"),
            ("SELECT DISTINCT x FROM a FOR UPDATE", "DISTINCT clause"),
            ("SELECT x FROM a GROUP BY x FOR SHARE", "GROUP BY clause"),
            (
                "SELECT x FROM a UNION SELECT x FROM b FOR UPDATE",
                "UNION/INTERSECT/EXCEPT",
            ),
            (
                "SELECT row_number() OVER () FROM a FOR UPDATE",
                "window functions",
            ),
        ] {
            let error = locking(sql).expect_err(sql);
            assert!(error.to_string().ends_with(with), "{sql}: {error}");
        }
        assert!(check_locking_placement(&parsed("SELECT * FROM a FOR UPDATE")).is_ok());
        assert!(
            check_locking_placement(&parsed(
                "SELECT * FROM a WHERE id IN (SELECT id FROM b FOR UPDATE)"
            ))
            .is_err()
        );
        assert!(
            check_locking_placement(&parsed("INSERT INTO a SELECT * FROM b FOR UPDATE")).is_err()
        );
    }
}
