//! The JSON functions, each a [`JsonFunction`]: an operation ([`JsonOp`]) under one of
//! PostgreSQL's names. They read their arguments row by row as SQL values and are strict (a
//! NULL argument gives NULL), except the builders, which write NULL as JSON's `null`.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Int32Builder, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};
use rowdex_codec::json::{JsonError, Jsonb, Spanned, parse_json, sort_key};

use super::convert::{json_text, key_text, path_steps};
use super::kind::JsonKind;
use crate::error::Error;

/// What a JSON function does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum JsonOp {
    /// `json_in(text)`, `jsonb_in(text)`: the casts.
    In(JsonKind),
    /// `->`: a member by key or an element by index, as JSON of the operand's kind.
    Get,
    /// `->>`: the same as text.
    GetText,
    /// `#>`: the value at a path (a text array).
    Path,
    /// `#>>`: the same as text.
    PathText,
    /// `jsonb_extract_path(json, VARIADIC text)`.
    ExtractPath,
    /// `jsonb_extract_path_text(json, VARIADIC text)`.
    ExtractPathText,
    /// `@>`.
    Contains,
    /// `<@`.
    ContainedBy,
    /// `?`.
    Exists,
    /// `?|`.
    ExistsAny,
    /// `?&`.
    ExistsAll,
    /// `||` of two `jsonb`.
    Concat,
    /// `-` of a key or an index.
    Delete,
    /// `jsonb_cmp`: -1, 0 or 1, what `<`, `>`, ... of two `jsonb` compare.
    Compare,
    /// `jsonb_typeof`.
    TypeOf,
    /// `jsonb_array_length`.
    ArrayLength,
    /// `jsonb_set(target, path, value [, create_missing])`.
    Set,
    /// `to_json`, `to_jsonb`.
    To(JsonKind),
    /// `json_build_object`, `jsonb_build_object`.
    BuildObject(JsonKind),
    /// `json_build_array`, `jsonb_build_array`.
    BuildArray(JsonKind),
    /// `jsonb_strip_nulls`: objects without their null members.
    StripNulls,
    /// `jsonb_sort_key`: bytes that sort as the values compare (what ORDER BY of a jsonb
    /// sorts by, `df::rules::jsonb_order`).
    SortKey,
}

/// The function ORDER BY of a jsonb sorts by.
pub(crate) const JSONB_SORT_KEY_FUNCTION: &str = "jsonb_sort_key";

/// One JSON function: `op` under `name`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct JsonFunction {
    name: &'static str,
    op: JsonOp,
    /// The kind of JSON the function gives where its operand does not say (its name's).
    kind: JsonKind,
    signature: Signature,
}

/// `jsonb_sort_key`, for the rule that sorts jsonb by it (`df::rules::jsonb_order`).
pub(crate) fn jsonb_sort_key_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(JsonFunction {
        name: JSONB_SORT_KEY_FUNCTION,
        op: JsonOp::SortKey,
        kind: JsonKind::Jsonb,
        signature: Signature::any(1, Volatility::Immutable),
    }))
}

