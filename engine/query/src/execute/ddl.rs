//! CREATE TABLE and DROP TABLE (index statements live in `indexes`, CREATE TABLE ... AS in
//! `create_as`).
//!
//! Table options are written `WITH (SALT_BUCKETS = n, SALT_ON = (a), TTL = seconds,
//! VERSIONS = n, DURABILITY = 'SKIP_WAL', READONLY = true)` (the last two: `table_attributes`);
//! a column is put in a column family by naming it `family.column`. Column
//! types are read from their SQL spelling, so every common alias works (INT, BIGINT,
//! VARCHAR(n), DOUBLE PRECISION, ...).

pub(crate) mod split_points;
pub(crate) mod storage_attributes;
pub(crate) mod table_attributes;

use datafusion::sql::sqlparser::ast::{
    self, ColumnOption, CreateTable, CreateTableOptions, GeneratedAs, GeneratedExpressionMode,
    ObjectName, ObjectType, SequenceOptions, SqlOption, TableConstraint,
};
use rowdex_catalog::{
    CatalogError, ColumnDef, DataType, Declared, IndexDef, IndexState, KeyColumn, SequenceDef,
    TableDef,
};

use crate::error::{Error, Result};
use crate::execute::column_types::{parse_type, refuse_array_key};
use crate::execute::ddl::split_points::SplitHint;
use crate::execute::ddl::storage_attributes::{StorageDeclaration, place_families};
use crate::execute::ddl::table_attributes::TableAttribute;
use crate::execute::foreign_keys::{
    DeclaredForeignKey, check_index_drop, resolve_declared, store_declared, unlink_dropped,
};
use crate::execute::keydesign::advise_table;
use crate::execute::schema_txn::SchemaTxn;
use crate::execute::sequences::start_and_increment;
use crate::output::Output;
use crate::session::Session;
use crate::sql::names::{ident_name, object_name};
use crate::sql::semantics::Semantics;
use crate::sql::storage;
use crate::sql::tokens::FamilyMember;
use crate::write::constraints::{declared_check, declared_default};
use crate::write::generated::declared_generation;

