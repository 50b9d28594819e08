//! ANALYZE and SHOW STATISTICS, and the background refresh of statistics a table has outgrown
//! (see `db::stats`).

use std::sync::Arc;

use rowdex_catalog::{KeyColumn, KeyStatistics, TableDef};
use rowdex_codec::key;

use crate::db::analyze::analyze;
use crate::error::Result;
use crate::output::Output;
use crate::session::Session;

/// `ANALYZE [t]`: gathers the statistics of one table, or of every table.
pub(crate) async fn analyze_tables(session: &Session, table: Option<&str>) -> Result<Output> {
    let tables: Vec<Arc<TableDef>> = match table {
        Some(name) => vec![session.table_def(name)?],
        None => session.schema_view().tables(),
    };
    for def in tables {
        analyze(&session.db, &def, None).await?;
    }
    Ok(Output::Done)
}

/// `SHOW STATISTICS t`: one line for the table (its exact row count) and one for its primary
/// key and each index (what was gathered, and at how many rows).
pub(crate) async fn show_statistics(session: &Session, table: &str) -> Result<Output> {
    let db = &session.db;
    let def = db.table_def(table)?;
    let rows = db.stats.rows(db.store.as_ref(), &def).await?;
    let gathered = db.stats.gathered(def.id);
    let mut lines: Vec<[String; 7]> = vec![[
        def.name.clone(),
        "TABLE".to_string(),
        String::new(),
        rows.to_string(),
        String::new(),
        String::new(),
        gathered
            .as_ref()
            .map_or_else(|| "never".to_string(), |g| g.rows.to_string()),
    ]];
    if let Some(gathered) = &gathered {
        lines.push(key_line(
            &def,
            "PRIMARY KEY",
            &def.key,
            &gathered.primary,
            gathered.rows,
        ));
        for index in def.indexes.iter().filter(|i| i.is_ready()) {
            if let Some(stats) = gathered.indexes.get(&index.id) {
                lines.push(key_line(
                    &def,
                    &index.name,
                    &index.columns,
                    stats,
                    gathered.rows,
                ));
            }
        }
    }
    Output::text_table(
        [
            "object",
            "kind",
            "columns",
            "entries",
            "distinct",
            "leading_range",
            "gathered_at_rows",
        ],
        &lines,
    )
}

fn key_line(
    def: &TableDef,
    name: &str,
    columns: &[KeyColumn],
    stats: &KeyStatistics,
    gathered_rows: u64,
) -> [String; 7] {
    let names: Vec<&str> = columns
        .iter()
        .map(|c| def.columns[c.column].name.as_str())
        .collect();
    let distinct: Vec<String> = stats.distinct.iter().map(u64::to_string).collect();
    let leading = |sample: Option<&Vec<u8>>| -> String {
        let order = columns.first().map(KeyColumn::order);
        match (sample, order) {
            (Some(bytes), Some(order)) => key::decode_datum(&mut bytes.as_slice(), order)
                .map(|d| d.to_string())
                .unwrap_or_default(),
            _ => String::new(),
        }
    };
    let range = if stats.samples.is_empty() {
        String::new()
    } else {
        format!(
            "{} .. {}",
            leading(stats.samples.first()),
            leading(stats.samples.last())
        )
    };
    [
        name.to_string(),
        if name == "PRIMARY KEY" {
            "KEY"
        } else {
            "INDEX"
        }
        .to_string(),
        names.join(", "),
        stats.entries.to_string(),
        distinct.join(", "),
        range,
        gathered_rows.to_string(),
    ]
}

/// Gathers, in the background, the statistics of every table whose row count moved past the
/// refresh threshold since they were gathered (as PostgreSQL's autoanalyze). Queries go on
/// with the older figures meanwhile; without a runtime to run on, nothing is started.
pub(crate) fn refresh_outgrown(session: &Session) {
    let db = &session.db;
    let wanted = db.stats.refresh_wanted(&db.catalog.tables());
    if wanted.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        for def in wanted {
            db.stats.gathered_done(def.id);
        }
        return;
    };
    for def in wanted {
        let db = db.clone();
        runtime.spawn(async move {
            // A failed gathering (the table dropped meanwhile, say) keeps the older figures.
            let _ = analyze(&db, &def, None).await;
            db.stats.gathered_done(def.id);
        });
    }
}
