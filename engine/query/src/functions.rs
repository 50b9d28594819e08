//! Scalar functions rowdex adds to DataFusion, registered in every statement's context and in
//! the one that compiles DEFAULT and CHECK expressions (`write::constraints`).

pub(crate) mod arguments;
pub(crate) mod arrays;
pub(crate) mod bytes;
pub(crate) mod coalesce;
pub(crate) mod format;
pub(crate) mod hash;
pub(crate) mod json;
pub(crate) mod quote;
pub(crate) mod temporal;
pub(crate) mod temporal_pattern;
pub(crate) mod type_of;
pub(crate) mod uuid;
pub(crate) mod zones;

use datafusion::prelude::SessionContext;

/// Registers every function of this module in `ctx`.
pub(crate) fn register_functions(ctx: &SessionContext) {
    arrays::register_array_functions(ctx);
    bytes::register_byte_functions(ctx);
    coalesce::register_coalesce(ctx);
    format::register_format(ctx);
    hash::register_hash_functions(ctx);
    json::register_json_functions(ctx);
    temporal::register_temporal_functions(ctx);
    type_of::register_type_of(ctx);
    uuid::register_uuid_functions(ctx);
    zones::register_zone_functions(ctx);
}