/// `families` holds the columns declared `family.column` (see `sql::tokens`).
pub(crate) async fn create_table(
    session: &Session,
    create: &CreateTable,
    families: &[FamilyMember],
) -> Result<Output> {
    let name = object_name(&create.name)?;
    // CREATE TABLE ... AS is `create_as`.
    if create.query.is_some() || create.like.is_some() || create.clone.is_some() {
        return Err(Error::Unsupported {
            what: "CREATE TABLE ... LIKE / CLONE".to_string(),
        });
    }
    if session.schema_view().table(&name).is_some() {
        if create.if_not_exists {
            return Ok(Output::Done);
        }
        return Err(Error::Catalog(rowdex_catalog::CatalogError::TableExists {
            table: name,
        }));
    }

    let mut columns = Vec::with_capacity(create.columns.len());
    let mut key: Vec<(String, bool)> = Vec::new();
    let mut uniques: Vec<UniqueConstraint> = Vec::new();
    let mut defaults: Vec<(usize, &ast::Expr)> = Vec::new();
    let mut checks: Vec<DeclaredCheck> = Vec::new();
    let mut identities: Vec<Identity> = Vec::new();
    let mut foreign_keys: Vec<DeclaredForeignKey> = Vec::new();
    let mut generations: Vec<(usize, &ast::Expr)> = Vec::new();
    let mut virtual_columns: Vec<String> = Vec::new();
    for (position, column) in create.columns.iter().enumerate() {
        let column_name = ident_name(&column.name);
        let mut nullable = true;
        let type_name = column.data_type.to_string().to_uppercase();
        if matches!(
            type_name.as_str(),
            "SERIAL" | "BIGSERIAL" | "SMALLSERIAL" | "SERIAL2" | "SERIAL4" | "SERIAL8"
        ) {
            identities.push((position, false, Vec::new()));
            nullable = false;
        }
        for option in &column.options {
            match &option.option {
                ColumnOption::Generated {
                    generated_as: generated_as @ (GeneratedAs::Always | GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    let always = matches!(generated_as, GeneratedAs::Always);
                    let options = sequence_options.clone().unwrap_or_default();
                    identities.push((position, always, options));
                    nullable = false;
                }
                ColumnOption::Generated {
                    generation_expr: Some(expr),
                    generation_expr_mode,
                    ..
                } => {
                    if generation_expr_mode == &Some(GeneratedExpressionMode::Virtual) {
                        virtual_columns.push(column_name.clone());
                    }
                    generations.push((position, expr));
                }
                ColumnOption::Default(expr) => defaults.push((position, expr)),
                ColumnOption::Check(check) => {
                    let name = check.name.as_ref().or(option.name.as_ref());
                    checks.push((name.map(ident_name), check.expr.as_ref()));
                }
                ColumnOption::Null => nullable = true,
                ColumnOption::NotNull => nullable = false,
                ColumnOption::PrimaryKey(_) => {
                    if !key.is_empty() {
                        return Err(Error::Unsupported {
                            what: "more than one PRIMARY KEY".to_string(),
                        });
                    }
                    key.push((column_name.clone(), false));
                }
                ColumnOption::Unique(unique) => {
                    let name = unique.name.as_ref().map(ident_name);
                    uniques.push((name, vec![(column_name.clone(), false)]));
                }
                ColumnOption::ForeignKey(constraint) => foreign_keys.push(
                    DeclaredForeignKey::read(constraint, Some(&column_name), option.name.as_ref())?,
                ),
                other => {
                    return Err(Error::Unsupported {
                        what: format!("the column option {other} (column {column_name})"),
                    });
                }
            }
        }
        let (data_type, declared) = match identities.last() {
            Some((p, ..)) if *p == position && type_name.contains("SERIAL") => (
                DataType::Integer,
                serial_width(&type_name, session.semantics),
            ),
            _ => parse_type(&column.data_type, session.semantics)?,
        };
        columns.push(ColumnDef {
            id: 0,
            name: column_name,
            data_type,
            nullable,
            hidden: false,
            family: 0,
            default: None,
            added_in: 0,
            missing: None,
            generated_always: false,
            generation: None,
            declared,
        });
    }
    for constraint in &create.constraints {
        match constraint {
            TableConstraint::PrimaryKey(primary) => {
                if !key.is_empty() {
                    return Err(Error::Unsupported {
                        what: "more than one PRIMARY KEY".to_string(),
                    });
                }
                for index_column in &primary.columns {
                    let ast::Expr::Identifier(ident) = &index_column.column.expr else {
                        return Err(Error::Unsupported {
                            what: format!("the key expression {}", index_column.column.expr),
                        });
                    };
                    let desc = index_column.column.options.asc == Some(false);
                    key.push((ident_name(ident), desc));
                }
            }
            TableConstraint::Check(check) => {
                checks.push((check.name.as_ref().map(ident_name), check.expr.as_ref()));
            }
            TableConstraint::Unique(unique) => {
                let mut unique_columns = Vec::with_capacity(unique.columns.len());
                for index_column in &unique.columns {
                    let ast::Expr::Identifier(ident) = &index_column.column.expr else {
                        return Err(Error::Unsupported {
                            what: format!("the UNIQUE expression {}", index_column.column.expr),
                        });
                    };
                    let desc = index_column.column.options.asc == Some(false);
                    unique_columns.push((ident_name(ident), desc));
                }
                let name = unique.name.as_ref().or(unique.index_name.as_ref());
                uniques.push((name.map(ident_name), unique_columns));
            }
            TableConstraint::ForeignKey(constraint) => {
                foreign_keys.push(DeclaredForeignKey::read(constraint, None, None)?);
            }
            other => {
                return Err(Error::Unsupported {
                    what: format!("the table constraint {other}"),
                });
            }
        }
    }
    let options = table_options(&create.table_options)?;
    let mut def = options.apply(TableDef::new(&name, columns, &key, options.buckets)?)?;
    for key_column in &def.key {
        refuse_array_key(&def.columns[key_column.column])?;
    }
    for (_, unique) in &uniques {
        for (column, _) in unique {
            if let Some(position) = def.column_index(column) {
                refuse_array_key(&def.columns[position])?;
            }
        }
    }
    if !families.is_empty() {
        def = def.with_families(families)?;
    }
    def = options.apply_storage(def)?;
    def.indexes = unique_indexes(&def, uniques)?;
    for (position, expr) in defaults {
        let default = declared_default(&def, &def.columns[position], expr)?;
        def.columns[position].default = Some(default);
    }
    for (name, expr) in checks {
        let check = declared_check(&def, name, expr)?;
        if def.checks.iter().any(|c| c.name == check.name) {
            return Err(Error::BadCheck {
                constraint: check.name,
                reason: "the table already has a constraint of that name".to_string(),
            });
        }
        def.checks.push(check);
    }
    // SERIAL and identity columns draw from a sequence of their own, `<table>_<column>_seq`.
    let mut sequences = Vec::with_capacity(identities.len());
    for (position, always, options) in identities {
        let column = &mut def.columns[position];
        if column.default.is_some() {
            return Err(Error::BadDefault {
                column: column.name.clone(),
                reason: "a SERIAL or identity column takes its values from its sequence"
                    .to_string(),
            });
        }
        let sequence = format!("{}_{}_seq", def.name, column.name);
        column.default = Some(format!("nextval('{sequence}')"));
        column.generated_always = always;
        sequences.push((sequence, start_and_increment(&options)?));
    }
    // Every generated column is marked before any is checked: one may not read another,
    // declared before or after it.
    for &(position, expr) in &generations {
        def.columns[position].generation = Some(expr.to_string());
    }
    for (position, expr) in generations {
        let mut column = def.columns[position].clone();
        column.generation = None;
        def.columns[position].generation = Some(declared_generation(&def, &column, expr)?);
    }
    let resolved = resolve_declared(session, &mut def, &foreign_keys)?;
    let mut warnings = advise_table(&def);
    for column in virtual_columns {
        warnings.push(format!(
            "generated column {column} is stored: rowdex computes generated columns when rows \
             are written (the answers are those of VIRTUAL)"
        ));
    }
    // The table and its sequences in one transaction (the block's, inside one).
    let catalog = &session.db.catalog;
    let mut change = SchemaTxn::begin(session).await?;
    let def = {
        let (mut tx, edits) = change.stage().await?;
        let def = catalog.stage_create_table(&mut *tx, edits, def).await?;
        for (name, (start, increment)) in sequences {
            let sequence = SequenceDef {
                name,
                id: 0,
                increment,
                next: start,
                owned_by: Some(def.id),
            };
            catalog
                .stage_create_sequence(&mut *tx, edits, sequence)
                .await?;
        }
        def
    };
    if !resolved.is_empty() {
        Box::pin(store_declared(session, &mut change, &def, resolved)).await?;
    }
    // Before the commit: a family the store cannot place fails the statement whole.
    place_families(session, &def, None).await?;
    change.finish(&session.db).await?;
    session.set_warnings(warnings);
    options.notify(session);
    Ok(Output::Done)
}

/// A SERIAL or identity column as declared: its position, whether it is GENERATED ALWAYS, and
/// its sequence's options.
type Identity = (usize, bool, Vec<SequenceOptions>);

/// A CHECK constraint as declared: its optional name and its condition.
type DeclaredCheck<'a> = (Option<String>, &'a ast::Expr);

