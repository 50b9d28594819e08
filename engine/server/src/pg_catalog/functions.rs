//! The functions PostgreSQL clients call in their catalog queries (`format_type`,
//! `pg_get_indexdef`, `pg_table_is_visible`, `version()`, ...), as DataFusion scalar functions
//! answered from rowdex's live catalog, and the ones the query rewrite (`rewrite`) turns
//! PostgreSQL's `::regclass`-style casts into.
//!
//! Arguments arrive as whatever type the query gave them (an OID as a number or as a string
//! literal, `'16385'`): each function casts them to the type it reads.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rowdex::arrow::array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, ListArray, ListBuilder, StringArray,
    StringBuilder, new_null_array,
};
use rowdex::arrow::compute::cast;
use rowdex::arrow::datatypes::{DataType, Field};
use rowdex::datafusion::error::{DataFusionError, Result as DfResult};
use rowdex::datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use rowdex::datafusion::prelude::SessionContext;
use rowdex::{Database, SchemaView, quote_ident, quote_literal};

use crate::activity::Activities;
use crate::pg_catalog::foreign_keys::foreign_keys;
use crate::pg_catalog::model::{
    NAMESPACES, OWNER_NAME, OWNER_ROLE, Relations, check_oid, constraint_oid, format_type,
    type_oid_by_name,
};
use crate::pg_catalog::sizes::{SizeOf, relation_size};
use crate::settings::{Settings, defaults};
use crate::statement_stats::StatementStats;

/// What the functions answer that is not in the catalog: who is connected, to what.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    pub database: String,
    pub user: String,
    pub pid: i32,
    pub server_version: String,
    /// The session's parameters as SET left them: `current_setting` reads them and
    /// `set_config` writes them.
    pub settings: Arc<Mutex<Settings>>,
    /// The server's connections (`pg_stat_activity`, `pg_cancel_backend`).
    pub activities: Arc<Activities>,
    /// The database, for what its store holds (the size functions).
    pub db: Database,
    /// The server's statement statistics (`pg_stat_statements`).
    pub statements: Arc<StatementStats>,
}

/// Which function, with its arity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Function {
    UserById,
    IsVisible,
    FormatType,
    GetExpr,
    IndexDef,
    ConstraintDef,
    ViewDef,
    EncodingToChar,
    Never,
    NullText,
    /// A relation's size in the store (`sizes`).
    Size(SizeOf),
    /// `pg_database_size(name)`: the whole store's.
    DatabaseSize,
    SizePretty,
    ArrayUpper,
    Version,
    CurrentSchema,
    CurrentSchemas,
    CurrentDatabase,
    CurrentUser,
    BackendPid,
    Privilege,
    /// `'name'::regclass`: a relation's OID by name (NULL when there is none).
    RegclassOid,
    /// `oid::regclass`: a relation's name.
    RelationName,
    /// `oid::regtype`: a type's name.
    TypeName,
    /// `to_regtype('name')`: a type's OID by name (NULL when rowdex has no such type).
    RegtypeOid,
    /// `pg_get_serial_sequence(table, column)`: the sequence of a SERIAL column.
    SerialSequence,
    /// `current_setting(name)`: a setting's value as the session's SET and `set_config` left
    /// it, `heap` for the table access method, and `off` for `jit`; NULL for others.
    CurrentSetting,
    /// `set_config(name, value, is_local)`: SET name = value, for the session (a setting
    /// local to the transaction, `is_local` true, is refused); returns the value.
    SetConfig,
    /// `quote_literal(value)`: the value's text as a SQL string literal (asyncpg quotes a
    /// `copy_from_query`'s arguments with it).
    QuoteLiteral,
    /// `oid::regnamespace`: a namespace's name.
    NamespaceName,
    /// `pg_cancel_backend(pid)`: cancels what that connection runs (false: no such backend).
    CancelBackend,
    /// `pg_terminate_backend(pid)`: closes that connection (false: no such backend).
    TerminateBackend,
    /// `pg_stat_statements_reset()`: forgets the statement statistics (an empty text, as
    /// `void` reads).
    StatementsReset,
}

impl Function {
    /// Whether it acts (runs when its query runs, never folded in planning).
    fn acts(self) -> bool {
        matches!(
            self,
            Function::SetConfig
                | Function::CancelBackend
                | Function::TerminateBackend
                | Function::StatementsReset
        )
    }
}

