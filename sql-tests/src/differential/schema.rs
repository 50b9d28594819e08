//! Random tables and secondary indexes, and their DDL: rowdex's (DESC key columns, salting,
//! indexes) and the equivalent SQLite table, which has the same columns, types, DEFAULTs and
//! key but none of rowdex's storage options, since those must not change any answer.

use super::rng::Rng;
use super::value::Value;

/// The generator's column types. Each maps to one rowdex type and the SQLite type name with
/// the same affinity (INTEGER, TEXT, REAL; a boolean is NUMERIC in SQLite and holds 0 or 1).
/// UUID and TIMESTAMPTZ are TEXT in SQLite, their values written in the one form rowdex
/// writes them in (lowercase hyphenated hex; `YYYY-MM-DD HH:MM:SS[.ffffff]+00`, the tester's
/// session being in UTC), whose text order is the types' own order: SQLite's text
/// comparisons are then rowdex's comparisons of the values.
/// Not generated, for want of an SQLite equivalent: DATE and TIMESTAMP (text or numbers
/// there), BYTEA, and VARCHAR(n), whose length rowdex enforces and SQLite ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Int,
    Text,
    Real,
    Bool,
    /// `DECIMAL(12,2)` (or `NUMERIC(12,2)`), the same text in both engines' DDL: exact in
    /// rowdex, NUMERIC affinity in SQLite, which stores 7 as an integer and 12.5 as a real.
    /// The two agree because the values have at most two digits after the point and stay
    /// under 10^6 (see `data`), the conditions on them are comparisons with such literals
    /// (no arithmetic, see `generate`), and answers are compared as numbers within a
    /// tolerance far below a cent (see `value`), SQLite's sums and averages being doubles.
    Decimal,
    /// `UUID`: a 16-byte key type of its own in rowdex.
    Uuid,
    /// `TIMESTAMPTZ`: a UTC instant in rowdex.
    TimestampTz,
}

impl ColType {
    /// The type SQLite is given for a column of this type.
    pub fn sqlite_spelling(self, spelling: &'static str) -> &'static str {
        match self {
            ColType::Uuid | ColType::TimestampTz => "TEXT",
            _ => spelling,
        }
    }
}

/// The scale of every generated DECIMAL column (`DECIMAL(12,2)`): values and literals have
/// at most this many digits after the point.
pub const DECIMAL_SCALE: u8 = 2;

/// Which values a column holds (see `data`): whether its numbers may be extreme, which decides
/// whether summing them is well defined in both engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Small integers, or reals with few binary digits: any sum of a few hundred of them is
    /// exact in `i64` and `f64`, in any order. Decimals of at most 1000: their sums are
    /// exact in rowdex and within a billionth in SQLite's doubles.
    Small,
    /// Also the extremes: `i64::MIN`/`MAX`, reals near the ends of `f64`, decimals up to
    /// 999999.99, and so on.
    Wide,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    /// The type's spelling in DDL: rowdex accepts several for each type.
    pub spelling: &'static str,
    /// Declared `NOT NULL` (key columns are NOT NULL without saying so).
    pub not_null: bool,
    pub domain: Domain,
    /// How often a row holds NULL here, in percent (if the column allows it): a few columns
    /// are mostly NULL, where IS NULL paths and NULL ordering matter most.
    pub null_percent: usize,
    /// `DEFAULT <constant>` of the column's type (never on a key column): what an INSERT that
    /// leaves the column out writes (see `data::random_defaults`).
    pub default: Option<Value>,
}

/// A column of a key (primary or index) with its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPart {
    pub column: String,
    pub desc: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// The PRIMARY KEY; empty for a table keyed by rowdex's hidden row id.
    pub key: Vec<KeyPart>,
    /// `WITH (SALT_BUCKETS = n)`.
    pub salt: Option<u32>,
    /// `SALT_ON = (...)`: the key columns the salt is hashed from (empty: the whole key).
    pub salt_on: Vec<String>,
    /// A one-column ascending key written inline (`a BIGINT PRIMARY KEY`), the other syntax.
    pub inline_key: bool,
    /// `UNIQUE (...)` constraints: unique indexes in rowdex (in every configuration, being
    /// part of the table), enforced by SQLite alike.
    pub uniques: Vec<Vec<KeyPart>>,
    /// `TTL = TTL_SECONDS`: a year, so nothing expires during a run; the table must answer
    /// like any other while every write stamps its rows and index entries.
    pub ttl: bool,
    /// `VERSIONS = 3`: every overwrite and delete also writes history, which no query of the
    /// generator reads; the table must answer like any other.
    pub versions: bool,
    /// Non-key columns declared in a column family (`f1.c`), with their family: queries then
    /// read some families and not others.
    pub families: Vec<(String, String)>,
}

