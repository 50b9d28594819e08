//! PostgreSQL's `json` and `jsonb` in DataFusion. A JSON value travels as its text (a `json`
//! as written, a `jsonb` normalised: `rowdex_codec::json`), in a field whose metadata declares
//! JSON or JSONB (`values::declared_text_field`), as a table's JSON column does.
//!
//! - [`scalar`]: the functions, one [`JsonFunction`] per name: the casts `json_in`/`jsonb_in`
//!   (`sql::type_casts`), what the operators become, and `to_jsonb`, `jsonb_build_object`,
//!   `jsonb_extract_path_text`, `jsonb_set`, `jsonb_typeof`, ... (each also as `json_...`).
//! - [`operators`]: the planner hook that reads `->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`,
//!   `?|`, `?&`, `||`, `-` and the comparisons of a JSON operand as calls of those functions.
//! - [`aggregate`]: `json_agg`/`jsonb_agg`, `json_object_agg`/`jsonb_object_agg`.
//! - [`convert`]: any SQL value as JSON text, as PostgreSQL's `to_json` writes it.
//! - [`kind`]: which of the two types a field holds.

pub(crate) mod aggregate;
pub(crate) mod convert;
pub(crate) mod kind;
pub(crate) mod operators;
pub(crate) mod scalar;

use std::sync::Arc;

use datafusion::execution::FunctionRegistry;
use datafusion::prelude::SessionContext;

/// Registers the JSON functions, aggregates and operators in `ctx`.
pub(crate) fn register_json_functions(ctx: &SessionContext) {
    let functions = scalar::json_functions();
    for function in &functions {
        ctx.register_udf(function.as_ref().clone());
    }
    aggregate::register_json_aggregates(ctx);
    let planner = operators::JsonOperators::new(&functions);
    // A planner that cannot be added leaves the operators unplanned: DataFusion then reports
    // them as unsupported, which is what they are.
    let _ = ctx
        .state_ref()
        .write()
        .register_expr_planner(Arc::new(planner));
}
