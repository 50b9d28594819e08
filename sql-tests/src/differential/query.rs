//! The generated queries as a small syntax tree: what the generator builds, the shrinker
//! takes apart, and both engines receive as the same SQL text.

use std::collections::BTreeSet;

use super::schema::{Applied, ColType, DECIMAL_SCALE, Table};
use super::value::{OutKind, Value};

/// A column of one of the scenario's tables.
#[derive(Debug, Clone, PartialEq)]
pub struct ColRef {
    pub table: String,
    pub name: String,
    pub ty: ColType,
}

impl ColRef {
    fn sql(&self, qualify: bool) -> String {
        if qualify {
            format!("{}.{}", self.table, self.name)
        } else {
            self.name.clone()
        }
    }

    pub fn kind(&self) -> OutKind {
        kind_of(self.ty)
    }
}

pub fn kind_of(ty: ColType) -> OutKind {
    match ty {
        ColType::Int => OutKind::Int,
        ColType::Text => OutKind::Text,
        ColType::Real => OutKind::Real,
        ColType::Bool => OutKind::Bool,
        ColType::Decimal => OutKind::Decimal(DECIMAL_SCALE),
        ColType::Uuid | ColType::TimestampTz => OutKind::Text,
    }
}

/// The digits DataFusion's `avg` of a DECIMAL keeps beyond the column's scale (its result is
/// `DECIMAL(p + 4, s + 4)`, cut toward zero).
const AVG_EXTRA_SCALE: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    fn sql(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Col(ColRef),
    Lit(Value),
}

impl Operand {
    fn sql(&self, qualify: bool) -> String {
        match self {
            Operand::Col(c) => c.sql(qualify),
            Operand::Lit(v) => v.sql(),
        }
    }
}

/// A subquery over another table: `SELECT column FROM table WHERE filter`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sub {
    pub table: String,
    pub column: ColRef,
    pub filter: Option<Box<Expr>>,
}

/// A boolean condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Cmp {
        left: Operand,
        op: CmpOp,
        right: Operand,
    },
    Between {
        col: ColRef,
        lo: Value,
        hi: Value,
        negated: bool,
    },
    InList {
        col: ColRef,
        values: Vec<Value>,
        negated: bool,
    },
    Like {
        col: ColRef,
        pattern: String,
        negated: bool,
    },
    IsNull {
        col: ColRef,
        negated: bool,
    },
    /// A boolean column used as a condition by itself.
    Truth(ColRef),
    /// `col IS [NOT] DISTINCT FROM value`: a comparison where NULL equals NULL.
    DistinctFrom {
        col: ColRef,
        value: Value,
        negated: bool,
    },
    /// `f(col) op value` for a function an index may lead with (`lower(b) = 'x'`,
    /// `(a % 7) >= 2`): an expression index's condition.
    Applied {
        func: Applied,
        col: ColRef,
        op: CmpOp,
        value: Value,
    },
    /// `coalesce(col, fallback) op value`: a condition only DataFusion evaluates.
    Coalesce {
        col: ColRef,
        fallback: Value,
        op: CmpOp,
        value: Value,
    },
    /// `(c1, c2, ...) op (v1, v2, ...)`.
    RowCmp {
        cols: Vec<ColRef>,
        op: CmpOp,
        values: Vec<Value>,
    },
    InSubquery {
        col: ColRef,
        sub: Sub,
        negated: bool,
    },
    /// `EXISTS (SELECT 1 FROM sub.table WHERE inner = outer AND filter)`.
    Exists {
        outer: ColRef,
        inner: ColRef,
        sub: Sub,
        negated: bool,
    },
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
}

fn not(negated: bool) -> &'static str {
    if negated { "NOT " } else { "" }
}