/// Every JSON function, under each of its names.
pub(crate) fn json_functions() -> Vec<Arc<ScalarUDF>> {
    use JsonKind::{Json, Jsonb as B};
    use JsonOp::*;
    let fixed = |n: usize| Signature::any(n, Volatility::Immutable);
    let variadic = || Signature::variadic_any(Volatility::Immutable);
    let mut all = vec![
        ("json_in", In(Json), Json, fixed(1)),
        ("jsonb_in", In(B), B, fixed(1)),
        ("json_get", Get, Json, fixed(2)),
        ("json_object_field", Get, Json, fixed(2)),
        ("jsonb_object_field", Get, B, fixed(2)),
        ("json_array_element", Get, Json, fixed(2)),
        ("jsonb_array_element", Get, B, fixed(2)),
        ("json_get_text", GetText, Json, fixed(2)),
        ("json_object_field_text", GetText, Json, fixed(2)),
        ("jsonb_object_field_text", GetText, B, fixed(2)),
        ("json_array_element_text", GetText, Json, fixed(2)),
        ("jsonb_array_element_text", GetText, B, fixed(2)),
        ("json_get_path", Path, Json, fixed(2)),
        ("json_get_path_text", PathText, Json, fixed(2)),
        ("json_extract_path", ExtractPath, Json, variadic()),
        ("jsonb_extract_path", ExtractPath, B, variadic()),
        ("json_extract_path_text", ExtractPathText, Json, variadic()),
        ("jsonb_extract_path_text", ExtractPathText, B, variadic()),
        ("jsonb_contains", Contains, B, fixed(2)),
        ("jsonb_contained", ContainedBy, B, fixed(2)),
        ("jsonb_exists", Exists, B, fixed(2)),
        ("jsonb_exists_any", ExistsAny, B, fixed(2)),
        ("jsonb_exists_all", ExistsAll, B, fixed(2)),
        ("jsonb_concat", Concat, B, fixed(2)),
        ("jsonb_delete", Delete, B, fixed(2)),
        ("jsonb_cmp", Compare, B, fixed(2)),
        ("json_typeof", TypeOf, Json, fixed(1)),
        ("jsonb_typeof", TypeOf, B, fixed(1)),
        ("json_array_length", ArrayLength, Json, fixed(1)),
        ("jsonb_array_length", ArrayLength, B, fixed(1)),
        ("to_json", To(Json), Json, fixed(1)),
        ("to_jsonb", To(B), B, fixed(1)),
        ("json_build_object", BuildObject(Json), Json, variadic()),
        ("jsonb_build_object", BuildObject(B), B, variadic()),
        ("json_build_array", BuildArray(Json), Json, variadic()),
        ("jsonb_build_array", BuildArray(B), B, variadic()),
        ("json_strip_nulls", StripNulls, Json, fixed(1)),
        ("jsonb_strip_nulls", StripNulls, B, fixed(1)),
    ];
    all.push((
        "jsonb_set",
        Set,
        B,
        Signature::one_of(
            vec![TypeSignature::Any(3), TypeSignature::Any(4)],
            Volatility::Immutable,
        ),
    ));
    // The builders take no arguments as well (`jsonb_build_object()` is `{}`).
    for (_, op, _, signature) in &mut all {
        if matches!(op, BuildObject(_) | BuildArray(_)) {
            *signature = Signature::one_of(
                vec![TypeSignature::VariadicAny, TypeSignature::Nullary],
                Volatility::Immutable,
            );
        }
    }
    let mut functions: Vec<Arc<ScalarUDF>> = all
        .into_iter()
        .map(|(name, op, kind, signature)| {
            Arc::new(ScalarUDF::new_from_impl(JsonFunction {
                name,
                op,
                kind,
                signature,
            }))
        })
        .collect();
    // The one the ORDER BY rule calls, built in one place.
    functions.push(jsonb_sort_key_function());
    functions
}

/// What one row of a function gives.
enum Out {
    Bytes(Option<Vec<u8>>),
    Text(Option<String>),
    Bool(Option<bool>),
    Int(Option<i32>),
}

impl JsonFunction {
    /// The kind of JSON the function's result is, given its arguments' fields: the operand's
    /// for access to a part of it, the function's own otherwise.
    fn result_kind(&self, fields: &[FieldRef]) -> JsonKind {
        match self.op {
            JsonOp::Get | JsonOp::Path | JsonOp::ExtractPath | JsonOp::StripNulls => fields
                .first()
                .and_then(|f| JsonKind::of_field(f))
                .unwrap_or(self.kind),
            _ => self.kind,
        }
    }

    fn result_type(&self) -> DataType {
        match self.op {
            JsonOp::Contains
            | JsonOp::ContainedBy
            | JsonOp::Exists
            | JsonOp::ExistsAny
            | JsonOp::ExistsAll => DataType::Boolean,
            JsonOp::Compare | JsonOp::ArrayLength => DataType::Int32,
            JsonOp::SortKey => DataType::Binary,
            _ => DataType::Utf8,
        }
    }

    /// Whether the result is JSON (its field declares a kind) rather than text, a boolean or
    /// a number.
    fn gives_json(&self) -> bool {
        !matches!(
            self.op,
            JsonOp::GetText
                | JsonOp::PathText
                | JsonOp::ExtractPathText
                | JsonOp::TypeOf
                | JsonOp::Contains
                | JsonOp::ContainedBy
                | JsonOp::Exists
                | JsonOp::ExistsAny
                | JsonOp::ExistsAll
                | JsonOp::Compare
                | JsonOp::ArrayLength
                | JsonOp::SortKey
        )
    }