/// The TTL of a generated table with one.
pub const TTL_SECONDS: u64 = 365 * 24 * 3600;

/// When an index is created, relative to the rows: before them (every INSERT maintains it),
/// after the initial load (a backfill), or after the later writes too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexTiming {
    BeforeLoad,
    AfterLoad,
    AfterWrites,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    pub name: String,
    pub table: String,
    pub columns: Vec<KeyPart>,
    pub include: Vec<String>,
    pub unique: bool,
    pub timing: IndexTiming,
    /// `WITH (SALT_BUCKETS = n)`: entries spread over buckets by their indexed values.
    pub salt: Option<u16>,
    /// A partial index's `WHERE` condition on one column: (the column, the condition).
    pub filter: Option<(String, String)>,
    /// An index on an expression: its first key part is this function of the first column
    /// (`lower(b)`, `(a % 7)`), which rowdex keeps as a hidden generated column.
    pub expression: Option<Applied>,
}

/// A function of one column that an index may lead with and a condition may compare, written
/// and evaluated alike by both engines over the generator's values: `lower` of text (the
/// texts hold no upper-case letter outside ASCII, where SQLite's lower would differ), its first
/// two characters, the remainder of an integer (negative for a negative one in both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Lower,
    Prefix,
    Modulo(i64),
}

impl Applied {
    /// The expression over `column` (a column's SQL, qualified or not).
    pub fn sql(self, column: &str) -> String {
        match self {
            Applied::Lower => format!("lower({column})"),
            Applied::Prefix => format!("substr({column}, 1, 2)"),
            Applied::Modulo(n) => format!("({column} % {n})"),
        }
    }

    /// A function that applies to values of type `ty`, if one does.
    pub fn random_for(rng: &mut Rng, ty: ColType) -> Option<Applied> {
        match ty {
            ColType::Text => Some(*rng.pick(&[Applied::Lower, Applied::Prefix])),
            ColType::Int => Some(Applied::Modulo(*rng.pick(&[3, 7, 10]))),
            _ => None,
        }
    }

    /// The function's value for `value` (NULL for NULL), so that a condition's literal can be
    /// one some row gives.
    pub fn of(self, value: &Value) -> Value {
        match (self, value) {
            (Applied::Lower, Value::Text(text)) => Value::Text(text.to_ascii_lowercase()),
            (Applied::Prefix, Value::Text(text)) => Value::Text(text.chars().take(2).collect()),
            (Applied::Modulo(n), Value::Int(i)) => Value::Int(i % n),
            _ => Value::Null,
        }
    }
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Whether a UNIQUE constraint names the column.
    pub fn in_unique(&self, name: &str) -> bool {
        self.uniques.iter().flatten().any(|k| k.column == name)
    }

    pub fn is_key(&self, name: &str) -> bool {
        self.key.iter().any(|k| k.column == name)
    }

    /// Whether a column may hold NULL.
    pub fn nullable(&self, name: &str) -> bool {
        !self.is_key(name) && self.column(name).is_some_and(|c| !c.not_null)
    }

    /// rowdex's CREATE TABLE.
    pub fn rowdex_ddl(&self) -> String {
        // Only columns still in the key (the shrinker may have dropped some).
        let salt_on: Vec<&str> = self
            .salt_on
            .iter()
            .filter(|c| self.is_key(c))
            .map(String::as_str)
            .collect();
        let mut options = Vec::new();
        if let Some(n) = self.salt {
            options.push(format!("SALT_BUCKETS = {n}"));
            if !salt_on.is_empty() {
                options.push(format!("SALT_ON = ({})", salt_on.join(", ")));
            }
        }
        if self.ttl {
            options.push(format!("TTL = {TTL_SECONDS}"));
        }
        if self.versions {
            options.push("VERSIONS = 3".to_string());
        }
        let salt = if options.is_empty() {
            String::new()
        } else {
            format!(" WITH ({})", options.join(", "))
        };
        format!("CREATE TABLE {} ({}){salt}", self.name, self.body(false))
    }

    /// SQLite's CREATE TABLE: the same columns and key. Key columns are declared NOT NULL
    /// because SQLite, unlike rowdex, would otherwise accept NULL in them.
    pub fn sqlite_ddl(&self) -> String {
        format!("CREATE TABLE {} ({})", self.name, self.body(true))
    }

