//! Index statements: CREATE INDEX (with its backfill), DROP INDEX, SHOW INDEXES and
//! CHECK / REPAIR INDEX|TABLE.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::ast::{self, CreateIndex};
use rowdex_catalog::{CatalogError, IndexDef, IndexState, KeyColumn, TableDef};
use rowdex_indexer::IndexError;
use rowdex_indexer::maintain::{self, CheckReport};

use crate::db::analyze::analyze;
use crate::db::family_storage::place_table;
use crate::db::statement_report::note_retry;
use crate::error::{Error, Result};
use crate::execute::column_types::refuse_array_key;
use crate::execute::expression_index::{expression_columns, forget_expressions, stand_in};
use crate::execute::keydesign::advise_index;
use crate::execute::partial_index::index_filter;
use crate::execute::schema_txn::SchemaTxn;
use crate::output::Output;
use crate::progress::{Progress, Work};
use crate::session::Session;
use crate::sql::names::{ident_name, object_name, visible_column};
use crate::sql::storage;
use crate::write::WRITE_ATTEMPTS;
use crate::write::bulk::drop_index;

/// `WITH (...)` on CREATE INDEX: `SALT_BUCKETS = n`, rowdex's one index option, and
/// PostgreSQL's index storage parameters (`fillfactor`, `deduplicate_items`, ...), accepted
/// without effect and returned to be warned about.
fn index_options(with: &[ast::Expr]) -> Result<(u16, Vec<String>)> {
    let mut buckets = 0;
    let mut ignored = Vec::new();
    for option in with {
        let bad = || Error::BadIndexOption {
            option: format!(
                "{option} (CREATE INDEX takes WITH (SALT_BUCKETS = n), n from 1 to 256)"
            ),
        };
        let ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Eq,
            right,
        } = option
        else {
            return Err(bad());
        };
        let ast::Expr::Identifier(key) = left.as_ref() else {
            return Err(bad());
        };
        if storage::is_index_parameter(&key.value) {
            ignored.push(option.to_string());
            continue;
        }
        if !key.value.eq_ignore_ascii_case("salt_buckets") {
            return Err(bad());
        }
        buckets = right
            .to_string()
            .parse::<u16>()
            .ok()
            .filter(|n| (1..=256).contains(n))
            .ok_or_else(bad)?;
    }
    Ok((buckets, ignored))
}

