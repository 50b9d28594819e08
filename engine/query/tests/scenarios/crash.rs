//! Crash consistency of the durable store under SIGKILL, through a real process kill.
//!
//! The parent test re-executes this test binary as a child (`crash::child_writer`, ignored so it
//! runs only when asked for by name) that opens a fjall database and runs a seeded workload of
//! INSERT / UPSERT / UPDATE / DELETE statements, printing `start N` before each statement and
//! `ack N <rows>` (or `err N ...`) after it returns. The parent kills it with SIGKILL at a random
//! moment, reopens the directory, and compares every table with an in-memory rowdex database
//! that ran the same statements: the reopened database must hold every acknowledged statement
//! and, of the one in flight, either all of it or none of it. Every index must then pass CHECK
//! INDEX. Rounds continue on the same directory, so later children open (and get killed while
//! writing to) a database that was itself recovered from a crash. `hits` is keyed by a
//! generated column (`reverse(page)`) and has an index on expressions, whose hidden columns
//! every write computes: a kill mid-write must leave them matching their sources (the dumps
//! show the key, CHECK INDEX the entries). Among the tables, `pet`
//! references `owner` ON DELETE CASCADE: a kill may land in a delete that cascades, and the
//! reopened database must then hold no pet without its owner.
//!
//! The guarantee being tested is that of the default `Durability::SyncWal`: a statement is
//! acknowledged only after its batch is in fjall's journal and handed to the OS (`write(2)`),
//! and a SIGKILL does not take the OS page cache with it. It says nothing about power loss,
//! which this test cannot simulate.
//!
//! `ROWDEX_CRASH_ROUNDS` (default 12) sets the number of kills, `ROWDEX_CRASH_SEED` replays a
//! run's statements (the seed is printed; the kill moments are not reproducible).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use rowdex::{Database, Output, Session};

use crate::{Rng, TestResult, rows};

/// Environment of the child: the database directory and the workload seed. The child does
/// nothing without them, so `cargo test -- --ignored` runs it harmlessly.
const CHILD_DIR: &str = "ROWDEX_CRASH_CHILD_DIR";
const CHILD_SEED: &str = "ROWDEX_CRASH_CHILD_SEED";

/// A child that is never killed stops after this many statements (and the round then checks
/// a clean shutdown instead). Kills are planned well before it.
const CHILD_STATEMENTS: usize = 400;

const SCHEMA: &str = "
    CREATE TABLE ev (tenant INT, ts BIGINT, seq INT, status TEXT NOT NULL, score INT, note TEXT,
                     PRIMARY KEY (tenant, ts DESC, seq));
    CREATE INDEX ev_status ON ev (status, score);
    CREATE INDEX ev_score ON ev (score DESC) INCLUDE (note);
    CREATE INDEX ev_open ON ev (tenant, score) WHERE status = 'open' AND score > 0;
    CREATE TABLE hits (hk TEXT GENERATED ALWAYS AS (reverse(page)) STORED, page TEXT NOT NULL,
                       n INT NOT NULL, tag TEXT, PRIMARY KEY (hk)) WITH (SALT_BUCKETS = 4);
    CREATE INDEX hits_tag ON hits (tag);
    CREATE INDEX hits_up ON hits (upper(tag), (n % 7));
    CREATE TABLE owner (id INT PRIMARY KEY, name TEXT);
    CREATE TABLE pet (id INT PRIMARY KEY, owner_id INT REFERENCES owner ON DELETE CASCADE,
                      kind TEXT);";

/// Every index of [`SCHEMA`], as SHOW INDEXES lists them (table, index).
const INDEXES: [(&str, &str); 6] = [
    // Partial: the rows that are open with a positive score (writes move rows in and out).
    ("ev", "ev_open"),
    ("ev", "ev_score"),
    ("ev", "ev_status"),
    ("hits", "hits_tag"),
    // On expressions (hidden generated columns), in a table keyed by a generated column.
    ("hits", "hits_up"),
    // Made with the foreign key, to find an owner's pets.
    ("pet", "pet_owner_id_idx"),
];