    fn body(&self, sqlite: bool) -> String {
        let key_not_null = sqlite;
        let inline = self.inline_key && self.key.len() == 1;
        let mut parts: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let family = self
                    .families
                    .iter()
                    .find(|(column, _)| *column == c.name && !sqlite && !self.is_key(column))
                    .map(|(_, family)| format!("{family}."))
                    .unwrap_or_default();
                let spelling = if sqlite {
                    c.ty.sqlite_spelling(c.spelling)
                } else {
                    c.spelling
                };
                let mut text = format!("{family}{} {spelling}", c.name);
                if c.not_null || (key_not_null && self.is_key(&c.name)) {
                    text.push_str(" NOT NULL");
                }
                if let Some(default) = &c.default {
                    text.push_str(&format!(" DEFAULT {}", default.sql()));
                }
                if inline && self.is_key(&c.name) {
                    text.push_str(" PRIMARY KEY");
                }
                text
            })
            .collect();
        if !self.key.is_empty() && !inline {
            parts.push(format!("PRIMARY KEY ({})", key_list(&self.key)));
        }
        for unique in &self.uniques {
            parts.push(format!("UNIQUE ({})", key_list(unique)));
        }
        parts.join(", ")
    }
}

impl Index {
    pub fn ddl(&self) -> String {
        let include = if self.include.is_empty() {
            String::new()
        } else {
            format!(" INCLUDE ({})", self.include.join(", "))
        };
        let salt = self
            .salt
            .map(|n| format!(" WITH (SALT_BUCKETS = {n})"))
            .unwrap_or_default();
        let filter = self
            .filter
            .as_ref()
            .map(|(_, condition)| format!(" WHERE {condition}"))
            .unwrap_or_default();
        let mut parts = key_list(&self.columns);
        if let (Some(applied), Some(first)) = (self.expression, self.columns.first()) {
            let rest = key_list(&self.columns[1..]);
            let lead = applied.sql(&first.column);
            let lead = if first.desc {
                format!("{lead} DESC")
            } else {
                lead
            };
            parts = if rest.is_empty() {
                lead
            } else {
                format!("{lead}, {rest}")
            };
        }
        format!(
            "CREATE {}INDEX {} ON {} ({parts}){include}{salt}{filter}",
            if self.unique { "UNIQUE " } else { "" },
            self.name,
            self.table,
        )
    }

    pub fn mentions(&self, column: &str) -> bool {
        self.columns.iter().any(|k| k.column == column)
            || self.include.iter().any(|c| c == column)
            || self.filter.as_ref().is_some_and(|(c, _)| c == column)
    }
}

