//! Drawing a random [`Scenario`]: tables, rows, indexes (unique where the rows allow it), column
//! DEFAULTs, later writes and sometimes a view. Apart from `scenario`, which describes a
//! scenario and sets it up, because the writes and the view's condition come from the query
//! generator, which reads scenarios.

use std::collections::HashSet;

use super::Restrictions;
use super::data::{self, Rows, Write};
use super::generate::{self, Gen, Subqueries};
use super::rng::Rng;
use super::scenario::{Scenario, View};
use super::schema::{self, Table};

impl Scenario {
    /// A random scenario; `huge` allows tables of thousands of rows.
    pub fn random(rng: &mut Rng, restrictions: &Restrictions, huge: bool) -> Scenario {
        let table_count = if rng.percent(60) { 2 } else { 1 };
        let tables: Vec<Table> = (0..table_count)
            .map(|n| schema::random_table(rng, n))
            .collect();
        let rows: Vec<Rows> = tables
            .iter()
            .map(|t| data::random_rows(rng, t, huge))
            .collect();
        let mut scenario = Scenario {
            tables,
            rows,
            indexes: Vec::new(),
            writes: Vec::new(),
            views: Vec::new(),
        };
        for table in &scenario.tables {
            scenario.indexes.extend(schema::random_indexes(rng, table));
        }
        // DEFAULTs after the rows and indexes, which name every column and so do not depend
        // on them: a seed's tables, rows and indexes stay what they were before DEFAULTs.
        for table in &mut scenario.tables {
            data::random_defaults(rng, table);
        }
        if rng.percent(50) {
            let count = rng.between(1, 6);
            for _ in 0..count {
                if let Some(write) = generate::random_write(rng, &scenario, restrictions) {
                    scenario.writes.push(write);
                }
            }
        }
        // UNIQUE where the rows allow it, on tables no later write changes (a write that
        // breaks uniqueness would fail on the indexed setup only).
        let written: HashSet<&str> = scenario.writes.iter().map(Write::table).collect();
        let unique: Vec<bool> = scenario
            .indexes
            .iter()
            .map(|i| {
                // An expression's values are not the column's: never UNIQUE.
                !written.contains(i.table.as_str())
                    && i.expression.is_none()
                    && scenario.is_unique(i)
                    && rng.percent(50)
            })
            .collect();
        for (index, unique) in scenario.indexes.iter_mut().zip(unique) {
            index.unique = unique;
        }
        if rng.percent(30) {
            let view = random_view(rng, &scenario, restrictions);
            scenario.views.push(view);
        }
        scenario
    }
}

/// A view over one of the scenario's tables: some of its columns in any order, usually with
/// a condition.
fn random_view(rng: &mut Rng, scenario: &Scenario, restrictions: &Restrictions) -> View {
    let base = rng.pick(&scenario.tables).clone();
    let mut columns = base.columns.clone();
    rng.shuffle(&mut columns);
    columns.truncate(rng.between(1, columns.len()));
    let mut filter = None;
    if rng.percent(70) {
        let mut g = Gen {
            rng,
            scenario,
            restrictions,
        };
        filter = Some(g.condition(&base, Subqueries::No));
    }
    let relation = Table {
        name: "v1".to_string(),
        columns,
        key: Vec::new(),
        salt: None,
        salt_on: Vec::new(),
        inline_key: false,
        uniques: Vec::new(),
        ttl: false,
        versions: false,
        families: Vec::new(),
    };
    View {
        relation,
        base: base.name,
        filter,
    }
}
