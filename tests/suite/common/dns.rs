//! A real DNS server for the discovery tests: dnsmasq (Debian's
//! dnsmasq-base, which scripts/deps installs), on a free loopback port,
//! serving the SRV records a test gives, and nothing else (a name without
//! records under its domain is NXDOMAIN). Killed on drop. leaderrun's
//! debug build asks it instead of /etc/resolv.conf's servers when
//! `LEADERRUN_TEST_NAMESERVER` names it ([`Dns::nameserver`]).

use std::process::{Child, Command, Stdio};

use super::{await_condition, free_port, SOON};

/// One SRV record: `_etcd-client._tcp` (or `-ssl`, or with a service
/// name), under the server's domain, pointing at `target:port`.
pub struct Srv {
    pub service: &'static str,
    pub target: &'static str,
    pub port: u16,
}

pub struct Dns {
    child: Child,
    port: u16,
    domain: String,
}

impl Dns {
    /// A server for `domain`, with `records`.
    pub fn start(domain: &str, records: &[Srv]) -> Dns {
        let port = free_port();
        let child = spawn(port, domain, records);
        let dns = Dns {
            child,
            port,
            domain: domain.to_string(),
        };
        dns.await_listening();
        dns
    }

    /// The same server, on the same port, with other records (dnsmasq
    /// reads SRV records only as it starts).
    pub fn restart_with(&mut self, records: &[Srv]) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(self.port, &self.domain, records);
        self.await_listening();
    }

    /// `LEADERRUN_TEST_NAMESERVER`'s value for it.
    pub fn nameserver(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn await_listening(&self) {
        await_condition(SOON, "dnsmasq listening", || {
            std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        });
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(port: u16, domain: &str, records: &[Srv]) -> Child {
    let mut command = Command::new("/usr/sbin/dnsmasq");
    command.args([
        "--keep-in-foreground",
        "--conf-file=/dev/null",
        "--no-resolv",
        "--no-hosts",
        "--listen-address=127.0.0.1",
        "--bind-interfaces",
        "--pid-file=",
        "--log-facility=-",
    ]);
    command.arg(format!("--port={port}"));
    command.arg(format!("--local=/{domain}/"));
    for record in records {
        command.arg(format!(
            "--srv-host={}.{domain},{},{},0,10",
            record.service, record.target, record.port
        ));
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dnsmasq (apt-get install dnsmasq-base; scripts/deps does)")
}
