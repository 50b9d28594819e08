//! rowdex tables inside someone else's DataFusion `SessionContext`: joins with other data,
//! honest filter pushdown, row-count statistics, INSERT INTO through DataFusion (indexes
//! maintained, all or nothing), the schema provider, and streamed results.

use std::sync::Arc;

use futures::StreamExt;
use rowdex::arrow::array::{Int64Array, RecordBatch, StringArray};
use rowdex::arrow::datatypes::{DataType, Field, Schema};
use rowdex::datafusion::catalog::TableProvider;
use rowdex::datafusion::datasource::MemTable;
use rowdex::datafusion::logical_expr::{TableProviderFilterPushDown, col, lit};
use rowdex::datafusion::prelude::SessionContext;

use crate::{TestResult, cells, rows, table};

async fn orders_db() -> Result<rowdex::Database, rowdex::Error> {
    let db = rowdex::Database::open_memory().await?;
    db.session()
        .execute(
            "CREATE TABLE orders (customer_id INT, order_id INT, amount DOUBLE,
                                  PRIMARY KEY (customer_id, order_id));
             CREATE INDEX orders_amount ON orders (amount);
             INSERT INTO orders VALUES (1, 1, 12.5), (1, 2, 80.0), (2, 1, 5.0), (2, 2, 42.0);",
        )
        .await?;
    Ok(db)
}

fn customers() -> Result<MemTable, Box<dyn std::error::Error>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["Ada", "Linus"])),
        ],
    )?;
    Ok(MemTable::try_new(schema, vec![vec![batch]])?)
}

#[tokio::test]
async fn a_rowdex_table_joins_in_a_foreign_context_with_its_access_path() -> TestResult {
    let db = orders_db().await?;
    let ctx = SessionContext::new();
    ctx.register_table("customers", Arc::new(customers()?))?;
    let orders = db.table_provider("orders").await?;
    ctx.register_table("orders", orders.clone() as Arc<dyn TableProvider>)?;

    let sql = "SELECT c.name, o.order_id FROM orders o JOIN customers c ON c.id = o.customer_id
               WHERE o.customer_id = 1 ORDER BY o.order_id";
    let result = ctx.sql(sql).await?.collect().await?;
    assert_eq!(cells(&result), table(&[&["Ada", "1"], &["Ada", "2"]]));
    let explain = cells(&ctx.sql(&format!("EXPLAIN {sql}")).await?.collect().await?);
    let text: String = explain
        .iter()
        .map(|r| r.join(" "))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("RANGE SCAN orders range [customer_id = 1]"),
        "{text}"
    );

    // Pushdown is Exact only for what the access path applies; anything else DataFusion keeps.
    let simple = col("amount").gt(lit(10.0));
    let opaque = (col("amount") + col("order_id")).gt(lit(10.0));
    assert_eq!(
        orders.supports_filters_pushdown(&[&simple, &opaque])?,
        vec![
            TableProviderFilterPushDown::Exact,
            TableProviderFilterPushDown::Unsupported
        ]
    );
    let both = ctx
        .sql("SELECT order_id FROM orders WHERE amount > 10 AND amount + order_id > 50 ORDER BY order_id")
        .await?
        .collect()
        .await?;
    assert_eq!(cells(&both), table(&[&["2"]]));

    // The row count is an estimate the planner can use.
    let statistics = orders.statistics().ok_or("no statistics")?;
    assert_eq!(statistics.num_rows.get_value(), Some(&4));
    Ok(())
}

#[tokio::test]
async fn insert_through_datafusion_maintains_indexes_and_is_atomic() -> TestResult {
    let db = orders_db().await?;
    let ctx = SessionContext::new();
    ctx.register_table("customers", Arc::new(customers()?))?;
    ctx.register_table(
        "orders",
        db.table_provider("orders").await? as Arc<dyn TableProvider>,
    )?;
    let inserted = ctx
        .sql("INSERT INTO orders SELECT id, 7, 70.0 FROM customers")
        .await?
        .collect()
        .await?;
    assert_eq!(cells(&inserted), table(&[&["2"]]));
    let session = db.session();
    assert_eq!(
        rows(
            &session,
            "SELECT customer_id FROM orders WHERE amount = 70 ORDER BY 1"
        )
        .await?,
        table(&[&["1"], &["2"]])
    );
    // A duplicate key anywhere fails the whole insert: none of its rows land.
    let clash = ctx
        .sql("INSERT INTO orders VALUES (3, 1, 1.0), (1, 1, 2.0)")
        .await?
        .collect()
        .await;
    assert!(
        clash
            .as_ref()
            .is_err_and(|e| e.to_string().contains("duplicate primary key")),
        "{clash:?}"
    );
    assert_eq!(
        rows(&session, "SELECT count(*) FROM orders").await?,
        table(&[&["6"]])
    );
    for row in rows(&session, "CHECK TABLE orders").await? {
        assert_eq!(row.last().map(String::as_str), Some("ok"), "{row:?}");
    }
    Ok(())
}

#[tokio::test]
async fn the_catalog_sees_later_tables_and_results_stream() -> TestResult {
    let db = orders_db().await?;
    let ctx = SessionContext::new();
    db.register_catalog(&ctx, "rowdex")?;
    let session = db.session();
    session
        .execute(
            "CREATE TABLE later (k INT PRIMARY KEY, v TEXT); INSERT INTO later VALUES (1, 'x')",
        )
        .await?;
    let result = ctx
        .sql("SELECT v FROM rowdex.public.later WHERE k = 1")
        .await?
        .collect()
        .await?;
    assert_eq!(cells(&result), table(&[&["x"]]));

    let mut stream = session
        .query_stream("SELECT order_id FROM orders WHERE customer_id = 2")
        .await?;
    let mut streamed = Vec::new();
    while let Some(batch) = stream.next().await {
        streamed.push(batch?);
    }
    assert_eq!(cells(&streamed), table(&[&["1"], &["2"]]));
    let not_a_query = session.query_stream("DELETE FROM orders").await;
    assert!(not_a_query.is_err());
    Ok(())
}

#[tokio::test]
async fn datafusion_inserts_fill_defaults_and_keep_checks() -> TestResult {
    let db = orders_db().await?;
    let ctx = SessionContext::new();
    db.register_catalog(&ctx, "rowdex")?;
    let session = db.session();
    session
        .execute(
            "CREATE TABLE tagged (k INT PRIMARY KEY, label TEXT DEFAULT 'none', n INT DEFAULT 2 * 3 CHECK (n < 100))",
        )
        .await?;
    // DataFusion plans the INSERT and asks the table for the defaults of the columns left out.
    ctx.sql("INSERT INTO rowdex.public.tagged (k) VALUES (1)")
        .await?
        .collect()
        .await?;
    ctx.sql("INSERT INTO rowdex.public.tagged (k, n) VALUES (2, 7)")
        .await?
        .collect()
        .await?;
    let refused = match ctx
        .sql("INSERT INTO rowdex.public.tagged VALUES (3, 'x', 100)")
        .await
    {
        Ok(frame) => frame.collect().await.map(|_| ()),
        Err(error) => Err(error),
    };
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("tagged_n_check")),
        "{refused:?}"
    );
    assert_eq!(
        rows(&session, "SELECT * FROM tagged ORDER BY k").await?,
        table(&[&["1", "none", "6"], &["2", "none", "7"]])
    );
    Ok(())
}
