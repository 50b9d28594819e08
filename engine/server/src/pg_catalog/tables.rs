//! The tables of `pg_catalog` and `information_schema` that PostgreSQL clients read (psql's
//! `\d` family, drivers' metadata calls), built from [`Relations`] when a query names them.
//! Each has the columns clients select; tables of features rowdex does not have (policies,
//! publications, inheritance, extended statistics) exist with no rows, as in a PostgreSQL
//! database that uses none of them.

use rowdex::arrow::array::RecordBatch;
use rowdex::arrow::error::ArrowError;

use crate::extensions::EXTENSIONS;
use crate::pg_catalog::defaults::postgres_default;
use crate::pg_catalog::expressions::postgres_expression;
use crate::pg_catalog::foreign_keys::foreign_keys;
use crate::pg_catalog::functions::SessionFacts;
use crate::pg_catalog::model::{
    ARRAY_TYPES, BTREE_AM, DATABASE_OID, DEFAULT_COLLATION, HEAP_AM, NAMESPACES, OWNER_NAME,
    OWNER_ROLE, PG_CATALOG_NAMESPACE, PUBLIC_NAMESPACE, RelKind, Relations, TYPES, array_of,
    check_oid, column_type, constraint_oid, default_oid, format_type, table_oid, view_oid,
};
use crate::pg_catalog::rows::{Bool, Cell, Float, Int, IntList, Table, Text, TextList};
use rowdex::RowLock;
use rowdex_catalog::ColumnDef;

/// The names of the `pg_catalog` tables.
pub const PG_CATALOG_TABLES: [&str; 30] = [
    "pg_extension",
    "pg_namespace",
    "pg_locks",
    "pg_class",
    "pg_am",
    "pg_index",
    "pg_attribute",
    "pg_attrdef",
    "pg_type",
    "pg_collation",
    "pg_constraint",
    "pg_policy",
    "pg_roles",
    "pg_user",
    "pg_auth_members",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_inherits",
    "pg_database",
    "pg_description",
    "pg_tablespace",
    "pg_tables",
    "pg_views",
    "pg_indexes",
    "pg_trigger",
    "pg_depend",
    "pg_sequence",
    "pg_opclass",
];

/// The names of the `information_schema` tables.
pub const INFORMATION_SCHEMA_TABLES: [&str; 8] = [
    "schemata",
    "tables",
    "columns",
    "views",
    "table_constraints",
    "key_column_usage",
    "referential_constraints",
    "constraint_column_usage",
];

/// `pg_extension`: the built-in `pg_stat_statements` (see `extensions`), in `public` as
/// PostgreSQL installs it by default.
fn extensions() -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("extname", Text),
        ("extowner", Int),
        ("extnamespace", Int),
        ("extrelocatable", Bool),
        ("extversion", Text),
        ("extconfig", IntList),
        ("extcondition", TextList),
    ]);
    for (i, (name, version)) in EXTENSIONS.iter().enumerate() {
        table.row(vec![
            ("oid", (EXTENSION_OID + i as i64).into()),
            ("extname", (*name).into()),
            ("extowner", OWNER_ROLE.into()),
            ("extnamespace", PUBLIC_NAMESPACE.into()),
            ("extrelocatable", true.into()),
            ("extversion", (*version).into()),
        ]);
    }
    table
}

/// The OID of the first built-in extension (below the OIDs of users' objects).
const EXTENSION_OID: i64 = 13_500;

/// The `pg_catalog` table `name`, None if there is no such table.
pub fn pg_catalog_table(
    name: &str,
    relations: &Relations,
    facts: &SessionFacts,
) -> Option<Result<RecordBatch, ArrowError>> {
    let table = match name {
        "pg_namespace" => namespaces(),
        "pg_extension" => extensions(),
        "pg_class" => classes(relations),
        "pg_am" => access_methods(),
        "pg_index" => indexes(relations),
        "pg_attribute" => attributes(relations),
        "pg_attrdef" => defaults(relations),
        "pg_type" => types(),
        "pg_collation" => collations(),
        "pg_constraint" => constraints(relations),
        "pg_policy" => Table::new(&[
            ("oid", Int),
            ("polname", Text),
            ("polrelid", Int),
            ("polcmd", Text),
            ("polpermissive", Bool),
            ("polroles", IntList),
            ("polqual", Text),
            ("polwithcheck", Text),
        ]),
        "pg_roles" | "pg_user" => roles(name, relations),
        "pg_auth_members" => Table::new(&[
            ("oid", Int),
            ("roleid", Int),
            ("member", Int),
            ("grantor", Int),
            ("admin_option", Bool),
        ]),
        "pg_statistic_ext" => Table::new(&[
            ("oid", Int),
            ("stxrelid", Int),
            ("stxname", Text),
            ("stxnamespace", Int),
            ("stxowner", Int),
            ("stxstattarget", Int),
            ("stxkeys", Text),
            ("stxkind", TextList),
        ]),
        "pg_publication" => Table::new(&[
            ("oid", Int),
            ("pubname", Text),
            ("pubowner", Int),
            ("puballtables", Bool),
            ("pubinsert", Bool),
            ("pubupdate", Bool),
            ("pubdelete", Bool),
            ("pubtruncate", Bool),
            ("pubviaroot", Bool),
        ]),
        "pg_publication_namespace" => {
            Table::new(&[("oid", Int), ("pnpubid", Int), ("pnnspid", Int)])
        }
        "pg_publication_rel" => Table::new(&[
            ("oid", Int),
            ("prpubid", Int),
            ("prrelid", Int),
            ("prqual", Text),
            ("prattrs", IntList),
        ]),
        "pg_inherits" => Table::new(&[
            ("inhrelid", Int),
            ("inhparent", Int),
            ("inhseqno", Int),
            ("inhdetachpending", Bool),
        ]),
        "pg_database" => databases(facts),
        "pg_description" => Table::new(&[
            ("objoid", Int),
            ("classoid", Int),
            ("objsubid", Int),
            ("description", Text),
        ]),
        // Sequences are not relations in rowdex's pg_class; SQLAlchemy reads this only for
        // identity columns' options.
        "pg_sequence" => Table::new(&[
            ("seqrelid", Int),
            ("seqtypid", Int),
            ("seqstart", Int),
            ("seqincrement", Int),
            ("seqmax", Int),
            ("seqmin", Int),
            ("seqcache", Int),
            ("seqcycle", Bool),
        ]),
        // Every index column uses its type's default operator class, so there is none to list
        // (SQLAlchemy asks for the non-default ones).
        "pg_opclass" => Table::new(&[
            ("oid", Int),
            ("opcmethod", Int),
            ("opcname", Text),
            ("opcnamespace", Int),
            ("opcowner", Int),
            ("opcfamily", Int),
            ("opcintype", Int),
            ("opcdefault", Bool),
            ("opckeytype", Int),
        ]),
        "pg_tablespace" => tablespaces(),
        "pg_tables" => pg_tables(relations),
        "pg_views" => pg_views(relations),
        "pg_indexes" => pg_indexes(relations),
        "pg_trigger" => Table::new(&[
            ("oid", Int),
            ("tgrelid", Int),
            ("tgparentid", Int),
            ("tgname", Text),
            ("tgenabled", Text),
            ("tgisinternal", Bool),
        ]),
        "pg_depend" => Table::new(&[
            ("classid", Int),
            ("objid", Int),
            ("objsubid", Int),
            ("refclassid", Int),
            ("refobjid", Int),
            ("refobjsubid", Int),
            ("deptype", Text),
        ]),
        _ => return None,
    };
    Some(table.batch())
}