/// Whole-table reads in key order, compared between the reopened database and the model.
const DUMPS: [&str; 4] = [
    "SELECT * FROM ev ORDER BY tenant, ts DESC, seq",
    "SELECT * FROM hits ORDER BY page",
    "SELECT * FROM owner ORDER BY id",
    "SELECT * FROM pet ORDER BY id",
];

const STATUSES: [&str; 4] = ["new", "open", "hold", "done"];
const TAGS: [&str; 5] = ["red", "green", "blue", "gray", "pink"];

/// The seeded statement stream. It never looks at the data, so the parent regenerates exactly
/// what the child ran from the seed alone. Statements may fail (a key moved onto an existing
/// one, a plain INSERT of an existing key): such failures are deterministic and the model must
/// fail the same way.
struct Workload {
    rng: Rng,
}

impl Workload {
    fn new(seed: u64) -> Workload {
        // xorshift is stuck at zero.
        Workload { rng: Rng(seed | 1) }
    }

    fn ev_row(&mut self) -> String {
        let r = &mut self.rng;
        let (tenant, ts, seq) = (r.int(1, 5), r.int(1, 41), r.int(0, 3));
        let status = r.pick(&STATUSES);
        let score = match r.next(8) {
            0 => "NULL".to_string(),
            _ => r.int(-50, 50).to_string(),
        };
        let note = match r.next(3) {
            0 => "NULL".to_string(),
            _ => format!("'n{}'", r.next(1000)),
        };
        format!("({tenant}, {ts}, {seq}, '{status}', {score}, {note})")
    }

    fn ev_rows(&mut self, n: usize) -> String {
        (0..n).map(|_| self.ev_row()).collect::<Vec<_>>().join(", ")
    }

    fn page(&mut self) -> String {
        format!("'p{:02}'", self.rng.next(60))
    }

    fn pages(&mut self, n: usize) -> String {
        (0..n).map(|_| self.page()).collect::<Vec<_>>().join(", ")
    }

