//! PostgreSQL's storage parameters (`WITH (fillfactor = 70)` on CREATE TABLE and CREATE INDEX,
//! `autovacuum_*`, `toast.*`, ...): tools and ORMs emit them (pgbench's own CREATE TABLE
//! does), and they tune PostgreSQL's heap and vacuum, which rowdex does not have. They are
//! accepted, each with a warning that it has no effect, so such DDL runs unchanged.

/// Table storage parameters of PostgreSQL 15, and the prefixes of its families of them.
const TABLE_PARAMETERS: [&str; 7] = [
    "fillfactor",
    "toast_tuple_target",
    "parallel_workers",
    "user_catalog_table",
    "vacuum_index_cleanup",
    "vacuum_truncate",
    "log_autovacuum_min_duration",
];
const TABLE_PREFIXES: [&str; 2] = ["autovacuum_", "toast."];

/// Index storage parameters of PostgreSQL 15's access methods (B-tree, hash, GiST, GIN, BRIN).
const INDEX_PARAMETERS: [&str; 7] = [
    "fillfactor",
    "deduplicate_items",
    "fastupdate",
    "gin_pending_list_limit",
    "buffering",
    "pages_per_range",
    "autosummarize",
];

/// Whether `name` is one of PostgreSQL's table storage parameters.
pub(crate) fn is_table_parameter(name: &str) -> bool {
    let name = name.to_lowercase();
    TABLE_PARAMETERS.contains(&name.as_str())
        || TABLE_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// Whether `name` is one of PostgreSQL's index storage parameters.
pub(crate) fn is_index_parameter(name: &str) -> bool {
    INDEX_PARAMETERS.contains(&name.to_lowercase().as_str())
}

/// The warning for a storage parameter accepted without effect.
pub(crate) fn no_effect(option: &str) -> String {
    format!(
        "storage parameter {option} has no effect in rowdex (PostgreSQL's heap and vacuum \
         settings do not apply to a key-value store); accepted"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgresql_parameters_are_known_and_rowdex_options_are_not() {
        assert!(is_table_parameter("FILLFACTOR"));
        assert!(is_table_parameter("autovacuum_vacuum_scale_factor"));
        assert!(is_table_parameter("toast.autovacuum_enabled"));
        assert!(!is_table_parameter("salt_buckets"));
        assert!(!is_table_parameter("fill"));
        assert!(is_index_parameter("deduplicate_items"));
        assert!(!is_index_parameter("salt_buckets"));
    }
}
