//! A throwaway etcd cluster on loopback, for tests and benchmarks: members started from the
//! `etcd` binary on free ports with their data in a temporary directory, stopped by pid.
//!
//! Each member runs under a small shell watchdog that stops it when the process that started
//! the cluster is gone, so a test binary that exits (or crashes) without dropping the cluster
//! leaves no etcd behind. The etcd binary is `$ROWDEX_ETCD`, else `etcd` on the `PATH`
//! (`scripts/install-etcd` installs it).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::EtcdAddress;
use super::client::Effect;
use super::client::{Client, EtcdOptions};
use super::wire::StatusResponse;
use crate::error::{Result, StoreError};

/// The server limits the cluster runs with (README: "Running on a cluster").
pub const SERVER_FLAGS: &[&str] = &["--max-txn-ops", "20000", "--max-request-bytes", "33554432"];

/// Starts the member given after its log file and data directory, reports its pid, and stops
/// it when the parent (the process that started the cluster) is gone, then removes its files.
const WATCHDOG: &str = r#"log="$1"; data="$2"; shift 2
"$@" >>"$log" 2>&1 &
child=$!
echo "$child"
while kill -0 "$PPID" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 0.2; done
kill "$child" 2>/dev/null
wait "$child"
if ! kill -0 "$PPID" 2>/dev/null; then
  rm -rf "$data" "$log"
  rmdir "$(dirname "$data")" 2>/dev/null
fi
exit 0
"#;

static CLUSTERS_STARTED: AtomicU64 = AtomicU64::new(0);

/// How many times a cluster's start is tried on fresh ports.
const START_ATTEMPTS: usize = 3;

/// One member: its addresses, its data, and the process running it (if it runs).
#[derive(Debug)]
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    pid: Option<u32>,
    watchdog: Option<Child>,
}

/// A cluster of etcd members on 127.0.0.1 (see the module documentation).
#[derive(Debug)]
pub struct LocalEtcdCluster {
    dir: PathBuf,
    token: String,
    members: Vec<Member>,
}

/// The etcd binary the cluster runs.
pub fn etcd_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("ROWDEX_ETCD") {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            StoreError::Io {
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no etcd binary: set ROWDEX_ETCD or put etcd on the PATH (scripts/install-etcd installs it)",
                ),
            }
        })
}

/// A port free at the moment of asking.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

impl LocalEtcdCluster {
    /// Starts `members` members and waits until they have elected a leader.
    ///
    /// The ports are picked free but only bound by etcd a moment later, so another process's
    /// connection can take one first and a member exits at once ("address already in use");
    /// a start whose member died, or that elects no leader, is torn down and tried again on
    /// fresh ports (three times), and the error names what each member's log said last.
    pub async fn start(members: usize) -> Result<LocalEtcdCluster> {
        LocalEtcdCluster::start_on(members, free_port).await
    }

