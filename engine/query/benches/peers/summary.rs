//! The parent's side: the children's `RESULT` and `ROWS` lines collected, row totals compared
//! with SQLite's, and the markdown table with its ratio columns and the targets' verdicts.

use std::collections::BTreeMap;

use crate::data::BenchResult;

/// Each row of the table: the case's `RESULT` name and its label.
const CASES: [(&str, &str); 16] = [
    (
        "round_trip_us",
        "0. round trip alone: prepared SELECT 1 (µs)",
    ),
    ("point_get_us", "1. point get, prepared (µs)"),
    (
        "point_get_adhoc_us",
        "1. point get, ad-hoc SQL, statement cache (µs)",
    ),
    (
        "point_get_adhoc_nocache_us",
        "1. point get, ad-hoc SQL, no cache (µs)",
    ),
    ("index_lookup_us", "2. index lookup, 10 rows (µs)"),
    ("intersect_us", "3. a = ? AND b = ?, 10 % x 1 % (µs)"),
    ("intersect_1x1_us", "3. b = ? AND c = ?, 1 % x 1 % (µs)"),
    ("page_us", "4. paging LIMIT 10 OFFSET 20 (µs)"),
    (
        "page_keyset_us",
        "4. paging, keyset uid = ? AND ts < ? (µs)",
    ),
    (
        "page_keyset_rowvalue_us",
        "4. paging, keyset (uid, ts) < (?, ?) (µs)",
    ),
    ("load_rows_per_s", "5. bulk load, 2 indexes (rows/s)"),
    ("load_s", "5. bulk load (s)"),
    ("settle_s", "5. after the load: VACUUM, compaction (s)"),
    ("load_peak_mib", "5. bulk load, peak RSS (MiB)"),
    ("aggregate_s", "6. GROUP BY over all rows (s)"),
    ("aggregate_peak_mib", "6. GROUP BY, peak RSS (MiB)"),
];

/// The ratio columns: (numerator engine, denominator engine).
const RATIOS: [(&str, &str); 4] = [
    ("rowdex-memory", "sqlite"),
    ("rowdex-fjall", "sqlite"),
    ("rowdex-fjall", "postgres"),
    ("rowdex-fjall", "raw-fjall"),
];

/// The like-for-like column: rowdex on fjall over PostgreSQL's figure less its round trip
/// (`round_trip_us`), for the cases timed per call.
const LESS_ROUND_TRIP: (&str, &str) = ("rowdex-fjall", "postgres");

/// The engine whose row totals the others must match.
const REFERENCE_ENGINE: &str = "sqlite";

/// The rowdex engines the targets are checked for, against `REFERENCE_ENGINE`.
const TARGET_ENGINES: [&str; 2] = ["rowdex-memory", "rowdex-fjall"];

/// What a target requires of the ratio rowdex / SQLite.
#[derive(Clone, Copy)]
enum Bound {
    Below(f64),
    AtMost(f64),
    AtLeast(f64),
}

impl Bound {
    fn holds(self, ratio: f64) -> bool {
        match self {
            Bound::Below(limit) => ratio < limit,
            Bound::AtMost(limit) => ratio <= limit,
            Bound::AtLeast(limit) => ratio >= limit,
        }
    }

    fn describe(self) -> String {
        match self {
            Bound::Below(limit) => format!("< {limit}"),
            Bound::AtMost(limit) => format!("<= {limit}"),
            Bound::AtLeast(limit) => format!(">= {limit}"),
        }
    }
}

/// The targets: (what, case, bound on rowdex / SQLite).
const TARGETS: [(&str, &str, Bound); 7] = [
    (
        "10 % x 1 % intersection faster than SQLite",
        "intersect_us",
        Bound::Below(1.0),
    ),
    (
        "1 % x 1 % intersection 3x faster",
        "intersect_1x1_us",
        Bound::AtMost(0.333),
    ),
    (
        "index lookup, 10 rows",
        "index_lookup_us",
        Bound::AtMost(1.0),
    ),
    ("paging OFFSET", "page_us", Bound::AtMost(1.0)),
    ("prepared point get", "point_get_us", Bound::AtMost(1.0)),
    (
        "bulk load rows/s at least SQLite's",
        "load_rows_per_s",
        Bound::AtLeast(1.0),
    ),
    ("GROUP BY", "aggregate_s", Bound::AtMost(0.5)),
];

/// What the children reported, by (case, engine).
#[derive(Default)]
pub struct Results {
    values: BTreeMap<(String, String), f64>,
    rows: BTreeMap<(String, String), u64>,
}