impl Expr {
    pub fn sql(&self, qualify: bool) -> String {
        match self {
            Expr::Cmp { left, op, right } => {
                format!("{} {} {}", left.sql(qualify), op.sql(), right.sql(qualify))
            }
            Expr::Between {
                col,
                lo,
                hi,
                negated,
            } => format!(
                "{} {}BETWEEN {} AND {}",
                col.sql(qualify),
                not(*negated),
                lo.sql(),
                hi.sql()
            ),
            Expr::InList {
                col,
                values,
                negated,
            } => format!(
                "{} {}IN ({})",
                col.sql(qualify),
                not(*negated),
                values.iter().map(Value::sql).collect::<Vec<_>>().join(", ")
            ),
            Expr::Like {
                col,
                pattern,
                negated,
            } => format!(
                "{} {}LIKE {}",
                col.sql(qualify),
                not(*negated),
                Value::Text(pattern.clone()).sql()
            ),
            Expr::IsNull { col, negated } => {
                format!("{} IS {}NULL", col.sql(qualify), not(*negated))
            }
            Expr::Truth(col) => col.sql(qualify),
            Expr::DistinctFrom {
                col,
                value,
                negated,
            } => format!(
                "{} IS {}DISTINCT FROM {}",
                col.sql(qualify),
                not(*negated),
                value.sql()
            ),
            Expr::Applied {
                func,
                col,
                op,
                value,
            } => format!(
                "{} {} {}",
                func.sql(&col.sql(qualify)),
                op.sql(),
                value.sql()
            ),
            Expr::Coalesce {
                col,
                fallback,
                op,
                value,
            } => format!(
                "coalesce({}, {}) {} {}",
                col.sql(qualify),
                fallback.sql(),
                op.sql(),
                value.sql()
            ),
            Expr::RowCmp { cols, op, values } => format!(
                "({}) {} ({})",
                cols.iter()
                    .map(|c| c.sql(qualify))
                    .collect::<Vec<_>>()
                    .join(", "),
                op.sql(),
                values.iter().map(Value::sql).collect::<Vec<_>>().join(", ")
            ),
            Expr::InSubquery { col, sub, negated } => format!(
                "{} {}IN (SELECT {} FROM {}{})",
                col.sql(qualify),
                not(*negated),
                sub.column.sql(qualify),
                sub.table,
                sub.filter
                    .as_ref()
                    .map(|f| format!(" WHERE {}", f.sql(qualify)))
                    .unwrap_or_default()
            ),
            Expr::Exists {
                outer,
                inner,
                sub,
                negated,
            } => {
                // Qualified always: the correlation names both tables.
                let mut condition = format!("{} = {}", inner.sql(true), outer.sql(true));
                if let Some(filter) = &sub.filter {
                    condition = format!("{condition} AND ({})", filter.sql(true));
                }
                format!(
                    "{}EXISTS (SELECT 1 FROM {} WHERE {condition})",
                    not(*negated),
                    sub.table
                )
            }
            Expr::And(items) => join(items, " AND ", qualify),
            Expr::Or(items) => join(items, " OR ", qualify),
            Expr::Not(inner) => format!("NOT ({})", inner.sql(qualify)),
        }
    }

