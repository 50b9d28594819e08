//! `jsonb` values: JSON normalised as PostgreSQL's `jsonb` holds it. An object's keys are
//! unique (the last of a repeated key wins) and sorted shorter first, then bytewise; numbers
//! are in `numeric`'s canonical text; strings hold no `\u0000`. The text form
//! ([`Jsonb::to_text`]) is PostgreSQL's `jsonb_out`: `{"a": 1, "b": [1, 2]}`.
//!
//! Besides reading and writing, the operations of the `jsonb` operators live here: member and
//! element access, containment (`@>`), key existence (`?`), comparison and `jsonb_set`.

use std::cmp::Ordering;

use super::error::JsonError;
use super::number::{canonical_number, compare_numbers};
use super::parse::{JsonNode, Spanned, parse_json, resolve_index};
use super::string::write_json_string;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jsonb {
    Null,
    Bool(bool),
    /// In `numeric`'s canonical text.
    Number(String),
    String(String),
    Array(Vec<Jsonb>),
    /// Keys unique, in [`key_order`].
    Object(Vec<(String, Jsonb)>),
}

/// The order of an object's keys in `jsonb`: shorter first, then bytewise.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

impl Jsonb {
    /// Reads JSON text as a `jsonb` value.
    pub fn parse(text: &str) -> Result<Jsonb, JsonError> {
        Jsonb::from_node(&parse_json(text)?)
    }

    /// Normalises one parsed value.
    pub fn from_node(value: &Spanned<'_>) -> Result<Jsonb, JsonError> {
        Ok(match &value.node {
            JsonNode::Null => Jsonb::Null,
            JsonNode::Bool(b) => Jsonb::Bool(*b),
            JsonNode::Number(text) => Jsonb::Number(canonical_number(text)?),
            JsonNode::String(s) => Jsonb::String(checked_string(s)?),
            JsonNode::Array(items) => Jsonb::Array(
                items
                    .iter()
                    .map(Jsonb::from_node)
                    .collect::<Result<_, _>>()?,
            ),
            JsonNode::Object(members) => {
                let mut pairs = Vec::with_capacity(members.len());
                for (key, value) in members {
                    pairs.push((checked_string(key)?, Jsonb::from_node(value)?));
                }
                Jsonb::object(pairs)
            }
        })
    }

