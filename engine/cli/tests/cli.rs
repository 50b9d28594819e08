//! The `rowdex` binary as a user runs it: scripts through `-f` and stdin, their output and exit
//! status, and what a process leaves for the next one to open.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn rowdex(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rowdex"))
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rowdex");
    let mut input = child.stdin.take().expect("stdin is piped");
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .expect("write stdin");
    drop(input);
    child.wait_with_output().expect("run rowdex")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Bytes the file system holds for the directory's journals: what the next open replays.
fn journal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("read the database directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jnl"))
        .map(|path| std::fs::metadata(&path).expect("stat a journal").blocks() * 512)
        .sum()
}

#[test]
fn a_script_runs_statement_by_statement_and_stops_at_its_first_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);\n\
         INSERT INTO t VALUES (1, 'a'), (2, NULL);\n\
         SELECT v FROM t WHERE id = 1;\n\
         SELECT v FROM t WHERE id = 2; SELECT count(*) FROM t;\n\
         SELEC 3;\n\
         INSERT INTO t VALUES (3, 'never');\n",
    )
    .expect("write the script");
    let db = dir.path().join("db");
    let script_arg = script.display().to_string();
    let out = rowdex(&db, &["-f", &script_arg], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "v\na\nv\n\ncount(*)\n2\n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Line: 5"), "{stderr}");
    // The statements before the error stay applied, the ones after it never ran.
    let out = rowdex(&db, &[], Some("SELECT id FROM t ORDER BY id;"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "id\n1\n2\n");
}

/// A process that journaled more than a megabyte leaves, after a clean exit, a journal the
/// next open does not have to replay; nothing is lost.
#[test]
fn a_clean_exit_leaves_a_short_journal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let pad = "x".repeat(2000);
    let mut script = String::from("CREATE TABLE t (id INT PRIMARY KEY, pad TEXT);\n");
    for id in 0..1500 {
        script.push_str(&format!("INSERT INTO t VALUES ({id}, '{pad}');\n"));
    }
    let out = rowdex(&db, &[], Some(&script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        journal_bytes(&db) <= 1024 * 1024,
        "a clean exit left {} journal bytes",
        journal_bytes(&db)
    );
    let out = rowdex(
        &db,
        &["-c", "SELECT count(*), sum(length(pad)) FROM t"],
        None,
    );
    assert_eq!(
        text(&out.stdout),
        "count(*),sum(length(t.pad))\n1500,3000000\n"
    );
}

/// psql connected to the server on `port`, unaligned and tuples only.
fn psql_command(port: &str) -> Command {
    let mut psql = Command::new("psql");
    psql.args([
        "-X",
        "-A",
        "-t",
        "-h",
        "127.0.0.1",
        "-U",
        "rowdex",
        "-d",
        "rowdex",
        "-p",
        port,
    ]);
    psql
}

