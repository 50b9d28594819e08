//! `x = ANY(array)` and `x <> ALL(array)` over a list of values, as PostgreSQL clients write
//! them with one array parameter (`WHERE id = ANY($1)`, a driver's list bound as `int4[]` or
//! `text[]`) or an array literal (`ANY('{1,2,3}')`, `ANY('{a,b}'::text[])`). rowdex has no
//! array type: such a test is the IN list it means, `x IN (1, 2, 3)` (`NOT IN` for `<> ALL`),
//! which the access paths answer with point gets; an empty array is the constant it always is.
//!
//! A parameter still unbound (while a prepared statement is described) becomes `x IN ($1)`,
//! so that planning types it as `x`'s element; the caller reports it as an array of that type.
//! A bound one is the array's text (the server writes every array parameter so: `{1,2}`,
//! `{"a b",NULL}`), spelled out element by element: a quoted element is text, a bare one a
//! number when it reads as one.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Statement, Value, visit_expressions_mut,
};

/// One element of an array's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Element {
    Null,
    /// Written in double quotes: always text.
    Quoted(String),
    /// Written bare: a number when it reads as one, else text.
    Bare(String),
}

/// The elements of a one-dimensional array written as PostgreSQL writes it (`{1,2}`,
/// `{"a,b",NULL}`, `{}`); None for text that is not one.
pub(crate) fn array_elements(text: &str) -> Option<Vec<Element>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut elements = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            // `{}`, or text that ends after a comma (refused below).
            break;
        }
        let element = if chars.peek() == Some(&'"') {
            chars.next();
            let mut value = String::new();
            loop {
                match chars.next()? {
                    '\\' => value.push(chars.next()?),
                    '"' => break,
                    c => value.push(c),
                }
            }
            Element::Quoted(value)
        } else {
            let mut value = String::new();
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' || c == '}' || c == '"' {
                    // A nested array or a stray quote: not a one-dimensional array.
                    return None;
                }
                value.push(c);
                chars.next();
            }
            let value = value.trim().to_string();
            if value.eq_ignore_ascii_case("NULL") {
                Element::Null
            } else if value.is_empty() {
                return None;
            } else {
                Element::Bare(value)
            }
        };
        elements.push(element);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => break,
            Some(',') if chars.peek().is_some() => {}
            Some(_) => return None,
        }
    }
    Some(elements)
}

/// The SQL literal for an element.
fn element_literal(element: &Element) -> Expr {
    match element {
        Element::Null => Expr::value(Value::Null),
        Element::Quoted(text) => Expr::value(Value::SingleQuotedString(text.clone())),
        Element::Bare(text) if text.parse::<f64>().is_ok_and(f64::is_finite) => {
            Expr::value(Value::Number(text.clone(), false))
        }
        Element::Bare(text) => Expr::value(Value::SingleQuotedString(text.clone())),
    }
}

/// What an ANY's or ALL's operand is: an array parameter, an array literal, or neither.
enum Operand<'a> {
    Placeholder(&'a str),
    Literal(&'a str),
}

/// The operand of `ANY(...)`, looking through a cast to an array type.
fn operand(expr: &Expr) -> Option<Operand<'_>> {
    match expr {
        Expr::Nested(inner) => operand(inner),
        Expr::Cast { expr, .. } => operand(expr),
        Expr::Value(value) => match &value.value {
            Value::Placeholder(name) => Some(Operand::Placeholder(name)),
            Value::SingleQuotedString(text) => Some(Operand::Literal(text)),
            _ => None,
        },
        _ => None,
    }
}

/// Rewrites each `x = ANY(array)` (or SOME) and `x <> ALL(array)` over a parameter or an array
/// literal into an IN list; returns the parameters (`$1`, ...) that were such arrays.
pub(crate) fn any_as_in_lists(statement: &mut Statement) -> Vec<String> {
    let mut arrays = Vec::new();
    let _ = visit_expressions_mut(statement, |expr| {
        let (left, right, negated) = match expr {
            Expr::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            } => (left, right, false),
            Expr::AllOp {
                left,
                compare_op: BinaryOperator::NotEq,
                right,
            } => (left, right, true),
            _ => return ControlFlow::<()>::Continue(()),
        };
        let list = match operand(right) {
            Some(Operand::Placeholder(name)) => {
                arrays.push(name.to_string());
                vec![Expr::value(Value::Placeholder(name.to_string()))]
            }
            Some(Operand::Literal(text)) => match array_elements(text) {
                Some(elements) => elements.iter().map(element_literal).collect(),
                None => return ControlFlow::Continue(()),
            },
            None => return ControlFlow::Continue(()),
        };
        let left = std::mem::replace(left.as_mut(), Expr::value(Value::Null));
        *expr = if list.is_empty() {
            // Nothing equals an element of the empty array: false (true for `<> ALL`), even
            // for a NULL `x`.
            Expr::value(Value::Boolean(negated))
        } else {
            Expr::Nested(Box::new(Expr::InList {
                expr: Box::new(left),
                list,
                negated,
            }))
        };
        ControlFlow::Continue(())
    });
    arrays
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewritten(sql: &str) -> (String, Vec<String>) {
        let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        let arrays = any_as_in_lists(&mut statement);
        (statement.to_string(), arrays)
    }

    #[test]
    fn array_texts_are_read_element_by_element() {
        use Element::*;
        assert_eq!(array_elements("{}"), Some(vec![]));
        assert_eq!(
            array_elements(r#"{1, "a,b" ,NULL,"say \"hi\""}"#),
            Some(vec![
                Bare("1".into()),
                Quoted("a,b".into()),
                Null,
                Quoted("say \"hi\"".into())
            ])
        );
        assert_eq!(array_elements("{{1},{2}}"), None);
        assert_eq!(array_elements("{1,}"), None);
        assert_eq!(array_elements("1,2"), None);
    }

    #[test]
    fn any_over_an_array_is_an_in_list() {
        assert_eq!(
            rewritten("SELECT * FROM t WHERE id = ANY($1) AND k <> ALL($2::text[])"),
            (
                "SELECT * FROM t WHERE (id IN ($1)) AND (k NOT IN ($2))".to_string(),
                vec!["$1".to_string(), "$2".to_string()]
            )
        );
        assert_eq!(
            rewritten("SELECT * FROM t WHERE id = ANY('{3,1}') OR n = ANY('{\"x\"}'::text[])").0,
            "SELECT * FROM t WHERE (id IN (3, 1)) OR (n IN ('x'))"
        );
        assert_eq!(
            rewritten("SELECT * FROM t WHERE id = ANY('{}')").0,
            "SELECT * FROM t WHERE false"
        );
        // A subquery stays as it is.
        let subquery = "SELECT * FROM t WHERE id = ANY(SELECT id FROM u)";
        assert_eq!(rewritten(subquery).1, Vec::<String>::new());
    }
}
