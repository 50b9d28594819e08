//! rowdex inside a program that already uses DataFusion: a rowdex table registered in the
//! program's own `SessionContext`, joined with a CSV file. EXPLAIN shows the rowdex scan with
//! the access path the pushed-down filter selected; an INSERT through DataFusion maintains the
//! table's index; the provider's statistics carry the row count.
//!
//! Run: `cargo run -p rowdex-examples --example embed_datafusion`

use std::error::Error;
use std::sync::Arc;

use rowdex::datafusion::catalog::TableProvider;
use rowdex::datafusion::prelude::{CsvReadOptions, SessionContext};
use rowdex_examples::print_batches;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // The rowdex side: orders keyed by (customer_id, order_id), with an index on amount.
    let db = rowdex::Database::open_memory().await?;
    let session = db.session();
    session
        .execute(
            "CREATE TABLE orders (customer_id INT, order_id INT, amount DOUBLE,
                                  PRIMARY KEY (customer_id, order_id));
             CREATE INDEX orders_amount ON orders (amount);
             INSERT INTO orders VALUES (1, 1, 12.5), (1, 2, 80.0), (2, 1, 5.0),
                                       (2, 2, 42.0), (2, 3, 19.9), (3, 1, 250.0);",
        )
        .await?;

    // The program's side: its own context, with customers in a CSV file.
    let csv = std::env::temp_dir().join(format!("rowdex-customers-{}.csv", std::process::id()));
    std::fs::write(&csv, "id,name,country\n1,Ada,UK\n2,Linus,FI\n3,Grace,US\n")?;
    let ctx = SessionContext::new();
    ctx.register_csv(
        "customers",
        csv.to_string_lossy().as_ref(),
        CsvReadOptions::new(),
    )
    .await?;
    let orders = db.table_provider("orders").await?;
    println!(
        "orders statistics: {:?} rows",
        orders.statistics().map(|s| s.num_rows)
    );
    ctx.register_table("orders", orders.clone() as Arc<dyn TableProvider>)?;

    let join = "SELECT c.name, o.order_id, o.amount
                FROM orders o JOIN customers c ON c.id = o.customer_id
                WHERE o.customer_id = 2 AND o.amount > 10
                ORDER BY o.order_id";
    println!("> EXPLAIN {join}");
    let plan = ctx.sql(&format!("EXPLAIN {join}")).await?.collect().await?;
    print_plan(&plan);
    println!("> {join}");
    print_batches(&ctx.sql(join).await?.collect().await?);

    // A range on the indexed column alone reads the index.
    let by_amount = "SELECT customer_id, order_id FROM orders WHERE amount BETWEEN 40 AND 100";
    println!("> EXPLAIN {by_amount}");
    print_plan(
        &ctx.sql(&format!("EXPLAIN {by_amount}"))
            .await?
            .collect()
            .await?,
    );

    // Writes through DataFusion land in rowdex, index entries included.
    let insert = "INSERT INTO orders SELECT id, 9, 64.0 FROM customers WHERE country = 'US'";
    println!("> {insert}");
    print_batches(&ctx.sql(insert).await?.collect().await?);
    println!("> (rowdex session) SELECT * FROM orders WHERE amount = 64 ; CHECK TABLE orders");
    print_batches(
        &session
            .query("SELECT * FROM orders WHERE amount = 64")
            .await?,
    );
    print_batches(&session.query("CHECK TABLE orders").await?);

    // Or expose every rowdex table (and view) at once, as a catalog of the program's context.
    db.register_catalog(&ctx, "rowdex")?;
    let count = "SELECT count(*) FROM rowdex.public.orders";
    println!("> {count}");
    print_batches(&ctx.sql(count).await?.collect().await?);

    std::fs::remove_file(&csv)?;
    Ok(())
}

/// Prints the physical plan column of an EXPLAIN result, one plan line per output line.
fn print_plan(batches: &[rowdex::arrow::record_batch::RecordBatch]) {
    for batch in batches {
        let (Some(kind), Some(plan)) = (
            batch.column_by_name("plan_type"),
            batch.column_by_name("plan"),
        ) else {
            continue;
        };
        for row in 0..batch.num_rows() {
            if rowdex::format::cell_text(kind.as_ref(), row).as_deref() != Some("physical_plan") {
                continue;
            }
            for line in rowdex::format::cell_text(plan.as_ref(), row)
                .unwrap_or_default()
                .lines()
            {
                println!("  {line}");
            }
        }
    }
}