    fn hits_rows(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| {
                let page = self.page();
                let count = self.rng.int(0, 100);
                let tag = self.rng.pick(&TAGS);
                format!("({page}, {count}, '{tag}')")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `n` pets with ids from 1 to 600, each of an owner from 1 to 24 (owners go up to 20,
    /// so some statements fail whole on a missing owner, as the model does too).
    fn pet_rows(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| {
                let (id, owner) = (self.rng.int(1, 600), self.rng.int(1, 24));
                let kind = self.rng.pick(&TAGS);
                format!("({id}, {owner}, '{kind}')")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn next_statement(&mut self) -> String {
        let kind = self.rng.next(26);
        let small = 1 + self.rng.next(6) as usize;
        let tenant = self.rng.int(1, 5);
        let ts = self.rng.int(1, 41);
        let width = self.rng.int(0, 8);
        let status = self.rng.pick(&STATUSES);
        let other_status = self.rng.pick(&STATUSES);
        let value = self.rng.int(-50, 50);
        let tag = self.rng.pick(&TAGS);
        let other_tag = self.rng.pick(&TAGS);
        match kind {
            0..=2 => format!("INSERT OR REPLACE INTO ev VALUES {}", self.ev_rows(small)),
            3 => format!(
                "INSERT INTO ev VALUES {} ON CONFLICT DO NOTHING",
                self.ev_rows(small)
            ),
            4 => {
                let rows: Vec<String> = (0..small)
                    .map(|_| {
                        let (t, s, q) =
                            (self.rng.int(1, 5), self.rng.int(1, 41), self.rng.int(0, 3));
                        format!("({t}, {s}, {q}, '{status}', {value})")
                    })
                    .collect();
                format!(
                    "UPSERT INTO ev (tenant, ts, seq, status, score) VALUES {}",
                    rows.join(", ")
                )
            }
            // Indexed columns change on every row of a key range.
            5 | 6 => format!(
                "UPDATE ev SET status = '{status}', score = score + {value} \
                 WHERE tenant = {tenant} AND ts BETWEEN {ts} AND {}",
                ts + width
            ),
            7 => format!(
                "UPDATE ev SET note = 'u{value}', score = {value} \
                 WHERE tenant = {tenant} AND ts = {ts} AND seq = {}",
                self.rng.int(0, 3)
            ),
            // Moves rows to new keys: always succeeds (every key it lands on is vacated by it).
            8 => format!(
                "UPDATE ev SET ts = ts + {} WHERE tenant = {tenant} AND seq = {} AND ts >= {ts}",
                1 + width,
                self.rng.int(0, 3)
            ),
            // Moves rows into another tenant: fails whole when one lands on an existing key.
            9 => format!(
                "UPDATE ev SET tenant = {} WHERE tenant = {tenant} AND ts = {ts}",
                self.rng.int(1, 5)
            ),
            10 => format!(
                "DELETE FROM ev WHERE tenant = {tenant} AND ts BETWEEN {ts} AND {}",
                ts + width
            ),
            // Rows found through the index, and their index entries rewritten.
            11 => format!(
                "DELETE FROM ev WHERE status = '{status}' AND score > {}",
                value.abs()
            ),
            12 => format!(
                "UPDATE ev SET status = '{other_status}' WHERE status = '{status}' AND score < {value}"
            ),
            13 | 14 => format!(
                "UPSERT INTO hits (page, n, tag) VALUES {}",
                self.hits_rows(small)
            ),
            15 => format!(
                "INSERT OR REPLACE INTO hits (page, n, tag) VALUES {}",
                self.hits_rows(small)
            ),
            // Fails whole when any of the pages exists.
            16 => format!(
                "INSERT INTO hits (page, n, tag) VALUES {}",
                self.hits_rows(small.min(2))
            ),
            17 => format!(
                "UPDATE hits SET n = n + 1, tag = '{tag}' WHERE page IN ({})",
                self.pages(small)
            ),
            18 => format!("DELETE FROM hits WHERE page IN ({})", self.pages(small)),
            19 => match self.rng.next(2) {
                0 => format!("DELETE FROM hits WHERE tag = '{tag}'"),
                _ => format!("UPDATE hits SET tag = '{other_tag}' WHERE tag = '{tag}'"),
            },
            // Owners (ids 1 to 20) and their pets: deleting an owner cascades to its pets
            // (tens of rows and their index entries, for a kill to land in).
            21 => {
                let owners: Vec<String> = (0..small)
                    .map(|_| format!("({}, '{tag}')", self.rng.int(1, 20)))
                    .collect();
                format!("UPSERT INTO owner VALUES {}", owners.join(", "))
            }
            22 => format!("INSERT OR REPLACE INTO pet VALUES {}", self.pet_rows(small)),
            23 => {
                let n = 30 + self.rng.next(120) as usize;
                format!("INSERT OR REPLACE INTO pet VALUES {}", self.pet_rows(n))
            }
            24 => format!(
                "DELETE FROM owner WHERE id BETWEEN {tenant} AND {}",
                tenant + width / 2
            ),
            // Refused while the owner has pets (ON UPDATE NO ACTION).
            25 => format!(
                "UPDATE owner SET id = id + 20 WHERE id = {}",
                self.rng.int(1, 20)
            ),
            // A large batch, so a kill has a long write to land in.
            _ => {
                let n = 50 + self.rng.next(150) as usize;
                format!("INSERT OR REPLACE INTO ev VALUES {}", self.ev_rows(n))
            }
        }
    }
}

/// The child process: runs the workload of `ROWDEX_CRASH_CHILD_SEED` on the database in
/// `ROWDEX_CRASH_CHILD_DIR` until killed, reporting each statement on stdout.
#[tokio::test]
#[ignore = "child process of crash::acknowledged_writes_survive_sigkill, which runs it"]
async fn child_writer() -> TestResult {
    let (Ok(dir), Ok(seed)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_SEED)) else {
        return Ok(());
    };
    let mut workload = Workload::new(seed.parse()?);
    let db = Database::open(&dir).await?;
    let s = db.session();
    // Straight to the file descriptor (not the harness's capture), flushed at every line: a
    // line the parent reads was written before whatever the child does next.
    let mut out = std::io::stdout();
    // On a line of its own: the harness has printed "test crash::child_writer ... " unended.
    writeln!(out, "\nopen")?;
    out.flush()?;
    for n in 0..CHILD_STATEMENTS {
        let sql = workload.next_statement();
        writeln!(out, "start {n}")?;
        out.flush()?;
        match s.execute(&sql).await {
            Ok(outputs) => writeln!(out, "ack {n} {}", affected(&outputs))?,
            Err(error) => writeln!(out, "err {n} {}", error.to_string().replace('\n', " "))?,
        }
        out.flush()?;
    }
    writeln!(out, "done")?;
    out.flush()?;
    Ok(())
}

fn affected(outputs: &[Output]) -> u64 {
    outputs
        .iter()
        .map(|o| match o {
            Output::Affected { rows } => *rows,
            _ => 0,
        })
        .sum()
}

/// When the parent kills the child.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    /// As soon as the child says it is starting statement n: usually mid-statement.
    Start(usize),
    /// That many microseconds after the child says it is starting statement n.
    AfterStart(usize, u64),
    /// That many milliseconds after spawning, whatever the child is doing (opening and
    /// recovering the database included).
    Elapsed(u64),
}

impl KillAt {
    fn random(rng: &mut Rng) -> KillAt {
        match rng.next(3) {
            0 => KillAt::Start(rng.next(40) as usize),
            1 => KillAt::AfterStart(rng.next(40) as usize, rng.next(30_000)),
            _ => KillAt::Elapsed(rng.next(400)),
        }
    }
}

/// What the child reported before it died.
#[derive(Debug, Default)]
struct ChildRun {
    opened: bool,
    /// Outcome of statements 0, 1, ... in order: Ok(rows affected) or Err(message).
    finished: Vec<Result<u64, String>>,
    /// The statement after the finished ones, if the child had started it.
    in_flight: bool,
    /// The child finished its whole workload before the kill.
    done: bool,
}

/// Runs one child on `dir` with `seed` and kills it at `kill`; returns what it reported.
fn run_child(dir: &Path, seed: u64, kill: KillAt) -> Result<ChildRun, Box<dyn std::error::Error>> {
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "crash::child_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_SEED, seed.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let spawned = Instant::now();
    let stdout = child.stdout.take().ok_or("child has no stdout")?;
    // Lines arrive on a channel so the parent can wait for a line and a deadline at once.
    let (send, lines) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });

    let mut seen = Vec::new();
    let deadline = match kill {
        KillAt::Elapsed(ms) => Some(spawned + Duration::from_millis(ms)),
        _ => None,
    };
    let mut exited_alone = false;
    loop {
        let line = match deadline {
            Some(deadline) => {
                match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(line) => line,
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        exited_alone = true;
                        break;
                    }
                }
            }
            None => match lines.recv() {
                Ok(line) => line,
                Err(_) => {
                    exited_alone = true;
                    break;
                }
            },
        };
        let started = line
            .strip_prefix("start ")
            .and_then(|n| n.parse::<usize>().ok());
        seen.push(line);
        match (kill, started) {
            (KillAt::Start(at), Some(n)) if n >= at => break,
            (KillAt::AfterStart(at, micros), Some(n)) if n >= at => {
                std::thread::sleep(Duration::from_micros(micros));
                break;
            }
            _ => {}
        }
    }
    if !exited_alone {
        // SIGKILL on Unix: no destructor, no flush, no journal sync runs in the child.
        child.kill()?;
    }
    let status = child.wait()?;
    // Whatever the child wrote before dying is still in the pipe: read it to the end, so an
    // acknowledgement printed just before the kill counts as one.
    seen.extend(lines.iter());
    reader.join().map_err(|_| "reader thread panicked")?;

    let mut run = ChildRun::default();
    for line in &seen {
        let mut words = line.splitn(3, ' ');
        let (word, n) = (
            words.next(),
            words.next().and_then(|n| n.parse::<usize>().ok()),
        );
        match (word, n) {
            (Some("open"), _) => run.opened = true,
            (Some("done"), _) => run.done = true,
            (Some("start"), Some(n)) => {
                assert_eq!(n, run.finished.len(), "child output out of order: {seen:?}");
                run.in_flight = true;
            }
            (Some("ack" | "err"), Some(n)) => {
                assert!(
                    run.in_flight && n == run.finished.len(),
                    "child output out of order: {seen:?}"
                );
                let rest = words.next().unwrap_or_default().to_string();
                run.finished.push(match word {
                    Some("ack") => Ok(rest.parse()?),
                    _ => Err(rest),
                });
                run.in_flight = false;
            }
            // The test harness's own lines ("running 1 test", ...).
            _ => {}
        }
    }
    if exited_alone && !(run.done && status.success()) {
        return Err(format!("the child died by itself ({status}); its output: {seen:?}").into());
    }
    Ok(run)
}