/// `pg_locks`: every holder and waiter of a row lock in this process, one row each, as
/// PostgreSQL shows a row's lock (`locktype` tuple, the table's `relation`). `page` and
/// `tuple` together identify the locked row (a hash of its key: rowdex rows have no page), so
/// monitoring queries that match a waiter with its holder on them pair the right two; `pid`
/// is the backend the transaction's session runs in (NULL for rowdex's own); `waitstart` is
/// not kept (NULL).
pub fn pg_locks(locks: &[RowLock], relations: &Relations) -> Result<RecordBatch, ArrowError> {
    let mut table = Table::new(&[
        ("locktype", Text),
        ("database", Int),
        ("relation", Int),
        ("page", Int),
        ("tuple", Int),
        ("virtualxid", Text),
        ("transactionid", Int),
        ("classid", Int),
        ("objid", Int),
        ("objsubid", Int),
        ("virtualtransaction", Text),
        ("pid", Int),
        ("mode", Text),
        ("granted", Bool),
        ("fastpath", Bool),
        ("waitstart", Text),
    ]);
    for lock in locks {
        let row = key_identity(&lock.key);
        let mut cells: Vec<(&str, Cell)> = vec![
            ("locktype", "tuple".into()),
            ("database", DATABASE_OID.into()),
            ("page", (row >> 16).into()),
            ("tuple", (row & 0xffff).into()),
            (
                "virtualtransaction",
                format!("{}/{}", lock.tag.unwrap_or(0), lock.transaction).into(),
            ),
            (
                "mode",
                if lock.exclusive {
                    "ExclusiveLock"
                } else {
                    "ShareLock"
                }
                .into(),
            ),
            ("granted", lock.granted.into()),
            ("fastpath", false.into()),
        ];
        if let Some(oid) = lock
            .table
            .as_deref()
            .and_then(|name| relations.relation_oid(name))
        {
            cells.push(("relation", oid.into()));
        }
        if let Some(pid) = lock.tag {
            cells.push(("pid", pid.into()));
        }
        table.row(cells);
    }
    table.batch()
}

/// A row's identity in `page` and `tuple`: 47 bits of a hash of its key (a page number that
/// fits an int4, a tuple number that fits an int2).
fn key_identity(key: &[u8]) -> i64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    (hasher.finish() & 0x7fff_ffff_7fff) as i64
}

/// The `information_schema` table `name`.
pub fn information_schema_table(
    name: &str,
    relations: &Relations,
    facts: &SessionFacts,
) -> Option<Result<RecordBatch, ArrowError>> {
    let table = match name {
        "schemata" => {
            let mut table = Table::new(&[
                ("catalog_name", Text),
                ("schema_name", Text),
                ("schema_owner", Text),
            ]);
            for (_, schema) in NAMESPACES {
                table.row(vec![
                    ("catalog_name", facts.database.as_str().into()),
                    ("schema_name", schema.into()),
                    ("schema_owner", OWNER_NAME.into()),
                ]);
            }
            table
        }
        "tables" => {
            let mut table = Table::new(&[
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("table_type", Text),
            ]);
            let views = relations.views.iter().map(|(_, n, _)| (n, "VIEW"));
            let tables = relations.tables.iter().map(|t| (&t.name, "BASE TABLE"));
            for (name, kind) in tables.chain(views) {
                table.row(vec![
                    ("table_catalog", facts.database.as_str().into()),
                    ("table_schema", "public".into()),
                    ("table_name", name.as_str().into()),
                    ("table_type", kind.into()),
                ]);
            }
            table
        }
        "columns" => information_columns(relations, facts),
        "views" => {
            let mut table = Table::new(&[
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("view_definition", Text),
            ]);
            for (_, name, sql) in &relations.views {
                table.row(vec![
                    ("table_catalog", facts.database.as_str().into()),
                    ("table_schema", "public".into()),
                    ("table_name", name.as_str().into()),
                    ("view_definition", sql.as_str().into()),
                ]);
            }
            table
        }
        "table_constraints" | "key_column_usage" => constraint_usage(name, relations, facts),
        "referential_constraints" => referential_constraints(relations, facts),
        "constraint_column_usage" => constraint_column_usage(relations, facts),
        _ => return None,
    };
    Some(table.batch())
}