    /// Calls `f` on this node and every node below it (subqueries included).
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::And(items) | Expr::Or(items) => items.iter().for_each(|e| e.walk(f)),
            Expr::Not(inner) => inner.walk(f),
            Expr::InSubquery { sub, .. } | Expr::Exists { sub, .. } => {
                if let Some(filter) = &sub.filter {
                    filter.walk(f);
                }
            }
            _ => {}
        }
    }

    /// Whether `test` holds for this node or any node below it (subqueries included).
    pub fn any(&self, test: &dyn Fn(&Expr) -> bool) -> bool {
        let mut found = false;
        self.walk(&mut |e| found |= test(e));
        found
    }

    /// Replaces every literal compared with a column by `f(column, literal)`: the same
    /// condition with other values, which rowdex's compiled-query cache serves from the
    /// first one's compiled form.
    pub fn map_literals(&mut self, f: &mut dyn FnMut(&ColRef, &Value) -> Value) {
        match self {
            Expr::Cmp { left, right, .. } => match (&*left, &mut *right) {
                (Operand::Col(c), Operand::Lit(v)) => *v = f(c, v),
                _ => {
                    if let (Operand::Lit(v), Operand::Col(c)) = (&mut *left, &*right) {
                        *v = f(c, v);
                    }
                }
            },
            Expr::Between { col, lo, hi, .. } => {
                *lo = f(col, lo);
                *hi = f(col, hi);
            }
            Expr::InList { col, values, .. } => {
                for v in values.iter_mut() {
                    *v = f(col, v);
                }
            }
            Expr::RowCmp { cols, values, .. } => {
                for (c, v) in cols.iter().zip(values.iter_mut()) {
                    *v = f(c, v);
                }
            }
            Expr::DistinctFrom { col, value, .. } | Expr::Applied { col, value, .. } => {
                *value = f(col, value)
            }
            Expr::Coalesce {
                col,
                fallback,
                value,
                ..
            } => {
                *fallback = f(col, fallback);
                *value = f(col, value);
            }
            Expr::InSubquery { sub, .. } | Expr::Exists { sub, .. } => {
                if let Some(filter) = &mut sub.filter {
                    filter.map_literals(f);
                }
            }
            Expr::And(items) | Expr::Or(items) => {
                for item in items {
                    item.map_literals(f);
                }
            }
            Expr::Not(inner) => inner.map_literals(f),
            Expr::Like { .. } | Expr::IsNull { .. } | Expr::Truth(_) => {}
        }
    }

    /// Every column the condition reads, subqueries included.
    pub fn columns(&self, out: &mut BTreeSet<(String, String)>) {
        let mut add = |c: &ColRef| {
            out.insert((c.table.clone(), c.name.clone()));
        };
        match self {
            Expr::Cmp { left, right, .. } => {
                for side in [left, right] {
                    if let Operand::Col(c) = side {
                        add(c);
                    }
                }
            }
            Expr::Between { col, .. }
            | Expr::InList { col, .. }
            | Expr::Like { col, .. }
            | Expr::IsNull { col, .. }
            | Expr::DistinctFrom { col, .. }
            | Expr::Coalesce { col, .. }
            | Expr::Applied { col, .. }
            | Expr::Truth(col) => add(col),
            Expr::RowCmp { cols, .. } => cols.iter().for_each(add),
            Expr::InSubquery { col, sub, .. } => {
                add(col);
                add(&sub.column);
                if let Some(f) = &sub.filter {
                    f.columns(out);
                }
            }
            Expr::Exists {
                outer, inner, sub, ..
            } => {
                add(outer);
                add(inner);
                if let Some(f) = &sub.filter {
                    f.columns(out);
                }
            }
            Expr::And(items) | Expr::Or(items) => items.iter().for_each(|e| e.columns(out)),
            Expr::Not(inner) => inner.columns(out),
        }
    }

    /// Every table the condition reads.
    pub fn tables(&self, out: &mut BTreeSet<String>) {
        let mut columns = BTreeSet::new();
        self.columns(&mut columns);
        out.extend(columns.into_iter().map(|(t, _)| t));
    }

    /// The kinds of nodes in the condition, for telling findings apart.
    pub fn shape(&self, out: &mut BTreeSet<&'static str>) {
        let name = match self {
            Expr::Cmp {
                right: Operand::Col(_),
                ..
            } => "column-comparison",
            Expr::Cmp { .. } => "comparison",
            Expr::Between { .. } => "between",
            Expr::InList { .. } => "in-list",
            Expr::Like { .. } => "like",
            Expr::IsNull { .. } => "is-null",
            Expr::Truth(_) => "boolean-column",
            Expr::DistinctFrom { .. } => "distinct-from",
            Expr::Coalesce { .. } => "coalesce",
            Expr::Applied { .. } => "applied",
            Expr::RowCmp { .. } => "row-value",
            Expr::InSubquery { .. } => "in-subquery",
            Expr::Exists { .. } => "exists",
            Expr::And(_) => "and",
            Expr::Or(_) => "or",
            Expr::Not(_) => "not",
        };
        out.insert(name);
        match self {
            Expr::And(items) | Expr::Or(items) => items.iter().for_each(|e| e.shape(out)),
            Expr::Not(inner) => inner.shape(out),
            Expr::InSubquery { sub, .. } | Expr::Exists { sub, .. } => {
                if let Some(f) = &sub.filter {
                    f.shape(out);
                }
            }
            _ => {}
        }
    }
}

fn join(items: &[Expr], separator: &str, qualify: bool) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|e| format!("({})", e.sql(qualify)))
        .collect();
    parts.join(separator)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFn {
    CountStar,
    Count,
    CountDistinct,
    Sum,
    Avg,
    Min,
    Max,
}

/// One item of the select list.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Col(ColRef),
    Agg(AggFn, Option<ColRef>),
}

