//! The one test harness: a real etcd per test (free loopback ports, a
//! temporary data dir), the real leaderrun binary, and helpers to await
//! conditions instead of sleeping on hope.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};

/// Which etcd to run: LEADERRUN_TEST_ETCD, else the one the
/// etcd-bin-vendored crate ships.
pub fn etcd_binary() -> PathBuf {
    match std::env::var_os("LEADERRUN_TEST_ETCD") {
        Some(path) => PathBuf::from(path),
        None => etcd_bin_vendored::etcd_bin_path()
            .expect("no vendored etcd for this platform: set LEADERRUN_TEST_ETCD")
            .to_path_buf(),
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A single-member etcd, stopped and wiped on drop.
pub struct Etcd {
    process: Option<Child>,
    pub client_port: u16,
    peer_port: u16,
    data: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
}

impl Etcd {
    pub fn start() -> Etcd {
        let base = if Path::new("/dev/shm").is_dir() {
            "/dev/shm"
        } else {
            "/tmp"
        };
        let data = tempfile::Builder::new()
            .prefix("leaderrun-etcd-")
            .tempdir_in(base)
            .expect("a temporary data dir");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut etcd = Etcd {
            process: None,
            client_port: free_port(),
            peer_port: free_port(),
            data,
            runtime,
        };
        etcd.launch();
        etcd
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn launch(&mut self) {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let process = Command::new(etcd_binary())
            .arg("--name=test")
            .arg(format!(
                "--data-dir={}",
                self.data.path().join("member").display()
            ))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.data.path().join("etcd.log")).unwrap())
            .spawn()
            .expect("etcd starts");
        self.process = Some(process);
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let endpoint = self.endpoint();
        let ready = self.runtime.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(mut client) = Client::connect([&endpoint], None).await {
                    let put =
                        tokio::time::timeout(Duration::from_secs(1), client.put("ready", "", None))
                            .await;
                    if matches!(put, Ok(Ok(_))) {
                        return true;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            false
        });
        assert!(ready, "etcd did not become ready at {endpoint}");
    }

    pub fn pid(&self) -> i32 {
        self.process.as_ref().expect("etcd runs").id() as i32
    }

    pub fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Starts etcd again on the same ports and data.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Runs `f` with a client of this etcd.
    pub fn with<T>(&self, f: impl AsyncFnOnce(Client) -> T) -> T {
        let endpoint = self.endpoint();
        self.runtime.block_on(async move {
            let client = Client::connect([endpoint], None)
                .await
                .expect("test client connects");
            f(client).await
        })
    }

    /// The keys under an election, in create order: (key, create revision, lease).
    pub fn candidates(&self, name: &str) -> Vec<(String, i64, i64)> {
        let prefix = format!("{name}/");
        self.with(async move |mut client| {
            let options = GetOptions::new().with_prefix().with_sort(
                etcd_client::SortTarget::Create,
                etcd_client::SortOrder::Ascend,
            );
            let response = client.get(prefix, Some(options)).await.unwrap();
            response
                .kvs()
                .iter()
                .map(|kv| {
                    (
                        kv.key_str().unwrap().to_string(),
                        kv.create_revision(),
                        kv.lease(),
                    )
                })
                .collect()
        })
    }

    pub fn revoke(&self, lease: i64) {
        self.with(async move |mut client| client.lease_revoke(lease).await.expect("revoke"));
    }

    pub fn delete(&self, key: &str) {
        let key = key.to_string();
        self.with(async move |mut client| client.delete(key, None).await.expect("delete"));
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// leaderrun, pointed at `endpoints`, with an environment cleaned of
/// anything the developer's shell might carry.
pub fn leaderrun(endpoints: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leaderrun"));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("LEADERRUN_") || key.starts_with("ETCDCTL_") {
            command.env_remove(key.as_ref());
        }
    }
    command.env("LEADERRUN_ENDPOINTS", endpoints);
    command
}

/// Output of a finished run.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Runs to completion, killing it (and failing) if it takes over `limit`.
pub fn run_within(command: &mut Command, limit: Duration) -> Finished {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("leaderrun starts");
    // Read on threads that report back over channels: a grandchild that
    // survives (the bug some tests look for) keeps the pipes open, and must
    // not make the test wait for it.
    let collect = |pipe: Box<dyn std::io::Read + Send>| {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = send.send(std::io::read_to_string(pipe).unwrap_or_default());
        });
        receive
    };
    let out = collect(Box::new(child.stdout.take().unwrap()));
    let err = collect(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("leaderrun did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Finished {
        code: status.code(),
        took: started.elapsed(),
        stdout: out.recv_timeout(Duration::from_secs(1)).unwrap_or_default(),
        stderr: err.recv_timeout(Duration::from_secs(1)).unwrap_or_default(),
    }
}

