//! rowdex's catalog as PostgreSQL describes one: every table, index (the primary key's
//! included, as PostgreSQL has one) and view as a relation with an OID, its attributes with
//! PostgreSQL types, and the fixed objects every PostgreSQL database has (the `pg_catalog`,
//! `public` and `information_schema` namespaces, the owner role, the types rowdex uses).
//!
//! OIDs are derived from rowdex's catalog ids, which are never reused, so a client that reads
//! a table's OID in one query finds the same table with it in the next.

use std::sync::Arc;

use rowdex::arrow::datatypes::DataType as ArrowType;
use rowdex::{Database, SchemaView, quote_ident};
use rowdex_catalog::{ColumnDef, DataType, Declared, IndexDef, RoleDef, TableDef};

use crate::pg_catalog::expressions::{is_call, postgres_expression};

/// The first OID of user objects, as in PostgreSQL.
const FIRST_USER_OID: i64 = 16_384;
/// Where view OIDs start (views have no catalog id; theirs is a hash of the name).
const FIRST_VIEW_OID: i64 = 1 << 30;

pub const PG_CATALOG_NAMESPACE: i64 = 11;
pub const PUBLIC_NAMESPACE: i64 = 2200;
pub const INFORMATION_SCHEMA_NAMESPACE: i64 = 13_000;
/// The role that owns every object (PostgreSQL's bootstrap superuser has OID 10).
pub const OWNER_ROLE: i64 = 10;
pub const OWNER_NAME: &str = "rowdex";
pub const DATABASE_OID: i64 = 16_384;
pub const HEAP_AM: i64 = 2;
pub const BTREE_AM: i64 = 403;
pub const DEFAULT_COLLATION: i64 = 100;

/// The namespaces, as (oid, name).
pub const NAMESPACES: [(i64, &str); 3] = [
    (PG_CATALOG_NAMESPACE, "pg_catalog"),
    (PUBLIC_NAMESPACE, "public"),
    (INFORMATION_SCHEMA_NAMESPACE, "information_schema"),
];

/// A PostgreSQL type rowdex's values take: (oid, name, length, category, collation).
pub struct PgType {
    pub oid: i64,
    pub name: &'static str,
    pub len: i64,
    pub category: &'static str,
    pub collatable: bool,
}

/// The types of pg_type: rowdex's column types and those its results and catalog use.
pub const TYPES: [PgType; 21] = [
    pg_type(16, "bool", 1, "B", false),
    pg_type(17, "bytea", -1, "U", false),
    pg_type(18, "char", 1, "Z", true),
    pg_type(19, "name", 64, "S", true),
    pg_type(20, "int8", 8, "N", false),
    pg_type(21, "int2", 2, "N", false),
    pg_type(22, "int2vector", -1, "A", false),
    pg_type(23, "int4", 4, "N", false),
    pg_type(25, "text", -1, "S", true),
    pg_type(26, "oid", 4, "N", false),
    pg_type(114, "json", -1, "U", false),
    pg_type(700, "float4", 4, "N", false),
    pg_type(701, "float8", 8, "N", false),
    pg_type(1042, "bpchar", -1, "S", true),
    pg_type(1043, "varchar", -1, "S", true),
    pg_type(1082, "date", 4, "D", false),
    pg_type(1114, "timestamp", 8, "D", false),
    pg_type(1184, "timestamptz", 8, "D", false),
    pg_type(1700, "numeric", -1, "N", false),
    pg_type(2950, "uuid", 16, "U", false),
    pg_type(3802, "jsonb", -1, "U", false),
];

/// The array types of the base types, as (array OID, element OID): the types of the lists
/// drivers bind to `= ANY($1)`, which pg_type holds so that a driver introspecting one
/// (asyncpg) finds it.
pub const ARRAY_TYPES: [(i64, i64); 20] = [
    (1000, 16),
    (1001, 17),
    (1002, 18),
    (1003, 19),
    (1016, 20),
    (1005, 21),
    (1007, 23),
    (1009, 25),
    (1028, 26),
    (199, 114),
    (1021, 700),
    (1022, 701),
    (1014, 1042),
    (1015, 1043),
    (1182, 1082),
    (1115, 1114),
    (1185, 1184),
    (1231, 1700),
    (2951, 2950),
    (3807, 3802),
];