fn namespaces() -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("nspname", Text),
        ("nspowner", Int),
        ("nspacl", TextList),
    ]);
    for (oid, name) in NAMESPACES {
        table.row(vec![
            ("oid", oid.into()),
            ("nspname", name.into()),
            ("nspowner", OWNER_ROLE.into()),
        ]);
    }
    table
}

fn classes(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("relname", Text),
        ("relnamespace", Int),
        ("reltype", Int),
        ("reloftype", Int),
        ("relowner", Int),
        ("relam", Int),
        ("relfilenode", Int),
        ("reltablespace", Int),
        ("relpages", Int),
        ("reltuples", Float),
        ("relallvisible", Int),
        ("reltoastrelid", Int),
        ("relhasindex", Bool),
        ("relisshared", Bool),
        ("relpersistence", Text),
        ("relkind", Text),
        ("relnatts", Int),
        ("relchecks", Int),
        ("relhasrules", Bool),
        ("relhastriggers", Bool),
        ("relhassubclass", Bool),
        ("relrowsecurity", Bool),
        ("relforcerowsecurity", Bool),
        ("relispopulated", Bool),
        ("relreplident", Text),
        ("relispartition", Bool),
        ("relrewrite", Int),
        ("relacl", TextList),
        ("reloptions", TextList),
        ("relpartbound", Text),
    ]);
    // `checks`: how many CHECK constraints a table has (psql lists them only when nonzero);
    // `triggers`: whether it has triggers, foreign keys' included (psql lists its foreign keys
    // and the tables referencing it only then, PostgreSQL enforcing them by triggers).
    let mut add = |oid: i64,
                   name: &str,
                   kind: RelKind,
                   am: i64,
                   columns: usize,
                   (has_index, checks, triggers): (bool, usize, bool),
                   options: Vec<String>| {
        // A table's attributes (TTL, DURABILITY, ...) as its storage parameters, which psql's
        // `\d+` prints as "Options:".
        let options = if options.is_empty() {
            Cell::Null
        } else {
            Cell::TextList(options)
        };
        table.row(vec![
            ("oid", oid.into()),
            ("relname", name.into()),
            ("relnamespace", PUBLIC_NAMESPACE.into()),
            ("reltype", 0.into()),
            ("reloftype", 0.into()),
            ("relowner", OWNER_ROLE.into()),
            ("relam", am.into()),
            ("relfilenode", oid.into()),
            ("reltablespace", 0.into()),
            ("relpages", 0.into()),
            ("reltuples", Cell::Float(-1.0)),
            ("relallvisible", 0.into()),
            ("reltoastrelid", 0.into()),
            ("relhasindex", has_index.into()),
            ("relisshared", false.into()),
            ("relpersistence", "p".into()),
            ("relkind", kind.code().into()),
            ("relnatts", (columns as i64).into()),
            ("relchecks", (checks as i64).into()),
            ("relhasrules", false.into()),
            ("relhastriggers", triggers.into()),
            ("relhassubclass", false.into()),
            ("relrowsecurity", false.into()),
            ("relforcerowsecurity", false.into()),
            ("relispopulated", true.into()),
            ("relreplident", "d".into()),
            ("relispartition", false.into()),
            ("relrewrite", 0.into()),
            ("reloptions", options),
        ]);
    };
    for t in &relations.tables {
        let has_index = relations.indexes.iter().any(|i| i.table.id == t.id);
        let columns = t.visible_columns().count();
        add(
            table_oid(t),
            &t.name,
            RelKind::Table,
            HEAP_AM,
            columns,
            (
                has_index,
                t.checks.len(),
                !t.triggers.is_empty() || t.has_foreign_keys(),
            ),
            t.attribute_options(),
        );
    }
    for i in &relations.indexes {
        add(
            i.oid,
            &i.name,
            RelKind::Index,
            BTREE_AM,
            i.columns().len(),
            (false, 0, false),
            Vec::new(),
        );
    }
    for (oid, name, _) in &relations.views {
        let columns = relations
            .view_columns
            .iter()
            .find(|(view, _)| view == oid)
            .map_or(0, |(_, columns)| columns.len());
        add(
            *oid,
            name,
            RelKind::View,
            0,
            columns,
            (false, 0, false),
            Vec::new(),
        );
    }
    table
}

fn access_methods() -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("amname", Text),
        ("amhandler", Text),
        ("amtype", Text),
    ]);
    for (oid, name, kind) in [(HEAP_AM, "heap", "t"), (BTREE_AM, "btree", "i")] {
        table.row(vec![
            ("oid", oid.into()),
            ("amname", name.into()),
            ("amtype", kind.into()),
        ]);
    }
    table
}

