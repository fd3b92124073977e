//! Test etcds: one or more members on free loopback ports with a temporary
//! data dir, stopped and wiped on drop; the test client that reads and
//! writes them, and the faults done to the server itself (kill, freeze,
//! restart, alarms).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Certificate, Client, ConnectOptions, GetOptions, Identity, TlsOptions};

use super::await_condition;
use super::invocation::SOON;
use super::pki;
use super::processes::{alive, stop};

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
    /// The run's shared etcd ([`Etcd::shared`]): started by some test
    /// process of this run, and not for faults or metering.
    shared: bool,
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
        Etcd::unstarted(&options).launched(options.first_client_port)
    }

    /// Starts the members of an [`Etcd::unstarted`] (see
    /// [`Etcd::start_with`]).
    fn launched(mut self, first_client_port: Option<u16>) -> Etcd {
        let etcd = &mut self;
        let mut taken = Vec::new();
        for attempt in 0..START_ATTEMPTS {
            for member in etcd.members.iter_mut() {
                member.client_port = free_port();
                member.peer_port = free_port();
            }
            if let (0, Some(port)) = (attempt, first_client_port) {
                etcd.members[0].client_port = port;
            }
            for index in 0..etcd.members.len() {
                etcd.launch(index);
            }
            match etcd.await_start() {
                Ok(()) => return self,
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
            shared: false,
        }
    }

    /// Waits until every member answers, as a member of this cluster, and
    /// takes a write. Err (naming the port) if a member exited because a
    /// port was taken; panics on any other exit, or after [`START_LIMIT`].
    fn await_start(&self) -> Result<(), String> {
        super::stalls::watch();
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
                !super::stalls::past(started, START_LIMIT),
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
        self.shared
            || self.members[index]
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
        self.assert_own("meters");
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
            .args(self.raft_timings())
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
        // Passwords hashed at bcrypt's least cost (etcd's default is 10,
        // 64 times the work): every authentication, a token refreshed
        // after a change to the users among them, costs etcd a bcrypt
        // comparison, and on a loaded machine one at the default cost took
        // longer than the half second a resignation is given
        // (`retry::CLEANUP`). What the tests time is leaderrun's work, not
        // etcd's password hashing.
        command.arg("--bcrypt-cost=4");
        if let Some((private, public)) = &self.jwt_keys {
            command.arg(format!(
                "--auth-token=jwt,pub-key={},priv-key={},sign-method=ES256",
                public.display(),
                private.display()
            ));
        }
        if self.shared {
            // Its own session: it outlives the test process that started
            // it, and whatever that process's group is sent.
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        self.members[index].process = Some(command.spawn().expect("etcd starts"));
    }

    /// Whether member `index` was started (by this test, or the shared
    /// etcd by the run), and not killed since.
    fn started(&self, index: usize) -> bool {
        self.shared || self.members[index].process.is_some()
    }

    /// Panics on the shared etcd: a test that `does` something to etcd
    /// that other tests would see, or counts what they do, starts its own.
    fn assert_own(&self, does: &str) {
        assert!(
            !self.shared,
            "a test that {does} etcd starts its own (Etcd::start), not the shared one"
        );
    }

    /// Raft's timings: a single member (nothing to elect against, no peer
    /// to miss) ticks ten times as fast as etcd's default, so that it
    /// elects itself within about 0.1 s of starting or restarting instead
    /// of a second. A cluster keeps etcd's defaults (100 ms heartbeat,
    /// 1 s election timeout): its tests measure leases across raft leader
    /// changes, and on a loaded machine faster timings would bring
    /// elections of their own.
    fn raft_timings(&self) -> Vec<&'static str> {
        if self.members.len() == 1 {
            vec!["--heartbeat-interval=10", "--election-timeout=100"]
        } else {
            Vec::new()
        }
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
            if !self.started(index) {
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
                    .filter(|&&index| self.started(index))
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
        self.kill_members(&[index]);
    }

    /// SIGKILLs the members at once, then reaps them. Returns when the last
    /// was sent its SIGKILL: the moment they were lost, which is earlier
    /// than the reaping (a member's exit once sat seconds in the kernel
    /// beside two busy loops).
    pub fn kill_members(&mut self, indices: &[usize]) -> Instant {
        let mut killed: Vec<_> = indices
            .iter()
            .filter_map(|&index| self.members[index].process.take())
            .collect();
        for process in &mut killed {
            let _ = process.kill();
        }
        let lost = Instant::now();
        for process in &mut killed {
            let _ = process.wait();
        }
        lost
    }

    /// Starts a killed member again on its ports and data, without waiting
    /// for it to catch up.
    pub fn start_member(&mut self, index: usize) {
        if self.members[index].process.is_none() {
            self.launch(index);
        }
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
                .find(|&index| self.started(index))
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

    /// The raft leader, awaited within [`SOON`]: a loaded machine brings
    /// elections of its own, and between two the members know none.
    pub fn await_raft_leader(&self) -> usize {
        let mut leader = None;
        await_condition(SOON, "a raft leader", || {
            leader = self.raft_leader();
            leader.is_some()
        });
        leader.expect("awaited")
    }

    /// Asks the raft leader to hand leadership to another member.
    pub fn move_raft_leader(&self, to: usize) {
        let target = self.members[to].name.clone();
        let leader = self.await_raft_leader();
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

    /// Freezes member 0 with SIGSTOP, as a hung etcd, and returns once
    /// every thread of it has stopped ([`stop`]); it is continued when the
    /// returned guard is thawed or dropped.
    pub fn freeze(&self) -> Frozen {
        let pid = self.pid();
        stop(pid);
        Frozen { pid }
    }

    /// Raises the NOSPACE alarm ("database space exceeded") on member 0
    /// through the maintenance API: from then on etcd refuses every write
    /// and every lease grant, while reads, deletes, revokes and renewals of
    /// existing leases still go through.
    pub fn raise_nospace_alarm(&self) {
        self.assert_own("raises an alarm on");
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

/// The shared etcd's handle in this test process.
static SHARED: std::sync::OnceLock<Etcd> = std::sync::OnceLock::new();

impl Etcd {
    /// The etcd that this run's tests share: for a test that neither
    /// faults nor meters etcd, and names its elections with [`unique`].
    /// The first test process of the run to ask starts it (a single
    /// member, in a process group of its own) under a lock, and leaves
    /// its endpoint in a folder named after the run
    /// (`NEXTEST_RUN_ID` under nextest, whose every test is a process of
    /// its own; the test process under `cargo test`); the others read it
    /// there. A watchdog stops it and removes its data once the runner
    /// (nextest, or the cargo test process) has exited.
    pub fn shared() -> &'static Etcd {
        SHARED.get_or_init(|| {
            let (run, runner) = match std::env::var("NEXTEST_RUN_ID") {
                Ok(id) => (id, nix::unistd::getppid().as_raw()),
                Err(_) => {
                    let me = std::process::id() as i32;
                    (me.to_string(), me)
                }
            };
            let dir = std::env::temp_dir().join(format!("leaderrun-shared-etcd-{run}"));
            std::fs::create_dir_all(&dir).unwrap();
            let lock = std::fs::File::create(dir.join("lock")).unwrap();
            let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, err)| err)
                .expect("the shared etcd's lock");
            let endpoint = dir.join("endpoint");
            let port = match std::fs::read_to_string(&endpoint) {
                Ok(port) => port.trim().parse().expect("a port"),
                Err(_) => {
                    let port = Etcd::start_shared(&dir, runner);
                    std::fs::write(&endpoint, port.to_string()).unwrap();
                    port
                }
            };
            Etcd::attached(port)
        })
    }

    /// Starts the shared etcd, and the watchdog that stops it and removes
    /// `dir` once `runner` has exited. Returns its client port.
    fn start_shared(dir: &Path, runner: i32) -> u16 {
        let mut etcd = Etcd::unstarted(&EtcdOptions::default());
        etcd.shared = true;
        let etcd = etcd.launched(None);
        let port = etcd.client_port();
        let pid = etcd.pid();
        let mut etcd = std::mem::ManuallyDrop::new(etcd);
        // The data outlives this handle, as etcd does: the watchdog removes it.
        let data = std::mem::replace(&mut etcd.data, tempfile::tempdir().unwrap()).keep();
        let script = format!(
            "while kill -0 {runner} 2>/dev/null; do sleep 0.5; done; kill -9 {pid}; rm -rf '{}' '{}'",
            data.display(),
            dir.display()
        );
        use std::os::unix::process::CommandExt;
        // Never waited for: it outlives this test process by design, and
        // whoever adopts it reaps it.
        #[allow(clippy::zombie_processes)]
        Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the shared etcd's watchdog starts");
        port
    }

    /// A handle on the shared etcd, which answers on `port`.
    fn attached(port: u16) -> Etcd {
        let mut etcd = Etcd::unstarted(&EtcdOptions::default());
        etcd.shared = true;
        etcd.members[0].client_port = port;
        etcd.wait_ready();
        etcd
    }
}

/// `name` made this test's own, for an election on the shared etcd
/// ([`Etcd::shared`]): `name` with the test process's pid and a count
/// after it, so that no other test, nor another election of this one,
/// meets it.
pub fn unique(name: &str) -> String {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{name}-{}-{count}", std::process::id())
}
