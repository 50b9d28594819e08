//! Short-lived processes at the sizes users have (issue 26): the `rowdex` binary against the
//! `sqlite3` shell on the same table, every run a new process, open and exit included.
//!
//! Needs the databases the scale bench keeps: run
//! `cargo bench -p rowdex --bench scale -- --dir D [--rows N]` once, then
//! `cargo bench -p rowdex-cli --bench scripts -- --dir D/rows-N [--statements 10000]`.
//! Table `t (id, a, b, s, c, d, v, pad)` with five indexes, on both sides.
//!
//! Cases, each printed as rowdex's time, sqlite3's and their ratio:
//! - `open`: `-c "SELECT 1"` after a clean close (the median of five);
//! - `open after SIGKILL`: the same, once, right after a process that ran `--statements`
//!   single-row INSERTs was killed during the full scan that follows them (the journal it left
//!   is printed; sqlite3 opens its WAL after the same kill);
//! - `lookups`: a script of `--statements` primary-key lookups at random ids (`-f` against
//!   `sqlite3 db < script`); the answers must be the same;
//! - `inserts`: a script of as many single-row INSERTs past the last id; the row counts must
//!   agree. SQLite runs in WAL mode with `synchronous = NORMAL`, rowdex with its default
//!   `SYNC_WAL` durability: both survive a killed process, neither an OS crash.
//!
//! The inserted rows are deleted again on both sides, so the databases stay as the scale bench
//! left them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The first id the insert scripts write (the scale tables hold ids below 10^9).
const INSERT_BASE: u64 = 1_000_000_000;

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let Some(dir) = value_of("--dir").map(PathBuf::from) else {
        return Err(
            "--dir D/rows-N is required: the directory the scale bench loaded \
                    (cargo bench -p rowdex --bench scale -- --dir D)"
                .into(),
        );
    };
    let statements: u64 = value_of("--statements")
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(10_000);
    let bench = Bench::new(&dir)?;
    let rows = bench.rowdex_rows("SELECT count(*) FROM t")?;
    let rows: u64 = rows.first().map(|r| r.parse()).transpose()?.unwrap_or(0);
    println!("table t: {rows} rows, {statements} statements per script");

    let (ours, theirs) = bench.open_after_clean_close()?;
    report("open after a clean close", ours, theirs);
    // Reads first, on the table as the load left it: the writing cases leave compaction
    // work behind them.
    let (ours, theirs) = bench.lookups(rows, statements)?;
    report("lookups", ours, theirs);
    let (ours, theirs) = bench.inserts(statements)?;
    report("inserts", ours, theirs);
    let (ours, theirs, journal) = bench.open_after_kill(statements)?;
    report(
        &format!(
            "open after SIGKILL ({:.1} MB journal)",
            journal as f64 / 1e6
        ),
        ours,
        theirs,
    );
    Ok(())
}

fn report(case: &str, ours: Duration, theirs: Duration) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{case:<44} rowdex {:>9.1} ms   sqlite3 {:>9.1} ms   ratio {:>5.2}x",
        ms(ours),
        ms(theirs),
        ours.as_secs_f64() / theirs.as_secs_f64().max(1e-9)
    );
}

struct Bench {
    rowdex_dir: PathBuf,
    sqlite_file: PathBuf,
    scripts: tempfile::TempDir,
}

impl Bench {
    fn new(dir: &Path) -> BenchResult<Bench> {
        let rowdex_dir = dir.join("rowdex");
        let sqlite_file = dir.join("t.sqlite");
        if !dir.join("loaded").exists() || !sqlite_file.exists() {
            return Err(format!(
                "{} holds no loaded scale databases; run the scale bench with --dir first",
                dir.display()
            )
            .into());
        }
        Ok(Bench {
            rowdex_dir,
            sqlite_file,
            scripts: tempfile::tempdir()?,
        })
    }