fn indexes(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("indexrelid", Int),
        ("indrelid", Int),
        ("indnatts", Int),
        ("indnkeyatts", Int),
        ("indisunique", Bool),
        ("indnullsnotdistinct", Bool),
        ("indisprimary", Bool),
        ("indisexclusion", Bool),
        ("indimmediate", Bool),
        ("indisclustered", Bool),
        ("indisvalid", Bool),
        ("indcheckxmin", Bool),
        ("indisready", Bool),
        ("indislive", Bool),
        ("indisreplident", Bool),
        ("indkey", IntList),
        ("indcollation", Text),
        ("indclass", IntList),
        ("indoption", Text),
        ("indexprs", Text),
        ("indpred", Text),
    ]);
    for index in &relations.indexes {
        // Attribute numbers count the table's visible columns from 1.
        let attnum = |column: usize| {
            index
                .table
                .visible_columns()
                .position(|(c, _)| c == column)
                .map_or(0, |p| p as i64 + 1)
        };
        let key: Vec<i64> = index.columns().into_iter().map(attnum).collect();
        // Every column's operator class is its type's default (0 here: no class to name).
        let classes = vec![0; key.len()];
        let options: Vec<String> = index
            .keys
            .iter()
            .map(|(_, desc)| if *desc { "3" } else { "0" }.to_string())
            .collect();
        table.row(vec![
            ("indexrelid", index.oid.into()),
            ("indrelid", table_oid(&index.table).into()),
            ("indnatts", (index.columns().len() as i64).into()),
            ("indnkeyatts", (index.keys.len() as i64).into()),
            ("indisunique", index.unique.into()),
            ("indnullsnotdistinct", false.into()),
            ("indisprimary", index.primary.into()),
            ("indisexclusion", false.into()),
            ("indimmediate", true.into()),
            ("indisclustered", false.into()),
            ("indisvalid", index.valid.into()),
            ("indcheckxmin", false.into()),
            ("indisready", true.into()),
            ("indislive", true.into()),
            ("indisreplident", false.into()),
            ("indkey", Cell::IntList(key)),
            ("indclass", Cell::IntList(classes)),
            ("indoption", options.join(" ").into()),
        ]);
    }
    table
}

fn attributes(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("attrelid", Int),
        ("attname", Text),
        ("atttypid", Int),
        ("attstattarget", Int),
        ("attlen", Int),
        ("attnum", Int),
        ("attndims", Int),
        ("attcacheoff", Int),
        ("atttypmod", Int),
        ("attbyval", Bool),
        ("attalign", Text),
        ("attstorage", Text),
        ("attcompression", Text),
        ("attnotnull", Bool),
        ("atthasdef", Bool),
        ("atthasmissing", Bool),
        ("attidentity", Text),
        ("attgenerated", Text),
        ("attisdropped", Bool),
        ("attislocal", Bool),
        ("attinhcount", Int),
        ("attcollation", Int),
        ("attacl", TextList),
        ("attoptions", TextList),
        ("attfdwoptions", TextList),
    ]);
    // (has a DEFAULT, identity kind) of a table's column; an index's or a view's has neither.
    let mut add = |relid: i64,
                   num: usize,
                   name: &str,
                   (type_oid, typmod): (i64, i64),
                   not_null: bool,
                   (has_default, identity, generated): (bool, &str, &str)| {
        let collatable = TYPES.iter().any(|t| t.oid == type_oid && t.collatable);
        let length = TYPES
            .iter()
            .find(|t| t.oid == type_oid)
            .map_or(-1, |t| t.len);
        table.row(vec![
            ("attrelid", relid.into()),
            ("attname", name.into()),
            ("atttypid", type_oid.into()),
            ("attstattarget", (-1).into()),
            ("attlen", length.into()),
            ("attnum", (num as i64).into()),
            ("attndims", 0.into()),
            ("attcacheoff", (-1).into()),
            ("atttypmod", typmod.into()),
            ("attbyval", (length > 0 && length <= 8).into()),
            ("attalign", "d".into()),
            ("attstorage", if length > 0 { "p" } else { "x" }.into()),
            ("attcompression", "".into()),
            ("attnotnull", not_null.into()),
            ("atthasdef", has_default.into()),
            ("atthasmissing", false.into()),
            ("attidentity", identity.into()),
            ("attgenerated", generated.into()),
            ("attisdropped", false.into()),
            ("attislocal", true.into()),
            ("attinhcount", 0.into()),
            (
                "attcollation",
                if collatable { DEFAULT_COLLATION } else { 0 }.into(),
            ),
        ]);
    };
    for t in &relations.tables {
        for (num, (_, column)) in t.visible_columns().enumerate() {
            add(
                table_oid(t),
                num + 1,
                &column.name,
                column_type(column),
                !column.nullable,
                column_default(column),
            );
        }
    }
    for index in &relations.indexes {
        for (num, c) in index.columns().into_iter().enumerate() {
            let column = &index.table.columns[c];
            add(
                index.oid,
                num + 1,
                &column.name,
                column_type(column),
                !column.nullable,
                (false, "", ""),
            );
        }
    }
    for (oid, columns) in &relations.view_columns {
        for (num, (name, type_oid, typmod)) in columns.iter().enumerate() {
            add(
                *oid,
                num + 1,
                name,
                (*type_oid, *typmod),
                false,
                (false, "", ""),
            );
        }
    }
    table
}

/// Whether a column has a `pg_attrdef` row, its `attidentity` and its `attgenerated`: a
/// GENERATED ALWAYS identity is `a` and has none (as in PostgreSQL, psql shows the identity
/// instead of a default); a generated column is `s` (stored) and its row holds the expression.
fn column_default(column: &ColumnDef) -> (bool, &'static str, &'static str) {
    match (&column.default, column.generated_always) {
        _ if column.is_generated() => (true, "", "s"),
        (_, true) => (false, "a", ""),
        (Some(_), false) => (true, "", ""),
        (None, false) => (false, "", ""),
    }
}