/// Polls `condition` every 10 ms until it holds; panics with `what` after
/// `limit`. Returns how long it took.
pub fn await_condition(
    limit: Duration,
    what: &str,
    mut condition: impl FnMut() -> bool,
) -> Duration {
    let started = Instant::now();
    while !condition() {
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    started.elapsed()
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Reads a pid that a child wrote to `path`, once it is there.
pub fn read_pid(path: &Path, limit: Duration) -> i32 {
    let mut pid = None;
    await_condition(limit, &format!("a pid in {}", path.display()), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap()
}

pub fn send(pid: i32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).expect("signal delivered");
}

/// A background leaderrun whose stderr is collected; killed on drop.
pub struct Replica {
    pub process: Child,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    stderr_closed: std::sync::mpsc::Receiver<()>,
}

impl Replica {
    pub fn spawn(command: &mut Command) -> Replica {
        let mut process = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("leaderrun starts");
        // Collected as it comes: a surviving grandchild may hold the pipe
        // open, and must not make the test wait for it.
        let pipe = process.stderr.take().unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (closed, stderr_closed) = std::sync::mpsc::channel();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
            let _ = closed.send(());
        });
        Replica {
            process,
            stderr,
            stderr_closed,
        }
    }

    pub fn pid(&self) -> i32 {
        self.process.id() as i32
    }

    /// Waits for exit within `limit`; returns the code and stderr.
    pub fn finish(&mut self, limit: Duration) -> (Option<i32>, String) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.process.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < limit,
                "replica did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = self.stderr_closed.recv_timeout(Duration::from_secs(1));
        let stderr = self.stderr.lock().unwrap().clone();
        (status.code(), stderr)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// One run of a job, as recorded by [`recording_job`]: token, start and end
/// in nanoseconds of CLOCK_MONOTONIC-ish wall time on this machine.
#[derive(Debug, Clone, Copy)]
pub struct Interval {
    pub token: i64,
    pub start: u128,
    pub end: u128,
}

/// A shell job that appends "start TOKEN NS" and "end TOKEN NS" lines to
/// `log`, sleeping `seconds` between.
pub fn recording_job(log: &Path, seconds: &str) -> Vec<String> {
    let script = format!(
        "echo \"start $LEADERRUN_TOKEN $(date +%s%N)\" >> '{log}'; sleep {seconds}; echo \"end $LEADERRUN_TOKEN $(date +%s%N)\" >> '{log}'",
        log = log.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

/// Reads the intervals of a recording job's log: complete ones only.
pub fn intervals(log: &Path) -> Vec<Interval> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut starts = std::collections::HashMap::new();
    let mut done = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() != 3 {
            continue;
        }
        let token: i64 = parts[1].parse().unwrap();
        let at: u128 = parts[2].parse().unwrap();
        match parts[0] {
            "start" => {
                starts.insert(token, at);
            }
            "end" => {
                let start = starts.remove(&token).expect("an end after its start");
                done.push(Interval {
                    token,
                    start,
                    end: at,
                });
            }
            _ => {}
        }
    }
    done.sort_by_key(|interval| interval.start);
    done
}

/// A TCP proxy on loopback that can be cut: while cut, connections stay open
/// and new ones are accepted, but every byte is silently dropped, as in a
/// network partition (not a refused connection). Healing lets bytes through
/// again. Stops on drop.
pub struct Proxy {
    pub port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    pub fn start(upstream_port: u16) -> Proxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (cut_flag, stop_flag) = (cut.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop_flag.load(Ordering::Relaxed) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream_port)) else {
                    continue;
                };
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let (cut, stop) = (cut_flag.clone(), stop_flag.clone());
                    std::thread::spawn(move || pump(from, to, &cut, &stop));
                }
            }
        });
        Proxy { port, cut, stop }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

fn pump(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    cut: &std::sync::atomic::AtomicBool,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    from.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buffer = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if !cut.load(Ordering::SeqCst) && to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The process state letter of `pid` ("R", "S", "Z"...), or None if gone.
pub fn process_state(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .next()
        .map(String::from)
}