    fn rowdex(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rowdex"));
        command.arg(&self.rowdex_dir).arg("--format").arg("csv");
        command
    }

    fn sqlite(&self) -> Command {
        let mut command = Command::new("sqlite3");
        command.arg("-csv").arg(&self.sqlite_file);
        command
    }

    /// The rows of a one-statement query through the rowdex binary (header dropped).
    fn rowdex_rows(&self, sql: &str) -> BenchResult<Vec<String>> {
        let out = run(self.rowdex().arg("-c").arg(sql))?;
        Ok(out.lines().skip(1).map(str::to_string).collect())
    }

    fn open_after_clean_close(&self) -> BenchResult<(Duration, Duration)> {
        // The first run may still replay what an older build left; it closes cleanly.
        run(self.rowdex().arg("-c").arg("SELECT 1"))?;
        let ours = median(5, || timed(self.rowdex().arg("-c").arg("SELECT 1")))?;
        let theirs = median(5, || timed(self.sqlite().arg("SELECT 1")))?;
        Ok((ours, theirs))
    }

    /// Kills a process that has written an insert script and is still running (a full scan
    /// after it), on each side, and times the open that recovers. Returns the journal bytes
    /// the killed rowdex left.
    fn open_after_kill(&self, statements: u64) -> BenchResult<(Duration, Duration, u64)> {
        let inserts = self.write_script("kill.sql", statements, |i| insert_sql(INSERT_BASE + i))?;
        let mut text = std::fs::read_to_string(&inserts)?;
        text.push_str("SELECT 'inserted';\nSELECT count(*) FROM t WHERE pad LIKE '%never%';\n");
        let script = self.scripts.path().join("kill-then-scan.sql");
        std::fs::write(&script, &text)?;

        run(self.rowdex().arg("-c").arg("SELECT 1"))?;
        let mut child = self
            .rowdex()
            .arg("-f")
            .arg(&script)
            .stdout(Stdio::piped())
            .spawn()?;
        if let Some(stdout) = child.stdout.take() {
            for line in BufReader::new(stdout).lines() {
                if line?.contains("inserted") {
                    break;
                }
            }
        }
        child.kill()?;
        child.wait()?;
        let journal = journal_bytes(&self.rowdex_dir)?;
        let ours = timed(self.rowdex().arg("-c").arg("SELECT 1"))?;
        self.delete_inserted()?;

        // sqlite3 buffers its output in a pipe: it is killed once its inserts have had the
        // time they take alone, and a fifth more.
        let sqlite_inserts = self.sqlite_inserts("kill-sqlite.sql", &inserts)?;
        let alone = timed_stdin(&mut self.sqlite(), &sqlite_inserts)?;
        self.delete_inserted()?;
        let sqlite_script = self.sqlite_inserts("kill-then-scan-sqlite.sql", &script)?;
        let mut child = self
            .sqlite()
            .stdin(std::fs::File::open(&sqlite_script)?)
            .stdout(Stdio::null())
            .spawn()?;
        std::thread::sleep(alone + alone / 5);
        child.kill()?;
        child.wait()?;
        let theirs = timed(self.sqlite().arg("SELECT 1"))?;
        self.delete_inserted()?;
        Ok((ours, theirs, journal))
    }