/// `pg_attrdef`: the DEFAULT of each column that has one, as its SQL text.
fn defaults(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("adrelid", Int),
        ("adnum", Int),
        ("adbin", Text),
    ]);
    for t in &relations.tables {
        for (num, (_, column)) in t.visible_columns().enumerate() {
            let expression = match (&column.generation, &column.default) {
                (Some(generation), _) => postgres_expression(generation),
                (None, Some(default)) if column_default(column).0 => {
                    postgres_default(column, default)
                }
                _ => continue,
            };
            table.row(vec![
                ("oid", default_oid(t, &column.name).into()),
                ("adrelid", table_oid(t).into()),
                ("adnum", (num as i64 + 1).into()),
                ("adbin", expression.into()),
            ]);
        }
    }
    table
}

fn types() -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("typname", Text),
        ("typnamespace", Int),
        ("typowner", Int),
        ("typlen", Int),
        ("typbyval", Bool),
        ("typtype", Text),
        ("typcategory", Text),
        ("typispreferred", Bool),
        ("typisdefined", Bool),
        ("typdelim", Text),
        ("typrelid", Int),
        ("typelem", Int),
        ("typarray", Int),
        ("typinput", Text),
        ("typoutput", Text),
        ("typreceive", Text),
        ("typsend", Text),
        ("typalign", Text),
        ("typstorage", Text),
        ("typnotnull", Bool),
        ("typbasetype", Int),
        ("typtypmod", Int),
        ("typndims", Int),
        ("typcollation", Int),
        ("typdefault", Text),
    ]);
    for t in &TYPES {
        table.row(vec![
            ("oid", t.oid.into()),
            ("typname", t.name.into()),
            ("typnamespace", PG_CATALOG_NAMESPACE.into()),
            ("typowner", OWNER_ROLE.into()),
            ("typlen", t.len.into()),
            ("typbyval", (t.len > 0 && t.len <= 8).into()),
            ("typtype", "b".into()),
            ("typcategory", t.category.into()),
            ("typispreferred", false.into()),
            ("typisdefined", true.into()),
            ("typdelim", ",".into()),
            ("typrelid", 0.into()),
            ("typelem", 0.into()),
            ("typarray", array_of(t.oid).unwrap_or(0).into()),
            ("typinput", format!("{}in", t.name).into()),
            ("typoutput", format!("{}out", t.name).into()),
            ("typreceive", format!("{}recv", t.name).into()),
            ("typsend", format!("{}send", t.name).into()),
            ("typalign", "i".into()),
            ("typstorage", if t.len > 0 { "p" } else { "x" }.into()),
            ("typnotnull", false.into()),
            ("typbasetype", 0.into()),
            ("typtypmod", (-1).into()),
            ("typndims", 0.into()),
            (
                "typcollation",
                if t.collatable { DEFAULT_COLLATION } else { 0 }.into(),
            ),
        ]);
    }
    for (oid, element) in ARRAY_TYPES {
        let Some(base) = TYPES.iter().find(|t| t.oid == element) else {
            continue;
        };
        table.row(vec![
            ("oid", oid.into()),
            ("typname", format!("_{}", base.name).into()),
            ("typnamespace", PG_CATALOG_NAMESPACE.into()),
            ("typowner", OWNER_ROLE.into()),
            ("typlen", (-1).into()),
            ("typbyval", false.into()),
            ("typtype", "b".into()),
            ("typcategory", "A".into()),
            ("typispreferred", false.into()),
            ("typisdefined", true.into()),
            ("typdelim", ",".into()),
            ("typrelid", 0.into()),
            ("typelem", element.into()),
            ("typarray", 0.into()),
            ("typinput", "array_in".into()),
            ("typoutput", "array_out".into()),
            ("typreceive", "array_recv".into()),
            ("typsend", "array_send".into()),
            ("typalign", "i".into()),
            ("typstorage", "x".into()),
            ("typnotnull", false.into()),
            ("typbasetype", 0.into()),
            ("typtypmod", (-1).into()),
            ("typndims", 0.into()),
            (
                "typcollation",
                if base.collatable {
                    DEFAULT_COLLATION
                } else {
                    0
                }
                .into(),
            ),
        ]);
    }
    table
}

fn collations() -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("collname", Text),
        ("collnamespace", Int),
        ("collowner", Int),
        ("collprovider", Text),
        ("collisdeterministic", Bool),
        ("collencoding", Int),
        ("collcollate", Text),
        ("collctype", Text),
    ]);
    for (oid, name, provider) in [(DEFAULT_COLLATION, "default", "d"), (950, "C", "c")] {
        table.row(vec![
            ("oid", oid.into()),
            ("collname", name.into()),
            ("collnamespace", PG_CATALOG_NAMESPACE.into()),
            ("collowner", OWNER_ROLE.into()),
            ("collprovider", provider.into()),
            ("collisdeterministic", true.into()),
            ("collencoding", (-1).into()),
        ]);
    }
    table
}