impl Item {
    fn sql(&self, qualify: bool) -> String {
        match self {
            Item::Col(c) => c.sql(qualify),
            Item::Agg(AggFn::CountStar, _) | Item::Agg(_, None) => "count(*)".to_string(),
            Item::Agg(f, Some(c)) => {
                let c = c.sql(qualify);
                match f {
                    AggFn::CountStar | AggFn::Count => format!("count({c})"),
                    AggFn::CountDistinct => format!("count(DISTINCT {c})"),
                    AggFn::Sum => format!("sum({c})"),
                    AggFn::Avg => format!("avg({c})"),
                    AggFn::Min => format!("min({c})"),
                    AggFn::Max => format!("max({c})"),
                }
            }
        }
    }

    pub fn kind(&self) -> OutKind {
        match self {
            Item::Col(c) => c.kind(),
            Item::Agg(AggFn::Avg, Some(c)) if c.ty == ColType::Decimal => {
                OutKind::Decimal(DECIMAL_SCALE + AVG_EXTRA_SCALE)
            }
            Item::Agg(AggFn::Avg, _) => OutKind::Real,
            Item::Agg(AggFn::Sum | AggFn::Min | AggFn::Max, Some(c)) => c.kind(),
            Item::Agg(_, _) => OutKind::Int,
        }
    }

    pub fn is_aggregate(&self) -> bool {
        matches!(self, Item::Agg(..))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
}

/// The FROM clause: one table, or a table and the tables joined to it on equal columns.
#[derive(Debug, Clone, PartialEq)]
pub enum From {
    Table(String),
    Join { left: String, joins: Vec<JoinStep> },
}

/// One table joined in a FROM clause, on equalities with columns of the tables before it.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinStep {
    pub table: String,
    pub kind: JoinKind,
    pub on: Vec<(ColRef, ColRef)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    pub col: ColRef,
    pub desc: bool,
    /// An explicit `NULLS FIRST` (true) or `NULLS LAST` (false); by default NULL sorts
    /// lowest in both engines.
    pub nulls_first: Option<bool>,
    /// Written as the column's position in the select list (`ORDER BY 2`) when it is there.
    pub by_position: bool,
}

impl OrderItem {
    pub fn new(col: ColRef, desc: bool) -> OrderItem {
        OrderItem {
            col,
            desc,
            nulls_first: None,
            by_position: false,
        }
    }

    fn sql(&self, items: &[Item], qualify: bool) -> String {
        let position = items.iter().position(|i| i == &Item::Col(self.col.clone()));
        let mut text = match position {
            Some(p) if self.by_position => (p + 1).to_string(),
            _ => self.col.sql(qualify),
        };
        if self.desc {
            text.push_str(" DESC");
        }
        match self.nulls_first {
            Some(true) => text.push_str(" NULLS FIRST"),
            Some(false) => text.push_str(" NULLS LAST"),
            None => {}
        }
        text
    }
}

/// A SELECT. The order of its result is compared only when [`Select::total_order`] holds;
/// otherwise results are compared as multisets, or by count and membership under a LIMIT
/// (see `case::Mode`).
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub from: From,
    /// `SELECT *`, or the items.
    pub star: bool,
    pub distinct: bool,
    pub items: Vec<Item>,
    pub filter: Option<Expr>,
    pub group_by: Vec<ColRef>,
    /// `HAVING count(*) > n`.
    pub having: Option<i64>,
    pub order_by: Vec<OrderItem>,
    /// LIMIT and OFFSET.
    pub limit: Option<(u64, u64)>,
    /// An access-path hint in Apache Phoenix's style (`INDEX(t i)`, `INDEX_MERGE(t i j)`,
    /// `NO_INDEX`), written as `/*+ ... */`: a comment to SQLite, an order to rowdex's planner,
    /// which ignores indexes that do not exist (the configurations without indexes).
    pub hint: Option<String>,
}

impl Select {
    /// `SELECT * FROM table`: the whole contents, compared as a multiset.
    pub fn all_rows(table: &str) -> Select {
        Select {
            from: From::Table(table.to_string()),
            star: true,
            distinct: false,
            items: Vec::new(),
            filter: None,
            group_by: Vec::new(),
            having: None,
            order_by: Vec::new(),
            limit: None,
            hint: None,
        }
    }

