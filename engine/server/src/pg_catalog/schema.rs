//! The `pg_catalog` and `information_schema` schemas in a session's DataFusion context: each
//! table is built from the live catalog when a query names it, so it always shows the tables
//! and indexes as they are now.

use std::sync::Arc;

use async_trait::async_trait;
use rowdex::arrow::array::RecordBatch;
use rowdex::arrow::error::ArrowError;
use rowdex::datafusion::catalog::{SchemaProvider, TableProvider};
use rowdex::datafusion::datasource::MemTable;
use rowdex::datafusion::error::{DataFusionError, Result as DfResult};
use rowdex::datafusion::prelude::SessionContext;
use rowdex::{Database, SchemaView};

use crate::pg_catalog::functions::{SessionFacts, register_functions};
use crate::pg_catalog::model::Relations;
use crate::pg_catalog::monitoring::{
    MONITORING_VIEWS, pg_stat_activity, pg_stat_progress_copy, pg_stat_progress_create_index,
    pg_stat_statements, pg_stat_statements_info,
};
use crate::pg_catalog::prefix_elements::register_prefix_elements;
use crate::pg_catalog::tables::{
    INFORMATION_SCHEMA_TABLES, PG_CATALOG_TABLES, information_schema_table, pg_catalog_table,
    pg_locks,
};

/// The rowdex catalog in sessions' contexts (see `rowdex::Session::context`).
const ROWDEX_CATALOG: &str = "rowdex";

/// Adds the `pg_catalog` and `information_schema` schemas and the catalog functions to `ctx`.
pub fn register_pg_catalog(
    ctx: &SessionContext,
    db: &Database,
    schema: &SchemaView,
    facts: SessionFacts,
) {
    register_functions(ctx, schema, &facts);
    register_prefix_elements(ctx);
    if let Some(catalog) = ctx.catalog(ROWDEX_CATALOG) {
        for which in [Which::PgCatalog, Which::InformationSchema] {
            let schema = Arc::new(CatalogSchema {
                which,
                db: db.clone(),
                schema: schema.clone(),
                facts: facts.clone(),
            });
            // The names are free in a rowdex context: it has only `public`.
            let _ = catalog.register_schema(which.name(), schema);
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Which {
    PgCatalog,
    InformationSchema,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::PgCatalog => "pg_catalog",
            Which::InformationSchema => "information_schema",
        }
    }

    fn tables(self) -> &'static [&'static str] {
        match self {
            Which::PgCatalog => &PG_CATALOG_TABLES,
            Which::InformationSchema => &INFORMATION_SCHEMA_TABLES,
        }
    }
}

#[derive(Debug)]
struct CatalogSchema {
    which: Which,
    db: Database,
    /// The catalog as the session sees it (its open transaction's schema changes included).
    schema: SchemaView,
    facts: SessionFacts,
}

impl CatalogSchema {
    /// The schema's tables: `pg_catalog`'s include the statistics views.
    fn names(&self) -> impl Iterator<Item = &'static str> {
        let views: &[&str] = match self.which {
            Which::PgCatalog => &MONITORING_VIEWS,
            Which::InformationSchema => &[],
        };
        self.which.tables().iter().chain(views).copied()
    }

    async fn build(&self, name: &str) -> Option<Result<RecordBatch, ArrowError>> {
        let mut relations = Relations::read(&self.schema);
        if matches!(name, "pg_attribute" | "pg_class") {
            relations.describe_views(&self.db).await;
        }
        if matches!(name, "pg_roles" | "pg_user") {
            relations.read_roles(&self.db).await;
        }
        match self.which {
            Which::PgCatalog if name == "pg_locks" => {
                Some(pg_locks(&self.db.row_locks(), &relations))
            }
            Which::PgCatalog if name == "pg_stat_activity" => Some(pg_stat_activity(
                &self.facts.activities,
                &self.db.row_locks(),
            )),
            Which::PgCatalog if name == "pg_stat_statements" => {
                Some(pg_stat_statements(&self.facts.statements))
            }
            Which::PgCatalog if name == "pg_stat_statements_info" => {
                Some(pg_stat_statements_info(&self.facts.statements))
            }
            Which::PgCatalog if name == "pg_stat_progress_create_index" => Some(
                pg_stat_progress_create_index(&self.facts.activities, &relations),
            ),
            Which::PgCatalog if name == "pg_stat_progress_copy" => {
                Some(pg_stat_progress_copy(&self.facts.activities, &relations))
            }
            Which::PgCatalog => pg_catalog_table(name, &relations, &self.facts),
            Which::InformationSchema => information_schema_table(name, &relations, &self.facts),
        }
    }
}

#[async_trait]
impl SchemaProvider for CatalogSchema {
    fn table_names(&self) -> Vec<String> {
        self.names().map(str::to_string).collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let Some(batch) = self.build(name).await else {
            return Ok(None);
        };
        let batch = batch.map_err(|e| DataFusionError::ArrowError(Box::new(e), None))?;
        let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        Ok(Some(Arc::new(table)))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.names().any(|table| table == name)
    }
}