fn constraints(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("conname", Text),
        ("connamespace", Int),
        ("contype", Text),
        ("condeferrable", Bool),
        ("condeferred", Bool),
        ("convalidated", Bool),
        ("conrelid", Int),
        ("contypid", Int),
        ("conindid", Int),
        ("conparentid", Int),
        ("confrelid", Int),
        ("confupdtype", Text),
        ("confdeltype", Text),
        ("confmatchtype", Text),
        ("conislocal", Bool),
        ("coninhcount", Int),
        ("connoinherit", Bool),
        ("conkey", IntList),
        ("confkey", IntList),
        ("conbin", Text),
    ]);
    // The primary key's constraint, and each UNIQUE constraint's, with the index behind it.
    for index in relations
        .indexes
        .iter()
        .filter(|i| i.primary || i.constraint)
    {
        let key: Vec<i64> = index
            .keys
            .iter()
            .filter_map(|(c, _)| {
                index
                    .table
                    .visible_columns()
                    .position(|(v, _)| v == *c)
                    .map(|p| p as i64 + 1)
            })
            .collect();
        table.row(vec![
            ("oid", constraint_oid(index).into()),
            ("conname", index.name.as_str().into()),
            ("connamespace", PUBLIC_NAMESPACE.into()),
            ("contype", if index.primary { "p" } else { "u" }.into()),
            ("condeferrable", false.into()),
            ("condeferred", false.into()),
            ("convalidated", true.into()),
            ("conrelid", table_oid(&index.table).into()),
            ("contypid", 0.into()),
            ("conindid", index.oid.into()),
            ("conparentid", 0.into()),
            ("confrelid", 0.into()),
            ("conislocal", true.into()),
            ("coninhcount", 0.into()),
            ("connoinherit", true.into()),
            ("conkey", Cell::IntList(key)),
        ]);
    }
    for t in &relations.tables {
        for check in &t.checks {
            table.row(vec![
                ("oid", check_oid(t, &check.name).into()),
                ("conname", check.name.as_str().into()),
                ("connamespace", PUBLIC_NAMESPACE.into()),
                ("contype", "c".into()),
                ("condeferrable", false.into()),
                ("condeferred", false.into()),
                ("convalidated", true.into()),
                ("conrelid", table_oid(t).into()),
                ("contypid", 0.into()),
                ("conindid", 0.into()),
                ("conparentid", 0.into()),
                ("confrelid", 0.into()),
                ("conislocal", true.into()),
                ("coninhcount", 0.into()),
                ("connoinherit", false.into()),
                ("conbin", check.expr.as_str().into()),
            ]);
        }
    }
    for fk in foreign_keys(relations) {
        table.row(vec![
            ("oid", fk.oid.into()),
            ("conname", fk.name.as_str().into()),
            ("connamespace", PUBLIC_NAMESPACE.into()),
            ("contype", "f".into()),
            ("condeferrable", false.into()),
            ("condeferred", false.into()),
            ("convalidated", true.into()),
            ("conrelid", table_oid(&fk.table).into()),
            ("contypid", 0.into()),
            ("conindid", fk.index_oid.into()),
            ("conparentid", 0.into()),
            ("confrelid", table_oid(&fk.referenced).into()),
            ("confupdtype", fk.on_update.code().to_string().into()),
            ("confdeltype", fk.on_delete.code().to_string().into()),
            ("confmatchtype", "s".into()),
            ("conislocal", true.into()),
            ("coninhcount", 0.into()),
            ("connoinherit", true.into()),
            ("conkey", Cell::IntList(fk.conkey())),
            ("confkey", Cell::IntList(fk.confkey())),
        ]);
    }
    table
}

/// The owner of every object (`rowdex`, the bootstrap role, as `postgres` is PostgreSQL's),
/// then the catalog's roles, each with an OID from its name (as a view's).
fn roles(name: &str, relations: &Relations) -> Table {
    let (oid_column, name_column) = if name == "pg_user" {
        ("usesysid", "usename")
    } else {
        ("oid", "rolname")
    };
    let mut table = Table::new(&[
        (oid_column, Int),
        (name_column, Text),
        ("rolsuper", Bool),
        ("rolinherit", Bool),
        ("rolcreaterole", Bool),
        ("rolcreatedb", Bool),
        ("rolcanlogin", Bool),
        ("rolreplication", Bool),
        ("rolconnlimit", Int),
        ("rolpassword", Text),
        ("rolvaliduntil", Text),
        ("rolbypassrls", Bool),
        ("rolconfig", TextList),
    ]);
    table.row(vec![
        (oid_column, OWNER_ROLE.into()),
        (name_column, OWNER_NAME.into()),
        ("rolsuper", true.into()),
        ("rolinherit", true.into()),
        ("rolcreaterole", true.into()),
        ("rolcreatedb", false.into()),
        ("rolcanlogin", true.into()),
        ("rolreplication", false.into()),
        ("rolconnlimit", (-1).into()),
        ("rolpassword", "********".into()),
        ("rolbypassrls", true.into()),
    ]);
    for role in relations.roles.iter().filter(|r| r.name != OWNER_NAME) {
        table.row(vec![
            (oid_column, view_oid(&role.name).into()),
            (name_column, role.name.as_str().into()),
            ("rolsuper", false.into()),
            ("rolinherit", true.into()),
            ("rolcreaterole", false.into()),
            ("rolcreatedb", false.into()),
            ("rolcanlogin", role.login.into()),
            ("rolreplication", false.into()),
            ("rolconnlimit", (-1).into()),
            ("rolpassword", "********".into()),
            ("rolbypassrls", false.into()),
        ]);
    }
    table
}

fn databases(facts: &SessionFacts) -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("datname", Text),
        ("datdba", Int),
        ("encoding", Int),
        ("datlocprovider", Text),
        ("datistemplate", Bool),
        ("datallowconn", Bool),
        ("datconnlimit", Int),
        ("dattablespace", Int),
        ("datcollate", Text),
        ("datctype", Text),
        ("daticulocale", Text),
        ("datcollversion", Text),
        ("datacl", TextList),
    ]);
    table.row(vec![
        ("oid", DATABASE_OID.into()),
        ("datname", facts.database.as_str().into()),
        ("datdba", OWNER_ROLE.into()),
        ("encoding", 6.into()),
        ("datlocprovider", "c".into()),
        ("datistemplate", false.into()),
        ("datallowconn", true.into()),
        ("datconnlimit", (-1).into()),
        ("dattablespace", 1663.into()),
        ("datcollate", "C".into()),
        ("datctype", "C".into()),
    ]);
    table
}