    pub fn qualify(&self) -> bool {
        matches!(self.from, From::Join { .. })
    }

    pub fn sql(&self) -> String {
        let q = self.qualify();
        let mut sql = String::from("SELECT ");
        if let Some(hint) = &self.hint {
            sql.push_str(&format!("/*+ {hint} */ "));
        }
        if self.distinct {
            sql.push_str("DISTINCT ");
        }
        if self.star {
            sql.push('*');
        } else {
            let items: Vec<String> = self.items.iter().map(|i| i.sql(q)).collect();
            sql.push_str(&items.join(", "));
        }
        match &self.from {
            From::Table(t) => sql.push_str(&format!(" FROM {t}")),
            From::Join { left, joins } => {
                sql.push_str(&format!(" FROM {left}"));
                for step in joins {
                    let on: Vec<String> = step
                        .on
                        .iter()
                        .map(|(l, r)| format!("{} = {}", l.sql(true), r.sql(true)))
                        .collect();
                    let kind = match step.kind {
                        JoinKind::Inner => "JOIN",
                        JoinKind::Left => "LEFT JOIN",
                    };
                    sql.push_str(&format!(" {kind} {} ON {}", step.table, on.join(" AND ")));
                }
            }
        }
        if let Some(filter) = &self.filter {
            sql.push_str(&format!(" WHERE {}", filter.sql(q)));
        }
        if !self.group_by.is_empty() {
            let cols: Vec<String> = self.group_by.iter().map(|c| c.sql(q)).collect();
            sql.push_str(&format!(" GROUP BY {}", cols.join(", ")));
        }
        if let Some(n) = self.having {
            sql.push_str(&format!(" HAVING count(*) > {n}"));
        }
        if !self.order_by.is_empty() {
            // Positions only refer to an explicit select list.
            let listed: &[Item] = if self.star { &[] } else { &self.items };
            let items: Vec<String> = self.order_by.iter().map(|o| o.sql(listed, q)).collect();
            sql.push_str(&format!(" ORDER BY {}", items.join(", ")));
        }
        if let Some((limit, offset)) = self.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
            if offset > 0 {
                sql.push_str(&format!(" OFFSET {offset}"));
            }
        }
        sql
    }

    pub fn is_aggregate(&self) -> bool {
        !self.group_by.is_empty() || self.items.iter().any(Item::is_aggregate)
    }

    /// The tables the FROM clause names.
    pub fn scanned_tables(&self) -> Vec<&str> {
        match &self.from {
            From::Table(t) => vec![t.as_str()],
            From::Join { left, joins } => std::iter::once(left.as_str())
                .chain(joins.iter().map(|step| step.table.as_str()))
                .collect(),
        }
    }

    /// The result columns' kinds (`*` expands to every column of the FROM tables).
    pub fn out_kinds(&self, tables: &[Table]) -> Vec<OutKind> {
        if self.star {
            return self.star_columns(tables).iter().map(ColRef::kind).collect();
        }
        self.items.iter().map(Item::kind).collect()
    }

    /// The columns `*` stands for.
    pub fn star_columns(&self, tables: &[Table]) -> Vec<ColRef> {
        let mut out = Vec::new();
        for name in self.scanned_tables() {
            if let Some(t) = tables.iter().find(|t| t.name == name) {
                out.extend(t.columns.iter().map(|c| ColRef {
                    table: t.name.clone(),
                    name: c.name.clone(),
                    ty: c.ty,
                }));
            }
        }
        out
    }

    /// The result's plain columns (`*` expanded).
    fn output_columns(&self, tables: &[Table]) -> Vec<ColRef> {
        if self.star {
            return self.star_columns(tables);
        }
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Col(c) => Some(c.clone()),
                Item::Agg(..) => None,
            })
            .collect()
    }

    /// Whether ORDER BY fixes the whole result order, so that the rows (and which of them a
    /// LIMIT keeps) are the same in every correct engine: it must order by every output
    /// column, or by a single table's whole primary key (unique rows), or by every GROUP BY
    /// column of an aggregate (one row per group).
    pub fn total_order(&self, tables: &[Table]) -> bool {
        let ordered: BTreeSet<(&str, &str)> = self
            .order_by
            .iter()
            .map(|o| (o.col.table.as_str(), o.col.name.as_str()))
            .collect();
        let covers = |cols: &[ColRef]| {
            cols.iter()
                .all(|c| ordered.contains(&(c.table.as_str(), c.name.as_str())))
        };
        if self.is_aggregate() {
            // Without GROUP BY an aggregate is one row.
            return covers(&self.group_by);
        }
        if self.items.iter().all(|i| matches!(i, Item::Col(_)))
            && covers(&self.output_columns(tables))
        {
            return true;
        }
        if let From::Table(name) = &self.from
            && !self.distinct
            && let Some(t) = tables.iter().find(|t| &t.name == name)
            && !t.key.is_empty()
        {
            return t
                .key
                .iter()
                .all(|k| ordered.contains(&(t.name.as_str(), k.column.as_str())));
        }
        false
    }

    /// Every (table, column) the query reads.
    pub fn columns(&self, tables: &[Table]) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        let mut add = |c: &ColRef| {
            out.insert((c.table.clone(), c.name.clone()));
        };
        if self.star {
            self.star_columns(tables).iter().for_each(&mut add);
        }
        for item in &self.items {
            match item {
                Item::Col(c) | Item::Agg(_, Some(c)) => add(c),
                Item::Agg(_, None) => {}
            }
        }
        self.group_by.iter().for_each(&mut add);
        self.order_by.iter().for_each(|o| add(&o.col));
        if let From::Join { joins, .. } = &self.from {
            for (l, r) in joins.iter().flat_map(|step| &step.on) {
                add(l);
                add(r);
            }
        }
        if let Some(f) = &self.filter {
            f.columns(&mut out);
        }
        out
    }

    /// Every table the query reads (FROM and subqueries).
    pub fn tables(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self
            .scanned_tables()
            .into_iter()
            .map(String::from)
            .collect();
        if let Some(f) = &self.filter {
            f.tables(&mut out);
        }
        out
    }

    /// A short description of the query's form, for grouping findings.
    pub fn shape(&self) -> String {
        let mut parts: BTreeSet<&'static str> = BTreeSet::new();
        if let From::Join { joins, .. } = &self.from {
            for step in joins {
                parts.insert(match step.kind {
                    JoinKind::Inner => "join",
                    JoinKind::Left => "left-join",
                });
            }
            if joins.len() > 1 {
                parts.insert("three-way");
            }
        }
        if self.is_aggregate() {
            parts.insert("aggregate");
        }
        if self.distinct {
            parts.insert("distinct");
        }
        if !self.order_by.is_empty() {
            parts.insert("order-by");
        }
        if self.limit.is_some() {
            parts.insert("limit");
        }
        if self.hint.is_some() {
            parts.insert("hint");
        }
        if let Some(f) = &self.filter {
            f.shape(&mut parts);
        }
        parts.into_iter().collect::<Vec<_>>().join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, ty: ColType) -> ColRef {
        ColRef {
            table: "t1".into(),
            name: name.into(),
            ty,
        }
    }

    #[test]
    fn renders_sql() {
        let q = Select {
            from: From::Table("t1".into()),
            star: false,
            distinct: false,
            items: vec![
                Item::Col(col("a", ColType::Int)),
                Item::Agg(AggFn::Count, Some(col("b", ColType::Text))),
            ],
            filter: Some(Expr::And(vec![
                Expr::Like {
                    col: col("b", ColType::Text),
                    pattern: "h1%".into(),
                    negated: false,
                },
                Expr::Not(Box::new(Expr::InList {
                    col: col("a", ColType::Int),
                    values: vec![Value::Int(1), Value::Null],
                    negated: true,
                })),
            ])),
            group_by: vec![col("a", ColType::Int)],
            having: Some(1),
            order_by: vec![OrderItem::new(col("a", ColType::Int), true)],
            limit: Some((3, 1)),
            hint: None,
        };
        assert_eq!(
            q.sql(),
            "SELECT a, count(b) FROM t1 WHERE (b LIKE 'h1%') AND (NOT (a NOT IN (1, NULL))) \
             GROUP BY a HAVING count(*) > 1 ORDER BY a DESC LIMIT 3 OFFSET 1"
        );
        assert!(q.total_order(&[]));
        assert_eq!(q.shape(), "aggregate,and,in-list,like,limit,not,order-by");
    }
}
