//! The generated data set: three tables whose every value is a pure function of the row number,
//! so that every engine loads the same rows and each case's row counts can be known in advance.

use std::path::Path;

/// What every step of the bench returns.
pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

pub const COUNTRIES: u64 = 50;
pub const ROWS_PER_USER: u64 = 10;
pub const ACTIONS_PER_USER: u64 = 1000;
/// Distinct values of `pairs.a` (10 % selective).
pub const A_VALUES: u64 = 10;
/// Distinct values of `pairs.b` and of `pairs.c` (1 % selective each).
pub const B_VALUES: u64 = 100;
pub const C_VALUES: u64 = 100;
/// The first action's timestamp; a user's actions are `ACTION_TS_STEP` apart.
pub const FIRST_ACTION_TS: u64 = 1_000_000;
pub const ACTION_TS_STEP: u64 = 7;

/// splitmix64: deterministic pseudo-random values from a row number.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A row of `orders` (its id aside).
pub struct Order {
    pub user: u64,
    pub country: String,
    pub amount: f64,
    pub note: String,
}

/// A row of `pairs` (its id and pad aside).
#[derive(Clone, Copy)]
pub struct Pair {
    pub a: u64,
    pub b: u64,
    pub c: u64,
}

/// A row of `actions`.
pub struct Action {
    pub uid: u64,
    pub ts: u64,
    pub kind: u64,
}

/// The data set, a pure function of the row count (the same for each table).
#[derive(Clone, Copy)]
pub struct Data {
    pub rows: u64,
}

impl Data {
    pub fn users(self) -> u64 {
        (self.rows / ROWS_PER_USER).max(1)
    }

    pub fn order(self, id: u64) -> Order {
        Order {
            user: id % self.users(),
            country: format!("country{:02}", mix(id) % COUNTRIES),
            amount: (mix(id ^ 7) % 100_000) as f64 / 100.0,
            note: format!("note for order {id}"),
        }
    }

    /// The number of distinct countries in `orders`: the groups of the aggregate.
    pub fn countries_present(self) -> usize {
        let mut seen = [false; COUNTRIES as usize];
        for id in 0..self.rows {
            seen[(mix(id) % COUNTRIES) as usize] = true;
        }
        seen.iter().filter(|&&present| present).count()
    }

    pub fn pair(self, id: u64) -> Pair {
        Pair {
            a: mix(id) % A_VALUES,
            b: mix(id ^ 0xabcd) % B_VALUES,
            c: mix(id ^ 0x5eed) % C_VALUES,
        }
    }

    pub fn action_users(self) -> u64 {
        (self.rows / ACTIONS_PER_USER).max(1)
    }

    /// Action row `n`: user `n / ACTIONS_PER_USER`, timestamps ascending within a user.
    pub fn action(self, n: u64) -> Action {
        Action {
            uid: n / ACTIONS_PER_USER,
            ts: FIRST_ACTION_TS + (n % ACTIONS_PER_USER) * ACTION_TS_STEP,
            kind: n % 13,
        }
    }
}

/// Rows of `pairs` per value pair of (a, b) and of (b, c), counted once over every id: the
/// exact result size of each intersection query.
pub struct PairCounts {
    by_a_b: Vec<usize>,
    by_b_c: Vec<usize>,
}

impl PairCounts {
    pub fn new(data: Data) -> PairCounts {
        let mut by_a_b = vec![0; (A_VALUES * B_VALUES) as usize];
        let mut by_b_c = vec![0; (B_VALUES * C_VALUES) as usize];
        for id in 0..data.rows {
            let pair = data.pair(id);
            by_a_b[(pair.a * B_VALUES + pair.b) as usize] += 1;
            by_b_c[(pair.b * C_VALUES + pair.c) as usize] += 1;
        }
        PairCounts { by_a_b, by_b_c }
    }

    /// Rows with `a = a AND b = b`.
    pub fn a_b(&self, a: u64, b: u64) -> usize {
        let slot = (a < A_VALUES && b < B_VALUES).then_some(a * B_VALUES + b);
        slot.and_then(|i| self.by_a_b.get(i as usize).copied())
            .unwrap_or(0)
    }

    /// Rows with `b = b AND c = c`.
    pub fn b_c(&self, b: u64, c: u64) -> usize {
        let slot = (b < B_VALUES && c < C_VALUES).then_some(b * C_VALUES + c);
        slot.and_then(|i| self.by_b_c.get(i as usize).copied())
            .unwrap_or(0)
    }
}

pub fn pad(id: u64) -> String {
    format!("pad {id:08}")
}

pub fn write_orders_csv(data: Data, path: &Path) -> BenchResult<()> {
    let mut out = csv::Writer::from_path(path)?;
    for id in 0..data.rows {
        let order = data.order(id);
        out.write_record([
            id.to_string(),
            order.user.to_string(),
            order.country,
            order.amount.to_string(),
            order.note,
        ])?;
    }
    out.flush()?;
    Ok(())
}

pub fn write_pairs_csv(data: Data, path: &Path) -> BenchResult<()> {
    let mut out = csv::Writer::from_path(path)?;
    for id in 0..data.rows {
        let pair = data.pair(id);
        out.write_record([
            id.to_string(),
            pair.a.to_string(),
            pair.b.to_string(),
            pair.c.to_string(),
            pad(id),
        ])?;
    }
    out.flush()?;
    Ok(())
}

pub fn write_actions_csv(data: Data, path: &Path) -> BenchResult<()> {
    let mut out = csv::Writer::from_path(path)?;
    for n in 0..data.rows {
        let action = data.action(n);
        out.write_record([
            action.uid.to_string(),
            action.ts.to_string(),
            action.kind.to_string(),
        ])?;
    }
    out.flush()?;
    Ok(())
}