/// `psql -c sql` against a server on `port`; panics unless psql succeeds.
fn psql(port: &str, sql: &str) -> String {
    let out = psql_command(port)
        .args(["-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .unwrap_or_else(|e| panic!("psql (PostgreSQL 15's client) must be installed: {e}"));
    assert!(out.status.success(), "psql: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn sigterm_stops_the_server_keeping_what_was_committed_and_nothing_of_an_open_transaction() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let mut server = ServeProcess::start(&[db.to_str().expect("a UTF-8 path")]);
    let port = server.port.clone();
    psql(
        &port,
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v)",
    );
    psql(&port, "INSERT INTO t VALUES (1, 'a'), (2, 'b')");

    // A client inside a transaction when the server is told to stop.
    let mut open = psql_command(&port)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("psql");
    let mut input = open.stdin.take().expect("stdin is piped");
    input
        .write_all(b"BEGIN;\nINSERT INTO t VALUES (3, 'c');\nSELECT 'inserted';\n")
        .expect("psql input");
    input.flush().expect("flush");
    let mut output = BufReader::new(open.stdout.take().expect("stdout is piped"));
    let mut line = String::new();
    while !line.contains("inserted") {
        line.clear();
        assert!(
            output.read_line(&mut line).expect("psql output") > 0,
            "psql ended early"
        );
    }

    let status = server.signal("-TERM");
    assert!(status.success(), "rowdex serve exited with {status}");
    drop(input);
    let _ = open.wait();

    // The next process finds the committed rows and their index entries, not row 3.
    let out = rowdex(
        &db,
        &[
            "-c",
            "SELECT id FROM t ORDER BY id; SELECT count(*) FROM t WHERE v >= 'a'; CHECK TABLE t",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert_eq!(
        shown,
        "id\n1\n2\ncount(*)\n2\nindex_name,rows,entries,missing,dangling,repaired,status\n\
         t_v,2,2,0,0,0,ok\n"
    );
}

/// CHECK TABLE's rows as psql prints them: `rows` of them (one per secondary index), each
/// ending `|ok`. An empty or short answer fails.
fn assert_checked(checked: &str, rows: usize) {
    let lines: Vec<&str> = checked.lines().collect();
    assert_eq!(lines.len(), rows, "{checked}");
    assert!(lines.iter().all(|line| line.ends_with("|ok")), "{checked}");
}

/// `rowdex serve` on a database (`DIR`, or `--store ADDRESS`) started as a process of its own,
/// on a free loopback port read from the first line it prints.
struct ServeProcess {
    child: std::process::Child,
    port: String,
    /// The server's stderr, kept open: a server writing to a closed pipe would fail.
    _log: std::io::BufReader<std::process::ChildStderr>,
}

impl ServeProcess {
    fn start(database: &[&str]) -> ServeProcess {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(env!("CARGO_BIN_EXE_rowdex"))
            .arg("serve")
            .args(database)
            .args(["--listen", "127.0.0.1:0"])
            .args(["--drain-seconds", "1"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rowdex serve");
        let mut log = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let mut started = String::new();
        log.read_line(&mut started)
            .expect("the server's first line");
        let port = started
            .trim()
            .rsplit(':')
            .next()
            .filter(|port| port.parse::<u16>().is_ok())
            .unwrap_or_else(|| panic!("rowdex serve did not start: {started}"))
            .to_string();
        ServeProcess {
            child,
            port,
            _log: log,
        }
    }

    /// Sends `signal` (`-TERM`, `-KILL`) and waits for the process to end.
    fn signal(&mut self, signal: &str) -> std::process::ExitStatus {
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        self.child.wait().expect("the server exits")
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.signal("-KILL");
        }
    }
}

/// pgbench's transfer script, run against one server for `seconds`, retrying 40001s.
fn pgbench_transfers(port: &str, script: &Path, seconds: u32) -> std::thread::JoinHandle<String> {
    let port = port.to_string();
    let script = script.to_path_buf();
    std::thread::spawn(move || {
        let output = Command::new("pgbench")
            .args(["-n", "-M", "prepared", "-c", "3", "-j", "1"])
            .args(["-T", &seconds.to_string(), "--max-tries", "1000"])
            .args(["-h", "127.0.0.1", "-U", "rowdex", "-p", &port, "-f"])
            .arg(&script)
            .arg("rowdex")
            .output()
            .unwrap_or_else(|e| panic!("pgbench (PostgreSQL 15) must be installed: {e}"));
        let text = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert!(output.status.success(), "pgbench failed:\n{text}");
        text
    })
}

/// A number pgbench printed after `label`.
fn pgbench_figure(output: &str, label: &str) -> u64 {
    output
        .lines()
        .find_map(|line| line.strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("pgbench printed no \"{label}\":\n{output}"))
}

/// Two `rowdex serve` processes on one 3-member etcd cluster: what one creates the other
/// queries; pgbench transfers through both conserve the total; a UNIQUE index holds across
/// them; killing one loses nothing the other acknowledged.
#[test]
fn two_serve_processes_share_one_database_on_a_cluster() {
    use rowdex_store::etcd_store::local_cluster::LocalEtcdCluster;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cluster = runtime
        .block_on(LocalEtcdCluster::start(3))
        .expect("start a 3-member etcd cluster (scripts/install-etcd installs etcd)");
    let store = cluster.address("bank").to_string();
    let mut a = ServeProcess::start(&["--store", &store]);
    let b = ServeProcess::start(&["--store", &store]);

    psql(
        &a.port,
        "CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL);
         CREATE INDEX acct_bal ON acct (bal);
         INSERT INTO acct SELECT x, 1000 FROM generate_series(1, 20) AS g(x);",
    );
    assert_eq!(
        psql(&b.port, "SELECT count(*), sum(bal) FROM acct"),
        "20|20000\n"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("transfer.sql");
    std::fs::write(
        &script,
        "\\set a random(1, 20)\n\\set b random(1, 20)\n\\set x random(1, 10)\n\
         BEGIN;\nUPDATE acct SET bal = bal - :x WHERE id = :a;\n\
         UPDATE acct SET bal = bal + :x WHERE id = :b;\nCOMMIT;\n",
    )
    .expect("script");
    let through_a = pgbench_transfers(&a.port, &script, 4);
    let through_b = pgbench_transfers(&b.port, &script, 4);
    for (name, run) in [("a", through_a), ("b", through_b)] {
        let output = run.join().expect("pgbench thread");
        assert!(
            pgbench_figure(&output, "number of transactions actually processed: ") > 0,
            "{name}: {output}"
        );
        assert_eq!(
            pgbench_figure(&output, "number of failed transactions: "),
            0,
            "{name}: {output}"
        );
    }
    for port in [&a.port, &b.port] {
        assert_eq!(
            psql(port, "SELECT count(*), sum(bal) FROM acct"),
            "20|20000\n"
        );
    }

    // A UNIQUE index created through A refuses B's duplicate.
    psql(
        &a.port,
        "CREATE TABLE u (id INT PRIMARY KEY, email TEXT); CREATE UNIQUE INDEX ue ON u (email);
         INSERT INTO u VALUES (1, 'x@example.com')",
    );
    let duplicate = psql_command(&b.port)
        .args([
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            "INSERT INTO u VALUES (2, 'x@example.com')",
        ])
        .output()
        .expect("psql");
    assert!(!duplicate.status.success());
    assert!(
        text(&duplicate.stderr).contains("UNIQUE"),
        "{}",
        text(&duplicate.stderr)
    );

    // A is killed in the middle of its own writes (a psql client inserting one row a statement,
    // still running at the kill) while B writes: everything B acknowledged is there, A's rows
    // are the ones it acknowledged (and perhaps the one in flight), and every index entry
    // matches its row.
    let inserts = dir.path().join("inserts.sql");
    let statements: String = (1000..6000)
        .map(|id| format!("INSERT INTO acct VALUES ({id}, 0);\n"))
        .collect();
    std::fs::write(&inserts, statements).expect("inserts");
    let mut writer = psql_command(&a.port)
        .arg("-f")
        .arg(&inserts)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("psql");
    for id in 100..130 {
        if id == 115 {
            std::thread::sleep(std::time::Duration::from_millis(300));
            assert!(
                writer.try_wait().expect("psql's status").is_none(),
                "A's writer finished before the kill"
            );
            let _ = a.signal("-KILL");
        }
        psql(&b.port, &format!("INSERT INTO acct VALUES ({id}, 0)"));
    }
    let written = writer.wait_with_output().expect("psql's output");
    assert!(!written.status.success(), "A's writer outlived A");
    let acknowledged = text(&written.stdout)
        .lines()
        .filter(|line| *line == "INSERT 0 1")
        .count();
    assert!(acknowledged > 0, "A acknowledged no insert before the kill");
    let kept: usize = psql(&b.port, "SELECT count(*) FROM acct WHERE id >= 1000")
        .trim()
        .parse()
        .expect("a count");
    assert!(
        kept == acknowledged || kept == acknowledged + 1,
        "A acknowledged {acknowledged} inserts, {kept} are there"
    );
    assert_eq!(
        psql(
            &b.port,
            &format!(
                "SELECT count(*), sum(bal) FROM acct WHERE id < 1000; \
                 SELECT count(*) FROM acct WHERE bal = 0 AND id < 1000; \
                 SELECT count(*) FROM acct WHERE id >= 1000 AND id < {}",
                1000 + kept
            )
        ),
        format!("50|20000\n30\n{kept}\n")
    );
    let checked = psql(&b.port, "CHECK TABLE acct; CHECK TABLE u");
    assert_checked(&checked, 2);

    // A third process holds a row lock and is SIGKILLed: B's writer, which waits for that
    // lock, goes on once the dead process's lease runs out (10 s), and nothing of the dead
    // process's open transaction is there.
    let before: i64 = psql(&b.port, "SELECT bal FROM acct WHERE id = 1")
        .trim()
        .parse()
        .expect("a balance");
    let mut c = ServeProcess::start(&["--store", &store]);
    let mut holder = psql_command(&c.port)
        .args(["-v", "ON_ERROR_STOP=1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql");
    {
        let stdin = holder.stdin.as_mut().expect("psql's stdin is piped");
        stdin
            .write_all(b"BEGIN;\nUPDATE acct SET bal = bal + 5 WHERE id = 1;\n")
            .expect("send the transaction");
        stdin.flush().expect("flush");
    }
    // B sees C's lock once C has taken it.
    let locked_by_c = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let probe = psql_command(&b.port)
            .args(["-c", "SELECT id FROM acct WHERE id = 1 FOR UPDATE NOWAIT"])
            .output()
            .expect("psql");
        !probe.status.success() && text(&probe.stderr).contains("could not obtain lock")
    });
    assert!(locked_by_c, "C's lock never showed in B");
    let b_port = b.port.clone();
    let writer = std::thread::spawn(move || {
        psql(&b_port, "UPDATE acct SET bal = bal + 7 WHERE id = 1");
    });
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(
        !writer.is_finished(),
        "B's writer did not wait for C's lock"
    );
    let killed_at = std::time::Instant::now();
    let _ = c.signal("-KILL");
    writer.join().expect("B's writer");
    assert!(
        killed_at.elapsed() < std::time::Duration::from_secs(25),
        "B waited {:?} after the kill",
        killed_at.elapsed()
    );
    let _ = holder.wait();
    assert_eq!(
        psql(&b.port, "SELECT bal FROM acct WHERE id = 1").trim(),
        (before + 7).to_string()
    );
    drop(b);
    drop(cluster);
}

/// pgbench's TPC-B-like transaction on small tables (one branch: every transaction updates
/// its row), each history row naming the pgbench client that wrote it.
const TPCB: &str = "\\set aid random(1, 1000)\n\\set tid random(1, 10)\n\
\\set delta random(-5000, 5000)\nBEGIN;\n\
UPDATE accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
SELECT abalance FROM accounts WHERE aid = :aid;\n\
UPDATE tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
UPDATE branches SET bbalance = bbalance + :delta WHERE bid = 1;\n\
INSERT INTO history (tid, bid, aid, delta, client) VALUES (:tid, 1, :aid, :delta, :client_id);\n\
END;\n";

/// The transactions pgbench's per-transaction log (`-l`) shows each client finished, by
/// client id.
fn acknowledged_per_client(log_dir: &Path) -> std::collections::BTreeMap<u64, u64> {
    let mut done = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(log_dir).expect("the log directory") {
        let path = entry.expect("a log file").path();
        let log = std::fs::read_to_string(&path).expect("read a pgbench log");
        for line in log.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // client_id transaction_no time script_no epoch us: a failed one has no time.
            if let [client, _, time, ..] = fields.as_slice()
                && time.parse::<u64>().is_ok()
            {
                *done
                    .entry(client.parse().expect("a client id"))
                    .or_insert(0) += 1;
            }
        }
    }
    done
}

/// SIGKILL of `rowdex serve` in the middle of 16 pgbench clients running TPC-B-like
/// transactions under READ COMMITTED (row locks, waits on the one branch): after a restart
/// every transaction a client saw commit is there (each client's history rows number its
/// acknowledged transactions, plus at most the one it had in flight, which may have committed
/// unacknowledged), the balances of accounts, tellers and the branch each equal the history's
/// sum, and CHECK TABLE finds every index in line.
#[test]
fn sigkill_mid_tpcb_keeps_every_acknowledged_transaction() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let db_arg = db.to_str().expect("a UTF-8 path").to_string();
    let mut server = ServeProcess::start(&[&db_arg]);
    psql(
        &server.port,
        "CREATE TABLE branches (bid INT PRIMARY KEY, bbalance BIGINT NOT NULL);
         CREATE TABLE tellers (tid INT PRIMARY KEY, bid INT NOT NULL, tbalance BIGINT NOT NULL);
         CREATE TABLE accounts (aid INT PRIMARY KEY, bid INT NOT NULL, abalance BIGINT NOT NULL);
         CREATE INDEX accounts_balance ON accounts (abalance);
         CREATE TABLE history (tid INT, bid INT, aid INT, delta INT, client INT);
         CREATE INDEX history_client ON history (client);
         INSERT INTO branches VALUES (1, 0);
         INSERT INTO tellers SELECT x, 1, 0 FROM generate_series(1, 10) AS g(x);
         INSERT INTO accounts SELECT x, 1, 0 FROM generate_series(1, 1000) AS g(x);",
    );
    let script = dir.path().join("tpcb.sql");
    std::fs::write(&script, TPCB).expect("script");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("log directory");
    let port = server.port.clone();
    let (script_arg, log_prefix) = (script.clone(), logs.join("tx"));
    let run = std::thread::spawn(move || {
        Command::new("pgbench")
            .args([
                "-n", "-M", "prepared", "-c", "16", "-j", "2", "-T", "60", "-l",
            ])
            .arg(format!("--log-prefix={}", log_prefix.display()))
            .args(["-h", "127.0.0.1", "-U", "rowdex", "-p", &port, "-f"])
            .arg(&script_arg)
            .arg("rowdex")
            .output()
            .unwrap_or_else(|e| panic!("pgbench (PostgreSQL 15) must be installed: {e}"))
    });
    std::thread::sleep(std::time::Duration::from_secs(6));
    let _ = server.signal("-KILL");
    let output = run.join().expect("pgbench thread");
    let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
    drop(server);

    let acknowledged = acknowledged_per_client(&logs);
    let total: u64 = acknowledged.values().sum();
    assert!(
        total > 0,
        "no transaction finished before the kill:\n{said}"
    );
    let server = ServeProcess::start(&[&db_arg]);
    let sums = psql(
        &server.port,
        "SELECT (SELECT sum(abalance) FROM accounts), (SELECT sum(tbalance) FROM tellers),
                (SELECT sum(bbalance) FROM branches), (SELECT coalesce(sum(delta), 0) FROM history)",
    );
    let sums: Vec<&str> = sums.trim().split('|').collect();
    assert_eq!(sums.len(), 4, "{sums:?}");
    assert!(
        sums.iter().all(|sum| *sum == sums[3]),
        "balances differ from history: {sums:?}"
    );
    let per_client = psql(
        &server.port,
        "SELECT client, count(*) FROM history GROUP BY client ORDER BY client",
    );
    let found: std::collections::BTreeMap<u64, u64> = per_client
        .lines()
        .filter_map(|line| line.split_once('|'))
        .map(|(client, count)| {
            (
                client.parse().expect("a client"),
                count.parse().expect("a count"),
            )
        })
        .collect();
    for (client, &acked) in &acknowledged {
        let kept = found.get(client).copied().unwrap_or(0);
        assert!(
            kept == acked || kept == acked + 1,
            "client {client}: {acked} acknowledged, {kept} in history\n{said}"
        );
    }
    let checked = psql(
        &server.port,
        "CHECK TABLE accounts; CHECK TABLE tellers; CHECK TABLE branches; CHECK TABLE history",
    );
    assert_checked(&checked, 2);
}
