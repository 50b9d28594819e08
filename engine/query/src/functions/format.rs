//! PostgreSQL's `format(formatstr, args...)`: `%s` writes an argument as text (NULL as
//! nothing), `%I` as a quoted identifier where it needs quoting, `%L` as a quoted literal (NULL
//! as `NULL`), `%%` a percent sign; a specifier may name its argument (`%2$s`) and a width
//! (`%10s` pads on the left, `%-10s` on the right). A boolean is written `t` or `f`, as
//! PostgreSQL writes it.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, StringArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::error::Error;
use crate::functions::quote::{quote_ident, quote_literal};

/// Registers `format` in `ctx`.
pub(crate) fn register_format(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Format {
        signature: Signature::variadic_any(Volatility::Stable),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Format {
    signature: Signature,
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        "format"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let texts = args
            .args
            .iter()
            .map(|arg| as_text(&arg.to_array(rows)?))
            .collect::<DfResult<Vec<StringArray>>>()?;
        let Some((pattern, values)) = texts.split_first() else {
            return Err(bad("a format string is needed"));
        };
        let mut out = StringBuilder::with_capacity(rows, rows * 16);
        let mut row_values: Vec<Option<&str>> = Vec::with_capacity(values.len());
        for row in 0..rows {
            if pattern.is_null(row) {
                out.append_null();
                continue;
            }
            row_values.clear();
            row_values.extend(
                values
                    .iter()
                    .map(|v| (!v.is_null(row)).then(|| v.value(row))),
            );
            out.append_value(format_row(pattern.value(row), &row_values)?);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

fn bad(reason: &str) -> datafusion::error::DataFusionError {
    Error::BadFunctionArgument {
        function: "format",
        reason: reason.to_string(),
    }
    .into()
}

/// `array` as text, booleans as `t` and `f`.
fn as_text(array: &ArrayRef) -> DfResult<StringArray> {
    if let Some(booleans) = array.as_any().downcast_ref::<BooleanArray>() {
        return Ok(booleans
            .iter()
            .map(|b| b.map(|b| if b { "t" } else { "f" }))
            .collect());
    }
    let text = cast(array, &DataType::Utf8)?;
    text.as_any()
        .downcast_ref::<StringArray>()
        .cloned()
        .ok_or_else(|| bad("a format() argument that does not read as text"))
}

/// One row's result: `pattern` with its specifiers replaced by `values`.
fn format_row(pattern: &str, values: &[Option<&str>]) -> DfResult<String> {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut next = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // [position$][-][width]type
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let mut position = None;
        if chars.peek() == Some(&'$') {
            chars.next();
            let n: usize = digits.parse().map_err(|_| bad("a bad argument position"))?;
            if n == 0 {
                return Err(bad("argument positions start at 1"));
            }
            position = Some(n - 1);
            digits.clear();
        }
        let left = chars.peek() == Some(&'-');
        if left {
            chars.next();
        }
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let width: usize = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| bad("a bad width"))?
        };
        let kind = chars
            .next()
            .ok_or_else(|| bad("the format string ends in a bare %"))?;
        let index = position.unwrap_or(next);
        next = index + 1;
        let value = *values.get(index).ok_or_else(|| bad("too few arguments"))?;
        let text = match kind {
            's' => value.unwrap_or("").to_string(),
            'I' => quote_ident(value.ok_or_else(|| bad("a NULL identifier (%I)"))?),
            'L' => value.map_or_else(|| "NULL".to_string(), quote_literal),
            other => {
                return Err(bad(&format!(
                    "unrecognized conversion type specifier \"{other}\""
                )));
            }
        };
        let pad = width.saturating_sub(text.chars().count());
        if !left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(&text);
        if left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specifiers_as_postgresql_writes_them() {
        let values = [Some("a b"), None, Some("O'Brien"), Some("x")];
        // Each expected text is PostgreSQL 15's.
        assert_eq!(
            format_row("%s|%s|%L|%I", &values).expect("formats"),
            "a b||'O''Brien'|x"
        );
        assert_eq!(
            format_row("%I.%2$L %%", &values).expect("formats"),
            "\"a b\".NULL %"
        );
        assert_eq!(
            format_row("[%5s][%-5s]", &[Some("ab"), Some("cd")]).expect("formats"),
            "[   ab][cd   ]"
        );
        assert_eq!(
            format_row("%L", &[Some("a\\b")]).expect("formats"),
            "E'a\\\\b'"
        );
        assert!(format_row("%s %s", &[Some("a")]).is_err());
        assert!(format_row("%q", &[Some("a")]).is_err());
    }
}