    fn lookups(&self, rows: u64, statements: u64) -> BenchResult<(Duration, Duration)> {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let script = self.write_script("lookups.sql", statements, |_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            format!("SELECT id, pad FROM t WHERE id = {};", seed % rows.max(1))
        })?;
        // Warm both: the figures are for a page cache that holds the files, as in use.
        run(self.rowdex().arg("-f").arg(&script))?;
        run_stdin(&mut self.sqlite(), &script)?;
        let started = Instant::now();
        let ours = run(self.rowdex().arg("-f").arg(&script))?;
        let ours_time = started.elapsed();
        let started = Instant::now();
        let theirs = run_stdin(&mut self.sqlite(), &script)?;
        let theirs_time = started.elapsed();
        let ours: Vec<&str> = ours.lines().filter(|l| *l != "id,pad").collect();
        let theirs: Vec<&str> = theirs.lines().collect();
        if ours != theirs {
            return Err("the lookup scripts' answers differ".into());
        }
        Ok((ours_time, theirs_time))
    }

    fn inserts(&self, statements: u64) -> BenchResult<(Duration, Duration)> {
        let script =
            self.write_script("inserts.sql", statements, |i| insert_sql(INSERT_BASE + i))?;
        let sqlite_script = self.sqlite_inserts("inserts-sqlite.sql", &script)?;
        let ours = timed(self.rowdex().arg("-f").arg(&script))?;
        let theirs = timed_stdin(&mut self.sqlite(), &sqlite_script)?;
        let count = format!("SELECT count(*) FROM t WHERE id >= {INSERT_BASE}");
        let ours_count = self.rowdex_rows(&count)?;
        let theirs_count: Vec<String> = run(self.sqlite().arg(&count))?
            .lines()
            .map(str::to_string)
            .collect();
        if ours_count != theirs_count || ours_count != [statements.to_string()] {
            return Err(format!("inserted rows differ: {ours_count:?} {theirs_count:?}").into());
        }
        self.delete_inserted()?;
        Ok((ours, theirs))
    }

    fn delete_inserted(&self) -> BenchResult<()> {
        let delete = format!("DELETE FROM t WHERE id >= {INSERT_BASE}");
        run(self.rowdex().arg("-c").arg(&delete))?;
        run(self.sqlite().arg(&delete))?;
        Ok(())
    }

    fn write_script(
        &self,
        name: &str,
        statements: u64,
        mut line: impl FnMut(u64) -> String,
    ) -> BenchResult<PathBuf> {
        let path = self.scripts.path().join(name);
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for i in 0..statements {
            writeln!(file, "{}", line(i))?;
        }
        file.flush()?;
        Ok(path)
    }

    /// `script` with SQLite's durability set like rowdex's default first.
    fn sqlite_inserts(&self, name: &str, script: &Path) -> BenchResult<PathBuf> {
        let path = self.scripts.path().join(name);
        let mut text = String::from("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;\n");
        text.push_str(&std::fs::read_to_string(script)?);
        std::fs::write(&path, text)?;
        Ok(path)
    }
}

fn insert_sql(id: u64) -> String {
    format!(
        "INSERT INTO t VALUES ({id}, {}, {id}, 1, 2, 3, {}, 'pad-{id:012}');",
        id % 200,
        id.wrapping_mul(7)
    )
}

/// Bytes the file system holds for `dir`'s journals (a new one is a 64 MiB hole).
fn journal_bytes(dir: &Path) -> BenchResult<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "jnl") {
            total += std::fs::metadata(&path)?.blocks() * 512;
        }
    }
    Ok(total)
}

fn run(command: &mut Command) -> BenchResult<String> {
    let output = command.output()?;
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

fn run_stdin(command: &mut Command, script: &Path) -> BenchResult<String> {
    let mut child = command
        .stdin(std::fs::File::open(script)?)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut out = String::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            out.push_str(&line?);
            out.push('\n');
        }
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("{command:?} failed").into());
    }
    Ok(out)
}

fn timed(command: &mut Command) -> BenchResult<Duration> {
    let started = Instant::now();
    run(command)?;
    Ok(started.elapsed())
}

fn timed_stdin(command: &mut Command, script: &Path) -> BenchResult<Duration> {
    let started = Instant::now();
    run_stdin(command, script)?;
    Ok(started.elapsed())
}

fn median(n: usize, mut sample: impl FnMut() -> BenchResult<Duration>) -> BenchResult<Duration> {
    let mut times = (0..n).map(|_| sample()).collect::<BenchResult<Vec<_>>>()?;
    times.sort();
    Ok(times[n / 2])
}