    /// One row: the arguments' values and fields.
    fn row(&self, args: &[ScalarValue], fields: &[FieldRef]) -> DfResult<Out> {
        let builder = matches!(self.op, JsonOp::BuildObject(_) | JsonOp::BuildArray(_));
        if !builder && args.iter().any(ScalarValue::is_null) {
            return Ok(match self.result_type() {
                DataType::Binary => Out::Bytes(None),
                DataType::Boolean => Out::Bool(None),
                DataType::Int32 => Out::Int(None),
                _ => Out::Text(None),
            });
        }
        let text = |i: usize| -> DfResult<String> { key_text(&args[i]) };
        // An operand of a JSON operator or function is JSON: a JSON value, or text read as
        // one (a literal is of no type until it meets the operator).
        let jsonb =
            |i: usize| -> DfResult<Jsonb> { Ok(Jsonb::parse(&text(i)?).map_err(Error::from)?) };
        let operand_kind = fields.first().and_then(|f| JsonKind::of_field(f));
        Ok(match self.op {
            JsonOp::In(JsonKind::Json) => {
                let text = text(0)?;
                parse_json(&text).map_err(Error::from)?;
                Out::Text(Some(text))
            }
            JsonOp::In(JsonKind::Jsonb) => Out::Text(Some(
                Jsonb::parse(&text(0)?).map_err(Error::from)?.to_text(),
            )),
            JsonOp::Get | JsonOp::GetText => {
                let step = match integer_value(&args[1]) {
                    Some(index) => Step::Index(index),
                    None => Step::Key(text(1)?),
                };
                let as_text = self.op == JsonOp::GetText;
                Out::Text(select(&text(0)?, operand_kind, &[step], as_text)?)
            }
            JsonOp::Path | JsonOp::PathText => {
                let steps = path_steps(&args[1])?
                    .into_iter()
                    .map(Step::Path)
                    .collect::<Vec<_>>();
                let as_text = self.op == JsonOp::PathText;
                Out::Text(select(&text(0)?, operand_kind, &steps, as_text)?)
            }
            JsonOp::ExtractPath | JsonOp::ExtractPathText => {
                let steps = (1..args.len())
                    .map(|i| text(i).map(Step::Path))
                    .collect::<DfResult<Vec<_>>>()?;
                let as_text = self.op == JsonOp::ExtractPathText;
                Out::Text(select(&text(0)?, operand_kind, &steps, as_text)?)
            }
            JsonOp::Contains => Out::Bool(Some(jsonb(0)?.contains(&jsonb(1)?))),
            JsonOp::ContainedBy => Out::Bool(Some(jsonb(1)?.contains(&jsonb(0)?))),
            JsonOp::Exists => Out::Bool(Some(jsonb(0)?.has_key(&text(1)?))),
            JsonOp::ExistsAny | JsonOp::ExistsAll => {
                let value = jsonb(0)?;
                let keys = path_steps(&args[1])?;
                let mut found = keys.iter().map(|key| value.has_key(key));
                Out::Bool(Some(if self.op == JsonOp::ExistsAny {
                    found.any(|f| f)
                } else {
                    found.all(|f| f)
                }))
            }
            JsonOp::Concat => Out::Text(Some(jsonb(0)?.concat(&jsonb(1)?).to_text())),
            JsonOp::Delete => {
                let value = jsonb(0)?;
                let rest = match (&value, integer_value(&args[1])) {
                    (Jsonb::Array(items), Some(index)) => {
                        let mut items = items.clone();
                        if let Some(at) = rowdex_codec::json::resolve_index(index, items.len()) {
                            items.remove(at);
                        }
                        Jsonb::Array(items)
                    }
                    _ => value.without_key(&text(1)?),
                };
                Out::Text(Some(rest.to_text()))
            }
            JsonOp::Compare => Out::Int(Some(match jsonb(0)?.compare(&jsonb(1)?) {
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => 1,
            })),
            JsonOp::TypeOf => Out::Text(Some(jsonb(0)?.type_name().to_string())),
            JsonOp::ArrayLength => match jsonb(0)? {
                Jsonb::Array(items) => {
                    Out::Int(Some(i32::try_from(items.len()).unwrap_or(i32::MAX)))
                }
                other => {
                    return Err(Error::BadFunctionArgument {
                        function: self.name,
                        reason: format!(
                            "cannot get array length of {}",
                            if matches!(other, Jsonb::Object(_)) {
                                "a non-array"
                            } else {
                                "a scalar"
                            }
                        ),
                    }
                    .into());
                }
            },
            JsonOp::Set => {
                let create = match args.get(3) {
                    Some(ScalarValue::Boolean(Some(create))) => *create,
                    _ => true,
                };
                let path = path_steps(&args[1])?;
                let set = jsonb(0)?.set_path(&path, &jsonb(2)?, create).map_err(
                    |(position, element)| {
                        Error::from(JsonError::PathElementNotInteger { position, element })
                    },
                )?;
                Out::Text(Some(set.to_text()))
            }
            JsonOp::To(JsonKind::Json) => Out::Text(Some(json_text(&args[0], &fields[0])?)),
            JsonOp::To(JsonKind::Jsonb) => Out::Text(Some(
                Jsonb::parse(&json_text(&args[0], &fields[0])?)
                    .map_err(Error::from)?
                    .to_text(),
            )),
            JsonOp::BuildObject(kind) => Out::Text(Some(self.build_object(args, fields, kind)?)),
            JsonOp::BuildArray(kind) => {
                let items = (0..args.len())
                    .map(|i| json_text(&args[i], &fields[i]))
                    .collect::<DfResult<Vec<_>>>()?;
                let text = format!("[{}]", items.join(", "));
                Out::Text(Some(match kind {
                    JsonKind::Json => text,
                    JsonKind::Jsonb => Jsonb::parse(&text).map_err(Error::from)?.to_text(),
                }))
            }
            JsonOp::StripNulls => Out::Text(Some(strip_nulls(&jsonb(0)?).to_text())),
            JsonOp::SortKey => Out::Bytes(Some(sort_key(&jsonb(0)?))),
        })
    }