/// The array type of base type `oid`, if pg_type has one.
pub fn array_of(oid: i64) -> Option<i64> {
    ARRAY_TYPES
        .iter()
        .find(|(_, element)| *element == oid)
        .map(|(array, _)| *array)
}

const fn pg_type(
    oid: i64,
    name: &'static str,
    len: i64,
    category: &'static str,
    collatable: bool,
) -> PgType {
    PgType {
        oid,
        name,
        len,
        category,
        collatable,
    }
}

/// A column's PostgreSQL type: (type oid, typmod), as pg_attribute holds them: its declared
/// type where it has one (INTEGER, REAL, CHAR(n), ...), else its stored type's.
pub fn column_type(column: &ColumnDef) -> (i64, i64) {
    let length = |max_len: Option<u32>| max_len.map_or(-1, |n| i64::from(n) + 4);
    match (column.declared, column.data_type) {
        (Some(Declared::SmallInt), _) => (21, -1),
        (Some(Declared::Integer), _) => (23, -1),
        (Some(Declared::Real), _) => (700, -1),
        (Some(Declared::Char), DataType::Text { max_len }) => (1042, length(max_len)),
        (Some(Declared::Varchar), DataType::Text { max_len }) => (1043, length(max_len)),
        (Some(Declared::Json), _) => (114, -1),
        (Some(Declared::Jsonb), _) => (3802, -1),
        (_, data_type) => stored_type(&data_type),
    }
}

/// The PostgreSQL type of rowdex's stored type `data_type`: (type oid, typmod).
fn stored_type(data_type: &DataType) -> (i64, i64) {
    match *data_type {
        DataType::Boolean => (16, -1),
        DataType::Integer => (20, -1),
        DataType::Float => (701, -1),
        DataType::Decimal { precision, scale } => (
            1700,
            ((i64::from(precision) << 16) | i64::from(scale as u8)) + 4,
        ),
        DataType::Text { max_len: Some(n) } => (1043, i64::from(n) + 4),
        DataType::Text { max_len: None } => (25, -1),
        DataType::Bytes { .. } => (17, -1),
        DataType::Date => (1082, -1),
        DataType::Timestamp => (1114, -1),
        DataType::TimestampTz => (1184, -1),
        DataType::Uuid => (2950, -1),
        DataType::Array { element } => (array_of(i64::from(element.pg_oid())).unwrap_or(1009), -1),
    }
}

/// The PostgreSQL type of a result column of Arrow type `data_type`: (type oid, typmod).
pub fn arrow_type(data_type: &ArrowType) -> (i64, i64) {
    match data_type {
        ArrowType::Boolean => (16, -1),
        ArrowType::Int16 => (21, -1),
        ArrowType::Int32 => (23, -1),
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::UInt64 => (20, -1),
        ArrowType::Float32 => (700, -1),
        ArrowType::Float64 => (701, -1),
        ArrowType::Decimal128(precision, scale) => (
            1700,
            ((i64::from(*precision) << 16) | i64::from(*scale as u8)) + 4,
        ),
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => (17, -1),
        ArrowType::Date32 => (1082, -1),
        ArrowType::Timestamp(_, None) => (1114, -1),
        ArrowType::Timestamp(_, Some(_)) => (1184, -1),
        _ => (25, -1),
    }
}

/// The OID of the type `name` names (`int4`, `integer`, `pg_catalog.text`, `character
/// varying`, ...), as `to_regtype` finds it; None for a type rowdex does not have.
pub fn type_oid_by_name(name: &str) -> Option<i64> {
    let name = name.trim().to_lowercase();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
    let alias = match name {
        "int" => Some(23),
        "decimal" => Some(1700),
        "float" => Some(701),
        "character" | "char" => Some(1042),
        "varchar" => Some(1043),
        _ => None,
    };
    alias.or_else(|| {
        TYPES
            .iter()
            .find(|t| t.name == name || format_type(t.oid, None).as_deref() == Some(name))
            .map(|t| t.oid)
    })
}