/// Sums of what happened over the rounds, printed at the end.
#[derive(Debug, Default)]
struct Tally {
    rounds: usize,
    acked: usize,
    failed: usize,
    in_flight_landed: usize,
    in_flight_lost: usize,
    killed_before_open: usize,
    finished_alone: usize,
    /// Kills that landed while a delete cascading to pets was in flight.
    cascades_in_flight: usize,
}

/// How a statement that deletes owners (and cascades to their pets) begins.
const CASCADING_DELETE: &str = "DELETE FROM owner";

/// The first statement of the workload of `seed` that deletes owners, among the first 120
/// (one in 26 does).
fn first_cascade(seed: u64) -> Option<usize> {
    let mut workload = Workload::new(seed);
    (0..120).find(|_| workload.next_statement().starts_with(CASCADING_DELETE))
}

#[test]
fn acknowledged_writes_survive_sigkill() -> TestResult {
    // `Database::open` passes `Durability::default()` to `FjallStore::open`; this test relies on
    // that being `SyncWal` (journal handed to the OS before the statement returns).
    assert_eq!(
        rowdex_store::Durability::default(),
        rowdex_store::Durability::SyncWal
    );
    let rounds: usize = match std::env::var("ROWDEX_CRASH_ROUNDS") {
        Ok(text) => text.parse()?,
        Err(_) => 12,
    };
    let seed: u64 = match std::env::var("ROWDEX_CRASH_SEED") {
        Ok(text) => text.parse()?,
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos() as u64,
    };
    println!("crash: {rounds} rounds, ROWDEX_CRASH_SEED={seed}");
    let began = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = tempfile::tempdir()?;
    let mut rng = Rng(seed | 1);
    let mut tally = Tally::default();
    runtime.block_on(async {
        // The schema is created before any kill; the model gets the same.
        Database::open(dir.path())
            .await?
            .session()
            .execute(SCHEMA)
            .await?;
        let model = Database::open_memory().await?.session();
        model.execute(SCHEMA).await?;

        for round in 0..rounds {
            let child_seed = rng.next(u64::MAX);
            // Every third round kills the child as it starts a delete that cascades from
            // owners to their pets.
            let kill = match first_cascade(child_seed) {
                Some(n) if round % 3 == 0 => KillAt::Start(n),
                _ => KillAt::random(&mut rng),
            };
            let round_began = Instant::now();
            let run = run_child(dir.path(), child_seed, kill)?;
            let child_time = round_began.elapsed();
            let context = format!("round {round} (child seed {child_seed}, kill {kill:?})");
            tally.rounds += 1;
            tally.killed_before_open += usize::from(!run.opened);
            tally.finished_alone += usize::from(run.done);

            // The model runs every statement the child finished, with the same outcome.
            let mut workload = Workload::new(child_seed);
            for (n, outcome) in run.finished.iter().enumerate() {
                let sql = workload.next_statement();
                let expected = model.execute(&sql).await.map(|o| affected(&o));
                match (outcome, &expected) {
                    (Ok(rows), Ok(model_rows)) if rows == model_rows => tally.acked += 1,
                    (Err(_), Err(_)) => tally.failed += 1,
                    _ => panic!(
                        "{context}: statement {n} gave {outcome:?} in the child and {expected:?} \
                         in the model: {sql}"
                    ),
                }
            }
            let in_flight = run.in_flight.then(|| workload.next_statement());
            tally.cascades_in_flight += usize::from(
                in_flight
                    .as_deref()
                    .is_some_and(|sql| sql.starts_with(CASCADING_DELETE)),
            );

            let reopen_began = Instant::now();
            let db = Database::open(dir.path()).await?;
            let reopen_time = reopen_began.elapsed();
            let s = db.session();
            let recovered = dump(&s).await?;
            let acked_state = dump(&model).await?;
            let landed = recovered != acked_state;
            if landed {
                // Only the statement in flight may explain the difference, and only whole.
                let explained = match &in_flight {
                    Some(sql) if model.execute(sql).await.is_ok() => {
                        dump(&model).await? == recovered
                    }
                    _ => false,
                };
                assert!(
                    explained,
                    "{context}: the reopened database is neither the acknowledged state nor \
                     that plus the statement in flight ({in_flight:?}):\n{}",
                    difference(&acked_state, &recovered)
                );
                tally.in_flight_landed += 1;
            } else if in_flight.is_some() {
                // (Or it changed nothing, as an UPDATE matching no row does.)
                tally.in_flight_lost += 1;
            }
            check_indexes(&s, &context).await?;
            println!(
                "round {round}: kill {kill:?}: {} statements finished, in flight: {}; child {} ms, \
                 reopen {} ms, round {} ms",
                run.finished.len(),
                match (&in_flight, landed) {
                    (None, _) => "none",
                    (Some(_), true) => "landed",
                    (Some(_), false) => "not seen",
                },
                child_time.as_millis(),
                reopen_time.as_millis(),
                round_began.elapsed().as_millis()
            );
            // Closed here, before the next child opens the directory (fjall locks it).
            drop(s);
            drop(db);
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    println!(
        "crash: {tally:?}, {:.1} s; no acknowledged statement lost, none half applied",
        began.elapsed().as_secs_f64()
    );
    assert_eq!(tally.rounds, rounds);
    // A third of the rounds aim at a cascading delete; the kill must have hit one at least
    // once, or the test proved nothing about cascades.
    if rounds >= 6 {
        assert!(
            tally.cascades_in_flight > 0,
            "no kill landed in a cascading delete: {tally:?}"
        );
    }
    Ok(())
}

/// Every table's rows, in key order.
async fn dump(s: &Session) -> Result<Vec<Vec<Vec<String>>>, rowdex::Error> {
    let mut tables = Vec::new();
    for sql in DUMPS {
        tables.push(rows(s, sql).await?);
    }
    Ok(tables)
}

/// The rows only one side has, table by table, for a failure message.
fn difference(expected: &[Vec<Vec<String>>], found: &[Vec<Vec<String>>]) -> String {
    let mut out = String::new();
    for ((sql, want), got) in DUMPS.iter().zip(expected).zip(found) {
        let missing: Vec<_> = want.iter().filter(|r| !got.contains(r)).collect();
        let extra: Vec<_> = got.iter().filter(|r| !want.contains(r)).collect();
        out.push_str(&format!(
            "{sql}: {} rows expected, {} found; missing {missing:?}; unexpected {extra:?}\n",
            want.len(),
            got.len()
        ));
    }
    out
}

/// CHECK INDEX of every index reports no missing or dangling entry and one entry per row.
async fn check_indexes(s: &Session, context: &str) -> TestResult {
    let listed: Vec<(String, String)> = rows(s, "SHOW INDEXES")
        .await?
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    let mut expected: Vec<(String, String)> = INDEXES
        .iter()
        .map(|(t, i)| (t.to_string(), i.to_string()))
        .collect();
    let mut sorted = listed.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected, "{context}: SHOW INDEXES");
    for (_, index) in listed {
        let report = rows(s, &format!("CHECK INDEX {index}")).await?;
        assert_eq!(
            report.len(),
            1,
            "{context}: CHECK INDEX {index}: {report:?}"
        );
        let r = &report[0];
        // index_name, rows, entries, missing, dangling, repaired, status
        assert!(
            r[3] == "0" && r[4] == "0" && r[6] == "ok" && r[1] == r[2],
            "{context}: CHECK INDEX {index}: {r:?}"
        );
    }
    let orphans = rows(
        s,
        "SELECT count(*) FROM pet WHERE NOT EXISTS (SELECT 1 FROM owner WHERE owner.id = pet.owner_id)",
    )
    .await?;
    assert_eq!(
        orphans,
        vec![vec!["0".to_string()]],
        "{context}: pets without their owner"
    );
    Ok(())
}