/// The functions, by name: (name, function, return type).
fn functions() -> Vec<(&'static str, Function, DataType)> {
    use DataType::{Boolean, Int32, Int64, Utf8};
    vec![
        ("pg_get_userbyid", Function::UserById, Utf8),
        ("pg_table_is_visible", Function::IsVisible, Boolean),
        ("pg_type_is_visible", Function::IsVisible, Boolean),
        ("pg_function_is_visible", Function::IsVisible, Boolean),
        ("pg_collation_is_visible", Function::IsVisible, Boolean),
        ("format_type", Function::FormatType, Utf8),
        ("pg_get_expr", Function::GetExpr, Utf8),
        ("pg_get_indexdef", Function::IndexDef, Utf8),
        ("pg_get_constraintdef", Function::ConstraintDef, Utf8),
        // A table is never a partition: its only ancestor is itself (psql's `\d` asks).
        ("pg_partition_ancestors", Function::RegclassOid, Int64),
        ("pg_get_viewdef", Function::ViewDef, Utf8),
        // pg_trigger has no rows: rowdex's triggers are SQLite's, not PostgreSQL's.
        ("pg_get_triggerdef", Function::NullText, Utf8),
        ("pg_encoding_to_char", Function::EncodingToChar, Utf8),
        ("pg_relation_is_publishable", Function::Never, Boolean),
        ("pg_is_in_recovery", Function::Never, Boolean),
        ("pg_get_statisticsobjdef_columns", Function::NullText, Utf8),
        ("pg_get_partkeydef", Function::NullText, Utf8),
        ("col_description", Function::NullText, Utf8),
        ("obj_description", Function::NullText, Utf8),
        ("shobj_description", Function::NullText, Utf8),
        ("pg_table_size", Function::Size(SizeOf::Table), Int64),
        ("pg_relation_size", Function::Size(SizeOf::Relation), Int64),
        (
            "pg_total_relation_size",
            Function::Size(SizeOf::Total),
            Int64,
        ),
        ("pg_indexes_size", Function::Size(SizeOf::Indexes), Int64),
        ("pg_database_size", Function::DatabaseSize, Int64),
        ("pg_size_pretty", Function::SizePretty, Utf8),
        ("array_upper", Function::ArrayUpper, Int64),
        ("version", Function::Version, Utf8),
        ("current_schema", Function::CurrentSchema, Utf8),
        (
            "current_schemas",
            Function::CurrentSchemas,
            DataType::List(Arc::new(Field::new("item", Utf8, true))),
        ),
        ("current_database", Function::CurrentDatabase, Utf8),
        ("current_user", Function::CurrentUser, Utf8),
        ("session_user", Function::CurrentUser, Utf8),
        ("pg_backend_pid", Function::BackendPid, Int32),
        ("has_table_privilege", Function::Privilege, Boolean),
        ("has_schema_privilege", Function::Privilege, Boolean),
        ("has_database_privilege", Function::Privilege, Boolean),
        ("has_column_privilege", Function::Privilege, Boolean),
        ("pg_rowdex_regclass_oid", Function::RegclassOid, Int64),
        ("to_regclass", Function::RegclassOid, Int64),
        ("pg_rowdex_relation_name", Function::RelationName, Utf8),
        ("pg_rowdex_type_name", Function::TypeName, Utf8),
        ("to_regtype", Function::RegtypeOid, Int64),
        ("pg_get_serial_sequence", Function::SerialSequence, Utf8),
        ("current_setting", Function::CurrentSetting, Utf8),
        ("set_config", Function::SetConfig, Utf8),
        ("quote_literal", Function::QuoteLiteral, Utf8),
        ("pg_rowdex_namespace_name", Function::NamespaceName, Utf8),
        ("pg_cancel_backend", Function::CancelBackend, Boolean),
        ("pg_terminate_backend", Function::TerminateBackend, Boolean),
        ("pg_stat_statements_reset", Function::StatementsReset, Utf8),
    ]
}

