//! asyncpg's type introspection: before it binds a parameter or reads a column of a type it
//! has no codec for (an array such as `int4[]`, bound to `= ANY($1)`), asyncpg looks the
//! type up with one query over `pg_type`, `pg_range`, `pg_attribute` and `pg_class`: a
//! recursive CTE (`typeinfo_tree`) that follows domains to their base types, ranges to their
//! subtypes, composites to their attribute types and arrays to their elements.
//!
//! rowdex's catalog has base types and their arrays only (no domain, range or composite
//! type), so that lookup is, exactly, the requested types' own rows with their element's
//! delimiter, at depth 0: the query is answered by that equivalent over `pg_type`. asyncpg
//! needs nothing from the deeper rows for a base type (it has a codec for every element type
//! rowdex has).

use pgwire::api::Type;
use rowdex::datafusion::sql::sqlparser::ast::{SetExpr, Statement};

/// The lookup as rowdex runs it: the same columns, for the OIDs in `$1` (an `oid[]`, as
/// asyncpg's query casts it: see [`lookup_parameter_types`]).
pub const TYPE_LOOKUP: &str = "\
SELECT t.oid AS oid, 'pg_catalog' AS ns, t.typname AS name, t.typtype AS kind, \
CAST(NULL AS BIGINT) AS basetype, t.typelem AS elemtype, e.typdelim AS elemdelim, \
CAST(NULL AS BIGINT) AS range_subtype, CAST(NULL AS TEXT) AS attrtypoids, \
CAST(NULL AS TEXT) AS attrnames, 0 AS depth, CAST(NULL AS TEXT) AS basetype_name, \
pg_rowdex_type_name(e.oid) AS elemtype_name, CAST(NULL AS TEXT) AS range_subtype_name \
FROM pg_catalog.pg_type t LEFT JOIN pg_catalog.pg_type e ON t.typelem = e.oid \
WHERE t.oid = ANY($1)";

/// The parameter types of `sql` where rowdex's inference would differ from what the client
/// wrote: the lookup's `$1` is the `oid[]` asyncpg's query casts it to (an `int8[]` to
/// rowdex, which compares it with a 64-bit column), and asyncpg has a codec for `oid[]`
/// only.
pub fn lookup_parameter_types(sql: &str) -> Option<Vec<Type>> {
    (sql == TYPE_LOOKUP).then(|| vec![Type::OID_ARRAY])
}

/// The equivalent of asyncpg's type lookup, if `statements` is that one query.
pub fn type_lookup(statements: &[Statement]) -> Option<String> {
    let [Statement::Query(query)] = statements else {
        return None;
    };
    let with = query.with.as_ref()?;
    let [cte] = with.cte_tables.as_slice() else {
        return None;
    };
    let is_lookup = with.recursive
        && cte.alias.name.value == "typeinfo_tree"
        && matches!(query.body.as_ref(), SetExpr::Select(_));
    is_lookup.then(|| TYPE_LOOKUP.to_string())
}
