//! Passwords and TLS: SCRAM-SHA-256 logins against the catalog's roles from tokio-postgres
//! (right and wrong passwords, unknown users, roles without a password or without LOGIN,
//! ALTER and DROP taking effect at the next login), verifiers stored instead of passwords,
//! trust refused off loopback, and psql connecting over TLS.

use std::net::SocketAddr;
use std::process::Command;

use rowdex_server::{AuthMethod, ServeOptions, Server};
use tokio_postgres::{Client, NoTls};

use crate::harness::{TestServer, sqlstate, test_options, test_tls_files};

const ROLES: &str = "CREATE USER alice WITH PASSWORD 'wonderland';
    CREATE ROLE bob LOGIN;
    CREATE ROLE carol PASSWORD 'carol';
    CREATE USER dave ENCRYPTED PASSWORD 'dave' NOLOGIN";

async fn scram_server(tls: bool) -> TestServer {
    let options = ServeOptions {
        auth: AuthMethod::ScramSha256,
        tls: tls.then(test_tls_files),
        ..test_options(20)
    };
    TestServer::with_options(options, ROLES).await
}

async fn login(
    server: &TestServer,
    user: &str,
    password: &str,
) -> Result<Client, tokio_postgres::Error> {
    let config = format!(
        "host=127.0.0.1 port={} user={user} password='{password}' dbname=rowdex",
        server.addr.port()
    );
    let (client, connection) = tokio_postgres::connect(&config, NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// The SQLSTATE and message of a refused login.
async fn refusal(server: &TestServer, user: &str, password: &str) -> (String, String) {
    let error = login(server, user, password)
        .await
        .err()
        .unwrap_or_else(|| panic!("{user} with password {password:?} was let in"));
    let message = error
        .as_db_error()
        .map_or_else(|| error.to_string(), |db| db.message().to_string());
    (sqlstate(&error), message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_logins_check_passwords_against_the_catalog_roles() {
    let server = scram_server(false).await;
    let alice = login(&server, "alice", "wonderland").await.expect("alice");
    let user: String = alice
        .query_one("SELECT current_user", &[])
        .await
        .expect("current_user")
        .get(0);
    assert_eq!(user, "alice");

    let failed = |user: &str| {
        (
            "28P01".to_string(),
            format!("password authentication failed for user \"{user}\""),
        )
    };
    assert_eq!(
        refusal(&server, "alice", "Wonderland").await,
        failed("alice")
    );
    // An unknown user and a role without a password fail the same way as a wrong password.
    assert_eq!(refusal(&server, "nobody", "x").await, failed("nobody"));
    assert_eq!(refusal(&server, "bob", "").await, failed("bob"));
    // The right password of a role that may not log in (CREATE ROLE is NOLOGIN by default).
    assert_eq!(
        refusal(&server, "carol", "carol").await,
        (
            "28000".to_string(),
            "role \"carol\" is not permitted to log in".to_string()
        )
    );
    assert_eq!(refusal(&server, "dave", "dave").await.0, "28000");

    // The catalog keeps a SCRAM verifier, never the password.
    let stored = server
        .db
        .role("alice")
        .await
        .expect("roles")
        .expect("alice");
    let verifier = stored.password.expect("a verifier");
    assert!(verifier.starts_with("SCRAM-SHA-256$4096:"), "{verifier}");
    assert!(!verifier.contains("wonderland"));

    // Changes hold from the next login on; the open session goes on.
    alice
        .batch_execute("ALTER USER alice WITH PASSWORD 'looking glass'; ALTER ROLE carol LOGIN")
        .await
        .expect("alter");
    assert_eq!(
        refusal(&server, "alice", "wonderland").await,
        failed("alice")
    );
    login(&server, "alice", "looking glass")
        .await
        .expect("new password");
    login(&server, "carol", "carol")
        .await
        .expect("carol may log in now");
    let error = alice
        .batch_execute("CREATE USER carol")
        .await
        .expect_err("carol exists");
    assert_eq!(sqlstate(&error), "42710");
    alice
        .batch_execute("DROP USER carol; DROP ROLE IF EXISTS nobody")
        .await
        .expect("drop");
    assert_eq!(refusal(&server, "carol", "carol").await, failed("carol"));
    let error = alice
        .batch_execute("DROP ROLE carol")
        .await
        .expect_err("carol is gone");
    assert_eq!(sqlstate(&error), "42704");
    // Options rowdex does not keep are refused, not ignored.
    let error = alice
        .batch_execute("CREATE ROLE eve SUPERUSER")
        .await
        .expect_err("no privileges");
    assert_eq!(sqlstate(&error), "42601");
    assert!(
        alice.simple_query("SELECT 1").await.is_ok(),
        "alice's session went on throughout"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_is_refused_off_loopback() {
    let options = ServeOptions {
        listen: SocketAddr::from(([0, 0, 0, 0], 0)),
        ..test_options(1)
    };
    let error = Server::bind(options).await.err().expect("refused");
    assert!(error.to_string().contains("loopback"), "{error}");
}

/// psql's `\conninfo` as alice over a connection to `port` made with `sslmode`, and whether
/// psql succeeded.
fn psql_conninfo(port: u16, sslmode: &str) -> (bool, String) {
    let output = Command::new("psql")
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-U",
            "alice",
            "-d",
            "rowdex",
            "-c",
            "\\conninfo",
            "-p",
        ])
        .arg(port.to_string())
        .env("PGPASSWORD", "wonderland")
        .env("PGSSLMODE", sslmode)
        .output()
        .unwrap_or_else(|e| panic!("psql (PostgreSQL 15's client) must be installed: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_connects_over_tls_with_a_password() {
    let server = scram_server(true).await;
    let port = server.addr.port();
    let (ok, info) = tokio::task::spawn_blocking(move || psql_conninfo(port, "require"))
        .await
        .expect("psql");
    assert!(ok, "{info}");
    assert!(info.contains("SSL connection (protocol: TLSv1.3"), "{info}");
    // A client that does not ask for TLS still connects in the clear.
    login(&server, "alice", "wonderland")
        .await
        .expect("plain connection");
    server.stop().await;

    // A server without a certificate refuses a client that requires TLS.
    let plain = scram_server(false).await;
    let port = plain.addr.port();
    let (ok, info) = tokio::task::spawn_blocking(move || psql_conninfo(port, "require"))
        .await
        .expect("psql");
    assert!(!ok, "{info}");
    assert!(info.contains("server does not support SSL"), "{info}");
    plain.stop().await;
}