/// Registers every function in `ctx`.
pub fn register_functions(ctx: &SessionContext, schema: &SchemaView, facts: &SessionFacts) {
    for (name, function, returns) in functions() {
        ctx.register_udf(ScalarUDF::new_from_impl(PgFunction {
            name,
            function,
            returns,
            signature: Signature::one_of(
                vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
                // set_config changes a setting, pg_cancel_backend cancels: each runs when its
                // query does, never folded.
                if function.acts() {
                    Volatility::Volatile
                } else {
                    Volatility::Stable
                },
            ),
            schema: schema.clone(),
            facts: facts.clone(),
        }));
    }
}

/// One function of [`functions`], bound to the database it reads.
#[derive(Debug)]
struct PgFunction {
    name: &'static str,
    function: Function,
    returns: DataType,
    signature: Signature,
    /// The catalog as the session sees it.
    schema: SchemaView,
    facts: SessionFacts,
}

impl PartialEq for PgFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for PgFunction {}

impl PgFunction {
    fn settings(&self) -> MutexGuard<'_, Settings> {
        self.facts
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Hash for PgFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for PgFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(self.returns.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays: Vec<ArrayRef> = args
            .args
            .into_iter()
            .map(|arg| arg.into_array(rows))
            .collect::<DfResult<_>>()?;
        let ints = |i: usize| -> DfResult<Vec<Option<i64>>> { int_arg(&arrays, i, rows) };
        let texts = |i: usize| -> DfResult<Vec<Option<String>>> { text_arg(&arrays, i, rows) };
        let constant_text =
            |text: &str| -> ArrayRef { Arc::new(StringArray::from(vec![Some(text); rows])) };
        let result: ArrayRef = match self.function {
            Function::UserById => text_array(ints(0)?.into_iter().map(|oid| {
                oid.map(|oid| {
                    if oid == OWNER_ROLE {
                        OWNER_NAME.to_string()
                    } else {
                        format!("unknown (OID={oid})")
                    }
                })
            })),
            Function::IsVisible | Function::Privilege => {
                Arc::new(BooleanArray::from(vec![true; rows]))
            }
            Function::Never => Arc::new(BooleanArray::from(vec![false; rows])),
            Function::NullText => new_null_array(&DataType::Utf8, rows),
            Function::Size(of) => {
                let relations = Relations::read(&self.schema);
                let db = &self.facts.db;
                let mut sizes = Vec::with_capacity(rows);
                for relation in texts(0)? {
                    let Some(relation) = relation else {
                        sizes.push(None);
                        continue;
                    };
                    // A name that names nothing fails, as its cast to regclass does in
                    // PostgreSQL; an OID that names nothing is NULL.
                    if relation.trim().parse::<i64>().is_err()
                        && relations.relation_oid(&relation).is_none()
                    {
                        return Err(DataFusionError::External(Box::new(
                            rowdex::Error::TableNotFound { table: relation },
                        )));
                    }
                    sizes.push(relation_size(db, &relations, &relation, of));
                }
                Arc::new(Int64Array::from(sizes))
            }
            Function::DatabaseSize => {
                let size = self.facts.db.database_size().ok().flatten();
                let size = size.and_then(|bytes| i64::try_from(bytes).ok());
                Arc::new(Int64Array::from(vec![size; rows]))
            }
            Function::SizePretty => text_array(ints(0)?.into_iter().map(|n| n.map(size_pretty))),
            Function::FormatType => {
                let typmods = if arrays.len() > 1 {
                    ints(1)?
                } else {
                    vec![None; rows]
                };
                text_array(
                    ints(0)?
                        .into_iter()
                        .zip(typmods)
                        .map(|(oid, typmod)| oid.and_then(|oid| format_type(oid, typmod))),
                )
            }
            Function::GetExpr => text_array(texts(0)?.into_iter()),
            Function::IndexDef => {
                let relations = Relations::read(&self.schema);
                let columns = if arrays.len() > 1 {
                    ints(1)?
                } else {
                    vec![Some(0); rows]
                };
                text_array(ints(0)?.into_iter().zip(columns).map(|(oid, column)| {
                    let index = relations.index(oid?)?;
                    match column.unwrap_or(0) {
                        0 => Some(index.definition()),
                        n => {
                            let position = usize::try_from(n - 1).ok()?;
                            let column = *index.columns().get(position)?;
                            Some(index.column_text(column))
                        }
                    }
                }))
            }
            Function::ConstraintDef => {
                let relations = Relations::read(&self.schema);
                text_array(ints(0)?.into_iter().map(|oid| {
                    let oid = oid?;
                    let check = relations
                        .tables
                        .iter()
                        .find_map(|t| t.checks.iter().find(|c| check_oid(t, &c.name) == oid));
                    if let Some(check) = check {
                        return Some(format!("CHECK ({})", check.expr));
                    }
                    if let Some(fk) = foreign_keys(&relations)
                        .into_iter()
                        .find(|fk| fk.oid == oid)
                    {
                        return Some(fk.definition());
                    }
                    let index = relations
                        .indexes
                        .iter()
                        .find(|i| (i.primary || i.constraint) && constraint_oid(i) == oid)?;
                    let keys: Vec<String> = index
                        .keys
                        .iter()
                        .map(|&(c, _)| quote_ident(&index.table.columns[c].name))
                        .collect();
                    let kind = if index.primary {
                        "PRIMARY KEY"
                    } else {
                        "UNIQUE"
                    };
                    Some(format!("{kind} ({})", keys.join(", ")))
                }))
            }
            Function::ViewDef => {
                let relations = Relations::read(&self.schema);
                text_array(ints(0)?.into_iter().map(|oid| {
                    let oid = oid?;
                    relations
                        .views
                        .iter()
                        .find(|(view, _, _)| *view == oid)
                        .map(|(_, _, sql)| format!(" {sql};"))
                }))
            }
            Function::EncodingToChar => constant_text("UTF8"),
            // `void`, which clients read as an empty text.
            Function::StatementsReset => {
                self.facts.statements.reset();
                constant_text("")
            }
            Function::CancelBackend | Function::TerminateBackend => {
                let activities = &self.facts.activities;
                Arc::new(BooleanArray::from_iter(ints(0)?.into_iter().map(|pid| {
                    let pid = i32::try_from(pid?).ok()?;
                    Some(if self.function == Function::CancelBackend {
                        activities.cancel(pid)
                    } else {
                        activities.terminate(pid)
                    })
                })))
            }
            Function::ArrayUpper => {
                let lists = arrays
                    .first()
                    .and_then(|a| a.as_any().downcast_ref::<ListArray>());
                match lists {
                    Some(lists) => Arc::new(Int64Array::from_iter((0..rows).map(|row| {
                        (!lists.is_null(row) && !lists.value(row).is_empty())
                            .then(|| lists.value(row).len() as i64)
                    }))),
                    None => new_null_array(&DataType::Int64, rows),
                }
            }
            Function::Version => constant_text(&self.facts.server_version),
            Function::CurrentSchema => constant_text("public"),
            Function::CurrentSchemas => {
                let mut builder = ListBuilder::new(StringBuilder::new());
                for _ in 0..rows {
                    builder.values().append_value("pg_catalog");
                    builder.values().append_value("public");
                    builder.append(true);
                }
                Arc::new(builder.finish())
            }
            Function::CurrentDatabase => constant_text(&self.facts.database),
            Function::CurrentUser => constant_text(&self.facts.user),
            Function::BackendPid => Arc::new(Int32Array::from(vec![self.facts.pid; rows])),
            Function::RegclassOid => {
                let relations = Relations::read(&self.schema);
                Arc::new(Int64Array::from_iter(
                    texts(0)?
                        .into_iter()
                        .map(|name| name.and_then(|name| relations.relation_oid(&name))),
                ))
            }
            Function::RelationName => {
                let relations = Relations::read(&self.schema);
                text_array(ints(0)?.into_iter().map(|oid| {
                    let oid = oid?;
                    Some(
                        relations
                            .relation_name(oid)
                            .map_or_else(|| oid.to_string(), |name| quote_ident(&name)),
                    )
                }))
            }
            Function::RegtypeOid => Arc::new(Int64Array::from_iter(
                texts(0)?
                    .into_iter()
                    .map(|name| name.and_then(|name| type_oid_by_name(&name))),
            )),
            Function::SerialSequence => {
                let relations = Relations::read(&self.schema);
                text_array(
                    texts(0)?
                        .into_iter()
                        .zip(texts(1)?)
                        .map(|(table, column)| relations.serial_sequence(&table?, &column?)),
                )
            }
            Function::CurrentSetting => {
                let settings = self.settings();
                text_array(texts(0)?.into_iter().map(|name| {
                    let name = name?;
                    settings
                        .show(&name)
                        .and_then(|(_, values)| values.into_iter().next())
                        .or_else(|| setting_at_start(&name))
                }))
            }
            Function::SetConfig => {
                let (names, values) = (texts(0)?, texts(1)?);
                let local = arrays.get(2).ok_or_else(|| {
                    DataFusionError::Plan("set_config takes three arguments".to_string())
                })?;
                let local = cast(local, &DataType::Boolean)?;
                let local = downcast::<BooleanArray>(&local)?;
                let mut settings = self.settings();
                let mut set = Vec::with_capacity(rows);
                for row in 0..rows {
                    let (Some(name), Some(value)) = (&names[row], &values[row]) else {
                        set.push(None);
                        continue;
                    };
                    if local.is_valid(row) && local.value(row) {
                        return Err(DataFusionError::NotImplemented(
                            "set_config with is_local = true (a setting local to the \
                             transaction, as SET LOCAL)"
                                .to_string(),
                        ));
                    }
                    if !settings.knows(name) && !name.contains('.') {
                        return Err(DataFusionError::Plan(format!(
                            "unrecognized configuration parameter \"{name}\""
                        )));
                    }
                    settings.set(name, value.clone());
                    set.push(Some(value.clone()));
                }
                text_array(set.into_iter())
            }
            Function::QuoteLiteral => text_array(
                texts(0)?
                    .into_iter()
                    .map(|value| value.map(|value| quote_literal(&value))),
            ),
            Function::TypeName => text_array(
                ints(0)?
                    .into_iter()
                    .map(|oid| oid.map(|oid| format_type(oid, None).unwrap_or(oid.to_string()))),
            ),
            Function::NamespaceName => text_array(ints(0)?.into_iter().map(|oid| {
                let oid = oid?;
                Some(
                    NAMESPACES
                        .iter()
                        .find(|(n, _)| *n == oid)
                        .map_or_else(|| oid.to_string(), |(_, name)| name.to_string()),
                )
            })),
        };
        Ok(ColumnarValue::Array(result))
    }
}