    /// [`LocalEtcdCluster::start`] with the ports picked by `pick_port` (a test hands out a
    /// port it holds, to see the start recover).
    pub async fn start_on(
        members: usize,
        mut pick_port: impl FnMut() -> Result<u16>,
    ) -> Result<LocalEtcdCluster> {
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let mut cluster = LocalEtcdCluster::prepare(members, &mut pick_port)?;
            match cluster.launch_all().await {
                Ok(()) => return Ok(cluster),
                Err(reason) => failures.push(reason),
            }
        }
        Err(std::io::Error::other(format!(
            "the etcd cluster did not start in {START_ATTEMPTS} attempts: {}",
            failures.join("; then ")
        ))
        .into())
    }

    fn prepare(
        members: usize,
        pick_port: &mut impl FnMut() -> Result<u16>,
    ) -> Result<LocalEtcdCluster> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or(0);
        let token = format!(
            "rowdex-{}-{}-{nanos}",
            std::process::id(),
            CLUSTERS_STARTED.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(&token);
        std::fs::create_dir_all(&dir)?;
        let mut cluster = LocalEtcdCluster {
            dir,
            token,
            members: Vec::new(),
        };
        for index in 0..members {
            cluster.members.push(Member {
                name: format!("m{index}"),
                client_port: pick_port()?,
                peer_port: pick_port()?,
                pid: None,
                watchdog: None,
            });
        }
        Ok(cluster)
    }

    /// Launches every member and waits for a leader; on failure, says why (with the tail of
    /// each member's log, read before the cluster is dropped and its files removed).
    async fn launch_all(&mut self) -> std::result::Result<(), String> {
        for index in 0..self.members.len() {
            self.launch(index).map_err(|error| error.to_string())?;
        }
        let started = Instant::now();
        let limit = Duration::from_secs(30);
        loop {
            if let Some(index) = self.exited_member() {
                return Err(format!(
                    "member m{index} exited at start ({})",
                    self.log_tails()
                ));
            }
            if self.every_member_knows_a_leader().await {
                return Ok(());
            }
            if started.elapsed() >= limit {
                return Err(format!(
                    "no leader elected within {limit:?} ({})",
                    self.log_tails()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A member whose process has exited (its watchdog ends with it).
    fn exited_member(&mut self) -> Option<usize> {
        self.members.iter_mut().position(|member| {
            member
                .watchdog
                .as_mut()
                .is_some_and(|watchdog| matches!(watchdog.try_wait(), Ok(Some(_))))
        })
    }

    /// The last line of each member's log.
    fn log_tails(&self) -> String {
        self.members
            .iter()
            .map(|member| {
                let log = self.dir.join(format!("{}.log", member.name));
                let text = std::fs::read_to_string(log).unwrap_or_default();
                let last = text.lines().last().unwrap_or("(empty log)").to_string();
                format!("{}: {last}", member.name)
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// A 3-member cluster shared by everything in this process that asks for it (the tests of
    /// one test binary), started at the first call on a thread and runtime of its own; its
    /// members stop when the process exits (see the module documentation). Each user takes a
    /// database name of its own on it.
    pub fn shared() -> Result<&'static LocalEtcdCluster> {
        static SHARED: OnceLock<std::result::Result<LocalEtcdCluster, String>> = OnceLock::new();
        let started = SHARED.get_or_init(|| {
            std::thread::spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|error| error.to_string())?;
                runtime
                    .block_on(LocalEtcdCluster::start(3))
                    .map_err(|error| error.to_string())
            })
            .join()
            .unwrap_or_else(|_| Err("the thread starting the cluster panicked".to_string()))
        });
        started.as_ref().map_err(|reason| {
            std::io::Error::other(format!("the shared etcd cluster did not start: {reason}")).into()
        })
    }

    fn initial_cluster(&self) -> String {
        self.members
            .iter()
            .map(|member| format!("{}=http://127.0.0.1:{}", member.name, member.peer_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn launch(&mut self, index: usize) -> Result<()> {
        let etcd = etcd_binary()?;
        let initial_cluster = self.initial_cluster();
        let member = &self.members[index];
        let data = self.dir.join(&member.name);
        let log = self.dir.join(format!("{}.log", member.name));
        let client = format!("http://127.0.0.1:{}", member.client_port);
        let peer = format!("http://127.0.0.1:{}", member.peer_port);
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(WATCHDOG)
            .arg("sh")
            .arg(&log)
            .arg(&data)
            .arg(&etcd)
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &initial_cluster])
            .args(["--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", &self.token])
            // Quick elections, so tests that stop the leader do not wait long.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(SERVER_FLAGS)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut watchdog = command.spawn()?;
        let pid = match watchdog.stdout.take() {
            Some(stdout) => {
                let mut line = String::new();
                BufReader::new(stdout).read_line(&mut line)?;
                line.trim().parse::<u32>().ok()
            }
            None => None,
        };
        let Some(pid) = pid else {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
            return Err(std::io::Error::other("the etcd watchdog did not report a pid").into());
        };
        let member = &mut self.members[index];
        member.pid = Some(pid);
        member.watchdog = Some(watchdog);
        Ok(())
    }

    /// The members' client addresses, `127.0.0.1:port`.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|member| format!("127.0.0.1:{}", member.client_port))
            .collect()
    }

    /// The address of database `namespace` on this cluster.
    pub fn address(&self, namespace: &str) -> EtcdAddress {
        EtcdAddress {
            endpoints: self.endpoints(),
            namespace: namespace.to_string(),
        }
    }

    /// Where the members keep their data and logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pid of a running member.
    pub fn pid(&self, member: usize) -> Option<u32> {
        self.members.get(member).and_then(|member| member.pid)
    }

    /// Kills a member at once (SIGKILL), as a crash would.
    pub fn kill(&mut self, member: usize) -> Result<()> {
        self.signal(member, "-KILL")
    }

    /// Stops a member (SIGTERM) and waits for it.
    pub fn stop(&mut self, member: usize) -> Result<()> {
        self.signal(member, "-TERM")
    }

    fn signal(&mut self, index: usize, signal: &str) -> Result<()> {
        let Some(member) = self.members.get_mut(index) else {
            return Ok(());
        };
        if let Some(pid) = member.pid.take() {
            Command::new("kill")
                .arg(signal)
                .arg(pid.to_string())
                .stderr(Stdio::null())
                .status()?;
        }
        if let Some(mut watchdog) = member.watchdog.take() {
            watchdog.wait()?;
        }
        Ok(())
    }

    /// Starts a stopped member again on its data, and waits until the cluster has a leader.
    pub async fn restart(&mut self, member: usize) -> Result<()> {
        if self.pid(member).is_none() {
            self.launch(member)?;
        }
        self.wait_for_leader(Duration::from_secs(30)).await
    }

    /// The index of the member that leads, as the running members see it.
    pub async fn leader(&self) -> Option<usize> {
        for (index, member) in self.members.iter().enumerate() {
            if member.pid.is_none() {
                continue;
            }
            let Some(status) = self.status(index).await else {
                continue;
            };
            if status.leader == 0 {
                continue;
            }
            let leader = if status.leader == status.header.member_id {
                Some(index)
            } else {
                self.member_with_id(status.leader).await
            };
            if leader.is_some() {
                return leader;
            }
        }
        None
    }

    async fn member_with_id(&self, id: u64) -> Option<usize> {
        for index in 0..self.members.len() {
            if self.members[index].pid.is_some()
                && let Some(status) = self.status(index).await
                && status.header.member_id == id
            {
                return Some(index);
            }
        }
        None
    }

    async fn status(&self, index: usize) -> Option<StatusResponse> {
        let client = Client::new(
            vec![format!("127.0.0.1:{}", self.members[index].client_port)],
            EtcdOptions {
                call_timeout: Duration::from_secs(1),
                unavailable_after: Duration::ZERO,
                ..EtcdOptions::default()
            },
        );
        client
            .call(
                "/v3/maintenance/status",
                &serde_json::json!({}),
                Effect::Read,
            )
            .await
            .ok()
    }

    async fn every_member_knows_a_leader(&self) -> bool {
        let mut ready = true;
        for index in 0..self.members.len() {
            if self.members[index].pid.is_none() {
                continue;
            }
            ready &= self.status(index).await.is_some_and(|s| s.leader != 0);
        }
        ready
    }

    /// Waits until every running member knows a leader.
    pub async fn wait_for_leader(&self, limit: Duration) -> Result<()> {
        let started = Instant::now();
        loop {
            if self.every_member_knows_a_leader().await {
                return Ok(());
            }
            if started.elapsed() >= limit {
                return Err(std::io::Error::other(format!(
                    "the etcd cluster in {} elected no leader within {limit:?} (see its logs there)",
                    self.dir.display()
                ))
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for LocalEtcdCluster {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            let _ = self.stop(index);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
