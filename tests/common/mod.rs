//! The one test harness: a real etcd per test (free loopback ports, a
//! temporary data dir), the real leaderrun binary, and helpers to await
//! conditions instead of sleeping on hope.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Certificate, Client, ConnectOptions, GetOptions, Identity, TlsOptions};

pub mod pki;

/// Which etcd to run: LEADERRUN_TEST_ETCD if set and not empty, else the one the
/// etcd-bin-vendored crate ships.
pub fn etcd_binary() -> PathBuf {
    match std::env::var_os("LEADERRUN_TEST_ETCD").filter(|path| !path.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => etcd_bin_vendored::etcd_bin_path()
            .expect("no vendored etcd for this platform: set LEADERRUN_TEST_ETCD")
            .to_path_buf(),
    }
}

/// Every port [`free_port`] has handed out in this test process.
static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A loopback port that nothing listened on when asked, and that no other
/// caller in this test process has been given (tests run in parallel). The
/// port is free only for the moment it is asked: another process may take
/// it before it is used, which [`Etcd::start_with`] survives by drawing
/// new ports.
pub fn free_port() -> u16 {
    for _ in 0..1000 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let mut handed_out = HANDED_OUT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if handed_out.insert(port) {
            return port;
        }
    }
    panic!("no loopback port that this test process has not handed out already");
}

/// How to start an etcd: how many members, TLS or not.
#[derive(Default)]
pub struct EtcdOptions {
    pub members: usize,
    /// Serve clients over TLS with certificates made for the test, and
    /// require client certificates.
    pub tls: bool,
    /// Member 0's client port on the first attempt, instead of a free one:
    /// lets a test of the harness hand it a port that is taken.
    pub first_client_port: Option<u16>,
    /// Authentication tokens as JWTs (`--auth-token jwt,...`, ES256 with a
    /// key made for the test) instead of etcd's default simple tokens. A
    /// JWT carries the auth store's revision: any change to users, roles
    /// or passwords makes every token issued before it stale.
    pub jwt: bool,
}

/// How many times [`Etcd::start_with`] starts etcd on new ports when a
/// member could not listen on the ones it was given.
const START_ATTEMPTS: usize = 5;

/// How long one attempt to start etcd may take to answer.
const START_LIMIT: Duration = Duration::from_secs(30);

/// What etcd (Go) logs when a port it should listen on is taken.
const PORT_TAKEN: &str = "address already in use";

/// One member of a test etcd.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    process: Option<Child>,
}

/// A test etcd of one or more members on loopback, stopped and wiped on
/// drop. Single-member unless started with [`Etcd::start_with`].
pub struct Etcd {
    members: Vec<Member>,
    data: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    pub pki: Option<pki::Pki>,
    /// The CA etcd trusts for client certificates, when not the test's
    /// own (see [`Etcd::restart_trusting`]).
    client_ca: Option<PathBuf>,
    /// The key pair that signs etcd's JWT tokens (private, public), if it
    /// hands out JWTs.
    jwt_keys: Option<(PathBuf, PathBuf)>,
    /// root's password, once authentication is on.
    root_password: Option<String>,
}

impl Etcd {
    pub fn start() -> Etcd {
        Etcd::start_with(EtcdOptions::default())
    }

    /// Starts etcd and waits until every member answers as a member of
    /// this cluster. Should a member find one of its ports taken (another
    /// process got it between [`free_port`] and etcd's listen), starts the
    /// whole cluster again on new ports, up to [`START_ATTEMPTS`] times.
    pub fn start_with(options: EtcdOptions) -> Etcd {
        let mut etcd = Etcd::unstarted(&options);
        let mut taken = Vec::new();
        for attempt in 0..START_ATTEMPTS {
            for member in etcd.members.iter_mut() {
                member.client_port = free_port();
                member.peer_port = free_port();
            }
            if let (0, Some(port)) = (attempt, options.first_client_port) {
                etcd.members[0].client_port = port;
            }
            for index in 0..etcd.members.len() {
                etcd.launch(index);
            }
            match etcd.await_start() {
                Ok(()) => return etcd,
                Err(port_taken) => {
                    taken.push(port_taken);
                    etcd.stop_and_wipe();
                }
            }
        }
        panic!(
            "etcd found a port taken in each of {START_ATTEMPTS} attempts to start it:\n{}",
            taken.join("\n")
        );
    }

