//! rowdex through its public API: prepared statements for the parameterized cases, SQL text
//! for the ad-hoc ones and the aggregate.

use std::path::Path;

use rowdex::arrow::array::{Array, Int64Array};
use rowdex::arrow::record_batch::RecordBatch;
use rowdex::{Database, Datum, Prepared, Session};

use crate::data::{BenchResult, Data, write_actions_csv, write_pairs_csv};
use crate::measure::{Engine, TABLES};
use crate::queries;

/// The statements of the parameterized cases, prepared once the tables exist.
struct Statements {
    point_get: Prepared,
    index_lookup: Prepared,
    intersect_a_b: Prepared,
    intersect_b_c: Prepared,
    page: Prepared,
    page_keyset: Prepared,
    page_keyset_rowvalue: Prepared,
}

impl Statements {
    fn prepare(session: &Session) -> BenchResult<Statements> {
        Ok(Statements {
            point_get: session.prepare(queries::POINT_GET)?,
            index_lookup: session.prepare(queries::INDEX_LOOKUP)?,
            intersect_a_b: session.prepare(queries::INTERSECT_A_B)?,
            intersect_b_c: session.prepare(queries::INTERSECT_B_C)?,
            page: session.prepare(queries::PAGE)?,
            page_keyset: session.prepare(queries::PAGE_KEYSET)?,
            page_keyset_rowvalue: session.prepare(queries::PAGE_KEYSET_ROWVALUE)?,
        })
    }
}

pub struct Rowdex {
    /// The default session: SQL text goes through the compiled-query cache.
    session: Session,
    /// A handle to the same connection with the compiled-query cache off.
    uncached: Session,
    data: Data,
    statements: Option<Statements>,
}

fn count_rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

fn int(value: u64) -> Datum {
    Datum::Int(value as i64)
}

/// The value of a one-row, one-column `count(*)` result.
fn count_value(batches: &[RecordBatch]) -> BenchResult<u64> {
    let column = batches
        .first()
        .filter(|batch| batch.num_rows() == 1 && batch.num_columns() == 1)
        .map(|batch| batch.column(0))
        .ok_or("count(*) did not return one value")?;
    let counts = column
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or_else(|| format!("count(*) returned {}", column.data_type()))?;
    Ok(u64::try_from(counts.value(0))?)
}

impl Rowdex {
    pub async fn new(db: Database, data: Data) -> BenchResult<Rowdex> {
        let session = db.session();
        session
            .execute(
                "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, country TEXT,
                   amount DOUBLE, note TEXT);
                 CREATE INDEX orders_user ON orders (user_id);
                 CREATE INDEX orders_country ON orders (country);",
            )
            .await?;
        let mut uncached = session.clone();
        uncached.set_query_cache(false);
        Ok(Rowdex {
            session,
            uncached,
            data,
            statements: None,
        })
    }

    fn statements(&self) -> BenchResult<&Statements> {
        self.statements
            .as_ref()
            .ok_or_else(|| "statements not prepared".into())
    }

    async fn run(statement: &Prepared, params: &[Datum]) -> BenchResult<usize> {
        Ok(count_rows(&statement.query(params).await?))
    }
}

impl Engine for Rowdex {
    async fn load_orders(&mut self, csv: &Path) -> BenchResult<()> {
        self.session
            .execute(&format!("COPY orders FROM '{}'", csv.display()))
            .await?;
        Ok(())
    }

    async fn load_rest(&mut self) -> BenchResult<()> {
        let dir = tempfile::tempdir()?;
        let pairs = dir.path().join("pairs.csv");
        let actions = dir.path().join("actions.csv");
        write_pairs_csv(self.data, &pairs)?;
        write_actions_csv(self.data, &actions)?;
        self.session
            .execute(&format!(
                "CREATE TABLE pairs (id BIGINT PRIMARY KEY, a BIGINT, b BIGINT, c BIGINT, pad TEXT);
                 CREATE INDEX pairs_a ON pairs (a);
                 CREATE INDEX pairs_b ON pairs (b);
                 CREATE INDEX pairs_c ON pairs (c);
                 COPY pairs FROM '{}';
                 CREATE TABLE actions (uid BIGINT, ts BIGINT, kind BIGINT,
                   PRIMARY KEY (uid, ts DESC));
                 COPY actions FROM '{}';",
                pairs.display(),
                actions.display()
            ))
            .await?;
        self.statements = Some(Statements::prepare(&self.session)?);
        Ok(())
    }

    async fn settle(&mut self) -> BenchResult<()> {
        self.session.execute("VACUUM").await?;
        Ok(())
    }

    async fn point_get(&mut self, id: u64) -> BenchResult<usize> {
        Self::run(&self.statements()?.point_get, &[int(id)]).await
    }

    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize> {
        let sql = queries::point_get_adhoc(id);
        Ok(count_rows(&self.session.query(&sql).await?))
    }

    async fn point_get_adhoc_nocache(&mut self, id: u64) -> BenchResult<usize> {
        let sql = queries::point_get_adhoc(id);
        Ok(count_rows(&self.uncached.query(&sql).await?))
    }

    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize> {
        Self::run(&self.statements()?.index_lookup, &[int(user)]).await
    }

    async fn intersect_a_b(&mut self, a: u64, b: u64) -> BenchResult<usize> {
        Self::run(&self.statements()?.intersect_a_b, &[int(a), int(b)]).await
    }

    async fn intersect_b_c(&mut self, b: u64, c: u64) -> BenchResult<usize> {
        Self::run(&self.statements()?.intersect_b_c, &[int(b), int(c)]).await
    }

    async fn page(&mut self, uid: u64) -> BenchResult<usize> {
        Self::run(&self.statements()?.page, &[int(uid)]).await
    }

    async fn page_keyset(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        Self::run(&self.statements()?.page_keyset, &[int(uid), int(before_ts)]).await
    }

    async fn page_keyset_rowvalue(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        let statement = &self.statements()?.page_keyset_rowvalue;
        Self::run(statement, &[int(uid), int(before_ts)]).await
    }

    async fn aggregate(&mut self) -> BenchResult<usize> {
        Ok(count_rows(&self.session.query(queries::AGGREGATE).await?))
    }

    async fn warm(&mut self) -> BenchResult<u64> {
        let mut rows = 0;
        for table in TABLES {
            // count(*) reads every entry of the table without building a result.
            let sql = format!("SELECT count(*) FROM {table}");
            rows += count_value(&self.session.query(&sql).await?)?;
        }
        Ok(rows)
    }
}