fn tablespaces() -> Table {
    let mut table = Table::new(&[
        ("oid", Int),
        ("spcname", Text),
        ("spcowner", Int),
        ("spcacl", TextList),
        ("spcoptions", TextList),
    ]);
    for (oid, name) in [(1663, "pg_default"), (1664, "pg_global")] {
        table.row(vec![
            ("oid", oid.into()),
            ("spcname", name.into()),
            ("spcowner", OWNER_ROLE.into()),
        ]);
    }
    table
}

fn pg_tables(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("schemaname", Text),
        ("tablename", Text),
        ("tableowner", Text),
        ("tablespace", Text),
        ("hasindexes", Bool),
        ("hasrules", Bool),
        ("hastriggers", Bool),
        ("rowsecurity", Bool),
    ]);
    for t in &relations.tables {
        let has_index = relations.indexes.iter().any(|i| i.table.id == t.id);
        table.row(vec![
            ("schemaname", "public".into()),
            ("tablename", t.name.as_str().into()),
            ("tableowner", OWNER_NAME.into()),
            ("hasindexes", has_index.into()),
            ("hasrules", false.into()),
            ("hastriggers", false.into()),
            ("rowsecurity", false.into()),
        ]);
    }
    table
}

fn pg_views(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("schemaname", Text),
        ("viewname", Text),
        ("viewowner", Text),
        ("definition", Text),
    ]);
    for (_, name, sql) in &relations.views {
        table.row(vec![
            ("schemaname", "public".into()),
            ("viewname", name.as_str().into()),
            ("viewowner", OWNER_NAME.into()),
            ("definition", sql.as_str().into()),
        ]);
    }
    table
}

fn pg_indexes(relations: &Relations) -> Table {
    let mut table = Table::new(&[
        ("schemaname", Text),
        ("tablename", Text),
        ("indexname", Text),
        ("tablespace", Text),
        ("indexdef", Text),
    ]);
    for index in &relations.indexes {
        table.row(vec![
            ("schemaname", "public".into()),
            ("tablename", index.table.name.as_str().into()),
            ("indexname", index.name.as_str().into()),
            ("indexdef", index.definition().into()),
        ]);
    }
    table
}

fn information_columns(relations: &Relations, facts: &SessionFacts) -> Table {
    let mut table = Table::new(&[
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("column_name", Text),
        ("ordinal_position", Int),
        ("column_default", Text),
        ("is_nullable", Text),
        ("data_type", Text),
        ("character_maximum_length", Int),
        ("numeric_precision", Int),
        ("numeric_scale", Int),
        ("udt_name", Text),
        ("is_generated", Text),
        ("generation_expression", Text),
    ]);
    for t in &relations.tables {
        for (num, (_, column)) in t.visible_columns().enumerate() {
            let (type_oid, typmod) = column_type(column);
            let full = format_type(type_oid, Some(typmod)).unwrap_or_default();
            // An array is `ARRAY`, its udt `_` and its element's name, as PostgreSQL reports.
            let element = ARRAY_TYPES
                .iter()
                .find(|(array, _)| *array == type_oid)
                .map(|(_, element)| *element);
            let data_type = match element {
                Some(_) => "ARRAY".to_string(),
                None => full.split('(').next().unwrap_or("").to_string(),
            };
            let (length, precision, scale) = match column.data_type {
                rowdex_catalog::DataType::Text { max_len } => (max_len.map(i64::from), None, None),
                rowdex_catalog::DataType::Decimal { precision, scale } => {
                    (None, Some(i64::from(precision)), Some(i64::from(scale)))
                }
                rowdex_catalog::DataType::Integer => match column.declared {
                    Some(rowdex_catalog::Declared::SmallInt) => (None, Some(16), Some(0)),
                    Some(rowdex_catalog::Declared::Integer) => (None, Some(32), Some(0)),
                    _ => (None, Some(64), Some(0)),
                },
                rowdex_catalog::DataType::Float => match column.declared {
                    Some(rowdex_catalog::Declared::Real) => (None, Some(24), None),
                    _ => (None, Some(53), None),
                },
                _ => (None, None, None),
            };
            let name_of = |oid: i64| {
                TYPES
                    .iter()
                    .find(|ty| ty.oid == oid)
                    .map_or("", |ty| ty.name)
            };
            let udt = match element {
                Some(element) => format!("_{}", name_of(element)),
                None => name_of(type_oid).to_string(),
            };
            let optional = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
            table.row(vec![
                ("table_catalog", facts.database.as_str().into()),
                ("table_schema", "public".into()),
                ("table_name", t.name.as_str().into()),
                ("column_name", column.name.as_str().into()),
                ("ordinal_position", (num as i64 + 1).into()),
                (
                    "column_default",
                    match &column.default {
                        Some(default) if column_default(column).0 && !column.is_generated() => {
                            postgres_default(column, default).into()
                        }
                        _ => Cell::Null,
                    },
                ),
                (
                    "is_nullable",
                    if column.nullable { "YES" } else { "NO" }.into(),
                ),
                ("data_type", data_type.into()),
                ("character_maximum_length", optional(length)),
                ("numeric_precision", optional(precision)),
                ("numeric_scale", optional(scale)),
                ("udt_name", udt.as_str().into()),
                (
                    "is_generated",
                    if column.is_generated() {
                        "ALWAYS"
                    } else {
                        "NEVER"
                    }
                    .into(),
                ),
                (
                    "generation_expression",
                    column
                        .generation
                        .as_deref()
                        .map_or(Cell::Null, |g| Cell::from(postgres_expression(g))),
                ),
            ]);
        }
    }
    table
}