    /// The members, without ports or processes yet, their data dir, and
    /// the certificates if TLS is on.
    fn unstarted(options: &EtcdOptions) -> Etcd {
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
        let members = (0..options.members.max(1))
            .map(|index| Member {
                name: format!("m{index}"),
                client_port: 0,
                peer_port: 0,
                process: None,
            })
            .collect();
        let pki = options.tls.then(|| pki::Pki::generate(data.path()));
        let jwt_keys = options.jwt.then(|| pki::jwt_keys(data.path()));
        Etcd {
            members,
            data,
            runtime,
            pki,
            client_ca: None,
            jwt_keys,
            root_password: None,
        }
    }

    /// Waits until every member answers, as a member of this cluster, and
    /// takes a write. Err (naming the port) if a member exited because a
    /// port was taken; panics on any other exit, or after [`START_LIMIT`].
    fn await_start(&self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            // Checked before and after asking: a member that could not
            // listen exits at once, and what answers on its port then is
            // some other process's etcd.
            self.check_started()?;
            if self.runtime.block_on(self.all_answer_as_ours()) {
                return self.check_started();
            }
            assert!(
                started.elapsed() < START_LIMIT,
                "etcd did not start within {START_LIMIT:?} at {}{}",
                self.endpoints(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Err naming the taken port if a member exited because of one; panics
    /// if a member exited for another reason.
    fn check_started(&self) -> Result<(), String> {
        for index in self.all_members() {
            if self.running(index) {
                continue;
            }
            let log = self.log(index);
            match log.lines().find(|line| line.contains(PORT_TAKEN)) {
                Some(line) => return Err(format!("member {index}: {line}")),
                None => panic!("etcd member {index} exited while starting{}", self.logs()),
            }
        }
        Ok(())
    }

    /// Whether every member answers a member list that names exactly this
    /// cluster's peer URLs, and takes a write.
    async fn all_answer_as_ours(&self) -> bool {
        let mut ours: Vec<String> = self
            .members
            .iter()
            .map(|member| format!("http://127.0.0.1:{}", member.peer_port))
            .collect();
        ours.sort();
        for index in self.all_members() {
            let answered = self
                .ask(&[index], async |mut client| {
                    let list = client.member_list().await.ok()?;
                    let mut peers: Vec<String> = list
                        .members()
                        .iter()
                        .flat_map(|member| member.peer_urls().iter().cloned())
                        .collect();
                    peers.sort();
                    if peers != ours {
                        return None;
                    }
                    client.put("ready", "", None).await.ok().map(drop)
                })
                .await;
            if answered.is_none() {
                return false;
            }
        }
        true
    }

    /// Kills every member and removes their data and logs, for a start on
    /// new ports.
    fn stop_and_wipe(&mut self) {
        for index in self.all_members() {
            self.kill_member(index);
            let dir = self.data.path().join(&self.members[index].name);
            std::fs::remove_dir_all(&dir)
                .unwrap_or_else(|err| panic!("removing {}: {err}", dir.display()));
        }
    }

    /// Whether member `index` was started and has not exited (nor been
    /// killed): frozen counts as running.
    fn running(&self, index: usize) -> bool {
        self.members[index]
            .process
            .as_ref()
            .is_some_and(|process| alive(process.id() as i32))
    }

    /// What member `index` has logged so far.
    fn log(&self, index: usize) -> String {
        let member = &self.members[index];
        std::fs::read_to_string(self.data.path().join(&member.name).join("etcd.log"))
            .unwrap_or_default()
    }

    /// For a failure message: the last lines of the log of every member
    /// that was started and has exited since.
    fn logs(&self) -> String {
        let mut text = String::new();
        for index in self.all_members() {
            if self.members[index].process.is_none() || self.running(index) {
                continue;
            }
            let log = self.log(index);
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(5)..];
            text.push_str(&format!(
                "\nmember {index} has exited; the end of its log:\n{}",
                tail.join("\n")
            ));
        }
        text
    }

    fn scheme(&self) -> &'static str {
        if self.pki.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The first member's Prometheus metrics (plain HTTP only), as text.
    pub fn metrics(&self) -> String {
        use std::io::{Read, Write};
        let port = self.members[0].client_port;
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("etcd's port");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(stream, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .expect("etcd's metrics");
        response
    }

    /// A gauge of etcd's (`etcd_debugging_mvcc_watch_stream_total`, say),
    /// as its metrics show it now.
    pub fn gauge(&self, name: &str) -> u64 {
        self.metrics()
            .lines()
            .find_map(|line| {
                line.strip_prefix(name)?
                    .strip_prefix(' ')?
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or_else(|| panic!("etcd shows {name}")) as u64
    }

    /// How many requests of `method` (gRPC's name: "Range", "Txn") the
    /// first member has answered, whatever the answer.
    pub fn handled(&self, method: &str) -> u64 {
        let wanted = format!("grpc_method=\"{method}\"");
        self.metrics()
            .lines()
            .filter(|line| line.starts_with("grpc_server_handled_total") && line.contains(&wanted))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }

    /// The client URL of the first member.
    pub fn endpoint(&self) -> String {
        self.member_endpoint(0)
    }

    pub fn member_endpoint(&self, index: usize) -> String {
        let port = self.members[index].client_port;
        format!("{}://127.0.0.1:{port}", self.scheme())
    }

    /// Every member's client URL, comma-separated, as --endpoints takes them.
    pub fn endpoints(&self) -> String {
        let urls: Vec<String> = (0..self.members.len())
            .map(|index| self.member_endpoint(index))
            .collect();
        urls.join(",")
    }

    pub fn client_port(&self) -> u16 {
        self.members[0].client_port
    }

    pub fn member_client_port(&self, index: usize) -> u16 {
        self.members[index].client_port
    }

    fn launch(&mut self, index: usize) {
        let cluster: Vec<String> = self
            .members
            .iter()
            .map(|member| format!("{}=http://127.0.0.1:{}", member.name, member.peer_port))
            .collect();
        let client = self.member_endpoint(index);
        let member = &self.members[index];
        let peer = format!("http://127.0.0.1:{}", member.peer_port);
        let dir = self.data.path().join(&member.name);
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("etcd.log"))
            .unwrap();
        let mut command = Command::new(etcd_binary());
        command
            .arg(format!("--name={}", member.name))
            .arg(format!("--data-dir={}", dir.join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster={}", cluster.join(",")))
            .arg("--initial-cluster-token=leaderrun-test")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(pki) = &self.pki {
            let client_ca = self.client_ca.as_ref().unwrap_or(&pki.ca);
            command
                .arg(format!("--cert-file={}", pki.server_cert.display()))
                .arg(format!("--key-file={}", pki.server_key.display()))
                .arg(format!("--trusted-ca-file={}", client_ca.display()))
                .arg("--client-cert-auth");
        }
        if let Some((private, public)) = &self.jwt_keys {
            command.arg(format!(
                "--auth-token=jwt,pub-key={},priv-key={},sign-method=ES256",
                public.display(),
                private.display()
            ));
        }
        self.members[index].process = Some(command.spawn().expect("etcd starts"));
    }

    /// A test client of the given member, with the test's certificates and
    /// root's credentials when those are on.
    async fn connect(&self, index: usize) -> Result<Client, etcd_client::Error> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(5));
        if let Some(pki) = &self.pki {
            let read = |path: &Path| std::fs::read(path).unwrap();
            options = options.with_tls(
                TlsOptions::new()
                    .ca_certificate(Certificate::from_pem(read(&pki.ca)))
                    .identity(Identity::from_pem(
                        read(&pki.client_cert),
                        read(&pki.client_key),
                    )),
            );
        }
        if let Some(password) = &self.root_password {
            options = options.with_user("root", password);
        }
        Client::connect([self.member_endpoint(index)], Some(options)).await
    }

    /// Waits until a write goes through some member.
    fn wait_ready(&self) {
        let all = self.all_members();
        self.await_answer(&all, "etcd to take a write", async |mut client| {
            client.put("ready", "", None).await.ok().map(drop)
        });
    }

    fn all_members(&self) -> Vec<usize> {
        (0..self.members.len()).collect()
    }

    /// Asks the live members among `members` in turn, each given a second to
    /// connect and answer; the first answer wins.
    async fn ask<T>(&self, members: &[usize], ask: impl AsyncFn(Client) -> Option<T>) -> Option<T> {
        for &index in members {
            if self.members[index].process.is_none() {
                continue;
            }
            let asked = tokio::time::timeout(Duration::from_secs(1), async {
                ask(self.connect(index).await.ok()?).await
            })
            .await;
            if let Ok(Some(answer)) = asked {
                return Some(answer);
            }
        }
        None
    }

    /// Asks until one of `members` answers; panics naming `what` after 30 s,
    /// or at once when every one of them that was started has exited (a
    /// member started again finding its port taken).
    fn await_answer(&self, members: &[usize], what: &str, ask: impl AsyncFn(Client) -> Option<()>) {
        let failure = self.runtime.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if self.ask(members, &ask).await.is_some() {
                    return None;
                }
                let mut started = members
                    .iter()
                    .filter(|&&index| self.members[index].process.is_some())
                    .peekable();
                if started.peek().is_some() && started.all(|&index| !self.running(index)) {
                    return Some("etcd exited while waiting");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Some("timed out waiting")
        });
        if let Some(failure) = failure {
            panic!(
                "{failure} for {what} at {}{}",
                self.endpoints(),
                self.logs()
            );
        }
    }

    pub fn pid(&self) -> i32 {
        self.member_pid(0)
    }

    pub fn member_pid(&self, index: usize) -> i32 {
        self.members[index]
            .process
            .as_ref()
            .expect("member runs")
            .id() as i32
    }

    pub fn kill(&mut self) {
        self.kill_member(0);
    }

    /// SIGKILLs one member.
    pub fn kill_member(&mut self, index: usize) {
        if let Some(mut process) = self.members[index].process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Starts a killed member again on its ports and data, without waiting
    /// for it to catch up.
    pub fn start_member(&mut self, index: usize) {
        if self.members[index].process.is_none() {
            self.launch(index);
        }
    }

    /// Waits until one member answers a linearizable read itself.
    pub fn wait_member_ready(&self, index: usize) {
        let what = format!("member {index} to answer a read");
        self.await_answer(&[index], &what, async |mut client| {
            client.get("ready", None).await.ok().map(drop)
        });
    }

    /// What a lease has left, as the first live member that answers within
    /// a second says; None if it is gone or nobody answers.
    pub fn lease_left(&self, lease: i64) -> Option<Duration> {
        let all = self.all_members();
        let ttl = self.runtime.block_on(self.ask(&all, async |mut client| {
            let response = client.lease_time_to_live(lease, None).await.ok()?;
            Some(response.ttl())
        }))?;
        u64::try_from(ttl).ok().map(Duration::from_secs)
    }

    /// Starts etcd (member 0) again on the same ports and data.
    pub fn restart(&mut self) {
        self.kill();
        self.launch(0);
        self.wait_ready();
    }

    /// Starts etcd (member 0) again, trusting only client certificates
    /// signed by the CA in `ca` from now on: the CA rotated, as when
    /// certificates are renewed. The test's own client reads its
    /// certificate files again for each request, so it keeps working once
    /// they hold one that CA signed.
    pub fn restart_trusting(&mut self, ca: &Path) {
        self.client_ca = Some(ca.to_path_buf());
        self.restart();
    }

    /// Turns authentication on, with a root user of this password.
    pub fn enable_auth(&mut self, password: &str) {
        let password_for_root = password.to_string();
        self.with(async move |mut client| {
            client
                .user_add("root", password_for_root, None)
                .await
                .expect("add root");
            client
                .user_grant_role("root", "root")
                .await
                .expect("grant root");
            client.auth_enable().await.expect("auth enable");
        });
        self.root_password = Some(password.to_string());
    }

    /// Runs `f` with a client of the first live member.
    pub fn with<T>(&self, f: impl AsyncFnOnce(Client) -> T) -> T {
        self.runtime.block_on(async move {
            let live = (0..self.members.len())
                .find(|&index| self.members[index].process.is_some())
                .expect("a live member");
            let client = self.connect(live).await.expect("test client connects");
            f(client).await
        })
    }

    /// The id of the member that is raft leader now, as an index, if any
    /// live member knows one.
    pub fn raft_leader(&self) -> Option<usize> {
        let all = self.all_members();
        let name = self.runtime.block_on(self.ask(&all, async |mut client| {
            let leader = client.status().await.ok()?.leader();
            let members = client.member_list().await.ok()?;
            members
                .members()
                .iter()
                .find(|member| member.id() == leader && leader != 0)
                .map(|member| member.name().to_string())
        }))?;
        self.members.iter().position(|member| member.name == name)
    }

    /// Asks the raft leader to hand leadership to another member.
    pub fn move_raft_leader(&self, to: usize) {
        let target = self.members[to].name.clone();
        let leader = self.raft_leader().expect("a raft leader");
        self.runtime.block_on(async {
            let mut client = self.connect(leader).await.expect("connects to leader");
            let members = client.member_list().await.expect("member list");
            let id = members
                .members()
                .iter()
                .find(|member| member.name() == target)
                .expect("target member")
                .id();
            client.move_leader(id).await.expect("move leader");
        });
    }

    /// The keys under an election, in create order: (key, create revision, lease).
    pub fn candidates(&self, name: &str) -> Vec<(String, i64, i64)> {
        let prefix = format!("{name}/");
        self.with(async move |client| {
            let options = GetOptions::new().with_prefix().with_sort(
                etcd_client::SortTarget::Create,
                etcd_client::SortOrder::Ascend,
            );
            // Not keys only: etcd 3.7 leaves the lease out of such an
            // answer. A test may keep large values under the prefix.
            let mut kv = client
                .kv_client()
                .max_decoding_message_size(64 * 1024 * 1024);
            let response = kv.get(prefix, Some(options)).await.unwrap();
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

    /// The value of a key, if it exists.
    pub fn get(&self, key: &str) -> Option<String> {
        let key = key.to_string();
        self.with(async move |mut client| {
            let response = client.get(key, None).await.unwrap();
            response
                .kvs()
                .first()
                .map(|kv| kv.value_str().unwrap().to_string())
        })
    }

    /// Freezes member 0 with SIGSTOP, as a hung etcd; it is continued when
    /// the returned guard is thawed or dropped.
    pub fn freeze(&self) -> Frozen {
        let pid = self.pid();
        send(pid, nix::sys::signal::Signal::SIGSTOP);
        Frozen { pid }
    }

    /// Raises the NOSPACE alarm ("database space exceeded") on member 0
    /// through the maintenance API: from then on etcd refuses every write
    /// and every lease grant, while reads, deletes, revokes and renewals of
    /// existing leases still go through.
    pub fn raise_nospace_alarm(&self) {
        use etcd_client::{AlarmAction, AlarmOptions, AlarmType};
        self.with(async |mut client| {
            let member = client
                .status()
                .await
                .expect("status")
                .header()
                .unwrap()
                .member_id();
            let mut options = AlarmOptions::new();
            options.with_member(member);
            client
                .alarm(AlarmAction::Activate, AlarmType::Nospace, Some(options))
                .await
                .expect("alarm activated");
        });
    }

    /// Asks for a lease of `seconds`: its id, or etcd's refusal.
    pub fn grant(&self, seconds: i64) -> Result<i64, String> {
        self.with(async move |mut client| {
            client
                .lease_grant(seconds, None)
                .await
                .map(|granted| granted.id())
                .map_err(|err| err.to_string())
        })
    }

    pub fn revoke(&self, lease: i64) {
        self.with(async move |mut client| client.lease_revoke(lease).await.expect("revoke"));
    }

    pub fn delete(&self, key: &str) {
        let key = key.to_string();
        self.with(async move |mut client| client.delete(key, None).await.expect("delete"));
    }

    /// Writes `key` = `value` as another writer would: attached to `lease`,
    /// or with no lease at all (0).
    pub fn put(&self, key: &str, value: &str, lease: i64) {
        let (key, value) = (key.to_string(), value.to_string());
        self.with(async move |mut client| {
            let options = (lease != 0).then(|| etcd_client::PutOptions::new().with_lease(lease));
            client.put(key, value, options).await.expect("put");
        });
    }
}

/// A frozen etcd member (see [`Etcd::freeze`]).
pub struct Frozen {
    pid: i32,
}

impl Frozen {
    pub fn thaw(self) {}
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid),
            nix::sys::signal::Signal::SIGCONT,
        );
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            self.kill_member(index);
        }
    }
}

/// leaderrun, pointed at `endpoints`, with an environment cleaned of
/// anything the developer's shell might carry.
pub fn leaderrun(endpoints: &str) -> Command {
    leaderrun_at(Path::new(env!("CARGO_BIN_EXE_leaderrun")), endpoints)
}

/// [`leaderrun`], run from another copy of the binary.
pub fn leaderrun_at(binary: &Path, endpoints: &str) -> Command {
    let mut command = Command::new(binary);
    leaderrun_env(&mut command, endpoints);
    command
}

/// Gives `command` (leaderrun, or a shell that runs it) the environment
/// [`leaderrun`] runs in.
pub fn leaderrun_env<'a>(command: &'a mut Command, endpoints: &str) -> &'a mut Command {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        // LEADERRUN_HANDOFF=slow runs the whole suite on the handoff's
        // slow path: kept.
        let kept = key == "LEADERRUN_HANDOFF";
        if (key.starts_with("LEADERRUN_") || key.starts_with("ETCDCTL_")) && !kept {
            command.env_remove(key.as_ref());
        }
    }
    command.env("LEADERRUN_ENDPOINTS", endpoints)
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
    let status = wait_within(&mut child, limit, "leaderrun");
    Finished {
        code: status.code(),
        took: started.elapsed(),
        stdout: out.recv_timeout(Duration::from_secs(1)).unwrap_or_default(),
        stderr: err.recv_timeout(Duration::from_secs(1)).unwrap_or_default(),
    }
}