/// `format_type(oid, typmod)`: the type as SQL spells it (`character varying(20)`,
/// `numeric(10,2)`); None for an OID that is no type.
pub fn format_type(oid: i64, typmod: Option<i64>) -> Option<String> {
    let modifier = typmod.filter(|m| *m >= 4).map(|m| m - 4);
    Some(match oid {
        16 => "boolean".to_string(),
        17 => "bytea".to_string(),
        18 => "\"char\"".to_string(),
        19 => "name".to_string(),
        20 => "bigint".to_string(),
        21 => "smallint".to_string(),
        22 => "int2vector".to_string(),
        23 => "integer".to_string(),
        25 => "text".to_string(),
        26 => "oid".to_string(),
        700 => "real".to_string(),
        701 => "double precision".to_string(),
        1042 => match modifier {
            Some(n) => format!("character({n})"),
            None => "bpchar".to_string(),
        },
        1043 => match modifier {
            Some(n) => format!("character varying({n})"),
            None => "character varying".to_string(),
        },
        1082 => "date".to_string(),
        1114 => "timestamp without time zone".to_string(),
        1184 => "timestamp with time zone".to_string(),
        2950 => "uuid".to_string(),
        114 => "json".to_string(),
        3802 => "jsonb".to_string(),
        1700 => match modifier {
            Some(m) => format!("numeric({},{})", m >> 16, m & 0xffff),
            None => "numeric".to_string(),
        },
        array => {
            let (_, element) = ARRAY_TYPES.iter().find(|(a, _)| *a == array)?;
            format!("{}[]", format_type(*element, None)?)
        }
    })
}

/// What kind of relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelKind {
    Table,
    Index,
    View,
}

impl RelKind {
    /// pg_class.relkind.
    pub fn code(self) -> &'static str {
        match self {
            RelKind::Table => "r",
            RelKind::Index => "i",
            RelKind::View => "v",
        }
    }
}

/// An index as PostgreSQL sees it: a secondary index, or the primary key's.
#[derive(Debug, Clone)]
pub struct PgIndex {
    pub oid: i64,
    pub name: String,
    pub table: Arc<TableDef>,
    /// Key columns (positions in the table's columns) with their DESC flags.
    pub keys: Vec<(usize, bool)>,
    /// Covered columns (INCLUDE).
    pub include: Vec<usize>,
    pub unique: bool,
    pub primary: bool,
    /// Backs a UNIQUE constraint (shown in `pg_constraint` with it).
    pub constraint: bool,
    /// Complete (a secondary index still being built is not valid yet).
    pub valid: bool,
    /// A partial index's condition, as written.
    pub predicate: Option<String>,
}

impl PgIndex {
    /// `CREATE [UNIQUE] INDEX name ON public.table USING btree (a, b DESC) [INCLUDE (c)]
    /// [WHERE (condition)]`, as `pg_get_indexdef` writes it.
    pub fn definition(&self) -> String {
        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|&(column, desc)| {
                // An expression other than a call goes in parentheses of its own.
                let text = self.column_text(column);
                let hidden = self.table.columns[column].hidden;
                let name = if hidden && !is_call(&text) {
                    format!("({text})")
                } else {
                    text
                };
                if desc { format!("{name} DESC") } else { name }
            })
            .collect();
        let mut text = format!(
            "CREATE {}INDEX {} ON public.{} USING btree ({})",
            if self.unique { "UNIQUE " } else { "" },
            quote_ident(&self.name),
            quote_ident(&self.table.name),
            keys.join(", ")
        );
        if !self.include.is_empty() {
            let include: Vec<String> = self
                .include
                .iter()
                .map(|&c| quote_ident(&self.table.columns[c].name))
                .collect();
            text.push_str(&format!(" INCLUDE ({})", include.join(", ")));
        }
        if let Some(predicate) = &self.predicate {
            text.push_str(&format!(" WHERE ({predicate})"));
        }
        text
    }

    /// How `pg_get_indexdef(index, n)` writes the table column at `column` in the index: its
    /// name, or for an indexed expression (a hidden generated column) the expression as
    /// PostgreSQL deparses it.
    pub fn column_text(&self, column: usize) -> String {
        let def = &self.table.columns[column];
        match (&def.generation, def.hidden) {
            (Some(expr), true) => postgres_expression(expr),
            _ => quote_ident(&def.name),
        }
    }

    /// The columns of the index relation: the keys, then the covered ones.
    pub fn columns(&self) -> Vec<usize> {
        self.keys
            .iter()
            .map(|(c, _)| *c)
            .chain(self.include.iter().copied())
            .collect()
    }
}

/// A view's output column: its name, type OID and typmod.
pub type ViewColumn = (String, i64, i64);