/// A UNIQUE constraint as declared: its optional name and its columns, each with a DESC flag.
type UniqueConstraint = (Option<String>, Vec<(String, bool)>);

/// The unique indexes that enforce a table's UNIQUE constraints, named `<table>_<columns>_key`
/// unless the constraint is named. A constraint on exactly the primary key needs no index.
fn unique_indexes(def: &TableDef, uniques: Vec<UniqueConstraint>) -> Result<Vec<IndexDef>> {
    let mut indexes: Vec<IndexDef> = Vec::new();
    for (name, unique_columns) in uniques {
        let mut columns = Vec::with_capacity(unique_columns.len());
        for (column, desc) in &unique_columns {
            let position = def.column_index(column).ok_or_else(|| {
                Error::Catalog(CatalogError::ColumnNotFound {
                    table: def.name.clone(),
                    column: column.clone(),
                })
            })?;
            columns.push(KeyColumn {
                column: position,
                desc: *desc,
            });
        }
        let mut positions: Vec<usize> = columns.iter().map(|c| c.column).collect();
        let mut key_positions: Vec<usize> = def.key.iter().map(|c| c.column).collect();
        positions.sort_unstable();
        key_positions.sort_unstable();
        if positions == key_positions {
            continue;
        }
        let name = name.unwrap_or_else(|| {
            let names: Vec<&str> = unique_columns.iter().map(|(c, _)| c.as_str()).collect();
            let base = format!("{}_{}_key", def.name, names.join("_"));
            let mut candidate = base.clone();
            let mut suffix = 1;
            while indexes.iter().any(|i| i.name == candidate) {
                candidate = format!("{base}{suffix}");
                suffix += 1;
            }
            candidate
        });
        indexes.push(IndexDef {
            id: 0,
            name,
            columns,
            include: Vec::new(),
            unique: true,
            state: IndexState::Ready,
            salt_buckets: 0,
            constraint: true,
            filter: None,
        });
    }
    Ok(indexes)
}

