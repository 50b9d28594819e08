//! Scalar functions rowdex adds to DataFusion, registered in every statement's context and in
//! the one that compiles DEFAULT and CHECK expressions (`write::constraints`).

pub(crate) mod uuid;

use datafusion::prelude::SessionContext;

/// Registers every function of this module in `ctx`.
pub(crate) fn register_functions(ctx: &SessionContext) {
    uuid::register_uuid_functions(ctx);
}