/// Runs a catalog change again while it loses a race with another session's (a concurrent
/// CREATE INDEX on another table, say): a lost race changes nothing, and the change is the same
/// the next time, so the statement does not fail for it.
async fn retry_catalog<T, F, Fut>(mut change: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, CatalogError>>,
{
    let mut attempt = 1;
    loop {
        match change().await.map_err(Error::from) {
            Err(error) if error.is_retryable() && attempt < WRITE_ATTEMPTS => {
                attempt += 1;
                note_retry(error.is_conflict());
                tokio::task::yield_now().await;
            }
            result => return result,
        }
    }
}

/// The name PostgreSQL gives an index created without one: `table_col1_col2_idx`, cut to 63
/// bytes, with a number appended while the name is taken.
fn generated_index_name(session: &Session, table: &str, create: &CreateIndex) -> String {
    let mut stem = String::from(table);
    for column in &create.columns {
        let part = match &column.column.expr {
            ast::Expr::Identifier(ident) => ident_name(ident),
            _ => "expr".to_string(),
        };
        stem.push('_');
        stem.push_str(&part);
    }
    let taken = |name: &str| {
        session.schema_view().find_index(name).is_some() || session.table_def(name).is_ok()
    };
    let mut suffix = 0u32;
    loop {
        let ending = match suffix {
            0 => "_idx".to_string(),
            n => format!("_idx{n}"),
        };
        let mut cut = 63usize.saturating_sub(ending.len()).min(stem.len());
        while !stem.is_char_boundary(cut) {
            cut -= 1;
        }
        let name = format!("{}{ending}", &stem[..cut]);
        if !taken(&name) {
            return name;
        }
        suffix += 1;
    }
}

pub(crate) async fn create_index(session: &Session, create: &CreateIndex) -> Result<Output> {
    // B-tree is what a rowdex index is: an ordered range of the store.
    let btree = match &create.using {
        None => true,
        Some(method) => method.to_string().eq_ignore_ascii_case("btree"),
    };
    if !btree {
        return Err(Error::Unsupported {
            what: "index methods other than btree on CREATE INDEX".to_string(),
        });
    }
    let (salt_buckets, ignored) = index_options(&create.with)?;
    let table_name = object_name(&create.table_name)?;
    let name = match &create.name {
        Some(name) => object_name(name)?,
        None => generated_index_name(session, &table_name, create),
    };
    let db = &session.db;
    let table = session.table_def(&table_name)?;
    if session.schema_view().find_index(&name).is_some() {
        if create.if_not_exists {
            return Ok(Output::Done);
        }
        return Err(Error::Catalog(rowdex_catalog::CatalogError::IndexExists {
            index: name,
        }));
    }
    let mut include = Vec::with_capacity(create.include.len());
    for ident in &create.include {
        let column = visible_column(&table, &ident_name(ident))?;
        if !include.contains(&column) {
            include.push(column);
        }
    }
    let filter = match &create.predicate {
        Some(condition) => Some(index_filter(&table, condition)?),
        None => None,
    };
    // Indexed expressions become hidden columns at the end: the positions above stay.
    let parts: Vec<&ast::Expr> = create.columns.iter().map(|c| &c.column.expr).collect();
    let before = table.clone();
    let table = expression_columns(session, table, &parts).await?;
    let columns = match key_columns(&table, create) {
        Ok(columns) => columns,
        Err(error) => {
            if !Arc::ptr_eq(&before, &table) && session.open_txn().is_none() {
                forget_expressions(session, &table_name).await?;
            }
            return Err(error);
        }
    };
    let index = IndexDef {
        id: 0,
        name: name.clone(),
        columns,
        include,
        unique: create.unique,
        state: IndexState::Building,
        salt_buckets,
        constraint: false,
        filter,
    };
    let warnings = advise_index(&table, &index);
    if session.open_txn().is_some() {
        create_index_in_block(session, &table_name, index).await?;
        session.set_warnings(warnings);
        for option in &ignored {
            session.add_notice(storage::no_effect(option));
        }
        return Ok(Output::Done);
    }
    let building = match retry_catalog(|| db.catalog.create_index(&table_name, index.clone())).await
    {
        Ok(building) => building,
        Err(error) => {
            if error.is_outcome_unknown() {
                // The index may have been published: take it away again, as a failed build
                // does below (a failure of that leaves it for the next open to drop).
                if db.catalog.reload().await.is_ok() && db.catalog.find_index(&name).is_some() {
                    let _ = drop_index(db, &name).await;
                }
            }
            return Err(error);
        }
    };
    session.set_warnings(warnings);
    for option in &ignored {
        session.add_notice(storage::no_effect(option));
    }
    let Some(index) = building.index(&name).cloned() else {
        return Err(Error::IndexNotFound { index: name });
    };
    // An index of a table with a TTL is swept with it (see `db::family_storage`): placed
    // before its backfill writes anything.
    let without: TableDef = TableDef {
        indexes: building
            .indexes
            .iter()
            .filter(|i| i.name != name)
            .cloned()
            .collect(),
        ..(*building).clone()
    };
    place_table(db.store.as_ref(), &building, Some(&without)).await?;
    // The table's row count, loaded if this process has not yet (progress only: a count
    // that cannot be read leaves the total to the rows read).
    let total = db
        .stats
        .rows(db.store.as_ref(), &building)
        .await
        .unwrap_or_default();
    let progress = session.progress.clone();
    let mut report = |done: u64| {
        if let Some(progress) = &progress {
            progress(&Progress {
                work: Work::IndexBuild {
                    table: &building.name,
                    index: &name,
                },
                done,
                total: total.max(done),
            });
        }
    };
    match maintain::backfill(db.store.as_ref(), &building, &index, &mut report).await {
        Ok(_) => {
            let ready =
                match retry_catalog(|| db.catalog.mark_index_ready(&table_name, &name)).await {
                    Ok(ready) => ready,
                    Err(error) => {
                        if error.is_outcome_unknown() {
                            let _ = db.catalog.reload().await;
                        }
                        // Not visible to queries yet (or not known to be): take it away again.
                        let _ = drop_index(db, &name).await;
                        return Err(error);
                    }
                };
            // The new index's statistics, so that the planner can weigh it at once. The index
            // is built and visible either way: a failure here leaves its figures to the next
            // ANALYZE or refresh, and says so.
            if let Err(error) = analyze(db, &ready, Some(&index)).await {
                let mut warnings = session.warnings();
                warnings.push(format!(
                    "index {name} is built, but its statistics were not gathered ({error}); run ANALYZE {table_name}"
                ));
                session.set_warnings(warnings);
            }
            Ok(Output::Done)
        }
        Err(error) => {
            // The index was never visible to queries; take it away again with its entries.
            drop_index(db, &name).await?;
            Err(build_error(error, table_name))
        }
    }
}

/// The columns of the index's key, in order: each part a column by name or the generated
/// column that stands for its expression.
fn key_columns(table: &TableDef, create: &CreateIndex) -> Result<Vec<KeyColumn>> {
    let mut columns = Vec::with_capacity(create.columns.len());
    for column in &create.columns {
        let position = match &column.column.expr {
            ast::Expr::Identifier(ident) => visible_column(table, &ident_name(ident))?,
            expr => stand_in(table, expr).ok_or_else(|| Error::Unsupported {
                what: format!("indexing the expression {expr}"),
            })?,
        };
        refuse_array_key(&table.columns[position])?;
        columns.push(KeyColumn {
            column: position,
            desc: column.column.options.asc == Some(false),
        });
    }
    Ok(columns)
}

/// CREATE INDEX inside a transaction block: the index is added ready and its entries written
/// in the block's own transaction, so that both become visible (or not) with its COMMIT, and
/// the block's later statements use and maintain it. Its statistics wait for the next ANALYZE.
async fn create_index_in_block(session: &Session, table_name: &str, index: IndexDef) -> Result<()> {
    let name = index.name.clone();
    let catalog = &session.db.catalog;
    let mut change = SchemaTxn::begin(session).await?;
    {
        let (mut tx, edits) = change.stage().await?;
        let ready = catalog
            .stage_create_index(&mut *tx, edits, table_name, index, IndexState::Ready)
            .await?;
        let Some(index) = ready.index(&name).cloned() else {
            return Err(Error::IndexNotFound { index: name });
        };
        let progress = session.progress.clone();
        let total = session
            .db
            .stats
            .rows(session.db.store.as_ref(), &ready)
            .await
            .unwrap_or_default();
        let mut report = |done: u64| {
            if let Some(progress) = &progress {
                progress(&Progress {
                    work: Work::IndexBuild {
                        table: &ready.name,
                        index: &name,
                    },
                    done,
                    total: total.max(done),
                });
            }
        };
        maintain::backfill_within(&mut *tx, &ready, &index, &mut report)
            .await
            .map_err(|error| build_error(error, table_name.to_string()))?;
    }
    change.finish(&session.db).await
}

/// An index build's failure as the statement reports it.
fn build_error(error: IndexError, table: String) -> Error {
    match error {
        IndexError::UniqueViolation { index, value } => Error::UniqueViolation {
            index,
            table,
            value,
        },
        other => other.into(),
    }
}

pub(crate) fn show_indexes(session: &Session, table: Option<&str>) -> Result<Output> {
    let tables: Vec<Arc<TableDef>> = match table {
        Some(name) => vec![session.table_def(name)?],
        None => session.schema_view().tables(),
    };
    let mut rows: Vec<[String; 6]> = Vec::new();
    for table in &tables {
        for index in &table.indexes {
            let columns: Vec<String> = index
                .columns
                .iter()
                .map(|k| {
                    let order = if k.desc { "DESC" } else { "ASC" };
                    format!("{} {order}", table.columns[k.column].label())
                })
                .collect();
            let include: Vec<String> = index
                .include
                .iter()
                .map(|c| table.columns[*c].label().to_string())
                .collect();
            rows.push([
                table.name.clone(),
                index.name.clone(),
                if index.unique { "YES" } else { "NO" }.to_string(),
                columns.join(", "),
                include.join(", "),
                match index.state {
                    IndexState::Ready => "ready",
                    IndexState::Building => "building",
                }
                .to_string(),
            ]);
        }
    }
    Output::text_table(
        [
            "table_name",
            "index_name",
            "unique",
            "columns",
            "include",
            "state",
        ],
        &rows,
    )
}

/// Every index of a table, each paired with the table.
fn indexes_of(table: &Arc<TableDef>) -> Vec<(Arc<TableDef>, IndexDef)> {
    table
        .indexes
        .iter()
        .map(|i| (table.clone(), i.clone()))
        .collect()
}

/// REINDEX: repairs the named index, every index of the named table, or every index, so each
/// holds exactly the entries its rows call for. An index's name is looked up before a table's,
/// as SQLite does.
pub(crate) async fn reindex(session: &Session, target: Option<&str>) -> Result<Output> {
    let db = &session.db;
    let targets: Vec<(Arc<TableDef>, IndexDef)> = match target {
        Some(name) => match db.catalog.find_index(name) {
            Some(found) => vec![found],
            None => {
                let table = db.catalog.table(name).ok_or_else(|| Error::IndexNotFound {
                    index: name.to_string(),
                })?;
                indexes_of(&table)
            }
        },
        None => db.catalog.tables().iter().flat_map(indexes_of).collect(),
    };
    for (table, index) in &targets {
        maintain::check(db.store.as_ref(), table, index, true).await?;
    }
    Ok(Output::Done)
}

/// CHECK / REPAIR of one index (`index = Some`) or of every index of a table.
pub(crate) async fn check(
    session: &Session,
    index: Option<&str>,
    table: Option<&str>,
    repair: bool,
) -> Result<Output> {
    let db = &session.db;
    let targets: Vec<(Arc<TableDef>, IndexDef)> = match (index, table) {
        (Some(name), _) => {
            vec![
                db.catalog
                    .find_index(name)
                    .ok_or_else(|| Error::IndexNotFound {
                        index: name.to_string(),
                    })?,
            ]
        }
        (None, Some(name)) => {
            let table = db.table_def(name)?;
            indexes_of(&table)
        }
        (None, None) => Vec::new(),
    };
    let mut reports: Vec<(String, CheckReport)> = Vec::with_capacity(targets.len());
    for (table, index) in &targets {
        let report = maintain::check(db.store.as_ref(), table, index, repair).await?;
        reports.push((index.name.clone(), report));
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("index_name", ArrowType::Utf8, false),
        Field::new("rows", ArrowType::Int64, false),
        Field::new("entries", ArrowType::Int64, false),
        Field::new("missing", ArrowType::Int64, false),
        Field::new("dangling", ArrowType::Int64, false),
        Field::new("repaired", ArrowType::Int64, false),
        Field::new("status", ArrowType::Utf8, false),
    ]));
    let number = |f: fn(&CheckReport) -> u64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(
            reports.iter().map(|(_, r)| f(r) as i64),
        ))
    };
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            reports.iter().map(|(n, _)| n.clone()),
        )),
        number(|r| r.rows),
        number(|r| r.entries),
        number(|r| r.missing),
        number(|r| r.dangling),
        number(|r| r.repaired),
        Arc::new(StringArray::from_iter_values(reports.iter().map(
            |(_, r)| match (r.is_clean(), r.repaired > 0) {
                (true, _) => "ok",
                (false, true) => "repaired",
                (false, false) => "corrupt",
            },
        ))),
    ];
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    Ok(Output::Rows {
        schema,
        batches: vec![batch],
    })
}