/// DROP TABLE | INDEX | VIEW; `cascade` drops the foreign keys referencing a dropped table.
pub(crate) async fn drop(
    session: &Session,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
) -> Result<Output> {
    if !matches!(
        object_type,
        ObjectType::Table | ObjectType::Index | ObjectType::View
    ) {
        return Err(Error::Unsupported {
            what: format!("DROP {object_type}"),
        });
    }
    // Every object named, or none.
    let catalog = &session.db.catalog;
    let schema = session.schema_view();
    let mut change = SchemaTxn::begin(session).await?;
    let mut dropped = std::collections::HashSet::new();
    let dropping: Vec<String> = names.iter().map(object_name).collect::<Result<_>>()?;
    for name in names {
        let name = object_name(name)?;
        let exists = !dropped.contains(&name)
            && match object_type {
                ObjectType::Index => schema.find_index(&name).is_some(),
                ObjectType::View => schema.view(&name).is_some(),
                _ => schema.table(&name).is_some(),
            };
        if !exists {
            if if_exists {
                continue;
            }
            return Err(match object_type {
                ObjectType::Index => Error::IndexNotFound { index: name },
                ObjectType::View => Error::Catalog(CatalogError::ViewNotFound { view: name }),
                _ => Error::TableNotFound { table: name },
            });
        }
        if object_type == ObjectType::Table
            && let Some(def) = schema.table(&name)
            && def.has_foreign_keys()
        {
            Box::pin(unlink_dropped(
                session,
                &mut change,
                &def,
                &dropping,
                cascade,
            ))
            .await?;
        }
        if object_type == ObjectType::Index
            && let Some((def, _)) = schema.find_index(&name)
        {
            check_index_drop(session, &def, &name)?;
        }
        let (mut tx, edits) = change.stage().await?;
        match object_type {
            ObjectType::Index => {
                catalog.stage_drop_index(&mut *tx, edits, &name).await?;
            }
            ObjectType::View => catalog.stage_drop_view(&mut *tx, edits, &name).await?,
            _ => {
                catalog.stage_drop_table(&mut *tx, edits, &name).await?;
            }
        }
        dropped.insert(name);
    }
    change.finish(&session.db).await?;
    Ok(Output::Done)
}

/// The declared width of a SERIAL column under `semantics`: SERIAL is an INTEGER and
/// SMALLSERIAL a SMALLINT in PostgreSQL; BIGSERIAL is as wide as rowdex's integers.
fn serial_width(type_name: &str, semantics: Semantics) -> Option<Declared> {
    if semantics != Semantics::PostgreSql {
        return None;
    }
    match type_name {
        "SERIAL" | "SERIAL4" => Some(Declared::Integer),
        "SMALLSERIAL" | "SERIAL2" => Some(Declared::SmallInt),
        _ => None,
    }
}

/// What a CREATE TABLE's options ask for: salting, a TTL, kept versions.
pub(crate) struct TableOptions {
    /// `SALT_BUCKETS = n`, given to `TableDef::new`.
    pub(crate) buckets: u16,
    /// `SALT_ON = (a, b)`: the key columns the bucket is hashed from.
    on: Option<Vec<String>>,
    /// `TTL = seconds`: rows expire this long after their last write.
    ttl: Option<u64>,
    /// `VERSIONS = n`: versions kept of each row, the current one included.
    versions: Option<u32>,
    /// `DURABILITY = ...`, `READONLY = ...` (see `table_attributes`).
    pub(crate) attributes: Vec<TableAttribute>,
    /// `COMPRESSION = ...`, `o.BLOCKSIZE = ...` (see `storage_attributes`), applied once the
    /// table's families are known.
    storage: Vec<StorageDeclaration>,
    /// `SPLIT ON (...)` / `NUMREGIONS = n` (see `split_points`).
    split: Option<SplitHint>,
    /// PostgreSQL storage parameters given (`fillfactor = 100`), accepted without effect.
    pub(crate) ignored: Vec<String>,
}