impl Results {
    /// Takes the `RESULT case value` and `ROWS case total` lines of `engine`'s output; returns
    /// whether there was any result.
    pub fn collect(&mut self, engine: &str, stdout: &str) -> BenchResult<bool> {
        let mut any_result = false;
        for line in stdout.lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["RESULT", case, value] => {
                    let key = (case.to_string(), engine.to_string());
                    self.values.insert(key, value.parse()?);
                    any_result = true;
                }
                ["ROWS", case, total] => {
                    let key = (case.to_string(), engine.to_string());
                    self.rows.insert(key, total.parse()?);
                }
                _ => {}
            }
        }
        Ok(any_result)
    }

    fn value(&self, case: &str, engine: &str) -> Option<f64> {
        self.values
            .get(&(case.to_string(), engine.to_string()))
            .copied()
    }

    fn ratio(&self, case: &str, numerator: &str, denominator: &str) -> Option<f64> {
        // The peers settle inside their load (ANALYZE, VACUUM): nothing to compare with.
        if case == "settle_s" {
            return None;
        }
        match (self.value(case, numerator), self.value(case, denominator)) {
            (Some(x), Some(y)) if y > 0.0 => Some(x / y),
            _ => None,
        }
    }

    /// `LESS_ROUND_TRIP`'s ratio for `case`: only for a case timed per call (µs), other than
    /// the round trip itself, and only where the figure exceeds the round trip.
    fn ratio_less_round_trip(&self, case: &str) -> Option<f64> {
        if !case.ends_with("_us") || case == "round_trip_us" {
            return None;
        }
        let (numerator, server) = LESS_ROUND_TRIP;
        let trip = self.value("round_trip_us", server)?;
        let work = self.value(case, server)? - trip;
        (work > 0.0).then(|| self.value(case, numerator).map(|x| x / work))?
    }

    /// Each case whose row total differs from SQLite's, with the engines and totals.
    pub fn row_mismatches(&self) -> Vec<String> {
        let mut mismatches = Vec::new();
        for ((case, engine), total) in &self.rows {
            let reference = self.rows.get(&(case.clone(), REFERENCE_ENGINE.to_string()));
            if let Some(expected) = reference
                && total != expected
            {
                mismatches.push(format!(
                    "{case}: {engine} returned {total} rows, {REFERENCE_ENGINE} {expected}"
                ));
            }
        }
        mismatches
    }

    /// The markdown table of every case for `engines`, with the ratio columns.
    pub fn print_table(&self, engines: &[String]) {
        print!("| case |");
        for engine in engines {
            print!(" {engine} |");
        }
        for (numerator, denominator) in RATIOS {
            print!(" {numerator} / {denominator} |");
        }
        let (numerator, server) = LESS_ROUND_TRIP;
        println!(" {numerator} / ({server} less its round trip) |");
        print!("|---|");
        for _ in 0..engines.len() + RATIOS.len() + 1 {
            print!("---:|");
        }
        println!();
        for (case, label) in CASES {
            print!("| {label} |");
            for engine in engines {
                let cell = self.value(case, engine).map(format_value);
                print!(" {} |", cell.unwrap_or_default());
            }
            for (numerator, denominator) in RATIOS {
                let cell = self.ratio(case, numerator, denominator);
                print!(
                    " {} |",
                    cell.map(|r| format!("{r:.2}x")).unwrap_or_default()
                );
            }
            let cell = self.ratio_less_round_trip(case);
            println!(
                " {} |",
                cell.map(|r| format!("{r:.2}x")).unwrap_or_default()
            );
        }
        println!(
            "(times: smaller is better; rows/s: larger is better; ratios are the first engine's \
             figure over the second's; postgres's figures include a loopback round trip per \
             call (row 0), which the in-process engines do not pay: the last column takes it \
             away; postgres has no peak RSS: its server runs in processes of its own)"
        );
    }

    /// Each target's ratio for each rowdex engine and whether it is met.
    pub fn print_targets(&self) {
        println!();
        println!("targets (rowdex / {REFERENCE_ENGINE}):");
        print!("| target | case | bound |");
        for engine in TARGET_ENGINES {
            print!(" {engine} |");
        }
        println!();
        println!("|---|---|---|{}", "---|".repeat(TARGET_ENGINES.len()));
        for (what, case, bound) in TARGETS {
            print!("| {what} | {case} | {} |", bound.describe());
            for engine in TARGET_ENGINES {
                let verdict = match self.ratio(case, engine, REFERENCE_ENGINE) {
                    Some(ratio) if bound.holds(ratio) => format!("{ratio:.3} met"),
                    Some(ratio) => format!("{ratio:.3} missed"),
                    None => "not measured".to_string(),
                };
                print!(" {verdict} |");
            }
            println!();
        }
    }
}

fn format_value(value: f64) -> String {
    if value >= 1000.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}