/// Waits for `child` to exit, polling every 10 ms; kills it and panics,
/// naming it `what`, if that takes over `limit`.
pub fn wait_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > limit {
            let tree = process_tree(child.id() as i32);
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}; its processes:\n{tree}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// leaderrun's answer to bad input or a refusal: exit 125, one line on
/// stderr, `leaderrun: error: ` and then something that mentions
/// `mentions`, and nothing on stdout (the command did not run). `context`
/// says which case failed.
pub fn assert_one_error_line(done: &Finished, mentions: &str, context: &str) {
    assert_eq!(done.code, Some(125), "{context}: {}", done.stderr);
    assert_eq!(
        done.stderr.lines().count(),
        1,
        "{context}: one line: {}",
        done.stderr
    );
    assert!(
        done.stderr.starts_with("leaderrun: error: "),
        "{context}: {}",
        done.stderr
    );
    assert!(
        done.stderr.contains(mentions),
        "{context}: should mention {mentions}: {}",
        done.stderr
    );
    assert!(
        done.stdout.is_empty(),
        "{context}: the command must not run"
    );
}

/// A whole number of seconds as leaderrun's duration options take it
/// ("8s"), so that a test states a TTL or timeout once, as a Duration.
pub fn seconds(duration: Duration) -> String {
    assert_eq!(duration.subsec_nanos(), 0, "{duration:?}: whole seconds");
    format!("{}s", duration.as_secs())
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

/// A leader a test expects to ride out a fault: its election, TTL, child
/// and key (as [`Etcd::candidates`] lists it).
pub struct Leader {
    pub name: String,
    pub ttl: Duration,
    pub child: i32,
    pub key: (String, i64, i64),
}

impl Leader {
    /// The leader survived a fault that ended at `fault`: its lease is seen
    /// renewed after the fault (awaited), and until `hold` after the fault
    /// its child runs; then its key still leads.
    pub fn assert_survives(&self, etcd: &Etcd, what: &str, fault: Instant, hold: Duration) {
        let (key, token, lease) = &self.key;
        let ttl = self.ttl;
        assert!(
            ttl > Duration::from_secs(4),
            "a renewal is told from an extension only for a TTL over 4s"
        );
        // Half a TTL after the fault, a lease not renewed since has at most
        // TTL/2 left, and a second more if etcd extended it on a raft
        // leader change: seeing nearly all of it means a renewal went
        // through.
        let renewed = await_condition(ttl * 2, &format!("a renewal after {what}"), || {
            fault.elapsed() >= ttl / 2
                && etcd
                    .lease_left(*lease)
                    .is_some_and(|left| left >= ttl - Duration::from_secs(1))
        });
        while fault.elapsed() < hold {
            assert!(alive(self.child), "{what}: the child was stopped");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            etcd.candidates(&self.name)
                .first()
                .map(|first| (&first.0, first.1)),
            Some((key, *token)),
            "{what}: leadership kept, under the same key and token"
        );
        eprintln!(
            "{what}: lease seen renewed {renewed:?} after the fault; child alive for {hold:?}"
        );
    }
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

    /// What it has written to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Whether this waiter (run with `-vv`) has had its look at the queue
    /// and watches the key ahead of it: it said [`WATCHING`].
    pub fn is_watching(&self) -> bool {
        self.stderr_so_far().contains(WATCHING)
    }

    /// Waits until this waiter watches the key ahead ([`Self::is_watching`]).
    pub fn await_watching(&self, limit: Duration) {
        await_condition(limit, "a waiter to watch", || self.is_watching());
    }

    /// Waits until it has exited, within `limit` (panics otherwise); its
    /// status is kept for [`Self::finish`].
    pub fn await_exit(&mut self, limit: Duration) {
        let process = &mut self.process;
        await_condition(limit, "the replica to exit", || {
            process.try_wait().unwrap().is_some()
        });
    }

    /// Waits for exit within `limit`; returns the code and stderr.
    pub fn finish(&mut self, limit: Duration) -> (Option<i32>, String) {
        let status = wait_within(&mut self.process, limit, "the replica");
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

/// What a waiter run with `-vv` logs each time it has read the queue and
/// watches the key ahead of it.
pub const WATCHING: &str = "queued; watching";

/// A shell command that runs until `flag` exists (`sh -c` it): a job the
/// test ends when it chooses.
pub fn until_exists(flag: &Path) -> String {
    format!("while [ ! -e '{}' ]; do sleep 0.05; done", flag.display())
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

/// A job that writes its pid, then becomes `sleep`.
pub fn pid_job(pidfile: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("echo $$ > '{}'; exec sleep 1000", pidfile.display()),
    ]
}

/// A leader of `name` running [`pid_job`] (its pid file in `dir`), once its
/// command runs: the replica, and the command's pid.
pub fn pid_job_leader(etcd: &Etcd, name: &str, dir: &Path) -> (Replica, i32) {
    let pidfile = dir.join("leader");
    let leader = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", name, "--"])
            .args(pid_job(&pidfile)),
    );
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    (leader, pid)
}

/// A job that records whether process `other` still ran when it started.
pub fn checking_job(other: i32, report: &Path) -> Vec<String> {
    let script = format!(
        "state=$(cut -d' ' -f3 /proc/{other}/stat 2>/dev/null); echo \"${{state:-gone}} $LEADERRUN_TOKEN\" > '{}'; exec sleep 1000",
        report.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

pub fn read_report(report: &Path, limit: Duration) -> (String, i64) {
    let mut fields = Vec::new();
    await_condition(limit, "the new leader's report", || {
        fields = std::fs::read_to_string(report)
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect();
        fields.len() == 2
    });
    (fields[0].clone(), fields[1].parse().unwrap())
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

/// The command name of `pid` (/proc/PID/comm), if it exists.
pub fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|comm| comm.trim_end().to_string())
}

/// The command line of `pid`, arguments joined by spaces, if it exists.
pub fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|byte| *byte == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    Some(args.join(" "))
}

/// `pid` and its descendants, one a line: pid, state, kernel wait channel
/// and command line, for the message of a test that waited in vain.
pub fn process_tree(pid: i32) -> String {
    let mut lines = String::new();
    let mut todo = vec![(pid, 0)];
    while let Some((pid, depth)) = todo.pop() {
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let masks: Vec<&str> = status
            .lines()
            .filter(|line| line.starts_with("SigBlk") || line.starts_with("SigIgn"))
            .collect();
        lines.push_str(&format!(
            "{:indent$}{pid} {} pgrp {:?} tty-fg {:?} {wchan} {} {}\n",
            "",
            process_state(pid).unwrap_or_else(|| "gone".into()),
            stat_field(pid, 1),
            stat_field(pid, 4),
            masks.join(" "),
            cmdline(pid).unwrap_or_default(),
            indent = depth * 2
        ));
        todo.extend(children_of(pid).into_iter().map(|child| (child, depth + 1)));
    }
    lines
}

/// The processes whose parent is `parent`, zombies included.
pub fn children_of(parent: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|pid| stat_field(*pid, 0) == Some(parent))
        .collect()
}

/// The direct children of `pid` that are leaderrun's guardian
/// (`lr-guardian`).
pub fn guardians_of(pid: i32) -> Vec<i32> {
    children_of(pid)
        .into_iter()
        .filter(|child| comm(*child).as_deref() == Some("lr-guardian"))
        .collect()
}

/// Processes a test expects to be gone, SIGKILLed on drop if they are not,
/// so that a failing test does not leave them behind. Each is named by its
/// pid and a piece of its command line, checked before killing so that a
/// reused pid is left alone.
/// A whole session can be named too (a shell on a terminal and its jobs).
#[derive(Default)]
pub struct Strays {
    processes: Vec<(i32, String)>,
    sessions: Vec<i32>,
}

impl Strays {
    pub fn new() -> Strays {
        Strays::default()
    }

    pub fn add(&mut self, pid: i32, cmdline_contains: &str) {
        self.processes.push((pid, cmdline_contains.to_string()));
    }

    /// Every process of the session `sid` (whose leader is `sid`).
    pub fn add_session(&mut self, sid: i32) {
        self.sessions.push(sid);
    }
}

impl Drop for Strays {
    fn drop(&mut self) {
        let kill = |pid: i32| {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        };
        for (pid, expected) in &self.processes {
            if cmdline(*pid).is_some_and(|line| line.contains(expected.as_str())) {
                kill(*pid);
            }
        }
        for sid in &self.sessions {
            all_pids()
                .into_iter()
                .filter(|pid| stat_field(*pid, 2) == Some(*sid))
                .for_each(kill);
        }
    }
}

fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// A numeric field of /proc/PID/stat, counted from the one after the state
/// (0: ppid, 1: pgrp, 2: session).
fn stat_field(pid: i32, index: usize) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let field = stat.rsplit(')').next()?.split_whitespace().nth(index + 1)?;
    field.parse().ok()
}