impl TableOptions {
    /// The definition with the options other than the bucket count.
    pub(crate) fn apply(&self, mut def: TableDef) -> Result<TableDef> {
        if let Some(salt_on) = &self.on {
            def = def.with_salt_on(salt_on)?;
        }
        if let Some(ttl) = self.ttl {
            def = def.with_ttl(ttl)?;
        }
        if let Some(versions) = self.versions {
            def = def.with_versions(versions)?;
        }
        for attribute in &self.attributes {
            attribute.apply(&mut def);
        }
        if let Some(split) = &self.split {
            split.apply(&mut def)?;
        }
        Ok(def)
    }

    /// The definition with the storage attributes (after its families are set).
    pub(crate) fn apply_storage(&self, mut def: TableDef) -> Result<TableDef> {
        for declared in &self.storage {
            declared.apply(&mut def)?;
        }
        Ok(def)
    }

    /// Sends the session the notices the options call for: those without effect here.
    pub(crate) fn notify(&self, session: &Session) {
        for attribute in &self.attributes {
            attribute.warn_if_unhonoured(session);
        }
        for declared in &self.storage {
            for caveat in declared.caveats() {
                session.add_notice(caveat);
            }
        }
        for option in &self.ignored {
            session.add_notice(storage::no_effect(option));
        }
    }
}

pub(crate) fn table_options(declared: &CreateTableOptions) -> Result<TableOptions> {
    let mut options = TableOptions {
        buckets: 0,
        on: None,
        ttl: None,
        versions: None,
        attributes: Vec::new(),
        storage: Vec::new(),
        split: None,
        ignored: Vec::new(),
    };
    let list = match declared {
        CreateTableOptions::None => return Ok(options),
        CreateTableOptions::With(list) | CreateTableOptions::Plain(list) => list,
        other => {
            return Err(Error::BadTableOption {
                option: other.to_string(),
            });
        }
    };
    for option in list {
        let SqlOption::KeyValue { key, value } = option else {
            return Err(Error::BadTableOption {
                option: option.to_string(),
            });
        };
        // `NAME = n` with n in a range; the error names the option and what it takes.
        let number = |max: u64, takes: &str| {
            value
                .to_string()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| Error::BadTableOption {
                    option: format!("{option} ({takes}, from 1 to {max})"),
                })
        };
        if key.value.eq_ignore_ascii_case("salt_buckets") {
            options.buckets = number(256, "SALT_BUCKETS is a number of buckets")? as u16;
        } else if key.value.eq_ignore_ascii_case("ttl") {
            let max = rowdex_catalog::MAX_TTL_SECONDS;
            options.ttl = Some(number(max, "TTL is a number of seconds")?);
        } else if key.value.eq_ignore_ascii_case("versions") {
            let max = u64::from(rowdex_catalog::MAX_VERSIONS);
            let versions = number(max, "VERSIONS is a number of versions per row")?;
            options.versions = Some(versions as u32);
        } else if key.value.eq_ignore_ascii_case("salt_on") {
            options.on = Some(column_list(value).ok_or_else(|| Error::BadTableOption {
                option: format!("{option} (SALT_ON takes key columns: SALT_ON = (a, b))"),
            })?);
        } else if let Some(attribute) = TableAttribute::read(&key.value, value) {
            options.attributes.push(attribute?);
        } else if let Some(declared) = StorageDeclaration::read(&key.value, value) {
            options.storage.push(declared?);
        } else if let Some(hint) = SplitHint::read(&key.value, value) {
            options.split = Some(hint?);
        } else if storage::is_table_parameter(&key.value) {
            options.ignored.push(option.to_string());
        } else {
            return Err(Error::BadTableOption {
                option: option.to_string(),
            });
        }
    }
    Ok(options)
}

/// `a`, `(a)` or `(a, b)` as column names.
fn column_list(value: &ast::Expr) -> Option<Vec<String>> {
    match value {
        ast::Expr::Identifier(ident) => Some(vec![ident_name(ident)]),
        ast::Expr::Nested(inner) => column_list(inner),
        ast::Expr::Tuple(items) => items
            .iter()
            .map(|item| match item {
                ast::Expr::Identifier(ident) => Some(ident_name(ident)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}
