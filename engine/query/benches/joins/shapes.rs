//! The join shapes of issue 44, as SQL with `$n` parameters (rowdex and PostgreSQL take them
//! as they are; SQLite reads `$1` as a named parameter bound by position), each call's
//! parameters, and the data they run on: `users` (N rows) and `orders` (2N rows). Every
//! selective shape answers about as many rows at every N, so that its time can be compared
//! across sizes.

use std::io::Write;
use std::path::Path;

pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Distinct `users.city` values: one per 10,000 users (100 at 1M), so that a city and an age
/// match about 125 users at every size and the shapes that start from them answer alike.
pub fn cities(users: u64) -> u64 {
    (users / 10_000).max(10)
}
/// Distinct `users.age` values.
pub const AGES: u64 = 80;

pub const SCHEMA: &str = "CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT, city BIGINT, age BIGINT);
CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, seller_id BIGINT, amount BIGINT, note TEXT)";

pub const INDEXES: &str = "CREATE INDEX users_city ON users (city);
CREATE INDEX users_age ON users (age);
CREATE INDEX orders_user ON orders (user_id)";

/// One shape: its name (the RESULT key), SQL, and whether it reads everything (then it runs a
/// few times, not a few hundred).
pub struct Shape {
    pub name: &'static str,
    pub sql: &'static str,
    pub whole: bool,
}

pub const SHAPES: [Shape; 7] = [
    Shape {
        name: "order_to_user",
        sql: "SELECT o.id, o.amount, u.name FROM orders o JOIN users u ON u.id = o.user_id WHERE o.id = $1",
        whole: false,
    },
    Shape {
        name: "two_indexes_to_orders",
        sql: "SELECT u.id, o.id, o.amount FROM users u JOIN orders o ON o.user_id = u.id WHERE u.city = $1 AND u.age = $2",
        whole: false,
    },
    Shape {
        name: "user_range_limit",
        sql: "SELECT o.id, u.name FROM orders o JOIN users u ON u.id = o.user_id WHERE o.user_id BETWEEN $1 AND $2 ORDER BY o.id LIMIT 10",
        whole: false,
    },
    Shape {
        name: "in_subquery",
        sql: "SELECT o.id, o.amount FROM orders o WHERE o.user_id IN (SELECT id FROM users WHERE city = $1 AND age = $2)",
        whole: false,
    },
    Shape {
        name: "exists",
        sql: "SELECT u.id, u.name FROM users u WHERE u.city = $1 AND u.age = $2 AND EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id AND o.amount > 50)",
        whole: false,
    },
    Shape {
        name: "three_way",
        sql: "SELECT o.id, b.name, s.name FROM orders o JOIN users b ON b.id = o.user_id JOIN users s ON s.id = o.seller_id WHERE o.user_id = $1",
        whole: false,
    },
    Shape {
        name: "full_aggregate",
        sql: "SELECT u.city, count(*), sum(o.amount) FROM users u JOIN orders o ON o.user_id = u.id GROUP BY u.city",
        whole: true,
    },
];

/// A well-mixed 64-bit hash (splitmix64's finaliser).
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The parameters of call `i` of `shape` on `users` users.
pub fn params(shape: &Shape, i: u64, users: u64) -> Vec<i64> {
    let h = mix(i ^ 0x5eed);
    let v = match shape.name {
        "order_to_user" => vec![h % (2 * users) + 1],
        "two_indexes_to_orders" | "in_subquery" | "exists" => {
            vec![h % cities(users), (h >> 32) % AGES]
        }
        "user_range_limit" => {
            let low = h % users.saturating_sub(100).max(1) + 1;
            vec![low, low + 99]
        }
        "three_way" => vec![h % users + 1],
        _ => Vec::new(),
    };
    v.into_iter().map(|x| x as i64).collect()
}

/// Writes `users.csv` and `orders.csv` (id, name, city, age; id, user_id, seller_id, amount,
/// note) under `dir`.
pub fn write_csv(dir: &Path, users: u64) -> BenchResult<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("users.csv"))?);
    for id in 1..=users {
        let h = mix(id);
        writeln!(
            out,
            "{id},user{id},{},{}",
            h % cities(users),
            (h >> 32) % AGES
        )?;
    }
    out.flush()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("orders.csv"))?);
    for id in 1..=2 * users {
        let user = mix(id ^ 0xa5a5) % users + 1;
        let seller = mix(id.wrapping_mul(3) ^ 0x77) % users + 1;
        writeln!(
            out,
            "{id},{user},{seller},{},order {id} of user {user} placed through the bench",
            id % 100
        )?;
    }
    out.flush()?;
    Ok(())
}