/// An endpoint that accepts connections and never answers a byte: a hung
/// etcd, or one behind a black hole. Holds every connection open.
pub struct SilentEndpoint {
    pub endpoint: String,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl SilentEndpoint {
    pub fn start() -> SilentEndpoint {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let accepted = std::sync::Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for connection in listener.incoming().map_while(Result::ok) {
                held.push(connection);
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        SilentEndpoint { endpoint, accepted }
    }

    /// How many connections it has accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Reads the terminal's master side until `needle` shows up; panics after
/// `limit`. Returns everything read.
pub fn read_until(master: &mut std::fs::File, needle: &str, limit: Duration) -> String {
    use std::io::Read;
    let started = Instant::now();
    let mut seen = String::new();
    let mut buffer = [0u8; 1024];
    while !seen.contains(needle) {
        assert!(
            started.elapsed() < limit,
            "no {needle:?} on the terminal; saw {seen:?}"
        );
        match master.read(&mut buffer) {
            Ok(0) => std::thread::sleep(Duration::from_millis(10)),
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(err) => panic!("reading the terminal: {err}; saw {seen:?}"),
        }
    }
    seen
}

/// A fresh pseudo-terminal. The test keeps a descriptor of the slave side,
/// to read its modes with `tcgetattr`; the master side does not block.
pub struct Pty {
    pub master: std::fs::File,
    pub slave: std::os::fd::OwnedFd,
}

impl Pty {
    pub fn open() -> Pty {
        let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
        let master = std::fs::File::from(pty.master);
        nix::fcntl::fcntl(
            &master,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        Pty {
            master,
            slave: pty.slave,
        }
    }

    /// Starts `command` as a session leader with this terminal as its
    /// controlling terminal and stdio, the way a terminal emulator starts a
    /// shell.
    pub fn spawn(&self, command: &mut Command) -> Child {
        use std::os::unix::process::CommandExt;
        let slave = || Stdio::from(self.slave.try_clone().unwrap());
        command.stdin(slave()).stdout(slave()).stderr(slave());
        // SAFETY: setsid and ioctl are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                nix::unistd::setsid()?;
                if nix::libc::ioctl(0, nix::libc::TIOCSCTTY as _, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.spawn().expect("starts on the terminal")
    }
}

/// Starts `command` on a fresh pseudo-terminal (see [`Pty::spawn`]).
/// Returns the process and the terminal's master side.
/// A real interactive bash (job control on) on a fresh pseudo-terminal,
/// with `$LR` naming leaderrun and its endpoints set to `etcd`, at its
/// first prompt (`$ `).
pub fn interactive_bash(etcd: &Etcd) -> (Child, std::fs::File) {
    let (bash, mut master) = spawn_on_pty(
        Command::new("bash")
            .args(["--norc", "--noprofile", "-i"])
            .env("PS1", "$ ")
            .env("TERM", "dumb")
            .env("LR", env!("CARGO_BIN_EXE_leaderrun"))
            .env("LEADERRUN_ENDPOINTS", etcd.endpoint()),
    );
    read_until(&mut master, "$ ", Duration::from_secs(10));
    (bash, master)
}

pub fn spawn_on_pty(command: &mut Command) -> (Child, std::fs::File) {
    let pty = Pty::open();
    let process = pty.spawn(command);
    (process, pty.master)
}

/// The code of the block between `<!-- NAME: start -->` and
/// `<!-- NAME: end -->` in README.md (or, if README has none, in the first
/// of docs/*.md that has it), without its fences: the examples that tests
/// run as written.
pub fn readme_block(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let start = format!("<!-- {name}: start -->");
    let end = format!("<!-- {name}: end -->");
    // README.md first, then docs/*.md, in name order: the first that has it.
    let mut documents = vec![root.join("README.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
                .collect()
        })
        .unwrap_or_default();
    in_docs.sort();
    documents.extend(in_docs);
    let (document, text) = documents
        .iter()
        .map(|path| (path, std::fs::read_to_string(path).unwrap_or_default()))
        .find(|(_, text)| text.contains(&start))
        .unwrap_or_else(|| panic!("neither README.md nor docs/*.md has {start}"));
    let from = text.find(&start).unwrap() + start.len();
    let to = text[from..]
        .find(&end)
        .unwrap_or_else(|| panic!("{} has no {end}", document.display()))
        + from;
    text[from..to]
        .lines()
        .filter(|line| !line.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
        + "\n"
}

/// Where etcdctl is: LEADERRUN_TEST_ETCDCTL, else /usr/bin/etcdctl (Debian's
/// etcd-client, which scripts/deps installs).
pub fn etcdctl_binary() -> PathBuf {
    let path = std::env::var_os("LEADERRUN_TEST_ETCDCTL")
        .filter(|path| !path.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/etcdctl"), PathBuf::from);
    assert!(
        path.exists(),
        "no etcdctl at {}: install Debian's etcd-client (scripts/deps does) or set LEADERRUN_TEST_ETCDCTL",
        path.display()
    );
    path
}
