//! psql, PostgreSQL 15's own client, runs a script against the server; its whole output
//! (results, command tags, errors, in order) must match `psql/<name>.out`. With
//! `ROWDEX_BLESS=1` the expected file is rewritten from the run instead, for review as a diff.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::harness::TestServer;

/// psql's whole output (stdout and stderr in the order written) for `script` on stdin.
fn run_psql(server: &TestServer, script: &str) -> String {
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let mut child = Command::new("psql")
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-U",
            "rowdex",
            "-d",
            "rowdex",
            "-p",
        ])
        .arg(server.addr.port().to_string())
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().expect("pipe"))
        .stderr(writer)
        .spawn()
        .unwrap_or_else(|e| {
            panic!("psql (PostgreSQL 15's client) must be installed to run this test: {e}")
        });
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("script");
    let mut output = String::new();
    // The child holds the pipe's writing ends; reading to the end waits for it to exit.
    reader.read_to_string(&mut output).expect("output");
    let status = child.wait().expect("psql");
    assert!(status.success(), "psql failed: {status}\n{output}");
    output
}

fn check_script(server: &TestServer, name: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/server/psql");
    let script = std::fs::read_to_string(dir.join(format!("{name}.sql"))).expect("script");
    let output = run_psql(server, &script);
    let expected_path = dir.join(format!("{name}.out"));
    if std::env::var_os("ROWDEX_BLESS").is_some() {
        std::fs::write(&expected_path, &output).expect("bless");
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (ROWDEX_BLESS=1 writes it)",
            expected_path.display()
        )
    });
    assert_eq!(output, expected, "psql output of {name}.sql");
}

/// Each script on a server of its own, so that what one creates does not show in another's
/// output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_runs_scripts() {
    for name in ["basic", "copy", "describe"] {
        let server = TestServer::start().await;
        let handle = tokio::runtime::Handle::current();
        let server = tokio::task::spawn_blocking(move || {
            let _guard = handle.enter();
            check_script(&server, name);
            server
        })
        .await
        .expect("psql task");
        server.stop().await;
    }
}