    fn build_object(
        &self,
        args: &[ScalarValue],
        fields: &[FieldRef],
        kind: JsonKind,
    ) -> DfResult<String> {
        if !args.len().is_multiple_of(2) {
            return Err(Error::BadFunctionArgument {
                function: self.name,
                reason: "argument list must have even number of elements".to_string(),
            }
            .into());
        }
        let mut members = Vec::with_capacity(args.len() / 2);
        for pair in (0..args.len()).step_by(2) {
            if args[pair].is_null() {
                return Err(Error::BadFunctionArgument {
                    function: self.name,
                    reason: format!("argument {}: key must not be null", pair + 1),
                }
                .into());
            }
            let mut key = String::new();
            rowdex_codec::json::write_json_string(&mut key, &key_text(&args[pair])?);
            members.push(format!(
                "{key} : {}",
                json_text(&args[pair + 1], &fields[pair + 1])?
            ));
        }
        let text = format!("{{{}}}", members.join(", "));
        Ok(match kind {
            JsonKind::Json => text,
            JsonKind::Jsonb => Jsonb::parse(&text).map_err(Error::from)?.to_text(),
        })
    }
}

/// One step of an access: a key, an index, or a path element (a key of an object, an index
/// of an array).
enum Step {
    Key(String),
    Index(i64),
    Path(String),
}

/// The part of JSON `text` (of `operand` kind, `jsonb` when it is plain text) at `steps`, as
/// JSON of the operand's kind or, `as_text`, as `->>` gives it; None where a step finds
/// nothing.
fn select(
    text: &str,
    operand: Option<JsonKind>,
    steps: &[Step],
    as_text: bool,
) -> DfResult<Option<String>> {
    if operand == Some(JsonKind::Json) {
        let doc = parse_json(text).map_err(Error::from)?;
        let found = steps
            .iter()
            .try_fold(&doc, |value: &Spanned<'_>, step| match step {
                Step::Key(key) => value.field(key),
                Step::Index(i) => value.element(*i),
                Step::Path(step) => value
                    .field(step)
                    .or_else(|| value.element(step.trim().parse().ok()?)),
            });
        return Ok(found.and_then(|value| {
            if as_text {
                value.as_text().map(|t| t.into_owned())
            } else {
                Some(value.text.to_string())
            }
        }));
    }
    let doc = Jsonb::parse(text).map_err(Error::from)?;
    let found = steps.iter().try_fold(&doc, |value, step| match step {
        Step::Key(key) => value.field(key),
        Step::Index(i) => value.element(*i),
        Step::Path(step) => value.at_path(std::slice::from_ref(step)),
    });
    Ok(found.and_then(|value| {
        if as_text {
            value.as_text()
        } else {
            Some(value.to_text())
        }
    }))
}

fn strip_nulls(value: &Jsonb) -> Jsonb {
    match value {
        Jsonb::Object(pairs) => Jsonb::Object(
            pairs
                .iter()
                .filter(|(_, v)| *v != Jsonb::Null)
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Jsonb::Array(items) => Jsonb::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

fn integer_value(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Int8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int64(Some(v)) => Some(*v),
        _ => None,
    }
}

impl ScalarUDFImpl for JsonFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(self.result_type())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        Ok(Arc::new(if self.gives_json() {
            self.result_kind(args.arg_fields).field(self.name, true)
        } else {
            Field::new(self.name, self.result_type(), true)
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|arg| arg.to_array(rows))
            .collect::<DfResult<Vec<ArrayRef>>>()?;
        let mut bytes = BinaryBuilder::new();
        let mut text = StringBuilder::new();
        let mut bools = BooleanBuilder::new();
        let mut ints = Int32Builder::new();
        for row in 0..rows {
            let values = arrays
                .iter()
                .map(|array| ScalarValue::try_from_array(array, row))
                .collect::<DfResult<Vec<_>>>()?;
            match self.row(&values, &args.arg_fields)? {
                Out::Bytes(v) => bytes.append_option(v),
                Out::Text(v) => text.append_option(v),
                Out::Bool(v) => bools.append_option(v),
                Out::Int(v) => ints.append_option(v),
            }
        }
        let out: ArrayRef = match self.result_type() {
            DataType::Binary => Arc::new(bytes.finish()),
            DataType::Boolean => Arc::new(bools.finish()),
            DataType::Int32 => Arc::new(ints.finish()),
            _ => Arc::new(text.finish()),
        };
        Ok(ColumnarValue::Array(out))
    }
}