/// rowdex's catalog as relations, read once for one catalog query.
pub struct Relations {
    pub tables: Vec<Arc<TableDef>>,
    pub indexes: Vec<PgIndex>,
    /// (oid, name, defining SQL).
    pub views: Vec<(i64, String, String)>,
    /// The columns of each view, by the view's OID, when [`Relations::describe_views`]
    /// planned them.
    pub view_columns: Vec<(i64, Vec<ViewColumn>)>,
    /// The catalog's roles, when [`Relations::read_roles`] read them.
    pub roles: Vec<RoleDef>,
}

impl Relations {
    /// The relations as `schema` (a session's view of the catalog, its uncommitted schema
    /// changes included) has them.
    pub fn read(schema: &SchemaView) -> Relations {
        let mut tables = schema.tables();
        tables.sort_by_key(|t| t.id);
        let mut indexes = Vec::new();
        for table in &tables {
            if let Some(primary) = primary_index(table) {
                indexes.push(primary);
            }
            indexes.extend(
                table
                    .indexes
                    .iter()
                    .map(|index| secondary_index(table, index)),
            );
        }
        let mut views: Vec<(i64, String, String)> = schema
            .views()
            .into_iter()
            .map(|(name, sql)| (view_oid(&name), name, sql))
            .collect();
        views.sort();
        Relations {
            tables,
            indexes,
            views,
            view_columns: Vec::new(),
            roles: Vec::new(),
        }
    }

    /// Reads the catalog's roles (from the store, so only for the tables that show them).
    pub async fn read_roles(&mut self, db: &Database) {
        // A store that cannot be read shows no roles; the query itself still answers.
        self.roles = db.roles().await.unwrap_or_default();
    }

    /// Plans every view to learn its columns (a view that no longer plans, its table dropped,
    /// has none).
    pub async fn describe_views(&mut self, db: &Database) {
        let session = db.session();
        for (oid, _, sql) in &self.views {
            let Ok(prepared) = session.prepare(sql) else {
                continue;
            };
            let Ok(description) = prepared.describe().await else {
                continue;
            };
            let columns = description.columns.map_or_else(Vec::new, |schema| {
                schema
                    .fields()
                    .iter()
                    .map(|f| {
                        let (oid, typmod) = arrow_type(f.data_type());
                        (f.name().clone(), oid, typmod)
                    })
                    .collect()
            });
            self.view_columns.push((*oid, columns));
        }
    }

    /// The table with OID `oid`.
    pub fn table(&self, oid: i64) -> Option<&Arc<TableDef>> {
        self.tables.iter().find(|t| table_oid(t) == oid)
    }

    pub fn index(&self, oid: i64) -> Option<&PgIndex> {
        self.indexes.iter().find(|i| i.oid == oid)
    }

    /// The name of the relation with OID `oid`.
    pub fn relation_name(&self, oid: i64) -> Option<String> {
        if let Some(table) = self.table(oid) {
            return Some(table.name.clone());
        }
        if let Some(index) = self.index(oid) {
            return Some(index.name.clone());
        }
        self.views
            .iter()
            .find(|(view, _, _)| *view == oid)
            .map(|(_, name, _)| name.clone())
    }

    /// The sequence behind a column's `nextval('...')` DEFAULT (a SERIAL or identity column),
    /// schema-qualified as `pg_get_serial_sequence` gives it.
    pub fn serial_sequence(&self, table: &str, column: &str) -> Option<String> {
        let table = table
            .strip_prefix("public.")
            .unwrap_or(table)
            .trim_matches('"');
        let column = column.trim_matches('"');
        let def = self.tables.iter().find(|t| t.name == table)?;
        let default = def
            .columns
            .iter()
            .find(|c| c.name == column)?
            .default
            .as_ref()?;
        let sequence = default.strip_prefix("nextval('")?.split('\'').next()?;
        Some(format!("public.{sequence}"))
    }

    /// The OID of the relation named `name` (a table, an index or a view).
    pub fn relation_oid(&self, name: &str) -> Option<i64> {
        // `'16386'::regclass` is the OID itself, as in PostgreSQL.
        if let Ok(oid) = name.trim().parse::<i64>() {
            return Some(oid);
        }
        let name = name.strip_prefix("public.").unwrap_or(name);
        let name = name.trim_matches('"');
        self.tables
            .iter()
            .find(|t| t.name == name)
            .map(|t| table_oid(t))
            .or_else(|| self.indexes.iter().find(|i| i.name == name).map(|i| i.oid))
            .or_else(|| {
                self.views
                    .iter()
                    .find(|(_, view, _)| view == name)
                    .map(|(oid, _, _)| *oid)
            })
    }
}