/// `pg_size_pretty`: bytes, kB, MB, GB or TB, whichever keeps the number under 10240.
fn size_pretty(bytes: i64) -> String {
    let mut value = bytes;
    for unit in ["bytes", "kB", "MB", "GB"] {
        if value.abs() < 10 * 1024 {
            return format!("{value} {unit}");
        }
        value = (value + value.signum() * 512) / 1024;
    }
    format!("{value} TB")
}

fn text_array(values: impl Iterator<Item = Option<String>>) -> ArrayRef {
    Arc::new(StringArray::from_iter(values))
}

/// Argument `i` as integers (NULL where absent or not a number).
fn int_arg(arrays: &[ArrayRef], i: usize, rows: usize) -> DfResult<Vec<Option<i64>>> {
    let Some(array) = arrays.get(i) else {
        return Ok(vec![None; rows]);
    };
    let cast = match array.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let texts = cast(array, &DataType::Utf8)?;
            let texts = downcast::<StringArray>(&texts)?;
            return Ok(texts
                .iter()
                .map(|t| t.and_then(|t| t.trim().parse().ok()))
                .collect());
        }
        _ => cast(array, &DataType::Int64)?,
    };
    Ok(downcast::<Int64Array>(&cast)?.iter().collect())
}

/// The default of a setting rowdex does not keep, for `current_setting`.
fn setting_at_start(name: &str) -> Option<String> {
    match name.to_lowercase().as_str() {
        "default_table_access_method" => Some("heap".to_string()),
        lower => defaults()
            .into_iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(lower))
            .map(|(_, value)| value),
    }
}

/// Argument `i` as text.
fn text_arg(arrays: &[ArrayRef], i: usize, rows: usize) -> DfResult<Vec<Option<String>>> {
    let Some(array) = arrays.get(i) else {
        return Ok(vec![None; rows]);
    };
    let cast = cast(array, &DataType::Utf8)?;
    Ok(downcast::<StringArray>(&cast)?
        .iter()
        .map(|t| t.map(str::to_string))
        .collect())
}

fn downcast<T: 'static>(array: &ArrayRef) -> DfResult<&T> {
    array
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| DataFusionError::Internal("an argument of an unexpected type".into()))
}