/// `table_constraints` (a table's primary key and unique indexes) or `key_column_usage` (their
/// columns).
fn constraint_usage(name: &str, relations: &Relations, facts: &SessionFacts) -> Table {
    let usage = name == "key_column_usage";
    let mut table = if usage {
        Table::new(&[
            ("constraint_catalog", Text),
            ("constraint_schema", Text),
            ("constraint_name", Text),
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("column_name", Text),
            ("ordinal_position", Int),
            ("position_in_unique_constraint", Int),
        ])
    } else {
        Table::new(&[
            ("constraint_catalog", Text),
            ("constraint_schema", Text),
            ("constraint_name", Text),
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("constraint_type", Text),
            ("is_deferrable", Text),
            ("initially_deferred", Text),
        ])
    };
    // Constraints only: a unique index made by CREATE UNIQUE INDEX is not one.
    for index in relations
        .indexes
        .iter()
        .filter(|i| i.primary || i.constraint)
    {
        let common = || {
            vec![
                ("constraint_catalog", Cell::from(facts.database.as_str())),
                ("constraint_schema", "public".into()),
                ("constraint_name", index.name.as_str().into()),
                ("table_catalog", facts.database.as_str().into()),
                ("table_schema", "public".into()),
                ("table_name", index.table.name.as_str().into()),
            ]
        };
        if usage {
            for (position, (column, _)) in index.keys.iter().enumerate() {
                let mut cells = common();
                cells.push((
                    "column_name",
                    index.table.columns[*column].name.as_str().into(),
                ));
                cells.push(("ordinal_position", (position as i64 + 1).into()));
                table.row(cells);
            }
        } else {
            let mut cells = common();
            let kind = if index.primary {
                "PRIMARY KEY"
            } else {
                "UNIQUE"
            };
            cells.push(("constraint_type", kind.into()));
            cells.push(("is_deferrable", "NO".into()));
            cells.push(("initially_deferred", "NO".into()));
            table.row(cells);
        }
    }
    for fk in foreign_keys(relations) {
        let common = || {
            vec![
                ("constraint_catalog", Cell::from(facts.database.as_str())),
                ("constraint_schema", "public".into()),
                ("constraint_name", fk.name.as_str().into()),
                ("table_catalog", facts.database.as_str().into()),
                ("table_schema", "public".into()),
                ("table_name", fk.table.name.as_str().into()),
            ]
        };
        if usage {
            for (position, column) in fk.columns.iter().enumerate() {
                let mut cells = common();
                cells.push((
                    "column_name",
                    fk.table.columns[*column].name.as_str().into(),
                ));
                cells.push(("ordinal_position", (position as i64 + 1).into()));
                cells.push((
                    "position_in_unique_constraint",
                    (position as i64 + 1).into(),
                ));
                table.row(cells);
            }
        } else {
            let mut cells = common();
            cells.push(("constraint_type", "FOREIGN KEY".into()));
            cells.push(("is_deferrable", "NO".into()));
            cells.push(("initially_deferred", "NO".into()));
            table.row(cells);
        }
    }
    table
}

/// `referential_constraints`: each foreign key with the unique constraint it references and
/// its rules.
fn referential_constraints(relations: &Relations, facts: &SessionFacts) -> Table {
    let mut table = Table::new(&[
        ("constraint_catalog", Text),
        ("constraint_schema", Text),
        ("constraint_name", Text),
        ("unique_constraint_catalog", Text),
        ("unique_constraint_schema", Text),
        ("unique_constraint_name", Text),
        ("match_option", Text),
        ("update_rule", Text),
        ("delete_rule", Text),
    ]);
    for fk in foreign_keys(relations) {
        table.row(vec![
            ("constraint_catalog", facts.database.as_str().into()),
            ("constraint_schema", "public".into()),
            ("constraint_name", fk.name.as_str().into()),
            ("unique_constraint_catalog", facts.database.as_str().into()),
            ("unique_constraint_schema", "public".into()),
            ("unique_constraint_name", fk.unique_name.as_str().into()),
            ("match_option", "NONE".into()),
            ("update_rule", fk.on_update.sql().into()),
            ("delete_rule", fk.on_delete.sql().into()),
        ]);
    }
    table
}

/// `constraint_column_usage`: the columns each constraint uses; a foreign key's are the
/// referenced ones, as PostgreSQL lists them.
fn constraint_column_usage(relations: &Relations, facts: &SessionFacts) -> Table {
    let mut table = Table::new(&[
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("column_name", Text),
        ("constraint_catalog", Text),
        ("constraint_schema", Text),
        ("constraint_name", Text),
    ]);
    let mut row = |on: &rowdex_catalog::TableDef, column: usize, constraint: &str| {
        table.row(vec![
            ("table_catalog", facts.database.as_str().into()),
            ("table_schema", "public".into()),
            ("table_name", on.name.as_str().into()),
            ("column_name", on.columns[column].name.as_str().into()),
            ("constraint_catalog", facts.database.as_str().into()),
            ("constraint_schema", "public".into()),
            ("constraint_name", constraint.into()),
        ]);
    };
    for index in relations
        .indexes
        .iter()
        .filter(|i| i.primary || i.constraint)
    {
        for (column, _) in &index.keys {
            row(&index.table, *column, &index.name);
        }
    }
    for fk in foreign_keys(relations) {
        for column in &fk.referenced_columns {
            row(&fk.referenced, *column, &fk.name);
        }
    }
    table
}
