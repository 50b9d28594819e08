//! `json_agg(x)` / `jsonb_agg(x)`, the values of a group as a JSON array (NULL as `null`),
//! and `json_object_agg(k, v)` / `jsonb_object_agg(k, v)`, its pairs as an object; over no
//! rows, NULL. A `json` result is written as PostgreSQL writes it (`[1, 2]`,
//! `{ "a" : 1, "b" : 2 }`), a `jsonb` one normalised. The state between partial aggregations
//! is the text of the members so far.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use rowdex_codec::json::{Jsonb, write_json_string};

use super::convert::{json_text, key_text};
use super::kind::JsonKind;
use crate::error::Error;

/// Registers the four aggregates in `ctx`.
pub(crate) fn register_json_aggregates(ctx: &SessionContext) {
    for (name, kind, object) in [
        ("json_agg", JsonKind::Json, false),
        ("jsonb_agg", JsonKind::Jsonb, false),
        ("json_object_agg", JsonKind::Json, true),
        ("jsonb_object_agg", JsonKind::Jsonb, true),
    ] {
        ctx.register_udaf(AggregateUDF::new_from_impl(JsonAggregate {
            name,
            kind,
            object,
            signature: Signature::any(if object { 2 } else { 1 }, Volatility::Immutable),
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonAggregate {
    name: &'static str,
    kind: JsonKind,
    /// `*_object_agg`: pairs of a key and a value.
    object: bool,
    signature: Signature,
}

impl AggregateUDFImpl for JsonAggregate {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field(&self, _arg_fields: &[FieldRef]) -> DfResult<FieldRef> {
        Ok(Arc::new(self.kind.field(self.name, true)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        Ok(vec![Arc::new(datafusion::arrow::datatypes::Field::new(
            format!("{}[members]", args.name),
            DataType::Utf8,
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(Box::new(JsonAccumulator {
            name: self.name,
            kind: self.kind,
            object: self.object,
            fields: args.expr_fields.to_vec(),
            members: Vec::new(),
            bytes: 0,
        }))
    }
}

#[derive(Debug)]
struct JsonAccumulator {
    name: &'static str,
    kind: JsonKind,
    object: bool,
    fields: Vec<FieldRef>,
    /// Each member's JSON text (`"k" : v` for an object); a merged state is one member
    /// holding several.
    members: Vec<String>,
    bytes: usize,
}

impl JsonAccumulator {
    fn push(&mut self, member: String) {
        self.bytes += member.len();
        self.members.push(member);
    }
}

impl Accumulator for JsonAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let Some(first) = values.first() else {
            return Ok(());
        };
        for row in 0..first.len() {
            let value_at = |i: usize| ScalarValue::try_from_array(&values[i], row);
            if self.object {
                let key = value_at(0)?;
                if key.is_null() {
                    return Err(Error::BadFunctionArgument {
                        function: self.name,
                        reason: "field name must not be null".to_string(),
                    }
                    .into());
                }
                let mut member = String::new();
                write_json_string(&mut member, &key_text(&key)?);
                member.push_str(" : ");
                member.push_str(&json_text(&value_at(1)?, &self.fields[1])?);
                self.push(member);
            } else {
                let member = json_text(&value_at(0)?, &self.fields[0])?;
                self.push(member);
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let Some(state) = states.first() else {
            return Ok(());
        };
        for row in 0..state.len() {
            if let Some(Some(members)) = ScalarValue::try_from_array(state, row)?.try_as_str() {
                self.push(members.to_string());
            }
        }
        Ok(())
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Utf8(
            (!self.members.is_empty()).then(|| self.members.join(", ")),
        )])
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        if self.members.is_empty() {
            return Ok(ScalarValue::Utf8(None));
        }
        let joined = self.members.join(", ");
        let text = if self.object {
            format!("{{ {joined} }}")
        } else {
            format!("[{joined}]")
        };
        Ok(ScalarValue::Utf8(Some(match self.kind {
            JsonKind::Json => text,
            JsonKind::Jsonb => Jsonb::parse(&text).map_err(Error::from)?.to_text(),
        })))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.bytes + self.members.capacity() * 24
    }
}