pub fn table_oid(table: &TableDef) -> i64 {
    FIRST_USER_OID + 4 * i64::from(table.id)
}

/// The OID of the constraint an index backs (a primary key's, a UNIQUE constraint's): the
/// index's own plus one (a primary index is its table's plus one; index OIDs are 4 apart).
pub fn constraint_oid(index: &PgIndex) -> i64 {
    index.oid + 1
}

/// A CHECK constraint's OID (from its table's and its own name, as a view's from its name).
pub fn check_oid(table: &TableDef, check: &str) -> i64 {
    view_oid(&format!("{}\u{0}check\u{0}{check}", table.name))
}

/// The OID of a column's DEFAULT (`pg_attrdef`).
pub fn default_oid(table: &TableDef, column: &str) -> i64 {
    view_oid(&format!("{}\u{0}default\u{0}{column}", table.name))
}

pub fn view_oid(name: &str) -> i64 {
    // FNV-1a: stable across processes, unlike the standard library's hasher.
    let hash = name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    FIRST_VIEW_OID + i64::from(hash & 0x3fff_ffff)
}

/// The primary key as PostgreSQL has it: an index `<table>_pkey`, unless the key is the hidden
/// row id of a table declared without one.
fn primary_index(table: &Arc<TableDef>) -> Option<PgIndex> {
    if table.key.iter().any(|k| table.columns[k.column].hidden) {
        return None;
    }
    Some(PgIndex {
        oid: table_oid(table) + 1,
        name: format!("{}_pkey", table.name),
        table: table.clone(),
        keys: table.key.iter().map(|k| (k.column, k.desc)).collect(),
        include: Vec::new(),
        unique: true,
        primary: true,
        constraint: false,
        valid: true,
        predicate: None,
    })
}

fn secondary_index(table: &Arc<TableDef>, index: &IndexDef) -> PgIndex {
    PgIndex {
        oid: FIRST_USER_OID + 4 * i64::from(index.id),
        name: index.name.clone(),
        table: table.clone(),
        keys: index.columns.iter().map(|k| (k.column, k.desc)).collect(),
        include: index.include.clone(),
        unique: index.unique,
        primary: false,
        constraint: index.constraint,
        valid: index.state == rowdex_catalog::IndexState::Ready,
        predicate: index.filter.as_ref().map(|filter| filter.text.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_spelled_as_postgresql_does() {
        let (oid, typmod) = stored_type(&DataType::Text { max_len: Some(20) });
        assert_eq!(
            format_type(oid, Some(typmod)).as_deref(),
            Some("character varying(20)")
        );
        let (oid, typmod) = stored_type(&DataType::Decimal {
            precision: 10,
            scale: 2,
        });
        assert_eq!(
            format_type(oid, Some(typmod)).as_deref(),
            Some("numeric(10,2)")
        );
        assert_eq!(
            format_type(1114, Some(-1)).as_deref(),
            Some("timestamp without time zone")
        );
        assert_eq!(format_type(99_999, None), None);
    }

    #[test]
    fn a_partial_index_definition_ends_with_its_condition() {
        let columns = vec![
            ColumnDef::nullable("id", DataType::Integer),
            ColumnDef::nullable("score", DataType::Integer),
        ];
        let table = TableDef::new("px", columns, &[("id".to_string(), false)], 0)
            .unwrap_or_else(|e| panic!("a valid table: {e}"));
        let index = IndexDef {
            id: 40,
            name: "px_high".into(),
            columns: vec![rowdex_catalog::KeyColumn {
                column: 1,
                desc: false,
            }],
            include: Vec::new(),
            unique: false,
            state: rowdex_catalog::IndexState::Ready,
            salt_buckets: 0,
            constraint: false,
            filter: Some(rowdex_catalog::IndexFilter {
                text: "score > 990".into(),
                conditions: Vec::new(),
            }),
        };
        assert_eq!(
            secondary_index(&Arc::new(table), &index).definition(),
            "CREATE INDEX px_high ON public.px USING btree (score) WHERE (score > 990)"
        );
    }

    #[test]
    fn view_oids_stay_apart_from_catalog_ids() {
        assert!(view_oid("v1") >= FIRST_VIEW_OID);
        assert_eq!(view_oid("v1"), view_oid("v1"));
        assert_ne!(view_oid("v1"), view_oid("v2"));
    }
}