fn key_list(parts: &[KeyPart]) -> String {
    parts
        .iter()
        .map(|k| {
            if k.desc {
                format!("{} DESC", k.column)
            } else {
                k.column.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Column names of the tables: each table its own letters, so no name is ambiguous in a join.
const NAMES: [[&str; 6]; 2] = [
    ["a", "b", "c", "d", "e", "f"],
    ["m", "n", "o", "p", "q", "r"],
];

/// A random table, the `number`th of its scenario (0 or 1).
pub fn random_table(rng: &mut Rng, number: usize) -> Table {
    let names = &NAMES[number.min(1)];
    let count = rng.between(2, names.len());
    let columns: Vec<Column> = names[..count]
        .iter()
        .map(|name| random_column(rng, name))
        .collect();
    let mut key = Vec::new();
    // One table in ten has no PRIMARY KEY: rowdex keys it by a hidden row id.
    if !rng.percent(10) {
        let mut order: Vec<usize> = (0..columns.len()).collect();
        rng.shuffle(&mut order);
        // Booleans rarely lead a key: two values leave little room for distinct keys.
        order.sort_by_key(|&i| columns[i].ty == ColType::Bool);
        // Now and then every column is in the key (the row holds no other value).
        let most = if rng.percent(5) {
            columns.len()
        } else {
            columns.len() - 1
        };
        let size = rng.between(1, 3.min(most));
        for &i in &order[..size] {
            key.push(KeyPart {
                column: columns[i].name.clone(),
                desc: rng.percent(30),
            });
        }
    }
    let salt = if rng.percent(25) {
        Some(*rng.pick(&[2, 3, 4, 8, 16]))
    } else {
        None
    };
    // Half the salted tables with a declared key salt on part of it: its first column (one
    // prefix's rows in one bucket) or any non-empty subset.
    let mut salt_on = Vec::new();
    if salt.is_some() && !key.is_empty() && rng.percent(50) {
        if rng.percent(60) {
            salt_on.push(key[0].column.clone());
        } else {
            for part in &key {
                if rng.percent(50) {
                    salt_on.push(part.column.clone());
                }
            }
            if salt_on.is_empty() {
                salt_on.push(rng.pick(&key).column.clone());
            }
        }
    }
    let inline_key = key.len() == 1 && !key[0].desc && rng.percent(40);
    // One table in five gets a UNIQUE constraint on one or two columns (the rows are drawn
    // to respect it).
    let mut uniques = Vec::new();
    if rng.percent(20) {
        let mut order: Vec<&Column> = columns.iter().collect();
        rng.shuffle(&mut order);
        let size = rng.between(1, 2.min(order.len()));
        uniques.push(
            order[..size]
                .iter()
                .map(|c| KeyPart {
                    column: c.name.clone(),
                    desc: rng.percent(30),
                })
                .collect(),
        );
    }
    let mut table = Table {
        name: format!("t{}", number + 1),
        columns,
        key,
        salt,
        salt_on,
        inline_key,
        uniques,
        ttl: rng.percent(20),
        versions: rng.percent(20),
        families: Vec::new(),
    };
    // Key columns take no NOT NULL of their own (they are NOT NULL anyway).
    let key_names: Vec<String> = table.key.iter().map(|k| k.column.clone()).collect();
    for column in &mut table.columns {
        if key_names.contains(&column.name) {
            column.not_null = false;
        }
    }
    if rng.percent(25) {
        for column in &table.columns {
            if !key_names.contains(&column.name) && !rng.percent(30) {
                let family = *rng.pick(&["f1", "f2", "f3"]);
                table
                    .families
                    .push((column.name.clone(), family.to_string()));
            }
        }
    }
    table
}

fn random_column(rng: &mut Rng, name: &str) -> Column {
    let ty = match rng.below(100) {
        0..=39 => ColType::Int,
        40..=66 => ColType::Text,
        67..=81 => ColType::Real,
        82..=88 => ColType::Decimal,
        89..=91 => ColType::Uuid,
        92..=94 => ColType::TimestampTz,
        _ => ColType::Bool,
    };
    let spelling = match ty {
        ColType::Int => *rng.pick(&["INTEGER", "BIGINT", "INT"]),
        ColType::Text => "TEXT",
        ColType::Real => *rng.pick(&["DOUBLE", "REAL", "DOUBLE"]),
        ColType::Bool => "BOOLEAN",
        // The scale is `DECIMAL_SCALE`.
        ColType::Decimal => *rng.pick(&["DECIMAL(12,2)", "NUMERIC(12,2)", "DECIMAL(12,2)"]),
        ColType::Uuid => "UUID",
        ColType::TimestampTz => *rng.pick(&["TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"]),
    };
    Column {
        name: name.to_string(),
        ty,
        spelling,
        not_null: rng.percent(15),
        domain: if rng.percent(50) {
            Domain::Small
        } else {
            Domain::Wide
        },
        null_percent: *rng.pick(&[5, 15, 15, 50]),
        default: None,
    }
}

/// Up to four random indexes on `table`: one to three columns in any order and direction,
/// sometimes INCLUDE columns, sometimes a partial index's condition. UNIQUE is decided later,
/// from the rows.
pub fn random_indexes(rng: &mut Rng, table: &Table) -> Vec<Index> {
    let count = rng.below(5);
    let mut indexes: Vec<Index> = Vec::new();
    for n in 0..count {
        let mut order: Vec<&Column> = table.columns.iter().collect();
        rng.shuffle(&mut order);
        let size = rng.between(1, 3.min(order.len()));
        let columns: Vec<KeyPart> = order[..size]
            .iter()
            .map(|c| KeyPart {
                column: c.name.clone(),
                desc: rng.percent(30),
            })
            .collect();
        let include: Vec<String> = if rng.percent(25) {
            order[size..]
                .iter()
                .filter(|_| rng.percent(60))
                .map(|c| c.name.clone())
                .collect()
        } else {
            Vec::new()
        };
        // Sometimes on an expression of its first column.
        let expression = match rng.percent(25) {
            true => order
                .first()
                .and_then(|lead| Applied::random_for(rng, lead.ty)),
            false => None,
        };
        // The same column list twice is legal but tests nothing new.
        if indexes
            .iter()
            .any(|i| i.columns == columns && i.expression == expression)
        {
            continue;
        }
        let timing = match rng.below(3) {
            0 => IndexTiming::BeforeLoad,
            1 => IndexTiming::AfterLoad,
            _ => IndexTiming::AfterWrites,
        };
        let salt = rng.percent(25).then(|| *rng.pick(&[2u16, 3, 4, 8]));
        // Sometimes partial: a condition on one column that queries may or may not imply.
        let filter = rng.percent(20).then(|| {
            let column = rng.pick(&table.columns);
            let mut forms = vec!["IS NOT NULL", "IS NULL"];
            if column.ty == ColType::Int {
                forms.extend(["> 0", "<= 3", "IN (1, 2, 5)"]);
            }
            let form = *rng.pick(&forms);
            (column.name.clone(), format!("{} {form}", column.name))
        });
        indexes.push(Index {
            name: format!("{}_i{n}", table.name),
            table: table.name.clone(),
            columns,
            include,
            unique: false,
            timing,
            salt,
            filter,
            expression,
        });
    }
    indexes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        Table {
            name: "t1".into(),
            columns: vec![
                Column {
                    name: "a".into(),
                    ty: ColType::Int,
                    spelling: "BIGINT",
                    not_null: false,
                    domain: Domain::Small,
                    null_percent: 15,
                    default: None,
                },
                Column {
                    name: "b".into(),
                    ty: ColType::Text,
                    spelling: "TEXT",
                    not_null: true,
                    domain: Domain::Small,
                    null_percent: 15,
                    default: Some(Value::Text("o'k".into())),
                },
            ],
            key: vec![KeyPart {
                column: "a".into(),
                desc: true,
            }],
            salt: Some(4),
            salt_on: Vec::new(),
            inline_key: false,
            uniques: Vec::new(),
            ttl: false,
            versions: false,
            families: Vec::new(),
        }
    }

    #[test]
    fn ddl_differs_only_in_rowdex_options() {
        let t = sample();
        assert_eq!(
            t.rowdex_ddl(),
            "CREATE TABLE t1 (a BIGINT, b TEXT NOT NULL DEFAULT 'o''k', PRIMARY KEY (a DESC)) WITH (SALT_BUCKETS = 4)"
        );
        assert_eq!(
            t.sqlite_ddl(),
            "CREATE TABLE t1 (a BIGINT NOT NULL, b TEXT NOT NULL DEFAULT 'o''k', PRIMARY KEY (a DESC))"
        );
    }

    #[test]
    fn decimal_columns_are_declared_alike() {
        let decimal = |name: &str, default: Option<Value>| Column {
            name: name.into(),
            ty: ColType::Decimal,
            spelling: "DECIMAL(12,2)",
            not_null: false,
            domain: Domain::Small,
            null_percent: 15,
            default,
        };
        let mut t = sample();
        t.columns = vec![
            decimal("a", None),
            decimal("b", Some(Value::decimal(-5, DECIMAL_SCALE))),
        ];
        t.salt = None;
        assert_eq!(
            t.rowdex_ddl(),
            "CREATE TABLE t1 (a DECIMAL(12,2), b DECIMAL(12,2) DEFAULT -0.05, PRIMARY KEY (a DESC))"
        );
        assert_eq!(
            t.sqlite_ddl(),
            "CREATE TABLE t1 (a DECIMAL(12,2) NOT NULL, b DECIMAL(12,2) DEFAULT -0.05, PRIMARY KEY (a DESC))"
        );
    }

    #[test]
    fn an_index_on_an_expression_is_declared_alike() {
        let index = Index {
            name: "t1_i0".into(),
            table: "t1".into(),
            columns: vec![
                KeyPart {
                    column: "b".into(),
                    desc: true,
                },
                KeyPart {
                    column: "a".into(),
                    desc: false,
                },
            ],
            include: Vec::new(),
            unique: false,
            timing: IndexTiming::AfterLoad,
            salt: None,
            filter: None,
            expression: Some(Applied::Lower),
        };
        assert_eq!(index.ddl(), "CREATE INDEX t1_i0 ON t1 (lower(b) DESC, a)");
        let modulo = Index {
            columns: vec![KeyPart {
                column: "a".into(),
                desc: false,
            }],
            expression: Some(Applied::Modulo(7)),
            ..index
        };
        assert_eq!(modulo.ddl(), "CREATE INDEX t1_i0 ON t1 ((a % 7))");
        assert_eq!(Applied::Modulo(7).of(&Value::Int(-9)), Value::Int(-2));
        assert_eq!(
            Applied::Prefix.of(&Value::Text("日本語".into())),
            Value::Text("日本".into())
        );
    }

    #[test]
    fn random_tables_have_valid_keys() {
        let mut rng = Rng::new(3);
        for n in 0..200 {
            let t = random_table(&mut rng, n % 2);
            assert!(t.key.len() <= t.columns.len());
            for k in &t.key {
                assert!(t.column(&k.column).is_some());
                assert!(!t.nullable(&k.column));
            }
            for i in random_indexes(&mut rng, &t) {
                assert!(!i.columns.is_empty());
            }
        }
    }
}