    /// An object of `pairs` in any order, repeated keys resolved to their last value.
    pub fn object(mut pairs: Vec<(String, Jsonb)>) -> Jsonb {
        // A stable sort keeps repeated keys in the order written; the last one stays.
        pairs.sort_by(|(a, _), (b, _)| key_order(a, b));
        let mut unique: Vec<(String, Jsonb)> = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            match unique.last_mut() {
                Some((last, slot)) if *last == key => *slot = value,
                _ => unique.push((key, value)),
            }
        }
        Jsonb::Object(unique)
    }

    /// PostgreSQL's `jsonb_out` text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out);
        out
    }

    pub fn write_text(&self, out: &mut String) {
        match self {
            Jsonb::Null => out.push_str("null"),
            Jsonb::Bool(true) => out.push_str("true"),
            Jsonb::Bool(false) => out.push_str("false"),
            Jsonb::Number(n) => out.push_str(n),
            Jsonb::String(s) => write_json_string(out, s),
            Jsonb::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write_text(out);
                }
                out.push(']');
            }
            Jsonb::Object(pairs) => {
                out.push('{');
                for (i, (key, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_json_string(out, key);
                    out.push_str(": ");
                    value.write_text(out);
                }
                out.push('}');
            }
        }
    }

    /// The value as `->>` gives it: a string's text, null as None, anything else as its text.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Jsonb::Null => None,
            Jsonb::String(s) => Some(s.clone()),
            other => Some(other.to_text()),
        }
    }

    /// `jsonb_typeof`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "number",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    /// Member `key` of an object.
    pub fn field(&self, key: &str) -> Option<&Jsonb> {
        match self {
            Jsonb::Object(pairs) => pairs
                .binary_search_by(|(k, _)| key_order(k, key))
                .ok()
                .map(|at| &pairs[at].1),
            _ => None,
        }
    }

    /// Element `index` of an array, counted from the end when negative.
    pub fn element(&self, index: i64) -> Option<&Jsonb> {
        match self {
            Jsonb::Array(items) => items.get(resolve_index(index, items.len())?),
            _ => None,
        }
    }

    /// The value at `path` (`#>`): each step a key of an object or an integer index of an
    /// array; None where a step finds nothing.
    pub fn at_path<S: AsRef<str>>(&self, path: &[S]) -> Option<&Jsonb> {
        path.iter().try_fold(self, |value, step| {
            let step = step.as_ref();
            match value {
                Jsonb::Object(_) => value.field(step),
                Jsonb::Array(_) => value.element(step.trim().parse().ok()?),
                _ => None,
            }
        })
    }

    /// `?`: whether `key` is a key of the object, or a string element of the array (or the
    /// string itself, for a scalar).
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Jsonb::Object(_) => self.field(key).is_some(),
            Jsonb::Array(items) => items
                .iter()
                .any(|item| matches!(item, Jsonb::String(s) if s == key)),
            Jsonb::String(s) => s == key,
            _ => false,
        }
    }

    /// `@>`: whether `other` is contained in this value, by PostgreSQL's rules: an object
    /// contains the pairs it has (values contained in turn), an array the values some element
    /// of it contains, a scalar only itself; at the top level an array also contains a scalar
    /// it holds.
    pub fn contains(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Array(items), scalar) if scalar.is_scalar() => {
                items.iter().any(|item| item.same_scalar(scalar))
            }
            _ => self.contains_within(other),
        }
    }

    fn contains_within(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Object(_), Jsonb::Object(wanted)) => wanted.iter().all(|(key, value)| {
                self.field(key)
                    .is_some_and(|have| have.contains_within(value))
            }),
            (Jsonb::Array(items), Jsonb::Array(wanted)) => wanted.iter().all(|value| {
                items.iter().any(|item| {
                    if value.is_scalar() {
                        item.same_scalar(value)
                    } else {
                        item.contains_within(value)
                    }
                })
            }),
            (a, b) if a.is_scalar() => a.same_scalar(b),
            _ => false,
        }
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Jsonb::Array(_) | Jsonb::Object(_))
    }

    fn same_scalar(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Number(a), Jsonb::Number(b)) => compare_numbers(a, b) == Ordering::Equal,
            (a, b) if a.is_scalar() => a == b,
            _ => false,
        }
    }

    /// PostgreSQL's `jsonb` ordering: Object > Array > Boolean > Number > String > Null; an
    /// object with more pairs, an array with more elements is greater; containers of equal
    /// size compare member by member (keys, then values), numbers by value, strings
    /// bytewise. The one exception PostgreSQL keeps: an empty top-level array sorts below
    /// null.
    pub fn compare(&self, other: &Jsonb) -> Ordering {
        let empty_array = |v: &Jsonb| matches!(v, Jsonb::Array(items) if items.is_empty());
        match (empty_array(self), empty_array(other)) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self.compare_within(other),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Jsonb::Null => 0,
            Jsonb::String(_) => 1,
            Jsonb::Number(_) => 2,
            Jsonb::Bool(_) => 3,
            Jsonb::Array(_) => 4,
            Jsonb::Object(_) => 5,
        }
    }

    fn compare_within(&self, other: &Jsonb) -> Ordering {
        match (self, other) {
            (Jsonb::Number(a), Jsonb::Number(b)) => compare_numbers(a, b),
            (Jsonb::String(a), Jsonb::String(b)) => a.cmp(b),
            (Jsonb::Bool(a), Jsonb::Bool(b)) => a.cmp(b),
            (Jsonb::Array(a), Jsonb::Array(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.compare_within(y))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            (Jsonb::Object(a), Jsonb::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|((ka, va), (kb, vb))| {
                        key_order(ka, kb).then_with(|| va.compare_within(vb))
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }

    /// `jsonb_set(self, path, value, create_missing)`: the value at `path` replaced by
    /// `value`; a missing last step is added when `create_missing` (a new key, or an element
    /// past either end of an array); anything else missing leaves the value as it was. An
    /// array step that is not an integer is an error (its position, from 1, and text).
    pub fn set_path<S: AsRef<str>>(
        &self,
        path: &[S],
        value: &Jsonb,
        create_missing: bool,
    ) -> Result<Jsonb, (usize, String)> {
        let mut out = self.clone();
        set_in(&mut out, path, 0, value, create_missing)?;
        Ok(out)
    }

    /// `||` of two `jsonb` values: objects merge (the right's keys win), arrays concatenate,
    /// and anything else is wrapped in an array first.
    pub fn concat(&self, other: &Jsonb) -> Jsonb {
        match (self, other) {
            (Jsonb::Object(a), Jsonb::Object(b)) => {
                Jsonb::object(a.iter().chain(b).cloned().collect())
            }
            (a, b) => {
                let items = |v: &Jsonb| match v {
                    Jsonb::Array(items) => items.clone(),
                    other => vec![other.clone()],
                };
                let mut all = items(a);
                all.extend(items(b));
                Jsonb::Array(all)
            }
        }
    }

    /// `-` of a key: the object without it, or the array without its string elements equal
    /// to it.
    pub fn without_key(&self, key: &str) -> Jsonb {
        match self {
            Jsonb::Object(pairs) => {
                Jsonb::Object(pairs.iter().filter(|(k, _)| k != key).cloned().collect())
            }
            Jsonb::Array(items) => Jsonb::Array(
                items
                    .iter()
                    .filter(|item| !matches!(item, Jsonb::String(s) if s == key))
                    .cloned()
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

fn set_in<S: AsRef<str>>(
    target: &mut Jsonb,
    path: &[S],
    depth: usize,
    value: &Jsonb,
    create_missing: bool,
) -> Result<(), (usize, String)> {
    let Some(step) = path.get(depth).map(AsRef::as_ref) else {
        return Ok(());
    };
    let last = depth + 1 == path.len();
    match target {
        Jsonb::Object(pairs) => match pairs.binary_search_by(|(k, _)| key_order(k, step)) {
            Ok(at) if last => pairs[at].1 = value.clone(),
            Ok(at) => set_in(&mut pairs[at].1, path, depth + 1, value, create_missing)?,
            Err(at) if last && create_missing => {
                pairs.insert(at, (step.to_string(), value.clone()));
            }
            Err(_) => {}
        },
        Jsonb::Array(items) => {
            let index: i64 = step
                .trim()
                .parse()
                .map_err(|_| (depth + 1, step.to_string()))?;
            match resolve_index(index, items.len()) {
                Some(at) if last => items[at] = value.clone(),
                Some(at) => set_in(&mut items[at], path, depth + 1, value, create_missing)?,
                None if last && create_missing => {
                    if index < 0 {
                        items.insert(0, value.clone());
                    } else {
                        items.push(value.clone());
                    }
                }
                None => {}
            }
        }
        _ => {}
    }
    Ok(())
}

/// A string of a `jsonb`: one holding `\u0000` is refused, as PostgreSQL's text cannot hold it.
fn checked_string(s: &str) -> Result<String, JsonError> {
    if s.contains('\0') {
        return Err(JsonError::UnsupportedEscape {
            detail: "\\u0000 cannot be converted to text.".to_string(),
        });
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonb(text: &str) -> Jsonb {
        Jsonb::parse(text).expect("valid json")
    }

    #[test]
    fn text_is_normalised_as_postgresql_writes_jsonb() {
        assert_eq!(
            jsonb(r#"{"bb":1,"a":[1e2, "x",{"z":null,"y":true}],"bb":2.50}"#).to_text(),
            r#"{"a": [100, "x", {"y": true, "z": null}], "bb": 2.50}"#
        );
        assert_eq!(jsonb(" [ ] ").to_text(), "[]");
        assert_eq!(jsonb("{}").to_text(), "{}");
        assert_eq!(jsonb(r#""a\u0001""#).to_text(), r#""a\u0001""#);
        assert!(matches!(
            Jsonb::parse(r#""\u0000""#),
            Err(JsonError::UnsupportedEscape { .. })
        ));
    }

    #[test]
    fn access_by_key_index_and_path() {
        let doc = jsonb(r#"{"a": {"b": [10, 20, {"c": "x"}]}, "n": null}"#);
        assert_eq!(doc.field("n"), Some(&Jsonb::Null));
        assert_eq!(doc.field("zz"), None);
        assert_eq!(
            doc.at_path(&["a", "b", "-1", "c"]).and_then(Jsonb::as_text),
            Some("x".to_string())
        );
        assert_eq!(doc.at_path(&["a", "b", "x"]), None);
        assert_eq!(doc.at_path::<&str>(&[]), Some(&doc));
        assert!(doc.has_key("a") && !doc.has_key("b"));
        assert!(jsonb(r#"["a", 1]"#).has_key("a"));
    }

    #[test]
    fn containment_follows_postgresql() {
        let cases = [
            (
                r#"{"a": 1, "b": {"c": [1, 2, 3]}}"#,
                r#"{"b": {"c": [3, 1]}}"#,
                true,
            ),
            (r#"{"a": 1}"#, r#"{"a": 1.0}"#, true),
            (r#"{"a": 1}"#, r#"{"a": 2}"#, false),
            (r#"[1, 2, [3, 4]]"#, r#"[[4]]"#, true),
            (r#"[1, 2, [3, 4]]"#, r#"[4]"#, false),
            (r#"[1, 2]"#, "1", true),
            ("1", "[1]", false),
            (r#""a""#, r#""a""#, true),
            (r#"{"a": [1]}"#, r#"{"a": 1}"#, false),
            ("[]", "[]", true),
            (r#"{"a": 1}"#, "{}", true),
        ];
        for (have, wanted, expected) in cases {
            assert_eq!(
                jsonb(have).contains(&jsonb(wanted)),
                expected,
                "{have} @> {wanted}"
            );
        }
    }

    #[test]
    fn ordering_ranks_types_then_sizes_then_members() {
        let ascending = [
            "[]",
            "null",
            r#""a""#,
            r#""b""#,
            "-1",
            "1",
            "false",
            "true",
            "[5]",
            "[1, 2]",
            r#"{"b": 1}"#,
            r#"{"a": 1, "b": 1}"#,
            r#"{"a": 1, "b": 2}"#,
        ];
        for (i, a) in ascending.iter().enumerate() {
            for (j, b) in ascending.iter().enumerate() {
                assert_eq!(jsonb(a).compare(&jsonb(b)), i.cmp(&j), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn set_replaces_adds_or_leaves_alone() {
        let doc = jsonb(r#"{"a": [1, 2], "b": {"c": 1}}"#);
        let set =
            |path: &[&str], create| doc.set_path(path, &jsonb("9"), create).map(|v| v.to_text());
        assert_eq!(
            set(&["b", "c"], true).as_deref(),
            Ok(r#"{"a": [1, 2], "b": {"c": 9}}"#)
        );
        assert_eq!(
            set(&["b", "d"], true).as_deref(),
            Ok(r#"{"a": [1, 2], "b": {"c": 1, "d": 9}}"#)
        );
        assert_eq!(
            set(&["b", "d"], false).as_deref(),
            Ok(r#"{"a": [1, 2], "b": {"c": 1}}"#)
        );
        assert_eq!(
            set(&["a", "5"], true).as_deref(),
            Ok(r#"{"a": [1, 2, 9], "b": {"c": 1}}"#)
        );
        assert_eq!(
            set(&["a", "-9"], true).as_deref(),
            Ok(r#"{"a": [9, 1, 2], "b": {"c": 1}}"#)
        );
        assert_eq!(
            set(&["x", "y"], true).as_deref(),
            Ok(doc.to_text().as_str())
        );
        assert_eq!(set(&["a", "k"], true), Err((2, "k".to_string())));
    }

    #[test]
    fn concatenation_and_removal() {
        assert_eq!(
            jsonb(r#"{"a": 1, "b": 2}"#)
                .concat(&jsonb(r#"{"b": 3}"#))
                .to_text(),
            r#"{"a": 1, "b": 3}"#
        );
        assert_eq!(jsonb("[1]").concat(&jsonb("2")).to_text(), "[1, 2]");
        assert_eq!(
            jsonb(r#"{"a": 1, "b": 2}"#).without_key("a").to_text(),
            r#"{"b": 2}"#
        );
    }
}
